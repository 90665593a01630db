//! The automatic fixes of each profile: what `normalize` does to a copy of a schema. Each fix
//! mirrors a finding that `check.rs` marks automatic; the tests check that a normalised schema
//! has no automatic finding left.

use serde_json::{Map, Value, json};

use super::check::{
    GEMINI_DROPPABLE, GEMINI_FIELDS, JSON_SCHEMA_KEYWORDS, MCP_HEADER, OPENAI_DROPPABLE,
    OPENAI_FORMATS, OPENAI_SUPPORTED, dialect_of, gemini_format_ok, inferred_type, single_type,
    used_anchors,
};
use super::meta::Dialect;
use super::refs;
use super::walk::{self, escape, is_object_schema, required_names, rewrite};
use super::{Part, Profile};

pub(crate) fn apply(profile: Profile, _part: Part, schema: &mut Value) {
    match profile {
        Profile::JsonSchema2020 => json_schema(schema),
        Profile::OpenAiStrict => openai(schema),
        Profile::Gemini => gemini(schema),
        Profile::VsCode => vscode(schema),
    }
}

/// The pointers of the subschemas (objects) for which `pick` holds, deepest last.
fn pointers(
    schema: &Value,
    pick: &dyn Fn(&walk::Node<'_>, &Map<String, Value>) -> bool,
) -> Vec<String> {
    let mut out = Vec::new();
    walk::walk(schema, &mut |node| {
        if let Some(obj) = node.obj()
            && pick(node, obj)
        {
            out.push(node.pointer.clone());
        }
    });
    out
}

/// Drops the keywords `drop` picks.
fn drop_keys(obj: &mut Map<String, Value>, drop: &dyn Fn(&str, &Value) -> bool) {
    let doomed: Vec<String> = obj
        .iter()
        .filter(|(k, v)| drop(k, v))
        .map(|(k, _)| k.clone())
        .collect();
    for k in doomed {
        obj.shift_remove(&k);
    }
}

/// Adds `"type"` to a subschema with none whose `enum`/`const` values share a JSON type.
fn infer_type(obj: &mut Map<String, Value>) {
    if obj.contains_key("type")
        || obj.contains_key("anyOf")
        || obj.contains_key("oneOf")
        || obj.contains_key("$ref")
    {
        return;
    }
    if let Some(t) = inferred_type(obj) {
        obj.insert("type".into(), Value::String(t.into()));
    }
}

/// `oneOf` becomes `anyOf` (unless both are present).
fn one_of_to_any_of(obj: &mut Map<String, Value>) {
    if !obj.contains_key("anyOf")
        && let Some(v) = obj.shift_remove("oneOf")
    {
        obj.insert("anyOf".into(), v);
    }
}

// ---------------------------------------------------------------------------------------------
// JSON Schema 2020-12

fn json_schema(schema: &mut Value) {
    match schema.get("$schema").and_then(Value::as_str) {
        None => {}
        Some(uri) if dialect_of(uri) == Some(Dialect::Draft2020) => {}
        Some(_) => return,
    }
    // `definitions` → `$defs`, deepest first so the outer pointers stay valid.
    let nodes = pointers(schema, &|_, obj| {
        obj.get("definitions").is_some_and(Value::is_object)
    });
    let mut moved: Vec<(String, String)> = Vec::new();
    for pointer in nodes.iter().rev() {
        let Some(Value::Object(obj)) = schema.pointer_mut(pointer) else {
            continue;
        };
        let Some(Value::Object(defs)) = obj.shift_remove("definitions") else {
            continue;
        };
        let mut left = Map::new();
        let target = obj
            .entry("$defs")
            .or_insert_with(|| Value::Object(Map::new()));
        for (name, def) in defs {
            match target {
                Value::Object(t) if !t.contains_key(&name) => {
                    moved.push((
                        format!("#{pointer}/definitions/{}", escape(&name)),
                        format!("#{pointer}/$defs/{}", escape(&name)),
                    ));
                    t.insert(name, def);
                }
                _ => {
                    left.insert(name, def);
                }
            }
        }
        if !left.is_empty() {
            obj.insert("definitions".into(), Value::Object(left));
        }
    }
    rewrite(schema, &mut |obj, _| {
        if let Some(Value::String(r)) = obj.get_mut("$ref") {
            for (old, new) in &moved {
                if let Some(rest) = r.strip_prefix(old.as_str())
                    && (rest.is_empty() || rest.starts_with('/'))
                {
                    *r = format!("{new}{rest}");
                }
            }
        }
        // Tuples: `items` [..] → `prefixItems`, `additionalItems` → `items`.
        if obj.get("items").is_some_and(Value::is_array) && !obj.contains_key("prefixItems") {
            if let Some(items) = obj.shift_remove("items") {
                obj.insert("prefixItems".into(), items);
            }
            if let Some(extra) = obj.shift_remove("additionalItems") {
                obj.insert("items".into(), extra);
            }
        }
        obj.shift_remove("additionalItems");
        if let Some(Value::Object(deps)) = obj.shift_remove("dependencies") {
            for (name, dep) in deps {
                let key = if dep.is_array() {
                    "dependentRequired"
                } else {
                    "dependentSchemas"
                };
                if let Value::Object(m) =
                    obj.entry(key).or_insert_with(|| Value::Object(Map::new()))
                {
                    m.entry(name).or_insert(dep);
                }
            }
        }
        for (exclusive, bound) in [
            ("exclusiveMinimum", "minimum"),
            ("exclusiveMaximum", "maximum"),
        ] {
            if let Some(Value::Bool(b)) = obj.get(exclusive) {
                let on = *b;
                obj.shift_remove(exclusive);
                if on && let Some(limit) = obj.shift_remove(bound) {
                    obj.insert(exclusive.into(), limit);
                }
            }
        }
    });
}

// ---------------------------------------------------------------------------------------------
// OpenAI strict function calling

/// Makes an optional property accept `null`: `type: [T, "null"]` (and `null` in its `enum`),
/// or an `anyOf` with a `null` branch.
fn nullable(prop: &mut Value) {
    let Value::Object(obj) = prop else {
        return;
    };
    if let Some(Value::Array(branches)) = obj.get_mut("anyOf") {
        if !branches
            .iter()
            .any(|b| b.get("type") == Some(&json!("null")))
        {
            branches.push(json!({"type": "null"}));
        }
        return;
    }
    let typed = match obj.get_mut("type") {
        Some(Value::String(t)) if t != "null" => {
            let t = std::mem::take(t);
            obj.insert("type".into(), json!([t, "null"]));
            true
        }
        Some(Value::Array(types)) => {
            if !types.iter().any(|t| t == "null") {
                types.push(json!("null"));
            }
            true
        }
        _ => false,
    };
    if typed {
        if let Some(c) = obj.shift_remove("const") {
            obj.insert("enum".into(), json!([c]));
        }
        if let Some(Value::Array(values)) = obj.get_mut("enum")
            && !values.iter().any(Value::is_null)
        {
            values.push(Value::Null);
        }
        return;
    }
    let mut inner = std::mem::take(obj);
    for key in ["description", "title"] {
        if let Some(v) = inner.shift_remove(key) {
            obj.insert(key.into(), v);
        }
    }
    obj.insert(
        "anyOf".into(),
        json!([Value::Object(inner), {"type": "null"}]),
    );
}

fn openai(schema: &mut Value) {
    let anchors = used_anchors(schema);
    rewrite(schema, &mut |obj, _| {
        one_of_to_any_of(obj);
        if let Some(Value::String(f)) = obj.get("format")
            && !OPENAI_FORMATS.contains(&f.as_str())
        {
            obj.shift_remove("format");
        }
        drop_keys(obj, &|k, v| {
            if k == MCP_HEADER || OPENAI_SUPPORTED.contains(&k) {
                return false;
            }
            if k == "$anchor" || k == "$dynamicAnchor" {
                return !v.as_str().is_some_and(|a| anchors.iter().any(|u| u == a));
            }
            OPENAI_DROPPABLE.contains(&k) || !JSON_SCHEMA_KEYWORDS.contains(&k)
        });
        infer_type(obj);
    });
    rewrite(schema, &mut |obj, _| {
        let required: Vec<String> = required_names(obj).into_iter().map(str::to_owned).collect();
        let mut added = Vec::new();
        if let Some(Value::Object(props)) = obj.get_mut("properties") {
            for (name, prop) in props.iter_mut() {
                if required.contains(name) {
                    continue;
                }
                if prop.get("default").is_none() && prop.get(MCP_HEADER).is_none() {
                    nullable(prop);
                }
                added.push(Value::String(name.clone()));
            }
        }
        if added.is_empty() {
            return;
        }
        match obj.get_mut("required") {
            Some(Value::Array(r)) => r.extend(added),
            _ => {
                obj.insert("required".into(), Value::Array(added));
            }
        }
    });
    rewrite(schema, &mut |obj, _| {
        obj.shift_remove("default");
        if is_object_schema(obj)
            && obj.get("properties").is_some_and(Value::is_object)
            && matches!(
                obj.get("additionalProperties"),
                None | Some(Value::Bool(true))
            )
        {
            obj.insert("additionalProperties".into(), Value::Bool(false));
        }
    });
}

// ---------------------------------------------------------------------------------------------
// Gemini function declarations

/// The keywords that belong to one JSON type, moved into that type's branch when a list of
/// types becomes an `anyOf`.
fn keywords_of(ty: &str) -> &'static [&'static str] {
    match ty {
        "array" => &[
            "items",
            "minItems",
            "maxItems",
            "prefixItems",
            "uniqueItems",
        ],
        "object" => &[
            "properties",
            "required",
            "minProperties",
            "maxProperties",
            "propertyOrdering",
        ],
        "string" => &["minLength", "maxLength", "pattern", "format"],
        "number" | "integer" => &[
            "minimum",
            "maximum",
            "exclusiveMinimum",
            "exclusiveMaximum",
            "multipleOf",
        ],
        _ => &[],
    }
}

/// `type: [..]` becomes one type (and `nullable`), or an `anyOf` of one type each; `true` when
/// it made new `anyOf` branches.
fn split_types(obj: &mut Map<String, Value>) -> bool {
    let Some(Value::Array(types)) = obj.get("type") else {
        return false;
    };
    let names: Vec<String> = types
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    let null = names.iter().any(|t| t == "null");
    let others: Vec<String> = names.into_iter().filter(|t| t != "null").collect();
    let branched = match others.as_slice() {
        [] => return false,
        [one] => {
            obj.insert("type".into(), Value::String(one.clone()));
            false
        }
        _ if obj.contains_key("anyOf") || obj.contains_key("oneOf") => return false,
        many => {
            obj.shift_remove("type");
            let branches: Vec<Value> = many
                .iter()
                .map(|t| {
                    let mut branch = Map::new();
                    branch.insert("type".into(), Value::String(t.clone()));
                    for k in keywords_of(t) {
                        if let Some(v) = obj.get(*k) {
                            branch.insert((*k).into(), v.clone());
                        }
                    }
                    Value::Object(branch)
                })
                .collect();
            for t in many {
                for k in keywords_of(t) {
                    obj.shift_remove(*k);
                }
            }
            obj.insert("anyOf".into(), Value::Array(branches));
            true
        }
    };
    if null {
        obj.insert("nullable".into(), Value::Bool(true));
    }
    branched
}

fn gemini(schema: &mut Value) {
    refs::inline(schema);
    // Anchors still used by the `$ref`s inlining left (recursive ones).
    let kept = used_anchors(schema);
    rewrite(schema, &mut |obj, _| gemini_node(obj, &kept));
}

fn gemini_node(obj: &mut Map<String, Value>, kept: &[String]) {
    if split_types(obj)
        && let Some(Value::Array(branches)) = obj.get_mut("anyOf")
    {
        for branch in branches.iter_mut().filter_map(Value::as_object_mut) {
            gemini_node(branch, kept);
        }
    }
    one_of_to_any_of(obj);
    if let Some(Value::String(c)) = obj.get("const") {
        let c = c.clone();
        obj.shift_remove("const");
        obj.entry("type").or_insert_with(|| json!("string"));
        obj.insert("enum".into(), json!([c]));
    }
    infer_type(obj);
    if let Some(Value::Array(values)) = obj.get_mut("enum")
        && values.iter().any(Value::is_null)
        && values.iter().any(Value::is_string)
    {
        values.retain(|v| !v.is_null());
        obj.insert("nullable".into(), Value::Bool(true));
    }
    let integer = single_type(obj) == Some("integer");
    for (exclusive, bound, step) in [
        ("exclusiveMinimum", "minimum", 1.0),
        ("exclusiveMaximum", "maximum", -1.0),
    ] {
        let Some(value) = obj.shift_remove(exclusive) else {
            continue;
        };
        if let Some(n) = value.as_f64().filter(|n| integer && n.fract() == 0.0) {
            let limit = n + step;
            let tighter = match obj.get(bound).and_then(Value::as_f64) {
                Some(existing) if step > 0.0 => limit > existing,
                Some(existing) => limit < existing,
                None => true,
            };
            if tighter {
                obj.insert(bound.into(), integral(limit));
            }
        }
    }
    if let Some(Value::String(f)) = obj.get("format")
        && !gemini_format_ok(single_type(obj), f)
    {
        obj.shift_remove("format");
    }
    drop_keys(obj, &|k, v| {
        if k == MCP_HEADER || GEMINI_FIELDS.contains(&k) {
            return false;
        }
        match k {
            "additionalProperties" | "unevaluatedProperties" => v.is_boolean(),
            "$anchor" | "$dynamicAnchor" => {
                !v.as_str().is_some_and(|a| kept.iter().any(|u| u == a))
            }
            _ => GEMINI_DROPPABLE.contains(&k) || !JSON_SCHEMA_KEYWORDS.contains(&k),
        }
    });
}

/// An integral bound as a JSON integer when it fits one exactly.
fn integral(n: f64) -> Value {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53: every integer below is an exact `f64`
    if n.abs() < EXACT {
        // In range and integral (the caller checked `fract() == 0`): the cast is exact.
        #[allow(clippy::cast_possible_truncation)]
        let i = n as i64;
        json!(i)
    } else {
        json!(n)
    }
}

// ---------------------------------------------------------------------------------------------
// VS Code

fn vscode(schema: &mut Value) {
    if let Value::Object(root) = schema
        && root
            .get("$schema")
            .and_then(Value::as_str)
            .and_then(dialect_of)
            == Some(Dialect::Draft2020)
    {
        root.shift_remove("$schema");
    }
    let visible = |node: &walk::Node<'_>| {
        node.keywords
            .iter()
            .all(|k| super::check::COPILOT_WALK.contains(k))
    };
    let arrays = pointers(schema, &|node, obj| {
        visible(node)
            && obj.get("type").and_then(Value::as_str) == Some("array")
            && matches!(
                obj.get("items"),
                None | Some(Value::Bool(false) | Value::Null)
            )
    });
    for pointer in arrays {
        if let Some(Value::Object(obj)) = schema.pointer_mut(&pointer) {
            let bounded = match (
                obj.get("prefixItems"),
                obj.get("maxItems").and_then(Value::as_u64),
            ) {
                (Some(Value::Array(prefix)), Some(max)) => {
                    u64::try_from(prefix.len()).is_ok_and(|len| max <= len)
                }
                _ => false,
            };
            let items = match obj.get("prefixItems") {
                Some(Value::Array(prefix)) if bounded && !prefix.is_empty() => {
                    json!({ "anyOf": prefix })
                }
                _ => json!({}),
            };
            obj.insert("items".into(), items);
        }
    }
    let objects = pointers(schema, &|node, obj| {
        visible(node)
            && obj.get("type").and_then(Value::as_str) == Some("object")
            && obj.get("properties").is_some_and(Value::is_object)
    });
    for pointer in objects {
        if let Some(Value::Object(obj)) = schema.pointer_mut(&pointer) {
            let declared: Vec<String> = obj
                .get("properties")
                .and_then(Value::as_object)
                .map(|p| p.keys().cloned().collect())
                .unwrap_or_default();
            if required_names(obj)
                .iter()
                .any(|n| !declared.iter().any(|d| d == n))
                && let Some(Value::Array(r)) = obj.get_mut("required")
            {
                r.retain(|n| n.as_str().is_none_or(|n| declared.iter().any(|d| d == n)));
            }
        }
    }
}
