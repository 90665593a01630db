//! 2026-07-28 over Streamable HTTP: stateless requests, checked in the order of 2026-07-28 Streamable HTTP transport, request validation.

use std::sync::Arc;

use axum::response::Response;
use bytes::Bytes;
use http::HeaderMap;
use tokio::sync::mpsc;

use serde_json::Value;
use serde_json::value::RawValue;

use super::headers;
use super::sse;
use crate::protocol::headers::{HeaderKind, HeaderParam};
use crate::protocol::jsonrpc::RpcError;
use crate::protocol::meta::{ModernMeta, ModernRequest, Params};
use crate::protocol::methods::Method;
use crate::protocol::{Era, Revision};
use crate::server::Shared;
use crate::server::dispatch::raw_str;
use crate::server::front::modern::{Answer, wants_stream};
use crate::server::front::{Frame, Inbound, Slot};

/// Serves one 2026-07-28 request, its `_meta` already read (the first check).
pub(crate) async fn serve(
    shared: Arc<Shared>,
    headers: &HeaderMap,
    extensions: http::Extensions,
    req: ModernRequest<'_>,
    permit: Slot,
) -> Response {
    let ModernRequest {
        id,
        method,
        params,
        meta,
    } = req;
    let (rev, method, meta) = match check(&shared, headers, method, &params, meta) {
        Ok(v) => v,
        Err(e) => return sse::error(Era::Modern, Some(&id), &e),
    };
    let ModernMeta { meta, .. } = meta;
    // A subscription counts against `max_streams`, not `max_concurrent_requests`.
    let permit = if method == Method::Listen {
        drop(permit);
        match shared.stream_slot(shared.caller_key(&extensions)) {
            Ok(p) => p,
            Err(e) => return sse::error(Era::Modern, Some(&id), &e),
        }
    } else {
        permit
    };
    // Progress and logs need an SSE response; a client that does not accept one gets JSON.
    let (sink, rx) = if wants_stream(&meta) && super::accepts_sse(headers) {
        let (tx, rx) = mpsc::channel::<Bytes>(shared.config.stream_buffer);
        (Some(tx), Some(rx))
    } else {
        (None, None)
    };
    let inbound = Inbound {
        sink,
        extensions,
        transport: Some("tcp"),
        ..Inbound::default()
    };
    match shared.serve_stateless(rev, &id, method, &params, meta, inbound) {
        Answer::Ready(out) => sse::outcome(Era::Modern, &id, &out),
        Answer::Listen(frames) => {
            use futures_util::StreamExt;
            let body = frames.map(move |f| {
                let _held = &permit;
                Ok::<_, std::convert::Infallible>(match f {
                    Frame::Message(m) => sse::frame(&m),
                    Frame::KeepAlive => Bytes::from_static(b": keep-alive\n\n"),
                })
            });
            sse::sse_response(axum::body::Body::from_stream(body))
        }
        // The request counts until its function ends (or its response is dropped).
        Answer::Running(fut) => match rx {
            None => {
                let out = fut.await;
                drop(permit);
                sse::outcome(Era::Modern, &id, &out)
            }
            Some(rx) => {
                let fut: crate::handler::BoxFuture<_> = Box::pin(async move {
                    let _permit = permit;
                    fut.await
                });
                sse::respond(Era::Modern, id, fut, rx).await
            }
        },
    }
}

/// Every check a 2026-07-28 request passes over HTTP after its `_meta`, in the order of the
/// 2026-07-28 Streamable HTTP transport's "Request validation" (version header, `Mcp-Method`,
/// the method, `Mcp-Name`, the server's capabilities, `Mcp-Param-*`).
fn check<'a>(
    shared: &Shared,
    headers: &HeaderMap,
    method_name: &str,
    params: &Params<'a>,
    meta: ModernMeta<'a>,
) -> Result<(Revision, Method, ModernMeta<'a>), RpcError> {
    // 6–8. The version header: present, served, equal to `_meta`.
    let header_version = headers::read(headers, &headers::name::PROTOCOL_VERSION)?.ok_or_else(|| {
        RpcError::header_mismatch(
            "Header mismatch: missing MCP-Protocol-Version header; send the same version as _meta[\"io.modelcontextprotocol/protocolVersion\"]",
        )
    })?;
    // A header naming a revision the server serves (a handshake one) is not "unsupported":
    // answering -32022 would list the requested version among the supported ones. If it
    // differs from `_meta`, the header disagrees with the body.
    if header_version != meta.protocol_version && Revision::parse(header_version).is_some() {
        return Err(version_mismatch(header_version, &meta.protocol_version));
    }
    let rev = shared.stateless_revision(header_version)?;
    if meta.protocol_version != header_version {
        return Err(version_mismatch(header_version, &meta.protocol_version));
    }
    // 9. `Mcp-Method` equals the method, exactly.
    match headers::read(headers, &headers::name::METHOD)? {
        None => {
            return Err(RpcError::header_mismatch(format!(
                "Header mismatch: missing Mcp-Method header; send Mcp-Method: {method_name}"
            )));
        }
        Some(h) if h != method_name => {
            return Err(RpcError::header_mismatch(format!(
                "Header mismatch: Mcp-Method header value {h:?} does not match body value {method_name:?}"
            )));
        }
        Some(_) => {}
    }
    // The method must exist in this era (-32601, 404); whether the server offers it is
    // step 11, after `Mcp-Name`.
    let method = Method::parse_in(method_name, Era::Modern)
        .ok_or_else(|| RpcError::method_not_found(method_name))?;
    // 10. `Mcp-Name` equals `params.name`, `params.uri`, or (the tasks extension)
    // `params.taskId`.
    if let Some(field) = method.name_param() {
        let body = match field {
            "uri" => params.uri,
            "taskId" => params.task_id,
            _ => params.name,
        }
        .and_then(raw_str);
        match (headers::read(headers, &headers::name::NAME)?, body) {
            (None, _) => {
                return Err(RpcError::header_mismatch(format!(
                    "Header mismatch: missing Mcp-Name header; send the request's `{field}`"
                )));
            }
            (Some(h), body) => {
                let decoded = headers::decode_sentinel(headers::NAME, h)?;
                if body.as_deref() != Some(&*decoded) {
                    return Err(RpcError::header_mismatch(format!(
                        "Header mismatch: Mcp-Name header value {decoded:?} does not match body value {:?}",
                        body.as_deref().unwrap_or("")
                    )));
                }
            }
        }
    }
    // 11. The server offers the method's feature (-32601, 404).
    if !shared.offers(method.needs()) {
        return Err(RpcError::method_not_found(method_name));
    }
    // 12. `Mcp-Param-*` headers of the tool's `x-mcp-header` arguments. (An unknown tool is
    // the dispatcher's -32602.)
    if method == Method::ToolsCall
        && let Some(entry) = params
            .name
            .and_then(raw_str)
            .and_then(|n| shared.registry.tool(&n))
        && !entry.headers.is_empty()
    {
        check_param_headers(headers, &entry.headers, params.arguments)?;
    }
    Ok((rev, method, meta))
}

fn version_mismatch(header: &str, body: &str) -> RpcError {
    RpcError::header_mismatch(format!(
        "Header mismatch: MCP-Protocol-Version header value {header:?} does not match body value {body:?}"
    ))
}

/// Each `x-mcp-header` argument with a value needs its header, equal to it (Base64 sentinel
/// decoded; integers compared as numbers); a header without a value in the body is refused.
/// `Mcp-Param-*` headers the tool does not declare are ignored.
fn check_param_headers(
    headers: &HeaderMap,
    declared: &[HeaderParam],
    arguments: Option<&RawValue>,
) -> Result<(), RpcError> {
    // Arguments the server cannot read (a number out of range, nesting too deep) must not
    // read as "no arguments": the tool would run with values no header was checked against.
    let args: Value = match arguments {
        None => Value::Null,
        Some(a) => serde_json::from_str(a.get()).map_err(|e| {
            RpcError::invalid_params(format!(
                "Invalid params: `arguments` cannot be read to check its Mcp-Param headers: {e}"
            ))
        })?,
    };
    for p in declared {
        let body = p
            .path
            .iter()
            .try_fold(&args, |v, k| v.get(k))
            .filter(|v| !v.is_null());
        // Errors spell it as the tool declared it.
        let display = &p.display;
        let header = headers::read_as(headers, &p.header, || display.clone())?;
        let (header, body) = match (header, body) {
            (None, None) => continue,
            (None, Some(_)) => {
                return Err(RpcError::header_mismatch(format!(
                    "Header mismatch: missing {display} header for argument `{}`",
                    p.path.join(".")
                )));
            }
            (Some(_), None) => {
                return Err(RpcError::header_mismatch(format!(
                    "Header mismatch: {display} is present but argument `{}` has no value",
                    p.path.join(".")
                )));
            }
            (Some(h), Some(b)) => (h, b),
        };
        let decoded = headers::decode_sentinel(display, header)?;
        let equal = match p.kind {
            HeaderKind::String => body.as_str() == Some(&*decoded),
            HeaderKind::Boolean => {
                body.as_bool().map(|b| if b { "true" } else { "false" }) == Some(&*decoded)
            }
            HeaderKind::Integer => integer_eq(&decoded, body),
        };
        if !equal {
            return Err(RpcError::header_mismatch(format!(
                "Header mismatch: {display} header value {decoded:?} does not match body value {body}"
            )));
        }
    }
    Ok(())
}

/// Whether an integer header names exactly the body's integer: compared as integers (never
/// through `f64`, which would take 2^53 + 1 for 2^53). A body number with a fraction part of
/// zero counts when it is exact.
fn integer_eq(header: &str, body: &Value) -> bool {
    // Compared numerically ("42" and "42.0" are equal): a header in decimal or exponent
    // form counts when it is a whole number that f64 holds exactly.
    let h = match header.parse::<i128>() {
        Ok(h) => h,
        Err(_) => match header.parse::<f64>() {
            Ok(f)
                if header
                    .bytes()
                    .all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b))
                    && f.fract() == 0.0
                    && f.abs() <= 9_007_199_254_740_992.0 =>
            {
                f as i128
            }
            _ => return false,
        },
    };
    if let Some(b) = body.as_i64() {
        return h == i128::from(b);
    }
    if let Some(b) = body.as_u64() {
        return h == i128::from(b);
    }
    match body.as_f64() {
        Some(f) if f.fract() == 0.0 && f.abs() <= 9_007_199_254_740_992.0 => {
            // Exact below 2^53 (checked above), so the conversion loses nothing.
            h == f as i128
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn integer_headers_are_compared_exactly() {
        use serde_json::json;
        assert!(super::integer_eq("5", &json!(5)));
        assert!(super::integer_eq("-5", &json!(-5)));
        assert!(super::integer_eq("18446744073709551615", &json!(u64::MAX)));
        assert!(super::integer_eq("5", &json!(5.0)));
        // 2^53 + 1 is not 2^53, which f64 would say it is.
        assert!(!super::integer_eq(
            "9007199254740993",
            &json!(9_007_199_254_740_992_u64)
        ));
        assert!(!super::integer_eq("5.5", &json!(5.5)));
        assert!(!super::integer_eq("five", &json!(5)));
        assert!(!super::integer_eq(&"9".repeat(60), &json!(5)));
    }

    use super::*;
    use crate::Registry;
    use crate::service::Server;
    use http::HeaderValue;
    use serde_json::value::RawValue;

    /// A server that offers nothing but discovery.
    fn empty() -> Arc<Shared> {
        let registry = Registry::from_defs([], [], []).unwrap();
        Server::with_registry(registry)
            .build()
            .unwrap()
            .shared
            .clone()
    }

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_static(v));
        }
        h
    }

    fn code(shared: &Shared, h: &HeaderMap, method: &str, params: &str) -> i32 {
        let raw = RawValue::from_string(params.to_owned()).unwrap();
        let params = Params::parse(Some(&raw)).unwrap();
        crate::protocol::meta::parse_modern_meta(params.meta)
            .and_then(|meta| check(shared, h, method, &params, meta))
            .map(|_| 0)
            .unwrap_or_else(|e| e.code)
    }

    fn meta(version: &str) -> String {
        format!(
            r#"{{"_meta":{{"io.modelcontextprotocol/protocolVersion":"{version}","io.modelcontextprotocol/clientCapabilities":{{}}}},"name":"p"}}"#
        )
    }

    #[test]
    fn a_served_header_version_that_differs_from_meta_is_a_mismatch() {
        let s = empty();
        let h = |v| {
            headers(&[
                (headers::PROTOCOL_VERSION, v),
                (headers::METHOD, "server/discover"),
            ])
        };
        assert_eq!(
            code(&s, &h("2025-11-25"), "server/discover", &meta("2026-07-28")),
            -32020
        );
        assert_eq!(
            code(&s, &h("2026-07-28"), "server/discover", &meta("v9")),
            -32020
        );
        // Not served statelessly, or not at all: -32022.
        assert_eq!(
            code(&s, &h("2025-11-25"), "server/discover", &meta("2025-11-25")),
            -32022
        );
        assert_eq!(
            code(&s, &h("v9"), "server/discover", &meta("2026-07-28")),
            -32022
        );
        assert_eq!(
            code(&s, &h("2026-07-28"), "server/discover", &meta("2026-07-28")),
            0
        );
    }

    #[test]
    fn unreadable_arguments_do_not_skip_the_param_headers() {
        let declared = [HeaderParam {
            name: "Region".into(),
            header: http::HeaderName::from_static("mcp-param-region"),
            display: "Mcp-Param-Region".into(),
            path: vec!["region".into()],
            kind: HeaderKind::String,
        }];
        for args in [
            r#"{"region":"eu","x":1e400}"#,
            &format!(
                r#"{{"region":"eu","x":{}1{}}}"#,
                "[".repeat(200),
                "]".repeat(200)
            ),
        ] {
            let raw = RawValue::from_string(args.to_owned()).unwrap();
            let e = check_param_headers(&HeaderMap::new(), &declared, Some(&raw)).unwrap_err();
            assert_eq!(e.code, -32602, "{e}");
        }
        let raw = RawValue::from_string(r#"{"region":"eu"}"#.to_owned()).unwrap();
        let e = check_param_headers(&HeaderMap::new(), &declared, Some(&raw)).unwrap_err();
        assert_eq!(e.code, -32020);
    }

    #[test]
    fn mcp_name_is_checked_before_the_capability() {
        let s = empty();
        let h = |name| {
            headers(&[
                (headers::PROTOCOL_VERSION, "2026-07-28"),
                (headers::METHOD, "prompts/get"),
                (headers::NAME, name),
            ])
        };
        let params = meta("2026-07-28");
        assert_eq!(code(&s, &h("other"), "prompts/get", &params), -32020);
        assert_eq!(code(&s, &h("p"), "prompts/get", &params), -32601);
    }
}
