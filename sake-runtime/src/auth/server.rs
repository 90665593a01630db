//! How a server asks for credentials: the configuration [`Server::authorization`] takes.
//!
//! [`Server::authorization`]: crate::Server::authorization

use std::fmt;
use std::sync::Arc;

use super::{
    AuthError, BearerError, CachedVerifier, Challenge, JwtVerifier, Principal,
    ProtectedResourceMetadata, TokenVerifier, well_known_path, well_known_url,
};
use crate::protocol::jsonrpc::RpcError;

/// Whether a granted scope implies a needed one (a broader scope covering narrower ones).
type Implies = Arc<dyn Fn(&str, &str) -> bool + Send + Sync>;

/// What a server that is an OAuth 2.1 resource server needs to know: who issues its tokens,
/// how to check them, its canonical resource URI, and what to tell clients.
///
/// Every HTTP request then needs `Authorization: Bearer <token>`: without a valid one it gets
/// `401` with a `WWW-Authenticate` challenge naming the protected resource metadata, which
/// the server serves at the well-known URIs of RFC 9728. A function whose attribute names
/// `scopes(...)` runs only for a token with all of them; otherwise `403` with
/// `error="insufficient_scope"` names every scope it needs. See docs/authorization.md.
///
/// ```no_run
/// # fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use sake_runtime::auth::Authorization; // `sake::auth::Authorization` with sake's `auth`
///
/// let server = sake_runtime::Server::from_registry().authorization(
///     Authorization::jwt("https://mcp.example.com/mcp", "https://auth.example.com")?
///         .scopes_supported(["mcp:tools", "admin"]),
/// );
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Authorization {
    pub(crate) verifier: Arc<dyn TokenVerifier>,
    pub(crate) resource: String,
    pub(crate) authorization_servers: Vec<String>,
    pub(crate) scopes_supported: Vec<String>,
    pub(crate) challenge_scopes: Option<Vec<String>>,
    pub(crate) implies: Option<Implies>,
    pub(crate) anonymous: bool,
    pub(crate) hide_unauthorized: bool,
    pub(crate) resource_name: Option<String>,
    pub(crate) documentation: Option<String>,
    pub(crate) stdio_token: Option<StdioToken>,
    /// Checks DPoP proofs (of tokens bound to a key), with its replay cache and nonces.
    pub(crate) dpop: Arc<super::dpop::DpopVerifier>,
    pub(crate) dpop_advertised: bool,
    pub(crate) dpop_required: bool,
    /// The authorization proxy served on the same origin (feature `auth-proxy`).
    #[cfg(feature = "auth-proxy")]
    pub(crate) proxy: Option<super::proxy::AuthProxy>,
}

/// Where a stdio server's caller comes from.
#[derive(Clone)]
pub(crate) enum StdioToken {
    /// An environment variable, read when serving starts.
    Env(String),
    /// A token the application gave.
    Value(String),
}

impl StdioToken {
    /// The token, if there is one.
    pub(crate) fn read(&self) -> Option<(String, String)> {
        match self {
            StdioToken::Env(var) => std::env::var(var)
                .ok()
                .map(|t| (t.trim().to_owned(), format!("${var}"))),
            StdioToken::Value(t) => Some((t.clone(), "Authorization::stdio_token".to_owned())),
        }
    }
}

impl fmt::Debug for Authorization {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Authorization")
            .field("resource", &self.resource)
            .field("authorization_servers", &self.authorization_servers)
            .field("scopes_supported", &self.scopes_supported)
            .field("anonymous", &self.anonymous)
            .field("hide_unauthorized", &self.hide_unauthorized)
            .finish_non_exhaustive()
    }
}

impl Authorization {
    /// Tokens checked by `verifier`, issued by `authorization_server` (its issuer URL) for
    /// `resource`: the server's canonical resource URI (RFC 8707), the URL clients reach the
    /// MCP endpoint at, such as `https://mcp.example.com/mcp` — behind a proxy, the public one.
    pub fn new(
        resource: impl Into<String>,
        authorization_server: impl Into<String>,
        verifier: impl TokenVerifier + 'static,
    ) -> Self {
        Authorization {
            verifier: Arc::new(verifier),
            resource: resource.into(),
            authorization_servers: vec![authorization_server.into()],
            scopes_supported: Vec::new(),
            challenge_scopes: None,
            implies: None,
            anonymous: false,
            hide_unauthorized: false,
            resource_name: None,
            documentation: None,
            stdio_token: None,
            dpop: Arc::new(super::dpop::DpopVerifier::new(false)),
            dpop_advertised: false,
            dpop_required: false,
            #[cfg(feature = "auth-proxy")]
            proxy: None,
        }
    }

    /// JWT access tokens (RFC 9068) of `issuer` for `resource`, checked against the keys the
    /// issuer publishes (found through its metadata) and remembered until they expire: the
    /// usual deployment, configured by two URLs.
    pub fn jwt(resource: impl Into<String>, issuer: impl Into<String>) -> Result<Self, AuthError> {
        let resource = resource.into();
        let issuer = issuer.into();
        let verifier = CachedVerifier::new(JwtVerifier::builder(&issuer, &resource).build()?);
        Ok(Authorization::new(resource, issuer, verifier))
    }

    /// Another authorization server clients may use (listed in the metadata).
    pub fn authorization_server(mut self, issuer: impl Into<String>) -> Self {
        self.authorization_servers.push(issuer.into());
        self
    }

    /// The scopes the metadata lists (`scopes_supported`); by default also the scopes a
    /// `401` challenge asks for. Keep it to what basic use needs: clients without a challenge
    /// scope ask for all of them. `offline_access` is never put in a challenge.
    pub fn scopes_supported<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes_supported = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The scopes a `401` challenge asks for, when they differ from `scopes_supported`.
    pub fn challenge_scopes<I, S>(mut self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.challenge_scopes = Some(scopes.into_iter().map(Into::into).collect());
        self
    }

    /// A scope hierarchy: whether a `granted` scope implies a `needed` one (say `files` implies
    /// `files:read`). Without it a scope implies only itself. 2026-07-28 requires servers to
    /// honour the hierarchies their scopes have.
    pub fn scope_implies<F>(mut self, implies: F) -> Self
    where
        F: Fn(&str, &str) -> bool + Send + Sync + 'static,
    {
        self.implies = Some(Arc::new(implies));
        self
    }

    /// Serves requests without a token too, as an anonymous caller: only functions that name
    /// no scopes run for it; the others answer `401` with the challenge. Off by default.
    pub fn allow_anonymous(mut self, allow: bool) -> Self {
        self.anonymous = allow;
        self
    }

    /// Whether lists (`tools/list`, `prompts/list`, `resources/list`,
    /// `resources/templates/list`) leave out what the caller's scopes do not allow. Off by
    /// default: everyone sees everything, and a call without the scopes answers `403` (which
    /// tells a client how to step up). On, each list is filtered per request.
    pub fn hide_unauthorized(mut self, hide: bool) -> Self {
        self.hide_unauthorized = hide;
        self
    }

    /// Advertises DPoP (RFC 9449): the metadata lists the proof algorithms accepted
    /// (`dpop_signing_alg_values_supported`) and a `401` adds a `DPoP` challenge to the
    /// `Bearer` one, so that clients that can ask for DPoP-bound tokens do. Whatever this
    /// says, a token bound to a key (`cnf.jkt`) is accepted only with a valid proof.
    pub fn dpop(mut self, advertise: bool) -> Self {
        self.dpop_advertised = advertise;
        self
    }

    /// Accepts only DPoP-bound tokens (`dpop_bound_access_tokens_required`); implies
    /// [`dpop`](Self::dpop).
    pub fn dpop_required(mut self, required: bool) -> Self {
        self.dpop_required = required;
        self.dpop_advertised |= required;
        self
    }

    /// Requires a server-issued nonce in every DPoP proof (RFC 9449 section 9): a proof
    /// without one, or with an old one, is answered `401 use_dpop_nonce` with a fresh nonce in
    /// `DPoP-Nonce`. Nonces are valid for 5 to 10 minutes.
    pub fn dpop_nonce(mut self, require: bool) -> Self {
        self.dpop = Arc::new(super::dpop::DpopVerifier::new(require));
        self
    }

    /// A name for people, in the metadata (`resource_name`).
    pub fn resource_name(mut self, name: impl Into<String>) -> Self {
        self.resource_name = Some(name.into());
        self
    }

    /// A page for developers, in the metadata (`resource_documentation`).
    pub fn resource_documentation(mut self, url: impl Into<String>) -> Self {
        self.documentation = Some(url.into());
        self
    }

    /// On stdio, where there is no HTTP to carry a token, the caller is the one whose token is
    /// in the environment variable `var` (checked once, when serving starts); without it the
    /// caller is anonymous. The MCP specification has stdio servers take credentials from the
    /// environment.
    pub fn stdio_token_env(mut self, var: impl Into<String>) -> Self {
        self.stdio_token = Some(StdioToken::Env(var.into()));
        self
    }

    /// On stdio, the caller is the one this token names (an application that reads its
    /// token from its own configuration); checked once, when serving starts.
    pub fn stdio_token(mut self, token: impl Into<String>) -> Self {
        self.stdio_token = Some(StdioToken::Value(token.into()));
        self
    }

    /// The canonical resource URI.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// Checks the configuration: the resource URI is absolute and has no fragment.
    pub(crate) fn check(&self) -> Result<(), String> {
        well_known_url(&self.resource)
            .map(|_| ())
            .map_err(|e| format!("the resource URI of Authorization: {e}"))
    }

    /// The protected resource metadata document.
    pub(crate) fn metadata(&self) -> ProtectedResourceMetadata {
        let mut servers = self.authorization_servers.iter();
        let first = servers.next().cloned().unwrap_or_default();
        let mut doc = ProtectedResourceMetadata::new(self.resource.clone(), first);
        for s in servers {
            doc = doc.authorization_server(s.clone());
        }
        if !self.scopes_supported.is_empty() {
            doc = doc.scopes_supported(
                self.scopes_supported
                    .iter()
                    .filter(|s| *s != "offline_access"),
            );
        }
        if let Some(n) = &self.resource_name {
            doc = doc.resource_name(n.clone());
        }
        if let Some(d) = &self.documentation {
            doc = doc.resource_documentation(d.clone());
        }
        if self.dpop_advertised {
            doc = doc
                .dpop_signing_alg_values_supported(super::dpop::ALGORITHMS.iter().copied())
                .dpop_bound_access_tokens_required(self.dpop_required);
        }
        doc
    }

    /// The absolute URL of the metadata document (the path-inserted form).
    pub(crate) fn metadata_url(&self) -> String {
        well_known_url(&self.resource).unwrap_or_default()
    }

    /// The paths the metadata is served at: the path-inserted form and the root form.
    pub(crate) fn metadata_paths(&self) -> Vec<String> {
        let path = resource_path(&self.resource);
        let inserted = well_known_path(&path);
        let root = super::WELL_KNOWN_PREFIX.to_owned();
        if inserted == root {
            vec![root]
        } else {
            vec![inserted, root]
        }
    }

    /// The scopes a `401` challenge asks for.
    pub(crate) fn challenge(&self) -> Vec<String> {
        self.challenge_scopes
            .clone()
            .unwrap_or_else(|| self.scopes_supported.clone())
            .into_iter()
            .filter(|s| s != "offline_access")
            .collect()
    }

    /// The scopes of `needed` the principal's token does not grant (none for an empty list).
    pub(crate) fn missing(&self, principal: &Principal, needed: &[&str]) -> Vec<String> {
        needed
            .iter()
            .filter(|n| !self.grants(principal, n))
            .map(|n| (*n).to_owned())
            .collect()
    }

    /// A `Bearer` challenge naming the metadata, with `scope` when scopes are named.
    pub(crate) fn challenge_header(
        &self,
        error: Option<BearerError>,
        scopes: &[String],
        description: Option<&str>,
    ) -> String {
        let mut c = Challenge::new().resource_metadata(self.metadata_url());
        if !scopes.is_empty() {
            c = c.scope(scopes.iter().map(String::as_str));
        }
        if let Some(e) = error {
            c = c.error(e);
        }
        if let Some(d) = description {
            c = c.error_description(d);
        }
        match self.dpop_challenge() {
            Some(dpop) => format!("{c}, {dpop}"),
            None => c.to_string(),
        }
    }

    /// The refusal of a request without a token (or of an anonymous caller): 401 asking for
    /// `scopes`, or for the challenge scopes when none are named.
    pub(crate) fn unauthenticated(&self, what: &str, scopes: &[&str]) -> RpcError {
        let scopes: Vec<String> = if scopes.is_empty() {
            self.challenge()
        } else {
            scopes.iter().map(|s| (*s).to_owned()).collect()
        };
        RpcError::unauthorized(
            format!(
                "Unauthorized: {what} needs a bearer token from the authorization server the protected resource metadata names"
            ),
            self.challenge_header(None, &scopes, None),
        )
    }

    /// The refusal of a request whose caller was signed out while it ran: 401 with the
    /// challenge, to sign in again.
    pub(crate) fn signed_out(&self, message: &str) -> RpcError {
        RpcError::unauthorized(
            message,
            self.challenge_header(None, &self.challenge(), None),
        )
    }

    /// The refusal of a token that lacks some of `scopes`: 403 `insufficient_scope` naming all
    /// the scopes the operation needs, at once.
    pub(crate) fn insufficient_scope(&self, what: &str, scopes: &[&str]) -> RpcError {
        let scopes: Vec<String> = scopes.iter().map(|s| (*s).to_owned()).collect();
        let list = scopes.join(" ");
        let description = format!("{what} needs the scopes {list}");
        RpcError::forbidden(
            format!("Forbidden: {what} needs the scopes {list}; sign in again with them"),
            self.challenge_header(
                Some(BearerError::InsufficientScope),
                &scopes,
                Some(&description),
            ),
        )
    }

    /// The refusal of a token the verifier did not accept: 401 `invalid_token`, saying why
    /// (the reason never holds the token).
    pub(crate) fn invalid_token(&self, reason: &AuthError) -> RpcError {
        let description = reason.to_string();
        RpcError::unauthorized(
            format!("Unauthorized: the bearer token was refused: {description}"),
            self.challenge_header(
                Some(BearerError::InvalidToken),
                &self.challenge(),
                Some(&description),
            ),
        )
    }

    fn grants(&self, principal: &Principal, needed: &str) -> bool {
        principal.has_scope(needed)
            || self.implies.as_ref().is_some_and(|implies| {
                principal
                    .scopes()
                    .iter()
                    .any(|granted| implies(granted, needed))
            })
    }
}

/// The path of an absolute URI (`/mcp` of `https://host/mcp`; `/` when it has none).
fn resource_path(uri: &str) -> String {
    let after_scheme = uri.split_once("://").map_or(uri, |(_, rest)| rest);
    match after_scheme.find('/') {
        Some(i) => {
            let path = &after_scheme[i..];
            let end = path.find(['?', '#']).unwrap_or(path.len());
            path[..end].to_owned()
        }
        None => "/".to_owned(),
    }
}

/// The authorization proxy's side of a server (feature `auth-proxy`): here, beside
/// [`Authorization`], so that the proxy needs nothing of it.
#[cfg(feature = "auth-proxy")]
impl super::proxy::AuthProxy {
    /// The `Authorization` that makes a server accept the proxy's tokens and serve the proxy
    /// on its origin: pass it to `Server::authorization`. Add settings to it as to any
    /// `Authorization` (`challenge_scopes`, `dpop`, …).
    pub fn authorization(&self) -> Authorization {
        let mut a = Authorization::new(
            self.inner.resource.clone(),
            self.inner.issuer.clone(),
            super::proxy::tokens::ProxyVerifier {
                proxy: self.inner.clone(),
            },
        )
        .scopes_supported(self.inner.scopes.clone());
        if let Some(n) = &self.inner.resource_name {
            a = a.resource_name(n.clone());
        }
        a.proxy = Some(self.clone());
        a
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Never;
    impl TokenVerifier for Never {
        fn verify<'a>(&'a self, _: &'a str) -> super::super::VerifyFuture<'a> {
            Box::pin(async {
                Err(AuthError::InvalidToken {
                    reason: "never".into(),
                })
            })
        }
    }

    fn config() -> Authorization {
        Authorization::new(
            "https://mcp.example.com/api/mcp",
            "https://auth.example.com",
            Never,
        )
    }

    #[test]
    fn the_metadata_is_served_path_inserted_and_at_the_root() {
        let a = config();
        assert_eq!(
            a.metadata_paths(),
            [
                "/.well-known/oauth-protected-resource/api/mcp",
                "/.well-known/oauth-protected-resource"
            ]
        );
        assert_eq!(
            a.metadata_url(),
            "https://mcp.example.com/.well-known/oauth-protected-resource/api/mcp"
        );
        let root = Authorization::new("https://mcp.example.com", "https://a", Never);
        assert_eq!(
            root.metadata_paths(),
            ["/.well-known/oauth-protected-resource"]
        );
    }

    #[test]
    fn offline_access_is_never_challenged_nor_listed() {
        let a = config().scopes_supported(["mcp:tools", "offline_access"]);
        assert_eq!(a.challenge(), ["mcp:tools"]);
        let doc = serde_json::to_value(a.metadata()).unwrap();
        assert_eq!(doc["scopes_supported"], serde_json::json!(["mcp:tools"]));
        let a = a.challenge_scopes(["mcp:basic"]);
        assert_eq!(a.challenge(), ["mcp:basic"]);
    }

    #[test]
    fn scopes_are_granted_exactly_or_through_the_hierarchy() {
        let alice = Principal::new("alice").with_scopes(["files", "mcp:tools"]);
        let a = config();
        assert_eq!(
            a.missing(&alice, &["files:read", "mcp:tools"]),
            ["files:read"]
        );
        let a = a.scope_implies(|granted, needed| {
            needed
                .strip_prefix(granted)
                .is_some_and(|rest| rest.starts_with(':'))
        });
        assert!(a.missing(&alice, &["files:read", "mcp:tools"]).is_empty());
        assert_eq!(a.missing(&alice, &["admin"]), ["admin"]);
    }

    #[test]
    fn a_resource_uri_must_be_absolute() {
        assert!(config().check().is_ok());
        assert!(
            Authorization::new("/mcp", "https://a", Never)
                .check()
                .is_err()
        );
    }
}
