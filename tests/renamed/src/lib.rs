//! Every macro of sake under a renamed dependency: this crate's `Cargo.toml` says
//! `mcp = { package = "sake-mcp", … }`, so the facade is `mcp` here and there is no `sake`.

use mcp::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A greeting.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Greeting {
    /// The words.
    pub message: String,
}

/// Whom to greet, and how.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Whom {
    /// The name.
    pub name: String,
    /// Shout it.
    #[serde(default)]
    pub loud: bool,
}

/// The greeting view.
#[derive(Debug)]
#[view(uri = "ui://renamed/greeting", html = "greeting.html")]
pub struct GreetingView;

/// Greets someone.
#[tool(annotations(read_only), ui = GreetingView)]
pub async fn greet(
    /// Whom to greet.
    whom: Whom,
) -> Greeting {
    let message = format!("Hello, {}!", whom.name);
    Greeting {
        message: if whom.loud {
            message.to_uppercase()
        } else {
            message
        },
    }
}

/// Asks for a greeting.
#[prompt]
pub async fn ask(
    /// The name.
    name: String,
) -> String {
    format!("Please greet {name}.")
}

/// A note by its name.
#[resource(uri = "note://{name}", mime_type = "text/plain")]
pub async fn note(name: String) -> String {
    format!("note {name}")
}

mcp::skills!("../skills");

/// The server with everything above.
pub fn server() -> mcp::Server {
    mcp::Server::from_registry()
        .name("renamed")
        .version("0.1.0")
}

#[cfg(test)]
mod tests {
    use mcp::testing::TestClient;
    use serde_json::json;

    use super::*;

    #[tokio::test]
    async fn every_kind_answers_under_the_renamed_crate() {
        let client = TestClient::new(server()).unwrap();
        let result = client
            .call_tool("greet", json!({"whom": {"name": "Ada", "loud": true}}))
            .await
            .unwrap();
        assert_eq!(
            result["structuredContent"],
            json!({"message": "HELLO, ADA!"})
        );

        let prompt = client
            .get_prompt("ask", json!({"name": "Ada"}))
            .await
            .unwrap();
        assert_eq!(
            prompt["messages"],
            json!([{"role": "user", "content": {"type": "text", "text": "Please greet Ada."}}])
        );

        let read = client.read_resource("note://x").await.unwrap();
        assert_eq!(
            read["contents"],
            json!([{"uri": "note://x", "mimeType": "text/plain", "text": "note x"}])
        );

        let view = client.read_resource("ui://renamed/greeting").await.unwrap();
        assert_eq!(view["contents"][0]["uri"], json!("ui://renamed/greeting"));
        assert_eq!(
            view["contents"][0]["text"],
            json!(include_str!("greeting.html"))
        );

        let skill = client
            .read_resource("skill://hello/SKILL.md")
            .await
            .unwrap();
        assert_eq!(
            skill["contents"][0]["text"],
            json!(include_str!("../skills/hello/SKILL.md"))
        );
    }
}
