//! The attacks of docs/security.md ("One client against the others"), run in a loop against a
//! sake server running examples/everything, while `mcp-load` checks that honest clients are
//! served (scripts/soak.sh runs both).
//!
//! ```text
//! mcp-attack --url http://127.0.0.1:3000/mcp [--from 127.0.0.2] [--seconds 300]
//!            [--ipv6-prefix fd5a:6b00:26:: | --no-ipv6 REASON] [--only NAME,NAME]
//!            [--inflight N] [--flood-for SECONDS]
//! ```
//!
//! Each attacker works from an address of its own (`--from` and the nine after it, and
//! 127.0.1.1–12 for the ended-session flood), so that each meets its own per-client limits,
//! not the others', each as fast as the server lets it:
//! - `detached`: one handshake session (elicitation declared) calls `test_elicitation` and
//!   hangs up as soon as the question arrives;
//! - `half-bodies`: a request head and 10 of 1000 bytes, then nothing, on 100 connections;
//! - `huge-filters`: `subscriptions/listen` filters of 150,000 URIs (almost 4 MiB), two at a
//!   time;
//! - `lingering`: a new session subscribes to a resource and never sends DELETE;
//! - `byte-subscriptions`: rounds of 40 handshake sessions, each subscribing 1024 times to
//!   4 KB URIs of the resource template, then DELETE; the address's subscriptions must stay
//!   within `max_held_bytes_per_client` (1 MiB), the rest refused with -32000;
//! - `byte-listen`: `subscriptions/listen` streams of 1024 URIs of 4000 bytes, 64 of them of
//!   the template and 960 that nobody serves, held open until refused (429), and streams naming
//!   only unserved URIs, which must hold nothing;
//! - `task-padding`: `slow_compute` with 4 MB of ignored padding as a task (refused -32602 by
//!   `max_task_request_bytes`), within the bound (60 KiB) until the store refuses the caller,
//!   then once from a bystander address;
//! - `inflight-padding`: the same 4 MB calls without a task (10–30 s each), `--inflight N` sent
//!   at a time: at most 8 may run (`max_request_bytes_per_client`, 32 MiB), the others get 429;
//! - `ipv6-spread`: rounds of 200 half-sent bodies, each from another address of one IPv6 /64
//!   (routed to the loopback by the soak): they must count as one client (64 held, the rest
//!   429);
//! - `ended-sessions`: a victim ends its session; 12 addresses open and end sessions as fast
//!   as they can (for `--flood-for` seconds, else throughout); every second the victim's id
//!   must still be refused (404, -32001).
//!
//! It prints what the server answered each attacker (outcome counts). It fails if an attacker
//! could not attack (the server unreachable), or if a bound did not hold (more held than the
//! budget, an ended session served again, an IPv6 /64 counted as several clients).

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

type Res<T> = Result<T, String>;

const LATEST: &str = "2026-07-28";
const LEGACY: &str = "2025-11-25";
const TASKS: &str = "io.modelcontextprotocol/tasks";
/// `Limits::max_held_bytes_per_client`'s default.
const HELD_PER_CLIENT: usize = 1 << 20;
/// What the server counts for each URI it keeps besides its bytes.
const BOOKKEEPING: usize = 64;
const HELD_TAIL: &str =
    " of its 1048576 (Limits::max_held_bytes_per_client); unsubscribe or close a stream first";

/// Outcome counts per attack, and the bounds found broken.
#[derive(Default)]
struct Tally {
    counts: Mutex<BTreeMap<(&'static str, String), u64>>,
    broken: Mutex<Vec<String>>,
}

impl Tally {
    fn add(&self, attack: &'static str, outcome: impl Into<String>) {
        let mut t = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        *t.entry((attack, outcome.into())).or_default() += 1;
    }

    /// A bound that did not hold: the soak fails.
    fn broken(&self, attack: &'static str, what: String) {
        let mut b = self.broken.lock().unwrap_or_else(|e| e.into_inner());
        if b.len() < 20 {
            b.push(format!("{attack}: {what}"));
        }
    }
}

#[derive(Clone)]
struct Target {
    url: String,
    /// The server over IPv4 and, when it listens there too, over IPv6.
    addr: SocketAddr,
    addr6: SocketAddr,
    path: String,
    from: IpAddr,
    until: Instant,
    tally: Arc<Tally>,
}

struct Args {
    url: String,
    from: IpAddr,
    seconds: u64,
    ipv6: Result<Ipv6Addr, String>,
    only: Option<Vec<String>>,
    inflight: usize,
    flood_for: Option<Duration>,
}

fn parse_args() -> Res<Args> {
    let mut a = Args {
        url: "http://127.0.0.1:3000/mcp".to_owned(),
        from: IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)),
        seconds: 300,
        ipv6: Err("no --ipv6-prefix given".to_owned()),
        only: None,
        inflight: 0,
        flood_for: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().ok_or(format!("{arg} needs a value"));
        match arg.as_str() {
            "--url" => a.url = value()?,
            "--from" => a.from = value()?.parse().map_err(|e| format!("--from: {e}"))?,
            "--seconds" => a.seconds = value()?.parse().map_err(|e| format!("{e}"))?,
            "--ipv6-prefix" => {
                a.ipv6 = Ok(value()?
                    .parse()
                    .map_err(|e| format!("--ipv6-prefix: {e}"))?)
            }
            "--no-ipv6" => a.ipv6 = Err(value()?),
            "--inflight" => a.inflight = value()?.parse().map_err(|e| format!("{e}"))?,
            "--flood-for" => {
                a.flood_for = Some(Duration::from_secs(
                    value()?.parse().map_err(|e| format!("{e}"))?,
                ));
            }
            "--only" => a.only = Some(value()?.split(',').map(str::to_owned).collect()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(a)
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

/// An answer: its status, head and body (de-chunked).
struct Answer {
    status: u16,
    head: String,
    body: Vec<u8>,
}

impl Answer {
    /// Parses what arrived so far; `None` until the head is whole.
    fn parse(raw: &[u8]) -> Option<Answer> {
        let end = raw.windows(4).position(|w| w == b"\r\n\r\n")?;
        let head = String::from_utf8_lossy(&raw[..end]).into_owned();
        let status = head.split(' ').nth(1)?.parse().ok()?;
        let chunked = head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked");
        let body = if chunked {
            dechunk(&raw[end + 4..])
        } else {
            raw[end + 4..].to_vec()
        };
        Some(Answer { status, head, body })
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The SSE events read whole so far.
    fn events(&self) -> Vec<Value> {
        self.text()
            .split("\n\n")
            .filter_map(|e| {
                e.lines()
                    .find_map(|l| l.strip_prefix("data: "))
                    .filter(|d| !d.is_empty())
            })
            .filter_map(|d| serde_json::from_str(d).ok())
            .collect()
    }

    /// The JSON-RPC response: the body, or the event that has an `id`.
    fn json(&self) -> Option<Value> {
        if let Ok(v) = serde_json::from_slice::<Value>(&self.body) {
            return Some(v);
        }
        self.events().into_iter().find(|e| e.get("id").is_some())
    }

    /// `status code` of an error, `status result` of a result: for tallies.
    fn summary(&self) -> String {
        match self.json() {
            Some(v) if v.get("error").is_some() => {
                format!("{} {}", self.status, v["error"]["code"])
            }
            Some(v) if v.get("result").is_some() => format!("{} result", self.status),
            _ => format!("{} {:.60}", self.status, self.text()),
        }
    }
}

fn dechunk(mut raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = raw.windows(2).position(|w| w == b"\r\n") {
        let size = std::str::from_utf8(&raw[..eol])
            .ok()
            .and_then(|s| usize::from_str_radix(s.trim(), 16).ok())
            .unwrap_or(0);
        if size == 0 || raw.len() < eol + 2 + size + 2 {
            // The end, or a chunk not read whole yet.
            out.extend_from_slice(&raw[(eol + 2).min(raw.len())..]);
            break;
        }
        out.extend_from_slice(&raw[eol + 2..eol + 2 + size]);
        raw = &raw[eol + 2 + size + 2..];
    }
    out
}

/// The error message of a JSON-RPC error answer.
fn error_message(v: &Value) -> &str {
    v["error"]["message"].as_str().unwrap_or_default()
}

/// A 2026-07-28 request's body: `params` with the version and capabilities in `_meta`.
fn modern(method: &str, mut params: Value, capabilities: Value) -> String {
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": LATEST,
        "io.modelcontextprotocol/clientCapabilities": capabilities});
    json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string()
}

impl Target {
    /// The same target, attacked from `from`.
    fn seen_from(&self, from: IpAddr) -> Arc<Target> {
        Arc::new(Target {
            from,
            ..self.clone()
        })
    }

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
        self.seen_from(from)
    }

    fn live(&self) -> bool {
        Instant::now() < self.until
    }

    async fn connect(&self) -> Res<TcpStream> {
        let (socket, to) = match self.from {
            IpAddr::V4(_) => (
                tokio::net::TcpSocket::new_v4().map_err(|e| e.to_string())?,
                self.addr,
            ),
            IpAddr::V6(_) => {
                // An address of a prefix routed to the loopback, not assigned to it: bound
                // with IPV6_FREEBIND.
                let s = socket2::Socket::new(
                    socket2::Domain::IPV6,
                    socket2::Type::STREAM,
                    Some(socket2::Protocol::TCP),
                )
                .map_err(|e| e.to_string())?;
                s.set_freebind_v6(true)
                    .map_err(|e| format!("IPV6_FREEBIND: {e}"))?;
                s.set_nonblocking(true).map_err(|e| e.to_string())?;
                (tokio::net::TcpSocket::from_std_stream(s.into()), self.addr6)
            }
        };
        socket
            .bind(SocketAddr::new(self.from, 0))
            .map_err(|e| format!("bind {}: {e}", self.from))?;
        socket
            .connect(to)
            .await
            .map_err(|e| format!("connect: {e}"))
    }

    fn head(&self, method: &str, headers: &[(&str, &str)], declared: Option<usize>) -> Vec<u8> {
        let mut h = format!(
            "{method} {} HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: application/json, text/event-stream\r\nconnection: close\r\n",
            self.path
        );
        if let Some(declared) = declared {
            h.push_str(&format!(
                "content-type: application/json\r\ncontent-length: {declared}\r\n"
            ));
        }
        for (k, v) in headers {
            h.push_str(&format!("{k}: {v}\r\n"));
        }
        h.push_str("\r\n");
        h.into_bytes()
    }

    /// Sends a request; reads until `enough` says so (or the connection closes) and returns
    /// the answer with the connection, still open.
    async fn open(
        &self,
        method: &str,
        headers: &[(&str, &str)],
        body: &[u8],
        enough: impl Fn(&Answer) -> bool,
    ) -> Res<(Answer, TcpStream)> {
        let mut tcp = self.connect().await?;
        let mut req = self.head(method, headers, (method == "POST").then_some(body.len()));
        req.extend_from_slice(body);
        let mut raw = Vec::new();
        if let Err(e) = tcp.write_all(&req).await {
            // Refused before the body was read (the server answered and closed): its answer.
            let _ = tokio::time::timeout(Duration::from_secs(5), tcp.read_to_end(&mut raw)).await;
            return match Answer::parse(&raw) {
                Some(a) => Ok((a, tcp)),
                None => Err(format!("{e} while sending, and no answer")),
            };
        }
        let mut buf = vec![0u8; 65536];
        loop {
            let n = tokio::time::timeout(Duration::from_secs(60), tcp.read(&mut buf))
                .await
                .map_err(|_| "no answer in 60 s".to_owned())?
                .map_err(|e| e.to_string())?;
            raw.extend_from_slice(&buf[..n]);
            let answer = Answer::parse(&raw);
            if n == 0 || answer.as_ref().is_some_and(&enough) {
                return answer
                    .map(|a| (a, tcp))
                    .ok_or_else(|| format!("not HTTP: {:.80}", String::from_utf8_lossy(&raw)));
            }
        }
    }

    /// Sends a request and reads until `enough` or the end, then hangs up.
    async fn send(
        &self,
        headers: &[(&str, &str)],
        body: &[u8],
        enough: impl Fn(&Answer) -> bool,
    ) -> Res<Answer> {
        Ok(self.open("POST", headers, body, enough).await?.0)
    }

    /// Sends a request and reads the whole answer.
    async fn post(&self, headers: &[(&str, &str)], body: &[u8]) -> Res<Answer> {
        self.send(headers, body, |_| false).await
    }

    async fn handshake(&self, capabilities: Value) -> Res<String> {
        let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": LEGACY, "capabilities": capabilities,
            "clientInfo": {"name": "mcp-attack", "version": "0"}}});
        let a = self.post(&[], body.to_string().as_bytes()).await?;
        if a.status != 200 {
            return Err(format!("initialize: {}", a.summary()));
        }
        a.header("mcp-session-id")
            .map(str::to_owned)
            .ok_or("no session id".to_owned())
    }

    async fn delete(&self, sid: &str) -> Res<u16> {
        let headers = [("mcp-session-id", sid), ("mcp-protocol-version", LEGACY)];
        Ok(self
            .open("DELETE", &headers, b"", |_| false)
            .await?
            .0
            .status)
    }
}

fn in_session(sid: &str) -> [(&str, &str); 2] {
    [("mcp-session-id", sid), ("mcp-protocol-version", LEGACY)]
}

/// A detached request after another, in one session; a new session when it is refused.
async fn detached(t: Arc<Target>) -> Res<()> {
    const A: &str = "detached requests";
    let mut sid = t.handshake(json!({"elicitation": {}})).await?;
    let mut id = 0u64;
    while t.live() {
        id += 1;
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "test_elicitation", "arguments": {"message": "well?"}}});
        // Hang up once the question has come.
        match t
            .send(&in_session(&sid), body.to_string().as_bytes(), |a| {
                a.text().contains("elicitation/create")
            })
            .await
        {
            Ok(a) => {
                let text = a.text();
                let what = if text.contains("elicitation/create") {
                    "question held".to_owned()
                } else if text.contains("isError") {
                    "no more questions (tool error)".to_owned()
                } else {
                    a.summary()
                };
                t.tally.add(A, what);
                if a.status == 404 {
                    sid = t.handshake(json!({"elicitation": {}})).await?;
                }
            }
            Err(e) => t.tally.add(A, e),
        }
    }
    Ok(())
}

/// A request head and 10 of its 1000 bytes, then nothing: what the server answered.
async fn half_body(t: &Target) -> Res<String> {
    let mut tcp = t.connect().await?;
    let mut req = t.head(
        "POST",
        &[
            ("mcp-protocol-version", LATEST),
            ("mcp-method", "tools/list"),
        ],
        Some(1000),
    );
    req.extend_from_slice(b"{\"jsonrpc\"");
    tcp.write_all(&req).await.map_err(|e| e.to_string())?;
    let mut raw = Vec::new();
    tokio::time::timeout(Duration::from_secs(60), tcp.read_to_end(&mut raw))
        .await
        .map_err(|_| "held over 60 s".to_owned())?
        .map_err(|e| e.to_string())?;
    Ok(Answer::parse(&raw).map_or("closed without an answer".to_owned(), |a| a.summary()))
}

/// Half-sent bodies on up to 100 connections at a time.
async fn half_bodies(t: Arc<Target>) -> Res<()> {
    let mut running = tokio::task::JoinSet::new();
    while t.live() {
        while running.len() < 100 {
            let t = t.clone();
            running.spawn(async move {
                let outcome = half_body(&t).await;
                t.tally
                    .add("half-sent bodies", outcome.unwrap_or_else(|e| e));
            });
        }
        running.join_next().await;
    }
    running.abort_all();
    Ok(())
}

const LISTEN: [(&str, &str); 2] = [
    ("mcp-protocol-version", LATEST),
    ("mcp-method", "subscriptions/listen"),
];

fn listen_body(uris: &[String]) -> String {
    modern(
        "subscriptions/listen",
        json!({"notifications": {"resourceSubscriptions": uris}}),
        json!({}),
    )
}

/// Filters of 150,000 URIs, two at a time.
async fn huge_filters(t: Arc<Target>) -> Res<()> {
    let uris: Vec<String> = (0..150_000).map(|i| format!("test://d{i:08}")).collect();
    let body = Arc::new(listen_body(&uris));
    let mut running = tokio::task::JoinSet::new();
    while t.live() {
        while running.len() < 2 {
            let (t, body) = (t.clone(), body.clone());
            running.spawn(async move {
                let what = match t.post(&LISTEN, body.as_bytes()).await {
                    Ok(a) if a.text().contains("-32602") => "refused (-32602)".to_owned(),
                    Ok(a) => a.summary(),
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

fn subscribe(uri: &str) -> String {
    json!({"jsonrpc": "2.0", "id": 1, "method": "resources/subscribe", "params": {"uri": uri}})
        .to_string()
}

/// A new session that subscribes and never ends, again and again.
async fn lingering_subscriptions(t: Arc<Target>) -> Res<()> {
    const A: &str = "lingering subscriptions";
    let mut i = 0u64;
    while t.live() {
        i += 1;
        let sid = match t.handshake(json!({})).await {
            Ok(sid) => sid,
            Err(e) => {
                t.tally.add(A, e);
                continue;
            }
        };
        let body = subscribe(&format!("test://template/{i}/data"));
        let what = match t.post(&in_session(&sid), body.as_bytes()).await {
            Ok(a) if a.status == 200 && a.text().contains("\"result\":{}") => {
                "subscribed".to_owned()
            }
            Ok(a) => a.summary(),
            Err(e) => e,
        };
        t.tally.add(A, what);
    }
    Ok(())
}

/// A URI of the fixture's template (`test://template/{id}/data`) of exactly `len` bytes.
fn template_uri(n: u64, len: usize) -> String {
    let pad = len - "test://template//data".len();
    format!("test://template/{n:0>pad$}/data")
}

/// Whether `v` is the documented refusal of held bytes: -32000, naming what `need` bytes would
/// add to what the client holds, past its 1 MiB. Returns what it holds.
fn held_refusal(v: &Value, what: &str, need: usize) -> Option<usize> {
    let head = format!(
        "Too Many Requests: {what} needs {need} bytes, and this client already has the server keep "
    );
    let held = error_message(v)
        .strip_prefix(&head)?
        .strip_suffix(HELD_TAIL)?
        .parse::<usize>()
        .ok()?;
    (v["error"]["code"] == -32000 && held <= HELD_PER_CLIENT && held + need > HELD_PER_CLIENT)
        .then_some(held)
}

/// (a) Rounds of 40 handshake sessions, each subscribing 1024 times to URIs of 4 KB (the
/// issue's attack: 160 MiB in 10 s before byte budgets), then DELETE. What the address holds
/// must stay within its 1 MiB; the rest is refused with -32000 (in a session, a 200).
async fn byte_subscriptions(t: Arc<Target>) -> Res<()> {
    const A: &str = "byte-heavy subscriptions";
    const LEN: usize = 4021;
    let need = LEN + BOOKKEEPING;
    let next = Arc::new(AtomicU64::new(0));
    while t.live() {
        let mut sessions = Vec::new();
        for _ in 0..40 {
            match t.handshake(json!({})).await {
                Ok(sid) => sessions.push(sid),
                Err(e) => t.tally.add(A, format!("initialize: {e}")),
            }
        }
        let held = Arc::new(AtomicUsize::new(0));
        let mut running = tokio::task::JoinSet::new();
        for sid in sessions.clone() {
            let (t, held, next) = (t.clone(), held.clone(), next.clone());
            running.spawn(async move {
                for _ in 0..1024 {
                    if !t.live() {
                        break;
                    }
                    let uri = template_uri(next.fetch_add(1, Ordering::Relaxed), LEN);
                    let a = match t.post(&in_session(&sid), subscribe(&uri).as_bytes()).await {
                        Ok(a) => a,
                        Err(e) => {
                            t.tally.add(A, e);
                            continue;
                        }
                    };
                    let v = a.json().unwrap_or_default();
                    let what = if a.status == 200 && v["result"] == json!({}) {
                        let n = held.fetch_add(1, Ordering::Relaxed) + 1;
                        if n * need > HELD_PER_CLIENT {
                            t.tally.broken(A, format!("{n} subscriptions of {need} bytes held by one address, past its {HELD_PER_CLIENT}"));
                        }
                        "subscribed (4021-byte URI)".to_owned()
                    } else if a.status == 200
                        && held_refusal(&v, "this subscription", need).is_some()
                    {
                        "refused: 200, -32000 max_held_bytes_per_client (exact)".to_owned()
                    } else if a.status == 503 {
                        format!("refused: 503 {:.100}", error_message(&v))
                    } else {
                        format!("UNEXPECTED {} {:.120}", a.summary(), error_message(&v))
                    };
                    t.tally.add(A, what);
                }
            });
        }
        while running.join_next().await.is_some() {}
        let n = held.load(Ordering::Relaxed);
        if t.live() {
            // A whole round (one cut short by the end says nothing).
            t.tally.add(
                A,
                format!("rounds holding {n} subscriptions ({} bytes)", n * need),
            );
        }
        for sid in sessions {
            match t.delete(&sid).await {
                Ok(200) => t.tally.add(A, "DELETE 200 (bytes given back)"),
                Ok(s) => t.tally.add(A, format!("DELETE {s}")),
                Err(e) => t.tally.add(A, format!("DELETE: {e}")),
            }
        }
    }
    Ok(())
}

/// The acknowledgement's resource URIs, once the first event came.
fn acknowledged(a: &Answer) -> Option<Vec<String>> {
    let ack = a.events().into_iter().next()?;
    if ack["method"] != "notifications/subscriptions/acknowledged" {
        return None;
    }
    Some(
        ack["params"]["notifications"]["resourceSubscriptions"]
            .as_array()
            .map(|uris| {
                uris.iter()
                    .filter_map(|u| u.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default(),
    )
}

/// (b) `subscriptions/listen` streams of 1024 URIs of 4000 bytes (a 4 MB body; the issue's
/// attack held 352 MiB with 30 of them): 64 of the template and 960 that nobody serves. The
/// served ones count against the address's 1 MiB (4 streams, then 429); the others must be
/// left out of the acknowledgement and hold nothing, so streams naming only them are held
/// too. Every cycle holds them 5 s, closes them, and starts again.
async fn byte_listen(t: Arc<Target>) -> Res<()> {
    const A: &str = "byte-heavy listen streams";
    const LEN: usize = 4000;
    let served: Vec<String> = (0..64).map(|i| template_uri(i, LEN)).collect();
    let unserved = |from: u64| -> Vec<String> {
        (from..from + 960)
            .map(|i| format!("nothing://{i:0>width$}", width = LEN - 10))
            .collect()
    };
    let mixed = listen_body(&[served.clone(), unserved(0)].concat());
    let only_unserved = listen_body(&[unserved(1000), unserved(2000)[..64].to_vec()].concat());
    let need = 64 * (LEN + BOOKKEEPING);
    let first_event = |a: &Answer| a.status != 200 || !a.events().is_empty();
    while t.live() {
        let (mut streams, mut mixed_held) = (Vec::new(), 0usize);
        for (body, all_unserved) in [(&mixed, false); 6]
            .into_iter()
            .chain([(&only_unserved, true); 4])
        {
            let (a, tcp) = match t.open("POST", &LISTEN, body.as_bytes(), first_event).await {
                Ok(v) => v,
                Err(e) => {
                    t.tally.add(A, e);
                    continue;
                }
            };
            let v = a.json().unwrap_or_default();
            let what = match acknowledged(&a) {
                Some(uris) if all_unserved && uris.is_empty() => {
                    streams.push(tcp);
                    "held: 1024 unserved URIs, none acknowledged (holds nothing)".to_owned()
                }
                Some(uris) if !all_unserved && uris == served => {
                    streams.push(tcp);
                    mixed_held += 1;
                    if mixed_held * need > HELD_PER_CLIENT {
                        t.tally.broken(A, format!("{mixed_held} streams of {need} held bytes open from one address, past its {HELD_PER_CLIENT}"));
                    }
                    "held: 64 of 1024 URIs acknowledged (the served ones)".to_owned()
                }
                Some(uris) => {
                    t.tally.broken(
                        A,
                        format!(
                            "the acknowledgement named {} URIs, not the {} served",
                            uris.len(),
                            if all_unserved { 0 } else { 64 }
                        ),
                    );
                    "BROKEN: unserved URIs acknowledged".to_owned()
                }
                None if a.status == 429
                    && held_refusal(&v, "this stream's filter", need).is_some() =>
                {
                    "refused: 429, -32000 max_held_bytes_per_client (exact)".to_owned()
                }
                None => format!("UNEXPECTED {} {:.120}", a.summary(), error_message(&v)),
            };
            t.tally.add(A, what);
        }
        tokio::time::sleep(Duration::from_secs(5)).await;
        drop(streams);
        // Closed streams give their bytes back once the server notices.
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    Ok(())
}

fn slow_compute(arguments: Value, as_task: bool) -> String {
    let caps = if as_task {
        json!({"extensions": {TASKS: {}}})
    } else {
        json!({})
    };
    modern(
        "tools/call",
        json!({"name": "slow_compute", "arguments": arguments}),
        caps,
    )
}

const CALL: [(&str, &str); 3] = [
    ("mcp-protocol-version", LATEST),
    ("mcp-method", "tools/call"),
    ("mcp-name", "slow_compute"),
];

/// (c) Task-capable calls with padding the tool ignores (the issue's attack: 60 calls of 4 MB
/// held 464 MiB). As a task, 4 MB is refused before the task exists (-32602, naming
/// `max_task_request_bytes`); 60 KiB is kept until the store's bytes for the caller are
/// spent (429 naming `MemoryTaskStore::max_task_bytes_per_principal`, 16 MiB: about 260
/// tasks), 8 at a time, and then an anonymous bystander from another address makes a task of
/// 5 s (at most one a second): it must get it, anonymous callers counting by address.
async fn task_padding(t: Arc<Target>, bystander: Arc<Target>) -> Res<()> {
    const A: &str = "task-capable padding";
    let mut running = tokio::task::JoinSet::new();
    // Refused copies: 4 MB as a task.
    {
        let t = t.clone();
        running.spawn(async move {
            let arguments = json!({"seconds": 1, "label": "pad", "padding": "x".repeat(4_000_000)});
            let expected = format!(
                "Invalid params: the arguments have {} bytes, and a task keeps at most 65536 of its request (Limits::max_task_request_bytes); send less, or call `slow_compute` without a task",
                arguments.to_string().len()
            );
            let body = slow_compute(arguments, true);
            while t.live() {
                let what = match t.post(&CALL, body.as_bytes()).await {
                    Ok(a) => {
                        let v = a.json().unwrap_or_default();
                        if v["error"]["code"] == -32602 && error_message(&v) == expected {
                            format!("4 MB as a task: refused {}, -32602 max_task_request_bytes (exact)", a.status)
                        } else {
                            format!("4 MB as a task: UNEXPECTED {} {:.120}", a.summary(), error_message(&v))
                        }
                    }
                    Err(e) => format!("4 MB as a task: {e}"),
                };
                t.tally.add(A, what);
            }
        });
    }
    // Kept copies: 60 KiB tasks of 60 s until refused, then a bystander; 8 at a time, so that
    // the store is full within seconds (the soak compares memory after that).
    for i in 0..8 {
        let (t, bystander) = (t.clone(), bystander.clone());
        running.spawn(async move {
            let body = slow_compute(
                json!({"seconds": 60, "label": "pad", "padding": "x".repeat(60 << 10)}),
                true,
            );
            let small = slow_compute(json!({"seconds": 5, "label": "bystander"}), true);
            let full = |m: &str| {
                m.starts_with("Too many tasks: this caller's tasks hold ")
                    && m.ends_with(" past the limit per caller of 16777216 (MemoryTaskStore::max_task_bytes_per_principal); retry once some have ended and expired")
            };
            while t.live() {
                let what = match t.post(&CALL, body.as_bytes()).await {
                    Ok(a) => {
                        let v = a.json().unwrap_or_default();
                        if v["result"]["resultType"] == "task" {
                            "60 KiB as a task: task created".to_owned()
                        } else if a.status == 429 && full(error_message(&v)) {
                            // The store is full for this caller: does another anonymous
                            // address still get a task?
                            if i == 0 {
                                let b = match bystander.post(&CALL, small.as_bytes()).await {
                                    Ok(b) => {
                                        let bv = b.json().unwrap_or_default();
                                        if bv["result"]["resultType"] == "task" {
                                            "task created".to_owned()
                                        } else {
                                            let m = format!("{} {:.100}", b.summary(), error_message(&bv));
                                            t.tally.broken(A, format!("the bystander was refused a task while another address's were full: {m}"));
                                            m
                                        }
                                    }
                                    Err(e) => e,
                                };
                                t.tally.add(A, format!("bystander's task meanwhile: {b}"));
                            }
                            tokio::time::sleep(Duration::from_secs(1)).await;
                            "60 KiB as a task: refused 429, -32000 16 MiB of tasks per caller (exact)"
                                .to_owned()
                        } else {
                            t.tally.broken(A, format!("a 60 KiB task got {} {:.160}", a.summary(), error_message(&v)));
                            format!("60 KiB as a task: UNEXPECTED {} {:.120}", a.summary(), error_message(&v))
                        }
                    }
                    Err(e) => format!("60 KiB as a task: {e}"),
                };
                t.tally.add(A, what);
            }
        });
    }
    while t.live() {
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    while running.join_next().await.is_some() {}
    Ok(())
}

/// (c') Calls of a 10–30 s tool with 4 MB of ignored padding, without a task, `at_once` in
/// flight: the address may have `max_request_bytes_per_client` (32 MiB) of requests in flight,
/// so at most 8 run at once and the others get 429 naming it. Checked: every answer is one of
/// the two, and the calls that ran never overlapped more than 8 deep.
async fn inflight_padding(t: Arc<Target>, at_once: usize) -> Res<()> {
    const A: &str = "in-flight padding";
    const PER_CLIENT: usize = 32 << 20;
    // 10 to 30 s each, so that the calls do not all end and start again together.
    let bodies: Vec<Arc<String>> = (10..=30)
        .map(|seconds| {
            Arc::new(slow_compute(
                json!({"seconds": seconds, "label": "pad", "padding": "x".repeat(4_000_000)}),
                false,
            ))
        })
        .collect();
    let most = PER_CLIENT / bodies[0].len();
    // When each call that ran to its end was running: from 2 s after it was sent (its body
    // was read by then) to its answer.
    let ran: Arc<Mutex<Vec<(Instant, Instant)>>> = Arc::default();
    let mut calls = tokio::task::JoinSet::new();
    let mut n = 0usize;
    while t.live() {
        while calls.len() < at_once {
            n += 1;
            let seconds = 10 + n * 7 % 21;
            let (t, body, ran) = (t.clone(), bodies[seconds - 10].clone(), ran.clone());
            calls.spawn(async move {
                let sent = Instant::now();
                let what = match t.post(&CALL, body.as_bytes()).await {
                    Ok(a) => {
                        let v = a.json().unwrap_or_default();
                        let message = error_message(&v);
                        if v["result"]["content"][0]["text"]
                            == format!("slow_compute(pad) done after {seconds}s")
                        {
                            ran.lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .push((sent + Duration::from_secs(2), Instant::now()));
                            "4 MB, 10-30 s, no task: ran to its end".to_owned()
                        } else if a.status == 429
                            && message.starts_with("Too Many Requests: this request needs ")
                            && message.contains(&format!(
                                "may have {PER_CLIENT} (Limits::max_request_bytes_per_client)"
                            ))
                        {
                            "4 MB, 10-30 s, no task: 429 max_request_bytes_per_client".to_owned()
                        } else {
                            t.tally.broken(
                                A,
                                format!("a 4 MB call got {} {:.160}", a.summary(), message),
                            );
                            format!("4 MB, 10-30 s, no task: {} {:.120}", a.summary(), message)
                        }
                    }
                    // Refused before its body was read, the rest of it may meet a closed
                    // connection.
                    Err(e) => format!("4 MB, 10-30 s, no task: {e}"),
                };
                t.tally.add(A, what);
            });
        }
        calls.join_next().await;
    }
    calls.abort_all();
    let ran = ran.lock().unwrap_or_else(|e| e.into_inner());
    let mut edges: Vec<(Instant, i32)> = ran
        .iter()
        .flat_map(|&(from, to)| [(from, 1), (to, -1)])
        .collect();
    edges.sort();
    let (mut depth, mut deepest) = (0i32, 0i32);
    for (_, step) in edges {
        depth += step;
        deepest = deepest.max(depth);
    }
    t.tally
        .add(A, format!("at most {deepest} ran at once (allowed {most})"));
    if usize::try_from(deepest).unwrap_or(0) > most {
        t.tally.broken(
            A,
            format!("{deepest} calls of 4 MB ran at once from one address, past its {PER_CLIENT} bytes (Limits::max_request_bytes_per_client)"),
        );
    }
    Ok(())
}

/// (d) Rounds of 200 half-sent bodies, each from another address of one IPv6 /64: one client,
/// so 64 are held (`max_bodies_per_client`) and cut off with 408, the other 136 get 429.
async fn ipv6_spread(t: Arc<Target>, prefix: Ipv6Addr) -> Res<()> {
    const A: &str = "IPv6 spread (one /64)";
    let net = u128::from(prefix) & !((1u128 << 64) - 1);
    let mut seed = u64::from(std::process::id()) ^ 0x9e37_79b9_7f4a_7c15;
    while t.live() {
        let mut round = tokio::task::JoinSet::new();
        let started = Instant::now();
        for _ in 0..200 {
            // xorshift: another /128 each time.
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let from = IpAddr::V6(Ipv6Addr::from(net | u128::from(seed | 1)));
            let t = t.seen_from(from);
            round.spawn(async move { half_body(&t).await });
        }
        let sent_in = started.elapsed();
        let (mut held, mut refused) = (0, 0);
        while let Some(outcome) = round.join_next().await {
            let what = outcome
                .map_err(|e| e.to_string())
                .and_then(|o| o)
                .unwrap_or_else(|e| e);
            if what.starts_with("408") {
                held += 1;
            } else if what.starts_with("429") {
                refused += 1;
            }
            t.tally.add(A, what);
        }
        if held > 64 && sent_in < Duration::from_millis(1500) {
            t.tally.broken(A, format!("{held} of 200 bodies from one /64 were held (sent within {sent_in:?}), {refused} refused: the /64 counted as several clients (max_bodies_per_client is 64)"));
        }
        t.tally.add(
            A,
            format!("rounds: {held} held and cut off, {refused} refused"),
        );
    }
    Ok(())
}

/// (e) A victim ends its session; 12 addresses open and end sessions (initialize + DELETE) as
/// fast as they can; every second the victim's id must still be refused (404, -32001).
async fn ended_sessions(
    t: Arc<Target>,
    victim: Arc<Target>,
    flood_for: Option<Duration>,
) -> Res<()> {
    const A: &str = "ended-session flood";
    let sid = victim.handshake(json!({})).await?;
    let status = victim.delete(&sid).await?;
    if status != 200 {
        return Err(format!("the victim's DELETE got {status}"));
    }
    let pairs = Arc::new(AtomicU64::new(0));
    let flood_until = flood_for.map(|d| Instant::now() + d);
    let mut flood = tokio::task::JoinSet::new();
    for n in 1..=12 {
        let t = t.seen_from(IpAddr::V4(Ipv4Addr::new(127, 0, 1, n)));
        let pairs = pairs.clone();
        flood.spawn(async move {
            while t.live() && flood_until.is_none_or(|end| Instant::now() < end) {
                let what = match t.handshake(json!({})).await {
                    Ok(sid) => match t.delete(&sid).await {
                        Ok(200) => "initialize + DELETE 200".to_owned(),
                        Ok(404) => "initialize + DELETE 404 (the address's own sessions cut off)"
                            .to_owned(),
                        Ok(s) => format!("initialize + DELETE {s}"),
                        Err(e) => format!("DELETE: {e}"),
                    },
                    Err(e) => e,
                };
                pairs.fetch_add(1, Ordering::Relaxed);
                t.tally.add(A, what);
            }
        });
    }
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string();
    while victim.live() {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let what = match victim.post(&in_session(&sid), ping.as_bytes()).await {
            Ok(a) => {
                let v = a.json().unwrap_or_default();
                if a.status == 404 && v["error"]["code"] == -32001 {
                    "the victim's ended id: 404, -32001 (still ended)".to_owned()
                } else {
                    t.tally.broken(A, format!("after {} initialize+DELETE pairs, the victim's ended session answered {}", pairs.load(Ordering::Relaxed), a.summary()));
                    format!("BROKEN: the victim's ended id answered {}", a.summary())
                }
            }
            Err(e) => e,
        };
        t.tally.add(A, what);
    }
    while flood.join_next().await.is_some() {}
    t.tally.add(
        A,
        format!("pairs in all: {}", pairs.load(Ordering::Relaxed)),
    );
    Ok(())
}

type Attack = std::pin::Pin<Box<dyn std::future::Future<Output = Res<()>> + Send>>;

#[tokio::main]
async fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("mcp-attack: {e}");
            std::process::exit(2);
        }
    };
    let (addr, path) = match split_url(&args.url) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("mcp-attack: {e}");
            std::process::exit(2);
        }
    };
    let t = Target {
        url: args.url.clone(),
        addr,
        addr6: SocketAddr::new(IpAddr::V6(Ipv6Addr::LOCALHOST), addr.port()),
        path,
        from: args.from,
        until: Instant::now() + Duration::from_secs(args.seconds),
        tally: Arc::default(),
    };
    let from = |n| t.attacked_from(n);
    let mut attacks: Vec<(&str, String, Attack)> = vec![
        (
            "detached",
            from(0).from.to_string(),
            Box::pin(detached(from(0))),
        ),
        (
            "half-bodies",
            from(1).from.to_string(),
            Box::pin(half_bodies(from(1))),
        ),
        (
            "huge-filters",
            from(2).from.to_string(),
            Box::pin(huge_filters(from(2))),
        ),
        (
            "lingering",
            from(3).from.to_string(),
            Box::pin(lingering_subscriptions(from(3))),
        ),
        (
            "byte-subscriptions",
            from(4).from.to_string(),
            Box::pin(byte_subscriptions(from(4))),
        ),
        (
            "byte-listen",
            from(5).from.to_string(),
            Box::pin(byte_listen(from(5))),
        ),
        (
            "task-padding",
            format!("{} (bystander {})", from(6).from, from(7).from),
            Box::pin(task_padding(from(6), from(7))),
        ),
        (
            "ended-sessions",
            format!("127.0.1.1-12 (victim {})", from(8).from),
            Box::pin(ended_sessions(from(8), from(8), args.flood_for)),
        ),
    ];
    if args.inflight > 0 {
        attacks.push((
            "inflight-padding",
            from(9).from.to_string(),
            Box::pin(inflight_padding(from(9), args.inflight)),
        ));
    } else {
        println!("mcp-attack: inflight-padding not run (--inflight 0)");
    }
    match args.ipv6 {
        Ok(prefix) => attacks.push((
            "ipv6-spread",
            format!("{prefix}/64"),
            Box::pin(ipv6_spread(from(0), prefix)),
        )),
        Err(ref why) => println!("mcp-attack: ipv6-spread NOT RUN: {why}"),
    }
    if let Some(only) = &args.only {
        attacks.retain(|(name, _, _)| only.iter().any(|o| o == name));
    }
    println!("mcp-attack: {} for {} s", t.url, args.seconds);
    for (name, from, _) in &attacks {
        println!("  {name:<20} from {from}");
    }
    println!(
        "  token-flood          not run: examples/everything checks no tokens. Covered against a verifier by sake-runtime/tests/authorization.rs (a_flood_of_tokens_is_checked_only_within_its_addresss_share) and against the real oidc-provider by sake-runtime/tests/auth_oidc.rs (a_flood_of_made_up_tokens_costs_at_most_the_concurrent_introspections)"
    );
    let running: Vec<_> = attacks
        .into_iter()
        .map(|(name, _, a)| (name, tokio::spawn(a)))
        .collect();
    let mut failed = false;
    for (name, a) in running {
        match a.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                eprintln!("mcp-attack: {name} could not attack: {e}");
                failed = true;
            }
            Err(e) => {
                eprintln!("mcp-attack: {name} failed: {e}");
                failed = true;
            }
        }
    }
    let tally = t.tally.counts.lock().unwrap_or_else(|e| e.into_inner());
    for ((attack, outcome), n) in tally.iter() {
        println!("  {attack:<26} {outcome:<70} {n}");
    }
    let broken = t.tally.broken.lock().unwrap_or_else(|e| e.into_inner());
    for b in broken.iter() {
        println!("mcp-attack: BOUND BROKEN: {b}");
    }
    if failed || !broken.is_empty() {
        std::process::exit(1);
    }
}
