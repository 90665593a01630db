//! The checks of VS Code (Copilot Chat): draft-07 validation of tool schemas, and its own walk.

use serde_json::Value;

use super::{Out, at, dialect_of};
use crate::compat::meta::{self, Dialect};
use crate::compat::walk::{self, Node, required_names};

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

pub(super) fn vscode(schema: &Value, out: &mut Out) {
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
