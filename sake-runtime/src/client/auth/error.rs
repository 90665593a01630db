//! Why authorization failed.

/// Why the client could not get (or keep) authorization for a server.
///
/// Every message names what went wrong and, where there is one, what to do about it. None
/// contains an access token, a refresh token, a client secret, an authorization code or a
/// PKCE verifier.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OAuthError {
    /// The configuration cannot work (a malformed URL, a key that does not parse, a grant
    /// without what it needs).
    #[error("the OAuth configuration is unusable: {reason}")]
    Config {
        /// What is wrong.
        reason: String,
    },
    /// A URL the flow would use is refused: not `http`/`https`, or plain `http` to a host that
    /// is not this machine (authorization servers, and servers that receive tokens, must use
    /// https; see `OAuthBuilder::allow_insecure_http` for testing).
    #[error("refusing to use {url:?}: {reason}")]
    InsecureUrl {
        /// The URL.
        url: String,
        /// Why.
        reason: String,
    },
    /// A server could not be reached, or did not answer in time.
    #[error("{url} is unreachable: {reason}")]
    Unreachable {
        /// What was asked.
        url: String,
        /// The network error.
        reason: String,
    },
    /// The server's protected resource metadata (RFC 9728) could not be found or read.
    #[error("no usable protected resource metadata for {server}: {reason}")]
    ResourceMetadata {
        /// The MCP server.
        server: String,
        /// What was tried and what went wrong.
        reason: String,
    },
    /// The protected resource metadata describes another resource than the server the client
    /// talks to: the server is misconfigured, or is trying to obtain a token meant for
    /// another resource. No authorization is attempted.
    #[error(
        "the protected resource metadata of {server} is for the resource {published:?}, which is not that server; refusing to authorize (RFC 9728 section 3.3)"
    )]
    ResourceMismatch {
        /// The MCP server the client talks to.
        server: String,
        /// The `resource` the metadata names.
        published: String,
    },
    /// The authorization server's metadata (RFC 8414, OpenID Connect Discovery) could not be
    /// found or read.
    #[error("no usable metadata for the authorization server {issuer}: {reason}")]
    ServerMetadata {
        /// The issuer identifier.
        issuer: String,
        /// What was tried and what went wrong.
        reason: String,
    },
    /// A metadata document names another issuer than the one whose well-known URL served it;
    /// it is not used (RFC 8414 section 3.3, OpenID Connect Discovery section 4.3).
    #[error(
        "the metadata at {url} names the issuer {found:?}, not {expected:?}; it is not used (RFC 8414 section 3.3)"
    )]
    IssuerMismatch {
        /// Where the document was fetched.
        url: String,
        /// The issuer the URL was built from.
        expected: String,
        /// The issuer the document names.
        found: String,
    },
    /// The authorization server does not advertise PKCE with `S256`
    /// (`code_challenge_methods_supported`), which MCP requires before authorizing.
    #[error(
        "the authorization server {issuer} does not advertise PKCE with S256 (code_challenge_methods_supported); MCP clients must refuse to authorize with it"
    )]
    PkceUnsupported {
        /// The issuer identifier.
        issuer: String,
    },
    /// The client has no client identifier for the authorization server and cannot get one:
    /// no pre-registered client, no Client ID Metadata Document the server accepts, no
    /// dynamic registration.
    #[error("no client registration for the authorization server {issuer}: {reason}")]
    NoRegistration {
        /// The issuer identifier.
        issuer: String,
        /// What is missing, and how to supply it.
        reason: String,
    },
    /// Dynamic client registration (RFC 7591) was refused.
    #[error("the authorization server {issuer} refused the client registration (HTTP {status}){}", describe(error.as_deref(), description.as_deref()))]
    Registration {
        /// The issuer identifier.
        issuer: String,
        /// The HTTP status.
        status: u16,
        /// The `error` code, if given.
        error: Option<String>,
        /// The `error_description`, if given.
        description: Option<String>,
    },
    /// A pre-registered client is bound to another authorization server than the one the
    /// server now names; its credentials are not presented there.
    #[error(
        "the pre-registered client is registered with {registered}, but the server now names the authorization server {current}; register the client there (credentials are not portable across authorization servers)"
    )]
    WrongAuthorizationServer {
        /// The issuer the client belongs to.
        registered: String,
        /// The issuer the server names.
        current: String,
    },
    /// The user step failed: the browser could not be reached, the redirect never came, or a
    /// headless flow met a page that needs a person.
    #[error("the authorization step failed: {reason}")]
    UserStep {
        /// What happened.
        reason: String,
    },
    /// The authorization response's `iss` does not identify the authorization server the
    /// request was sent to (RFC 9207 section 2.4): a mix-up attack or a misconfigured
    /// server. The code is not used.
    #[error("the authorization response {}, expected {expected:?} (RFC 9207); the response is not used", match received { Some(r) => format!("names the issuer {r:?}"), None => "names no issuer although the authorization server advertises the iss parameter".to_owned() })]
    IssuerParameter {
        /// The issuer the request was sent to.
        expected: String,
        /// The `iss` received, if any.
        received: Option<String>,
    },
    /// The authorization response's `state` is not the one sent: the response does not
    /// belong to this request.
    #[error("the authorization response carries another state than the request; it is not used")]
    StateMismatch,
    /// The authorization server (or the user) refused the authorization request.
    #[error("the authorization request was refused: {error}{}", description.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    Denied {
        /// The `error` code (`access_denied`, `invalid_scope`, …).
        error: String,
        /// The `error_description`, if given.
        description: Option<String>,
    },
    /// The token endpoint refused a request.
    #[error("the token endpoint of {issuer} refused the {grant} request (HTTP {status}){}", describe(error.as_deref(), description.as_deref()))]
    TokenEndpoint {
        /// The issuer identifier.
        issuer: String,
        /// `authorization_code`, `refresh_token` or `client_credentials`.
        grant: String,
        /// The HTTP status.
        status: u16,
        /// The `error` code, if given.
        error: Option<String>,
        /// The `error_description`, if given.
        description: Option<String>,
    },
    /// An authorization server's answer breaks the protocol (a token response without a
    /// token, an unknown token type, a malformed document).
    #[error("the authorization server {issuer} answered with something unusable: {reason}")]
    Protocol {
        /// The issuer identifier (or the URL when none is known yet).
        issuer: String,
        /// What is wrong.
        reason: String,
    },
    /// The server still refuses with `insufficient_scope` after the client asked for the
    /// scopes it names: the authorization server grants less than the server needs.
    #[error(
        "the server still needs the scopes {scopes:?} after re-authorization; giving up (ask the authorization server's administrator for them)"
    )]
    InsufficientScope {
        /// The scopes the last challenge named.
        scopes: Vec<String>,
    },
    /// The server refused a token the client had just obtained for it.
    #[error("the server refused (HTTP {status}) a token just issued for it; giving up")]
    Refused {
        /// The HTTP status.
        status: u16,
    },
    /// The token store failed.
    #[error("the token store failed: {reason}")]
    Store {
        /// What failed.
        reason: String,
    },
}

fn describe(error: Option<&str>, description: Option<&str>) -> String {
    match (error, description) {
        (Some(e), Some(d)) => format!(": {e} ({d})"),
        (Some(e), None) => format!(": {e}"),
        (None, Some(d)) => format!(": {d}"),
        (None, None) => String::new(),
    }
}

impl OAuthError {
    pub(crate) fn config(reason: impl Into<String>) -> Self {
        Self::Config {
            reason: reason.into(),
        }
    }

    pub(crate) fn user_step(reason: impl Into<String>) -> Self {
        Self::UserStep {
            reason: reason.into(),
        }
    }

    pub(crate) fn protocol(issuer: &str, reason: impl Into<String>) -> Self {
        Self::Protocol {
            issuer: issuer.to_owned(),
            reason: reason.into(),
        }
    }
}
