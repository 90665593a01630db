//! `Server::proxy` with a stdio upstream (`Upstream::command`): a child process that exits is
//! started again by the gateway on a backoff schedule (100 ms, doubling up to 30 s) — without
//! waiting for a request, and never more often than the schedule allows, however often it is
//! called; meanwhile its tools answer the upstream's -32603 "unavailable" error at once.
//!
//! The child is a shell that appends a line to a file each time it is started (how many
//! starts, asserted on counts, not on timings), then runs `@modelcontextprotocol/server-everything`
//! over stdio (from `$SAKE_NODE_MODULES`, with `$SAKE_NODE`: scripts/test.sh exports both; the
//! test fails without them), or exits at once.

use std::path::{Path, PathBuf};
use std::time::Duration;

use sake::client::{Client, ClientError};
use sake::compose::Upstream;
use sake::prelude::*;
use sake::{CallToolResult, CreateMessageResult, ElicitResult, ListRootsResult, RpcError, Server};
use serde_json::json;

mod gateway;
use gateway::{empty, serve, tool_names};

/// Adds two numbers (the tool of the upstream that stays up).
#[tool]
fn add(a: i64, b: i64) -> String {
    (a + b).to_string()
}

fn need(var: &str) -> String {
    std::env::var(var).unwrap_or_else(|_| {
        panic!("{var} is not set: run through scripts/test.sh, which installs the test peers into .tools/ and exports it")
    })
}

/// A file of this test's own, absent.
fn scratch(name: &str) -> PathBuf {
    let path =
        std::env::temp_dir().join(format!("sake-proxy-restart-{}-{name}", std::process::id()));
    let _ = std::fs::remove_file(&path);
    path
}

/// The lines of the file the child appends to: one per start.
fn starts(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// A client of the gateway that can answer every kind of question: the gateway then serves
/// it on its one connection to the upstream (a handshake upstream gets a session of its own
/// per set of capabilities, and a stdio upstream a process of its own per session).
async fn caller(gateway: &str) -> Client {
    let no = || RpcError::internal("this test answers no questions");
    Client::builder()
        .on_elicitation(move |_| async move { Err::<ElicitResult, _>(no()) })
        .elicitation_url(true)
        .on_sampling(move |_| async move { Err::<CreateMessageResult, _>(no()) })
        .on_roots(move || async move { Err::<ListRootsResult, _>(no()) })
        .connect(gateway)
        .await
        .unwrap()
}

fn text(r: &CallToolResult) -> Option<&str> {
    r.content.first().and_then(|c| c.as_text())
}

/// Killed, the child is started again by the gateway itself (no request asks for it), once,
/// and the upstream's tools answer again.
#[tokio::test]
async fn a_stdio_upstream_that_exits_is_started_again() {
    let node = need("SAKE_NODE");
    let modules = need("SAKE_NODE_MODULES");
    let everything = format!("{modules}/@modelcontextprotocol/server-everything/dist/index.js");
    let file = scratch("killed");
    let script = format!(
        "echo $$ >> '{}'; exec '{node}' '{everything}' stdio",
        file.display()
    );
    let gw = serve(empty().proxy(
        "",
        Upstream::command("sh", ["-c", script.as_str()]).timeout(Duration::from_secs(30)),
    ))
    .await;
    let client = caller(&gw).await;
    let echo = client
        .call_tool("echo", json!({"message": "hi"}))
        .await
        .unwrap();
    assert_eq!(text(&echo), Some("Echo: hi"));
    let pids = starts(&file);
    assert_eq!(pids.len(), 1, "{pids:?}");

    // Killed (the shell ran the server in its place: the same process).
    let killed = std::process::Command::new("kill")
        .args(["-9", &pids[0]])
        .status()
        .unwrap();
    assert!(killed.success());
    // Started again by the gateway, on its own.
    let mut waited = Duration::ZERO;
    while starts(&file).len() < 2 {
        assert!(
            waited < Duration::from_secs(30),
            "not started again: {:?}",
            starts(&file)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
        waited += Duration::from_millis(50);
    }
    let echo = client
        .call_tool("echo", json!({"message": "again"}))
        .await
        .unwrap();
    assert_eq!(text(&echo), Some("Echo: again"));
    // Once: the new process serves the calls.
    let pids = starts(&file);
    assert_eq!(pids.len(), 2, "{pids:?}");
    assert_ne!(pids[0], pids[1]);
    let _ = std::fs::remove_file(&file);
}

/// A child that exits at once, called without pause for 3 seconds: every call answers
/// -32603 (most of them at once, saying when it is started again), and it is started no more
/// often than the backoff allows — at 0, 0.1, 0.3, 0.7, 1.5 s (3.1 s next): at most 6 times,
/// where a start per call would be a hundred. The other upstream of the gateway answers
/// meanwhile.
#[tokio::test]
async fn a_process_that_exits_at_once_is_not_started_more_often_than_the_backoff_allows() {
    let file = scratch("flaky");
    let script = format!("echo started >> '{}'; exit 3", file.display());
    let up = serve(Server::from_registry()).await;
    let gw = serve(
        empty()
            .proxy("flaky", Upstream::command("sh", ["-c", script.as_str()]))
            .proxy("other", Upstream::url(&up)),
    )
    .await;
    let client = Client::connect(&gw).await.unwrap();
    let began = std::time::Instant::now();
    let (mut calls, mut at_once) = (0, 0);
    while began.elapsed() < Duration::from_secs(3) {
        match client.call_tool("flaky_echo", json!({})).await.unwrap_err() {
            ClientError::Rpc { error, .. } => {
                assert_eq!(error.code, -32603, "{}", error.message);
                assert!(
                    error
                        .message
                        .starts_with("The upstream server `flaky` is unavailable: "),
                    "{}",
                    error.message
                );
                if error.message.contains("; it is started again in ") {
                    at_once += 1;
                }
            }
            other => panic!("{other:?}"),
        }
        calls += 1;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let started = starts(&file).len();
    eprintln!("started {started} times in 3 s for {calls} calls ({at_once} answered at once)");
    assert!(
        (3..=6).contains(&started),
        "started {started} times in 3 s ({calls} calls)"
    );
    assert!(calls >= 50, "{calls} calls");
    // Every call that did not start it was answered without starting it.
    assert!(at_once >= calls - started, "{at_once} of {calls} at once");
    // The other upstream is not affected: its tools are listed and answer.
    let names = tool_names(&client).await;
    assert_eq!(names, ["other_add"]);
    let sum = client
        .call_tool("other_add", json!({"a": 2, "b": 3}))
        .await
        .unwrap();
    assert_eq!(text(&sum), Some("5"));
    let _ = std::fs::remove_file(&file);
}
