//! The engine: everything built at start-up and shared by every request, whatever the
//! transport — the registry's lists per revision, the signing key and sessions, the event
//! bus, the records of handshake sessions — and the front that serves requests with it.
//!
//! The public builder ([`Server`](crate::Server)) and the built [`Service`](crate::Service)
//! live above the transports, in `service.rs`.

pub(crate) mod dispatch;
pub(crate) mod front;
pub(crate) mod hub;
pub(crate) mod inflight;
pub(crate) mod session;
pub(crate) mod subscriptions;
pub(crate) mod tasks;

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
use hub::Hub;
use session::Sessions;

/// Names the authenticated caller of a request.
pub(crate) type PrincipalFn = Arc<dyn Fn(&http::Extensions) -> Option<String> + Send + Sync>;

/// The settings of the engine, whatever the transport (the HTTP ones are
/// `transport::http::HttpConfig`).
#[derive(Clone, Debug)]
pub(crate) struct Config {
    pub info: Implementation,
    pub instructions: Option<String>,
    pub max_body_bytes: usize,
    pub page_size: Option<usize>,
    pub cache: CacheHints,
    pub stream_buffer: usize,
    pub session_key: Option<Vec<u8>>,
    pub session_lifetime: Duration,
    pub session_refresh_after: Duration,
    pub request_state_lifetime: Duration,
    pub input_timeout: Duration,
    pub keep_alive: Duration,
    pub max_batch: usize,
    pub max_pending_inputs: usize,
    pub event_buffer: usize,
    pub max_tracked_sessions: usize,
    pub max_subscriptions_per_session: usize,
    pub request_timeout: Duration,
    pub max_concurrent_requests: usize,
    pub max_streams: usize,
    pub task_ttl: Duration,
    pub task_poll_interval: Duration,
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
            keep_alive: Duration::from_secs(15),
            max_batch: 1000,
            max_pending_inputs: 10_000,
            event_buffer: 1024,
            max_tracked_sessions: 100_000,
            max_subscriptions_per_session: 1024,
            request_timeout: Duration::from_secs(600),
            max_concurrent_requests: 4096,
            max_streams: 16_384,
            task_ttl: Duration::from_secs(300),
            task_poll_interval: Duration::from_secs(1),
        }
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
    pub lists: [RevisionLists; Revision::COUNT],
    pub discover: Bytes,
    pub sessions: Sessions,
    pub pending: Arc<Pending>,
    pub hub: Arc<Hub>,
    /// The events published through [`Notifier`]s, fanned out to listening streams.
    pub bus: Arc<Bus>,
    pub notifier: Notifier,
    pub inflight: Arc<crate::server::inflight::Inflight>,
    /// Fired when the server shuts down: long-lived streams end with their final messages.
    pub shutdown: tokio_util::sync::CancellationToken,
    pub states: Arc<crate::handler::state::StateMap>,
    pub principal: Option<PrincipalFn>,
    /// Requests being served (HTTP): bounded by `max_concurrent_requests`.
    pub requests: Arc<tokio::sync::Semaphore>,
    /// Long-lived streams: bounded by `max_streams`.
    pub streams_open: Arc<tokio::sync::Semaphore>,
    /// The tasks extension, when a tool may run as a task.
    pub tasks: Option<Arc<tasks::Tasks>>,
}

impl Shared {
    /// Builds everything: the lists of every revision, the discovery result, the signing key.
    pub(crate) fn new(
        registry: Registry,
        config: Config,
        states: crate::handler::state::StateMap,
        principal: Option<PrincipalFn>,
        task_store: Option<Arc<dyn crate::tasks::TaskStore>>,
    ) -> Result<Shared, Error> {
        registry.check_states(&states)?;
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
        let mut lists: [RevisionLists; Revision::COUNT] = Default::default();
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
        // The tasks extension, when a tool may run as a task; advertised only by discovery
        // (the handshake revisions have no such extension).
        let tasks = registry
            .tools
            .iter()
            .any(|t| t.def.task_support != crate::handler::TaskSupport::Forbidden)
            .then(|| {
                let store =
                    task_store.unwrap_or_else(|| Arc::new(crate::tasks::MemoryTaskStore::new()));
                Arc::new(tasks::Tasks::new(
                    store,
                    config.task_ttl,
                    config.task_poll_interval,
                ))
            });
        let mut discovered = capabilities.clone();
        if tasks.is_some() && Revision::LATEST.features().tasks {
            let mut ext = serde_json::Map::new();
            ext.insert(crate::protocol::tasks::EXTENSION.into(), json!({}));
            discovered.extensions = Some(ext);
        }
        let mut discover = json!({
            "supportedVersions": Revision::ALL.iter().map(|r| r.as_str()).collect::<Vec<_>>(),
            "capabilities": discovered,
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
            inflight: Arc::default(),
            shutdown: tokio_util::sync::CancellationToken::new(),
            states: Arc::new(states),
            principal,
            requests: Arc::new(tokio::sync::Semaphore::new(config.max_concurrent_requests)),
            streams_open: Arc::new(tokio::sync::Semaphore::new(config.max_streams)),
            tasks,
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
