//! What the server remembers of handshake sessions besides their signed ids: resource
//! subscriptions, `logging/setLevel`, and each session's standalone GET stream.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use super::session::Session;
use crate::protocol::types::LoggingLevel;
use crate::quota::Held;
use crate::records::Records;

/// Why a subscription was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SubscribeRefused {
    /// The session holds this many subscriptions already.
    TooManyForSession(usize),
}

/// The handshake sessions' records kept in this process: each expires with its session and
/// counts against the client that made it (see `records`).
pub(crate) struct Hub {
    /// `resources/subscribe` of handshake sessions, by session id.
    /// Each URI with the bytes it holds of its client's share (`Admission::hold`).
    subscriptions: Mutex<Records<String, HashMap<Box<str>, Held>>>,
    /// `logging/setLevel` of handshake sessions, by session id, for clients that keep sending
    /// the session id of `initialize` rather than the re-minted one that carries the level.
    log_levels: Mutex<Records<String, LoggingLevel>>,
    max_per_session: usize,
    /// Each handshake session's standalone GET stream: its generation and the token that ends
    /// it. A newer stream replaces (ends) an older one; DELETE ends it. Bounded by the open
    /// streams (`max_streams`).
    get_streams: Mutex<HashMap<String, (u64, CancellationToken)>>,
    next_generation: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub")
            .field("max_per_session", &self.max_per_session)
            .finish_non_exhaustive()
    }
}

impl Hub {
    /// Records of at most `max_sessions` sessions, `max_per_client` of them by one client,
    /// each with at most `max_per_session` subscriptions.
    pub fn new(max_sessions: usize, max_per_client: usize, max_per_session: usize) -> Arc<Hub> {
        Arc::new(Hub {
            subscriptions: Mutex::new(Records::new(max_sessions, max_per_client)),
            log_levels: Mutex::new(Records::new(max_sessions, max_per_client)),
            max_per_session,
            get_streams: Mutex::new(HashMap::new()),
            next_generation: std::sync::atomic::AtomicU64::new(1),
        })
    }

    /// Records a session's subscription to `uri` (a resource the server serves: the front
    /// checks). Refused when the session holds as many as it may. When the table is full, a
    /// record of the same client makes room (see `records`).
    pub fn subscribe(
        &self,
        session: &Session,
        uri: &str,
        held: Held,
    ) -> Result<(), SubscribeRefused> {
        let Ok(mut subs) = self.subscriptions.lock() else {
            return Ok(());
        };
        let now = Instant::now();
        if let Some(set) = subs.get_mut(&session.sid, now) {
            if set.contains_key(uri) {
                // Already held: the new share goes back.
                return Ok(());
            }
            if set.len() >= self.max_per_session {
                return Err(SubscribeRefused::TooManyForSession(self.max_per_session));
            }
            set.insert(uri.into(), held);
            return Ok(());
        }
        let set = HashMap::from([(Box::<str>::from(uri), held)]);
        subs.insert(
            session.sid.clone(),
            set,
            session.expires_at(),
            &session.owner,
            now,
        );
        Ok(())
    }

    pub fn unsubscribe(&self, sid: &str, uri: &str) {
        if let Ok(mut subs) = self.subscriptions.lock()
            && let Some(set) = subs.get_mut(&sid.to_owned(), Instant::now())
        {
            set.remove(uri);
            if set.is_empty() {
                subs.remove(&sid.to_owned());
            }
        }
    }

    pub fn is_subscribed(&self, sid: &str, uri: &str) -> bool {
        self.subscriptions
            .lock()
            .map(|s| {
                s.get(sid, Instant::now())
                    .is_some_and(|set| set.contains_key(uri))
            })
            .unwrap_or(false)
    }

    /// Records a session's log level until the session ends.
    pub fn set_log_level(&self, session: &Session, level: LoggingLevel) {
        if let Ok(mut levels) = self.log_levels.lock() {
            let now = Instant::now();
            match levels.get_mut(&session.sid, now) {
                Some(l) => *l = level,
                None => {
                    levels.insert(
                        session.sid.clone(),
                        level,
                        session.expires_at(),
                        &session.owner,
                        now,
                    );
                }
            }
        }
    }

    /// The log level a session set in this process, if any.
    pub fn log_level(&self, sid: &str) -> Option<LoggingLevel> {
        let levels = self.log_levels.lock().ok()?;
        levels.get(sid, Instant::now()).copied()
    }

    /// Forgets a session (DELETE) and ends its GET stream.
    pub fn end_session(&self, sid: &str) {
        if let Ok(mut s) = self.subscriptions.lock() {
            s.remove(&sid.to_owned());
        }
        if let Ok(mut l) = self.log_levels.lock() {
            l.remove(&sid.to_owned());
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
    use crate::protocol::Revision;
    use crate::protocol::types::ClientCapabilities;

    fn session(owner: &str) -> Session {
        let mut s =
            Session::new(Revision::V2025_11_25, ClientCapabilities::default(), None).unwrap();
        s.owner = owner.into();
        s.expires = crate::server::session::now_secs() + 3600;
        s
    }

    #[test]
    fn log_levels_are_kept_per_session_and_forgotten() {
        let hub = Hub::new(8, 8, 8);
        let (a, b) = (session("x"), session("y"));
        hub.set_log_level(&a, LoggingLevel::Warning);
        hub.set_log_level(&b, LoggingLevel::Error);
        hub.set_log_level(&a, LoggingLevel::Debug);
        assert_eq!(hub.log_level(&a.sid), Some(LoggingLevel::Debug));
        assert_eq!(hub.log_level(&b.sid), Some(LoggingLevel::Error));
        hub.end_session(&a.sid);
        assert_eq!(hub.log_level(&a.sid), None);
        // A session past its end keeps no level.
        let mut old = session("x");
        old.expires = crate::server::session::now_secs();
        hub.set_log_level(&old, LoggingLevel::Error);
        assert_eq!(hub.log_level(&old.sid), None);
    }

    /// One client with sessions without end only pushes out its own records.
    #[test]
    fn one_client_pushes_out_only_its_own_records() {
        let hub = Hub::new(100, 10, 8);
        let victim = session("victim");
        hub.set_log_level(&victim, LoggingLevel::Error);
        hub.subscribe(&victim, "test://a", held()).unwrap();
        for _ in 0..1000 {
            let s = session("attacker");
            hub.set_log_level(&s, LoggingLevel::Debug);
            hub.subscribe(&s, "test://a", held()).unwrap();
        }
        assert_eq!(hub.log_level(&victim.sid), Some(LoggingLevel::Error));
        assert!(hub.is_subscribed(&victim.sid, "test://a"));
        assert_eq!(hub.subscriptions.lock().unwrap().len(), 11);
    }

    #[test]
    fn a_get_stream_ends_when_replaced_or_its_session_ends() {
        let hub = Hub::new(8, 8, 8);
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

    /// A share of a budget no test reaches.
    fn held() -> Held {
        let q = std::sync::Arc::new(crate::quota::Quotas::default());
        let k = crate::quota::Keys::default().of("c");
        Held::new(
            q.take(k, 1, usize::MAX).unwrap(),
            q.take(k, 1, usize::MAX).unwrap(),
        )
    }

    #[test]
    fn a_subscription_gives_its_bytes_back_when_it_goes() {
        let hub = Hub::new(4, 4, 4);
        let q = std::sync::Arc::new(crate::quota::Quotas::default());
        let k = crate::quota::Keys::default().of("c");
        let take = || Held::new(q.take(k, 10, 100).unwrap(), q.take(k, 10, 100).unwrap());
        let s = session("x");
        hub.subscribe(&s, "a://1", take()).unwrap();
        hub.subscribe(&s, "a://2", take()).unwrap();
        // The same URI again holds nothing more.
        hub.subscribe(&s, "a://2", take()).unwrap();
        assert_eq!(q.held(k), 40);
        hub.unsubscribe(&s.sid, "a://1");
        assert_eq!(q.held(k), 20);
        hub.end_session(&s.sid);
        assert_eq!(
            q.held(k),
            0,
            "an ended session's subscriptions hold nothing"
        );
    }

    #[test]
    fn subscriptions_are_bounded_per_session() {
        let hub = Hub::new(4, 4, 2);
        let s = session("x");
        assert_eq!(hub.subscribe(&s, "a://1", held()), Ok(()));
        assert_eq!(hub.subscribe(&s, "a://2", held()), Ok(()));
        assert_eq!(hub.subscribe(&s, "a://2", held()), Ok(()));
        assert_eq!(
            hub.subscribe(&s, "a://3", held()),
            Err(SubscribeRefused::TooManyForSession(2))
        );
        hub.unsubscribe(&s.sid, "a://1");
        assert_eq!(hub.subscribe(&s, "a://3", held()), Ok(()));
    }
}
