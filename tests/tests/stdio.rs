//! stdio for both eras: newline-delimited JSON-RPC, exact payloads.
//!
//! Each scenario runs twice: in-process through `Service::serve_io` over `tokio::io::duplex`,
//! with the tools of `examples/stdio.rs` (compiled into this test), and against the real
//! `examples/stdio` binary on its stdin and stdout. Every line the server writes must be a
//! JSON-RPC 2.0 message (the peer fails the test otherwise), and each scenario ends by closing
//! stdin: nothing more may be written, and the server must stop cleanly (exit code 0).

#[path = "../../examples/stdio.rs"]
#[allow(dead_code)]
mod example;

use std::time::{Duration, Instant};

use sake::prelude::*;
use sake::registry::{PromptDef, ResourceDef, ToolDef};
use sake::{Registry, Service};
use sake_tests::{Peer, Spawned, modern_meta, within};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// The servers

/// A tool of this test only (not in the example): keeps its `Context` in a task that never
/// ends, as a tool that hands its context to background work does.
#[tool]
fn detach(ctx: Context) -> String {
    tokio::spawn(async move {
        let _ctx = ctx;
        std::future::pending::<()>().await;
    });
    "detached".into()
}

fn from_file(file: &str) -> Registry {
    Registry::from_defs(
        inventory::iter::<ToolDef>().filter(|d| d.location.file.ends_with(file)),
        inventory::iter::<PromptDef>().filter(|d| d.location.file.ends_with(file)),
        inventory::iter::<ResourceDef>().filter(|d| d.location.file.ends_with(file)),
    )
    .unwrap()
}

/// What `examples/stdio.rs` serves, built as its `main` builds it.
fn example_server() -> Server {
    Server::with_registry(from_file("examples/stdio.rs"))
        .name("sake-stdio")
        .version(env!("CARGO_PKG_VERSION"))
}

/// A connection to a service over in-memory pipes.
struct InProcess {
    peer: Peer,
    server: tokio::task::JoinHandle<Result<(), sake::Error>>,
}

fn connect(service: &Service) -> InProcess {
    let (client_w, server_r) = tokio::io::duplex(64 * 1024);
    let (server_w, client_r) = tokio::io::duplex(64 * 1024);
    InProcess {
        peer: Peer::new(client_w, client_r),
        server: tokio::spawn(service.clone().serve_io(server_r, server_w)),
    }
}

impl InProcess {
    /// Closes stdin: nothing more is written, and `serve_io` returns `Ok`.
    async fn finish(mut self) {
        self.peer.close();
        assert_eq!(self.peer.rest().await, Vec::<Value>::new());
        within("serve_io returning", self.server)
            .await
            .unwrap()
            .unwrap();
    }
}

/// Closes the binary's stdin: nothing more is written, the process exits with 0, its stderr
/// has the logs.
async fn finish(mut spawned: Spawned) {
    spawned.peer.close();
    assert_eq!(spawned.peer.rest().await, Vec::<Value>::new());
    let status = within("the process exiting", spawned.child.wait())
        .await
        .unwrap();
    assert_eq!(status.code(), Some(0), "exit status {status}");
    let stderr = within("reading stderr", spawned.stderr).await.unwrap();
    assert!(
        stderr.contains("serving MCP on stdio") && stderr.contains("stdin closed"),
        "stderr lacks the logs:\n{stderr}"
    );
}

/// Each scenario, in-process and against the binary.
macro_rules! scenarios {
    ($($name:ident),* $(,)?) => {
        mod in_process {
            $(
                #[tokio::test]
                async fn $name() {
                    let service = super::example_server().build().unwrap();
                    let mut conn = super::connect(&service);
                    super::$name(&mut conn.peer).await;
                    conn.finish().await;
                }
            )*
        }
        mod binary {
            $(
                #[tokio::test]
                async fn $name() {
                    let mut child = sake_tests::spawn_example("stdio");
                    super::$name(&mut child.peer).await;
                    super::finish(child).await;
                }
            )*
        }
    };
}

scenarios!(
    discover_and_modern_requests_need_no_initialize,
    a_legacy_request_without_initialize_is_refused,
    after_initialize_legacy_requests_speak_the_session_revision,
    a_2025_03_26_session_renders_without_structured_content_and_takes_batches,
    modern_requests_still_work_after_initialize,
    requests_run_concurrently_and_answer_out_of_order,
    a_cancelled_modern_request_writes_nothing_more,
    a_cancelled_legacy_request_writes_nothing_more,
    modern_progress_and_logs_follow_the_request_meta,
    legacy_logs_follow_logging_set_level,
    legacy_elicitation_is_a_request_on_stdout_answered_on_stdin,
    modern_elicitation_is_input_required,
    malformed_lines_are_answered_and_the_loop_goes_on,
    an_over_long_line_is_refused_and_the_loop_goes_on,
    eof_cancels_in_flight_work_and_stops_promptly,
);

// ---------------------------------------------------------------------------------------------
// Expected payloads

fn server_info() -> Value {
    json!({"name": "sake-stdio", "version": env!("CARGO_PKG_VERSION")})
}

fn server_meta() -> Value {
    json!({"io.modelcontextprotocol/serverInfo": server_info()})
}

fn capabilities() -> Value {
    json!({
        "logging": {},
        "prompts": {"listChanged": true},
        "resources": {"subscribe": true, "listChanged": true},
        "tools": {"listChanged": true},
    })
}

/// The example's tools; `output_schema` is false for 2025-03-26.
fn tools(output_schema: bool) -> Value {
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
        "annotations": {"readOnlyHint": true, "idempotentHint": true},
    });
    if output_schema {
        add["outputSchema"] = json!({
            "type": "object",
            "description": "The sum of two numbers.",
            "properties": {"sum": {"type": "integer", "description": "`a + b`."}},
            "required": ["sum"],
        });
    }
    json!([
        add,
        {
            "name": "greet_me",
            "description": "Asks the user for their name, then greets them.",
            "inputSchema": {"type": "object", "properties": {}},
        },
        {
            "name": "haiku",
            "description": "Asks the client's model for a haiku about `topic`.",
            "inputSchema": {
                "type": "object",
                "properties": {"topic": {"type": "string", "description": "What the haiku is about."}},
                "required": ["topic"],
            },
        },
        {
            "name": "sleep",
            "description": "Waits `millis` milliseconds (at most 10 s), reporting progress; cancellable.",
            "inputSchema": {
                "type": "object",
                "properties": {"millis": {"type": "integer", "description": "How long to wait.", "minimum": 0}},
                "required": ["millis"],
            },
        },
    ])
}

fn initialize_result(revision: &str) -> Value {
    json!({
        "protocolVersion": revision,
        "capabilities": capabilities(),
        "serverInfo": server_info(),
    })
}

fn response(id: impl Into<Value>, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id.into(), "result": result})
}

fn error(id: impl Into<Value>, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id.into(), "error": {"code": code, "message": message}})
}

fn error_without_id(code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "error": {"code": code, "message": message}})
}

fn text(t: &str) -> Value {
    json!({"content": [{"type": "text", "text": t}]})
}

/// A 2026-07-28 tool result.
fn modern_text(t: &str) -> Value {
    json!({"resultType": "complete", "content": [{"type": "text", "text": t}], "_meta": server_meta()})
}

fn sum_2025(sum: i64) -> Value {
    json!({"content": [{"type": "text", "text": format!("{{\"sum\":{sum}}}")}], "structuredContent": {"sum": sum}})
}

fn progress(token: Value, n: f64) -> Value {
    json!({
        "jsonrpc": "2.0",
        "method": "notifications/progress",
        "params": {"progressToken": token, "progress": n, "total": 4.0},
    })
}

fn sleeping_log(millis: u64) -> Value {
    json!({
        "jsonrpc": "2.0",
        "method": "notifications/message",
        "params": {"level": "info", "logger": "sleep", "data": format!("sleeping {millis} ms")},
    })
}

fn name_form() -> Value {
    json!({
        "message": "What is your name?",
        "requestedSchema": {
            "type": "object",
            "properties": {"name": {"type": "string", "description": "Your name."}},
            "required": ["name"],
        },
    })
}

fn modern(params: Value) -> Value {
    modern_with(params, json!({}), json!({}))
}

fn modern_with(mut params: Value, capabilities: Value, extra_meta: Value) -> Value {
    params["_meta"] = modern_meta(capabilities, extra_meta);
    params
}

fn call(name: &str, arguments: Value) -> Value {
    json!({"name": name, "arguments": arguments})
}

// ---------------------------------------------------------------------------------------------
// Scenarios

async fn discover_and_modern_requests_need_no_initialize(p: &mut Peer) {
    assert_eq!(
        p.call("d", "server/discover", modern(json!({}))).await,
        response(
            "d",
            json!({
                "resultType": "complete",
                "ttlMs": 60000,
                "cacheScope": "public",
                "supportedVersions": ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"],
                "capabilities": capabilities(),
                "_meta": server_meta(),
            })
        )
    );
    // Without `_meta` it is still a 2026-07-28 request (there is no session to put it in),
    // and those need `_meta`: a modern error, which dual-era clients recognise.
    assert_eq!(
        p.call(2, "server/discover", json!({})).await,
        error(
            2,
            -32602,
            "Invalid params: missing `_meta`; 2026-07-28 requests carry `params._meta` with `io.modelcontextprotocol/protocolVersion` (a string) and `io.modelcontextprotocol/clientCapabilities` (an object)"
        )
    );
    assert_eq!(
        p.call(3, "tools/list", modern(json!({}))).await,
        response(
            3,
            json!({
                "resultType": "complete",
                "ttlMs": 60000,
                "cacheScope": "public",
                "tools": tools(true),
                "_meta": server_meta(),
            })
        )
    );
    assert_eq!(
        p.call(
            4,
            "tools/call",
            modern(call("add", json!({"a": 2, "b": 3})))
        )
        .await,
        response(
            4,
            json!({
                "resultType": "complete",
                "content": [{"type": "text", "text": "{\"sum\":5}"}],
                "structuredContent": {"sum": 5},
                "_meta": server_meta(),
            })
        )
    );
    assert_eq!(
        p.call(5, "resources/read", modern(json!({"uri": "notes://hello"})))
            .await,
        response(
            5,
            json!({
                "resultType": "complete",
                "ttlMs": 60000,
                "cacheScope": "public",
                "contents": [{"uri": "notes://hello", "mimeType": "text/plain", "text": "Hello from sake over stdio."}],
                "_meta": server_meta(),
            })
        )
    );
    // A handshake revision in `_meta` is not served without `initialize`.
    assert_eq!(
        p.call(
            6,
            "tools/list",
            json!({"_meta": {
                "io.modelcontextprotocol/protocolVersion": "2025-06-18",
                "io.modelcontextprotocol/clientCapabilities": {},
            }})
        )
        .await,
        json!({"jsonrpc": "2.0", "id": 6, "error": {
            "code": -32022,
            "message": "Unsupported protocol version \"2025-06-18\"; handshake revisions are served after an `initialize` request, requests without a session need 2026-07-28",
            "data": {"supported": ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"], "requested": "2025-06-18"},
        }})
    );
    // Handshake-only methods do not exist in 2026-07-28.
    assert_eq!(
        p.call(7, "ping", modern(json!({}))).await,
        error(7, -32601, "Method not found: ping")
    );
}

async fn a_legacy_request_without_initialize_is_refused(p: &mut Peer) {
    assert_eq!(
        p.call(1, "tools/list", json!({})).await,
        error(
            1,
            -32602,
            "Invalid params: no `_meta`; send 2026-07-28 requests with params._meta (io.modelcontextprotocol/protocolVersion, io.modelcontextprotocol/clientCapabilities), or `initialize` first"
        )
    );
    // `ping` is answered in any state.
    p.barrier(2).await;
    // A revision the server does not serve is answered with the newest handshake revision.
    assert_eq!(
        p.initialize("2024-11-05", json!({})).await,
        response("init", initialize_result("2025-11-25"))
    );
}

async fn after_initialize_legacy_requests_speak_the_session_revision(p: &mut Peer) {
    assert_eq!(
        p.initialize("2025-06-18", json!({})).await,
        response("init", initialize_result("2025-06-18"))
    );
    assert_eq!(
        p.call(1, "tools/list", json!({})).await,
        response(1, json!({"tools": tools(true)}))
    );
    assert_eq!(
        p.call(2, "tools/call", call("add", json!({"a": 1, "b": 2})))
            .await,
        response(2, sum_2025(3))
    );
    assert_eq!(
        p.call(3, "resources/read", json!({"uri": "notes://hello"}))
            .await,
        response(
            3,
            json!({"contents": [{"uri": "notes://hello", "mimeType": "text/plain", "text": "Hello from sake over stdio."}]})
        )
    );
    assert_eq!(
        p.call(
            4,
            "prompts/get",
            json!({"name": "summarize", "arguments": {"text": "stdio"}})
        )
        .await,
        response(
            4,
            json!({"messages": [{"role": "user", "content": {"type": "text", "text": "Summarize in one sentence:\n\nstdio"}}]})
        )
    );
    // `server/discover` without `_meta` is a legacy request now, and legacy has no such method.
    assert_eq!(
        p.call(5, "server/discover", json!({})).await,
        error(5, -32601, "Method not found: server/discover")
    );
}

async fn a_2025_03_26_session_renders_without_structured_content_and_takes_batches(p: &mut Peer) {
    assert_eq!(
        p.initialize("2025-03-26", json!({})).await,
        response("init", initialize_result("2025-03-26"))
    );
    assert_eq!(
        p.call(1, "tools/list", json!({})).await,
        response(1, json!({"tools": tools(false)}))
    );
    p.send(json!([
        {"jsonrpc": "2.0", "id": "a", "method": "ping"},
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 1}},
        {"jsonrpc": "2.0", "id": "b", "method": "tools/call", "params": call("add", json!({"a": 1, "b": 2}))},
        {"jsonrpc": "2.0", "id": "c", "method": "nope"},
    ]))
    .await;
    assert_eq!(
        p.recv().await,
        json!([
            response("a", json!({})),
            response("b", text("{\"sum\":3}")),
            error("c", -32601, "Method not found: nope"),
        ])
    );
}

async fn modern_requests_still_work_after_initialize(p: &mut Peer) {
    p.initialize("2025-06-18", json!({})).await;
    assert_eq!(
        p.call(
            1,
            "tools/call",
            modern(call("add", json!({"a": 4, "b": 5})))
        )
        .await,
        response(
            1,
            json!({
                "resultType": "complete",
                "content": [{"type": "text", "text": "{\"sum\":9}"}],
                "structuredContent": {"sum": 9},
                "_meta": server_meta(),
            })
        )
    );
    let discover = p.call(2, "server/discover", modern(json!({}))).await;
    assert_eq!(discover["result"]["resultType"], "complete");
    // And the session still speaks its own revision.
    assert_eq!(
        p.call(3, "tools/call", call("add", json!({"a": 4, "b": 5})))
            .await,
        response(3, sum_2025(9))
    );
}

async fn requests_run_concurrently_and_answer_out_of_order(p: &mut Peer) {
    let started = Instant::now();
    p.request(
        "slow",
        "tools/call",
        modern(call("sleep", json!({"millis": 800}))),
    )
    .await;
    p.request(
        "fast",
        "tools/call",
        modern(call("add", json!({"a": 1, "b": 1}))),
    )
    .await;
    let first = p.recv().await;
    assert_eq!(first["id"], "fast", "the fast answer comes first: {first}");
    assert!(started.elapsed() < Duration::from_millis(800));
    assert_eq!(
        p.recv().await,
        response("slow", modern_text("slept 800 ms"))
    );
    // Legacy requests of a session run concurrently too.
    p.initialize("2025-11-25", json!({})).await;
    p.call(0, "logging/setLevel", json!({"level": "error"}))
        .await;
    p.request(1, "tools/call", call("sleep", json!({"millis": 400})))
        .await;
    p.request(2, "tools/call", call("add", json!({"a": 2, "b": 2})))
        .await;
    assert_eq!(p.recv().await, response(2, sum_2025(4)));
    assert_eq!(p.recv().await, response(1, text("slept 400 ms")));
}

/// Starts `sleep 2000` with a progress token, waits for its first progress, cancels it, and
/// checks that nothing more comes for it (it would have ended by then).
async fn cancel_after_first_progress(p: &mut Peer, params: Value, id: Value) {
    let token = params["_meta"]["progressToken"].clone();
    p.request(id.clone(), "tools/call", params).await;
    let started = Instant::now();
    assert_eq!(p.recv().await, progress(token, 1.0));
    p.notify(
        "notifications/cancelled",
        json!({"requestId": id, "reason": "no longer needed"}),
    )
    .await;
    p.barrier("after-cancel").await;
    let quiet = Duration::from_millis(2300).saturating_sub(started.elapsed());
    assert_eq!(p.recv_within(quiet).await, None);
    p.barrier("later").await;
    // A cancel for a request that is not running is ignored.
    p.notify("notifications/cancelled", json!({"requestId": "unknown"}))
        .await;
    p.barrier("end").await;
}

async fn a_cancelled_modern_request_writes_nothing_more(p: &mut Peer) {
    let params = modern_with(
        call("sleep", json!({"millis": 2000})),
        json!({}),
        json!({"progressToken": "c1"}),
    );
    cancel_after_first_progress(p, params, json!(10)).await;
}

async fn a_cancelled_legacy_request_writes_nothing_more(p: &mut Peer) {
    p.initialize("2025-06-18", json!({})).await;
    p.call("quiet", "logging/setLevel", json!({"level": "warning"}))
        .await;
    let mut params = call("sleep", json!({"millis": 2000}));
    params["_meta"] = json!({"progressToken": 77});
    cancel_after_first_progress(p, params, json!("legacy-1")).await;
}

async fn modern_progress_and_logs_follow_the_request_meta(p: &mut Peer) {
    // A progress token and a log level: the log message, four progress notifications, then
    // the result.
    let params = modern_with(
        call("sleep", json!({"millis": 40})),
        json!({}),
        json!({"progressToken": "t", "io.modelcontextprotocol/logLevel": "info"}),
    );
    p.request(1, "tools/call", params).await;
    assert_eq!(p.recv().await, sleeping_log(40));
    for i in 1..=4 {
        assert_eq!(p.recv().await, progress(json!("t"), f64::from(i)));
    }
    assert_eq!(p.recv().await, response(1, modern_text("slept 40 ms")));
    // A level above the message's: no message.
    let params = modern_with(
        call("sleep", json!({"millis": 40})),
        json!({}),
        json!({"progressToken": 5, "io.modelcontextprotocol/logLevel": "warning"}),
    );
    p.request(2, "tools/call", params).await;
    for i in 1..=4 {
        assert_eq!(p.recv().await, progress(json!(5), f64::from(i)));
    }
    assert_eq!(p.recv().await, response(2, modern_text("slept 40 ms")));
    // Neither: only the result.
    assert_eq!(
        p.call(
            3,
            "tools/call",
            modern(call("sleep", json!({"millis": 40})))
        )
        .await,
        response(3, modern_text("slept 40 ms"))
    );
    // An unknown level is refused.
    let bad = p
        .call(
            4,
            "tools/call",
            modern_with(
                call("sleep", json!({"millis": 40})),
                json!({}),
                json!({"io.modelcontextprotocol/logLevel": "loud"}),
            ),
        )
        .await;
    assert_eq!(
        bad,
        error(
            4,
            -32602,
            "Invalid params: `_meta[\"io.modelcontextprotocol/logLevel\"]` must be one of debug, info, notice, warning, error, critical, alert, emergency; got \"loud\""
        )
    );
}

async fn legacy_logs_follow_logging_set_level(p: &mut Peer) {
    p.initialize("2025-11-25", json!({})).await;
    let mut params = call("sleep", json!({"millis": 40}));
    params["_meta"] = json!({"progressToken": 1});
    // Before `logging/setLevel`, every level.
    p.request(1, "tools/call", params.clone()).await;
    assert_eq!(p.recv().await, sleeping_log(40));
    for i in 1..=4 {
        assert_eq!(p.recv().await, progress(json!(1), f64::from(i)));
    }
    assert_eq!(p.recv().await, response(1, text("slept 40 ms")));
    assert_eq!(
        p.call(2, "logging/setLevel", json!({"level": "loud"}))
            .await,
        error(
            2,
            -32602,
            "Invalid params: `level` must be one of debug, info, notice, warning, error, critical, alert, emergency"
        )
    );
    assert_eq!(
        p.call(3, "logging/setLevel", json!({"level": "notice"}))
            .await,
        response(3, json!({}))
    );
    p.request(4, "tools/call", params.clone()).await;
    for i in 1..=4 {
        assert_eq!(p.recv().await, progress(json!(1), f64::from(i)));
    }
    assert_eq!(p.recv().await, response(4, text("slept 40 ms")));
    assert_eq!(
        p.call(5, "logging/setLevel", json!({"level": "debug"}))
            .await,
        response(5, json!({}))
    );
    assert_eq!(
        p.call(6, "tools/call", call("sleep", json!({"millis": 40})))
            .await,
        sleeping_log(40)
    );
    assert_eq!(p.recv().await, response(6, text("slept 40 ms")));
}

async fn legacy_elicitation_is_a_request_on_stdout_answered_on_stdin(p: &mut Peer) {
    p.initialize("2025-06-18", json!({"elicitation": {}})).await;
    let ask = p
        .call("g1", "tools/call", call("greet_me", json!({})))
        .await;
    let id = ask["id"].clone();
    assert!(id.is_i64(), "the server's request ids are numbers: {ask}");
    // The question's key rides in `_meta` (what a gateway asks a 2026-07-28 client under).
    let mut params = name_form();
    params["_meta"] = json!({"io.github.sake-rs/inputKey": "name"});
    assert_eq!(
        ask,
        json!({"jsonrpc": "2.0", "id": id, "method": "elicitation/create", "params": params})
    );
    p.send(json!({"jsonrpc": "2.0", "id": id, "result": {"action": "accept", "content": {"name": "Ada"}}}))
        .await;
    assert_eq!(p.recv().await, response("g1", text("Hello, Ada!")));
    // Declined: the tool goes on without a name.
    let ask = p
        .call("g2", "tools/call", call("greet_me", json!({})))
        .await;
    p.send(json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "decline"}}))
        .await;
    assert_eq!(p.recv().await, response("g2", text("Hello, stranger!")));
    // An error answer reaches the tool as an error.
    let ask = p
        .call("g3", "tools/call", call("greet_me", json!({})))
        .await;
    p.send(json!({"jsonrpc": "2.0", "id": ask["id"], "error": {"code": -1, "message": "user closed the dialog"}}))
        .await;
    assert_eq!(
        p.recv().await,
        response(
            "g3",
            json!({
                "content": [{"type": "text", "text": "the client refused: user closed the dialog (-1)"}],
                "isError": true,
            })
        )
    );
    // An answer nobody waits for is ignored.
    p.send(json!({"jsonrpc": "2.0", "id": 999, "result": {"action": "accept"}}))
        .await;
    p.barrier("end").await;
}

async fn modern_elicitation_is_input_required(p: &mut Peer) {
    let first = p
        .call(
            1,
            "tools/call",
            modern_with(
                call("greet_me", json!({})),
                json!({"elicitation": {}}),
                json!({}),
            ),
        )
        .await;
    let state = first["result"]["requestState"].clone();
    assert!(
        state.as_str().is_some_and(|s| !s.is_empty()),
        "an opaque requestState: {first}"
    );
    assert_eq!(
        first,
        response(
            1,
            json!({
                "resultType": "input_required",
                "inputRequests": {"name": {"method": "elicitation/create", "params": name_form()}},
                "requestState": state,
                "_meta": server_meta(),
            })
        )
    );
    let mut retry = modern_with(
        call("greet_me", json!({})),
        json!({"elicitation": {}}),
        json!({}),
    );
    retry["inputResponses"] = json!({"name": {"action": "accept", "content": {"name": "Grace"}}});
    retry["requestState"] = state;
    assert_eq!(
        p.call(2, "tools/call", retry).await,
        response(2, modern_text("Hello, Grace!"))
    );
    // Without the capability the server cannot ask.
    assert_eq!(
        p.call(3, "tools/call", modern(call("greet_me", json!({}))))
            .await,
        json!({"jsonrpc": "2.0", "id": 3, "error": {
            "code": -32021,
            "message": "Missing required client capability: elicitation",
            "data": {"requiredCapabilities": {"elicitation": {}}},
        }})
    );
    // Nothing was written to stdout for the question: it travels in the result.
    p.barrier("end").await;
}

async fn malformed_lines_are_answered_and_the_loop_goes_on(p: &mut Peer) {
    p.send_raw("garbage").await;
    assert_eq!(
        p.recv().await,
        error_without_id(-32700, "Parse error: expected value at line 1 column 1")
    );
    p.send_raw(r#"{"jsonrpc":"2.0","id":1,"method":"ping""#)
        .await;
    assert_eq!(
        p.recv().await,
        error_without_id(
            -32700,
            "Parse error: EOF while parsing an object at line 1 column 39"
        )
    );
    p.send_raw("{}").await;
    assert_eq!(
        p.recv().await,
        error_without_id(-32600, "Invalid request: `jsonrpc` must be \"2.0\"")
    );
    p.send_raw(r#"{"jsonrpc":"2.0","id":5}"#).await;
    assert_eq!(
        p.recv().await,
        error(
            5,
            -32600,
            "Invalid request: a message needs a `method` (request or notification) or exactly one of `result` and `error` (response)"
        )
    );
    p.send_raw(r#"{"jsonrpc":"2.0","id":6,"method":7}"#).await;
    assert_eq!(
        p.recv().await,
        error(
            6,
            -32600,
            "Invalid request: `method` must be a string, not 7"
        )
    );
    p.send_raw("[1]").await;
    assert_eq!(
        p.recv().await,
        error_without_id(
            -32600,
            "Invalid request: a JSON-RPC batch (array) is only accepted inside a 2025-03-26 session"
        )
    );
    // Blank lines are skipped; a line may end with CRLF.
    p.send_raw("").await;
    p.send_raw("   ").await;
    p.send_raw("{\"jsonrpc\":\"2.0\",\"id\":\"crlf\",\"method\":\"ping\"}\r")
        .await;
    assert_eq!(p.recv().await, response("crlf", json!({})));
    assert_eq!(
        p.call(8, "nope", modern(json!({}))).await,
        error(8, -32601, "Method not found: nope")
    );
    p.barrier(9).await;
}

async fn an_over_long_line_is_refused_and_the_loop_goes_on(p: &mut Peer) {
    // The default limit is 4 MiB.
    let pad = "x".repeat(4 * 1024 * 1024);
    p.send(json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": pad}}))
        .await;
    assert_eq!(
        p.recv().await,
        error_without_id(
            -32600,
            "Invalid request: a message exceeds this server's limit of 4194304 bytes"
        )
    );
    p.barrier(2).await;
    // Just under the limit is read.
    let line =
        json!({"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {"pad": ""}}).to_string();
    let pad = "x".repeat(4 * 1024 * 1024 - line.len());
    p.send(json!({"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {"pad": pad}}))
        .await;
    let got = p.recv().await;
    assert_eq!(got["id"], 3, "{got}");
}

async fn eof_cancels_in_flight_work_and_stops_promptly(p: &mut Peer) {
    let params = modern_with(
        call("sleep", json!({"millis": 8000})),
        json!({}),
        json!({"progressToken": "eof"}),
    );
    p.request(1, "tools/call", params).await;
    p.initialize("2025-06-18", json!({})).await;
    p.request(2, "tools/call", call("sleep", json!({"millis": 8000})))
        .await;
    assert_eq!(p.recv().await, sleeping_log(8000));
    let closed = Instant::now();
    p.close();
    // Neither request is answered: stdout just ends, long before the sleeps would.
    assert_eq!(p.rest().await, Vec::<Value>::new());
    assert!(
        closed.elapsed() < Duration::from_secs(5),
        "stopped after {:?}",
        closed.elapsed()
    );
}

// ---------------------------------------------------------------------------------------------
// In-process only: several connections on one service, notifications, detached contexts

/// A function that stops when cancelled finishes at the moment of the cancel; its result
/// must not be written. Many at once, so that a race between the two shows.
#[tokio::test]
async fn cancelled_requests_write_nothing_even_when_the_function_returns_at_once() {
    let service = example_server().build().unwrap();
    let mut c = connect(&service);
    let sleep = || call("sleep", json!({"millis": 5000}));
    for i in 0..8 {
        c.peer
            .request(format!("m{i}"), "tools/call", modern(sleep()))
            .await;
    }
    c.peer.initialize("2025-06-18", json!({})).await;
    c.peer
        .call(0, "logging/setLevel", json!({"level": "error"}))
        .await;
    for i in 0..8 {
        c.peer.request(format!("l{i}"), "tools/call", sleep()).await;
    }
    c.peer.barrier("started").await;
    for id in (0..8).flat_map(|i| [format!("m{i}"), format!("l{i}")]) {
        c.peer
            .notify("notifications/cancelled", json!({"requestId": id}))
            .await;
    }
    c.peer.barrier("cancelled").await;
    assert_eq!(c.peer.recv_within(Duration::from_millis(500)).await, None);
    c.finish().await;
}

/// A cancel written right behind its request, in the same write, cancels it: the connection
/// polls a request once before it reads the next message, so a request that runs on has
/// registered for cancellation by then (and one that ends on that poll has already answered).
#[tokio::test]
async fn a_cancel_right_behind_its_request_cancels_it() {
    let service = example_server().build().unwrap();
    let mut c = connect(&service);
    c.peer.initialize("2025-06-18", json!({})).await;
    c.peer
        .call(0, "logging/setLevel", json!({"level": "error"}))
        .await;
    for i in 0..8 {
        let id = format!("r{i}");
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": call("sleep", json!({"millis": 300}))});
        let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id}});
        c.peer.send_raw(&format!("{request}\n{cancel}")).await;
    }
    c.peer.barrier("cancelled").await;
    assert_eq!(c.peer.recv_within(Duration::from_millis(600)).await, None);
    c.finish().await;
}

#[tokio::test]
async fn connections_of_one_service_do_not_cancel_each_other() {
    let service = example_server().build().unwrap();
    let mut a = connect(&service);
    let mut b = connect(&service);
    let sleep = || modern(call("sleep", json!({"millis": 600})));
    a.peer.request(1, "tools/call", sleep()).await;
    b.peer.request(1, "tools/call", sleep()).await;
    // A cancels its request 1: B's request 1 is another request.
    a.peer
        .notify("notifications/cancelled", json!({"requestId": 1}))
        .await;
    a.peer.barrier("a").await;
    // A goes away while B's request runs.
    a.finish().await;
    assert_eq!(
        b.peer.recv().await,
        response(1, modern_text("slept 600 ms"))
    );
    b.finish().await;
}

#[tokio::test]
async fn legacy_subscriptions_belong_to_their_connection() {
    let service = example_server().build().unwrap();
    let notifier = service.notifier();
    let mut a = connect(&service);
    let mut b = connect(&service);
    a.peer.initialize("2025-06-18", json!({})).await;
    b.peer.initialize("2025-06-18", json!({})).await;
    assert_eq!(
        a.peer
            .call(1, "resources/subscribe", json!({"uri": "notes://hello"}))
            .await,
        response(1, json!({}))
    );
    notifier.notify_resource_updated("notes://hello");
    notifier.tools_changed();
    let updated = json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "notes://hello"}});
    let tools_changed =
        json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {}});
    assert_eq!(a.peer.recv().await, updated);
    assert_eq!(a.peer.recv().await, tools_changed);
    // B did not subscribe: it hears only the list change.
    assert_eq!(b.peer.recv().await, tools_changed);
    assert_eq!(
        a.peer
            .call(2, "resources/unsubscribe", json!({"uri": "notes://hello"}))
            .await,
        response(2, json!({}))
    );
    notifier.notify_resource_updated("notes://hello");
    notifier.prompts_changed();
    let prompts_changed =
        json!({"jsonrpc": "2.0", "method": "notifications/prompts/list_changed", "params": {}});
    assert_eq!(a.peer.recv().await, prompts_changed);
    assert_eq!(b.peer.recv().await, prompts_changed);
    a.finish().await;
    b.finish().await;
}

#[tokio::test]
async fn a_listen_stream_on_stdio_is_tagged_and_ends_when_cancelled() {
    let service = example_server().build().unwrap();
    let notifier = service.notifier();
    let mut c = connect(&service);
    c.peer
        .request(
            "sub",
            "subscriptions/listen",
            modern(json!({"notifications": {"toolsListChanged": true, "resourceSubscriptions": ["notes://hello"]}})),
        )
        .await;
    let tag = json!({"io.modelcontextprotocol/subscriptionId": "sub"});
    assert_eq!(
        c.peer.recv().await,
        json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": {
            "notifications": {"toolsListChanged": true, "resourceSubscriptions": ["notes://hello"]},
            "_meta": tag,
        }})
    );
    // Not asked for, then asked for: only the second comes.
    notifier.prompts_changed();
    notifier.notify_resource_updated("notes://other");
    notifier.tools_changed();
    notifier.notify_resource_updated("notes://hello");
    assert_eq!(
        c.peer.recv().await,
        json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {"_meta": tag}})
    );
    assert_eq!(
        c.peer.recv().await,
        json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": "notes://hello", "_meta": tag}})
    );
    c.peer
        .notify("notifications/cancelled", json!({"requestId": "sub"}))
        .await;
    c.peer.barrier(1).await;
    notifier.tools_changed();
    assert_eq!(c.peer.recv_within(Duration::from_millis(300)).await, None);
    c.finish().await;
}

#[tokio::test]
async fn eof_stops_serving_even_while_a_spawned_task_holds_a_context() {
    let service = Server::with_registry(from_file("tests/stdio.rs"))
        .build()
        .unwrap();
    let mut c = connect(&service);
    assert_eq!(
        c.peer
            .call(1, "tools/call", modern(call("detach", json!({}))))
            .await["result"]["content"],
        json!([{"type": "text", "text": "detached"}])
    );
    c.finish().await;
}

#[tokio::test]
async fn the_line_limit_is_the_body_limit() {
    let service = example_server().max_body_bytes(64).build().unwrap();
    let mut c = connect(&service);
    let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    c.peer
        .send_raw(&format!("{ping}{}", " ".repeat(64 - ping.len())))
        .await;
    assert_eq!(c.peer.recv().await, response(1, json!({})));
    c.peer
        .send_raw(&format!("{ping}{}", " ".repeat(65 - ping.len())))
        .await;
    assert_eq!(
        c.peer.recv().await,
        error_without_id(
            -32600,
            "Invalid request: a message exceeds this server's limit of 64 bytes"
        )
    );
    c.peer.barrier(2).await;
    c.finish().await;
}

// ---------------------------------------------------------------------------------------------
// The binary only: stdout carries nothing but JSON-RPC, even with debug logs on; the greeting
// goes to stderr

#[tokio::test]
async fn the_binary_logs_to_stderr_and_writes_only_json_rpc_to_stdout() {
    let mut child = sake_tests::spawn_example("stdio");
    let p = &mut child.peer;
    p.initialize("2025-06-18", json!({})).await;
    p.call(1, "tools/call", call("sleep", json!({"millis": 10})))
        .await;
    p.recv().await;
    p.send_raw("not json").await;
    p.recv().await;
    p.close();
    // `Peer` parses every line it reads as a JSON-RPC 2.0 message.
    assert_eq!(p.rest().await, Vec::<Value>::new());
    let status = within("exit", child.child.wait()).await.unwrap();
    assert!(status.success());
    let stderr = within("stderr", child.stderr).await.unwrap();
    // The greeting, on stderr: the program a client starts, at its absolute path.
    let program = sake_tests::example_binary("stdio").display().to_string();
    let greeting = format!(
        r#"sake-stdio 0.1.0: MCP on stdio (stdin and stdout)
  2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26  4 tools, 1 prompt, 1 resource
connect (a client starts this program):
  MCP Inspector  npx @modelcontextprotocol/inspector {program}
  Claude Code    claude mcp add sake-stdio -- {program}
  VS Code        .vscode/mcp.json: {{"servers":{{"sake-stdio":{{"type":"stdio","command":"{program}","args":[]}}}}}}
  or: cargo sake install claude-desktop|claude-code|vscode|cursor
(SAKE_QUIET=1 or Server::quiet hides this greeting)
"#
    );
    assert!(
        stderr.contains(&greeting),
        "stderr lacks the greeting:\n{greeting}\nstderr:\n{stderr}"
    );
    for expected in [
        "stdin is a pipe: read without blocking",
        "serving MCP on stdio (revisions 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26)",
        "method=\"initialize\"",
        "method=\"tools/call\"",
        "handshake session opened",
        "stdin closed; stdio server stopped",
    ] {
        assert!(
            stderr.contains(expected),
            "stderr lacks {expected:?}:\n{stderr}"
        );
    }
}

/// `serve_stdio` reads a stdin that is a pipe without blocking (on the event loop) and any
/// other stdin (here a file) through Tokio's blocking reader: both give the same exact
/// answers and end cleanly at the end of input. (Requests answered at once: the end of
/// stdin cancels what still runs, so a call could go unanswered.)
#[tokio::test]
async fn a_piped_stdin_and_a_file_are_served_alike() {
    use std::io::Write as _;
    use std::process::{Command, Output, Stdio};

    let input = format!(
        "{}\n{}\n",
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": modern(json!({}))}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "ping", "params": modern(json!({}))}),
    );
    let binary = sake_tests::example_binary("stdio");
    let path = std::env::temp_dir().join(format!("sake-stdio-{}.jsonl", std::process::id()));
    std::fs::write(&path, &input).unwrap();
    let run = move || -> (Output, Output) {
        let mut child = Command::new(&binary)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(input.as_bytes()).unwrap();
        drop(stdin);
        let piped = child.wait_with_output().unwrap();
        let from_file = Command::new(&binary)
            .env("RUST_LOG", "debug")
            .env("NO_COLOR", "1")
            .stdin(std::fs::File::open(&path).unwrap())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let _ = std::fs::remove_file(&path);
        (piped, from_file)
    };
    let (piped, from_file) = within("both servers", tokio::task::spawn_blocking(run))
        .await
        .unwrap();
    let log = String::from_utf8_lossy(&from_file.stderr).into_owned();
    assert!(
        log.contains("stdin is not a pipe: read on a blocking thread"),
        "{log}"
    );
    // Answers may come in either order; each is exact.
    let answers = |out: Output| -> Vec<Value> {
        assert!(out.status.success(), "{:?}", out.status);
        let mut all: Vec<Value> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        all.sort_by_key(|a| a["id"].as_i64());
        all
    };
    let piped = answers(piped);
    assert_eq!(piped.len(), 2, "{piped:?}");
    let names: Vec<&str> = piped[0]["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["add", "greet_me", "haiku", "sleep"]);
    assert_eq!(piped[1], error(2, -32601, "Method not found: ping"));
    assert_eq!(answers(from_file), piped);
}
