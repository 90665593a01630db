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
    let settings = SchemaSettings::draft2020_12().with(|s| {
        s.inline_subschemas = true;
        s.contract = contract;
    });
    let schema = settings.into_generator().into_root_schema_for::<T>();
    let mut value = schema.to_value();
    if let Value::Object(root) = &mut value {
        root.remove("$schema");
        root.remove("title");
    }
    normalize(&mut value);
    value
}

/// The input schema of a tool whose arguments deserialize into `T`: always an object schema.
pub fn input_schema<T: JsonSchema + ?Sized>() -> Value {
    let mut value = generate::<T>(Contract::Deserialize);
    if let Value::Object(root) = &mut value
        && root.get("type").and_then(Value::as_str) == Some("object")
    {
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
    // Subschemas first, so the rules below see normalised children.
    for key in [
        "items",
        "not",
        "if",
        "then",
        "else",
        "contains",
        "propertyNames",
    ] {
        if let Some(sub) = obj.get_mut(key) {
            normalize(sub);
        }
    }
    for key in [
        "additionalProperties",
        "unevaluatedProperties",
        "unevaluatedItems",
    ] {
        match obj.get(key) {
            Some(Value::Bool(true)) => {
                obj.remove(key);
            }
            Some(Value::Bool(false)) => {}
            Some(_) => {
                if let Some(sub) = obj.get_mut(key) {
                    normalize(sub);
                }
            }
            None => {}
        }
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(items)) = obj.get_mut(key) {
            items.iter_mut().for_each(normalize);
        }
    }
    for key in [
        "properties",
        "patternProperties",
        "$defs",
        "dependentSchemas",
    ] {
        if let Some(Value::Object(map)) = obj.get_mut(key) {
            map.values_mut().for_each(normalize);
        }
    }

    // Optional properties are absence from `required`, not a null union.
    if let Some(Value::Object(props)) = obj.get("properties") {
        let required: Vec<String> = obj
            .get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        let optional: Vec<String> = props
            .keys()
            .filter(|k| !required.contains(k))
            .cloned()
            .collect();
        if let Some(Value::Object(props)) = obj.get_mut("properties") {
            for key in optional {
                if let Some(Value::Object(prop)) = props.get_mut(&key) {
                    strip_null(prop);
                }
            }
        }
    }
    match obj.get("required") {
        Some(Value::Array(_)) | None => {}
        Some(_) => {
            obj.remove("required");
        }
    }

    // Enums of strings say they are strings.
    if !obj.contains_key("type") {
        let all_strings = match (obj.get("enum"), obj.get("const")) {
            (Some(Value::Array(values)), _) => {
                !values.is_empty() && values.iter().all(Value::is_string)
            }
            (None, Some(Value::String(_))) => true,
            _ => false,
        };
        if all_strings {
            obj.insert("type".into(), Value::String("string".into()));
        }
    }

    if let Some(Value::String(format)) = obj.get("format")
        && !STANDARD_FORMATS.contains(&format.as_str())
    {
        obj.remove("format");
    }
}

/// Removes `null` from an optional property's schema.
fn strip_null(prop: &mut Map<String, Value>) {
    if prop.get("default") == Some(&Value::Null) {
        prop.remove("default");
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
            && let Some(Value::Array(mut values)) = prop.remove("enum")
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
            prop.remove(key);
            for (k, v) in only {
                prop.entry(k).or_insert(v);
            }
        }
    }
}

/// Reports every place where `schema` breaks the normalisation rules (for tests).
pub fn violations(schema: &Value) -> Vec<String> {
    let mut out = Vec::new();
    check(schema, "#", true, &mut out);
    out
}

fn check(schema: &Value, path: &str, allow_false: bool, out: &mut Vec<String>) {
    let obj = match schema {
        Value::Object(obj) => obj,
        Value::Bool(false) if allow_false => return,
        other => {
            out.push(format!("{path}: boolean or non-object subschema {other}"));
            return;
        }
    };
    if let Some(t) = obj.get("type") {
        let has_null = match t {
            Value::String(s) => s == "null",
            Value::Array(a) => a.iter().any(|v| v == "null"),
            _ => false,
        };
        if has_null && path.contains("/properties/") && !path.ends_with("/items") {
            out.push(format!("{path}: null in `type`"));
        }
    }
    let is_string = obj.get("type").and_then(Value::as_str) == Some("string");
    if let Some(Value::Array(values)) = obj.get("enum")
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
    if obj.contains_key("$defs") && path != "#" {
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
            check(sub, &format!("{path}/{key}"), false, out);
        }
    }
    for key in [
        "additionalProperties",
        "unevaluatedProperties",
        "unevaluatedItems",
    ] {
        if let Some(sub) = obj.get(key) {
            check(sub, &format!("{path}/{key}"), true, out);
        }
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(items)) = obj.get(key) {
            for (i, sub) in items.iter().enumerate() {
                check(sub, &format!("{path}/{key}/{i}"), false, out);
            }
        }
    }
    for key in [
        "properties",
        "patternProperties",
        "$defs",
        "dependentSchemas",
    ] {
        if let Some(Value::Object(map)) = obj.get(key) {
            for (k, sub) in map {
                check(sub, &format!("{path}/{key}/{k}"), false, out);
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
}
