//! Composing servers: in-process modules mounted under a prefix ([`Server::mount`]), tool
//! transforms, tool search for large catalogs, and remote MCP servers served under a prefix
//! (`Server::proxy`). The guide is docs/composition.md.
//!
//! What is composed is decided once, when the server is built: mounted definitions are renamed
//! and checked (a collision, or a name over the 64-character limit, stops start-up naming both
//! definitions), transforms are applied to the listings, and the lists every revision shows are
//! built from the result as for any definition — serving them costs nothing per request.
//!
//! Files: `module.rs` (modules and mounting), `transform.rs` (tool transforms, shared with the
//! remote tools), `search.rs` (tool search); the remote half lives in `proxy/` (the
//! [`Upstream`] builder, names and URIs under the prefix, the era bridge of a call),
//! `upstream_restart.rs` (a command's restart backoff) and `upstream_user.rs` (connections as
//! the signed-in user).
//!
//! [`Server::mount`]: crate::Server::mount

mod module;
mod search;
mod transform;

pub use module::Module;
pub use search::{MAX_RESULTS, ToolSearch};
pub use transform::{ToolFilter, ToolTransform};

#[cfg(feature = "client")]
pub(crate) mod proxy;
#[cfg(feature = "client")]
mod upstream_restart;
#[cfg(all(feature = "client", feature = "auth-proxy"))]
mod upstream_user;

#[cfg(feature = "client")]
#[cfg_attr(docsrs, doc(cfg(feature = "client")))]
pub use proxy::Upstream;

use std::collections::HashMap;

use crate::error::Error;
use crate::handler::state::StateMap;
use crate::handler::{Location, PromptDef, ResourceDef, ToolDef, ViewDef};
use crate::registry::{Registry, is_valid_tool_name};
use module::{Names, origin, prompt_copy, resource_copy, tool_copy, view_copy};

/// The separator between a mount's prefix and a tool's or prompt's own name: `math_add`.
///
/// An underscore, because the names a model sees must pass the providers' function-name
/// rules as well as MCP's: MCP allows `A-Za-z0-9_.-`, but some providers refuse `.` in a
/// function name, and `_` is accepted by all of them.
pub const SEPARATOR: char = '_';

/// A tool's or prompt's name under `prefix`: `prefix_name`.
pub(crate) fn prefixed_name(prefix: &str, name: &str) -> String {
    format!("{prefix}{SEPARATOR}{name}")
}

/// A resource URI or template under `prefix`: the prefix becomes the first segment after
/// the scheme — `docs://readme` is `docs://math/readme`, `weather://{city}` is
/// `weather://math/{city}` (a template stays a template: its variables keep their places),
/// `urn:x` is `urn:math/x`.
pub(crate) fn prefixed_uri(prefix: &str, uri: &str) -> String {
    if let Some((scheme, rest)) = uri.split_once("://") {
        format!("{scheme}://{prefix}/{rest}")
    } else if let Some((scheme, rest)) = uri.split_once(':') {
        format!("{scheme}:{prefix}/{rest}")
    } else {
        format!("{prefix}/{uri}")
    }
}

/// The URI `uri` stands for under `prefix`, if it is one of [`prefixed_uri`]'s: what the
/// server under the prefix calls it (`docs://math/readme` is `docs://readme`).
#[cfg_attr(not(feature = "client"), allow(dead_code))] // `Server::proxy`'s
pub(crate) fn unprefixed_uri(prefix: &str, uri: &str) -> Option<String> {
    let under = |rest: &str| -> Option<String> {
        rest.strip_prefix(prefix)?
            .strip_prefix('/')
            .map(str::to_owned)
    };
    if let Some((scheme, rest)) = uri.split_once("://") {
        Some(format!("{scheme}://{}", under(rest)?))
    } else if let Some((scheme, rest)) = uri.split_once(':') {
        Some(format!("{scheme}:{}", under(rest)?))
    } else {
        under(uri)
    }
}

/// What a server composes, kept by the builder and applied when it is built.
#[derive(Default)]
pub(crate) struct Composition {
    mounts: Vec<(String, Module)>,
    /// The transforms of the root's tools (`Server::transform`).
    root: transform::Reshape,
    search: Option<ToolSearch>,
    /// Tools served from elsewhere than the registry, for the search to find too.
    search_also: Vec<search::Elsewhere>,
    /// The prefixes of the remote servers (`Server::proxy`; `""`: none): a pin of a tool
    /// under one of them cannot be checked at start-up.
    proxied: Vec<String>,
}

impl std::fmt::Debug for Composition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Composition")
            .field("mounts", &self.mounts)
            .field("root", &self.root)
            .field("search", &self.search)
            .field("search_also", &self.search_also.len())
            .field("proxied", &self.proxied)
            .finish()
    }
}

impl Composition {
    /// Mounts `module` under `prefix` (checked when the server is built).
    pub(crate) fn mount(&mut self, prefix: String, module: Module) {
        self.mounts.push((prefix, module));
    }

    /// Reshapes the root's tool `tool`.
    pub(crate) fn transform(&mut self, tool: String, transform: ToolTransform) {
        self.root.transforms.insert(tool, transform);
    }

    /// Lets the search find the tools `tools` lists too (a proxied server's, under their
    /// prefix), fetched at each search.
    fn search_also(&mut self, tools: search::Elsewhere) {
        self.search_also.push(tools);
    }

    /// A remote server is served under `prefix` (`Server::proxy`).
    #[cfg_attr(not(feature = "client"), allow(dead_code))]
    pub(crate) fn proxied(&mut self, prefix: &str) {
        self.proxied.push(prefix.to_owned());
    }

    /// Places the remote servers (`Server::proxy`) beside the composed registry, once it is
    /// final: each learns the names the program serves itself (its own win; a remote one of
    /// such a name is left out, logged) and, with tool search on, which of its tools are
    /// pinned (the others are found by the search, which lists them too). Two served under
    /// one prefix stop start-up: every name of the second would be the first's.
    pub(crate) fn place(
        &mut self,
        registry: &Registry,
        sources: &crate::server::source::Sources,
    ) -> Result<(), Error> {
        for (i, source) in sources.iter().enumerate() {
            if sources[..i].iter().any(|s| s.label() == source.label()) {
                return Err(Error::Config(format!(
                    "Server::proxy: two upstreams are served under the prefix `{}` (`upstream`: no prefix); give each its own prefix",
                    source.label()
                )));
            }
        }
        // Without a remote server nothing is placed: the names are not gathered (a
        // thousand-tool program would copy a thousand names at start-up for nothing).
        if sources.is_empty() {
            return Ok(());
        }
        let placement = crate::server::source::Placement {
            tools: registry
                .tools
                .iter()
                .map(|t| t.def.name.to_owned())
                .collect(),
            prompts: registry.prompts.iter().map(|p| p.name.to_owned()).collect(),
            resources: registry
                .resources
                .iter()
                .map(|r| r.uri.to_owned())
                .chain(registry.templates.iter().map(|t| t.def.uri.to_owned()))
                .chain(registry.views.iter().map(|v| v.def.uri.to_owned()))
                .chain(
                    registry
                        .skills
                        .resources_visible(&|_: &[&str]| true)
                        .into_iter()
                        .map(|r| r.uri),
                )
                .collect(),
            pinned: self.search.as_ref().map(|s| s.pinned.clone()),
        };
        for source in sources {
            source.place(placement.clone());
            if self.search.is_some() {
                self.search_also(search::of_source(source.clone()));
            }
        }
        Ok(())
    }

    /// Turns tool search on.
    pub(crate) fn search(&mut self, search: ToolSearch) {
        self.search = Some(search);
    }

    /// Whether it composes anything.
    pub(crate) fn is_empty(&self) -> bool {
        self.mounts.is_empty() && self.root.is_empty() && self.search.is_none()
    }

    /// The registry of everything annotated in the binary, composed: what
    /// `Registry::collect` would be, with the mounted definitions moved under their
    /// prefixes and transformed, and the search tool. Two definitions of one name in
    /// different modules are fine as long as a mount separates them.
    pub(crate) fn collect(&self) -> Result<Registry, Error> {
        self.compose(
            inventory::iter::<ToolDef>().collect(),
            inventory::iter::<PromptDef>().collect(),
            inventory::iter::<ResourceDef>().collect(),
            inventory::iter::<ViewDef>().collect(),
        )?
        .with_skills(self.skills(inventory::iter::<crate::skills::EmbeddedSkills>()))
    }

    /// Embedded skills, those of a mounted module under its prefix.
    fn skills(
        &self,
        all: impl IntoIterator<Item = &'static crate::skills::EmbeddedSkills>,
    ) -> Vec<&'static crate::skills::EmbeddedSkills> {
        all.into_iter()
            .map(|s| {
                match self
                    .mounts
                    .iter()
                    .filter(|(_, m)| m.contains(s.location.module))
                    .max_by_key(|(_, m)| m.path.len())
                {
                    Some((prefix, _)) => module::skills_copy(s, prefix),
                    None => s,
                }
            })
            .collect()
    }

    /// An explicit registry (`Server::with_registry`), composed.
    pub(crate) fn apply(&self, mut registry: Registry) -> Result<Registry, Error> {
        if self.is_empty() {
            return Ok(registry);
        }
        let built = self.compose(
            registry.tools.iter().map(|t| t.def).collect(),
            registry.prompts.clone(),
            registry
                .resources
                .iter()
                .copied()
                .chain(registry.templates.iter().map(|t| t.def))
                .collect(),
            registry.views.iter().map(|v| v.def).collect(),
        )?;
        built.with_skills(self.skills(std::mem::take(&mut registry.skills).embedded()))
    }

    /// The registry of these definitions, composed. Fails on a bad prefix, a name over the
    /// limit, two definitions served under one name, or a transform or pin of something that
    /// does not exist.
    fn compose(
        &self,
        mut all_tools: Vec<&'static ToolDef>,
        mut all_prompts: Vec<&'static PromptDef>,
        mut all_resources: Vec<&'static ResourceDef>,
        mut all_views: Vec<&'static ViewDef>,
    ) -> Result<Registry, Error> {
        // In one order whatever the linker's, so that a collision names the same first one.
        let place = |l: &Location| (l.file, l.line);
        all_tools.sort_by_key(|d| (d.name, place(&d.location)));
        all_prompts.sort_by_key(|d| (d.name, place(&d.location)));
        all_resources.sort_by_key(|d| (d.uri, place(&d.location)));
        all_views.sort_by_key(|d| (d.uri, place(&d.location)));
        self.check_mounts(&all_tools)?;
        let mount_of = |module: &str, tool: Option<&str>| -> Option<(&str, &Module)> {
            self.mounts
                .iter()
                .filter(|(_, m)| match tool {
                    Some(name) => m.selects_tool(module, name),
                    None => m.contains(module),
                })
                .max_by_key(|(_, m)| m.path.len())
                .map(|(p, m)| (p.as_str(), m))
        };
        let mut names = Names::default();

        // Views first: a tool linked to a view that moves follows it.
        let mut moved_views: HashMap<&str, String> = HashMap::new();
        let mut views: Vec<&'static ViewDef> = Vec::new();
        for &def in &all_views {
            match mount_of(def.location.module, None) {
                Some((prefix, _)) => {
                    let uri = prefixed_uri(prefix, def.uri);
                    names.add(
                        "resource",
                        &uri,
                        origin(def.uri, &def.location, Some(prefix)),
                    )?;
                    views.push(view_copy(def, &uri));
                    moved_views.insert(def.uri, uri);
                }
                None => {
                    names.add("resource", def.uri, origin(def.uri, &def.location, None))?;
                    views.push(def);
                }
            }
        }

        let mut tools: Vec<&'static ToolDef> = Vec::new();
        let mut transformed: Vec<(&'static str, &ToolTransform)> = Vec::new();
        let mut at_root: Vec<&str> = Vec::new();
        for &def in &all_tools {
            let view = def
                .ui
                .resource_uri
                .and_then(|uri| moved_views.get(uri))
                .map(String::as_str);
            let (prefix, reshape) = match mount_of(def.location.module, Some(def.name)) {
                Some((prefix, module)) => (Some(prefix), &module.reshape),
                None => {
                    at_root.push(def.name);
                    (None, &self.root)
                }
            };
            if prefix.is_none() && view.is_none() && reshape.is_empty() {
                names.add("tool", def.name, origin(def.name, &def.location, None))?;
                tools.push(def);
                continue;
            }
            if !reshape.keeps(&crate::registry::tool_listing(def)) {
                continue;
            }
            let transform = reshape.transform(def.name);
            if let Some(why) = transform.and_then(|t| t.refusal(&(def.input_schema)())) {
                return Err(invalid("tool", def.name, &def.location, why));
            }
            let own = transform
                .and_then(|t| t.name.as_deref())
                .unwrap_or(def.name);
            let name = match prefix {
                Some(prefix) => prefixed_name(prefix, own),
                None => own.to_owned(),
            };
            check_tool_name(&name, def, prefix)?;
            names.add("tool", &name, origin(def.name, &def.location, prefix))?;
            let copy = tool_copy(def, &name, transform, view);
            tools.push(copy);
            if let Some(t) = transform {
                transformed.push((copy.name, t));
            }
        }
        if let Some(unknown) = self.root.unknown(&at_root).first() {
            return Err(Error::Config(format!(
                "Server::transform names the tool `{unknown}`, which is not served at the root (a mounted tool is transformed with Module::transform)"
            )));
        }
        if let Some(search) = &self.search {
            let def = search.def();
            names.add(
                "tool",
                def.name,
                format!(
                    "the tool search's tool (ToolSearch::name, at {})",
                    def.location
                ),
            )?;
            tools.push(def);
        }

        let mut prompts: Vec<&'static PromptDef> = Vec::new();
        for &def in &all_prompts {
            match mount_of(def.location.module, None) {
                Some((prefix, _)) => {
                    let name = prefixed_name(prefix, def.name);
                    names.add(
                        "prompt",
                        &name,
                        origin(def.name, &def.location, Some(prefix)),
                    )?;
                    prompts.push(prompt_copy(def, &name));
                }
                None => {
                    names.add("prompt", def.name, origin(def.name, &def.location, None))?;
                    prompts.push(def);
                }
            }
        }

        let mut resources: Vec<&'static ResourceDef> = Vec::new();
        for &def in &all_resources {
            // A template and a resource never share a URI (a template has a variable).
            let kind = "resource";
            match mount_of(def.location.module, None) {
                Some((prefix, _)) => {
                    let uri = prefixed_uri(prefix, def.uri);
                    names.add(kind, &uri, origin(def.uri, &def.location, Some(prefix)))?;
                    resources.push(resource_copy(def, &uri));
                }
                None => {
                    names.add(kind, def.uri, origin(def.uri, &def.location, None))?;
                    resources.push(def);
                }
            }
        }

        let mut built = Registry::from_defs(tools, prompts, resources)?.with_views(views)?;
        for (name, transform) in transformed {
            let Some(entry) = built.tools.iter_mut().find(|e| e.def.name == name) else {
                continue;
            };
            transform.apply_listing(&mut entry.listing);
            entry.edit = transform.edit();
            entry.headers = crate::protocol::headers::header_params(&entry.listing.input_schema)
                .map_err(|reason| invalid("tool", name, &entry.def.location, reason))?;
        }
        if let Some(search) = &self.search {
            search.apply(&mut built, &self.proxied)?;
        }
        Ok(built)
    }

    /// What the built server's state needs from the composition, once its registry is final
    /// (schemas normalised): the tool search's index.
    pub(crate) fn finish(
        &self,
        registry: &Registry,
        states: &mut StateMap,
        #[cfg(feature = "auth")] auth: Option<std::sync::Arc<crate::auth::Authorization>>,
    ) {
        if let Some(search) = &self.search {
            states.insert(search.index(
                registry,
                self.search_also.clone(),
                #[cfg(feature = "auth")]
                auth,
            ));
        }
    }

    /// Every prefix is usable, no module is mounted twice, and every tool a module names
    /// (`Module::tools`, `Module::transform`) is one of its own.
    fn check_mounts(&self, tools: &[&'static ToolDef]) -> Result<(), Error> {
        for (i, (prefix, module)) in self.mounts.iter().enumerate() {
            if prefix.is_empty()
                || !prefix
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            {
                return Err(Error::Config(format!(
                    "Server::mount: the prefix {prefix:?} (of Module::path({:?})) must be letters, digits, `-` and `_`, at least one",
                    module.path
                )));
            }
            if let Some((other, _)) = self.mounts[..i].iter().find(|(_, m)| m.path == module.path) {
                return Err(Error::Config(format!(
                    "Server::mount: Module::path({:?}) is mounted twice, under `{other}` and under `{prefix}`; mount it once",
                    module.path
                )));
            }
            let own: Vec<&str> = tools
                .iter()
                .filter(|t| module.contains(t.location.module))
                .map(|t| t.name)
                .collect();
            let listed = module.tools.iter().flatten().map(String::as_str);
            let unknown = listed
                .filter(|n| !own.contains(n))
                .chain(module.reshape.unknown(&own))
                .next();
            if let Some(name) = unknown {
                let known = if own.is_empty() {
                    "it defines no tool".to_owned()
                } else {
                    format!("its tools are {}", own.join(", "))
                };
                return Err(Error::Config(format!(
                    "Server::mount(\"{prefix}\", Module::path({:?})) names the tool `{name}`, which the module does not define ({known})",
                    module.path
                )));
            }
            // A transform of a tool `Module::tools` leaves out would do nothing.
            if let Some(listed) = &module.tools
                && let Some(name) = module
                    .reshape
                    .transforms
                    .keys()
                    .find(|n| !listed.contains(n))
            {
                return Err(Error::Config(format!(
                    "Server::mount(\"{prefix}\", Module::path({:?})) transforms the tool `{name}`, which its Module::tools leaves out: add it there, or drop the transform",
                    module.path
                )));
            }
        }
        Ok(())
    }
}

/// A mounted or renamed tool's name must be a tool name, 64 characters at most.
fn check_tool_name(name: &str, def: &ToolDef, prefix: Option<&str>) -> Result<(), Error> {
    if is_valid_tool_name(name) {
        return Ok(());
    }
    let how = match prefix {
        Some(prefix) => format!("mounted under `{prefix}`"),
        None => "renamed".to_owned(),
    };
    let length = name.chars().count();
    let reason = if length > 64 {
        format!(
            "{how} it would be served as `{name}`, {length} characters; a tool name has at most 64: mount it under a shorter prefix, or rename it (ToolTransform::rename)"
        )
    } else {
        format!(
            "{how} it would be served as `{name}`, which is not a tool name (it must match {})",
            sake_rules::tool_name::PATTERN
        )
    };
    Err(invalid("tool", def.name, &def.location, reason))
}

fn invalid(kind: &'static str, name: &str, location: &Location, reason: String) -> Error {
    Error::InvalidDefinition {
        kind,
        name: name.to_owned(),
        location: location.to_string(),
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_uris_take_the_prefix() {
        assert_eq!(prefixed_name("math", "add"), "math_add");
        assert_eq!(prefixed_uri("math", "docs://readme"), "docs://math/readme");
        assert_eq!(
            prefixed_uri("math", "weather://{city}/now"),
            "weather://math/{city}/now"
        );
        assert_eq!(prefixed_uri("math", "ui://chart"), "ui://math/chart");
        assert_eq!(prefixed_uri("math", "urn:isbn:1"), "urn:math/isbn:1");
    }

    #[test]
    fn a_prefixed_uri_is_unprefixed_back() {
        for uri in [
            "docs://readme",
            "weather://{city}/now",
            "urn:isbn:1",
            "plain/path",
            "a:b://c",
            "skill://x/SKILL.md",
        ] {
            assert_eq!(
                unprefixed_uri("math", &prefixed_uri("math", uri)).as_deref(),
                Some(uri),
                "{uri}"
            );
        }
        assert_eq!(unprefixed_uri("math", "docs://readme"), None);
        assert_eq!(unprefixed_uri("math", "docs://mathematics/x"), None);
        assert_eq!(unprefixed_uri("math", "urn:isbn:1"), None);
    }
}
