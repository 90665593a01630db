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
//! Redis is not trusted with more than it must be: every bus message and every task record
//! carries a MAC under the key the replicas share ([`ReplicaKey`](crate::bus::ReplicaKey),
//! derived from the session key), and a replica refuses (and logs) whatever does not verify.
//! `rediss://` URLs connect over TLS (rustls; the system's roots, or the CA of
//! [`RedisConfig::ca_certificate_pem`]), and `redis://user:password@host` signs in as an ACL
//! user. docs/deploying.md says what an attacker who can reach Redis can still do.
//!
//! Every key and the channel start with a prefix (`sake` by default) in braces, a Redis
//! Cluster hash tag: a server's keys live in one slot, so the task store's scripts may touch
//! several of them.

mod bus;
#[cfg(feature = "auth-proxy")]
mod proxy;
mod rate;
mod tasks;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use ::redis::aio::{ConnectionManager, ConnectionManagerConfig};

pub use self::bus::RedisBus;
#[cfg(feature = "auth-proxy")]
#[cfg_attr(docsrs, doc(cfg(feature = "auth-proxy")))]
pub use self::proxy::RedisProxyStore;
pub use self::rate::RedisRateStore;
pub use self::tasks::RedisTaskStore;

use crate::protocol::jsonrpc::clip_at;

/// How long a command may take before it counts as failed: a slow Redis delays a request by
/// at most this much, then it is answered (or the event dropped) without it.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(1);
/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// What a Redis URL (or the TLS settings beside it) could not be made into.
#[derive(Debug, thiserror::Error)]
#[error("invalid Redis URL: {0}")]
pub struct InvalidUrl(String);

/// Where Redis is and how to reach it, for [`RedisBus::from_config`] and
/// [`RedisTaskStore::from_config`]:
///
/// - the URL: `redis://[user:password@]host[:port][/db]`, or `rediss://…` for TLS (rustls,
///   verifying the server's certificate and name; `#insecure` is refused). With a user, the
///   replicas sign in as that ACL user (docs/deploying.md lists the commands and keys it
///   needs); with only a password, as `default`;
/// - the prefix of every key and of the channel (`sake` by default; the replicas of one
///   server share it, different servers sharing a Redis need different ones);
/// - for TLS, the CA that signed the server's certificate when it is not one of the system's
///   roots, and a client certificate when Redis asks for one (`tls-auth-clients yes`).
///
/// ```no_run
/// # fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use sake_runtime::redis::{RedisBus, RedisConfig, RedisTaskStore};
///
/// let redis = RedisConfig::new("rediss://sake:s3cret@redis.internal:6380/")
///     .ca_certificate_pem(std::fs::read("/etc/sake/redis-ca.pem")?);
/// let server = sake_runtime::Server::from_registry()
///     .session_key(std::env::var("SAKE_SESSION_KEY")?)
///     .event_bus(RedisBus::from_config(&redis)?)
///     .task_store(RedisTaskStore::from_config(&redis)?);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct RedisConfig {
    url: String,
    prefix: String,
    ca: Option<Vec<u8>>,
    client_certificate: Option<(Vec<u8>, Vec<u8>)>,
}

impl std::fmt::Debug for RedisConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisConfig")
            .field("url", &redacted(&self.url))
            .field("prefix", &self.prefix)
            .field("ca", &self.ca.is_some())
            .field("client_certificate", &self.client_certificate.is_some())
            .finish()
    }
}

/// A URL with its password (if any) replaced by `***`, for logs and `Debug`.
fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    match authority.rsplit_once('@') {
        Some((user, host)) => {
            let user = user.split_once(':').map_or(user, |(u, _)| u);
            format!("{scheme}://{user}:***@{host}{path}")
        }
        None => url.to_owned(),
    }
}

impl RedisConfig {
    /// Redis at `url` (`redis://` or `rediss://`), with the prefix `sake` and, for TLS, the
    /// system's roots.
    pub fn new(url: impl Into<String>) -> Self {
        RedisConfig {
            url: url.into(),
            prefix: "sake".into(),
            ca: None,
            client_certificate: None,
        }
    }

    /// The prefix of every key and of the channel (`sake` by default), in braces (a Redis
    /// Cluster hash tag).
    #[must_use]
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// Trusts the CA certificates in `pem` (PEM, one or more) for a `rediss://` server,
    /// instead of the system's roots: a Redis whose certificate your own CA signed.
    #[must_use]
    pub fn ca_certificate_pem(mut self, pem: impl Into<Vec<u8>>) -> Self {
        self.ca = Some(pem.into());
        self
    }

    /// Presents this certificate chain and private key (PEM) to a `rediss://` server that
    /// asks for a client certificate (mutual TLS).
    #[must_use]
    pub fn client_certificate_pem(
        mut self,
        certificate: impl Into<Vec<u8>>,
        key: impl Into<Vec<u8>>,
    ) -> Self {
        self.client_certificate = Some((certificate.into(), key.into()));
        self
    }

    /// The client this configuration describes.
    fn client(&self) -> Result<::redis::Client, InvalidUrl> {
        let tls = self.url.starts_with("rediss://");
        if self.url.contains('#') {
            return Err(InvalidUrl(format!(
                "{}: a fragment (such as #insecure) is not accepted; a rediss:// server's certificate is always verified",
                redacted(&self.url)
            )));
        }
        if tls {
            install_crypto_provider();
        }
        let invalid = |e: ::redis::RedisError| InvalidUrl(format!("{}: {e}", redacted(&self.url)));
        if self.ca.is_none() && self.client_certificate.is_none() {
            return ::redis::Client::open(self.url.as_str()).map_err(invalid);
        }
        if !tls {
            return Err(InvalidUrl(format!(
                "{}: a CA or client certificate is given, but the URL is not rediss:// (TLS)",
                redacted(&self.url)
            )));
        }
        ::redis::Client::build_with_tls(
            self.url.as_str(),
            ::redis::TlsCertificates {
                client_tls: self.client_certificate.as_ref().map(|(cert, key)| {
                    ::redis::ClientTlsConfig {
                        client_cert: cert.clone(),
                        client_key: key.clone(),
                    }
                }),
                root_cert: self.ca.clone(),
            },
        )
        .map_err(invalid)
    }
}

/// rustls needs a process-wide crypto provider: sake's is ring (no C compiler, as for
/// HTTPS). An application that installed one keeps it.
fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // Losing a race to another installer is fine: a provider is installed either way.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

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
    fn open(config: &RedisConfig, what: &'static str) -> Result<Link, InvalidUrl> {
        Ok(Link {
            client: config.client()?,
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

/// Refusals of what failed its MAC, logged at most once per [`REFUSALS_LOGGED_EVERY`] with
/// how many there were: whoever floods Redis with forgeries does not flood the log too.
#[derive(Debug)]
struct Refusals {
    what: &'static str,
    count: std::sync::atomic::AtomicU64,
    last: std::sync::Mutex<Option<std::time::Instant>>,
}

/// How often refusals are logged at most.
const REFUSALS_LOGGED_EVERY: Duration = Duration::from_secs(10);

impl Refusals {
    fn new(what: &'static str) -> Refusals {
        Refusals {
            what,
            count: std::sync::atomic::AtomicU64::new(0),
            last: std::sync::Mutex::new(None),
        }
    }

    /// Notes one refusal of `bytes` for `why`; logs it (with those not logged since) unless
    /// one was logged recently.
    fn refused(&self, why: &str, bytes: &[u8]) {
        let count = self.count.fetch_add(1, Ordering::Relaxed) + 1;
        let now = std::time::Instant::now();
        {
            let mut last = self
                .last
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if last.is_some_and(|t| now.duration_since(t) < REFUSALS_LOGGED_EVERY) {
                return;
            }
            *last = Some(now);
        }
        self.count.fetch_sub(count, Ordering::Relaxed);
        let sample = String::from_utf8_lossy(&bytes[..bytes.len().min(512)]);
        tracing::error!(
            what = self.what,
            refused = count,
            reason = why,
            sample = %clip_at(&sample, 120),
            "refused something read from Redis that is not authenticated with the replicas' key: forged or tampered by whoever can write to Redis, or written by a replica with another session key (further refusals are counted and logged at most every 10 s)"
        );
    }
}
