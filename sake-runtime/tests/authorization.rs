//! sake as an OAuth 2.1 resource server, on the wire: every refusal is the status, challenge
//! and body the MCP Authorization pages (2025-06-18 and later) and RFC 6750 / RFC 9728 name;
//! the principal reaches functions; sessions and `requestState` belong to their caller.
//!
//! Tokens are checked by a verifier of fixed tokens here (the verifiers themselves are tested
//! against a real authorization server in auth_oidc.rs, and the whole flow in
//! client_oauth.rs). Needs `--features auth`.

use std::time::Duration;

use http::StatusCode;
use http::header::WWW_AUTHENTICATE;
use sake::prelude::*;
use sake_runtime::auth::{AuthError, Authorization, Principal, TokenVerifier, VerifyFuture};
use serde_json::{Value, json};

/// Says who the caller is.
#[tool]
fn whoami(principal: Principal) -> String {
    principal.subject().to_owned()
}

/// Who the caller is, if anyone.
#[tool]
fn maybe_who(principal: Option<Principal>) -> String {
    principal.map_or_else(|| "anonymous".to_owned(), |p| p.subject().to_owned())
}

/// The caller's scopes, through the context.
#[tool]
fn scopes_seen(ctx: Context) -> String {
    ctx.principal()
        .map(|p| p.scopes().iter().cloned().collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// Needs the `admin` scope.
#[tool(scopes("admin"))]
fn admin_report() -> String {
    "all well".to_owned()
}

/// Needs two scopes.
#[tool(scopes("files:read", "files:write"))]
fn rewrite() -> String {
    "rewritten".to_owned()
}

/// Open to any caller.
#[tool]
fn public_echo(text: String) -> String {
    text
}

/// Drafts the report of a server, for admins.
#[prompt(scopes("admin"), complete = complete_server)]
fn admin_prompt(
    /// The server.
    server: String,
) -> String {
    format!("Report on {server}")
}

/// Completes a server's name, for the caller it names.
async fn complete_server(req: CompletionRequest) -> Vec<String> {
    let who = req.principal.as_ref().map_or("anonymous", |p| p.subject());
    vec![format!("{who}-{}", req.value)]
}

/// A yes or no.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Confirm {
    ok: bool,
}

/// Asks for a confirmation, then reports: an admin's task.
#[tool(task = "required", scopes("admin"))]
async fn admin_task(ctx: Context) -> Result<String, InputError> {
    // Work first: the call becomes a task before it asks.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let answer = ctx.elicit::<Confirm>("confirm", "Proceed?").await?;
    Ok(format!(
        "confirmed: {}",
        answer.accepted().is_some_and(|c| c.ok)
    ))
}

/// An admin's notes.
#[resource(uri = "notes://{name}", name = "notes", scopes("admin"))]
fn notes(name: String) -> String {
    format!("notes on {name}")
}

/// Asks a question (2026-07-28: an `input_required` round with a `requestState`).
#[tool]
async fn ask(ctx: Context) -> Result<String, String> {
    let roots = ctx.roots("roots").await.map_err(|e| e.to_string())?;
    Ok(format!("{} roots", roots.len()))
}

const ISSUER: &str = "https://as.example.com";

/// Fixed tokens: `alice` (mcp:tools), `root` (mcp:tools admin), `files` (files), `down` (the
/// authorization server is unreachable); anything else is refused.
struct Tokens;

impl TokenVerifier for Tokens {
    fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a> {
        Box::pin(async move {
            let p = |sub: &str, scopes: &[&str]| {
                Ok(Principal::new(sub)
                    .with_issuer(ISSUER)
                    .with_scopes(scopes.iter().copied()))
            };
            match token {
                "alice" => p("alice", &["mcp:tools"]),
                "bob" => p("bob", &["mcp:tools"]),
                "root" => p("root", &["mcp:tools", "admin"]),
                // root again, signed in without `admin`.
                "root-narrow" => p("root", &["mcp:tools"]),
                "files" => p("carol", &["mcp:tools", "files"]),
                // A verifier that takes its time (an introspection endpoint under load).
                t if t.starts_with("slow-") => {
                    tokio::time::sleep(Duration::from_secs(3)).await;
                    Err(AuthError::InvalidToken {
                        reason: "unknown token".into(),
                    })
                }
                "down" => Err(AuthError::Unavailable {
                    reason: "the issuer's keys could not be fetched".into(),
                }),
                _ => Err(AuthError::InvalidToken {
                    reason: "unknown token".into(),
                }),
            }
        })
    }
}

struct Served {
    url: String,
    base: String,
}

async fn serve(auth: impl FnOnce(Authorization) -> Authorization) -> Served {
    serve_with(auth, |server| server).await
}

/// The server, as `server` makes it (its layers).
async fn serve_with(
    auth: impl FnOnce(Authorization) -> Authorization,
    server: impl FnOnce(Server) -> Server,
) -> Served {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let url = format!("{base}/mcp");
    let authorization = auth(
        Authorization::new(&url, ISSUER, Tokens)
            .scopes_supported(["mcp:tools", "admin", "offline_access"])
            .challenge_scopes(["mcp:tools"])
            .resource_name("test server"),
    );
    let service = server(
        Server::from_registry()
            .name("auth-test")
            .version("1.0.0")
            .authorization(authorization),
    )
    .build()
    .unwrap();
    tokio::spawn(service.serve(listener, std::future::pending()));
    Served { url, base }
}

struct Reply {
    status: StatusCode,
    headers: http::HeaderMap,
    body: Value,
}

impl Reply {
    fn challenge(&self) -> &str {
        self.headers
            .get(WWW_AUTHENTICATE)
            .map(|v| v.to_str().unwrap())
            .unwrap_or("")
    }
}

async fn send(method: &str, url: &str, headers: &[(&str, &str)], body: Option<Value>) -> Reply {
    use http_body_util::{BodyExt as _, Full};
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<Full<bytes::Bytes>>();
    let mut req = http::Request::builder()
        .method(method)
        .uri(url)
        .header("host", url.split('/').nth(2).unwrap_or_default());
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let body = match body {
        Some(body) => {
            req = req
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream");
            Full::new(bytes::Bytes::from(body.to_string()))
        }
        None => Full::new(bytes::Bytes::new()),
    };
    let resp = tokio::time::timeout(
        Duration::from_secs(10),
        client.request(req.body(body).unwrap()),
    )
    .await
    .expect("answered in time")
    .unwrap();
    let status = resp.status();
    let headers = resp.headers().clone();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    Reply {
        status,
        headers,
        body: serde_json::from_str(&text).unwrap_or(Value::String(text)),
    }
}

/// A 2026-07-28 `tools/call` with the routing headers, and a token if given.
async fn call(s: &Served, token: Option<&str>, tool: &str, args: Value) -> Reply {
    let bearer = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", tool),
    ];
    if let Some(b) = &bearer {
        headers.push(("authorization", b));
    }
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": tool, "arguments": args,
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {"roots": {}}}}});
    send("POST", &s.url, &headers, Some(body)).await
}

fn text(reply: &Reply) -> &str {
    reply.body["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text result: {}", reply.body))
}

#[tokio::test]
async fn a_request_without_a_token_gets_the_challenge_naming_the_metadata() {
    let s = serve(|a| a).await;
    let r = call(&s, None, "public_echo", json!({"text": "hi"})).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        r.challenge(),
        format!(
            r#"Bearer resource_metadata="{}/.well-known/oauth-protected-resource/mcp", scope="mcp:tools""#,
            s.base
        )
    );
    assert_eq!(
        r.body,
        json!({"jsonrpc": "2.0", "error": {"code": -32000,
            "message": "Unauthorized: this server needs a bearer token from the authorization server the protected resource metadata names"}})
    );
    // Another scheme is no bearer token either.
    let r = send(
        "POST",
        &s.url,
        &[("authorization", "Basic YWxpY2U6c2VjcmV0")],
        Some(json!({})),
    )
    .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    // GET and DELETE too (a handshake session's streams).
    for method in ["GET", "DELETE"] {
        let r = send(method, &s.url, &[("mcp-session-id", "s1.x.y")], None).await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{method}");
        assert!(r.challenge().starts_with("Bearer resource_metadata="));
    }
}

#[tokio::test]
async fn the_metadata_is_served_at_both_well_known_uris() {
    let s = serve(|a| a).await;
    let expected = json!({
        "resource": s.url,
        "authorization_servers": [ISSUER],
        "scopes_supported": ["mcp:tools", "admin"],
        "bearer_methods_supported": ["header"],
        "resource_name": "test server",
    });
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let r = send("GET", &format!("{}{path}", s.base), &[], None).await;
        assert_eq!(r.status, StatusCode::OK, "{path}");
        assert_eq!(r.body, expected, "{path}");
        assert_eq!(r.headers["content-type"], "application/json");
        assert_eq!(r.headers["access-control-allow-origin"], "*");
    }
}

#[tokio::test]
async fn refused_tokens_get_invalid_token_and_unchecked_ones_503() {
    let s = serve(|a| a).await;
    let r = call(&s, Some("forged"), "public_echo", json!({"text": "hi"})).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        r.challenge(),
        format!(
            r#"Bearer resource_metadata="{}/.well-known/oauth-protected-resource/mcp", scope="mcp:tools", error="invalid_token", error_description="invalid token: unknown token""#,
            s.base
        )
    );
    assert_eq!(r.body["error"]["code"], -32000);
    assert_eq!(
        r.body["error"]["message"],
        "Unauthorized: the bearer token was refused: invalid token: unknown token"
    );
    // The authorization server cannot be reached: not the token's fault.
    let r = call(&s, Some("down"), "public_echo", json!({"text": "hi"})).await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(r.headers["retry-after"], "1");
    assert!(r.headers.get(WWW_AUTHENTICATE).is_none());
    // A malformed header.
    for bad in ["Bearer", "Bearer a b"] {
        let r = send(
            "POST",
            &s.url,
            &[("authorization", bad)],
            Some(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})),
        )
        .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{bad}");
        assert_eq!(r.body["error"]["code"], -32000);
    }
}

#[tokio::test]
async fn the_principal_reaches_functions() {
    let s = serve(|a| a).await;
    assert_eq!(
        text(&call(&s, Some("alice"), "whoami", json!({})).await),
        "alice"
    );
    assert_eq!(
        text(&call(&s, Some("root"), "maybe_who", json!({})).await),
        "root"
    );
    assert_eq!(
        text(&call(&s, Some("root"), "scopes_seen", json!({})).await),
        "admin mcp:tools"
    );
}

#[tokio::test]
async fn a_missing_scope_is_a_403_naming_every_scope_the_call_needs() {
    let s = serve(|a| a).await;
    let r = call(&s, Some("alice"), "admin_report", json!({})).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert_eq!(
        r.challenge(),
        format!(
            r#"Bearer resource_metadata="{}/.well-known/oauth-protected-resource/mcp", scope="admin", error="insufficient_scope", error_description="tool `admin_report` needs the scopes admin""#,
            s.base
        )
    );
    assert_eq!(
        r.body,
        json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -32000,
            "message": "Forbidden: tool `admin_report` needs the scopes admin; sign in again with them"}})
    );
    assert_eq!(
        text(&call(&s, Some("root"), "admin_report", json!({})).await),
        "all well"
    );
    // Two scopes: both are named even though the token holds neither; then a hierarchy
    // (`files` implies `files:*`) grants both.
    let r = call(&s, Some("files"), "rewrite", json!({})).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert!(
        r.challenge().contains(r#"scope="files:read files:write""#),
        "{}",
        r.challenge()
    );
    let s = serve(|a| {
        a.scope_implies(|granted, needed| {
            needed
                .strip_prefix(granted)
                .is_some_and(|rest| rest.starts_with(':'))
        })
    })
    .await;
    assert_eq!(
        text(&call(&s, Some("files"), "rewrite", json!({})).await),
        "rewritten"
    );
}

#[tokio::test]
async fn anonymous_callers_when_allowed_run_only_what_needs_no_caller() {
    let s = serve(|a| a.allow_anonymous(true)).await;
    assert_eq!(
        text(&call(&s, None, "public_echo", json!({"text": "hi"})).await),
        "hi"
    );
    assert_eq!(
        text(&call(&s, None, "maybe_who", json!({})).await),
        "anonymous"
    );
    // A function that takes a Principal, or names scopes: the challenge, asking for them.
    let r = call(&s, None, "whoami", json!({})).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert!(
        r.challenge().ends_with(r#"scope="mcp:tools""#),
        "{}",
        r.challenge()
    );
    assert_eq!(r.body["id"], 7);
    let r = call(&s, None, "admin_report", json!({})).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert!(
        r.challenge().ends_with(r#"scope="admin""#),
        "{}",
        r.challenge()
    );
}

#[tokio::test]
async fn lists_can_hide_what_the_caller_may_not_use() {
    async fn names(s: &Served, token: &str) -> Vec<String> {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {}}}});
        let bearer = format!("Bearer {token}");
        let r = send(
            "POST",
            &s.url,
            &[
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/list"),
                ("authorization", &bearer),
            ],
            Some(body),
        )
        .await;
        r.body["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    }
    let everyone = serve(|a| a).await;
    assert!(
        names(&everyone, "alice")
            .await
            .contains(&"admin_report".to_owned())
    );
    let hiding = serve(|a| a.hide_unauthorized(true)).await;
    let alice = names(&hiding, "alice").await;
    assert!(!alice.contains(&"admin_report".to_owned()), "{alice:?}");
    assert!(!alice.contains(&"rewrite".to_owned()), "{alice:?}");
    assert!(alice.contains(&"whoami".to_owned()), "{alice:?}");
    let root = names(&hiding, "root").await;
    assert!(root.contains(&"admin_report".to_owned()), "{root:?}");
    assert!(!root.contains(&"rewrite".to_owned()), "{root:?}");
}

/// Opens a handshake session for `token`; its id.
async fn open_session(s: &Served, token: &str) -> String {
    let bearer = format!("Bearer {token}");
    let r = send(
        "POST",
        &s.url,
        &[("authorization", &bearer)],
        Some(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}),
        ),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    r.headers["mcp-session-id"].to_str().unwrap().to_owned()
}

async fn ping_in(s: &Served, sid: &str, token: Option<&str>) -> Reply {
    let bearer = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![
        ("mcp-session-id", sid),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    if let Some(b) = &bearer {
        headers.push(("authorization", b));
    }
    send(
        "POST",
        &s.url,
        &headers,
        Some(json!({"jsonrpc": "2.0", "id": 3, "method": "ping"})),
    )
    .await
}

/// Opens a handshake session of `revision`, with a token if given: its id.
async fn open_session_at(s: &Served, revision: &str, token: Option<&str>) -> String {
    let bearer = token.map(|t| format!("Bearer {t}"));
    let headers: Vec<(&str, &str)> = bearer
        .iter()
        .map(|b| ("authorization", b.as_str()))
        .collect();
    let r = send(
        "POST",
        &s.url,
        &headers,
        Some(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": revision, "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}),
        ),
    )
    .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["result"]["protocolVersion"], revision);
    r.headers["mcp-session-id"].to_str().unwrap().to_owned()
}

/// A `tools/call` in a handshake session.
async fn call_in(s: &Served, revision: &str, sid: &str, token: Option<&str>, tool: &str) -> Reply {
    let bearer = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![("mcp-session-id", sid), ("mcp-protocol-version", revision)];
    if let Some(b) = &bearer {
        headers.push(("authorization", b));
    }
    send(
        "POST",
        &s.url,
        &headers,
        Some(json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                    "params": {"name": tool, "arguments": {}}})),
    )
    .await
}

#[tokio::test]
async fn a_session_gets_the_same_403_and_401_challenges_on_every_handshake_revision() {
    let s = serve(|a| a.allow_anonymous(true)).await;
    for revision in ["2025-11-25", "2025-06-18", "2025-03-26"] {
        // A token without the scope: 403 with insufficient_scope naming it, so the client can
        // step up (2025-11-25 "Scope Challenge Handling"), exactly as on 2026-07-28.
        let sid = open_session_at(&s, revision, Some("alice")).await;
        let r = call_in(&s, revision, &sid, Some("alice"), "admin_report").await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{revision}: {}", r.body);
        assert_eq!(
            r.challenge(),
            format!(
                r#"Bearer resource_metadata="{}/.well-known/oauth-protected-resource/mcp", scope="admin", error="insufficient_scope", error_description="tool `admin_report` needs the scopes admin""#,
                s.base
            ),
            "{revision}"
        );
        assert_eq!(
            r.body,
            json!({"jsonrpc": "2.0", "id": 9, "error": {"code": -32000,
                "message": "Forbidden: tool `admin_report` needs the scopes admin; sign in again with them"}}),
            "{revision}"
        );
        // The session still works, and other errors stay JSON-RPC errors in a 200.
        let r = call_in(&s, revision, &sid, Some("alice"), "whoami").await;
        assert_eq!(r.status, StatusCode::OK, "{revision}: {}", r.body);
        assert_eq!(text(&r), "alice", "{revision}");
        let r = call_in(&s, revision, &sid, Some("alice"), "no_such_tool").await;
        assert_eq!(
            (r.status, &r.body["error"]["code"]),
            (StatusCode::OK, &json!(-32602)),
            "{revision}: {}",
            r.body
        );
        // An anonymous session reaching a function that takes a Principal: 401 with the
        // challenge asking for the scopes.
        let anonymous = open_session_at(&s, revision, None).await;
        let r = call_in(&s, revision, &anonymous, None, "whoami").await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{revision}: {}", r.body);
        assert_eq!(
            r.challenge(),
            format!(
                r#"Bearer resource_metadata="{}/.well-known/oauth-protected-resource/mcp", scope="mcp:tools""#,
                s.base
            ),
            "{revision}"
        );
        assert_eq!(r.body["id"], 9, "{revision}");
        assert_eq!(r.body["error"]["code"], -32000, "{revision}");
    }
}

#[tokio::test]
async fn a_session_belongs_to_the_caller_who_opened_it() {
    let s = serve(|a| a.allow_anonymous(true)).await;
    let alices = open_session(&s, "alice").await;
    assert_eq!(ping_in(&s, &alices, Some("alice")).await.status, 200);
    // Another caller, and an anonymous one, are told the session does not exist.
    for token in [Some("bob"), None] {
        let r = ping_in(&s, &alices, token).await;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{token:?}");
        assert_eq!(r.body["error"]["code"], -32001);
        assert_eq!(
            r.body["error"]["message"],
            "Session not found: the Mcp-Session-Id belongs to another caller; start a new session with `initialize`"
        );
    }
    // And the reverse: an anonymous session is not a named caller's.
    let anonymous = send(
        "POST",
        &s.url,
        &[],
        Some(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}),
        ),
    )
    .await;
    let sid = anonymous.headers["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(ping_in(&s, &sid, None).await.status, 200);
    assert_eq!(
        ping_in(&s, &sid, Some("alice")).await.status,
        StatusCode::NOT_FOUND
    );
    // The caller's name is not readable in the id.
    use base64::Engine as _;
    let payload = alices.split('.').nth(1).unwrap();
    let decoded = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .unwrap();
    let text = String::from_utf8_lossy(&decoded);
    assert!(!text.contains("alice"), "{text}");
}

#[tokio::test]
async fn request_state_belongs_to_the_caller_it_was_issued_to() {
    let s = serve(|a| a).await;
    let first = call(&s, Some("alice"), "ask", json!({})).await;
    assert_eq!(
        first.body["result"]["resultType"], "input_required",
        "{}",
        first.body
    );
    let state = first.body["result"]["requestState"]
        .as_str()
        .unwrap()
        .to_owned();
    let retry = |token: &'static str| {
        let state = state.clone();
        let s = &s;
        async move {
            let bearer = format!("Bearer {token}");
            let body = json!({"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {
                "name": "ask", "arguments": {}, "requestState": state,
                "inputResponses": {"roots": {"roots": []}},
                "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                          "io.modelcontextprotocol/clientCapabilities": {"roots": {}}}}});
            send(
                "POST",
                &s.url,
                &[
                    ("mcp-protocol-version", "2026-07-28"),
                    ("mcp-method", "tools/call"),
                    ("mcp-name", "ask"),
                    ("authorization", &bearer),
                ],
                Some(body),
            )
            .await
        }
    };
    let bobs = retry("bob").await;
    assert_eq!(bobs.body["error"]["code"], -32602, "{}", bobs.body);
    let alices = retry("alice").await;
    assert_eq!(text(&alices), "0 roots");
}

#[test]
fn a_scoped_function_needs_a_server_that_checks_tokens() {
    let err = Server::from_registry().build().unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid configuration: tool `admin_report` names scopes or takes the caller's Principal, but the server checks no tokens: configure Server::authorization (feature `auth`)"
    );
}

#[tokio::test]
async fn stdio_takes_its_caller_from_its_token() {
    use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
    async fn run(token: Option<&str>) -> Vec<Value> {
        let mut auth = Authorization::new("https://mcp.example.com/mcp", ISSUER, Tokens)
            // Absent from the environment: an anonymous caller.
            .stdio_token_env("SAKE_TEST_NO_SUCH_VARIABLE");
        if let Some(token) = token {
            auth = auth.stdio_token(token);
        }
        let service = Server::from_registry().authorization(auth).build().unwrap();
        let (client, server) = tokio::io::duplex(1 << 16);
        let (server_read, server_write) = tokio::io::split(server);
        let serving = tokio::spawn(service.serve_io(server_read, server_write));
        let (client_read, mut client_write) = tokio::io::split(client);
        let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                          "io.modelcontextprotocol/clientCapabilities": {}});
        for (id, tool) in [(1, "maybe_who"), (2, "whoami"), (3, "admin_report")] {
            let line = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": tool, "arguments": {}, "_meta": meta}});
            client_write
                .write_all(format!("{line}\n").as_bytes())
                .await
                .unwrap();
        }
        let mut lines = BufReader::new(client_read).lines();
        let mut out = Vec::new();
        for _ in 0..3 {
            let line = tokio::time::timeout(Duration::from_secs(5), lines.next_line())
                .await
                .unwrap()
                .unwrap()
                .unwrap();
            out.push(serde_json::from_str::<Value>(&line).unwrap());
        }
        // End of input: the server stops.
        client_write.shutdown().await.unwrap();
        tokio::time::timeout(Duration::from_secs(5), serving)
            .await
            .expect("the stdio server stops at the end of its input")
            .unwrap()
            .unwrap();
        out.sort_by_key(|v| v["id"].as_i64());
        out
    }
    let as_alice = run(Some("alice")).await;
    assert_eq!(as_alice[0]["result"]["content"][0]["text"], "alice");
    assert_eq!(as_alice[1]["result"]["content"][0]["text"], "alice");
    assert_eq!(
        as_alice[2]["error"]["message"],
        "Forbidden: tool `admin_report` needs the scopes admin; sign in again with them"
    );
    let anonymous = run(None).await;
    assert_eq!(anonymous[0]["result"]["content"][0]["text"], "anonymous");
    assert_eq!(anonymous[1]["error"]["code"], -32000);
    assert_eq!(
        anonymous[1]["error"]["message"],
        "Unauthorized: tool `whoami` needs a bearer token from the authorization server the protected resource metadata names"
    );
}

// Skills carry scopes like functions: `tests/tests/ui/skills/good` (the skill `hello`) for
// callers with `admin` only.
sake::skills!("../../tests/tests/ui/skills/good", scopes("admin"));

/// A 2026-07-28 request of any method with a token.
async fn modern(s: &Served, token: &str, method: &str, params: Value) -> Reply {
    let bearer = format!("Bearer {token}");
    let mut params = params;
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}});
    let mut headers = vec![
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method),
        ("authorization", bearer.as_str()),
    ];
    let uri = params["uri"].as_str().unwrap_or_default().to_owned();
    if method == "resources/read" {
        headers.push(("mcp-name", uri.as_str()));
    }
    send(
        "POST",
        &s.url,
        &headers,
        Some(json!({"jsonrpc": "2.0", "id": 5, "method": method, "params": params})),
    )
    .await
}

#[tokio::test]
async fn scoped_skills_need_their_scopes_on_every_method_and_revision() {
    let s = serve(|a| a).await;
    const SKILL: &str = "skill://hello/SKILL.md";
    for (method, params, what) in [
        (
            "skills/get",
            json!({"uri": SKILL}),
            "skill `skill://hello/SKILL.md`",
        ),
        (
            "resources/read",
            json!({"uri": SKILL}),
            "resource `skill://hello/SKILL.md`",
        ),
        (
            "resources/directory/read",
            json!({"uri": "skill://hello"}),
            "directory `skill://hello`",
        ),
    ] {
        let r = modern(&s, "alice", method, params.clone()).await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{method}: {}", r.body);
        assert_eq!(
            r.body["error"]["message"],
            format!("Forbidden: {what} needs the scopes admin; sign in again with them"),
        );
        let r = modern(&s, "root", method, params).await;
        assert_eq!(r.status, StatusCode::OK, "{method}: {}", r.body);
        assert!(r.body.get("result").is_some(), "{method}: {}", r.body);
    }
    // On a 2025-11-25 session the file is a resource, with the same check.
    let read = |token: &'static str| {
        let url = s.url.clone();
        let s = &s;
        async move {
            let sid = open_session(s, token).await;
            let bearer = format!("Bearer {token}");
            send(
                "POST",
                &url,
                &[
                    ("mcp-session-id", sid.as_str()),
                    ("mcp-protocol-version", "2025-11-25"),
                    ("authorization", bearer.as_str()),
                ],
                Some(
                    json!({"jsonrpc": "2.0", "id": 4, "method": "resources/read",
                            "params": {"uri": SKILL}}),
                ),
            )
            .await
        }
    };
    // As for a function in a session: the 403 with its challenge.
    let r = read("alice").await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    assert!(
        r.challenge().contains(r#"error="insufficient_scope""#),
        "{}",
        r.challenge()
    );
    assert_eq!(
        r.body["error"],
        json!({"code": -32000, "message": "Forbidden: resource `skill://hello/SKILL.md` needs the scopes admin; sign in again with them"})
    );
    let r = read("root").await;
    assert_eq!(r.body["result"]["contents"][0]["uri"], SKILL, "{}", r.body);
    // Hidden from the lists of callers without the scopes, when the server hides.
    let hiding = serve(|a| a.hide_unauthorized(true)).await;
    let listed = |r: Reply, key: &str| r.body["result"][key].as_array().unwrap().len();
    assert_eq!(
        listed(
            modern(&hiding, "alice", "skills/list", json!({})).await,
            "skills"
        ),
        0
    );
    assert_eq!(
        listed(
            modern(&hiding, "root", "skills/list", json!({})).await,
            "skills"
        ),
        1
    );
    assert_eq!(
        listed(
            modern(&hiding, "alice", "resources/list", json!({})).await,
            "resources"
        ),
        0
    );
    assert_eq!(
        listed(
            modern(&hiding, "root", "resources/list", json!({})).await,
            "resources"
        ),
        2
    );
}

#[tokio::test]
async fn completions_are_authorized_as_their_prompt_and_see_the_caller() {
    let s = serve(|a| a).await;
    let complete = json!({"ref": {"type": "ref/prompt", "name": "admin_prompt"},
                          "argument": {"name": "server", "value": "db"}});
    // 2026-07-28: a token without the scope gets the prompt's 403, before the completion runs.
    let r = modern(&s, "alice", "completion/complete", complete.clone()).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    assert_eq!(
        r.challenge(),
        format!(
            r#"Bearer resource_metadata="{}/.well-known/oauth-protected-resource/mcp", scope="admin", error="insufficient_scope", error_description="prompt `admin_prompt` needs the scopes admin""#,
            s.base
        )
    );
    assert_eq!(
        r.body["error"],
        json!({"code": -32000, "message": "Forbidden: prompt `admin_prompt` needs the scopes admin; sign in again with them"})
    );
    // With it, the completion runs and sees who asks.
    let r = modern(&s, "root", "completion/complete", complete.clone()).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["result"]["completion"]["values"], json!(["root-db"]));
    // A 2025-11-25 session: the same.
    for (token, status) in [("alice", StatusCode::FORBIDDEN), ("root", StatusCode::OK)] {
        let sid = open_session_at(&s, "2025-11-25", Some(token)).await;
        let bearer = format!("Bearer {token}");
        let r = send(
            "POST",
            &s.url,
            &[
                ("mcp-session-id", sid.as_str()),
                ("mcp-protocol-version", "2025-11-25"),
                ("authorization", bearer.as_str()),
            ],
            Some(
                json!({"jsonrpc": "2.0", "id": 6, "method": "completion/complete",
                        "params": complete}),
            ),
        )
        .await;
        assert_eq!(r.status, status, "{token}: {}", r.body);
        if status == StatusCode::OK {
            assert_eq!(r.body["result"]["completion"]["values"], json!(["root-db"]));
        } else {
            assert!(
                r.challenge().contains(r#"error="insufficient_scope""#),
                "{}",
                r.challenge()
            );
        }
    }
    // An unknown prompt is still -32602.
    let r = modern(
        &s,
        "root",
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "nope"},
               "argument": {"name": "x", "value": ""}}),
    )
    .await;
    assert_eq!(r.body["error"]["code"], -32602, "{}", r.body);
}

#[tokio::test]
async fn subscriptions_and_listen_filters_need_the_resources_scopes() {
    let s = serve(|a| a).await;
    let challenge = format!(
        r#"Bearer resource_metadata="{}/.well-known/oauth-protected-resource/mcp", scope="admin", error="insufficient_scope", error_description="resource `notes://db` needs the scopes admin""#,
        s.base
    );
    let forbidden = json!({"code": -32000,
        "message": "Forbidden: resource `notes://db` needs the scopes admin; sign in again with them"});
    // A 2025-11-25 session: resources/subscribe is checked as resources/read is.
    for (token, status) in [("alice", StatusCode::FORBIDDEN), ("root", StatusCode::OK)] {
        let sid = open_session_at(&s, "2025-11-25", Some(token)).await;
        let bearer = format!("Bearer {token}");
        let r = send(
            "POST",
            &s.url,
            &[
                ("mcp-session-id", sid.as_str()),
                ("mcp-protocol-version", "2025-11-25"),
                ("authorization", bearer.as_str()),
            ],
            Some(
                json!({"jsonrpc": "2.0", "id": 2, "method": "resources/subscribe",
                        "params": {"uri": "notes://db"}}),
            ),
        )
        .await;
        assert_eq!(r.status, status, "{token}: {}", r.body);
        if status == StatusCode::OK {
            assert_eq!(r.body, json!({"jsonrpc": "2.0", "id": 2, "result": {}}));
        } else {
            assert_eq!(r.challenge(), challenge);
            assert_eq!(r.body["error"], forbidden);
        }
    }
    // 2026-07-28: a listen filter naming it is refused with the same challenge.
    let filter = json!({"notifications": {"resourceSubscriptions": ["notes://db"]}});
    let r = modern(&s, "alice", "subscriptions/listen", filter.clone()).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    assert_eq!(r.challenge(), challenge);
    assert_eq!(r.body["error"], forbidden);
}

#[tokio::test]
async fn a_listen_filter_with_the_scope_is_acknowledged() {
    let s = serve(|a| a).await;
    // The stream stays open: read its head and first event only.
    let listener = s.url.split('/').nth(2).unwrap().to_owned();
    let mut tcp = tokio::net::TcpStream::connect(&listener).await.unwrap();
    let body = json!({"jsonrpc": "2.0", "id": 5, "method": "subscriptions/listen", "params": {
        "notifications": {"resourceSubscriptions": ["notes://db", "nothing://here"]},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}})
    .to_string();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nhost: {listener}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nmcp-protocol-version: 2026-07-28\r\nmcp-method: subscriptions/listen\r\nauthorization: Bearer root\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    tcp.write_all(head.as_bytes()).await.unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let text = loop {
        let n = tokio::time::timeout(Duration::from_secs(10), tcp.read(&mut buf))
            .await
            .expect("the acknowledgement in time")
            .unwrap();
        assert!(n > 0, "closed: {}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&got).into_owned();
        if text.contains("acknowledged") && text.contains("}\n") {
            break text;
        }
    };
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    let data = text
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .and_then(|d| serde_json::from_str::<Value>(d).ok())
        .unwrap_or_else(|| panic!("no event: {text}"));
    // The URI the server does not serve is left out.
    assert_eq!(
        data["params"]["notifications"],
        json!({"resourceSubscriptions": ["notes://db"]})
    );
}

#[tokio::test]
async fn a_tasks_answer_is_authorized_again_under_the_updaters_token() {
    let s = serve(|a| a).await;
    const EXT: &str = "io.modelcontextprotocol/tasks";
    let caps = json!({"elicitation": {}, "extensions": {EXT: {}}});
    let rpc = |token: &'static str, id: u64, method: &'static str, params: Value| {
        let caps = caps.clone();
        let s = &s;
        async move {
            let mut params = params;
            let name = params["taskId"]
                .as_str()
                .map_or_else(|| "admin_task".to_owned(), str::to_owned);
            params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": caps});
            let bearer = format!("Bearer {token}");
            let mut headers = vec![
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", method),
                ("authorization", bearer.as_str()),
            ];
            headers.push(("mcp-name", name.as_str()));
            send(
                "POST",
                &s.url,
                &headers,
                Some(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})),
            )
            .await
        }
    };
    let created = rpc(
        "root",
        1,
        "tools/call",
        json!({"name": "admin_task", "arguments": {}}),
    )
    .await;
    let task = created.body["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task: {}", created.body))
        .to_owned();
    // It waits for its answer.
    let mut status = Value::Null;
    for _ in 0..100 {
        let got = rpc("root", 2, "tasks/get", json!({"taskId": task})).await;
        status = got.body["result"]["status"].clone();
        if status == "input_required" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        status,
        "input_required",
        "{}",
        rpc("root", 2, "tasks/get", json!({"taskId": task}))
            .await
            .body
    );
    let answer = json!({"taskId": task, "inputResponses": {
        "confirm": {"action": "accept", "content": {"ok": true}}}});
    // The same caller with a token without `admin`: the answer would run the tool again,
    // so it gets the tool's 403, and nothing is taken.
    let r = rpc("root-narrow", 3, "tasks/update", answer.clone()).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    assert_eq!(
        r.body["error"],
        json!({"code": -32000, "message": "Forbidden: tool `admin_task` needs the scopes admin; sign in again with them"})
    );
    let got = rpc("root", 4, "tasks/get", json!({"taskId": task})).await;
    assert_eq!(
        got.body["result"]["status"], "input_required",
        "{}",
        got.body
    );
    // With it, the task goes on to its result.
    let r = rpc("root", 5, "tasks/update", answer).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let mut last = Value::Null;
    for _ in 0..100 {
        last = rpc("root", 6, "tasks/get", json!({"taskId": task}))
            .await
            .body;
        if last["result"]["status"] == "completed" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        last["result"]["result"]["content"][0]["text"], "confirmed: true",
        "{last}"
    );
}

/// One raw POST from a given loopback address: the status line's code.
async fn status_from(url: &str, from: [u8; 4], token: &str) -> u16 {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let host = url.split('/').nth(2).unwrap();
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(std::net::SocketAddr::from((from, 0))).unwrap();
    let mut tcp = socket.connect(host.parse().unwrap()).await.unwrap();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "public_echo", "arguments": {"text": "hi"},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}})
    .to_string();
    let req = format!(
        "POST /mcp HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nconnection: close\r\nmcp-protocol-version: 2026-07-28\r\nmcp-method: tools/call\r\nmcp-name: public_echo\r\nauthorization: Bearer {token}\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    tcp.write_all(req.as_bytes()).await.unwrap();
    let mut head = [0u8; 12];
    tcp.read_exact(&mut head).await.unwrap();
    std::str::from_utf8(&head[9..12]).unwrap().parse().unwrap()
}

/// Abuse control before authentication: one address floods the server with tokens its
/// verifier takes seconds to refuse. At most its 64 (`max_bodies_per_client`) are checked at
/// once, the rest get 429 without a check; another address is served at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_tokens_is_checked_only_within_its_addresss_share() {
    let s = serve(|a| a).await;
    let url = s.url.clone();
    let flood: Vec<_> = (0..200)
        .map(|i| {
            let url = url.clone();
            tokio::spawn(
                async move { status_from(&url, [127, 0, 0, 1], &format!("slow-{i}")).await },
            )
        })
        .collect();
    // Let the flood arrive.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let started = std::time::Instant::now();
    assert_eq!(status_from(&url, [127, 0, 0, 2], "alice").await, 200);
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "the honest client waited {:?}",
        started.elapsed()
    );
    let mut statuses = std::collections::BTreeMap::new();
    for f in flood {
        *statuses.entry(f.await.unwrap()).or_insert(0) += 1;
    }
    assert_eq!(
        statuses,
        std::collections::BTreeMap::from([(401, 64), (429, 136)])
    );
}

// ---------------------------------------------------------------------------------------------
// Middleware: an allow rule about scopes refuses as the authorization check does

/// A 2026-07-28 `tools/list`, with a token if given.
async fn list(s: &Served, token: Option<&str>) -> Reply {
    let bearer = token.map(|t| format!("Bearer {t}"));
    let mut headers = vec![
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/list"),
    ];
    if let Some(b) = &bearer {
        headers.push(("authorization", b));
    }
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}});
    send("POST", &s.url, &headers, Some(body)).await
}

#[tokio::test]
async fn an_allow_rule_about_scopes_answers_403_insufficient_scope_on_both_eras() {
    use sake::middleware::{Allow, Kind};
    let s = serve_with(
        |a| a.allow_anonymous(true),
        |server| {
            server
                .layer_kind(Kind::List, Allow::scopes(["admin"]))
                .layer_for(
                    "public_echo",
                    Allow::new(|_, _| false).about_scopes(["files:write"]),
                )
        },
    )
    .await;
    let metadata = format!("{}/.well-known/oauth-protected-resource/mcp", s.base);
    let list_challenge = format!(
        r#"Bearer resource_metadata="{metadata}", scope="admin", error="insufficient_scope", error_description="the tools list needs the scopes admin""#
    );
    let list_refused = |id: i64| {
        json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32000,
            "message": "Forbidden: the tools list needs the scopes admin; sign in again with them"}})
    };
    // 2026-07-28: a token without the scope, exactly as a tool with `scopes("admin")`.
    let r = list(&s, Some("alice")).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    assert_eq!(r.challenge(), list_challenge);
    assert_eq!(r.body, list_refused(7));
    // With it, the list.
    let r = list(&s, Some("root")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert!(r.body["result"]["tools"].is_array(), "{}", r.body);
    // Anonymous: 401, the challenge naming the scope.
    let r = list(&s, None).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}", r.body);
    assert_eq!(
        r.challenge(),
        format!(r#"Bearer resource_metadata="{metadata}", scope="admin""#)
    );
    assert_eq!(
        r.body,
        json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -32000,
            "message": "Unauthorized: the tools list needs a bearer token from the authorization server the protected resource metadata names"}})
    );
    // A rule of one's own, said to be about scopes: even root lacks `files:write`.
    let r = call(&s, Some("root"), "public_echo", json!({"text": "hi"})).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    assert_eq!(
        r.challenge(),
        format!(
            r#"Bearer resource_metadata="{metadata}", scope="files:write", error="insufficient_scope", error_description="tool `public_echo` needs the scopes files:write""#
        )
    );
    assert_eq!(
        r.body,
        json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -32000,
            "message": "Forbidden: tool `public_echo` needs the scopes files:write; sign in again with them"}})
    );
    // A 2025-11-25 session: the same 403 and challenge (not a 200), so the client steps up.
    let sid = open_session_at(&s, "2025-11-25", Some("alice")).await;
    let r = send(
        "POST",
        &s.url,
        &[
            ("mcp-session-id", sid.as_str()),
            ("mcp-protocol-version", "2025-11-25"),
            ("authorization", "Bearer alice"),
        ],
        Some(json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": {}})),
    )
    .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    assert_eq!(r.challenge(), list_challenge);
    assert_eq!(r.body, list_refused(9));
    let r = call_in(&s, "2025-11-25", &sid, Some("alice"), "public_echo").await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    assert!(
        r.challenge()
            .contains(r#"scope="files:write", error="insufficient_scope""#),
        "{}",
        r.challenge()
    );
}
