//! The routing decision and the request headers, once for every transport.
//!
//! Which door a message goes through — stateless (2026-07-28) or a handshake session — is
//! decided here ([`door`]), from the message and what its transport knows: the
//! `MCP-Protocol-Version` header on Streamable HTTP, whether the connection holds a session.
//! And the headers a transport that has them passes in are checked against the body here:
//! the 2026-07-28 routing headers in the order of its Streamable HTTP transport's "Request
//! validation", and a handshake session's version header. A transport only reads its wire.

use std::borrow::Cow;

use bytes::Bytes;
use http::HeaderMap;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::sync::mpsc;

use super::Inbound;
use super::port::{Connection, Hints, Reply};
use crate::handler::context::Sink;

use crate::protocol::Era;
use crate::protocol::headers::{self, HeaderKind, HeaderParam, RequestHeaders};
use crate::protocol::jsonrpc::{self, Incoming, RpcError};
use crate::protocol::meta::{self, ModernMeta, ModernRequest, Params};
use crate::protocol::methods::Method;
use crate::protocol::version::Revision;
use crate::quota::Slot;
use crate::server::Shared;
use crate::server::dispatch::raw_str;
use crate::server::session::Session;

/// Where a request goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Door {
    /// Served statelessly (2026-07-28): its `_meta` is read and checked next.
    Stateless,
    /// `initialize`: opens a handshake session.
    Initialize,
    /// A message of a handshake session (or of a connection that has none yet).
    Session,
}

/// The era the `MCP-Protocol-Version` header alone suggests: a version that is not a
/// handshake revision's (served or not) makes a message modern.
pub(crate) fn header_era(headers: Option<&RequestHeaders<'_>>) -> Era {
    let Some(value) = headers.and_then(|h| h.protocol_version.first) else {
        return Era::Legacy;
    };
    // A handshake revision's version as it is usually sent, compared as bytes: no walk to
    // make it text first (every request of a session carries one).
    if Revision::is_legacy_version_string_bytes(value.as_bytes().trim_ascii()) {
        return Era::Legacy;
    }
    // `to_str` holds visible ASCII only: an ASCII trim is the whole trim. A value that is
    // not text names no revision, and suggests nothing.
    match value.to_str().map(str::trim_ascii) {
        Ok(v) if !Revision::is_legacy_version_string(v) => Era::Modern,
        _ => Era::Legacy,
    }
}

/// Where a request goes (2026-07-28 "Backward Compatibility" of the versioning page): a
/// request whose `_meta` names a version, or whose version header names something other
/// than a handshake revision, is stateless; `initialize` opens a session unless it is sent
/// inside one (`in_session`: an `Mcp-Session-Id` on HTTP; never on a connection that holds
/// its session, where a new `initialize` starts over); everything else belongs to a session.
/// On a connection with no session yet (`stateless_default`), a method that exists only in
/// the stateless era is stateless, so that its client learns what its `_meta` lacks.
pub(crate) fn door(
    headers: Option<&RequestHeaders<'_>>,
    method: &str,
    params: &Params<'_>,
    in_session: impl FnOnce() -> bool,
    stateless_default: bool,
) -> Door {
    let header_modern = header_era(headers) == Era::Modern;
    if header_modern || meta::names_version(params.meta) {
        return Door::Stateless;
    }
    if stateless_default
        && Method::parse_in(method, Era::Modern).is_some_and(|m| !m.exists_in(Era::Legacy))
    {
        return Door::Stateless;
    }
    if method == Method::Initialize.as_str() && !in_session() {
        return Door::Initialize;
    }
    Door::Session
}

/// Whether Streamable HTTP serves a POST with these headers and params statelessly (for
/// sake's fuzz targets, through `internals`).
#[cfg_attr(not(feature = "internals"), allow(dead_code))]
pub(crate) fn is_stateless(headers: &HeaderMap, params: &Params<'_>) -> bool {
    let headers = RequestHeaders::new(headers);
    let in_session = || headers.session_id.first.is_some();
    door(Some(&headers), "", params, in_session, false) == Door::Stateless
}

/// 2025-06-18 and later require `MCP-Protocol-Version` equal to the session's revision on
/// every request after the handshake; 2025-03-26 accepts its absence.
pub(crate) fn check_session_version(
    rev: Revision,
    headers: &RequestHeaders<'_>,
) -> Result<(), RpcError> {
    // Its bytes, compared whole: the text (`to_str`'s walk) only for the refusal.
    let Some(value) = headers.protocol_version.first else {
        return if rev.features().version_header_required {
            Err(RpcError::invalid_request(format!(
                "Bad Request: missing MCP-Protocol-Version header; this session speaks {rev}"
            ))
            .with_status(400))
        } else {
            Ok(())
        };
    };
    if value.as_bytes().trim_ascii() == rev.as_str().as_bytes() {
        return Ok(());
    }
    let v = value.to_str().unwrap_or("").trim_ascii();
    Err(RpcError::invalid_request(format!(
        "Bad Request: MCP-Protocol-Version {v:?} is not this session's revision {rev}"
    ))
    .with_status(400))
}

/// Every check a 2026-07-28 request passes after its `_meta`: the version, and that the server
/// offers the method. With headers (Streamable HTTP), in the order of the 2026-07-28 Streamable
/// HTTP transport's "Request validation": version header, `Mcp-Method`, the method, `Mcp-Name`,
/// the server's capabilities, `Mcp-Param-*`.
pub(super) fn check_modern<'a>(
    shared: &Shared,
    headers: Option<&RequestHeaders<'_>>,
    method_name: &str,
    params: &Params<'a>,
    meta: ModernMeta<'a>,
) -> Result<(Revision, Method, ModernMeta<'a>), RpcError> {
    let Some(headers) = headers else {
        let rev = super::stateless_revision(&meta.protocol_version)?;
        let method = super::resolve(shared, Era::Modern, method_name)?;
        return Ok((rev, method, meta));
    };
    // 6–8. The version header: present, served, equal to `_meta`.
    let header_version = headers.protocol_version.read(headers::PROTOCOL_VERSION)?.ok_or_else(|| {
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
    let rev = super::stateless_revision(header_version)?;
    if meta.protocol_version != header_version {
        return Err(version_mismatch(header_version, &meta.protocol_version));
    }
    // 9. `Mcp-Method` equals the method, exactly.
    match headers.method.read(headers::METHOD)? {
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
        match (headers.name.read(headers::NAME)?, body) {
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
    // 12. `Mcp-Param-*` headers of the tool's `x-mcp-header` arguments: a tool of this
    // server's, or a source's (`Server::proxy`), by the `x-mcp-header` arguments of its
    // listing. (An unknown tool is the dispatcher's -32602.)
    if method == Method::ToolsCall
        && let Some(name) = params.name.and_then(raw_str)
    {
        match shared.catalog.registry.tool(&name) {
            Some(entry) if !entry.headers.is_empty() => {
                check_param_headers(headers.map, &entry.headers, params.arguments)?;
            }
            Some(_) => {}
            None => {
                if let Some(declared) = shared
                    .catalog
                    .source_of(crate::server::source::ListKind::Tools, &name)
                    .and_then(|s| s.tool_headers(&name))
                    && !declared.is_empty()
                {
                    check_param_headers(headers.map, &declared, params.arguments)?;
                }
            }
        }
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

/// What a connection does with a message: reads it as far as its door needs, decides the
/// door, and hands it to the stateless door (`modern.rs`) or the session door (`legacy.rs`).
impl Connection {
    pub(super) fn serve(
        &self,
        message: Bytes,
        hints: &Hints<'_>,
        extensions: http::Extensions,
    ) -> Reply {
        let era_hint = header_era(hints.headers);
        // What the request costs while it runs (`Limits::max_request_bytes_per_client`).
        let bytes = message.len();
        if message.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
            return self.batch(&message, hints, era_hint, extensions);
        }
        // The common case, a well-formed 2026-07-28 request over HTTP, is read in one pass;
        // anything else (and every malformed request) is decoded level by level below.
        if era_hint == Era::Modern
            && let Some(req) = meta::decode_modern_request(&message)
        {
            record_request(req.method, &req.params);
            tracing::Span::current().record("revision", req.meta.protocol_version.as_ref());
            return self.stateless(req, hints, bytes, extensions);
        }
        // A well-formed request is read in one pass too (envelope and `params` together);
        // notifications, responses and malformed messages level by level.
        let (id, method, params) = match meta::decode_request(&message) {
            Some((id, method, params)) => (id, Cow::Borrowed(method), params),
            None => {
                let incoming = match jsonrpc::decode(&message) {
                    Ok(m) => m,
                    Err(e) => return Reply::error(era_hint, e.id, *e.error),
                };
                let Incoming::Request { id, method, params } = incoming else {
                    return self
                        .session_message(incoming, None, hints, bytes, era_hint, extensions);
                };
                match Params::parse(params) {
                    Ok(p) => (id, method, p),
                    Err(e) => {
                        let e = if era_hint == Era::Modern {
                            RpcError::invalid_meta(e.message)
                        } else {
                            e
                        };
                        return Reply::error(era_hint, Some(id), e);
                    }
                }
            }
        };
        record_request(&method, &params);
        if !self.carrier.per_request() {
            tracing::info!(method = &*jsonrpc::logged(&method), id = %jsonrpc::Logged(&id), "request");
        }
        // Asked only of an `initialize`: whether it is sent inside a session. A held
        // connection's `initialize` starts its session over.
        let in_session = || self.carrier.in_session(hints.headers);
        let stateless_default = self.carrier.stateless_by_default();
        match door(
            hints.headers,
            &method,
            &params,
            in_session,
            stateless_default,
        ) {
            Door::Stateless => match meta::parse_modern_meta(params.meta) {
                Ok(meta) => {
                    tracing::Span::current().record("revision", meta.protocol_version.as_ref());
                    let req = ModernRequest {
                        id,
                        method: &method,
                        params,
                        meta,
                    };
                    self.stateless(req, hints, bytes, extensions)
                }
                Err(e) => Reply::error(Era::Modern, Some(id), e),
            },
            Door::Initialize => self.initialize(id, &params, extensions),
            Door::Session => {
                let request = Incoming::Request {
                    id,
                    method,
                    params: None,
                };
                self.session_message(request, Some(params), hints, bytes, era_hint, extensions)
            }
        }
    }

    /// The share of the request budgets a session's (or this connection's) requests take.
    pub(super) fn slots(
        &self,
        n: usize,
        bytes: usize,
        session: Option<&Session>,
    ) -> Result<Slot, RpcError> {
        let admission = &self.shared.admission;
        // Made once per held connection, or per session.
        let scope = self
            .carrier
            .scope_key(|scope| admission.session_key(scope))
            .or_else(|| session.map(|s| s.quota_key(|sid| admission.session_key(sid))));
        admission.request_slots_of(n, bytes, scope, self.caller)
    }

    /// Where a request's messages go before its answer, and the channel a per-request
    /// connection reads them from. `wanted`: whether the request may send any.
    pub(super) fn sink(
        &self,
        hints: &Hints<'_>,
        wanted: bool,
    ) -> (Option<Sink>, Option<mpsc::Receiver<Bytes>>) {
        if let Some(sink) = &hints.sink {
            return (Some(sink.clone()), None);
        }
        if let Some(out) = self.carrier.outbound() {
            return (Some(out), None);
        }
        if wanted && hints.streams.is_some_and(|accepts| accepts()) {
            let (tx, rx) = mpsc::channel::<Bytes>(self.shared.config.limits.stream_buffer);
            return (Some(tx), Some(rx));
        }
        (None, None)
    }

    pub(super) fn inbound(&self, sink: Option<Sink>, extensions: http::Extensions) -> Inbound {
        Inbound {
            sink,
            extensions,
            cancel: None,
            no_questions: !self.questions,
            quiet: false,
            polled_at_once: false,
            transport: self.transport,
            kind: self.kind,
        }
    }
}

/// Records what a request is in the current span (Streamable HTTP opens one per POST).
fn record_request(method: &str, params: &Params<'_>) {
    let span = tracing::Span::current();
    if span.is_disabled() {
        return;
    }
    span.record("method", &*jsonrpc::logged(method));
    if let Some(name) = params.name.or(params.uri).and_then(jsonrpc::raw_string) {
        span.record("name", &*jsonrpc::logged(&name));
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
    fn empty() -> std::sync::Arc<Shared> {
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
            .and_then(|meta| {
                check_modern(shared, Some(&RequestHeaders::new(h)), method, &params, meta)
            })
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
