//! A small HTTP/1.1 client for what wrk cannot do: opening sessions, and timing start-up.

use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::Request;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;

pub const MODERN_CALL: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench-client","version":"1.0.0"},"io.modelcontextprotocol/clientCapabilities":{}},"name":"add","arguments":{"a":2,"b":3}}}"#;
pub const MODERN_LIST: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench-client","version":"1.0.0"},"io.modelcontextprotocol/clientCapabilities":{}}}}"#;
pub const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{}},"sampling":{}},"clientInfo":{"name":"bench-client","version":"1.0.0"}}}"#;
pub const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
pub const LEGACY_CALL: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}}}"#;

/// The headers of a 2026-07-28 request for `method` (and `name`).
pub fn modern_headers(method: &str, name: Option<&str>) -> Vec<(&'static str, String)> {
    let mut h = vec![
        ("mcp-protocol-version", "2026-07-28".to_owned()),
        ("mcp-method", method.to_owned()),
    ];
    if let Some(n) = name {
        h.push(("mcp-name", n.to_owned()));
    }
    h
}

/// One keep-alive connection.
pub struct Conn {
    sender: http1::SendRequest<Full<Bytes>>,
}

pub struct Answer {
    pub status: u16,
    pub session: Option<String>,
    pub body: Bytes,
}

impl Conn {
    pub async fn open(addr: SocketAddr) -> std::io::Result<Conn> {
        let stream = tokio::net::TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        let (sender, conn) = http1::handshake(TokioIo::new(stream))
            .await
            .map_err(std::io::Error::other)?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(Conn { sender })
    }

    /// POSTs a JSON-RPC message to /mcp and reads the whole answer (JSON or a finished SSE
    /// stream).
    pub async fn post(
        &mut self,
        body: impl Into<Bytes>,
        headers: &[(&'static str, String)],
    ) -> std::io::Result<Answer> {
        let mut req = Request::post("/mcp")
            .header("host", "127.0.0.1")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        for (k, v) in headers {
            req = req.header(*k, v.as_str());
        }
        let req = req
            .body(Full::new(body.into()))
            .map_err(std::io::Error::other)?;
        self.sender.ready().await.map_err(std::io::Error::other)?;
        let fut = async {
            let resp = self
                .sender
                .send_request(req)
                .await
                .map_err(std::io::Error::other)?;
            let status = resp.status().as_u16();
            let session = resp
                .headers()
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let body = resp
                .into_body()
                .collect()
                .await
                .map_err(std::io::Error::other)?
                .to_bytes();
            Ok(Answer {
                status,
                session,
                body,
            })
        };
        tokio::time::timeout(Duration::from_secs(20), fut)
            .await
            .map_err(|_| std::io::Error::other("timed out"))?
    }
}

/// Opens a 2025-11-25 session: `initialize`, then `notifications/initialized`.
pub async fn open_session(conn: &mut Conn) -> std::io::Result<String> {
    let init = conn
        .post(INITIALIZE, &[("mcp-protocol-version", "2025-11-25".into())])
        .await?;
    let sid = match (init.status, init.session) {
        (200, Some(s)) => s,
        (status, _) => {
            return Err(std::io::Error::other(format!(
                "initialize answered {status}: {}",
                String::from_utf8_lossy(&init.body)
            )));
        }
    };
    let headers = [
        ("mcp-protocol-version", "2025-11-25".to_owned()),
        ("mcp-session-id", sid.clone()),
    ];
    let ack = conn.post(INITIALIZED, &headers).await?;
    if ack.status != 202 {
        return Err(std::io::Error::other(format!(
            "notifications/initialized answered {}",
            ack.status
        )));
    }
    Ok(sid)
}

/// `tools/call add` inside a session; an error unless it answered 200 with the sum.
pub async fn session_call(conn: &mut Conn, sid: &str) -> std::io::Result<()> {
    let headers = [
        ("mcp-protocol-version", "2025-11-25".to_owned()),
        ("mcp-session-id", sid.to_owned()),
    ];
    let a = conn.post(LEGACY_CALL, &headers).await?;
    if a.status != 200 || !a.body.windows(3).any(|w| w == br#""5""#) {
        return Err(std::io::Error::other(format!(
            "session tools/call answered {}: {}",
            a.status,
            String::from_utf8_lossy(&a.body)
        )));
    }
    Ok(())
}

/// Blocking: one request on a fresh connection (`Connection: close`); the status, or `None`
/// when nothing listens yet.
pub fn probe(
    addr: SocketAddr,
    body: &str,
    headers: &[(&'static str, String)],
) -> Option<(u16, Vec<u8>)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_millis(200)).ok()?;
    s.set_nodelay(true).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    let mut req = format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nconnection: close\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    s.write_all(req.as_bytes()).ok()?;
    let mut out = Vec::new();
    s.read_to_end(&mut out).ok()?;
    let status = std::str::from_utf8(out.get(9..12)?).ok()?.parse().ok()?;
    let body_at = out.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    Some((status, out[body_at..].to_vec()))
}

/// Waits until `addr` answers a TCP connect.
pub fn wait_listening(addr: SocketAddr, timeout: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < timeout {
        if TcpStream::connect_timeout(&addr, Duration::from_millis(100)).is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    false
}
