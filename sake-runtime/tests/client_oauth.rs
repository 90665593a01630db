//! sake's client signing in to a protected MCP server, end to end, against a real
//! authorization server: oidc-provider (OpenID Certified, pinned in scripts/peers/package.json),
//! run by `tests/auth/authorization-server.mjs` on 127.0.0.1.
//!
//! The MCP server is sake's own server behind a small axum layer that does what a protected
//! resource does (RFC 9728, RFC 6750): it serves protected resource metadata naming the
//! authorization server, answers `401` with a challenge, verifies bearer tokens with
//! [`JwtVerifier`] (JWT access tokens for its resource, keys from the issuer's metadata), and
//! answers `403 insufficient_scope` to a call of the `admin` tool without the `admin` scope.
//! The client is configured with nothing but the server's URL: it discovers, registers
//! dynamically (or uses a pre-registered client), signs in (headless, or through
//! [`LoopbackBrowser`] with the test as the browser), refreshes, steps up, and uses client
//! credentials.
//!
//! Node and oidc-provider come from `$SAKE_NODE` / `$SAKE_NODE_MODULES` (`scripts/test.sh`
//! exports them). Without them this test fails: it never passes unrun. Needs
//! `--features client,auth`.

use std::collections::HashMap;
use std::io::{BufRead as _, BufReader, Read as _};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http::StatusCode;
use http::header::{AUTHORIZATION, COOKIE, LOCATION, SET_COOKIE, WWW_AUTHENTICATE};
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use sake::client::Client;
use sake::client::auth::{
    Callback, Headless, LoopbackBrowser, OAuth, OAuthError, RegisteredClient, UserStep,
    UserStepFuture,
};
use sake::prelude::*;
use sake_runtime::auth::{
    BearerError, Challenge, JwtVerifier, ProtectedResourceMetadata, TokenVerifier,
};
use serde_json::{Value, json};

/// Greets whoever the token names.
#[tool]
fn hello() -> String {
    "hello".to_owned()
}

/// Needs the `admin` scope (the layer below checks it).
#[tool]
fn admin() -> String {
    "admin done".to_owned()
}

fn node() -> (String, String) {
    const HOW: &str = "run the tests through scripts/test.sh, which installs the pinned Node and \
        oidc-provider into .tools/ and exports SAKE_NODE and SAKE_NODE_MODULES";
    let node = std::env::var("SAKE_NODE").unwrap_or_else(|_| panic!("SAKE_NODE is not set: {HOW}"));
    let modules = std::env::var("SAKE_NODE_MODULES")
        .unwrap_or_else(|_| panic!("SAKE_NODE_MODULES is not set: {HOW}"));
    (node, modules)
}

/// The authorization server; killed when dropped.
struct AuthorizationServer {
    child: Child,
    issuer: String,
}

impl AuthorizationServer {
    fn start() -> Self {
        let (node, modules) = node();
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/auth/authorization-server.mjs"
        );
        let mut child = Command::new(&node)
            .arg(script)
            .arg("0")
            .env("SAKE_NODE_MODULES", &modules)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run SAKE_NODE={node}: {e}"));
        let stdout = child.stdout.take().unwrap();
        let mut stderr = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            let _ = tx.send(lines.next().and_then(Result::ok));
            for _ in lines {}
        });
        let (etx, erx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = stderr.read_to_string(&mut s);
            let _ = etx.send(s);
        });
        let line = rx.recv_timeout(Duration::from_secs(30)).ok().flatten();
        let Some(issuer) = line.as_deref().and_then(|l| l.strip_prefix("ready ")) else {
            let _ = child.kill();
            let _ = child.wait();
            let stderr = erx.recv_timeout(Duration::from_secs(5)).unwrap_or_default();
            panic!(
                "the authorization server did not start (first line {line:?}); stderr:\n{stderr}"
            );
        };
        Self {
            issuer: issuer.to_owned(),
            child,
        }
    }
}

impl Drop for AuthorizationServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Who each verified request came from (subject, scopes), in order.
type Callers = Arc<std::sync::Mutex<Vec<(String, Vec<String>)>>>;

/// What the protected resource layer needs.
#[derive(Clone)]
struct Guard {
    verifier: Arc<JwtVerifier>,
    metadata_url: String,
    seen: Callers,
}

fn challenge(guard: &Guard, status: StatusCode, challenge: Challenge) -> Response {
    let mut r = status.into_response();
    r.headers_mut().insert(
        WWW_AUTHENTICATE,
        challenge
            .resource_metadata(guard.metadata_url.clone())
            .to_header_value(),
    );
    r
}

/// The resource server's side: a bearer token for this resource, else 401; the `admin` tool
/// needs the `admin` scope, else 403.
async fn protect(State(guard): State<Guard>, request: Request, next: Next) -> Response {
    let token = request
        .headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_owned);
    let Some(token) = token else {
        return challenge(
            &guard,
            StatusCode::UNAUTHORIZED,
            Challenge::new().scope(["mcp:tools"]),
        );
    };
    let principal = match guard.verifier.verify(&token).await {
        Ok(p) => p,
        Err(e) if e.is_token_error() => {
            return challenge(
                &guard,
                StatusCode::UNAUTHORIZED,
                Challenge::new().error(BearerError::InvalidToken),
            );
        }
        Err(e) => panic!("the verifier could not check a token: {e}"),
    };
    let (parts, body) = request.into_parts();
    let bytes = body.collect().await.unwrap().to_bytes();
    let message: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    if message["method"] == "tools/call"
        && message["params"]["name"] == "admin"
        && !principal.has_scope("admin")
    {
        return challenge(
            &guard,
            StatusCode::FORBIDDEN,
            Challenge::new()
                .scope(["admin"])
                .error(BearerError::InsufficientScope),
        );
    }
    guard.seen.lock().unwrap().push((
        principal.subject().to_owned(),
        principal.scopes().iter().cloned().collect(),
    ));
    next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
        .await
}

/// sake's server at `/mcp`, protected, with its metadata; its URL and the guard.
async fn protected_server(issuer: &str) -> (String, Guard) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let resource = format!("{base}/mcp");
    let metadata_path = "/.well-known/oauth-protected-resource/mcp";
    let guard = Guard {
        verifier: Arc::new(
            JwtVerifier::builder(issuer, resource.clone())
                .build()
                .unwrap(),
        ),
        metadata_url: format!("{base}{metadata_path}"),
        seen: Arc::default(),
    };
    let document = ProtectedResourceMetadata::new(resource, issuer).scopes_supported(["mcp:tools"]);
    let mcp = sake::Server::from_registry()
        .into_router()
        .unwrap()
        .layer(axum::middleware::from_fn_with_state(guard.clone(), protect));
    let app = axum::Router::new()
        .route(
            metadata_path,
            axum::routing::get(move || {
                let document = document.clone();
                async move {
                    (
                        [(http::header::CONTENT_TYPE, "application/json")],
                        serde_json::to_string(&document).unwrap(),
                    )
                }
            }),
        )
        .merge(mcp);
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("{base}/mcp"), guard)
}

fn client_builder() -> sake::client::ClientBuilder {
    Client::builder()
        .cache(sake::client::EraCache::new())
        .timeout(Duration::from_secs(20))
}

#[tokio::test]
async fn signs_in_registers_refreshes_and_steps_up_against_oidc_provider() {
    let server = AuthorizationServer::start();
    let (url, guard) = protected_server(&server.issuer).await;
    let oauth = OAuth::authorization_code(Headless::new())
        .client_name("sake e2e")
        .build()
        .unwrap();
    let client = client_builder()
        .auth(oauth.clone())
        .connect(&url)
        .await
        .unwrap();
    assert_eq!(client.revision(), sake::Revision::LATEST);
    let out: String = client.call("hello", json!({})).await.unwrap();
    assert_eq!(out, "hello");

    // A token of oidc-provider for this resource, for alice, with the challenged scope.
    let tokens = oauth.tokens(&url).await.unwrap().unwrap();
    assert_eq!(tokens.issuer, server.issuer);
    assert_eq!(tokens.resource, url);
    assert_eq!(tokens.token_type, "Bearer");
    assert!(tokens.refresh_token.is_some(), "no refresh token");
    let principal = guard
        .verifier
        .verify(tokens.access_token.expose())
        .await
        .unwrap();
    assert_eq!(principal.subject(), "alice");
    assert!(principal.has_scope("mcp:tools"));
    assert!(!principal.has_scope("admin"));
    let client_id = principal.client_id().unwrap().to_owned();
    assert_ne!(client_id, "sake-public", "registered dynamically");

    // Refresh: a new access token for the same user and resource; the server accepts it.
    oauth.refresh(&url).await.unwrap();
    let refreshed = oauth.tokens(&url).await.unwrap().unwrap();
    assert_ne!(refreshed.access_token, tokens.access_token);
    let p = guard
        .verifier
        .verify(refreshed.access_token.expose())
        .await
        .unwrap();
    assert_eq!(
        (p.subject(), p.client_id()),
        ("alice", Some(client_id.as_str()))
    );
    let _: String = client.call("hello", json!({})).await.unwrap();

    // Step-up: `admin` needs a scope the token lacks; the client asks for both.
    let out: String = client.call("admin", json!({})).await.unwrap();
    assert_eq!(out, "admin done");
    let stepped = oauth.tokens(&url).await.unwrap().unwrap();
    let p = guard
        .verifier
        .verify(stepped.access_token.expose())
        .await
        .unwrap();
    assert!(
        p.has_scope("admin") && p.has_scope("mcp:tools"),
        "{:?}",
        p.scopes()
    );
    assert_eq!(
        p.client_id(),
        Some(client_id.as_str()),
        "no second registration"
    );
    let last = guard.seen.lock().unwrap().last().cloned().unwrap();
    assert_eq!(last.0, "alice");
}

#[tokio::test]
async fn client_credentials_and_a_pre_registered_client_against_oidc_provider() {
    let server = AuthorizationServer::start();
    let (url, guard) = protected_server(&server.issuer).await;
    // client_secret_basic, then client_secret_post: oidc-provider's metadata lists both; the
    // client prefers Basic, and a client registered for post is told so.
    for (id, secret) in [
        ("sake-confidential", "sake-confidential-secret"),
        ("sake-post", "sake-post-secret"),
    ] {
        let mut registered =
            RegisteredClient::with_secret(id, secret).for_issuer(server.issuer.clone());
        if id == "sake-post" {
            registered =
                registered.auth_method(sake::client::auth::TokenEndpointAuth::ClientSecretPost);
        }
        let oauth = OAuth::client_credentials(registered).build().unwrap();
        let client = client_builder()
            .auth(oauth.clone())
            .connect(&url)
            .await
            .unwrap();
        let _: String = client.call("hello", json!({})).await.unwrap();
        let last = guard.seen.lock().unwrap().last().cloned().unwrap();
        assert_eq!(last, (id.to_owned(), vec!["mcp:tools".to_owned()]));
    }
    // A wrong secret: the token endpoint's refusal, without the secret.
    let oauth = OAuth::client_credentials(RegisteredClient::with_secret(
        "sake-confidential",
        "wrong-secret-123",
    ))
    .build()
    .unwrap();
    let err = client_builder()
        .auth(oauth)
        .connect(&url)
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("invalid_client"), "{text}");
    assert!(!text.contains("wrong-secret-123"), "{text}");

    // The pre-registered public client: no registration, PKCE, its own client id.
    let oauth = OAuth::authorization_code(Headless::new())
        .client(RegisteredClient::public("sake-public"))
        .build()
        .unwrap();
    let client = client_builder()
        .auth(oauth.clone())
        .connect(&url)
        .await
        .unwrap();
    let _: String = client.call("hello", json!({})).await.unwrap();
    let tokens = oauth.tokens(&url).await.unwrap().unwrap();
    let p = guard
        .verifier
        .verify(tokens.access_token.expose())
        .await
        .unwrap();
    assert_eq!((p.subject(), p.client_id()), ("alice", Some("sake-public")));
}

/// A browser for the test: follows the authorization server's redirects (keeping its
/// cookies) until the loopback redirect URI, and opens that, as a person's browser would.
struct TestBrowser {
    loopback: Arc<LoopbackBrowser>,
}

async fn browse(start: String, until: String) {
    let http: HyperClient<HttpConnector, Full<Bytes>> =
        HyperClient::builder(TokioExecutor::new()).build_http();
    let mut cookies: HashMap<String, String> = HashMap::new();
    let mut url = start;
    for _ in 0..16 {
        let mut request = http::Request::get(&url);
        if !cookies.is_empty() {
            let jar: Vec<String> = cookies.iter().map(|(k, v)| format!("{k}={v}")).collect();
            request = request.header(COOKIE, jar.join("; "));
        }
        let response = http
            .request(request.body(Full::new(Bytes::new())).unwrap())
            .await
            .unwrap();
        for c in response.headers().get_all(SET_COOKIE) {
            let pair = c.to_str().unwrap().split(';').next().unwrap();
            if let Some((k, v)) = pair.split_once('=') {
                cookies.insert(k.trim().to_owned(), v.to_owned());
            }
        }
        if url.starts_with(&until) {
            assert_eq!(response.status(), StatusCode::OK);
            return;
        }
        assert!(
            response.status().is_redirection(),
            "{url}: {}",
            response.status()
        );
        let location = response.headers()[LOCATION].to_str().unwrap();
        url = if location.starts_with('/') {
            let origin: String = url.split('/').take(3).collect::<Vec<_>>().join("/");
            format!("{origin}{location}")
        } else {
            location.to_owned()
        };
    }
    panic!("too many redirects");
}

impl UserStep for TestBrowser {
    fn redirect_uri(&self) -> String {
        self.loopback.redirect_uri()
    }

    fn authorize<'a>(&'a self, url: &'a str) -> UserStepFuture<'a> {
        Box::pin(async move {
            let person = tokio::spawn(browse(url.to_owned(), self.loopback.redirect_uri()));
            let callback: Result<Callback, OAuthError> = self.loopback.authorize(url).await;
            person.await.unwrap();
            callback
        })
    }
}

#[tokio::test]
async fn the_loopback_browser_receives_oidc_providers_redirect() {
    let server = AuthorizationServer::start();
    let (url, guard) = protected_server(&server.issuer).await;
    let loopback = Arc::new(LoopbackBrowser::new().unwrap().open_browser(false));
    let oauth = OAuth::authorization_code(TestBrowser {
        loopback: Arc::clone(&loopback),
    })
    .build()
    .unwrap();
    let client = client_builder()
        .auth(oauth.clone())
        .connect(&url)
        .await
        .unwrap();
    let _: String = client.call("hello", json!({})).await.unwrap();
    assert_eq!(guard.seen.lock().unwrap().last().unwrap().0, "alice");
    let tokens = oauth.tokens(&url).await.unwrap().unwrap();
    let p = guard
        .verifier
        .verify(tokens.access_token.expose())
        .await
        .unwrap();
    assert_eq!(p.subject(), "alice");
    // Registered with the loopback redirect URI, port included.
    assert!(loopback.redirect_uri().starts_with("http://127.0.0.1:"));
}
