//! What the proxy keeps in its store is sealed: every value carries a MAC under a key derived
//! from the proxy's secret, bound to the key it is stored under, so that whoever can write the
//! store (Redis) cannot make a record the proxy takes (a grant for any subject and scope, a
//! code, a sign-in), nor move one to another key. The upstream tokens of a grant are also
//! encrypted (ChaCha20-Poly1305, bound to the grant's key), so that whoever can read the store
//! learns none of them.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};

use super::store::{Bound, Insertion, ProxyStore, ProxyStoreFuture};
use super::{B64, constant_eq, hmac};

/// What a sealed value starts with: the format's version.
const PREFIX: &[u8] = b"s1.";
/// The MAC's length.
const MAC: usize = 32;

/// A store whose values are sealed on the way in and checked on the way out: a value whose
/// MAC does not verify (forged, moved, or sealed under another secret) reads as absent.
pub(crate) struct SealedStore {
    pub(crate) inner: Arc<dyn ProxyStore>,
    key: Vec<u8>,
}

impl SealedStore {
    pub(crate) fn new(inner: Arc<dyn ProxyStore>, secret: &[u8]) -> Self {
        SealedStore {
            inner,
            key: hmac(secret, "store-seal-key", b""),
        }
    }

    fn mac(&self, key: &str, value: &[u8]) -> Vec<u8> {
        let mut data = Vec::with_capacity(key.len() + 1 + value.len());
        data.extend_from_slice(key.as_bytes());
        data.push(0);
        data.extend_from_slice(value);
        hmac(&self.key, "store-seal", &data)
    }

    pub(crate) fn seal(&self, key: &str, value: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(PREFIX.len() + MAC + value.len());
        out.extend_from_slice(PREFIX);
        out.extend_from_slice(&self.mac(key, value));
        out.extend_from_slice(value);
        out
    }

    pub(crate) fn open(&self, key: &str, sealed: Vec<u8>) -> Option<Vec<u8>> {
        let rest = sealed.strip_prefix(PREFIX);
        let opened = rest.and_then(|r| {
            let (mac, value) = r.split_at_checked(MAC)?;
            constant_eq(mac, &self.mac(key, value)).then(|| value.to_vec())
        });
        if opened.is_none() {
            // Kind and id of the key only: the id may be a secret's digest, never a secret.
            tracing::warn!(
                kind = key.split(':').next().unwrap_or_default(),
                "a record of the authorization proxy's store is not sealed with its secret (written by someone else, or under another secret): it is ignored"
            );
        }
        opened
    }
}

impl ProxyStore for SealedStore {
    fn put<'a>(&'a self, key: &'a str, value: Vec<u8>, ttl: Duration) -> ProxyStoreFuture<'a, ()> {
        let sealed = self.seal(key, &value);
        self.inner.put(key, sealed, ttl)
    }

    fn insert_new<'a>(
        &'a self,
        key: &'a str,
        value: Vec<u8>,
        ttl: Duration,
    ) -> ProxyStoreFuture<'a, bool> {
        let sealed = self.seal(key, &value);
        self.inner.insert_new(key, sealed, ttl)
    }

    fn insert_bounded<'a>(
        &'a self,
        key: &'a str,
        value: Vec<u8>,
        ttl: Duration,
        bounds: &'a [Bound<'a>],
    ) -> ProxyStoreFuture<'a, Insertion> {
        let sealed = self.seal(key, &value);
        self.inner.insert_bounded(key, sealed, ttl, bounds)
    }

    fn get<'a>(&'a self, key: &'a str) -> ProxyStoreFuture<'a, Option<Vec<u8>>> {
        Box::pin(async move { Ok(self.inner.get(key).await?.and_then(|v| self.open(key, v))) })
    }

    fn take<'a>(&'a self, key: &'a str) -> ProxyStoreFuture<'a, Option<Vec<u8>>> {
        Box::pin(async move { Ok(self.inner.take(key).await?.and_then(|v| self.open(key, v))) })
    }

    fn delete<'a>(&'a self, key: &'a str) -> ProxyStoreFuture<'a, ()> {
        self.inner.delete(key)
    }
}

/// The AEAD key the upstream tokens are encrypted with.
pub(crate) struct TokenCipher {
    key: LessSafeKey,
}

impl TokenCipher {
    pub(crate) fn new(secret: &[u8]) -> Result<Self, String> {
        let bytes = hmac(secret, "store-encryption-key", b"");
        let key = UnboundKey::new(&CHACHA20_POLY1305, &bytes)
            .map_err(|_| "cannot derive the store's encryption key".to_owned())?;
        Ok(TokenCipher {
            key: LessSafeKey::new(key),
        })
    }

    /// `plain` encrypted for `context` (the grant's key): a random nonce and the ciphertext
    /// with its tag, Base64url.
    pub(crate) fn encrypt(&self, context: &str, plain: &[u8]) -> Result<String, String> {
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce).map_err(|e| format!("the system has no randomness: {e}"))?;
        let mut buf = plain.to_vec();
        self.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(context.as_bytes()),
                &mut buf,
            )
            .map_err(|_| "cannot encrypt the upstream tokens".to_owned())?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&buf);
        Ok(B64.encode(out))
    }

    /// What [`encrypt`](Self::encrypt) made for `context`; `None` when it was not.
    pub(crate) fn decrypt(&self, context: &str, sealed: &str) -> Option<Vec<u8>> {
        let bytes = B64.decode(sealed).ok()?;
        let (nonce, rest) = bytes.split_at_checked(NONCE_LEN)?;
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut buf = rest.to_vec();
        let plain = self
            .key
            .open_in_place(nonce, Aad::from(context.as_bytes()), &mut buf)
            .ok()?;
        Some(plain.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::proxy::MemoryProxyStore;

    #[tokio::test]
    async fn values_are_bound_to_their_key_and_secret() {
        let memory = Arc::new(MemoryProxyStore::default());
        let store = SealedStore::new(memory.clone(), &[7; 32]);
        let minute = Duration::from_secs(60);
        store.put("grant:a", b"{}".to_vec(), minute).await.unwrap();
        assert_eq!(store.get("grant:a").await.unwrap(), Some(b"{}".to_vec()));
        // Written by someone without the secret: absent.
        memory.put("grant:b", b"{}".to_vec(), minute).await.unwrap();
        assert_eq!(store.get("grant:b").await.unwrap(), None);
        // Moved to another key: absent.
        let sealed = memory.get("grant:a").await.unwrap().unwrap();
        memory.put("grant:c", sealed.clone(), minute).await.unwrap();
        assert_eq!(store.take("grant:c").await.unwrap(), None);
        // Under another secret: absent.
        let other = SealedStore::new(memory.clone(), &[8; 32]);
        assert_eq!(other.get("grant:a").await.unwrap(), None);
        // A byte changed: absent.
        let mut changed = sealed;
        let last = changed.len() - 1;
        changed[last] ^= 1;
        memory.put("grant:a", changed, minute).await.unwrap();
        assert_eq!(store.get("grant:a").await.unwrap(), None);
    }

    #[test]
    fn upstream_tokens_are_encrypted_for_their_grant() {
        let c = TokenCipher::new(&[7; 32]).unwrap();
        let sealed = c.encrypt("grant:a", b"upstream-refresh-token").unwrap();
        assert!(!sealed.contains("upstream"));
        assert_eq!(
            c.decrypt("grant:a", &sealed).as_deref(),
            Some(&b"upstream-refresh-token"[..])
        );
        assert_eq!(c.decrypt("grant:b", &sealed), None);
        assert_eq!(
            TokenCipher::new(&[8; 32])
                .unwrap()
                .decrypt("grant:a", &sealed),
            None
        );
        // A fresh nonce each time.
        assert_ne!(
            c.encrypt("grant:a", b"x").unwrap(),
            c.encrypt("grant:a", b"x").unwrap()
        );
    }
}
