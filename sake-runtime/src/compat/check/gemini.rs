//! The checks of Gemini function declarations (a subset of the OpenAPI 3.0 Schema object).

use serde_json::{Map, Value};

use super::{
    GEMINI_DROPPABLE, GEMINI_FIELDS, JSON_SCHEMA_KEYWORDS, MCP_HEADER, Out, at, gemini_format_ok,
    inferred_type, inside_refused, restructure, single_type,
};
use crate::compat::refs::{self, Target};
use crate::compat::walk::{self, Node, is_array_type};

pub(super) fn gemini(schema: &Value, out: &mut Out) {
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
