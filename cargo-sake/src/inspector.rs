//! The MCP Inspector (`@modelcontextprotocol/inspector`, its web UI) against the dev server:
//! the version sake is tested with, through `npx`, or a copy given by path. It connects over
//! Streamable HTTP with a 2025-11-25 session, which survives the server's restarts.

use std::path::Path;
use std::time::Duration;

use crate::Error;
use crate::process::Group;

/// The Inspector `cargo sake dev --inspector` runs: the version of `scripts/peers/package.json`,
/// the one sake's tests drive.
pub(crate) const PACKAGE: &str = "@modelcontextprotocol/inspector@2.12.0";

/// A running Inspector.
#[derive(Debug)]
pub(crate) struct Inspector {
    group: Group,
}

/// The command that runs the Inspector: `npx -y <PACKAGE>`, or `command` (a JavaScript file
/// runs under `node`).
fn command(command: Option<&Path>) -> tokio::process::Command {
    match command {
        None => {
            let mut cmd = tokio::process::Command::new("npx");
            cmd.args(["-y", PACKAGE]);
            cmd
        }
        Some(path) => {
            let script = path
                .extension()
                .is_some_and(|e| e == "js" || e == "mjs" || e == "cjs");
            if script {
                let node = std::env::var_os("SAKE_NODE").unwrap_or_else(|| "node".into());
                let mut cmd = tokio::process::Command::new(node);
                cmd.arg(path);
                cmd
            } else {
                tokio::process::Command::new(path)
            }
        }
    }
}

impl Inspector {
    /// Starts the Inspector's web UI, connected to `url`. Its output (the address to open, with
    /// its token) goes to the terminal.
    pub fn start(url: &str, path: Option<&Path>) -> Result<Inspector, Error> {
        let mut cmd = command(path);
        cmd.args(["--web", "--transport", "http", "--server-url", url])
            .stdin(std::process::Stdio::null());
        let group = Group::spawn(cmd, "the MCP Inspector").map_err(|e| {
            Error::Other(format!(
                "{e} (it runs through `npx`, which comes with Node.js 22 or later; or give its path with --inspector-command)"
            ))
        })?;
        Ok(Inspector { group })
    }

    /// Waits for it to exit.
    pub async fn wait(&mut self) -> Option<std::process::ExitStatus> {
        self.group.wait().await
    }

    /// Stops it and everything it started.
    pub async fn stop(&mut self) {
        self.group.stop(Duration::from_secs(3)).await;
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_pinned_inspector_is_the_one_the_tests_use() {
        let peers = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../scripts/peers/package.json"
        ))
        .unwrap();
        let peers: serde_json::Value = serde_json::from_str(&peers).unwrap();
        let version = peers["dependencies"]["@modelcontextprotocol/inspector"]
            .as_str()
            .unwrap();
        assert_eq!(
            super::PACKAGE,
            format!("@modelcontextprotocol/inspector@{version}")
        );
    }
}
