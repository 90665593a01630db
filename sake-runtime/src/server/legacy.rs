//! Requests of a handshake session, whatever the transport: `ping`, `logging/setLevel`,
//! resource subscriptions, and everything the dispatcher serves, with the session's
//! revision, capabilities and log level, and server-to-client requests through the
//! transport's stream.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::json;
use serde_json::value::RawValue;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::Shared;
use super::dispatch::{Dispatched, raw_str};
use super::hub::SubscribeRefused;
use super::inflight::InflightGuard;
use super::session::Session;
use crate::handler::BoxFuture;
use crate::handler::context::RequestParts;
use crate::handler::input::{InputChannel, LegacyPeer};
use crate::protocol::jsonrpc::{self, RequestId, RpcError};
use crate::protocol::meta::{Params, RequestMeta, parse_legacy_meta};
use crate::protocol::methods::Method;
use crate::protocol::render::{self, Cache, Shape};
use crate::protocol::types::LoggingLevel;
use crate::protocol::{Era, Revision};

/// What one request of a session gave.
pub(crate) enum Started {
    /// Answered at once: the response message, and the session as it is now when the request
    /// changed it (`logging/setLevel`).
    Done(Vec<u8>, Option<Box<Session>>),
    /// Running: resolves to the response message, or to nothing when the client cancelled it.
    Running(BoxFuture<Option<Vec<u8>>>),
}

/// The response message of an outcome.
pub(crate) fn response(id: &RequestId, out: &Result<Bytes, RpcError>) -> Vec<u8> {
    match out {
        Ok(b) => jsonrpc::result_bytes(id, b),
        Err(e) => jsonrpc::error_bytes(Some(id), e),
    }
}

/// Starts one request of a session. `sink` carries what the request sends before its result
/// (progress, logs, server-to-client requests); `scope` names the session for cancellation
/// and answers.
pub(crate) fn start(
    shared: &Arc<Shared>,
    session: &Session,
    extensions: http::Extensions,
    id: RequestId,
    method_name: &str,
    raw_params: Option<&RawValue>,
    sink: Option<mpsc::Sender<Bytes>>,
) -> Started {
    let rev = session.revision;
    let done = |out: Result<Bytes, RpcError>| Started::Done(response(&id, &out), None);
    let params = match Params::parse(raw_params) {
        Ok(p) => p,
        Err(e) => return done(Err(e)),
    };
    let Some(method) =
        Method::parse_in(method_name, Era::Legacy).filter(|m| shared.offers(m.needs()))
    else {
        return done(Err(RpcError::method_not_found(method_name)));
    };
    let empty = || Ok(empty_result(shared, rev));
    match method {
        Method::Initialize => done(Err(RpcError::invalid_request(
            "`initialize` opens a session: send it first, without Mcp-Session-Id, and never in a batch",
        ))),
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
                    // The re-minted id carries the level to every replica; clients that keep
                    // the id of `initialize` (the TypeScript SDK, rmcp) find it in this
                    // process.
                    // Kept no longer than the session's first id could be used.
                    let expires = std::time::Instant::now() + shared.config.session_lifetime;
                    shared.hub.set_log_level(&session.sid, level, expires);
                    let mut s = session.clone();
                    s.log_level = Some(level);
                    Started::Done(response(&id, &empty()), Some(Box::new(s)))
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
                shared.hub.unsubscribe(&session.sid, &uri);
            } else if let Err(why) = shared.hub.subscribe(&session.sid, &uri) {
                return done(Err(RpcError::internal(match why {
                    SubscribeRefused::TooManySessions => "Too many sessions hold resource subscriptions on this server; try again later".to_owned(),
                    SubscribeRefused::TooManyForSession(n) => format!("This session holds {n} resource subscriptions, the most it may; unsubscribe from one first"),
                })));
            }
            done(empty())
        }
        _ => {
            let (progress_token, raw_meta) = match parse_legacy_meta(params.meta) {
                Ok(m) => m,
                Err(e) => return done(Err(e)),
            };
            let cancel = CancellationToken::new();
            let mut parts = RequestParts::new(
                rev,
                RequestMeta {
                    client_capabilities: session.capabilities.clone(),
                    client_info: session.client_info(),
                    // The latest `logging/setLevel` this process saw wins over the one in an
                    // id a client kept from earlier.
                    log_level: shared.hub.log_level(&session.sid).or(session.log_level),
                    progress_token,
                    raw: raw_meta,
                },
            );
            parts.sink = sink;
            parts.extensions = extensions;
            parts.input = InputChannel::Legacy(LegacyPeer {
                sid: session.sid.clone(),
                pending: shared.pending.clone(),
                timeout: shared.config.input_timeout,
            });
            parts.cancel = Some(cancel.clone());
            match shared.dispatch(parts, method, &params) {
                Dispatched::Ready(out) => done(out),
                Dispatched::Pending(fut) => {
                    // Only what runs can be cancelled: lists and the like never register.
                    let guard: InflightGuard =
                        shared.inflight.register(&session.sid, &id, cancel.clone());
                    Started::Running(Box::pin(async move {
                        let _guard = guard;
                        // Cancellation first: a function that stops when cancelled finishes
                        // at the same moment, and its result must not be sent.
                        tokio::select! {
                            biased;
                            // Cancelled by the client: no response is sent for it.
                            () = cancel.cancelled() => None,
                            out = fut => Some(response(&id, &out)),
                        }
                    }))
                }
            }
        }
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

/// A client's notification within a session.
pub(crate) fn notification(shared: &Shared, scope: &str, method: &str, params: Option<&RawValue>) {
    if method == "notifications/cancelled"
        && let Ok(p) = Params::parse(params)
        && let Some(raw) = p.request_id
        && let Ok(id) = serde_json::from_str::<RequestId>(raw.get())
    {
        let cancelled = shared.inflight.cancel(scope, &id);
        tracing::debug!(request = %id, cancelled, "client cancelled a request");
    }
    // `notifications/initialized`, `roots/list_changed`, progress: nothing to do.
}

/// A client's answer to a server-to-client request.
pub(crate) fn answer(
    shared: &Shared,
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
    if !shared.pending.resolve(scope, id, outcome) {
        tracing::debug!(request = %id, "a response for no waiting request was ignored");
    }
}

/// `initialize`: negotiates a handshake revision and opens a session. Returns the result
/// object and the session.
pub(crate) fn initialize(
    shared: &Shared,
    params: &Params<'_>,
    principal: Option<String>,
) -> Result<(Vec<u8>, Session), RpcError> {
    let requested = params.protocol_version.and_then(raw_str).ok_or_else(|| {
        RpcError::invalid_params(
            "Invalid params: `initialize` needs `protocolVersion` (a string such as \"2025-11-25\")",
        )
    })?;
    let revision = Revision::parse(&requested)
        .filter(|r| !r.is_modern())
        .unwrap_or(Revision::LATEST_LEGACY);
    // serde would read a struct from an array, by position: only objects are.
    let capabilities = match params.capabilities {
        None => Default::default(),
        Some(raw) if !raw.get().starts_with('{') => {
            return Err(RpcError::invalid_params(format!(
                "Invalid params: `capabilities` must be a ClientCapabilities object, not {}",
                crate::protocol::jsonrpc::clip(raw.get())
            )));
        }
        Some(raw) => serde_json::from_str(raw.get()).map_err(|e| {
            RpcError::invalid_params(format!(
                "Invalid params: `capabilities` is not a ClientCapabilities object: {e}"
            ))
        })?,
    };
    // Optional (some clients omit it), but never silently dropped when malformed.
    let client: Option<crate::protocol::types::Implementation> = match params.client_info {
        None => None,
        Some(raw) => Some(
            serde_json::from_str(raw.get())
                .ok()
                .filter(|_| raw.get().starts_with('{'))
                .ok_or_else(|| {
                    RpcError::invalid_params(format!(
                        "Invalid params: `clientInfo` must be an object with `name` and `version`, not {}",
                        crate::protocol::jsonrpc::clip(raw.get())
                    ))
                })?,
        ),
    };
    let mut session = Session::new(revision, capabilities, client.as_ref())
        .ok_or_else(|| RpcError::internal("no randomness available for a session id"))?;
    session.principal = principal;
    let mut result = json!({
        "protocolVersion": revision.as_str(),
        "capabilities": shared.capabilities,
        "serverInfo": render::implementation(&shared.config.info, revision),
    });
    if let Some(i) = &shared.config.instructions {
        result["instructions"] = serde_json::Value::String(i.clone());
    }
    tracing::debug!(revision = %revision, requested = %requested, "handshake session opened");
    Ok((
        render::result(revision, &shared.env, Shape::Plain, Cache::None, &result),
        session,
    ))
}
