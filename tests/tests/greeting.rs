//! The start-up greeting (issue 42): where the server is, what each revision lists and leaves
//! out (and why), and how to connect a client — in place of the session-key warning, which is
//! given only where it matters (a listener other machines may reach, without a configured key).
//! `SAKE_QUIET=1` hides the greeting; `require_session_key(true)` without a key stays a start-up
//! error.

use std::process::Stdio;

use sake::prelude::*;
use sake_tests::{package_binary, read_greeting, within};
use tokio::io::{AsyncBufReadExt, BufReader};

/// The first four primes: an output schema that is not an object, which the handshake
/// revisions cannot show.
#[tool]
fn primes() -> Vec<u32> {
    vec![2, 3, 5, 7]
}

/// Runs only as a task: the handshake revisions have no tasks.
#[tool(task = "required")]
async fn report() -> String {
    "done".into()
}

/// Adds two numbers.
#[tool]
fn add(a: i64, b: i64) -> String {
    (a + b).to_string()
}

/// Asks for a review.
#[prompt]
fn review(code: String) -> String {
    format!("Review {code}")
}

#[test]
fn the_greeting_says_what_each_revision_lists_and_leaves_out() {
    let service = Server::from_registry()
        .name("greeter")
        .version("1.0.0")
        .build()
        .unwrap();
    assert_eq!(
        service.greeting("127.0.0.1:3000".parse().unwrap()),
        r#"greeter 1.0.0: MCP at http://127.0.0.1:3000/mcp
  2026-07-28                          3 tools, 1 prompt
  2025-11-25, 2025-06-18, 2025-03-26  1 tool, 1 prompt
                                      leaves out tool `primes`: its output schema is not a JSON object (return a struct, or a String for text only)
                                      leaves out tool `report`: it runs only as a task, and this revision has no tasks
connect:
  MCP Inspector  npx @modelcontextprotocol/inspector --cli http://127.0.0.1:3000/mcp --transport http --method tools/list
  Claude Code    claude mcp add --transport http greeter http://127.0.0.1:3000/mcp
  VS Code        .vscode/mcp.json: {"servers":{"greeter":{"type":"http","url":"http://127.0.0.1:3000/mcp"}}}
  or: cargo sake install claude-desktop|claude-code|vscode|cursor
(SAKE_QUIET=1 or Server::quiet hides this greeting)
"#
    );
}

#[test]
fn requiring_a_session_key_without_one_is_still_a_start_up_error() {
    let err = Server::from_registry()
        .name("greeter")
        .require_session_key(true)
        .build()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid configuration: no session key: set Server::session_key or SAKE_SESSION_KEY (at least 32 random bytes, the same on every replica), or drop Server::require_session_key"
    );
}

/// `sake-demo --http ADDR`, with extra environment; its stderr, line by line.
fn demo(
    addr: &str,
    env: &[(&str, &str)],
) -> (
    tokio::process::Child,
    tokio::io::Lines<BufReader<tokio::process::ChildStderr>>,
) {
    let mut child = tokio::process::Command::new(package_binary("sake-demo"))
        .args(["--http", addr])
        .env_remove("SAKE_SESSION_KEY")
        .env_remove("SAKE_QUIET")
        .envs(env.iter().copied())
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    (child, stderr)
}

const WARNING: &str = "no session key configured, and the server listens on 0.0.0.0:";
const WARNING_REST: &str = ", which other machines may reach: a random key is used, so handshake sessions and requestState end when this process does and replicas do not share them. Set Server::session_key or SAKE_SESSION_KEY (at least 32 random bytes, the same on every replica), or Server::require_session_key(true) to refuse to start without one";

/// On every interface without a session key: the warning, then the greeting, whose URL is the
/// loopback one a local client uses.
#[tokio::test]
async fn every_interface_without_a_session_key_warns() {
    let (_child, mut stderr) = demo("0.0.0.0:0", &[("RUST_LOG", "warn")]);
    let (greeting, url, before) = read_greeting(&mut stderr).await;
    let url = url.unwrap();
    let port = url
        .strip_prefix("http://127.0.0.1:")
        .and_then(|r| r.strip_suffix("/mcp"))
        .unwrap();
    assert_eq!(before.len(), 1, "{before:?}");
    // The message, then the structured field.
    let warning = format!("{WARNING}{port}{WARNING_REST} local=0.0.0.0:{port}");
    assert!(
        before[0].contains(" WARN ") && before[0].ends_with(&warning),
        "{:?}",
        before[0]
    );
    assert_eq!(
        greeting.lines().next().unwrap(),
        format!("sake-demo 0.1.0: MCP at {url} (listening on 0.0.0.0:{port}: every interface)")
    );
}

/// With a configured key, no warning on every interface; quiet, no greeting: the first line on
/// stderr is the `info` event that says where it serves.
#[tokio::test]
async fn a_configured_key_silences_the_warning_and_quiet_the_greeting() {
    let (_child, mut stderr) = demo(
        "0.0.0.0:0",
        &[
            ("RUST_LOG", "info"),
            ("SAKE_QUIET", "1"),
            (
                "SAKE_SESSION_KEY",
                "a session key of the replicas, 32 bytes or more",
            ),
        ],
    );
    let first = within("the first log line", stderr.next_line())
        .await
        .unwrap()
        .unwrap();
    assert!(
        first.contains(" INFO ")
            && first.contains("serving MCP on http://0.0.0.0:")
            && first.ends_with("/mcp (revisions 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26)"),
        "{first:?}"
    );
}
