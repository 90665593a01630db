//! `cargo sake dev`: build, run, watch, rebuild, restart — without losing the clients.
//!
//! The server gets the same port and the same session key (`target/sake/session-key`) at
//! every start, so a handshake session or a 2026-07-28 `requestState` from before a restart is
//! still good after it; and the lists it served last (`SAKE_PREVIOUS_LISTS`), so that clients
//! reconnecting their streams are told what changed. A build that fails leaves the running
//! server alone; a build that changes nothing restarts nothing.
//!
//! The server also serves the MCP Apps preview at `/_sake/apps` (`SAKE_DEV_APPS`, the
//! directory [`apps::write`] fills): a page that calls a tool and shows its view, and reloads
//! it after each restart.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use hyper::header::{HeaderName, HeaderValue};
use tokio::signal::unix::{SignalKind, signal};

use crate::build::Build;
use crate::inspector::Inspector;
use crate::process::{Server, ServerOptions};
use crate::project::{self, Project, TargetArgs};
use crate::state::{self, ServerState};
use crate::target::{DEFAULT_PORT, parse_headers};
use crate::watch::Watcher;
use crate::{Error, apps, lists, style};

/// How long a server may take to listen after it starts.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// `cargo sake dev`'s options.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    target: TargetArgs,
    /// The port to serve on (kept for the next runs; default: the last run's, else 3000).
    #[arg(long)]
    port: Option<u16>,
    /// Start the MCP Inspector's web UI against the server.
    #[arg(long)]
    inspector: bool,
    /// The Inspector to run instead of `npx -y @modelcontextprotocol/inspector@<pinned>`: its
    /// executable, or its launcher's JavaScript file (run with `node`).
    #[arg(long, value_name = "PATH", requires = "inspector")]
    inspector_command: Option<PathBuf>,
}

/// Ctrl-C (`SIGINT`), `SIGTERM` and `SIGHUP`: each ends the loop.
struct Signals {
    int: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
}

impl Signals {
    fn new() -> Result<Signals, Error> {
        let listen =
            |kind| signal(kind).map_err(|e| Error::Other(format!("cannot handle signals: {e}")));
        Ok(Signals {
            int: listen(SignalKind::interrupt())?,
            term: listen(SignalKind::terminate())?,
            hup: listen(SignalKind::hangup())?,
        })
    }

    async fn recv(&mut self) {
        tokio::select! {
            _ = self.int.recv() => {}
            _ = self.term.recv() => {}
            _ = self.hup.recv() => {}
        }
    }
}

/// The server being served, and what the loop needs to restart it.
struct Dev {
    project: Project,
    target: TargetArgs,
    state: ServerState,
    key: String,
    port: u16,
    url: String,
    headers: Vec<(HeaderName, HeaderValue)>,
    server: Option<Server>,
    inspector: Option<Inspector>,
    /// The MCP Apps preview's files (`SAKE_DEV_APPS`).
    apps: PathBuf,
    /// Whether how to connect a client was said (once, at the first start).
    connect_said: bool,
}

pub(crate) async fn run(args: Args) -> Result<ExitCode, Error> {
    let project = project::load(&args.target).await?;
    let state = ServerState::new(project.state_dir())?;
    let key = state::session_key(&project.target_directory)?;
    let port = args.port.or_else(|| state.port()).unwrap_or(DEFAULT_PORT);
    state.set_port(port)?;
    let headers = parse_headers(&args.target.headers)?;
    let url = format!("http://127.0.0.1:{port}{}", args.target.mcp_path);
    let apps = apps::write(&project.state_dir())?;
    let mut signals = Signals::new()?;
    let mut watcher = Watcher::new(&project.watched, vec![project.target_directory.clone()])?;
    let watched: Vec<String> = project
        .watched
        .iter()
        .map(|d| d.display().to_string())
        .collect();
    eprintln!(
        "{} {} on {url}, watching {} (Ctrl-C stops)",
        style::good("sake dev:"),
        project.describe(),
        watched.join(", ")
    );
    if std::env::var_os("SAKE_SESSION_KEY").is_some() {
        eprintln!("the session key is SAKE_SESSION_KEY's, from the environment");
    } else {
        eprintln!(
            "the session key is kept in {}: sessions survive restarts",
            project.target_directory.join("sake/session-key").display()
        );
    }
    let mut dev = Dev {
        project,
        target: args.target,
        state,
        key,
        port,
        url,
        headers,
        server: None,
        inspector: None,
        apps,
        connect_said: false,
    };
    let mut rebuild = true;
    loop {
        if rebuild {
            rebuild = false;
            let mut build = Build::start(&dev.project, &dev.target)?;
            let outcome = tokio::select! {
                outcome = build.wait() => Some(outcome),
                () = signals.recv() => None,
            };
            let Some(outcome) = outcome else {
                build.stop().await;
                dev.stop().await;
                return Ok(ExitCode::SUCCESS);
            };
            match outcome {
                Ok(built) => {
                    let running = dev.server.as_mut().is_some_and(|s| s.exited().is_none());
                    if built.fresh && running {
                        eprintln!(
                            "{} nothing to restart: the build is unchanged",
                            style::dim("sake dev:")
                        );
                    } else {
                        eprintln!(
                            "{} built {} in {:.1}s",
                            style::good("sake dev:"),
                            dev.project.target,
                            built.took.as_secs_f64()
                        );
                        dev.restart(&built.executable).await;
                        if args.inspector && dev.inspector.is_none() && dev.server.is_some() {
                            dev.inspector = Some(Inspector::start(
                                &dev.url,
                                args.inspector_command.as_deref(),
                            )?);
                        }
                    }
                }
                Err(Error::Build) => match dev.server.as_ref().and_then(Server::pid) {
                    Some(pid) => eprintln!(
                        "{} the build failed: the server keeps running the last good build (pid {pid}); fix and save to try again",
                        style::error("sake dev:")
                    ),
                    None => eprintln!(
                        "{} the build failed; fix and save to try again",
                        style::error("sake dev:")
                    ),
                },
                Err(e) => {
                    dev.stop().await;
                    return Err(e);
                }
            }
            // What changed while it built is built next.
            if !watcher.pending().is_empty() {
                rebuild = true;
                continue;
            }
        }
        tokio::select! {
            changed = watcher.changed() => {
                eprintln!("{} {} changed: rebuilding", style::bold("sake dev:"), describe(&changed));
                rebuild = true;
                if changed.iter().any(|p| p.file_name().is_some_and(|n| n == "Cargo.toml")) {
                    dev.reload(&mut watcher).await;
                }
            }
            () = signals.recv() => {
                dev.stop().await;
                return Ok(ExitCode::SUCCESS);
            }
            status = exit_of(&mut dev.server) => {
                dev.server = None;
                let status = status.map_or_else(|| "unknown status".to_owned(), |s| s.to_string());
                eprintln!(
                    "{} the server exited ({status}); save a change to rebuild and start it",
                    style::error("sake dev:")
                );
            }
            status = exit_of_inspector(&mut dev.inspector) => {
                dev.inspector = None;
                let status = status.map_or_else(|| "unknown status".to_owned(), |s| s.to_string());
                eprintln!("{} the Inspector exited ({status})", style::warning("sake dev:"));
            }
        }
    }
}

/// Waits for the server to exit (never, without one).
async fn exit_of(server: &mut Option<Server>) -> Option<std::process::ExitStatus> {
    match server {
        Some(s) => s.wait().await,
        None => std::future::pending().await,
    }
}

async fn exit_of_inspector(inspector: &mut Option<Inspector>) -> Option<std::process::ExitStatus> {
    match inspector {
        Some(i) => i.wait().await,
        None => std::future::pending().await,
    }
}

/// The changed files, for people: one name, or the first and how many more.
fn describe(paths: &[PathBuf]) -> String {
    let name = |p: &Path| {
        std::env::current_dir()
            .ok()
            .and_then(|d| p.strip_prefix(d).ok().map(Path::to_path_buf))
            .unwrap_or_else(|| p.to_path_buf())
            .display()
            .to_string()
    };
    // Editors write a scratch file and rename it: name a file that is there.
    let mut sorted: Vec<&PathBuf> = paths.iter().collect();
    sorted.sort_by_key(|p| !p.exists());
    match sorted.as_slice() {
        [] => "nothing".into(),
        [one] => name(one),
        [first, rest @ ..] => format!("{} and {} more", name(first), rest.len()),
    }
}

impl Dev {
    /// Stops the running server, if any, and starts `executable` on the same port with the
    /// same key; then prints what it lists and keeps the lists for the next start.
    async fn restart(&mut self, executable: &Path) {
        if let Some(mut old) = self.server.take() {
            eprintln!("{} restarting the server", style::bold("sake dev:"));
            old.stop().await;
        }
        let started = Server::start(ServerOptions {
            executable,
            port: self.port,
            key: &self.key,
            args: &self.target.args,
            previous_lists: Some(self.state.lists_path()),
            server_json: None,
            apps: Some(&self.apps),
            quiet: false,
        })
        .await;
        let mut server = match started {
            Ok(s) => s,
            Err(e) => {
                eprintln!("{} {e}", style::error("sake dev:"));
                return;
            }
        };
        if let Err(e) = server.ready(READY_TIMEOUT).await {
            eprintln!(
                "{} {e}; save a change to try again",
                style::error("sake dev:")
            );
            return;
        }
        let pid = server
            .pid()
            .map_or_else(String::new, |p| format!(" (pid {p})"));
        self.server = Some(server);
        match lists::fetch(&self.url, &self.headers).await {
            Ok(lists) => {
                let name = lists
                    .server
                    .as_ref()
                    .map_or_else(String::new, |i| format!("{} {} ", i.name, i.version));
                eprintln!(
                    "{} {name}serving {}{pid}",
                    style::good("sake dev:"),
                    self.url
                );
                eprint!("{}", lists::table(&lists));
                let warnings = lists::warnings(&lists);
                if !warnings.is_empty() {
                    eprintln!("{}", style::warning("warnings:"));
                    for w in warnings {
                        eprintln!("  {w}");
                    }
                }
                if lists::has_views(&lists) {
                    eprintln!(
                        "{} http://127.0.0.1:{}{} (the MCP Apps preview: call a tool, see its view)",
                        style::bold("views:"),
                        self.port,
                        apps::PATH
                    );
                }
                if !self.connect_said {
                    self.connect_said = true;
                    let name = lists
                        .server
                        .as_ref()
                        .map_or("my-server", |i| i.name.as_str());
                    eprintln!(
                        "{} claude mcp add --transport http {name} {url}\n         (or cargo sake install claude-desktop|claude-code|vscode|cursor); from a terminal: cargo sake list, cargo sake call <tool> '<json>'",
                        style::bold("connect:"),
                        url = self.url
                    );
                }
                if let Err(e) = self.state.set_lists(&lists.previous_document()) {
                    eprintln!("{} cannot keep the lists: {e}", style::warning("sake dev:"));
                }
            }
            Err(e) => {
                eprintln!("{} serving {}{pid}", style::good("sake dev:"), self.url);
                eprintln!(
                    "{} cannot read its lists: {e} (a protected server needs a token: --header 'Authorization: Bearer …')",
                    style::warning("sake dev:")
                );
            }
        }
    }

    /// After a manifest changed: what cargo says of the package now (a path dependency added
    /// is watched from now on). A manifest cargo cannot read keeps the last good description;
    /// the build shows the error.
    async fn reload(&mut self, watcher: &mut Watcher) {
        let Ok(project) = project::load(&self.target).await else {
            return;
        };
        if project.watched != self.project.watched {
            match Watcher::new(&project.watched, vec![project.target_directory.clone()]) {
                Ok(w) => *watcher = w,
                Err(e) => {
                    eprintln!("{} {e}", style::warning("sake dev:"));
                    return;
                }
            }
            let dirs: Vec<String> = project
                .watched
                .iter()
                .map(|d| d.display().to_string())
                .collect();
            eprintln!(
                "{} now watching {}",
                style::bold("sake dev:"),
                dirs.join(", ")
            );
        }
        self.project = project;
    }

    /// Stops the server and the Inspector.
    async fn stop(&mut self) {
        if let Some(mut inspector) = self.inspector.take() {
            inspector.stop().await;
        }
        if let Some(mut server) = self.server.take() {
            server.stop().await;
        }
        eprintln!("{} stopped", style::bold("sake dev:"));
    }
}
