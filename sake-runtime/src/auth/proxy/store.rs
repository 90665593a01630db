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

/// The longest key and bound name a store takes.
const MAX_NAME: usize = 512;

/// Refuses a key or bound name no store takes: empty, longer than 512 bytes, or anything but
/// visible ASCII (the proxy makes none such; a store keying a backend on them relies on it).
pub(crate) fn check_name(what: &str, name: &str) -> Result<(), ProxyStoreError> {
    if name.is_empty() || name.len() > MAX_NAME || !name.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(ProxyStoreError::new(format!(
            "a {what} must be 1 to {MAX_NAME} bytes of visible ASCII"
        )));
    }
    Ok(())
}

/// The future a [`ProxyStore`] method returns.
pub type ProxyStoreFuture<'a, T> =
    Pin<Box<dyn Future<Output = Result<T, ProxyStoreError>> + Send + 'a>>;

/// One of the counts an entry stored with [`ProxyStore::insert_bounded`] is kept under: at
/// most `limit` live entries (not taken, deleted or expired) count under one `name`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bound<'a> {
    /// The count's name: a short string of visible ASCII the proxy makes (`pending` for every
    /// sign-in under way, `pending:<digest of the client's address>` for one client's).
    pub name: &'a str,
    /// How many live entries may count under it.
    pub limit: usize,
    /// What a new entry finds when this bound holds its limit: `false`, a refusal
    /// ([`Insertion::Full`]); `true`, room made for it (once every bound that refuses has
    /// room): the store removes the oldest entry of the *largest group* under this bound. A
    /// group is one of the other bounds the entries counted under this one count under (a
    /// client's address, an IPv6 /48); the largest holds the most of them (a store may judge
    /// by its oldest entries only: [`MemoryProxyStore`] counts all, the Redis store the 256
    /// oldest); when none of them counts under another bound, the oldest of all goes. So
    /// whoever holds the most pays for a newcomer, and a full table never locks everyone out.
    /// The proxy makes room this way in its bound of every sign-in under way.
    pub make_room: bool,
}

impl<'a> Bound<'a> {
    /// A bound that refuses new entries when it holds `limit`.
    pub fn refusing(name: &'a str, limit: usize) -> Self {
        Bound {
            name,
            limit,
            make_room: false,
        }
    }

    /// A bound that makes room for new entries when it holds `limit` (see
    /// [`make_room`](Self::make_room)).
    pub fn making_room(name: &'a str, limit: usize) -> Self {
        Bound {
            name,
            limit,
            make_room: true,
        }
    }
}

/// What [`ProxyStore::insert_bounded`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Insertion {
    /// Stored, and counted under every bound until it is taken, deleted or expires.
    Stored,
    /// Not stored: something is already stored under the key.
    Exists,
    /// Not stored: the bound at this index of the list holds its limit of live entries.
    Full(usize),
}

/// Expiring key-value storage for the authorization proxy. Keys are short ASCII strings the
/// proxy makes (a kind and a random or hashed id); values are small JSON documents. Every
/// value is stored with a time to live and must be gone (or never returned) after it.
///
/// [`take`](ProxyStore::take), [`insert_new`](ProxyStore::insert_new) and
/// [`insert_bounded`](ProxyStore::insert_bounded) must be atomic: a code or a refresh token is
/// taken once, by one request, and a bound admits no more entries than its limit, whichever
/// replica serves them.
///
/// Errors are logged by the proxy and answered with a generic `temporarily_unavailable`; still,
/// keep backend details (addresses, server messages) out of [`ProxyStoreError::reason`] and in
/// your own logs: a tool may show an upstream session's error to its caller.
pub trait ProxyStore: Send + Sync {
    /// Stores `value` under `key` for `ttl`, replacing what was there. An entry stored with
    /// [`insert_bounded`](Self::insert_bounded) stays counted under its bounds, until the new
    /// `ttl` ends.
    fn put<'a>(&'a self, key: &'a str, value: Vec<u8>, ttl: Duration) -> ProxyStoreFuture<'a, ()>;
    /// Stores `value` under `key` for `ttl` only if nothing is there; `true` when stored.
    /// By default, [`insert_bounded`](Self::insert_bounded) under no bound.
    fn insert_new<'a>(
        &'a self,
        key: &'a str,
        value: Vec<u8>,
        ttl: Duration,
    ) -> ProxyStoreFuture<'a, bool> {
        Box::pin(async move {
            Ok(self.insert_bounded(key, value, ttl, &[]).await? == Insertion::Stored)
        })
    }
    /// Stores `value` under `key` for `ttl` only if nothing is there and every bound of
    /// `bounds` has room (a full bound that makes room, [`Bound::make_room`], removes the
    /// oldest entry of its largest group first), atomically; the entry then counts under each
    /// until it is taken, deleted or expires. The proxy keeps what anonymous browsers start
    /// (sign-ins under way) this way: per client, per IPv6 /48 and in all.
    fn insert_bounded<'a>(
        &'a self,
        key: &'a str,
        value: Vec<u8>,
        ttl: Duration,
        bounds: &'a [Bound<'a>],
    ) -> ProxyStoreFuture<'a, Insertion>;
    /// The value under `key`, if any.
    fn get<'a>(&'a self, key: &'a str) -> ProxyStoreFuture<'a, Option<Vec<u8>>>;
    /// Removes and returns the value under `key`, atomically.
    fn take<'a>(&'a self, key: &'a str) -> ProxyStoreFuture<'a, Option<Vec<u8>>>;
    /// Removes the value under `key`. By default, [`take`](Self::take) with the value
    /// dropped.
    fn delete<'a>(&'a self, key: &'a str) -> ProxyStoreFuture<'a, ()> {
        Box::pin(async move { self.take(key).await.map(drop) })
    }
}

/// A shared store is a store: keep an `Arc` to look at it (a [`MemoryProxyStore`]'s size) while
/// the proxy uses it.
impl<S: ProxyStore + ?Sized> ProxyStore for std::sync::Arc<S> {
    fn put<'a>(&'a self, key: &'a str, value: Vec<u8>, ttl: Duration) -> ProxyStoreFuture<'a, ()> {
        (**self).put(key, value, ttl)
    }

    fn insert_new<'a>(
        &'a self,
        key: &'a str,
        value: Vec<u8>,
        ttl: Duration,
    ) -> ProxyStoreFuture<'a, bool> {
        (**self).insert_new(key, value, ttl)
    }

    fn insert_bounded<'a>(
        &'a self,
        key: &'a str,
        value: Vec<u8>,
        ttl: Duration,
        bounds: &'a [Bound<'a>],
    ) -> ProxyStoreFuture<'a, Insertion> {
        (**self).insert_bounded(key, value, ttl, bounds)
    }

    fn get<'a>(&'a self, key: &'a str) -> ProxyStoreFuture<'a, Option<Vec<u8>>> {
        (**self).get(key)
    }

    fn take<'a>(&'a self, key: &'a str) -> ProxyStoreFuture<'a, Option<Vec<u8>>> {
        (**self).take(key)
    }

    fn delete<'a>(&'a self, key: &'a str) -> ProxyStoreFuture<'a, ()> {
        (**self).delete(key)
    }
}

/// The default store: in this process's memory, at most `max_entries` entries and
/// `max_bytes` bytes of keys, values and bound names (100 000 and 64 MiB by default). Expired
/// entries are dropped as new ones come; a full store refuses new entries (a sign-in then
/// fails with `temporarily_unavailable`) rather than dropping live ones (only a full bound
/// that makes room, [`Bound::make_room`], drops one of its own entries).
#[derive(Debug)]
pub struct MemoryProxyStore {
    inner: Mutex<Memory>,
    max_entries: usize,
    max_bytes: usize,
}

#[derive(Debug)]
struct Entry {
    value: Vec<u8>,
    at: (Instant, u64),
    /// The bounds it counts under.
    bounds: Vec<String>,
}

impl Entry {
    fn size(&self, key: &str) -> usize {
        key.len() + self.value.len() + self.bounds.iter().map(String::len).sum::<usize>()
    }
}

#[derive(Debug, Default)]
struct Memory {
    entries: HashMap<String, Entry>,
    /// Expiry order, to drop expired entries cheaply.
    expiries: BTreeMap<(Instant, u64), String>,
    /// Live entries per bound (only bounds with some).
    counts: HashMap<String, usize>,
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

    /// The bytes held: keys, values and bound names (expired entries not yet dropped
    /// included).
    pub fn bytes(&self) -> usize {
        self.inner.lock().map_or(0, |m| m.bytes)
    }

    fn with<T>(&self, f: impl FnOnce(&mut Memory) -> T) -> Result<T, ProxyStoreError> {
        let mut m = self
            .inner
            .lock()
            .map_err(|_| ProxyStoreError::new("the memory store's lock is poisoned"))?;
        m.purge(Instant::now());
        Ok(f(&mut m))
    }

    /// Stores an entry; `only_new`: not over an existing one; counted under `bounds` (given
    /// only with `only_new`).
    fn store(
        &self,
        key: &str,
        value: Vec<u8>,
        ttl: Duration,
        only_new: bool,
        bounds: &[Bound<'_>],
    ) -> Result<Insertion, ProxyStoreError> {
        check_name("key", key)?;
        for b in bounds {
            check_name("bound name", b.name)?;
        }
        let (max_entries, max_bytes) = (self.max_entries, self.max_bytes);
        self.with(|m| {
            if only_new && m.entries.contains_key(key) {
                return Ok(Insertion::Exists);
            }
            let full =
                |m: &Memory, b: &Bound<'_>| m.counts.get(b.name).copied().unwrap_or(0) >= b.limit;
            if let Some(i) = bounds.iter().position(|b| !b.make_room && full(m, b)) {
                return Ok(Insertion::Full(i));
            }
            for b in bounds.iter().filter(|b| b.make_room) {
                // Each removal frees one: a limit lowered since may take a few.
                while full(m, b) {
                    let Some(victim) = m.oldest_of_largest_group(b.name) else {
                        break;
                    };
                    m.remove(&victim, true);
                }
            }
            if let Some(i) = bounds.iter().position(|b| full(m, b)) {
                return Ok(Insertion::Full(i));
            }
            // A replaced entry keeps counting under its bounds.
            let kept = m.remove(key, false).map(|e| e.bounds).unwrap_or_default();
            let entry = Entry {
                value,
                at: (Instant::now() + ttl, m.seq + 1),
                bounds: if bounds.is_empty() {
                    kept
                } else {
                    bounds.iter().map(|b| b.name.to_owned()).collect()
                },
            };
            let size = entry.size(key);
            if m.entries.len() >= max_entries || m.bytes + size > max_bytes {
                // The entry it replaced (never one of `insert_bounded`, which replaces
                // nothing) is gone: so are its counts.
                if bounds.is_empty() {
                    m.release(&entry.bounds);
                }
                return Err(ProxyStoreError::new(format!(
                    "the memory store is full ({} entries, {} bytes held)",
                    m.entries.len(),
                    m.bytes
                )));
            }
            for b in bounds {
                *m.counts.entry(b.name.to_owned()).or_insert(0) += 1;
            }
            m.seq += 1;
            m.expiries.insert(entry.at, key.to_owned());
            m.bytes += size;
            m.entries.insert(key.to_owned(), entry);
            Ok(Insertion::Stored)
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
            if let Some(e) = self.entries.remove(&key) {
                self.bytes -= e.size(&key);
                self.release(&e.bounds);
            }
        }
    }

    /// The key of the entry a full bound `name` gives up for a newcomer: the oldest of the
    /// largest group of the entries counted under it (see [`Bound::make_room`]). A scan of
    /// the table, made only when the bound is full.
    fn oldest_of_largest_group(&self, name: &str) -> Option<String> {
        let under = || {
            self.entries
                .iter()
                .filter(move |(_, e)| e.bounds.iter().any(|b| b == name))
        };
        let mut groups: HashMap<&str, usize> = HashMap::new();
        for (_, e) in under() {
            for b in e.bounds.iter().filter(|b| *b != name) {
                *groups.entry(b).or_insert(0) += 1;
            }
        }
        // The largest; of equals, the first name (a stable choice).
        let largest = groups
            .into_iter()
            .max_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(a.0)))
            .map(|(g, _)| g.to_owned());
        under()
            .filter(|(_, e)| largest.as_ref().is_none_or(|g| e.bounds.contains(g)))
            .min_by_key(|(_, e)| e.at.1)
            .map(|(k, _)| k.clone())
    }

    /// Removes an entry; `release`: it no longer counts under its bounds.
    fn remove(&mut self, key: &str, release: bool) -> Option<Entry> {
        let e = self.entries.remove(key)?;
        self.bytes -= e.size(key);
        self.expiries.remove(&e.at);
        if release {
            self.release(&e.bounds);
        }
        Some(e)
    }

    fn release(&mut self, bounds: &[String]) {
        for b in bounds {
            if let Some(n) = self.counts.get_mut(b) {
                *n -= 1;
                if *n == 0 {
                    self.counts.remove(b);
                }
            }
        }
    }
}

impl ProxyStore for MemoryProxyStore {
    fn put<'a>(&'a self, key: &'a str, value: Vec<u8>, ttl: Duration) -> ProxyStoreFuture<'a, ()> {
        Box::pin(async move { self.store(key, value, ttl, false, &[]).map(drop) })
    }

    fn insert_bounded<'a>(
        &'a self,
        key: &'a str,
        value: Vec<u8>,
        ttl: Duration,
        bounds: &'a [Bound<'a>],
    ) -> ProxyStoreFuture<'a, Insertion> {
        Box::pin(async move { self.store(key, value, ttl, true, bounds) })
    }

    fn get<'a>(&'a self, key: &'a str) -> ProxyStoreFuture<'a, Option<Vec<u8>>> {
        Box::pin(async move { self.with(|m| m.entries.get(key).map(|e| e.value.clone())) })
    }

    fn take<'a>(&'a self, key: &'a str) -> ProxyStoreFuture<'a, Option<Vec<u8>>> {
        Box::pin(async move { self.with(|m| m.remove(key, true).map(|e| e.value)) })
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

    #[tokio::test]
    async fn bounded_entries_count_until_taken_deleted_or_expired() {
        let s = MemoryProxyStore::default();
        let minute = Duration::from_secs(60);
        let bounds = |client| [Bound::refusing(client, 2), Bound::refusing("all", 3)];
        let (a, b) = (bounds("a"), bounds("b"));
        async fn put(
            s: &MemoryProxyStore,
            key: &str,
            bounds: &[Bound<'_>],
            ttl: Duration,
        ) -> Insertion {
            s.insert_bounded(key, b"x".to_vec(), ttl, bounds)
                .await
                .unwrap()
        }
        // `a` holds its two; a third of `a` is refused by its own bound (index 0).
        assert_eq!(put(&s, "a1", &a, minute).await, Insertion::Stored);
        assert_eq!(put(&s, "a2", &a, minute).await, Insertion::Stored);
        assert_eq!(put(&s, "a3", &a, minute).await, Insertion::Full(0));
        assert_eq!(put(&s, "a1", &a, minute).await, Insertion::Exists);
        // `b` gets one; then the global bound (index 1) is reached.
        assert_eq!(
            put(&s, "b1", &b, Duration::from_millis(30)).await,
            Insertion::Stored
        );
        assert_eq!(put(&s, "b2", &b, minute).await, Insertion::Full(1));
        // A refused entry is not stored.
        assert_eq!(s.get("a3").await.unwrap(), None);
        // Rewriting an entry keeps it counted.
        s.put("a1", b"y".to_vec(), minute).await.unwrap();
        assert_eq!(put(&s, "a3", &a, minute).await, Insertion::Full(0));
        // Taking and deleting release it.
        assert_eq!(s.take("a1").await.unwrap(), Some(b"y".to_vec()));
        assert_eq!(put(&s, "a3", &a, minute).await, Insertion::Stored);
        s.delete("a2").await.unwrap();
        // Expiry too: `b1` lapses, and `b` has room again.
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(put(&s, "b2", &b, minute).await, Insertion::Stored);
        assert_eq!(put(&s, "b3", &b, minute).await, Insertion::Stored);
        assert_eq!(put(&s, "a4", &a, minute).await, Insertion::Full(1));
        assert_eq!(s.len(), 3);
        // Every count is gone with its entries; bytes with them.
        for k in ["a3", "b2", "b3"] {
            s.delete(k).await.unwrap();
        }
        assert!(s.is_empty());
        assert_eq!(s.bytes(), 0);
        assert!(s.inner.lock().unwrap().counts.is_empty());
    }

    #[tokio::test]
    async fn a_full_store_refuses_a_bounded_entry_without_counting_it() {
        let s = MemoryProxyStore::new(1, 1000);
        let minute = Duration::from_secs(60);
        let bound = [Bound::refusing("c", 5)];
        s.put("other", b"1".to_vec(), minute).await.unwrap();
        assert!(
            s.insert_bounded("k", b"1".to_vec(), minute, &bound)
                .await
                .is_err()
        );
        assert!(s.inner.lock().unwrap().counts.is_empty());
        // A put over a counted entry that no longer fits drops its count with it.
        let s = MemoryProxyStore::new(10, 40);
        s.insert_bounded("k", b"1".to_vec(), minute, &bound)
            .await
            .unwrap();
        assert!(s.put("k", vec![0; 64], minute).await.is_err());
        assert!(s.inner.lock().unwrap().counts.is_empty());
        assert_eq!(s.bytes(), 0);
    }

    #[tokio::test]
    async fn a_full_bound_that_makes_room_drops_the_oldest_of_the_largest_group() {
        let s = MemoryProxyStore::default();
        let minute = Duration::from_secs(60);
        async fn put(s: &MemoryProxyStore, key: &str, groups: &[&str]) -> Insertion {
            let mut bounds: Vec<Bound<'_>> =
                groups.iter().map(|g| Bound::refusing(g, 100)).collect();
            bounds.push(Bound::making_room("all", 4));
            s.insert_bounded(key, b"x".to_vec(), Duration::from_secs(60), &bounds)
                .await
                .unwrap()
        }
        // A /48 spread over three /64s holds three; one user holds one.
        assert_eq!(put(&s, "n1", &["a/64", "n/48"]).await, Insertion::Stored);
        assert_eq!(put(&s, "u1", &["u"]).await, Insertion::Stored);
        assert_eq!(put(&s, "n2", &["b/64", "n/48"]).await, Insertion::Stored);
        assert_eq!(put(&s, "n3", &["c/64", "n/48"]).await, Insertion::Stored);
        // Full: another user gets in, and the /48's oldest goes (not the older user's).
        assert_eq!(put(&s, "v1", &["v"]).await, Insertion::Stored);
        assert_eq!(s.get("n1").await.unwrap(), None);
        assert!(s.get("u1").await.unwrap().is_some());
        // A rewritten entry counts as new: `n2` rewritten, `n3` is now the /48's oldest.
        s.put("n2", b"y".to_vec(), minute).await.unwrap();
        assert_eq!(put(&s, "n4", &["d/64", "n/48"]).await, Insertion::Stored);
        assert_eq!(s.get("n3").await.unwrap(), None);
        assert_eq!(s.get("n2").await.unwrap(), Some(b"y".to_vec()));
        // Groups of one each: of equals, the first name pays ("b/64", so `n2`).
        s.delete("n4").await.unwrap();
        assert_eq!(put(&s, "w1", &["w"]).await, Insertion::Stored);
        assert_eq!(put(&s, "x1", &["x"]).await, Insertion::Stored);
        assert_eq!(s.get("n2").await.unwrap(), None);
        assert_eq!(s.len(), 4);
        // A refusing bound is checked first: nothing is dropped for an entry it refuses.
        let refused = [Bound::refusing("u", 1), Bound::making_room("all", 4)];
        assert_eq!(
            s.insert_bounded("u2", b"x".to_vec(), minute, &refused)
                .await
                .unwrap(),
            Insertion::Full(0)
        );
        assert_eq!(s.len(), 4);
        // Entries under no other bound: the oldest of all goes.
        let t = MemoryProxyStore::default();
        let alone = [Bound::making_room("all", 2)];
        for k in ["k1", "k2", "k3"] {
            assert_eq!(
                t.insert_bounded(k, b"x".to_vec(), minute, &alone)
                    .await
                    .unwrap(),
                Insertion::Stored
            );
        }
        assert_eq!(t.get("k1").await.unwrap(), None);
        assert_eq!(t.len(), 2);
        // Counts follow what was dropped.
        assert_eq!(t.inner.lock().unwrap().counts.get("all"), Some(&2));
        assert_eq!(s.inner.lock().unwrap().counts.get("n/48"), None);
        assert_eq!(s.inner.lock().unwrap().counts.get("all"), Some(&4));
    }
}
