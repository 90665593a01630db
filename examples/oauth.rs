//! A protected MCP server: an OAuth 2.1 resource server in front of three tools.
//!
//! ```sh
//! AUTH_ISSUER=https://auth.example.com cargo run --example oauth --features auth
//! ```
//!
//! It serves `http://127.0.0.1:$PORT/mcp` (port 3000 by default) and trusts JWT access tokens
//! of the issuer `AUTH_ISSUER` whose audience is its canonical resource URI: that URL, or
//! `PUBLIC_URL` when set (behind a proxy). Without a token every request gets `401` with a
//! challenge that names the protected resource metadata
//! (`/.well-known/oauth-protected-resource/mcp`), which names the issuer: an MCP client signs
//! in there and comes back. docs/authorization.md walks through it with a real authorization
//! server.

use sake::auth::{Authorization, Principal};
use sake::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Who the caller is.
#[derive(Serialize, JsonSchema)]
struct Who {
    /// The subject of the caller's token.
    subject: String,
}

/// Says who you are, as the server verified you.
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

/// The form `confirm_action` asks the user to fill in.
#[derive(Deserialize, JsonSchema)]
struct Confirmation {
    /// Whether to go ahead.
    confirm: bool,
}

/// Does something after the user confirms it.
#[tool]
async fn confirm_action(
    /// What to do.
    action: String,
    principal: Principal,
    ctx: Context,
) -> Result<String, String> {
    let question = format!("{}, do you want to {action}?", principal.subject());
    match ctx.elicit::<Confirmation>("confirm", &question).await {
        Ok(Elicitation::Accepted(Confirmation { confirm: true })) => Ok(format!("Done: {action}.")),
        Ok(Elicitation::Accepted(_)) | Ok(Elicitation::Declined) => {
            Ok(format!("Not done: {action}."))
        }
        Ok(Elicitation::Cancelled) => Ok(format!("Cancelled: {action}.")),
        Err(e) => Err(format!("could not ask for confirmation: {e}")),
    }
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
    let issuer = std::env::var("AUTH_ISSUER")
        .map_err(|_| "set AUTH_ISSUER to the issuer URL of your authorization server")?;
    let resource = std::env::var("PUBLIC_URL")
        .map(|u| format!("{}/mcp", u.trim_end_matches('/')))
        .unwrap_or_else(|_| format!("http://127.0.0.1:{port}/mcp"));
    let mut server = Server::from_registry()
        .name("oauth-example")
        .version(env!("CARGO_PKG_VERSION"))
        .authorization(
            Authorization::jwt(&resource, &issuer)?
                .scopes_supported(["mcp:tools", "admin"])
                .challenge_scopes(["mcp:tools"])
                .resource_name("sake OAuth example"),
        );
    if let Some(host) = public_host(&resource) {
        server = server.allowed_hosts(["localhost", "127.0.0.1", host.as_str()]);
    }
    server
        .serve_http_with_shutdown(format!("127.0.0.1:{port}"), async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}

/// The host of a public resource URI that is not loopback.
fn public_host(resource: &str) -> Option<String> {
    let rest = resource.split_once("://")?.1;
    let authority = rest.split('/').next()?;
    let host = authority.rsplit_once(':').map_or(authority, |(h, _)| h);
    (!matches!(host, "127.0.0.1" | "localhost" | "[::1]")).then(|| host.to_owned())
}
