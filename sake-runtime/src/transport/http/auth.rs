//! Authorization over HTTP (feature `auth`): the bearer token of every request checked before
//! its body is read, the principal handed on in the request's extensions, and the protected
//! resource metadata served at its well-known URIs (RFC 9728, RFC 6750; the MCP
//! Authorization page of 2025-06-18 and later).

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::response::Response;
use http::header::{ACCESS_CONTROL_ALLOW_ORIGIN, AUTHORIZATION, CACHE_CONTROL, CONTENT_TYPE};
use http::{HeaderMap, HeaderValue, StatusCode};

use super::{Endpoint, sse};
use crate::auth::{AuthError, Authorization};
use crate::protocol::jsonrpc::{RpcError, code};

/// What the `Authorization` header of a request says.
enum Credentials<'h> {
    /// No bearer token (no header, or another scheme).
    None,
    /// A bearer token.
    Bearer(&'h str),
    /// More than one header, or `Bearer` without a token: a malformed request.
    Malformed(&'static str),
}

fn credentials(headers: &HeaderMap) -> Credentials<'_> {
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
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Credentials::None;
    }
    let token = rest.trim();
    if token.is_empty() || token.contains(' ') {
        return Credentials::Malformed("`Authorization: Bearer` needs exactly one token");
    }
    Credentials::Bearer(token)
}

/// Checks the request's bearer token and puts the verified [`Principal`] into its
/// extensions. The refusal is the response to send: 401 with a challenge for a missing or
/// refused token, 400 for a malformed header, 503 when the token could not be checked.
pub(crate) async fn authenticate(
    ep: &Endpoint,
    headers: &HeaderMap,
    extensions: &mut http::Extensions,
) -> Result<(), Response> {
    let Some(auth) = &ep.auth else {
        return Ok(());
    };
    match credentials(headers) {
        Credentials::None if auth.anonymous => Ok(()),
        Credentials::None => Err(sse::error(None, &auth.unauthenticated("this server", &[]))),
        Credentials::Malformed(why) => Err(sse::error(
            None,
            &RpcError::new(code::TRANSPORT_REFUSED, format!("Bad Request: {why}")).with_status(400),
        )),
        Credentials::Bearer(token) => match auth.verifier.verify(token).await {
            Ok(principal) => {
                extensions.insert(principal);
                Ok(())
            }
            Err(e) if e.is_token_error() => {
                tracing::debug!(reason = %e, "a bearer token was refused");
                Err(sse::error(None, &auth.invalid_token(&e)))
            }
            Err(e) => Err(unavailable(&e)),
        },
    }
}

/// 503: the token could not be checked (the authorization server or its keys are out of
/// reach); the caller may retry. Logged: the deployment needs attention.
fn unavailable(e: &AuthError) -> Response {
    tracing::warn!(error = %e, "a bearer token could not be checked");
    super::sse::error(
        None,
        &RpcError::new(
            code::TRANSPORT_REFUSED,
            "Service Unavailable: the bearer token could not be checked right now; retry shortly",
        )
        .with_status(503),
    )
}

/// The protected resource metadata, at the path-inserted well-known URI of the resource and
/// at the root form. Public, cacheable, readable from any origin (browser clients discover
/// it too).
pub(crate) fn metadata_routes<S: Clone + Send + Sync + 'static>(
    auth: &Arc<Authorization>,
) -> Router<S> {
    let doc = serde_json::to_vec(&auth.metadata()).unwrap_or_default();
    let doc = bytes::Bytes::from(doc);
    let mut router = Router::new();
    for path in auth.metadata_paths() {
        let doc = doc.clone();
        router = router.route(
            &path,
            axum::routing::get(move || {
                let doc = doc.clone();
                async move {
                    let mut resp = Response::new(Body::from(doc));
                    let h = resp.headers_mut();
                    h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
                    h.insert(
                        CACHE_CONTROL,
                        HeaderValue::from_static("public, max-age=300"),
                    );
                    h.insert(ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
                    *resp.status_mut() = StatusCode::OK;
                    resp
                }
            }),
        );
    }
    router
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(values: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for v in values {
            h.append(AUTHORIZATION, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn the_authorization_header_is_read_as_rfc_6750_says() {
        assert!(matches!(credentials(&headers(&[])), Credentials::None));
        assert!(matches!(
            credentials(&headers(&["Basic YWxhZGRpbjpvcGVuc2VzYW1l"])),
            Credentials::None
        ));
        assert!(matches!(
            credentials(&headers(&["Bearer abc.def"])),
            Credentials::Bearer("abc.def")
        ));
        assert!(matches!(
            credentials(&headers(&["bearer   abc"])),
            Credentials::Bearer("abc")
        ));
        assert!(matches!(
            credentials(&headers(&["Bearer"])),
            Credentials::Malformed(_)
        ));
        assert!(matches!(
            credentials(&headers(&["Bearer a b"])),
            Credentials::Malformed(_)
        ));
        assert!(matches!(
            credentials(&headers(&["Bearer a", "Bearer b"])),
            Credentials::Malformed(_)
        ));
    }
}
