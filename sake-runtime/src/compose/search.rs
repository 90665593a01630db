//! Tool search: in front of a large catalog, `tools/list` shows one search tool (and the
//! tools pinned beside it); the search returns the definitions of the tools that match, which
//! stay callable by name. A host that shows a model every listed tool stays usable in front of
//! hundreds of them.
//!
//! The index is built once, at start-up, from the lists as served (after every transform and
//! schema normalisation): each tool's words (of its name, title and description) and its
//! listing. A search scores every tool against the query's words — a word of the name counts
//! most, then the title, then the description — and renders the best for the caller's
//! revision, as `tools/list` would: only tools that revision lists, `_meta.ui` only for a
//! client that declared MCP Apps, and only tools the caller's scopes let it see.

use std::collections::HashSet;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::module::tool_copy;
use crate::handler::context::Context;
use crate::handler::state::StateNeed;
use crate::handler::{Location, TaskSupport, ToolDef, ToolFuture, ToolHints, ToolUiDef};
use crate::protocol::apps::{self, ToolUi};
use crate::protocol::types::{CallToolResult, Tool};
use crate::protocol::version::Revision;
use crate::registry::Registry;

/// The most tools one search returns, whatever it asks for.
pub const MAX_RESULTS: usize = 50;

/// The search tool's name unless [`ToolSearch::name`] says otherwise.
pub const DEFAULT_NAME: &str = "search_tools";

/// Tool search for a large catalog ([`Server::tool_search`](crate::Server::tool_search)):
/// `tools/list` shows a search tool and the pinned tools only; the search tool returns the
/// full definitions of the tools whose names, titles or descriptions match its `query`, and
/// every tool stays callable by name.
///
/// ```no_run
/// # async fn run() -> Result<(), sake::Error> {
/// use sake::compose::ToolSearch;
///
/// sake::Server::from_registry()
///     .tool_search(ToolSearch::new().pin(["help"]).max_results(8))
///     .serve_stdio()
///     .await
/// # }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use]
pub struct ToolSearch {
    pub(crate) name: String,
    pub(crate) pinned: Vec<String>,
    pub(crate) max_results: usize,
}

impl Default for ToolSearch {
    fn default() -> Self {
        ToolSearch {
            name: DEFAULT_NAME.to_owned(),
            pinned: Vec::new(),
            max_results: 10,
        }
    }
}

impl ToolSearch {
    /// The search tool `search_tools`, nothing pinned, 10 results unless a search asks for
    /// more.
    pub fn new() -> Self {
        ToolSearch::default()
    }

    /// Lists these tools (by the names they are served under) beside the search tool.
    pub fn pin<S: Into<String>>(mut self, tools: impl IntoIterator<Item = S>) -> Self {
        self.pinned.extend(tools.into_iter().map(Into::into));
        self
    }

    /// Names the search tool (`search_tools` by default).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// How many tools a search returns when its `limit` does not say (10 by default; at most
    /// [`MAX_RESULTS`], which is also the most a `limit` gets).
    pub fn max_results(mut self, n: usize) -> Self {
        self.max_results = n.clamp(1, MAX_RESULTS);
        self
    }

    /// The search tool's definition, under its name.
    pub(crate) fn def(&self) -> &'static ToolDef {
        if self.name == DEFAULT_NAME {
            &SEARCH
        } else {
            tool_copy(&SEARCH, &self.name, None, None)
        }
    }

    /// Leaves every tool but the search tool and the pinned ones out of `tools/list`; a pin
    /// that names no tool stops start-up, but one under the prefix of a remote server
    /// (`proxied`; `""`: one without a prefix), whose list is not known before it is
    /// fetched.
    pub(crate) fn apply(
        &self,
        registry: &mut Registry,
        proxied: &[String],
    ) -> Result<(), crate::Error> {
        let remote = |pin: &str| {
            proxied.iter().any(|p| {
                p.is_empty()
                    || pin
                        .strip_prefix(p.as_str())
                        .is_some_and(|rest| rest.starts_with(super::SEPARATOR))
            })
        };
        for pin in &self.pinned {
            if registry.tool(pin).is_none() && !remote(pin) {
                let mut served: Vec<&str> = registry.tools.iter().map(|t| t.def.name).collect();
                served.retain(|n| *n != self.name);
                served.truncate(20);
                return Err(crate::Error::Config(format!(
                    "ToolSearch::pin names `{pin}`, which is not served (tools: {}{})",
                    served.join(", "),
                    if registry.tools.len() > 21 {
                        ", …"
                    } else {
                        ""
                    }
                )));
            }
        }
        for entry in &mut registry.tools {
            entry.unlisted =
                entry.def.name != self.name && !self.pinned.iter().any(|p| p == entry.def.name);
        }
        Ok(())
    }

    /// The index the search tool reads, from the registry as served; `auth`: the server's
    /// token checks, whose scope hierarchy decides what a caller may see.
    pub(crate) fn index(
        &self,
        registry: &Registry,
        elsewhere: Vec<Elsewhere>,
        #[cfg(feature = "auth")] auth: Option<std::sync::Arc<crate::auth::Authorization>>,
    ) -> SearchIndex {
        let tools = registry
            .tools
            .iter()
            .filter(|t| t.def.name != self.name)
            .map(|t| Indexed {
                scopes: t.def.scopes,
                principal: t.def.principal,
                left_out: Revision::ALL.map(|rev| t.left_out_of(rev).is_some()),
                ..Indexed::new(t.listing.clone(), t.ui.clone())
            })
            .collect();
        SearchIndex {
            name: self.name.clone(),
            default_results: self.max_results,
            tools,
            elsewhere,
            #[cfg(feature = "auth")]
            auth,
        }
    }
}

/// One tool as the search knows it.
struct Indexed {
    name_words: Vec<String>,
    title_words: Vec<String>,
    description_words: Vec<String>,
    listing: Tool,
    ui: Option<ToolUi>,
    scopes: &'static [&'static str],
    principal: bool,
    /// Per revision (its index): whether that revision lists it to no one.
    left_out: [bool; Revision::COUNT],
}

impl Indexed {
    /// A tool as listed, open to every caller and every revision.
    fn new(listing: Tool, ui: Option<ToolUi>) -> Indexed {
        Indexed {
            name_words: words(&listing.name),
            title_words: listing
                .title
                .as_deref()
                .or(listing
                    .annotations
                    .as_ref()
                    .and_then(|a| a.title.as_deref()))
                .map(words)
                .unwrap_or_default(),
            description_words: listing
                .description
                .as_deref()
                .map(words)
                .unwrap_or_default(),
            listing,
            ui,
            scopes: &[],
            principal: false,
            left_out: [false; Revision::COUNT],
        }
    }

    /// How well it matches the query's words: 0 for not at all.
    fn score(&self, query: &[String]) -> u32 {
        query
            .iter()
            .map(|w| {
                let name = if self.name_words.contains(w) {
                    4
                } else if w.len() >= 3 && self.name_words.iter().any(|n| n.starts_with(w.as_str()))
                {
                    2
                } else {
                    0
                };
                let title = u32::from(self.title_words.contains(w)) * 2;
                let description = u32::from(self.description_words.contains(w));
                name + title + description
            })
            .sum()
    }
}

/// The tools a search looks through: application state of the search tool (registered by
/// `Server::build`).
pub(crate) struct SearchIndex {
    name: String,
    default_results: usize,
    tools: Vec<Indexed>,
    /// Tools listed elsewhere than the registry, asked for at each search.
    elsewhere: Vec<Elsewhere>,
    /// The server's token checks: a caller sees a scoped tool when they grant it every
    /// scope (with the scope hierarchy), as `tools/list` decides.
    #[cfg(feature = "auth")]
    auth: Option<std::sync::Arc<crate::auth::Authorization>>,
}

/// Tools this server serves from elsewhere than its registry (a proxied server's, as this
/// server lists them: under their prefix), fetched when a search runs: what
/// `Composition::search_also` is given.
pub(crate) type Elsewhere =
    std::sync::Arc<dyn Fn() -> crate::handler::BoxFuture<Vec<Tool>> + Send + Sync>;

/// The tools of a source (a remote server): its list, from its cache or fetched; none when
/// it cannot list (logged).
pub(crate) fn of_source(source: std::sync::Arc<dyn crate::server::source::Source>) -> Elsewhere {
    std::sync::Arc::new(move || {
        let source = source.clone();
        Box::pin(async move {
            match source.list(crate::server::source::ListKind::Tools).await {
                Ok(listed) => listed.tools,
                Err(e) => {
                    tracing::warn!(
                        source = source.label(),
                        "left out of the search: its upstream did not list: {}",
                        e.message
                    );
                    Vec::new()
                }
            }
        })
    })
}

impl SearchIndex {
    /// The tools of every source elsewhere, indexed for this search: open to every caller
    /// and listed by every revision (their own server decides who may call them).
    async fn fetch_elsewhere(&self) -> Vec<Indexed> {
        // Every source at once: a slow one delays the search by its own time only.
        let lists = futures_util::future::join_all(self.elsewhere.iter().map(|s| s())).await;
        lists
            .into_iter()
            .flatten()
            .map(|mut tool| {
                // What each revision leaves out, as `tools/list` decides.
                let left_out = Revision::ALL
                    .map(|rev| crate::registry::remote_left_out_of(&tool, rev).is_some());
                // Its view, shown to the clients that render views only, as the registry's.
                let ui = ToolUi::of(&tool);
                if ui.is_some()
                    && let Some(meta) = tool.meta.as_mut()
                {
                    meta.remove("ui");
                    meta.remove(apps::RESOURCE_URI_META_KEY);
                    if meta.is_empty() {
                        tool.meta = None;
                    }
                }
                Indexed {
                    left_out,
                    ..Indexed::new(tool, ui)
                }
            })
            .collect()
    }

    /// The definitions of the best `limit` tools for `query`, rendered for `rev`; `apps`:
    /// the caller declared MCP Apps; `may_see`: whether the caller may see a tool of these
    /// scopes (and needing a signed-in caller or not).
    fn find(
        &self,
        query: &[String],
        limit: usize,
        rev: Revision,
        apps: bool,
        may_see: &dyn Fn(&[&str], bool) -> bool,
        elsewhere: &[Indexed],
    ) -> Vec<Value> {
        let mut hits: Vec<(u32, &Indexed)> = self
            .tools
            .iter()
            .chain(elsewhere)
            .filter(|t| !t.left_out[rev.index()])
            .filter(|t| apps || t.ui.as_ref().is_none_or(ToolUi::visible_to_model))
            .filter(|t| may_see(t.scopes, t.principal))
            .map(|t| (t.score(query), t))
            .filter(|(score, _)| *score > 0)
            .collect();
        hits.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.listing.name.cmp(&b.1.listing.name)));
        hits.truncate(limit);
        hits.into_iter()
            .map(|(_, t)| crate::registry::render_tool(&t.listing, t.ui.as_ref(), apps, rev))
            .collect()
    }
}

/// The lowercase words of `text`: its runs of letters and digits (`get_weather` is `get`
/// and `weather`), each once.
fn words(text: &str) -> Vec<String> {
    let mut seen = HashSet::new();
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| seen.insert(w.clone()))
        .collect()
}

/// Words too common to tell tools apart, left out of a query.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "by", "for", "from", "in", "is", "it", "of", "on", "or", "the", "to", "with",
];

/// The words of a query that can tell tools apart: its [`words`] but the [`STOP_WORDS`].
fn query_words(query: &str) -> Vec<String> {
    let mut words = words(query);
    words.retain(|w| !STOP_WORDS.contains(&w.as_str()));
    words
}

/// The search tool.
static SEARCH: ToolDef = ToolDef {
    name: DEFAULT_NAME,
    title: Some("Search tools"),
    description: "Finds this server's tools by words of their names, titles and descriptions, and returns their definitions (name, description, inputSchema, …), best matches first. Call a tool it returns by its name; most tools are not listed, only found here.",
    hints: ToolHints {
        title: None,
        read_only: Some(true),
        destructive: Some(false),
        idempotent: Some(true),
        open_world: Some(false),
    },
    icons: &[],
    input_schema,
    output_schema,
    call,
    states,
    requires: &[],
    scopes: &[],
    principal: false,
    task_support: TaskSupport::Forbidden,
    context: false,
    ui: ToolUiDef::NONE,
    location: Location {
        file: file!(),
        line: line!(),
        module: module_path!(),
    },
};

fn input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "description": "Words to look for in the tools' names, titles and descriptions",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_RESULTS,
                "description": "How many tools to return at most",
            },
        },
        "required": ["query"],
    })
}

fn output_schema() -> Option<Value> {
    Some(json!({
        "type": "object",
        "properties": {
            "tools": {"type": "array", "items": {"type": "object"}},
        },
        "required": ["tools"],
    }))
}

fn states() -> Vec<StateNeed> {
    vec![StateNeed::of::<SearchIndex>()]
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    query: String,
    #[serde(default)]
    limit: Option<usize>,
}

fn call(arguments: Option<&RawValue>, ctx: Context) -> ToolFuture {
    let asked = Asked::of(arguments, &ctx);
    Box::pin(async move {
        let asked = match asked {
            Ok(asked) => asked,
            Err(refusal) => return refusal,
        };
        let elsewhere = asked.index.fetch_elsewhere().await;
        asked.answer(&ctx, &elsewhere)
    })
}

/// A search as asked: its index, its words and how many tools it wants.
struct Asked {
    index: crate::handler::state::State<SearchIndex>,
    query: Vec<String>,
    limit: usize,
}

impl Asked {
    /// The search `arguments` ask for, or the `isError` result that refuses them.
    fn of(arguments: Option<&RawValue>, ctx: &Context) -> Result<Asked, CallToolResult> {
        let index = ctx.state::<SearchIndex>().ok_or_else(|| {
            CallToolResult::error(
                "the tool search has no index: build the server with Server::tool_search",
            )
        })?;
        let args: Args = crate::handler::decode_tool_args(&index.name, arguments)?;
        let query = query_words(&args.query);
        if query.is_empty() {
            return Err(CallToolResult::error(
                "The query has no words to search for: give a word of a tool's name, title or description",
            ));
        }
        let limit = args
            .limit
            .unwrap_or(index.default_results)
            .clamp(1, MAX_RESULTS);
        Ok(Asked {
            index,
            query,
            limit,
        })
    }

    /// The result: the best tools of the index and of `elsewhere` for the caller of `ctx`.
    fn answer(&self, ctx: &Context, elsewhere: &[Indexed]) -> CallToolResult {
        let apps = apps::declared(ctx.client_capabilities());
        let may_see = |scopes: &[&str], principal: bool| {
            if scopes.is_empty() && !principal {
                return true;
            }
            #[cfg(feature = "auth")]
            if let (Some(auth), Some(p)) = (&self.index.auth, ctx.principal()) {
                return auth.missing(p, scopes).is_empty();
            }
            // Start-up refuses scoped functions on a server without authorization.
            false
        };
        let tools = self.index.find(
            &self.query,
            self.limit,
            ctx.revision(),
            apps,
            &may_see,
            elsewhere,
        );
        CallToolResult::structured(&json!({ "tools": tools }))
            .unwrap_or_else(|e| CallToolResult::error(format!("the search's result: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn tools_served_from_elsewhere_are_found_with_the_registrys() {
        let upstream: Elsewhere = std::sync::Arc::new(|| {
            Box::pin(async {
                vec![
                    Tool::new("up_forecast", json!({"type": "object"}))
                        .with_description("The weather of tomorrow."),
                    Tool::new("up_echo", json!({"type": "object"})).with_description("Echoes."),
                ]
            })
        });
        let index = SearchIndex {
            name: DEFAULT_NAME.into(),
            default_results: 10,
            tools: vec![Indexed::new(
                Tool::new("get_weather", json!({"type": "object"}))
                    .with_description("The weather now."),
                None,
            )],
            elsewhere: vec![upstream],
            #[cfg(feature = "auth")]
            auth: None,
        };
        let elsewhere = index.fetch_elsewhere().await;
        let found = index.find(
            &query_words("weather"),
            10,
            Revision::LATEST,
            false,
            &|_, _| true,
            &elsewhere,
        );
        assert_eq!(
            found,
            [
                json!({"name": "get_weather", "description": "The weather now.", "inputSchema": {"type": "object"}}),
                json!({"name": "up_forecast", "description": "The weather of tomorrow.", "inputSchema": {"type": "object"}}),
            ]
        );
    }

    #[test]
    fn words_split_names_and_sentences() {
        assert_eq!(words("get_weather.v2"), ["get", "weather", "v2"]);
        assert_eq!(words("The weather, the WEATHER!"), ["the", "weather"]);
        assert_eq!(query_words("the weather of a city"), ["weather", "city"]);
    }
}
