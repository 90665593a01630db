//! What an HTTP request must pass before its body is read: `Host` and `Origin` (DNS-rebinding
//! protection), the media type, and the size.

use std::borrow::Cow;

use http::header::{HOST, ORIGIN};

use crate::protocol::headers::RequestHeaders;
use crate::protocol::jsonrpc::{RpcError, code};

/// Which `Host` names are accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum HostPolicy {
    /// `localhost`, `127.0.0.1`, `[::1]` (the default).
    Loopback,
    /// These names (lowercase, without port).
    Names(Vec<String>),
    /// Any name; no `Origin` check either.
    Any,
}

fn is_loopback(host: &str) -> bool {
    matches!(host, "localhost" | "127.0.0.1" | "[::1]" | "::1")
        || (host.ends_with(".localhost") && is_dns_name(host))
}

/// Letters, digits, dots and hyphens: `evil.example#.localhost` is no subdomain of localhost.
fn is_dns_name(host: &str) -> bool {
    host.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
}

/// The host part of `host[:port]` or `[v6]:port`, lowercased.
fn host_part(authority: &str) -> Cow<'_, str> {
    // Header text is ASCII (`to_str`), so an ASCII trim is the whole trim.
    let a = authority.trim_ascii();
    let host = if a.starts_with('[') {
        match a.find(']') {
            Some(end) => &a[..=end],
            None => a,
        }
    } else {
        a.rsplit_once(':').map_or(a, |(h, port)| {
            if port.bytes().all(|b| b.is_ascii_digit()) {
                h
            } else {
                a
            }
        })
    };
    // Borrowed in the common case: an allocation per request for nothing.
    if host.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(host.to_ascii_lowercase())
    } else {
        Cow::Borrowed(host)
    }
}

/// Whether a `Host` value is a loopback name as clients send it (`127.0.0.1:3000`,
/// `localhost`, `[::1]:3000`: lowercase, no spaces), compared as bytes; every policy serves
/// those. Anything else goes the whole way ([`host_part`], [`HostPolicy::allows`]), which
/// also allows every value this does.
fn loopback_as_sent(value: &[u8]) -> bool {
    let host = match value.iter().rposition(|&b| b == b':') {
        Some(colon) if value[colon + 1..].iter().all(u8::is_ascii_digit) => &value[..colon],
        _ => value,
    };
    matches!(host, b"127.0.0.1" | b"localhost" | b"[::1]")
}

impl HostPolicy {
    fn allows(&self, host: &str) -> bool {
        match self {
            HostPolicy::Loopback => is_loopback(host),
            HostPolicy::Names(names) => names.iter().any(|n| n == host) || is_loopback(host),
            HostPolicy::Any => true,
        }
    }
}

fn forbidden(message: String) -> RpcError {
    RpcError::new(code::TRANSPORT_REFUSED, message).with_status(403)
}

/// Checks `Host` and `Origin`: 403 when either names a host the server does not serve.
///
/// Every value counts: a request with two `Host` or `Origin` lines passes only if each
/// of them would (an intermediary may read a different one than we do).
pub(crate) fn check_origin(
    policy: &HostPolicy,
    origins: &[String],
    headers: &RequestHeaders<'_>,
) -> Result<(), RpcError> {
    if *policy == HostPolicy::Any {
        return Ok(());
    }
    for host in headers.all(headers.host, &HOST) {
        if loopback_as_sent(host.as_bytes()) {
            continue;
        }
        let host = host.to_str().map(host_part).unwrap_or_default();
        let host = &*host;
        if !policy.allows(host) {
            return Err(forbidden(format!(
                "Forbidden: Host {host:?} is not served here (DNS-rebinding protection); configure Server::allowed_hosts"
            )));
        }
    }
    for origin in headers.all(headers.origin, &ORIGIN) {
        let origin = origin
            .to_str()
            .unwrap_or("")
            .trim_ascii()
            .to_ascii_lowercase();
        let allowed = origins.contains(&origin)
            || origin
                .split_once("://")
                .filter(|(scheme, _)| matches!(*scheme, "http" | "https"))
                .is_some_and(|(_, authority)| policy.allows(&host_part(authority)));
        if !allowed {
            return Err(forbidden(format!(
                "Forbidden: Origin {origin:?} is not allowed; configure Server::allowed_origins (Server::cors for browser pages)"
            )));
        }
    }
    Ok(())
}

/// Checks that a POST body is declared as JSON: 415 otherwise.
pub(crate) fn check_content_type(headers: &RequestHeaders<'_>) -> Result<(), RpcError> {
    // The media type before any parameter, as bytes: a value that is not visible ASCII is
    // no `application/json` either.
    let ok = headers.content_type.first.is_some_and(|v| {
        let v = v.as_bytes();
        let media_type = v.split(|&b| b == b';').next().unwrap_or(v);
        media_type
            .trim_ascii()
            .eq_ignore_ascii_case(b"application/json")
    });
    if ok {
        Ok(())
    } else {
        Err(RpcError::new(
            code::TRANSPORT_REFUSED,
            "Unsupported Media Type: send the JSON-RPC message with Content-Type: application/json",
        )
        .with_status(415))
    }
}

/// The error for a body over the limit.
pub(crate) fn too_large(limit: usize) -> RpcError {
    RpcError::new(
        code::TRANSPORT_REFUSED,
        format!("Payload Too Large: the body exceeds {limit} bytes"),
    )
    .with_status(413)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::header::CONTENT_TYPE;
    use http::{HeaderMap, HeaderValue};

    fn check_origin(
        policy: &HostPolicy,
        origins: &[String],
        headers: &HeaderMap,
    ) -> Result<(), RpcError> {
        super::check_origin(policy, origins, &RequestHeaders::new(headers))
    }

    fn check_content_type(headers: &HeaderMap) -> Result<(), RpcError> {
        super::check_content_type(&RequestHeaders::new(headers))
    }

    fn headers(host: Option<&str>, origin: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(v) = host {
            h.insert(HOST, HeaderValue::from_str(v).unwrap());
        }
        if let Some(v) = origin {
            h.insert(ORIGIN, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn loopback_policy() {
        let p = HostPolicy::Loopback;
        for ok in [
            headers(Some("localhost:3000"), None),
            headers(Some("127.0.0.1:1"), Some("http://localhost:5173")),
            headers(Some("[::1]:80"), Some("https://[::1]")),
            headers(None, None),
            headers(
                Some("app.localhost:8080"),
                Some("http://app.localhost:8080"),
            ),
        ] {
            assert!(check_origin(&p, &[], &ok).is_ok(), "{ok:?}");
        }
        for bad in [
            headers(Some("evil.example.com"), None),
            headers(Some("localhost:3000"), Some("http://evil.example.com")),
            headers(Some("localhost"), Some("null")),
            headers(Some("localhost"), Some("file://localhost")),
            headers(Some("evil.example#.localhost"), None),
            headers(Some("localhost"), Some("http://evil.example/.localhost")),
        ] {
            let e = check_origin(&p, &[], &bad).unwrap_err();
            assert_eq!(e.http_status(crate::protocol::Era::Modern), 403);
        }
    }

    /// The bytes fast path allows only what the whole check allows, under every policy.
    #[test]
    fn the_loopback_fast_path_allows_nothing_the_whole_check_refuses() {
        let names = HostPolicy::Names(vec!["mcp.example.com".to_owned()]);
        for value in [
            "127.0.0.1:3000",
            "localhost",
            "localhost:",
            "[::1]:80",
            "[::1]",
            "localhost.evil.example:80",
            "127.0.0.1:80:80",
            "127.0.0.1.evil.example",
            "evil.example:127.0.0.1",
            "localhost:3000x",
            "[::1]x:80",
            "LOCALHOST:80",
            " localhost",
            "::1",
        ] {
            let whole = |p: &HostPolicy| p.allows(&host_part(value));
            if loopback_as_sent(value.as_bytes()) {
                assert!(whole(&HostPolicy::Loopback) && whole(&names), "{value:?}");
            }
        }
        assert!(loopback_as_sent(b"127.0.0.1:3000"));
        assert!(loopback_as_sent(b"[::1]"));
        assert!(!loopback_as_sent(b"localhost.evil.example:80"));
        assert!(!loopback_as_sent(b"127.0.0.1:80:80"));
        assert!(!loopback_as_sent(b"evil.example:127.0.0.1"));
    }
    #[test]
    fn every_host_and_origin_line_is_checked() {
        let p = HostPolicy::Loopback;
        for (name, values) in [
            (HOST, ["localhost", "evil.example.com"]),
            (ORIGIN, ["http://localhost", "http://evil.example.com"]),
        ] {
            let mut h = HeaderMap::new();
            for v in values {
                h.append(&name, HeaderValue::from_static(v));
            }
            let e = check_origin(&p, &[], &h).unwrap_err();
            assert!(e.message.contains("evil.example.com"), "{e}");
        }
        let mut h = HeaderMap::new();
        h.append(HOST, HeaderValue::from_static("localhost"));
        h.append(HOST, HeaderValue::from_static("127.0.0.1:80"));
        assert!(check_origin(&p, &[], &h).is_ok());
    }

    #[test]
    fn named_hosts_and_origins() {
        let p = HostPolicy::Names(vec!["mcp.example.com".into()]);
        assert!(check_origin(&p, &[], &headers(Some("MCP.example.com:443"), None)).is_ok());
        assert!(check_origin(&p, &[], &headers(Some("other.com"), None)).is_err());
        let origins = vec!["https://app.example.com".to_owned()];
        assert!(
            check_origin(
                &p,
                &origins,
                &headers(Some("mcp.example.com"), Some("https://app.example.com"))
            )
            .is_ok()
        );
        assert!(check_origin(&HostPolicy::Any, &[], &headers(Some("x"), Some("http://y"))).is_ok());
    }

    #[test]
    fn content_type() {
        let mut h = HeaderMap::new();
        assert!(check_content_type(&h).is_err());
        h.insert(
            CONTENT_TYPE,
            HeaderValue::from_static("application/json; charset=utf-8"),
        );
        assert!(check_content_type(&h).is_ok());
        h.insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        assert_eq!(
            check_content_type(&h)
                .unwrap_err()
                .http_status(crate::protocol::Era::Modern),
            415
        );
    }
}
