//! Fake servers for the client's unit tests: each answers from a closure and records exactly
//! what the client sent. HTTP is the harness's fake (tests/src/fake.rs, included here by path:
//! one fake server for the client's unit and integration tests); stdio runs on in-memory pipes,
//! through the crate's own `Stdio` transport.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::stdio::Stdio;
use super::{Client, ClientBuilder, ClientError, EraCache, Transport};

#[allow(dead_code)] // Not every part of the fake is used by the unit tests.
#[path = "../../../tests/src/fake.rs"]
mod http_fake;

pub(crate) use http_fake::{Fake, Reply, Seen, Step, discover_result, fake, legacy, meta, modern};

/// The `_meta` of a 2026-07-28 `tools/call` or task method: [`meta`] declaring the tasks
/// extension too.
pub(crate) fn call_meta() -> Value {
    let mut m = meta();
    m["io.modelcontextprotocol/clientCapabilities"] =
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    m
}

/// A client named `t` 1 (so that its requests carry [`meta`]), with a memory of its own and
/// a 5 s limit per answer.
pub(crate) fn builder() -> ClientBuilder {
    Client::builder()
        .info("t", "1")
        .cache(EraCache::new())
        .timeout(Duration::from_secs(5))
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
