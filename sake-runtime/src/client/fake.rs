//! Fake servers for the client's unit tests: each answers from a closure and records exactly
//! what the client sent. HTTP runs on axum bound to 127.0.0.1:0; stdio runs on in-memory pipes.

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
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::Notify;

use super::stdio::Stdio;
use super::{Client, ClientBuilder, ClientError, EraCache, Transport};

/// The `_meta` every 2026-07-28 request of [`builder`]'s client carries (no handlers).
pub(crate) fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}
    })
}

/// The `_meta` of a 2026-07-28 `tools/call` or task method: [`meta`] declaring the tasks
/// extension too.
pub(crate) fn call_meta() -> Value {
    let mut m = meta();
    m["io.modelcontextprotocol/clientCapabilities"] =
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    m
}

/// A client named `t` 1, with a memory of its own and a 5 s limit per answer.
pub(crate) fn builder() -> ClientBuilder {
    Client::builder()
        .info("t", "1")
        .cache(EraCache::new())
        .timeout(Duration::from_secs(5))
}

/// One request the fake server received.
#[derive(Clone, Debug)]
pub(crate) struct Seen {
    /// `GET`, `POST`, `DELETE`.
    pub(crate) http: String,
    pub(crate) headers: HeaderMap,
    /// The JSON body (`Null` when empty or not JSON).
    pub(crate) body: Value,
}

impl Seen {
    /// The JSON-RPC method (`""` for responses and GETs).
    pub(crate) fn method(&self) -> &str {
        self.body
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub(crate) fn id(&self) -> Value {
        self.body.get("id").cloned().unwrap_or(Value::Null)
    }

    pub(crate) fn params(&self) -> Value {
        self.body.get("params").cloned().unwrap_or(Value::Null)
    }
}

/// What the fake answers.
pub(crate) enum Reply {
    /// A status, a content type and a body.
    Plain(u16, &'static str, String),
    /// An event stream: each step in turn, then the end.
    Events(Vec<Step>),
    /// Another reply, with an `Mcp-Session-Id`.
    Session(&'static str, Box<Reply>),
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
    pub(crate) fn result(seen: &Seen, result: Value) -> Reply {
        Reply::Plain(
            200,
            "application/json",
            json!({"jsonrpc": "2.0", "id": seen.id(), "result": result}).to_string(),
        )
    }

    /// A JSON-RPC error for `seen`'s id, with an HTTP status.
    pub(crate) fn error(status: u16, seen: &Seen, code: i64) -> Reply {
        Reply::Plain(
            status,
            "application/json",
            json!({"jsonrpc": "2.0", "id": seen.id(),
                "error": {"code": code, "message": format!("error {code}")}})
            .to_string(),
        )
    }

    pub(crate) fn status(status: u16) -> Reply {
        Reply::Plain(status, "text/plain", String::new())
    }
}

/// One step of an event stream.
pub(crate) enum Step {
    /// An event carrying this message.
    Message(Value),
    /// These bytes as they are (fields, comments, an unfinished event).
    Raw(String),
    /// Nothing until the gate is notified.
    Wait(Arc<Notify>),
}

type Handler = dyn Fn(&Seen) -> Reply + Send + Sync;

#[derive(Clone)]
struct Shared {
    seen: Arc<Mutex<Vec<Seen>>>,
    handler: Arc<Handler>,
}

/// A running fake HTTP server.
pub(crate) struct Fake {
    pub(crate) url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Fake {
    /// Every request so far.
    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// The POSTs so far.
    pub(crate) fn posts(&self) -> Vec<Seen> {
        self.seen()
            .into_iter()
            .filter(|s| s.http == "POST")
            .collect()
    }

    /// The JSON-RPC methods of the POSTs so far.
    pub(crate) fn methods(&self) -> Vec<String> {
        self.posts().iter().map(|s| s.method().to_owned()).collect()
    }

    /// The last POST of `method`.
    pub(crate) fn last(&self, method: &str) -> Seen {
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
    pub(crate) async fn wait_for(&self, method: &str) {
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
                    let chunk = Bytes::from(format!("data: {m}\n\n"));
                    return Some((Ok::<_, Infallible>(chunk), steps));
                }
                Step::Raw(text) => return Some((Ok(Bytes::from(text)), steps)),
                Step::Wait(gate) => gate.notified().await,
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
    while let Reply::Session(id, inner) = reply {
        builder = builder.header("mcp-session-id", id);
        reply = *inner;
    }
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
        Reply::Session(..) => builder.body(Body::empty()),
    };
    built.unwrap_or_default()
}

/// Starts a fake HTTP server answering with `handler`.
pub(crate) async fn fake(handler: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> Fake {
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

/// A 2026-07-28 `server/discover` result, fresh for an hour (what the client remembers).
pub(crate) fn discover_result() -> Value {
    json!({"resultType": "complete", "supportedVersions": ["2026-07-28", "2025-11-25"],
        "capabilities": {"tools": {}}, "ttlMs": 3600000, "cacheScope": "private",
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "fake", "version": "1"}}})
}

/// A 2026-07-28 server: `server/discover`, then `rest`.
pub(crate) fn modern(
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
pub(crate) fn legacy(
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
                "" | "notifications/initialized" => Reply::Plain(202, "text/plain", String::new()),
                _ => rest(seen),
            }
        };
        match session {
            Some(id) => Reply::Session(id, Box::new(reply)),
            None => reply,
        }
    }
}

/// A fake stdio server on in-memory pipes.
pub(crate) struct FakeStdio {
    seen: Arc<Mutex<Vec<Value>>>,
}

impl FakeStdio {
    /// Every message the client wrote so far.
    pub(crate) fn seen(&self) -> Vec<Value> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }

    /// The methods of the messages so far.
    pub(crate) fn methods(&self) -> Vec<String> {
        self.seen()
            .iter()
            .map(|m| m["method"].as_str().unwrap_or("").to_owned())
            .collect()
    }

    /// Waits (at most 5 s) until `method` was written; returns that message.
    pub(crate) async fn wait_for(&self, method: &str) -> Value {
        for _ in 0..500 {
            if let Some(m) = self.seen().into_iter().find(|m| m["method"] == method) {
                return m;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("{method} never came: {:?}", self.methods());
    }
}

/// Connects `builder`'s client to a stdio server that answers each message with the lines
/// `handler` returns (none: no answer).
pub(crate) async fn stdio(
    builder: ClientBuilder,
    handler: impl Fn(&Value) -> Vec<Value> + Send + Sync + 'static,
) -> (Result<Client, ClientError>, FakeStdio) {
    let (client_end, server_end) = tokio::io::duplex(1 << 16);
    let (from_server, to_server) = tokio::io::split(client_end);
    let (server_in, mut server_out) = tokio::io::split(server_end);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    tokio::spawn(async move {
        let mut lines = BufReader::new(server_in).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let msg: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            if let Ok(mut s) = log.lock() {
                s.push(msg.clone());
            }
            for answer in handler(&msg) {
                let mut out = answer.to_string().into_bytes();
                out.push(b'\n');
                if server_out.write_all(&out).await.is_err() {
                    return;
                }
            }
        }
    });
    let core = builder.core();
    let key = format!("stdio:fake-{}", NEXT.fetch_add(1, Ordering::Relaxed));
    let stdio = Stdio::over(
        key.clone(),
        Some(from_server),
        Some(to_server),
        None,
        Arc::clone(&core),
    );
    let client = builder.start(core, Transport::Stdio(stdio), key).await;
    (client, FakeStdio { seen })
}

static NEXT: AtomicUsize = AtomicUsize::new(1);

/// A JSON-RPC result line for `msg`.
pub(crate) fn result_for(msg: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": msg["id"], "result": result})
}
