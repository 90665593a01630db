//! OAuth 2.0 Protected Resource Metadata (RFC 9728): the document and where it is served.

use http::Uri;
use serde::{Deserialize, Serialize};

/// The path prefix of protected resource metadata (RFC 9728 section 3).
pub const WELL_KNOWN_PREFIX: &str = "/.well-known/oauth-protected-resource";

/// The protected resource metadata document (RFC 9728 section 2) of an MCP server: which
/// resource it is, which authorization servers issue tokens for it, and which scopes it
/// knows. Every revision since 2025-06-18 requires it, with at least one authorization
/// server.
///
/// ```
/// use sake_runtime::auth::ProtectedResourceMetadata;
///
/// let doc = ProtectedResourceMetadata::new("https://mcp.example.com/mcp", "https://auth.example.com")
///     .scopes_supported(["mcp:tools"])
///     .resource_name("Example MCP server");
/// assert_eq!(
///     serde_json::to_value(&doc).unwrap(),
///     serde_json::json!({
///         "resource": "https://mcp.example.com/mcp",
///         "authorization_servers": ["https://auth.example.com"],
///         "scopes_supported": ["mcp:tools"],
///         "bearer_methods_supported": ["header"],
///         "resource_name": "Example MCP server",
///     })
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ProtectedResourceMetadata {
    /// The canonical resource URI (RFC 8707 section 2): the `aud` of the tokens it accepts.
    pub resource: String,
    /// The issuer identifiers of the authorization servers whose tokens it accepts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub authorization_servers: Vec<String>,
    /// The scopes it uses (omitted when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes_supported: Vec<String>,
    /// How it accepts bearer tokens: `["header"]` (MCP forbids tokens in the query string).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bearer_methods_supported: Vec<String>,
    /// A name for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_name: Option<String>,
    /// A URL of documentation for developers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_documentation: Option<String>,
    /// The algorithms of the DPoP proofs it accepts (RFC 9449 section 5.2; omitted when empty).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dpop_signing_alg_values_supported: Vec<String>,
    /// Whether it accepts only DPoP-bound tokens (RFC 9449 section 5.2).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dpop_bound_access_tokens_required: bool,
}

impl ProtectedResourceMetadata {
    /// The document of `resource` (its canonical URI), trusting the authorization server
    /// whose issuer identifier is `authorization_server`, accepting tokens in the
    /// `Authorization` header.
    pub fn new(resource: impl Into<String>, authorization_server: impl Into<String>) -> Self {
        Self {
            resource: resource.into(),
            authorization_servers: vec![authorization_server.into()],
            scopes_supported: Vec::new(),
            bearer_methods_supported: vec!["header".to_owned()],
            resource_name: None,
            resource_documentation: None,
            dpop_signing_alg_values_supported: Vec::new(),
            dpop_bound_access_tokens_required: false,
        }
    }

    /// Sets the algorithms of the DPoP proofs accepted (RFC 9449).
    pub fn dpop_signing_alg_values_supported<I, S>(mut self, algs: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.dpop_signing_alg_values_supported = algs.into_iter().map(Into::into).collect();
        self
    }

    /// Says that only DPoP-bound tokens are accepted (RFC 9449).
    pub fn dpop_bound_access_tokens_required(mut self, required: bool) -> Self {
        self.dpop_bound_access_tokens_required = required;
        self
    }

    /// Adds another authorization server.
    pub fn authorization_server(mut self, issuer: impl Into<String>) -> Self {
        self.authorization_servers.push(issuer.into());
        self
    }

    /// Sets the scopes the resource uses. The 2026-07-28 revision asks servers not to list
    /// `offline_access` (refresh tokens are not a resource requirement).
    pub fn scopes_supported<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes_supported = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the name for people.
    pub fn resource_name(mut self, name: impl Into<String>) -> Self {
        self.resource_name = Some(name.into());
        self
    }

    /// Sets the URL of documentation for developers.
    pub fn resource_documentation(mut self, url: impl Into<String>) -> Self {
        self.resource_documentation = Some(url.into());
        self
    }
}

/// A resource URI that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{uri:?} is not a usable resource URI: {reason}")]
pub struct InvalidResourceUri {
    uri: String,
    reason: String,
}

impl InvalidResourceUri {
    fn new(uri: &str, reason: impl Into<String>) -> Self {
        Self {
            uri: uri.to_owned(),
            reason: reason.into(),
        }
    }
}

/// The path of the metadata of an MCP endpoint served at `endpoint_path` (RFC 9728 section
/// 3.1: the well-known prefix inserted before the path): `/mcp` →
/// `/.well-known/oauth-protected-resource/mcp`; `/` (an endpoint at the root) →
/// `/.well-known/oauth-protected-resource`.
///
/// ```
/// use sake_runtime::auth::well_known_path;
///
/// assert_eq!(well_known_path("/public/mcp"), "/.well-known/oauth-protected-resource/public/mcp");
/// assert_eq!(well_known_path("/"), "/.well-known/oauth-protected-resource");
/// ```
pub fn well_known_path(endpoint_path: &str) -> String {
    match endpoint_path {
        "" | "/" => WELL_KNOWN_PREFIX.to_owned(),
        p if p.starts_with('/') => format!("{WELL_KNOWN_PREFIX}{p}"),
        p => format!("{WELL_KNOWN_PREFIX}/{p}"),
    }
}

/// Checks a resource URI and returns its parts: an absolute `http`/`https` URI with a host,
/// no user information and no fragment (RFC 8707 section 2).
fn parse_resource(uri: &str) -> Result<Uri, InvalidResourceUri> {
    if uri.contains('#') {
        return Err(InvalidResourceUri::new(uri, "it has a fragment"));
    }
    let parsed: Uri = uri
        .parse()
        .map_err(|e: http::uri::InvalidUri| InvalidResourceUri::new(uri, e.to_string()))?;
    match parsed.scheme_str() {
        Some(s) if s.eq_ignore_ascii_case("https") || s.eq_ignore_ascii_case("http") => {}
        _ => {
            return Err(InvalidResourceUri::new(
                uri,
                "it is not an absolute http:// or https:// URI",
            ));
        }
    }
    let Some(authority) = parsed.authority() else {
        return Err(InvalidResourceUri::new(uri, "it names no host"));
    };
    if authority.as_str().contains('@') {
        return Err(InvalidResourceUri::new(uri, "it has user information"));
    }
    if authority.host().is_empty() {
        return Err(InvalidResourceUri::new(uri, "it names no host"));
    }
    Ok(parsed)
}

/// The canonical resource URI of an MCP endpoint served at `endpoint_path` under
/// `public_base_url` (the URL clients reach the server at, e.g. behind a proxy; it may have a
/// path prefix). Without a trailing slash for an endpoint at the root, as the MCP
/// authorization pages recommend.
///
/// ```
/// use sake_runtime::auth::resource_uri;
///
/// assert_eq!(resource_uri("https://mcp.example.com", "/mcp").unwrap(), "https://mcp.example.com/mcp");
/// assert_eq!(resource_uri("https://example.com/tools/", "/mcp").unwrap(), "https://example.com/tools/mcp");
/// assert_eq!(resource_uri("https://mcp.example.com/", "/").unwrap(), "https://mcp.example.com");
/// ```
pub fn resource_uri(
    public_base_url: &str,
    endpoint_path: &str,
) -> Result<String, InvalidResourceUri> {
    let base = parse_resource(public_base_url)?;
    if base.query().is_some() {
        return Err(InvalidResourceUri::new(
            public_base_url,
            "a base URL has no query",
        ));
    }
    if !endpoint_path.is_empty() && !endpoint_path.starts_with('/') {
        return Err(InvalidResourceUri::new(
            endpoint_path,
            "an endpoint path starts with `/`",
        ));
    }
    let base = public_base_url.trim_end_matches('/');
    let path = endpoint_path.trim_end_matches('/');
    let joined = format!("{base}{path}");
    parse_resource(&joined)?;
    Ok(joined)
}

/// The URL of the metadata of the resource `resource` (RFC 9728 section 3.1): the
/// well-known prefix inserted between the host and the path (and query).
///
/// ```
/// use sake_runtime::auth::well_known_url;
///
/// assert_eq!(
///     well_known_url("https://example.com/public/mcp").unwrap(),
///     "https://example.com/.well-known/oauth-protected-resource/public/mcp"
/// );
/// assert_eq!(
///     well_known_url("https://mcp.example.com").unwrap(),
///     "https://mcp.example.com/.well-known/oauth-protected-resource"
/// );
/// ```
pub fn well_known_url(resource: &str) -> Result<String, InvalidResourceUri> {
    let parsed = parse_resource(resource)?;
    let (Some(scheme), Some(authority)) = (parsed.scheme_str(), parsed.authority()) else {
        return Err(InvalidResourceUri::new(resource, "it names no host"));
    };
    let mut url = format!("{scheme}://{authority}{}", well_known_path(parsed.path()));
    if let Some(query) = parsed.query() {
        url.push('?');
        url.push_str(query);
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        assert_eq!(
            well_known_path("/mcp"),
            "/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            well_known_path("mcp"),
            "/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(well_known_path(""), "/.well-known/oauth-protected-resource");
        assert_eq!(
            well_known_path("/a/b/"),
            "/.well-known/oauth-protected-resource/a/b/"
        );
    }

    #[test]
    fn urls() {
        assert_eq!(
            well_known_url("http://127.0.0.1:8080/mcp").unwrap(),
            "http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            well_known_url("https://mcp.example.com/").unwrap(),
            "https://mcp.example.com/.well-known/oauth-protected-resource"
        );
        assert_eq!(
            well_known_url("https://mcp.example.com/mcp?tenant=a").unwrap(),
            "https://mcp.example.com/.well-known/oauth-protected-resource/mcp?tenant=a"
        );
        for bad in [
            "mcp.example.com",
            "https://mcp.example.com#fragment",
            "ftp://mcp.example.com/",
            "https://user@mcp.example.com/mcp",
            "/mcp",
        ] {
            assert!(well_known_url(bad).is_err(), "{bad}");
        }
        let err = well_known_url("https://mcp.example.com#x").unwrap_err();
        assert_eq!(
            err.to_string(),
            "\"https://mcp.example.com#x\" is not a usable resource URI: it has a fragment"
        );
    }

    #[test]
    fn resource_uris() {
        assert_eq!(
            resource_uri("http://127.0.0.1:3000", "/mcp").unwrap(),
            "http://127.0.0.1:3000/mcp"
        );
        assert_eq!(
            resource_uri("https://example.com/prefix", "/api/mcp").unwrap(),
            "https://example.com/prefix/api/mcp"
        );
        assert_eq!(
            resource_uri("https://example.com", "").unwrap(),
            "https://example.com"
        );
        assert!(resource_uri("https://example.com", "mcp").is_err());
        assert!(resource_uri("https://example.com?x=1", "/mcp").is_err());
        assert!(resource_uri("example.com", "/mcp").is_err());
    }

    #[test]
    fn document_round_trips() {
        let doc =
            ProtectedResourceMetadata::new("https://mcp.example.com/mcp", "https://a.example")
                .authorization_server("https://b.example")
                .resource_documentation("https://docs.example/mcp");
        let json = serde_json::to_value(&doc).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "resource": "https://mcp.example.com/mcp",
                "authorization_servers": ["https://a.example", "https://b.example"],
                "bearer_methods_supported": ["header"],
                "resource_documentation": "https://docs.example/mcp",
            })
        );
        let back: ProtectedResourceMetadata = serde_json::from_value(json).unwrap();
        assert_eq!(back, doc);
    }
}
