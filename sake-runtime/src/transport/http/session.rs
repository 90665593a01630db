//! The handshake revisions (2025-11-25, 2025-06-18, 2025-03-26) over Streamable HTTP:
//! `initialize`, sessions carried by signed ids, server-to-client requests on a call's
//! stream, the standalone GET stream, resumption, DELETE, and 2025-03-26 batches.

use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use futures_util::{FutureExt as _, StreamExt};
use http::{HeaderMap, HeaderValue};
use tokio::sync::mpsc;

use super::Endpoint;
use super::headers::{self, SESSION_ID};
use super::sse;
use crate::handler::BoxFuture;
use crate::protocol::jsonrpc::{self, Incoming, RequestId, RpcError, code};
use crate::protocol::meta::Params;
use crate::protocol::{Era, Revision};
use crate::server::Shared;
use crate::server::front::legacy::Started;
use crate::server::front::{Frame, Inbound, OnLag, Slot};
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
pub(crate) fn session(
    shared: &Shared,
    headers: &HeaderMap,
    extensions: &http::Extensions,
) -> Result<Option<Session>, RpcError> {
    let Some(raw) = headers.get(headers::name::SESSION_ID) else {
        return Ok(None);
    };
    let token = raw.to_str().unwrap_or("").trim();
    let verified = shared.sessions.verify(token).and_then(|s| {
        // A session opened by one caller is nobody else's: not another caller's, and not an
        // anonymous caller's either (nor the reverse).
        if !shared.same_caller(s.principal.as_deref(), extensions) {
            Err(Refused::Foreign)
        } else {
            Ok(s)
        }
    });
    match verified {
        Ok(s) => Ok(Some(s)),
        Err(why) => {
            let reason = match why {
                Refused::Invalid => "is not a session of this server",
                Refused::Expired => "has expired",
                Refused::Ended => "was ended",
                Refused::Foreign => "belongs to another caller",
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
        .get(headers::name::PROTOCOL_VERSION)
        .map(|v| v.to_str().unwrap_or("").trim());
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
pub(crate) fn initialize(
    shared: &Shared,
    id: &RequestId,
    params: &Params<'_>,
    extensions: &http::Extensions,
) -> Response {
    match shared.initialize(
        id,
        params,
        shared.principal_of(extensions),
        shared.owner_of(extensions),
        None,
        "tcp",
    ) {
        Ok((result, session)) => with_session(
            sse::json(200, jsonrpc::result_bytes(id, &result)),
            Some(&shared.sessions.mint(&session)),
        ),
        Err(e) => legacy_error(Some(id), &e),
    }
}

/// Serves a POST inside a session: one request (its params read when it was classified),
/// notification or response.
pub(crate) async fn serve(
    ep: &Arc<Endpoint>,
    session: Session,
    headers: &HeaderMap,
    extensions: http::Extensions,
    message: Incoming<'_>,
    params: Option<Params<'_>>,
    permit: Option<Slot>,
) -> Response {
    let shared = &ep.shared;
    if let Err(e) = check_version_header(session.revision, headers) {
        return legacy_error(message.request_id(), &e);
    }
    let refreshed = shared
        .sessions
        .needs_refresh(&session)
        .then(|| shared.sessions.mint(&session));
    match message {
        Incoming::Notification { method, params } => {
            shared.session_notification(&session.sid, &method, params);
            with_session(sse::accepted(), refreshed.as_deref())
        }
        Incoming::Response { id, outcome } => {
            shared.session_answer(&session.sid, &id, outcome);
            with_session(sse::accepted(), refreshed.as_deref())
        }
        Incoming::Request {
            id,
            method,
            params: raw,
        } => {
            let span = tracing::Span::current();
            span.record("method", &*method);
            span.record("revision", session.revision.as_str());
            let (tx, rx) = mpsc::channel::<Bytes>(shared.config.stream_buffer);
            // A client that does not accept SSE gets no progress, logs or questions.
            let inbound = Inbound {
                sink: super::accepts_sse(headers).then_some(tx),
                extensions,
                transport: Some("tcp"),
                ..Inbound::default()
            };
            let params = params.map_or_else(|| Params::parse(raw), Ok);
            let started =
                shared.session_request(&session, &session.sid, id, &method, params, inbound);
            let (started, token) = match started {
                Started::Done(body, Some(changed)) => (
                    Started::Done(body, None),
                    Some(shared.sessions.mint(&changed)),
                ),
                other => (other, refreshed),
            };
            respond(ep, &session, started, rx, token, permit).await
        }
    }
}

/// Answers a started request (or batch): JSON when it finishes without sending anything,
/// otherwise an SSE stream. The request runs in its own task, holding `permit`: a client
/// that disconnects does not cancel it, before or after its first message (legacy clients
/// cancel with `notifications/cancelled`), and its messages stay resumable. A request whose
/// stream nobody reads for `detached_grace` (the client hung up and did not resume) is
/// cancelled: it would otherwise hold its slot, and the questions it waits on, for nobody.
async fn respond(
    ep: &Arc<Endpoint>,
    session: &Session,
    started: Started,
    mut rx: mpsc::Receiver<Bytes>,
    token: Option<String>,
    permit: Option<Slot>,
) -> Response {
    let mut running = match started {
        Started::Done(body, _) => return with_session(sse::json(200, body), token.as_deref()),
        Started::Running(fut) => fut,
    };
    // Most functions finish on their first poll (no await that waits): those need no task
    // of their own, and nothing can interrupt them between here and the response.
    let first_poll =
        std::future::poll_fn(|cx| std::task::Poll::Ready(running.as_mut().poll(cx))).await;
    if let std::task::Poll::Ready(out) = first_poll {
        drop(permit);
        return finished(ep, session, out, &mut rx, token.as_deref());
    }
    let running = tokio::spawn(async move {
        let _permit = permit;
        running.await
    });
    let abort = running.abort_handle();
    let mut fut: BoxFuture<Option<Vec<u8>>> = Box::pin(async move { running.await.ok().flatten() });
    // The response is made by a task of its own, so that a client that hangs up before the
    // first message leaves a stream that can be resumed, or is found unread.
    let (reply, response) = tokio::sync::oneshot::channel();
    let ep = ep.clone();
    let session = session.clone();
    let grace = ep.shared.config.detached_grace;
    tokio::spawn(async move {
        let first = tokio::select! {
            biased;
            Some(msg) = rx.recv() => msg,
            out = &mut fut => {
                let _ = reply.send(finished(&ep, &session, out, &mut rx, token.as_deref()));
                return;
            }
        };
        let stream = open_stream(&ep, &session);
        push(&stream, &first);
        // Dropped with its reader when the client is already gone.
        let _ = reply.send(with_session(
            sse::sse_response(Body::from_stream(stream.reader(0, true))),
            token.as_deref(),
        ));
        let unread = stream.unread_for(grace).fuse();
        let mut unread = std::pin::pin!(unread);
        loop {
            tokio::select! {
                biased;
                Some(msg) = rx.recv() => push(&stream, &msg),
                out = &mut fut => {
                    while let Ok(msg) = rx.try_recv() {
                        push(&stream, &msg);
                    }
                    if let Some(body) = out {
                        stream.push_message(&body);
                    }
                    stream.finish();
                    break;
                }
                () = &mut unread => {
                    tracing::info!(
                        session = %session.sid,
                        "a request's stream went unread for {} s (the client hung up and did not resume): cancelled",
                        grace.as_secs_f64()
                    );
                    abort.abort();
                }
            }
        }
    });
    response
        .await
        .unwrap_or_else(|_| sse::sse_response(Body::empty()))
}

/// The response of a request that ended before its first message was sent: JSON when it
/// sent nothing, otherwise an SSE stream of what it queued, then its result. `None` is a
/// cancelled request: an empty stream, no response.
fn finished(
    ep: &Endpoint,
    session: &Session,
    out: Option<Vec<u8>>,
    rx: &mut mpsc::Receiver<Bytes>,
    token: Option<&str>,
) -> Response {
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
            token,
        );
    }
    let stream = open_stream(ep, session);
    for msg in queued {
        push(&stream, &msg);
    }
    if let Some(body) = out {
        stream.push_message(&body);
    }
    stream.finish();
    with_session(
        sse::sse_response(Body::from_stream(stream.reader(0, true))),
        token,
    )
}

fn open_stream(ep: &Endpoint, session: &Session) -> Arc<super::resume::RespStream> {
    let polling = session.revision.features().sse_polling;
    let stream = ep.streams.open(session, polling);
    if polling {
        stream.push_priming(ep.http.sse_retry);
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
    ep: &Arc<Endpoint>,
    session: Session,
    headers: &HeaderMap,
    extensions: http::Extensions,
    body: &[u8],
    caller: crate::server::quota::Key,
) -> Response {
    let shared = &ep.shared;
    if let Err(e) = check_version_header(session.revision, headers) {
        return legacy_error(None, &e);
    }
    let (tx, rx) = mpsc::channel::<Bytes>(shared.config.stream_buffer);
    let inbound = Inbound {
        sink: Some(tx),
        extensions,
        transport: Some("tcp"),
        ..Inbound::default()
    };
    let batch = match shared.batch(&session, body, &session.sid, caller, inbound) {
        Ok(b) => b,
        Err(e) => return legacy_error(None, &e),
    };
    let token = batch.changed.map(|s| shared.sessions.mint(&s));
    match batch.answer {
        None => with_session(sse::accepted(), token.as_deref()),
        // The batch's answer holds its request slots.
        Some(all) => respond(ep, &session, Started::Running(all), rx, token, None).await,
    }
}

/// GET: a session's standalone stream of notifications, or the resumption of a dropped
/// response stream (`Last-Event-ID`). Without a session: 405.
pub(crate) async fn get(
    ep: &Arc<Endpoint>,
    headers: &HeaderMap,
    extensions: &http::Extensions,
) -> Option<Response> {
    let shared = &ep.shared;
    let session = match session(shared, headers, extensions) {
        Ok(Some(s)) => s,
        Ok(None) => return None,
        Err(e) => return Some(legacy_error(None, &e)),
    };
    if let Some(v) = headers.get(headers::name::PROTOCOL_VERSION)
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
    // A resumed stream and the standalone stream alike count against `max_streams`.
    let permit = match shared.stream_slot(shared.caller_key(extensions)) {
        Ok(p) => p,
        Err(e) => return Some(sse::error(Era::Modern, None, &e)),
    };
    if let Some(last) = headers.get("last-event-id").and_then(|v| v.to_str().ok())
        && let Some((stream, from)) = ep.streams.resume(&session.sid, last)
    {
        let frames = stream.reader(from, false).map(move |f| {
            let _held = &permit;
            f
        });
        return Some(sse::sse_response(Body::from_stream(frames)));
    }
    Some(standalone(shared.clone(), session, permit))
}

/// The session's standalone stream: notifications as SSE events, keep-alives as comments.
fn standalone(shared: Arc<Shared>, session: Session, permit: Slot) -> Response {
    let mut first = true;
    let body = shared
        .session_events(&session.sid, OnLag::End)
        .map(move |frame| {
            let _held = &permit;
            Ok::<_, std::convert::Infallible>(match frame {
                // Sent at once: the client sees the stream open.
                Frame::KeepAlive if std::mem::take(&mut first) => {
                    Bytes::from_static(b": stream open\n\n")
                }
                Frame::KeepAlive => Bytes::from_static(b": keep-alive\n\n"),
                Frame::Message(m) => sse::frame(&m),
            })
        });
    sse::sse_response(Body::from_stream(body.boxed()))
}

/// DELETE: ends a session. Without a session: 405.
pub(crate) fn delete(
    shared: &Shared,
    headers: &HeaderMap,
    extensions: &http::Extensions,
) -> Option<Response> {
    let session = match session(shared, headers, extensions) {
        Ok(Some(s)) => s,
        Ok(None) => return None,
        Err(e) => return Some(legacy_error(None, &e)),
    };
    shared.end_session(&session);
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
    use crate::service::Server;

    fn endpoint() -> Arc<Endpoint> {
        let registry = Registry::from_defs([], [], []).unwrap();
        Server::with_registry(registry).build().unwrap().endpoint
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
    async fn open_get(ep: &Arc<Endpoint>, headers: &HeaderMap) -> axum::body::BodyDataStream {
        let resp = get(ep, headers, &http::Extensions::new()).await.unwrap();
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
        let ep = endpoint();
        let shared = &ep.shared;
        let (_, headers) = session_headers(shared);
        let mut first = open_get(&ep, &headers).await;
        let mut second = open_get(&ep, &headers).await;
        assert!(
            ends(&mut first).await,
            "the newer stream replaces the older"
        );
        assert!(!ends(&mut second).await);
        assert!(delete(shared, &headers, &http::Extensions::new()).is_some());
        assert!(ends(&mut second).await, "DELETE ends it");
    }

    #[tokio::test]
    async fn get_streams_end_when_the_server_shuts_down() {
        let ep = endpoint();
        let shared = &ep.shared;
        let (_, headers) = session_headers(shared);
        let mut body = open_get(&ep, &headers).await;
        assert!(!ends(&mut body).await, "the stream stays open");
        shared.shutdown.cancel();
        assert!(ends(&mut body).await, "shutdown ends it");
    }
}
