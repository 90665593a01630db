//! stdio: the server is a child process; one JSON-RPC message per line each way.

use std::process::Stdio as StdStdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use super::core::{AbortOnDrop, Core, parse_message, response_body};
use super::error::ClientError;
use super::negotiate::{Body, Exchange};
use crate::protocol::jsonrpc::RequestId;

/// The longest line read from the server.
const MAX_LINE: usize = 64 << 20;

/// A server child process.
pub(crate) struct Stdio {
    pub(crate) key: String,
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    child: Mutex<Option<Child>>,
    core: Arc<Core>,
    reader: Mutex<Option<AbortOnDrop>>,
}

/// A stable name for a command line: the memory key of a stdio server.
pub(crate) fn command_key(cmd: &Command) -> String {
    let std = cmd.as_std();
    let mut key = format!("stdio:{}", std.get_program().to_string_lossy());
    for a in std.get_args() {
        key.push(' ');
        key.push_str(&a.to_string_lossy());
    }
    key
}

impl Stdio {
    pub(crate) fn spawn(mut cmd: Command, core: Arc<Core>) -> Result<Arc<Self>, ClientError> {
        let key = command_key(&cmd);
        cmd.stdin(StdStdio::piped())
            .stdout(StdStdio::piped())
            .kill_on_drop(true);
        let mut child = cmd.spawn().map_err(ClientError::Spawn)?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let this = Arc::new(Stdio {
            key,
            stdin: tokio::sync::Mutex::new(stdin),
            child: Mutex::new(Some(child)),
            core,
            reader: Mutex::new(None),
        });
        if let Some(stdout) = stdout {
            let weak = Arc::downgrade(&this);
            let core = Arc::clone(&this.core);
            let task = tokio::spawn(read_loop(stdout, core, weak));
            if let Ok(mut r) = this.reader.lock() {
                *r = Some(AbortOnDrop(task));
            }
        }
        Ok(this)
    }

    /// Writes one message line.
    pub(crate) async fn write(&self, mut body: Vec<u8>) -> Result<(), ClientError> {
        body.push(b'\n');
        let mut guard = self.stdin.lock().await;
        let stdin = guard.as_mut().ok_or(ClientError::Closed)?;
        stdin.write_all(&body).await.map_err(ClientError::Io)?;
        stdin.flush().await.map_err(ClientError::Io)
    }

    /// Sends a request and waits for its response (at most `timeout`).
    pub(crate) async fn request(
        &self,
        id: &RequestId,
        body: Vec<u8>,
        timeout: Option<Duration>,
    ) -> Result<Option<Exchange>, ClientError> {
        let (rx, _waiting) = self.core.pending(id);
        self.write(body).await?;
        let answer = match timeout {
            Some(t) => match tokio::time::timeout(t, rx).await {
                Ok(a) => a,
                Err(_) => return Ok(None),
            },
            None => rx.await,
        };
        match answer {
            Ok(a) => Ok(Some(Exchange {
                status: 200,
                body: Body::Response(a),
            })),
            Err(_) => Err(ClientError::Closed),
        }
    }

    /// Closes stdin, waits briefly for the process to exit, then kills it.
    pub(crate) async fn close(&self) {
        self.stdin.lock().await.take();
        let child = self.child.lock().ok().and_then(|mut c| c.take());
        if let Some(mut child) = child {
            match tokio::time::timeout(Duration::from_secs(2), child.wait()).await {
                Ok(_) => {}
                Err(_) => {
                    let _ = child.kill().await;
                }
            }
        }
        if let Ok(mut r) = self.reader.lock() {
            r.take();
        }
        self.core.close_all();
    }
}

async fn read_loop(mut stdout: ChildStdout, core: Arc<Core>, owner: std::sync::Weak<Stdio>) {
    let mut buf: Vec<u8> = Vec::with_capacity(8192);
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = match stdout.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        buf.extend_from_slice(&chunk[..n]);
        while let Some(pos) = buf.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = buf.drain(..=pos).collect();
            let line = line.trim_ascii();
            if line.is_empty() {
                continue;
            }
            let msg = parse_message(line);
            let Some((rid, method, params)) = core.route(msg, None) else {
                continue;
            };
            // A request of the server: answer it without holding up the reader.
            let core = Arc::clone(&core);
            let owner = owner.clone();
            tokio::spawn(async move {
                let outcome = core
                    .handlers
                    .answer(&method, params.as_deref())
                    .await
                    .map_err(|f| f.to_rpc());
                if let Some(stdio) = owner.upgrade()
                    && let Err(e) = stdio.write(response_body(&rid, &outcome)).await
                {
                    tracing::warn!(%method, "could not answer the server's request: {e}");
                }
            });
        }
        if buf.len() > MAX_LINE {
            tracing::warn!("the server wrote a line longer than {MAX_LINE} bytes; closing");
            break;
        }
    }
    tracing::debug!("the server's stdout closed");
    core.close_all();
}
