//! Streamable HTTP: one endpoint for every revision.
//!
//! What is HTTP stays here: each POST is admitted (`Host`/`Origin`, media type, size, the
//! caller's token, a reading slot), its body read within its time and rate, and handed with
//! its headers to a [`Connection`] of its own, which decides everything else; its `Reply`
//! becomes a JSON body, an SSE stream (resumable for a handshake session,
//! `session`), or 202, with the session id it carries. GET and DELETE are a session's
//! stream and its end.

pub(crate) mod admission;
#[cfg(feature = "auth")]
mod auth;
mod card;
pub mod cors;
mod dev_apps;
pub mod headers;
pub(crate) mod resume;
mod serve;
pub(crate) mod session;
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
use crate::handler::boxed_in_place;
use crate::limits::Limits;
use crate::protocol::headers::RequestHeaders;
use crate::protocol::jsonrpc::{self, RpcError};
use crate::quota::{Drawn, Flight, Key, PeerAddr, Pool, Quotas, Share};
use crate::server::front::port::{
    Answering, Connection, Engine, Frame, Hints, Reply, busy, too_many,
};

/// The settings of the HTTP transport.
#[derive(Clone, Debug)]
pub(crate) struct HttpConfig {
    pub path: String,
    pub hosts: HostPolicy,
    pub origins: Vec<String>,
    pub sse_retry: Duration,
    /// A header a trusted proxy sets with the client's address (`X-Forwarded-For`): its
    /// rightmost address is the peer.
    pub client_ip_header: Option<http::HeaderName>,
    /// The server's limits (those of HTTP: bodies at once and their time and rate, the head's
    /// time, resumable streams kept, a detached request's grace).
    pub limits: Limits,
    /// What the server card and the AI Catalog describe (`Server::listing`), and the server.
    pub listing: Option<(crate::card::Listing, crate::protocol::types::Implementation)>,
    /// The server's public URL without the endpoint's path (`Server::public_url`).
    pub public_url: Option<String>,
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
            client_ip_header: None,
            limits: Limits::default(),
            listing: None,
            public_url: None,
            cors: None,
        }
    }
}

/// The HTTP endpoint: the engine's port, the transport's settings, and what only HTTP keeps
/// (the resumable response streams of handshake sessions, the bodies being read).
pub(crate) struct Endpoint {
    pub engine: Engine,
    pub http: HttpConfig,
    /// How callers prove who they are (feature `auth`): checked before a body is read.
    #[cfg(feature = "auth")]
    pub auth: Option<Arc<crate::auth::Authorization>>,
    pub streams: resume::Streams,
    /// Bodies being read: by everyone, and each client's share.
    reading: Arc<Pool>,
    readers: Arc<Quotas>,
    /// TCP connections open (`serve`'s accept loop): by everyone, and each address's share.
    connections: Arc<Pool>,
    connections_by: Arc<Quotas>,
}

/// What an open connection holds of the connection budgets; given back when it closes.
pub(crate) struct Admitted {
    _all: Drawn,
    _address: Option<Share>,
}

impl Endpoint {
    /// A slot to read a body in, among `max_bodies_in_flight` and the caller's
    /// `max_bodies_per_client`.
    fn reading_slot(&self, caller: Key) -> Result<(Drawn, Share), RpcError> {
        let share = self
            .readers
            .take(caller, 1, self.http.limits.max_bodies_per_client)
            .map_err(|held| {
                too_many(&format!(
                    "this client is sending {held} request bodies at once and may send {} (Limits::max_bodies_per_client)",
                    self.http.limits.max_bodies_per_client
                ))
            })?;
        let reading = self.reading.draw(1).ok_or_else(|| {
            busy(&format!(
                "{} request bodies being received",
                self.http.limits.max_bodies_in_flight
            ))
        })?;
        Ok((reading, share))
    }

    /// Admits a new TCP connection from `peer`: among `max_connections` (else 503) and the
    /// address's `max_connections_per_client` (else 429; not behind a proxy, where every
    /// connection is the proxy's). `Err` is the whole HTTP response to write before closing.
    pub(crate) fn admit_connection(&self, peer: std::net::IpAddr) -> Result<Admitted, String> {
        let limits = &self.http.limits;
        let address = match self.http.client_ip_header {
            Some(_) => None,
            None => Some(
                self.connections_by
                    .take(
                        self.engine.address_key(peer),
                        1,
                        limits.max_connections_per_client,
                    )
                    .map_err(|held| {
                        refusal(&too_many(&format!(
                            "this address has {held} connections open and may have {} (Limits::max_connections_per_client)",
                            limits.max_connections_per_client
                        )))
                    })?,
            ),
        };
        let all = self.connections.draw(1).ok_or_else(|| {
            refusal(&busy(&format!(
                "{} open connections",
                limits.max_connections
            )))
        })?;
        Ok(Admitted {
            _all: all,
            _address: address,
        })
    }

    pub(crate) fn new(
        engine: Engine,
        http: HttpConfig,
        #[cfg(feature = "auth")] auth: Option<Arc<crate::auth::Authorization>>,
    ) -> Result<Endpoint, Error> {
        if !http.path.starts_with('/') {
            return Err(Error::Config(format!(
                "the endpoint path must start with '/': {:?}",
                http.path
            )));
        }
        let streams = resume::Streams::new(
            http.limits.max_tracked_sessions,
            http.limits.max_records_per_client,
        );
        Ok(Endpoint {
            reading: Arc::new(Pool::new(http.limits.max_bodies_in_flight)),
            readers: Arc::default(),
            connections: Arc::new(Pool::new(http.limits.max_connections)),
            connections_by: Arc::default(),
            engine,
            http,
            #[cfg(feature = "auth")]
            auth,
            streams,
        })
    }

    /// The connection of one request, its caller already known.
    fn connection(&self, extensions: http::Extensions, caller: Key) -> Connection {
        Connection::for_request(&self.engine, "tcp", extensions, caller)
    }
}

/// Where a request came from: the rightmost address of the trusted proxy's header when one is
/// configured, else the connection's peer (`ConnectInfo`, set by `Service::serve` and by
/// `axum::serve(.., router.into_make_service_with_connect_info::<SocketAddr>())`).
fn peer(http: &HttpConfig, parts: &http::request::Parts) -> Option<PeerAddr> {
    if let Some(name) = &http.client_ip_header {
        return parts
            .headers
            .get_all(name)
            .iter()
            .next_back()
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.rsplit(',').next())
            .and_then(|ip| ip.trim().parse().ok())
            .map(PeerAddr::new);
    }
    parts
        .extensions
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|c| PeerAddr::new(c.0.ip()))
}

/// Records the request's peer in its extensions, unless the accept loop did, with the
/// connection's quota key (`serve`).
fn note_peer(http: &HttpConfig, parts: &mut http::request::Parts) {
    if http.client_ip_header.is_none() && parts.extensions.get::<PeerAddr>().is_some() {
        return;
    }
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
    // The server card and the AI Catalog (`Server::listing`).
    let router = match card::routes(&ep) {
        Some(cards) => router.merge(cards),
        None => router,
    };
    // The MCP Apps preview, under `cargo sake dev` only (`SAKE_DEV_APPS`).
    let router = match dev_apps::routes() {
        Some(preview) => router.merge(preview),
        None => router,
    };
    #[cfg(feature = "auth")]
    let router = match &ep.auth {
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

/// What GET and DELETE share before their own work: admission and the caller, then the
/// request's connection.
async fn admit(ep: &Endpoint, request: Request) -> Result<(Connection, HeaderMap), Response> {
    let cfg = &ep.http;
    let checked = admission::check_origin(
        &cfg.hosts,
        &cfg.origins,
        &RequestHeaders::new(request.headers()),
    );
    if let Err(e) = checked {
        return Err(sse::error(None, &e));
    }
    let (mut parts, _) = request.into_parts();
    note_peer(cfg, &mut parts);
    // The token is checked in the address's admission share, as a POST's is.
    let admitting = ep
        .reading_slot(ep.engine.caller_key(&parts.extensions))
        .map_err(|e| sse::error(None, &e))?;
    #[cfg(feature = "auth")]
    auth::authenticate(ep, &parts.method, &parts.headers, &mut parts.extensions).await?;
    drop(admitting);
    let caller = ep.engine.identify(&mut parts.extensions);
    Ok((ep.connection(parts.extensions, caller), parts.headers))
}

async fn get(State(ep): State<Arc<Endpoint>>, request: Request) -> Response {
    let (conn, headers) = match admit(&ep, request).await {
        Ok(v) => v,
        Err(resp) => return resp,
    };
    let hints = Hints {
        headers: Some(&RequestHeaders::new(&headers)),
        ..Hints::default()
    };
    match conn.session_stream(&hints) {
        Ok(Some(stream)) => session::get(&ep, &headers, stream),
        Ok(None) => not_allowed().await,
        Err(e) => sse::error(None, &e),
    }
}

async fn delete(State(ep): State<Arc<Endpoint>>, request: Request) -> Response {
    let (conn, headers) = match admit(&ep, request).await {
        Ok(v) => v,
        Err(resp) => return resp,
    };
    let hints = Hints {
        headers: Some(&RequestHeaders::new(&headers)),
        ..Hints::default()
    };
    match conn.end_session(&hints) {
        Ok(true) => {
            let mut resp = Response::new(Body::empty());
            *resp.status_mut() = StatusCode::OK;
            resp
        }
        Ok(false) => not_allowed().await,
        Err(e) => sse::error(None, &e),
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

/// How much of a body may arrive before it counts against its client's
/// `Limits::max_request_bytes_per_client`: below it, `max_bodies_per_client` bounds what a
/// client has arriving, and the common small request takes no byte share until it runs.
const FREE_BODY_BYTES: usize = 64 << 10;

/// The bytes of a body being received that count against its client's share of requests in
/// flight: none until the body passes [`FREE_BODY_BYTES`], then all it has (or declared);
/// and its reading slot ([`Endpoint::reading_slot`]), held until the body is read.
struct Arriving<'a> {
    ep: &'a Endpoint,
    caller: Key,
    flight: Option<Flight>,
    /// Taken before the token check when there is one; otherwise the first time the body
    /// is waited for (a body that came whole with its head is read without one: reading
    /// it holds nothing across a wait).
    reading: Option<(Drawn, Share)>,
}

impl Arriving<'_> {
    /// Before the body is waited for: its reading slot, if it holds none yet.
    fn waits(&mut self) -> Result<(), RpcError> {
        if self.reading.is_none() {
            self.reading = Some(self.ep.reading_slot(self.caller)?);
        }
        Ok(())
    }

    /// Counts `total` bytes for the body; -32000 (429/503) past the client's or everyone's
    /// share.
    fn reserve(&mut self, total: usize) -> Result<(), RpcError> {
        if total <= FREE_BODY_BYTES {
            return Ok(());
        }
        match &mut self.flight {
            Some(flight) => self.ep.engine.grow_flight(flight, total),
            None => {
                self.flight = Some(self.ep.engine.flight(self.caller, total)?);
                Ok(())
            }
        }
    }
}

/// Reads a body of at most `limit` bytes, within `cfg.limits.body_timeout` and at least at
/// `cfg.limits.min_body_rate` once [`RATE_GRACE`] has passed: a client that sends half a body, or a
/// trickle, gives its slot back within seconds (408). What it has received (or declared in
/// `Content-Length`) counts in `arriving`.
async fn read_body(
    cfg: &HttpConfig,
    body: Body,
    declared: Option<u64>,
    limit: usize,
    arriving: &mut Arriving<'_>,
) -> Result<Bytes, RpcError> {
    use futures_util::{FutureExt as _, StreamExt as _};
    let start = tokio::time::Instant::now();
    let hard = start + cfg.limits.body_timeout;
    let rate = cfg.limits.min_body_rate.max(1);
    // Sized once from the declared length (never beyond the limit), not doubled as it comes;
    // what is set aside counts as received.
    let capacity = usize::try_from(declared.unwrap_or(0))
        .unwrap_or(limit)
        .min(limit);
    arriving.reserve(capacity)?;
    // A body that comes in one chunk (a small POST, read with its head) is that chunk, not
    // a copy; the buffer is made for a second one.
    let mut first: Option<Bytes> = None;
    let mut buf = bytes::BytesMut::new();
    let mut data = body.into_data_stream();
    loop {
        // What has come already is taken without a timer; only a wait has a deadline.
        let next = match data.next().now_or_never() {
            Some(next) => Ok(next),
            None => {
                arriving.waits()?;
                // The time by which one more byte must have come.
                let received = buf.len() + first.as_ref().map_or(0, Bytes::len);
                let owed = Duration::from_secs_f64((received as f64 + 1.0) / rate as f64);
                let due = (start + RATE_GRACE + owed).min(hard);
                tokio::time::timeout_at(due, data.next())
                    .await
                    .map_err(|_| due == hard)
            }
        };
        let received = buf.len() + first.as_ref().map_or(0, Bytes::len);
        match next {
            Ok(Some(Ok(chunk))) => {
                if received + chunk.len() > limit {
                    return Err(admission::too_large(limit));
                }
                arriving.reserve(received + chunk.len())?;
                if received == 0 {
                    first = Some(chunk);
                } else {
                    if let Some(first) = first.take() {
                        buf.reserve(capacity.max(received + chunk.len()));
                        buf.extend_from_slice(&first);
                    }
                    buf.extend_from_slice(&chunk);
                }
            }
            Ok(None) => return Ok(first.unwrap_or_else(|| buf.freeze())),
            Ok(Some(Err(_))) => {
                return Err(slow_body(format!(
                    "the body broke off after {received} bytes"
                )));
            }
            Err(true) => {
                return Err(slow_body(format!(
                    "the body did not arrive within {} s",
                    cfg.limits.body_timeout.as_secs_f64()
                )));
            }
            Err(false) => {
                return Err(slow_body(format!(
                    "the body arrives slower than {rate} bytes per second ({received} bytes in {:.1} s)",
                    start.elapsed().as_secs_f64()
                )));
            }
        }
    }
}

/// The whole HTTP/1.1 response refusing a connection (written before it is closed, nothing of
/// it read): the error's status, `Retry-After: 1`, the JSON-RPC error.
fn refusal(e: &RpcError) -> String {
    let body = jsonrpc::error_bytes(None, e);
    let status = StatusCode::from_u16(e.status()).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
    format!(
        "HTTP/1.1 {} {}\r\ncontent-type: application/json\r\nretry-after: 1\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{}",
        status.as_u16(),
        status.canonical_reason().unwrap_or(""),
        body.len(),
        String::from_utf8_lossy(&body)
    )
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
pub(super) async fn post(State(ep): State<Arc<Endpoint>>, request: Request) -> Response {
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
    // the handler's future several times before polling it; a box moves as a pointer. Made
    // in place: `Box::pin` would copy its 1.9 KB over.
    let resp = boxed_in_place(|| serve_post(ep, request))
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

/// Whether the client accepts an SSE response. A missing `Accept` accepts everything.
pub(crate) fn accepts_sse(headers: &RequestHeaders<'_>) -> bool {
    let mut any = false;
    for value in headers.all(headers.accept, &http::header::ACCEPT) {
        any = true;
        let Ok(text) = value.to_str() else {
            continue;
        };
        // `str::split` by a char finds it with `memchr`; the range is trimmed as ASCII bytes
        // (`str::trim` would look for Unicode whitespace).
        for range in text.split(',') {
            let media = range.split(';').next().unwrap_or_default();
            let media = media.as_bytes().trim_ascii();
            if media.eq_ignore_ascii_case(b"text/event-stream")
                || media == b"*/*"
                || media.eq_ignore_ascii_case(b"text/*")
            {
                return true;
            }
        }
    }
    !any
}

async fn serve_post(ep: Arc<Endpoint>, request: Request) -> Response {
    let (mut parts, body) = request.into_parts();
    let cfg = &ep.http;
    note_peer(cfg, &mut parts);
    let max_body = ep.engine.max_message_bytes();
    // The headers the server reads, in one walk over the map.
    let headers = RequestHeaders::new(&parts.headers);
    if let Err(e) = admission::check_origin(&cfg.hosts, &cfg.origins, &headers) {
        return sse::error(None, &e);
    }
    if let Err(e) = admission::check_content_type(&headers) {
        return sse::error(None, &e);
    }
    let declared = headers
        .content_length
        .str()
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > max_body as u64) {
        return sse::error(None, &admission::too_large(max_body));
    }
    // Admission — the token checked, then the body read — holds a reading slot of the
    // network address before anything else costs (abuse control before authentication: a
    // flood of random bearer tokens holds its address's `max_bodies_per_client`, never more
    // token checks), never a request slot: a client that sends half a body holds its own
    // share of the reading budget, for seconds. Without a token to check, the slot is taken
    // when the body is first waited for: one that came whole with its head holds none.
    #[cfg_attr(not(feature = "auth"), allow(unused_mut))]
    let mut caller = ep.engine.identify(&mut parts.extensions);
    #[cfg_attr(not(feature = "auth"), allow(unused_mut))]
    let mut reading = None;
    // Who is calling, before the body is read: a request without a usable token costs
    // nothing more. A verified token makes the caller its principal.
    #[cfg(feature = "auth")]
    if ep.auth.is_some() {
        // The slot is taken before the token is checked: it bounds the checks an address
        // has running.
        reading = match ep.reading_slot(caller) {
            Ok(slot) => Some(slot),
            Err(e) => return sse::error(None, &e),
        };
        if let Err(resp) =
            auth::authenticate(&ep, &parts.method, headers.map, &mut parts.extensions).await
        {
            return resp;
        }
        caller = ep.engine.identify(&mut parts.extensions);
    }
    // The body's bytes count for the caller while it arrives; once read, the request's
    // slot counts them until its work ends.
    let body = {
        let mut arriving = Arriving {
            ep: &ep,
            caller,
            flight: None,
            reading,
        };
        match read_body(cfg, body, declared, max_body, &mut arriving).await {
            Ok(b) => b,
            Err(e) => return sse::error(None, &e),
        }
    };
    let hints = Hints {
        headers: Some(&headers),
        streams: Some(&|| accepts_sse(&headers)),
        sink: None,
    };
    let reply = ep.connection(parts.extensions, caller).answer(body, hints);
    respond(&ep, reply).await
}

/// The HTTP response of a reply: 202, one JSON body, or an SSE stream (resumable for a
/// handshake session's request), with the session id the reply carries.
async fn respond(ep: &Arc<Endpoint>, reply: Reply) -> Response {
    let Reply {
        answer,
        session_id,
        resumable,
    } = reply;
    let resp = match answer {
        Answering::Accepted => sse::accepted(),
        Answering::Now(answer) => sse::answer(&answer),
        Answering::Stream(frames) => {
            use futures_util::StreamExt as _;
            let body = frames.map(|f| {
                Ok::<_, std::convert::Infallible>(match f {
                    Frame::Message(m) => sse::frame(&m),
                    Frame::KeepAlive => Bytes::from_static(b": keep-alive\n\n"),
                })
            });
            sse::sse_response(Body::from_stream(body))
        }
        Answering::Later(run, messages) => match (resumable, messages) {
            (Some(owner), messages) => session::respond(ep, owner, run, messages).await,
            (None, Some(rx)) => sse::respond(run, rx).await,
            // The request counts until its function ends (or its response is dropped).
            (None, None) => match run.await {
                Some(answer) => sse::answer(&answer),
                None => sse::sse_response(Body::empty()),
            },
        },
    };
    session::with_id(resp, session_id.as_deref())
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
