//! Callers: who a request comes from, what they may do, and whether they were signed out.
//!
//! A caller is named by the verified principal's issuer and subject (feature `auth`), or by
//! the `Server::principal` closure; anonymous otherwise. Its *digest*, keyed with the
//! server's key, is what travels in tokens and records (never the name itself) and what the
//! request's budgets are counted under. Both are worked out once per request:
//! [`Callers::identify`] leaves them in the request's extensions when the engine takes the
//! request (a connection's, once for all its messages), and everything after — the quota key,
//! a session's or task's owner, the revocation watch, the input round's key, a policy's
//! `principal` — reads them from there.

use std::sync::Arc;

use crate::error::Error;
use crate::protocol::jsonrpc::RpcError;
use crate::quota::PeerAddr;
use crate::signing::{Domain, Signer};

use super::{OwnerTest, PrincipalFn, revocation};

/// Who a request's caller is, worked out once ([`Callers::identify`]) and carried in the
/// request's extensions (a private type: nothing outside the crate can forge it).
#[derive(Clone)]
struct Identified(Arc<Identity>);

struct Identity {
    /// The caller's name (issuer and subject, or `Server::principal`'s).
    name: Option<String>,
    /// Its digest under the server's current key.
    digest: Option<String>,
    /// Whether a verified principal was there when it was worked out: one added later (the
    /// token checked after the address's admission) makes it stale.
    #[cfg(feature = "auth")]
    verified: bool,
}

/// The callers of a server (see the module's documentation).
pub(crate) struct Callers {
    signer: Arc<Signer>,
    principal: Option<PrincipalFn>,
    /// How callers prove who they are (feature `auth`).
    #[cfg(feature = "auth")]
    auth: Option<Arc<crate::auth::Authorization>>,
    /// Each signed-in caller's running requests and streams, ended by a sign-out.
    live: Arc<revocation::Live>,
    /// `Limits::ipv6_client_prefix`: what an anonymous IPv6 caller's network is.
    ipv6_client_prefix: u8,
}

impl Callers {
    pub(crate) fn new(
        signer: Signer,
        principal: Option<PrincipalFn>,
        #[cfg(feature = "auth")] auth: Option<Arc<crate::auth::Authorization>>,
        ipv6_client_prefix: u8,
    ) -> Callers {
        Callers {
            signer: Arc::new(signer),
            principal,
            #[cfg(feature = "auth")]
            auth,
            live: Arc::default(),
            ipv6_client_prefix,
        }
    }

    /// How callers prove who they are, for a layer's `McpRequest::auth` (feature `auth`).
    #[cfg(feature = "auth")]
    pub(crate) fn auth(&self) -> Option<Arc<crate::auth::Authorization>> {
        self.auth.clone()
    }

    /// Whether callers can be named at all (`Server::principal`, or authorization): without
    /// either every caller is anonymous and there is nothing to work out or look up.
    #[inline]
    fn names_callers(&self) -> bool {
        #[cfg(feature = "auth")]
        if self.auth.is_some() {
            return true;
        }
        self.principal.is_some()
    }

    /// Works out the caller of a request (its name and digest) once, and leaves it in its
    /// `extensions` for everything the request does after.
    #[inline]
    pub(crate) fn identify(&self, extensions: &mut http::Extensions) {
        if self.names_callers() {
            self.work_out(extensions);
        }
    }

    /// [`identify`](Self::identify) on a server that names callers.
    fn work_out(&self, extensions: &mut http::Extensions) {
        if self.identified(extensions).is_some() {
            return;
        }
        let name = self.name_of(extensions);
        let digest = name
            .as_deref()
            .map(|n| self.signer.digest(Domain::Principal, n));
        #[cfg(feature = "auth")]
        let verified = extensions.get::<crate::auth::Principal>().is_some();
        extensions.insert(Identified(Arc::new(Identity {
            name,
            digest,
            #[cfg(feature = "auth")]
            verified,
        })));
    }

    /// The caller [`identify`](Self::identify) left, unless a principal was verified since.
    fn identified<'e>(&self, extensions: &'e http::Extensions) -> Option<&'e Identity> {
        let Identified(identity) = extensions.get::<Identified>()?;
        #[cfg(feature = "auth")]
        if identity.verified != extensions.get::<crate::auth::Principal>().is_some() {
            return None;
        }
        Some(identity)
    }

    /// The caller's name, worked out from the extensions.
    fn name_of(&self, extensions: &http::Extensions) -> Option<String> {
        #[cfg(feature = "auth")]
        if let Some(p) = extensions.get::<crate::auth::Principal>() {
            return Some(format!(
                "{}\n{}",
                p.issuer().unwrap_or_default(),
                p.subject()
            ));
        }
        (self.principal.as_ref()?)(extensions)
    }

    /// The caller's name: the verified principal's issuer and subject, or the name
    /// `Server::principal` gives. `None` for an anonymous caller.
    pub(crate) fn caller_name(&self, extensions: &http::Extensions) -> Option<String> {
        if !self.names_callers() {
            return None;
        }
        match self.identified(extensions) {
            Some(identity) => identity.name.clone(),
            None => self.name_of(extensions),
        }
    }

    /// The caller of a request, as a digest keyed with the server's key (never the name
    /// itself: it travels in tokens). `None` for an anonymous caller.
    pub(crate) fn principal_of(&self, extensions: &http::Extensions) -> Option<String> {
        if !self.names_callers() {
            return None;
        }
        match self.identified(extensions) {
            Some(identity) => identity.digest.clone(),
            None => {
                let name = self.name_of(extensions)?;
                Some(self.signer.digest(Domain::Principal, &name))
            }
        }
    }

    /// Who a request's records count against: the caller's digest, else the network peer's
    /// (keyed too: no address travels in a token), else everyone anonymous together.
    pub(crate) fn owner_of(&self, extensions: &http::Extensions) -> String {
        if let Some(p) = self.principal_of(extensions) {
            return p;
        }
        match extensions.get::<PeerAddr>() {
            Some(PeerAddr { ip, .. }) => self.signer.digest(
                Domain::Principal,
                &format!(
                    "peer {}",
                    crate::quota::client_network(*ip, self.ipv6_client_prefix)
                ),
            ),
            None => "anonymous".to_owned(),
        }
    }

    /// Whether a caller digest stored in a token is this request's caller (strictly: an
    /// anonymous record is not a named caller's, nor the reverse; a digest made under a key
    /// rotated out since still matches while that key verifies).
    pub(crate) fn same_caller(&self, stored: Option<&str>, extensions: &http::Extensions) -> bool {
        crate::handler::input::same_caller(
            &self.signer,
            stored,
            self.caller_name(extensions).as_deref(),
        )
    }

    /// Whether a caller digest stored in a record (a task's creator) is this request's
    /// caller, under any of the server's keys: a record made before a key rotation stays its
    /// caller's.
    pub(crate) fn owner_test(&self, extensions: &http::Extensions) -> OwnerTest {
        let name = self.caller_name(extensions);
        let signer = self.signer.clone();
        Arc::new(move |stored| crate::handler::input::same_caller(&signer, stored, name.as_deref()))
    }

    /// Whether the caller may run something that needs `scopes` (`what` names it in the
    /// refusal, formatted only then): an anonymous caller gets 401, a token without all of
    /// them 403 naming every scope needed (2026-07-28 Authorization, "Insufficient Scope": all
    /// at once).
    pub(crate) fn authorize(
        &self,
        extensions: &http::Extensions,
        what: std::fmt::Arguments<'_>,
        scopes: &[&str],
        principal: bool,
    ) -> Result<(), RpcError> {
        if scopes.is_empty() && !principal {
            return Ok(());
        }
        #[cfg(feature = "auth")]
        if let Some(auth) = &self.auth {
            return match extensions.get::<crate::auth::Principal>() {
                None => Err(auth.unauthenticated(&what.to_string(), scopes)),
                Some(p) if auth.missing(p, scopes).is_empty() => Ok(()),
                Some(_) => Err(auth.insufficient_scope(&what.to_string(), scopes)),
            };
        }
        let _ = extensions;
        // Start-up refuses scoped functions on a server without authorization.
        Err(RpcError::internal(format!(
            "{what} needs a signed-in caller, but this server checks no tokens"
        )))
    }

    /// A hold on the signed-in caller's token, ended by a sign-out; `None` for an anonymous
    /// caller.
    pub(crate) fn watch_caller(&self, extensions: &http::Extensions) -> Option<revocation::Watch> {
        self.principal_of(extensions).map(|p| self.live.watch(p))
    }

    /// A hold on the token of the caller whose digest is `principal` (a session's).
    pub(crate) fn watch(&self, principal: String) -> revocation::Watch {
        self.live.watch(principal)
    }

    /// The caller whose digest is `principal` was signed out: what it has running ends.
    pub(crate) fn revoke(&self, principal: &str) {
        self.live.revoke(principal);
    }

    /// The refusal of a request whose caller was signed out while it ran.
    pub(crate) fn signed_out(&self) -> RpcError {
        let message =
            "Unauthorized: the caller was signed out while the request ran; sign in again";
        #[cfg(feature = "auth")]
        if let Some(auth) = &self.auth {
            return auth.signed_out(message);
        }
        RpcError::new(crate::protocol::jsonrpc::code::TRANSPORT_REFUSED, message).with_status(403)
    }

    /// The caller of a connection that has no request headers (stdio): see
    /// [`Engine::caller_from_env`](super::front::port::Engine::caller_from_env).
    pub(crate) async fn caller_from_env(&self) -> Result<http::Extensions, Error> {
        #[allow(unused_mut)]
        let mut extensions = http::Extensions::new();
        #[cfg(feature = "auth")]
        if let Some(auth) = &self.auth
            && let Some((token, source)) = auth.stdio_token.as_ref().and_then(|t| t.read())
        {
            let principal = auth.verifier.verify(&token).await.map_err(|e| {
                Error::Config(format!(
                    "the bearer token of {source} was not accepted: {e}"
                ))
            })?;
            tracing::info!(subject = principal.subject(), "caller from {source}");
            extensions.insert(principal);
        }
        Ok(extensions)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// Callers named by a `Server::principal` closure that counts its calls.
    fn counted() -> (Callers, Arc<AtomicUsize>) {
        let calls = Arc::new(AtomicUsize::new(0));
        let counter = calls.clone();
        let principal: PrincipalFn = Arc::new(move |ext: &http::Extensions| {
            counter.fetch_add(1, Ordering::Relaxed);
            ext.get::<&'static str>().map(|n| (*n).to_owned())
        });
        let signer = Signer::with_keys(&[7; 32], &[], "test").unwrap();
        let callers = Callers::new(
            signer,
            Some(principal),
            #[cfg(feature = "auth")]
            None,
            64,
        );
        (callers, calls)
    }

    #[test]
    fn a_caller_is_worked_out_once_per_request() {
        let (callers, calls) = counted();
        let mut extensions = http::Extensions::new();
        extensions.insert("alice");
        callers.identify(&mut extensions);
        assert_eq!(calls.load(Ordering::Relaxed), 1);
        let digest = callers.principal_of(&extensions);
        assert_eq!(
            digest.as_deref(),
            Some(callers.signer.digest(Domain::Principal, "alice").as_str())
        );
        assert_eq!(callers.caller_name(&extensions).as_deref(), Some("alice"));
        assert_eq!(callers.owner_of(&extensions), digest.clone().unwrap());
        assert!(callers.same_caller(digest.as_deref(), &extensions));
        assert!((callers.owner_test(&extensions))(digest.as_deref()));
        // Identified again (the transport, then the engine): still once.
        callers.identify(&mut extensions);
        let copy = extensions.clone();
        assert_eq!(callers.principal_of(&copy), digest);
        assert_eq!(calls.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn an_anonymous_caller_is_identified_as_anonymous() {
        let (callers, calls) = counted();
        let mut extensions = http::Extensions::new();
        callers.identify(&mut extensions);
        assert_eq!(callers.principal_of(&extensions), None);
        assert_eq!(callers.owner_of(&extensions), "anonymous");
        assert!(callers.same_caller(None, &extensions));
        assert_eq!(calls.load(Ordering::Relaxed), 1);
    }

    #[cfg(feature = "auth")]
    #[test]
    fn a_principal_verified_after_identification_is_not_missed() {
        let (callers, _) = counted();
        let mut extensions = http::Extensions::new();
        // Identified before the token is checked (the address's admission): anonymous.
        callers.identify(&mut extensions);
        assert_eq!(callers.principal_of(&extensions), None);
        extensions.insert(crate::auth::Principal::new("bob"));
        // No issuer: the name is an empty issuer's line and the subject.
        let expected = callers.signer.digest(Domain::Principal, "\nbob");
        assert_eq!(callers.principal_of(&extensions), Some(expected.clone()));
        callers.identify(&mut extensions);
        assert_eq!(callers.principal_of(&extensions), Some(expected));
    }
}
