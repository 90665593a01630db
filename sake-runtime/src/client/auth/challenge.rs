//! Reading `WWW-Authenticate` (RFC 9110 section 11.6.1; the Bearer parameters of RFC 6750
//! section 3 and RFC 9728 section 5.1).

use http::HeaderMap;
use http::header::WWW_AUTHENTICATE;

/// The longest header value read, and the most challenges and parameters kept: a server
/// cannot make the client hold more.
const MAX_HEADER: usize = 16 * 1024;
const MAX_CHALLENGES: usize = 16;
const MAX_PARAMS: usize = 32;

/// One challenge of a `WWW-Authenticate` header: its scheme and parameters.
///
/// ```
/// use sake::client::auth::Challenge;
///
/// let header = r#"Bearer error="insufficient_scope", scope="files:read files:write", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource""#;
/// let challenge = &Challenge::parse(header)[0];
/// assert!(challenge.is_bearer());
/// assert_eq!(challenge.error(), Some("insufficient_scope"));
/// assert_eq!(challenge.scopes(), ["files:read", "files:write"]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Challenge {
    scheme: String,
    token68: Option<String>,
    params: Vec<(String, String)>,
}

impl Challenge {
    /// The challenges of one header value, in order. Malformed parts are skipped.
    pub fn parse(header: &str) -> Vec<Challenge> {
        let header = match header.char_indices().nth(MAX_HEADER) {
            Some((i, _)) => &header[..i],
            None => header,
        };
        Parser {
            s: header.as_bytes(),
            i: 0,
        }
        .challenges()
    }

    /// The challenges of every `WWW-Authenticate` header of a response.
    pub fn from_headers(headers: &HeaderMap) -> Vec<Challenge> {
        let mut out = Vec::new();
        for value in headers.get_all(WWW_AUTHENTICATE) {
            if let Ok(v) = value.to_str() {
                out.extend(Challenge::parse(v));
            }
            if out.len() >= MAX_CHALLENGES {
                out.truncate(MAX_CHALLENGES);
                break;
            }
        }
        out
    }

    /// The first `Bearer` challenge among `challenges`.
    pub fn bearer(challenges: &[Challenge]) -> Option<&Challenge> {
        challenges.iter().find(|c| c.is_bearer())
    }

    /// The scheme, as sent.
    pub fn scheme(&self) -> &str {
        &self.scheme
    }

    /// Whether the scheme is `Bearer` (case-insensitive).
    pub fn is_bearer(&self) -> bool {
        self.scheme.eq_ignore_ascii_case("bearer")
    }

    /// A parameter (its name case-insensitive), unquoted.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The `error` parameter (`invalid_token`, `insufficient_scope`, …).
    pub fn error(&self) -> Option<&str> {
        self.param("error")
    }

    /// The `resource_metadata` parameter: where the server's protected resource metadata is
    /// (RFC 9728 section 5.1).
    pub fn resource_metadata(&self) -> Option<&str> {
        self.param("resource_metadata")
    }

    /// The scopes the `scope` parameter names (space-separated), in order, without
    /// duplicates; empty when there is none.
    pub fn scopes(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for s in self.param("scope").unwrap_or("").split(' ') {
            if !s.is_empty() && !out.iter().any(|o| o == s) {
                out.push(s.to_owned());
            }
        }
        out
    }

    /// The token68 form of the credentials, for schemes that use one (never Bearer's).
    pub fn token68(&self) -> Option<&str> {
        self.token68.as_deref()
    }
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.i += 1;
        }
    }

    fn skip_ws_and_commas(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b',')) {
            self.i += 1;
        }
    }

    fn token(&mut self) -> Option<String> {
        let start = self.i;
        while self.peek().is_some_and(is_tchar) {
            self.i += 1;
        }
        (self.i > start).then(|| String::from_utf8_lossy(&self.s[start..self.i]).into_owned())
    }

    fn quoted(&mut self) -> String {
        // At the opening quote.
        self.i += 1;
        let mut out = Vec::new();
        while let Some(b) = self.peek() {
            self.i += 1;
            match b {
                b'"' => break,
                b'\\' => {
                    if let Some(n) = self.peek() {
                        out.push(n);
                        self.i += 1;
                    }
                }
                b => out.push(b),
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    }

    /// `token68` after a scheme: token characters and `/`, then `=` padding; only when
    /// followed by the end or a comma.
    fn token68(&mut self) -> Option<String> {
        let start = self.i;
        while self
            .peek()
            .is_some_and(|b| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b))
        {
            self.i += 1;
        }
        if self.i == start {
            return None;
        }
        while self.peek() == Some(b'=') {
            self.i += 1;
        }
        let end = self.i;
        self.skip_ws();
        if matches!(self.peek(), None | Some(b',')) {
            Some(String::from_utf8_lossy(&self.s[start..end]).into_owned())
        } else {
            self.i = start;
            None
        }
    }

    fn challenges(mut self) -> Vec<Challenge> {
        let mut out = Vec::new();
        loop {
            self.skip_ws_and_commas();
            if self.peek().is_none() || out.len() >= MAX_CHALLENGES {
                return out;
            }
            let Some(scheme) = self.token() else {
                // Not a scheme: skip to the next comma and try again.
                while !matches!(self.peek(), None | Some(b',')) {
                    self.i += 1;
                }
                continue;
            };
            let mut challenge = Challenge {
                scheme,
                token68: None,
                params: Vec::new(),
            };
            self.skip_ws();
            // Parameters, or a token68, or nothing.
            loop {
                self.skip_ws_and_commas();
                let at = self.i;
                let Some(name) = self.token() else {
                    break;
                };
                self.skip_ws();
                if self.peek() != Some(b'=') {
                    // A bare token: the next challenge's scheme (or a token68, below).
                    self.i = at;
                    break;
                }
                self.i += 1;
                self.skip_ws();
                let value = match self.peek() {
                    Some(b'"') => Some(self.quoted()),
                    _ => self.token(),
                };
                let Some(value) = value else {
                    // `name=` then a comma or the end: a token68 with padding, if first.
                    self.i = at;
                    break;
                };
                if challenge.params.len() < MAX_PARAMS {
                    challenge.params.push((name.to_ascii_lowercase(), value));
                }
                self.skip_ws();
                if !matches!(self.peek(), None | Some(b',')) {
                    // Junk after a value: skip to the next list element.
                    while !matches!(self.peek(), None | Some(b',')) {
                        self.i += 1;
                    }
                }
            }
            if challenge.params.is_empty() && challenge.token68.is_none() {
                let at = self.i;
                if let Some(t) = self.token68() {
                    challenge.token68 = Some(t);
                } else {
                    self.i = at;
                }
            }
            out.push(challenge);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(c: &Challenge) -> Vec<(&str, &str)> {
        c.params
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect()
    }

    #[test]
    fn a_bearer_challenge_with_quoted_and_token_values() {
        let c = Challenge::parse(
            r#"Bearer realm="mcp", error=insufficient_scope, scope="a b  a", resource_metadata="http://x/.well-known/oauth-protected-resource/mcp", error_description="say \"hi\", ok""#,
        );
        assert_eq!(c.len(), 1);
        assert!(c[0].is_bearer());
        assert_eq!(
            params(&c[0]),
            [
                ("realm", "mcp"),
                ("error", "insufficient_scope"),
                ("scope", "a b  a"),
                (
                    "resource_metadata",
                    "http://x/.well-known/oauth-protected-resource/mcp"
                ),
                ("error_description", "say \"hi\", ok"),
            ]
        );
        assert_eq!(c[0].scopes(), ["a", "b"]);
        assert_eq!(
            c[0].resource_metadata(),
            Some("http://x/.well-known/oauth-protected-resource/mcp")
        );
    }

    #[test]
    fn several_challenges_in_one_header_and_case() {
        let c = Challenge::parse(
            r#"Basic realm="x", DPoP algs="ES256 RS256", error="use_dpop_nonce", BEARER Scope="s1""#,
        );
        assert_eq!(
            c.iter().map(Challenge::scheme).collect::<Vec<_>>(),
            ["Basic", "DPoP", "BEARER"]
        );
        assert_eq!(c[1].param("ALGS"), Some("ES256 RS256"));
        assert_eq!(c[1].error(), Some("use_dpop_nonce"));
        assert_eq!(
            Challenge::bearer(&c).map(Challenge::scopes),
            Some(vec!["s1".to_owned()])
        );
    }

    #[test]
    fn token68_and_bare_schemes() {
        let c = Challenge::parse("Negotiate abc+/d==, Bearer");
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].token68(), Some("abc+/d=="));
        assert!(c[1].is_bearer());
        assert!(c[1].params.is_empty());
        assert_eq!(c[1].scopes(), Vec::<String>::new());
    }

    #[test]
    fn garbage_is_skipped_and_nothing_panics() {
        for h in [
            "",
            ",,,",
            "=",
            "\"unterminated",
            "Bearer scope=\"unterminated",
            "Bearer a=, b",
            "Bearer ===",
            "é Bearer",
            "Bearer error=\"x\" trailing junk, Basic",
        ] {
            let _ = Challenge::parse(h);
        }
        let c = Challenge::parse("Bearer error=\"x\" trailing junk, Basic");
        assert_eq!(c[0].error(), Some("x"));
        let many = "Bearer a=1, ".repeat(100);
        assert_eq!(Challenge::parse(&many).len(), MAX_CHALLENGES);
        let long = format!("Bearer {}", "p=1, ".repeat(100));
        assert_eq!(Challenge::parse(&long)[0].params.len(), MAX_PARAMS);
    }

    #[test]
    fn every_header_is_read() {
        let mut h = HeaderMap::new();
        h.append(WWW_AUTHENTICATE, "Basic realm=\"a\"".parse().unwrap());
        h.append(
            WWW_AUTHENTICATE,
            "Bearer resource_metadata=\"http://m\"".parse().unwrap(),
        );
        let c = Challenge::from_headers(&h);
        assert_eq!(
            Challenge::bearer(&c).and_then(Challenge::resource_metadata),
            Some("http://m")
        );
    }
}
