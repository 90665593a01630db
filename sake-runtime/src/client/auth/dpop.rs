//! DPoP (RFC 9449): sender-constrained tokens. The client holds a P-256 key, proves
//! possession of it with a fresh signed JWT on each token request and each request that
//! carries a DPoP-bound token, and follows the servers' nonces (sections 8 and 9).

use std::collections::HashMap;
use std::sync::Mutex;

use base64::Engine as _;
use http::HeaderValue;
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use p256::pkcs8::EncodePrivateKey as _;
use serde_json::json;
use sha2::{Digest as _, Sha256};

use super::OAuthError;
use super::token::{now, random};

/// The JWS algorithm of the proofs.
pub(crate) const ALG: &str = "ES256";
/// The most nonces kept (one per server and authorization server).
const MAX_NONCES: usize = 256;

/// The key a client proves possession of, and the nonces servers gave it.
pub(crate) struct Dpop {
    key: EncodingKey,
    jwk: Jwk,
    nonces: Mutex<HashMap<String, String>>,
}

impl std::fmt::Debug for Dpop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dpop").finish_non_exhaustive()
    }
}

/// `htu` (RFC 9449 section 4.2): the request's URI without query and fragment.
pub(crate) fn htu(url: &str) -> &str {
    url.split(['?', '#']).next().unwrap_or(url)
}

/// `ath` (RFC 9449 section 4.2): the Base64url SHA-256 of the access token.
pub(crate) fn ath(access_token: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(access_token.as_bytes()))
}

impl Dpop {
    /// A fresh P-256 key.
    pub(crate) fn generate() -> Result<Self, OAuthError> {
        let no_key = |e: String| OAuthError::config(format!("cannot make a DPoP key: {e}"));
        let secret = loop {
            let mut bytes = [0u8; 32];
            getrandom::fill(&mut bytes).map_err(|e| no_key(e.to_string()))?;
            // A scalar outside [1, n) (probability about 2^-32): draw again.
            if let Ok(k) = p256::SecretKey::from_slice(&bytes) {
                break k;
            }
        };
        let der = secret.to_pkcs8_der().map_err(|e| no_key(e.to_string()))?;
        let key = EncodingKey::from_ec_der(der.as_bytes());
        let jwk =
            Jwk::from_encoding_key(&key, Algorithm::ES256).map_err(|e| no_key(e.to_string()))?;
        Ok(Dpop {
            key,
            jwk,
            nonces: Mutex::new(HashMap::new()),
        })
    }

    /// A proof for one request (RFC 9449 section 4.2): `typ` `dpop+jwt`, the public key in
    /// the header; a unique `jti`, `htm`, `htu`, `iat`; `ath` with an access token; the
    /// server's last nonce for `origin`, if it gave one.
    pub(crate) fn proof(
        &self,
        method: &str,
        url: &str,
        access_token: Option<&str>,
        origin: &str,
    ) -> Result<HeaderValue, OAuthError> {
        let mut header = Header::new(Algorithm::ES256);
        header.typ = Some("dpop+jwt".into());
        header.jwk = Some(self.jwk.clone());
        let mut claims = json!({
            "jti": random(16)?,
            "htm": method,
            "htu": htu(url),
            "iat": now(),
        });
        if let Some(t) = access_token {
            claims["ath"] = json!(ath(t));
        }
        if let Some(n) = self.nonce(origin) {
            claims["nonce"] = json!(n);
        }
        let jwt = jsonwebtoken::encode(&header, &claims, &self.key)
            .map_err(|e| OAuthError::config(format!("cannot sign a DPoP proof: {e}")))?;
        HeaderValue::from_str(&jwt)
            .map_err(|_| OAuthError::config("a DPoP proof cannot be sent in a header"))
    }

    /// The last nonce `origin` (a server or a token endpoint) gave.
    pub(crate) fn nonce(&self, origin: &str) -> Option<String> {
        self.nonces.lock().ok()?.get(origin).cloned()
    }

    /// Keeps the nonce `origin` gave (the `DPoP-Nonce` header); `true` when it is new.
    pub(crate) fn set_nonce(&self, origin: &str, nonce: &str) -> bool {
        let Ok(mut n) = self.nonces.lock() else {
            return false;
        };
        if n.get(origin).is_some_and(|old| old == nonce) {
            return false;
        }
        if n.len() >= MAX_NONCES && !n.contains_key(origin) {
            n.clear();
        }
        n.insert(origin.to_owned(), nonce.chars().take(512).collect());
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proofs_are_signed_by_the_key_they_carry() {
        let d = Dpop::generate().unwrap();
        d.set_nonce("https://mcp.example", "n1");
        let p = d
            .proof(
                "POST",
                "https://mcp.example/mcp?x=1#f",
                Some("tok"),
                "https://mcp.example",
            )
            .unwrap();
        let jwt = p.to_str().unwrap();
        let header = jsonwebtoken::decode_header(jwt).unwrap();
        assert_eq!(header.typ.as_deref(), Some("dpop+jwt"));
        assert_eq!(header.alg, Algorithm::ES256);
        let jwk = header.jwk.unwrap();
        // The public key only.
        assert!(!serde_json::to_string(&jwk).unwrap().contains("\"d\""));
        let key = jsonwebtoken::DecodingKey::from_jwk(&jwk).unwrap();
        let mut v = jsonwebtoken::Validation::new(Algorithm::ES256);
        v.required_spec_claims.clear();
        v.validate_exp = false;
        let claims = jsonwebtoken::decode::<serde_json::Value>(jwt, &key, &v)
            .unwrap()
            .claims;
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "https://mcp.example/mcp");
        assert_eq!(claims["ath"], ath("tok"));
        assert_eq!(claims["nonce"], "n1");
        assert!(claims["iat"].as_u64().unwrap() >= now() - 5);
        // A fresh jti each time.
        let again = d
            .proof("POST", "https://mcp.example/mcp", None, "other")
            .unwrap();
        let c2 = jsonwebtoken::decode::<serde_json::Value>(again.to_str().unwrap(), &key, &v)
            .unwrap()
            .claims;
        assert_ne!(claims["jti"], c2["jti"]);
        assert!(c2.get("ath").is_none() && c2.get("nonce").is_none());
        // RFC 9449 appendix: ath of a known token.
        assert_eq!(
            ath("Kz~8mXK1EalYznwH-LC-1fBAo.4Ljp~zsPE_NeO.gxU"),
            "fUHyO2r2Z3DZ53EsNrWBb0xWXoaNy59IiKCAqksmQEo"
        );
        assert!(!d.set_nonce("https://mcp.example", "n1"));
        assert!(d.set_nonce("https://mcp.example", "n2"));
    }
}
