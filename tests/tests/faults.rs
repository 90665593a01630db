//! Faults: functions that panic or never return, clients that disconnect or read slowly, and
//! every bound (concurrent requests, streams, queued notifications, waiting questions,
//! subscription buffers). Each test proves one of them and that the server goes on serving.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex, OnceLock};
use std::time::Duration;

use sake::prelude::*;
use sake_tests::{MODERN, Req, Stdio, Wire, raw};
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// Functions under test

/// Panics at once.
#[tool]
fn boom_sync() -> String {
    panic!("sync boom")
}

/// Panics after an await.
#[tool]
async fn boom_async() -> String {
    tokio::task::yield_now().await;
    panic!("async boom")
}

/// An argument type whose decoding panics.
#[derive(JsonSchema)]
struct Touchy(#[allow(dead_code)] i64);

impl<'de> Deserialize<'de> for Touchy {
    fn deserialize<D: Deserializer<'de>>(_: D) -> Result<Self, D::Error> {
        panic!("touchy argument")
    }
}

/// Takes an argument that panics while it is decoded.
#[tool]
fn boom_arg(
    /// Never decoded.
    touchy: Touchy,
) -> String {
    let _ = touchy;
    "unreachable".into()
}

async fn panicking_completion(_: CompletionRequest) -> Vec<String> {
    panic!("completion boom")
}

/// A prompt whose completion panics.
#[prompt(complete = panicking_completion)]
fn boomer(
    /// Anything.
    name: String,
) -> Vec<PromptMessage> {
    vec![PromptMessage::user(name)]
}

async fn endless_completion(_: CompletionRequest) -> Vec<String> {
    std::future::pending().await
}

/// A prompt whose completion never returns.
#[prompt(complete = endless_completion)]
fn stuck(
    /// Anything.
    name: String,
) -> Vec<PromptMessage> {
    vec![PromptMessage::user(name)]
}

/// What the tests observe of a running `watch`.
#[derive(Default)]
struct Tag {
    started: AtomicBool,
    cancelled: AtomicBool,
    finished: AtomicBool,
    release: tokio::sync::Notify,
}

fn tag(name: &str) -> Arc<Tag> {
    static TAGS: LazyLock<Mutex<HashMap<String, Arc<Tag>>>> = LazyLock::new(Default::default);
    TAGS.lock()
        .unwrap()
        .entry(name.to_owned())
        .or_default()
        .clone()
}

/// Waits (generously) until `check` holds.
async fn eventually(what: &str, check: impl Fn() -> bool) {
    tokio::time::timeout(Duration::from_secs(30), async {
        while !check() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("{what} within 30 s"));
}

/// Reports one step of progress, then waits until the test releases it. Records whether
/// its `ctx.cancelled()` fired.
#[tool]
async fn watch(
    /// The test's name for this call.
    tag: String,
    ctx: Context,
) -> String {
    let t = self::tag(&tag);
    let watcher = ctx.clone();
    let seen = t.clone();
    tokio::spawn(async move {
        watcher.cancelled().await;
        seen.cancelled.store(true, Ordering::SeqCst);
    });
    t.started.store(true, Ordering::SeqCst);
    ctx.progress(1.0, None).await;
    t.release.notified().await;
    t.finished.store(true, Ordering::SeqCst);
    format!("{tag} released")
}

/// Never returns. Records whether its `ctx.cancelled()` fired.
#[tool]
async fn forever(
    /// The test's name for this call.
    tag: String,
    ctx: Context,
) -> String {
    let t = self::tag(&tag);
    let watcher = ctx.clone();
    tokio::spawn(async move {
        watcher.cancelled().await;
        t.cancelled.store(true, Ordering::SeqCst);
    });
    std::future::pending().await
}

static SENT: AtomicUsize = AtomicUsize::new(0);

/// Sends `n` progress notifications, counting those the stream took.
#[tool]
async fn chatty(
    /// How many.
    n: u32,
    ctx: Context,
) -> String {
    for i in 0..n {
        ctx.progress(f64::from(i), Some(f64::from(n))).await;
        SENT.fetch_add(1, Ordering::SeqCst);
    }
    format!("{n} sent")
}

#[path = "../fixtures/echo.rs"]
mod echo;

/// A document.
#[resource(uri = "docs://a", mime_type = "text/plain")]
fn doc_a() -> &'static str {
    "a"
}

/// Another document.
#[resource(uri = "docs://b", mime_type = "text/plain")]
fn doc_b() -> &'static str {
    "b"
}

/// A third document.
#[resource(uri = "docs://c", mime_type = "text/plain")]
fn doc_c() -> &'static str {
    "c"
}

const NAME: &str = "faults";
const VERSION: &str = "0.0.1";

fn server() -> Server {
    Server::from_registry().name(NAME).version(VERSION)
}

fn server_meta() -> Value {
    json!({"io.modelcontextprotocol/serverInfo": {"name": NAME, "version": VERSION}})
}

fn err(id: Option<u64>, code: i64, message: &str) -> Value {
    let mut v = json!({"jsonrpc": "2.0", "error": {"code": code, "message": message}});
    if let Some(id) = id {
        v["id"] = json!(id);
    }
    v
}

fn text_result(id: u64, text: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": {
        "content": [{"type": "text", "text": text}],
        "resultType": "complete",
        "_meta": server_meta(),
    }})
}

async fn still_serves(w: &Wire, id: u64) {
    w.rpc(
        id,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "still here"}}),
    )
    .await
    .assert_json(200, text_result(id, "still here"));
}

// ---------------------------------------------------------------------------------------------
// Logs

#[derive(Clone)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Buffer {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Everything logged so far in this test binary (a subscriber writing to a buffer).
fn logs() -> String {
    static BUF: OnceLock<Buffer> = OnceLock::new();
    let buf = BUF.get_or_init(|| {
        let buf = Buffer(Arc::default());
        let writer = buf.clone();
        // sake's own lines at every level (what a client chose must be clipped in all of
        // them), the rest from `info`.
        tracing_subscriber::fmt()
            .with_ansi(false)
            .with_env_filter(tracing_subscriber::EnvFilter::new(
                "info,sake_runtime=trace",
            ))
            .with_writer(move || writer.clone())
            .init();
        buf
    });
    String::from_utf8_lossy(&buf.0.lock().unwrap()).into_owned()
}

/// A logged line with all of `parts`.
fn logged(parts: &[&str]) -> bool {
    logs().lines().any(|l| parts.iter().all(|p| l.contains(p)))
}

// ---------------------------------------------------------------------------------------------
// What clients choose, in the log

/// A method, a tool name, a URI, a request id, client info, a requested version: strings a
/// client chooses, each of nearly 4 MiB (the most a body holds), over HTTP in both eras and on
/// stdio. Every log line and every span field that names them holds at most their first 256
/// bytes and a marker with their length, never the whole; control characters are escaped.
#[tokio::test]
async fn a_clients_4_mib_strings_reach_the_log_clipped() {
    logs();
    const BIG: usize = 4 * 1024 * 1024 - 1024;
    let big = |c: char| c.to_string().repeat(BIG);
    let marker = format!("…[clipped: {BIG} bytes]");
    let w = Wire::new(server());
    // 2026-07-28: an unknown method with a string id.
    let body = json!({"jsonrpc": "2.0", "id": big('I'), "method": big('M'), "params": {
        "_meta": sake_tests::meta()}});
    let reply = w
        .send_unchecked(
            Req::post(body.to_string())
                .header("mcp-protocol-version", MODERN)
                .header("mcp-method", "tools/list"),
        )
        .await;
    assert!(reply.status >= 400, "{}", reply.status);
    // A session opened with a made-up version and client info, then a tool, a resource and a
    // prompt named by the client.
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": big('C'), "version": "1"}}});
    w.send_unchecked(Req::post(init.to_string())).await;
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": big('V'), "capabilities": {},
        "clientInfo": {"name": "c", "version": "1"}}});
    let reply = w.send_unchecked(Req::post(init.to_string())).await;
    let sid = reply.session_id().expect("a session").to_owned();
    let revision = reply.json(200)["result"]["protocolVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    let in_session = |body: Value| {
        Req::post(body.to_string())
            .header("mcp-session-id", &sid)
            .header("mcp-protocol-version", &revision)
    };
    for (method, params) in [
        ("tools/call", json!({"name": big('T'), "arguments": {}})),
        ("resources/read", json!({"uri": big('U')})),
        ("prompts/get", json!({"name": big('P')})),
    ] {
        let req = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let reply = w.send_unchecked(in_session(req)).await;
        assert!(reply.json(200)["error"].is_object(), "{method}");
    }
    // A name with a line break and a terminal escape: escaped, so it cannot forge a line.
    let req = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "evil\nFORGED-LINE \u{1b}[31m", "arguments": {}}});
    let reply = w.send_unchecked(in_session(req)).await;
    assert!(reply.json(200)["error"].is_object());
    // stdio: the held connection logs each request.
    let mut stdio = Stdio::start(server().build().unwrap());
    for (id, method) in [(json!(big('J')), "nope".to_owned()), (json!(1), big('S'))] {
        stdio
            .send(
                &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {
                "_meta": sake_tests::meta()}}),
            )
            .await;
        let answer = stdio.recv_raw().await;
        assert_eq!(answer["error"]["code"], -32601, "{}", answer["error"]);
    }
    stdio.close().await;

    let logs = logs();
    for c in ['I', 'M', 'C', 'V', 'T', 'U', 'P', 'J', 'S'] {
        let run = c.to_string().repeat(300);
        for line in logs.lines() {
            assert!(
                !line.contains(&run),
                "{c}: a line holds more than 256 bytes of it: {}…",
                &line[..line.len().min(400)]
            );
        }
    }
    // Those that are logged (the requested version, the names, stdio's method and id) are
    // there clipped: the marker shows where.
    for c in ['V', 'T', 'U', 'P', 'S'] {
        let clipped = format!("{}{marker}", c.to_string().repeat(256));
        assert!(
            logs.contains(&clipped),
            "{c} was logged clipped (…{marker})"
        );
    }
    // A string id is shown as JSON (quoted): its first 255 bytes after the quote.
    let clipped = format!("\"{}…[clipped: {} bytes]", "J".repeat(255), BIG + 2);
    assert!(logs.contains(&clipped), "J was logged clipped");
    assert!(
        logged(&["evil", "FORGED-LINE"]),
        "the name is logged on one line, escaped"
    );
    assert!(!logs.lines().any(|l| l.starts_with("FORGED-LINE")));
    assert!(
        !logs.contains('\u{1b}'),
        "no terminal escape reaches the log"
    );
    // No line is long: the longest holds a few clipped fields.
    let longest = logs.lines().map(str::len).max().unwrap_or(0);
    assert!(longest < 8 * 1024, "the longest line has {longest} bytes");
}

// ---------------------------------------------------------------------------------------------
// Panics

fn panic_message(name: &str) -> String {
    format!("Internal error: `{name}` failed unexpectedly; the server's log has the details")
}

#[tokio::test]
async fn a_panicking_function_fails_its_request_only() {
    logs();
    let w = Wire::new(server());
    let cases = [
        ("boom_sync", json!({}), "sync boom"),
        ("boom_async", json!({}), "async boom"),
        ("boom_arg", json!({"touchy": 1}), "touchy argument"),
    ];
    for (i, (name, args, panic)) in cases.into_iter().enumerate() {
        let id = i as u64 + 1;
        w.rpc(id, "tools/call", json!({"name": name, "arguments": args}))
            .await
            .assert_json(200, err(Some(id), -32603, &panic_message(name)));
        still_serves(&w, 100 + id).await;
        assert!(
            logged(&[
                "a function panicked",
                &format!("name={name}"),
                &format!("panic={panic}")
            ]),
            "no log line for {name}:\n{}",
            logs()
        );
    }
    // A completion function.
    w.rpc(
        9,
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "boomer"}, "argument": {"name": "name", "value": "x"}}),
    )
    .await
    .assert_json(200, err(Some(9), -32603, &panic_message("boomer")));
    still_serves(&w, 109).await;
    assert!(logged(&[
        "a function panicked",
        "name=boomer",
        "panic=completion boom"
    ]));

    // The same on a handshake session and on stdio.
    let s = w.handshake("2025-11-25", json!({})).await;
    let reply = w
        .send_as(
            "2025-11-25",
            Req::in_handshake(&s, 10, "tools/call", json!({"name": "boom_async"})),
        )
        .await;
    reply.assert_json(200, err(Some(10), -32603, &panic_message("boom_async")));
    still_serves(&w, 110).await;
    let mut stdio = Stdio::start(server().build().unwrap());
    for (id, name) in [(11, "boom_sync"), (12, "boom_arg")] {
        let params = sake_tests::with_meta(json!({"name": name, "arguments": {"touchy": 1}}));
        stdio
            .send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}))
            .await;
        assert_eq!(
            stdio.recv(MODERN, Some("tools/call")).await,
            err(Some(id), -32603, &panic_message(name))
        );
    }
    let params =
        sake_tests::with_meta(json!({"name": "echo", "arguments": {"text": "still here"}}));
    stdio
        .send(&json!({"jsonrpc": "2.0", "id": 13, "method": "tools/call", "params": params}))
        .await;
    assert_eq!(
        stdio.recv(MODERN, Some("tools/call")).await,
        text_result(13, "still here")
    );
    stdio.close().await;
}

// ---------------------------------------------------------------------------------------------
// Timeouts and disconnects

#[tokio::test]
async fn a_function_that_never_returns_is_cut_off_and_cancelled() {
    logs();
    let w = Wire::new(server().request_timeout(Duration::from_millis(300)));
    let timed_out = err(
        Some(1),
        -32603,
        "Request timed out: `forever` did not finish within 0.3 s and was cancelled",
    );
    w.rpc(
        1,
        "tools/call",
        json!({"name": "forever", "arguments": {"tag": "t-modern"}}),
    )
    .await
    .assert_json(200, timed_out.clone());
    let t = tag("t-modern");
    eventually("ctx.cancelled() fires", || {
        t.cancelled.load(Ordering::SeqCst)
    })
    .await;
    // Completion functions too.
    w.rpc(
        4,
        "completion/complete",
        json!({"ref": {"type": "ref/prompt", "name": "stuck"}, "argument": {"name": "name", "value": "x"}}),
    )
    .await
    .assert_json(
        200,
        err(
            Some(4),
            -32603,
            "Request timed out: `stuck` did not finish within 0.3 s and was cancelled",
        ),
    );
    assert!(logged(&["a request timed out", "name=forever"]));
    still_serves(&w, 2).await;

    // On a handshake session too.
    let s = w.handshake("2025-06-18", json!({})).await;
    w.send_as(
        "2025-06-18",
        Req::in_handshake(
            &s,
            1,
            "tools/call",
            json!({"name": "forever", "arguments": {"tag": "t-legacy"}}),
        ),
    )
    .await
    .assert_json(200, timed_out);
    let t = tag("t-legacy");
    eventually("ctx.cancelled() fires", || {
        t.cancelled.load(Ordering::SeqCst)
    })
    .await;
    still_serves(&w, 3).await;
}

fn watch_req(tag: &str, progress: bool) -> Req {
    let mut params = json!({"name": "watch", "arguments": {"tag": tag}});
    if progress {
        params["_meta"] = json!({"progressToken": "p"});
    }
    Req::modern(1, "tools/call", params)
}

#[tokio::test]
async fn a_2026_client_that_disconnects_cancels_its_request() {
    let w = Wire::new(server());
    // Mid-stream: after the first progress notification.
    let mut open = w.open_raw(watch_req("d-stream", true)).await;
    assert_eq!(open.content_type(), Some("text/event-stream"));
    assert_eq!(
        open.next_message().await.unwrap()["method"],
        "notifications/progress"
    );
    drop(open);
    let t = tag("d-stream");
    eventually("the dropped stream cancels", || {
        t.cancelled.load(Ordering::SeqCst)
    })
    .await;
    assert!(!t.finished.load(Ordering::SeqCst));
    // Before anything was sent (a JSON answer was coming).
    let call = tokio::spawn({
        let router = w.service().router();
        async move {
            use tower::ServiceExt as _;
            let req = watch_req("d-json", false);
            let _ = router.oneshot(to_request(req)).await;
        }
    });
    let t = tag("d-json");
    eventually("the call starts", || t.started.load(Ordering::SeqCst)).await;
    call.abort();
    eventually("the dropped request cancels", || {
        t.cancelled.load(Ordering::SeqCst)
    })
    .await;
    still_serves(&w, 2).await;
}

/// A request for a router, without the harness (to drop it half-way).
fn to_request(req: Req) -> http::Request<axum::body::Body> {
    let mut b = http::Request::builder().method("POST").uri("/mcp");
    for (n, v) in [
        ("host", "localhost"),
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", MODERN),
        ("mcp-method", "tools/call"),
        ("mcp-name", "watch"),
    ] {
        b = b.header(n, v);
    }
    b.body(axum::body::Body::from(req.body_bytes().to_vec()))
        .unwrap()
}

#[tokio::test]
async fn a_handshake_client_that_disconnects_does_not_cancel() {
    const REV: &str = "2025-11-25";
    let w = Wire::new(server().max_concurrent_requests(1));
    let s = w.handshake(REV, json!({})).await;
    let call = |tag: &str, progress: bool| {
        let mut params = json!({"name": "watch", "arguments": {"tag": tag}});
        if progress {
            params["_meta"] = json!({"progressToken": "p"});
        }
        Req::in_handshake(&s, 1, "tools/call", params)
    };
    // Mid-stream.
    let mut open = w.open_raw_as(REV, call("l-stream", true)).await;
    let progress = open.next_event().await.unwrap();
    assert!(
        progress
            .data
            .as_deref()
            .unwrap()
            .contains("notifications/progress")
    );
    let last_id = progress
        .fields
        .iter()
        .find(|(k, _)| k == "id")
        .map(|(_, v)| v.clone())
        .expect("2025-11-25 events carry ids");
    drop(open);
    let t = tag("l-stream");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !t.cancelled.load(Ordering::SeqCst),
        "a disconnect is no cancel"
    );
    // Still running, it still holds its request slot.
    let busy = w
        .send(sake_tests::Req::modern(5, "tools/list", json!({})))
        .await;
    assert_eq!(busy.status, 503);
    t.release.notify_one();
    eventually("the call finishes", || t.finished.load(Ordering::SeqCst)).await;
    // Its result waits for the client to resume the stream.
    let resumed = w
        .open_raw_as(
            REV,
            Req::in_session(&s, Vec::new())
                .http_method(http::Method::GET)
                .without("content-type")
                .header("last-event-id", &last_id),
        )
        .await;
    assert_eq!(resumed.status, 200);
    let mut resumed = resumed.answering("tools/call");
    let mut result = None;
    while let Some(m) = resumed.next_message().await {
        if m.get("result").is_some() {
            result = Some(m);
            break;
        }
    }
    assert_eq!(
        result.unwrap(),
        json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": "l-stream released"}]}})
    );
    // Before its first message.
    let before = tokio::spawn({
        let router = w.service().router();
        let req = call("l-json", false);
        async move {
            use tower::ServiceExt as _;
            let mut r = http::Request::builder().method("POST").uri("/mcp");
            for (n, v) in [
                ("host", "localhost"),
                ("content-type", "application/json"),
                ("accept", "application/json, text/event-stream"),
                ("mcp-protocol-version", REV),
            ] {
                r = r.header(n, v);
            }
            let r = r
                .header("mcp-session-id", req.header_str("mcp-session-id").unwrap())
                .body(axum::body::Body::from(req.body_bytes().to_vec()))
                .unwrap();
            let _ = router.oneshot(r).await;
        }
    });
    let t = tag("l-json");
    eventually("the call starts", || t.started.load(Ordering::SeqCst)).await;
    before.abort();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !t.cancelled.load(Ordering::SeqCst),
        "a disconnect is no cancel"
    );
    t.release.notify_one();
    eventually("the call finishes", || t.finished.load(Ordering::SeqCst)).await;
    // The slot is released when the call ends.
    let mut served = false;
    for i in 0..150 {
        let r = w.send(Req::modern(20 + i, "tools/list", json!({}))).await;
        if r.status == 200 {
            served = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(served);
    still_serves(&w, 9).await;
}

// ---------------------------------------------------------------------------------------------
// Bounds

#[tokio::test]
async fn concurrent_requests_are_bounded() {
    let w = Arc::new(Wire::new(server().max_concurrent_requests(2)));
    let busy = err(
        Some(3),
        -32000,
        "Service Unavailable: the server is at its limit of 2 concurrent requests; retry shortly",
    );
    // One streaming request and one plain JSON request hold both slots.
    let mut streaming = w.open_raw(watch_req("c-stream", true)).await;
    streaming.next_message().await.unwrap();
    let plain = tokio::spawn({
        let w = w.clone();
        async move { w.send(watch_req("c-json", false)).await }
    });
    let t = tag("c-json");
    eventually("the call starts", || t.started.load(Ordering::SeqCst)).await;
    let reply = w.send(Req::modern(3, "tools/list", json!({}))).await;
    reply.assert_json(503, busy.clone());
    assert_eq!(reply.header("retry-after"), Some("1"));
    // Each ends, and a slot is free again.
    tag("c-json").release.notify_one();
    plain
        .await
        .unwrap()
        .assert_json(200, text_result(1, "c-json released"));
    still_serves(&w, 4).await;
    tag("c-stream").release.notify_one();
    while streaming.next_message().await.is_some() {}
    still_serves(&w, 5).await;
}

#[tokio::test]
async fn long_lived_streams_are_bounded() {
    let w = Wire::new(
        server()
            .limits(|l| l.max_streams(2))
            .keep_alive(Duration::from_secs(3600)),
    );
    let listen = |id: u64| {
        Req::modern(
            id,
            "subscriptions/listen",
            json!({"notifications": {"toolsListChanged": true}}),
        )
    };
    let mut a = w.open_raw(listen(1)).await;
    a.next_message().await.unwrap();
    let s = w.handshake("2025-11-25", json!({})).await;
    let get = Req::in_session(&s, Vec::new())
        .http_method(http::Method::GET)
        .without("content-type");
    let b = w.open_raw_as("2025-11-25", get.clone()).await;
    assert_eq!(b.status, 200);
    let refused = w.send(listen(3)).await;
    refused.assert_json(
        503,
        err(
            Some(3),
            -32000,
            "Service Unavailable: the server is at its limit of 2 open streams; retry shortly",
        ),
    );
    assert_eq!(refused.header("retry-after"), Some("1"));
    assert_eq!(w.send_as("2025-11-25", get.clone()).await.status, 503);
    // Requests are not streams.
    still_serves(&w, 4).await;
    drop(a);
    let mut c = w.open_raw(listen(5)).await;
    assert_eq!(
        c.next_message().await.unwrap()["method"],
        "notifications/subscriptions/acknowledged"
    );
    drop(b);
    assert_eq!(w.open_raw_as("2025-11-25", get).await.status, 200);
}

#[tokio::test]
async fn a_slow_reader_makes_the_sender_wait() {
    const BUFFER: usize = 4;
    const N: u32 = 1000;
    let w = Wire::new(server().limits(|l| l.stream_buffer(BUFFER)));
    let mut open = w
        .open_raw(Req::modern(
            1,
            "tools/call",
            json!({"name": "chatty", "arguments": {"n": N}, "_meta": {"progressToken": 7}}),
        ))
        .await;
    assert_eq!(
        open.next_message().await.unwrap()["method"],
        "notifications/progress"
    );
    // One message read: at most the buffer's worth more were sent, and the sender waits.
    eventually("the buffer fills", || SENT.load(Ordering::SeqCst) >= BUFFER).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let sent = SENT.load(Ordering::SeqCst);
    assert!(sent <= 1 + BUFFER, "{sent} sent with one read");
    let mut progress = 1;
    let mut last = None;
    while let Some(m) = open.next_message().await {
        if m["method"] == "notifications/progress" {
            progress += 1;
        } else {
            last = Some(m);
        }
    }
    assert_eq!(progress, N);
    assert_eq!(last.unwrap(), text_result(1, "1000 sent"));
}

#[tokio::test]
async fn a_subscriber_too_slow_for_the_event_buffer_is_closed_gracefully() {
    let w = Wire::new(
        server()
            .limits(|l| l.event_buffer(4))
            .keep_alive(Duration::from_secs(3600)),
    );
    let notifier = w.service().notifier();
    let mut listen = w
        .open_raw(Req::modern(
            "sub",
            "subscriptions/listen",
            json!({"notifications": {"toolsListChanged": true}}),
        ))
        .await;
    assert_eq!(
        listen.next_message().await.unwrap()["method"],
        "notifications/subscriptions/acknowledged"
    );
    // Keeping up is fine.
    for _ in 0..3 {
        notifier.tools_changed();
    }
    for _ in 0..3 {
        assert_eq!(
            listen.next_message().await.unwrap(),
            json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": "sub"}}})
        );
    }
    // Falling more than the buffer behind ends the subscription with its result.
    for _ in 0..100 {
        notifier.tools_changed();
    }
    let mut meta = server_meta();
    meta["io.modelcontextprotocol/subscriptionId"] = json!("sub");
    assert_eq!(
        listen.next_message().await.unwrap(),
        json!({"jsonrpc": "2.0", "id": "sub", "result": {"resultType": "complete", "_meta": meta}})
    );
    assert!(listen.next_message().await.is_none());
    // A legacy GET stream that falls behind just ends; its client reconnects.
    let s = w.handshake("2025-11-25", json!({})).await;
    let mut get = w
        .open_raw_as(
            "2025-11-25",
            Req::in_session(&s, Vec::new())
                .http_method(http::Method::GET)
                .without("content-type"),
        )
        .await;
    assert_eq!(get.status, 200);
    // Let the stream start (its first frame is a comment) before falling behind.
    while notifier.listeners() == 0 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for _ in 0..100 {
        notifier.tools_changed();
    }
    assert!(get.next_message().await.is_none());
    still_serves(&w, 1).await;
}

// ---------------------------------------------------------------------------------------------
// Shutdown

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_ends_every_stream() {
    use tokio::io::AsyncWriteExt as _;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let service = server()
        .keep_alive(Duration::from_secs(3600))
        .build()
        .unwrap();
    let serving = tokio::spawn(service.serve(listener, async {
        let _ = stopped.await;
    }));
    // Wait until the listener answers.
    let open = |req: Req| async move {
        let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        tcp.write_all(&req.to_http1()).await.unwrap();
        let seen = raw::read_until(&mut tcp, |seen| {
            let text = String::from_utf8_lossy(seen);
            text.contains("\n\n") && text.contains("\r\n\r\n")
        })
        .await
        .unwrap();
        let text = String::from_utf8_lossy(&seen);
        assert!(text.contains("\n\n") && text.contains("\r\n\r\n"), "{text}");
        tcp
    };
    let listen = Req::modern(
        1,
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    );
    let mut listen_tcp = open(listen).await;
    // A session of this server (its key is random).
    let s = {
        let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}});
        let reply = raw::exchange(
            addr,
            &Req::post(serde_json::to_vec(&body).unwrap())
                .header("connection", "close")
                .to_http1(),
        )
        .await;
        sake_tests::Handshake {
            id: reply.header("mcp-session-id").unwrap().to_owned(),
            revision: "2025-11-25",
        }
    };
    let get = Req::in_session(&s, Vec::new())
        .http_method(http::Method::GET)
        .without("content-type");
    let mut get_tcp = open(get).await;
    stop.send(()).unwrap();
    // Both streams end, the listen stream with its closing result, and serving returns.
    let rest = raw::read_to_close(&mut listen_tcp, Duration::from_secs(30)).await;
    assert!(String::from_utf8_lossy(&rest).contains(r#""result":{"resultType":"complete""#));
    // The GET stream ends.
    raw::read_to_close(&mut get_tcp, Duration::from_secs(30)).await;
    tokio::time::timeout(Duration::from_secs(30), serving)
        .await
        .expect("serve returns")
        .unwrap()
        .unwrap();
}

#[tokio::test]
async fn resource_subscriptions_are_bounded_per_session() {
    const REV: &str = "2025-11-25";
    let w = Wire::new(server().limits(|l| l.max_subscriptions_per_session(2))).revision(REV);
    let s = w.handshake(REV, json!({})).await;
    let sub =
        |id: u64, method: &str, uri: &str| Req::in_handshake(&s, id, method, json!({"uri": uri}));
    let ok = |id: u64| json!({"jsonrpc": "2.0", "id": id, "result": {}});
    w.send(sub(1, "resources/subscribe", "docs://a"))
        .await
        .assert_json(200, ok(1));
    w.send(sub(2, "resources/subscribe", "docs://b"))
        .await
        .assert_json(200, ok(2));
    w.send(sub(3, "resources/subscribe", "docs://c")).await.assert_json(
        200,
        err(
            Some(3),
            -32603,
            "This session holds 2 resource subscriptions, the most it may; unsubscribe from one first",
        ),
    );
    w.send(sub(4, "resources/unsubscribe", "docs://a"))
        .await
        .assert_json(200, ok(4));
    w.send(sub(5, "resources/subscribe", "docs://c"))
        .await
        .assert_json(200, ok(5));
}
