//! Well-formed requests used as weapons (issue: "No single client can exhaust the server"):
//! each attack runs as an attacker would, from its own address, while another client, from
//! another address (127.0.0.2), must still be served within a second, and the process's
//! resident memory must stay within a stated bound.
//!
//! The server runs in this process (so RSS counts the attacker's buffers too: the bounds are
//! upper bounds). Loopback addresses 127.0.0.0/8 all reach the listener on Linux.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use sake::prelude::*;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

#[allow(dead_code)] // Only part of the harness is used here.
#[path = "../../tests/src/raw.rs"]
mod raw;

use raw::{RawReply as Reply, connect_from as connect, serve};

const ATTACKER: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 1));
const HONEST: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Answer {
    ok: bool,
}

/// Asks the client a question, and waits for the answer.
#[tool]
async fn ask_forever(ctx: Context) -> Result<String, InputError> {
    let answer = ctx.elicit::<Answer>("answer", "Well?").await?;
    Ok(format!("{:?}", answer.accepted().map(|a| a.ok)))
}

/// Reports progress, then waits an hour.
#[tool]
async fn slow(ctx: Context) -> String {
    ctx.progress(0.0, None).await;
    tokio::time::sleep(Duration::from_secs(3600)).await;
    "done".to_owned()
}

/// Answers at once.
#[tool]
fn quick() -> String {
    "quick".to_owned()
}

/// A document.
#[resource(uri = "doc://{name}", name = "doc")]
fn doc(name: String) -> String {
    format!("the document {name}")
}

// ---------------------------------------------------------------------------------------------
// Requests by hand, from a chosen source address, whole, until their first event, or by halves
// (the harness's raw HTTP/1.1 client: tests/src/raw.rs)

/// A POST's head (and `Content-Length: declared`).
fn head(headers: &[(&str, &str)], declared: usize) -> Vec<u8> {
    let mut h = format!(
        "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nconnection: close\r\ncontent-length: {declared}\r\n"
    );
    for (k, v) in headers {
        h.push_str(&format!("{k}: {v}\r\n"));
    }
    h.push_str("\r\n");
    h.into_bytes()
}

/// Sends a whole request and reads the whole reply.
async fn post(addr: SocketAddr, from: IpAddr, headers: &[(&str, &str)], body: &Value) -> Reply {
    let body = body.to_string();
    let mut tcp = connect(addr, from).await;
    let mut req = head(headers, body.len());
    req.extend_from_slice(body.as_bytes());
    if let Err(e) = tcp.write_all(&req).await {
        // A request refused before its body is read is answered, and its connection closed,
        // while the rest of a large body may still be on its way: the answer, read until the
        // reset, is what the test looks at.
        assert!(
            matches!(
                e.kind(),
                std::io::ErrorKind::BrokenPipe | std::io::ErrorKind::ConnectionReset
            ),
            "{e}"
        );
        let mut seen = Vec::new();
        let mut buf = [0u8; 8192];
        while let Ok(n @ 1..) = tcp.read(&mut buf).await {
            seen.extend_from_slice(&buf[..n]);
        }
        return raw::parse(&seen);
    }
    raw::reply(&mut tcp).await
}

/// Sends a request and returns once the reply's head and first SSE event came (or the whole
/// reply, when it is not a stream), with the connection still open.
async fn post_until_first_event(
    addr: SocketAddr,
    from: IpAddr,
    headers: &[(&str, &str)],
    body: &Value,
) -> (Reply, TcpStream) {
    let body = body.to_string();
    let mut tcp = connect(addr, from).await;
    let mut req = head(headers, body.len());
    req.extend_from_slice(body.as_bytes());
    tcp.write_all(&req).await.unwrap();
    let first = raw::read_until(&mut tcp, |seen| {
        raw::parse_partial(seen).is_some_and(|r| !r.is_sse() || !r.events().is_empty())
    });
    let mut seen = tokio::time::timeout(Duration::from_secs(30), first)
        .await
        .expect("the reply comes")
        .unwrap();
    let reply = raw::parse_partial(&seen).expect("the connection closed before a reply");
    if reply.is_sse() {
        return (reply, tcp);
    }
    seen.extend(raw::read_to_close(&mut tcp, raw::CLOSE_PATIENCE).await);
    (raw::parse(&seen), tcp)
}

/// Sends the head of a request declaring `declared` bytes: the reply when the server answers
/// within 300 ms (refused before the body), else 10 bytes of the body and the connection,
/// held open.
async fn half_send(
    addr: SocketAddr,
    from: IpAddr,
    headers: &[(&str, &str)],
    declared: usize,
) -> Result<TcpStream, Reply> {
    let mut tcp = connect(addr, from).await;
    tcp.write_all(&head(headers, declared)).await.unwrap();
    let mut buf = [0u8; 4096];
    match tokio::time::timeout(Duration::from_millis(300), tcp.read(&mut buf)).await {
        Ok(Ok(n)) => {
            let mut seen = buf[..n].to_vec();
            seen.extend(raw::read_to_close(&mut tcp, raw::CLOSE_PATIENCE).await);
            Err(raw::parse(&seen))
        }
        Ok(Err(e)) => panic!("{e}"),
        Err(_) => {
            tcp.write_all(b"{\"jsonrpc\"").await.unwrap();
            Ok(tcp)
        }
    }
}

/// One attack at a time: the process's memory is each test's measure.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The resident memory of this process, in KiB.
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

fn server() -> Server {
    Server::from_registry()
        .name("exhaustion")
        .version("1.0.0")
        .session_key(b"a key shared by no one, for these tests only".as_slice())
}

const LEGACY: &str = "2025-11-25";

/// Opens a handshake session (declaring elicitation) and returns its id.
async fn handshake(addr: SocketAddr, from: IpAddr) -> String {
    let reply = post(
        addr,
        from,
        &[],
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": LEGACY,
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "attacker", "version": "1"},
        }}),
    )
    .await;
    assert_eq!(reply.status, 200, "{reply:?}");
    reply
        .header("mcp-session-id")
        .expect("a session id")
        .to_owned()
}

fn in_session(sid: &str) -> [(&str, &str); 2] {
    [("mcp-session-id", sid), ("mcp-protocol-version", LEGACY)]
}

fn call(id: u64, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
}

/// Another client, from another address, in a session of its own: served, and within a
/// second.
async fn honest_client_is_served(addr: SocketAddr) {
    let started = Instant::now();
    let sid = handshake(addr, HONEST).await;
    let reply = post(
        addr,
        HONEST,
        &in_session(&sid),
        &call(1, "quick", json!({})),
    )
    .await;
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(
        reply.json(),
        json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "quick"}]}})
    );
    // And statelessly.
    let reply = post(
        addr,
        HONEST,
        &[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "quick"),
        ],
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "quick", "arguments": {},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        }}),
    )
    .await;
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(
        reply.json()["result"]["content"],
        json!([{"type": "text", "text": "quick"}])
    );
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(1),
        "the honest client waited {took:?}"
    );
}

/// The refusal of a client over its share; without the request's id when it was refused
/// before its body was read.
fn too_many(id: Option<u64>, what: &str) -> Value {
    let mut v = json!({"jsonrpc": "2.0", "error": {"code": -32000, "message": format!("Too Many Requests: {what}; wait for one to finish")}});
    if let Some(id) = id {
        v["id"] = json!(id);
    }
    v
}

// ---------------------------------------------------------------------------------------------

/// One handshake session declares elicitation and sends 600 calls of a tool that asks,
/// hanging up on each as soon as its question comes: at most its session's 64 questions wait
/// (the other calls end at once with a tool error), then 300 calls of a tool that streams
/// progress and waits: the session holds at most its 256 request slots (the rest get 429).
/// Others are served; once the grace passes without a resumption the requests are cancelled
/// and the session's slots are free again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn detached_requests_hold_only_their_sessions_share() {
    let _serial = SERIAL.lock().await;
    let addr = serve(server().limits(|l| l.detached_grace(Duration::from_secs(2)))).await;
    let before = rss_kib();
    let sid = handshake(addr, ATTACKER).await;
    let (mut asked, mut declined) = (0, 0);
    for id in 1..=600u64 {
        let (reply, tcp) = post_until_first_event(
            addr,
            ATTACKER,
            &in_session(&sid),
            &call(id, "ask_forever", json!({})),
        )
        .await;
        assert_eq!(reply.status, 200, "{reply:?}");
        if reply.header("content-type") == Some("text/event-stream") {
            let question = &reply.events()[0];
            assert_eq!(question["method"], "elicitation/create", "{question}");
            asked += 1;
        } else {
            assert_eq!(
                reply.json(),
                json!({"jsonrpc": "2.0", "id": id, "result": {
                    "content": [{"type": "text", "text": "this request cannot ask the client for input: this session has as many questions waiting for answers as it may (Limits::max_pending_inputs_per_session)"}],
                    "isError": true,
                }})
            );
            declined += 1;
        }
        drop(tcp); // hang up
    }
    assert_eq!((asked, declined), (64, 536));
    let (mut streamed, mut refused) = (0, 0);
    for id in 1000..1300u64 {
        let mut params = call(id, "slow", json!({}));
        params["params"]["_meta"] = json!({"progressToken": id});
        let (reply, tcp) = post_until_first_event(addr, ATTACKER, &in_session(&sid), &params).await;
        match reply.status {
            200 => {
                assert_eq!(reply.events()[0]["method"], "notifications/progress");
                streamed += 1;
            }
            429 => {
                assert_eq!(
                    reply.json(),
                    too_many(
                        Some(id),
                        "this session has 256 requests running and may have 256 (Limits::max_requests_per_session)"
                    )
                );
                assert_eq!(reply.header("retry-after"), Some("1"));
                refused += 1;
            }
            other => panic!("unexpected {other}: {reply:?}"),
        }
        drop(tcp);
    }
    assert_eq!((streamed, refused), (192, 108));
    honest_client_is_served(addr).await;
    let grown = rss_kib().saturating_sub(before);
    println!("detached requests: RSS grew by {grown} KiB");
    assert!(grown < 64 * 1024, "RSS grew by {grown} KiB");
    // Nobody resumed: after the grace the requests are cancelled, and the session may run
    // requests again.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let reply = post(
            addr,
            ATTACKER,
            &in_session(&sid),
            &call(2000, "quick", json!({})),
        )
        .await;
        if reply.status == 200 {
            break;
        }
        assert_eq!(reply.status, 429);
        assert!(
            Instant::now() < deadline,
            "the detached requests were not cancelled"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // And ask again: the questions were forgotten with their requests.
    let (reply, _tcp) = post_until_first_event(
        addr,
        ATTACKER,
        &in_session(&sid),
        &call(2001, "ask_forever", json!({})),
    )
    .await;
    assert_eq!(reply.events()[0]["method"], "elicitation/create");
}

/// A stream that is resumed within the grace is not cancelled: the client gets its question
/// on the resumed stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resumed_request_is_not_cancelled() {
    let _serial = SERIAL.lock().await;
    let addr = serve(server().limits(|l| l.detached_grace(Duration::from_millis(1500)))).await;
    let sid = handshake(addr, ATTACKER).await;
    let (reply, tcp) = post_until_first_event(
        addr,
        ATTACKER,
        &in_session(&sid),
        &call(1, "ask_forever", json!({})),
    )
    .await;
    assert_eq!(reply.status, 200);
    let text = String::from_utf8_lossy(&reply.body).into_owned();
    let event_id = text
        .lines()
        .find_map(|l| l.strip_prefix("id: "))
        .expect("2025-11-25 streams carry event ids")
        .to_owned();
    let question = reply.events()[0].clone();
    drop(tcp);
    // Resume before the grace ends; the request is still waiting for its answer.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut tcp = connect(addr, ATTACKER).await;
    tcp.write_all(
        format!(
            "GET /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: text/event-stream\r\nmcp-session-id: {sid}\r\nmcp-protocol-version: {LEGACY}\r\nlast-event-id: {event_id}\r\n\r\n"
        )
        .as_bytes(),
    )
    .await
    .unwrap();
    // Held past the grace, then answered: the call completes on the resumed stream.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let answer = post(
        addr,
        ATTACKER,
        &in_session(&sid),
        &json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "accept", "content": {"ok": true}}}),
    )
    .await;
    assert_eq!(answer.status, 202, "{answer:?}");
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    let done = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            let n = tcp.read(&mut buf).await.unwrap();
            raw.extend_from_slice(&buf[..n]);
            if n == 0 || String::from_utf8_lossy(&raw).contains("\"id\":1,\"result\"") {
                break;
            }
        }
    })
    .await;
    assert!(
        done.is_ok(),
        "no result on the resumed stream: {}",
        String::from_utf8_lossy(&raw)
    );
    assert!(
        String::from_utf8_lossy(&raw).contains(
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"Some(true)"}]}}"#
        ),
        "{}",
        String::from_utf8_lossy(&raw)
    );
}

/// 200 connections send their head and 10 of 1000 bytes, then nothing. A body being read
/// holds no request slot (the server has only 8 here), the attacker's address holds at most
/// its 64 reading slots (the rest get 429), others are served, and each held body is cut
/// off within seconds for its rate (408).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_sent_bodies_hold_no_request_slot() {
    let _serial = SERIAL.lock().await;
    let addr = serve(server().max_concurrent_requests(8)).await;
    let before = rss_kib();
    let started = Instant::now();
    // All at once, so that the first are still held when the last arrive: the head, then
    // (unless refused at once) 10 bytes of the body.
    let attempts: Vec<_> = (0..200)
        .map(|_| {
            tokio::spawn(half_send(
                addr,
                ATTACKER,
                &[
                    ("mcp-protocol-version", "2026-07-28"),
                    ("mcp-method", "tools/list"),
                ],
                1000,
            ))
        })
        .collect();
    let mut held = Vec::new();
    let mut refused = 0;
    for attempt in attempts {
        match attempt.await.unwrap() {
            Ok(tcp) => held.push(tcp),
            Err(reply) => {
                assert_eq!(reply.status, 429, "{reply:?}");
                assert_eq!(
                    reply.json(),
                    too_many(
                        None,
                        "this client is sending 64 request bodies at once and may send 64 (Limits::max_bodies_per_client)"
                    )
                );
                refused += 1;
            }
        }
    }
    assert_eq!((held.len(), refused), (64, 136));
    honest_client_is_served(addr).await;
    let grown = rss_kib().saturating_sub(before);
    println!("half-sent bodies: RSS grew by {grown} KiB");
    assert!(grown < 32 * 1024, "RSS grew by {grown} KiB");
    // Each held body is cut off: 10 bytes in 2 s is far below 4096 bytes per second.
    for tcp in &mut held {
        let reply = raw::reply(tcp).await;
        assert_eq!(reply.status, 408, "{reply:?}");
        let body = reply.json();
        assert_eq!(body["error"]["code"], -32000);
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with(
                "Request Timeout: the body arrives slower than 4096 bytes per second (10 bytes in 2."
            ),
            "{message}"
        );
        assert!(
            message.ends_with("s); send the whole body at once"),
            "{message}"
        );
    }
    let took = started.elapsed();
    assert!(took < Duration::from_secs(10), "cut off after {took:?}");
    // The reading slots are free again.
    let reply = post(
        addr,
        ATTACKER,
        &[],
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": LEGACY, "capabilities": {},
            "clientInfo": {"name": "again", "version": "1"},
        }}),
    )
    .await;
    assert_eq!(reply.status, 200);
}

fn listen(id: u64, uris: &[String]) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "subscriptions/listen", "params": {
        "notifications": {"resourceSubscriptions": uris},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        },
    }})
}

const LISTEN: [(&str, &str); 2] = [
    ("mcp-protocol-version", "2026-07-28"),
    ("mcp-method", "subscriptions/listen"),
];

/// 30 `subscriptions/listen` requests whose filters name 150,000 URIs each (almost 4 MiB, the
/// largest body) are refused while read; streams of the largest filter allowed (1024 URIs)
/// are held until the client's 1 MiB of held bytes is spent, then refused with 429; an IPv6
/// neighbour is the same client; others are served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn huge_listen_filters_are_refused_while_read() {
    let _serial = SERIAL.lock().await;
    let addr = serve(server()).await;
    let before = rss_kib();
    let huge: Vec<String> = (0..150_000).map(|i| format!("doc://d{i:08}")).collect();
    let body = listen(1, &huge);
    assert!(body.to_string().len() < 4 << 20);
    for _ in 0..30 {
        let reply = post(addr, ATTACKER, &LISTEN, &body).await;
        assert_eq!(reply.status, 200, "{reply:?}");
        assert_eq!(
            reply.json(),
            json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "Invalid params: `notifications` is not a SubscriptionFilter: `resourceSubscriptions` names more than 1024 resources; listen on several streams"}})
        );
    }
    drop((huge, body));
    let refused = rss_kib().saturating_sub(before);
    println!("huge listen filters: RSS grew by {refused} KiB (30 refused, nothing held)");
    assert!(refused < 64 * 1024, "RSS grew by {refused} KiB");
    // The largest filter allowed, on streams held open: each holds 1024 × (15 + 64) bytes
    // of its client's 1 MiB, so the 13th is refused.
    let before = rss_kib();
    let allowed: Vec<String> = (0..1024).map(|i| format!("doc://d{i:08}")).collect();
    let mut streams = Vec::new();
    for id in 0..12 {
        let (reply, tcp) =
            post_until_first_event(addr, ATTACKER, &LISTEN, &listen(id, &allowed)).await;
        assert_eq!(reply.status, 200, "{reply:?}");
        let ack = &reply.events()[0];
        assert_eq!(
            ack["method"], "notifications/subscriptions/acknowledged",
            "{ack}"
        );
        assert_eq!(
            ack["params"]["notifications"]["resourceSubscriptions"]
                .as_array()
                .map(Vec::len),
            Some(1024)
        );
        streams.push(tcp);
    }
    let over = json!({"jsonrpc": "2.0", "id": 12, "error": {"code": -32000, "message":
        "Too Many Requests: this stream's filter needs 80896 bytes, and this client already has the server keep 970752 of its 1048576 (Limits::max_held_bytes_per_client); unsubscribe or close a stream first"}});
    let reply = post(addr, ATTACKER, &LISTEN, &listen(12, &allowed)).await;
    assert_eq!((reply.status, reply.json()), (429, over.clone()));
    // URIs the server does not serve are left out of the acknowledgement, and hold nothing.
    let unserved: Vec<String> = (0..1023).map(|i| format!("nothing://{i:0>3000}")).collect();
    let (reply, tcp) = post_until_first_event(
        addr,
        ATTACKER,
        &LISTEN,
        &listen(13, &[unserved, vec!["doc://kept".to_owned()]].concat()),
    )
    .await;
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(reply.events().len(), 1, "{reply:?}");
    assert_eq!(
        reply.events()[0]["params"]["notifications"],
        json!({"resourceSubscriptions": ["doc://kept"]})
    );
    streams.push(tcp);
    honest_client_is_served(addr).await;
    let grown = rss_kib().saturating_sub(before);
    println!("12 streams of 1024 URIs (the 13th refused): RSS grew by {grown} KiB");
    assert!(grown < 32 * 1024, "RSS grew by {grown} KiB");
    // Once streams close, their bytes come back.
    drop(streams.drain(..3));
    let mut status = 0;
    for _ in 0..50 {
        let (reply, tcp) =
            post_until_first_event(addr, ATTACKER, &LISTEN, &listen(12, &allowed)).await;
        status = reply.status;
        if status == 200 {
            streams.push(tcp);
            break;
        }
        assert_eq!((reply.status, reply.json()), (429, over.clone()));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(status, 200, "a closed stream's bytes came back");
}

/// Anonymous IPv6 callers count by /64: each address of one network is the same client for
/// every per-client bound, the next /64 is another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ipv6_network_is_one_client() {
    let _serial = SERIAL.lock().await;
    let addr = serve(
        server()
            .client_ip_header("x-forwarded-for")
            .limits(|l| l.max_held_bytes_per_client(200)),
    )
    .await;
    let from = |ip: &'static str| {
        [
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "subscriptions/listen"),
            ("x-forwarded-for", ip),
        ]
    };
    let one = vec!["doc://a".to_owned()];
    // 71 bytes each: two streams fit in 200.
    let mut held = Vec::new();
    for ip in ["2001:db8:0:1::1", "2001:db8:0:1::2"] {
        let (reply, tcp) =
            post_until_first_event(addr, ATTACKER, &from(ip), &listen(1, &one)).await;
        assert_eq!(reply.status, 200, "{ip}: {reply:?}");
        held.push(tcp);
    }
    let reply = post(
        addr,
        ATTACKER,
        &from("2001:db8:0:1:ffff::9"),
        &listen(2, &one),
    )
    .await;
    assert_eq!(reply.status, 429, "the same /64: {reply:?}");
    let (reply, _tcp) =
        post_until_first_event(addr, ATTACKER, &from("2001:db8:0:2::1"), &listen(3, &one)).await;
    assert_eq!(reply.status, 200, "another /64: {reply:?}");
    honest_client_is_served(addr).await;
}

/// 3000 short-lived handshake sessions each subscribe to a resource of 2 KiB and never send
/// DELETE. The client's subscriptions hold at most its 1 MiB of held bytes: the 507th is
/// refused with -32000 (in the session, a 200); URIs the server does not serve, or longer than
/// 4 KiB, are refused; others still subscribe.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscriptions_do_not_outlive_their_bounds() {
    let _serial = SERIAL.lock().await;
    let addr = serve(server().limits(|l| l.max_records_per_client(1000))).await;
    let before = rss_kib();
    let subscribe = |id: u64, uri: String| json!({"jsonrpc": "2.0", "id": id, "method": "resources/subscribe", "params": {"uri": uri}});
    for i in 0..3000u64 {
        let sid = handshake(addr, ATTACKER).await;
        let reply = post(
            addr,
            ATTACKER,
            &in_session(&sid),
            &subscribe(1, format!("doc://{i:0>2000}")),
        )
        .await;
        // 2006 + 64 bytes each, 506 of them in 1 MiB.
        let expected = if i < 506 {
            json!({"jsonrpc": "2.0", "id": 1, "result": {}})
        } else {
            json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32000, "message":
                "Too Many Requests: this subscription needs 2070 bytes, and this client already has the server keep 1047420 of its 1048576 (Limits::max_held_bytes_per_client); unsubscribe or close a stream first"}})
        };
        assert_eq!(
            (reply.status, reply.json()),
            (200, expected),
            "subscription {i}"
        );
    }
    let grown = rss_kib().saturating_sub(before);
    println!("subscriptions of 3000 sessions: RSS grew by {grown} KiB");
    assert!(grown < 32 * 1024, "RSS grew by {grown} KiB");
    // Refused: a URI nobody serves, and one over 4 KiB.
    let sid = handshake(addr, ATTACKER).await;
    let reply = post(
        addr,
        ATTACKER,
        &in_session(&sid),
        &subscribe(2, "nothing://here".to_owned()),
    )
    .await;
    assert_eq!(
        reply.json(),
        json!({"jsonrpc": "2.0", "id": 2, "error": {"code": -32002, "message": "Resource not found: nothing://here", "data": {"uri": "nothing://here"}}})
    );
    let reply = post(
        addr,
        ATTACKER,
        &in_session(&sid),
        &subscribe(3, format!("doc://{}", "x".repeat(5000))),
    )
    .await;
    assert_eq!(
        reply.json(),
        json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32602, "message": "Invalid params: the URI has 5006 bytes; this server serves none longer than 4096"}})
    );
    // Another client subscribes.
    let sid = handshake(addr, HONEST).await;
    let reply = post(
        addr,
        HONEST,
        &in_session(&sid),
        &subscribe(4, "doc://mine".to_owned()),
    )
    .await;
    assert_eq!(
        reply.json(),
        json!({"jsonrpc": "2.0", "id": 4, "result": {}})
    );
    honest_client_is_served(addr).await;
}

/// A 2025-03-26 batch counts one request per message: a session cannot run 1000 requests for
/// the price of one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_messages_count_as_requests() {
    let _serial = SERIAL.lock().await;
    let addr = serve(server().limits(|l| l.max_requests_per_session(10))).await;
    let reply = post(
        addr,
        ATTACKER,
        &[],
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-03-26", "capabilities": {},
            "clientInfo": {"name": "batcher", "version": "1"},
        }}),
    )
    .await;
    let sid = reply.header("mcp-session-id").unwrap().to_owned();
    let headers = [
        ("mcp-session-id", sid.as_str()),
        ("mcp-protocol-version", "2025-03-26"),
    ];
    let batch = |n: u64| Value::Array((1..=n).map(|i| call(i, "quick", json!({}))).collect());
    let reply = post(addr, ATTACKER, &headers, &batch(11)).await;
    assert_eq!(reply.status, 429);
    assert_eq!(reply.header("retry-after"), Some("1"));
    assert_eq!(
        reply.json(),
        too_many(
            None,
            "this session has 0 requests running and may have 10 (Limits::max_requests_per_session); the batch counts 11"
        )
    );
    let reply = post(addr, ATTACKER, &headers, &batch(10)).await;
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(reply.json().as_array().map(Vec::len), Some(10));
}

// ---------------------------------------------------------------------------------------------
// stdio: one client, so the question is only memory and whether the server keeps answering.

/// 5000 calls of a tool that asks, never answered: 256 run (the connection is one session),
/// the rest are refused at once with the exact error; memory stays bounded; cancelling one
/// frees its slot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_flood_is_bounded() {
    let _serial = SERIAL.lock().await;
    use tokio::io::AsyncBufReadExt as _;
    let (client, server_side) = tokio::io::duplex(1 << 20);
    let (server_read, server_write) = tokio::io::split(server_side);
    let service = server().build().unwrap();
    tokio::spawn(service.serve_io(server_read, server_write));
    let (read, mut write) = tokio::io::split(client);
    let mut lines = tokio::io::BufReader::new(read).lines();
    let before = rss_kib();
    let send = |v: Value| format!("{v}\n").into_bytes();
    write
        .write_all(&send(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": LEGACY, "capabilities": {"elicitation": {}},
                "clientInfo": {"name": "flood", "version": "1"},
            }}),
        ))
        .await
        .unwrap();
    let init: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(init["id"], 0);
    write
        .write_all(&send(
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        ))
        .await
        .unwrap();
    let writer = tokio::spawn(async move {
        for id in 1..=5000u64 {
            write
                .write_all(&send(call(id, "ask_forever", json!({}))))
                .await
                .unwrap();
        }
        write
    });
    let (mut questions, mut declined, mut refused) = (0, 0, 0);
    while questions + declined + refused < 5000 {
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("the server keeps answering")
            .unwrap()
            .unwrap();
        let msg: Value = serde_json::from_str(&line).unwrap();
        if msg["method"] == "elicitation/create" {
            questions += 1;
        } else if msg.get("result").is_some() {
            assert_eq!(
                msg["result"],
                json!({
                    "content": [{"type": "text", "text": "this request cannot ask the client for input: this session has as many questions waiting for answers as it may (Limits::max_pending_inputs_per_session)"}],
                    "isError": true,
                })
            );
            declined += 1;
        } else {
            assert_eq!(
                msg["error"],
                too_many(
                    None,
                    "this session has 256 requests running and may have 256 (Limits::max_requests_per_session)"
                )["error"],
                "{msg}"
            );
            refused += 1;
        }
    }
    // 64 questions wait (the session's share); the other calls end at once with a tool error,
    // or, while 256 requests run, are refused.
    assert_eq!(questions, 64);
    println!("stdio flood: {declined} declined, {refused} refused");
    let grown = rss_kib().saturating_sub(before);
    println!("stdio flood: RSS grew by {grown} KiB");
    assert!(grown < 64 * 1024, "RSS grew by {grown} KiB");
    // Cancelling one request frees its slot.
    let mut write = writer.await.unwrap();
    write
        .write_all(&send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    write
        .write_all(&send(call(6000, "quick", json!({}))))
        .await
        .unwrap();
    let line = tokio::time::timeout(Duration::from_secs(5), lines.next_line())
        .await
        .expect("answered")
        .unwrap()
        .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&line).unwrap(),
        json!({"jsonrpc": "2.0", "id": 6000, "result": {"content": [{"type": "text", "text": "quick"}]}})
    );
}

/// Ends a handshake session with DELETE.
async fn delete(addr: SocketAddr, from: IpAddr, sid: &str) -> Reply {
    let mut tcp = connect(addr, from).await;
    let req = format!(
        "DELETE /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\nmcp-session-id: {sid}\r\nmcp-protocol-version: {LEGACY}\r\n\r\n"
    );
    tcp.write_all(req.as_bytes()).await.unwrap();
    raw::reply(&mut tcp).await
}

/// The issue's attack, scaled down (a table of 100 ended sessions, 10 per client): a victim
/// ends its session; a dozen addresses then open and end 20 sessions each, and one more
/// address ends one. The victim's session id stays ended (404) — the ends pushed out of the
/// table became cut-offs, never forgotten — and others are served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ended_session_stays_ended_under_table_pressure() {
    let _serial = SERIAL.lock().await;
    let addr =
        serve(server().limits(|l| l.max_tracked_sessions(100).max_records_per_client(10))).await;
    let victim_ip = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 9));
    let victim = handshake(addr, victim_ip).await;
    assert_eq!(delete(addr, victim_ip, &victim).await.status, 200);
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    let gone = |reply: &Reply| {
        assert_eq!(reply.status, 404, "{reply:?}");
        assert_eq!(reply.json()["error"]["code"], -32001, "{reply:?}");
    };
    gone(&post(addr, victim_ip, &in_session(&victim), &ping).await);
    for n in 0..=12u8 {
        let from = IpAddr::V4(Ipv4Addr::new(127, 0, 1, n));
        let rounds = if n == 12 { 1 } else { 20 };
        for _ in 0..rounds {
            let sid = handshake(addr, from).await;
            // 404 once the address's own ends were pushed out: its sessions opened until then
            // (within this second) are cut off.
            let status = delete(addr, from, &sid).await.status;
            assert!(matches!(status, 200 | 404), "{status}");
        }
        gone(&post(addr, victim_ip, &in_session(&victim), &ping).await);
    }
    honest_client_is_served(addr).await;
}

/// Past the memory watermark (here 1 byte: always past it), the server keeps no new state —
/// a handshake session, a subscription stream — and says so with 503, while a call that keeps
/// nothing is still served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_memory_watermark_no_new_state_is_kept() {
    let _serial = SERIAL.lock().await;
    let addr = serve(server().limits(|l| l.memory_watermark(Some(1)))).await;
    let refused = |reply: &Reply, id: Option<u64>, what: &str| {
        assert_eq!(reply.status, 503, "{reply:?}");
        let body = reply.json();
        assert_eq!(body["id"], id.map_or(Value::Null, |i| json!(i)), "{body}");
        assert_eq!(body["error"]["code"], -32000, "{body}");
        let message = body["error"]["message"].as_str().unwrap();
        assert!(
            message.starts_with("Service Unavailable: the server is at its limit of memory (")
                && message.ends_with(&format!(
                    " bytes resident, past the watermark of 1: Limits::memory_watermark); {what} is not kept; retry shortly"
                )),
            "{message}"
        );
    };
    let init = post(
        addr,
        HONEST,
        &[],
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": LEGACY, "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}),
    )
    .await;
    refused(&init, Some(0), "a new session");
    let reply = post(addr, HONEST, &LISTEN, &listen(5, &["doc://a".to_owned()])).await;
    refused(&reply, Some(5), "this stream's filter");
    // A call that keeps nothing is served.
    let reply = post(
        addr,
        HONEST,
        &[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "quick"),
        ],
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "quick", "arguments": {},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        }}),
    )
    .await;
    assert_eq!(reply.status, 200, "{reply:?}");
    assert_eq!(
        reply.json()["result"]["content"],
        json!([{"type": "text", "text": "quick"}])
    );
}

/// A `slow` call padded to `len` bytes in all, in either era (it streams its progress, then
/// waits an hour).
fn padded_slow_call(id: u64, modern: bool, len: usize) -> Value {
    let mut body = call(id, "slow", json!({"padding": ""}));
    body["params"]["_meta"] = if modern {
        json!({
            "progressToken": id,
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        })
    } else {
        json!({"progressToken": id})
    };
    let short = body.to_string().len();
    body["params"]["arguments"]["padding"] = json!("x".repeat(len - short));
    assert_eq!(body.to_string().len(), len);
    body
}

const MODERN_SLOW: [(&str, &str); 3] = [
    ("mcp-protocol-version", "2026-07-28"),
    ("mcp-method", "tools/call"),
    ("mcp-name", "slow"),
];

/// One client sends calls of about 1 MiB each that run for an hour, in both eras: it holds at
/// most its 32 MiB of requests in flight (`Limits::max_request_bytes_per_client`, 31 such
/// calls); the next, stateless or in its session, is refused with 429 and the exact figures,
/// before its body is read. A small request of its own still fits; one under 64 KiB that does
/// not is refused once read, with its id. Another client is served, and the process grows by
/// a bounded amount. Once its requests end, it is served again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_in_flight_are_bounded_in_bytes_per_client() {
    let _serial = SERIAL.lock().await;
    let addr = serve(server()).await;
    let sid = handshake(addr, ATTACKER).await;
    let before = rss_kib();
    const LEN: usize = 1_081_000;
    let mut held = Vec::new();
    for id in 0..31u64 {
        let modern = id % 2 == 0;
        let headers: &[(&str, &str)] = if modern {
            &MODERN_SLOW
        } else {
            &in_session(&sid)
        };
        let (reply, tcp) =
            post_until_first_event(addr, ATTACKER, headers, &padded_slow_call(id, modern, LEN))
                .await;
        assert_eq!(reply.status, 200, "{reply:?}");
        assert_eq!(
            reply.events()[0]["method"],
            "notifications/progress",
            "{reply:?}"
        );
        held.push(tcp);
    }
    let full = format!(
        "this request needs {LEN} bytes, and this client has {} bytes of requests in flight and may have {} (Limits::max_request_bytes_per_client)",
        31 * LEN,
        32 << 20
    );
    let reply = post(
        addr,
        ATTACKER,
        &MODERN_SLOW,
        &padded_slow_call(100, true, LEN),
    )
    .await;
    assert_eq!(reply.status, 429, "{reply:?}");
    assert_eq!(reply.json(), too_many(None, &full));
    let reply = post(
        addr,
        ATTACKER,
        &in_session(&sid),
        &padded_slow_call(101, false, LEN),
    )
    .await;
    assert_eq!(reply.status, 429, "{reply:?}");
    assert_eq!(reply.json(), too_many(None, &full));
    // A small request fits in what is left, and the body's first 64 KiB never count while
    // they arrive: refused only once it runs, with its id.
    let reply = post(
        addr,
        ATTACKER,
        &in_session(&sid),
        &call(102, "quick", json!({})),
    )
    .await;
    assert_eq!(reply.status, 200, "{reply:?}");
    let left = (32 << 20) - 31 * LEN;
    assert_eq!(left, 43_432);
    let reply = post(
        addr,
        ATTACKER,
        &MODERN_SLOW,
        &padded_slow_call(103, true, 50_000),
    )
    .await;
    assert_eq!(reply.status, 429, "{reply:?}");
    assert_eq!(
        reply.json(),
        too_many(
            Some(103),
            &format!(
                "this request needs 50000 bytes, and this client has {} bytes of requests in flight and may have {} (Limits::max_request_bytes_per_client)",
                31 * LEN,
                32 << 20
            )
        )
    );
    honest_client_is_served(addr).await;
    let grown = rss_kib().saturating_sub(before);
    println!("31 requests of 1 MB in flight: RSS grew by {grown} KiB");
    assert!(grown < 160 * 1024, "RSS grew by {grown} KiB");
    // Hanging up ends the stateless calls: their bytes are given back (the session's run on
    // for the resumption grace).
    drop(held);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (reply, _tcp) = post_until_first_event(
            addr,
            ATTACKER,
            &MODERN_SLOW,
            &padded_slow_call(104, true, 3 * LEN),
        )
        .await;
        if reply.status == 200 {
            assert_eq!(reply.events()[0]["method"], "notifications/progress");
            break;
        }
        assert_eq!(reply.status, 429, "{reply:?}");
        assert!(Instant::now() < deadline, "the bytes were not given back");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Bodies declared large count for their client from their first byte: a client that opens
/// 64 bodies of 4,000,000 bytes and trickles them holds 8 (its 32 MiB); the others are refused
/// at once with 429, and all clients together hold at most `max_request_bytes` (503).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_arriving_count_in_bytes() {
    let _serial = SERIAL.lock().await;
    // Trickles cut off after 2 s + 11 bytes at 2 bytes per second: all are held together.
    let addr = serve(server().limits(|l| l.max_request_bytes(40_000_000).min_body_rate(2))).await;
    const DECLARED: usize = 4_000_000;
    let open = |from: IpAddr| half_send(addr, from, &MODERN_SLOW, DECLARED);
    let mut held = Vec::new();
    let mut refused = 0;
    for _ in 0..10 {
        match open(ATTACKER).await {
            Ok(tcp) => held.push(tcp),
            Err(reply) => {
                refused += 1;
                assert_eq!(reply.status, 429, "{reply:?}");
                assert_eq!(
                    reply.json(),
                    too_many(
                        None,
                        &format!(
                            "this request needs {DECLARED} bytes, and this client has {} bytes of requests in flight and may have {} (Limits::max_request_bytes_per_client)",
                            8 * DECLARED,
                            32 << 20
                        )
                    )
                );
            }
        }
    }
    assert_eq!((held.len(), refused), (8, 2));
    // A second attacking address gets the 2 bodies left in everyone's 40,000,000 bytes.
    let second: IpAddr = Ipv4Addr::new(127, 0, 0, 3).into();
    held.push(open(second).await.expect("fits"));
    held.push(open(second).await.expect("fits"));
    let reply = open(second).await.expect_err("everyone's budget is spent");
    assert_eq!(reply.status, 503, "{reply:?}");
    assert_eq!(
        reply.json(),
        json!({"jsonrpc": "2.0", "error": {"code": -32000, "message": "Service Unavailable: the server is at its limit of 40000000 bytes of requests in flight; retry shortly"}})
    );
    // The trickles are cut off (408) and give their bytes back.
    for tcp in &mut held {
        assert_eq!(raw::reply(tcp).await.status, 408);
    }
    honest_client_is_served(addr).await;
    let (reply, _tcp) = post_until_first_event(
        addr,
        ATTACKER,
        &MODERN_SLOW,
        &padded_slow_call(1, true, 1 << 20),
    )
    .await;
    assert_eq!(reply.status, 200, "{reply:?}");
}

/// stdio, 2026-07-28: the connection's client holds at most its 32 MiB of requests in flight —
/// 31 calls of 1,081,000 bytes stream their progress, the 32nd is refused with its id and the
/// figures, a small call still fits, and cancelling one gives its bytes back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdio_requests_in_flight_are_bounded_in_bytes() {
    let _serial = SERIAL.lock().await;
    use tokio::io::AsyncBufReadExt as _;
    const LEN: usize = 1_081_000;
    let (client, server_side) = tokio::io::duplex(1 << 20);
    let (server_read, server_write) = tokio::io::split(server_side);
    let service = server().build().unwrap();
    tokio::spawn(service.serve_io(server_read, server_write));
    let (read, mut write) = tokio::io::split(client);
    let mut lines = tokio::io::BufReader::new(read).lines();
    let send = |v: Value| format!("{v}\n").into_bytes();
    let writer = tokio::spawn(async move {
        for id in 0..32u64 {
            write
                .write_all(&send(padded_slow_call(id, true, LEN)))
                .await
                .unwrap();
        }
        write
    });
    let mut next = async || -> Value {
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("the server keeps answering")
            .unwrap()
            .unwrap();
        serde_json::from_str(&line).unwrap()
    };
    let mut progressing = std::collections::BTreeSet::new();
    let mut refused = Vec::new();
    while progressing.len() + refused.len() < 32 {
        let msg = next().await;
        if msg["method"] == "notifications/progress" {
            progressing.insert(msg["params"]["progressToken"].as_u64().unwrap());
        } else {
            refused.push(msg);
        }
    }
    assert_eq!(progressing.len(), 31);
    assert_eq!(
        refused,
        [too_many(
            Some(31),
            &format!(
                "this request needs {LEN} bytes, and this client has {} bytes of requests in flight and may have {} (Limits::max_request_bytes_per_client)",
                31 * LEN,
                32 << 20
            )
        )]
    );
    let mut write = writer.await.unwrap();
    let modern_quick = || {
        let mut body = call(100, "quick", json!({}));
        body["params"]["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        });
        body
    };
    write.write_all(&send(modern_quick())).await.unwrap();
    let answer = next().await;
    assert_eq!(answer["id"], 100, "{answer}");
    assert_eq!(
        answer["result"]["content"],
        json!([{"type": "text", "text": "quick"}])
    );
    // Cancelling one gives its bytes back: the same call again is served.
    write
        .write_all(&send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 0}})))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    write
        .write_all(&send(padded_slow_call(200, true, LEN)))
        .await
        .unwrap();
    let msg = next().await;
    assert_eq!(
        (&msg["method"], &msg["params"]["progressToken"]),
        (&json!("notifications/progress"), &json!(200)),
        "{msg}"
    );
}

/// Reads what the server wrote before it closed a refused connection.
async fn refused_connection(addr: SocketAddr, from: IpAddr) -> Reply {
    let mut tcp = connect(addr, from).await;
    // Closed at once.
    raw::parse(&raw::read_to_close(&mut tcp, Duration::from_secs(5)).await)
}

/// One address opens connections and sends nothing: it keeps 8 open
/// (`max_connections_per_client` in the test), the next is answered 429 and closed before
/// anything is read; another client is served; a second address takes the rest of
/// `max_connections` (12), then everyone gets 503; once they close, everyone is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_are_bounded_per_address_and_in_all() {
    let _serial = SERIAL.lock().await;
    let addr =
        serve(server().limits(|l| l.max_connections_per_client(8).max_connections(12))).await;
    let mut held = Vec::new();
    for _ in 0..8 {
        held.push(connect(addr, ATTACKER).await);
    }
    let reply = refused_connection(addr, ATTACKER).await;
    assert_eq!(
        (reply.status, reply.header("retry-after")),
        (429, Some("1")),
        "{reply:?}"
    );
    assert_eq!(
        reply.json(),
        too_many(
            None,
            "this address has 8 connections open and may have 8 (Limits::max_connections_per_client)"
        )
    );
    honest_client_is_served(addr).await;
    let second: IpAddr = Ipv4Addr::new(127, 0, 0, 3).into();
    for _ in 0..4 {
        held.push(connect(addr, second).await);
    }
    // Let the server accept them before the next one.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let reply = refused_connection(addr, HONEST).await;
    assert_eq!(reply.status, 503, "{reply:?}");
    assert_eq!(
        reply.json(),
        json!({"jsonrpc": "2.0", "error": {"code": -32000, "message": "Service Unavailable: the server is at its limit of 12 open connections; retry shortly"}})
    );
    drop(held);
    tokio::time::sleep(Duration::from_millis(200)).await;
    honest_client_is_served(addr).await;
}
