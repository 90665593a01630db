//! What a user configures and serves: the [`Server`] builder, and the built [`Service`] that
//! the transports serve — over HTTP ([`Service::router`], [`Service::serve`]), on stdio
//! ([`Service::serve_stdio`]) or on any pair of byte streams ([`Service::serve_io`]).
//!
//! This is the top of the house: it assembles the engine (`server/`) and the transports
//! (`transport/`), and nothing below imports it.

use std::sync::Arc;
use std::time::Duration;

#[cfg(feature = "compat")]
use crate::compat;
use crate::error::Error;
use crate::handler::events::{EventBus, Notifier};
use crate::handler::state::StateMap;
use crate::limits::Limits;
use crate::protocol::render::CacheScope;
use crate::registry::Registry;
use crate::server::front::port::{Connection, Engine, Outbound, Peer};
use crate::server::{Config, PrincipalFn, Shared};
use crate::tasks::TaskStore;
use crate::transport::http::admission::HostPolicy;
use crate::transport::http::{Endpoint, HttpConfig};

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
    pub(crate) http: HttpConfig,
    states: StateMap,
    #[cfg(feature = "compat")]
    schema_compat: compat::Startup,
    client_ip_header: Option<String>,
    principal: Option<PrincipalFn>,
    #[cfg(feature = "auth")]
    authorization: Option<Arc<crate::auth::Authorization>>,
    task_store: Option<Arc<dyn TaskStore>>,
    event_bus: Option<Arc<dyn EventBus>>,
    skills: Vec<crate::skills::SkillDef>,
    compose: crate::compose::Composition,
}

impl Server {
    /// A server of everything annotated with `#[tool]`, `#[prompt]` and `#[resource]` in
    /// this binary.
    pub fn from_registry() -> Server {
        Server {
            registry: None,
            config: Config::default(),
            http: HttpConfig::default(),
            states: StateMap::default(),
            #[cfg(feature = "compat")]
            schema_compat: compat::Startup::default(),
            client_ip_header: None,
            principal: None,
            #[cfg(feature = "auth")]
            authorization: None,
            task_store: None,
            event_bus: None,
            skills: Vec::new(),
            compose: crate::compose::Composition::default(),
        }
    }

    /// A server of an explicit registry (see [`Registry::from_defs`]).
    pub fn with_registry(registry: Registry) -> Server {
        Server {
            registry: Some(Ok(registry)),
            config: Config::default(),
            http: HttpConfig::default(),
            states: StateMap::default(),
            #[cfg(feature = "compat")]
            schema_compat: compat::Startup::default(),
            client_ip_header: None,
            principal: None,
            #[cfg(feature = "auth")]
            authorization: None,
            task_store: None,
            event_bus: None,
            skills: Vec::new(),
            compose: crate::compose::Composition::default(),
        }
    }

    /// Registers application state: functions receive it through a `State<T>` parameter. One
    /// value per type; a function that asks for a type never registered stops start-up.
    pub fn state<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.states.insert(value);
        self
    }

    /// Serves a remote MCP server under `prefix`: its tools and prompts as
    /// `{prefix}_{name}`, its resources, templates, views and skills at `scheme://prefix/…`
    /// as a mounted module's (`""`: its names and URIs as they are, a transparent gateway). Its lists are fetched when a client first asks,
    /// cached, and fetched again when it says they changed (the clients here are told);
    /// calls are forwarded with results and errors as it sent them, through the invoker (a
    /// call is cancelled with its request, and bounded by `request_timeout` and the
    /// upstream's own timeout). What it asks during a call — elicitation, sampling, roots —
    /// is asked of the client that made the call, in that client's era: see
    /// docs/composition.md, "Remote servers" and "The era bridge".
    ///
    /// The program's own definitions come first: a name both have is the program's (the
    /// upstream's is left out, with a log line when its list is fetched: a remote list
    /// cannot be checked at start-up). Two upstreams under one prefix stop start-up.
    #[cfg(feature = "client")]
    #[cfg_attr(docsrs, doc(cfg(feature = "client")))]
    pub fn proxy(mut self, prefix: &str, upstream: crate::compose::Upstream) -> Self {
        self.compose.proxied(prefix);
        self.config
            .sources
            .push(std::sync::Arc::new(crate::compose::proxy::Proxy::new(
                prefix, upstream,
            )));
        self
    }

    /// Serves a skill defined in code (the skills extension; see [`skills`](crate::skills)):
    /// files given as bytes, checked and digested when the server is built, or a dynamic
    /// skill read from its source. Skills embedded with `sake::skills!` need no call.
    pub fn skill(mut self, skill: crate::skills::SkillDef) -> Self {
        self.skills.push(skill);
        self
    }

    /// Serves `module`'s definitions under `prefix` instead of at the root (see
    /// [`compose::Module`](crate::compose::Module) and docs/composition.md): its tools and
    /// prompts as `prefix_name`, its resources, templates and views at `scheme://prefix/…`.
    /// Checked when the server is built: a bad prefix, a name over 64 characters, or two
    /// definitions served under one name stop start-up, naming both.
    pub fn mount(mut self, prefix: impl Into<String>, module: crate::compose::Module) -> Self {
        self.compose.mount(prefix.into(), module);
        self
    }

    /// Reshapes the tool `tool` of the root (one no module is mounted with; see
    /// [`compose::ToolTransform`](crate::compose::ToolTransform)): renamed, re-described,
    /// hidden, arguments fixed or defaulted. A mounted tool is reshaped with
    /// [`Module::transform`](crate::compose::Module::transform).
    pub fn transform(
        mut self,
        tool: impl Into<String>,
        transform: crate::compose::ToolTransform,
    ) -> Self {
        self.compose.transform(tool.into(), transform);
        self
    }

    /// Serves the tools through a search tool (see
    /// [`compose::ToolSearch`](crate::compose::ToolSearch)): `tools/list` shows it and the
    /// pinned tools; every tool stays callable by name.
    pub fn tool_search(mut self, search: crate::compose::ToolSearch) -> Self {
        self.compose.search(search);
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

    /// Lists the server: a server card at `<endpoint>/server-card` and the AI Catalog at
    /// `/.well-known/ai-catalog.json` that points to it, and the registry's `server.json`
    /// ([`Service::registry_server_json`]), all from this listing and what the server knows
    /// (name, version, title, description, website, revisions). Building fails when the card
    /// cannot be made (no [`description`](Self::description), a name the registry refuses).
    pub fn listing(mut self, listing: crate::card::Listing) -> Self {
        self.config.listing = Some(listing);
        self
    }

    /// The URL clients reach the server at from outside, without the endpoint's path
    /// (`https://mcp.example.com`, or with the prefix a proxy mounts it under): the server
    /// card's and `server.json`'s remote is this URL and the [`path`](Self::path). Without it,
    /// the card served over HTTP names the URL the request came to (`http://`, its `Host`).
    pub fn public_url(mut self, url: impl Into<String>) -> Self {
        self.config.public_url = Some(url.into().trim_end_matches('/').to_owned());
        self
    }

    /// Instructions for the model on how to use the server.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.config.instructions = Some(instructions.into());
        self
    }

    /// The HTTP path of the MCP endpoint. Defaults to `/mcp`.
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.http.path = path.into();
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
        self.http.hosts = HostPolicy::Names(
            hosts
                .into_iter()
                .map(|h| h.into().to_ascii_lowercase())
                .collect(),
        );
        self
    }

    /// Behind a reverse proxy, the header in which it passes the client's address (for
    /// example `x-forwarded-for`): the rightmost address in it is taken as the client's, for
    /// the per-client bounds ([`Limits::max_records_per_client`] and
    /// the like). Set it only when the proxy sets or overwrites that header: a client could
    /// otherwise name any address. Without it, the connection's peer address counts.
    pub fn client_ip_header(mut self, name: impl Into<String>) -> Self {
        self.client_ip_header = Some(name.into());
        self
    }

    /// Turns off the `Host` and `Origin` checks (behind a proxy that already does them).
    pub fn allow_any_host(mut self) -> Self {
        self.http.hosts = HostPolicy::Any;
        self
    }

    /// Lets browser pages on these origins call the server (CORS), as browser-based hosts
    /// and inspectors do: preflights are answered for the MCP headers, and answers carry
    /// `Access-Control-Allow-Origin` with `Mcp-Session-Id` and `WWW-Authenticate` exposed.
    /// The origins are also allowed by the DNS-rebinding check, which still refuses every
    /// other foreign origin with 403; a loopback origin not named here is served, but its page
    /// cannot read the answer.
    ///
    /// The same [`Cors`](crate::Cors) is a tower layer for routes of an application's own.
    pub fn cors(mut self, cors: crate::Cors) -> Self {
        for origin in cors.origins() {
            if !self.http.origins.contains(origin) {
                self.http.origins.push(origin.clone());
            }
        }
        self.http.cors = Some(cors);
        self
    }

    /// Browser origins (`https://app.example.com`) allowed besides the allowed hosts.
    pub fn allowed_origins<I, S>(mut self, origins: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.http.origins = origins
            .into_iter()
            .map(|o| o.into().to_ascii_lowercase())
            .collect();
        self
    }

    /// Changes the bounds on what clients can make the server hold or do at once: sizes,
    /// concurrency, each client's share, buffers, timeouts (see [`Limits`], whose defaults suit
    /// a server on the open internet). Calls compose: each changes what the one before left.
    /// The most common are one call away: [`max_body_bytes`](Self::max_body_bytes),
    /// [`max_concurrent_requests`](Self::max_concurrent_requests),
    /// [`request_timeout`](Self::request_timeout).
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let server = sake::Server::from_registry()
    ///     .max_concurrent_requests(512)
    ///     .limits(|l| l.max_requests_per_client(64).body_timeout(Duration::from_secs(10)));
    /// # let _ = server;
    /// ```
    pub fn limits(mut self, change: impl FnOnce(Limits) -> Limits) -> Self {
        self.config.limits = change(self.config.limits);
        self
    }

    /// The largest request body (HTTP) or message (stdio, a connection) accepted; larger
    /// ones get 413 (HTTP) or -32600. Defaults to 4 MiB. See [`Limits`].
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.config.limits = self.config.limits.max_body_bytes(bytes);
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

    /// The key that signs session ids and `requestState` (at least 32 random bytes).
    /// Replicas that share it serve each other's sessions. Without it, `SAKE_SESSION_KEY` is
    /// used (its bytes as they are); without that, a random key per process (sessions then
    /// end with the process, and a warning says so). The server's name (`Server::name`) is
    /// part of every signature: two services that share a key do not accept each other's
    /// tokens.
    ///
    /// The key the replicas authenticate their bus messages and task records with is derived
    /// from it ([`ReplicaKey`](crate::bus::ReplicaKey)): a shared
    /// [`event_bus`](Self::event_bus) or a Redis task store needs it configured.
    pub fn session_key(mut self, key: impl AsRef<[u8]>) -> Self {
        self.config.session_key = Some(key.as_ref().to_vec());
        self
    }

    /// Keys that signed earlier and still verify: rotate a key without ending every session
    /// by signing with the new one ([`session_key`](Self::session_key)) and listing the old
    /// one here until its sessions have expired (`session_lifetime`); then drop it. From the
    /// environment: `SAKE_PREVIOUS_SESSION_KEYS`, comma-separated, beside `SAKE_SESSION_KEY`.
    pub fn previous_session_keys<I, K>(mut self, keys: I) -> Self
    where
        I: IntoIterator<Item = K>,
        K: AsRef<[u8]>,
    {
        self.config.previous_session_keys = keys.into_iter().map(|k| k.as_ref().to_vec()).collect();
        self
    }

    /// What the server does with the trace context a client puts in `params._meta` (feature
    /// `otel`): by default its span is *linked* from the request's span, which stays in the
    /// server's trace under the server's sampling; [`Adopt`](crate::otel::ClientTraceContext::Adopt)
    /// makes it the parent, for clients the server trusts. See docs/observability.md.
    #[cfg(feature = "otel")]
    #[cfg_attr(docsrs, doc(cfg(feature = "otel")))]
    pub fn client_trace_context(mut self, policy: crate::otel::ClientTraceContext) -> Self {
        self.config.client_trace_context = policy;
        self
    }

    /// Refuses to start without a configured session key (a deployment of several replicas,
    /// which must share one), instead of using a random one (with a warning when the server
    /// listens on an address other machines may reach).
    pub fn require_session_key(mut self, require: bool) -> Self {
        self.config.require_session_key = require;
        self
    }

    /// No start-up greeting: by default, serving prints to stderr where the server is, what
    /// each revision lists and how to connect a client to it (see [`Service::greet`]).
    /// `SAKE_QUIET=1` in the environment does the same. The `tracing` events are logged
    /// either way.
    pub fn quiet(mut self, quiet: bool) -> Self {
        self.config.quiet = quiet;
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

    /// The `retry` hint of SSE streams of 2025-11-25 sessions. Defaults to 1 second.
    pub fn sse_retry(mut self, retry: Duration) -> Self {
        self.http.sse_retry = retry;
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
        self.config.limits = self.config.limits.request_timeout(timeout);
        self
    }

    /// The most requests served at once; more get 503 with `Retry-After`. Defaults to 4096.
    pub fn max_concurrent_requests(mut self, requests: usize) -> Self {
        self.config.limits = self.config.limits.max_concurrent_requests(requests);
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

    /// Wraps every MCP operation — every call of a function (tools, prompts, resources,
    /// templates, views) and every list, completion, request about a task, skill read and
    /// subscription — in a tower layer over [`McpRequest`](crate::middleware::McpRequest)
    /// (see [`middleware`](crate::middleware) and docs/middleware.md): a rate limit, a
    /// timeout, an audit trail, a layer of your own or any tower layer. Layers apply in the
    /// order given, the first added outermost, the same on every revision, transport and task.
    pub fn layer<L: crate::middleware::McpLayer>(mut self, layer: L) -> Self {
        self.config.layers.all(layer);
        self
    }

    /// Wraps the calls of one function in a layer: a tool's or prompt's name, a resource's
    /// URI or a template's URI template, a view's URI. A name no function has stops start-up.
    pub fn layer_for<L: crate::middleware::McpLayer>(
        mut self,
        name: impl Into<String>,
        layer: L,
    ) -> Self {
        self.config.layers.named(name.into(), layer);
        self
    }

    /// Wraps every operation of a kind in a layer: every tool's call, every prompt's, …, or
    /// every list (`Kind::List`), completion, request about a task, skill read, subscription.
    pub fn layer_kind<L: crate::middleware::McpLayer>(
        mut self,
        kind: crate::middleware::Kind,
        layer: L,
    ) -> Self {
        self.config.layers.kind(kind, layer);
        self
    }

    /// Wraps every tool's calls in a layer (`layer_kind(Kind::Tool, layer)`).
    pub fn layer_tools<L: crate::middleware::McpLayer>(self, layer: L) -> Self {
        self.layer_kind(crate::middleware::Kind::Tool, layer)
    }

    /// Makes the server an OAuth 2.1 resource server (feature `auth`): every HTTP request needs
    /// a bearer token the [`Authorization`](crate::auth::Authorization) accepts, the protected
    /// resource metadata is served at its well-known URIs, and functions run only for tokens
    /// with the scopes they name. The verified [`Principal`](crate::auth::Principal) reaches
    /// them (`Context::principal`), and sessions, `requestState` and tasks are bound to it.
    #[cfg(feature = "auth")]
    #[cfg_attr(docsrs, doc(cfg(feature = "auth")))]
    pub fn authorization(mut self, authorization: crate::auth::Authorization) -> Self {
        self.authorization = Some(Arc::new(authorization));
        self
    }

    /// Where tasks are kept (the tasks extension: tools declared `#[tool(task = "optional")]`
    /// or `"required"`). Defaults to a [`MemoryTaskStore`](crate::tasks::MemoryTaskStore)
    /// with its default bounds; pass one with other bounds, or a store shared by replicas.
    pub fn task_store(mut self, store: impl TaskStore) -> Self {
        self.task_store = Some(Arc::new(store));
        self
    }

    /// How the replicas of this server share what they push: list changes, resource updates,
    /// task changes, ended sessions. Defaults to [`LocalBus`](crate::bus::LocalBus): nothing
    /// leaves the process. With a shared bus (`RedisBus`, feature `redis`), a listener on any
    /// replica hears what any replica publishes, and a session ended on one is refused by all.
    /// The bus starts when the service is built, which must then happen inside a Tokio
    /// runtime. See docs/deploying.md.
    pub fn event_bus(mut self, bus: impl EventBus) -> Self {
        self.event_bus = Some(Arc::new(bus));
        self
    }

    /// How long a task lives from its creation (`ttlMs`): a task still running then is
    /// stopped and fails; a finished one is deleted (see docs/tasks.md). Defaults to
    /// 5 minutes.
    pub fn task_ttl(mut self, ttl: Duration) -> Self {
        self.config.task_ttl = ttl.max(Duration::from_millis(1));
        self
    }

    /// How long a task whose function runs stays claimed by its replica without a heartbeat
    /// (the replica renews it every 2 s, or a third of the lease if shorter). A replica that
    /// dies with a task running leaves it `working` this long at most; then any replica
    /// sharing the task store fails it (-32603, "the server running it stopped"). Defaults to
    /// 30 seconds; at least 300 ms.
    pub fn task_lease(mut self, lease: Duration) -> Self {
        self.config.task_lease = lease.max(Duration::from_millis(300));
        self
    }

    /// How often clients should poll a task (`pollIntervalMs`). Defaults to 1 second.
    pub fn task_poll_interval(mut self, interval: Duration) -> Self {
        self.config.task_poll_interval = interval.max(Duration::from_millis(1));
        self
    }

    #[cfg(feature = "compat")]
    #[cfg_attr(docsrs, doc(cfg(feature = "compat")))]
    /// Checks every tool's schemas at start-up against client profiles (see
    /// [`compat`](crate::compat)): each finding is logged with `tracing::warn!`; with
    /// [`Severity::Deny`](compat::Severity::Deny), a finding of level error stops start-up
    /// with [`Error::IncompatibleSchemas`]. Off by default. What is checked is what is served
    /// (after [`Server::normalize_schemas`], if set).
    pub fn check_schemas(
        mut self,
        profiles: impl IntoIterator<Item = compat::Profile>,
        severity: compat::Severity,
    ) -> Self {
        self.schema_compat.check = profiles.into_iter().collect();
        self.schema_compat.severity = severity;
        self
    }

    #[cfg(feature = "compat")]
    #[cfg_attr(docsrs, doc(cfg(feature = "compat")))]
    /// Serves tool schemas normalised for these profiles, in order (see
    /// [`compat::normalize`]): every revision's `tools/list` shows the normalised copies
    /// instead of the schemas as written. Off by default, and meant for a server whose clients
    /// all read through one provider: the normalised schemas can be less precise (dropped
    /// keywords, `null` allowed for optional properties), and what one profile needs another
    /// may refuse.
    pub fn normalize_schemas(
        mut self,
        profiles: impl IntoIterator<Item = compat::Profile>,
    ) -> Self {
        self.schema_compat.normalize = profiles.into_iter().collect();
        self
    }

    /// Collects and validates everything, and builds each revision's lists: what serving
    /// does first. Fails on duplicate names and invalid definitions.
    pub fn build(mut self) -> Result<Service, Error> {
        #[allow(unused_mut)]
        let mut registry = match self.registry {
            Some(r) => self.compose.apply(r?)?,
            None if self.compose.is_empty() => Registry::collect()?,
            None => self.compose.collect()?,
        };
        registry.add_skills(self.skills)?;
        if let Some(listing) = &self.config.listing {
            listing.check(&self.config.info).map_err(Error::Config)?;
        }
        if let Some(url) = &self.config.public_url
            && !(url.starts_with("https://") || url.starts_with("http://"))
        {
            return Err(Error::Config(format!(
                "Server::public_url {url:?} must be an http:// or https:// URL"
            )));
        }
        #[cfg(feature = "compat")]
        compat::at_startup(&mut registry, &self.schema_compat)
            .map_err(Error::IncompatibleSchemas)?;
        self.compose.place(&registry, &self.config.sources)?;
        self.compose.finish(
            &registry,
            &mut self.states,
            #[cfg(feature = "auth")]
            self.authorization.clone(),
        );
        #[cfg(feature = "auth")]
        let auth = self.authorization.clone();
        let mut http = self.http;
        http.limits = self.config.limits.clone();
        http.listing = self
            .config
            .listing
            .clone()
            .map(|l| (l, self.config.info.clone()));
        http.public_url = self.config.public_url.clone();
        let mut config = self.config;
        config.layers.add_declared();
        let shared = Arc::new(Shared::new(
            registry,
            config,
            self.states,
            self.principal,
            #[cfg(feature = "auth")]
            self.authorization,
            self.task_store,
            self.event_bus,
        )?);
        shared
            .events
            .start(&shared.lifecycle, shared.tasks.as_ref());
        if let Some(cors) = &http.cors {
            cors.check().map_err(Error::Config)?;
        }
        if let Some(name) = &self.client_ip_header {
            http.client_ip_header =
                Some(http::HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                    Error::Config(format!(
                        "Server::client_ip_header: {name:?} is not a header name"
                    ))
                })?);
        }
        let endpoint = Arc::new(Endpoint::new(
            Engine::new(shared.clone()),
            http,
            #[cfg(feature = "auth")]
            auth,
        )?);
        let service = Service { shared, endpoint };
        // `cargo sake card`: the registry's server.json, when asked for (`server/dev.rs`).
        crate::server::dev::write_server_json(|| service.registry_server_json());
        Ok(service)
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

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.config.info.name)
            .field("path", &self.http.path)
            .finish_non_exhaustive()
    }
}

/// A built server: cheap to clone, ready to serve.
#[derive(Clone)]
pub struct Service {
    pub(crate) shared: Arc<Shared>,
    pub(crate) endpoint: Arc<Endpoint>,
}

impl std::fmt::Debug for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Service")
            .field("name", &self.shared.config.info.name)
            .field("registry", &self.shared.catalog.registry)
            .finish_non_exhaustive()
    }
}

impl Service {
    /// The registry being served.
    pub fn registry(&self) -> &Registry {
        &self.shared.catalog.registry
    }

    /// The endpoint's public URL, when [`Server::public_url`] gives it.
    pub fn public_mcp_url(&self) -> Option<String> {
        let base = self.shared.config.public_url.as_deref()?;
        Some(format!("{base}{}", self.endpoint.http.path))
    }

    /// The server card (`v1`) of a server given a [`Server::listing`]: what
    /// `<endpoint>/server-card` serves, its remote at the [`Server::public_url`] (none without
    /// one). `None` without a listing.
    pub fn server_card(&self) -> Option<serde_json::Value> {
        let listing = self.shared.config.listing.as_ref()?;
        Some(listing.server_card(&self.shared.config.info, self.public_mcp_url().as_deref()))
    }

    /// The MCP registry's `server.json` of a server given a [`Server::listing`]: its identity
    /// as the card says it, its packages, and its remote at the [`Server::public_url`] when
    /// set. `None` without a listing.
    pub fn registry_server_json(&self) -> Option<serde_json::Value> {
        let listing = self.shared.config.listing.as_ref()?;
        Some(listing.server_json(&self.shared.config.info, self.public_mcp_url().as_deref()))
    }

    /// Publishes list changes and resource updates to connected clients.
    pub fn notifier(&self) -> Notifier {
        self.shared.events.notifier().clone()
    }

    /// Signs a caller out: every handshake session it opened until now is refused from now
    /// on, with 404 as an ended session (here, and on every replica sharing the
    /// [`event_bus`](Server::event_bus)). `name` is the caller as the server names it: the
    /// name [`Server::principal`] gives or, for a caller with a verified token (feature `auth`),
    /// its issuer and subject joined by a line feed (`"{issuer}\n{subject}"`, the issuer
    /// empty when the token names none). Sessions it opens afterwards are served.
    pub fn end_sessions_of(&self, name: &str) {
        self.shared.lifecycle.sign_out(name);
    }

    /// An axum `Router` serving the endpoint at the configured path.
    pub fn router(&self) -> axum::Router {
        crate::transport::http::router(self.endpoint.clone())
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
    /// [`Limits::header_timeout`].
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        signal: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> Result<(), Error> {
        let greeted = self.greet(listener.local_addr()?);
        crate::transport::http::serve(self.endpoint, listener, signal, greeted).await
    }

    /// Greets on stderr: the server's name and endpoint URL (the listener's address `local`
    /// and the configured path), what each revision lists (and the tools a revision leaves out,
    /// and why), and how to connect the MCP Inspector, Claude Code and VS Code to it; unless
    /// [`Server::quiet`] or `SAKE_QUIET=1`. Returns whether it greeted.
    ///
    /// On an address other machines may reach (not loopback) without a configured session
    /// key it also logs a warning: sessions then end with the process, and replicas do not
    /// share them.
    ///
    /// [`serve`](Service::serve) and [`Server::serve_http`] call it; an application that
    /// serves [`router`](Service::router) itself calls it once it is listening.
    pub fn greet(&self, local: std::net::SocketAddr) -> bool {
        crate::server::greeting::greet(&self.shared, self.at(local))
    }

    /// The text [`greet`](Service::greet) prints for a listener bound to `local`, whether or
    /// not the server is quiet: to log it some other way.
    pub fn greeting(&self, local: std::net::SocketAddr) -> String {
        let info = &self.shared.config.info;
        crate::server::greeting::text(
            &self.shared.catalog.registry,
            &info.name,
            &info.version,
            self.at(local),
            None,
        )
    }

    fn at(&self, local: std::net::SocketAddr) -> crate::server::greeting::At<'_> {
        crate::server::greeting::At::Http {
            local,
            path: &self.endpoint.http.path,
        }
    }

    /// Serves stdio on this process's stdin and stdout until stdin closes.
    ///
    /// When stdin is a pipe (as when a client starts the server), it is read without
    /// blocking, on the runtime's own event loop; otherwise (a terminal, a file) through
    /// Tokio's blocking stdin.
    ///
    /// It greets on stderr first (never on stdout, which carries MCP only), as
    /// [`greet`](Service::greet) does for HTTP, unless [`Server::quiet`] or `SAKE_QUIET=1`.
    pub async fn serve_stdio(self) -> Result<(), Error> {
        use crate::server::greeting;
        let greeted = greeting::greet(&self.shared, greeting::At::Stdio);
        let engine = self.engine();
        match crate::transport::stdio::stdin_pipe() {
            Some(stdin) => {
                tracing::debug!("stdin is a pipe: read without blocking");
                crate::transport::stdio::serve_io(engine, stdin, tokio::io::stdout(), greeted).await
            }
            None => {
                tracing::debug!("stdin is not a pipe: read on a blocking thread");
                crate::transport::stdio::serve_io(
                    engine,
                    tokio::io::stdin(),
                    tokio::io::stdout(),
                    greeted,
                )
                .await
            }
        }
    }

    /// Serves newline-delimited JSON-RPC on any reader and writer (a pipe, a socket, a test's
    /// in-memory duplex) until the reader ends.
    pub async fn serve_io<R, W>(self, reader: R, writer: W) -> Result<(), Error>
    where
        R: tokio::io::AsyncRead + Unpin + Send,
        W: tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        crate::transport::stdio::serve_io(self.engine(), reader, writer, false).await
    }

    /// A connection for a transport of your own: hand it every message your peer sends
    /// ([`Connection::receive`]) and write every message of the [`Outbound`] channel back,
    /// each in your transport's framing. Both eras work on it, as on stdio: one connection is
    /// at most one handshake session, and 2026-07-28 requests are served statelessly beside
    /// it. See [`sake::transport`](crate::transport) and `examples/unix_socket.rs`.
    pub fn connect(&self, peer: Peer) -> (Connection, Outbound) {
        self.engine().open(peer)
    }

    /// The engine as transports see it.
    pub(crate) fn engine(&self) -> Engine {
        Engine::new(self.shared.clone())
    }
}
