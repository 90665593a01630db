//! Verified tokens, remembered until they expire.

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use sha2::{Digest as _, Sha256};

use super::{AuthError, Principal, TokenVerifier, VerifyFuture};

/// The wall clock, in milliseconds since the Unix epoch (token times are wall-clock times).
/// Tests replace it with a hand-moved one.
#[derive(Clone, Debug, Default)]
pub(crate) struct Clock(Option<Arc<AtomicU64>>);

impl Clock {
    #[cfg(test)]
    pub(crate) fn manual(start_ms: u64) -> (Self, Arc<AtomicU64>) {
        let now = Arc::new(AtomicU64::new(start_ms));
        (Self(Some(now.clone())), now)
    }

    pub(crate) fn now_ms(&self) -> u64 {
        match &self.0 {
            Some(now) => now.load(Ordering::Relaxed),
            None => system_ms(SystemTime::now()),
        }
    }
}

/// `t` in milliseconds since the Unix epoch (0 before it, saturating far after it).
pub(crate) fn system_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The most refusals remembered by default.
pub(crate) const DEFAULT_MAX_REFUSALS: usize = 10_000;
/// The most bytes the remembered refusals may take by default.
pub(crate) const DEFAULT_MAX_REFUSAL_BYTES: usize = 2 * 1024 * 1024;

/// The key of a cached token: its SHA-256, so that the cache holds no token.
pub(crate) type TokenKey = [u8; 32];

pub(crate) fn token_key(token: &str) -> TokenKey {
    Sha256::digest(token.as_bytes()).into()
}

/// A map of values that expire, bounded in entries and (when asked) in bytes. Expired
/// entries are dropped when met and, cheapest first, when room is needed; a full map drops
/// the entries that expire soonest. Every operation is O(log n) under one short lock (never a
/// scan).
#[derive(Debug)]
pub(crate) struct ExpiryCache<V> {
    state: Mutex<State<V>>,
    max_entries: usize,
    max_bytes: usize,
}

#[derive(Debug)]
struct State<V> {
    /// Each value, when it expires, and the bytes it is counted for.
    entries: HashMap<TokenKey, (V, u64, usize)>,
    by_expiry: BTreeSet<(u64, TokenKey)>,
    bytes: usize,
}

/// What an entry costs besides its value: the key twice (map and index), the expiry twice,
/// the map's and the tree's own bookkeeping.
pub(crate) const ENTRY_OVERHEAD: usize = 128;

impl<V: Clone> ExpiryCache<V> {
    pub(crate) fn new(max_entries: usize) -> Self {
        Self::bounded(max_entries, usize::MAX)
    }

    /// At most `max_entries` entries and `max_bytes` bytes (each entry counted as
    /// [`ENTRY_OVERHEAD`] and the size given to [`insert_sized`](Self::insert_sized)).
    pub(crate) fn bounded(max_entries: usize, max_bytes: usize) -> Self {
        Self {
            state: Mutex::new(State {
                entries: HashMap::new(),
                by_expiry: BTreeSet::new(),
                bytes: 0,
            }),
            max_entries,
            max_bytes,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<V>> {
        // The state is consistent between statements: a panic elsewhere cannot leave it torn.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The value under `key`, unless it expired by `now_ms`.
    pub(crate) fn get(&self, key: &TokenKey, now_ms: u64) -> Option<V> {
        let mut state = self.lock();
        let (value, expires, _) = state.entries.get(key)?;
        if *expires > now_ms {
            return Some(value.clone());
        }
        state.remove(key);
        None
    }

    /// Remembers `value` under `key` until `expires_ms` (nothing if that is not after `now_ms`).
    pub(crate) fn insert(&self, key: TokenKey, value: V, expires_ms: u64, now_ms: u64) {
        self.insert_sized(key, value, 0, expires_ms, now_ms);
    }

    /// Remembers `value`, counted as `size` bytes besides [`ENTRY_OVERHEAD`], under `key`
    /// until `expires_ms` (nothing if that is not after `now_ms`, or if it alone is over the
    /// byte bound).
    pub(crate) fn insert_sized(
        &self,
        key: TokenKey,
        value: V,
        size: usize,
        expires_ms: u64,
        now_ms: u64,
    ) {
        let weight = ENTRY_OVERHEAD.saturating_add(size);
        if expires_ms <= now_ms || self.max_entries == 0 || weight > self.max_bytes {
            return;
        }
        let mut state = self.lock();
        state.remove(&key);
        // Expired entries at the front are dropped as they are passed (amortised O(log n)).
        while let Some(&(expires, victim)) = state.by_expiry.first() {
            if expires > now_ms {
                break;
            }
            state.remove(&victim);
        }
        while state.entries.len() >= self.max_entries
            || state.bytes.saturating_add(weight) > self.max_bytes
        {
            // The soonest to expire goes first: the live entry with the least time left.
            let Some(&(_, victim)) = state.by_expiry.first() else {
                break;
            };
            state.remove(&victim);
        }
        state.entries.insert(key, (value, expires_ms, weight));
        state.by_expiry.insert((expires_ms, key));
        state.bytes += weight;
    }

    /// How many entries are held (expired ones not yet dropped included).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().entries.len()
    }

    /// How many bytes the entries held are counted for.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.lock().bytes
    }
}

impl<V> State<V> {
    fn remove(&mut self, key: &TokenKey) {
        if let Some((_, expires, weight)) = self.entries.remove(key) {
            self.by_expiry.remove(&(expires, *key));
            self.bytes -= weight;
        }
    }
}

/// Refusals remembered briefly under the token's hash, so that the same bad token sent again
/// and again costs a hash and a lookup, not another check (an outbound request, for
/// introspection). Only refusals of the token itself ([`AuthError::is_token_error`]) are
/// remembered, never "could not be checked now", nor a token signed by a key not yet known
/// (it may be published in a moment). Bounded in entries and bytes; when full, the refusals
/// that expire soonest go.
#[derive(Debug)]
pub(crate) struct Refusals {
    cache: ExpiryCache<AuthError>,
    ttl_ms: u64,
}

impl Refusals {
    pub(crate) fn new(ttl: Duration, max_entries: usize, max_bytes: usize) -> Self {
        Refusals {
            cache: ExpiryCache::bounded(max_entries, max_bytes),
            ttl_ms: u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX),
        }
    }

    /// The refusal remembered for `key`, if any.
    pub(crate) fn get(&self, key: &TokenKey, now_ms: u64) -> Option<AuthError> {
        if self.ttl_ms == 0 {
            return None;
        }
        self.cache.get(key, now_ms)
    }

    /// Remembers `error` for `key` when it is the token's own fault.
    pub(crate) fn remember(&self, key: TokenKey, error: &AuthError, now_ms: u64) {
        if self.ttl_ms == 0
            || !error.is_token_error()
            || matches!(error, AuthError::UnknownKey { .. })
        {
            return;
        }
        let size = error.to_string().len();
        self.cache.insert_sized(
            key,
            error.clone(),
            size,
            now_ms.saturating_add(self.ttl_ms),
            now_ms,
        );
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.cache.len()
    }

    #[cfg(test)]
    pub(crate) fn bytes(&self) -> usize {
        self.cache.bytes()
    }
}

/// A [`TokenVerifier`] that remembers what another one verified, so that a token is checked
/// once and then costs a hash and a map lookup per request.
///
/// A verified token is remembered under its SHA-256 (the cache holds no token) until its
/// `exp` — never past it — or for [`max_ttl`](Self::max_ttl), whichever comes first. Refusals
/// are not remembered unless [`refusal_ttl`](Self::refusal_ttl) says for how long (a verifier
/// that asks a remote service for each token; the JWT verifier checks locally, and
/// [`IntrospectionVerifier`](super::IntrospectionVerifier) remembers its own). The cache holds
/// at most [`max_entries`](Self::max_entries) tokens; when full, the one expiring soonest goes.
///
/// ```no_run
/// # async fn demo() -> Result<(), sake_runtime::auth::AuthError> {
/// use sake_runtime::auth::{CachedVerifier, JwtVerifier, TokenVerifier};
///
/// let verifier = CachedVerifier::new(
///     JwtVerifier::builder("https://auth.example.com", "https://mcp.example.com/mcp").build()?,
/// );
/// let principal = verifier.verify("eyJ...").await?;
/// # Ok(()) }
/// ```
pub struct CachedVerifier<V> {
    inner: V,
    cache: ExpiryCache<Principal>,
    max_ttl: Duration,
    refusals: Refusals,
    clock: Clock,
}

impl<V: std::fmt::Debug> std::fmt::Debug for CachedVerifier<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachedVerifier")
            .field("inner", &self.inner)
            .field("max_entries", &self.cache.max_entries)
            .field("max_ttl", &self.max_ttl)
            .finish()
    }
}

impl<V: TokenVerifier> CachedVerifier<V> {
    /// The default bound on remembered tokens.
    pub const DEFAULT_MAX_ENTRIES: usize = 10_000;
    /// The default longest time a token is remembered.
    pub const DEFAULT_MAX_TTL: Duration = Duration::from_secs(300);

    /// Remembers what `inner` verifies, with the default bounds (10 000 tokens, 5 minutes).
    pub fn new(inner: V) -> Self {
        Self {
            inner,
            cache: ExpiryCache::new(Self::DEFAULT_MAX_ENTRIES),
            max_ttl: Self::DEFAULT_MAX_TTL,
            refusals: Refusals::new(Duration::ZERO, 0, 0),
            clock: Clock::default(),
        }
    }

    /// Remembers the refusals of tokens (their own fault: invalid, expired, for another
    /// audience…, not "could not be checked now") for `ttl` under their SHA-256, at most
    /// 10 000 of them in 2 MiB, so that a bad token sent again is refused without asking the
    /// inner verifier. Off (zero) by default.
    pub fn refusal_ttl(mut self, ttl: Duration) -> Self {
        self.refusals = Refusals::new(ttl, DEFAULT_MAX_REFUSALS, DEFAULT_MAX_REFUSAL_BYTES);
        self
    }

    /// At most `n` tokens are remembered (0: none).
    pub fn max_entries(mut self, n: usize) -> Self {
        self.cache = ExpiryCache::new(n);
        self
    }

    /// A token is remembered for at most `ttl`, even when its `exp` is later (and only for
    /// `ttl` when it has none). This bounds how long a revoked token keeps working.
    pub fn max_ttl(mut self, ttl: Duration) -> Self {
        self.max_ttl = ttl;
        self
    }

    /// The verifier this one asks on a miss.
    pub fn inner(&self) -> &V {
        &self.inner
    }

    #[cfg(test)]
    pub(crate) fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    async fn verify_cached(&self, token: &str) -> Result<Principal, AuthError> {
        let key = token_key(token);
        let now = self.clock.now_ms();
        if let Some(principal) = self.cache.get(&key, now) {
            return Ok(principal);
        }
        if let Some(refused) = self.refusals.get(&key, now) {
            return Err(refused);
        }
        let principal = match self.inner.verify(token).await {
            Ok(p) => p,
            Err(e) => {
                self.refusals.remember(key, &e, self.clock.now_ms());
                return Err(e);
            }
        };
        let now = self.clock.now_ms();
        let ttl = u64::try_from(self.max_ttl.as_millis()).unwrap_or(u64::MAX);
        let until = now.saturating_add(ttl);
        let until = principal
            .expires_at()
            .map_or(until, |exp| until.min(system_ms(exp)));
        self.cache.insert(key, principal.clone(), until, now);
        Ok(principal)
    }
}

impl<V: TokenVerifier> TokenVerifier for CachedVerifier<V> {
    fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a> {
        Box::pin(self.verify_cached(token))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    fn key(n: u8) -> TokenKey {
        [n; 32]
    }

    #[test]
    fn expiry_cache_honours_expiry_and_bounds() {
        let cache = ExpiryCache::new(3);
        cache.insert(key(1), "one", 1_000, 0);
        cache.insert(key(2), "two", 3_000, 0);
        cache.insert(key(3), "three", 2_000, 0);
        assert_eq!(cache.get(&key(1), 999), Some("one"));
        assert_eq!(cache.get(&key(1), 1_000), None, "expired at exactly exp");
        assert_eq!(cache.len(), 2, "an expired entry met is dropped");
        // Full (3): the entry expiring soonest (three, at 2000) goes.
        cache.insert(key(1), "one again", 5_000, 0);
        cache.insert(key(4), "four", 4_000, 0);
        assert_eq!(cache.len(), 3);
        assert_eq!(cache.get(&key(3), 0), None);
        assert_eq!(cache.get(&key(2), 0), Some("two"));
        assert_eq!(cache.get(&key(4), 0), Some("four"));
        // Inserting drops the expired entries at the front.
        cache.insert(key(5), "five", 10_000, 4_500);
        assert_eq!(cache.len(), 2, "two (3000) and four (4000) expired by 4500");
        assert_eq!(cache.get(&key(1), 4_500), Some("one again"));
        // Already expired, or no room at all: not stored.
        cache.insert(key(6), "six", 4_500, 4_500);
        assert_eq!(cache.get(&key(6), 0), None);
        let none = ExpiryCache::new(0);
        none.insert(key(1), "x", 10, 0);
        assert_eq!(none.get(&key(1), 0), None);
    }

    /// Counts its calls; accepts "good-<n>" tokens expiring at n seconds, refuses the rest.
    struct Counting(AtomicUsize);

    impl TokenVerifier for Counting {
        fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Box::pin(async move {
                let exp = token
                    .strip_prefix("good-")
                    .and_then(|n| n.parse::<u64>().ok())
                    .ok_or_else(|| AuthError::invalid("not good"))?;
                Ok(Principal::new("alice").with_expires_at(UNIX_EPOCH + Duration::from_secs(exp)))
            })
        }
    }

    #[tokio::test]
    async fn cache_hit_does_not_reverify_and_expiry_is_honoured() {
        let (clock, now) = Clock::manual(1_000_000);
        let v = CachedVerifier::new(Counting(AtomicUsize::new(0))).with_clock(clock);
        let calls = || v.inner().0.load(Ordering::SeqCst);

        // exp = 1010 s; now = 1000 s.
        let p = v.verify("good-1010").await.unwrap();
        assert_eq!(p.subject(), "alice");
        assert_eq!(calls(), 1);
        for _ in 0..5 {
            assert_eq!(v.verify("good-1010").await.unwrap(), p);
        }
        assert_eq!(calls(), 1, "hits do not reach the inner verifier");

        // One millisecond before exp: still a hit. At exp: verified again.
        now.store(1_009_999, Ordering::Relaxed);
        v.verify("good-1010").await.unwrap();
        assert_eq!(calls(), 1);
        now.store(1_010_000, Ordering::Relaxed);
        v.verify("good-1010").await.unwrap();
        assert_eq!(calls(), 2, "never served past exp");

        // Refusals are not remembered.
        assert!(v.verify("bad").await.is_err());
        assert!(v.verify("bad").await.is_err());
        assert_eq!(calls(), 4);
    }

    #[tokio::test]
    async fn max_ttl_caps_a_long_exp() {
        let (clock, now) = Clock::manual(1_000_000);
        let v = CachedVerifier::new(Counting(AtomicUsize::new(0)))
            .max_ttl(Duration::from_secs(5))
            .with_clock(clock);
        v.verify("good-999999").await.unwrap();
        now.store(1_004_999, Ordering::Relaxed);
        v.verify("good-999999").await.unwrap();
        assert_eq!(v.inner().0.load(Ordering::SeqCst), 1);
        now.store(1_005_000, Ordering::Relaxed);
        v.verify("good-999999").await.unwrap();
        assert_eq!(v.inner().0.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn bounded_in_entries() {
        let (clock, _now) = Clock::manual(1_000_000);
        let v = CachedVerifier::new(Counting(AtomicUsize::new(0)))
            .max_entries(2)
            .with_clock(clock);
        for exp in [2000, 3000, 4000] {
            v.verify(&format!("good-{exp}")).await.unwrap();
        }
        assert_eq!(v.cache.len(), 2);
        // good-2000 expired soonest and was dropped; the others are hits.
        v.verify("good-3000").await.unwrap();
        v.verify("good-4000").await.unwrap();
        assert_eq!(v.inner().0.load(Ordering::SeqCst), 3);
        v.verify("good-2000").await.unwrap();
        assert_eq!(v.inner().0.load(Ordering::SeqCst), 4);
    }

    #[test]
    fn expiry_cache_is_bounded_in_bytes_too() {
        let cache = ExpiryCache::bounded(100, 4 * ENTRY_OVERHEAD + 400);
        for n in 0..10u8 {
            cache.insert_sized(key(n), n, 100, 1_000 + u64::from(n), 0);
            assert!(cache.bytes() <= 4 * ENTRY_OVERHEAD + 400);
        }
        // Four fit; the ones expiring soonest went.
        assert_eq!(cache.len(), 4);
        assert_eq!(cache.bytes(), 4 * (ENTRY_OVERHEAD + 100));
        assert_eq!(cache.get(&key(9), 0), Some(9));
        assert_eq!(cache.get(&key(5), 0), None);
        // One entry larger than the whole bound is not kept (and evicts nothing).
        cache.insert_sized(key(20), 20, 10_000, 5_000, 0);
        assert_eq!(cache.get(&key(20), 0), None);
        assert_eq!(cache.len(), 4);
        // Replacing an entry frees what it was counted for.
        cache.insert_sized(key(9), 99, 0, 5_000, 0);
        assert_eq!(cache.bytes(), 3 * (ENTRY_OVERHEAD + 100) + ENTRY_OVERHEAD);
    }

    #[tokio::test]
    async fn refusals_are_remembered_only_when_asked_and_only_the_tokens_own() {
        let (clock, now) = Clock::manual(1_000_000);
        let v = CachedVerifier::new(Counting(AtomicUsize::new(0)))
            .refusal_ttl(Duration::from_secs(10))
            .with_clock(clock);
        let calls = || v.inner().0.load(Ordering::SeqCst);
        for _ in 0..5 {
            assert_eq!(
                v.verify("bad").await.unwrap_err(),
                AuthError::invalid("not good")
            );
        }
        assert_eq!(calls(), 1, "the refusal is remembered");
        now.store(1_010_000, Ordering::Relaxed);
        assert!(v.verify("bad").await.is_err());
        assert_eq!(calls(), 2, "for 10 s");
        // Not the server's own failures, nor unknown keys.
        let r = Refusals::new(Duration::from_secs(10), 10, 1 << 20);
        r.remember(key(1), &AuthError::unavailable("down"), 0);
        r.remember(key(2), &AuthError::UnknownKey { kid: None }, 0);
        r.remember(key(3), &AuthError::Expired, 0);
        assert_eq!(r.len(), 1);
        assert_eq!(r.get(&key(3), 0), Some(AuthError::Expired));
        assert!(r.bytes() < ENTRY_OVERHEAD + 64);
    }
}
