//! What the gateway's tests (`proxy*.rs`) share: a server served on a free port of this
//! machine, and a server of no definitions of its own (a gateway's start).

#![allow(dead_code)] // each test binary uses its own part

use sake::{Registry, Server};

/// `server` served on a free port of 127.0.0.1, quiet, for the test's life: its MCP URL.
pub async fn serve(server: Server) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let service = server.quiet(true).build().unwrap();
    tokio::spawn(service.serve(listener, std::future::pending()));
    format!("http://{addr}/mcp")
}

/// A server with no definitions of its own (what it serves is its upstreams').
pub fn empty() -> Server {
    Server::with_registry(Registry::from_defs([], [], []).unwrap()).quiet(true)
}

/// The names `client`'s server lists in `tools/list`, in its order.
pub async fn tool_names(client: &sake::client::Client) -> Vec<String> {
    client
        .list_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect()
}

/// A principal named by the `x-user` header (`named_gateway`).
#[derive(Clone)]
pub struct User(pub String);

/// A gateway of `upstream` under `prefix` that names its callers by their `x-user` header, as
/// an authorization layer would by their token: its MCP URL.
pub async fn named_gateway(prefix: &str, upstream: sake::compose::Upstream) -> String {
    let service = empty()
        .proxy(prefix, upstream)
        .principal(|ext| ext.get::<User>().map(|u| u.0.clone()))
        .quiet(true)
        .build()
        .unwrap();
    let app = service.router().layer(axum::middleware::from_fn(
        |mut req: axum::extract::Request, next: axum::middleware::Next| async move {
            let user = req
                .headers()
                .get("x-user")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            if let Some(u) = user {
                req.extensions_mut().insert(User(u));
            }
            next.run(req).await
        },
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}/mcp")
}
