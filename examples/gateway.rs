//! A gateway: one MCP endpoint in front of other MCP servers, of either era, for clients of
//! every revision (docs/composition.md).
//!
//! ```text
//! UPSTREAM=http://127.0.0.1:3001/mcp PORT=3000 cargo run --features client --example gateway
//! UPSTREAM_CMD="node server.js" PORT=3000 cargo run --features client --example gateway
//! UPSTREAMS=weather=http://127.0.0.1:3001/mcp,files=http://127.0.0.1:3002/mcp cargo run …
//! ```
//!
//! - `UPSTREAM` (a URL) or `UPSTREAM_CMD` (a stdio server's command line, split at whitespace):
//!   served transparently, under the same names, with the same results;
//! - `UPSTREAMS=name=URL,name2=URL2`: several, each under its name as prefix (`name_tool`);
//! - `UPSTREAM_REVISION` (optional): the revision spoken to the upstreams (`2026-07-28`,
//!   `2025-11-25`, …; by default discovery first, then the handshake), so that both directions
//!   of the era bridge can be tried against one dual-era server;
//! - `UPSTREAM_AUTHORIZATION` (optional): the `Authorization` header sent to the upstreams —
//!   the gateway's own credential, never a client's token;
//! - `UPSTREAM_CLIENT_ID`, `UPSTREAM_CLIENT_SECRET` (optional, together): the gateway signs in
//!   to the upstreams with the OAuth client credentials grant as this client (found through
//!   each upstream's protected resource metadata; `UPSTREAM_SCOPES`, space-separated, are the
//!   scopes asked for), its token renewed before it expires — again never a client's token;
//! - `PORT` (3000), `HOST` (127.0.0.1).

use sake::compose::Upstream;
use sake::{Registry, Revision, Server};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let port = std::env::var("PORT").unwrap_or_else(|_| "3000".to_owned());
    let host = std::env::var("HOST").unwrap_or_else(|_| "127.0.0.1".to_owned());
    let addr = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    let revision = match std::env::var("UPSTREAM_REVISION") {
        Ok(r) if !r.is_empty() => Some(
            Revision::parse(&r)
                .ok_or_else(|| format!("UPSTREAM_REVISION={r} is no revision sake speaks"))?,
        ),
        _ => None,
    };
    let authorization = std::env::var("UPSTREAM_AUTHORIZATION").ok();
    // One OAuth client for all the upstreams (it keeps a token per upstream).
    let oauth = match (
        std::env::var("UPSTREAM_CLIENT_ID"),
        std::env::var("UPSTREAM_CLIENT_SECRET"),
    ) {
        (Ok(id), Ok(secret)) => {
            use sake::client::auth::{OAuth, RegisteredClient};
            let scopes = std::env::var("UPSTREAM_SCOPES").unwrap_or_default();
            let mut builder = OAuth::client_credentials(RegisteredClient::with_secret(id, secret));
            if !scopes.trim().is_empty() {
                builder = builder.scopes(scopes.split_whitespace());
            }
            Some(builder.build()?)
        }
        _ => None,
    };
    let configure = |mut upstream: Upstream| -> Result<Upstream, Box<dyn std::error::Error>> {
        if let Some(rev) = revision {
            upstream = upstream.revision(rev);
        }
        if let Some(value) = &authorization {
            let mut value = axum::http::HeaderValue::from_str(value)?;
            value.set_sensitive(true);
            upstream = upstream.header(axum::http::header::AUTHORIZATION, value);
        }
        if let Some(oauth) = &oauth {
            upstream = upstream.auth(oauth.clone());
        }
        Ok(upstream)
    };
    // A gateway has no functions of its own.
    let mut server = Server::with_registry(Registry::from_defs([], [], [])?)
        .name("sake-gateway")
        .version(env!("CARGO_PKG_VERSION"));
    let mut any = false;
    if let Ok(url) = std::env::var("UPSTREAM") {
        server = server.proxy("", configure(Upstream::url(url))?);
        any = true;
    }
    if let Ok(line) = std::env::var("UPSTREAM_CMD") {
        let upstream = Upstream::command_line(&line).ok_or("UPSTREAM_CMD is empty")?;
        server = server.proxy("", configure(upstream)?);
        any = true;
    }
    if let Ok(list) = std::env::var("UPSTREAMS") {
        for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let (name, url) = entry
                .split_once('=')
                .ok_or_else(|| format!("UPSTREAMS: `{entry}` is not name=URL"))?;
            server = server.proxy(name, configure(Upstream::url(url))?);
            any = true;
        }
    }
    if !any {
        return Err(
            "set UPSTREAM (a URL), UPSTREAM_CMD (a command line) or UPSTREAMS (name=URL,…)".into(),
        );
    }
    server
        .serve_http_with_shutdown(addr, async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
