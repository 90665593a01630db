//! The port between the engine and every transport: the types a transport sees.
//!
//! A transport owns its framing and its wire — Streamable HTTP its admission, statuses, SSE and
//! resumption and the session id on the wire; stdio its lines; a user's transport whatever
//! moves its messages — and hands every message it receives to its [`Connection`]. The
//! connection decides everything else, once for every transport: the door a message goes
//! through (`routing.rs`), then the stateless door (`modern.rs`) or the session door
//! (`legacy.rs`), which take the slots and quotas and serve `initialize`, batches, the listen
//! slot and cancellation. It answers with one [`Reply`]; a connection that holds its peer's
//! outbound channel (stdio, a socket) delivers replies itself.
//!
//! A connection is carried one of two ways (`carrier.rs`), which the doors ask and never
//! look inside:
//! - **held**: it keeps its peer's handshake session itself, writes every message it sends to
//!   one [`Outbound`] channel, runs what takes time on tasks of its own and cancels them when
//!   it closes (stdio, a Unix socket, any message stream; [`Service::connect`](crate::Service::connect));
//! - **per request**: one Streamable HTTP POST (or GET, DELETE), whose session is named by a
//!   signed id in its headers; the reply goes back in the HTTP response.
//!
//! Transports import this module, and what lies below the server, and nothing else of the
//! engine. Nothing here is re-exported from elsewhere.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use futures_util::Stream;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::Outcome;
use super::carrier::Carrier;
use crate::error::Error;
use crate::handler::context::{Sink, Transport};
use crate::protocol::Era;
use crate::protocol::headers::RequestHeaders;
use crate::protocol::jsonrpc::{self, RequestId, RpcError};
use crate::quota::{Flight, Key, PeerAddr, Slot};
use crate::server::Shared;
use crate::server::inflight::InflightGuard;
use crate::server::session::Session;

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
        self.0.admission.caller_key(extensions)
    }

    /// Works out the caller of a request whose token was checked (its name and digest, once:
    /// everything after reads them from its `extensions`), and its key as `caller_key`.
    pub(crate) fn identify(&self, extensions: &mut http::Extensions) -> Key {
        self.0.callers.identify(extensions);
        self.0.admission.caller_key(extensions)
    }

    /// `bytes` of a request in flight for `caller` (a body being received), among
    /// `Limits::max_request_bytes_per_client` and `max_request_bytes`.
    pub(crate) fn flight(&self, caller: Key, bytes: usize) -> Result<Flight, RpcError> {
        self.0.admission.flight(caller, bytes)
    }

    /// Grows `flight` to `total` bytes, under the same limits.
    pub(crate) fn grow_flight(&self, flight: &mut Flight, total: usize) -> Result<(), RpcError> {
        self.0.admission.grow_flight(flight, total)
    }

    /// Whose share of the connection budget a network peer takes (before anything of its
    /// requests is read: the address, or its network, never a principal).
    pub(crate) fn address_key(&self, ip: std::net::IpAddr) -> Key {
        self.0.admission.address_key(ip)
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
        self.0.callers.caller_from_env().await
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
    kind: Transport,
    extensions: http::Extensions,
    questions: bool,
}

impl Peer {
    /// A peer reached over `transport`: its name in telemetry (`network.transport`: `tcp`,
    /// `pipe`, `unix`, …).
    pub fn new(transport: &'static str) -> Peer {
        Peer {
            transport: Some(transport),
            kind: Transport::Stream,
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

    /// A peer on stdio (what `McpRequest::transport` of its requests reads).
    pub(crate) fn stdio(mut self) -> Peer {
        self.kind = Transport::Stdio;
        self
    }

    /// A peer that names no transport (the in-memory test client).
    pub(crate) fn in_memory() -> Peer {
        Peer {
            transport: None,
            kind: Transport::Stream,
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

/// sent (the client cancelled it). It holds the request's slots until it ends.
pub(crate) struct Run {
    pub(super) id: Option<RequestId>,
    /// What the request's error is sent with: its era's status, or a session's 200.
    pub(super) settle: fn(RpcError) -> RpcError,
    pub(super) running: super::Running,
    pub(super) slot: Option<Slot>,
}

/// The frames of a long-lived stream, holding its stream slot until it ends.
pub(crate) struct Frames {
    pub(super) frames: Box<dyn Stream<Item = Frame> + Send + Unpin + 'static>,
    pub(super) _slot: Option<Slot>,
    /// On a held connection, the client may cancel the stream by its request's id: it then
    /// ends at once.
    pub(super) cancelled: Option<(
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

/// One message of a long-lived stream, or a keep-alive tick.
pub(crate) enum Frame {
    /// A JSON-RPC message (a notification, or a listen stream's final result).
    Message(Bytes),
    /// Nothing happened for a while.
    KeepAlive,
}

impl Frame {
    /// The message, if this is one.
    pub(super) fn message(self) -> Option<Bytes> {
        match self {
            Frame::Message(m) => Some(m),
            Frame::KeepAlive => None,
        }
    }
}

/// -32000 with HTTP 429: a client is over its share of concurrent work.
pub(crate) fn too_many(what: &str) -> RpcError {
    RpcError::new(
        jsonrpc::code::TRANSPORT_REFUSED,
        format!("Too Many Requests: {what}; wait for one to finish"),
    )
    .with_status(429)
}

/// -32000 with HTTP 503: a limit of concurrent work is reached.
pub(crate) fn busy(what: &str) -> RpcError {
    RpcError::new(
        jsonrpc::code::TRANSPORT_REFUSED,
        format!("Service Unavailable: the server is at its limit of {what}; retry shortly"),
    )
    .with_status(503)
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
    pub(super) shared: Arc<Shared>,
    pub(super) transport: Option<&'static str>,
    /// What carries it, as its transport said (HTTP, stdio, another stream).
    pub(super) kind: Transport,
    pub(super) extensions: http::Extensions,
    pub(super) caller: Key,
    pub(super) questions: bool,
    /// A held connection, or one HTTP request: what the doors ask.
    pub(super) carrier: Carrier,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("transport", &self.transport)
            .field("scope", &self.carrier.scope())
            .finish_non_exhaustive()
    }
}

/// How many messages a held connection queues for its peer before a request that sends
/// waits.
const OUTBOUND_BUFFER: usize = 1024;

impl Connection {
    fn open(shared: Arc<Shared>, mut peer: Peer) -> (Connection, Outbound) {
        let (out, rx) = mpsc::channel(OUTBOUND_BUFFER);
        let closed = CancellationToken::new();
        shared.callers.identify(&mut peer.extensions);
        let caller = shared.admission.caller_key(&peer.extensions);
        let conn = Connection {
            shared,
            transport: peer.transport,
            kind: peer.kind,
            extensions: peer.extensions,
            caller,
            questions: peer.questions,
            carrier: Carrier::held(peer.transport, out, closed.clone()),
        };
        (conn, Outbound { rx, closed })
    }

    /// The connection of one Streamable HTTP request: its session (if any) is named by the
    /// request's headers. `caller` is `Engine::identify` of `extensions`.
    pub(crate) fn for_request(
        engine: &Engine,
        transport: &'static str,
        mut extensions: http::Extensions,
        caller: Key,
    ) -> Connection {
        // Once per request: a transport that identified the caller already left it there.
        engine.0.callers.identify(&mut extensions);
        Connection {
            shared: engine.0.clone(),
            transport: Some(transport),
            kind: Transport::Http,
            extensions,
            caller,
            questions: true,
            carrier: Carrier::Request,
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
        let carrier = std::mem::replace(&mut self.carrier, Carrier::Request);
        if let Some(ended) = carrier.end(&self.shared) {
            ended.drained().await;
        }
    }

    /// Sends a reply on a held connection's outbound channel: now, or when its request ends.
    async fn deliver(&self, reply: Reply) {
        match reply.answer {
            Answering::Accepted => {}
            Answering::Now(answer) => self.carrier.send(Bytes::from(answer.to_bytes())).await,
            Answering::Later(run, _) => self
                .carrier
                .spawn_answer(async move { run.await.map(|a| Bytes::from(a.to_bytes())) }),
            Answering::Stream(frames) => {
                use futures_util::StreamExt as _;
                self.carrier
                    .forward(frames.filter_map(|f| std::future::ready(f.message())));
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
}

impl Drop for Connection {
    fn drop(&mut self) {
        let carrier = std::mem::replace(&mut self.carrier, Carrier::Request);
        if let Some(ended) = carrier.end(&self.shared) {
            ended.now();
        }
    }
}

/// A handshake session's stream, its slot taken: the session's events, or (the transport
/// keeps them) a response stream resumed.
pub(crate) struct SessionStream {
    pub(super) shared: Arc<Shared>,
    /// Notifications the standalone stream opens with (list changes after a restart).
    pub(super) restarted: Vec<Bytes>,
    /// The session's caller's hold: the stream ends when the caller is signed out.
    pub(super) revoked: Option<crate::server::revocation::Watch>,
    /// The session's id.
    pub sid: String,
    pub(super) slot: Slot,
}
