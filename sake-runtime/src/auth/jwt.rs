//! JWT access tokens (RFC 9068) checked against the issuer's published keys.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{DecodingKey, Validation};
use serde_json::{Map, Value};

use super::discovery::check_issuer;
use super::key_store::{KeyStore, Refresh, Source};
use super::keys::{Algorithm, Key, KeySet};
use super::verifier::Common;
use super::{AuthError, Principal, TokenVerifier, VerifyFuture};

/// Checks JWT access tokens (RFC 9068) issued by one authorization server for this resource.
///
/// A token is accepted when:
/// - it is a signed JWT (JWS compact serialization) whose `alg` is among the accepted
///   algorithms (by default RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384 and EdDSA;
///   never `none`; HS256/384/512 only with a configured [shared
///   secret](JwtVerifierBuilder::hmac_secret)) and whose `typ`, when present, is `at+jwt`
///   (or `JWT`, unless [only `at+jwt`](JwtVerifierBuilder::require_at_jwt_type) is accepted);
/// - its signature verifies with the issuer's key named by its `kid` — a key is only used
///   with an algorithm of its own family and curve, and with its own `alg` when the key set
///   names one — or, without a `kid`, with one of the issuer's keys for its algorithm;
/// - its `iss` is exactly the issuer, its `aud` names the resource (RFC 8707), its `exp` has
///   not passed, and its `nbf` and `iat`, when present, are not in the future (all with the
///   clock leeway, 60 s by default).
///
/// The issuer's keys come from its JWKS, found through its metadata (RFC 8414
/// `/.well-known/oauth-authorization-server`, then OpenID Connect discovery, in the order the
/// MCP authorization pages give, the document's `issuer` checked to be the configured one),
/// or from an explicit JWKS URL, or from a static key set. They are fetched on first use (or
/// with [`load_keys`](Self::load_keys)), again when older than the maximum age (1 hour by
/// default; on failure the keys held are kept), and again when a token names an unknown
/// `kid` — at most once per refresh interval (30 s by default), one fetch shared by all the
/// requests that miss at the same time.
///
/// Header parameters that point at keys (`jku`, `x5u`, `jwk`, `x5c`) are ignored: keys only
/// ever come from the configured issuer. Tokens with critical header extensions (`crit`) and
/// encrypted tokens (JWE) are refused.
///
/// ```no_run
/// # async fn demo() -> Result<(), sake_runtime::auth::AuthError> {
/// use sake_runtime::auth::{JwtVerifier, TokenVerifier};
///
/// let verifier = JwtVerifier::builder("https://auth.example.com", "https://mcp.example.com/mcp")
///     .build()?;
/// verifier.load_keys().await?; // optional: fail at startup rather than on the first request
/// let principal = verifier.verify("eyJhbGciOiJSUzI1NiIs...").await?;
/// println!("{} may use {:?}", principal.subject(), principal.scopes());
/// # Ok(()) }
/// ```
///
/// Cloning is cheap and shares the keys.
#[derive(Clone)]
pub struct JwtVerifier {
    inner: Arc<Inner>,
}

struct Inner {
    issuer: String,
    audiences: Vec<String>,
    algorithms: Vec<Algorithm>,
    validations: HashMap<Algorithm, Validation>,
    leeway_secs: u64,
    hmac: Option<DecodingKey>,
    store: KeyStore,
    max_token_bytes: usize,
    require_at_jwt: bool,
    /// A token without `sub` is its `client_id`'s (`client_id_as_subject`).
    client_id_as_subject: bool,
    /// The only `typ` accepted, for JWTs other than access tokens (an ID-JAG).
    token_type: Option<&'static str>,
}

impl fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JwtVerifier")
            .field("issuer", &self.inner.issuer)
            .field("audiences", &self.inner.audiences)
            .field("algorithms", &self.inner.algorithms)
            .field("leeway_secs", &self.inner.leeway_secs)
            .field("hmac", &self.inner.hmac.is_some())
            .finish_non_exhaustive()
    }
}

/// Configures a [`JwtVerifier`]; made by [`JwtVerifier::builder`].
#[derive(Debug, Clone)]
#[must_use]
pub struct JwtVerifierBuilder {
    issuer: String,
    common: Common,
    algorithms: Option<Vec<Algorithm>>,
    source: Source,
    hmac_secret: Option<Vec<u8>>,
    refresh_interval: Duration,
    max_age: Duration,
    max_keys: usize,
    require_at_jwt: bool,
    token_type: Option<&'static str>,
}

impl JwtVerifier {
    /// Starts configuring a verifier of tokens issued by `issuer` (the authorization server's
    /// issuer identifier, exactly as its metadata and tokens spell it) for `audience` (this
    /// server's canonical resource URI, RFC 8707 section 2, e.g.
    /// `https://mcp.example.com/mcp`).
    pub fn builder(issuer: impl Into<String>, audience: impl Into<String>) -> JwtVerifierBuilder {
        JwtVerifierBuilder {
            issuer: issuer.into(),
            common: Common::new(audience.into(), 512 * 1024),
            algorithms: None,
            source: Source::Discover,
            hmac_secret: None,
            refresh_interval: Duration::from_secs(30),
            max_age: Duration::from_secs(3600),
            max_keys: 64,
            require_at_jwt: false,
            token_type: None,
        }
    }

    /// The issuer whose tokens are accepted.
    pub fn issuer(&self) -> &str {
        &self.inner.issuer
    }

    /// The audiences accepted (the canonical resource URI, and any other configured).
    pub fn audiences(&self) -> &[String] {
        &self.inner.audiences
    }

    /// Fetches the issuer's keys now (discovering its metadata first, unless a JWKS URL or
    /// static keys are configured), so that a misconfiguration shows at startup rather than
    /// on the first request. Verifying loads them on first use anyway.
    pub async fn load_keys(&self) -> Result<(), AuthError> {
        let store = &self.inner.store;
        let loaded = store.current();
        if loaded.fetched_at.is_some() {
            return Ok(());
        }
        store
            .refresh(loaded.generation, Refresh::Initial)
            .await
            .map(drop)
    }

    async fn verify_token(&self, token: &str) -> Result<Principal, AuthError> {
        let inner = &*self.inner;
        let header = match inner.token_type {
            Some(typ) => parse_header_typed(token, inner.max_token_bytes, typ)?,
            None => parse_header(token, inner.max_token_bytes, inner.require_at_jwt)?,
        };
        let alg = accept_alg(&header.alg, &inner.algorithms)?;
        if alg.is_symmetric() {
            let Some(secret) = &inner.hmac else {
                return Err(unusable(&header.alg, "no shared secret is configured"));
            };
            return self.finish(token, alg, secret);
        }
        let loaded = inner.store.keys().await?;
        if let Some(kid) = &header.kid {
            let key = match loaded.set.by_kid(kid) {
                Some(key) => key.clone(),
                None => {
                    let loaded = inner
                        .store
                        .refresh(loaded.generation, Refresh::UnknownKey)
                        .await?;
                    loaded
                        .set
                        .by_kid(kid)
                        .cloned()
                        .ok_or_else(|| AuthError::UnknownKey {
                            kid: Some(kid.clone()),
                        })?
                }
            };
            key.check(alg).map_err(|why| unusable(&header.alg, why))?;
            return self.finish(token, alg, &key.decoding);
        }
        let mut candidates: Vec<Arc<Key>> = loaded.set.for_alg(alg).cloned().collect();
        if candidates.is_empty() {
            let loaded = inner
                .store
                .refresh(loaded.generation, Refresh::UnknownKey)
                .await?;
            candidates = loaded.set.for_alg(alg).cloned().collect();
        }
        if candidates.is_empty() {
            return Err(AuthError::UnknownKey { kid: None });
        }
        for key in &candidates {
            match self.finish(token, alg, &key.decoding) {
                Err(AuthError::InvalidToken { reason }) if reason == BAD_SIGNATURE => continue,
                other => return other,
            }
        }
        Err(AuthError::invalid(format!(
            "its signature does not verify with any of the issuer's {alg} keys (it names no kid)"
        )))
    }

    /// Verifies the signature and the claims with `key`, and builds the principal.
    fn finish(
        &self,
        token: &str,
        alg: Algorithm,
        key: &DecodingKey,
    ) -> Result<Principal, AuthError> {
        let inner = &*self.inner;
        let Some(validation) = inner.validations.get(&alg) else {
            return Err(unusable(alg.as_str(), "it is not accepted"));
        };
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, key, validation)
            .map_err(|e| self.map_error(e.kind(), alg))?;
        let claims = data.claims;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        if let Some(iat) = claims.get("iat") {
            let Some(iat) = numeric_date(iat) else {
                return Err(AuthError::invalid("its iat claim is not a number"));
            };
            if iat > now.saturating_add(inner.leeway_secs) {
                return Err(AuthError::invalid(
                    "it was issued in the future (iat), beyond the allowed clock skew",
                ));
            }
        }
        principal_from_claims(claims, inner.client_id_as_subject)
    }

    fn map_error(&self, kind: &ErrorKind, alg: Algorithm) -> AuthError {
        let inner = &*self.inner;
        match kind {
            ErrorKind::InvalidSignature => AuthError::invalid(BAD_SIGNATURE),
            ErrorKind::ExpiredSignature => AuthError::Expired,
            ErrorKind::ImmatureSignature => {
                AuthError::invalid("it is not valid yet (nbf is in the future)")
            }
            ErrorKind::InvalidAudience => AuthError::WrongAudience {
                reason: format!(
                    "its aud does not name {}",
                    inner
                        .audiences
                        .iter()
                        .map(|a| format!("{a:?}"))
                        .collect::<Vec<_>>()
                        .join(" or ")
                ),
            },
            ErrorKind::InvalidIssuer => AuthError::WrongIssuer {
                reason: format!("its iss is not {:?}", inner.issuer),
            },
            ErrorKind::MissingRequiredClaim(claim) => {
                AuthError::invalid(format!("its {claim} claim is missing or malformed"))
            }
            ErrorKind::InvalidClaimFormat(claim) => {
                AuthError::invalid(format!("its {claim} claim has the wrong type"))
            }
            ErrorKind::InvalidAlgorithm | ErrorKind::MissingAlgorithm => {
                unusable(alg.as_str(), "it does not fit the key")
            }
            ErrorKind::InvalidEcdsaKey
            | ErrorKind::InvalidEddsaKey
            | ErrorKind::InvalidRsaKey(_)
            | ErrorKind::InvalidKeyFormat => AuthError::invalid(BAD_SIGNATURE),
            ErrorKind::Base64(_) => AuthError::invalid("a part of it is not base64url"),
            ErrorKind::Json(_) | ErrorKind::Utf8(_) => {
                AuthError::invalid("its claims are not a JSON object")
            }
            ErrorKind::InvalidToken => {
                AuthError::invalid("it is not a JWT (three base64url parts separated by dots)")
            }
            other => AuthError::invalid(format!("it cannot be verified: {other:?}")),
        }
    }
}

const BAD_SIGNATURE: &str = "its signature does not verify";

impl TokenVerifier for JwtVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a> {
        Box::pin(self.verify_token(token))
    }
}

fn unusable(alg: &str, reason: impl Into<String>) -> AuthError {
    AuthError::UnusableAlgorithm {
        alg: alg.to_owned(),
        reason: reason.into(),
    }
}

/// A NumericDate (RFC 7519 section 2): seconds since the epoch, possibly fractional.
fn numeric_date(v: &Value) -> Option<u64> {
    if let Some(n) = v.as_u64() {
        return Some(n);
    }
    let f = v.as_f64()?;
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    (0.0..1.0e19).contains(&f).then_some(f as u64)
}

/// The parts of a JWS header used here.
struct Header {
    alg: String,
    kid: Option<String>,
}

/// Checks the shape of a compact JWS and reads its header.
fn parse_header(token: &str, max_bytes: usize, require_at_jwt: bool) -> Result<Header, AuthError> {
    parse_header_inner(token, max_bytes, require_at_jwt, false)
}

fn parse_header_inner(
    token: &str,
    max_bytes: usize,
    require_at_jwt: bool,
    typ_checked: bool,
) -> Result<Header, AuthError> {
    if token.len() > max_bytes {
        return Err(AuthError::invalid(format!(
            "it is longer than {max_bytes} bytes"
        )));
    }
    let parts: Vec<&str> = token.split('.').collect();
    match parts.len() {
        3 => {}
        5 => {
            return Err(AuthError::invalid(
                "it is an encrypted JWT (JWE); only signed JWTs are accepted",
            ));
        }
        _ => {
            return Err(AuthError::invalid(
                "it is not a JWT (three base64url parts separated by dots)",
            ));
        }
    }
    let base64url = |s: &str| {
        s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    };
    if !parts.iter().all(|p| base64url(p)) {
        return Err(AuthError::invalid(
            "it holds characters outside the base64url alphabet",
        ));
    }
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(parts[0])
        .map_err(|_| AuthError::invalid("its header is not base64url"))?;
    let header: Map<String, Value> = serde_json::from_slice(&bytes)
        .map_err(|_| AuthError::invalid("its header is not a JSON object"))?;
    let Some(alg) = header.get("alg").and_then(Value::as_str) else {
        return Err(AuthError::invalid("its header names no alg"));
    };
    if alg.eq_ignore_ascii_case("none") {
        return Err(unusable(
            alg,
            "unsigned tokens (alg none) are never accepted",
        ));
    }
    if parts[2].is_empty() {
        return Err(AuthError::invalid("it has no signature"));
    }
    let kid = match header.get("kid") {
        None => None,
        Some(Value::String(kid)) => Some(kid.clone()),
        Some(_) => return Err(AuthError::invalid("its header's kid is not a string")),
    };
    if header.contains_key("crit") {
        return Err(AuthError::invalid(
            "its header has critical extensions (crit), which this server does not implement",
        ));
    }
    match header.get("typ") {
        _ if typ_checked => {}
        None if require_at_jwt => {
            return Err(AuthError::invalid(
                "its header has no typ; only at+jwt access tokens (RFC 9068) are accepted",
            ));
        }
        None => {}
        Some(Value::String(typ)) => {
            // Media types compare case-insensitively, `application/` may be left out
            // (RFC 7515 section 4.1.9).
            let typ = typ.to_ascii_lowercase();
            let typ = typ.strip_prefix("application/").unwrap_or(&typ);
            let ok = typ == "at+jwt" || (typ == "jwt" && !require_at_jwt);
            if !ok {
                return Err(AuthError::invalid(format!(
                    "its typ is {typ:?}; an access token is typed at+jwt (RFC 9068){}",
                    if require_at_jwt { "" } else { " or JWT" }
                )));
            }
        }
        Some(_) => return Err(AuthError::invalid("its header's typ is not a string")),
    }
    Ok(Header {
        alg: alg.to_owned(),
        kid,
    })
}

/// Reads the header of a JWT that must be typed `typ` exactly (media types compare
/// case-insensitively, `application/` may be left out).
fn parse_header_typed(token: &str, max_bytes: usize, typ: &str) -> Result<Header, AuthError> {
    let parts: Vec<&str> = token.split('.').collect();
    let given = parts
        .first()
        .and_then(|h| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(h)
                .ok()
        })
        .and_then(|b| serde_json::from_slice::<Map<String, Value>>(&b).ok())
        .and_then(|h| {
            h.get("typ")
                .and_then(Value::as_str)
                .map(str::to_ascii_lowercase)
        });
    let given = given
        .as_deref()
        .map(|t| t.strip_prefix("application/").unwrap_or(t));
    if given != Some(typ) {
        return Err(AuthError::invalid(format!("it is not typed {typ}")));
    }
    // The rest as for access tokens, with the type already checked.
    parse_header_untyped(token, max_bytes)
}

/// Reads the header of a JWT whose `typ` was checked already.
fn parse_header_untyped(token: &str, max_bytes: usize) -> Result<Header, AuthError> {
    parse_header_inner(token, max_bytes, false, true)
}

/// The token's algorithm, when it is one of the accepted ones.
fn accept_alg(alg: &str, accepted: &[Algorithm]) -> Result<Algorithm, AuthError> {
    let list = || {
        accepted
            .iter()
            .map(|a| a.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let parsed: Algorithm = alg
        .parse()
        .map_err(|_| unusable(alg, format!("it is not supported; accepted: {}", list())))?;
    if !accepted.contains(&parsed) {
        return Err(unusable(
            alg,
            format!("it is not among the accepted algorithms ({})", list()),
        ));
    }
    Ok(parsed)
}

/// The principal named by verified claims.
///
/// A token without `sub` names its caller by its `client_id` only when `client_id_as_subject`
/// says so (a token a client got for itself); otherwise it is refused, since that name could
/// be a user's `sub` too.
pub(crate) fn principal_from_claims(
    claims: Map<String, Value>,
    client_id_as_subject: bool,
) -> Result<Principal, AuthError> {
    let text = |name: &str| -> Result<Option<String>, AuthError> {
        match claims.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(AuthError::invalid(format!(
                "its {name} claim is not a string"
            ))),
        }
    };
    let client_id = text("client_id")?;
    let subject = match text("sub")? {
        Some(sub) if sub.is_empty() => return Err(AuthError::invalid("its sub claim is empty")),
        Some(sub) => sub,
        None if client_id_as_subject => client_id
            .clone()
            .ok_or_else(|| AuthError::invalid("it names no subject (neither sub nor client_id)"))?,
        None => {
            return Err(AuthError::invalid(
                "it names no subject (sub); a token a client got for itself is accepted only where the server takes its client_id as the subject (client_id_as_subject)",
            ));
        }
    };
    let issuer = text("iss")?;
    let scopes = scopes_of(&claims)?;
    let expires_at = claims
        .get("exp")
        .and_then(numeric_date)
        .map(|exp| UNIX_EPOCH + Duration::from_secs(exp));
    let mut principal = Principal::new(subject).with_scopes(scopes);
    if let Some(id) = client_id {
        principal = principal.with_client_id(id);
    }
    if let Some(iss) = issuer {
        principal = principal.with_issuer(iss);
    }
    if let Some(exp) = expires_at {
        principal = principal.with_expires_at(exp);
    }
    Ok(principal.with_claims(claims))
}

/// The scopes a token grants: `scope`, a space-separated string (RFC 9068 section 2.2.3,
/// RFC 7662 section 2.2); tokens of some issuers carry a list instead, or `scp`.
fn scopes_of(claims: &Map<String, Value>) -> Result<Vec<String>, AuthError> {
    let (name, value) = match (claims.get("scope"), claims.get("scp")) {
        (Some(v), _) => ("scope", v),
        (None, Some(v)) => ("scp", v),
        (None, None) => return Ok(Vec::new()),
    };
    match value {
        Value::Null => Ok(Vec::new()),
        Value::String(s) => Ok(s
            .split(' ')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()),
        Value::Array(items) => items
            .iter()
            .map(|v| {
                v.as_str().map(str::to_owned).ok_or_else(|| {
                    AuthError::invalid(format!("its {name} claim holds a non-string"))
                })
            })
            .collect(),
        _ => Err(AuthError::invalid(format!(
            "its {name} claim is neither a string nor a list"
        ))),
    }
}

impl JwtVerifierBuilder {
    /// Also accepts tokens whose `aud` names `audience` (e.g. the resource URI under another
    /// public name).
    pub fn audience(mut self, audience: impl Into<String>) -> Self {
        self.common.audiences.push(audience.into());
        self
    }

    /// The algorithms accepted (replacing the default list). HS256/384/512 need a
    /// [shared secret](Self::hmac_secret).
    pub fn algorithms(mut self, algorithms: impl IntoIterator<Item = Algorithm>) -> Self {
        self.algorithms = Some(algorithms.into_iter().collect());
        self
    }

    /// Accepts tokens signed with HMAC (HS256, HS384, HS512) under this shared secret, in
    /// addition to the asymmetric algorithms. Such tokens are only ever checked with this
    /// secret, never with a published key, whatever `kid` they name.
    pub fn hmac_secret(mut self, secret: impl Into<Vec<u8>>) -> Self {
        self.hmac_secret = Some(secret.into());
        self
    }

    /// The clock skew allowed on `exp`, `nbf` and `iat` (default 60 s, at most 1 hour).
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.common.leeway = leeway;
        self
    }

    /// Fetches the keys from this JWKS URL instead of discovering it from the issuer's
    /// metadata.
    pub fn jwks_url(mut self, url: impl Into<String>) -> Self {
        self.source = Source::JwksUrl(url.into());
        self
    }

    /// Uses this JWK Set document (JSON) as the keys, never fetching any (tests, air-gapped
    /// deployments; rotating keys then means restarting).
    pub fn jwks(mut self, jwks_json: impl Into<String>) -> Self {
        self.source = Source::Static(jwks_json.into());
        self
    }

    /// The least time between two fetches of the key set for an unknown `kid` (default 30 s).
    pub fn refresh_interval(mut self, interval: Duration) -> Self {
        self.refresh_interval = interval;
        self
    }

    /// The age after which the key set is fetched again (default 1 hour).
    pub fn max_age(mut self, max_age: Duration) -> Self {
        self.max_age = max_age;
        self
    }

    /// The deadline of one fetch of metadata or keys (default 10 s).
    pub fn fetch_timeout(mut self, timeout: Duration) -> Self {
        self.common.fetch_timeout = timeout;
        self
    }

    /// The longest metadata or key set document read (default 512 KiB).
    pub fn max_response_bytes(mut self, bytes: usize) -> Self {
        self.common.max_response_bytes = bytes;
        self
    }

    /// The most keys kept from a key set (default 64).
    pub fn max_keys(mut self, keys: usize) -> Self {
        self.max_keys = keys;
        self
    }

    /// The longest token accepted (default 16 KiB).
    pub fn max_token_bytes(mut self, bytes: usize) -> Self {
        self.common.max_token_bytes = bytes;
        self
    }

    /// Accepts only JWTs typed `typ` (an identity assertion grant, not an access token).
    #[cfg_attr(not(feature = "auth-proxy"), allow(dead_code))]
    pub(crate) fn token_type(mut self, typ: &'static str) -> Self {
        self.token_type = Some(typ);
        self
    }

    /// Accepts a token without `sub` whose `client_id` then names the caller (a token a
    /// client got for itself, with the client credentials grant). Off by default: such a
    /// caller would share its name with a user whose `sub` is that client id, and be taken
    /// for them wherever the server keys something by the subject.
    pub fn client_id_as_subject(mut self, allow: bool) -> Self {
        self.common.client_id_as_subject = allow;
        self
    }

    /// Accepts only tokens typed `at+jwt` (RFC 9068 section 2.1), refusing `JWT` and untyped
    /// ones (default: those are accepted too, since many issuers still send them).
    pub fn require_at_jwt_type(mut self, require: bool) -> Self {
        self.require_at_jwt = require;
        self
    }

    /// Checks the configuration and builds the verifier. Nothing is fetched yet.
    pub fn build(self) -> Result<JwtVerifier, AuthError> {
        ensure_crypto_provider()?;
        check_issuer(&self.issuer)?;
        self.common.check()?;
        let mut algorithms = self
            .algorithms
            .unwrap_or_else(|| Algorithm::DEFAULT.to_vec());
        let hmac = match &self.hmac_secret {
            Some(secret) => {
                for alg in [Algorithm::HS256, Algorithm::HS384, Algorithm::HS512] {
                    if !algorithms.contains(&alg) {
                        algorithms.push(alg);
                    }
                }
                Some(DecodingKey::from_secret(secret).map_err(|_| {
                    AuthError::misconfigured("the shared secret for HS256/384/512 is empty")
                })?)
            }
            None => {
                if let Some(alg) = algorithms.iter().find(|a| a.is_symmetric()) {
                    return Err(AuthError::misconfigured(format!(
                        "{alg} is accepted but no shared secret is configured (hmac_secret)"
                    )));
                }
                None
            }
        };
        algorithms.sort();
        algorithms.dedup();
        if algorithms.is_empty() {
            return Err(AuthError::misconfigured("no algorithm is accepted"));
        }
        let leeway_secs = self.common.leeway.as_secs();
        let validations = algorithms
            .iter()
            .map(|&alg| {
                let mut v = Validation::new(alg.jwt());
                v.leeway = leeway_secs;
                v.set_required_spec_claims(&["exp", "iss", "aud"]);
                v.validate_exp = true;
                v.validate_nbf = true;
                v.validate_aud = true;
                v.set_issuer(&[&self.issuer]);
                v.set_audience(&self.common.audiences);
                (alg, v)
            })
            .collect();
        let store = match self.source {
            Source::Static(json) => {
                let set = KeySet::parse(json.as_bytes(), self.max_keys)
                    .map_err(|e| AuthError::misconfigured(format!("the static key set: {e}")))?;
                KeyStore::fixed(set)
            }
            source => {
                if let Source::JwksUrl(url) = &source {
                    super::fetch::parse(url)
                        .map_err(|e| AuthError::misconfigured(format!("the JWKS URL: {e}")))?;
                }
                let fetcher = self.common.fetcher()?;
                KeyStore::remote(
                    source,
                    self.issuer.clone(),
                    fetcher,
                    self.max_keys,
                    self.refresh_interval,
                    self.max_age,
                )
            }
        };
        Ok(JwtVerifier {
            inner: Arc::new(Inner {
                issuer: self.issuer,
                audiences: self.common.audiences,
                algorithms,
                validations,
                leeway_secs,
                hmac,
                store,
                max_token_bytes: self.common.max_token_bytes,
                require_at_jwt: self.require_at_jwt,
                client_id_as_subject: self.common.client_id_as_subject,
                token_type: self.token_type,
            }),
        })
    }
}

/// `jsonwebtoken` picks its crypto backend from its crate features; if another crate of the
/// build also enabled its other backend it picks none and would panic on the first token.
/// The RustCrypto backend is then installed for the process.
fn ensure_crypto_provider() -> Result<(), AuthError> {
    use jsonwebtoken::crypto::CryptoProvider;
    if CryptoProvider::try_get_default().is_none() {
        let _ = jsonwebtoken::crypto::rust_crypto::DEFAULT_PROVIDER.install_default();
    }
    match CryptoProvider::try_get_default() {
        Some(_) => Ok(()),
        None => Err(AuthError::misconfigured(
            "jsonwebtoken has no crypto provider",
        )),
    }
}
