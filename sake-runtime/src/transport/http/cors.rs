//! CORS for browser-based hosts and inspectors: a page on a named origin may call the MCP
//! endpoint (its preflight answered for the MCP headers, the responses readable with
//! `Mcp-Session-Id` and `WWW-Authenticate` exposed); every other origin gets no grant, and the
//! endpoint's DNS-rebinding check still refuses a foreign one with 403.
//!
//! The headers themselves are written by `protocol::headers::CorsHeaders`, as for every
//! answer sake lets any page read (metadata, server cards, the authorization proxy).
//!
//! [`Cors`] is a tower [`Layer`](tower::Layer): `Server::cors` puts it around the endpoint's
//! router, and an application can put it around routes of its own.

use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use http::header::{ACCESS_CONTROL_REQUEST_HEADERS, ACCESS_CONTROL_REQUEST_METHOD, ORIGIN, VARY};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, StatusCode};

use crate::protocol::headers::{CorsHeaders, PARAM_PREFIX};
use crate::protocol::jsonrpc::{self, RpcError};

/// The request headers an MCP client sends that a preflight must allow (besides the
/// CORS-safelisted ones), as the transport spells them; the `Mcp-Param-*` headers of a tool's
/// arguments are allowed too, whatever their names.
pub const ALLOWED_HEADERS: [&str; 8] = [
    "Content-Type",
    "Accept",
    "Authorization",
    "Mcp-Session-Id",
    "MCP-Protocol-Version",
    "Mcp-Method",
    "Mcp-Name",
    "Last-Event-ID",
];

/// The response headers a page may read: the session id, the authorization challenge, and
/// how long to wait when the server is busy.
pub const EXPOSED_HEADERS: &str = "Mcp-Session-Id, WWW-Authenticate, Retry-After";

/// The methods of the endpoint.
const METHODS: &str = "GET, POST, DELETE";

/// How long a browser may cache a preflight, by default.
const DEFAULT_MAX_AGE: Duration = Duration::from_secs(600);

/// Cross-origin access for browser pages on named origins (`http://localhost:6274`, the MCP
/// Inspector; `https://app.example.com`, a web host).
///
/// ```no_run
/// # async fn run() -> Result<(), sake::Error> {
/// sake::Server::from_registry()
///     .cors(sake::Cors::new(["http://localhost:6274"]))
///     .serve_http("127.0.0.1:3000")
///     .await
/// # }
/// ```
///
/// Each origin is `scheme://host[:port]`, exactly as a browser sends it in `Origin`. An
/// origin not named gets no `Access-Control-Allow-Origin`, so its page cannot read any
/// answer; a preflight from it gets 403.
#[derive(Clone, Debug)]
pub struct Cors {
    origins: Vec<String>,
    headers: Vec<HeaderName>,
    max_age: Duration,
}

impl Cors {
    /// Grants these origins.
    pub fn new<I, S>(origins: I) -> Cors
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Cors {
            origins: origins.into_iter().map(|o| normalize(&o.into())).collect(),
            headers: Vec::new(),
            max_age: DEFAULT_MAX_AGE,
        }
    }

    /// Allows more request headers than the MCP ones (a gateway's API key, say).
    pub fn allow_headers<I>(mut self, headers: I) -> Cors
    where
        I: IntoIterator<Item = HeaderName>,
    {
        self.headers.extend(headers);
        self
    }

    /// How long a browser may reuse a preflight's answer (`Access-Control-Max-Age`; 600 s by
    /// default).
    pub fn max_age(mut self, max_age: Duration) -> Cors {
        self.max_age = max_age;
        self
    }

    /// The origins granted, normalized (lowercase, no trailing `/`).
    pub fn origins(&self) -> &[String] {
        &self.origins
    }

    /// Checks the origins: each must be `http(s)://host[:port]`, without a wildcard, path or
    /// anything a browser would not send in `Origin`.
    pub(crate) fn check(&self) -> Result<(), String> {
        for origin in &self.origins {
            let bad = |why: &dyn std::fmt::Display| {
                format!(
                    "Server::cors: {origin:?} is not an origin a browser sends ({why}); write scheme://host[:port], such as \"http://localhost:6274\""
                )
            };
            if !(origin.starts_with("http://") || origin.starts_with("https://")) {
                return Err(bad(&"it is not http:// or https://"));
            }
            if origin.contains('*') {
                return Err(bad(&"wildcards are not allowed: name each origin"));
            }
            sake_rules::apps::check_origin(origin).map_err(|e| bad(&e))?;
        }
        Ok(())
    }

    fn grants(&self, origin: &str) -> bool {
        self.origins.iter().any(|o| *o == normalize(origin))
    }

    /// The answer to a preflight from `origin`: 204 with the grants, or 403.
    fn preflight(&self, origin: &HeaderValue, headers: &HeaderMap) -> Response {
        let Some(origin_str) = origin.to_str().ok().filter(|o| self.grants(o)) else {
            let message = format!(
                "Forbidden: Origin {:?} may not call this server from a browser; add it to Server::cors",
                String::from_utf8_lossy(origin.as_bytes())
            );
            let mut resp = Response::new(Body::from(jsonrpc::error_bytes(
                None,
                &RpcError::new(jsonrpc::code::TRANSPORT_REFUSED, message),
            )));
            *resp.status_mut() = StatusCode::FORBIDDEN;
            let h = resp.headers_mut();
            h.insert(
                http::header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            h.insert(VARY, HeaderValue::from_static(VARY_PREFLIGHT));
            return resp;
        };
        let _ = origin_str;
        let mut allowed: Vec<String> = ALLOWED_HEADERS.iter().map(|h| (*h).to_owned()).collect();
        allowed.extend(self.headers.iter().map(|h| h.as_str().to_owned()));
        // The tool's `Mcp-Param-*` headers, echoed as asked (they are the arguments' own).
        for requested in headers
            .get_all(ACCESS_CONTROL_REQUEST_HEADERS)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(str::trim)
        {
            let is_param = requested.len() > PARAM_PREFIX.len()
                && requested[..PARAM_PREFIX.len()].eq_ignore_ascii_case(PARAM_PREFIX);
            if is_param && HeaderName::from_bytes(requested.as_bytes()).is_ok() {
                allowed.push(requested.to_owned());
            }
        }
        let mut resp = Response::new(Body::empty());
        *resp.status_mut() = StatusCode::NO_CONTENT;
        let h = resp.headers_mut();
        CorsHeaders {
            methods: Some(METHODS),
            allow_headers: Some(&allowed.join(", ")),
            expose: None,
            max_age: Some(self.max_age.as_secs()),
        }
        .allow_origin(origin.clone(), h);
        h.insert(VARY, HeaderValue::from_static(VARY_PREFLIGHT));
        resp
    }

    /// Adds the grants to the response of an actual request from `origin`.
    fn grant(&self, origin: Option<&HeaderValue>, headers: &mut HeaderMap) {
        // Whatever the origin: the answer differs by origin, and a cache must know.
        headers.append(VARY, HeaderValue::from_static("Origin"));
        if let Some(origin) = origin.filter(|o| o.to_str().is_ok_and(|o| self.grants(o))) {
            CorsHeaders {
                expose: Some(EXPOSED_HEADERS),
                ..CorsHeaders::ORIGIN_ONLY
            }
            .allow_origin(origin.clone(), headers);
        }
    }
}

const VARY_PREFLIGHT: &str =
    "Origin, Access-Control-Request-Method, Access-Control-Request-Headers";

/// An origin as compared: lowercase, without a trailing `/`.
fn normalize(origin: &str) -> String {
    origin.trim().trim_end_matches('/').to_ascii_lowercase()
}

impl<S> tower::Layer<S> for Cors {
    type Service = CorsService<S>;

    fn layer(&self, inner: S) -> CorsService<S> {
        CorsService {
            inner,
            cors: Arc::new(self.clone()),
        }
    }
}

/// The service [`Cors`] wraps around another.
#[derive(Clone, Debug)]
pub struct CorsService<S> {
    inner: S,
    cors: Arc<Cors>,
}

impl<S> tower::Service<Request<Body>> for CorsService<S>
where
    S: tower::Service<Request<Body>, Response = Response> + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
{
    type Response = Response;
    type Error = S::Error;
    type Future = crate::handler::BoxFuture<Result<Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let origin = request.headers().get(ORIGIN).cloned();
        let Some(origin) = origin else {
            return Box::pin(self.inner.call(request));
        };
        if request.method() == Method::OPTIONS
            && request
                .headers()
                .contains_key(ACCESS_CONTROL_REQUEST_METHOD)
        {
            let resp = self.cors.preflight(&origin, request.headers());
            return Box::pin(std::future::ready(Ok(resp)));
        }
        let cors = self.cors.clone();
        let fut = self.inner.call(request);
        Box::pin(async move {
            let mut resp = fut.await?;
            cors.grant(Some(&origin), resp.headers_mut());
            Ok(resp)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower::{Layer as _, ServiceExt as _};

    async fn echo(_: Request<Body>) -> Result<Response, std::convert::Infallible> {
        let mut resp = Response::new(Body::from("ok"));
        resp.headers_mut()
            .insert("mcp-session-id", HeaderValue::from_static("s1"));
        Ok(resp)
    }

    fn service() -> impl tower::Service<
        Request<Body>,
        Response = Response,
        Error = std::convert::Infallible,
        Future = crate::handler::BoxFuture<Result<Response, std::convert::Infallible>>,
    > {
        Cors::new(["http://LOCALHOST:6274/"]).layer(tower::service_fn(echo))
    }

    fn request(method: &str, headers: &[(&str, &str)]) -> Request<Body> {
        let mut r = Request::builder().method(method).uri("/mcp");
        for (k, v) in headers {
            r = r.header(*k, *v);
        }
        r.body(Body::empty()).unwrap()
    }

    fn header<'a>(resp: &'a Response, name: &str) -> Option<&'a str> {
        resp.headers().get(name).map(|v| v.to_str().unwrap())
    }

    #[tokio::test]
    async fn a_named_origins_preflight_is_granted_with_the_mcp_headers() {
        let resp = service()
            .oneshot(request(
                "OPTIONS",
                &[
                    ("origin", "http://localhost:6274"),
                    ("access-control-request-method", "POST"),
                    (
                        "access-control-request-headers",
                        "content-type,mcp-method,mcp-name,mcp-param-region, X-Other",
                    ),
                ],
            ))
            .await
            .unwrap();
        assert_eq!(resp.status(), 204);
        assert_eq!(
            header(&resp, "access-control-allow-origin"),
            Some("http://localhost:6274")
        );
        assert_eq!(
            header(&resp, "access-control-allow-methods"),
            Some("GET, POST, DELETE")
        );
        assert_eq!(
            header(&resp, "access-control-allow-headers"),
            Some(
                "Content-Type, Accept, Authorization, Mcp-Session-Id, MCP-Protocol-Version, Mcp-Method, Mcp-Name, Last-Event-ID, mcp-param-region"
            )
        );
        assert_eq!(header(&resp, "access-control-max-age"), Some("600"));
        assert_eq!(
            header(&resp, "vary"),
            Some("Origin, Access-Control-Request-Method, Access-Control-Request-Headers")
        );
    }

    #[tokio::test]
    async fn another_origins_preflight_is_refused() {
        let resp = service()
            .oneshot(request(
                "OPTIONS",
                &[
                    ("origin", "http://localhost:5173"),
                    ("access-control-request-method", "POST"),
                ],
            ))
            .await
            .unwrap();
        assert_eq!(resp.status(), 403);
        assert_eq!(header(&resp, "access-control-allow-origin"), None);
        let body = axum::body::to_bytes(resp.into_body(), usize::MAX)
            .await
            .unwrap();
        let body: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            body["error"]["message"],
            "Forbidden: Origin \"http://localhost:5173\" may not call this server from a browser; add it to Server::cors"
        );
    }

    #[tokio::test]
    async fn answers_to_a_named_origin_are_readable_and_others_are_not() {
        let resp = service()
            .oneshot(request("POST", &[("origin", "http://localhost:6274")]))
            .await
            .unwrap();
        assert_eq!(
            header(&resp, "access-control-allow-origin"),
            Some("http://localhost:6274")
        );
        assert_eq!(
            header(&resp, "access-control-expose-headers"),
            Some("Mcp-Session-Id, WWW-Authenticate, Retry-After")
        );
        assert_eq!(header(&resp, "vary"), Some("Origin"));
        let resp = service()
            .oneshot(request("POST", &[("origin", "http://127.0.0.1:6274")]))
            .await
            .unwrap();
        assert_eq!(header(&resp, "access-control-allow-origin"), None);
        assert_eq!(header(&resp, "access-control-expose-headers"), None);
        assert_eq!(header(&resp, "vary"), Some("Origin"));
        // No Origin (not a browser, or same-origin): untouched.
        let resp = service().oneshot(request("POST", &[])).await.unwrap();
        assert_eq!(header(&resp, "vary"), None);
        assert_eq!(header(&resp, "mcp-session-id"), Some("s1"));
    }

    #[test]
    fn origins_are_checked() {
        assert_eq!(Cors::new(["http://localhost:6274"]).check(), Ok(()));
        assert_eq!(Cors::new(["https://App.Example.com/"]).check(), Ok(()));
        for (bad, why) in [
            ("localhost:6274", "it is not http:// or https://"),
            ("https://*.example.com", "wildcards are not allowed"),
            ("https://a.example/path", "path"),
            ("null", "it is not http://"),
        ] {
            let e = Cors::new([bad]).check().unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }
}
