//! Who may receive which scope: the proxy's scope policy. A scope describes what a *user* may
//! let a client do, so the upstream provider signing someone in is not enough to receive it:
//! every user may receive the default scopes, and a scope beyond them only the users the
//! policy names.

use std::sync::Arc;

use serde_json::{Map, Value};

/// The user the upstream provider signed in, as the scope policy sees them: the upstream
/// subject and the identity claims the proxy keeps (`email`, `email_verified`, `tid`, `hd`,
/// `name`, …).
#[derive(Debug, Clone, Copy)]
pub struct UpstreamUser<'a> {
    subject: &'a str,
    claims: &'a Map<String, Value>,
}

impl<'a> UpstreamUser<'a> {
    pub(crate) fn new(subject: &'a str, claims: &'a Map<String, Value>) -> Self {
        UpstreamUser { subject, claims }
    }

    /// The upstream subject (the ID token's `sub`, or the user endpoint's subject field).
    pub fn subject(&self) -> &'a str {
        self.subject
    }

    /// The identity claims kept with the sign-in.
    pub fn claims(&self) -> &'a Map<String, Value> {
        self.claims
    }

    /// The Entra ID tenant (`tid`), if the upstream named one.
    pub fn tenant(&self) -> Option<&'a str> {
        self.claims.get("tid").and_then(Value::as_str)
    }

    /// The Google Workspace domain (`hd`), if the upstream named one.
    pub fn hosted_domain(&self) -> Option<&'a str> {
        self.claims.get("hd").and_then(Value::as_str)
    }

    /// The domain of the user's email address, lowercased, only when the upstream says the
    /// address is verified (`email_verified` true). A multi-tenant Entra ID `email` claim,
    /// which any tenant's administrator sets to anything, comes without it and never counts.
    pub fn verified_email_domain(&self) -> Option<String> {
        let verified = match self.claims.get("email_verified") {
            Some(Value::Bool(b)) => *b,
            Some(Value::String(s)) => s == "true",
            _ => false,
        };
        if !verified {
            return None;
        }
        let email = self.claims.get("email").and_then(Value::as_str)?;
        let (local, domain) = email.rsplit_once('@')?;
        (!local.is_empty() && !domain.is_empty()).then(|| domain.to_ascii_lowercase())
    }
}

/// A set of upstream users, named by allow-lists: a user belongs when any list names them.
/// Empty lists name nobody.
///
/// ```
/// use sake_runtime::auth::proxy::Users;
///
/// let admins = Users::new()
///     .subjects(["248289761001"])
///     .verified_email_domains(["example.com"]);
/// # let _ = admins;
/// ```
#[derive(Debug, Clone, Default)]
pub struct Users {
    subjects: Vec<String>,
    tenants: Vec<String>,
    hosted_domains: Vec<String>,
    email_domains: Vec<String>,
}

fn list<I, S>(items: I) -> impl Iterator<Item = String>
where
    I: IntoIterator<Item = S>,
    S: Into<String>,
{
    items
        .into_iter()
        .map(Into::into)
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

impl Users {
    /// Nobody (add allow-lists).
    pub fn new() -> Self {
        Users::default()
    }

    /// These upstream subjects (exactly: the `sub` the provider gives, which is stable per
    /// user and never reassigned; never a name or an email address).
    pub fn subjects<I, S>(mut self, subjects: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.subjects.extend(list(subjects));
        self
    }

    /// Every user of these Entra ID tenants (the `tid` claim, a tenant's GUID).
    pub fn tenants<I, S>(mut self, tenants: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.tenants
            .extend(list(tenants).map(|t| t.to_ascii_lowercase()));
        self
    }

    /// Every user of these Google Workspace domains (the `hd` claim).
    pub fn hosted_domains<I, S>(mut self, domains: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.hosted_domains
            .extend(list(domains).map(|d| d.to_ascii_lowercase()));
        self
    }

    /// Every user whose email address is in one of these domains (exactly, not their
    /// subdomains) and verified by the upstream (`email_verified` true): an unverified `email`
    /// claim never counts.
    pub fn verified_email_domains<I, S>(mut self, domains: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.email_domains
            .extend(list(domains).map(|d| d.to_ascii_lowercase()));
        self
    }

    /// Whether the set names `user`.
    pub fn contains(&self, user: &UpstreamUser<'_>) -> bool {
        self.subjects.iter().any(|s| s == user.subject())
            || user
                .tenant()
                .is_some_and(|t| self.tenants.contains(&t.to_ascii_lowercase()))
            || user
                .hosted_domain()
                .is_some_and(|d| self.hosted_domains.contains(&d.to_ascii_lowercase()))
            || user
                .verified_email_domain()
                .is_some_and(|d| self.email_domains.contains(&d))
    }

    /// Whether the set names nobody.
    pub fn is_empty(&self) -> bool {
        self.subjects.is_empty()
            && self.tenants.is_empty()
            && self.hosted_domains.is_empty()
            && self.email_domains.is_empty()
    }
}

/// A custom decision: may this user receive this scope?
pub(crate) type Decide = dyn Fn(&UpstreamUser<'_>, &str) -> bool + Send + Sync;

/// The proxy's scope policy.
#[derive(Clone, Default)]
pub(crate) struct Policy {
    /// Scopes every signed-in user may receive.
    pub(crate) defaults: Vec<String>,
    /// Scopes the users of a set may receive.
    pub(crate) grants: Vec<(String, Users)>,
    /// A custom decision, asked for the scopes neither of the above gives.
    pub(crate) decide: Option<Arc<Decide>>,
}

impl std::fmt::Debug for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Policy")
            .field("defaults", &self.defaults)
            .field("grants", &self.grants)
            .field("decide", &self.decide.is_some())
            .finish()
    }
}

impl Policy {
    /// Whether `user` may receive `scope`.
    pub(crate) fn allows(&self, user: &UpstreamUser<'_>, scope: &str) -> bool {
        self.defaults.iter().any(|s| s == scope)
            || self
                .grants
                .iter()
                .any(|(s, users)| s == scope && users.contains(user))
            || self.decide.as_ref().is_some_and(|d| d(user, scope))
    }

    /// The scopes of `requested` that `user` may receive, in their order.
    pub(crate) fn filter(&self, user: &UpstreamUser<'_>, requested: &[String]) -> Vec<String> {
        requested
            .iter()
            .filter(|s| self.allows(user, s))
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn claims(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn allow_lists_name_subjects_tenants_hosted_domains_and_verified_email_domains() {
        let users = Users::new()
            .subjects(["alice"])
            .tenants(["9188040D-6C67-4C5B-B112-36A304B66DAD"])
            .hosted_domains(["Example.org"])
            .verified_email_domains(["example.com"]);
        let none = Map::new();
        let is = |sub: &str, c: &Map<String, Value>| users.contains(&UpstreamUser::new(sub, c));
        assert!(is("alice", &none));
        assert!(!is("Alice", &none));
        assert!(!is("bob", &none));
        assert!(is(
            "bob",
            &claims(json!({"tid": "9188040d-6c67-4c5b-b112-36a304b66dad"}))
        ));
        assert!(!is("bob", &claims(json!({"tid": "another"}))));
        assert!(is("bob", &claims(json!({"hd": "example.org"}))));
        assert!(is(
            "bob",
            &claims(json!({"email": "bob@EXAMPLE.com", "email_verified": true}))
        ));
        assert!(is(
            "bob",
            &claims(json!({"email": "bob@example.com", "email_verified": "true"}))
        ));
        // The nOAuth trap: an email claim without email_verified, or with it false, is
        // anybody's to set.
        assert!(!is("bob", &claims(json!({"email": "bob@example.com"}))));
        assert!(!is(
            "bob",
            &claims(json!({"email": "bob@example.com", "email_verified": false}))
        ));
        // Exactly the domain: not a subdomain, not a suffix.
        assert!(!is(
            "bob",
            &claims(json!({"email": "bob@evil.example.com", "email_verified": true}))
        ));
        assert!(!is(
            "bob",
            &claims(json!({"email": "bob@notexample.com", "email_verified": true}))
        ));
        assert!(!Users::new().contains(&UpstreamUser::new("alice", &none)));
        assert!(Users::new().subjects([" ", ""]).is_empty());
    }

    #[test]
    fn a_scope_beyond_the_defaults_goes_only_to_the_users_named() {
        let policy = Policy {
            defaults: vec!["mcp:tools".into()],
            grants: vec![("admin".into(), Users::new().subjects(["alice"]))],
            decide: Some(Arc::new(|u: &UpstreamUser<'_>, s: &str| {
                s == "reports" && u.subject() == "carol"
            })),
        };
        let none = Map::new();
        let asked: Vec<String> = ["mcp:tools", "admin", "reports"].map(String::from).to_vec();
        let for_ = |sub: &str| policy.filter(&UpstreamUser::new(sub, &none), &asked);
        assert_eq!(for_("alice"), ["mcp:tools", "admin"]);
        assert_eq!(for_("bob"), ["mcp:tools"]);
        assert_eq!(for_("carol"), ["mcp:tools", "reports"]);
        assert!(
            Policy::default()
                .filter(&UpstreamUser::new("alice", &none), &asked)
                .is_empty()
        );
    }
}
