//! A handshake-only stdio server for the client's stdio fallback tests. `FAKE_DISCOVER` says
//! how it treats `server/discover`: `method-not-found` (a -32601 error) or `silent` (no
//! answer, as some servers do before `initialize`). It serves `initialize` (2025-06-18) and
//! `tools/list` (a `tools/call` of `hang` is never answered), and logs every line it reads to stderr when `FAKE_LOG` is set.

use std::io::{BufRead, Write};

use serde_json::{Value, json};

fn main() {
    let mode = std::env::var("FAKE_DISCOVER").unwrap_or_else(|_| "method-not-found".into());
    let stdin = std::io::stdin();
    let mut out = std::io::stdout();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        if std::env::var_os("FAKE_LOG").is_some() {
            eprintln!("fake_stdio <- {line}");
        }
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let Some(id) = msg.get("id").cloned() else {
            // Notifications: report a cancellation on stdout for the test to see.
            if msg.get("method").and_then(Value::as_str) == Some("notifications/cancelled") {
                let note = json!({"jsonrpc": "2.0", "method": "notifications/message",
                    "params": {"level": "info", "data": {"cancelled": msg["params"]}}});
                if writeln!(out, "{note}").and_then(|_| out.flush()).is_err() {
                    break;
                }
            }
            continue;
        };
        let reply = match msg
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default()
        {
            "server/discover" if mode == "silent" => continue,
            "initialize" => json!({"jsonrpc": "2.0", "id": id, "result": {
                "protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                "serverInfo": {"name": "fake-stdio", "version": "1"}}}),
            // Never answers: for timeouts (and the cancellation that follows them).
            "tools/call" if msg["params"]["name"] == "hang" => continue,
            "tools/list" => json!({"jsonrpc": "2.0", "id": id, "result": {"tools": [
                {"name": "only", "inputSchema": {"type": "object"}}]}}),
            _ => {
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}})
            }
        };
        if writeln!(out, "{reply}").and_then(|_| out.flush()).is_err() {
            break;
        }
    }
}
