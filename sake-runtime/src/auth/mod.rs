//! Authorization (feature `auth`): the pieces that make a server an OAuth 2.1 resource server,
//! as every MCP revision since 2025-06-18 describes it (the specification's Authorization
//! page; RFC 9728, RFC 8707, RFC 6750, RFC 9068, RFC 7662).
//!
//! - [`TokenVerifier`] turns a bearer token into a [`Principal`] (subject, scopes, client,
//!   issuer, expiry, claims) or an [`AuthError`] that says whether the token was refused
//!   (`401`) or could not be checked (`503`). Two verifiers:
//!   [`JwtVerifier`] checks JWT access tokens against the issuer's published keys (found
//!   through its metadata); [`IntrospectionVerifier`] asks the authorization server about
//!   opaque tokens. [`CachedVerifier`] remembers verified tokens until they expire.
//! - [`ProtectedResourceMetadata`] is the document that tells clients which authorization
//!   server to use, served at [`well_known_path`] of the endpoint.
//! - [`Challenge`] formats the `WWW-Authenticate` header of a `401` or `403`.
//!
//! ```no_run
//! # async fn demo() -> Result<(), sake_runtime::auth::AuthError> {
//! use sake_runtime::auth::{CachedVerifier, JwtVerifier, TokenVerifier};
//!
//! let verifier = CachedVerifier::new(
//!     JwtVerifier::builder("https://auth.example.com", "https://mcp.example.com/mcp").build()?,
//! );
//! match verifier.verify("eyJhbGciOiJSUzI1NiIs...").await {
//!     Ok(principal) => println!("hello {}", principal.subject()),
//!     Err(e) if e.is_token_error() => println!("401: {e}"),
//!     Err(e) => println!("503: {e}"),
//! }
//! # Ok(()) }
//! ```
//!
//! See `docs/authorization.md` for the configuration of a deployment and the tests against
//! a real authorization server.

mod cache;
mod challenge;
pub(crate) mod client;
mod discovery;
pub(crate) mod dpop;
mod error;
// The HTTP(S) client, shared with the MCP client (feature `client`).
use crate::net::fetch;
mod introspection;
pub(crate) mod jwt;
mod key_store;
mod keys;
mod metadata;
mod principal;
#[cfg(feature = "auth-proxy")]
#[cfg_attr(docsrs, doc(cfg(feature = "auth-proxy")))]
pub mod proxy;
pub(crate) mod request;
mod server;
#[cfg(feature = "auth-proxy")]
mod upstream_session;
mod verifier;

#[cfg(test)]
mod tests;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

pub use cache::CachedVerifier;
pub use challenge::{BearerError, Challenge};
pub use error::AuthError;
pub use introspection::{ClientAuth, IntrospectionVerifier, IntrospectionVerifierBuilder};
pub use jwt::{JwtVerifier, JwtVerifierBuilder};
pub use keys::{Algorithm, UnknownAlgorithm};
pub use metadata::{
    InvalidResourceUri, ProtectedResourceMetadata, WELL_KNOWN_PREFIX, resource_uri,
    well_known_path, well_known_url,
};
pub use principal::Principal;
pub use server::Authorization;

/// The future a [`TokenVerifier`] returns.
pub type VerifyFuture<'a> = Pin<Box<dyn Future<Output = Result<Principal, AuthError>> + Send + 'a>>;

/// Verifies bearer tokens: the token string (what follows `Bearer ` in the `Authorization`
/// header) in, the verified [`Principal`] or why not out.
///
/// Object-safe (`Arc<dyn TokenVerifier>` works) and shareable across tasks. Implement it for a
/// custom scheme:
///
/// ```
/// use sake_runtime::auth::{AuthError, Principal, TokenVerifier, VerifyFuture};
///
/// /// Accepts one fixed token (a test double, or a shared secret behind a private network).
/// struct Static(String);
///
/// impl TokenVerifier for Static {
///     fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a> {
///         Box::pin(async move {
///             if token == self.0 {
///                 Ok(Principal::new("operator").with_scopes(["admin"]))
///             } else {
///                 Err(AuthError::InvalidToken { reason: "unknown token".into() })
///             }
///         })
///     }
/// }
/// ```
pub trait TokenVerifier: Send + Sync {
    /// Verifies `token`.
    fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a>;
}

impl<T: TokenVerifier + ?Sized> TokenVerifier for Arc<T> {
    fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a> {
        (**self).verify(token)
    }
}

impl<T: TokenVerifier + ?Sized> TokenVerifier for Box<T> {
    fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a> {
        (**self).verify(token)
    }
}
