//! Connecting: which era a server speaks (the memory, `server/discover`, the verdict of
//! [`negotiate`](super::negotiate)), the `initialize` handshake, a new session when the old one
//! expired, and closing.

use ::http::HeaderMap;
use serde_json::{Map, Value, json};

use super::negotiate::{FailReason, Remembered, Verdict, classify_discover, newest_discoverable};
use super::{Client, ClientError, State, Transport};
use crate::protocol::Revision;
use crate::protocol::jsonrpc::{notification_bytes, request_bytes};
use crate::protocol::meta::SERVER_INFO;
use crate::protocol::types::{DiscoverResult, JsonObject};
use crate::protocol::version::ElicitationModes;

impl Client {
    pub(super) async fn negotiate(&self) -> Result<(), ClientError> {
        // A revision reached by a handshake is pinned: no probe.
        if let Some(rev) = self.inner.pin.filter(|r| !r.features().discover) {
            let state = self.initialize().await?;
            tracing::info!(server = %self.inner.key, revision = %state.revision, "speaking a handshake revision (pinned {rev})");
            self.inner
                .cache
                .remember(&self.inner.key, Remembered::Legacy(state.revision));
            self.set_state(state);
            return Ok(());
        }
        let pinned_discover = self.inner.pin.is_some();
        match self.inner.cache.get(&self.inner.key) {
            Some(Remembered::Modern(d)) => {
                let rev = newest_discoverable(&d.supported_versions).unwrap_or(Revision::LATEST);
                tracing::debug!(server = %self.inner.key, "remembered: {rev}");
                self.set_state(discovered_state(rev, &d));
                return Ok(());
            }
            Some(Remembered::Legacy(_)) if !pinned_discover => {
                tracing::debug!(server = %self.inner.key, "remembered: a handshake revision");
                match self.initialize().await {
                    Ok(state) => {
                        self.inner
                            .cache
                            .remember(&self.inner.key, Remembered::Legacy(state.revision));
                        self.set_state(state);
                        return Ok(());
                    }
                    // A reply that says the server changed: negotiate from scratch.
                    Err(e) if self.inner.cache.get(&self.inner.key).is_none() => {
                        tracing::debug!("the remembered handshake failed ({e}); probing again");
                    }
                    Err(e) => return Err(e),
                }
            }
            _ => {}
        }
        match self.discover().await? {
            Some((rev, d)) => {
                tracing::info!(server = %self.inner.key, "speaking {rev}");
                self.set_state(discovered_state(rev, &d));
                self.inner
                    .cache
                    .remember(&self.inner.key, Remembered::Modern(d));
            }
            None if let Some(pin) = self.inner.pin.filter(|_| pinned_discover) => {
                return Err(ClientError::UnsupportedVersion(format!(
                    "the server does not speak {pin}, the only revision this client was pinned to"
                )));
            }
            None => {
                let state = self.initialize().await?;
                tracing::info!(server = %self.inner.key, revision = %state.revision, "speaking a handshake revision");
                self.inner
                    .cache
                    .remember(&self.inner.key, Remembered::Legacy(state.revision));
                self.set_state(state);
            }
        }
        Ok(())
    }

    /// Probes with `server/discover`, at the pinned revision or else the newest: `Some` with
    /// the revision to speak, `None` to fall back to the handshake.
    async fn discover(&self) -> Result<Option<(Revision, Box<DiscoverResult>)>, ClientError> {
        // The pinned revision, or the newest.
        let mut at = self
            .inner
            .pin
            .filter(|r| r.features().discover)
            .unwrap_or(Revision::LATEST);
        let mut retried = false;
        loop {
            let f = at.features();
            let params = self.with_meta(Map::new(), at);
            let id = self.inner.core.next_id();
            let body = request_bytes(&id, "server/discover", &params);
            let ex = match &self.inner.transport {
                Transport::Http(h) => {
                    let headers = if f.routing_headers {
                        self.routing_headers(at, "server/discover", &params)?
                    } else {
                        HeaderMap::new()
                    };
                    self.timed(
                        "server/discover",
                        h.post_request(&id, body, headers, f.session_id),
                    )
                    .await?
                }
                Transport::Stdio(s) => {
                    match s.request(&id, body, Some(self.inner.probe_timeout)).await? {
                        Some(ex) => ex,
                        None => {
                            tracing::debug!("server/discover got no answer in time: falling back");
                            return Ok(None);
                        }
                    }
                }
            };
            match classify_discover(&ex, retried) {
                Verdict::Modern(rev, d) => return Ok(Some((rev, d))),
                Verdict::Retry(rev) => {
                    tracing::debug!("the server asks for {rev}: probing again");
                    at = rev;
                    retried = true;
                }
                Verdict::Fallback(why) => {
                    tracing::debug!("falling back to initialize: {why}");
                    return Ok(None);
                }
                Verdict::Fail(FailReason::Rpc(error, status)) => {
                    return Err(ClientError::Rpc {
                        method: "server/discover".into(),
                        error: Box::new(error),
                        status,
                    });
                }
                Verdict::Fail(FailReason::Http(status, body)) => {
                    return Err(ClientError::Http { status, body });
                }
                Verdict::Fail(FailReason::NoCommonVersion(why)) => {
                    return Err(ClientError::UnsupportedVersion(why));
                }
            }
        }
    }

    /// The handshake: `initialize` offering the newest handshake revision, then
    /// `notifications/initialized`, then (HTTP) the standalone GET stream.
    async fn initialize(&self) -> Result<State, ClientError> {
        let offer = self
            .inner
            .pin
            .filter(|r| !r.features().discover)
            .unwrap_or(Revision::LATEST_LEGACY);
        let mut params = Map::new();
        params.insert("protocolVersion".into(), json!(offer.as_str()));
        params.insert(
            "capabilities".into(),
            capabilities_for(&self.inner.capabilities, offer),
        );
        params.insert("clientInfo".into(), json!(self.inner.info));
        let id = self.inner.core.next_id();
        let body = request_bytes(&id, "initialize", &params);
        let ex = match &self.inner.transport {
            Transport::Http(h) => {
                h.reset_session();
                self.timed(
                    "initialize",
                    h.post_request(&id, body, HeaderMap::new(), true),
                )
                .await?
            }
            Transport::Stdio(s) => self.stdio_exchange(s, "initialize", &id, body).await?,
        };
        let raw = self.interpret("initialize", ex)?;
        #[derive(serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Init {
            protocol_version: String,
            #[serde(default)]
            capabilities: Option<Value>,
            #[serde(default)]
            server_info: Option<Value>,
            #[serde(default)]
            instructions: Option<String>,
        }
        let init: Init = serde_json::from_str(raw.get()).map_err(|e| {
            ClientError::Protocol(format!("the initialize result is malformed: {e}"))
        })?;
        let revision = Revision::parse(&init.protocol_version)
            .filter(|r| !r.features().discover)
            .ok_or_else(|| {
                ClientError::UnsupportedVersion(format!(
                    "initialize offered {offer} and the server chose {}, which this client does not speak",
                    init.protocol_version
                ))
            })?;
        let state = State {
            revision,
            capabilities: init
                .capabilities
                .and_then(|c| serde_json::from_value(c).ok())
                .unwrap_or_default(),
            server_info: init
                .server_info
                .and_then(|i| serde_json::from_value(i).ok()),
            instructions: init.instructions,
        };
        let note = notification_bytes("notifications/initialized", &JsonObject::new());
        match &self.inner.transport {
            Transport::Http(h) => {
                // 2025-03-26 has no `MCP-Protocol-Version` header; later revisions require it.
                h.set_version(
                    revision
                        .features()
                        .version_header_required
                        .then_some(revision),
                );
                if let Err(e) = h.post_message(note).await {
                    tracing::warn!("notifications/initialized was refused: {e}");
                }
                if !revision.features().listen {
                    h.start_get_stream().await;
                }
            }
            Transport::Stdio(s) => s.write(note).await?,
        }
        Ok(state)
    }

    /// A new session after the server dropped the old one (HTTP 404).
    pub(super) async fn reinitialize(&self, stale: Option<String>) -> Result<(), ClientError> {
        let _guard = self.inner.reinit.lock().await;
        if self.session_id() != stale {
            // Another request already started a new session.
            return Ok(());
        }
        tracing::debug!("the session expired: starting a new one");
        let state = self.initialize().await?;
        self.set_state(state);
        Ok(())
    }

    /// Ends the connection: the handshake session is deleted (HTTP), the server process's
    /// stdin closed (stdio).
    pub async fn close(self) {
        match &self.inner.transport {
            Transport::Http(h) => {
                h.stop_get_stream();
                if self.revision().features().session_id {
                    h.delete_session().await;
                }
            }
            Transport::Stdio(s) => s.close().await,
        }
    }
}

/// The capabilities declared in an `initialize` that offers `rev`: without what the revision
/// does not define (elicitation before 2025-06-18, its URL mode before 2025-11-25).
fn capabilities_for(declared: &Value, rev: Revision) -> Value {
    let mut caps = declared.clone();
    if let Some(obj) = caps.as_object_mut() {
        match rev.features().elicitation {
            ElicitationModes::None => {
                obj.remove("elicitation");
            }
            ElicitationModes::Form => {
                if let Some(Value::Object(e)) = obj.get_mut("elicitation") {
                    e.remove("url");
                }
            }
            ElicitationModes::FormAndUrl => {}
        }
    }
    caps
}

/// What a `DiscoverResult` settles, speaking `revision`.
fn discovered_state(revision: Revision, d: &DiscoverResult) -> State {
    State {
        revision,
        capabilities: d.capabilities.clone(),
        server_info: d
            .meta
            .as_ref()
            .and_then(|m| m.get(SERVER_INFO))
            .and_then(|i| serde_json::from_value(i.clone()).ok()),
        instructions: d.instructions.clone(),
    }
}
