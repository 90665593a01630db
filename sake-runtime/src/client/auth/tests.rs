//! The authorization flow against fake authorization and MCP servers that record exactly
//! what the client sent: discovery, registration, the authorization request, the token
//! requests, step-up, refresh, migration, and every refusal.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::response::Response;
use axum::routing::any;
use http::HeaderMap;
use serde_json::{Map, Value, json};

use super::token::challenge_of;
use super::*;
use crate::client::fake::{builder, discover_result};
use crate::client::{Client, ClientError};
use crate::net::fetch::form_decode;

/// One request a fake received.
#[derive(Clone, Debug)]
struct Seen {
    method: String,
    path: String,
    query: Vec<(String, String)>,
    headers: HeaderMap,
    body: Vec<u8>,
}

impl Seen {
    fn form(&self) -> Vec<(String, String)> {
        form_decode(&String::from_utf8_lossy(&self.body))
    }

    fn field(&self, name: &str) -> Option<String> {
        self.form()
            .into_iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v)
    }

    fn q(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// `POST /mcp server/discover`, `GET /authorize`, …
    fn line(&self) -> String {
        let rpc = self.json()["method"].as_str().unwrap_or("").to_owned();
        if rpc.is_empty() {
            format!("{} {}", self.method, self.path)
        } else {
            format!("{} {} {rpc}", self.method, self.path)
        }
    }
}

/// What `iss` the authorization endpoint redirects with.
#[derive(Clone)]
enum Iss {
    Correct,
    Omit,
    Value(String),
}

/// How a fake behaves.
#[derive(Clone)]
struct Cfg {
    /// The `scope` of the 401 challenge.
    challenge_scope: Option<String>,
    /// Whether the 401 challenge names the metadata URL.
    challenge_names_metadata: bool,
    /// Where protected resource metadata is served (`None`: nowhere).
    prm_path: Option<String>,
    prm_resource: Option<String>,
    prm_scopes: Option<Vec<String>>,
    /// The authorization servers the metadata names (default: this fake).
    authorization_servers: Option<Vec<String>>,
    /// Where authorization server metadata is served (`None`: nowhere).
    as_metadata_path: Option<String>,
    /// Merged into the authorization server metadata (`null` removes a field).
    metadata: Map<String, Value>,
    iss: Iss,
    /// Overrides the `state` of the redirect.
    state: Option<String>,
    /// Redirects with this `error` instead of a code.
    deny: Option<String>,
    expires_in: u64,
    refresh: bool,
    /// The registration answer's extra fields.
    registration: Map<String, Value>,
    /// Scopes a JSON-RPC method needs (else 403 `insufficient_scope` naming them).
    require: HashMap<String, Vec<String>>,
    /// Tokens the server accepts only with this prefix (the other fakes' are refused).
    accept_prefix: Option<String>,
    /// The token endpoint answers this instead.
    token_error: Option<(u16, Value)>,
    /// The only scopes the authorization server grants (default: whatever is asked).
    grantable: Option<Vec<String>>,
    /// The token endpoint binds tokens to a DPoP proof when it gets one.
    dpop: bool,
    /// The token endpoint wants this nonce in DPoP proofs (RFC 9449 section 8).
    as_nonce: Option<String>,
    /// The MCP server wants this nonce in DPoP proofs (RFC 9449 section 9).
    rs_nonce: Option<String>,
    /// Refusals of the MCP server wait here, so that several are in flight at once.
    hold_refusals: Option<Arc<tokio::sync::Barrier>>,
}

impl Default for Cfg {
    fn default() -> Self {
        Cfg {
            challenge_scope: None,
            challenge_names_metadata: true,
            prm_path: Some("/.well-known/oauth-protected-resource/mcp".into()),
            prm_resource: None,
            prm_scopes: None,
            authorization_servers: None,
            as_metadata_path: Some("/.well-known/oauth-authorization-server".into()),
            metadata: Map::new(),
            iss: Iss::Correct,
            state: None,
            deny: None,
            expires_in: 3600,
            refresh: true,
            registration: Map::new(),
            require: HashMap::new(),
            accept_prefix: None,
            token_error: None,
            grantable: None,
            dpop: false,
            as_nonce: None,
            rs_nonce: None,
            hold_refusals: None,
        }
    }
}

/// Tokens issued by any fake, with their scopes (so that one fake's MCP server accepts
/// another's tokens).
type Registry = Arc<Mutex<HashMap<String, Vec<String>>>>;

struct WorldState {
    seen: Vec<Seen>,
    cfg: Cfg,
    /// code → scopes of its authorization request.
    codes: HashMap<String, Vec<String>>,
    refresh: HashMap<String, Vec<String>>,
    n: usize,
}

/// A fake that is an MCP server (`/mcp`), its protected resource metadata, and an
/// authorization server, on one loopback port.
#[derive(Clone)]
struct World {
    name: &'static str,
    base: String,
    st: Arc<Mutex<WorldState>>,
    tokens: Registry,
}

impl World {
    async fn start(name: &'static str, cfg: Cfg) -> World {
        World::start_with(name, cfg, Registry::default()).await
    }

    async fn start_with(name: &'static str, cfg: Cfg, tokens: Registry) -> World {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let world = World {
            name,
            base,
            st: Arc::new(Mutex::new(WorldState {
                seen: Vec::new(),
                cfg,
                codes: HashMap::new(),
                refresh: HashMap::new(),
                n: 0,
            })),
            tokens,
        };
        let app = axum::Router::new()
            .fallback(any(handle))
            .with_state(world.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        world
    }

    fn mcp(&self) -> String {
        format!("{}/mcp", self.base)
    }

    fn cfg(&self, f: impl FnOnce(&mut Cfg)) {
        f(&mut self.st.lock().unwrap().cfg);
    }

    fn seen(&self) -> Vec<Seen> {
        self.st.lock().unwrap().seen.clone()
    }

    fn lines(&self) -> Vec<String> {
        self.seen().iter().map(Seen::line).collect()
    }

    fn last(&self, method: &str, path: &str) -> Seen {
        self.seen()
            .into_iter()
            .rev()
            .find(|s| s.method == method && s.path == path)
            .unwrap_or_else(|| panic!("no {method} {path}: {:?}", self.lines()))
    }

    fn count(&self, method: &str, path: &str) -> usize {
        self.seen()
            .iter()
            .filter(|s| s.method == method && s.path == path)
            .count()
    }

    fn next(&self) -> usize {
        let mut st = self.st.lock().unwrap();
        st.n += 1;
        st.n
    }

    fn metadata(&self, cfg: &Cfg) -> Value {
        let b = &self.base;
        let mut m = json!({
            "issuer": b,
            "authorization_endpoint": format!("{b}/authorize"),
            "token_endpoint": format!("{b}/token"),
            "registration_endpoint": format!("{b}/register"),
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["none", "client_secret_basic", "client_secret_post", "private_key_jwt"],
        });
        if let Some(o) = m.as_object_mut() {
            for (k, v) in &cfg.metadata {
                if v.is_null() {
                    o.remove(k);
                } else {
                    o.insert(k.clone(), v.clone());
                }
            }
        }
        m
    }

    fn answer(&self, seen: &Seen) -> (u16, Vec<(String, String)>, String) {
        let cfg = self.st.lock().unwrap().cfg.clone();
        let b = self.base.clone();
        let json = |status: u16, v: Value| {
            (
                status,
                vec![("content-type".into(), "application/json".into())],
                v.to_string(),
            )
        };
        let path = seen.path.as_str();
        if Some(path) == cfg.prm_path.as_deref() && seen.method == "GET" {
            let mut doc = json!({
                "resource": cfg.prm_resource.clone().unwrap_or_else(|| format!("{b}/mcp")),
                "authorization_servers": cfg.authorization_servers.clone().unwrap_or_else(|| vec![b.clone()]),
            });
            if let Some(s) = &cfg.prm_scopes {
                doc["scopes_supported"] = json!(s);
            }
            return json(200, doc);
        }
        if Some(path) == cfg.as_metadata_path.as_deref() && seen.method == "GET" {
            return json(200, self.metadata(&cfg));
        }
        match (seen.method.as_str(), path) {
            ("POST", "/mcp") => self.mcp_answer(seen, &cfg),
            ("GET", "/authorize") => {
                let n = self.next();
                let code = format!("code-{n}");
                let scopes: Vec<String> = seen
                    .q("scope")
                    .unwrap_or("")
                    .split(' ')
                    .filter(|s| !s.is_empty())
                    .filter(|s| {
                        cfg.grantable
                            .as_ref()
                            .is_none_or(|g| g.iter().any(|x| x == s))
                    })
                    .map(str::to_owned)
                    .collect();
                self.st.lock().unwrap().codes.insert(code.clone(), scopes);
                let mut params = vec![];
                match &cfg.deny {
                    Some(e) => params.push(("error", e.clone())),
                    None => params.push(("code", code)),
                }
                let state = cfg
                    .state
                    .clone()
                    .unwrap_or_else(|| seen.q("state").unwrap_or("").to_owned());
                params.push(("state", state));
                match &cfg.iss {
                    Iss::Correct => params.push(("iss", b.clone())),
                    Iss::Omit => {}
                    Iss::Value(v) => params.push(("iss", v.clone())),
                }
                let pairs: Vec<(&str, &str)> =
                    params.iter().map(|(k, v)| (*k, v.as_str())).collect();
                let location =
                    super::urls::with_query(seen.q("redirect_uri").unwrap_or(""), &pairs);
                (302, vec![("location".into(), location)], String::new())
            }
            ("POST", "/token") => self.token_answer(seen, &cfg),
            ("POST", "/register") => {
                let n = self.next();
                let mut answer = json!({
                    "client_id": format!("{}-client-{n}", self.name),
                    "client_name": seen.json()["client_name"],
                    "redirect_uris": seen.json()["redirect_uris"],
                });
                if let Some(o) = answer.as_object_mut() {
                    o.extend(cfg.registration.clone());
                }
                json(201, answer)
            }
            _ => (404, vec![], String::new()),
        }
    }

    fn token_answer(&self, seen: &Seen, cfg: &Cfg) -> (u16, Vec<(String, String)>, String) {
        let json = |status: u16, v: Value| {
            (
                status,
                vec![("content-type".into(), "application/json".into())],
                v.to_string(),
            )
        };
        if let Some((status, body)) = &cfg.token_error {
            return json(*status, body.clone());
        }
        let proof = seen.header("dpop").map(claims_of);
        if let (Some(nonce), Some(p)) = (&cfg.as_nonce, &proof)
            && p["nonce"].as_str() != Some(nonce)
        {
            return (
                400,
                vec![
                    ("content-type".into(), "application/json".into()),
                    ("dpop-nonce".into(), nonce.clone()),
                ],
                json!({"error": "use_dpop_nonce"}).to_string(),
            );
        }
        let scopes = match seen.field("grant_type").as_deref() {
            Some("authorization_code") => {
                let code = seen.field("code").unwrap_or_default();
                match self.st.lock().unwrap().codes.remove(&code) {
                    Some(s) => s,
                    None => return json(400, json!({"error": "invalid_grant"})),
                }
            }
            Some("refresh_token") => {
                let rt = seen.field("refresh_token").unwrap_or_default();
                match self.st.lock().unwrap().refresh.remove(&rt) {
                    Some(s) => s,
                    None => {
                        return json(
                            400,
                            json!({"error": "invalid_grant", "error_description": "unknown refresh token"}),
                        );
                    }
                }
            }
            Some("client_credentials" | "urn:ietf:params:oauth:grant-type:jwt-bearer") => seen
                .field("scope")
                .unwrap_or_default()
                .split(' ')
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect(),
            Some("urn:ietf:params:oauth:grant-type:token-exchange") => {
                let n = self.next();
                return json(
                    200,
                    json!({"access_token": format!("{}-jag-{n}", self.name),
                        "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag",
                        "token_type": "N_A"}),
                );
            }
            _ => return json(400, json!({"error": "unsupported_grant_type"})),
        };
        let n = self.next();
        let access = format!("{}-at-{n}", self.name);
        self.tokens
            .lock()
            .unwrap()
            .insert(access.clone(), scopes.clone());
        let bound = cfg.dpop && proof.is_some();
        let mut answer = json!({
            "access_token": access,
            "token_type": if bound { "DPoP" } else { "Bearer" },
            "expires_in": cfg.expires_in,
        });
        if !scopes.is_empty() {
            answer["scope"] = json!(scopes.join(" "));
        }
        if cfg.refresh
            && matches!(
                seen.field("grant_type").as_deref(),
                Some("authorization_code" | "refresh_token")
            )
        {
            let rt = format!("{}-rt-{n}", self.name);
            self.st.lock().unwrap().refresh.insert(rt.clone(), scopes);
            answer["refresh_token"] = json!(rt);
        }
        json(200, answer)
    }

    fn mcp_answer(&self, seen: &Seen, cfg: &Cfg) -> (u16, Vec<(String, String)>, String) {
        let b = &self.base;
        let body = seen.json();
        let rpc = body["method"].as_str().unwrap_or("").to_owned();
        let prm = format!("{b}{}", cfg.prm_path.clone().unwrap_or_default());
        let challenge = |scope: Option<&str>, error: Option<&str>| {
            let mut parts = Vec::new();
            if let Some(e) = error {
                parts.push(format!("error=\"{e}\""));
            }
            if let Some(s) = scope {
                parts.push(format!("scope=\"{s}\""));
            }
            if cfg.challenge_names_metadata && cfg.prm_path.is_some() {
                parts.push(format!("resource_metadata=\"{prm}\""));
            }
            // A server that takes DPoP-bound tokens challenges with that scheme.
            let scheme = if cfg.dpop { "DPoP" } else { "Bearer" };
            format!("{scheme} {}", parts.join(", "))
        };
        let token = seen
            .header("authorization")
            .and_then(|h| {
                h.strip_prefix("Bearer ")
                    .or_else(|| h.strip_prefix("DPoP "))
            })
            .map(str::to_owned);
        if let (Some(nonce), Some(proof)) = (&cfg.rs_nonce, seen.header("dpop"))
            && claims_of(proof)["nonce"].as_str() != Some(nonce)
        {
            return (
                401,
                vec![
                    (
                        "www-authenticate".into(),
                        format!("DPoP error=\"use_dpop_nonce\", resource_metadata=\"{prm}\""),
                    ),
                    ("dpop-nonce".into(), nonce.clone()),
                ],
                String::new(),
            );
        }
        let granted = token.as_ref().and_then(|t| {
            if cfg
                .accept_prefix
                .as_ref()
                .is_some_and(|p| !t.starts_with(p.as_str()))
            {
                return None;
            }
            self.tokens.lock().unwrap().get(t).cloned()
        });
        let Some(granted) = granted else {
            return (
                401,
                vec![(
                    "www-authenticate".into(),
                    challenge(
                        cfg.challenge_scope.as_deref(),
                        token.as_ref().map(|_| "invalid_token"),
                    ),
                )],
                String::new(),
            );
        };
        if let Some(needed) = cfg.require.get(&rpc)
            && !needed.iter().all(|s| granted.contains(s))
        {
            return (
                403,
                vec![(
                    "www-authenticate".into(),
                    challenge(Some(&needed.join(" ")), Some("insufficient_scope")),
                )],
                String::new(),
            );
        }
        let result = match rpc.as_str() {
            "server/discover" => discover_result(),
            "tools/list" => json!({"resultType": "complete", "ttlMs": 0, "cacheScope": "private",
                "tools": [{"name": "t", "inputSchema": {"type": "object"}}]}),
            _ => json!({"resultType": "complete", "content": [{"type": "text", "text": "ok"}]}),
        };
        (
            200,
            vec![("content-type".into(), "application/json".into())],
            json!({"jsonrpc": "2.0", "id": body["id"], "result": result}).to_string(),
        )
    }
}

async fn handle(State(world): State<World>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let bytes = axum::body::to_bytes(body, 1 << 20)
        .await
        .unwrap_or_default();
    let seen = Seen {
        method: parts.method.to_string(),
        path: parts.uri.path().to_owned(),
        query: parts.uri.query().map(form_decode).unwrap_or_default(),
        headers: parts.headers,
        body: bytes.to_vec(),
    };
    world.st.lock().unwrap().seen.push(seen.clone());
    let (status, headers, body) = world.answer(&seen);
    let hold = world.st.lock().unwrap().cfg.hold_refusals.clone();
    if let Some(barrier) = hold
        && status == 401
        && seen.path == "/mcp"
    {
        barrier.wait().await;
    }
    let mut b = Response::builder().status(status);
    for (k, v) in headers {
        b = b.header(k, v);
    }
    b.body(Body::from(Bytes::from(body))).unwrap()
}

/// The claims of a JWT, unverified.
fn claims_of(jwt: &str) -> Value {
    use base64::Engine as _;
    jwt.split('.')
        .nth(1)
        .and_then(|p| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(p)
                .ok()
        })
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null)
}

/// Checks a DPoP proof's signature with the key it carries; its claims.
fn verified_proof(jwt: &str) -> Value {
    let header = jsonwebtoken::decode_header(jwt).unwrap();
    assert_eq!(header.typ.as_deref(), Some("dpop+jwt"));
    let key = jsonwebtoken::DecodingKey::from_jwk(&header.jwk.unwrap()).unwrap();
    let mut v = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::ES256);
    v.required_spec_claims.clear();
    v.validate_exp = false;
    jsonwebtoken::decode::<Value>(jwt, &key, &v).unwrap().claims
}

/// An authorization code `OAuth` with the headless step.
fn code() -> OAuthBuilder {
    OAuth::authorization_code(Headless::new()).client_name("app")
}

async fn connect(world: &World, oauth: &OAuth) -> Result<Client, ClientError> {
    builder().auth(oauth.clone()).connect(&world.mcp()).await
}

fn pairs(v: &[(&str, &str)]) -> Vec<(String, String)> {
    v.iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

// --- the whole flow ------------------------------------------------------------------------

#[tokio::test]
async fn signs_in_with_discovery_registration_pkce_and_the_resource() {
    let w = World::start(
        "w",
        Cfg {
            challenge_scope: Some("mcp:read".into()),
            ..Cfg::default()
        },
    )
    .await;
    let oauth = code().build().unwrap();
    let client = connect(&w, &oauth).await.unwrap();
    client.list_tools().await.unwrap();
    assert_eq!(
        w.lines(),
        [
            "POST /mcp server/discover",
            "GET /.well-known/oauth-protected-resource/mcp",
            "GET /.well-known/oauth-authorization-server",
            "POST /register",
            "GET /authorize",
            "POST /token",
            "POST /mcp server/discover",
            "POST /mcp tools/list",
        ]
    );
    let b = &w.base;
    let seen = w.seen();
    assert_eq!(seen[0].header("authorization"), None);
    // Dynamic registration (RFC 7591): a native public client, refresh tokens wanted.
    assert_eq!(
        w.last("POST", "/register").json(),
        json!({
            "client_name": "app",
            "redirect_uris": ["http://127.0.0.1/callback"],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
            "application_type": "native",
        })
    );
    // The authorization request: PKCE S256, the resource exactly as published, the
    // challenge's scope.
    let authorize = w.last("GET", "/authorize");
    let state = authorize.q("state").unwrap().to_owned();
    let challenge = authorize.q("code_challenge").unwrap().to_owned();
    assert!(state.len() >= 22, "{state}");
    assert_eq!(
        authorize.query,
        pairs(&[
            ("response_type", "code"),
            ("client_id", "w-client-1"),
            ("redirect_uri", "http://127.0.0.1/callback"),
            ("code_challenge", &challenge),
            ("code_challenge_method", "S256"),
            ("state", &state),
            ("resource", &format!("{b}/mcp")),
            ("scope", "mcp:read"),
        ])
    );
    // The token request: the verifier of that challenge, the same resource.
    let token = w.last("POST", "/token");
    let verifier = token.field("code_verifier").unwrap();
    assert_eq!(challenge_of(&verifier), challenge);
    assert_eq!(verifier.len(), 43);
    assert_eq!(
        token.form(),
        pairs(&[
            ("grant_type", "authorization_code"),
            ("code", "code-2"),
            ("redirect_uri", "http://127.0.0.1/callback"),
            ("code_verifier", &verifier),
            ("resource", &format!("{b}/mcp")),
            ("client_id", "w-client-1"),
        ])
    );
    assert_eq!(token.header("authorization"), None);
    assert_eq!(
        token.header("content-type"),
        Some("application/x-www-form-urlencoded")
    );
    // Every request from then on carries the token.
    for s in &seen[6..] {
        assert_eq!(
            s.header("authorization"),
            Some("Bearer w-at-3"),
            "{}",
            s.line()
        );
    }
    let tokens = oauth.tokens(&w.mcp()).await.unwrap().unwrap();
    assert_eq!(tokens.access_token.expose(), "w-at-3");
    assert_eq!(
        tokens.refresh_token.as_ref().map(Secret::expose),
        Some("w-rt-3")
    );
    assert_eq!(tokens.scopes, ["mcp:read"]);
    assert_eq!(tokens.issuer, *b);
    assert_eq!(tokens.resource, format!("{b}/mcp"));
    // A second client with the same OAuth: the token at once, no flow.
    let again = connect(&w, &oauth).await.unwrap();
    again.list_tools().await.unwrap();
    assert_eq!(w.count("GET", "/authorize"), 1);
}

#[tokio::test]
async fn without_auth_a_401_says_what_to_do() {
    let w = World::start("w", Cfg::default()).await;
    let err = builder().connect(&w.mcp()).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "the server requires authorization (HTTP 401, WWW-Authenticate: Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp\"); give the client credentials with ClientBuilder::auth",
            w.base
        )
    );
}

// --- scope selection ---------------------------------------------------------------------------

#[tokio::test]
async fn scopes_come_from_the_challenge_else_the_metadata_else_none() {
    // scopes_supported, when the challenge names none.
    let w = World::start(
        "w",
        Cfg {
            prm_scopes: Some(vec!["a".into(), "b".into()]),
            ..Cfg::default()
        },
    )
    .await;
    connect(&w, &code().build().unwrap()).await.unwrap();
    assert_eq!(w.last("GET", "/authorize").q("scope"), Some("a b"));
    // Neither: no scope parameter at all.
    let w = World::start("w", Cfg::default()).await;
    connect(&w, &code().build().unwrap()).await.unwrap();
    assert_eq!(w.last("GET", "/authorize").q("scope"), None);
    // offline_access only when the authorization server lists it, and refresh tokens are
    // wanted.
    let mut metadata = Map::new();
    metadata.insert("scopes_supported".into(), json!(["a", "offline_access"]));
    let w = World::start(
        "w",
        Cfg {
            challenge_scope: Some("a".into()),
            metadata: metadata.clone(),
            ..Cfg::default()
        },
    )
    .await;
    connect(&w, &code().build().unwrap()).await.unwrap();
    assert_eq!(
        w.last("GET", "/authorize").q("scope"),
        Some("a offline_access")
    );
    let w = World::start(
        "w",
        Cfg {
            challenge_scope: Some("a".into()),
            metadata,
            ..Cfg::default()
        },
    )
    .await;
    connect(&w, &code().refresh_tokens(false).build().unwrap())
        .await
        .unwrap();
    assert_eq!(w.last("GET", "/authorize").q("scope"), Some("a"));
    assert_eq!(
        w.last("POST", "/register").json()["grant_types"],
        json!(["authorization_code"])
    );
}

#[tokio::test]
async fn step_up_asks_for_the_union_and_gives_up_when_it_does_not_help() {
    let w = World::start(
        "w",
        Cfg {
            challenge_scope: Some("basic".into()),
            require: HashMap::from([("tools/call".to_owned(), vec!["write".to_owned()])]),
            ..Cfg::default()
        },
    )
    .await;
    let oauth = code().build().unwrap();
    let client = connect(&w, &oauth).await.unwrap();
    let r = client.call_tool("t", json!({})).await.unwrap();
    assert_eq!(r.content[0].as_text(), Some("ok"));
    let authorizations: Vec<Option<String>> = w
        .seen()
        .iter()
        .filter(|s| s.path == "/authorize")
        .map(|s| s.q("scope").map(str::to_owned))
        .collect();
    // The first from the 401, the second the union of it and the 403's scope.
    assert_eq!(
        authorizations,
        [Some("basic".to_owned()), Some("basic write".to_owned())]
    );
    assert_eq!(
        w.lines()[w.lines().len() - 6..],
        [
            "POST /mcp tools/call",
            "GET /.well-known/oauth-protected-resource/mcp",
            "GET /.well-known/oauth-authorization-server",
            "GET /authorize",
            "POST /token",
            "POST /mcp tools/call"
        ]
    );
    assert_eq!(
        oauth.tokens(&w.mcp()).await.unwrap().unwrap().scopes,
        ["basic", "write"]
    );

    // A server that wants a scope the authorization server does not grant: one step-up,
    // then the call fails, naming the scope.
    let w = World::start(
        "w",
        Cfg {
            challenge_scope: Some("admin".into()),
            require: HashMap::from([("tools/list".to_owned(), vec!["root".to_owned()])]),
            grantable: Some(vec!["admin".into()]),
            ..Cfg::default()
        },
    )
    .await;
    let client = connect(&w, &code().build().unwrap()).await.unwrap();
    let err = client.list_tools().await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "authorization failed: the server still needs the scopes [\"root\"] after re-authorization; giving up (ask the authorization server's administrator for them)"
    );
    assert_eq!(
        w.seen()
            .iter()
            .filter(|s| s.path == "/authorize")
            .map(|s| s.q("scope").unwrap_or("").to_owned())
            .collect::<Vec<_>>(),
        ["admin", "admin root"]
    );
    // 401 → authorize; 403 → step-up once; 403 again for scopes already asked for → stop.
    assert_eq!(w.count("GET", "/authorize"), 2);
}

// --- refusals before any authorization -----------------------------------------------------------

#[tokio::test]
async fn a_metadata_document_for_another_resource_is_refused() {
    let w = World::start(
        "w",
        Cfg {
            prm_resource: Some("https://evil.example.com/mcp".into()),
            ..Cfg::default()
        },
    )
    .await;
    let err = connect(&w, &code().build().unwrap()).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "authorization failed: the protected resource metadata of {}/mcp is for the resource \"https://evil.example.com/mcp\", which is not that server; refusing to authorize (RFC 9728 section 3.3)",
            w.base
        )
    );
    assert_eq!(
        w.lines(),
        [
            "POST /mcp server/discover",
            "GET /.well-known/oauth-protected-resource/mcp"
        ]
    );
}

#[tokio::test]
async fn authorization_server_metadata_must_name_its_issuer_and_offer_pkce() {
    let mut metadata = Map::new();
    metadata.insert("issuer".into(), json!("https://attacker.example.com"));
    let w = World::start(
        "w",
        Cfg {
            metadata,
            ..Cfg::default()
        },
    )
    .await;
    let err = connect(&w, &code().build().unwrap()).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "authorization failed: the metadata at {b}/.well-known/oauth-authorization-server names the issuer \"https://attacker.example.com\", not \"{b}\"; it is not used (RFC 8414 section 3.3)",
            b = w.base
        )
    );
    assert_eq!(
        w.count("POST", "/register") + w.count("GET", "/authorize"),
        0
    );

    let mut metadata = Map::new();
    metadata.insert("code_challenge_methods_supported".into(), Value::Null);
    let w = World::start(
        "w",
        Cfg {
            metadata,
            ..Cfg::default()
        },
    )
    .await;
    let err = connect(&w, &code().build().unwrap()).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "authorization failed: the authorization server {} does not advertise PKCE with S256 (code_challenge_methods_supported); MCP clients must refuse to authorize with it",
            w.base
        )
    );
    assert_eq!(
        w.count("POST", "/register") + w.count("GET", "/authorize"),
        0
    );
}

#[tokio::test]
async fn metadata_is_found_at_each_well_known_form() {
    // No resource_metadata in the challenge, metadata at the root; the authorization server
    // has a path and OpenID Connect metadata appended to it.
    let w = World::start(
        "w",
        Cfg {
            challenge_names_metadata: false,
            prm_path: Some("/.well-known/oauth-protected-resource".into()),
            as_metadata_path: Some("/tenant1/.well-known/openid-configuration".into()),
            ..Cfg::default()
        },
    )
    .await;
    let issuer = format!("{}/tenant1", w.base);
    let mut metadata = Map::new();
    metadata.insert("issuer".into(), json!(issuer));
    w.cfg(|c| {
        c.authorization_servers = Some(vec![issuer.clone()]);
        c.prm_resource = Some(w.base.clone());
        c.metadata = metadata;
        c.iss = Iss::Value(issuer.clone());
    });
    connect(&w, &code().build().unwrap()).await.unwrap();
    assert_eq!(
        w.lines()[..6],
        [
            "POST /mcp server/discover",
            "GET /.well-known/oauth-protected-resource/mcp",
            "GET /.well-known/oauth-protected-resource",
            "GET /.well-known/oauth-authorization-server/tenant1",
            "GET /.well-known/openid-configuration/tenant1",
            "GET /tenant1/.well-known/openid-configuration",
        ]
    );
    // The resource exactly as the root document publishes it.
    assert_eq!(
        w.last("GET", "/authorize").q("resource"),
        Some(w.base.as_str())
    );
    assert_eq!(
        w.last("POST", "/token").field("resource").as_deref(),
        Some(w.base.as_str())
    );
}

// --- the authorization response ------------------------------------------------------------------

#[tokio::test]
async fn the_issuer_parameter_is_checked_as_rfc_9207_and_2026_07_28_say() {
    // (advertised, iss sent, accepted)
    let cases: [(Option<bool>, Iss, bool); 6] = [
        (Some(true), Iss::Correct, true),
        (None, Iss::Omit, true),
        (Some(false), Iss::Correct, true),
        (Some(true), Iss::Omit, false),
        (
            Some(true),
            Iss::Value("https://evil.example.com".into()),
            false,
        ),
        (None, Iss::Value("https://evil.example.com".into()), false),
    ];
    for (advertised, iss, accepted) in cases {
        let mut metadata = Map::new();
        if let Some(a) = advertised {
            metadata.insert(
                "authorization_response_iss_parameter_supported".into(),
                json!(a),
            );
        }
        let w = World::start(
            "w",
            Cfg {
                metadata,
                iss: iss.clone(),
                ..Cfg::default()
            },
        )
        .await;
        let result = connect(&w, &code().build().unwrap()).await;
        assert_eq!(
            result.is_ok(),
            accepted,
            "{advertised:?} {:?}",
            result.err()
        );
        // A refused response never reaches the token endpoint.
        assert_eq!(w.count("POST", "/token"), usize::from(accepted));
        if !accepted {
            let err = result.unwrap_err().to_string();
            match iss {
                Iss::Omit => assert_eq!(
                    err,
                    format!(
                        "authorization failed: the authorization response names no issuer although the authorization server advertises the iss parameter, expected \"{}\" (RFC 9207); the response is not used",
                        w.base
                    )
                ),
                _ => assert_eq!(
                    err,
                    format!(
                        "authorization failed: the authorization response names the issuer \"https://evil.example.com\", expected \"{}\" (RFC 9207); the response is not used",
                        w.base
                    )
                ),
            }
        }
    }
    // A variant equal only after URL normalisation (a trailing slash) is a mismatch.
    let w = World::start("w", Cfg::default()).await;
    w.cfg(|c| c.iss = Iss::Value(format!("{}/", w.base)));
    let err = connect(&w, &code().build().unwrap()).await.unwrap_err();
    assert!(
        matches!(err, ClientError::Auth(OAuthError::IssuerParameter { .. })),
        "{err}"
    );
    assert_eq!(w.count("POST", "/token"), 0);
}

#[tokio::test]
async fn a_foreign_state_or_a_refusal_ends_the_flow() {
    let w = World::start(
        "w",
        Cfg {
            state: Some("forged".into()),
            ..Cfg::default()
        },
    )
    .await;
    let err = connect(&w, &code().build().unwrap()).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "authorization failed: the authorization response carries another state than the request; it is not used"
    );
    assert_eq!(w.count("POST", "/token"), 0);
    let w = World::start(
        "w",
        Cfg {
            deny: Some("access_denied".into()),
            ..Cfg::default()
        },
    )
    .await;
    let err = connect(&w, &code().build().unwrap()).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "authorization failed: the authorization request was refused: access_denied"
    );
    assert_eq!(w.count("POST", "/token"), 0);
}

// --- registration and client authentication -------------------------------------------------------

#[tokio::test]
async fn the_registered_method_authenticates_at_the_token_endpoint() {
    for (method, expect_basic) in [("client_secret_basic", true), ("client_secret_post", false)] {
        let mut registration = Map::new();
        registration.insert("client_secret".into(), json!("s3cr3t"));
        registration.insert("token_endpoint_auth_method".into(), json!(method));
        let mut metadata = Map::new();
        metadata.insert(
            "token_endpoint_auth_methods_supported".into(),
            json!([method]),
        );
        let w = World::start(
            "w",
            Cfg {
                registration,
                metadata,
                ..Cfg::default()
            },
        )
        .await;
        connect(&w, &code().build().unwrap()).await.unwrap();
        assert_eq!(
            w.last("POST", "/register").json()["token_endpoint_auth_method"],
            method
        );
        let token = w.last("POST", "/token");
        if expect_basic {
            // base64("w-client-1:s3cr3t")
            assert_eq!(
                token.header("authorization"),
                Some("Basic dy1jbGllbnQtMTpzM2NyM3Q=")
            );
            assert_eq!(token.field("client_id"), None);
            assert_eq!(token.field("client_secret"), None);
        } else {
            assert_eq!(token.header("authorization"), None);
            assert_eq!(token.field("client_id").as_deref(), Some("w-client-1"));
            assert_eq!(token.field("client_secret").as_deref(), Some("s3cr3t"));
        }
    }
}

#[tokio::test]
async fn pre_registered_clients_come_first_and_stay_with_their_server() {
    let w = World::start("w", Cfg::default()).await;
    let oauth = code()
        .client(RegisteredClient::with_secret("pre", "pw"))
        .client_metadata_document("https://app.example/client.json")
        .build()
        .unwrap();
    connect(&w, &oauth).await.unwrap();
    assert_eq!(w.count("POST", "/register"), 0);
    assert_eq!(w.last("GET", "/authorize").q("client_id"), Some("pre"));
    assert_eq!(
        w.last("POST", "/token").header("authorization"),
        Some("Basic cHJlOnB3")
    );
    // Bound to another authorization server: refused, nothing sent there.
    let w = World::start("w", Cfg::default()).await;
    let oauth = code()
        .client(RegisteredClient::public("pre").for_issuer("https://as.example.com"))
        .build()
        .unwrap();
    let err = connect(&w, &oauth).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "authorization failed: the pre-registered client is registered with https://as.example.com, but the server now names the authorization server {}; register the client there (credentials are not portable across authorization servers)",
            w.base
        )
    );
    assert_eq!(w.count("GET", "/authorize"), 0);
}

#[tokio::test]
async fn a_client_id_metadata_document_replaces_registration_where_supported() {
    let mut metadata = Map::new();
    metadata.insert("client_id_metadata_document_supported".into(), json!(true));
    let w = World::start(
        "w",
        Cfg {
            metadata,
            ..Cfg::default()
        },
    )
    .await;
    let oauth = code()
        .client_metadata_document("https://app.example/client.json")
        .build()
        .unwrap();
    connect(&w, &oauth).await.unwrap();
    assert_eq!(w.count("POST", "/register"), 0);
    assert_eq!(
        w.last("GET", "/authorize").q("client_id"),
        Some("https://app.example/client.json")
    );
    assert_eq!(
        w.last("POST", "/token").field("client_id").as_deref(),
        Some("https://app.example/client.json")
    );
    assert_eq!(
        oauth.client_metadata(&["http://127.0.0.1/callback"]),
        Some(json!({
            "client_id": "https://app.example/client.json",
            "client_name": "app",
            "redirect_uris": ["http://127.0.0.1/callback"],
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
        }))
    );
    // Not supported: dynamic registration.
    let w = World::start("w", Cfg::default()).await;
    connect(&w, &oauth).await.unwrap();
    assert_eq!(w.count("POST", "/register"), 1);
    // Neither, and no pre-registered client: an error that says what to do.
    let mut metadata = Map::new();
    metadata.insert("registration_endpoint".into(), Value::Null);
    let w = World::start(
        "w",
        Cfg {
            metadata,
            ..Cfg::default()
        },
    )
    .await;
    let err = connect(&w, &code().build().unwrap()).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "authorization failed: no client registration for the authorization server {}: it offers no dynamic registration (and no Client ID Metadata Document URL is configured: OAuthBuilder::client_metadata_document); register a client with it and pass it with OAuthBuilder::client",
            w.base
        )
    );
    assert!(
        code()
            .client_metadata_document("http://app.example/c.json")
            .build()
            .is_err()
    );
}

#[tokio::test]
async fn a_server_that_moves_to_another_authorization_server_gets_a_new_registration() {
    let tokens = Registry::default();
    let rs = World::start_with(
        "one",
        Cfg {
            challenge_scope: Some("basic".into()),
            ..Cfg::default()
        },
        tokens.clone(),
    )
    .await;
    let two = World::start_with("two", Cfg::default(), tokens).await;
    let oauth = code().build().unwrap();
    let client = connect(&rs, &oauth).await.unwrap();
    client.list_tools().await.unwrap();
    // The server now trusts only the second authorization server.
    rs.cfg(|c| {
        c.authorization_servers = Some(vec![two.base.clone()]);
        c.accept_prefix = Some("two-".into());
    });
    client.list_tools().await.unwrap();
    // Registered anew there; the first server's client id never shows up.
    assert_eq!(two.count("POST", "/register"), 1);
    for s in two.seen() {
        assert!(
            !format!("{:?}{:?}", s.query, s.form()).contains("one-client"),
            "{}",
            s.line()
        );
    }
    assert_eq!(
        two.last("GET", "/authorize").q("client_id"),
        Some("two-client-1")
    );
    assert_eq!(two.last("GET", "/authorize").q("scope"), Some("basic"));
    let held = oauth.tokens(&rs.mcp()).await.unwrap().unwrap();
    assert_eq!(held.issuer, two.base);
    assert_eq!(
        rs.last("POST", "/mcp").header("authorization"),
        Some("Bearer two-at-3")
    );
}

// --- refresh -------------------------------------------------------------------------------

#[tokio::test]
async fn tokens_are_refreshed_before_they_expire_and_after_a_401() {
    let w = World::start(
        "w",
        Cfg {
            expires_in: 5,
            challenge_scope: Some("a".into()),
            ..Cfg::default()
        },
    )
    .await;
    let oauth = code().build().unwrap();
    // The token expires within the margin: refreshed before each request.
    let client = connect(&w, &oauth).await.unwrap();
    assert_eq!(
        w.lines()[5..],
        ["POST /token", "POST /token", "POST /mcp server/discover",]
    );
    let seen = w.seen();
    assert_eq!(
        seen[5].field("grant_type").as_deref(),
        Some("authorization_code")
    );
    assert_eq!(
        seen[6].form(),
        pairs(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", "w-rt-3"),
            ("resource", &w.mcp()),
            ("client_id", "w-client-1"),
        ])
    );
    assert_eq!(seen[7].header("authorization"), Some("Bearer w-at-4"));
    client.list_tools().await.unwrap();
    assert_eq!(
        w.last("POST", "/token").field("refresh_token").as_deref(),
        Some("w-rt-4")
    );
    assert_eq!(
        w.last("POST", "/mcp").header("authorization"),
        Some("Bearer w-at-5")
    );
    assert_eq!(w.count("GET", "/authorize"), 1);

    // Revoked by the server: the 401 refreshes (after checking that the server still
    // names the same authorization server), and the request goes again.
    w.cfg(|c| c.expires_in = 3600);
    oauth.refresh(&w.mcp()).await.unwrap();
    w.tokens.lock().unwrap().clear();
    client.list_tools().await.unwrap();
    assert_eq!(w.count("GET", "/authorize"), 1);
    assert_eq!(
        w.lines()[w.lines().len() - 4..],
        [
            "POST /mcp tools/list",
            "GET /.well-known/oauth-protected-resource/mcp",
            "POST /token",
            "POST /mcp tools/list"
        ]
    );
    assert_eq!(
        w.last("POST", "/token").field("grant_type").as_deref(),
        Some("refresh_token")
    );

    // The refresh token is dead too: a new authorization.
    w.tokens.lock().unwrap().clear();
    w.st.lock().unwrap().refresh.clear();
    client.list_tools().await.unwrap();
    assert_eq!(w.count("GET", "/authorize"), 2);
}

// --- client credentials ---------------------------------------------------------------------------

#[tokio::test]
async fn client_credentials_with_a_secret() {
    let w = World::start(
        "w",
        Cfg {
            challenge_scope: Some("jobs".into()),
            ..Cfg::default()
        },
    )
    .await;
    let oauth = OAuth::client_credentials(RegisteredClient::with_secret("svc", "pw"))
        .build()
        .unwrap();
    let client = connect(&w, &oauth).await.unwrap();
    client.list_tools().await.unwrap();
    assert_eq!(
        w.lines()[..5],
        [
            "POST /mcp server/discover",
            "GET /.well-known/oauth-protected-resource/mcp",
            "GET /.well-known/oauth-authorization-server",
            "POST /token",
            "POST /mcp server/discover",
        ]
    );
    let token = w.last("POST", "/token");
    assert_eq!(token.header("authorization"), Some("Basic c3ZjOnB3"));
    assert_eq!(
        token.form(),
        pairs(&[
            ("grant_type", "client_credentials"),
            ("resource", &w.mcp()),
            ("scope", "jobs"),
        ])
    );
    assert!(
        OAuth::client_credentials(RegisteredClient::public("x"))
            .build()
            .is_err()
    );
}

#[tokio::test]
async fn client_credentials_with_a_signed_assertion() {
    let pem = include_bytes!("../../auth/testdata/ec-p256.pem");
    let w = World::start("w", Cfg::default()).await;
    let key = ClientKey::from_pem(pem, "ES256").unwrap().kid("k1");
    let oauth = OAuth::client_credentials(RegisteredClient::with_key("svc", key))
        .build()
        .unwrap();
    connect(&w, &oauth).await.unwrap();
    let token = w.last("POST", "/token");
    assert_eq!(token.header("authorization"), None);
    let form = token.form();
    assert_eq!(
        form.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(),
        [
            "grant_type",
            "resource",
            "client_id",
            "client_assertion_type",
            "client_assertion"
        ]
    );
    assert_eq!(
        token.field("client_assertion_type").as_deref(),
        Some("urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
    );
    // RFC 7523: signed by the client's key, by and about the client, for the issuer.
    let assertion = token.field("client_assertion").unwrap();
    let encoding = jsonwebtoken::EncodingKey::from_ec_pem(pem).unwrap();
    let jwk = jsonwebtoken::jwk::Jwk::from_encoding_key(&encoding, jsonwebtoken::Algorithm::ES256)
        .unwrap();
    let decoding = jsonwebtoken::DecodingKey::from_jwk(&jwk).unwrap();
    let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::ES256);
    validation.set_audience(&[w.base.as_str()]);
    let data = jsonwebtoken::decode::<Value>(&assertion, &decoding, &validation).unwrap();
    assert_eq!(data.header.kid.as_deref(), Some("k1"));
    let c = data.claims;
    assert_eq!(
        (c["iss"].as_str(), c["sub"].as_str()),
        (Some("svc"), Some("svc"))
    );
    let (iat, exp) = (c["iat"].as_u64().unwrap(), c["exp"].as_u64().unwrap());
    assert_eq!(exp - iat, 120);
    assert!(c["jti"].as_str().is_some_and(|j| j.len() >= 20));
}

// --- 2025-03-26 -------------------------------------------------------------------------------

#[tokio::test]
async fn without_resource_metadata_the_2025_03_26_fallbacks_apply() {
    // Metadata at the server's origin.
    let w = World::start(
        "w",
        Cfg {
            prm_path: None,
            ..Cfg::default()
        },
    )
    .await;
    connect(&w, &code().build().unwrap()).await.unwrap();
    assert_eq!(
        w.lines()[..5],
        [
            "POST /mcp server/discover",
            "GET /.well-known/oauth-protected-resource/mcp",
            "GET /.well-known/oauth-protected-resource",
            "GET /.well-known/oauth-authorization-server",
            "POST /register",
        ]
    );
    // The resource is the server's URL.
    assert_eq!(
        w.last("GET", "/authorize").q("resource"),
        Some(w.mcp().as_str())
    );
    // No metadata either: /authorize, /token and /register of the origin.
    let w = World::start(
        "w",
        Cfg {
            prm_path: None,
            as_metadata_path: None,
            ..Cfg::default()
        },
    )
    .await;
    connect(&w, &code().build().unwrap()).await.unwrap();
    assert_eq!(
        w.lines()[3..9],
        [
            "GET /.well-known/oauth-authorization-server",
            "GET /.well-known/openid-configuration",
            "POST /register",
            "GET /authorize",
            "POST /token",
            "POST /mcp server/discover",
        ]
    );
}

// --- the user steps ---------------------------------------------------------------------------

#[tokio::test]
async fn the_loopback_browser_receives_the_redirect() {
    let browser = LoopbackBrowser::new().unwrap().open_browser(false);
    let uri = browser.redirect_uri();
    assert_eq!(uri, format!("http://127.0.0.1:{}/callback", browser.port()));
    let browser = Arc::new(browser);
    let b = Arc::clone(&browser);
    let waiting =
        tokio::spawn(async move { b.authorize("https://as.example/authorize?x=1").await });
    let http = crate::net::fetch::Fetcher::new(crate::net::fetch::Limits {
        timeout: std::time::Duration::from_secs(5),
        max_bytes: 1 << 16,
    })
    .unwrap();
    // Anything else on the port is answered 404 and does not end the wait.
    let other = http
        .send(
            http::Method::GET,
            &format!("http://127.0.0.1:{}/favicon.ico", browser.port()),
            HeaderMap::new(),
            bytes::Bytes::new(),
        )
        .await
        .unwrap();
    assert_eq!(other.status, 404);
    let page = http
        .send(
            http::Method::GET,
            &format!("{uri}?code=c%201&state=s&iss=https%3A%2F%2Fas.example"),
            HeaderMap::new(),
            bytes::Bytes::new(),
        )
        .await
        .unwrap();
    assert_eq!(page.status, 200);
    assert!(String::from_utf8_lossy(&page.body).contains("Signed in"));
    let callback = waiting.await.unwrap().unwrap();
    assert_eq!(callback.get("code"), Some("c 1"));
    assert_eq!(callback.get("state"), Some("s"));
    assert_eq!(callback.get("iss"), Some("https://as.example"));
    assert!(!format!("{callback:?}").contains("c 1"));
    // Nobody comes: the wait ends with an error that says where it waited.
    let quiet = LoopbackBrowser::new()
        .unwrap()
        .open_browser(false)
        .timeout(std::time::Duration::from_millis(50));
    let err = quiet.authorize("https://as.example/a").await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "the authorization step failed: no redirect reached {} within 50ms",
            quiet.redirect_uri()
        )
    );
}

#[tokio::test]
async fn a_headless_step_cannot_fill_in_a_login_form() {
    let w = World::start("w", Cfg::default()).await;
    let err = Headless::new()
        .authorize(&format!("{}/login-page", w.base))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "the authorization step failed: the authorization server answered 404 Not Found at {}/login-page instead of redirecting: it wants a person to sign in, which a headless step cannot do (use LoopbackBrowser)",
            w.base
        )
    );
}

// --- secrets ---------------------------------------------------------------------------------------

#[tokio::test]
async fn no_secret_appears_in_errors() {
    let w = World::start(
        "w",
        Cfg {
            token_error: Some((
                401,
                json!({"error": "invalid_client", "error_description": "bad credentials"}),
            )),
            ..Cfg::default()
        },
    )
    .await;
    let oauth = code()
        .client(RegisteredClient::with_secret("pre", "topsecret-value"))
        .build()
        .unwrap();
    let err = connect(&w, &oauth).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "authorization failed: the token endpoint of {} refused the authorization_code request (HTTP 401): invalid_client (bad credentials)",
            w.base
        )
    );
    let code = w.last("POST", "/token").field("code").unwrap();
    let verifier = w.last("POST", "/token").field("code_verifier").unwrap();
    for text in [format!("{err:?}"), format!("{oauth:?}")] {
        for secret in ["topsecret-value", &code, &verifier] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
    }
}

/// A person who takes their time: waits, then signs in headlessly.
struct Slow(Headless, std::time::Duration);

impl UserStep for Slow {
    fn redirect_uri(&self) -> String {
        self.0.redirect_uri()
    }

    fn authorize<'a>(&'a self, url: &'a str) -> UserStepFuture<'a> {
        Box::pin(async move {
            tokio::time::sleep(self.1).await;
            self.0.authorize(url).await
        })
    }
}

#[tokio::test]
async fn signing_in_does_not_count_against_the_request_timeout() {
    let w = World::start("w", Cfg::default()).await;
    let oauth =
        OAuth::authorization_code(Slow(Headless::new(), std::time::Duration::from_millis(600)))
            .build()
            .unwrap();
    let client = builder()
        .timeout(std::time::Duration::from_millis(200))
        .auth(oauth)
        .connect(&w.mcp())
        .await
        .unwrap();
    client.list_tools().await.unwrap();
    assert_eq!(w.count("GET", "/authorize"), 1);
}

// --- DPoP ------------------------------------------------------------------------------------------

#[tokio::test]
async fn dpop_bound_tokens_with_fresh_proofs_and_both_nonces() {
    let mut metadata = Map::new();
    metadata.insert("dpop_signing_alg_values_supported".into(), json!(["ES256"]));
    let w = World::start(
        "w",
        Cfg {
            metadata,
            dpop: true,
            as_nonce: Some("as-n".into()),
            rs_nonce: Some("rs-n".into()),
            ..Cfg::default()
        },
    )
    .await;
    let oauth = code().build().unwrap();
    let client = connect(&w, &oauth).await.unwrap();
    client.list_tools().await.unwrap();
    assert_eq!(
        w.lines()[4..],
        [
            "GET /authorize",
            // Without the nonce, refused; with it, a DPoP-bound token.
            "POST /token",
            "POST /token",
            "POST /mcp server/discover",
            // The same for the MCP server's nonce.
            "POST /mcp server/discover",
            "POST /mcp tools/list",
        ]
    );
    let seen = w.seen();
    let token_url = format!("{}/token", w.base);
    let first = verified_proof(seen[5].header("dpop").unwrap());
    let second = verified_proof(seen[6].header("dpop").unwrap());
    assert_eq!(
        (first["htm"].as_str(), first["htu"].as_str()),
        (Some("POST"), Some(token_url.as_str()))
    );
    assert_eq!(first.get("nonce"), None);
    assert_eq!(second["nonce"], "as-n");
    assert_eq!(second["htu"], token_url);
    assert_ne!(first["jti"], second["jti"]);
    let tokens = oauth.tokens(&w.mcp()).await.unwrap().unwrap();
    assert_eq!(tokens.token_type, "DPoP");
    let access = tokens.access_token.expose().to_owned();
    let mut jtis = Vec::new();
    for s in &seen[7..] {
        assert_eq!(
            s.header("authorization"),
            Some(format!("DPoP {access}").as_str())
        );
        let p = verified_proof(s.header("dpop").unwrap());
        assert_eq!(p["htm"], "POST");
        assert_eq!(p["htu"], w.mcp());
        assert_eq!(p["ath"], super::dpop::ath(&access));
        jtis.push(p["jti"].as_str().unwrap().to_owned());
    }
    assert_eq!(
        verified_proof(seen[7].header("dpop").unwrap()).get("nonce"),
        None
    );
    assert_eq!(
        verified_proof(seen[8].header("dpop").unwrap())["nonce"],
        "rs-n"
    );
    jtis.dedup();
    assert_eq!(jtis.len(), 3, "a fresh proof per request");
    // The same key signs every proof.
    let key = |s: &Seen| {
        jsonwebtoken::decode_header(s.header("dpop").unwrap())
            .unwrap()
            .jwk
    };
    assert_eq!(key(&seen[5]), key(&seen[9]));
    // Refreshing a DPoP-bound token proves possession too.
    oauth.refresh(&w.mcp()).await.unwrap();
    let refresh = w.last("POST", "/token");
    assert_eq!(
        refresh.field("grant_type").as_deref(),
        Some("refresh_token")
    );
    assert_eq!(
        verified_proof(refresh.header("dpop").unwrap())["nonce"],
        "as-n"
    );
    // DPoP off: Bearer tokens, no proofs.
    let metadata = w.st.lock().unwrap().cfg.metadata.clone();
    let w = World::start(
        "w",
        Cfg {
            metadata,
            dpop: true,
            ..Cfg::default()
        },
    )
    .await;
    let oauth = code().dpop(false).build().unwrap();
    connect(&w, &oauth).await.unwrap();
    assert!(w.seen().iter().all(|s| s.header("dpop").is_none()));
    assert_eq!(
        oauth.tokens(&w.mcp()).await.unwrap().unwrap().token_type,
        "Bearer"
    );
    // A server that challenges only with Bearer gets bearer tokens, whatever the
    // authorization server offers.
    let metadata = w.st.lock().unwrap().cfg.metadata.clone();
    let w = World::start(
        "w",
        Cfg {
            metadata,
            ..Cfg::default()
        },
    )
    .await;
    let oauth = code().build().unwrap();
    connect(&w, &oauth).await.unwrap();
    assert!(w.seen().iter().all(|s| s.header("dpop").is_none()));
    assert_eq!(
        oauth.tokens(&w.mcp()).await.unwrap().unwrap().token_type,
        "Bearer"
    );
}

// --- the JWT bearer grant ----------------------------------------------------------------------------

#[tokio::test]
async fn jwt_bearer_with_a_workload_token_and_with_an_id_jag() {
    let w = World::start(
        "w",
        Cfg {
            challenge_scope: Some("jobs".into()),
            ..Cfg::default()
        },
    )
    .await;
    let oauth = OAuth::jwt_bearer(RegisteredClient::public("workload"), Secret::new("wl-jwt"))
        .build()
        .unwrap();
    connect(&w, &oauth)
        .await
        .unwrap()
        .list_tools()
        .await
        .unwrap();
    assert_eq!(
        w.last("POST", "/token").form(),
        pairs(&[
            ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
            ("assertion", "wl-jwt"),
            ("resource", &w.mcp()),
            ("scope", "jobs"),
            ("client_id", "workload"),
        ])
    );
    assert_eq!(
        w.count("POST", "/register") + w.count("GET", "/authorize"),
        0
    );
    // A refused grant: the error, after one request; no retry, no other grant.
    let w = World::start(
        "w",
        Cfg {
            token_error: Some((
                400,
                json!({"error": "invalid_grant", "error_description": "expired"}),
            )),
            ..Cfg::default()
        },
    )
    .await;
    let oauth = OAuth::jwt_bearer(RegisteredClient::public("workload"), Secret::new("wl-jwt"))
        .build()
        .unwrap();
    let err = connect(&w, &oauth).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "authorization failed: the token endpoint of {} refused the urn:ietf:params:oauth:grant-type:jwt-bearer request (HTTP 400): invalid_grant (expired)",
            w.base
        )
    );
    assert_eq!(w.count("POST", "/token"), 1);
    // Enterprise-managed: the ID token exchanged at the identity provider (RFC 8693) for an
    // ID-JAG addressed to this authorization server and resource, then presented to it.
    let idp = World::start("idp", Cfg::default()).await;
    let w = World::start("w", Cfg::default()).await;
    let jag = IdJag::new(
        format!("{}/token", idp.base),
        RegisteredClient::public("idp-client"),
        "id-token-1",
    )
    .unwrap();
    let oauth = OAuth::jwt_bearer(RegisteredClient::with_secret("app", "pw"), jag)
        .build()
        .unwrap();
    connect(&w, &oauth).await.unwrap();
    assert_eq!(
        idp.last("POST", "/token").form(),
        pairs(&[
            (
                "grant_type",
                "urn:ietf:params:oauth:grant-type:token-exchange"
            ),
            (
                "requested_token_type",
                "urn:ietf:params:oauth:token-type:id-jag"
            ),
            ("audience", &w.base),
            ("resource", &w.mcp()),
            ("subject_token", "id-token-1"),
            (
                "subject_token_type",
                "urn:ietf:params:oauth:token-type:id_token"
            ),
            ("client_id", "idp-client"),
        ])
    );
    let token = w.last("POST", "/token");
    assert_eq!(token.header("authorization"), Some("Basic YXBwOnB3"));
    assert_eq!(
        token.form(),
        pairs(&[
            ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
            ("assertion", "idp-jag-1"),
            ("resource", &w.mcp()),
        ])
    );
}

// --- concurrency and persistence ------------------------------------------------------------------

#[tokio::test]
async fn concurrent_refusals_share_one_authorization() {
    let w = World::start(
        "w",
        Cfg {
            refresh: false,
            ..Cfg::default()
        },
    )
    .await;
    let client = connect(&w, &code().build().unwrap()).await.unwrap();
    // The server forgets every token: both requests are refused with the same token, at the
    // same time.
    w.tokens.lock().unwrap().clear();
    w.cfg(|c| c.hold_refusals = Some(Arc::new(tokio::sync::Barrier::new(2))));
    let (a, b) = tokio::join!(client.list_tools(), client.list_tools());
    a.unwrap();
    b.unwrap();
    let refused = w
        .seen()
        .iter()
        .filter(|s| s.path == "/mcp" && s.header("authorization") == Some("Bearer w-at-3"))
        .count();
    assert_eq!(refused, 3, "discover, then both lists with the old token");
    assert_eq!(w.count("GET", "/authorize"), 2, "{:?}", w.lines());
    assert_eq!(w.count("POST", "/register"), 1);
}

#[tokio::test]
async fn a_shared_store_carries_tokens_and_registrations_across_instances() {
    let w = World::start("w", Cfg::default()).await;
    let store = Arc::new(MemoryStore::new());
    let first = code().store(Arc::clone(&store)).build().unwrap();
    connect(&w, &first).await.unwrap();
    let kept = store.load_tokens(&w.mcp()).await.unwrap().unwrap();
    assert_eq!(kept.access_token.expose(), "w-at-3");
    assert_eq!(
        store
            .load_client(&w.base)
            .await
            .unwrap()
            .map(|c| c.client_id().to_owned()),
        Some("w-client-1".to_owned())
    );
    // Another run of the application: the stored token at once, and the stored registration
    // to refresh it.
    let second = code().store(Arc::clone(&store)).build().unwrap();
    let client = connect(&w, &second).await.unwrap();
    assert_eq!(w.count("GET", "/authorize"), 1);
    assert_eq!(
        w.last("POST", "/mcp").header("authorization"),
        Some("Bearer w-at-3")
    );
    second.refresh(&w.mcp()).await.unwrap();
    assert_eq!(
        w.last("POST", "/token").field("client_id").as_deref(),
        Some("w-client-1")
    );
    client.list_tools().await.unwrap();
    second.sign_out(&w.mcp()).await.unwrap();
    assert_eq!(store.load_tokens(&w.mcp()).await.unwrap(), None);
    assert_eq!(w.count("POST", "/register"), 1);
}
