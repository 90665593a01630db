//! The dispatcher's half for definitions fetched from elsewhere ([`Source`]s, `Server::proxy`):
//! a source's tool, prompt, resource or completion forwarded through the invoker like any
//! function, and the lists and skills of a server with sources.

use std::borrow::Cow;
use std::sync::Arc;

use bytes::Bytes;
use serde_json::json;
use serde_json::value::RawValue;

use super::{Dispatched, finish_prompt, finish_resource, finish_tool, object_or_absent, required};
use crate::handler::context::{Context, RequestParts};
use crate::handler::input::{Mrtr, RoundKey};
use crate::protocol::Revision;
use crate::protocol::apps;
use crate::protocol::jsonrpc::RpcError;
use crate::protocol::meta::Params;
use crate::protocol::methods::Method;
use crate::protocol::render::{self, Cache, Shape};
use crate::protocol::types::{GetPromptResult, ReadResourceResult};
use crate::server::Shared;
use crate::server::catalog::{self, decode_cursor};
use crate::server::invoker::Function;
use crate::server::source::{ListKind, Remote, RemoteTool, Source};

impl Shared {
    /// A call of `source`'s function: `name` forwarded as the request's `field`, with
    /// `arguments` beside it, through the invoker like any function (its layers, its input
    /// rounds under `round_arguments`, its cancellation and time limit), rendered by `finish`.
    #[allow(clippy::too_many_arguments)]
    fn forward_call<T>(
        self: &Arc<Self>,
        parts: RequestParts,
        params: &Params<'_>,
        source: Arc<dyn Source>,
        (method, field, name): (&'static str, &'static str, String),
        (arguments, round_arguments): (Option<Box<RawValue>>, Option<&RawValue>),
        finish: impl FnOnce(&Shared, Revision, T, Option<&Mrtr>) -> Result<Bytes, RpcError>
        + Send
        + 'static,
    ) -> Result<Dispatched, RpcError>
    where
        Remote<T>: Function<Output = T>,
    {
        let mut forwarded = serde_json::Map::new();
        forwarded.insert(field.into(), json!(name));
        let key = RoundKey {
            method,
            name: Cow::Owned(name.clone()),
            arguments: None,
            principal: None,
        };
        self.run(
            parts,
            Remote::<T>::new(source, method, name, forwarded, arguments),
            (key, round_arguments),
            params,
            finish,
        )
    }

    /// `tools/call` of a source's tool: a transform's fixed and default arguments put in before
    /// the layers see them, as for the program's own tools; a task the upstream makes of the
    /// call relayed (server/tasks/relayed.rs).
    pub(super) fn call_remote_tool(
        self: &Arc<Self>,
        parts: RequestParts,
        params: &Params<'_>,
        source: Arc<dyn Source>,
        name: String,
    ) -> Result<Dispatched, RpcError> {
        let arguments = object_or_absent(params.arguments, "arguments")?;
        let edited = source.edit(&name).map(|e| e.apply(arguments)).transpose()?;
        let round_arguments = edited.as_deref().or(arguments);
        let forwarded = match edited.clone() {
            Some(edited) => Some(edited),
            None => arguments.map(ToOwned::to_owned),
        };
        let relay = self.relay_for(&parts, &source);
        self.forward_call(
            parts,
            params,
            source,
            ("tools/call", "name", name),
            (forwarded, round_arguments),
            move |shared: &Shared, rev, out, round: Option<&Mrtr>| match (out, relay) {
                (RemoteTool::Result(r), _) => finish_tool(shared, rev, r, round),
                (RemoteTool::Task(task), Some(relay)) => relay.created(shared, rev, task),
                (RemoteTool::Task(_), None) => Err(RpcError::internal(
                    "Internal error: the upstream server answered with a task, which this call did not offer",
                )),
            },
        )
    }

    /// `prompts/get` of a source's prompt.
    pub(super) fn get_remote_prompt(
        self: &Arc<Self>,
        parts: RequestParts,
        params: &Params<'_>,
        source: Arc<dyn Source>,
        name: String,
    ) -> Result<Dispatched, RpcError> {
        let arguments = object_or_absent(params.arguments, "arguments")?;
        self.forward_call::<Result<GetPromptResult, RpcError>>(
            parts,
            params,
            source,
            ("prompts/get", "name", name),
            (arguments.map(ToOwned::to_owned), arguments),
            finish_prompt,
        )
    }

    /// `resources/read` of a source's resource.
    pub(super) fn read_remote_resource(
        self: &Arc<Self>,
        parts: RequestParts,
        params: &Params<'_>,
        source: Arc<dyn Source>,
        uri: String,
    ) -> Result<Dispatched, RpcError> {
        self.forward_call::<Result<ReadResourceResult, RpcError>>(
            parts,
            params,
            source,
            ("resources/read", "uri", uri),
            (None, None),
            finish_resource,
        )
    }

    /// `completion/complete` of a source's prompt or template, forwarded as it came.
    pub(super) fn complete_remote(
        self: &Arc<Self>,
        rev: Revision,
        params: &Params<'_>,
        source: Arc<dyn Source>,
    ) -> Result<Dispatched, RpcError> {
        let mut forwarded = serde_json::Map::new();
        for (field, raw) in [
            ("ref", params.reference),
            ("argument", params.argument),
            ("context", params.context),
        ] {
            if let Some(raw) = raw {
                forwarded.insert(field.into(), raw_value(raw)?);
            }
        }
        let shared = self.clone();
        let limit = self.config.limits.request_timeout;
        Ok(Dispatched::Pending(Box::pin(async move {
            let forwarded = source.forward("completion/complete", forwarded, Context::detached());
            let result = tokio::time::timeout(limit, forwarded)
                .await
                .map_err(|_| crate::server::invoker::timed_out("completion/complete", limit))??;
            Ok(Bytes::from(render::result(
                rev,
                &shared.env,
                Shape::Plain,
                Cache::None,
                &result,
            )))
        })))
    }
}

/// A raw JSON value of a request, parsed to be forwarded.
fn raw_value(raw: &RawValue) -> Result<serde_json::Value, RpcError> {
    serde_json::from_str(raw.get())
        .map_err(|e| RpcError::invalid_params(format!("Invalid params: {e}")))
}

impl Shared {
    /// The skills extension's requests on a server whose skills are its sources' (a gateway):
    /// `skills/list` of its source (of every one, when it has several: `merged_skills`),
    /// `skills/get` and `resources/directory/read` of the source that serves the URI,
    /// forwarded as they are.
    pub(super) fn forward_skills(
        self: &Arc<Self>,
        parts: &RequestParts,
        method: Method,
        params: &Params<'_>,
    ) -> Result<Dispatched, RpcError> {
        let rev = parts.revision;
        if method == Method::SkillsList && self.catalog.sources.len() > 1 {
            let cursor = params
                .cursor
                .map(|c| required(Some(c), "cursor"))
                .transpose()?
                .map(Cow::into_owned);
            return Ok(self.merged_skills(rev, cursor));
        }
        let mut forwarded = serde_json::Map::new();
        for (field, raw) in [("uri", params.uri), ("cursor", params.cursor)] {
            if let Some(raw) = raw {
                forwarded.insert(field.into(), raw_value(raw)?);
            }
        }
        let source = match method {
            Method::SkillsList => self.catalog.sources.first().cloned(),
            _ => {
                let uri = required(params.uri, "uri")?;
                self.catalog.source_of(ListKind::Resources, &uri)
            }
        };
        let Some(source) = source else {
            let uri = required(params.uri, "uri")?;
            return Err(
                RpcError::invalid_params(format!("No skill is served at {uri}"))
                    .with_data(json!({ "uri": uri })),
            );
        };
        let shared = self.clone();
        let limit = self.config.limits.request_timeout;
        let name = method.as_str();
        Ok(Dispatched::Pending(Box::pin(async move {
            let forwarded = source.forward(name, forwarded, Context::detached());
            let mut result = tokio::time::timeout(limit, forwarded)
                .await
                .map_err(|_| crate::server::invoker::timed_out(name, limit))
                .and_then(|r| r)
                .map_err(|e| render::error(rev, e))?;
            // Rendered again for this client: the upstream's own envelope goes.
            if let serde_json::Value::Object(o) = &mut result {
                o.remove("ttlMs");
                o.remove("cacheScope");
            }
            Ok(Bytes::from(render::result(
                rev,
                &shared.env,
                Shape::Plain,
                Cache::Cacheable,
                &result,
            )))
        })))
    }

    /// `skills/list` of a server with several sources: every source's skills (each followed
    /// through its pages, at most [`MAX_SKILL_PAGES`] of them; a source that cannot list is
    /// left out, logged), under their prefixes, paged as a list of the server's own.
    fn merged_skills(self: &Arc<Self>, rev: Revision, cursor: Option<String>) -> Dispatched {
        let shared = self.clone();
        Dispatched::Pending(Box::pin(async move {
            let limit = shared.config.limits.request_timeout;
            let all = futures_util::future::join_all(
                shared
                    .catalog
                    .sources
                    .iter()
                    .map(|source| all_skills(source.clone(), limit)),
            )
            .await;
            let mut items = Vec::new();
            for (source, got) in shared.catalog.sources.iter().zip(all) {
                match got {
                    Ok(skills) => items.extend(skills),
                    Err(e) => tracing::debug!(
                        source = source.label(),
                        "no skills from this upstream: {}",
                        e.message
                    ),
                }
            }
            let mut env = shared.env.clone();
            env.cache.scope = crate::protocol::render::CacheScope::Private;
            let pages = catalog::paginate(
                rev,
                &env,
                shared.config.page_size,
                Cache::Cacheable,
                "skills",
                "skills",
                items,
            );
            let i = decode_cursor("skills", cursor.as_deref(), pages.0.len())
                .map_err(|e| render::error(rev, e))?;
            Ok(pages.0[i].clone())
        }))
    }

    /// A list of a server with sources: the registry's items the caller sees, then each
    /// source's (fetched or cached; a source that cannot list is left out, logged), rendered
    /// for the request's revision and paged as the registry's alone would be.
    pub(super) fn list_with_sources(
        self: &Arc<Self>,
        parts: &RequestParts,
        method: Method,
        params: &Params<'_>,
        view: Option<&catalog::Lists>,
        audience: crate::registry::Audience,
    ) -> Dispatched {
        let rev = parts.revision;
        let (kind, pages_kind, key) = match method {
            Method::ToolsList => (ListKind::Tools, "tools", "tools"),
            Method::PromptsList => (ListKind::Prompts, "prompts", "prompts"),
            Method::ResourcesList => (ListKind::Resources, "resources", "resources"),
            _ => (ListKind::Templates, "templates", "resourceTemplates"),
        };
        let cursor = match params
            .cursor
            .map(|c| required(Some(c), "cursor"))
            .transpose()
        {
            Ok(c) => c.map(Cow::into_owned),
            Err(e) => return Dispatched::err(rev, e),
        };
        let shown = |scopes: &[&str]| view.is_none_or(|v| self.catalog.shown(v, scopes));
        // Whether the caller renders views (the audience says so only when the registry has
        // views of its own).
        let apps = apps::declared(&parts.meta.client_capabilities);
        let local = match kind {
            ListKind::Tools => self.catalog.registry.tools_visible(rev, &shown, audience),
            ListKind::Prompts => self.catalog.registry.prompts_visible(rev, &shown),
            ListKind::Resources => self
                .catalog
                .registry
                .resources_visible(rev, &shown, audience),
            ListKind::Templates => self.catalog.registry.templates_visible(rev, &shown),
        };
        let shared = self.clone();
        Dispatched::Pending(Box::pin(async move {
            let mut items = local;
            // Every source at once: a slow one delays the list by its own time only.
            let all = futures_util::future::join_all(
                shared
                    .catalog
                    .sources
                    .iter()
                    .map(|source| source.list(kind)),
            )
            .await;
            let sources = &shared.catalog.sources;
            for (i, (source, listed)) in sources.iter().zip(all).enumerate() {
                // Served by this source: a name or URI two of them have is listed as the
                // source a request for it goes to (`Catalog::source_index`), and in tool search
                // only the pinned tools are listed (the search finds the others).
                let ours = |key: &str| shared.catalog.source_index(kind, key) == Some(i);
                let listed = match listed {
                    Ok(listed) => listed,
                    Err(e) => {
                        tracing::warn!(
                            source = source.label(),
                            "left out of the list: its upstream did not list: {}",
                            e.message
                        );
                        continue;
                    }
                };
                match kind {
                    ListKind::Tools => items.extend(
                        listed
                            .tools
                            .iter()
                            .filter(|t| crate::registry::remote_left_out_of(t, rev).is_none())
                            .filter(|t| source.listed(&t.name) && ours(&t.name))
                            .filter_map(|t| remote_tool(t, apps, rev)),
                    ),
                    ListKind::Prompts => items.extend(
                        listed
                            .prompts
                            .iter()
                            .filter(|p| ours(&p.name))
                            .map(|p| render::prompt(p, rev)),
                    ),
                    ListKind::Resources => items.extend(
                        listed
                            .resources
                            .iter()
                            .filter(|r| ours(&r.uri))
                            // A view is listed to the clients that render views.
                            .filter(|r| apps || r.mime_type.as_deref() != Some(apps::MIME_TYPE))
                            .map(|r| render::resource(r, rev)),
                    ),
                    ListKind::Templates => {
                        items.extend(listed.templates.iter().map(|t| render::template(t, rev)));
                    }
                }
            }
            // What the caller sees of the sources depends on it (MCP Apps) and on when it
            // asks: a cache keeps it for this caller only.
            let mut env = shared.env.clone();
            env.cache.scope = crate::protocol::render::CacheScope::Private;
            let pages = catalog::paginate(
                rev,
                &env,
                shared.config.page_size,
                Cache::Cacheable,
                pages_kind,
                key,
                items,
            );
            let i = decode_cursor(pages_kind, cursor.as_deref(), pages.0.len())
                .map_err(|e| render::error(rev, e))?;
            Ok(pages.0[i].clone())
        }))
    }
}

/// A source's tool as `tools/list` shows it to a client (`apps`: one that renders views):
/// with its `_meta.ui` only for such a client, and not at all to another when only views may
/// call it — as the program's own tools are shown.
fn remote_tool(
    tool: &crate::protocol::types::Tool,
    apps: bool,
    rev: Revision,
) -> Option<serde_json::Value> {
    let ui = apps::ToolUi::of(tool);
    if apps || ui.is_none() {
        return Some(render::tool(tool, rev));
    }
    if ui.is_some_and(|ui| !ui.visible_to_model()) {
        return None;
    }
    let mut tool = tool.clone();
    if let Some(meta) = tool.meta.as_mut() {
        meta.remove("ui");
        meta.remove(apps::RESOURCE_URI_META_KEY);
        if meta.is_empty() {
            tool.meta = None;
        }
    }
    Some(render::tool(&tool, rev))
}

/// The most pages of one source's `skills/list` a gateway with several sources follows.
const MAX_SKILL_PAGES: usize = 100;

/// Every skill entry of one source, its pages followed (bounded by [`MAX_SKILL_PAGES`] and, per
/// page, by `limit`).
async fn all_skills(
    source: Arc<dyn crate::server::source::Source>,
    limit: std::time::Duration,
) -> Result<Vec<serde_json::Value>, RpcError> {
    let mut skills = Vec::new();
    let mut cursor: Option<serde_json::Value> = None;
    for _ in 0..MAX_SKILL_PAGES {
        let mut params = serde_json::Map::new();
        if let Some(c) = cursor.take() {
            params.insert("cursor".into(), c);
        }
        let page = tokio::time::timeout(
            limit,
            source.forward("skills/list", params, Context::detached()),
        )
        .await
        .map_err(|_| crate::server::invoker::timed_out("skills/list", limit))??;
        if let Some(serde_json::Value::Array(entries)) = page.get("skills") {
            skills.extend(entries.iter().cloned());
        }
        match page.get("nextCursor") {
            Some(next @ serde_json::Value::String(_)) => cursor = Some(next.clone()),
            _ => return Ok(skills),
        }
    }
    Err(RpcError::internal(format!(
        "its skills/list has more than {MAX_SKILL_PAGES} pages"
    )))
}
