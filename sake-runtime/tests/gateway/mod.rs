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
