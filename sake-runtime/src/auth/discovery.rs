//! Authorization server metadata discovery (RFC 8414, OpenID Connect Discovery 1.0).

use http::StatusCode;
use serde::Deserialize;

use super::AuthError;
use super::fetch::{FetchError, Fetcher};
use crate::net::well_known::metadata_urls;

/// What the verifiers use of an authorization server's metadata.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub(crate) struct AsMetadata {
    pub(crate) issuer: String,
    #[serde(default)]
    pub(crate) jwks_uri: Option<String>,
    #[serde(default)]
    pub(crate) introspection_endpoint: Option<String>,
}

/// Checks an issuer identifier: an absolute `http`/`https` URL with a host and no query or
/// fragment (RFC 8414 section 2). `http` is accepted for loopback test servers; the MCP
/// authorization pages require HTTPS of every authorization server endpoint in deployment.
pub(crate) fn check_issuer(issuer: &str) -> Result<(), AuthError> {
    let uri = super::fetch::parse(issuer).map_err(|e| AuthError::misconfigured(e.to_string()))?;
    if uri.query().is_some() {
        return Err(AuthError::misconfigured(format!(
            "the issuer {issuer:?} has a query; an issuer identifier has none (RFC 8414 section 2)"
        )));
    }
    if uri.scheme_str() == Some("http")
        && !matches!(uri.host(), Some("127.0.0.1" | "localhost" | "[::1]"))
    {
        tracing::warn!(
            issuer,
            "the authorization server is reached over plain http; MCP requires https for it"
        );
    }
    Ok(())
}

/// Fetches the metadata of `issuer`, trying [`metadata_urls`] in order. A `404` (or another
/// `4xx`) moves on to the next URL; an unreachable server or a `5xx` stops with
/// [`AuthError::Unavailable`]. The first document found must name exactly `issuer` (RFC 8414
/// section 3.3), else it is not used and discovery fails with
/// [`AuthError::Misconfigured`].
pub(crate) async fn discover(fetcher: &Fetcher, issuer: &str) -> Result<AsMetadata, AuthError> {
    let mut tried = Vec::new();
    for url in metadata_urls(issuer) {
        let response = fetcher.get(&url).await.map_err(|e| match e {
            FetchError::InvalidUrl { .. } => AuthError::misconfigured(e.to_string()),
            _ => AuthError::unavailable(format!("authorization server metadata: {e}")),
        })?;
        let status = response.status;
        if status.is_server_error() {
            return Err(AuthError::unavailable(format!(
                "authorization server metadata: {url} answered {status}"
            )));
        }
        if status != StatusCode::OK {
            tried.push(format!("{url} ({})", status.as_u16()));
            continue;
        }
        let metadata: AsMetadata = serde_json::from_slice(&response.body).map_err(|e| {
            AuthError::unavailable(format!(
                "authorization server metadata: {url} is not a metadata document: {e}"
            ))
        })?;
        if metadata.issuer != issuer {
            return Err(AuthError::misconfigured(format!(
                "the metadata at {url} names the issuer {:?}, not {issuer:?}; it is not used (RFC 8414 section 3.3)",
                metadata.issuer
            )));
        }
        tracing::debug!(issuer, url, "authorization server metadata found");
        return Ok(metadata);
    }
    Err(AuthError::misconfigured(format!(
        "no authorization server metadata for {issuer:?}: tried {}",
        tried.join(", ")
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issuers() {
        assert!(check_issuer("https://auth.example.com").is_ok());
        assert!(check_issuer("https://auth.example.com/tenant1").is_ok());
        assert!(check_issuer("http://127.0.0.1:8080").is_ok());
        for bad in [
            "auth.example.com",
            "https://auth.example.com?x=1",
            "https://auth.example.com#f",
            "ftp://auth.example.com",
        ] {
            assert!(
                matches!(check_issuer(bad), Err(AuthError::Misconfigured { .. })),
                "{bad}"
            );
        }
    }
}
