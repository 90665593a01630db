//! sake's client against an independent server: the official Rust SDK (rmcp 3.11), over HTTP in
//! its stateless and session modes and over stdio, on both eras.

use std::time::Duration;

use sake::ElicitResult;
use sake::Revision;
use sake::client::{Client, ClientBuilder, ClientError, EraCache};
use serde_json::{Map, json};

fn builder() -> ClientBuilder {
    Client::builder()
        .info("sake-test-client", "1")
        .cache(EraCache::new())
        .timeout(Duration::from_secs(20))
        .on_elicitation(|req| async move {
            assert_eq!(req.message, "What is your name?");
            let mut c = Map::new();
            c.insert("name".into(), json!("Ferris"));
            Ok(ElicitResult::accept(c))
        })
}

/// Lists, calls, reads, gets a prompt; `elicits` says whether `ask_name` is exercised.
async fn exercise(client: &Client, elicits: bool) {
    let mut names: Vec<String> = client
        .list_tools()
        .await
        .expect("tools")
        .into_iter()
        .map(|t| t.name)
        .collect();
    names.sort();
    assert_eq!(names, ["add", "ask_name", "echo", "fail"]);
    let sum: i64 = client
        .call("add", json!({"a": 2, "b": 3}))
        .await
        .expect("add");
    assert_eq!(sum, 5);
    let echoed: String = client
        .call("echo", json!({"text": "héllo"}))
        .await
        .expect("echo");
    assert_eq!(echoed, "héllo");
    let failed = client.call_tool("fail", json!({})).await.expect("a result");
    assert!(failed.is_error());
    let err = client
        .call::<String>("fail", json!({}))
        .await
        .expect_err("typed");
    assert!(matches!(err, ClientError::Tool { .. }), "{err}");
    let read = client.read("mem://hello").await.expect("read");
    assert_eq!(
        serde_json::to_value(&read.contents).expect("json"),
        json!([{"uri": "mem://hello", "mimeType": "text/plain", "text": "hello world"}])
    );
    assert_eq!(read.contents[0].uri(), "mem://hello");
    let prompt = client
        .get_prompt("greet", json!({"name": "Ada"}))
        .await
        .expect("prompt");
    assert_eq!(
        prompt.messages[0].content.as_text(),
        Some("Please greet Ada.")
    );
    assert_eq!(
        client.list_resources().await.expect("resources")[0].uri,
        "mem://hello"
    );
    assert_eq!(
        client.list_prompts().await.expect("prompts")[0].name,
        "greet"
    );
    if elicits {
        let hello: String = client
            .call("ask_name", json!({}))
            .await
            .expect("elicitation");
        let expected = if client.revision() == sake::Revision::V2026_07_28 {
            "Hello, Ferris! (state=asked-name)"
        } else {
            "Hello, Ferris! (legacy)"
        };
        assert_eq!(hello, expected);
    }
}

#[tokio::test]
async fn stateless_server_speaks_2026() {
    let url = sake_client_interop::serve(sake_client_interop::router(true))
        .await
        .expect("serve");
    let client = builder().connect(&url).await.expect("connect");
    assert_eq!(client.revision(), Revision::V2026_07_28);
    assert_eq!(client.session_id(), None);
    exercise(&client, true).await;
}

#[tokio::test]
async fn stateless_server_on_the_handshake() {
    // A stateless rmcp server answers initialize without a session; plain calls work (it
    // cannot send requests to the client, so no elicitation).
    let url = sake_client_interop::serve(sake_client_interop::router(true))
        .await
        .expect("serve");
    let client = builder()
        .revision(Revision::V2025_11_25)
        .connect(&url)
        .await
        .expect("connect");
    assert_eq!(client.revision(), Revision::V2025_11_25);
    assert_eq!(client.session_id(), None);
    exercise(&client, false).await;
}

#[tokio::test]
async fn session_server_speaks_2026_when_discovered() {
    let url = sake_client_interop::serve(sake_client_interop::router(false))
        .await
        .expect("serve");
    let client = builder().connect(&url).await.expect("connect");
    assert_eq!(client.revision(), Revision::V2026_07_28);
    exercise(&client, true).await;
}

#[tokio::test]
async fn session_server_on_each_handshake_revision() {
    let url = sake_client_interop::serve(sake_client_interop::router(false))
        .await
        .expect("serve");
    for rev in Revision::LEGACY {
        let client = builder()
            .revision(rev)
            .connect(&url)
            .await
            .expect("connect");
        assert_eq!(client.revision(), rev);
        assert!(client.session_id().is_some(), "{rev}: a session");
        // rmcp elicits whatever the revision; sake declares elicitation from 2025-06-18 on.
        exercise(&client, rev != Revision::V2025_03_26).await;
        client.close().await;
    }
}

fn rmcp_stdio() -> tokio::process::Command {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_rmcp_server"))
}

#[tokio::test]
async fn stdio_server_speaks_2026() {
    let client = builder().spawn(rmcp_stdio()).await.expect("spawn");
    assert_eq!(client.revision(), Revision::V2026_07_28);
    exercise(&client, true).await;
    client.close().await;
}

#[tokio::test]
async fn stdio_server_on_the_handshake() {
    let client = builder()
        .revision(Revision::V2025_11_25)
        .spawn(rmcp_stdio())
        .await
        .expect("spawn");
    assert_eq!(client.revision(), Revision::V2025_11_25);
    exercise(&client, true).await;
    client.close().await;
}

fn fake_stdio(mode: &str) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_fake_stdio"));
    cmd.env("FAKE_DISCOVER", mode);
    cmd
}

#[tokio::test]
async fn stdio_falls_back_on_method_not_found() {
    let cache = EraCache::new();
    let client = builder()
        .cache(cache.clone())
        .spawn(fake_stdio("method-not-found"))
        .await
        .expect("spawn");
    assert_eq!(client.revision(), Revision::V2025_06_18);
    assert_eq!(client.list_tools().await.expect("tools")[0].name, "only");
    let key = format!("stdio:{}", env!("CARGO_BIN_EXE_fake_stdio"));
    assert_eq!(
        cache.get(&key),
        Some(sake::client::Remembered::Legacy(Revision::V2025_06_18))
    );
    client.close().await;
}

#[tokio::test]
async fn stdio_falls_back_when_discover_gets_no_answer() {
    let client = builder()
        .probe_timeout(Duration::from_millis(300))
        .spawn(fake_stdio("silent"))
        .await
        .expect("spawn");
    assert_eq!(client.revision(), Revision::V2025_06_18);
    client.close().await;
}

#[tokio::test]
async fn stdio_cancels_a_request_that_timed_out() {
    use futures_util::StreamExt;
    let client = Client::builder()
        .cache(EraCache::new())
        .timeout(Duration::from_millis(300))
        .spawn(fake_stdio("method-not-found"))
        .await
        .expect("spawn");
    let mut notes = client.notifications();
    let err = client
        .call_tool("hang", json!({}))
        .await
        .expect_err("no answer");
    assert!(matches!(err, ClientError::Timeout { .. }), "{err}");
    let n = tokio::time::timeout(Duration::from_secs(5), notes.next())
        .await
        .expect("in time")
        .expect("the server saw the cancellation");
    assert_eq!(
        n.params["data"]["cancelled"],
        json!({"requestId": 3, "reason": "timed out"})
    );
    client.close().await;
}
