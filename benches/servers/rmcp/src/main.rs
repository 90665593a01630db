//! The same tools on rmcp 3.11 (the official Rust SDK) over its Streamable HTTP server, or
//! over stdio.
//!
//! Usage: `rmcp-server <port> <stateless|legacy> [1k]`, or `rmcp-server <stdio|stdio-pipes>`
//! - `stateless`: 2026-07-28 stateless mode, JSON responses (`json_response(true)`);
//! - `legacy`: `Mcp-Session-Id` sessions (requests inside a session are answered over SSE);
//! - `1k`: 1,000 tools instead of 20;
//! - `stdio`: newline-delimited JSON-RPC on stdin and stdout through `rmcp::transport::stdio()`
//!   (Tokio's blocking stdin and stdout); `stdio-pipes`: through `stdio_pipes()`, rmcp's
//!   non-blocking pipe transport (used when both streams are FIFOs, as here).
//!
//! Configuration as in notes/rmcp.md §2: the router is kept in a field (otherwise
//! `#[tool_handler]` rebuilds it on every request), TCP_NODELAY on accepted sockets.

use std::sync::Arc;
use std::time::Duration;

use axum::serve::ListenerExt as _;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{ProgressNotificationParam, ServerCapabilities, ServerConfig};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{RoleServer, ServerHandler, ServiceExt as _, schemars, tool, tool_handler, tool_router};
use serde::Deserialize;

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct AddArgs {
    /// The first addend.
    pub a: i64,
    /// The second addend.
    pub b: i64,
}

/// The arguments of every `lookup_NNNN` tool.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct LookupArgs {
    /// What to look for: words, or a quoted phrase.
    pub query: String,
    /// At most this many entries (default 10).
    pub limit: Option<u32>,
    /// Include each entry's details.
    pub verbose: Option<bool>,
}

#[derive(Clone)]
pub struct Bench {
    tool_router: ToolRouter<Bench>,
}

#[tool_router(router = core_router)]
impl Bench {
    #[tool(
        description = "Adds two integers.",
        annotations(read_only_hint = true, idempotent_hint = true)
    )]
    fn add(&self, Parameters(AddArgs { a, b }): Parameters<AddArgs>) -> String {
        (a + b).to_string()
    }

    #[tool(
        description = "Reports progress ten times (when the client sent a progress token), then answers."
    )]
    async fn progress(&self, ctx: RequestContext<RoleServer>) -> String {
        if let Some(token) = ctx.meta.get_progress_token() {
            for i in 1..=10 {
                let _ = ctx
                    .peer
                    .notify_progress(
                        ProgressNotificationParam::new(token.clone(), f64::from(i))
                            .with_total(10.0),
                    )
                    .await;
            }
        }
        "done".to_owned()
    }
}

include!(concat!(env!("OUT_DIR"), "/lookups_18.rs"));
include!(concat!(env!("OUT_DIR"), "/lookups_998.rs"));

impl Bench {
    fn new(big: bool) -> Self {
        let lookups = if big {
            Self::lookups_998()
        } else {
            Self::lookups_18()
        };
        Bench {
            tool_router: Self::core_router() + lookups,
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Bench {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let mut args = std::env::args().skip(1).peekable();
    if let Some(mode) = args.next_if(|a| a.starts_with("stdio")) {
        return stdio(&mode);
    }
    let port: u16 = args.next().and_then(|p| p.parse().ok()).unwrap_or(3000);
    let stateless = match args.next().as_deref() {
        Some("stateless") | None => true,
        Some("legacy") => false,
        Some(other) => {
            eprintln!(
                "usage: rmcp-server <port> <stateless|legacy> [1k] | <stdio|stdio-pipes> (not {other:?})"
            );
            std::process::exit(2);
        }
    };
    let big = args.next().as_deref() == Some("1k");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async move {
        // Build the handler once, before listening: the factory clones it per request/session.
        let handler = Bench::new(big);
        let app = if stateless {
            let config = StreamableHttpServerConfig::default()
                .with_legacy_session_mode(false)
                .with_json_response(true)
                .with_sse_keep_alive(None);
            let svc: StreamableHttpService<Bench, NeverSessionManager> = StreamableHttpService::new(
                move || Ok(handler.clone()),
                Arc::new(NeverSessionManager::default()),
                config,
            );
            axum::Router::new().nest_service("/mcp", svc)
        } else {
            let config = StreamableHttpServerConfig::default()
                .with_legacy_session_mode(true)
                .with_json_response(true)
                .with_sse_retry(None)
                .with_sse_keep_alive(Some(Duration::from_secs(15)));
            let mut sessions = LocalSessionManager::default();
            sessions.session_config.sse_retry = None;
            sessions.session_config.keep_alive = Some(Duration::from_secs(300));
            let svc: StreamableHttpService<Bench, LocalSessionManager> =
                StreamableHttpService::new(move || Ok(handler.clone()), Arc::new(sessions), config);
            axum::Router::new().nest_service("/mcp", svc)
        };
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .expect("bind")
            .tap_io(|tcp| {
                let _ = tcp.set_nodelay(true);
            });
        axum::serve(listener, app).await.expect("serve");
    });
}

/// Serves the 20 tools on stdin and stdout until stdin closes.
fn stdio(mode: &str) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let served = runtime.block_on(async move {
        let running = match mode {
            "stdio" => Bench::new(false).serve(rmcp::transport::stdio()).await,
            "stdio-pipes" => {
                Bench::new(false)
                    .serve(rmcp::transport::stdio_pipes())
                    .await
            }
            other => {
                eprintln!("usage: rmcp-server <stdio|stdio-pipes> (not {other:?})");
                std::process::exit(2);
            }
        };
        match running {
            Ok(running) => running
                .waiting()
                .await
                .map(|_| ())
                .map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        }
    });
    if let Err(e) = served {
        eprintln!("{e}");
        std::process::exit(1);
    }
}
