//! Interoperability with an independent client: the official Rust SDK `rmcp` 3.11 in
//! `ClientLifecycleMode::Discover` (stateless 2026-07-28, `server/discover` first) against a
//! quickstart-like sake server on a real socket.

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, GetPromptRequestParams,
    Implementation, ProtocolVersion, ReadResourceRequestParams,
};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt};
use sake::prelude::*;
use sake_tests::fixtures::Sum;
use sake_tests::stream::Live;
use sake_tests::{args, same, within};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// The server: the quickstart's items

/// Adds two numbers.
#[tool(annotations(read_only, idempotent))]
async fn add(
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
) -> Sum {
    Sum { sum: a + b }
}

/// Greets someone by name.
#[tool(title = "Greeter")]
fn greet(
    /// Who to greet.
    name: String,
) -> String {
    format!("Hello, {name}!")
}

/// Asks the model to review a piece of code.
#[prompt]
fn review(
    /// The code to review.
    code: String,
    /// Its language, if not obvious.
    language: Option<String>,
) -> Vec<PromptMessage> {
    let language = language.unwrap_or_else(|| "the code".to_owned());
    vec![PromptMessage::user(format!(
        "Review this {language} for bugs and style:\n\n{code}"
    ))]
}

/// What this server is.
#[resource(uri = "docs://about", mime_type = "text/plain")]
fn about() -> &'static str {
    "A sake server talking to rmcp."
}

#[path = "../fixtures/profile.rs"]
mod profile;

/// The server on a socket; dropping it shuts the server down.
async fn start() -> Live {
    Live::start(Server::from_registry().name("interop").version("0.1.0")).await
}

// ---------------------------------------------------------------------------------------------
// The client

#[derive(Clone)]
struct Client;

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("sake-interop", "0.1.0"),
        )
    }
}

async fn connect(url: &str) -> RunningService<RoleClient, Client> {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.to_owned()),
    );
    Client
        .serve_with_lifecycle(
            transport,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        )
        .await
        .unwrap()
}

fn server_meta() -> Value {
    json!({"io.modelcontextprotocol/serverInfo": {"name": "interop", "version": "0.1.0"}})
}

#[tokio::test]
async fn rmcp_discovers_lists_calls_reads_and_gets() {
    let server = start().await;
    let client = within("connecting", connect(&server.url())).await;

    let info = client.peer_info().expect("discovered");
    assert_eq!(info.protocol_version, ProtocolVersion::V_2026_07_28);
    same(
        &info.capabilities,
        json!({"logging": {}, "prompts": {"listChanged": true}, "resources": {"subscribe": true, "listChanged": true}, "tools": {"listChanged": true}}),
    );

    let tools = within("tools/list", client.list_tools(None)).await.unwrap();
    same(
        &tools,
        json!({
            "resultType": "complete",
            "ttlMs": 60000,
            "cacheScope": "public",
            "_meta": server_meta(),
            "tools": [
                {
                    "name": "add",
                    "description": "Adds two numbers.",
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
                    "name": "greet",
                    "title": "Greeter",
                    "description": "Greets someone by name.",
                    "inputSchema": {
                        "type": "object",
                        "properties": {"name": {"type": "string", "description": "Who to greet."}},
                        "required": ["name"],
                    },
                },
            ],
        }),
    );

    let sum = within(
        "tools/call",
        client.call_tool(
            CallToolRequestParams::new("add").with_arguments(args(json!({"a": 2, "b": 3}))),
        ),
    )
    .await
    .unwrap();
    same(
        &sum,
        json!({
            "resultType": "complete",
            "content": [{"type": "text", "text": "{\"sum\":5}"}],
            "structuredContent": {"sum": 5},
            "_meta": server_meta(),
        }),
    );

    let read = within(
        "resources/read",
        client.read_resource(ReadResourceRequestParams::new("users://1/profile")),
    )
    .await
    .unwrap();
    same(
        &read,
        json!({
            "resultType": "complete",
            "ttlMs": 60000,
            "cacheScope": "public",
            "contents": [{
                "uri": "users://1/profile",
                "mimeType": "application/json",
                "text": "{\"id\":1,\"name\":\"Ada\"}",
            }],
            "_meta": server_meta(),
        }),
    );

    let prompt = within(
        "prompts/get",
        client.get_prompt(
            GetPromptRequestParams::new("review")
                .with_arguments(args(json!({"code": "fn main() {}", "language": "Rust"}))),
        ),
    )
    .await
    .unwrap();
    same(
        &prompt,
        json!({
            "resultType": "complete",
            "messages": [{
                "role": "user",
                "content": {"type": "text", "text": "Review this Rust for bugs and style:\n\nfn main() {}"},
            }],
            "_meta": server_meta(),
        }),
    );

    within("closing", client.cancel()).await.unwrap();
}

#[tokio::test]
async fn rmcp_sees_protocol_errors_as_json_rpc_errors() {
    let server = start().await;
    let client = within("connecting", connect(&server.url())).await;
    let missing = within(
        "resources/read",
        client.read_resource(ReadResourceRequestParams::new("users://9/profile")),
    )
    .await;
    match missing {
        Err(rmcp::ServiceError::McpError(e)) => same(
            &e,
            json!({
                "code": -32602,
                "message": "Resource not found: users://9/profile",
                "data": {"uri": "users://9/profile"},
            }),
        ),
        other => panic!("expected a JSON-RPC error, got {other:?}"),
    }
    within("closing", client.cancel()).await.unwrap();
}
