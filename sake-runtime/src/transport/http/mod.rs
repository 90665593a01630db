//! Streamable HTTP: one endpoint for every revision.
//!
//! Each POST is admitted (`Host`/`Origin`, media type, size), decoded once, and classified as
//! digest C7 says: a modern-shaped request (2026-07-28 `_meta`, or a non-legacy
//! `MCP-Protocol-Version`) is served statelessly; everything else belongs to the handshake era.

pub(crate) mod admission;
pub mod headers;
pub(crate) mod legacy;
pub(crate) mod modern;
pub(crate) mod resume;
pub(crate) mod sse;

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use axum::routing::MethodRouter;
use bytes::Bytes;
use http::header::ALLOW;
use http::{HeaderMap, HeaderValue, StatusCode};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::protocol::jsonrpc::{self, Incoming, RpcError};
use crate::protocol::meta::Params;
use crate::protocol::{Era, Revision};
use crate::server::Shared;

/// The endpoint's router.
pub(crate) fn router(shared: Arc<Shared>) -> Router {
    let path = shared.config.path.clone();
    let endpoint = MethodRouter::new()
        .post(post)
        .get(get)
        .delete(delete)
        .fallback(not_allowed);
    Router::new().route(&path, endpoint).with_state(shared)
}

async fn get(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let cfg = &shared.config;
    if let Err(e) = admission::check_origin(&cfg.hosts, &cfg.origins, request.headers()) {
        return sse::error(Era::Legacy, None, &e);
    }
    match legacy::get(shared.clone(), request.headers()).await {
        Some(resp) => resp,
        None => not_allowed().await,
    }
}

async fn delete(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let cfg = &shared.config;
    if let Err(e) = admission::check_origin(&cfg.hosts, &cfg.origins, request.headers()) {
        return sse::error(Era::Legacy, None, &e);
    }
    match legacy::delete(&shared, request.headers()) {
        Some(resp) => resp,
        None => not_allowed().await,
    }
}

async fn not_allowed() -> Response {
    let mut resp = sse::json(
        405,
        jsonrpc::error_bytes(
            None,
            &RpcError::new(
                jsonrpc::code::TRANSPORT_REFUSED,
                "Method Not Allowed: send JSON-RPC messages with POST (GET and DELETE need an Mcp-Session-Id of a handshake session)",
            ),
        ),
    );
    *resp.status_mut() = StatusCode::METHOD_NOT_ALLOWED;
    resp.headers_mut()
        .insert(ALLOW, HeaderValue::from_static("POST, GET, DELETE"));
    resp
}

async fn read_body(body: Body, limit: usize) -> Result<Bytes, RpcError> {
    axum::body::to_bytes(body, limit)
        .await
        .map_err(|_| admission::too_large(limit))
}

/// Every POST runs in a `mcp` span; one `info` line per request says what it was and how it
/// ended.
async fn post(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    use tracing::Instrument as _;
    use tracing::field::Empty;
    let span = tracing::info_span!(
        "mcp",
        method = Empty,
        name = Empty,
        revision = Empty,
        error = Empty
    );
    let started = std::time::Instant::now();
    // Boxed: the request's future is large (every path's state), and axum and tower move
    // the handler's future several times before polling it; a box moves as a pointer.
    let resp = Box::pin(serve_post(shared, request))
        .instrument(span.clone())
        .await;
    let status = resp.status().as_u16();
    let streaming = resp
        .headers()
        .get(http::header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    tracing::info!(
        parent: &span,
        status,
        streaming,
        elapsed_us = started.elapsed().as_micros() as u64,
        "request"
    );
    resp
}

/// Records what a request is in the current `mcp` span.
pub(crate) fn record_request(method: &str, params: &Params<'_>) {
    let span = tracing::Span::current();
    if span.is_disabled() {
        return;
    }
    span.record("method", method);
    if let Some(name) = params
        .name
        .or(params.uri)
        .and_then(crate::server::dispatch::raw_str)
    {
        span.record("name", &*name);
    }
}

async fn serve_post(shared: Arc<Shared>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let cfg = &shared.config;
    if let Err(e) = admission::check_origin(&cfg.hosts, &cfg.origins, &parts.headers) {
        return sse::error(Era::Modern, None, &e);
    }
    if let Err(e) = admission::check_content_type(&parts.headers) {
        return sse::error(Era::Modern, None, &e);
    }
    if let Some(len) = parts
        .headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        && len > cfg.max_body_bytes as u64
    {
        return sse::error(Era::Modern, None, &admission::too_large(cfg.max_body_bytes));
    }
    let body = match read_body(body, cfg.max_body_bytes).await {
        Ok(b) => b,
        Err(e) => return sse::error(Era::Modern, None, &e),
    };
    let era_hint = header_era(&parts.headers);
    if body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
        return match legacy::session(&shared, &parts.headers) {
            Ok(Some(session)) => {
                legacy::batch(
                    shared.clone(),
                    session,
                    &parts.headers,
                    parts.extensions,
                    &body,
                )
                .await
            }
            Ok(None) => sse::error(
                era_hint,
                None,
                &RpcError::invalid_request(
                    "a JSON-RPC batch (array) is only accepted inside a 2025-03-26 session",
                ),
            ),
            Err(e) => sse::error(Era::Legacy, None, &e),
        };
    }
    let message = match jsonrpc::decode(&body) {
        Ok(m) => m,
        Err(e) => return sse::error(era_hint, e.id.as_ref(), &e.error),
    };
    // Requests: modern-shaped ones are stateless; `initialize` opens a session; anything
    // else needs one.
    if let Incoming::Request { id, method, params } = &message {
        let params_parsed = match Params::parse(*params) {
            Ok(p) => p,
            Err(e) => {
                let e = if era_hint == Era::Modern {
                    RpcError::invalid_meta(e.message)
                } else {
                    e
                };
                return sse::error(era_hint, Some(id), &e);
            }
        };
        record_request(method, &params_parsed);
        if is_modern(&parts.headers, &params_parsed) {
            tracing::Span::current().record("revision", Revision::LATEST.as_str());
            let req = modern::ModernRequest {
                id: id.clone(),
                method,
                params: params_parsed,
            };
            return modern::serve(shared.clone(), &parts.headers, parts.extensions, req).await;
        }
        if method == "initialize" {
            return legacy::initialize(&shared, id, &params_parsed);
        }
    }
    match legacy::session(&shared, &parts.headers) {
        Ok(Some(session)) => legacy::serve(shared.clone(), session, &parts.headers, parts.extensions, message).await,
        Err(e) => sse::error(Era::Legacy, None, &e),
        Ok(None) => match message {
            // A 2026-07-28 client has no notifications to send over HTTP; accept and ignore.
            Incoming::Notification { .. } if era_hint == Era::Modern => sse::accepted(),
            Incoming::Request { id, .. } => sse::error(
                Era::Legacy,
                Some(&id),
                &RpcError::invalid_request(
                    "Bad Request: no Mcp-Session-Id; start a session with `initialize`, or send a 2026-07-28 request (params._meta with io.modelcontextprotocol/protocolVersion)",
                )
                .with_status(400),
            ),
            _ => sse::error(
                Era::Legacy,
                None,
                &RpcError::invalid_request(
                    "Bad Request: no Mcp-Session-Id; notifications and responses belong to a session",
                )
                .with_status(400),
            ),
        },
    }
}

/// The era an `MCP-Protocol-Version` header alone suggests.
fn header_era(headers: &HeaderMap) -> Era {
    match headers
        .get(headers::PROTOCOL_VERSION)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
    {
        Some(v) if !Revision::is_legacy_version_string(v) => Era::Modern,
        _ => Era::Legacy,
    }
}

#[derive(Deserialize)]
struct VersionOnly<'a> {
    #[serde(rename = "io.modelcontextprotocol/protocolVersion", borrow, default)]
    version: Option<&'a RawValue>,
}

/// Digest C7: modern when `_meta` names a protocol version, or when the version header names
/// something other than a handshake revision.
fn is_modern(headers: &HeaderMap, params: &Params<'_>) -> bool {
    if header_era(headers) == Era::Modern && headers.contains_key(headers::PROTOCOL_VERSION) {
        return true;
    }
    params
        .meta
        .and_then(|m| serde_json::from_str::<VersionOnly<'_>>(m.get()).ok())
        .is_some_and(|v| v.version.is_some())
}
