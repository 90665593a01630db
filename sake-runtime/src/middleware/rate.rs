//! [`RateLimit`]: a token bucket per key, in memory or shared by replicas (a [`RateStore`]).

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant};

use sha2::Digest as _;
use tower::{Layer, Service};

use super::{BoxError, Boxed, McpRequest, McpResponse, SharedService, seconds};
use crate::handler::BoxFuture;
use crate::protocol::jsonrpc::{RpcError, code};

/// Why a store could not take from a bucket (Redis unreachable, …).
#[derive(Debug, thiserror::Error)]
#[error("rate limit store: {0}")]
pub struct RateStoreError(pub String);

/// Where the buckets live: [`MemoryRateStore`] (the default), or one the replicas share
/// (`sake::redis::RedisRateStore`, feature `redis`).
pub trait RateStore: Send + Sync + 'static {
    /// Takes one token from the bucket `key` holding at most `capacity` tokens and refilled
    /// with `capacity` every `period`: `Ok(None)` when taken, `Ok(Some(wait))` when empty
    /// (a token is back after `wait`). Taking is atomic: replicas sharing the store share
    /// the budget.
    fn take(
        &self,
        key: &str,
        capacity: u32,
        period: Duration,
    ) -> BoxFuture<Result<Option<Duration>, RateStoreError>>;
}

/// Token buckets in this process, bounded in keys (each key at most 64 bytes: a longer one
/// is kept as its digest). A bucket that refilled is forgotten; when every key is in use, a
/// new key makes room by forgetting the quarter of the buckets touched longest ago (they
/// start full again), so a flood of made-up keys never refuses a newcomer.
#[derive(Debug)]
pub struct MemoryRateStore {
    buckets: Mutex<HashMap<String, Bucket>>,
    max_keys: usize,
}

#[derive(Clone, Copy, Debug)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Default for MemoryRateStore {
    fn default() -> Self {
        MemoryRateStore::new(10_000)
    }
}

impl MemoryRateStore {
    /// A store of at most `max_keys` buckets (at most ~200 bytes each).
    pub fn new(max_keys: usize) -> MemoryRateStore {
        MemoryRateStore {
            buckets: Mutex::new(HashMap::new()),
            max_keys: max_keys.max(1),
        }
    }

    fn take_now(
        &self,
        key: &str,
        capacity: u32,
        period: Duration,
        now: Instant,
    ) -> Option<Duration> {
        let capacity = f64::from(capacity.max(1));
        let per_token = period.as_secs_f64() / capacity;
        let refill = |b: &Bucket| {
            (b.tokens + now.saturating_duration_since(b.at).as_secs_f64() / per_token).min(capacity)
        };
        let mut buckets = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
        if !buckets.contains_key(key) && buckets.len() >= self.max_keys {
            // Forget the buckets that refilled (as good as absent); still full, the quarter
            // touched longest ago: one pass makes room for many newcomers, so a flood of
            // made-up keys costs little per key and is never a reason to refuse one.
            buckets.retain(|_, b| refill(b) < capacity);
            if buckets.len() >= self.max_keys {
                let mut touched: Vec<Instant> = buckets.values().map(|b| b.at).collect();
                let cut = (touched.len() / 4).max(1);
                let newest_dropped = *touched.select_nth_unstable(cut - 1).1;
                buckets.retain(|_, b| b.at > newest_dropped);
            }
        }
        let bucket = buckets.entry(key.to_owned()).or_insert(Bucket {
            tokens: capacity,
            at: now,
        });
        let tokens = refill(bucket);
        bucket.at = now;
        if tokens >= 1.0 {
            bucket.tokens = tokens - 1.0;
            None
        } else {
            bucket.tokens = tokens;
            Some(Duration::from_secs_f64((1.0 - tokens) * per_token))
        }
    }
}

#[cfg(test)]
impl MemoryRateStore {
    /// The keys it holds, sorted.
    fn held(&self) -> Vec<String> {
        let buckets = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
        let mut keys: Vec<String> = buckets.keys().cloned().collect();
        keys.sort();
        keys
    }
}

impl RateStore for MemoryRateStore {
    fn take(
        &self,
        key: &str,
        capacity: u32,
        period: Duration,
    ) -> BoxFuture<Result<Option<Duration>, RateStoreError>> {
        let wait = self.take_now(key, capacity, period, Instant::now());
        Box::pin(async move { Ok(wait) })
    }
}

/// What a rate limit counts calls by.
#[derive(Clone)]
enum Keyed {
    /// The caller's name, else the client's address, else all anonymous callers together.
    Caller,
    Principal,
    Client,
    Function,
    By(Arc<dyn Fn(&McpRequest) -> String + Send + Sync>),
}

impl fmt::Debug for Keyed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Keyed::Caller => "caller",
            Keyed::Principal => "principal",
            Keyed::Client => "client",
            Keyed::Function => "function",
            Keyed::By(_) => "by",
        })
    }
}

/// At most `calls` calls per `period` per key (a token bucket: a burst of `calls`, then one
/// more every `period / calls`), per function it is applied to.
///
/// The refusal is -32000 "Rate limit exceeded: … retry in N s", with `data`
/// `{"retryAfter": N, "limit": calls, "periodSeconds": …}`; on 2026-07-28 over HTTP, where a
/// call is its own HTTP exchange, HTTP 429 with `Retry-After: N`. A handshake session gets the
/// JSON-RPC error in a 200 response, as every error of a session.
///
/// A continuation of an input round (the same call again, with the client's answers) is not
/// counted again: a call that asks the user twice is one call. Nor is a resumed task.
///
/// Keys: the caller (the default: the caller's name, else the client's network, else every
/// anonymous caller together), [`per_principal`](Self::per_principal),
/// [`per_client`](Self::per_client) (the client's network,
/// [`McpRequest::client_network`]), [`per_function`](Self::per_function)
/// (one budget for everyone), or [`by`](Self::by) any function of the request. Applied to
/// several functions, each has its own buckets (the function's name is part of every key)
/// unless [`shared_by_functions`](Self::shared_by_functions).
#[derive(Clone)]
pub struct RateLimit {
    calls: u32,
    period: Duration,
    keyed: Keyed,
    per_function: bool,
    name: Option<String>,
    store: Arc<dyn RateStore>,
    fail_open: bool,
}

impl fmt::Debug for RateLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimit")
            .field("calls", &self.calls)
            .field("period", &self.period)
            .field("keyed", &self.keyed)
            .finish_non_exhaustive()
    }
}

impl RateLimit {
    /// At most `calls` per `period` per caller, in memory.
    pub fn new(calls: u32, period: Duration) -> RateLimit {
        RateLimit {
            calls: calls.max(1),
            period: period.max(Duration::from_millis(1)),
            keyed: Keyed::Caller,
            per_function: true,
            name: None,
            store: Arc::new(MemoryRateStore::default()),
            fail_open: true,
        }
    }

    /// Counts per signed-in caller (anonymous callers share one budget).
    #[must_use]
    pub fn per_principal(mut self) -> Self {
        self.keyed = Keyed::Principal;
        self
    }

    /// Counts per client network: an IPv4 address, or the `Limits::ipv6_client_prefix` of an
    /// IPv6 one, as the server's quotas count clients (a stream transport has none: one
    /// budget).
    #[must_use]
    pub fn per_client(mut self) -> Self {
        self.keyed = Keyed::Client;
        self
    }

    /// One budget for every caller of the function.
    #[must_use]
    pub fn per_function(mut self) -> Self {
        self.keyed = Keyed::Function;
        self
    }

    /// Counts by what `key` makes of the request.
    #[must_use]
    pub fn by(mut self, key: impl Fn(&McpRequest) -> String + Send + Sync + 'static) -> Self {
        self.keyed = Keyed::By(Arc::new(key));
        self
    }

    /// The functions it is applied to share one budget per key.
    #[must_use]
    pub fn shared_by_functions(mut self) -> Self {
        self.per_function = false;
        self
    }

    /// Names the limit in its store's keys (default: from `calls`, `period` and the key):
    /// two limits with the same name share their buckets — as the replicas of a server must.
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Keeps the buckets in `store` (a store the replicas share makes one budget for all).
    #[must_use]
    pub fn store(mut self, store: impl RateStore) -> Self {
        self.store = Arc::new(store);
        self
    }

    /// When the store fails (Redis unreachable): serve the call (`true`, the default: a
    /// store fault never stops the server; logged) or refuse it with -32603.
    #[must_use]
    pub fn fail_open(mut self, open: bool) -> Self {
        self.fail_open = open;
        self
    }

    /// The limit's name in its store's keys.
    fn store_name(&self) -> Arc<str> {
        match &self.name {
            Some(name) => Arc::from(name.as_str()),
            None => Arc::from(format!(
                "{}/{}ms/{:?}",
                self.calls,
                self.period.as_millis(),
                self.keyed
            )),
        }
    }

    fn key(&self, name: &str, req: &McpRequest) -> String {
        let who = match &self.keyed {
            Keyed::Caller => match (req.principal(), req.client_network()) {
                (Some(p), _) => format!("p:{p}"),
                (None, Some(ip)) => format!("a:{ip}"),
                (None, None) => "anonymous".to_owned(),
            },
            Keyed::Principal => req
                .principal()
                .map_or_else(|| "anonymous".to_owned(), |p| format!("p:{p}")),
            Keyed::Client => req
                .client_network()
                .map_or_else(|| "local".to_owned(), |ip| format!("a:{ip}")),
            Keyed::Function => String::new(),
            Keyed::By(f) => format!("k:{}", f(req)),
        };
        let function = if self.per_function {
            req.function()
        } else {
            ""
        };
        let key = format!("{name}\n{function}\n{who}");
        if key.len() <= 64 && key.bytes().all(|b| b.is_ascii_graphic() || b == b'\n') {
            key.replace('\n', "|")
        } else {
            let digest = sha2::Sha256::digest(key.as_bytes());
            format!("d:{}", hex(&digest))
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// -32000 "Rate limit exceeded" (HTTP 429 with `Retry-After` where the call is its own HTTP
/// exchange).
pub(crate) fn rate_limited(name: &str, calls: u32, period: Duration, wait: Duration) -> RpcError {
    let secs = seconds(wait).max(1);
    RpcError::new(
        code::TRANSPORT_REFUSED,
        format!(
            "Rate limit exceeded: `{name}` allows {calls} calls per {} s; retry in {secs} s",
            period.as_secs_f64()
        ),
    )
    .with_data(serde_json::json!({
        "retryAfter": secs,
        "limit": calls,
        "periodSeconds": period.as_secs_f64(),
    }))
    .with_status(429)
    .with_retry_after(secs)
}

impl Layer<Boxed> for RateLimit {
    type Service = RateLimitService;
    fn layer(&self, inner: Boxed) -> RateLimitService {
        RateLimitService {
            inner: SharedService::new(inner),
            name: self.store_name(),
            limit: self.clone(),
        }
    }
}

/// The service of a [`RateLimit`] layer.
pub struct RateLimitService {
    inner: SharedService,
    /// The limit's name in its store's keys, made once.
    name: Arc<str>,
    limit: RateLimit,
}

impl Service<McpRequest> for RateLimitService {
    type Response = McpResponse;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<McpResponse, BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut TaskContext<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: McpRequest) -> Self::Future {
        let inner = self.inner.clone();
        let limit = self.limit.clone();
        let name = self.name.clone();
        Box::pin(async move {
            if !req.is_continuation() {
                let key = limit.key(&name, &req);
                match limit.store.take(&key, limit.calls, limit.period).await {
                    Ok(None) => {}
                    Ok(Some(wait)) => {
                        tracing::info!(name = %req.name(), retry_after_s = seconds(wait).max(1), "a call was refused by a rate limit");
                        return Ok(McpResponse::error(rate_limited(
                            req.label(),
                            limit.calls,
                            limit.period,
                            wait,
                        )));
                    }
                    Err(e) if limit.fail_open => {
                        tracing::warn!(error = %e, "the rate limit's store failed; the call is served uncounted");
                    }
                    Err(e) => {
                        tracing::error!(error = %e, "the rate limit's store failed; the call is refused");
                        return Ok(McpResponse::error(RpcError::internal(format!(
                            "Internal error: the rate limit of `{}` cannot be checked now; retry later",
                            req.label()
                        ))));
                    }
                }
            }
            inner.call(req).await
        })
    }
}

impl std::fmt::Debug for RateLimitService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RateLimitService")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_refills_at_its_rate_and_keys_are_bounded() {
        let store = MemoryRateStore::new(2);
        let t0 = Instant::now();
        let p = Duration::from_secs(10);
        for _ in 0..3 {
            assert_eq!(store.take_now("a", 3, p, t0), None);
        }
        let wait = store.take_now("a", 3, p, t0).unwrap();
        assert!((wait.as_secs_f64() - 10.0 / 3.0).abs() < 1e-6, "{wait:?}");
        // One token back after a third of the period.
        let later = t0 + Duration::from_millis(3334);
        assert_eq!(store.take_now("a", 3, p, later), None);
        assert!(store.take_now("a", 3, p, later).is_some());
        // Another key has its own budget.
        assert_eq!(store.take_now("b", 3, p, later), None);
        assert_eq!(store.held(), vec!["a", "b"]);
        // Full: the buckets that refilled are forgotten first (here both), and `c` is served.
        let refilled = later + Duration::from_secs(11);
        assert_eq!(store.take_now("c", 3, p, refilled), None);
        assert_eq!(store.held(), vec!["c"]);
    }

    #[test]
    fn a_full_store_forgets_the_buckets_touched_longest_ago_and_refuses_no_newcomer() {
        let store = MemoryRateStore::new(2);
        let t0 = Instant::now();
        let p = Duration::from_secs(10);
        for _ in 0..3 {
            assert_eq!(store.take_now("a", 3, p, t0), None);
        }
        assert!(store.take_now("a", 3, p, t0).is_some());
        let s1 = t0 + Duration::from_secs(1);
        assert_eq!(store.take_now("b", 3, p, s1), None);
        // Full, and nothing refilled: `c` is served, `a` (touched longest ago) forgotten.
        let s2 = t0 + Duration::from_secs(2);
        assert_eq!(store.take_now("c", 3, p, s2), None);
        assert_eq!(store.held(), vec!["b", "c"]);
        // `b` and `c` kept their state: `c` has two calls left, then waits.
        assert_eq!(store.take_now("c", 3, p, s2), None);
        assert_eq!(store.take_now("c", 3, p, s2), None);
        let wait = store.take_now("c", 3, p, s2).unwrap();
        assert!((wait.as_secs_f64() - 10.0 / 3.0).abs() < 1e-6, "{wait:?}");
        // A flood of 1,000 new keys is served, and the store stays at its bound.
        let big = MemoryRateStore::new(100);
        for i in 0..1_000u32 {
            let at = t0 + Duration::from_millis(u64::from(i));
            assert_eq!(big.take_now(&format!("k{i}"), 3, p, at), None, "key {i}");
            assert!(big.held().len() <= 100);
        }
    }
}
