//! Who an HTTP request comes from: its `Authorization` header (RFC 6750 `Bearer`, RFC 9449
//! `DPoP` with its proof) turned into a [`Principal`], or the reason to refuse it. The transport
//! calls [`Authorization::authenticate_request`] before reading a body and turns a refusal into
//! its response.

use http::header::AUTHORIZATION;
use http::{HeaderMap, Method};

use super::dpop::{DpopError, bound_key};
use super::{AuthError, Authorization, Principal};
use crate::protocol::jsonrpc::RpcError;

/// What the `Authorization` header of a request says.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Credentials<'h> {
    /// No token (no header, or another scheme).
    None,
    /// A bearer token.
    Bearer(&'h str),
    /// A DPoP-bound token (its proof is in the `DPoP` header).
    Dpop(&'h str),
    /// More than one header, or a scheme without exactly one token: a malformed request.
    Malformed(&'static str),
}

pub(crate) fn credentials(headers: &HeaderMap) -> Credentials<'_> {
    let mut values = headers.get_all(AUTHORIZATION).iter();
    let Some(value) = values.next() else {
        return Credentials::None;
    };
    if values.next().is_some() {
        return Credentials::Malformed("more than one Authorization header");
    }
    let Ok(value) = value.to_str() else {
        return Credentials::Malformed("the Authorization header is not visible ASCII");
    };
    let value = value.trim();
    let (scheme, rest) = value.split_once(' ').unwrap_or((value, ""));
    let dpop = scheme.eq_ignore_ascii_case("dpop");
    if !scheme.eq_ignore_ascii_case("bearer") && !dpop {
        return Credentials::None;
    }
    let token = rest.trim();
    if token.is_empty() || token.contains(' ') {
        return Credentials::Malformed(if dpop {
            "`Authorization: DPoP` needs exactly one token"
        } else {
            "`Authorization: Bearer` needs exactly one token"
        });
    }
    if dpop {
        Credentials::Dpop(token)
    } else {
        Credentials::Bearer(token)
    }
}

/// Why a request is not let in.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// No token: the `401` challenge.
    Missing,
    /// A malformed `Authorization` header: `400`.
    Malformed(&'static str),
    /// The token was refused: `401 invalid_token`.
    Token(AuthError),
    /// The DPoP proof was refused: `401` with a `DPoP` challenge (and a nonce to use).
    Dpop(DpopError),
    /// The token could not be checked now: `503`.
    Unavailable(AuthError),
}

impl Authorization {
    /// Checks the credentials of a `method` request with `headers`: the principal, `None` for
    /// an anonymous caller (when allowed), or the refusal. A token bound to a key (`cnf`) is
    /// accepted only with the `DPoP` scheme and a valid proof for this request.
    ///
    /// `client` is the caller's network (its address, or its IPv6 prefix), when known: a
    /// token check and a DPoP proof count against its share (introspection slots, the replay
    /// cache).
    pub(crate) async fn authenticate_request(
        &self,
        method: &Method,
        headers: &HeaderMap,
        client: Option<std::net::IpAddr>,
    ) -> Result<Option<Principal>, Refusal> {
        let (token, dpop) = match credentials(headers) {
            Credentials::None if self.anonymous => return Ok(None),
            Credentials::None => return Err(Refusal::Missing),
            Credentials::Malformed(why) => return Err(Refusal::Malformed(why)),
            Credentials::Bearer(t) => (t, false),
            Credentials::Dpop(t) => (t, true),
        };
        let principal = match super::client::checking_for(client, self.verifier.verify(token)).await
        {
            Ok(p) => p,
            Err(e) if e.is_token_error() => return Err(Refusal::Token(e)),
            Err(e) => return Err(Refusal::Unavailable(e)),
        };
        let bound = bound_key(principal.claims())
            .map_err(|r| Refusal::Token(AuthError::invalid(r)))?
            .map(str::to_owned);
        if !dpop {
            if bound.is_some() {
                return Err(Refusal::Token(AuthError::invalid(
                    "it is bound to a DPoP key: send it with `Authorization: DPoP` and a DPoP proof",
                )));
            }
            if self.dpop_required {
                return Err(Refusal::Token(AuthError::invalid(
                    "this server accepts only DPoP-bound tokens",
                )));
            }
            return Ok(Some(principal));
        }
        let Some(bound) = bound else {
            return Err(Refusal::Token(AuthError::invalid(
                "it is not bound to a DPoP key (no cnf.jkt): send it with `Authorization: Bearer`",
            )));
        };
        let mut proofs = headers.get_all("dpop").iter();
        let proof = match (proofs.next(), proofs.next()) {
            (Some(p), None) => p.to_str().map_err(|_| {
                Refusal::Dpop(DpopError::Invalid("the DPoP header is not ASCII".into()))
            })?,
            (None, _) => {
                return Err(Refusal::Dpop(DpopError::Invalid(
                    "a DPoP-bound token needs a DPoP proof (the DPoP header)".into(),
                )));
            }
            (Some(_), Some(_)) => {
                return Err(Refusal::Dpop(DpopError::Invalid(
                    "more than one DPoP header".into(),
                )));
            }
        };
        let proof = self
            .dpop
            .check(proof, method.as_str(), &self.resource, Some(token))
            .map_err(Refusal::Dpop)?
            .sent_by(client);
        if proof.jkt != bound {
            return Err(Refusal::Dpop(DpopError::Invalid(
                "the DPoP proof is signed by another key than the one the token is bound to".into(),
            )));
        }
        // Recorded only now: a proof without a valid token bound to its key never fills the
        // replay cache.
        self.dpop.record(&proof).map_err(Refusal::Dpop)?;
        Ok(Some(principal))
    }

    /// The refusal of a DPoP proof: `401` with a `DPoP` challenge, and the nonce to use when
    /// the proof needs one (the `DPoP-Nonce` header).
    pub(crate) fn dpop_refusal(&self, e: &DpopError) -> (RpcError, Option<String>) {
        let challenge = format!(
            "DPoP algs=\"{}\", error=\"{}\", error_description=\"{}\"",
            super::dpop::ALGORITHMS.join(" "),
            e.code(),
            e.reason()
                .chars()
                .filter(|c| (c.is_ascii_graphic() || *c == ' ') && *c != '"' && *c != '\\')
                .collect::<String>()
        );
        let nonce = matches!(e, DpopError::UseNonce(_)).then(|| self.dpop.nonce());
        (
            RpcError::unauthorized(
                format!("Unauthorized: the DPoP proof was refused: {}", e.reason()),
                challenge,
            ),
            nonce,
        )
    }

    /// The `DPoP` challenge added to the Bearer one when DPoP is advertised.
    pub(crate) fn dpop_challenge(&self) -> Option<String> {
        self.dpop_advertised
            .then(|| format!("DPoP algs=\"{}\"", super::dpop::ALGORITHMS.join(" ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(AUTHORIZATION, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn the_authorization_header_is_read_as_rfc_6750_and_9449_say() {
        assert_eq!(credentials(&headers(&[])), Credentials::None);
        assert_eq!(
            credentials(&headers(&["Basic YWxhZGRpbjpvcGVuc2VzYW1l"])),
            Credentials::None
        );
        assert_eq!(
            credentials(&headers(&["Bearer abc.def"])),
            Credentials::Bearer("abc.def")
        );
        assert_eq!(
            credentials(&headers(&["bearer   abc"])),
            Credentials::Bearer("abc")
        );
        assert_eq!(
            credentials(&headers(&["DPoP abc"])),
            Credentials::Dpop("abc")
        );
        assert!(matches!(
            credentials(&headers(&["Bearer"])),
            Credentials::Malformed(_)
        ));
        assert!(matches!(
            credentials(&headers(&["DPoP a b"])),
            Credentials::Malformed(_)
        ));
        assert!(matches!(
            credentials(&headers(&["Bearer a", "Bearer b"])),
            Credentials::Malformed(_)
        ));
    }
}
