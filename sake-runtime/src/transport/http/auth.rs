//! Authorization over HTTP (feature `auth`): the bearer token of every request checked before
//! its body is read, the principal handed on in the request's extensions, and the protected
//! resource metadata served at its well-known URIs (RFC 9728, RFC 6750; the MCP
//! Authorization page of 2025-06-18 and later).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Body;
#[cfg(feature = "auth-proxy")]
use axum::extract::State;
use axum::response::Response;
use http::header::{CACHE_CONTROL, CONTENT_TYPE};
use http::{HeaderMap, HeaderValue, StatusCode};

use super::{Endpoint, sse};
use crate::auth::request::Refusal;
use crate::auth::{AuthError, Authorization};
use crate::protocol::headers::CorsHeaders;
use crate::protocol::jsonrpc::{self, RpcError, code};

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
    let client = extensions
        .get::<super::PeerAddr>()
        .map(|peer| crate::limits::client_network(peer.ip, ep.http.limits.ipv6_client_prefix));
    match auth.authenticate_request(method, headers, client).await {
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
            // The reason may quote the token's header (a `kid`): clipped.
            tracing::debug!(reason = %jsonrpc::Logged(&e), "a bearer token was refused");
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
/// reach, or every introspection slot is taken); the caller may retry. Logged, since the
/// deployment needs attention, but at most once per [`UNAVAILABLE_LOGGED_EVERY`] with the
/// count since: a flood of made-up tokens does not flood the log too. The client gets one
/// stable message; what failed (an endpoint, its answer) stays in the log.
fn unavailable(e: &AuthError) -> Response {
    static LOG: Throttle = Throttle::new();
    if let Some(count) = LOG.admit(UNAVAILABLE_LOGGED_EVERY) {
        tracing::warn!(error = %e, refused = count, "a bearer token could not be checked (answered 503; further ones are counted and logged at most every 10 s)");
    }
    super::sse::error(
        None,
        &RpcError::new(
            code::TRANSPORT_REFUSED,
            "Service Unavailable: the bearer token could not be checked right now; retry shortly",
        )
        .with_status(503),
    )
}

/// How often a 503 for a token that could not be checked is logged at most.
const UNAVAILABLE_LOGGED_EVERY: Duration = Duration::from_secs(10);

/// Lets one event in per interval and counts the others.
struct Throttle {
    /// Events since the last one let in, that one included.
    count: AtomicU64,
    /// When one was last let in (milliseconds since `EPOCH`), or `u64::MAX` if never.
    last_ms: AtomicU64,
}

impl Throttle {
    const fn new() -> Self {
        Throttle {
            count: AtomicU64::new(0),
            last_ms: AtomicU64::new(u64::MAX),
        }
    }

    /// Counts one event; `Some(n)` (the events since the last one let in) when `every` has
    /// passed since then.
    fn admit(&self, every: Duration) -> Option<u64> {
        static EPOCH: OnceLock<Instant> = OnceLock::new();
        let now = u64::try_from(EPOCH.get_or_init(Instant::now).elapsed().as_millis())
            .unwrap_or(u64::MAX - 1);
        self.count.fetch_add(1, Ordering::Relaxed);
        let last = self.last_ms.load(Ordering::Relaxed);
        let every = u64::try_from(every.as_millis()).unwrap_or(u64::MAX);
        if last != u64::MAX && now.saturating_sub(last) < every {
            return None;
        }
        // One caller wins the interval.
        self.last_ms
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .ok()?;
        Some(self.count.swap(0, Ordering::Relaxed))
    }
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
    //
    // A body posted to it (registration, token, consent) is read here as an MCP body is: in a
    // reading slot of its client's `max_bodies_per_client` and of `max_bodies_in_flight`,
    // within `body_timeout` and at `min_body_rate`, and at most the endpoint's own small size.
    #[cfg(feature = "auth-proxy")]
    if let Some(proxy) = &auth.proxy {
        let service = proxy.router();
        for path in proxy.paths() {
            let service = service.clone();
            let limit = crate::auth::proxy::max_body(&path);
            router = router.route(
                &path,
                axum::routing::any(
                    move |State(ep): State<Arc<Endpoint>>, request: axum::extract::Request| {
                        let service = service.clone();
                        async move {
                            use tower::ServiceExt as _;
                            let (mut parts, body) = request.into_parts();
                            if let Some(peer) = super::peer(&ep.http, &parts) {
                                parts.extensions.insert(crate::auth::proxy::ClientAddr(
                                    peer.ip,
                                    ep.http.limits.ipv6_client_prefix,
                                ));
                            }
                            let body = if parts.method == http::Method::POST {
                                match read_proxy_body(&ep, &mut parts, body, limit).await {
                                    Ok(b) => Body::from(b),
                                    Err(e) => return proxy_refusal(&e),
                                }
                            } else {
                                body
                            };
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
                    CorsHeaders::ORIGIN_ONLY.allow_any_origin(h);
                    *resp.status_mut() = StatusCode::OK;
                    resp
                }
            }),
        );
    }
    router
}

/// Reads a body posted to the authorization proxy through the MCP bodies' budgets: a reading
/// slot of its client address, at most `limit` bytes, in time.
#[cfg(feature = "auth-proxy")]
async fn read_proxy_body(
    ep: &Endpoint,
    parts: &mut http::request::Parts,
    body: Body,
    limit: usize,
) -> Result<bytes::Bytes, crate::RpcError> {
    super::note_peer(&ep.http, parts);
    let declared = parts
        .headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > limit as u64) {
        return Err(super::admission::too_large(limit));
    }
    let caller = ep.engine.caller_key(&parts.extensions);
    // Taken before the body is read, as for an MCP request with a token to check.
    let reading = ep.reading_slot(caller)?;
    let mut arriving = super::Arriving {
        ep,
        caller,
        flight: None,
        reading: Some(reading),
    };
    super::read_body(&ep.http, body, declared, limit, &mut arriving).await
}

/// The authorization proxy's answer to a body refused by the budgets: the status the budget
/// names (413, 408, 429, 503) with an OAuth error (RFC 6749 section 5.2).
#[cfg(feature = "auth-proxy")]
fn proxy_refusal(e: &crate::RpcError) -> Response {
    let status = StatusCode::from_u16(e.status()).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
    let code = match status {
        StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE => {
            "temporarily_unavailable"
        }
        _ => "invalid_request",
    };
    let body = serde_json::json!({"error": code, "error_description": e.message});
    let mut resp = Response::new(Body::from(body.to_string()));
    *resp.status_mut() = status;
    let h = resp.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    CorsHeaders::ORIGIN_ONLY.allow_any_origin(h);
    if matches!(
        status,
        StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE
    ) {
        h.insert(http::header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_throttle_lets_one_in_per_interval_and_counts_the_rest() {
        let t = Throttle::new();
        assert_eq!(t.admit(Duration::from_secs(3600)), Some(1));
        for _ in 0..1000 {
            assert_eq!(t.admit(Duration::from_secs(3600)), None);
        }
        // Once the interval passed, the next one is let in with the count since.
        assert_eq!(t.admit(Duration::ZERO), Some(1001));
        assert_eq!(t.admit(Duration::ZERO), Some(1));
    }
}
