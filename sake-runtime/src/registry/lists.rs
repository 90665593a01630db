//! The listings: each definition rendered for a revision and an audience, filtered by the
//! caller's scopes.

use serde_json::Value;

use super::{Audience, Registry, Visible};
use crate::handler::{IconDef, PromptDef, ResourceDef};
use crate::protocol::apps::ToolUi;
use crate::protocol::types::{Icon, Prompt, PromptArgument, Resource, ResourceTemplate, Tool};
use crate::protocol::{Revision, render};

impl Registry {
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
}

pub(super) fn icons(defs: &[IconDef]) -> Option<Vec<Icon>> {
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
