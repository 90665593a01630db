//! Walking a schema: every subschema, with its JSON pointer (RFC 6901) and where it sits.

use serde_json::{Map, Value};

/// Keywords whose value is one subschema (JSON Schema 2020-12 and draft-07).
pub(crate) const ONE: &[&str] = &[
    "items",
    "additionalItems",
    "contains",
    "additionalProperties",
    "propertyNames",
    "if",
    "then",
    "else",
    "not",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
];

/// Keywords whose value is an array of subschemas (`items` too, in its draft-07 tuple form).
pub(crate) const MANY: &[&str] = &["prefixItems", "allOf", "anyOf", "oneOf", "items"];

/// Keywords whose value maps names to subschemas (`dependencies` also maps names to arrays of
/// property names, which are not schemas).
pub(crate) const MAP: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependencies",
];

/// How deep a walk goes: schemas nested deeper are not looked at (a schema built in code can be
/// nested without limit; the walk must not overflow the stack).
pub(crate) const MAX_DEPTH: usize = 200;

/// One subschema and its place in the document.
pub(crate) struct Node<'a> {
    /// The subschema: an object, or a boolean.
    pub schema: &'a Value,
    /// RFC 6901 pointer from the document's root (`""` for the root).
    pub pointer: String,
    /// The keyword whose value holds this subschema (`None` at the root).
    pub keyword: Option<&'a str>,
    /// The property names from the root to here (`properties` hops only), for messages.
    pub field: Vec<&'a str>,
    /// The keywords from the root to here (`properties`, `items`, `anyOf`…).
    pub keywords: Vec<&'a str>,
    /// How many object schemas enclose this one, itself included (the root object is 1).
    pub objects: usize,
    /// Whether a `$defs`/`definitions` entry encloses this subschema.
    pub in_defs: bool,
    /// The name of the innermost `$defs`/`definitions` entry enclosing this subschema.
    pub def: Option<&'a str>,
}

impl Node<'_> {
    /// The subschema as an object (`None` for a boolean subschema).
    pub fn obj(&self) -> Option<&Map<String, Value>> {
        self.schema.as_object()
    }

    /// Whether this is the document's root.
    pub fn is_root(&self) -> bool {
        self.keyword.is_none()
    }

    /// What this subschema is, for messages: `` field `a.b` ``, `` definition `Name` ``, or
    /// `the schema's root`.
    pub fn subject(&self) -> String {
        match (self.field.is_empty(), self.def) {
            (false, _) => format!("field `{}`", self.field.join(".")),
            (true, Some(def)) => format!("definition `{def}`"),
            (true, None) => "the schema's root".to_owned(),
        }
    }
}

/// Escapes one reference token (RFC 6901 §3: `~` is `~0`, `/` is `~1`).
pub(crate) fn escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// Appends tokens to a pointer.
pub(crate) fn join(pointer: &str, tokens: &[&str]) -> String {
    let mut out = pointer.to_owned();
    for t in tokens {
        out.push('/');
        out.push_str(&escape(t));
    }
    out
}

/// Whether a subschema describes objects: `type` names `object`, or it has `properties`.
pub(crate) fn is_object_schema(obj: &Map<String, Value>) -> bool {
    match obj.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(types)) => types.iter().any(|t| t == "object"),
        _ => obj.contains_key("properties"),
    }
}

/// Whether `type` names `array`.
pub(crate) fn is_array_type(obj: &Map<String, Value>) -> bool {
    match obj.get("type") {
        Some(Value::String(t)) => t == "array",
        Some(Value::Array(types)) => types.iter().any(|t| t == "array"),
        _ => false,
    }
}

/// The names `required` lists (strings only).
pub(crate) fn required_names(obj: &Map<String, Value>) -> Vec<&str> {
    obj.get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// Visits every subschema of `root`, parents before children, in document order.
pub(crate) fn walk<'a>(root: &'a Value, visit: &mut dyn FnMut(&Node<'a>)) {
    let node = Node {
        schema: root,
        pointer: String::new(),
        keyword: None,
        field: Vec::new(),
        keywords: Vec::new(),
        objects: usize::from(root.as_object().is_some_and(is_object_schema)),
        in_defs: false,
        def: None,
    };
    visit_node(&node, visit, 0);
}

fn visit_node<'a>(node: &Node<'a>, visit: &mut dyn FnMut(&Node<'a>), depth: usize) {
    visit(node);
    if depth >= MAX_DEPTH {
        return;
    }
    let Some(obj) = node.schema.as_object() else {
        return;
    };
    let child = |schema: &'a Value, keyword: &'a str, tokens: &[&str], name: Option<&'a str>| {
        let mut field = node.field.clone();
        let is_def = keyword == "$defs" || keyword == "definitions";
        if is_def {
            field.clear();
        }
        if let Some(p) = name.filter(|_| keyword == "properties") {
            field.push(p);
        }
        let objects = node.objects + usize::from(schema.as_object().is_some_and(is_object_schema));
        let mut keywords = node.keywords.clone();
        keywords.push(keyword);
        Node {
            schema,
            pointer: join(&node.pointer, tokens),
            keyword: Some(keyword),
            field,
            keywords,
            objects,
            in_defs: node.in_defs || is_def,
            def: if is_def { name } else { node.def },
        }
    };
    for (key, value) in obj {
        let key = key.as_str();
        if ONE.contains(&key) && is_schema(value) {
            visit_node(&child(value, key, &[key], None), visit, depth + 1);
        } else if MANY.contains(&key)
            && let Value::Array(items) = value
        {
            for (i, sub) in items.iter().enumerate().filter(|(_, s)| is_schema(s)) {
                let index = i.to_string();
                visit_node(&child(sub, key, &[key, &index], None), visit, depth + 1);
            }
        } else if MAP.contains(&key)
            && let Value::Object(map) = value
        {
            for (name, sub) in map.iter().filter(|(_, s)| is_schema(s)) {
                visit_node(&child(sub, key, &[key, name], Some(name)), visit, depth + 1);
            }
        }
    }
}

/// Whether a value can be a subschema (an object or a boolean).
pub(crate) fn is_schema(value: &Value) -> bool {
    value.is_object() || value.is_boolean()
}

/// Applies `f` to every subschema object of `schema`, children first (so `f` sees subschemas
/// already rewritten). `f` gets the node and whether it is the document's root.
pub(crate) fn rewrite(schema: &mut Value, f: &mut dyn FnMut(&mut Map<String, Value>, bool)) {
    rewrite_node(schema, f, true, 0);
}

fn rewrite_node(
    schema: &mut Value,
    f: &mut dyn FnMut(&mut Map<String, Value>, bool),
    root: bool,
    depth: usize,
) {
    let Value::Object(obj) = schema else {
        return;
    };
    if depth < MAX_DEPTH {
        for (key, value) in obj.iter_mut() {
            let key = key.as_str();
            if ONE.contains(&key) && value.is_object() {
                rewrite_node(value, f, false, depth + 1);
            } else if MANY.contains(&key)
                && let Value::Array(items) = value
            {
                for sub in items {
                    rewrite_node(sub, f, false, depth + 1);
                }
            } else if MAP.contains(&key)
                && let Value::Object(map) = value
            {
                for sub in map.values_mut() {
                    rewrite_node(sub, f, false, depth + 1);
                }
            }
        }
    }
    f(obj, root);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pointers_escape_and_fields_follow_properties() {
        let s = json!({
            "type": "object",
            "properties": {
                "a/b": {"type": "object", "properties": {"c~d": {"type": "string"}}, "required": ["c~d"]},
                "list": {"type": "array", "items": {"anyOf": [{"type": "string"}, true]}}
            },
            "$defs": {"X": {"type": "integer"}}
        });
        let mut seen = Vec::new();
        walk(&s, &mut |n| {
            seen.push((n.pointer.clone(), n.field.join("."), n.objects, n.in_defs));
        });
        assert_eq!(
            seen,
            [
                (String::new(), String::new(), 1, false),
                ("/properties/a~1b".into(), "a/b".into(), 2, false),
                (
                    "/properties/a~1b/properties/c~0d".into(),
                    "a/b.c~d".into(),
                    2,
                    false
                ),
                ("/properties/list".into(), "list".into(), 1, false),
                ("/properties/list/items".into(), "list".into(), 1, false),
                (
                    "/properties/list/items/anyOf/0".into(),
                    "list".into(),
                    1,
                    false
                ),
                (
                    "/properties/list/items/anyOf/1".into(),
                    "list".into(),
                    1,
                    false
                ),
                ("/$defs/X".into(), String::new(), 1, true),
            ]
        );
    }

    #[test]
    fn a_deep_schema_does_not_overflow() {
        let mut s = json!({"type": "string"});
        for _ in 0..1_000 {
            s = json!({ "items": s });
        }
        let mut count = 0;
        walk(&s, &mut |_| count += 1);
        assert_eq!(count, MAX_DEPTH + 1);
        rewrite(&mut s, &mut |_, _| {});
        // Dropping a deep `Value` recurses too; unwind it by hand.
        let mut cur = s;
        while let Value::Object(mut o) = cur {
            cur = o.remove("items").unwrap_or(Value::Null);
        }
    }
}
