//! Interoperability with an independent client on the handshake revisions: the official Rust
//! SDK `rmcp` 3.11 in `ClientLifecycleMode::Initialize`, pinned to 2025-06-18 and 2025-03-26
//! (and 2025-11-25), drives real sessions of a sake server on a socket: it lists tools,
//! calls one, reads a resource, gets a prompt, and answers an elicitation with its
//! `ClientHandler`.

// rmcp marks its logging API deprecated (SEP-2577 deprecates logging in 2026-07-28); the
// handshake revisions under test still have `logging/setLevel`.
#![allow(deprecated)]

#[path = "../fixtures/interop.rs"]
mod server;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, ElicitationCapability, FormElicitationCapability, GetPromptRequestParams,
    Implementation, LoggingLevel, LoggingMessageNotificationParam, ProtocolVersion,
    ReadResourceRequestParams, SetLevelRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, ErrorData};
use sake_tests::{args, same, to_json, within};
use serde_json::{Value, json};

/// A client that declares form elicitation and answers every form with the name Ferris,
/// remembering what it was asked.
#[derive(Clone)]
struct Client {
    version: ProtocolVersion,
    asked: Arc<Mutex<Vec<Value>>>,
    logs: Arc<Mutex<Vec<Value>>>,
}

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let mut caps = ClientCapabilities::default();
        caps.elicitation =
            Some(ElicitationCapability::new().with_form(FormElicitationCapability::new()));
        ClientConfig::new(caps, Implementation::new("sake-interop-rmcp", "0.1.0"))
            .with_protocol_version(self.version.clone())
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _ctx: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.asked.lock().unwrap().push(to_json(&request));
        Ok(ElicitResult::new(ElicitationAction::Accept).with_content(json!({"name": "Ferris"})))
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _ctx: NotificationContext<RoleClient>,
    ) {
        self.logs.lock().unwrap().push(to_json(&params));
    }
}

async fn connect(
    url: &str,
    version: ProtocolVersion,
) -> (RunningService<RoleClient, Client>, Client) {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(url.to_owned()),
    );
    let handler = Client {
        version,
        asked,
        logs: Arc::default(),
    };
    let client = handler
        .clone()
        .serve_with_lifecycle(transport, ClientLifecycleMode::Initialize)
        .await
        .unwrap();
    (client, handler)
}

async fn run(version: ProtocolVersion) {
    let revision = to_json(&version);
    let old = revision == "2025-03-26";
    let mut server = server::start().await;
    let (client, handler) = within("initialize", connect(&server.url(), version.clone())).await;

    let info = client.peer_info().expect("initialized");
    assert_eq!(info.protocol_version, version);
    same(
        &info.server_info,
        json!({"name": server::NAME, "version": server::VERSION}),
    );
    same(
        &info.capabilities,
        json!({
            "logging": {},
            "prompts": {"listChanged": true},
            "resources": {"subscribe": true, "listChanged": true},
            "tools": {"listChanged": true},
        }),
    );
    assert_eq!(info.instructions.as_deref(), Some(server::INSTRUCTIONS));

    let mut add = json!({
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
        "annotations": {"readOnlyHint": true},
    });
    if old {
        add["annotations"]["title"] = json!("Adder");
    } else {
        add["title"] = json!("Adder");
        add["outputSchema"] = json!({
            "type": "object",
            "description": "The sum of two numbers.",
            "properties": {"sum": {"type": "integer", "description": "`a + b`."}},
            "required": ["sum"],
        });
    }
    let tools = within("tools/list", client.list_tools(None)).await.unwrap();
    same(
        &tools,
        json!({"tools": [
            add,
            {
                "name": "greet_user",
                "description": "Asks the user for their name, then greets them.",
                "inputSchema": {"type": "object", "properties": {}},
            },
            {
                "name": "log_twice",
                "description": "Logs a note at info level and a warning at warning level.",
                "inputSchema": {"type": "object", "properties": {}},
            },
        ]}),
    );

    let sum = within(
        "tools/call",
        client.call_tool(
            CallToolRequestParams::new("add").with_arguments(args(json!({"a": 2, "b": 3}))),
        ),
    )
    .await
    .unwrap();
    let mut want = json!({"content": [{"type": "text", "text": "{\"sum\":5}"}]});
    if !old {
        want["structuredContent"] = json!({"sum": 5});
    }
    same(&sum, want);

    let read = within(
        "resources/read",
        client.read_resource(ReadResourceRequestParams::new("users://1/profile")),
    )
    .await
    .unwrap();
    same(
        &read,
        json!({"contents": [{
            "uri": "users://1/profile",
            "mimeType": "application/json",
            "text": "{\"id\":1,\"name\":\"Ada\"}",
        }]}),
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
        json!({"messages": [{
            "role": "user",
            "content": {"type": "text", "text": "Review this Rust for bugs and style:\n\nfn main() {}"},
        }]}),
    );

    // sake sends elicitation/create on the call's stream; rmcp's handler answers it.
    let greeted = within(
        "tools/call greet_user",
        client.call_tool(CallToolRequestParams::new("greet_user")),
    )
    .await
    .unwrap();
    same(
        &greeted,
        json!({"content": [{"type": "text", "text": "Hello, Ferris!"}]}),
    );
    // (rmcp's ElicitRequestParams is tagged by mode: it re-serialises with "mode":"form".)
    same(
        &*handler.asked.lock().unwrap(),
        json!([{
            "mode": "form",
            "message": "What is your name?",
            "requestedSchema": {
                "type": "object",
                "properties": {"name": {"type": "string", "description": "Your name."}},
                "required": ["name"],
            },
        }]),
    );

    // rmcp keeps the session id of `initialize`; the level applies all the same.
    within(
        "logging/setLevel",
        client.set_level(SetLevelRequestParams::new(LoggingLevel::Warning)),
    )
    .await
    .unwrap();
    let logged = within(
        "tools/call log_twice",
        client.call_tool(CallToolRequestParams::new("log_twice")),
    )
    .await
    .unwrap();
    same(
        &logged,
        json!({"content": [{"type": "text", "text": "logged"}]}),
    );
    within("the log message", async {
        while handler.logs.lock().unwrap().is_empty() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    same(
        &*handler.logs.lock().unwrap(),
        json!([{"level": "warning", "logger": "log_twice", "data": "a warning"}]),
    );

    // The client still holds its session and GET stream: shutdown must not wait for them.
    server.shutdown().await.unwrap();
    drop(client);
}

#[tokio::test]
async fn rmcp_initialize_2025_06_18() {
    run(ProtocolVersion::V_2025_06_18).await;
}

#[tokio::test]
async fn rmcp_initialize_2025_03_26() {
    run(ProtocolVersion::V_2025_03_26).await;
}

#[tokio::test]
async fn rmcp_initialize_2025_11_25() {
    run(ProtocolVersion::V_2025_11_25).await;
}
