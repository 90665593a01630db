//! `cargo sake install <client>`: adds this server to an MCP client's configuration file, or
//! updates its entry — over stdio (the built binary's absolute path, the arguments that make it
//! serve stdio, `--env` variables) or over Streamable HTTP (`--http URL`). Every other entry and
//! key of the file is kept, in its order and with the file's indentation; running it again
//! changes nothing.
//!
//! The formats, as each client documents them:
//!
//! | client | file | entries under | stdio entry | HTTP entry |
//! | --- | --- | --- | --- | --- |
//! | `claude-desktop` | `claude_desktop_config.json` in Claude's configuration directory | `mcpServers` | `command`, `args`, `env` | none (remote servers are Connectors) |
//! | `claude-code` | `~/.claude.json` (user scope), or a project's `.mcp.json` (`--config`) | `mcpServers` | `type: "stdio"`, `command`, `args`, `env` | `type: "http"`, `url`, `headers` |
//! | `vscode` | `.vscode/mcp.json` of the current directory | `servers` | `type: "stdio"`, `command`, `args`, `env` | `type: "http"`, `url`, `headers` |
//! | `cursor` | `~/.cursor/mcp.json` | `mcpServers` | `command`, `args`, `env` | `url`, `headers` |

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use sake::client::ClientBuilder;
use serde_json::{Map, Value, json};

use crate::project::{self, TargetArgs};
use crate::{Error, build, style};

/// The clients `install` knows the configuration of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Target {
    /// Claude Desktop (`claude_desktop_config.json`; stdio only).
    ClaudeDesktop,
    /// Claude Code (`~/.claude.json`, user scope; a project's `.mcp.json` with --config).
    ClaudeCode,
    /// VS Code (`.vscode/mcp.json` in the current directory).
    Vscode,
    /// Cursor (`~/.cursor/mcp.json`).
    Cursor,
}

impl Target {
    fn label(self) -> &'static str {
        match self {
            Target::ClaudeDesktop => "Claude Desktop",
            Target::ClaudeCode => "Claude Code",
            Target::Vscode => "VS Code",
            Target::Cursor => "Cursor",
        }
    }

    /// The key the entries are under.
    fn servers_key(self) -> &'static str {
        match self {
            Target::Vscode => "servers",
            _ => "mcpServers",
        }
    }

    /// Whether entries say their transport (`type`).
    fn typed(self) -> bool {
        matches!(self, Target::ClaudeCode | Target::Vscode)
    }

    /// The client's own file, from the environment (`HOME`, `XDG_CONFIG_HOME`, `APPDATA`) and
    /// the current directory.
    fn default_path(self) -> Result<PathBuf, Error> {
        let var = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let home = || {
            var("HOME").or_else(|| var("USERPROFILE")).ok_or_else(|| {
                Error::Other(
                    "no home directory (HOME is not set): give the file with --config".into(),
                )
            })
        };
        Ok(match self {
            Target::ClaudeDesktop => {
                let dir = if cfg!(target_os = "macos") {
                    home()?.join("Library/Application Support/Claude")
                } else if cfg!(windows) {
                    var("APPDATA")
                        .ok_or_else(|| {
                            Error::Other("APPDATA is not set: give the file with --config".into())
                        })?
                        .join("Claude")
                } else {
                    var("XDG_CONFIG_HOME")
                        .map_or_else(|| home().map(|h| h.join(".config")), Ok)?
                        .join("Claude")
                };
                dir.join("claude_desktop_config.json")
            }
            Target::ClaudeCode => home()?.join(".claude.json"),
            Target::Vscode => std::env::current_dir()
                .map_err(|e| Error::Other(format!("no current directory: {e}")))?
                .join(".vscode/mcp.json"),
            Target::Cursor => home()?.join(".cursor/mcp.json"),
        })
    }

    /// What the person does for the client to load the entry.
    fn next_step(self) -> &'static str {
        match self {
            Target::ClaudeDesktop => "restart Claude Desktop to load it",
            Target::ClaudeCode => "`claude mcp list` shows it; `/mcp` in a session connects",
            Target::Vscode => "VS Code offers to start it (MCP: List Servers)",
            Target::Cursor => "Cursor loads it under Settings → MCP",
        }
    }
}

/// `cargo sake install`'s options.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The client whose configuration gets the entry.
    #[arg(value_enum)]
    client: Target,
    #[command(flatten)]
    target: TargetArgs,
    /// The file to change instead of the client's own, in that client's format (e.g. a
    /// project's `.mcp.json` for claude-code).
    #[arg(long, value_name = "PATH")]
    config: Option<PathBuf>,
    /// Print the entry instead of writing it.
    #[arg(long)]
    print: bool,
    /// The entry's name (default: the name the server gives itself).
    #[arg(long)]
    name: Option<String>,
    /// An entry for the Streamable HTTP server at URL, instead of one that starts the built
    /// binary over stdio.
    #[arg(long, value_name = "URL")]
    http: Option<String>,
    /// An environment variable the client starts the server with (stdio). Repeatable.
    #[arg(long = "env", value_name = "KEY=VALUE")]
    env: Vec<String>,
}

/// How long the built server may take to answer `initialize` when its stdio is probed.
const PROBE_TIMEOUT: Duration = Duration::from_secs(20);

pub(crate) async fn run(args: Args) -> Result<ExitCode, Error> {
    let env = parse_env(&args.env)?;
    let (name, entry) = match &args.http {
        Some(url) => {
            if args.client == Target::ClaudeDesktop {
                return Err(Error::Other(
                    "Claude Desktop's configuration file starts stdio servers only: add a remote server in Claude Desktop under Settings → Connectors, or install the stdio entry (without --http)".into(),
                ));
            }
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(Error::Other(format!(
                    "--http {url:?}: give the endpoint's http:// or https:// URL"
                )));
            }
            let headers = header_map(&args.target.headers)?;
            let name = match &args.name {
                Some(n) => n.clone(),
                None => name_over_http(url, &args.target.headers).await?,
            };
            (name, http_entry(args.client, url, headers))
        }
        None => {
            let project = project::load(&args.target).await?;
            let built = build::build(&project, &args.target).await?;
            let program = std::fs::canonicalize(&built.executable).unwrap_or(built.executable);
            let (server_args, server_name) = stdio_args(&program, &args.target.args, &env).await?;
            let name = args.name.clone().unwrap_or(server_name);
            let command = program.display().to_string();
            (name, stdio_entry(args.client, &command, &server_args, &env))
        }
    };
    if name.is_empty() {
        return Err(Error::Other("--name: an entry needs a name".into()));
    }
    if args.print {
        let doc = json!({ args.client.servers_key(): { name.clone(): entry } });
        println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
        return Ok(ExitCode::SUCCESS);
    }
    let path = match &args.config {
        Some(p) => p.clone(),
        None => args.client.default_path()?,
    };
    let outcome = write_entry(&path, args.client.servers_key(), &name, entry)?;
    let what = match outcome {
        Outcome::Added => "added",
        Outcome::Updated => "updated",
        Outcome::Unchanged => "already up to date:",
    };
    eprintln!(
        "{} {what} `{name}` in {} ({}); {}",
        style::good("sake install:"),
        path.display(),
        args.client.label(),
        args.client.next_step()
    );
    Ok(ExitCode::SUCCESS)
}

/// `KEY=VALUE` pairs, in order.
fn parse_env(raw: &[String]) -> Result<Vec<(String, String)>, Error> {
    raw.iter()
        .map(|kv| match kv.split_once('=') {
            Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), v.to_owned())),
            _ => Err(Error::Other(format!("--env {kv:?}: write it as KEY=VALUE"))),
        })
        .collect()
}

/// `--header` values as an entry's `headers` object.
fn header_map(raw: &[String]) -> Result<Map<String, Value>, Error> {
    let parsed = crate::target::parse_headers(raw)?;
    Ok(parsed
        .into_iter()
        .map(|(name, value)| {
            let value = value.to_str().unwrap_or_default().to_owned();
            (name.as_str().to_owned(), Value::String(value))
        })
        .collect())
}

/// The arguments that make the built server serve stdio, and the name it gives itself: the
/// ones given after `--`, else `--stdio` (what `cargo sake new` servers take), else none (a
/// server that serves stdio by default) — the first it answers `initialize` with.
async fn stdio_args(
    program: &Path,
    given: &[String],
    env: &[(String, String)],
) -> Result<(Vec<String>, String), Error> {
    let tries: Vec<Vec<String>> = if given.is_empty() {
        vec![vec!["--stdio".to_owned()], Vec::new()]
    } else {
        vec![given.to_vec()]
    };
    let mut failures = Vec::new();
    for args in tries {
        match probe(program, &args, env).await {
            Ok(name) => return Ok((args, name)),
            Err(why) => failures.push(format!("  with {:?}: {why}", args.join(" "))),
        }
    }
    Err(Error::Server(format!(
        "{} did not answer `initialize` on stdio:\n{}\nGive the arguments that make it serve stdio after `--` (cargo sake install <client> -- --stdio)",
        program.display(),
        failures.join("\n")
    )))
}

/// Starts `program` as the client would and asks its name over MCP.
async fn probe(
    program: &Path,
    args: &[String],
    env: &[(String, String)],
) -> Result<String, String> {
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("SAKE_QUIET", "1")
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true);
    let connect = ClientBuilder::new()
        .info("cargo-sake", env!("CARGO_PKG_VERSION"))
        .timeout(PROBE_TIMEOUT)
        .spawn(cmd);
    let client = tokio::time::timeout(PROBE_TIMEOUT, connect)
        .await
        .map_err(|_| format!("no answer within {PROBE_TIMEOUT:?}"))?
        .map_err(|e| e.to_string())?;
    let name = client.server_info().map(|i| i.name).unwrap_or_default();
    client.close().await;
    Ok(name)
}

/// The name the server at `url` gives itself.
async fn name_over_http(url: &str, headers: &[String]) -> Result<String, Error> {
    let mut builder = ClientBuilder::new()
        .info("cargo-sake", env!("CARGO_PKG_VERSION"))
        .timeout(PROBE_TIMEOUT);
    for (name, value) in crate::target::parse_headers(headers)? {
        builder = builder.header(name, value);
    }
    let client = builder.connect(url).await.map_err(|e| {
        Error::Wire(format!(
            "cannot ask the server at {url} its name ({e}): start it, or give the entry's --name"
        ))
    })?;
    let name = client.server_info().map(|i| i.name).unwrap_or_default();
    client.close().await;
    Ok(name)
}

/// A stdio entry in `client`'s format.
fn stdio_entry(client: Target, command: &str, args: &[String], env: &[(String, String)]) -> Value {
    let mut entry = Map::new();
    if client.typed() {
        entry.insert("type".into(), json!("stdio"));
    }
    entry.insert("command".into(), json!(command));
    entry.insert("args".into(), json!(args));
    if !env.is_empty() {
        let env: Map<String, Value> = env
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        entry.insert("env".into(), Value::Object(env));
    }
    Value::Object(entry)
}

/// A Streamable HTTP entry in `client`'s format.
fn http_entry(client: Target, url: &str, headers: Map<String, Value>) -> Value {
    let mut entry = Map::new();
    if client.typed() {
        entry.insert("type".into(), json!("http"));
    }
    entry.insert("url".into(), json!(url));
    if !headers.is_empty() {
        entry.insert("headers".into(), Value::Object(headers));
    }
    Value::Object(entry)
}

/// What writing the entry did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    Added,
    Updated,
    Unchanged,
}

/// Puts `entry` under `key.name` in the JSON file at `path` (made, with its directory, when
/// missing), keeping every other key in its order and the file's indentation. A file that is not
/// plain JSON (comments, trailing commas) is left alone: rewriting would lose them.
pub(crate) fn write_entry(
    path: &Path,
    key: &str,
    name: &str,
    entry: Value,
) -> Result<Outcome, Error> {
    let original = match std::fs::read_to_string(path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(Error::Other(format!("cannot read {}: {e}", path.display()))),
    };
    let snippet = || {
        serde_json::to_string_pretty(&json!({ key: { name: entry.clone() } })).unwrap_or_default()
    };
    let mut doc = match original.as_deref().map(str::trim) {
        None | Some("") => Value::Object(Map::new()),
        Some(text) => serde_json::from_str::<Value>(text).map_err(|e| {
            Error::Other(format!(
                "{} is not plain JSON ({e}); it is left as it is (a rewrite would lose its comments). Add the entry by hand:\n{}",
                path.display(),
                snippet()
            ))
        })?,
    };
    let Value::Object(root) = &mut doc else {
        return Err(Error::Other(format!(
            "{} holds no JSON object; add the entry by hand:\n{}",
            path.display(),
            snippet()
        )));
    };
    let servers = root
        .entry(key.to_owned())
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(servers) = servers else {
        return Err(Error::Other(format!(
            "`{key}` in {} is not an object; fix it, or add the entry by hand:\n{}",
            path.display(),
            snippet()
        )));
    };
    let outcome = match servers.get(name) {
        None => Outcome::Added,
        Some(old) if *old == entry => return Ok(Outcome::Unchanged),
        Some(_) => Outcome::Updated,
    };
    servers.insert(name.to_owned(), entry);
    let indent = original
        .as_deref()
        .map_or_else(|| b"  ".to_vec(), indentation);
    let mut text = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(&indent);
    let mut ser = serde_json::Serializer::with_formatter(&mut text, formatter);
    serde::Serialize::serialize(&doc, &mut ser)
        .map_err(|e| Error::Other(format!("cannot write JSON: {e}")))?;
    text.push(b'\n');
    write_file(path, &text)?;
    Ok(outcome)
}

/// The indentation of a JSON text: its first indented line's (two spaces when none is).
fn indentation(text: &str) -> Vec<u8> {
    text.lines()
        .skip(1)
        .map(|l| {
            l.bytes()
                .take_while(|b| *b == b' ' || *b == b'\t')
                .collect::<Vec<u8>>()
        })
        .find(|w| !w.is_empty())
        .unwrap_or_else(|| b"  ".to_vec())
}

/// Writes `path` whole or not at all (a file beside it, renamed over it), keeping its
/// permissions.
fn write_file(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let fail = |e: std::io::Error| Error::Other(format!("cannot write {}: {e}", path.display()));
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(fail)?;
    }
    let mut scratch = path.as_os_str().to_owned();
    scratch.push(".sake-install");
    let scratch = PathBuf::from(scratch);
    std::fs::write(&scratch, bytes).map_err(fail)?;
    if let Ok(meta) = std::fs::metadata(path) {
        let _ = std::fs::set_permissions(&scratch, meta.permissions());
    }
    std::fs::rename(&scratch, path).map_err(|e| {
        let _ = std::fs::remove_file(&scratch);
        fail(e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_indentation_is_the_first_indented_lines() {
        assert_eq!(indentation("{\n    \"a\": 1\n}"), b"    ");
        assert_eq!(indentation("{\n\t\"a\": 1\n}"), b"\t");
        assert_eq!(indentation("{}"), b"  ");
    }

    #[test]
    fn entries_follow_each_clients_format() {
        let env = [("RUST_LOG".to_owned(), "info".to_owned())];
        let args = ["--stdio".to_owned()];
        assert_eq!(
            stdio_entry(Target::ClaudeDesktop, "/bin/demo", &args, &env),
            json!({"command": "/bin/demo", "args": ["--stdio"], "env": {"RUST_LOG": "info"}})
        );
        assert_eq!(
            stdio_entry(Target::Vscode, "/bin/demo", &[], &[]),
            json!({"type": "stdio", "command": "/bin/demo", "args": []})
        );
        assert_eq!(
            http_entry(Target::Cursor, "http://127.0.0.1:3000/mcp", Map::new()),
            json!({"url": "http://127.0.0.1:3000/mcp"})
        );
        let headers = header_map(&["Authorization: Bearer t".into()]).unwrap();
        assert_eq!(
            http_entry(Target::ClaudeCode, "http://h/mcp", headers),
            json!({"type": "http", "url": "http://h/mcp", "headers": {"authorization": "Bearer t"}})
        );
    }

    #[test]
    fn env_pairs_need_an_equals_sign() {
        assert_eq!(
            parse_env(&["A=b=c".into()]).unwrap(),
            vec![("A".to_owned(), "b=c".to_owned())]
        );
        assert_eq!(
            parse_env(&["A".into()]).unwrap_err().to_string(),
            "--env \"A\": write it as KEY=VALUE"
        );
    }
}
