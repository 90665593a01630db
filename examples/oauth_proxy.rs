//! An MCP server that signs its users in with an identity provider that lets no client
//! register itself (Entra ID, Google, GitHub, most Okta and Auth0 tenants): sake serves the
//! authorization server MCP clients see, on the server's own origin, and sends each user to
//! the upstream provider through one pre-registered confidential client.
//!
//! ```sh
//! UPSTREAM_ISSUER=https://idp.example.com UPSTREAM_CLIENT_ID=… UPSTREAM_CLIENT_SECRET=… \
//!   cargo run --example oauth_proxy --features auth-proxy
//! ```
//!
//! It serves `http://127.0.0.1:$PORT/mcp` (port 3000 by default) and, on the same origin, the
//! authorization server: metadata at `/.well-known/oauth-authorization-server`, registration,
//! authorization with its own consent page, and tokens under `/oauth/`. The upstream is an
//! OpenID provider found at `$UPSTREAM_ISSUER/.well-known/openid-configuration`, where the
//! client `UPSTREAM_CLIENT_ID` is registered with the redirect URI
//! `http://127.0.0.1:$PORT/oauth/callback` (`$PUBLIC_URL/oauth/callback` behind a proxy).
//! `ALLOW_HTTP_CLIENT_METADATA=1` accepts client ID metadata documents served over plain http
//! from a loopback address (tests only).
//!
//! Replicas: run several with the same `PUBLIC_URL`, the same `PROXY_SECRET` (32 bytes or more;
//! it derives the token signing key and registered clients' ids), the same `SAKE_SESSION_KEY`,
//! the same upstream client, and `REDIS_URL` naming one Redis (build with
//! `--features auth-proxy,redis`): a sign-in begun on one then finishes on any other.
//!
//! Tools: `whoami` answers `{"subject": …}`, the user the upstream provider signed in;
//! `admin_report` needs the `admin` scope (a client steps up to it). Every user may receive
//! `mcp:tools`; only the upstream subjects named in `ADMIN_SUBJECTS` (comma-separated) may
//! receive `admin`: unset, nobody may, and a client asking for it gets a token without it.

use sake::auth::Principal;
use sake::auth::proxy::{AuthProxy, AuthProxyBuilder, Upstream, Users};
use sake::prelude::*;
use schemars::JsonSchema;
use serde::Serialize;

/// Who the caller is.
#[derive(Serialize, JsonSchema)]
struct Who {
    /// The subject the upstream identity provider gave the user.
    subject: String,
}

/// Says who you are, as the upstream identity provider signed you in.
#[tool(annotations(read_only))]
fn whoami(principal: Principal) -> Who {
    Who {
        subject: principal.subject().to_owned(),
    }
}

/// A report only administrators may read.
#[tool(scopes("admin"), annotations(read_only))]
fn admin_report(principal: Principal) -> String {
    format!("Report for {}: 3 servers up, 0 down.", principal.subject())
}

fn env(name: &str) -> Result<String, String> {
    std::env::var(name).map_err(|_| format!("set {name} (see the top of examples/oauth_proxy.rs)"))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "info,sake=info".into()),
        )
        .init();
    let port: u16 = std::env::var("PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(3000);
    let public = std::env::var("PUBLIC_URL")
        .map(|u| u.trim_end_matches('/').to_owned())
        .unwrap_or_else(|_| format!("http://127.0.0.1:{port}"));
    let upstream = Upstream::oidc(
        env("UPSTREAM_ISSUER")?,
        env("UPSTREAM_CLIENT_ID")?,
        env("UPSTREAM_CLIENT_SECRET")?,
    );
    let mut proxy = AuthProxy::builder(&public, "/mcp", upstream)
        .scopes_supported(["mcp:tools", "admin"])
        .default_scopes(["mcp:tools"])
        .grant_scope("admin", Users::new().subjects(admin_subjects()))
        .resource_name("sake authorization proxy example")
        .allow_http_client_metadata(
            std::env::var("ALLOW_HTTP_CLIENT_METADATA").as_deref() == Ok("1"),
        );
    if let Ok(secret) = std::env::var("PROXY_SECRET") {
        proxy = proxy.secret(secret);
    }
    if let Ok(url) = std::env::var("REDIS_URL") {
        proxy = shared_store(proxy, &url)?;
    }
    let proxy = proxy.build()?;
    tracing::info!(callback = %proxy.callback_url(), "register this redirect URI with the upstream client");
    let mut server = Server::from_registry()
        .name("oauth-proxy")
        .version(env!("CARGO_PKG_VERSION"))
        .authorization(proxy.authorization().challenge_scopes(["mcp:tools"]));
    if let Some(host) = public_host(&public) {
        server = server.allowed_hosts(["localhost", "127.0.0.1", host.as_str()]);
    }
    server
        .serve_http_with_shutdown(format!("127.0.0.1:{port}"), async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}

/// The upstream subjects that may receive `admin`: `ADMIN_SUBJECTS`, comma-separated.
fn admin_subjects() -> Vec<String> {
    std::env::var("ADMIN_SUBJECTS")
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The store replicas share: Redis.
#[cfg(feature = "redis")]
fn shared_store(proxy: AuthProxyBuilder, url: &str) -> Result<AuthProxyBuilder, String> {
    let store = sake::redis::RedisProxyStore::new(url).map_err(|e| e.to_string())?;
    Ok(proxy.store(store))
}

#[cfg(not(feature = "redis"))]
fn shared_store(_: AuthProxyBuilder, _: &str) -> Result<AuthProxyBuilder, String> {
    Err("REDIS_URL is set: build the example with --features auth-proxy,redis".into())
}

/// The host of a public URL that is not loopback.
fn public_host(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split('/').next()?;
    let host = authority.rsplit_once(':').map_or(authority, |(h, _)| h);
    (!matches!(host, "127.0.0.1" | "localhost" | "[::1]")).then(|| host.to_owned())
}
