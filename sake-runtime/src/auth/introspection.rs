//! Opaque access tokens, checked by asking the authorization server (RFC 7662).

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use http::StatusCode;
use serde_json::{Map, Value};

use super::cache::{
    Clock, DEFAULT_MAX_REFUSAL_BYTES, DEFAULT_MAX_REFUSALS, ExpiryCache, Refusals, TokenKey,
    system_ms, token_key,
};
use super::discovery::{self, check_issuer};
use super::fetch::{FetchError, Fetcher, FormAuth};
use super::jwt::principal_from_claims;
use super::verifier::Common;
use super::{AuthError, Principal, TokenVerifier, VerifyFuture};

/// How the resource server authenticates to the introspection endpoint (RFC 6749 section
/// 2.3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ClientAuth {
    /// `client_secret_basic`: HTTP Basic with the client id and secret (the default).
    #[default]
    SecretBasic,
    /// `client_secret_post`: `client_id` and `client_secret` in the form.
    SecretPost,
}

/// Checks opaque access tokens by token introspection (RFC 7662): the authorization server
/// says whether a token is active and what it grants.
///
/// The resource server authenticates as a client of the authorization server
/// (`client_secret_basic` by default, or `client_secret_post`). The endpoint is configured,
/// or read from the issuer's metadata (`introspection_endpoint`). A token is accepted when
/// the answer says `"active": true`, names this resource in its `aud` (RFC 8707; an answer
/// without `aud` is refused unless [`require_audience(false)`](IntrospectionVerifierBuilder::require_audience)
/// says the authorization server never sends one) and names a subject (`sub`; a token a
/// client got for itself names only its `client_id`, accepted as the subject with
/// [`client_id_as_subject`](IntrospectionVerifierBuilder::client_id_as_subject)), and, when
/// present, its `exp` has not passed, its `nbf` has, its `iss` is the configured issuer and its
/// `token_type` is `Bearer`.
///
/// Active answers are remembered (under the token's SHA-256) until the token's `exp` or for
/// the cache TTL (60 s by default), whichever comes first, in a bounded cache; so a revoked
/// token keeps working for at most the cache TTL. Refusals are remembered for 10 s (at most
/// 10 000 of them, in 2 MiB), so that a bad token sent again costs no request.
///
/// Each token a client sends costs a request to the authorization server, made with the
/// resource server's own credentials: at most
/// [`max_concurrent_introspections`](IntrospectionVerifierBuilder::max_concurrent_introspections)
/// (16 by default) are in flight at once, at most
/// [`max_concurrent_introspections_per_client`](IntrospectionVerifierBuilder::max_concurrent_introspections_per_client)
/// (a quarter of them, 4 by default) for one client address or IPv6 network, and concurrent
/// checks of one token share one request. A token that arrives while all are taken, or while
/// its client has its share out, is not checked: the request gets `503` (retry shortly), and a
/// flood of made-up tokens costs the authorization server no more than that many requests at
/// a time, leaves slots for other clients, while tokens already checked are served from the
/// cache.
///
/// ```no_run
/// # async fn demo() -> Result<(), sake_runtime::auth::AuthError> {
/// use sake_runtime::auth::{IntrospectionVerifier, TokenVerifier};
///
/// let verifier = IntrospectionVerifier::builder(
///     "https://mcp.example.com/mcp",
///     "mcp-resource-server",
///     std::env::var("INTROSPECTION_SECRET").unwrap_or_default(),
/// )
/// .issuer("https://auth.example.com")
/// .build()?;
/// let principal = verifier.verify("2YotnFZFEjr1zCsicMWpAA").await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct IntrospectionVerifier {
    inner: Arc<Inner>,
}

/// One introspection of one token, shared by the checks of that token that arrive while it
/// runs.
type Flight = Arc<tokio::sync::OnceCell<Result<Principal, AuthError>>>;

struct Inner {
    /// The endpoint, once configured or discovered (read without a lock on every miss).
    endpoint: OnceLock<String>,
    /// Serialises discovery; remembers the last failure.
    discovery: tokio::sync::Mutex<Option<(Instant, AuthError)>>,
    issuer: Option<String>,
    audiences: Vec<String>,
    client_id: String,
    client_secret: String,
    client_auth: ClientAuth,
    require_audience: bool,
    client_id_as_subject: bool,
    leeway_ms: u64,
    cache: ExpiryCache<Principal>,
    cache_ttl: Duration,
    refusals: Refusals,
    fetcher: Fetcher,
    clock: Clock,
    max_token_bytes: usize,
    /// Introspections in flight: at most `max_concurrent` at once.
    slots: Arc<tokio::sync::Semaphore>,
    max_concurrent: usize,
    /// Introspections in flight per client network (only networks with some out), at most
    /// `max_per_client` each.
    per_client: Mutex<HashMap<std::net::IpAddr, usize>>,
    max_per_client: usize,
    /// The introspection in flight for each token being checked.
    flights: Mutex<HashMap<TokenKey, Flight>>,
    /// Checks are being refused for want of a slot (logged once per episode).
    saturated: AtomicBool,
}

/// Removes a token's flight when the check that made it ends (or is dropped).
struct Landing<'a> {
    flights: &'a Mutex<HashMap<TokenKey, Flight>>,
    key: TokenKey,
    flight: Flight,
}

impl Drop for Landing<'_> {
    fn drop(&mut self) {
        let mut flights = self.flights.lock().unwrap_or_else(PoisonError::into_inner);
        if flights
            .get(&self.key)
            .is_some_and(|f| Arc::ptr_eq(f, &self.flight))
        {
            flights.remove(&self.key);
        }
    }
}

/// One introspection slot of a client's share; given back when dropped.
struct ClientShare<'a> {
    per_client: &'a Mutex<HashMap<std::net::IpAddr, usize>>,
    client: std::net::IpAddr,
}

impl Drop for ClientShare<'_> {
    fn drop(&mut self) {
        let mut out = self
            .per_client
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(n) = out.get_mut(&self.client) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                out.remove(&self.client);
            }
        }
    }
}

/// A failed discovery is not tried again sooner than this.
const REDISCOVER_AFTER: Duration = Duration::from_secs(5);

impl fmt::Debug for IntrospectionVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IntrospectionVerifier")
            .field("issuer", &self.inner.issuer)
            .field("audiences", &self.inner.audiences)
            .field("client_id", &self.inner.client_id)
            .field("client_auth", &self.inner.client_auth)
            .finish_non_exhaustive()
    }
}

/// Configures an [`IntrospectionVerifier`]; made by [`IntrospectionVerifier::builder`].
#[derive(Clone)]
#[must_use]
pub struct IntrospectionVerifierBuilder {
    common: Common,
    client_id: String,
    client_secret: String,
    client_auth: ClientAuth,
    endpoint: Option<String>,
    issuer: Option<String>,
    require_audience: bool,
    cache_ttl: Duration,
    max_cache_entries: usize,
    refusal_ttl: Duration,
    max_cached_refusals: usize,
    max_cached_refusal_bytes: usize,
    max_concurrent: usize,
    max_per_client: Option<usize>,
}

impl fmt::Debug for IntrospectionVerifierBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IntrospectionVerifierBuilder")
            .field("audiences", &self.common.audiences)
            .field("client_id", &self.client_id)
            .field("endpoint", &self.endpoint)
            .field("issuer", &self.issuer)
            .finish_non_exhaustive()
    }
}

impl IntrospectionVerifier {
    /// Starts configuring a verifier of tokens for `audience` (this server's canonical
    /// resource URI), introspected with the client credentials `client_id` and
    /// `client_secret`. Name the endpoint or the issuer (or both) before building.
    pub fn builder(
        audience: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> IntrospectionVerifierBuilder {
        IntrospectionVerifierBuilder {
            common: Common::new(audience.into(), 64 * 1024),
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            client_auth: ClientAuth::default(),
            endpoint: None,
            issuer: None,
            require_audience: true,
            cache_ttl: Duration::from_secs(60),
            max_cache_entries: 10_000,
            refusal_ttl: Duration::from_secs(10),
            max_cached_refusals: DEFAULT_MAX_REFUSALS,
            max_cached_refusal_bytes: DEFAULT_MAX_REFUSAL_BYTES,
            max_concurrent: 16,
            max_per_client: None,
        }
    }

    #[cfg(test)]
    pub(crate) fn with_clock(mut self, clock: Clock) -> Self {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.clock = clock;
        }
        self
    }

    async fn endpoint(&self) -> Result<String, AuthError> {
        let inner = &*self.inner;
        if let Some(url) = inner.endpoint.get() {
            return Ok(url.clone());
        }
        let mut failed = inner.discovery.lock().await;
        if let Some(url) = inner.endpoint.get() {
            return Ok(url.clone());
        }
        if let Some((at, e)) = &*failed
            && at.elapsed() < REDISCOVER_AFTER
        {
            return Err(e.clone());
        }
        let Some(issuer) = &inner.issuer else {
            return Err(AuthError::misconfigured("no introspection endpoint"));
        };
        let found = discovery::discover(&inner.fetcher, issuer)
            .await
            .and_then(|metadata| {
                let url = metadata.introspection_endpoint.ok_or_else(|| {
                    AuthError::misconfigured(format!(
                        "the metadata of {issuer:?} names no introspection_endpoint"
                    ))
                })?;
                super::fetch::parse(&url).map_err(|e| {
                    AuthError::misconfigured(format!("the metadata's introspection_endpoint: {e}"))
                })?;
                Ok(url)
            });
        match found {
            Ok(url) => {
                *failed = None;
                Ok(inner.endpoint.get_or_init(|| url).clone())
            }
            Err(e) => {
                *failed = Some((Instant::now(), e.clone()));
                Err(e)
            }
        }
    }

    async fn verify_token(&self, token: &str) -> Result<Principal, AuthError> {
        let inner = &*self.inner;
        check_bearer_token(token, inner.max_token_bytes)?;
        let key = token_key(token);
        let now = inner.clock.now_ms();
        if let Some(principal) = inner.cache.get(&key, now) {
            return Ok(principal);
        }
        if let Some(refused) = inner.refusals.get(&key, now) {
            return Err(refused);
        }
        // One introspection per token at a time: the checks of a token that arrive while it
        // is introspected wait for that answer.
        let flight = {
            let mut flights = inner.flights.lock().unwrap_or_else(PoisonError::into_inner);
            flights.entry(key).or_default().clone()
        };
        let _landing = Landing {
            flights: &inner.flights,
            key,
            flight: flight.clone(),
        };
        flight
            .get_or_init(|| self.introspect_once(token, key))
            .await
            .clone()
    }

    /// Introspects `token` holding one of the slots (refused when none is free), and
    /// remembers the answer.
    async fn introspect_once(&self, token: &str, key: TokenKey) -> Result<Principal, AuthError> {
        let inner = &*self.inner;
        // The client's share first: a client at its share takes none of the slots others
        // still have.
        let _share = match super::client::current() {
            Some(client) => Some(self.client_share(client)?),
            None => None,
        };
        let Ok(_slot) = inner.slots.clone().try_acquire_owned() else {
            if !inner.saturated.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    max_concurrent_introspections = inner.max_concurrent,
                    "token introspection is saturated: tokens not yet checked are answered 503 until a slot frees (a flood of unknown tokens, or a slow authorization server)"
                );
            }
            return Err(AuthError::unavailable(format!(
                "{} token introspections are in flight, the most this server makes at once (max_concurrent_introspections)",
                inner.max_concurrent
            )));
        };
        if inner.saturated.swap(false, Ordering::Relaxed) {
            tracing::info!("token introspection has free slots again");
        }
        let result = self.introspect(token, key).await;
        if let Err(e) = &result {
            inner.refusals.remember(key, e, inner.clock.now_ms());
        }
        result
    }

    /// One slot of `client`'s share, or the refusal when it has them all out.
    fn client_share(&self, client: std::net::IpAddr) -> Result<ClientShare<'_>, AuthError> {
        let inner = &*self.inner;
        let mut out = inner
            .per_client
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let n = out.entry(client).or_default();
        if *n >= inner.max_per_client {
            tracing::debug!(
                max_concurrent_introspections_per_client = inner.max_per_client,
                "a client has its share of token introspections in flight: its next unchecked token is answered 503"
            );
            return Err(AuthError::unavailable(format!(
                "{} token introspections are in flight for this client, the most one client may have at once (max_concurrent_introspections_per_client)",
                inner.max_per_client
            )));
        }
        *n += 1;
        Ok(ClientShare {
            per_client: &inner.per_client,
            client,
        })
    }

    /// Asks the authorization server about `token`; remembers an active answer.
    async fn introspect(&self, token: &str, key: TokenKey) -> Result<Principal, AuthError> {
        let inner = &*self.inner;
        let url = self.endpoint().await?;
        let auth = match inner.client_auth {
            ClientAuth::SecretBasic => FormAuth::Basic {
                id: &inner.client_id,
                secret: &inner.client_secret,
            },
            ClientAuth::SecretPost => FormAuth::Post {
                id: &inner.client_id,
                secret: &inner.client_secret,
            },
        };
        let response = inner
            .fetcher
            .post_form(
                &url,
                &[("token", token), ("token_type_hint", "access_token")],
                auth,
            )
            .await
            .map_err(|e| match e {
                FetchError::InvalidUrl { .. } => AuthError::misconfigured(e.to_string()),
                _ => AuthError::unavailable(format!("token introspection: {e}")),
            })?;
        match response.status {
            StatusCode::OK => {}
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
                return Err(AuthError::misconfigured(format!(
                    "the introspection endpoint {url} refused the resource server's client credentials ({})",
                    response.status
                )));
            }
            status => {
                return Err(AuthError::unavailable(format!(
                    "token introspection: {url} answered {status}"
                )));
            }
        }
        let Ok(Value::Object(answer)) = serde_json::from_slice::<Value>(&response.body) else {
            return Err(AuthError::unavailable(format!(
                "token introspection: the answer of {url} is not a JSON object"
            )));
        };
        let now = inner.clock.now_ms();
        let principal = self.judge(answer, now)?;
        let until =
            now.saturating_add(u64::try_from(inner.cache_ttl.as_millis()).unwrap_or(u64::MAX));
        let until = principal
            .expires_at()
            .map_or(until, |exp| until.min(system_ms(exp)));
        inner.cache.insert(key, principal.clone(), until, now);
        Ok(principal)
    }

    /// Decides on an introspection answer (RFC 7662 section 2.2).
    fn judge(&self, answer: Map<String, Value>, now_ms: u64) -> Result<Principal, AuthError> {
        let inner = &*self.inner;
        if answer.get("active") != Some(&Value::Bool(true)) {
            return Err(AuthError::invalid(
                "the authorization server reports it inactive (expired, revoked or unknown)",
            ));
        }
        let date = |name: &str| -> Result<Option<u64>, AuthError> {
            match answer.get(name) {
                None | Some(Value::Null) => Ok(None),
                Some(v) => v
                    .as_u64()
                    .map(|s| Some(s.saturating_mul(1000)))
                    .ok_or_else(|| AuthError::invalid(format!("its {name} is not a number"))),
            }
        };
        if let Some(exp) = date("exp")?
            && exp.saturating_add(inner.leeway_ms) <= now_ms
        {
            return Err(AuthError::Expired);
        }
        if let Some(nbf) = date("nbf")?
            && nbf > now_ms.saturating_add(inner.leeway_ms)
        {
            return Err(AuthError::invalid(
                "it is not valid yet (nbf is in the future)",
            ));
        }
        if let Some(token_type) = answer.get("token_type").and_then(Value::as_str)
            && !token_type.eq_ignore_ascii_case("bearer")
        {
            // The authorization server's word, clipped: it reaches the client.
            return Err(AuthError::invalid(format!(
                "it is a {:?} token, not a bearer access token",
                crate::protocol::jsonrpc::clip_at(token_type, 40)
            )));
        }
        if let (Some(expected), Some(iss)) = (&inner.issuer, answer.get("iss"))
            && iss.as_str() != Some(expected.as_str())
        {
            return Err(AuthError::WrongIssuer {
                reason: format!("its iss is not {expected:?}"),
            });
        }
        let audiences: Vec<&str> = match answer.get("aud") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(aud)) => vec![aud.as_str()],
            Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).collect(),
            Some(_) => return Err(AuthError::invalid("its aud is neither a string nor a list")),
        };
        let expected = || {
            inner
                .audiences
                .iter()
                .map(|a| format!("{a:?}"))
                .collect::<Vec<_>>()
                .join(" or ")
        };
        if audiences.is_empty() {
            let named = !matches!(answer.get("aud"), None | Some(Value::Null));
            if named || inner.require_audience {
                return Err(AuthError::WrongAudience {
                    reason: format!(
                        "the introspection answer names no audience; expected {}",
                        expected()
                    ),
                });
            }
        } else if !audiences
            .iter()
            .any(|a| inner.audiences.iter().any(|e| e == a))
        {
            return Err(AuthError::WrongAudience {
                reason: format!("its aud does not name {}", expected()),
            });
        }
        principal_from_claims(answer, inner.client_id_as_subject)
    }
}

impl TokenVerifier for IntrospectionVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a> {
        Box::pin(self.verify_token(token))
    }
}

/// Checks that `token` is a `b64token` (RFC 6750 section 2.1) of bounded length, so that
/// nothing else is ever sent to the authorization server.
fn check_bearer_token(token: &str, max_bytes: usize) -> Result<(), AuthError> {
    if token.is_empty() {
        return Err(AuthError::invalid("it is empty"));
    }
    if token.len() > max_bytes {
        return Err(AuthError::invalid(format!(
            "it is longer than {max_bytes} bytes"
        )));
    }
    let body = token.trim_end_matches('=');
    let ok = !body.is_empty()
        && body.bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/')
        });
    if !ok {
        return Err(AuthError::invalid(
            "it holds characters a bearer token cannot (RFC 6750 section 2.1)",
        ));
    }
    Ok(())
}

impl IntrospectionVerifierBuilder {
    /// The introspection endpoint (else it is read from the issuer's metadata).
    pub fn endpoint(mut self, url: impl Into<String>) -> Self {
        self.endpoint = Some(url.into());
        self
    }

    /// The issuer: its metadata names the endpoint when none is configured, and an answer's
    /// `iss`, when present, must be it.
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }

    /// How the resource server authenticates (default `client_secret_basic`).
    pub fn client_auth(mut self, method: ClientAuth) -> Self {
        self.client_auth = method;
        self
    }

    /// Also accepts tokens whose `aud` names `audience`.
    pub fn audience(mut self, audience: impl Into<String>) -> Self {
        self.common.audiences.push(audience.into());
        self
    }

    /// Whether answers that name no audience are refused (default: refused). The MCP
    /// authorization pages require that a token be checked to be meant for this resource;
    /// turn it off only for an authorization server that never returns `aud` and issues
    /// tokens for no other resource, since a token for any of its resources is then taken
    /// for this one.
    pub fn require_audience(mut self, require: bool) -> Self {
        self.require_audience = require;
        self
    }

    /// Accepts an answer without `sub` whose `client_id` then names the caller (a token a
    /// client got for itself, with the client credentials grant). Off by default: such a
    /// caller would share its name with a user whose `sub` is that client id, and be taken
    /// for them wherever the server keys something by the subject.
    pub fn client_id_as_subject(mut self, allow: bool) -> Self {
        self.common.client_id_as_subject = allow;
        self
    }

    /// The most introspection requests in flight at once (default 16, at least 1): a token
    /// not yet checked that arrives while all are taken is answered `503`.
    pub fn max_concurrent_introspections(mut self, n: usize) -> Self {
        self.max_concurrent = n.max(1);
        self
    }

    /// The most introspection requests in flight at once for one client (its IPv4 address,
    /// or its network under `Limits::ipv6_client_prefix`): by default a quarter of
    /// [`max_concurrent_introspections`](Self::max_concurrent_introspections) (4 of 16), at
    /// least 1, at most that. A client's token not yet checked that arrives while it has its
    /// share out is answered `503`, and the other slots stay for other clients. Checks made
    /// outside an HTTP request (stdio's token) count only against the global bound.
    pub fn max_concurrent_introspections_per_client(mut self, n: usize) -> Self {
        self.max_per_client = Some(n.max(1));
        self
    }

    /// How long a refusal (inactive, expired, for another audience…) is remembered under the
    /// token's SHA-256 (default 10 s; zero: not at all).
    pub fn refusal_ttl(mut self, ttl: Duration) -> Self {
        self.refusal_ttl = ttl;
        self
    }

    /// The most refusals remembered (default 10 000), and the most bytes they may take
    /// (default 2 MiB); the ones expiring soonest go first.
    pub fn max_cached_refusals(mut self, entries: usize, bytes: usize) -> Self {
        self.max_cached_refusals = entries;
        self.max_cached_refusal_bytes = bytes;
        self
    }

    /// The clock skew allowed on `exp` and `nbf` (default 60 s, at most 1 hour).
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.common.leeway = leeway;
        self
    }

    /// How long an active answer is remembered at most (default 60 s; never past `exp`).
    pub fn cache_ttl(mut self, ttl: Duration) -> Self {
        self.cache_ttl = ttl;
        self
    }

    /// The most answers remembered (default 10 000; 0: none).
    pub fn max_cache_entries(mut self, n: usize) -> Self {
        self.max_cache_entries = n;
        self
    }

    /// The deadline of one request to the authorization server (default 10 s).
    pub fn fetch_timeout(mut self, timeout: Duration) -> Self {
        self.common.fetch_timeout = timeout;
        self
    }

    /// The longest answer read (default 64 KiB).
    pub fn max_response_bytes(mut self, bytes: usize) -> Self {
        self.common.max_response_bytes = bytes;
        self
    }

    /// The longest token accepted (default 16 KiB).
    pub fn max_token_bytes(mut self, bytes: usize) -> Self {
        self.common.max_token_bytes = bytes;
        self
    }

    /// Checks the configuration and builds the verifier. Nothing is fetched yet.
    pub fn build(self) -> Result<IntrospectionVerifier, AuthError> {
        if let Some(issuer) = &self.issuer {
            check_issuer(issuer)?;
        }
        if let Some(url) = &self.endpoint {
            super::fetch::parse(url).map_err(|e| {
                AuthError::misconfigured(format!("the introspection endpoint: {e}"))
            })?;
        } else if self.issuer.is_none() {
            return Err(AuthError::misconfigured(
                "token introspection needs an endpoint or an issuer whose metadata names one",
            ));
        }
        self.common.check()?;
        if self.client_id.is_empty() {
            return Err(AuthError::misconfigured("the client id is empty"));
        }
        let fetcher = self.common.fetcher()?;
        Ok(IntrospectionVerifier {
            inner: Arc::new(Inner {
                endpoint: self.endpoint.map(OnceLock::from).unwrap_or_default(),
                discovery: tokio::sync::Mutex::new(None),
                issuer: self.issuer,
                audiences: self.common.audiences,
                client_id: self.client_id,
                client_secret: self.client_secret,
                client_auth: self.client_auth,
                require_audience: self.require_audience,
                client_id_as_subject: self.common.client_id_as_subject,
                leeway_ms: u64::try_from(self.common.leeway.as_millis()).unwrap_or(u64::MAX),
                cache: ExpiryCache::new(self.max_cache_entries),
                cache_ttl: self.cache_ttl,
                refusals: Refusals::new(
                    self.refusal_ttl,
                    self.max_cached_refusals,
                    self.max_cached_refusal_bytes,
                ),
                fetcher,
                clock: Clock::default(),
                max_token_bytes: self.common.max_token_bytes,
                slots: Arc::new(tokio::sync::Semaphore::new(self.max_concurrent)),
                max_concurrent: self.max_concurrent,
                per_client: Mutex::new(HashMap::new()),
                max_per_client: self
                    .max_per_client
                    .unwrap_or(self.max_concurrent.div_ceil(4))
                    .clamp(1, self.max_concurrent),
                flights: Mutex::new(HashMap::new()),
                saturated: AtomicBool::new(false),
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_token_syntax() {
        assert!(check_bearer_token("2YotnFZFEjr1zCsicMWpAA", 100).is_ok());
        assert!(check_bearer_token("a.b-c_d~e+f/g==", 100).is_ok());
        for bad in ["", "a b", "a\"b", "é", "==", "a=b", "tok\r\n"] {
            assert!(check_bearer_token(bad, 100).is_err(), "{bad:?}");
        }
        assert!(check_bearer_token(&"a".repeat(101), 100).is_err());
    }
}
