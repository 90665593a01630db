//! The handshake sessions' streams over Streamable HTTP: a request's response stream, kept
//! resumable while it runs (2025-11-25 SSE polling) and run on when its client hangs up, the
//! standalone GET stream of a session's notifications, resumption with `Last-Event-ID`, and
//! the session id on the wire.

use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use futures_util::{FutureExt as _, StreamExt};
use http::{HeaderMap, HeaderValue};
use tokio::sync::mpsc;

use super::Endpoint;
use super::headers::SESSION_ID;
use super::sse;
use crate::handler::BoxFuture;
use crate::server::front::port::{Answer, Frame, Run, SessionStream, StreamOwner};

/// A response with the session id a reply carries.
pub(crate) fn with_id(mut resp: Response, token: Option<&str>) -> Response {
    if let Some(t) = token.and_then(|t| HeaderValue::from_str(t).ok()) {
        resp.headers_mut().insert(SESSION_ID, t);
    }
    resp
}

/// Answers a session's running request (or batch): JSON when it finishes without sending
/// anything, otherwise an SSE stream. The request runs in its own task, holding its slots: a
/// client that disconnects does not cancel it, before or after its first message (legacy
/// clients cancel with `notifications/cancelled`), and its messages stay resumable. A request
/// whose stream nobody reads for `detached_grace` (the client hung up and did not resume) is
/// cancelled: it would otherwise hold its slot, and the questions it waits on, for nobody.
pub(crate) async fn respond(
    ep: &Arc<Endpoint>,
    session: StreamOwner,
    mut running: Run,
    mut rx: Option<mpsc::Receiver<Bytes>>,
) -> Response {
    // `rx` is `None` for a request that sends nothing before its answer (or a client that
    // takes no stream): it has no messages to wait for.
    // Most functions finish on their first poll (no await that waits): those need no task
    // of their own, and nothing can interrupt them between here and the response.
    let first_poll = std::future::poll_fn(|cx| {
        std::task::Poll::Ready(std::pin::Pin::new(&mut running).poll(cx))
    })
    .await;
    if let std::task::Poll::Ready(out) = first_poll {
        return finished(ep, &session, out, rx.as_mut());
    }
    let running = tokio::spawn(running);
    let abort = running.abort_handle();
    let mut fut: BoxFuture<Option<Answer>> = Box::pin(async move { running.await.ok().flatten() });
    // The response is made by a task of its own, so that a client that hangs up before the
    // first message leaves a stream that can be resumed, or is found unread.
    let (reply, response) = tokio::sync::oneshot::channel();
    let ep = ep.clone();
    let session = session.clone();
    let grace = ep.http.limits.detached_grace;
    tokio::spawn(async move {
        let first = tokio::select! {
            biased;
            Some(msg) = next(&mut rx) => msg,
            out = &mut fut => {
                let _ = reply.send(finished(&ep, &session, out, rx.as_mut()));
                return;
            }
        };
        let stream = open_stream(&ep, &session);
        push(&stream, &first);
        // Dropped with its reader when the client is already gone.
        let _ = reply.send(sse::sse_response(Body::from_stream(stream.reader(0, true))));
        let unread = stream.unread_for(grace).fuse();
        let mut unread = std::pin::pin!(unread);
        loop {
            tokio::select! {
                biased;
                Some(msg) = next(&mut rx) => push(&stream, &msg),
                out = &mut fut => {
                    for msg in queued(rx.as_mut()) {
                        push(&stream, &msg);
                    }
                    if let Some(answer) = out {
                        stream.push_message(&answer.to_bytes());
                    }
                    stream.finish();
                    break;
                }
                () = &mut unread => {
                    tracing::info!(
                        session = %session.sid(),
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
    session: &StreamOwner,
    out: Option<Answer>,
    rx: Option<&mut mpsc::Receiver<Bytes>>,
) -> Response {
    let queued = queued(rx);
    if queued.is_empty() {
        // A session's answer is sent with 200 whatever it holds but an authorization
        // refusal (the connection settled its status).
        return match out {
            Some(answer) => sse::answer(&answer),
            None => sse::sse_response(Body::empty()),
        };
    }
    let stream = open_stream(ep, session);
    for msg in queued {
        push(&stream, &msg);
    }
    if let Some(answer) = out {
        stream.push_message(&answer.to_bytes());
    }
    stream.finish();
    sse::sse_response(Body::from_stream(stream.reader(0, true)))
}

/// The request's next message; never, for a request without a channel.
async fn next(rx: &mut Option<mpsc::Receiver<Bytes>>) -> Option<Bytes> {
    match rx {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

/// What the request queued and nobody took yet.
fn queued(rx: Option<&mut mpsc::Receiver<Bytes>>) -> Vec<Bytes> {
    let mut queued = Vec::new();
    if let Some(rx) = rx {
        while let Ok(msg) = rx.try_recv() {
            queued.push(msg);
        }
    }
    queued
}

fn open_stream(ep: &Endpoint, session: &StreamOwner) -> Arc<super::resume::RespStream> {
    let polling = session.polling();
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

/// GET: the resumption of a dropped response stream (`Last-Event-ID`), or the session's
/// standalone stream of notifications. Both hold the stream slot the connection took.
pub(crate) fn get(ep: &Endpoint, headers: &HeaderMap, stream: SessionStream) -> Response {
    if let Some(last) = headers.get("last-event-id").and_then(|v| v.to_str().ok())
        && let Some((resumed, from)) = ep.streams.resume(&stream.sid, last)
    {
        let slot = stream.slot();
        let frames = resumed.reader(from, false).map(move |f| {
            let _held = &slot;
            f
        });
        return sse::sse_response(Body::from_stream(frames));
    }
    standalone(stream)
}

/// The session's standalone stream: notifications as SSE events, keep-alives as comments.
fn standalone(stream: SessionStream) -> Response {
    let mut first = true;
    let body = stream.events().map(move |frame| {
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tower::ServiceExt as _;

    use super::*;
    use crate::Registry;
    use crate::service::Server;

    fn endpoint() -> Arc<Endpoint> {
        let registry = Registry::from_defs([], [], []).unwrap();
        Server::with_registry(registry).build().unwrap().endpoint
    }

    async fn call(ep: &Arc<Endpoint>, req: http::Request<Body>) -> Response {
        super::super::router(ep.clone()).oneshot(req).await.unwrap()
    }

    fn request(method: &str, sid: Option<&str>, body: &str) -> http::Request<Body> {
        let mut req = http::Request::builder()
            .method(method)
            .uri("/mcp")
            .header("host", "localhost")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(sid) = sid {
            req = req
                .header(SESSION_ID, sid)
                .header("mcp-protocol-version", "2025-11-25");
        }
        req.body(Body::from(body.to_owned())).unwrap()
    }

    async fn open_session(ep: &Arc<Endpoint>) -> String {
        let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}"#;
        let resp = call(ep, request("POST", None, init)).await;
        assert_eq!(resp.status(), 200);
        resp.headers()[SESSION_ID].to_str().unwrap().to_owned()
    }

    /// Opens the session's GET stream and reads its opening comment.
    async fn open_get(ep: &Arc<Endpoint>, sid: &str) -> axum::body::BodyDataStream {
        let resp = call(ep, request("GET", Some(sid), "")).await;
        assert_eq!(resp.status(), 200);
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
        let sid = open_session(&ep).await;
        let mut first = open_get(&ep, &sid).await;
        let mut second = open_get(&ep, &sid).await;
        assert!(
            ends(&mut first).await,
            "the newer stream replaces the older"
        );
        assert!(!ends(&mut second).await);
        let deleted = call(&ep, request("DELETE", Some(&sid), "")).await;
        assert_eq!(deleted.status(), 200);
        assert!(ends(&mut second).await, "DELETE ends it");
        // The ended session is refused from then on.
        let again = call(&ep, request("GET", Some(&sid), "")).await;
        assert_eq!(again.status(), 404);
    }

    #[tokio::test]
    async fn get_streams_end_when_the_server_shuts_down() {
        let ep = endpoint();
        let sid = open_session(&ep).await;
        let mut body = open_get(&ep, &sid).await;
        assert!(!ends(&mut body).await, "the stream stays open");
        ep.engine.shutdown().cancel();
        assert!(ends(&mut body).await, "shutdown ends it");
    }
}
