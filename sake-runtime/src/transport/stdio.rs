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
use crate::protocol::framing::{Line, read_line};
use crate::protocol::jsonrpc::{self, Incoming, RequestId, RpcError};
use crate::protocol::meta::{self, Params};
use crate::protocol::methods::Method;
use crate::protocol::{Era, Revision};
use crate::server::context::RequestParts;
use crate::server::dispatch::Dispatched;
use crate::server::legacy::{self, Started};
use crate::server::notify::Event;
use crate::server::session::Session;
use crate::server::subscriptions::{self, Frame};
use crate::server::{Service, Shared};

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
}

impl Conn {
    async fn write(&self, msg: Vec<u8>) {
        let _ = self.out.send(Bytes::from(msg)).await;
    }

    fn session(&self) -> Option<Session> {
        self.session.lock().ok().and_then(|s| s.clone())
    }
}

impl Service {
    /// Serves stdio on this process's stdin and stdout until stdin closes.
    pub async fn serve_stdio(self) -> Result<(), Error> {
        self.serve_io(tokio::io::stdin(), tokio::io::stdout()).await
    }

    /// Serves newline-delimited JSON-RPC on any reader and writer (a pipe, a socket, a test's
    /// in-memory duplex) until the reader ends.
    pub async fn serve_io<R, W>(self, reader: R, writer: W) -> Result<(), Error>
    where
        R: AsyncRead + Unpin + Send,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let shared = self.shared.clone();
        let (out, out_rx) = mpsc::channel::<Bytes>(1024);
        let stop_writing = CancellationToken::new();
        let writer_task = tokio::spawn(write_lines(writer, out_rx, stop_writing.clone()));
        let conn = Arc::new(Conn {
            shared: shared.clone(),
            scope: new_scope(),
            out,
            session: Mutex::new(None),
            all: CancellationToken::new(),
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

/// Writes each message as one line. Once `stop` fires it writes what is already queued and
/// returns, whoever still holds a sender.
async fn write_lines<W: AsyncWrite + Unpin>(
    mut w: W,
    mut rx: mpsc::Receiver<Bytes>,
    stop: CancellationToken,
) {
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
        // An empty message is the "end this HTTP response" marker of SSE polling; stdio has
        // no response streams to end.
        if msg.is_empty() {
            continue;
        }
        let written = async {
            w.write_all(&msg).await?;
            w.write_all(b"\n").await?;
            w.flush().await
        };
        if let Err(e) = written.await {
            tracing::warn!(error = %e, "stdout closed; stopping");
            return;
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
            legacy::notification(&conn.shared, &conn.scope, &method, params);
        }
        Incoming::Response { id, outcome } => {
            legacy::answer(&conn.shared, &conn.scope, &id, outcome)
        }
        Incoming::Request { id, method, params } => request(conn, id, &method, params, tasks).await,
    }
}

fn is_modern(params: &Params<'_>) -> bool {
    #[derive(serde::Deserialize)]
    struct VersionOnly<'a> {
        #[serde(rename = "io.modelcontextprotocol/protocolVersion", borrow, default)]
        version: Option<&'a RawValue>,
    }
    params
        .meta
        .and_then(|m| serde_json::from_str::<VersionOnly<'_>>(m.get()).ok())
        .is_some_and(|v| v.version.is_some())
}

async fn request(
    conn: &Arc<Conn>,
    id: RequestId,
    method: &str,
    raw: Option<&RawValue>,
    tasks: &mut JoinSet<()>,
) {
    tracing::info!(method, id = %id, "request");
    // Held by the request's task until it ends: at most `max_concurrent_requests` run.
    let Ok(permit) = conn.shared.requests.clone().try_acquire_owned() else {
        let what = format!(
            "{} requests are running",
            conn.shared.config.max_concurrent_requests
        );
        return conn.write(busy(Some(&id), what)).await;
    };
    let params = match Params::parse(raw) {
        Ok(p) => p,
        Err(e) => return conn.write(jsonrpc::error_bytes(Some(&id), &e)).await,
    };
    let modern_only = matches!(method, "server/discover" | "subscriptions/listen");
    if is_modern(&params) || (modern_only && conn.session().is_none()) {
        return modern(conn, id, method, &params, tasks, permit).await;
    }
    if method == "initialize" {
        let msg = match legacy::initialize(&conn.shared, &params, None) {
            Ok((result, mut session)) => {
                session.sid = conn.scope.clone();
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
    match legacy::start(
        &conn.shared,
        &session,
        http::Extensions::new(),
        id,
        method,
        raw,
        Some(conn.out.clone()),
    ) {
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

async fn modern(
    conn: &Arc<Conn>,
    id: RequestId,
    method_name: &str,
    params: &Params<'_>,
    tasks: &mut JoinSet<()>,
    permit: tokio::sync::OwnedSemaphorePermit,
) {
    let shared = &conn.shared;
    let checked = (|| {
        let m = meta::parse_modern_meta(params.meta)?;
        if m.protocol_version != Revision::LATEST.as_str() {
            let supported = Revision::ALL.map(Revision::as_str);
            // As over HTTP: a handshake revision is served, but only after `initialize`.
            let hint = if Revision::is_legacy_version_string(&m.protocol_version) {
                "; handshake revisions are served after an `initialize` request, requests with `_meta` need 2026-07-28"
            } else {
                ""
            };
            return Err(RpcError::unsupported_version(
                &m.protocol_version,
                &supported,
                hint,
            ));
        }
        let method = Method::parse_in(method_name, Era::Modern)
            .filter(|m| shared.offers(m.needs()))
            .ok_or_else(|| RpcError::method_not_found(method_name))?;
        Ok((method, m.meta))
    })();
    let (method, meta) = match checked {
        Ok(v) => v,
        Err(e) => return conn.write(jsonrpc::error_bytes(Some(&id), &e)).await,
    };
    let cancel = CancellationToken::new();
    if method == Method::Listen {
        // A subscription counts against `max_streams`, not `max_concurrent_requests`.
        drop(permit);
        let Ok(stream_permit) = shared.streams_open.clone().try_acquire_owned() else {
            let what = format!("{} streams are open", shared.config.max_streams);
            return conn.write(busy(Some(&id), what)).await;
        };
        let frames = match subscriptions::listen(shared, id.clone(), params) {
            Ok(f) => f,
            Err(e) => return conn.write(jsonrpc::error_bytes(Some(&id), &e)).await,
        };
        let guard = shared.inflight.register(&conn.scope, &id, cancel.clone());
        let conn = conn.clone();
        tasks.spawn(async move {
            use futures_util::StreamExt;
            let _guard = guard;
            let _permit = stream_permit;
            let mut frames = std::pin::pin!(frames);
            loop {
                tokio::select! {
                    biased;
                    () = cancel.cancelled() => break,
                    () = conn.all.cancelled() => break,
                    f = frames.next() => match f {
                        Some(Frame::Message(m)) => conn.write(m.to_vec()).await,
                        Some(Frame::KeepAlive) => {}
                        None => break,
                    },
                }
            }
        });
        return;
    }
    let mut parts = RequestParts::new(Revision::LATEST, meta);
    parts.sink = Some(conn.out.clone());
    parts.cancel = Some(cancel.clone());
    match shared.dispatch(parts, method, params) {
        Dispatched::Ready(out) => conn.write(legacy::response(&id, &out)).await,
        Dispatched::Pending(fut) => {
            let guard = shared.inflight.register(&conn.scope, &id, cancel.clone());
            let conn = conn.clone();
            tasks.spawn(async move {
                let _guard = guard;
                let _permit = permit;
                // Cancellation first: a function that stops when cancelled finishes at the
                // same moment, and its result must not be written.
                tokio::select! {
                    biased;
                    // Cancelled: nothing more is written for it.
                    () = cancel.cancelled() => {}
                    () = conn.all.cancelled() => {}
                    out = fut => conn.write(legacy::response(&id, &out)).await,
                }
            });
        }
    }
}

/// The answer to a request beyond `max_concurrent_requests` (or a listen beyond
/// `max_streams`).
fn busy(id: Option<&RequestId>, what: String) -> Vec<u8> {
    let e = RpcError::new(
        jsonrpc::code::TRANSPORT_REFUSED,
        format!("Server busy: {what}; retry when one has finished"),
    );
    jsonrpc::error_bytes(id, &e)
}

/// A 2025-03-26 session's batch: one array of responses, in order.
async fn batch(conn: &Arc<Conn>, text: &[u8], tasks: &mut JoinSet<()>) {
    let refuse = |why: String| jsonrpc::error_bytes(None, &RpcError::invalid_request(why));
    let Some(session) = conn.session().filter(|s| s.revision.features().batches) else {
        return conn
            .write(refuse(
                "a JSON-RPC batch (array) is only accepted in a 2025-03-26 session".into(),
            ))
            .await;
    };
    let items: Vec<&RawValue> = match serde_json::from_slice(text) {
        Ok(items) => items,
        Err(e) => {
            return conn
                .write(jsonrpc::error_bytes(None, &RpcError::parse_error(e)))
                .await;
        }
    };
    let max = conn.shared.config.max_batch;
    if items.is_empty() || items.len() > max {
        return conn
            .write(refuse(format!(
                "a batch must hold 1 to {max} messages; this one holds {}",
                items.len()
            )))
            .await;
    }
    // A batch counts as one request.
    let Ok(permit) = conn.shared.requests.clone().try_acquire_owned() else {
        let what = format!(
            "{} requests are running",
            conn.shared.config.max_concurrent_requests
        );
        return conn.write(busy(None, what)).await;
    };
    let mut runs: Vec<crate::handler::BoxFuture<Option<Vec<u8>>>> = Vec::new();
    for raw in items {
        match jsonrpc::decode_raw(raw) {
            Err(e) => {
                let body = jsonrpc::error_bytes(e.id.as_ref(), &e.error);
                runs.push(Box::pin(std::future::ready(Some(body))));
            }
            Ok(Incoming::Notification { method, params }) => {
                legacy::notification(&conn.shared, &conn.scope, &method, params)
            }
            Ok(Incoming::Response { id, outcome }) => {
                legacy::answer(&conn.shared, &conn.scope, &id, outcome)
            }
            Ok(Incoming::Request { id, method, params }) => {
                match legacy::start(
                    &conn.shared,
                    &session,
                    http::Extensions::new(),
                    id,
                    &method,
                    params,
                    Some(conn.out.clone()),
                ) {
                    Started::Done(body, changed) => {
                        if let Some(changed) = changed
                            && let Ok(mut s) = conn.session.lock()
                        {
                            *s = Some(*changed);
                        }
                        runs.push(Box::pin(std::future::ready(Some(body))));
                    }
                    Started::Running(fut) => runs.push(fut),
                }
            }
        }
    }
    if runs.is_empty() {
        return;
    }
    let conn = conn.clone();
    tasks.spawn(async move {
        let _permit = permit;
        let bodies: Vec<Vec<u8>> = futures_util::future::join_all(runs)
            .await
            .into_iter()
            .flatten()
            .collect();
        if bodies.is_empty() {
            return;
        }
        let mut out = vec![b'['];
        for (i, b) in bodies.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(b);
        }
        out.push(b']');
        conn.write(out).await;
    });
}

/// List changes and subscribed resource updates of the process's handshake session.
fn forward_events(conn: &Arc<Conn>, tasks: &mut JoinSet<()>) {
    let mut events = conn.shared.hub.subscribe_events();
    let conn = conn.clone();
    tasks.spawn(async move {
        loop {
            let ev = tokio::select! {
                ev = events.recv() => ev,
                () = conn.all.cancelled() => return,
            };
            let ev = match ev {
                Ok(ev) => ev,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                    tracing::warn!(
                        missed = n,
                        "stdio client too slow for notifications; some were dropped"
                    );
                    continue;
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            };
            let params = match &ev {
                Event::ResourceUpdated(uri) if conn.shared.hub.is_subscribed(&conn.scope, uri) => {
                    serde_json::json!({ "uri": &**uri })
                }
                Event::ResourceUpdated(_) => continue,
                _ => serde_json::json!({}),
            };
            conn.write(jsonrpc::notification_bytes(ev.method(), &params))
                .await;
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
