//! The engine: everything built at start-up and shared by every request, whatever the
//! transport, and the front that serves requests with it.
//!
//! [`Shared`] holds six services, each a type of its own in a file of its own, built in
//! [`Shared::new`] with what it needs and never reaching back into `Shared`:
//!
//! - [`admission`] — what a request may take before it runs and what a client may make the
//!   server hold, and whose share it takes (`Admission::caller_key`);
//! - [`callers`] — who a request comes from, what they may do, whether they were signed out;
//! - [`catalog`] — the definitions, their lists per revision and audience, the one lookup of
//!   what a URI or name denotes, and (in [`skills`]) the reads of skills;
//! - [`invoker`] — the one caller of user functions;
//! - [`events`] — the events functions publish, fanned out here and relayed to the other
//!   replicas, and what the other replicas tell this one;
//! - [`lifecycle`] — handshake sessions ended and callers signed out (here and on every
//!   replica), what an ended session held dropped, the notices after a restart.
//!
//! Beside them `Shared` keeps the settings and the stores several parts share (the sessions,
//! the hub's records, pending questions, requests in flight, the tasks extension, shutdown).
//! Its methods are `new` and the dispatcher's ([`dispatch`], with [`tasks`] for the tasks
//! methods): the one place that uses several services to run a method. The doors
//! ([`front`]) are methods of the port's `Connection`, which holds the engine.
//!
//! The public builder ([`Server`](crate::Server)) and the built [`Service`](crate::Service)
//! live above the transports, in `service.rs`.

pub(crate) mod admission;
pub(crate) mod callers;
pub(crate) mod catalog;
pub(crate) mod dev;
pub(crate) mod dispatch;
pub(crate) mod events;
pub(crate) mod front;
pub(crate) mod greeting;
pub(crate) mod hub;
pub(crate) mod inflight;
pub(crate) mod invoker;
pub(crate) mod lifecycle;
pub(crate) mod memory;
pub(crate) mod operations;
pub(crate) mod revocation;
pub(crate) mod session;
pub(crate) mod skills;
pub(crate) mod source;
pub(crate) mod subscriptions;
pub(crate) mod tasks;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::{Value, json};

use crate::error::Error;
use crate::handler::events::EventBus;
use crate::handler::input::Pending;
use crate::protocol::Revision;
use crate::protocol::render::{self, Cache, CacheHints, CacheScope, ResultEnv};
use crate::protocol::types::{
    Implementation, ListChangedCapability, ResourcesCapability, ServerCapabilities,
};
use crate::quota::PeerAddr;
use crate::registry::Registry;
use crate::signing::Signer;
use hub::Hub;
use session::Sessions;

/// The longest URI a client may make the server remember (a subscription, a listen filter's
/// entry).
pub(crate) const MAX_URI_BYTES: usize = 4096;

/// Whether a caller digest stored in a record is a given request's caller
/// ([`Callers::owner_test`](callers::Callers::owner_test)).
pub(crate) type OwnerTest = Arc<dyn Fn(Option<&str>) -> bool + Send + Sync>;

/// Names the authenticated caller of a request.
pub(crate) type PrincipalFn = Arc<dyn Fn(&http::Extensions) -> Option<String> + Send + Sync>;

/// The settings of the engine, whatever the transport (the HTTP ones are
/// `transport::http::HttpConfig`).
#[derive(Clone, Debug)]
pub(crate) struct Config {
    pub info: Implementation,
    /// The bounds on what clients can make the server hold or do (`Server::limits`).
    pub limits: crate::limits::Limits,
    pub instructions: Option<String>,
    pub page_size: Option<usize>,
    pub cache: CacheHints,
    pub session_key: Option<Vec<u8>>,
    pub previous_session_keys: Vec<Vec<u8>>,
    pub require_session_key: bool,
    /// No start-up greeting (`Server::quiet`; `SAKE_QUIET` too, read when serving).
    pub quiet: bool,
    pub session_lifetime: Duration,
    pub session_refresh_after: Duration,
    pub request_state_lifetime: Duration,
    pub keep_alive: Duration,
    pub task_ttl: Duration,
    pub task_poll_interval: Duration,
    pub task_lease: Duration,
    /// How the server is listed (server card, registry `server.json`), when it is.
    pub listing: Option<crate::card::Listing>,
    /// The public URL of the server without the endpoint's path (`Server::public_url`).
    pub public_url: Option<String>,
    /// What the server does with a client's trace context (`Server::client_trace_context`).
    #[cfg(feature = "otel")]
    pub client_trace_context: crate::otel::ClientTraceContext,
    /// The middleware layers (`Server::layer`), in the order given.
    pub layers: crate::middleware::Layers,
    /// Definitions fetched from elsewhere (`Server::proxy`), after the registry's.
    pub sources: source::Sources,
}

impl Default for Config {
    fn default() -> Self {
        let name = std::env::current_exe()
            .ok()
            .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "sake-server".to_owned());
        Config {
            info: Implementation::new(name, "0.0.0"),
            limits: crate::limits::Limits::default(),
            instructions: None,
            page_size: None,
            cache: CacheHints {
                ttl_ms: 60_000,
                scope: CacheScope::Public,
            },
            session_key: None,
            previous_session_keys: Vec::new(),
            require_session_key: false,
            quiet: false,
            session_lifetime: Duration::from_secs(24 * 3600),
            session_refresh_after: Duration::from_secs(3600),
            request_state_lifetime: Duration::from_secs(600),
            keep_alive: Duration::from_secs(15),
            task_ttl: Duration::from_secs(300),
            task_poll_interval: Duration::from_secs(1),
            task_lease: Duration::from_secs(30),
            listing: None,
            public_url: None,
            #[cfg(feature = "otel")]
            client_trace_context: crate::otel::ClientTraceContext::default(),
            layers: Default::default(),
            sources: Vec::new(),
        }
    }
}

/// Everything built at start-up, shared by every request: a thin holder of the engine's six
/// services and of what the parts share (its settings, the sessions and their records,
/// pending questions, requests in flight, the tasks extension, shutdown).
pub(crate) struct Shared {
    /// What a request may take of the server before it runs, and what a client may make it
    /// hold.
    pub admission: admission::Admission,
    /// Who a request comes from, what they may do, whether they were signed out.
    pub callers: Arc<callers::Callers>,
    /// The definitions, their lists per revision and audience, and the one lookup of what a
    /// URI or name denotes.
    pub catalog: catalog::Catalog,
    /// The one caller of user functions.
    pub invoker: invoker::Invoker,
    /// The events functions publish, fanned out to listening streams and relayed to the
    /// other replicas; what the other replicas tell this one.
    pub events: events::Events,
    /// The life of handshake sessions beyond one request: ended, signed out, forgotten,
    /// told of a restart.
    pub lifecycle: Arc<lifecycle::Lifecycle>,
    pub config: Config,
    pub env: ResultEnv,
    pub capabilities: ServerCapabilities,
    pub sessions: Arc<Sessions>,
    pub pending: Arc<Pending>,
    pub hub: Arc<Hub>,
    pub inflight: Arc<crate::server::inflight::Inflight>,
    /// Fired when the server shuts down: long-lived streams end with their final messages.
    pub shutdown: tokio_util::sync::CancellationToken,
    /// The tasks extension, when a tool may run as a task.
    pub tasks: Option<Arc<tasks::Tasks>>,
}

impl Shared {
    /// Builds everything but the lists (built on first use): the discovery result, the signing key.
    pub(crate) fn new(
        registry: Registry,
        config: Config,
        states: crate::handler::state::StateMap,
        principal: Option<PrincipalFn>,
        #[cfg(feature = "auth")] auth: Option<Arc<crate::auth::Authorization>>,
        task_store: Option<Arc<dyn crate::tasks::TaskStore>>,
        event_bus: Option<Arc<dyn EventBus>>,
    ) -> Result<Shared, Error> {
        let relay = event_bus.filter(|b| b.is_shared());
        registry.check_states(&states)?;
        registry.check_views()?;
        #[cfg(feature = "auth")]
        let checks_tokens = auth.is_some();
        #[cfg(not(feature = "auth"))]
        let checks_tokens = false;
        if !checks_tokens && let Some((kind, name)) = registry.first_scoped() {
            return Err(Error::Config(format!(
                "{kind} `{name}` names scopes or takes the caller's Principal, but the server checks no tokens: configure Server::authorization (feature `auth`)"
            )));
        }
        #[cfg(feature = "auth")]
        if let Some(a) = &auth {
            a.check().map_err(Error::Config)?;
        }
        let env = ResultEnv::new(&config.info, config.cache);
        let list_changed = || ListChangedCapability {
            list_changed: Some(true),
        };
        // A server with sources (`Server::proxy`) offers what they may list: which it is
        // can change while it runs.
        let sourced = !config.sources.is_empty();
        let capabilities = ServerCapabilities {
            experimental: None,
            logging: Some(Default::default()),
            completions: (sourced || registry.has_completions()).then(Default::default),
            prompts: (sourced || !registry.prompts.is_empty()).then(list_changed),
            // Skill files and views are resources (the skills extension requires the
            // capability).
            resources: (sourced
                || !registry.resources.is_empty()
                || !registry.templates.is_empty()
                || !registry.skills.is_empty()
                || !registry.views.is_empty())
            .then_some(ResourcesCapability {
                subscribe: Some(true),
                list_changed: Some(true),
            }),
            tools: (sourced || !registry.tools.is_empty()).then(list_changed),
            // MCP Apps exists on every revision (SEP-1865 negotiates it in `initialize` and in
            // 2026-07-28 `_meta` alike).
            extensions: (!registry.views.is_empty()).then(|| {
                let mut ext = serde_json::Map::new();
                ext.insert(
                    crate::protocol::apps::EXTENSION.into(),
                    crate::protocol::apps::client_settings(),
                );
                ext
            }),
        };
        let (signer, replica_key) = signer(&config)?;
        // Replicas authenticate what they leave for each other with a key derived from the
        // session key: with a random one, no replica could read another's messages.
        if relay.is_some() && !replica_key.is_configured() {
            return Err(Error::Config(
                "a shared event bus (Server::event_bus) needs a session key every replica shares (Server::session_key or SAKE_SESSION_KEY, at least 32 random bytes): replicas authenticate their messages with a key derived from it".into(),
            ));
        }
        let callers = Arc::new(callers::Callers::new(
            signer.clone(),
            principal,
            #[cfg(feature = "auth")]
            auth.clone(),
            config.limits.ipv6_client_prefix,
        ));
        let sessions = Arc::new(Sessions::new(
            signer,
            config.session_lifetime,
            config.session_refresh_after,
            config.limits.max_tracked_sessions,
            config.limits.max_records_per_client,
        ));
        let hub = Hub::new(
            config.limits.max_tracked_sessions,
            config.limits.max_records_per_client,
            config.limits.max_subscriptions_per_session,
        );
        // The tasks extension, when a tool may run as a task, or a source's may (the tasks of
        // upstreams are relayed: server/tasks.rs); advertised only by discovery (the
        // handshake revisions have no such extension).
        let tasks = if sourced
            || registry
                .tools
                .iter()
                .any(|t| t.def.task_support != crate::handler::TaskSupport::Forbidden)
        {
            let store =
                task_store.unwrap_or_else(|| Arc::new(crate::tasks::MemoryTaskStore::new()));
            store.start(&replica_key).map_err(|e| {
                Error::Config(match e {
                    crate::tasks::TaskStoreError::Backend(why) => {
                        format!("the task store (Server::task_store) cannot start: {why}")
                    }
                    other => format!("the task store (Server::task_store) cannot start: {other}"),
                })
            })?;
            Some(Arc::new(tasks::Tasks::new(
                store,
                config.task_ttl,
                config.task_poll_interval,
                config.task_lease,
                relay.clone(),
            )))
        } else {
            None
        };
        // `server/discover`, rendered for each revision a client discovers.
        let mut discover: [Bytes; Revision::COUNT] = Default::default();
        for rev in Revision::ALL.into_iter().filter(|r| r.features().discover) {
            let mut discovered = capabilities.clone();
            // What `initialize` advertises too (MCP Apps), then what only discovery does.
            let mut ext = discovered.extensions.take().unwrap_or_default();
            if tasks.is_some() && rev.features().tasks {
                ext.insert(crate::protocol::tasks::EXTENSION.into(), json!({}));
            }
            // The skills extension, with `resources/directory/read`: every skill is served as
            // files, so every directory of the namespace can be read.
            if (sourced || !registry.skills.is_empty()) && rev.features().skills {
                ext.insert(
                    crate::protocol::skills::EXTENSION.into(),
                    crate::skills::declaration(),
                );
            }
            if !ext.is_empty() {
                discovered.extensions = Some(ext);
            }
            let mut result = json!({
                "supportedVersions": Revision::ALL.iter().map(|r| r.as_str()).collect::<Vec<_>>(),
                "capabilities": discovered,
            });
            if let Some(i) = &config.instructions {
                result["instructions"] = Value::String(i.clone());
            }
            discover[rev.index()] =
                Bytes::from(render::result_value(rev, &env, Cache::Cacheable, result));
        }
        let restart = dev::Restart::from_env(&registry, config.limits.max_tracked_sessions);
        let events = events::Events::new(config.limits.event_buffer, relay, replica_key);
        for source in &config.sources {
            source.attach(events.notifier().clone());
        }
        let invoker = invoker::Invoker::new(
            invoker::Stacks::compose(
                &registry,
                config.sources.iter().map(|s| s.label()),
                &config.layers,
            )?,
            sessions.signer().clone(),
            callers.clone(),
            events.notifier().clone(),
            Arc::new(states),
            config.limits.ipv6_client_prefix,
        );
        let catalog = catalog::Catalog::new(
            registry,
            env.clone(),
            &config,
            discover,
            callers.clone(),
            #[cfg(feature = "auth")]
            auth,
        );
        let pending = Arc::new(Pending::new(
            config.limits.max_pending_inputs,
            config.limits.max_pending_inputs_per_session,
        ));
        let inflight: Arc<inflight::Inflight> = Arc::default();
        let lifecycle = Arc::new(lifecycle::Lifecycle {
            sessions: sessions.clone(),
            hub: hub.clone(),
            pending: pending.clone(),
            inflight: inflight.clone(),
            callers: callers.clone(),
            relay: events.relay().cloned(),
            restart,
            session_lifetime: config.session_lifetime,
        });
        Ok(Shared {
            invoker,
            pending,
            events,
            lifecycle,
            hub,
            sessions,
            inflight,
            shutdown: tokio_util::sync::CancellationToken::new(),
            admission: admission::Admission::new(&config.limits, callers.clone()),
            callers,
            tasks,
            catalog,
            config,
            env,
            capabilities,
        })
    }
}

/// The keys: the builder's, else `SAKE_SESSION_KEY` (and `SAKE_PREVIOUS_SESSION_KEYS`,
/// comma-separated), else a random one — or a start-up error when the server requires a
/// configured key. (A random key is warned of where it matters: a listener other machines
/// reach, `greeting::greet`.) The server's name is bound into every signature. With them, the
/// key the replicas share, derived from the same keys.
fn signer(config: &Config) -> Result<(Signer, crate::signing::ReplicaKey), Error> {
    use crate::signing::ReplicaKey;
    const MIN: usize = 32;
    let env_key = |name: &str| std::env::var_os(name).map(|v| v.into_encoded_bytes());
    let (current, previous, source) = match &config.session_key {
        Some(k) => (
            Some(k.clone()),
            config.previous_session_keys.clone(),
            "Server::session_key",
        ),
        None => (
            env_key("SAKE_SESSION_KEY"),
            env_key("SAKE_PREVIOUS_SESSION_KEYS")
                .map(|v| {
                    v.split(|b| *b == b',')
                        .map(<[u8]>::trim_ascii)
                        .filter(|k| !k.is_empty())
                        .map(<[u8]>::to_vec)
                        .collect()
                })
                .unwrap_or_default(),
            "SAKE_SESSION_KEY",
        ),
    };
    let audience = config.info.name.as_str();
    match current {
        Some(key) => {
            for (which, k) in std::iter::once(("the session key", &key))
                .chain(previous.iter().map(|k| ("a previous session key", k)))
            {
                if k.len() < MIN {
                    return Err(Error::Config(format!(
                        "{which} from {source} has {} bytes; use at least {MIN} random bytes",
                        k.len()
                    )));
                }
            }
            let unusable = || Error::Config("the session key is unusable".into());
            let previous_keys: Vec<&[u8]> = previous.iter().map(Vec::as_slice).collect();
            Ok((
                Signer::with_keys(&key, &previous, audience).ok_or_else(unusable)?,
                ReplicaKey::new(&key, &previous_keys, audience).ok_or_else(unusable)?,
            ))
        }
        None if config.require_session_key => Err(Error::Config(
            "no session key: set Server::session_key or SAKE_SESSION_KEY (at least 32 random bytes, the same on every replica), or drop Server::require_session_key".into(),
        )),
        None => {
            tracing::debug!(
                "no session key configured (Server::session_key or SAKE_SESSION_KEY): a random one is used, so handshake sessions and requestState end when this process does"
            );
            let none = || Error::Config("no randomness available for a session key".into());
            Ok((
                Signer::random(audience).ok_or_else(none)?,
                ReplicaKey::random(audience).ok_or_else(none)?,
            ))
        }
    }
}
