//! stdio: the server is a child process; one JSON-RPC message per line each way.

use std::process::Stdio as StdStdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};

use super::core::{AbortOnDrop, Core, Ended, parse_message, response_body};
use super::error::ClientError;
use super::negotiate::{Body, Exchange};
use crate::protocol::jsonrpc::RequestId;

/// The server's stdin, as the client writes it.
type Writer = Box<dyn AsyncWrite + Send + Unpin>;

/// A server on the other end of a pair of pipes: a child process's stdin and stdout.
pub(crate) struct Stdio {
    pub(crate) key: String,
    stdin: tokio::sync::Mutex<Option<Writer>>,
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
        Ok(Stdio::over(key, stdout, stdin, Some(child), core))
    }

    /// Talks to a server through `stdout` (what it writes) and `stdin` (what it reads); `child`
    /// is the process, when there is one, waited for and killed on close.
    pub(crate) fn over<R, W>(
        key: String,
        stdout: Option<R>,
        stdin: Option<W>,
        child: Option<Child>,
        core: Arc<Core>,
    ) -> Arc<Self>
    where
        R: AsyncRead + Send + Unpin + 'static,
        W: AsyncWrite + Send + Unpin + 'static,
    {
        let this = Arc::new(Stdio {
            key,
            stdin: tokio::sync::Mutex::new(stdin.map(|w| Box::new(w) as Writer)),
            child: Mutex::new(child),
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
        this
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
            Err(_) => Err(self.core.closed_error()),
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
        self.core.close(Ended::Closed);
    }
}

/// How reading one line ended.
#[derive(Debug, PartialEq, Eq)]
enum Line {
    /// A line (also a last one without a newline), in the buffer.
    Complete,
    /// The end of the output, with nothing left.
    Eof,
    /// The line passed the limit: reading stopped there.
    TooLong,
}

/// Reads one line into `buf` (without the newline); stops as soon as it is longer than `max`
/// bytes, so that a line without an end is not read forever. Each byte is looked at once.
async fn read_line<R: AsyncRead + Unpin>(
    r: &mut BufReader<R>,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Line> {
    loop {
        let available = r.fill_buf().await?;
        if available.is_empty() {
            return Ok(if buf.is_empty() {
                Line::Eof
            } else {
                Line::Complete
            });
        }
        let (chunk, used, done) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (&available[..i], i + 1, true),
            None => (available, available.len(), false),
        };
        if buf.len().saturating_add(chunk.len()) > max {
            return Ok(Line::TooLong);
        }
        buf.extend_from_slice(chunk);
        r.consume(used);
        if done {
            return Ok(Line::Complete);
        }
    }
}

/// Reads the server's messages, a line each, until its stdout closes. A last message without
/// a newline still counts.
async fn read_loop<R: AsyncRead + Unpin>(
    stdout: R,
    core: Arc<Core>,
    owner: std::sync::Weak<Stdio>,
) {
    let mut reader = BufReader::with_capacity(64 * 1024, stdout);
    let mut buf: Vec<u8> = Vec::with_capacity(8192);
    let max = core.limits.max_body;
    let mut why = Ended::Closed;
    loop {
        buf.clear();
        match read_line(&mut reader, &mut buf, max).await {
            Err(_) | Ok(Line::Eof) => break,
            Ok(Line::TooLong) => {
                tracing::warn!("the server wrote a line longer than {max} bytes; closing");
                why = Ended::TooLarge {
                    what: "a line from the server's stdout",
                    limit: max,
                };
                break;
            }
            Ok(Line::Complete) => {}
        }
        let line = buf.trim_ascii();
        if line.is_empty() {
            continue;
        }
        let msg = parse_message(line);
        let Some((rid, method, params)) = core.route(msg, None) else {
            continue;
        };
        // A request of the server: answer it without holding up the reader, in one of
        // `max_server_requests` slots; without a free slot, refuse it at once (in line: a
        // server that does not read its stdin then stops being read too).
        let Some(slot) = core.server_request_slot() else {
            tracing::warn!(%method, "too many requests of the server at once: refusing one");
            let refusal = response_body(&rid, &Err(core.busy(&method)));
            match owner.upgrade() {
                Some(stdio) => {
                    if let Err(e) = stdio.write(refusal).await {
                        tracing::warn!(%method, "could not answer the server's request: {e}");
                    }
                }
                None => break,
            }
            continue;
        };
        let core = Arc::clone(&core);
        let owner = owner.clone();
        tokio::spawn(async move {
            let outcome = core.answer(&method, params.as_deref(), None).await;
            if let Some(stdio) = owner.upgrade()
                && let Err(e) = stdio.write(response_body(&rid, &outcome)).await
            {
                tracing::warn!(%method, "could not answer the server's request: {e}");
            }
            // The slot is held until the answer is written: answers a server does not read
            // do not pile up either.
            drop(slot);
        });
    }
    tracing::debug!("the server's stdout closed");
    core.close(why);
}

#[cfg(test)]
mod tests {
    use std::pin::Pin;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::{Context, Poll};

    use serde_json::{Value, json};
    use tokio::io::{AsyncBufReadExt, ReadBuf};
    use tokio::sync::Semaphore;

    use super::*;
    use crate::client::core::Handlers;
    use crate::client::limits::Limits;
    use crate::protocol::types::ElicitResult;

    /// A server that writes `x` forever, without a newline, counting what was read of it.
    struct Endless(Arc<AtomicUsize>);

    impl AsyncRead for Endless {
        fn poll_read(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            let n = buf.remaining();
            buf.put_slice(&vec![b'x'; n]);
            self.0.fetch_add(n, Ordering::SeqCst);
            Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn a_line_without_an_end_is_read_up_to_the_limit_and_closes_the_connection() {
        let core = Arc::new(Core::new(Handlers::default(), Limits::default()));
        let id = RequestId::Number(1);
        let waiting = core.register(&id);
        let mut news = core.subscribe(|_| true);
        let read = Arc::new(AtomicUsize::new(0));
        // It returns: the line is not read forever.
        read_loop(
            Endless(Arc::clone(&read)),
            Arc::clone(&core),
            std::sync::Weak::new(),
        )
        .await;
        let read = read.load(Ordering::SeqCst);
        assert!(
            read <= (16 << 20) + 128 * 1024,
            "{read} bytes read of an endless line"
        );
        // The waiting request and the notification streams learn why.
        assert!(waiting.await.is_err());
        let err = core.closed_error();
        assert!(
            matches!(&err, ClientError::BodyTooLarge { limit, .. } if *limit == 16 << 20),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            "a line from the server's stdout is larger than 16777216 bytes, the client's limit; raise it with ClientBuilder::max_body_bytes"
        );
        assert!(news.rx.recv().await.is_none());
        let ended = news.end.lock().unwrap().take();
        assert!(
            matches!(ended, Some(ClientError::BodyTooLarge { .. })),
            "{ended:?}"
        );
    }

    #[tokio::test]
    async fn thousands_of_requests_of_the_server_get_at_most_the_limit_of_handlers_at_once() {
        const FLOOD: usize = 5000;
        let release = Arc::new(Semaphore::new(0));
        let (running, peak) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let (r, run, top) = (
            Arc::clone(&release),
            Arc::clone(&running),
            Arc::clone(&peak),
        );
        let handlers = Handlers {
            elicitation: Some(Arc::new(move |_| {
                let (r, run, top) = (Arc::clone(&r), Arc::clone(&run), Arc::clone(&top));
                Box::pin(async move {
                    let now = run.fetch_add(1, Ordering::SeqCst) + 1;
                    top.fetch_max(now, Ordering::SeqCst);
                    let _ = r.acquire().await;
                    run.fetch_sub(1, Ordering::SeqCst);
                    Ok(ElicitResult::decline())
                })
            })),
            ..Handlers::default()
        };
        let core = Arc::new(Core::new(handlers, Limits::default()));
        let (client_end, server_end) = tokio::io::duplex(1 << 16);
        let (from_server, to_server) = tokio::io::split(client_end);
        let (server_in, mut server_out) = tokio::io::split(server_end);
        // The server writes its requests and reads the answers at the same time.
        tokio::spawn(async move {
            for n in 1..=FLOOD {
                let mut line = json!({"jsonrpc": "2.0", "id": n, "method": "elicitation/create",
                    "params": {"message": "?", "requestedSchema": {"type": "object", "properties": {}}}})
                .to_string()
                .into_bytes();
                line.push(b'\n');
                if server_out.write_all(&line).await.is_err() {
                    return;
                }
            }
        });
        let answers = Arc::new(std::sync::Mutex::new(Vec::<Value>::new()));
        let log = Arc::clone(&answers);
        tokio::spawn(async move {
            let mut lines = BufReader::new(server_in).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if let Ok(mut a) = log.lock() {
                    a.push(serde_json::from_str(&line).unwrap_or(Value::Null));
                }
            }
        });
        let _stdio = Stdio::over(
            "stdio:flood".into(),
            Some(from_server),
            Some(to_server),
            None,
            Arc::clone(&core),
        );
        let count = || answers.lock().map(|a| a.len()).unwrap_or(0);
        let wait_for = |n: usize| async move {
            for _ in 0..1000 {
                if count() >= n {
                    return;
                }
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            panic!("{} answers, not {n}", count());
        };
        // Sixteen handlers run; every other request is refused at once, while they run.
        wait_for(FLOOD - 16).await;
        assert_eq!(count(), FLOOD - 16);
        assert_eq!(peak.load(Ordering::SeqCst), 16);
        assert_eq!(running.load(Ordering::SeqCst), 16);
        let refused = answers.lock().unwrap().clone();
        for (n, answer) in (17..=FLOOD).zip(&refused) {
            assert_eq!(
                answer,
                &json!({"jsonrpc": "2.0", "id": n, "error": {"code": -32603, "message":
                    "the client is already answering 16 requests of the server, its limit (ClientBuilder::max_server_requests); elicitation/create was not answered"}})
            );
        }
        // Released, the sixteen are answered.
        release.add_permits(16);
        wait_for(FLOOD).await;
        let all = answers.lock().unwrap().clone();
        let mut answered: Vec<i64> = all[FLOOD - 16..]
            .iter()
            .map(|a| {
                assert_eq!(a["result"], json!({"action": "decline"}));
                a["id"].as_i64().unwrap()
            })
            .collect();
        answered.sort_unstable();
        assert_eq!(answered, (1..=16).collect::<Vec<i64>>());
        assert_eq!(peak.load(Ordering::SeqCst), 16);
    }

    /// Every answer the server wrote arrives, its last one without a newline included, and
    /// a long stream of small lines is read in one pass.
    #[tokio::test]
    async fn reads_every_line_and_a_last_one_without_a_newline() {
        let core = Arc::new(Core::new(Handlers::default(), Limits::default()));
        let ids: Vec<RequestId> = (1..=2000).map(RequestId::Number).collect();
        let waiting: Vec<_> = ids.iter().map(|id| core.register(id)).collect();
        let mut out = String::new();
        for n in 1..=2000 {
            out.push_str(&format!(
                r#"{{"jsonrpc":"2.0","id":{n},"result":{{"n":{n}}}}}"#
            ));
            // Blank lines and CRLF are tolerated; the last message has no newline at all.
            if n < 2000 {
                out.push_str(if n % 2 == 0 { "\r\n\n" } else { "\n" });
            }
        }
        read_loop(out.as_bytes(), Arc::clone(&core), std::sync::Weak::new()).await;
        for (n, rx) in (1..=2000).zip(waiting) {
            let answer = rx.await.expect("answered").expect("a result");
            assert_eq!(answer.get(), format!(r#"{{"n":{n}}}"#));
        }
    }
}
