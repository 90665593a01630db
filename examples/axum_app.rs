//! sake inside an existing axum application: `cargo run --example axum_app`.
//!
//! The app has its own routes; the MCP endpoint is mounted at `/api/mcp` behind a bearer-token
//! layer that answers 401 with `WWW-Authenticate` and hands the caller's principal to the
//! tools through the request's extensions. Try:
//!
//! ```sh
//! curl -i localhost:3000/api/mcp -X POST -H 'Content-Type: application/json' -d '{}'   # 401
//! curl -s localhost:3000/api/mcp -H 'Authorization: Bearer alice-token' ...            # served
//! ```

use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use sake::prelude::*;

/// Who is calling, as established by the authentication layer.
#[derive(Clone, Debug)]
struct Principal(String);

/// Says who you are, as the server authenticated you.
#[tool(annotations(read_only))]
fn whoami(ctx: Context) -> Result<String, String> {
    match ctx.extensions().get::<Principal>() {
        Some(Principal(name)) => Ok(format!("You are {name}.")),
        None => Err("no principal: this tool runs behind the bearer-token layer".into()),
    }
}

/// The demo's tokens. A real application checks a token against its identity provider.
fn principal_for(token: &str) -> Option<Principal> {
    match token {
        "alice-token" => Some(Principal("alice".into())),
        "bob-token" => Some(Principal("bob".into())),
        _ => None,
    }
}

/// A bearer-token layer: 401 with `WWW-Authenticate` without a valid token, otherwise the
/// principal goes into the request's extensions, where `Context::extensions` finds it.
async fn bearer_auth(mut request: Request, next: Next) -> Response {
    let token = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    match token.and_then(principal_for) {
        Some(principal) => {
            request.extensions_mut().insert(principal);
            next.run(request).await
        }
        None => {
            let mut resp = (StatusCode::UNAUTHORIZED, "a bearer token is required").into_response();
            resp.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static(r#"Bearer realm="sake-demo", error="invalid_token""#),
            );
            resp
        }
    }
}

/// The application: its own routes, and MCP under `/api/mcp`; and the MCP service, to shut
/// its long-lived streams down with the application.
fn app() -> Result<(Router, sake::Service), sake::Error> {
    let service = Server::from_registry()
        .name("axum-app")
        .version(env!("CARGO_PKG_VERSION"))
        .path("/api/mcp")
        .build()?;
    let mcp = service.router().layer(middleware::from_fn(bearer_auth));
    let app = Router::new()
        .route("/", get(|| async { "the application's home page" }))
        .route("/health", get(|| async { "ok" }))
        .merge(mcp);
    Ok((app, service))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let port = std::env::var("PORT").unwrap_or_else(|_| "3000".to_owned());
    let listener = tokio::net::TcpListener::bind(format!("127.0.0.1:{port}")).await?;
    let (app, service) = app()?;
    // The application serves the router itself: it greets once it listens (where MCP is,
    // what it lists, how to connect; `SAKE_QUIET=1` hides it).
    service.greet(listener.local_addr()?);
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            let _ = tokio::signal::ctrl_c().await;
            // Ends open `subscriptions/listen` and session GET streams, which would otherwise
            // keep the graceful shutdown waiting.
            service.shutdown();
        })
        .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower::ServiceExt;

    fn request(auth: Option<&str>) -> Request {
        let mut b = Request::builder()
            .method("POST")
            .uri("/api/mcp")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "whoami");
        if let Some(a) = auth {
            b = b.header("authorization", a);
        }
        b.body(axum::body::Body::from(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami",
               "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
                        "io.modelcontextprotocol/clientCapabilities":{}}}}"#,
        ))
        .unwrap()
    }

    async fn body(resp: Response) -> serde_json::Value {
        let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20)
            .await
            .unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    #[tokio::test]
    async fn without_a_token_the_layer_answers_401() {
        let resp = app().unwrap().0.oneshot(request(None)).await.unwrap();
        assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(
            resp.headers()[header::WWW_AUTHENTICATE],
            r#"Bearer realm="sake-demo", error="invalid_token""#
        );
    }

    #[tokio::test]
    async fn the_principal_reaches_the_tool() {
        let resp = app()
            .unwrap()
            .0
            .oneshot(request(Some("Bearer bob-token")))
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(
            body(resp).await["result"]["content"],
            serde_json::json!([{"type": "text", "text": "You are bob."}])
        );
    }

    #[tokio::test]
    async fn the_application_keeps_its_own_routes() {
        let resp = app()
            .unwrap()
            .0
            .oneshot(
                Request::get("/health")
                    .body(axum::body::Body::empty())
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
    }
}
