//! The handshake revisions in the front: `initialize`, and the messages of a session whatever
//! the transport: `ping`, `logging/setLevel`, resource subscriptions, and everything the
//! dispatcher serves, with the session's revision, capabilities and log level, and
//! server-to-client requests through the transport's stream.

use std::sync::Arc;
use std::task::Poll;

use bytes::Bytes;
use serde_json::json;
use serde_json::value::RawValue;

use tokio_util::sync::CancellationToken;
use tracing::Instrument as _;

use super::telemetry::Call;
use super::{Inbound, Outcome};
use crate::handler::BoxFuture;
use crate::handler::context::RequestParts;
use crate::handler::input::{InputChannel, LegacyPeer};
use crate::protocol::Era;
use crate::protocol::jsonrpc::{self, RequestId, RpcError, clip};
use crate::protocol::meta::{ClientInfo, Params, RequestMeta, parse_legacy_meta};
use crate::protocol::methods::Method;
use crate::protocol::render::{self, Cache, Shape};
use crate::protocol::types::{Implementation, LoggingLevel};
use crate::protocol::version::Revision;
use crate::server::Shared;
use crate::server::dispatch::{Dispatched, raw_str};
use crate::server::hub::SubscribeRefused;
use crate::server::inflight::InflightGuard;
use crate::server::session::Session;

/// What one request of a session gave.
pub(crate) enum Started {
    /// Answered at once: the outcome, and the session as it is now when the request changed
    /// it (`logging/setLevel`).
    Done(Outcome, Option<Box<Session>>),
    /// Running: resolves to the outcome, or to nothing when the client cancelled it.
    Running(BoxFuture<Option<Outcome>>),
}

/// The error for a request in a session that `initialize` would open.
fn initialize_in_session() -> RpcError {
    RpcError::invalid_request(
        "`initialize` opens a session: send it first, without Mcp-Session-Id, and never in a batch",
    )
}

impl Shared {
    /// Starts one request of a session. `scope` names the session (or the stdio connection
    /// that is one) for cancellation and for answers to the questions its functions ask.
    pub(crate) fn session_request(
        self: &Arc<Self>,
        session: &Session,
        scope: &str,
        id: RequestId,
        method_name: &str,
        params: Result<Params<'_>, RpcError>,
        inbound: Inbound,
    ) -> Started {
        let rev = session.revision;
        let telemetry = self.telemetry(Call {
            method: method_name,
            known: Method::parse_in(method_name, Era::Legacy),
            id: &id,
            rev,
            session: Some(&session.sid),
            params: params.as_ref().ok(),
            raw_meta: None,
            transport: inbound.transport,
        });
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
        let method = match self.resolve(Era::Legacy, method_name) {
            Ok(m) => m,
            Err(e) => return done(Err(e)),
        };
        let empty = || Ok(empty_result(self, rev));
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
                        self.hub.set_log_level(session, level);
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
                if method == Method::ResourcesUnsubscribe {
                    self.hub.unsubscribe(&session.sid, &uri);
                } else {
                    // Only to what the server serves, and the caller may read: a
                    // subscription to anything else is memory held for nothing, or a
                    // way around the resource's scopes.
                    if let Err(e) = self.followable_uri(&inbound.extensions, &uri) {
                        return done(Err(render::error(rev, e)));
                    }
                    let held = match self.hold(
                        &inbound.extensions,
                        uri.len() + super::HELD_OVERHEAD,
                        "this subscription",
                    ) {
                        Ok(held) => held,
                        Err(e) => return done(Err(e)),
                    };
                    if let Err(SubscribeRefused::TooManyForSession(n)) =
                        self.hub.subscribe(session, &uri, held)
                    {
                        return done(Err(RpcError::internal(format!(
                            "This session holds {n} resource subscriptions, the most it may; unsubscribe from one first"
                        ))));
                    }
                }
                done(empty())
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
                let mut parts = RequestParts::new(
                    rev,
                    RequestMeta {
                        client_capabilities: session.capabilities.clone(),
                        client_info: ClientInfo::shared(session.client_info()),
                        // The latest `logging/setLevel` this process saw wins over the one in
                        // an id a client kept from earlier.
                        log_level: self.hub.log_level(&session.sid).or(session.log_level),
                        progress_token,
                        raw: raw_meta,
                    },
                );
                parts.sink = inbound.sink;
                parts.extensions = inbound.extensions;
                if !inbound.no_questions && !inbound.quiet {
                    parts.input = InputChannel::Legacy(LegacyPeer {
                        sid: scope.to_owned(),
                        pending: self.pending.clone(),
                        timeout: self.config.limits.input_timeout,
                    });
                }
                parts.cancel = cancel.clone();
                match self.dispatch(parts, method, &params) {
                    Dispatched::Ready(out) => done(out),
                    Dispatched::Pending(mut fut) => {
                        // Only what runs can be cancelled: lists and the like never register.
                        // Where the transport polls the run at once, neither does a function
                        // that ends on that first poll (most do: nothing can reach it between
                        // that poll and its answer).
                        let inflight = self.inflight.clone();
                        let key = inflight.key(scope, &id);
                        let (cancel, mut guard, key) = if inbound.polled_at_once {
                            (cancel, None, Some(key))
                        } else {
                            let token = cancel.unwrap_or_default();
                            let guard: InflightGuard = inflight.register(key, token.clone());
                            (Some(token), Some(guard), None)
                        };
                        let running = async move {
                            if cancel.as_ref().is_some_and(CancellationToken::is_cancelled) {
                                telemetry.cancelled();
                                return None;
                            }
                            let first =
                                std::future::poll_fn(|cx| Poll::Ready(fut.as_mut().poll(cx))).await;
                            if let Poll::Ready(out) = first {
                                telemetry.finish(&out);
                                return Some(out);
                            }
                            let cancel = cancel.unwrap_or_default();
                            if let Some(key) = key {
                                guard = Some(inflight.register(key, cancel.clone()));
                            }
                            let _guard = guard;
                            // Cancellation first: a function that stops when cancelled
                            // finishes at the same moment, and its result must not be
                            // sent.
                            tokio::select! {
                                biased;
                                // Cancelled by the client: no response is sent for it.
                                () = cancel.cancelled() => {
                                    telemetry.cancelled();
                                    None
                                }
                                out = fut => {
                                    telemetry.finish(&out);
                                    Some(out)
                                }
                            }
                        };
                        // A span nobody wants is not entered on every poll.
                        if span.is_disabled() {
                            Started::Running(Box::pin(running))
                        } else {
                            Started::Running(Box::pin(running.instrument(span.clone())))
                        }
                    }
                }
            }
        }
    }

    /// A client's notification within a session.
    pub(crate) fn session_notification(
        &self,
        scope: &str,
        method: &str,
        params: Option<&RawValue>,
    ) {
        if method == "notifications/cancelled"
            && let Ok(p) = Params::parse(params)
            && let Some(raw) = p.request_id
            && let Ok(id) = serde_json::from_str::<RequestId>(raw.get())
        {
            let cancelled = self.inflight.cancel(scope, &id);
            tracing::debug!(request = %jsonrpc::Logged(&id), cancelled, "client cancelled a request");
        }
        // `notifications/initialized`, `roots/list_changed`, progress: nothing to do.
    }

    /// A client's answer to a server-to-client request.
    pub(crate) fn session_answer(
        &self,
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
        if !self.pending.resolve(scope, id, outcome) {
            tracing::debug!(request = %jsonrpc::Logged(id), "a response for no waiting request was ignored");
        }
    }

    /// `initialize`: negotiates a handshake revision and opens a session, in the request's
    /// span. Returns the result object and the session. `sid` is the id the session takes
    /// (stdio: the connection's); a new one is drawn without it.
    pub(crate) fn initialize(
        &self,
        id: &RequestId,
        params: &Params<'_>,
        principal: Option<String>,
        owner: String,
        sid: Option<String>,
        transport: &'static str,
    ) -> Result<(Vec<u8>, Session), RpcError> {
        self.check_memory("a new session")?;
        // The revision the session will speak (the error of a malformed request is `initialize`'s own).
        let rev = params
            .protocol_version
            .and_then(raw_str)
            .map_or(Revision::LATEST_LEGACY, |v| Revision::negotiate(&v));
        let telemetry = self.telemetry(Call {
            method: "initialize",
            known: Some(Method::Initialize),
            id,
            rev,
            session: None,
            params: Some(params),
            raw_meta: None,
            transport: Some(transport),
        });
        let _entered = telemetry.span().enter();
        let opened = self.open_session(params, principal, owner, sid);
        match &opened {
            Ok((_, session)) => {
                telemetry.session_opened(&session.sid);
                telemetry.acknowledged();
            }
            Err(e) => telemetry.finish(&Err(e.clone())),
        }
        opened
    }

    fn open_session(
        &self,
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
            "capabilities": self.capabilities,
            "serverInfo": render::implementation(&self.config.info, revision),
        });
        if let Some(i) = &self.config.instructions {
            result["instructions"] = serde_json::Value::String(i.clone());
        }
        tracing::debug!(revision = %revision, requested = %jsonrpc::Logged(&requested), "handshake session opened");
        Ok((
            render::result(revision, &self.env, Shape::Plain, Cache::None, &result),
            session,
        ))
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
