//! The server: the builder users configure, and what it builds at start-up.

pub(crate) mod dispatch;
pub(crate) mod front;
pub(crate) mod hub;
pub(crate) mod inflight;
pub(crate) mod session;
pub(crate) mod subscriptions;

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use serde_json::{Value, json};

use crate::error::Error;
use crate::handler::events::{Bus, Notifier};
use crate::handler::input::Pending;
use crate::protocol::render::{self, Cache, CacheHints, CacheScope, ResultEnv};
use crate::protocol::types::{
    Implementation, ListChangedCapability, ResourcesCapability, ServerCapabilities,
};
use crate::protocol::{Revision, jsonrpc::RpcError};
use crate::registry::Registry;
use crate::signing::Signer;
use crate::transport::http::admission::HostPolicy;
use hub::Hub;
use session::Sessions;

/// An MCP server, configured with a builder and served over HTTP.
///
/// ```no_run
/// # async fn run() -> Result<(), sake::Error> {
/// sake::Server::from_registry()
///     .name("demo")
///     .version("1.0.0")
///     .serve_http("127.0.0.1:3000")
///     .await
/// # }
/// ```
#[must_use = "a Server does nothing until it is served"]
pub struct Server {
    registry: Option<Result<Registry, Error>>,
    pub(crate) config: Config,
    states: crate::handler::state::StateMap,
    principal: Option<PrincipalFn>,
    schema_compat: crate::schema::compat::Startup,
}

/// Names the authenticated caller of a request.
pub(crate) type PrincipalFn = Arc<dyn Fn(&http::Extensions) -> Option<String> + Send + Sync>;

/// The builder's settings.
#[derive(Clone, Debug)]
pub(crate) struct Config {
    pub info: Implementation,
    pub instructions: Option<String>,
    pub path: String,
    pub hosts: HostPolicy,
    pub origins: Vec<String>,
    pub max_body_bytes: usize,
    pub page_size: Option<usize>,
    pub cache: CacheHints,
    pub stream_buffer: usize,
    pub session_key: Option<Vec<u8>>,
    pub session_lifetime: Duration,
    pub session_refresh_after: Duration,
    pub request_state_lifetime: Duration,
    pub input_timeout: Duration,
    pub sse_retry: Duration,
    pub keep_alive: Duration,
    pub max_batch: usize,
    pub max_pending_inputs: usize,
    pub event_buffer: usize,
    pub max_tracked_sessions: usize,
    pub max_subscriptions_per_session: usize,
    pub request_timeout: Duration,
    pub body_timeout: Duration,
    pub header_timeout: Duration,
    pub max_concurrent_requests: usize,
    pub max_streams: usize,
}

impl Default for Config {
    fn default() -> Self {
        let name = std::env::current_exe()
            .ok()
            .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "sake-server".to_owned());
        Config {
            info: Implementation::new(name, "0.0.0"),
            instructions: None,
            path: "/mcp".to_owned(),
            hosts: HostPolicy::Loopback,
            origins: Vec::new(),
            max_body_bytes: 4 * 1024 * 1024,
            page_size: None,
            cache: CacheHints {
                ttl_ms: 60_000,
                scope: CacheScope::Public,
            },
            stream_buffer: 64,
            session_key: None,
            session_lifetime: Duration::from_secs(24 * 3600),
            session_refresh_after: Duration::from_secs(3600),
            request_state_lifetime: Duration::from_secs(600),
            input_timeout: Duration::from_secs(300),
            sse_retry: Duration::from_millis(1000),
            keep_alive: Duration::from_secs(15),
            max_batch: 1000,
            max_pending_inputs: 10_000,
            event_buffer: 1024,
            max_tracked_sessions: 100_000,
            max_subscriptions_per_session: 1024,
            request_timeout: Duration::from_secs(600),
            body_timeout: Duration::from_secs(30),
            header_timeout: Duration::from_secs(30),
            max_concurrent_requests: 4096,
            max_streams: 16_384,
        }
    }
}

impl Server {
    /// A server of everything annotated with `#[tool]`, `#[prompt]` and `#[resource]` in
    /// this binary.
    pub fn from_registry() -> Server {
        Server {
            registry: None,
            config: Config::default(),
            states: crate::handler::state::StateMap::default(),
            principal: None,
            schema_compat: Default::default(),
        }
    }

    /// A server of an explicit registry (see [`Registry::from_defs`]).
    pub fn with_registry(registry: Registry) -> Server {
        Server {
            registry: Some(Ok(registry)),
            config: Config::default(),
            states: crate::handler::state::StateMap::default(),
            principal: None,
            schema_compat: Default::default(),
        }
    }

    /// Registers application state: functions receive it through a `State<T>` parameter. One
    /// value per type; a function that asks for a type never registered stops start-up.
    pub fn state<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.states.insert(value);
        self
    }

    /// The name clients see (`serverInfo.name`). Defaults to the executable's name.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.config.info.name = name.into();
        self
    }

    /// The version clients see (`serverInfo.version`); pass `env!("CARGO_PKG_VERSION")`.
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.config.info.version = version.into();
        self
    }

    /// A display name (2025-06-18 and later).
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.config.info.title = Some(title.into());
        self
    }

    /// A description of the server (2025-11-25 and later).
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.config.info.description = Some(description.into());
        self
    }

    /// The server's home page (2025-11-25 and later).
    pub fn website_url(mut self, url: impl Into<String>) -> Self {
        self.config.info.website_url = Some(url.into());
        self
    }

    /// Instructions for the model on how to use the server.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.config.instructions = Some(instructions.into());
        self
    }

    /// The HTTP path of the MCP endpoint. Defaults to `/mcp`.
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.config.path = path.into();
        self
    }

    /// The host names (without port) the server answers to, as DNS-rebinding protection.
    ///
    /// By default only loopback names (`localhost`, `127.0.0.1`, `[::1]`) are accepted in
    /// `Host` and `Origin`; anything else gets 403. Set this when serving under a real name.
    pub fn allowed_hosts<I, S>(mut self, hosts: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.config.hosts = HostPolicy::Names(
            hosts
                .into_iter()
                .map(|h| h.into().to_ascii_lowercase())
                .collect(),
        );
        self
    }

    /// Turns off the `Host` and `Origin` checks (behind a proxy that already does them).
    pub fn allow_any_host(mut self) -> Self {
        self.config.hosts = HostPolicy::Any;
        self
    }

    /// Browser origins (`https://app.example.com`) allowed besides the allowed hosts.
    pub fn allowed_origins<I, S>(mut self, origins: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.config.origins = origins
            .into_iter()
            .map(|o| o.into().to_ascii_lowercase())
            .collect();
        self
    }

    /// The largest request body accepted; larger ones get 413. Defaults to 4 MiB.
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.config.max_body_bytes = bytes;
        self
    }

    /// Splits lists into pages of this many items (`nextCursor`). Defaults to one page.
    pub fn page_size(mut self, items: usize) -> Self {
        self.config.page_size = Some(items.max(1));
        self
    }

    /// How long clients may cache lists and reads (`ttlMs`, 2026-07-28). Defaults to 60 s.
    pub fn cache_ttl(mut self, ttl: Duration) -> Self {
        self.config.cache.ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
        self
    }

    /// Whether cached lists and reads may be shared between users (`cacheScope`).
    pub fn cache_scope(mut self, scope: CacheScope) -> Self {
        self.config.cache.scope = scope;
        self
    }

    /// How many notifications may wait on one response stream before the sender waits.
    pub fn stream_buffer(mut self, messages: usize) -> Self {
        self.config.stream_buffer = messages.max(1);
        self
    }

    /// The key that signs session ids and `requestState` (at least 32 bytes). Replicas that
    /// share it serve each other's sessions. Without it, `SAKE_SESSION_KEY` is used; without
    /// that, a random key per process (sessions then end with the process).
    pub fn session_key(mut self, key: impl AsRef<[u8]>) -> Self {
        self.config.session_key = Some(key.as_ref().to_vec());
        self
    }

    /// How long a session id is accepted after it was issued; then requests with it get 404
    /// and the client starts a new session. Defaults to 24 hours.
    ///
    /// A client that adopts the fresh ids responses carry (see
    /// [`session_refresh_after`](Self::session_refresh_after)) keeps an active session alive
    /// indefinitely. The TypeScript SDK and rmcp keep the id of `initialize`: for them this is
    /// the session's whole lifetime.
    pub fn session_lifetime(mut self, lifetime: Duration) -> Self {
        self.config.session_lifetime = lifetime;
        self
    }

    /// How old a session id may be before a response carries a fresh one (a new
    /// `Mcp-Session-Id` header for the same session). Defaults to 1 hour.
    pub fn session_refresh_after(mut self, age: Duration) -> Self {
        self.config.session_refresh_after = age;
        self
    }

    /// How long a 2026-07-28 `requestState` stays valid. Defaults to 10 minutes.
    pub fn request_state_lifetime(mut self, lifetime: Duration) -> Self {
        self.config.request_state_lifetime = lifetime;
        self
    }

    /// How long a handshake session's client has to answer an elicitation, sampling or roots
    /// request. Defaults to 5 minutes.
    pub fn input_timeout(mut self, timeout: Duration) -> Self {
        self.config.input_timeout = timeout;
        self
    }

    /// The `retry` hint of SSE streams of 2025-11-25 sessions. Defaults to 1 second.
    pub fn sse_retry(mut self, retry: Duration) -> Self {
        self.config.sse_retry = retry;
        self
    }

    /// How often long-lived streams send a keep-alive comment. Defaults to 15 seconds.
    pub fn keep_alive(mut self, interval: Duration) -> Self {
        self.config.keep_alive = interval;
        self
    }

    /// How long one request may run before it is cancelled and answered with an error.
    /// Defaults to 10 minutes.
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.config.request_timeout = timeout;
        self
    }

    /// How long a client may take to send a request body (408 after). Defaults to 30 s.
    pub fn body_timeout(mut self, timeout: Duration) -> Self {
        self.config.body_timeout = timeout;
        self
    }

    /// How long a connection may take to send a request's head (the request line and the
    /// headers), counted from its first byte or from the end of the previous response; the
    /// connection is closed after it (slow-header attacks, idle keep-alive connections).
    /// Applies to [`Service::serve`] and the `serve_http*` methods, not to a router you serve
    /// yourself. Defaults to 30 s.
    pub fn header_timeout(mut self, timeout: Duration) -> Self {
        self.config.header_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// The most requests served at once; more get 503 with `Retry-After`. Defaults to 4096.
    pub fn max_concurrent_requests(mut self, requests: usize) -> Self {
        self.config.max_concurrent_requests = requests.max(1);
        self
    }

    /// The most long-lived streams (`subscriptions/listen`, legacy GET streams) open at once;
    /// more get 503. Defaults to 16384.
    pub fn max_streams(mut self, streams: usize) -> Self {
        self.config.max_streams = streams.max(1);
        self
    }

    /// How an authenticated caller is named, from the HTTP request's extensions (where an
    /// auth layer put it). Sessions and `requestState` are then bound to the caller: another
    /// caller presenting them gets 404 / -32602.
    pub fn principal<F>(mut self, f: F) -> Self
    where
        F: Fn(&http::Extensions) -> Option<String> + Send + Sync + 'static,
    {
        self.principal = Some(Arc::new(f));
        self
    }

    /// The most server-to-client requests (elicitation, sampling, roots of handshake
    /// sessions) waiting for answers at once, over all sessions. A function asking beyond it
    /// gets [`InputError::Unavailable`](crate::InputError::Unavailable). Defaults to 10000.
    pub fn max_pending_inputs(mut self, requests: usize) -> Self {
        self.config.max_pending_inputs = requests.max(1);
        self
    }

    /// How many notifications (list changes, resource updates) may wait for the slowest
    /// listening stream. A `subscriptions/listen` stream that falls further behind ends with
    /// its closing result, a legacy GET stream just ends; their clients reconnect. Defaults
    /// to 1024.
    pub fn event_buffer(mut self, events: usize) -> Self {
        self.config.event_buffer = events.max(1);
        self
    }

    /// How many handshake sessions the server keeps records for at once: ended sessions
    /// (refused until their ids expire), sessions holding resource subscriptions, and
    /// resumable response streams. Defaults to 100000.
    pub fn max_tracked_sessions(mut self, sessions: usize) -> Self {
        self.config.max_tracked_sessions = sessions.max(1);
        self
    }

    /// The most resources one handshake session may subscribe to (`resources/subscribe`);
    /// beyond it the request fails with -32603 until the session unsubscribes from one.
    /// Defaults to 1024.
    pub fn max_subscriptions_per_session(mut self, uris: usize) -> Self {
        self.config.max_subscriptions_per_session = uris.max(1);
        self
    }

    /// The most messages a 2025-03-26 batch may hold. Defaults to 1000.
    pub fn max_batch_size(mut self, messages: usize) -> Self {
        self.config.max_batch = messages.max(1);
        self
    }

    /// Checks every tool's schemas at start-up against client profiles (see
    /// [`schema::compat`](crate::schema::compat)): each finding is logged with `tracing::warn!`;
    /// with [`Severity::Deny`](crate::schema::compat::Severity::Deny), a finding of level error
    /// stops start-up with [`Error::IncompatibleSchemas`]. Off by default. What is checked is
    /// what is served (after [`Server::normalize_schemas`], if set).
    pub fn check_schemas(
        mut self,
        profiles: impl IntoIterator<Item = crate::schema::compat::Profile>,
        severity: crate::schema::compat::Severity,
    ) -> Self {
        self.schema_compat.check = profiles.into_iter().collect();
        self.schema_compat.severity = severity;
        self
    }

    /// Serves tool schemas normalised for these profiles, in order (see
    /// [`schema::compat::normalize`](crate::schema::compat::normalize)): every revision's
    /// `tools/list` shows the normalised copies instead of the schemas as written. Off by
    /// default, and meant for a server whose clients all read through one provider: the
    /// normalised schemas can be less precise (dropped keywords, `null` allowed for optional
    /// properties), and what one profile needs another may refuse.
    pub fn normalize_schemas(
        mut self,
        profiles: impl IntoIterator<Item = crate::schema::compat::Profile>,
    ) -> Self {
        self.schema_compat.normalize = profiles.into_iter().collect();
        self
    }

    /// Collects and validates everything, and builds each revision's lists: what serving
    /// does first. Fails on duplicate names and invalid definitions.
    pub fn build(self) -> Result<Service, Error> {
        let mut registry = match self.registry {
            Some(r) => r?,
            None => Registry::collect()?,
        };
        registry.check_states(&self.states)?;
        crate::schema::compat::at_startup(&mut registry, &self.schema_compat)?;
        let mut shared = Shared::new(registry, self.config)?;
        shared.states = Arc::new(self.states);
        shared.principal = self.principal;
        Ok(Service {
            shared: Arc::new(shared),
        })
    }

    /// An axum `Router` serving the endpoint at the configured path, to merge into an
    /// application (`app.merge(router)`) and wrap in tower layers.
    pub fn into_router(self) -> Result<axum::Router, Error> {
        Ok(self.build()?.router())
    }

    /// Serves newline-delimited JSON-RPC on stdin and stdout until stdin closes. Logs must go
    /// to stderr (stdout carries only MCP messages).
    pub async fn serve_stdio(self) -> Result<(), Error> {
        self.build()?.serve_stdio().await
    }

    /// Serves Streamable HTTP on `addr` until the process ends.
    pub async fn serve_http(
        self,
        addr: impl tokio::net::ToSocketAddrs + std::fmt::Display,
    ) -> Result<(), Error> {
        self.serve_http_with_shutdown(addr, std::future::pending())
            .await
    }

    /// Serves Streamable HTTP on `addr` until `signal` completes; in-flight requests finish.
    pub async fn serve_http_with_shutdown(
        self,
        addr: impl tokio::net::ToSocketAddrs + std::fmt::Display,
        signal: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<(), Error> {
        let service = self.build()?;
        let listener = tokio::net::TcpListener::bind(&addr)
            .await
            .map_err(|source| Error::Bind {
                addr: addr.to_string(),
                source,
            })?;
        service.serve(listener, signal).await
    }
}

/// A built server: cheap to clone, ready to serve.
#[derive(Clone)]
pub struct Service {
    pub(crate) shared: Arc<Shared>,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service")
            .field("name", &self.shared.config.info.name)
            .field("registry", &self.shared.registry)
            .finish_non_exhaustive()
    }
}

impl Service {
    /// The registry being served.
    pub fn registry(&self) -> &Registry {
        &self.shared.registry
    }

    /// Publishes list changes and resource updates to connected clients.
    pub fn notifier(&self) -> Notifier {
        self.shared.notifier.clone()
    }

    /// An axum `Router` serving the endpoint at the configured path.
    pub fn router(&self) -> axum::Router {
        crate::transport::http::router(self.shared.clone())
    }

    /// Begins a graceful shutdown: `subscriptions/listen` streams end with their closing
    /// result, handshake sessions' GET streams end, and `serve_io`/`serve_stdio` loops stop
    /// reading. Requests in flight are not interrupted.
    ///
    /// [`serve`](Service::serve) calls it when its signal completes. An application that
    /// serves [`router`](Service::router) itself calls it from its own graceful-shutdown
    /// future; otherwise those streams keep the server open.
    ///
    /// ```no_run
    /// # async fn shutdown_signal() {}
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// let service = sake::Server::from_registry().build()?;
    /// let app = axum::Router::new().merge(service.router());
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
    /// axum::serve(listener, app)
    ///     .with_graceful_shutdown(async move {
    ///         shutdown_signal().await; // Ctrl-C, SIGTERM, …
    ///         service.shutdown();
    ///     })
    ///     .await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn shutdown(&self) {
        self.shared.shutdown.cancel();
    }

    /// Serves on a bound listener until `signal` completes; then shuts down gracefully (see
    /// [`shutdown`](Service::shutdown)) and returns once the last response has ended.
    ///
    /// Each connection speaks HTTP/1.1 and must send each request head within
    /// [`Server::header_timeout`].
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        signal: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<(), Error> {
        use hyper_util::rt::{TokioIo, TokioTimer};
        use hyper_util::service::TowerToHyperService;
        let local = listener.local_addr()?;
        tracing::info!(
            "serving MCP on http://{local}{} (revisions 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26)",
            self.shared.config.path
        );
        let router = self.router();
        let graceful = hyper_util::server::graceful::GracefulShutdown::new();
        let mut builder = hyper::server::conn::http1::Builder::new();
        builder
            .timer(TokioTimer::new())
            .header_read_timeout(self.shared.config.header_timeout);
        let mut signal = std::pin::pin!(signal);
        loop {
            let (tcp, _) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(conn) => conn,
                    Err(e) => {
                        // Out of descriptors, most likely: wait rather than spin.
                        tracing::warn!(error = %e, "accepting a connection failed");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                },
                () = &mut signal => break,
            };
            // Nagle's algorithm stalls small streamed responses by tens of milliseconds.
            let _ = tcp.set_nodelay(true);
            let service = TowerToHyperService::new(router.clone());
            let conn = builder.serve_connection(TokioIo::new(tcp), service);
            let conn = graceful.watch(conn);
            tokio::spawn(async move {
                if let Err(e) = conn.await {
                    tracing::debug!(error = %e, "connection ended with an error");
                }
            });
        }
        tracing::info!("shutting down: finishing in-flight requests and closing streams");
        self.shutdown();
        drop(listener);
        graceful.shutdown().await;
        Ok(())
    }
}

/// Pages of a list, each a rendered result object.
#[derive(Debug, Default)]
pub(crate) struct Pages(pub Vec<Bytes>);

/// One revision's lists.
#[derive(Debug, Default)]
pub(crate) struct RevisionLists {
    pub tools: Pages,
    pub prompts: Pages,
    pub resources: Pages,
    pub templates: Pages,
}

/// Everything built at start-up, shared by every request.
pub(crate) struct Shared {
    pub registry: Registry,
    pub config: Config,
    pub env: ResultEnv,
    pub capabilities: ServerCapabilities,
    pub lists: [RevisionLists; 4],
    pub discover: Bytes,
    pub sessions: Sessions,
    pub pending: Arc<Pending>,
    pub hub: Arc<Hub>,
    /// The events published through [`Notifier`]s, fanned out to listening streams.
    pub bus: Arc<Bus>,
    pub notifier: Notifier,
    pub streams: crate::transport::http::resume::Streams,
    pub inflight: Arc<crate::server::inflight::Inflight>,
    /// Fired when the server shuts down: long-lived streams end with their final messages.
    pub shutdown: tokio_util::sync::CancellationToken,
    pub states: Arc<crate::handler::state::StateMap>,
    pub principal: Option<PrincipalFn>,
    /// Requests being served (HTTP): bounded by `max_concurrent_requests`.
    pub requests: Arc<tokio::sync::Semaphore>,
    /// Long-lived streams: bounded by `max_streams`.
    pub streams_open: Arc<tokio::sync::Semaphore>,
}

impl Shared {
    fn new(registry: Registry, config: Config) -> Result<Shared, Error> {
        if !config.path.starts_with('/') {
            return Err(Error::Config(format!(
                "the endpoint path must start with '/': {:?}",
                config.path
            )));
        }
        let env = ResultEnv::new(&config.info, config.cache);
        let list_changed = || ListChangedCapability {
            list_changed: Some(true),
        };
        let capabilities = ServerCapabilities {
            experimental: None,
            logging: Some(Default::default()),
            completions: registry.has_completions().then(Default::default),
            prompts: (!registry.prompts.is_empty()).then(list_changed),
            resources: (!registry.resources.is_empty() || !registry.templates.is_empty())
                .then_some(ResourcesCapability {
                    subscribe: Some(true),
                    list_changed: Some(true),
                }),
            tools: (!registry.tools.is_empty()).then(list_changed),
            extensions: None,
        };
        let signer = signer(&config)?;
        let sessions = Sessions::new(
            signer,
            config.session_lifetime,
            config.session_refresh_after,
            config.max_tracked_sessions,
        );
        let bus = Bus::new(config.event_buffer);
        let hub = Hub::new(
            config.max_tracked_sessions,
            config.max_subscriptions_per_session,
        );
        let mut lists: [RevisionLists; 4] = Default::default();
        for rev in Revision::ALL {
            let page = |kind: &str, key: &str, items: Vec<Value>| {
                paginate(rev, &env, &config, kind, key, items)
            };
            lists[rev.index()] = RevisionLists {
                tools: page("tools", "tools", registry.tools_for(rev)),
                prompts: page("prompts", "prompts", registry.prompts_for(rev)),
                resources: page("resources", "resources", registry.resources_for(rev)),
                templates: page(
                    "templates",
                    "resourceTemplates",
                    registry.templates_for(rev),
                ),
            };
        }
        let mut discover = json!({
            "supportedVersions": Revision::ALL.iter().map(|r| r.as_str()).collect::<Vec<_>>(),
            "capabilities": capabilities,
        });
        if let Some(i) = &config.instructions {
            discover["instructions"] = Value::String(i.clone());
        }
        let discover = Bytes::from(render::result_value(
            Revision::LATEST,
            &env,
            Cache::Cacheable,
            discover,
        ));
        Ok(Shared {
            pending: Arc::new(Pending::new(config.max_pending_inputs)),
            notifier: Notifier { bus: bus.clone() },
            bus,
            hub,
            sessions,
            streams: crate::transport::http::resume::Streams::new(config.max_tracked_sessions),
            inflight: Arc::default(),
            shutdown: tokio_util::sync::CancellationToken::new(),
            states: Arc::default(),
            principal: None,
            requests: Arc::new(tokio::sync::Semaphore::new(config.max_concurrent_requests)),
            streams_open: Arc::new(tokio::sync::Semaphore::new(config.max_streams)),
            registry,
            config,
            env,
            capabilities,
            lists,
            discover,
        })
    }

    /// The caller of a request, as a short digest (never the name itself: it travels in
    /// tokens).
    pub(crate) fn principal_of(&self, extensions: &http::Extensions) -> Option<String> {
        use sha2::Digest as _;
        let name = (self.principal.as_ref()?)(extensions)?;
        let hash = sha2::Sha256::digest(name.as_bytes());
        Some(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&hash[..12]))
    }

    pub(crate) fn lists(&self, rev: Revision) -> &RevisionLists {
        &self.lists[rev.index()]
    }
}

/// The signing key: the builder's, else `SAKE_SESSION_KEY`, else a random one.
fn signer(config: &Config) -> Result<Signer, Error> {
    const MIN: usize = 32;
    let configured = config
        .session_key
        .clone()
        .map(|k| (k, "Server::session_key"))
        .or_else(|| {
            std::env::var("SAKE_SESSION_KEY")
                .ok()
                .map(|k| (k.into_bytes(), "SAKE_SESSION_KEY"))
        });
    match configured {
        Some((key, source)) => {
            if key.len() < MIN {
                return Err(Error::Config(format!(
                    "the session key from {source} has {} bytes; use at least {MIN} random bytes",
                    key.len()
                )));
            }
            Signer::new(&key).ok_or_else(|| Error::Config("the session key is unusable".into()))
        }
        None => {
            tracing::info!(
                "no session key configured (Server::session_key or SAKE_SESSION_KEY): using a random key, so legacy sessions end when this process does, and replicas do not share them"
            );
            Signer::random()
                .ok_or_else(|| Error::Config("no randomness available for a session key".into()))
        }
    }
}

fn paginate(
    rev: Revision,
    env: &ResultEnv,
    config: &Config,
    kind: &str,
    key: &str,
    items: Vec<Value>,
) -> Pages {
    let size = config.page_size.unwrap_or(usize::MAX).max(1);
    let mut chunks: Vec<Vec<Value>> = Vec::new();
    let mut items = items.into_iter().peekable();
    while items.peek().is_some() {
        chunks.push(items.by_ref().take(size).collect());
    }
    if chunks.is_empty() {
        chunks.push(Vec::new());
    }
    let count = chunks.len();
    Pages(
        chunks
            .into_iter()
            .enumerate()
            .map(|(i, chunk)| {
                let mut body = serde_json::Map::new();
                body.insert(key.to_owned(), Value::Array(chunk));
                if i + 1 < count {
                    body.insert(
                        "nextCursor".into(),
                        Value::String(encode_cursor(kind, i + 1)),
                    );
                }
                Bytes::from(render::result_value(
                    rev,
                    env,
                    Cache::Cacheable,
                    Value::Object(body),
                ))
            })
            .collect(),
    )
}

fn encode_cursor(kind: &str, page: usize) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("{kind}:{page}"))
}

/// Reads a cursor of a list of `kind`: the page it points to, or -32602.
pub(crate) fn decode_cursor(
    kind: &str,
    cursor: Option<&str>,
    pages: usize,
) -> Result<usize, RpcError> {
    let Some(cursor) = cursor else { return Ok(0) };
    let bad = || {
        RpcError::invalid_params(format!(
            "Invalid cursor {cursor:?}: pass a `nextCursor` from this list unchanged"
        ))
    };
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(cursor)
        .map_err(|_| bad())?;
    let text: Cow<'_, str> = String::from_utf8_lossy(&raw);
    let page = text
        .strip_prefix(kind)
        .and_then(|r| r.strip_prefix(':'))
        .and_then(|n| n.parse::<usize>().ok())
        .ok_or_else(bad)?;
    if page == 0 || page >= pages {
        return Err(bad());
    }
    Ok(page)
}
