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
use std::net::IpAddr;
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

fn replayed() -> DpopError {
    invalid("the DPoP proof was used before (its jti); make a fresh proof for each request")
}

/// Checks DPoP proofs; holds the replay cache and the nonce key.
pub(crate) struct DpopVerifier {
    replay: Mutex<Replay>,
    max_replay: usize,
    /// At most this many live entries per key (a tenth of the cache).
    max_per_key: usize,
    /// At most this many live entries per client network (a tenth of the cache): a client
    /// making a fresh key for each proof is bounded too.
    max_per_client: usize,
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
    /// The proofs seen, by id (`jti` and `htu`): their key's thumbprint, and the client
    /// network that sent them (when known).
    seen: HashMap<[u8; 32], (String, Option<IpAddr>)>,
    order: BTreeMap<(Instant, u64), [u8; 32]>,
    /// Live entries per key.
    per_key: HashMap<String, usize>,
    /// Live entries per client network.
    per_client: HashMap<IpAddr, usize>,
    seq: u64,
}

impl Replay {
    fn purge(&mut self, now: Instant) {
        while let Some(e) = self.order.first_entry() {
            if e.key().0 > now {
                break;
            }
            let old = e.remove();
            let Some((jkt, client)) = self.seen.remove(&old) else {
                continue;
            };
            if let Some(n) = self.per_key.get_mut(&jkt) {
                *n -= 1;
                if *n == 0 {
                    self.per_key.remove(&jkt);
                }
            }
            if let Some(client) = client
                && let Some(n) = self.per_client.get_mut(&client)
            {
                *n -= 1;
                if *n == 0 {
                    self.per_client.remove(&client);
                }
            }
        }
    }
}

/// A proof checked but not yet recorded: [`DpopVerifier::record`] it once what it accompanies
/// (a token, a code, a refresh token) checked out, so that proofs with nothing valid behind
/// them never fill the replay cache.
#[derive(Debug, Clone)]
pub(crate) struct Checked {
    /// The JWK SHA-256 thumbprint of the proof's key (RFC 7638), Base64url.
    pub(crate) jkt: String,
    id: [u8; 32],
    iat: u64,
    /// The client network that sent it, when known: its entries are bounded.
    client: Option<IpAddr>,
}

impl Checked {
    /// The proof as sent by `client` (its address, or IPv6 network): recorded under that
    /// client's share of the replay cache.
    pub(crate) fn sent_by(mut self, client: Option<IpAddr>) -> Checked {
        self.client = client;
        self
    }
}

/// Under pressure (the replay cache half full), proofs are accepted only this fresh, and
/// remembered only that long: the cache drains in seconds instead of refusing everyone.
const PRESSED_WINDOW: Duration = Duration::from_secs(10);
const PRESSED_LEEWAY: Duration = Duration::from_secs(5);

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
            max_per_key: 10_000,
            max_per_client: 10_000,
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
    /// fragment), carrying `access_token` when given, and records it.
    #[cfg(test)]
    pub(crate) fn verify(
        &self,
        proof: &str,
        method: &str,
        url: &str,
        access_token: Option<&str>,
    ) -> Result<Checked, DpopError> {
        let c = self.check(proof, method, url, access_token)?;
        self.record(&c)?;
        Ok(c)
    }

    /// The freshness window and the clock leeway now: narrower under pressure.
    fn limits(&self) -> (Duration, Duration) {
        let pressed = self
            .replay
            .lock()
            .map_or(true, |r| r.seen.len() >= self.max_replay / 2);
        if pressed {
            (
                self.window.min(PRESSED_WINDOW),
                self.leeway.min(PRESSED_LEEWAY),
            )
        } else {
            (self.window, self.leeway)
        }
    }

    /// Checks `proof` for a request of `method` to `url` (compared without query and
    /// fragment), carrying `access_token` when given, without recording it (a proof seen
    /// before is refused).
    pub(crate) fn check(
        &self,
        proof: &str,
        method: &str,
        url: &str,
        access_token: Option<&str>,
    ) -> Result<Checked, DpopError> {
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
        let (window, leeway) = self.limits();
        if iat > now + leeway.as_secs() {
            return Err(invalid("the DPoP proof was made in the future (iat)"));
        }
        if iat + window.as_secs() + leeway.as_secs() < now {
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
        let mut h = Sha256::new();
        h.update(jti.as_bytes());
        h.update([0]);
        h.update(normalize(htu).as_bytes());
        let id: [u8; 32] = h.finalize().into();
        let r = self
            .replay
            .lock()
            .map_err(|_| invalid("the DPoP replay cache is unavailable"))?;
        if r.seen.contains_key(&id) {
            return Err(replayed());
        }
        Ok(Checked {
            jkt,
            id,
            iat,
            client: None,
        })
    }

    /// Records a checked proof's `jti` (with its `htu`) until it would be too old anyway; a
    /// second use is a replay. Each key, and each client network, holds at most a tenth of
    /// the cache.
    pub(crate) fn record(&self, c: &Checked) -> Result<(), DpopError> {
        let now = Instant::now();
        let (window, leeway) = self.limits();
        let mut r = self
            .replay
            .lock()
            .map_err(|_| invalid("the DPoP replay cache is unavailable"))?;
        r.purge(now);
        if r.seen.contains_key(&c.id) {
            return Err(replayed());
        }
        if r.per_key.get(&c.jkt).copied().unwrap_or(0) >= self.max_per_key {
            return Err(invalid(
                "too many proofs of this DPoP key are remembered right now; retry shortly",
            ));
        }
        if let Some(client) = c.client
            && r.per_client.get(&client).copied().unwrap_or(0) >= self.max_per_client
        {
            return Err(invalid(
                "too many DPoP proofs from this client's address are remembered right now; retry shortly",
            ));
        }
        if r.seen.len() >= self.max_replay {
            return Err(invalid(
                "too many DPoP proofs are being checked right now; retry shortly",
            ));
        }
        let until = now
            + Duration::from_secs(
                (c.iat + window.as_secs() + leeway.as_secs()).saturating_sub(now_secs()) + 1,
            );
        r.seq += 1;
        let seq = r.seq;
        r.order.insert((until, seq), c.id);
        r.seen.insert(c.id, (c.jkt.clone(), c.client));
        *r.per_key.entry(c.jkt.clone()).or_insert(0) += 1;
        if let Some(client) = c.client {
            *r.per_client.entry(client).or_insert(0) += 1;
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct Key {
        key: jsonwebtoken::EncodingKey,
        jwk: Jwk,
    }

    impl Key {
        fn new() -> Key {
            use p256::pkcs8::EncodePrivateKey as _;
            let secret = loop {
                let mut b = [0u8; 32];
                getrandom::fill(&mut b).unwrap();
                if let Ok(k) = p256::SecretKey::from_slice(&b) {
                    break k;
                }
            };
            let der = secret.to_pkcs8_der().unwrap();
            let key = jsonwebtoken::EncodingKey::from_ec_der(der.as_bytes());
            let jwk = Jwk::from_encoding_key(&key, jsonwebtoken::Algorithm::ES256).unwrap();
            Key { key, jwk }
        }

        fn proof(&self, htu: &str, iat: u64) -> String {
            let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
            header.typ = Some("dpop+jwt".into());
            header.jwk = Some(self.jwk.clone());
            let mut jti = [0u8; 16];
            getrandom::fill(&mut jti).unwrap();
            let claims = json!({"jti": B64.encode(jti), "htm": "POST", "htu": htu, "iat": iat});
            jsonwebtoken::encode(&header, &claims, &self.key).unwrap()
        }
    }

    /// A proof put together by hand (unsigned: refused before its signature is looked at).
    fn forged(header: Value) -> String {
        let claims = json!({"jti": "j", "htm": "POST", "htu": URL, "iat": now_secs()});
        format!(
            "{}.{}.{}",
            B64.encode(header.to_string()),
            B64.encode(claims.to_string()),
            B64.encode(b"sig")
        )
    }

    const URL: &str = "https://as.example/oauth/token";

    fn refused(v: &DpopVerifier, proof: &str) -> String {
        v.check(proof, "POST", URL, None)
            .unwrap_err()
            .reason()
            .to_owned()
    }

    #[test]
    fn private_keys_unaccepted_algorithms_and_stale_proofs_are_refused() {
        let v = DpopVerifier::new(false);
        let key = Key::new();
        let mut jwk = serde_json::to_value(&key.jwk).unwrap();
        jwk["d"] = json!("c2VjcmV0");
        assert_eq!(
            refused(
                &v,
                &forged(json!({"typ": "dpop+jwt", "alg": "ES256", "jwk": jwk}))
            ),
            "the DPoP proof's jwk holds a private or symmetric key"
        );
        for alg in ["none", "HS256"] {
            assert_eq!(
                refused(
                    &v,
                    &forged(json!({"typ": "dpop+jwt", "alg": alg, "jwk": key.jwk}))
                ),
                format!(
                    "the DPoP proof's algorithm {alg:?} is not accepted (accepted: ES256, ES384, RS256, PS256, EdDSA)"
                )
            );
        }
        let now = now_secs();
        assert_eq!(
            refused(&v, &key.proof(URL, now + 120)),
            "the DPoP proof was made in the future (iat)"
        );
        assert_eq!(
            refused(&v, &key.proof(URL, now - 400)),
            "the DPoP proof is too old (iat); make a fresh one"
        );
        // Within the leeway either way: accepted.
        assert!(
            v.check(&key.proof(URL, now + 30), "POST", URL, None)
                .is_ok()
        );
        assert!(
            v.check(&key.proof(URL, now - 330), "POST", URL, None)
                .is_ok()
        );
    }

    #[test]
    fn urls_are_compared_normalised() {
        let v = DpopVerifier::new(false);
        let key = Key::new();
        let proof = key.proof("HTTPS://AS.Example:443/oauth/token?x=1#f", now_secs());
        assert!(v.check(&proof, "POST", URL, None).is_ok());
        assert_eq!(
            v.check(&proof, "POST", "https://as.example/oauth/tokens", None)
                .unwrap_err()
                .reason(),
            "the DPoP proof is for \"HTTPS://AS.Example:443/oauth/token?x=1#f\", not \"https://as.example/oauth/tokens\""
        );
        assert_eq!(normalize("http://h:80"), "http://h/");
        assert_eq!(normalize("https://h:8443/a"), "https://h:8443/a");
    }

    #[test]
    fn a_proof_is_remembered_only_when_recorded() {
        let v = DpopVerifier::new(false);
        let key = Key::new();
        let proof = key.proof(URL, now_secs());
        // Checked twice (what it came with did not check out): not used up.
        let c = v.check(&proof, "POST", URL, None).unwrap();
        assert!(v.check(&proof, "POST", URL, None).is_ok());
        assert!(v.replay.lock().unwrap().seen.is_empty());
        v.record(&c).unwrap();
        assert_eq!(
            refused(&v, &proof),
            "the DPoP proof was used before (its jti); make a fresh proof for each request"
        );
        assert_eq!(v.record(&c).unwrap_err(), replayed());
    }

    #[test]
    fn a_full_cache_narrows_the_window_and_bounds_each_key() {
        let mut v = DpopVerifier::new(false);
        v.max_replay = 4;
        v.max_per_key = 3;
        let (a, b) = (Key::new(), Key::new());
        let now = now_secs();
        // A proof 30 s old is fine while the cache has room.
        let older = a.proof(URL, now - 30);
        assert!(v.check(&older, "POST", URL, None).is_ok());
        for _ in 0..2 {
            v.verify(&a.proof(URL, now), "POST", URL, None).unwrap();
        }
        // Half full: only proofs of the last 10 s (and 5 s of leeway) are taken.
        assert_eq!(
            refused(&v, &older),
            "the DPoP proof is too old (iat); make a fresh one"
        );
        v.verify(&a.proof(URL, now), "POST", URL, None).unwrap();
        // `a` holds its share (3): its next proof is refused, `b`'s is not.
        assert_eq!(
            v.verify(&a.proof(URL, now), "POST", URL, None)
                .unwrap_err()
                .reason(),
            "too many proofs of this DPoP key are remembered right now; retry shortly"
        );
        v.verify(&b.proof(URL, now), "POST", URL, None).unwrap();
        // Full.
        assert_eq!(
            v.verify(&b.proof(URL, now), "POST", URL, None)
                .unwrap_err()
                .reason(),
            "too many DPoP proofs are being checked right now; retry shortly"
        );
        // Remembered only as long as they could be replayed: under pressure, seconds.
        // The two recorded before the pressure stay for the whole window, the others not.
        let r = v.replay.lock().unwrap();
        let soon = Instant::now() + Duration::from_secs(17);
        let long: Vec<_> = r.order.keys().filter(|(until, _)| *until > soon).collect();
        assert_eq!(long.len(), 2, "{:?}", r.order.keys().collect::<Vec<_>>());
        assert_eq!(r.per_key.values().sum::<usize>(), 4);
    }

    #[test]
    fn each_client_address_holds_at_most_its_share_of_the_cache() {
        let mut v = DpopVerifier::new(false);
        v.max_replay = 100;
        v.max_per_client = 3;
        let x: IpAddr = "192.0.2.7".parse().unwrap();
        let y: IpAddr = "2001:db8:1:2::".parse().unwrap();
        let now = now_secs();
        let record = |v: &DpopVerifier, client| {
            // A fresh key each time: the per-key bound does not catch it.
            let c = v
                .check(&Key::new().proof(URL, now), "POST", URL, None)
                .unwrap()
                .sent_by(client);
            v.record(&c)
        };
        for _ in 0..3 {
            record(&v, Some(x)).unwrap();
        }
        assert_eq!(
            record(&v, Some(x)).unwrap_err(),
            DpopError::Invalid(
                "too many DPoP proofs from this client's address are remembered right now; retry shortly"
                    .into()
            )
        );
        // Other clients, and proofs whose client is not known, are still recorded.
        for _ in 0..3 {
            record(&v, Some(y)).unwrap();
            record(&v, None).unwrap();
        }
        let mut r = v.replay.lock().unwrap();
        assert_eq!(r.per_client.get(&x), Some(&3));
        assert_eq!(r.per_client.get(&y), Some(&3));
        assert_eq!(r.seen.len(), 9);
        // Expired entries give the share back.
        r.purge(Instant::now() + Duration::from_secs(400));
        assert!(r.per_client.is_empty() && r.per_key.is_empty() && r.seen.is_empty());
        drop(r);
        record(&v, Some(x)).unwrap();
    }
}
