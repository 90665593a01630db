//! `WWW-Authenticate: Bearer …` challenges (RFC 6750 section 3, RFC 9728 section 5.1).

use std::fmt;

use http::HeaderValue;

/// The `error` of a Bearer challenge (RFC 6750 section 3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BearerError {
    /// `invalid_request` (400): the request is malformed, e.g. two credentials.
    InvalidRequest,
    /// `invalid_token` (401): the token is expired, revoked, malformed or not for this
    /// resource.
    InvalidToken,
    /// `insufficient_scope` (403): the token is good but does not grant what the request
    /// needs; `scope` names what would.
    InsufficientScope,
}

impl BearerError {
    /// The registered error code.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidRequest => "invalid_request",
            Self::InvalidToken => "invalid_token",
            Self::InsufficientScope => "insufficient_scope",
        }
    }
}

/// The value of a `WWW-Authenticate` header with the `Bearer` scheme:
/// `Bearer realm="…", resource_metadata="…", scope="a b", error="…", error_description="…"`,
/// each parameter present when set.
///
/// ```
/// use sake_runtime::auth::{BearerError, Challenge};
///
/// // No token: where the metadata is, and what to ask for.
/// let c = Challenge::new()
///     .resource_metadata("https://mcp.example.com/.well-known/oauth-protected-resource/mcp")
///     .scope(["mcp:tools"]);
/// assert_eq!(
///     c.to_string(),
///     r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="mcp:tools""#
/// );
///
/// // A good token without the scope an operation needs (403, step-up).
/// let c = Challenge::new()
///     .error(BearerError::InsufficientScope)
///     .scope(["files:read", "files:write"])
///     .error_description("writing files needs files:write");
/// assert_eq!(
///     c.to_string(),
///     r#"Bearer scope="files:read files:write", error="insufficient_scope", error_description="writing files needs files:write""#
/// );
/// ```
///
/// Values are written as quoted strings (RFC 9110 section 5.6.4). `error_description` may
/// only hold printable ASCII other than `"` and `\` (RFC 6750 section 3): other characters
/// are replaced (`"` by `'`, `\` by `/`, anything else by `?`). A scope that is not a valid
/// scope token (RFC 6749 section 3.3) is left out. No value ever carries CR, LF or another
/// control character, so the header cannot be split.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Challenge {
    realm: Option<String>,
    resource_metadata: Option<String>,
    scope: Vec<String>,
    error: Option<BearerError>,
    error_description: Option<String>,
}

impl Challenge {
    /// A bare `Bearer` challenge.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `realm`.
    pub fn realm(mut self, realm: impl Into<String>) -> Self {
        self.realm = Some(realm.into());
        self
    }

    /// Sets `resource_metadata`, the URL of the protected resource metadata (RFC 9728
    /// section 5.1).
    pub fn resource_metadata(mut self, url: impl Into<String>) -> Self {
        self.resource_metadata = Some(url.into());
        self
    }

    /// Sets `scope`: the scopes that would satisfy the request (space-separated in the
    /// header, in the order given, duplicates and invalid scope tokens left out).
    pub fn scope<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scope.clear();
        for s in scopes {
            let s = s.into();
            if is_scope_token(&s) && !self.scope.contains(&s) {
                self.scope.push(s);
            }
        }
        self
    }

    /// Sets `error`.
    pub fn error(mut self, error: BearerError) -> Self {
        self.error = Some(error);
        self
    }

    /// Sets `error_description`, a sentence for the developer of the client.
    pub fn error_description(mut self, description: impl Into<String>) -> Self {
        self.error_description = Some(description.into());
        self
    }

    /// The header value.
    pub fn to_header_value(&self) -> HeaderValue {
        // Only visible ASCII and spaces are ever written, so the value is always valid.
        HeaderValue::from_str(&self.to_string()).unwrap_or(HeaderValue::from_static("Bearer"))
    }
}

impl fmt::Display for Challenge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Bearer")?;
        let mut first = true;
        let mut param = |f: &mut fmt::Formatter<'_>, name: &str, value: &str| {
            f.write_str(if first { " " } else { ", " })?;
            first = false;
            f.write_str(name)?;
            f.write_str("=\"")?;
            f.write_str(value)?;
            f.write_str("\"")
        };
        if let Some(realm) = &self.realm {
            param(f, "realm", &quoted_text(realm))?;
        }
        if let Some(url) = &self.resource_metadata {
            param(f, "resource_metadata", &quoted_uri(url))?;
        }
        if !self.scope.is_empty() {
            param(f, "scope", &self.scope.join(" "))?;
        }
        if let Some(error) = self.error {
            param(f, "error", error.as_str())?;
        }
        if let Some(description) = &self.error_description {
            param(f, "error_description", &description_text(description))?;
        }
        Ok(())
    }
}

/// A scope token (RFC 6749 section 3.3): `1*( %x21 / %x23-5B / %x5D-7E )`.
pub(crate) fn is_scope_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b))
}

/// The inside of a quoted string (RFC 9110 section 5.6.4): `"` and `\` escaped; controls
/// become spaces and non-ASCII characters `?` (header values are ASCII here).
fn quoted_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            ' '..='~' => out.push(c),
            c if c.is_control() => out.push(' '),
            _ => out.push('?'),
        }
    }
    out
}

/// A URI inside a quoted string: what a URI may not hold (RFC 3986: controls, space, `"`,
/// `\`, non-ASCII) is percent-encoded, so the value stays the URI it was meant to be.
fn quoted_uri(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        if b > 0x20 && b < 0x7f && b != b'"' && b != b'\\' {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// An `error_description` (RFC 6750 section 3: `%x20-21 / %x23-5B / %x5D-7E` only).
fn description_text(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '"' => '\'',
            '\\' => '/',
            ' '..='~' => c,
            c if c.is_control() => ' ',
            _ => '?',
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const META: &str = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";

    #[test]
    fn bare_and_metadata_only() {
        assert_eq!(Challenge::new().to_string(), "Bearer");
        assert_eq!(
            Challenge::new().resource_metadata(META).to_string(),
            format!(r#"Bearer resource_metadata="{META}""#)
        );
    }

    #[test]
    fn invalid_token_with_description() {
        let c = Challenge::new()
            .resource_metadata(META)
            .error(BearerError::InvalidToken)
            .error_description("the token expired");
        assert_eq!(
            c.to_string(),
            format!(
                r#"Bearer resource_metadata="{META}", error="invalid_token", error_description="the token expired""#
            )
        );
        assert_eq!(c.to_header_value().to_str().unwrap(), c.to_string());
    }

    #[test]
    fn insufficient_scope_with_scopes() {
        let c = Challenge::new()
            .realm("mcp")
            .resource_metadata(META)
            .scope(["files:read", "files:write", "files:read"])
            .error(BearerError::InsufficientScope);
        assert_eq!(
            c.to_string(),
            format!(
                r#"Bearer realm="mcp", resource_metadata="{META}", scope="files:read files:write", error="insufficient_scope""#
            )
        );
    }

    #[test]
    fn characters_needing_care() {
        let c = Challenge::new()
            .realm("a \"quoted\" \\ realm\r\n")
            .resource_metadata("https://x.example/a b\"c\r\nd\u{e9}")
            .scope([
                "ok",
                "has space",
                "quote\"",
                "back\\slash",
                "",
                "caf\u{e9}",
                "ok2",
            ])
            .error(BearerError::InvalidRequest)
            .error_description("bad \"thing\" \\ here\r\nInjected: yes \u{e9}\t!");
        let s = c.to_string();
        assert_eq!(
            s,
            concat!(
                r#"Bearer realm="a \"quoted\" \\ realm  ", "#,
                r#"resource_metadata="https://x.example/a%20b%22c%0D%0Ad%C3%A9", "#,
                r#"scope="ok ok2", error="invalid_request", "#,
                r#"error_description="bad 'thing' / here  Injected: yes ? !""#
            )
        );
        assert!(!s.contains('\r') && !s.contains('\n'));
        // Every byte is visible ASCII or a space: a valid header value.
        assert!(s.bytes().all(|b| (0x20..0x7f).contains(&b)));
        assert_eq!(c.to_header_value().to_str().unwrap(), s);
    }

    #[test]
    fn scope_tokens() {
        assert!(is_scope_token("mcp:tools"));
        assert!(is_scope_token("a!#[]~"));
        for bad in ["", "a b", "a\"b", "a\\b", "caf\u{e9}", "a\tb"] {
            assert!(!is_scope_token(bad), "{bad:?}");
        }
    }
}
