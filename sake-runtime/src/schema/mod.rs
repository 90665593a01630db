//! JSON Schemas for tool inputs and outputs: schemars settings and the normalisation pass.
//!
//! Every schema sake publishes follows these rules, which the major clients accept:
//! - JSON Schema 2020-12; `$defs` inlined except where a type is recursive;
//! - `Option<T>` means "absent from `required`", never a `null` union;
//! - enums of strings (and string `const`s) carry `"type":"string"`;
//! - no boolean subschemas (`true` becomes `{}`, `false` becomes `{"not":{}}`), except
//!   `additionalProperties: false`, which stays as clients expect it;
//! - no `required: null`, no non-standard `format` values (`uint32`, `int64`…);
//! - an input schema is always `{"type":"object","properties":{…}}`.

use schemars::JsonSchema;
use schemars::generate::{Contract, SchemaSettings};
use serde_json::{Map, Value};

/// The `format` values JSON Schema 2020-12 defines; any other is dropped.
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

fn generate<T: JsonSchema + ?Sized>(contract: Contract) -> Value {
    let settings = || {
        SchemaSettings::draft2020_12().with(|s| {
            s.inline_subschemas = true;
            s.contract = contract.clone();
            // No `$schema`: it would be removed again.
            s.meta_schema = None;
        })
    };
    // The type's schema without what a root schema adds and sake removes (its `title`, made
    // from the type's name: a `format!` per function for the macros' generic argument
    // structs). Only a recursive type needs the root's bookkeeping (its `$defs`, a reference
    // to itself as `#`), and only such a type leaves definitions behind: it is generated again
    // as a root.
    let mut generator = settings().into_generator();
    let schema = generator.subschema_for::<T>();
    let schema = if generator.definitions().is_empty() {
        schema
    } else {
        settings().into_generator().into_root_schema_for::<T>()
    };
    let mut value = schema.to_value();
    if let Value::Object(root) = &mut value {
        root.shift_remove("$schema");
        root.shift_remove("title");
    }
    normalize(&mut value);
    value
}

/// The input schema of a tool whose arguments deserialize into `T`: always an object schema.
///
/// `T` is the argument struct the macros generate, which has no doc comment: a root
/// `description` can only come from a `#[serde(flatten)]` parameter's type, where it describes
/// that parameter rather than the tool, so it is dropped (the tool has its own description).
pub fn input_schema<T: JsonSchema + ?Sized>() -> Value {
    let mut value = generate::<T>(Contract::Deserialize);
    if let Value::Object(root) = &mut value
        && root.get("type").and_then(Value::as_str) == Some("object")
    {
        root.shift_remove("description");
        root.entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
    }
    value
}

/// The output schema of a tool whose structured output serializes from `T`.
pub fn output_schema<T: JsonSchema + ?Sized>() -> Value {
    generate::<T>(Contract::Serialize)
}

/// Whether a schema's root is a JSON object schema (`"type":"object"`), as the handshake
/// revisions require of `inputSchema` and `outputSchema`.
pub fn is_object_schema(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("object")
}

/// Applies the normalisation rules to a schema in place (see the module docs).
pub fn normalize(schema: &mut Value) {
    match schema {
        Value::Bool(true) => *schema = Value::Object(Map::new()),
        Value::Bool(false) => {
            *schema = serde_json::json!({ "not": {} });
        }
        Value::Object(obj) => normalize_object(obj),
        _ => {}
    }
}

fn normalize_object(obj: &mut Map<String, Value>) {
    // One pass over the entries: subschemas first, so the rules below see normalised
    // children; and what those rules need, noted on the way (a lookup per keyword would hash
    // every keyword's name at every node).
    let mut open_closers = false;
    let mut has_type = false;
    let mut odd_required = false;
    let mut odd_format = false;
    let mut string_enum = None;
    let mut string_const = false;
    let mut properties = None;
    let mut required: &[Value] = &[];
    for (key, sub) in obj.iter_mut() {
        match key.as_str() {
            "items" | "not" | "if" | "then" | "else" | "contains" | "propertyNames" => {
                normalize(sub);
            }
            "additionalProperties" | "unevaluatedProperties" | "unevaluatedItems" => match sub {
                Value::Bool(true) => open_closers = true,
                Value::Bool(false) => {}
                _ => normalize(sub),
            },
            "anyOf" | "oneOf" | "allOf" | "prefixItems" => {
                if let Value::Array(items) = sub {
                    items.iter_mut().for_each(normalize);
                }
            }
            "properties" => {
                if let Value::Object(map) = sub {
                    map.values_mut().for_each(normalize);
                    properties = Some(map);
                }
            }
            "patternProperties" | "$defs" | "dependentSchemas" => {
                if let Value::Object(map) = sub {
                    map.values_mut().for_each(normalize);
                }
            }
            "required" => match sub {
                Value::Array(names) => required = names,
                _ => odd_required = true,
            },
            "type" => has_type = true,
            "enum" => {
                string_enum = Some(match sub {
                    Value::Array(values) => {
                        !values.is_empty() && values.iter().all(Value::is_string)
                    }
                    _ => false,
                });
            }
            "const" => string_const = sub.is_string(),
            "format" => {
                odd_format = sub.as_str().is_some_and(|f| !STANDARD_FORMATS.contains(&f));
            }
            _ => {}
        }
    }

    // Optional properties are absence from `required`, not a null union.
    if let Some(props) = properties {
        for (name, prop) in props.iter_mut() {
            if let Value::Object(prop) = prop
                && !required.iter().any(|r| r.as_str() == Some(name))
            {
                strip_null(prop);
            }
        }
    }
    // `additionalProperties: true` (and its kin) says what absence says.
    if open_closers {
        obj.retain(|key, sub| {
            !(matches!(
                key.as_str(),
                "additionalProperties" | "unevaluatedProperties" | "unevaluatedItems"
            ) && *sub == Value::Bool(true))
        });
    }
    if odd_required {
        obj.shift_remove("required");
    }

    // Enums of strings say they are strings.
    if !has_type && string_enum.unwrap_or(string_const) {
        obj.insert("type".into(), Value::String("string".into()));
    }

    if odd_format {
        obj.shift_remove("format");
    }
}

/// Removes `null` from an optional property's schema.
fn strip_null(prop: &mut Map<String, Value>) {
    if prop.get("default") == Some(&Value::Null) {
        prop.shift_remove("default");
    }
    match prop.get_mut("type") {
        Some(Value::Array(types)) => {
            types.retain(|t| t != "null");
            if types.len() == 1 {
                let only = types.remove(0);
                prop.insert("type".into(), only);
            }
        }
        Some(Value::String(t)) if t == "null" => {}
        _ => {}
    }
    if let Some(Value::Array(values)) = prop.get_mut("enum") {
        values.retain(|v| !v.is_null());
        if values.len() == 1
            && prop.contains_key("type")
            && let Some(Value::Array(mut values)) = prop.shift_remove("enum")
        {
            prop.insert("const".into(), values.remove(0));
        }
    }
    let is_null = |v: &Value| v.get("type").and_then(Value::as_str) == Some("null");
    for key in ["anyOf", "oneOf"] {
        let Some(Value::Array(variants)) = prop.get_mut(key) else {
            continue;
        };
        if !variants.iter().any(is_null) {
            continue;
        }
        variants.retain(|v| !is_null(v));
        if variants.len() == 1 {
            let Some(Value::Object(only)) = variants.pop() else {
                continue;
            };
            prop.shift_remove(key);
            for (k, v) in only {
                prop.entry(k).or_insert(v);
            }
        }
    }
}

/// Reports every place where `schema` breaks the normalisation rules (for tests).
pub fn violations(schema: &Value) -> Vec<String> {
    let mut out = Vec::new();
    check(schema, "#", Position::Root, &mut out);
    out
}

/// Where a subschema sits, for the rules that depend on it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Position {
    /// The schema itself.
    Root,
    /// The schema of a property absent from its object's `required`: an `Option`, whose
    /// `null` must have been stripped.
    OptionalProperty,
    /// `additionalProperties` and friends, where `false` is allowed.
    Closing,
    /// Any other subschema.
    Other,
}

fn is_null_schema(v: &Value) -> bool {
    v.get("type").and_then(Value::as_str) == Some("null")
}

fn check(schema: &Value, path: &str, position: Position, out: &mut Vec<String>) {
    let obj = match schema {
        Value::Object(obj) => obj,
        Value::Bool(false) if position == Position::Closing => return,
        other => {
            out.push(format!("{path}: boolean or non-object subschema {other}"));
            return;
        }
    };
    if position == Position::OptionalProperty {
        let null_type = match obj.get("type") {
            Some(Value::String(s)) => s == "null",
            Some(Value::Array(a)) => a.iter().any(|v| v == "null"),
            _ => false,
        };
        if null_type {
            out.push(format!("{path}: optional property with null in `type`"));
        }
        if let Some(Value::Array(values)) = obj.get("enum")
            && values.iter().any(Value::is_null)
        {
            out.push(format!("{path}: optional property with null in `enum`"));
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(variants)) = obj.get(key)
                && variants.iter().any(is_null_schema)
            {
                out.push(format!(
                    "{path}: optional property with a null branch in `{key}`"
                ));
            }
        }
    }
    let is_string = obj.get("type").and_then(Value::as_str) == Some("string");
    if let Some(Value::Array(values)) = obj.get("enum")
        && !values.is_empty()
        && values.iter().all(Value::is_string)
        && !is_string
    {
        out.push(format!("{path}: string enum without \"type\":\"string\""));
    }
    if let Some(Value::String(_)) = obj.get("const")
        && !is_string
    {
        out.push(format!("{path}: string const without \"type\":\"string\""));
    }
    if let Some(r) = obj.get("required")
        && !r.is_array()
    {
        out.push(format!("{path}: `required` is not an array"));
    }
    if let Some(Value::String(f)) = obj.get("format")
        && !STANDARD_FORMATS.contains(&f.as_str())
    {
        out.push(format!("{path}: non-standard format {f:?}"));
    }
    if obj.contains_key("$defs") && position != Position::Root {
        out.push(format!("{path}: nested $defs"));
    }
    for key in [
        "items",
        "not",
        "if",
        "then",
        "else",
        "contains",
        "propertyNames",
    ] {
        if let Some(sub) = obj.get(key) {
            check(sub, &format!("{path}/{key}"), Position::Other, out);
        }
    }
    for key in [
        "additionalProperties",
        "unevaluatedProperties",
        "unevaluatedItems",
    ] {
        if let Some(sub) = obj.get(key) {
            check(sub, &format!("{path}/{key}"), Position::Closing, out);
        }
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(items)) = obj.get(key) {
            for (i, sub) in items.iter().enumerate() {
                check(sub, &format!("{path}/{key}/{i}"), Position::Other, out);
            }
        }
    }
    let required: Vec<&str> = obj
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if let Some(Value::Object(props)) = obj.get("properties") {
        for (k, sub) in props {
            let position = if required.contains(&k.as_str()) {
                Position::Other
            } else {
                Position::OptionalProperty
            };
            check(sub, &format!("{path}/properties/{k}"), position, out);
        }
    }
    for key in ["patternProperties", "$defs", "dependentSchemas"] {
        if let Some(Value::Object(map)) = obj.get(key) {
            for (k, sub) in map {
                check(sub, &format!("{path}/{key}/{k}"), Position::Other, out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(schemars::JsonSchema, serde::Deserialize)]
    #[allow(dead_code)]
    struct Args {
        /// A count.
        n: u32,
        maybe: Option<String>,
        any: serde_json::Value,
        mode: Option<Mode>,
    }

    #[derive(schemars::JsonSchema, serde::Deserialize)]
    #[allow(dead_code)]
    enum Mode {
        Fast,
        Slow,
    }

    #[test]
    fn normalises_a_struct_of_arguments() {
        let s = input_schema::<Args>();
        assert_eq!(violations(&s), Vec::<String>::new(), "{s:#}");
        assert_eq!(
            s,
            json!({
                "type": "object",
                "properties": {
                    "n": {"type": "integer", "minimum": 0, "description": "A count."},
                    "maybe": {"type": "string"},
                    "any": {},
                    "mode": {"type": "string", "enum": ["Fast", "Slow"]}
                },
                "required": ["n", "any"]
            })
        );
    }

    #[test]
    fn objects_and_scalars_are_told_apart() {
        assert!(is_object_schema(&input_schema::<Args>()));
        assert!(!is_object_schema(&output_schema::<i64>()));
        assert!(!is_object_schema(&output_schema::<Vec<String>>()));
    }

    #[test]
    fn boolean_subschemas_are_replaced() {
        let mut s =
            json!({"type": "array", "items": true, "not": false, "additionalProperties": true});
        normalize(&mut s);
        assert_eq!(s, json!({"type": "array", "items": {}, "not": {"not": {}}}));
        let mut s = json!({"type": "object", "additionalProperties": false});
        normalize(&mut s);
        assert_eq!(s, json!({"type": "object", "additionalProperties": false}));
    }

    /// Paging.
    #[derive(schemars::JsonSchema, serde::Deserialize)]
    #[allow(dead_code)]
    struct Paging {
        size: u32,
    }

    #[derive(schemars::JsonSchema, serde::Deserialize)]
    #[allow(dead_code)]
    struct Flattened {
        query: String,
        #[serde(flatten)]
        paging: Paging,
    }

    #[test]
    fn a_flattened_type_does_not_describe_the_arguments() {
        let s = input_schema::<Flattened>();
        assert_eq!(
            s,
            json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "size": {"type": "integer", "minimum": 0}
                },
                "required": ["query", "size"]
            })
        );
    }

    #[test]
    fn removing_a_keyword_keeps_the_order_of_the_others() {
        let mut s = json!({
            "type": "object",
            "properties": {
                "n": {"type": "integer", "format": "uint64", "minimum": 0, "description": "N."}
            },
            "required": ["n"]
        });
        normalize(&mut s);
        let n = s["properties"]["n"].as_object().unwrap();
        assert_eq!(
            n.keys().collect::<Vec<_>>(),
            ["type", "minimum", "description"]
        );
    }

    #[test]
    fn violations_flag_null_only_where_a_property_is_optional() {
        // An output's `Option` field without `skip_serializing_if` is required and may be null.
        let ok = json!({
            "type": "object",
            "properties": {
                "owner": {"type": ["string", "null"]},
                "sparse": {"type": "array", "items": {"type": ["integer", "null"]}}
            },
            "required": ["owner", "sparse"]
        });
        assert_eq!(violations(&ok), Vec::<String>::new());
        let bad = json!({
            "type": "object",
            "properties": {
                "a": {"type": ["string", "null"]},
                "b": {"anyOf": [{"type": "object"}, {"type": "null"}]},
                "c": {"type": "string", "enum": ["x", null]}
            }
        });
        assert_eq!(
            violations(&bad),
            [
                "#/properties/a: optional property with null in `type`",
                "#/properties/b: optional property with a null branch in `anyOf`",
                "#/properties/c: optional property with null in `enum`",
            ]
        );
    }

    #[test]
    fn violations_flag_each_rule() {
        let bad = json!({
            "type": "object",
            "properties": {
                "e": {"enum": ["a", "b"]},
                "c": {"const": "a"},
                "f": {"type": "integer", "format": "uint32"},
                "t": true,
                "n": {"type": "object", "required": null, "$defs": {}}
            },
            "required": ["e", "c", "f", "t", "n"],
            "additionalProperties": false
        });
        assert_eq!(
            violations(&bad),
            [
                "#/properties/e: string enum without \"type\":\"string\"",
                "#/properties/c: string const without \"type\":\"string\"",
                "#/properties/f: non-standard format \"uint32\"",
                "#/properties/t: boolean or non-object subschema true",
                "#/properties/n: `required` is not an array",
                "#/properties/n: nested $defs",
            ]
        );
        assert_eq!(
            violations(&json!(false)),
            ["#: boolean or non-object subschema false"]
        );
    }
}
