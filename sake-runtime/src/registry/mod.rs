//! The registry: every `#[tool]`, `#[prompt]` and `#[resource]` in the binary, collected from
//! `inventory`, sorted, validated, and turned into the listings each revision shows.
//!
//! The descriptors the macros submit are public so that an application can serve a chosen
//! set of them: `Server::with_registry(Registry::from_defs(tools, prompts, resources)?)`,
//! with the descriptors taken from `inventory::iter::<ToolDef>()` or written by hand.
//!
//! Split along its seams: `build.rs` collects and checks the definitions (start-up),
//! `lookup.rs` finds one by name or URI (every request), `lists.rs` renders the listings each
//! revision and audience shows.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use serde_json::Value;

use crate::handler::input::Need;
pub use crate::handler::{
    CompleteFn, CspDef, IconDef, Location, PromptDef, PromptFuture, ResourceDef, ResourceFuture,
    ResourceRequest, TaskSupport, ToolDef, ToolFuture, ToolHints, ToolUiDef, ViewDef, ViewHtml,
};
use crate::protocol::Revision;
use crate::protocol::apps::{ToolUi, ViewMeta};
use crate::protocol::headers::HeaderParam;
use crate::protocol::types::{Resource, Tool};
use crate::uri_template::UriTemplate;

mod build;
mod lists;
mod lookup;

pub(crate) use build::tool_listing;
pub(crate) use lists::render_tool;

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

/// Why a handshake revision cannot show a tool of these schemas, if it cannot: it allows only
/// JSON objects as input and structured output. The one rule, for the program's tools (at
/// start-up) and for a source's (`Server::proxy`, when its list is fetched).
pub(crate) fn not_object_schemas(
    input: &serde_json::Value,
    output: Option<&serde_json::Value>,
) -> Option<&'static str> {
    if !crate::schema::is_object_schema(input) {
        Some("its input schema is not a JSON object")
    } else if output.is_some_and(|s| !crate::schema::is_object_schema(s)) {
        Some("its output schema is not a JSON object (return a struct, or a String for text only)")
    } else {
        None
    }
}

/// Why `rev` lists a source's tool to no one, if it does not: as [`ToolEntry::left_out_of`]
/// decides for the program's own (a source's listing says nothing of tasks: the upstream
/// refuses a task-only tool's call itself).
pub(crate) fn remote_left_out_of(
    tool: &crate::protocol::types::Tool,
    rev: Revision,
) -> Option<&'static str> {
    if rev.features().object_only_schemas {
        return not_object_schemas(&tool.input_schema, tool.output_schema.as_ref());
    }
    None
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::headers::header_params;

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
