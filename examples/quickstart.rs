//! A few tools, a prompt and two resources: `cargo run --example quickstart`, then point an
//! MCP client at http://127.0.0.1:3000/mcp (set PORT to change the port).

use std::time::Duration;

use sake::prelude::*;
use schemars::JsonSchema;
use serde::Serialize;

/// The sum of two numbers.
#[derive(Serialize, JsonSchema)]
struct Sum {
    /// `a + b`.
    sum: i64,
}

/// Adds two numbers.
#[tool(annotations(read_only, idempotent))]
async fn add(
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
) -> Sum {
    Sum { sum: a + b }
}

/// Greets someone by name.
#[tool(title = "Greeter")]
fn greet(
    /// Who to greet.
    name: String,
    /// Shout the greeting.
    shout: Option<bool>,
) -> String {
    let greeting = format!("Hello, {name}!");
    if shout.unwrap_or(false) {
        greeting.to_uppercase()
    } else {
        greeting
    }
}

/// Counts to `to`, one step every 100 ms, reporting progress when the client asks for it.
#[tool]
async fn count(
    /// Where to stop (at most 50).
    to: u32,
    ctx: Context,
) -> Result<String, String> {
    if to > 50 {
        return Err(format!("{to} is too far: count to 50 at most"));
    }
    for i in 1..=to {
        tokio::time::sleep(Duration::from_millis(100)).await;
        ctx.progress_message(f64::from(i), Some(f64::from(to)), format!("{i} of {to}"))
            .await;
    }
    Ok(format!("Counted to {to}."))
}

/// Asks the model to review a piece of code.
#[prompt]
fn review(
    /// The code to review.
    code: String,
    /// Its language, if not obvious.
    language: Option<String>,
) -> Vec<PromptMessage> {
    let language = language.unwrap_or_else(|| "the code".to_owned());
    vec![PromptMessage::user(format!(
        "Review this {language} for bugs and style:\n\n{code}"
    ))]
}

/// What this server is.
#[resource(uri = "docs://about", mime_type = "text/plain")]
fn about() -> &'static str {
    "A sake quickstart server: tools add, greet and count; prompt review; resources about and users."
}

/// A user's profile, by numeric id (users 1 to 3 exist).
#[resource(uri = "users://{id}/profile", mime_type = "application/json")]
async fn profile(id: u64) -> Result<String, ResourceError> {
    let name = match id {
        1 => "Ada",
        2 => "Grace",
        3 => "Barbara",
        _ => return Err(ResourceError::NotFound(format!("users://{id}/profile"))),
    };
    Ok(serde_json::json!({ "id": id, "name": name }).to_string())
}

#[tokio::main]
async fn main() -> Result<(), sake::Error> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let port = std::env::var("PORT").unwrap_or_else(|_| "3000".to_owned());
    Server::from_registry()
        .name("quickstart")
        .version(env!("CARGO_PKG_VERSION"))
        .instructions("Use `add` for sums, `greet` for greetings, `count` to watch progress.")
        .serve_http(format!("127.0.0.1:{port}"))
        .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use sake::Revision;
    use sake::testing::TestClient;
    use serde_json::json;

    #[tokio::test]
    async fn the_functions_stay_plain_functions() {
        assert_eq!(add(2, 3).await.sum, 5);
        assert_eq!(greet("Ada".into(), Some(true)), "HELLO, ADA!");
    }

    #[tokio::test]
    async fn add_through_the_dispatcher() {
        let client = TestClient::new(Server::from_registry()).unwrap();
        let result = client
            .call_tool("add", json!({"a": 2, "b": 3}))
            .await
            .unwrap();
        assert_eq!(result["structuredContent"], json!({"sum": 5}));
        assert_eq!(
            result["content"],
            json!([{"type": "text", "text": "{\"sum\":5}"}])
        );
    }

    #[test]
    fn the_schemas_are_what_clients_see() {
        let tools = sake::testing::tools(Revision::V2026_07_28).unwrap();
        let add = tools
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == "add")
            .unwrap();
        assert_eq!(
            add["inputSchema"],
            json!({
                "type": "object",
                "properties": {
                    "a": {"type": "integer", "description": "The first addend."},
                    "b": {"type": "integer", "description": "The second addend."}
                },
                "required": ["a", "b"]
            })
        );
    }
}
