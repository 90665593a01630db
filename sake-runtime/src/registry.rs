//! The registry: every `#[tool]`, `#[prompt]` and `#[resource]` in the binary, collected from
//! `inventory`, sorted, validated, and turned into the listings each revision shows.
//!
//! The descriptors the macros submit are public so that an application can serve a chosen
//! set of them: `Server::with_registry(Registry::from_defs(tools, prompts, resources)?)`,
//! with the descriptors taken from `inventory::iter::<ToolDef>()` or written by hand.

use std::collections::HashMap;

use serde_json::Value;

use crate::error::Error;
use crate::handler::input::Need;
pub use crate::handler::{
    CompleteFn, IconDef, Location, PromptDef, PromptFuture, ResourceDef, ResourceFuture,
    ResourceRequest, TaskSupport, ToolDef, ToolFuture, ToolHints,
};
use crate::protocol::headers::{HeaderParam, header_params};
use crate::protocol::types::{
    Icon, Prompt, PromptArgument, Resource, ResourceTemplate, Tool, ToolAnnotations,
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
}

/// Whether a function that names these scopes is shown.
pub(crate) type Visible<'a> = &'a dyn Fn(&[&str]) -> bool;

/// A registered resource template, parsed.
pub(crate) struct TemplateEntry {
    pub def: &'static ResourceDef,
    pub template: UriTemplate,
}

/// Every tool, prompt and resource of the server, in a stable order.
pub struct Registry {
    pub(crate) tools: Vec<ToolEntry>,
    tool_index: HashMap<&'static str, usize>,
    pub(crate) prompts: Vec<&'static PromptDef>,
    prompt_index: HashMap<&'static str, usize>,
    pub(crate) resources: Vec<&'static ResourceDef>,
    resource_index: HashMap<&'static str, usize>,
    pub(crate) templates: Vec<TemplateEntry>,
    /// The skills (the skills extension), their files and directories.
    pub(crate) skills: crate::skills::SkillSet,
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
            .finish()
    }
}

/// A tool name must match `^[A-Za-z0-9_.-]{1,64}$` (the rule is `sake_rules::tool_name`'s).
pub fn is_valid_tool_name(name: &str) -> bool {
    sake_rules::tool_name::is_valid(name)
}

impl Registry {
    /// Collects everything annotated in this binary, and the skills `sake::skills!` embeds.
    pub fn collect() -> Result<Registry, Error> {
        Registry::from_defs(
            inventory::iter::<ToolDef>(),
            inventory::iter::<PromptDef>(),
            inventory::iter::<ResourceDef>(),
        )?
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
        let mut tool_index = HashMap::new();
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
            entries.push(entry);
        }

        let mut prompts: Vec<&'static PromptDef> = prompts.into_iter().collect();
        prompts.sort_by(|a, b| a.name.cmp(b.name));
        let mut prompt_index = HashMap::new();
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
        let mut resource_index = HashMap::new();
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
        };
        let object_only: Vec<&str> = Revision::ALL
            .iter()
            .filter(|r| r.features().object_only_schemas)
            .map(|r| r.as_str())
            .collect();
        for entry in &registry.tools {
            if let Some(reason) = &entry.legacy_unavailable {
                tracing::warn!(
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

    /// The tools one revision lists, rendered for it.
    pub fn tools_for(&self, rev: Revision) -> Vec<Value> {
        self.tools_visible(rev, &|_| true)
    }
    /// The prompts one revision lists, rendered for it.
    pub fn prompts_for(&self, rev: Revision) -> Vec<Value> {
        self.prompts_visible(rev, &|_| true)
    }
    /// The static resources one revision lists, rendered for it.
    pub fn resources_for(&self, rev: Revision) -> Vec<Value> {
        self.resources_visible(rev, &|_| true)
    }
    /// The resource templates one revision lists, rendered for it.
    pub fn templates_for(&self, rev: Revision) -> Vec<Value> {
        self.templates_visible(rev, &|_| true)
    }

    /// The tools `rev` lists whose scopes `visible` accepts.
    pub(crate) fn tools_visible(&self, rev: Revision, visible: Visible<'_>) -> Vec<Value> {
        self.tools
            .iter()
            .filter(|t| !(rev.features().object_only_schemas && t.legacy_unavailable.is_some()))
            .filter(|t| visible(t.def.scopes))
            // A tool that runs only as a task cannot be called where there are no tasks.
            .filter(|t| rev.features().tasks || t.def.task_support != TaskSupport::Required)
            .map(|t| render::tool(&t.listing, rev))
            .collect()
    }

    pub(crate) fn prompts_visible(&self, rev: Revision, visible: Visible<'_>) -> Vec<Value> {
        self.prompts
            .iter()
            .filter(|p| visible(p.scopes))
            .map(|p| render::prompt(&prompt_listing(p), rev))
            .collect()
    }

    pub(crate) fn resources_visible(&self, rev: Revision, visible: Visible<'_>) -> Vec<Value> {
        self.resources
            .iter()
            .filter(|r| visible(r.scopes))
            .map(|r| render::resource(&resource_listing(r), rev))
            // Skill files are resources in every revision.
            .chain(
                self.skills
                    .resources_visible(visible)
                    .iter()
                    .map(|r| render::resource(r, rev)),
            )
            .collect()
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
    ToolEntry {
        def,
        listing: Tool {
            name: def.name.to_owned(),
            title: def.title.map(str::to_owned),
            description: Some(def.description.to_owned()),
            icons: icons(def.icons),
            input_schema,
            output_schema,
            annotations: (!annotations.is_empty()).then_some(annotations),
            meta: None,
        },
        legacy_unavailable,
        requires: Vec::new(),
        headers: Vec::new(),
    }
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
