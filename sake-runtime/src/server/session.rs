//! Legacy sessions without a session table: the `Mcp-Session-Id` is a signed token carrying
//! everything the server needs to serve the session — the revision, the client's capabilities
//! and name, the log level, and when it was issued. Any replica holding the key serves it.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use crate::protocol::Revision;
use crate::protocol::types::{ClientCapabilities, Implementation, LoggingLevel};
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
        })
    }

    /// The client's name and version, as an `Implementation`.
    pub fn client_info(&self) -> Option<Implementation> {
        self.client
            .as_ref()
            .map(|(n, v)| Implementation::new(n.clone(), v.clone()))
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
    ended: Mutex<HashMap<String, u64>>,
    max_ended: usize,
    /// Tokens whose signature was checked, and what they say. A client sends the same id on
    /// every request of its session, and checking the signature and decoding the payload is
    /// most of what serving a session costs sake. Bounded by [`VERIFIED_CACHE`] entries (when
    /// full, one is forgotten for each new one); expiry and ending are checked on every request all the same.
    verified: Mutex<HashMap<Box<str>, Session>>,
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
    ) -> Self {
        Sessions {
            signer,
            lifetime,
            refresh_after,
            ended: Mutex::new(HashMap::new()),
            max_ended,
            verified: Mutex::new(HashMap::new()),
        }
    }

    pub fn signer(&self) -> &Signer {
        &self.signer
    }

    /// The token for a session, stamped now.
    pub fn mint(&self, session: &Session) -> String {
        let mut s = session.clone();
        s.issued_at = now_secs();
        let payload = serde_json::to_vec(&s).unwrap_or_default();
        self.signer.sign(Domain::Session, &payload)
    }

    /// Checks a token: signed by this key, not expired, not ended.
    pub fn verify(&self, token: &str) -> Result<Session, Refused> {
        let cached = self
            .verified
            .lock()
            .ok()
            .and_then(|cache| cache.get(token).cloned());
        let session = match cached {
            Some(session) => session,
            None => {
                let payload = self
                    .signer
                    .verify(Domain::Session, token)
                    .ok_or(Refused::Invalid)?;
                let session: Session =
                    serde_json::from_slice(&payload).map_err(|_| Refused::Invalid)?;
                if token.len() <= MAX_CACHED_TOKEN
                    && let Ok(mut cache) = self.verified.lock()
                {
                    // Full: forget one (the map's order is random), so that a server with
                    // more live sessions than the cache holds still hits it mostly.
                    if cache.len() >= VERIFIED_CACHE
                        && let Some(old) = cache.keys().next().cloned()
                    {
                        cache.remove(&old);
                    }
                    cache.insert(token.into(), session.clone());
                }
                session
            }
        };
        let age = now_secs().saturating_sub(session.issued_at);
        if age > self.lifetime.as_secs() {
            return Err(Refused::Expired);
        }
        let ended = self.ended.lock().map_err(|_| Refused::Invalid)?;
        if ended.contains_key(&session.sid) {
            return Err(Refused::Ended);
        }
        Ok(session)
    }

    /// Whether a token of this session should be replaced by a fresh one.
    pub fn needs_refresh(&self, session: &Session) -> bool {
        now_secs().saturating_sub(session.issued_at) >= self.refresh_after.as_secs()
    }

    /// Ends a session: its tokens are refused from now on (in this process).
    pub fn end(&self, session: &Session) {
        let now = now_secs();
        let Ok(mut ended) = self.ended.lock() else {
            return;
        };
        if ended.len() >= self.max_ended {
            ended.retain(|_, until| *until > now);
        }
        if ended.len() >= self.max_ended {
            // Still full of live records: forget the one closest to expiry.
            if let Some(oldest) = ended
                .iter()
                .min_by_key(|(_, until)| **until)
                .map(|(k, _)| k.clone())
            {
                ended.remove(&oldest);
            }
        }
        ended.insert(session.sid.clone(), now + self.lifetime.as_secs() + 1);
    }
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
        )
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
        assert!(s.verified.lock().unwrap().contains_key(token.as_str()));
        assert_eq!(s.verify("s1.x.y"), Err(Refused::Invalid));
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
        // Remembered while it was valid (as if verified 100 s ago), refused now.
        short
            .verified
            .lock()
            .unwrap()
            .insert(token.as_str().into(), old);
        assert_eq!(short.verify(&token), Err(Refused::Expired));

        for _ in 0..(VERIFIED_CACHE + 10) {
            let other =
                Session::new(Revision::V2025_11_25, ClientCapabilities::default(), None).unwrap();
            s.verify(&s.mint(&other)).unwrap();
        }
        assert!(s.verified.lock().unwrap().len() <= VERIFIED_CACHE);
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
