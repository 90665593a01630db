//! The checks of JSON Schema 2020-12: what every reader of a tool's schema may assume.

use serde_json::{Map, Value};

use super::{Out, at, dialect_of};
use crate::compat::meta::{self, Dialect};
use crate::compat::walk::{self, Node};

pub(super) fn json_schema(schema: &Value, out: &mut Out) {
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
