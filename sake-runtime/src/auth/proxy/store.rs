//! Where the proxy keeps what outlives one request: sign-ins under way, authorization codes,
//! refresh tokens, grants (with the upstream tokens), used assertion and proof ids. Every
//! entry expires; the memory store is bounded, and a shared store (Redis, feature `redis`)
//! lets any replica finish a sign-in another began.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Why a store could not do what was asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the authorization proxy's store failed: {reason}")]
pub struct ProxyStoreError {
    /// What failed.
    pub reason: String,
}

impl ProxyStoreError {
    /// An error saying `reason`.
    pub fn new(reason: impl Into<String>) -> Self {
        ProxyStoreError {
            reason: reason.into(),
        }
    }
}

/// The future a [`ProxyStore`] method returns.
pub type ProxyStoreFuture<'a, T> =
    Pin<Box<dyn Future<Output = Result<T, ProxyStoreError>> + Send + 'a>>;

/// Expiring key-value storage for the authorization proxy. Keys are short ASCII strings the
/// proxy makes (a kind and a random or hashed id); values are small JSON documents. Every
/// value is stored with a time to live and must be gone (or never returned) after it.
///
/// [`take`](ProxyStore::take) and [`insert_new`](ProxyStore::insert_new) must be atomic: a
/// code or a refresh token is taken once, by one request, whichever replica serves it.
pub trait ProxyStore: Send + Sync {
    /// Stores `value` under `key` for `ttl`, replacing what was there.
    fn put<'a>(&'a self, key: &'a str, value: Vec<u8>, ttl: Duration) -> ProxyStoreFuture<'a, ()>;
    /// Stores `value` under `key` for `ttl` only if nothing is there; `true` when stored.
    fn insert_new<'a>(
        &'a self,
        key: &'a str,
        value: Vec<u8>,
        ttl: Duration,
    ) -> ProxyStoreFuture<'a, bool>;
    /// The value under `key`, if any.
    fn get<'a>(&'a self, key: &'a str) -> ProxyStoreFuture<'a, Option<Vec<u8>>>;
    /// Removes and returns the value under `key`, atomically.
    fn take<'a>(&'a self, key: &'a str) -> ProxyStoreFuture<'a, Option<Vec<u8>>>;
    /// Removes the value under `key`.
    fn delete<'a>(&'a self, key: &'a str) -> ProxyStoreFuture<'a, ()>;
}

/// The default store: in this process's memory, at most `max_entries` entries and
/// `max_bytes` bytes of keys and values (100 000 and 64 MiB by default). Expired entries are
/// dropped as new ones come; a full store refuses new entries (a sign-in then fails with
/// `temporarily_unavailable`) rather than dropping live ones.
#[derive(Debug)]
pub struct MemoryProxyStore {
    inner: Mutex<Memory>,
    max_entries: usize,
    max_bytes: usize,
}

#[derive(Debug, Default)]
struct Memory {
    entries: HashMap<String, (Vec<u8>, (Instant, u64))>,
    /// Expiry order, to drop expired entries cheaply.
    expiries: BTreeMap<(Instant, u64), String>,
    seq: u64,
    bytes: usize,
}

impl Default for MemoryProxyStore {
    fn default() -> Self {
        MemoryProxyStore::new(100_000, 64 << 20)
    }
}

impl MemoryProxyStore {
    /// A store of at most `max_entries` entries and `max_bytes` bytes.
    pub fn new(max_entries: usize, max_bytes: usize) -> Self {
        MemoryProxyStore {
            inner: Mutex::new(Memory::default()),
            max_entries,
            max_bytes,
        }
    }

    /// How many entries are held (expired ones not yet dropped included).
    pub fn len(&self) -> usize {
        self.inner.lock().map_or(0, |m| m.entries.len())
    }

    /// Whether nothing is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn with<T>(&self, f: impl FnOnce(&mut Memory) -> T) -> Result<T, ProxyStoreError> {
        let mut m = self
            .inner
            .lock()
            .map_err(|_| ProxyStoreError::new("the memory store's lock is poisoned"))?;
        m.purge(Instant::now());
        Ok(f(&mut m))
    }

    fn store(
        &self,
        key: &str,
        value: Vec<u8>,
        ttl: Duration,
        only_new: bool,
    ) -> Result<bool, ProxyStoreError> {
        let (max_entries, max_bytes) = (self.max_entries, self.max_bytes);
        self.with(|m| {
            if only_new && m.entries.contains_key(key) {
                return Ok(false);
            }
            m.remove(key);
            let size = key.len() + value.len();
            if m.entries.len() >= max_entries || m.bytes + size > max_bytes {
                return Err(ProxyStoreError::new(format!(
                    "the memory store is full ({} entries, {} bytes held)",
                    m.entries.len(),
                    m.bytes
                )));
            }
            let at = Instant::now() + ttl;
            m.seq += 1;
            let seq = m.seq;
            m.expiries.insert((at, seq), key.to_owned());
            m.bytes += size;
            m.entries.insert(key.to_owned(), (value, (at, seq)));
            Ok(true)
        })?
    }
}

impl Memory {
    fn purge(&mut self, now: Instant) {
        while let Some(entry) = self.expiries.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let key = entry.remove();
            if let Some((v, _)) = self.entries.remove(&key) {
                self.bytes -= key.len() + v.len();
            }
        }
    }

    fn remove(&mut self, key: &str) -> Option<Vec<u8>> {
        let (v, at) = self.entries.remove(key)?;
        self.bytes -= key.len() + v.len();
        self.expiries.remove(&at);
        Some(v)
    }
}

impl ProxyStore for MemoryProxyStore {
    fn put<'a>(&'a self, key: &'a str, value: Vec<u8>, ttl: Duration) -> ProxyStoreFuture<'a, ()> {
        Box::pin(async move { self.store(key, value, ttl, false).map(drop) })
    }

    fn insert_new<'a>(
        &'a self,
        key: &'a str,
        value: Vec<u8>,
        ttl: Duration,
    ) -> ProxyStoreFuture<'a, bool> {
        Box::pin(async move { self.store(key, value, ttl, true) })
    }

    fn get<'a>(&'a self, key: &'a str) -> ProxyStoreFuture<'a, Option<Vec<u8>>> {
        Box::pin(async move { self.with(|m| m.entries.get(key).map(|(v, _)| v.clone())) })
    }

    fn take<'a>(&'a self, key: &'a str) -> ProxyStoreFuture<'a, Option<Vec<u8>>> {
        Box::pin(async move { self.with(|m| m.remove(key)) })
    }

    fn delete<'a>(&'a self, key: &'a str) -> ProxyStoreFuture<'a, ()> {
        Box::pin(async move { self.with(|m| m.remove(key)).map(drop) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn entries_expire_are_taken_once_and_the_store_is_bounded() {
        let s = MemoryProxyStore::new(2, 1000);
        s.put("a", b"1".to_vec(), Duration::from_secs(60))
            .await
            .unwrap();
        assert!(
            !s.insert_new("a", b"2".to_vec(), Duration::from_secs(60))
                .await
                .unwrap()
        );
        assert_eq!(s.take("a").await.unwrap(), Some(b"1".to_vec()));
        assert_eq!(s.take("a").await.unwrap(), None);
        s.put("b", b"1".to_vec(), Duration::from_millis(20))
            .await
            .unwrap();
        s.put("c", b"1".to_vec(), Duration::from_secs(60))
            .await
            .unwrap();
        // Full: a third live entry is refused.
        assert!(
            s.put("d", b"1".to_vec(), Duration::from_secs(60))
                .await
                .is_err()
        );
        tokio::time::sleep(Duration::from_millis(40)).await;
        // `b` expired: never returned, and its room is free again.
        assert_eq!(s.get("b").await.unwrap(), None);
        s.put("d", b"1".to_vec(), Duration::from_secs(60))
            .await
            .unwrap();
        assert_eq!(s.len(), 2);
        // Bytes are bounded too.
        let big = MemoryProxyStore::new(10, 8);
        assert!(
            big.put("k", vec![0; 8], Duration::from_secs(1))
                .await
                .is_err()
        );
    }
}
