//! HTTP/1.1 by hand on a real socket, for what only a socket shows: what hyper refuses before
//! the server sees it, bytes no `http::Request` can hold, bodies sent by halves, source
//! addresses, connections held open or dropped. Bytes go in ([`crate::Req::to_http1`], or
//! written out by hand); a [`RawReply`] comes out.
//!
//! It needs only `std`, tokio, serde_json and the `sake` facade, so that the runtime's own
//! tests can include it by path (`sake-runtime/tests/exhaustion.rs` does).

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpSocket, TcpStream};

/// How long a test waits for a server to answer and close a connection before failing.
pub const CLOSE_PATIENCE: Duration = Duration::from_secs(60);

/// A loopback port that was free a moment ago (for a process that must be told its port).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port()
}

/// Waits (at most 20 s) until something accepts connections on the loopback `port`; fails
/// the test naming `what` otherwise.
pub async fn wait_until_listening(port: u16, what: &str) {
    let patience = Duration::from_secs(20);
    let deadline = tokio::time::Instant::now() + patience;
    while TcpStream::connect(("127.0.0.1", port)).await.is_err() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what} is not listening on port {port} after {patience:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Serves `server` on `127.0.0.1:<a free port>` until the test ends; its address.
pub async fn serve(server: sake::Server) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let service = server.build().unwrap();
    tokio::spawn(service.serve(listener, std::future::pending()));
    addr
}

/// A connection to `addr` from the address `from` (any of 127.0.0.0/8 reaches a loopback
/// listener on Linux): the server sees another client.
pub async fn connect_from(addr: SocketAddr, from: IpAddr) -> TcpStream {
    let socket = match from {
        IpAddr::V4(_) => TcpSocket::new_v4(),
        IpAddr::V6(_) => TcpSocket::new_v6(),
    }
    .unwrap();
    socket.bind(SocketAddr::new(from, 0)).unwrap();
    socket.connect(addr).await.unwrap()
}

/// An HTTP/1.1 answer as it came: the status, lowercase header names, the body (de-chunked).
#[derive(Clone, Debug)]
pub struct RawReply {
    /// The status line, such as `HTTP/1.1 200 OK`.
    pub status_line: String,
    /// The status code in it.
    pub status: u16,
    /// Lowercase name, value (trimmed), in the order written.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl RawReply {
    /// A header's value (by any case of its name).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON; fails the test when it is not.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|_| {
            panic!(
                "not JSON ({}): {}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }

    /// The `data` of each SSE event read whole so far.
    pub fn events(&self) -> Vec<Value> {
        String::from_utf8_lossy(&self.body)
            .split("\n\n")
            .filter_map(|e| {
                e.lines()
                    .find_map(|l| l.strip_prefix("data: "))
                    .filter(|d| !d.is_empty())
            })
            // An event not read whole yet is not one.
            .filter_map(|d| serde_json::from_str(d).ok())
            .collect()
    }

    /// Whether the body is a stream of server-sent events.
    pub fn is_sse(&self) -> bool {
        self.header("content-type")
            .is_some_and(|t| t.starts_with("text/event-stream"))
    }
}

/// The head of the reply in `raw` (its body empty) and where its body starts; `None` before
/// the end of the head.
pub fn parse_head(raw: &[u8]) -> Option<(RawReply, usize)> {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = String::from_utf8_lossy(&raw[..end]);
    let mut lines = head.split("\r\n");
    let status_line = lines.next()?.to_owned();
    let status = status_line.split(' ').nth(1)?.parse().ok()?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let reply = RawReply {
        status_line,
        status,
        headers,
        body: Vec::new(),
    };
    Some((reply, end + 4))
}

/// The reply in `raw`, with as much of its body as arrived (a chunk not read whole yet is
/// left out); `None` before the end of its head.
pub fn parse_partial(raw: &[u8]) -> Option<RawReply> {
    let (mut reply, at) = parse_head(raw)?;
    let body = &raw[at..];
    reply.body = if reply
        .header("transfer-encoding")
        .is_some_and(|t| t.contains("chunked"))
    {
        dechunk(body)
    } else {
        body.to_vec()
    };
    Some(reply)
}

/// A whole reply; fails the test when `raw` holds no HTTP head.
pub fn parse(raw: &[u8]) -> RawReply {
    parse_partial(raw)
        .unwrap_or_else(|| panic!("not an HTTP reply: {}", String::from_utf8_lossy(raw)))
}

/// The data of a chunked body, up to its end or to the first chunk not read whole.
fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = raw.windows(2).position(|w| w == b"\r\n") {
        let line = String::from_utf8_lossy(&raw[..eol]);
        let size = usize::from_str_radix(line.split(';').next().unwrap_or_default().trim(), 16)
            .unwrap_or_else(|_| panic!("not a chunk size: {line:?}"));
        if size == 0 || raw.len() < eol + 2 + size + 2 {
            break;
        }
        out.extend_from_slice(&raw[eol + 2..eol + 2 + size]);
        raw = &raw[eol + 2 + size + 2..];
    }
    out
}

/// Reads until the server closes the connection, for at most `within`: what it wrote.
pub async fn read_to_close(tcp: &mut TcpStream, within: Duration) -> Vec<u8> {
    let mut raw = Vec::new();
    tokio::time::timeout(within, tcp.read_to_end(&mut raw))
        .await
        .unwrap_or_else(|_| {
            panic!(
                "the connection is still open after {within:?}; read so far: {}",
                String::from_utf8_lossy(&raw)
            )
        })
        .unwrap();
    raw
}

/// Reads until `enough` says so of everything read so far, or until the server closes the
/// connection: what was read.
pub async fn read_until(
    tcp: &mut TcpStream,
    mut enough: impl FnMut(&[u8]) -> bool,
) -> std::io::Result<Vec<u8>> {
    let mut seen = Vec::new();
    let mut buf = [0u8; 8192];
    while !enough(&seen) {
        let n = tcp.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        seen.extend_from_slice(&buf[..n]);
    }
    Ok(seen)
}

/// The reply the server writes before it closes the connection.
pub async fn reply(tcp: &mut TcpStream) -> RawReply {
    parse(&read_to_close(tcp, CLOSE_PATIENCE).await)
}

/// Sends `bytes` on a fresh connection and reads the reply until the server closes it (send
/// `connection: close`).
pub async fn exchange(addr: SocketAddr, bytes: &[u8]) -> RawReply {
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(bytes).await.unwrap();
    reply(&mut tcp).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chunked_reply_is_read_whole_or_as_far_as_it_came() {
        let raw = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";
        let reply = parse(raw);
        assert_eq!(
            (
                reply.status_line.as_str(),
                reply.status,
                reply.body.as_slice()
            ),
            ("HTTP/1.1 200 OK", 200, b"hello world".as_slice())
        );
        assert_eq!(
            reply.headers[0],
            ("content-type".to_owned(), "text/event-stream".to_owned())
        );
        assert!(reply.is_sse());
        let cut = parse_partial(&raw[..raw.len() - 12]).unwrap();
        assert_eq!(cut.body, b"hello");
        assert!(parse_partial(b"HTTP/1.1 200 OK\r\n").is_none());
    }

    #[test]
    fn events_are_the_data_of_whole_events() {
        let reply =
            parse(b"HTTP/1.1 200 OK\r\n\r\nid: 1\ndata: {\"a\":1}\n\n: keep-alive\n\ndata: {\"b\"");
        assert_eq!(reply.events(), vec![serde_json::json!({"a": 1})]);
    }
}
