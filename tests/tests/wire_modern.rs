//! 2026-07-28 over Streamable HTTP, on the wire: exact statuses, content types and JSON-RPC
//! payloads for every success and error case of the 2026-07-28 error codes, HTTP statuses and request validation order. Every reply goes
//! through the schema validator of the harness (`sake_tests::schema`).

use sake::prelude::*;
use sake_tests::fixtures::Sum;
use sake_tests::rpc::ok;
use sake_tests::{MODERN, Req, Wire, meta, sentinel};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// The server under test

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

#[path = "../fixtures/echo.rs"]
mod echo;

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

#[path = "../fixtures/noop.rs"]
mod noop;

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
                    "prompts": {"listChanged": true},
                    "resources": {"subscribe": true, "listChanged": true},
                    "tools": {"listChanged": true},
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

/// Argument validation failures are `isError` results (2026-07-28 server/tools, SEP-1303),
/// not -32602 as the schema's example still shows.
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
// JSON-RPC framing errors (the 2026-07-28 request validation order)

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

/// 2026-07-28 Streamable HTTP transport: a batch or a response on the modern path is -32600 with HTTP 400.
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
                "Invalid request: Bad Request: no Mcp-Session-Id; notifications and responses belong to a session",
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
// `_meta` (2026-07-28 `_meta` "Per-request protocol fields", the first check of a request): -32602 with HTTP 400, the id echoed

#[tokio::test]
async fn missing_or_malformed_meta_is_invalid_params_400() {
    let w = wire();
    let pv = "io.modelcontextprotocol/protocolVersion";
    let caps = "io.modelcontextprotocol/clientCapabilities";
    let help = "2026-07-28 requests carry `params._meta` with `io.modelcontextprotocol/protocolVersion` (a string) and `io.modelcontextprotocol/clientCapabilities` (an object)";
    let cases: Vec<(Value, String)> = vec![
        (
            json!({}),
            format!("Invalid params: missing `_meta`; {help}"),
        ),
        (
            json!({"_meta": {caps: {}}}),
            format!("Invalid params: missing `_meta[\"{pv}\"]`; {help}"),
        ),
        (
            json!({"_meta": {pv: MODERN}}),
            format!("Invalid params: missing `_meta[\"{caps}\"]` (send {{}} for none); {help}"),
        ),
        (
            json!({"_meta": {pv: 20260728, caps: {}}}),
            format!("Invalid params: `_meta[\"{pv}\"]` must be a string"),
        ),
        (
            json!({"_meta": {pv: MODERN, caps: []}}),
            format!("Invalid params: `_meta[\"{caps}\"]` must be an object"),
        ),
        (
            json!({"_meta": {pv: MODERN, caps: "all"}}),
            format!("Invalid params: `_meta[\"{caps}\"]` must be an object"),
        ),
        (
            json!({"_meta": []}),
            format!("Invalid params: `_meta` must be an object; {help}"),
        ),
        (
            json!({"_meta": {pv: MODERN, caps: {}, "io.modelcontextprotocol/logLevel": "loud"}}),
            "Invalid params: `_meta[\"io.modelcontextprotocol/logLevel\"]` must be one of debug, info, notice, warning, error, critical, alert, emergency; got \"loud\""
                .to_owned(),
        ),
        (
            json!({"_meta": {pv: MODERN, caps: {}, "progressToken": 1.5}}),
            "Invalid params: `_meta.progressToken` must be a string or an integer, not 1.5"
                .to_owned(),
        ),
    ];
    for (params, message) in cases {
        w.send(Req::modern_exact(7, "server/discover", params))
            .await
            .assert_json(400, err(7, -32602, &message, None));
    }
    // `params` that are not an object at all.
    w.send(Req::modern_exact("p", "server/discover", json!([])))
        .await
        .assert_json(
            400,
            err(
                "p",
                -32602,
                "Invalid params: `params` must be a JSON object, not []",
                None,
            ),
        );
}

// ---------------------------------------------------------------------------------------------
// MCP-Protocol-Version (A7.12 steps 6–8)

#[tokio::test]
async fn a_missing_version_header_is_header_mismatch_400() {
    wire()
        .send(Req::modern(1, "tools/list", json!({})).without("MCP-Protocol-Version"))
        .await
        .assert_json(
            400,
            err(
                1,
                -32020,
                "Header mismatch: missing MCP-Protocol-Version header; send the same version as _meta[\"io.modelcontextprotocol/protocolVersion\"]",
                None,
            ),
        );
}

#[tokio::test]
async fn an_unsupported_version_is_32022_400_naming_the_served_versions() {
    let w = wire();
    let discover = w.rpc(1, "server/discover", json!({})).await;
    let supported = discover.json(200)["result"]["supportedVersions"].clone();
    // Conformance probe 301: the header and `_meta` both name an unknown version.
    let reply = w
        .send(
            Req::modern(
                301,
                "server/discover",
                json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "v999.0.0"}}),
            )
            .header("MCP-Protocol-Version", "v999.0.0"),
        )
        .await;
    reply.assert_json(
        400,
        err(
            301,
            -32022,
            "Unsupported protocol version \"v999.0.0\"",
            Some(json!({"supported": supported, "requested": "v999.0.0"})),
        ),
    );
    // An unknown header takes precedence over a header/_meta mismatch.
    w.send(Req::modern(2, "tools/list", json!({})).header("MCP-Protocol-Version", "1900-01-01"))
        .await
        .assert_json(
            400,
            err(
                2,
                -32022,
                "Unsupported protocol version \"1900-01-01\"",
                Some(json!({"supported": supported, "requested": "1900-01-01"})),
            ),
        );
}

#[tokio::test]
async fn a_version_header_different_from_meta_is_header_mismatch_400() {
    let w = wire();
    // Conformance probe 302: supported header, unknown `_meta` version.
    w.send(Req::modern(
        302,
        "server/discover",
        json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "v999.0.0"}}),
    ))
    .await
    .assert_json(
        400,
        err(
            302,
            -32020,
            "Header mismatch: MCP-Protocol-Version header value \"2026-07-28\" does not match body value \"v999.0.0\"",
            None,
        ),
    );
    // A served handshake revision in the header and 2026-07-28 in `_meta` disagree too: the
    // header names a version the server supports, so this is a mismatch, not -32022.
    w.send(Req::modern(3, "tools/list", json!({})).header("MCP-Protocol-Version", "2025-11-25"))
        .await
        .assert_json(
            400,
            err(
                3,
                -32020,
                "Header mismatch: MCP-Protocol-Version header value \"2025-11-25\" does not match body value \"2026-07-28\"",
                None,
            ),
        );
}

// ---------------------------------------------------------------------------------------------
// Mcp-Method and Mcp-Name (A7.4–A7.6, A7.12 steps 9–10)

#[tokio::test]
async fn mcp_method_missing_mismatched_or_wrong_case_is_header_mismatch_400() {
    let w = wire();
    let list = || Req::modern(1, "tools/list", json!({}));
    w.send(list().without("Mcp-Method")).await.assert_json(
        400,
        err(
            1,
            -32020,
            "Header mismatch: missing Mcp-Method header; send Mcp-Method: tools/list",
            None,
        ),
    );
    for value in ["prompts/list", "TOOLS/LIST", "tools/list/", ""] {
        w.send(list().header("Mcp-Method", value)).await.assert_json(
            400,
            err(
                1,
                -32020,
                &format!(
                    "Header mismatch: Mcp-Method header value {value:?} does not match body value \"tools/list\""
                ),
                None,
            ),
        );
    }
}

#[tokio::test]
async fn header_names_are_case_insensitive_and_values_trimmed() {
    let w = wire();
    for name in ["mcp-method", "MCP-METHOD", "Mcp-Method"] {
        let reply = w
            .send(
                Req::modern(1, "tools/list", json!({}))
                    .without("Mcp-Method")
                    .header(name, "tools/list"),
            )
            .await;
        assert_eq!(reply.json(200)["result"]["tools"], tools());
    }
    let reply = w
        .send(
            Req::modern(
                2,
                "tools/call",
                json!({"name": "add", "arguments": {"a": 1, "b": 2}}),
            )
            .header("Mcp-Method", " \ttools/call ")
            .header("mcp-name", "  add  ")
            .header("mcp-protocol-version", " 2026-07-28"),
        )
        .await;
    assert_eq!(
        reply.json(200)["result"]["structuredContent"],
        json!({"sum": 3})
    );
}

#[tokio::test]
async fn mcp_name_missing_or_mismatched_is_header_mismatch_400() {
    let w = wire();
    let call = || {
        Req::modern(
            5,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "hi"}}),
        )
    };
    w.send(call().without("Mcp-Name")).await.assert_json(
        400,
        err(
            5,
            -32020,
            "Header mismatch: missing Mcp-Name header; send the request's `name`",
            None,
        ),
    );
    w.send(call().header("Mcp-Name", "add")).await.assert_json(
        400,
        err(
            5,
            -32020,
            "Header mismatch: Mcp-Name header value \"add\" does not match body value \"echo\"",
            None,
        ),
    );
    w.send(call().header("Mcp-Name", "ECHO")).await.assert_json(
        400,
        err(
            5,
            -32020,
            "Header mismatch: Mcp-Name header value \"ECHO\" does not match body value \"echo\"",
            None,
        ),
    );
    // prompts/get and resources/read are named too: by `name` and by `uri`.
    w.send(
        Req::modern(
            6,
            "prompts/get",
            json!({"name": "greet", "arguments": {"name": "Ada"}}),
        )
        .without("Mcp-Name"),
    )
    .await
    .assert_json(
        400,
        err(
            6,
            -32020,
            "Header mismatch: missing Mcp-Name header; send the request's `name`",
            None,
        ),
    );
    w.send(Req::modern(7, "resources/read", json!({"uri": "docs://about"})).header("Mcp-Name", "docs://other"))
        .await
        .assert_json(
            400,
            err(
                7,
                -32020,
                "Header mismatch: Mcp-Name header value \"docs://other\" does not match body value \"docs://about\"",
                None,
            ),
        );
    w.send(Req::modern(8, "resources/read", json!({"uri": "docs://about"})).without("Mcp-Name"))
        .await
        .assert_json(
            400,
            err(
                8,
                -32020,
                "Header mismatch: missing Mcp-Name header; send the request's `uri`",
                None,
            ),
        );
    // Bytes that are not visible ASCII must be Base64-encoded.
    w.send(call().header_bytes("Mcp-Name", b"ech\xc3\xb6"))
        .await
        .assert_json(
            400,
            err(
                5,
                -32020,
                "Header mismatch: the Mcp-Name header holds characters that are not visible ASCII; encode such values as =?base64?…?=",
                None,
            ),
        );
}

#[tokio::test]
async fn mcp_name_base64_sentinel() {
    let w = wire();
    let call = || {
        Req::modern(
            9,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "b64"}}),
        )
    };
    // A valid sentinel is decoded before comparing.
    let reply = w.send(call().header("Mcp-Name", &sentinel(b"echo"))).await;
    assert_eq!(reply.json(200)["result"]["content"][0]["text"], "b64");
    let reply = w
        .send(
            Req::modern(10, "resources/read", json!({"uri": "users://1/profile"}))
                .header("Mcp-Name", &sentinel(b"users://1/profile")),
        )
        .await;
    assert_eq!(
        reply.json(200)["result"]["contents"][0]["uri"],
        "users://1/profile"
    );
    // Invalid Base64 (padding, alphabet) and non-UTF-8 payloads are rejected.
    for (value, why) in [
        ("=?base64?ZWNobw?=", "is not valid padded standard Base64"),
        (
            "=?base64?ZW!ob w==?=",
            "is not valid padded standard Base64",
        ),
        ("=?base64?ZWNo_w==?=", "is not valid padded standard Base64"),
        ("=?base64?/w==?=", "does not decode to UTF-8"),
    ] {
        w.send(call().header("Mcp-Name", value)).await.assert_json(
            400,
            err(
                9,
                -32020,
                &format!("Header mismatch: the Mcp-Name header's Base64 value {value:?} {why}"),
                None,
            ),
        );
    }
    // Only the exact lowercase prefix and suffix mark a sentinel; anything else is literal.
    for value in ["=?BASE64?ZWNobw==?=", "=?base64?ZWNobw==", "ZWNobw==?="] {
        w.send(call().header("Mcp-Name", value)).await.assert_json(
            400,
            err(
                9,
                -32020,
                &format!(
                    "Header mismatch: Mcp-Name header value {value:?} does not match body value \"echo\""
                ),
                None,
            ),
        );
    }
    // A sentinel that decodes to something else is a mismatch, reported decoded.
    w.send(call().header("Mcp-Name", &sentinel("échø".as_bytes())))
        .await
        .assert_json(
            400,
            err(
                9,
                -32020,
                "Header mismatch: Mcp-Name header value \"échø\" does not match body value \"echo\"",
                None,
            ),
        );
}

#[tokio::test]
async fn undeclared_mcp_param_headers_are_ignored() {
    let w = wire();
    let call = || {
        Req::modern(
            11,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "x"}}),
        )
    };
    // No parameter of `echo` declares `x-mcp-header`: Mcp-Param-* headers are ignored (the
    // 2026-07-28 `x-mcp-header` text), even malformed ones — they belong to nothing (tests/wire_headers.rs covers
    // declared ones).
    for value in ["us west 1", "=?base64?SGVsbG8?="] {
        let reply = w.send(call().header("Mcp-Param-Region", value)).await;
        assert_eq!(reply.json(200)["result"]["content"][0]["text"], "x");
    }
}

/// The 2026-07-28 request validation order: which check answers when several fail. Conformance pins only 302 (header ≠
/// `_meta` beats an unknown `_meta` version) and 301 (unknown header → -32022); the rest
/// follows the REC order: `_meta` (5), header present (6), version served (7), header ==
/// `_meta` (8), `Mcp-Method` (9), `Mcp-Name` (10), method/capability (11), tool (12).
#[tokio::test]
async fn validation_order() {
    let w = wire();
    let v999 = json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "v999"}});
    // 5 before 7: no `_meta` with an unknown header version.
    let reply = w
        .send(Req::modern_exact(1, "tools/list", json!({})).header("MCP-Protocol-Version", "v999"))
        .await;
    assert_eq!(
        (reply.status, reply.json(400)["error"]["code"].clone()),
        (400, json!(-32602))
    );
    // 7 before 9: an unknown version and no Mcp-Method.
    let reply = w
        .send(
            Req::modern(2, "tools/list", v999.clone())
                .header("MCP-Protocol-Version", "v999")
                .without("Mcp-Method"),
        )
        .await;
    assert_eq!(reply.json(400)["error"]["code"], -32022);
    // 8 before 9.
    let reply = w
        .send(Req::modern(3, "tools/list", v999).without("Mcp-Method"))
        .await;
    assert_eq!(reply.json(400)["error"]["code"], -32020);
    assert!(
        reply.messages[0]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("MCP-Protocol-Version")
    );
    // 9 before 11: an unknown method whose Mcp-Method disagrees.
    let reply = w
        .send(Req::modern(4, "unknown/method", json!({})).header("Mcp-Method", "tools/list"))
        .await;
    assert_eq!(reply.json(400)["error"]["code"], -32020);
    // 10 before 12: an unknown tool with a mismatched Mcp-Name, then with a matching one.
    let call = || Req::modern(5, "tools/call", json!({"name": "nope"}));
    let reply = w.send(call().header("Mcp-Name", "add")).await;
    assert_eq!(reply.json(400)["error"]["code"], -32020);
    let reply = w.send(call()).await;
    assert_eq!(reply.json(200)["error"]["code"], -32602);
}

// ---------------------------------------------------------------------------------------------
// Methods and capabilities (A6 -32601, A7.12 step 11): 404

#[tokio::test]
async fn removed_and_unknown_methods_are_method_not_found_404() {
    let w = wire();
    for method in [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
        "notifications/initialized",
        "unknown/method",
        "tools/List",
    ] {
        w.send(Req::modern(500, method, json!({})))
            .await
            .assert_json(
                404,
                err(500, -32601, &format!("Method not found: {method}"), None),
            );
    }
}

/// A server with tools only: what it does not offer is -32601 / 404, as if unknown.
fn tools_only() -> Wire {
    Wire::new(
        Server::with_registry(
            sake::Registry::from_defs(inventory::iter::<sake::registry::ToolDef>(), [], [])
                .unwrap(),
        )
        .name(NAME)
        .version(VERSION),
    )
}

#[tokio::test]
async fn capabilities_the_server_does_not_offer_are_method_not_found_404() {
    let w = tools_only();
    let discover = w.rpc(1, "server/discover", json!({})).await;
    assert_eq!(
        discover.json(200)["result"]["capabilities"],
        json!({"logging": {}, "tools": {"listChanged": true}})
    );
    for (method, params) in [
        ("prompts/list", json!({})),
        ("prompts/get", json!({"name": "greet"})),
        ("resources/list", json!({})),
        ("resources/templates/list", json!({})),
        ("resources/read", json!({"uri": "docs://about"})),
        (
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "style", "value": ""}}),
        ),
    ] {
        w.rpc(2, method, params).await.assert_json(
            404,
            err(2, -32601, &format!("Method not found: {method}"), None),
        );
    }
}

/// The 2026-07-28 request validation order: `Mcp-Name` (step 10) is checked before the capability (step 11).
#[tokio::test]
async fn header_checks_come_before_the_capability_check() {
    tools_only()
        .send(Req::modern(3, "prompts/get", json!({"name": "greet"})).header("Mcp-Name", "other"))
        .await
        .assert_json(
            400,
            err(
                3,
                -32020,
                "Header mismatch: Mcp-Name header value \"other\" does not match body value \"greet\"",
                None,
            ),
        );
}

// ---------------------------------------------------------------------------------------------
// Invalid params of named requests (A6 -32602; HTTP status per the REC: 200)

#[tokio::test]
async fn an_unknown_tool_is_invalid_params() {
    wire()
        .rpc("u", "tools/call", json!({"name": "nope", "arguments": {}}))
        .await
        .assert_json(
            200,
            err(
                "u",
                -32602,
                "Unknown tool: nope",
                Some(json!({"name": "nope"})),
            ),
        );
}

#[tokio::test]
async fn arguments_that_are_not_an_object_are_invalid_params() {
    let w = wire();
    for args in [json!([1, 2]), json!("a=1"), json!(3)] {
        w.rpc(4, "tools/call", json!({"name": "add", "arguments": args}))
            .await
            .assert_json(
                200,
                err(
                    4,
                    -32602,
                    &format!("Invalid params: `arguments` must be an object, not {args}"),
                    None,
                ),
            );
    }
}

#[tokio::test]
async fn prompt_errors_are_invalid_params() {
    let w = wire();
    w.rpc(1, "prompts/get", json!({"name": "nope"}))
        .await
        .assert_json(
            200,
            err(
                1,
                -32602,
                "Unknown prompt: nope",
                Some(json!({"name": "nope"})),
            ),
        );
    w.rpc(2, "prompts/get", json!({"name": "greet", "arguments": {}}))
        .await
        .assert_json(
            200,
            err(
                2,
                -32602,
                "Invalid arguments for prompt `greet`: missing field `name`",
                None,
            ),
        );
}

#[tokio::test]
async fn a_missing_resource_is_invalid_params_with_the_uri() {
    let w = wire();
    // No resource or template matches.
    w.rpc(1, "resources/read", json!({"uri": "test://nonexistent"}))
        .await
        .assert_json(
            200,
            err(
                1,
                -32602,
                "Resource not found: test://nonexistent",
                Some(json!({"uri": "test://nonexistent"})),
            ),
        );
    // The template matches, but the function says there is no such user.
    w.rpc(2, "resources/read", json!({"uri": "users://9/profile"}))
        .await
        .assert_json(
            200,
            err(
                2,
                -32602,
                "Resource not found: users://9/profile",
                Some(json!({"uri": "users://9/profile"})),
            ),
        );
}

// ---------------------------------------------------------------------------------------------
// Pagination (A13)

#[tokio::test]
async fn pagination_walks_every_page_with_next_cursor() {
    let w = Wire::new(server().page_size(2));
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let reply = w.rpc(pages, "tools/list", params).await;
        let result = reply.json(200)["result"].clone();
        assert_eq!(result["resultType"], "complete");
        assert_eq!(
            (&result["ttlMs"], &result["cacheScope"]),
            (&json!(60000), &json!("public"))
        );
        let tools = result["tools"].as_array().unwrap();
        assert!(tools.len() <= 2);
        seen.extend(tools.iter().cloned());
        pages += 1;
        match result.get("nextCursor") {
            Some(c) => cursor = Some(c.as_str().unwrap().to_owned()),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(Value::Array(seen), tools());
    // The one prompt fits on one page: no nextCursor.
    let reply = w.rpc("p", "prompts/list", json!({})).await;
    assert!(reply.json(200)["result"].get("nextCursor").is_none());
}

#[tokio::test]
async fn an_invalid_cursor_is_invalid_params() {
    let w = Wire::new(server().page_size(2));
    let first = w.rpc(1, "tools/list", json!({})).await;
    let tools_cursor = first.json(200)["result"]["nextCursor"]
        .as_str()
        .unwrap()
        .to_owned();
    for cursor in ["garbage!", "", "dG9vbHM6OTk"] {
        w.rpc(2, "tools/list", json!({"cursor": cursor}))
            .await
            .assert_json(
                200,
                err(
                    2,
                    -32602,
                    &format!(
                        "Invalid cursor {cursor:?}: pass a `nextCursor` from this list unchanged"
                    ),
                    None,
                ),
            );
    }
    // A cursor of one list is not a cursor of another.
    w.rpc(3, "prompts/list", json!({"cursor": tools_cursor}))
        .await
        .assert_json(
            200,
            err(
                3,
                -32602,
                &format!(
                    "Invalid cursor {tools_cursor:?}: pass a `nextCursor` from this list unchanged"
                ),
                None,
            ),
        );
    w.rpc(4, "tools/list", json!({"cursor": 1}))
        .await
        .assert_json(
            200,
            err(
                4,
                -32602,
                "Invalid params: `cursor` must be a string, not 1",
                None,
            ),
        );
}

// ---------------------------------------------------------------------------------------------
// Admission (A7.1, A7.2): Host/Origin, media type, size, HTTP method

#[tokio::test]
async fn a_foreign_host_or_origin_is_forbidden() {
    let w = wire();
    let discover = || Req::modern(1, "server/discover", json!({}));
    w.send(
        discover()
            .header("Host", "evil.example.com")
            .header("Origin", "http://evil.example.com"),
    )
    .await
    .assert_json(
        403,
        err(
            Value::Null,
            -32000,
            "Forbidden: Host \"evil.example.com\" is not served here (DNS-rebinding protection); configure Server::allowed_hosts",
            None,
        ),
    );
    w.send(discover().header("Host", "localhost:3000").header("Origin", "http://evil.example.com"))
        .await
        .assert_json(
            403,
            err(
                Value::Null,
                -32000,
                "Forbidden: Origin \"http://evil.example.com\" is not allowed; configure Server::allowed_origins (Server::cors for browser pages)",
                None,
            ),
        );
    for (host, origin) in [
        ("localhost:3000", "http://localhost:3000"),
        ("127.0.0.1:8080", "http://127.0.0.1:8080"),
        ("[::1]:9", "https://[::1]:9"),
    ] {
        let reply = w
            .send(discover().header("Host", host).header("Origin", origin))
            .await;
        assert_eq!(reply.json(200)["result"]["resultType"], "complete");
    }
}

#[tokio::test]
async fn a_body_that_is_not_json_is_unsupported_media_type() {
    let w = wire();
    let expected = err(
        Value::Null,
        -32000,
        "Unsupported Media Type: send the JSON-RPC message with Content-Type: application/json",
        None,
    );
    for ct in [
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
        None,
    ] {
        let req = Req::modern(1, "tools/list", json!({}));
        let req = match ct {
            Some(ct) => req.header("Content-Type", ct),
            None => req.without("Content-Type"),
        };
        w.send(req).await.assert_json(415, expected.clone());
    }
    let reply = w
        .send(
            Req::modern(1, "tools/list", json!({}))
                .header("Content-Type", "Application/JSON; charset=utf-8"),
        )
        .await;
    assert_eq!(reply.json(200)["id"], 1);
}

#[tokio::test]
async fn a_body_over_the_limit_is_payload_too_large() {
    let w = Wire::new(server().max_body_bytes(512));
    let big = Req::modern(
        1,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "x".repeat(512)}}),
    );
    let expected = err(
        Value::Null,
        -32000,
        "Payload Too Large: the body exceeds 512 bytes",
        None,
    );
    // Refused from Content-Length alone, and while reading a body without one.
    let len = big.body_len().to_string();
    w.send(big.clone().header("Content-Length", &len))
        .await
        .assert_json(413, expected.clone());
    w.send(big).await.assert_json(413, expected);
    let small = Req::modern(
        2,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "x"}}),
    );
    assert_eq!(w.send(small).await.json(200)["id"], 2);
}

#[tokio::test]
async fn get_and_delete_are_method_not_allowed() {
    let w = wire();
    for method in [http::Method::GET, http::Method::DELETE, http::Method::PUT] {
        let reply = w
            .send(
                Req::modern(1, "tools/list", json!({}))
                    .http_method(method.clone())
                    .header("Accept", "text/event-stream")
                    .body(""),
            )
            .await;
        reply.assert_json(
            405,
            err(
                Value::Null,
                -32000,
                "Method Not Allowed: send JSON-RPC messages with POST (GET and DELETE need an Mcp-Session-Id of a handshake session)",
                None,
            ),
        );
        assert_eq!(reply.header("allow"), Some("POST, GET, DELETE"), "{method}");
    }
}

// ---------------------------------------------------------------------------------------------
// The harness's validator rejects what the schema forbids

#[test]
#[should_panic(expected = "violates JSONRPCResultResponse")]
fn the_validator_rejects_a_result_without_result_type() {
    sake_tests::validate(
        MODERN,
        Some("tools/list"),
        &json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}),
    );
}

#[test]
#[should_panic(expected = "violates ListToolsResult")]
fn the_validator_rejects_a_list_without_cache_hints() {
    sake_tests::validate(
        MODERN,
        Some("tools/list"),
        &json!({"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete", "tools": []}}),
    );
}

#[test]
#[should_panic(expected = "violates JSONRPCErrorResponse")]
fn the_validator_rejects_a_null_error_id() {
    sake_tests::validate(
        MODERN,
        None,
        &json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "x"}}),
    );
}

#[test]
#[should_panic(expected = "violates UnsupportedProtocolVersionError")]
fn the_validator_checks_error_data_by_code() {
    sake_tests::validate(
        MODERN,
        None,
        &json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32022, "message": "x"}}),
    );
}

#[test]
#[should_panic(expected = "violates ProgressNotification")]
fn the_validator_checks_notifications() {
    sake_tests::validate(
        MODERN,
        Some("tools/call"),
        &json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}),
    );
}

#[test]
#[should_panic(expected = "sent a JSON-RPC request")]
fn the_validator_rejects_server_requests() {
    sake_tests::validate(
        MODERN,
        Some("tools/call"),
        &json!({"jsonrpc": "2.0", "id": 1, "method": "elicitation/create", "params": {}}),
    );
}

#[test]
fn sse_parsing_joins_data_lines_and_skips_comments() {
    let events = sake_tests::parse_sse(
        ": keep-alive\n\nevent: message\ndata: {\"a\":\ndata: 1}\n\ndata: 2\r\n\r\n",
    );
    assert_eq!(
        events,
        [
            sake_tests::SseEvent {
                data: Some("{\"a\":\n1}".into()),
                fields: vec![("event".into(), "message".into())],
            },
            sake_tests::SseEvent {
                data: Some("2".into()),
                fields: vec![],
            },
        ]
    );
}
