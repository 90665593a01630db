//! The proxy's HTTP endpoints: metadata, keys and registration here, with what the others
//! share (answers, parameters, the browser's cookie, client addresses, the records of a
//! sign-in and a code); the browser's way (authorization, consent, the upstream callback) in
//! [`browser`]; the token endpoint and its grants in [`token`].

mod browser;
mod token;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use axum::routing::{get, post};
use base64::Engine as _;
use http::header::{
    AUTHORIZATION, CACHE_CONTROL, CONTENT_TYPE, COOKIE, LOCATION, PRAGMA, SET_COOKIE,
};
use http::{HeaderMap, HeaderValue, StatusCode};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::clients::{Kind, KnownClient, MetadataFetcher, Method};
use super::html::{self, Value as Slot};
use super::policy::UpstreamUser;
use super::store::{Bound, Insertion, ProxyStore as _};
use super::tokens::{Grant, RefreshState, grant_key, refreshing_key, s256, ttl};
use super::upstream::UpstreamError;
use super::{B64, ClientAddr, Inner, JWT_BEARER, clip, constant_eq, digest, now, random};
use crate::auth::dpop;
use crate::net::fetch::{form_decode, form_encode};
use crate::protocol::headers::CorsHeaders;

/// The largest registration (a JSON document of redirect URIs and names).
const MAX_REGISTRATION: usize = 16 * 1024;
/// The largest token request (a form; an ID-JAG assertion is its largest field).
const MAX_TOKEN_REQUEST: usize = 16 * 1024;
/// The largest consent form (an id, a token and a button).
const MAX_CONSENT: usize = 4 * 1024;
/// The longest a body may take to arrive when the routes are served without the server's
/// budgets ([`AuthProxy::router`](super::AuthProxy::router)).
const BODY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The largest body a route of the proxy takes (its path's last segment decides).
pub(crate) fn max_body(path: &str) -> usize {
    if path.ends_with("/oauth/consent") {
        MAX_CONSENT
    } else if path.ends_with("/oauth/register") {
        MAX_REGISTRATION
    } else {
        MAX_TOKEN_REQUEST
    }
}
/// The longest `state` a client may send.
const MAX_STATE: usize = 2048;
const COOKIE_NAME: &str = "sake_proxy_browser";
const SECURE_COOKIE_NAME: &str = "__Host-sake_proxy_browser";
const DPOP: &str = "dpop";

pub(crate) fn router(p: Arc<Inner>) -> Router {
    Router::new()
        .route(&well_known(&p), get(metadata))
        .route(&p.route("/oauth/jwks"), get(jwks))
        .route(
            &p.route("/oauth/register"),
            post(register).options(preflight),
        )
        .route(&p.route("/oauth/authorize"), get(browser::authorize))
        .route(&p.route("/oauth/consent"), post(browser::consent))
        .route(&p.route("/oauth/callback"), get(browser::callback))
        .route(
            &p.route("/oauth/token"),
            post(token::token).options(preflight),
        )
        .with_state(p)
}

/// Every path the proxy serves.
pub(crate) fn paths(p: &Inner) -> Vec<String> {
    let mut v = vec![well_known(p)];
    for r in [
        "jwks",
        "register",
        "authorize",
        "consent",
        "callback",
        "token",
    ] {
        v.push(p.route(&format!("/oauth/{r}")));
    }
    v
}

/// RFC 8414 section 3.1: the well-known path inserted before the issuer's path.
fn well_known(p: &Inner) -> String {
    format!("/.well-known/oauth-authorization-server{}", p.prefix)
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    let mut r = Response::new(Body::from(body.to_string()));
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    CorsHeaders::ORIGIN_ONLY.allow_any_origin(h);
    r
}

fn no_store(mut r: Response) -> Response {
    let h = r.headers_mut();
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(PRAGMA, HeaderValue::from_static("no-cache"));
    r
}

/// An OAuth error answer (RFC 6749 section 5.2).
fn oauth_error(status: StatusCode, code: &str, description: &str) -> Response {
    no_store(json_response(
        status,
        &json!({"error": code, "error_description": description}),
    ))
}

fn bad_request(code: &str, description: &str) -> Response {
    oauth_error(StatusCode::BAD_REQUEST, code, description)
}

fn page(status: StatusCode, body: String) -> Response {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    h.insert(
        http::header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    h.insert(
        http::header::X_FRAME_OPTIONS,
        HeaderValue::from_static("DENY"),
    );
    h.insert(
        http::header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(
        http::header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    no_store(r)
}

fn error_page(status: StatusCode, title: &str, message: &str) -> Response {
    page(
        status,
        html::page(
            html::ERROR,
            &[
                ("title", Slot::Text(title)),
                ("message", Slot::Text(message)),
            ],
        ),
    )
}

fn redirect(status: StatusCode, location: &str) -> Response {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = status;
    if let Ok(v) = HeaderValue::from_str(location) {
        r.headers_mut().insert(LOCATION, v);
    }
    no_store(r)
}

/// `base` with `params` added to its query.
fn with_query(base: &str, params: &[(&str, &str)]) -> String {
    let mut out = base.to_owned();
    let mut sep = if base.contains('?') { '&' } else { '?' };
    for (k, v) in params {
        out.push(sep);
        form_encode(k, &mut out);
        out.push('=');
        form_encode(v, &mut out);
        sep = '&';
    }
    out
}

/// A browser's preflight of a POST to registration or the token endpoint: any origin, with
/// the headers an OAuth client sends.
async fn preflight() -> Response {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = StatusCode::NO_CONTENT;
    CorsHeaders {
        methods: Some("POST, OPTIONS"),
        allow_headers: Some("authorization, content-type, dpop, mcp-protocol-version"),
        ..CorsHeaders::ORIGIN_ONLY
    }
    .allow_any_origin(r.headers_mut());
    r
}

async fn metadata(State(p): State<Arc<Inner>>) -> Response {
    let mut doc = json!({
        "issuer": p.issuer,
        "authorization_endpoint": p.url("/oauth/authorize"),
        "token_endpoint": p.url("/oauth/token"),
        "registration_endpoint": p.url("/oauth/register"),
        "jwks_uri": p.url("/oauth/jwks"),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": p.grant_types(),
        "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post", "none"],
        "code_challenge_methods_supported": ["S256"],
        "client_id_metadata_document_supported": true,
        "authorization_response_iss_parameter_supported": true,
        "dpop_signing_alg_values_supported": dpop::ALGORITHMS,
    });
    if !p.scopes.is_empty() {
        doc["scopes_supported"] = json!(p.scopes);
    }
    let mut r = json_response(StatusCode::OK, &doc);
    r.headers_mut().insert(
        CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=300"),
    );
    r
}

async fn jwks(State(p): State<Arc<Inner>>) -> Response {
    let mut r = json_response(StatusCode::OK, &p.keys.jwks());
    r.headers_mut().insert(
        CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=300"),
    );
    r
}

/// Reads a body of at most `max` bytes within [`BODY_TIMEOUT`] (served with the server, the
/// transport has read it already, within its budgets).
async fn read_body(body: Body, max: usize) -> Result<bytes::Bytes, Response> {
    match tokio::time::timeout(BODY_TIMEOUT, axum::body::to_bytes(body, max)).await {
        Ok(Ok(b)) => Ok(b),
        Ok(Err(_)) => Err(oauth_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            "invalid_request",
            &format!("the body is larger than {max} bytes"),
        )),
        Err(_) => Err(oauth_error(
            StatusCode::REQUEST_TIMEOUT,
            "invalid_request",
            &format!(
                "the body did not arrive within {} s",
                BODY_TIMEOUT.as_secs()
            ),
        )),
    }
}

async fn register(State(p): State<Arc<Inner>>, request: Request) -> Response {
    let body = match read_body(request.into_body(), MAX_REGISTRATION).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let req = match serde_json::from_slice(&body) {
        Ok(r) => r,
        Err(e) => {
            return bad_request(
                "invalid_client_metadata",
                &format!(
                    "the registration is not the JSON object RFC 7591 describes: {}",
                    clip(&e.to_string())
                ),
            );
        }
    };
    match p.register(req) {
        Ok(answer) => {
            tracing::info!(client_id = %clip(answer["client_id"].as_str().unwrap_or("")), "a client registered");
            no_store(json_response(StatusCode::CREATED, &answer))
        }
        Err(e) => bad_request(e.code, &e.description),
    }
}

/// The parameters of a query or form: each named once (RFC 6749 section 3.1).
fn params(text: &str) -> Result<Vec<(String, String)>, String> {
    let pairs = form_decode(text);
    for (i, (k, _)) in pairs.iter().enumerate() {
        if pairs[..i].iter().any(|(k2, _)| k2 == k) {
            return Err(format!("the parameter {} is repeated", clip(k)));
        }
    }
    Ok(pairs)
}

fn param<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
        .filter(|v| !v.is_empty())
}

impl Inner {
    /// The client `id` names: configured, registered here, or a metadata document URL.
    pub(crate) async fn client(&self, id: &str) -> Result<KnownClient, String> {
        if let Some(c) = self.clients.iter().find(|c| c.id == id) {
            return Ok(KnownClient {
                id: c.id.clone(),
                name: c.name.clone(),
                redirect_uris: c.redirect_uris.clone(),
                method: if c.secret.is_some() {
                    Method::Basic
                } else {
                    Method::None
                },
                grant_types: c.grant_types.clone(),
                kind: Kind::Configured,
                secret: c.secret.clone(),
            });
        }
        if let Some(c) = self.registered(id) {
            return Ok(c);
        }
        if MetadataFetcher::is_url(id) {
            return self.metadata_fetcher.client(id).await;
        }
        Err("the client is not registered with this authorization server".into())
    }

    fn cookie_name(&self) -> &'static str {
        if self.secure_cookies {
            SECURE_COOKIE_NAME
        } else {
            COOKIE_NAME
        }
    }

    fn browser_cookie(&self, headers: &HeaderMap) -> Option<String> {
        let name = self.cookie_name();
        headers
            .get_all(COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|c| c.trim().split_once('='))
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.to_owned())
            .filter(|v| v.len() >= 20 && v.len() <= 100)
    }

    fn set_cookie(&self, value: &str) -> Option<HeaderValue> {
        let secure = if self.secure_cookies { "; Secure" } else { "" };
        HeaderValue::from_str(&format!(
            "{}={value}; Path=/; HttpOnly; SameSite=Lax; Max-Age=3600{secure}",
            self.cookie_name()
        ))
        .ok()
    }

    /// The origin of the issuer (what a same-origin form post names in `Origin`).
    fn origin(&self) -> &str {
        crate::net::well_known::split_origin(&self.issuer).0
    }
}

/// A sign-in under way, from the authorization request to the upstream callback.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct SignIn {
    client_id: String,
    redirect_uri: String,
    state: Option<String>,
    code_challenge: String,
    scopes: Vec<String>,
    /// Who can finish it: the digest of the browser's cookie.
    browser: String,
    csrf: String,
    approved: bool,
    #[serde(default)]
    dpop_jkt: Option<String>,
    #[serde(default)]
    upstream_verifier: Option<String>,
    #[serde(default)]
    nonce: Option<String>,
}

/// An authorization code's record.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Code {
    client_id: String,
    redirect_uri: String,
    code_challenge: String,
    grant: String,
    #[serde(default)]
    dpop_jkt: Option<String>,
}

/// The mark of a revoked grant, kept as long as its refresh tokens could be.
fn revoked_key(gid: &str) -> String {
    format!("revoked:{gid}")
}

fn sign_in_key(id: &str) -> String {
    format!("signin:{id}")
}

/// The network address a request to the proxy came from: as the HTTP transport found it,
/// else the connection's peer; `None` when the application serving the routes gives neither.
fn client_addr(extensions: &http::Extensions) -> Option<(IpAddr, u8)> {
    extensions
        .get::<ClientAddr>()
        .map(|c| (c.0, c.1))
        .or_else(|| {
            extensions
                .get::<axum::extract::ConnectInfo<SocketAddr>>()
                .map(|c| (c.0.ip(), 64))
        })
}

/// The network a client address stands for: an IPv4 address, or the network of `prefix` bits
/// of an IPv6 one (one subscriber's network: a client holds a whole /64 and picks addresses in
/// it freely), by the rule the server's per-client bounds use (`Limits::ipv6_client_prefix`).
/// An IPv4-mapped IPv6 address is its IPv4 address.
pub(crate) fn address_group(ip: IpAddr, prefix: u8) -> String {
    match crate::limits::client_network(ip, prefix) {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(net) => format!("{net}/{}", prefix.clamp(1, 128)),
    }
}

/// The IPv6 /48 of an address (none for IPv4 and IPv4-mapped addresses).
pub(crate) fn network_group(ip: IpAddr) -> Option<String> {
    match crate::limits::client_network(ip, 48) {
        IpAddr::V4(_) => None,
        IpAddr::V6(net) => Some(format!("{net}/48")),
    }
}

/// Where the user of a token the proxy issues was signed in.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Origin {
    /// By the upstream identity provider (the code and refresh grants).
    Upstream,
    /// By the enterprise IdP whose ID-JAG the client presented (the JWT bearer grant).
    IdJag,
}

/// The `sub` of a token the proxy issues: the user's subject at its origin, prefixed with the
/// origin (`upstream:`, `idjag:`), so that a subject of one can never be taken for one of the
/// other (an IdP user `alice` is not the upstream's `alice`, whatever either names itself).
/// The policy (`grant_scope`, `authorize_user`) and the stored grant see the subject unprefixed.
pub(crate) fn issued_subject(origin: Origin, subject: &str) -> String {
    match origin {
        Origin::Upstream => format!("upstream:{subject}"),
        Origin::IdJag => format!("idjag:{subject}"),
    }
}

#[cfg(test)]
mod tests {
    use super::browser::{clip_long, printable};
    use super::{Origin, address_group, issued_subject, network_group};
    use crate::auth::proxy::tokens::{Grant, grant_key};
    use crate::auth::proxy::{AuthProxy, ProxyStore as _, Upstream};

    #[tokio::test]
    async fn a_refresh_racing_a_revocation_does_not_bring_the_grant_back() {
        let proxy = AuthProxy::builder(
            "http://127.0.0.1:3000",
            "/mcp",
            Upstream::oidc("http://127.0.0.1:9", "id", "secret"),
        )
        .build()
        .unwrap();
        let p = &proxy.inner;
        let grant = Grant {
            subject: "alice".into(),
            client_id: "c".into(),
            scopes: vec![],
            upstream: None,
            sealed_upstream: None,
            claims: serde_json::Map::new(),
            refresh: None,
        };
        assert_eq!(p.save_refreshed("g", &grant).await, Some(true));
        // A refresh read the grant; the grant is revoked; the refresh writes it back.
        p.revoke("g").await;
        assert_eq!(p.store.get(&grant_key("g")).await.unwrap(), None);
        assert_eq!(p.save_refreshed("g", &grant).await, Some(false));
        assert_eq!(p.store.get(&grant_key("g")).await.unwrap(), None);
    }

    #[test]
    fn upstream_and_id_jag_subjects_never_meet() {
        assert_eq!(issued_subject(Origin::Upstream, "alice"), "upstream:alice");
        assert_eq!(issued_subject(Origin::IdJag, "alice"), "idjag:alice");
        // A subject that names itself after the other origin stays in its own.
        assert_eq!(
            issued_subject(Origin::Upstream, "idjag:alice"),
            "upstream:idjag:alice"
        );
        assert_ne!(
            issued_subject(Origin::Upstream, "idjag:alice"),
            issued_subject(Origin::IdJag, "alice")
        );
        assert_ne!(
            issued_subject(Origin::IdJag, "upstream:alice"),
            issued_subject(Origin::Upstream, "alice")
        );
    }

    #[test]
    fn a_client_follows_the_server_prefix_and_a_network_is_a_48() {
        let ip = |s: &str| s.parse().unwrap();
        assert_eq!(address_group(ip("2001:db8:7:1::1"), 56), "2001:db8:7::/56");
        assert_eq!(
            address_group(ip("2001:db8:7:1::1"), 56),
            address_group(ip("2001:db8:7:ff::1"), 56)
        );
        assert_eq!(
            network_group(ip("2001:db8:7:1::1")).as_deref(),
            Some("2001:db8:7::/48")
        );
        assert_eq!(network_group(ip("192.0.2.1")), None);
        assert_eq!(network_group(ip("::ffff:192.0.2.1")), None);
    }

    #[test]
    fn client_texts_on_the_consent_page_lose_bidi_and_control_characters_and_stay_whole() {
        assert_eq!(
            printable("Good App\u{202E}moc.live\u{202C} \u{2066}x\u{2069}\n\u{200F}"),
            "Good Appmoc.live x"
        );
        let long = format!("https://app.example/{}/client.json", "a".repeat(200));
        assert_eq!(clip_long(&long), long);
        let huge = "b".repeat(3000);
        assert_eq!(clip_long(&huge).chars().count(), 2048);
    }

    #[test]
    fn a_client_is_an_ipv4_address_or_an_ipv6_64() {
        let group = |s: &str| address_group(s.parse().unwrap(), 64);
        assert_eq!(group("192.0.2.1"), "192.0.2.1");
        assert_ne!(group("192.0.2.1"), group("192.0.2.2"));
        // An IPv4-mapped IPv6 address is its IPv4 address.
        assert_eq!(group("::ffff:192.0.2.1"), "192.0.2.1");
        // Every address of a /64 is one client; the next /64 is another.
        assert_eq!(group("2001:db8:7:1::1"), "2001:db8:7:1::/64");
        assert_eq!(
            group("2001:db8:7:1:ffff:ffff:ffff:ffff"),
            group("2001:db8:7:1::1")
        );
        assert_ne!(group("2001:db8:7:2::1"), group("2001:db8:7:1::1"));
        assert_eq!(group("::1"), "::/64");
    }
}
