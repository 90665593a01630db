//! Legacy sessions without a session table: the `Mcp-Session-Id` is a signed token carrying
//! everything the server needs to serve the session — the revision, the client's capabilities
//! and name, the log level, and when it was issued. Any replica holding the key serves it.

use std::collections::HashMap;
use std::hash::{BuildHasher, BuildHasherDefault, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use crate::protocol::Revision;
use crate::protocol::types::{ClientCapabilities, Implementation, LoggingLevel};
use crate::quota::{Key, KeyHasher};
use crate::records::Records;
use crate::signing::{Domain, Signer};

/// Seconds since the Unix epoch.
pub(crate) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// What a session token says.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Session {
    /// A random id, stable across re-mints: names the session in ended-session records,
    /// pending server requests and subscriptions.
    #[serde(rename = "i")]
    pub sid: String,
    #[serde(rename = "v", with = "revision_str")]
    pub revision: Revision,
    #[serde(rename = "c", default)]
    pub capabilities: std::sync::Arc<ClientCapabilities>,
    #[serde(rename = "n", default, skip_serializing_if = "Option::is_none")]
    pub client: Option<(String, String)>,
    #[serde(rename = "l", default, skip_serializing_if = "Option::is_none")]
    pub log_level: Option<LoggingLevel>,
    /// When this token was issued (Unix seconds).
    #[serde(rename = "t")]
    pub issued_at: u64,
    /// A digest of the authenticated caller who opened it, when the server names callers.
    #[serde(rename = "p", default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// When the session ends, whatever happens (Unix seconds): fixed when it opens, kept by
    /// every re-minted id. 0 until the first id is minted.
    #[serde(rename = "e", default)]
    pub expires: u64,
    /// Who opened it, for the bounds on what the server keeps per client: the caller's
    /// digest, else the network peer's.
    #[serde(rename = "o", default)]
    pub owner: String,
    /// `client` as an `Implementation`, made when first asked for: a remembered session
    /// shares it with every request that carries it.
    #[serde(skip)]
    info: SharedInfo,
    /// The session's quota key, made once ([`Session::quota_key`]): a remembered session
    /// shares it with every request that carries it.
    #[serde(skip)]
    quota: SharedKey,
}

/// A session's client as an `Implementation`, made once. It is derived from `client`, so it
/// never makes two sessions differ.
#[derive(Clone, Debug, Default)]
struct SharedInfo(std::sync::OnceLock<Option<Arc<Implementation>>>);

impl PartialEq for SharedInfo {
    fn eq(&self, _: &SharedInfo) -> bool {
        true
    }
}

/// A session's quota key, made once. It is derived from `sid`, so it never makes two sessions
/// differ.
#[derive(Clone, Debug, Default)]
struct SharedKey(OnceLock<Key>);

impl PartialEq for SharedKey {
    fn eq(&self, _: &SharedKey) -> bool {
        true
    }
}

mod revision_str {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    use crate::protocol::Revision;

    pub fn serialize<S: Serializer>(r: &Revision, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(r.as_str())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Revision, D::Error> {
        let s = <&str>::deserialize(d)?;
        Revision::parse(s).ok_or_else(|| D::Error::custom("unknown revision"))
    }
}

impl Session {
    /// A new session.
    pub fn new(
        revision: Revision,
        capabilities: ClientCapabilities,
        client: Option<&Implementation>,
    ) -> Option<Session> {
        let mut id = [0u8; 16];
        getrandom::fill(&mut id).ok()?;
        Some(Session {
            sid: base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(id),
            revision,
            capabilities: std::sync::Arc::new(capabilities),
            client: client.map(|c| (c.name.clone(), c.version.clone())),
            log_level: None,
            issued_at: now_secs(),
            principal: None,
            expires: 0,
            owner: String::new(),
            info: SharedInfo::default(),
            quota: SharedKey::default(),
        })
    }

    /// When the session ends, as an `Instant` of this process (a century away for a session
    /// that never expires: stdio's).
    pub fn expires_at(&self) -> Instant {
        let now = Instant::now();
        let left = Duration::from_secs(self.expires.saturating_sub(now_secs()));
        now.checked_add(left)
            .or_else(|| now.checked_add(Duration::from_secs(100 * 365 * 24 * 3600)))
            .unwrap_or(now)
    }

    /// The client's name and version, as an `Implementation` (made once per session).
    pub fn client_info(&self) -> Option<Arc<Implementation>> {
        self.info
            .0
            .get_or_init(|| {
                self.client
                    .as_ref()
                    .map(|(n, v)| Arc::new(Implementation::new(n.clone(), v.clone())))
            })
            .clone()
    }

    /// The key its requests' share of the request slots is counted under: made by `make` from
    /// the session's id the first time (the server's `Admission::session_key`), then the same
    /// for every request that carries this session.
    pub fn quota_key(&self, make: impl FnOnce(&str) -> Key) -> Key {
        *self.quota.0.get_or_init(|| make(&self.sid))
    }
}

/// Why a session id was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// Not signed by this key, or malformed.
    Invalid,
    /// Older than the session lifetime.
    Expired,
    /// Ended with DELETE.
    Ended,
    /// Opened by another authenticated caller.
    Foreign,
}

/// Mints and checks session tokens, and remembers ended sessions for as long as their
/// tokens could live.
#[derive(Debug)]
pub(crate) struct Sessions {
    signer: Signer,
    /// A token older than this is refused.
    pub lifetime: Duration,
    /// A token older than this is replaced by a fresh one on the next response.
    pub refresh_after: Duration,
    /// Sessions ended with DELETE, until they would have expired (the value: when, in Unix
    /// seconds); bounded per owner and in all (see `records`). An end is never forgotten: a
    /// record pushed out to make room becomes a cut-off of its owner.
    ended: Mutex<Records<String, u64>>,
    /// Per owner whose ended sessions did not all fit: every session of theirs opened at or
    /// before this (Unix seconds) is refused, until the last could have expired. One per
    /// owner, bounded in all; one pushed out raises `cut_off_all`.
    cut_offs: Mutex<Records<String, u64>>,
    /// Every session opened at or before this (Unix seconds) is refused: the last resort when
    /// the cut-offs do not fit either. 0: none.
    cut_off_all: std::sync::atomic::AtomicU64,
    /// Callers signed out (`Service::end_sessions_of`), by principal digest: when. Sessions
    /// of theirs opened then or before are refused; kept until the last could have expired.
    /// A sign-out is never forgotten either: one pushed out to make room raises
    /// `signed_out_all`.
    signed_out: Mutex<Records<String, u64>>,
    /// Every signed-in caller's session opened at or before this (Unix seconds) is refused:
    /// what the sign-outs that did not fit said, kept another way (their callers sign in
    /// again; anonymous sessions are not touched). 0: none.
    signed_out_all: std::sync::atomic::AtomicU64,
    /// Tokens whose signature was checked, and what they say. A client sends the same id on
    /// every request of its session, and checking the signature and decoding the payload is
    /// most of what serving a session costs sake. Bounded by [`VERIFIED_CACHE`] entries of at
    /// most [`MAX_CACHED_TOKEN`] bytes (when full, one is forgotten for each new one); expiry
    /// is checked on every request all the same, and ends and sign-outs whenever one was
    /// recorded since the token last passed them (`refusals`). Keyed by a fold of the token's
    /// tail (its MAC: [`Sessions::cache_key`]), a hit counts only if the whole token is the one
    /// remembered.
    verified: Mutex<HashMap<u64, Remembered, BuildHasherDefault<KeyHasher>>>,
    /// The random key of `cache_key`'s fold: nobody outside this process can tell which
    /// tokens' keys would meet.
    cache_seed: u64,
    /// How many times something was recorded that can refuse a session whose signature and
    /// expiry hold: an end, a cut-off, a sign-out (made here or reported by another replica).
    /// Those records only ever stop refusing (they expire), so a remembered token that passed
    /// them when this count was what it is now passes them still, and is not checked again.
    refusals: AtomicU64,
}

/// A token whose signature was checked, and its session.
#[derive(Debug)]
struct Remembered {
    token: Box<[u8]>,
    session: Arc<Session>,
    /// `refusals` as it was before the token last passed the records of ended and signed-out
    /// sessions (`None`: it did not).
    passed: Option<u64>,
}

/// How many verified tokens [`Sessions`] remembers.
const VERIFIED_CACHE: usize = 256;
/// Longer tokens (a client announcing very large capabilities) are verified every time.
const MAX_CACHED_TOKEN: usize = 1024;

impl Sessions {
    pub fn new(
        signer: Signer,
        lifetime: Duration,
        refresh_after: Duration,
        max_ended: usize,
        max_ended_per_owner: usize,
    ) -> Self {
        Sessions {
            signer,
            lifetime,
            refresh_after,
            ended: Mutex::new(Records::new(max_ended, max_ended_per_owner)),
            cut_offs: Mutex::new(Records::new(max_ended, 1)),
            cut_off_all: std::sync::atomic::AtomicU64::new(0),
            signed_out: Mutex::new(Records::new(max_ended, max_ended_per_owner)),
            signed_out_all: std::sync::atomic::AtomicU64::new(0),
            verified: Mutex::new(HashMap::default()),
            cache_seed: RandomState::new().hash_one(0x5e55_u64),
            refusals: AtomicU64::new(0),
        }
    }

    /// The key of a token in the cache of verified tokens: its last 16 bytes (the MAC's, random
    /// to whoever lacks the signing key), folded under `cache_seed`.
    fn cache_key(&self, token: &[u8]) -> u64 {
        let tail = &token[token.len().saturating_sub(16)..];
        let mut bytes = [0u8; 16];
        bytes[16 - tail.len()..].copy_from_slice(tail);
        let (a, b) = bytes.split_at(8);
        let word = |w: &[u8]| u64::from_le_bytes(w.try_into().unwrap_or_default());
        let x = (word(a) ^ self.cache_seed).wrapping_mul(0x9e37_79b9_7f4a_7c15)
            ^ (word(b) ^ self.cache_seed.rotate_left(32)).wrapping_mul(0xc2b2_ae3d_27d4_eb4f);
        x ^ (x >> 32)
    }

    pub fn signer(&self) -> &Signer {
        &self.signer
    }

    /// The token for a session, stamped now. The first one fixes when the session ends
    /// (`session_lifetime` from now); later ones keep it.
    pub fn mint(&self, session: &Session) -> String {
        let mut s = session.clone();
        s.issued_at = now_secs();
        if s.expires == 0 {
            s.expires = s.issued_at.saturating_add(self.lifetime.as_secs());
        }
        let payload = serde_json::to_vec(&s).unwrap_or_default();
        self.signer.sign(Domain::Session, &payload)
    }

    /// `verify_at` now.
    #[cfg(test)]
    pub fn verify(&self, token: impl AsRef<[u8]>) -> Result<Arc<Session>, Refused> {
        self.verify_at(token, now_secs())
    }

    /// Checks a token (the bytes of an `Mcp-Session-Id`) at `now` (Unix seconds, read once
    /// for the request): signed by this key, not expired, not ended. The session is shared
    /// with the cache of verified tokens: a remembered token costs a reference count, not a
    /// copy of the session's strings, and is checked against the records of ended sessions
    /// only when one was recorded since it last passed them.
    pub fn verify_at(&self, token: impl AsRef<[u8]>, now: u64) -> Result<Arc<Session>, Refused> {
        let token = token.as_ref();
        // Read before the records are: an end recorded after this is seen next time.
        let generation = self.refusals.load(Ordering::SeqCst);
        let key = self.cache_key(token);
        let cached = self.verified.lock().ok().and_then(|cache| {
            cache
                .get(&key)
                .filter(|r| *r.token == *token)
                .map(|r| (r.session.clone(), r.passed))
        });
        let hit = cached.is_some();
        let (session, passed) = match cached {
            Some(c) => c,
            None => {
                // A byte that is no visible ASCII fails the signature check.
                let text = std::str::from_utf8(token).map_err(|_| Refused::Invalid)?;
                let payload = self
                    .signer
                    .verify(Domain::Session, text)
                    .ok_or(Refused::Invalid)?;
                let session: Arc<Session> =
                    Arc::new(serde_json::from_slice(&payload).map_err(|_| Refused::Invalid)?);
                (session, None)
            }
        };
        let checked = if session.expires == 0 || now >= session.expires {
            Err(Refused::Expired)
        } else if passed == Some(generation) {
            Ok(())
        } else {
            self.check_records(&session)
        };
        let passes = checked.is_ok().then_some(generation);
        if !hit || (passes.is_some() && passes != passed) {
            self.remember(key, token, &session, passes);
        }
        checked.map(|()| session)
    }

    /// Keeps a token whose signature was checked, with whether it passed the records.
    fn remember(&self, key: u64, token: &[u8], session: &Arc<Session>, passed: Option<u64>) {
        if token.len() > MAX_CACHED_TOKEN {
            return;
        }
        let Ok(mut cache) = self.verified.lock() else {
            return;
        };
        if let Some(r) = cache.get_mut(&key).filter(|r| *r.token == *token) {
            r.passed = passed;
            return;
        }
        // Full: forget one (the map's order is random), so that a server with more live
        // sessions than the cache holds still hits it mostly.
        if cache.len() >= VERIFIED_CACHE
            && !cache.contains_key(&key)
            && let Some(&old) = cache.keys().next()
        {
            cache.remove(&old);
        }
        cache.insert(
            key,
            Remembered {
                token: token.into(),
                session: session.clone(),
                passed,
            },
        );
    }

    /// The records a session whose signature and expiry hold may still be refused by: ended,
    /// cut off with its owner's ended sessions, its caller signed out.
    fn check_records(&self, session: &Session) -> Result<(), Refused> {
        let instant = Instant::now();
        let ended = self.ended.lock().map_err(|_| Refused::Invalid)?;
        if ended.contains(&session.sid, instant) {
            return Err(Refused::Ended);
        }
        drop(ended);
        let opened = self.opened_at(session);
        if opened <= self.cut_off_all.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(Refused::Ended);
        }
        let cut_offs = self.cut_offs.lock().map_err(|_| Refused::Invalid)?;
        if cut_offs
            .get(&session.owner, instant)
            .is_some_and(|&cut| opened <= cut)
        {
            return Err(Refused::Ended);
        }
        drop(cut_offs);
        if let Some(p) = &session.principal {
            if opened
                <= self
                    .signed_out_all
                    .load(std::sync::atomic::Ordering::Relaxed)
            {
                return Err(Refused::Ended);
            }
            let out = self.signed_out.lock().map_err(|_| Refused::Invalid)?;
            if let Some(&at) = out.get(p, instant)
                && opened <= at
            {
                return Err(Refused::Ended);
            }
        }
        Ok(())
    }

    /// When a session opened (Unix seconds): its end, fixed then, less the lifetime.
    fn opened_at(&self, session: &Session) -> u64 {
        session.expires.saturating_sub(self.lifetime.as_secs())
    }

    /// Whether a token of this session should be replaced by a fresh one.
    #[cfg(test)]
    pub fn needs_refresh(&self, session: &Session) -> bool {
        self.needs_refresh_at(session, now_secs())
    }

    /// Whether a token of this session should be replaced by a fresh one, at `now` (Unix
    /// seconds).
    pub fn needs_refresh_at(&self, session: &Session, now: u64) -> bool {
        now.saturating_sub(session.issued_at) >= self.refresh_after.as_secs()
    }

    /// Ends a session: its tokens are refused from now on (in this process), until it would
    /// have expired. O(log n); a client that ends sessions without end pushes out only its own
    /// records.
    /// Returns when its tokens would have expired anyway (Unix seconds).
    pub fn end(&self, session: &Session) -> u64 {
        let until = if session.expires == 0 {
            now_secs().saturating_add(self.lifetime.as_secs())
        } else {
            session.expires
        };
        self.ended_until(&session.sid, &session.owner, until);
        until
    }

    /// Refuses a session's tokens until `until` (Unix seconds): one ended here, or on another
    /// replica.
    pub fn ended_until(&self, sid: &str, owner: &str, until: u64) {
        let now = Instant::now();
        let Some(at) = instant_at(until, now) else {
            return;
        };
        let evicted = match self.ended.lock() {
            Ok(mut ended) => ended.insert(sid.to_owned(), until, at, owner, now),
            Err(_) => return,
        };
        // Never forgotten: an end pushed out (its owner has ended as many sessions as it may
        // be remembered for, or the table is full) becomes its owner's cut-off.
        for e in evicted {
            let opened = e.value.saturating_sub(self.lifetime.as_secs());
            self.cut_off(&e.owner, opened, now);
        }
        // Recorded: remembered tokens are checked against the records again.
        self.refusals.fetch_add(1, Ordering::SeqCst);
    }

    /// Refuses every session of `owner` opened at or before `opened` (Unix seconds).
    fn cut_off(&self, owner: &str, opened: u64, now: Instant) {
        let Ok(mut cut_offs) = self.cut_offs.lock() else {
            return;
        };
        let cut = cut_offs.get(owner, now).map_or(opened, |&c| c.max(opened));
        let Some(until) = instant_at(cut.saturating_add(self.lifetime.as_secs()), now) else {
            return;
        };
        tracing::debug!(
            "an owner's ended sessions do not all fit in the table: its sessions opened until {cut} are refused"
        );
        for e in cut_offs.insert(owner.to_owned(), cut, until, owner, now) {
            // Even the cut-offs do not fit: every session opened until then is refused (their
            // clients start new ones); ended sessions stay ended.
            tracing::warn!(
                "the table of ended sessions is full (Limits::max_tracked_sessions): every session opened until {} is refused",
                e.value
            );
            self.cut_off_all
                .fetch_max(e.value, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// Signs a caller out: the sessions it opened until `at` (Unix seconds) are refused until
    /// `until` (their lifetime after `at`). Returns `until`.
    pub fn sign_out(&self, principal: &str, at: u64) -> u64 {
        let until = at.saturating_add(self.lifetime.as_secs());
        self.signed_out_until(principal, at, until);
        until
    }

    /// Records a sign-out, made here or on another replica.
    pub fn signed_out_until(&self, principal: &str, at: u64, until: u64) {
        let now = Instant::now();
        let Some(expires) = instant_at(until, now) else {
            return;
        };
        let evicted = match self.signed_out.lock() {
            Ok(mut out) => {
                let at = out.get(principal, now).map_or(at, |&a| a.max(at));
                out.insert(principal.to_owned(), at, expires, principal, now)
            }
            Err(_) => return,
        };
        // Never forgotten: a sign-out pushed out of the full table (Limits::max_tracked_sessions)
        // refuses every signed-in session opened until it.
        for e in evicted {
            tracing::warn!(
                "the table of sign-outs is full (Limits::max_tracked_sessions): every signed-in session opened until {} is refused",
                e.value
            );
            self.signed_out_all
                .fetch_max(e.value, std::sync::atomic::Ordering::Relaxed);
        }
        // Recorded: remembered tokens are checked against the records again.
        self.refusals.fetch_add(1, Ordering::SeqCst);
    }
}

/// `until` (Unix seconds) as an `Instant` of this process; `None` once it has passed.
fn instant_at(until: u64, now: Instant) -> Option<Instant> {
    let left = until.checked_sub(now_secs()).filter(|&s| s > 0)?;
    now.checked_add(Duration::from_secs(left))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sessions(lifetime: u64) -> Sessions {
        Sessions::new(
            Signer::new(b"test key test key test key test k").unwrap(),
            Duration::from_secs(lifetime),
            Duration::from_secs(60),
            4,
            4,
        )
    }

    /// Issue 39 (Low): a sign-out pushed out of a full table is not forgotten; the signed-out
    /// caller's session stays refused however many other sign-outs follow.
    #[test]
    fn a_sign_out_pushed_out_of_a_full_table_still_refuses_its_sessions() {
        let s = sessions(3600);
        let now = now_secs();
        let opened = |principal: Option<&str>, ago: u64| {
            let mut session =
                Session::new(Revision::V2025_11_25, ClientCapabilities::default(), None).unwrap();
            session.principal = principal.map(str::to_owned);
            session.expires = now + 3600 - ago;
            s.mint(&session)
        };
        let old = opened(Some("p0"), 200);
        assert!(s.verify(&old).is_ok());
        s.sign_out("p0", now - 100);
        assert_eq!(s.verify(&old), Err(Refused::Ended));
        // Four more sign-outs fill the table of four: p0's record is pushed out.
        for i in 1..=4 {
            s.sign_out(&format!("p{i}"), now - 100);
        }
        assert!(!s.signed_out.lock().unwrap().contains("p0", Instant::now()));
        assert_eq!(s.verify(&old), Err(Refused::Ended));
        // Every signed-in session opened until then is refused; later ones and anonymous
        // ones are not.
        assert_eq!(s.verify(opened(Some("q"), 150)), Err(Refused::Ended));
        assert!(s.verify(opened(Some("q"), 50)).is_ok());
        assert!(s.verify(opened(None, 150)).is_ok());
    }

    #[test]
    fn tokens_round_trip_and_end() {
        let s = sessions(3600);
        let mut session =
            Session::new(Revision::V2025_06_18, ClientCapabilities::default(), None).unwrap();
        session.log_level = Some(LoggingLevel::Warning);
        let token = s.mint(&session);
        let back = s.verify(&token).unwrap();
        assert_eq!(back.sid, session.sid);
        assert_eq!(back.revision, Revision::V2025_06_18);
        assert_eq!(back.log_level, Some(LoggingLevel::Warning));
        assert!(!s.needs_refresh(&back));
        s.end(&back);
        assert_eq!(s.verify(&token), Err(Refused::Ended));
        assert_eq!(s.verify("s1.x.y"), Err(Refused::Invalid));
    }

    /// deploy/nginx.conf hashes the 36 characters after `s1.`: they must depend only on the
    /// session's random id, so that a re-issued token keeps the session on its replica.
    #[test]
    fn re_issued_tokens_keep_their_routing_key() {
        let s = sessions(3600);
        let session =
            Session::new(Revision::V2025_11_25, ClientCapabilities::default(), None).unwrap();
        let first = s.mint(&session);
        let mut changed = session.clone();
        changed.log_level = Some(LoggingLevel::Debug);
        changed.revision = Revision::V2025_03_26;
        changed.issued_at = 0;
        let second = s
            .signer()
            .sign(Domain::Session, &serde_json::to_vec(&changed).unwrap());
        assert!(first.starts_with("s1.") && second.starts_with("s1."));
        assert_eq!(first[3..39], second[3..39]);
        let other =
            Session::new(Revision::V2025_11_25, ClientCapabilities::default(), None).unwrap();
        assert_ne!(s.mint(&other)[3..39], first[3..39]);
    }

    #[test]
    fn old_tokens_expire() {
        let s = sessions(10);
        let mut session =
            Session::new(Revision::V2025_11_25, ClientCapabilities::default(), None).unwrap();
        session.issued_at = now_secs() - 100;
        let payload = serde_json::to_vec(&session).unwrap();
        let token = s.signer().sign(Domain::Session, &payload);
        assert_eq!(s.verify(&token), Err(Refused::Expired));
    }

    /// A token verified once is remembered, but never past its expiry or its end; forged
    /// tokens are never remembered, and the memory is bounded.
    #[test]
    fn remembered_tokens_still_expire_and_end() {
        let s = sessions(3600);
        let session =
            Session::new(Revision::V2025_11_25, ClientCapabilities::default(), None).unwrap();
        let token = s.mint(&session);
        assert_eq!(s.verify(&token).unwrap().sid, session.sid);
        assert_eq!(s.verify(&token).unwrap().sid, session.sid);
        assert!(
            s.verified
                .lock()
                .unwrap()
                .get(&s.cache_key(token.as_bytes()))
                .is_some_and(|r| *r.token == *token.as_bytes() && r.passed == Some(0))
        );
        assert_eq!(s.verify("s1.x.y"), Err(Refused::Invalid));
        // Another payload under the remembered token's MAC: the cache's key (the token's
        // tail) matches, the token does not, and the signature check refuses it.
        let at = token.find('.').unwrap() + 1;
        let other = if token.as_bytes()[at] == b'A' {
            "B"
        } else {
            "A"
        };
        let forged = format!("{}{other}{}", &token[..at], &token[at + 1..]);
        assert_eq!(
            s.cache_key(forged.as_bytes()),
            s.cache_key(token.as_bytes())
        );
        assert_eq!(s.verify(&forged), Err(Refused::Invalid));
        assert_eq!(s.verified.lock().unwrap().len(), 1);
        s.end(&session);
        assert_eq!(s.verify(&token), Err(Refused::Ended));

        let short = sessions(10);
        let mut old =
            Session::new(Revision::V2025_11_25, ClientCapabilities::default(), None).unwrap();
        old.issued_at = now_secs() - 100;
        let token = short
            .signer()
            .sign(Domain::Session, &serde_json::to_vec(&old).unwrap());
        // Remembered while it was valid (as if verified 100 s ago, and past the records since),
        // refused now.
        short.verified.lock().unwrap().insert(
            short.cache_key(token.as_bytes()),
            Remembered {
                token: token.as_bytes().into(),
                session: Arc::new(old),
                passed: Some(0),
            },
        );
        assert_eq!(short.verify(&token), Err(Refused::Expired));

        for _ in 0..(VERIFIED_CACHE + 10) {
            let other =
                Session::new(Revision::V2025_11_25, ClientCapabilities::default(), None).unwrap();
            s.verify(s.mint(&other)).unwrap();
        }
        assert!(s.verified.lock().unwrap().len() <= VERIFIED_CACHE);
    }

    /// A remembered token that passed the records of ended sessions is not checked against them
    /// again until something is recorded; then it is, whatever was recorded: its own end, one
    /// reported by another replica, its caller's sign-out, or a cut-off of every session opened
    /// until then.
    #[test]
    fn a_remembered_token_is_checked_again_after_any_end_or_sign_out() {
        let s = sessions(3600);
        let open = |owner: &str, principal: Option<&str>| {
            let mut session =
                Session::new(Revision::V2025_11_25, ClientCapabilities::default(), None).unwrap();
            session.owner = owner.into();
            session.principal = principal.map(str::to_owned);
            let token = s.mint(&session);
            let verified = s.verify(&token).unwrap();
            (Session::clone(&verified), token)
        };
        let passed = |token: &str| {
            s.verified
                .lock()
                .unwrap()
                .get(&s.cache_key(token.as_bytes()))
                .and_then(|r| r.passed)
        };
        let (a, token_a) = open("a", None);
        let (_, token_b) = open("b", Some("pb"));
        let (_, token_c) = open("c", None);
        assert_eq!(passed(&token_a), Some(0));
        // Another session's end: checked again, still passes, remembered as of now.
        let (other, _) = open("x", None);
        s.end(&other);
        assert!(s.verify(&token_a).is_ok());
        assert_eq!(passed(&token_a), Some(1));
        // Its own end, reported by another replica.
        s.ended_until(&a.sid, &a.owner, a.expires);
        assert_eq!(s.verify(&token_a), Err(Refused::Ended));
        assert_eq!(passed(&token_a), Some(1), "a refused token never passes");
        assert_eq!(s.verify(&token_a), Err(Refused::Ended));
        // Its caller signed out.
        assert!(s.verify(&token_b).is_ok());
        s.sign_out("pb", now_secs());
        assert_eq!(s.verify(&token_b), Err(Refused::Ended));
        // Every session opened until now cut off: owners ending more sessions than the tables
        // (4, 4 per owner) hold push the cut-offs out too.
        assert!(s.verify(&token_c).is_ok());
        for owner in 0..12 {
            for _ in 0..5 {
                let mut ended =
                    Session::new(Revision::V2025_11_25, ClientCapabilities::default(), None)
                        .unwrap();
                ended.owner = format!("attacker{owner}");
                s.end(&ended);
            }
        }
        assert!(s.cut_off_all.load(Ordering::Relaxed) > 0);
        assert_eq!(s.verify(&token_c), Err(Refused::Ended));
    }

    /// A forged token never reaches the cache, whatever its key; a remembered one is found only
    /// by its exact bytes.
    #[test]
    fn only_a_remembered_tokens_exact_bytes_find_it() {
        let s = sessions(3600);
        let session =
            Session::new(Revision::V2025_11_25, ClientCapabilities::default(), None).unwrap();
        let token = s.mint(&session);
        s.verify(&token).unwrap();
        // The same bytes with a space after them, or a byte that is not UTF-8 before them.
        let mut spaced = token.clone().into_bytes();
        spaced.push(b' ');
        assert_eq!(s.verify(&spaced), Err(Refused::Invalid));
        let mut invalid = vec![0xff];
        invalid.extend_from_slice(token.as_bytes());
        assert_eq!(s.verify(&invalid), Err(Refused::Invalid));
        // Its MAC under another payload: the same key in the cache, refused.
        let (body, mac) = token.rsplit_once('.').unwrap();
        let forged = format!("{body}x.{mac}");
        assert_eq!(s.verify(&forged), Err(Refused::Invalid));
        assert_eq!(s.verified.lock().unwrap().len(), 1);
        assert!(s.verify(&token).is_ok());
    }

    /// Re-minting a session's id (a changed log level, a refresh) never extends it: a client
    /// that keeps using its session still sees it end when its lifetime has passed.
    #[test]
    fn a_session_ends_at_its_lifetime_however_often_it_is_re_minted() {
        let s = sessions(10);
        let mut session =
            Session::new(Revision::V2025_11_25, ClientCapabilities::default(), None).unwrap();
        let first: Session = {
            let token = s.mint(&session);
            Session::clone(&s.verify(&token).unwrap())
        };
        assert_eq!(first.expires, first.issued_at + 10);
        // Re-minted an hour later (as if): the same end.
        session = first.clone();
        session.issued_at = now_secs() + 3600;
        session.log_level = Some(LoggingLevel::Error);
        let again = s.verify(s.mint(&session)).unwrap();
        assert_eq!(again.expires, first.expires);
        // Past its end: refused, whatever its issue time says.
        let mut late = first;
        late.expires = now_secs() - 1;
        let token = s
            .signer()
            .sign(Domain::Session, &serde_json::to_vec(&late).unwrap());
        assert_eq!(s.verify(&token), Err(Refused::Expired));
    }

    /// One client that opens and ends sessions without end does not push another client's
    /// ended session out of the record (which would make its id work again).
    #[test]
    fn ending_sessions_without_end_pushes_out_only_ones_own_records() {
        let s = sessions(3600);
        let mut victim =
            Session::new(Revision::V2025_11_25, ClientCapabilities::default(), None).unwrap();
        victim.owner = "victim".into();
        let token = s.mint(&victim);
        s.end(&s.verify(&token).unwrap());
        let mut bystander =
            Session::new(Revision::V2025_11_25, ClientCapabilities::default(), None).unwrap();
        bystander.owner = "bystander".into();
        let bystanders = s.mint(&bystander);
        for _ in 0..1000 {
            let mut throwaway =
                Session::new(Revision::V2025_11_25, ClientCapabilities::default(), None).unwrap();
            throwaway.owner = "attacker".into();
            // (Its own earlier ends, pushed out, cut its sessions off: its new ones are
            // refused within the second. It ends them all the same.)
            s.end(&throwaway);
        }
        assert_eq!(s.verify(&token), Err(Refused::Ended));
        assert!(s.ended.lock().unwrap().len() <= 4);
        // Only the attacker's own sessions are cut off.
        assert!(s.verify(&bystanders).is_ok());
    }

    /// The attack of the issue: an ended session's id must not work again however many
    /// sessions other owners end, and the owners' other sessions opened later still work.
    #[test]
    fn an_ended_session_stays_ended_under_table_pressure() {
        let s = sessions(3600);
        let open = |owner: &str, later: u64| {
            let mut session =
                Session::new(Revision::V2025_11_25, ClientCapabilities::default(), None).unwrap();
            session.owner = owner.into();
            // Opened `later` seconds from now (its end is fixed by its lifetime).
            session.expires = now_secs() + 3600 + later;
            let token = s.mint(&session);
            (session, token)
        };
        let (victim, token) = open("victim", 0);
        let (others, other_token) = open("bystander", 0);
        s.end(&victim);
        // Twelve owners end sessions until the table (4, 4 per owner) has pushed out
        // everything, the victim's record first of all.
        for round in 0..20 {
            for owner in 0..12 {
                s.end(&open(&format!("attacker{owner}"), 0).0);
                assert_eq!(s.verify(&token), Err(Refused::Ended), "round {round}");
            }
        }
        assert!(s.ended.lock().unwrap().len() <= 4);
        assert!(s.cut_offs.lock().unwrap().len() <= 4);
        // The last resort was reached: sessions opened until then are refused (fail closed;
        // their clients start new ones) …
        assert_eq!(s.verify(&other_token), Err(Refused::Ended));
        drop(others);
        // … and a session opened afterwards works, the victim's or a newcomer's.
        assert!(s.verify(&open("victim", 5).1).is_ok());
        assert!(s.verify(&open("newcomer", 5).1).is_ok());
    }

    #[test]
    fn the_ended_set_is_bounded() {
        let s = sessions(3600);
        for _ in 0..10 {
            let session =
                Session::new(Revision::V2025_11_25, ClientCapabilities::default(), None).unwrap();
            s.end(&session);
        }
        assert!(s.ended.lock().unwrap().len() <= 4);
    }
}
