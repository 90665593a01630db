//! Views the macro accepts, and the tools linked to them: by the view's struct (checked by the
//! compiler) or by its URI (checked at start-up).

use sake::prelude::*;

/// A view from a file next to this one, with every option.
#[view(
    uri = "ui://pass/card",
    html = "views.html",
    name = "card",
    title = "Card",
    csp(
        connect_domains = ["https://api.example.com", "wss://live.example.com"],
        resource_domains = ["https://*.cdn.example"],
        frame_domains = ["https://www.youtube.com"],
        base_uri_domains = ["https://cdn.example"]
    ),
    permissions(camera, microphone, geolocation, clipboard_write),
    domain = "a904794854a047f6.claudemcpcontent.com",
    prefers_border
)]
pub struct Card;

/// A view from a function, in a module.
mod live {
    use super::*;

    #[view(uri = "ui://pass/live", html = render, prefers_border = false)]
    pub struct Live;

    async fn render(ctx: Context) -> Result<String, std::fmt::Error> {
        Ok(format!("<!DOCTYPE html><p>{}</p>", ctx.revision()))
    }
}

/// Another from a plain function.
#[view(uri = "ui://pass/plain", html = plain_html)]
struct Plain;

fn plain_html() -> &'static str {
    "<!DOCTYPE html><p>plain</p>"
}

/// Linked by the view's struct.
#[tool(ui = Card)]
fn show_card() -> String {
    "card".into()
}

/// Linked by a path to the struct, for views only.
#[tool(ui = live::Live, visibility(app))]
fn refresh_live() -> String {
    "live".into()
}

/// Linked by URI, for the model only.
#[tool(ui = "ui://pass/plain", visibility(model))]
fn plain() -> String {
    "plain".into()
}

/// App-only without a view of its own.
#[tool(visibility(app))]
fn helper() -> String {
    "helper".into()
}

fn main() {
    use sake::apps::View as _;
    assert_eq!(Card::URI, "ui://pass/card");
    assert_eq!(live::Live::URI, "ui://pass/live");
    let registry = sake::Registry::collect().unwrap();
    // A client without MCP Apps: the tools a model may call, no view.
    let tools = registry.tools_for(sake::Revision::LATEST);
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["plain", "show_card"]);
    assert!(registry.resources_for(sake::Revision::LATEST).is_empty());
    // A client with it: every tool with its `_meta.ui`, and the views.
    let tools = registry.app_tools_for(sake::Revision::LATEST);
    assert_eq!(tools.len(), 4);
    assert_eq!(tools[2]["_meta"]["ui"]["visibility"], serde_json::json!(["app"]));
    let views = registry.app_resources_for(sake::Revision::LATEST);
    assert_eq!(views.len(), 3);
    assert_eq!(views[0]["mimeType"], "text/html;profile=mcp-app");
    assert_eq!(
        views[0]["size"],
        include_str!("views.html").len()
    );
    sake::Server::from_registry().build().unwrap();
}
