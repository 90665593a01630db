//! The verifiers against a stand-in authorization server: an axum server on 127.0.0.1:0
//! serving metadata, key sets and introspection answers the test sets, counting requests.
//! Tokens are signed here with the test-only keys in `testdata/`.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use http::header::{AUTHORIZATION, CONTENT_TYPE};
use http::{HeaderMap, StatusCode, Uri};
use jsonwebtoken::EncodingKey;
use serde_json::{Value, json};

use super::cache::Clock;
use super::*;

// --- keys --------------------------------------------------------------------------------

fn pem_der(pem: &str) -> Vec<u8> {
    let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    base64::engine::general_purpose::STANDARD
        .decode(body)
        .unwrap()
}

struct TestKey {
    alg: jsonwebtoken::Algorithm,
    encoding: EncodingKey,
}

impl TestKey {
    fn rsa_a() -> Self {
        Self::rsa(include_str!("testdata/rsa-a.pem"))
    }
    fn rsa_b() -> Self {
        Self::rsa(include_str!("testdata/rsa-b.pem"))
    }
    fn rsa(pem: &str) -> Self {
        Self {
            alg: jsonwebtoken::Algorithm::RS256,
            encoding: EncodingKey::from_rsa_der(&pem_der(pem)),
        }
    }
    fn p256() -> Self {
        Self {
            alg: jsonwebtoken::Algorithm::ES256,
            encoding: EncodingKey::from_ec_der(&pem_der(include_str!("testdata/ec-p256.pem"))),
        }
    }
    fn ed25519() -> Self {
        Self {
            alg: jsonwebtoken::Algorithm::EdDSA,
            encoding: EncodingKey::from_ed_der(&pem_der(include_str!("testdata/ed25519.pem"))),
        }
    }

    /// The public JWK, with `kid` and `use`, without `alg` (unless `with_alg`).
    fn jwk(&self, kid: &str, with_alg: bool) -> Value {
        let jwk = jsonwebtoken::jwk::Jwk::from_encoding_key(&self.encoding, self.alg).unwrap();
        let mut jwk = serde_json::to_value(jwk).unwrap();
        let obj = jwk.as_object_mut().unwrap();
        if !with_alg {
            obj.remove("alg");
        }
        obj.insert("kid".into(), kid.into());
        obj.insert("use".into(), "sig".into());
        jwk
    }

    /// Signs `claims` with `alg` (one of the key's family), header `{alg, typ: at+jwt, kid}`.
    fn sign_as(&self, alg: jsonwebtoken::Algorithm, kid: Option<&str>, claims: &Value) -> String {
        let mut header = json!({"alg": alg_name(alg), "typ": "at+jwt"});
        if let Some(kid) = kid {
            header["kid"] = kid.into();
        }
        sign_raw(&header, claims, &self.encoding, alg)
    }

    fn sign(&self, kid: Option<&str>, claims: &Value) -> String {
        self.sign_as(self.alg, kid, claims)
    }
}

fn alg_name(alg: jsonwebtoken::Algorithm) -> String {
    serde_json::to_value(alg)
        .unwrap()
        .as_str()
        .unwrap()
        .to_owned()
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// A compact JWS with exactly this header.
fn sign_raw(
    header: &Value,
    claims: &Value,
    key: &EncodingKey,
    alg: jsonwebtoken::Algorithm,
) -> String {
    let message = format!(
        "{}.{}",
        b64(header.to_string().as_bytes()),
        b64(claims.to_string().as_bytes())
    );
    let signature = jsonwebtoken::crypto::sign(message.as_bytes(), key, alg).unwrap();
    format!("{message}.{signature}")
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

const RESOURCE: &str = "http://127.0.0.1:3000/mcp";

// --- the stand-in authorization server ----------------------------------------------------

#[derive(Clone)]
struct Route {
    status: StatusCode,
    body: String,
    delay: Duration,
}

#[derive(Default)]
struct MockState {
    routes: Mutex<HashMap<String, Route>>,
    hits: Mutex<HashMap<String, usize>>,
    /// Introspection answers by token (absent: `{"active": false}`).
    introspect: Mutex<HashMap<String, Value>>,
    /// Each introspection request: its Authorization header and form body.
    introspections: Mutex<Vec<(Option<String>, String)>>,
}

struct Mock {
    addr: SocketAddr,
    state: Arc<MockState>,
}

async fn handle(
    State(s): State<Arc<MockState>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_owned();
    *s.hits.lock().unwrap().entry(path.clone()).or_default() += 1;
    let route = s.routes.lock().unwrap().get(&path).cloned();
    if let Some(route) = route {
        tokio::time::sleep(route.delay).await;
        return (
            route.status,
            [(CONTENT_TYPE, "application/json")],
            route.body,
        )
            .into_response();
    }
    if path == "/introspect" {
        let form = String::from_utf8(body.to_vec()).unwrap();
        let auth = headers
            .get(AUTHORIZATION)
            .map(|v| v.to_str().unwrap().to_owned());
        s.introspections.lock().unwrap().push((auth, form.clone()));
        let token = form
            .split('&')
            .find_map(|kv| kv.strip_prefix("token="))
            .unwrap_or_default();
        let answer = s
            .introspect
            .lock()
            .unwrap()
            .get(token)
            .cloned()
            .unwrap_or(json!({"active": false}));
        return (
            StatusCode::OK,
            [(CONTENT_TYPE, "application/json")],
            answer.to_string(),
        )
            .into_response();
    }
    StatusCode::NOT_FOUND.into_response()
}

impl Mock {
    async fn start() -> Self {
        let state = Arc::new(MockState::default());
        let app = Router::new().fallback(handle).with_state(state.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self { addr, state }
    }

    /// An issuer at the root serving RFC 8414 metadata and `keys` at `/jwks`.
    async fn issuer(keys: &[Value]) -> Self {
        let mock = Self::start().await;
        let issuer = mock.issuer_url();
        mock.set(
            "/.well-known/oauth-authorization-server",
            StatusCode::OK,
            json!({
                "issuer": issuer,
                "jwks_uri": mock.url("/jwks"),
                "introspection_endpoint": mock.url("/introspect"),
            }),
        );
        mock.set_keys(keys);
        mock
    }

    fn issuer_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn set(&self, path: &str, status: StatusCode, body: Value) {
        self.set_raw(path, status, body.to_string());
    }

    fn set_raw(&self, path: &str, status: StatusCode, body: String) {
        self.state.routes.lock().unwrap().insert(
            path.to_owned(),
            Route {
                status,
                body,
                delay: Duration::ZERO,
            },
        );
    }

    fn set_keys(&self, keys: &[Value]) {
        self.set("/jwks", StatusCode::OK, json!({ "keys": keys }));
    }

    fn delay(&self, path: &str, delay: Duration) {
        if let Some(route) = self.state.routes.lock().unwrap().get_mut(path) {
            route.delay = delay;
        }
    }

    fn hits(&self, path: &str) -> usize {
        self.state
            .hits
            .lock()
            .unwrap()
            .get(path)
            .copied()
            .unwrap_or(0)
    }

    fn claims(&self) -> Value {
        json!({
            "iss": self.issuer_url(),
            "aud": RESOURCE,
            "sub": "alice",
            "client_id": "app",
            "scope": "mcp:tools admin",
            "iat": now(),
            "exp": now() + 300,
            "jti": "1",
        })
    }

    fn verifier(&self) -> JwtVerifierBuilder {
        JwtVerifier::builder(self.issuer_url(), RESOURCE)
    }
}

/// A port nothing listens on.
async fn dead_url() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{addr}")
}

fn assert_invalid(result: Result<Principal, AuthError>, contains: &str) {
    match result {
        Err(AuthError::InvalidToken { reason }) => {
            assert!(reason.contains(contains), "{reason:?} lacks {contains:?}");
        }
        other => panic!("expected InvalidToken ({contains}), got {other:?}"),
    }
}

// --- JWT: accepted tokens -------------------------------------------------------------------

#[tokio::test]
async fn good_tokens_of_every_key_family() {
    let (a, p256, ed) = (TestKey::rsa_a(), TestKey::p256(), TestKey::ed25519());
    let mock = Mock::issuer(&[
        a.jwk("a", false),
        p256.jwk("ec", false),
        ed.jwk("ed", false),
    ])
    .await;
    let v = mock.verifier().build().unwrap();
    let claims = mock.claims();

    let p = v.verify(&a.sign(Some("a"), &claims)).await.unwrap();
    assert_eq!(p.subject(), "alice");
    assert_eq!(
        p.scopes().iter().map(String::as_str).collect::<Vec<_>>(),
        ["admin", "mcp:tools"]
    );
    assert_eq!(p.client_id(), Some("app"));
    assert_eq!(p.issuer(), Some(mock.issuer_url().as_str()));
    assert_eq!(
        p.expires_at(),
        Some(UNIX_EPOCH + Duration::from_secs(claims["exp"].as_u64().unwrap()))
    );
    assert_eq!(p.claim("jti"), Some(&json!("1")));
    assert_eq!(p.claims().len(), 8);

    for alg in [
        jsonwebtoken::Algorithm::RS384,
        jsonwebtoken::Algorithm::RS512,
        jsonwebtoken::Algorithm::PS256,
        jsonwebtoken::Algorithm::PS384,
        jsonwebtoken::Algorithm::PS512,
    ] {
        let p = v.verify(&a.sign_as(alg, Some("a"), &claims)).await;
        assert_eq!(p.unwrap().subject(), "alice", "{alg:?}");
    }
    assert!(v.verify(&p256.sign(Some("ec"), &claims)).await.is_ok());
    assert!(v.verify(&ed.sign(Some("ed"), &claims)).await.is_ok());
    // Discovery and keys were fetched once.
    assert_eq!(mock.hits("/.well-known/oauth-authorization-server"), 1);
    assert_eq!(mock.hits("/jwks"), 1);
}

#[tokio::test]
async fn typ_values_and_audience_lists() {
    let a = TestKey::rsa_a();
    let mock = Mock::issuer(&[a.jwk("a", false)]).await;
    let v = mock
        .verifier()
        .audience("https://mcp.example.com/mcp")
        .build()
        .unwrap();
    let mut claims = mock.claims();
    for typ in [json!("at+jwt"), json!("application/at+JWT"), json!("JWT")] {
        let t = sign_raw(
            &json!({"alg": "RS256", "kid": "a", "typ": typ}),
            &claims,
            &a.encoding,
            a.alg,
        );
        assert!(v.verify(&t).await.is_ok(), "{typ}");
    }
    let untyped = sign_raw(
        &json!({"alg": "RS256", "kid": "a"}),
        &claims,
        &a.encoding,
        a.alg,
    );
    assert!(v.verify(&untyped).await.is_ok());

    // aud as a list naming this resource among others; or the second configured audience.
    claims["aud"] = json!(["https://other.example", RESOURCE]);
    assert!(v.verify(&a.sign(Some("a"), &claims)).await.is_ok());
    claims["aud"] = json!("https://mcp.example.com/mcp");
    assert!(v.verify(&a.sign(Some("a"), &claims)).await.is_ok());

    // sub absent (client_credentials): refused by default — the client id could be a user's
    // sub — and the client is the subject where the server says so; scopes as `scp` list.
    let mut claims = mock.claims();
    claims.as_object_mut().unwrap().remove("sub");
    claims.as_object_mut().unwrap().remove("scope");
    claims["scp"] = json!(["x", "y"]);
    assert_invalid(
        v.verify(&a.sign(Some("a"), &claims)).await,
        "names no subject (sub)",
    );
    let clients = mock.verifier().client_id_as_subject(true).build().unwrap();
    let p = clients.verify(&a.sign(Some("a"), &claims)).await.unwrap();
    assert_eq!(p.subject(), "app");
    assert!(p.has_scope("x") && p.has_scope("y"));

    // Only at+jwt when asked.
    let strict = mock.verifier().require_at_jwt_type(true).build().unwrap();
    let jwt = sign_raw(
        &json!({"alg": "RS256", "kid": "a", "typ": "JWT"}),
        &mock.claims(),
        &a.encoding,
        a.alg,
    );
    assert_invalid(strict.verify(&jwt).await, "typ is \"jwt\"");
    assert_invalid(strict.verify(&untyped).await, "has no typ");
    assert!(
        strict
            .verify(&a.sign(Some("a"), &mock.claims()))
            .await
            .is_ok()
    );
}

// --- JWT: refused claims --------------------------------------------------------------------

#[tokio::test]
async fn wrong_audience_issuer_and_times() {
    let a = TestKey::rsa_a();
    let mock = Mock::issuer(&[a.jwk("a", false)]).await;
    let v = mock.verifier().build().unwrap();
    let with = |name: &str, value: Value| {
        let mut c = mock.claims();
        c[name] = value;
        a.sign(Some("a"), &c)
    };
    let without = |name: &str| {
        let mut c = mock.claims();
        c.as_object_mut().unwrap().remove(name);
        a.sign(Some("a"), &c)
    };

    let e = v
        .verify(&with("aud", json!("http://127.0.0.1:3000/other")))
        .await
        .unwrap_err();
    assert_eq!(
        e,
        AuthError::WrongAudience {
            reason: format!("its aud does not name {RESOURCE:?}")
        }
    );
    assert!(e.is_token_error());
    assert!(matches!(
        v.verify(&with(
            "aud",
            json!(["https://a.example", "https://b.example"])
        ))
        .await,
        Err(AuthError::WrongAudience { .. })
    ));
    assert_invalid(
        v.verify(&without("aud")).await,
        "its aud claim is missing or malformed",
    );

    let e = v
        .verify(&with("iss", json!("https://evil.example")))
        .await
        .unwrap_err();
    assert_eq!(
        e,
        AuthError::WrongIssuer {
            reason: format!("its iss is not {:?}", mock.issuer_url())
        }
    );
    assert_invalid(
        v.verify(&without("iss")).await,
        "its iss claim is missing or malformed",
    );

    // exp: 120 s ago is expired (leeway 60 s); 30 s ago is within the leeway.
    assert_eq!(
        v.verify(&with("exp", json!(now() - 120))).await,
        Err(AuthError::Expired)
    );
    assert!(v.verify(&with("exp", json!(now() - 30))).await.is_ok());
    assert_invalid(
        v.verify(&without("exp")).await,
        "its exp claim is missing or malformed",
    );
    assert_invalid(
        v.verify(&with("exp", json!("tomorrow"))).await,
        "its exp claim is missing or malformed",
    );
    let strict = mock.verifier().leeway(Duration::ZERO).build().unwrap();
    assert_eq!(
        strict.verify(&with("exp", json!(now() - 2))).await,
        Err(AuthError::Expired)
    );

    // nbf and iat in the future, beyond the leeway.
    assert_invalid(
        v.verify(&with("nbf", json!(now() + 300))).await,
        "not valid yet",
    );
    assert!(v.verify(&with("nbf", json!(now() + 30))).await.is_ok());
    assert_invalid(
        v.verify(&with("iat", json!(now() + 300))).await,
        "issued in the future",
    );
    assert!(v.verify(&with("iat", json!(now() + 30))).await.is_ok());
    assert_invalid(
        v.verify(&with("iat", json!("now"))).await,
        "iat claim is not a number",
    );

    // No subject at all; claims of the wrong type.
    let mut c = mock.claims();
    c.as_object_mut().unwrap().remove("sub");
    c.as_object_mut().unwrap().remove("client_id");
    assert_invalid(v.verify(&a.sign(Some("a"), &c)).await, "names no subject");
    assert_invalid(
        v.verify(&with("sub", json!(7))).await,
        "sub claim is not a string",
    );
    assert_invalid(
        v.verify(&with("sub", json!(""))).await,
        "sub claim is empty",
    );
    assert_invalid(
        v.verify(&with("iss", json!([mock.issuer_url()]))).await,
        "iss claim is not a string",
    );
    assert_invalid(
        v.verify(&with("scope", json!(7))).await,
        "scope claim is neither",
    );
}

// --- JWT: refused algorithms and keys -------------------------------------------------------

#[tokio::test]
async fn alg_none_is_refused() {
    let a = TestKey::rsa_a();
    let mock = Mock::issuer(&[a.jwk("a", false)]).await;
    let v = mock.verifier().build().unwrap();
    let claims = mock.claims();
    for alg in ["none", "None", "NONE"] {
        let header = json!({"alg": alg, "typ": "JWT", "kid": "a"});
        let unsigned = format!(
            "{}.{}.",
            b64(header.to_string().as_bytes()),
            b64(claims.to_string().as_bytes())
        );
        let e = v.verify(&unsigned).await.unwrap_err();
        assert_eq!(
            e,
            AuthError::UnusableAlgorithm {
                alg: alg.to_owned(),
                reason: "unsigned tokens (alg none) are never accepted".to_owned()
            }
        );
        // Even with a signature appended.
        let signed = format!("{unsigned}c2ln");
        assert!(matches!(
            v.verify(&signed).await,
            Err(AuthError::UnusableAlgorithm { .. })
        ));
    }
}

#[tokio::test]
async fn hs256_signed_with_the_rsa_public_key_is_refused() {
    let a = TestKey::rsa_a();
    let mock = Mock::issuer(&[a.jwk("a", false)]).await;
    let public_pem = include_str!("testdata/rsa-a.pub.pem");
    let forged = sign_raw(
        &json!({"alg": "HS256", "typ": "at+jwt", "kid": "a"}),
        &mock.claims(),
        &EncodingKey::from_secret(public_pem.as_bytes()).unwrap(),
        jsonwebtoken::Algorithm::HS256,
    );

    // HS256 is not accepted without a configured secret.
    let v = mock.verifier().build().unwrap();
    assert_eq!(
        v.verify(&forged).await,
        Err(AuthError::UnusableAlgorithm {
            alg: "HS256".to_owned(),
            reason: "it is not among the accepted algorithms (RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, EdDSA)".to_owned()
        })
    );
    // Nor when listed explicitly without one.
    assert!(matches!(
        mock.verifier()
            .algorithms([Algorithm::RS256, Algorithm::HS256])
            .build(),
        Err(AuthError::Misconfigured { .. })
    ));
    // With a configured secret, an HS256 token is checked with that secret only, never with
    // the published RSA key its kid names.
    let v = mock
        .verifier()
        .hmac_secret(b"the shared secret".to_vec())
        .build()
        .unwrap();
    assert_invalid(v.verify(&forged).await, "signature does not verify");
    let honest = sign_raw(
        &json!({"alg": "HS256", "kid": "a"}),
        &mock.claims(),
        &EncodingKey::from_secret(b"the shared secret").unwrap(),
        jsonwebtoken::Algorithm::HS256,
    );
    assert_eq!(v.verify(&honest).await.unwrap().subject(), "alice");
    // An RSA token still verifies with the RSA key.
    assert!(v.verify(&a.sign(Some("a"), &mock.claims())).await.is_ok());
}

#[tokio::test]
async fn a_key_is_used_only_with_its_own_family_and_alg() {
    let (a, p256) = (TestKey::rsa_a(), TestKey::p256());
    let mock = Mock::issuer(&[a.jwk("a", true), p256.jwk("ec", false)]).await;
    let v = mock.verifier().build().unwrap();
    let claims = mock.claims();
    // An ES256 token naming the RSA key.
    assert_eq!(
        v.verify(&p256.sign(Some("a"), &claims)).await,
        Err(AuthError::UnusableAlgorithm {
            alg: "ES256".to_owned(),
            reason: "the key \"a\" is an RSA key, which does not verify ES256".to_owned()
        })
    );
    // The RSA key is published for RS256 only.
    assert_eq!(
        v.verify(&a.sign_as(jsonwebtoken::Algorithm::PS256, Some("a"), &claims))
            .await,
        Err(AuthError::UnusableAlgorithm {
            alg: "PS256".to_owned(),
            reason: "the key \"a\" is published for RS256 only, not PS256".to_owned()
        })
    );
    // An algorithm left out of the configured list.
    let only_es = mock
        .verifier()
        .algorithms([Algorithm::ES256])
        .build()
        .unwrap();
    assert!(matches!(
        only_es.verify(&a.sign(Some("a"), &claims)).await,
        Err(AuthError::UnusableAlgorithm { .. })
    ));
    assert!(
        only_es
            .verify(&p256.sign(Some("ec"), &claims))
            .await
            .is_ok()
    );
    // An unknown algorithm name.
    let t = sign_raw(
        &json!({"alg": "ES512", "kid": "ec"}),
        &claims,
        &p256.encoding,
        p256.alg,
    );
    assert!(matches!(
        v.verify(&t).await,
        Err(AuthError::UnusableAlgorithm { alg, .. }) if alg == "ES512"
    ));
}

#[tokio::test]
async fn a_foreign_key_with_a_known_kid_is_refused() {
    let (a, b) = (TestKey::rsa_a(), TestKey::rsa_b());
    let mock = Mock::issuer(&[a.jwk("a", false)]).await;
    let v = mock.verifier().build().unwrap();
    assert_eq!(
        v.verify(&b.sign(Some("a"), &mock.claims())).await,
        Err(AuthError::InvalidToken {
            reason: "its signature does not verify".to_owned()
        })
    );
    // A tampered payload under a genuine signature.
    let good = a.sign(Some("a"), &mock.claims());
    let mut parts: Vec<String> = good.split('.').map(str::to_owned).collect();
    let mut claims = mock.claims();
    claims["scope"] = json!("mcp:tools admin superuser");
    parts[1] = b64(claims.to_string().as_bytes());
    assert_invalid(
        v.verify(&parts.join(".")).await,
        "signature does not verify",
    );
}

#[tokio::test]
async fn tokens_without_kid_are_tried_against_the_keys_of_their_family() {
    let (a, b, p256) = (TestKey::rsa_a(), TestKey::rsa_b(), TestKey::p256());
    let mock = Mock::issuer(&[p256.jwk("ec", false), a.jwk("a", false), b.jwk("b", false)]).await;
    let v = mock.verifier().build().unwrap();
    let claims = mock.claims();
    assert!(v.verify(&b.sign(None, &claims)).await.is_ok());
    assert!(v.verify(&a.sign(None, &claims)).await.is_ok());
    assert!(v.verify(&p256.sign(None, &claims)).await.is_ok());
    // Signed by a key the issuer does not publish.
    mock.set_keys(&[a.jwk("a", false)]);
    let v = mock.verifier().build().unwrap();
    assert_eq!(
        v.verify(&b.sign(None, &claims)).await,
        Err(AuthError::InvalidToken {
            reason: "its signature does not verify with any of the issuer's RS256 keys (it names no kid)".to_owned()
        })
    );
    // No key of the family at all.
    assert_eq!(
        v.verify(&p256.sign(None, &claims)).await,
        Err(AuthError::UnknownKey { kid: None })
    );
}

#[tokio::test]
async fn malformed_tokens() {
    let a = TestKey::rsa_a();
    let mock = Mock::issuer(&[a.jwk("a", false)]).await;
    let v = mock.verifier().max_token_bytes(4096).build().unwrap();
    let claims = mock.claims();
    let header = |h: Value| sign_raw(&h, &claims, &a.encoding, a.alg);
    let good = a.sign(Some("a"), &claims);
    let cases: Vec<(String, &str)> = vec![
        (String::new(), "not a JWT"),
        ("abc".into(), "not a JWT"),
        ("a.b".into(), "not a JWT"),
        ("a.b.c.d".into(), "not a JWT"),
        ("a.b.c.d.e".into(), "encrypted JWT (JWE)"),
        (
            good.replacen('.', " .", 1),
            "outside the base64url alphabet",
        ),
        (format!("{good}="), "outside the base64url alphabet"),
        (
            format!("{}.e30.c2ln", b64(b"not json")),
            "header is not a JSON object",
        ),
        (
            format!("{}.e30.c2ln", b64(b"[1]")),
            "header is not a JSON object",
        ),
        ("A.e30.c2ln".to_owned(), "header is not base64url"),
        (
            format!("{}.e30.c2ln", b64(b"{\"typ\":\"JWT\"}")),
            "names no alg",
        ),
        (
            format!("{}.e30.", b64(b"{\"alg\":\"RS256\"}")),
            "has no signature",
        ),
        (
            header(json!({"alg": "RS256", "kid": 7})),
            "kid is not a string",
        ),
        (
            header(json!({"alg": "RS256", "kid": "a", "crit": ["exp"], "exp": 1})),
            "critical extensions",
        ),
        (
            header(json!({"alg": "RS256", "kid": "a", "typ": "dpop+jwt"})),
            "typ is \"dpop+jwt\"",
        ),
        (
            header(json!({"alg": "RS256", "kid": "a", "typ": 1})),
            "typ is not a string",
        ),
        (
            format!("{}.!!!!.c2ln", b64(b"{\"alg\":\"RS256\",\"kid\":\"a\"}")),
            "outside the base64url alphabet",
        ),
        (
            format!(
                "{}.bm90IGpzb24.{}",
                b64(b"{\"alg\":\"RS256\",\"kid\":\"a\"}"),
                good.rsplit('.').next().unwrap()
            ),
            "signature does not verify",
        ),
        ("a".repeat(5000), "longer than 4096 bytes"),
    ];
    for (token, expected) in cases {
        match v.verify(&token).await {
            Err(AuthError::InvalidToken { reason }) => {
                assert!(
                    reason.contains(expected),
                    "{token:?}: {reason:?} lacks {expected:?}"
                );
                // The message never echoes the token.
                if token.len() > 8 {
                    assert!(!reason.contains(&token), "{reason}");
                    assert!(
                        !AuthError::InvalidToken {
                            reason: reason.clone()
                        }
                        .to_string()
                        .contains(&token)
                    );
                }
            }
            other => panic!("{token:?}: expected InvalidToken ({expected}), got {other:?}"),
        }
    }
    // A payload that is not JSON, signed: refused after the signature is checked.
    let message = format!(
        "{}.{}",
        b64(b"{\"alg\":\"RS256\",\"kid\":\"a\"}"),
        b64(b"not json")
    );
    let signature = jsonwebtoken::crypto::sign(message.as_bytes(), &a.encoding, a.alg).unwrap();
    assert_invalid(
        v.verify(&format!("{message}.{signature}")).await,
        "claims are not a JSON object",
    );
}

// --- JWT: keys fetched again ----------------------------------------------------------------

#[tokio::test]
async fn unknown_kid_refreshes_once_then_accepts_the_new_key() {
    let (a, b) = (TestKey::rsa_a(), TestKey::rsa_b());
    let mock = Mock::issuer(&[a.jwk("a", false)]).await;
    let v = mock
        .verifier()
        .refresh_interval(Duration::from_millis(500))
        .build()
        .unwrap();
    let claims = mock.claims();
    // Signed up front: signing is slow in unoptimised builds, and the timing matters here.
    let (with_a, with_b, with_c) = (
        a.sign(Some("a"), &claims),
        b.sign(Some("b"), &claims),
        b.sign(Some("c"), &claims),
    );
    v.load_keys().await.unwrap();
    assert_eq!(mock.hits("/jwks"), 1);
    assert!(v.verify(&with_a).await.is_ok());

    // The issuer rotates in key b; a token signed with it arrives.
    mock.set_keys(&[a.jwk("a", false), b.jwk("b", false)]);
    tokio::time::sleep(Duration::from_millis(550)).await;
    assert!(v.verify(&with_b).await.is_ok());
    assert_eq!(mock.hits("/jwks"), 2, "one refresh");
    assert!(v.verify(&with_b).await.is_ok());
    assert_eq!(mock.hits("/jwks"), 2, "the new key is held");
    // Metadata was discovered once.
    assert_eq!(mock.hits("/.well-known/oauth-authorization-server"), 1);

    // Another unknown kid right away: no fetch (the interval has not passed).
    assert_eq!(
        v.verify(&with_c).await,
        Err(AuthError::UnknownKey {
            kid: Some("c".to_owned())
        })
    );
    assert_eq!(mock.hits("/jwks"), 2);
}

#[tokio::test]
async fn an_unknown_kid_storm_fetches_at_a_bounded_rate() {
    let a = TestKey::rsa_a();
    let mock = Mock::issuer(&[a.jwk("a", false)]).await;
    let v = mock
        .verifier()
        .refresh_interval(Duration::from_millis(300))
        .build()
        .unwrap();
    let claims = mock.claims();
    // Signed up front: signing is slow in unoptimised builds, and the timing matters here.
    let unknown: Vec<String> = (0..20)
        .map(|i| a.sign(Some(&format!("x{i}")), &claims))
        .collect();
    let tokens: Vec<String> = (0..50)
        .map(|i| a.sign(Some(&format!("y{i}")), &claims))
        .collect();
    let known = a.sign(Some("a"), &claims);
    v.load_keys().await.unwrap();
    // Within the interval of the first fetch: unknown kids fetch nothing.
    for token in &unknown {
        let e = v.verify(token).await;
        assert!(matches!(e, Err(AuthError::UnknownKey { .. })), "{e:?}");
    }
    assert_eq!(mock.hits("/jwks"), 1);

    // After it: 50 concurrent misses share one (slow) fetch.
    tokio::time::sleep(Duration::from_millis(350)).await;
    mock.delay("/jwks", Duration::from_millis(200));
    let results = futures_util::future::join_all(tokens.iter().map(|t| v.verify(t))).await;
    for r in results {
        assert!(matches!(r, Err(AuthError::UnknownKey { .. })), "{r:?}");
    }
    assert_eq!(mock.hits("/jwks"), 2, "one fetch for 50 misses");
    // And the known key still works, without a fetch.
    assert!(v.verify(&known).await.is_ok());
    assert_eq!(mock.hits("/jwks"), 2);
}

#[tokio::test]
async fn the_key_set_is_fetched_again_when_old_and_kept_when_that_fails() {
    let (a, b) = (TestKey::rsa_a(), TestKey::rsa_b());
    let mock = Mock::issuer(&[a.jwk("a", false)]).await;
    let v = mock
        .verifier()
        .max_age(Duration::from_millis(100))
        .refresh_interval(Duration::ZERO)
        .build()
        .unwrap();
    let claims = mock.claims();
    assert!(v.verify(&a.sign(Some("a"), &claims)).await.is_ok());
    assert_eq!(mock.hits("/jwks"), 1);
    tokio::time::sleep(Duration::from_millis(150)).await;
    // Old: fetched again on the next verification.
    mock.set_keys(&[b.jwk("b", false)]);
    assert!(v.verify(&b.sign(Some("b"), &claims)).await.is_ok());
    assert_eq!(mock.hits("/jwks"), 2);
    // The issuer's key set goes down: the keys held keep working.
    tokio::time::sleep(Duration::from_millis(150)).await;
    mock.set("/jwks", StatusCode::INTERNAL_SERVER_ERROR, json!({}));
    assert!(v.verify(&b.sign(Some("b"), &claims)).await.is_ok());
    assert_eq!(mock.hits("/jwks"), 3);
}

// --- JWT: the issuer unreachable or misconfigured ------------------------------------------

#[tokio::test]
async fn key_set_down_is_unavailable_not_invalid() {
    let a = TestKey::rsa_a();
    let mock = Mock::issuer(&[a.jwk("a", false)]).await;
    mock.set("/jwks", StatusCode::SERVICE_UNAVAILABLE, json!({}));
    let v = mock
        .verifier()
        .refresh_interval(Duration::from_millis(500))
        .build()
        .unwrap();
    let token = a.sign(Some("a"), &mock.claims());
    let e = v.verify(&token).await.unwrap_err();
    assert_eq!(
        e,
        AuthError::Unavailable {
            reason: format!(
                "the key set: {} answered 503 Service Unavailable",
                mock.url("/jwks")
            )
        }
    );
    assert!(!e.is_token_error());
    // Within the refresh interval the failure is reported without a new fetch.
    assert_eq!(v.verify(&token).await, Err(e));
    assert_eq!(mock.hits("/jwks"), 1);
    // The key set comes back: after the interval it is fetched (the metadata again too,
    // since the key set's URL failed).
    mock.set_keys(&[a.jwk("a", false)]);
    tokio::time::sleep(Duration::from_millis(550)).await;
    assert!(v.verify(&token).await.is_ok());
    assert_eq!(mock.hits("/.well-known/oauth-authorization-server"), 2);

    // Not JSON, or too large: unavailable too.
    let mock = Mock::issuer(&[]).await;
    mock.set_raw("/jwks", StatusCode::OK, "<html>".into());
    let e = mock
        .verifier()
        .build()
        .unwrap()
        .verify(&token)
        .await
        .unwrap_err();
    assert!(
        matches!(&e, AuthError::Unavailable { reason } if reason.contains("it is not JSON")),
        "{e:?}"
    );
    mock.set_raw(
        "/jwks",
        StatusCode::OK,
        format!("{{\"keys\": [], \"pad\": \"{}\"}}", "x".repeat(5000)),
    );
    let e = mock
        .verifier()
        .max_response_bytes(1000)
        .build()
        .unwrap()
        .verify(&token)
        .await
        .unwrap_err();
    assert!(
        matches!(&e, AuthError::Unavailable { reason } if reason.contains("longer than 1000 bytes")),
        "{e:?}"
    );

    // Nothing listening at all.
    let dead = dead_url().await;
    let v = JwtVerifier::builder(dead.clone(), RESOURCE)
        .build()
        .unwrap();
    let e = v.verify(&token).await.unwrap_err();
    assert!(
        matches!(&e, AuthError::Unavailable { reason } if reason.starts_with(&format!("authorization server metadata: {dead}/.well-known/oauth-authorization-server is unreachable"))),
        "{e:?}"
    );
    assert!(v.load_keys().await.is_err());
    let v = JwtVerifier::builder(dead.clone(), RESOURCE)
        .jwks_url(format!("{dead}/jwks"))
        .build()
        .unwrap();
    assert!(matches!(
        v.verify(&token).await,
        Err(AuthError::Unavailable { .. })
    ));
}

#[tokio::test]
async fn a_slow_issuer_times_out() {
    let a = TestKey::rsa_a();
    let mock = Mock::issuer(&[a.jwk("a", false)]).await;
    mock.delay("/jwks", Duration::from_secs(5));
    let v = mock
        .verifier()
        .fetch_timeout(Duration::from_millis(200))
        .build()
        .unwrap();
    let e = v
        .verify(&a.sign(Some("a"), &mock.claims()))
        .await
        .unwrap_err();
    assert!(
        matches!(&e, AuthError::Unavailable { reason } if reason.contains("no complete answer within 200ms")),
        "{e:?}"
    );
}

#[tokio::test]
async fn metadata_naming_another_issuer_is_refused() {
    let a = TestKey::rsa_a();
    let mock = Mock::issuer(&[a.jwk("a", false)]).await;
    mock.set(
        "/.well-known/oauth-authorization-server",
        StatusCode::OK,
        json!({"issuer": "https://honest.example", "jwks_uri": mock.url("/jwks")}),
    );
    let v = mock.verifier().build().unwrap();
    let e = v
        .verify(&a.sign(Some("a"), &mock.claims()))
        .await
        .unwrap_err();
    assert_eq!(
        e,
        AuthError::Misconfigured {
            reason: format!(
                "the metadata at {}/.well-known/oauth-authorization-server names the issuer \"https://honest.example\", not {:?}; it is not used (RFC 8414 section 3.3)",
                mock.issuer_url(),
                mock.issuer_url()
            )
        }
    );
    assert!(!e.is_token_error());
    assert_eq!(mock.hits("/jwks"), 0, "the key set it names is not fetched");

    // Metadata without jwks_uri; no metadata anywhere.
    mock.set(
        "/.well-known/oauth-authorization-server",
        StatusCode::OK,
        json!({"issuer": mock.issuer_url()}),
    );
    let e = mock
        .verifier()
        .build()
        .unwrap()
        .load_keys()
        .await
        .unwrap_err();
    assert!(
        matches!(&e, AuthError::Misconfigured { reason } if reason.contains("names no jwks_uri")),
        "{e:?}"
    );
    let empty = Mock::start().await;
    let e = empty
        .verifier()
        .build()
        .unwrap()
        .load_keys()
        .await
        .unwrap_err();
    assert_eq!(
        e,
        AuthError::Misconfigured {
            reason: format!(
                "no authorization server metadata for {:?}: tried {}/.well-known/oauth-authorization-server (404), {}/.well-known/openid-configuration (404)",
                empty.issuer_url(),
                empty.issuer_url(),
                empty.issuer_url()
            )
        }
    );
}

#[tokio::test]
async fn discovery_falls_back_in_the_mcp_order() {
    let a = TestKey::rsa_a();
    // An issuer with a path, serving only OpenID Connect discovery by path appending (the
    // last form tried).
    let mock = Mock::start().await;
    let issuer = mock.url("/tenant1");
    mock.set(
        "/tenant1/.well-known/openid-configuration",
        StatusCode::OK,
        json!({"issuer": issuer, "jwks_uri": mock.url("/tenant1/jwks")}),
    );
    mock.set(
        "/tenant1/jwks",
        StatusCode::OK,
        json!({"keys": [a.jwk("a", false)]}),
    );
    let v = JwtVerifier::builder(issuer.clone(), RESOURCE)
        .build()
        .unwrap();
    let mut claims = mock.claims();
    claims["iss"] = json!(issuer);
    assert!(v.verify(&a.sign(Some("a"), &claims)).await.is_ok());
    assert_eq!(
        mock.hits("/.well-known/oauth-authorization-server/tenant1"),
        1
    );
    assert_eq!(mock.hits("/.well-known/openid-configuration/tenant1"), 1);
    assert_eq!(mock.hits("/tenant1/.well-known/openid-configuration"), 1);

    // A server error stops discovery: it is not a missing document.
    let mock = Mock::start().await;
    mock.set(
        "/.well-known/oauth-authorization-server",
        StatusCode::BAD_GATEWAY,
        json!({}),
    );
    let e = mock
        .verifier()
        .build()
        .unwrap()
        .load_keys()
        .await
        .unwrap_err();
    assert!(matches!(e, AuthError::Unavailable { .. }), "{e:?}");
    assert_eq!(mock.hits("/.well-known/openid-configuration"), 0);
}

#[tokio::test]
async fn explicit_and_static_key_sets() {
    let a = TestKey::rsa_a();
    let mock = Mock::start().await;
    mock.set_keys(&[a.jwk("a", false)]);
    let claims = mock.claims();
    let token = a.sign(Some("a"), &claims);
    let v = mock.verifier().jwks_url(mock.url("/jwks")).build().unwrap();
    assert!(v.verify(&token).await.is_ok());
    assert_eq!(mock.hits("/.well-known/oauth-authorization-server"), 0);

    let jwks = json!({"keys": [a.jwk("a", false)]}).to_string();
    let v = JwtVerifier::builder(mock.issuer_url(), RESOURCE)
        .jwks(jwks)
        .build()
        .unwrap();
    v.load_keys().await.unwrap();
    assert!(v.verify(&token).await.is_ok());
    assert_eq!(
        v.verify(&a.sign(Some("z"), &claims)).await,
        Err(AuthError::UnknownKey {
            kid: Some("z".to_owned())
        })
    );
    assert_eq!(mock.hits("/jwks"), 1, "static keys fetch nothing");
    assert!(matches!(
        JwtVerifier::builder(mock.issuer_url(), RESOURCE)
            .jwks("{")
            .build(),
        Err(AuthError::Misconfigured { .. })
    ));
}

#[test]
fn builder_refuses_bad_configuration() {
    let bad = |b: JwtVerifierBuilder| matches!(b.build(), Err(AuthError::Misconfigured { .. }));
    assert!(bad(JwtVerifier::builder("auth.example.com", RESOURCE)));
    assert!(bad(JwtVerifier::builder(
        "https://auth.example.com?x",
        RESOURCE
    )));
    assert!(bad(JwtVerifier::builder("https://auth.example.com", "")));
    assert!(bad(JwtVerifier::builder(
        "https://auth.example.com",
        RESOURCE
    )
    .leeway(Duration::from_secs(7200))));
    assert!(bad(JwtVerifier::builder(
        "https://auth.example.com",
        RESOURCE
    )
    .algorithms([])));
    assert!(bad(JwtVerifier::builder(
        "https://auth.example.com",
        RESOURCE
    )
    .hmac_secret(Vec::new())));
    assert!(bad(JwtVerifier::builder(
        "https://auth.example.com",
        RESOURCE
    )
    .jwks_url("ftp://x/")));
    let v = JwtVerifier::builder("https://auth.example.com", RESOURCE)
        .audience("https://b.example")
        .build()
        .unwrap();
    assert_eq!(v.issuer(), "https://auth.example.com");
    assert_eq!(v.audiences(), [RESOURCE, "https://b.example"]);
}

// --- introspection --------------------------------------------------------------------------

fn introspector(mock: &Mock) -> IntrospectionVerifierBuilder {
    IntrospectionVerifier::builder(RESOURCE, "rs client", "s3cret:+&")
        .endpoint(mock.url("/introspect"))
        .issuer(mock.issuer_url())
}

fn active(mock: &Mock, token: &str, answer: Value) {
    mock.state
        .introspect
        .lock()
        .unwrap()
        .insert(token.to_owned(), answer);
}

#[tokio::test]
async fn introspection_active_and_inactive() {
    let mock = Mock::issuer(&[]).await;
    let exp = now() + 600;
    active(
        &mock,
        "opaque-1",
        json!({
            "active": true, "sub": "bob", "client_id": "app", "scope": "mcp:tools",
            "iss": mock.issuer_url(), "aud": [RESOURCE], "exp": exp, "token_type": "Bearer",
        }),
    );
    let v = introspector(&mock).build().unwrap();
    let p = v.verify("opaque-1").await.unwrap();
    assert_eq!(p.subject(), "bob");
    assert_eq!(p.client_id(), Some("app"));
    assert!(p.has_scope("mcp:tools"));
    assert_eq!(p.expires_at(), Some(UNIX_EPOCH + Duration::from_secs(exp)));
    assert_eq!(p.claim("active"), Some(&json!(true)));

    // client_secret_basic: id and secret form-urlencoded, then base64 (RFC 6749 2.3.1).
    let (auth, form) = mock.state.introspections.lock().unwrap()[0].clone();
    assert_eq!(
        auth.as_deref(),
        Some(
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode("rs+client:s3cret%3A%2B%26")
            )
            .as_str()
        )
    );
    assert_eq!(form, "token=opaque-1&token_type_hint=access_token");

    // Inactive (unknown, revoked): refused, and remembered briefly (10 s): asking again
    // costs no request.
    let inactive = Err(AuthError::InvalidToken {
        reason: "the authorization server reports it inactive (expired, revoked or unknown)"
            .to_owned(),
    });
    assert_eq!(v.verify("opaque-2").await, inactive);
    assert_eq!(v.verify("opaque-2").await, inactive);
    assert_eq!(mock.hits("/introspect"), 2);
    // Without the refusal cache, each asks.
    let forgetful = introspector(&mock)
        .refusal_ttl(Duration::ZERO)
        .build()
        .unwrap();
    assert_eq!(forgetful.verify("opaque-2").await, inactive);
    assert_eq!(forgetful.verify("opaque-2").await, inactive);
    assert_eq!(mock.hits("/introspect"), 4);

    // client_secret_post.
    let v = introspector(&mock)
        .client_auth(ClientAuth::SecretPost)
        .build()
        .unwrap();
    v.verify("opaque-1").await.unwrap();
    let (auth, form) = mock.state.introspections.lock().unwrap()[4].clone();
    assert_eq!(auth, None);
    assert_eq!(
        form,
        "token=opaque-1&token_type_hint=access_token&client_id=rs+client&client_secret=s3cret%3A%2B%26"
    );

    // Not a bearer token: never sent.
    assert!(matches!(
        v.verify("a b").await,
        Err(AuthError::InvalidToken { .. })
    ));
    assert_eq!(mock.hits("/introspect"), 5);
}

#[tokio::test]
async fn introspection_checks_audience_issuer_and_times() {
    let mock = Mock::issuer(&[]).await;
    let v = introspector(&mock).build().unwrap();
    let base = json!({"active": true, "sub": "bob", "iss": mock.issuer_url(), "aud": RESOURCE, "exp": now() + 600});
    let with = |token: &str, name: &str, value: Value| {
        let mut a = base.clone();
        if value.is_null() {
            a.as_object_mut().unwrap().remove(name);
        } else {
            a[name] = value;
        }
        active(&mock, token, a);
    };
    with("other-aud", "aud", json!(["https://other.example/mcp"]));
    assert_eq!(
        v.verify("other-aud").await,
        Err(AuthError::WrongAudience {
            reason: format!("its aud does not name {RESOURCE:?}")
        })
    );
    with("empty-aud", "aud", json!([]));
    assert!(matches!(
        v.verify("empty-aud").await,
        Err(AuthError::WrongAudience { .. })
    ));
    // An answer without aud is refused by default, accepted where the resource opts out.
    with("no-aud", "aud", Value::Null);
    assert_eq!(
        v.verify("no-aud").await,
        Err(AuthError::WrongAudience {
            reason: format!("the introspection answer names no audience; expected {RESOURCE:?}")
        })
    );
    let lax = introspector(&mock).require_audience(false).build().unwrap();
    assert!(
        lax.verify("no-aud").await.is_ok(),
        "aud checked when present"
    );

    with("other-iss", "iss", json!("https://evil.example"));
    assert!(matches!(
        v.verify("other-iss").await,
        Err(AuthError::WrongIssuer { .. })
    ));
    with("expired", "exp", json!(now() - 120));
    assert_eq!(v.verify("expired").await, Err(AuthError::Expired));
    with("early", "nbf", json!(now() + 600));
    assert!(matches!(
        v.verify("early").await,
        Err(AuthError::InvalidToken { .. })
    ));
    with("refresh", "token_type", json!("refresh_token"));
    assert!(matches!(
        v.verify("refresh").await,
        Err(AuthError::InvalidToken { .. })
    ));
    // No sub: refused, unless the client is taken as the subject.
    let mut a = base.clone();
    a.as_object_mut().unwrap().remove("sub");
    a["client_id"] = json!("machine");
    active(&mock, "client-creds", a);
    assert!(matches!(
        v.verify("client-creds").await,
        Err(AuthError::InvalidToken { reason }) if reason.contains("client_id_as_subject")
    ));
    let clients = introspector(&mock)
        .client_id_as_subject(true)
        .build()
        .unwrap();
    assert_eq!(
        clients.verify("client-creds").await.unwrap().subject(),
        "machine"
    );
}

#[tokio::test]
async fn introspection_endpoint_down_or_refusing() {
    let dead = dead_url().await;
    let v = IntrospectionVerifier::builder(RESOURCE, "rs", "secret")
        .endpoint(format!("{dead}/introspect"))
        .build()
        .unwrap();
    let e = v.verify("opaque").await.unwrap_err();
    assert!(
        matches!(&e, AuthError::Unavailable { reason } if reason.starts_with("token introspection:")),
        "{e:?}"
    );
    assert!(!e.is_token_error());

    let mock = Mock::issuer(&[]).await;
    mock.set("/introspect", StatusCode::INTERNAL_SERVER_ERROR, json!({}));
    assert!(matches!(
        introspector(&mock).build().unwrap().verify("opaque").await,
        Err(AuthError::Unavailable { .. })
    ));
    mock.set(
        "/introspect",
        StatusCode::UNAUTHORIZED,
        json!({"error": "invalid_client"}),
    );
    assert!(matches!(
        introspector(&mock).build().unwrap().verify("opaque").await,
        Err(AuthError::Misconfigured { .. })
    ));
    mock.set_raw("/introspect", StatusCode::OK, "[]".into());
    assert!(matches!(
        introspector(&mock).build().unwrap().verify("opaque").await,
        Err(AuthError::Unavailable { .. })
    ));
}

#[tokio::test]
async fn introspection_endpoint_from_the_issuer_metadata() {
    let mock = Mock::issuer(&[]).await;
    active(
        &mock,
        "opaque",
        json!({"active": true, "sub": "carol", "aud": RESOURCE}),
    );
    let v = IntrospectionVerifier::builder(RESOURCE, "rs", "secret")
        .issuer(mock.issuer_url())
        .build()
        .unwrap();
    assert_eq!(v.verify("opaque").await.unwrap().subject(), "carol");
    assert_eq!(v.verify("opaque").await.unwrap().subject(), "carol");
    assert_eq!(mock.hits("/.well-known/oauth-authorization-server"), 1);
    assert!(matches!(
        IntrospectionVerifier::builder(RESOURCE, "rs", "secret").build(),
        Err(AuthError::Misconfigured { .. })
    ));
}

#[tokio::test]
async fn introspection_answers_are_cached_until_exp_or_ttl() {
    let mock = Mock::issuer(&[]).await;
    let start = now() * 1000;
    let (clock, at) = Clock::manual(start);
    let exp = now() + 30;
    active(
        &mock,
        "short",
        json!({"active": true, "sub": "bob", "aud": RESOURCE, "exp": exp}),
    );
    active(
        &mock,
        "long",
        json!({"active": true, "sub": "bob", "aud": RESOURCE, "exp": now() + 3600}),
    );
    let v = introspector(&mock).build().unwrap().with_clock(clock);
    v.verify("short").await.unwrap();
    v.verify("long").await.unwrap();
    v.verify("short").await.unwrap();
    v.verify("long").await.unwrap();
    assert_eq!(mock.hits("/introspect"), 2, "hits do not ask again");
    // 31 s later: "short" passed its exp (asked again), "long" is within the 60 s TTL.
    at.store(start + 31_000, Ordering::Relaxed);
    v.verify("long").await.unwrap();
    assert_eq!(mock.hits("/introspect"), 2);
    let _ = v.verify("short").await;
    assert_eq!(mock.hits("/introspect"), 3);
    // 61 s later: the TTL bounds "long".
    at.store(start + 61_000, Ordering::Relaxed);
    v.verify("long").await.unwrap();
    assert_eq!(mock.hits("/introspect"), 4);
}

#[tokio::test]
async fn introspections_of_one_token_are_shared_and_their_number_is_bounded() {
    let mock = Mock::issuer(&[]).await;
    active(
        &mock,
        "shared",
        json!({"active": true, "sub": "bob", "aud": RESOURCE, "exp": now() + 600}),
    );
    // Twenty checks of one token at once: one request.
    let v = introspector(&mock).build().unwrap();
    let all = futures_util::future::join_all((0..20).map(|_| v.verify("shared"))).await;
    assert!(all.iter().all(|p| p.as_ref().unwrap().subject() == "bob"));
    assert_eq!(mock.hits("/introspect"), 1);
    // One slot: of two tokens checked at once, the second is not sent (503), and the
    // refusal is not remembered (it is the server's state, not the token's).
    let one = introspector(&mock)
        .max_concurrent_introspections(1)
        .build()
        .unwrap();
    let (a, b) = tokio::join!(one.verify("unknown-a"), one.verify("unknown-b"));
    assert!(matches!(a, Err(AuthError::InvalidToken { .. })), "{a:?}");
    assert_eq!(
        b,
        Err(AuthError::Unavailable {
            reason: "1 token introspections are in flight, the most this server makes at once (max_concurrent_introspections)".into()
        })
    );
    assert_eq!(mock.hits("/introspect"), 2);
    assert!(matches!(
        one.verify("unknown-b").await,
        Err(AuthError::InvalidToken { .. })
    ));
    assert_eq!(mock.hits("/introspect"), 3);
}

/// One client (an address, or an IPv6 network) holds at most its share of the introspection
/// slots; the others stay for other clients.
#[tokio::test]
async fn one_client_holds_at_most_its_share_of_the_introspection_slots() {
    use super::client::checking_for;
    let mock = Mock::issuer(&[]).await;
    let a: std::net::IpAddr = "192.0.2.1".parse().unwrap();
    let b: std::net::IpAddr = "2001:db8::".parse().unwrap();
    let v = introspector(&mock)
        .max_concurrent_introspections(4)
        .max_concurrent_introspections_per_client(2)
        .build()
        .unwrap();
    let check = |client, token: &'static str| checking_for(Some(client), v.verify(token));
    let (a1, a2, a3, b1, b2) = tokio::join!(
        check(a, "a-1"),
        check(a, "a-2"),
        check(a, "a-3"),
        check(b, "b-1"),
        check(b, "b-2"),
    );
    for (name, r) in [("a1", &a1), ("a2", &a2), ("b1", &b1), ("b2", &b2)] {
        assert!(
            matches!(r, Err(AuthError::InvalidToken { .. })),
            "{name}: {r:?}"
        );
    }
    assert_eq!(
        a3,
        Err(AuthError::Unavailable {
            reason: "2 token introspections are in flight for this client, the most one client may have at once (max_concurrent_introspections_per_client)".into()
        })
    );
    assert_eq!(mock.hits("/introspect"), 4);
    // The shares were given back: a's third token is checked now (not remembered as refused).
    assert!(matches!(
        check(a, "a-3").await,
        Err(AuthError::InvalidToken { .. })
    ));
    assert_eq!(mock.hits("/introspect"), 5);

    // By default a quarter of the slots: 4 of 16.
    let v = introspector(&mock).build().unwrap();
    let check = |client, token: String| {
        let v = &v;
        async move { checking_for(Some(client), v.verify(&token)).await }
    };
    let answers =
        futures_util::future::join_all((0..6).map(|i| check(a, format!("default-{i}")))).await;
    let busy: Vec<_> = answers
        .iter()
        .filter(|r| matches!(r, Err(AuthError::Unavailable { .. })))
        .collect();
    assert_eq!(busy.len(), 2, "{answers:?}");
    assert_eq!(
        busy[0],
        &Err(AuthError::Unavailable {
            reason: "4 token introspections are in flight for this client, the most one client may have at once (max_concurrent_introspections_per_client)".into()
        })
    );
    // Without a client (a check outside an HTTP request), only the global bound.
    let answers = futures_util::future::join_all((0..6).map(|i| {
        let v = &v;
        async move { v.verify(&format!("nobody-{i}")).await }
    }))
    .await;
    assert!(
        answers
            .iter()
            .all(|r| matches!(r, Err(AuthError::InvalidToken { .. }))),
        "{answers:?}"
    );
}

// --- the cache over the JWT verifier --------------------------------------------------------

#[tokio::test]
async fn cached_jwt_verifier() {
    let a = TestKey::rsa_a();
    let mock = Mock::issuer(&[a.jwk("a", false)]).await;
    let v = CachedVerifier::new(mock.verifier().build().unwrap());
    let token = a.sign(Some("a"), &mock.claims());
    let first = v.verify(&token).await.unwrap();
    assert_eq!(v.verify(&token).await.unwrap(), first);
    assert!(
        v.verify(&TestKey::rsa_b().sign(Some("a"), &mock.claims()))
            .await
            .is_err()
    );
    // Usable as a trait object.
    let shared: Arc<dyn TokenVerifier> = Arc::new(v);
    assert_eq!(shared.verify(&token).await.unwrap().subject(), "alice");
}
