//! The checks of OpenAI strict function calling (Structured Outputs' subset of JSON Schema).

use serde_json::{Map, Value};

use super::{
    JSON_SCHEMA_KEYWORDS, MCP_HEADER, OPENAI_DROPPABLE, OPENAI_FORMATS, OPENAI_SUPPORTED, Out, at,
    inferred_type, inside_refused, restructure, used_anchors,
};
use crate::compat::walk::{self, Node, is_array_type, is_object_schema, required_names};

pub(super) fn openai(schema: &Value, out: &mut Out) {
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
