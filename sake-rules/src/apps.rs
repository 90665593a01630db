//! MCP Apps (`io.modelcontextprotocol/ui`): what a view's URI, the origins of its Content
//! Security Policy and its dedicated domain may be.
//!
//! A host pastes a view's origins into the `Content-Security-Policy` it builds
//! (`connect-src 'self' <connectDomains>`, …): an origin with a space, a `;` or a quote would
//! add sources or directives of its own, and `*` or a scheme alone would open the view to the
//! whole network. Only origins are accepted: a scheme, a host (its leftmost label may be `*`)
//! and an optional port.

use std::fmt;

/// The scheme every view's URI has.
pub const UI_SCHEME: &str = "ui://";

/// The URI rule in words.
pub const UI_URI_RULE: &str =
    "a view's URI is `ui://` followed by a path of URI characters, such as \"ui://weather/card\"";

/// The origin rule in words.
pub const ORIGIN_RULE: &str = "an origin is a scheme (http, https, ws or wss), `://`, a host whose leftmost label may be `*` (\"https://*.example.com\"), and an optional port, with no path";

/// Why a text is not a view's URI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum UiUriError {
    /// It does not start with `ui://`.
    Scheme,
    /// Nothing follows `ui://`.
    Empty,
    /// The first character that is not allowed.
    Char(char),
    /// It has a `{`: views are static, not templates.
    Template,
}

impl fmt::Display for UiUriError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UiUriError::Scheme => f.write_str("it does not start with `ui://`"),
            UiUriError::Empty => f.write_str("nothing follows `ui://`"),
            UiUriError::Char(c) => write!(f, "{c:?} is not allowed in a URI"),
            UiUriError::Template => {
                f.write_str("a view is one static resource, not a URI template")
            }
        }
    }
}

impl std::error::Error for UiUriError {}

/// Whether `c` may appear in a URI (RFC 3986 unreserved, reserved and `%`).
fn is_uri_char(c: char) -> bool {
    c.is_ascii_alphanumeric()
        || matches!(
            c,
            '-' | '.'
                | '_'
                | '~'
                | ':'
                | '/'
                | '?'
                | '#'
                | '['
                | ']'
                | '@'
                | '!'
                | '$'
                | '&'
                | '\''
                | '('
                | ')'
                | '*'
                | '+'
                | ','
                | ';'
                | '='
                | '%'
        )
}

/// Checks a view's URI: `ui://` and a static path of URI characters.
pub fn check_ui_uri(uri: &str) -> Result<(), UiUriError> {
    let Some(rest) = uri.strip_prefix(UI_SCHEME) else {
        return Err(UiUriError::Scheme);
    };
    if rest.is_empty() {
        return Err(UiUriError::Empty);
    }
    if rest.contains(['{', '}']) {
        return Err(UiUriError::Template);
    }
    match rest.chars().find(|&c| !is_uri_char(c)) {
        Some(c) => Err(UiUriError::Char(c)),
        None => Ok(()),
    }
}

/// Why a text is not an origin a view's Content Security Policy may name.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum OriginError {
    /// It is empty.
    Empty,
    /// No `scheme://`, or a scheme other than http, https, ws and wss (`*`, `data:` and the
    /// like would allow much more than one origin).
    Scheme,
    /// The first character that cannot be in an origin (a space, `;`, `,`, a quote: it would
    /// change the policy around it).
    Char(char),
    /// A path, query or fragment after the host.
    Path,
    /// The host is missing or malformed (the reason).
    Host(&'static str),
    /// The port is not a number (or `*`).
    Port,
}

impl fmt::Display for OriginError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OriginError::Empty => f.write_str("it is empty"),
            OriginError::Scheme => {
                f.write_str("it does not start with http://, https://, ws:// or wss://")
            }
            OriginError::Char(c) => write!(f, "{c:?} cannot be in an origin"),
            OriginError::Path => f.write_str("it has a path, query or fragment after the host"),
            OriginError::Host(why) => write!(f, "its host {why}"),
            OriginError::Port => f.write_str("its port is not a number"),
        }
    }
}

impl std::error::Error for OriginError {}

/// Checks an origin of `connectDomains`, `resourceDomains`, `frameDomains` or
/// `baseUriDomains`.
pub fn check_origin(origin: &str) -> Result<(), OriginError> {
    if origin.is_empty() {
        return Err(OriginError::Empty);
    }
    if let Some(c) = origin
        .chars()
        .find(|&c| !(c.is_ascii_graphic()) || matches!(c, ';' | ',' | '\'' | '"' | '\\'))
    {
        return Err(OriginError::Char(c));
    }
    let Some((scheme, rest)) = origin.split_once("://") else {
        return Err(OriginError::Scheme);
    };
    if !matches!(
        scheme.to_ascii_lowercase().as_str(),
        "http" | "https" | "ws" | "wss"
    ) {
        return Err(OriginError::Scheme);
    }
    // A trailing `/` alone is harmless (`https://a.example/`); anything after it is a path.
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    if authority.contains(['/', '?', '#']) {
        return Err(OriginError::Path);
    }
    if authority.contains('@') {
        return Err(OriginError::Char('@'));
    }
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let Some((addr, after)) = v6.split_once(']') else {
            return Err(OriginError::Host("has an unclosed `[`"));
        };
        if addr.is_empty() || !addr.chars().all(|c| c.is_ascii_hexdigit() || c == ':') {
            return Err(OriginError::Host("is not an IPv6 address"));
        }
        match after {
            "" => (None, None),
            p => match p.strip_prefix(':') {
                Some(port) => (None, Some(port)),
                None => return Err(OriginError::Host("has text after `]`")),
            },
        }
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (Some(h), Some(p)),
            None => (Some(authority), None),
        }
    };
    if let Some(port) = port
        && port != "*"
        && (port.is_empty() || port.len() > 5 || !port.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(OriginError::Port);
    }
    if let Some(host) = host {
        check_host(host)?;
    }
    Ok(())
}

fn check_host(host: &str) -> Result<(), OriginError> {
    if host.is_empty() {
        return Err(OriginError::Host("is missing"));
    }
    let labels = host.strip_prefix("*.").unwrap_or(host);
    if labels.is_empty() {
        return Err(OriginError::Host("is only a wildcard"));
    }
    for label in labels.split('.') {
        if label.is_empty() {
            return Err(OriginError::Host("has an empty label"));
        }
        if label.len() > 63 {
            return Err(OriginError::Host("has a label longer than 63 characters"));
        }
        if label == "*" {
            return Err(OriginError::Host(
                "has a wildcard that is not its leftmost label",
            ));
        }
        if !label
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        {
            return Err(OriginError::Host(
                "has characters other than letters, digits, `-` and `.`",
            ));
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Err(OriginError::Host(
                "has a label that starts or ends with `-`",
            ));
        }
    }
    Ok(())
}

/// Why a text is not a view's dedicated `domain`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DomainError {
    /// It is empty.
    Empty,
    /// The first character that is not allowed (whitespace, a control character, a quote).
    Char(char),
}

impl fmt::Display for DomainError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DomainError::Empty => f.write_str("it is empty"),
            DomainError::Char(c) => write!(f, "{c:?} is not allowed"),
        }
    }
}

impl std::error::Error for DomainError {}

/// Checks a view's dedicated `domain`. Its format is each host's (a hash-based subdomain of
/// the host's, a URL-derived one…), so only what no host accepts is refused: nothing,
/// whitespace, control characters and quotes.
pub fn check_domain(domain: &str) -> Result<(), DomainError> {
    if domain.is_empty() {
        return Err(DomainError::Empty);
    }
    match domain
        .chars()
        .find(|&c| !c.is_ascii_graphic() || matches!(c, '\'' | '"' | '\\' | ';' | ','))
    {
        Some(c) => Err(DomainError::Char(c)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ui_uris() {
        for ok in [
            "ui://weather/card",
            "ui://a",
            "ui://server/app.html?v=2",
            "ui://x/%20y",
        ] {
            assert_eq!(check_ui_uri(ok), Ok(()), "{ok}");
        }
        assert_eq!(check_ui_uri("https://x"), Err(UiUriError::Scheme));
        assert_eq!(check_ui_uri("UI://x"), Err(UiUriError::Scheme));
        assert_eq!(check_ui_uri("ui://"), Err(UiUriError::Empty));
        assert_eq!(check_ui_uri("ui://a b"), Err(UiUriError::Char(' ')));
        assert_eq!(check_ui_uri("ui://a\"b"), Err(UiUriError::Char('"')));
        assert_eq!(check_ui_uri("ui://é"), Err(UiUriError::Char('é')));
        assert_eq!(check_ui_uri("ui://{id}"), Err(UiUriError::Template));
    }

    #[test]
    fn origins() {
        for ok in [
            "https://api.weather.com",
            "wss://realtime.service.com",
            "https://*.cloudflare.com",
            "http://localhost:8080",
            "http://127.0.0.1:3000",
            "https://[::1]:8443",
            "https://cdn.example.com/",
            "https://example.com:*",
        ] {
            assert_eq!(check_origin(ok), Ok(()), "{ok}");
        }
        let bad = |o: &str| check_origin(o).unwrap_err();
        assert_eq!(bad(""), OriginError::Empty);
        assert_eq!(bad("*"), OriginError::Scheme);
        assert_eq!(bad("data:"), OriginError::Scheme);
        assert_eq!(bad("cdn.example.com"), OriginError::Scheme);
        assert_eq!(bad("ftp://x.example"), OriginError::Scheme);
        assert_eq!(
            bad("https://a.example script-src *"),
            OriginError::Char(' ')
        );
        assert_eq!(bad("https://a.example;"), OriginError::Char(';'));
        assert_eq!(bad("'unsafe-eval'"), OriginError::Char('\''));
        assert_eq!(bad("https://a.example/js/"), OriginError::Path);
        assert_eq!(bad("https://a.example?x"), OriginError::Path);
        assert_eq!(bad("https://user@a.example"), OriginError::Char('@'));
        assert_eq!(bad("https://a.example:http"), OriginError::Port);
        assert_eq!(bad("https://a.example:"), OriginError::Port);
        assert!(matches!(bad("https://"), OriginError::Host(_)));
        assert!(matches!(bad("https://*"), OriginError::Host(_)));
        assert!(matches!(bad("https://*."), OriginError::Host(_)));
        assert!(matches!(bad("https://a.*.example"), OriginError::Host(_)));
        assert!(matches!(bad("https://a..example"), OriginError::Host(_)));
        assert!(matches!(bad("https://a_b.example"), OriginError::Host(_)));
        assert!(matches!(bad("https://[zz]"), OriginError::Host(_)));
        assert_eq!(
            bad("https://a.example; script-src *").to_string(),
            "';' cannot be in an origin"
        );
    }

    #[test]
    fn domains() {
        assert_eq!(
            check_domain("a904794854a047f6.claudemcpcontent.com"),
            Ok(())
        );
        assert_eq!(check_domain("https://myapp.example.com"), Ok(()));
        assert_eq!(check_domain(""), Err(DomainError::Empty));
        assert_eq!(check_domain("a b"), Err(DomainError::Char(' ')));
        assert_eq!(check_domain("a\"b"), Err(DomainError::Char('"')));
    }
}
