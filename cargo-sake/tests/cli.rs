//! `cargo sake` end to end, as a new user runs it, on one crate it makes outside this workspace
//! (with no flag: a `cargo sake` built from this checkout, whose version is not on crates.io,
//! makes the crate depend on the checkout, so CI needs no release):
//!
//! 1. `new` → `cargo test` passes in the new crate at once (its snapshot matches), and the code
//!    it wrote is formatted;
//! 2. `schemas` prints the lists of all four revisions, equal to the crate's snapshot; `--table`
//!    and `--profile` print the table and a compatibility report; `--check` passes;
//! 3. `dev`, with a 2025-11-25 session and its GET stream open: a build error leaves the
//!    running server serving; a changed doc comment restarts it (the table of what each
//!    revision lists and its warnings printed), and the same session id lists the new
//!    description, a 2026-07-28 `requestState` from before the restart completes its call, the
//!    session's reconnected stream opens with `notifications/tools/list_changed`, and so does a
//!    2026-07-28 listen stream;
//! 4. `schemas --check` then fails, naming the changed description;
//! 5. Ctrl-C (`SIGINT` to `cargo sake` alone) stops the server, the watcher and the MCP Inspector
//!    it started (`--inspector`, the pinned one from `$SAKE_NODE_MODULES`): no process is left.
//!
//! `new --axum --auth --redis` writes a crate that compiles without a warning and is formatted.
//!
//! While `dev` runs: `call` (an elicitation declined at the prompt, a result as JSON) and
//! `list --text` reach the dev server by default.
//!
//! `install vscode --print` on the new crate prints an entry that starts its binary with
//! `--stdio`.
//!
//! And `card`: on the new crate, which has no listing, what to do; on `examples/installable`
//! (`sake-demo`), its server card as served and its `server.json` as `sake-demo --server-json`
//! prints it.
//!
//! The new crate shares this workspace's target directory and `Cargo.lock` (and its profile
//! settings), so its build reuses what the workspace built: one extra build, of the crate and
//! what differs in features.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::StreamExt as _;
use serde_json::{Value, json};

const CARGO_SAKE: &str = env!("CARGO_BIN_EXE_cargo-sake");

/// The longest a step of `cargo sake dev` may take (a build of the crate, on a busy machine).
const SAKE_WAIT: u64 = 120;

/// A tool the test adds to the new crate: it asks the user's name.
const ASK_NAME: &str = r#"
#[derive(serde::Deserialize, JsonSchema)]
struct NameForm {
    name: String,
}

/// Asks the user's name, then greets them.
#[tool]
async fn ask_name(ctx: Context) -> Result<String, InputError> {
    Ok(
        match ctx.elicit::<NameForm>("user_name", "What is your name?").await? {
            Elicitation::Accepted(form) => format!("Hello, {}!", form.name),
            Elicitation::Declined | Elicitation::Cancelled => "Hello, stranger!".into(),
        },
    )
}
"#;

/// `ask_name`'s description.
const ASKS: &str = "Asks the user's name, then greets them.";

/// This workspace: the sake checkout the new crate depends on.
fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The workspace's target directory (the test runs from `<target>/<profile>/deps/`).
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent()
        .unwrap()
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf()
}

/// A directory outside the workspace, with the workspace's profile settings (so that the new
/// crate's dependencies are the ones the workspace built), removed at the end.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("cargo-sake-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join(".cargo")).unwrap();
        std::fs::write(
            dir.join(".cargo/config.toml"),
            "[profile.dev]\ndebug = \"line-tables-only\"\n\n[profile.dev.package.\"*\"]\ndebug = false\n",
        )
        .unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        // After a failure, processes killed a moment ago may still be writing in it.
        for _ in 0..20 {
            if std::fs::remove_dir_all(&self.0).is_ok() || !self.0.exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// A command in `dir` that builds into the workspace's target directory.
fn command(program: impl AsRef<std::ffi::OsStr>, dir: &Path) -> Command {
    let mut cmd = Command::new(program);
    cmd.current_dir(dir)
        .env("CARGO_TARGET_DIR", target_dir())
        .env("NO_COLOR", "1")
        .stdin(Stdio::null());
    cmd
}

fn cargo_sake(dir: &Path, args: &[&str]) -> Output {
    let mut cmd = command(CARGO_SAKE, dir);
    cmd.arg("sake").args(args);
    cmd.output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn ok(what: &str, out: &Output) {
    assert!(
        out.status.success(),
        "{what} failed ({}):\nstdout:\n{}\nstderr:\n{}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    );
}

/// Text without the terminal's colour codes (the server's logs have them).
fn plain(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// A free port.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `cargo sake dev` running, its output (stdout and stderr, the server's and the Inspector's
/// among it) collected line by line.
struct Dev {
    child: std::process::Child,
    lines: Arc<Mutex<Vec<String>>>,
    seen: usize,
}

impl Dev {
    fn start(dir: &Path, args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> Dev {
        use std::os::unix::process::CommandExt as _;
        let mut cmd = command(CARGO_SAKE, dir);
        cmd.arg("sake")
            .arg("dev")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own process group, as a shell gives a foreground job.
            .process_group(0);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().unwrap();
        let lines = Arc::new(Mutex::new(Vec::new()));
        for stream in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let lines = lines.clone();
            std::thread::spawn(move || {
                use std::io::BufRead as _;
                for line in std::io::BufReader::new(stream).lines() {
                    let Ok(line) = line else { break };
                    lines.lock().unwrap().push(plain(&line));
                }
            });
        }
        Dev {
            child,
            lines,
            seen: 0,
        }
    }

    fn output(&self) -> String {
        self.lines.lock().unwrap().join("\n")
    }

    /// Waits for a line (after the ones already waited for) that `matches`, and returns it.
    async fn wait_for(&mut self, what: &str, matches: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(SAKE_WAIT);
        loop {
            {
                let lines = self.lines.lock().unwrap();
                if let Some(i) = lines[self.seen..].iter().position(|l| matches(l)) {
                    self.seen += i + 1;
                    return lines[self.seen - 1].clone();
                }
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "cargo sake dev exited ({status}) before {what}:\n{}",
                    self.output()
                );
            }
            assert!(
                Instant::now() < deadline,
                "no {what} in:\n{}",
                self.output()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits for `serving http://127.0.0.1:<port>/mcp (pid N)` and returns N.
    async fn serving(&mut self, port: u16) -> u32 {
        let needle = format!("serving http://127.0.0.1:{port}/mcp (pid ");
        let line = self
            .wait_for("the server serving", |l| l.contains(&needle))
            .await;
        let pid = line.split(&needle).nth(1).unwrap().trim_end_matches(')');
        pid.parse().unwrap()
    }
}

impl Drop for Dev {
    fn drop(&mut self) {
        // A failed test leaves nothing behind either.
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(self.child.id() as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
        for pid in descendants(self.child.id()) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
        let _ = self.child.wait();
    }
}

/// A process as `/proc/<pid>/stat` says: its parent, its group, whether it is a zombie.
fn stat(pid: u32) -> Option<(u32, u32, bool)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // `pid (comm) state ppid pgrp …`; comm may hold spaces and parentheses.
    let rest = &text[text.rfind(')')? + 2..];
    let mut fields = rest.split(' ');
    let state = fields.next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((ppid, pgrp, state == "Z"))
}

fn all_pids() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect()
}

/// Every living descendant of `root`.
fn descendants(root: u32) -> Vec<u32> {
    let table: Vec<(u32, u32)> = all_pids()
        .into_iter()
        .filter_map(|p| stat(p).filter(|s| !s.2).map(|s| (p, s.0)))
        .collect();
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        found.extend(
            table
                .iter()
                .filter(|(_, pp)| *pp == parent)
                .map(|(p, _)| *p),
        );
        i += 1;
    }
    found.remove(0);
    found
}

/// The processes, not zombies, among `pids` or in the process groups `groups`.
fn alive(pids: &HashSet<u32>, groups: &HashSet<u32>) -> Vec<String> {
    all_pids()
        .into_iter()
        .filter_map(|p| {
            let (_, pgrp, zombie) = stat(p)?;
            let ours = pids.contains(&p) || groups.contains(&pgrp);
            (ours && !zombie).then(|| {
                let cmd = std::fs::read_to_string(format!("/proc/{p}/cmdline")).unwrap_or_default();
                format!("{p} (group {pgrp}): {}", cmd.replace('\0', " "))
            })
        })
        .collect()
}

/// A minimal MCP client over Streamable HTTP, raw: what an MCP client sends.
struct Http {
    client: reqwest::Client,
    url: String,
}

impl Http {
    fn new(port: u16) -> Http {
        Http {
            client: reqwest::Client::new(),
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }

    fn post(&self, session: Option<&str>, body: Value) -> reqwest::RequestBuilder {
        let mut req = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string());
        if let Some(sid) = session {
            req = req
                .header("mcp-session-id", sid)
                .header("mcp-protocol-version", "2025-11-25");
        }
        req
    }

    /// `initialize` at 2025-11-25 and `notifications/initialized`: the session id.
    async fn open_session(&self) -> String {
        let resp = self
            .post(
                None,
                json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {},
                    "clientInfo": {"name": "cargo-sake-test", "version": "1.0.0"}}}),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        let sid = resp.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned();
        let body: Value = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
        assert_eq!(body["result"]["protocolVersion"], "2025-11-25");
        let resp = self
            .post(
                Some(&sid),
                json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 202);
        sid
    }

    /// A 2026-07-28 `tools/call` of `name` (no session: everything in `_meta`), with the client
    /// able to answer elicitation; `more` goes into the params (`inputResponses`,
    /// `requestState`). The result.
    async fn call_modern(&self, id: u64, name: &str, more: Value) -> Value {
        let mut params = json!({"name": name, "arguments": {}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
            "io.modelcontextprotocol/clientInfo": {"name": "cargo-sake-test", "version": "1.0.0"}}});
        if let Value::Object(m) = more {
            params.as_object_mut().unwrap().extend(m);
        }
        let resp = self
            .post(
                None,
                json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}),
            )
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/call")
            .header("mcp-name", name)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        let body: Value = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
        body["result"].clone()
    }

    /// The tool names and descriptions the session lists, by name.
    async fn descriptions(&self, sid: &str) -> Value {
        let resp = self
            .post(
                Some(sid),
                json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200, "the session is served");
        let body: Value = serde_json::from_slice(&resp.bytes().await.unwrap()).unwrap();
        let tools = body["result"]["tools"].as_array().unwrap();
        let mut pairs: Vec<Value> = tools
            .iter()
            .map(|t| json!([t["name"], t["description"]]))
            .collect();
        pairs.sort_by_key(|p| p[0].as_str().unwrap_or_default().to_owned());
        Value::Array(pairs)
    }

    /// The session's GET stream.
    async fn get_stream(&self, sid: &str) -> Sse {
        let resp = self
            .client
            .get(&self.url)
            .header("accept", "text/event-stream")
            .header("mcp-session-id", sid)
            .header("mcp-protocol-version", "2025-11-25")
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        Sse::new(resp)
    }
}

/// An SSE body, read event by event.
struct Sse {
    body: futures_util::stream::BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    buffer: String,
}

/// What an SSE stream gives next.
#[derive(Debug, PartialEq)]
enum Event {
    /// A `data:` event, parsed.
    Data(Value),
    /// Only comment lines (`: stream open`, keep-alives).
    Comment(String),
    /// The stream ended.
    End,
}

impl Sse {
    fn new(resp: reqwest::Response) -> Sse {
        Sse {
            body: resp.bytes_stream().boxed(),
            buffer: String::new(),
        }
    }

    async fn next(&mut self) -> Event {
        loop {
            if let Some(at) = self.buffer.find("\n\n") {
                let event: String = self.buffer.drain(..at + 2).collect();
                let data: Vec<&str> = event
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(str::trim)
                    .collect();
                return if data.is_empty() {
                    Event::Comment(event.trim().to_owned())
                } else {
                    Event::Data(serde_json::from_str(&data.join("\n")).unwrap())
                };
            }
            match tokio::time::timeout(Duration::from_secs(60), self.body.next()).await {
                Ok(Some(Ok(chunk))) => self.buffer.push_str(&String::from_utf8_lossy(&chunk)),
                Ok(Some(Err(_)) | None) => return Event::End,
                Err(_) => panic!("the stream said nothing for 60 s"),
            }
        }
    }

    /// The next data event, past comments.
    async fn data(&mut self) -> Value {
        loop {
            match self.next().await {
                Event::Data(v) => return v,
                Event::Comment(_) => continue,
                Event::End => panic!("the stream ended"),
            }
        }
    }
}

/// The lists of every revision, from the new crate's snapshot file.
fn snapshot_lists(krate: &Path) -> Value {
    let text =
        std::fs::read_to_string(krate.join("src/snapshots/demo__tests__lists.snap")).unwrap();
    let body = text.splitn(3, "---\n").nth(2).unwrap();
    serde_json::from_str(body).unwrap()
}

/// One test at a time: each builds into the shared target directory, whose lock would make the
/// others' timed steps wait.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[test]
fn a_new_server_tested_served_and_kept_across_restarts() {
    let _serial = serial();
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(new_test_serve_restart_stop());
}

/// `cargo sake new` with every option writes a crate that compiles without a warning (its code
/// and its tests; the plain crate's tests run above).
#[test]
fn new_with_every_option_compiles() {
    let _serial = serial();
    let scratch = Scratch::new("options");
    let out = cargo_sake(
        &scratch.0,
        &[
            "new",
            "full",
            "--axum",
            "--auth",
            "--redis",
            "--sake-path",
            workspace().to_str().unwrap(),
            "--vcs",
            "none",
        ],
    );
    ok("cargo sake new --axum --auth --redis", &out);
    let krate = scratch.0.join("full");
    let cargo_toml = std::fs::read_to_string(krate.join("Cargo.toml")).unwrap();
    assert!(
        cargo_toml.contains("features = [\"auth\", \"redis\"]") && cargo_toml.contains("axum = "),
        "{cargo_toml}"
    );
    std::fs::copy(workspace().join("Cargo.lock"), krate.join("Cargo.lock")).unwrap();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = command(&cargo, &krate)
        .args(["check", "--all-targets", "--message-format=short"])
        .output()
        .unwrap();
    ok("cargo check in the new crate", &out);
    let warnings: Vec<String> = text(&out.stderr)
        .lines()
        .filter(|l| l.contains("warning"))
        .map(str::to_owned)
        .collect();
    assert!(warnings.is_empty(), "{warnings:#?}");
    let out = command(&cargo, &krate)
        .args(["fmt", "--check"])
        .output()
        .unwrap();
    ok("cargo fmt --check in the new crate", &out);
}

async fn new_test_serve_restart_stop() {
    let node_modules = std::env::var_os("SAKE_NODE_MODULES").map(PathBuf::from).expect(
        "SAKE_NODE_MODULES: the pinned MCP Inspector (scripts/test.sh installs it into .tools/)",
    );
    let node = std::env::var_os("SAKE_NODE").expect("SAKE_NODE: the pinned Node (scripts/test.sh)");
    let inspector =
        node_modules.join("@modelcontextprotocol/inspector/clients/launcher/build/index.js");
    assert!(inspector.is_file(), "no {}", inspector.display());

    // 1. new, then cargo test in the new crate. No flag: this `cargo sake` is built from this
    // checkout, whose version crates.io does not have, so the crate depends on the checkout.
    let scratch = Scratch::new("e2e");
    let out = cargo_sake(&scratch.0, &["new", "demo", "--vcs", "none"]);
    ok("cargo sake new", &out);
    let v = env!("CARGO_PKG_VERSION");
    let root = workspace();
    assert!(
        text(&out.stderr).contains(&format!(
            "Created `demo`: an MCP server with one tool, `greet`, in demo/src/main.rs\n\
             It depends on the checkout of sake at {}: sake-mcp {v} is not on crates.io yet \
             (pass --published once it is).\n",
            root.display()
        )),
        "{}",
        text(&out.stderr)
    );
    let krate = scratch.0.join("demo");
    for file in ["Cargo.toml", "src/main.rs", "src/tests.rs", "README.md"] {
        assert!(krate.join(file).is_file(), "{file}");
    }
    let manifest = std::fs::read_to_string(krate.join("Cargo.toml")).unwrap();
    assert!(
        manifest.contains(&format!(
            "[dependencies]\n\
             # sake-mcp {v} is not on crates.io yet: the checkout `cargo sake` was built from; once published:\n\
             # sake-mcp = \"{v}\"\n\
             sake-mcp = {{ path = \"{}\" }}\n",
            root.display()
        )),
        "{manifest}"
    );
    // The versions this workspace is tested with (and built: its target directory is shared).
    std::fs::copy(workspace().join("Cargo.lock"), krate.join("Cargo.lock")).unwrap();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let out = command(&cargo, &krate)
        .args(["test"])
        // insta as on CI: a snapshot that differs fails, nothing is written.
        .env("CI", "true")
        .env("INSTA_UPDATE", "no")
        .output()
        .unwrap();
    ok("cargo test in the new crate", &out);
    assert!(
        text(&out.stdout).contains("test result: ok. 4 passed; 0 failed"),
        "{}",
        text(&out.stdout)
    );
    assert!(
        !krate
            .join("src/snapshots/demo__tests__lists.snap.new")
            .exists()
    );
    let out = command(&cargo, &krate)
        .args(["fmt", "--check"])
        .output()
        .unwrap();
    ok("cargo fmt --check in the new crate", &out);

    // 2. schemas: the lists of all four revisions, as the crate's snapshot holds them.
    let out = cargo_sake(&krate, &["schemas"]);
    ok("cargo sake schemas", &out);
    let lists: Value = serde_json::from_slice(&out.stdout).unwrap();
    let revisions: Vec<&String> = lists.as_object().unwrap().keys().collect();
    assert_eq!(
        revisions,
        ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"]
    );
    for (rev, l) in lists.as_object().unwrap() {
        assert_eq!(l["tools"][0]["name"], "greet", "{rev}");
        assert_eq!(
            l["tools"][0]["description"], "Greets someone by name.",
            "{rev}"
        );
        assert_eq!(
            l["tools"][0]["inputSchema"]["properties"]["name"],
            json!({"type": "string", "description": "Who to greet."}),
            "{rev}"
        );
        assert_eq!(
            (
                l["prompts"].clone(),
                l["resources"].clone(),
                l["resourceTemplates"].clone()
            ),
            (json!([]), json!([]), json!([])),
            "{rev}"
        );
    }
    assert_eq!(lists, snapshot_lists(&krate));
    let out = cargo_sake(&krate, &["schemas", "--table"]);
    ok("cargo sake schemas --table", &out);
    assert_eq!(
        text(&out.stdout),
        "                      2026-07-28  2025-11-25  2025-06-18  2025-03-26\n\
         tools                          1           1           1           1\n\
         \x20 greet                        ✓           ✓           ✓           ✓\n\
         prompts                        0           0           0           0\n\
         resources                      0           0           0           0\n\
         resource templates             0           0           0           0\n"
    );
    let out = cargo_sake(
        &krate,
        &["schemas", "--profile", "openai", "--profile", "vscode"],
    );
    ok("cargo sake schemas --profile", &out);
    let reports: Value = serde_json::from_slice(&out.stdout).unwrap();
    let summary: Vec<Value> = reports
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let rules: Vec<Value> = r["findings"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| json!([f["tool"], f["part"], f["pointer"], f["rule"]]))
                .collect();
            json!([r["profile"], r["tools"], rules])
        })
        .collect();
    assert_eq!(
        summary,
        [
            json!([
                "openai-strict",
                1,
                [["greet", "inputSchema", "", "openai.additional-properties"]]
            ]),
            json!(["vscode", 1, []])
        ]
    );
    let out = cargo_sake(&krate, &["schemas", "--check"]);
    ok("cargo sake schemas --check", &out);
    assert!(
        text(&out.stderr).contains("ok: the server lists what "),
        "{}",
        text(&out.stderr)
    );

    // card: the new crate has no listing yet, and is told how to make one.
    let out = cargo_sake(&krate, &["card"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("error: demo (bin `demo`) has no listing: no server card at /mcp/server-card. Give the server one with `Server::listing("),
        "{stderr}"
    );

    // install: the crate's binary serves stdio with `--stdio` (tried first): a VS Code entry
    // that starts it, printed.
    let out = cargo_sake(&krate, &["install", "vscode", "--print"]);
    ok("cargo sake install vscode --print", &out);
    let program = target_dir().join("debug/demo").canonicalize().unwrap();
    assert_eq!(
        text(&out.stdout),
        format!(
            "{{\n  \"servers\": {{\n    \"demo\": {{\n      \"type\": \"stdio\",\n      \"command\": \"{}\",\n      \"args\": [\n        \"--stdio\"\n      ]\n    }}\n  }}\n}}\n",
            program.display()
        )
    );

    // A second tool, one that asks the user (on 2026-07-28: `input_required` and a signed
    // `requestState`, which the client sends back with the answer).
    let main_rs = krate.join("src/main.rs");
    let mut source = std::fs::read_to_string(&main_rs).unwrap();
    source.push_str(ASK_NAME);
    std::fs::write(&main_rs, &source).unwrap();

    // 3. dev, with a 2025-11-25 session open across a failed build and a restart. (What an
    // earlier run of this test kept of its server goes: this run's first start is a first.)
    let _ = std::fs::remove_dir_all(target_dir().join("sake/demo-bin-demo"));
    let port = free_port();
    let home = scratch.0.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let [client_port, server_port, app_port] =
        [free_port(), free_port(), free_port()].map(|p| p.to_string());
    let mut dev = Dev::start(
        &krate,
        &[
            "--port",
            &port.to_string(),
            "--inspector",
            "--inspector-command",
            inspector.to_str().unwrap(),
        ],
        &[
            ("SAKE_NODE", node.as_os_str()),
            ("HOME", home.as_os_str()),
            ("MCP_STORAGE_DIR", home.as_os_str()),
            ("MCP_AUTO_OPEN_ENABLED", "false".as_ref()),
            ("CLIENT_PORT", client_port.as_ref()),
            ("SERVER_PORT", server_port.as_ref()),
            ("MCP_APP_ORIGIN_PORT", app_port.as_ref()),
        ],
    );
    let first = dev.serving(port).await;
    let http = Http::new(port);
    let sid = http.open_session().await;
    assert_eq!(
        http.descriptions(&sid).await,
        json!([["ask_name", ASKS], ["greet", "Greets someone by name."]])
    );
    // How to connect, said once; then `call` and `list` reach the dev server by default (its
    // kept port). `ask_name`'s question is asked at the prompt of its one field; no answer
    // (stdin is empty) declines it.
    dev.wait_for("how to connect", |l| {
        l == format!("connect: claude mcp add --transport http demo http://127.0.0.1:{port}/mcp")
    })
    .await;
    let out = cargo_sake(&krate, &["call", "ask_name", "--text"]);
    ok("cargo sake call ask_name", &out);
    assert_eq!(
        (text(&out.stdout), text(&out.stderr)),
        (
            "Hello, stranger!\n".to_owned(),
            "the server asks: What is your name?\n  name (string): \n  (end of input: declined)\n"
                .to_owned()
        )
    );
    let out = cargo_sake(&krate, &["call", "greet", r#"{"name": "Ada"}"#]);
    ok("cargo sake call greet", &out);
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        result["structuredContent"],
        json!({"message": "Hello, Ada!"})
    );
    let out = cargo_sake(&krate, &["list", "tools", "--text"]);
    ok("cargo sake list tools --text", &out);
    assert_eq!(
        text(&out.stdout),
        format!("tool ask_name  {ASKS}\ntool greet  Greets someone by name.\n")
    );
    let mut stream = http.get_stream(&sid).await;
    assert_eq!(stream.next().await, Event::Comment(": stream open".into()));
    // A 2026-07-28 call that asks: its question and its state, answered after the restart.
    let asked = http.call_modern(3, "ask_name", json!({})).await;
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    assert_eq!(
        asked["inputRequests"]["user_name"]["method"],
        "elicitation/create"
    );
    let request_state = asked["requestState"].as_str().unwrap().to_owned();

    // A build error: shown, and the server keeps serving the session.
    std::fs::write(&main_rs, format!("{source}\nfn broken( {{\n")).unwrap();
    let failed = dev
        .wait_for("the failed build", |l| l.contains("the build failed"))
        .await;
    assert!(
        failed.contains(&format!(
            "the server keeps running the last good build (pid {first})"
        )),
        "{failed}"
    );
    assert!(
        dev.output().contains("error: "),
        "the compiler's error is shown"
    );
    assert_eq!(
        http.descriptions(&sid).await,
        json!([["ask_name", ASKS], ["greet", "Greets someone by name."]])
    );

    // The fix, with a new doc comment: a restart under the same key.
    let changed = source.replace("/// Greets someone by name.", "/// Greets someone warmly.");
    assert_ne!(changed, source);
    std::fs::write(&main_rs, &changed).unwrap();
    let second = dev.serving(port).await;
    assert_ne!(second, first, "a new process");
    // At each start: the table of what each revision lists, and the warnings.
    dev.wait_for("the table", |l| {
        l.split_whitespace().collect::<Vec<_>>() == ["tools", "2", "2", "2", "2"]
    })
    .await;
    dev.wait_for("the warnings", |l| l == "warnings:").await;
    dev.wait_for("a profile's finding", |l| {
        l.starts_with("  openai-strict: error [openai.additional-properties] tool `ask_name`")
    })
    .await;
    assert!(stat(first).is_none_or(|s| s.2), "the old server is gone");
    // The old process's stream ended with it.
    loop {
        match stream.next().await {
            Event::End => break,
            Event::Comment(_) => continue,
            Event::Data(d) => panic!("unexpected {d}"),
        }
    }
    // The same session id lists the new description.
    assert_eq!(
        http.descriptions(&sid).await,
        json!([["ask_name", ASKS], ["greet", "Greets someone warmly."]])
    );
    // The requestState of the process before is good: the answer completes the call.
    let answered = http
        .call_modern(
            4,
            "ask_name",
            json!({"requestState": request_state,
                   "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Ada"}}}}),
        )
        .await;
    assert_eq!(answered["resultType"], "complete", "{answered}");
    assert_eq!(
        answered["content"],
        json!([{"type": "text", "text": "Hello, Ada!"}])
    );
    // Its reconnected stream opens with the news, once.
    let mut stream = http.get_stream(&sid).await;
    assert_eq!(
        stream.data().await,
        json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {}})
    );
    assert_eq!(stream.next().await, Event::Comment(": stream open".into()));
    drop(stream);
    let mut again = http.get_stream(&sid).await;
    assert_eq!(again.next().await, Event::Comment(": stream open".into()));
    drop(again);
    // A 2026-07-28 listen stream that asks for tool list changes hears of it too.
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "cargo-sake-test", "version": "1.0.0"}
    });
    let resp = http
        .post(
            None,
            json!({"jsonrpc": "2.0", "id": 9, "method": "subscriptions/listen",
                   "params": {"notifications": {"toolsListChanged": true}, "_meta": meta}}),
        )
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let mut listen = Sse::new(resp);
    assert_eq!(
        listen.data().await,
        json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
               "params": {"notifications": {"toolsListChanged": true},
                          "_meta": {"io.modelcontextprotocol/subscriptionId": 9}}})
    );
    assert_eq!(
        listen.data().await,
        json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
               "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": 9}}})
    );
    drop(listen);

    // 5. Ctrl-C: SIGINT to cargo sake alone stops everything it started.
    // The Inspector said it is up (it may take a while on a loaded machine: Node loads its
    // bundles), and serves.
    let deadline = Instant::now() + Duration::from_secs(SAKE_WAIT);
    while !dev.output().contains("MCP Inspector Web is up and running") {
        assert!(
            Instant::now() < deadline,
            "the Inspector did not start:\n{}",
            dev.output()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", client_port.parse::<u16>().unwrap())).is_ok(),
        "the Inspector's web UI listens on CLIENT_PORT"
    );
    let root = dev.child.id();
    let pids: HashSet<u32> = descendants(root).into_iter().collect();
    let groups: HashSet<u32> = pids.iter().filter_map(|p| stat(*p).map(|s| s.1)).collect();
    assert!(pids.contains(&second), "the server is cargo sake's child");
    assert!(pids.len() >= 2, "the server and the Inspector: {pids:?}");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(root as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = dev.child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "cargo sake dev is still running:\n{}",
            dev.output()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(status.success(), "{status}:\n{}", dev.output());
    dev.wait_for("its last word", |l| l.contains("sake dev: stopped"))
        .await;
    let left = alive(&pids, &groups);
    assert!(left.is_empty(), "left running: {left:#?}");
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "the port is free"
    );

    // 4. The snapshot no longer matches: --check fails, naming what changed.
    let out = cargo_sake(&krate, &["schemas", "--check"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    for rev in ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"] {
        assert!(
            stderr.contains(&format!(
                "/{rev}/tools[greet]/description: the snapshot has \"Greets someone by name.\", the server \"Greets someone warmly.\""
            )),
            "{stderr}"
        );
    }
}

#[test]
fn card_prints_the_server_card_and_the_registry_server_json() {
    let _serial = serial();
    let ws = workspace();
    let manifest = ws.join("Cargo.toml");
    let args = [
        "card",
        "--manifest-path",
        manifest.to_str().unwrap(),
        "-p",
        "sake-demo",
        "--",
        "--http",
        "127.0.0.1:{port}",
    ];
    let out = cargo_sake(&ws, &args);
    ok("cargo sake card", &out);
    let both: Value = serde_json::from_slice(&out.stdout).unwrap();
    // server.json, as the server makes it: what `sake-demo --server-json` prints.
    let demo = target_dir().join("debug/sake-demo");
    let printed = command(&demo, &ws).arg("--server-json").output().unwrap();
    ok("sake-demo --server-json", &printed);
    let expected: Value = serde_json::from_slice(&printed.stdout).unwrap();
    assert_eq!(both["serverJson"], expected);
    // The card, as served: its remote is where it was asked.
    let card = &both["serverCard"];
    let url = card["remotes"][0]["url"].as_str().unwrap();
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
        "{url}"
    );
    assert_eq!(
        *card,
        json!({
            "$schema": "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json",
            "name": "io.github.sake-rs/sake-demo",
            "version": "0.1.0",
            "description": "A demo MCP server built with sake: add numbers, count words, explain a topic.",
            "title": "sake demo",
            "websiteUrl": "https://github.com/sake-rs/sake/blob/main/docs/clients.md",
            "repository": {"url": "https://github.com/sake-rs/sake", "source": "github", "subfolder": "examples/installable"},
            "remotes": [{"type": "streamable-http", "url": url,
                         "supportedProtocolVersions": ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"]}]
        })
    );
    // --server-json alone is the document, for `> server.json`.
    let mut only = args.to_vec();
    only.insert(1, "--server-json");
    let out = cargo_sake(&ws, &only);
    ok("cargo sake card --server-json", &out);
    assert_eq!(
        serde_json::from_slice::<Value>(&out.stdout).unwrap(),
        expected
    );
}
