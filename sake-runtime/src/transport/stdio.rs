//! stdio: newline-delimited JSON-RPC on stdin and stdout, for both eras.
//!
//! `server/discover` and 2026-07-28 requests (with `_meta`) are answered at any time; an
//! `initialize` makes the process one handshake session for requests without `_meta`, and
//! modern requests keep working beside it. Requests run concurrently; answers may come out of
//! order; `notifications/cancelled` stops a request and nothing more is written for it. Logs
//! never go to stdout.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use serde_json::value::RawValue;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::error::Error;
use crate::handler::BoxFuture;
use crate::protocol::Era;
use crate::protocol::framing::{Line, read_line};
use crate::protocol::jsonrpc::{self, Incoming, RequestId, RpcError};
use crate::protocol::meta::{self, Params};
use crate::protocol::methods::Method;
use crate::server::Shared;
use crate::server::front::legacy::{Started, batch_without_session};
use crate::server::front::modern::Answer;
use crate::server::front::{Frame, Inbound, OnLag, Slot, response};
use crate::server::quota::Key;
use crate::server::session::Session;

/// A fresh scope for one connection: its session id, and the key under which its in-flight
/// requests, pending questions and resource subscriptions are kept. One `Service` may serve
/// several connections (`serve_io` on sockets), so the scope must not be shared.
fn new_scope() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!("stdio-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// The state of one stdio connection.
struct Conn {
    shared: Arc<Shared>,
    /// See [`new_scope`].
    scope: String,
    out: mpsc::Sender<Bytes>,
    session: Mutex<Option<Session>>,
    /// Everything running, cancelled together at EOF.
    all: CancellationToken,
    /// What every request of the connection carries: the caller, when the environment named
    /// one (feature `auth`).
    extensions: http::Extensions,
    /// The share of the request and stream budgets its requests take.
    caller: Key,
}

impl Conn {
    async fn write(&self, msg: Vec<u8>) {
        let _ = self.out.send(Bytes::from(msg)).await;
    }

    fn session(&self) -> Option<Session> {
        self.session.lock().ok().and_then(|s| s.clone())
    }
}

/// Serves newline-delimited JSON-RPC on `reader` and `writer` until the reader ends: one
/// connection, with its own handshake session, cancellations and subscriptions.
pub(crate) async fn serve_io<R, W>(shared: Arc<Shared>, reader: R, writer: W) -> Result<(), Error>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    {
        let (out, out_rx) = mpsc::channel::<Bytes>(1024);
        let stop_writing = CancellationToken::new();
        let writer_task = tokio::spawn(write_lines(writer, out_rx, stop_writing.clone()));
        let extensions = caller(&shared).await?;
        let conn = Arc::new(Conn {
            shared: shared.clone(),
            scope: new_scope(),
            out,
            session: Mutex::new(None),
            all: CancellationToken::new(),
            caller: shared.caller_key(&extensions),
            extensions,
        });
        let mut tasks = JoinSet::new();
        let mut reader = BufReader::new(reader);
        let mut line = Vec::new();
        let max = shared.config.max_body_bytes;
        tracing::info!(
            "serving MCP on stdio (revisions 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26)"
        );
        let mut failed = None;
        loop {
            line.clear();
            let read = tokio::select! {
                r = read_line(&mut reader, &mut line, max) => r,
                () = shared.shutdown.cancelled() => break,
            };
            let read = match read {
                Ok(read) => read,
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            };
            match read {
                Line::Eof => break,
                Line::TooLong => {
                    let e = RpcError::invalid_request(format!(
                        "a message exceeds this server's limit of {max} bytes"
                    ));
                    conn.write(jsonrpc::error_bytes(None, &e)).await;
                }
                Line::Complete => {
                    let text = line.trim_ascii();
                    if !text.is_empty() {
                        handle(&conn, text, &mut tasks).await;
                    }
                }
            }
            while tasks.try_join_next().is_some() {}
        }
        // EOF: cancel what runs, then write what is queued and stop, even if a task the
        // user spawned still holds a `Context`.
        conn.all.cancel();
        shared.inflight.cancel_scope(&conn.scope);
        shared.pending.end_session(&conn.scope);
        shared.hub.end_session(&conn.scope);
        tasks.shutdown().await;
        drop(conn);
        stop_writing.cancel();
        let _ = writer_task.await;
        match failed {
            None => {
                tracing::info!("stdin closed; stdio server stopped");
                Ok(())
            }
            Some(e) => {
                tracing::warn!(error = %e, "reading stdin failed; stdio server stopped");
                Err(e.into())
            }
        }
    }
}

/// The caller of a stdio connection: with authorization configured and a token in the
/// environment variable it names (`Authorization::stdio_token_env`), the verified principal;
/// otherwise anonymous. A token that is refused stops the server: it would run as someone
/// else than the operator meant.
async fn caller(shared: &Shared) -> Result<http::Extensions, Error> {
    #[allow(unused_mut)]
    let mut extensions = http::Extensions::new();
    #[cfg(feature = "auth")]
    if let Some(auth) = &shared.auth
        && let Some((token, source)) = auth.stdio_token.as_ref().and_then(|t| t.read())
    {
        let principal = auth.verifier.verify(&token).await.map_err(|e| {
            Error::Config(format!(
                "the bearer token of {source} was not accepted: {e}"
            ))
        })?;
        tracing::info!(subject = principal.subject(), "stdio caller from {source}");
        extensions.insert(principal);
    }
    #[cfg(not(feature = "auth"))]
    let _ = shared;
    Ok(extensions)
}

/// How many bytes of queued messages at most are gathered into one write.
const WRITE_BATCH_BYTES: usize = 64 * 1024;

/// Appends a message and its newline. An empty message is the "end this HTTP response" marker
/// of SSE polling; stdio has no response streams to end.
fn push_line(buf: &mut Vec<u8>, msg: &[u8]) {
    if !msg.is_empty() {
        buf.extend_from_slice(msg);
        buf.push(b'\n');
    }
}

/// Writes each message as one line. Once `stop` fires it writes what is already queued and
/// returns, whoever still holds a sender.
async fn write_lines<W: AsyncWrite + Unpin>(
    mut w: W,
    mut rx: mpsc::Receiver<Bytes>,
    stop: CancellationToken,
) {
    let mut buf = Vec::new();
    loop {
        let msg = tokio::select! {
            biased;
            msg = rx.recv() => msg,
            () = stop.cancelled(), if !rx.is_closed() => {
                // Refuse new messages; `recv` yields the queued ones, then `None`.
                rx.close();
                continue;
            }
        };
        let Some(msg) = msg else { return };
        // Every message queued now goes out in one write: with a pipelining client, one
        // write (a hand-off to the blocking stdout) per batch rather than three per message.
        buf.clear();
        push_line(&mut buf, &msg);
        while buf.len() < WRITE_BATCH_BYTES
            && let Ok(more) = rx.try_recv()
        {
            push_line(&mut buf, &more);
        }
        if buf.is_empty() {
            continue;
        }
        let written = async {
            w.write_all(&buf).await?;
            w.flush().await
        };
        if let Err(e) = written.await {
            tracing::warn!(error = %e, "stdout closed; stopping");
            return;
        }
        // A batch that held one very large message leaves no buffer of its size behind.
        if buf.capacity() > 4 * WRITE_BATCH_BYTES {
            buf = Vec::new();
        }
    }
}

async fn handle(conn: &Arc<Conn>, text: &[u8], tasks: &mut JoinSet<()>) {
    if text.first() == Some(&b'[') {
        batch(conn, text, tasks).await;
        return;
    }
    let message = match jsonrpc::decode(text) {
        Ok(m) => m,
        Err(e) => {
            conn.write(jsonrpc::error_bytes(e.id.as_ref(), &e.error))
                .await;
            return;
        }
    };
    match message {
        Incoming::Notification { method, params } => {
            conn.shared
                .session_notification(&conn.scope, &method, params);
        }
        Incoming::Response { id, outcome } => conn.shared.session_answer(&conn.scope, &id, outcome),
        Incoming::Request { id, method, params } => request(conn, id, &method, params, tasks).await,
    }
}

async fn request(
    conn: &Arc<Conn>,
    id: RequestId,
    method: &str,
    raw: Option<&RawValue>,
    tasks: &mut JoinSet<()>,
) {
    tracing::info!(method, id = %id, "request");
    let shared = &conn.shared;
    // Held by the request's task until it ends: at most `max_requests_per_session` run
    // (the connection is the session).
    let permit = match shared.request_slots(1, Some(&conn.scope), conn.caller) {
        Ok(p) => p,
        Err(e) => return conn.write(jsonrpc::error_bytes(Some(&id), &e)).await,
    };
    let params = match Params::parse(raw) {
        Ok(p) => p,
        Err(e) => return conn.write(jsonrpc::error_bytes(Some(&id), &e)).await,
    };
    let stateless_only =
        Method::parse_in(method, Era::Modern).is_some_and(|m| !m.exists_in(Era::Legacy));
    if meta::names_version(params.meta) || (stateless_only && conn.session().is_none()) {
        return stateless(conn, id, method, &params, tasks, permit).await;
    }
    if method == "initialize" {
        let msg = match shared.initialize(
            &id,
            &params,
            shared.principal_of(&conn.extensions),
            conn.scope.clone(),
            Some(conn.scope.clone()),
            "pipe",
        ) {
            Ok((result, mut session)) => {
                // The connection's session lasts as long as the connection.
                session.expires = u64::MAX;
                let first = conn
                    .session
                    .lock()
                    .map(|mut s| s.replace(session).is_none())
                    .unwrap_or(false);
                if first {
                    forward_events(conn, tasks);
                }
                jsonrpc::result_bytes(&id, &result)
            }
            Err(e) => jsonrpc::error_bytes(Some(&id), &e),
        };
        return conn.write(msg).await;
    }
    let Some(session) = conn.session() else {
        let msg = if method == "ping" {
            jsonrpc::result_bytes(&id, b"{}")
        } else {
            jsonrpc::error_bytes(
                Some(&id),
                &RpcError::invalid_params(
                    "Invalid params: no `_meta`; send 2026-07-28 requests with params._meta (io.modelcontextprotocol/protocolVersion, io.modelcontextprotocol/clientCapabilities), or `initialize` first",
                ),
            )
        };
        return conn.write(msg).await;
    };
    let inbound = Inbound {
        sink: Some(conn.out.clone()),
        extensions: conn.extensions.clone(),
        transport: Some("pipe"),
        ..Inbound::default()
    };
    match shared.session_request(&session, &conn.scope, id, method, Ok(params), inbound) {
        Started::Done(msg, changed) => {
            if let Some(changed) = changed
                && let Ok(mut s) = conn.session.lock()
            {
                *s = Some(*changed);
            }
            conn.write(msg).await;
        }
        Started::Running(fut) => {
            let conn = conn.clone();
            tasks.spawn(async move {
                let _permit = permit;
                tokio::select! {
                    biased;
                    () = conn.all.cancelled() => {}
                    out = fut => if let Some(msg) = out {
                        conn.write(msg).await;
                    },
                }
            });
        }
    }
}

/// A stateless request: its `_meta` names the version (there are no headers on stdio).
async fn stateless(
    conn: &Arc<Conn>,
    id: RequestId,
    method_name: &str,
    params: &Params<'_>,
    tasks: &mut JoinSet<()>,
    permit: Slot,
) {
    let shared = &conn.shared;
    let checked = meta::parse_modern_meta(params.meta).and_then(|m| {
        let rev = shared.stateless_revision(&m.protocol_version)?;
        let method = shared.resolve(Era::Modern, method_name)?;
        Ok((rev, method, m.meta))
    });
    let (rev, method, meta) = match checked {
        Ok(v) => v,
        Err(e) => return conn.write(jsonrpc::error_bytes(Some(&id), &e)).await,
    };
    // A subscription counts against `max_streams`, not `max_concurrent_requests`.
    let permit = if method == Method::Listen {
        drop(permit);
        match shared.stream_slot(conn.caller) {
            Ok(p) => p,
            Err(e) => return conn.write(jsonrpc::error_bytes(Some(&id), &e)).await,
        }
    } else {
        permit
    };
    let cancel = CancellationToken::new();
    let inbound = Inbound {
        sink: Some(conn.out.clone()),
        cancel: Some(cancel.clone()),
        extensions: conn.extensions.clone(),
        transport: Some("pipe"),
        ..Inbound::default()
    };
    let fut: BoxFuture<Option<Vec<u8>>> =
        match shared.serve_stateless(rev, &id, method, params, meta, inbound) {
            Answer::Ready(out) => return conn.write(response(&id, &out)).await,
            Answer::Running(fut) => {
                let id = id.clone();
                Box::pin(async move { Some(response(&id, &fut.await)) })
            }
            Answer::Listen(mut frames) => {
                let conn = conn.clone();
                Box::pin(async move {
                    use futures_util::StreamExt;
                    while let Some(f) = frames.next().await {
                        if let Frame::Message(m) = f {
                            conn.write(m.to_vec()).await;
                        }
                    }
                    None
                })
            }
        };
    let guard = shared.inflight.register(&conn.scope, &id, cancel.clone());
    let conn = conn.clone();
    tasks.spawn(async move {
        let _guard = guard;
        let _permit = permit;
        // Cancellation first: a function that stops when cancelled finishes at the same
        // moment, and its result must not be written.
        tokio::select! {
            biased;
            // Cancelled: nothing more is written for it.
            () = cancel.cancelled() => {}
            () = conn.all.cancelled() => {}
            out = fut => if let Some(msg) = out {
                conn.write(msg).await;
            },
        }
    });
}

/// A 2025-03-26 session's batch: one array of responses, in order. Each of its messages
/// counts as a request.
async fn batch(conn: &Arc<Conn>, text: &[u8], tasks: &mut JoinSet<()>) {
    let Some(session) = conn.session() else {
        return conn
            .write(jsonrpc::error_bytes(None, &batch_without_session()))
            .await;
    };
    let inbound = Inbound {
        sink: Some(conn.out.clone()),
        extensions: conn.extensions.clone(),
        transport: Some("pipe"),
        ..Inbound::default()
    };
    let batch = match conn
        .shared
        .batch(&session, text, &conn.scope, conn.caller, inbound)
    {
        Ok(b) => b,
        Err(e) => return conn.write(jsonrpc::error_bytes(None, &e)).await,
    };
    if let Some(changed) = batch.changed
        && let Ok(mut s) = conn.session.lock()
    {
        *s = Some(*changed);
    }
    let Some(answer) = batch.answer else { return };
    let conn = conn.clone();
    // The answer holds the batch's request slots.
    tasks.spawn(async move {
        if let Some(out) = answer.await {
            conn.write(out).await;
        }
    });
}

/// List changes and subscribed resource updates of the connection's handshake session.
fn forward_events(conn: &Arc<Conn>, tasks: &mut JoinSet<()>) {
    let events = conn.shared.session_events(&conn.scope, OnLag::Skip);
    let conn = conn.clone();
    tasks.spawn(async move {
        use futures_util::StreamExt;
        let mut events = std::pin::pin!(events);
        loop {
            let frame = tokio::select! {
                f = events.next() => f,
                () = conn.all.cancelled() => return,
            };
            match frame {
                Some(Frame::Message(m)) => conn.write(m.to_vec()).await,
                Some(Frame::KeepAlive) => {}
                None => return,
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::AsyncReadExt;

    use super::*;

    #[test]
    fn every_connection_has_its_own_scope() {
        assert_ne!(new_scope(), new_scope());
    }

    #[tokio::test]
    async fn the_writer_stops_on_request_even_while_a_sender_lives() {
        let (w, mut r) = tokio::io::duplex(1024);
        let (tx, rx) = mpsc::channel::<Bytes>(8);
        let stop = CancellationToken::new();
        let writer = tokio::spawn(write_lines(w, rx, stop.clone()));
        tx.send(Bytes::from_static(b"{\"a\":1}")).await.unwrap();
        tx.send(Bytes::new()).await.unwrap();
        tx.send(Bytes::from_static(b"{\"b\":2}")).await.unwrap();
        // `tx` stays alive, like a `Context` held by a task the user spawned.
        stop.cancel();
        tokio::time::timeout(Duration::from_secs(5), writer)
            .await
            .expect("the writer stops")
            .unwrap();
        assert!(tx.send(Bytes::from_static(b"late")).await.is_err());
        let mut written = String::new();
        r.read_to_string(&mut written).await.unwrap();
        assert_eq!(written, "{\"a\":1}\n{\"b\":2}\n");
    }
}
