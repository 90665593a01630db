//! `examples/installable/`, a server shipped as a binary crate (`sake-demo`): what
//! `cargo install` gives serves stdio with no arguments and Streamable HTTP with `--http`, and
//! its `server.json`, written by the server from its listing (`--server-json`) and shipped as
//! it wrote it, is valid against the MCP registry's published schema
//! (`spec/registry/server.schema.json`, see `spec/README.md`) and names the crate that is built
//! here, at its version, with the `mcp-name:` marker the registry looks for in its README.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use sake_tests::{modern_meta, package_binary, read_greeting, same, spawn, within};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

/// `examples/installable/`.
fn crate_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/installable")
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The `server.json` the server writes from its listing (`sake-demo --server-json`).
fn server_json() -> Value {
    let out = std::process::Command::new(package_binary("sake-demo"))
        .arg("--server-json")
        .env("RUST_LOG", "error")
        .stdin(Stdio::null())
        .output()
        .expect("sake-demo runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("--server-json prints JSON")
}

/// The `server.json` shipped beside the crate (what `mcp-publisher publish` reads) is the one
/// the server writes: regenerate it with `sake-demo --server-json > server.json`.
#[test]
fn the_shipped_server_json_is_the_generated_one() {
    same(read_json(&crate_dir().join("server.json")), server_json());
}

/// `--server-card` prints the card of the same listing (no remote: no public URL).
#[test]
fn the_server_card_agrees_with_server_json() {
    let out = std::process::Command::new(package_binary("sake-demo"))
        .arg("--server-card")
        .env("RUST_LOG", "error")
        .stdin(Stdio::null())
        .output()
        .expect("sake-demo runs");
    assert!(out.status.success());
    let card: Value = serde_json::from_slice(&out.stdout).unwrap();
    let doc = server_json();
    same(
        card,
        json!({
            "$schema": "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json",
            "name": doc["name"],
            "version": doc["version"],
            "description": doc["description"],
            "title": doc["title"],
            "websiteUrl": doc["websiteUrl"],
            "repository": doc["repository"],
        }),
    );
}

/// The MCP registry's schema of `server.json`, compiled (draft-07, formats checked).
fn registry_schema() -> jsonschema::Validator {
    let schema =
        read_json(&Path::new(env!("CARGO_MANIFEST_DIR")).join("spec/registry/server.schema.json"));
    jsonschema::options()
        .should_validate_formats(true)
        .build(&schema)
        .unwrap_or_else(|e| panic!("compiling the registry's schema: {e}"))
}

fn errors(validator: &jsonschema::Validator, instance: &Value) -> Vec<String> {
    validator
        .iter_errors(instance)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

#[test]
fn server_json_is_valid_against_the_registry_schema() {
    let validator = registry_schema();
    let doc = server_json();
    assert_eq!(errors(&validator, &doc), Vec::<String>::new());
    same(
        &doc["$schema"],
        json!("https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"),
    );
}

/// The schema is not vacuous: the mistakes the registry refuses fail against it.
#[test]
fn the_registry_schema_refuses_what_the_registry_refuses() {
    let validator = registry_schema();
    let broken = |edit: fn(&mut Value)| {
        let mut doc = server_json();
        edit(&mut doc);
        doc
    };
    for (what, doc) in [
        (
            "a name without a namespace",
            broken(|d| d["name"] = json!("sake-demo")),
        ),
        (
            "a description over 100 characters",
            broken(|d| d["description"] = json!("x".repeat(101))),
        ),
        (
            "the package version `latest`",
            broken(|d| d["packages"][0]["version"] = json!("latest")),
        ),
        (
            "a package without a transport",
            broken(|d| {
                d["packages"][0]
                    .as_object_mut()
                    .unwrap()
                    .remove("transport");
            }),
        ),
        (
            "no version",
            broken(|d| {
                d.as_object_mut().unwrap().remove("version");
            }),
        ),
    ] {
        assert!(
            !errors(&validator, &doc).is_empty(),
            "{what} passed the registry's schema"
        );
    }
}

/// The package `server.json` names is this crate, at its version, installed as a stdio command;
/// its README carries the ownership marker in visible text (crates.io drops HTML comments).
#[test]
fn server_json_names_this_crate() {
    let doc = server_json();
    let manifest = std::fs::read_to_string(crate_dir().join("Cargo.toml")).unwrap();
    let field = |key: &str| {
        manifest
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{key} = \"")))
            .and_then(|rest| rest.strip_suffix('"'))
            .unwrap_or_else(|| panic!("no {key} in examples/installable/Cargo.toml"))
            .to_owned()
    };
    let (name, version) = (field("name"), field("version"));
    same(
        &doc["packages"],
        json!([{
            "registryType": "cargo",
            "registryBaseUrl": "https://crates.io",
            "identifier": name,
            "version": version,
            "transport": {"type": "stdio"},
        }]),
    );
    same(&doc["version"], json!(version));

    let readme = std::fs::read_to_string(crate_dir().join("README.md")).unwrap();
    let marker = format!("mcp-name: {}", doc["name"].as_str().unwrap());
    let line = readme
        .lines()
        .find(|l| l.contains(&marker))
        .unwrap_or_else(|| panic!("README.md has no `{marker}`"));
    assert!(
        !line.contains("<!--"),
        "the marker must be visible text: {line}"
    );
}

fn add_call() -> Value {
    json!({
        "name": "add",
        "arguments": {"a": 2, "b": 3},
        "_meta": modern_meta(json!({}), json!({})),
    })
}

/// What the demo says it is: what its `server.json` and card say too.
fn demo_info() -> Value {
    json!({"name": "sake-demo", "version": "0.1.0", "title": "sake demo",
           "description": "A demo MCP server built with sake: add numbers, count words, explain a topic.",
           "websiteUrl": "https://github.com/sake-rs/sake/blob/main/docs/clients.md"})
}

fn add_result() -> Value {
    json!({
        "resultType": "complete",
        "_meta": {"io.modelcontextprotocol/serverInfo": demo_info()},
        "content": [{"type": "text", "text": "{\"sum\":5}"}],
        "structuredContent": {"sum": 5},
    })
}

/// With no arguments it speaks MCP on stdin/stdout, both eras, and ends when stdin closes.
#[tokio::test]
async fn it_serves_stdio_by_default() {
    let mut demo = spawn(&package_binary("sake-demo"), &[]);
    same(
        demo.peer.call(1, "tools/call", add_call()).await,
        json!({"jsonrpc": "2.0", "id": 1, "result": add_result()}),
    );
    let init = demo.peer.initialize("2025-11-25", json!({})).await;
    same(&init["result"]["protocolVersion"], json!("2025-11-25"));
    same(&init["result"]["serverInfo"], demo_info());
    same(
        demo.peer
            .call(
                3,
                "tools/call",
                json!({"name": "word_count", "arguments": {"text": "one two  three"}}),
            )
            .await,
        json!({"jsonrpc": "2.0", "id": 3, "result": {
            "content": [{"type": "text", "text": "{\"words\":3}"}],
            "structuredContent": {"words": 3},
        }}),
    );
    demo.peer.close();
    let status = within("sake-demo to exit", demo.child.wait())
        .await
        .unwrap();
    assert!(status.success(), "sake-demo exited with {status}");
}

/// `--http ADDR` serves Streamable HTTP at `/mcp`, and greets on stderr with where it is and how
/// to connect to it.
#[tokio::test]
async fn it_serves_http_with_the_flag() {
    let mut child = tokio::process::Command::new(package_binary("sake-demo"))
        .args(["--http", "127.0.0.1:0"])
        .env("RUST_LOG", "warn")
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let (greeting, url, before) = read_greeting(&mut stderr).await;
    // Nothing before it: no warning on a loopback address.
    assert_eq!(before, Vec::<String>::new());
    let url = url.unwrap();
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
        "{url}"
    );
    assert_eq!(
        greeting,
        format!(
            "sake-demo 0.1.0: MCP at {url}
  2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26  2 tools, 1 prompt, 1 resource
connect:
  MCP Inspector  npx @modelcontextprotocol/inspector --cli {url} --transport http --method tools/list
  Claude Code    claude mcp add --transport http sake-demo {url}
  VS Code        .vscode/mcp.json: {{\"servers\":{{\"sake-demo\":{{\"type\":\"http\",\"url\":\"{url}\"}}}}}}
  or: cargo sake install claude-desktop|claude-code|vscode|cursor
(SAKE_QUIET=1 or Server::quiet hides this greeting)
"
        )
    );
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": add_call()});
    let reply = within(
        "the POST",
        reqwest::Client::new()
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", "add")
            .body(body.to_string())
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(reply.status(), 200);
    let answer: Value = serde_json::from_slice(&reply.bytes().await.unwrap()).unwrap();
    same(
        answer,
        json!({"jsonrpc": "2.0", "id": 1, "result": add_result()}),
    );
}

/// `--help` prints the usage; arguments it does not know are an error (exit status 2) that
/// prints it too.
#[tokio::test]
async fn its_command_line() {
    let run = |args: &'static [&'static str]| async move {
        within(
            "sake-demo",
            tokio::process::Command::new(package_binary("sake-demo"))
                .args(args)
                .stdin(Stdio::null())
                .output(),
        )
        .await
        .unwrap()
    };
    let help = run(&["--help"]).await;
    assert!(help.status.success());
    let usage = String::from_utf8(help.stdout).unwrap();
    assert!(
        usage.starts_with("sake-demo: a demo MCP server built with sake\n\nUsage:\n  sake-demo                  serve MCP on stdin/stdout\n"),
        "{usage}"
    );
    let version = run(&["--version"]).await;
    assert_eq!(
        String::from_utf8(version.stdout).unwrap(),
        "sake-demo 0.1.0\n"
    );

    let wrong = run(&["--port", "3000"]).await;
    assert_eq!(wrong.status.code(), Some(2));
    assert!(wrong.stdout.is_empty());
    let stderr = String::from_utf8(wrong.stderr).unwrap();
    assert_eq!(
        stderr,
        format!("sake-demo: unexpected arguments: --port 3000\n\n{usage}")
    );
    // A bound address is refused with a message, not a panic.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let busy = within(
        "sake-demo",
        tokio::process::Command::new(package_binary("sake-demo"))
            .args(["--http", &addr])
            .env("RUST_LOG", "error")
            .stdin(Stdio::null())
            .output(),
    )
    .await
    .unwrap();
    assert_eq!(busy.status.code(), Some(1));
    let stderr = String::from_utf8(busy.stderr).unwrap();
    assert!(
        stderr.starts_with(&format!("sake-demo: cannot listen on {addr}: ")),
        "{stderr}"
    );
}
