//! Small fake MCP servers for the client's tests, built with axum: each answers from a closure
//! and records what it saw.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::response::Response;
use axum::routing::any;
use futures_util::stream;
use http::HeaderMap;
use serde_json::{Value, json};

use crate::http::{CLIENT_CAPABILITIES, CLIENT_INFO, MODERN, PROTOCOL_VERSION};
use crate::rpc::{err, ok, server_meta};

/// One request the fake server received.
#[derive(Clone, Debug)]
pub struct Seen {
    /// `GET`, `POST`, `DELETE`.
    pub http: String,
    pub headers: HeaderMap,
    /// The JSON body (`Null` when empty or not JSON).
    pub body: Value,
}

impl Seen {
    /// The JSON-RPC method (`""` for responses and GETs).
    pub fn method(&self) -> &str {
        self.body
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub fn id(&self) -> Value {
        self.body.get("id").cloned().unwrap_or(Value::Null)
    }
}

/// What the fake answers.
#[derive(Debug)]
pub enum Reply {
    /// Status, content type, body.
    Plain(u16, &'static str, String),
    /// An event stream: each chunk written after a pause; the body ends after the last.
    Stream(Vec<(Duration, String)>),
    /// Another reply, with extra headers.
    Headers(Box<Reply>, Vec<(&'static str, String)>),
}

impl Reply {
    /// 200 with a JSON-RPC result for `seen`'s id.
    pub fn result(seen: &Seen, result: Value) -> Reply {
        Reply::Plain(200, "application/json", ok(seen.id(), result).to_string())
    }

    /// A JSON-RPC error for `seen`'s id, with an HTTP status.
    pub fn error(status: u16, seen: &Seen, code: i64, data: Option<Value>) -> Reply {
        let message = format!("error {code}");
        Reply::Plain(
            status,
            "application/json",
            err(seen.id(), code, &message, data).to_string(),
        )
    }

    pub fn status(status: u16, body: &str) -> Reply {
        Reply::Plain(status, "text/plain", body.to_owned())
    }

    pub fn accepted() -> Reply {
        Reply::Plain(202, "text/plain", String::new())
    }
}

type Handler = dyn Fn(&Seen) -> Reply + Send + Sync;

#[derive(Clone)]
struct Shared {
    seen: Arc<Mutex<Vec<Seen>>>,
    handler: Arc<Handler>,
    session: Option<&'static str>,
}

/// An SSE event carrying `message`.
pub fn event(message: &Value) -> String {
    format!("data: {message}\n\n")
}

/// A running fake server.
#[derive(Debug)]
pub struct Fake {
    pub url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Fake {
    /// Every request so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// The JSON-RPC methods of the POSTs so far.
    pub fn methods(&self) -> Vec<String> {
        self.seen()
            .iter()
            .filter(|s| s.http == "POST")
            .map(|s| s.method().to_owned())
            .collect()
    }

    pub fn count(&self, method: &str) -> usize {
        self.methods().iter().filter(|m| *m == method).count()
    }
}

async fn handle(State(shared): State<Shared>, req: Request) -> Result<Response, Infallible> {
    let (parts, body) = req.into_parts();
    let bytes = axum::body::to_bytes(body, 1 << 20)
        .await
        .unwrap_or_default();
    let seen = Seen {
        http: parts.method.to_string(),
        headers: parts.headers,
        body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    };
    if let Ok(mut s) = shared.seen.lock() {
        s.push(seen.clone());
    }
    let mut reply = (shared.handler)(&seen);
    let mut builder = Response::builder();
    if let Some(sid) = shared.session {
        builder = builder.header("mcp-session-id", sid);
    }
    while let Reply::Headers(inner, headers) = reply {
        for (k, v) in headers {
            builder = builder.header(k, v);
        }
        reply = *inner;
    }
    Ok(match reply {
        Reply::Plain(status, ct, body) => builder
            .status(status)
            .header("content-type", ct)
            .body(Body::from(body))
            .unwrap_or_default(),
        Reply::Stream(chunks) => {
            let s = stream::unfold(chunks.into_iter(), |mut it| async move {
                let (pause, chunk) = it.next()?;
                tokio::time::sleep(pause).await;
                Some((Ok::<_, Infallible>(Bytes::from(chunk)), it))
            });
            builder
                .status(200)
                .header("content-type", "text/event-stream")
                .body(Body::from_stream(s))
                .unwrap_or_default()
        }
        Reply::Headers(..) => Response::default(),
    })
}

/// Starts a fake server answering with `handler`.
pub async fn fake(handler: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> Fake {
    fake_with_session(None, handler).await
}

/// Starts a fake server that sends `Mcp-Session-Id: session` on every answer.
pub async fn fake_with_session(
    session: Option<&'static str>,
    handler: impl Fn(&Seen) -> Reply + Send + Sync + 'static,
) -> Fake {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let shared = Shared {
        seen: Arc::clone(&seen),
        handler: Arc::new(handler),
        session,
    };
    let app = axum::Router::new()
        .route("/mcp", any(handle))
        .with_state(shared);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind a loopback port");
    let addr = listener.local_addr().expect("local address");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Fake {
        url: format!("http://{addr}/mcp"),
        seen,
    }
}

/// A 2026-07-28 `server/discover` result, fresh for an hour (what the client remembers).
pub fn discover_result() -> Value {
    json!({"resultType": "complete", "supportedVersions": ["2026-07-28", "2025-11-25"],
        "capabilities": {"tools": {}}, "ttlMs": 3600000, "cacheScope": "private",
        "_meta": server_meta("fake", "1")})
}

/// An `initialize` result at 2025-11-25.
pub fn initialize_result() -> Value {
    json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
        "serverInfo": {"name": "fake-legacy", "version": "1"}})
}

/// A handshake-era server: answers `discover` as given, `initialize`, notifications (202),
/// GET (405), and `tools/list` (one tool).
pub fn legacy(
    discover: impl Fn(&Seen) -> Reply + Send + Sync + 'static,
) -> impl Fn(&Seen) -> Reply + Send + Sync + 'static {
    move |seen: &Seen| {
        if seen.http != "POST" {
            return Reply::status(405, "");
        }
        match seen.method() {
            "server/discover" => discover(seen),
            "initialize" => Reply::result(seen, initialize_result()),
            "notifications/initialized" => Reply::accepted(),
            "tools/list" => Reply::result(
                seen,
                json!({"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}),
            ),
            _ => Reply::error(200, seen, -32601, None),
        }
    }
}

/// A 2026-07-28 server: `discover`, and `tools/list` / `tools/call` as given.
pub fn modern(
    rest: impl Fn(&Seen) -> Reply + Send + Sync + 'static,
) -> impl Fn(&Seen) -> Reply + Send + Sync + 'static {
    move |seen: &Seen| match seen.method() {
        "server/discover" => Reply::result(seen, discover_result()),
        _ => rest(seen),
    }
}

/// The `_meta` every 2026-07-28 request of a client without handlers carries.
pub fn plain_meta() -> Value {
    json!({
        PROTOCOL_VERSION: MODERN,
        CLIENT_CAPABILITIES: {},
        CLIENT_INFO: {"name": "t", "version": "1"}
    })
}
