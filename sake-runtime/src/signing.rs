//! HMAC-SHA256 signing of the server's self-contained state: legacy session ids and 2026-07-28
//! `requestState`. One key signs both, under different domain labels, so that a token of one
//! kind is never accepted as the other.

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
}
