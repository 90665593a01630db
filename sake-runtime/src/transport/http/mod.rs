//! Streamable HTTP: one endpoint for every revision.
//!
//! Each POST is admitted (`Host`/`Origin`, media type, size), decoded once, and classified as
//! 2026-07-28 "Backward Compatibility" of the versioning page says: a modern-shaped request (2026-07-28 `_meta`, or a non-legacy
//! `MCP-Protocol-Version`) is served statelessly; everything else belongs to the handshake era.

pub(crate) mod admission;
#[cfg(feature = "auth")]
mod auth;
pub mod cors;
pub mod headers;
pub(crate) mod legacy;
pub(crate) mod modern;
pub(crate) mod resume;
mod serve;
pub(crate) mod sse;

use admission::HostPolicy;
pub(crate) use serve::serve;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use axum::routing::MethodRouter;
use bytes::Bytes;
use http::header::ALLOW;
use http::{HeaderMap, HeaderValue, StatusCode};

use crate::error::Error;
use crate::protocol::jsonrpc::{self, Incoming, RpcError};
use crate::protocol::meta::{self, Params};
use crate::protocol::{Era, Revision};
use crate::server::front::legacy::batch_without_session;
use crate::server::{Peer, Shared};

/// The settings of the HTTP transport.
#[derive(Clone, Debug)]
pub(crate) struct HttpConfig {
    pub path: String,
    pub hosts: HostPolicy,
    pub origins: Vec<String>,
    pub sse_retry: Duration,
    pub body_timeout: Duration,
    pub header_timeout: Duration,
    /// A header a trusted proxy sets with the client's address (`X-Forwarded-For`): its
    /// rightmost address is the peer.
    pub client_ip_header: Option<http::HeaderName>,
    /// Request bodies read at once, by everyone and by one client.
    pub max_bodies_in_flight: usize,
    pub max_bodies_per_client: usize,
    /// The slowest a body may arrive (bytes per second), after [`RATE_GRACE`].
    pub min_body_rate: u64,
    /// Cross-origin access for browser pages (`Server::cors`).
    pub cors: Option<cors::Cors>,
}

/// How long a body may take before [`HttpConfig::min_body_rate`] applies: the first bytes of
/// a body wait for the client's own work (serialising) and a round trip.
pub(crate) const RATE_GRACE: Duration = Duration::from_secs(2);

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            path: "/mcp".to_owned(),
            hosts: HostPolicy::Loopback,
            origins: Vec::new(),
            sse_retry: Duration::from_millis(1000),
            body_timeout: Duration::from_secs(30),
            header_timeout: Duration::from_secs(30),
            client_ip_header: None,
            max_bodies_in_flight: 1024,
            max_bodies_per_client: 64,
            min_body_rate: 4096,
            cors: None,
        }
    }
}

/// The HTTP endpoint: the engine, the transport's settings, and what only HTTP keeps (the
/// resumable response streams of handshake sessions).
pub(crate) struct Endpoint {
    pub shared: Arc<Shared>,
    pub http: HttpConfig,
    pub streams: resume::Streams,
    /// Bodies being read: by everyone, and each client's share.
    reading: Arc<tokio::sync::Semaphore>,
    readers: Arc<crate::server::quota::Quotas>,
}

impl Endpoint {
    /// A slot to read a body in, among `max_bodies_in_flight` and the caller's
    /// `max_bodies_per_client`.
    fn reading_slot(
        &self,
        caller: crate::server::quota::Key,
    ) -> Result<
        (
            tokio::sync::OwnedSemaphorePermit,
            crate::server::quota::Share,
        ),
        RpcError,
    > {
        let share = self
            .readers
            .take(caller, 1, self.http.max_bodies_per_client)
            .map_err(|held| {
                crate::server::front::too_many(&format!(
                    "this client is sending {held} request bodies at once and may send {} (Server::max_bodies_per_client)",
                    self.http.max_bodies_per_client
                ))
            })?;
        let permit = self.reading.clone().try_acquire_owned().map_err(|_| {
            crate::server::front::busy(&format!(
                "{} request bodies being received",
                self.http.max_bodies_in_flight
            ))
        })?;
        Ok((permit, share))
    }

    pub(crate) fn new(shared: Arc<Shared>, http: HttpConfig) -> Result<Endpoint, Error> {
        if !http.path.starts_with('/') {
            return Err(Error::Config(format!(
                "the endpoint path must start with '/': {:?}",
                http.path
            )));
        }
        let streams = resume::Streams::new(
            shared.config.max_tracked_sessions,
            shared.config.max_records_per_client,
        );
        Ok(Endpoint {
            reading: Arc::new(tokio::sync::Semaphore::new(http.max_bodies_in_flight)),
            readers: Arc::default(),
            shared,
            http,
            streams,
        })
    }
}

/// Where a request came from: the rightmost address of the trusted proxy's header when one is
/// configured, else the connection's peer (`ConnectInfo`, set by `Service::serve` and by
/// `axum::serve(.., router.into_make_service_with_connect_info::<SocketAddr>())`).
fn peer(http: &HttpConfig, parts: &http::request::Parts) -> Option<Peer> {
    if let Some(name) = &http.client_ip_header {
        return parts
            .headers
            .get_all(name)
            .iter()
            .next_back()
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.rsplit(',').next())
            .and_then(|ip| ip.trim().parse().ok())
            .map(Peer);
    }
    parts
        .extensions
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|c| Peer(c.0.ip()))
}

/// Records the request's peer in its extensions.
fn note_peer(http: &HttpConfig, parts: &mut http::request::Parts) {
    if let Some(p) = peer(http, parts) {
        parts.extensions.insert(p);
    }
}

/// The endpoint's router.
pub(crate) fn router(ep: Arc<Endpoint>) -> Router {
    let path = ep.http.path.clone();
    let endpoint = MethodRouter::new()
        .post(post)
        .get(get)
        .delete(delete)
        .fallback(not_allowed);
    let router = Router::new().route(&path, endpoint);
    #[cfg(feature = "auth")]
    let router = match &ep.shared.auth {
        Some(a) => router.merge(auth::metadata_routes(a)),
        None => router,
    };
    let cors = ep.http.cors.clone();
    let router = router.with_state(ep);
    match cors {
        Some(cors) => router.layer(cors),
        None => router,
    }
}

async fn get(State(ep): State<Arc<Endpoint>>, request: Request) -> Response {
    let cfg = &ep.http;
    if let Err(e) = admission::check_origin(&cfg.hosts, &cfg.origins, request.headers()) {
        return sse::error(Era::Legacy, None, &e);
    }
    let (mut parts, body) = request.into_parts();
    note_peer(cfg, &mut parts);
    #[cfg(feature = "auth")]
    if let Err(resp) =
        auth::authenticate(&ep, Era::Legacy, &parts.headers, &mut parts.extensions).await
    {
        return resp;
    }
    let request = Request::from_parts(parts, body);
    match legacy::get(&ep, request.headers(), request.extensions()).await {
        Some(resp) => resp,
        None => not_allowed().await,
    }
}

async fn delete(State(ep): State<Arc<Endpoint>>, request: Request) -> Response {
    let cfg = &ep.http;
    if let Err(e) = admission::check_origin(&cfg.hosts, &cfg.origins, request.headers()) {
        return sse::error(Era::Legacy, None, &e);
    }
    let (mut parts, body) = request.into_parts();
    note_peer(cfg, &mut parts);
    #[cfg(feature = "auth")]
    if let Err(resp) =
        auth::authenticate(&ep, Era::Legacy, &parts.headers, &mut parts.extensions).await
    {
        return resp;
    }
    let request = Request::from_parts(parts, body);
    match legacy::delete(&ep.shared, request.headers(), request.extensions()) {
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

/// Reads a body of at most `limit` bytes, within `cfg.body_timeout` and at least at
/// `cfg.min_body_rate` once [`RATE_GRACE`] has passed: a client that sends half a body, or a
/// trickle, gives its slot back within seconds (408).
async fn read_body(cfg: &HttpConfig, body: Body, limit: usize) -> Result<Bytes, RpcError> {
    use futures_util::StreamExt as _;
    let start = tokio::time::Instant::now();
    let hard = start + cfg.body_timeout;
    let rate = cfg.min_body_rate.max(1);
    // Sized once from the declared length (never beyond the limit), not doubled as it comes.
    let declared = hyper::body::Body::size_hint(&body).upper().unwrap_or(0);
    let mut buf =
        bytes::BytesMut::with_capacity(usize::try_from(declared).unwrap_or(limit).min(limit));
    let mut data = body.into_data_stream();
    loop {
        // The time by which one more byte must have come.
        let owed = Duration::from_secs_f64((buf.len() as f64 + 1.0) / rate as f64);
        let due = (start + RATE_GRACE + owed).min(hard);
        match tokio::time::timeout_at(due, data.next()).await {
            Ok(Some(Ok(chunk))) => {
                if buf.len() + chunk.len() > limit {
                    return Err(admission::too_large(limit));
                }
                buf.extend_from_slice(&chunk);
            }
            Ok(None) => return Ok(buf.freeze()),
            Ok(Some(Err(_))) => {
                return Err(slow_body(format!(
                    "the body broke off after {} bytes",
                    buf.len()
                )));
            }
            Err(_) if due == hard => {
                return Err(slow_body(format!(
                    "the body did not arrive within {} s",
                    cfg.body_timeout.as_secs_f64()
                )));
            }
            Err(_) => {
                return Err(slow_body(format!(
                    "the body arrives slower than {rate} bytes per second ({} bytes in {:.1} s)",
                    buf.len(),
                    start.elapsed().as_secs_f64()
                )));
            }
        }
    }
}

/// 408: the body came too slowly, or not whole.
fn slow_body(why: String) -> RpcError {
    RpcError::new(
        jsonrpc::code::TRANSPORT_REFUSED,
        format!("Request Timeout: {why}; send the whole body at once"),
    )
    .with_status(408)
}

/// Every POST runs in a `mcp` span; one `info` line per request says what it was and how it
/// ended.
async fn post(State(ep): State<Arc<Endpoint>>, request: Request) -> Response {
    use tracing::Instrument as _;
    use tracing::field::Empty;
    let span = tracing::info_span!(
        "mcp",
        method = Empty,
        name = Empty,
        revision = Empty,
        error = Empty
    );
    // The clock is read only when the line will be written.
    let started = tracing::enabled!(tracing::Level::INFO).then(std::time::Instant::now);
    // Boxed: the request's future is large (every path's state), and axum and tower move
    // the handler's future several times before polling it; a box moves as a pointer.
    let resp = Box::pin(serve_post(ep, request))
        .instrument(span.clone())
        .await;
    let Some(started) = started else {
        return resp;
    };
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
        .and_then(crate::protocol::jsonrpc::raw_string)
    {
        span.record("name", &*name);
    }
}

/// Whether the client accepts an SSE response. A missing `Accept` accepts everything.
pub(crate) fn accepts_sse(headers: &HeaderMap) -> bool {
    let mut any = false;
    for value in headers.get_all(http::header::ACCEPT) {
        any = true;
        let Ok(v) = value.to_str() else { continue };
        for range in v.split(',') {
            let media = range.split(';').next().unwrap_or("").trim();
            if media.eq_ignore_ascii_case("text/event-stream")
                || media == "*/*"
                || media.eq_ignore_ascii_case("text/*")
            {
                return true;
            }
        }
    }
    !any
}

async fn serve_post(ep: Arc<Endpoint>, request: Request) -> Response {
    let shared = &ep.shared;
    let (mut parts, body) = request.into_parts();
    let cfg = &ep.http;
    note_peer(cfg, &mut parts);
    let max_body = shared.config.max_body_bytes;
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
        && len > max_body as u64
    {
        return sse::error(Era::Modern, None, &admission::too_large(max_body));
    }
    // Who is calling, before the body is read: a request without a usable token costs
    // nothing more.
    #[cfg(feature = "auth")]
    if let Err(resp) = auth::authenticate(
        &ep,
        header_era(&parts.headers),
        &parts.headers,
        &mut parts.extensions,
    )
    .await
    {
        return resp;
    }
    let caller = shared.caller_key(&parts.extensions);
    // A body being read holds a reading slot, never a request slot: a client that sends
    // half a body holds its own share of the reading budget, for seconds.
    let body = {
        let _reading = match ep.reading_slot(caller) {
            Ok(slot) => slot,
            Err(e) => return sse::error(Era::Modern, None, &e),
        };
        match read_body(cfg, body, max_body).await {
            Ok(b) => b,
            Err(e) => return sse::error(Era::Modern, None, &e),
        }
    };
    let era_hint = header_era(&parts.headers);
    if body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
        return match legacy::session(shared, &parts.headers, &parts.extensions) {
            Ok(Some(session)) => {
                legacy::batch(
                    &ep,
                    session,
                    &parts.headers,
                    parts.extensions,
                    &body,
                    caller,
                )
                .await
            }
            Ok(None) => sse::error(era_hint, None, &batch_without_session()),
            Err(e) => sse::error(Era::Legacy, None, &e),
        };
    }
    // The common case, a well-formed 2026-07-28 request, is read in one pass; anything
    // else (and every malformed request) is decoded level by level below.
    if era_hint == Era::Modern
        && let Some(req) = meta::decode_modern_request(&body)
    {
        record_request(req.method, &req.params);
        tracing::Span::current().record("revision", req.meta.protocol_version.as_ref());
        let permit = match shared.request_slots(1, None, caller) {
            Ok(p) => p,
            Err(e) => return sse::error(Era::Modern, Some(&req.id), &e),
        };
        return modern::serve(
            shared.clone(),
            &parts.headers,
            parts.extensions,
            req,
            permit,
        )
        .await;
    }
    let message = match jsonrpc::decode(&body) {
        Ok(m) => m,
        Err(e) => return sse::error(era_hint, e.id.as_ref(), &e.error),
    };
    // Requests: modern-shaped ones are stateless; `initialize` opens a session; anything
    // else needs one. Their params are read once, here.
    let mut params = None;
    if let Incoming::Request {
        id,
        method,
        params: raw,
    } = &message
    {
        let parsed = match Params::parse(*raw) {
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
        record_request(method, &parsed);
        if is_stateless(&parts.headers, &parsed) {
            // The first check of a 2026-07-28 request: `_meta`.
            let meta = match meta::parse_modern_meta(parsed.meta) {
                Ok(meta) => meta,
                Err(e) => return sse::error(Era::Modern, Some(id), &e),
            };
            tracing::Span::current().record("revision", meta.protocol_version.as_ref());
            let permit = match shared.request_slots(1, None, caller) {
                Ok(p) => p,
                Err(e) => return sse::error(Era::Modern, Some(id), &e),
            };
            let req = meta::ModernRequest {
                id: id.clone(),
                method,
                params: parsed,
                meta,
            };
            return modern::serve(
                shared.clone(),
                &parts.headers,
                parts.extensions,
                req,
                permit,
            )
            .await;
        }
        // Inside a session, `initialize` is refused like any request of that session.
        if method == "initialize" && !parts.headers.contains_key(headers::name::SESSION_ID) {
            return legacy::initialize(shared, id, &parsed, &parts.extensions);
        }
        params = Some(parsed);
    }
    match legacy::session(shared, &parts.headers, &parts.extensions) {
        Ok(Some(session)) => {
            // A request of the session holds a slot while it runs; its notifications and
            // responses are handled at once.
            let permit = match &message {
                Incoming::Request { id, .. } => {
                    match shared.request_slots(1, Some(&session.sid), caller) {
                        Ok(p) => Some(p),
                        Err(e) => return sse::error(Era::Legacy, Some(id), &e),
                    }
                }
                _ => None,
            };
            legacy::serve(
                &ep,
                session,
                &parts.headers,
                parts.extensions,
                message,
                params,
                permit,
            )
            .await
        }
        // JSON-RPC: an error names the request whenever its id could be read.
        Err(e) => sse::error(Era::Legacy, message.request_id(), &e),
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
        .get(headers::name::PROTOCOL_VERSION)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
    {
        Some(v) if !Revision::is_legacy_version_string(v) => Era::Modern,
        _ => Era::Legacy,
    }
}

/// Whether a POST is stateless (2026-07-28): its `_meta` names a protocol version, or its
/// version header names something other than a handshake revision. Everything else belongs
/// to a handshake session (the 2026-07-28 transport's "Backwards compatibility").
pub(crate) fn is_stateless(headers: &HeaderMap, params: &Params<'_>) -> bool {
    (header_era(headers) == Era::Modern && headers.contains_key(headers::name::PROTOCOL_VERSION))
        || meta::names_version(params.meta)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Registry;
    use crate::service::Server;
    use serde_json::{Value, json};

    fn shared() -> Arc<Endpoint> {
        let registry = Registry::from_defs([], [], []).unwrap();
        Server::with_registry(registry).build().unwrap().endpoint
    }

    async fn send(
        shared: &Arc<Endpoint>,
        headers: &[(&str, &str)],
        body: Value,
    ) -> (u16, HeaderMap, Value) {
        let mut req = http::Request::builder()
            .method("POST")
            .uri("/mcp")
            .header("host", "localhost")
            .header("content-type", "application/json");
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let req = req.body(Body::from(body.to_string())).unwrap();
        let resp = post(State(shared.clone()), req).await;
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
            .await
            .unwrap();
        (
            status,
            headers,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }

    async fn open_session(shared: &Arc<Endpoint>, version: &str) -> String {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}});
        let (status, headers, _) = send(shared, &[], init).await;
        assert_eq!(status, 200);
        headers[headers::SESSION_ID].to_str().unwrap().to_owned()
    }

    #[tokio::test]
    async fn session_and_version_header_errors_echo_the_request_id() {
        let shared = shared();
        let ping = json!({"jsonrpc": "2.0", "id": 7, "method": "ping"});
        let (status, _, body) = send(
            &shared,
            &[(headers::SESSION_ID, "s1.bad.bad")],
            ping.clone(),
        )
        .await;
        assert_eq!(
            (status, &body["id"], &body["error"]["code"]),
            (404, &json!(7), &json!(-32001))
        );

        let sid = open_session(&shared, "2025-06-18").await;
        let (status, _, body) = send(&shared, &[(headers::SESSION_ID, &sid)], ping).await;
        assert_eq!(
            (status, &body["id"], &body["error"]["code"]),
            (400, &json!(7), &json!(-32600))
        );

        // A notification has no id to echo.
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let (status, _, body) = send(&shared, &[(headers::SESSION_ID, "s1.bad.bad")], note).await;
        assert_eq!((status, body.get("id")), (404, None));
    }

    #[tokio::test]
    async fn initialize_inside_a_session_does_not_open_another() {
        let shared = shared();
        let sid = open_session(&shared, "2025-11-25").await;
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}});
        let in_session = [
            (headers::SESSION_ID, sid.as_str()),
            (headers::PROTOCOL_VERSION, "2025-11-25"),
        ];
        let (status, headers, body) = send(&shared, &in_session, init.clone()).await;
        assert_eq!(
            (status, &body["id"], &body["error"]["code"]),
            (200, &json!(1), &json!(-32600))
        );
        assert!(headers.get(headers::SESSION_ID).is_none());
        // With an id that names no session: 404, as for any request.
        let (status, _, body) = send(&shared, &[(headers::SESSION_ID, "s1.gone.gone")], init).await;
        assert_eq!((status, &body["error"]["code"]), (404, &json!(-32001)));
    }
}
