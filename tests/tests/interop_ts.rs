//! Interoperability with an independent client: the TypeScript SDK v2 client
//! (`@modelcontextprotocol/client@2.4.0`), pinned to each handshake revision, drives real
//! sessions of a sake server on a socket: it lists tools, calls one, reads a resource, gets a
//! prompt, answers an elicitation through its handler, and ends the session with DELETE.
//!
//! The driver is `tests/interop/ts/legacy.mjs`; Node and the client come from
//! `$SAKE_NODE` / `$SAKE_NODE_MODULES`, which `scripts/test.sh` exports after installing the
//! pinned versions into `.tools/`. Without them this test fails: it never passes unrun.

#[path = "../fixtures/interop.rs"]
mod server;

use std::ffi::OsStr;
use std::time::Duration;

use sake_tests::{node, same};
use serde_json::{Value, json};

/// How long one run of the driver may take (each of its steps has its own 10 s limit).
const RUN_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs the driver against `url` at `revision` and returns the JSON it printed.
async fn drive(url: &str, revision: &str) -> Value {
    let out = node::run(
        "legacy.mjs",
        &[OsStr::new(url), OsStr::new(revision)],
        RUN_TIMEOUT,
    )
    .await;
    serde_json::from_str(out.stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "the driver printed no JSON ({e}): {}\nstderr: {}",
            out.stdout, out.stderr
        )
    })
}

fn add_tool(revision: &str) -> Value {
    let mut add = json!({
        "name": "add",
        "description": "Adds two numbers.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "a": {"type": "integer", "description": "The first addend."},
                "b": {"type": "integer", "description": "The second addend."},
            },
            "required": ["a", "b"],
        },
        "annotations": {"readOnlyHint": true},
    });
    if revision == "2025-03-26" {
        add["annotations"]["title"] = json!("Adder");
    } else {
        add["title"] = json!("Adder");
        add["outputSchema"] = json!({
            "type": "object",
            "description": "The sum of two numbers.",
            "properties": {"sum": {"type": "integer", "description": "`a + b`."}},
            "required": ["sum"],
        });
    }
    add
}

async fn run(revision: &str) {
    let mut server = server::start().await;
    let out = drive(&server.url(), revision).await;

    same(&out["era"], json!("legacy"));
    same(&out["protocolVersion"], json!(revision));
    same(
        &out["serverInfo"],
        json!({"name": server::NAME, "version": server::VERSION}),
    );
    same(
        &out["capabilities"],
        json!({
            "logging": {},
            "prompts": {"listChanged": true},
            "resources": {"subscribe": true, "listChanged": true},
            "tools": {"listChanged": true},
        }),
    );
    same(&out["instructions"], json!(server::INSTRUCTIONS));
    same(&out["sessionIdIsVisibleAscii"], json!(true));

    same(
        &out["tools"],
        json!({"tools": [
            add_tool(revision),
            {
                "name": "greet_user",
                "description": "Asks the user for their name, then greets them.",
                "inputSchema": {"type": "object", "properties": {}},
            },
            {
                "name": "log_twice",
                "description": "Logs a note at info level and a warning at warning level.",
                "inputSchema": {"type": "object", "properties": {}},
            },
        ]}),
    );

    let mut call = json!({"content": [{"type": "text", "text": "{\"sum\":5}"}]});
    if revision != "2025-03-26" {
        call["structuredContent"] = json!({"sum": 5});
    }
    same(&out["call"], call);

    same(
        &out["read"],
        json!({"contents": [{
            "uri": "users://1/profile",
            "mimeType": "application/json",
            "text": "{\"id\":1,\"name\":\"Ada\"}",
        }]}),
    );
    same(
        &out["prompt"],
        json!({"messages": [{
            "role": "user",
            "content": {"type": "text", "text": "Review this Rust for bugs and style:\n\nfn main() {}"},
        }]}),
    );

    // The handler saw sake's elicitation/create, and the tool saw its answer.
    same(
        &out["elicitations"],
        json!([{
            // The question's key (a gateway in front asks a 2026-07-28 client under it).
            "_meta": {"io.github.sake-rs/inputKey": "name"},
            "message": "What is your name?",
            "requestedSchema": {
                "type": "object",
                "properties": {"name": {"type": "string", "description": "Your name."}},
                "required": ["name"],
            },
        }]),
    );
    same(
        &out["elicited"],
        json!({"content": [{"type": "text", "text": "Hello, Ada!"}]}),
    );
    // sake answers -32002 with data.uri (the wire tests check it); the SDK recognises it as
    // its ResourceNotFoundError, which it reports under the 2026-07-28 code.
    same(
        &out["missing"],
        json!({
            "code": -32602,
            "message": "Resource not found: users://9/profile",
            "data": {"uri": "users://9/profile"},
            "uri": "users://9/profile",
        }),
    );
    // The client keeps the session id of `initialize` (it ignores the re-minted one), and
    // the level still applies.
    same(&out["setLevel"], json!({}));
    same(
        &out["logged"],
        json!({"content": [{"type": "text", "text": "logged"}]}),
    );
    same(
        &out["logs"],
        json!([{"level": "warning", "logger": "log_twice", "data": "a warning"}]),
    );
    same(&out["sessionAfterDelete"], Value::Null);

    // Its GET stream does not hold up a graceful shutdown.
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn typescript_client_on_2025_11_25() {
    run("2025-11-25").await;
}

#[tokio::test]
async fn typescript_client_on_2025_06_18() {
    run("2025-06-18").await;
}

#[tokio::test]
async fn typescript_client_on_2025_03_26() {
    run("2025-03-26").await;
}
