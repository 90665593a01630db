//! The well-known URLs of OAuth metadata: authorization server metadata (RFC 8414, OpenID
//! Connect Discovery 1.0) and protected resource metadata (RFC 9728).

const OAUTH_AS: &str = "/.well-known/oauth-authorization-server";
const OIDC: &str = "/.well-known/openid-configuration";
#[cfg_attr(not(feature = "client"), allow(dead_code))] // The client's only.
const PROTECTED_RESOURCE: &str = "/.well-known/oauth-protected-resource";

/// Splits an absolute URL into `scheme://authority` and the rest (path, query), without
/// normalising anything. A fragment is dropped.
pub(crate) fn split_origin(url: &str) -> (&str, &str) {
    let url = url.split_once('#').map_or(url, |(u, _)| u);
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    let rest_start = url[after_scheme..]
        .find(['/', '?'])
        .map_or(url.len(), |i| after_scheme + i);
    url.split_at(rest_start)
}

/// The metadata URLs of `issuer`, in the order the MCP authorization pages (2025-11-25,
/// 2026-07-28, "Authorization Server Metadata Discovery") say to try them: for an issuer with
/// a path, RFC 8414 with path insertion, OpenID Connect with path insertion, OpenID Connect
/// with path appending; for one without, RFC 8414 then OpenID Connect.
pub(crate) fn metadata_urls(issuer: &str) -> Vec<String> {
    // scheme://authority, then the path (a trailing slash dropped, RFC 8414 section 3.1).
    let (origin, path) = split_origin(issuer);
    let path = path.trim_end_matches('/');
    if path.is_empty() {
        vec![format!("{origin}{OAUTH_AS}"), format!("{origin}{OIDC}")]
    } else {
        vec![
            format!("{origin}{OAUTH_AS}{path}"),
            format!("{origin}{OIDC}{path}"),
            format!("{origin}{path}{OIDC}"),
        ]
    }
}

/// The protected resource metadata URLs of an MCP endpoint, in the order the MCP
/// authorization pages (2025-06-18 onwards, "Protected Resource Metadata Discovery
/// Requirements") say to try them when the challenge names none: the well-known prefix
/// inserted before the endpoint's path (and query, RFC 9728 section 3.1), then the root. An
/// endpoint at the root has only the root URL.
#[cfg_attr(not(feature = "client"), allow(dead_code))] // The client's only.
pub(crate) fn protected_resource_urls(endpoint: &str) -> Vec<String> {
    let (origin, rest) = split_origin(endpoint);
    let root = format!("{origin}{PROTECTED_RESOURCE}");
    let rest = if rest.starts_with('?') {
        rest.to_owned()
    } else {
        match rest.split_once('?') {
            Some((path, query)) => format!("{}?{query}", path.trim_end_matches('/')),
            None => rest.trim_end_matches('/').to_owned(),
        }
    };
    if rest.is_empty() {
        vec![root]
    } else {
        vec![format!("{root}{rest}"), root]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authorization_server_urls_in_the_mcp_order() {
        assert_eq!(
            metadata_urls("https://auth.example.com"),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server",
                "https://auth.example.com/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            metadata_urls("https://auth.example.com/"),
            metadata_urls("https://auth.example.com")
        );
        assert_eq!(
            metadata_urls("https://auth.example.com/tenant1"),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example.com/.well-known/openid-configuration/tenant1",
                "https://auth.example.com/tenant1/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            metadata_urls("http://127.0.0.1:9000/a/b/"),
            [
                "http://127.0.0.1:9000/.well-known/oauth-authorization-server/a/b",
                "http://127.0.0.1:9000/.well-known/openid-configuration/a/b",
                "http://127.0.0.1:9000/a/b/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn protected_resource_urls_path_inserted_then_root() {
        assert_eq!(
            protected_resource_urls("https://example.com/public/mcp"),
            [
                "https://example.com/.well-known/oauth-protected-resource/public/mcp",
                "https://example.com/.well-known/oauth-protected-resource",
            ]
        );
        assert_eq!(
            protected_resource_urls("http://localhost:3000/mcp/"),
            [
                "http://localhost:3000/.well-known/oauth-protected-resource/mcp",
                "http://localhost:3000/.well-known/oauth-protected-resource",
            ]
        );
        for root in ["https://example.com", "https://example.com/"] {
            assert_eq!(
                protected_resource_urls(root),
                ["https://example.com/.well-known/oauth-protected-resource"]
            );
        }
        assert_eq!(
            protected_resource_urls("https://example.com/mcp?tenant=a#x"),
            [
                "https://example.com/.well-known/oauth-protected-resource/mcp?tenant=a",
                "https://example.com/.well-known/oauth-protected-resource",
            ]
        );
    }

    #[test]
    fn origins() {
        assert_eq!(
            split_origin("https://a.example:8443/x/y?q#f"),
            ("https://a.example:8443", "/x/y?q")
        );
        assert_eq!(split_origin("http://a"), ("http://a", ""));
        assert_eq!(split_origin("http://a?x=1"), ("http://a", "?x=1"));
    }
}
