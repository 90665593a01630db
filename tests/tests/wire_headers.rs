//! `x-mcp-header` tool arguments and their `Mcp-Param-*` headers (2026-07-28 Streamable HTTP transport, "Server Validation" and `x-mcp-header`): the
//! schema annotation `#[arg(header = "…")]` produces, every header check a 2026-07-28 server
//! makes (400 + -32020), and the registry's start-up refusal of invalid annotations in
//! hand-written schemas. Every reply is validated against the 2026-07-28 schema.

use sake::prelude::*;
use sake::registry::{Location, TaskSupport, ToolDef, ToolFuture, ToolHints, ToolUiDef};
use sake_tests::rpc::{err, ok, text_result};
use sake_tests::stream::Live;
use sake_tests::{Req, Wire, sentinel};
use serde_json::value::RawValue;
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// The server under test

/// Echoes the region.
#[tool]
fn regional(
    /// Where to run.
    #[arg(header = "Region")]
    region: String,
) -> String {
    format!("region={region}")
}

/// Echoes the page size.
#[tool]
fn paged(
    /// How many items.
    #[arg(header = "Limit")]
    limit: i64,
) -> String {
    format!("limit={limit}")
}

/// Echoes the switch.
#[tool]
fn switch(
    /// Whether to change nothing.
    #[arg(header = "Dry-Run")]
    dry_run: bool,
) -> String {
    format!("dry_run={dry_run}")
}

/// Echoes the zone, if any.
#[tool]
fn zoned(
    /// The zone.
    #[arg(header = "Zone")]
    zone: Option<String>,
) -> String {
    format!("zone={}", zone.as_deref().unwrap_or("none"))
}

fn nested_schema() -> Value {
    json!({"type": "object", "properties": {"target": {
        "type": "object",
        "properties": {"zone": {"type": "string", "x-mcp-header": "Target-Zone"}},
    }}})
}

/// Echoes a nested value mirrored in a header.
#[tool(input_schema = nested_schema)]
fn nested(target: Value) -> String {
    format!("target={target}")
}

const SERVER: (&str, &str) = ("headers", "0.3.0");

fn wire() -> Wire {
    Wire::new(Server::from_registry().name(SERVER.0).version(SERVER.1))
}

fn text(t: &str) -> Value {
    text_result(SERVER, t)
}

/// A `tools/call` with these arguments and no `Mcp-Param-*` header.
fn call(id: i64, tool: &str, arguments: Value) -> Req {
    Req::modern(
        id,
        "tools/call",
        json!({"name": tool, "arguments": arguments}),
    )
}

fn mismatch(id: i64, message: &str) -> Value {
    err(id, -32020, &format!("Header mismatch: {message}"), None)
}

// ---------------------------------------------------------------------------------------------
// The annotation in the schema

#[tokio::test]
async fn header_arguments_carry_x_mcp_header_in_the_schema() {
    let reply = wire().rpc(1, "tools/list", json!({})).await;
    let tools = reply.json(200)["result"]["tools"]
        .as_array()
        .unwrap()
        .clone();
    let schema = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} is listed"))["inputSchema"]
            .clone()
    };
    let one = |prop: &str, body: Value, required: bool| {
        let mut s = json!({"type": "object", "properties": {prop: body}});
        if required {
            s["required"] = json!([prop]);
        }
        s
    };
    assert_eq!(
        schema("regional"),
        one(
            "region",
            json!({"type": "string", "description": "Where to run.", "x-mcp-header": "Region"}),
            true
        )
    );
    assert_eq!(
        schema("paged"),
        one(
            "limit",
            json!({"type": "integer", "description": "How many items.", "x-mcp-header": "Limit"}),
            true
        )
    );
    assert_eq!(
        schema("switch"),
        one(
            "dry_run",
            json!({"type": "boolean", "description": "Whether to change nothing.", "x-mcp-header": "Dry-Run"}),
            true
        )
    );
    // `Option<T>`: not required, still a plain `string` (never a null union).
    assert_eq!(
        schema("zoned"),
        one(
            "zone",
            json!({"type": "string", "description": "The zone.", "x-mcp-header": "Zone"}),
            false
        )
    );
    assert_eq!(schema("nested"), nested_schema());
}

// ---------------------------------------------------------------------------------------------
// Strings and the Base64 sentinel

#[tokio::test]
async fn string_values_plain_and_base64_encoded() {
    let w = wire();
    for (id, body, header) in [
        // The conformance suite's valid sentinel.
        (1, "Hello", "=?base64?SGVsbG8=?=".to_owned()),
        (2, "Zürich", sentinel("Zürich".as_bytes())),
        // Values a client must encode: surrounding spaces, a tab, a line break.
        (3, " padded ", sentinel(b" padded ")),
        (4, "us\twest", sentinel(b"us\twest")),
        (5, "a\r\nb", sentinel(b"a\r\nb")),
        // Interior spaces stay plain.
        (6, "us west 1", "us west 1".to_owned()),
        // Literal, not sentinels: the prefix or suffix is missing or not lowercase.
        (7, "SGVsbG8=", "SGVsbG8=".to_owned()),
        (8, "=?base64?SGVsbG8=", "=?base64?SGVsbG8=".to_owned()),
        (9, "SGVsbG8=?=", "SGVsbG8=?=".to_owned()),
        (10, "=?BASE64?SGVsbG8=?=", "=?BASE64?SGVsbG8=?=".to_owned()),
        // A value that looks like a sentinel travels encoded.
        (11, "=?base64?x?=", sentinel(b"=?base64?x?=")),
        // The empty string.
        (12, "", String::new()),
        (13, "", "=?base64??=".to_owned()),
    ] {
        w.send(call(id, "regional", json!({"region": body})).header("Mcp-Param-Region", &header))
            .await
            .assert_json(200, ok(id, text(&format!("region={body}"))));
    }
}

#[tokio::test]
async fn an_invalid_base64_value_is_header_mismatch_400() {
    let w = wire();
    for (id, header, why) in [
        // The conformance suite's two: missing padding, characters outside the alphabet.
        (
            1,
            "=?base64?SGVsbG8?=",
            "is not valid padded standard Base64",
        ),
        (
            2,
            "=?base64?SGVs!!!bG8=?=",
            "is not valid padded standard Base64",
        ),
        // The URL-safe alphabet is not the standard one.
        (3, "=?base64?_w==?=", "is not valid padded standard Base64"),
        // Bytes that are not UTF-8.
        (4, "=?base64?/w==?=", "does not decode to UTF-8"),
    ] {
        w.send(call(id, "regional", json!({"region": "Hello"})).header("Mcp-Param-Region", header))
            .await
            .assert_json(
                400,
                mismatch(
                    id,
                    &format!("the Mcp-Param-Region header's Base64 value {header:?} {why}"),
                ),
            );
    }
}

#[tokio::test]
async fn surrounding_whitespace_is_trimmed_and_control_characters_refused() {
    let w = wire();
    for (id, header) in [
        (1, "  eu-west-1"),
        (2, "eu-west-1\t"),
        (3, " \t eu-west-1 \t "),
    ] {
        w.send(
            call(id, "regional", json!({"region": "eu-west-1"})).header("Mcp-Param-Region", header),
        )
        .await
        .assert_json(200, ok(id, text("region=eu-west-1")));
    }
    // A tab inside the value, or bytes beyond ASCII, must travel as Base64.
    for (id, header) in [
        (4, &b"us\twest"[..]),
        (5, "Zürich".as_bytes()),
        (6, &b"caf\xe9"[..]),
    ] {
        let body = String::from_utf8_lossy(header).into_owned();
        w.send(
            call(id, "regional", json!({"region": body})).header_bytes("Mcp-Param-Region", header),
        )
        .await
        .assert_json(
            400,
            mismatch(
                id,
                "the Mcp-Param-Region header holds characters that are not visible ASCII; encode such values as =?base64?…?=",
            ),
        );
    }
}

#[tokio::test]
async fn header_names_are_case_insensitive_on_the_wire() {
    let live = Live::start(Server::from_registry().name(SERVER.0).version(SERVER.1)).await;
    for (id, name) in [
        (1, "MCP-PARAM-REGION"),
        (2, "mcp-param-region"),
        (3, "Mcp-Param-Region"),
        (4, "mCp-PaRaM-rEgIoN"),
    ] {
        let req = call(id, "regional", json!({"region": "eu"})).header("Mcp-Param-Region", "eu");
        let bytes = String::from_utf8(req.to_http1())
            .unwrap()
            .replace("mcp-param-region:", &format!("{name}:"))
            .replace("mcp-method:", "MCP-METHOD:")
            .replace("mcp-name:", "mcp-NAME:");
        assert!(bytes.contains(name));
        let reply = live.open_bytes(bytes.as_bytes()).await;
        assert_eq!(reply.status, 200);
        assert_eq!(reply.json().await, ok(id, text("region=eu")));
    }
    // A mismatch is one whatever the header's spelling.
    let req = call(5, "regional", json!({"region": "eu"})).header("Mcp-Param-Region", "us");
    let bytes = String::from_utf8(req.to_http1())
        .unwrap()
        .replace("mcp-param-region:", "MCP-PARAM-REGION:");
    let reply = live.open_bytes(bytes.as_bytes()).await;
    assert_eq!(reply.status, 400);
    assert_eq!(
        reply.json().await,
        mismatch(
            5,
            "Mcp-Param-Region header value \"us\" does not match body value \"eu\""
        )
    );
}

// ---------------------------------------------------------------------------------------------
// Present, absent, equal

#[tokio::test]
async fn a_value_in_the_body_needs_its_header() {
    let w = wire();
    w.send(call(1, "regional", json!({"region": "eu"})))
        .await
        .assert_json(
            400,
            mismatch(1, "missing Mcp-Param-Region header for argument `region`"),
        );
    w.send(call(2, "zoned", json!({"zone": "z1"})))
        .await
        .assert_json(
            400,
            mismatch(2, "missing Mcp-Param-Zone header for argument `zone`"),
        );
    w.send(call(3, "nested", json!({"target": {"zone": "z1"}})))
        .await
        .assert_json(
            400,
            mismatch(
                3,
                "missing Mcp-Param-Target-Zone header for argument `target.zone`",
            ),
        );
    // An undeclared Mcp-Param header does not stand in for a declared one.
    w.send(call(4, "regional", json!({"region": "eu"})).header("Mcp-Param-Zone", "eu"))
        .await
        .assert_json(
            400,
            mismatch(4, "missing Mcp-Param-Region header for argument `region`"),
        );
}

#[tokio::test]
async fn a_header_without_a_value_in_the_body_is_header_mismatch() {
    let w = wire();
    for (id, arguments) in [(1, json!({})), (2, json!({"zone": null})), (3, Value::Null)] {
        w.send(call(id, "zoned", arguments).header("Mcp-Param-Zone", "z1"))
            .await
            .assert_json(
                400,
                mismatch(
                    id,
                    "Mcp-Param-Zone is present but argument `zone` has no value",
                ),
            );
    }
    w.send(call(4, "nested", json!({"target": {}})).header("Mcp-Param-Target-Zone", "z1"))
        .await
        .assert_json(
            400,
            mismatch(
                4,
                "Mcp-Param-Target-Zone is present but argument `target.zone` has no value",
            ),
        );
    // Without the value and without the header, the call goes through.
    for (id, arguments) in [(5, json!({})), (6, json!({"zone": null}))] {
        w.send(call(id, "zoned", arguments))
            .await
            .assert_json(200, ok(id, text("zone=none")));
    }
    w.send(call(7, "nested", json!({"target": {}})))
        .await
        .assert_json(200, ok(7, text("target={}")));
}

#[tokio::test]
async fn a_header_that_differs_from_the_body_is_header_mismatch() {
    let w = wire();
    for (id, header) in [(1, "us"), (2, "EU"), (3, "e u"), (4, "eu-west")] {
        w.send(call(id, "regional", json!({"region": "eu"})).header("Mcp-Param-Region", header))
            .await
            .assert_json(
                400,
                mismatch(
                    id,
                    &format!(
                        "Mcp-Param-Region header value {header:?} does not match body value \"eu\""
                    ),
                ),
            );
    }
}

#[tokio::test]
async fn nested_values_are_read_at_their_path() {
    wire()
        .send(
            call(1, "nested", json!({"target": {"zone": "z1"}}))
                .header("Mcp-Param-Target-Zone", "z1"),
        )
        .await
        .assert_json(200, ok(1, text(r#"target={"zone":"z1"}"#)));
}

// ---------------------------------------------------------------------------------------------
// Integers and booleans

#[tokio::test]
async fn integers_are_compared_as_numbers() {
    let w = wire();
    for (id, body, header) in [
        (1, 42_i64, "42"),
        (2, 42, "42.0"),
        (3, 42, "4.2e1"),
        (4, 42, " 42 "),
        (5, -7, "-7"),
        (6, 0, "-0"),
        (7, 9_007_199_254_740_991, "9007199254740991"),
    ] {
        w.send(call(id, "paged", json!({"limit": body})).header("Mcp-Param-Limit", header))
            .await
            .assert_json(200, ok(id, text(&format!("limit={body}"))));
    }
    for (id, header) in [
        (10, "43"),
        (11, "42.5"),
        (12, "forty-two"),
        (13, ""),
        (14, "0x2a"),
    ] {
        w.send(call(id, "paged", json!({"limit": 42})).header("Mcp-Param-Limit", header))
            .await
            .assert_json(
                400,
                mismatch(
                    id,
                    &format!(
                        "Mcp-Param-Limit header value {header:?} does not match body value 42"
                    ),
                ),
            );
    }
}

#[tokio::test]
async fn booleans_are_true_or_false() {
    let w = wire();
    for (id, body) in [(1, true), (2, false)] {
        w.send(
            call(id, "switch", json!({"dry_run": body}))
                .header("Mcp-Param-Dry-Run", &body.to_string()),
        )
        .await
        .assert_json(200, ok(id, text(&format!("dry_run={body}"))));
    }
    for (id, header) in [(3, "false"), (4, "TRUE"), (5, "True"), (6, "1"), (7, "yes")] {
        w.send(call(id, "switch", json!({"dry_run": true})).header("Mcp-Param-Dry-Run", header))
            .await
            .assert_json(
                400,
                mismatch(
                    id,
                    &format!(
                        "Mcp-Param-Dry-Run header value {header:?} does not match body value true"
                    ),
                ),
            );
    }
}

// ---------------------------------------------------------------------------------------------
// Start-up refusal of invalid annotations in hand-written schemas

fn never_called(_: Option<&RawValue>, _: Context) -> ToolFuture {
    Box::pin(async { CallToolResult::error("never called") })
}

fn no_output() -> Option<Value> {
    None
}

const HINTS: ToolHints = ToolHints {
    title: None,
    read_only: None,
    destructive: None,
    idempotent: None,
    open_world: None,
};

const HERE: Location = Location {
    file: "tests/wire_headers.rs",
    line: 1,
    module: "wire_headers",
};

macro_rules! hand_written {
    ($def:ident, $name:literal, $schema:expr) => {
        static $def: ToolDef = ToolDef {
            name: $name,
            title: None,
            description: "A tool with a hand-written input schema.",
            hints: HINTS,
            icons: &[],
            input_schema: {
                fn schema() -> Value {
                    $schema
                }
                schema
            },
            output_schema: no_output,
            call: never_called,
            requires: &[],
            scopes: &[],
            principal: false,
            task_support: TaskSupport::Forbidden,
            context: false,
            ui: ToolUiDef::NONE,
            states: Vec::new,
            location: HERE,
        };
    };
}

hand_written!(
    ON_NUMBER,
    "on_number",
    json!({"type": "object", "properties": {"amount": {"type": "number", "x-mcp-header": "Amount"}}})
);
hand_written!(
    ON_OBJECT,
    "on_object",
    json!({"type": "object", "properties": {"filter": {"type": "object", "x-mcp-header": "Filter"}}})
);
hand_written!(
    UNDER_ITEMS,
    "under_items",
    json!({"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string", "x-mcp-header": "Tag"}}}})
);
hand_written!(
    UNDER_ANY_OF,
    "under_any_of",
    json!({"type": "object", "anyOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}]})
);
hand_written!(
    UNDER_DEFS,
    "under_defs",
    json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/a"}}, "$defs": {"a": {"type": "string", "x-mcp-header": "A"}}})
);
hand_written!(
    DUPLICATE,
    "duplicate",
    json!({"type": "object", "properties": {
        "a": {"type": "string", "x-mcp-header": "Region"},
        "b": {"type": "string", "x-mcp-header": "REGION"},
    }})
);
hand_written!(
    WITH_SPACE,
    "with_space",
    json!({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "Bad Name"}}})
);
hand_written!(
    WITH_COLON,
    "with_colon",
    json!({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "a:b"}}})
);
hand_written!(
    NON_ASCII,
    "non_ascii",
    json!({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": "Région"}}})
);
hand_written!(
    EMPTY,
    "empty",
    json!({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": ""}}})
);
hand_written!(
    NOT_A_STRING,
    "not_a_string",
    json!({"type": "object", "properties": {"a": {"type": "string", "x-mcp-header": 5}}})
);
hand_written!(
    VALID,
    "valid",
    json!({"type": "object", "properties": {
        "a": {"type": "string", "x-mcp-header": "A"},
        "deep": {"type": "object", "properties": {"b": {"type": "boolean", "x-mcp-header": "B"}}},
        "x-mcp-header": {"type": "string"},
    }})
);

#[tokio::test]
async fn invalid_annotations_stop_the_server_naming_the_tool() {
    let at = "tests/wire_headers.rs:1 (wire_headers)";
    for (def, reason) in [
        (
            &ON_NUMBER,
            "`x-mcp-header` \"Amount\" is on `amount`, which is not a string, integer or boolean",
        ),
        (
            &ON_OBJECT,
            "`x-mcp-header` \"Filter\" is on `filter`, which is not a string, integer or boolean",
        ),
        (
            &UNDER_ITEMS,
            "`x-mcp-header` \"Tag\" is on `tags.items`, which is not a property reached from the root through `properties` alone",
        ),
        (
            &UNDER_ANY_OF,
            "`x-mcp-header` \"A\" is on `anyOf[0].a`, which is not a property reached from the root through `properties` alone",
        ),
        (
            &UNDER_DEFS,
            "`x-mcp-header` \"A\" is on `$defs.a`, which is not a property reached from the root through `properties` alone",
        ),
        (
            &DUPLICATE,
            "`x-mcp-header` \"REGION\" is used twice (header names are case-insensitive)",
        ),
        (
            &WITH_SPACE,
            "`x-mcp-header` \"Bad Name\" is not a valid header name",
        ),
        (
            &WITH_COLON,
            "`x-mcp-header` \"a:b\" is not a valid header name",
        ),
        (
            &NON_ASCII,
            "`x-mcp-header` \"Région\" is not a valid header name",
        ),
        (&EMPTY, "`x-mcp-header` \"\" is not a valid header name"),
        (&NOT_A_STRING, "`x-mcp-header` of `a` is not a string"),
    ] {
        let e = sake::Registry::from_defs([def], [], []).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("tool `{}` at {at}: {reason}", def.name)
        );
        // The server does not build either, whatever else it serves.
        let e = sake::Registry::from_defs([&VALID, def], [], []).unwrap_err();
        assert!(
            e.to_string().starts_with(&format!("tool `{}` ", def.name)),
            "{e}"
        );
    }
    // A valid hand-written schema (a nested property; a property *named* x-mcp-header).
    let w = Wire::new(Server::with_registry(
        sake::Registry::from_defs([&VALID], [], []).unwrap(),
    ));
    let reply = w
        .send(
            Req::modern(
                1,
                "tools/call",
                json!({"name": "valid", "arguments": {"a": "x", "deep": {"b": false}}}),
            )
            .header("Mcp-Param-A", "x"),
        )
        .await;
    assert_eq!(
        reply.json(400)["error"]["message"],
        "Header mismatch: missing Mcp-Param-B header for argument `deep.b`"
    );
}
