//! The authorization proxy end to end, against real parts: the upstream is oidc-provider
//! (OpenID Certified, pinned in scripts/peers/package.json) configured WITHOUT dynamic
//! registration, with one confidential client for the proxy and a login form; the MCP server is
//! `examples/oauth_proxy.rs` (built by this test) or, for what the example does not configure
//! (DPoP advertised, a trusted enterprise identity provider, a tool that calls the upstream), a
//! server built here the same way. The browser part of each sign-in is this test acting as a
//! user agent: it follows redirects keeping each host's cookies, logs in at oidc-provider's
//! form, and posts the proxy's consent form with `approve`.
//!
//! The TypeScript SDK client (`@modelcontextprotocol/client`) and the Python SDK client (`mcp`,
//! pinned in scripts/peers/requirements.txt) sign in from their own processes
//! (tests/auth/proxy-client.mjs, tests/auth/proxy_client.py); this test is their browser.
//!
//! Replicas: two copies of the example sharing a real `redis-server` (Debian's, started by
//! tests/src/redis.rs) and the proxy's secret finish each other's sign-ins; the Redis store is
//! tested on its own against the same server. The official conformance suite's
//! `authorization` scenarios run against the example, this test being the suite's browser.
//!
//! Needs `--features client,auth-proxy,redis`, `$SAKE_NODE` / `$SAKE_NODE_MODULES`,
//! `$SAKE_CONFORMANCE` and `$SAKE_PYTHON` (scripts/test.sh exports them), and `redis-server`.
//! Without them the tests fail: they never pass unrun.

mod oidc;
#[allow(dead_code)] // Only part of the harness is used here.
#[path = "../../tests/src/redis.rs"]
mod redis_server;

use std::collections::HashMap;
use std::net::{IpAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http::header::{AUTHORIZATION, CONTENT_TYPE, COOKIE, LOCATION, SET_COOKIE};
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use oidc::AuthorizationServer;
use sake::client::Client;
use sake::client::auth::{Callback, IdJag, OAuth, RegisteredClient, UserStep, UserStepFuture};
use sake::prelude::*;
use sake_runtime::auth::Principal;
use sake_runtime::auth::proxy::{
    AuthProxy, Bound, Insertion, MemoryProxyStore, ProxyClient, ProxyStore as _, Upstream, Users,
};
use sake_runtime::redis::RedisProxyStore;
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

const UPSTREAM_ID: &str = "proxy-upstream";
const UPSTREAM_SECRET: &str = "proxy-upstream-secret";
const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;

// --- the tools of the servers built here -------------------------------------------------------

/// Who the caller is.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Who {
    subject: String,
}

/// Says who you are.
#[tool]
fn whoami(principal: Principal) -> Who {
    Who {
        subject: principal.subject().to_owned(),
    }
}

/// Needs the admin scope.
#[tool(scopes("admin"))]
fn admin_report(principal: Principal) -> String {
    format!("Report for {}", principal.subject())
}

/// Where the upstream's userinfo endpoint is (set by the test that uses it).
static USERINFO: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Calls the upstream provider's userinfo endpoint with the upstream token the proxy keeps.
#[tool]
async fn upstream_userinfo(principal: Principal) -> Result<String, String> {
    let session = principal.upstream().ok_or("no upstream sign-in")?;
    let token = session.access_token().await.map_err(|e| e.to_string())?;
    let userinfo = USERINFO.get().ok_or("no userinfo endpoint")?.clone();
    let http: HyperClient<HttpConnector, Full<Bytes>> =
        HyperClient::builder(TokioExecutor::new()).build_http();
    let request = Request::get(userinfo)
        .header(AUTHORIZATION, format!("Bearer {token}"))
        .body(Full::new(Bytes::new()))
        .map_err(|e| e.to_string())?;
    let response = http.request(request).await.map_err(|e| e.to_string())?;
    let status = response.status();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    if !status.is_success() {
        return Err(format!("userinfo answered {status}"));
    }
    let v: Value = serde_json::from_slice(&body).map_err(|e| e.to_string())?;
    Ok(format!(
        "{} {}",
        v["sub"].as_str().unwrap_or(""),
        digest(&token)
    ))
}

// --- the parts ----------------------------------------------------------------------------------

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn digest(s: &str) -> String {
    B64.encode(Sha256::digest(s.as_bytes()))
}

/// oidc-provider as the upstream: no registration, a login form, the proxy's confidential
/// client with the callbacks of `ports`.
fn upstream(ports: &[u16], extra: &[(&str, &str)]) -> AuthorizationServer {
    let redirects: Vec<String> = ports
        .iter()
        .map(|p| format!("http://127.0.0.1:{p}/oauth/callback"))
        .collect();
    let clients = json!([{
        "client_id": UPSTREAM_ID,
        "client_secret": UPSTREAM_SECRET,
        "token_endpoint_auth_method": "client_secret_basic",
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "redirect_uris": redirects,
    }])
    .to_string();
    let mut env = vec![
        ("AS_REGISTRATION", "off"),
        ("AS_LOGIN_FORM", "1"),
        ("AS_CLIENTS", clients.as_str()),
    ];
    env.extend_from_slice(extra);
    AuthorizationServer::start(&env)
}

/// The path of the example binary, built once per test binary.
fn example() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let exe = std::env::current_exe().unwrap();
            let profile_dir = exe.parent().and_then(Path::parent).unwrap().to_owned();
            let target_dir = profile_dir.parent().unwrap();
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            let status = Command::new(cargo)
                .args([
                    "build",
                    "--quiet",
                    "--example",
                    "oauth_proxy",
                    "--features",
                    "auth-proxy,redis",
                ])
                .arg("--manifest-path")
                .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml"))
                .arg("--target-dir")
                .arg(target_dir)
                .status()
                .expect("running cargo to build examples/oauth_proxy.rs");
            assert!(status.success(), "cargo build --example oauth_proxy failed");
            profile_dir.join("examples/oauth_proxy")
        })
        .clone()
}

/// `examples/oauth_proxy.rs` on `port`, killed when dropped.
struct Example {
    child: Child,
    base: String,
}

impl Example {
    fn start(port: u16, upstream: &AuthorizationServer) -> Self {
        Example::start_with(port, upstream, &[])
    }

    /// With more environment (`PUBLIC_URL`, `PROXY_SECRET`, `REDIS_URL`, …).
    fn start_with(port: u16, upstream: &AuthorizationServer, env: &[(&str, &str)]) -> Self {
        let mut child = Command::new(example())
            .env("PORT", port.to_string())
            .env("UPSTREAM_ISSUER", &upstream.issuer)
            .env("UPSTREAM_CLIENT_ID", UPSTREAM_ID)
            .env("UPSTREAM_CLIENT_SECRET", UPSTREAM_SECRET)
            .env("ALLOW_HTTP_CLIENT_METADATA", "1")
            .env("ADMIN_SUBJECTS", "alice")
            .env("RUST_LOG", "warn")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("running examples/oauth_proxy");
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return Example {
                    child,
                    base: format!("http://127.0.0.1:{port}"),
                };
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!("examples/oauth_proxy exited: {status}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        panic!("examples/oauth_proxy is not listening on {port}");
    }

    fn mcp(&self) -> String {
        format!("{}/mcp", self.base)
    }
}

impl Drop for Example {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A server built here with the proxy: its base URL and the proxy.
async fn in_process(
    upstream: &AuthorizationServer,
    listener: tokio::net::TcpListener,
    configure: impl FnOnce(
        sake_runtime::auth::proxy::AuthProxyBuilder,
    ) -> sake_runtime::auth::proxy::AuthProxyBuilder,
    authorization: impl FnOnce(sake_runtime::auth::Authorization) -> sake_runtime::auth::Authorization,
) -> (String, AuthProxy) {
    let base = format!("http://{}", listener.local_addr().unwrap());
    let proxy = configure(
        AuthProxy::builder(
            &base,
            "/mcp",
            Upstream::oidc(&upstream.issuer, UPSTREAM_ID, UPSTREAM_SECRET),
        )
        .scopes_supported(["mcp:tools", "admin"])
        .default_scopes(["mcp:tools"])
        .grant_scope("admin", Users::new().subjects(["alice"]))
        .allow_http_client_metadata(true),
    )
    .build()
    .unwrap();
    let service = sake::Server::from_registry()
        .authorization(authorization(
            proxy.authorization().challenge_scopes(["mcp:tools"]),
        ))
        .build()
        .unwrap();
    tokio::spawn(service.serve(listener, std::future::pending()));
    (base, proxy)
}

// --- the user agent ----------------------------------------------------------------------------

/// What a page answered.
struct Page {
    status: StatusCode,
    url: String,
    location: Option<String>,
    body: String,
}

/// Where a request for a URL is sent: a balancer in front of replicas (the URL connected to).
type Balance = Arc<dyn Fn(&str) -> String + Send + Sync>;

/// A browser without a screen: cookies per host, redirects followed, forms read and posted.
#[derive(Default)]
struct UserAgent {
    cookies: HashMap<String, HashMap<String, String>>,
    http: Option<HyperClient<HttpConnector, Full<Bytes>>>,
    /// A balancer: the URL a request really goes to (cookies stay the public origin's).
    balance: Option<Balance>,
}

fn authority(url: &str) -> String {
    url.split('/').nth(2).unwrap_or_default().to_owned()
}

fn origin(url: &str) -> String {
    url.split('/').take(3).collect::<Vec<_>>().join("/")
}

fn resolve(base: &str, location: &str) -> String {
    if location.starts_with('/') {
        format!("{}{location}", origin(base))
    } else {
        location.to_owned()
    }
}

/// The value of `name="…"` attributes of the form fields in `html`.
fn form_fields(html: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for input in html.split("<input").skip(1) {
        let tag = input.split('>').next().unwrap_or_default();
        let attr = |a: &str| {
            tag.split(&format!("{a}=\""))
                .nth(1)
                .and_then(|r| r.split('"').next())
                .map(|v| {
                    v.replace("&quot;", "\"")
                        .replace("&#39;", "'")
                        .replace("&lt;", "<")
                        .replace("&gt;", ">")
                        .replace("&amp;", "&")
                })
        };
        if let Some(n) = attr("name") {
            out.push((n, attr("value").unwrap_or_default()));
        }
    }
    out
}

fn form_action(html: &str, page: &str) -> String {
    let action = html
        .split("<form")
        .nth(1)
        .and_then(|f| f.split("action=\"").nth(1))
        .and_then(|r| r.split('"').next())
        .expect("a form with an action")
        .replace("&amp;", "&");
    resolve(page, &action)
}

impl UserAgent {
    fn new() -> Self {
        UserAgent {
            cookies: HashMap::new(),
            http: Some(HyperClient::builder(TokioExecutor::new()).build_http()),
            balance: None,
        }
    }

    /// A browser whose connections come from `ip` (127.0.0.2: another client than 127.0.0.1).
    fn from_address(ip: IpAddr) -> Self {
        let mut connector = HttpConnector::new();
        connector.set_local_address(Some(ip));
        UserAgent {
            cookies: HashMap::new(),
            http: Some(HyperClient::builder(TokioExecutor::new()).build(connector)),
            balance: None,
        }
    }

    /// A browser behind a balancer that sends each request where `balance` says.
    fn balanced(balance: Balance) -> Self {
        UserAgent {
            balance: Some(balance),
            ..UserAgent::new()
        }
    }

    async fn send(
        &mut self,
        method: Method,
        url: &str,
        headers: &[(&str, &str)],
        body: Option<String>,
    ) -> Page {
        let target = self
            .balance
            .as_ref()
            .map_or_else(|| url.to_owned(), |b| b(url));
        let mut request = Request::builder().method(method).uri(&target);
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        if let Some(jar) = self.cookies.get(&authority(url)).filter(|j| !j.is_empty()) {
            let cookie: Vec<String> = jar.iter().map(|(k, v)| format!("{k}={v}")).collect();
            request = request.header(COOKIE, cookie.join("; "));
        }
        let request = request
            .body(Full::new(Bytes::from(body.unwrap_or_default())))
            .unwrap();
        let response = tokio::time::timeout(
            Duration::from_secs(15),
            self.http.as_ref().unwrap().request(request),
        )
        .await
        .unwrap_or_else(|_| panic!("no answer from {url}"))
        .unwrap_or_else(|e| panic!("{url}: {e}"));
        let jar = self.cookies.entry(authority(url)).or_default();
        for c in response.headers().get_all(SET_COOKIE) {
            let text = c.to_str().unwrap();
            let pair = text.split(';').next().unwrap();
            if let Some((k, v)) = pair.split_once('=') {
                if text.to_ascii_lowercase().contains("max-age=0") || v.is_empty() {
                    jar.remove(k.trim());
                } else {
                    jar.insert(k.trim().to_owned(), v.to_owned());
                }
            }
        }
        let status = response.status();
        let location = response
            .headers()
            .get(LOCATION)
            .map(|l| resolve(url, l.to_str().unwrap()));
        let body = response.into_body().collect().await.unwrap().to_bytes();
        Page {
            status,
            url: url.to_owned(),
            location,
            body: String::from_utf8_lossy(&body).into_owned(),
        }
    }

    async fn get(&mut self, url: &str) -> Page {
        self.send(Method::GET, url, &[], None).await
    }

    async fn post_form(&mut self, url: &str, fields: &[(String, String)], from: &str) -> Page {
        let body = oidc::form(
            &fields
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect::<Vec<_>>(),
        );
        let origin = origin(from);
        self.send(
            Method::POST,
            url,
            &[
                (CONTENT_TYPE.as_str(), "application/x-www-form-urlencoded"),
                ("origin", &origin),
            ],
            Some(body),
        )
        .await
    }

    /// Follows `url` as a person would — redirects, the upstream login form (as `user`), the
    /// proxy's consent form (approved) — until a redirect to `until`; returns that URL,
    /// unopened.
    async fn sign_in(&mut self, url: &str, until: &str, user: &str) -> String {
        let mut page = self.get(url).await;
        for _ in 0..24 {
            if let Some(next) = page.location.clone() {
                if next.starts_with(until) {
                    return next;
                }
                page = self.get(&next).await;
                continue;
            }
            assert_eq!(page.status, StatusCode::OK, "{}: {}", page.url, page.body);
            if page.body.contains("name=\"approve\"") {
                let mut fields: Vec<(String, String)> = form_fields(&page.body)
                    .into_iter()
                    .filter(|(n, _)| n != "deny")
                    .collect();
                fields.push(("approve".into(), "1".into()));
                let action = form_action(&page.body, &page.url);
                page = self.post_form(&action, &fields, &page.url).await;
            } else if page.body.contains("name=\"login\"") {
                let action = form_action(&page.body, &page.url);
                let fields = vec![
                    ("login".to_owned(), user.to_owned()),
                    ("password".to_owned(), "secret".to_owned()),
                    ("submit".to_owned(), "1".to_owned()),
                ];
                page = self.post_form(&action, &fields, &page.url).await;
            } else {
                panic!("an unexpected page at {}: {}", page.url, page.body);
            }
        }
        panic!("the sign-in did not end at {until}");
    }
}

/// sake's client's browser: this test's user agent.
struct AgentStep {
    redirect_uri: String,
    user: String,
    seen: Arc<std::sync::Mutex<Vec<String>>>,
    /// The address its connections come from.
    from: Option<IpAddr>,
}

impl UserStep for AgentStep {
    fn redirect_uri(&self) -> String {
        self.redirect_uri.clone()
    }

    fn authorize<'a>(&'a self, url: &'a str) -> UserStepFuture<'a> {
        Box::pin(async move {
            self.seen.lock().unwrap().push(url.to_owned());
            let mut ua = self
                .from
                .map_or_else(UserAgent::new, UserAgent::from_address);
            let back = ua.sign_in(url, &self.redirect_uri, &self.user).await;
            Ok(Callback::from_url(&back))
        })
    }
}

fn agent(user: &str) -> (AgentStep, Arc<std::sync::Mutex<Vec<String>>>) {
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    (
        AgentStep {
            redirect_uri: format!("http://127.0.0.1:{}/callback", free_port()),
            user: user.to_owned(),
            seen: seen.clone(),
            from: None,
        },
        seen,
    )
}

fn client_builder() -> sake::client::ClientBuilder {
    Client::builder()
        .cache(sake::client::EraCache::new())
        .timeout(Duration::from_secs(30))
}

async fn json_of(ua: &mut UserAgent, url: &str) -> Value {
    let page = ua.get(url).await;
    assert_eq!(page.status, StatusCode::OK, "{url}: {}", page.body);
    serde_json::from_str(&page.body).unwrap()
}

/// Registers a public client at the proxy with `redirect_uri`.
async fn register(ua: &mut UserAgent, base: &str, redirect_uri: &str) -> String {
    let page = ua
        .send(
            Method::POST,
            &format!("{base}/oauth/register"),
            &[(CONTENT_TYPE.as_str(), "application/json")],
            Some(json!({"redirect_uris": [redirect_uri], "client_name": "Attack test", "token_endpoint_auth_method": "none", "grant_types": ["authorization_code", "refresh_token"]}).to_string()),
        )
        .await;
    assert_eq!(page.status, StatusCode::CREATED, "{}", page.body);
    let v: Value = serde_json::from_str(&page.body).unwrap();
    assert!(v.get("client_secret").is_none());
    v["client_id"].as_str().unwrap().to_owned()
}

struct Pkce {
    verifier: String,
    challenge: String,
}

fn pkce() -> Pkce {
    let verifier = B64.encode(rand32());
    Pkce {
        challenge: B64.encode(Sha256::digest(verifier.as_bytes())),
        verifier,
    }
}

fn rand32() -> [u8; 32] {
    let mut b = [0u8; 32];
    getrandom::fill(&mut b).unwrap();
    b
}

fn authorize_url(
    base: &str,
    client_id: &str,
    redirect_uri: &str,
    challenge: &str,
    extra: &[(&str, &str)],
) -> String {
    let mut params = vec![
        ("response_type", "code"),
        ("client_id", client_id),
        ("redirect_uri", redirect_uri),
        ("code_challenge", challenge),
        ("code_challenge_method", "S256"),
        ("state", "st-1"),
        ("scope", "mcp:tools"),
    ];
    for (k, v) in extra {
        params.retain(|(n, _)| n != k);
        if !v.is_empty() {
            params.push((k, v));
        }
    }
    format!("{base}/oauth/authorize?{}", oidc::form(&params))
}

async fn token_request(
    ua: &mut UserAgent,
    base: &str,
    fields: &[(&str, &str)],
    dpop: Option<&str>,
) -> (StatusCode, Value) {
    let mut headers = vec![(CONTENT_TYPE.as_str(), "application/x-www-form-urlencoded")];
    if let Some(p) = dpop {
        headers.push(("dpop", p));
    }
    let page = ua
        .send(
            Method::POST,
            &format!("{base}/oauth/token"),
            &headers,
            Some(oidc::form(fields)),
        )
        .await;
    (
        page.status,
        serde_json::from_str(&page.body).unwrap_or(Value::Null),
    )
}

/// A full sign-in of a registered public client by hand, as alice: its code.
async fn code_for(
    base: &str,
    client_id: &str,
    redirect_uri: &str,
    pkce: &Pkce,
    extra: &[(&str, &str)],
) -> String {
    code_of(base, client_id, redirect_uri, pkce, extra, "alice").await
}

/// A full sign-in of a registered public client by hand, as `user`: its code.
async fn code_of(
    base: &str,
    client_id: &str,
    redirect_uri: &str,
    pkce: &Pkce,
    extra: &[(&str, &str)],
    user: &str,
) -> String {
    let url = authorize_url(base, client_id, redirect_uri, &pkce.challenge, extra);
    let back = UserAgent::new().sign_in(&url, redirect_uri, user).await;
    let q = oidc::query(&back);
    assert_eq!(q.get("state").map(String::as_str), Some("st-1"), "{back}");
    assert_eq!(q.get("iss").map(String::as_str), Some(base), "{back}");
    q.get("code")
        .unwrap_or_else(|| panic!("no code: {back}"))
        .clone()
}

/// A tools/call of 2026-07-28 with `headers`: the status and the body.
async fn call(
    mcp: &str,
    tool: &str,
    headers: &[(&str, &str)],
) -> (StatusCode, HashMap<String, String>, Value) {
    let mut ua = UserAgent::new();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": {},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}}});
    let mut h = vec![
        (CONTENT_TYPE.as_str(), "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", tool),
    ];
    h.extend_from_slice(headers);
    let mut request = Request::builder().method(Method::POST).uri(mcp);
    for (k, v) in &h {
        request = request.header(*k, *v);
    }
    let response = ua
        .http
        .as_ref()
        .unwrap()
        .request(
            request
                .body(Full::new(Bytes::from(body.to_string())))
                .unwrap(),
        )
        .await
        .unwrap();
    let status = response.status();
    let headers: HashMap<String, String> = response
        .headers()
        .iter()
        .map(|(k, v)| (k.as_str().to_owned(), v.to_str().unwrap_or("").to_owned()))
        .collect();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    let _ = &mut ua;
    (
        status,
        headers,
        serde_json::from_slice(&body).unwrap_or(Value::Null),
    )
}

// --- sake's client -----------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn sakes_client_signs_in_to_the_example_in_both_eras_and_steps_up() {
    let port = free_port();
    let idp = upstream(&[port], &[]);
    let example = Example::start(port, &idp);
    let mut ua = UserAgent::new();
    // The upstream lets no client register itself.
    let upstream_meta = json_of(
        &mut ua,
        &format!("{}/.well-known/openid-configuration", idp.issuer),
    )
    .await;
    assert!(
        upstream_meta.get("registration_endpoint").is_none(),
        "{upstream_meta}"
    );
    // The proxy's metadata, on the MCP server's origin.
    let meta = json_of(
        &mut ua,
        &format!("{}/.well-known/oauth-authorization-server", example.base),
    )
    .await;
    assert_eq!(meta["issuer"], example.base);
    assert_eq!(meta["code_challenge_methods_supported"], json!(["S256"]));
    assert_eq!(meta["client_id_metadata_document_supported"], json!(true));
    assert_eq!(
        meta["registration_endpoint"],
        format!("{}/oauth/register", example.base)
    );
    let prm = json_of(
        &mut ua,
        &format!("{}/.well-known/oauth-protected-resource/mcp", example.base),
    )
    .await;
    assert_eq!(prm["authorization_servers"], json!([example.base]));
    // A bare request: 401 with the challenge.
    let (status, headers, _) = call(&example.mcp(), "whoami", &[]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert!(
        headers["www-authenticate"].contains("scope=\"mcp:tools\""),
        "{headers:?}"
    );

    for revision in [sake::Revision::V2026_07_28, sake::Revision::V2025_11_25] {
        let (step, seen) = agent("alice");
        let oauth = OAuth::authorization_code(step)
            .client_name("sake e2e")
            .build()
            .unwrap();
        let client = client_builder()
            .revision(revision)
            .auth(oauth.clone())
            .connect(&example.mcp())
            .await
            .unwrap();
        assert_eq!(client.revision(), revision);
        let who: Value = client.call("whoami", json!({})).await.unwrap();
        assert_eq!(who, json!({"subject": "upstream:alice"}), "{revision:?}");
        let tokens = oauth.tokens(&example.mcp()).await.unwrap().unwrap();
        assert_eq!(tokens.issuer, example.base);
        assert_eq!(tokens.resource, example.mcp());
        assert!(tokens.refresh_token.is_some());
        // The proxy's own token: iss its issuer, aud the MCP resource, no upstream token in it.
        let claims = oidc::claims(tokens.access_token.expose());
        assert_eq!(claims["iss"], example.base);
        assert_eq!(claims["aud"], example.mcp());
        assert_eq!(claims["sub"], "upstream:alice");
        assert_eq!(claims["scope"], "mcp:tools");
        // Step-up (the 403 challenge, in the session too): admin_report needs `admin`; the client asks again, without registering again.
        let report: String = client.call("admin_report", json!({})).await.unwrap();
        assert_eq!(report, "Report for upstream:alice: 3 servers up, 0 down.");
        let stepped = oauth.tokens(&example.mcp()).await.unwrap().unwrap();
        let claims2 = oidc::claims(stepped.access_token.expose());
        assert_eq!(claims2["scope"], "mcp:tools admin");
        assert_eq!(
            claims2["client_id"], claims["client_id"],
            "no second registration"
        );
        let urls = seen.lock().unwrap().clone();
        assert_eq!(urls.len(), 2, "{urls:?}");
        assert!(
            urls[1].contains("scope=mcp%3Atools+admin")
                || urls[1].contains("scope=mcp%3Atools%20admin"),
            "{}",
            urls[1]
        );
        // Refresh: rotated.
        oauth.refresh(&example.mcp()).await.unwrap();
        let refreshed = oauth.tokens(&example.mcp()).await.unwrap().unwrap();
        assert_ne!(refreshed.refresh_token, stepped.refresh_token, "rotated");
        let who: Value = client.call("whoami", json!({})).await.unwrap();
        assert_eq!(who, json!({"subject": "upstream:alice"}));
    }
}

/// Signs `user` in by hand asking for `scope`: the token answer.
async fn tokens_for(
    base: &str,
    client_id: &str,
    redirect: &str,
    user: &str,
    scope: &str,
) -> (StatusCode, Value) {
    let p = pkce();
    let code = code_of(base, client_id, redirect, &p, &[("scope", scope)], user).await;
    token_request(
        &mut UserAgent::new(),
        base,
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", redirect),
            ("code_verifier", &p.verifier),
            ("client_id", client_id),
        ],
        None,
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn admin_goes_only_to_the_users_the_policy_names() {
    let (port, unset_port) = (free_port(), free_port());
    let idp = upstream(&[port, unset_port], &[]);
    // ADMIN_SUBJECTS=alice.
    let example = Example::start(port, &idp);
    let base = example.base.clone();
    let redirect = format!("http://127.0.0.1:{}/callback", free_port());
    let client_id = register(&mut UserAgent::new(), &base, &redirect).await;
    // alice, named by the policy, gets what she asks for.
    let (status, alice) =
        tokens_for(&base, &client_id, &redirect, "alice", "mcp:tools admin").await;
    assert_eq!(status, StatusCode::OK, "{alice}");
    assert_eq!(alice["scope"], "mcp:tools admin");
    let bearer = format!("Bearer {}", alice["access_token"].as_str().unwrap());
    let (status, _, body) = call(
        &example.mcp(),
        "admin_report",
        &[("authorization", &bearer)],
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["result"]["content"][0]["text"],
        "Report for upstream:alice: 3 servers up, 0 down."
    );
    // bob asks for admin too: his token has only what everyone may receive, and the token
    // answer says so (RFC 6749 section 5.1).
    let (status, bob) = tokens_for(&base, &client_id, &redirect, "bob", "mcp:tools admin").await;
    assert_eq!(status, StatusCode::OK, "{bob}");
    assert_eq!(bob["scope"], "mcp:tools");
    let access = bob["access_token"].as_str().unwrap();
    assert_eq!(oidc::claims(access)["scope"], "mcp:tools");
    let bearer = format!("Bearer {access}");
    let (status, headers, _) = call(
        &example.mcp(),
        "admin_report",
        &[("authorization", &bearer)],
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let challenge = &headers["www-authenticate"];
    assert!(
        challenge.contains("error=\"insufficient_scope\"") && challenge.contains("admin"),
        "{challenge}"
    );
    // Asking for admin alone gives bob a token of no scope, never admin.
    let (status, only) = tokens_for(&base, &client_id, &redirect, "bob", "admin").await;
    assert_eq!(status, StatusCode::OK, "{only}");
    assert_eq!(only["scope"], "");
    // A refresh cannot widen it.
    let (status, answer) = token_request(
        &mut UserAgent::new(),
        &base,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", bob["refresh_token"].as_str().unwrap()),
            ("client_id", &client_id),
            ("scope", "admin"),
        ],
        None,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(answer["error"], "invalid_scope");
    assert_eq!(
        answer["error_description"],
        "the scopes admin are not available (supported: mcp:tools)"
    );
    // sake's client as bob: it steps up once, gets no admin, and stops (no loop).
    let (step, seen) = agent("bob");
    let oauth = OAuth::authorization_code(step).build().unwrap();
    let client = client_builder()
        .auth(oauth.clone())
        .connect(&example.mcp())
        .await
        .unwrap();
    let who: Value = client.call("whoami", json!({})).await.unwrap();
    assert_eq!(who, json!({"subject": "upstream:bob"}));
    let err = client
        .call::<String>("admin_report", json!({}))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "authorization failed: the server still needs the scopes [\"admin\"] after re-authorization; giving up (ask the authorization server's administrator for them)"
    );
    assert_eq!(seen.lock().unwrap().len(), 2, "signed in, stepped up once");
    let tokens = oauth.tokens(&example.mcp()).await.unwrap().unwrap();
    assert_eq!(
        oidc::claims(tokens.access_token.expose())["scope"],
        "mcp:tools"
    );

    // ADMIN_SUBJECTS unset: nobody receives admin, alice neither.
    let example = Example::start_with(unset_port, &idp, &[("ADMIN_SUBJECTS", "")]);
    let client_id = register(&mut UserAgent::new(), &example.base, &redirect).await;
    let (status, alice) = tokens_for(
        &example.base,
        &client_id,
        &redirect,
        "alice",
        "mcp:tools admin",
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{alice}");
    assert_eq!(alice["scope"], "mcp:tools");
}

/// How many refreshes `a_refresh_loop_leaves_the_store_flat` makes (`SAKE_REFRESH_LOOP`).
fn refresh_loop() -> usize {
    std::env::var("SAKE_REFRESH_LOOP")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(20_000)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refresh_loop_leaves_the_store_flat_while_another_user_signs_in() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let idp = upstream(&[port], &[]);
    // A small store: the old per-refresh reuse markers would fill it within the loop.
    let store = Arc::new(MemoryProxyStore::new(1_000, 1 << 20));
    let shared = store.clone();
    let (base, _proxy) = in_process(&idp, listener, move |b| b.store(shared), |a| a).await;
    let redirect = format!("http://127.0.0.1:{}/callback", free_port());
    let client_id = register(&mut UserAgent::new(), &base, &redirect).await;
    let (status, tokens) = tokens_for(&base, &client_id, &redirect, "alice", "mcp:tools").await;
    assert_eq!(status, StatusCode::OK, "{tokens}");
    // alice's grant and her code's reuse marker.
    let baseline = store.len();
    assert_eq!(baseline, 2);
    let refresh_with = |t: &str| {
        vec![
            ("grant_type".to_owned(), "refresh_token".to_owned()),
            ("refresh_token".to_owned(), t.to_owned()),
            ("client_id".to_owned(), client_id.clone()),
        ]
    };
    let mut ua = UserAgent::new();
    let mut send = async |fields: Vec<(String, String)>| {
        let f: Vec<(&str, &str)> = fields
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        token_request(&mut ua, &base, &f, None).await
    };
    // bob signs in while alice's client refreshes in a loop.
    let bob = {
        let (base, client_id, redirect) = (base.clone(), client_id.clone(), redirect.clone());
        tokio::spawn(
            async move { tokens_for(&base, &client_id, &redirect, "bob", "mcp:tools").await },
        )
    };
    let first = tokens["refresh_token"].as_str().unwrap().to_owned();
    let mut current = first.clone();
    let (mut most, mut most_bytes) = (0, 0);
    let n = refresh_loop();
    for i in 0..n {
        let (status, answer) = send(refresh_with(&current)).await;
        assert_eq!(status, StatusCode::OK, "refresh {i}: {answer}");
        current = answer["refresh_token"].as_str().unwrap().to_owned();
        most = most.max(store.len());
        most_bytes = most_bytes.max(store.bytes());
    }
    let (status, bob) = bob.await.unwrap();
    assert_eq!(status, StatusCode::OK, "bob signed in meanwhile: {bob}");
    assert_eq!(bob["scope"], "mcp:tools");
    // Nothing grew per refresh: alice's two entries, bob's two, and at most bob's sign-in
    // under way and his code while the loop ran.
    assert_eq!(store.len(), baseline + 2, "after {n} refreshes");
    assert!(
        most <= baseline + 4,
        "{most} entries at most during {n} refreshes"
    );
    assert!(most_bytes < 16 * 1024, "{most_bytes} bytes at most");
    eprintln!("{n} refreshes: at most {most} entries, {most_bytes} bytes in the store");
    // A forged generation (its MAC does not verify) is unknown, and revokes nothing.
    let (gid, rest) = current.split_once('.').unwrap();
    let (generation, mac) = rest.split_once('.').unwrap();
    assert_eq!(generation, n.to_string());
    let forged = format!("{gid}.{}.{mac}", n + 1);
    let (status, e) = send(refresh_with(&forged)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        (e["error"].as_str(), e["error_description"].as_str()),
        (
            Some("invalid_grant"),
            Some("the refresh token is unknown, expired or used")
        )
    );
    let (status, answer) = send(refresh_with(&current)).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let latest = answer["refresh_token"].as_str().unwrap().to_owned();
    // The first token of the grant, used again: the grant is revoked, its newest token too.
    let (status, e) = send(refresh_with(&first)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        (e["error"].as_str(), e["error_description"].as_str()),
        (
            Some("invalid_grant"),
            Some(
                "the refresh token was used before (it is rotated at each use); the sign-in is revoked"
            )
        )
    );
    let (status, e) = send(refresh_with(&latest)).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(
        (e["error"].as_str(), e["error_description"].as_str()),
        (
            Some("invalid_grant"),
            Some("the sign-in ended; sign in again")
        )
    );
    // alice's grant is gone, a mark of its revocation kept in its place (until its refresh
    // tokens would have expired).
    assert_eq!(store.len(), baseline + 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cimd_client_signs_in_without_registering() {
    let port = free_port();
    let idp = upstream(&[port], &[]);
    let example = Example::start(port, &idp);
    // The client hosts its metadata document (plain http on loopback: the example allows it
    // with ALLOW_HTTP_CLIENT_METADATA=1).
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let doc_url = format!("http://{}/client.json", listener.local_addr().unwrap());
    let (step, seen) = agent("bob");
    let redirect = step.redirect_uri();
    let oauth = OAuth::authorization_code(step)
        .client_metadata_document(&doc_url)
        .client_name("CIMD e2e")
        .dynamic_registration(false)
        .build()
        .unwrap();
    let doc = oauth.client_metadata(&[&redirect]).unwrap();
    let fetched = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = fetched.clone();
    let app = axum::Router::new().route(
        "/client.json",
        axum::routing::get(move || {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let doc = doc.to_string();
            async move { ([(CONTENT_TYPE, "application/json")], doc) }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let client = client_builder()
        .auth(oauth.clone())
        .connect(&example.mcp())
        .await
        .unwrap();
    let who: Value = client.call("whoami", json!({})).await.unwrap();
    assert_eq!(who, json!({"subject": "upstream:bob"}));
    let tokens = oauth.tokens(&example.mcp()).await.unwrap().unwrap();
    assert_eq!(
        oidc::claims(tokens.access_token.expose())["client_id"],
        doc_url
    );
    assert!(seen.lock().unwrap()[0].contains("client_id=http%3A%2F%2F127.0.0.1"));
    assert!(fetched.load(std::sync::atomic::Ordering::SeqCst) >= 1);
    // The consent page named the document's client.
    let mut ua = UserAgent::new();
    let p = pkce();
    let page = ua
        .get(&authorize_url(
            &example.base,
            &doc_url,
            &redirect,
            &p.challenge,
            &[],
        ))
        .await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(
        page.body.contains("CIMD e2e") && page.body.contains(&redirect),
        "{}",
        page.body
    );
}

// --- attacks -----------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn every_attack_is_refused() {
    let port = free_port();
    let port2 = free_port();
    let idp = upstream(&[port, port2], &[]);
    let example = Example::start(port, &idp);
    let base = example.base.clone();
    let mut ua = UserAgent::new();
    let redirect = format!("http://127.0.0.1:{}/cb", free_port());
    let client_id = register(&mut ua, &base, &redirect).await;
    let p = pkce();

    // An unregistered redirect URI: an error page, never a redirect. Matching is exact: the
    // registered URI with a path walked out of it, a query added, on another port, with a
    // trailing slash or another case is another URI.
    let (authority_of_redirect, path_of_redirect) = redirect
        .strip_prefix("http://")
        .unwrap()
        .split_once('/')
        .unwrap();
    let other_port = format!("http://127.0.0.1:{}/{path_of_redirect}", free_port());
    let upper = format!("http://{authority_of_redirect}/CB");
    for unregistered in [
        "http://127.0.0.1:9/evil".to_owned(),
        format!("{redirect}/../x"),
        format!("{redirect}/../../evil"),
        format!("{redirect}?a"),
        format!("{redirect}?a=1&b=2"),
        other_port,
        format!("{redirect}/"),
        upper,
        format!("http://localhost:{}", redirect.rsplit_once(':').unwrap().1),
    ] {
        let page = ua
            .get(&authorize_url(
                &base,
                &client_id,
                &unregistered,
                &p.challenge,
                &[],
            ))
            .await;
        assert_eq!(page.status, StatusCode::BAD_REQUEST, "{unregistered}");
        assert!(page.location.is_none(), "{unregistered}");
        assert!(
            page.body.contains("Invalid redirect URI"),
            "{unregistered}: {}",
            page.body
        );
    }
    // An unknown client, too.
    let page = ua
        .get(&authorize_url(
            &base,
            "sake_forged.AAAA",
            &redirect,
            &p.challenge,
            &[],
        ))
        .await;
    assert_eq!(
        (page.status, page.location.is_none()),
        (StatusCode::BAD_REQUEST, true)
    );

    // PKCE plain, or none at all: refused before anyone signs in.
    for extra in [
        vec![
            ("code_challenge_method", "plain"),
            ("code_challenge", p.verifier.as_str()),
        ],
        vec![("code_challenge_method", ""), ("code_challenge", "")],
        vec![("code_challenge_method", "")],
    ] {
        let page = ua
            .get(&authorize_url(
                &base,
                &client_id,
                &redirect,
                &p.challenge,
                &extra,
            ))
            .await;
        assert_eq!(page.status, StatusCode::FOUND);
        let q = oidc::query(page.location.as_deref().unwrap());
        assert_eq!(q["error"], "invalid_request", "{extra:?}");
        assert_eq!(q["state"], "st-1");
        assert_eq!(q["iss"], base);
        assert!(!q.contains_key("code"));
    }

    // A token for another resource: refused at authorization and at the token endpoint.
    let page = ua
        .get(&authorize_url(
            &base,
            &client_id,
            &redirect,
            &p.challenge,
            &[("resource", "http://127.0.0.1:1/other")],
        ))
        .await;
    assert_eq!(
        oidc::query(page.location.as_deref().unwrap())["error"],
        "invalid_target"
    );

    // Skipped consent: the form posted cross-site, or by another browser, approves nothing.
    let url = authorize_url(&base, &client_id, &redirect, &p.challenge, &[]);
    let mut victim = UserAgent::new();
    let consent = victim.get(&url).await;
    assert_eq!(consent.status, StatusCode::OK);
    assert!(consent.body.contains("Attack test") && consent.body.contains(&redirect));
    assert!(
        consent
            .body
            .contains("<button type=\"submit\" name=\"approve\"")
    );
    let mut fields = form_fields(&consent.body);
    fields.push(("approve".into(), "1".into()));
    let action = form_action(&consent.body, &consent.url);
    let cross = victim
        .post_form(&action, &fields, "http://evil.example/page")
        .await;
    assert_eq!(cross.status, StatusCode::FORBIDDEN, "{}", cross.body);
    let mut attacker = UserAgent::new();
    let other = attacker.post_form(&action, &fields, &consent.url).await;
    assert_eq!(other.status, StatusCode::FORBIDDEN, "{}", other.body);
    assert!(other.location.is_none());
    // A callback completed in a browser that did not approve yields no code: the victim
    // approves and signs in upstream; the attacker opens the callback URL.
    let approved = victim.post_form(&action, &fields, &consent.url).await;
    assert_eq!(approved.status, StatusCode::SEE_OTHER);
    let callback = victim
        .sign_in(
            approved.location.as_deref().unwrap(),
            &format!("{base}/oauth/callback"),
            "alice",
        )
        .await;
    let stolen = attacker.get(&callback).await;
    assert_eq!(stolen.status, StatusCode::FORBIDDEN);
    assert!(stolen.location.is_none(), "no code for the attacker");
    let mine = victim.get(&callback).await;
    let code = oidc::query(mine.location.as_deref().unwrap())["code"].clone();
    // The callback works once.
    assert!(victim.get(&callback).await.location.is_none());

    // The token endpoint: PKCE verifier, redirect URI, then the code once only.
    let fields = |code: &str, verifier: &str, redirect: &str| {
        vec![
            ("grant_type".to_owned(), "authorization_code".to_owned()),
            ("code".to_owned(), code.to_owned()),
            ("code_verifier".to_owned(), verifier.to_owned()),
            ("redirect_uri".to_owned(), redirect.to_owned()),
            ("client_id".to_owned(), client_id.clone()),
        ]
    };
    let as_refs = |v: &Vec<(String, String)>| {
        v.iter()
            .map(|(a, b)| (a.clone(), b.clone()))
            .collect::<Vec<_>>()
    };
    let send = |v: Vec<(String, String)>| {
        let base = base.clone();
        async move {
            let refs: Vec<(&str, &str)> = v.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
            token_request(&mut UserAgent::new(), &base, &refs, None).await
        }
    };
    let wrong = pkce();
    let (s, e) = send(as_refs(&fields(&code, &wrong.verifier, &redirect))).await;
    assert_eq!(
        (s, e["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_grant")),
        "{e}"
    );
    // That attempt used the code up: a second try (even a right one) is reuse.
    let (s, e) = send(as_refs(&fields(&code, &p.verifier, &redirect))).await;
    assert_eq!(
        (s, e["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_grant")),
        "{e}"
    );

    // A fresh code: redeemed once; the second redemption fails and revokes the grant.
    let code = code_for(&base, &client_id, &redirect, &p, &[]).await;
    let (s, tokens) = send(as_refs(&fields(&code, &p.verifier, &redirect))).await;
    assert_eq!(s, StatusCode::OK, "{tokens}");
    assert_eq!(tokens["token_type"], "Bearer");
    let keys: Vec<&String> = tokens.as_object().unwrap().keys().collect();
    assert_eq!(
        keys.len(),
        5,
        "only the proxy's tokens, never the upstream's: {keys:?}"
    );
    let (s, e) = send(as_refs(&fields(&code, &p.verifier, &redirect))).await;
    assert_eq!(
        (s, e["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_grant")),
        "{e}"
    );
    let refresh = tokens["refresh_token"].as_str().unwrap();
    let (s, e) = send(vec![
        ("grant_type".into(), "refresh_token".into()),
        ("refresh_token".into(), refresh.into()),
        ("client_id".into(), client_id.clone()),
    ])
    .await;
    assert_eq!(
        (s, e["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_grant")),
        "revoked: {e}"
    );

    // Refresh tokens rotate; an old one used again ends the sign-in.
    let code = code_for(&base, &client_id, &redirect, &p, &[]).await;
    let (_, tokens) = send(as_refs(&fields(&code, &p.verifier, &redirect))).await;
    let first = tokens["refresh_token"].as_str().unwrap().to_owned();
    let refresh_with = |t: &str| {
        vec![
            ("grant_type".to_owned(), "refresh_token".to_owned()),
            ("refresh_token".to_owned(), t.to_owned()),
            ("client_id".to_owned(), client_id.clone()),
        ]
    };
    let (s, second) = send(refresh_with(&first)).await;
    assert_eq!(s, StatusCode::OK, "{second}");
    let second_rt = second["refresh_token"].as_str().unwrap().to_owned();
    assert_ne!(second_rt, first);
    let (s, e) = send(refresh_with(&first)).await;
    assert_eq!(
        (s, e["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_grant"))
    );
    let (s, _) = send(refresh_with(&second_rt)).await;
    assert_eq!(
        s,
        StatusCode::BAD_REQUEST,
        "the reuse revoked the whole sign-in"
    );

    // Another instance with the same upstream credentials accepts none of these tokens.
    let access = second["access_token"].as_str().unwrap();
    let (s, _, _) = call(
        &example.mcp(),
        "whoami",
        &[("authorization", &format!("Bearer {access}"))],
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    let twin = Example::start(port2, &idp);
    let (s, h, _) = call(
        &twin.mcp(),
        "whoami",
        &[("authorization", &format!("Bearer {access}"))],
    )
    .await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    assert!(h["www-authenticate"].contains("invalid_token"), "{h:?}");
    // Nor does the twin's token endpoint know the codes or clients of the first.
    let page = ua
        .get(&authorize_url(
            &twin.base,
            &client_id,
            &redirect,
            &p.challenge,
            &[],
        ))
        .await;
    assert_eq!(page.status, StatusCode::BAD_REQUEST);

    // A metadata document URL that points at a private address (or anything but https, or
    // localhost over https): refused before anything is fetched from it.
    // The page says why.
    let private = |ip: &str| format!("the client id URL points at the non-public address {ip}");
    for (cimd, reason) in [
        ("https://10.0.0.1/client.json", private("10.0.0.1")),
        (
            "https://169.254.169.254/latest/meta-data",
            private("169.254.169.254"),
        ),
        ("https://[::1]/client.json", private("::1")),
        (
            "https://localhost/client.json",
            "the client id URL points at localhost".to_owned(),
        ),
        (
            "https://x.localhost/client.json",
            "the client id URL points at localhost".to_owned(),
        ),
        (
            "http://192.168.1.1/client.json",
            "a client id URL must be https (plain http is accepted only for loopback addresses, and only when the server allows it for tests)".to_owned(),
        ),
    ] {
        let page = ua
            .get(&authorize_url(&base, cimd, &redirect, &p.challenge, &[]))
            .await;
        assert_eq!(
            page.status,
            StatusCode::BAD_REQUEST,
            "{cimd}: {}",
            page.body
        );
        assert!(page.body.contains(&reason), "{cimd}: {}", page.body);
        assert!(page.location.is_none());
    }
    // A document that cannot be fetched (here a closed port): a stranger learns nothing about
    // the network (no address, no port, no connection error), at either endpoint.
    let not_fetched = "the client metadata document could not be fetched: it must be served over https from a public address, with status 200 and no redirect, within 5 seconds and 5120 bytes";
    let closed = format!("http://127.0.0.1:{}/client.json", free_port());
    let page = ua
        .get(&authorize_url(&base, &closed, &redirect, &p.challenge, &[]))
        .await;
    assert_eq!(page.status, StatusCode::BAD_REQUEST, "{}", page.body);
    assert!(page.body.contains(not_fetched), "{}", page.body);
    assert!(
        !page.body.contains("refused") && !page.body.contains("onnect"),
        "{}",
        page.body
    );
    let (status, e) = token_request(
        &mut UserAgent::new(),
        &base,
        &[
            ("grant_type", "authorization_code"),
            ("code", "x"),
            ("client_id", &closed),
        ],
        None,
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        (e["error"].as_str(), e["error_description"].as_str()),
        (Some("invalid_client"), Some(not_fetched))
    );
}

// --- DPoP --------------------------------------------------------------------------------------

/// A DPoP key and its proofs (RFC 9449), made here independently of sake's client.
struct DpopKey {
    key: jsonwebtoken::EncodingKey,
    jwk: jsonwebtoken::jwk::Jwk,
}

impl DpopKey {
    fn new() -> Self {
        use p256::pkcs8::EncodePrivateKey as _;
        let secret = loop {
            if let Ok(k) = p256::SecretKey::from_slice(&rand32()) {
                break k;
            }
        };
        let der = secret.to_pkcs8_der().unwrap();
        let key = jsonwebtoken::EncodingKey::from_ec_der(der.as_bytes());
        let jwk = jsonwebtoken::jwk::Jwk::from_encoding_key(&key, jsonwebtoken::Algorithm::ES256)
            .unwrap();
        DpopKey { key, jwk }
    }

    fn proof(&self, method: &str, url: &str, token: Option<&str>) -> String {
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
        header.typ = Some("dpop+jwt".into());
        header.jwk = Some(self.jwk.clone());
        let mut claims =
            json!({"jti": B64.encode(rand32()), "htm": method, "htu": url, "iat": oidc::now()});
        if let Some(t) = token {
            claims["ath"] = json!(digest(t));
        }
        jsonwebtoken::encode(&header, &claims, &self.key).unwrap()
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dpop_bound_token_works_only_with_its_proof() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let idp = upstream(&[port], &[]);
    let (base, _proxy) = in_process(&idp, listener, |b| b, |a| a.dpop(true)).await;
    let mcp = format!("{base}/mcp");

    // sake's client and sake's server: the client sees DPoP offered and asks for it.
    let (step, _) = agent("alice");
    let oauth = OAuth::authorization_code(step).build().unwrap();
    let client = client_builder()
        .auth(oauth.clone())
        .connect(&mcp)
        .await
        .unwrap();
    let who: Value = client.call("whoami", json!({})).await.unwrap();
    assert_eq!(who, json!({"subject": "upstream:alice"}));
    let tokens = oauth.tokens(&mcp).await.unwrap().unwrap();
    assert_eq!(tokens.token_type, "DPoP");
    assert!(oidc::claims(tokens.access_token.expose())["cnf"]["jkt"].is_string());
    let report: String = client.call("admin_report", json!({})).await.unwrap();
    assert_eq!(report, "Report for upstream:alice");

    // By hand: a bound token, then what is refused.
    let mut ua = UserAgent::new();
    let redirect = format!("http://127.0.0.1:{}/cb", free_port());
    let client_id = register(&mut ua, &base, &redirect).await;
    let p = pkce();
    let code = code_for(&base, &client_id, &redirect, &p, &[]).await;
    let key = DpopKey::new();
    let token_url = format!("{base}/oauth/token");
    // A proof with a code that does not check out is not remembered: it fills no cache, and
    // the same proof still works with the right code.
    let proof = key.proof("POST", &token_url, None);
    let (s, e) = token_request(
        &mut ua,
        &base,
        &[
            ("grant_type", "authorization_code"),
            ("code", "not-a-code"),
            ("code_verifier", &p.verifier),
            ("redirect_uri", &redirect),
            ("client_id", &client_id),
        ],
        Some(&proof),
    )
    .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert_eq!(
        (e["error"].as_str(), e["error_description"].as_str()),
        (
            Some("invalid_grant"),
            Some("the code is unknown, expired or used")
        )
    );
    let (s, tokens) = token_request(
        &mut ua,
        &base,
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("code_verifier", &p.verifier),
            ("redirect_uri", &redirect),
            ("client_id", &client_id),
        ],
        Some(&proof),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{tokens}");
    assert_eq!(tokens["token_type"], "DPoP");
    let access = tokens["access_token"].as_str().unwrap();
    let proof = key.proof("POST", &mcp, Some(access));
    let dpop_auth = format!("DPoP {access}");
    let (s, _, body) = call(
        &mcp,
        "whoami",
        &[("authorization", &dpop_auth), ("dpop", &proof)],
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(
        body["result"]["structuredContent"],
        json!({"subject": "upstream:alice"})
    );
    // The same proof again: a replay.
    let (s, h, body) = call(
        &mcp,
        "whoami",
        &[("authorization", &dpop_auth), ("dpop", &proof)],
    )
    .await;
    assert_eq!(s, StatusCode::UNAUTHORIZED, "{body}");
    assert!(
        h["www-authenticate"].contains("invalid_dpop_proof"),
        "{h:?}"
    );
    // Without a proof; as a Bearer token; with another key's proof; for another URL; without ath.
    let (s, _, _) = call(&mcp, "whoami", &[("authorization", &dpop_auth)]).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    let (s, h, _) = call(
        &mcp,
        "whoami",
        &[("authorization", &format!("Bearer {access}"))],
    )
    .await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    assert!(h["www-authenticate"].contains("invalid_token"), "{h:?}");
    let other = DpopKey::new().proof("POST", &mcp, Some(access));
    let (s, _, _) = call(
        &mcp,
        "whoami",
        &[("authorization", &dpop_auth), ("dpop", &other)],
    )
    .await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    let elsewhere = key.proof("POST", &format!("{base}/other"), Some(access));
    let (s, _, _) = call(
        &mcp,
        "whoami",
        &[("authorization", &dpop_auth), ("dpop", &elsewhere)],
    )
    .await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    let no_ath = key.proof("POST", &mcp, None);
    let (s, _, _) = call(
        &mcp,
        "whoami",
        &[("authorization", &dpop_auth), ("dpop", &no_ath)],
    )
    .await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    let get = key.proof("GET", &mcp, Some(access));
    let (s, _, _) = call(
        &mcp,
        "whoami",
        &[("authorization", &dpop_auth), ("dpop", &get)],
    )
    .await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    // A fresh proof works again.
    let fresh = key.proof("POST", &mcp, Some(access));
    let (s, _, _) = call(
        &mcp,
        "whoami",
        &[("authorization", &dpop_auth), ("dpop", &fresh)],
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    // The public client's refresh token is bound too: refreshing needs the key.
    let rt = tokens["refresh_token"].as_str().unwrap();
    let (s, e) = token_request(
        &mut ua,
        &base,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", rt),
            ("client_id", &client_id),
        ],
        None,
    )
    .await;
    assert_eq!(
        (s, e["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_dpop_proof")),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn dpop_nonces_are_asked_for_and_followed() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let idp = upstream(&[port], &[]);
    let (base, _proxy) = in_process(&idp, listener, |b| b, |a| a.dpop(true).dpop_nonce(true)).await;
    let mcp = format!("{base}/mcp");
    let (step, _) = agent("alice");
    let oauth = OAuth::authorization_code(step).build().unwrap();
    let client = client_builder()
        .auth(oauth.clone())
        .connect(&mcp)
        .await
        .unwrap();
    let who: Value = client.call("whoami", json!({})).await.unwrap();
    assert_eq!(who, json!({"subject": "upstream:alice"}));
    assert_eq!(
        oauth.tokens(&mcp).await.unwrap().unwrap().token_type,
        "DPoP"
    );
}

// --- enterprise-managed authorization -----------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn an_enterprise_client_gets_a_token_from_an_id_jag_without_a_browser() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    // The same oidc-provider is also the enterprise's identity provider: it exchanges an ID
    // token it issued for an ID-JAG (RFC 8693).
    let idp = upstream(&[port], &[("AS_ID_JAG", "1"), ("AS_LOGIN_FORM", "0")]);
    let issuer = idp.issuer.clone();
    let (base, _proxy) = in_process(
        &idp,
        listener,
        |b| {
            b.trusted_idp(&issuer).client(ProxyClient::confidential(
                "sake-confidential",
                "proxy-side-secret-0123456789",
            ))
        },
        |a| a,
    )
    .await;
    let mcp = format!("{base}/mcp");
    // The user's ID token at the identity provider (the enterprise's single sign-on).
    let id_token = id_token(&idp, "carol").await;
    let jag = IdJag::new(
        idp.url("/token"),
        RegisteredClient::with_secret("sake-confidential", "sake-confidential-secret"),
        id_token,
    )
    .unwrap();
    let oauth = OAuth::jwt_bearer(
        RegisteredClient::with_secret("sake-confidential", "proxy-side-secret-0123456789"),
        jag,
    )
    .build()
    .unwrap();
    let client = client_builder()
        .auth(oauth.clone())
        .connect(&mcp)
        .await
        .unwrap();
    let who: Value = client.call("whoami", json!({})).await.unwrap();
    assert_eq!(who, json!({"subject": "idjag:carol"}));
    let tokens = oauth.tokens(&mcp).await.unwrap().unwrap();
    let claims = oidc::claims(tokens.access_token.expose());
    assert_eq!(
        (claims["iss"].as_str(), claims["client_id"].as_str()),
        (Some(base.as_str()), Some("sake-confidential"))
    );
    assert!(tokens.refresh_token.is_none());
    // A wrong client secret at the proxy: invalid_client.
    let jag = IdJag::new(
        idp.url("/token"),
        RegisteredClient::with_secret("sake-confidential", "sake-confidential-secret"),
        self::id_token(&idp, "carol").await,
    )
    .unwrap();
    let bad = OAuth::jwt_bearer(
        RegisteredClient::with_secret("sake-confidential", "wrong-secret-0000"),
        jag,
    )
    .build()
    .unwrap();
    let err = client_builder().auth(bad).connect(&mcp).await.unwrap_err();
    assert!(err.to_string().contains("invalid_client"), "{err}");
}

/// An ID token of `user` for the client `sake-confidential` (the authorization code flow).
async fn id_token(idp: &AuthorizationServer, user: &str) -> String {
    let p = pkce();
    let redirect = "http://127.0.0.1:1/callback";
    let url = format!(
        "{}?{}",
        idp.url("/auth"),
        oidc::form(&[
            ("response_type", "code"),
            ("client_id", "sake-confidential"),
            ("redirect_uri", redirect),
            ("scope", "openid"),
            ("code_challenge", &p.challenge),
            ("code_challenge_method", "S256"),
            ("login_hint", user),
            ("state", "s"),
        ])
    );
    let back = UserAgent::new().sign_in(&url, redirect, user).await;
    let code = oidc::query(&back)["code"].clone();
    let answer = oidc::Browser::new()
        .post_form(
            &idp.url("/token"),
            &[
                ("grant_type", "authorization_code"),
                ("code", &code),
                ("redirect_uri", redirect),
                ("code_verifier", &p.verifier),
            ],
            Some(("sake-confidential", "sake-confidential-secret")),
        )
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    answer.json()["id_token"].as_str().unwrap().to_owned()
}

// --- upstream tokens ---------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn upstream_tokens_stay_on_the_server_and_are_refreshed() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let idp = upstream(&[port], &[("AS_OPAQUE_TOKEN_TTL", "31")]);
    USERINFO.set(idp.url("/me")).unwrap();
    let (base, _proxy) = in_process(&idp, listener, |b| b, |a| a).await;
    let mcp = format!("{base}/mcp");
    let (step, _) = agent("dave");
    let oauth = OAuth::authorization_code(step).build().unwrap();
    let client = client_builder()
        .auth(oauth.clone())
        .connect(&mcp)
        .await
        .unwrap();
    let first: String = client.call("upstream_userinfo", json!({})).await.unwrap();
    let (sub, token1) = first.split_once(' ').unwrap();
    assert_eq!(sub, "dave");
    // The MCP client never holds the upstream token.
    let tokens = oauth.tokens(&mcp).await.unwrap().unwrap();
    assert_ne!(digest(tokens.access_token.expose()), token1);
    // The upstream token expires within 30 s of its 31 s: the next use refreshes it upstream.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let second: String = client.call("upstream_userinfo", json!({})).await.unwrap();
    let (sub, token2) = second.split_once(' ').unwrap();
    assert_eq!(sub, "dave");
    assert_ne!(token1, token2, "refreshed upstream");
}

// --- the TypeScript and Python SDK clients -----------------------------------------------------

/// Runs a driver script (tests/auth/), being its browser: each `AUTHORIZE <url>` it prints is
/// signed in to (as `user`) and its redirect opened. Returns the steps it printed, by name.
async fn drive(mut command: Command, callback_port: u16, user: &str) -> HashMap<String, Value> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("running a client driver");
    let stdout = child.stdout.take().unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        use std::io::BufRead as _;
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let redirect = format!("http://127.0.0.1:{callback_port}/callback");
    let mut steps = HashMap::new();
    let mut authorizations = 0;
    while let Some(line) = tokio::time::timeout(Duration::from_secs(90), rx.recv())
        .await
        .expect("the driver went quiet")
    {
        if let Some(url) = line.strip_prefix("AUTHORIZE ") {
            authorizations += 1;
            let mut ua = UserAgent::new();
            let back = ua.sign_in(url, &redirect, user).await;
            let page = ua.get(&back).await;
            assert_eq!(page.status, StatusCode::OK, "the client's callback");
            continue;
        }
        let v: Value = serde_json::from_str(&line).unwrap_or_else(|_| panic!("driver: {line}"));
        assert!(v.get("error").is_none(), "the driver failed: {v}");
        steps.insert(v["step"].as_str().unwrap().to_owned(), v["value"].clone());
    }
    let status = child.wait().unwrap();
    assert!(
        status.success(),
        "the driver exited with {status}: {steps:?}"
    );
    steps.insert("authorizations".into(), json!(authorizations));
    steps
}

fn expect_sdk_run(steps: &HashMap<String, Value>, revision: &str) {
    assert_eq!(
        steps["whoami"],
        json!({"subject": "upstream:alice"}),
        "{revision}: {steps:?}"
    );
    assert_eq!(
        steps["registrations"],
        json!(1),
        "registered once: {steps:?}"
    );
    // A 2025-11-25 client steps up exactly as a 2026-07-28 one: the session's 403 carries the
    // insufficient_scope challenge.
    assert_eq!(
        steps["admin_report"],
        json!(["Report for upstream:alice: 3 servers up, 0 down."]),
        "{revision}: {steps:?}"
    );
    assert_eq!(
        steps["authorizations"],
        json!(2),
        "{revision}: signed in, then stepped up: {steps:?}"
    );
    let scope = steps["scope"].as_str().unwrap();
    assert!(
        scope.split(' ').any(|s| s == "admin"),
        "{revision}: {scope}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_typescript_sdk_client_signs_in_through_the_proxy_in_both_eras() {
    let port = free_port();
    let idp = upstream(&[port], &[]);
    let example = Example::start(port, &idp);
    let (node, modules) = oidc::node();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/auth/proxy-client.mjs"
    );
    for revision in ["2026-07-28", "2025-11-25"] {
        let callback = free_port();
        let mut command = Command::new(&node);
        command
            .arg(script)
            .arg(example.mcp())
            .arg(revision)
            .arg(callback.to_string())
            .env("NODE_PATH", &modules);
        let steps = drive(command, callback, "alice").await;
        expect_sdk_run(&steps, revision);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_python_sdk_client_signs_in_through_the_proxy_in_both_eras() {
    let python = std::env::var("SAKE_PYTHON").unwrap_or_else(|_| {
        panic!("SAKE_PYTHON is not set: run scripts/test.sh, or scripts/python-peers.sh and export SAKE_PYTHON=<the path it prints>")
    });
    let port = free_port();
    let idp = upstream(&[port], &[]);
    let example = Example::start(port, &idp);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/auth/proxy_client.py");
    for revision in ["2026-07-28", "2025-11-25"] {
        let callback = free_port();
        let mut command = Command::new(&python);
        command
            .arg(script)
            .arg(example.mcp())
            .arg(revision)
            .arg(callback.to_string());
        let steps = drive(command, callback, "alice").await;
        expect_sdk_run(&steps, revision);
    }
}

// --- the official conformance suite's authorization scenarios ------------------------------------

/// A child process killed when dropped (a failing test leaves nothing running).
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Every check of every `checks.json` under `dir`: (scenario directory, id, status).
fn suite_checks(dir: &Path) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        let file = path.join("checks.json");
        if !file.exists() {
            continue;
        }
        let checks: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        let scenario = path.file_name().unwrap().to_string_lossy().into_owned();
        for c in checks.as_array().unwrap() {
            out.push((
                scenario.clone(),
                c["id"].as_str().unwrap().to_owned(),
                c["status"].as_str().unwrap().to_owned(),
            ));
        }
    }
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn the_official_authorization_scenarios_pass_against_the_example() {
    let suite = std::env::var("SAKE_CONFORMANCE").unwrap_or_else(|_| {
        panic!("SAKE_CONFORMANCE is not set: run scripts/test.sh, which installs the pinned suite into .tools/ and exports it")
    });
    let (node, _) = oidc::node();
    let port = free_port();
    let idp = upstream(&[port], &[]);
    let example = Example::start(port, &idp);
    // The suite's client: a public client registered at the proxy, redirecting to the suite's
    // callback server (the suite authenticates with `none` whenever the server offers it).
    let callback_port = free_port();
    let callback = format!("http://127.0.0.1:{callback_port}/callback");
    let mut ua = UserAgent::new();
    let page = ua
        .send(
            Method::POST,
            &format!("{}/oauth/register", example.base),
            &[(CONTENT_TYPE.as_str(), "application/json")],
            Some(json!({"redirect_uris": [callback], "client_name": "MCP conformance suite", "token_endpoint_auth_method": "none"}).to_string()),
        )
        .await;
    assert_eq!(page.status, StatusCode::CREATED, "{}", page.body);
    let client_id = serde_json::from_str::<Value>(&page.body).unwrap()["client_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let out = std::env::temp_dir().join(format!("sake-auth-conformance-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let mut child = Killed(
        Command::new(&node)
            .arg(&suite)
            .arg("authorization")
            .args(["--url", &example.base])
            .args(["--client-id", &client_id])
            .args(["--resource", &example.mcp()])
            .args(["-p", &callback_port.to_string()])
            .arg("-o")
            .arg(&out)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("running the conformance suite"),
    );
    let stdout = child.0.stdout.take().unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        use std::io::BufRead as _;
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // The suite prints the authorization URL for a person to open; this test is that person:
    // it opens it, consents at the proxy, logs in upstream, and ends at the suite's callback.
    let mut printed = Vec::new();
    let mut next_is_url = false;
    let mut signed_in = false;
    while let Some(line) = tokio::time::timeout(Duration::from_secs(120), rx.recv())
        .await
        .unwrap_or_else(|_| panic!("the suite went quiet; it printed:\n{}", printed.join("\n")))
    {
        printed.push(line.clone());
        if next_is_url {
            next_is_url = false;
            let url = line.trim();
            assert!(
                url.starts_with(&format!("{}/oauth/authorize?", example.base)),
                "{url}"
            );
            let back = UserAgent::new().sign_in(url, &callback, "grace").await;
            let q = oidc::query(&back);
            assert_eq!(
                q.get("iss").map(String::as_str),
                Some(example.base.as_str())
            );
            assert!(q.contains_key("code") && q.contains_key("state"), "{back}");
            let page = UserAgent::new().get(&back).await;
            assert_eq!(
                page.status,
                StatusCode::OK,
                "the suite's callback: {}",
                page.body
            );
            signed_in = true;
        } else if line.contains("Access the following URL in your browser") {
            next_is_url = true;
        }
    }
    let status = child.0.wait().unwrap();
    let log = printed.join("\n");
    assert!(signed_in, "the suite printed no authorization URL:\n{log}");
    assert!(status.success(), "the suite failed ({status}):\n{log}");
    assert!(log.contains("Total: 3 passed, 0 failed"), "{log}");
    // Every check, by its status: SUCCESS only (a WARNING or a SKIPPED check fails the run).
    let checks: Vec<(String, String)> = suite_checks(&out)
        .into_iter()
        .map(|(_, id, status)| (id, status))
        .collect();
    let _ = std::fs::remove_dir_all(&out);
    assert_eq!(
        checks,
        [
            ("authorization-code-grant", "SUCCESS"),
            ("authorization-server-metadata", "SUCCESS"),
            ("authorization-server-metadata-cimd", "SUCCESS"),
        ]
        .map(|(a, b)| (a.to_owned(), b.to_owned()))
        .to_vec(),
        "{log}"
    );
}

// --- sign-ins under way, per client address ---------------------------------------------------

/// An authorization request of `ua` for `client_id`: `Ok(consent page)` when a sign-in started,
/// `Err(error_description)` when it was sent back with `temporarily_unavailable`.
async fn start_sign_in(
    ua: &mut UserAgent,
    base: &str,
    client_id: &str,
    redirect: &str,
    state: &str,
    headers: &[(&str, &str)],
) -> Result<Page, String> {
    let p = pkce();
    let url = authorize_url(base, client_id, redirect, &p.challenge, &[("state", state)]);
    let page = ua.send(Method::GET, &url, headers, None).await;
    if page.status == StatusCode::OK {
        assert!(page.body.contains("name=\"approve\""), "{}", page.body);
        return Ok(page);
    }
    assert_eq!(page.status, StatusCode::FOUND, "{}", page.body);
    let location = page.location.unwrap();
    assert!(location.starts_with(redirect), "{location}");
    let q = oidc::query(&location);
    assert_eq!(q["error"], "temporarily_unavailable", "{location}");
    assert_eq!(q["state"], state);
    assert!(!q.contains_key("code"));
    Err(q["error_description"].clone())
}

#[tokio::test(flavor = "multi_thread")]
async fn one_address_flooding_authorize_leaves_room_for_another_to_sign_in() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let idp = upstream(&[port], &[]);
    // Default bounds; the store kept in reach to see what the flood holds.
    let store = Arc::new(MemoryProxyStore::default());
    let kept = store.clone();
    let (base, _proxy) = in_process(&idp, listener, move |b| b.store(kept), |a| a).await;
    let attacker_ip: IpAddr = "127.0.0.1".parse().unwrap();
    let mut attacker = UserAgent::from_address(attacker_ip);
    let redirect = format!("http://127.0.0.1:{}/cb", free_port());
    let client_id = register(&mut attacker, &base, &redirect).await;
    // 200 authorization requests from one address, each with the longest state allowed.
    let state = "s".repeat(2048);
    let (mut started, mut refused, mut last) = (0, 0, None);
    for _ in 0..200 {
        match start_sign_in(&mut attacker, &base, &client_id, &redirect, &state, &[]).await {
            Ok(page) => {
                started += 1;
                last = Some(page);
            }
            Err(why) => {
                refused += 1;
                assert_eq!(
                    why,
                    "too many sign-ins are under way from your network address (at most 64, each ending when finished or after 10 minutes); finish one or try again later"
                );
            }
        }
    }
    assert_eq!((started, refused), (64, 136));
    assert_eq!(store.len(), 64, "only the admitted sign-ins are held");
    let held = store.bytes();
    eprintln!(
        "64 sign-ins under way from one address hold {held} bytes in the store ({} each, with a 2048-byte state)",
        held / 64
    );
    assert!(held < 64 * 4096, "{held} bytes");

    // Another address signs in meanwhile: sake's client, its browser on 127.0.0.2.
    let (mut step, _) = agent("heidi");
    step.from = Some("127.0.0.2".parse().unwrap());
    let oauth = OAuth::authorization_code(step)
        .client_name("another address")
        .build()
        .unwrap();
    let client = client_builder()
        .auth(oauth)
        .connect(&format!("{base}/mcp"))
        .await
        .unwrap();
    let who: Value = client.call("whoami", json!({})).await.unwrap();
    assert_eq!(who, json!({"subject": "upstream:heidi"}));

    // The flooding address is still held to its 64; denying one of its consents frees one.
    assert!(
        start_sign_in(&mut attacker, &base, &client_id, &redirect, "x", &[])
            .await
            .is_err()
    );
    let page = last.unwrap();
    let fields: Vec<(String, String)> = form_fields(&page.body)
        .into_iter()
        .filter(|(n, _)| n != "approve")
        .collect();
    let denied = attacker
        .post_form(&form_action(&page.body, &page.url), &fields, &page.url)
        .await;
    assert_eq!(denied.status, StatusCode::SEE_OTHER, "{}", denied.body);
    assert_eq!(
        oidc::query(denied.location.as_deref().unwrap())["error"],
        "access_denied"
    );
    assert!(
        start_sign_in(&mut attacker, &base, &client_id, &redirect, "y", &[])
            .await
            .is_ok()
    );
    assert!(
        start_sign_in(&mut attacker, &base, &client_id, &redirect, "z", &[])
            .await
            .is_err()
    );
}

/// A token request from `from` that declares `declared` bytes and sends one: the status and
/// body of the answer, or `None` when none came within 20 s.
async fn trickle(from: IpAddr, base: &str, declared: usize) -> Option<(u16, Value)> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let addr: std::net::SocketAddr = base.trim_start_matches("http://").parse().unwrap();
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind((from, 0).into()).unwrap();
    let mut stream = socket.connect(addr).await.unwrap();
    let head = format!(
        "POST /oauth/token HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/x-www-form-urlencoded\r\ncontent-length: {declared}\r\n\r\ng"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(20), async {
        let mut buf = [0u8; 4096];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => answer.extend_from_slice(&buf[..n]),
            }
            let text = String::from_utf8_lossy(&answer);
            if let Some((h, b)) = text.split_once("\r\n\r\n")
                && let Some(len) = h.lines().find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length: ")
                        .map(str::to_owned)
                })
                && b.len() >= len.trim().parse::<usize>().unwrap()
            {
                break;
            }
        }
    })
    .await;
    read.ok()?;
    let text = String::from_utf8_lossy(&answer).into_owned();
    let status = text.get(9..12)?.parse().ok()?;
    let body = text.split_once("\r\n\r\n")?.1;
    Some((status, serde_json::from_str(body).unwrap_or(Value::Null)))
}

#[tokio::test(flavor = "multi_thread")]
async fn trickled_proxy_bodies_hold_only_their_address_share_for_seconds() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let idp = upstream(&[port], &[]);
    let (base, _proxy) = in_process(&idp, listener, |b| b, |a| a).await;
    // 2,048 token requests from one address, each declaring 16,000 bytes and sending one.
    let attacker: IpAddr = "127.0.0.1".parse().unwrap();
    let n = 2048;
    let mut flood = Vec::with_capacity(n);
    for _ in 0..n {
        let base = base.clone();
        flood.push(tokio::spawn(async move {
            trickle(attacker, &base, 16_000).await
        }));
    }
    // Another address signs in meanwhile: its registration, consent and token bodies are read.
    let mut other = UserAgent::from_address("127.0.0.2".parse().unwrap());
    let redirect = format!("http://127.0.0.1:{}/cb", free_port());
    let client_id = register(&mut other, &base, &redirect).await;
    let p = pkce();
    let url = authorize_url(&base, &client_id, &redirect, &p.challenge, &[]);
    let back = other.sign_in(&url, &redirect, "heidi").await;
    let code = oidc::query(&back)["code"].clone();
    let (status, tokens) = token_request(
        &mut other,
        &base,
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", &redirect),
            ("code_verifier", &p.verifier),
            ("client_id", &client_id),
        ],
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{tokens}");
    assert_eq!(
        oidc::claims(tokens["access_token"].as_str().unwrap())["sub"],
        "upstream:heidi"
    );
    // Each flooding request was answered: refused at once past the address's 64 bodies, or
    // timed out within seconds (its slot given back).
    let (mut busy, mut slow) = (0, 0);
    for f in flood {
        let (status, body) = f.await.unwrap().expect("every trickled body is answered");
        match status {
            429 => {
                busy += 1;
                assert_eq!(
                    body,
                    json!({"error": "temporarily_unavailable", "error_description": "Too Many Requests: this client is sending 64 request bodies at once and may send 64 (Limits::max_bodies_per_client); wait for one to finish"})
                );
            }
            408 => {
                slow += 1;
                assert_eq!(body["error"], "invalid_request");
                assert!(
                    body["error_description"]
                        .as_str()
                        .unwrap()
                        .starts_with("Request Timeout: the body arrives slower than 4096 bytes per second (1 bytes in "),
                    "{body}"
                );
            }
            other => panic!("{other}: {body}"),
        }
    }
    eprintln!(
        "{n} trickled token bodies from one address: {busy} refused at once (429), {slow} timed out (408)"
    );
    assert_eq!(busy + slow, n);
    assert!(
        slow >= 64 && busy >= n / 2,
        "{busy} refused, {slow} timed out"
    );
    // A body over the token endpoint's limit is refused before it is read.
    let big = trickle(attacker, &base, 16 * 1024 + 1).await.unwrap();
    assert_eq!(
        big,
        (
            413,
            json!({"error": "invalid_request", "error_description": "Payload Too Large: the body exceeds 16384 bytes"})
        )
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_share_is_per_ipv6_64_behind_a_reverse_proxy_and_the_total_is_bounded() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    // No sign-in finishes here: the upstream is never asked.
    let proxy = AuthProxy::builder(
        &base,
        "/mcp",
        Upstream::oidc("http://127.0.0.1:9", UPSTREAM_ID, UPSTREAM_SECRET),
    )
    .scopes_supported(["mcp:tools"])
    .max_pending_sign_ins_per_client(2)
    .max_pending_sign_ins(5)
    .build()
    .unwrap();
    let service = sake::Server::from_registry()
        .authorization(proxy.authorization())
        .client_ip_header("x-forwarded-for")
        .build()
        .unwrap();
    tokio::spawn(service.serve(listener, std::future::pending()));
    let mut ua = UserAgent::new();
    let redirect = format!("http://127.0.0.1:{}/cb", free_port());
    let client_id = register(&mut ua, &base, &redirect).await;
    let per_client = "too many sign-ins are under way from your network address (at most 2, each ending when finished or after 10 minutes); finish one or try again later";
    // (the header the reverse proxy sets, what happens)
    let cases: [(&str, Result<(), &str>); 9] = [
        ("2001:db8:7:1::1", Ok(())),
        ("2001:db8:7:1:ffff:ffff:ffff:ffff", Ok(())),
        // The same /64: another address in it is the same client.
        ("2001:db8:7:1::9", Err(per_client)),
        // The rightmost address is the one the reverse proxy saw.
        ("2001:db8:7:2::1, 2001:db8:7:1::a", Err(per_client)),
        ("2001:db8:7:1::a, 2001:db8:7:2::1", Ok(())),
        // An IPv4-mapped address is its IPv4 address.
        ("::ffff:192.0.2.1", Ok(())),
        ("192.0.2.1", Ok(())),
        ("192.0.2.1", Err(per_client)),
        // Five are under way: another client still gets in; the oldest sign-in of the
        // largest group (2001:db8:7::/48, three) made room.
        ("203.0.113.9", Ok(())),
    ];
    for (i, (forwarded, expected)) in cases.into_iter().enumerate() {
        let got = start_sign_in(
            &mut ua,
            &base,
            &client_id,
            &redirect,
            &format!("case-{i}"),
            &[("x-forwarded-for", forwarded)],
        )
        .await
        .map(drop);
        assert_eq!(got, expected.map_err(str::to_owned), "{forwarded}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_48_spread_over_many_clients_is_bounded_and_the_client_is_the_server_prefix() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let proxy = AuthProxy::builder(
        &base,
        "/mcp",
        Upstream::oidc("http://127.0.0.1:9", UPSTREAM_ID, UPSTREAM_SECRET),
    )
    .scopes_supported(["mcp:tools"])
    .max_pending_sign_ins_per_client(1)
    .max_pending_sign_ins_per_network(3)
    .build()
    .unwrap();
    // The server's clients are /56s.
    let service = sake::Server::from_registry()
        .authorization(proxy.authorization())
        .client_ip_header("x-forwarded-for")
        .limits(|l| l.ipv6_client_prefix(56))
        .build()
        .unwrap();
    tokio::spawn(service.serve(listener, std::future::pending()));
    let mut ua = UserAgent::new();
    let redirect = format!("http://127.0.0.1:{}/cb", free_port());
    let client_id = register(&mut ua, &base, &redirect).await;
    let per_client = "too many sign-ins are under way from your network address (at most 1, each ending when finished or after 10 minutes); finish one or try again later";
    let per_network = "too many sign-ins are under way from your network (an IPv6 /48: at most 3, each ending when finished or after 10 minutes); try again later";
    let cases: [(&str, Result<(), &str>); 6] = [
        ("2001:db8:7:100::1", Ok(())),
        // Another /64 of the same /56: the same client.
        ("2001:db8:7:1ff::1", Err(per_client)),
        ("2001:db8:7:200::1", Ok(())),
        ("2001:db8:7:300::1", Ok(())),
        // A fourth /56 of the /48: its networks hold their 3.
        ("2001:db8:7:400::1", Err(per_network)),
        // Another /48 is not held back.
        ("2001:db8:8::1", Ok(())),
    ];
    for (i, (forwarded, expected)) in cases.into_iter().enumerate() {
        let got = start_sign_in(
            &mut ua,
            &base,
            &client_id,
            &redirect,
            &format!("case-{i}"),
            &[("x-forwarded-for", forwarded)],
        )
        .await
        .map(drop);
        assert_eq!(got, expected.map_err(str::to_owned), "{forwarded}");
    }
}

/// Denies the sign-in of a consent `page` (a probe that changes nothing else): whether it was
/// still under way (sent back to the client with `access_denied`) or gone ("Sign-in expired").
async fn still_under_way(ua: &mut UserAgent, page: &Page, headers: &[(&str, &str)]) -> bool {
    let fields: Vec<(String, String)> = form_fields(&page.body)
        .into_iter()
        .filter(|(n, _)| n != "approve")
        .collect();
    let body = oidc::form(
        &fields
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect::<Vec<_>>(),
    );
    let mut with: Vec<(&str, &str)> = headers.to_vec();
    with.push(("content-type", "application/x-www-form-urlencoded"));
    let r = ua
        .send(
            Method::POST,
            &form_action(&page.body, &page.url),
            &with,
            Some(body),
        )
        .await;
    match r.status {
        StatusCode::SEE_OTHER => {
            assert_eq!(
                oidc::query(r.location.as_deref().unwrap())["error"],
                "access_denied"
            );
            true
        }
        StatusCode::BAD_REQUEST => {
            assert!(
                r.body.contains(
                    "This sign-in is unknown or expired. Start again from the application."
                ),
                "{}",
                r.body
            );
            false
        }
        other => panic!("{other}: {}", r.body),
    }
}

/// M6 of issue 39: a /48 spread over many /64s (each under its own per-client bound, the /48
/// under its own) fills the table of sign-ins under way; a newcomer still signs in, and the
/// room is made from the /48's oldest sign-ins, never from another user's.
#[tokio::test(flavor = "multi_thread")]
async fn a_48_spread_filling_the_table_pays_for_the_next_user_to_sign_in() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let store = Arc::new(MemoryProxyStore::default());
    let proxy = AuthProxy::builder(
        &base,
        "/mcp",
        Upstream::oidc("http://127.0.0.1:9", UPSTREAM_ID, UPSTREAM_SECRET),
    )
    .scopes_supported(["mcp:tools"])
    .store(store.clone())
    .max_pending_sign_ins(24)
    .build()
    .unwrap();
    let service = sake::Server::from_registry()
        .authorization(proxy.authorization())
        .client_ip_header("x-forwarded-for")
        .build()
        .unwrap();
    tokio::spawn(service.serve(listener, std::future::pending()));
    let mut spread = UserAgent::new();
    let redirect = format!("http://127.0.0.1:{}/cb", free_port());
    let client_id = register(&mut spread, &base, &redirect).await;
    let from48 = |k: usize| format!("2001:db8:9:{k:x}::1");
    // One user signs in before the table fills.
    let mut early = UserAgent::new();
    let early_at = [("x-forwarded-for", "198.51.100.6")];
    let early_page = start_sign_in(&mut early, &base, &client_id, &redirect, "early", &early_at)
        .await
        .unwrap();
    // The /48 takes the other 23 places, one /64 each, then goes on for 40 more: each of them
    // pushes out the /48's own oldest.
    let mut pages = Vec::new();
    for k in 0..63 {
        let at = from48(k);
        let page = start_sign_in(
            &mut spread,
            &base,
            &client_id,
            &redirect,
            &format!("s{k}"),
            &[("x-forwarded-for", &at)],
        )
        .await
        .unwrap_or_else(|e| panic!("{k}: {e}"));
        pages.push((at, page));
    }
    assert_eq!(store.len(), 24, "the table holds its 24, no more");
    // Another user still signs in, while the table is full.
    let mut late = UserAgent::new();
    let late_at = [("x-forwarded-for", "203.0.113.50")];
    let late_page = start_sign_in(&mut late, &base, &client_id, &redirect, "late", &late_at)
        .await
        .unwrap();
    // More from the /48 after it: room is made from the /48 again.
    for k in 63..80 {
        let at = from48(k);
        let page = start_sign_in(
            &mut spread,
            &base,
            &client_id,
            &redirect,
            &format!("s{k}"),
            &[("x-forwarded-for", &at)],
        )
        .await
        .unwrap();
        pages.push((at, page));
    }
    assert_eq!(store.len(), 24);
    // Both users' sign-ins are still under way; of the /48's, only the newest 22.
    assert!(still_under_way(&mut early, &early_page, &early_at).await);
    assert!(still_under_way(&mut late, &late_page, &late_at).await);
    let mut kept = Vec::new();
    for (k, (at, page)) in pages.iter().enumerate() {
        if still_under_way(&mut spread, page, &[("x-forwarded-for", at)]).await {
            kept.push(k);
        }
    }
    assert_eq!(kept, (58..80).collect::<Vec<_>>());
}

// --- replicas sharing Redis ----------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread")]
async fn the_redis_store_is_atomic_bounded_and_expires_by_redis_ttls() {
    let mut redis = redis_server::Redis::start();
    let url = redis.url();
    // Two replicas' stores on one Redis.
    let a = Arc::new(RedisProxyStore::new(&url).unwrap());
    let b = Arc::new(RedisProxyStore::new(&url).unwrap());
    let minute = Duration::from_secs(60);
    let cli = |args: &[&str]| redis.cli(args).unwrap().trim().to_owned();

    // What one writes the other reads; Redis holds it with its TTL.
    a.put("code:x", b"1".to_vec(), minute).await.unwrap();
    assert_eq!(b.get("code:x").await.unwrap(), Some(b"1".to_vec()));
    let pttl: i64 = cli(&["PTTL", "{sake}:proxy:code:x"]).parse().unwrap();
    assert!((55_000..=60_000).contains(&pttl), "{pttl}");
    assert_eq!(b.get("code:none").await.unwrap(), None);

    // `take` and `insert_new` succeed once, whichever replica races.
    for round in 0..4 {
        let key = format!("code:race{round}");
        a.put(&key, b"v".to_vec(), minute).await.unwrap();
        let mut racers = Vec::new();
        for i in 0..16 {
            let (s, key) = (if i % 2 == 0 { a.clone() } else { b.clone() }, key.clone());
            racers.push(tokio::spawn(async move { s.take(&key).await.unwrap() }));
        }
        let mut taken = 0;
        for r in racers {
            taken += usize::from(r.await.unwrap().is_some());
        }
        assert_eq!(taken, 1, "round {round}");
        let key = format!("jag:race{round}");
        let mut racers = Vec::new();
        for i in 0..16 {
            let (s, key) = (if i % 2 == 0 { a.clone() } else { b.clone() }, key.clone());
            racers.push(tokio::spawn(async move {
                s.insert_new(&key, b"1".to_vec(), minute).await.unwrap()
            }));
        }
        let mut inserted = 0;
        for r in racers {
            inserted += usize::from(r.await.unwrap());
        }
        assert_eq!(inserted, 1, "round {round}");
    }

    // A bound admits its limit, across replicas racing for it.
    let mut racers = Vec::new();
    for i in 0..40 {
        let s = if i % 2 == 0 { a.clone() } else { b.clone() };
        racers.push(tokio::spawn(async move {
            let bounds = [
                Bound::refusing("pending:one", 10),
                Bound::refusing("pending", 100),
            ];
            s.insert_bounded(&format!("signin:{i}"), b"s".to_vec(), minute, &bounds)
                .await
                .unwrap()
        }));
    }
    let mut outcomes = HashMap::new();
    for r in racers {
        *outcomes
            .entry(format!("{:?}", r.await.unwrap()))
            .or_insert(0) += 1;
    }
    assert_eq!(
        outcomes,
        HashMap::from([("Stored".to_owned(), 10), ("Full(0)".to_owned(), 30)])
    );
    assert_eq!(cli(&["ZCARD", "{sake}:proxy-bound:pending:one"]), "10");
    assert_eq!(cli(&["ZCARD", "{sake}:proxy-bound:pending"]), "10");
    let stored: Vec<String> = (0..40)
        .map(|i| format!("signin:{i}"))
        .filter(|k| cli(&["EXISTS", &format!("{{sake}}:proxy:{k}")]) == "1")
        .collect();
    assert_eq!(stored.len(), 10);
    let one = [Bound::refusing("pending:one", 10)];
    // Rewriting an entry keeps it counted; taking and deleting release it.
    b.put(&stored[0], b"approved".to_vec(), minute)
        .await
        .unwrap();
    assert_eq!(a.get(&stored[0]).await.unwrap(), Some(b"approved".to_vec()));
    assert_eq!(
        a.insert_bounded("signin:new", b"s".to_vec(), minute, &one)
            .await
            .unwrap(),
        Insertion::Full(0)
    );
    assert_eq!(
        a.take(&stored[0]).await.unwrap(),
        Some(b"approved".to_vec())
    );
    b.delete(&stored[1]).await.unwrap();
    assert_eq!(cli(&["ZCARD", "{sake}:proxy-bound:pending:one"]), "8");
    for k in ["signin:new", "signin:new2"] {
        assert_eq!(
            b.insert_bounded(k, b"s".to_vec(), minute, &one)
                .await
                .unwrap(),
            Insertion::Stored
        );
    }
    assert_eq!(
        b.insert_bounded("signin:new", b"s".to_vec(), minute, &one)
            .await
            .unwrap(),
        Insertion::Exists
    );

    // Expiry is Redis's: an entry and its bound are gone when their TTL ends, and the bound
    // admits again.
    let short = [Bound::refusing("short", 1)];
    let second = Duration::from_secs(1);
    assert_eq!(
        a.insert_bounded("signin:s1", b"s".to_vec(), second, &short)
            .await
            .unwrap(),
        Insertion::Stored
    );
    assert_eq!(
        b.insert_bounded("signin:s2", b"s".to_vec(), second, &short)
            .await
            .unwrap(),
        Insertion::Full(0)
    );
    let pttl: i64 = cli(&["PTTL", "{sake}:proxy-bound:short"]).parse().unwrap();
    assert!((1..=1000).contains(&pttl), "{pttl}");
    tokio::time::sleep(Duration::from_millis(1300)).await;
    assert_eq!(cli(&["EXISTS", "{sake}:proxy:signin:s1"]), "0");
    assert_eq!(cli(&["EXISTS", "{sake}:proxy-bound:short"]), "0");
    assert_eq!(a.get("signin:s1").await.unwrap(), None);
    assert_eq!(
        b.insert_bounded("signin:s2", b"s".to_vec(), second, &short)
            .await
            .unwrap(),
        Insertion::Stored
    );

    // A full bound that makes room drops the oldest entry of its largest group, atomically
    // across replicas: a /48 spread over /64s fills it, other users still get in.
    async fn spread(s: &RedisProxyStore, key: &str, groups: &[&str], all: usize) -> Insertion {
        let mut bounds: Vec<Bound<'_>> =
            groups.iter().map(|g| Bound::refusing(g, 100_000)).collect();
        bounds.push(Bound::making_room("room", all));
        s.insert_bounded(key, b"s".to_vec(), Duration::from_secs(60), &bounds)
            .await
            .unwrap()
    }
    assert_eq!(
        spread(&a, "signin:u1", &["room:u"], 4).await,
        Insertion::Stored
    );
    for k in 0..3 {
        let g = format!("room:{k}/64");
        assert_eq!(
            spread(&b, &format!("signin:n{k}"), &[&g, "room:n/48"], 4).await,
            Insertion::Stored
        );
    }
    assert_eq!(
        spread(&a, "signin:v1", &["room:v"], 4).await,
        Insertion::Stored
    );
    let live = |k: &str| cli(&["EXISTS", &format!("{{sake}}:proxy:{k}")]) == "1";
    assert!(!live("signin:n0") && live("signin:n1") && live("signin:u1") && live("signin:v1"));
    assert_eq!(cli(&["ZCARD", "{sake}:proxy-bound:room"]), "4");
    assert_eq!(cli(&["ZCARD", "{sake}:proxy-bound:room:n/48"]), "2");
    assert_eq!(cli(&["EXISTS", "{sake}:proxy-bound:room:0/64"]), "0");
    // Replicas racing for a full bound: every newcomer gets in, the /48 pays for each.
    let mut racers = Vec::new();
    for i in 0..8 {
        let s = if i % 2 == 0 { a.clone() } else { b.clone() };
        racers.push(tokio::spawn(async move {
            let g = format!("room:w{i}");
            spread(&s, &format!("signin:w{i}"), &[&g], 10).await
        }));
    }
    for r in racers {
        assert_eq!(r.await.unwrap(), Insertion::Stored);
    }
    assert_eq!(cli(&["ZCARD", "{sake}:proxy-bound:room"]), "10");
    // A refusing bound is checked first: nothing is dropped for an entry it refuses.
    let refused = [Bound::refusing("room:u", 1), Bound::making_room("room", 10)];
    assert_eq!(
        a.insert_bounded("signin:u2", b"s".to_vec(), minute, &refused)
            .await
            .unwrap(),
        Insertion::Full(0)
    );
    assert_eq!(cli(&["ZCARD", "{sake}:proxy-bound:room"]), "10");
    // What making room costs Redis at the default of 10,000 sign-ins under way (a scan of the
    // table, only while it is full).
    let fill = 10_000;
    for i in 0..fill {
        let k = format!("signin:f{i}");
        let net = format!("room:f{}/64", i % 157);
        spread(&a, &k, &[&net, "room:f/48"], fill).await;
    }
    let started = std::time::Instant::now();
    for i in 0..20 {
        let g = format!("room:x{i}");
        assert_eq!(
            spread(&b, &format!("signin:x{i}"), &[&g], fill).await,
            Insertion::Stored
        );
    }
    eprintln!(
        "a full bound of {fill} entries makes room in {:?} per insertion (Redis scan)",
        started.elapsed() / 20
    );
    assert_eq!(cli(&["ZCARD", "{sake}:proxy-bound:room"]), fill.to_string());
    assert!(live("signin:x0") && live("signin:u1") && !live("signin:f0"));

    // Values and names are bounded; nothing is truncated.
    let e = a
        .put("grant:big", vec![b'x'; 64 * 1024 + 1], minute)
        .await
        .unwrap_err();
    assert_eq!(
        e.reason,
        "a value of 65537 bytes is larger than the store's limit of 65536 (RedisProxyStore::max_value_bytes)"
    );
    assert_eq!(cli(&["EXISTS", "{sake}:proxy:grant:big"]), "0");
    let small = RedisProxyStore::new(&url).unwrap().max_value_bytes(16);
    assert!(small.insert_new("k", vec![0; 17], minute).await.is_err());
    assert!(a.put("a key", b"1".to_vec(), minute).await.is_err());
    assert!(a.get(&"k".repeat(513)).await.is_err());
    // Prefixes keep servers apart.
    let other = RedisProxyStore::with_prefix(&url, "other").unwrap();
    assert_eq!(other.get("code:x").await.unwrap(), None);

    // Redis down: an error that says so, and nothing of what Redis or the network said.
    redis.kill();
    let port = url
        .trim_end_matches('/')
        .rsplit(':')
        .next()
        .unwrap()
        .to_owned();
    for e in [
        a.get("code:x").await.unwrap_err(),
        a.take("code:x").await.unwrap_err(),
        a.put("code:y", b"1".to_vec(), minute).await.unwrap_err(),
        a.insert_bounded("signin:z", b"1".to_vec(), minute, &one)
            .await
            .unwrap_err(),
    ] {
        assert_eq!(
            e.reason,
            "Redis is unreachable, too slow, or refused the command (the server's log has the details)"
        );
        assert!(!e.to_string().contains(&port), "{e}");
    }
    // Back: the same store works again, without a restart.
    redis.up();
    a.put("code:back", b"1".to_vec(), minute).await.unwrap();
    assert_eq!(b.get("code:back").await.unwrap(), Some(b"1".to_vec()));
}

/// Random text for secrets.
fn random_text() -> String {
    B64.encode(rand32()) + &B64.encode(rand32())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_sign_in_begun_on_one_replica_finishes_on_another() {
    let mut redis = redis_server::Redis::start();
    let (pa, pb, pc) = (free_port(), free_port(), free_port());
    // One public origin (A's address here) in front of every replica: the issuer, the resource
    // and the upstream callback are its.
    let public = format!("http://127.0.0.1:{pa}");
    let idp = upstream(&[pa], &[]);
    let (secret, session_key, url) = (random_text(), random_text(), redis.url());
    let shared = [
        ("PUBLIC_URL", public.as_str()),
        ("PROXY_SECRET", secret.as_str()),
        ("SAKE_SESSION_KEY", session_key.as_str()),
    ];
    let with_redis: Vec<(&str, &str)> = shared
        .iter()
        .copied()
        .chain([("REDIS_URL", url.as_str())])
        .collect();
    let replica_a = Example::start_with(pa, &idp, &with_redis);
    let replica_b = Example::start_with(pb, &idp, &with_redis);
    // C shares the secret but keeps its sign-ins in its own memory: the control.
    let _replica_c = Example::start_with(pc, &idp, &shared);
    let at = |port: u16| format!("http://127.0.0.1:{port}");

    // The balancer: which replica serves each of the proxy's paths (changed as the test goes),
    // and what each served.
    let routes: Arc<std::sync::Mutex<HashMap<&'static str, u16>>> =
        Arc::new(std::sync::Mutex::new(HashMap::from([
            ("/oauth/authorize", pa),
            ("/oauth/consent", pb),
            ("/oauth/callback", pc),
        ])));
    let served = Arc::new(std::sync::Mutex::new(Vec::<(String, u16)>::new()));
    let balance: Balance = {
        let (routes, served, public) = (routes.clone(), served.clone(), public.clone());
        Arc::new(move |url: &str| {
            let Some(rest) = url.strip_prefix(&public) else {
                return url.to_owned();
            };
            let path = rest.split('?').next().unwrap_or_default().to_owned();
            let port = routes
                .lock()
                .unwrap()
                .get(path.as_str())
                .copied()
                .unwrap_or(pa);
            served.lock().unwrap().push((path, port));
            format!("http://127.0.0.1:{port}{rest}")
        })
    };

    // A client registered on B is known to A (the registration is signed with the secret).
    let redirect = format!("http://127.0.0.1:{}/cb", free_port());
    let client_id = register(&mut UserAgent::new(), &at(pb), &redirect).await;
    let p = pkce();
    let mut ua = UserAgent::balanced(balance.clone());
    let consent = ua
        .get(&authorize_url(
            &public,
            &client_id,
            &redirect,
            &p.challenge,
            &[],
        ))
        .await;
    assert_eq!(consent.status, StatusCode::OK, "{}", consent.body);
    let mut fields = form_fields(&consent.body);
    fields.push(("approve".into(), "1".into()));
    let approved = ua
        .post_form(
            &form_action(&consent.body, &consent.url),
            &fields,
            &consent.url,
        )
        .await;
    assert_eq!(approved.status, StatusCode::SEE_OTHER, "{}", approved.body);
    let callback = ua
        .sign_in(
            approved.location.as_deref().unwrap(),
            &format!("{public}/oauth/callback"),
            "erin",
        )
        .await;
    // C, without the shared store, has never heard of this sign-in.
    let page = ua.get(&callback).await;
    assert_eq!(page.status, StatusCode::BAD_REQUEST);
    assert!(page.body.contains("Sign-in expired"), "{}", page.body);
    // B finishes it.
    routes.lock().unwrap().insert("/oauth/callback", pb);
    let page = ua.get(&callback).await;
    assert_eq!(page.status, StatusCode::FOUND, "{}", page.body);
    let back = oidc::query(page.location.as_deref().unwrap());
    assert_eq!(back["state"], "st-1");
    assert_eq!(back["iss"], public);
    assert_eq!(
        served.lock().unwrap().clone(),
        [
            ("/oauth/authorize".to_owned(), pa),
            ("/oauth/consent".to_owned(), pb),
            ("/oauth/callback".to_owned(), pc),
            ("/oauth/callback".to_owned(), pb),
        ]
    );

    // The token on B; its iss and aud are the public ones, and A accepts it.
    let code_fields = |code: &str| {
        vec![
            ("grant_type".to_owned(), "authorization_code".to_owned()),
            ("code".to_owned(), code.to_owned()),
            ("code_verifier".to_owned(), p.verifier.clone()),
            ("redirect_uri".to_owned(), redirect.clone()),
            ("client_id".to_owned(), client_id.clone()),
        ]
    };
    let send = |base: String, v: Vec<(String, String)>| async move {
        let refs: Vec<(&str, &str)> = v.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        token_request(&mut UserAgent::new(), &base, &refs, None).await
    };
    let (s, tokens) = send(at(pb), code_fields(&back["code"])).await;
    assert_eq!(s, StatusCode::OK, "{tokens}");
    let access = tokens["access_token"].as_str().unwrap().to_owned();
    let claims = oidc::claims(&access);
    assert_eq!(claims["iss"], public);
    assert_eq!(claims["aud"], format!("{public}/mcp"));
    for replica in [&replica_a, &replica_b] {
        let (s, _, body) = call(
            &replica.mcp(),
            "whoami",
            &[("authorization", &format!("Bearer {access}"))],
        )
        .await;
        assert_eq!(s, StatusCode::OK, "{body}");
        assert_eq!(
            body["result"]["structuredContent"],
            json!({"subject": "upstream:erin"})
        );
    }
    // Refresh tokens rotate across replicas; the old one used again ends the sign-in
    // everywhere.
    let refresh = |t: &str| {
        vec![
            ("grant_type".to_owned(), "refresh_token".to_owned()),
            ("refresh_token".to_owned(), t.to_owned()),
            ("client_id".to_owned(), client_id.clone()),
        ]
    };
    let first = tokens["refresh_token"].as_str().unwrap().to_owned();
    let (s, second) = send(at(pa), refresh(&first)).await;
    assert_eq!(s, StatusCode::OK, "{second}");
    let second = second["refresh_token"].as_str().unwrap().to_owned();
    assert_ne!(second, first);
    // Whoever reads Redis finds the grant, but not the upstream tokens (encrypted); whoever
    // writes it cannot make a grant the replicas take (the values are sealed).
    let gid = second.split('.').next().unwrap();
    let keys = redis
        .cli(&["--scan", "--pattern", &format!("*grant:{gid}")])
        .unwrap();
    let key = keys
        .lines()
        .next()
        .expect("the grant is in Redis")
        .to_owned();
    let stored = redis.cli(&["HGET", &key, "v"]).unwrap();
    assert!(stored.starts_with("s1."), "{stored}");
    assert!(stored.contains("\"upstream\":\""), "{stored}");
    assert!(
        !stored.contains("access_token")
            && !stored.contains("refresh_token")
            && !stored.contains("id_token"),
        "{stored}"
    );
    let forged =
        json!({"subject": "alice", "client_id": client_id, "scopes": ["mcp:tools", "admin"],
        "refresh": {"generation": 1}})
        .to_string();
    redis.cli(&["HSET", &key, "v", &forged]).unwrap();
    let (s, e) = send(at(pa), refresh(&second)).await;
    assert_eq!(
        (s, e["error"].as_str(), e["error_description"].as_str()),
        (
            StatusCode::BAD_REQUEST,
            Some("invalid_grant"),
            Some("the sign-in ended; sign in again")
        ),
        "a forged grant is never taken"
    );
    let (s, e) = send(at(pb), refresh(&first)).await;
    assert_eq!(
        (s, e["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_grant")),
        "{e}"
    );
    let (s, e) = send(at(pa), refresh(&second)).await;
    assert_eq!(
        (s, e["error"].as_str(), e["error_description"].as_str()),
        (
            StatusCode::BAD_REQUEST,
            Some("invalid_grant"),
            Some("the sign-in ended; sign in again")
        ),
        "revoked on every replica"
    );
    // The code is used up on every replica.
    let (s, e) = send(at(pa), code_fields(&back["code"])).await;
    assert_eq!(
        (s, e["error"].as_str()),
        (StatusCode::BAD_REQUEST, Some("invalid_grant")),
        "{e}"
    );

    // A code redeemed on A and B at once gives tokens at most once: one replica takes it, the
    // other finds it used (and revokes what it gave, RFC 6749 section 4.1.2, which may come
    // before the first answered: then neither gets tokens).
    for round in 0..3 {
        let code = code_for_balanced(&balance, &public, &client_id, &redirect, &p).await;
        let (ra, rb) = tokio::join!(
            send(at(pa), code_fields(&code)),
            send(at(pb), code_fields(&code))
        );
        let issued = [&ra, &rb].iter().filter(|r| r.0 == StatusCode::OK).count();
        assert!(issued <= 1, "round {round}: {ra:?} {rb:?}");
        for r in [&ra, &rb] {
            assert!(
                r.0 == StatusCode::OK
                    || (r.0 == StatusCode::BAD_REQUEST && r.1["error"] == "invalid_grant"),
                "round {round}: {r:?}"
            );
        }
    }

    // Everything the proxy keeps in Redis expires by itself.
    let keys = redis
        .cli(&["--scan", "--pattern", "{sake}:proxy*"])
        .unwrap();
    let keys: Vec<&str> = keys.lines().filter(|k| !k.is_empty()).collect();
    assert!(keys.len() >= 4, "{keys:?}");
    for key in keys {
        let pttl: i64 = redis.cli(&["PTTL", key]).unwrap().trim().parse().unwrap();
        assert!(pttl > 0 && pttl <= 30 * 86_400_000, "{key}: {pttl}");
    }

    // Redis down: sign-ins and token requests fail with OAuth's own words, nothing of Redis.
    redis.kill();
    let redis_port = url
        .trim_end_matches('/')
        .rsplit(':')
        .next()
        .unwrap()
        .to_owned();
    let page = UserAgent::balanced(balance.clone())
        .get(&authorize_url(
            &public,
            &client_id,
            &redirect,
            &p.challenge,
            &[],
        ))
        .await;
    assert_eq!(page.status, StatusCode::FOUND, "{}", page.body);
    let q = oidc::query(page.location.as_deref().unwrap());
    assert_eq!(q["error"], "temporarily_unavailable");
    assert_eq!(
        q["error_description"],
        "the authorization server is busy; try again shortly"
    );
    let (s, e) = send(at(pb), refresh(&second)).await;
    assert_eq!(s, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        e,
        json!({"error": "temporarily_unavailable", "error_description": "the authorization server is busy"})
    );
    for text in [page.location.unwrap_or_default(), e.to_string()] {
        assert!(
            !text.contains("Redis") && !text.contains(&redis_port) && !text.contains("refused"),
            "{text}"
        );
    }
    // Redis back: sign-ins cross replicas again, no restart.
    redis.up();
    routes.lock().unwrap().insert("/oauth/callback", pa);
    let code = code_for_balanced(&balance, &public, &client_id, &redirect, &p).await;
    let (s, tokens) = send(at(pb), code_fields(&code)).await;
    assert_eq!(s, StatusCode::OK, "{tokens}");
}

/// A whole sign-in through the balancer: its code.
async fn code_for_balanced(
    balance: &Balance,
    public: &str,
    client_id: &str,
    redirect: &str,
    p: &Pkce,
) -> String {
    let url = authorize_url(public, client_id, redirect, &p.challenge, &[]);
    let back = UserAgent::balanced(balance.clone())
        .sign_in(&url, redirect, "erin")
        .await;
    oidc::query(&back)["code"].clone()
}

// --- a gateway calling its upstream as the signed-in user (issue 41d) ---------------------------

/// What an upstream saw: each MCP request's `Authorization` header, and the status answered.
type Seen = Arc<std::sync::Mutex<Vec<(Option<String>, u16)>>>;

/// A gateway (`Server::proxy` with `Upstream::as_signed_in_user`) behind the authorization
/// proxy calls its upstream — an MCP server that takes only the provider's tokens for itself —
/// with the token the proxy holds for the signed-in user at the provider (issued for the
/// upstream: `Upstream::resource`), never with the token the client presented to the gateway;
/// each user as themselves. A caller without such a sign-in is refused with an error that says
/// so.
#[tokio::test(flavor = "multi_thread")]
async fn a_gateway_calls_its_upstream_with_the_signed_in_users_upstream_token() {
    use sake_runtime::auth::Authorization;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let idp = upstream(&[port], &[]);
    // The upstream MCP server: the provider's tokens for itself only; what each request carried.
    let up_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let up = format!("http://{}/mcp", up_listener.local_addr().unwrap());
    let up_service = sake::Server::from_registry()
        .quiet(true)
        .authorization(Authorization::jwt(&up, &idp.issuer).unwrap())
        .build()
        .unwrap();
    let seen: Seen = Arc::default();
    let log = seen.clone();
    let app = up_service.router().layer(axum::middleware::from_fn(
        move |req: axum::extract::Request, next: axum::middleware::Next| {
            let log = log.clone();
            async move {
                let mcp = req.uri().path() == "/mcp";
                let auth = req
                    .headers()
                    .get(AUTHORIZATION)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                let response = next.run(req).await;
                if mcp {
                    log.lock().unwrap().push((auth, response.status().as_u16()));
                }
                response
            }
        },
    ));
    tokio::spawn(async move { axum::serve(up_listener, app).await.unwrap() });

    // The gateway, behind the proxy; the provider's tokens are asked for the upstream.
    let base = format!("http://{}", listener.local_addr().unwrap());
    let proxy = AuthProxy::builder(
        &base,
        "/mcp",
        Upstream::oidc(&idp.issuer, UPSTREAM_ID, UPSTREAM_SECRET)
            .scopes(["openid", "mcp:tools"])
            .resource(&up),
    )
    .scopes_supported(["mcp:tools"])
    .default_scopes(["mcp:tools"])
    .build()
    .unwrap();
    let gateway = sake::Server::with_registry(sake::Registry::from_defs([], [], []).unwrap())
        .proxy("up", sake::compose::Upstream::url(&up).as_signed_in_user())
        .quiet(true)
        .authorization(proxy.authorization().challenge_scopes(["mcp:tools"]))
        .build()
        .unwrap();
    tokio::spawn(gateway.serve(listener, std::future::pending()));
    let mcp = format!("{base}/mcp");

    let mut signed_in = Vec::new();
    for user in ["dave", "erin"] {
        let (step, _) = agent(user);
        let oauth = OAuth::authorization_code(step).build().unwrap();
        let client = client_builder()
            .auth(oauth.clone())
            .connect(&mcp)
            .await
            .unwrap();
        let before = seen.lock().unwrap().len();
        let who: Value = client.call("up_whoami", json!({})).await.unwrap();
        assert_eq!(who, json!({"subject": user}));
        let who: Value = client.call("up_whoami", json!({})).await.unwrap();
        assert_eq!(who, json!({"subject": user}));
        // The upstream saw the user's upstream token, for itself, from the provider; never
        // the gateway's token the client holds.
        let gateway_token = oauth.tokens(&mcp).await.unwrap().unwrap();
        let gateway_token = gateway_token.access_token.expose().to_owned();
        let requests = seen.lock().unwrap()[before..].to_vec();
        assert!(!requests.is_empty());
        for (auth, status) in &requests {
            let token = auth
                .as_deref()
                .and_then(|a| a.strip_prefix("Bearer "))
                .unwrap_or_else(|| panic!("a request without the user's token: {requests:?}"));
            assert_ne!(
                token, gateway_token,
                "the client's token reached the upstream"
            );
            assert!(*status < 300, "{status}: {requests:?}");
            let claims = oidc::claims(token);
            assert_eq!(claims["iss"], json!(idp.issuer), "{claims}");
            assert_eq!(claims["aud"], json!(up), "{claims}");
            assert_eq!(claims["sub"], json!(user), "{claims}");
        }
        signed_in.push((oauth, client));
    }

    // Dave's sign-in ends at the proxy (a rotated refresh token used again revokes it): his
    // calls through the gateway answer that the upstream is unavailable to him, saying why;
    // Erin's go on.
    let (dave_oauth, dave) = &signed_in[0];
    let held = dave_oauth.tokens(&mcp).await.unwrap().unwrap();
    let first = held.refresh_token.unwrap().expose().to_owned();
    let client_id = oidc::claims(held.access_token.expose())["client_id"]
        .as_str()
        .unwrap()
        .to_owned();
    dave_oauth.refresh(&mcp).await.unwrap();
    let (status, e) = token_request(
        &mut UserAgent::new(),
        &base,
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", &first),
            ("client_id", &client_id),
        ],
        None,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{e}");
    match dave.call_tool("up_whoami", json!({})).await.unwrap_err() {
        sake::client::ClientError::Rpc { error, .. } => {
            assert_eq!(error.code, -32603);
            assert!(
                error
                    .message
                    .starts_with("The upstream server `up` is unavailable: "),
                "{}",
                error.message
            );
            assert!(
                error
                    .message
                    .contains("the signed-in user's upstream token cannot be had"),
                "{}",
                error.message
            );
        }
        other => panic!("{other:?}"),
    }
    let (_, erin) = &signed_in[1];
    let who: Value = erin.call("up_whoami", json!({})).await.unwrap();
    assert_eq!(who, json!({"subject": "erin"}));

    // Without the proxy's sign-in (a gateway whose callers have none): refused, saying why.
    let bare = sake::Server::with_registry(sake::Registry::from_defs([], [], []).unwrap())
        .proxy("up", sake::compose::Upstream::url(&up).as_signed_in_user())
        .quiet(true)
        .build()
        .unwrap();
    let bare_listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let bare_url = format!("http://{}/mcp", bare_listener.local_addr().unwrap());
    tokio::spawn(bare.serve(bare_listener, std::future::pending()));
    let client = client_builder().connect(&bare_url).await.unwrap();
    match client.call_tool("up_whoami", json!({})).await.unwrap_err() {
        sake::client::ClientError::Rpc { error, .. } => {
            assert_eq!(error.code, -32603);
            assert_eq!(
                error.message,
                "The upstream server `up` is called as the signed-in user, and this request has no sign-in of the authorization proxy"
            );
        }
        other => panic!("{other:?}"),
    }
}
