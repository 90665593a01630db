//! A dual-era MCP client: it speaks 2026-07-28 to servers that list it in `server/discover`,
//! and falls back to the `initialize` handshake (2025-11-25, 2025-06-18, 2025-03-26) otherwise.
//!
//! ```no_run
//! # async fn demo() -> Result<(), sake::client::ClientError> {
//! use sake::client::Client;
//! use serde_json::json;
//!
//! let client = Client::connect("http://127.0.0.1:3000/mcp").await?;
//! println!("speaking {}", client.revision());
//! let sum: i64 = client.call("add", json!({"a": 2, "b": 3})).await?;
//! assert_eq!(sum, 5);
//! # Ok(()) }
//! ```
//!
//! `Client::spawn(command)` does the same with a server child process over stdio. What the
//! server may ask of the client (elicitation, sampling, roots) is answered by the handlers
//! registered on [`ClientBuilder`]; a capability is declared exactly when its handler is
//! registered. See `docs/client.md` for the rules of discovery, fallback and memory.

mod core;
mod error;
mod http;
mod negotiate;
mod params;
mod sse;
mod stdio;

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, RwLock};
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use ::http::{HeaderMap, HeaderName, HeaderValue};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use tokio::sync::{broadcast, mpsc, oneshot};

pub use self::core::Notification;
pub use self::error::ClientError;
pub use self::negotiate::{EraCache, Remembered};

use self::core::{AbortOnDrop, Core, HandlerFailure, Handlers, is_invalid_reply};
use self::http::{Http, header_value};
use self::negotiate::{
    Body, Exchange, FailReason, Verdict, classify_discover, error_forgets, newest_discoverable,
};
use self::stdio::Stdio;
use crate::protocol::Revision;
use crate::protocol::headers::{self, METHOD, NAME, encode_value};
use crate::protocol::jsonrpc::{RequestId, RpcError, code, notification_bytes, request_bytes};
use crate::protocol::meta::{CLIENT_CAPABILITIES, CLIENT_INFO, PROTOCOL_VERSION, SERVER_INFO};
use crate::protocol::methods::Method;
use crate::protocol::types::{
    CallToolResult, Completion, CompletionReference, CreateMessageRequest, CreateMessageResult,
    DiscoverResult, ElicitRequest, ElicitResult, GetPromptResult, Implementation, JsonObject,
    ListRootsResult, Prompt, ReadResourceResult, Resource, ResourceTemplate, Root,
    ServerCapabilities, Tool,
};
use crate::protocol::version::ElicitationModes;
use crate::registry::{HeaderParam, header_params};

/// How many `input_required` rounds one request may take.
const DEFAULT_MAX_ROUNDS: usize = 16;
/// How long a stdio server may take to answer the `server/discover` probe.
const DEFAULT_PROBE_TIMEOUT: Duration = Duration::from_secs(10);
/// The most pages one list call reads.
const MAX_PAGES: usize = 10_000;

/// Configures a [`Client`]: its name, its handlers, its memory and limits.
pub struct ClientBuilder {
    info: Implementation,
    handlers: Handlers,
    cache: EraCache,
    headers: HeaderMap,
    timeout: Option<Duration>,
    probe_timeout: Duration,
    max_rounds: usize,
    pin: Option<Revision>,
}

impl Default for ClientBuilder {
    fn default() -> Self {
        ClientBuilder::new()
    }
}

impl std::fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("info", &self.info)
            .field("capabilities", &self.handlers.capabilities())
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl ClientBuilder {
    /// A client named `sake-client` with no handlers, the process-wide [`EraCache`], and no
    /// request timeout.
    pub fn new() -> Self {
        ClientBuilder {
            info: Implementation::new("sake-client", env!("CARGO_PKG_VERSION")),
            handlers: Handlers::default(),
            cache: EraCache::global(),
            headers: HeaderMap::new(),
            timeout: None,
            probe_timeout: DEFAULT_PROBE_TIMEOUT,
            max_rounds: DEFAULT_MAX_ROUNDS,
            pin: None,
        }
    }

    /// Speaks only `revision`: 2026-07-28 without falling back to the handshake, or a
    /// handshake revision without probing `server/discover` first (`initialize` offers it and
    /// accepts any handshake revision the server answers with). By default the client
    /// discovers and falls back.
    pub fn revision(mut self, revision: Revision) -> Self {
        self.pin = Some(revision);
        self
    }

    /// The name and version the client gives (`clientInfo`).
    pub fn info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.info = Implementation::new(name, version);
        self
    }

    /// The full `clientInfo`.
    pub fn implementation(mut self, info: Implementation) -> Self {
        self.info = info;
        self
    }

    /// Answers elicitation (`elicitation/create`): declares the `elicitation` capability (form
    /// mode). Defaults of the form's schema fill the fields an accepted answer leaves out.
    pub fn on_elicitation<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(ElicitRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ElicitResult, RpcError>> + Send + 'static,
    {
        self.handlers.elicitation = Some(Arc::new(move |req| Box::pin(f(req))));
        self
    }

    /// Also declares URL-mode elicitation (the handler then sees `mode: "url"` requests).
    pub fn elicitation_url(mut self, enabled: bool) -> Self {
        self.handlers.elicitation_url = enabled;
        self
    }

    /// Answers sampling (`sampling/createMessage`): declares the `sampling` capability.
    pub fn on_sampling<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(CreateMessageRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CreateMessageResult, RpcError>> + Send + 'static,
    {
        self.handlers.sampling = Some(Arc::new(move |req| Box::pin(f(req))));
        self
    }

    /// Answers `roots/list`: declares the `roots` capability.
    pub fn on_roots<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ListRootsResult, RpcError>> + Send + 'static,
    {
        self.handlers.roots = Some(Arc::new(move || Box::pin(f())));
        self
    }

    /// Answers `roots/list` with a fixed list.
    pub fn roots(self, roots: Vec<Root>) -> Self {
        self.on_roots(move || {
            let roots = roots.clone();
            async move { Ok(ListRootsResult { roots }) }
        })
    }

    /// Where the client remembers what each server speaks (default: [`EraCache::global`]).
    pub fn cache(mut self, cache: EraCache) -> Self {
        self.cache = cache;
        self
    }

    /// An HTTP header sent with every request (e.g. `Authorization`).
    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.append(name, value);
        self
    }

    /// The longest wait for one answer (none by default).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// How long a stdio server may take to answer the `server/discover` probe before the
    /// client falls back to `initialize` (10 s by default).
    pub fn probe_timeout(mut self, timeout: Duration) -> Self {
        self.probe_timeout = timeout;
        self
    }

    /// How many `input_required` rounds one request may take (16 by default).
    pub fn max_rounds(mut self, rounds: usize) -> Self {
        self.max_rounds = rounds.max(1);
        self
    }

    /// Connects to a Streamable HTTP endpoint (`http://…`).
    pub async fn connect(self, url: &str) -> Result<Client, ClientError> {
        let core = Arc::new(Core::new(self.handlers.clone()));
        let http = Arc::new(Http::new(url, self.headers.clone(), Arc::clone(&core))?);
        let client = self.build(core, Transport::Http(http), url.to_owned());
        client.negotiate().await?;
        Ok(client)
    }

    /// Starts a server process and talks to it over stdio (newline-delimited JSON).
    pub async fn spawn(
        self,
        command: impl Into<tokio::process::Command>,
    ) -> Result<Client, ClientError> {
        let core = Arc::new(Core::new(self.handlers.clone()));
        let stdio = Stdio::spawn(command.into(), Arc::clone(&core))?;
        let key = stdio.key.clone();
        let client = self.build(core, Transport::Stdio(stdio), key);
        client.negotiate().await?;
        Ok(client)
    }

    fn build(self, core: Arc<Core>, transport: Transport, key: String) -> Client {
        Client {
            inner: Arc::new(Inner {
                capabilities: serde_json::to_value(self.handlers.capabilities())
                    .unwrap_or_else(|_| json!({})),
                core,
                transport,
                key,
                cache: self.cache,
                info: self.info,
                state: RwLock::new(State::default()),
                tool_headers: Mutex::new(HashMap::new()),
                timeout: self.timeout,
                probe_timeout: self.probe_timeout,
                max_rounds: self.max_rounds,
                pin: self.pin,
                reinit: tokio::sync::Mutex::new(()),
            }),
        }
    }
}

enum Transport {
    Http(Arc<Http>),
    Stdio(Arc<Stdio>),
}

/// What negotiation settled.
#[derive(Clone, Debug)]
struct State {
    revision: Revision,
    capabilities: ServerCapabilities,
    server_info: Option<Implementation>,
    instructions: Option<String>,
}

impl Default for State {
    fn default() -> Self {
        State {
            revision: Revision::LATEST,
            capabilities: ServerCapabilities::default(),
            server_info: None,
            instructions: None,
        }
    }
}

struct Inner {
    core: Arc<Core>,
    transport: Transport,
    key: String,
    cache: EraCache,
    info: Implementation,
    capabilities: Value,
    state: RwLock<State>,
    /// The `x-mcp-header` parameters of each tool, from the last `tools/list` (2026-07-28).
    tool_headers: Mutex<HashMap<String, Vec<HeaderParam>>>,
    timeout: Option<Duration>,
    probe_timeout: Duration,
    max_rounds: usize,
    pin: Option<Revision>,
    reinit: tokio::sync::Mutex<()>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Transport::Http(h) = &self.transport {
            // The GET stream's task holds the transport: stop it so both can go.
            h.stop_get_stream();
        }
    }
}

/// A connection to one MCP server. Cheap to clone; clones share the connection.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("server", &self.inner.key)
            .field("revision", &self.revision())
            .finish_non_exhaustive()
    }
}

/// What a subscription asks for. Empty fields ask for nothing of that kind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Subscription {
    /// `notifications/tools/list_changed`.
    pub tools_list_changed: bool,
    /// `notifications/prompts/list_changed`.
    pub prompts_list_changed: bool,
    /// `notifications/resources/list_changed`.
    pub resources_list_changed: bool,
    /// `notifications/resources/updated` for these URIs.
    pub resource_subscriptions: Vec<String>,
}

impl Subscription {
    /// Every list change, and updates of these resources.
    pub fn everything(resources: impl IntoIterator<Item = impl Into<String>>) -> Self {
        Subscription {
            tools_list_changed: true,
            prompts_list_changed: true,
            resources_list_changed: true,
            resource_subscriptions: resources.into_iter().map(Into::into).collect(),
        }
    }

    fn to_filter(&self) -> Value {
        let mut f = Map::new();
        if self.tools_list_changed {
            f.insert("toolsListChanged".into(), Value::Bool(true));
        }
        if self.prompts_list_changed {
            f.insert("promptsListChanged".into(), Value::Bool(true));
        }
        if self.resources_list_changed {
            f.insert("resourcesListChanged".into(), Value::Bool(true));
        }
        if !self.resource_subscriptions.is_empty() {
            f.insert(
                "resourceSubscriptions".into(),
                json!(self.resource_subscriptions),
            );
        }
        Value::Object(f)
    }

    fn wants(&self, n: &Notification) -> bool {
        match n.method.as_str() {
            "notifications/tools/list_changed" => self.tools_list_changed,
            "notifications/prompts/list_changed" => self.prompts_list_changed,
            "notifications/resources/list_changed" => self.resources_list_changed,
            "notifications/resources/updated" => n
                .uri()
                .is_some_and(|u| self.resource_subscriptions.iter().any(|s| s == u)),
            _ => false,
        }
    }
}

struct OnDrop(Option<Box<dyn FnOnce() + Send + Sync>>);

impl Drop for OnDrop {
    fn drop(&mut self) {
        if let Some(f) = self.0.take() {
            f();
        }
    }
}

/// A stream of notifications from the server: a `futures` `Stream`, or call [`recv`].
/// Dropping it ends the subscription.
///
/// [`recv`]: Notifications::recv
pub struct Notifications {
    rx: mpsc::Receiver<Notification>,
    _guards: Vec<Box<dyn Send + Sync>>,
}

impl std::fmt::Debug for Notifications {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Notifications").finish_non_exhaustive()
    }
}

impl Notifications {
    /// The next notification; `None` once the subscription has ended.
    pub async fn recv(&mut self) -> Option<Notification> {
        self.rx.recv().await
    }
}

impl futures_util::Stream for Notifications {
    type Item = Notification;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Notification>> {
        self.rx.poll_recv(cx)
    }
}

/// Forwards the notifications `keep` accepts from the broadcast into a channel.
fn forward(
    mut rx: broadcast::Receiver<Notification>,
    keep: impl Fn(&Notification) -> bool + Send + 'static,
) -> (mpsc::Receiver<Notification>, AbortOnDrop) {
    let (tx, out) = mpsc::channel(256);
    let task = tokio::spawn(async move {
        loop {
            match rx.recv().await {
                Ok(n) if keep(&n) => {
                    if tx.send(n).await.is_err() {
                        break;
                    }
                }
                Ok(_) => {}
                Err(broadcast::error::RecvError::Lagged(k)) => {
                    tracing::warn!("a subscriber fell behind and lost {k} notifications");
                }
                Err(broadcast::error::RecvError::Closed) => break,
            }
        }
    });
    (out, AbortOnDrop(task))
}

#[derive(serde::Deserialize)]
struct ResultShape {
    #[serde(rename = "resultType", default)]
    result_type: Option<Value>,
}

#[derive(serde::Deserialize)]
struct InputRequired {
    #[serde(rename = "inputRequests", default)]
    input_requests: Option<HashMap<String, InputRequest>>,
    #[serde(rename = "requestState", default)]
    request_state: Option<Value>,
}

#[derive(serde::Deserialize)]
struct InputRequest {
    method: String,
    #[serde(default)]
    params: Option<Box<RawValue>>,
}

impl Client {
    /// A builder, to register handlers or set limits.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::new()
    }

    /// Connects to a Streamable HTTP endpoint with the default settings.
    pub async fn connect(url: &str) -> Result<Client, ClientError> {
        ClientBuilder::new().connect(url).await
    }

    /// Starts a server process and talks to it over stdio, with the default settings.
    pub async fn spawn(command: impl Into<tokio::process::Command>) -> Result<Client, ClientError> {
        ClientBuilder::new().spawn(command).await
    }

    /// The revision in use.
    pub fn revision(&self) -> Revision {
        self.state().revision
    }

    /// The server's name and version, when it gave them.
    pub fn server_info(&self) -> Option<Implementation> {
        self.state().server_info
    }

    /// What the server offers.
    pub fn server_capabilities(&self) -> ServerCapabilities {
        self.state().capabilities
    }

    /// The server's instructions, if any.
    pub fn instructions(&self) -> Option<String> {
        self.state().instructions
    }

    /// The legacy session id (HTTP, handshake revisions), if the server minted one.
    pub fn session_id(&self) -> Option<String> {
        match &self.inner.transport {
            Transport::Http(h) => h.session_id(),
            Transport::Stdio(_) => None,
        }
    }

    fn state(&self) -> State {
        self.inner
            .state
            .read()
            .map(|s| s.clone())
            .unwrap_or_default()
    }

    fn set_state(&self, state: State) {
        if let Ok(mut s) = self.inner.state.write() {
            *s = state;
        }
    }

    fn forget(&self) {
        self.inner.cache.forget(&self.inner.key);
    }

    // ------------------------------------------------------------------ negotiation

    async fn negotiate(&self) -> Result<(), ClientError> {
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

    /// Probes with `server/discover`, at the newest revision first: `Some` with the revision to
    /// speak, `None` to fall back to the handshake.
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
    async fn reinitialize(&self, stale: Option<String>) -> Result<(), ClientError> {
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

    // ------------------------------------------------------------------ requests

    /// `params` with the `_meta` that `rev` puts on every request (none before 2026-07-28);
    /// a `_meta` already there is kept and completed.
    fn with_meta(&self, mut params: JsonObject, rev: Revision) -> JsonObject {
        if !rev.features().request_meta {
            return params;
        }
        let mut meta = match params.remove("_meta") {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        meta.insert(PROTOCOL_VERSION.into(), json!(rev.as_str()));
        meta.insert(CLIENT_CAPABILITIES.into(), self.inner.capabilities.clone());
        meta.insert(CLIENT_INFO.into(), json!(self.inner.info));
        params.insert("_meta".into(), Value::Object(meta));
        params
    }

    /// The routing headers of a request (2026-07-28): `MCP-Protocol-Version`, `Mcp-Method`,
    /// `Mcp-Name` and the tool's `Mcp-Param-*`.
    fn routing_headers(
        &self,
        rev: Revision,
        method: &str,
        params: &JsonObject,
    ) -> Result<HeaderMap, ClientError> {
        let mut h = HeaderMap::new();
        // The same revision as `_meta` (`with_meta`): a server refuses a request whose
        // header and body disagree.
        h.insert(
            headers::PROTOCOL_VERSION,
            HeaderValue::from_static(rev.as_str()),
        );
        // Never Base64: a method with a control byte (or any non-ASCII) is refused here.
        h.insert(METHOD, header_value("Mcp-Method", method)?);
        if let Some(field) = Method::parse(method).and_then(Method::name_param)
            && let Some(Value::String(name)) = params.get(field)
        {
            h.insert(NAME, header_value("Mcp-Name", &encode_value(name))?);
        }
        if method == "tools/call"
            && let Some(Value::String(tool)) = params.get("name")
        {
            let known = self
                .inner
                .tool_headers
                .lock()
                .ok()
                .and_then(|t| t.get(tool).cloned())
                .unwrap_or_default();
            let args = params.get("arguments").cloned().unwrap_or(Value::Null);
            for p in known {
                if let Some(v) = params::value(&p, &args) {
                    h.insert(p.header.clone(), header_value(&p.display, &v)?);
                }
            }
        }
        Ok(h)
    }

    async fn timed<T>(
        &self,
        method: &str,
        fut: impl Future<Output = Result<T, ClientError>>,
    ) -> Result<T, ClientError> {
        match self.inner.timeout {
            None => fut.await,
            Some(t) => tokio::time::timeout(t, fut).await.unwrap_or_else(|_| {
                Err(ClientError::Timeout {
                    method: method.to_owned(),
                    millis: t.as_millis(),
                })
            }),
        }
    }

    async fn stdio_exchange(
        &self,
        s: &Stdio,
        method: &str,
        id: &RequestId,
        body: Vec<u8>,
    ) -> Result<Exchange, ClientError> {
        match s.request(id, body, self.inner.timeout).await? {
            Some(ex) => Ok(ex),
            None => {
                // On stdio a request that is given up is cancelled with a notification.
                let mut params = Map::new();
                params.insert("requestId".into(), json!(id));
                params.insert("reason".into(), json!("timed out"));
                let params = self.with_meta(params, self.revision());
                if let Err(e) = s
                    .write(notification_bytes("notifications/cancelled", &params))
                    .await
                {
                    tracing::debug!("could not cancel {method}: {e}");
                }
                Err(ClientError::Timeout {
                    method: method.to_owned(),
                    millis: self.inner.timeout.map(|t| t.as_millis()).unwrap_or(0),
                })
            }
        }
    }

    /// One request, one answer (no `input_required` rounds). On a handshake session the server
    /// dropped (HTTP 404), a new session is started once and the request sent again.
    async fn send(&self, method: &str, params: JsonObject) -> Result<Box<RawValue>, ClientError> {
        let mut renewed = false;
        loop {
            let rev = self.revision();
            let f = rev.features();
            let params = self.with_meta(params.clone(), rev);
            let id = self.inner.core.next_id();
            let body = request_bytes(&id, method, &params);
            tracing::debug!(%id, method, revision = %rev, "request");
            let ex = match &self.inner.transport {
                Transport::Http(h) => {
                    let headers = if f.routing_headers {
                        self.routing_headers(rev, method, &params)?
                    } else {
                        HeaderMap::new()
                    };
                    let stale = h.session_id();
                    let ex = self
                        .timed(method, h.post_request(&id, body, headers, f.session_id))
                        .await?;
                    if ex.status == 404 && f.session_id && stale.is_some() && !renewed {
                        renewed = true;
                        self.reinitialize(stale).await?;
                        continue;
                    }
                    ex
                }
                Transport::Stdio(s) => self.stdio_exchange(s, method, &id, body).await?,
            };
            return self.interpret(method, ex);
        }
    }

    /// Turns an exchange into a result, applying the memory rules: a reply that suggests the
    /// server's revision changed forgets what the server speaks.
    fn interpret(&self, method: &str, ex: Exchange) -> Result<Box<RawValue>, ClientError> {
        let status = ex.status;
        match ex.body {
            Body::Response(Ok(raw)) => {
                let shape: ResultShape = match serde_json::from_str(raw.get()) {
                    Ok(s) => s,
                    Err(_) => {
                        self.forget();
                        return Err(ClientError::Protocol(format!(
                            "the result of {method} is not an object: {}",
                            core::clip(raw.get())
                        )));
                    }
                };
                match shape.result_type {
                    None => Ok(raw),
                    Some(Value::String(t)) if t == "complete" || t == "input_required" => Ok(raw),
                    Some(other) => {
                        self.forget();
                        Err(ClientError::Protocol(format!(
                            "the result of {method} has an unknown resultType {other}"
                        )))
                    }
                }
            }
            Body::Response(Err(error)) => {
                if is_invalid_reply(&error) {
                    self.forget();
                    return Err(ClientError::Protocol(error.message));
                }
                if error_forgets(&error) {
                    self.forget();
                }
                Err(ClientError::Rpc {
                    method: method.to_owned(),
                    error: Box::new(error),
                    status,
                })
            }
            Body::Other(body) if (200..300).contains(&status) => {
                self.forget();
                Err(ClientError::Protocol(format!(
                    "HTTP {status} answer to {method} is no JSON-RPC response{}",
                    if body.is_empty() {
                        String::new()
                    } else {
                        format!(": {body}")
                    }
                )))
            }
            Body::Other(body) => Err(ClientError::Http { status, body }),
        }
    }

    /// A request that may be answered `input_required` (2026-07-28): the handlers answer each
    /// input request and the request is retried with a new id, the `inputResponses` and the
    /// exact `requestState`, until it completes.
    async fn send_rounds(
        &self,
        method: &str,
        params: JsonObject,
    ) -> Result<Box<RawValue>, ClientError> {
        let mut params = params;
        for _ in 0..self.inner.max_rounds {
            let raw = self.send(method, params.clone()).await?;
            let shape: ResultShape =
                serde_json::from_str(raw.get()).unwrap_or(ResultShape { result_type: None });
            if shape.result_type.as_ref().and_then(Value::as_str) != Some("input_required") {
                return Ok(raw);
            }
            let rev = self.revision();
            if !rev.features().input_required {
                return Err(ClientError::Protocol(format!(
                    "the server answered {method} with input_required, which {rev} does not have (handshake revisions ask with requests on the call's stream)"
                )));
            }
            let ir: InputRequired = serde_json::from_str(raw.get()).map_err(|e| {
                ClientError::Protocol(format!("malformed input_required result of {method}: {e}"))
            })?;
            if ir.input_requests.is_none() && ir.request_state.is_none() {
                return Err(ClientError::Protocol(format!(
                    "an input_required result of {method} with neither inputRequests nor requestState"
                )));
            }
            let mut responses = Map::new();
            for (key, req) in ir.input_requests.unwrap_or_default() {
                tracing::debug!(method, input = %req.method, %key, "answering an input request");
                let answer = self
                    .inner
                    .core
                    .handlers
                    .answer(&req.method, req.params.as_deref())
                    .await
                    .map_err(|f| match f {
                        HandlerFailure::Missing(method) => ClientError::MissingHandler { method },
                        HandlerFailure::BadParams(m, why) => {
                            ClientError::Protocol(format!("malformed {m} input request: {why}"))
                        }
                        HandlerFailure::Failed(method, error) => ClientError::Handler {
                            method,
                            error: Box::new(error),
                        },
                    })?;
                responses.insert(key, answer);
            }
            params.remove("inputResponses");
            params.remove("requestState");
            if !responses.is_empty() {
                params.insert("inputResponses".into(), Value::Object(responses));
            }
            if let Some(state) = ir.request_state {
                params.insert("requestState".into(), state);
            }
        }
        Err(ClientError::TooManyRounds {
            method: method.to_owned(),
            rounds: self.inner.max_rounds,
        })
    }

    fn decode<T: DeserializeOwned>(method: &str, raw: &RawValue) -> Result<T, ClientError> {
        serde_json::from_str(raw.get()).map_err(|error| ClientError::Decode {
            method: method.to_owned(),
            error,
        })
    }

    fn object(method: &str, value: Value) -> Result<JsonObject, ClientError> {
        match value {
            Value::Object(m) => Ok(m),
            Value::Null => Ok(Map::new()),
            other => Err(ClientError::Protocol(format!(
                "the params of {method} must be a JSON object, not {other}"
            ))),
        }
    }

    // ------------------------------------------------------------------ the API

    /// Sends any request and returns its raw result (no `input_required` rounds).
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, ClientError> {
        let raw = self.send(method, Self::object(method, params)?).await?;
        Self::decode(method, &raw)
    }

    /// Sends a notification.
    pub async fn notify(&self, method: &str, params: Value) -> Result<(), ClientError> {
        let params = self.with_meta(Self::object(method, params)?, self.revision());
        let body = notification_bytes(method, &params);
        match &self.inner.transport {
            Transport::Http(h) => h.post_message(body).await.map(|_| ()),
            Transport::Stdio(s) => s.write(body).await,
        }
    }

    async fn list_all(&self, method: &str, key: &str) -> Result<Vec<Value>, ClientError> {
        let mut out = Vec::new();
        let mut cursor: Option<String> = None;
        let mut seen = HashSet::new();
        for _ in 0..MAX_PAGES {
            let mut params = Map::new();
            if let Some(c) = &cursor {
                params.insert("cursor".into(), json!(c));
            }
            let raw = self.send(method, params).await?;
            let mut page: JsonObject = Self::decode(method, &raw)?;
            match page.remove(key) {
                Some(Value::Array(items)) => out.extend(items),
                _ => {
                    return Err(ClientError::Protocol(format!(
                        "the result of {method} has no `{key}` array"
                    )));
                }
            }
            match page.remove("nextCursor") {
                Some(Value::String(next)) if seen.insert(next.clone()) => cursor = Some(next),
                _ => return Ok(out),
            }
        }
        Ok(out)
    }

    /// Every tool, all pages. Over HTTP on 2026-07-28, a tool whose `x-mcp-header`
    /// annotations are invalid is left out (it cannot be called correctly).
    pub async fn list_tools(&self) -> Result<Vec<Tool>, ClientError> {
        let modern_http = self.revision().features().routing_headers
            && matches!(self.inner.transport, Transport::Http(_));
        let mut tools = Vec::new();
        let mut headers = HashMap::new();
        for item in self.list_all("tools/list", "tools").await? {
            let tool: Tool = serde_json::from_value(item).map_err(|error| ClientError::Decode {
                method: "tools/list".into(),
                error,
            })?;
            if modern_http {
                match header_params(&tool.input_schema) {
                    Ok(h) => {
                        headers.insert(tool.name.clone(), h);
                    }
                    Err(why) => {
                        tracing::warn!(tool = %tool.name, "leaving out a tool with an invalid x-mcp-header: {why}");
                        continue;
                    }
                }
            }
            tools.push(tool);
        }
        if modern_http && let Ok(mut t) = self.inner.tool_headers.lock() {
            *t = headers;
        }
        Ok(tools)
    }

    /// Every prompt, all pages.
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>, ClientError> {
        self.list_typed("prompts/list", "prompts").await
    }

    /// Every static resource, all pages.
    pub async fn list_resources(&self) -> Result<Vec<Resource>, ClientError> {
        self.list_typed("resources/list", "resources").await
    }

    /// Every resource template, all pages.
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>, ClientError> {
        self.list_typed("resources/templates/list", "resourceTemplates")
            .await
    }

    async fn list_typed<T: DeserializeOwned>(
        &self,
        method: &str,
        key: &str,
    ) -> Result<Vec<T>, ClientError> {
        self.list_all(method, key)
            .await?
            .into_iter()
            .map(|v| {
                serde_json::from_value(v).map_err(|error| ClientError::Decode {
                    method: method.to_owned(),
                    error,
                })
            })
            .collect()
    }

    /// Calls a tool and returns its result as sent (a failed tool is `is_error()`, not `Err`).
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: impl Serialize,
    ) -> Result<CallToolResult, ClientError> {
        let arguments = serde_json::to_value(arguments).map_err(|error| ClientError::Decode {
            method: "tools/call".into(),
            error,
        })?;
        let mut params = Map::new();
        params.insert("name".into(), json!(name));
        if !arguments.is_null() {
            params.insert("arguments".into(), arguments);
        }
        let raw = match self.send_rounds("tools/call", params.clone()).await {
            Err(ClientError::Rpc { error, .. })
                if error.code == code::HEADER_MISMATCH
                    && self.revision().features().routing_headers
                    && matches!(self.inner.transport, Transport::Http(_))
                    && !self
                        .inner
                        .tool_headers
                        .lock()
                        .is_ok_and(|t| t.contains_key(name)) =>
            {
                // The tool's Mcp-Param headers were unknown: learn them and try once more.
                tracing::debug!(
                    tool = name,
                    "header mismatch on an unlisted tool: listing tools"
                );
                self.list_tools().await?;
                self.send_rounds("tools/call", params).await?
            }
            other => other?,
        };
        Self::decode("tools/call", &raw)
    }

    /// Calls a tool and decodes its output: the structured content when there is one, else the
    /// text (as JSON when it parses, else as a string). A failed tool is
    /// [`ClientError::Tool`].
    pub async fn call<Out: DeserializeOwned>(
        &self,
        name: &str,
        arguments: impl Serialize,
    ) -> Result<Out, ClientError> {
        let result = self.call_tool(name, arguments).await?;
        if result.is_error() {
            return Err(ClientError::Tool {
                name: name.to_owned(),
                result: Box::new(result),
            });
        }
        let decode_err = |error| ClientError::Decode {
            method: "tools/call".into(),
            error,
        };
        if let Some(raw) = &result.structured_content {
            return serde_json::from_str(raw.get()).map_err(decode_err);
        }
        let text: Vec<&str> = result.content.iter().filter_map(|c| c.as_text()).collect();
        match text.as_slice() {
            [] => serde_json::from_value(Value::Null).map_err(decode_err),
            [one] => serde_json::from_str(one)
                .or_else(|_| serde_json::from_value(Value::String((*one).to_owned())))
                .map_err(decode_err),
            many => serde_json::from_value(Value::String(many.join("\n"))).map_err(decode_err),
        }
    }

    /// Reads a resource.
    pub async fn read(&self, uri: &str) -> Result<ReadResourceResult, ClientError> {
        let mut params = Map::new();
        params.insert("uri".into(), json!(uri));
        let raw = self.send_rounds("resources/read", params).await?;
        Self::decode("resources/read", &raw)
    }

    /// Gets a prompt with its arguments (an object of strings).
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: impl Serialize,
    ) -> Result<GetPromptResult, ClientError> {
        let arguments = serde_json::to_value(arguments).map_err(|error| ClientError::Decode {
            method: "prompts/get".into(),
            error,
        })?;
        let mut params = Map::new();
        params.insert("name".into(), json!(name));
        if !arguments.is_null() {
            params.insert("arguments".into(), arguments);
        }
        let raw = self.send_rounds("prompts/get", params).await?;
        Self::decode("prompts/get", &raw)
    }

    /// Asks for completions of an argument of a prompt or a resource template.
    pub async fn complete(
        &self,
        reference: CompletionReference,
        argument: &str,
        value: &str,
    ) -> Result<Completion, ClientError> {
        let mut params = Map::new();
        params.insert("ref".into(), json!(reference));
        params.insert("argument".into(), json!({"name": argument, "value": value}));
        let raw = self.send("completion/complete", params).await?;
        #[derive(serde::Deserialize)]
        struct Out {
            completion: Completion,
        }
        Ok(Self::decode::<Out>("completion/complete", &raw)?.completion)
    }

    /// Every notification the server sends from now on, unfiltered.
    pub fn notifications(&self) -> Notifications {
        let (rx, guard) = forward(self.inner.core.listen(), |_| true);
        Notifications {
            rx,
            _guards: vec![Box::new(guard)],
        }
    }

    /// Subscribes to list changes and resource updates. On 2026-07-28 this opens a
    /// `subscriptions/listen` stream and returns once the server acknowledged it; on the
    /// handshake revisions it sends `resources/subscribe` for each resource and listens to the
    /// session's notifications. Dropping the stream ends the subscription.
    pub async fn subscribe(&self, what: Subscription) -> Result<Notifications, ClientError> {
        if self.revision().features().listen {
            self.listen(what).await
        } else {
            for uri in &what.resource_subscriptions {
                let mut params = Map::new();
                params.insert("uri".into(), json!(uri));
                self.send("resources/subscribe", params).await?;
            }
            let uris = what.resource_subscriptions.clone();
            let filter = what.clone();
            let (rx, guard) = forward(self.inner.core.listen(), move |n| filter.wants(n));
            let client = self.clone();
            let unsubscribe = OnDrop(Some(Box::new(move || {
                if uris.is_empty() {
                    return;
                }
                if let Ok(rt) = tokio::runtime::Handle::try_current() {
                    rt.spawn(async move {
                        for uri in uris {
                            let mut params = Map::new();
                            params.insert("uri".into(), json!(uri));
                            let _ = client.send("resources/unsubscribe", params).await;
                        }
                    });
                }
            })));
            Ok(Notifications {
                rx,
                _guards: vec![Box::new(guard), Box::new(unsubscribe)],
            })
        }
    }

    async fn listen(&self, what: Subscription) -> Result<Notifications, ClientError> {
        let mut params = Map::new();
        params.insert("notifications".into(), what.to_filter());
        let rev = self.revision();
        let params = self.with_meta(params, rev);
        let id = self.inner.core.next_id();
        let body = request_bytes(&id, "subscriptions/listen", &params);
        let sub_id = json!(id);
        let mut events = self.inner.core.listen();
        let (done_tx, mut done_rx) = oneshot::channel::<Result<Box<RawValue>, ClientError>>();
        let mut guards: Vec<Box<dyn Send + Sync>> = Vec::new();
        match &self.inner.transport {
            Transport::Http(h) => {
                let headers = if rev.features().routing_headers {
                    self.routing_headers(rev, "subscriptions/listen", &params)?
                } else {
                    HeaderMap::new()
                };
                let sessions = rev.features().session_id;
                let h = Arc::clone(h);
                let client = self.clone();
                let rid = id.clone();
                let task = tokio::spawn(async move {
                    let out = match h.post_request(&rid, body, headers, sessions).await {
                        Ok(ex) => client.interpret("subscriptions/listen", ex),
                        Err(e) => Err(e),
                    };
                    let _ = done_tx.send(out);
                });
                guards.push(Box::new(AbortOnDrop(task)));
            }
            Transport::Stdio(s) => {
                let rx = self.inner.core.register(&id);
                s.write(body).await?;
                let client = self.clone();
                let task = tokio::spawn(async move {
                    let out = match rx.await {
                        Ok(answer) => client.interpret(
                            "subscriptions/listen",
                            Exchange {
                                status: 200,
                                body: Body::Response(answer),
                            },
                        ),
                        Err(_) => Err(ClientError::Closed),
                    };
                    let _ = done_tx.send(out);
                });
                guards.push(Box::new(AbortOnDrop(task)));
                let stdio = Arc::clone(s);
                let core = Arc::clone(&self.inner.core);
                let cancel_id = id.clone();
                let meta = self.with_meta(Map::new(), rev);
                guards.push(Box::new(OnDrop(Some(Box::new(move || {
                    core.unregister(&cancel_id);
                    let mut params = meta;
                    params.insert("requestId".into(), json!(cancel_id));
                    let body = notification_bytes("notifications/cancelled", &params);
                    if let Ok(rt) = tokio::runtime::Handle::try_current() {
                        rt.spawn(async move {
                            let _ = stdio.write(body).await;
                        });
                    }
                })))));
            }
        }
        // Wait for the acknowledgement (or the end of the request).
        let wait = self.inner.timeout.unwrap_or(Duration::from_secs(30));
        let acked = tokio::time::timeout(wait, async {
            loop {
                tokio::select! {
                    n = events.recv() => match n {
                        Ok(n) if n.method == "notifications/subscriptions/acknowledged"
                            && n.subscription_id() == Some(&sub_id) => return Ok(()),
                        Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                        Err(broadcast::error::RecvError::Closed) => return Err(ClientError::Closed),
                    },
                    done = &mut done_rx => return match done {
                        Ok(Err(e)) => Err(e),
                        _ => Err(ClientError::Protocol(
                            "subscriptions/listen ended before it was acknowledged".into(),
                        )),
                    },
                }
            }
        })
        .await;
        match acked {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(e),
            Err(_) => {
                return Err(ClientError::Timeout {
                    method: "subscriptions/listen".into(),
                    millis: wait.as_millis(),
                });
            }
        }
        let (rx, guard) = forward(events, move |n| {
            n.subscription_id() == Some(&sub_id)
                && n.method != "notifications/subscriptions/acknowledged"
        });
        guards.push(Box::new(guard));
        Ok(Notifications {
            rx,
            _guards: guards,
        })
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
