//! The authorization proxy (feature `auth-proxy`): sake serves, on the MCP server's own
//! origin, the authorization server MCP clients see, and signs users in with an upstream
//! OpenID Connect (or OAuth 2.0) provider through one pre-registered confidential client.
//!
//! - RFC 8414 metadata, dynamic client registration (RFC 7591) and Client ID Metadata
//!   Documents, the authorization endpoint (PKCE S256 only, RFC 8707 `resource`, RFC 9207
//!   `iss`), the proxy's own consent page, the upstream callback, and the token endpoint
//!   (authorization code, rotated refresh tokens, DPoP-bound tokens, and the JWT bearer grant
//!   of enterprise-managed authorization).
//! - The proxy issues its own short-lived access tokens (ES256 JWTs: `iss` its issuer, `aud`
//!   the MCP resource) and refresh tokens; the upstream tokens stay on the server, where a
//!   tool reaches them through [`Principal::upstream`](crate::auth::Principal::upstream).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use sake_runtime::auth::proxy::{AuthProxy, Upstream, Users};
//!
//! let proxy = AuthProxy::builder(
//!     "https://mcp.example.com",
//!     "/mcp",
//!     Upstream::oidc("https://idp.example.com", "client-id", "client-secret"),
//! )
//! .scopes_supported(["mcp:tools", "admin"])
//! // Every user may let a client use the tools; only the user 248289761001 may grant `admin`.
//! .default_scopes(["mcp:tools"])
//! .grant_scope("admin", Users::new().subjects(["248289761001"]))
//! .build()?;
//! sake_runtime::Server::from_registry()
//!     .authorization(proxy.authorization())
//!     .serve_http("0.0.0.0:3000")
//!     .await?;
//! # Ok(()) }
//! ```
//!
//! See `docs/authorization.md`, "The authorization proxy".

mod clients;
mod endpoints;
mod html;
mod policy;
mod sealed;
mod store;
pub(crate) mod tokens;
mod upstream;

pub(crate) use endpoints::max_body;

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest as _, Sha256};

pub use super::upstream_session::UpstreamSession;
pub use policy::{UpstreamUser, Users};
#[cfg(feature = "redis")]
pub(crate) use store::check_name;
pub use store::{
    Bound, Insertion, MemoryProxyStore, ProxyStore, ProxyStoreError, ProxyStoreFuture,
};
pub use upstream::{Upstream, UpstreamAuth};

use super::dpop::DpopVerifier;
use super::{AuthError, JwtVerifier};
use crate::net::fetch::{Fetcher, Limits};

pub(crate) const B64: base64::engine::GeneralPurpose =
    base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// The default bound on sign-ins under way, in all.
const DEFAULT_MAX_PENDING: usize = 10_000;
/// The default bound on sign-ins under way from one client address.
const DEFAULT_MAX_PENDING_PER_CLIENT: usize = 64;
/// The default bound on sign-ins under way from one IPv6 /48 (one site's networks).
const DEFAULT_MAX_PENDING_PER_NETWORK: usize = 1024;

/// The network address of the browser or client of a request to the proxy's routes, as the
/// HTTP transport found it (the peer, or the trusted reverse proxy's header), with the server's
/// IPv6 client prefix (`Limits::ipv6_client_prefix`); without it, the connection's
/// `ConnectInfo` (and a /64).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ClientAddr(pub(crate) std::net::IpAddr, pub(crate) u8);

/// The grant type of the JWT bearer grant (RFC 7523), which carries an ID-JAG.
pub(crate) const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";

pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// HMAC-SHA256 of `data` under `key`, in the domain `label`.
pub(crate) fn hmac(key: &[u8], label: &str, data: &[u8]) -> Vec<u8> {
    let Ok(mut mac) = <Hmac<Sha256> as KeyInit>::new_from_slice(key) else {
        // HMAC takes keys of any length.
        return Vec::new();
    };
    mac.update(label.as_bytes());
    mac.update(b".");
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

/// Compares secrets in time independent of where they differ.
pub(crate) fn constant_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// `n` random bytes, Base64url.
pub(crate) fn random(n: usize) -> Result<String, AuthError> {
    let mut bytes = vec![0u8; n];
    getrandom::fill(&mut bytes)
        .map_err(|e| AuthError::misconfigured(format!("the system has no randomness: {e}")))?;
    Ok(B64.encode(bytes))
}

/// The SHA-256 of `s`, Base64url: how secrets (codes, refresh tokens) are named in the store.
pub(crate) fn digest(s: &str) -> String {
    B64.encode(Sha256::digest(s.as_bytes()))
}

/// Text from a client or the upstream, made safe for an error message: printable ASCII, at
/// most 200 characters.
pub(crate) fn clip(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_ascii_graphic() || *c == ' ')
        .filter(|c| *c != '"' && *c != '\\')
        .take(200)
        .collect()
}

/// A client configured ahead of time (an enterprise's application, a test client): a
/// confidential client with a secret, or a public one.
#[derive(Clone)]
pub struct ProxyClient {
    pub(crate) id: String,
    pub(crate) secret: Option<String>,
    pub(crate) name: Option<String>,
    pub(crate) redirect_uris: Vec<String>,
    pub(crate) grant_types: Vec<String>,
}

impl std::fmt::Debug for ProxyClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyClient")
            .field("id", &self.id)
            .field("name", &self.name)
            .field("redirect_uris", &self.redirect_uris)
            .finish_non_exhaustive()
    }
}

impl ProxyClient {
    /// A confidential client authenticating with `secret` (`client_secret_basic` or
    /// `client_secret_post`).
    pub fn confidential(id: impl Into<String>, secret: impl Into<String>) -> Self {
        ProxyClient {
            id: id.into(),
            secret: Some(secret.into()),
            name: None,
            redirect_uris: Vec::new(),
            grant_types: vec![
                "authorization_code".into(),
                "refresh_token".into(),
                JWT_BEARER.into(),
            ],
        }
    }

    /// A public client (PKCE, no secret).
    pub fn public(id: impl Into<String>) -> Self {
        ProxyClient {
            id: id.into(),
            secret: None,
            name: None,
            redirect_uris: Vec::new(),
            grant_types: vec!["authorization_code".into(), "refresh_token".into()],
        }
    }

    /// The name the consent page shows.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// A redirect URI it may use (matched exactly).
    pub fn redirect_uri(mut self, uri: impl Into<String>) -> Self {
        self.redirect_uris.push(uri.into());
        self
    }
}

/// The authorization proxy: build it with [`AuthProxy::builder`], then serve it with the MCP
/// endpoint through [`AuthProxy::authorization`]. Cheap to clone.
#[derive(Clone)]
pub struct AuthProxy {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for AuthProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthProxy")
            .field("issuer", &self.inner.issuer)
            .field("resource", &self.inner.resource)
            .field("upstream", &self.inner.upstream)
            .finish_non_exhaustive()
    }
}

pub(crate) struct Inner {
    pub(crate) issuer: String,
    /// The path of the issuer (empty at the origin's root): the proxy's routes live under it.
    pub(crate) prefix: String,
    pub(crate) resource: String,
    pub(crate) scopes: Vec<String>,
    /// Who may receive which scope.
    pub(crate) policy: policy::Policy,
    pub(crate) upstream: Upstream,
    pub(crate) upstream_endpoints: tokio::sync::RwLock<Option<upstream::Resolved>>,
    pub(crate) fetcher: Fetcher,
    pub(crate) metadata_fetcher: clients::MetadataFetcher,
    /// The store, its values sealed with the secret.
    pub(crate) store: sealed::SealedStore,
    /// The key the upstream tokens are encrypted with.
    pub(crate) cipher: sealed::TokenCipher,
    pub(crate) secret: Vec<u8>,
    pub(crate) keys: tokens::Keys,
    pub(crate) dpop: DpopVerifier,
    pub(crate) idp: Option<JwtVerifier>,
    pub(crate) clients: Vec<ProxyClient>,
    pub(crate) access_ttl: Duration,
    pub(crate) refresh_ttl: Duration,
    pub(crate) code_ttl: Duration,
    pub(crate) sign_in_ttl: Duration,
    pub(crate) secure_cookies: bool,
    pub(crate) resource_name: Option<String>,
    /// At most this many sign-ins under way, in all and per client address.
    pub(crate) max_pending: usize,
    pub(crate) max_pending_per_client: usize,
    pub(crate) max_pending_per_network: usize,
    /// Whether the missing client address was logged (once).
    pub(crate) no_address_logged: std::sync::atomic::AtomicBool,
}

impl Inner {
    /// The grant types the token endpoint takes.
    pub(crate) fn grant_types(&self) -> Vec<&'static str> {
        let mut g = vec!["authorization_code", "refresh_token"];
        if self.idp.is_some() {
            g.push(JWT_BEARER);
        }
        g
    }

    /// An absolute URL of the proxy (`path` under the issuer).
    pub(crate) fn url(&self, path: &str) -> String {
        format!("{}{path}", self.issuer)
    }

    /// A route's path (`path` under the issuer's path).
    pub(crate) fn route(&self, path: &str) -> String {
        format!("{}{path}", self.prefix)
    }

    /// The upstream endpoints, discovered on first use (and again after a failure).
    pub(crate) async fn endpoints(&self) -> Result<upstream::Resolved, AuthError> {
        if let Some(r) = self.upstream_endpoints.read().await.as_ref() {
            return Ok(r.clone());
        }
        let mut slot = self.upstream_endpoints.write().await;
        if let Some(r) = slot.as_ref() {
            return Ok(r.clone());
        }
        let r = self.upstream.resolve(&self.fetcher).await?;
        *slot = Some(r.clone());
        Ok(r)
    }
}

/// Configures an [`AuthProxy`]; made by [`AuthProxy::builder`].
#[must_use]
pub struct AuthProxyBuilder {
    public_url: String,
    path: String,
    upstream: Upstream,
    scopes: Vec<String>,
    policy: policy::Policy,
    store: Option<Arc<dyn ProxyStore>>,
    secret: Option<Vec<u8>>,
    allow_http_client_metadata: bool,
    idp: Option<String>,
    idp_jwks: Option<String>,
    clients: Vec<ProxyClient>,
    access_ttl: Duration,
    refresh_ttl: Duration,
    resource_name: Option<String>,
    max_pending: usize,
    max_pending_per_client: usize,
    max_pending_per_network: usize,
}

impl std::fmt::Debug for AuthProxyBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthProxyBuilder")
            .field("public_url", &self.public_url)
            .field("path", &self.path)
            .field("upstream", &self.upstream)
            .finish_non_exhaustive()
    }
}

impl AuthProxy {
    /// A proxy for the MCP endpoint at `path` (`/mcp`) of `public_url` (the origin clients
    /// reach, `https://mcp.example.com`; behind a reverse proxy, the public one; a path prefix
    /// is allowed): its issuer is `public_url`, the MCP resource `public_url` + `path`, and the
    /// upstream callback `public_url/oauth/callback` (register it with the upstream client).
    pub fn builder(
        public_url: impl Into<String>,
        path: impl Into<String>,
        upstream: Upstream,
    ) -> AuthProxyBuilder {
        AuthProxyBuilder {
            public_url: public_url.into(),
            path: path.into(),
            upstream,
            scopes: Vec::new(),
            policy: policy::Policy::default(),
            store: None,
            secret: None,
            allow_http_client_metadata: false,
            idp: None,
            idp_jwks: None,
            clients: Vec::new(),
            access_ttl: Duration::from_secs(900),
            refresh_ttl: Duration::from_secs(30 * 86_400),
            resource_name: None,
            max_pending: DEFAULT_MAX_PENDING,
            max_pending_per_client: DEFAULT_MAX_PENDING_PER_CLIENT,
            max_pending_per_network: DEFAULT_MAX_PENDING_PER_NETWORK,
        }
    }

    /// The issuer (the authorization server's identifier, in the metadata and the tokens).
    pub fn issuer(&self) -> &str {
        &self.inner.issuer
    }

    /// The MCP resource URI (the `aud` of the tokens).
    pub fn resource(&self) -> &str {
        &self.inner.resource
    }

    /// The redirect URI to register with the upstream client.
    pub fn callback_url(&self) -> String {
        self.inner.url("/oauth/callback")
    }

    /// The public key set the proxy signs its tokens with (also served at `/oauth/jwks`).
    pub fn jwks(&self) -> serde_json::Value {
        self.inner.keys.jwks()
    }

    /// The routes of the proxy (metadata, registration, authorization, consent, callback,
    /// token, keys), for an application that serves them itself; a server given
    /// [`authorization`](Self::authorization) serves them already.
    pub fn router(&self) -> axum::Router {
        endpoints::router(self.inner.clone())
    }

    /// The paths [`router`](Self::router) serves.
    pub(crate) fn paths(&self) -> Vec<String> {
        endpoints::paths(&self.inner)
    }
}

impl AuthProxyBuilder {
    /// The scopes clients may ask for (the metadata's `scopes_supported`). A client gets only
    /// the scopes it asks for, and of them only those its user may receive: the
    /// [`default_scopes`](Self::default_scopes), and those a [`grant_scope`](Self::grant_scope)
    /// or [`authorize_user`](Self::authorize_user) gives the user. By default nobody may
    /// receive any scope.
    pub fn scopes_supported<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The scopes every user the upstream provider signs in may receive (default: none). A
    /// scope describes what a *user* may let a client do: name here only what anyone who can
    /// sign in upstream (any Google account, any Entra ID tenant with `common`) may do.
    pub fn default_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.policy.defaults = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The users of `users` may receive `scope` (in addition to the default scopes; several
    /// calls for one scope add up). A user who asks for a scope they may not receive gets a
    /// token without it: the token answer's `scope` says what was granted (RFC 6749 section
    /// 5.1), and a tool needing it answers `403 insufficient_scope`.
    ///
    /// ```no_run
    /// # fn demo(b: sake_runtime::auth::proxy::AuthProxyBuilder) {
    /// use sake_runtime::auth::proxy::Users;
    /// let b = b
    ///     .scopes_supported(["mcp:tools", "admin"])
    ///     .default_scopes(["mcp:tools"])
    ///     .grant_scope("admin", Users::new().subjects(["248289761001"]));
    /// # }
    /// ```
    pub fn grant_scope(mut self, scope: impl Into<String>, users: Users) -> Self {
        self.policy.grants.push((scope.into(), users));
        self
    }

    /// A decision of your own, asked for each scope a user asks for that neither the default
    /// scopes nor a [`grant_scope`](Self::grant_scope) gives them: `true` grants it. It runs
    /// when the user signs in and at each refresh (a user who lost a scope loses it at the
    /// next refresh). Trust only claims the upstream vouches for (never an unverified
    /// `email`).
    pub fn authorize_user(
        mut self,
        decide: impl Fn(&UpstreamUser<'_>, &str) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.policy.decide = Some(Arc::new(decide));
        self
    }

    /// Where sign-ins under way, codes, refresh tokens and grants are kept (default: a
    /// [`MemoryProxyStore`]). Replicas share one (`sake::redis::RedisProxyStore`), and the
    /// same [`secret`](Self::secret).
    pub fn store(mut self, store: impl ProxyStore + 'static) -> Self {
        self.store = Some(Arc::new(store));
        self
    }

    /// The secret (at least 32 bytes) the proxy derives its signing key, registered clients'
    /// ids and secrets, and DPoP nonces from. By default a random one per process: tokens
    /// and registrations then do not survive a restart and no other instance accepts them.
    /// Replicas share one.
    pub fn secret(mut self, secret: impl Into<Vec<u8>>) -> Self {
        self.secret = Some(secret.into());
        self
    }

    /// Accepts Client ID Metadata Document URLs that are plain `http` on a loopback address
    /// (tests only; never in deployment). Other http URLs, and https URLs that resolve to
    /// private addresses, are refused either way.
    pub fn allow_http_client_metadata(mut self, allow: bool) -> Self {
        self.allow_http_client_metadata = allow;
        self
    }

    /// Trusts identity assertion authorization grants (ID-JAG, enterprise-managed
    /// authorization) issued by the enterprise identity provider `issuer` (its keys found
    /// through its metadata): the token endpoint then takes the JWT bearer grant.
    pub fn trusted_idp(mut self, issuer: impl Into<String>) -> Self {
        self.idp = Some(issuer.into());
        self
    }

    /// The key set of the trusted identity provider, when its metadata does not name it.
    pub fn trusted_idp_jwks_url(mut self, url: impl Into<String>) -> Self {
        self.idp_jwks = Some(url.into());
        self
    }

    /// A client configured ahead of time.
    pub fn client(mut self, client: ProxyClient) -> Self {
        self.clients.push(client);
        self
    }

    /// The lifetime of the access tokens the proxy issues (default 15 minutes, at most a day).
    pub fn access_token_ttl(mut self, ttl: Duration) -> Self {
        self.access_ttl = ttl;
        self
    }

    /// The lifetime of refresh tokens and of the grant behind them (default 30 days); each
    /// refresh rotates the token and starts the lifetime again.
    pub fn refresh_token_ttl(mut self, ttl: Duration) -> Self {
        self.refresh_ttl = ttl;
        self
    }

    /// A name for people: the protected resource metadata's `resource_name`, and the consent
    /// page's name of the server.
    pub fn resource_name(mut self, name: impl Into<String>) -> Self {
        self.resource_name = Some(name.into());
        self
    }

    /// At most this many sign-ins under way at once, from every browser together (default
    /// 10 000; at least 1). A sign-in is under way from the authorization request until its
    /// upstream callback, its denial, or 10 minutes; past the bound, new ones are sent back to
    /// their client with `temporarily_unavailable`. With a shared store the bound is the
    /// replicas' together.
    pub fn max_pending_sign_ins(mut self, n: usize) -> Self {
        self.max_pending = n.max(1);
        self
    }

    /// At most this many of them started from one network address (default 64; at least 1):
    /// an IPv4 address, or an IPv6 network of the server's `Limits::ipv6_client_prefix` (a /64
    /// by default: one subscriber's network). The address is the connection's peer, or with
    /// `Server::client_ip_header` the one the reverse proxy names. Behind a NAT every user
    /// shares one; raise it where many people sign in through one address within 10 minutes.
    pub fn max_pending_sign_ins_per_client(mut self, n: usize) -> Self {
        self.max_pending_per_client = n.max(1);
        self
    }

    /// At most this many of them started from one IPv6 /48 together (default 1 024; at least
    /// 1): whoever holds a /48 holds 65 536 /64s, each a client of its own.
    pub fn max_pending_sign_ins_per_network(mut self, n: usize) -> Self {
        self.max_pending_per_network = n.max(1);
        self
    }

    /// Builds the proxy.
    pub fn build(self) -> Result<AuthProxy, AuthError> {
        let bad = |r: String| AuthError::misconfigured(r);
        let public = self.public_url.trim_end_matches('/').to_owned();
        let uri: http::Uri = public
            .parse()
            .map_err(|_| bad(format!("the public URL {public:?} is not a URL")))?;
        let https = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => return Err(bad(format!("the public URL {public:?} is not http(s)"))),
        };
        if uri.host().is_none_or(str::is_empty) || uri.query().is_some() || public.contains('#') {
            return Err(bad(format!(
                "the public URL {public:?} needs a host, and no query or fragment"
            )));
        }
        if !https && !matches!(uri.host(), Some("127.0.0.1" | "localhost" | "[::1]")) {
            tracing::warn!(
                public,
                "the authorization proxy is served over plain http; MCP requires https for it"
            );
        }
        if !self.path.starts_with('/') {
            return Err(bad(format!(
                "the endpoint path {:?} must start with '/'",
                self.path
            )));
        }
        self.upstream.check().map_err(bad)?;
        if self.allow_http_client_metadata
            && !matches!(uri.host(), Some("127.0.0.1" | "localhost" | "[::1]"))
        {
            tracing::warn!(
                public,
                "allow_http_client_metadata is on for a proxy that is not on a loopback address: it is for tests only"
            );
        }
        let secret = match self.secret {
            Some(s) if s.len() >= 32 => s,
            Some(_) => return Err(bad("the proxy's secret must be at least 32 bytes".into())),
            None => {
                let mut s = vec![0u8; 32];
                getrandom::fill(&mut s)
                    .map_err(|e| bad(format!("the system has no randomness: {e}")))?;
                s
            }
        };
        let prefix = uri.path().trim_end_matches('/').to_owned();
        let resource = format!("{public}{}", self.path);
        let keys = tokens::Keys::derive(&secret).map_err(bad)?;
        let fetcher = Fetcher::new(Limits {
            timeout: upstream::UPSTREAM_TIMEOUT,
            max_bytes: 1 << 20,
        })
        .map_err(bad)?;
        let idp = match self.idp {
            None => None,
            Some(issuer) => {
                let mut b =
                    JwtVerifier::builder(issuer, public.clone()).token_type(tokens::ID_JAG_TYP);
                if let Some(j) = self.idp_jwks {
                    b = b.jwks_url(j);
                }
                Some(b.build()?)
            }
        };
        for c in &self.clients {
            for u in &c.redirect_uris {
                clients::check_redirect_uri(u).map_err(bad)?;
            }
        }
        let dpop = DpopVerifier::with_key(&hmac(&secret, "dpop-nonce-key", b""), false);
        Ok(AuthProxy {
            inner: Arc::new(Inner {
                issuer: public,
                prefix,
                resource,
                scopes: self.scopes,
                policy: self.policy,
                upstream: self.upstream,
                upstream_endpoints: tokio::sync::RwLock::new(None),
                fetcher,
                metadata_fetcher: clients::MetadataFetcher::new(self.allow_http_client_metadata)
                    .map_err(bad)?,
                store: sealed::SealedStore::new(
                    self.store
                        .unwrap_or_else(|| Arc::new(MemoryProxyStore::default())),
                    &secret,
                ),
                cipher: sealed::TokenCipher::new(&secret).map_err(bad)?,
                secret,
                keys,
                dpop,
                idp,
                clients: self.clients,
                access_ttl: self.access_ttl.min(Duration::from_secs(86_400)),
                refresh_ttl: self.refresh_ttl,
                code_ttl: Duration::from_secs(60),
                sign_in_ttl: Duration::from_secs(600),
                secure_cookies: https,
                resource_name: self.resource_name,
                max_pending: self.max_pending,
                max_pending_per_client: self.max_pending_per_client,
                max_pending_per_network: self.max_pending_per_network,
                no_address_logged: std::sync::atomic::AtomicBool::new(false),
            }),
        })
    }
}
