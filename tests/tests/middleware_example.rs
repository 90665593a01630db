//! `examples/middleware.rs` end to end, over real sockets: its rate limit (3 calls per 10 s
//! per client address; 429 with `Retry-After`) shared by two replicas through a real
//! `redis-server`, its timeout (`slow(5)` refused within 2 s and never counted), its cache
//! (`counter` twice, one count), and its audit lines on stderr. Client addresses are distinct
//! loopback addresses (127.0.0.1, 127.0.0.2).

use std::process::Stdio;
use std::time::{Duration, Instant};

use sake_tests::redis::Redis;
use sake_tests::{Req, example_binary_with, raw};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// The example serving HTTP on a free port, its stderr's lines collected; killed when dropped.
struct Example {
    _child: tokio::process::Child,
    port: u16,
    stderr: mpsc::UnboundedReceiver<String>,
}

impl Example {
    async fn start(redis: Option<&str>) -> Example {
        let port = raw::free_port();
        let mut command =
            tokio::process::Command::new(example_binary_with("middleware", "redis compat"));
        command
            .env("PORT", port.to_string())
            .env("RUST_LOG", "warn")
            .env("SAKE_QUIET", "1")
            .env_remove("REDIS_URL")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        if let Some(url) = redis {
            command.env("REDIS_URL", url);
        }
        let mut child = command.spawn().expect("spawning the middleware example");
        let (tx, stderr) = mpsc::unbounded_channel();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                let _ = tx.send(line);
            }
        });
        raw::wait_until_listening(port, "the middleware example").await;
        Example {
            _child: child,
            port,
            stderr,
        }
    }

    /// Calls `tool` from the loopback address `from`: status, headers, body.
    async fn call(&self, from: [u8; 4], id: i64, tool: &str, arguments: Value) -> Answer {
        let req = Req::modern(
            id,
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
        )
        .header("connection", "close");
        let port = std::net::SocketAddr::from(([127, 0, 0, 1], self.port));
        let mut tcp = raw::connect_from(port, from.into()).await;
        tcp.write_all(&req.to_http1()).await.unwrap();
        let reply = raw::parse(&raw::read_to_close(&mut tcp, Duration::from_secs(20)).await);
        Answer {
            status: reply.status,
            body: reply.json(),
            reply,
        }
    }

    /// The audit records written so far.
    fn audit(&mut self) -> Vec<Value> {
        let mut out = Vec::new();
        while let Ok(line) = self.stderr.try_recv() {
            if let Ok(v) = serde_json::from_str::<Value>(&line)
                && let Some(record) = v.get("audit")
            {
                out.push(record.clone());
            }
        }
        out
    }
}

struct Answer {
    status: u16,
    body: Value,
    reply: raw::RawReply,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.reply.header(name)
    }

    fn structured(&self) -> &Value {
        &self.body["result"]["structuredContent"]
    }
}

const LOCAL: [u8; 4] = [127, 0, 0, 1];
const OTHER: [u8; 4] = [127, 0, 0, 2];

#[tokio::test]
async fn two_replicas_on_one_redis_share_the_rate_limit_and_audit_every_call() {
    let redis = Redis::start();
    let mut a = Example::start(Some(&redis.url())).await;
    let b = Example::start(Some(&redis.url())).await;
    // Three calls from one address, spread over both replicas.
    for (id, replica) in [(1, &a), (2, &b), (3, &a)] {
        let r = replica.call(LOCAL, id, "limited", json!({})).await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.structured(), &json!({"ok": true}));
    }
    // The fourth, on either replica, is refused.
    let refused = b.call(LOCAL, 4, "limited", json!({})).await;
    assert_eq!(refused.status, 429);
    assert_eq!(refused.header("retry-after"), Some("4"));
    assert_eq!(
        refused.body,
        json!({"jsonrpc": "2.0", "id": 4, "error": {
            "code": -32000,
            "message": "Rate limit exceeded: `limited` allows 3 calls per 10 s; retry in 4 s",
            "data": {"retryAfter": 4, "limit": 3, "periodSeconds": 10.0},
        }})
    );
    assert_eq!(a.call(LOCAL, 5, "limited", json!({})).await.status, 429);
    // Another address is served.
    let other = a.call(OTHER, 6, "limited", json!({})).await;
    assert_eq!(other.status, 200);
    // Replica A audited its four calls: who, what, the outcome, the duration.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let records = a.audit();
    let summary: Vec<(String, String, String)> = records
        .iter()
        .map(|r| {
            assert!(r["durationMs"].as_f64().unwrap() >= 0.0, "{r}");
            (
                r["name"].as_str().unwrap().to_owned(),
                r["caller"].as_str().unwrap().to_owned(),
                r["outcome"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let row = |c: &str, o: &str| ("limited".to_owned(), c.to_owned(), o.to_owned());
    assert_eq!(
        summary,
        [
            row("127.0.0.1", "ok"),
            row("127.0.0.1", "ok"),
            row("127.0.0.1", "error"),
            row("127.0.0.2", "ok"),
        ]
    );
    assert_eq!(
        records[2]["error"],
        "Rate limit exceeded: `limited` allows 3 calls per 10 s; retry in 4 s"
    );
}

#[tokio::test]
async fn slow_is_cut_off_after_a_second_and_counter_is_cached() {
    let mut ex = Example::start(None).await;
    let started = Instant::now();
    let refused = ex.call(LOCAL, 1, "slow", json!({"seconds": 5})).await;
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(refused.status, 200);
    assert_eq!(
        refused.body["error"],
        json!({"code": -32603,
            "message": "Request timed out: `slow` did not finish within its timeout of 1 s and was cancelled",
            "data": {"timeoutSeconds": 1.0}})
    );
    let quick = ex.call(LOCAL, 2, "slow", json!({"seconds": 0.01})).await;
    assert_eq!(quick.status, 200);
    tokio::time::sleep(Duration::from_secs(5)).await;
    // Only the quick call finished: the cut-off one never counted.
    let done = ex.call(LOCAL, 3, "slow_done", json!({})).await;
    assert_eq!(done.structured(), &json!({"done": 1}));
    let first = ex.call(LOCAL, 4, "counter", json!({})).await;
    let second = ex.call(OTHER, 5, "counter", json!({})).await;
    assert_eq!(first.structured(), &json!({"count": 1}));
    assert_eq!(second.structured(), &json!({"count": 1}));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let outcomes: Vec<Value> = ex
        .audit()
        .iter()
        .map(|r| json!([r["name"], r["outcome"]]))
        .collect();
    assert_eq!(
        outcomes,
        [
            json!(["slow", "error"]),
            json!(["slow", "ok"]),
            json!(["slow_done", "ok"]),
            json!(["counter", "ok"]),
            json!(["counter", "ok"]),
        ]
    );
}
