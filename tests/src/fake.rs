//! The fake MCP server of the client's tests, over HTTP: axum on `127.0.0.1:0`, answering each
//! request from a closure and recording exactly what the client sent.
//!
//! One fake for every test of the client: the integration tests (`client-interop/`) use it as
//! `sake_tests::fake`, and the client's unit tests in `sake-runtime/src/client/` include this
//! file by path (their `client/fake.rs` adds what needs the crate's internals: a client builder
//! and a fake stdio server). So it names nothing of either crate: only axum, http, tokio,
//! futures-util and serde_json.

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ::http::HeaderMap;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::response::Response;
use axum::routing::any;
use serde_json::{Value, json};
use tokio::sync::Notify;

/// The `_meta` every 2026-07-28 request of a client named `t` 1 without handlers carries.
pub fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}
    })
}

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

    pub fn params(&self) -> Value {
        self.body.get("params").cloned().unwrap_or(Value::Null)
    }
}

/// What the fake answers.
#[derive(Debug)]
pub enum Reply {
    /// A status, a content type and a body.
    Plain(u16, &'static str, String),
    /// An event stream: each step in turn, then the end.
    Events(Vec<Step>),
    /// Another reply, with an `Mcp-Session-Id`.
    Session(&'static str, Box<Reply>),
    /// Another reply, with these headers.
    Headers(Box<Reply>, Vec<(&'static str, String)>),
    /// 200 with this content type and a body of `total` bytes (`prefix`, then `x`s) sent in
    /// 64 KiB chunks, each counted in `sent` as it is handed to the connection. With
    /// `declared`, a `Content-Length` of that many bytes.
    Flood {
        content_type: &'static str,
        prefix: String,
        total: usize,
        sent: Arc<AtomicUsize>,
        declared: Option<u64>,
    },
}

impl Reply {
    /// 200 with a JSON-RPC result for `seen`'s id.
    pub fn result(seen: &Seen, result: Value) -> Reply {
        Reply::Plain(
            200,
            "application/json",
            json!({"jsonrpc": "2.0", "id": seen.id(), "result": result}).to_string(),
        )
    }

    /// A JSON-RPC error `code` (message `error <code>`) for `seen`'s id, with an HTTP status.
    pub fn error(status: u16, seen: &Seen, code: i64) -> Reply {
        Reply::error_with_data(status, seen, code, None)
    }

    /// [`Reply::error`] with the error's `data` when given.
    pub fn error_with_data(status: u16, seen: &Seen, code: i64, data: Option<Value>) -> Reply {
        let mut error = json!({"code": code, "message": format!("error {code}")});
        if let Some(data) = data {
            error["data"] = data;
        }
        Reply::Plain(
            status,
            "application/json",
            json!({"jsonrpc": "2.0", "id": seen.id(), "error": error}).to_string(),
        )
    }

    /// A status and no body.
    pub fn status(status: u16) -> Reply {
        Reply::text(status, "")
    }

    /// A status and a `text/plain` body.
    pub fn text(status: u16, body: &str) -> Reply {
        Reply::Plain(status, "text/plain", body.to_owned())
    }

    /// 202, as to a notification or a response.
    pub fn accepted() -> Reply {
        Reply::status(202)
    }
}

/// One step of an event stream.
#[derive(Debug)]
pub enum Step {
    /// An event carrying this message.
    Message(Value),
    /// These bytes as they are (fields, comments, an unfinished event).
    Raw(String),
    /// Nothing until the gate is notified.
    Wait(Arc<Notify>),
    /// Nothing for this long.
    Pause(Duration),
}

/// An SSE event carrying `message`, as [`Step::Message`] writes it.
pub fn event(message: &Value) -> String {
    format!("data: {message}\n\n")
}

type Handler = dyn Fn(&Seen) -> Reply + Send + Sync;

#[derive(Clone)]
struct Shared {
    seen: Arc<Mutex<Vec<Seen>>>,
    handler: Arc<Handler>,
}

/// A running fake HTTP server.
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

    /// The POSTs so far.
    pub fn posts(&self) -> Vec<Seen> {
        self.seen()
            .into_iter()
            .filter(|s| s.http == "POST")
            .collect()
    }

    /// The JSON-RPC methods of the POSTs so far.
    pub fn methods(&self) -> Vec<String> {
        self.posts().iter().map(|s| s.method().to_owned()).collect()
    }

    /// How many POSTs of `method` so far.
    pub fn count(&self, method: &str) -> usize {
        self.methods().iter().filter(|m| *m == method).count()
    }

    /// The last POST of `method`.
    pub fn last(&self, method: &str) -> Seen {
        match self
            .posts()
            .into_iter()
            .rev()
            .find(|s| s.method() == method)
        {
            Some(s) => s,
            None => panic!("no {method} was sent: {:?}", self.methods()),
        }
    }

    /// Waits (at most 5 s) until `method` was posted.
    pub async fn wait_for(&self, method: &str) {
        for _ in 0..500 {
            if self.methods().iter().any(|m| m == method) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("{method} never came: {:?}", self.methods());
    }
}

fn event_stream(steps: Vec<Step>) -> Body {
    let stream = futures_util::stream::unfold(steps.into_iter(), |mut steps| async move {
        loop {
            match steps.next()? {
                Step::Message(m) => {
                    let chunk = Bytes::from(event(&m));
                    return Some((Ok::<_, Infallible>(chunk), steps));
                }
                Step::Raw(text) => return Some((Ok(Bytes::from(text)), steps)),
                Step::Wait(gate) => gate.notified().await,
                Step::Pause(pause) => tokio::time::sleep(pause).await,
            }
        }
    });
    Body::from_stream(stream)
}

/// `prefix`, then `x`s up to `total` bytes, 64 KiB at a time, counting what was handed out.
fn flood(prefix: String, total: usize, sent: Arc<AtomicUsize>) -> Body {
    const CHUNK: usize = 64 << 10;
    let filler = Bytes::from(vec![b'x'; CHUNK]);
    let first = Some(Bytes::from(prefix));
    let stream = futures_util::stream::unfold((first, 0usize), move |(first, done)| {
        let filler = filler.clone();
        let sent = Arc::clone(&sent);
        async move {
            let chunk = match first {
                Some(p) => p,
                None if done >= total => return None,
                None => filler.slice(..CHUNK.min(total - done)),
            };
            let done = done + chunk.len();
            sent.fetch_add(chunk.len(), Ordering::SeqCst);
            Some((Ok::<_, Infallible>(chunk), (None, done)))
        }
    });
    Body::from_stream(stream)
}

async fn handle(State(shared): State<Shared>, req: Request) -> Response {
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
    let reply = loop {
        match reply {
            Reply::Session(id, inner) => {
                builder = builder.header("mcp-session-id", id);
                reply = *inner;
            }
            Reply::Headers(inner, headers) => {
                for (name, value) in headers {
                    builder = builder.header(name, value);
                }
                reply = *inner;
            }
            other => break other,
        }
    };
    let built = match reply {
        Reply::Plain(status, ct, body) => builder
            .status(status)
            .header("content-type", ct)
            .body(Body::from(body)),
        Reply::Events(steps) => builder
            .status(200)
            .header("content-type", "text/event-stream")
            .body(event_stream(steps)),
        Reply::Flood {
            content_type,
            prefix,
            total,
            sent,
            declared,
        } => {
            if let Some(len) = declared {
                builder = builder.header("content-length", len);
            }
            builder
                .status(200)
                .header("content-type", content_type)
                .body(flood(prefix, total, sent))
        }
        Reply::Session(..) | Reply::Headers(..) => builder.body(Body::empty()),
    };
    built.unwrap_or_default()
}

/// Starts a fake HTTP server answering with `handler`.
pub async fn fake(handler: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> Fake {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let shared = Shared {
        seen: Arc::clone(&seen),
        handler: Arc::new(handler),
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

/// Starts a fake server that sends `Mcp-Session-Id: session` (when given) with every answer.
pub async fn fake_with_session(
    session: Option<&'static str>,
    handler: impl Fn(&Seen) -> Reply + Send + Sync + 'static,
) -> Fake {
    fake(move |seen: &Seen| match session {
        Some(id) => Reply::Session(id, Box::new(handler(seen))),
        None => handler(seen),
    })
    .await
}

/// A 2026-07-28 `server/discover` result, fresh for an hour (what the client remembers).
pub fn discover_result() -> Value {
    json!({"resultType": "complete", "supportedVersions": ["2026-07-28", "2025-11-25"],
        "capabilities": {"tools": {}}, "ttlMs": 3600000, "cacheScope": "private",
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "fake", "version": "1"}}})
}

/// An `initialize` result at 2025-11-25.
pub fn initialize_result() -> Value {
    json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
        "serverInfo": {"name": "fake-legacy", "version": "1"}})
}

/// A 2026-07-28 server: `server/discover`, then `rest`.
pub fn modern(
    rest: impl Fn(&Seen) -> Reply + Send + Sync + 'static,
) -> impl Fn(&Seen) -> Reply + Send + Sync + 'static {
    move |seen: &Seen| match seen.method() {
        "server/discover" => Reply::result(seen, discover_result()),
        _ => rest(seen),
    }
}

/// A handshake-era server that settles on the version the client offers and mints the
/// session `session` (none when `None`): -32601 to `server/discover`, 202 to
/// `notifications/initialized` and responses, 405 to GET and DELETE, then `rest`.
pub fn legacy(
    session: Option<&'static str>,
    rest: impl Fn(&Seen) -> Reply + Send + Sync + 'static,
) -> impl Fn(&Seen) -> Reply + Send + Sync + 'static {
    move |seen: &Seen| {
        let reply = if seen.http != "POST" {
            Reply::status(405)
        } else {
            match seen.method() {
                "server/discover" => Reply::error(200, seen, -32601),
                "initialize" => Reply::result(
                    seen,
                    json!({"protocolVersion": seen.params()["protocolVersion"],
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "fake-legacy", "version": "1"}}),
                ),
                // A notification, or the answer to a request of the server.
                "" | "notifications/initialized" => Reply::accepted(),
                _ => rest(seen),
            }
        };
        match session {
            Some(id) => Reply::Session(id, Box::new(reply)),
            None => reply,
        }
    }
}
