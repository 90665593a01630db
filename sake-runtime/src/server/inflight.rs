//! Requests in flight that a client may cancel by id (`notifications/cancelled`): legacy
//! sessions over HTTP, and stdio.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::{Arc, Mutex};

use tokio_util::sync::CancellationToken;

use crate::protocol::jsonrpc::RequestId;

/// The cancellation tokens of running requests, by (session or connection, request id).
///
/// A scope is kept as its hash under the process's random key (a request registers without
/// copying its session's id; two scopes meet only if 64-bit keyed hashes collide).
#[derive(Debug, Default)]
pub(crate) struct Inflight {
    running: Mutex<HashMap<(u64, RequestId), CancellationToken>>,
    scopes: RandomState,
}

/// Where a request registers: its scope's hash and its id.
pub(crate) struct InflightKey((u64, RequestId));

/// Removes its entry when the request ends.
pub(crate) struct InflightGuard {
    inflight: Arc<Inflight>,
    key: (u64, RequestId),
}

impl Drop for InflightGuard {
    fn drop(&mut self) {
        if let Ok(mut r) = self.inflight.running.lock() {
            r.remove(&self.key);
        }
    }
}

impl Inflight {
    fn scope(&self, scope: &str) -> u64 {
        self.scopes.hash_one(scope)
    }

    /// The key a request of `scope` registers under.
    pub fn key(&self, scope: &str, id: &RequestId) -> InflightKey {
        InflightKey((self.scope(scope), id.clone()))
    }

    /// Registers a request; its token fires when the client cancels it.
    pub fn register(self: &Arc<Self>, key: InflightKey, token: CancellationToken) -> InflightGuard {
        let InflightKey(key) = key;
        if let Ok(mut r) = self.running.lock() {
            r.insert(key.clone(), token);
        }
        InflightGuard {
            inflight: self.clone(),
            key,
        }
    }

    /// Cancels a request; `false` if it is not running (finished, or never was).
    pub fn cancel(&self, scope: &str, id: &RequestId) -> bool {
        let token = self
            .running
            .lock()
            .ok()
            .and_then(|mut r| r.remove(&(self.scope(scope), id.clone())));
        match token {
            Some(t) => {
                t.cancel();
                true
            }
            None => false,
        }
    }

    /// Cancels every request of a scope (a session ended, a connection closed).
    pub fn cancel_scope(&self, scope: &str) {
        let scope = self.scope(scope);
        if let Ok(mut r) = self.running.lock() {
            r.retain(|(s, _), t| {
                if *s == scope {
                    t.cancel();
                    false
                } else {
                    true
                }
            });
        }
    }
}
