//! Shares of a limited resource (request slots, streams, bodies being read) held per key: a
//! session, a caller (principal, or network address when anonymous). A share is a guard;
//! dropping it gives the units back. The map holds only keys with units out, so it is bounded
//! by the global limit it sits under.
//!
//! Keys are 64-bit hashes under the process's random hash key: taking a share allocates
//! nothing, and no client can choose names that collide.

use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hash, Hasher, RandomState};
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// Whose share: a hash made by [`Keys`] (never 0, so that an `Option<Key>` is no bigger).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Key(NonZeroU64);

/// Hashes a [`Key`] as itself: it already is a hash under the process's random key, so
/// hashing it again would only cost time. (The same for any `u64` that already is one, such
/// as the keys of `server/session.rs`'s cache of verified tokens.)
#[derive(Default)]
pub(crate) struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only `write_u64` is reached (`Key` hashes its `u64`); fold anything else in.
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// Makes [`Key`]s, under a hash key of its own.
#[derive(Debug, Default)]
pub(crate) struct Keys(RandomState);

impl Keys {
    /// The key of `what` (a tag and a name, so that kinds of names never meet).
    pub fn of(&self, what: impl Hash) -> Key {
        let hash = self.0.hash_one(what);
        Key(NonZeroU64::new(hash).unwrap_or(NonZeroU64::MIN))
    }
}

pub(crate) use crate::limits::client_network;

/// Units out per key, and the bytes that go with them.
#[derive(Debug, Default)]
pub(crate) struct Quotas {
    out: Mutex<HashMap<Key, Out, BuildHasherDefault<KeyHasher>>>,
}

/// What one key has out.
#[derive(Clone, Copy, Debug, Default)]
struct Out {
    units: usize,
    bytes: usize,
}

/// `n` units and `bytes` bytes of one key, and as many units of a second key taken with them
/// (a session's, with its client's); given back on drop, under one lock.
#[derive(Debug)]
pub(crate) struct Share {
    quotas: Arc<Quotas>,
    key: Key,
    n: usize,
    bytes: usize,
    second: Option<Key>,
}

/// Which bound refused, and what its key holds of it: the key's units or bytes, or the second
/// key's units.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    Units(usize),
    Bytes(usize),
    Second(usize),
}

impl Quotas {
    /// `n` more units for `key`, unless that would put it over `limit`; `Err` carries how many
    /// it holds.
    pub fn take(self: &Arc<Self>, key: Key, n: usize, limit: usize) -> Result<Share, usize> {
        self.take_with_bytes(key, (n, limit), (0, usize::MAX))
            .map_err(|r| match r {
                Refused::Units(held) | Refused::Bytes(held) | Refused::Second(held) => held,
            })
    }

    /// `units.0` more units and `bytes.0` more bytes for `key`, unless that would put it over
    /// `units.1` or `bytes.1` — one lock for both.
    pub fn take_with_bytes(
        self: &Arc<Self>,
        key: Key,
        units: (usize, usize),
        bytes: (usize, usize),
    ) -> Result<Share, Refused> {
        self.take_with_second(key, units, bytes, None)
    }

    /// As [`take_with_bytes`](Quotas::take_with_bytes), and as many units for the key
    /// `second.0` too, unless that would put it over `second.1` (checked first) — all under
    /// one lock, and given back under one (a request in a session: the session's slot and its
    /// client's).
    pub fn take_with_second(
        self: &Arc<Self>,
        key: Key,
        units: (usize, usize),
        bytes: (usize, usize),
        second: Option<(Key, usize)>,
    ) -> Result<Share, Refused> {
        let mut out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((key, limit)) = second {
            let held = out.get(&key).map_or(0, |o| o.units);
            if held.saturating_add(units.0) > limit {
                return Err(Refused::Second(held));
            }
        }
        let held = out.entry(key).or_default();
        let refused = if held.units.saturating_add(units.0) > units.1 {
            Some(Refused::Units(held.units))
        } else if held.bytes.saturating_add(bytes.0) > bytes.1 {
            Some(Refused::Bytes(held.bytes))
        } else {
            None
        };
        if let Some(refused) = refused {
            if held.units == 0 && held.bytes == 0 {
                out.remove(&key);
            }
            return Err(refused);
        }
        held.units += units.0;
        held.bytes += bytes.0;
        let second = second.map(|(key, _)| {
            out.entry(key).or_default().units += units.0;
            key
        });
        Ok(Share {
            quotas: self.clone(),
            key,
            n: units.0,
            bytes: bytes.0,
            second,
        })
    }

    /// The units `key` holds.
    #[cfg(test)]
    pub fn held(&self, key: Key) -> usize {
        let out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        out.get(&key).map_or(0, |o| o.units)
    }

    /// The bytes `key` holds.
    #[cfg(test)]
    pub fn held_bytes(&self, key: Key) -> usize {
        let out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        out.get(&key).map_or(0, |o| o.bytes)
    }

    /// How many keys hold units.
    #[cfg(test)]
    pub fn keys(&self) -> usize {
        self.out
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

impl Share {
    /// `more` bytes in this share, unless that would put its key over `limit`; `Err` carries
    /// how many bytes the key holds.
    pub fn grow_bytes(&mut self, more: usize, limit: usize) -> Result<(), usize> {
        let mut out = self
            .quotas
            .out
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let held = out.entry(self.key).or_default();
        if held.bytes.saturating_add(more) > limit {
            return Err(held.bytes);
        }
        held.bytes += more;
        self.bytes += more;
        Ok(())
    }
}

impl Drop for Share {
    fn drop(&mut self) {
        let mut out = self
            .quotas
            .out
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        give_back(&mut out, self.key, self.n, self.bytes);
        if let Some(key) = self.second {
            give_back(&mut out, key, self.n, 0);
        }
    }
}

/// `n` units and `bytes` bytes back from `key`, forgotten once it holds nothing.
fn give_back(
    out: &mut HashMap<Key, Out, BuildHasherDefault<KeyHasher>>,
    key: Key,
    n: usize,
    bytes: usize,
) {
    if let Some(held) = out.get_mut(&key) {
        held.units = held.units.saturating_sub(n);
        held.bytes = held.bytes.saturating_sub(bytes);
        if held.units == 0 && held.bytes == 0 {
            out.remove(&key);
        }
    }
}

/// Units of one budget everyone draws from (bytes in flight, running requests, open
/// streams), counted without a lock.
#[derive(Debug)]
pub(crate) struct Pool {
    used: AtomicUsize,
    limit: usize,
}

/// Units drawn from a [`Pool`]; given back on drop.
#[derive(Debug)]
pub(crate) struct Drawn {
    pool: Arc<Pool>,
    n: usize,
}

impl Pool {
    pub fn new(limit: usize) -> Pool {
        Pool {
            used: AtomicUsize::new(0),
            limit,
        }
    }

    /// The most units it gives out.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// `n` units, unless that would put the pool over its limit.
    pub fn draw(self: &Arc<Self>, n: usize) -> Option<Drawn> {
        self.add(n).then(|| Drawn {
            pool: self.clone(),
            n,
        })
    }

    fn add(&self, n: usize) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(n).filter(|&u| u <= self.limit)
            })
            .is_ok()
    }

    /// The units given out.
    #[cfg(test)]
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Acquire)
    }
}

impl Drawn {
    /// `more` units, unless that would put the pool over its limit.
    pub fn grow(&mut self, more: usize) -> bool {
        let ok = self.pool.add(more);
        if ok {
            self.n += more;
        }
        ok
    }
}

impl Drop for Drawn {
    fn drop(&mut self) {
        self.pool.used.fetch_sub(self.n, Ordering::AcqRel);
    }
}

/// Bytes of a client's request in flight before it runs (a body arriving): in the client's
/// share (no units: a request slot counts requests) and in everyone's pool.
#[derive(Debug)]
pub(crate) struct Flight {
    share: Share,
    drawn: Drawn,
}

/// Which budget refused bytes: the client's (what it holds), or everyone's.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Over {
    Own(usize),
    All,
}

impl Flight {
    /// `bytes` for `key` (at most `limit` for it, with what its request slots hold) and of
    /// `pool`.
    pub fn take(
        quotas: &Arc<Quotas>,
        pool: &Arc<Pool>,
        key: Key,
        bytes: usize,
        limit: usize,
    ) -> Result<Flight, Over> {
        let share = quotas
            .take_with_bytes(key, (0, usize::MAX), (bytes, limit))
            .map_err(|r| match r {
                Refused::Units(held) | Refused::Bytes(held) | Refused::Second(held) => {
                    Over::Own(held)
                }
            })?;
        let drawn = pool.draw(bytes).ok_or(Over::All)?;
        Ok(Flight { share, drawn })
    }

    /// Grows to `total` bytes (never shrinks).
    pub fn grow_to(&mut self, total: usize, limit: usize) -> Result<(), Over> {
        let more = total.saturating_sub(self.share.bytes);
        if more == 0 {
            return Ok(());
        }
        if !self.drawn.grow(more) {
            return Err(Over::All);
        }
        self.share.grow_bytes(more, limit).map_err(|held| {
            self.drawn.pool.used.fetch_sub(more, Ordering::AcqRel);
            self.drawn.n -= more;
            Over::Own(held)
        })
    }
}

/// Bytes of state a client made the server keep (a subscription, a listen filter): its share
/// and everyone's, given back together when dropped.
#[derive(Debug)]
pub(crate) struct Held {
    _shares: [Share; 2],
}

impl Held {
    pub fn new(client: Share, all: Share) -> Held {
        Held {
            _shares: [client, all],
        }
    }
}

/// The network address a request came from (HTTP): its records count against it when the
/// caller is anonymous. `key` is its quota key (`Admission::address_key`) when a transport made
/// it once for the connection, rather than for every request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PeerAddr {
    pub ip: std::net::IpAddr,
    pub key: Option<Key>,
}

impl PeerAddr {
    /// An address whose quota key is made when asked for.
    pub(crate) fn new(ip: std::net::IpAddr) -> PeerAddr {
        PeerAddr { ip, key: None }
    }
}

/// Held while requests run or a stream is open: a share of the global budget and of the
/// caller's, with the session's (and, for requests, of the bytes in flight).
#[derive(Debug)]
pub(crate) struct Slot {
    _running: Drawn,
    _share: Share,
    _bytes: Option<Drawn>,
}

impl Slot {
    pub(crate) fn new(running: Drawn, share: Share, bytes: Option<Drawn>) -> Slot {
        Slot {
            _running: running,
            _share: share,
            _bytes: bytes,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ipv6_client_is_its_network() {
        let net = |ip: &str, prefix| client_network(ip.parse().unwrap(), prefix).to_string();
        assert_eq!(net("2001:db8:7:1::1", 64), "2001:db8:7:1::");
        assert_eq!(net("2001:db8:7:1:ffff:1:2:3", 64), "2001:db8:7:1::");
        assert_eq!(net("2001:db8:7:2::1", 64), "2001:db8:7:2::");
        assert_eq!(net("2001:db8:7:1::1", 48), "2001:db8:7::");
        assert_eq!(net("2001:db8:7:1::1", 128), "2001:db8:7:1::1");
        assert_eq!(net("::ffff:192.0.2.7", 64), "192.0.2.7");
        assert_eq!(net("192.0.2.7", 64), "192.0.2.7");
    }

    #[test]
    fn bytes_count_for_their_key_with_its_units_and_for_everyone() {
        let keys = Keys::default();
        let (ka, kb) = (keys.of("a"), keys.of("b"));
        let q = Arc::new(Quotas::default());
        let pool = Arc::new(Pool::new(10));
        // A request slot's share: a unit and its bytes, under one lock.
        let slot = q.take_with_bytes(ka, (1, 2), (3, 6)).unwrap();
        assert_eq!(
            q.take_with_bytes(ka, (2, 2), (0, 6)).unwrap_err(),
            Refused::Units(1)
        );
        assert_eq!(
            q.take_with_bytes(ka, (1, 2), (4, 6)).unwrap_err(),
            Refused::Bytes(3)
        );
        // A body arriving: bytes only, counted with the slot's.
        let mut a = Flight::take(&q, &pool, ka, 1, 6).unwrap();
        assert_eq!(Flight::take(&q, &pool, ka, 3, 6).unwrap_err(), Over::Own(4));
        assert_eq!(a.grow_to(4, 6), Err(Over::Own(4)), "over the key's limit");
        assert_eq!((q.held(ka), q.held_bytes(ka), pool.used()), (1, 4, 1));
        a.grow_to(3, 6).unwrap();
        a.grow_to(2, 6).unwrap();
        assert_eq!((q.held_bytes(ka), pool.used()), (6, 3));
        let b = Flight::take(&q, &pool, kb, 6, 6).unwrap();
        assert_eq!(Flight::take(&q, &pool, kb, 1, 6).unwrap_err(), Over::Own(6));
        drop(b);
        let b = Flight::take(&q, &pool, kb, 5, 6).unwrap();
        let kc = keys.of("c");
        assert_eq!(Flight::take(&q, &pool, kc, 3, 6).unwrap_err(), Over::All);
        assert_eq!(
            (q.held_bytes(kc), q.keys()),
            (0, 2),
            "a refusal by the pool leaves the key's count as it was"
        );
        let mut c = Flight::take(&q, &pool, kc, 2, 6).unwrap();
        assert_eq!(c.grow_to(3, 6), Err(Over::All), "everyone's pool is spent");
        assert_eq!((q.held_bytes(kc), pool.used()), (2, 10));
        drop((a, slot, c));
        assert_eq!((q.held_bytes(ka), pool.used()), (0, 5));
        drop(b);
        assert_eq!((q.keys(), pool.used()), (0, 0));
    }

    #[test]
    fn a_second_key_is_taken_and_given_back_with_the_first() {
        let keys = Keys::default();
        let (client, session, other) = (
            keys.of(("c", "a")),
            keys.of(("s", "1")),
            keys.of(("s", "2")),
        );
        let q = Arc::new(Quotas::default());
        let a = q
            .take_with_second(client, (1, 3), (5, 10), Some((session, 1)))
            .unwrap();
        assert_eq!(
            (q.held(client), q.held_bytes(client), q.held(session)),
            (1, 5, 1)
        );
        // The second key's bound is checked first; a refusal leaves nothing behind.
        assert_eq!(
            q.take_with_second(client, (1, 3), (1, 10), Some((session, 1)))
                .unwrap_err(),
            Refused::Second(1)
        );
        assert_eq!(
            q.take_with_second(client, (1, 3), (6, 10), Some((other, 1)))
                .unwrap_err(),
            Refused::Bytes(5)
        );
        assert_eq!((q.held(client), q.held(other), q.keys()), (1, 0, 2));
        let b = q
            .take_with_second(client, (2, 3), (0, 10), Some((other, 2)))
            .unwrap();
        assert_eq!(
            q.take_with_second(client, (1, 3), (0, 10), None)
                .unwrap_err(),
            Refused::Units(3)
        );
        drop(a);
        assert_eq!(
            (q.held(client), q.held_bytes(client), q.held(session)),
            (2, 0, 0)
        );
        drop(b);
        assert_eq!(q.keys(), 0, "both keys are forgotten with their last units");
    }

    #[test]
    fn shares_are_bounded_per_key_and_given_back() {
        let keys = Keys::default();
        let (ka, kb) = (keys.of(("c", "a")), keys.of(("c", "b")));
        assert_ne!(ka, keys.of(("s", "a")), "tags keep kinds of names apart");
        let q = Arc::new(Quotas::default());
        let a = q.take(ka, 2, 3).unwrap();
        assert_eq!(q.take(ka, 2, 3).unwrap_err(), 2);
        let b = q.take(kb, 3, 3).unwrap();
        let a2 = q.take(ka, 1, 3).unwrap();
        assert_eq!((q.held(ka), q.held(kb), q.keys()), (3, 3, 2));
        drop(a);
        assert_eq!(q.held(ka), 1);
        drop((a2, b));
        assert_eq!(q.keys(), 0, "a key with nothing out is forgotten");
        assert_eq!(
            q.take(ka, 4, 3).unwrap_err(),
            0,
            "more than the limit at once"
        );
        assert_eq!(q.keys(), 0, "a refused key leaves nothing behind");
    }
}
