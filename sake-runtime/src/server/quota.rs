//! Shares of a limited resource (request slots, streams, bodies being read) held per key: a
//! session, a caller (principal, or network address when anonymous). A share is a guard;
//! dropping it gives the units back. The map holds only keys with units out, so it is bounded
//! by the global limit it sits under.
//!
//! Keys are 64-bit hashes under the process's random hash key: taking a share allocates
//! nothing, and no client can choose names that collide.

use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, Hash, Hasher, RandomState};
use std::sync::{Arc, Mutex, PoisonError};

/// Whose share: a hash made by [`Keys`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Key(u64);

/// Hashes a [`Key`] as itself: it already is a hash under the process's random key, so
/// hashing it again would only cost time.
#[derive(Default)]
struct KeyHasher(u64);

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
        Key(self.0.hash_one(what))
    }
}

/// The network `ip` stands for as a client: an IPv4 address as it is (an IPv4-mapped IPv6
/// address as its IPv4 address), an IPv6 address cut to its first `prefix` bits — one
/// subscriber holds a whole /64 and picks addresses in it freely, so counting each /128 apart
/// would give one client as many shares as it likes.
pub(crate) fn client_network(ip: std::net::IpAddr, prefix: u8) -> std::net::IpAddr {
    use std::net::IpAddr;
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let bits = u32::from(prefix.clamp(1, 128));
                let mask = u128::MAX << (128 - bits);
                IpAddr::V6((u128::from(v6) & mask).into())
            }
        },
    }
}

/// Units out per key.
#[derive(Debug, Default)]
pub(crate) struct Quotas {
    out: Mutex<HashMap<Key, usize, BuildHasherDefault<KeyHasher>>>,
}

/// `n` units of one key; given back on drop.
#[derive(Debug)]
pub(crate) struct Share {
    quotas: Arc<Quotas>,
    key: Key,
    n: usize,
}

impl Quotas {
    /// `n` more units for `key`, unless that would put it over `limit`; `Err` carries how many
    /// it holds.
    pub fn take(self: &Arc<Self>, key: Key, n: usize, limit: usize) -> Result<Share, usize> {
        let mut out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        let held = out.entry(key).or_insert(0);
        if held.saturating_add(n) > limit {
            let was = *held;
            if was == 0 {
                out.remove(&key);
            }
            return Err(was);
        }
        *held += n;
        Ok(Share {
            quotas: self.clone(),
            key,
            n,
        })
    }

    /// The units `key` holds.
    #[cfg(test)]
    pub fn held(&self, key: Key) -> usize {
        let out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        out.get(&key).copied().unwrap_or(0)
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

impl Drop for Share {
    fn drop(&mut self) {
        let mut out = self
            .quotas
            .out
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(held) = out.get_mut(&self.key) {
            *held = held.saturating_sub(self.n);
            if *held == 0 {
                out.remove(&self.key);
            }
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
