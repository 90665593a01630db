//! MCP Apps with the MCP Inspector (`@modelcontextprotocol/inspector@2.12.0`), whose CLI probes
//! a tool's App (`--app-info`: `_meta.ui`, then `resources/read` of the view) and declares the
//! extension on request (`--advertise-apps`), against `examples/apps.rs` over Streamable HTTP in
//! both eras (`--protocol-era modern`: 2026-07-28, the extension in each request's `_meta`;
//! `legacy`: `initialize`, 2025-11-25). Declaring it, the Inspector sees both tools with their
//! view; without it, the one tool a model may call, with no App, and its text. Every output is
//! compared whole.
//!
//! Node and the Inspector come from `$SAKE_NODE` / `$SAKE_NODE_MODULES` (`scripts/test.sh`);
//! without them this test fails.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use sake_tests::{example_binary, node, raw, same};
use serde_json::{Value, json};

/// `examples/apps.rs` on a free port, killed when dropped.
struct Example {
    _child: tokio::process::Child,
    url: String,
}

async fn start() -> Example {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let child = tokio::process::Command::new(example_binary("apps"))
        .env("PORT", port.to_string())
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawning the apps example");
    raw::wait_until_listening(port, "the apps example").await;
    Example {
        _child: child,
        url: format!("http://127.0.0.1:{port}/mcp"),
    }
}

/// A home of its own: the Inspector keeps its catalog under `~/.mcp-inspector`.
struct Home(PathBuf);

impl Drop for Home {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs the Inspector's CLI against `url` in `era` and returns its exit code and the JSON
/// lines it printed (on stdout; an error's on stderr).
async fn inspect(home: &Home, url: &str, era: &str, args: &[&str]) -> (i32, Vec<Value>) {
    let node = node::node();
    let run = tokio::process::Command::new(&node.bin)
        .arg(node::inspector())
        .args(["--cli", url, "--transport", "http", "--protocol-era", era])
        .args(["--format", "json", "--quiet"])
        .args(args)
        .env("HOME", &home.0)
        .env("MCP_STORAGE_DIR", &home.0)
        .env("MCP_AUTO_OPEN_ENABLED", "false")
        .env("NODE_PATH", &node.modules)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the Inspector finishes within 60 s")
        .expect("running the Inspector");
    let stdout = if out.status.success() {
        String::from_utf8_lossy(&out.stdout)
    } else {
        String::from_utf8_lossy(&out.stderr)
    };
    let lines = stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str(l).unwrap_or_else(|e| {
                panic!(
                    "the Inspector printed no JSON ({e}) for {args:?}: {stdout}\nstderr: {}",
                    String::from_utf8_lossy(&out.stderr)
                )
            })
        })
        .collect();
    (out.status.code().unwrap_or(-1), lines)
}

fn app(tool: &str, visibility: &[&str]) -> Value {
    json!({"hasApp": true, "toolName": tool, "resourceUri": "ui://tally/view",
           "visibility": visibility, "prefersBorder": false,
           "resourceMimeType": "text/html;profile=mcp-app"})
}

#[tokio::test]
async fn the_inspector_sees_the_apps_only_when_it_declares_the_extension() {
    let example = start().await;
    let home =
        Home(std::env::temp_dir().join(format!("sake-inspector-apps-{}", std::process::id())));
    std::fs::create_dir_all(&home.0).unwrap();
    for (era, label) in [("modern", "Tea"), ("legacy", "Coffee")] {
        let server_info = |mut result: Value| {
            if era == "modern" {
                result["_meta"] = json!({"io.modelcontextprotocol/serverInfo": {"name": "apps", "version": "0.1.0"}});
            }
            result
        };
        let arg = format!("label={label}");
        // Without the extension: one tool, no App, and the tool's text.
        let (code, lines) = inspect(
            &home,
            &example.url,
            era,
            &["--method", "tools/list", "--app-info"],
        )
        .await;
        assert_eq!(code, 0, "{era}");
        same(lines, json!([{"hasApp": false, "toolName": "show_tally"}]));
        let (code, lines) = inspect(
            &home,
            &example.url,
            era,
            &[
                "--method",
                "tools/call",
                "--tool-name",
                "show_tally",
                "--tool-arg",
                &arg,
            ],
        )
        .await;
        assert_eq!(code, 0, "{era}");
        same(
            lines,
            json!([{"result": server_info(json!({
                "content": [{"type": "text", "text": format!("{label}: 0")}],
                "structuredContent": {"label": label, "count": 0}}))}]),
        );
        let (code, lines) = inspect(
            &home,
            &example.url,
            era,
            &[
                "--method",
                "tools/call",
                "--tool-name",
                "add_to_tally",
                "--tool-arg",
                &arg,
            ],
        )
        .await;
        assert_eq!(code, 5, "{era}");
        same(
            lines,
            json!([{"error": {"code": "tool_not_found", "message": "Tool 'add_to_tally' not found on server."}}]),
        );

        // Declaring it: both tools with their view, read from the server.
        let (code, lines) = inspect(
            &home,
            &example.url,
            era,
            &["--advertise-apps", "--method", "tools/list", "--app-info"],
        )
        .await;
        assert_eq!(code, 0, "{era}");
        same(
            lines,
            json!([
                app("add_to_tally", &["app"]),
                app("show_tally", &["model", "app"])
            ]),
        );
        let (code, lines) = inspect(
            &home,
            &example.url,
            era,
            &[
                "--advertise-apps",
                "--method",
                "tools/call",
                "--tool-name",
                "add_to_tally",
                "--tool-arg",
                &arg,
            ],
        )
        .await;
        assert_eq!(code, 0, "{era}");
        same(
            lines,
            json!([{"result": server_info(json!({
                        "content": [{"type": "text", "text": format!("{label}: 1")}],
                        "structuredContent": {"label": label, "count": 1}})),
                    "appInfo": app("add_to_tally", &["app"])}]),
        );
    }
}
