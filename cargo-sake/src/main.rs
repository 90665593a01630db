//! `cargo sake`: the command line of sake (docs/cli.md).
//!
//! - `cargo sake new NAME` writes a crate with one documented tool, served over HTTP and stdio,
//!   and its tests (a `TestClient` call and an insta snapshot of what each revision lists).
//! - `cargo sake dev` builds and runs a server, rebuilds and restarts it on every change under
//!   one port and one session key kept in `target/`, so that its clients stay connected, and
//!   prints what each revision lists at every start.
//! - `cargo sake schemas` prints what each revision lists (JSON, or a table), the schema
//!   compatibility reports, and compares the lists with the crate's snapshot (`--check`).
//! - `cargo sake card` prints the server card and the MCP registry's `server.json`.
//! - `cargo sake call <tool> [json]` and `cargo sake list` talk to the dev server (or any
//!   server) from the terminal.
//! - `cargo sake install <client>` adds the server to Claude Desktop, Claude Code, VS Code or
//!   Cursor (their configuration files), or updates its entry.
//!
//! It never links the user's crate: it builds it with cargo and asks the running server over
//! MCP, as any client would.

mod apps;
mod build;
mod call;
mod card;
mod dev;
mod error;
mod inspector;
mod install;
mod lists;
mod new;
mod process;
mod project;
mod schemas;
mod snapshot;
mod state;
mod target;
mod template_tool;
mod watch;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

pub(crate) use error::Error;

/// `cargo sake`: new MCP servers, a dev loop that keeps clients connected across rebuilds, and
/// what each MCP revision lists, for servers built with sake.
#[derive(Debug, Parser)]
#[command(
    name = "cargo sake",
    bin_name = "cargo sake",
    version,
    max_term_width = 100
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Create a crate with an MCP server: one documented tool, HTTP on PORT (3000) and stdio
    /// with --stdio, a TestClient test and a snapshot test of its schemas.
    New(new::Args),
    /// Build and run the server; rebuild and restart it on every change, keeping its port and
    /// session key so that connected clients stay connected.
    Dev(dev::Args),
    /// Print what each MCP revision lists (tools, prompts, resources, resource templates), the
    /// schema compatibility reports, or compare with the crate's snapshot (--check).
    Schemas(schemas::Args),
    /// Print the server card and the MCP registry's server.json.
    Card(card::Args),
    /// Add this server to an MCP client's configuration (claude-desktop, claude-code, vscode,
    /// cursor), or update its entry: the built binary over stdio, or --http URL.
    Install(install::Args),
    /// Call a tool of the dev server (or --url, --stdio): the result as JSON (or --text),
    /// progress on stderr, questions answered at the terminal; exit status 1 on an error result.
    Call(call::CallArgs),
    /// List the tools, prompts, resources and resource templates of the dev server (or --url,
    /// --stdio), as JSON (or --text).
    List(call::ListArgs),
}

fn main() -> ExitCode {
    // `cargo sake …` runs `cargo-sake sake …`; `cargo-sake …` works too.
    let mut args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args.get(1).is_some_and(|a| a == "sake") {
        args.remove(1);
    }
    let cli = Cli::parse_from(args);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::New(args) => new::run(args).await,
            Command::Dev(args) => dev::run(args).await,
            Command::Schemas(args) => schemas::run(args).await,
            Command::Card(args) => card::run(args).await,
            Command::Install(args) => install::run(args).await,
            Command::Call(args) => call::call(args).await,
            Command::List(args) => call::list(args).await,
        }
    });
    // Nothing left running: the server, the build and the Inspector were stopped by their
    // owners; what the runtime still holds (a watcher thread) ends here.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("{} {e}", style::error("error:"));
            ExitCode::from(e.exit_code())
        }
    }
}

/// Colours for the terminal (none when stderr is not one, or `NO_COLOR` is set).
pub(crate) mod style {
    use std::io::IsTerminal;
    use std::sync::OnceLock;

    fn on() -> bool {
        static ON: OnceLock<bool> = OnceLock::new();
        *ON.get_or_init(|| {
            std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none()
        })
    }

    fn paint(code: &str, text: &str) -> String {
        if on() {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_owned()
        }
    }

    pub(crate) fn error(text: &str) -> String {
        paint("1;31", text)
    }

    pub(crate) fn warning(text: &str) -> String {
        paint("1;33", text)
    }

    pub(crate) fn good(text: &str) -> String {
        paint("1;32", text)
    }

    pub(crate) fn bold(text: &str) -> String {
        paint("1", text)
    }

    pub(crate) fn dim(text: &str) -> String {
        paint("2", text)
    }

    /// Whether stderr is a terminal (progress bars, colours).
    pub(crate) fn terminal() -> bool {
        on()
    }
}
