//! What the builders of the two token verifiers, [`JwtVerifier`](super::JwtVerifier) and
//! [`IntrospectionVerifier`](super::IntrospectionVerifier), set and check alike: the
//! audiences, the caller a token without `sub` may name, the clock leeway, and the bounds of
//! one fetch and of a token.

use std::time::Duration;

use super::AuthError;
use super::fetch::{Fetcher, Limits};

/// The settings both builders share, with their defaults.
#[derive(Debug, Clone)]
pub(super) struct Common {
    /// The `aud` values accepted (the resource first).
    pub audiences: Vec<String>,
    /// Whether a token without `sub` names its caller by `client_id`.
    pub client_id_as_subject: bool,
    /// The clock skew allowed on the time claims.
    pub leeway: Duration,
    /// The deadline of one request to the authorization server.
    pub fetch_timeout: Duration,
    /// The longest document or answer read from it.
    pub max_response_bytes: usize,
    /// The longest token accepted.
    pub max_token_bytes: usize,
}

impl Common {
    /// The defaults for `audience`: 60 s of leeway, 10 s per fetch of at most
    /// `max_response_bytes`, tokens of at most 16 KiB, no caller without `sub`.
    pub fn new(audience: String, max_response_bytes: usize) -> Self {
        Common {
            audiences: vec![audience],
            client_id_as_subject: false,
            leeway: Duration::from_secs(60),
            fetch_timeout: Duration::from_secs(10),
            max_response_bytes,
            max_token_bytes: 16 * 1024,
        }
    }

    /// Refuses an empty audience and a leeway above an hour.
    pub fn check(&self) -> Result<(), AuthError> {
        if self.audiences.iter().any(String::is_empty) {
            return Err(AuthError::misconfigured("an audience is empty"));
        }
        if self.leeway > Duration::from_secs(3600) {
            return Err(AuthError::misconfigured(
                "a clock leeway above 1 hour would accept long-expired tokens",
            ));
        }
        Ok(())
    }

    /// The bounds of one fetch.
    pub fn limits(&self) -> Limits {
        Limits {
            timeout: self.fetch_timeout,
            max_bytes: self.max_response_bytes,
        }
    }

    /// A fetcher within [`limits`](Self::limits).
    pub fn fetcher(&self) -> Result<Fetcher, AuthError> {
        Fetcher::new(self.limits()).map_err(AuthError::misconfigured)
    }
}
