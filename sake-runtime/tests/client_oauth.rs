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

mod oidc;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::StatusCode;
use http::header::{COOKIE, LOCATION, SET_COOKIE};
use http_body_util::Full;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use oidc::AuthorizationServer;
use sake::client::Client;
use sake::client::auth::{
    Callback, Headless, LoopbackBrowser, OAuth, OAuthError, RegisteredClient, UserStep,
    UserStepFuture,
};
use sake::prelude::*;
use sake_runtime::auth::{Authorization, JwtVerifier, Principal, TokenVerifier};
use serde_json::json;

/// Greets whoever the token names.
#[tool]
fn hello(principal: Principal) -> String {
    format!("hello {}", principal.subject())
}

/// Needs the `admin` scope (sake's authorization checks it before it runs).
#[tool(scopes("admin"))]
fn admin() -> String {
    "admin done".to_owned()
}

/// Who the caller is and what the token grants: `subject scope scope…`.
#[tool]
fn granted(principal: Principal) -> String {
    let mut out = principal.subject().to_owned();
    for s in principal.scopes() {
        out.push(' ');
        out.push_str(s);
    }
    out
}

/// sake's server at `/mcp` as an OAuth resource server of `issuer` (its own authorization:
/// metadata, challenges, token checks, scopes); its URL, and a verifier of its tokens for the
/// test's own assertions.
async fn protected_server(issuer: &str) -> (String, JwtVerifier) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let service = sake::Server::from_registry()
        .authorization(
            Authorization::jwt(&url, issuer)
                .unwrap()
                .scopes_supported(["mcp:tools", "admin"])
                .challenge_scopes(["mcp:tools"]),
        )
        .build()
        .unwrap();
    tokio::spawn(service.serve(listener, std::future::pending()));
    let verifier = JwtVerifier::builder(issuer, url.clone()).build().unwrap();
    (url, verifier)
}

fn client_builder() -> sake::client::ClientBuilder {
    Client::builder()
        .cache(sake::client::EraCache::new())
        .timeout(Duration::from_secs(20))
}

#[tokio::test]
async fn signs_in_registers_refreshes_and_steps_up_against_oidc_provider() {
    let server = AuthorizationServer::start(&[]);
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
    assert_eq!(out, "hello alice");

    // A token of oidc-provider for this resource, for alice, with the challenged scope.
    let tokens = oauth.tokens(&url).await.unwrap().unwrap();
    assert_eq!(tokens.issuer, server.issuer);
    assert_eq!(tokens.resource, url);
    assert_eq!(tokens.token_type, "Bearer");
    assert!(tokens.refresh_token.is_some(), "no refresh token");
    let principal = guard.verify(tokens.access_token.expose()).await.unwrap();
    assert_eq!(principal.subject(), "alice");
    assert!(principal.has_scope("mcp:tools"));
    assert!(!principal.has_scope("admin"));
    let client_id = principal.client_id().unwrap().to_owned();
    assert_ne!(client_id, "sake-public", "registered dynamically");

    // Refresh: a new access token for the same user and resource; the server accepts it.
    oauth.refresh(&url).await.unwrap();
    let refreshed = oauth.tokens(&url).await.unwrap().unwrap();
    assert_ne!(refreshed.access_token, tokens.access_token);
    let p = guard.verify(refreshed.access_token.expose()).await.unwrap();
    assert_eq!(
        (p.subject(), p.client_id()),
        ("alice", Some(client_id.as_str()))
    );
    let _: String = client.call("hello", json!({})).await.unwrap();

    // Step-up: `admin` needs a scope the token lacks; the client asks for both.
    let out: String = client.call("admin", json!({})).await.unwrap();
    assert_eq!(out, "admin done");
    let stepped = oauth.tokens(&url).await.unwrap().unwrap();
    let p = guard.verify(stepped.access_token.expose()).await.unwrap();
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
    let who: String = client.call("granted", json!({})).await.unwrap();
    assert_eq!(who, "alice admin mcp:tools");
}

#[tokio::test]
async fn client_credentials_and_a_pre_registered_client_against_oidc_provider() {
    let server = AuthorizationServer::start(&[]);
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
        let who: String = client.call("granted", json!({})).await.unwrap();
        assert_eq!(who, format!("{id} mcp:tools"));
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
    let p = guard.verify(tokens.access_token.expose()).await.unwrap();
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
    let server = AuthorizationServer::start(&[]);
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
    let out: String = client.call("hello", json!({})).await.unwrap();
    assert_eq!(out, "hello alice");
    let tokens = oauth.tokens(&url).await.unwrap().unwrap();
    let p = guard.verify(tokens.access_token.expose()).await.unwrap();
    assert_eq!(p.subject(), "alice");
    // Registered with the loopback redirect URI, port included.
    assert!(loopback.redirect_uri().starts_with("http://127.0.0.1:"));
}

/// `examples/oauth.rs`, built and run as a user runs it (`AUTH_ISSUER` naming the real
/// authorization server), signed in to by sake's client with nothing but its URL: `whoami`
/// sees the subject, `admin_report` steps up to the `admin` scope, `confirm_action` asks the
/// user through the client's elicitation handler. A token for another resource is refused
/// with the challenge.
#[tokio::test]
async fn the_oauth_example_serves_a_client_that_signs_in() {
    let server = AuthorizationServer::start(&[]);
    let binary = example_binary("oauth", &["--features", "auth"]);
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let child = std::process::Command::new(&binary)
        .env("PORT", port.to_string())
        .env("AUTH_ISSUER", &server.issuer)
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("the example runs");
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _kill = Kill(child);
    let url = format!("http://127.0.0.1:{port}/mcp");
    let metadata = format!("http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp");
    // Wait until it listens.
    let mut listening = false;
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            listening = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(listening, "the example listens on {port}");
    let answer = oidc::Browser::new().get(&metadata).await;
    assert_eq!(answer.status, StatusCode::OK);
    let doc = answer.json();
    assert_eq!(
        doc,
        json!({
            "resource": url,
            "authorization_servers": [server.issuer],
            "scopes_supported": ["mcp:tools", "admin"],
            "bearer_methods_supported": ["header"],
            "resource_name": "sake OAuth example",
        })
    );

    let oauth = OAuth::authorization_code(Headless::new())
        .client_name("sake example e2e")
        .build()
        .unwrap();
    let client = client_builder()
        .auth(oauth.clone())
        .on_elicitation(|request| async move {
            assert_eq!(request.message, "alice, do you want to deploy?");
            let mut content = serde_json::Map::new();
            content.insert("confirm".into(), json!(true));
            Ok(sake::ElicitResult::accept(content))
        })
        .connect(&url)
        .await
        .unwrap();
    let who = client.call_tool("whoami", json!({})).await.unwrap();
    assert_eq!(
        who.structured_content.map(|s| s.get().to_owned()),
        Some(r#"{"subject":"alice"}"#.to_owned())
    );
    let report: String = client.call("admin_report", json!({})).await.unwrap();
    assert_eq!(report, "Report for alice: 3 servers up, 0 down.");
    let done: String = client
        .call("confirm_action", json!({"action": "deploy"}))
        .await
        .unwrap();
    assert_eq!(done, "Done: deploy.");

    // A token of the same authorization server for another resource: refused, with the
    // challenge that names where to get the right one.
    let other = oidc::client_credentials(
        &server,
        ("sake-confidential", "sake-confidential-secret"),
        "http://127.0.0.1:4100/mcp",
        "mcp:tools",
    )
    .await;
    let mut browser = oidc::Browser::new();
    let bearer = format!("Bearer {other}");
    let answer = browser
        .send(
            http::Method::POST,
            &url,
            &[
                ("authorization", bearer.as_str()),
                ("content-type", "application/json"),
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "server/discover"),
            ],
            Some(
                r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#.to_owned(),
            ),
        )
        .await;
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
    let challenge = answer.headers["www-authenticate"].to_str().unwrap();
    assert!(
        challenge.starts_with(&format!(
            r#"Bearer resource_metadata="{metadata}", scope="mcp:tools", error="invalid_token", error_description="the token is not meant for this resource"#
        )),
        "{challenge}"
    );
}

/// Builds an example of the root package (as `cargo run --example` would) and returns its
/// path, in the target directory the test runs from.
fn example_binary(name: &str, args: &[&str]) -> std::path::PathBuf {
    use std::path::Path;
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(Path::parent).unwrap();
    let target_dir = profile_dir.parent().unwrap();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = std::process::Command::new(cargo)
        .args(["build", "--quiet", "--example", name])
        .args(args)
        .arg("--manifest-path")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml"))
        .arg("--target-dir")
        .arg(target_dir)
        .status()
        .expect("running cargo to build the example");
    assert!(status.success(), "cargo build --example {name} failed");
    profile_dir
        .join("examples")
        .join(format!("{name}{}", std::env::consts::EXE_SUFFIX))
}
