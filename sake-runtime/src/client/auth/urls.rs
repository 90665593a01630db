//! URL checks of the authorization flow: which URLs may be used, whether protected resource
//! metadata describes the server, building and following authorization URLs.

use http::Uri;

use super::OAuthError;
use crate::net::fetch::form_encode;

/// Whether `host` is this machine: `localhost`, `127.0.0.0/8` or `[::1]`.
pub(crate) fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host == "::1"
        || host
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Parses an absolute `http`/`https` URL with a host and no fragment; plain `http` only to
/// this machine unless `insecure` (the MCP authorization pages require HTTPS for every
/// authorization server endpoint and every redirect URI that is not on localhost).
pub(crate) fn checked(url: &str, insecure: bool) -> Result<Uri, OAuthError> {
    let refuse = |reason: &str| OAuthError::InsecureUrl {
        url: url.to_owned(),
        reason: reason.to_owned(),
    };
    let uri: Uri = url
        .parse()
        .map_err(|e: http::uri::InvalidUri| refuse(&format!("it is not a URL ({e})")))?;
    let host = uri.host().unwrap_or_default();
    if host.is_empty() {
        return Err(refuse("it names no host"));
    }
    if url.contains('#') {
        return Err(refuse("it has a fragment"));
    }
    match uri.scheme_str() {
        Some(s) if s.eq_ignore_ascii_case("https") => Ok(uri),
        Some(s) if s.eq_ignore_ascii_case("http") => {
            if insecure || is_loopback(host) {
                Ok(uri)
            } else {
                Err(refuse(
                    "plain http to another machine would expose credentials; use https",
                ))
            }
        }
        _ => Err(refuse("only http and https URLs are used")),
    }
}

fn default_port(scheme: &str) -> Option<u16> {
    if scheme.eq_ignore_ascii_case("https") {
        Some(443)
    } else if scheme.eq_ignore_ascii_case("http") {
        Some(80)
    } else {
        None
    }
}

/// Whether the protected resource metadata's `resource` identifies the MCP server at
/// `server` (RFC 9728 section 3.3, RFC 8707 section 2): the same scheme, host and port, and
/// the server's path equal to the resource's path or below it. Scheme and host compare
/// without case; an absent port is the scheme's default.
pub(crate) fn resource_covers(resource: &str, server: &str) -> bool {
    let (Ok(r), Ok(s)) = (resource.parse::<Uri>(), server.parse::<Uri>()) else {
        return false;
    };
    if resource.contains('#') {
        return false;
    }
    let (Some(rs), Some(ss)) = (r.scheme_str(), s.scheme_str()) else {
        return false;
    };
    if !rs.eq_ignore_ascii_case(ss) {
        return false;
    }
    let (Some(rh), Some(sh)) = (r.host(), s.host()) else {
        return false;
    };
    if !rh.eq_ignore_ascii_case(sh)
        || r.port_u16().or(default_port(rs)) != s.port_u16().or(default_port(ss))
    {
        return false;
    }
    let rpath = r.path().trim_end_matches('/');
    let spath = s.path().trim_end_matches('/');
    let under = spath == rpath
        || spath
            .strip_prefix(rpath)
            .is_some_and(|rest| rest.starts_with('/'));
    under && (r.query().is_none() || r.query() == s.query())
}

/// `endpoint` with `params` added to its query (form-urlencoded; an existing query is kept,
/// RFC 6749 section 3.1).
pub(crate) fn with_query(endpoint: &str, params: &[(&str, &str)]) -> String {
    let mut out = endpoint.to_owned();
    let mut sep = if endpoint.contains('?') {
        if endpoint.ends_with('?') || endpoint.ends_with('&') {
            ""
        } else {
            "&"
        }
    } else {
        "?"
    };
    for (k, v) in params {
        out.push_str(sep);
        form_encode(k, &mut out);
        out.push('=');
        form_encode(v, &mut out);
        sep = "&";
    }
    out
}

/// Resolves a `Location` against the URL that answered with it (RFC 3986 section 5.2, for the
/// forms redirects use: absolute, network-path, absolute-path and relative-path references).
pub(crate) fn resolve(base: &str, location: &str) -> String {
    if location.contains("://")
        && location.split("://").next().is_some_and(|s| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
        })
    {
        return location.to_owned();
    }
    let (origin, rest) = crate::net::well_known::split_origin(base);
    if let Some(net) = location.strip_prefix("//") {
        let scheme = origin.split("://").next().unwrap_or("https");
        return format!("{scheme}://{net}");
    }
    if location.starts_with('/') {
        return format!("{origin}{location}");
    }
    let path = rest.split('?').next().unwrap_or("");
    if location.starts_with('?') {
        return format!("{origin}{path}{location}");
    }
    let dir = match path.rfind('/') {
        Some(i) => &path[..=i],
        None => "/",
    };
    format!("{origin}{dir}{location}")
}

/// Whether `url` is the redirect URI `redirect` with a query: the same text before any `?`.
pub(crate) fn is_redirect_to(url: &str, redirect: &str) -> bool {
    let base = |u: &str| u.split(['?', '#']).next().unwrap_or("").to_owned();
    base(url) == base(redirect)
}

/// The query parameters of a URL, decoded.
pub(crate) fn query_params(url: &str) -> Vec<(String, String)> {
    let without_fragment = url.split('#').next().unwrap_or("");
    match without_fragment.split_once('?') {
        Some((_, q)) => crate::net::fetch::form_decode(q),
        None => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts() {
        for h in [
            "localhost",
            "LOCALHOST",
            "127.0.0.1",
            "127.9.9.9",
            "[::1]",
            "::1",
        ] {
            assert!(is_loopback(h), "{h}");
        }
        for h in ["example.com", "10.0.0.1", "localhost.example.com", "[::2]"] {
            assert!(!is_loopback(h), "{h}");
        }
    }

    #[test]
    fn only_https_or_loopback_http() {
        assert!(checked("https://as.example.com/token", false).is_ok());
        assert!(checked("http://localhost:3000/token", false).is_ok());
        assert!(checked("http://127.0.0.1/token", false).is_ok());
        let err = checked("http://as.example.com/token", false).unwrap_err();
        assert_eq!(
            err.to_string(),
            "refusing to use \"http://as.example.com/token\": plain http to another machine would expose credentials; use https"
        );
        assert!(checked("http://as.example.com/token", true).is_ok());
        for bad in ["ftp://a/b", "/relative", "https://a/b#frag", "not a url"] {
            assert!(
                matches!(checked(bad, true), Err(OAuthError::InsecureUrl { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_resource_covers_its_server_and_the_paths_below() {
        let server = "http://localhost:3000/mcp";
        for ok in [
            "http://localhost:3000/mcp",
            "http://localhost:3000/mcp/",
            "http://localhost:3000",
            "http://localhost:3000/",
            "HTTP://LocalHost:3000/mcp",
        ] {
            assert!(resource_covers(ok, server), "{ok}");
        }
        assert!(resource_covers(
            "https://a.example/x",
            "https://a.example:443/x/y"
        ));
        for bad in [
            "https://evil.example.com/mcp",
            "http://localhost:3001/mcp",
            "https://localhost:3000/mcp",
            "http://localhost:3000/mcp2",
            "http://localhost:3000/other",
            "http://localhost:3000/mcp/deeper",
            "http://localhost:3000/mcp#f",
            "http://localhost:3000/mcp?tenant=b",
            "localhost:3000/mcp",
            "",
        ] {
            assert!(!resource_covers(bad, server), "{bad}");
        }
    }

    #[test]
    fn authorization_urls_keep_their_query() {
        assert_eq!(
            with_query("https://as/authorize", &[("a", "1 2"), ("b", "x/y")]),
            "https://as/authorize?a=1+2&b=x%2Fy"
        );
        assert_eq!(
            with_query("https://as/authorize?tenant=t", &[("a", "1")]),
            "https://as/authorize?tenant=t&a=1"
        );
    }

    #[test]
    fn locations_resolve() {
        let base = "http://as.example:9/a/b/c?x=1";
        assert_eq!(resolve(base, "https://other/x"), "https://other/x");
        assert_eq!(resolve(base, "//cdn.example/y"), "http://cdn.example/y");
        assert_eq!(resolve(base, "/login?u=1"), "http://as.example:9/login?u=1");
        assert_eq!(resolve(base, "d"), "http://as.example:9/a/b/d");
        assert_eq!(resolve(base, "?y=2"), "http://as.example:9/a/b/c?y=2");
        assert_eq!(resolve("http://as.example", "d"), "http://as.example/d");
    }

    #[test]
    fn redirects_and_queries() {
        assert!(is_redirect_to(
            "http://127.0.0.1:5/callback?code=a&state=b",
            "http://127.0.0.1:5/callback"
        ));
        assert!(!is_redirect_to(
            "http://127.0.0.1:5/callbackx?code=a",
            "http://127.0.0.1:5/callback"
        ));
        assert_eq!(
            query_params("http://h/cb?code=a%20b&iss=http%3A%2F%2Fas#frag"),
            [
                ("code".to_owned(), "a b".to_owned()),
                ("iss".to_owned(), "http://as".to_owned())
            ]
        );
        assert!(query_params("http://h/cb").is_empty());
    }
}
