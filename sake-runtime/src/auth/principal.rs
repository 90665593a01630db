//! The verified caller.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;
use std::time::SystemTime;

use serde_json::{Map, Value};

/// Who made a request, as a verified access token says: its subject, the scopes it grants,
/// the client it was issued to, its issuer, when it expires, and all its claims.
///
/// A verifier ([`JwtVerifier`](super::JwtVerifier),
/// [`IntrospectionVerifier`](super::IntrospectionVerifier)) builds one from a token; tests and
/// custom verifiers build one with [`Principal::new`] and the `with_*` methods:
///
/// ```
/// use sake_runtime::auth::Principal;
///
/// let alice = Principal::new("alice").with_scopes(["mcp:tools", "admin"]);
/// assert_eq!(alice.subject(), "alice");
/// assert!(alice.has_scope("admin"));
/// ```
///
/// Cloning is cheap (the fields are shared).
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub struct Principal {
    inner: Arc<Inner>,
}

#[derive(Clone, PartialEq)]
struct Inner {
    subject: String,
    scopes: BTreeSet<String>,
    client_id: Option<String>,
    issuer: Option<String>,
    expires_at: Option<SystemTime>,
    claims: Map<String, Value>,
    /// The upstream sign-in behind a token of the authorization proxy.
    #[cfg(feature = "auth-proxy")]
    upstream: Option<super::upstream_session::UpstreamSession>,
}

impl Principal {
    /// A principal with this subject and nothing else: no scopes, client, issuer, expiry or
    /// claims.
    pub fn new(subject: impl Into<String>) -> Self {
        Self {
            inner: Arc::new(Inner {
                subject: subject.into(),
                scopes: BTreeSet::new(),
                client_id: None,
                issuer: None,
                expires_at: None,
                claims: Map::new(),
                #[cfg(feature = "auth-proxy")]
                upstream: None,
            }),
        }
    }

    fn edit(mut self, f: impl FnOnce(&mut Inner)) -> Self {
        f(Arc::make_mut(&mut self.inner));
        self
    }

    /// Adds scopes to the ones granted.
    pub fn with_scopes<I, S>(self, scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.edit(|p| p.scopes.extend(scopes.into_iter().map(Into::into)))
    }

    /// Sets the client the token was issued to.
    pub fn with_client_id(self, client_id: impl Into<String>) -> Self {
        self.edit(|p| p.client_id = Some(client_id.into()))
    }

    /// Sets the issuer of the token.
    pub fn with_issuer(self, issuer: impl Into<String>) -> Self {
        self.edit(|p| p.issuer = Some(issuer.into()))
    }

    /// Sets when the token expires.
    pub fn with_expires_at(self, expires_at: SystemTime) -> Self {
        self.edit(|p| p.expires_at = Some(expires_at))
    }

    /// Sets the token's claims (replacing any set before).
    pub fn with_claims(self, claims: Map<String, Value>) -> Self {
        self.edit(|p| p.claims = claims)
    }

    /// Attaches the upstream sign-in (the authorization proxy's verifier does).
    #[cfg(feature = "auth-proxy")]
    pub(crate) fn with_upstream(self, upstream: super::upstream_session::UpstreamSession) -> Self {
        self.edit(|p| p.upstream = Some(upstream))
    }

    /// The upstream sign-in behind the token, when the authorization proxy issued it after a
    /// sign-in with its upstream provider (feature `auth-proxy`): the upstream tokens, kept
    /// on the server, for a tool to call the upstream provider's APIs with.
    #[cfg(feature = "auth-proxy")]
    #[cfg_attr(docsrs, doc(cfg(feature = "auth-proxy")))]
    pub fn upstream(&self) -> Option<&super::upstream_session::UpstreamSession> {
        self.inner.upstream.as_ref()
    }

    /// The subject: the token's `sub`, or, for a token issued to a client on its own behalf
    /// that names no `sub`, its `client_id` — only where the verifier was told to take it
    /// (`client_id_as_subject`); otherwise such a token is refused.
    pub fn subject(&self) -> &str {
        &self.inner.subject
    }

    /// The scopes the token grants (its `scope` claim, split on spaces).
    pub fn scopes(&self) -> &BTreeSet<String> {
        &self.inner.scopes
    }

    /// Whether the token grants `scope`, exactly (no hierarchy is implied).
    pub fn has_scope(&self, scope: &str) -> bool {
        self.inner.scopes.contains(scope)
    }

    /// The client the token was issued to (`client_id`), when the token says.
    pub fn client_id(&self) -> Option<&str> {
        self.inner.client_id.as_deref()
    }

    /// The authorization server that issued the token (`iss`), when known.
    pub fn issuer(&self) -> Option<&str> {
        self.inner.issuer.as_deref()
    }

    /// When the token expires (`exp`), when known.
    pub fn expires_at(&self) -> Option<SystemTime> {
        self.inner.expires_at
    }

    /// All the claims of the token (a JWT's payload, or an introspection response),
    /// including those that have their own accessor.
    pub fn claims(&self) -> &Map<String, Value> {
        &self.inner.claims
    }

    /// One claim of the token.
    pub fn claim(&self, name: &str) -> Option<&Value> {
        self.inner.claims.get(name)
    }
}

impl fmt::Debug for Principal {
    // Claim values may be personal data: only their names are shown.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Principal")
            .field("subject", &self.inner.subject)
            .field("scopes", &self.inner.scopes)
            .field("client_id", &self.inner.client_id)
            .field("issuer", &self.inner.issuer)
            .field("expires_at", &self.inner.expires_at)
            .field("claims", &self.inner.claims.keys().collect::<Vec<_>>())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn builder_and_accessors() {
        let exp = SystemTime::UNIX_EPOCH + Duration::from_secs(2_000_000_000);
        let mut claims = Map::new();
        claims.insert("sub".into(), Value::from("alice"));
        claims.insert("email".into(), Value::from("alice@example.com"));
        let p = Principal::new("alice")
            .with_scopes(["b", "a"])
            .with_scopes(["a", "c"])
            .with_client_id("app")
            .with_issuer("https://as.example")
            .with_expires_at(exp)
            .with_claims(claims);
        assert_eq!(p.subject(), "alice");
        assert_eq!(
            p.scopes().iter().map(String::as_str).collect::<Vec<_>>(),
            ["a", "b", "c"]
        );
        assert!(p.has_scope("c"));
        assert!(!p.has_scope("d"));
        assert_eq!(p.client_id(), Some("app"));
        assert_eq!(p.issuer(), Some("https://as.example"));
        assert_eq!(p.expires_at(), Some(exp));
        assert_eq!(p.claim("email"), Some(&Value::from("alice@example.com")));
        // Debug shows claim names, not values.
        let debug = format!("{p:?}");
        assert!(debug.contains("\"email\""), "{debug}");
        assert!(!debug.contains("alice@example.com"), "{debug}");
    }

    #[test]
    fn clones_share_and_edits_do_not_leak() {
        let a = Principal::new("alice").with_scopes(["x"]);
        let b = a.clone().with_scopes(["y"]);
        assert!(!a.has_scope("y"));
        assert!(b.has_scope("x") && b.has_scope("y"));
    }
}
