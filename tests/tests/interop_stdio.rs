//! Independent clients against the real `examples/stdio` binary, spawned as their child
//! process: rmcp 3.11 (`TokioChildProcess`) in Discover mode (2026-07-28) and in Initialize
//! mode pinned to a handshake revision, and the TypeScript SDK v2 client's stdio transport
//! pinned to 2026-07-28 and to a handshake revision (a Node driver, `tests/interop/ts/stdio.mjs`,
//! run with `$SAKE_NODE`; `scripts/test.sh` installs and exports it).

use std::ffi::OsStr;
use std::process::Stdio;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationCapability, FormElicitationCapability, GetPromptRequestParams,
    Implementation, ProtocolVersion, ReadResourceRequestParams,
};
use rmcp::service::{RequestContext, RoleClient, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, ErrorData};
use sake_tests::{args, example_binary, node, same, within};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// rmcp

/// A client that declares form elicitation and answers every question with "Ferris".
#[derive(Clone)]
struct Client {
    version: ProtocolVersion,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let mut caps = ClientCapabilities::default();
        caps.elicitation =
            Some(ElicitationCapability::new().with_form(FormElicitationCapability::new()));
        ClientConfig::new(caps, Implementation::new("sake-interop", "0.1.0"))
            .with_protocol_version(self.version.clone())
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _ctx: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        match request {
            ElicitRequestParams::FormElicitationParams { message, .. } => {
                assert_eq!(message, "What is your name?");
            }
            other => panic!("expected a form elicitation, got {other:?}"),
        }
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({"name": "Ferris"})))
    }
}

async fn spawn_rmcp(
    version: ProtocolVersion,
    mode: ClientLifecycleMode,
) -> RunningService<RoleClient, Client> {
    let (transport, _stderr) =
        TokioChildProcess::builder(tokio::process::Command::new(example_binary("stdio")))
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
    within(
        "rmcp connecting",
        Client { version }.serve_with_lifecycle(transport, mode),
    )
    .await
    .unwrap()
}

fn server_info() -> Value {
    json!({"name": "sake-stdio", "version": env!("CARGO_PKG_VERSION")})
}

fn tool_names(list: &rmcp::model::ListToolsResult) -> Vec<String> {
    list.tools.iter().map(|t| t.name.to_string()).collect()
}

#[tokio::test]
async fn rmcp_in_discover_mode() {
    let client = spawn_rmcp(
        ProtocolVersion::V_2026_07_28,
        ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        },
    )
    .await;
    let info = client.peer_info().expect("discovered");
    assert_eq!(info.protocol_version, ProtocolVersion::V_2026_07_28);

    let tools = within("tools/list", client.list_tools(None)).await.unwrap();
    assert_eq!(tool_names(&tools), ["add", "greet_me", "haiku", "sleep"]);

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
            "_meta": {"io.modelcontextprotocol/serverInfo": server_info()},
        }),
    );

    let read = within(
        "resources/read",
        client.read_resource(ReadResourceRequestParams::new("notes://hello")),
    )
    .await
    .unwrap();
    same(
        &read,
        json!({
            "resultType": "complete",
            "ttlMs": 60000,
            "cacheScope": "public",
            "contents": [{"uri": "notes://hello", "mimeType": "text/plain", "text": "Hello from sake over stdio."}],
            "_meta": {"io.modelcontextprotocol/serverInfo": server_info()},
        }),
    );

    let prompt = within(
        "prompts/get",
        client.get_prompt(
            GetPromptRequestParams::new("summarize").with_arguments(args(json!({"text": "rmcp"}))),
        ),
    )
    .await
    .unwrap();
    same(
        &prompt,
        json!({
            "resultType": "complete",
            "messages": [{"role": "user", "content": {"type": "text", "text": "Summarize in one sentence:\n\nrmcp"}}],
            "_meta": {"io.modelcontextprotocol/serverInfo": server_info()},
        }),
    );

    // Elicitation by input_required: rmcp answers and retries.
    let hello = within(
        "tools/call greet_me",
        client.call_tool(CallToolRequestParams::new("greet_me")),
    )
    .await
    .unwrap();
    same(
        &hello,
        json!({
            "resultType": "complete",
            "content": [{"type": "text", "text": "Hello, Ferris!"}],
            "_meta": {"io.modelcontextprotocol/serverInfo": server_info()},
        }),
    );
    within("closing", client.cancel()).await.unwrap();
}

#[tokio::test]
async fn rmcp_in_initialize_mode_pinned_to_2025_06_18() {
    let client = spawn_rmcp(
        ProtocolVersion::V_2025_06_18,
        ClientLifecycleMode::Initialize,
    )
    .await;
    let info = client.peer_info().expect("initialized");
    assert_eq!(info.protocol_version, ProtocolVersion::V_2025_06_18);
    same(
        &info.capabilities,
        json!({
            "logging": {},
            "prompts": {"listChanged": true},
            "resources": {"subscribe": true, "listChanged": true},
            "tools": {"listChanged": true},
        }),
    );

    let tools = within("tools/list", client.list_tools(None)).await.unwrap();
    assert_eq!(tool_names(&tools), ["add", "greet_me", "haiku", "sleep"]);

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
            "content": [{"type": "text", "text": "{\"sum\":5}"}],
            "structuredContent": {"sum": 5},
        }),
    );

    let read = within(
        "resources/read",
        client.read_resource(ReadResourceRequestParams::new("notes://hello")),
    )
    .await
    .unwrap();
    same(
        &read,
        json!({
            "contents": [{"uri": "notes://hello", "mimeType": "text/plain", "text": "Hello from sake over stdio."}],
        }),
    );

    // Elicitation by a server-to-client request on stdout, answered on stdin.
    let hello = within(
        "tools/call greet_me",
        client.call_tool(CallToolRequestParams::new("greet_me")),
    )
    .await
    .unwrap();
    same(
        &hello,
        json!({"content": [{"type": "text", "text": "Hello, Ferris!"}]}),
    );

    // Progress comes for rmcp's progress token; the call still completes.
    let slept = within(
        "tools/call sleep",
        client.call_tool(
            CallToolRequestParams::new("sleep").with_arguments(args(json!({"millis": 40}))),
        ),
    )
    .await
    .unwrap();
    same(
        &slept,
        json!({"content": [{"type": "text", "text": "slept 40 ms"}]}),
    );
    within("closing", client.cancel()).await.unwrap();
}

// ---------------------------------------------------------------------------------------------
// The TypeScript SDK v2 client

/// Runs the Node driver with one mode; it prints one JSON line of what it saw.
async fn ts_client(mode: &str) -> Value {
    let server = example_binary("stdio");
    let out = node::run(
        "stdio.mjs",
        &[OsStr::new(mode), server.as_os_str()],
        Duration::from_secs(60),
    )
    .await;
    let last = out.stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|e| {
        panic!(
            "the driver printed no JSON ({e}):\n{}\n{}",
            out.stdout, out.stderr
        )
    })
}

#[tokio::test]
async fn typescript_client_pinned_to_2026_07_28() {
    let seen = ts_client("2026-07-28").await;
    assert_eq!(
        seen,
        json!({
            "era": "modern",
            "version": "2026-07-28",
            "serverVersion": server_info(),
            "tools": ["add", "greet_me", "haiku", "sleep"],
            "add": {
                "content": [{"type": "text", "text": "{\"sum\":5}"}],
                "structuredContent": {"sum": 5},
            },
            "read": [{"uri": "notes://hello", "mimeType": "text/plain", "text": "Hello from sake over stdio."}],
            "prompt": [{"role": "user", "content": {"type": "text", "text": "Summarize in one sentence:\n\nTypeScript"}}],
            "greet": [{"type": "text", "text": "Hello, Ada!"}],
            "progress": [1, 2, 3, 4],
            "logs": [{"level": "info", "logger": "sleep", "data": "sleeping 40 ms"}],
            "sleep": [{"type": "text", "text": "slept 40 ms"}],
            "errors": [],
        })
    );
}

#[tokio::test]
async fn typescript_client_pinned_to_2025_06_18() {
    let seen = ts_client("2025-06-18").await;
    assert_eq!(
        seen,
        json!({
            "era": "legacy",
            "version": "2025-06-18",
            "serverVersion": server_info(),
            "tools": ["add", "greet_me", "haiku", "sleep"],
            "add": {
                "content": [{"type": "text", "text": "{\"sum\":5}"}],
                "structuredContent": {"sum": 5},
            },
            "read": [{"uri": "notes://hello", "mimeType": "text/plain", "text": "Hello from sake over stdio."}],
            "prompt": [{"role": "user", "content": {"type": "text", "text": "Summarize in one sentence:\n\nTypeScript"}}],
            "greet": [{"type": "text", "text": "Hello, Ada!"}],
            "progress": [1, 2, 3, 4],
            "logs": [{"level": "info", "logger": "sleep", "data": "sleeping 40 ms"}],
            "sleep": [{"type": "text", "text": "slept 40 ms"}],
            "errors": [],
        })
    );
}
