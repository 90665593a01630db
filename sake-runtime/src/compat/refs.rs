//! `$ref`s inside one schema document: resolving the local ones, telling the recursive ones,
//! and inlining the others.

use serde_json::{Map, Value};

use super::walk::{self, MAX_DEPTH};

/// Where a `$ref` leads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// A subschema of the document, by its RFC 6901 pointer.
    Local(String),
    /// Nothing in the document: a pointer to nothing, an unknown anchor, or another document.
    Unresolved(String),
}

/// Decodes `%XX` escapes of a URI fragment.
fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Resolves a `$ref` value against the document `root`: `#`, `#/json/pointer` or `#anchor`.
pub(crate) fn resolve(root: &Value, reference: &str) -> Target {
    let unresolved = || Target::Unresolved(reference.to_owned());
    let Some(fragment) = reference.strip_prefix('#') else {
        return unresolved();
    };
    let Some(fragment) = percent_decode(fragment) else {
        return unresolved();
    };
    if fragment.is_empty() || fragment.starts_with('/') {
        return if walk::is_schema(root.pointer(&fragment).unwrap_or(&Value::Null)) {
            Target::Local(fragment)
        } else {
            unresolved()
        };
    }
    let mut found = None;
    walk::walk(root, &mut |n| {
        if found.is_none()
            && n.obj()
                .and_then(|o| o.get("$anchor").or_else(|| o.get("$dynamicAnchor")))
                .and_then(Value::as_str)
                == Some(fragment.as_str())
        {
            found = Some(n.pointer.clone());
        }
    });
    found.map_or_else(unresolved, Target::Local)
}

/// Every `$ref` of the document: the pointer of the subschema holding it, and its value.
pub(crate) fn all(root: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    walk::walk(root, &mut |n| {
        if let Some(r) = n.obj().and_then(|o| o.get("$ref")).and_then(Value::as_str) {
            out.push((n.pointer.clone(), r.to_owned()));
        }
    });
    out
}

/// Whether following the `$ref` at `target` can lead back to it: a recursive type, which no
/// amount of inlining removes.
pub(crate) fn is_recursive(root: &Value, target: &str) -> bool {
    /// `done`: subschemas already shown not to lead back, so a definition used many times
    /// is explored once.
    fn reaches(
        root: &Value,
        from: &str,
        goal: &str,
        stack: &mut Vec<String>,
        done: &mut Vec<String>,
    ) -> bool {
        if stack.len() > MAX_DEPTH {
            return true;
        }
        if stack.iter().any(|s| s == from) || done.iter().any(|s| s == from) {
            return false;
        }
        let Some(sub) = root.pointer(from) else {
            return false;
        };
        stack.push(from.to_owned());
        let mut hit = false;
        for (_, r) in all(sub) {
            if let Target::Local(next) = resolve(root, &r) {
                // A target inside (or above) the goal closes the loop.
                hit = next == goal
                    || goal.starts_with(&format!("{next}/"))
                    || next.is_empty()
                    || reaches(root, &next, goal, stack, done);
            }
            if hit {
                break;
            }
        }
        stack.pop();
        if !hit {
            done.push(from.to_owned());
        }
        hit
    }
    if target.is_empty() {
        return true;
    }
    reaches(root, target, target, &mut Vec::new(), &mut Vec::new())
}

/// Whether the `$ref` can be inlined: it resolves in the document and is not recursive.
pub(crate) fn inlinable(root: &Value, reference: &str) -> bool {
    matches!(resolve(root, reference), Target::Local(t) if !is_recursive(root, &t))
}

/// Replaces every inlinable `$ref` by a copy of its target (the `$ref`'s sibling keywords win
/// over the target's), in the definitions too, then drops `$defs`/`definitions` if nothing
/// refers into them any more.
pub(crate) fn inline(root: &mut Value) {
    let original = root.clone();
    let mut budget = MAX_INLINES;
    inline_node(&original, root, 0, &mut budget);
    let left = all(root);
    if let Value::Object(obj) = root {
        for key in ["$defs", "definitions"] {
            let prefix = format!("#/{key}/");
            if !left.iter().any(|(_, r)| r.starts_with(&prefix)) {
                obj.shift_remove(key);
            }
        }
    }
}

/// How many `$ref`s one document may have inlined: a schema whose definitions refer to each
/// other many times over would otherwise grow exponentially. What is left stays a `$ref`.
const MAX_INLINES: usize = 10_000;

fn inline_node(original: &Value, node: &mut Value, depth: usize, budget: &mut usize) {
    if depth > MAX_DEPTH || *budget == 0 {
        return;
    }
    let Value::Object(obj) = node else {
        return;
    };
    if let Some(reference) = obj.get("$ref").and_then(Value::as_str).map(str::to_owned)
        && let Target::Local(target) = resolve(original, &reference)
        && !is_recursive(original, &target)
        && let Some(Value::Object(found)) = original.pointer(&target)
    {
        *budget -= 1;
        let mut merged: Map<String, Value> = found.clone();
        merged.shift_remove("$anchor");
        merged.shift_remove("$dynamicAnchor");
        obj.shift_remove("$ref");
        for (k, v) in std::mem::take(obj) {
            merged.insert(k, v);
        }
        *obj = merged;
        // The copy may hold `$ref`s of its own.
        inline_node(original, node, depth + 1, budget);
        return;
    }
    for (key, value) in obj.iter_mut() {
        let key = key.as_str();
        if walk::ONE.contains(&key) {
            inline_node(original, value, depth + 1, budget);
        } else if walk::MANY.contains(&key)
            && let Value::Array(items) = value
        {
            for sub in items {
                inline_node(original, sub, depth + 1, budget);
            }
        } else if walk::MAP.contains(&key)
            && let Value::Object(map) = value
        {
            for sub in map.values_mut() {
                inline_node(original, sub, depth + 1, budget);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn resolves_pointers_and_anchors() {
        let s = json!({
            "$defs": {"a b": {"type": "string"}, "n": {"$anchor": "named", "type": "integer"}},
            "properties": {"x": {"$ref": "#/$defs/a%20b"}}
        });
        assert_eq!(
            resolve(&s, "#/$defs/a%20b"),
            Target::Local("/$defs/a b".into())
        );
        assert_eq!(resolve(&s, "#named"), Target::Local("/$defs/n".into()));
        assert_eq!(resolve(&s, "#"), Target::Local(String::new()));
        for bad in ["#/$defs/missing", "#nope", "other.json#/x", "#/$defs/%zz"] {
            assert_eq!(resolve(&s, bad), Target::Unresolved(bad.into()), "{bad}");
        }
    }

    #[test]
    fn tells_recursive_refs() {
        let s = json!({
            "$defs": {
                "Tree": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}}},
                "A": {"properties": {"b": {"$ref": "#/$defs/B"}}},
                "B": {"properties": {"a": {"$ref": "#/$defs/A"}}},
                "Leaf": {"type": "string"},
                "UsesLeaf": {"properties": {"l": {"$ref": "#/$defs/Leaf"}}}
            }
        });
        assert!(is_recursive(&s, "/$defs/Tree"));
        assert!(is_recursive(&s, "/$defs/A"));
        assert!(!is_recursive(&s, "/$defs/Leaf"));
        assert!(!is_recursive(&s, "/$defs/UsesLeaf"));
        assert!(is_recursive(&s, ""));
    }

    #[test]
    fn inlines_what_it_can() {
        let mut s = json!({
            "type": "object",
            "properties": {
                "a": {"$ref": "#/$defs/Addr", "description": "Where."},
                "t": {"$ref": "#/$defs/Tree"}
            },
            "$defs": {
                "Addr": {"$anchor": "addr", "type": "object", "properties": {"city": {"type": "string"}}, "description": "An address."},
                "City": {"type": "string"},
                "Tree": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}}}
            }
        });
        inline(&mut s);
        assert_eq!(
            s,
            json!({
                "type": "object",
                "properties": {
                    "a": {"type": "object", "properties": {"city": {"type": "string"}}, "description": "Where."},
                    "t": {"$ref": "#/$defs/Tree"}
                },
                "$defs": {
                    "Addr": {"$anchor": "addr", "type": "object", "properties": {"city": {"type": "string"}}, "description": "An address."},
                    "City": {"type": "string"},
                    "Tree": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}}}
                }
            })
        );
        let mut s =
            json!({"properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"type": "string"}}});
        inline(&mut s);
        assert_eq!(s, json!({"properties": {"a": {"type": "string"}}}));
    }
}
