//! Signing algorithms and the issuer's public keys (JWK, RFC 7517; algorithms, RFC 7518).

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use base64::Engine as _;
use jsonwebtoken::DecodingKey;
use serde_json::Value;

/// A JWS signing algorithm a [`JwtVerifier`](super::JwtVerifier) can accept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Algorithm {
    /// HMAC with SHA-256 (a shared secret; never by default).
    HS256,
    /// HMAC with SHA-384 (a shared secret; never by default).
    HS384,
    /// HMAC with SHA-512 (a shared secret; never by default).
    HS512,
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    RS256,
    /// RSASSA-PKCS1-v1_5 with SHA-384.
    RS384,
    /// RSASSA-PKCS1-v1_5 with SHA-512.
    RS512,
    /// RSASSA-PSS with SHA-256.
    PS256,
    /// RSASSA-PSS with SHA-384.
    PS384,
    /// RSASSA-PSS with SHA-512.
    PS512,
    /// ECDSA on P-256 with SHA-256.
    ES256,
    /// ECDSA on P-384 with SHA-384.
    ES384,
    /// EdDSA on Ed25519.
    EdDSA,
}

impl Algorithm {
    /// The asymmetric algorithms accepted by default.
    pub const DEFAULT: [Algorithm; 9] = [
        Self::RS256,
        Self::RS384,
        Self::RS512,
        Self::PS256,
        Self::PS384,
        Self::PS512,
        Self::ES256,
        Self::ES384,
        Self::EdDSA,
    ];

    /// The `alg` name (RFC 7518 section 3.1, RFC 8037 section 3.1).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::HS256 => "HS256",
            Self::HS384 => "HS384",
            Self::HS512 => "HS512",
            Self::RS256 => "RS256",
            Self::RS384 => "RS384",
            Self::RS512 => "RS512",
            Self::PS256 => "PS256",
            Self::PS384 => "PS384",
            Self::PS512 => "PS512",
            Self::ES256 => "ES256",
            Self::ES384 => "ES384",
            Self::EdDSA => "EdDSA",
        }
    }

    /// Whether this is an HMAC algorithm (a shared secret, not a published key).
    pub fn is_symmetric(self) -> bool {
        matches!(self, Self::HS256 | Self::HS384 | Self::HS512)
    }

    pub(crate) fn jwt(self) -> jsonwebtoken::Algorithm {
        use jsonwebtoken::Algorithm as J;
        match self {
            Self::HS256 => J::HS256,
            Self::HS384 => J::HS384,
            Self::HS512 => J::HS512,
            Self::RS256 => J::RS256,
            Self::RS384 => J::RS384,
            Self::RS512 => J::RS512,
            Self::PS256 => J::PS256,
            Self::PS384 => J::PS384,
            Self::PS512 => J::PS512,
            Self::ES256 => J::ES256,
            Self::ES384 => J::ES384,
            Self::EdDSA => J::EdDSA,
        }
    }

    /// The kind of key this algorithm verifies with.
    fn kind(self) -> Option<KeyKind> {
        match self {
            Self::HS256 | Self::HS384 | Self::HS512 => None,
            Self::RS256 | Self::RS384 | Self::RS512 | Self::PS256 | Self::PS384 | Self::PS512 => {
                Some(KeyKind::Rsa)
            }
            Self::ES256 => Some(KeyKind::P256),
            Self::ES384 => Some(KeyKind::P384),
            Self::EdDSA => Some(KeyKind::Ed25519),
        }
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An `alg` name that is not one of [`Algorithm`]'s.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a supported signing algorithm")]
pub struct UnknownAlgorithm(String);

impl FromStr for Algorithm {
    type Err = UnknownAlgorithm;

    /// Parses an `alg` name, exactly as registered (they are case-sensitive).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [
            Self::HS256,
            Self::HS384,
            Self::HS512,
            Self::RS256,
            Self::RS384,
            Self::RS512,
            Self::PS256,
            Self::PS384,
            Self::PS512,
            Self::ES256,
            Self::ES384,
            Self::EdDSA,
        ]
        .into_iter()
        .find(|a| a.as_str() == s)
        .ok_or_else(|| UnknownAlgorithm(s.to_owned()))
    }
}

/// The kind of a public key, which decides the algorithms it may verify.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyKind {
    Rsa,
    P256,
    P384,
    Ed25519,
}

impl KeyKind {
    fn describe(self) -> &'static str {
        match self {
            Self::Rsa => "an RSA key",
            Self::P256 => "a P-256 key",
            Self::P384 => "a P-384 key",
            Self::Ed25519 => "an Ed25519 key",
        }
    }
}

/// One public key of the issuer, ready to verify with.
pub(crate) struct Key {
    pub(crate) kid: Option<String>,
    kind: KeyKind,
    /// The `alg` the key is restricted to, when the JWK names one.
    alg: Option<Algorithm>,
    pub(crate) decoding: DecodingKey,
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Key")
            .field("kid", &self.kid)
            .field("kind", &self.kind)
            .field("alg", &self.alg)
            .finish_non_exhaustive()
    }
}

impl Key {
    /// Whether this key may verify a token signed with `alg`: only an algorithm of its own
    /// family (no RSA key used for HMAC, no P-256 key for ES384), and only its own `alg`
    /// when the JWK names one.
    pub(crate) fn check(&self, alg: Algorithm) -> Result<(), String> {
        if alg.kind() != Some(self.kind) {
            return Err(format!(
                "the key {} is {}, which does not verify {alg}",
                self.name(),
                self.kind.describe()
            ));
        }
        if let Some(own) = self.alg
            && own != alg
        {
            return Err(format!(
                "the key {} is published for {own} only, not {alg}",
                self.name()
            ));
        }
        Ok(())
    }

    fn name(&self) -> String {
        match &self.kid {
            Some(kid) => format!("{kid:?}"),
            None => "without kid".to_owned(),
        }
    }
}

/// A key set: the usable keys of a JWKS, by `kid`.
#[derive(Debug, Default)]
pub(crate) struct KeySet {
    pub(crate) keys: Vec<Arc<Key>>,
    by_kid: HashMap<String, usize>,
}

impl KeySet {
    pub(crate) fn by_kid(&self, kid: &str) -> Option<&Arc<Key>> {
        self.by_kid.get(kid).and_then(|&i| self.keys.get(i))
    }

    /// The keys that may verify `alg`.
    pub(crate) fn for_alg(&self, alg: Algorithm) -> impl Iterator<Item = &Arc<Key>> {
        self.keys.iter().filter(move |k| k.check(alg).is_ok())
    }

    /// Parses a JWK Set document (RFC 7517 section 5). Keys this server cannot use are left
    /// out with a debug log: encryption keys (`use` other than `sig`, `key_ops` without
    /// `verify`), symmetric keys (`oct`: a shared secret is never taken from a key set),
    /// unknown key types or curves, RSA keys shorter than 2048 bits (RFC 7518 section 3.3)
    /// or longer than 4096, malformed parameters. At most `max_keys` keys are kept.
    pub(crate) fn parse(json: &[u8], max_keys: usize) -> Result<Self, String> {
        let doc: Value =
            serde_json::from_slice(json).map_err(|e| format!("it is not JSON: {e}"))?;
        let Some(keys) = doc.get("keys").and_then(Value::as_array) else {
            return Err("it has no `keys` array (RFC 7517 section 5)".to_owned());
        };
        let mut set = KeySet::default();
        for jwk in keys {
            if set.keys.len() == max_keys {
                tracing::warn!(
                    max_keys,
                    published = keys.len(),
                    "the key set holds more keys than the limit; the rest are ignored"
                );
                break;
            }
            match parse_jwk(jwk) {
                Ok(key) => {
                    if let Some(kid) = &key.kid {
                        // The first key of a kid wins; a duplicate kid is ambiguous anyway.
                        set.by_kid.entry(kid.clone()).or_insert(set.keys.len());
                    }
                    set.keys.push(Arc::new(key));
                }
                Err(why) => tracing::debug!(
                    kid = jwk.get("kid").and_then(|k| k.as_str()),
                    "a key of the key set is not used: {why}"
                ),
            }
        }
        Ok(set)
    }
}

fn b64(v: &Value, name: &str) -> Result<Vec<u8>, String> {
    let s = v
        .get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("it has no `{name}`"))?;
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(s.trim_end_matches('='))
        .map_err(|e| format!("its `{name}` is not base64url: {e}"))
}

fn parse_jwk(jwk: &Value) -> Result<Key, String> {
    let text = |name: &str| jwk.get(name).and_then(Value::as_str);
    if let Some(usage) = text("use")
        && usage != "sig"
    {
        return Err(format!("its use is {usage:?}, not \"sig\""));
    }
    if let Some(ops) = jwk.get("key_ops").and_then(Value::as_array)
        && !ops.iter().any(|op| op.as_str() == Some("verify"))
    {
        return Err("its key_ops do not include \"verify\"".to_owned());
    }
    let alg = match text("alg") {
        None => None,
        Some(name) => Some(
            name.parse::<Algorithm>()
                .map_err(|_| format!("its alg {name:?} is not supported"))?,
        ),
    };
    let kty = text("kty").ok_or("it has no kty")?;
    let (kind, decoding) = match kty {
        "RSA" => {
            let n = b64(jwk, "n")?;
            let e = b64(jwk, "e")?;
            let bits = n.iter().position(|&b| b != 0).map_or(0, |i| {
                (n.len() - i) * 8 - usize::try_from(n[i].leading_zeros()).unwrap_or(0)
            });
            if !(2048..=4096).contains(&bits) {
                return Err(format!(
                    "its modulus has {bits} bits; 2048 to 4096 are accepted"
                ));
            }
            if e.is_empty() || e.len() > 8 {
                return Err("its exponent is malformed".to_owned());
            }
            (KeyKind::Rsa, DecodingKey::from_rsa_raw_components(&n, &e))
        }
        "EC" => {
            let (kind, len) = match text("crv") {
                Some("P-256") => (KeyKind::P256, 32),
                Some("P-384") => (KeyKind::P384, 48),
                other => return Err(format!("its curve {other:?} is not supported")),
            };
            let x = b64(jwk, "x")?;
            let y = b64(jwk, "y")?;
            if x.len() != len || y.len() != len {
                return Err("its coordinates have the wrong length for the curve".to_owned());
            }
            let mut point = Vec::with_capacity(1 + 2 * len);
            point.push(0x04);
            point.extend_from_slice(&x);
            point.extend_from_slice(&y);
            (kind, DecodingKey::from_ec_der(&point))
        }
        "OKP" => {
            if text("crv") != Some("Ed25519") {
                return Err(format!(
                    "its curve {:?} is not supported",
                    text("crv").unwrap_or_default()
                ));
            }
            let x = b64(jwk, "x")?;
            if x.len() != 32 {
                return Err("its public key is not 32 bytes".to_owned());
            }
            (KeyKind::Ed25519, DecodingKey::from_ed_der(&x))
        }
        "oct" => {
            return Err(
                "it is a symmetric key; shared secrets are configured, never published".to_owned(),
            );
        }
        other => return Err(format!("its key type {other:?} is not supported")),
    };
    if let Some(alg) = alg
        && alg.kind() != Some(kind)
    {
        return Err(format!("its alg {alg} does not fit {}", kind.describe()));
    }
    Ok(Key {
        kid: text("kid").map(str::to_owned),
        kind,
        alg,
        decoding,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn algorithm_names() {
        for alg in Algorithm::DEFAULT {
            assert_eq!(alg.as_str().parse::<Algorithm>().unwrap(), alg);
            assert!(!alg.is_symmetric());
        }
        assert_eq!("HS256".parse::<Algorithm>().unwrap(), Algorithm::HS256);
        assert!("none".parse::<Algorithm>().is_err());
        assert!("rs256".parse::<Algorithm>().is_err());
        assert!("ES512".parse::<Algorithm>().is_err());
    }

    #[test]
    fn unusable_keys_are_left_out() {
        let n = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode([0xc5u8; 256]);
        let short = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode([0xc5u8; 128]);
        let p256 = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode([7u8; 32]);
        let doc = serde_json::json!({"keys": [
            {"kty": "RSA", "kid": "rsa", "n": n, "e": "AQAB"},
            {"kty": "RSA", "kid": "enc", "use": "enc", "n": n, "e": "AQAB"},
            {"kty": "RSA", "kid": "ops", "key_ops": ["encrypt"], "n": n, "e": "AQAB"},
            {"kty": "RSA", "kid": "short", "n": short, "e": "AQAB"},
            {"kty": "RSA", "kid": "alg-mismatch", "alg": "ES256", "n": n, "e": "AQAB"},
            {"kty": "oct", "kid": "secret", "k": "c2VjcmV0"},
            {"kty": "EC", "kid": "p256", "crv": "P-256", "x": p256, "y": p256},
            {"kty": "EC", "kid": "bad-ec", "crv": "P-256", "x": p256, "y": "AAAA"},
            {"kty": "EC", "kid": "p521", "crv": "P-521", "x": p256, "y": p256},
            {"kty": "OKP", "kid": "ed", "crv": "Ed25519", "x": p256},
            {"kty": "OKP", "kid": "short-ed", "crv": "Ed25519", "x": "AAAA"},
            {"kty": "OKP", "kid": "x25519", "crv": "X25519", "x": p256},
            {"kty": "RSA", "kid": "rsa", "n": n, "e": "AQAB", "alg": "RS512"},
            {"kid": "no-kty"},
            "not an object",
        ]});
        let set = KeySet::parse(doc.to_string().as_bytes(), 100).unwrap();
        let kids: Vec<_> = set.keys.iter().map(|k| k.kid.as_deref()).collect();
        assert_eq!(
            kids,
            [Some("rsa"), Some("p256"), Some("ed"), Some("rsa")],
            "{set:?}"
        );
        // The first key of a duplicated kid wins.
        assert_eq!(set.by_kid("rsa").unwrap().alg, None);
        assert!(set.by_kid("rsa").unwrap().check(Algorithm::PS384).is_ok());
        assert_eq!(
            set.by_kid("rsa").unwrap().check(Algorithm::ES256),
            Err("the key \"rsa\" is an RSA key, which does not verify ES256".to_owned())
        );
        assert!(set.by_kid("rsa").unwrap().check(Algorithm::HS256).is_err());
        assert!(set.by_kid("p256").unwrap().check(Algorithm::ES384).is_err());
        assert_eq!(set.for_alg(Algorithm::EdDSA).count(), 1);
        assert_eq!(
            set.keys[3].check(Algorithm::RS256),
            Err("the key \"rsa\" is published for RS512 only, not RS256".to_owned())
        );

        let limited = KeySet::parse(doc.to_string().as_bytes(), 2).unwrap();
        assert_eq!(limited.keys.len(), 2);

        assert!(KeySet::parse(b"{}", 10).is_err());
        assert!(KeySet::parse(b"[", 10).is_err());
    }
}
