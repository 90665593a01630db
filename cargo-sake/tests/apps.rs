//! `cargo sake dev`'s MCP Apps preview (docs/apps.md, "Previewing views"):
//!
//! - the committed host bridge (`cargo-sake/assets/apps/bridge.js` and its licences) is what
//!   `scripts/apps-bridge.mjs` bundles from the npm packages the tests pin, byte for byte;
//! - the form follows the tool's input schema (`assets/apps/form.mjs`, run in the pinned node);
//! - end to end, in Chromium as tests/apps_browser.rs drives it (playwright-core, Debian's
//!   chromium): on a new crate with a view, `dev` says where the preview is; the page lists the
//!   tool, its form calls it, the view renders in the sandbox proxy on the other loopback name
//!   under the default policy (it cannot fetch), its button's app-only call goes through the
//!   page, the log shows each message; an edit of the view's HTML rebuilds the server and the
//!   page reloads the view with the same inputs. The same binary run without `dev` serves no
//!   preview.
//!
//! Node, its packages and chromium are test peers (scripts/test.sh): without them the tests fail
//! and say so; they never skip.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const CARGO_SAKE: &str = env!("CARGO_BIN_EXE_cargo-sake");
/// The longest a build of the new crate may take on a busy machine.
const SAKE_WAIT: u64 = 240;

/// The view and its two tools, added to a new crate's `main.rs`.
const TALLY: &str = r#"
/// The tally view: what is counted, how many, and a button that adds one.
#[view(uri = "ui://tally/view", html = "tally.html", title = "Tally", prefers_border = false)]
struct TallyView;

/// Something counted, and how many.
#[derive(Serialize, JsonSchema)]
struct Tally {
    /// What is counted.
    label: String,
    /// How many so far.
    count: u64,
}

/// The tallies (a test's few labels).
static TALLIES: std::sync::Mutex<std::collections::BTreeMap<String, u64>> =
    std::sync::Mutex::new(std::collections::BTreeMap::new());

fn tally(label: &str, by: u64) -> CallToolResult {
    let count = {
        let mut tallies = TALLIES.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let count = tallies.entry(label.to_owned()).or_insert(0);
        *count += by;
        *count
    };
    let tally = Tally { label: label.to_owned(), count };
    match CallToolResult::structured(&tally) {
        Ok(mut r) => {
            r.content = vec![Content::text(format!("{label}: {count}"))];
            r
        }
        Err(e) => CallToolResult::error(e.to_string()),
    }
}

/// Shows the tally of something counted in a view with a button that adds one.
#[tool(ui = TallyView)]
fn show_tally(
    /// What is counted, such as "Cups of tea".
    label: String,
) -> CallToolResult {
    tally(&label, 0)
}

/// Adds one to a tally: the view's "+1" button.
#[tool(ui = TallyView, visibility(app))]
fn add_to_tally(
    /// What is counted.
    label: String,
) -> CallToolResult {
    tally(&label, 1)
}
"#;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The workspace's target directory (the test runs from `<target>/<profile>/deps/`).
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.ancestors().nth(3).unwrap().to_path_buf()
}

fn node() -> (PathBuf, PathBuf) {
    let node = std::env::var_os("SAKE_NODE")
        .map(PathBuf::from)
        .expect("SAKE_NODE: the pinned Node (scripts/test.sh installs it into .tools/)");
    let modules = std::env::var_os("SAKE_NODE_MODULES").map(PathBuf::from).expect(
        "SAKE_NODE_MODULES: the pinned npm packages (scripts/test.sh installs them into .tools/)",
    );
    (node, modules)
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

/// A scratch directory, removed at the end.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("cargo-sake-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        for _ in 0..20 {
            if std::fs::remove_dir_all(&self.0).is_ok() || !self.0.exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

#[test]
fn the_committed_bridge_is_the_pinned_packages_bundle() {
    let (node, modules) = node();
    let scratch = Scratch::new("bridge");
    let out = Command::new(&node)
        .arg(workspace().join("scripts/apps-bridge.mjs"))
        .arg(&scratch.0)
        .env("SAKE_NODE_MODULES", &modules)
        .output()
        .unwrap();
    ok("scripts/apps-bridge.mjs", &out);
    let assets = workspace().join("cargo-sake/assets/apps");
    for file in ["bridge.js", "bridge.LICENSES.txt"] {
        let built = std::fs::read(scratch.0.join(file)).unwrap();
        let committed = std::fs::read(assets.join(file)).unwrap();
        assert!(
            built == committed,
            "cargo-sake/assets/apps/{file} is not what the pinned packages bundle to: run scripts/apps-bridge.sh and commit it"
        );
    }
    let bridge = std::fs::read_to_string(assets.join("bridge.js")).unwrap();
    assert!(
        bridge.starts_with(
            "/* The host bridge of cargo sake dev's MCP Apps preview: @modelcontextprotocol/ext-apps 2.0.4 (AppBridge) and @modelcontextprotocol/client 2.4.0,"
        ),
        "{}",
        &bridge[..200]
    );
    let licences = std::fs::read_to_string(assets.join("bridge.LICENSES.txt")).unwrap();
    // Each package's heading: the line between two rules.
    let lines: Vec<&str> = licences.lines().collect();
    let packages: Vec<&str> = lines
        .windows(3)
        .filter(|w| w[0].starts_with("====") && w[2].starts_with("===="))
        .map(|w| w[1])
        .collect();
    assert_eq!(
        packages,
        [
            "@modelcontextprotocol/client 2.4.0 (Apache-2.0)",
            "@modelcontextprotocol/core 2.4.0 (Apache-2.0)",
            "@modelcontextprotocol/ext-apps 2.0.4 (MIT)",
            "eventsource 3.0.7 (MIT)",
            "eventsource-parser 3.1.1 (MIT)",
            "jose 6.2.18 (MIT)",
            "pkce-challenge 5.0.1 (MIT)",
            "zod 4.6.7 (MIT)",
        ]
    );
}

/// Runs `form.mjs`'s fieldsOf and argumentsOf on each case (`{schema, values}`).
fn form(cases: Value) -> Value {
    use std::io::Write as _;
    let (node, _) = node();
    let mut child = Command::new(node)
        .arg(workspace().join("cargo-sake/tests/apps/form.mjs"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(cases.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    ok("tests/apps/form.mjs", &out);
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_form_follows_the_input_schema() {
    let schema = json!({
        "type": "object",
        "properties": {
            "label": {"type": "string", "title": "Label", "description": "What is counted."},
            "by": {"type": ["integer", "null"], "default": 1},
            "ratio": {"type": "number"},
            "loud": {"type": "boolean"},
            "mode": {"enum": ["a", "b", 3]},
            "unit": {"oneOf": [{"const": "g"}, {"const": "kg"}]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "maybe": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        },
        "required": ["label", "loud", "unit"],
    });
    let field = |name: &str, label: &str, kind: &str, required: bool| {
        json!({"name": name, "label": label, "description": "", "kind": kind,
            "required": required, "options": null, "initial": "", "values": null})
    };
    let mut label = field("label", "Label", "text", true);
    label["description"] = json!("What is counted.");
    let mut by = field("by", "by", "integer", false);
    by["initial"] = json!("1");
    let mut loud = field("loud", "loud", "boolean", true);
    loud["options"] = json!(["true", "false"]);
    let mut mode = field("mode", "mode", "enum", false);
    mode["options"] = json!(["", "a", "b", "3"]);
    mode["values"] = json!(["a", "b", 3]);
    let mut unit = field("unit", "unit", "enum", true);
    unit["options"] = json!(["g", "kg"]);
    unit["values"] = json!(["g", "kg"]);
    let fields = json!([
        label,
        by,
        field("ratio", "ratio", "number", false),
        loud,
        mode,
        unit,
        field("tags", "tags", "json", false),
        field("maybe", "maybe", "text", false),
        field("either", "either", "json", false),
    ]);
    let all = json!({"label": "Cups of tea", "by": " 2 ", "ratio": "0.5", "loud": "false",
        "mode": "3", "unit": "kg", "tags": "[\"hot\"]", "maybe": "", "either": "7"});
    let with = |k: &str, v: &str| {
        let mut values = all.clone();
        values[k] = json!(v);
        json!({"schema": schema, "values": values})
    };
    let results = form(json!([
        {"schema": schema, "values": all},
        // Empty optional fields are left out.
        {"schema": schema, "values": {"label": "x", "loud": "true", "unit": "g"}},
        with("label", ""),
        with("loud", ""),
        with("by", "2.5"),
        with("ratio", "many"),
        with("mode", "c"),
        with("tags", "[hot"),
        // Not an object schema, or none: no fields, no arguments.
        {"schema": {"type": "string"}, "values": {}},
        {"schema": null, "values": {}},
    ]));
    let results = results.as_array().unwrap();
    assert_eq!(results[0]["fields"], fields);
    assert_eq!(
        results[0]["args"],
        json!({"label": "Cups of tea", "by": 2, "ratio": 0.5, "loud": false, "mode": 3,
            "unit": "kg", "tags": ["hot"], "either": 7})
    );
    assert_eq!(
        results[1]["args"],
        json!({"label": "x", "loud": true, "unit": "g"})
    );
    let errors: Vec<&Value> = results[2..8].iter().map(|r| &r["error"]).collect();
    assert_eq!(
        errors,
        [
            "Label is required",
            "loud is required",
            "by: \"2.5\" is not an integer",
            "ratio: \"many\" is not a number",
            "mode: \"c\" is not one of the choices",
            "tags: not JSON (Unexpected token 'h', \"[hot\" is not valid JSON)",
        ]
    );
    for r in &results[8..] {
        assert_eq!(r, &json!({"fields": [], "args": {}}));
    }
}

/// `cargo sake dev` running, its output collected line by line.
struct Dev {
    child: std::process::Child,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Dev {
    fn start(dir: &Path, port: u16) -> Dev {
        use std::os::unix::process::CommandExt as _;
        let mut child = Command::new(CARGO_SAKE)
            .args(["sake", "dev", "--port", &port.to_string()])
            .current_dir(dir)
            .env("CARGO_TARGET_DIR", target_dir())
            .env("NO_COLOR", "1")
            .env_remove("SAKE_DEV_APPS")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
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
                    lines.lock().unwrap().push(line);
                }
            });
        }
        Dev { child, lines }
    }

    fn output(&self) -> String {
        self.lines.lock().unwrap().join("\n")
    }

    /// Waits for a line equal to `line`.
    fn wait_for(&mut self, line: &str) {
        let deadline = Instant::now() + Duration::from_secs(SAKE_WAIT);
        loop {
            if self.lines.lock().unwrap().iter().any(|l| l == line) {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "cargo sake dev exited ({status}) before {line:?}:\n{}",
                    self.output()
                );
            }
            assert!(
                Instant::now() < deadline,
                "no {line:?} in:\n{}",
                self.output()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Dev {
    fn drop(&mut self) {
        let group = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGINT);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// GET `url`: its status, content type and body.
fn get(url: &str) -> (u16, String, String) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let resp = reqwest::get(url).await.unwrap();
        let status = resp.status().as_u16();
        let media = resp
            .headers()
            .get("content-type")
            .map(|v| v.to_str().unwrap().to_owned())
            .unwrap_or_default();
        (status, media, resp.text().await.unwrap())
    })
}

#[test]
fn dev_previews_a_view_and_reloads_it_after_an_edit() {
    let (node, modules) = node();
    let chromium = std::env::var_os("SAKE_CHROMIUM").unwrap_or_else(|| "/usr/bin/chromium".into());
    assert!(
        Path::new(&chromium).is_file(),
        "no chromium at {} (scripts/test.sh: apt-get install chromium, or set SAKE_CHROMIUM)",
        chromium.to_string_lossy()
    );

    // A new crate with a view.
    let scratch = Scratch::new("apps");
    std::fs::create_dir_all(scratch.0.join(".cargo")).unwrap();
    std::fs::write(
        scratch.0.join(".cargo/config.toml"),
        "[profile.dev]\ndebug = \"line-tables-only\"\n\n[profile.dev.package.\"*\"]\ndebug = false\n",
    )
    .unwrap();
    let out = Command::new(CARGO_SAKE)
        .args(["sake", "new", "tally", "--vcs", "none"])
        .current_dir(&scratch.0)
        .env("CARGO_TARGET_DIR", target_dir())
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    ok("cargo sake new", &out);
    let krate = scratch.0.join("tally");
    std::fs::copy(workspace().join("Cargo.lock"), krate.join("Cargo.lock")).unwrap();
    let main_rs = krate.join("src/main.rs");
    let source = std::fs::read_to_string(&main_rs).unwrap();
    std::fs::write(&main_rs, format!("{source}{TALLY}")).unwrap();
    let view = krate.join("src/tally.html");
    std::fs::copy(workspace().join("examples/apps/tally.html"), &view).unwrap();

    let port = free_port();
    let mut dev = Dev::start(&krate, port);
    dev.wait_for(&format!(
        "views: http://127.0.0.1:{port}/_sake/apps (the MCP Apps preview: call a tool, see its view)"
    ));
    let page = format!("http://127.0.0.1:{port}/_sake/apps");
    let (status, media, body) = get(&page);
    assert_eq!((status, media.as_str()), (200, "text/html; charset=utf-8"));
    assert_eq!(
        body,
        std::fs::read_to_string(workspace().join("cargo-sake/assets/apps/index.html")).unwrap()
    );

    // In the browser.
    let shots = scratch.0.join("shots");
    std::fs::create_dir_all(&shots).unwrap();
    let out = Command::new(&node)
        .arg(workspace().join("cargo-sake/tests/apps/preview.mjs"))
        .args([
            page.as_str(),
            view.to_str().unwrap(),
            shots.to_str().unwrap(),
        ])
        .env("SAKE_NODE_MODULES", &modules)
        .env("SAKE_CHROMIUM", &chromium)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!(
            "preview.mjs printed no JSON ({}):\n{}\n{}\ndev:\n{}",
            out.status,
            text(&out.stdout),
            text(&out.stderr),
            dev.output()
        )
    });
    assert!(
        report.get("error").is_none(),
        "{report:#}\ndev:\n{}",
        dev.output()
    );
    let r = &report;
    assert_eq!(r["listed"], json!(["show_tally"]));
    assert_eq!(
        r["form"],
        json!(["label *\nWhat is counted, such as \"Cups of tea\"."])
    );
    let origin = format!("http://127.0.0.1:{port}");
    let second = format!("http://localhost:{port}");
    assert_eq!(r["frames"], json!([origin, second, "null"]));
    let policy = "default-src 'none'; script-src 'self' 'unsafe-inline'; \
        style-src 'self' 'unsafe-inline'; img-src 'self' data:; media-src 'self' data:; \
        connect-src 'none'; frame-src 'none'; object-src 'none'; base-uri 'self'";
    // One sandbox per render (the call, then the reload), on the second origin, under the
    // view's policy (it declares no csp: the default).
    let sandbox = json!({"url": format!("{second}/_sake/apps/sandbox?csp=bnVsbA"), // null
        "origin": second, "csp": policy});
    assert_eq!(r["sandboxes"], json!([sandbox, sandbox]));
    assert_eq!(r["fetched"], "blocked: TypeError");
    assert_eq!(r["before"], "Cups of tea\n\n0\n\n+1\n\nCups of tea: 0");
    assert_eq!(r["after"], "Cups of tea\n\n1\n\n+1\n\nCups of tea: 1");
    let tally = |count: u64| {
        json!({"content": [{"type": "text", "text": format!("Cups of tea: {count}")}],
            "structuredContent": {"label": "Cups of tea", "count": count}})
    };
    let first = &r["first"];
    assert_eq!(first["tools"], json!(["show_tally"]));
    assert_eq!(first["args"], json!({"label": "Cups of tea"}));
    assert_eq!(first["result"], tally(0));
    assert_eq!(
        first["appCalls"],
        json!([{"name": "add_to_tally", "arguments": {"label": "Cups of tea"}, "result": tally(1)}])
    );
    // The log: each message, in order (the view's size reports come when they come).
    let without_sizes = |log: &Value| -> Vec<String> {
        let all: Vec<&str> = log
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_str().unwrap())
            .collect();
        assert!(
            all.contains(&"view → host ui/notifications/size-changed"),
            "{all:?}"
        );
        all.into_iter()
            .filter(|l| *l != "view → host ui/notifications/size-changed")
            .map(str::to_owned)
            .collect()
    };
    let render = [
        "host → server resources/read ui://tally/view".to_owned(),
        format!("sandbox ready on {second}"),
        "host → view ui/notifications/sandbox-resource-ready".to_owned(),
        "view → host ui/initialize".to_owned(),
        "host → view result #1".to_owned(),
        "view → host ui/notifications/initialized".to_owned(),
        "host → view ui/notifications/tool-input".to_owned(),
        "host → server tools/call show_tally {\"label\":\"Cups of tea\"}".to_owned(),
        "server → host result of show_tally: Cups of tea: 0".to_owned(),
        "host → view ui/notifications/tool-result".to_owned(),
    ];
    let connected = [
        "connected to tally (MCP 2025-11-25)",
        "tools with a view: show_tally",
    ];
    let mut expected: Vec<String> = connected.iter().map(|l| (*l).to_owned()).collect();
    expected.extend(render.iter().cloned());
    expected.extend(
        [
            "view → host tools/call add_to_tally",
            "host → server tools/call add_to_tally (for the view)",
            "server → host result of add_to_tally",
            "host → view result #2",
        ]
        .map(str::to_owned),
    );
    assert_eq!(without_sizes(&first["log"]), expected);

    // After the edit: a new build, the same tool with the same inputs, the edited view (a
    // new process: the tally starts again).
    let reloaded = &r["reloaded"];
    assert_eq!(reloaded["reloads"], 1);
    assert_ne!(reloaded["build"], first["build"]);
    assert_eq!(reloaded["tools"], json!(["show_tally"]));
    assert_eq!(reloaded["values"], json!({"label": "Cups of tea"}));
    assert_eq!(reloaded["args"], json!({"label": "Cups of tea"}));
    let mut expected: Vec<String> = connected.iter().map(|l| (*l).to_owned()).collect();
    expected.push("the server was rebuilt: show_tally again with the same inputs".to_owned());
    expected.extend(render.iter().cloned());
    assert_eq!(without_sizes(&reloaded["log"]), expected);
    assert_eq!(r["input"], "Cups of tea");
    assert_eq!(
        r["edited"],
        "Cups of tea\n\n0\n\n+1\n\nCups of tea: 0\n\nedited while the preview was open"
    );
    // Nothing failed in the page but the view's fetch, which the policy blocked.
    assert_eq!(
        r["errors"],
        json!([
            ": Connecting to 'http://127.0.0.1:9/' violates the following Content Security Policy directive: \"connect-src 'none'\". The action has been blocked.",
            ": Fetch API cannot load http://127.0.0.1:9/. Refused to connect because it violates the document's Content Security Policy."
        ])
    );
    let output = dev.output();
    assert!(
        output.contains("sake dev: src/tally.html changed: rebuilding"),
        "{output}"
    );
    drop(dev);

    // The same binary, run as a user runs it: no preview.
    let binary = target_dir().join("debug/tally");
    let port = free_port();
    let mut server = Command::new(&binary)
        .env("PORT", port.to_string())
        .env("SAKE_QUIET", "1")
        .env_remove("SAKE_DEV_APPS")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "{} did not listen",
            binary.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let answers: Vec<u16> = ["", "/state", "/sandbox", "/host.mjs", "/bridge.js"]
        .iter()
        .map(|p| get(&format!("http://127.0.0.1:{port}/_sake/apps{p}")).0)
        .collect();
    let _ = server.kill();
    let _ = server.wait();
    assert_eq!(answers, [404, 404, 404, 404, 404]);
}
