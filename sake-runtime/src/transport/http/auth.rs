//! Authorization over HTTP (feature `auth`): the bearer token of every request checked before
//! its body is read, the principal handed on in the request's extensions, and the protected
//! resource metadata served at its well-known URIs (RFC 9728, RFC 6750; the MCP
//! Authorization page of 2025-06-18 and later).

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
#[cfg(feature = "auth-proxy")]
use axum::extract::State;
use axum::response::Response;
use http::header::{ACCESS_CONTROL_ALLOW_ORIGIN, CACHE_CONTROL, CONTENT_TYPE};
use http::{HeaderMap, HeaderValue, StatusCode};

use super::{Endpoint, sse};
use crate::auth::request::Refusal;
use crate::auth::{AuthError, Authorization};
use crate::protocol::jsonrpc::{RpcError, code};

/// Checks the request's credentials (`auth::request`: Bearer, or DPoP with its proof) and
/// puts the verified [`Principal`] into its extensions. The refusal is the response to send:
/// 401 with a challenge for a missing or refused token or proof, 400 for a malformed header,
/// 503 when the token could not be checked.
pub(crate) async fn authenticate(
    ep: &Endpoint,
    method: &http::Method,
    headers: &HeaderMap,
    extensions: &mut http::Extensions,
) -> Result<(), Response> {
    let Some(auth) = &ep.auth else {
        return Ok(());
    };
    match auth.authenticate_request(method, headers).await {
        Ok(Some(principal)) => {
            extensions.insert(principal);
            Ok(())
        }
        Ok(None) => Ok(()),
        Err(Refusal::Missing) => Err(sse::error(None, &auth.unauthenticated("this server", &[]))),
        Err(Refusal::Malformed(why)) => Err(sse::error(
            None,
            &RpcError::new(code::TRANSPORT_REFUSED, format!("Bad Request: {why}")).with_status(400),
        )),
        Err(Refusal::Token(e)) => {
            tracing::debug!(reason = %e, "a bearer token was refused");
            Err(sse::error(None, &auth.invalid_token(&e)))
        }
        Err(Refusal::Dpop(e)) => {
            tracing::debug!(reason = e.reason(), "a DPoP proof was refused");
            let (error, nonce) = auth.dpop_refusal(&e);
            let mut resp = sse::error(None, &error);
            if let Some(n) = nonce.and_then(|n| HeaderValue::from_str(&n).ok()) {
                resp.headers_mut().insert("dpop-nonce", n);
            }
            Err(resp)
        }
        Err(Refusal::Unavailable(e)) => Err(unavailable(&e)),
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
pub(crate) fn metadata_routes(auth: &Arc<Authorization>) -> Router<Arc<Endpoint>> {
    let doc = serde_json::to_vec(&auth.metadata()).unwrap_or_default();
    let doc = bytes::Bytes::from(doc);
    let mut router = Router::new();
    // The authorization proxy, on the same origin (feature `auth-proxy`), told each request's
    // client address as admission finds it (the peer, or the trusted proxy's header): its
    // sign-ins under way are bounded per address.
    #[cfg(feature = "auth-proxy")]
    if let Some(proxy) = &auth.proxy {
        let service = proxy.router();
        for path in proxy.paths() {
            let service = service.clone();
            router = router.route(
                &path,
                axum::routing::any(
                    move |State(ep): State<Arc<Endpoint>>, request: axum::extract::Request| {
                        let service = service.clone();
                        async move {
                            use tower::ServiceExt as _;
                            let (mut parts, body) = request.into_parts();
                            if let Some(peer) = super::peer(&ep.http, &parts) {
                                parts
                                    .extensions
                                    .insert(crate::auth::proxy::ClientAddr(peer.0));
                            }
                            let request = axum::extract::Request::from_parts(parts, body);
                            match service.oneshot(request).await {
                                Ok(response) => response,
                                Err(never) => match never {},
                            }
                        }
                    },
                ),
            );
        }
    }
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
