//! The port between the engine and every transport: [`Connection`].
//!
//! A transport owns its framing and its wire — Streamable HTTP its admission, statuses, SSE and
//! resumption and the session id on the wire; stdio its lines; a user's transport whatever
//! moves its messages — and hands every message it receives to its connection. The connection
//! decides everything else, once for every transport: the door a message goes through
//! (stateless or a handshake session, [`routing`](super::routing)), the slots and quotas,
//! `initialize`, batches, the listen slot, cancellation. It answers with one [`Reply`]; a
//! connection that holds its peer's outbound channel (stdio, a socket) delivers replies itself.
//!
//! A connection is one of two kinds:
//! - **held**: it keeps its peer's handshake session itself, writes every message it sends to
//!   one [`Outbound`] channel, runs what takes time on tasks of its own and cancels them when
//!   it closes (stdio, a Unix socket, any message stream; [`Service::connect`](crate::Service::connect));
//! - **per request**: one Streamable HTTP POST (or GET, DELETE), whose session is named by a
//!   signed id in its headers; the reply goes back in the HTTP response.
//!
//! Transports import this module and nothing else of the engine.

use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;
use futures_util::Stream;
use http::HeaderMap;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::legacy::{Started, batch_without_session};
use super::modern::{Answer as Served, wants_stream};
use super::routing::{self, Door};
use super::{Inbound, Outcome};
use crate::error::Error;
use crate::handler::BoxFuture;
use crate::handler::context::Sink;
use crate::protocol::Era;
use crate::protocol::headers::RequestHeaders;
use crate::protocol::jsonrpc::{self, Incoming, RequestId, RpcError, code};
use crate::protocol::meta::{self, ModernRequest, Params};
use crate::protocol::methods::Method;
use crate::server::Shared;
use crate::server::inflight::InflightGuard;
use crate::server::session::{Refused, Session};

pub(crate) use super::{Frame, OnLag, Slot, busy, too_many};
pub(crate) use crate::server::PeerAddr;
pub(crate) use crate::server::quota::{Drawn, Flight, Key, Pool, Quotas, Share};
pub(crate) use crate::server::records::Records;

/// The engine as transports see it: what they need to make connections and to admit what they
/// read, and nothing of its insides.
#[derive(Clone)]
pub(crate) struct Engine(Arc<Shared>);

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Engine")
            .field(&self.0.config.info.name)
            .finish()
    }
}

impl Engine {
    pub(crate) fn new(shared: Arc<Shared>) -> Engine {
        Engine(shared)
    }

    /// Whose share of the request, stream and body budgets a request takes.
    pub(crate) fn caller_key(&self, extensions: &http::Extensions) -> Key {
        self.0.caller_key(extensions)
    }

    /// `bytes` of a request in flight for `caller` (a body being received), among
    /// `Limits::max_request_bytes_per_client` and `max_request_bytes`.
    pub(crate) fn flight(&self, caller: Key, bytes: usize) -> Result<Flight, RpcError> {
        self.0.flight(caller, bytes)
    }

    /// Grows `flight` to `total` bytes, under the same limits.
    pub(crate) fn grow_flight(&self, flight: &mut Flight, total: usize) -> Result<(), RpcError> {
        self.0.grow_flight(flight, total)
    }

    /// Whose share of the connection budget a network peer takes (before anything of its
    /// requests is read: the address, or its network, never a principal).
    pub(crate) fn address_key(&self, ip: std::net::IpAddr) -> Key {
        self.0.address_key(ip)
    }

    /// The largest message the server takes (`Server::max_body_bytes`).
    pub(crate) fn max_message_bytes(&self) -> usize {
        self.0.config.limits.max_body_bytes
    }

    /// Fires when the server shuts down.
    pub(crate) fn shutdown(&self) -> &CancellationToken {
        &self.0.shutdown
    }

    /// The caller of a connection that has no request headers (stdio): with authorization
    /// configured and a token in the environment variable it names
    /// (`Authorization::stdio_token_env`), the verified principal; otherwise anonymous. A
    /// token that is refused is an error: the server would run as someone else than the
    /// operator meant.
    pub(crate) async fn caller_from_env(&self) -> Result<http::Extensions, Error> {
        #[allow(unused_mut)]
        let mut extensions = http::Extensions::new();
        #[cfg(feature = "auth")]
        if let Some(auth) = &self.0.auth
            && let Some((token, source)) = auth.stdio_token.as_ref().and_then(|t| t.read())
        {
            let principal = auth.verifier.verify(&token).await.map_err(|e| {
                Error::Config(format!(
                    "the bearer token of {source} was not accepted: {e}"
                ))
            })?;
            tracing::info!(subject = principal.subject(), "caller from {source}");
            extensions.insert(principal);
        }
        Ok(extensions)
    }

    /// A connection that holds its peer's session and writes to one outbound channel.
    pub(crate) fn open(&self, peer: Peer) -> (Connection, Outbound) {
        Connection::open(self.0.clone(), peer)
    }
}

/// Who is on the other end of a connection, as its transport knows it.
///
/// ```
/// let peer = sake::transport::Peer::new("unix");
/// ```
#[derive(Debug)]
pub struct Peer {
    transport: Option<&'static str>,
    extensions: http::Extensions,
    questions: bool,
}

impl Peer {
    /// A peer reached over `transport`: its name in telemetry (`network.transport`: `tcp`,
    /// `pipe`, `unix`, …).
    pub fn new(transport: &'static str) -> Peer {
        Peer {
            transport: Some(transport),
            extensions: http::Extensions::new(),
            questions: true,
        }
    }

    /// What every request of the connection carries, as an HTTP request's extensions would:
    /// where an authentication step leaves the caller (a verified `sake::auth::Principal`,
    /// feature `auth`), and what functions read through `Context::extensions`.
    pub fn extensions(mut self, extensions: http::Extensions) -> Peer {
        self.extensions = extensions;
        self
    }

    /// The peer's network address: an anonymous caller's share of the server's budgets is
    /// counted by it.
    pub fn address(mut self, ip: std::net::IpAddr) -> Peer {
        self.extensions.insert(PeerAddr::new(ip));
        self
    }

    /// A peer whose functions cannot ask it questions (elicitation, sampling, roots of a
    /// handshake session): the in-memory test client.
    pub(crate) fn without_questions(mut self) -> Peer {
        self.questions = false;
        self
    }

    /// A peer that names no transport (the in-memory test client).
    pub(crate) fn in_memory() -> Peer {
        Peer {
            transport: None,
            extensions: http::Extensions::new(),
            questions: true,
        }
    }
}

/// What a transport knows about one message besides its bytes.
#[derive(Default)]
pub(crate) struct Hints<'a> {
    /// The request's headers, on a transport that has them (Streamable HTTP): the version
    /// header, the session id, and the 2026-07-28 routing headers checked against the body.
    pub headers: Option<&'a RequestHeaders<'a>>,
    /// Whether this exchange can carry a request's messages before its answer (HTTP: the
    /// client accepts SSE), asked only of a request that may send some. A held connection
    /// always can, on its outbound channel.
    pub streams: Option<&'a (dyn Fn() -> bool + Sync)>,
    /// Where this message's messages go instead of the connection's outbound channel (the
    /// in-memory test client collects them per request).
    pub sink: Option<Sink>,
}

/// How a connection answers one message.
#[must_use]
pub(crate) struct Reply {
    pub answer: Answering,
    /// A session id to hand to the client: a new session's, or a fresher one of the same
    /// session (Streamable HTTP sends it as `Mcp-Session-Id`).
    pub session_id: Option<String>,
    /// Set when what the request sends before its answer belongs on a resumable stream of a
    /// handshake session (Streamable HTTP: SSE with event ids, kept for `Last-Event-ID`; the
    /// request runs on when its client hangs up).
    pub resumable: Option<StreamOwner>,
}

/// What a reply holds.
pub(crate) enum Answering {
    /// Nothing to answer: a notification, a client's response, a batch of only those
    /// (Streamable HTTP: 202).
    Accepted,
    /// The answer, now.
    Now(Answer),
    /// The request runs: its answer when [`Run`] ends. What it sends before goes to the
    /// channel returned here (per-request connections that stream), or to the connection's
    /// outbound channel.
    Later(Run, Option<mpsc::Receiver<Bytes>>),
    /// A long-lived stream (`subscriptions/listen`): its frames, from the acknowledgement on.
    Stream(Frames),
}

/// A request's answer, or a batch's.
#[derive(Debug)]
pub(crate) enum Answer {
    /// A request's result or error. Errors carry the HTTP status their era gives them
    /// (`RpcError::status`); `id` is `None` for a message whose id could not be read.
    One(Option<RequestId>, Outcome),
    /// A 2025-03-26 batch: the array of its responses, framed.
    Batch(Vec<u8>),
}

impl Answer {
    /// The JSON-RPC message.
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        match self {
            Answer::One(Some(id), Ok(result)) => jsonrpc::result_bytes(id, result),
            Answer::One(id, Err(e)) => jsonrpc::error_bytes(id.as_ref(), e),
            // A result always has its request's id.
            Answer::One(None, Ok(_)) => jsonrpc::error_bytes(None, &RpcError::internal("")),
            Answer::Batch(body) => body.clone(),
        }
    }
}

/// Whose resumable stream a session's reply goes on: the session itself, shared (read only
/// when a stream opens).
#[derive(Clone, Debug)]
pub(crate) struct StreamOwner(Arc<Session>);

impl StreamOwner {
    /// The session's.
    pub(crate) fn of(session: &Arc<Session>) -> StreamOwner {
        StreamOwner(session.clone())
    }

    /// The session's id.
    pub(crate) fn sid(&self) -> &str {
        &self.0.sid
    }

    /// Who opened the session (the bound on the records each client makes the server keep).
    pub(crate) fn owner(&self) -> &str {
        &self.0.owner
    }

    /// When the session ends.
    pub(crate) fn expires_at(&self) -> Instant {
        self.0.expires_at()
    }

    /// Whether the session's revision polls: a priming event, `retry`, event ids.
    pub(crate) fn polling(&self) -> bool {
        self.0.revision.features().sse_polling
    }
}

enum Running {
    /// A stateless request's outcome.
    Plain(BoxFuture<Outcome>),
    /// A request the client may cancel: its outcome, or nothing once cancelled.
    Cancellable(BoxFuture<Option<Outcome>>),
    /// A batch's framed array, or nothing when it answered nothing.
    Batch(BoxFuture<Option<Vec<u8>>>),
}

/// A request (or batch) running: a future of its [`Answer`], `None` when nothing is to be
/// sent (the client cancelled it). It holds the request's slots until it ends.
pub(crate) struct Run {
    id: Option<RequestId>,
    /// What the request's error is sent with: its era's status, or a session's 200.
    settle: fn(RpcError) -> RpcError,
    running: Running,
    slot: Option<Slot>,
    _inflight: Option<InflightGuard>,
}

impl std::future::Future for Run {
    type Output = Option<Answer>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Answer>> {
        use std::task::Poll;
        let this = &mut *self;
        let settle = this.settle;
        let one =
            |id: &mut Option<RequestId>, out: Outcome| Answer::One(id.take(), out.map_err(settle));
        let answer = match &mut this.running {
            Running::Plain(f) => match f.as_mut().poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(out) => Some(one(&mut this.id, out)),
            },
            Running::Cancellable(f) => match f.as_mut().poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(out) => out.map(|out| one(&mut this.id, out)),
            },
            Running::Batch(f) => match f.as_mut().poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(body) => body.map(Answer::Batch),
            },
        };
        // The request's work is over: its slots go back at once, whoever still holds the
        // future.
        this.slot = None;
        this._inflight = None;
        Poll::Ready(answer)
    }
}

/// The frames of a long-lived stream, holding its stream slot until it ends.
pub(crate) struct Frames {
    frames: Box<dyn Stream<Item = Frame> + Send + Unpin + 'static>,
    _slot: Option<Slot>,
    /// On a held connection, the client may cancel the stream by its request's id: it then
    /// ends at once.
    cancelled: Option<(
        std::pin::Pin<Box<tokio_util::sync::WaitForCancellationFutureOwned>>,
        InflightGuard,
    )>,
}

impl Stream for Frames {
    type Item = Frame;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Frame>> {
        if let Some((cancelled, _)) = &mut self.cancelled
            && cancelled.as_mut().poll(cx).is_ready()
        {
            self.cancelled = None;
            self.frames = Box::new(futures_util::stream::empty());
            return std::task::Poll::Ready(None);
        }
        std::pin::Pin::new(&mut self.frames).poll_next(cx)
    }
}

impl Reply {
    fn of(answer: Answering) -> Reply {
        Reply {
            answer,
            session_id: None,
            resumable: None,
        }
    }

    /// An answer known now, its error's status settled for `era`.
    fn now(era: Era, id: Option<RequestId>, out: Outcome) -> Reply {
        Reply::of(Answering::Now(Answer::One(
            id,
            out.map_err(|e| e.settled(era)),
        )))
    }

    fn error(era: Era, id: Option<RequestId>, e: RpcError) -> Reply {
        Reply::now(era, id, Err(e))
    }

    /// A session request's answer, known now: a JSON-RPC message with 200, whatever it
    /// holds but an authorization refusal (`RpcError::in_session`).
    fn in_session(id: RequestId, out: Outcome) -> Reply {
        Reply::of(Answering::Now(Answer::One(
            Some(id),
            out.map_err(RpcError::in_session),
        )))
    }

    fn with_session_id(mut self, id: Option<String>) -> Reply {
        if id.is_some() {
            self.session_id = id;
        }
        self
    }
}

/// The messages a held connection sends its peer, in order: answers, the notifications and
/// questions of running requests, the events of its session. Read them and write each to the
/// peer in the transport's framing; the channel ends once the connection is closed (or
/// dropped) and everything queued has been read.
#[derive(Debug)]
pub struct Outbound {
    rx: mpsc::Receiver<Bytes>,
    closed: CancellationToken,
}

impl Outbound {
    /// The next message to send, or `None` once the connection has closed and everything it
    /// queued was read.
    pub async fn recv(&mut self) -> Option<Bytes> {
        loop {
            let msg = tokio::select! {
                biased;
                msg = self.rx.recv() => msg,
                () = self.closed.cancelled(), if !self.rx.is_closed() => {
                    // Refuse new messages (a task the user spawned may still hold a
                    // `Context`); `recv` yields the queued ones, then `None`.
                    self.rx.close();
                    continue;
                }
            };
            match msg {
                // The "end this response stream" marker of SSE polling: a message stream has
                // no response streams to end.
                Some(m) if m.is_empty() => continue,
                other => return other,
            }
        }
    }

    /// A message already queued, without waiting.
    pub fn try_recv(&mut self) -> Option<Bytes> {
        loop {
            match self.rx.try_recv() {
                Ok(m) if m.is_empty() => continue,
                Ok(m) => return Some(m),
                Err(_) => return None,
            }
        }
    }
}

/// What a held connection keeps: its peer's handshake session and everything it runs.
struct Held {
    /// Names the connection's in-flight requests, pending questions and subscriptions, and
    /// is the id of its session: one `Service` serves many connections, so it is unique.
    scope: String,
    session: Mutex<Option<Arc<Session>>>,
    out: Sink,
    /// Fired when the connection closes: everything it runs stops.
    all: CancellationToken,
    /// Fired once what it ran has stopped: the outbound channel drains and ends.
    closed: CancellationToken,
    tasks: TaskTracker,
}

/// One client connection: a stdio pipe, a socket, a session's POSTs.
///
/// A transport reads messages from its peer and hands each to [`receive`](Connection::receive);
/// the connection answers on its [`Outbound`] channel, which the transport writes back to the
/// peer. Both eras work on one connection: 2026-07-28 requests (with `_meta`) are served
/// statelessly at any time, and an `initialize` makes the connection one handshake session.
/// Requests run concurrently, answers may come out of order, `notifications/cancelled`
/// stops a request.
///
/// ```no_run
/// use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
///
/// # async fn serve(service: sake::Service, stream: tokio::net::UnixStream) {
/// let (connection, mut outbound) = service.connect(sake::transport::Peer::new("unix"));
/// let (read, mut write) = stream.into_split();
/// tokio::spawn(async move {
///     while let Some(message) = outbound.recv().await {
///         if write.write_all(&[&message[..], b"\n"].concat()).await.is_err() {
///             break;
///         }
///     }
/// });
/// let mut lines = BufReader::new(read).lines();
/// while let Ok(Some(line)) = lines.next_line().await {
///     connection.receive(line).await;
/// }
/// connection.close().await;
/// # }
/// ```
pub struct Connection {
    shared: Arc<Shared>,
    transport: Option<&'static str>,
    extensions: http::Extensions,
    caller: Key,
    questions: bool,
    held: Option<Held>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("transport", &self.transport)
            .field("scope", &self.held.as_ref().map(|h| &h.scope))
            .finish_non_exhaustive()
    }
}

/// How many messages a held connection queues for its peer before a request that sends
/// waits.
const OUTBOUND_BUFFER: usize = 1024;

impl Connection {
    fn open(shared: Arc<Shared>, peer: Peer) -> (Connection, Outbound) {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let (out, rx) = mpsc::channel(OUTBOUND_BUFFER);
        let closed = CancellationToken::new();
        let scope = format!(
            "{}-{}",
            peer.transport.unwrap_or("memory"),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let caller = shared.caller_key(&peer.extensions);
        let conn = Connection {
            shared,
            transport: peer.transport,
            extensions: peer.extensions,
            caller,
            questions: peer.questions,
            held: Some(Held {
                scope,
                session: Mutex::new(None),
                out,
                all: CancellationToken::new(),
                closed: closed.clone(),
                tasks: TaskTracker::new(),
            }),
        };
        (conn, Outbound { rx, closed })
    }

    /// The connection of one Streamable HTTP request: its session (if any) is named by the
    /// request's headers. `caller` is `Engine::caller_key` of `extensions`.
    pub(crate) fn for_request(
        engine: &Engine,
        transport: &'static str,
        extensions: http::Extensions,
        caller: Key,
    ) -> Connection {
        Connection {
            shared: engine.0.clone(),
            transport: Some(transport),
            extensions,
            caller,
            questions: true,
            held: None,
        }
    }

    /// Takes one message from the peer: a request, a notification, a response to a question
    /// the server asked, or (2025-03-26 sessions) a batch. Everything it answers goes to the
    /// [`Outbound`] channel; this returns once the message is taken (a request that runs goes
    /// on, concurrently with the next messages).
    pub async fn receive(&self, message: impl Into<Bytes>) {
        let reply = self.handle(message.into(), Hints::default());
        self.deliver(reply).await;
    }

    /// Answers a message the transport could not take whole: it exceeds
    /// `Server::max_body_bytes` (the transport stops reading it there).
    pub async fn refuse_oversized(&self) {
        let limit = self.shared.config.limits.max_body_bytes;
        let e = RpcError::invalid_request(format!(
            "a message exceeds this server's limit of {limit} bytes"
        ));
        self.deliver(Reply::error(Era::Legacy, None, e)).await;
    }

    /// The largest message the server takes (`Server::max_body_bytes`): a transport that
    /// frames messages stops reading one there and calls
    /// [`refuse_oversized`](Self::refuse_oversized).
    pub fn max_message_bytes(&self) -> usize {
        self.shared.config.limits.max_body_bytes
    }

    /// Ends the connection: what it runs is cancelled, its session ends, and once its tasks
    /// have stopped the [`Outbound`] channel yields what is queued and ends. Dropping the
    /// connection does the same without waiting.
    pub async fn close(mut self) {
        if let Some(held) = self.held.take() {
            self.end(&held);
            held.tasks.close();
            held.tasks.wait().await;
            held.closed.cancel();
        }
    }

    fn end(&self, held: &Held) {
        held.all.cancel();
        self.shared.inflight.cancel_scope(&held.scope);
        self.shared.pending.end_session(&held.scope);
        self.shared.hub.end_session(&held.scope);
    }

    /// Sends a reply on the outbound channel: now, or when its request ends.
    async fn deliver(&self, reply: Reply) {
        let Some(held) = &self.held else { return };
        match reply.answer {
            Answering::Accepted => {}
            Answering::Now(answer) => {
                let _ = held.out.send(Bytes::from(answer.to_bytes())).await;
            }
            Answering::Later(run, _) => {
                let out = held.out.clone();
                let all = held.all.clone();
                held.tasks.spawn(async move {
                    tokio::select! {
                        biased;
                        () = all.cancelled() => {}
                        answer = run => if let Some(answer) = answer {
                            let _ = out.send(Bytes::from(answer.to_bytes())).await;
                        },
                    }
                });
            }
            Answering::Stream(mut frames) => {
                let out = held.out.clone();
                let all = held.all.clone();
                held.tasks.spawn(async move {
                    use futures_util::StreamExt as _;
                    loop {
                        let frame = tokio::select! {
                            f = frames.next() => f,
                            () = all.cancelled() => return,
                        };
                        match frame {
                            Some(Frame::Message(m)) => {
                                if out.send(m).await.is_err() {
                                    return;
                                }
                            }
                            Some(Frame::KeepAlive) => {}
                            None => return,
                        }
                    }
                });
            }
        }
    }

    /// The answer to one Streamable HTTP request.
    pub(crate) fn answer(mut self, message: Bytes, hints: Hints<'_>) -> Reply {
        let extensions = std::mem::take(&mut self.extensions);
        self.serve(message, &hints, extensions)
    }

    /// The answer to one message of a held connection (the in-memory test client reads it
    /// directly; [`receive`](Self::receive) delivers it).
    pub(crate) fn handle(&self, message: Bytes, hints: Hints<'_>) -> Reply {
        self.serve(message, &hints, self.extensions.clone())
    }

    fn serve(&self, message: Bytes, hints: &Hints<'_>, extensions: http::Extensions) -> Reply {
        let era_hint = routing::header_era(hints.headers);
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
        if self.held.is_some() {
            tracing::info!(method = &*jsonrpc::logged(&method), id = %jsonrpc::Logged(&id), "request");
        }
        // Asked only of an `initialize`: whether it is sent inside a session. A held
        // connection's `initialize` starts its session over.
        let in_session =
            || self.held.is_none() && hints.headers.is_some_and(|h| h.session_id.first.is_some());
        let stateless_default = self
            .held
            .as_ref()
            .is_some_and(|held| lock(&held.session).is_none());
        match routing::door(
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
    fn slots(&self, n: usize, bytes: usize, session: Option<&str>) -> Result<Slot, RpcError> {
        let scope = self.held.as_ref().map(|h| h.scope.as_str()).or(session);
        self.shared.request_slots(n, bytes, scope, self.caller)
    }

    /// Where a request's messages go before its answer, and the channel a per-request
    /// connection reads them from. `wanted`: whether the request may send any.
    fn sink(
        &self,
        hints: &Hints<'_>,
        wanted: bool,
    ) -> (Option<Sink>, Option<mpsc::Receiver<Bytes>>) {
        if let Some(sink) = &hints.sink {
            return (Some(sink.clone()), None);
        }
        if let Some(held) = &self.held {
            return (Some(held.out.clone()), None);
        }
        if wanted && hints.streams.is_some_and(|accepts| accepts()) {
            let (tx, rx) = mpsc::channel::<Bytes>(self.shared.config.limits.stream_buffer);
            return (Some(tx), Some(rx));
        }
        (None, None)
    }

    fn inbound(&self, sink: Option<Sink>, extensions: http::Extensions) -> Inbound {
        Inbound {
            sink,
            extensions,
            cancel: None,
            no_questions: !self.questions,
            quiet: false,
            polled_at_once: false,
            transport: self.transport,
        }
    }

    /// A stateless request, its `_meta` read.
    fn stateless(
        &self,
        req: ModernRequest<'_>,
        hints: &Hints<'_>,
        bytes: usize,
        extensions: http::Extensions,
    ) -> Reply {
        let ModernRequest {
            id,
            method,
            params,
            meta,
        } = req;
        let slot = match self.slots(1, bytes, None) {
            Ok(s) => s,
            Err(e) => return Reply::error(Era::Modern, Some(id), e),
        };
        let (rev, method, meta) =
            match routing::check_modern(&self.shared, hints.headers, method, &params, meta) {
                Ok(v) => v,
                Err(e) => return Reply::error(Era::Modern, Some(id), e),
            };
        let meta = meta.meta;
        // A subscription counts against `max_streams`, not `max_concurrent_requests`.
        let slot = if method == Method::Listen {
            drop(slot);
            match self.shared.stream_slot(self.caller) {
                Ok(s) => s,
                Err(e) => return Reply::error(Era::Modern, Some(id), e),
            }
        } else {
            slot
        };
        // Progress and logs need a stream; a client that cannot take one gets none.
        let (sink, messages) = self.sink(hints, wants_stream(&meta));
        let mut inbound = self.inbound(sink, extensions);
        // On a held connection, `notifications/cancelled` cancels by id.
        let cancel = self.held.as_ref().map(|_| CancellationToken::new());
        inbound.cancel = cancel.clone();
        match self
            .shared
            .serve_stateless(rev, &id, method, &params, meta, inbound)
        {
            Served::Ready(out) => Reply::now(Era::Modern, Some(id), out),
            Served::Listen(frames) => {
                let cancelled = match (cancel, &self.held) {
                    (Some(cancel), Some(held)) => Some((
                        Box::pin(cancel.clone().cancelled_owned()),
                        self.shared
                            .inflight
                            .register(self.shared.inflight.key(&held.scope, &id), cancel),
                    )),
                    _ => None,
                };
                Reply::of(Answering::Stream(Frames {
                    frames,
                    _slot: Some(slot),
                    cancelled,
                }))
            }
            Served::Running(fut) => {
                let (running, inflight) = match (cancel, &self.held) {
                    (Some(cancel), Some(held)) => {
                        let guard = self
                            .shared
                            .inflight
                            .register(self.shared.inflight.key(&held.scope, &id), cancel.clone());
                        let fut: BoxFuture<Option<Outcome>> = Box::pin(async move {
                            // Cancellation first: a function that stops when cancelled
                            // finishes at the same moment, and its result must not be sent.
                            tokio::select! {
                                biased;
                                () = cancel.cancelled() => None,
                                out = fut => Some(out),
                            }
                        });
                        (Running::Cancellable(fut), Some(guard))
                    }
                    _ => (Running::Plain(fut), None),
                };
                let run = Run {
                    id: Some(id),
                    settle: |e| e.settled(Era::Modern),
                    running,
                    slot: Some(slot),
                    _inflight: inflight,
                };
                Reply::of(Answering::Later(run, messages))
            }
        }
    }

    /// `initialize`: opens a handshake session (a held connection's own, or a new one whose
    /// signed id the reply carries).
    fn initialize(
        &self,
        id: RequestId,
        params: &Params<'_>,
        extensions: http::Extensions,
    ) -> Reply {
        let principal = self.shared.principal_of(&extensions);
        let transport = self.transport.unwrap_or("memory");
        let Some(held) = &self.held else {
            let owner = self.shared.owner_of(&extensions);
            return match self
                .shared
                .initialize(&id, params, principal, owner, None, transport)
            {
                Ok((result, session)) => {
                    let sid = self.shared.sessions.mint(&session);
                    Reply::now(Era::Legacy, Some(id), Ok(Bytes::from(result)))
                        .with_session_id(Some(sid))
                }
                Err(e) => Reply::error(Era::Legacy, Some(id), e),
            };
        };
        match self.shared.initialize(
            &id,
            params,
            principal,
            held.scope.clone(),
            Some(held.scope.clone()),
            transport,
        ) {
            Ok((result, mut session)) => {
                // The connection's session lasts as long as the connection.
                session.expires = u64::MAX;
                let first = lock(&held.session).replace(Arc::new(session)).is_none();
                if first {
                    self.forward_events(held);
                }
                Reply::now(Era::Legacy, Some(id), Ok(Bytes::from(result)))
            }
            Err(e) => Reply::error(Era::Legacy, Some(id), e),
        }
    }

    /// List changes and subscribed resource updates of a held connection's session, on its
    /// outbound channel.
    fn forward_events(&self, held: &Held) {
        let events = self.shared.session_events(&held.scope, OnLag::Skip);
        let out = held.out.clone();
        let all = held.all.clone();
        held.tasks.spawn(async move {
            use futures_util::StreamExt as _;
            let mut events = std::pin::pin!(events);
            loop {
                let frame = tokio::select! {
                    f = events.next() => f,
                    () = all.cancelled() => return,
                };
                match frame {
                    Some(Frame::Message(m)) => {
                        if out.send(m).await.is_err() {
                            return;
                        }
                    }
                    Some(Frame::KeepAlive) => {}
                    None => return,
                }
            }
        });
    }

    /// The session a per-request connection's message names: `Ok(None)` without an
    /// `Mcp-Session-Id`, 404 when the id is not one this server issued, has expired or ended,
    /// or belongs to another caller.
    fn named_session(
        &self,
        hints: &Hints<'_>,
        extensions: &http::Extensions,
    ) -> Result<Option<Arc<Session>>, RpcError> {
        let Some(raw) = hints.headers.and_then(|h| h.session_id.first) else {
            return Ok(None);
        };
        // As text without `to_str`'s walk over a long token: the cache compares it whole and
        // the signature check reads it, so a byte that is no visible ASCII fails there.
        let token = std::str::from_utf8(raw.as_bytes().trim_ascii()).unwrap_or("");
        let verified = self.shared.sessions.verify(token).and_then(|s| {
            // A session opened by one caller is nobody else's: not another caller's, and not
            // an anonymous caller's either (nor the reverse).
            if self.shared.same_caller(s.principal.as_deref(), extensions) {
                Ok(s)
            } else {
                Err(Refused::Foreign)
            }
        });
        verified.map(Some).map_err(|why| {
            let reason = match why {
                Refused::Invalid => "is not a session of this server",
                Refused::Expired => "has expired",
                Refused::Ended => "was ended",
                Refused::Foreign => "belongs to another caller",
            };
            RpcError::new(
                code::SESSION_NOT_FOUND,
                format!("Session not found: the Mcp-Session-Id {reason}; start a new session with `initialize`"),
            )
            .with_status(404)
        })
    }

    /// A message that belongs to a handshake session: a request (its params read when its
    /// door was decided), a notification or a client's response.
    fn session_message(
        &self,
        message: Incoming<'_>,
        params: Option<Params<'_>>,
        hints: &Hints<'_>,
        bytes: usize,
        era_hint: Era,
        extensions: http::Extensions,
    ) -> Reply {
        if let Some(held) = &self.held {
            return self.held_message(held, message, params, hints, bytes, extensions);
        }
        let session = match self.named_session(hints, &extensions) {
            Ok(Some(s)) => s,
            // JSON-RPC: an error names the request whenever its id could be read.
            Err(e) => return Reply::error(Era::Legacy, message.request_id().cloned(), e),
            Ok(None) => {
                return match message {
                    // A 2026-07-28 client has no notifications to send over HTTP; accept and
                    // ignore.
                    Incoming::Notification { .. } if era_hint == Era::Modern => {
                        Reply::of(Answering::Accepted)
                    }
                    Incoming::Request { id, .. } => Reply::error(
                        Era::Legacy,
                        Some(id),
                        RpcError::invalid_request(
                            "Bad Request: no Mcp-Session-Id; start a session with `initialize`, or send a 2026-07-28 request (params._meta with io.modelcontextprotocol/protocolVersion)",
                        )
                        .with_status(400),
                    ),
                    _ => Reply::error(
                        Era::Legacy,
                        None,
                        RpcError::invalid_request(
                            "Bad Request: no Mcp-Session-Id; notifications and responses belong to a session",
                        )
                        .with_status(400),
                    ),
                };
            }
        };
        // A request of the session holds a slot while it runs; its notifications and
        // responses are handled at once.
        let slot = match &message {
            Incoming::Request { id, .. } => match self.slots(1, bytes, Some(&session.sid)) {
                Ok(s) => Some(s),
                Err(e) => return Reply::error(Era::Legacy, Some(id.clone()), e),
            },
            _ => None,
        };
        if let Some(headers) = hints.headers
            && let Err(e) = routing::check_session_version(session.revision, headers)
        {
            return Reply::error(Era::Legacy, message.request_id().cloned(), e);
        }
        let refreshed = self
            .shared
            .sessions
            .needs_refresh(&session)
            .then(|| self.shared.sessions.mint(&session));
        match message {
            Incoming::Notification { method, params } => {
                self.shared
                    .session_notification(&session.sid, &method, params);
                Reply::of(Answering::Accepted).with_session_id(refreshed)
            }
            Incoming::Response { id, outcome } => {
                self.shared.session_answer(&session.sid, &id, outcome);
                Reply::of(Answering::Accepted).with_session_id(refreshed)
            }
            Incoming::Request {
                id,
                method,
                params: raw,
            } => {
                let span = tracing::Span::current();
                span.record("method", &*method);
                span.record("revision", session.revision.as_str());
                let params = params.map_or_else(|| Params::parse(raw), Ok);
                // A call of a function that does not take the `Context` sends nothing before
                // its answer: no response stream, no questions.
                let sends = params
                    .as_ref()
                    .is_ok_and(|p| self.shared.may_send(&method, p));
                let (sink, messages) = self.sink(hints, sends);
                let mut inbound = self.inbound(sink, extensions);
                inbound.quiet = !sends;
                // `session::respond` polls the run before anything else of this connection.
                inbound.polled_at_once = true;
                let started = self.shared.session_request(
                    &session,
                    &session.sid,
                    id.clone(),
                    &method,
                    params,
                    inbound,
                );
                match started {
                    Started::Done(out, Some(changed)) => {
                        let sid = self.shared.sessions.mint(&changed);
                        Reply::in_session(id, out).with_session_id(Some(sid))
                    }
                    Started::Done(out, None) => {
                        Reply::in_session(id, out).with_session_id(refreshed)
                    }
                    Started::Running(fut) => {
                        let run = Run {
                            id: Some(id),
                            settle: RpcError::in_session,
                            running: Running::Cancellable(fut),
                            slot,
                            _inflight: None,
                        };
                        let mut reply =
                            Reply::of(Answering::Later(run, messages)).with_session_id(refreshed);
                        reply.resumable = Some(StreamOwner::of(&session));
                        reply
                    }
                }
            }
        }
    }

    /// A message of a held connection that is no stateless request.
    fn held_message(
        &self,
        held: &Held,
        message: Incoming<'_>,
        params: Option<Params<'_>>,
        hints: &Hints<'_>,
        bytes: usize,
        extensions: http::Extensions,
    ) -> Reply {
        let (id, method, raw) = match message {
            Incoming::Notification { method, params } => {
                self.shared
                    .session_notification(&held.scope, &method, params);
                return Reply::of(Answering::Accepted);
            }
            Incoming::Response { id, outcome } => {
                self.shared.session_answer(&held.scope, &id, outcome);
                return Reply::of(Answering::Accepted);
            }
            Incoming::Request { id, method, params } => (id, method, params),
        };
        let Some(session) = lock(&held.session).clone() else {
            return if method == Method::Ping.as_str() {
                Reply::now(Era::Legacy, Some(id), Ok(Bytes::from_static(b"{}")))
            } else {
                Reply::error(
                    Era::Legacy,
                    Some(id),
                    RpcError::invalid_params(
                        "Invalid params: no `_meta`; send 2026-07-28 requests with params._meta (io.modelcontextprotocol/protocolVersion, io.modelcontextprotocol/clientCapabilities), or `initialize` first",
                    ),
                )
            };
        };
        // At most `max_requests_per_session` run at once: the connection is the session.
        let slot = match self.slots(1, bytes, None) {
            Ok(s) => s,
            Err(e) => return Reply::error(Era::Legacy, Some(id), e),
        };
        let (sink, _) = self.sink(hints, true);
        let inbound = self.inbound(sink, extensions);
        let params = params.map_or_else(|| Params::parse(raw), Ok);
        match self.shared.session_request(
            &session,
            &held.scope,
            id.clone(),
            &method,
            params,
            inbound,
        ) {
            Started::Done(out, changed) => {
                if let Some(changed) = changed {
                    *lock(&held.session) = Some(Arc::new(*changed));
                }
                Reply::in_session(id, out)
            }
            Started::Running(fut) => Reply::of(Answering::Later(
                Run {
                    id: Some(id),
                    settle: RpcError::in_session,
                    running: Running::Cancellable(fut),
                    slot: Some(slot),
                    _inflight: None,
                },
                None,
            )),
        }
    }

    /// A 2025-03-26 session's batch: one array of responses, in order.
    fn batch(
        &self,
        body: &[u8],
        hints: &Hints<'_>,
        era_hint: Era,
        extensions: http::Extensions,
    ) -> Reply {
        let (session, scope) = match &self.held {
            Some(held) => match lock(&held.session).clone() {
                Some(s) => (s, held.scope.clone()),
                None => return Reply::error(Era::Legacy, None, batch_without_session()),
            },
            None => match self.named_session(hints, &extensions) {
                Ok(Some(s)) => {
                    let sid = s.sid.clone();
                    (s, sid)
                }
                Ok(None) => return Reply::error(era_hint, None, batch_without_session()),
                Err(e) => return Reply::error(Era::Legacy, None, e),
            },
        };
        if let Some(headers) = hints.headers
            && let Err(e) = routing::check_session_version(session.revision, headers)
        {
            return Reply::error(Era::Legacy, None, e);
        }
        // A batch's requests may always send messages (their client posted a batch in a
        // session that streams).
        let (sink, messages) = match self.sink(hints, true) {
            (None, None) if self.held.is_none() => {
                let (tx, rx) = mpsc::channel::<Bytes>(self.shared.config.limits.stream_buffer);
                (Some(tx), Some(rx))
            }
            other => other,
        };
        let inbound = self.inbound(sink, extensions);
        let batch = match self
            .shared
            .batch(&session, body, &scope, self.caller, inbound)
        {
            Ok(b) => b,
            Err(e) => return Reply::error(Era::Legacy, None, e),
        };
        let session_id = match (batch.changed, &self.held) {
            (Some(changed), Some(held)) => {
                *lock(&held.session) = Some(Arc::new(*changed));
                None
            }
            (Some(changed), None) => Some(self.shared.sessions.mint(&changed)),
            (None, _) => None,
        };
        let mut reply = match batch.answer {
            None => Reply::of(Answering::Accepted),
            // The batch's answer holds its request slots.
            Some(all) => Reply::of(Answering::Later(
                Run {
                    id: None,
                    settle: RpcError::in_session,
                    running: Running::Batch(all),
                    slot: None,
                    _inflight: None,
                },
                messages,
            )),
        }
        .with_session_id(session_id);
        if self.held.is_none() && matches!(reply.answer, Answering::Later(..)) {
            reply.resumable = Some(StreamOwner::of(&session));
        }
        reply
    }

    /// A per-request connection's session stream (Streamable HTTP GET): the session its
    /// headers name, with a stream slot. `Ok(None)` without a session.
    pub(crate) fn session_stream(
        &self,
        hints: &Hints<'_>,
    ) -> Result<Option<SessionStream>, RpcError> {
        let Some(session) = self.named_session(hints, &self.extensions)? else {
            return Ok(None);
        };
        if let Some(v) = hints.headers.and_then(|h| h.protocol_version.first)
            && v.to_str().map(str::trim).ok() != Some(session.revision.as_str())
        {
            return Err(RpcError::invalid_request(
                "Bad Request: MCP-Protocol-Version is not this session's revision",
            )
            .with_status(400));
        }
        // A resumed stream and the standalone stream alike count against `max_streams`.
        let slot = self.shared.stream_slot(self.caller)?;
        Ok(Some(SessionStream {
            shared: self.shared.clone(),
            // After a restart: the lists that changed since the process before (`server/dev.rs`).
            restarted: self.shared.restart_notices(&session),
            // Ends when the session's caller is signed out.
            revoked: session.principal.clone().map(|p| self.shared.live.watch(p)),
            sid: session.sid.clone(),
            slot,
        }))
    }

    /// Ends the session a per-request connection's headers name (Streamable HTTP DELETE),
    /// here and on every replica. `Ok(false)` without a session.
    pub(crate) fn end_session(&self, hints: &Hints<'_>) -> Result<bool, RpcError> {
        let Some(session) = self.named_session(hints, &self.extensions)? else {
            return Ok(false);
        };
        self.shared.end_session(&session);
        tracing::debug!("handshake session ended by DELETE");
        Ok(true)
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        if let Some(held) = self.held.take() {
            self.end(&held);
            held.closed.cancel();
        }
    }
}

/// A handshake session's stream, its slot taken: the session's events, or (the transport
/// keeps them) a response stream resumed.
pub(crate) struct SessionStream {
    shared: Arc<Shared>,
    /// Notifications the standalone stream opens with (list changes after a restart).
    restarted: Vec<Bytes>,
    /// The session's caller's hold: the stream ends when the caller is signed out.
    revoked: Option<crate::server::revocation::Watch>,
    /// The session's id.
    pub sid: String,
    slot: Slot,
}

impl SessionStream {
    /// The session's standalone stream of notifications: list changes, and updates of the
    /// resources it subscribed to. It begins with a keep-alive and ends when a newer stream of
    /// the session replaces it, the session ends, or the server shuts down.
    pub(crate) fn events(self) -> Frames {
        let frames = self.shared.session_events(&self.sid, OnLag::End);
        use futures_util::StreamExt as _;
        let restarted = futures_util::stream::iter(self.restarted.into_iter().map(Frame::Message));
        let revoked = self.revoked;
        let frames = restarted.chain(frames).take_until(async move {
            match revoked {
                Some(watch) => watch.revoked().await,
                None => std::future::pending().await,
            }
        });
        Frames {
            frames: Box::new(Box::pin(frames)),
            _slot: Some(self.slot),
            cancelled: None,
        }
    }

    /// The stream slot, for a stream the transport keeps itself.
    pub(crate) fn slot(self) -> Slot {
        self.slot
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

/// Locks a mutex, recovering from a poisoned one (nothing in it is left half-made).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Whether Streamable HTTP serves a POST with these headers and params statelessly.
#[cfg_attr(not(feature = "internals"), allow(dead_code))]
pub(crate) fn is_stateless(headers: &HeaderMap, params: &Params<'_>) -> bool {
    routing::is_stateless(headers, params)
}
