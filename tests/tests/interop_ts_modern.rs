//! Interoperability with the official TypeScript SDK v2 client (`@modelcontextprotocol/client`
//! 2.4.0) pinned to 2026-07-28, which rejects malformed results. A sake server runs in
//! process on a real socket; `tests/interop/ts/modern.mjs` lists and calls tools, answers an
//! elicitation through its handler (MRTR), sends an `Mcp-Param-*` header, follows progress,
//! reads a resource and receives a list change on a `subscriptions/listen` stream. It prints
//! one JSON object per step; this test compares each with what it expects, whole.
//!
//! Needs Node and the client: `scripts/test.sh` installs the pinned ones into `.tools/` and
//! exports `SAKE_NODE` (the node binary) and `SAKE_NODE_MODULES` (their `node_modules`).

use std::ffi::OsStr;
use std::time::Duration;

use sake::prelude::*;
use sake_tests::fixtures::NameForm;
use sake_tests::node;
use sake_tests::stream::Live;
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// The server

#[path = "../fixtures/add.rs"]
mod add;

/// Asks for the user's name, then greets them.
#[tool]
async fn greet(ctx: Context) -> Result<String, sake::InputError> {
    let form = ctx
        .elicit::<NameForm>("user_name", "What is your name?")
        .await?;
    Ok(match form.accepted() {
        Some(f) => format!("Hello, {}!", f.name),
        None => "Hello, stranger!".into(),
    })
}

/// Echoes the region, which clients also send as the `Mcp-Param-Region` header.
#[tool]
fn regional(
    /// Where to run.
    #[arg(header = "Region")]
    region: String,
) -> String {
    format!("region={region}")
}

/// Counts to `to`, reporting progress.
#[tool]
async fn count(
    /// Where to stop.
    to: u32,
    ctx: Context,
) -> String {
    for i in 1..=to {
        ctx.progress(f64::from(i), Some(f64::from(to))).await;
    }
    format!("counted to {to}")
}

/// Says the tool list changed.
#[tool]
fn touch(ctx: Context) -> &'static str {
    if let Some(n) = ctx.notifier() {
        n.tools_changed();
    }
    "touched"
}

/// What this server is.
#[resource(uri = "docs://about", mime_type = "text/plain")]
fn about() -> &'static str {
    "A sake server talking to the TypeScript SDK."
}

const NAME: &str = "interop-ts";
const VERSION: &str = "0.2.0";

fn server_meta() -> Value {
    json!({"io.modelcontextprotocol/serverInfo": {"name": NAME, "version": VERSION}})
}

// ---------------------------------------------------------------------------------------------
// Running the driver

/// Runs `modern.mjs` against `url` (killed after `limit`) and returns its steps by name.
async fn drive(url: &str, limit: Duration) -> Vec<(String, Value)> {
    let out = node::run("modern.mjs", &[OsStr::new(url)], limit).await;
    out.stdout
        .lines()
        .map(|line| {
            let v: Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}\n{}", out.stderr));
            (v["step"].as_str().unwrap().to_owned(), v["value"].clone())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typescript_client_pinned_to_2026_07_28() {
    // Fails, rather than skips, without Node: interop is part of the suite.
    node::node();
    let live = Live::start(
        Server::from_registry()
            .name(NAME)
            .version(VERSION)
            .instructions("Interop with the TypeScript SDK."),
    )
    .await;
    let url = live.url();
    let steps = drive(&url, Duration::from_secs(120)).await;
    let expected = [
        (
            "connect",
            json!({
                "era": "modern",
                "version": "2026-07-28",
                "supportedVersions": ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"],
                "capabilities": {
                    "logging": {},
                    "resources": {"subscribe": true, "listChanged": true},
                    "tools": {"listChanged": true},
                },
                "serverInfo": {"name": NAME, "version": VERSION},
                "instructions": "Interop with the TypeScript SDK.",
            }),
        ),
        (
            "tools/list",
            json!([
                {
                    "name": "add",
                    "description": "Adds two integers.",
                    "inputSchema": {"type": "object", "properties": {
                        "a": {"type": "integer", "description": "The first addend."},
                        "b": {"type": "integer", "description": "The second addend."},
                    }, "required": ["a", "b"]},
                    "outputSchema": {
                        "type": "object",
                        "properties": {"sum": {"type": "integer", "description": "`a + b`."}},
                        "required": ["sum"],
                        "description": "The sum of two numbers.",
                    },
                    "annotations": {"readOnlyHint": true},
                },
                {
                    "name": "count",
                    "description": "Counts to `to`, reporting progress.",
                    "inputSchema": {"type": "object", "properties": {
                        "to": {"type": "integer", "description": "Where to stop.", "minimum": 0},
                    }, "required": ["to"]},
                },
                {
                    "name": "greet",
                    "description": "Asks for the user's name, then greets them.",
                    "inputSchema": {"type": "object", "properties": {}},
                },
                {
                    "name": "regional",
                    "description": "Echoes the region, which clients also send as the `Mcp-Param-Region` header.",
                    "inputSchema": {"type": "object", "properties": {
                        "region": {"type": "string", "description": "Where to run.", "x-mcp-header": "Region"},
                    }, "required": ["region"]},
                },
                {
                    "name": "touch",
                    "description": "Says the tool list changed.",
                    "inputSchema": {"type": "object", "properties": {}},
                },
            ]),
        ),
        (
            "tools/call add",
            json!({
                "_meta": server_meta(),
                "content": [{"type": "text", "text": "{\"sum\":5}"}],
                "structuredContent": {"sum": 5},
            }),
        ),
        (
            "tools/call greet (MRTR)",
            json!({
                "result": {"_meta": server_meta(), "content": [{"type": "text", "text": "Hello, Ada!"}]},
                // What the client's elicitation handler was given, from `inputRequests`.
                "asked": [{
                    "message": "What is your name?",
                    "requestedSchema": {
                        "type": "object",
                        "properties": {"name": {"type": "string"}},
                        "required": ["name"],
                    },
                }],
            }),
        ),
        (
            "tools/call regional (Mcp-Param)",
            json!({"_meta": server_meta(), "content": [{"type": "text", "text": "region=Zürich"}]}),
        ),
        (
            "tools/call count (progress)",
            json!({
                "result": {"_meta": server_meta(), "content": [{"type": "text", "text": "counted to 3"}]},
                "progress": [
                    {"progress": 1, "total": 3},
                    {"progress": 2, "total": 3},
                    {"progress": 3, "total": 3},
                ],
            }),
        ),
        (
            "resources/read",
            json!({
                "_meta": server_meta(),
                "ttlMs": 60000,
                "cacheScope": "public",
                "contents": [{
                    "uri": "docs://about",
                    "mimeType": "text/plain",
                    "text": "A sake server talking to the TypeScript SDK.",
                }],
            }),
        ),
        (
            "tools/call unknown (error)",
            json!({"protocolError": true, "code": -32602, "data": {"name": "nope"}}),
        ),
        (
            "subscriptions/listen",
            json!({
                // The server has no prompts: only the tools filter is honoured.
                "honoredFilter": {"toolsListChanged": true},
                "touched": [{"type": "text", "text": "touched"}],
                "notification": {
                    "method": "notifications/tools/list_changed",
                    "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": "listen:0"}},
                },
                "closed": "local",
            }),
        ),
        ("close", json!("closed")),
    ];
    let names: Vec<&str> = steps.iter().map(|(s, _)| s.as_str()).collect();
    let wanted: Vec<&str> = expected.iter().map(|(s, _)| *s).collect();
    assert_eq!(names, wanted, "steps run");
    for ((step, got), (_, want)) in steps.iter().zip(&expected) {
        assert!(got == want, "step {step}\n got: {got}\nwant: {want}");
    }
}
