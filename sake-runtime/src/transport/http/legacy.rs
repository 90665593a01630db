//! The handshake revisions (2025-11-25, 2025-06-18, 2025-03-26) over Streamable HTTP:
//! `initialize`, sessions carried by signed ids, server-to-client requests on a call's
//! stream, the standalone GET stream, resumption, DELETE, and 2025-03-26 batches.

use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use futures_util::StreamExt;
use http::{HeaderMap, HeaderValue};
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;

use super::headers::{self, SESSION_ID};
use super::sse;
use crate::handler::BoxFuture;
use crate::protocol::jsonrpc::{self, Incoming, RequestId, RpcError, code};
use crate::protocol::meta::{Params, RequestMeta, parse_legacy_meta};
use crate::protocol::methods::Method;
use crate::protocol::render::{self, Cache, Shape};
use crate::protocol::types::{ClientCapabilities, Implementation, LoggingLevel};
use crate::protocol::{Era, Revision};
use crate::server::Shared;
use crate::server::context::RequestParts;
use crate::server::dispatch::{Dispatched, raw_str};
use crate::server::input::{InputChannel, LegacyPeer};
use crate::server::notify::Event;
use crate::server::session::{Refused, Session};

/// A response with the session header.
fn with_session(mut resp: Response, token: Option<&str>) -> Response {
    if let Some(t) = token.and_then(|t| HeaderValue::from_str(t).ok()) {
        resp.headers_mut().insert(SESSION_ID, t);
    }
    resp
}

fn legacy_error(id: Option<&RequestId>, err: &RpcError) -> Response {
    sse::error(Era::Legacy, id, err)
}

/// The session a request names: `Ok(None)` without the header, a 404 error when the id is
/// not one this server issued, or has expired or ended.
pub(crate) fn session(shared: &Shared, headers: &HeaderMap) -> Result<Option<Session>, RpcError> {
    let Some(raw) = headers.get(SESSION_ID) else {
        return Ok(None);
    };
    let token = raw.to_str().unwrap_or("").trim();
    match shared.sessions.verify(token) {
        Ok(s) => Ok(Some(s)),
        Err(why) => {
            let reason = match why {
                Refused::Invalid => "is not a session of this server",
                Refused::Expired => "has expired",
                Refused::Ended => "was ended",
            };
            Err(RpcError::new(
                code::SESSION_NOT_FOUND,
                format!("Session not found: the Mcp-Session-Id {reason}; start a new session with `initialize`"),
            )
            .with_status(404))
        }
    }
}

/// 2025-06-18 and later require `MCP-Protocol-Version` equal to the session's revision;
/// 2025-03-26 accepts its absence.
fn check_version_header(rev: Revision, headers: &HeaderMap) -> Result<(), RpcError> {
    let value = headers
        .get(headers::PROTOCOL_VERSION)
        .map(|v| v.to_str().unwrap_or("").trim().to_owned());
    match value {
        None if rev.features().version_header_required => Err(RpcError::invalid_request(format!(
            "Bad Request: missing MCP-Protocol-Version header; this session speaks {rev}"
        ))
        .with_status(400)),
        Some(v) if v != rev.as_str() => Err(RpcError::invalid_request(format!(
            "Bad Request: MCP-Protocol-Version {v:?} is not this session's revision {rev}"
        ))
        .with_status(400)),
        _ => Ok(()),
    }
}

/// `initialize`: negotiates a handshake revision and mints the session id.
pub(crate) fn initialize(shared: &Shared, id: &RequestId, params: &Params<'_>) -> Response {
    match try_initialize(shared, params) {
        Ok((result, token)) => with_session(
            sse::json(200, jsonrpc::result_bytes(id, &result)),
            Some(&token),
        ),
        Err(e) => legacy_error(Some(id), &e),
    }
}

fn try_initialize(shared: &Shared, params: &Params<'_>) -> Result<(Vec<u8>, String), RpcError> {
    let requested = params
        .protocol_version
        .and_then(raw_str)
        .ok_or_else(|| {
            RpcError::invalid_params(
                "Invalid params: `initialize` needs `protocolVersion` (a string such as \"2025-11-25\")",
            )
        })?;
    let revision = Revision::parse(&requested)
        .filter(|r| !r.is_modern())
        .unwrap_or(Revision::LATEST_LEGACY);
    let capabilities: ClientCapabilities = match params.capabilities {
        None => ClientCapabilities::default(),
        Some(raw) => serde_json::from_str(raw.get()).map_err(|e| {
            RpcError::invalid_params(format!(
                "Invalid params: `capabilities` is not a ClientCapabilities object: {e}"
            ))
        })?,
    };
    let client: Option<Implementation> = params
        .client_info
        .and_then(|raw| serde_json::from_str(raw.get()).ok());
    let session = Session::new(revision, capabilities, client.as_ref())
        .ok_or_else(|| RpcError::internal("no randomness available for a session id"))?;
    let token = shared.sessions.mint(&session);
    let mut result = json!({
        "protocolVersion": revision.as_str(),
        "capabilities": shared.capabilities,
        "serverInfo": render::implementation(&shared.config.info, revision),
    });
    if let Some(i) = &shared.config.instructions {
        result["instructions"] = Value::String(i.clone());
    }
    tracing::debug!(revision = %revision, requested = %requested, "legacy session opened");
    Ok((
        render::result(revision, &shared.env, Shape::Plain, Cache::None, &result),
        token,
    ))
}

/// What starting one request of a session gave.
enum Started {
    /// Answered at once, with the response message (or none, for a cancelled request).
    Done(Option<Vec<u8>>),
    /// Running.
    Running(BoxFuture<Option<Vec<u8>>>),
}

/// Serves a POST inside a session: one request, notification or response.
pub(crate) async fn serve(
    shared: Arc<Shared>,
    session: Session,
    headers: &HeaderMap,
    extensions: http::Extensions,
    message: Incoming<'_>,
) -> Response {
    if let Err(e) = check_version_header(session.revision, headers) {
        return legacy_error(message.request_id(), &e);
    }
    let refreshed = shared
        .sessions
        .needs_refresh(&session)
        .then(|| shared.sessions.mint(&session));
    match message {
        Incoming::Notification { method, params } => {
            notification(&shared, &session, &method, params);
            with_session(sse::accepted(), refreshed.as_deref())
        }
        Incoming::Response { id, outcome } => {
            response(&shared, &session, &id, outcome);
            with_session(sse::accepted(), refreshed.as_deref())
        }
        Incoming::Request { id, method, params } => {
            let (tx, rx) = mpsc::channel::<Bytes>(shared.config.stream_buffer);
            let (started, token) = start(&shared, &session, extensions, id, &method, params, tx);
            let token = token.or(refreshed);
            respond(&shared, &session, started, rx, token).await
        }
    }
}

fn notification(shared: &Shared, session: &Session, method: &str, params: Option<&RawValue>) {
    if method == "notifications/cancelled"
        && let Ok(p) = Params::parse(params)
        && let Some(raw) = p.request_id
        && let Ok(id) = serde_json::from_str::<RequestId>(raw.get())
    {
        let cancelled = shared.inflight.cancel(&session.sid, &id);
        tracing::debug!(request = %id, cancelled, "client cancelled a request");
    }
    // `notifications/initialized`, `roots/list_changed`, progress: nothing to do.
}

fn response(
    shared: &Shared,
    session: &Session,
    id: &RequestId,
    outcome: Result<&RawValue, &RawValue>,
) {
    let outcome = match outcome {
        Ok(result) => Ok(serde_json::from_str::<Value>(result.get()).unwrap_or(Value::Null)),
        Err(error) => {
            let e: Value = serde_json::from_str(error.get()).unwrap_or(Value::Null);
            Err((
                e.get("code")
                    .and_then(Value::as_i64)
                    .unwrap_or(i64::from(code::INTERNAL_ERROR)),
                e.get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
            ))
        }
    };
    if !shared.pending.resolve(&session.sid, id, outcome) {
        tracing::debug!(request = %id, "a response for no waiting request was ignored");
    }
}

/// Starts one request of a session. Returns the start and, when the session changed
/// (`logging/setLevel`), its new token.
fn start(
    shared: &Arc<Shared>,
    session: &Session,
    extensions: http::Extensions,
    id: RequestId,
    method_name: &str,
    raw_params: Option<&RawValue>,
    sink: mpsc::Sender<Bytes>,
) -> (Started, Option<String>) {
    let done = |out: Result<Bytes, RpcError>| -> Started {
        Started::Done(Some(match out {
            Ok(b) => jsonrpc::result_bytes(&id, &b),
            Err(e) => jsonrpc::error_bytes(Some(&id), &e),
        }))
    };
    let rev = session.revision;
    let params = match Params::parse(raw_params) {
        Ok(p) => p,
        Err(e) => return (done(Err(e)), None),
    };
    let Some(method) =
        Method::parse_in(method_name, Era::Legacy).filter(|m| shared.offers(m.needs()))
    else {
        return (done(Err(RpcError::method_not_found(method_name))), None);
    };
    let empty = || {
        Ok(Bytes::from(render::result(
            rev,
            &shared.env,
            Shape::Plain,
            Cache::None,
            &json!({}),
        )))
    };
    match method {
        Method::Initialize => (
            done(Err(RpcError::invalid_request(
                "`initialize` opens a session: send it without Mcp-Session-Id (and never in a batch)",
            ))),
            None,
        ),
        Method::Ping => (done(empty()), None),
        Method::SetLevel => {
            let level = params
                .level
                .and_then(raw_str)
                .and_then(|l| LoggingLevel::parse(&l));
            match level {
                None => (
                    done(Err(RpcError::invalid_params(
                        "Invalid params: `level` must be one of debug, info, notice, warning, error, critical, alert, emergency",
                    ))),
                    None,
                ),
                Some(level) => {
                    // The re-minted id carries the level to every replica; clients that keep
                    // the id of `initialize` (the TypeScript SDK, rmcp) find it in this
                    // process.
                    shared.hub.set_log_level(&session.sid, level);
                    let mut s = session.clone();
                    s.log_level = Some(level);
                    (done(empty()), Some(shared.sessions.mint(&s)))
                }
            }
        }
        Method::ResourcesSubscribe | Method::ResourcesUnsubscribe => {
            let Some(uri) = params.uri.and_then(raw_str) else {
                return (
                    done(Err(RpcError::invalid_params(
                        "Invalid params: missing `uri`",
                    ))),
                    None,
                );
            };
            if method == Method::ResourcesUnsubscribe {
                shared.hub.unsubscribe(&session.sid, &uri);
            } else if !shared.hub.subscribe(&session.sid, &uri) {
                return (
                    done(Err(RpcError::internal(
                        "Too many sessions hold resource subscriptions on this server; try again later",
                    ))),
                    None,
                );
            }
            (done(empty()), None)
        }
        _ => {
            let (progress_token, raw_meta) = match parse_legacy_meta(params.meta) {
                Ok(m) => m,
                Err(e) => return (done(Err(e)), None),
            };
            let cancel = CancellationToken::new();
            let guard = shared.inflight.register(&session.sid, &id, cancel.clone());
            let parts = RequestParts {
                revision: rev,
                meta: RequestMeta {
                    client_capabilities: session.capabilities.clone(),
                    client_info: session.client_info(),
                    log_level: session
                        .log_level
                        .or_else(|| shared.hub.log_level(&session.sid)),
                    progress_token,
                    raw: raw_meta,
                },
                sink: Some(sink),
                extensions,
                input: InputChannel::Legacy(LegacyPeer {
                    sid: session.sid.clone(),
                    pending: shared.pending.clone(),
                    timeout: shared.config.input_timeout,
                }),
                notifier: Some(shared.notifier.clone()),
                cancel: Some(cancel.clone()),
            };
            match shared.dispatch(parts, method, &params) {
                Dispatched::Ready(out) => (done(out), None),
                Dispatched::Pending(fut) => (
                    Started::Running(Box::pin(async move {
                        let _guard = guard;
                        tokio::select! {
                            out = fut => Some(match out {
                                Ok(b) => jsonrpc::result_bytes(&id, &b),
                                Err(e) => jsonrpc::error_bytes(Some(&id), &e),
                            }),
                            // Cancelled by the client: no response is sent for it.
                            () = cancel.cancelled() => None,
                        }
                    })),
                    None,
                ),
            }
        }
    }
}

/// Answers a started request (or batch): JSON when it finishes without sending anything,
/// otherwise an SSE stream that outlives a disconnect (legacy clients cancel explicitly).
async fn respond(
    shared: &Arc<Shared>,
    session: &Session,
    started: Started,
    mut rx: mpsc::Receiver<Bytes>,
    token: Option<String>,
) -> Response {
    let mut fut = match started {
        Started::Done(Some(body)) => return with_session(sse::json(200, body), token.as_deref()),
        Started::Done(None) => {
            return with_session(sse::sse_response(Body::empty()), token.as_deref());
        }
        Started::Running(fut) => fut,
    };
    let first = tokio::select! {
        biased;
        Some(msg) = rx.recv() => msg,
        out = &mut fut => {
            let mut queued = Vec::new();
            while let Ok(msg) = rx.try_recv() {
                queued.push(msg);
            }
            if queued.is_empty() {
                return with_session(
                    match out {
                        Some(body) => sse::json(200, body),
                        None => sse::sse_response(Body::empty()),
                    },
                    token.as_deref(),
                );
            }
            let stream = open_stream(shared, session);
            for msg in queued {
                push(&stream, &msg);
            }
            if let Some(body) = out {
                stream.push_message(&body);
            }
            stream.finish();
            return with_session(sse::sse_response(Body::from_stream(stream.reader(0, true))), token.as_deref());
        }
    };
    let stream = open_stream(shared, session);
    push(&stream, &first);
    let writer = stream.clone();
    // The request goes on even if the client disconnects; its messages stay resumable.
    tokio::spawn(async move {
        loop {
            tokio::select! {
                biased;
                Some(msg) = rx.recv() => push(&writer, &msg),
                out = &mut fut => {
                    while let Ok(msg) = rx.try_recv() {
                        push(&writer, &msg);
                    }
                    if let Some(body) = out {
                        writer.push_message(&body);
                    }
                    writer.finish();
                    break;
                }
            }
        }
    });
    with_session(
        sse::sse_response(Body::from_stream(stream.reader(0, true))),
        token.as_deref(),
    )
}

fn open_stream(shared: &Shared, session: &Session) -> Arc<super::resume::RespStream> {
    let polling = session.revision.features().sse_polling;
    let stream = shared.streams.open(&session.sid, polling);
    if polling {
        stream.push_priming(shared.config.sse_retry);
    }
    stream
}

/// An empty message is `Context::close_stream`'s marker.
fn push(stream: &super::resume::RespStream, msg: &[u8]) {
    if msg.is_empty() {
        stream.push_close();
    } else {
        stream.push_message(msg);
    }
}

/// A 2025-03-26 batch: its requests run concurrently; the answer is one array.
pub(crate) async fn batch(
    shared: Arc<Shared>,
    session: Session,
    headers: &HeaderMap,
    extensions: http::Extensions,
    body: &[u8],
) -> Response {
    if let Err(e) = check_version_header(session.revision, headers) {
        return legacy_error(None, &e);
    }
    if !session.revision.features().batches {
        return legacy_error(
            None,
            &RpcError::invalid_request(format!(
                "Bad Request: JSON-RPC batches were removed after 2025-03-26; this session speaks {}",
                session.revision
            ))
            .with_status(400),
        );
    }
    let items: Vec<&RawValue> = match serde_json::from_slice(body) {
        Ok(items) => items,
        Err(e) => return legacy_error(None, &RpcError::parse_error(e)),
    };
    if items.is_empty() {
        return legacy_error(
            None,
            &RpcError::invalid_request("an empty batch").with_status(400),
        );
    }
    if items.len() > shared.config.max_batch {
        return legacy_error(
            None,
            &RpcError::invalid_request(format!(
                "Bad Request: a batch of {} messages exceeds this server's limit of {}; split it",
                items.len(),
                shared.config.max_batch
            ))
            .with_status(400),
        );
    }
    let (tx, rx) = mpsc::channel::<Bytes>(shared.config.stream_buffer);
    let mut runs: Vec<BoxFuture<Option<Vec<u8>>>> = Vec::new();
    let mut token = None;
    for raw in items {
        match jsonrpc::decode_raw(raw) {
            Err(e) => {
                let body = jsonrpc::error_bytes(e.id.as_ref(), &e.error);
                runs.push(Box::pin(std::future::ready(Some(body))));
            }
            Ok(Incoming::Notification { method, params }) => {
                notification(&shared, &session, &method, params)
            }
            Ok(Incoming::Response { id, outcome }) => response(&shared, &session, &id, outcome),
            Ok(Incoming::Request { id, method, params }) => {
                let (started, t) = start(
                    &shared,
                    &session,
                    extensions.clone(),
                    id,
                    &method,
                    params,
                    tx.clone(),
                );
                token = t.or(token);
                runs.push(match started {
                    Started::Done(body) => Box::pin(std::future::ready(body)),
                    Started::Running(fut) => fut,
                });
            }
        }
    }
    drop(tx);
    if runs.is_empty() {
        return with_session(sse::accepted(), token.as_deref());
    }
    let all: BoxFuture<Option<Vec<u8>>> = Box::pin(async move {
        let bodies: Vec<Vec<u8>> = futures_util::future::join_all(runs)
            .await
            .into_iter()
            .flatten()
            .collect();
        let mut out =
            Vec::with_capacity(bodies.iter().map(Vec::len).sum::<usize>() + bodies.len() + 2);
        out.push(b'[');
        for (i, b) in bodies.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(b);
        }
        out.push(b']');
        Some(out)
    });
    respond(&shared, &session, Started::Running(all), rx, token).await
}

/// GET: a session's standalone stream of notifications, or the resumption of a dropped
/// response stream (`Last-Event-ID`). Without a session: 405.
pub(crate) async fn get(shared: Arc<Shared>, headers: &HeaderMap) -> Option<Response> {
    let session = match session(&shared, headers) {
        Ok(Some(s)) => s,
        Ok(None) => return None,
        Err(e) => return Some(legacy_error(None, &e)),
    };
    if let Some(v) = headers.get(headers::PROTOCOL_VERSION)
        && v.to_str().map(str::trim).ok() != Some(session.revision.as_str())
    {
        return Some(legacy_error(
            None,
            &RpcError::invalid_request(
                "Bad Request: MCP-Protocol-Version is not this session's revision",
            )
            .with_status(400),
        ));
    }
    if let Some(last) = headers.get("last-event-id").and_then(|v| v.to_str().ok())
        && let Some((stream, from)) = shared.streams.resume(&session.sid, last)
    {
        return Some(sse::sse_response(Body::from_stream(
            stream.reader(from, false),
        )));
    }
    Some(standalone(shared, session))
}

/// Releases the session's standalone stream when the stream ends.
struct StreamClaim {
    shared: Arc<Shared>,
    sid: String,
    generation: u64,
    /// Fires when a newer GET stream of the session replaces this one, or DELETE ends it.
    ended: CancellationToken,
}

impl Drop for StreamClaim {
    fn drop(&mut self) {
        self.shared
            .hub
            .release_get_stream(&self.sid, self.generation);
    }
}

fn standalone(shared: Arc<Shared>, session: Session) -> Response {
    let (generation, ended) = shared.hub.claim_get_stream(&session.sid);
    let events = shared.hub.subscribe_events();
    let mut tick = tokio::time::interval(shared.config.keep_alive);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let claim = StreamClaim {
        shared,
        sid: session.sid,
        generation,
        ended,
    };
    let body = futures_util::stream::unfold(
        (events, tick, claim, true),
        |(mut events, mut tick, claim, first)| async move {
            if first {
                // Flush the headers to the client at once.
                tick.tick().await;
                return Some((
                    Ok::<_, std::convert::Infallible>(Bytes::from_static(b": stream open\n\n")),
                    (events, tick, claim, false),
                ));
            }
            loop {
                tokio::select! {
                    biased;
                    // Replaced by a newer stream, or the session was deleted.
                    () = claim.ended.cancelled() => return None,
                    ev = events.recv() => match ev {
                        Ok(Event::ResourceUpdated(uri)) if !claim.shared.hub.is_subscribed(&claim.sid, &uri) => continue,
                        Ok(ev) => {
                            let params = match &ev {
                                Event::ResourceUpdated(uri) => json!({ "uri": &**uri }),
                                _ => json!({}),
                            };
                            let msg = jsonrpc::notification_bytes(ev.method(), &params);
                            return Some((Ok(sse::frame(&msg)), (events, tick, claim, false)));
                        }
                        // Too slow to keep up: end the stream; the client reconnects.
                        Err(broadcast::error::RecvError::Lagged(_) | broadcast::error::RecvError::Closed) => return None,
                    },
                    // The server is shutting down: an open stream would hold it up forever.
                    () = claim.shared.shutdown.cancelled() => return None,
                    _ = tick.tick() => {
                        return Some((Ok(Bytes::from_static(b": keep-alive\n\n")), (events, tick, claim, false)));
                    }
                }
            }
        },
    );
    sse::sse_response(Body::from_stream(body.boxed()))
}

/// DELETE: ends a session. Without a session: 405.
pub(crate) fn delete(shared: &Shared, headers: &HeaderMap) -> Option<Response> {
    let session = match session(shared, headers) {
        Ok(Some(s)) => s,
        Ok(None) => return None,
        Err(e) => return Some(legacy_error(None, &e)),
    };
    shared.sessions.end(&session);
    shared.hub.end_session(&session.sid);
    shared.pending.end_session(&session.sid);
    shared.inflight.cancel_scope(&session.sid);
    tracing::debug!("legacy session ended by DELETE");
    let mut resp = Response::new(Body::empty());
    *resp.status_mut() = http::StatusCode::OK;
    Some(resp)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::Registry;
    use crate::protocol::types::ClientCapabilities;
    use crate::server::Server;

    fn shared() -> Arc<Shared> {
        let registry = Registry::from_defs([], [], []).unwrap();
        Server::with_registry(registry).build().unwrap().shared
    }

    fn session_headers(shared: &Shared) -> (Session, HeaderMap) {
        let session =
            Session::new(Revision::V2025_11_25, ClientCapabilities::default(), None).unwrap();
        let mut h = HeaderMap::new();
        let token = shared.sessions.mint(&session);
        h.insert(SESSION_ID, HeaderValue::from_str(&token).unwrap());
        (session, h)
    }

    /// Opens the session's GET stream and reads its opening comment.
    async fn open_get(shared: &Arc<Shared>, headers: &HeaderMap) -> axum::body::BodyDataStream {
        let resp = get(shared.clone(), headers).await.unwrap();
        let mut body = resp.into_body().into_data_stream();
        let first = body.next().await.unwrap().unwrap();
        assert_eq!(&first[..], b": stream open\n\n");
        body
    }

    /// Whether the body ends within a short while (rather than staying open).
    async fn ends(body: &mut axum::body::BodyDataStream) -> bool {
        matches!(
            tokio::time::timeout(Duration::from_millis(300), body.next()).await,
            Ok(None)
        )
    }

    #[tokio::test]
    async fn get_streams_end_when_replaced_or_deleted() {
        let shared = shared();
        let (_, headers) = session_headers(&shared);
        let mut first = open_get(&shared, &headers).await;
        let mut second = open_get(&shared, &headers).await;
        assert!(
            ends(&mut first).await,
            "the newer stream replaces the older"
        );
        assert!(!ends(&mut second).await);
        assert!(delete(&shared, &headers).is_some());
        assert!(ends(&mut second).await, "DELETE ends it");
    }

    #[tokio::test]
    async fn get_streams_end_when_the_server_shuts_down() {
        let shared = shared();
        let (_, headers) = session_headers(&shared);
        let mut body = open_get(&shared, &headers).await;
        assert!(!ends(&mut body).await, "the stream stays open");
        shared.shutdown.cancel();
        assert!(ends(&mut body).await, "shutdown ends it");
    }
}
