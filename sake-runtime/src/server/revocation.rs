//! Sign-out reaches what is open: the requests and streams of one signed-in caller running in
//! this process share a cancellation token, cancelled when the caller is signed out
//! (`Service::end_sessions_of`, here or on another replica). A request then ends with a
//! refusal, a `subscriptions/listen` stream with its closing result, a standalone GET stream
//! closes. Entries live only while something of the caller runs: the map is bounded by the
//! request and stream slots.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio_util::sync::CancellationToken;

/// The callers with something running, by principal digest: their token and how many
/// requests and streams hold it.
#[derive(Debug, Default)]
pub(crate) struct Live {
    map: Mutex<HashMap<String, Entry>>,
    /// Numbers entries, so that a watch of a revoked entry leaves a newer one alone.
    next: std::sync::atomic::AtomicU64,
}

#[derive(Debug)]
struct Entry {
    token: CancellationToken,
    holders: usize,
    generation: u64,
}

/// A request's or stream's hold on its caller's token.
#[derive(Debug)]
pub(crate) struct Watch {
    live: Arc<Live>,
    principal: String,
    token: CancellationToken,
    generation: u64,
}

impl Live {
    /// Something of `principal` starts running.
    pub fn watch(self: &Arc<Self>, principal: String) -> Watch {
        let mut map = self.map.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = map.entry(principal.clone()).or_insert_with(|| Entry {
            token: CancellationToken::new(),
            holders: 0,
            generation: self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        });
        entry.holders += 1;
        Watch {
            live: self.clone(),
            principal,
            token: entry.token.clone(),
            generation: entry.generation,
        }
    }

    /// `principal` is signed out: what it has running ends.
    pub fn revoke(&self, principal: &str) {
        let removed = self
            .map
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(principal);
        if let Some(entry) = removed {
            tracing::info!(
                running = entry.holders,
                "a caller was signed out: its requests and streams end"
            );
            entry.token.cancel();
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.map
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

impl Watch {
    /// Completes when the caller is signed out.
    pub async fn revoked(&self) {
        self.token.cancelled().await;
    }

    /// The caller's token.
    #[cfg(test)]
    fn token(&self) -> &CancellationToken {
        &self.token
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let mut map = self.live.map.lock().unwrap_or_else(PoisonError::into_inner);
        // A revoked entry is gone; a newer one of the caller is not ours.
        if let Some(entry) = map.get_mut(&self.principal)
            && entry.generation == self.generation
        {
            entry.holders = entry.holders.saturating_sub(1);
            if entry.holders == 0 {
                map.remove(&self.principal);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sign_out_ends_what_runs_and_entries_go_with_their_last_watch() {
        let live = Arc::new(Live::default());
        let a1 = live.watch("a".into());
        let a2 = live.watch("a".into());
        let b = live.watch("b".into());
        assert_eq!(live.len(), 2);
        drop(a2);
        assert_eq!(live.len(), 2);
        live.revoke("a");
        assert!(a1.token().is_cancelled() && !b.token().is_cancelled());
        assert_eq!(live.len(), 1);
        // A new request of the caller after its sign-out has a fresh token.
        let a3 = live.watch("a".into());
        assert!(!a3.token().is_cancelled());
        drop(a1);
        assert_eq!(
            live.len(),
            2,
            "the revoked watch leaves the new entry alone"
        );
        drop((a3, b));
        assert_eq!(live.len(), 0);
    }
}
