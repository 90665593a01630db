//! Tasks through a gateway (`Server::proxy`): a task a 2026-07-28 upstream makes of a call is
//! the caller's task, under an id of the gateway's; `tasks/get`, `tasks/update` and
//! `tasks/cancel` reach the upstream's task, for the caller that created it only; a handshake
//! upstream or caller has no tasks.
//!
//! (Beside tests/proxy.rs rather than in it: its tools are every tool of its binary, and its
//! tests list them exactly; the task tools here would change those lists.)

use std::time::Duration;

use sake::RpcError;
use sake::client::{Client, ClientError};
use sake::compose::Upstream;
use sake::prelude::*;
use serde_json::json;

mod gateway;
use gateway::{empty, named_gateway, serve};

async fn upstream() -> String {
    serve(Server::from_registry()).await
}

fn text(r: &CallToolResult) -> Option<&str> {
    r.content.first().and_then(|c| c.as_text())
}

// ---------------------------------------------------------------------------------------------
// Tasks through the gateway (issue41c): a task an upstream makes of a call is the caller's
// task, under an id of the gateway's; `tasks/get`, `tasks/update` and `tasks/cancel` reach the
// upstream's task, for the caller that created it only.

/// Works a moment, then adds: a task when the caller takes tasks.
#[tool(task = "optional")]
async fn slow_add(a: i64, b: i64) -> String {
    tokio::time::sleep(Duration::from_millis(300)).await;
    (a + b).to_string()
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Confirm {
    confirm: bool,
}

/// Works a moment, then asks for a confirmation: the question of its task.
#[tool(task = "optional")]
async fn slow_confirm(ctx: Context) -> Result<String, InputError> {
    tokio::time::sleep(Duration::from_millis(100)).await;
    let answer = ctx.elicit::<Confirm>("sure", "Really?").await?;
    Ok(format!(
        "confirmed = {}",
        answer.accepted().is_some_and(|c| c.confirm)
    ))
}

/// Works until cancelled.
#[tool(task = "optional")]
async fn endless_task() -> String {
    std::future::pending::<()>().await;
    String::new()
}

/// A 2026-07-28 client of `user` (`None`: anonymous) that takes tasks and answers forms
/// (its answers are given with `tasks/update`, never by this handler).
async fn caller(gw: &str, user: Option<&'static str>) -> Client {
    let mut b = Client::builder()
        .revision(Revision::V2026_07_28)
        .on_elicitation(|_| async { Err(RpcError::internal("answered with tasks/update")) });
    if let Some(u) = user {
        b = b.header(
            axum::http::HeaderName::from_static("x-user"),
            axum::http::HeaderValue::from_static(u),
        );
    }
    b.connect(gw).await.unwrap()
}

/// `tasks/get` until `done` holds (ten seconds at most).
async fn task_until(client: &Client, id: &str, done: &str) -> serde_json::Value {
    for _ in 0..200 {
        let t = client
            .request("tasks/get", json!({"taskId": id}))
            .await
            .unwrap();
        if t["status"] == done {
            return t;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("task {id} never became {done}");
}

fn rpc_error(e: ClientError) -> RpcError {
    match e {
        ClientError::Rpc { error, .. } => *error,
        other => panic!("not a JSON-RPC error: {other:?}"),
    }
}

fn unknown_task(id: &str) -> String {
    format!(
        "Failed to retrieve task: Task not found: no task \"{id}\" for this caller (the id is wrong, the task expired, or the server that held it restarted)"
    )
}

/// The upstreams that make tasks: 2026-07-28 found by discovery, and pinned.
fn task_upstreams(up: &str) -> [Upstream; 2] {
    [
        Upstream::url(up),
        Upstream::url(up).revision(Revision::V2026_07_28),
    ]
}

#[tokio::test]
async fn an_upstream_task_is_the_callers_task_under_the_gateways_id() {
    let up = upstream().await;
    for upstream in task_upstreams(&up) {
        let gw = named_gateway("", upstream).await;
        let alice = caller(&gw, Some("alice")).await;
        let created = alice
            .request(
                "tools/call",
                json!({"name": "slow_add", "arguments": {"a": 2, "b": 3}}),
            )
            .await
            .unwrap();
        assert_eq!(created["resultType"], "task", "{created}");
        assert_eq!(created["status"], "working", "{created}");
        assert_eq!(created["ttlMs"], 300_000, "{created}");
        assert_eq!(created["pollIntervalMs"], 1000, "{created}");
        let id = created["taskId"].as_str().unwrap().to_owned();
        assert_eq!(id.len(), 32, "{id}");
        // The id is the gateway's: the upstream knows no such task.
        let direct = Client::builder()
            .revision(Revision::V2026_07_28)
            .connect(&up)
            .await
            .unwrap();
        let e = rpc_error(
            direct
                .request("tasks/get", json!({"taskId": id}))
                .await
                .unwrap_err(),
        );
        assert_eq!((e.code, e.message), (-32602, unknown_task(&id)));
        // Polled to completion, with the upstream's result, as the upstream gives it.
        let done = task_until(&alice, &id, "completed").await;
        assert_eq!(done["taskId"], id.as_str());
        assert_eq!(
            done["result"]["content"],
            json!([{"type": "text", "text": "5"}]),
            "{done}"
        );
        let theirs = direct
            .request(
                "tools/call",
                json!({"name": "slow_add", "arguments": {"a": 2, "b": 3}}),
            )
            .await
            .unwrap();
        let theirs = task_until(&direct, theirs["taskId"].as_str().unwrap(), "completed").await;
        assert_eq!(done["result"], theirs["result"]);
        // Another caller, or an anonymous one, learns nothing: exactly an unknown id.
        for other in [Some("bob"), None] {
            let other = caller(&gw, other).await;
            for (method, params) in [
                ("tasks/get", json!({"taskId": id})),
                ("tasks/cancel", json!({"taskId": id})),
                ("tasks/update", json!({"taskId": id, "inputResponses": {}})),
            ] {
                let e = rpc_error(other.request(method, params).await.unwrap_err());
                assert_eq!((e.code, e.message), (-32602, unknown_task(&id)), "{method}");
            }
        }
        // Still alice's.
        let again = task_until(&alice, &id, "completed").await;
        assert_eq!(again["result"], done["result"]);
    }
}

#[tokio::test]
async fn an_upstream_tasks_question_is_answered_with_tasks_update() {
    let up = upstream().await;
    for upstream in task_upstreams(&up) {
        let gw = named_gateway("", upstream).await;
        let alice = caller(&gw, Some("alice")).await;
        let created = alice
            .request("tools/call", json!({"name": "slow_confirm"}))
            .await
            .unwrap();
        assert_eq!(created["resultType"], "task", "{created}");
        let id = created["taskId"].as_str().unwrap().to_owned();
        let asking = task_until(&alice, &id, "input_required").await;
        let requests = asking["inputRequests"].as_object().unwrap();
        assert_eq!(requests.keys().collect::<Vec<_>>(), ["sure"], "{asking}");
        assert_eq!(requests["sure"]["method"], "elicitation/create");
        assert_eq!(requests["sure"]["params"]["message"], "Really?");
        let ack = alice
            .request(
                "tasks/update",
                json!({"taskId": id, "inputResponses": {
                    "sure": {"action": "accept", "content": {"confirm": true}}}}),
            )
            .await
            .unwrap();
        assert_eq!(ack.get("taskId"), None, "{ack}");
        assert_eq!(ack.get("status"), None, "{ack}");
        let done = task_until(&alice, &id, "completed").await;
        assert_eq!(
            done["result"]["content"],
            json!([{"type": "text", "text": "confirmed = true"}]),
            "{done}"
        );
        assert_eq!(done["result"].get("isError"), None, "{done}");
    }
}

#[tokio::test]
async fn an_upstream_task_is_cancelled_through_the_gateway() {
    let up = upstream().await;
    for upstream in task_upstreams(&up) {
        let gw = named_gateway("", upstream).await;
        let alice = caller(&gw, Some("alice")).await;
        let created = alice
            .request("tools/call", json!({"name": "endless_task"}))
            .await
            .unwrap();
        let id = created["taskId"].as_str().unwrap().to_owned();
        let working = alice
            .request("tasks/get", json!({"taskId": id}))
            .await
            .unwrap();
        assert_eq!(working["status"], "working", "{working}");
        let ack = alice
            .request("tasks/cancel", json!({"taskId": id}))
            .await
            .unwrap();
        assert_eq!(ack.get("taskId"), None, "{ack}");
        let cancelled = task_until(&alice, &id, "cancelled").await;
        assert_eq!(cancelled.get("result"), None, "{cancelled}");
        assert_eq!(cancelled.get("error"), None, "{cancelled}");
    }
}

/// What cannot be relayed: a handshake upstream has no tasks (its calls answer as calls), and
/// a handshake caller none either.
#[tokio::test]
async fn without_tasks_on_either_side_a_task_tool_answers_as_a_call() {
    let up = upstream().await;
    let gw = named_gateway("", Upstream::url(&up).revision(Revision::V2025_11_25)).await;
    let alice = caller(&gw, Some("alice")).await;
    let out = alice
        .request(
            "tools/call",
            json!({"name": "slow_add", "arguments": {"a": 1, "b": 2}}),
        )
        .await
        .unwrap();
    assert_eq!(out["resultType"], "complete", "{out}");
    assert_eq!(
        out["content"],
        json!([{"type": "text", "text": "3"}]),
        "{out}"
    );
    let gw = named_gateway("", Upstream::url(&up)).await;
    let legacy = Client::builder()
        .revision(Revision::V2025_11_25)
        .connect(&gw)
        .await
        .unwrap();
    let out = legacy
        .call_tool("slow_add", json!({"a": 2, "b": 2}))
        .await
        .unwrap();
    assert_eq!(text(&out), Some("4"));
}

/// Two upstreams' tasks through one gateway: each id reaches its own upstream's task.
#[tokio::test]
async fn the_tasks_of_two_upstreams_each_reach_their_own() {
    let (one, two) = (upstream().await, upstream().await);
    let gw = serve(
        empty()
            .proxy("one", Upstream::url(&one))
            .proxy("two", Upstream::url(&two)),
    )
    .await;
    let client = caller(&gw, None).await;
    let mut ids = Vec::new();
    for (tool, a) in [("one_slow_add", 1), ("two_slow_add", 10)] {
        let created = client
            .request(
                "tools/call",
                json!({"name": tool, "arguments": {"a": a, "b": a}}),
            )
            .await
            .unwrap();
        assert_eq!(created["resultType"], "task", "{created}");
        ids.push(created["taskId"].as_str().unwrap().to_owned());
    }
    assert_ne!(ids[0], ids[1]);
    for (id, sum) in ids.iter().zip(["2", "20"]) {
        let done = task_until(&client, id, "completed").await;
        assert_eq!(
            done["result"]["content"],
            json!([{"type": "text", "text": sum}]),
            "{done}"
        );
    }
    // A cancellation reaches the upstream that runs the task, and only its task.
    let endless = client
        .request("tools/call", json!({"name": "two_endless_task"}))
        .await
        .unwrap();
    let id = endless["taskId"].as_str().unwrap();
    client
        .request("tasks/cancel", json!({"taskId": id}))
        .await
        .unwrap();
    task_until(&client, id, "cancelled").await;
    let done = task_until(&client, &ids[1], "completed").await;
    assert_eq!(done["status"], "completed");
}
