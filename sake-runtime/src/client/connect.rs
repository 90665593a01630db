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
                let rev = newest_discoverable(&d.supported_versions)
                    .unwrap_or(Revision::LATEST_STATELESS);
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
            .unwrap_or(Revision::LATEST_STATELESS);
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
        #[cfg(feature = "otel")]
        crate::otel::inject(&mut params);
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::client::EraCache;
    use crate::client::fake::{
        Reply, Seen, builder, discover_result, fake, legacy, meta, modern, result_for, stdio,
    };
    use crate::protocol::types::{ElicitResult, Implementation};

    #[tokio::test]
    async fn discovery_sends_2026_meta_and_routing_headers_and_nothing_more() {
        let f = fake(modern(|s| Reply::error(200, s, -32601))).await;
        let cache = EraCache::new();
        let client = builder()
            .cache(cache.clone())
            .connect(&f.url)
            .await
            .unwrap();
        assert_eq!(client.revision(), Revision::V2026_07_28);
        assert_eq!(client.server_info(), Some(Implementation::new("fake", "1")));
        // One POST, and no GET stream: 2026-07-28 notifications come through listen.
        let seen = f.seen();
        assert_eq!(seen.len(), 1, "{seen:?}");
        let d = &seen[0];
        assert_eq!(
            d.body,
            json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover",
                "params": {"_meta": meta()}})
        );
        assert_eq!(d.header("mcp-protocol-version"), Some("2026-07-28"));
        assert_eq!(d.header("mcp-method"), Some("server/discover"));
        assert_eq!(d.header("mcp-name"), None);
        assert_eq!(d.header("mcp-session-id"), None);
        assert!(matches!(cache.get(&f.url), Some(Remembered::Modern(_))));
    }

    /// Connects to a handshake server with `pin` and the client's handlers declaring
    /// elicitation in both modes; returns what the server saw.
    async fn handshake(pin: Option<Revision>) -> (Client, Vec<Seen>) {
        let f = fake(legacy(Some("s1"), |s| Reply::error(200, s, -32601))).await;
        let mut b = builder()
            .on_elicitation(|_| async { Ok(ElicitResult::decline()) })
            .elicitation_url(true);
        if let Some(pin) = pin {
            b = b.revision(pin);
        }
        let client = b.connect(&f.url).await.unwrap();
        (client, f.seen())
    }

    #[tokio::test]
    async fn the_handshake_offers_the_newest_handshake_revision_or_the_pinned_one() {
        let cases = [
            (
                None,
                "2025-11-25",
                json!({"elicitation": {"form": {}, "url": {}}}),
            ),
            (
                Some(Revision::V2025_11_25),
                "2025-11-25",
                json!({"elicitation": {"form": {}, "url": {}}}),
            ),
            (
                Some(Revision::V2025_06_18),
                "2025-06-18",
                json!({"elicitation": {"form": {}}}),
            ),
            (Some(Revision::V2025_03_26), "2025-03-26", json!({})),
        ];
        for (pin, offer, capabilities) in cases {
            let (client, seen) = handshake(pin).await;
            assert_eq!(client.revision().as_str(), offer);
            assert_eq!(client.session_id().as_deref(), Some("s1"));
            let kinds: Vec<(String, String)> = seen
                .iter()
                .map(|s| (s.http.clone(), s.method().to_owned()))
                .collect();
            let mut want = vec![
                ("POST", "initialize"),
                ("POST", "notifications/initialized"),
                // The standalone GET stream is asked for (the fake has none: 405).
                ("GET", ""),
            ];
            if pin.is_none() {
                want.insert(0, ("POST", "server/discover"));
            }
            let want: Vec<(String, String)> = want
                .into_iter()
                .map(|(h, m)| (h.to_owned(), m.to_owned()))
                .collect();
            assert_eq!(kinds, want, "{offer}");
            let init = &seen[want.len() - 3];
            assert_eq!(
                init.params(),
                json!({"protocolVersion": offer, "capabilities": capabilities,
                    "clientInfo": {"name": "t", "version": "1"}}),
                "{offer}"
            );
            // No version header and no session before the handshake settles them.
            assert_eq!(init.header("mcp-protocol-version"), None);
            assert_eq!(init.header("mcp-session-id"), None);
            assert_eq!(init.header("mcp-method"), None);
            // After it: the session, and the version header from 2025-06-18 on.
            for after in &seen[want.len() - 2..] {
                assert_eq!(after.header("mcp-session-id"), Some("s1"), "{offer}");
                let version = (offer != "2025-03-26").then_some(offer);
                assert_eq!(after.header("mcp-protocol-version"), version, "{offer}");
                assert_eq!(after.header("mcp-method"), None);
            }
            assert_eq!(
                seen[want.len() - 2].body,
                json!({"jsonrpc": "2.0", "method": "notifications/initialized", "params": {}})
            );
        }
    }

    #[tokio::test]
    async fn a_handshake_answered_with_a_discovered_revision_is_refused() {
        let f = fake(move |s: &Seen| match s.method() {
            "server/discover" => Reply::status(404),
            _ => Reply::result(
                s,
                json!({"protocolVersion": "2026-07-28", "capabilities": {},
                    "serverInfo": {"name": "x", "version": "1"}}),
            ),
        })
        .await;
        let err = builder().connect(&f.url).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "no common protocol revision: initialize offered 2025-11-25 and the server chose 2026-07-28, which this client does not speak"
        );
        assert_eq!(f.methods(), ["server/discover", "initialize"]);
    }

    #[tokio::test]
    async fn pinned_to_2026_there_is_no_fallback() {
        let f = fake(legacy(None, |s| Reply::error(200, s, -32601))).await;
        let err = builder()
            .revision(Revision::V2026_07_28)
            .connect(&f.url)
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "no common protocol revision: the server does not speak 2026-07-28, the only revision this client was pinned to"
        );
        assert_eq!(f.methods(), ["server/discover"]);
    }

    #[tokio::test]
    async fn an_unsupported_version_error_listing_2026_is_probed_once_more() {
        let f = fake(|s: &Seen| {
            let e = json!({"jsonrpc": "2.0", "id": s.id(), "error": {"code": -32022,
                "message": "unsupported", "data": {"supported": ["2026-07-28"],
                "requested": "2026-07-28"}}});
            Reply::Plain(400, "application/json", e.to_string())
        })
        .await;
        let err = builder().connect(&f.url).await.unwrap_err();
        assert_eq!(err.rpc().map(|e| e.code), Some(-32022));
        let posts = f.posts();
        assert_eq!(f.methods(), ["server/discover", "server/discover"]);
        assert_ne!(posts[0].id(), posts[1].id());
        for p in &posts {
            assert_eq!(p.header("mcp-protocol-version"), Some("2026-07-28"));
            assert_eq!(p.params(), json!({"_meta": meta()}));
        }
    }

    #[tokio::test]
    async fn a_remembered_2026_server_is_not_probed() {
        let f = fake(|s: &Seen| Reply::error(500, s, -32603)).await;
        let cache = EraCache::new();
        let d = serde_json::from_value(discover_result()).unwrap();
        cache.remember(&f.url, Remembered::Modern(Box::new(d)));
        let client = builder().cache(cache).connect(&f.url).await.unwrap();
        assert_eq!(client.revision(), Revision::V2026_07_28);
        assert_eq!(client.server_info(), Some(Implementation::new("fake", "1")));
        assert!(f.seen().is_empty());
    }

    #[tokio::test]
    async fn a_remembered_handshake_goes_straight_to_initialize() {
        let f = fake(legacy(None, |s| Reply::error(200, s, -32601))).await;
        let cache = EraCache::new();
        cache.remember(&f.url, Remembered::Legacy(Revision::V2025_06_18));
        let client = builder()
            .cache(cache.clone())
            .connect(&f.url)
            .await
            .unwrap();
        // The newest handshake revision is offered again; the server's choice is remembered.
        assert_eq!(client.revision(), Revision::V2025_11_25);
        assert_eq!(f.methods(), ["initialize", "notifications/initialized"]);
        assert_eq!(
            cache.get(&f.url),
            Some(Remembered::Legacy(Revision::V2025_11_25))
        );
    }

    #[tokio::test]
    async fn close_deletes_a_handshake_session_and_nothing_on_2026() {
        let f = fake(legacy(Some("s1"), |s| Reply::error(200, s, -32601))).await;
        let client = builder().connect(&f.url).await.unwrap();
        client.close().await;
        let delete = f.seen().into_iter().find(|s| s.http == "DELETE").unwrap();
        assert_eq!(delete.header("mcp-session-id"), Some("s1"));
        assert_eq!(delete.header("mcp-protocol-version"), Some("2025-11-25"));

        let f = fake(modern(|s| Reply::error(200, s, -32601))).await;
        let client = builder().connect(&f.url).await.unwrap();
        client.close().await;
        assert!(f.seen().iter().all(|s| s.http == "POST"));
    }

    #[tokio::test]
    async fn on_stdio_a_probe_without_an_answer_falls_back() {
        let (client, server) =
            stdio(
                builder().probe_timeout(Duration::from_millis(50)),
                |msg| match msg["method"].as_str() {
                    Some("initialize") => vec![result_for(
                        msg,
                        json!({"protocolVersion": "2025-06-18", "capabilities": {},
                        "serverInfo": {"name": "s", "version": "1"}}),
                    )],
                    _ => vec![],
                },
            )
            .await;
        let client = client.unwrap();
        assert_eq!(client.revision(), Revision::V2025_06_18);
        assert_eq!(client.session_id(), None);
        server.wait_for("notifications/initialized").await;
        let seen = server.seen();
        assert_eq!(
            server.methods(),
            ["server/discover", "initialize", "notifications/initialized"]
        );
        assert_eq!(seen[0]["params"], json!({"_meta": meta()}));
        assert_eq!(
            seen[1]["params"],
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}})
        );
    }

    #[test]
    fn capabilities_leave_out_what_the_offered_revision_does_not_define() {
        let declared = json!({"elicitation": {"form": {}, "url": {}}, "roots": {}});
        assert_eq!(capabilities_for(&declared, Revision::V2025_11_25), declared);
        assert_eq!(
            capabilities_for(&declared, Revision::V2025_06_18),
            json!({"elicitation": {"form": {}}, "roots": {}})
        );
        assert_eq!(
            capabilities_for(&declared, Revision::V2025_03_26),
            json!({"roots": {}})
        );
    }
}
