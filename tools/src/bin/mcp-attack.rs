//! The attacks of docs/security.md ("One client against the others"), run in a loop from one
//! address against a sake server running examples/everything, while `mcp-load` checks that
//! honest clients are served (scripts/soak.sh runs both).
//!
//! ```text
//! mcp-attack --url http://127.0.0.1:3000/mcp [--from 127.0.0.2] [--seconds 300]
//! ```
//!
//! Four attackers at once, each from an address of its own (`--from` and the three after it,
//! so that each meets its own per-client limits, not the others'), each as fast as the server
//! lets it:
//! - detached requests: one handshake session (elicitation declared) calls `test_elicitation`
//!   and hangs up as soon as the question arrives;
//! - half-sent bodies: a request head and 10 of 1000 bytes, then nothing, on 100 connections;
//! - huge `subscriptions/listen` filters: 150,000 URIs (almost 4 MiB), two at a time;
//! - subscriptions that outlive their sessions: a new session subscribes to a resource and
//!   never sends DELETE.
//!
//! It prints what the server answered each attacker (status counts). It fails only if it could
//! not attack (the server unreachable); refusals are the point.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

type Res<T> = Result<T, String>;

/// Status counts per attack.
#[derive(Default)]
struct Tally(Mutex<BTreeMap<(&'static str, String), u64>>);

impl Tally {
    fn add(&self, attack: &'static str, outcome: impl Into<String>) {
        let mut t = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *t.entry((attack, outcome.into())).or_default() += 1;
    }
}

#[derive(Clone)]
struct Target {
    url: String,
    addr: SocketAddr,
    path: String,
    from: IpAddr,
    until: Instant,
    tally: Arc<Tally>,
}

fn parse_args() -> Res<(String, IpAddr, u64)> {
    let (mut url, mut from, mut seconds) = (
        "http://127.0.0.1:3000/mcp".to_owned(),
        "127.0.0.2".to_owned(),
        300,
    );
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--url" => url = value()?,
            "--from" => from = value()?,
            "--seconds" => seconds = value()?.parse().map_err(|e| format!("{e}"))?,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok((
        url,
        from.parse().map_err(|e| format!("--from: {e}"))?,
        seconds,
    ))
}

/// `http://host:port/path` → the address and the path.
fn split_url(url: &str) -> Res<(SocketAddr, String)> {
    let rest = url
        .strip_prefix("http://")
        .ok_or("only http:// URLs".to_owned())?;
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let addr = authority
        .replace("localhost", "127.0.0.1")
        .parse()
        .map_err(|e| format!("{authority}: {e}"))?;
    Ok((addr, format!("/{path}")))
}

impl Target {
    /// The same target, attacked from the `n`th address after this one.
    fn attacked_from(&self, n: u8) -> Arc<Target> {
        let from = match self.from {
            IpAddr::V4(ip) => {
                let mut o = ip.octets();
                o[3] = o[3].wrapping_add(n);
                IpAddr::from(o)
            }
            other => other,
        };
        Arc::new(Target {
            from,
            ..self.clone()
        })
    }

    fn live(&self) -> bool {
        Instant::now() < self.until
    }

    async fn connect(&self) -> Res<tokio::net::TcpStream> {
        let socket = tokio::net::TcpSocket::new_v4().map_err(|e| e.to_string())?;
        socket
            .bind(SocketAddr::new(self.from, 0))
            .map_err(|e| format!("bind {}: {e}", self.from))?;
        socket
            .connect(self.addr)
            .await
            .map_err(|e| format!("connect: {e}"))
    }

    fn head(&self, headers: &[(&str, &str)], declared: usize) -> Vec<u8> {
        let mut h = format!(
            "POST {} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nconnection: close\r\ncontent-length: {declared}\r\n",
            self.path
        );
        for (k, v) in headers {
            h.push_str(&format!("{k}: {v}\r\n"));
        }
        h.push_str("\r\n");
        h.into_bytes()
    }

    /// Sends a request; returns the status and what arrived until `enough` said so (or the
    /// connection closed), then hangs up.
    async fn send(
        &self,
        headers: &[(&str, &str)],
        body: &[u8],
        enough: impl Fn(&[u8]) -> bool,
    ) -> Res<(u16, String)> {
        let mut tcp = self.connect().await?;
        let mut req = self.head(headers, body.len());
        req.extend_from_slice(body);
        tcp.write_all(&req).await.map_err(|e| e.to_string())?;
        let mut raw = Vec::new();
        let mut buf = [0u8; 16384];
        loop {
            let n = tokio::time::timeout(Duration::from_secs(30), tcp.read(&mut buf))
                .await
                .map_err(|_| "no answer in 30 s".to_owned())?
                .map_err(|e| e.to_string())?;
            raw.extend_from_slice(&buf[..n]);
            if n == 0 || enough(&raw) {
                break;
            }
        }
        let text = String::from_utf8_lossy(&raw).into_owned();
        let status = text
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("not HTTP: {:.80}", text))?;
        Ok((status, text))
    }

    async fn handshake(&self, capabilities: Value) -> Res<String> {
        let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": capabilities,
            "clientInfo": {"name": "mcp-attack", "version": "0"}}});
        let (status, text) = self
            .send(&[], body.to_string().as_bytes(), |_| false)
            .await?;
        if status != 200 {
            return Err(format!("initialize: {status}"));
        }
        text.lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case("mcp-session-id")
                    .then(|| v.trim().to_owned())
            })
            .ok_or("no session id".to_owned())
    }
}

/// A detached request after another, in one session; a new session when it is refused.
async fn detached(t: Arc<Target>) -> Res<()> {
    let mut sid = t.handshake(json!({"elicitation": {}})).await?;
    let mut id = 0u64;
    while t.live() {
        id += 1;
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "test_elicitation", "arguments": {"message": "well?"}}});
        let headers = [
            ("mcp-session-id", sid.as_str()),
            ("mcp-protocol-version", "2025-11-25"),
        ];
        // Hang up once the question has come.
        match t
            .send(&headers, body.to_string().as_bytes(), |raw| {
                String::from_utf8_lossy(raw).contains("elicitation/create")
            })
            .await
        {
            Ok((status, text)) => {
                let what = if text.contains("elicitation/create") {
                    "question held".to_owned()
                } else if text.contains("isError") {
                    "no more questions (tool error)".to_owned()
                } else {
                    status.to_string()
                };
                t.tally.add("detached requests", what);
                if status == 404 {
                    sid = t.handshake(json!({"elicitation": {}})).await?;
                }
            }
            Err(e) => t.tally.add("detached requests", e),
        }
    }
    Ok(())
}

/// Half-sent bodies on up to 100 connections at a time.
async fn half_bodies(t: Arc<Target>) -> Res<()> {
    let mut running = tokio::task::JoinSet::new();
    while t.live() {
        while running.len() < 100 {
            let t = t.clone();
            running.spawn(async move {
                let outcome = async {
                    let mut tcp = t.connect().await?;
                    let mut req = t.head(
                        &[
                            ("mcp-protocol-version", "2026-07-28"),
                            ("mcp-method", "tools/list"),
                        ],
                        1000,
                    );
                    req.extend_from_slice(b"{\"jsonrpc\"");
                    tcp.write_all(&req).await.map_err(|e| e.to_string())?;
                    let mut raw = Vec::new();
                    tokio::time::timeout(Duration::from_secs(60), tcp.read_to_end(&mut raw))
                        .await
                        .map_err(|_| "held over 60 s".to_owned())?
                        .map_err(|e| e.to_string())?;
                    let text = String::from_utf8_lossy(&raw);
                    Ok::<_, String>(text.split(' ').nth(1).unwrap_or("none").to_owned())
                }
                .await;
                t.tally
                    .add("half-sent bodies", outcome.unwrap_or_else(|e| e));
            });
        }
        running.join_next().await;
    }
    running.abort_all();
    Ok(())
}

/// Filters of 150,000 URIs, two at a time.
async fn huge_filters(t: Arc<Target>) -> Res<()> {
    let uris: Vec<String> = (0..150_000).map(|i| format!("test://d{i:08}")).collect();
    let body = Arc::new(
        json!({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": {
            "notifications": {"resourceSubscriptions": uris},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}}}})
        .to_string(),
    );
    let mut running = tokio::task::JoinSet::new();
    while t.live() {
        while running.len() < 2 {
            let (t, body) = (t.clone(), body.clone());
            running.spawn(async move {
                let headers = [
                    ("mcp-protocol-version", "2026-07-28"),
                    ("mcp-method", "subscriptions/listen"),
                ];
                let outcome = t.send(&headers, body.as_bytes(), |_| false).await;
                let what = match outcome {
                    Ok((_, text)) if text.contains("-32602") => "refused (-32602)".to_owned(),
                    Ok((status, _)) => status.to_string(),
                    Err(e) => e,
                };
                t.tally.add("huge listen filters", what);
            });
        }
        running.join_next().await;
    }
    running.abort_all();
    Ok(())
}

/// A new session that subscribes and never ends, again and again.
async fn lingering_subscriptions(t: Arc<Target>) -> Res<()> {
    let mut i = 0u64;
    while t.live() {
        i += 1;
        let sid = match t.handshake(json!({})).await {
            Ok(sid) => sid,
            Err(e) => {
                t.tally.add("lingering subscriptions", e);
                continue;
            }
        };
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe",
            "params": {"uri": format!("test://template/{i}/data")}});
        let headers = [
            ("mcp-session-id", sid.as_str()),
            ("mcp-protocol-version", "2025-11-25"),
        ];
        let what = match t
            .send(&headers, body.to_string().as_bytes(), |_| false)
            .await
        {
            Ok((200, text)) if text.contains("\"result\":{}") => "subscribed".to_owned(),
            Ok((status, _)) => status.to_string(),
            Err(e) => e,
        };
        t.tally.add("lingering subscriptions", what);
    }
    Ok(())
}

#[tokio::main]
async fn main() {
    let (url, from, seconds) = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("mcp-attack: {e}");
            std::process::exit(2);
        }
    };
    let (addr, path) = match split_url(&url) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("mcp-attack: {e}");
            std::process::exit(2);
        }
    };
    let t = Target {
        url,
        addr,
        path,
        from,
        until: Instant::now() + Duration::from_secs(seconds),
        tally: Arc::default(),
    };
    println!(
        "mcp-attack: {} for {seconds} s: detached requests from {}, half-sent bodies from {}, huge listen filters from {}, lingering subscriptions from {}",
        t.url,
        t.attacked_from(0).from,
        t.attacked_from(1).from,
        t.attacked_from(2).from,
        t.attacked_from(3).from,
    );
    let attacks = [
        tokio::spawn(detached(t.attacked_from(0))),
        tokio::spawn(half_bodies(t.attacked_from(1))),
        tokio::spawn(huge_filters(t.attacked_from(2))),
        tokio::spawn(lingering_subscriptions(t.attacked_from(3))),
    ];
    let mut failed = false;
    for a in attacks {
        match a.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                eprintln!("mcp-attack: an attacker could not attack: {e}");
                failed = true;
            }
            Err(e) => {
                eprintln!("mcp-attack: an attacker failed: {e}");
                failed = true;
            }
        }
    }
    let tally = t.tally.0.lock().unwrap_or_else(|e| e.into_inner());
    for ((attack, outcome), n) in tally.iter() {
        println!("  {attack:<24} {outcome:<40} {n}");
    }
    if failed {
        std::process::exit(1);
    }
}
