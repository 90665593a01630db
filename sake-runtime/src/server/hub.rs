//! What the server remembers of handshake sessions besides their signed ids: resource
//! subscriptions, `logging/setLevel`, and each session's standalone GET stream.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Instant;

use tokio_util::sync::CancellationToken;

use super::session::Session;
use super::source::Following;
use crate::protocol::types::LoggingLevel;
use crate::quota::Held;
use crate::records::Records;

/// Why a subscription was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SubscribeRefused {
    /// The session holds this many subscriptions already.
    TooManyForSession(usize),
}

/// What a session's subscription to one URI holds.
struct Subscribed {
    /// The bytes it holds of its client's share (`Admission::hold`).
    _held: Held,
    /// A proxied resource's part in its following upstream (`Source::follow`).
    following: Option<Following>,
}

/// The handshake sessions' records kept in this process: each expires with its session and
/// counts against the client that made it (see `records`).
pub(crate) struct Hub {
    /// Itself, for the timer that drops expired subscriptions.
    me: Weak<Hub>,
    /// `resources/subscribe` of handshake sessions, by session id, by URI.
    subscriptions: Mutex<Records<String, HashMap<Box<str>, Subscribed>>>,
    /// When the timer that drops expired subscriptions fires next, if one waits. A
    /// subscription that follows a proxied resource upstream must end with its session, not
    /// when the table is next written to.
    sweep: Mutex<Option<Instant>>,
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
        Arc::new_cyclic(|me| Hub {
            me: me.clone(),
            subscriptions: Mutex::new(Records::new(max_sessions, max_per_client)),
            sweep: Mutex::new(None),
            log_levels: Mutex::new(Records::new(max_sessions, max_per_client)),
            max_per_session,
            get_streams: Mutex::new(HashMap::new()),
            next_generation: std::sync::atomic::AtomicU64::new(1),
        })
    }

    /// Records a session's subscription to `uri` (a resource the server serves: the front
    /// checks), with what it holds: its bytes, and its part in following a proxied resource
    /// upstream, dropped with it (unsubscribed, the session ended or expired, its record
    /// evicted). Refused when the session holds as many as it may. When the table is full, a
    /// record of the same client makes room (see `records`).
    pub fn subscribe(
        &self,
        session: &Session,
        uri: &str,
        held: Held,
        following: Option<Following>,
    ) -> Result<(), SubscribeRefused> {
        let expires = session.expires_at();
        let follows = following.is_some();
        // What goes is dropped after the lock (a part's drop takes its source's lock).
        let mut _replaced = None;
        let _gone = {
            let Ok(mut subs) = self.subscriptions.lock() else {
                return Ok(());
            };
            let now = Instant::now();
            if let Some(set) = subs.get_mut(&session.sid, now) {
                if let Some(kept) = set.get_mut(uri) {
                    // Already held: the new share goes back. A new part replaces the old one
                    // (one holder per session), which may have ended (the upstream ended its
                    // stream): the subscription is followed again.
                    if following.is_some() {
                        _replaced = std::mem::replace(&mut kept.following, following);
                    }
                    return Ok(());
                }
                if set.len() >= self.max_per_session {
                    return Err(SubscribeRefused::TooManyForSession(self.max_per_session));
                }
                set.insert(
                    uri.into(),
                    Subscribed {
                        _held: held,
                        following,
                    },
                );
                Vec::new()
            } else {
                let set = HashMap::from([(
                    Box::<str>::from(uri),
                    Subscribed {
                        _held: held,
                        following,
                    },
                )]);
                subs.insert(session.sid.clone(), set, expires, &session.owner, now)
            }
        };
        if follows {
            self.sweep_at(expires);
        }
        Ok(())
    }

    pub fn unsubscribe(&self, sid: &str, uri: &str) {
        let _gone = {
            let Ok(mut subs) = self.subscriptions.lock() else {
                return;
            };
            let Some(set) = subs.get_mut(&sid.to_owned(), Instant::now()) else {
                return;
            };
            let gone = set.remove(uri);
            if set.is_empty() {
                subs.remove(&sid.to_owned());
            }
            gone
        };
    }

    /// Drops the subscriptions of the sessions expired at `at`, by a timer: one waits at a
    /// time, for the soonest expiry (a sooner one starts another).
    fn sweep_at(&self, at: Instant) {
        let Ok(mut next) = self.sweep.lock() else {
            return;
        };
        if next.is_some_and(|n| n <= at) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        *next = Some(at);
        let me = self.me.clone();
        runtime.spawn(async move {
            tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await;
            if let Some(hub) = me.upgrade() {
                hub.sweep(at);
            }
        });
    }

    /// The timer of `at` fired: the expired subscriptions go, and the timer is set for the
    /// next expiry, if any subscription is left.
    fn sweep(&self, at: Instant) {
        if let Ok(mut next) = self.sweep.lock()
            && *next == Some(at)
        {
            *next = None;
        }
        let (_gone, soonest) = {
            let Ok(mut subs) = self.subscriptions.lock() else {
                return;
            };
            let gone = subs.purge(Instant::now());
            (gone, subs.soonest())
        };
        if let Some(soonest) = soonest {
            self.sweep_at(soonest);
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
        let _gone = self
            .subscriptions
            .lock()
            .ok()
            .and_then(|mut s| s.remove(&sid.to_owned()));
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
        hub.subscribe(&victim, "test://a", held(), None).unwrap();
        for _ in 0..1000 {
            let s = session("attacker");
            hub.set_log_level(&s, LoggingLevel::Debug);
            hub.subscribe(&s, "test://a", held(), None).unwrap();
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
        hub.subscribe(&s, "a://1", take(), None).unwrap();
        hub.subscribe(&s, "a://2", take(), None).unwrap();
        // The same URI again holds nothing more.
        hub.subscribe(&s, "a://2", take(), None).unwrap();
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

    /// A part in following a proxied resource, and what tells when it is dropped.
    fn part() -> (Following, tokio::sync::oneshot::Receiver<()>) {
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        (Following::new(tx), rx)
    }

    fn dropped(rx: &mut tokio::sync::oneshot::Receiver<()>) -> bool {
        matches!(
            rx.try_recv(),
            Err(tokio::sync::oneshot::error::TryRecvError::Closed)
        )
    }

    /// A subscription's part in following a proxied resource goes with it: unsubscribed,
    /// the session ended, or replaced by the part of the same URI subscribed again (one
    /// holder per session).
    #[test]
    fn a_subscription_drops_its_following_when_it_goes() {
        let hub = Hub::new(4, 4, 4);
        let s = session("x");
        let (first, mut first_rx) = part();
        hub.subscribe(&s, "a://1", held(), Some(first)).unwrap();
        let (again, mut again_rx) = part();
        hub.subscribe(&s, "a://1", held(), Some(again)).unwrap();
        assert!(dropped(&mut first_rx) && !dropped(&mut again_rx));
        // Subscribed again without a part (not followed): the held one stays.
        hub.subscribe(&s, "a://1", held(), None).unwrap();
        assert!(!dropped(&mut again_rx));
        hub.unsubscribe(&s.sid, "a://1");
        assert!(dropped(&mut again_rx));
        let (other, mut other_rx) = part();
        hub.subscribe(&s, "a://2", held(), Some(other)).unwrap();
        hub.end_session(&s.sid);
        assert!(dropped(&mut other_rx));
    }

    /// An expired session's part goes when the session expires, by the hub's timer: not
    /// when the table is next written to.
    #[tokio::test]
    async fn an_expired_sessions_following_goes_at_its_expiry() {
        let hub = Hub::new(4, 4, 4);
        let mut short = session("x");
        short.expires = crate::server::session::now_secs() + 1;
        let long = session("y");
        let (soon, mut soon_rx) = part();
        let (later, mut later_rx) = part();
        hub.subscribe(&long, "a://1", held(), Some(later)).unwrap();
        hub.subscribe(&short, "a://1", held(), Some(soon)).unwrap();
        assert!(!dropped(&mut soon_rx));
        tokio::time::timeout(std::time::Duration::from_secs(3), &mut soon_rx)
            .await
            .expect("dropped at the session's expiry")
            .unwrap_err();
        assert!(!dropped(&mut later_rx));
        assert!(hub.is_subscribed(&long.sid, "a://1"));
    }

    #[test]
    fn subscriptions_are_bounded_per_session() {
        let hub = Hub::new(4, 4, 2);
        let s = session("x");
        assert_eq!(hub.subscribe(&s, "a://1", held(), None), Ok(()));
        assert_eq!(hub.subscribe(&s, "a://2", held(), None), Ok(()));
        assert_eq!(hub.subscribe(&s, "a://2", held(), None), Ok(()));
        assert_eq!(
            hub.subscribe(&s, "a://3", held(), None),
            Err(SubscribeRefused::TooManyForSession(2))
        );
        hub.unsubscribe(&s.sid, "a://1");
        assert_eq!(hub.subscribe(&s, "a://3", held(), None), Ok(()));
    }
}
