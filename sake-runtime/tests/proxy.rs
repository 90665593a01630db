//! `Server::proxy`: a sake server in front of another (the upstream, a sake server of this
//! binary's tools), reached by sake's client, on every pair of revisions — the client's to the
//! gateway, the gateway's to the upstream — so both directions of the era bridge are crossed.

use std::time::Duration;

use sake::client::{Client, ClientError};
use sake::compose::Upstream;
use sake::prelude::*;
use sake::{ElicitationModes, Registry, RpcError, Tool};
use serde_json::json;

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

async fn serve(server: Server) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let service = server.quiet(true).build().unwrap();
    tokio::spawn(service.serve(listener, std::future::pending()));
    format!("http://{addr}/mcp")
}

async fn upstream() -> String {
    serve(Server::from_registry()).await
}

fn empty() -> Server {
    Server::with_registry(Registry::from_defs([], [], []).unwrap())
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
    let mut names: Vec<String> = client
        .list_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
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
    let names: Vec<String> = client
        .list_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
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
        let names: Vec<String> = client
            .list_tools()
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.name)
            .collect();
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
    let names: Vec<String> = client
        .list_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert!(!names.iter().any(|n| n.starts_with("small_")), "{names:?}");
    assert!(names.iter().any(|n| n == "fine_add"), "{names:?}");
    let sum = client
        .call_tool("small_add", json!({"a": 1, "b": 1}))
        .await
        .unwrap();
    assert_eq!(text(&sum), Some("2"));
}
