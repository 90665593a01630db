//! Who the client is to an authorization server: a pre-registered client, a Client ID
//! Metadata Document URL, or a client registered dynamically (RFC 7591); and how it
//! authenticates at the token endpoint.

use std::str::FromStr;
use std::sync::Arc;

use bytes::Bytes;
use http::header::{ACCEPT, CONTENT_TYPE};
use http::{HeaderMap, HeaderValue, Method};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::secret::Secret;
use super::{OAuthError, clip};
use crate::net::fetch::Fetcher;

/// How a client authenticates at the token endpoint (RFC 6749 section 2.3, RFC 7523).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TokenEndpointAuth {
    /// A public client: only `client_id` in the form.
    None,
    /// `Authorization: Basic` with the client id and secret (RFC 6749 section 2.3.1).
    ClientSecretBasic,
    /// `client_id` and `client_secret` in the form.
    ClientSecretPost,
    /// A JWT assertion signed with the client's private key (RFC 7523 section 2.2).
    PrivateKeyJwt,
}

impl TokenEndpointAuth {
    /// The registered name (`none`, `client_secret_basic`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::ClientSecretBasic => "client_secret_basic",
            Self::ClientSecretPost => "client_secret_post",
            Self::PrivateKeyJwt => "private_key_jwt",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<Self> {
        match s {
            "none" => Some(Self::None),
            "client_secret_basic" => Some(Self::ClientSecretBasic),
            "client_secret_post" => Some(Self::ClientSecretPost),
            "private_key_jwt" => Some(Self::PrivateKeyJwt),
            _ => None,
        }
    }
}

/// The kind of application registered dynamically (OpenID Connect Dynamic Client
/// Registration 1.0): the MCP authorization pages require clients to say which.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ApplicationType {
    /// A desktop or command-line application, or one served on `localhost` (the default).
    #[default]
    Native,
    /// A browser-based application served from another host.
    Web,
}

impl ApplicationType {
    fn as_str(self) -> &'static str {
        match self {
            Self::Native => "native",
            Self::Web => "web",
        }
    }
}

/// A private key the client signs JWT assertions with (`private_key_jwt`, RFC 7523), read
/// from PEM. The key never appears in `Debug` output.
#[derive(Clone)]
pub struct ClientKey {
    pub(crate) key: Arc<jsonwebtoken::EncodingKey>,
    pub(crate) alg: jsonwebtoken::Algorithm,
    pub(crate) kid: Option<String>,
}

impl std::fmt::Debug for ClientKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientKey")
            .field("alg", &self.alg)
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

impl ClientKey {
    /// A PKCS#8 PEM private key (`-----BEGIN PRIVATE KEY-----`; RSA keys may also be PKCS#1)
    /// for the JWS algorithm `alg`: `ES256`, `ES384`, `RS256`, `RS384`, `RS512`, `PS256`,
    /// `PS384`, `PS512` or `EdDSA`.
    pub fn from_pem(pem: &[u8], alg: &str) -> Result<Self, OAuthError> {
        use jsonwebtoken::Algorithm as A;
        let algorithm = A::from_str(alg)
            .map_err(|_| OAuthError::config(format!("{alg:?} is not a JWS algorithm")))?;
        let key = match algorithm {
            A::ES256 | A::ES384 => jsonwebtoken::EncodingKey::from_ec_pem(pem),
            A::RS256 | A::RS384 | A::RS512 | A::PS256 | A::PS384 | A::PS512 => {
                jsonwebtoken::EncodingKey::from_rsa_pem(pem)
            }
            A::EdDSA => jsonwebtoken::EncodingKey::from_ed_pem(pem),
            _ => {
                return Err(OAuthError::config(format!(
                    "{alg} is a symmetric algorithm; private_key_jwt needs a private key"
                )));
            }
        }
        .map_err(|e| OAuthError::config(format!("the {alg} private key does not parse: {e}")))?;
        let key = ClientKey {
            key: Arc::new(key),
            alg: algorithm,
            kid: None,
        };
        // Sign once now, so that a key of the wrong kind fails here rather than at the
        // token endpoint.
        jsonwebtoken::encode(
            &jsonwebtoken::Header::new(algorithm),
            &json!({"probe": true}),
            &key.key,
        )
        .map_err(|e| OAuthError::config(format!("the private key cannot sign {alg}: {e}")))?;
        Ok(key)
    }

    /// Names the key (`kid` in the assertion's header).
    pub fn kid(mut self, kid: impl Into<String>) -> Self {
        self.kid = Some(kid.into());
        self
    }
}

/// A client identity at one authorization server: its `client_id`, and its secret or key
/// when it is a confidential client.
///
/// Build one for a client registered ahead of time ([`public`](Self::public),
/// [`with_secret`](Self::with_secret), [`with_key`](Self::with_key)); the flow builds them
/// from dynamic registration. Serializable for a persistent [`TokenStore`](super::TokenStore)
/// (the key is not serialized).
#[derive(Clone, Serialize, Deserialize)]
pub struct RegisteredClient {
    client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    client_secret: Option<Secret>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    token_endpoint_auth_method: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    issuer: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    client_secret_expires_at: Option<u64>,
    #[serde(skip)]
    key: Option<ClientKey>,
}

impl PartialEq for RegisteredClient {
    fn eq(&self, other: &Self) -> bool {
        self.client_id == other.client_id
            && self.client_secret == other.client_secret
            && self.token_endpoint_auth_method == other.token_endpoint_auth_method
            && self.issuer == other.issuer
            && self.client_secret_expires_at == other.client_secret_expires_at
            && self.key.is_some() == other.key.is_some()
    }
}

impl std::fmt::Debug for RegisteredClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegisteredClient")
            .field("client_id", &self.client_id)
            .field("has_secret", &self.client_secret.is_some())
            .field("key", &self.key)
            .field(
                "token_endpoint_auth_method",
                &self.token_endpoint_auth_method,
            )
            .field("issuer", &self.issuer)
            .finish()
    }
}

impl RegisteredClient {
    /// A public client: no secret (PKCE protects its authorization codes).
    pub fn public(client_id: impl Into<String>) -> Self {
        RegisteredClient {
            client_id: client_id.into(),
            client_secret: None,
            token_endpoint_auth_method: None,
            issuer: None,
            client_secret_expires_at: None,
            key: None,
        }
    }

    /// A confidential client with a secret (`client_secret_basic`, or `client_secret_post`
    /// when the authorization server supports only that).
    pub fn with_secret(client_id: impl Into<String>, secret: impl Into<Secret>) -> Self {
        RegisteredClient {
            client_secret: Some(secret.into()),
            ..RegisteredClient::public(client_id)
        }
    }

    /// A confidential client that signs JWT assertions (`private_key_jwt`).
    pub fn with_key(client_id: impl Into<String>, key: ClientKey) -> Self {
        RegisteredClient {
            key: Some(key),
            ..RegisteredClient::public(client_id)
        }
    }

    /// Binds the client to the authorization server whose issuer identifier is `issuer`:
    /// its credentials are presented nowhere else. A pre-registered client without an
    /// issuer is bound to the first authorization server it is used with.
    pub fn for_issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer = Some(issuer.into());
        self
    }

    /// Uses this token endpoint authentication method whatever the authorization server
    /// advertises.
    pub fn auth_method(mut self, method: TokenEndpointAuth) -> Self {
        self.token_endpoint_auth_method = Some(method.as_str().to_owned());
        self
    }

    /// The client identifier.
    pub fn client_id(&self) -> &str {
        &self.client_id
    }

    /// The authorization server the client is bound to, if any.
    pub fn issuer(&self) -> Option<&str> {
        self.issuer.as_deref()
    }

    pub(crate) fn secret(&self) -> Option<&Secret> {
        self.client_secret.as_ref()
    }

    pub(crate) fn key(&self) -> Option<&ClientKey> {
        self.key.as_ref()
    }

    pub(crate) fn bound_to(mut self, issuer: &str) -> Self {
        self.issuer = Some(issuer.to_owned());
        self
    }

    /// The method to authenticate with at a token endpoint that supports `supported` (RFC
    /// 8414: `client_secret_basic` when the metadata lists none).
    pub(crate) fn method(&self, supported: Option<&[String]>) -> TokenEndpointAuth {
        if self.key.is_some() {
            return TokenEndpointAuth::PrivateKeyJwt;
        }
        if self.client_secret.is_none() {
            return TokenEndpointAuth::None;
        }
        if let Some(m) = self
            .token_endpoint_auth_method
            .as_deref()
            .and_then(TokenEndpointAuth::parse)
            .filter(|m| {
                matches!(
                    m,
                    TokenEndpointAuth::ClientSecretBasic | TokenEndpointAuth::ClientSecretPost
                )
            })
        {
            return m;
        }
        let supports = |m: &str| supported.is_none_or(|s| s.iter().any(|x| x == m));
        if supports("client_secret_basic") {
            TokenEndpointAuth::ClientSecretBasic
        } else if supports("client_secret_post") {
            TokenEndpointAuth::ClientSecretPost
        } else {
            TokenEndpointAuth::ClientSecretBasic
        }
    }
}

/// What a dynamic registration asks for.
pub(crate) struct RegistrationRequest<'a> {
    pub(crate) client_name: &'a str,
    pub(crate) redirect_uri: &'a str,
    pub(crate) application_type: ApplicationType,
    /// The `token_endpoint_auth_methods_supported` of the authorization server.
    pub(crate) supported: Option<&'a [String]>,
    pub(crate) refresh: bool,
}

impl RegistrationRequest<'_> {
    /// The method asked for: `none` (a native client protected by PKCE) when the server
    /// allows it or says nothing, else `client_secret_basic`, else `client_secret_post`.
    fn method(&self) -> &'static str {
        let supports = |m: &str| self.supported.is_none_or(|s| s.iter().any(|x| x == m));
        ["none", "client_secret_basic", "client_secret_post"]
            .into_iter()
            .find(|m| supports(m))
            .unwrap_or("client_secret_basic")
    }

    /// The client metadata (RFC 7591 section 2). No `scope`: it would limit the client to
    /// the scopes of this first authorization (and authorization servers refuse scopes they
    /// do not know as client metadata, resource scopes included); each authorization request
    /// names its scopes.
    pub(crate) fn body(&self) -> Value {
        let mut grants = vec!["authorization_code"];
        if self.refresh {
            grants.push("refresh_token");
        }
        json!({
            "client_name": self.client_name,
            "redirect_uris": [self.redirect_uri],
            "grant_types": grants,
            "response_types": ["code"],
            "token_endpoint_auth_method": self.method(),
            "application_type": self.application_type.as_str(),
        })
    }
}

#[derive(Deserialize)]
struct RegistrationResponse {
    client_id: Option<String>,
    #[serde(default)]
    client_secret: Option<String>,
    #[serde(default)]
    token_endpoint_auth_method: Option<String>,
    #[serde(default)]
    client_secret_expires_at: Option<u64>,
}

#[derive(Deserialize)]
struct ErrorResponse {
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    error_description: Option<String>,
}

/// Registers the client with the authorization server `issuer` at `endpoint` (RFC 7591).
pub(crate) async fn register(
    fetcher: &Fetcher,
    endpoint: &str,
    issuer: &str,
    request: &RegistrationRequest<'_>,
) -> Result<RegisteredClient, OAuthError> {
    let body = request.body();
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
    let response = fetcher
        .send(
            Method::POST,
            endpoint,
            headers,
            Bytes::from(body.to_string()),
        )
        .await
        .map_err(|e| OAuthError::Unreachable {
            url: endpoint.to_owned(),
            reason: e.to_string(),
        })?;
    if !response.status.is_success() {
        let e: Option<ErrorResponse> = serde_json::from_slice(&response.body).ok();
        return Err(OAuthError::Registration {
            issuer: issuer.to_owned(),
            status: response.status.as_u16(),
            error: e.as_ref().and_then(|e| e.error.as_deref()).map(clip),
            description: e
                .as_ref()
                .and_then(|e| e.error_description.as_deref())
                .map(clip),
        });
    }
    let r: RegistrationResponse = serde_json::from_slice(&response.body).map_err(|e| {
        OAuthError::protocol(
            issuer,
            format!("the registration response is not client information: {e}"),
        )
    })?;
    let Some(client_id) = r.client_id.filter(|id| !id.is_empty()) else {
        return Err(OAuthError::protocol(
            issuer,
            "the registration response has no client_id",
        ));
    };
    tracing::info!(issuer, client_id, "registered the client dynamically");
    Ok(RegisteredClient {
        client_id,
        client_secret: r.client_secret.filter(|s| !s.is_empty()).map(Secret::new),
        token_endpoint_auth_method: r
            .token_endpoint_auth_method
            .or_else(|| Some(request.method().to_owned())),
        issuer: Some(issuer.to_owned()),
        client_secret_expires_at: r.client_secret_expires_at.filter(|&t| t != 0),
        key: None,
    })
}

impl RegisteredClient {
    /// Whether the registration's secret has expired (RFC 7591 `client_secret_expires_at`).
    pub(crate) fn expired(&self) -> bool {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        self.client_secret_expires_at.is_some_and(|t| t <= now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_method_follows_the_registration_then_the_metadata() {
        let s = |v: &[&str]| v.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
        let public = RegisteredClient::public("p");
        assert_eq!(
            public.method(Some(&s(&["client_secret_basic"]))),
            TokenEndpointAuth::None
        );
        let secret = RegisteredClient::with_secret("c", "s");
        assert_eq!(secret.method(None), TokenEndpointAuth::ClientSecretBasic);
        assert_eq!(
            secret.method(Some(&s(&["client_secret_post"]))),
            TokenEndpointAuth::ClientSecretPost
        );
        assert_eq!(
            secret.method(Some(&s(&["client_secret_post", "client_secret_basic"]))),
            TokenEndpointAuth::ClientSecretBasic
        );
        assert_eq!(
            secret
                .clone()
                .auth_method(TokenEndpointAuth::ClientSecretPost)
                .method(Some(&s(&["client_secret_basic"]))),
            TokenEndpointAuth::ClientSecretPost
        );
    }

    #[test]
    fn registration_asks_for_a_native_public_client_when_allowed() {
        let supported = vec!["client_secret_post".to_owned()];
        let mut r = RegistrationRequest {
            client_name: "app",
            redirect_uri: "http://127.0.0.1:8/callback",
            application_type: ApplicationType::Native,
            supported: None,
            refresh: true,
        };
        assert_eq!(
            r.body(),
            json!({
                "client_name": "app",
                "redirect_uris": ["http://127.0.0.1:8/callback"],
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "none",
                "application_type": "native",
            })
        );
        r.supported = Some(&supported);
        r.refresh = false;
        r.application_type = ApplicationType::Web;
        assert_eq!(
            r.body(),
            json!({
                "client_name": "app",
                "redirect_uris": ["http://127.0.0.1:8/callback"],
                "grant_types": ["authorization_code"],
                "response_types": ["code"],
                "token_endpoint_auth_method": "client_secret_post",
                "application_type": "web",
            })
        );
    }

    #[test]
    fn keys_parse_or_say_why_not() {
        let err = ClientKey::from_pem(b"not a pem", "ES256").unwrap_err();
        assert!(
            err.to_string().starts_with(
                "the OAuth configuration is unusable: the ES256 private key does not parse"
            ),
            "{err}"
        );
        let err = ClientKey::from_pem(b"x", "HS256").unwrap_err();
        assert_eq!(
            err.to_string(),
            "the OAuth configuration is unusable: HS256 is a symmetric algorithm; private_key_jwt needs a private key"
        );
        assert!(ClientKey::from_pem(b"x", "XX1").is_err());
    }

    #[test]
    fn secrets_stay_out_of_debug() {
        let c = RegisteredClient::with_secret("id", "hunter2");
        assert!(!format!("{c:?}").contains("hunter2"));
    }
}
