//! A whole HTTP request through the router, in memory.
//!
//! Input: a request written like HTTP — a first line with the method (`POST`, `GET`,
//! `DELETE`, anything else), header lines `name: value` up to an empty line, then the body.
//! A `Mcp-Session-Id` of `@session` / `@session-2025-03-26` is replaced with a fresh session
//! id of a 2025-11-25 / 2025-03-26 session, signed with the server's key; a request without
//! `Host` gets `Host: 127.0.0.1`.
//!
//! Properties: no panic anywhere (a panic in a spawned task aborts too, through libFuzzer's
//! panic hook); the status is one sake sends; a JSON body is a JSON-RPC message or batch; each
//! SSE `data:` line is one JSON value.
#![no_main]

use std::sync::LazyLock;
use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use http::{HeaderName, HeaderValue, Method, Request, Response};
use http_body_util::BodyExt;
use libfuzzer_sys::fuzz_target;
use sake::prelude::*;
use sake::{CreateMessageRequest, Elicitation, Revision};
use sake_runtime::internals::Keys;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tower::ServiceExt;

/// Echoes its text.
#[tool]
fn echo(
    /// The text.
    text: String,
) -> String {
    text
}

/// Adds two integers.
#[tool(annotations(read_only))]
fn add(a: i64, b: i64) -> i64 {
    a.wrapping_add(b)
}

/// Reports progress twice.
#[tool]
async fn progress(ctx: Context) -> &'static str {
    ctx.progress(1.0, Some(2.0)).await;
    ctx.log(LoggingLevel::Info, "half way").await;
    ctx.progress(2.0, Some(2.0)).await;
    "done"
}

/// A value that is also a header.
#[tool]
fn regional(
    /// The region.
    #[arg(header = "Region")]
    region: String,
    /// A count.
    #[arg(header = "Count")]
    count: Option<i64>,
) -> String {
    format!("{region} {count:?}")
}

#[derive(Deserialize, JsonSchema)]
struct NameForm {
    name: String,
}

/// Asks for a name, then the model (MRTR on 2026-07-28, requests on sessions).
#[tool]
async fn ask(ctx: Context) -> Result<String, sake::InputError> {
    let name = ctx.elicit::<NameForm>("name", "Your name?").await?;
    let name = match name {
        Elicitation::Accepted(f) => f.name,
        _ => "nobody".into(),
    };
    let said = ctx
        .sample("model", CreateMessageRequest::user(name, 10))
        .await?;
    Ok(said.text().unwrap_or_default().to_owned())
}

/// Triggers a list change.
#[tool]
fn change(ctx: Context) -> &'static str {
    if let Some(n) = ctx.notifier() {
        n.tools_changed();
        n.notify_resource_updated("test://data/1");
    }
    "changed"
}

/// A prompt with an argument.
#[prompt]
fn greet(
    /// Who.
    who: String,
) -> String {
    format!("Hello {who}")
}

/// Data for an id.
#[resource(uri = "test://data/{id}", name = "data", mime_type = "text/plain")]
fn data(id: String) -> String {
    id
}

/// A static resource.
#[resource(uri = "test://static", name = "static", mime_type = "text/plain")]
fn fixed() -> &'static str {
    "static"
}

const KEY: &str = "fuzz key: 32 bytes or more, fixed";

struct World {
    rt: tokio::runtime::Runtime,
    router: axum::Router,
    /// Mints session ids the server accepts (same key), fresh for each input, so that a
    /// DELETE in one input does not end the session of the next.
    keys: Keys,
}

static WORLD: LazyLock<World> = LazyLock::new(|| {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let service = Server::from_registry()
        .name("fuzz")
        .version("0")
        .session_key(KEY)
        .page_size(2)
        .request_timeout(Duration::from_secs(2))
        .limits(|l| l.input_timeout(Duration::from_millis(50)))
        .keep_alive(Duration::from_millis(50))
        .build()
        .expect("the fuzz server builds");
    let router = service.router();
    let keys = Keys::new(KEY.as_bytes()).expect("a non-empty key");
    World { rt, router, keys }
});

/// `ROUTER_TRACE=1` prints each input's status (to check what the seeds reach).
static TRACE: LazyLock<bool> = LazyLock::new(|| std::env::var_os("ROUTER_TRACE").is_some());

const STATUSES: &[u16] = &[200, 202, 400, 403, 404, 405, 408, 413, 415, 503];

fuzz_target!(|data: &[u8]| {
    let world = &*WORLD;
    let Some(req) = request(world, data) else {
        return;
    };
    // A response to HEAD has no body, whatever its Content-Type says.
    let head = req.method() == Method::HEAD;
    let resp = world
        .rt
        .block_on(world.router.clone().oneshot(req))
        .expect("the router is infallible");
    let status = resp.status().as_u16();
    if *TRACE {
        eprintln!(
            "router: {status} {:?}",
            resp.headers().get(http::header::CONTENT_TYPE)
        );
    }
    assert!(STATUSES.contains(&status), "unexpected status {status}");
    if !head {
        check_body(world, resp);
    }
});

fn request(world: &World, data: &[u8]) -> Option<Request<Body>> {
    let split = data
        .windows(2)
        .position(|w| w == b"\n\n")
        .map_or((data, &[][..]), |i| (&data[..i], &data[i + 2..]));
    let (head, body) = split;
    let mut lines = head.split(|&b| b == b'\n');
    let method = match lines.next().unwrap_or_default() {
        b"POST" => Method::POST,
        b"GET" => Method::GET,
        b"DELETE" => Method::DELETE,
        other => Method::from_bytes(other).unwrap_or(Method::PUT),
    };
    let mut builder = Request::builder().method(method).uri("/mcp");
    let mut host = false;
    for line in lines {
        let Some(colon) = line.iter().position(|&b| b == b':') else {
            continue;
        };
        let Ok(name) = HeaderName::from_bytes(&line[..colon]) else {
            continue;
        };
        let raw = line[colon + 1..]
            .strip_prefix(b" ")
            .unwrap_or(&line[colon + 1..]);
        let value = match (name.as_str(), raw) {
            ("mcp-session-id", b"@session") => world
                .keys
                .mint_session(Revision::V2025_11_25)
                .and_then(|s| HeaderValue::from_str(&s).ok()),
            ("mcp-session-id", b"@session-2025-03-26") => world
                .keys
                .mint_session(Revision::V2025_03_26)
                .and_then(|s| HeaderValue::from_str(&s).ok()),
            _ => HeaderValue::from_bytes(raw).ok(),
        };
        let Some(value) = value else { continue };
        host |= name == http::header::HOST;
        builder = builder.header(name, value);
    }
    if !host {
        builder = builder.header(http::header::HOST, "127.0.0.1");
    }
    builder.body(Body::from(Bytes::copy_from_slice(body))).ok()
}

fn check_body(world: &World, resp: Response<Body>) {
    let content_type = resp
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let sse = content_type.starts_with("text/event-stream");
    // Long-lived streams (GET, subscriptions/listen) never end: read what comes quickly.
    let limit = if sse {
        Duration::from_millis(100)
    } else {
        Duration::from_secs(5)
    };
    let collected = world.rt.block_on(async {
        let mut body = resp.into_body();
        let mut out = Vec::new();
        let _ = tokio::time::timeout(limit, async {
            while let Some(frame) = body.frame().await {
                match frame {
                    Ok(f) => {
                        if let Ok(d) = f.into_data() {
                            out.extend_from_slice(&d);
                        }
                    }
                    Err(_) => break,
                }
            }
        })
        .await;
        out
    });
    if sse {
        let text = String::from_utf8(collected).expect("an SSE stream is UTF-8");
        for line in text.lines() {
            if let Some(data) = line.strip_prefix("data:") {
                let data = data.trim_start();
                if !data.is_empty() {
                    let _: Value = serde_json::from_str(data).expect("an SSE data line is JSON");
                }
            }
        }
    } else if content_type.starts_with("application/json") {
        assert!(!collected.is_empty(), "an empty JSON body");
        let v: Value = serde_json::from_slice(&collected).expect("a JSON body is JSON");
        let messages = match &v {
            Value::Array(items) => items.clone(),
            other => vec![other.clone()],
        };
        for m in messages {
            assert_eq!(m["jsonrpc"], "2.0", "not JSON-RPC: {m}");
            assert!(m.get("result").is_some() != m.get("error").is_some(), "{m}");
        }
    }
}
