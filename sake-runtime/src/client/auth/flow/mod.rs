//! [`OAuth`]: the authorization flow a client runs when a server refuses it, and the tokens
//! it holds per server. The grants it runs against an authorization server (token requests,
//! refresh, discovery, registration, the code flow, client credentials, JWT bearer) are in
//! [`grants`]; [`OAuthBuilder`]'s settings in [`builder`].

mod builder;
mod grants;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::time::Duration;

use http::header::AUTHORIZATION;
use http::{HeaderMap, HeaderValue};

use super::assertion::{AssertionRequest, AssertionSource};
use super::challenge::Challenge;
use super::discovery::{self, ResourceMetadata, ServerMetadata};
use super::dpop::{self, Dpop};
use super::registration::{ApplicationType, RegisteredClient, RegistrationRequest, register};
use super::store::{MemoryStore, TokenStore, Tokens};
use super::token::{Endpoint, Grant, Pkce, error_code, random};
use super::urls::{checked, with_query};
use super::user::UserStep;
use super::{Auth, AuthFuture, AuthRequest, OAuthError, Refusal};
use crate::net::fetch::{Fetcher, Limits, Response};
use crate::net::well_known::split_origin;

/// The grant type of the JWT bearer grant (RFC 7523 section 2.1).
const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// The header of a DPoP proof (RFC 9449 section 4.1).
const DPOP: http::HeaderName = http::HeaderName::from_static("dpop");
/// A token that expires within this margin is refreshed before it is sent.
const REFRESH_MARGIN: Duration = Duration::from_secs(30);
/// The most servers one [`OAuth`] keeps state for; beyond, idle ones are forgotten (their
/// tokens stay in the store).
const MAX_SERVERS: usize = 256;
/// The scope that asks for a refresh token (OpenID Connect Core 1.0 section 11).
const OFFLINE_ACCESS: &str = "offline_access";

/// Which grant obtains tokens.
#[derive(Clone)]
enum GrantKind {
    /// Authorization code with PKCE: a user signs in through this step.
    Code(Arc<dyn UserStep>),
    /// Client credentials (the client acts on its own behalf).
    ClientCredentials,
    /// A JWT bearer grant (RFC 7523 section 2.1) with assertions from this source.
    JwtBearer(Arc<dyn AssertionSource>),
}

/// What the last renewal of a server's tokens was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Renewal {
    Refreshed,
    Authorized,
}

/// Per server: the tokens sent, and the flow (one at a time).
struct Slot {
    current: RwLock<Option<Tokens>>,
    flow: tokio::sync::Mutex<FlowState>,
    /// How long the access token last obtained lives, in seconds (0: unknown, as for tokens
    /// from the store): a token is renewed at half its life when that is under
    /// [`REFRESH_MARGIN`].
    lifetime: std::sync::atomic::AtomicU64,
}

impl Slot {
    fn new() -> Arc<Slot> {
        Arc::new(Slot {
            current: RwLock::new(None),
            flow: tokio::sync::Mutex::new(FlowState::default()),
            lifetime: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// How long before its expiry the access token is renewed.
    fn margin(&self) -> Duration {
        match self.lifetime.load(std::sync::atomic::Ordering::Relaxed) {
            0 => REFRESH_MARGIN,
            life => REFRESH_MARGIN.min(Duration::from_secs(life / 2)),
        }
    }
}

#[derive(Default)]
struct FlowState {
    loaded: bool,
    last: Option<Renewal>,
}

struct Inner {
    grant: GrantKind,
    pre_registered: Option<RegisteredClient>,
    /// The issuer a pre-registered client without one was first used with.
    bound: Mutex<Option<String>>,
    metadata_document: Option<String>,
    dynamic_registration: bool,
    client_name: String,
    application_type: ApplicationType,
    scopes: Option<Vec<String>>,
    refresh_tokens: bool,
    insecure: bool,
    store: Arc<dyn TokenStore>,
    fetcher: Fetcher,
    slots: Mutex<HashMap<String, Arc<Slot>>>,
    /// The metadata of each authorization server, as last fetched (refreshing uses it; an
    /// authorization fetches it anew).
    metadata: Mutex<HashMap<String, ServerMetadata>>,
    /// Whether to ask for DPoP-bound tokens where the authorization server offers them.
    use_dpop: bool,
    /// The DPoP key, made on first use.
    dpop: OnceLock<Dpop>,
}

/// The OAuth 2.1 client of the MCP authorization pages: an [`Auth`] that obtains, keeps and
/// renews tokens for the servers a client talks to. Cheap to clone; clones share tokens and
/// state, and one `OAuth` can serve several servers (each keyed by its URL).
///
/// Built with [`OAuth::authorization_code`] (a user signs in) or
/// [`OAuth::client_credentials`] (the application acts on its own behalf).
#[derive(Clone)]
pub struct OAuth {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for OAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuth")
            .field(
                "grant",
                &match self.inner.grant {
                    GrantKind::Code(_) => "authorization_code",
                    GrantKind::ClientCredentials => "client_credentials",
                    GrantKind::JwtBearer(_) => JWT_BEARER,
                },
            )
            .field("client", &self.inner.pre_registered)
            .field("client_metadata_document", &self.inner.metadata_document)
            .finish_non_exhaustive()
    }
}

/// Configures an [`OAuth`].
pub struct OAuthBuilder {
    grant: GrantKind,
    pre_registered: Option<RegisteredClient>,
    metadata_document: Option<String>,
    dynamic_registration: bool,
    client_name: String,
    application_type: ApplicationType,
    scopes: Option<Vec<String>>,
    refresh_tokens: bool,
    insecure: bool,
    store: Option<Arc<dyn TokenStore>>,
    timeout: Duration,
    dpop: bool,
}

impl std::fmt::Debug for OAuthBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthBuilder")
            .field("client", &self.pre_registered)
            .field("client_metadata_document", &self.metadata_document)
            .field("dynamic_registration", &self.dynamic_registration)
            .field("client_name", &self.client_name)
            .finish_non_exhaustive()
    }
}

impl OAuth {
    /// The authorization code flow with PKCE: when a server asks for authorization, a user
    /// signs in through `user` (a browser, or [`Headless`](super::Headless) in tests).
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// use sake::client::Client;
    /// use sake::client::auth::{LoopbackBrowser, OAuth};
    /// use serde_json::json;
    ///
    /// let auth = OAuth::authorization_code(LoopbackBrowser::new()?)
    ///     .client_name("my-app")
    ///     .build()?;
    /// let client = Client::builder()
    ///     .auth(auth)
    ///     .connect("https://mcp.example.com/mcp")
    ///     .await?;
    /// let report: String = client.call("weekly_report", json!({})).await?;
    /// # Ok(()) }
    /// ```
    pub fn authorization_code(user: impl UserStep + 'static) -> OAuthBuilder {
        OAuthBuilder::new(GrantKind::Code(Arc::new(user)))
    }

    /// The client credentials grant (the MCP extension
    /// `io.modelcontextprotocol/oauth-client-credentials`): the application authenticates as
    /// itself with a client registered ahead of time, by secret or by signed JWT
    /// ([`RegisteredClient::with_secret`], [`RegisteredClient::with_key`]).
    ///
    /// ```no_run
    /// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
    /// use sake::client::Client;
    /// use sake::client::auth::{ClientKey, OAuth, RegisteredClient};
    ///
    /// let id = std::env::var("MCP_CLIENT_ID")?;
    /// let secret = std::env::var("MCP_CLIENT_SECRET")?;
    /// let auth = OAuth::client_credentials(RegisteredClient::with_secret(id.clone(), secret)).build()?;
    /// // Or a signed JWT instead of a secret (private_key_jwt, RFC 7523):
    /// let _signed = RegisteredClient::with_key(id, ClientKey::from_pem(&std::fs::read("key.pem")?, "ES256")?);
    /// let client = Client::builder().auth(auth).connect("https://mcp.example.com/mcp").await?;
    /// let tools = client.list_tools().await?;
    /// # Ok(()) }
    /// ```
    pub fn client_credentials(client: RegisteredClient) -> OAuthBuilder {
        OAuthBuilder::new(GrantKind::ClientCredentials).client(client)
    }

    /// The JWT bearer grant (RFC 7523 section 2.1): the client presents an assertion from
    /// `source` (a workload identity token, or an [`IdJag`](super::IdJag) from the
    /// enterprise's identity provider), as the client registered ahead of time. A refused
    /// grant is not retried, and no other grant is tried.
    pub fn jwt_bearer(
        client: RegisteredClient,
        source: impl AssertionSource + 'static,
    ) -> OAuthBuilder {
        OAuthBuilder::new(GrantKind::JwtBearer(Arc::new(source))).client(client)
    }

    /// The tokens held for `server` (its URL, as connected to), if any.
    pub async fn tokens(&self, server: &str) -> Result<Option<Tokens>, OAuthError> {
        let slot = self.slot(server);
        self.ensure_loaded(server, &slot).await?;
        Ok(current(&slot))
    }

    /// Renews the access token of `server` with its refresh token now.
    pub async fn refresh(&self, server: &str) -> Result<(), OAuthError> {
        let slot = self.slot(server);
        let mut st = slot.flow.lock().await;
        self.load(server, &slot, &mut st).await?;
        let Some(tokens) = current(&slot) else {
            return Err(OAuthError::config(format!(
                "no tokens are held for {server}; connect first"
            )));
        };
        self.refresh_tokens(server, &slot, &tokens).await?;
        st.last = Some(Renewal::Refreshed);
        Ok(())
    }

    /// Forgets the tokens of `server` (here and in the store).
    pub async fn sign_out(&self, server: &str) -> Result<(), OAuthError> {
        let slot = self.slot(server);
        let mut st = slot.flow.lock().await;
        st.loaded = true;
        set_current(&slot, None);
        self.inner
            .store
            .clear_tokens(server)
            .await
            .map_err(|e| OAuthError::Store { reason: e.0 })
    }

    fn slot(&self, server: &str) -> Arc<Slot> {
        let Ok(mut slots) = self.inner.slots.lock() else {
            return Slot::new();
        };
        if !slots.contains_key(server) && slots.len() >= MAX_SERVERS {
            slots.retain(|_, s| Arc::strong_count(s) > 1);
        }
        slots
            .entry(server.to_owned())
            .or_insert_with(Slot::new)
            .clone()
    }

    async fn ensure_loaded(&self, server: &str, slot: &Slot) -> Result<(), OAuthError> {
        if current(slot).is_some() {
            return Ok(());
        }
        let mut st = slot.flow.lock().await;
        self.load(server, slot, &mut st).await
    }

    /// Reads the store once per server.
    async fn load(&self, server: &str, slot: &Slot, st: &mut FlowState) -> Result<(), OAuthError> {
        if st.loaded {
            return Ok(());
        }
        let stored = self
            .inner
            .store
            .load_tokens(server)
            .await
            .map_err(|e| OAuthError::Store { reason: e.0 })?;
        if stored.is_some() {
            tracing::debug!(server, "using stored tokens");
        }
        set_current(slot, stored);
        st.loaded = true;
        Ok(())
    }

    async fn save(&self, server: &str, slot: &Slot, tokens: Tokens) -> Result<(), OAuthError> {
        self.inner
            .store
            .save_tokens(server, &tokens)
            .await
            .map_err(|e| OAuthError::Store { reason: e.0 })?;
        let life = tokens
            .expires_at
            .map_or(0, |at| at.saturating_sub(super::token::now()));
        slot.lifetime
            .store(life, std::sync::atomic::Ordering::Relaxed);
        set_current(slot, Some(tokens));
        Ok(())
    }

    async fn forget(&self, server: &str, slot: &Slot) -> Result<(), OAuthError> {
        set_current(slot, None);
        self.inner
            .store
            .clear_tokens(server)
            .await
            .map_err(|e| OAuthError::Store { reason: e.0 })
    }

    /// The headers that carry `tokens` on a `method` request: `Authorization: Bearer`, or
    /// `Authorization: DPoP` and a fresh proof (RFC 9449 section 7.1).
    fn headers(
        &self,
        server: &str,
        method: &http::Method,
        tokens: &Tokens,
    ) -> Result<HeaderMap, OAuthError> {
        // Tokens go only to https servers (or this machine).
        checked(server, self.inner.insecure)?;
        let access = tokens.access_token.expose();
        let dpop = tokens.token_type == "DPoP";
        let scheme = if dpop { "DPoP" } else { "Bearer" };
        let mut value = HeaderValue::from_str(&format!("{scheme} {access}")).map_err(|_| {
            OAuthError::protocol(
                &tokens.issuer,
                "the access token cannot be sent in a header",
            )
        })?;
        value.set_sensitive(true);
        let mut h = HeaderMap::new();
        h.insert(AUTHORIZATION, value);
        if dpop {
            let proof = self
                .dpop()?
                .proof(method.as_str(), server, Some(access), server)?;
            h.insert(DPOP, proof);
        }
        Ok(h)
    }

    /// The DPoP key (made on first use).
    fn dpop(&self) -> Result<&Dpop, OAuthError> {
        if let Some(d) = self.inner.dpop.get() {
            return Ok(d);
        }
        let made = Dpop::generate()?;
        let _ = self.inner.dpop.set(made);
        self.inner
            .dpop
            .get()
            .ok_or_else(|| OAuthError::config("the DPoP key is missing"))
    }

    /// Whether to ask the authorization server of `meta` for DPoP-bound tokens.
    fn wants_dpop(&self, meta: &ServerMetadata) -> bool {
        self.inner.use_dpop
            && meta
                .dpop_signing_alg_values_supported
                .as_ref()
                .is_some_and(|a| a.iter().any(|x| x == dpop::ALG))
    }

    /// What to do about a refusal; `Ok(true)`: retry.
    async fn on_refusal(&self, r: &Refusal<'_>) -> Result<bool, OAuthError> {
        let server = r.server;
        let slot = self.slot(server);
        let mut st = slot.flow.lock().await;
        self.load(server, &slot, &mut st).await?;
        let held = current(&slot);
        // Another request renewed the tokens while this one was on its way: retry with them.
        if held.is_some() && !Self::same_token(r.sent, held.as_ref()) {
            return Ok(true);
        }
        let challenges = Challenge::from_headers(r.headers);
        // RFC 9449 section 9: a server that wants a nonce in the proof says so; retry with it
        // (once per new nonce).
        if let Some(nonce) = r.headers.get("dpop-nonce").and_then(|v| v.to_str().ok())
            && challenges.iter().any(|c| {
                c.scheme().eq_ignore_ascii_case("dpop") && c.error() == Some("use_dpop_nonce")
            })
            && held.as_ref().is_some_and(|t| t.token_type == "DPoP")
            && self.dpop()?.set_nonce(server, nonce)
        {
            tracing::debug!(server, "the server wants a DPoP nonce");
            return Ok(true);
        }
        // The challenge to follow: Bearer's, or DPoP's (the same parameters, RFC 9449
        // section 7.1).
        let bearer = Challenge::bearer(&challenges).or_else(|| {
            challenges
                .iter()
                .find(|c| c.scheme().eq_ignore_ascii_case("dpop"))
        });
        let challenged = bearer.map(Challenge::scopes).unwrap_or_default();
        match r.status {
            403 => {
                if bearer.and_then(Challenge::error) != Some("insufficient_scope") {
                    return Ok(false);
                }
                let prior = held
                    .as_ref()
                    .map(|t| t.requested_scopes.clone())
                    .unwrap_or_default();
                // Asked for all of these already, and still refused: the authorization
                // server grants less than the server needs. Do not loop.
                if challenged.is_empty()
                    || (r.retries > 0 && challenged.iter().all(|s| prior.contains(s)))
                {
                    return Err(OAuthError::InsufficientScope { scopes: challenged });
                }
                // 2026-07-28, "Step-Up Authorization Flow": the union of what was asked for
                // before and what the challenge names.
                let mut scopes = prior;
                for s in challenged {
                    if !scopes.contains(&s) {
                        scopes.push(s);
                    }
                }
                let (prm, issuer) = self.locate(server, bearer).await?;
                if held.as_ref().is_some_and(|t| t.issuer != issuer) {
                    self.forget(server, &slot).await?;
                }
                tracing::info!(server, scopes = %scopes.join(" "), "the server needs more scopes: re-authorizing");
                let resource_dpop = dpop_offered(&challenges, prm.as_ref());
                self.authorize(server, &slot, prm.as_ref(), &issuer, scopes, resource_dpop)
                    .await?;
                st.last = Some(Renewal::Authorized);
                Ok(true)
            }
            401 => {
                if r.retries > 0 && st.last == Some(Renewal::Authorized) && held.is_some() {
                    return Err(OAuthError::Refused { status: 401 });
                }
                let (prm, issuer) = self.locate(server, bearer).await?;
                let mut prior = Vec::new();
                if let Some(t) = &held {
                    if t.issuer == issuer {
                        prior = t.requested_scopes.clone();
                        // Refreshed for this very request already, and still refused: the
                        // refresh does not help.
                        let refreshed = r.retries > 0 && st.last == Some(Renewal::Refreshed);
                        if t.refresh_token.is_some() && !refreshed {
                            match self.refresh_tokens(server, &slot, t).await {
                                Ok(()) => {
                                    st.last = Some(Renewal::Refreshed);
                                    return Ok(true);
                                }
                                Err(e) => {
                                    tracing::debug!(
                                        server,
                                        "refreshing failed ({e}); authorizing again"
                                    );
                                }
                            }
                        }
                    } else {
                        // 2026-07-28, "Authorization Server Binding": nothing of the old
                        // authorization server is reused.
                        tracing::info!(server, from = %t.issuer, to = %issuer, "the server moved to another authorization server");
                    }
                    self.forget(server, &slot).await?;
                }
                // "Scope Selection Strategy": the challenge's scopes, else everything the
                // server lists, else none; with what was asked for before (step-up union).
                let mut scopes = if !challenged.is_empty() {
                    challenged
                } else if !prior.is_empty() {
                    Vec::new()
                } else if let Some(s) = self.inner.scopes.clone() {
                    s
                } else {
                    prm.as_ref()
                        .and_then(|p| p.scopes_supported.clone())
                        .unwrap_or_default()
                };
                for s in prior {
                    if !scopes.contains(&s) {
                        scopes.push(s);
                    }
                }
                let resource_dpop = dpop_offered(&challenges, prm.as_ref());
                self.authorize(server, &slot, prm.as_ref(), &issuer, scopes, resource_dpop)
                    .await?;
                st.last = Some(Renewal::Authorized);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// The server's protected resource metadata (when it has one) and the authorization
    /// server to use: the first the metadata lists, or (2025-03-26) the server's origin.
    async fn locate(
        &self,
        server: &str,
        bearer: Option<&Challenge>,
    ) -> Result<(Option<ResourceMetadata>, String), OAuthError> {
        checked(server, self.inner.insecure)?;
        let hinted = bearer.and_then(Challenge::resource_metadata);
        let prm =
            discovery::protected_resource(&self.inner.fetcher, server, hinted, self.inner.insecure)
                .await?;
        let issuer = match &prm {
            // The first the server lists (RFC 9728 section 7.6 leaves the choice to clients).
            Some(p) => p.authorization_servers.first().cloned().ok_or_else(|| {
                OAuthError::ResourceMetadata {
                    server: server.to_owned(),
                    reason: format!("the document at {} names no authorization server", p.url),
                }
            })?,
            None => {
                tracing::debug!(
                    server,
                    "no protected resource metadata: the server's origin is its authorization server (2025-03-26)"
                );
                split_origin(server).0.to_owned()
            }
        };
        Ok((prm, issuer))
    }
}

/// Whether the server takes DPoP-bound tokens: it challenges with the `DPoP` scheme (RFC
/// 9449 section 7.1), or its metadata lists DPoP algorithms or requires bound tokens.
fn dpop_offered(challenges: &[Challenge], prm: Option<&ResourceMetadata>) -> bool {
    challenges
        .iter()
        .any(|c| c.scheme().eq_ignore_ascii_case("dpop"))
        || prm.is_some_and(|p| p.dpop)
}

/// The canonical URI of a server without protected resource metadata: its URL without a
/// fragment (RFC 8707 section 2).
fn canonical(server: &str) -> String {
    server.split('#').next().unwrap_or(server).to_owned()
}

fn response_lacks_scope(body: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .is_none_or(|v| v.get("scope").is_none())
}

fn current(slot: &Slot) -> Option<Tokens> {
    slot.current.read().ok().and_then(|c| c.clone())
}

fn set_current(slot: &Slot, tokens: Option<Tokens>) {
    if let Ok(mut c) = slot.current.write() {
        *c = tokens;
    }
}

impl Auth for OAuth {
    fn credentials<'a>(&'a self, request: &'a AuthRequest<'a>) -> AuthFuture<'a, HeaderMap> {
        Box::pin(async move {
            let server = request.server;
            let slot = self.slot(server);
            self.ensure_loaded(server, &slot).await?;
            let Some(tokens) = current(&slot) else {
                return Ok(HeaderMap::new());
            };
            if tokens.refresh_token.is_none()
                && self.renews_by_grant()
                && tokens.expires_within(slot.margin())
            {
                let mut st = slot.flow.lock().await;
                // Another request may have renewed them meanwhile.
                if let Some(t) = current(&slot)
                    .filter(|t| t.refresh_token.is_none() && t.expires_within(slot.margin()))
                {
                    match self.renew_by_grant(server, &slot, &t).await {
                        Ok(()) => st.last = Some(Renewal::Authorized),
                        // Sent as it is: the refusal, if any, authorizes anew.
                        Err(e) => tracing::warn!(server, "renewing an expiring token failed: {e}"),
                    }
                }
            }
            if tokens.refresh_token.is_some() && tokens.expires_within(REFRESH_MARGIN) {
                let mut st = slot.flow.lock().await;
                // Another request may have refreshed them meanwhile.
                if let Some(t) = current(&slot).filter(|t| t.expires_within(REFRESH_MARGIN)) {
                    match self.refresh_tokens(server, &slot, &t).await {
                        Ok(()) => st.last = Some(Renewal::Refreshed),
                        Err(e) => {
                            tracing::debug!(server, "refreshing an expiring token failed: {e}");
                            if error_code(&e) == Some("invalid_grant") {
                                // The refresh token is dead; the next refusal authorizes anew.
                                self.forget(server, &slot).await?;
                            }
                        }
                    }
                }
            }
            match current(&slot) {
                Some(t) => self.headers(server, request.method, &t),
                None => Ok(HeaderMap::new()),
            }
        })
    }

    fn refused<'a>(&'a self, refusal: &'a Refusal<'a>) -> AuthFuture<'a, bool> {
        Box::pin(self.on_refusal(refusal))
    }
}

impl OAuth {
    /// The Client ID Metadata Document to host at the URL given to
    /// [`OAuthBuilder::client_metadata_document`] (draft-ietf-oauth-client-id-metadata-document:
    /// `client_id` identical to that URL, `client_name`, `redirect_uris`), for `redirect_uris`
    /// the redirect URIs of the user steps the client uses.
    pub fn client_metadata(&self, redirect_uris: &[&str]) -> Option<serde_json::Value> {
        let url = self.inner.metadata_document.as_ref()?;
        let mut grants = vec!["authorization_code"];
        if self.inner.refresh_tokens {
            grants.push("refresh_token");
        }
        Some(serde_json::json!({
            "client_id": url,
            "client_name": self.inner.client_name,
            "redirect_uris": redirect_uris,
            "grant_types": grants,
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        }))
    }
}
