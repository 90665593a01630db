//! Answering a request: one JSON body, or an SSE stream when the request produced messages
//! (progress, logs) before its result.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use axum::response::Response;
use bytes::{BufMut, Bytes, BytesMut};
use futures_util::Stream;
use http::header::{CACHE_CONTROL, CONTENT_TYPE};
use http::{HeaderValue, StatusCode};
use tokio::sync::mpsc;

use crate::protocol::jsonrpc::{self, RequestId, RpcError};
use crate::server::front::port::{Answer, Run};

/// `application/json` with a status.
pub(crate) fn json(status: u16, body: Vec<u8>) -> Response {
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    resp
}

/// An error as a response, with its status (the connection settles it for the request's era;
/// the transport's own refusals carry theirs).
pub(crate) fn error(id: Option<&RequestId>, err: &RpcError) -> Response {
    tracing::Span::current().record("error", err.code);
    let status = err.status();
    let mut resp = json(status, jsonrpc::error_bytes(id, err));
    // A refusal for load (the server's limit, or the client's share of it) says when to
    // come back.
    if status == 429 || status == 503 {
        let wait = err.retry_after().unwrap_or(1);
        resp.headers_mut()
            .insert(http::header::RETRY_AFTER, HeaderValue::from(wait));
    }
    if let Some(challenge) = err.challenge().and_then(|c| HeaderValue::from_str(c).ok()) {
        resp.headers_mut()
            .insert(http::header::WWW_AUTHENTICATE, challenge);
    }
    resp
}

/// The JSON response of an answer.
pub(crate) fn answer(answer: &Answer) -> Response {
    match answer {
        Answer::One(id, Err(e)) => error(id.as_ref(), e),
        _ => json(200, answer.to_bytes()),
    }
}

/// `202 Accepted` with no body: a notification or a response was taken.
pub(crate) fn accepted() -> Response {
    let mut resp = Response::new(Body::empty());
    *resp.status_mut() = StatusCode::ACCEPTED;
    resp
}

/// Headers of every SSE response.
pub(crate) fn sse_response(body: Body) -> Response {
    let mut resp = Response::new(body);
    let h = resp.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    resp
}

/// One SSE event carrying a JSON-RPC message.
pub(crate) fn frame(message: &[u8]) -> Bytes {
    let mut b = BytesMut::with_capacity(message.len() + 8);
    b.put_slice(b"data: ");
    b.put_slice(message);
    b.put_slice(b"\n\n");
    b.freeze()
}

/// Runs a request that may stream: answers JSON if it finishes before sending anything,
/// otherwise switches to SSE for the messages and then the answer.
///
/// Dropping the response (the client went away) drops the request's future: on 2026-07-28 a
/// closed stream is the cancellation signal.
pub(crate) async fn respond(mut run: Run, mut rx: mpsc::Receiver<Bytes>) -> Response {
    let first = tokio::select! {
        biased;
        Some(msg) = rx.recv() => msg,
        out = &mut run => {
            let mut queued = VecDeque::new();
            while let Ok(msg) = rx.try_recv() {
                queued.push_back(frame(&msg));
            }
            let Some(out) = out else {
                return sse_response(Body::from_stream(Frames { queued, run: None, rx: None }));
            };
            if queued.is_empty() {
                return answer(&out);
            }
            queued.push_back(frame(&out.to_bytes()));
            return sse_response(Body::from_stream(Frames { queued, run: None, rx: None }));
        }
    };
    let mut queued = VecDeque::new();
    queued.push_back(frame(&first));
    sse_response(Body::from_stream(Frames {
        queued,
        run: Some(run),
        rx: Some(rx),
    }))
}

/// The SSE body: queued frames, then whatever the request sends, then its answer.
struct Frames {
    queued: VecDeque<Bytes>,
    run: Option<Run>,
    rx: Option<mpsc::Receiver<Bytes>>,
}

impl Stream for Frames {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if let Some(f) = this.queued.pop_front() {
            return Poll::Ready(Some(Ok(f)));
        }
        let Some(run) = this.run.as_mut() else {
            return Poll::Ready(None);
        };
        if let Some(rx) = this.rx.as_mut()
            && let Poll::Ready(Some(msg)) = rx.poll_recv(cx)
        {
            return Poll::Ready(Some(Ok(frame(&msg))));
        }
        match Pin::new(run).poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(out) => {
                this.run = None;
                if let Some(mut rx) = this.rx.take() {
                    while let Ok(msg) = rx.try_recv() {
                        this.queued.push_back(frame(&msg));
                    }
                }
                if let Some(out) = out {
                    this.queued.push_back(frame(&out.to_bytes()));
                }
                Poll::Ready(this.queued.pop_front().map(Ok))
            }
        }
    }
}
