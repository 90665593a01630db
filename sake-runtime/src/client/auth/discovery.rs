//! Finding the authorization server: the protected resource metadata of the MCP server (RFC
//! 9728), then the authorization server's metadata (RFC 8414, OpenID Connect Discovery 1.0),
//! with the fallbacks of the 2025-03-26 revision for servers that publish neither.

use http::StatusCode;
use serde::Deserialize;

use super::urls::{checked, resource_covers};
use super::{OAuthError, clip};
use crate::net::fetch::{FetchError, Fetcher};
use crate::net::well_known::{metadata_urls, protected_resource_urls, split_origin};

/// The most entries read from a list in a metadata document (authorization servers, scopes,
/// methods): a server cannot make the client hold more.
const MAX_LIST: usize = 64;

/// The protected resource metadata document, as far as the client uses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResourceMetadata {
    /// Where it was found.
    pub(crate) url: String,
    /// The resource identifier, exactly as published: the `resource` parameter sent.
    pub(crate) resource: String,
    pub(crate) authorization_servers: Vec<String>,
    pub(crate) scopes_supported: Option<Vec<String>>,
    /// The server takes DPoP-bound tokens (RFC 9728 section 2:
    /// `dpop_signing_alg_values_supported`, `dpop_bound_access_tokens_required`).
    pub(crate) dpop: bool,
}

#[derive(Deserialize)]
struct RawResourceMetadata {
    resource: Option<String>,
    #[serde(default)]
    authorization_servers: Vec<String>,
    #[serde(default)]
    scopes_supported: Option<Vec<String>>,
    #[serde(default)]
    dpop_signing_alg_values_supported: Option<Vec<String>>,
    #[serde(default)]
    dpop_bound_access_tokens_required: Option<bool>,
}

fn unreachable(url: &str, e: &FetchError) -> OAuthError {
    OAuthError::Unreachable {
        url: url.to_owned(),
        reason: e.to_string(),
    }
}

fn bounded(mut v: Vec<String>) -> Vec<String> {
    v.truncate(MAX_LIST);
    v
}

/// Finds the protected resource metadata of the MCP server at `server`: at `hinted` (the
/// challenge's `resource_metadata`) when given, else (or when that URL has none) at the
/// well-known URLs, path-inserted first, then the root (the MCP authorization pages,
/// "Protected Resource Metadata Discovery Requirements"). `None` when no URL has a document:
/// a server of the 2025-03-26 revision. A document for another resource is refused.
pub(crate) async fn protected_resource(
    fetcher: &Fetcher,
    server: &str,
    hinted: Option<&str>,
    insecure: bool,
) -> Result<Option<ResourceMetadata>, OAuthError> {
    let mut urls = Vec::new();
    if let Some(h) = hinted {
        urls.push(h.to_owned());
    }
    for u in protected_resource_urls(server) {
        if !urls.contains(&u) {
            urls.push(u);
        }
    }
    let mut tried = Vec::new();
    for url in urls {
        checked(&url, insecure)?;
        let response = fetcher.get(&url).await.map_err(|e| unreachable(&url, &e))?;
        if response.status.is_server_error() {
            return Err(OAuthError::ResourceMetadata {
                server: server.to_owned(),
                reason: format!("{url} answered {}", response.status),
            });
        }
        if response.status != StatusCode::OK {
            tried.push(format!("{url} ({})", response.status.as_u16()));
            continue;
        }
        let raw: RawResourceMetadata =
            serde_json::from_slice(&response.body).map_err(|e| OAuthError::ResourceMetadata {
                server: server.to_owned(),
                reason: format!("{url} is not a protected resource metadata document: {e}"),
            })?;
        let Some(resource) = raw.resource.filter(|r| !r.is_empty()) else {
            return Err(OAuthError::ResourceMetadata {
                server: server.to_owned(),
                reason: format!("the document at {url} names no resource"),
            });
        };
        // RFC 9728 section 3.3 (and 7.3): a document for another resource is not used.
        if !resource_covers(&resource, server) {
            return Err(OAuthError::ResourceMismatch {
                server: server.to_owned(),
                published: clip(&resource),
            });
        }
        let servers: Vec<String> = bounded(raw.authorization_servers)
            .into_iter()
            .filter(|s| !s.is_empty())
            .collect();
        if servers.is_empty() {
            return Err(OAuthError::ResourceMetadata {
                server: server.to_owned(),
                reason: format!("the document at {url} names no authorization server"),
            });
        }
        tracing::debug!(server, url, resource, "protected resource metadata found");
        return Ok(Some(ResourceMetadata {
            url,
            resource,
            authorization_servers: servers,
            scopes_supported: raw.scopes_supported.map(bounded),
            dpop: raw.dpop_bound_access_tokens_required == Some(true)
                || raw
                    .dpop_signing_alg_values_supported
                    .is_some_and(|a| !a.is_empty()),
        }));
    }
    tracing::debug!(server, tried = %tried.join(", "), "no protected resource metadata");
    Ok(None)
}

/// An authorization server's metadata, as far as the client uses it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct ServerMetadata {
    pub(crate) issuer: String,
    pub(crate) authorization_endpoint: Option<String>,
    pub(crate) token_endpoint: String,
    pub(crate) registration_endpoint: Option<String>,
    pub(crate) scopes_supported: Option<Vec<String>>,
    pub(crate) code_challenge_methods_supported: Option<Vec<String>>,
    pub(crate) token_endpoint_auth_methods_supported: Option<Vec<String>>,
    pub(crate) client_id_metadata_document_supported: bool,
    pub(crate) iss_parameter_supported: bool,
    pub(crate) dpop_signing_alg_values_supported: Option<Vec<String>>,
    /// No metadata: the default endpoints of the 2025-03-26 revision.
    pub(crate) defaults: bool,
}

impl ServerMetadata {
    /// Whether PKCE with `S256` is advertised (or assumed: the 2025-03-26 defaults).
    pub(crate) fn supports_s256(&self) -> bool {
        self.defaults
            || self
                .code_challenge_methods_supported
                .as_ref()
                .is_some_and(|m| m.iter().any(|x| x == "S256"))
    }

    /// Whether `scope` is in `scopes_supported`.
    pub(crate) fn lists_scope(&self, scope: &str) -> bool {
        self.scopes_supported
            .as_ref()
            .is_some_and(|s| s.iter().any(|x| x == scope))
    }
}

#[derive(Deserialize)]
struct RawServerMetadata {
    issuer: Option<String>,
    #[serde(default)]
    authorization_endpoint: Option<String>,
    #[serde(default)]
    token_endpoint: Option<String>,
    #[serde(default)]
    registration_endpoint: Option<String>,
    #[serde(default)]
    scopes_supported: Option<Vec<String>>,
    #[serde(default)]
    code_challenge_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    token_endpoint_auth_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    client_id_metadata_document_supported: Option<bool>,
    #[serde(default)]
    authorization_response_iss_parameter_supported: Option<bool>,
    #[serde(default)]
    dpop_signing_alg_values_supported: Option<Vec<String>>,
}

/// Fetches the metadata of the authorization server `issuer`, trying the well-known URLs in
/// the order of the MCP authorization pages ("Authorization Server Metadata Discovery"). A
/// `4xx` moves on to the next URL; `5xx` or no answer stops. A document must name exactly
/// `issuer` (RFC 8414 section 3.3: simple string comparison), else it is not used.
///
/// `legacy`: the server published no protected resource metadata, so `issuer` is its
/// origin (2025-03-26, "Server Metadata Discovery"); when no metadata is found either, the
/// default endpoints `/authorize`, `/token` and `/register` of that origin are used
/// ("Fallbacks for Servers without Metadata Discovery").
pub(crate) async fn authorization_server(
    fetcher: &Fetcher,
    issuer: &str,
    legacy: bool,
    insecure: bool,
) -> Result<ServerMetadata, OAuthError> {
    checked(issuer, insecure)?;
    let (_, rest) = split_origin(issuer);
    if rest.contains('?') {
        return Err(OAuthError::ServerMetadata {
            issuer: issuer.to_owned(),
            reason: "an issuer identifier has no query (RFC 8414 section 2)".into(),
        });
    }
    let mut tried = Vec::new();
    for url in metadata_urls(issuer) {
        let response = fetcher.get(&url).await.map_err(|e| unreachable(&url, &e))?;
        if response.status.is_server_error() {
            return Err(OAuthError::ServerMetadata {
                issuer: issuer.to_owned(),
                reason: format!("{url} answered {}", response.status),
            });
        }
        if response.status != StatusCode::OK {
            tried.push(format!("{url} ({})", response.status.as_u16()));
            continue;
        }
        let raw: RawServerMetadata =
            serde_json::from_slice(&response.body).map_err(|e| OAuthError::ServerMetadata {
                issuer: issuer.to_owned(),
                reason: format!("{url} is not an authorization server metadata document: {e}"),
            })?;
        let found = raw.issuer.clone().unwrap_or_default();
        if found != issuer {
            return Err(OAuthError::IssuerMismatch {
                url,
                expected: issuer.to_owned(),
                found: clip(&found),
            });
        }
        let Some(token_endpoint) = raw.token_endpoint.filter(|t| !t.is_empty()) else {
            return Err(OAuthError::ServerMetadata {
                issuer: issuer.to_owned(),
                reason: format!("the metadata at {url} names no token_endpoint"),
            });
        };
        tracing::debug!(issuer, url, "authorization server metadata found");
        return Ok(ServerMetadata {
            issuer: found,
            authorization_endpoint: raw.authorization_endpoint.filter(|a| !a.is_empty()),
            token_endpoint,
            registration_endpoint: raw.registration_endpoint.filter(|r| !r.is_empty()),
            scopes_supported: raw.scopes_supported.map(bounded),
            code_challenge_methods_supported: raw.code_challenge_methods_supported.map(bounded),
            token_endpoint_auth_methods_supported: raw
                .token_endpoint_auth_methods_supported
                .map(bounded),
            client_id_metadata_document_supported: raw
                .client_id_metadata_document_supported
                .unwrap_or(false),
            iss_parameter_supported: raw
                .authorization_response_iss_parameter_supported
                .unwrap_or(false),
            dpop_signing_alg_values_supported: raw.dpop_signing_alg_values_supported.map(bounded),
            defaults: false,
        });
    }
    if legacy {
        let origin = split_origin(issuer).0;
        tracing::debug!(
            issuer,
            "no authorization server metadata: using the 2025-03-26 default endpoints"
        );
        return Ok(ServerMetadata {
            issuer: issuer.to_owned(),
            authorization_endpoint: Some(format!("{origin}/authorize")),
            token_endpoint: format!("{origin}/token"),
            registration_endpoint: Some(format!("{origin}/register")),
            defaults: true,
            ..ServerMetadata::default()
        });
    }
    Err(OAuthError::ServerMetadata {
        issuer: issuer.to_owned(),
        reason: format!("no metadata found: tried {}", tried.join(", ")),
    })
}
