//! The registry: every `#[tool]`, `#[prompt]` and `#[resource]` in the binary, collected from
//! `inventory`, sorted, validated, and turned into the listings each revision shows.
//!
//! The descriptors the macros submit are public so that an application can serve a chosen
//! set of them: `Server::with_registry(Registry::from_defs(tools, prompts, resources)?)`,
//! with the descriptors taken from `inventory::iter::<ToolDef>()` or written by hand.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use serde_json::Value;

use crate::error::Error;
use crate::handler::input::Need;
pub use crate::handler::{
    CompleteFn, CspDef, IconDef, Location, PromptDef, PromptFuture, ResourceDef, ResourceFuture,
    ResourceRequest, TaskSupport, ToolDef, ToolFuture, ToolHints, ToolUiDef, ViewDef, ViewHtml,
};
use crate::protocol::apps::{self, ToolUi, ViewMeta, Visibility};
use crate::protocol::headers::{HeaderParam, header_params};
use crate::protocol::types::{
    ClientCapabilities, Icon, Prompt, PromptArgument, Resource, ResourceTemplate, Tool,
    ToolAnnotations,
};
use crate::protocol::{Revision, render};
use crate::schema;
use crate::uri_template::UriTemplate;

/// A registered tool with its schemas built.
pub(crate) struct ToolEntry {
    pub def: &'static ToolDef,
    pub listing: Tool,
    /// Why the handshake revisions cannot show this tool, if they cannot.
    pub legacy_unavailable: Option<String>,
    /// Client capabilities it cannot run without.
    pub requires: Vec<Need>,
    /// Arguments mirrored in `Mcp-Param-*` headers (`x-mcp-header`).
    pub headers: Vec<HeaderParam>,
    /// Its MCP Apps `_meta.ui`, shown to clients that declare the extension (added to
    /// `listing` when their lists are rendered, so that it follows what start-up did to the
    /// listing: normalised schemas).
    pub ui: Option<ToolUi>,
    /// Composition (compose/): arguments a transform fixes or defaults, put in before the
    /// function decodes them; `None` for a tool as written.
    pub edit: Option<ArgumentEdit>,
    /// Composition (compose/): left out of `tools/list` (tool search shows only its search
    /// tool and the pinned ones) but callable by name.
    pub unlisted: bool,
}

/// What a tool transform does to a call's arguments (`ToolTransform::fix`, `::default`):
/// fixed values replace whatever the client sent, defaults fill what it left out. Made at
/// start-up by `compose/`, applied by the dispatcher before the function decodes them.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct ArgumentEdit {
    pub fixed: serde_json::Map<String, Value>,
    pub defaults: serde_json::Map<String, Value>,
}

impl ArgumentEdit {
    /// The arguments the function gets: `arguments` (an object, or absent) with the fixed
    /// values put in and the defaults filled.
    pub(crate) fn apply(
        &self,
        arguments: Option<&serde_json::value::RawValue>,
    ) -> Result<Box<serde_json::value::RawValue>, crate::protocol::jsonrpc::RpcError> {
        use crate::protocol::jsonrpc::RpcError;
        let mut object = match arguments.map(|a| serde_json::from_str::<Value>(a.get())) {
            None | Some(Ok(Value::Null)) => serde_json::Map::new(),
            Some(Ok(Value::Object(object))) => object,
            Some(_) => {
                return Err(RpcError::invalid_params(
                    "Invalid params: `arguments` must be an object",
                ));
            }
        };
        for (name, value) in &self.defaults {
            object.entry(name.clone()).or_insert_with(|| value.clone());
        }
        for (name, value) in &self.fixed {
            object.insert(name.clone(), value.clone());
        }
        serde_json::value::to_raw_value(&object)
            .map_err(|e| RpcError::internal(format!("Internal error: the arguments: {e}")))
    }
}

impl ToolEntry {
    /// Why `rev` lists this tool to no one, if it does not: a schema a handshake revision
    /// cannot show, or a tool that runs only as a task where there are no tasks. What the lists
    /// leave out and what the start-up greeting says of it are decided here.
    pub fn left_out_of(&self, rev: Revision) -> Option<&str> {
        if rev.features().object_only_schemas
            && let Some(why) = &self.legacy_unavailable
        {
            return Some(why);
        }
        if !rev.features().tasks && self.def.task_support == TaskSupport::Required {
            return Some("it runs only as a task, and this revision has no tasks");
        }
        None
    }

    /// Whether a client that did not declare MCP Apps may see and call it: every tool but
    /// those only views call (`visibility: ["app"]`).
    pub fn for_everyone(&self) -> bool {
        self.ui.as_ref().is_none_or(ToolUi::visible_to_model)
    }
}

/// A registered view (an MCP Apps UI resource), its listing and `_meta.ui` built.
pub(crate) struct ViewEntry {
    pub def: &'static ViewDef,
    pub meta: ViewMeta,
    pub listing: Resource,
}

/// What a client declared that changes what the lists show it (the capability set that
/// matters): each combination has lists of its own, rendered on first use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct Audience {
    /// MCP Apps (`io.modelcontextprotocol/ui` with the view MIME type): tools carry
    /// `_meta.ui`, app-only tools and views are listed.
    pub apps: bool,
}

impl Audience {
    /// How many audiences there are.
    pub const COUNT: usize = 2;

    /// A dense index, for per-audience tables.
    pub fn index(self) -> usize {
        usize::from(self.apps)
    }
}

/// Whether a function that names these scopes is shown.
pub(crate) type Visible<'a> = &'a dyn Fn(&[&str]) -> bool;

/// A registered resource template, parsed.
/// What a resource URI names ([`Registry::named`]).
pub(crate) enum Named<'a> {
    SkillFile(crate::skills::FileAt<'a>),
    View(&'a ViewEntry),
    /// A static resource, or a template's, with the values of its variables.
    Resource(&'static ResourceDef, Vec<(String, String)>),
}

impl Named<'_> {
    /// What a caller needs to read it: the scopes, and whether it must be signed in.
    pub(crate) fn access(&self) -> (&'static [&'static str], bool) {
        match self {
            Named::SkillFile(crate::skills::FileAt::Static(f)) => (f.scopes, false),
            Named::SkillFile(crate::skills::FileAt::Dynamic(skill, _)) => (skill.scopes, false),
            Named::View(_) => (&[], false),
            Named::Resource(def, _) => (def.scopes, def.principal),
        }
    }
}

pub(crate) struct TemplateEntry {
    pub def: &'static ResourceDef,
    pub template: UriTemplate,
}

/// Definitions by name. The index is built once from the program's own definitions and only
/// looked up afterwards, so a client's name cannot lengthen any probe sequence: a keyed hash
/// (SipHash, about 150 instructions for a short name, twice per call) buys nothing here, and
/// FNV-1a does the same job in a few instructions per byte.
type NameIndex = HashMap<&'static str, usize, BuildHasherDefault<Fnv1a>>;

/// FNV-1a, 64 bits.
#[derive(Debug)]
struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Self {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv1a {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// Every tool, prompt and resource of the server, in a stable order.
pub struct Registry {
    pub(crate) tools: Vec<ToolEntry>,
    tool_index: NameIndex,
    pub(crate) prompts: Vec<&'static PromptDef>,
    prompt_index: NameIndex,
    pub(crate) resources: Vec<&'static ResourceDef>,
    resource_index: NameIndex,
    pub(crate) templates: Vec<TemplateEntry>,
    /// The skills (the skills extension), their files and directories.
    pub(crate) skills: crate::skills::SkillSet,
    pub(crate) views: Vec<ViewEntry>,
    view_index: NameIndex,
    /// Whether a tool has a view or a visibility: known once, asked on every list request.
    tools_apps: bool,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry")
            .field(
                "tools",
                &self.tools.iter().map(|t| t.def.name).collect::<Vec<_>>(),
            )
            .field(
                "prompts",
                &self.prompts.iter().map(|p| p.name).collect::<Vec<_>>(),
            )
            .field(
                "resources",
                &self.resources.iter().map(|r| r.uri).collect::<Vec<_>>(),
            )
            .field(
                "templates",
                &self.templates.iter().map(|t| t.def.uri).collect::<Vec<_>>(),
            )
            .field("skills", &self.skills.skills.keys().collect::<Vec<_>>())
            .field(
                "views",
                &self.views.iter().map(|v| v.def.uri).collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// A tool name must match `^[A-Za-z0-9_.-]{1,64}$` (the rule is `sake_rules::tool_name`'s).
pub fn is_valid_tool_name(name: &str) -> bool {
    sake_rules::tool_name::is_valid(name)
}

impl Registry {
    /// Collects everything annotated in this binary: tools, prompts, resources and views, and
    /// the skills `sake::skills!` embeds.
    pub fn collect() -> Result<Registry, Error> {
        Registry::from_defs(
            inventory::iter::<ToolDef>(),
            inventory::iter::<PromptDef>(),
            inventory::iter::<ResourceDef>(),
        )?
        .with_views(inventory::iter::<ViewDef>())?
        .with_skills(inventory::iter::<crate::skills::EmbeddedSkills>())
    }

    /// Serves these embedded skill directories (what `sake::skills!` registers; all of them:
    /// `inventory::iter::<EmbeddedSkills>()`) besides what the registry has.
    pub fn with_skills(
        mut self,
        skills: impl IntoIterator<Item = &'static crate::skills::EmbeddedSkills>,
    ) -> Result<Registry, Error> {
        let mut embedded = self.skills.embedded();
        embedded.extend(skills);
        self.skills = crate::skills::SkillSet::build(embedded, Vec::new())?;
        Ok(self)
    }

    /// Adds skills defined in code (`Server::skill`).
    pub(crate) fn add_skills(&mut self, defs: Vec<crate::skills::SkillDef>) -> Result<(), Error> {
        if !defs.is_empty() {
            self.skills = crate::skills::SkillSet::build(self.skills.embedded(), defs)?;
        }
        Ok(())
    }

    /// Adds MCP Apps views (`#[view]`, or descriptors written by hand): each is checked
    /// (its `ui://` URI, the origins of its policy, its permissions) and must not share its
    /// URI with another view or a resource. Whether every tool's view exists is checked when
    /// the server starts.
    pub fn with_views(
        mut self,
        views: impl IntoIterator<Item = &'static ViewDef>,
    ) -> Result<Registry, Error> {
        self.views.extend(
            views
                .into_iter()
                .map(view_entry)
                .collect::<Result<Vec<_>, _>>()?,
        );
        self.views.sort_by(|a, b| {
            a.def
                .uri
                .cmp(b.def.uri)
                .then(a.def.location.file.cmp(b.def.location.file))
        });
        self.view_index.clear();
        for (i, entry) in self.views.iter().enumerate() {
            let def = entry.def;
            if i > 0 && self.views[i - 1].def.uri == def.uri {
                return Err(invalid(
                    "view",
                    def.uri,
                    &def.location,
                    &format!(
                        "the view at {} has the same URI; give one of them another",
                        self.views[i - 1].def.location
                    ),
                ));
            }
            if let Some(resource) = self.static_resource(def.uri) {
                return Err(invalid(
                    "view",
                    def.uri,
                    &def.location,
                    &format!(
                        "the resource at {} has the same URI; give one of them another",
                        resource.location
                    ),
                ));
            }
            self.view_index.insert(def.uri, i);
        }
        Ok(self)
    }

    /// Builds a registry from explicit descriptors (a subset of the binary's, for example).
    pub fn from_defs(
        tools: impl IntoIterator<Item = &'static ToolDef>,
        prompts: impl IntoIterator<Item = &'static PromptDef>,
        resources: impl IntoIterator<Item = &'static ResourceDef>,
    ) -> Result<Registry, Error> {
        let mut tools: Vec<&'static ToolDef> = tools.into_iter().collect();
        tools.sort_by(|a, b| {
            a.name
                .cmp(b.name)
                .then(a.location.file.cmp(b.location.file))
        });
        let mut tool_index = NameIndex::default();
        let mut entries = Vec::with_capacity(tools.len());
        for (i, def) in tools.iter().enumerate() {
            if i > 0 && tools[i - 1].name == def.name {
                return Err(Error::Duplicate {
                    kind: "tool",
                    name: def.name.to_owned(),
                    first: tools[i - 1].location.to_string(),
                    second: def.location.to_string(),
                });
            }
            if !is_valid_tool_name(def.name) {
                return Err(invalid(
                    "tool",
                    def.name,
                    &def.location,
                    &format!("a tool name must match {}", sake_rules::tool_name::PATTERN),
                ));
            }
            if def.description.trim().is_empty() {
                return Err(invalid(
                    "tool",
                    def.name,
                    &def.location,
                    "a tool needs a description",
                ));
            }
            tool_index.insert(def.name, i);
            let mut entry = tool_entry(def);
            entry.headers = header_params(&entry.listing.input_schema)
                .map_err(|reason| invalid("tool", def.name, &def.location, &reason))?;
            for name in def.requires {
                let need = Need::parse(name).ok_or_else(|| {
                    invalid(
                        "tool",
                        def.name,
                        &def.location,
                        &format!("unknown required capability `{name}`; expected sampling, sampling.tools, elicitation, elicitation.url or roots"),
                    )
                })?;
                entry.requires.push(need);
            }
            check_tool_ui(def)?;
            entries.push(entry);
        }

        let mut prompts: Vec<&'static PromptDef> = prompts.into_iter().collect();
        prompts.sort_by(|a, b| a.name.cmp(b.name));
        let mut prompt_index = NameIndex::default();
        for (i, def) in prompts.iter().enumerate() {
            if i > 0 && prompts[i - 1].name == def.name {
                return Err(Error::Duplicate {
                    kind: "prompt",
                    name: def.name.to_owned(),
                    first: prompts[i - 1].location.to_string(),
                    second: def.location.to_string(),
                });
            }
            prompt_index.insert(def.name, i);
        }

        let mut statics = Vec::new();
        let mut templates = Vec::new();
        for def in resources {
            let template = UriTemplate::parse(def.uri)
                .map_err(|e| invalid("resource", def.uri, &def.location, &e.reason))?;
            if template.is_static() {
                statics.push(def);
            } else {
                templates.push(TemplateEntry { def, template });
            }
        }
        statics.sort_by(|a, b| a.uri.cmp(b.uri));
        templates.sort_by(|a, b| a.def.uri.cmp(b.def.uri));
        let mut resource_index = NameIndex::default();
        for (i, def) in statics.iter().enumerate() {
            if i > 0 && statics[i - 1].uri == def.uri {
                return Err(Error::Duplicate {
                    kind: "resource",
                    name: def.uri.to_owned(),
                    first: statics[i - 1].location.to_string(),
                    second: def.location.to_string(),
                });
            }
            resource_index.insert(def.uri, i);
        }
        for pair in templates.windows(2) {
            if pair[0].def.uri == pair[1].def.uri {
                return Err(Error::Duplicate {
                    kind: "resource",
                    name: pair[0].def.uri.to_owned(),
                    first: pair[0].def.location.to_string(),
                    second: pair[1].def.location.to_string(),
                });
            }
        }

        let registry = Registry {
            tools: entries,
            tool_index,
            prompts,
            prompt_index,
            resources: statics,
            resource_index,
            templates,
            skills: crate::skills::SkillSet::default(),
            views: Vec::new(),
            view_index: NameIndex::default(),
            tools_apps: false,
        };
        let registry = Registry {
            tools_apps: registry.tools.iter().any(|t| t.ui.is_some()),
            ..registry
        };
        let object_only: Vec<&str> = Revision::ALL
            .iter()
            .filter(|r| r.features().object_only_schemas)
            .map(|r| r.as_str())
            .collect();
        for entry in &registry.tools {
            if let Some(reason) = &entry.legacy_unavailable {
                // The start-up greeting says it too (`server/greeting.rs`).
                tracing::info!(
                    tool = entry.def.name,
                    reason = %reason,
                    revisions = %object_only.join(", "),
                    "tool `{}` is left out of the handshake revisions' lists: {reason}; 2026-07-28 lists and calls it",
                    entry.def.name
                );
            }
        }
        Ok(registry)
    }

    /// A tool by name.
    pub(crate) fn tool(&self, name: &str) -> Option<&ToolEntry> {
        self.tool_index.get(name).map(|&i| &self.tools[i])
    }

    pub(crate) fn prompt(&self, name: &str) -> Option<&'static PromptDef> {
        self.prompt_index.get(name).map(|&i| self.prompts[i])
    }

    pub(crate) fn static_resource(&self, uri: &str) -> Option<&'static ResourceDef> {
        self.resource_index.get(uri).map(|&i| self.resources[i])
    }

    /// A view by URI.
    pub(crate) fn view(&self, uri: &str) -> Option<&ViewEntry> {
        self.view_index.get(uri).map(|&i| &self.views[i])
    }

    /// What a resource URI names, looked up in the one order every path uses (reading,
    /// subscribing, a listen filter): a skill's file, a view, a static resource, the first
    /// template that matches.
    pub(crate) fn named(&self, uri: &str) -> Option<Named<'_>> {
        if let Some(file) = self.skills.file(uri) {
            return Some(Named::SkillFile(file));
        }
        if let Some(view) = self.view(uri) {
            return Some(Named::View(view));
        }
        if let Some(def) = self.static_resource(uri) {
            return Some(Named::Resource(def, Vec::new()));
        }
        self.templates.iter().find_map(|t| {
            t.template
                .matches(uri)
                .map(|vars| Named::Resource(t.def, vars))
        })
    }

    /// Checks that every tool's view is registered: a link to a view that does not exist
    /// stops start-up.
    pub(crate) fn check_views(&self) -> Result<(), Error> {
        for t in &self.tools {
            if let Some(uri) = t.def.ui.resource_uri
                && self.view(uri).is_none()
            {
                let known: Vec<&str> = self.views.iter().map(|v| v.def.uri).collect();
                let known = if known.is_empty() {
                    "no view is registered".to_owned()
                } else {
                    format!("the views are {}", known.join(", "))
                };
                return Err(invalid(
                    "tool",
                    t.def.name,
                    &t.def.location,
                    &format!(
                        "its view `{uri}` is not registered ({known}): declare it with #[view(uri = \"{uri}\", html = …)], or link the tool with `ui = TheViewStruct` so that the compiler checks it"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// What `caps` changes in the lists: nothing on a server without MCP Apps, so that its
    /// lists are rendered once per revision.
    pub(crate) fn audience(&self, caps: &ClientCapabilities) -> Audience {
        Audience {
            apps: self.has_apps() && apps::declared(caps),
        }
    }

    /// Whether any tool links to a view or has a visibility, or any view is registered:
    /// then the lists depend on whether a client declared MCP Apps.
    pub(crate) fn has_apps(&self) -> bool {
        self.tools_depend_on_apps() || self.resources_depend_on_apps()
    }

    /// Whether the tools list depends on MCP Apps (a tool has a view or a visibility).
    pub(crate) fn tools_depend_on_apps(&self) -> bool {
        self.tools_apps
    }

    /// Whether the resources list depends on MCP Apps (views are listed to apps only).
    pub(crate) fn resources_depend_on_apps(&self) -> bool {
        !self.views.is_empty()
    }

    /// Checks that every `State<T>` a function asks for was registered.
    pub(crate) fn check_states(
        &self,
        states: &crate::handler::state::StateMap,
    ) -> Result<(), Error> {
        let defs = self
            .tools
            .iter()
            .map(|t| ("tool", t.def.name, t.def.location, (t.def.states)()))
            .chain(
                self.prompts
                    .iter()
                    .map(|p| ("prompt", p.name, p.location, (p.states)())),
            )
            .chain(
                self.resources
                    .iter()
                    .copied()
                    .chain(self.templates.iter().map(|t| t.def))
                    .map(|r| ("resource", r.uri, r.location, (r.states)())),
            );
        for (kind, name, location, needs) in defs {
            if let Some(need) = needs.iter().find(|n| !states.contains(n.type_id)) {
                return Err(Error::MissingState {
                    kind,
                    name: name.to_owned(),
                    location: location.to_string(),
                    type_name: need.type_name,
                });
            }
        }
        Ok(())
    }

    /// Whether anything offers completions.
    /// The first function that names scopes or takes the caller's principal, as (kind, name).
    pub(crate) fn first_scoped(&self) -> Option<(&'static str, &str)> {
        let tool = self
            .tools
            .iter()
            .find(|t| !t.def.scopes.is_empty() || t.def.principal)
            .map(|t| ("tool", t.def.name));
        let prompt = || {
            self.prompts
                .iter()
                .find(|p| !p.scopes.is_empty() || p.principal)
                .map(|p| ("prompt", p.name))
        };
        let resource = || {
            self.resources
                .iter()
                .copied()
                .chain(self.templates.iter().map(|t| t.def))
                .find(|r| !r.scopes.is_empty() || r.principal)
                .map(|r| ("resource", r.uri))
        };
        let skill = || {
            self.skills
                .skills
                .iter()
                .find(|(_, s)| !s.scopes.is_empty())
                .map(|(uri, _)| ("skill", uri.as_str()))
        };
        tool.or_else(prompt).or_else(resource).or_else(skill)
    }

    pub(crate) fn has_completions(&self) -> bool {
        self.prompts.iter().any(|p| p.complete.is_some())
            || self.templates.iter().any(|t| t.def.complete.is_some())
    }

    /// The tools one revision lists to a client without MCP Apps, rendered for it.
    pub fn tools_for(&self, rev: Revision) -> Vec<Value> {
        self.tools_visible(rev, &|_| true, Audience::default())
    }
    /// The prompts one revision lists, rendered for it.
    pub fn prompts_for(&self, rev: Revision) -> Vec<Value> {
        self.prompts_visible(rev, &|_| true)
    }
    /// The static resources one revision lists to a client without MCP Apps, rendered for it.
    pub fn resources_for(&self, rev: Revision) -> Vec<Value> {
        self.resources_visible(rev, &|_| true, Audience::default())
    }

    /// The tools one revision lists to a client that declared MCP Apps: with `_meta.ui`, and
    /// the tools only views call.
    pub fn app_tools_for(&self, rev: Revision) -> Vec<Value> {
        self.tools_visible(rev, &|_| true, Audience { apps: true })
    }

    /// The static resources one revision lists to a client that declared MCP Apps: with the
    /// views.
    pub fn app_resources_for(&self, rev: Revision) -> Vec<Value> {
        self.resources_visible(rev, &|_| true, Audience { apps: true })
    }
    /// The resource templates one revision lists, rendered for it.
    pub fn templates_for(&self, rev: Revision) -> Vec<Value> {
        self.templates_visible(rev, &|_| true)
    }

    /// The tools `rev` lists to `audience` whose scopes `visible` accepts.
    pub(crate) fn tools_visible(
        &self,
        rev: Revision,
        visible: Visible<'_>,
        audience: Audience,
    ) -> Vec<Value> {
        self.tools
            .iter()
            .filter(|t| t.left_out_of(rev).is_none())
            .filter(|t| !t.unlisted)
            .filter(|t| visible(t.def.scopes))
            // A tool only views call is nothing to a client that renders no view.
            .filter(|t| audience.apps || t.for_everyone())
            .map(|t| render_tool(&t.listing, t.ui.as_ref(), audience.apps, rev))
            .collect()
    }

    pub(crate) fn prompts_visible(&self, rev: Revision, visible: Visible<'_>) -> Vec<Value> {
        self.prompts
            .iter()
            .filter(|p| visible(p.scopes))
            .map(|p| render::prompt(&prompt_listing(p), rev))
            .collect()
    }

    /// The static resources `rev` lists to `audience`, in the order of their URIs; views only
    /// to a client that renders them.
    pub(crate) fn resources_visible(
        &self,
        rev: Revision,
        visible: Visible<'_>,
        audience: Audience,
    ) -> Vec<Value> {
        let resources = self
            .resources
            .iter()
            .filter(|r| visible(r.scopes))
            .map(|r| (r.uri, render::resource(&resource_listing(r), rev)));
        // Skill files are resources in every revision.
        let skills = self
            .skills
            .resources_visible(visible)
            .iter()
            .map(|r| render::resource(r, rev))
            .collect::<Vec<_>>();
        if !audience.apps || self.views.is_empty() {
            return resources.map(|(_, v)| v).chain(skills).collect();
        }
        let views = self
            .views
            .iter()
            .map(|v| (v.def.uri, render::resource(&v.listing, rev)));
        let mut all: Vec<(&str, Value)> = resources.chain(views).collect();
        all.sort_by(|a, b| a.0.cmp(b.0));
        all.into_iter().map(|(_, v)| v).chain(skills).collect()
    }

    /// The skill entries `skills/list` shows (none where the revision has no skills).
    pub(crate) fn skills_visible(&self, rev: Revision, visible: Visible<'_>) -> Vec<Value> {
        if rev.features().skills {
            self.skills.entries_visible(visible)
        } else {
            Vec::new()
        }
    }

    pub(crate) fn templates_visible(&self, rev: Revision, visible: Visible<'_>) -> Vec<Value> {
        self.templates
            .iter()
            .filter(|t| visible(t.def.scopes))
            .map(|t| render::template(&template_listing(t.def), rev))
            .collect()
    }

    /// Every distinct set of scopes a function names (without the empty one).
    pub(crate) fn scope_sets(&self) -> Vec<&'static [&'static str]> {
        let mut sets: Vec<&'static [&'static str]> = self
            .tools
            .iter()
            .map(|t| t.def.scopes)
            .chain(self.prompts.iter().map(|p| p.scopes))
            .chain(self.resources.iter().map(|r| r.scopes))
            .chain(self.templates.iter().map(|t| t.def.scopes))
            .chain(self.skills.scope_sets())
            .filter(|s| !s.is_empty())
            .collect();
        sets.sort();
        sets.dedup();
        sets
    }
}

fn invalid(
    kind: &'static str,
    name: &str,
    location: &crate::handler::Location,
    reason: &str,
) -> Error {
    Error::InvalidDefinition {
        kind,
        name: name.to_owned(),
        location: location.to_string(),
        reason: reason.to_owned(),
    }
}

fn icons(defs: &[IconDef]) -> Option<Vec<Icon>> {
    (!defs.is_empty()).then(|| {
        defs.iter()
            .map(|d| Icon {
                src: d.src.to_owned(),
                mime_type: d.mime_type.map(str::to_owned),
                sizes: (!d.sizes.is_empty())
                    .then(|| d.sizes.iter().map(|s| (*s).to_owned()).collect()),
                theme: d.theme.map(str::to_owned),
            })
            .collect()
    })
}

/// A tool's listing as its definition makes it (before any start-up change): what a
/// composition's filter judges (compose/).
pub(crate) fn tool_listing(def: &'static ToolDef) -> Tool {
    tool_entry(def).listing
}

fn tool_entry(def: &'static ToolDef) -> ToolEntry {
    let input_schema = (def.input_schema)();
    let output_schema = (def.output_schema)();
    let legacy_unavailable = if !schema::is_object_schema(&input_schema) {
        Some("its input schema is not a JSON object".to_owned())
    } else if output_schema
        .as_ref()
        .is_some_and(|s| !schema::is_object_schema(s))
    {
        Some(
            "its output schema is not a JSON object (return a struct, or a String for text only)"
                .to_owned(),
        )
    } else {
        None
    };
    let annotations = ToolAnnotations {
        title: def.hints.title.map(str::to_owned),
        read_only_hint: def.hints.read_only,
        destructive_hint: def.hints.destructive,
        idempotent_hint: def.hints.idempotent,
        open_world_hint: def.hints.open_world,
    };
    let listing = Tool {
        name: def.name.to_owned(),
        title: def.title.map(str::to_owned),
        description: Some(def.description.to_owned()),
        icons: icons(def.icons),
        input_schema,
        output_schema,
        annotations: (!annotations.is_empty()).then_some(annotations),
        meta: None,
    };
    let ui = tool_ui(&def.ui);
    ToolEntry {
        def,
        listing,
        legacy_unavailable,
        requires: Vec::new(),
        headers: Vec::new(),
        ui,
        edit: None,
        unlisted: false,
    }
}

/// A tool's `_meta.ui`, from its `ui = …` and `visibility(…)`.
fn tool_ui(def: &ToolUiDef) -> Option<ToolUi> {
    def.is_some().then(|| ToolUi {
        resource_uri: def.resource_uri.map(str::to_owned),
        visibility: Some(if def.visibility.is_empty() {
            Visibility::DEFAULT.to_vec()
        } else {
            def.visibility.to_vec()
        }),
    })
}

/// The rules of a tool's link to MCP Apps (the macro checks them too): a `ui://` URI, a
/// visibility that names each of `model` and `app` at most once.
fn check_tool_ui(def: &ToolDef) -> Result<(), Error> {
    if let Some(uri) = def.ui.resource_uri
        && let Err(e) = sake_rules::apps::check_ui_uri(uri)
    {
        return Err(invalid(
            "tool",
            def.name,
            &def.location,
            &format!(
                "invalid view URI {uri:?}: {e}; {}",
                sake_rules::apps::UI_URI_RULE
            ),
        ));
    }
    let v = def.ui.visibility;
    if v.iter()
        .enumerate()
        .any(|(i, a)| v[..i].iter().any(|b| b == a))
    {
        return Err(invalid(
            "tool",
            def.name,
            &def.location,
            "its visibility names `model` or `app` twice",
        ));
    }
    Ok(())
}

/// The SHA-256 of `bytes`, lowercase hex.
fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A view's entry: its rules checked, its `_meta.ui` and listing built.
fn view_entry(def: &'static ViewDef) -> Result<ViewEntry, Error> {
    let bad = |reason: String| invalid("view", def.uri, &def.location, &reason);
    sake_rules::apps::check_ui_uri(def.uri).map_err(|e| {
        bad(format!(
            "invalid view URI: {e}; {}",
            sake_rules::apps::UI_URI_RULE
        ))
    })?;
    if let ViewHtml::Embedded { text, sha256 } = def.html {
        let digest = sha256_hex(text.as_bytes());
        if digest != sha256 {
            return Err(bad(format!(
                "the SHA-256 of its HTML is {digest}, not the {sha256} it declares"
            )));
        }
    }
    let csp = def.csp.map(|c| {
        let list = |l: &[&str]| l.iter().map(|s| (*s).to_owned()).collect();
        let mut csp = apps::Csp::new();
        csp.connect_domains = list(c.connect_domains);
        csp.resource_domains = list(c.resource_domains);
        csp.frame_domains = list(c.frame_domains);
        csp.base_uri_domains = list(c.base_uri_domains);
        csp
    });
    if let Some((list, origin, e)) = csp.as_ref().and_then(apps::Csp::invalid) {
        return Err(bad(format!(
            "`{list}` names {origin:?}, which is not an origin: {e}; {}",
            sake_rules::apps::ORIGIN_RULE
        )));
    }
    let mut permissions = apps::Permissions::new();
    for name in def.permissions {
        let slot = match *name {
            "camera" => &mut permissions.camera,
            "microphone" => &mut permissions.microphone,
            "geolocation" => &mut permissions.geolocation,
            "clipboardWrite" => &mut permissions.clipboard_write,
            other => {
                return Err(bad(format!(
                    "unknown permission `{other}`; expected camera, microphone, geolocation or clipboardWrite"
                )));
            }
        };
        if std::mem::replace(slot, true) {
            return Err(bad(format!("the permission `{name}` is asked for twice")));
        }
    }
    if let Some(domain) = def.domain {
        sake_rules::apps::check_domain(domain)
            .map_err(|e| bad(format!("invalid domain {domain:?}: {e}")))?;
    }
    let meta = ViewMeta {
        csp,
        permissions: (!permissions.is_empty()).then_some(permissions),
        domain: def.domain.map(str::to_owned),
        prefers_border: def.prefers_border,
    };
    let listing = Resource {
        uri: def.uri.to_owned(),
        name: def.name.to_owned(),
        title: def.title.map(str::to_owned),
        description: def.description.map(str::to_owned),
        mime_type: Some(apps::MIME_TYPE.to_owned()),
        size: match def.html {
            ViewHtml::Embedded { text, .. } => Some(text.len() as u64),
            ViewHtml::Function(_) => None,
        },
        icons: None,
        annotations: None,
        meta: meta.to_meta(),
    };
    Ok(ViewEntry { def, meta, listing })
}

fn prompt_listing(def: &PromptDef) -> Prompt {
    Prompt {
        name: def.name.to_owned(),
        title: def.title.map(str::to_owned),
        description: Some(def.description.to_owned()),
        arguments: prompt_arguments(&(def.arguments)()),
        icons: icons(def.icons),
        meta: None,
    }
}

/// The arguments of a prompt, read from the schema of its argument struct: each property in
/// declaration order, required when the schema says so (that is, when it is not an `Option`).
fn prompt_arguments(schema: &Value) -> Option<Vec<PromptArgument>> {
    let props = schema.get("properties")?.as_object()?;
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let args: Vec<PromptArgument> = props
        .iter()
        .map(|(name, prop)| PromptArgument {
            name: name.clone(),
            title: None,
            description: prop
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_owned),
            required: Some(required.contains(&name.as_str())),
        })
        .collect();
    (!args.is_empty()).then_some(args)
}

fn resource_listing(def: &ResourceDef) -> Resource {
    Resource {
        uri: def.uri.to_owned(),
        name: def.name.to_owned(),
        title: def.title.map(str::to_owned),
        description: def.description.map(str::to_owned),
        mime_type: def.mime_type.map(str::to_owned),
        size: None,
        icons: icons(def.icons),
        annotations: None,
        meta: None,
    }
}

fn template_listing(def: &ResourceDef) -> ResourceTemplate {
    ResourceTemplate {
        uri_template: def.uri.to_owned(),
        name: def.name.to_owned(),
        title: def.title.map(str::to_owned),
        description: def.description.map(str::to_owned),
        mime_type: def.mime_type.map(str::to_owned),
        icons: icons(def.icons),
        annotations: None,
        meta: None,
    }
}

/// A tool's listing for `rev`, with its MCP Apps `_meta.ui` when the client renders views
/// (`apps`): the one rendering of a tool, for `tools/list` and tool search alike.
pub(crate) fn render_tool(listing: &Tool, ui: Option<&ToolUi>, apps: bool, rev: Revision) -> Value {
    match ui {
        Some(ui) if apps => {
            let mut listing = listing.clone();
            listing
                .meta
                .get_or_insert_with(Default::default)
                .extend(ui.to_meta());
            render::tool(&listing, rev)
        }
        _ => render::tool(listing, rev),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_annotations_off_the_properties_path_are_refused() {
        let ok = serde_json::json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "deep": {"type": "object", "properties": {"n": {"type": "integer", "x-mcp-header": "N"}}},
            "x-mcp-header": {"type": "string"},
        }});
        let found = header_params(&ok).unwrap();
        assert_eq!(
            found.iter().map(|p| p.path.join(".")).collect::<Vec<_>>(),
            ["region", "deep.n"]
        );
        let refused = |schema: serde_json::Value| header_params(&schema).unwrap_err();
        assert_eq!(
            refused(serde_json::json!({"type": "object", "properties": {
                "tags": {"type": "array", "items": {"type": "string", "x-mcp-header": "Tag"}},
            }})),
            "`x-mcp-header` \"Tag\" is on `tags.items`, which is not a property reached from the root through `properties` alone"
        );
        for schema in [
            serde_json::json!({"type": "object", "x-mcp-header": "Root"}),
            serde_json::json!({"type": "object", "anyOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}]}),
            serde_json::json!({"type": "object", "$defs": {"a": {"type": "string", "x-mcp-header": "A"}}}),
            serde_json::json!({"type": "object", "properties": {"a": {"type": "object", "additionalProperties": {"type": "string", "x-mcp-header": "A"}}}}),
        ] {
            assert!(refused(schema).contains("not a property reached from the root"));
        }
        // A data value that looks like an annotation is not one.
        assert!(
            header_params(&serde_json::json!({"type": "object", "default": {"x-mcp-header": 1}}))
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn tool_names_follow_the_pattern() {
        assert!(is_valid_tool_name("add"));
        assert!(is_valid_tool_name("a.b-c_D9"));
        assert!(is_valid_tool_name(&"x".repeat(64)));
        assert!(!is_valid_tool_name(&"x".repeat(65)));
        assert!(!is_valid_tool_name(""));
        assert!(!is_valid_tool_name("a/b"));
        assert!(!is_valid_tool_name("a b"));
    }
}
