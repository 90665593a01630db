//! Application state (`State<T>`) in tools, prompts and resources; the start-up check for
//! state nobody registered; and what a `Context` tells a function about its request, over
//! HTTP (with the request's extensions, filled by an axum layer) and over stdio.

use std::sync::atomic::{AtomicU64, Ordering};

use axum::extract::Request;
use axum::middleware::{self, Next};
use axum::response::Response;
use http_body_util::BodyExt as _;
use sake::prelude::*;
use sake::registry::{PromptDef, ResourceDef, ToolDef};
use sake::{Registry, State};
use sake_tests::{Peer, modern_meta, within};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use tower::ServiceExt as _;

// ---------------------------------------------------------------------------------------------
// State

/// How the server greets.
struct Greeting(String);

/// How many greetings were given.
#[derive(Default)]
struct Counter(AtomicU64);

/// A state type only `lookup` asks for; most servers here register it, one does not.
struct Database;

/// Greets someone with the configured greeting, and counts.
#[tool]
fn greet(
    /// Who to greet.
    name: String,
    greeting: State<Greeting>,
    counter: State<Counter>,
) -> String {
    let n = counter.0.fetch_add(1, Ordering::SeqCst) + 1;
    format!("{}, {name}! (#{n})", greeting.0)
}

/// Looks something up in the database.
#[tool]
async fn lookup(db: State<Database>) -> String {
    let _: &Database = &db;
    "found".into()
}

/// Welcomes someone with the configured greeting.
#[prompt]
fn welcome(
    /// Who to welcome.
    name: String,
    greeting: State<Greeting>,
) -> String {
    format!("{}, {name}. Say hello back.", greeting.0)
}

/// The configured greeting.
#[resource(uri = "config://greeting", mime_type = "text/plain")]
fn greeting_text(greeting: State<Greeting>) -> String {
    greeting.0.clone()
}

/// How many greetings, as seen at step `step`.
#[resource(uri = "count://{step}", mime_type = "text/plain")]
async fn count(step: u64, counter: State<Counter>) -> String {
    format!("step {step}: {}", counter.0.load(Ordering::SeqCst))
}

/// Another crate's type that happens to be called `State`: with `#[arg]` it is an argument.
mod wire {
    use schemars::JsonSchema;
    use serde::Deserialize;

    /// A state of a machine.
    #[derive(Deserialize, JsonSchema)]
    pub struct State<T>(pub T);
}

/// A machine's mode.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Mode {
    On,
    Off,
}

/// Switches a machine.
#[tool]
fn switch(
    /// The state to switch to.
    #[arg]
    to: wire::State<Mode>,
    greeting: State<Greeting>,
) -> String {
    let to = match to.0 {
        Mode::On => "on",
        Mode::Off => "off",
    };
    format!("{} switched {to}", greeting.0)
}

/// Every function of this file, with their state.
fn server() -> Server {
    Server::from_registry()
        .name("state")
        .version("1.0.0")
        .state(Greeting("Hello".into()))
        .state(Counter::default())
        .state(Database)
}

fn text(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn state_reaches_tools_prompts_and_resources() {
    let client = sake::testing::TestClient::new(server()).unwrap();
    let greeted = client
        .call_tool("greet", json!({"name": "Ada"}))
        .await
        .unwrap();
    assert_eq!(text(&greeted), "Hello, Ada! (#1)");
    let greeted = client
        .call_tool("greet", json!({"name": "Grace"}))
        .await
        .unwrap();
    assert_eq!(text(&greeted), "Hello, Grace! (#2)");
    let prompt = client
        .get_prompt("welcome", json!({"name": "Ada"}))
        .await
        .unwrap();
    assert_eq!(
        prompt["messages"],
        json!([{"role": "user", "content": {"type": "text", "text": "Hello, Ada. Say hello back."}}])
    );
    let read = client.read_resource("config://greeting").await.unwrap();
    assert_eq!(
        read["contents"],
        json!([{"uri": "config://greeting", "mimeType": "text/plain", "text": "Hello"}])
    );
    let read = client.read_resource("count://7").await.unwrap();
    assert_eq!(
        read["contents"],
        json!([{"uri": "count://7", "mimeType": "text/plain", "text": "step 7: 2"}])
    );
    let found = client.call_tool("lookup", json!({})).await.unwrap();
    assert_eq!(text(&found), "found");
}

#[tokio::test]
async fn a_state_parameter_is_not_an_argument_but_an_arg_named_state_is() {
    let client = sake::testing::TestClient::new(server()).unwrap();
    let tools = client.list_tools().await.unwrap();
    let schema = |name: &str| {
        tools["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap()["inputSchema"]
            .clone()
    };
    assert_eq!(
        schema("greet"),
        json!({
            "type": "object",
            "properties": {"name": {"type": "string", "description": "Who to greet."}},
            "required": ["name"],
        })
    );
    assert_eq!(
        schema("lookup"),
        json!({"type": "object", "properties": {}})
    );
    let switch = schema("switch");
    assert_eq!(switch["required"], json!(["to"]));
    assert_eq!(
        switch["properties"]["to"]["description"],
        "The state to switch to."
    );
    let switched = client
        .call_tool("switch", json!({"to": "on"}))
        .await
        .unwrap();
    assert_eq!(text(&switched), "Hello switched on");
}

#[test]
fn a_tool_asking_for_unregistered_state_stops_start_up() {
    let err = Server::from_registry()
        .state(Greeting("Hello".into()))
        .state(Counter::default())
        .build()
        .unwrap_err();
    let sake::Error::MissingState {
        kind,
        name,
        location,
        type_name,
    } = &err
    else {
        panic!("expected MissingState, got {err:?}");
    };
    assert_eq!(
        (*kind, name.as_str(), *type_name),
        ("tool", "lookup", "state_and_context::Database")
    );
    assert!(
        location.starts_with("tests/tests/state_and_context.rs:")
            && location.ends_with(" (state_and_context)"),
        "{location}"
    );
    assert_eq!(
        err.to_string(),
        format!(
            "tool `lookup` at {location} takes State<state_and_context::Database>, but no state_and_context::Database was registered: add `.state(value)` to the server builder"
        )
    );
}

fn only(tools: &[&str], prompts: &[&str], resources: &[&str]) -> Registry {
    Registry::from_defs(
        inventory::iter::<ToolDef>().filter(|d| tools.contains(&d.name)),
        inventory::iter::<PromptDef>().filter(|d| prompts.contains(&d.name)),
        inventory::iter::<ResourceDef>().filter(|d| resources.contains(&d.uri)),
    )
    .unwrap()
}

#[test]
fn prompts_and_resources_are_checked_too() {
    let missing = |registry: Registry| match Server::with_registry(registry).build() {
        Err(sake::Error::MissingState {
            kind,
            name,
            type_name,
            ..
        }) => (kind, name, type_name),
        other => panic!("expected MissingState, got {other:?}"),
    };
    assert_eq!(
        missing(only(&[], &["welcome"], &[])),
        (
            "prompt",
            "welcome".to_owned(),
            "state_and_context::Greeting"
        )
    );
    assert_eq!(
        missing(only(&[], &[], &["config://greeting"])),
        (
            "resource",
            "config://greeting".to_owned(),
            "state_and_context::Greeting"
        )
    );
    assert_eq!(
        missing(only(&[], &[], &["count://{step}"])),
        (
            "resource",
            "count://{step}".to_owned(),
            "state_and_context::Counter"
        )
    );
    // Registered: it builds.
    Server::with_registry(only(&["greet"], &["welcome"], &["count://{step}"]))
        .state(Greeting("Hi".into()))
        .state(Counter::default())
        .build()
        .unwrap();
}

// ---------------------------------------------------------------------------------------------
// Context

/// Who is calling, as an authentication layer establishes it.
#[derive(Clone, Debug)]
struct Principal(String);

/// Reports what the context knows about this request.
#[tool]
fn context_report(ctx: Context) -> String {
    json!({
        "revision": ctx.revision().as_str(),
        "client": ctx.client_info().map(|c| format!("{} {}", c.name, c.version)),
        "elicitation": ctx.client_capabilities().elicitation.is_some(),
        "sampling": ctx.client_capabilities().sampling.is_some(),
        "roots": ctx.client_capabilities().roots.is_some(),
        "progressToken": ctx.progress_token(),
        "principal": ctx.extensions().get::<Principal>().map(|p| p.0.clone()),
        "name": ctx.name(),
        "greeting": ctx.state::<Greeting>().map(|g| g.0.clone()),
        "unregistered": ctx.state::<u8>().is_some(),
        "meta": ctx.meta().map(|m| serde_json::from_str::<Value>(m.get()).unwrap()),
    })
    .to_string()
}

fn report(result: &Value) -> Value {
    serde_json::from_str(text(result)).unwrap()
}

/// The layer an application puts in front of the MCP router.
async fn authenticate(mut request: Request, next: Next) -> Response {
    let who = request
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(|t| Principal(t.to_owned()));
    if let Some(who) = who {
        request.extensions_mut().insert(who);
    }
    next.run(request).await
}

fn app() -> axum::Router {
    server()
        .into_router()
        .unwrap()
        .layer(middleware::from_fn(authenticate))
}

async fn post(
    app: &axum::Router,
    headers: &[(&str, &str)],
    body: Value,
) -> (http::HeaderMap, Value) {
    let mut req = http::Request::post("/mcp")
        .header("host", "localhost")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let req = req.body(axum::body::Body::from(body.to_string())).unwrap();
    let resp = within("the router", app.clone().oneshot(req))
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let (parts, body) = resp.into_parts();
    let body = body.collect().await.unwrap().to_bytes();
    (parts.headers, serde_json::from_slice(&body).unwrap())
}

#[tokio::test]
async fn over_http_a_2026_request_context_has_its_meta_and_the_layers_extensions() {
    let app = app();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "context_report",
        "arguments": {},
        "_meta": modern_meta(
            json!({"elicitation": {}, "roots": {}}),
            json!({"progressToken": "p-1", "x.example/trace": "t-é"}),
        ),
    }});
    let headers = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "context_report"),
        ("authorization", "Bearer alice"),
    ];
    let (_, reply) = post(&app, &headers, body.clone()).await;
    assert_eq!(
        report(&reply["result"]),
        json!({
            "revision": "2026-07-28",
            "client": "stdio-tests 1.0.0",
            "elicitation": true,
            "sampling": false,
            "roots": true,
            "progressToken": "p-1",
            "principal": "alice",
            "name": "context_report",
            "greeting": "Hello",
            "unregistered": false,
            // The whole `_meta` as sent, extension keys included.
            "meta": body["params"]["_meta"],
        })
    );
    // Without the header the layer inserts nothing.
    let (_, reply) = post(&app, &headers[..3], body).await;
    assert_eq!(report(&reply["result"])["principal"], Value::Null);
}

#[tokio::test]
async fn over_http_a_session_request_context_has_the_session_and_the_layers_extensions() {
    let app = app();
    let (headers, init) = post(
        &app,
        &[],
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"sampling": {}},
            "clientInfo": {"name": "legacy-client", "version": "2.0.0"},
        }}),
    )
    .await;
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    let session = headers["mcp-session-id"].to_str().unwrap().to_owned();
    let (_, reply) = post(
        &app,
        &[
            ("mcp-session-id", &session),
            ("mcp-protocol-version", "2025-11-25"),
            ("authorization", "Bearer bob"),
        ],
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "context_report",
            "arguments": {},
            "_meta": {"progressToken": 42},
        }}),
    )
    .await;
    assert_eq!(
        report(&reply["result"]),
        json!({
            "revision": "2025-11-25",
            "client": "legacy-client 2.0.0",
            "elicitation": false,
            "sampling": true,
            "roots": false,
            "progressToken": 42,
            "principal": "bob",
            "name": "context_report",
            "greeting": "Hello",
            "unregistered": false,
            "meta": {"progressToken": 42},
        })
    );
}

#[tokio::test]
async fn over_stdio_the_context_has_no_extensions() {
    let service = server().build().unwrap();
    let (client_w, server_r) = tokio::io::duplex(64 * 1024);
    let (server_w, client_r) = tokio::io::duplex(64 * 1024);
    let serving = tokio::spawn(service.serve_io(server_r, server_w));
    let mut p = Peer::new(client_w, client_r);
    let modern = p
        .call(
            1,
            "tools/call",
            json!({"name": "context_report", "arguments": {}, "_meta": modern_meta(json!({"sampling": {}}), json!({}))}),
        )
        .await;
    assert_eq!(
        report(&modern["result"]),
        json!({
            "revision": "2026-07-28",
            "client": "stdio-tests 1.0.0",
            "elicitation": false,
            "sampling": true,
            "roots": false,
            "progressToken": null,
            "principal": null,
            "name": "context_report",
            "greeting": "Hello",
            "unregistered": false,
            "meta": modern_meta(json!({"sampling": {}}), json!({})),
        })
    );
    p.initialize("2025-03-26", json!({"roots": {"listChanged": true}}))
        .await;
    let legacy = p
        .call(
            2,
            "tools/call",
            json!({"name": "context_report", "arguments": {}, "_meta": {"progressToken": "s"}}),
        )
        .await;
    assert_eq!(
        report(&legacy["result"]),
        json!({
            "revision": "2025-03-26",
            "client": "stdio-tests 1.0.0",
            "elicitation": false,
            "sampling": false,
            "roots": true,
            "progressToken": "s",
            "principal": null,
            "name": "context_report",
            "greeting": "Hello",
            "unregistered": false,
            "meta": {"progressToken": "s"},
        })
    );
    p.close();
    assert_eq!(p.rest().await, Vec::<Value>::new());
    within("serve_io", serving).await.unwrap().unwrap();
}
