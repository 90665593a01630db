//! The "bus" workload's parts: a `redis-server` of its own (Debian's, on a free port), and a
//! `subscriptions/listen` stream read as it arrives, to time a notification from the request
//! that triggers it to its arrival on another replica's listener.

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::Request;
use hyper::body::Incoming;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;

use crate::http;

/// A `redis-server` without persistence, killed when dropped.
pub struct Redis {
    child: Child,
    pub url: String,
}

impl Redis {
    pub fn start() -> Redis {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!("cannot start redis-server ({e}): apt-get install redis-server")
            });
        let addr: SocketAddr = ([127, 0, 0, 1], port).into();
        let started = Instant::now();
        while std::net::TcpStream::connect(addr).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "redis-server did not listen"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        Redis {
            child,
            url: format!("redis://127.0.0.1:{port}/"),
        }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

const LISTEN: &str = r#"{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench-client","version":"1.0.0"},"io.modelcontextprotocol/clientCapabilities":{}},"notifications":{"toolsListChanged":true}}}"#;
pub const TOUCH: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench-client","version":"1.0.0"},"io.modelcontextprotocol/clientCapabilities":{}},"name":"touch","arguments":{}}}"#;

/// An open listen stream.
pub struct Listener {
    body: Incoming,
    _sender: http1::SendRequest<Full<Bytes>>,
    seen: String,
}

impl Listener {
    /// Opens one on `addr` and waits for its acknowledgement.
    pub async fn open(addr: SocketAddr) -> std::io::Result<Listener> {
        let stream = tokio::net::TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        let (mut sender, conn) = http1::handshake(TokioIo::new(stream))
            .await
            .map_err(std::io::Error::other)?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        let mut req = Request::post("/mcp")
            .header("host", "127.0.0.1")
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        for (k, v) in http::modern_headers("subscriptions/listen", None) {
            req = req.header(k, v);
        }
        let req = req
            .body(Full::new(Bytes::from_static(LISTEN.as_bytes())))
            .map_err(std::io::Error::other)?;
        let resp = sender
            .send_request(req)
            .await
            .map_err(std::io::Error::other)?;
        let mut l = Listener {
            body: resp.into_body(),
            _sender: sender,
            seen: String::new(),
        };
        l.until("subscriptions/acknowledged").await?;
        Ok(l)
    }

    /// Reads until a message containing `text` arrived (10 s at most).
    pub async fn until(&mut self, text: &str) -> std::io::Result<()> {
        let wait = async {
            loop {
                if let Some(i) = self.seen.find(text) {
                    self.seen.drain(..i + text.len());
                    return Ok(());
                }
                match self.body.frame().await {
                    Some(Ok(f)) => {
                        if let Ok(data) = f.into_data() {
                            self.seen.push_str(&String::from_utf8_lossy(&data));
                        }
                    }
                    Some(Err(e)) => return Err(std::io::Error::other(e)),
                    None => return Err(std::io::Error::other("the listen stream ended")),
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(10), wait)
            .await
            .map_err(|_| std::io::Error::other(format!("no {text} within 10 s")))?
    }
}

/// Times `samples` notifications: the `touch` call on `trigger`, until `listener` hears it.
pub async fn time_notifications(
    trigger: SocketAddr,
    listener: &mut Listener,
    samples: usize,
) -> std::io::Result<Vec<f64>> {
    let mut conn = http::Conn::open(trigger).await?;
    let headers = http::modern_headers("tools/call", Some("touch"));
    let mut times = Vec::with_capacity(samples);
    for _ in 0..samples {
        let started = Instant::now();
        let a = conn.post(TOUCH, &headers).await?;
        if a.status != 200 {
            return Err(std::io::Error::other(format!(
                "touch answered {}",
                a.status
            )));
        }
        listener.until("notifications/tools/list_changed").await?;
        times.push(started.elapsed().as_secs_f64() * 1e6);
    }
    Ok(times)
}
