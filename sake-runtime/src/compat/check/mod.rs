//! The checks of each profile (the rules themselves are in `rules.rs`): what every profile
//! checks and the keyword tables are here, each profile's own checks in a file of its own.

mod gemini;
mod json_schema;
mod openai;
mod vscode;

pub(crate) use vscode::COPILOT_WALK;

use serde_json::{Map, Value};

use super::meta::Dialect;
use super::refs::{self, Target};
use super::walk::{self, Node};
use super::{Finding, Fix, Level, Part, Profile, rule};
use gemini::gemini;
use json_schema::json_schema;
use openai::openai;
use vscode::vscode;

/// A finding before it is told which tool it belongs to.
#[derive(Debug)]
pub(crate) struct Raw {
    pub pointer: String,
    pub rule: &'static str,
    pub message: String,
    pub fix: Fix,
}

impl Raw {
    pub(crate) fn into_finding(self, tool: String, part: Part) -> Finding {
        Finding {
            tool,
            part,
            pointer: self.pointer,
            rule: self.rule,
            level: rule(self.rule).map_or(Level::Error, |r| r.level),
            message: self.message,
            fix: self.fix,
        }
    }
}

#[derive(Default)]
struct Out(Vec<Raw>);

impl Out {
    fn auto(&mut self, pointer: &str, rule: &'static str, message: String, how: String) {
        self.push(pointer, rule, message, true, how);
    }

    fn manual(&mut self, pointer: &str, rule: &'static str, message: String, how: String) {
        self.push(pointer, rule, message, false, how);
    }

    fn push(
        &mut self,
        pointer: &str,
        rule: &'static str,
        message: String,
        automatic: bool,
        how: String,
    ) {
        self.0.push(Raw {
            pointer: pointer.to_owned(),
            rule,
            message,
            fix: Fix { automatic, how },
        });
    }
}

/// JSON Schema's keywords (2020-12, 2019-09 and draft-07): any other name is unknown to JSON
/// Schema, an annotation at most.
pub(crate) const JSON_SCHEMA_KEYWORDS: &[&str] = &[
    "$schema",
    "$id",
    "$ref",
    "$anchor",
    "$dynamicRef",
    "$dynamicAnchor",
    "$recursiveRef",
    "$recursiveAnchor",
    "$vocabulary",
    "$comment",
    "$defs",
    "definitions",
    "prefixItems",
    "items",
    "additionalItems",
    "contains",
    "additionalProperties",
    "properties",
    "patternProperties",
    "dependentSchemas",
    "dependencies",
    "propertyNames",
    "if",
    "then",
    "else",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "unevaluatedItems",
    "unevaluatedProperties",
    "type",
    "const",
    "enum",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "maxContains",
    "minContains",
    "maxProperties",
    "minProperties",
    "required",
    "dependentRequired",
    "title",
    "description",
    "default",
    "deprecated",
    "readOnly",
    "writeOnly",
    "examples",
    "format",
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
];

/// The annotation MCP defines inside input schemas (2026-07-28 `x-mcp-header`): clients read it
/// and do not pass it on to a model, so no profile reports it and no normalisation drops it.
pub(crate) const MCP_HEADER: &str = "x-mcp-header";

/// Keywords of the OpenAI Structured Outputs subset.
pub(crate) const OPENAI_SUPPORTED: &[&str] = &[
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "const",
    "anyOf",
    "$ref",
    "$defs",
    "definitions",
    "description",
    "title",
    "pattern",
    "format",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "minItems",
    "maxItems",
    "default",
];

/// Keywords outside the OpenAI subset that only annotate or narrow: dropping them widens the
/// schema without changing its shape.
pub(crate) const OPENAI_DROPPABLE: &[&str] = &[
    "$schema",
    "$id",
    "$comment",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "minLength",
    "maxLength",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "minContains",
    "maxContains",
    "contentEncoding",
    "contentMediaType",
];

/// The `format`s OpenAI strict mode accepts.
pub(crate) const OPENAI_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// The fields of Gemini's Schema object (v1beta).
pub(crate) const GEMINI_FIELDS: &[&str] = &[
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "items",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "anyOf",
    "propertyOrdering",
    "default",
];

/// Keywords Gemini does not know that only annotate or narrow.
pub(crate) const GEMINI_DROPPABLE: &[&str] = &[
    "$schema",
    "$id",
    "$comment",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "multipleOf",
    "uniqueItems",
    "minContains",
    "maxContains",
    "contentEncoding",
    "contentMediaType",
];

/// The `format`s of Gemini's Schema object, by type.
pub(crate) fn gemini_format_ok(ty: Option<&str>, format: &str) -> bool {
    match ty {
        Some("number") => matches!(format, "float" | "double"),
        Some("integer") => matches!(format, "int32" | "int64"),
        Some("string") => matches!(format, "enum" | "date-time"),
        _ => false,
    }
}

/// The dialect URIs of JSON Schema 2020-12 and draft-07.
pub(crate) fn dialect_of(uri: &str) -> Option<Dialect> {
    let uri = uri.trim_end_matches('#');
    match uri {
        "https://json-schema.org/draft/2020-12/schema" => Some(Dialect::Draft2020),
        "http://json-schema.org/draft-07/schema" | "https://json-schema.org/draft-07/schema" => {
            Some(Dialect::Draft07)
        }
        _ => None,
    }
}

/// The anchors (`#name`) some `$ref` of the document uses.
pub(crate) fn used_anchors(root: &Value) -> Vec<String> {
    refs::all(root)
        .into_iter()
        .filter_map(|(_, r)| {
            r.strip_prefix('#')
                .filter(|f| !f.is_empty() && !f.starts_with('/'))
                .map(str::to_owned)
        })
        .collect()
}

/// The JSON type every value of an `enum` (or a `const`) has, if they share one.
pub(crate) fn inferred_type(obj: &Map<String, Value>) -> Option<&'static str> {
    let values: Vec<&Value> = match (obj.get("enum"), obj.get("const")) {
        (Some(Value::Array(values)), _) => values.iter().collect(),
        (None, Some(c)) => vec![c],
        _ => return None,
    };
    let ty = |v: &Value| match v {
        Value::String(_) => Some("string"),
        Value::Bool(_) => Some("boolean"),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some("integer"),
        Value::Number(_) => Some("number"),
        _ => None,
    };
    let first = ty(values.first()?)?;
    values.iter().all(|v| ty(v) == Some(first)).then_some(first)
}

/// The type a subschema names, if one (`["T", "null"]` counts as `T`).
pub(crate) fn single_type(obj: &Map<String, Value>) -> Option<&str> {
    match obj.get("type")? {
        Value::String(t) => Some(t),
        Value::Array(types) => {
            let mut non_null = types
                .iter()
                .filter_map(Value::as_str)
                .filter(|t| *t != "null");
            let first = non_null.next()?;
            non_null.next().is_none().then_some(first)
        }
        _ => None,
    }
}

/// Keywords that model providers refuse whole (each is reported, with a change to make): what
/// their subschemas hold is not looked at.
const REFUSED_STRUCTURE: &[&str] = &[
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "dependentSchemas",
    "dependencies",
    "patternProperties",
    "propertyNames",
    "contains",
    "unevaluatedItems",
    "unevaluatedProperties",
    "additionalItems",
    "prefixItems",
    "contentSchema",
    "additionalProperties",
];

/// Whether a subschema sits inside a keyword the provider refuses whole.
fn inside_refused(node: &Node<'_>) -> bool {
    node.keywords.iter().any(|k| REFUSED_STRUCTURE.contains(k))
}

/// What a keyword outside a profile's subset means in Rust terms, and what to do instead.
fn restructure(keyword: &str, subject: &str) -> String {
    match keyword {
        "patternProperties" | "propertyNames" => format!(
            "{subject} is a map whose keys are constrained (`HashMap<u32, _>`, a map with enum keys): take a `Vec` of structs with `key` and `value` fields instead"
        ),
        "additionalProperties" => format!(
            "{subject} is a map (`HashMap<String, _>`, `BTreeMap`, `serde_json::Map`): take a `Vec` of structs with `key` and `value` fields instead"
        ),
        "prefixItems" | "additionalItems" => format!(
            "{subject} is a tuple (`(A, B)`, or a custom tuple schema): take a struct with named fields instead"
        ),
        "allOf"
        | "not"
        | "if"
        | "then"
        | "else"
        | "dependentRequired"
        | "dependentSchemas"
        | "dependencies"
        | "contains"
        | "unevaluatedItems"
        | "unevaluatedProperties" => format!(
            "`{keyword}` in {subject} (a custom schema, or a `#[schemars]` attribute): drop it from the schema and check the condition in the function, answering with a tool error"
        ),
        "$anchor" | "$dynamicAnchor" => format!(
            "a `$ref` uses the anchor of {subject}: point it at the definition with a JSON pointer (`#/$defs/Name`)"
        ),
        _ => format!(
            "remove `{keyword}` from {subject} (a custom schema, or a `#[schemars]` attribute)"
        ),
    }
}

/// The subschema's pointer plus one keyword.
fn at(node: &Node<'_>, keyword: &str) -> String {
    walk::join(&node.pointer, &[keyword])
}

/// The checks of one part of a tool.
pub(crate) fn schema(profile: Profile, part: Part, schema: &Value) -> Vec<Raw> {
    let mut out = Out::default();
    let root_type = schema.get("type").and_then(Value::as_str);
    match part {
        Part::InputSchema if root_type != Some("object") => out.manual(
            "",
            "mcp.input-object",
            format!(
                "the root is {}, not `\"type\": \"object\"`",
                root_type.map_or_else(|| "untyped".to_owned(), |t| format!("`\"type\": \"{t}\"`"))
            ),
            "take named parameters, or make the custom `input_schema` describe an object".into(),
        ),
        Part::OutputSchema if root_type != Some("object") => out.manual(
            "",
            "mcp.output-object",
            "the root is not `\"type\": \"object\"`: sake leaves the tool out of the handshake revisions' lists (2025-11-25, 2025-06-18, 2025-03-26)".into(),
            "return a struct for structured output, or a `String` for text only".into(),
        ),
        _ => {}
    }
    match profile {
        Profile::JsonSchema2020 => json_schema(schema, &mut out),
        Profile::OpenAiStrict => openai(schema, &mut out),
        Profile::Gemini => gemini(schema, &mut out),
        Profile::VsCode => vscode(schema, &mut out),
    }
    if profile != Profile::Gemini {
        for (pointer, reference) in refs::all(schema) {
            if let Target::Unresolved(r) = refs::resolve(schema, &reference) {
                out.manual(
                    &walk::join(&pointer, &["$ref"]),
                    "mcp.ref-unresolved",
                    format!("`$ref` {r:?} leads nowhere in this schema"),
                    "point it at a subschema of the same document (`#/$defs/Name`), or inline the referenced schema".into(),
                );
            }
        }
    }
    out.0
}

/// The checks of a tool's name.
pub(crate) fn name(profile: Profile, name: &str) -> Vec<Raw> {
    let mut out = Out::default();
    match profile {
        Profile::OpenAiStrict => {
            let ok = (1..=64).contains(&name.len())
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            if !ok {
                out.manual(
                    "",
                    "openai.name",
                    format!("`{name}` does not match ^[a-zA-Z0-9_-]{{1,64}}$"),
                    "rename the tool with `#[tool(name = \"...\")]`, using letters, digits, `_` and `-`".into(),
                );
            }
        }
        Profile::Gemini => {
            let mut chars = name.chars();
            let ok = name.len() <= 64
                && chars
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-'));
            if !ok {
                out.manual(
                    "",
                    "gemini.name",
                    format!("`{name}` must start with a letter or `_` and hold only letters, digits, `_`, `.`, `:` and `-`"),
                    "rename the tool with `#[tool(name = \"...\")]`".into(),
                );
            }
        }
        Profile::VsCode | Profile::JsonSchema2020 => {}
    }
    out.0
}
