//! Processes `cargo sake` starts (the server, cargo, the Inspector), each in a process group of
//! its own, so that stopping one stops everything it started in turn: a signal to the group,
//! some time to finish, then `SIGKILL` to whatever is left of it.

use std::process::ExitStatus;
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use crate::Error;

/// A child process leading a process group of its own.
#[derive(Debug)]
pub(crate) struct Group {
    child: tokio::process::Child,
    /// The group's id (the child's pid); `None` once the group is gone.
    pgid: Option<Pid>,
    what: &'static str,
}

impl Group {
    /// Spawns `cmd` as the leader of a new process group. `what` names it in messages.
    pub fn spawn(mut cmd: tokio::process::Command, what: &'static str) -> Result<Group, Error> {
        cmd.process_group(0).kill_on_drop(true);
        let child = cmd.spawn().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Error::Other(format!("cannot run {what}: not found")),
            _ => Error::Other(format!("cannot run {what}: {e}")),
        })?;
        let pgid = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .map(Pid::from_raw);
        Ok(Group { child, pgid, what })
    }

    pub fn child_mut(&mut self) -> &mut tokio::process::Child {
        &mut self.child
    }

    /// The leader's pid.
    pub fn pid(&self) -> Option<u32> {
        self.pgid.and_then(|p| u32::try_from(p.as_raw()).ok())
    }

    /// Waits for the leader to exit, then ends what is left of its group.
    pub async fn wait(&mut self) -> Option<ExitStatus> {
        let status = self.child.wait().await.ok();
        self.kill_rest();
        status
    }

    /// Whether the leader has exited, and how.
    pub fn try_exited(&mut self) -> Option<ExitStatus> {
        let status = self.child.try_wait().ok().flatten()?;
        self.kill_rest();
        Some(status)
    }

    /// Stops the group: `SIGINT` (what Ctrl-C sends: servers shut down gracefully on it), then
    /// `SIGKILL` after `grace`. Returns the leader's exit status.
    pub async fn stop(&mut self, grace: Duration) -> Option<ExitStatus> {
        self.signal(Signal::SIGINT);
        match tokio::time::timeout(grace, self.child.wait()).await {
            Ok(status) => {
                self.kill_rest();
                status.ok()
            }
            Err(_) => {
                tracing_free_warn(&format!(
                    "{} did not stop within {:.0?} of SIGINT: killing it",
                    self.what, grace
                ));
                self.signal(Signal::SIGKILL);
                let status = self.child.wait().await.ok();
                self.pgid = None;
                status
            }
        }
    }

    /// Sends a signal to the whole group.
    fn signal(&self, signal: Signal) {
        if let Some(pgid) = self.pgid {
            // ESRCH: the group is already gone.
            let _ = killpg(pgid, signal);
        }
    }

    /// After the leader exited: anything it left running in its group is killed.
    fn kill_rest(&mut self) {
        self.signal(Signal::SIGKILL);
        self.pgid = None;
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        // A group dropped without being stopped (an error path, a panic): nothing of it may
        // outlive `cargo sake`.
        self.signal(Signal::SIGKILL);
    }
}

fn tracing_free_warn(message: &str) {
    eprintln!("{} {message}", crate::style::warning("warning:"));
}

/// How to start the server.
#[derive(Debug)]
pub(crate) struct ServerOptions<'a> {
    pub executable: &'a std::path::Path,
    pub port: u16,
    /// `SAKE_SESSION_KEY`, unless the environment has one.
    pub key: &'a str,
    /// Arguments; `{port}` in them becomes the port.
    pub args: &'a [String],
    /// `SAKE_PREVIOUS_LISTS`.
    pub previous_lists: Option<std::path::PathBuf>,
    /// `SAKE_WRITE_SERVER_JSON`.
    pub server_json: Option<std::path::PathBuf>,
    /// `SAKE_DEV_APPS`: the MCP Apps preview's files (`dev` only).
    pub apps: Option<&'a std::path::Path>,
    /// Keep the server's output (shown if it fails to start) instead of passing it through.
    pub quiet: bool,
}

/// The most of a quiet server's output kept.
const KEPT_OUTPUT: usize = 64 * 1024;

/// A running server.
#[derive(Debug)]
pub(crate) struct Server {
    group: Group,
    pub port: u16,
    output: Option<tokio::task::JoinHandle<String>>,
}

impl Server {
    /// Starts the server after checking that nothing else listens on its port.
    pub async fn start(opts: ServerOptions<'_>) -> Result<Server, Error> {
        port_free(opts.port).await?;
        let mut cmd = tokio::process::Command::new(opts.executable);
        let port = opts.port.to_string();
        cmd.args(opts.args.iter().map(|a| a.replace("{port}", &port)))
            .env("PORT", &port)
            .stdin(std::process::Stdio::null());
        if std::env::var_os("SAKE_SESSION_KEY").is_none() {
            cmd.env("SAKE_SESSION_KEY", opts.key);
        }
        // `cargo sake` says what the server lists itself: no start-up greeting at every
        // restart, unless the environment asks for it (`SAKE_QUIET=0`).
        if std::env::var_os("SAKE_QUIET").is_none() {
            cmd.env("SAKE_QUIET", "1");
        }
        if let Some(p) = &opts.previous_lists {
            cmd.env("SAKE_PREVIOUS_LISTS", p);
        }
        if let Some(p) = &opts.server_json {
            cmd.env("SAKE_WRITE_SERVER_JSON", p);
        }
        // Only `dev` serves the preview; any other run, even one from this environment, not.
        match opts.apps {
            Some(dir) => cmd.env("SAKE_DEV_APPS", dir),
            None => cmd.env_remove("SAKE_DEV_APPS"),
        };
        if opts.quiet {
            cmd.stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped());
        }
        let mut group = Group::spawn(cmd, "the server")?;
        let output = if opts.quiet {
            let child = group.child_mut();
            let (out, err) = (child.stdout.take(), child.stderr.take());
            Some(tokio::spawn(async move {
                use tokio::io::AsyncReadExt as _;
                let mut kept = Vec::new();
                let (mut out_buf, mut err_buf) = (Vec::new(), Vec::new());
                let read_out = async {
                    if let Some(mut o) = out {
                        let _ = o.read_to_end(&mut out_buf).await;
                    }
                };
                let read_err = async {
                    if let Some(mut e) = err {
                        let _ = e.read_to_end(&mut err_buf).await;
                    }
                };
                tokio::join!(read_out, read_err);
                kept.extend_from_slice(&err_buf);
                kept.extend_from_slice(&out_buf);
                let start = kept.len().saturating_sub(KEPT_OUTPUT);
                String::from_utf8_lossy(&kept[start..]).into_owned()
            }))
        } else {
            None
        };
        Ok(Server {
            group,
            port: opts.port,
            output,
        })
    }

    pub fn pid(&self) -> Option<u32> {
        self.group.pid()
    }

    /// Waits until the server accepts connections on its port. It fails if the server exits
    /// first or does not listen within `timeout` (it is then stopped).
    pub async fn ready(&mut self, timeout: Duration) -> Result<(), Error> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(status) = self.group.try_exited() {
                let output = self.output().await;
                return Err(Error::Server(format!(
                    "the server exited ({status}) before it listened on port {}{output}",
                    self.port
                )));
            }
            if tokio::net::TcpStream::connect(("127.0.0.1", self.port))
                .await
                .is_ok()
            {
                return Ok(());
            }
            if tokio::time::Instant::now() >= deadline {
                self.stop().await;
                let output = self.output().await;
                return Err(Error::Server(format!(
                    "the server did not listen on 127.0.0.1:{} within {:.0?}: it must serve HTTP on the port in PORT (as `cargo sake new` servers do), or take it as `{{port}}` in its arguments after `--`{output}",
                    self.port, timeout
                )));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The kept output of a quiet server, after it exited, as lines to append to a message.
    async fn output(&mut self) -> String {
        match self.output.take() {
            Some(task) => match task.await {
                Ok(text) if !text.trim().is_empty() => {
                    format!("; its output:\n{}", text.trim_end())
                }
                _ => String::new(),
            },
            None => String::new(),
        }
    }

    /// Whether it has exited, and how.
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.group.try_exited()
    }

    /// Waits for it to exit.
    pub async fn wait(&mut self) -> Option<ExitStatus> {
        self.group.wait().await
    }

    /// Stops it: `SIGINT` (a graceful shutdown), `SIGKILL` after 5 seconds.
    pub async fn stop(&mut self) -> Option<ExitStatus> {
        self.group.stop(Duration::from_secs(5)).await
    }
}

/// Fails if something listens on the port already (with the `SO_REUSEADDR` servers use, so that
/// the connections of a server just stopped do not count).
pub(crate) async fn port_free(port: u16) -> Result<(), Error> {
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let socket = tokio::net::TcpSocket::new_v4()
        .map_err(|e| Error::Server(format!("cannot open a socket: {e}")))?;
    let _ = socket.set_reuseaddr(true);
    match socket.bind(addr).and_then(|()| socket.listen(1)) {
        Ok(_) => Ok(()),
        Err(e) => Err(Error::Server(format!(
            "port {port} is taken ({e}): another server listens there; pick another with --port"
        ))),
    }
}

/// A port nothing listens on now, chosen by the system.
pub(crate) fn free_port() -> Result<u16, Error> {
    std::net::TcpListener::bind(("127.0.0.1", 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| Error::Server(format!("no free port: {e}")))
}
