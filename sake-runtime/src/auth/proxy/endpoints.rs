//! The proxy's HTTP endpoints: metadata, keys, registration, authorization with consent, the
//! upstream callback, and the token endpoint.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use axum::routing::{get, post};
use base64::Engine as _;
use http::header::{
    ACCESS_CONTROL_ALLOW_HEADERS, ACCESS_CONTROL_ALLOW_METHODS, ACCESS_CONTROL_ALLOW_ORIGIN,
    ACCESS_CONTROL_EXPOSE_HEADERS, AUTHORIZATION, CACHE_CONTROL, CONTENT_TYPE, COOKIE, LOCATION,
    PRAGMA, SET_COOKIE,
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
        .route(&p.route("/oauth/authorize"), get(authorize))
        .route(&p.route("/oauth/consent"), post(consent))
        .route(&p.route("/oauth/callback"), get(callback))
        .route(&p.route("/oauth/token"), post(token).options(preflight))
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
    h.insert(ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
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

async fn preflight() -> Response {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = StatusCode::NO_CONTENT;
    let h = r.headers_mut();
    h.insert(ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    h.insert(
        ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("POST, OPTIONS"),
    );
    h.insert(
        ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static("authorization, content-type, dpop, mcp-protocol-version"),
    );
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

async fn authorize(State(p): State<Arc<Inner>>, request: Request) -> Response {
    let query = request.uri().query().unwrap_or_default().to_owned();
    let pairs = match params(&query) {
        Ok(x) => x,
        Err(e) => return error_page(StatusCode::BAD_REQUEST, "Invalid authorization request", &e),
    };
    let Some(client_id) = param(&pairs, "client_id") else {
        return error_page(
            StatusCode::BAD_REQUEST,
            "Invalid authorization request",
            "The request names no client (client_id).",
        );
    };
    let client = match p.client(client_id).await {
        Ok(c) => c,
        Err(e) => {
            tracing::info!(client_id = %clip(client_id), reason = %e, "an authorization request for an unknown client");
            return error_page(StatusCode::BAD_REQUEST, "Unknown application", &e);
        }
    };
    // The redirect URI, exactly as registered (never a prefix, never a pattern); only a
    // client with one may leave it out.
    let redirect_uri = match param(&pairs, "redirect_uri") {
        Some(r) if client.redirect_uris.iter().any(|u| u == r) => r.to_owned(),
        None if client.redirect_uris.len() == 1 => client.redirect_uris[0].clone(),
        Some(r) => {
            tracing::info!(client_id = %clip(client_id), redirect_uri = %clip(r), "an unregistered redirect URI");
            return error_page(
                StatusCode::BAD_REQUEST,
                "Invalid redirect URI",
                "The address the application wants you sent back to is not one it registered. You were not sent anywhere.",
            );
        }
        None => {
            return error_page(
                StatusCode::BAD_REQUEST,
                "Invalid authorization request",
                "The request names no redirect_uri, and the application registered several.",
            );
        }
    };
    let state = param(&pairs, "state").map(str::to_owned);
    let fail = |code: &str, description: &str| {
        let mut q = vec![("error", code), ("error_description", description)];
        if let Some(s) = &state {
            q.push(("state", s));
        }
        q.push(("iss", &p.issuer));
        redirect(StatusCode::FOUND, &with_query(&redirect_uri, &q))
    };
    if state.as_ref().is_some_and(|s| s.len() > MAX_STATE) {
        return fail("invalid_request", "state is too long");
    }
    if param(&pairs, "response_type") != Some("code") {
        return fail(
            "unsupported_response_type",
            "only response_type=code is supported",
        );
    }
    if !client.grant_types.iter().any(|g| g == "authorization_code") {
        return fail(
            "unauthorized_client",
            "the client did not register the authorization code grant",
        );
    }
    let Some(code_challenge) = param(&pairs, "code_challenge") else {
        return fail(
            "invalid_request",
            "PKCE is required: send code_challenge with code_challenge_method=S256",
        );
    };
    if param(&pairs, "code_challenge_method") != Some("S256") {
        return fail(
            "invalid_request",
            "only the PKCE method S256 is supported (code_challenge_method=S256)",
        );
    }
    if code_challenge.len() != 43
        || !code_challenge
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
    {
        return fail(
            "invalid_request",
            "code_challenge is not a Base64url SHA-256 (43 characters)",
        );
    }
    if let Some(r) = param(&pairs, "resource")
        && r != p.resource
    {
        return fail(
            "invalid_target",
            &format!(
                "this authorization server issues tokens only for {}",
                p.resource
            ),
        );
    }
    let scopes = match p.granted_scopes(param(&pairs, "scope"), None) {
        Ok(s) => s,
        Err(e) => return fail("invalid_scope", &e),
    };
    let dpop_jkt = param(&pairs, "dpop_jkt").map(str::to_owned);
    if dpop_jkt.as_ref().is_some_and(|j| j.len() != 43) {
        return fail(
            "invalid_request",
            "dpop_jkt is not a JWK SHA-256 thumbprint",
        );
    }
    let (cookie, fresh) = match p.browser_cookie(request.headers()) {
        Some(c) => (c, false),
        None => match random(24) {
            Ok(c) => (c, true),
            Err(_) => return fail("server_error", "no randomness"),
        },
    };
    let (Ok(id), Ok(csrf)) = (random(24), random(24)) else {
        return fail("server_error", "no randomness");
    };
    let sign_in = SignIn {
        client_id: client.id.clone(),
        redirect_uri: redirect_uri.clone(),
        state: state.clone(),
        code_challenge: code_challenge.to_owned(),
        scopes: scopes.clone(),
        browser: digest(&cookie),
        csrf: csrf.clone(),
        approved: false,
        dpop_jkt,
        upstream_verifier: None,
        nonce: None,
    };
    match p
        .start_sign_in(&id, &sign_in, client_addr(request.extensions()))
        .await
    {
        Ok(Started::Yes) => {}
        Ok(Started::ClientFull) => {
            tracing::debug!(client_id = %clip(client_id), "a sign-in was refused: its client address has the most sign-ins under way");
            return fail(
                "temporarily_unavailable",
                &format!(
                    "too many sign-ins are under way from your network address (at most {}, each ending when finished or after 10 minutes); finish one or try again later",
                    p.max_pending_per_client
                ),
            );
        }
        Ok(Started::NetworkFull) => {
            tracing::info!(client_id = %clip(client_id), "a sign-in was refused: its IPv6 /48 has the most sign-ins under way");
            return fail(
                "temporarily_unavailable",
                &format!(
                    "too many sign-ins are under way from your network (an IPv6 /48: at most {}, each ending when finished or after 10 minutes); try again later",
                    p.max_pending_per_network
                ),
            );
        }
        Ok(Started::AllFull) => {
            tracing::warn!(
                max = p.max_pending,
                "a sign-in was refused: the most sign-ins are under way (AuthProxyBuilder::max_pending_sign_ins)"
            );
            return fail(
                "temporarily_unavailable",
                "too many sign-ins are under way on this server; try again in a few minutes",
            );
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot keep a sign-in");
            return fail(
                "temporarily_unavailable",
                "the authorization server is busy; try again shortly",
            );
        }
    }
    let name = printable(&client.name.clone().unwrap_or_else(|| client.id.clone()));
    let kind = match client.kind {
        Kind::Registered => "registered itself with this server; its name is not verified",
        Kind::MetadataDocument => {
            "described by its metadata document at the client id below; its name is not verified"
        }
        Kind::Configured => "configured by the server's operator",
    };
    let server = p
        .resource_name
        .clone()
        .unwrap_or_else(|| p.resource.clone());
    let scope_list: Vec<String> = if scopes.is_empty() {
        vec!["basic access (no particular scope)".to_owned()]
    } else {
        scopes.clone()
    };
    let action = p.url("/oauth/consent");
    let body = html::page(
        html::CONSENT,
        &[
            ("client", Slot::Text(&name)),
            ("client_id", Slot::Text(&clip_long(&client.id))),
            ("kind", Slot::Text(kind)),
            ("redirect_uri", Slot::Text(&redirect_uri)),
            ("scopes", Slot::Items(&scope_list)),
            ("resource", Slot::Text(&p.resource)),
            ("server", Slot::Text(&server)),
            ("request", Slot::Text(&id)),
            ("csrf", Slot::Text(&csrf)),
            ("action", Slot::Text(&action)),
        ],
    );
    let mut r = page(StatusCode::OK, body);
    if fresh && let Some(c) = p.set_cookie(&cookie) {
        r.headers_mut().insert(SET_COOKIE, c);
    }
    r
}

/// A client id for the page: whole (a metadata document's URL is told apart by its end), up
/// to 2048 characters, without control or bidirectional formatting characters.
fn clip_long(id: &str) -> String {
    let id = printable(id);
    if id.chars().count() > 2048 {
        format!("{}…", id.chars().take(2047).collect::<String>())
    } else {
        id
    }
}

/// Text from a client for the page, without control characters nor the bidirectional
/// formatting ones that would make it read as something else (`U+202E` turning
/// `evil.com/moc.elgoog` around).
fn printable(text: &str) -> String {
    text.chars()
        .filter(|c| {
            !c.is_control()
                && !matches!(
                    c,
                    '\u{200E}' | '\u{200F}' | '\u{061C}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
                )
        })
        .collect()
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

/// Whether a sign-in could start.
enum Started {
    Yes,
    /// Its client's address has `max_pending_per_client` under way.
    ClientFull,
    /// Its IPv6 /48 has `max_pending_per_network` under way.
    NetworkFull,
    /// `max_pending` are under way.
    AllFull,
}

/// The store's count of every sign-in under way.
const PENDING: &str = "pending";

impl Inner {
    /// Keeps a new sign-in, counted in all and under its client's address (the address is
    /// keyed: the store never holds it).
    async fn start_sign_in(
        &self,
        id: &str,
        s: &SignIn,
        addr: Option<(IpAddr, u8)>,
    ) -> Result<Started, String> {
        let bytes = serde_json::to_vec(s).map_err(|e| e.to_string())?;
        let group = addr.map(|(ip, prefix)| {
            let tag = super::hmac(
                &self.secret,
                "client-address",
                address_group(ip, prefix).as_bytes(),
            );
            format!("{PENDING}:{}", B64.encode(&tag[..12]))
        });
        let network = addr.and_then(|(ip, _)| network_group(ip)).map(|net| {
            let tag = super::hmac(&self.secret, "client-network", net.as_bytes());
            format!("{PENDING}-48:{}", B64.encode(&tag[..12]))
        });
        if group.is_none()
            && !self
                .no_address_logged
                .swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            tracing::warn!(
                "the authorization proxy sees no client addresses (serve its router with ConnectInfo): sign-ins under way are bounded in all only, not per client"
            );
        }
        let mut bounds = Vec::with_capacity(3);
        let mut kinds = Vec::with_capacity(3);
        if let Some(g) = &group {
            bounds.push(Bound::refusing(g, self.max_pending_per_client));
            kinds.push(Started::ClientFull);
        }
        if let Some(n) = &network {
            bounds.push(Bound::refusing(n, self.max_pending_per_network));
            kinds.push(Started::NetworkFull);
        }
        // Full, the table drops the oldest sign-in of whoever holds the most (a client
        // address or an IPv6 /48) rather than turn everyone away.
        bounds.push(Bound::making_room(PENDING, self.max_pending));
        kinds.push(Started::AllFull);
        match self
            .store
            .insert_bounded(&sign_in_key(id), bytes, ttl(self.sign_in_ttl), &bounds)
            .await
            .map_err(|e| e.to_string())?
        {
            Insertion::Stored => Ok(Started::Yes),
            Insertion::Full(i) => Ok(kinds.into_iter().nth(i).unwrap_or(Started::AllFull)),
            _ => Err("a sign-in id was drawn twice".into()),
        }
    }

    async fn save_sign_in(&self, id: &str, s: &SignIn) -> Result<(), String> {
        let bytes = serde_json::to_vec(s).map_err(|e| e.to_string())?;
        self.store
            .put(&sign_in_key(id), bytes, ttl(self.sign_in_ttl))
            .await
            .map_err(|e| e.to_string())
    }

    async fn load_sign_in(&self, id: &str) -> Result<Option<SignIn>, String> {
        Ok(self
            .store
            .get(&sign_in_key(id))
            .await
            .map_err(|e| e.to_string())?
            .and_then(|b| serde_json::from_slice(&b).ok()))
    }

    /// The scopes granted for a request of `requested` (space-separated): those of them this
    /// server supports, never more than `allowed` when given. Unknown scopes are left out; a
    /// request of only unknown scopes is refused.
    pub(crate) fn granted_scopes(
        &self,
        requested: Option<&str>,
        allowed: Option<&[String]>,
    ) -> Result<Vec<String>, String> {
        let Some(requested) = requested else {
            return Ok(allowed.map(<[String]>::to_vec).unwrap_or_default());
        };
        let mut out = Vec::new();
        let mut unknown = Vec::new();
        for s in requested.split(' ').filter(|s| !s.is_empty()) {
            let known = self.scopes.iter().any(|x| x == s)
                && allowed.is_none_or(|a| a.iter().any(|x| x == s));
            if known {
                if !out.iter().any(|x| x == s) {
                    out.push(s.to_owned());
                }
            } else {
                unknown.push(clip(s));
            }
        }
        if out.is_empty() && !unknown.is_empty() {
            return Err(format!(
                "the scopes {} are not available (supported: {})",
                unknown.join(" "),
                allowed.map_or_else(|| self.scopes.join(" "), |a| a.join(" "))
            ));
        }
        Ok(out)
    }
}

/// The consent form: approve sends the user upstream, deny back to the client with
/// `access_denied`. Only a same-origin post from the browser that saw the page counts.
async fn consent(State(p): State<Arc<Inner>>, request: Request) -> Response {
    let headers = request.headers().clone();
    let forbidden = |why: &str| error_page(StatusCode::FORBIDDEN, "Consent not accepted", why);
    if let Some(origin) = headers
        .get(http::header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        && origin != p.origin()
    {
        tracing::info!(origin = %clip(origin), "a cross-site consent post was refused");
        return forbidden("The form was posted from another site. Nothing was approved.");
    }
    if let Some(site) = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok())
        && !matches!(site, "same-origin" | "none")
    {
        return forbidden("The form was posted from another site. Nothing was approved.");
    }
    let body = match read_body(request.into_body(), MAX_CONSENT).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let pairs = match params(&String::from_utf8_lossy(&body)) {
        Ok(x) => x,
        Err(e) => return error_page(StatusCode::BAD_REQUEST, "Invalid form", &e),
    };
    let (Some(id), Some(csrf)) = (param(&pairs, "request"), param(&pairs, "csrf")) else {
        return error_page(
            StatusCode::BAD_REQUEST,
            "Invalid form",
            "The form is incomplete.",
        );
    };
    let mut sign_in = match p.load_sign_in(id).await {
        Ok(Some(s)) => s,
        Ok(None) => {
            return error_page(
                StatusCode::BAD_REQUEST,
                "Sign-in expired",
                "This sign-in is unknown or expired. Start again from the application.",
            );
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot read a sign-in");
            return error_page(
                StatusCode::SERVICE_UNAVAILABLE,
                "Try again",
                "The server is busy.",
            );
        }
    };
    let browser_ok = p
        .browser_cookie(&headers)
        .is_some_and(|c| constant_eq(digest(&c).as_bytes(), sign_in.browser.as_bytes()));
    if !browser_ok || !constant_eq(csrf.as_bytes(), sign_in.csrf.as_bytes()) {
        tracing::info!(client_id = %clip(&sign_in.client_id), "a consent post from another browser was refused");
        return forbidden(
            "This sign-in was started in another browser (or its form is stale). Nothing was approved.",
        );
    }
    let client_back = |code: &str, description: &str, s: &SignIn| {
        let mut q = vec![("error", code), ("error_description", description)];
        if let Some(st) = &s.state {
            q.push(("state", st));
        }
        q.push(("iss", &p.issuer));
        redirect(StatusCode::SEE_OTHER, &with_query(&s.redirect_uri, &q))
    };
    if param(&pairs, "approve").is_none() {
        let _ = p.store.delete(&sign_in_key(id)).await;
        return client_back("access_denied", "the user denied the request", &sign_in);
    }
    let endpoints = match p.endpoints().await {
        Ok(e) => e,
        Err(e) => {
            tracing::warn!(error = %e, "the upstream provider cannot be used");
            return client_back(
                "temporarily_unavailable",
                "the identity provider cannot be reached",
                &sign_in,
            );
        }
    };
    let (Ok(verifier), Ok(nonce)) = (random(32), random(16)) else {
        return client_back("server_error", "no randomness", &sign_in);
    };
    let challenge = s256(&verifier);
    sign_in.approved = true;
    sign_in.upstream_verifier = Some(verifier);
    sign_in.nonce = Some(nonce.clone());
    if let Err(e) = p.save_sign_in(id, &sign_in).await {
        tracing::warn!(error = %e, "cannot keep a sign-in");
        return client_back(
            "temporarily_unavailable",
            "the authorization server is busy",
            &sign_in,
        );
    }
    let callback = p.url("/oauth/callback");
    let scope = p.upstream.scopes.join(" ");
    let mut q: Vec<(&str, &str)> = vec![
        ("response_type", "code"),
        ("client_id", &p.upstream.client_id),
        ("redirect_uri", &callback),
        ("state", id),
        ("code_challenge", &challenge),
        ("code_challenge_method", "S256"),
    ];
    if !scope.is_empty() {
        q.push(("scope", &scope));
    }
    if p.upstream.is_oidc() {
        q.push(("nonce", &nonce));
    }
    if let Some(r) = &p.upstream.resource {
        q.push(("resource", r));
    }
    for (k, v) in &p.upstream.params {
        q.push((k, v));
    }
    redirect(
        StatusCode::SEE_OTHER,
        &with_query(&endpoints.authorization_endpoint, &q),
    )
}

/// The upstream sends the user back here: the sign-in finishes only in the browser that
/// approved it, once.
async fn callback(State(p): State<Arc<Inner>>, request: Request) -> Response {
    let query = request.uri().query().unwrap_or_default().to_owned();
    let pairs = form_decode(&query);
    let get = |n: &str| pairs.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
    let Some(id) = get("state").filter(|s| !s.is_empty()) else {
        return error_page(
            StatusCode::BAD_REQUEST,
            "Invalid sign-in",
            "The identity provider's answer names no sign-in (state).",
        );
    };
    let sign_in = match p.load_sign_in(id).await {
        Ok(Some(s)) => s,
        Ok(None) => {
            return error_page(
                StatusCode::BAD_REQUEST,
                "Sign-in expired",
                "This sign-in is unknown, expired or already finished. Start again from the application.",
            );
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot read a sign-in");
            return error_page(
                StatusCode::SERVICE_UNAVAILABLE,
                "Try again",
                "The server is busy.",
            );
        }
    };
    let browser_ok = p
        .browser_cookie(request.headers())
        .is_some_and(|c| constant_eq(digest(&c).as_bytes(), sign_in.browser.as_bytes()));
    if !browser_ok || !sign_in.approved {
        tracing::info!(client_id = %clip(&sign_in.client_id), "a callback in a browser that did not approve was refused");
        return error_page(
            StatusCode::FORBIDDEN,
            "Sign-in not approved here",
            "This sign-in was not approved in this browser. No code was issued.",
        );
    }
    // Once: whoever takes it finishes it.
    match p.store.take(&sign_in_key(id)).await {
        Ok(Some(_)) => {}
        Ok(None) => {
            return error_page(
                StatusCode::BAD_REQUEST,
                "Sign-in expired",
                "This sign-in is already finished.",
            );
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot finish a sign-in");
            return error_page(
                StatusCode::SERVICE_UNAVAILABLE,
                "Try again",
                "The server is busy.",
            );
        }
    }
    let back = |params: &[(&str, &str)]| {
        let mut q: Vec<(&str, &str)> = params.to_vec();
        if let Some(s) = &sign_in.state {
            q.push(("state", s));
        }
        q.push(("iss", &p.issuer));
        redirect(StatusCode::FOUND, &with_query(&sign_in.redirect_uri, &q))
    };
    if let Some(error) = get("error") {
        let code = match error {
            "access_denied" | "temporarily_unavailable" | "server_error" => error,
            _ => "access_denied",
        };
        return back(&[
            ("error", code),
            (
                "error_description",
                "the identity provider did not sign the user in",
            ),
        ]);
    }
    let Some(code) = get("code").filter(|c| !c.is_empty()) else {
        return back(&[
            ("error", "server_error"),
            (
                "error_description",
                "the identity provider answered without a code",
            ),
        ]);
    };
    let endpoints = match p.endpoints().await {
        Ok(e) => e,
        Err(_) => {
            return back(&[
                ("error", "temporarily_unavailable"),
                (
                    "error_description",
                    "the identity provider cannot be reached",
                ),
            ]);
        }
    };
    let callback = p.url("/oauth/callback");
    let verifier = sign_in.upstream_verifier.clone().unwrap_or_default();
    let mut fields = vec![
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", callback.as_str()),
        ("code_verifier", verifier.as_str()),
    ];
    if let Some(r) = &p.upstream.resource {
        fields.push(("resource", r));
    }
    let upstream = match p
        .upstream
        .token_request(&p.fetcher, &endpoints, &fields)
        .await
    {
        Ok(t) => t,
        Err(e) => {
            tracing::warn!(error = %e, "the upstream code exchange failed");
            let code = if matches!(e, UpstreamError::Unavailable(_)) {
                "temporarily_unavailable"
            } else {
                "access_denied"
            };
            return back(&[
                ("error", code),
                (
                    "error_description",
                    "the identity provider did not complete the sign-in",
                ),
            ]);
        }
    };
    let nonce = sign_in.nonce.clone().unwrap_or_default();
    let (subject, claims) = match p
        .upstream
        .identity(&p.fetcher, &endpoints, &upstream, &nonce)
        .await
    {
        Ok(x) => x,
        Err(e) => {
            tracing::warn!(error = %e, "the upstream sign-in names nobody");
            return back(&[
                ("error", "access_denied"),
                (
                    "error_description",
                    "the identity provider's answer does not identify the user",
                ),
            ]);
        }
    };
    // What the user may let the client do: of the scopes asked for, those the policy gives
    // this user (the token answer's `scope` says which).
    let scopes = p
        .policy
        .filter(&UpstreamUser::new(&subject, &claims), &sign_in.scopes);
    if scopes.len() < sign_in.scopes.len() {
        tracing::info!(
            client_id = %clip(&sign_in.client_id),
            asked = %sign_in.scopes.join(" "),
            granted = %scopes.join(" "),
            "a user asked for scopes the policy does not give them"
        );
    }
    let issued = async {
        let gid = random(24)?;
        let grant = Grant {
            subject: subject.clone(),
            client_id: sign_in.client_id.clone(),
            scopes,
            upstream: Some(upstream),
            sealed_upstream: None,
            claims,
            refresh: None,
        };
        let bytes = p.grant_bytes(&gid, &grant)?;
        p.store
            .put(&grant_key(&gid), bytes, ttl(p.refresh_ttl))
            .await
            .map_err(|e| crate::auth::AuthError::unavailable(e.to_string()))?;
        let code = random(32)?;
        let record = Code {
            client_id: sign_in.client_id.clone(),
            redirect_uri: sign_in.redirect_uri.clone(),
            code_challenge: sign_in.code_challenge.clone(),
            grant: gid,
            dpop_jkt: sign_in.dpop_jkt.clone(),
        };
        let bytes = serde_json::to_vec(&record)
            .map_err(|e| crate::auth::AuthError::misconfigured(e.to_string()))?;
        p.store
            .put(&format!("code:{}", digest(&code)), bytes, ttl(p.code_ttl))
            .await
            .map_err(|e| crate::auth::AuthError::unavailable(e.to_string()))?;
        Ok::<_, crate::auth::AuthError>(code)
    }
    .await;
    match issued {
        Ok(code) => {
            tracing::info!(client_id = %clip(&sign_in.client_id), "a user signed in through the upstream provider");
            back(&[("code", &code)])
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot keep a grant");
            back(&[
                ("error", "temporarily_unavailable"),
                ("error_description", "the authorization server is busy"),
            ])
        }
    }
}

/// What authenticated the client at the token endpoint.
struct Authenticated {
    client: KnownClient,
}

impl Inner {
    /// Authenticates the client of a token request (RFC 6749 section 2.3): `Basic`, the form's
    /// `client_secret`, or a public client's `client_id`.
    async fn authenticate_client(
        &self,
        headers: &HeaderMap,
        pairs: &[(String, String)],
    ) -> Result<Authenticated, Response> {
        let invalid = |why: &str| {
            let mut r = oauth_error(StatusCode::UNAUTHORIZED, "invalid_client", why);
            r.headers_mut().insert(
                http::header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Basic realm=\"token\""),
            );
            r
        };
        let basic = headers
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                v.strip_prefix("Basic ")
                    .or_else(|| v.strip_prefix("basic "))
            })
            .map(|b| {
                base64::engine::general_purpose::STANDARD
                    .decode(b.trim())
                    .ok()
                    .and_then(|d| String::from_utf8(d).ok())
                    .and_then(|s| {
                        let (id, secret) = s.split_once(':')?;
                        let dec = |x: &str| form_decode(&format!("x={x}")).pop().map(|(_, v)| v);
                        Some((dec(id)?, dec(secret)?))
                    })
            });
        let (id, secret) = match basic {
            Some(None) => return Err(invalid("the Basic credentials are malformed")),
            Some(Some((id, secret))) => {
                if param(pairs, "client_secret").is_some() {
                    return Err(bad_request(
                        "invalid_request",
                        "the client authenticated twice (Basic and client_secret)",
                    ));
                }
                if param(pairs, "client_id").is_some_and(|f| f != id) {
                    return Err(bad_request(
                        "invalid_request",
                        "client_id does not match the Basic credentials",
                    ));
                }
                (id, Some(secret))
            }
            None => match param(pairs, "client_id") {
                Some(id) => (
                    id.to_owned(),
                    param(pairs, "client_secret").map(str::to_owned),
                ),
                None => {
                    return Err(invalid(
                        "the request names no client (client_id or Basic credentials)",
                    ));
                }
            },
        };
        let client = self.client(&id).await.map_err(|e| invalid(&e))?;
        let expected = match client.kind {
            Kind::Configured => client.secret.clone(),
            Kind::Registered if client.method != Method::None => {
                Some(self.client_secret(&client.id))
            }
            _ => None,
        };
        match (expected, secret) {
            (Some(e), Some(s)) if constant_eq(e.as_bytes(), s.as_bytes()) => {}
            (Some(_), _) => return Err(invalid("the client's credentials are wrong or missing")),
            (None, None) => {}
            (None, Some(_)) => return Err(invalid("this client is public: it has no secret")),
        }
        Ok(Authenticated { client })
    }

    /// The proof of possession of a token request (its `DPoP` header), if any: checked, not
    /// yet recorded (that waits for the grant it accompanies to check out).
    #[allow(clippy::result_large_err)] // The refusal is the response itself.
    fn token_dpop(&self, headers: &HeaderMap) -> Result<Option<dpop::Checked>, Response> {
        let mut proofs = headers.get_all(DPOP).iter();
        let Some(proof) = proofs.next() else {
            return Ok(None);
        };
        if proofs.next().is_some() {
            return Err(bad_request(
                "invalid_dpop_proof",
                "more than one DPoP header",
            ));
        }
        let proof = proof
            .to_str()
            .map_err(|_| bad_request("invalid_dpop_proof", "the DPoP header is not ASCII"))?;
        self.dpop
            .check(proof, "POST", &self.url("/oauth/token"), None)
            .map(Some)
            .map_err(|e| bad_request(e.code(), e.reason()))
    }

    /// The tokens answer: an access token (bound to `jkt` when given) and, when given, a
    /// refresh token.
    #[allow(clippy::too_many_arguments)]
    async fn issue(
        &self,
        subject: &str,
        client: &KnownClient,
        scopes: &[String],
        gid: Option<&str>,
        claims: &serde_json::Map<String, Value>,
        proof: Option<&dpop::Checked>,
        refresh: Option<String>,
    ) -> Response {
        // The proof is remembered (against its replay) only now that the grant checked out.
        if let Some(c) = proof
            && let Err(e) = self.dpop.record(c)
        {
            return bad_request(e.code(), e.reason());
        }
        let jkt = proof.map(|c| c.jkt.as_str());
        let access = match self.access_token(subject, &client.id, scopes, gid, claims, jkt) {
            Ok(a) => a,
            Err(e) => {
                tracing::error!(error = %e, "cannot issue an access token");
                return oauth_error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "server_error",
                    "cannot issue a token",
                );
            }
        };
        let mut answer = json!({
            "access_token": access,
            "token_type": if jkt.is_some() { "DPoP" } else { "Bearer" },
            "expires_in": self.access_ttl.as_secs(),
            "scope": scopes.join(" "),
        });
        if let Some(token) = refresh {
            answer["refresh_token"] = json!(token);
        }
        let mut r = no_store(json_response(StatusCode::OK, &answer));
        if jkt.is_some() {
            r.headers_mut().insert(
                ACCESS_CONTROL_EXPOSE_HEADERS,
                HeaderValue::from_static("dpop-nonce"),
            );
        }
        r
    }

    /// Ends a grant (a code or a refresh token was used twice: someone else holds a copy).
    async fn revoke(&self, gid: &str) {
        tracing::warn!("a code or refresh token was used twice: its grant is revoked");
        // The mark first, then the grant: a refresh that writes the grant back meanwhile finds
        // the mark after its write and ends the grant itself (`save_refreshed`).
        let _ = self
            .store
            .put(&revoked_key(gid), b"1".to_vec(), ttl(self.refresh_ttl))
            .await;
        let _ = self.store.delete(&grant_key(gid)).await;
    }

    /// Stores a refreshed grant unless it was revoked meanwhile: `Some(true)` stored,
    /// `Some(false)` revoked (and gone), `None` the store failed.
    async fn save_refreshed(&self, gid: &str, grant: &Grant) -> Option<bool> {
        if !self.save_grant(gid, grant).await {
            return None;
        }
        match self.store.get(&revoked_key(gid)).await {
            Ok(None) => Some(true),
            Ok(Some(_)) => {
                let _ = self.store.delete(&grant_key(gid)).await;
                Some(false)
            }
            Err(_) => None,
        }
    }
}

async fn token(State(p): State<Arc<Inner>>, request: Request) -> Response {
    let headers = request.headers().clone();
    // A proof counts against its client's share of the replay cache.
    let network = client_addr(request.extensions())
        .map(|(ip, prefix)| crate::limits::client_network(ip, prefix));
    let form = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(';').next().is_some_and(|m| {
                m.trim()
                    .eq_ignore_ascii_case("application/x-www-form-urlencoded")
            })
        });
    if !form {
        return bad_request(
            "invalid_request",
            "send the token request as application/x-www-form-urlencoded",
        );
    }
    let body = match read_body(request.into_body(), MAX_TOKEN_REQUEST).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    let pairs = match params(&String::from_utf8_lossy(&body)) {
        Ok(x) => x,
        Err(e) => return bad_request("invalid_request", &e),
    };
    let auth = match p.authenticate_client(&headers, &pairs).await {
        Ok(a) => a,
        Err(r) => return r,
    };
    let client = auth.client;
    let jkt = match p.token_dpop(&headers) {
        Ok(j) => j.map(|c| c.sent_by(network)),
        Err(r) => return r,
    };
    if let Some(r) = param(&pairs, "resource")
        && r != p.resource
    {
        return bad_request(
            "invalid_target",
            &format!(
                "this authorization server issues tokens only for {}",
                p.resource
            ),
        );
    }
    let grant_type = param(&pairs, "grant_type").unwrap_or_default();
    if !client.grant_types.iter().any(|g| g == grant_type)
        && client.kind != Kind::MetadataDocument
        && p.grant_types().contains(&grant_type)
    {
        return bad_request(
            "unauthorized_client",
            "the client did not register this grant type",
        );
    }
    match grant_type {
        "authorization_code" => code_grant(&p, &client, &pairs, jkt).await,
        "refresh_token" => refresh_grant(&p, &client, &pairs, jkt).await,
        JWT_BEARER if p.idp.is_some() => jwt_bearer_grant(&p, &client, &pairs, jkt).await,
        "" => bad_request("invalid_request", "the request names no grant_type"),
        other => bad_request(
            "unsupported_grant_type",
            &format!("the grant type {} is not supported", clip(other)),
        ),
    }
}

async fn code_grant(
    p: &Inner,
    client: &KnownClient,
    pairs: &[(String, String)],
    proof: Option<dpop::Checked>,
) -> Response {
    let jkt = proof.as_ref().map(|c| c.jkt.clone());
    let invalid_grant = |why: &str| bad_request("invalid_grant", why);
    let Some(code) = param(pairs, "code") else {
        return bad_request("invalid_request", "the request has no code");
    };
    let key = digest(code);
    let record: Code = match p.store.take(&format!("code:{key}")).await {
        Ok(Some(b)) => match serde_json::from_slice(&b) {
            Ok(r) => r,
            Err(_) => return invalid_grant("the code is unknown"),
        },
        Ok(None) => {
            // Used before? Then whoever used it first may not be the client: end the grant.
            if let Ok(Some(gid)) = p.store.get(&format!("used-code:{key}")).await {
                p.revoke(&String::from_utf8_lossy(&gid)).await;
                return invalid_grant(
                    "the code was used before; the tokens issued with it are revoked",
                );
            }
            return invalid_grant("the code is unknown, expired or used");
        }
        Err(_) => {
            return oauth_error(
                StatusCode::SERVICE_UNAVAILABLE,
                "temporarily_unavailable",
                "the authorization server is busy",
            );
        }
    };
    let _ = p
        .store
        .put(
            &format!("used-code:{key}"),
            record.grant.as_bytes().to_vec(),
            ttl(p.sign_in_ttl),
        )
        .await;
    if record.client_id != client.id {
        return invalid_grant("the code was issued to another client");
    }
    if param(pairs, "redirect_uri") != Some(record.redirect_uri.as_str()) {
        return invalid_grant("redirect_uri is not the one of the authorization request");
    }
    let Some(verifier) = param(pairs, "code_verifier") else {
        return invalid_grant("the request has no code_verifier (PKCE)");
    };
    if verifier.len() < 43
        || verifier.len() > 128
        || !constant_eq(s256(verifier).as_bytes(), record.code_challenge.as_bytes())
    {
        return invalid_grant("the code_verifier does not match the code_challenge (PKCE)");
    }
    if let Some(bound) = &record.dpop_jkt
        && jkt.as_deref() != Some(bound.as_str())
    {
        return bad_request(
            "invalid_dpop_proof",
            "the code is bound to a DPoP key (dpop_jkt): prove possession of it",
        );
    }
    let mut grant: Grant = match p.store.get(&grant_key(&record.grant)).await {
        Ok(Some(b)) => match p.parse_grant(&record.grant, &b) {
            Some(g) => g,
            None => return invalid_grant("the sign-in behind the code ended"),
        },
        _ => return invalid_grant("the sign-in behind the code ended"),
    };
    let mut refresh = None;
    if client.grant_types.iter().any(|g| g == "refresh_token") {
        // The grant's first refresh token: generation 0, bound to the DPoP key of a public
        // client (RFC 9449 section 5).
        grant.refresh = Some(RefreshState {
            generation: 0,
            jkt: if client.method == Method::None {
                jkt.clone()
            } else {
                None
            },
        });
        if !p.save_grant(&record.grant, &grant).await {
            return busy();
        }
        refresh = Some(p.refresh_token(&record.grant, 0));
    }
    p.issue(
        &issued_subject(Origin::Upstream, &grant.subject),
        client,
        &grant.scopes,
        Some(&record.grant),
        &grant.claims,
        proof.as_ref(),
        refresh,
    )
    .await
}

/// The token endpoint's answer when the store cannot be used.
fn busy() -> Response {
    oauth_error(
        StatusCode::SERVICE_UNAVAILABLE,
        "temporarily_unavailable",
        "the authorization server is busy",
    )
}

impl Inner {
    /// Stores a grant for the refresh tokens' lifetime; `false` when the store refused.
    async fn save_grant(&self, gid: &str, grant: &Grant) -> bool {
        let Ok(bytes) = self.grant_bytes(gid, grant) else {
            return false;
        };
        match self
            .store
            .put(&grant_key(gid), bytes, ttl(self.refresh_ttl))
            .await
        {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(error = %e, "cannot keep a grant");
                false
            }
        }
    }
}

async fn refresh_grant(
    p: &Inner,
    client: &KnownClient,
    pairs: &[(String, String)],
    proof: Option<dpop::Checked>,
) -> Response {
    let Some(token) = param(pairs, "refresh_token") else {
        return bad_request("invalid_request", "the request has no refresh_token");
    };
    let Some((gid, generation)) = p.parse_refresh_token(token) else {
        return bad_request(
            "invalid_grant",
            "the refresh token is unknown, expired or used",
        );
    };
    // One refresh of a grant at a time: the grant moves from one generation to the next once.
    let lock = refreshing_key(&gid);
    match p
        .store
        .insert_new(&lock, b"1".to_vec(), REFRESH_LOCK_TTL)
        .await
    {
        Ok(true) => {}
        Ok(false) => {
            return bad_request(
                "invalid_grant",
                "another refresh of this sign-in is under way; use the refresh token it returns",
            );
        }
        Err(e) => {
            tracing::warn!(error = %e, "cannot refresh a grant");
            return busy();
        }
    }
    let answer = refresh_locked(p, client, pairs, proof, &gid, generation).await;
    let _ = p.store.delete(&lock).await;
    answer
}

/// How long a refresh holds its grant's lock at most (a replica that dies holding it).
const REFRESH_LOCK_TTL: std::time::Duration = std::time::Duration::from_secs(10);

/// A refresh of generation `generation` of grant `gid`, holding its lock.
async fn refresh_locked(
    p: &Inner,
    client: &KnownClient,
    pairs: &[(String, String)],
    proof: Option<dpop::Checked>,
    gid: &str,
    generation: u64,
) -> Response {
    let jkt = proof.as_ref().map(|c| c.jkt.clone());
    let invalid_grant = |why: &str| bad_request("invalid_grant", why);
    let mut grant: Grant = match p.store.get(&grant_key(gid)).await {
        Ok(Some(b)) => match p.parse_grant(gid, &b) {
            Some(g) => g,
            None => return invalid_grant("the sign-in ended; sign in again"),
        },
        Ok(None) => return invalid_grant("the sign-in ended; sign in again"),
        Err(e) => {
            tracing::warn!(error = %e, "cannot read a grant");
            return busy();
        }
    };
    let Some(state) = grant.refresh.clone() else {
        return invalid_grant("the refresh token is unknown, expired or used");
    };
    if generation < state.generation {
        // An older token: whoever used its successor may not be the client.
        p.revoke(gid).await;
        return invalid_grant(
            "the refresh token was used before (it is rotated at each use); the sign-in is revoked",
        );
    }
    if generation > state.generation {
        return invalid_grant("the refresh token is unknown, expired or used");
    }
    if grant.client_id != client.id {
        return invalid_grant("the refresh token was issued to another client");
    }
    if let Some(bound) = &state.jkt
        && jkt.as_deref() != Some(bound.as_str())
    {
        return bad_request(
            "invalid_dpop_proof",
            "the refresh token is bound to a DPoP key: prove possession of it",
        );
    }
    // The policy again: a user who lost a scope loses it now.
    let allowed = p.policy.filter(
        &UpstreamUser::new(&grant.subject, &grant.claims),
        &grant.scopes,
    );
    let scopes = match p.granted_scopes(param(pairs, "scope"), Some(&allowed)) {
        Ok(s) => s,
        Err(e) => return bad_request("invalid_scope", &e),
    };
    // The next generation; the grant lives as long as its newest refresh token.
    let next = generation + 1;
    grant.refresh = Some(RefreshState {
        generation: next,
        jkt: state.jkt,
    });
    match p.save_refreshed(gid, &grant).await {
        Some(true) => {}
        Some(false) => return invalid_grant("the sign-in ended; sign in again"),
        None => return busy(),
    }
    p.issue(
        &issued_subject(Origin::Upstream, &grant.subject),
        client,
        &scopes,
        Some(gid),
        &grant.claims,
        proof.as_ref(),
        Some(p.refresh_token(gid, next)),
    )
    .await
}

/// Enterprise-managed authorization: an ID-JAG of the trusted identity provider, presented
/// with the JWT bearer grant (RFC 7523), gives a token without a browser.
async fn jwt_bearer_grant(
    p: &Inner,
    client: &KnownClient,
    pairs: &[(String, String)],
    proof: Option<dpop::Checked>,
) -> Response {
    let invalid_grant = |why: &str| bad_request("invalid_grant", why);
    let Some(idp) = &p.idp else {
        return bad_request("unsupported_grant_type", "no identity provider is trusted");
    };
    if client.method == Method::None {
        return bad_request(
            "unauthorized_client",
            "the JWT bearer grant is for confidential clients (authenticate the client)",
        );
    }
    let Some(assertion) = param(pairs, "assertion") else {
        return bad_request("invalid_request", "the request has no assertion");
    };
    let principal = match crate::auth::TokenVerifier::verify(idp, assertion).await {
        Ok(pr) => pr,
        Err(e) if e.is_token_error() => {
            return invalid_grant(&format!("the assertion was refused: {e}"));
        }
        Err(e) => {
            tracing::warn!(error = %e, "the identity provider's keys cannot be read");
            return oauth_error(
                StatusCode::SERVICE_UNAVAILABLE,
                "temporarily_unavailable",
                "the identity provider cannot be reached",
            );
        }
    };
    let claims = principal.claims();
    let names_resource = match claims.get("resource") {
        Some(Value::String(r)) => *r == p.resource,
        Some(Value::Array(a)) => a.iter().any(|r| r.as_str() == Some(p.resource.as_str())),
        _ => false,
    };
    if !names_resource {
        return invalid_grant(&format!(
            "the assertion is not for the resource {}",
            p.resource
        ));
    }
    if claims.get("client_id").and_then(Value::as_str) != Some(client.id.as_str()) {
        return invalid_grant("the assertion was issued for another client");
    }
    if !claims.contains_key("sub") {
        return invalid_grant("the assertion names no subject");
    }
    let Some(jti) = claims.get("jti").and_then(Value::as_str) else {
        return invalid_grant("the assertion has no jti");
    };
    let exp = claims.get("exp").and_then(Value::as_u64).unwrap_or(0);
    let remaining = std::time::Duration::from_secs(exp.saturating_sub(now()) + 60);
    let jti_key = format!(
        "jag:{}",
        digest(&format!(
            "{}\n{jti}",
            principal.issuer().unwrap_or_default()
        ))
    );
    match p
        .store
        .insert_new(&jti_key, b"1".to_vec(), ttl(remaining))
        .await
    {
        Ok(true) => {}
        Ok(false) => return invalid_grant("the assertion was used before"),
        Err(_) => {
            return oauth_error(
                StatusCode::SERVICE_UNAVAILABLE,
                "temporarily_unavailable",
                "the authorization server is busy",
            );
        }
    }
    let asserted: Vec<String> = principal.scopes().iter().cloned().collect();
    let scopes = match p.granted_scopes(
        param(pairs, "scope")
            .or(Some(&asserted.join(" ")))
            .filter(|s| !s.is_empty()),
        Some(&asserted),
    ) {
        Ok(s) => s,
        Err(e) => return bad_request("invalid_scope", &e),
    };
    let scopes = p
        .policy
        .filter(&UpstreamUser::new(principal.subject(), claims), &scopes);
    tracing::info!(client_id = %clip(&client.id), "a token was issued for an enterprise assertion");
    p.issue(
        &issued_subject(Origin::IdJag, principal.subject()),
        client,
        &scopes,
        None,
        &serde_json::Map::new(),
        proof.as_ref(),
        None,
    )
    .await
}

#[cfg(test)]
mod tests {
    use super::{Origin, address_group, clip_long, issued_subject, network_group, printable};
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
