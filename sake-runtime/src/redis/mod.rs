//! Replicas sharing through Redis (feature `redis`): [`RedisBus`], the [`EventBus`](crate::bus::EventBus) that
//! carries list changes, resource updates, task changes and ended sessions between replicas
//! over Redis pub/sub, [`RedisTaskStore`], the [`TaskStore`](crate::tasks::TaskStore) any
//! replica can serve any task from, and (with `auth-proxy`) `RedisProxyStore`, the
//! authorization proxy's store, so that any replica finishes any sign-in.
//!
//! Both connect lazily and never stop the server: with Redis down at start, a replica serves
//! what it can alone (its own listeners hear its own events; task calls fail with -32603),
//! logs it once, and catches up by itself when Redis is back. docs/deploying.md says what
//! each fault costs.
//!
//! Every key and the channel start with a prefix (`sake` by default) in braces, a Redis
//! Cluster hash tag: a server's keys live in one slot, so the task store's scripts may touch
//! several of them.

mod bus;
#[cfg(feature = "auth-proxy")]
mod proxy;
mod tasks;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use ::redis::aio::{ConnectionManager, ConnectionManagerConfig};

pub use self::bus::RedisBus;
#[cfg(feature = "auth-proxy")]
#[cfg_attr(docsrs, doc(cfg(feature = "auth-proxy")))]
pub use self::proxy::RedisProxyStore;
pub use self::tasks::RedisTaskStore;

/// How long a command may take before it counts as failed: a slow Redis delays a request by
/// at most this much, then it is answered (or the event dropped) without it.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(1);
/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// What a Redis URL could not be made into.
#[derive(Debug, thiserror::Error)]
#[error("invalid Redis URL: {0}")]
pub struct InvalidUrl(String);

/// A lazily connected, self-reconnecting connection, and whether Redis was last seen up (to
/// log a fault once, and its end once).
#[derive(Debug)]
struct Link {
    client: ::redis::Client,
    conn: tokio::sync::OnceCell<ConnectionManager>,
    down: AtomicBool,
    what: &'static str,
}

impl Link {
    fn open(url: &str, what: &'static str) -> Result<Link, InvalidUrl> {
        let client = ::redis::Client::open(url).map_err(|e| InvalidUrl(e.to_string()))?;
        Ok(Link {
            client,
            conn: tokio::sync::OnceCell::new(),
            down: AtomicBool::new(false),
            what,
        })
    }

    /// The connection (made on first use; it reconnects by itself after a failure).
    async fn conn(&self) -> Result<ConnectionManager, ::redis::RedisError> {
        self.conn
            .get_or_try_init(|| async {
                let config = ConnectionManagerConfig::new()
                    .set_response_timeout(Some(RESPONSE_TIMEOUT))
                    .set_connection_timeout(Some(CONNECT_TIMEOUT))
                    .set_number_of_retries(2)
                    .set_max_delay(Duration::from_millis(500));
                ConnectionManager::new_lazy_with_config(self.client.clone(), config)
            })
            .await
            .cloned()
    }

    /// Runs `f` on the connection, noting (and logging once) when Redis fails or recovers.
    async fn run<T, F, Fut>(&self, f: F) -> Result<T, ::redis::RedisError>
    where
        F: FnOnce(ConnectionManager) -> Fut,
        Fut: std::future::Future<Output = Result<T, ::redis::RedisError>>,
    {
        let result = match self.conn().await {
            Ok(conn) => f(conn).await,
            Err(e) => Err(e),
        };
        match &result {
            Ok(_) => self.up(),
            Err(e) => self.failed(e),
        }
        result
    }

    fn up(&self) {
        if self.down.swap(false, Ordering::Relaxed) {
            tracing::info!(what = self.what, "Redis is reachable again");
        }
    }

    fn failed(&self, e: &::redis::RedisError) {
        if !self.down.swap(true, Ordering::Relaxed) {
            tracing::warn!(what = self.what, error = %e, "Redis is unreachable or too slow");
        }
    }
}

/// A key prefix as a Cluster hash tag: `{name}`.
fn tag(prefix: &str) -> String {
    format!("{{{prefix}}}")
}
