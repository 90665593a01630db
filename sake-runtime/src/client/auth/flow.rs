//! [`OAuth`]: the authorization flow a client runs when a server refuses it, and the tokens
//! it holds per server.

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
            return Arc::new(Slot {
                current: RwLock::new(None),
                flow: tokio::sync::Mutex::new(FlowState::default()),
            });
        };
        if !slots.contains_key(server) && slots.len() >= MAX_SERVERS {
            slots.retain(|_, s| Arc::strong_count(s) > 1);
        }
        slots
            .entry(server.to_owned())
            .or_insert_with(|| {
                Arc::new(Slot {
                    current: RwLock::new(None),
                    flow: tokio::sync::Mutex::new(FlowState::default()),
                })
            })
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

    /// Sends a token request: with a DPoP proof when `dpop`, once more with the
    /// authorization server's nonce when it asks for one (RFC 9449 section 8).
    async fn token_request(
        &self,
        endpoint: &Endpoint<'_>,
        grant: &Grant,
        dpop: bool,
    ) -> Result<Response, OAuthError> {
        let mut retried = false;
        loop {
            let mut extra = HeaderMap::new();
            if dpop {
                extra.insert(
                    DPOP,
                    self.dpop()?
                        .proof("POST", endpoint.url, None, endpoint.url)?,
                );
            }
            let response = endpoint.send(grant, extra).await?;
            if !dpop {
                return Ok(response);
            }
            let fresh = response
                .headers
                .get("dpop-nonce")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|n| self.dpop().is_ok_and(|d| d.set_nonce(endpoint.url, n)));
            let wants_nonce = response.status == http::StatusCode::BAD_REQUEST
                && serde_json::from_slice::<serde_json::Value>(&response.body)
                    .ok()
                    .is_some_and(|v| v["error"] == "use_dpop_nonce");
            if wants_nonce && fresh && !retried {
                tracing::debug!(
                    issuer = endpoint.issuer,
                    "the token endpoint wants a DPoP nonce"
                );
                retried = true;
                continue;
            }
            return Ok(response);
        }
    }

    /// The headers `tokens` would be sent with, to compare with what a refused request
    /// carried.
    fn same_token(sent: &HeaderMap, tokens: Option<&Tokens>) -> bool {
        let sent = sent.get(AUTHORIZATION).and_then(|v| v.to_str().ok());
        match (sent, tokens) {
            (None, None) => true,
            (Some(s), Some(t)) => s
                .split_once(' ')
                .is_some_and(|(_, tok)| tok == t.access_token.expose()),
            _ => false,
        }
    }

    async fn refresh_tokens(
        &self,
        server: &str,
        slot: &Slot,
        tokens: &Tokens,
    ) -> Result<(), OAuthError> {
        let Some(refresh) = tokens.refresh_token.clone() else {
            return Err(OAuthError::config(format!(
                "the authorization server {} issued no refresh token for {server}",
                tokens.issuer
            )));
        };
        let known = self
            .inner
            .metadata
            .lock()
            .ok()
            .and_then(|m| m.get(&tokens.issuer).cloned());
        let meta = match known {
            Some(m) => m,
            None => self.server_metadata(&tokens.issuer, true).await?,
        };
        checked(&meta.token_endpoint, self.inner.insecure)?;
        let client = self.client_for(&meta, None).await?;
        let endpoint = Endpoint {
            fetcher: &self.inner.fetcher,
            url: &meta.token_endpoint,
            issuer: &meta.issuer,
            client: &client,
            method: client.method(meta.token_endpoint_auth_methods_supported.as_deref()),
        };
        let grant = Grant {
            grant_type: "refresh_token",
            fields: vec![
                ("refresh_token", refresh.expose().to_owned()),
                ("resource", tokens.resource.clone()),
            ],
        };
        let response = self
            .token_request(&endpoint, &grant, tokens.token_type == "DPoP")
            .await?;
        let mut fresh = endpoint.tokens(
            &grant,
            &response,
            &tokens.requested_scopes,
            &tokens.resource,
        )?;
        // RFC 6749 section 6: without a new refresh token, the old one stays valid.
        if fresh.refresh_token.is_none() {
            fresh.refresh_token = Some(refresh);
        }
        if response_lacks_scope(&response.body) {
            fresh.scopes = tokens.scopes.clone();
        }
        tracing::info!(server, issuer = %meta.issuer, "refreshed the access token");
        self.save(server, slot, fresh).await
    }

    /// Fetches the metadata of `issuer`, and remembers it.
    async fn server_metadata(
        &self,
        issuer: &str,
        legacy: bool,
    ) -> Result<ServerMetadata, OAuthError> {
        let meta = discovery::authorization_server(
            &self.inner.fetcher,
            issuer,
            legacy,
            self.inner.insecure,
        )
        .await?;
        if let Ok(mut m) = self.inner.metadata.lock() {
            if m.len() >= MAX_SERVERS && !m.contains_key(issuer) {
                m.clear();
            }
            m.insert(issuer.to_owned(), meta.clone());
        }
        Ok(meta)
    }

    /// The client to present to the authorization server of `meta`, in the order of the MCP
    /// authorization pages ("Client Registration"): pre-registered, Client ID Metadata
    /// Document, a registration kept from before, dynamic registration. `register_for`: the
    /// redirect URI to register with, when registering is allowed.
    async fn client_for(
        &self,
        meta: &ServerMetadata,
        register_for: Option<&str>,
    ) -> Result<RegisteredClient, OAuthError> {
        let issuer = &meta.issuer;
        if let Some(client) = &self.inner.pre_registered {
            let bound = match client.issuer() {
                Some(i) => Some(i.to_owned()),
                None => self.inner.bound.lock().ok().and_then(|mut b| {
                    // Bound to the first authorization server it is used with.
                    b.get_or_insert_with(|| issuer.clone());
                    b.clone()
                }),
            };
            if let Some(bound) = bound
                && bound != *issuer
            {
                return Err(OAuthError::WrongAuthorizationServer {
                    registered: bound,
                    current: issuer.clone(),
                });
            }
            return Ok(client.clone().bound_to(issuer));
        }
        if let Some(url) = &self.inner.metadata_document
            && meta.client_id_metadata_document_supported
        {
            return Ok(RegisteredClient::public(url.clone()));
        }
        let store = &self.inner.store;
        if let Some(kept) = store
            .load_client(issuer)
            .await
            .map_err(|e| OAuthError::Store { reason: e.0 })?
            .filter(|c| !c.expired() && c.issuer() == Some(issuer.as_str()))
        {
            return Ok(kept);
        }
        let Some(redirect_uri) = register_for else {
            return Err(OAuthError::NoRegistration {
                issuer: issuer.clone(),
                reason: "the registration made with it is gone".into(),
            });
        };
        if !self.inner.dynamic_registration {
            return Err(OAuthError::NoRegistration {
                issuer: issuer.clone(),
                reason: "dynamic registration is disabled and no client is pre-registered; pass one with OAuthBuilder::client".into(),
            });
        }
        let Some(endpoint) = &meta.registration_endpoint else {
            return Err(OAuthError::NoRegistration {
                issuer: issuer.clone(),
                reason: format!(
                    "it offers no dynamic registration{}; register a client with it and pass it with OAuthBuilder::client",
                    if self.inner.metadata_document.is_some() {
                        " and does not accept Client ID Metadata Documents"
                    } else {
                        " (and no Client ID Metadata Document URL is configured: OAuthBuilder::client_metadata_document)"
                    }
                ),
            });
        };
        checked(endpoint, self.inner.insecure)?;
        let client = register(
            &self.inner.fetcher,
            endpoint,
            issuer,
            &RegistrationRequest {
                client_name: &self.inner.client_name,
                redirect_uri,
                application_type: self.inner.application_type,
                supported: meta.token_endpoint_auth_methods_supported.as_deref(),
                refresh: self.inner.refresh_tokens,
            },
        )
        .await?;
        store
            .save_client(issuer, &client)
            .await
            .map_err(|e| OAuthError::Store { reason: e.0 })?;
        Ok(client)
    }

    /// Obtains new tokens for `server` from the authorization server `issuer`.
    async fn authorize(
        &self,
        server: &str,
        slot: &Slot,
        prm: Option<&ResourceMetadata>,
        issuer: &str,
        mut scopes: Vec<String>,
        resource_dpop: bool,
    ) -> Result<(), OAuthError> {
        let meta = self.server_metadata(issuer, prm.is_none()).await?;
        checked(&meta.token_endpoint, self.inner.insecure)?;
        // RFC 8707: the resource exactly as the protected resource metadata publishes it;
        // without metadata (2025-03-26), the server's URL.
        let resource = prm.map_or_else(|| canonical(server), |p| p.resource.clone());
        // DPoP-bound tokens only where both ends take them: the authorization server
        // advertises ES256, and the server challenges with `DPoP` or its metadata lists DPoP
        // (RFC 9449 sections 5.1 and 7.1; a server that knows only Bearer refuses them).
        let dpop = resource_dpop && self.wants_dpop(&meta);
        let tokens = match &self.inner.grant {
            GrantKind::Code(user) => {
                if self.inner.refresh_tokens
                    && meta.lists_scope(OFFLINE_ACCESS)
                    && !scopes.iter().any(|s| s == OFFLINE_ACCESS)
                {
                    // 2026-07-28, "Refresh Tokens": only when the server lists it.
                    scopes.push(OFFLINE_ACCESS.to_owned());
                }
                self.code_flow(user.as_ref(), &meta, &resource, &scopes, dpop)
                    .await?
            }
            GrantKind::ClientCredentials => {
                self.client_credentials_grant(&meta, &resource, &scopes, dpop)
                    .await?
            }
            GrantKind::JwtBearer(source) => {
                self.jwt_bearer_grant(source.as_ref(), &meta, &resource, &scopes, dpop)
                    .await?
            }
        };
        tracing::info!(server, issuer, "authorized");
        self.save(server, slot, tokens).await
    }

    async fn code_flow(
        &self,
        user: &dyn UserStep,
        meta: &ServerMetadata,
        resource: &str,
        scopes: &[String],
        dpop: bool,
    ) -> Result<Tokens, OAuthError> {
        let issuer = meta.issuer.as_str();
        // MCP authorization pages, "Authorization Code Protection": no PKCE, no flow.
        if !meta.supports_s256() {
            return Err(OAuthError::PkceUnsupported {
                issuer: issuer.to_owned(),
            });
        }
        let Some(authorization_endpoint) = &meta.authorization_endpoint else {
            return Err(OAuthError::ServerMetadata {
                issuer: issuer.to_owned(),
                reason: "it names no authorization_endpoint".into(),
            });
        };
        checked(authorization_endpoint, self.inner.insecure)?;
        let redirect_uri = user.redirect_uri();
        // "Communication Security": a redirect URI is on this machine, or https.
        checked(&redirect_uri, self.inner.insecure)?;
        let scope = (!scopes.is_empty()).then(|| scopes.join(" "));
        let client = self.client_for(meta, Some(&redirect_uri)).await?;
        let pkce = Pkce::new()?;
        let state = random(16)?;
        let mut params: Vec<(&str, &str)> = vec![
            ("response_type", "code"),
            ("client_id", client.client_id()),
            ("redirect_uri", &redirect_uri),
            ("code_challenge", &pkce.challenge),
            ("code_challenge_method", "S256"),
            ("state", &state),
            ("resource", resource),
        ];
        if let Some(s) = &scope {
            params.push(("scope", s));
        }
        let url = with_query(authorization_endpoint, &params);
        tracing::debug!(issuer, "asking the user to authorize");
        let callback = user.authorize(&url).await?;
        // RFC 9207 section 2.4, as the 2026-07-28 authorization page tabulates it: first,
        // before anything else of the response is looked at (an error included).
        let iss = callback.get("iss");
        match iss {
            Some(i) if i != issuer || callback.count("iss") > 1 => {
                return Err(OAuthError::IssuerParameter {
                    expected: issuer.to_owned(),
                    received: Some(super::clip(i)),
                });
            }
            None if meta.iss_parameter_supported => {
                return Err(OAuthError::IssuerParameter {
                    expected: issuer.to_owned(),
                    received: None,
                });
            }
            _ => {}
        }
        if callback.get("state") != Some(state.as_str()) {
            return Err(OAuthError::StateMismatch);
        }
        if let Some(error) = callback.get("error") {
            return Err(OAuthError::Denied {
                error: super::clip(error),
                description: callback.get("error_description").map(super::clip),
            });
        }
        let Some(code) = callback.get("code").filter(|c| !c.is_empty()) else {
            return Err(OAuthError::protocol(
                issuer,
                "the authorization response has neither a code nor an error",
            ));
        };
        let endpoint = Endpoint {
            fetcher: &self.inner.fetcher,
            url: &meta.token_endpoint,
            issuer,
            client: &client,
            method: client.method(meta.token_endpoint_auth_methods_supported.as_deref()),
        };
        let grant = Grant {
            grant_type: "authorization_code",
            fields: vec![
                ("code", code.to_owned()),
                ("redirect_uri", redirect_uri.clone()),
                ("code_verifier", pkce.verifier.expose().to_owned()),
                ("resource", resource.to_owned()),
            ],
        };
        let response = self.token_request(&endpoint, &grant, dpop).await?;
        endpoint.tokens(&grant, &response, scopes, resource)
    }

    async fn client_credentials_grant(
        &self,
        meta: &ServerMetadata,
        resource: &str,
        scopes: &[String],
        dpop: bool,
    ) -> Result<Tokens, OAuthError> {
        let client = self.client_for(meta, None).await?;
        let endpoint = Endpoint {
            fetcher: &self.inner.fetcher,
            url: &meta.token_endpoint,
            issuer: &meta.issuer,
            client: &client,
            method: client.method(meta.token_endpoint_auth_methods_supported.as_deref()),
        };
        let mut fields = vec![("resource", resource.to_owned())];
        if !scopes.is_empty() {
            fields.push(("scope", scopes.join(" ")));
        }
        let grant = Grant {
            grant_type: "client_credentials",
            fields,
        };
        let response = self.token_request(&endpoint, &grant, dpop).await?;
        endpoint.tokens(&grant, &response, scopes, resource)
    }

    async fn jwt_bearer_grant(
        &self,
        source: &dyn AssertionSource,
        meta: &ServerMetadata,
        resource: &str,
        scopes: &[String],
        dpop: bool,
    ) -> Result<Tokens, OAuthError> {
        let client = self.client_for(meta, None).await?;
        let assertion = source
            .assertion(&AssertionRequest {
                issuer: &meta.issuer,
                resource,
                scopes,
            })
            .await?;
        let endpoint = Endpoint {
            fetcher: &self.inner.fetcher,
            url: &meta.token_endpoint,
            issuer: &meta.issuer,
            client: &client,
            method: client.method(meta.token_endpoint_auth_methods_supported.as_deref()),
        };
        let mut fields = vec![
            ("assertion", assertion.expose().to_owned()),
            ("resource", resource.to_owned()),
        ];
        if !scopes.is_empty() {
            fields.push(("scope", scopes.join(" ")));
        }
        let grant = Grant {
            grant_type: JWT_BEARER,
            fields,
        };
        let response = self.token_request(&endpoint, &grant, dpop).await?;
        endpoint.tokens(&grant, &response, scopes, resource)
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

impl OAuthBuilder {
    fn new(grant: GrantKind) -> Self {
        OAuthBuilder {
            grant,
            pre_registered: None,
            metadata_document: None,
            dynamic_registration: true,
            client_name: "sake-client".into(),
            application_type: ApplicationType::Native,
            scopes: None,
            refresh_tokens: true,
            insecure: false,
            store: None,
            timeout: Duration::from_secs(30),
            dpop: true,
        }
    }

    /// Whether to ask for DPoP-bound tokens (RFC 9449) from authorization servers that
    /// advertise `ES256` in `dpop_signing_alg_values_supported` (default `true`). A DPoP-bound
    /// token is useless to anyone without the client's key, which lives in memory only: after
    /// a restart, persisted DPoP-bound tokens are replaced by a new authorization.
    pub fn dpop(mut self, enabled: bool) -> Self {
        self.dpop = enabled;
        self
    }

    /// A client registered with the authorization server ahead of time: used before any
    /// other way of registering (bind it to its server with
    /// [`RegisteredClient::for_issuer`]).
    pub fn client(mut self, client: RegisteredClient) -> Self {
        self.pre_registered = Some(client);
        self
    }

    /// The HTTPS URL of the client's Client ID Metadata Document (the client hosts it; see
    /// [`OAuth::client_metadata`]): the `client_id` at authorization servers that advertise
    /// `client_id_metadata_document_supported`.
    pub fn client_metadata_document(mut self, url: impl Into<String>) -> Self {
        self.metadata_document = Some(url.into());
        self
    }

    /// Whether to register dynamically (RFC 7591) with authorization servers that offer it
    /// when no other registration applies (default `true`).
    pub fn dynamic_registration(mut self, enabled: bool) -> Self {
        self.dynamic_registration = enabled;
        self
    }

    /// The `client_name` registered dynamically (default `sake-client`).
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = name.into();
        self
    }

    /// The `application_type` registered dynamically (default [`ApplicationType::Native`]).
    pub fn application_type(mut self, kind: ApplicationType) -> Self {
        self.application_type = kind;
        self
    }

    /// The scopes to ask for when the server's challenge names none (by default, those its
    /// protected resource metadata lists, or none).
    pub fn scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = Some(scopes.into_iter().map(Into::into).collect());
        self
    }

    /// Whether to ask for refresh tokens (default `true`): `refresh_token` among the grant
    /// types registered, and `offline_access` requested from authorization servers that list
    /// it.
    pub fn refresh_tokens(mut self, enabled: bool) -> Self {
        self.refresh_tokens = enabled;
        self
    }

    /// Where tokens and registrations are kept (default: a [`MemoryStore`] of this `OAuth`).
    pub fn store(mut self, store: impl TokenStore + 'static) -> Self {
        self.store = Some(Arc::new(store));
        self
    }

    /// The longest wait for each answer of an authorization server (default 30 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Allows plain `http` to hosts other than this machine, for authorization servers and
    /// for servers that receive tokens. For test networks only: the MCP authorization pages
    /// require https, and tokens sent over http can be read by anyone on the way.
    pub fn allow_insecure_http(mut self, allow: bool) -> Self {
        self.insecure = allow;
        self
    }

    /// Builds the [`OAuth`].
    pub fn build(self) -> Result<OAuth, OAuthError> {
        if let Some(url) = &self.metadata_document {
            // Client ID Metadata Documents: an https URL with a path (or, for tests, plain
            // http on this machine: the authorization server decides whether it takes it).
            let ok = url.parse::<http::Uri>().is_ok_and(|u| {
                let loopback = matches!(u.host(), Some("127.0.0.1" | "localhost" | "[::1]"));
                (u.scheme_str() == Some("https") || (u.scheme_str() == Some("http") && loopback))
                    && u.host().is_some()
                    && u.path().len() > 1
            });
            if !ok {
                return Err(OAuthError::config(format!(
                    "the client metadata document URL {url:?} must be an https URL with a path"
                )));
            }
        }
        if matches!(self.grant, GrantKind::ClientCredentials)
            && self
                .pre_registered
                .as_ref()
                .is_none_or(|c| c.secret().is_none() && c.key().is_none())
        {
            return Err(OAuthError::config(
                "the client credentials grant needs a confidential client: RegisteredClient::with_secret or RegisteredClient::with_key",
            ));
        }

        let fetcher = Fetcher::new(Limits {
            timeout: self.timeout,
            max_bytes: 1 << 20,
        })
        .map_err(OAuthError::config)?;
        Ok(OAuth {
            inner: Arc::new(Inner {
                grant: self.grant,
                pre_registered: self.pre_registered,
                bound: Mutex::new(None),
                metadata_document: self.metadata_document,
                dynamic_registration: self.dynamic_registration,
                client_name: self.client_name,
                application_type: self.application_type,
                scopes: self.scopes,
                refresh_tokens: self.refresh_tokens,
                insecure: self.insecure,
                store: self.store.unwrap_or_else(|| Arc::new(MemoryStore::new())),
                fetcher,
                slots: Mutex::new(HashMap::new()),
                metadata: Mutex::new(HashMap::new()),
                use_dpop: self.dpop,
                dpop: OnceLock::new(),
            }),
        })
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
