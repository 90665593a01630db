//! The tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) on the wire: a tool call
//! the server answers with a task, `tasks/get`, `tasks/update`, `tasks/cancel`,
//! `notifications/tasks` on listen streams, every state transition, expiry, callers, and
//! the errors. Exact statuses and whole payloads; every reply is validated against the
//! 2026-07-28 schema and, for the extension's messages, the extension's schema (by the harness,
//! `sake_tests::schema`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use sake::RpcError;
use sake::prelude::*;
use sake_tests::fixtures::NameForm;
use sake_tests::rpc::{complete, err, ok, server_meta, text_result, with_caps};
use sake_tests::{Req, Wire};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::Notify;

// ---------------------------------------------------------------------------------------------
// The server under test

/// Gates the tests open one at a time, by name.
static GATES: LazyLock<Mutex<HashMap<String, Arc<Notify>>>> = LazyLock::new(Default::default);

fn gate(name: &str) -> Arc<Notify> {
    GATES
        .lock()
        .unwrap()
        .entry(name.to_owned())
        .or_default()
        .clone()
}

fn open_gate(name: &str) {
    gate(name).notify_one();
}

/// Waits at a gate, reports it is half way, waits at a second gate, and ends.
#[tool(task = "optional")]
async fn held(
    /// The gate's name.
    gate_name: String,
    ctx: Context,
) -> String {
    gate(&gate_name).notified().await;
    ctx.progress_message(1.0, Some(2.0), "half way").await;
    gate(&format!("{gate_name}-2")).notified().await;
    format!("released {gate_name}")
}

#[derive(Deserialize, JsonSchema)]
struct Confirm {
    ok: bool,
}

static ASK_RUNS: AtomicUsize = AtomicUsize::new(0);

/// Waits at a gate (the work before the question: it runs again with the answer), then asks.
#[tool(task = "optional")]
async fn ask(
    /// The gate's name.
    gate_name: String,
    ctx: Context,
) -> Result<String, InputError> {
    ASK_RUNS.fetch_add(1, SeqCst);
    gate(&gate_name).notified().await;
    let answer = ctx.elicit::<Confirm>("confirm", "Proceed?").await?;
    Ok(format!(
        "confirmed: {}",
        answer.accepted().is_some_and(|c| c.ok)
    ))
}

/// After a moment, asks two questions at once.
#[tool(task = "optional")]
async fn two(ctx: Context) -> Result<String, InputError> {
    tokio::time::sleep(Duration::from_millis(5)).await;
    let (a, b) = tokio::join!(
        ctx.elicit::<NameForm>("a", "First?"),
        ctx.elicit::<NameForm>("b", "Second?")
    );
    let name = |e: Elicitation<NameForm>| e.accepted().map_or_else(String::new, |n| n.name);
    Ok(format!("{} and {}", name(a?), name(b?)))
}

/// Fails as a tool (`isError`) after a moment: the task completes.
#[tool(task = "required")]
async fn tool_error() -> Result<String, String> {
    tokio::time::sleep(Duration::from_millis(5)).await;
    Err("it broke".into())
}

/// Fails with a protocol error after a moment: the task fails.
#[tool(task = "optional")]
async fn protocol_error(ctx: Context) -> &'static str {
    tokio::time::sleep(Duration::from_millis(5)).await;
    ctx.fail_with(RpcError::internal("the backend is down"));
    "never seen"
}

/// Panics after a moment: the task fails, the server goes on.
#[tool(task = "optional")]
async fn panics() -> &'static str {
    tokio::time::sleep(Duration::from_millis(5)).await;
    panic!("boom")
}

/// The marks of the `endless` runs that saw their cancellation.
static STOPPED: LazyLock<Mutex<Vec<String>>> = LazyLock::new(Default::default);

/// Works until it is stopped.
#[tool(task = "optional")]
async fn endless(
    /// Recorded when the run sees its cancellation.
    mark: Option<String>,
    ctx: Context,
) -> &'static str {
    let watcher = ctx.clone();
    tokio::spawn(async move {
        watcher.cancelled().await;
        if let Some(mark) = mark {
            STOPPED.lock().unwrap().push(mark);
        }
    });
    loop {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Returns at once: never a task, even when it may be one.
#[tool(task = "optional")]
fn quick() -> &'static str {
    "at once"
}

/// Runs only as a task.
#[tool(task = "required")]
async fn only_task() -> &'static str {
    tokio::time::sleep(Duration::from_millis(5)).await;
    "done"
}

/// Never a task.
#[tool]
async fn plain() -> &'static str {
    tokio::time::sleep(Duration::from_millis(5)).await;
    "plain"
}

/// Asks a name in the call itself, then works as a task.
#[tool(task = "required")]
async fn name_first(ctx: Context) -> Result<String, InputError> {
    let name = ctx
        .elicit::<NameForm>("user_name", "What is your name?")
        .await?
        .accepted()
        .map_or_else(String::new, |n| n.name);
    tokio::time::sleep(Duration::from_millis(5)).await;
    Ok(format!("Hello, {name}!"))
}

/// Needs sampling.
#[tool(task = "optional", requires(sampling))]
async fn needs_sampling() -> &'static str {
    "sampled"
}

const SERVER: (&str, &str) = ("tasks", "1.0.0");
const EXT: &str = "io.modelcontextprotocol/tasks";

fn server() -> Server {
    Server::from_registry().name(SERVER.0).version(SERVER.1)
}

fn wire() -> Wire {
    Wire::new(server())
}

/// The capabilities of a client that takes tasks and answers forms.
fn caps() -> Value {
    json!({"elicitation": {}, "extensions": {EXT: {}}})
}

fn call(id: i64, name: &str, arguments: Value) -> Req {
    Req::modern(
        id,
        "tools/call",
        with_caps(json!({"name": name, "arguments": arguments}), caps()),
    )
}

fn on_task(id: i64, method: &str, task: &str, more: Value) -> Req {
    let mut params = json!({"taskId": task});
    params
        .as_object_mut()
        .unwrap()
        .extend(more.as_object().unwrap().clone());
    Req::modern(id, method, with_caps(params, caps()))
}

/// Calls `name` and returns the task it became, checking the `CreateTaskResult` whole.
async fn create(w: &Wire, name: &str, arguments: Value) -> String {
    let reply = w.send(call(1, name, arguments)).await;
    let result = reply.json(200)["result"].clone();
    let id = result["taskId"].as_str().expect("a task").to_owned();
    assert_eq!(id.len(), 32, "128 random bits in hex: {id}");
    assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
    assert_eq!(result["createdAt"], result["lastUpdatedAt"]);
    assert_eq!(
        masked(&id, result),
        json!({"resultType": "task", "taskId": "<id>", "status": "working",
            "createdAt": "<time>", "lastUpdatedAt": "<time>",
            "ttlMs": 300_000, "pollIntervalMs": 1000,
            "_meta": server_meta(SERVER.0, SERVER.1)})
    );
    id
}

/// `v` with its task id and its timestamps (checked: ISO 8601 UTC, to the millisecond)
/// replaced by placeholders.
fn masked(id: &str, mut v: Value) -> Value {
    assert_eq!(v["taskId"], id);
    v["taskId"] = json!("<id>");
    for key in ["createdAt", "lastUpdatedAt"] {
        let t = v[key].as_str().unwrap_or_default();
        let b = t.as_bytes();
        let shape = b.len() == 24
            && b[4] == b'-'
            && b[7] == b'-'
            && b[10] == b'T'
            && b[13] == b':'
            && b[16] == b':'
            && b[19] == b'.'
            && b[23] == b'Z';
        assert!(shape, "{key} is not ISO 8601: {t}");
        v[key] = json!("<time>");
    }
    v
}

/// `tasks/get`, masked.
async fn get(w: &Wire, id: &str) -> Value {
    let reply = w.send(on_task(2, "tasks/get", id, json!({}))).await;
    masked(id, reply.json(200)["result"].clone())
}

/// Polls `tasks/get` until `done` holds (five seconds at most).
async fn until(w: &Wire, id: &str, done: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..500 {
        let t = get(w, id).await;
        if done(&t) {
            return t;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("task {id} never got there: {}", get(w, id).await);
}

fn status(s: &'static str) -> impl Fn(&Value) -> bool {
    move |t| t["status"] == s
}

/// A `tasks/get` result: the task's fields, then `extra`.
fn detailed(status: &str, extra: Value) -> Value {
    let mut v = json!({"resultType": "complete", "taskId": "<id>", "status": status,
        "createdAt": "<time>", "lastUpdatedAt": "<time>", "ttlMs": 300_000, "pollIntervalMs": 1000,
        "_meta": server_meta(SERVER.0, SERVER.1)});
    v.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    v
}

fn ack() -> Value {
    json!({"resultType": "complete", "_meta": server_meta(SERVER.0, SERVER.1)})
}

fn missing_extension(id: i64) -> Value {
    err(
        id,
        -32021,
        "Missing required client capability: the tasks extension; declare `extensions[\"io.modelcontextprotocol/tasks\"]: {}` in the request's `_meta[\"io.modelcontextprotocol/clientCapabilities\"]`",
        Some(json!({"requiredCapabilities": {"extensions": {EXT: {}}}})),
    )
}

fn not_found(id: i64, task: &str) -> Value {
    err(
        id,
        -32602,
        &format!(
            "Failed to retrieve task: Task not found: no task \"{task}\" for this caller (the id is wrong, the task expired, or the server that held it restarted)"
        ),
        None,
    )
}

fn form(message: &str, field: &str, ty: &str) -> Value {
    json!({"method": "elicitation/create", "params": {"message": message, "requestedSchema": {
        "type": "object", "properties": {field: {"type": ty}}, "required": [field]}}})
}

// ---------------------------------------------------------------------------------------------
// Negotiation

#[tokio::test]
async fn discovery_advertises_the_extension_and_the_handshake_does_not() {
    let w = wire();
    let reply = w.rpc(1, "server/discover", json!({})).await;
    assert_eq!(
        reply.json(200)["result"]["capabilities"],
        json!({"logging": {}, "tools": {"listChanged": true}, "extensions": {EXT: {}}})
    );
    let reply = w
        .send_as(
            "2025-11-25",
            Req::post(
                json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "c", "version": "1"}}})
                .to_string(),
            ),
        )
        .await;
    assert_eq!(
        reply.json(200)["result"]["capabilities"],
        json!({"logging": {}, "tools": {"listChanged": true}})
    );
}

#[tokio::test]
async fn a_request_that_does_not_declare_the_extension_gets_no_task() {
    let w = wire();
    // The task methods refuse it before looking the task up (HTTP 400).
    for (n, method, more) in [
        (1, "tasks/get", json!({})),
        (2, "tasks/update", json!({"inputResponses": {}})),
        (3, "tasks/cancel", json!({})),
    ] {
        let mut params = json!({"taskId": "gate-test"});
        params
            .as_object_mut()
            .unwrap()
            .extend(more.as_object().unwrap().clone());
        let reply = w.send(Req::modern(n, method, params)).await;
        reply.assert_json(400, missing_extension(n));
    }
    // A tool that runs only as a task is refused; one that may is served in the call.
    w.send(Req::modern(4, "tools/call", json!({"name": "only_task"})))
        .await
        .assert_json(400, missing_extension(4));
    // (`held` waits at its gates within the call: open them first.)
    open_gate("undeclared");
    open_gate("undeclared-2");
    w.send(Req::modern(
        6,
        "tools/call",
        json!({"name": "held", "arguments": {"gate_name": "undeclared"}}),
    ))
    .await
    .assert_json(200, ok(6, text_result(SERVER, "released undeclared")));
    // Only the request being served counts: its own `_meta` declares it.
    let reply = w.send(call(7, "only_task", json!({}))).await;
    assert_eq!(reply.json(200)["result"]["resultType"], "task");
    // The legacy `task` param is no opt-in, and no error.
    let reply = w
        .send(Req::modern(
            8,
            "tools/call",
            json!({"name": "quick", "task": {"ttl": 60000, "pollInterval": 100}}),
        ))
        .await;
    reply.assert_json(200, ok(8, text_result(SERVER, "at once")));
}

#[tokio::test]
async fn the_server_decides_what_becomes_a_task() {
    let w = wire();
    // A function that returns at once, and a tool that is never a task, answer in the call.
    w.send(call(1, "quick", json!({})))
        .await
        .assert_json(200, ok(1, text_result(SERVER, "at once")));
    w.send(call(2, "plain", json!({})))
        .await
        .assert_json(200, ok(2, text_result(SERVER, "plain")));
    // A capability the tool requires is checked first.
    w.send(call(3, "needs_sampling", json!({})))
        .await
        .assert_json(
            400,
            err(
                3,
                -32021,
                "Missing required client capability: sampling",
                Some(json!({"requiredCapabilities": {"sampling": {}}})),
            ),
        );
}

#[tokio::test]
async fn removed_methods_and_headers() {
    let w = wire();
    // tasks/result and tasks/list were removed (-32601, 404; no Mcp-Name for them).
    for (n, method) in [(1, "tasks/result"), (2, "tasks/list")] {
        let reply = w
            .send(Req::modern(
                n,
                method,
                with_caps(json!({"taskId": "x"}), caps()),
            ))
            .await;
        reply.assert_json(
            404,
            err(n, -32601, &format!("Method not found: {method}"), None),
        );
    }
    let id = create(&w, "only_task", json!({})).await;
    // Mcp-Name carries the task id.
    let reply = w
        .send(on_task(3, "tasks/get", &id, json!({})).header("mcp-name", "another-task"))
        .await;
    reply.assert_json(
        400,
        err(
            3,
            -32020,
            &format!(
                "Header mismatch: Mcp-Name header value \"another-task\" does not match body value \"{id}\""
            ),
            None,
        ),
    );
    let reply = w
        .send(on_task(4, "tasks/get", &id, json!({})).without("mcp-name"))
        .await;
    reply.assert_json(
        400,
        err(
            4,
            -32020,
            "Header mismatch: missing Mcp-Name header; send the request's `taskId`",
            None,
        ),
    );
    // Missing or malformed params. Over HTTP, no `taskId` is first no `Mcp-Name`.
    let reply = w
        .send(Req::modern(5, "tasks/get", with_caps(json!({}), caps())))
        .await;
    reply.assert_json(
        400,
        err(
            5,
            -32020,
            "Header mismatch: missing Mcp-Name header; send the request's `taskId`",
            None,
        ),
    );
    let reply = w
        .send(on_task(
            6,
            "tasks/update",
            &id,
            json!({"inputResponses": [1]}),
        ))
        .await;
    reply.assert_json(200, err(6, -32602, "Invalid params: `tasks/update` needs `inputResponses`, an object mapping each input request's key to the client's result", None));
    // Unknown ids: -32602 for each method.
    for (n, method, more) in [
        (7, "tasks/get", json!({})),
        (8, "tasks/update", json!({"inputResponses": {}})),
        (9, "tasks/cancel", json!({})),
    ] {
        let reply = w
            .send(on_task(
                n,
                method,
                "tasks-conformance-nonexistent-12345",
                more,
            ))
            .await;
        reply.assert_json(200, not_found(n, "tasks-conformance-nonexistent-12345"));
    }
}

#[tokio::test]
async fn handshake_revisions_have_no_tasks() {
    let w = wire();
    let s = w.handshake("2025-11-25", json!({})).await;
    // The methods do not exist there.
    let reply = w
        .send_as(
            "2025-11-25",
            Req::in_handshake(&s, 1, "tasks/get", json!({"taskId": "x"})),
        )
        .await;
    reply.assert_json(200, err(1, -32601, "Method not found: tasks/get", None));
    // A tool that runs only as a task is not listed, and not served.
    let reply = w
        .send_as(
            "2025-11-25",
            Req::in_handshake(&s, 2, "tools/list", json!({})),
        )
        .await;
    let names: Vec<&str> = reply.json(200)["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(!names.contains(&"only_task") && !names.contains(&"tool_error"));
    assert!(names.contains(&"held") && names.contains(&"plain"));
    assert!(
        reply.json(200)["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t.get("execution").is_none())
    );
    let reply = w
        .send_as(
            "2025-11-25",
            Req::in_handshake(&s, 3, "tools/call", json!({"name": "only_task"})),
        )
        .await;
    reply.assert_json(200, err(3, -32602, "Tool `only_task` runs only as a task (the tasks extension, io.modelcontextprotocol/tasks), which revision 2025-11-25 does not have. It is served on 2026-07-28.", None));
    // An optional one is served within the call.
    let reply = w
        .send_as(
            "2025-11-25",
            Req::in_handshake(&s, 4, "tools/call", json!({"name": "quick"})),
        )
        .await;
    reply.assert_json(
        200,
        ok(4, json!({"content": [{"type": "text", "text": "at once"}]})),
    );
}

// ---------------------------------------------------------------------------------------------
// Transitions

#[tokio::test]
async fn working_with_progress_then_completed() {
    let w = wire();
    let id = create(&w, "held", json!({"gate_name": "progress"})).await;
    // Durable before it was announced: readable at once.
    assert_eq!(get(&w, &id).await, detailed("working", json!({})));
    open_gate("progress");
    // Progress becomes the status message.
    let t = until(&w, &id, |t| t.get("statusMessage").is_some()).await;
    assert_eq!(t, detailed("working", json!({"statusMessage": "half way"})));
    open_gate("progress-2");
    let t = until(&w, &id, status("completed")).await;
    assert_eq!(
        t,
        detailed(
            "completed",
            json!({"result": text_result(SERVER, "released progress")})
        )
    );
    // An ended task stays as it is: a cancel is acknowledged and changes nothing, an answer
    // is ignored.
    w.send(on_task(3, "tasks/cancel", &id, json!({})))
        .await
        .assert_json(200, ok(3, ack()));
    w.send(on_task(
        4,
        "tasks/update",
        &id,
        json!({"inputResponses": {"x": 1}}),
    ))
    .await
    .assert_json(200, ok(4, ack()));
    assert_eq!(get(&w, &id).await, t);
}

#[tokio::test]
async fn working_input_required_working_completed() {
    let w = wire();
    let runs = ASK_RUNS.load(SeqCst);
    let id = create(&w, "ask", json!({"gate_name": "ask"})).await;
    open_gate("ask");
    let t = until(&w, &id, status("input_required")).await;
    assert_eq!(
        t,
        detailed(
            "input_required",
            json!({"inputRequests": {"confirm": form("Proceed?", "ok", "boolean")}})
        )
    );
    // Keys that are not outstanding are ignored, whatever their value.
    w.send(on_task(
        3,
        "tasks/update",
        &id,
        json!({"inputResponses": {"unknown-key": {"ignored": true}}}),
    ))
    .await
    .assert_json(200, ok(3, ack()));
    assert_eq!(get(&w, &id).await["status"], "input_required");
    // The answer: the function runs again from the start, waiting at its gate (working).
    w.send(on_task(
        4,
        "tasks/update",
        &id,
        json!({"inputResponses": {"confirm": {"action": "accept", "content": {"ok": true}}}}),
    ))
    .await
    .assert_json(200, ok(4, ack()));
    assert_eq!(get(&w, &id).await, detailed("working", json!({})));
    open_gate("ask");
    let t = until(&w, &id, status("completed")).await;
    assert_eq!(
        t,
        detailed(
            "completed",
            json!({"result": text_result(SERVER, "confirmed: true")})
        )
    );
    assert_eq!(ASK_RUNS.load(SeqCst) - runs, 2, "run again with the answer");
}

#[tokio::test]
async fn partial_answers_keep_the_task_waiting() {
    let w = wire();
    let id = create(&w, "two", json!({})).await;
    let t = until(&w, &id, status("input_required")).await;
    assert_eq!(
        t,
        detailed(
            "input_required",
            json!({"inputRequests": {"a": form("First?", "name", "string"),
                "b": form("Second?", "name", "string")}})
        )
    );
    let answer = |name: &str| json!({"action": "accept", "content": {"name": name}});
    w.send(on_task(
        3,
        "tasks/update",
        &id,
        json!({"inputResponses": {"a": answer("Ada")}}),
    ))
    .await
    .assert_json(200, ok(3, ack()));
    // At once: the answered key is gone, the other still outstanding.
    assert_eq!(
        get(&w, &id).await,
        detailed(
            "input_required",
            json!({"inputRequests": {"b": form("Second?", "name", "string")}})
        )
    );
    // An answer of the wrong shape to an outstanding key is refused; nothing is taken.
    let reply = w
        .send(on_task(
            4,
            "tasks/update",
            &id,
            json!({"inputResponses": {"b": 12}}),
        ))
        .await;
    let e = reply.json(200)["error"].clone();
    assert_eq!(e["code"], -32602);
    assert!(
        e["message"].as_str().unwrap().starts_with(
            "Invalid params: inputResponses[\"b\"] is not a valid elicitation/create result: "
        ),
        "{e}"
    );
    assert_eq!(
        get(&w, &id).await["inputRequests"]
            .as_object()
            .unwrap()
            .len(),
        1
    );
    w.send(on_task(
        5,
        "tasks/update",
        &id,
        json!({"inputResponses": {"b": answer("Bo")}}),
    ))
    .await
    .assert_json(200, ok(5, ack()));
    let t = until(&w, &id, status("completed")).await;
    assert_eq!(
        t,
        detailed(
            "completed",
            json!({"result": text_result(SERVER, "Ada and Bo")})
        )
    );
}

#[tokio::test]
async fn a_tool_error_completes_a_protocol_error_fails() {
    let w = wire();
    let id = create(&w, "tool_error", json!({})).await;
    let t = until(&w, &id, status("completed")).await;
    assert_eq!(
        t,
        detailed(
            "completed",
            json!({"result": complete(SERVER, json!({"content": [{"type": "text", "text": "it broke"}], "isError": true}))})
        )
    );
    let id = create(&w, "protocol_error", json!({})).await;
    let t = until(&w, &id, status("failed")).await;
    assert_eq!(
        t,
        detailed(
            "failed",
            json!({"statusMessage": "the backend is down",
                "error": {"code": -32603, "message": "the backend is down"}})
        )
    );
    let id = create(&w, "panics", json!({})).await;
    let t = until(&w, &id, status("failed")).await;
    let message = "Internal error: `panics` failed unexpectedly; the server's log has the details";
    assert_eq!(
        t,
        detailed(
            "failed",
            json!({"statusMessage": message, "error": {"code": -32603, "message": message}})
        )
    );
    // The server goes on.
    w.send(call(9, "quick", json!({})))
        .await
        .assert_json(200, ok(9, text_result(SERVER, "at once")));
}

#[tokio::test]
async fn cancellation_stops_the_work_in_each_state() {
    let w = wire();
    // Running: the function is stopped, and what it spawned sees it.
    let id = create(&w, "endless", json!({"mark": "cancelled"})).await;
    w.send(on_task(2, "tasks/cancel", &id, json!({})))
        .await
        .assert_json(200, ok(2, ack()));
    let t = until(&w, &id, status("cancelled")).await;
    assert_eq!(
        t,
        detailed(
            "cancelled",
            json!({"statusMessage": "Cancelled by client request"})
        )
    );
    let seen = || STOPPED.lock().unwrap().iter().any(|m| m == "cancelled");
    for _ in 0..100 {
        if seen() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(seen(), "the function saw its cancellation");
    // Waiting for input: cancelled at once.
    let id = create(&w, "two", json!({})).await;
    until(&w, &id, status("input_required")).await;
    w.send(on_task(3, "tasks/cancel", &id, json!({})))
        .await
        .assert_json(200, ok(3, ack()));
    assert_eq!(
        get(&w, &id).await,
        detailed(
            "cancelled",
            json!({"statusMessage": "Cancelled by client request"})
        )
    );
    // Again: acknowledged, nothing changes.
    w.send(on_task(4, "tasks/cancel", &id, json!({})))
        .await
        .assert_json(200, ok(4, ack()));
}

#[tokio::test]
async fn input_rounds_in_the_call_then_the_task() {
    let w = wire();
    // The question comes before any other wait: answered in the call (MRTR), no task yet.
    let reply = w.send(call(1, "name_first", json!({}))).await;
    let round = reply.json(200)["result"].clone();
    assert_eq!(round["resultType"], "input_required");
    assert!(round.get("taskId").is_none());
    assert_eq!(
        round["inputRequests"],
        json!({"user_name": form("What is your name?", "name", "string")})
    );
    let state = round["requestState"].clone();
    let mut params = json!({"name": "name_first", "arguments": {},
        "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Alice"}}},
        "requestState": state});
    params = with_caps(params, caps());
    let reply = w.send(Req::modern(2, "tools/call", params)).await;
    let created = reply.json(200)["result"].clone();
    assert_eq!(created["resultType"], "task");
    assert!(created.get("requestState").is_none() && created.get("inputRequests").is_none());
    let id = created["taskId"].as_str().unwrap().to_owned();
    let t = until(&w, &id, status("completed")).await;
    assert_eq!(
        t,
        detailed(
            "completed",
            json!({"result": text_result(SERVER, "Hello, Alice!")})
        )
    );
}

// ---------------------------------------------------------------------------------------------
// Expiry, restarts, callers, bounds

#[tokio::test]
async fn tasks_expire_after_their_ttl() {
    let w = Wire::new(server().task_ttl(Duration::from_millis(300)));
    let running = w.send(call(1, "endless", json!({}))).await.json(200)["result"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let done = w.send(call(2, "only_task", json!({}))).await.json(200)["result"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let reply = w.send(on_task(3, "tasks/get", &done, json!({}))).await;
    assert_eq!(reply.json(200)["result"]["ttlMs"], 300);
    // Still running when its time is up: stopped and failed, readable a while longer.
    let mut t = Value::Null;
    for _ in 0..500 {
        let reply = w.send(on_task(4, "tasks/get", &running, json!({}))).await;
        t = reply.json(200)["result"].clone();
        if t["status"] == "failed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let message = "Task expired before completion: its time to live elapsed";
    assert_eq!(t["statusMessage"], message);
    assert_eq!(t["error"], json!({"code": -32603, "message": message}));
    // Then both are gone.
    for task in [&running, &done] {
        let mut gone = false;
        for _ in 0..500 {
            let reply = w.send(on_task(5, "tasks/get", task, json!({}))).await;
            if reply.json(200).get("error").is_some() {
                reply.assert_json(200, not_found(5, task));
                gone = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(gone, "task {task} never expired");
    }
}

#[tokio::test]
async fn a_restarted_server_knows_no_task_of_before() {
    let before = wire();
    let id = create(&before, "endless", json!({})).await;
    // The same server, started again: the in-memory store began empty.
    let after = wire();
    after
        .send(on_task(2, "tasks/get", &id, json!({})))
        .await
        .assert_json(200, not_found(2, &id));
    before
        .send(on_task(3, "tasks/cancel", &id, json!({})))
        .await
        .assert_json(200, ok(3, ack()));
}

#[derive(Clone)]
struct User(&'static str);

#[tokio::test]
async fn only_the_caller_that_created_a_task_sees_it() {
    let w = Wire::new(server().principal(|ext| ext.get::<User>().map(|u| u.0.to_owned())));
    let as_user = |req: Req, user: Option<&'static str>| match user {
        Some(u) => req.extension(User(u)),
        None => req,
    };
    let reply = w
        .send(as_user(call(1, "endless", json!({})), Some("alice")))
        .await;
    let id = reply.json(200)["result"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    // Another caller, or an anonymous one, learns nothing: exactly an unknown id.
    for (n, user) in [(2, Some("bob")), (3, None)] {
        for method in ["tasks/get", "tasks/cancel"] {
            let reply = w
                .send(as_user(on_task(n, method, &id, json!({})), user))
                .await;
            reply.assert_json(200, not_found(n, &id));
        }
        let reply = w
            .send(as_user(
                on_task(n, "tasks/update", &id, json!({"inputResponses": {}})),
                user,
            ))
            .await;
        reply.assert_json(200, not_found(n, &id));
    }
    let reply = w
        .send(as_user(
            on_task(4, "tasks/get", &id, json!({})),
            Some("alice"),
        ))
        .await;
    assert_eq!(reply.json(200)["result"]["status"], "working");
    w.send(as_user(
        on_task(5, "tasks/cancel", &id, json!({})),
        Some("alice"),
    ))
    .await
    .assert_json(200, ok(5, ack()));
}

#[tokio::test]
async fn the_store_bounds_the_tasks_of_a_caller() {
    let w = Wire::new(
        server().task_store(sake::tasks::MemoryTaskStore::new().max_tasks_per_principal(1)),
    );
    create(&w, "endless", json!({})).await;
    let reply = w.send(call(2, "endless", json!({}))).await;
    reply.assert_json(
        429,
        err(
            2,
            -32000,
            "Too many tasks: this caller holds 1 tasks, the limit per caller; retry once some have ended and expired",
            None,
        ),
    );
    // What ends at once needs no task, and is still served.
    w.send(call(3, "quick", json!({})))
        .await
        .assert_json(200, ok(3, text_result(SERVER, "at once")));
}

// ---------------------------------------------------------------------------------------------
// notifications/tasks

const SUB: &str = "io.modelcontextprotocol/subscriptionId";

fn listen(id: i64, task_ids: Value, capabilities: Value) -> Req {
    Req::modern(
        id,
        "subscriptions/listen",
        with_caps(
            json!({"notifications": {"taskIds": task_ids}}),
            capabilities,
        ),
    )
}

/// A `notifications/tasks` of stream `sub`, masked.
fn task_note(task: &str, message: Value, sub: i64) -> Value {
    assert_eq!(message["method"], "notifications/tasks");
    let mut params = message["params"].clone();
    assert_eq!(params["_meta"], json!({SUB: sub}));
    params.as_object_mut().unwrap().remove("_meta");
    masked(task, params)
}

fn note(status: &str, extra: Value) -> Value {
    let mut v = detailed(status, extra);
    let o = v.as_object_mut().unwrap();
    o.remove("resultType");
    o.remove("_meta");
    v
}

#[tokio::test]
async fn listen_streams_report_the_tasks_they_name() {
    let w = wire();
    // Undeclared: refused.
    w.send(listen(1, json!(["x"]), json!({})))
        .await
        .assert_json(400, missing_extension(1));
    // A stream holds its ids while open: none longer than a task id can be.
    w.send(listen(2, json!(["x".repeat(257)]), caps()))
        .await
        .assert_json(
            200,
            json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -32602, "message": "Invalid params: a task id of 257 bytes in `notifications.taskIds`; this server's task ids have at most 256"}}),
        );
    // At most 1024 ids a stream (the sessions' subscription limit), counted while read: a
    // million ids in one body are refused without keeping them.
    let many: Vec<&str> = vec!["t"; 1_000_000];
    w.send(listen(3, json!(many), caps()))
        .await
        .assert_json(
            200,
            json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32602, "message": "Invalid params: `notifications.taskIds` names 1000000 tasks; this server follows at most 1024 per stream"}}),
        );
    // Too many is told before too long; not an array is not a filter.
    let mut both = vec![json!("x".repeat(300))];
    both.extend((0..1024).map(|n| json!(n.to_string())));
    w.send(listen(4, json!(both), caps()))
        .await
        .assert_json(
            200,
            json!({"jsonrpc": "2.0", "id": 4, "error": {"code": -32602, "message": "Invalid params: `notifications.taskIds` names 1025 tasks; this server follows at most 1024 per stream"}}),
        );
    w.send(listen(5, json!("x"), caps()))
        .await
        .assert_json(
            200,
            json!({"jsonrpc": "2.0", "id": 5, "error": {"code": -32602, "message": "Invalid params: `notifications` is not a SubscriptionFilter: invalid type: string \"x\", expected an array of task ids"}}),
        );
    let id = create(&w, "held", json!({"gate_name": "listen"})).await;
    let mut s = w.open(listen(7, json!([id, "nope", id]), caps())).await;
    s.assert_sse();
    // The acknowledgement names the tasks the server reports on: this caller's.
    assert_eq!(
        s.message().await,
        json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
            "params": {"notifications": {"taskIds": [id]}, "_meta": {SUB: 7}}})
    );
    // Where it stands now, then each change, until it ends.
    assert_eq!(
        task_note(&id, s.message().await, 7),
        note("working", json!({}))
    );
    open_gate("listen");
    assert_eq!(
        task_note(&id, s.message().await, 7),
        note("working", json!({"statusMessage": "half way"}))
    );
    open_gate("listen-2");
    assert_eq!(
        task_note(&id, s.message().await, 7),
        note(
            "completed",
            json!({"result": text_result(SERVER, "released listen")})
        )
    );
    s.assert_quiet_for(Duration::from_millis(100)).await;
}

// ---------------------------------------------------------------------------------------------
// Other transports

#[tokio::test]
async fn the_same_over_stdio() {
    let mut io = sake_tests::Stdio::start(server().build().unwrap());
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps()});
    io.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "only_task", "_meta": meta}}))
        .await;
    let created = io.recv("2026-07-28", Some("tools/call")).await;
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    assert_eq!(created["result"]["status"], "working");
    let mut last = Value::Null;
    for n in 2..500 {
        io.send(&json!({"jsonrpc": "2.0", "id": n, "method": "tasks/get",
            "params": {"taskId": id, "_meta": meta}}))
            .await;
        last = io.recv("2026-07-28", Some("tasks/get")).await;
        if last["result"]["status"] == "completed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(last["result"]["result"], text_result(SERVER, "done"));
    io.close().await;
}

#[tokio::test]
async fn the_same_through_the_test_client() {
    let client = sake::testing::TestClient::new(server())
        .unwrap()
        .capabilities(serde_json::from_value(caps()).unwrap());
    let e = client.request("tasks/get", json!({})).await.unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (
            -32602,
            "Invalid params: missing required parameter `taskId`"
        )
    );
    let e = client
        .request("tasks/get", json!({"taskId": 5}))
        .await
        .unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        (-32602, "Invalid params: `taskId` must be a string, not 5")
    );
    let created = client
        .request("tools/call", json!({"name": "only_task"}))
        .await
        .unwrap();
    assert_eq!(created["resultType"], "task");
    let id = created["taskId"].as_str().unwrap();
    for _ in 0..500 {
        let t = client
            .request("tasks/get", json!({"taskId": id}))
            .await
            .unwrap();
        if t["status"] == "completed" {
            assert_eq!(t["result"]["content"][0]["text"], "done");
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the task never completed");
}

#[tokio::test]
async fn a_task_keeps_only_a_bounded_copy_of_its_request() {
    let w = Wire::new(server().limits(|l| l.max_task_request_bytes(1000)));
    // Ignored padding past the bound: refused before a task exists.
    let pad = "x".repeat(2000);
    let reply = w.send(call(7, "only_task", json!({"pad": pad}))).await;
    reply.assert_json(
        200,
        json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -32602, "message":
            "Invalid params: the arguments have 2010 bytes, and a task keeps at most 1000 of its request (Limits::max_task_request_bytes); send less, or call `only_task` without a task"}}),
    );
    // Within it, the task is made.
    let id = create(&w, "only_task", json!({"pad": "x".repeat(900)})).await;
    let done = until(&w, &id, status("completed")).await;
    assert_eq!(done["status"], "completed", "{done}");
}
