//! In-process modules: the definitions of a Rust module, mounted under a prefix.
//!
//! A definition (`#[tool]`, `#[prompt]`, `#[resource]`, `#[view]`, `sake::skills!`) records
//! the Rust module it is written in (`Location::module`, `module_path!()`); a [`Module`] selects by that path, so
//! a crate's `math` module is mounted with `Module::path("my_crate::math")` and nothing needs
//! to be declared twice. Mounting *moves* what it selects: the root no longer serves it.
//!
//! A mounted definition is a copy of the macro's with its new name or URI. Those copies are
//! made once per distinct composition and kept for the life of the process, like the macros'
//! own (`&'static`): building the same server twice makes no new ones.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Mutex, OnceLock, PoisonError};

use super::transform::{Reshape, ToolFilter, ToolTransform};
use crate::handler::{Location, PromptDef, ResourceDef, ToolDef, ToolUiDef, ViewDef};
use crate::skills::{EmbeddedFile, EmbeddedSkill, EmbeddedSkills};

/// A set of definitions to mount under a prefix ([`Server::mount`](crate::Server::mount)):
/// every tool, prompt, resource, resource template, view and embedded skill defined in a Rust
/// module and the modules below it.
///
/// ```no_run
/// mod math {
///     /// Adds two numbers.
///     #[sake::tool]
///     fn add(a: i64, b: i64) -> String { (a + b).to_string() }
/// }
///
/// # async fn run() -> Result<(), sake::Error> {
/// use sake::compose::{Module, ToolTransform};
///
/// // `add` is served as `math_add`, and no longer as `add`.
/// sake::Server::from_registry()
///     .mount("math", Module::path(concat!(module_path!(), "::math")))
///     .serve_stdio()
///     .await
/// # }
/// ```
///
/// Why a module path: every definition already records where it is written, so a module of
/// the program is a module of the server with no list to keep in step; a crate that offers
/// tools to others names its module (`Module::path("weather_tools")`) and the application
/// mounts it where it wants.
#[derive(Clone, Debug)]
#[must_use]
pub struct Module {
    pub(crate) path: Cow<'static, str>,
    pub(crate) tools: Option<Vec<String>>,
    pub(crate) reshape: Reshape,
}

impl Module {
    /// Every definition written in the Rust module `path` (as `module_path!()` spells it:
    /// `my_crate::math`) and in the modules below it (`my_crate::math::stats`).
    pub fn path(path: impl Into<Cow<'static, str>>) -> Self {
        Module {
            path: path.into(),
            tools: None,
            reshape: Reshape::default(),
        }
    }

    /// Only these of its tools (by their own names); the rest stay where they were. Its
    /// prompts, resources and views are mounted all the same.
    pub fn tools<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.tools = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// Reshapes its tool `tool` (its own name, before the prefix).
    pub fn transform(mut self, tool: impl Into<String>, transform: ToolTransform) -> Self {
        self.reshape.transforms.insert(tool.into(), transform);
        self
    }

    /// Keeps only the tools `filter` keeps (judged on their listings before any transform,
    /// under their own names); the others are neither listed nor served.
    pub fn filter(mut self, filter: ToolFilter) -> Self {
        self.reshape.filter = Some(filter);
        self
    }

    /// Whether a definition written in the Rust module `module` belongs to it.
    pub(crate) fn contains(&self, module: &str) -> bool {
        module
            .strip_prefix(&*self.path)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with("::"))
    }

    /// Whether it selects the tool `name` written in `module`.
    pub(crate) fn selects_tool(&self, module: &str, name: &str) -> bool {
        self.contains(module)
            && self
                .tools
                .as_ref()
                .is_none_or(|names| names.iter().any(|n| n == name))
    }
}

/// Strings and definitions made for mounts, kept for the process: one per distinct value.
#[derive(Default)]
struct Interned {
    strings: HashSet<&'static str>,
    tools: HashMap<ToolKey, &'static ToolDef>,
    prompts: HashMap<(usize, &'static str), &'static PromptDef>,
    resources: HashMap<(usize, &'static str), &'static ResourceDef>,
    views: HashMap<(usize, &'static str), &'static ViewDef>,
    skills: HashMap<(usize, &'static str), &'static EmbeddedSkills>,
}

/// What a mounted tool changes of its definition.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
struct ToolKey {
    def: usize,
    name: &'static str,
    title: Option<&'static str>,
    description: &'static str,
    view: Option<&'static str>,
}

fn interned() -> std::sync::MutexGuard<'static, Interned> {
    static INTERNED: OnceLock<Mutex<Interned>> = OnceLock::new();
    INTERNED
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
}

fn string(table: &mut Interned, s: &str) -> &'static str {
    if let Some(found) = table.strings.get(s) {
        return found;
    }
    let leaked: &'static str = Box::leak(s.to_owned().into_boxed_str());
    table.strings.insert(leaked);
    leaked
}

/// The definition kept under `key`, made (and kept for the process) if there is none.
fn keep<K: Eq + std::hash::Hash, T>(
    kept: &mut HashMap<K, &'static T>,
    key: K,
    make: impl FnOnce() -> T,
) -> &'static T {
    if let Some(found) = kept.get(&key).copied() {
        return found;
    }
    let made: &'static T = Box::leak(Box::new(make()));
    kept.insert(key, made);
    made
}

fn address<T>(def: &'static T) -> usize {
    std::ptr::from_ref(def) as usize
}

/// `def` as a mounted copy shows it: another name, title, description or view.
pub(crate) fn tool_copy(
    def: &'static ToolDef,
    name: &str,
    transform: Option<&ToolTransform>,
    view: Option<&str>,
) -> &'static ToolDef {
    let mut table = interned();
    let key = ToolKey {
        def: address(def),
        name: string(&mut table, name),
        title: match transform.and_then(|t| t.title.as_deref()) {
            Some(title) => Some(string(&mut table, title)),
            None => def.title,
        },
        description: match transform.and_then(|t| t.description.as_deref()) {
            Some(d) => string(&mut table, d),
            None => def.description,
        },
        view: match view {
            Some(uri) => Some(string(&mut table, uri)),
            None => def.ui.resource_uri,
        },
    };
    keep(&mut table.tools, key, || ToolDef {
        name: key.name,
        title: key.title,
        description: key.description,
        ui: ToolUiDef {
            resource_uri: key.view,
            ..def.ui
        },
        ..*def
    })
}

/// `def` renamed `name`.
pub(crate) fn prompt_copy(def: &'static PromptDef, name: &str) -> &'static PromptDef {
    let mut table = interned();
    let name = string(&mut table, name);
    keep(&mut table.prompts, (address(def), name), || PromptDef {
        name,
        ..*def
    })
}

/// `def` at `uri`.
pub(crate) fn resource_copy(def: &'static ResourceDef, uri: &str) -> &'static ResourceDef {
    let mut table = interned();
    let uri = string(&mut table, uri);
    keep(&mut table.resources, (address(def), uri), || ResourceDef {
        uri,
        ..*def
    })
}

/// `def` at `uri`.
pub(crate) fn view_copy(def: &'static ViewDef, uri: &str) -> &'static ViewDef {
    let mut table = interned();
    let uri = string(&mut table, uri);
    keep(&mut table.views, (address(def), uri), || ViewDef {
        uri,
        ..*def
    })
}

/// `skills` with every skill and file under `prefix/` (`skill://prefix/<path>/…`).
pub(crate) fn skills_copy(
    skills: &'static EmbeddedSkills,
    prefix: &str,
) -> &'static EmbeddedSkills {
    let mut table = interned();
    let prefix = string(&mut table, prefix);
    let key = (address(skills), prefix);
    if let Some(found) = table.skills.get(&key).copied() {
        return found;
    }
    let files: Vec<EmbeddedFile> = skills
        .files
        .iter()
        .map(|f| EmbeddedFile {
            path: string(&mut table, &format!("{prefix}/{}", f.path)),
            bytes: f.bytes,
            digest: f.digest,
        })
        .collect();
    let each: Vec<EmbeddedSkill> = skills
        .skills
        .iter()
        .map(|s| EmbeddedSkill {
            path: string(&mut table, &format!("{prefix}/{}", s.path)),
            frontmatter: s.frontmatter,
        })
        .collect();
    let made: &'static EmbeddedSkills = Box::leak(Box::new(EmbeddedSkills {
        files: Box::leak(files.into_boxed_slice()),
        skills: Box::leak(each.into_boxed_slice()),
        ..*skills
    }));
    table.skills.insert(key, made);
    made
}

/// Where a definition came from, for a collision's message: its own name, its place, and
/// the mount that moved it.
pub(crate) fn origin(own: &str, location: &Location, prefix: Option<&str>) -> String {
    match prefix {
        Some(prefix) => format!("`{own}` at {location}, mounted under `{prefix}`"),
        None => format!("`{own}` at {location}"),
    }
}

/// The names every kind of definition would be served under, to find two that collide.
#[derive(Default)]
pub(crate) struct Names {
    seen: BTreeMap<(&'static str, String), String>,
}

impl Names {
    /// Records that a `kind` is served as `name`, from `origin`; a second one is an error.
    pub(crate) fn add(
        &mut self,
        kind: &'static str,
        name: &str,
        origin: String,
    ) -> Result<(), crate::Error> {
        match self.seen.entry((kind, name.to_owned())) {
            std::collections::btree_map::Entry::Occupied(first) => Err(crate::Error::Collision {
                kind,
                name: name.to_owned(),
                first: first.get().clone(),
                second: origin,
            }),
            std::collections::btree_map::Entry::Vacant(slot) => {
                slot.insert(origin);
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_module_holds_its_own_path_and_those_below_it() {
        let m = Module::path("app::math");
        assert!(m.contains("app::math"));
        assert!(m.contains("app::math::stats"));
        assert!(!m.contains("app::mathematics"));
        assert!(!m.contains("app"));
        let m = m.tools(["add"]);
        assert!(m.selects_tool("app::math", "add"));
        assert!(!m.selects_tool("app::math", "sub"));
    }
}
