//! DPoP (RFC 9449) on the server side: proofs checked for the resource server (a request that
//! carries a DPoP-bound access token) and for the authorization proxy's token endpoint (a client
//! asking for a DPoP-bound token).
//!
//! A proof is accepted when it is a JWT typed `dpop+jwt`, signed with an asymmetric algorithm
//! by the public key in its own header (`jwk`, never a private key); names the request's method
//! (`htm`) and URL without query and fragment (`htu`); was made recently (`iat` within the
//! window, 5 minutes by default, with 60 s of clock leeway); carries a `jti` never seen before
//! within that window (a bounded replay cache); with an access token, carries its hash (`ath`);
//! and, when nonces are required, a nonce this server issued lately (stateless: a time step and
//! its MAC).

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use hmac::{Hmac, KeyInit, Mac};
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{DecodingKey, Validation};
use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// The algorithms proofs may be signed with (asymmetric only).
pub(crate) const ALGORITHMS: &[&str] = &["ES256", "ES384", "RS256", "PS256", "EdDSA"];
/// The longest proof accepted, in bytes.
const MAX_PROOF_BYTES: usize = 8 * 1024;
/// How long a nonce stays valid: its time step and the one before.
const NONCE_STEP: u64 = 300;

/// Why a proof was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum DpopError {
    /// The proof is missing, malformed or does not fit the request (`invalid_dpop_proof`).
    Invalid(String),
    /// The proof carries no nonce, or one too old: retry with the nonce given
    /// (`use_dpop_nonce`).
    UseNonce(String),
}

impl DpopError {
    /// The error code of the challenge (RFC 9449 sections 7.1 and 12.2).
    pub(crate) fn code(&self) -> &'static str {
        match self {
            DpopError::Invalid(_) => "invalid_dpop_proof",
            DpopError::UseNonce(_) => "use_dpop_nonce",
        }
    }

    /// Why, for a person.
    pub(crate) fn reason(&self) -> &str {
        match self {
            DpopError::Invalid(r) | DpopError::UseNonce(r) => r,
        }
    }
}

fn invalid(reason: impl Into<String>) -> DpopError {
    DpopError::Invalid(reason.into())
}

/// Checks DPoP proofs; holds the replay cache and the nonce key.
pub(crate) struct DpopVerifier {
    replay: Mutex<Replay>,
    max_replay: usize,
    window: Duration,
    leeway: Duration,
    nonce_key: [u8; 32],
    require_nonce: bool,
}

impl std::fmt::Debug for DpopVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DpopVerifier")
            .field("window", &self.window)
            .field("require_nonce", &self.require_nonce)
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct Replay {
    seen: HashMap<[u8; 32], Instant>,
    order: BTreeMap<(Instant, u64), [u8; 32]>,
    seq: u64,
}

/// What a verified proof says.
#[derive(Debug, Clone)]
pub(crate) struct Proof {
    /// The JWK SHA-256 thumbprint of the proof's key (RFC 7638), Base64url.
    pub(crate) jkt: String,
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl DpopVerifier {
    /// A verifier with a fresh nonce key; `require_nonce`: every proof must carry a nonce this
    /// server issued.
    pub(crate) fn new(require_nonce: bool) -> Self {
        let mut key = [0u8; 32];
        // Without randomness the key is zero: nonces are then predictable, which only makes
        // them as good as no nonce (proofs are still signed and checked).
        let _ = getrandom::fill(&mut key);
        Self::with_key(&key, require_nonce)
    }

    /// A verifier whose nonces are made with `key` (replicas sharing it accept each other's
    /// nonces).
    pub(crate) fn with_key(key: &[u8], require_nonce: bool) -> Self {
        let nonce_key: [u8; 32] = Sha256::digest(key).into();
        DpopVerifier {
            replay: Mutex::new(Replay::default()),
            max_replay: 100_000,
            window: Duration::from_secs(300),
            leeway: Duration::from_secs(60),
            nonce_key,
            require_nonce,
        }
    }

    /// A fresh nonce (RFC 9449 section 8): valid for this time step and the next.
    pub(crate) fn nonce(&self) -> String {
        self.nonce_at(now_secs() / NONCE_STEP)
    }

    fn nonce_at(&self, step: u64) -> String {
        let Ok(mut mac) = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.nonce_key) else {
            return String::new();
        };
        mac.update(b"dpop-nonce.");
        mac.update(&step.to_be_bytes());
        let tag = mac.finalize().into_bytes();
        let mut bytes = step.to_be_bytes().to_vec();
        bytes.extend_from_slice(&tag[..16]);
        B64.encode(bytes)
    }

    fn nonce_ok(&self, nonce: &str) -> bool {
        let step = now_secs() / NONCE_STEP;
        !nonce.is_empty()
            && [step, step.saturating_sub(1)]
                .iter()
                .any(|s| self.nonce_at(*s) == nonce)
    }

    /// Verifies `proof` for a request of `method` to `url` (compared without query and
    /// fragment), carrying `access_token` when given.
    pub(crate) fn verify(
        &self,
        proof: &str,
        method: &str,
        url: &str,
        access_token: Option<&str>,
    ) -> Result<Proof, DpopError> {
        if proof.len() > MAX_PROOF_BYTES {
            return Err(invalid(format!(
                "the DPoP proof is longer than {MAX_PROOF_BYTES} bytes"
            )));
        }
        let mut parts = proof.split('.');
        let (Some(h), Some(_), Some(_), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(invalid("the DPoP proof is not a signed JWT"));
        };
        let header: Map<String, Value> = B64
            .decode(h)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .ok_or_else(|| invalid("the DPoP proof's header is not Base64url JSON"))?;
        if header.get("typ").and_then(Value::as_str) != Some("dpop+jwt") {
            return Err(invalid("the DPoP proof is not typed dpop+jwt"));
        }
        let alg = header
            .get("alg")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !ALGORITHMS.contains(&alg) {
            return Err(invalid(format!(
                "the DPoP proof's algorithm {alg:?} is not accepted (accepted: {})",
                ALGORITHMS.join(", ")
            )));
        }
        let jwk_value = header
            .get("jwk")
            .and_then(Value::as_object)
            .ok_or_else(|| invalid("the DPoP proof's header carries no jwk"))?;
        if ["d", "p", "q", "dp", "dq", "qi", "k"]
            .iter()
            .any(|m| jwk_value.contains_key(*m))
        {
            return Err(invalid(
                "the DPoP proof's jwk holds a private or symmetric key",
            ));
        }
        let jkt = thumbprint(jwk_value)
            .ok_or_else(|| invalid("the DPoP proof's jwk is not a usable public key"))?;
        let jwk: Jwk = serde_json::from_value(Value::Object(jwk_value.clone()))
            .map_err(|_| invalid("the DPoP proof's jwk is not a usable public key"))?;
        let key = DecodingKey::from_jwk(&jwk)
            .map_err(|_| invalid("the DPoP proof's jwk is not a usable public key"))?;
        let algorithm: jsonwebtoken::Algorithm = alg
            .parse()
            .map_err(|_| invalid(format!("the DPoP proof's algorithm {alg:?} is unknown")))?;
        let mut validation = Validation::new(algorithm);
        validation.required_spec_claims.clear();
        validation.validate_exp = false;
        validation.validate_nbf = false;
        validation.validate_aud = false;
        let claims = jsonwebtoken::decode::<Map<String, Value>>(proof, &key, &validation)
            .map_err(|e| {
                invalid(format!(
                    "the DPoP proof does not verify with its own key: {e}"
                ))
            })?
            .claims;
        let text = |n: &str| claims.get(n).and_then(Value::as_str);
        if text("htm") != Some(method) {
            return Err(invalid(format!(
                "the DPoP proof is for the method {:?}, not {method}",
                text("htm").unwrap_or("(none)")
            )));
        }
        let htu = text("htu").unwrap_or_default();
        if normalize(htu) != normalize(url) {
            return Err(invalid(format!(
                "the DPoP proof is for {htu:?}, not {:?}",
                normalize(url)
            )));
        }
        let iat = claims
            .get("iat")
            .and_then(Value::as_u64)
            .ok_or_else(|| invalid("the DPoP proof has no iat"))?;
        let now = now_secs();
        if iat > now + self.leeway.as_secs() {
            return Err(invalid("the DPoP proof was made in the future (iat)"));
        }
        if iat + self.window.as_secs() + self.leeway.as_secs() < now {
            return Err(invalid("the DPoP proof is too old (iat); make a fresh one"));
        }
        if let Some(token) = access_token {
            let ath = B64.encode(Sha256::digest(token.as_bytes()));
            if text("ath") != Some(ath.as_str()) {
                return Err(invalid(
                    "the DPoP proof's ath is not the hash of the access token",
                ));
            }
        }
        if self.require_nonce {
            match text("nonce") {
                Some(n) if self.nonce_ok(n) => {}
                Some(_) => {
                    return Err(DpopError::UseNonce(
                        "the DPoP proof's nonce is not current; use the one in DPoP-Nonce".into(),
                    ));
                }
                None => {
                    return Err(DpopError::UseNonce(
                        "this server needs a nonce in DPoP proofs; use the one in DPoP-Nonce"
                            .into(),
                    ));
                }
            }
        }
        let jti = text("jti")
            .filter(|j| !j.is_empty() && j.len() <= 256)
            .ok_or_else(|| {
                invalid("the DPoP proof has no jti (a unique id of at most 256 characters)")
            })?;
        // Last: a proof refused for another reason does not use up its jti.
        self.remember(jti, htu)?;
        Ok(Proof { jkt })
    }

    /// Records a proof's `jti` (with its `htu`); a second use within the window is a replay.
    fn remember(&self, jti: &str, htu: &str) -> Result<(), DpopError> {
        let mut h = Sha256::new();
        h.update(jti.as_bytes());
        h.update([0]);
        h.update(normalize(htu).as_bytes());
        let id: [u8; 32] = h.finalize().into();
        let now = Instant::now();
        let mut r = self
            .replay
            .lock()
            .map_err(|_| invalid("the DPoP replay cache is unavailable"))?;
        while let Some(e) = r.order.first_entry() {
            if e.key().0 > now {
                break;
            }
            let old = e.remove();
            r.seen.remove(&old);
        }
        if r.seen.contains_key(&id) {
            return Err(invalid(
                "the DPoP proof was used before (its jti); make a fresh proof for each request",
            ));
        }
        if r.seen.len() >= self.max_replay {
            return Err(invalid(
                "too many DPoP proofs are being checked right now; retry shortly",
            ));
        }
        let until = now + self.window + self.leeway * 2;
        r.seq += 1;
        let seq = r.seq;
        r.order.insert((until, seq), id);
        r.seen.insert(id, until);
        Ok(())
    }
}

/// A URL compared as RFC 9449 section 4.3 says: without query and fragment, the scheme and
/// host in lower case, the default port dropped, an empty path as `/`.
pub(crate) fn normalize(url: &str) -> String {
    let url = url.split(['?', '#']).next().unwrap_or(url);
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let scheme = scheme.to_ascii_lowercase();
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, "/"),
    };
    let mut authority = authority.to_ascii_lowercase();
    let default = match scheme.as_str() {
        "https" => ":443",
        "http" => ":80",
        _ => "",
    };
    if !default.is_empty() && authority.ends_with(default) {
        authority.truncate(authority.len() - default.len());
    }
    format!("{scheme}://{authority}{path}")
}

/// The JWK SHA-256 thumbprint (RFC 7638) of a public key, Base64url; `None` for a key type it
/// does not cover.
pub(crate) fn thumbprint(jwk: &Map<String, Value>) -> Option<String> {
    let s = |n: &str| jwk.get(n).and_then(Value::as_str);
    let canonical = match s("kty")? {
        "EC" => format!(
            r#"{{"crv":{},"kty":"EC","x":{},"y":{}}}"#,
            Value::from(s("crv")?),
            Value::from(s("x")?),
            Value::from(s("y")?)
        ),
        "RSA" => format!(
            r#"{{"e":{},"kty":"RSA","n":{}}}"#,
            Value::from(s("e")?),
            Value::from(s("n")?)
        ),
        "OKP" => format!(
            r#"{{"crv":{},"kty":"OKP","x":{}}}"#,
            Value::from(s("crv")?),
            Value::from(s("x")?)
        ),
        _ => return None,
    };
    Some(B64.encode(Sha256::digest(canonical.as_bytes())))
}

/// The `cnf.jkt` a token is bound to (RFC 9449 section 6), when its claims carry one; `Err`
/// when they carry a confirmation this server cannot check (another `cnf` member).
pub(crate) fn bound_key(claims: &Map<String, Value>) -> Result<Option<&str>, String> {
    let Some(cnf) = claims.get("cnf") else {
        return Ok(None);
    };
    match cnf.get("jkt").and_then(Value::as_str) {
        Some(jkt) => Ok(Some(jkt)),
        None => Err(
            "the token is bound to a key by a confirmation (cnf) this server cannot check".into(),
        ),
    }
}
