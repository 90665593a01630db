//! Long-lived responses, read as they arrive: `subscriptions/listen` streams, SSE responses a
//! test abandons half-way, and servers on a real socket (graceful shutdown, disconnects).
//!
//! [`Wire::open`] sends a request in memory and hands back the response before its body has
//! ended; [`Live`] serves on `127.0.0.1:0` and speaks HTTP/1.1 over a `TcpStream`. Either way
//! an [`Open`] yields the body's SSE events one at a time — keep-alive comments included —
//! and validates every JSON-RPC message against the schema, as [`Wire::send`] does.

use std::net::SocketAddr;
use std::time::Duration;

use http_body_util::BodyExt as _;
use serde_json::Value;
use tokio::net::TcpStream;
use tower::ServiceExt as _;

use crate::http::{MODERN, Req, Wire};
use crate::schema::validate;

/// How long a test waits for the next event before failing.
pub const PATIENCE: Duration = Duration::from_secs(5);

/// One SSE event of an open stream.
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    /// A JSON-RPC message (already validated).
    Message(Value),
    /// A comment block (`: keep-alive`), without the colon.
    Comment(String),
}

/// Where the bytes come from.
#[derive(Debug)]
enum Source {
    /// An in-memory response body.
    Memory(axum::body::Body),
    /// A socket, after the response head; chunked or length-delimited.
    Socket(SocketBody),
}

/// A response whose body is read as it arrives.
#[derive(Debug)]
pub struct Open {
    /// The HTTP status.
    pub status: u16,
    /// The response headers.
    pub headers: http::HeaderMap,
    source: Source,
    /// Body text received but not yet split into events.
    pending: String,
    /// The body has ended.
    ended: bool,
    revision: &'static str,
    request_method: Option<String>,
}

impl Open {
    /// A header's value as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }

    /// Asserts the head of an SSE response: 200, `text/event-stream`, `X-Accel-Buffering: no`.
    #[track_caller]
    pub fn assert_sse(&self) {
        assert_eq!(
            (self.status, self.header("content-type")),
            (200, Some("text/event-stream"))
        );
        assert_eq!(self.header("x-accel-buffering"), Some("no"));
    }

    /// The next event, or `None` when the body ends; panics after [`PATIENCE`].
    pub async fn next(&mut self) -> Option<Item> {
        match self.next_within(PATIENCE).await {
            Ok(item) => item,
            Err(()) => panic!("no event within {PATIENCE:?}"),
        }
    }

    /// The next event within `wait`: `Err(())` if none came in time, `Ok(None)` at the end.
    pub async fn next_within(&mut self, wait: Duration) -> Result<Option<Item>, ()> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if let Some(item) = self.take_event() {
                return Ok(Some(item));
            }
            if self.ended {
                assert!(
                    self.pending.trim().is_empty(),
                    "the body ended inside an event: {:?}",
                    self.pending
                );
                return Ok(None);
            }
            let chunk = tokio::time::timeout_at(deadline, self.read_chunk())
                .await
                .map_err(|_| ())?;
            match chunk {
                Some(bytes) => self
                    .pending
                    .push_str(std::str::from_utf8(&bytes).expect("SSE is UTF-8")),
                None => self.ended = true,
            }
        }
    }

    /// The next JSON-RPC message, skipping keep-alive comments; panics at the end.
    pub async fn message(&mut self) -> Value {
        loop {
            match self.next().await {
                Some(Item::Message(m)) => return m,
                Some(Item::Comment(_)) => continue,
                None => panic!("the stream ended while a message was expected"),
            }
        }
    }

    /// Asserts that no message arrives for `wait` (keep-alive comments may).
    pub async fn assert_quiet_for(&mut self, wait: Duration) {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match self.next_within(left).await {
                Err(()) => return,
                Ok(Some(Item::Comment(_))) => continue,
                Ok(Some(Item::Message(m))) => panic!("unexpected message {m}"),
                Ok(None) => panic!("the stream ended"),
            }
        }
    }

    /// Asserts that the body ends now (no further event).
    pub async fn assert_end(&mut self) {
        assert_eq!(self.next().await, None);
    }

    /// Reads the whole remaining body as one JSON message (a plain JSON answer), validated.
    pub async fn json(mut self) -> Value {
        let mut body = std::mem::take(&mut self.pending).into_bytes();
        while let Some(bytes) = tokio::time::timeout(PATIENCE, self.read_chunk())
            .await
            .expect("the body ends in time")
        {
            body.extend(bytes);
        }
        let v: Value = serde_json::from_slice(&body).expect("a JSON body");
        validate(self.revision, self.request_method.as_deref(), &v);
        v
    }

    /// Splits one complete event off the received text.
    fn take_event(&mut self) -> Option<Item> {
        loop {
            let normalized = self.pending.replace("\r\n", "\n");
            let end = normalized.find("\n\n")?;
            let block = normalized[..end].to_owned();
            self.pending = normalized[end + 2..].to_owned();
            let mut data = Vec::new();
            let mut comments = Vec::new();
            for line in block.lines() {
                if let Some(c) = line.strip_prefix(':') {
                    comments.push(c.trim_start().to_owned());
                } else if let Some(d) = line.strip_prefix("data:") {
                    data.push(d.strip_prefix(' ').unwrap_or(d).to_owned());
                } else if !line.is_empty() {
                    panic!("a 2026-07-28 stream sends only data lines and comments: {line:?}");
                }
            }
            if !data.is_empty() {
                let m: Value = serde_json::from_str(&data.join("\n"))
                    .expect("every data: frame is one JSON value");
                validate(self.revision, self.request_method.as_deref(), &m);
                return Some(Item::Message(m));
            }
            if !comments.is_empty() {
                return Some(Item::Comment(comments.join("\n")));
            }
        }
    }

    async fn read_chunk(&mut self) -> Option<Vec<u8>> {
        match &mut self.source {
            Source::Memory(body) => loop {
                match body.frame().await? {
                    Ok(frame) => {
                        if let Ok(data) = frame.into_data() {
                            return Some(data.to_vec());
                        }
                    }
                    Err(e) => panic!("the body failed: {e}"),
                }
            },
            Source::Socket(s) => s.read_chunk().await,
        }
    }
}

impl Wire {
    /// Sends one request in memory and returns as soon as the response head is there.
    /// Dropping the [`Open`] drops the response body, as a client closing the stream does.
    pub async fn open(&self, req: Req) -> Open {
        let request_method = req
            .body_json()
            .and_then(|b| b.get("method").and_then(Value::as_str).map(str::to_owned));
        let response = self
            .service()
            .router()
            .oneshot(req.build())
            .await
            .expect("the router is infallible");
        let (parts, body) = response.into_parts();
        Open {
            status: parts.status.as_u16(),
            headers: parts.headers,
            source: Source::Memory(body),
            pending: String::new(),
            ended: false,
            revision: MODERN,
            request_method,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// A server on a real socket

/// A server serving on `127.0.0.1:<port>` until [`Live::shutdown`] (or until it is dropped).
#[derive(Debug)]
pub struct Live {
    /// Where it listens.
    pub addr: SocketAddr,
    service: sake::Service,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<Result<(), sake::Error>>>,
}

impl Live {
    /// Builds the server and serves it with [`sake::Service::serve`].
    pub async fn start(server: sake::Server) -> Live {
        let service = server.build().expect("the test server builds");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(service.clone().serve(listener, async {
            let _ = stopped.await;
        }));
        Live {
            addr,
            service,
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// The endpoint's URL.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// The service being served (for its notifier).
    pub fn service(&self) -> &sake::Service {
        &self.service
    }

    /// Sends one request on a fresh connection and returns the connection without waiting
    /// for an answer (for requests that answer nothing until they finish).
    pub async fn open_pending(&self, req: Req) -> TcpStream {
        self.connect_and_send(&req.to_http1()).await
    }

    /// Sends one request on a fresh connection and returns after the response head.
    /// Dropping the [`Open`] closes the connection.
    pub async fn open(&self, req: Req) -> Open {
        let bytes = req.to_http1();
        self.open_bytes(&bytes).await
    }

    /// Sends a request written out by hand (an HTTP/1.1 message) and returns after the
    /// response head.
    pub async fn open_bytes(&self, request: &[u8]) -> Open {
        let request_method = request
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .and_then(|i| serde_json::from_slice::<Value>(&request[i + 4..]).ok())
            .and_then(|b| b.get("method").and_then(Value::as_str).map(str::to_owned));
        let tcp = self.connect_and_send(request).await;
        let (status, headers, body) = tokio::time::timeout(PATIENCE, SocketBody::read_head(tcp))
            .await
            .expect("a response head in time");
        Open {
            status,
            headers,
            source: Source::Socket(body),
            pending: String::new(),
            ended: false,
            revision: MODERN,
            request_method,
        }
    }

    async fn connect_and_send(&self, request: &[u8]) -> TcpStream {
        let tcp = TcpStream::connect(self.addr).await.unwrap();
        write_all(&tcp, request).await.unwrap();
        tcp
    }

    /// Fires the shutdown signal (open streams end with their final messages) and waits
    /// for `serve` to return.
    pub async fn shutdown(&mut self) -> Result<(), sake::Error> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let task = self.task.take().expect("shut down once");
        tokio::time::timeout(PATIENCE, task)
            .await
            .expect("serve returns after the signal")
            .expect("the serving task does not panic")
    }
}

/// An HTTP/1.1 response body on a socket.
#[derive(Debug)]
struct SocketBody {
    tcp: TcpStream,
    /// Bytes read past what was consumed.
    buf: Vec<u8>,
    framing: Framing,
}

#[derive(Debug)]
enum Framing {
    Chunked,
    Length(usize),
    /// The body has ended.
    Done,
}

impl SocketBody {
    async fn read_head(tcp: TcpStream) -> (u16, http::HeaderMap, SocketBody) {
        let mut buf = Vec::new();
        let (head, at) = loop {
            if let Some(head) = crate::raw::parse_head(&buf) {
                break head;
            }
            let mut chunk = [0u8; 4096];
            let n = read_some(&tcp, &mut chunk).await.unwrap();
            assert!(n > 0, "the connection closed before a response head");
            buf.extend_from_slice(&chunk[..n]);
        };
        let rest = buf[at..].to_vec();
        let status = head.status;
        let mut headers = http::HeaderMap::new();
        for (name, value) in &head.headers {
            headers.append(
                http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                http::HeaderValue::from_str(value).unwrap(),
            );
        }
        let chunked = headers
            .get("transfer-encoding")
            .is_some_and(|v| v.to_str().unwrap().eq_ignore_ascii_case("chunked"));
        let framing = if chunked {
            Framing::Chunked
        } else {
            let len = headers
                .get("content-length")
                .map_or(0, |v| v.to_str().unwrap().parse().unwrap());
            Framing::Length(len)
        };
        (
            status,
            headers,
            SocketBody {
                tcp,
                buf: rest,
                framing,
            },
        )
    }

    /// Reads more bytes into the buffer; `false` at end of file.
    async fn fill(&mut self) -> bool {
        let mut chunk = [0u8; 4096];
        let n = read_some(&self.tcp, &mut chunk).await.unwrap_or(0);
        self.buf.extend_from_slice(&chunk[..n]);
        n > 0
    }

    /// The next piece of the body, `None` at its end.
    async fn read_chunk(&mut self) -> Option<Vec<u8>> {
        loop {
            match self.framing {
                Framing::Done => return None,
                Framing::Length(0) => {
                    self.framing = Framing::Done;
                    return None;
                }
                Framing::Length(left) => {
                    if self.buf.is_empty() && !self.fill().await {
                        panic!("the connection closed with {left} body bytes missing");
                    }
                    let n = left.min(self.buf.len());
                    self.framing = Framing::Length(left - n);
                    return Some(self.buf.drain(..n).collect());
                }
                Framing::Chunked => {
                    let Some(line_end) = self.buf.windows(2).position(|w| w == b"\r\n") else {
                        assert!(self.fill().await, "the connection closed inside a chunk");
                        continue;
                    };
                    let size_line = std::str::from_utf8(&self.buf[..line_end]).unwrap();
                    let size = usize::from_str_radix(size_line.split(';').next().unwrap(), 16)
                        .expect("a chunk size");
                    if self.buf.len() < line_end + 2 + size + 2 {
                        assert!(self.fill().await, "the connection closed inside a chunk");
                        continue;
                    }
                    let data = self.buf[line_end + 2..line_end + 2 + size].to_vec();
                    self.buf.drain(..line_end + 2 + size + 2);
                    if size == 0 {
                        self.framing = Framing::Done;
                        return None;
                    }
                    return Some(data);
                }
            }
        }
    }
}

/// Whether the peer has closed a connection: reads until EOF or `wait` passes.
pub async fn closed_within(open: &mut Open, wait: Duration) -> bool {
    let Source::Socket(s) = &mut open.source else {
        panic!("only socket streams can be watched for closing")
    };
    tokio::time::timeout(wait, async {
        let mut chunk = [0u8; 4096];
        loop {
            match read_some(&s.tcp, &mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    })
    .await
    .is_ok()
}

/// Reads what is available (waiting for something); `Ok(0)` at end of file.
async fn read_some(tcp: &TcpStream, buf: &mut [u8]) -> std::io::Result<usize> {
    loop {
        tcp.readable().await?;
        match tcp.try_read(buf) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            other => return other,
        }
    }
}

/// Writes all of `data`.
async fn write_all(tcp: &TcpStream, mut data: &[u8]) -> std::io::Result<()> {
    while !data.is_empty() {
        tcp.writable().await?;
        match tcp.try_write(data) {
            Ok(n) => data = &data[n..],
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
