//! Unit tests: one per rule (a schema that breaks it, one that does not, the exact finding),
//! and the normalisation's promise (nothing automatic is left, nothing manual is hidden).

use serde_json::{Value, json};

use super::*;

/// (pointer, rule, automatic) of each finding.
fn found(profile: Profile, schema: &Value) -> Vec<(String, &'static str, bool)> {
    check(profile, Part::InputSchema, schema)
        .into_iter()
        .map(|f| (f.pointer, f.rule, f.fix.automatic))
        .collect()
}

/// The findings of one rule.
fn of_rule(profile: Profile, rule: &str, schema: &Value) -> Vec<(String, bool)> {
    found(profile, schema)
        .into_iter()
        .filter(|(_, r, _)| *r == rule)
        .map(|(p, _, a)| (p, a))
        .collect()
}

fn p(s: &str) -> String {
    s.to_owned()
}

/// A schema sake's macros produce: no finding for the MCP profile or VS Code.
fn plain() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "Who."},
            "count": {"type": "integer", "minimum": 0},
            "mode": {"type": "string", "enum": ["fast", "slow"]},
            "tags": {"type": "array", "items": {"type": "string"}}
        },
        "required": ["name", "count", "mode", "tags"]
    })
}

/// The same, as strict mode wants it.
fn strict() -> Value {
    let mut s = plain();
    s["additionalProperties"] = json!(false);
    s
}

// ---------------------------------------------------------------------------------------------
// Shared rules

#[test]
fn input_must_be_an_object() {
    for profile in Profile::ALL {
        assert_eq!(
            of_rule(profile, "mcp.input-object", &json!({"type": "string"})),
            [(p(""), false)],
            "{profile:?}"
        );
        assert_eq!(of_rule(profile, "mcp.input-object", &plain()), []);
    }
    let f = &check(Profile::VsCode, Part::InputSchema, &json!({"anyOf": [{}]}))[0];
    assert_eq!(f.message, "the root is untyped, not `\"type\": \"object\"`");
    assert_eq!(f.level, Level::Error);
}

#[test]
fn refs_must_resolve() {
    let s = json!({
        "type": "object",
        "properties": {
            "a": {"$ref": "#/$defs/A"},
            "b": {"$ref": "#/$defs/Missing"},
            "c": {"$ref": "https://example.com/c.json"}
        },
        "$defs": {"A": {"type": "string"}}
    });
    for profile in [
        Profile::JsonSchema2020,
        Profile::OpenAiStrict,
        Profile::VsCode,
    ] {
        assert_eq!(
            of_rule(profile, "mcp.ref-unresolved", &s),
            [
                (p("/properties/b/$ref"), false),
                (p("/properties/c/$ref"), false)
            ],
            "{profile:?}"
        );
    }
    // Gemini reports every `$ref` under its own rule.
    assert_eq!(of_rule(Profile::Gemini, "mcp.ref-unresolved", &s), []);
    let f = check(Profile::VsCode, Part::InputSchema, &s);
    assert_eq!(
        f[0].message,
        "`$ref` \"#/$defs/Missing\" leads nowhere in this schema"
    );
}

// ---------------------------------------------------------------------------------------------
// JSON Schema 2020-12

#[test]
fn json_schema_meta() {
    let s = json!({
        "type": "object",
        "properties": {
            "a": {"type": "int"},
            "b": {"type": "string", "minLength": -1},
            "c": 3
        },
        "required": "a"
    });
    assert_eq!(
        found(Profile::JsonSchema2020, &s),
        [
            (p("/properties/c"), "json-schema.meta", false),
            (p("/required"), "json-schema.meta", false),
            (p("/properties/a/type"), "json-schema.meta", false),
            (p("/properties/b/minLength"), "json-schema.meta", false),
        ]
    );
    assert_eq!(found(Profile::JsonSchema2020, &plain()), []);
}

#[test]
fn json_schema_dialect() {
    let mut s = plain();
    s["$schema"] = json!("http://json-schema.org/draft-07/schema#");
    assert_eq!(
        found(Profile::JsonSchema2020, &s),
        [(p("/$schema"), "json-schema.dialect", false)]
    );
    s["$schema"] = json!("https://json-schema.org/draft/2020-12/schema");
    assert_eq!(found(Profile::JsonSchema2020, &s), []);
    // A draft-07 schema is checked against draft-07's meta-schema, without the migrations.
    let s = json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"t": {"type": "array", "items": [{"type": "string"}]}},
        "definitions": {}
    });
    assert_eq!(
        found(Profile::JsonSchema2020, &s),
        [(p("/$schema"), "json-schema.dialect", false)]
    );
}

#[test]
fn json_schema_draft_07_keywords() {
    let s = json!({
        "type": "object",
        "properties": {
            "pair": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}], "additionalItems": false},
            "list": {"type": "array", "items": {"type": "string"}, "additionalItems": false},
            "n": {"type": "number", "minimum": 0, "exclusiveMinimum": true, "exclusiveMaximum": false},
            "r": {"$recursiveRef": "#"},
            "d": {"$ref": "#/definitions/D"}
        },
        "dependencies": {"a": ["b"], "c": {"required": ["d"]}},
        "definitions": {"D": {"type": "string"}}
    });
    assert_eq!(
        found(Profile::JsonSchema2020, &s),
        [
            (p("/definitions"), "json-schema.definitions", true),
            (p("/dependencies"), "json-schema.dependencies", true),
            (p("/properties/pair/items"), "json-schema.tuple-items", true),
            (
                p("/properties/pair/additionalItems"),
                "json-schema.additional-items",
                true
            ),
            (
                p("/properties/list/additionalItems"),
                "json-schema.additional-items",
                true
            ),
            (
                p("/properties/n/exclusiveMinimum"),
                "json-schema.exclusive-boolean",
                true
            ),
            (
                p("/properties/n/exclusiveMaximum"),
                "json-schema.exclusive-boolean",
                true
            ),
            (
                p("/properties/r/$recursiveRef"),
                "json-schema.recursive-ref",
                false
            ),
        ]
    );
    assert_eq!(
        normalize(Profile::JsonSchema2020, Part::InputSchema, &s),
        json!({
            "type": "object",
            "properties": {
                "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false},
                "list": {"type": "array", "items": {"type": "string"}},
                "n": {"type": "number", "exclusiveMinimum": 0},
                "r": {"$recursiveRef": "#"},
                "d": {"$ref": "#/$defs/D"}
            },
            "dependentRequired": {"a": ["b"]},
            "dependentSchemas": {"c": {"required": ["d"]}},
            "$defs": {"D": {"type": "string"}}
        })
    );
}

#[test]
fn output_schemas_should_be_objects() {
    let found = check(
        Profile::JsonSchema2020,
        Part::OutputSchema,
        &json!({"type": "integer"}),
    );
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].rule, "mcp.output-object");
    assert_eq!(found[0].level, Level::Warning);
    assert_eq!(
        check(Profile::JsonSchema2020, Part::OutputSchema, &plain()),
        []
    );
    // Model providers never see output schemas.
    for profile in [Profile::OpenAiStrict, Profile::Gemini, Profile::VsCode] {
        assert_eq!(check(profile, Part::OutputSchema, &json!(3)), []);
    }
}

// ---------------------------------------------------------------------------------------------
// OpenAI strict

#[test]
fn openai_root_any_of() {
    let s = json!({"type": "object", "anyOf": [{"type": "object", "properties": {}, "additionalProperties": false}], "properties": {}, "additionalProperties": false});
    assert_eq!(
        found(Profile::OpenAiStrict, &s),
        [(p("/anyOf"), "openai.root-any-of", false)]
    );
    assert_eq!(found(Profile::OpenAiStrict, &strict()), []);
}

#[test]
fn openai_additional_properties() {
    let s = json!({
        "type": "object",
        "properties": {
            "st": {"type": "object", "properties": {"x": {"type": "string"}}, "required": ["x"]},
            "map": {"type": "object", "additionalProperties": {"type": "integer"}},
            "free": {"type": "object"}
        },
        "required": ["st", "map", "free"]
    });
    assert_eq!(
        of_rule(Profile::OpenAiStrict, "openai.additional-properties", &s),
        [
            (p(""), true),
            (p("/properties/st"), true),
            (p("/properties/map/additionalProperties"), false),
            (p("/properties/free"), false),
        ]
    );
    let f = check(Profile::OpenAiStrict, Part::InputSchema, &s);
    assert_eq!(
        f[2].fix.how,
        "field `map` is a map (`HashMap<String, _>`, `BTreeMap`, `serde_json::Map`): take a `Vec` of structs with `key` and `value` fields instead"
    );
}

#[test]
fn openai_required() {
    let s = json!({
        "type": "object",
        "properties": {
            "a": {"type": "string"},
            "b": {"type": "integer", "default": 3},
            "c": {"$ref": "#/$defs/C", "description": "C."},
            "d": {"type": "string", "enum": ["x", "y"]}
        },
        "required": ["a"],
        "additionalProperties": false,
        "$defs": {"C": {"type": "boolean"}}
    });
    assert_eq!(
        of_rule(Profile::OpenAiStrict, "openai.required", &s),
        [
            (p("/properties/b"), true),
            (p("/properties/c"), true),
            (p("/properties/d"), true),
        ]
    );
    let f = check(Profile::OpenAiStrict, Part::InputSchema, &s);
    assert_eq!(
        f[0].message,
        "field `b` is optional (an `Option<T>` or a `#[serde(default)]` field) but strict mode requires every property in `required`"
    );
    assert_eq!(
        normalize(Profile::OpenAiStrict, Part::InputSchema, &s),
        json!({
            "type": "object",
            "properties": {
                "a": {"type": "string"},
                "b": {"type": "integer"},
                "c": {"description": "C.", "anyOf": [{"$ref": "#/$defs/C"}, {"type": "null"}]},
                "d": {"type": ["string", "null"], "enum": ["x", "y", null]}
            },
            "required": ["a", "b", "c", "d"],
            "additionalProperties": false,
            "$defs": {"C": {"type": "boolean"}}
        })
    );
}

#[test]
fn openai_keywords() {
    let s = json!({
        "type": "object",
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "properties": {
            "e": {"oneOf": [{"type": "string", "const": "a"}, {"type": "integer"}]},
            "s": {"type": "string", "minLength": 1, "x-mcp-header": "S"},
            "t": {"type": "array", "prefixItems": [{"type": "string"}], "items": false},
            "u": {"type": "array", "items": {"type": "string"}, "uniqueItems": true}
        },
        "required": ["e", "s", "t", "u"],
        "additionalProperties": false,
        "allOf": [{"required": ["e"]}],
        "x-note": 1
    });
    assert_eq!(
        of_rule(Profile::OpenAiStrict, "openai.keyword", &s),
        [
            (p("/$schema"), true),
            (p("/allOf"), false),
            (p("/x-note"), true),
            (p("/properties/e/oneOf"), true),
            (p("/properties/s/minLength"), true),
            (p("/properties/t/prefixItems"), false),
            (p("/properties/u/uniqueItems"), true),
        ]
    );
    assert_eq!(found(Profile::OpenAiStrict, &strict()), []);
}

#[test]
fn openai_type() {
    let s = json!({
        "type": "object",
        "properties": {"any": {}, "e": {"enum": [1, 2]}, "ok": {"$ref": "#/$defs/X"}},
        "required": ["any", "e", "ok"],
        "additionalProperties": false,
        "$defs": {"X": {"type": "string"}}
    });
    assert_eq!(
        of_rule(Profile::OpenAiStrict, "openai.type", &s),
        [(p("/properties/any"), false), (p("/properties/e"), true)]
    );
    let fixed = normalize(Profile::OpenAiStrict, Part::InputSchema, &s);
    assert_eq!(
        fixed["properties"]["e"],
        json!({"enum": [1, 2], "type": "integer"})
    );
}

#[test]
fn openai_array_items() {
    let s = json!({
        "type": "object",
        "properties": {
            "list": {"type": "array"},
            "either": {"type": ["string", "array"]},
            "pair": {"type": "array", "prefixItems": [{"type": "string"}], "items": false},
            "ok": {"type": "array", "items": {"type": "string"}}
        },
        "required": ["list", "either", "pair", "ok"],
        "additionalProperties": false
    });
    assert_eq!(
        of_rule(Profile::OpenAiStrict, "openai.array-items", &s),
        [
            (p("/properties/list"), false),
            (p("/properties/either"), false)
        ]
    );
    let f = check(Profile::OpenAiStrict, Part::InputSchema, &s);
    assert_eq!(f[0].message, "field `list` is an array without `items`");
    assert_eq!(
        f[0].fix.how,
        "give the array an element type (a `Vec<T>` of a concrete `T`)"
    );
}

#[test]
fn openai_format_and_default() {
    let s = json!({
        "type": "object",
        "properties": {
            "u": {"type": "string", "format": "uri"},
            "d": {"type": "string", "format": "date"},
            "n": {"type": "integer", "default": 1}
        },
        "required": ["u", "d", "n"],
        "additionalProperties": false
    });
    assert_eq!(
        found(Profile::OpenAiStrict, &s),
        [
            (p("/properties/u/format"), "openai.format", true),
            (p("/properties/n/default"), "openai.default", true),
        ]
    );
    let f = check(Profile::OpenAiStrict, Part::InputSchema, &s);
    assert_eq!(f[1].level, Level::Warning);
}

#[test]
fn openai_limits() {
    assert_eq!(
        found(Profile::OpenAiStrict, &deep(11)),
        [(
            p(
                "/properties/n/properties/n/properties/n/properties/n/properties/n/properties/n/properties/n/properties/n/properties/n/properties/n"
            ),
            "openai.limits",
            false
        )]
    );
    let values: Vec<String> = (0..300).map(|i| format!("{i:060}")).collect();
    let s = json!({
        "type": "object",
        "properties": {"e": {"type": "string", "enum": values}},
        "required": ["e"],
        "additionalProperties": false
    });
    assert_eq!(
        found(Profile::OpenAiStrict, &s),
        [(p("/properties/e/enum"), "openai.limits", false)]
    );
    let many: serde_json::Map<String, Value> = (0..1001)
        .map(|i| (format!("p{i}"), json!({"type": "string", "enum": ["a"]})))
        .collect();
    let names: Vec<String> = many.keys().cloned().collect();
    let s = json!({"type": "object", "properties": many, "required": names, "additionalProperties": false});
    let f = check(Profile::OpenAiStrict, Part::InputSchema, &s);
    assert_eq!(f.len(), 1);
    assert_eq!(
        f[0].message,
        "the schema has 1001 enum values; strict mode allows 1000"
    );
    // Ten levels are allowed.
    assert_eq!(found(Profile::OpenAiStrict, &deep(10)), []);
}

#[test]
fn tool_names() {
    let tool = |name: &str| {
        Tool::new(
            name,
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"], "additionalProperties": false}),
        )
        .with_description("d")
    };
    let rules = |profile, name| -> Vec<&str> {
        check_tool(profile, &tool(name))
            .iter()
            .filter(|f| f.part == Part::Name)
            .map(|f| f.rule)
            .collect()
    };
    assert_eq!(rules(Profile::OpenAiStrict, "a.b"), ["openai.name"]);
    assert_eq!(rules(Profile::OpenAiStrict, "a_b-c"), Vec::<&str>::new());
    assert_eq!(rules(Profile::Gemini, "9lives"), ["gemini.name"]);
    assert_eq!(rules(Profile::Gemini, "a.b:c-d"), Vec::<&str>::new());
    let f = &check_tool(Profile::OpenAiStrict, &tool("a.b"))[0];
    assert_eq!(
        (f.part, f.pointer.as_str(), f.level),
        (Part::Name, "", Level::Warning)
    );
    assert_eq!(
        f.to_string(),
        "warning [openai.name] tool `a.b` name: `a.b` does not match ^[a-zA-Z0-9_-]{1,64}$ (to fix: rename the tool with `#[tool(name = \"...\")]`, using letters, digits, `_` and `-`)"
    );
}

// ---------------------------------------------------------------------------------------------
// Gemini

#[test]
fn gemini_type_array() {
    let s = json!({
        "type": "object",
        "properties": {
            "o": {"type": ["string", "null"]},
            "m": {"type": ["string", "integer"], "minLength": 1, "minimum": 0},
            "k": {"type": ["string", "integer"], "anyOf": [{"type": "string"}]}
        },
        "required": ["o", "m", "k"]
    });
    assert_eq!(
        of_rule(Profile::Gemini, "gemini.type-array", &s),
        [
            (p("/properties/o/type"), true),
            (p("/properties/m/type"), true),
            (p("/properties/k/type"), false),
        ]
    );
    let fixed = normalize(Profile::Gemini, Part::InputSchema, &s);
    assert_eq!(
        fixed["properties"]["o"],
        json!({"type": "string", "nullable": true})
    );
    assert_eq!(
        fixed["properties"]["m"],
        json!({"anyOf": [{"type": "string", "minLength": 1}, {"type": "integer", "minimum": 0}]})
    );
}

#[test]
fn gemini_type() {
    let s = json!({
        "type": "object",
        "properties": {"any": {}, "e": {"enum": ["a"]}, "u": {"anyOf": [{"type": "string"}, {"type": "integer"}]}},
        "required": ["any", "e", "u"]
    });
    assert_eq!(
        of_rule(Profile::Gemini, "gemini.type", &s),
        [(p("/properties/any"), false), (p("/properties/e"), true)]
    );
}

#[test]
fn gemini_refs() {
    let s = json!({
        "type": "object",
        "properties": {
            "a": {"$ref": "#/$defs/A"},
            "t": {"$ref": "#/$defs/T"}
        },
        "required": ["a", "t"],
        "$defs": {
            "A": {"type": "string"},
            "T": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/T"}}}, "required": ["kids"]}
        }
    });
    assert_eq!(
        of_rule(Profile::Gemini, "gemini.ref", &s),
        [
            (p("/$defs"), false),
            (p("/properties/a/$ref"), true),
            (p("/properties/t/$ref"), false),
            (p("/$defs/T/properties/kids/items/$ref"), false),
        ]
    );
    let s = json!({
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/A"}},
        "required": ["a"],
        "$defs": {"A": {"type": "string"}}
    });
    assert_eq!(
        of_rule(Profile::Gemini, "gemini.ref", &s),
        [(p("/$defs"), true), (p("/properties/a/$ref"), true)]
    );
    assert_eq!(
        normalize(Profile::Gemini, Part::InputSchema, &s),
        json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]})
    );
}

#[test]
fn gemini_keywords() {
    let s = json!({
        "type": "object",
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "properties": {
            "c": {"type": "string", "const": "circle"},
            "n": {"type": "integer", "exclusiveMinimum": 0},
            "m": {"type": "object", "additionalProperties": {"type": "string"}},
            "h": {"type": "string", "x-mcp-header": "H"}
        },
        "required": ["c", "n", "m", "h"],
        "additionalProperties": false
    });
    assert_eq!(
        of_rule(Profile::Gemini, "gemini.keyword", &s),
        [
            (p("/$schema"), true),
            (p("/additionalProperties"), true),
            (p("/properties/c/const"), true),
            (p("/properties/n/exclusiveMinimum"), true),
            (p("/properties/m/additionalProperties"), false),
        ]
    );
    let fixed = normalize(Profile::Gemini, Part::InputSchema, &s);
    assert_eq!(
        fixed,
        json!({
            "type": "object",
            "properties": {
                "c": {"type": "string", "enum": ["circle"]},
                "n": {"type": "integer", "minimum": 1},
                "m": {"type": "object", "additionalProperties": {"type": "string"}},
                "h": {"type": "string", "x-mcp-header": "H"}
            },
            "required": ["c", "n", "m", "h"]
        })
    );
}

#[test]
fn gemini_enum_and_format() {
    let s = json!({
        "type": "object",
        "properties": {
            "i": {"type": "integer", "enum": [1, 2]},
            "o": {"type": ["string", "null"], "enum": ["a", null]},
            "s": {"type": "string", "enum": ["a"], "format": "enum"},
            "d": {"type": "string", "format": "date"},
            "t": {"type": "string", "format": "date-time"},
            "f": {"type": "number", "format": "double"}
        },
        "required": ["i", "o", "s", "d", "t", "f"]
    });
    assert_eq!(
        found(Profile::Gemini, &s)
            .into_iter()
            .filter(|(_, r, _)| *r != "gemini.type-array")
            .collect::<Vec<_>>(),
        [
            (p("/properties/i/enum"), "gemini.enum", false),
            (p("/properties/o/enum"), "gemini.enum", true),
            (p("/properties/d/format"), "gemini.format", true),
        ]
    );
    let fixed = normalize(Profile::Gemini, Part::InputSchema, &s);
    assert_eq!(
        fixed["properties"]["o"],
        json!({"type": "string", "enum": ["a"], "nullable": true})
    );
    assert_eq!(fixed["properties"]["d"], json!({"type": "string"}));
}

#[test]
fn gemini_objects_and_arrays() {
    let s = json!({
        "type": "object",
        "properties": {
            "free": {"type": "object"},
            "list": {"type": "array"},
            "pair": {"type": "array", "prefixItems": [{"type": "string"}], "items": false}
        },
        "required": ["free", "list", "pair"]
    });
    let rules = |rule| of_rule(Profile::Gemini, rule, &s);
    assert_eq!(
        rules("gemini.empty-object"),
        [(p("/properties/free"), false)]
    );
    assert_eq!(
        rules("gemini.array-items"),
        [(p("/properties/list"), false)]
    );
    // `items: false` is present, so the tuple is reported by its `prefixItems` only.
    assert_eq!(
        of_rule(Profile::Gemini, "gemini.keyword", &s),
        [(p("/properties/pair/prefixItems"), false)]
    );
    let none = json!({"type": "object", "properties": {}});
    assert_eq!(
        found(Profile::Gemini, &none),
        [(p(""), "gemini.no-parameters", false)]
    );
    assert_eq!(
        check(Profile::Gemini, Part::InputSchema, &none)[0].level,
        Level::Warning
    );
}

// ---------------------------------------------------------------------------------------------
// VS Code

#[test]
fn vscode_array_items() {
    let s = json!({
        "type": "object",
        "properties": {
            "list": {"type": "array"},
            "pair": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "minItems": 2, "maxItems": 2},
            "open": {"type": "array", "prefixItems": [{"type": "integer"}]},
            "no": {"type": "array", "items": false},
            "ok": {"type": "array", "items": {}}
        },
        "$defs": {"Hidden": {"type": "array"}}
    });
    assert_eq!(
        found(Profile::VsCode, &s),
        [
            (p("/properties/list"), "vscode.array-items", true),
            (p("/properties/pair"), "vscode.array-items", true),
            (p("/properties/open"), "vscode.array-items", true),
            (p("/properties/no"), "vscode.array-items", true),
        ]
    );
    let fixed = normalize(Profile::VsCode, Part::InputSchema, &s);
    assert_eq!(fixed["properties"]["list"]["items"], json!({}));
    assert_eq!(
        fixed["properties"]["pair"]["items"],
        json!({"anyOf": [{"type": "integer"}, {"type": "string"}]})
    );
    assert_eq!(fixed["properties"]["open"]["items"], json!({}));
    assert_eq!(fixed["properties"]["no"]["items"], json!({}));
    assert_eq!(fixed["$defs"]["Hidden"], json!({"type": "array"}));
}

#[test]
fn vscode_draft_07() {
    let s = json!({
        "type": "object",
        "properties": {"a": {"type": "string", "maxLength": "10"}},
        "$defs": {"x": {"type": "nope"}},
        "prefixItems": 3
    });
    // `$defs` and `prefixItems` are unknown to draft-07: their values go unchecked.
    assert_eq!(
        found(Profile::VsCode, &s),
        [(p("/properties/a/maxLength"), "vscode.draft-07", false)]
    );
}

#[test]
fn vscode_dynamic_refs_and_schema_uri() {
    let s = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"a": {"$dynamicRef": "#meta"}},
        "$dynamicAnchor": "meta"
    });
    assert_eq!(
        found(Profile::VsCode, &s),
        [
            (p("/$schema"), "vscode.schema-uri", true),
            (p("/$dynamicAnchor"), "vscode.dynamic-ref", false),
            (p("/properties/a/$dynamicRef"), "vscode.dynamic-ref", false),
        ]
    );
    let mut draft07 = plain();
    draft07["$schema"] = json!("http://json-schema.org/draft-07/schema#");
    assert_eq!(found(Profile::VsCode, &draft07), []);
}

#[test]
fn vscode_top_level_and_required() {
    let s = json!({
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
        "required": ["a", "ghost"],
        "anyOf": [{"required": ["a"]}, {"required": ["b"]}],
        "if": {"required": ["a"]},
        "then": {"required": ["b"]}
    });
    assert_eq!(
        found(Profile::VsCode, &s),
        [
            (p("/anyOf"), "vscode.top-level-composition", false),
            (p("/if"), "vscode.top-level-composition", false),
            (p("/then"), "vscode.top-level-composition", false),
            (p("/required"), "vscode.required-undefined", true),
        ]
    );
    let fixed = normalize(Profile::VsCode, Part::InputSchema, &s);
    assert_eq!(fixed["required"], json!(["a"]));
    assert_eq!(found(Profile::VsCode, &plain()), []);
}

// ---------------------------------------------------------------------------------------------
// Normalisation and the rule table

/// Schemas that break every rule between them.
fn corpus() -> Vec<Value> {
    vec![
        json!({"type": "string"}),
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "opt": {"type": "string", "format": "uri", "minLength": 1},
                "def": {"type": "integer", "default": 2, "exclusiveMinimum": 1},
                "both": {"type": ["string", "integer", "null"], "format": "email", "maximum": 3},
                "null_enum": {"type": ["string", "null"], "enum": ["a", null]},
                "any": {},
                "free": {"type": "object"},
                "map": {"type": "object", "additionalProperties": {"type": "string"}},
                "keys": {"type": "object", "additionalProperties": false, "patternProperties": {"^\\d+$": {"type": "string"}}},
                "tuple": {"type": "array", "prefixItems": [{"type": "string"}, {"const": 1}], "maxItems": 2},
                "bare": {"type": "array"},
                "tagged": {"oneOf": [
                    {"type": "object", "properties": {"kind": {"const": "a"}}, "required": ["kind"]},
                    {"type": "object", "properties": {"kind": {"type": "string", "const": "b"}, "n": {"type": "integer", "enum": [1, 2]}}}
                ]},
                "tree": {"$ref": "#/$defs/Tree"},
                "addr": {"$ref": "#addr", "description": "Where."},
                "lost": {"$ref": "#/$defs/Lost"},
                "dyn": {"$dynamicRef": "#x"},
                "h": {"type": "string", "x-mcp-header": "H"}
            },
            "required": ["any", "ghost"],
            "allOf": [{"required": ["opt"]}],
            "$defs": {
                "Tree": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Tree"}}}},
                "Addr": {"$anchor": "addr", "type": "object", "properties": {"city": {"$ref": "#/$defs/City"}}},
                "City": {"type": "string"}
            },
            "x-extra": true
        }),
        json!({
            "type": "object",
            "properties": {
                "pair": {"type": "array", "items": [{"type": "string"}], "additionalItems": false},
                "n": {"type": "number", "minimum": 0, "exclusiveMinimum": true, "maxLength": -1},
                "r": {"$recursiveRef": "#"},
                "d": {"$ref": "#/definitions/D"}
            },
            "dependencies": {"a": ["b"]},
            "definitions": {"D": {"type": "string"}}
        }),
        json!({"$schema": "http://json-schema.org/draft-04/schema#", "type": "object", "properties": {}}),
        json!({"type": "object", "anyOf": [{"type": "object", "properties": {}}], "properties": {}}),
        deep(12),
    ]
}

/// Objects nested `levels` deep.
fn deep(levels: usize) -> Value {
    let mut s = json!({"type": "string"});
    for _ in 0..levels {
        s = json!({"type": "object", "properties": {"n": s}, "required": ["n"], "additionalProperties": false});
    }
    s
}

#[test]
fn normalising_leaves_only_what_needs_the_author() {
    for profile in Profile::ALL {
        for schema in corpus() {
            let before = check(profile, Part::InputSchema, &schema);
            let fixed = normalize(profile, Part::InputSchema, &schema);
            let after = check(profile, Part::InputSchema, &fixed);
            let automatic: Vec<&Finding> = after.iter().filter(|f| f.fix.automatic).collect();
            assert!(
                automatic.is_empty(),
                "{profile:?}: automatic findings left after normalising:\n{automatic:#?}\n{fixed:#}"
            );
            // Every manual finding is still there (as many, of the same rules).
            let manual = |fs: &[Finding]| {
                let mut rules: Vec<&str> = fs
                    .iter()
                    .filter(|f| !f.fix.automatic)
                    .map(|f| f.rule)
                    .collect();
                rules.sort_unstable();
                rules
            };
            if profile != Profile::Gemini {
                assert_eq!(manual(&before), manual(&after), "{profile:?}\n{fixed:#}");
            }
            // Normalising twice changes nothing more.
            assert_eq!(
                normalize(profile, Part::InputSchema, &fixed),
                fixed,
                "{profile:?}"
            );
        }
    }
}

#[test]
fn every_rule_is_found_and_every_finding_has_a_rule() {
    let mut seen = std::collections::BTreeSet::new();
    let names = ["a.b", "9lives"];
    for profile in Profile::ALL {
        for schema in corpus() {
            for f in check(profile, Part::InputSchema, &schema) {
                let rule = rule(f.rule).unwrap_or_else(|| panic!("no rule {}", f.rule));
                assert!(
                    rule.profiles.contains(&profile),
                    "{} in {profile:?}",
                    f.rule
                );
                assert_eq!(rule.level, f.level);
                match rule.automatic {
                    Automatic::Always => assert!(f.fix.automatic, "{f}"),
                    Automatic::Never => assert!(!f.fix.automatic, "{f}"),
                    Automatic::Sometimes => {}
                }
                seen.insert(f.rule);
            }
            for f in check(profile, Part::OutputSchema, &json!({"type": "integer"})) {
                seen.insert(f.rule);
            }
        }
        for name in names {
            for raw in check::name(profile, name) {
                seen.insert(raw.rule);
            }
        }
    }
    let all: std::collections::BTreeSet<&str> = rules(None).map(|r| r.id).collect();
    assert_eq!(seen, all);
    for r in rules(None) {
        assert!(
            !r.sources.is_empty() && !r.summary.is_empty() && !r.fix.is_empty(),
            "{}",
            r.id
        );
        assert!(r.sources[0].starts_with("http"), "{}", r.id);
    }
    assert_eq!(rules(Some(Profile::VsCode)).count(), 8);
}

#[test]
fn reports_display_and_serialize() {
    let report = Report {
        profile: Profile::VsCode,
        tools: 2,
        findings: check(
            Profile::VsCode,
            Part::InputSchema,
            &json!({"type": "object", "properties": {"l": {"type": "array"}}}),
        )
        .into_iter()
        .map(|mut f| {
            f.tool = "t".into();
            f
        })
        .collect(),
    };
    assert_eq!(
        report.to_string(),
        "VS Code (GitHub Copilot Chat) (vscode): 1 error(s), 0 warning(s) in 1 of 2 tool(s)\n  error [vscode.array-items] tool `t` inputSchema at \"/properties/l\": field `l` is an array without `items` (fixed by sake: sake adds `items: {}` (any element); a `Vec<T>` of a concrete `T` tells the model more)\n"
    );
    assert_eq!(
        serde_json::to_value(&report).unwrap(),
        json!({
            "profile": "vscode",
            "tools": 2,
            "findings": [{
                "tool": "t",
                "part": "inputSchema",
                "pointer": "/properties/l",
                "rule": "vscode.array-items",
                "level": "error",
                "message": "field `l` is an array without `items`",
                "fix": {"automatic": true, "how": "sake adds `items: {}` (any element); a `Vec<T>` of a concrete `T` tells the model more"}
            }]
        })
    );
    assert!(!report.is_accepted());
}
