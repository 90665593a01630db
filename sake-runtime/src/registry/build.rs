//! Building the registry at start-up: the definitions collected, sorted, checked, indexed.

use super::{
    NameIndex, Registry, TemplateEntry, ToolEntry, ViewEntry, is_valid_tool_name, lists::icons,
};
use crate::error::Error;
use crate::handler::input::Need;
use crate::handler::{PromptDef, ResourceDef, ToolDef, ToolUiDef, ViewDef, ViewHtml};
use crate::protocol::Revision;
use crate::protocol::apps::{self, ToolUi, ViewMeta, Visibility};
use crate::protocol::headers::header_params;
use crate::protocol::types::{Resource, Tool, ToolAnnotations};
use crate::uri_template::UriTemplate;

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

/// A tool's listing as its definition makes it (before any start-up change): what a
/// composition's filter judges (compose/).
pub(crate) fn tool_listing(def: &'static ToolDef) -> Tool {
    tool_entry(def).listing
}

fn tool_entry(def: &'static ToolDef) -> ToolEntry {
    let input_schema = (def.input_schema)();
    let output_schema = (def.output_schema)();
    let legacy_unavailable =
        super::not_object_schemas(&input_schema, output_schema.as_ref()).map(str::to_owned);
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
