//! What carries a connection's messages, as the doors ask it: a **held** connection (stdio, a
//! socket, a user's transport), which keeps its peer's handshake session itself and sends
//! everything on one outbound channel, or **one HTTP request**, whose session is named by a
//! signed id in its headers and whose reply goes back in the response.
//!
//! The doors (`modern.rs`, `legacy.rs`) and the routing step never look inside: they ask the
//! [`Carrier`] where a request's messages go, whose scope its slots and cancellations are
//! counted in, which session it already holds, and hand it a session that changed.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use bytes::Bytes;
use futures_util::Stream;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::handler::context::Sink;
use crate::protocol::headers::RequestHeaders;
use crate::protocol::jsonrpc::RequestId;
use crate::quota::Key;
use crate::server::Shared;
use crate::server::inflight::InflightGuard;
use crate::server::session::Session;

/// A held connection, or one HTTP request.
pub(crate) enum Carrier {
    Held(Held),
    /// One Streamable HTTP request (POST, GET, DELETE).
    Request,
}

/// A session opened on a connection.
pub(crate) enum Opened {
    /// Kept by a held connection; `first`: the connection had none before (its events are
    /// to be forwarded).
    Held { first: bool },
    /// Named by the signed id to hand to the client.
    Named(String),
}

/// What a held connection keeps: its peer's handshake session and everything it runs.
pub(crate) struct Held {
    /// Names the connection's in-flight requests, pending questions and subscriptions, and
    /// is the id of its session: one `Service` serves many connections, so it is unique.
    scope: String,
    /// The scope's quota key (`Admission::session_key`), made for its first request.
    scope_key: OnceLock<Key>,
    session: Mutex<Option<Arc<Session>>>,
    out: Sink,
    /// Fired when the connection closes: everything it runs stops.
    all: CancellationToken,
    /// Fired once what it ran has stopped: the outbound channel drains and ends.
    closed: CancellationToken,
    tasks: TaskTracker,
}

impl Carrier {
    /// A held connection over `transport` (`None`: in memory) that sends on `out`; `closed`
    /// fires once what it ran has stopped.
    pub(crate) fn held(
        transport: Option<&'static str>,
        out: Sink,
        closed: CancellationToken,
    ) -> Carrier {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Carrier::Held(Held {
            scope: format!(
                "{}-{}",
                transport.unwrap_or("memory"),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ),
            scope_key: OnceLock::new(),
            session: Mutex::new(None),
            out,
            all: CancellationToken::new(),
            closed,
            tasks: TaskTracker::new(),
        })
    }

    fn as_held(&self) -> Option<&Held> {
        match self {
            Carrier::Held(held) => Some(held),
            Carrier::Request => None,
        }
    }

    /// Whether this is one HTTP request (its session named by its headers, its requests'
    /// messages on a stream of the response, resumable in a session).
    pub(crate) fn per_request(&self) -> bool {
        matches!(self, Carrier::Request)
    }

    /// The scope a held connection's requests, questions and subscriptions are counted in
    /// (its session's id); `None` for one HTTP request (its session names them).
    pub(crate) fn scope(&self) -> Option<&str> {
        self.as_held().map(|h| h.scope.as_str())
    }

    /// The quota key of a held connection's scope, made by `make` for its first request and
    /// the same for every other; `None` for one HTTP request.
    pub(crate) fn scope_key(&self, make: impl FnOnce(&str) -> Key) -> Option<Key> {
        self.as_held()
            .map(|h| *h.scope_key.get_or_init(|| make(&h.scope)))
    }

    /// The handshake session a held connection holds (one HTTP request holds none: its
    /// headers name one).
    pub(crate) fn session(&self) -> Option<Arc<Session>> {
        self.as_held().and_then(|h| lock(&h.session).clone())
    }

    /// Whether a message is served statelessly when nothing else says: on a held connection
    /// that has no session yet.
    pub(crate) fn stateless_by_default(&self) -> bool {
        self.as_held()
            .is_some_and(|held| lock(&held.session).is_none())
    }

    /// Whether an `initialize` is sent inside a session: an HTTP request naming one (a held
    /// connection's `initialize` starts its session over).
    pub(crate) fn in_session(&self, headers: Option<&RequestHeaders<'_>>) -> bool {
        self.per_request() && headers.is_some_and(|h| h.session_id.first.is_some())
    }

    /// Where a held connection's requests send their messages: its outbound channel.
    pub(crate) fn outbound(&self) -> Option<Sink> {
        self.as_held().map(|h| h.out.clone())
    }

    /// A token `notifications/cancelled` may fire for a request (a held connection: its
    /// client cancels by id); `None` for one HTTP request.
    pub(crate) fn cancellable(&self) -> Option<CancellationToken> {
        self.as_held().map(|_| CancellationToken::new())
    }

    /// Registers `cancel` under the request's id in this connection's scope, until the guard
    /// drops.
    pub(crate) fn register(
        &self,
        shared: &Shared,
        id: &RequestId,
        cancel: CancellationToken,
    ) -> Option<InflightGuard> {
        let held = self.as_held()?;
        Some(
            shared
                .inflight
                .register(shared.inflight.key(&held.scope, id), cancel),
        )
    }

    /// Keeps `session` as the connection's, when it holds one: a changed session (a held
    /// connection stores it) or a new one. Returns the session's signed id to hand to the
    /// client on one HTTP request, `None` on a held connection.
    pub(crate) fn keep(&self, shared: &Shared, session: Session) -> Option<String> {
        match self {
            Carrier::Held(held) => {
                *lock(&held.session) = Some(Arc::new(session));
                None
            }
            Carrier::Request => Some(shared.sessions.mint(&session)),
        }
    }

    /// Opens a session `initialize` made: a held connection keeps it for as long as the
    /// connection lasts; one HTTP request hands out its signed id.
    pub(crate) fn open_session(&self, shared: &Shared, mut session: Session) -> Opened {
        match self {
            Carrier::Held(held) => {
                session.expires = u64::MAX;
                let first = lock(&held.session).replace(Arc::new(session)).is_none();
                Opened::Held { first }
            }
            Carrier::Request => Opened::Named(shared.sessions.mint(&session)),
        }
    }

    /// Sends a message on a held connection's outbound channel.
    pub(crate) async fn send(&self, message: Bytes) {
        if let Some(held) = self.as_held() {
            let _ = held.out.send(message).await;
        }
    }

    /// Runs `answer` on a held connection's tasks and sends what it yields, unless the
    /// connection closes first.
    pub(crate) fn spawn_answer(
        &self,
        answer: impl std::future::Future<Output = Option<Bytes>> + Send + 'static,
    ) {
        let Some(held) = self.as_held() else { return };
        let out = held.out.clone();
        let all = held.all.clone();
        held.tasks.spawn(async move {
            tokio::select! {
                biased;
                () = all.cancelled() => {}
                answer = answer => if let Some(answer) = answer {
                    let _ = out.send(answer).await;
                },
            }
        });
    }

    /// Sends `messages` on a held connection's outbound channel as they come, until they
    /// end, the peer goes away or the connection closes.
    pub(crate) fn forward(&self, messages: impl Stream<Item = Bytes> + Send + 'static) {
        let Some(held) = self.as_held() else { return };
        let out = held.out.clone();
        let all = held.all.clone();
        held.tasks.spawn(async move {
            use futures_util::StreamExt as _;
            let mut messages = std::pin::pin!(messages);
            loop {
                let message = tokio::select! {
                    m = messages.next() => m,
                    () = all.cancelled() => return,
                };
                let Some(message) = message else { return };
                if out.send(message).await.is_err() {
                    return;
                }
            }
        });
    }

    /// Ends a held connection: what it runs is cancelled, its session ends. What it returns
    /// ends the outbound channel, at once or once the connection's tasks have stopped.
    pub(crate) fn end(self, shared: &Shared) -> Option<Ended> {
        let Carrier::Held(held) = self else {
            return None;
        };
        held.all.cancel();
        shared.inflight.cancel_scope(&held.scope);
        shared.pending.end_session(&held.scope);
        shared.hub.end_session(&held.scope);
        Some(Ended {
            tasks: held.tasks,
            closed: held.closed,
        })
    }
}

/// A held connection that has ended: its outbound channel drains and ends when this says so.
pub(crate) struct Ended {
    tasks: TaskTracker,
    closed: CancellationToken,
}

impl Ended {
    /// Once what the connection ran has stopped.
    pub(crate) async fn drained(self) {
        self.tasks.close();
        self.tasks.wait().await;
        self.closed.cancel();
    }

    /// At once.
    pub(crate) fn now(self) {
        self.closed.cancel();
    }
}

/// Locks a mutex, recovering from a poisoned one (nothing in it is left half-made).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
