//! The values of `Mcp-Param-*` headers (2026-07-28): the arguments a tool's `x-mcp-header`
//! annotations name. Which annotations are valid is the server's rule
//! (`protocol::headers::header_params`), shared so that both sides agree.

use serde_json::Value;

use crate::protocol::headers::HeaderParam;
use crate::protocol::headers::encode_value;

/// The header value of `param` for these arguments: `None` when the value is absent or `null`
/// (the header is then omitted). Strings use the Base64 sentinel when they are not safe as a
/// plain header value; integers are decimal; booleans are `true`/`false`.
pub(crate) fn value(param: &HeaderParam, arguments: &Value) -> Option<String> {
    let mut at = arguments;
    for key in &param.path {
        at = at.as_object()?.get(key)?;
    }
    match at {
        Value::Null => None,
        Value::String(s) => Some(encode_value(s)),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.to_string(),
            (_, Some(u), _) => u.to_string(),
            // A whole float such as 42.0 names the integer 42.
            (_, _, Some(f)) if f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 => {
                format!("{}", f as i64)
            }
            _ => n.to_string(),
        }),
        // Arrays and objects cannot be annotated; a value of the wrong type is sent as JSON
        // text, for the server to refuse.
        other => Some(encode_value(&other.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::headers::header_params;
    use serde_json::json;

    #[test]
    fn values_follow_the_type_conversions() {
        let schema = json!({"type": "object", "properties": {
            "s": {"type": "string", "x-mcp-header": "S"},
            "i": {"type": "integer", "x-mcp-header": "I"},
            "b": {"type": "boolean", "x-mcp-header": "B"},
            "u": {"type": "string", "x-mcp-header": "U"},
            "sp": {"type": "string", "x-mcp-header": "Sp"},
            "empty": {"type": "string", "x-mcp-header": "Empty"},
            "null": {"type": "string", "x-mcp-header": "Null"},
            "absent": {"type": "string", "x-mcp-header": "Absent"},
            "deep": {"type": "object", "properties": {"f": {"type": "integer", "x-mcp-header": "F"}}}
        }});
        let params = header_params(&schema).expect("valid annotations");
        let args = json!({"s": "us-west1", "i": 42, "b": false, "u": "Hello, 世界",
            "sp": " padded ", "empty": "", "null": null, "deep": {"f": 42.0}});
        let got: Vec<(String, Option<String>)> = params
            .iter()
            .map(|p| (p.name.clone(), value(p, &args)))
            .collect();
        let want = [
            ("S", Some("us-west1")),
            ("I", Some("42")),
            ("B", Some("false")),
            ("U", Some("=?base64?SGVsbG8sIOS4lueVjA==?=")),
            ("Sp", Some("=?base64?IHBhZGRlZCA=?=")),
            ("Empty", Some("")),
            ("Null", None),
            ("Absent", None),
            ("F", Some("42")),
        ];
        for (name, v) in want {
            assert!(
                got.contains(&(name.to_owned(), v.map(str::to_owned))),
                "{name}: {got:?}"
            );
        }
    }

    #[test]
    fn the_conformance_suites_invalid_annotations_are_refused() {
        let cases = [
            json!({"value": {"type": "string", "x-mcp-header": ""}}),
            json!({"data": {"type": "object", "x-mcp-header": "Data"}}),
            json!({"items": {"type": "array", "items": {"type": "string"}, "x-mcp-header": "Items"}}),
            json!({"nil": {"type": "null", "x-mcp-header": "Nil"}}),
            json!({"n": {"type": "number", "x-mcp-header": "N"}}),
            json!({"a": {"type": "string", "x-mcp-header": "Region"}, "b": {"type": "string", "x-mcp-header": "Region"}}),
            json!({"a": {"type": "string", "x-mcp-header": "MyField"}, "b": {"type": "string", "x-mcp-header": "myfield"}}),
            json!({"v": {"type": "string", "x-mcp-header": "My Region"}}),
            json!({"v": {"type": "string", "x-mcp-header": "Region:Primary"}}),
            json!({"v": {"type": "string", "x-mcp-header": "Région"}}),
            json!({"v": {"type": "string", "x-mcp-header": "Region\t1"}}),
        ];
        for props in cases {
            let schema = json!({"type": "object", "properties": props});
            assert!(header_params(&schema).is_err(), "{schema}");
        }
    }
}
