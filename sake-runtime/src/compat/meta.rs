//! The shape each keyword's value must have, per the meta-schemas of JSON Schema 2020-12
//! (<https://json-schema.org/draft/2020-12/schema> and its vocabularies) and draft-07
//! (<http://json-schema.org/draft-07/schema>): a hand-written check of what validating a schema
//! against its meta-schema checks, without a validator in the runtime.
//!
//! `format` is an annotation in both meta-schemas' use here (2020-12 format-annotation; the
//! draft-07 validator of VS Code registers `uri` and `regex` loosely), so `uri`, `uri-reference`
//! and `regex` values are only checked to be strings. Patterns the meta-schemas assert (`$id`
//! without a non-empty fragment, `$anchor` names) are checked.

use serde_json::{Map, Value};

use super::walk::{escape, is_schema};

/// Which meta-schema.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// JSON Schema 2020-12 (the MCP default dialect).
    Draft2020,
    /// JSON Schema draft-07 (what VS Code validates tool schemas against).
    Draft07,
}

/// What a keyword's value must be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    Any,
    Schema,
    /// A non-empty array of schemas.
    SchemaArray,
    /// An object whose values are schemas.
    SchemaMap,
    /// draft-07 `items`: a schema or a non-empty array of schemas.
    SchemaOrArray,
    /// `dependencies`: an object whose values are schemas or arrays of unique strings.
    Dependencies,
    String,
    /// `$id` (2020-12): a string with no non-empty fragment.
    Id,
    /// `$anchor`, `$dynamicAnchor`: `^[A-Za-z_][-A-Za-z0-9._]*$`.
    Anchor,
    /// `$vocabulary`: an object of booleans.
    Vocabulary,
    Number,
    /// `multipleOf`: a number greater than 0.
    Positive,
    NonNegativeInteger,
    Bool,
    Array,
    /// An array of unique strings.
    StringArray,
    /// An object whose values are arrays of unique strings.
    StringArrayMap,
    /// `type`: a simple type name, or a non-empty array of unique ones.
    Type,
}

const SIMPLE_TYPES: &[&str] = &[
    "array", "boolean", "integer", "null", "number", "object", "string",
];

fn shape(dialect: Dialect, keyword: &str) -> Option<Shape> {
    use Shape::*;
    let common = match keyword {
        "$schema" | "$ref" | "$comment" | "title" | "description" | "format" | "pattern"
        | "contentEncoding" | "contentMediaType" => String,
        "properties" | "patternProperties" | "definitions" => SchemaMap,
        "allOf" | "anyOf" | "oneOf" => SchemaArray,
        "additionalItems"
        | "contains"
        | "additionalProperties"
        | "propertyNames"
        | "if"
        | "then"
        | "else"
        | "not" => Schema,
        "dependencies" => Dependencies,
        "type" => Type,
        "enum" | "examples" => Array,
        "const" | "default" => Any,
        "multipleOf" => Positive,
        "maximum" | "exclusiveMaximum" | "minimum" | "exclusiveMinimum" => Number,
        "maxLength" | "minLength" | "maxItems" | "minItems" | "maxProperties" | "minProperties" => {
            NonNegativeInteger
        }
        "uniqueItems" | "readOnly" | "writeOnly" => Bool,
        "required" => StringArray,
        _ => Any,
    };
    let specific = match (dialect, keyword) {
        (Dialect::Draft07, "items") => SchemaOrArray,
        (Dialect::Draft07, "$id") => String,
        (Dialect::Draft2020, "items" | "unevaluatedItems" | "unevaluatedProperties") => Schema,
        (Dialect::Draft2020, "contentSchema") => Schema,
        (Dialect::Draft2020, "$id") => Id,
        (Dialect::Draft2020, "$dynamicRef" | "$recursiveRef") => String,
        (Dialect::Draft2020, "$anchor" | "$dynamicAnchor" | "$recursiveAnchor") => Anchor,
        (Dialect::Draft2020, "$vocabulary") => Vocabulary,
        (Dialect::Draft2020, "$defs" | "dependentSchemas") => SchemaMap,
        (Dialect::Draft2020, "prefixItems") => SchemaArray,
        (Dialect::Draft2020, "maxContains" | "minContains") => NonNegativeInteger,
        (Dialect::Draft2020, "deprecated") => Bool,
        (Dialect::Draft2020, "dependentRequired") => StringArrayMap,
        _ => common,
    };
    (specific != Any).then_some(specific)
}

/// One keyword value that breaks the meta-schema: where (a pointer relative to the subschema)
/// and what is wrong.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Violation {
    pub keyword: String,
    pub at: String,
    pub message: String,
}

/// The keyword values of one subschema that its dialect's meta-schema refuses. `skip` names
/// keywords another rule reports.
pub(crate) fn violations(
    obj: &Map<String, Value>,
    dialect: Dialect,
    skip: &dyn Fn(&str, &Value) -> bool,
) -> Vec<Violation> {
    let mut out = Vec::new();
    for (key, value) in obj {
        if skip(key, value) {
            continue;
        }
        let Some(shape) = shape(dialect, key) else {
            continue;
        };
        if let Some((at, message)) = check(shape, value) {
            out.push(Violation {
                keyword: key.clone(),
                at: if at.is_empty() {
                    format!("/{}", escape(key))
                } else {
                    format!("/{}{at}", escape(key))
                },
                message: format!("`{key}` {message}"),
            });
        }
    }
    out
}

/// Whether a JSON number is an integer (2020-12 counts `1.0` as one).
fn is_integer(v: &Value) -> bool {
    v.as_i64().is_some() || v.as_u64().is_some() || v.as_f64().is_some_and(|f| f.fract() == 0.0)
}

fn unique(values: &[Value]) -> bool {
    values
        .iter()
        .enumerate()
        .all(|(i, a)| values[..i].iter().all(|b| a != b))
}

fn string_array(v: &Value) -> bool {
    matches!(v, Value::Array(a) if a.iter().all(Value::is_string) && unique(a))
}

/// `None` when `value` has the shape; else where inside it (a pointer suffix) and what it must be.
fn check(shape: Shape, value: &Value) -> Option<(String, String)> {
    let fail = |m: &str| Some((String::new(), m.to_owned()));
    match shape {
        Shape::Any => None,
        Shape::Schema => (!is_schema(value)).then(|| {
            (
                String::new(),
                "must be a schema (an object or a boolean)".to_owned(),
            )
        }),
        Shape::SchemaArray => match value {
            Value::Array(a) if a.is_empty() => fail("must be a non-empty array of schemas"),
            Value::Array(a) => a.iter().position(|s| !is_schema(s)).map(|i| {
                (
                    format!("/{i}"),
                    "must hold only schemas (objects or booleans)".to_owned(),
                )
            }),
            _ => fail("must be a non-empty array of schemas"),
        },
        Shape::SchemaMap => match value {
            Value::Object(m) => m.iter().find(|(_, s)| !is_schema(s)).map(|(k, _)| {
                (
                    format!("/{}", escape(k)),
                    "must map names to schemas (objects or booleans)".to_owned(),
                )
            }),
            _ => fail("must be an object mapping names to schemas"),
        },
        Shape::SchemaOrArray => match value {
            Value::Array(_) => check(Shape::SchemaArray, value),
            _ => check(Shape::Schema, value),
        },
        Shape::Dependencies => match value {
            Value::Object(m) => m
                .iter()
                .find(|(_, v)| !(is_schema(v) || string_array(v)))
                .map(|(k, _)| {
                    (
                        format!("/{}", escape(k)),
                        "must map names to schemas or to arrays of unique property names"
                            .to_owned(),
                    )
                }),
            _ => fail("must be an object"),
        },
        Shape::String => (!value.is_string()).then(|| (String::new(), "must be a string".into())),
        Shape::Id => match value.as_str() {
            Some(s) if s.find('#').is_none_or(|i| i == s.len() - 1) => None,
            Some(_) => fail("must not have a non-empty fragment (`#...`)"),
            None => fail("must be a string"),
        },
        Shape::Anchor => match value.as_str() {
            Some(s) if is_anchor(s) => None,
            _ => fail("must be a name matching ^[A-Za-z_][-A-Za-z0-9._]*$"),
        },
        Shape::Vocabulary => match value {
            Value::Object(m) if m.values().all(Value::is_boolean) => None,
            _ => fail("must be an object of booleans"),
        },
        Shape::Number => (!value.is_number()).then(|| (String::new(), "must be a number".into())),
        Shape::Positive => match value.as_f64() {
            Some(n) if n > 0.0 => None,
            _ => fail("must be a number greater than 0"),
        },
        Shape::NonNegativeInteger => match value.as_f64() {
            Some(n) if n >= 0.0 && is_integer(value) => None,
            _ => fail("must be a non-negative integer"),
        },
        Shape::Bool => (!value.is_boolean()).then(|| (String::new(), "must be a boolean".into())),
        Shape::Array => (!value.is_array()).then(|| (String::new(), "must be an array".into())),
        Shape::StringArray => (!string_array(value))
            .then(|| (String::new(), "must be an array of unique strings".into())),
        Shape::StringArrayMap => match value {
            Value::Object(m) => m.iter().find(|(_, v)| !string_array(v)).map(|(k, _)| {
                (
                    format!("/{}", escape(k)),
                    "must map names to arrays of unique strings".to_owned(),
                )
            }),
            _ => fail("must be an object mapping names to arrays of unique strings"),
        },
        Shape::Type => {
            let simple = |v: &Value| v.as_str().is_some_and(|t| SIMPLE_TYPES.contains(&t));
            let ok = match value {
                Value::Array(a) => !a.is_empty() && a.iter().all(simple) && unique(a),
                other => simple(other),
            };
            (!ok).then(|| {
                (
                    String::new(),
                    format!(
                        "must be one of {}, or a non-empty array of unique ones",
                        SIMPLE_TYPES.join(", ")
                    ),
                )
            })
        }
    }
}

fn is_anchor(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn of(schema: Value, dialect: Dialect) -> Vec<(String, String)> {
        violations(schema.as_object().unwrap(), dialect, &|_, _| false)
            .into_iter()
            .map(|v| (v.at, v.message))
            .collect()
    }

    #[test]
    fn each_shape() {
        let bad = json!({
            "type": ["string", "string"],
            "required": ["a", 1],
            "properties": {"a": 3},
            "anyOf": [],
            "minLength": -1,
            "maxItems": 1.5,
            "multipleOf": 0,
            "$id": "x#frag",
            "$anchor": "1a",
            "uniqueItems": "yes",
            "dependentRequired": {"a": [1]},
            "dependencies": {"a": 3},
            "$vocabulary": {"x": 1},
            "enum": "a",
            "minimum": "0",
            "items": [{}],
            "description": 1
        });
        assert_eq!(
            of(bad.clone(), Dialect::Draft2020),
            [
                ("/type".into(), "`type` must be one of array, boolean, integer, null, number, object, string, or a non-empty array of unique ones".into()),
                ("/required".into(), "`required` must be an array of unique strings".into()),
                ("/properties/a".into(), "`properties` must map names to schemas (objects or booleans)".into()),
                ("/anyOf".into(), "`anyOf` must be a non-empty array of schemas".into()),
                ("/minLength".into(), "`minLength` must be a non-negative integer".into()),
                ("/maxItems".into(), "`maxItems` must be a non-negative integer".into()),
                ("/multipleOf".into(), "`multipleOf` must be a number greater than 0".into()),
                ("/$id".into(), "`$id` must not have a non-empty fragment (`#...`)".into()),
                ("/$anchor".into(), "`$anchor` must be a name matching ^[A-Za-z_][-A-Za-z0-9._]*$".into()),
                ("/uniqueItems".into(), "`uniqueItems` must be a boolean".into()),
                ("/dependentRequired/a".into(), "`dependentRequired` must map names to arrays of unique strings".into()),
                ("/dependencies/a".into(), "`dependencies` must map names to schemas or to arrays of unique property names".into()),
                ("/$vocabulary".into(), "`$vocabulary` must be an object of booleans".into()),
                ("/enum".into(), "`enum` must be an array".into()),
                ("/minimum".into(), "`minimum` must be a number".into()),
                ("/items".into(), "`items` must be a schema (an object or a boolean)".into()),
                ("/description".into(), "`description` must be a string".into()),
            ]
        );
        // draft-07 allows tuple `items`, knows neither `$anchor` nor `dependentRequired`, and
        // allows a fragment in `$id`.
        let draft07: Vec<String> = of(bad, Dialect::Draft07)
            .into_iter()
            .map(|(at, _)| at)
            .collect();
        assert_eq!(
            draft07,
            [
                "/type",
                "/required",
                "/properties/a",
                "/anyOf",
                "/minLength",
                "/maxItems",
                "/multipleOf",
                "/uniqueItems",
                "/dependencies/a",
                "/enum",
                "/minimum",
                "/description"
            ]
        );
    }

    #[test]
    fn good_values_pass() {
        let good = json!({
            "type": ["string", "null"],
            "required": [],
            "properties": {"a": true, "b": {}},
            "minLength": 0,
            "maxItems": 2.0,
            "multipleOf": 0.5,
            "$id": "urn:x#",
            "$anchor": "a-b.c_d",
            "enum": [],
            "dependencies": {"a": ["b"], "c": {}},
            "x-anything": {"goes": 1}
        });
        assert_eq!(of(good.clone(), Dialect::Draft2020), Vec::new());
        assert_eq!(of(good, Dialect::Draft07), Vec::new());
    }
}
