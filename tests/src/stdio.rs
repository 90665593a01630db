//! stdio: the example binaries and `sake-demo` (`examples/installable/`), built once per test
//! binary and spawned with piped stdin, stdout and stderr ([`spawn_example`], [`spawn`]); a
//! line-oriented JSON-RPC [`Peer`] over any reader and
//! writer (an in-memory duplex, or a child process's pipes), which checks that every line the
//! server writes is one JSON-RPC 2.0 object; and [`Stdio`], a service served on an in-memory
//! pipe whose every line is validated against the schema.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, Lines};

use crate::schema::validate;
use crate::within;

/// The path of an example binary of sake (the root package, `examples/`), built with the
/// profile and target directory of the running test (so `cargo test --test stdio` alone works
/// too).
pub fn example_binary(name: &str) -> PathBuf {
    built(&["--example", name], Path::new("examples").join(name))
}

/// [`example_binary`] for an example that needs features of the root package (its
/// `required-features`), built with them.
pub fn example_binary_with(name: &str, features: &str) -> PathBuf {
    built(
        &["--example", name, "--features", features],
        Path::new("examples").join(name),
    )
}

/// The path of the binary of a package of the workspace whose binary has the package's name
/// (`sake-demo`, `examples/installable/`), built as [`example_binary`] builds examples.
pub fn package_binary(package: &str) -> PathBuf {
    built(
        &["--package", package, "--bin", package],
        PathBuf::from(package),
    )
}

/// Runs `cargo build <what>` once per test binary, with the running test's profile and target
/// directory, and returns `<target>/<profile>/<path>`.
fn built(what: &[&str], path: PathBuf) -> PathBuf {
    static BUILT: OnceLock<Mutex<HashMap<Vec<String>, PathBuf>>> = OnceLock::new();
    let key: Vec<String> = what.iter().map(|s| (*s).to_owned()).collect();
    let mut built = BUILT
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(path) = built.get(&key) {
        return path.clone();
    }
    // The test runs from <target>/<profile>/deps/<test>-<hash>.
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(Path::parent).unwrap();
    let target_dir = profile_dir.parent().unwrap();
    let profile = match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") => "dev".to_owned(),
        Some(other) => other.to_owned(),
        None => panic!("unexpected test path {}", exe.display()),
    };
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = std::process::Command::new(cargo)
        .args(["build", "--quiet"])
        .args(what)
        .args(["--profile", &profile])
        .arg("--manifest-path")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml"))
        .arg("--target-dir")
        .arg(target_dir)
        .status()
        .expect("running cargo to build a binary");
    assert!(status.success(), "cargo build {} failed", what.join(" "));
    let path = profile_dir.join(format!(
        "{}{}",
        path.display(),
        std::env::consts::EXE_SUFFIX
    ));
    assert!(path.exists(), "{} was not built", path.display());
    built.insert(key, path.clone());
    path
}

/// The `_meta` of a 2026-07-28 request, with client capabilities and extra keys.
pub fn modern_meta(capabilities: Value, extra: Value) -> Value {
    let mut meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "stdio-tests", "version": "1.0.0"},
    });
    if let (Some(m), Value::Object(extra)) = (meta.as_object_mut(), extra) {
        m.extend(extra);
    }
    meta
}

/// A client's end of a newline-delimited JSON-RPC connection.
pub struct Peer {
    writer: Option<Box<dyn AsyncWrite + Unpin + Send>>,
    lines: Lines<BufReader<Box<dyn AsyncRead + Unpin + Send>>>,
}

impl std::fmt::Debug for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Peer")
            .field("open", &self.writer.is_some())
            .finish_non_exhaustive()
    }
}

impl Peer {
    pub fn new(
        writer: impl AsyncWrite + Unpin + Send + 'static,
        reader: impl AsyncRead + Unpin + Send + 'static,
    ) -> Peer {
        let reader: Box<dyn AsyncRead + Unpin + Send> = Box::new(reader);
        Peer {
            writer: Some(Box::new(writer)),
            lines: BufReader::new(reader).lines(),
        }
    }

    /// Writes one line as it is (no newline in `line`).
    pub async fn send_raw(&mut self, line: &str) {
        let w = self.writer.as_mut().expect("stdin is open");
        within("writing a line", async {
            w.write_all(line.as_bytes()).await.unwrap();
            w.write_all(b"\n").await.unwrap();
            w.flush().await.unwrap();
        })
        .await;
    }

    /// Writes one line as it is, as far as the server reads it: a server that refuses the
    /// line may close the connection before the last of its bytes are written (a broken
    /// pipe or a reset is then what the writer sees, and is no failure).
    pub async fn send_raw_until_refused(&mut self, line: &str) {
        let w = self.writer.as_mut().expect("stdin is open");
        let written = within("writing a line", async {
            w.write_all(line.as_bytes()).await?;
            w.write_all(b"\n").await?;
            w.flush().await
        })
        .await;
        if let Err(e) = written {
            assert!(
                matches!(
                    e.kind(),
                    std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset
                ),
                "writing a refused line: {e}"
            );
        }
    }

    /// Writes one message.
    pub async fn send(&mut self, message: Value) {
        self.send_raw(&message.to_string()).await;
    }

    /// Sends a request.
    pub async fn request(&mut self, id: impl Into<Value>, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": id.into(), "method": method, "params": params}))
            .await;
    }

    /// Sends a notification.
    pub async fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await;
    }

    /// The next line the server writes, which must be a JSON-RPC 2.0 message.
    pub async fn recv(&mut self) -> Value {
        let line = within("waiting for a line", self.lines.next_line())
            .await
            .unwrap()
            .expect("the server closed stdout");
        parse_message(&line)
    }

    /// The next line, or `None` if the server writes nothing for `quiet`.
    pub async fn recv_within(&mut self, quiet: Duration) -> Option<Value> {
        match tokio::time::timeout(quiet, self.lines.next_line()).await {
            Err(_) => None,
            Ok(line) => Some(parse_message(
                &line.unwrap().expect("the server closed stdout"),
            )),
        }
    }

    /// Sends a request and returns the next line, which must be its response.
    pub async fn call(&mut self, id: impl Into<Value>, method: &str, params: Value) -> Value {
        self.request(id, method, params).await;
        self.recv().await
    }

    /// A `ping` with `id` answered next: nothing else was written before it.
    pub async fn barrier(&mut self, id: impl Into<Value>) {
        let id = id.into();
        let got = self.call(id.clone(), "ping", json!({})).await;
        assert_eq!(got, json!({"jsonrpc": "2.0", "id": id, "result": {}}));
    }

    /// `initialize` at a handshake revision, then `notifications/initialized`.
    pub async fn initialize(&mut self, revision: &str, capabilities: Value) -> Value {
        let result = self
            .call(
                "init",
                "initialize",
                json!({
                    "protocolVersion": revision,
                    "capabilities": capabilities,
                    "clientInfo": {"name": "stdio-tests", "version": "1.0.0"},
                }),
            )
            .await;
        self.notify("notifications/initialized", json!({})).await;
        result
    }

    /// Closes stdin.
    pub fn close(&mut self) {
        self.writer = None;
    }

    /// Everything written until stdout closes.
    pub async fn rest(&mut self) -> Vec<Value> {
        let mut out = Vec::new();
        while let Some(line) = within("reading to EOF", self.lines.next_line())
            .await
            .unwrap()
        {
            out.push(parse_message(&line));
        }
        out
    }
}

/// One line of stdout: a JSON-RPC 2.0 message, or a batch of them (2025-03-26).
fn parse_message(line: &str) -> Value {
    let v: Value = serde_json::from_str(line)
        .unwrap_or_else(|e| panic!("stdout carried a line that is not JSON ({e}): {line:?}"));
    let messages = match &v {
        Value::Array(items) if !items.is_empty() => items.iter().collect(),
        _ => vec![&v],
    };
    for m in messages {
        assert_eq!(
            m.get("jsonrpc"),
            Some(&json!("2.0")),
            "stdout carried something other than a JSON-RPC 2.0 message: {line}"
        );
    }
    v
}

/// A spawned example binary on stdio: its peer, and the child for the exit status.
#[derive(Debug)]
pub struct Spawned {
    pub peer: Peer,
    pub child: tokio::process::Child,
    pub stderr: tokio::task::JoinHandle<String>,
}

/// Spawns an example binary with piped stdin, stdout and stderr (`RUST_LOG=debug`).
pub fn spawn_example(name: &str) -> Spawned {
    spawn(&example_binary(name), &[])
}

/// Spawns `binary` with `args`, piped stdin, stdout and stderr (`RUST_LOG=debug`).
pub fn spawn(binary: &Path, args: &[&str]) -> Spawned {
    let mut child = tokio::process::Command::new(binary)
        .args(args)
        .env("RUST_LOG", "debug")
        .env("NO_COLOR", "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("spawning {}: {e}", binary.display()));
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let stderr = tokio::spawn(async move {
        let mut s = String::new();
        let _ = tokio::io::AsyncReadExt::read_to_string(&mut stderr, &mut s).await;
        s
    });
    Spawned {
        peer: Peer::new(stdin, stdout),
        child,
        stderr,
    }
}

/// A server under test on stdio, through an in-memory pipe (`Service::serve_io`).
#[derive(Debug)]
pub struct Stdio {
    to_server: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    from_server:
        tokio::io::Lines<tokio::io::BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
    task: tokio::task::JoinHandle<Result<(), sake::Error>>,
}

impl Stdio {
    /// Starts serving `service` on a fresh pipe.
    pub fn start(service: sake::Service) -> Stdio {
        use tokio::io::AsyncBufReadExt as _;
        let (client, server) = tokio::io::duplex(1 << 16);
        let (server_read, server_write) = tokio::io::split(server);
        let task = tokio::spawn(service.serve_io(server_read, server_write));
        let (client_read, client_write) = tokio::io::split(client);
        Stdio {
            to_server: client_write,
            from_server: tokio::io::BufReader::new(client_read).lines(),
            task,
        }
    }

    /// Writes `bytes` and a newline.
    pub async fn send_line(&mut self, bytes: &[u8]) {
        use tokio::io::AsyncWriteExt as _;
        self.to_server.write_all(bytes).await.unwrap();
        self.to_server.write_all(b"\n").await.unwrap();
        self.to_server.flush().await.unwrap();
    }

    /// Writes one message as a line.
    pub async fn send(&mut self, message: &Value) {
        self.send_line(&serde_json::to_vec(message).unwrap()).await;
    }

    /// The next line the server writes, as JSON, not validated. Fails after 60 s of silence.
    pub async fn recv_raw(&mut self) -> Value {
        let line = tokio::time::timeout(
            std::time::Duration::from_secs(60),
            self.from_server.next_line(),
        )
        .await
        .expect("the server answers within 60 s")
        .unwrap()
        .expect("the server's output is open");
        serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout carries only JSON ({e}): {line}"))
    }

    /// The next line the server writes, as JSON, validated against `revision`'s schema as an
    /// answer to `request_method`. Fails after 60 s of silence.
    pub async fn recv(&mut self, revision: &str, request_method: Option<&str>) -> Value {
        let line = tokio::time::timeout(
            std::time::Duration::from_secs(60),
            self.from_server.next_line(),
        )
        .await
        .expect("the server answers within 60 s")
        .unwrap()
        .expect("the server's output is open");
        let v: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout carries only JSON ({e}): {line}"));
        match &v {
            Value::Array(items) => {
                for m in items {
                    validate(revision, request_method, m);
                }
            }
            m => validate(revision, request_method, m),
        }
        v
    }

    /// Closes the server's input and waits for it to stop (reading whatever it still writes).
    pub async fn close(self) {
        use tokio::io::AsyncWriteExt as _;
        let Stdio {
            mut to_server,
            mut from_server,
            task,
        } = self;
        // The halves share one pipe: shutting the write side down is the EOF.
        to_server.shutdown().await.unwrap();
        let drain = async { while let Ok(Some(_)) = from_server.next_line().await {} };
        let (stopped, ()) = tokio::time::timeout(std::time::Duration::from_secs(60), async {
            tokio::join!(task, drain)
        })
        .await
        .expect("the server stops at EOF");
        stopped.unwrap().unwrap();
    }
}
