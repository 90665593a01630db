//! Tool search and authorization: the search shows a caller only the tools whose scopes its
//! token grants — with the server's scope hierarchy — as `tools/list` would, and a found tool
//! is still refused to a caller without its scopes. On the wire (2026-07-28, Streamable HTTP),
//! tokens checked by a verifier of fixed tokens. Needs `--features auth`.

use std::time::Duration;

use sake::compose::ToolSearch;
use sake::prelude::*;
use sake_runtime::auth::{AuthError, Authorization, Principal, TokenVerifier, VerifyFuture};
use serde_json::{Value, json};

/// Opens the vault, for admins.
#[tool(scopes("admin"))]
fn vault_open() -> String {
    "opened".to_owned()
}

/// Reads the vault's files.
#[tool(scopes("files:read"))]
fn vault_read() -> String {
    "read".to_owned()
}

/// Tells what the vault holds, to anyone.
#[tool]
fn vault_about() -> String {
    "a vault".to_owned()
}

const ISSUER: &str = "https://as.example.com";

/// `alice` (mcp:tools), `carol` (files, which implies files:read), `root` (admin).
struct Tokens;

impl TokenVerifier for Tokens {
    fn verify<'a>(&'a self, token: &'a str) -> VerifyFuture<'a> {
        Box::pin(async move {
            let scopes: &[&str] = match token {
                "alice" => &["mcp:tools"],
                "carol" => &["mcp:tools", "files"],
                "root" => &["mcp:tools", "admin"],
                _ => {
                    return Err(AuthError::InvalidToken {
                        reason: "unknown token".into(),
                    });
                }
            };
            Ok(Principal::new(token)
                .with_issuer(ISSUER)
                .with_scopes(scopes.iter().copied()))
        })
    }
}

async fn serve() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let authorization = Authorization::new(&url, ISSUER, Tokens)
        .scope_implies(|granted, needed| needed.strip_suffix(":read") == Some(granted));
    let service = Server::from_registry()
        .authorization(authorization)
        .tool_search(ToolSearch::new())
        .build()
        .unwrap();
    tokio::spawn(service.serve(listener, std::future::pending()));
    url
}

/// A 2026-07-28 `tools/call` with `token`: the JSON-RPC response.
async fn call(url: &str, token: &str, tool: &str, args: Value) -> Value {
    use http_body_util::{BodyExt as _, Full};
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<Full<bytes::Bytes>>();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": tool, "arguments": args,
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}});
    let req = http::Request::post(url)
        .header("host", url.split('/').nth(2).unwrap_or_default())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", tool)
        .header("authorization", format!("Bearer {token}"))
        .body(Full::new(bytes::Bytes::from(body.to_string())))
        .unwrap();
    let resp = tokio::time::timeout(Duration::from_secs(10), client.request(req))
        .await
        .expect("answered in time")
        .unwrap();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    serde_json::from_slice(&bytes).unwrap()
}

async fn found(url: &str, token: &str) -> Vec<String> {
    let reply = call(url, token, "search_tools", json!({"query": "vault"})).await;
    reply["result"]["structuredContent"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn a_search_shows_only_the_tools_a_callers_scopes_grant() {
    let url = serve().await;
    assert_eq!(found(&url, "alice").await, ["vault_about"]);
    // `files` implies `files:read` (the server's hierarchy).
    assert_eq!(found(&url, "carol").await, ["vault_about", "vault_read"]);
    assert_eq!(found(&url, "root").await, ["vault_about", "vault_open"]);
    // Found or not, a tool is called only with its scopes.
    let refused = call(&url, "alice", "vault_open", json!({})).await;
    assert_eq!(
        refused,
        json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32000,
            "message": "Forbidden: tool `vault_open` needs the scopes admin; sign in again with them"}})
    );
    let called = call(&url, "root", "vault_open", json!({})).await;
    assert_eq!(
        called["result"]["content"],
        json!([{"type": "text", "text": "opened"}])
    );
}
