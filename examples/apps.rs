//! MCP Apps: a tool whose result a view renders, and a tool only that view calls.
//!
//! `cargo run --example apps` serves http://127.0.0.1:3000/mcp (set `PORT` to change the
//! port). `show_tally` counts something and links to the view `ui://tally/view`
//! (`apps/tally.html`, embedded at compile time); the view's "+1" button calls
//! `add_to_tally`, which only views may call (`visibility(app)`). A client that declares MCP
//! Apps sees both tools with their `_meta.ui` and the view; any other client sees
//! `show_tally` alone, whose text says the tally.
//!
//! Browser hosts: `ALLOWED_ORIGINS=http://localhost:6274,http://localhost:8080` lets pages on
//! those origins call the server (CORS); a foreign origin is refused with 403, and a loopback
//! origin not listed is served without a CORS grant (its page cannot read the answer). See
//! docs/apps.md for trying it in the MCP Inspector and in a host.

use std::collections::BTreeMap;
use std::sync::Mutex;

use sake::prelude::*;
use schemars::JsonSchema;
use serde::Serialize;

/// The tally view: what is counted, how many, and a button that adds one.
#[view(
    uri = "ui://tally/view",
    html = "apps/tally.html",
    title = "Tally",
    prefers_border = false
)]
struct TallyView;

/// Something counted, and how many.
#[derive(Serialize, JsonSchema)]
struct Tally {
    /// What is counted.
    label: String,
    /// How many so far.
    count: u64,
}

/// The tallies, by label. Bounded: a client cannot make the server hold more than
/// [`MAX_TALLIES`] labels of [`MAX_LABEL`] bytes.
#[derive(Default)]
struct Tallies(Mutex<BTreeMap<String, u64>>);

const MAX_TALLIES: usize = 1000;
const MAX_LABEL: usize = 64;

impl Tallies {
    /// Adds `by` to the tally of `label` and returns it.
    fn add(&self, label: &str, by: u64) -> Result<Tally, String> {
        let label = label.trim();
        if label.is_empty() || label.len() > MAX_LABEL {
            return Err(format!(
                "a label is 1 to {MAX_LABEL} bytes, such as \"Cups of tea\""
            ));
        }
        let mut tallies = self.0.lock().map_err(|_| "the tallies are unavailable")?;
        if !tallies.contains_key(label) && tallies.len() >= MAX_TALLIES {
            return Err(format!(
                "this server keeps {MAX_TALLIES} tallies at most; count one of those"
            ));
        }
        let count = tallies.entry(label.to_owned()).or_insert(0);
        *count += by;
        Ok(Tally {
            label: label.to_owned(),
            count: *count,
        })
    }
}

/// The result a model and a view both read: a sentence for the model and for clients that
/// render no view, the tally as structured content for the view.
fn result(tally: Result<Tally, String>) -> CallToolResult {
    let tally = match tally {
        Ok(t) => t,
        Err(e) => return CallToolResult::error(e),
    };
    let text = format!("{}: {}", tally.label, tally.count);
    match CallToolResult::structured(&tally) {
        Ok(mut r) => {
            r.content = vec![Content::text(text)];
            r
        }
        Err(e) => CallToolResult::error(e.to_string()),
    }
}

/// Shows the tally of something counted (cups of tea, push-ups, pages read) in a view with a
/// button that adds one.
#[tool(ui = TallyView, annotations(read_only))]
fn show_tally(
    /// What is counted, such as "Cups of tea".
    label: String,
    tallies: State<Tallies>,
) -> CallToolResult {
    result(tallies.add(&label, 0))
}

/// Adds one to a tally: the view's "+1" button.
#[tool(ui = TallyView, visibility(app))]
fn add_to_tally(
    /// What is counted.
    label: String,
    tallies: State<Tallies>,
) -> CallToolResult {
    result(tallies.add(&label, 1))
}

#[tokio::main]
async fn main() -> Result<(), sake::Error> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .init();
    let port = std::env::var("PORT").unwrap_or_else(|_| "3000".to_owned());
    let origins: Vec<String> = std::env::var("ALLOWED_ORIGINS")
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|o| !o.is_empty())
        .map(str::to_owned)
        .collect();
    let mut server = Server::from_registry()
        .name("apps")
        .version(env!("CARGO_PKG_VERSION"))
        .instructions("`show_tally` shows a tally in a view; its button adds one.")
        .state(Tallies::default());
    if !origins.is_empty() {
        server = server.cors(sake::Cors::new(origins));
    }
    server.serve_http(format!("127.0.0.1:{port}")).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use sake::testing::TestClient;
    use serde_json::json;

    fn server() -> Server {
        Server::from_registry().state(Tallies::default())
    }

    #[tokio::test]
    async fn a_client_with_apps_sees_both_tools_and_the_view() {
        let client = TestClient::new(server())
            .unwrap()
            .capabilities(sake::apps::client_capabilities());
        let tools = client.list_tools().await.unwrap();
        let names: Vec<&str> = tools["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["add_to_tally", "show_tally"]);
        assert_eq!(
            tools["tools"][1]["_meta"],
            json!({"ui": {"resourceUri": "ui://tally/view", "visibility": ["model", "app"]},
                   "ui/resourceUri": "ui://tally/view"})
        );
        let shown = client
            .call_tool("show_tally", json!({"label": "Cups of tea"}))
            .await
            .unwrap();
        assert_eq!(
            shown["content"],
            json!([{"type": "text", "text": "Cups of tea: 0"}])
        );
        let added = client
            .call_tool("add_to_tally", json!({"label": "Cups of tea"}))
            .await
            .unwrap();
        assert_eq!(
            added["structuredContent"],
            json!({"label": "Cups of tea", "count": 1})
        );
        let view = client.read_resource("ui://tally/view").await.unwrap();
        assert_eq!(view["contents"][0]["mimeType"], "text/html;profile=mcp-app");
        assert_eq!(
            view["contents"][0]["_meta"],
            json!({"ui": {"prefersBorder": false}})
        );
    }

    #[tokio::test]
    async fn a_client_without_apps_sees_a_plain_tool_with_useful_text() {
        let client = TestClient::new(server()).unwrap();
        let tools = client.list_tools().await.unwrap();
        assert_eq!(tools["tools"].as_array().unwrap().len(), 1);
        assert_eq!(tools["tools"][0]["name"], "show_tally");
        assert_eq!(tools["tools"][0].get("_meta"), None);
        let shown = client
            .call_tool("show_tally", json!({"label": "Push-ups"}))
            .await
            .unwrap();
        assert_eq!(
            shown["content"],
            json!([{"type": "text", "text": "Push-ups: 0"}])
        );
        let refused = client
            .call_tool("add_to_tally", json!({"label": "Push-ups"}))
            .await
            .unwrap_err();
        assert_eq!(refused.code, -32021);
    }

    #[test]
    fn tallies_are_bounded() {
        let tallies = Tallies::default();
        assert!(tallies.add(&"x".repeat(MAX_LABEL + 1), 1).is_err());
        assert!(tallies.add("  ", 1).is_err());
        for i in 0..MAX_TALLIES {
            tallies.add(&i.to_string(), 1).unwrap();
        }
        assert!(tallies.add("one more", 1).is_err());
        assert_eq!(tallies.add("7", 1).unwrap().count, 2);
    }
}
