//! Policies on every call (docs/middleware.md): a rate limit, a timeout, a cache and an audit
//! trail, each a tower layer over MCP calls. `cargo run --example middleware --features redis`,
//! then point an MCP client at http://127.0.0.1:3000/mcp (`PORT` changes the port).
//!
//! - `limited`: at most 3 calls per 10 s per client address; the 4th is refused (429 with
//!   `Retry-After` on 2026-07-28). With `REDIS_URL`, the replicas on that Redis share the
//!   budget.
//! - `slow {"seconds": n}`: sleeps n seconds, then counts itself done (`slow_done` says how
//!   often); cut off after 1 s, so `slow(5)` is refused and never counted.
//! - `counter`: read-only, cached 60 s: two calls within a minute return the same count.
//! - Every call is audited: one JSON object per line on stderr, `{"audit": {...}}`.
//!
//! `RUST_LOG` sets what else is logged (default `info`, the audit lines aside).

use std::io::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use sake::middleware::{Audit, AuditRecord, Cache, RateLimit, Timeout};
use sake::prelude::*;
use schemars::JsonSchema;
use serde::Serialize;

/// `{"ok": true}`.
#[derive(Serialize, JsonSchema)]
struct Fine {
    /// Always true.
    ok: bool,
}

/// Answers at once; at most 3 calls per 10 s per client address.
#[tool]
fn limited() -> Fine {
    Fine { ok: true }
}

static SLOW_DONE: AtomicU64 = AtomicU64::new(0);

/// Sleeps `seconds`, then counts itself done; cut off after 1 s.
#[tool]
async fn slow(
    /// How long to sleep.
    seconds: f64,
) -> Result<String, String> {
    if !(0.0..=3600.0).contains(&seconds) {
        return Err("seconds must be between 0 and 3600".into());
    }
    tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
    SLOW_DONE.fetch_add(1, Ordering::SeqCst);
    Ok(format!("slept {seconds} s"))
}

/// How many `slow` calls finished.
#[derive(Serialize, JsonSchema)]
struct Done {
    /// Finished `slow` calls.
    done: u64,
}

/// How many `slow` calls finished.
#[tool]
fn slow_done() -> Done {
    Done {
        done: SLOW_DONE.load(Ordering::SeqCst),
    }
}

static COUNTED: AtomicU64 = AtomicU64::new(0);

/// How often the body of `counter` ran.
#[derive(Serialize, JsonSchema)]
struct Count {
    /// Runs of the body.
    count: u64,
}

/// Counts how often its body runs; read-only, so its results are cached for 60 s.
#[tool(annotations(read_only))]
fn counter() -> Count {
    Count {
        count: COUNTED.fetch_add(1, Ordering::SeqCst) + 1,
    }
}

/// One audit record as a line on stderr: `{"audit": {...}}`.
fn audit_line(record: &AuditRecord) {
    let line = serde_json::json!({ "audit": record });
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{line}");
}

/// The server, its rate limit's buckets in `redis` when given.
fn server(redis: Option<&str>) -> Result<Server, sake::Error> {
    let mut limit = RateLimit::new(3, Duration::from_secs(10))
        .per_client()
        .name("limited");
    if let Some(url) = redis {
        let store = sake::redis::RedisRateStore::new(url)
            .map_err(|e| sake::Error::Config(e.to_string()))?;
        limit = limit.store(store);
    }
    Ok(Server::from_registry()
        .name("middleware")
        .version(env!("CARGO_PKG_VERSION"))
        // Outermost: the audit sees every call, refusals included.
        .layer(Audit::new().sink(audit_line))
        .layer_for("limited", limit)
        .layer_for("slow", Timeout::new(Duration::from_secs(1)))
        .layer_for("counter", Cache::new(Duration::from_secs(60)).shared()))
}

#[tokio::main]
async fn main() -> Result<(), sake::Error> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let port = std::env::var("PORT").unwrap_or_else(|_| "3000".to_owned());
    let redis = std::env::var("REDIS_URL").ok().filter(|u| !u.is_empty());
    server(redis.as_deref())?
        .serve_http(format!("127.0.0.1:{port}"))
        .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use sake::testing::TestClient;
    use serde_json::json;

    #[tokio::test]
    async fn counter_is_cached_and_limited_is_limited() {
        let client = TestClient::new(server(None).unwrap()).unwrap();
        let first = client.call_tool("counter", json!({})).await.unwrap();
        let second = client.call_tool("counter", json!({})).await.unwrap();
        assert_eq!(first["structuredContent"], second["structuredContent"]);
        for _ in 0..3 {
            let ok = client.call_tool("limited", json!({})).await.unwrap();
            assert_eq!(ok["structuredContent"], json!({"ok": true}));
        }
        let refused = client.call_tool("limited", json!({})).await.unwrap_err();
        assert_eq!(refused.code, -32000);
        assert!(
            refused
                .message
                .starts_with("Rate limit exceeded: `limited` allows 3 calls per 10 s; retry in")
        );
    }
}
