//! Calling an upstream as the signed-in user (feature `auth-proxy`,
//! `Upstream::as_signed_in_user`): a call goes with the token the authorization proxy holds
//! for the caller at its upstream provider ([`Principal::upstream`]), refreshed by the proxy
//! when due — never with the token the caller presented to this server. Each user gets a
//! connection of their own (an upstream binds a session, and its answers, to the token's
//! user), closed once unused for [`IDLE`] (at the next call through the upstream), at most
//! [`MAX_USERS`] of them per upstream.
//!
//! A leaf: the proxy (`proxy/`) keeps a [`Users`] per upstream and asks it.
//!
//! [`Principal::upstream`]: crate::auth::Principal::upstream

use std::collections::HashMap;
use std::time::Duration;

use http::header::AUTHORIZATION;
use http::{HeaderMap, HeaderValue};
use tokio::time::Instant;

use crate::auth::proxy::UpstreamSession;
use crate::client::Client;
use crate::client::auth::{Auth, AuthFuture, AuthRequest, OAuthError, Refusal};

/// The most users one upstream keeps a connection for; past it, the least recently used
/// connection is closed.
pub(crate) const MAX_USERS: usize = 256;
/// A user's connection unused this long is closed (when another is made).
pub(crate) const IDLE: Duration = Duration::from_secs(15 * 60);

/// Whose connection: the principal's issuer and subject, and the kinds of question its caller
/// can answer (as the proxy counts them).
pub(crate) type UserKey = (String, String, u8);

/// The signed-in user's upstream token, as an [`Auth`] of the client: read from the
/// authorization proxy for every request (it refreshes it upstream when it is about to
/// expire). A refusal stands: the gateway cannot sign the user in again.
pub(crate) struct UserToken(pub(crate) UpstreamSession);

impl Auth for UserToken {
    fn credentials<'a>(&'a self, _request: &'a AuthRequest<'a>) -> AuthFuture<'a, HeaderMap> {
        Box::pin(async move {
            let token = self.0.access_token().await.map_err(|e| {
                OAuthError::config(format!(
                    "the signed-in user's upstream token cannot be had: {e}"
                ))
            })?;
            let mut value = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
                OAuthError::config("the signed-in user's upstream token cannot be sent in a header")
            })?;
            value.set_sensitive(true);
            let mut headers = HeaderMap::new();
            headers.insert(AUTHORIZATION, value);
            Ok(headers)
        })
    }

    fn refused<'a>(&'a self, _refusal: &'a Refusal<'a>) -> AuthFuture<'a, bool> {
        Box::pin(async { Ok(false) })
    }
}

/// One user's connection.
struct Held {
    session: UpstreamSession,
    client: Client,
    used: Instant,
}

/// The users' connections to one upstream.
#[derive(Default)]
pub(crate) struct Users {
    held: HashMap<UserKey, Held>,
}

impl Users {
    /// The connection of `key`, if one is held for the same sign-in (`session`); a connection
    /// of an earlier sign-in is closed, and so are the idle ones.
    pub(crate) fn get(
        &mut self,
        key: &UserKey,
        session: &UpstreamSession,
        now: Instant,
    ) -> Option<Client> {
        self.sweep(now);
        let held = self.held.get_mut(key)?;
        if held.session != *session {
            self.held.remove(key);
            return None;
        }
        held.used = now;
        Some(held.client.clone())
    }

    /// Keeps a connection, after closing the idle ones, and the least recently used one when
    /// [`MAX_USERS`] are held.
    pub(crate) fn insert(
        &mut self,
        key: UserKey,
        session: UpstreamSession,
        client: Client,
        now: Instant,
    ) {
        self.sweep(now);
        if self.held.len() >= MAX_USERS
            && let Some(oldest) = self
                .held
                .iter()
                .min_by_key(|(_, h)| h.used)
                .map(|(k, _)| k.clone())
        {
            self.held.remove(&oldest);
        }
        self.held.insert(
            key,
            Held {
                session,
                client,
                used: now,
            },
        );
    }

    /// Closes the connections unused for [`IDLE`].
    fn sweep(&mut self, now: Instant) {
        self.held
            .retain(|_, h| now.saturating_duration_since(h.used) < IDLE);
    }

    /// Closes the connection of `key` (it failed: the next call makes another).
    pub(crate) fn forget(&mut self, key: &UserKey) {
        self.held.remove(key);
    }
}
