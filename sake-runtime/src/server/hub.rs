//! What the server remembers of handshake sessions besides their signed ids: resource
//! subscriptions, `logging/setLevel`, and each session's standalone GET stream.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use crate::protocol::types::LoggingLevel;

/// Why a subscription was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SubscribeRefused {
    /// The server tracks subscriptions of as many sessions as it may.
    TooManySessions,
    /// The session holds this many subscriptions already.
    TooManyForSession(usize),
}

/// A session's `logging/setLevel`, kept until its session could no longer be used.
#[derive(Clone, Copy, Debug)]
struct LevelRecord {
    level: LoggingLevel,
    set: Instant,
    expires: Instant,
}

/// The handshake sessions' records kept in this process.
#[derive(Debug)]
pub(crate) struct Hub {
    /// `resources/subscribe` of legacy sessions, by session id.
    subscriptions: Mutex<HashMap<String, HashSet<String>>>,
    /// `logging/setLevel` of legacy sessions, by session id, for clients that keep sending
    /// the session id of `initialize` rather than the re-minted one that carries the level.
    log_levels: Mutex<HashMap<String, LevelRecord>>,
    max_sessions: usize,
    max_per_session: usize,
    /// Each legacy session's standalone GET stream: its generation and the token that ends
    /// it. A newer stream replaces (ends) an older one; DELETE ends it.
    get_streams: Mutex<HashMap<String, (u64, CancellationToken)>>,
    next_generation: std::sync::atomic::AtomicU64,
}

impl Hub {
    pub fn new(max_sessions: usize, max_per_session: usize) -> Arc<Hub> {
        Arc::new(Hub {
            subscriptions: Mutex::new(HashMap::new()),
            log_levels: Mutex::new(HashMap::new()),
            max_sessions,
            max_per_session,
            get_streams: Mutex::new(HashMap::new()),
            next_generation: std::sync::atomic::AtomicU64::new(1),
        })
    }

    /// Records a legacy session's subscription; refused when too many sessions subscribe,
    /// or this session holds too many subscriptions already.
    pub fn subscribe(&self, sid: &str, uri: &str) -> Result<(), SubscribeRefused> {
        let Ok(mut subs) = self.subscriptions.lock() else {
            return Err(SubscribeRefused::TooManySessions);
        };
        if !subs.contains_key(sid) && subs.len() >= self.max_sessions {
            return Err(SubscribeRefused::TooManySessions);
        }
        let set = subs.entry(sid.to_owned()).or_default();
        if !set.contains(uri) && set.len() >= self.max_per_session {
            return Err(SubscribeRefused::TooManyForSession(self.max_per_session));
        }
        set.insert(uri.to_owned());
        Ok(())
    }

    pub fn unsubscribe(&self, sid: &str, uri: &str) {
        if let Ok(mut subs) = self.subscriptions.lock()
            && let Some(set) = subs.get_mut(sid)
        {
            set.remove(uri);
            if set.is_empty() {
                subs.remove(sid);
            }
        }
    }

    pub fn is_subscribed(&self, sid: &str, uri: &str) -> bool {
        self.subscriptions
            .lock()
            .map(|s| s.get(sid).is_some_and(|set| set.contains(uri)))
            .unwrap_or(false)
    }

    /// Records a legacy session's log level until `expires` (when its session id can no
    /// longer be used). At most `max_sessions` are kept: when full, expired records go
    /// first, then the least recently set one (its client still has the level in the
    /// re-minted session id; only a client that keeps its first id loses it).
    pub fn set_log_level(&self, sid: &str, level: LoggingLevel, expires: Instant) {
        let Ok(mut levels) = self.log_levels.lock() else {
            return;
        };
        let now = Instant::now();
        if !levels.contains_key(sid) && levels.len() >= self.max_sessions {
            levels.retain(|_, r| r.expires > now);
            if levels.len() >= self.max_sessions
                && let Some(oldest) = levels
                    .iter()
                    .min_by_key(|(_, r)| r.set)
                    .map(|(k, _)| k.clone())
            {
                levels.remove(&oldest);
            }
        }
        if self.max_sessions > 0 {
            levels.insert(
                sid.to_owned(),
                LevelRecord {
                    level,
                    set: now,
                    expires,
                },
            );
        }
    }

    /// The log level a legacy session set in this process, if any and not expired.
    pub fn log_level(&self, sid: &str) -> Option<LoggingLevel> {
        let levels = self.log_levels.lock().ok()?;
        let r = levels.get(sid)?;
        (r.expires > Instant::now()).then_some(r.level)
    }

    /// Forgets a session (DELETE) and ends its GET stream.
    pub fn end_session(&self, sid: &str) {
        if let Ok(mut s) = self.subscriptions.lock() {
            s.remove(sid);
        }
        if let Ok(mut l) = self.log_levels.lock() {
            l.remove(sid);
        }
        if let Ok(mut g) = self.get_streams.lock()
            && let Some((_, token)) = g.remove(sid)
        {
            token.cancel();
        }
    }

    /// Claims the session's standalone stream: its generation and the token that fires when
    /// it must end. The previous stream, if any, ends now.
    pub fn claim_get_stream(&self, sid: &str) -> (u64, CancellationToken) {
        let generation = self
            .next_generation
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let token = CancellationToken::new();
        if let Ok(mut g) = self.get_streams.lock()
            && let Some((_, previous)) = g.insert(sid.to_owned(), (generation, token.clone()))
        {
            previous.cancel();
        }
        (generation, token)
    }

    pub fn release_get_stream(&self, sid: &str, generation: u64) {
        if let Ok(mut g) = self.get_streams.lock()
            && g.get(sid)
                .is_some_and(|(current, _)| *current == generation)
        {
            g.remove(sid);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_levels_are_kept_per_session_bounded_and_forgotten() {
        let hub = Hub::new(2, 8);
        let later = Instant::now() + std::time::Duration::from_secs(3600);
        hub.set_log_level("a", LoggingLevel::Warning, later);
        hub.set_log_level("b", LoggingLevel::Error, later);
        hub.set_log_level("a", LoggingLevel::Debug, later);
        assert_eq!(hub.log_level("a"), Some(LoggingLevel::Debug));
        // Full: a new session's level still counts; the least recently set one goes.
        hub.set_log_level("c", LoggingLevel::Info, later);
        assert_eq!(hub.log_level("c"), Some(LoggingLevel::Info));
        assert_eq!(hub.log_level("b"), None);
        assert_eq!(hub.log_level("a"), Some(LoggingLevel::Debug));
        hub.end_session("a");
        assert_eq!(hub.log_level("a"), None);
    }

    #[test]
    fn expired_log_levels_are_not_used_and_leave_first() {
        let hub = Hub::new(2, 8);
        let later = Instant::now() + std::time::Duration::from_secs(3600);
        hub.set_log_level("old", LoggingLevel::Error, Instant::now());
        assert_eq!(
            hub.log_level("old"),
            None,
            "its session can no longer be used"
        );
        hub.set_log_level("a", LoggingLevel::Warning, later);
        // Full: the expired record leaves, not the live one set after it.
        hub.set_log_level("b", LoggingLevel::Info, later);
        assert_eq!(hub.log_level("a"), Some(LoggingLevel::Warning));
        assert_eq!(hub.log_level("b"), Some(LoggingLevel::Info));
        assert_eq!(hub.log_levels.lock().unwrap().len(), 2);
        // With no room at all, nothing is kept.
        let none = Hub::new(0, 8);
        none.set_log_level("a", LoggingLevel::Info, later);
        assert_eq!(none.log_level("a"), None);
    }

    #[test]
    fn a_get_stream_ends_when_replaced_or_its_session_ends() {
        let hub = Hub::new(8, 8);
        let (first, t1) = hub.claim_get_stream("s");
        let (second, t2) = hub.claim_get_stream("s");
        assert!(t1.is_cancelled() && !t2.is_cancelled());
        // The replaced stream's release leaves the current one alone.
        hub.release_get_stream("s", first);
        hub.end_session("s");
        assert!(t2.is_cancelled());
        hub.release_get_stream("s", second);
        let (_, other) = hub.claim_get_stream("t");
        hub.end_session("s");
        assert!(!other.is_cancelled());
    }

    #[test]
    fn subscriptions_are_bounded_per_session() {
        let hub = Hub::new(2, 2);
        assert_eq!(hub.subscribe("s", "a://1"), Ok(()));
        assert_eq!(hub.subscribe("s", "a://2"), Ok(()));
        assert_eq!(hub.subscribe("s", "a://2"), Ok(()));
        assert_eq!(
            hub.subscribe("s", "a://3"),
            Err(SubscribeRefused::TooManyForSession(2))
        );
        hub.unsubscribe("s", "a://1");
        assert_eq!(hub.subscribe("s", "a://3"), Ok(()));
        assert_eq!(hub.subscribe("t", "a://1"), Ok(()));
        assert_eq!(
            hub.subscribe("u", "a://1"),
            Err(SubscribeRefused::TooManySessions)
        );
    }
}
