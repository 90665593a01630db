//! sake's client as a host of MCP Apps against sake's own server, on 2026-07-28 and each
//! handshake revision: declaring the extension (`ClientBuilder::apps`), it lists the tools with
//! their `_meta.ui` (the app-only one too), reads a tool's view with its policy, and calls the
//! app-only tool as a view would; without it, it sees plain tools and no view.

use std::time::Duration;

use sake::apps::{ToolUi, Visibility};
use sake::client::{AppView, Client, EraCache};
use sake::prelude::*;
use sake::{Revision, Tool};
use serde_json::json;

/// The counter's view.
#[view(
    uri = "ui://counter/view",
    html = counter_html,
    csp(connect_domains = ["https://api.example.com"]),
    permissions(clipboard_write),
    prefers_border
)]
struct CounterView;

fn counter_html() -> &'static str {
    "<!DOCTYPE html><button>+1</button>"
}

/// Shows the counter.
#[tool(ui = CounterView)]
fn show_counter() -> String {
    "count: 0".into()
}

/// Adds one (the view's button).
#[tool(ui = CounterView, visibility(app))]
fn add_one() -> String {
    "count: 1".into()
}

async fn serve() -> String {
    let service = Server::from_registry()
        .name("sake-apps")
        .version("1.0.0")
        .build()
        .expect("a valid registry");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move {
        let _ = service.serve(listener, std::future::pending()).await;
    });
    format!("http://{addr}/mcp")
}

async fn connect(url: &str, revision: Option<Revision>, apps: bool) -> Client {
    let mut builder = Client::builder()
        .cache(EraCache::new())
        .timeout(Duration::from_secs(20))
        .apps(apps);
    if let Some(r) = revision {
        builder = builder.revision(r);
    }
    builder.connect(url).await.expect("connects")
}

fn by_name<'a>(tools: &'a [Tool], name: &str) -> &'a Tool {
    tools.iter().find(|t| t.name == name).expect("listed")
}

#[tokio::test]
async fn a_rust_host_reads_views_in_both_eras() {
    let url = serve().await;
    let revisions = [
        None,
        Some(Revision::V2025_11_25),
        Some(Revision::V2025_06_18),
        Some(Revision::V2025_03_26),
    ];
    for revision in revisions {
        let client = connect(&url, revision, true).await;
        let tools = client.list_tools().await.expect("tools");
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["add_one", "show_counter"], "{revision:?}");
        let show = by_name(&tools, "show_counter");
        let ui = ToolUi::of(show).expect("a view");
        assert!(ui.visible_to_model() && ui.callable_by_app());
        let add = ToolUi::of(by_name(&tools, "add_one")).expect("a view");
        assert_eq!(add.visibility(), [Visibility::App]);
        assert!(!add.visible_to_model());

        let view: AppView = client.view(show).await.expect("read").expect("a view");
        assert_eq!(view.uri, "ui://counter/view");
        assert_eq!(view.html, "<!DOCTYPE html><button>+1</button>");
        assert_eq!(view.tool, ui);
        assert_eq!(view.meta.prefers_border, Some(true));
        assert_eq!(
            view.content_security_policy(),
            "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; connect-src 'self' https://api.example.com; img-src 'self' data:; font-src 'self'; media-src 'self' data:; frame-src 'none'; object-src 'none'; base-uri 'self'"
        );
        assert_eq!(view.allow_attribute(), "clipboard-write");

        // What the view's button does, through this host.
        let added = client
            .call_tool("add_one", json!({}))
            .await
            .expect("called");
        assert_eq!(added.content[0].as_text(), Some("count: 1"));
        client.close().await;
    }
}

#[tokio::test]
async fn a_client_without_the_extension_sees_plain_tools() {
    let url = serve().await;
    for revision in [None, Some(Revision::V2025_11_25)] {
        let client = connect(&url, revision, false).await;
        let tools = client.list_tools().await.expect("tools");
        assert_eq!(tools.len(), 1, "{revision:?}");
        let show = by_name(&tools, "show_counter");
        assert_eq!(show.meta, None);
        assert_eq!(client.view(show).await.expect("no read"), None);
        assert!(client.list_resources().await.expect("resources").is_empty());
        let refused = client.call_tool("add_one", json!({})).await.unwrap_err();
        assert!(
            refused
                .to_string()
                .contains("is called by MCP App views only"),
            "{refused}"
        );
        client.close().await;
    }
}
