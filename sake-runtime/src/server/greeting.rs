//! The start-up greeting: where the server is, what each revision lists, and how to connect a
//! client — a few lines on stderr for the person who started it (never on stdout, which
//! carries MCP on stdio). `Server::quiet` or `SAKE_QUIET=1` turns it off; the structured
//! `tracing` events are there either way.
//!
//! The session-key warning lives here too: it matters only where the server can be reached
//! from another machine (a listener on a non-loopback address), where a random key means that
//! sessions end with the process and replicas do not share them. A shared event bus without a
//! key is a start-up error already (`Shared::new`), as is `require_session_key` without one.

use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use super::{Config, Shared};
use crate::protocol::Revision;
use crate::registry::Registry;

/// Where the server serves.
#[derive(Debug, Clone, Copy)]
pub(crate) enum At<'a> {
    /// Streamable HTTP on a listener bound to `local`, the endpoint at `path`.
    Http { local: SocketAddr, path: &'a str },
    /// This process's stdin and stdout.
    Stdio,
}

/// Whether the greeting is off: `Server::quiet(true)`, or `SAKE_QUIET` set to anything but
/// empty or `0`.
pub(crate) fn quiet(config: &Config) -> bool {
    config.quiet || std::env::var_os("SAKE_QUIET").is_some_and(|v| !v.is_empty() && v != "0")
}

/// Greets on stderr (unless quiet) and warns where a random session key matters. Returns
/// whether it greeted.
pub(crate) fn greet(shared: &Shared, at: At<'_>) -> bool {
    if let At::Http { local, .. } = at
        && !local.ip().is_loopback()
        && !shared.events.key_configured()
    {
        tracing::warn!(
            %local,
            "no session key configured, and the server listens on {local}, which other machines may reach: a random key is used, so handshake sessions and requestState end when this process does and replicas do not share them. Set Server::session_key or SAKE_SESSION_KEY (at least 32 random bytes, the same on every replica), or Server::require_session_key(true) to refuse to start without one"
        );
    }
    if quiet(&shared.config) {
        return false;
    }
    let command = match at {
        At::Stdio => Some(this_command()),
        At::Http { .. } => None,
    };
    let text = text(
        &shared.catalog.registry,
        &shared.config.info.name,
        &shared.config.info.version,
        at,
        command.as_ref(),
    );
    use std::io::Write as _;
    // One write: the lines stay together among other output. A closed stderr is no error.
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
    true
}

/// This process as a client would start it: its executable's absolute path and its arguments.
fn this_command() -> (String, Vec<String>) {
    let program = std::env::current_exe()
        .ok()
        .map(|p| p.display().to_string())
        .or_else(|| std::env::args().next())
        .unwrap_or_default();
    (program, std::env::args().skip(1).collect())
}

/// The greeting's text. `command` is the program and arguments a client starts (stdio).
pub(crate) fn text(
    registry: &Registry,
    name: &str,
    version: &str,
    at: At<'_>,
    command: Option<&(String, Vec<String>)>,
) -> String {
    let mut out = String::new();
    match at {
        At::Http { local, path } => {
            let url = format!("http://{}{path}", reachable(local));
            let _ = write!(out, "{name} {version}: MCP at {url}");
            if local.ip().is_unspecified() {
                let _ = write!(out, " (listening on {local}: every interface)");
            }
            out.push('\n');
            revisions(registry, &mut out);
            let _ = writeln!(out, "connect:");
            let _ = writeln!(
                out,
                "  MCP Inspector  npx @modelcontextprotocol/inspector --cli {url} --transport http --method tools/list"
            );
            let _ = writeln!(
                out,
                "  Claude Code    claude mcp add --transport http {} {url}",
                shell_word(name)
            );
            let entry = serde_json::json!({"servers": {name: {"type": "http", "url": url}}});
            let _ = writeln!(out, "  VS Code        .vscode/mcp.json: {entry}");
        }
        At::Stdio => {
            let _ = writeln!(out, "{name} {version}: MCP on stdio (stdin and stdout)");
            revisions(registry, &mut out);
            let (program, args) = command.cloned().unwrap_or_default();
            let line: Vec<String> = std::iter::once(&program)
                .chain(&args)
                .map(|w| shell_word(w))
                .collect();
            let line = line.join(" ");
            let _ = writeln!(out, "connect (a client starts this program):");
            let _ = writeln!(
                out,
                "  MCP Inspector  npx @modelcontextprotocol/inspector {line}"
            );
            let _ = writeln!(
                out,
                "  Claude Code    claude mcp add {} -- {line}",
                shell_word(name)
            );
            let entry = serde_json::json!({"servers": {name: {"type": "stdio", "command": program, "args": args}}});
            let _ = writeln!(out, "  VS Code        .vscode/mcp.json: {entry}");
        }
    }
    let _ = writeln!(
        out,
        "  or: cargo sake install claude-desktop|claude-code|vscode|cursor"
    );
    let _ = writeln!(out, "(SAKE_QUIET=1 or Server::quiet hides this greeting)");
    out
}

/// The address a client on this machine connects to: the loopback address of the family of
/// an unspecified one (`0.0.0.0`, `::`).
fn reachable(local: SocketAddr) -> SocketAddr {
    match local.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => {
            SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), local.port())
        }
        IpAddr::V6(ip) if ip.is_unspecified() => {
            SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), local.port())
        }
        _ => local,
    }
}

/// One line per group of revisions that list the same: what they list, and the tools they
/// leave out and why.
fn revisions(registry: &Registry, out: &mut String) {
    let summaries: Vec<(Revision, String)> = Revision::ALL
        .into_iter()
        .map(|rev| (rev, summary(registry, rev)))
        .collect();
    let mut groups: Vec<(Vec<Revision>, &str)> = Vec::new();
    for (rev, summary) in &summaries {
        match groups.iter_mut().find(|(_, s)| *s == summary.as_str()) {
            Some((revs, _)) => revs.push(*rev),
            None => groups.push((vec![*rev], summary)),
        }
    }
    let labels: Vec<String> = groups
        .iter()
        .map(|(revs, _)| {
            revs.iter()
                .map(|r| r.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        })
        .collect();
    let width = labels.iter().map(String::len).max().unwrap_or(0);
    for ((_, summary), label) in groups.iter().zip(&labels) {
        let mut lines = summary.lines();
        let _ = writeln!(
            out,
            "  {label:<width$}  {}",
            lines.next().unwrap_or_default()
        );
        for line in lines {
            let _ = writeln!(out, "  {:width$}  {line}", "");
        }
    }
}

/// What `rev` lists, on one line, then a line per tool it leaves out.
fn summary(registry: &Registry, rev: Revision) -> String {
    let listed: Vec<_> = registry
        .tools
        .iter()
        .filter(|t| t.left_out_of(rev).is_none())
        .collect();
    let for_everyone = listed.iter().filter(|t| t.for_everyone()).count();
    let for_views = listed.len() - for_everyone;
    let mut parts = Vec::new();
    let mut count = |n: usize, one: &str, many: &str| {
        if n > 0 {
            parts.push(format!("{n} {}", if n == 1 { one } else { many }));
        }
    };
    count(for_everyone, "tool", "tools");
    count(for_views, "tool only views call", "tools only views call");
    count(registry.prompts.len(), "prompt", "prompts");
    count(registry.resources.len(), "resource", "resources");
    count(
        registry.templates.len(),
        "resource template",
        "resource templates",
    );
    count(registry.views.len(), "view", "views");
    count(
        registry.skills_visible(rev, &|_| true).len(),
        "skill",
        "skills",
    );
    let mut text = if parts.is_empty() {
        "nothing listed".to_owned()
    } else {
        parts.join(", ")
    };
    for tool in &registry.tools {
        if let Some(why) = tool.left_out_of(rev) {
            let _ = write!(text, "\nleaves out tool `{}`: {why}", tool.def.name);
        }
    }
    text
}

/// A word as a POSIX shell reads it: as it is when plain, else single-quoted.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-./:=@+,%".contains(&b));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words_are_quoted_only_when_needed() {
        assert_eq!(shell_word("/usr/bin/demo"), "/usr/bin/demo");
        assert_eq!(shell_word("--port=3000"), "--port=3000");
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word(""), "''");
    }

    #[test]
    fn an_unspecified_address_is_reached_on_loopback() {
        let any: SocketAddr = "0.0.0.0:3000".parse().unwrap();
        assert_eq!(reachable(any).to_string(), "127.0.0.1:3000");
        let any6: SocketAddr = "[::]:3000".parse().unwrap();
        assert_eq!(reachable(any6).to_string(), "[::1]:3000");
        let lan: SocketAddr = "192.0.2.7:3000".parse().unwrap();
        assert_eq!(reachable(lan), lan);
    }

    #[test]
    fn an_empty_server_greets_over_http_and_stdio() {
        let registry = Registry::from_defs(Vec::new(), Vec::new(), Vec::new()).unwrap();
        let local: SocketAddr = "0.0.0.0:8080".parse().unwrap();
        assert_eq!(
            text(
                &registry,
                "empty",
                "1.2.3",
                At::Http {
                    local,
                    path: "/mcp"
                },
                None
            ),
            r#"empty 1.2.3: MCP at http://127.0.0.1:8080/mcp (listening on 0.0.0.0:8080: every interface)
  2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26  nothing listed
connect:
  MCP Inspector  npx @modelcontextprotocol/inspector --cli http://127.0.0.1:8080/mcp --transport http --method tools/list
  Claude Code    claude mcp add --transport http empty http://127.0.0.1:8080/mcp
  VS Code        .vscode/mcp.json: {"servers":{"empty":{"type":"http","url":"http://127.0.0.1:8080/mcp"}}}
  or: cargo sake install claude-desktop|claude-code|vscode|cursor
(SAKE_QUIET=1 or Server::quiet hides this greeting)
"#
        );
        let command = ("/opt/my server/bin".to_owned(), vec!["--stdio".to_owned()]);
        assert_eq!(
            text(&registry, "my server", "0.1.0", At::Stdio, Some(&command)),
            r#"my server 0.1.0: MCP on stdio (stdin and stdout)
  2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26  nothing listed
connect (a client starts this program):
  MCP Inspector  npx @modelcontextprotocol/inspector '/opt/my server/bin' --stdio
  Claude Code    claude mcp add 'my server' -- '/opt/my server/bin' --stdio
  VS Code        .vscode/mcp.json: {"servers":{"my server":{"type":"stdio","command":"/opt/my server/bin","args":["--stdio"]}}}
  or: cargo sake install claude-desktop|claude-code|vscode|cursor
(SAKE_QUIET=1 or Server::quiet hides this greeting)
"#
        );
    }
}
