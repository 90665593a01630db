//! `Server::proxy` with credentials of the gateway's own (`Upstream::auth`): the OAuth client
//! credentials grant against a real authorization server — oidc-provider (OpenID Certified,
//! pinned in scripts/peers/package.json), run by `tests/auth/authorization-server.mjs` — for an
//! upstream sake server that takes only its tokens (JWT access tokens whose audience is the
//! upstream), behind a gateway that takes tokens of the same provider for itself. The upstream
//! records the `Authorization` header of every MCP request it gets: it sees the gateway's
//! token, never the caller's (the spec forbids token passthrough).
//!
//! Node and oidc-provider come from `$SAKE_NODE` / `$SAKE_NODE_MODULES` (`scripts/test.sh`
//! exports them). Without them this test fails: it never passes unrun. Needs
//! `--features client,auth`.

mod oidc;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use oidc::AuthorizationServer;
use sake::Server;
use sake::client::auth::{
    MemoryStore, OAuth, RegisteredClient, TokenEndpointAuth, TokenStore, Tokens,
};
use sake::client::{Client, ClientError};
use sake::compose::Upstream;
use sake::prelude::*;
use sake_runtime::auth::{Authorization, Principal};
use serde_json::json;

mod gateway;
use gateway::{empty, tool_names};

/// Who called, as the verified token says: its subject and client.
#[tool]
fn whoami(principal: Principal) -> String {
    format!(
        "{} of {}",
        principal.subject(),
        principal.client_id().unwrap_or("no client")
    )
}

/// What a protected server saw: each MCP request's `Authorization` header and the status it
/// answered.
type Seen = Arc<Mutex<Vec<(Option<String>, u16)>>>;

/// A sake server at `/mcp` that takes tokens of `issuer` for itself (audience: its URL), with
/// `server`'s definitions; its URL and what it saw.
async fn protected(server: Server, issuer: &str) -> (String, Seen) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let service = server
        .quiet(true)
        .authorization(
            Authorization::jwt(&url, issuer)
                .unwrap()
                .scopes_supported(["mcp:tools"])
                .challenge_scopes(["mcp:tools"]),
        )
        .build()
        .unwrap();
    let seen: Seen = Arc::default();
    let log = Arc::clone(&seen);
    let app = service.router().layer(axum::middleware::from_fn(
        move |req: axum::extract::Request, next: axum::middleware::Next| {
            let log = Arc::clone(&log);
            async move {
                let mcp = req.uri().path() == "/mcp";
                let auth = req
                    .headers()
                    .get(http::header::AUTHORIZATION)
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
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, seen)
}

/// The gateway's OAuth client for an upstream: the client credentials grant as `id`.
fn credentials(id: &str, secret: &str, method: TokenEndpointAuth) -> OAuth {
    OAuth::client_credentials(RegisteredClient::with_secret(id, secret).auth_method(method))
        .scopes(["mcp:tools"])
        .build()
        .unwrap()
}

fn caller_oauth() -> OAuth {
    OAuth::client_credentials(RegisteredClient::with_secret(
        "sake-confidential",
        "sake-confidential-secret",
    ))
    .build()
    .unwrap()
}

async fn call(client: &Client, tool: &str) -> Result<String, ClientError> {
    let r = client.call_tool(tool, json!({})).await?;
    Ok(r.content
        .first()
        .and_then(|c| c.as_text())
        .unwrap_or_default()
        .to_owned())
}

/// The bearer tokens a server saw, and the statuses it answered them, in order.
fn bearers(seen: &Seen) -> Vec<(Option<String>, u16)> {
    seen.lock()
        .unwrap()
        .iter()
        .map(|(a, s)| {
            (
                a.as_deref()
                    .map(|a| a.strip_prefix("Bearer ").unwrap_or(a).to_owned()),
                *s,
            )
        })
        .collect()
}

/// The gateway calls the upstream with a token of its own client (basic and post client
/// authentication), for the upstream, obtained once and reused; the caller's token (for the
/// gateway) never reaches the upstream.
#[tokio::test]
async fn the_upstream_gets_the_gateways_own_token_never_the_callers() {
    let server = AuthorizationServer::start(&[]);
    let (up, seen) = protected(Server::from_registry(), &server.issuer).await;
    let (gw, _) = protected(
        empty()
            .proxy(
                "basic",
                Upstream::url(&up).auth(credentials(
                    "sake-confidential",
                    "sake-confidential-secret",
                    TokenEndpointAuth::ClientSecretBasic,
                )),
            )
            .proxy(
                "post",
                Upstream::url(&up).auth(credentials(
                    "sake-post",
                    "sake-post-secret",
                    TokenEndpointAuth::ClientSecretPost,
                )),
            ),
        &server.issuer,
    )
    .await;
    // The caller signs in to the gateway (its own token, for the gateway).
    let oauth = caller_oauth();
    let client = Client::builder()
        .auth(oauth.clone())
        .connect(&gw)
        .await
        .unwrap();
    for _ in 0..3 {
        assert_eq!(
            call(&client, "basic_whoami").await.unwrap(),
            "sake-confidential of sake-confidential"
        );
        assert_eq!(
            call(&client, "post_whoami").await.unwrap(),
            "sake-post of sake-post"
        );
    }
    let callers = oauth.tokens(&gw).await.unwrap().unwrap();
    let callers = callers.access_token.expose();
    assert_eq!(oidc::claims(callers)["aud"], json!(gw));

    let seen = bearers(&seen);
    // Each upstream connection's first request goes without a token and is challenged;
    // every other carries one of the gateway's two tokens, for the upstream, and is served.
    let mut tokens: Vec<String> = Vec::new();
    let mut challenged = 0;
    for (token, status) in &seen {
        let Some(token) = token else {
            assert_eq!(*status, 401, "{seen:?}");
            challenged += 1;
            continue;
        };
        assert_ne!(token, callers, "the caller's token reached the upstream");
        assert!(*status < 300, "{status}: {seen:?}");
        let claims = oidc::claims(token);
        assert_eq!(claims["aud"], json!(up), "{claims}");
        assert_eq!(claims["iss"], json!(server.issuer), "{claims}");
        assert!(
            ["sake-confidential", "sake-post"].contains(&claims["client_id"].as_str().unwrap()),
            "{claims}"
        );
        if !tokens.contains(token) {
            tokens.push(token.clone());
        }
    }
    assert_eq!(challenged, 2, "{seen:?}");
    // One token per upstream, kept for every call.
    assert_eq!(tokens.len(), 2, "{seen:?}");
}

/// A token about to expire is renewed before it is sent (sake-short's live 2 s: renewed at
/// half their life), never refused; a token the upstream refuses is replaced once, and the
/// call goes through.
#[tokio::test]
async fn the_gateways_token_is_renewed_before_it_expires_and_once_when_refused() {
    let server = AuthorizationServer::start(&[]);
    let (up, seen) = protected(Server::from_registry(), &server.issuer).await;
    let short = credentials(
        "sake-short",
        "sake-short-secret",
        TokenEndpointAuth::ClientSecretBasic,
    );
    // A token the upstream does not take, held from before (e.g. revoked since).
    let store = MemoryStore::new();
    let stale: Tokens = serde_json::from_value(json!({
        "access_token": "stale-token",
        "token_type": "Bearer",
        "issuer": server.issuer,
        "resource": up,
        "requested_scopes": ["mcp:tools"],
        "scopes": ["mcp:tools"],
    }))
    .unwrap();
    store.save_tokens(&up, &stale).await.unwrap();
    let refused = OAuth::client_credentials(
        RegisteredClient::with_secret("sake-post", "sake-post-secret")
            .auth_method(TokenEndpointAuth::ClientSecretPost),
    )
    .store(store)
    .build()
    .unwrap();
    let gw = {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let service = empty()
            .proxy("short", Upstream::url(&up).auth(short))
            .proxy("refused", Upstream::url(&up).auth(refused))
            .quiet(true)
            .build()
            .unwrap();
        tokio::spawn(service.serve(listener, std::future::pending()));
        url
    };
    let client = Client::connect(&gw).await.unwrap();

    assert_eq!(
        call(&client, "short_whoami").await.unwrap(),
        "sake-short of sake-short"
    );
    let first = bearers(&seen);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(
        call(&client, "short_whoami").await.unwrap(),
        "sake-short of sake-short"
    );
    let all = bearers(&seen);
    let later = &all[first.len()..];
    // Renewed before it was sent: a new token, and no refusal.
    assert!(!later.is_empty());
    let held: Vec<&str> = first.iter().filter_map(|(t, _)| t.as_deref()).collect();
    for (token, status) in later {
        let token = token.as_deref().expect("a token");
        assert!(*status < 300, "{status}: {later:?}");
        assert!(!held.contains(&token), "the expired token was sent again");
        assert_eq!(oidc::claims(token)["client_id"], json!("sake-short"));
    }

    // The stale token: sent, refused with 401, replaced once; the call succeeds.
    let before = bearers(&seen).len();
    assert_eq!(
        call(&client, "refused_whoami").await.unwrap(),
        "sake-post of sake-post"
    );
    let after = bearers(&seen);
    let refusals: Vec<_> = after[before..]
        .iter()
        .filter(|(_, status)| *status == 401)
        .collect();
    assert_eq!(
        refusals,
        [&(Some("stale-token".to_owned()), 401)],
        "{:?}",
        &after[before..]
    );
    let renewed: Vec<_> = after[before..]
        .iter()
        .filter(|(t, _)| t.as_deref() != Some("stale-token"))
        .collect();
    assert!(
        renewed.iter().all(|(t, s)| *s < 300 && t.is_some()),
        "{renewed:?}"
    );
    assert!(
        renewed.iter().any(|(t, _)| t
            .as_deref()
            .is_some_and(|t| oidc::claims(t)["client_id"] == json!("sake-post"))),
        "{renewed:?}"
    );
}

/// Credentials the authorization server refuses cost only that upstream's tools: they
/// answer -32603 with the token endpoint's reason (never the secret), its tools are left out
/// of the list, and the other upstream answers.
#[tokio::test]
async fn refused_credentials_cost_only_their_upstreams_tools() {
    let server = AuthorizationServer::start(&[]);
    let (up, _) = protected(Server::from_registry(), &server.issuer).await;
    let gw = {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let service = empty()
            .proxy(
                "bad",
                Upstream::url(&up).auth(credentials(
                    "sake-confidential",
                    "wrong-secret-123",
                    TokenEndpointAuth::ClientSecretBasic,
                )),
            )
            .proxy(
                "good",
                Upstream::url(&up).auth(credentials(
                    "sake-post",
                    "sake-post-secret",
                    TokenEndpointAuth::ClientSecretPost,
                )),
            )
            .quiet(true)
            .build()
            .unwrap();
        tokio::spawn(service.serve(listener, std::future::pending()));
        url
    };
    let client = Client::connect(&gw).await.unwrap();
    match call(&client, "bad_whoami").await.unwrap_err() {
        ClientError::Rpc { error, .. } => {
            assert_eq!(error.code, -32603);
            assert!(
                error
                    .message
                    .starts_with("The upstream server `bad` is unavailable: "),
                "{}",
                error.message
            );
            assert!(
                error.message.contains("invalid_client"),
                "{}",
                error.message
            );
            assert!(
                !error.message.contains("wrong-secret-123"),
                "{}",
                error.message
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        call(&client, "good_whoami").await.unwrap(),
        "sake-post of sake-post"
    );
    let names = tool_names(&client).await;
    assert_eq!(names, ["good_ping", "good_whoami"], "{names:?}");
}

/// Answers.
#[tool]
fn ping() -> String {
    "pong".to_owned()
}

/// A hostile authorization server on 127.0.0.1 (what oidc-provider cannot be made to do): its
/// metadata is in order, and its token endpoint answers `body` bytes of JSON (`Some`), or
/// never answers (`None`). Its issuer.
async fn hostile_authorization_server(body: Option<usize>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://{}", listener.local_addr().unwrap());
    let metadata = json!({
        "issuer": issuer,
        "token_endpoint": format!("{issuer}/token"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["client_credentials"],
        "token_endpoint_auth_methods_supported": ["client_secret_basic"],
    })
    .to_string();
    let app = axum::Router::new()
        .route(
            "/.well-known/oauth-authorization-server",
            axum::routing::get(move || {
                let metadata = metadata.clone();
                async move { ([(http::header::CONTENT_TYPE, "application/json")], metadata) }
            }),
        )
        .route(
            "/token",
            axum::routing::post(move || async move {
                match body {
                    Some(n) => {
                        let padding = "x".repeat(n);
                        (
                            [(http::header::CONTENT_TYPE, "application/json")],
                            format!(
                                r#"{{"access_token":"t","token_type":"Bearer","pad":"{padding}"}}"#
                            ),
                        )
                    }
                    None => std::future::pending().await,
                }
            }),
        );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    issuer
}

/// A token endpoint that answers too much or never is cut off (1 MiB; the OAuth client's
/// timeout, here 1 s): that upstream's calls answer -32603 saying so, while another
/// upstream's calls go on meanwhile.
#[tokio::test]
async fn a_hostile_token_endpoint_costs_only_its_upstreams_tools() {
    let big = hostile_authorization_server(Some(5 << 20)).await;
    let slow = hostile_authorization_server(None).await;
    let (up_big, _) = protected(Server::from_registry(), &big).await;
    let (up_slow, _) = protected(Server::from_registry(), &slow).await;
    // Another upstream, with a well-behaved authorization server.
    let server = AuthorizationServer::start(&[]);
    let (open, _) = protected(Server::from_registry(), &server.issuer).await;
    let oauth = || {
        OAuth::client_credentials(RegisteredClient::with_secret("gateway", "gateway-secret"))
            .timeout(Duration::from_secs(1))
            .build()
            .unwrap()
    };
    let gw = {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let service = empty()
            .proxy("big", Upstream::url(&up_big).auth(oauth()))
            .proxy("slow", Upstream::url(&up_slow).auth(oauth()))
            .proxy(
                "open",
                Upstream::url(&open).auth(credentials(
                    "sake-post",
                    "sake-post-secret",
                    TokenEndpointAuth::ClientSecretPost,
                )),
            )
            .quiet(true)
            .build()
            .unwrap();
        tokio::spawn(service.serve(listener, std::future::pending()));
        url
    };
    let client = Client::connect(&gw).await.unwrap();
    let waiting = {
        let client = client.clone();
        tokio::spawn(async move { call(&client, "slow_ping").await })
    };
    assert_eq!(call(&client, "open_ping").await.unwrap(), "pong");
    let unavailable = |e: ClientError, prefix: &str| match e {
        ClientError::Rpc { error, .. } => {
            assert_eq!(error.code, -32603);
            assert!(
                error
                    .message
                    .starts_with(&format!("The upstream server `{prefix}` is unavailable: ")),
                "{}",
                error.message
            );
            error.message
        }
        other => panic!("{other:?}"),
    };
    let message = unavailable(call(&client, "big_ping").await.unwrap_err(), "big");
    assert!(
        message.contains(&format!(
            "the answer of {big}/token is longer than 1048576 bytes"
        )),
        "{message}"
    );
    let message = unavailable(waiting.await.unwrap().unwrap_err(), "slow");
    assert!(
        message.contains(&format!(
            "{slow}/token is unreachable: no complete answer within 1s"
        )),
        "{message}"
    );
    assert_eq!(call(&client, "open_ping").await.unwrap(), "pong");
}
