//! [`UpstreamSession`]: the upstream sign-in behind a token of the authorization proxy, as a
//! [`Principal`](super::Principal) carries it. A leaf: the proxy implements
//! [`UpstreamSource`] for its grants, so the principal needs nothing of the proxy.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use super::error::AuthError;

/// A boxed future.
pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Where an [`UpstreamSession`]'s tokens come from (the authorization proxy's store).
pub(crate) trait UpstreamSource: Send + Sync {
    /// The upstream provider's name.
    fn provider(&self) -> &str;
    /// The access token, refreshed when due.
    fn access_token(&self) -> BoxFuture<'_, Result<String, AuthError>>;
    /// The ID token, as last issued.
    fn id_token(&self) -> BoxFuture<'_, Result<Option<String>, AuthError>>;
    /// Whether `other` is the same sign-in.
    fn same(&self, other: &dyn std::any::Any) -> bool;
    /// This, for [`same`](Self::same).
    fn as_any(&self) -> &dyn std::any::Any;
}

/// The upstream sign-in behind a principal whose token the authorization proxy issued: its
/// tokens stay on the server, and a tool uses them to call the upstream provider's APIs.
///
/// ```no_run
/// # use sake_runtime::auth::Principal;
/// # async fn tool(principal: Principal) -> Result<(), sake_runtime::auth::AuthError> {
/// if let Some(upstream) = principal.upstream() {
///     let token = upstream.access_token().await?; // refreshed upstream when it expired
///     // GET https://graph.microsoft.com/v1.0/me with `Authorization: Bearer {token}`
/// }
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct UpstreamSession {
    tokens: Arc<dyn UpstreamSource>,
}

impl UpstreamSession {
    pub(crate) fn new(tokens: impl UpstreamSource + 'static) -> Self {
        UpstreamSession {
            tokens: Arc::new(tokens),
        }
    }

    /// The upstream access token, refreshed with the upstream refresh token when it expires
    /// within 30 seconds. `Err` when the sign-in ended (the grant was revoked or expired), or
    /// the upstream cannot be reached.
    pub async fn access_token(&self) -> Result<String, AuthError> {
        self.tokens.access_token().await
    }

    /// The upstream ID token (OpenID Connect providers), as it was last issued.
    pub async fn id_token(&self) -> Result<Option<String>, AuthError> {
        self.tokens.id_token().await
    }
}

impl PartialEq for UpstreamSession {
    fn eq(&self, other: &Self) -> bool {
        self.tokens.same(other.tokens.as_any())
    }
}

impl std::fmt::Debug for UpstreamSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpstreamSession")
            .field("upstream", &self.tokens.provider())
            .finish_non_exhaustive()
    }
}
