//! 2026-07-28 over Streamable HTTP, on the wire: exact statuses, content types and JSON-RPC
//! payloads for every success and error case of digest A6, A7.8 and A7.12. Every reply goes
//! through the schema validator of `common`.

mod common;

use common::{MODERN, Req, Wire, meta, sentinel};
use sake::prelude::*;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// The server under test

/// The sum of two numbers.
#[derive(Serialize, JsonSchema)]
struct Sum {
    /// `a + b`.
    sum: i64,
}

/// Adds two integers.
#[tool(annotations(read_only, idempotent))]
async fn add(
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
) -> Sum {
    Sum { sum: a + b }
}

/// Echoes the text back.
#[tool]
fn echo(
    /// What to echo.
    text: String,
) -> String {
    text
}

/// Fails on purpose, with the given reason.
#[tool]
fn fail(
    /// Why it fails.
    reason: String,
) -> Result<String, String> {
    Err(reason)
}

/// Reports `steps` steps of progress, then says it is done.
#[tool]
async fn progress(
    /// How many steps.
    steps: u32,
    ctx: Context,
) -> String {
    for i in 1..=steps {
        ctx.progress_message(f64::from(i), Some(f64::from(steps)), format!("step {i}"))
            .await;
    }
    format!("{steps} steps done")
}

/// Does nothing.
#[tool]
fn noop() {}

async fn complete_style(req: CompletionRequest) -> Vec<String> {
    ["formal", "friendly", "pirate"]
        .into_iter()
        .filter(|s| req.argument == "style" && s.starts_with(&req.value))
        .map(str::to_owned)
        .collect()
}

/// Greets someone.
#[prompt(complete = complete_style)]
fn greet(
    /// Who to greet.
    name: String,
    /// How to greet.
    style: Option<String>,
) -> Vec<PromptMessage> {
    let style = style.unwrap_or_else(|| "friendly".to_owned());
    vec![PromptMessage::user(format!(
        "Greet {name} in a {style} way."
    ))]
}

/// What this server is.
#[resource(uri = "docs://about", mime_type = "text/plain")]
fn about() -> &'static str {
    "The wire-test server."
}

/// A user's profile, by numeric id (users 1 and 2 exist).
#[resource(uri = "users://{id}/profile", mime_type = "application/json")]
async fn profile(id: u64) -> Result<String, ResourceError> {
    let name = match id {
        1 => "Ada",
        2 => "Grace",
        _ => return Err(ResourceError::NotFound(format!("users://{id}/profile"))),
    };
    Ok(json!({"id": id, "name": name}).to_string())
}

const NAME: &str = "wire";
const VERSION: &str = "1.2.3";

fn server() -> Server {
    Server::from_registry().name(NAME).version(VERSION)
}

fn wire() -> Wire {
    Wire::new(server())
}

/// `_meta` of every result.
fn server_meta() -> Value {
    json!({"io.modelcontextprotocol/serverInfo": {"name": NAME, "version": VERSION}})
}

/// A successful response, whole.
fn ok(id: impl Into<Value>, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id.into(), "result": result})
}

/// An error response, whole; `id` null means "no id member".
fn err(id: impl Into<Value>, code: i64, message: &str, data: Option<Value>) -> Value {
    let mut error = json!({"code": code, "message": message});
    if let Some(d) = data {
        error["data"] = d;
    }
    let mut resp = json!({"jsonrpc": "2.0", "error": error});
    let id = id.into();
    if !id.is_null() {
        resp["id"] = id;
    }
    resp
}

// ---------------------------------------------------------------------------------------------
// Successful requests

#[tokio::test]
async fn discover() {
    let w = wire();
    w.rpc(1, "server/discover", json!({})).await.assert_json(
        200,
        ok(
            1,
            json!({
                "resultType": "complete",
                "ttlMs": 60000,
                "cacheScope": "public",
                "_meta": server_meta(),
                "supportedVersions": ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"],
                "capabilities": {
                    "logging": {},
                    "completions": {},
                    "prompts": {},
                    "resources": {},
                    "tools": {},
                },
            }),
        ),
    );
}

#[tokio::test]
async fn discover_without_client_info_is_served() {
    let w = wire();
    let params = json!({"_meta": {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    }});
    let reply = w
        .send(Req::modern_exact("d", "server/discover", params))
        .await;
    let body = reply.json(200);
    assert_eq!(body["id"], "d");
    assert_eq!(body["result"]["resultType"], "complete");
}

fn tools() -> Value {
    json!([
        {
            "name": "add",
            "description": "Adds two integers.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "a": {"type": "integer", "description": "The first addend."},
                    "b": {"type": "integer", "description": "The second addend."},
                },
                "required": ["a", "b"],
            },
            "outputSchema": {
                "type": "object",
                "description": "The sum of two numbers.",
                "properties": {"sum": {"type": "integer", "description": "`a + b`."}},
                "required": ["sum"],
            },
            "annotations": {"readOnlyHint": true, "idempotentHint": true},
        },
        {
            "name": "echo",
            "description": "Echoes the text back.",
            "inputSchema": {
                "type": "object",
                "properties": {"text": {"type": "string", "description": "What to echo."}},
                "required": ["text"],
            },
        },
        {
            "name": "fail",
            "description": "Fails on purpose, with the given reason.",
            "inputSchema": {
                "type": "object",
                "properties": {"reason": {"type": "string", "description": "Why it fails."}},
                "required": ["reason"],
            },
        },
        {
            "name": "noop",
            "description": "Does nothing.",
            "inputSchema": {"type": "object", "properties": {}},
        },
        {
            "name": "progress",
            "description": "Reports `steps` steps of progress, then says it is done.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "steps": {"type": "integer", "description": "How many steps.", "minimum": 0},
                },
                "required": ["steps"],
            },
        },
    ])
}

/// A cacheable result (lists, reads, discover): `resultType`, hints, serverInfo, `fields`.
fn cacheable(fields: Value) -> Value {
    let mut r = json!({
        "resultType": "complete",
        "ttlMs": 60000,
        "cacheScope": "public",
        "_meta": server_meta(),
    });
    r.as_object_mut()
        .unwrap()
        .extend(fields.as_object().unwrap().clone());
    r
}

/// Any other result: `resultType`, serverInfo, `fields`.
fn complete(fields: Value) -> Value {
    let mut r = json!({"resultType": "complete", "_meta": server_meta()});
    r.as_object_mut()
        .unwrap()
        .extend(fields.as_object().unwrap().clone());
    r
}

#[tokio::test]
async fn tools_list() {
    wire()
        .rpc(2, "tools/list", json!({}))
        .await
        .assert_json(200, ok(2, cacheable(json!({"tools": tools()}))));
}

#[tokio::test]
async fn prompts_list() {
    wire().rpc(3, "prompts/list", json!({})).await.assert_json(
        200,
        ok(
            3,
            cacheable(json!({"prompts": [{
                "name": "greet",
                "description": "Greets someone.",
                "arguments": [
                    {"name": "name", "description": "Who to greet.", "required": true},
                    {"name": "style", "description": "How to greet.", "required": false},
                ],
            }]})),
        ),
    );
}

#[tokio::test]
async fn resources_list_and_templates_list() {
    let w = wire();
    w.rpc(4, "resources/list", json!({})).await.assert_json(
        200,
        ok(
            4,
            cacheable(json!({"resources": [{
                "uri": "docs://about",
                "name": "about",
                "description": "What this server is.",
                "mimeType": "text/plain",
            }]})),
        ),
    );
    w.rpc(5, "resources/templates/list", json!({}))
        .await
        .assert_json(
            200,
            ok(
                5,
                cacheable(json!({"resourceTemplates": [{
                    "uriTemplate": "users://{id}/profile",
                    "name": "profile",
                    "description": "A user's profile, by numeric id (users 1 and 2 exist).",
                    "mimeType": "application/json",
                }]})),
            ),
        );
}

#[tokio::test]
async fn resources_read_static_and_template() {
    let w = wire();
    w.rpc(6, "resources/read", json!({"uri": "docs://about"}))
        .await
        .assert_json(
            200,
            ok(
                6,
                cacheable(json!({"contents": [{
                    "uri": "docs://about",
                    "mimeType": "text/plain",
                    "text": "The wire-test server.",
                }]})),
            ),
        );
    w.rpc(7, "resources/read", json!({"uri": "users://2/profile"}))
        .await
        .assert_json(
            200,
            ok(
                7,
                cacheable(json!({"contents": [{
                    "uri": "users://2/profile",
                    "mimeType": "application/json",
                    "text": "{\"id\":2,\"name\":\"Grace\"}",
                }]})),
            ),
        );
}

#[tokio::test]
async fn prompts_get() {
    wire()
        .rpc(
            8,
            "prompts/get",
            json!({"name": "greet", "arguments": {"name": "Ada", "style": "formal"}}),
        )
        .await
        .assert_json(
            200,
            ok(
                8,
                complete(json!({"messages": [{
                    "role": "user",
                    "content": {"type": "text", "text": "Greet Ada in a formal way."},
                }]})),
            ),
        );
}

#[tokio::test]
async fn completion_complete() {
    wire()
        .rpc(
            9,
            "completion/complete",
            json!({
                "ref": {"type": "ref/prompt", "name": "greet"},
                "argument": {"name": "style", "value": "f"},
            }),
        )
        .await
        .assert_json(
            200,
            ok(
                9,
                complete(json!({"completion": {"values": ["formal", "friendly"]}})),
            ),
        );
}

#[tokio::test]
async fn tools_call_structured_output_is_plain_json() {
    wire()
        .rpc(
            10,
            "tools/call",
            json!({"name": "add", "arguments": {"a": 2, "b": 3}}),
        )
        .await
        .assert_json(
            200,
            ok(
                10,
                complete(json!({
                    "content": [{"type": "text", "text": "{\"sum\":5}"}],
                    "structuredContent": {"sum": 5},
                })),
            ),
        );
}

#[tokio::test]
async fn tools_call_without_arguments() {
    wire()
        .rpc(11, "tools/call", json!({"name": "noop"}))
        .await
        .assert_json(200, ok(11, complete(json!({"content": []}))));
}

#[tokio::test]
async fn a_tool_error_is_an_is_error_result() {
    wire()
        .rpc(
            12,
            "tools/call",
            json!({"name": "fail", "arguments": {"reason": "out of coffee"}}),
        )
        .await
        .assert_json(
            200,
            ok(
                12,
                complete(json!({
                    "content": [{"type": "text", "text": "out of coffee"}],
                    "isError": true,
                })),
            ),
        );
}

/// Digest Part E #2: argument validation failures are `isError` results (tools.mdx,
/// SEP-1303), not -32602 as the schema's example still shows.
#[tokio::test]
async fn invalid_arguments_are_an_is_error_result_naming_the_field() {
    let w = wire();
    w.rpc(
        13,
        "tools/call",
        json!({"name": "add", "arguments": {"a": "two", "b": 3}}),
    )
    .await
    .assert_json(
        200,
        ok(
            13,
            complete(json!({
                "content": [{"type": "text", "text": "Invalid arguments for tool `add`: `a`: invalid type: string \"two\", expected i64"}],
                "isError": true,
            })),
        ),
    );
    w.rpc(14, "tools/call", json!({"name": "add", "arguments": {"a": 1}}))
        .await
        .assert_json(
            200,
            ok(
                14,
                complete(json!({
                    "content": [{"type": "text", "text": "Invalid arguments for tool `add`: missing field `b`"}],
                    "isError": true,
                })),
            ),
        );
}

#[tokio::test]
async fn progress_streams_sse_then_the_result() {
    let reply = wire()
        .rpc(
            15,
            "tools/call",
            json!({"name": "progress", "arguments": {"steps": 3}, "_meta": {"progressToken": "tok-1"}}),
        )
        .await;
    let expected: Vec<Value> = (1..=3)
        .map(|i| {
            json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {
                "progressToken": "tok-1",
                "progress": f64::from(i),
                "total": 3.0,
                "message": format!("step {i}"),
            }})
        })
        .chain([ok(
            15,
            complete(json!({"content": [{"type": "text", "text": "3 steps done"}]})),
        )])
        .collect();
    assert_eq!(reply.sse(), expected.as_slice());
    // Progress never goes down; no event ids (no resumability in 2026-07-28).
    let values: Vec<f64> = reply.messages[..3]
        .iter()
        .map(|m| m["params"]["progress"].as_f64().unwrap())
        .collect();
    assert!(values.windows(2).all(|w| w[0] <= w[1]), "{values:?}");
    assert!(
        reply.events.iter().all(|e| e.fields.is_empty()),
        "{:?}",
        reply.events
    );
}

#[tokio::test]
async fn an_integer_progress_token_is_echoed_as_an_integer() {
    let reply = wire()
        .rpc(
            16,
            "tools/call",
            json!({"name": "progress", "arguments": {"steps": 1}, "_meta": {"progressToken": 7}}),
        )
        .await;
    let messages = reply.sse();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0]["params"]["progressToken"], json!(7));
}

#[tokio::test]
async fn without_a_progress_token_the_answer_is_plain_json() {
    wire()
        .rpc(
            17,
            "tools/call",
            json!({"name": "progress", "arguments": {"steps": 3}}),
        )
        .await
        .assert_json(
            200,
            ok(
                17,
                complete(json!({"content": [{"type": "text", "text": "3 steps done"}]})),
            ),
        );
}

#[tokio::test]
async fn a_progress_token_without_progress_is_plain_json() {
    wire()
        .rpc(
            18,
            "tools/call",
            json!({"name": "add", "arguments": {"a": 1, "b": 1}, "_meta": {"progressToken": "t"}}),
        )
        .await
        .assert_json(
            200,
            ok(
                18,
                complete(json!({
                    "content": [{"type": "text", "text": "{\"sum\":2}"}],
                    "structuredContent": {"sum": 2},
                })),
            ),
        );
}

#[tokio::test]
async fn a_notification_is_accepted_with_an_empty_202() {
    wire()
        .send(Req::modern_notification(
            "notifications/cancelled",
            json!({"requestId": 1}),
        ))
        .await
        .assert_accepted();
}

#[tokio::test]
async fn a_session_id_is_ignored_and_never_echoed() {
    let reply = wire()
        .send(Req::modern(19, "tools/list", json!({})).header("mcp-session-id", "abc"))
        .await;
    assert_eq!(reply.json(200)["id"], 19);
    assert_eq!(reply.header("mcp-session-id"), None);
}

// ---------------------------------------------------------------------------------------------
// JSON-RPC framing errors (digest A7.12 steps 2–4)

#[tokio::test]
async fn parse_error() {
    let w = wire();
    for (body, message) in [
        (
            &b"{\"jsonrpc\": \"2.0\", "[..],
            "Parse error: EOF while parsing a value at line 1 column 19",
        ),
        (b"hello", "Parse error: expected value at line 1 column 1"),
        (
            b"",
            "Parse error: EOF while parsing a value at line 1 column 0",
        ),
    ] {
        w.send(Req::modern(1, "tools/list", json!({})).body(body))
            .await
            .assert_json(400, err(Value::Null, -32700, message, None));
    }
}

/// Digest A7.3 REC: a batch or a response on the modern path is -32600 with HTTP 400.
#[tokio::test]
async fn invalid_requests() {
    let w = wire();
    let list = Req::modern(1, "tools/list", json!({}));
    let cases: Vec<(Value, Value)> = vec![
        (
            json!([{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta()}}]),
            err(
                Value::Null,
                -32600,
                "Invalid request: a JSON-RPC batch (array) is only accepted inside a 2025-03-26 session",
                None,
            ),
        ),
        (
            json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
            err(
                Value::Null,
                -32600,
                "Invalid request: Bad Request: a response is only accepted inside a session that sent a request",
                None,
            ),
        ),
        (
            json!({"id": 1, "method": "tools/list", "params": {"_meta": meta()}}),
            err(
                1,
                -32600,
                "Invalid request: `jsonrpc` must be \"2.0\"",
                None,
            ),
        ),
        (
            json!({"jsonrpc": "1.0", "id": "x", "method": "tools/list", "params": {"_meta": meta()}}),
            err(
                "x",
                -32600,
                "Invalid request: `jsonrpc` must be \"2.0\"",
                None,
            ),
        ),
        (
            json!({"jsonrpc": "2.0", "id": null, "method": "tools/list", "params": {"_meta": meta()}}),
            err(
                Value::Null,
                -32600,
                "Invalid request: `id` must be a string or an integer, not null",
                None,
            ),
        ),
        (
            json!({"jsonrpc": "2.0", "id": 1.5, "method": "tools/list", "params": {"_meta": meta()}}),
            err(
                Value::Null,
                -32600,
                "Invalid request: `id` must be a string or an integer, not 1.5",
                None,
            ),
        ),
        (
            json!({"jsonrpc": "2.0", "id": 2, "method": 3, "params": {"_meta": meta()}}),
            err(
                2,
                -32600,
                "Invalid request: `method` must be a string, not 3",
                None,
            ),
        ),
        (
            json!({"jsonrpc": "2.0", "id": 2}),
            err(
                2,
                -32600,
                "Invalid request: a message needs a `method` (request or notification) or exactly one of `result` and `error` (response)",
                None,
            ),
        ),
        (
            json!("tools/list"),
            err(
                Value::Null,
                -32600,
                "Invalid request: a message must be a JSON object (invalid type: string \"tools/list\", expected struct Envelope at line 1 column 12)",
                None,
            ),
        ),
    ];
    for (body, expected) in cases {
        w.send(list.clone().body(serde_json::to_vec(&body).unwrap()))
            .await
            .assert_json(400, expected);
    }
}

// ---------------------------------------------------------------------------------------------
// The harness's validator rejects what the schema forbids

#[test]
#[should_panic(expected = "violates JSONRPCResultResponse")]
fn the_validator_rejects_a_result_without_result_type() {
    common::validate(
        MODERN,
        Some("tools/list"),
        &json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}),
    );
}

#[test]
#[should_panic(expected = "violates ListToolsResult")]
fn the_validator_rejects_a_list_without_cache_hints() {
    common::validate(
        MODERN,
        Some("tools/list"),
        &json!({"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete", "tools": []}}),
    );
}

#[test]
#[should_panic(expected = "violates JSONRPCErrorResponse")]
fn the_validator_rejects_a_null_error_id() {
    common::validate(
        MODERN,
        None,
        &json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "x"}}),
    );
}

#[test]
#[should_panic(expected = "violates UnsupportedProtocolVersionError")]
fn the_validator_checks_error_data_by_code() {
    common::validate(
        MODERN,
        None,
        &json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32022, "message": "x"}}),
    );
}

#[test]
#[should_panic(expected = "violates ProgressNotification")]
fn the_validator_checks_notifications() {
    common::validate(
        MODERN,
        Some("tools/call"),
        &json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}),
    );
}

#[test]
#[should_panic(expected = "sent a JSON-RPC request")]
fn the_validator_rejects_server_requests() {
    common::validate(
        MODERN,
        Some("tools/call"),
        &json!({"jsonrpc": "2.0", "id": 1, "method": "elicitation/create", "params": {}}),
    );
}

#[test]
fn sse_parsing_joins_data_lines_and_skips_comments() {
    let events = common::parse_sse(
        ": keep-alive\n\nevent: message\ndata: {\"a\":\ndata: 1}\n\ndata: 2\r\n\r\n",
    );
    assert_eq!(
        events,
        [
            common::SseEvent {
                data: Some("{\"a\":\n1}".into()),
                fields: vec![("event".into(), "message".into())],
            },
            common::SseEvent {
                data: Some("2".into()),
                fields: vec![],
            },
        ]
    );
}
