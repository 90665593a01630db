//! The catalog: what the server serves, as each caller sees it.
//!
//! It owns the [`Registry`] (the definitions), their lists per revision and audience (rendered
//! on the first request that needs them) with the views of `Authorization::hide_unauthorized`
//! (only what a caller's scopes allow), the `server/discover` result, and the one lookup of
//! what a URI or name a client sends denotes.
//!
//! Every request that names a definition by URI or name — `resources/read` (of a resource, a
//! template's match, a skill's file or a view), `resources/subscribe`, a
//! `subscriptions/listen` filter, `skills/get`, `resources/directory/read`, `prompts/get` —
//! finds it through [`Catalog::denoted`]: the registry's lookup for its [`Kind`], then the
//! scopes that guard what was found ([`Callers::authorize`]: 401 for an anonymous caller, 403
//! for a token without them). A name that denotes nothing gets its kind's error; nothing is
//! found without the check.
//!
//! # The seam (composition)
//!
//! A source of definitions other than this server's own functions — a server mounted into
//! this one, a remote server behind a proxy — plugs in here and must provide, for each
//! [`Kind`] it serves, a `find` (what a URI or name denotes, or nothing) and the `access` that
//! guards what it found (its scopes, whether it needs a signed-in caller), and for the lists,
//! its items per revision and audience with the scopes that guard each (what `lists_of` pages
//! and renders, filtered by the caller's view). The catalog does the rest the same way for
//! every source: the check of the caller, the error of a name that denotes nothing, the
//! paging, the rendering per revision, the caching of the lists.

use std::sync::Arc;

use base64::Engine as _;
use bytes::Bytes;
use serde_json::{Value, json};
use std::borrow::Cow;

use super::callers::Callers;
use crate::handler::PromptDef;
use crate::protocol::Revision;
use crate::protocol::jsonrpc::RpcError;
use crate::protocol::render::{self, Cache, CacheScope, ResultEnv};
use crate::registry::Audience;
use crate::registry::{Named, Registry};

/// How many filtered views of the lists `caller_lists` keeps.
#[cfg(feature = "auth")]
const MAX_VIEWS: usize = 64;

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
    /// `skills/list` (the skills extension; empty where the revision has none).
    pub skills: Pages,
}

/// What one view of the server shows, each revision's lists for each audience (what the
/// client declared that changes them: MCP Apps) rendered on the first request that needs
/// them ([`Catalog::lists_of`]): a server of a thousand tools starts without rendering them
/// four times, and one without MCP Apps renders each revision's once.
#[derive(Debug, Default)]
pub(crate) struct Lists {
    /// Which of `Catalog::scope_sets` the view holds; `None`: everything is shown.
    view: Option<Vec<bool>>,
    by_revision: [[std::sync::OnceLock<RevisionLists>; Audience::COUNT]; Revision::COUNT],
}

/// The catalog of a server (see the module's documentation).
pub(crate) struct Catalog {
    /// The definitions.
    pub registry: Registry,
    /// How results are rendered (the server's info and cache hints).
    pub(super) env: ResultEnv,
    pub(super) page_size: Option<usize>,
    /// How long a dynamic skill's source may take to answer (`Limits::request_timeout`).
    pub(super) request_timeout: std::time::Duration,
    /// Everything, as every caller sees it unless `Authorization::hide_unauthorized` is on.
    lists: Lists,
    /// The `server/discover` result, by revision.
    pub discover: [Bytes; Revision::COUNT],
    /// Who may see what.
    callers: Arc<Callers>,
    /// The distinct scope sets functions name, for the views of `caller_lists`.
    scope_sets: Vec<&'static [&'static str]>,
    /// For the views of `caller_lists` (feature `auth`).
    #[cfg(feature = "auth")]
    auth: Option<Arc<crate::auth::Authorization>>,
    /// Filtered lists by view (which of `scope_sets` the caller holds).
    #[cfg(feature = "auth")]
    views: std::sync::Mutex<std::collections::HashMap<Vec<bool>, Arc<Lists>>>,
    /// Definitions fetched from elsewhere (`Server::proxy`), served after the registry's.
    pub sources: super::source::Sources,
}

use crate::skills::{DirAt, Served};

/// A kind of definition a client names by URI or name.
pub(crate) trait Kind {
    /// What a URI or name of this kind denotes.
    type Found<'r>;
    /// What a refusal calls it (`resource`, `skill`, …), before the URI or name.
    const WHAT: &'static str;
    /// The registry's lookup.
    fn find<'r>(registry: &'r Registry, key: &str) -> Option<Self::Found<'r>>;
    /// The scopes that guard what was found, and whether it needs a signed-in caller.
    fn access(found: &Self::Found<'_>) -> (&'static [&'static str], bool);
    /// The error for a URI or name that denotes nothing of this kind.
    fn unknown(registry: &Registry, key: &str) -> RpcError;
}

/// A resource URI (`resources/read`, `resources/subscribe`, a listen filter): a skill's file,
/// a view, a static resource, or the first template that matches ([`Registry::named`]).
pub(crate) struct Resource;

impl Kind for Resource {
    type Found<'r> = Named<'r>;
    const WHAT: &'static str = "resource";
    fn find<'r>(registry: &'r Registry, key: &str) -> Option<Named<'r>> {
        registry.named(key)
    }
    fn access(found: &Named<'_>) -> (&'static [&'static str], bool) {
        found.access()
    }
    fn unknown(_: &Registry, key: &str) -> RpcError {
        RpcError::resource_not_found(key)
    }
}

/// A skill, by the URI of its `SKILL.md` (`skills/get`).
pub(crate) struct Skill;

impl Kind for Skill {
    type Found<'r> = &'r Served;
    const WHAT: &'static str = "skill";
    fn find<'r>(registry: &'r Registry, key: &str) -> Option<&'r Served> {
        registry.skills.skill(key)
    }
    fn access(found: &&Served) -> (&'static [&'static str], bool) {
        (found.scopes, false)
    }
    fn unknown(_: &Registry, key: &str) -> RpcError {
        RpcError::invalid_params(format!("No skill is served at {key}"))
            .with_data(json!({ "uri": key }))
    }
}

/// A directory of the skill namespace (`resources/directory/read`).
pub(crate) struct Directory;

impl Kind for Directory {
    type Found<'r> = DirAt<'r>;
    const WHAT: &'static str = "directory";
    fn find<'r>(registry: &'r Registry, key: &str) -> Option<DirAt<'r>> {
        registry.skills.directory(key)
    }
    fn access(found: &DirAt<'_>) -> (&'static [&'static str], bool) {
        match found {
            DirAt::Static(dir) => (dir.scopes, false),
            DirAt::Dynamic(skill, _) => (skill.scopes, false),
        }
    }
    fn unknown(registry: &Registry, key: &str) -> RpcError {
        let what = if registry.skills.file(key).is_some() {
            "is not a directory resource"
        } else {
            "is not a directory this server serves"
        };
        RpcError::invalid_params(format!("{key} {what}")).with_data(json!({ "uri": key }))
    }
}

/// A prompt, by name (`prompts/get`).
pub(crate) struct Prompt;

impl Kind for Prompt {
    type Found<'r> = &'static PromptDef;
    const WHAT: &'static str = "prompt";
    fn find(registry: &Registry, key: &str) -> Option<&'static PromptDef> {
        registry.prompt(key)
    }
    fn access(found: &&'static PromptDef) -> (&'static [&'static str], bool) {
        (found.scopes, found.principal)
    }
    fn unknown(_: &Registry, key: &str) -> RpcError {
        RpcError::invalid_params(format!("Unknown prompt: {key}")).with_data(json!({ "name": key }))
    }
}

impl Catalog {
    pub(crate) fn new(
        registry: Registry,
        env: ResultEnv,
        config: &super::Config,
        discover: [Bytes; Revision::COUNT],
        callers: Arc<Callers>,
        #[cfg(feature = "auth")] auth: Option<Arc<crate::auth::Authorization>>,
    ) -> Catalog {
        Catalog {
            scope_sets: registry.scope_sets(),
            registry,
            env,
            page_size: config.page_size,
            request_timeout: config.limits.request_timeout,
            lists: Lists::default(),
            discover,
            callers,
            #[cfg(feature = "auth")]
            auth,
            #[cfg(feature = "auth")]
            views: Default::default(),
            sources: config.sources.clone(),
        }
    }

    /// The source (`Server::proxy`) that serves `key` of `kind`, when the registry does not.
    pub(crate) fn source_of(
        &self,
        kind: super::source::ListKind,
        key: &str,
    ) -> Option<Arc<dyn super::source::Source>> {
        self.source_index(kind, key)
            .map(|i| self.sources[i].clone())
    }

    /// Which source serves `key` of `kind` (its place in `sources`): the first that owns it
    /// under its prefix, else the first without a prefix (which owns every name).
    pub(crate) fn source_index(&self, kind: super::source::ListKind, key: &str) -> Option<usize> {
        let owner = |catch_all: bool| {
            self.sources
                .iter()
                .position(|s| s.catches_all() == catch_all && s.owns(kind, key))
        };
        owner(false).or_else(|| owner(true))
    }

    /// What `key` denotes as a `K`, if the caller (its request's `extensions`) may see it:
    /// the kind's error for a key that denotes nothing, the 401 or 403 of
    /// [`Callers::authorize`] for a caller without the scopes that guard it.
    pub(crate) fn denoted<K: Kind>(
        &self,
        extensions: &http::Extensions,
        key: &str,
    ) -> Result<K::Found<'_>, RpcError> {
        let found = K::find(&self.registry, key).ok_or_else(|| K::unknown(&self.registry, key))?;
        let (scopes, principal) = K::access(&found);
        self.callers.authorize(
            extensions,
            format_args!("{} `{key}`", K::WHAT),
            scopes,
            principal,
        )?;
        Ok(found)
    }

    /// Whether the caller may follow `uri` (a subscription, a listen filter): it is no
    /// longer than [`MAX_URI_BYTES`](super::MAX_URI_BYTES), and it denotes a resource the
    /// caller may read, as `resources/read` checks. A client may make the server remember
    /// only URIs it could read.
    ///
    /// A source's resource (`Server::proxy`) is followed at its source for `caller` (its
    /// `Admission::caller_key`): the `Following` given back is kept with the subscription,
    /// and dropped with it (the source stops following the URI with its last holder). `None`:
    /// the program's own resource, or one its source does not follow (past its bounds).
    pub(crate) fn followable_uri(
        &self,
        extensions: &http::Extensions,
        uri: &str,
        caller: crate::quota::Key,
    ) -> Result<Option<super::source::Following>, RpcError> {
        if uri.len() > super::MAX_URI_BYTES {
            return Err(RpcError::invalid_params(format!(
                "Invalid params: the URI has {} bytes; this server serves none longer than {}",
                uri.len(),
                super::MAX_URI_BYTES
            )));
        }
        if self.registry.named(uri).is_none()
            && let Some(source) = self.source_of(super::source::ListKind::Resources, uri)
        {
            // A source's resource (`Server::proxy`): its upstream is asked to tell of it.
            return Ok(source.follow(uri, caller));
        }
        self.denoted::<Resource>(extensions, uri).map(|_| None)
    }

    /// Every caller's lists of `rev`, as `audience` sees them.
    pub(crate) fn lists(&self, rev: Revision, audience: Audience) -> &RevisionLists {
        self.lists_of(&self.lists, rev, audience)
    }

    /// The lists of `rev` in `lists`' view, as `audience` sees them: rendered on the first
    /// request that needs them, then served as they are. Requests that arrive while they are
    /// being rendered wait for them.
    pub(crate) fn lists_of<'a>(
        &self,
        lists: &'a Lists,
        rev: Revision,
        audience: Audience,
    ) -> &'a RevisionLists {
        lists.by_revision[rev.index()][audience.index()].get_or_init(|| {
            let _span =
                tracing::debug_span!("build_lists", revision = rev.as_str(), apps = audience.apps)
                    .entered();
            let shown = |scopes: &[&str]| self.shown(lists, scopes);
            revision_lists(
                &self.registry,
                &self.env,
                self.page_size,
                rev,
                &shown,
                audience,
            )
        })
    }

    /// Whether `lists`' view shows a function that names `scopes`.
    pub(crate) fn shown(&self, lists: &Lists, scopes: &[&str]) -> bool {
        match &lists.view {
            None => true,
            Some(view) => {
                scopes.is_empty()
                    || self
                        .scope_sets
                        .iter()
                        .position(|s| *s == scopes)
                        .is_some_and(|i| view.get(i).copied().unwrap_or(false))
            }
        }
    }

    /// The view of the lists a caller sees when `Authorization::hide_unauthorized` is on:
    /// only what their scopes allow. One per distinct view (which scope sets the caller holds),
    /// kept, at most [`MAX_VIEWS`] of them; its lists are rendered as `lists_of` needs them.
    /// `None`: everyone sees the same lists.
    #[cfg(feature = "auth")]
    pub(crate) fn caller_lists(&self, extensions: &http::Extensions) -> Option<Arc<Lists>> {
        let auth = self.auth.as_ref().filter(|a| a.hide_unauthorized)?;
        if self.scope_sets.is_empty() {
            return None;
        }
        let principal = extensions.get::<crate::auth::Principal>();
        let view: Vec<bool> = self
            .scope_sets
            .iter()
            .map(|set| principal.is_some_and(|p| auth.missing(p, set).is_empty()))
            .collect();
        let mut views = self.views.lock().ok()?;
        if let Some(lists) = views.get(&view) {
            return Some(lists.clone());
        }
        if views.len() >= MAX_VIEWS {
            views.clear();
        }
        let lists = Arc::new(Lists {
            view: Some(view.clone()),
            by_revision: Default::default(),
        });
        views.insert(view, lists.clone());
        Some(lists)
    }
}

/// One revision's lists of what `visible` shows to `audience`, paged and rendered.
///
/// On a server with MCP Apps the tools and resources lists differ with what the client
/// declared: they say `cacheScope: "private"`, so that no cache shared between clients (a
/// gateway) serves one client's list to another.
fn revision_lists(
    registry: &Registry,
    env: &ResultEnv,
    page_size: Option<usize>,
    rev: Revision,
    visible: crate::registry::Visible<'_>,
    audience: Audience,
) -> RevisionLists {
    let page = |kind: &str, key: &str, items: Vec<Value>| {
        paginate(rev, env, page_size, Cache::Cacheable, kind, key, items)
    };
    let mut per_client = env.clone();
    per_client.cache.scope = CacheScope::Private;
    let page_per_client = |varies: bool, kind: &str, key: &str, items: Vec<Value>| {
        let env = if varies { &per_client } else { env };
        paginate(rev, env, page_size, Cache::Cacheable, kind, key, items)
    };
    RevisionLists {
        tools: page_per_client(
            registry.tools_depend_on_apps(),
            "tools",
            "tools",
            registry.tools_visible(rev, visible, audience),
        ),
        prompts: page("prompts", "prompts", registry.prompts_visible(rev, visible)),
        resources: page_per_client(
            registry.resources_depend_on_apps(),
            "resources",
            "resources",
            registry.resources_visible(rev, visible, audience),
        ),
        templates: page(
            "templates",
            "resourceTemplates",
            registry.templates_visible(rev, visible),
        ),
        skills: page("skills", "skills", registry.skills_visible(rev, visible)),
    }
}

pub(crate) fn paginate(
    rev: Revision,
    env: &ResultEnv,
    page_size: Option<usize>,
    cache: Cache,
    kind: &str,
    key: &str,
    items: Vec<Value>,
) -> Pages {
    let size = page_size.unwrap_or(usize::MAX).max(1);
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
                Bytes::from(render::result_value(rev, env, cache, Value::Object(body)))
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
