//! Interoperability of the tasks extension (`io.modelcontextprotocol/tasks`) with an
//! independent client: the official Rust SDK `rmcp` 3.11, which speaks it (`call_tool_once`
//! answered with a task, `get_task`, `update_task`, `cancel_task`), in
//! `ClientLifecycleMode::Discover` against a sake server on a real socket.

use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, ClientCapabilities, ClientConfig,
    GetTaskParams, GetTaskResult, Implementation, ProtocolVersion, TaskPayload, TaskStatus,
    UpdateTaskParams,
};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt};
use sake::prelude::*;
use sake_tests::stream::Live;
use sake_tests::{same, within};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

// ---------------------------------------------------------------------------------------------
// The server

#[derive(Deserialize, JsonSchema)]
struct Confirm {
    /// Publish it.
    ok: bool,
}

/// Writes a report, then asks whether to publish it.
#[tool(task = "required")]
async fn report(ctx: Context) -> Result<String, InputError> {
    tokio::time::sleep(Duration::from_millis(20)).await;
    ctx.progress_message(1.0, Some(2.0), "written").await;
    let ok = ctx
        .elicit::<Confirm>("confirm", "Publish the report?")
        .await?
        .accepted()
        .is_some_and(|c| c.ok);
    Ok(format!("report published: {ok}"))
}

/// Never ends by itself.
#[tool(task = "optional")]
async fn stuck() -> &'static str {
    std::future::pending().await
}

/// The server on a socket; dropping it shuts the server down.
async fn start() -> Live {
    Live::start(
        Server::from_registry()
            .name("interop")
            .version("0.1.0")
            .task_poll_interval(Duration::from_millis(20)),
    )
    .await
}

// ---------------------------------------------------------------------------------------------
// The client: it declares the extension and elicitation

#[derive(Clone)]
struct Client;

impl ClientHandler for Client {
    fn get_info(&self) -> ClientConfig {
        let capabilities: ClientCapabilities = serde_json::from_value(json!({
            "elicitation": {},
            "extensions": {"io.modelcontextprotocol/tasks": {}},
        }))
        .unwrap();
        ClientConfig::new(capabilities, Implementation::new("sake-interop", "0.1.0"))
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

/// Polls `tasks/get` until the task has `status` (five seconds at most).
async fn until(
    client: &RunningService<RoleClient, Client>,
    id: &str,
    status: TaskStatus,
) -> GetTaskResult {
    for _ in 0..250 {
        let got = client.get_task(GetTaskParams::new(id)).await.unwrap();
        if got.task.status() == status {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("task {id} never reached {status:?}");
}

#[tokio::test]
async fn rmcp_follows_a_task_answers_its_question_and_reads_its_result() {
    let server = start().await;
    let client = within("connecting", connect(&server.url())).await;
    let info = client.peer_info().expect("discovered");
    same(
        &info.capabilities,
        json!({"logging": {}, "tools": {"listChanged": true},
            "extensions": {"io.modelcontextprotocol/tasks": {}}}),
    );

    let created = within(
        "tools/call",
        client.call_tool_once(CallToolRequestParams::new("report")),
    )
    .await
    .unwrap();
    let CallToolResponse::Task(created) = created else {
        panic!("expected a task, got {created:?}")
    };
    let task = &created.task;
    assert_eq!(task.status, TaskStatus::Working);
    assert_eq!(
        (task.ttl_ms, task.poll_interval_ms),
        (Some(300_000), Some(20))
    );
    let id = task.task_id.clone();

    let waiting = within(
        "input_required",
        until(&client, &id, TaskStatus::InputRequired),
    )
    .await;
    let TaskPayload::InputRequired { input_requests } = &waiting.task.payload else {
        panic!("{waiting:?}")
    };
    // As rmcp reads it (its form parameters spell out the default `mode`).
    same(
        input_requests,
        json!({"confirm": {"method": "elicitation/create", "params": {
            "mode": "form",
            "message": "Publish the report?",
            "requestedSchema": {"type": "object", "required": ["ok"], "properties": {
                "ok": {"type": "boolean", "description": "Publish it."}}}}}}),
    );
    let answers = [(
        "confirm".to_owned(),
        json!({"action": "accept", "content": {"ok": true}}),
    )]
    .into_iter()
    .collect();
    within(
        "tasks/update",
        client.update_task(UpdateTaskParams::new(&id, answers)),
    )
    .await
    .unwrap();

    let done = within("completed", until(&client, &id, TaskStatus::Completed)).await;
    let TaskPayload::Completed { result } = &done.task.payload else {
        panic!("{done:?}")
    };
    same(
        result,
        json!({"resultType": "complete",
            "content": [{"type": "text", "text": "report published: true"}],
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "interop", "version": "0.1.0"}}}),
    );
    within("closing", client.cancel()).await.unwrap();
}

#[tokio::test]
async fn rmcp_cancels_a_task_and_unknown_tasks_are_invalid_params() {
    let server = start().await;
    let client = within("connecting", connect(&server.url())).await;
    let created = within(
        "tools/call",
        client.call_tool_once(CallToolRequestParams::new("stuck")),
    )
    .await
    .unwrap();
    let CallToolResponse::Task(created) = created else {
        panic!("expected a task, got {created:?}")
    };
    let id = created.task.task_id.clone();
    within(
        "tasks/cancel",
        client.cancel_task(CancelTaskParams::new(&id)),
    )
    .await
    .unwrap();
    let cancelled = within("cancelled", until(&client, &id, TaskStatus::Cancelled)).await;
    assert_eq!(
        cancelled.task.task.status_message.as_deref(),
        Some("Cancelled by client request")
    );
    match client.get_task(GetTaskParams::new("no-such-task")).await {
        Err(rmcp::ServiceError::McpError(e)) => assert_eq!(e.code.0, -32602),
        other => panic!("expected -32602, got {other:?}"),
    }
    within("closing", client.cancel()).await.unwrap();
}
