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

/// The server's signing key, keyed once.
#[derive(Clone)]
pub(crate) struct Signer {
    keyed: HmacSha256,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Signer(..)")
    }
}

impl Signer {
    /// A signer with this key; `None` if the key is empty.
    pub fn new(key: &[u8]) -> Option<Self> {
        if key.is_empty() {
            return None;
        }
        <HmacSha256 as KeyInit>::new_from_slice(key)
            .ok()
            .map(|keyed| Signer { keyed })
    }

    /// A signer with a fresh random key.
    pub fn random() -> Option<Self> {
        let mut key = [0u8; 32];
        getrandom::fill(&mut key).ok()?;
        Signer::new(&key)
    }

    fn mac(&self, domain: Domain, payload: &str) -> HmacSha256 {
        let mut mac = self.keyed.clone();
        mac.update(domain.label());
        mac.update(b".");
        mac.update(payload.as_bytes());
        mac
    }

    /// `<prefix>.<base64url(payload)>.<base64url(mac)>`: visible ASCII only.
    pub fn sign(&self, domain: Domain, payload: &[u8]) -> String {
        let body = B64.encode(payload);
        let tag = self.mac(domain, &body).finalize().into_bytes();
        format!("{}.{body}.{}", domain.prefix(), B64.encode(tag))
    }

    /// A keyed digest of `text` (16 bytes of the MAC, Base64): the same text gives the same
    /// digest under this key, and without the key nothing about the text can be learnt from
    /// it (unlike a plain hash of a user name).
    pub fn digest(&self, domain: Domain, text: &str) -> String {
        let tag = self.mac(domain, text).finalize().into_bytes();
        B64.encode(&tag[..16])
    }

    /// The payload of a token this key signed for `domain`; `None` for anything else.
    pub fn verify(&self, domain: Domain, token: &str) -> Option<Vec<u8>> {
        let mut parts = token.split('.');
        let (prefix, body, tag) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() || prefix != domain.prefix() {
            return None;
        }
        let tag = B64.decode(tag).ok()?;
        self.mac(domain, body).verify_slice(&tag).ok()?;
        B64.decode(body).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
