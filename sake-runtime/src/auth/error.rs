//! Why a token was not accepted.

/// Why a bearer token was not turned into a [`Principal`](super::Principal).
///
/// Two kinds, told apart by [`AuthError::is_token_error`]:
///
/// - the token's fault ([`InvalidToken`](Self::InvalidToken), [`Expired`](Self::Expired),
///   [`WrongAudience`](Self::WrongAudience), [`WrongIssuer`](Self::WrongIssuer),
///   [`UnusableAlgorithm`](Self::UnusableAlgorithm), [`UnknownKey`](Self::UnknownKey)): the
///   request gets `401` with `error="invalid_token"` (RFC 6750 section 3.1);
/// - the server's ([`Unavailable`](Self::Unavailable), [`Misconfigured`](Self::Misconfigured)):
///   the token could not be checked at all, so the caller is not told its token is bad; the
///   request gets `503` (or `500`), and the client may retry.
///
/// Messages name what is wrong in words a person can act on, and never contain the token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// The token is malformed, its signature does not verify, a required claim is missing or
    /// has the wrong type, it is not valid yet, or the authorization server reports it
    /// inactive.
    #[error("invalid token: {reason}")]
    InvalidToken {
        /// What is wrong with it.
        reason: String,
    },
    /// The token's `exp` has passed (beyond the configured clock leeway).
    #[error("the token expired")]
    Expired,
    /// The token was issued for another resource: its `aud` does not name this one (RFC 8707).
    #[error("the token is not meant for this resource: {reason}")]
    WrongAudience {
        /// Which audience it names and which was expected.
        reason: String,
    },
    /// The token was issued by another authorization server than the one trusted.
    #[error("the token comes from an untrusted issuer: {reason}")]
    WrongIssuer {
        /// Which issuer it names and which was expected.
        reason: String,
    },
    /// The token's signing algorithm is not accepted (`none`, a symmetric algorithm without a
    /// configured secret, an algorithm outside the configured list), or does not belong to
    /// the family of the key it names.
    #[error("the token's algorithm {alg:?} is not accepted: {reason}")]
    UnusableAlgorithm {
        /// The `alg` of the token's header.
        alg: String,
        /// Why it is not accepted.
        reason: String,
    },
    /// The token names a key (`kid`) the issuer does not publish, even after its key set was
    /// fetched again; or it names none and no published key of its algorithm verifies it.
    #[error("the token was signed with an unknown key{}", match kid {
        Some(kid) => format!(" ({kid:?})"),
        None => String::new(),
    })]
    UnknownKey {
        /// The `kid` of the token's header, if it has one.
        kid: Option<String>,
    },
    /// The token could not be checked now: the authorization server's metadata, key set or
    /// introspection endpoint is unreachable, slow, or answers with an error. Not the
    /// caller's fault; a later attempt may succeed.
    #[error("the token cannot be checked now: {reason}")]
    Unavailable {
        /// What failed.
        reason: String,
    },
    /// The verifier's configuration does not work with the authorization server: its
    /// metadata names another issuer, publishes no key set, or refuses the resource server's
    /// credentials; or the configuration itself is invalid.
    #[error("authorization is misconfigured: {reason}")]
    Misconfigured {
        /// What does not fit.
        reason: String,
    },
}

impl AuthError {
    /// Whether the token itself was refused (`401`, `error="invalid_token"`), rather than
    /// not checked because of the server's side (`503`/`500`).
    pub fn is_token_error(&self) -> bool {
        !matches!(self, Self::Unavailable { .. } | Self::Misconfigured { .. })
    }

    pub(crate) fn invalid(reason: impl Into<String>) -> Self {
        Self::InvalidToken {
            reason: reason.into(),
        }
    }

    pub(crate) fn unavailable(reason: impl Into<String>) -> Self {
        Self::Unavailable {
            reason: reason.into(),
        }
    }

    pub(crate) fn misconfigured(reason: impl Into<String>) -> Self {
        Self::Misconfigured {
            reason: reason.into(),
        }
    }
}
