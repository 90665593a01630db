//! `Server::proxy`: a sake server in front of another (the upstream, a sake server of this
//! binary's tools), reached by sake's client, on every pair of revisions — the client's to the
//! gateway, the gateway's to the upstream — so both directions of the era bridge are crossed.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use sake::client::{Client, ClientError};
use sake::compose::Upstream;
use sake::prelude::*;
use sake::{ElicitationModes, RpcError, Tool};
use serde_json::json;

mod gateway;
use gateway::{empty, serve, tool_names};

/// Adds two numbers.
#[tool]
fn add(a: i64, b: i64) -> String {
    (a + b).to_string()
}

/// Always fails, as a tool error (`isError: true`).
#[tool]
fn fails() -> CallToolResult {
    CallToolResult::error("it always fails")
}

/// Fails with a protocol error that carries data.
#[tool]
fn refuses(ctx: Context) -> String {
    ctx.fail_with(RpcError::invalid_params("no, never").with_data(json!({"why": "policy"})));
    String::new()
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Name {
    name: String,
}

/// Asks the user's name, then greets them.
#[tool]
async fn ask_name(ctx: Context) -> String {
    match ctx.elicit::<Name>("who", "Your name?").await {
        Ok(Elicitation::Accepted(n)) => format!("Hello, {}!", n.name),
        Ok(_) => "No name given.".to_owned(),
        Err(e) => format!("Could not ask: {e}"),
    }
}

/// Never answers.
#[tool]
async fn hangs() -> String {
    std::future::pending::<()>().await;
    String::new()
}

/// A greeting prompt.
#[prompt]
fn welcome(name: String) -> String {
    format!("Welcome, {name}.")
}

/// A static note.
#[resource(uri = "note://today", mime_type = "text/plain")]
fn note() -> String {
    "Buy milk.".to_owned()
}

async fn upstream() -> String {
    serve(Server::from_registry()).await
}

async fn gateway(prefix: &str, upstream: Upstream) -> String {
    serve(empty().proxy(prefix, upstream)).await
}

fn text(r: &CallToolResult) -> Option<&str> {
    r.content.first().and_then(|c| c.as_text())
}

/// Every revision the client speaks to the gateway, with every revision the gateway speaks to
/// the upstream (or none pinned: discovery first).
fn pairs() -> Vec<(Revision, Option<Revision>)> {
    let mut out = Vec::new();
    for down in Revision::ALL {
        out.push((down, None));
        for up in Revision::ALL {
            out.push((down, Some(up)));
        }
    }
    out
}

#[tokio::test]
async fn tools_prompts_and_resources_are_served_transparently_on_every_pair_of_revisions() {
    let up = upstream().await;
    for (down, pin) in pairs() {
        let mut upstream = Upstream::url(&up);
        if let Some(rev) = pin {
            upstream = upstream.revision(rev);
        }
        let gw = gateway("", upstream).await;
        let client = Client::builder().revision(down).connect(&gw).await.unwrap();
        let direct = Client::builder().revision(down).connect(&up).await.unwrap();
        let what = format!("client {down}, upstream {pin:?}");
        // The same names, in the same order.
        let names = |tools: Vec<Tool>| tools.into_iter().map(|t| t.name).collect::<Vec<_>>();
        assert_eq!(
            names(client.list_tools().await.unwrap()),
            names(direct.list_tools().await.unwrap()),
            "{what}"
        );
        let sum = client
            .call_tool("add", json!({"a": 2, "b": 3}))
            .await
            .unwrap();
        assert_eq!(text(&sum), Some("5"), "{what}");
        assert_eq!(sum.is_error, None, "{what}");
        let failed = client.call_tool("fails", json!({})).await.unwrap();
        assert_eq!(failed.is_error, Some(true), "{what}");
        assert_eq!(text(&failed), Some("it always fails"), "{what}");
        // A protocol error keeps its code, message and data.
        match client.call_tool("refuses", json!({})).await.unwrap_err() {
            ClientError::Rpc { error, .. } => {
                assert_eq!(error.code, -32602, "{what}");
                assert_eq!(error.message, "no, never", "{what}");
                assert_eq!(error.data, Some(json!({"why": "policy"})), "{what}");
            }
            other => panic!("{what}: {other:?}"),
        }
        // An unknown tool: the upstream's own error.
        match client.call_tool("nope", json!({})).await.unwrap_err() {
            ClientError::Rpc { error, .. } => {
                assert_eq!(error.code, -32602, "{what}");
                assert_eq!(error.message, "Unknown tool: nope", "{what}");
            }
            other => panic!("{what}: {other:?}"),
        }
        let prompt = client
            .get_prompt("welcome", json!({"name": "Ada"}))
            .await
            .unwrap();
        assert_eq!(
            serde_json::to_value(&prompt.messages).unwrap(),
            json!([{"role": "user", "content": {"type": "text", "text": "Welcome, Ada."}}]),
            "{what}"
        );
        let read = client.read("note://today").await.unwrap();
        assert_eq!(
            serde_json::to_value(&read.contents).unwrap(),
            json!([{"uri": "note://today", "mimeType": "text/plain", "text": "Buy milk."}]),
            "{what}"
        );
    }
}

#[tokio::test]
async fn elicitation_crosses_the_era_bridge_in_both_directions() {
    let up = upstream().await;
    for (down, pin) in pairs() {
        let mut upstream = Upstream::url(&up);
        if let Some(rev) = pin {
            upstream = upstream.revision(rev);
        }
        let gw = gateway("", upstream).await;
        let client = Client::builder()
            .revision(down)
            .on_elicitation(|req| async move {
                assert_eq!(req.message, "Your name?");
                let mut content = sake::JsonObject::new();
                content.insert("name".into(), json!("Ada"));
                Ok(ElicitResult::accept(content))
            })
            .connect(&gw)
            .await
            .unwrap();
        let out = client.call_tool("ask_name", json!({})).await.unwrap();
        // 2025-03-26 has no elicitation: neither side of the bridge can ask on it.
        let none = |rev: Revision| rev.features().elicitation == ElicitationModes::None;
        // A caller that cannot answer is one the upstream sees as such, whatever the era
        // on either side (a handshake upstream gets a session that declares what the caller
        // can answer): the result is the one it gets directly.
        let expected = if none(down) || pin.is_some_and(none) {
            "Could not ask: the client did not declare the `elicitation` capability this request needs"
        } else {
            "Hello, Ada!"
        };
        assert_eq!(
            text(&out),
            Some(expected),
            "client {down}, upstream {pin:?}"
        );
    }
}

#[tokio::test]
async fn a_prefix_namespaces_tools_and_prompts() {
    let up = upstream().await;
    let gw = gateway("up", Upstream::url(&up)).await;
    let client = Client::connect(&gw).await.unwrap();
    let mut names = tool_names(&client).await;
    names.sort();
    assert_eq!(
        names,
        [
            "up_add",
            "up_ask_name",
            "up_fails",
            "up_hangs",
            "up_refuses"
        ]
    );
    let sum = client
        .call_tool("up_add", json!({"a": 1, "b": 1}))
        .await
        .unwrap();
    assert_eq!(text(&sum), Some("2"));
    let prompts: Vec<String> = client
        .list_prompts()
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.name)
        .collect();
    assert_eq!(prompts, ["up_welcome"]);
    // Outside the prefix, nothing is served.
    match client
        .call_tool("add", json!({"a": 1, "b": 1}))
        .await
        .unwrap_err()
    {
        ClientError::Rpc { error, .. } => assert_eq!(error.message, "Unknown tool: add"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn an_upstream_that_is_down_costs_only_its_own_tools() {
    let up = upstream().await;
    // A port nobody listens on.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        drop(l);
        format!("http://{addr}/mcp")
    };
    let gw = serve(empty().proxy("live", Upstream::url(&up)).proxy(
        "dead",
        Upstream::url(&closed).timeout(Duration::from_secs(2)),
    ))
    .await;
    let client = Client::connect(&gw).await.unwrap();
    // The list has the live upstream's tools; the dead one's are left out (logged).
    let names = tool_names(&client).await;
    assert!(names.iter().all(|n| n.starts_with("live_")), "{names:?}");
    assert_eq!(names.len(), 5);
    match client.call_tool("dead_add", json!({})).await.unwrap_err() {
        ClientError::Rpc { error, .. } => {
            assert_eq!(error.code, -32603);
            assert!(
                error
                    .message
                    .starts_with("The upstream server `dead` is unavailable: "),
                "{}",
                error.message
            );
        }
        other => panic!("{other:?}"),
    }
    let sum = client
        .call_tool("live_add", json!({"a": 1, "b": 2}))
        .await
        .unwrap();
    assert_eq!(text(&sum), Some("3"));
}

/// The reference server of the TypeScript SDK (`@modelcontextprotocol/server-everything`,
/// pinned in scripts/peers), over stdio: a handshake-only server, served to a 2026-07-28 client
/// and to a handshake one.
#[tokio::test]
async fn a_server_of_another_sdk_is_served_to_clients_of_both_eras() {
    let need = |var: &str| {
        std::env::var(var).unwrap_or_else(|_| {
            panic!("{var} is not set: run through scripts/test.sh, which installs the test peers into .tools/ and exports it")
        })
    };
    let node = need("SAKE_NODE");
    let modules = need("SAKE_NODE_MODULES");
    let script = format!("{modules}/@modelcontextprotocol/server-everything/dist/index.js");
    let gw = gateway("", Upstream::command(node, [script, "stdio".to_owned()])).await;
    for down in [Revision::V2026_07_28, Revision::V2025_06_18] {
        let client = Client::builder().revision(down).connect(&gw).await.unwrap();
        let names = tool_names(&client).await;
        assert!(
            names.iter().any(|n| n == "echo") && names.iter().any(|n| n == "get-sum"),
            "{down}: {names:?}"
        );
        let echo = client
            .call_tool("echo", json!({"message": "hi"}))
            .await
            .unwrap();
        assert_eq!(text(&echo), Some("Echo: hi"), "{down}");
        let sum = client
            .call_tool("get-sum", json!({"a": 2, "b": 3}))
            .await
            .unwrap();
        assert_eq!(text(&sum), Some("The sum of 2 and 3 is 5."), "{down}");
    }
}

/// The layers apply to a remote function as to the program's own: `Server::layer` to every
/// one, `Server::layer_for(prefix)` to an upstream's (`McpRequest::function` is the prefix,
/// `name` the name the client called).
#[tokio::test]
async fn the_layers_apply_to_remote_functions() {
    use sake::middleware::{McpResponse, from_fn};
    let up = upstream().await;
    let gw = serve(empty().proxy("up", Upstream::url(&up)).layer_for(
        "up",
        from_fn(|req, next| async move {
            if req.name() == "up_fails" {
                return McpResponse::error(RpcError::invalid_params(format!(
                    "refused by a layer: {} of {}",
                    req.name(),
                    req.function()
                )));
            }
            next.run(req).await
        }),
    ))
    .await;
    let client = Client::connect(&gw).await.unwrap();
    match client.call_tool("up_fails", json!({})).await.unwrap_err() {
        ClientError::Rpc { error, .. } => {
            assert_eq!(error.message, "refused by a layer: up_fails of up");
        }
        other => panic!("{other:?}"),
    }
    let sum = client
        .call_tool("up_add", json!({"a": 1, "b": 1}))
        .await
        .unwrap();
    assert_eq!(text(&sum), Some("2"));
}

/// An upstream that stops answers a clear error for its tools, and is connected again when
/// it is back (on the same address), on both eras of upstream.
#[tokio::test]
async fn an_upstream_killed_and_restarted_is_connected_again() {
    for pin in [Revision::V2026_07_28, Revision::V2025_11_25] {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let first = tokio::spawn(Server::from_registry().quiet(true).build().unwrap().serve(
            listener,
            async {
                let _ = stopped.await;
            },
        ));
        let url = format!("http://{addr}/mcp");
        let gw = gateway(
            "",
            Upstream::url(&url)
                .revision(pin)
                .timeout(Duration::from_secs(5)),
        )
        .await;
        let client = Client::connect(&gw).await.unwrap();
        let sum = client
            .call_tool("add", json!({"a": 1, "b": 2}))
            .await
            .unwrap();
        assert_eq!(text(&sum), Some("3"), "{pin}");
        // Killed.
        let _ = stop.send(());
        let _ = first.await;
        match client
            .call_tool("add", json!({"a": 1, "b": 2}))
            .await
            .unwrap_err()
        {
            ClientError::Rpc { error, .. } => {
                assert_eq!(error.code, -32603, "{pin}");
                assert!(
                    error
                        .message
                        .starts_with("The upstream server `upstream` is unavailable: "),
                    "{pin}: {}",
                    error.message
                );
            }
            other => panic!("{pin}: {other:?}"),
        }
        // Back, on the same address.
        let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
        tokio::spawn(
            Server::from_registry()
                .quiet(true)
                .build()
                .unwrap()
                .serve(listener, std::future::pending()),
        );
        let sum = client
            .call_tool("add", json!({"a": 2, "b": 2}))
            .await
            .unwrap();
        assert_eq!(text(&sum), Some("4"), "{pin}");
    }
}

/// A hostile upstream costs only its own tools: one that never answers is cut off at its
/// timeout while another's calls go on, and one whose list is over its byte budget is left out
/// of the list (its calls, within the budget, still work).
#[tokio::test]
async fn a_slow_or_oversized_upstream_costs_only_its_own_tools() {
    let up = upstream().await;
    let gw = serve(
        empty()
            .proxy("slow", Upstream::url(&up).timeout(Duration::from_secs(1)))
            .proxy("small", Upstream::url(&up).max_body_bytes(800))
            .proxy("fine", Upstream::url(&up)),
    )
    .await;
    let client = Client::connect(&gw).await.unwrap();
    let hanging = {
        let client = client.clone();
        tokio::spawn(async move { client.call_tool("slow_hangs", json!({})).await })
    };
    // Meanwhile, another upstream answers.
    let sum = client
        .call_tool("fine_add", json!({"a": 3, "b": 4}))
        .await
        .unwrap();
    assert_eq!(text(&sum), Some("7"));
    match hanging.await.unwrap().unwrap_err() {
        ClientError::Rpc { error, .. } => {
            assert_eq!(error.code, -32603);
            assert!(
                error
                    .message
                    .starts_with("The upstream server `slow` is unavailable: "),
                "{}",
                error.message
            );
        }
        other => panic!("{other:?}"),
    }
    let names = tool_names(&client).await;
    assert!(!names.iter().any(|n| n.starts_with("small_")), "{names:?}");
    assert!(names.iter().any(|n| n == "fine_add"), "{names:?}");
    let sum = client
        .call_tool("small_add", json!({"a": 1, "b": 1}))
        .await
        .unwrap();
    assert_eq!(text(&sum), Some("2"));
}

// Hostile upstreams, and a server of another SDK over HTTP (issue 41e): a raw HTTP/1.1
// server that speaks just enough MCP (2026-07-28: `server/discover`, `tools/list`,
// `tools/call`) to be served, then misbehaves. A hostile peer, not a fake of one: no real
// server misbehaves on purpose.

/// How the hostile upstream misbehaves.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Hostile {
    /// Its `tools/list` is 100 MB, streamed.
    HugeList,
    /// Its `tools/call` answers 100 MB of JSON, streamed.
    HugeResult,
    /// Its `tools/call` answers with an event stream whose one event never ends.
    EndlessEvent,
    /// Its `tools/call` answers with an event stream of log messages that never ends.
    EndlessStream,
    /// It reads requests and never answers any.
    Silent,
}

/// How much a hostile list weighs.
const HUGE: u64 = 100 << 20;

/// Starts a hostile upstream: its URL, and how many bytes of its misbehaviour it wrote.
async fn hostile(how: Hostile) -> (String, Arc<AtomicU64>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let written = Arc::new(AtomicU64::new(0));
    let counter = written.clone();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            tokio::spawn(hostile_exchange(socket, how, counter.clone()));
        }
    });
    (format!("http://{addr}/mcp"), written)
}

/// One request on one connection, answered (or not) the hostile way; the connection closes.
async fn hostile_exchange(
    mut socket: tokio::net::TcpStream,
    how: Hostile,
    written: Arc<AtomicU64>,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    // The head, then as many bytes of body as it says.
    let (head_len, body_len) = loop {
        let Ok(n) = socket.read(&mut chunk).await else {
            return;
        };
        if n == 0 {
            return;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_lowercase();
            let len = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            break (end + 4, len);
        }
    };
    while buf.len() < head_len + body_len {
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    let request: serde_json::Value =
        serde_json::from_slice(&buf[head_len..head_len + body_len]).unwrap_or_default();
    if how == Hostile::Silent {
        std::future::pending::<()>().await;
    }
    let id = request["id"].clone();
    let json = |body: serde_json::Value| {
        let body = body.to_string();
        format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
    };
    let head = match request["method"].as_str() {
        None => {
            let _ = socket
                .write_all(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                .await;
            return;
        }
        Some("server/discover") => json(json!({"jsonrpc": "2.0", "id": id, "result": {
            "resultType": "complete",
            "supportedVersions": ["2026-07-28"],
            "capabilities": {"tools": {}},
        }})),
        Some("tools/list") if how != Hostile::HugeList => {
            json(json!({"jsonrpc": "2.0", "id": id, "result": {
                "resultType": "complete",
                "tools": [{"name": "t", "description": "A tool.", "inputSchema": {"type": "object"}}],
            }}))
        }
        Some("tools/call") if how == Hostile::HugeList => {
            json(json!({"jsonrpc": "2.0", "id": id, "result": {
                "resultType": "complete",
                "content": [{"type": "text", "text": "called"}],
            }}))
        }
        Some("tools/list") | Some("tools/call") if matches!(how, Hostile::HugeList | Hostile::HugeResult) => "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n".to_owned(),
        Some("tools/call") => "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n".to_owned(),
        Some(_) => json(json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}})),
    };
    if socket.write_all(head.as_bytes()).await.is_err() || !head.contains("chunked") {
        return;
    }
    // The misbehaviour, in chunks, until the gateway hangs up (or 100 MB for the list).
    let (first, each, last): (String, String, String) = match how {
        Hostile::HugeResult => (
            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":""#),
            "x".repeat(64 * 1024),
            r#""}]}}"#.to_owned(),
        ),
        Hostile::HugeList => (
            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"tools":["#),
            r#"{"name":"t","description":"A tool of a list too long to hold.","inputSchema":{"type":"object"}},"#.repeat(512),
            r#"{"name":"last","inputSchema":{"type":"object"}}]}}"#.to_owned(),
        ),
        Hostile::EndlessEvent => ("data: ".to_owned(), "x".repeat(32 * 1024), String::new()),
        _ => (
            String::new(),
            "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"tick\"}}\n\n".repeat(64),
            String::new(),
        ),
    };
    let chunked = |data: &str| format!("{:x}\r\n{data}\r\n", data.len());
    let mut total = 0u64;
    let mut piece = first;
    loop {
        // An empty chunk would end the body.
        if piece.is_empty() {
            piece = each.clone();
        }
        let chunk = chunked(&piece);
        if socket.write_all(chunk.as_bytes()).await.is_err() {
            return;
        }
        total += chunk.len() as u64;
        written.store(total, Ordering::Relaxed);
        if matches!(how, Hostile::HugeList | Hostile::HugeResult) && total >= HUGE {
            let _ = socket.write_all(chunked(&last).as_bytes()).await;
            let _ = socket.write_all(b"0\r\n\r\n").await;
            return;
        }
        if how == Hostile::EndlessStream {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        piece = each.clone();
    }
}

/// This process's resident set, in KiB (Linux), as `/proc/self/status` tells it.
fn rss_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(field))
                .and_then(|v| v.trim().trim_end_matches(" kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

fn rpc_error(e: ClientError) -> RpcError {
    match e {
        ClientError::Rpc { error, .. } => *error,
        other => panic!("not a JSON-RPC error: {other:?}"),
    }
}

/// A 100 MB tool list is cut at the upstream's byte budget (1 MiB here): its tools are left
/// out of the list (logged), the gateway's other upstream is listed and called, its own
/// (small) answers still come through, and the gateway's memory does not grow by the list.
#[tokio::test]
async fn a_hundred_megabyte_list_is_cut_at_the_byte_budget() {
    let up = upstream().await;
    let (huge, written) = hostile(Hostile::HugeList).await;
    let gw = serve(
        empty()
            .proxy(
                "huge",
                Upstream::url(&huge)
                    .revision(Revision::V2026_07_28)
                    .max_body_bytes(1 << 20),
            )
            .proxy("fine", Upstream::url(&up)),
    )
    .await;
    let client = Client::connect(&gw).await.unwrap();
    let (rss, peak) = (rss_kib("VmRSS:"), rss_kib("VmHWM:"));
    let names = tool_names(&client).await;
    assert_eq!(
        names,
        [
            "fine_add",
            "fine_ask_name",
            "fine_fails",
            "fine_hangs",
            "fine_refuses"
        ]
    );
    let sum = client
        .call_tool("fine_add", json!({"a": 1, "b": 2}))
        .await
        .unwrap();
    assert_eq!(text(&sum), Some("3"));
    let called = client.call_tool("huge_t", json!({})).await.unwrap();
    assert_eq!(text(&called), Some("called"));
    let sent = written.load(Ordering::Relaxed);
    assert!(sent < HUGE, "the upstream wrote all {sent} bytes");
    println!(
        "100 MB list cut at 1 MiB: the upstream wrote {} KiB before the gateway hung up; the test process's RSS {} KiB -> {} KiB (peak {} KiB -> {} KiB)",
        sent >> 10,
        rss,
        rss_kib("VmRSS:"),
        peak,
        rss_kib("VmHWM:")
    );
}

/// An event stream that never ends answers a call: one endless event is cut at the byte
/// budget (as is a 100 MB result), endless small events at the upstream's timeout; the caller
/// gets the error that says which, and the other upstream's calls go on meanwhile.
#[tokio::test]
async fn an_endless_event_stream_on_a_call_is_cut_at_its_budget_or_timeout() {
    let up = upstream().await;
    let (event, _) = hostile(Hostile::EndlessEvent).await;
    let (stream, streamed) = hostile(Hostile::EndlessStream).await;
    let (big, _) = hostile(Hostile::HugeResult).await;
    let gw = serve(
        empty()
            .proxy(
                "event",
                Upstream::url(&event)
                    .revision(Revision::V2026_07_28)
                    .max_body_bytes(64 << 10),
            )
            .proxy(
                "stream",
                Upstream::url(&stream)
                    .revision(Revision::V2026_07_28)
                    .timeout(Duration::from_secs(2)),
            )
            .proxy(
                "big",
                Upstream::url(&big)
                    .revision(Revision::V2026_07_28)
                    .max_body_bytes(64 << 10),
            )
            .proxy("fine", Upstream::url(&up)),
    )
    .await;
    let client = Client::connect(&gw).await.unwrap();
    let e = rpc_error(client.call_tool("event_t", json!({})).await.unwrap_err());
    assert_eq!(e.code, -32603);
    assert_eq!(
        e.message,
        "The upstream server `event` is unavailable: an event of its event stream is larger than 65536 bytes, its limit here; raise it with Upstream::max_body_bytes"
    );
    // A result over the budget (a 100 MB body): cut there too.
    let e = rpc_error(client.call_tool("big_t", json!({})).await.unwrap_err());
    assert_eq!(e.code, -32603);
    assert_eq!(
        e.message,
        format!(
            "The upstream server `big` is unavailable: the response body from {big} is larger than 65536 bytes, its limit here; raise it with Upstream::max_body_bytes"
        )
    );
    let endless = {
        let client = client.clone();
        tokio::spawn(async move { client.call_tool("stream_t", json!({})).await })
    };
    let sum = client
        .call_tool("fine_add", json!({"a": 2, "b": 2}))
        .await
        .unwrap();
    assert_eq!(text(&sum), Some("4"));
    let e = rpc_error(endless.await.unwrap().unwrap_err());
    assert_eq!(e.code, -32603);
    assert_eq!(
        e.message,
        "The upstream server `stream` is unavailable: tools/call timed out after 2000 ms"
    );
    println!(
        "endless stream cut at its 2 s timeout after {} KiB of events",
        streamed.load(Ordering::Relaxed) >> 10
    );
}

/// An upstream that reads requests and never answers one (not even `server/discover`): its
/// tools are left out of the list once its timeout passes, its calls fail with that timeout,
/// and the other upstream's calls are answered meanwhile.
#[tokio::test]
async fn an_upstream_that_never_answers_costs_only_its_own_tools() {
    let up = upstream().await;
    let (silent, _) = hostile(Hostile::Silent).await;
    let gw = serve(
        empty()
            .proxy(
                "silent",
                Upstream::url(&silent)
                    .revision(Revision::V2026_07_28)
                    .timeout(Duration::from_secs(2)),
            )
            .proxy("fine", Upstream::url(&up)),
    )
    .await;
    let client = Client::connect(&gw).await.unwrap();
    let listing = {
        let client = client.clone();
        tokio::spawn(async move { client.list_tools().await })
    };
    let sum = client
        .call_tool("fine_add", json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    assert_eq!(text(&sum), Some("5"));
    let names: Vec<String> = listing
        .await
        .unwrap()
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(
        names,
        [
            "fine_add",
            "fine_ask_name",
            "fine_fails",
            "fine_hangs",
            "fine_refuses"
        ]
    );
    let e = rpc_error(client.call_tool("silent_t", json!({})).await.unwrap_err());
    assert_eq!(e.code, -32603);
    assert_eq!(
        e.message,
        "The upstream server `silent` is unavailable: server/discover timed out after 2000 ms"
    );
}

/// `@modelcontextprotocol/server-everything` (pinned in scripts/peers) in its Streamable HTTP
/// mode, served under a prefix to clients of both eras: its tools called, its template's
/// resource read under the prefixed URI.
#[tokio::test]
async fn a_server_of_another_sdk_over_http_is_served_to_clients_of_both_eras() {
    let need = |var: &str| {
        std::env::var(var).unwrap_or_else(|_| {
            panic!("{var} is not set: run through scripts/test.sh, which installs the test peers into .tools/ and exports it")
        })
    };
    let node = need("SAKE_NODE");
    let modules = need("SAKE_NODE_MODULES");
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let _child = tokio::process::Command::new(node)
        .arg(format!(
            "{modules}/@modelcontextprotocol/server-everything/dist/index.js"
        ))
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    // Until it listens.
    let mut up = false;
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            up = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(up, "server-everything did not listen on {port}");
    let gw = gateway("ev", Upstream::url(format!("http://127.0.0.1:{port}/mcp"))).await;
    for down in [Revision::V2026_07_28, Revision::V2025_06_18] {
        let client = Client::builder().revision(down).connect(&gw).await.unwrap();
        let names = tool_names(&client).await;
        assert!(
            names.iter().any(|n| n == "ev_echo") && names.iter().any(|n| n == "ev_get-sum"),
            "{down}: {names:?}"
        );
        assert!(
            names.iter().all(|n| n.starts_with("ev_")),
            "{down}: {names:?}"
        );
        let echo = client
            .call_tool("ev_echo", json!({"message": "hi"}))
            .await
            .unwrap();
        assert_eq!(text(&echo), Some("Echo: hi"), "{down}");
        let sum = client
            .call_tool("ev_get-sum", json!({"a": 2, "b": 3}))
            .await
            .unwrap();
        assert_eq!(text(&sum), Some("The sum of 2 and 3 is 5."), "{down}");
        let templates: Vec<String> = client
            .list_resource_templates()
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.uri_template)
            .collect();
        assert!(
            templates.contains(&"demo://ev/resource/dynamic/text/{resourceId}".to_owned()),
            "{down}: {templates:?}"
        );
        let read = client
            .read("demo://ev/resource/dynamic/text/1")
            .await
            .unwrap();
        let contents = serde_json::to_value(&read.contents).unwrap();
        assert_eq!(
            contents[0]["uri"],
            json!("demo://ev/resource/dynamic/text/1"),
            "{down}"
        );
        assert!(
            contents[0]["text"].as_str().is_some_and(
                |t| t.starts_with("Resource 1: This is a plaintext resource created at ")
            ),
            "{down}: {contents}"
        );
        // A completion of the prefixed template reaches the upstream's own.
        let completed = client
            .request(
                "completion/complete",
                json!({
                    "ref": {"type": "ref/resource", "uri": "demo://ev/resource/dynamic/text/{resourceId}"},
                    "argument": {"name": "resourceId", "value": "3"},
                }),
            )
            .await
            .unwrap();
        assert_eq!(completed["completion"]["values"], json!(["3"]), "{down}");
    }
}
