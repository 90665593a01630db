//! Records a client can make the server keep — ended sessions, log levels, resource
//! subscriptions, resumable streams — with an expiry each, a bound per owner and a bound in
//! all, evicted by expiry in O(log n): never a scan under a lock.
//!
//! An owner ("bucket") is who made the record: a caller's principal digest, else the network
//! peer. When an owner reaches its bound, its own record that expires soonest makes room; when
//! the whole table is full, the inserting owner's soonest record goes, else the soonest of
//! all. So one client that makes records without end only ever pushes out its own.

use std::collections::{BTreeSet, HashMap};
use std::hash::Hash;
use std::time::Instant;

/// Who made a record.
pub(crate) type Owner = Box<str>;

struct Entry<V> {
    value: V,
    expires: Instant,
    seq: u64,
    owner: Owner,
}

/// A record pushed out to make room.
#[derive(Debug, PartialEq)]
pub(crate) struct Evicted<K, V> {
    pub key: K,
    pub value: V,
    pub owner: Owner,
}

/// Expiring records by key, bounded per owner and in all.
pub(crate) struct Records<K, V> {
    entries: HashMap<K, Entry<V>>,
    /// Every record by (expiry, insertion order).
    by_expiry: BTreeSet<(Instant, u64, K)>,
    /// Each owner's records by (expiry, insertion order).
    owners: HashMap<Owner, BTreeSet<(Instant, u64, K)>>,
    next: u64,
    max_total: usize,
    max_per_owner: usize,
}

impl<K, V> std::fmt::Debug for Records<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Records")
            .field("len", &self.entries.len())
            .field("owners", &self.owners.len())
            .field("max_total", &self.max_total)
            .field("max_per_owner", &self.max_per_owner)
            .finish()
    }
}

impl<K: Clone + Eq + Hash + Ord, V> Records<K, V> {
    /// A table of at most `max_total` records, `max_per_owner` of them by one owner.
    pub fn new(max_total: usize, max_per_owner: usize) -> Self {
        Records {
            entries: HashMap::new(),
            by_expiry: BTreeSet::new(),
            owners: HashMap::new(),
            next: 0,
            max_total: max_total.max(1),
            max_per_owner: max_per_owner.max(1),
        }
    }

    /// How many records are kept (expired ones not yet dropped included).
    #[cfg_attr(not(test), allow(dead_code))]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// When the record that expires first expires (an expired one not yet dropped
    /// included).
    pub fn soonest(&self) -> Option<Instant> {
        self.by_expiry.first().map(|(at, _, _)| *at)
    }

    /// The live record of `key`.
    pub fn get<Q>(&self, key: &Q, now: Instant) -> Option<&V>
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.entries
            .get(key)
            .filter(|e| e.expires > now)
            .map(|e| &e.value)
    }

    /// The live record of `key`, to change in place (its expiry and owner stay).
    pub fn get_mut(&mut self, key: &K, now: Instant) -> Option<&mut V> {
        self.entries
            .get_mut(key)
            .filter(|e| e.expires > now)
            .map(|e| &mut e.value)
    }

    /// Who made the record of `key`.
    pub fn owner(&self, key: &K) -> Option<&str> {
        self.entries.get(key).map(|e| &*e.owner)
    }

    /// Whether `key` has a live record.
    pub fn contains<Q>(&self, key: &Q, now: Instant) -> bool
    where
        K: std::borrow::Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.get(key, now).is_some()
    }

    /// Keeps `value` for `key` until `expires`, made by `owner`; replaces an earlier record of
    /// the key. Drops expired records first, then makes room as the module says. Returns the
    /// records evicted to make room (not the expired ones), with their owners: a table whose
    /// records must not be forgotten (ended sessions) keeps what they said another way.
    pub fn insert(
        &mut self,
        key: K,
        value: V,
        expires: Instant,
        owner: &str,
        now: Instant,
    ) -> Vec<Evicted<K, V>> {
        self.purge(now);
        self.remove(&key);
        let mut evicted = Vec::new();
        if self
            .owners
            .get(owner)
            .is_some_and(|set| set.len() >= self.max_per_owner)
            && let Some(k) = self.soonest_of(owner)
            && let Some(e) = self.take(&k)
        {
            evicted.push(e);
        }
        if self.entries.len() >= self.max_total {
            let k = self
                .soonest_of(owner)
                .or_else(|| self.by_expiry.first().map(|(_, _, k)| k.clone()));
            if let Some(e) = k.and_then(|k| self.take(&k)) {
                evicted.push(e);
            }
        }
        let seq = self.next;
        self.next += 1;
        self.by_expiry.insert((expires, seq, key.clone()));
        self.owners
            .entry(owner.into())
            .or_default()
            .insert((expires, seq, key.clone()));
        self.entries.insert(
            key,
            Entry {
                value,
                expires,
                seq,
                owner: owner.into(),
            },
        );
        evicted
    }

    fn soonest_of(&self, owner: &str) -> Option<K> {
        self.owners
            .get(owner)
            .and_then(|set| set.first())
            .map(|(_, _, k)| k.clone())
    }

    /// Forgets `key`; its value, if it had one.
    pub fn remove(&mut self, key: &K) -> Option<V> {
        self.take(key).map(|e| e.value)
    }

    fn take(&mut self, key: &K) -> Option<Evicted<K, V>> {
        let e = self.entries.remove(key)?;
        self.by_expiry.remove(&(e.expires, e.seq, key.clone()));
        if let Some(set) = self.owners.get_mut(&e.owner) {
            set.remove(&(e.expires, e.seq, key.clone()));
            if set.is_empty() {
                self.owners.remove(&e.owner);
            }
        }
        Some(Evicted {
            key: key.clone(),
            value: e.value,
            owner: e.owner,
        })
    }

    /// Drops every record expired at `now`: O(log n) each, and only those.
    pub fn purge(&mut self, now: Instant) -> Vec<(K, V)> {
        let mut gone = Vec::new();
        while let Some((expires, _, key)) = self.by_expiry.first().cloned() {
            if expires > now {
                break;
            }
            if let Some(v) = self.remove(&key) {
                gone.push((key, v));
            }
        }
        gone
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn at(now: Instant, s: u64) -> Instant {
        now + Duration::from_secs(s)
    }

    #[test]
    fn records_expire_and_are_dropped_in_expiry_order() {
        let now = Instant::now();
        let mut r: Records<&str, u32> = Records::new(10, 10);
        r.insert("a", 1, at(now, 10), "x", now);
        r.insert("b", 2, at(now, 5), "x", now);
        assert_eq!(r.get(&"a", now), Some(&1));
        assert_eq!(r.get(&"b", at(now, 5)), None, "expired at its instant");
        let gone = r.purge(at(now, 6));
        assert_eq!(gone, vec![("b", 2)]);
        assert_eq!(r.len(), 1);
        r.insert("a", 3, at(now, 20), "x", now);
        assert_eq!((r.len(), r.get(&"a", at(now, 15))), (1, Some(&3)));
        assert_eq!(r.remove(&"a"), Some(3));
        assert_eq!(r.len(), 0);
        assert!(r.owners.is_empty() && r.by_expiry.is_empty());
    }

    /// One owner that makes records without end pushes out only its own.
    #[test]
    fn an_owner_at_its_bound_makes_room_from_its_own_records() {
        let now = Instant::now();
        let mut r: Records<u32, ()> = Records::new(100, 10);
        r.insert(0, (), at(now, 1), "victim", now);
        for k in 1..10_000 {
            r.insert(k, (), at(now, 1000 + u64::from(k)), "attacker", now);
        }
        assert!(r.contains(&0, now), "the victim's record stays");
        assert_eq!(r.len(), 11);
        assert_eq!(r.owners["attacker"].len(), 10);
        // The attacker kept its latest records.
        assert!(r.contains(&9_999, now) && !r.contains(&1, now));
    }

    #[test]
    fn a_full_table_makes_room_from_the_inserting_owner_first() {
        let now = Instant::now();
        let mut r: Records<u32, ()> = Records::new(4, 4);
        r.insert(1, (), at(now, 1), "a", now);
        r.insert(2, (), at(now, 50), "b", now);
        r.insert(3, (), at(now, 60), "b", now);
        r.insert(4, (), at(now, 70), "b", now);
        // Full: b's soonest goes, not a's (which expires sooner).
        let evicted = r.insert(5, (), at(now, 80), "b", now);
        assert_eq!(evicted.iter().map(|e| e.key).collect::<Vec<_>>(), vec![2]);
        assert!(r.contains(&1, now));
        // A new owner in a full table: the soonest of all goes.
        let evicted = r.insert(6, (), at(now, 90), "c", now);
        assert_eq!(
            evicted,
            vec![Evicted {
                key: 1,
                value: (),
                owner: "a".into()
            }]
        );
    }
}
