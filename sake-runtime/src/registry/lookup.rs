//! Looking a definition up, by name or URI, and what the registry as a whole offers.

use super::{Audience, Named, Registry, ToolEntry, ViewEntry};
use crate::handler::{PromptDef, ResourceDef};
use crate::protocol::apps;
use crate::protocol::types::ClientCapabilities;

impl Registry {
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

    /// Whether anything offers completions.
    pub(crate) fn has_completions(&self) -> bool {
        self.prompts.iter().any(|p| p.complete.is_some())
            || self.templates.iter().any(|t| t.def.complete.is_some())
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
