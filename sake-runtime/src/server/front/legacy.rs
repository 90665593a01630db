//! The handshake revisions in the front: `initialize`, and the messages of a session whatever
//! the transport: `ping`, `logging/setLevel`, resource subscriptions, and everything the
//! dispatcher serves, with the session's revision, capabilities and log level, and
//! server-to-client requests through the transport's stream.

use std::sync::Arc;

use bytes::Bytes;
use futures_util::StreamExt as _;
use serde_json::json;
use serde_json::value::RawValue;

use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::carrier::Opened;
use super::port::{
    Answering, Connection, Frame, Frames, Hints, Reply, Run, SessionStream, StreamOwner,
};
use super::routing;
pub(crate) use super::session_run::SessionRun;
use super::session_run::Watch;
use super::telemetry::{Call, Telemetry};
use super::{Inbound, OnLag, Outcome, Running};
use crate::handler::context::RequestParts;
use crate::handler::input::{InputChannel, LegacyPeer, Pending};
use crate::protocol::Era;
use crate::protocol::jsonrpc::{self, Incoming, RequestId, RpcError, clip, code};
use crate::protocol::meta::{ClientInfo, Params, RequestMeta, parse_legacy_meta};
use crate::protocol::methods::Method;
use crate::protocol::render::{self, Cache, Shape};
use crate::protocol::types::{Implementation, LoggingLevel};
use crate::protocol::version::Revision;
use crate::quota::Slot;
use crate::server::Shared;
use crate::server::dispatch::{Dispatched, raw_str};
use crate::server::hub::SubscribeRefused;
use crate::server::inflight::Inflight;
use crate::server::session::{Refused, Session, now_secs};

/// What one request of a session gave.
pub(crate) enum Started {
    /// Answered at once: the outcome, and the session as it is now when the request changed
    /// it (`logging/setLevel`).
    Done(Outcome, Option<Box<Session>>),
    /// Running: resolves to the outcome, or to nothing when the client cancelled it.
    Running(SessionRun),
}

/// The error for a request in a session that `initialize` would open.
fn initialize_in_session() -> RpcError {
    RpcError::invalid_request(
        "`initialize` opens a session: send it first, without Mcp-Session-Id, and never in a batch",
    )
}

/// A request of a session, started.
impl Connection {
    /// Starts one request of a session. `scope` names the session (or the stdio connection
    /// that is one) for cancellation and for answers to the questions its functions ask.
    pub(super) fn session_request(
        &self,
        session: &Session,
        scope: &str,
        id: RequestId,
        method_name: &str,
        params: Result<Params<'_>, RpcError>,
        inbound: Inbound,
    ) -> Started {
        let shared = &self.shared;
        let rev = session.revision;
        let telemetry = Telemetry::open(
            Call {
                method: method_name,
                known: Method::parse_in(method_name, Era::Legacy),
                id: &id,
                rev,
                session: Some(&session.sid),
                params: params.as_ref().ok(),
                raw_meta: None,
                transport: inbound.transport,
            },
            &shared.catalog.registry,
            &shared.config,
        );
        let span = telemetry.span().clone();
        let _entered = span.enter();
        let done = |out: Outcome| {
            telemetry.finish(&out);
            Started::Done(out, None)
        };
        let params = match params {
            Ok(p) => p,
            Err(e) => return done(Err(e)),
        };
        let method = match super::resolve(shared, Era::Legacy, method_name) {
            Ok(m) => m,
            Err(e) => return done(Err(e)),
        };
        let empty = || Ok(empty_result(shared, rev));
        match method {
            Method::Initialize => done(Err(initialize_in_session())),
            Method::Ping => done(empty()),
            Method::SetLevel => {
                let level = params
                    .level
                    .and_then(raw_str)
                    .and_then(|l| LoggingLevel::parse(&l));
                match level {
                    None => done(Err(RpcError::invalid_params(
                        "Invalid params: `level` must be one of debug, info, notice, warning, error, critical, alert, emergency",
                    ))),
                    Some(level) => {
                        // The re-minted id carries the level to every replica; clients that
                        // keep the id of `initialize` (the TypeScript SDK, rmcp) find it in
                        // this process, until the session ends.
                        shared.hub.set_log_level(session, level);
                        let mut s = session.clone();
                        s.log_level = Some(level);
                        let out = empty();
                        telemetry.finish(&out);
                        Started::Done(out, Some(Box::new(s)))
                    }
                }
            }
            Method::ResourcesSubscribe | Method::ResourcesUnsubscribe => {
                let Some(uri) = params.uri.and_then(raw_str) else {
                    return done(Err(RpcError::invalid_params(
                        "Invalid params: missing `uri`",
                    )));
                };
                // Through the layers, when some apply to subscriptions: the subscription is
                // made once they let it through.
                if let Some(layered) = shared.invoker.stacks().and_then(|stacks| {
                    let mut parts = RequestParts::new(
                        rev,
                        RequestMeta {
                            client_capabilities: session.capabilities.clone(),
                            client_info: ClientInfo::shared(session.client_info()),
                            ..RequestMeta::default()
                        },
                    );
                    parts.extensions = inbound.extensions.clone();
                    parts.transport = inbound.kind;
                    crate::server::operations::admit(shared, stacks, &parts, method, &params)
                }) {
                    let owned = shared.clone();
                    let session = session.clone();
                    let uri = uri.into_owned();
                    let extensions = inbound.extensions;
                    let run = layered.around(
                        shared,
                        Box::pin(async move {
                            subscription(&owned, &session, method, &uri, &extensions)
                        }),
                    );
                    return Started::Running(SessionRun {
                        fut: run,
                        telemetry: Some(Box::new(telemetry)),
                        watch: Watch::Unregistered(None),
                    });
                }
                done(subscription(
                    shared,
                    session,
                    method,
                    &uri,
                    &inbound.extensions,
                ))
            }
            _ => {
                let (progress_token, raw_meta) = match parse_legacy_meta(params.meta) {
                    Ok(m) => m,
                    Err(e) => return done(Err(e)),
                };
                // The token a client's `notifications/cancelled` fires: made now for a
                // function that can observe it, else only once the request runs on past its
                // first poll (below).
                let cancel = match inbound.cancel {
                    Some(token) => Some(token),
                    None if inbound.quiet => None,
                    None => Some(CancellationToken::new()),
                };
                // The latest `logging/setLevel` this process saw wins over the one in an id a
                // client kept from earlier; without a sink no log message can be sent, and the
                // level is not looked up.
                let log_level = match &inbound.sink {
                    Some(_) => shared.hub.log_level(&session.sid).or(session.log_level),
                    None => session.log_level,
                };
                let mut parts = RequestParts::new(
                    rev,
                    RequestMeta {
                        client_capabilities: session.capabilities.clone(),
                        client_info: ClientInfo::shared(session.client_info()),
                        log_level,
                        progress_token,
                        raw: raw_meta,
                    },
                );
                parts.sink = inbound.sink;
                parts.extensions = inbound.extensions;
                parts.transport = inbound.kind;
                if !inbound.no_questions && !inbound.quiet {
                    parts.input = InputChannel::Legacy(LegacyPeer {
                        sid: scope.to_owned(),
                        pending: shared.pending.clone(),
                        timeout: shared.config.limits.input_timeout,
                    });
                }
                parts.cancel = cancel.clone();
                match shared.dispatch(parts, method, &params) {
                    Dispatched::Ready(out) => done(out),
                    Dispatched::Pending(fut) => {
                        // Only what runs can be cancelled: lists and the like never register.
                        // Where the transport polls the run at once, neither does a function
                        // that ends on that first poll (most do: nothing can reach it between
                        // that poll and its answer): it registers if it runs on, under the key
                        // made now, or, in a named session, one made then
                        // (`SessionRun::named`).
                        let watch = if !inbound.polled_at_once {
                            let token = cancel.unwrap_or_default();
                            let key = shared.inflight.key(scope, &id);
                            let guard = shared.inflight.register(key, token.clone());
                            Watch::Registered(token, guard)
                        } else if std::ptr::eq(scope, session.sid.as_str()) {
                            // Named by the session itself: the caller hands it over
                            // (`SessionRun::named`), and the key is made only if needed.
                            Watch::Unregistered(cancel)
                        } else {
                            let key = shared.inflight.key(scope, &id);
                            Watch::Late(cancel, shared.inflight.clone(), key)
                        };
                        // Nothing to record at its end: no span wants it, and no metric is
                        // kept.
                        #[cfg(not(feature = "otel"))]
                        let telemetry = (!span.is_disabled()).then(|| Box::new(telemetry));
                        #[cfg(feature = "otel")]
                        let telemetry = Some(Box::new(telemetry));
                        Started::Running(SessionRun {
                            fut,
                            telemetry,
                            watch,
                        })
                    }
                }
            }
        }
    }
}

/// `resources/subscribe` or `resources/unsubscribe` of `uri` in a session.
fn subscription(
    shared: &Shared,
    session: &Session,
    method: Method,
    uri: &str,
    extensions: &http::Extensions,
) -> Outcome {
    if method == Method::ResourcesUnsubscribe {
        shared.hub.unsubscribe(&session.sid, uri);
    } else {
        // Only to what the server serves, and the caller may read: a
        // subscription to anything else is memory held for nothing, or a
        // way around the resource's scopes.
        let caller = shared.admission.caller_key(extensions);
        // A proxied resource is followed upstream while the session holds the subscription.
        let following = match shared.catalog.followable_uri(extensions, uri, caller) {
            Ok(following) => following,
            Err(e) => return Err(render::error(session.revision, e)),
        };
        let held = shared.admission.hold(
            caller,
            uri.len() + super::HELD_OVERHEAD,
            "this subscription",
        )?;
        if let Err(SubscribeRefused::TooManyForSession(n)) =
            shared.hub.subscribe(session, uri, held, following)
        {
            return Err(RpcError::internal(format!(
                "This session holds {n} resource subscriptions, the most it may; unsubscribe from one first"
            )));
        }
    }
    Ok(empty_result(shared, session.revision))
}

/// A client's notification within a session.
pub(super) fn session_notification(
    inflight: &Inflight,
    scope: &str,
    method: &str,
    params: Option<&RawValue>,
) {
    if method == "notifications/cancelled"
        && let Ok(p) = Params::parse(params)
        && let Some(raw) = p.request_id
        && let Ok(id) = serde_json::from_str::<RequestId>(raw.get())
    {
        let cancelled = inflight.cancel(scope, &id);
        tracing::debug!(request = %jsonrpc::Logged(&id), cancelled, "client cancelled a request");
    }
    // `notifications/initialized`, `roots/list_changed`, progress: nothing to do.
}

/// A client's answer to a server-to-client request.
pub(super) fn session_answer(
    pending: &Pending,
    scope: &str,
    id: &RequestId,
    outcome: Result<&RawValue, &RawValue>,
) {
    let outcome = match outcome {
        Ok(result) => {
            Ok(serde_json::from_str::<serde_json::Value>(result.get()).unwrap_or_default())
        }
        Err(error) => {
            let e: serde_json::Value = serde_json::from_str(error.get()).unwrap_or_default();
            Err((
                e.get("code")
                    .and_then(serde_json::Value::as_i64)
                    .unwrap_or(i64::from(jsonrpc::code::INTERNAL_ERROR)),
                e.get("message")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
            ))
        }
    };
    if !pending.resolve(scope, id, outcome) {
        tracing::debug!(request = %jsonrpc::Logged(id), "a response for no waiting request was ignored");
    }
}

/// `initialize`: negotiates a handshake revision and opens a session, in the request's
/// span. Returns the result object and the session. `sid` is the id the session takes
/// (stdio: the connection's); a new one is drawn without it.
fn handshake(
    shared: &Shared,
    id: &RequestId,
    params: &Params<'_>,
    principal: Option<String>,
    owner: String,
    sid: Option<String>,
    transport: &'static str,
) -> Result<(Vec<u8>, Session), RpcError> {
    shared.admission.check_memory("a new session")?;
    // The revision the session will speak (the error of a malformed request is `initialize`'s own).
    let rev = params
        .protocol_version
        .and_then(raw_str)
        .map_or(Revision::LATEST_LEGACY, |v| Revision::negotiate(&v));
    let telemetry = Telemetry::open(
        Call {
            method: "initialize",
            known: Some(Method::Initialize),
            id,
            rev,
            session: None,
            params: Some(params),
            raw_meta: None,
            transport: Some(transport),
        },
        &shared.catalog.registry,
        &shared.config,
    );
    let _entered = telemetry.span().enter();
    let opened = open_session(shared, params, principal, owner, sid);
    match &opened {
        Ok((_, session)) => {
            telemetry.session_opened(&session.sid);
            telemetry.acknowledged();
        }
        Err(e) => telemetry.finish(&Err(e.clone())),
    }
    opened
}

/// The session `initialize` opens, and its result.
fn open_session(
    shared: &Shared,
    params: &Params<'_>,
    principal: Option<String>,
    owner: String,
    sid: Option<String>,
) -> Result<(Vec<u8>, Session), RpcError> {
    let requested = params.protocol_version.and_then(raw_str).ok_or_else(|| {
        RpcError::invalid_params(
            "Invalid params: `initialize` needs `protocolVersion` (a string such as \"2025-11-25\")",
        )
    })?;
    let revision = Revision::negotiate(&requested);
    // serde would read a struct from an array, by position: only objects are.
    let capabilities = match params.capabilities {
        None => Default::default(),
        Some(raw) if !raw.get().starts_with('{') => {
            return Err(RpcError::invalid_params(format!(
                "Invalid params: `capabilities` must be a ClientCapabilities object, not {}",
                clip(raw.get())
            )));
        }
        Some(raw) => serde_json::from_str(raw.get()).map_err(|e| {
            RpcError::invalid_params(format!(
                "Invalid params: `capabilities` is not a ClientCapabilities object: {e}"
            ))
        })?,
    };
    // Optional (some clients omit it), but never silently dropped when malformed.
    let client: Option<Implementation> = match params.client_info {
        None => None,
        Some(raw) => Some(
            serde_json::from_str(raw.get())
                .ok()
                .filter(|_| raw.get().starts_with('{'))
                .ok_or_else(|| {
                    RpcError::invalid_params(format!(
                        "Invalid params: `clientInfo` must be an object with `name` and `version`, not {}",
                        clip(raw.get())
                    ))
                })?,
        ),
    };
    let mut session = Session::new(revision, capabilities, client.as_ref())
        .ok_or_else(|| RpcError::internal("no randomness available for a session id"))?;
    session.principal = principal;
    session.owner = owner;
    if let Some(sid) = sid {
        session.sid = sid;
    }
    let mut result = json!({
        "protocolVersion": revision.as_str(),
        "capabilities": shared.capabilities,
        "serverInfo": render::implementation(&shared.config.info, revision),
    });
    if let Some(i) = &shared.config.instructions {
        result["instructions"] = serde_json::Value::String(i.clone());
    }
    tracing::debug!(revision = %revision, requested = %jsonrpc::Logged(&requested), "handshake session opened");
    Ok((
        render::result(revision, &shared.env, Shape::Plain, Cache::None, &result),
        session,
    ))
}

/// The session door: `initialize`, and the messages of a handshake session — held by the
/// connection, or named by an HTTP request's `Mcp-Session-Id`.
impl Connection {
    /// `initialize`: opens a handshake session (a held connection's own, or a new one whose
    /// signed id the reply carries).
    pub(super) fn initialize(
        &self,
        id: RequestId,
        params: &Params<'_>,
        extensions: http::Extensions,
    ) -> Reply {
        let principal = self.shared.callers.principal_of(&extensions);
        let transport = self.transport.unwrap_or("memory");
        // A held connection's session is its own, named by its scope.
        let scope = self.carrier.scope();
        let owner = scope.map_or_else(|| self.shared.callers.owner_of(&extensions), str::to_owned);
        match handshake(
            &self.shared,
            &id,
            params,
            principal,
            owner,
            scope.map(str::to_owned),
            transport,
        ) {
            Ok((result, session)) => {
                let reply = Reply::now(Era::Legacy, Some(id), Ok(Bytes::from(result)));
                match self.carrier.open_session(&self.shared, session) {
                    Opened::Named(sid) => reply.with_session_id(Some(sid)),
                    Opened::Held { first } => {
                        // List changes and subscribed resource updates, on the outbound
                        // channel.
                        if first && let Some(scope) = scope {
                            let events = super::session_events(&self.shared, scope, OnLag::Skip);
                            self.carrier
                                .forward(events.filter_map(|f| std::future::ready(f.message())));
                        }
                        reply
                    }
                }
            }
            Err(e) => Reply::error(Era::Legacy, Some(id), e),
        }
    }

    /// The session a per-request connection's message names: `Ok(None)` without an
    /// `Mcp-Session-Id`, 404 when the id is not one this server issued, has expired or ended,
    /// or belongs to another caller.
    fn named_session(
        &self,
        hints: &Hints<'_>,
        extensions: &http::Extensions,
        now: u64,
    ) -> Result<Option<Arc<Session>>, RpcError> {
        let Some(raw) = hints.headers.and_then(|h| h.session_id.first) else {
            return Ok(None);
        };
        // Its bytes, without `to_str`'s walk over a long token: the cache compares them whole,
        // and the signature check (of a token not remembered) refuses a byte that is no
        // visible ASCII.
        let token = raw.as_bytes().trim_ascii();
        let verified = self.shared.sessions.verify_at(token, now).and_then(|s| {
            // A session opened by one caller is nobody else's: not another caller's, and not
            // an anonymous caller's either (nor the reverse).
            if self
                .shared
                .callers
                .same_caller(s.principal.as_deref(), extensions)
            {
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
    pub(super) fn session_message(
        &self,
        message: Incoming<'_>,
        params: Option<Params<'_>>,
        hints: &Hints<'_>,
        bytes: usize,
        era_hint: Era,
        extensions: http::Extensions,
    ) -> Reply {
        if let Some(scope) = self.carrier.scope() {
            return self.held_message(scope, message, params, hints, bytes, extensions);
        }
        // The clock read once: the session's expiry, then whether its id is renewed.
        let now = now_secs();
        let session = match self.named_session(hints, &extensions, now) {
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
            Incoming::Request { id, .. } => match self.slots(1, bytes, Some(&session)) {
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
            .needs_refresh_at(&session, now)
            .then(|| self.shared.sessions.mint(&session));
        match message {
            Incoming::Notification { method, params } => {
                session_notification(&self.shared.inflight, &session.sid, &method, params);
                Reply::of(Answering::Accepted).with_session_id(refreshed)
            }
            Incoming::Response { id, outcome } => {
                session_answer(&self.shared.pending, &session.sid, &id, outcome);
                Reply::of(Answering::Accepted).with_session_id(refreshed)
            }
            Incoming::Request {
                id,
                method,
                params: raw,
            } => {
                // The transport's span is at `info`: unless something wants that level, it is
                // disabled, and not looked up.
                if tracing::level_enabled!(tracing::Level::INFO) {
                    let span = tracing::Span::current();
                    span.record("method", &*method);
                    span.record("revision", session.revision.as_str());
                }
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
                let started = self.session_request(
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
                    Started::Running(mut fut) => {
                        fut.named(&self.shared.inflight, &session, &id);
                        let run = Run {
                            id: Some(id),
                            settle: RpcError::in_session,
                            running: Running::Session(fut),
                            slot,
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
        scope: &str,
        message: Incoming<'_>,
        params: Option<Params<'_>>,
        hints: &Hints<'_>,
        bytes: usize,
        extensions: http::Extensions,
    ) -> Reply {
        let (id, method, raw) = match message {
            Incoming::Notification { method, params } => {
                session_notification(&self.shared.inflight, scope, &method, params);
                return Reply::of(Answering::Accepted);
            }
            Incoming::Response { id, outcome } => {
                session_answer(&self.shared.pending, scope, &id, outcome);
                return Reply::of(Answering::Accepted);
            }
            Incoming::Request { id, method, params } => (id, method, params),
        };
        let Some(session) = self.carrier.session() else {
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
        match self.session_request(&session, scope, id.clone(), &method, params, inbound) {
            Started::Done(out, changed) => {
                if let Some(changed) = changed {
                    self.carrier.keep(&self.shared, *changed);
                }
                Reply::in_session(id, out)
            }
            Started::Running(fut) => Reply::of(Answering::Later(
                Run {
                    id: Some(id),
                    settle: RpcError::in_session,
                    running: Running::Session(fut),
                    slot: Some(slot),
                },
                None,
            )),
        }
    }

    /// A 2025-03-26 session's batch: one array of responses, in order.
    pub(super) fn batch(
        &self,
        body: &[u8],
        hints: &Hints<'_>,
        era_hint: Era,
        extensions: http::Extensions,
    ) -> Reply {
        let session = match self.carrier.session() {
            Some(s) => s,
            None if !self.carrier.per_request() => {
                return Reply::error(Era::Legacy, None, batch_without_session());
            }
            None => match self.named_session(hints, &extensions, now_secs()) {
                Ok(Some(s)) => s,
                Ok(None) => return Reply::error(era_hint, None, batch_without_session()),
                Err(e) => return Reply::error(Era::Legacy, None, e),
            },
        };
        let scope = self.carrier.scope().unwrap_or(&session.sid).to_owned();
        if let Some(headers) = hints.headers
            && let Err(e) = routing::check_session_version(session.revision, headers)
        {
            return Reply::error(Era::Legacy, None, e);
        }
        // A batch's requests may always send messages (their client posted a batch in a
        // session that streams).
        let (sink, messages) = match self.sink(hints, true) {
            (None, None) => {
                let (tx, rx) = mpsc::channel::<Bytes>(self.shared.config.limits.stream_buffer);
                (Some(tx), Some(rx))
            }
            other => other,
        };
        let inbound = self.inbound(sink, extensions);
        let batch = match self.start_batch(&session, body, &scope, inbound) {
            Ok(b) => b,
            Err(e) => return Reply::error(Era::Legacy, None, e),
        };
        let session_id = batch
            .changed
            .and_then(|changed| self.carrier.keep(&self.shared, *changed));
        let mut reply = match batch.answer {
            None => Reply::of(Answering::Accepted),
            // The batch's answer holds its request slots.
            Some(all) => Reply::of(Answering::Later(
                Run {
                    id: None,
                    settle: RpcError::in_session,
                    running: Running::Batch(all),
                    slot: None,
                },
                messages,
            )),
        }
        .with_session_id(session_id);
        if self.carrier.per_request() && matches!(reply.answer, Answering::Later(..)) {
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
        let Some(session) = self.named_session(hints, &self.extensions, now_secs())? else {
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
        let slot = self.shared.admission.stream_slot(self.caller)?;
        Ok(Some(SessionStream {
            shared: self.shared.clone(),
            // After a restart: the lists that changed since the process before (`server/dev.rs`).
            restarted: self.shared.lifecycle.restart_notices(&session),
            // Ends when the session's caller is signed out.
            revoked: session
                .principal
                .clone()
                .map(|p| self.shared.callers.watch(p)),
            sid: session.sid.clone(),
            slot,
        }))
    }

    /// Ends the session a per-request connection's headers name (Streamable HTTP DELETE),
    /// here and on every replica. `Ok(false)` without a session.
    pub(crate) fn end_session(&self, hints: &Hints<'_>) -> Result<bool, RpcError> {
        let Some(session) = self.named_session(hints, &self.extensions, now_secs())? else {
            return Ok(false);
        };
        self.shared.lifecycle.end_session(&session);
        tracing::debug!("handshake session ended by DELETE");
        Ok(true)
    }
}

impl SessionStream {
    /// The session's standalone stream of notifications: list changes, and updates of the
    /// resources it subscribed to. It begins with a keep-alive and ends when a newer stream of
    /// the session replaces it, the session ends, or the server shuts down.
    pub(crate) fn events(self) -> Frames {
        let frames = super::session_events(&self.shared, &self.sid, OnLag::End);
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

/// `{}` rendered for a revision (`ping`, `logging/setLevel`, subscriptions).
fn empty_result(shared: &Shared, rev: Revision) -> Bytes {
    Bytes::from(render::result(
        rev,
        &shared.env,
        Shape::Plain,
        Cache::None,
        &json!({}),
    ))
}

/// The error for a batch outside a 2025-03-26 session.
pub(crate) fn batch_without_session() -> RpcError {
    RpcError::invalid_request(
        "a JSON-RPC batch (array) is only accepted inside a 2025-03-26 session",
    )
}
