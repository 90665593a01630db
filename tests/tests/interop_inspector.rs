//! Interoperability with the MCP Inspector (`@modelcontextprotocol/inspector@2.12.0`), the
//! official debugging client, in its scriptable CLI mode (`--cli … --method … --format json`):
//! against `examples/quickstart.rs` over Streamable HTTP and `examples/stdio.rs` over stdio, in
//! both eras (`--protocol-era legacy`: `initialize`, which negotiates 2025-11-25;
//! `--protocol-era modern`: `server/discover` and 2026-07-28; `auto` picks 2026-07-28 where a
//! server answers `server/discover`). Each run is one invocation of the CLI (a connection of its
//! own): `initialize` (its connect-only probe, which reports the negotiated revision), the lists,
//! a tool call, a resource read and a prompt. Every output is compared whole.
//!
//! Node and the Inspector come from `$SAKE_NODE` / `$SAKE_NODE_MODULES`, which
//! `scripts/test.sh` exports after installing the pinned versions into `.tools/`. Without them
//! this test fails: it never passes unrun.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use sake_tests::{example_binary, node, raw, same};
use serde_json::{Value, json};

/// How long one invocation of the CLI may take.
const RUN_TIMEOUT: Duration = Duration::from_secs(60);

/// A home directory of its own for each test: the Inspector keeps its catalog and OAuth state
/// under `~/.mcp-inspector`, and a test must not read or write the user's.
struct Home(PathBuf);

impl Home {
    fn new(name: &str) -> Home {
        let dir =
            std::env::temp_dir().join(format!("sake-inspector-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        Home(dir)
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Where the Inspector connects: a URL (`--transport http`) or a command (stdio).
enum Target {
    Http(String),
    Stdio(PathBuf),
}

/// Runs `inspector --cli <target> --protocol-era <era> --format json --quiet <args>` and returns
/// the one JSON object it printed.
async fn inspect(home: &Home, target: &Target, era: &str, args: &[&str]) -> Value {
    let mut argv: Vec<OsString> = vec!["--cli".into()];
    match target {
        Target::Http(url) => argv.extend([url.into(), "--transport".into(), "http".into()]),
        Target::Stdio(command) => argv.push(command.into()),
    }
    argv.extend(["--protocol-era", era, "--format", "json", "--quiet"].map(OsString::from));
    argv.extend(args.iter().map(OsString::from));
    let argv: Vec<&OsStr> = argv.iter().map(OsString::as_os_str).collect();
    let env = [
        ("HOME", home.0.as_os_str()),
        ("MCP_STORAGE_DIR", home.0.as_os_str()),
        ("MCP_AUTO_OPEN_ENABLED", OsStr::new("false")),
    ];
    let out = node::run_file(&node::inspector(), &argv, &env, RUN_TIMEOUT).await;
    serde_json::from_str(out.stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "the Inspector printed no JSON ({e}) for {args:?}: {}\nstderr: {}",
            out.stdout, out.stderr
        )
    })
}

/// `examples/quickstart.rs` serving HTTP on a free port, killed when dropped.
struct Quickstart {
    _child: tokio::process::Child,
    url: String,
}

impl Quickstart {
    async fn start() -> Quickstart {
        let binary = example_binary("quickstart");
        // A port the system just handed out and released: the example binds it by number.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        let child = tokio::process::Command::new(binary)
            .env("PORT", port.to_string())
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawning the quickstart example");
        raw::wait_until_listening(port, "the quickstart example").await;
        Quickstart {
            _child: child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }
}

/// The `_meta` every 2026-07-28 result carries: the server's identity.
fn server_info_meta(name: &str) -> Value {
    json!({"io.modelcontextprotocol/serverInfo": {"name": name, "version": "0.1.0"}})
}

/// Adds `_meta` (the server's identity) to a result when the era is 2026-07-28.
fn result(era: &str, server: &str, mut result: Value) -> Value {
    if era == "modern" {
        result["_meta"] = server_info_meta(server);
    }
    json!({"result": result})
}

/// What both examples declare.
fn capabilities() -> Value {
    json!({
        "logging": {},
        "prompts": {"listChanged": true},
        "resources": {"subscribe": true, "listChanged": true},
        "tools": {"listChanged": true},
    })
}

fn add_tool() -> Value {
    json!({
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
        "outputSchema": {
            "type": "object",
            "description": "The sum of two numbers.",
            "properties": {"sum": {"type": "integer", "description": "`a + b`."}},
            "required": ["sum"],
        },
        "annotations": {"readOnlyHint": true, "idempotentHint": true},
    })
}

fn add_result(era: &str, server: &str) -> Value {
    result(
        era,
        server,
        json!({
            "content": [{"type": "text", "text": "{\"sum\":5}"}],
            "structuredContent": {"sum": 5},
        }),
    )
}

/// The revision each `--protocol-era` negotiates with sake.
fn revision(era: &str) -> &'static str {
    match era {
        "legacy" => "2025-11-25",
        _ => "2026-07-28",
    }
}

async fn quickstart(era: &str) {
    let home = Home::new(&format!("http-{era}"));
    let server = Quickstart::start().await;
    let target = Target::Http(server.url.clone());
    let name = "quickstart";

    same(
        inspect(&home, &target, era, &["--method", "initialize"]).await,
        json!({"result": {
            "serverInfo": {"name": name, "version": "0.1.0"},
            "protocolVersion": revision(era),
            "capabilities": capabilities(),
            "instructions": "Use `add` for sums, `greet` for greetings, `count` to watch progress.",
        }}),
    );
    same(
        inspect(&home, &target, era, &["--method", "tools/list"]).await,
        json!({"result": {"tools": [
            add_tool(),
            {
                "name": "count",
                "description": "Counts to `to`, one step every 100 ms, reporting progress when the client asks for it.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"to": {
                        "type": "integer",
                        "minimum": 0,
                        "description": "Where to stop (at most 50).",
                    }},
                    "required": ["to"],
                },
            },
            {
                "name": "greet",
                "title": "Greeter",
                "description": "Greets someone by name.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string", "description": "Who to greet."},
                        "shout": {"type": "boolean", "description": "Shout the greeting."},
                    },
                    "required": ["name"],
                },
            },
        ]}}),
    );
    same(
        inspect(
            &home,
            &target,
            era,
            &[
                "--method",
                "tools/call",
                "--tool-name",
                "add",
                "--tool-args-json",
                r#"{"a":2,"b":3}"#,
            ],
        )
        .await,
        add_result(era, name),
    );
    same(
        inspect(
            &home,
            &target,
            era,
            &[
                "--method",
                "tools/call",
                "--tool-name",
                "greet",
                "--tool-args-json",
                r#"{"name":"Ada","shout":true}"#,
            ],
        )
        .await,
        result(
            era,
            name,
            json!({"content": [{"type": "text", "text": "HELLO, ADA!"}]}),
        ),
    );
    same(
        inspect(&home, &target, era, &["--method", "resources/list"]).await,
        json!({"result": {"resources": [{
            "name": "about",
            "uri": "docs://about",
            "description": "What this server is.",
            "mimeType": "text/plain",
        }]}}),
    );
    same(
        inspect(
            &home,
            &target,
            era,
            &["--method", "resources/templates/list"],
        )
        .await,
        json!({"result": {"resourceTemplates": [{
            "name": "profile",
            "uriTemplate": "users://{id}/profile",
            "description": "A user's profile, by numeric id (users 1 to 3 exist).",
            "mimeType": "application/json",
        }]}}),
    );
    let mut read = json!({"contents": [{
        "uri": "users://1/profile",
        "mimeType": "application/json",
        "text": "{\"id\":1,\"name\":\"Ada\"}",
    }]});
    if era == "modern" {
        // 2026-07-28 results of resources/read say how long they may be cached, and by whom.
        read["ttlMs"] = json!(60000);
        read["cacheScope"] = json!("public");
    }
    same(
        inspect(
            &home,
            &target,
            era,
            &["--method", "resources/read", "--uri", "users://1/profile"],
        )
        .await,
        result(era, name, read),
    );
    same(
        inspect(&home, &target, era, &["--method", "prompts/list"]).await,
        json!({"result": {"prompts": [{
            "name": "review",
            "description": "Asks the model to review a piece of code.",
            "arguments": [
                {"name": "code", "description": "The code to review.", "required": true},
                {"name": "language", "description": "Its language, if not obvious.", "required": false},
            ],
        }]}}),
    );
    same(
        inspect(
            &home,
            &target,
            era,
            &[
                "--method",
                "prompts/get",
                "--prompt-name",
                "review",
                "--prompt-args",
                "code=fn main() {}",
                "language=Rust",
            ],
        )
        .await,
        result(
            era,
            name,
            json!({"messages": [{
                "role": "user",
                "content": {"type": "text", "text": "Review this Rust for bugs and style:\n\nfn main() {}"},
            }]}),
        ),
    );
}

async fn stdio(era: &str) {
    let home = Home::new(&format!("stdio-{era}"));
    let target = Target::Stdio(example_binary("stdio"));
    let name = "sake-stdio";

    same(
        inspect(&home, &target, era, &["--method", "initialize"]).await,
        json!({"result": {
            "serverInfo": {"name": name, "version": "0.1.0"},
            "protocolVersion": revision(era),
            "capabilities": capabilities(),
        }}),
    );
    same(
        inspect(&home, &target, era, &["--method", "tools/list"]).await,
        json!({"result": {"tools": [
            add_tool(),
            {
                "name": "greet_me",
                "description": "Asks the user for their name, then greets them.",
                "inputSchema": {"type": "object", "properties": {}},
            },
            {
                "name": "haiku",
                "description": "Asks the client's model for a haiku about `topic`.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"topic": {"type": "string", "description": "What the haiku is about."}},
                    "required": ["topic"],
                },
            },
            {
                "name": "sleep",
                "description": "Waits `millis` milliseconds (at most 10 s), reporting progress; cancellable.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"millis": {
                        "type": "integer",
                        "minimum": 0,
                        "description": "How long to wait.",
                    }},
                    "required": ["millis"],
                },
            },
        ]}}),
    );
    same(
        inspect(
            &home,
            &target,
            era,
            &[
                "--method",
                "tools/call",
                "--tool-name",
                "add",
                "--tool-args-json",
                r#"{"a":2,"b":3}"#,
            ],
        )
        .await,
        add_result(era, name),
    );
    let mut read = json!({"contents": [{
        "uri": "notes://hello",
        "mimeType": "text/plain",
        "text": "Hello from sake over stdio.",
    }]});
    if era == "modern" {
        read["ttlMs"] = json!(60000);
        read["cacheScope"] = json!("public");
    }
    same(
        inspect(
            &home,
            &target,
            era,
            &["--method", "resources/read", "--uri", "notes://hello"],
        )
        .await,
        result(era, name, read),
    );
    same(
        inspect(&home, &target, era, &["--method", "prompts/list"]).await,
        json!({"result": {"prompts": [{
            "name": "summarize",
            "description": "Asks for a summary of a text.",
            "arguments": [{"name": "text", "description": "The text to summarize.", "required": true}],
        }]}}),
    );
    same(
        inspect(
            &home,
            &target,
            era,
            &[
                "--method",
                "prompts/get",
                "--prompt-name",
                "summarize",
                "--prompt-args",
                "text=MCP connects models to tools.",
            ],
        )
        .await,
        result(
            era,
            name,
            json!({"messages": [{
                "role": "user",
                "content": {"type": "text", "text": "Summarize in one sentence:\n\nMCP connects models to tools."},
            }]}),
        ),
    );
}

#[tokio::test]
async fn inspector_over_http_on_2025_11_25() {
    quickstart("legacy").await;
}

#[tokio::test]
async fn inspector_over_http_on_2026_07_28() {
    quickstart("modern").await;
}

#[tokio::test]
async fn inspector_over_stdio_on_2025_11_25() {
    stdio("legacy").await;
}

#[tokio::test]
async fn inspector_over_stdio_on_2026_07_28() {
    stdio("modern").await;
}

/// Left to choose (`--protocol-era auto`), the Inspector asks `server/discover` first and
/// settles on 2026-07-28, over either transport.
#[tokio::test]
async fn inspector_picks_2026_07_28_when_left_to_choose() {
    let home = Home::new("auto");
    let server = Quickstart::start().await;
    for (target, name) in [
        (Target::Http(server.url.clone()), "quickstart"),
        (Target::Stdio(example_binary("stdio")), "sake-stdio"),
    ] {
        let out = inspect(&home, &target, "auto", &["--method", "initialize"]).await;
        same(&out["result"]["protocolVersion"], json!("2026-07-28"));
        same(
            &out["result"]["serverInfo"],
            json!({"name": name, "version": "0.1.0"}),
        );
    }
}
