//! The checks of each profile (the rules themselves are in `rules.rs`).

use serde_json::{Map, Value};

use super::meta::{self, Dialect};
use super::refs::{self, Target};
use super::walk::{self, Node, is_array_type, is_object_schema, required_names};
use super::{Finding, Fix, Level, Part, Profile, rule};

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

// ---------------------------------------------------------------------------------------------
// JSON Schema 2020-12

fn json_schema(schema: &Value, out: &mut Out) {
    let declared = schema.get("$schema").and_then(Value::as_str);
    let dialect = match declared {
        None => Some(Dialect::Draft2020),
        Some(uri) => {
            let d = dialect_of(uri);
            if d != Some(Dialect::Draft2020) {
                out.manual(
                    "/$schema",
                    "json-schema.dialect",
                    format!("`$schema` is {uri:?}: clients must support 2020-12, and need not support this dialect"),
                    "remove `$schema` and write the schema in JSON Schema 2020-12".into(),
                );
            }
            d
        }
    };
    let Some(dialect) = dialect else {
        return;
    };
    let migrate = dialect == Dialect::Draft2020;
    walk::walk(schema, &mut |node| {
        let Some(obj) = node.obj() else {
            return;
        };
        if migrate {
            json_schema_migrations(node, obj, out);
        }
        let skip = |key: &str, value: &Value| {
            migrate
                && ((key == "items" && value.is_array())
                    || (matches!(key, "exclusiveMinimum" | "exclusiveMaximum")
                        && value.is_boolean()))
        };
        for v in meta::violations(obj, dialect, &skip) {
            out.manual(
                &format!("{}{}", node.pointer, v.at),
                "json-schema.meta",
                v.message,
                "correct the keyword's value in the custom schema".into(),
            );
        }
    });
}

fn json_schema_migrations(node: &Node<'_>, obj: &Map<String, Value>, out: &mut Out) {
    if obj.get("items").is_some_and(Value::is_array) {
        out.auto(
            &at(node, "items"),
            "json-schema.tuple-items",
            "`items` is an array (draft-07's tuple form)".into(),
            "sake renames it `prefixItems` (and `additionalItems` `items`)".into(),
        );
    }
    if obj.contains_key("additionalItems") {
        out.auto(
            &at(node, "additionalItems"),
            "json-schema.additional-items",
            "`additionalItems` has no meaning in 2020-12".into(),
            if obj.get("items").is_some_and(Value::is_array) {
                "sake makes it the `items` beside `prefixItems`".into()
            } else {
                "sake drops it (`items` is a single schema, so it never applied)".into()
            },
        );
    }
    if obj.contains_key("definitions") {
        out.auto(
            &at(node, "definitions"),
            "json-schema.definitions",
            "`definitions` is draft-07's name for `$defs`".into(),
            "sake moves the entries to `$defs` and rewrites the `$ref`s into them".into(),
        );
    }
    if obj.contains_key("dependencies") {
        out.auto(
            &at(node, "dependencies"),
            "json-schema.dependencies",
            "`dependencies` has no meaning in 2020-12".into(),
            "sake moves arrays of names to `dependentRequired` and schemas to `dependentSchemas`"
                .into(),
        );
    }
    for key in ["exclusiveMinimum", "exclusiveMaximum"] {
        if let Some(Value::Bool(b)) = obj.get(key) {
            out.auto(
                &at(node, key),
                "json-schema.exclusive-boolean",
                format!("`{key}: {b}` is draft-04's form"),
                if *b {
                    format!("sake writes the bound as `{key}`")
                } else {
                    format!("sake drops `{key}: false`")
                },
            );
        }
    }
    for key in ["$recursiveRef", "$recursiveAnchor"] {
        if obj.contains_key(key) {
            out.manual(
                &at(node, key),
                "json-schema.recursive-ref",
                format!("`{key}` is a 2019-09 keyword"),
                "use a plain `$ref` to the recursive definition (`#/$defs/Name`)".into(),
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// OpenAI strict function calling

fn openai(schema: &Value, out: &mut Out) {
    if schema.get("anyOf").is_some() {
        out.manual(
            "/anyOf",
            "openai.root-any-of",
            "the root is an `anyOf`".into(),
            "take the enum as one named parameter (a struct field) instead of as all the arguments"
                .into(),
        );
    }
    let anchors = used_anchors(schema);
    let mut too_deep = false;
    walk::walk(schema, &mut |node| {
        if inside_refused(node) {
            return;
        }
        let Some(obj) = node.obj() else {
            if node.schema == &Value::Bool(true) {
                out.manual(
                    &node.pointer,
                    "openai.type",
                    format!("{} accepts any JSON (`true`)", node.subject()),
                    "give it a concrete type".into(),
                );
            }
            return;
        };
        let subject = node.subject();
        for (key, value) in obj {
            openai_keyword(node, obj, (key.as_str(), value), &anchors, &subject, out);
        }
        if !(obj.contains_key("type")
            || obj.contains_key("anyOf")
            || obj.contains_key("oneOf")
            || obj.contains_key("$ref"))
        {
            match inferred_type(obj) {
                Some(t) => out.auto(
                    &node.pointer,
                    "openai.type",
                    format!("{subject} has no `type`"),
                    format!("sake adds `\"type\": \"{t}\"`, the type of its values"),
                ),
                None => out.manual(
                    &node.pointer,
                    "openai.type",
                    format!("{subject} has no `type`: it accepts any JSON (`serde_json::Value`?)"),
                    "give it a concrete type (a struct, an enum, a `String`…)".into(),
                ),
            }
        }
        if is_object_schema(obj) {
            openai_object(node, obj, &subject, out);
        }
        if is_array_type(obj) && !obj.contains_key("items") {
            out.manual(
                &node.pointer,
                "openai.array-items",
                format!("{subject} is an array without `items`"),
                if obj.contains_key("prefixItems") {
                    format!("{subject} is a tuple: take a struct with named fields instead")
                } else {
                    "give the array an element type (a `Vec<T>` of a concrete `T`)".into()
                },
            );
        }
        if !too_deep && node.objects > 10 {
            too_deep = true;
            out.manual(
                &node.pointer,
                "openai.limits",
                format!(
                    "{subject} is nested {} objects deep; strict mode allows 10",
                    node.objects
                ),
                "flatten the argument types".into(),
            );
        }
    });
    openai_sizes(schema, out);
}

fn openai_keyword(
    node: &Node<'_>,
    obj: &Map<String, Value>,
    (key, value): (&str, &Value),
    anchors: &[String],
    subject: &str,
    out: &mut Out,
) {
    let pointer = at(node, key);
    match key {
        MCP_HEADER => {}
        "default" => out.auto(
            &pointer,
            "openai.default",
            format!("{subject} has a `default`"),
            "sake drops it".into(),
        ),
        "format" => {
            if let Some(f) = value.as_str()
                && !OPENAI_FORMATS.contains(&f)
            {
                out.auto(
                    &pointer,
                    "openai.format",
                    format!("`format: {f:?}` of {subject} is not one strict mode accepts"),
                    "sake drops it".into(),
                );
            }
        }
        "additionalProperties" => {} // `openai_object`
        _ if OPENAI_SUPPORTED.contains(&key) => {}
        "oneOf" if !obj.contains_key("anyOf") => out.auto(
            &pointer,
            "openai.keyword",
            format!("`oneOf` in {subject} is not accepted"),
            "sake rewrites it as `anyOf` (the same when, as for a serde enum, one branch at most matches)".into(),
        ),
        "$anchor" | "$dynamicAnchor" => {
            let used = value.as_str().is_some_and(|a| anchors.iter().any(|u| u == a));
            if used {
                out.manual(
                    &pointer,
                    "openai.keyword",
                    format!("`{key}` in {subject} is not accepted"),
                    restructure(key, subject),
                );
            } else {
                out.auto(
                    &pointer,
                    "openai.keyword",
                    format!("`{key}` in {subject} is not accepted"),
                    "sake drops it (no `$ref` uses it)".into(),
                );
            }
        }
        _ if OPENAI_DROPPABLE.contains(&key) || !JSON_SCHEMA_KEYWORDS.contains(&key) => out.auto(
            &pointer,
            "openai.keyword",
            format!("`{key}` in {subject} is not accepted"),
            "sake drops it (the model no longer sees what it said)".into(),
        ),
        _ => out.manual(
            &pointer,
            "openai.keyword",
            format!("`{key}` in {subject} is not accepted"),
            restructure(key, subject),
        ),
    }
}

fn openai_object(node: &Node<'_>, obj: &Map<String, Value>, subject: &str, out: &mut Out) {
    let has_properties = obj.get("properties").is_some_and(Value::is_object);
    match obj.get("additionalProperties") {
        Some(Value::Bool(false)) => {}
        None | Some(Value::Bool(true)) if has_properties => out.auto(
            &node.pointer,
            "openai.additional-properties",
            format!("{subject} does not set `additionalProperties: false`"),
            "sake adds `additionalProperties: false`".into(),
        ),
        None | Some(Value::Bool(true)) => out.manual(
            &node.pointer,
            "openai.additional-properties",
            format!("{subject} is a free-form object (no declared properties)"),
            format!(
                "{subject} cannot take arbitrary keys in strict mode: declare a struct, or take a `Vec` of key/value structs"
            ),
        ),
        Some(_) => out.manual(
            &at(node, "additionalProperties"),
            "openai.additional-properties",
            format!("{subject} is a map (`additionalProperties` is a schema)"),
            restructure("additionalProperties", subject),
        ),
    }
    let Some(Value::Object(props)) = obj.get("properties") else {
        return;
    };
    let required = required_names(obj);
    for (name, prop) in props {
        if required.contains(&name.as_str()) {
            continue;
        }
        let keeps_value = prop.get("default").is_some() || prop.get(MCP_HEADER).is_some();
        let field = if node.field.is_empty() {
            format!("`{name}`")
        } else {
            format!("`{}.{name}`", node.field.join("."))
        };
        out.auto(
            &walk::join(&node.pointer, &["properties", name]),
            "openai.required",
            format!("field {field} is optional (an `Option<T>` or a `#[serde(default)]` field) but strict mode requires every property in `required`"),
            if keeps_value {
                format!("sake lists {field} in `required` without `null` (it has a default, or a header mirrors it), so the model always sends a value")
            } else {
                format!("sake lists {field} in `required` and adds `null` to its type (an `Option<T>` reads `null` as `None`; a `#[serde(default)]` field without a `default` in its schema refuses it: make it an `Option<T>`)")
            },
        );
    }
}

fn openai_sizes(schema: &Value, out: &mut Out) {
    let mut properties = 0usize;
    let mut chars = 0usize;
    let mut enum_values = 0usize;
    let mut big_enum = Vec::new();
    walk::walk(schema, &mut |node| {
        let Some(obj) = node.obj() else {
            return;
        };
        if let Some(Value::Object(props)) = obj.get("properties") {
            properties += props.len();
            chars += props.keys().map(|k| k.chars().count()).sum::<usize>();
        }
        for defs in ["$defs", "definitions"] {
            if let Some(Value::Object(d)) = obj.get(defs) {
                chars += d.keys().map(|k| k.chars().count()).sum::<usize>();
            }
        }
        if let Some(Value::String(c)) = obj.get("const") {
            chars += c.chars().count();
        }
        if let Some(Value::Array(values)) = obj.get("enum") {
            enum_values += values.len();
            let len: usize = values
                .iter()
                .filter_map(Value::as_str)
                .map(|s| s.chars().count())
                .sum();
            chars += len;
            if values.len() > 250 && values.iter().all(Value::is_string) && len > 15_000 {
                big_enum.push((at(node, "enum"), values.len(), len));
            }
        }
    });
    let mut limit = |message: String| {
        out.manual(
            "",
            "openai.limits",
            message,
            "split the tool, or flatten its argument types".into(),
        );
    };
    if properties > 5000 {
        limit(format!(
            "the schema has {properties} properties; strict mode allows 5000"
        ));
    }
    if chars > 120_000 {
        limit(format!(
            "property names, definition names, enum and const values add up to {chars} characters; strict mode allows 120,000"
        ));
    }
    if enum_values > 1000 {
        limit(format!(
            "the schema has {enum_values} enum values; strict mode allows 1000"
        ));
    }
    for (pointer, count, len) in big_enum {
        out.manual(
            &pointer,
            "openai.limits",
            format!("this enum has {count} values of {len} characters; above 250 values strict mode allows 15,000"),
            "shorten the values, or take a free string and check it in the function".into(),
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Gemini function declarations

fn gemini(schema: &Value, out: &mut Out) {
    let all = refs::all(schema);
    let (inlinable, kept): (Vec<_>, Vec<_>) =
        all.iter().partition(|(_, r)| refs::inlinable(schema, r));
    let ctx = GeminiRefs {
        all_inlinable: kept.is_empty(),
        inlinable: inlinable.iter().map(|(p, _)| p.clone()).collect(),
        recursive: kept
            .iter()
            .filter(|(_, r)| matches!(refs::resolve(schema, r), Target::Local(_)))
            .map(|(p, _)| p.clone())
            .collect(),
        kept_anchors: kept
            .iter()
            .filter_map(|(_, r)| r.strip_prefix('#').map(str::to_owned))
            .collect(),
    };
    if schema.get("type").and_then(Value::as_str) == Some("object")
        && schema
            .get("properties")
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty)
    {
        out.manual(
            "",
            "gemini.no-parameters",
            "the tool takes no arguments: its `parameters` would be an object without properties"
                .into(),
            "nothing in the server: the client must leave `parameters` out for this tool".into(),
        );
    }
    walk::walk(schema, &mut |node| {
        if inside_refused(node) {
            return;
        }
        let Some(obj) = node.obj() else {
            if node.schema == &Value::Bool(true) {
                out.manual(
                    &node.pointer,
                    "gemini.type",
                    format!("{} accepts any JSON (`true`)", node.subject()),
                    "give it a concrete type".into(),
                );
            }
            return;
        };
        let subject = node.subject();
        for (key, value) in obj {
            gemini_keyword(node, obj, (key.as_str(), value), &ctx, &subject, out);
        }
        let ty = single_type(obj);
        match obj.get("type") {
            Some(Value::Array(types)) => {
                let others = types.iter().filter(|t| *t != "null").count();
                let branches = obj.contains_key("anyOf") || obj.contains_key("oneOf");
                let automatic = others == 1 || (others > 1 && !branches);
                out.push(
                    &at(node, "type"),
                    "gemini.type-array",
                    format!("`type` of {subject} is a list ({})", Value::Array(types.clone())),
                    automatic,
                    if others == 1 {
                        "sake writes the other type with `nullable: true`".into()
                    } else if automatic {
                        "sake writes an `anyOf` of one type each (and `nullable: true` for `null`)".into()
                    } else {
                        format!("give {subject} one type (a Rust enum with a variant per type becomes an `anyOf`)")
                    },
                );
            }
            Some(_) => {}
            None if obj.contains_key("anyOf")
                || obj.contains_key("oneOf")
                || obj.contains_key("$ref") => {}
            None => match inferred_type(obj) {
                Some(t) => out.auto(
                    &node.pointer,
                    "gemini.type",
                    format!("{subject} has no `type`"),
                    format!("sake adds `\"type\": \"{t}\"`, the type of its values"),
                ),
                None => out.manual(
                    &node.pointer,
                    "gemini.type",
                    format!("{subject} has no `type`: it accepts any JSON (`serde_json::Value`?)"),
                    "give it a concrete type (a struct, an enum, a `String`…)".into(),
                ),
            },
        }
        let effective = ty.or_else(|| {
            (!obj.contains_key("type"))
                .then(|| inferred_type(obj))
                .flatten()
        });
        if let Some(Value::Array(values)) = obj.get("enum") {
            let strings = values.iter().all(|v| v.is_string() || v.is_null());
            if effective != Some("string") || !strings {
                out.manual(
                    &at(node, "enum"),
                    "gemini.enum",
                    format!("{subject} is an enum of values that are not strings"),
                    "make it a string enum: a Rust `enum` of unit variants (`#[serde(rename = \"...\")]` sets the values)".into(),
                );
            } else if values.iter().any(Value::is_null) {
                out.auto(
                    &at(node, "enum"),
                    "gemini.enum",
                    format!("the enum of {subject} holds `null`"),
                    "sake removes `null` from the enum and sets `nullable: true`".into(),
                );
            }
        }
        if let Some(Value::String(f)) = obj.get("format")
            && !gemini_format_ok(effective, f)
        {
            out.auto(
                &at(node, "format"),
                "gemini.format",
                format!("`format: {f:?}` of {subject} is not one Gemini accepts"),
                "sake drops it".into(),
            );
        }
        if is_array_type(obj) && !obj.contains_key("items") {
            out.manual(
                &node.pointer,
                "gemini.array-items",
                format!("{subject} is an array without `items`"),
                if obj.contains_key("prefixItems") {
                    format!("{subject} is a tuple: take a struct with named fields instead")
                } else {
                    "give the array an element type (a `Vec<T>` of a concrete `T`)".into()
                },
            );
        }
        // A map is reported by its `additionalProperties` or `patternProperties`.
        let map = obj
            .get("additionalProperties")
            .is_some_and(Value::is_object)
            || obj.contains_key("patternProperties");
        if !node.is_root()
            && !map
            && single_type(obj) == Some("object")
            && obj
                .get("properties")
                .and_then(Value::as_object)
                .is_none_or(Map::is_empty)
        {
            out.manual(
                &node.pointer,
                "gemini.empty-object",
                format!("{subject} is an object without declared properties"),
                format!("declare the fields of {subject} as a struct (a `serde_json::Map`, or a struct without fields, cannot be expressed)"),
            );
        }
    });
}

/// What the Gemini checks know of the document's `$ref`s.
struct GeminiRefs {
    /// Whether every `$ref` can be inlined.
    all_inlinable: bool,
    /// The pointers of the subschemas whose `$ref` can be inlined.
    inlinable: Vec<String>,
    /// The pointers of the subschemas whose `$ref` resolves to a recursive definition.
    recursive: Vec<String>,
    /// Anchors that a `$ref` left in place still needs.
    kept_anchors: Vec<String>,
}

fn gemini_keyword(
    node: &Node<'_>,
    obj: &Map<String, Value>,
    (key, value): (&str, &Value),
    ctx: &GeminiRefs,
    subject: &str,
    out: &mut Out,
) {
    let pointer = at(node, key);
    let not_accepted = || format!("`{key}` in {subject} is not a field of Gemini's Schema");
    match key {
        MCP_HEADER | "format" => {} // checked with the node
        _ if GEMINI_FIELDS.contains(&key) => {}
        "$ref" => {
            let reference = value.as_str().unwrap_or_default();
            let inlinable = ctx.inlinable.contains(&node.pointer);
            out.push(
                &pointer,
                "gemini.ref",
                format!("{subject} is a `$ref` ({reference:?})"),
                inlinable,
                if inlinable {
                    "sake inlines the referenced schema".into()
                } else if ctx.recursive.contains(&node.pointer) {
                    "a recursive type cannot be inlined: bound its depth (a fixed number of nested levels), or take it as a JSON string".into()
                } else {
                    "the `$ref` leads nowhere in this schema: point it at a `$defs` entry".into()
                },
            );
        }
        "$defs" | "definitions" => out.push(
            &pointer,
            "gemini.ref",
            format!("`{key}` in {subject}: Gemini's Schema has no definitions"),
            ctx.all_inlinable,
            if ctx.all_inlinable {
                "sake inlines every `$ref` and drops the definitions".into()
            } else {
                "a recursive type cannot be inlined: bound its depth (a fixed number of nested levels), or take it as a JSON string".into()
            },
        ),
        "oneOf" if !obj.contains_key("anyOf") => out.auto(
            &pointer,
            "gemini.keyword",
            not_accepted(),
            "sake rewrites it as `anyOf` (the same when, as for a serde enum, one branch at most matches)".into(),
        ),
        "const" if value.is_string() => out.auto(
            &pointer,
            "gemini.keyword",
            not_accepted(),
            "sake writes it as a one-value string `enum`".into(),
        ),
        "const" => out.manual(
            &pointer,
            "gemini.keyword",
            not_accepted(),
            "only strings can be constants (as a one-value `enum`): use a string".into(),
        ),
        "exclusiveMinimum" | "exclusiveMaximum" => {
            let integer = single_type(obj) == Some("integer")
                && value.as_f64().is_some_and(|n| n.fract() == 0.0);
            out.auto(
                &pointer,
                "gemini.keyword",
                not_accepted(),
                if integer {
                    let bound = if key == "exclusiveMinimum" { "minimum" } else { "maximum" };
                    format!("sake writes the integer bound as `{bound}`")
                } else {
                    "sake drops it (the model no longer sees the bound)".into()
                },
            );
        }
        "additionalProperties" | "unevaluatedProperties" if value.is_boolean() => out.auto(
            &pointer,
            "gemini.keyword",
            not_accepted(),
            "sake drops it (a Gemini object has only its declared properties)".into(),
        ),
        "additionalProperties" => out.manual(
            &pointer,
            "gemini.keyword",
            not_accepted(),
            restructure("additionalProperties", subject),
        ),
        "$anchor" | "$dynamicAnchor" => {
            let kept = value.as_str().is_some_and(|a| ctx.kept_anchors.iter().any(|k| k == a));
            if kept {
                out.manual(&pointer, "gemini.keyword", not_accepted(), restructure(key, subject));
            } else {
                out.auto(&pointer, "gemini.keyword", not_accepted(), "sake drops it".into());
            }
        }
        _ if GEMINI_DROPPABLE.contains(&key) || !JSON_SCHEMA_KEYWORDS.contains(&key) => out.auto(
            &pointer,
            "gemini.keyword",
            not_accepted(),
            "sake drops it (the model no longer sees what it said)".into(),
        ),
        _ => out.manual(&pointer, "gemini.keyword", not_accepted(), restructure(key, subject)),
    }
}

// ---------------------------------------------------------------------------------------------
// VS Code

/// The keywords Copilot Chat's schema walk descends through (`forEachSchemaNode`).
pub(crate) const COPILOT_WALK: &[&str] = &[
    "properties",
    "items",
    "dependencies",
    "patternProperties",
    "additionalProperties",
    "anyOf",
    "allOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "contains",
];

/// The keywords whose values draft-07 validates as subschemas.
const DRAFT_07_APPLICATORS: &[&str] = &[
    "properties",
    "patternProperties",
    "additionalProperties",
    "items",
    "additionalItems",
    "contains",
    "propertyNames",
    "if",
    "then",
    "else",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "definitions",
    "dependencies",
];

/// Whether every keyword on the path from the root to this node is in `keywords`.
fn reached_through(node: &Node<'_>, keywords: &[&str]) -> bool {
    node.keywords.iter().all(|k| keywords.contains(k))
}

fn vscode(schema: &Value, out: &mut Out) {
    if let Some(uri) = schema.get("$schema").and_then(Value::as_str)
        && dialect_of(uri) == Some(Dialect::Draft2020)
    {
        out.auto(
            "/$schema",
            "vscode.schema-uri",
            format!("`$schema` is {uri:?}"),
            "sake drops it (2020-12 is MCP's default dialect)".into(),
        );
    }
    for key in ["oneOf", "anyOf", "allOf", "not", "if", "then", "else"] {
        if schema.get(key).is_some() {
            out.manual(
                &format!("/{key}"),
                "vscode.top-level-composition",
                format!("`{key}` at the root is removed before the model sees the schema"),
                "move the constraint into a property, or check it in the function and answer with a tool error".into(),
            );
        }
    }
    walk::walk(schema, &mut |node| {
        let Some(obj) = node.obj() else {
            return;
        };
        let subject = node.subject();
        for key in [
            "$dynamicRef",
            "$dynamicAnchor",
            "$recursiveRef",
            "$recursiveAnchor",
        ] {
            if obj.contains_key(key) {
                out.manual(
                    &at(node, key),
                    "vscode.dynamic-ref",
                    format!("`{key}` in {subject}: VS Code's validator does not support it and omits the tool"),
                    "use a plain `$ref` to a `$defs` entry".into(),
                );
            }
        }
        if reached_through(node, DRAFT_07_APPLICATORS) {
            for v in meta::violations(obj, Dialect::Draft07, &|_, _| false) {
                out.manual(
                    &format!("{}{}", node.pointer, v.at),
                    "vscode.draft-07",
                    v.message,
                    "correct the keyword's value in the custom schema".into(),
                );
            }
        }
        if !reached_through(node, COPILOT_WALK) {
            return;
        }
        if obj.get("type").and_then(Value::as_str) == Some("array")
            && matches!(
                obj.get("items"),
                None | Some(Value::Bool(false) | Value::Null)
            )
        {
            out.auto(
                &node.pointer,
                "vscode.array-items",
                format!("{subject} is an array without `items`"),
                if obj.contains_key("prefixItems") {
                    "sake adds `items` (an `anyOf` of the tuple's element schemas when `maxItems` bounds it, else `{}`)".into()
                } else {
                    "sake adds `items: {}` (any element); a `Vec<T>` of a concrete `T` tells the model more".into()
                },
            );
        }
        if obj.get("type").and_then(Value::as_str) == Some("object")
            && let Some(Value::Object(props)) = obj.get("properties")
        {
            for name in required_names(obj) {
                if !props.contains_key(name) {
                    out.auto(
                        &at(node, "required"),
                        "vscode.required-undefined",
                        format!("`required` of {subject} names `{name}`, which `properties` does not declare"),
                        "sake removes the name".into(),
                    );
                }
            }
        }
    });
}
