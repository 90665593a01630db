//! Authorization for the client: OAuth 2.1 as the MCP authorization pages describe it
//! (2025-03-26 through 2026-07-28), pluggable through [`Auth`].
//!
//! The HTTP transport asks its [`Auth`] for credentials before each request and tells it when
//! the server refuses one (`401`, or `403` with `insufficient_scope`); [`OAuth`] then does what
//! the specification asks of a client: it finds the server's protected resource metadata (the
//! challenge's `resource_metadata`, else the well-known URLs), checks that it describes the
//! server, finds the authorization server's metadata (RFC 8414 or OpenID Connect, in the
//! specification's order) and checks its issuer, registers the client if it must (a
//! pre-registered client, else a Client ID Metadata Document, else dynamic registration),
//! runs the authorization code flow with PKCE (S256), the `resource` parameter and the
//! issuer check of RFC 9207 (or the client credentials grant), refreshes tokens, re-authorizes
//! with more scopes when the server asks for them, and re-registers when the server moves to
//! another authorization server.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use sake::client::Client;
//! use sake::client::auth::{LoopbackBrowser, OAuth};
//!
//! let auth = OAuth::authorization_code(LoopbackBrowser::new()?)
//!     .client_name("my-app")
//!     .build()?;
//! let client = Client::builder().auth(auth).connect("https://mcp.example.com/mcp").await?;
//! # Ok(()) }
//! ```
//!
//! See `docs/client.md` for the whole story: browsers, headless flows, client credentials,
//! persistence, and what is refused.

mod assertion;
mod challenge;
mod discovery;
mod dpop;
mod error;
mod flow;
mod registration;
mod secret;
mod store;
mod token;
mod urls;
mod user;

#[cfg(test)]
mod tests;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use http::header::AUTHORIZATION;
use http::{HeaderMap, HeaderValue};

pub use self::assertion::{AssertionRequest, AssertionSource, IdJag};
pub use self::challenge::Challenge;
pub use self::error::OAuthError;
pub use self::flow::{OAuth, OAuthBuilder};
pub use self::registration::{ApplicationType, ClientKey, RegisteredClient, TokenEndpointAuth};
pub use self::secret::Secret;
pub use self::store::{MemoryStore, StoreError, StoreFuture, TokenStore, Tokens};
pub use self::user::{Callback, Headless, LoopbackBrowser, UserStep, UserStepFuture};

/// The future an [`Auth`] method returns.
pub type AuthFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, OAuthError>> + Send + 'a>>;

/// One request the client is about to send to an MCP server.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct AuthRequest<'a> {
    /// The server's URL (the endpoint the client was connected to).
    pub server: &'a str,
    /// The HTTP method.
    pub method: &'a http::Method,
}

/// The server refused a request: `401 Unauthorized` or `403 Forbidden`.
#[non_exhaustive]
pub struct Refusal<'a> {
    /// The server's URL.
    pub server: &'a str,
    /// `401` or `403`.
    pub status: u16,
    /// The response's headers (`WWW-Authenticate`, and `DPoP-Nonce` for DPoP).
    pub headers: &'a HeaderMap,
    /// The credentials headers the refused request carried (from [`Auth::credentials`]).
    pub sent: &'a HeaderMap,
    /// How many times this same request was already refused and retried.
    pub retries: usize,
}

impl std::fmt::Debug for Refusal<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Refusal")
            .field("server", &self.server)
            .field("status", &self.status)
            .field("challenges", &Challenge::from_headers(self.headers))
            .field("retries", &self.retries)
            .finish_non_exhaustive()
    }
}

impl Refusal<'_> {
    /// The challenges of the response's `WWW-Authenticate` headers.
    pub fn challenges(&self) -> Vec<Challenge> {
        Challenge::from_headers(self.headers)
    }
}

/// How the client authorizes its requests to an HTTP server.
///
/// Object-safe; the client holds an `Arc<dyn Auth>`. [`OAuth`] is the full OAuth 2.1 client;
/// [`BearerToken`] sends a fixed token. The stdio transport uses none (the MCP authorization
/// pages leave stdio servers to take credentials from their environment).
pub trait Auth: Send + Sync {
    /// The headers that authorize `request` (`Authorization`, and `DPoP`), possibly none
    /// (before the first refusal).
    fn credentials<'a>(&'a self, request: &'a AuthRequest<'a>) -> AuthFuture<'a, HeaderMap>;

    /// The server refused a request. `Ok(true)`: credentials were renewed, retry the request;
    /// `Ok(false)`: nothing to do, the refusal stands; `Err`: authorization failed (the
    /// request fails with [`ClientError::Auth`](crate::client::ClientError::Auth)).
    fn refused<'a>(&'a self, refusal: &'a Refusal<'a>) -> AuthFuture<'a, bool>;
}

impl<T: Auth + ?Sized> Auth for Arc<T> {
    fn credentials<'a>(&'a self, request: &'a AuthRequest<'a>) -> AuthFuture<'a, HeaderMap> {
        (**self).credentials(request)
    }

    fn refused<'a>(&'a self, refusal: &'a Refusal<'a>) -> AuthFuture<'a, bool> {
        (**self).refused(refusal)
    }
}

/// Sends one fixed bearer token (obtained elsewhere) with every request; a refusal stands.
#[derive(Clone)]
pub struct BearerToken {
    header: HeaderValue,
}

impl std::fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BearerToken(…)")
    }
}

impl BearerToken {
    /// The token (what follows `Bearer `).
    pub fn new(token: &Secret) -> Result<Self, OAuthError> {
        let mut header = HeaderValue::from_str(&format!("Bearer {}", token.expose()))
            .map_err(|_| OAuthError::config("the token cannot be sent in a header"))?;
        header.set_sensitive(true);
        Ok(BearerToken { header })
    }
}

impl Auth for BearerToken {
    fn credentials<'a>(&'a self, _request: &'a AuthRequest<'a>) -> AuthFuture<'a, HeaderMap> {
        Box::pin(async move {
            let mut h = HeaderMap::new();
            h.insert(AUTHORIZATION, self.header.clone());
            Ok(h)
        })
    }

    fn refused<'a>(&'a self, _refusal: &'a Refusal<'a>) -> AuthFuture<'a, bool> {
        Box::pin(async { Ok(false) })
    }
}

/// Shortens text from a server for an error message.
pub(crate) fn clip(s: &str) -> String {
    crate::protocol::jsonrpc::clip_at(s, 200)
}
