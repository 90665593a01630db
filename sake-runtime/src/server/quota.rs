//! Shares of a limited resource (request slots, bodies being read) held per key: a session, a
//! caller (principal, or network address when anonymous). A share is a guard; dropping it gives
//! the units back. The map holds only keys with units out, so it is bounded by the global
//! limit it sits under.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// Units out per key.
#[derive(Debug, Default)]
pub(crate) struct Quotas {
    out: Mutex<HashMap<Box<str>, usize>>,
}

/// `n` units of one key; given back on drop.
#[derive(Debug)]
pub(crate) struct Share {
    quotas: Arc<Quotas>,
    key: Box<str>,
    n: usize,
}

impl Quotas {
    /// `n` more units for `key`, unless that would put it over `limit`; `Err` carries how many
    /// it holds.
    pub fn take(self: &Arc<Self>, key: &str, n: usize, limit: usize) -> Result<Share, usize> {
        let mut out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        let held = out.get(key).copied().unwrap_or(0);
        if held.saturating_add(n) > limit {
            return Err(held);
        }
        out.insert(key.into(), held + n);
        Ok(Share {
            quotas: self.clone(),
            key: key.into(),
            n,
        })
    }

    /// The units `key` holds.
    #[cfg(test)]
    pub fn held(&self, key: &str) -> usize {
        let out = self.out.lock().unwrap_or_else(PoisonError::into_inner);
        out.get(key).copied().unwrap_or(0)
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

impl Drop for Share {
    fn drop(&mut self) {
        let mut out = self
            .quotas
            .out
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(held) = out.get_mut(&*self.key) {
            *held = held.saturating_sub(self.n);
            if *held == 0 {
                out.remove(&*self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_are_bounded_per_key_and_given_back() {
        let q = Arc::new(Quotas::default());
        let a = q.take("a", 2, 3).unwrap();
        assert_eq!(q.take("a", 2, 3).unwrap_err(), 2);
        let b = q.take("b", 3, 3).unwrap();
        let a2 = q.take("a", 1, 3).unwrap();
        assert_eq!((q.held("a"), q.held("b"), q.keys()), (3, 3, 2));
        drop(a);
        assert_eq!(q.held("a"), 1);
        drop((a2, b));
        assert_eq!(q.keys(), 0, "a key with nothing out is forgotten");
        assert_eq!(
            q.take("a", 4, 3).unwrap_err(),
            0,
            "more than the limit at once"
        );
    }
}
