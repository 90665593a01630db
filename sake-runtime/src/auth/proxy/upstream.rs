//! The upstream identity provider: the one confidential client the proxy has there, its
//! endpoints (from OpenID Connect discovery, or given), and the presets for common providers.

use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use http::{HeaderMap, HeaderValue, Method, StatusCode};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::auth::AuthError;
use crate::net::fetch::{Fetcher, basic_auth, form_body};
use crate::net::well_known::metadata_urls;

/// How the proxy authenticates to the upstream token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum UpstreamAuth {
    /// `client_secret_basic` (the default).
    Basic,
    /// `client_secret_post`.
    Post,
}

#[derive(Debug, Clone)]
enum Endpoints {
    /// OpenID Connect: found at `{issuer}/.well-known/openid-configuration` (or RFC 8414).
    Discover { issuer: String },
    /// Plain OAuth 2.0 (GitHub): given, with a user endpoint that names the subject.
    Fixed(Resolved),
}

/// The upstream endpoints in use.
#[derive(Debug, Clone)]
pub(crate) struct Resolved {
    /// The issuer of ID tokens (OpenID Connect), when there is one.
    pub(crate) issuer: Option<String>,
    pub(crate) authorization_endpoint: String,
    pub(crate) token_endpoint: String,
    pub(crate) userinfo_endpoint: Option<String>,
}

/// The upstream identity provider the proxy signs users in with, and its one pre-registered
/// confidential client (whose redirect URI is the proxy's `/oauth/callback`).
///
/// ```
/// use sake_runtime::auth::proxy::Upstream;
///
/// let generic = Upstream::oidc("https://idp.example.com", "client-id", "client-secret");
/// let entra = Upstream::entra_id("my-tenant-id", "client-id", "client-secret");
/// let google = Upstream::google("client-id.apps.googleusercontent.com", "client-secret");
/// let github = Upstream::github("Iv1.0123456789abcdef", "client-secret");
/// ```
#[derive(Clone)]
pub struct Upstream {
    endpoints: Endpoints,
    pub(crate) client_id: String,
    pub(crate) client_secret: String,
    pub(crate) auth: UpstreamAuth,
    pub(crate) scopes: Vec<String>,
    pub(crate) params: Vec<(String, String)>,
    pub(crate) resource: Option<String>,
    refuses_resource: bool,
    /// Where the subject is in the user endpoint's answer (OAuth without OpenID Connect).
    pub(crate) subject_field: String,
    /// Whether an ID token's `iss` must be the issuer (multi-tenant Entra ID tokens name the
    /// user's tenant instead).
    pub(crate) check_issuer: bool,
    pub(crate) name: String,
}

impl std::fmt::Debug for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstream")
            .field("name", &self.name)
            .field("endpoints", &self.endpoints)
            .field("client_id", &self.client_id)
            .field("scopes", &self.scopes)
            .finish_non_exhaustive()
    }
}

impl Upstream {
    fn new(endpoints: Endpoints, client_id: String, client_secret: String, name: &str) -> Self {
        Upstream {
            endpoints,
            client_id,
            client_secret,
            auth: UpstreamAuth::Basic,
            scopes: vec!["openid".into()],
            params: Vec::new(),
            resource: None,
            refuses_resource: false,
            subject_field: "sub".into(),
            check_issuer: true,
            name: name.into(),
        }
    }

    /// Any OpenID Connect provider (Okta, Auth0, Keycloak, …): its issuer (discovery at
    /// `{issuer}/.well-known/openid-configuration`, or RFC 8414), and the confidential client
    /// registered there. Asks for `openid` (add more with [`scopes`](Self::scopes)).
    pub fn oidc(
        issuer: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Self {
        let issuer = issuer.into();
        Upstream::new(
            Endpoints::Discover {
                issuer: issuer.trim_end_matches('/').to_owned(),
            },
            client_id.into(),
            client_secret.into(),
            "OpenID Connect",
        )
    }

    /// Okta: `https://{domain}/oauth2/{authorization_server}` (`default` for the default
    /// custom authorization server), or `https://{domain}` for the org server.
    pub fn okta(
        issuer: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Self {
        let mut u = Upstream::oidc(issuer, client_id, client_secret);
        u.scopes = vec![
            "openid".into(),
            "profile".into(),
            "email".into(),
            "offline_access".into(),
        ];
        u.name = "Okta".into();
        u
    }

    /// Auth0: `https://{tenant}.auth0.com/` (the trailing slash is part of Auth0's issuer).
    pub fn auth0(
        issuer: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Self {
        let issuer = issuer.into();
        let mut u = Upstream::new(
            Endpoints::Discover { issuer },
            client_id.into(),
            client_secret.into(),
            "Auth0",
        );
        u.scopes = vec![
            "openid".into(),
            "profile".into(),
            "email".into(),
            "offline_access".into(),
        ];
        u
    }

    /// Keycloak: `https://{host}/realms/{realm}`.
    pub fn keycloak(
        issuer: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Self {
        let mut u = Upstream::oidc(issuer, client_id, client_secret);
        u.scopes = vec!["openid".into(), "profile".into(), "email".into()];
        u.name = "Keycloak".into();
        u
    }

    /// Microsoft Entra ID (v2.0 endpoints) of `tenant` (a tenant id or domain; `common` or
    /// `organizations` for multi-tenant applications, whose ID tokens name each user's own
    /// tenant as issuer). Entra ID refuses the `resource` parameter of RFC 8707: ask for an
    /// API with scopes (`api://…/.default`, `User.Read`) instead.
    pub fn entra_id(
        tenant: impl AsRef<str>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Self {
        let tenant = tenant.as_ref();
        let mut u = Upstream::oidc(
            format!("https://login.microsoftonline.com/{tenant}/v2.0"),
            client_id,
            client_secret,
        );
        u.scopes = vec![
            "openid".into(),
            "profile".into(),
            "email".into(),
            "offline_access".into(),
        ];
        u.refuses_resource = true;
        u.check_issuer = !matches!(tenant, "common" | "organizations" | "consumers");
        u.name = "Microsoft Entra ID".into();
        u
    }

    /// Google (`https://accounts.google.com`). Asks for a refresh token the way Google wants
    /// (`access_type=offline`, `prompt=consent`).
    pub fn google(client_id: impl Into<String>, client_secret: impl Into<String>) -> Self {
        let mut u = Upstream::oidc("https://accounts.google.com", client_id, client_secret);
        u.scopes = vec!["openid".into(), "email".into(), "profile".into()];
        u.params = vec![
            ("access_type".into(), "offline".into()),
            ("prompt".into(), "consent".into()),
        ];
        u.name = "Google".into();
        u
    }

    /// GitHub (an OAuth App or a GitHub App): OAuth 2.0 without OpenID Connect. The user is
    /// the numeric `id` of `https://api.github.com/user`; the client authenticates in the
    /// form body.
    pub fn github(client_id: impl Into<String>, client_secret: impl Into<String>) -> Self {
        let mut u = Upstream::new(
            Endpoints::Fixed(Resolved {
                issuer: None,
                authorization_endpoint: "https://github.com/login/oauth/authorize".into(),
                token_endpoint: "https://github.com/login/oauth/access_token".into(),
                userinfo_endpoint: Some("https://api.github.com/user".into()),
            }),
            client_id.into(),
            client_secret.into(),
            "GitHub",
        );
        u.scopes = vec!["read:user".into()];
        u.auth = UpstreamAuth::Post;
        u.subject_field = "id".into();
        u
    }

    /// Plain OAuth 2.0 with the endpoints given: the user is the member `subject_field` of
    /// the JSON the user endpoint answers to a `GET` with the upstream access token.
    pub fn oauth2(
        authorization_endpoint: impl Into<String>,
        token_endpoint: impl Into<String>,
        user_endpoint: impl Into<String>,
        subject_field: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Self {
        let mut u = Upstream::new(
            Endpoints::Fixed(Resolved {
                issuer: None,
                authorization_endpoint: authorization_endpoint.into(),
                token_endpoint: token_endpoint.into(),
                userinfo_endpoint: Some(user_endpoint.into()),
            }),
            client_id.into(),
            client_secret.into(),
            "OAuth 2.0",
        );
        u.scopes = Vec::new();
        u.subject_field = subject_field.into();
        u
    }

    /// The scopes asked of the upstream provider (replacing the preset's).
    pub fn scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// An extra parameter of the upstream authorization request (`prompt`, `hd`, …).
    pub fn param(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.params.push((name.into(), value.into()));
        self
    }

    /// The upstream API the upstream tokens are for (RFC 8707 `resource`, sent upstream).
    /// Refused for Entra ID, which does not take the parameter.
    pub fn resource(mut self, resource: impl Into<String>) -> Self {
        self.resource = Some(resource.into());
        self
    }

    /// How the proxy authenticates to the upstream token endpoint.
    pub fn client_auth(mut self, auth: UpstreamAuth) -> Self {
        self.auth = auth;
        self
    }

    pub(crate) fn check(&self) -> Result<(), String> {
        if self.refuses_resource && self.resource.is_some() {
            return Err(format!(
                "{} refuses the resource parameter: ask for the upstream API with scopes instead of Upstream::resource",
                self.name
            ));
        }
        if self.client_id.is_empty() || self.client_secret.is_empty() {
            return Err("the upstream client id and secret must not be empty".into());
        }
        Ok(())
    }

    /// Whether the upstream is an OpenID provider (asks for a `nonce`, reads ID tokens).
    pub(crate) fn is_oidc(&self) -> bool {
        matches!(self.endpoints, Endpoints::Discover { .. })
    }

    /// The endpoints: given, or discovered.
    pub(crate) async fn resolve(&self, fetcher: &Fetcher) -> Result<Resolved, AuthError> {
        let issuer = match &self.endpoints {
            Endpoints::Fixed(r) => return Ok(r.clone()),
            Endpoints::Discover { issuer } => issuer,
        };
        #[derive(Deserialize)]
        struct Doc {
            issuer: String,
            authorization_endpoint: Option<String>,
            token_endpoint: Option<String>,
            userinfo_endpoint: Option<String>,
        }
        let mut urls = metadata_urls(issuer);
        // OpenID Connect first: that is what these providers are.
        urls.reverse();
        let mut tried = Vec::new();
        for url in urls {
            let response = fetcher
                .get(&url)
                .await
                .map_err(|e| AuthError::unavailable(format!("upstream discovery: {e}")))?;
            if response.status.is_server_error() {
                return Err(AuthError::unavailable(format!(
                    "upstream discovery: {url} answered {}",
                    response.status
                )));
            }
            if response.status != StatusCode::OK {
                tried.push(format!("{url} ({})", response.status.as_u16()));
                continue;
            }
            let doc: Doc = serde_json::from_slice(&response.body).map_err(|e| {
                AuthError::misconfigured(format!("upstream discovery: {url} is not metadata: {e}"))
            })?;
            if doc.issuer.trim_end_matches('/') != issuer.trim_end_matches('/') {
                return Err(AuthError::misconfigured(format!(
                    "upstream discovery: {url} names the issuer {:?}, not {issuer:?}",
                    doc.issuer
                )));
            }
            let (Some(authorization_endpoint), Some(token_endpoint)) =
                (doc.authorization_endpoint, doc.token_endpoint)
            else {
                return Err(AuthError::misconfigured(format!(
                    "upstream discovery: {url} names no authorization or token endpoint"
                )));
            };
            return Ok(Resolved {
                issuer: Some(doc.issuer),
                authorization_endpoint,
                token_endpoint,
                userinfo_endpoint: doc.userinfo_endpoint,
            });
        }
        Err(AuthError::misconfigured(format!(
            "no upstream metadata for {issuer:?}: tried {}",
            tried.join(", ")
        )))
    }

    /// POSTs a grant to the upstream token endpoint with the proxy's client credentials.
    pub(crate) async fn token_request(
        &self,
        fetcher: &Fetcher,
        endpoints: &Resolved,
        fields: &[(&str, &str)],
    ) -> Result<UpstreamTokens, UpstreamError> {
        let mut fields: Vec<(&str, &str)> = fields.to_vec();
        let mut headers = HeaderMap::new();
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        headers.insert(
            CONTENT_TYPE,
            HeaderValue::from_static("application/x-www-form-urlencoded"),
        );
        match self.auth {
            UpstreamAuth::Basic => {
                let v = basic_auth(&self.client_id, &self.client_secret).map_err(|_| {
                    UpstreamError::Config("the upstream client credentials cannot be sent".into())
                })?;
                headers.insert(AUTHORIZATION, v);
            }
            UpstreamAuth::Post => {
                fields.push(("client_id", &self.client_id));
                fields.push(("client_secret", &self.client_secret));
            }
        }
        let response = fetcher
            .send(
                Method::POST,
                &endpoints.token_endpoint,
                headers,
                Bytes::from(form_body(&fields)),
            )
            .await
            .map_err(|e| UpstreamError::Unavailable(e.to_string()))?;
        let body: Value = serde_json::from_slice(&response.body).unwrap_or(Value::Null);
        if !response.status.is_success() || body.get("error").is_some() {
            let code = body["error"].as_str().unwrap_or("").to_owned();
            if response.status.is_server_error() {
                return Err(UpstreamError::Unavailable(format!(
                    "the upstream token endpoint answered {}",
                    response.status
                )));
            }
            return Err(UpstreamError::Refused {
                error: super::clip(&code),
                description: body["error_description"]
                    .as_str()
                    .map(super::clip)
                    .unwrap_or_default(),
            });
        }
        let t: RawTokens = serde_json::from_value(body).map_err(|e| {
            UpstreamError::Unavailable(format!("the upstream token answer is not tokens: {e}"))
        })?;
        Ok(UpstreamTokens {
            access_token: t.access_token,
            token_type: t.token_type.unwrap_or_else(|| "Bearer".into()),
            refresh_token: t.refresh_token,
            id_token: t.id_token,
            expires_at: t.expires_in.map(|s| super::now() + s),
            scope: t.scope,
        })
    }

    /// Who signed in: the ID token's `sub` (OpenID Connect; the ID token came straight from
    /// the token endpoint over TLS, OpenID Connect Core section 3.1.3.7), else the user
    /// endpoint's subject field. Returns the subject and the identity claims kept.
    pub(crate) async fn identity(
        &self,
        fetcher: &Fetcher,
        endpoints: &Resolved,
        tokens: &UpstreamTokens,
        nonce: &str,
    ) -> Result<(String, Map<String, Value>), UpstreamError> {
        if let Some(id_token) = &tokens.id_token {
            let claims = jwt_payload(id_token).ok_or_else(|| {
                UpstreamError::Invalid("the upstream ID token is not a JWT".into())
            })?;
            if self.check_issuer
                && let Some(iss) = &endpoints.issuer
                && claims
                    .get("iss")
                    .and_then(Value::as_str)
                    .map(|s| s.trim_end_matches('/'))
                    != Some(iss.trim_end_matches('/'))
            {
                return Err(UpstreamError::Invalid(
                    "the upstream ID token names another issuer".into(),
                ));
            }
            let aud_ok = match claims.get("aud") {
                Some(Value::String(a)) => *a == self.client_id,
                Some(Value::Array(a)) => a.iter().any(|v| v.as_str() == Some(&self.client_id)),
                _ => false,
            };
            if !aud_ok {
                return Err(UpstreamError::Invalid(
                    "the upstream ID token is not for the proxy's client".into(),
                ));
            }
            if claims.get("nonce").and_then(Value::as_str) != Some(nonce) {
                return Err(UpstreamError::Invalid(
                    "the upstream ID token's nonce is not the one sent".into(),
                ));
            }
            if claims
                .get("exp")
                .and_then(Value::as_u64)
                .is_some_and(|e| e + 60 < super::now())
            {
                return Err(UpstreamError::Invalid(
                    "the upstream ID token expired".into(),
                ));
            }
            let sub = claims
                .get("sub")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .ok_or_else(|| {
                    UpstreamError::Invalid("the upstream ID token names no subject".into())
                })?
                .to_owned();
            return Ok((sub, identity_claims(&claims)));
        }
        let Some(url) = &endpoints.userinfo_endpoint else {
            return Err(UpstreamError::Invalid(
                "the upstream gave no ID token and has no user endpoint: ask for the openid scope"
                    .into(),
            ));
        };
        let mut headers = HeaderMap::new();
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        let mut v =
            HeaderValue::from_str(&format!("Bearer {}", tokens.access_token)).map_err(|_| {
                UpstreamError::Invalid("the upstream access token cannot be sent".into())
            })?;
        v.set_sensitive(true);
        headers.insert(AUTHORIZATION, v);
        let response = fetcher
            .send(Method::GET, url, headers, Bytes::new())
            .await
            .map_err(|e| UpstreamError::Unavailable(e.to_string()))?;
        if !response.status.is_success() {
            return Err(UpstreamError::Unavailable(format!(
                "the upstream user endpoint answered {}",
                response.status
            )));
        }
        let claims: Map<String, Value> = serde_json::from_slice(&response.body).map_err(|_| {
            UpstreamError::Invalid("the upstream user endpoint did not answer a JSON object".into())
        })?;
        let sub = match claims.get(&self.subject_field) {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            Some(Value::Number(n)) => n.to_string(),
            _ => {
                return Err(UpstreamError::Invalid(format!(
                    "the upstream user endpoint's answer has no {:?}",
                    self.subject_field
                )));
            }
        };
        Ok((sub, identity_claims(&claims)))
    }
}

/// The identity claims kept with a grant (a tool reads them from the principal's claims).
fn identity_claims(claims: &Map<String, Value>) -> Map<String, Value> {
    const KEEP: &[&str] = &[
        "email",
        "email_verified",
        "name",
        "preferred_username",
        "login",
        "given_name",
        "family_name",
        "tid",
        "oid",
        "hd",
    ];
    claims
        .iter()
        .filter(|(k, v)| {
            KEEP.contains(&k.as_str()) && (v.is_string() || v.is_boolean() || v.is_number())
        })
        .filter(|(_, v)| v.as_str().is_none_or(|s| s.len() <= 512))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// The payload of a compact JWS, unverified.
pub(crate) fn jwt_payload(jwt: &str) -> Option<Map<String, Value>> {
    let payload = jwt.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

#[derive(Deserialize)]
struct RawTokens {
    access_token: String,
    #[serde(default)]
    token_type: Option<String>,
    #[serde(default)]
    refresh_token: Option<String>,
    #[serde(default)]
    id_token: Option<String>,
    #[serde(default)]
    expires_in: Option<u64>,
    #[serde(default)]
    scope: Option<String>,
}

/// The upstream tokens of one sign-in, kept by the proxy (never sent to the MCP client).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct UpstreamTokens {
    pub(crate) access_token: String,
    pub(crate) token_type: String,
    #[serde(default)]
    pub(crate) refresh_token: Option<String>,
    #[serde(default)]
    pub(crate) id_token: Option<String>,
    #[serde(default)]
    pub(crate) expires_at: Option<u64>,
    #[serde(default)]
    pub(crate) scope: Option<String>,
}

/// What went wrong upstream.
#[derive(Debug, Clone)]
pub(crate) enum UpstreamError {
    /// The upstream refused (a bad code, a revoked refresh token).
    Refused { error: String, description: String },
    /// The upstream answer does not identify anyone.
    Invalid(String),
    /// Unreachable, slow, or a 5xx.
    Unavailable(String),
    /// The proxy's configuration.
    Config(String),
}

impl std::fmt::Display for UpstreamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            UpstreamError::Refused { error, description } => {
                write!(f, "the upstream provider refused: {error} {description}")
            }
            UpstreamError::Invalid(r)
            | UpstreamError::Unavailable(r)
            | UpstreamError::Config(r) => f.write_str(r),
        }
    }
}

/// The longest the proxy waits for the upstream provider.
pub(crate) const UPSTREAM_TIMEOUT: Duration = Duration::from_secs(15);
