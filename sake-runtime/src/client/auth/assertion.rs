//! Assertions for the JWT bearer grant (RFC 7523 section 2.1): a workload identity token
//! (workload identity federation), or an identity assertion authorization grant obtained from
//! the enterprise's identity provider by token exchange (RFC 8693; MCP's enterprise-managed
//! authorization).

use std::time::Duration;

use bytes::Bytes;
use http::Method;
use serde::Deserialize;

use super::registration::RegisteredClient;
use super::secret::Secret;
use super::token::{Endpoint, Grant};
use super::urls::checked;
use super::{AuthFuture, OAuthError, clip};
use crate::net::fetch::{Fetcher, Limits};

/// The token type of an identity assertion authorization grant.
const ID_JAG: &str = "urn:ietf:params:oauth:token-type:id-jag";
const ID_TOKEN: &str = "urn:ietf:params:oauth:token-type:id_token";
const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";

/// What an assertion is requested for.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct AssertionRequest<'a> {
    /// The issuer identifier of the authorization server the assertion is presented to (its
    /// audience).
    pub issuer: &'a str,
    /// The resource the access token is for.
    pub resource: &'a str,
    /// The scopes requested.
    pub scopes: &'a [String],
}

/// Where the assertion of a JWT bearer grant comes from: asked for anew before each grant (a
/// workload's token rotates).
pub trait AssertionSource: Send + Sync {
    /// An assertion for `request`.
    fn assertion<'a>(&'a self, request: &'a AssertionRequest<'a>) -> AuthFuture<'a, Secret>;
}

/// A fixed assertion (a token the platform issued for this audience).
impl AssertionSource for Secret {
    fn assertion<'a>(&'a self, _request: &'a AssertionRequest<'a>) -> AuthFuture<'a, Secret> {
        Box::pin(async move { Ok(self.clone()) })
    }
}

/// An identity assertion authorization grant (ID-JAG) from the enterprise's identity provider:
/// the user's ID token exchanged (RFC 8693) at the identity provider's token endpoint for an
/// assertion addressed to the MCP server's authorization server and resource.
pub struct IdJag {
    token_endpoint: String,
    client: RegisteredClient,
    id_token: Secret,
    fetcher: Fetcher,
    insecure: bool,
}

impl std::fmt::Debug for IdJag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdJag")
            .field("token_endpoint", &self.token_endpoint)
            .field("client", &self.client)
            .finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
struct Exchanged {
    access_token: Option<String>,
    #[serde(default)]
    issued_token_type: Option<String>,
}

#[derive(Deserialize)]
struct RawError {
    #[serde(default)]
    error: Option<String>,
    #[serde(default)]
    error_description: Option<String>,
}

impl IdJag {
    /// Exchanges `id_token` at the identity provider's `token_endpoint`, as the identity
    /// provider's `client`.
    pub fn new(
        token_endpoint: impl Into<String>,
        client: RegisteredClient,
        id_token: impl Into<Secret>,
    ) -> Result<Self, OAuthError> {
        let fetcher = Fetcher::new(Limits {
            timeout: Duration::from_secs(30),
            max_bytes: 1 << 20,
        })
        .map_err(OAuthError::config)?;
        Ok(IdJag {
            token_endpoint: token_endpoint.into(),
            client,
            id_token: id_token.into(),
            fetcher,
            insecure: false,
        })
    }

    /// Allows a plain `http` identity provider on another machine (test networks only).
    pub fn allow_insecure_http(mut self, allow: bool) -> Self {
        self.insecure = allow;
        self
    }
}

impl AssertionSource for IdJag {
    fn assertion<'a>(&'a self, request: &'a AssertionRequest<'a>) -> AuthFuture<'a, Secret> {
        Box::pin(async move {
            checked(&self.token_endpoint, self.insecure)?;
            let mut fields = vec![
                ("requested_token_type", ID_JAG.to_owned()),
                ("audience", request.issuer.to_owned()),
                ("resource", request.resource.to_owned()),
                ("subject_token", self.id_token.expose().to_owned()),
                ("subject_token_type", ID_TOKEN.to_owned()),
            ];
            if !request.scopes.is_empty() {
                fields.push(("scope", request.scopes.join(" ")));
            }
            let grant = Grant {
                grant_type: TOKEN_EXCHANGE,
                fields,
            };
            let endpoint = Endpoint {
                fetcher: &self.fetcher,
                url: &self.token_endpoint,
                issuer: &self.token_endpoint,
                client: &self.client,
                method: self.client.method(None),
            };
            let (headers, body) = endpoint.request(&grant)?;
            let response = self
                .fetcher
                .send(
                    Method::POST,
                    &self.token_endpoint,
                    headers,
                    Bytes::from(body),
                )
                .await
                .map_err(|e| OAuthError::Unreachable {
                    url: self.token_endpoint.clone(),
                    reason: e.to_string(),
                })?;
            if !response.status.is_success() {
                let e: Option<RawError> = serde_json::from_slice(&response.body).ok();
                return Err(OAuthError::TokenEndpoint {
                    issuer: self.token_endpoint.clone(),
                    grant: TOKEN_EXCHANGE.to_owned(),
                    status: response.status.as_u16(),
                    error: e.as_ref().and_then(|e| e.error.as_deref()).map(clip),
                    description: e
                        .as_ref()
                        .and_then(|e| e.error_description.as_deref())
                        .map(clip),
                });
            }
            let exchanged: Exchanged = serde_json::from_slice(&response.body).map_err(|e| {
                OAuthError::protocol(
                    &self.token_endpoint,
                    format!("the token exchange answer is not JSON tokens: {e}"),
                )
            })?;
            match (
                exchanged.access_token,
                exchanged.issued_token_type.as_deref(),
            ) {
                (Some(t), Some(ID_JAG)) if !t.is_empty() => Ok(Secret::new(t)),
                (_, other) => Err(OAuthError::protocol(
                    &self.token_endpoint,
                    format!(
                        "the token exchange did not issue an identity assertion grant (issued_token_type {:?})",
                        other.map(clip)
                    ),
                )),
            }
        })
    }
}
