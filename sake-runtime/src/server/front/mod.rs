//! The front: the one place where a message becomes an answer, whatever carried it.
//!
//! A transport hands each message it reads to its [`Connection`](port::Connection) (the
//! port, `port.rs`), which decides its door ([`routing`]: stateless, or a handshake session),
//! takes its slots, and hands it on: [`modern`] serves a stateless request, [`legacy`]
//! `initialize` and the messages of a session; batches and a session's event stream are here.
//! They resolve the method in the era and check that the server offers it, check the version
//! of a stateless request, dispatch to the user's function, and render results, errors and
//! notifications for the request's revision.
//!
//! What stays in a transport is only its own: HTTP its admission, statuses, SSE framing and
//! resumption and the session id on the wire; stdio its lines.

pub(crate) mod carrier;
pub(crate) mod legacy;
pub(crate) mod modern;
pub(crate) mod port;
pub(crate) mod routing;
pub(crate) mod session_run;
pub(crate) mod telemetry;

use std::sync::Arc;

use bytes::Bytes;
use futures_util::Stream;
use serde_json::json;
use serde_json::value::RawValue;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use self::port::{Answer, Answering, Frame, Reply};
use super::Shared;
use super::session::Session;
use crate::handler::BoxFuture;
use crate::handler::context::Sink;
use crate::handler::events::Event;
use crate::protocol::jsonrpc::{self, Incoming, RequestId, RpcError};
use crate::protocol::methods::Method;
use crate::protocol::{Era, Revision};

/// A request's rendered result, or its error.
pub(crate) type Outcome = Result<Bytes, RpcError>;

/// The JSON-RPC response message of an outcome.
pub(crate) fn response(id: &RequestId, out: &Outcome) -> Vec<u8> {
    match out {
        Ok(result) => jsonrpc::result_bytes(id, result),
        Err(e) => jsonrpc::error_bytes(Some(id), e),
    }
}

/// What a [`Run`](port::Run) polls: a request's future as its door started it.
pub(crate) enum Running {
    /// A stateless request's outcome.
    Plain(BoxFuture<Outcome>),
    /// A request the client may cancel: its outcome, or nothing once cancelled.
    Cancellable(BoxFuture<Option<Outcome>>),
    /// A session's request (the client may cancel it).
    Session(session_run::SessionRun),
    /// A batch's framed array, or nothing when it answered nothing.
    Batch(BoxFuture<Option<Vec<u8>>>),
}

/// A run ends with its answer, and gives its slots back the moment it does.
impl std::future::Future for port::Run {
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
            Running::Session(f) => match std::pin::Pin::new(f).poll(cx) {
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
        Poll::Ready(answer)
    }
}

/// What a transport knows about a request besides its message.
#[derive(Default)]
pub(crate) struct Inbound {
    /// Where the messages a request sends before its result go (progress, logs, and on a
    /// handshake session server-to-client requests); `None` when the transport cannot deliver
    /// them (an HTTP client that does not accept SSE).
    pub sink: Option<Sink>,
    /// The HTTP request's extensions (empty elsewhere): where an authentication layer leaves
    /// the caller.
    pub extensions: http::Extensions,
    /// A token the transport keeps to cancel the request; a fresh one otherwise.
    pub cancel: Option<CancellationToken>,
    /// Whether a handshake session's function may ask the client questions (elicitation,
    /// sampling, roots). The in-memory test client cannot answer them.
    pub no_questions: bool,
    /// Whether the request's function neither sends anything before its answer nor observes
    /// a cancellation (a tool that does not take the `Context`): it gets no questions channel
    /// and no cancellation token of its own unless it runs on past its first poll.
    pub quiet: bool,
    /// Whether the transport polls the request's run as soon as it is handed back (a
    /// per-request HTTP connection), so that no cancellation can reach it before its first
    /// poll: it then registers for `notifications/cancelled` only if it runs on past that
    /// poll. Elsewhere (a held connection runs it on a task, behind which the next message
    /// may be read) it registers at once.
    pub polled_at_once: bool,
    /// What carries the request, as the `network.transport` of its span: `tcp` (HTTP) or
    /// `pipe` (stdio).
    pub transport: Option<&'static str>,
    /// What carries the request, as its transport said (what the layers read).
    pub kind: crate::handler::context::Transport,
}

/// The method `name` names in `era`, when the server offers it (advertised capabilities ⇔
/// handlers, [`Shared::offers`]); -32601 otherwise.
pub(crate) fn resolve(shared: &Shared, era: Era, name: &str) -> Result<Method, RpcError> {
    Method::parse_in(name, era)
        .filter(|m| shared.offers(m.needs()))
        .ok_or_else(|| RpcError::method_not_found(name))
}

/// The revision a stateless request names, when the server serves it statelessly;
/// -32022 listing the supported versions otherwise. A handshake revision's name gets a
/// hint: those are served after `initialize`.
pub(crate) fn stateless_revision(version: &str) -> Result<Revision, RpcError> {
    match Revision::parse(version).filter(|r| r.features().era == Era::Modern) {
        Some(rev) => Ok(rev),
        None => {
            let hint = if Revision::is_legacy_version_string(version) {
                "; handshake revisions are served after an `initialize` request, requests without a session need 2026-07-28"
            } else {
                ""
            };
            Err(RpcError::unsupported_version(
                version,
                &Revision::ALL.map(Revision::as_str),
                hint,
            ))
        }
    }
}

pub(crate) use crate::quota::Held;

/// The bookkeeping a held URI costs besides its bytes (its box, its set entry).
pub(crate) const HELD_OVERHEAD: usize = 64;

/// A 2025-03-26 batch, started: its requests run concurrently; the answer is one array.
pub(crate) struct Batch {
    /// The array of responses, once every request in it has ended; `None` when the batch held
    /// only notifications and responses (nothing to answer).
    pub answer: Option<BoxFuture<Option<Vec<u8>>>>,
    /// The session as it is now, when a request of the batch changed it
    /// (`logging/setLevel`).
    pub changed: Option<Box<Session>>,
}

/// The batches of a session's connection.
impl port::Connection {
    /// Starts a batch of a handshake session: refused unless the session's revision takes
    /// batches and the batch holds 1 to `max_batch_size` messages. Each message takes a
    /// request slot of the session (`scope`) and of the connection's caller; the answer holds
    /// them.
    pub(crate) fn start_batch(
        &self,
        session: &Session,
        body: &[u8],
        scope: &str,
        inbound: Inbound,
    ) -> Result<Batch, RpcError> {
        let limits = &self.shared.config.limits;
        let rev = session.revision;
        if !rev.features().batches {
            return Err(RpcError::invalid_request(format!(
                "JSON-RPC batches (arrays) were removed after 2025-03-26; this session speaks {rev}"
            ))
            .with_status(400));
        }
        let items: Vec<&RawValue> = serde_json::from_slice(body).map_err(RpcError::parse_error)?;
        if items.is_empty() {
            return Err(RpcError::invalid_request("an empty batch").with_status(400));
        }
        if items.len() > limits.max_batch {
            return Err(RpcError::invalid_request(format!(
                "a batch of {} messages exceeds this server's limit of {}; split it",
                items.len(),
                limits.max_batch
            ))
            .with_status(400));
        }
        let slot = self.shared.admission.request_slots(
            items.len(),
            body.len(),
            Some(scope),
            self.caller,
        )?;
        let mut runs: Vec<BoxFuture<Option<Vec<u8>>>> = Vec::new();
        let mut changed = None;
        for raw in items {
            match jsonrpc::decode_raw(raw) {
                Err(e) => {
                    let body = jsonrpc::error_bytes(e.id.as_ref(), &e.error);
                    runs.push(Box::pin(std::future::ready(Some(body))));
                }
                Ok(Incoming::Notification { method, params }) => {
                    legacy::session_notification(&self.shared.inflight, scope, &method, params);
                }
                Ok(Incoming::Response { id, outcome }) => {
                    legacy::session_answer(&self.shared.pending, scope, &id, outcome);
                }
                Ok(Incoming::Request { id, method, params }) => {
                    let inbound = Inbound {
                        sink: inbound.sink.clone(),
                        extensions: inbound.extensions.clone(),
                        cancel: None,
                        no_questions: inbound.no_questions,
                        quiet: false,
                        polled_at_once: false,
                        transport: inbound.transport,
                        kind: inbound.kind,
                    };
                    let current = changed.as_deref().unwrap_or(session);
                    let params = crate::protocol::meta::Params::parse(params);
                    let started =
                        self.session_request(current, scope, id.clone(), &method, params, inbound);
                    runs.push(match started {
                        legacy::Started::Done(out, now) => {
                            if now.is_some() {
                                changed = now;
                            }
                            Box::pin(std::future::ready(Some(response(&id, &out))))
                        }
                        legacy::Started::Running(fut) => {
                            Box::pin(async move { fut.await.map(|out| response(&id, &out)) })
                        }
                    });
                }
            }
        }
        if runs.is_empty() {
            return Ok(Batch {
                answer: None,
                changed,
            });
        }
        let answer: BoxFuture<Option<Vec<u8>>> = Box::pin(async move {
            let _slot = slot;
            let bodies: Vec<Vec<u8>> = futures_util::future::join_all(runs)
                .await
                .into_iter()
                .flatten()
                .collect();
            if bodies.is_empty() {
                return None;
            }
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
        Ok(Batch {
            answer: Some(answer),
            changed,
        })
    }
}

/// The notification of an event, tagged with a `subscriptions/listen` request's id when the
/// stream is one.
pub(crate) fn event_notification(event: &Event, listen: Option<&RequestId>) -> Bytes {
    let mut params = match event {
        Event::ResourceUpdated(uri) => json!({ "uri": &**uri }),
        _ => json!({}),
    };
    if let Some(id) = listen {
        params["_meta"] = json!({ crate::protocol::meta::SUBSCRIPTION_ID: id });
    }
    Bytes::from(jsonrpc::notification_bytes(event.method(), &params))
}

/// What a handshake session's event stream does when its client falls behind the bus.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OnLag {
    /// End the stream: an HTTP client reconnects with a new GET.
    End,
    /// Go on without the missed events (stdio: the one stream cannot be reopened).
    Skip,
}

/// Releases the session's standalone stream when the stream ends.
struct StreamClaim {
    hub: Arc<super::hub::Hub>,
    /// Fires when the server shuts down.
    shutdown: CancellationToken,
    sid: String,
    generation: u64,
    /// Fires when a newer stream of the session replaces this one, or the session ends.
    ended: CancellationToken,
}

impl Drop for StreamClaim {
    fn drop(&mut self) {
        self.hub.release_get_stream(&self.sid, self.generation);
    }
}

/// A handshake session's standalone stream of notifications: list changes, and updates of
/// the resources it subscribed to. It begins with a keep-alive (so that HTTP sends its
/// headers at once) and ends when a newer stream of the session replaces it, the session
/// ends, or the server shuts down.
pub(crate) fn session_events(
    shared: &Shared,
    sid: &str,
    on_lag: OnLag,
) -> impl Stream<Item = Frame> + Send + 'static {
    let (generation, ended) = shared.hub.claim_get_stream(sid);
    let events = shared.events.subscribe();
    let mut tick = tokio::time::interval(shared.config.keep_alive);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let claim = StreamClaim {
        hub: shared.hub.clone(),
        shutdown: shared.shutdown.clone(),
        sid: sid.to_owned(),
        generation,
        ended,
    };
    futures_util::stream::unfold(
        (events, tick, claim, true),
        move |(mut events, mut tick, claim, first)| async move {
            if first {
                // The first tick of an interval is immediate.
                tick.tick().await;
                return Some((Frame::KeepAlive, (events, tick, claim, false)));
            }
            loop {
                tokio::select! {
                    biased;
                    // Replaced by a newer stream, or the session ended.
                    () = claim.ended.cancelled() => return None,
                    // A graceful shutdown waits for open responses: end this one.
                    () = claim.shutdown.cancelled() => return None,
                    ev = events.recv() => match ev {
                        Ok(Event::ResourceUpdated(uri))
                            if !claim.hub.is_subscribed(&claim.sid, &uri) => continue,
                        Ok(ev) => {
                            let msg = event_notification(&ev, None);
                            return Some((Frame::Message(msg), (events, tick, claim, false)));
                        }
                        Err(broadcast::error::RecvError::Lagged(n)) if on_lag == OnLag::Skip => {
                            tracing::warn!(missed = n, "a client too slow for notifications missed some");
                            continue;
                        }
                        // Too slow to keep up: end the stream; the client reconnects.
                        Err(_) => return None,
                    },
                    _ = tick.tick() => return Some((Frame::KeepAlive, (events, tick, claim, false))),
                }
            }
        },
    )
}

/// The replies the doors make.
impl Reply {
    pub(crate) fn of(answer: Answering) -> Reply {
        Reply {
            answer,
            session_id: None,
            resumable: None,
        }
    }

    /// An answer known now, its error's status settled for `era`.
    pub(crate) fn now(era: Era, id: Option<RequestId>, out: Outcome) -> Reply {
        Reply::of(Answering::Now(Answer::One(
            id,
            out.map_err(|e| e.settled(era)),
        )))
    }

    pub(crate) fn error(era: Era, id: Option<RequestId>, e: RpcError) -> Reply {
        Reply::now(era, id, Err(e))
    }

    /// A session request's answer, known now: a JSON-RPC message with 200, whatever it
    /// holds but an authorization refusal (`RpcError::in_session`).
    pub(crate) fn in_session(id: RequestId, out: Outcome) -> Reply {
        Reply::of(Answering::Now(Answer::One(
            Some(id),
            out.map_err(RpcError::in_session),
        )))
    }

    pub(crate) fn with_session_id(mut self, id: Option<String>) -> Reply {
        if id.is_some() {
            self.session_id = id;
        }
        self
    }
}
