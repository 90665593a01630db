//! HMAC-SHA256 signing of the server's self-contained state: legacy session ids and 2026-07-28
//! `requestState`. One key signs both, under different domain labels, so that a token of one
//! kind is never accepted as the other. [`ReplicaKey`], derived from the same key, authenticates
//! what replicas leave for each other in a shared backend (bus messages, task records).

use base64::Engine as _;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// Where a signed token is used; part of what is signed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Domain {
    /// `Mcp-Session-Id`.
    Session,
    /// `requestState`.
    RequestState,
    /// The digest of a caller's name, bound into the other two.
    Principal,
}

impl Domain {
    fn label(self) -> &'static [u8] {
        match self {
            Domain::Session => b"sake/session/v1",
            Domain::RequestState => b"sake/request-state/v1",
            Domain::Principal => b"sake/principal/v1",
        }
    }

    fn prefix(self) -> &'static str {
        match self {
            Domain::Session => "s1",
            Domain::RequestState => "r1",
            Domain::Principal => "p1",
        }
    }
}

/// The server's keys, keyed once: one that signs, and the earlier ones that still verify
/// (key rotation), with the server's identity (its name) bound into every MAC so that two
/// services sharing a key never accept each other's tokens.
#[derive(Clone)]
pub(crate) struct Signer {
    keys: Vec<HmacSha256>,
    audience: Box<[u8]>,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Signer({} keys)", self.keys.len())
    }
}

impl Signer {
    /// A signer with this key and no audience; `None` if the key is empty.
    #[cfg_attr(not(any(test, feature = "internals")), allow(dead_code))]
    pub fn new(key: &[u8]) -> Option<Self> {
        Signer::with_keys(key, &[], "")
    }

    /// A signer that signs with `current` and also verifies with each of `previous`, for the
    /// server named `audience`; `None` if a key is empty.
    pub fn with_keys(current: &[u8], previous: &[Vec<u8>], audience: &str) -> Option<Self> {
        let mut keys = Vec::with_capacity(1 + previous.len());
        for key in std::iter::once(current).chain(previous.iter().map(Vec::as_slice)) {
            if key.is_empty() {
                return None;
            }
            keys.push(<HmacSha256 as KeyInit>::new_from_slice(key).ok()?);
        }
        Some(Signer {
            keys,
            audience: audience.as_bytes().into(),
        })
    }

    /// A signer with a fresh random key.
    pub fn random(audience: &str) -> Option<Self> {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).ok()?;
        Signer::with_keys(&key, &[], audience)
    }

    fn mac(&self, keyed: &HmacSha256, domain: Domain, payload: &str) -> HmacSha256 {
        let mut mac = keyed.clone();
        mac.update(domain.label());
        mac.update(b".");
        mac.update(&self.audience);
        mac.update(b".");
        mac.update(payload.as_bytes());
        mac
    }

    fn current(&self) -> &HmacSha256 {
        // `with_keys` always keeps the current key first.
        &self.keys[0]
    }

    /// `<prefix>.<base64url(payload)>.<base64url(mac)>`: visible ASCII only.
    pub fn sign(&self, domain: Domain, payload: &[u8]) -> String {
        let body = B64.encode(payload);
        let tag = self
            .mac(self.current(), domain, &body)
            .finalize()
            .into_bytes();
        format!("{}.{body}.{}", domain.prefix(), B64.encode(tag))
    }

    /// A keyed digest of `text` (16 bytes of the MAC, Base64) under the signing key: the same
    /// text gives the same digest, and without the key nothing about the text can be learnt
    /// from it (unlike a plain hash of a user name).
    pub fn digest(&self, domain: Domain, text: &str) -> String {
        let tag = self
            .mac(self.current(), domain, text)
            .finalize()
            .into_bytes();
        B64.encode(&tag[..16])
    }

    /// The digests of `text` under every key, the current one first: what a record made
    /// under any of them holds.
    pub fn digests(&self, domain: Domain, text: &str) -> Vec<String> {
        self.keys
            .iter()
            .map(|k| B64.encode(&self.mac(k, domain, text).finalize().into_bytes()[..16]))
            .collect()
    }

    /// Whether `digest` is the digest of `text` under any of the keys (one made before a key
    /// rotation still matches).
    pub fn is_digest_of(&self, domain: Domain, digest: &str, text: &str) -> bool {
        let Ok(wanted) = B64.decode(digest) else {
            return false;
        };
        self.keys.iter().any(|k| {
            let tag = self.mac(k, domain, text).finalize().into_bytes();
            // Constant time: digests are compared like MACs.
            wanted.len() == 16
                && tag[..16]
                    .iter()
                    .zip(&wanted)
                    .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                    == 0
        })
    }

    /// The payload of a token one of the keys signed for `domain`; `None` for anything else.
    pub fn verify(&self, domain: Domain, token: &str) -> Option<Vec<u8>> {
        let mut parts = token.split('.');
        let (prefix, body, tag) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() || prefix != domain.prefix() {
            return None;
        }
        let tag = B64.decode(tag).ok()?;
        self.keys
            .iter()
            .any(|k| self.mac(k, domain, body).verify_slice(&tag).is_ok())
            .then(|| B64.decode(body).ok())
            .flatten()
    }
}

/// The key the replicas of one server share to authenticate what they leave for each other in
/// a shared backend — the messages of an [`EventBus`](crate::bus::EventBus), the tasks of a
/// [`TaskStore`](crate::tasks::TaskStore) — so that whoever can write to that backend (a Redis
/// on a shared network) cannot make a replica act on a message or a record it made up.
///
/// The server derives it from its session key (`Server::session_key` or `SAKE_SESSION_KEY`,
/// and the previous keys that still verify) and its name, with a label of its own: it is never
/// the key that signs session ids, and a MAC made with it is never a session id or a
/// `requestState`. The server hands it to its bus ([`Inbox::replica_key`](crate::bus::Inbox::replica_key))
/// and its task store ([`TaskStore::start`](crate::tasks::TaskStore::start)) when it is built;
/// [`ReplicaKey::new`] makes the same key for a store used without a server (tests, tools).
///
/// [`seal`](Self::seal) prefixes a text with its MAC (HMAC-SHA256, under the current key, bound
/// to the server's name and a context such as `"bus"` or `"task"`); [`open`](Self::open) gives
/// the text back only when the MAC verifies under the current or a previous key:
///
/// ```
/// use sake_runtime::bus::ReplicaKey;
///
/// let key = ReplicaKey::new(b"a session key the replicas share, 32+ bytes", &[], "weather")
///     .expect("a non-empty key");
/// let sealed = key.seal("bus", r#"{"t":"tools"}"#);
/// assert_eq!(key.open("bus", &sealed), Some(r#"{"t":"tools"}"#));
/// assert_eq!(key.open("task", &sealed), None); // another context
/// assert_eq!(key.open("bus", &sealed.replace("tools", "prompts")), None); // tampered
/// ```
#[derive(Clone)]
pub struct ReplicaKey {
    /// The derived keys: the current one first, then the previous ones.
    keys: Vec<HmacSha256>,
    audience: Box<[u8]>,
    configured: bool,
}

impl std::fmt::Debug for ReplicaKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplicaKey")
            .field("keys", &self.keys.len())
            .field("configured", &self.configured)
            .finish_non_exhaustive()
    }
}

/// What a sealed text starts with: the format's version.
const SEALED_PREFIX: &str = "m1.";

impl ReplicaKey {
    /// The key a server named `server_name` derives from `session_key` (and each of
    /// `previous` session keys, which keep verifying what was sealed before a rotation);
    /// `None` if a key is empty.
    pub fn new(session_key: &[u8], previous: &[&[u8]], server_name: &str) -> Option<ReplicaKey> {
        let derive = |key: &[u8]| -> Option<HmacSha256> {
            if key.is_empty() {
                return None;
            }
            let mut mac = <HmacSha256 as KeyInit>::new_from_slice(key).ok()?;
            mac.update(b"sake/replica-key/v1");
            let derived = mac.finalize().into_bytes();
            <HmacSha256 as KeyInit>::new_from_slice(&derived).ok()
        };
        let mut keys = Vec::with_capacity(1 + previous.len());
        for key in std::iter::once(session_key).chain(previous.iter().copied()) {
            keys.push(derive(key)?);
        }
        Some(ReplicaKey {
            keys,
            audience: server_name.as_bytes().into(),
            configured: true,
        })
    }

    /// A key of this process alone (the server has no configured session key): nothing it
    /// seals can be opened by another replica.
    pub(crate) fn random(server_name: &str) -> Option<ReplicaKey> {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).ok()?;
        let mut k = ReplicaKey::new(&key, &[], server_name)?;
        k.configured = false;
        Some(k)
    }

    /// Whether the key comes from a configured session key (so the replicas that share it
    /// share this key); `false` for the random key of a server without one, which no other
    /// process has.
    pub fn is_configured(&self) -> bool {
        self.configured
    }

    fn mac(&self, keyed: &HmacSha256, context: &str, text: &str) -> HmacSha256 {
        let mut mac = keyed.clone();
        // Each part is length-prefixed: no two (name, context, text) give the same input.
        for part in [&*self.audience, context.as_bytes()] {
            mac.update(&(part.len() as u64).to_be_bytes());
            mac.update(part);
        }
        mac.update(text.as_bytes());
        mac
    }

    /// `text` prefixed with its MAC under the current key for `context`:
    /// `m1.<base64url(mac)>.<text>`, `text` unchanged (still readable in the backend).
    pub fn seal(&self, context: &str, text: &str) -> String {
        // `new` always keeps the current key first.
        let tag = self
            .mac(&self.keys[0], context, text)
            .finalize()
            .into_bytes();
        let tag = B64.encode(tag);
        let mut sealed = String::with_capacity(SEALED_PREFIX.len() + tag.len() + 1 + text.len());
        sealed.push_str(SEALED_PREFIX);
        sealed.push_str(&tag);
        sealed.push('.');
        sealed.push_str(text);
        sealed
    }

    /// The text of `sealed` when its MAC verifies for `context` under one of the keys;
    /// `None` for anything else (forged, tampered, sealed for another context or server, or
    /// with a key this server no longer has).
    pub fn open<'a>(&self, context: &str, sealed: &'a str) -> Option<&'a str> {
        let rest = sealed.strip_prefix(SEALED_PREFIX)?;
        let (tag, text) = rest.split_once('.')?;
        let tag = B64.decode(tag).ok()?;
        self.keys
            .iter()
            .any(|k| self.mac(k, context, text).verify_slice(&tag).is_ok())
            .then_some(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotated_keys_verify_and_audiences_do_not_cross() {
        let old = b"an old key an old key an old key!".to_vec();
        let new = b"a new key, a new key, a new key!!".to_vec();
        let before = Signer::with_keys(&old, &[], "svc").unwrap();
        let token = before.sign(Domain::Session, b"{}");
        let digest = before.digest(Domain::Principal, "alice");
        let after = Signer::with_keys(&new, std::slice::from_ref(&old), "svc").unwrap();
        assert_eq!(after.verify(Domain::Session, &token).unwrap(), b"{}");
        assert!(after.is_digest_of(Domain::Principal, &digest, "alice"));
        assert!(!after.is_digest_of(Domain::Principal, &digest, "bob"));
        // New tokens are signed with the new key only.
        let fresh = after.sign(Domain::Session, b"{}");
        assert!(before.verify(Domain::Session, &fresh).is_none());
        // Dropping the old key ends what it signed.
        let later = Signer::with_keys(&new, &[], "svc").unwrap();
        assert!(later.verify(Domain::Session, &token).is_none());
        // Another service with the same key refuses it.
        let other = Signer::with_keys(&old, &[], "other-svc").unwrap();
        assert!(other.verify(Domain::Session, &token).is_none());
        assert!(!other.is_digest_of(Domain::Principal, &digest, "alice"));
    }

    #[test]
    fn signs_and_verifies() {
        let s = Signer::new(b"0123456789abcdef0123456789abcdef").unwrap();
        let t = s.sign(Domain::Session, b"{\"a\":1}");
        assert!(t.bytes().all(|b| (0x21..=0x7e).contains(&b)));
        assert_eq!(s.verify(Domain::Session, &t).unwrap(), b"{\"a\":1}");
        // Another domain, another key, a changed byte: all refused.
        assert!(s.verify(Domain::RequestState, &t).is_none());
        assert!(
            Signer::new(b"another key, another key, 123456")
                .unwrap()
                .verify(Domain::Session, &t)
                .is_none()
        );
        let mut bad = t.clone().into_bytes();
        let i = bad.len() - 5;
        bad[i] = if bad[i] == b'A' { b'B' } else { b'A' };
        assert!(
            s.verify(Domain::Session, std::str::from_utf8(&bad).unwrap())
                .is_none()
        );
        assert!(
            s.verify(Domain::Session, &format!("{t}-TAMPERED"))
                .is_none()
        );
        assert!(s.verify(Domain::Session, "s1.e30").is_none());
        assert!(s.verify(Domain::Session, "").is_none());
    }

    #[test]
    fn replica_keys_seal_and_open_across_rotation_and_never_across_contexts_or_servers() {
        let old: &[u8] = b"an old key an old key an old key!";
        let new: &[u8] = b"a new key, a new key, a new key!!";
        let before = ReplicaKey::new(old, &[], "svc").unwrap();
        assert!(before.is_configured());
        let sealed = before.seal("bus", "{\"t\":\"tools\"}");
        assert!(sealed.starts_with("m1."));
        assert!(sealed.ends_with(".{\"t\":\"tools\"}"));
        assert_eq!(before.open("bus", &sealed), Some("{\"t\":\"tools\"}"));
        // After a rotation, what the old key sealed still opens; what the new one seals does
        // not open under the old key alone.
        let after = ReplicaKey::new(new, &[old], "svc").unwrap();
        assert_eq!(after.open("bus", &sealed), Some("{\"t\":\"tools\"}"));
        assert!(before.open("bus", &after.seal("bus", "x")).is_none());
        // Another context, another server, another key, a changed byte, no MAC: refused.
        assert!(before.open("task", &sealed).is_none());
        assert!(
            ReplicaKey::new(old, &[], "other")
                .unwrap()
                .open("bus", &sealed)
                .is_none()
        );
        assert!(
            ReplicaKey::new(new, &[], "svc")
                .unwrap()
                .open("bus", &sealed)
                .is_none()
        );
        assert!(
            before
                .open("bus", &sealed.replace("tools", "tooLs"))
                .is_none()
        );
        assert!(before.open("bus", "{\"t\":\"tools\"}").is_none());
        assert!(before.open("bus", "m1..{}").is_none());
        assert!(before.open("bus", "").is_none());
        // The name and the context cannot be shifted into each other.
        let a = ReplicaKey::new(old, &[], "ab").unwrap().seal("c", "x");
        assert!(
            ReplicaKey::new(old, &[], "a")
                .unwrap()
                .open("bc", &a)
                .is_none()
        );
        // The session key itself never verifies a replica MAC, nor the reverse: the derived
        // key is another key.
        let signer = Signer::with_keys(old, &[], "svc").unwrap();
        let token = signer.sign(Domain::Session, b"{}");
        assert!(before.open("bus", &token).is_none());
        // A random key is not configured; an empty key is no key.
        assert!(!ReplicaKey::random("svc").unwrap().is_configured());
        assert!(ReplicaKey::new(b"", &[], "svc").is_none());
        assert!(ReplicaKey::new(old, &[b""], "svc").is_none());
    }
}
