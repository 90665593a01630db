//! sake's client against sake's own server, on both eras: 2026-07-28 (what the client picks by
//! itself) and each handshake revision (pinned).

use std::time::Duration;

use futures_util::StreamExt;
use sake::client::{Client, ClientBuilder, EraCache, Subscription};
use sake::prelude::*;
use sake::{
    CompletionReference, CreateMessageRequest, CreateMessageResult, ElicitResult, Revision,
};
use serde_json::{Map, Value, json};

/// A sum.
#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema, Debug, PartialEq)]
struct Sum {
    /// `a + b`.
    sum: i64,
}

/// Adds two numbers.
#[tool]
fn add(
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
) -> Sum {
    Sum { sum: a + b }
}

/// Echoes a region, mirrored in the `Mcp-Param-Region` header on 2026-07-28.
#[tool]
fn regional(
    /// Where.
    #[arg(header = "Region")]
    region: String,
) -> String {
    format!("region={region}")
}

/// Asks the user for a name.
#[tool]
async fn ask_name(ctx: Context) -> Result<String, sake::InputError> {
    let schema =
        json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]});
    let r = ctx
        .elicit_with_schema("name", "What is your name?", schema)
        .await?;
    let name = r
        .content
        .as_ref()
        .and_then(|c| c.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("?")
        .to_owned();
    Ok(format!("Hello, {name}! ({})", ctx.revision()))
}

/// Asks the client's model.
#[tool]
async fn ask_model(ctx: Context) -> Result<String, sake::InputError> {
    let answer = ctx
        .sample("q", CreateMessageRequest::user("Capital of France?", 10))
        .await?;
    Ok(format!("model says {}", answer.text().unwrap_or_default()))
}

/// Reports progress twice.
#[tool]
async fn count(ctx: Context) -> &'static str {
    ctx.progress(1.0, Some(2.0)).await;
    ctx.progress(2.0, Some(2.0)).await;
    "counted"
}

/// Always fails.
#[tool]
fn broken() -> Result<String, String> {
    Err("it broke".into())
}

/// Announces that the tools changed.
#[tool]
fn change(ctx: Context) -> &'static str {
    if let Some(n) = ctx.notifier() {
        n.tools_changed();
    }
    "changed"
}

/// Greets someone.
#[prompt]
fn greet(
    /// Who.
    name: String,
) -> Vec<PromptMessage> {
    vec![PromptMessage::user(format!("Hello, {name}!"))]
}

/// The message of the day.
#[resource(uri = "mem://motd", mime_type = "text/plain")]
fn motd() -> &'static str {
    "be kind"
}

async fn serve() -> String {
    let service = Server::from_registry()
        .name("sake-test")
        .version("1.0.0")
        .build()
        .expect("a valid registry");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let _ = service.serve(listener, std::future::pending()).await;
    });
    format!("http://{addr}/mcp")
}

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
        .on_sampling(|_req| async {
            Ok(CreateMessageResult::new(
                Role::Assistant,
                json!({"type": "text", "text": "Paris"}),
                "m",
            ))
        })
}

/// Everything a client does, on whichever revision it speaks.
async fn exercise(client: &Client) {
    let rev = client.revision();
    assert_eq!(
        client.server_info().map(|i| i.name),
        Some("sake-test".to_owned())
    );
    let mut tools: Vec<String> = client
        .list_tools()
        .await
        .expect("tools")
        .into_iter()
        .map(|t| t.name)
        .collect();
    tools.sort();
    assert_eq!(
        tools,
        [
            "add",
            "ask_model",
            "ask_name",
            "broken",
            "change",
            "count",
            "regional"
        ]
    );
    let sum: Sum = client
        .call("add", json!({"a": 2, "b": 3}))
        .await
        .expect("add");
    assert_eq!(sum, Sum { sum: 5 });
    let region: String = client
        .call("regional", json!({"region": "Zürich"}))
        .await
        .expect("regional");
    assert_eq!(region, "region=Zürich");
    let hello: String = client
        .call("ask_name", json!({}))
        .await
        .expect("elicitation");
    assert_eq!(hello, format!("Hello, Ferris! ({rev})"));
    let model: String = client.call("ask_model", json!({})).await.expect("sampling");
    assert_eq!(model, "model says Paris");
    let failed = client
        .call_tool("broken", json!({}))
        .await
        .expect("a result");
    assert!(failed.is_error());
    assert_eq!(failed.content[0].as_text(), Some("it broke"));
    let read = client.read("mem://motd").await.expect("read");
    assert_eq!(
        serde_json::to_value(&read.contents).expect("json"),
        json!([{"uri": "mem://motd", "mimeType": "text/plain", "text": "be kind"}])
    );
    let prompt = client
        .get_prompt("greet", json!({"name": "Ada"}))
        .await
        .expect("prompt");
    assert_eq!(prompt.messages[0].content.as_text(), Some("Hello, Ada!"));
    let prompts = client.list_prompts().await.expect("prompts");
    assert_eq!(prompts[0].name, "greet");
    let resources = client.list_resources().await.expect("resources");
    assert_eq!(resources[0].uri, "mem://motd");
    let missing = client.read("mem://nope").await.expect_err("not found");
    let expected = if rev == Revision::V2026_07_28 {
        -32602
    } else {
        -32002
    };
    assert_eq!(missing.rpc().map(|e| e.code), Some(expected));
    // Completion needs the `completions` capability, which this server does not declare.
    let err = client
        .complete(CompletionReference::prompt("greet"), "name", "A")
        .await
        .expect_err("no completions");
    assert_eq!(err.rpc().map(|e| e.code), Some(-32601));
}

#[tokio::test]
async fn modern_against_sake() {
    let url = serve().await;
    let client = builder().connect(&url).await.expect("connect");
    assert_eq!(client.revision(), Revision::V2026_07_28);
    assert_eq!(client.session_id(), None);
    exercise(&client).await;
}

#[tokio::test]
async fn legacy_against_sake() {
    let url = serve().await;
    for rev in Revision::LEGACY {
        let client = builder()
            .revision(rev)
            .connect(&url)
            .await
            .expect("connect");
        assert_eq!(client.revision(), rev);
        assert!(client.session_id().is_some(), "{rev}: a session");
        if rev == Revision::V2025_03_26 {
            // 2025-03-26 has no elicitation: check the rest.
            // No structured output in 2025-03-26: the JSON text decodes all the same.
            let sum: Sum = client
                .call("add", json!({"a": 2, "b": 3}))
                .await
                .expect("add");
            assert_eq!(sum, Sum { sum: 5 });
            let err = client.call("ask_name", json!({})).await.map(|_: Value| ());
            assert!(err.is_err(), "{rev}: no elicitation in 2025-03-26");
        } else {
            exercise(&client).await;
        }
        client.close().await;
    }
}

#[tokio::test]
async fn progress_notifications_reach_the_client() {
    let url = serve().await;
    for client in [
        builder().connect(&url).await.expect("modern"),
        builder()
            .revision(Revision::V2025_11_25)
            .connect(&url)
            .await
            .expect("legacy"),
    ] {
        let rev = client.revision();
        let mut all = client.notifications();
        let out = client
            .request(
                "tools/call",
                json!({"name": "count", "arguments": {}, "_meta": {"progressToken": "p"}}),
            )
            .await
            .expect("count");
        assert_eq!(out["content"][0]["text"], "counted", "{rev}");
        for progress in [1.0, 2.0] {
            let n = tokio::time::timeout(Duration::from_secs(5), all.next())
                .await
                .unwrap_or_else(|_| panic!("{rev}: progress in time"))
                .expect("a notification");
            assert_eq!(n.method, "notifications/progress", "{rev}");
            assert_eq!(
                n.params,
                json!({"progressToken": "p", "progress": progress, "total": 2.0}),
                "{rev}"
            );
        }
    }
}

#[tokio::test]
async fn subscriptions_on_both_eras() {
    let url = serve().await;
    for client in [
        builder().connect(&url).await.expect("modern"),
        builder()
            .revision(Revision::V2025_11_25)
            .connect(&url)
            .await
            .expect("legacy"),
    ] {
        let rev = client.revision();
        let mut sub = client
            .subscribe(Subscription {
                tools_list_changed: true,
                ..Subscription::default()
            })
            .await
            .expect("subscribed");
        let _: String = client.call("change", json!({})).await.expect("change");
        let n = tokio::time::timeout(Duration::from_secs(5), sub.next())
            .await
            .unwrap_or_else(|_| panic!("{rev}: a notification in time"))
            .expect("a notification");
        assert_eq!(n.method, "notifications/tools/list_changed", "{rev}");
    }
}
