//! Graceful shutdown on a real socket: after the signal, a request in flight still gets its
//! result, a `subscriptions/listen` stream ends with its closing result, a handshake
//! session's GET stream ends, and the server future returns.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use sake::State;
use sake::prelude::*;
use sake_tests::{raw, within};
use serde_json::{Value, json};
use tokio::sync::{Notify, oneshot};

/// Tells the test that `slow` has started.
struct Started(Arc<Notify>);

/// Answers after `millis` milliseconds.
#[tool]
async fn slow(
    /// How long to take.
    millis: u64,
    started: State<Started>,
) -> String {
    started.0.notify_one();
    tokio::time::sleep(Duration::from_millis(millis)).await;
    format!("done after {millis} ms")
}

/// A note, so that resources can be subscribed to.
#[resource(uri = "notes://one", mime_type = "text/plain")]
fn note() -> &'static str {
    "one"
}

fn server(started: &Arc<Notify>) -> Server {
    Server::from_registry()
        .name("shutdown")
        .version("1.0.0")
        .state(Started(started.clone()))
}

fn server_info() -> Value {
    json!({"name": "shutdown", "version": "1.0.0"})
}

fn modern_request(
    url: &str,
    id: &str,
    method: &str,
    name: Option<&str>,
    params: Value,
) -> reqwest::RequestBuilder {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let mut req = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = name {
        req = req.header("mcp-name", name);
    }
    req.body(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string())
}

/// The `data:` payloads of an SSE body.
fn sse_data(body: &str) -> Vec<Value> {
    body.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| serde_json::from_str(d.trim_start()).unwrap())
        .collect()
}

/// Reads a streamed response until `until` appears in what was read so far.
async fn read_until(resp: &mut reqwest::Response, read: &mut String, until: &str) {
    within(&format!("reading until {until:?}"), async {
        while !read.contains(until) {
            let chunk = resp.chunk().await.unwrap().expect("the stream ended early");
            read.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    })
    .await;
}

async fn read_to_end(resp: &mut reqwest::Response, read: &mut String) {
    within("the stream ending", async {
        while let Some(chunk) = resp.chunk().await.unwrap() {
            read.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    })
    .await;
}

#[tokio::test]
async fn after_the_signal_requests_finish_listen_streams_close_and_serve_returns() {
    let started = Arc::new(Notify::new());
    let port = raw::free_port();
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let url = format!("http://{addr}/mcp");
    let (stop, stopped) = oneshot::channel::<()>();
    let serving = tokio::spawn(server(&started).serve_http_with_shutdown(addr, async {
        let _ = stopped.await;
    }));
    raw::wait_until_listening(port, "the server").await;

    // A subscription, open and acknowledged.
    let mut listen = within(
        "subscriptions/listen",
        modern_request(
            &url,
            "listen-1",
            "subscriptions/listen",
            None,
            json!({"notifications": {"toolsListChanged": true}}),
        )
        .send(),
    )
    .await
    .unwrap();
    assert_eq!(listen.status(), 200);
    assert_eq!(listen.headers()["content-type"], "text/event-stream");
    let mut listened = String::new();
    read_until(&mut listen, &mut listened, "acknowledged").await;

    // A slow call, running.
    let call = tokio::spawn(
        modern_request(
            &url,
            "slow-1",
            "tools/call",
            Some("slow"),
            json!({"name": "slow", "arguments": {"millis": 700}}),
        )
        .send(),
    );
    within("slow starting", started.notified()).await;

    stop.send(()).unwrap();

    // The listen stream ends with the result of the listen request.
    read_to_end(&mut listen, &mut listened).await;
    assert_eq!(
        sse_data(&listened),
        vec![
            json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": {
                "notifications": {"toolsListChanged": true},
                "_meta": {"io.modelcontextprotocol/subscriptionId": "listen-1"},
            }}),
            json!({"jsonrpc": "2.0", "id": "listen-1", "result": {
                "resultType": "complete",
                "_meta": {
                    "io.modelcontextprotocol/subscriptionId": "listen-1",
                    "io.modelcontextprotocol/serverInfo": server_info(),
                },
            }}),
        ]
    );

    // The call still gets its result.
    let resp = within("the slow call", call).await.unwrap().unwrap();
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(
        body,
        json!({"jsonrpc": "2.0", "id": "slow-1", "result": {
            "resultType": "complete",
            "content": [{"type": "text", "text": "done after 700 ms"}],
            "_meta": {"io.modelcontextprotocol/serverInfo": server_info()},
        }})
    );

    // And the server future returns.
    within("serve_http_with_shutdown returning", serving)
        .await
        .unwrap()
        .unwrap();
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}

#[tokio::test]
async fn a_handshake_sessions_get_stream_does_not_hold_the_server_open() {
    let started = Arc::new(Notify::new());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let service = server(&started).build().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let serving = tokio::spawn(service.serve(listener, async {
        let _ = stopped.await;
    }));
    let client = reqwest::Client::new();
    let init = within(
        "initialize",
        client
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "legacy", "version": "1.0.0"},
                }})
                .to_string(),
            )
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(init.status(), 200);
    let session = init.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let mut get = within(
        "GET",
        client
            .get(&url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "2025-06-18")
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(get.status(), 200);
    let mut read = String::new();
    read_until(&mut get, &mut read, ": stream open").await;
    // A slow call of the session, running.
    let call = tokio::spawn(
        client
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &session)
            .header("mcp-protocol-version", "2025-06-18")
            .body(
                json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                    "name": "slow", "arguments": {"millis": 500},
                }})
                .to_string(),
            )
            .send(),
    );
    within("slow starting", started.notified()).await;

    stop.send(()).unwrap();

    read_to_end(&mut get, &mut read).await;
    assert_eq!(read, ": stream open\n\n");
    let resp = within("the slow call", call).await.unwrap().unwrap();
    let body: Value = resp.json().await.unwrap();
    assert_eq!(
        body,
        json!({"jsonrpc": "2.0", "id": 1, "result": {
            "content": [{"type": "text", "text": "done after 500 ms"}],
        }})
    );
    within("serve returning", serving).await.unwrap().unwrap();
}

/// An application that serves `Service::router` with its own `axum::serve` ends sake's
/// long-lived streams by calling `Service::shutdown` in its graceful-shutdown future.
#[tokio::test]
async fn an_application_serving_the_router_itself_shuts_streams_down_with_service_shutdown() {
    let started = Arc::new(Notify::new());
    let service = server(&started).build().unwrap();
    let app = axum::Router::new()
        .route("/health", axum::routing::get(|| async { "ok" }))
        .merge(service.router());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (stop, stopped) = oneshot::channel::<()>();
    let serving = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = stopped.await;
                service.shutdown();
            })
            .await
    });
    let mut listen = within(
        "subscriptions/listen",
        modern_request(
            &url,
            "app-listen",
            "subscriptions/listen",
            None,
            json!({"notifications": {"resourceSubscriptions": ["notes://one"]}}),
        )
        .send(),
    )
    .await
    .unwrap();
    let mut listened = String::new();
    read_until(&mut listen, &mut listened, "acknowledged").await;

    stop.send(()).unwrap();

    read_to_end(&mut listen, &mut listened).await;
    assert_eq!(
        sse_data(&listened).last(),
        Some(&json!({"jsonrpc": "2.0", "id": "app-listen", "result": {
            "resultType": "complete",
            "_meta": {
                "io.modelcontextprotocol/subscriptionId": "app-listen",
                "io.modelcontextprotocol/serverInfo": server_info(),
            },
        }}))
    );
    within("axum::serve returning", serving)
        .await
        .unwrap()
        .unwrap();
}
