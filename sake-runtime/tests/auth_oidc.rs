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

mod oidc;

use std::time::{Duration, UNIX_EPOCH};

use oidc::{AuthorizationServer, Browser, client_credentials, form, now, query};

use base64::Engine as _;
use http::header::LOCATION;
use http::{Method, StatusCode};
use sake_runtime::auth::{
    AuthError, Authorization, ClientAuth, IntrospectionVerifier, JwtVerifier, Principal,
    TokenVerifier,
};
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

/// The resource the tokens are requested for (no server needs to listen there).
const RESOURCE: &str = "http://127.0.0.1:4100/mcp";
const REDIRECT: &str = "http://127.0.0.1:4999/callback";

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

    // The endpoint found through the issuer's metadata; client_secret_basic. (oidc-provider
    // answers with `aud`, which is required by default.)
    // Its answer for a client's own token names no `sub`, only `client_id`: refused by
    // default (that name could be a user's `sub`), the client is the caller where the server
    // says so.
    let strict = IntrospectionVerifier::builder(resource, client.0, client.1)
        .issuer(server.issuer.clone())
        .build()
        .unwrap();
    assert_eq!(
        strict.verify(&token).await,
        Err(AuthError::InvalidToken {
            reason: "it names no subject (sub); a token a client got for itself is accepted only where the server takes its client_id as the subject (client_id_as_subject)".into()
        })
    );
    let basic = IntrospectionVerifier::builder(resource, client.0, client.1)
        .issuer(server.issuer.clone())
        .client_id_as_subject(true)
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
        .client_id_as_subject(true)
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

/// A 2026-07-28 `server/discover` to `url` with `token`: the status and the body.
async fn ping(browser: &Browser, url: &str, token: &str) -> (StatusCode, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}}});
    let request = http::Request::builder()
        .method(Method::POST)
        .uri(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "server/discover")
        .header("authorization", format!("Bearer {token}"))
        .body(http_body_util::Full::new(bytes::Bytes::from(
            body.to_string(),
        )))
        .unwrap();
    let response = tokio::time::timeout(Duration::from_secs(30), browser.client.request(request))
        .await
        .expect("answered within 30 s")
        .expect("an answer");
    let status = response.status();
    use http_body_util::BodyExt as _;
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// How many introspection requests reached the authorization server, and the most in flight
/// at once.
async fn introspections(server: &AuthorizationServer) -> (u64, u64) {
    let origin: String = server
        .issuer
        .split('/')
        .take(3)
        .collect::<Vec<_>>()
        .join("/");
    let counts = Browser::new()
        .get(&format!("{origin}/_test/introspections"))
        .await
        .json();
    (
        counts["total"].as_u64().unwrap(),
        counts["maxInFlight"].as_u64().unwrap(),
    )
}

fn made_up_token() -> String {
    let mut bytes = [0u8; 24];
    getrandom::fill(&mut bytes).unwrap();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// Introspection as an amplifier: every token a client makes up would cost a request to the
/// authorization server, made with the resource server's own credentials. Against the real
/// authorization server (slowed to 100 ms an introspection), 300 made-up tokens sent at once
/// to a sake server cost at most `max_concurrent_introspections` (4) requests in flight; the
/// tokens that find no free slot are answered 503 at once, the others 401; a client signed in
/// before is served throughout; and one bad token sent again and again is introspected once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_made_up_tokens_costs_at_most_the_concurrent_introspections() {
    const MAX: u64 = 4;
    const FLOOD: usize = 300;
    let server = AuthorizationServer::start(&[("AS_INTROSPECTION_DELAY_MS", "100")]);
    let resource = "http://127.0.0.1:4100/opaque";
    let client = ("sake-confidential", "sake-confidential-secret");
    let token = client_credentials(&server, client, resource, "mcp:tools").await;
    let verifier = IntrospectionVerifier::builder(resource, client.0, client.1)
        .issuer(server.issuer.clone())
        .client_id_as_subject(true)
        .max_concurrent_introspections(MAX as usize)
        // The flood comes from one address here: all its slots are its share (the share
        // itself: `auth::tests::one_client_holds_at_most_its_share_of_the_introspection_slots`).
        .max_concurrent_introspections_per_client(MAX as usize)
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let service = sake::Server::from_registry()
        .name("flooded")
        .version("1.0.0")
        .authorization(Authorization::new(
            resource,
            server.issuer.clone(),
            verifier,
        ))
        .build()
        .unwrap();
    tokio::spawn(service.serve(listener, std::future::pending()));
    let browser = Browser::new();
    // The signed-in client, checked once.
    let (status, pong) = ping(&browser, &url, &token).await;
    assert_eq!(status, StatusCode::OK, "{pong}");
    assert_eq!(
        pong["result"]["supportedVersions"][0], "2026-07-28",
        "{pong}"
    );
    let (before, _) = introspections(&server).await;
    assert_eq!(before, 1);

    let flood = futures_util::future::join_all(
        (0..FLOOD).map(|_| async { ping(&browser, &url, &made_up_token()).await }),
    );
    let signed_in = async {
        let mut served = 0;
        for _ in 0..20 {
            tokio::time::sleep(Duration::from_millis(20)).await;
            assert_eq!(
                ping(&browser, &url, &token).await,
                (StatusCode::OK, pong.clone())
            );
            served += 1;
        }
        served
    };
    let (answers, served) = tokio::join!(flood, signed_in);
    assert_eq!(served, 20);
    let (after, max_in_flight) = introspections(&server).await;
    let (mut refused, mut busy) = (0u64, 0u64);
    for (status, body) in &answers {
        match *status {
            StatusCode::UNAUTHORIZED => {
                refused += 1;
                assert_eq!(
                    body["error"]["message"],
                    "Unauthorized: the bearer token was refused: invalid token: the authorization server reports it inactive (expired, revoked or unknown)",
                    "{body}"
                );
            }
            StatusCode::SERVICE_UNAVAILABLE => {
                busy += 1;
                assert_eq!(
                    *body,
                    json!({"jsonrpc": "2.0", "error": {"code": -32000,
                        "message": "Service Unavailable: the bearer token could not be checked right now; retry shortly"}})
                );
            }
            other => panic!("{other}: {body}"),
        }
    }
    assert_eq!(refused + busy, FLOOD as u64);
    eprintln!(
        "{FLOOD} made-up tokens: {refused} introspected and refused (401), {busy} answered 503, at most {max_in_flight} introspections in flight"
    );
    // Never more than 4 in flight, and all 4 were used: the flood did saturate them.
    assert_eq!(max_in_flight, MAX, "at most {MAX} introspections at once");
    // Each 401 cost one introspection; each 503 none.
    assert_eq!(after - before, refused, "{refused} refused, {busy} busy");
    assert!(busy > 0, "the flood found the slots taken");

    // One bad token, sent again and again: its refusal is remembered (10 s).
    let bad = made_up_token();
    for _ in 0..20 {
        assert_eq!(ping(&browser, &url, &bad).await.0, StatusCode::UNAUTHORIZED);
    }
    assert_eq!(introspections(&server).await.0, after + 1);
}

/// Serves the registry on a free port behind `verifier`; the endpoint's URL.
async fn serve_behind(
    server: &AuthorizationServer,
    resource: &str,
    verifier: IntrospectionVerifier,
) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let service = sake::Server::from_registry()
        .name("hiding")
        .version("1.0.0")
        .authorization(Authorization::new(
            resource,
            server.issuer.clone(),
            verifier,
        ))
        .build()
        .unwrap();
    tokio::spawn(service.serve(listener, std::future::pending()));
    url
}

/// What went wrong with introspection stays in the server's log: the real authorization
/// server refusing the resource server's credentials (the endpoint's URL and status would be
/// in the verifier's words), and an endpoint nobody answers on, both reach the client as one
/// stable 503, word for word.
#[tokio::test]
async fn a_failing_introspection_is_not_described_to_clients() {
    let server = AuthorizationServer::start(&[]);
    let resource = "http://127.0.0.1:4100/opaque";
    let client = ("sake-confidential", "sake-confidential-secret");
    let token = client_credentials(&server, client, resource, "mcp:tools").await;
    let wrong_secret = IntrospectionVerifier::builder(resource, client.0, "not-the-secret")
        .issuer(server.issuer.clone())
        .build()
        .unwrap();
    assert!(matches!(
        wrong_secret.verify(&token).await,
        Err(AuthError::Misconfigured { reason }) if reason.contains("/token/introspection")
    ));
    let nobody = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let gone = format!("http://{}/introspect", nobody.local_addr().unwrap());
    drop(nobody);
    let unreachable = IntrospectionVerifier::builder(resource, client.0, client.1)
        .endpoint(gone)
        .build()
        .unwrap();
    let browser = Browser::new();
    for verifier in [wrong_secret, unreachable] {
        let url = serve_behind(&server, resource, verifier).await;
        assert_eq!(
            ping(&browser, &url, &token).await,
            (
                StatusCode::SERVICE_UNAVAILABLE,
                json!({"jsonrpc": "2.0", "error": {"code": -32000,
                    "message": "Service Unavailable: the bearer token could not be checked right now; retry shortly"}})
            )
        );
    }
}
