//! `cargo sake call` and `cargo sake list` end to end, against real example servers of this
//! workspace: `examples/stdio` started over stdio (`--stdio`), and `examples/quickstart` over
//! Streamable HTTP (`--url`), at the newest revision and a handshake one. Exact stdout, stderr
//! and exit status: the result as JSON or text, progress on stderr before the result, an
//! elicitation answered on stdin (a prompt per field), 1 for an error result, 2 for a failed
//! call. (`call` against the dev server, its default, is in tests/cli.rs.)

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const CARGO_SAKE: &str = env!("CARGO_BIN_EXE_cargo-sake");

/// The workspace's target directory (the test runs from `<target>/<profile>/deps/`).
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.ancestors().nth(3).unwrap().to_path_buf()
}

/// Builds the workspace's example `name` and returns its path.
fn example(name: &str) -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
    let status = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
        .args(["build", "--quiet", "--example", name, "--manifest-path"])
        .arg(manifest)
        .env("CARGO_TARGET_DIR", target_dir())
        .status()
        .unwrap();
    assert!(status.success(), "building the example {name}");
    target_dir().join("debug/examples").join(name)
}

/// `cargo sake ARGS`, with `stdin` as its input.
fn sake(args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(CARGO_SAKE)
        .args(args)
        .env("NO_COLOR", "1")
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

/// stdout, stderr and the exit status.
fn outcome(out: &Output) -> (String, String, Option<i32>) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code(),
    )
}

fn strings(a: &str, b: &str, code: i32) -> (String, String, Option<i32>) {
    (a.to_owned(), b.to_owned(), Some(code))
}

#[test]
fn call_and_list_over_stdio() {
    let server = example("stdio").display().to_string();
    let s = server.as_str();

    assert_eq!(
        outcome(&sake(
            &["call", "add", r#"{"a": 2, "b": 3}"#, "--stdio", s],
            ""
        )),
        strings(
            r#"{
  "content": [
    {
      "type": "text",
      "text": "{\"sum\":5}"
    }
  ],
  "structuredContent": {
    "sum": 5
  },
  "_meta": {
    "io.modelcontextprotocol/serverInfo": {
      "name": "sake-stdio",
      "version": "0.1.0"
    }
  }
}
"#,
            "",
            0
        )
    );

    // Progress on stderr, before the result.
    assert_eq!(
        outcome(&sake(
            &["call", "sleep", r#"{"millis": 40}"#, "--text", "--stdio", s],
            ""
        )),
        strings(
            "slept 40 ms\n",
            "progress 1/4\nprogress 2/4\nprogress 3/4\nprogress 4/4\n",
            0
        )
    );

    // The server asks; the answer is typed (here, piped) at the prompt of its one field. At a
    // handshake revision too, where the question is a request on the call's stream.
    for revision in ["2026-07-28", "2025-11-25"] {
        assert_eq!(
            outcome(&sake(
                &[
                    "call",
                    "greet_me",
                    "--text",
                    "--revision",
                    revision,
                    "--stdio",
                    s
                ],
                "Ada\n"
            )),
            strings(
                "Hello, Ada!\n",
                "the server asks: What is your name?\n  name (string) — Your name.: ",
                0
            ),
            "{revision}"
        );
    }
    // No answer (end of input): declined.
    assert_eq!(
        outcome(&sake(&["call", "greet_me", "--text", "--stdio", s], "")),
        strings(
            "Hello, stranger!\n",
            "the server asks: What is your name?\n  name (string) — Your name.: \n  (end of input: declined)\n",
            0
        )
    );

    // A tool that does not exist: the call fails (2).
    assert_eq!(
        outcome(&sake(&["call", "nope", "--stdio", s], "")),
        strings(
            "",
            "error: calling the tool `nope`: the server answered tools/call with an error: Unknown tool: nope (-32602)\n",
            2
        )
    );
    // Arguments that are not an object.
    assert_eq!(
        outcome(&sake(&["call", "add", "[1, 2]", "--stdio", s], "")),
        strings(
            "",
            "error: the arguments must be a JSON object, e.g. '{\"name\": \"Ada\"}'\n",
            2
        )
    );

    assert_eq!(
        outcome(&sake(&["list", "--text", "--stdio", s], "")),
        strings(
            "tool add  Adds two numbers.
tool greet_me  Asks the user for their name, then greets them.
tool haiku  Asks the client's model for a haiku about `topic`.
tool sleep  Waits `millis` milliseconds (at most 10 s), reporting progress; cancellable.
prompt summarize  Asks for a summary of a text.
resource notes://hello  A short note.
",
            "",
            0
        )
    );
    assert_eq!(
        outcome(&sake(&["list", "prompts", "--stdio", s], "")),
        strings(
            r#"[
  {
    "name": "summarize",
    "description": "Asks for a summary of a text.",
    "arguments": [
      {
        "name": "text",
        "description": "The text to summarize.",
        "required": true
      }
    ]
  }
]
"#,
            "",
            0
        )
    );
}

/// The quickstart, on a free port, quiet; killed at the end.
struct Quickstart {
    child: std::process::Child,
    url: String,
}

impl Quickstart {
    fn start() -> Quickstart {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(example("quickstart"))
            .env("PORT", port.to_string())
            .env("SAKE_QUIET", "1")
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "the quickstart did not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
        Quickstart {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }
}

impl Drop for Quickstart {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn call_and_list_over_http() {
    let server = Quickstart::start();
    let url = server.url.clone();
    let url = url.as_str();

    // Progress with messages, at 2026-07-28 and on a handshake revision's SSE stream.
    for revision in ["2026-07-28", "2025-06-18"] {
        assert_eq!(
            outcome(&sake(
                &[
                    "call",
                    "count",
                    r#"{"to": 3}"#,
                    "--text",
                    "--url",
                    url,
                    "--revision",
                    revision
                ],
                ""
            )),
            strings(
                "Counted to 3.\n",
                "progress 1/3: 1 of 3\nprogress 2/3: 2 of 3\nprogress 3/3: 3 of 3\n",
                0
            ),
            "{revision}"
        );
    }

    // An error result: printed, and exit status 1.
    assert_eq!(
        outcome(&sake(&["call", "count", r#"{"to": 60}"#, "--url", url], "")),
        strings(
            r#"{
  "content": [
    {
      "type": "text",
      "text": "60 is too far: count to 50 at most"
    }
  ],
  "isError": true,
  "_meta": {
    "io.modelcontextprotocol/serverInfo": {
      "name": "quickstart",
      "version": "0.1.0"
    }
  }
}
"#,
            "",
            1
        )
    );

    // The arguments from stdin.
    assert_eq!(
        outcome(&sake(
            &["call", "greet", "-", "--text", "--url", url],
            r#"{"name": "Ada", "shout": true}"#
        )),
        strings("HELLO, ADA!\n", "", 0)
    );

    assert_eq!(
        outcome(&sake(&["list", "--text", "--url", url], "")),
        strings(
            "tool add  Adds two numbers.
tool count  Counts to `to`, one step every 100 ms, reporting progress when the client asks for it.
tool greet  Greets someone by name.
prompt review  Asks the model to review a piece of code.
resource docs://about  What this server is.
template users://{id}/profile  A user's profile, by numeric id (users 1 to 3 exist).
",
            "",
            0
        )
    );

    // Nothing listens there: the call fails (2), saying where it tried.
    drop(server);
    let out = sake(&["list", "--url", url], "");
    let (stdout, stderr, code) = outcome(&out);
    assert_eq!((stdout.as_str(), code), ("", Some(2)));
    assert!(
        stderr.starts_with(&format!("error: cannot connect to {url}: ")),
        "{stderr}"
    );
}
