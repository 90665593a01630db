//! `x-mcp-header`: tool parameters mirrored into `Mcp-Param-{Name}` HTTP headers on 2026-07-28
//! (digest A7.7).
//!
//! A property schema of a tool's `inputSchema` may carry `"x-mcp-header": "<Name>"`. The
//! annotation is valid when the name is a non-empty RFC 9110 token, unique (case-insensitively)
//! within the schema, on a `string`, `integer` or `boolean` property, and the property is
//! reached from the root through `properties` keys only. A client drops a tool with an invalid
//! annotation from its view of `tools/list`; a server can refuse to define one.

use serde_json::{Map, Value};

use crate::transport::http::headers::encode_value;

/// The annotation keyword.
pub const KEYWORD: &str = "x-mcp-header";

/// The JSON type of an argument mirrored in a header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderKind {
    /// `"type": "string"`: sent as is, or with the Base64 sentinel.
    String,
    /// `"type": "integer"`: decimal.
    Integer,
    /// `"type": "boolean"`: `true` or `false`.
    Boolean,
}

/// One annotated parameter: where its value sits in `arguments`, and the header's name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeaderParam {
    /// Property names from the root of `arguments` (more than one for nested objects).
    pub path: Vec<String>,
    /// `<Name>` of `Mcp-Param-<Name>`, as declared.
    pub name: String,
    /// `mcp-param-<name>`, lowercase, for lookups.
    pub header: String,
    /// The property's type.
    pub kind: HeaderKind,
}

impl HeaderParam {
    /// The header's name as declared, `Mcp-Param-<Name>`.
    pub fn display_name(&self) -> String {
        format!("Mcp-Param-{}", self.name)
    }

    /// The header value for these arguments: `None` when the value is absent or `null` (the
    /// header is then omitted). Strings use the Base64 sentinel when they are not safe as a
    /// plain header value; integers are decimal; booleans are `true`/`false`.
    pub fn value(&self, arguments: &Value) -> Option<String> {
        let mut at = arguments;
        for key in &self.path {
            at = at.as_object()?.get(key)?;
        }
        match at {
            Value::Null => None,
            Value::String(s) => Some(encode_value(s)),
            Value::Bool(b) => Some(b.to_string()),
            Value::Number(n) => Some(match (n.as_i64(), n.as_u64(), n.as_f64()) {
                (Some(i), _, _) => i.to_string(),
                (_, Some(u), _) => u.to_string(),
                (_, _, Some(f)) if f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 => {
                    // A whole float such as 42.0 names the integer 42.
                    format!("{}", f as i64)
                }
                _ => n.to_string(),
            }),
            // Arrays and objects are not annotatable; a value of the wrong type is sent as
            // JSON text so that the server can reject the call.
            other => Some(encode_value(&other.to_string())),
        }
    }
}

/// Whether `name` is an RFC 9110 token (`1*tchar`).
pub fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name.bytes().all(|b| {
            b.is_ascii_alphanumeric()
                || matches!(
                    b,
                    b'!' | b'#'
                        | b'$'
                        | b'%'
                        | b'&'
                        | b'\''
                        | b'*'
                        | b'+'
                        | b'-'
                        | b'.'
                        | b'^'
                        | b'_'
                        | b'`'
                        | b'|'
                        | b'~'
                )
        })
}

/// Keywords whose values are data, not schemas: an `x-mcp-header` key inside them means nothing.
const DATA_KEYWORDS: &[&str] = &["const", "default", "enum", "examples"];

/// Finds and checks the `x-mcp-header` annotations of an input schema (digest A7.7): only on
/// string, integer or boolean properties reachable through `properties` alone, token
/// characters, unique regardless of case.
///
/// `Err` names the first rule an annotation breaks: a server refuses to define such a tool, a
/// client leaves it out of its view of `tools/list`.
pub fn header_params(input_schema: &Value) -> Result<Vec<HeaderParam>, String> {
    let mut out = Vec::new();
    walk(input_schema, Some(&mut Vec::new()), &mut out)?;
    let mut seen: Vec<&str> = Vec::with_capacity(out.len());
    for p in &out {
        if seen.contains(&p.header.as_str()) {
            return Err(format!(
                "`{KEYWORD}` {:?} is used twice (header names are case-insensitive)",
                p.name
            ));
        }
        seen.push(&p.header);
    }
    Ok(out)
}

/// Visits a schema. `path` is `Some` while the schema is reached through `properties` only.
fn walk(
    schema: &Value,
    path: Option<&mut Vec<String>>,
    out: &mut Vec<HeaderParam>,
) -> Result<(), String> {
    let Value::Object(map) = schema else {
        if let Value::Array(items) = schema {
            for item in items {
                walk(item, None, out)?;
            }
        }
        return Ok(());
    };
    if let Some(annotation) = map.get(KEYWORD) {
        let Some(path) = path.as_deref() else {
            return Err(format!(
                "`{KEYWORD}` is only allowed on properties reached through `properties` keys"
            ));
        };
        if path.is_empty() {
            return Err(format!("`{KEYWORD}` cannot annotate the root schema"));
        }
        out.push(check_annotation(annotation, map, path)?);
    }
    let mut path = path;
    for (key, value) in map {
        if DATA_KEYWORDS.contains(&key.as_str()) || key == KEYWORD {
            continue;
        }
        if key == "properties"
            && let (Value::Object(props), Some(p)) = (value, path.as_deref_mut())
        {
            for (name, sub) in props {
                p.push(name.clone());
                let r = walk(sub, Some(p), out);
                p.pop();
                r?;
            }
            continue;
        }
        match value {
            Value::Object(sub) if key == "properties" || key == "$defs" || key == "definitions" => {
                for sub in sub.values() {
                    walk(sub, None, out)?;
                }
            }
            other => walk(other, None, out)?,
        }
    }
    Ok(())
}

fn check_annotation(
    annotation: &Value,
    property: &Map<String, Value>,
    path: &[String],
) -> Result<HeaderParam, String> {
    let Value::String(name) = annotation else {
        return Err(format!(
            "`{KEYWORD}` of `{}` is not a string",
            path.join(".")
        ));
    };
    if !is_token(name) {
        return Err(format!("`{KEYWORD}` {name:?} is not a valid header name"));
    }
    let kind = match property.get("type").and_then(Value::as_str) {
        Some("string") => HeaderKind::String,
        Some("integer") => HeaderKind::Integer,
        Some("boolean") => HeaderKind::Boolean,
        _ => {
            return Err(format!(
                "`{KEYWORD}` {name:?} is on `{}`, which is not a string, integer or boolean",
                path.join(".")
            ));
        }
    };
    Ok(HeaderParam {
        path: path.to_vec(),
        name: name.clone(),
        header: format!("mcp-param-{}", name.to_ascii_lowercase()),
        kind,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn names(schema: Value) -> Result<Vec<String>, String> {
        header_params(&schema).map(|v| v.into_iter().map(|p| p.name).collect())
    }

    #[test]
    fn reads_valid_annotations_including_nested_properties() {
        let schema = json!({"type":"object","properties":{
            "region":{"type":"string","x-mcp-header":"Region"},
            "n":{"type":"integer","x-mcp-header":"N"},
            "deep":{"type":"object","properties":{"flag":{"type":"boolean","x-mcp-header":"Flag"}}},
            "plain":{"type":"string","default":{"x-mcp-header":"ignored"}}
        }});
        let headers = header_params(&schema).unwrap();
        let got: Vec<(&str, Vec<&str>, &str, HeaderKind)> = headers
            .iter()
            .map(|p| {
                (
                    p.name.as_str(),
                    p.path.iter().map(String::as_str).collect(),
                    p.header.as_str(),
                    p.kind,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    "Region",
                    vec!["region"],
                    "mcp-param-region",
                    HeaderKind::String
                ),
                ("N", vec!["n"], "mcp-param-n", HeaderKind::Integer),
                (
                    "Flag",
                    vec!["deep", "flag"],
                    "mcp-param-flag",
                    HeaderKind::Boolean
                ),
            ]
        );
    }

    #[test]
    fn rejects_every_invalid_annotation_of_the_conformance_suite() {
        let cases = [
            json!({"value":{"type":"string","x-mcp-header":""}}),
            json!({"data":{"type":"object","x-mcp-header":"Data"}}),
            json!({"items":{"type":"array","items":{"type":"string"},"x-mcp-header":"Items"}}),
            json!({"nil":{"type":"null","x-mcp-header":"Nil"}}),
            json!({"n":{"type":"number","x-mcp-header":"N"}}),
            json!({"a":{"type":"string","x-mcp-header":"Region"},"b":{"type":"string","x-mcp-header":"Region"}}),
            json!({"a":{"type":"string","x-mcp-header":"MyField"},"b":{"type":"string","x-mcp-header":"myfield"}}),
            json!({"v":{"type":"string","x-mcp-header":"My Region"}}),
            json!({"v":{"type":"string","x-mcp-header":"Region:Primary"}}),
            json!({"v":{"type":"string","x-mcp-header":"Région"}}),
            json!({"v":{"type":"string","x-mcp-header":"Region\t1"}}),
            json!({"v":{"type":"string","x-mcp-header":7}}),
        ];
        for props in cases {
            let schema = json!({"type":"object","properties":props});
            assert!(names(schema.clone()).is_err(), "{schema}");
        }
        // Not reached through `properties` only.
        let schema = json!({"type":"object","properties":{"xs":{"type":"array",
            "items":{"type":"string","x-mcp-header":"X"}}}});
        assert!(names(schema).is_err());
        let schema = json!({"type":"object","anyOf":[{"properties":{"a":{"type":"string","x-mcp-header":"A"}}}]});
        assert!(names(schema).is_err());
    }

    #[test]
    fn values_follow_the_type_conversions() {
        let p = |name: &str| HeaderParam {
            name: name.into(),
            path: vec![name.into()],
            header: format!("mcp-param-{name}"),
            kind: HeaderKind::String,
        };
        let args = json!({"s":"us-west1","i":42,"f":42.0,"b":false,"u":"Hello, 世界",
            "sp":" padded ","empty":"","null":null});
        assert_eq!(p("s").value(&args).as_deref(), Some("us-west1"));
        assert_eq!(p("i").value(&args).as_deref(), Some("42"));
        assert_eq!(p("f").value(&args).as_deref(), Some("42"));
        assert_eq!(p("b").value(&args).as_deref(), Some("false"));
        assert_eq!(
            p("u").value(&args).as_deref(),
            Some("=?base64?SGVsbG8sIOS4lueVjA==?=")
        );
        assert_eq!(
            p("sp").value(&args).as_deref(),
            Some("=?base64?IHBhZGRlZCA=?=")
        );
        assert_eq!(p("empty").value(&args).as_deref(), Some(""));
        assert_eq!(p("null").value(&args), None);
        assert_eq!(p("absent").value(&args), None);
    }
}
