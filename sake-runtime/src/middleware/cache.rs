//! [`Cache`]: read-only tools' results, kept for a while.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant};

use sha2::Digest as _;
use tower::{Layer, Service};

use super::{BoxError, Boxed, McpRequest, McpResponse, SharedService};

/// Answers a call of a read-only tool (`read_only_hint = true`) with the result of the same
/// call made within `ttl`, instead of running the function again.
///
/// The key is the tool, its arguments as sent, and the caller (their name, else their
/// address): one caller never sees another's result, unless the layer is
/// [`shared`](Self::shared) (results that are the same for everyone). What is kept: results
/// only — never an error, a tool's error result, or an input round — and never a call that
/// continues an input round or runs as a task. Bounded in bytes (the results as JSON, 8 MiB
/// by default) and in entries (at most 4096); the oldest go first. Calls of anything but a
/// read-only tool pass through untouched.
#[derive(Clone)]
pub struct Cache {
    inner: Arc<Store>,
    shared: bool,
}

impl fmt::Debug for Cache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cache")
            .field("ttl", &self.inner.ttl)
            .field("shared", &self.shared)
            .finish_non_exhaustive()
    }
}

struct Store {
    ttl: Duration,
    max_bytes: usize,
    max_entries: usize,
    entries: Mutex<Entries>,
}

#[derive(Default)]
struct Entries {
    map: HashMap<[u8; 32], (Instant, usize, McpResponse)>,
    bytes: usize,
}

impl Cache {
    /// Results kept for `ttl`, per caller.
    pub fn new(ttl: Duration) -> Cache {
        Cache {
            inner: Arc::new(Store {
                ttl,
                max_bytes: 8 << 20,
                max_entries: 4096,
                entries: Mutex::new(Entries::default()),
            }),
            shared: false,
        }
    }

    /// At most `bytes` of results kept (the results as JSON).
    #[must_use]
    pub fn max_bytes(self, bytes: usize) -> Self {
        Cache {
            inner: Arc::new(Store {
                ttl: self.inner.ttl,
                max_bytes: bytes,
                max_entries: self.inner.max_entries,
                entries: Mutex::new(Entries::default()),
            }),
            shared: self.shared,
        }
    }

    /// One result for every caller: the tool's result does not depend on who asks.
    #[must_use]
    pub fn shared(mut self) -> Self {
        self.shared = true;
        self
    }

    fn key(&self, req: &McpRequest) -> [u8; 32] {
        let mut h = sha2::Sha256::new();
        h.update(req.function().as_bytes());
        h.update([0]);
        h.update(req.raw_arguments().map_or("", |a| a.get()).as_bytes());
        h.update([0]);
        if !self.shared {
            match (req.principal(), req.client_addr()) {
                (Some(p), _) => h.update(format!("p:{p}")),
                (None, Some(ip)) => h.update(format!("a:{ip}")),
                (None, None) => h.update("anonymous"),
            }
        }
        h.finalize().into()
    }
}

impl Store {
    fn get(&self, key: &[u8; 32]) -> Option<McpResponse> {
        let mut e = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        match e.map.get(key) {
            Some((at, _, r)) if at.elapsed() < self.ttl => Some(r.clone()),
            Some(_) => {
                if let Some((_, size, _)) = e.map.remove(key) {
                    e.bytes -= size;
                }
                None
            }
            None => None,
        }
    }

    fn put(&self, key: [u8; 32], response: &McpResponse) {
        let size = response.result_bytes() + 64;
        if size > self.max_bytes {
            return;
        }
        let mut e = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, old, _)) = e.map.remove(&key) {
            e.bytes -= old;
        }
        let ttl = self.ttl;
        if e.bytes + size > self.max_bytes || e.map.len() >= self.max_entries {
            let Entries { map, bytes } = &mut *e;
            map.retain(|_, (at, s, _)| {
                let keep = at.elapsed() < ttl;
                if !keep {
                    *bytes -= *s;
                }
                keep
            });
        }
        while e.bytes + size > self.max_bytes || e.map.len() >= self.max_entries {
            let Some(oldest) = e
                .map
                .iter()
                .min_by_key(|(_, (at, _, _))| *at)
                .map(|(k, _)| *k)
            else {
                break;
            };
            if let Some((_, s, _)) = e.map.remove(&oldest) {
                e.bytes -= s;
            }
        }
        e.bytes += size;
        e.map.insert(key, (Instant::now(), size, response.clone()));
    }
}

impl Layer<Boxed> for Cache {
    type Service = CacheService;
    fn layer(&self, inner: Boxed) -> CacheService {
        CacheService {
            inner: SharedService::new(inner),
            cache: self.clone(),
        }
    }
}

/// The service of a [`Cache`] layer.
pub struct CacheService {
    inner: SharedService,
    cache: Cache,
}

impl Service<McpRequest> for CacheService {
    type Response = McpResponse;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<McpResponse, BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut TaskContext<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: McpRequest) -> Self::Future {
        let inner = self.inner.clone();
        if !req.is_read_only() || req.is_continuation() || req.is_task() {
            return Box::pin(async move { inner.call(req).await });
        }
        let key = self.cache.key(&req);
        let store = self.cache.inner.clone();
        Box::pin(async move {
            if let Some(hit) = store.get(&key) {
                return Ok(hit);
            }
            let response = inner.call(req).await?;
            if response.outcome() == "ok" {
                store.put(key, &response);
            }
            Ok(response)
        })
    }
}

impl std::fmt::Debug for CacheService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CacheService")
    }
}
