//! `cargo sake install <client>` on copies of each client's documented configuration format
//! (`tests/fixtures/install/`), in a scratch home directory (`HOME`, `XDG_CONFIG_HOME` and the
//! current directory point into it: the real ones are never touched):
//!
//! - an HTTP entry (`--http`) is added to Claude Code's `~/.claude.json`, VS Code's
//!   `.vscode/mcp.json` and Cursor's `~/.cursor/mcp.json` (replacing Cursor's stale entry of the
//!   same name), every other key kept in its order and the file's indentation (2 spaces, 4
//!   spaces, tabs); a second run changes nothing;
//! - a stdio entry for `examples/installable` (`sake-demo`) goes into Claude Desktop's file under
//!   `$XDG_CONFIG_HOME/Claude/`: the built binary's absolute path, the arguments that make it
//!   serve stdio (none: `--stdio` is tried first and refused), `--env`, and the name the server
//!   gives itself; the entry starts a server that answers;
//! - `--print` writes nothing; Claude Desktop refuses `--http`; a file with comments is left as it
//!   is, with the entry to add by hand.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

const CARGO_SAKE: &str = env!("CARGO_BIN_EXE_cargo-sake");

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/install")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The workspace's target directory (the test runs from `<target>/<profile>/deps/`).
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.ancestors().nth(3).unwrap().to_path_buf()
}

/// A scratch home directory, removed at the end.
struct Home(PathBuf);

impl Home {
    fn new(name: &str) -> Home {
        let dir =
            std::env::temp_dir().join(format!("cargo-sake-install-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Home(dir.canonicalize().unwrap())
    }

    fn put(&self, path: &str, text: &str) {
        let path = self.0.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.0.join(path)).unwrap()
    }

    /// `cargo sake install ARGS` with this home (and current directory).
    fn install(&self, args: &[&str]) -> Output {
        Command::new(CARGO_SAKE)
            .arg("install")
            .args(args)
            .current_dir(&self.0)
            .env("HOME", &self.0)
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("APPDATA")
            .env("CARGO_TARGET_DIR", target_dir())
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn ok(out: &Output) -> String {
    assert!(out.status.success(), "{}", stderr(out));
    stderr(out)
}

#[test]
fn http_entries_go_into_each_clients_file_and_keep_the_rest() {
    let home = Home::new("http");
    home.put(".claude.json", &fixture("claude.json"));
    home.put(".vscode/mcp.json", &fixture("vscode_mcp.json"));
    home.put(".cursor/mcp.json", &fixture("cursor_mcp.json"));
    let url = "http://127.0.0.1:3000/mcp";
    let dir = home.0.display().to_string();

    let out = home.install(&["claude-code", "--http", url, "--name", "demo"]);
    assert_eq!(
        ok(&out),
        format!(
            "sake install: added `demo` in {dir}/.claude.json (Claude Code); `claude mcp list` shows it; `/mcp` in a session connects\n"
        )
    );
    assert_eq!(
        home.read(".claude.json"),
        r#"{
  "numStartups": 12,
  "theme": "dark",
  "mcpServers": {
    "sentry": {
      "type": "http",
      "url": "https://mcp.sentry.dev/mcp"
    },
    "demo": {
      "type": "http",
      "url": "http://127.0.0.1:3000/mcp"
    }
  },
  "projects": {
    "/home/ada/work": {
      "allowedTools": [],
      "mcpServers": {}
    }
  }
}
"#
    );

    let out = home.install(&[
        "vscode",
        "--http",
        url,
        "--name",
        "demo",
        "--header",
        "Authorization: Bearer t0k3n",
    ]);
    assert_eq!(
        ok(&out),
        format!(
            "sake install: added `demo` in {dir}/.vscode/mcp.json (VS Code); VS Code offers to start it (MCP: List Servers)\n"
        )
    );
    assert_eq!(
        home.read(".vscode/mcp.json"),
        r#"{
    "inputs": [
        {
            "type": "promptString",
            "id": "api-key",
            "description": "API key",
            "password": true
        }
    ],
    "servers": {
        "github": {
            "type": "http",
            "url": "https://api.githubcopilot.com/mcp/"
        },
        "demo": {
            "type": "http",
            "url": "http://127.0.0.1:3000/mcp",
            "headers": {
                "authorization": "Bearer t0k3n"
            }
        }
    }
}
"#
    );

    let out = home.install(&["cursor", "--http", url, "--name", "demo"]);
    assert_eq!(
        ok(&out),
        format!(
            "sake install: updated `demo` in {dir}/.cursor/mcp.json (Cursor); Cursor loads it under Settings → MCP\n"
        )
    );
    let cursor = "{\n\t\"mcpServers\": {\n\t\t\"demo\": {\n\t\t\t\"url\": \"http://127.0.0.1:3000/mcp\"\n\t\t},\n\t\t\"other\": {\n\t\t\t\"command\": \"other-server\",\n\t\t\t\"args\": []\n\t\t}\n\t}\n}\n";
    assert_eq!(home.read(".cursor/mcp.json"), cursor);

    // Again: nothing changes.
    let out = home.install(&["cursor", "--http", url, "--name", "demo"]);
    assert_eq!(
        ok(&out),
        format!(
            "sake install: already up to date: `demo` in {dir}/.cursor/mcp.json (Cursor); Cursor loads it under Settings → MCP\n"
        )
    );
    assert_eq!(home.read(".cursor/mcp.json"), cursor);

    // --config: any file in a client's format, made when missing (a project's .mcp.json).
    let out = home.install(&[
        "claude-code",
        "--http",
        url,
        "--name",
        "demo",
        "--config",
        "project/.mcp.json",
    ]);
    ok(&out);
    assert_eq!(
        home.read("project/.mcp.json"),
        "{\n  \"mcpServers\": {\n    \"demo\": {\n      \"type\": \"http\",\n      \"url\": \"http://127.0.0.1:3000/mcp\"\n    }\n  }\n}\n"
    );
}

#[test]
fn what_install_refuses_leaves_every_file_alone() {
    let home = Home::new("refusals");
    let url = "http://127.0.0.1:3000/mcp";
    let out = home.install(&["claude-desktop", "--http", url, "--name", "demo"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out),
        "error: Claude Desktop's configuration file starts stdio servers only: add a remote server in Claude Desktop under Settings → Connectors, or install the stdio entry (without --http)\n"
    );
    assert!(!home.0.join(".config").exists());

    let commented = fixture("vscode_mcp_with_comments.json");
    home.put(".vscode/mcp.json", &commented);
    let out = home.install(&["vscode", "--http", url, "--name", "demo"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        stderr(&out),
        format!(
            "error: {}/.vscode/mcp.json is not plain JSON (key must be a string at line 2 column 5); it is left as it is (a rewrite would lose its comments). Add the entry by hand:\n{{\n  \"servers\": {{\n    \"demo\": {{\n      \"type\": \"http\",\n      \"url\": \"http://127.0.0.1:3000/mcp\"\n    }}\n  }}\n}}\n",
            home.0.display()
        )
    );
    assert_eq!(home.read(".vscode/mcp.json"), commented);

    // --print shows the entry and writes nothing.
    let out = home.install(&["cursor", "--http", url, "--name", "demo", "--print"]);
    ok(&out);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "{\n  \"mcpServers\": {\n    \"demo\": {\n      \"url\": \"http://127.0.0.1:3000/mcp\"\n    }\n  }\n}\n"
    );
    assert!(!home.0.join(".cursor").exists());
}

#[test]
fn a_stdio_entry_starts_the_built_binary() {
    let home = Home::new("stdio");
    home.put(
        ".config/Claude/claude_desktop_config.json",
        &fixture("claude_desktop_config.json"),
    );
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/installable/Cargo.toml");
    let manifest = manifest.to_str().unwrap();
    let out = home.install(&[
        "claude-desktop",
        "--manifest-path",
        manifest,
        "--env",
        "RUST_LOG=warn",
    ]);
    let said = ok(&out);
    let file = ".config/Claude/claude_desktop_config.json";
    let dir = home.0.display().to_string();
    assert!(
        said.ends_with(&format!(
            "sake install: added `sake-demo` in {dir}/{file} (Claude Desktop); restart Claude Desktop to load it\n"
        )),
        "{said}"
    );
    let program = target_dir()
        .join("debug/sake-demo")
        .canonicalize()
        .unwrap()
        .display()
        .to_string();
    assert_eq!(
        home.read(file),
        format!(
            r#"{{
  "mcpServers": {{
    "filesystem": {{
      "command": "npx",
      "args": [
        "-y",
        "@modelcontextprotocol/server-filesystem",
        "/Users/ada/Desktop"
      ]
    }},
    "sake-demo": {{
      "command": "{program}",
      "args": [],
      "env": {{
        "RUST_LOG": "warn"
      }}
    }}
  }},
  "globalShortcut": "Alt+Space"
}}
"#
        )
    );

    // The entry works: what it starts answers `initialize` on stdio.
    let doc: serde_json::Value = serde_json::from_str(&home.read(file)).unwrap();
    let entry = &doc["mcpServers"]["sake-demo"];
    let mut server = Command::new(entry["command"].as_str().unwrap())
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    {
        use std::io::{BufRead as _, Write as _};
        let mut stdin = server.stdin.take().unwrap();
        writeln!(
            stdin,
            r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"2025-11-25","capabilities":{{}},"clientInfo":{{"name":"t","version":"1"}}}}}}"#
        )
        .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(server.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let answer: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(answer["result"]["serverInfo"]["name"], "sake-demo");
        assert_eq!(answer["result"]["protocolVersion"], "2025-11-25");
    }
    let _ = server.kill();
    let _ = server.wait();

    // Again: the same entry, nothing written.
    let before = home.read(file);
    let out = home.install(&[
        "claude-desktop",
        "--manifest-path",
        manifest,
        "--env",
        "RUST_LOG=warn",
    ]);
    assert!(
        ok(&out).ends_with(&format!(
            "sake install: already up to date: `sake-demo` in {dir}/{file} (Claude Desktop); restart Claude Desktop to load it\n"
        )),
        "{}",
        stderr(&out)
    );
    assert_eq!(home.read(file), before);
}
