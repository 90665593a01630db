//! Policies on every call (`sake::middleware`, docs/middleware.md) on the wire: a rate limit,
//! a timeout, a cache, an audit trail, allow rules, a concurrency limit, a `from_fn` closure
//! and plain tower layers, each on 2026-07-28 over HTTP, in a 2025-11-25 session and over a
//! stream (stdio's framing, in memory), and for tasks and input rounds. Exact payloads,
//! statuses and headers.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::ConnectInfo;
use sake::middleware::{
    self, Allow, Audit, AuditRecord, Cache, Concurrency, Kind, McpResponse, RateLimit, Timeout,
};
use sake::prelude::*;
use sake::skills::SkillDef;
use sake::{Elicitation, InputError, RpcError};
use sake_tests::rpc::{err, ok, server_meta, text_result, with_caps};
use sake_tests::{Req, Stdio, Wire, modern_meta};
use serde::Deserialize;
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// The server under test

/// Answers at once.
#[tool]
fn limited() -> &'static str {
    "ok"
}

static SLOW_DONE: AtomicUsize = AtomicUsize::new(0);

/// Sleeps `seconds`, then counts itself done. No test lets it finish: its count stays 0.
#[tool]
async fn slow(
    /// How long.
    seconds: f64,
) -> String {
    tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
    SLOW_DONE.fetch_add(1, SeqCst);
    "done".into()
}

static COUNTED: AtomicUsize = AtomicUsize::new(0);

/// How often its body ran.
#[tool(annotations(read_only))]
fn counter() -> String {
    format!("count={}", COUNTED.fetch_add(1, SeqCst) + 1)
}

/// Signs in (the password never reaches the audit).
#[tool]
fn login(
    /// Who.
    user: String,
    /// The secret.
    #[arg(sensitive)]
    password: String,
) -> String {
    format!("{user} signed in with {} characters", password.len())
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Confirm {
    ok: bool,
}

/// Asks twice, then answers.
#[tool]
async fn twice(ctx: Context) -> Result<String, InputError> {
    let a = ctx.elicit::<Confirm>("first", "First?").await?;
    let b = ctx.elicit::<Confirm>("second", "Second?").await?;
    let yes = |e: Elicitation<Confirm>| e.accepted().is_some_and(|c| c.ok);
    Ok(format!("{} {}", yes(a), yes(b)))
}

/// Runs as a task if asked: `ms` milliseconds.
#[tool(task = "optional")]
async fn work(
    /// How long.
    ms: u64,
) -> String {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    format!("worked {ms} ms")
}

/// Echoes; at most 2 calls per minute in all, declared on the tool itself.
#[tool(layer = sake::middleware::RateLimit::new(2, Duration::from_secs(60)).per_function())]
fn echo(
    /// What to echo.
    text: String,
) -> String {
    text
}

/// Records a protocol error and returns anyway: the client gets the error.
#[tool]
fn refuses(ctx: Context) -> String {
    ctx.fail_with(RpcError::invalid_params(
        "Invalid params: the ledger is closed",
    ));
    "never sent".into()
}

/// Fails as a tool: an `isError` result the model reads.
#[tool]
fn broken() -> Result<String, String> {
    Err("the disk is full".into())
}

static MEETING: std::sync::LazyLock<tokio::sync::Barrier> =
    std::sync::LazyLock::new(|| tokio::sync::Barrier::new(2));

/// Waits until a second call of it runs at the same time.
#[tool]
async fn meet() -> String {
    MEETING.wait().await;
    "met".into()
}

/// Today's note.
#[resource(uri = "note://today", mime_type = "text/plain")]
fn today() -> String {
    "rain".into()
}

/// Names starting with what was typed.
async fn complete_name(req: CompletionRequest) -> Vec<String> {
    ["Ada", "Alan", "Grace"]
        .into_iter()
        .filter(|n| n.starts_with(&req.value))
        .map(str::to_owned)
        .collect()
}

/// A greeting prompt.
#[prompt(complete = complete_name)]
fn hello(
    /// Whom.
    name: String,
) -> String {
    format!("Say hello to {name}.")
}

const SERVER: (&str, &str) = ("middleware", "1.0.0");
const TASKS: &str = "io.modelcontextprotocol/tasks";

fn server() -> Server {
    Server::from_registry().name(SERVER.0).version(SERVER.1)
}

fn text(t: &str) -> Value {
    text_result(SERVER, t)
}

fn at(ip: [u8; 4]) -> ConnectInfo<SocketAddr> {
    ConnectInfo(SocketAddr::from((ip, 40_000)))
}

fn call(id: i64, name: &str, arguments: Value) -> Req {
    Req::modern(
        id,
        "tools/call",
        json!({"name": name, "arguments": arguments}),
    )
}

/// The rate limit's refusal of `limited` after 3 calls per 10 s (4 s to wait: a token comes
/// back every 3.33 s).
fn rate_refusal(id: i64) -> Value {
    err(
        id,
        -32000,
        "Rate limit exceeded: `limited` allows 3 calls per 10 s; retry in 4 s",
        Some(json!({"retryAfter": 4, "limit": 3, "periodSeconds": 10.0})),
    )
}

fn limited_server() -> Server {
    server().layer_for(
        "limited",
        RateLimit::new(3, Duration::from_secs(10)).per_client(),
    )
}

/// The audit records, kept.
#[derive(Clone, Default)]
struct Kept(Arc<Mutex<Vec<Value>>>);

impl Kept {
    fn sink(&self) -> impl Fn(&AuditRecord) + Send + Sync + 'static {
        let kept = self.0.clone();
        move |r: &AuditRecord| kept.lock().unwrap().push(serde_json::to_value(r).unwrap())
    }

    fn take(&self) -> Vec<Value> {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

/// A record with its time and duration checked and masked.
fn masked(mut r: Value) -> Value {
    assert!(r["atMs"].as_u64().unwrap() > 1_700_000_000_000, "{r}");
    assert!(r["durationMs"].as_f64().unwrap() >= 0.0, "{r}");
    r["atMs"] = json!("<t>");
    r["durationMs"] = json!("<d>");
    r
}

// ---------------------------------------------------------------------------------------------
// Rate limits

#[tokio::test]
async fn a_rate_limit_refuses_the_fourth_call_with_429_and_retry_after_on_2026_07_28() {
    let w = Wire::new(limited_server());
    for id in 1..=3 {
        w.send(call(id, "limited", json!({})).extension(at([10, 0, 0, 1])))
            .await
            .assert_json(200, ok(id, text("ok")));
    }
    let refused = w
        .send(call(4, "limited", json!({})).extension(at([10, 0, 0, 1])))
        .await;
    refused.assert_json(429, rate_refusal(4));
    assert_eq!(refused.header("retry-after"), Some("4"));
    // Another address has its own budget.
    w.send(call(5, "limited", json!({})).extension(at([10, 0, 0, 2])))
        .await
        .assert_json(200, ok(5, text("ok")));
    // Other tools are not limited.
    for id in 6..=10 {
        w.send(call(id, "counter", json!({})).extension(at([10, 0, 0, 1])))
            .await
            .json(200);
    }
}

#[tokio::test]
async fn a_rate_limit_refuses_the_fourth_call_in_a_2025_11_25_session() {
    let w = Wire::new(limited_server()).revision("2025-11-25");
    let s = w.session("2025-11-25", json!({})).await;
    let limited = |id: i64| {
        s.request(
            id,
            "tools/call",
            json!({"name": "limited", "arguments": {}}),
        )
        .extension(at([10, 0, 0, 1]))
    };
    for id in 1..=3 {
        let r = s.send(limited(id)).await;
        assert_eq!(r.json(200)["result"]["content"][0]["text"], "ok");
    }
    // A session's errors travel in a 200 response, as every JSON-RPC error of a session.
    s.send(limited(4)).await.assert_json(200, rate_refusal(4));
}

/// `ip` (IPv6) as a connection's address.
fn at6(ip: &str) -> ConnectInfo<SocketAddr> {
    ConnectInfo(SocketAddr::new(ip.parse().unwrap(), 40_000))
}

#[tokio::test]
async fn the_addresses_of_one_ipv6_network_share_one_budget_in_both_eras() {
    // The server counts an IPv6 client by its /64 (`Limits::ipv6_client_prefix`): a client
    // that changes its address at every call within its network gets no new budget.
    let w = Wire::new(limited_server());
    for id in 1..=3 {
        let ip = format!("2001:db8:1:2::{id}");
        w.send(call(id, "limited", json!({})).extension(at6(&ip)))
            .await
            .assert_json(200, ok(id, text("ok")));
    }
    w.send(call(4, "limited", json!({})).extension(at6("2001:db8:1:2:ffff::4")))
        .await
        .assert_json(429, rate_refusal(4));
    // Another /64 is another client.
    w.send(call(5, "limited", json!({})).extension(at6("2001:db8:1:3::1")))
        .await
        .assert_json(200, ok(5, text("ok")));

    let w = Wire::new(limited_server()).revision("2025-11-25");
    let s = w.session("2025-11-25", json!({})).await;
    let limited = |id: i64, ip: &str| {
        s.request(
            id,
            "tools/call",
            json!({"name": "limited", "arguments": {}}),
        )
        .extension(at6(ip))
    };
    for id in 1..=3 {
        let r = s.send(limited(id, &format!("2001:db8:9:9::{id}"))).await;
        assert_eq!(r.json(200)["result"]["content"][0]["text"], "ok");
    }
    s.send(limited(4, "2001:db8:9:9:abcd::1"))
        .await
        .assert_json(200, rate_refusal(4));
}

#[tokio::test]
async fn a_rate_limit_refuses_the_fourth_call_over_a_stream() {
    let mut io = Stdio::start(limited_server().build().unwrap());
    for id in 1..=4 {
        io.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                "name": "limited", "arguments": {},
                "_meta": modern_meta(json!({}), json!({})),
            }}),
        )
        .await;
        let answer = io.recv("2026-07-28", Some("tools/call")).await;
        if id < 4 {
            assert_eq!(answer, ok(id, text("ok")));
        } else {
            assert_eq!(answer, rate_refusal(4));
        }
    }
    io.close().await;
}

#[tokio::test]
async fn a_call_that_asks_twice_is_one_call_for_a_rate_limit() {
    let w = Wire::new(server().layer_for("twice", RateLimit::new(1, Duration::from_secs(60))));
    let caps = json!({"elicitation": {}});
    let ask = |id: i64, more: Value| {
        let mut params = json!({"name": "twice", "arguments": {}});
        params
            .as_object_mut()
            .unwrap()
            .extend(more.as_object().unwrap().clone());
        Req::modern(id, "tools/call", with_caps(params, caps.clone()))
    };
    let first = w.send(ask(1, json!({}))).await;
    let s1 = first.json(200)["result"]["requestState"]
        .as_str()
        .unwrap()
        .to_owned();
    let yes = json!({"action": "accept", "content": {"ok": true}});
    let second = w
        .send(ask(
            2,
            json!({"inputResponses": {"first": yes}, "requestState": s1}),
        ))
        .await;
    assert_eq!(
        second.json(200)["result"]["resultType"],
        "input_required",
        "the continuation is not refused"
    );
    let s2 = second.json(200)["result"]["requestState"]
        .as_str()
        .unwrap()
        .to_owned();
    w.send(ask(
        3,
        json!({"inputResponses": {"first": yes, "second": yes}, "requestState": s2}),
    ))
    .await
    .assert_json(200, ok(3, text("true true")));
    // A new call is a second call.
    let refused = w.send(ask(4, json!({}))).await;
    assert_eq!(refused.status, 429);
    assert_eq!(
        refused.json(429)["error"]["message"],
        "Rate limit exceeded: `twice` allows 1 calls per 60 s; retry in 60 s"
    );
}

// ---------------------------------------------------------------------------------------------
// Timeouts

fn timeout_refusal(id: i64) -> Value {
    err(
        id,
        -32603,
        "Request timed out: `slow` did not finish within its timeout of 1 s and was cancelled",
        Some(json!({"timeoutSeconds": 1.0})),
    )
}

fn slow_server() -> Server {
    server().layer_for("slow", Timeout::new(Duration::from_secs(1)))
}

#[tokio::test]
async fn a_timeout_cuts_a_call_off_on_both_eras_and_over_a_stream() {
    let w = Wire::new(slow_server());
    let started = Instant::now();
    w.send(call(1, "slow", json!({"seconds": 5})))
        .await
        .assert_json(200, timeout_refusal(1));
    assert!(started.elapsed() < Duration::from_secs(2));

    let legacy = Wire::new(slow_server()).revision("2025-11-25");
    let s = legacy.session("2025-11-25", json!({})).await;
    s.rpc(
        1,
        "tools/call",
        json!({"name": "slow", "arguments": {"seconds": 5}}),
    )
    .await
    .assert_json(200, timeout_refusal(1));

    let mut io = Stdio::start(slow_server().build().unwrap());
    io.send(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "slow", "arguments": {"seconds": 5},
            "_meta": modern_meta(json!({}), json!({})),
        }}),
    )
    .await;
    assert_eq!(
        io.recv("2026-07-28", Some("tools/call")).await,
        timeout_refusal(1)
    );
    io.close().await;
    // The function was dropped: it never finished.
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(SLOW_DONE.load(SeqCst), 0);
}

#[tokio::test]
async fn a_task_passes_the_layers_once_and_its_timeout_fails_it() {
    let kept = Kept::default();
    let w = Wire::new(
        server()
            .layer(Audit::new().sink(kept.sink()))
            .layer_for("work", Timeout::new(Duration::from_millis(300))),
    );
    let caps = json!({"extensions": {TASKS: {}}});
    let task = |id: i64, ms: u64| {
        Req::modern(
            id,
            "tools/call",
            with_caps(
                json!({"name": "work", "arguments": {"ms": ms}}),
                caps.clone(),
            ),
        )
    };
    let created = w.send(task(1, 2_000)).await;
    let id = created.json(200)["result"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let get = |n: i64| {
        Req::modern(
            n,
            "tasks/get",
            with_caps(json!({"taskId": id.clone()}), caps.clone()),
        )
    };
    let mut status = Value::Null;
    for n in 0..100 {
        let r = w.send(get(10 + n)).await;
        status = r.json(200)["result"].clone();
        if status["status"] != "working" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(status["status"], "failed", "{status}");
    assert_eq!(
        status["error"],
        json!({"code": -32603, "message": "Request timed out: `work` did not finish within its timeout of 0.3 s and was cancelled", "data": {"timeoutSeconds": 0.3}}),
        "{status}"
    );
    // One record of the call, written when the task's work ended, with its id; and one of
    // every `tasks/get`, named by the task's id.
    let (calls, gets): (Vec<Value>, Vec<Value>) = kept
        .take()
        .into_iter()
        .partition(|r| r["method"] == "tools/call");
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0]["taskId"], id.as_str());
    assert_eq!(calls[0]["outcome"], "error");
    assert!(calls[0]["durationMs"].as_f64().unwrap() >= 300.0);
    assert!(!gets.is_empty());
    for get in &gets {
        assert_eq!(
            (
                &get["method"],
                &get["name"],
                &get["taskId"],
                &get["outcome"]
            ),
            (&json!("tasks/get"), &json!(id), &json!(id), &json!("ok")),
            "{get}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Caching

#[tokio::test]
async fn a_read_only_tool_is_answered_from_the_cache_per_caller() {
    let w = Wire::new(server().layer_tools(Cache::new(Duration::from_secs(60))));
    let count = |r: &sake_tests::Reply| {
        r.json(200)["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let a1 = w
        .send(call(1, "counter", json!({})).extension(at([10, 0, 0, 1])))
        .await;
    let a2 = w
        .send(call(2, "counter", json!({})).extension(at([10, 0, 0, 1])))
        .await;
    assert_eq!(count(&a1), count(&a2));
    // Another caller does not see the first one's result.
    let b = w
        .send(call(3, "counter", json!({})).extension(at([10, 0, 0, 2])))
        .await;
    assert_ne!(count(&a1), count(&b));
    // A tool that is not read-only is never cached.
    let l1 = w
        .send(call(4, "login", json!({"user": "a", "password": "x"})))
        .await;
    l1.assert_json(200, ok(4, text("a signed in with 1 characters")));
}

// ---------------------------------------------------------------------------------------------
// Audit

#[tokio::test]
async fn the_audit_records_every_call_and_never_a_sensitive_argument() {
    let kept = Kept::default();
    let w = Wire::new(
        server()
            .layer(Audit::new().sink(kept.sink()))
            .layer_for("limited", RateLimit::new(1, Duration::from_secs(60))),
    );
    w.send(
        call(1, "login", json!({"user": "ada", "password": "hunter2"}))
            .extension(at([10, 0, 0, 9])),
    )
    .await
    .assert_json(200, ok(1, text("ada signed in with 7 characters")));
    w.send(call(2, "limited", json!({}))).await.json(200);
    w.send(call(3, "limited", json!({}))).await.json(429);
    let records = kept.take();
    let all = serde_json::to_string(&records).unwrap();
    assert!(!all.contains("hunter2"), "{all}");
    assert_eq!(
        masked(records[0].clone()),
        json!({
            "atMs": "<t>", "caller": "10.0.0.9", "client": "10.0.0.9", "method": "tools/call",
            "name": "login",
            // The digest of {"user":"ada"}: the password is left out before digesting.
            "arguments": format!("sha256:{}", sha256_hex(br#"{"user":"ada"}"#)),
            "outcome": "ok", "durationMs": "<d>", "revision": "2026-07-28",
            "transport": "http", "continuation": false,
        })
    );
    assert_eq!(records[1]["outcome"], "ok");
    assert_eq!(
        masked(records[2].clone()),
        json!({
            "atMs": "<t>", "caller": "anonymous", "method": "tools/call", "name": "limited",
            "arguments": format!("sha256:{}", sha256_hex(b"{}")),
            "outcome": "error", "errorCode": -32000,
            "error": "Rate limit exceeded: `limited` allows 1 calls per 60 s; retry in 60 s",
            "durationMs": "<d>", "revision": "2026-07-28", "transport": "http",
            "continuation": false,
        })
    );

    // Shown fields: the others redacted, the sensitive one absent.
    let kept = Kept::default();
    let w = Wire::new(server().layer(Audit::new().show(["user"]).sink(kept.sink())));
    w.send(call(
        1,
        "login",
        json!({"user": "ada", "password": "hunter2"}),
    ))
    .await
    .json(200);
    let records = kept.take();
    assert_eq!(records[0]["arguments"], json!({"user": "ada"}));
    assert!(!serde_json::to_string(&records).unwrap().contains("hunter2"));
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Allow rules, concurrency, from_fn, tower layers

#[tokio::test]
async fn an_allow_rule_refuses_with_the_eras_authorization_refusal() {
    let only_counter = || Allow::new(|_, req| req.name() == "counter");
    let w = Wire::new(server().layer_tools(only_counter()));
    let refused = err(
        1,
        -32000,
        "Forbidden: the server's rules do not allow this caller to call tool `limited`",
        None,
    );
    w.send(call(1, "limited", json!({})))
        .await
        .assert_json(403, refused.clone());
    w.send(call(2, "counter", json!({}))).await.json(200);
    let legacy = Wire::new(server().layer_tools(only_counter())).revision("2025-11-25");
    let s = legacy.session("2025-11-25", json!({})).await;
    s.rpc(1, "tools/call", json!({"name": "limited", "arguments": {}}))
        .await
        .assert_json(200, refused);
}

#[tokio::test]
async fn a_concurrency_limit_sheds_the_call_over_its_limit() {
    let w = Arc::new(Wire::new(server().layer_for("work", Concurrency::new(1))));
    let first = {
        let w = w.clone();
        tokio::spawn(async move { w.send(call(1, "work", json!({"ms": 500}))).await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let shed = w.send(call(2, "work", json!({"ms": 1}))).await;
    shed.assert_json(
        503,
        err(
            2,
            -32000,
            "Server busy: `work` cannot run now (it already runs 1 calls at once, its limit); retry in a moment",
            Some(json!({"retryAfter": 1})),
        ),
    );
    assert_eq!(shed.header("retry-after"), Some("1"));
    first
        .await
        .unwrap()
        .assert_json(200, ok(1, text("worked 500 ms")));
}

#[tokio::test]
async fn from_fn_sees_the_request_and_may_answer_instead() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let w = Wire::new(server().layer(middleware::from_fn(move |req, next| {
        let log = log.clone();
        async move {
            #[derive(Deserialize)]
            struct Named {
                name: String,
            }
            let named = req.arguments::<Named>().ok().flatten().map(|n| n.name);
            log.lock().unwrap().push(format!(
                "{} {} {:?} {} {}",
                req.method(),
                req.name(),
                named,
                req.revision(),
                req.transport().as_str()
            ));
            if named.as_deref() == Some("Mallory") {
                return McpResponse::error(RpcError::invalid_params("Invalid params: not Mallory"));
            }
            next.run(req).await
        }
    })));
    w.rpc(
        1,
        "prompts/get",
        json!({"name": "hello", "arguments": {"name": "Ada"}}),
    )
    .await
    .json(200);
    w.rpc(
        2,
        "prompts/get",
        json!({"name": "hello", "arguments": {"name": "Mallory"}}),
    )
    .await
    .assert_json(200, err(2, -32602, "Invalid params: not Mallory", None));
    w.rpc(3, "tools/call", json!({"name": "limited", "arguments": {}}))
        .await
        .assert_json(200, ok(3, text("ok")));
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "prompts/get hello Some(\"Ada\") 2026-07-28 http",
            "prompts/get hello Some(\"Mallory\") 2026-07-28 http",
            "tools/call limited None 2026-07-28 http",
        ]
    );
}

#[tokio::test]
async fn standard_tower_layers_work_and_their_errors_are_mcp_errors() {
    // tower's own timeout: its error names the function.
    let w = Wire::new(server().layer_for(
        "slow",
        tower::timeout::TimeoutLayer::new(Duration::from_millis(200)),
    ));
    w.send(call(1, "slow", json!({"seconds": 5})))
        .await
        .assert_json(
            200,
            err(
                1,
                -32603,
                "Request timed out: `slow` did not finish within the time its timeout layer allows, and was cancelled",
                None,
            ),
        );
    // tower's concurrency limit under load shedding: the second call at once is shed.
    let w = Arc::new(Wire::new(
        server().layer_for(
            "work",
            tower::ServiceBuilder::new()
                .load_shed()
                .concurrency_limit(1)
                .into_inner(),
        ),
    ));
    let first = {
        let w = w.clone();
        tokio::spawn(async move { w.send(call(1, "work", json!({"ms": 500}))).await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    w.send(call(2, "work", json!({"ms": 1})))
        .await
        .assert_json(
            503,
            err(
                2,
                -32000,
                "Server busy: `work` cannot run now (a load-shedding layer refused it: the function is at its limit); retry in a moment",
                Some(json!({"retryAfter": 1})),
            ),
        );
    first
        .await
        .unwrap()
        .assert_json(200, ok(1, text("worked 500 ms")));
    // tower's rate limit: calls wait for their turn instead of being refused.
    let w = Wire::new(server().layer_for(
        "limited",
        tower::limit::RateLimitLayer::new(1, Duration::from_millis(300)),
    ));
    let started = Instant::now();
    for id in 1..=2 {
        w.send(call(id, "limited", json!({})))
            .await
            .assert_json(200, ok(id, text("ok")));
    }
    assert!(started.elapsed() >= Duration::from_millis(250));
}

#[tokio::test]
async fn a_layer_for_an_unknown_name_stops_start_up() {
    let e = server()
        .layer_for("nope", Timeout::new(Duration::from_secs(1)))
        .build()
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "invalid configuration: Server::layer_for names `nope`, which is no tool, prompt, resource, resource template or view of this server"
    );
    let _ = server_meta;
}

// ---------------------------------------------------------------------------------------------
// Rate limits shared through Redis

fn replica(store: sake::redis::RedisRateStore) -> Server {
    server().layer_for(
        "limited",
        RateLimit::new(3, Duration::from_secs(10))
            .per_client()
            .name("limited")
            .store(store),
    )
}

#[tokio::test]
async fn replicas_on_one_redis_share_one_budget() {
    let redis = sake_tests::redis::Redis::start();
    let store = || sake::redis::RedisRateStore::new(&redis.url()).unwrap();
    let a = Wire::new(replica(store()));
    let b = Wire::new(replica(store()));
    for (id, w) in [(1, &a), (2, &b), (3, &a)] {
        w.send(call(id, "limited", json!({})).extension(at([10, 0, 0, 1])))
            .await
            .assert_json(200, ok(id, text("ok")));
    }
    for (id, w) in [(4, &b), (5, &a)] {
        let refused = w
            .send(call(id, "limited", json!({})).extension(at([10, 0, 0, 1])))
            .await;
        refused.assert_json(429, rate_refusal(id));
        assert_eq!(refused.header("retry-after"), Some("4"));
    }
    b.send(call(6, "limited", json!({})).extension(at([10, 0, 0, 2])))
        .await
        .assert_json(200, ok(6, text("ok")));
    // Another server's limit (another name) has its own buckets in the same Redis.
    let other = Wire::new(
        server().layer_for(
            "limited",
            RateLimit::new(3, Duration::from_secs(10))
                .per_client()
                .name("another")
                .store(store()),
        ),
    );
    other
        .send(call(7, "limited", json!({})).extension(at([10, 0, 0, 1])))
        .await
        .assert_json(200, ok(7, text("ok")));
}

#[tokio::test]
async fn a_redis_that_is_down_serves_calls_uncounted_or_refuses_them_if_asked() {
    let down = sake_tests::redis::Redis::down();
    let w = Wire::new(replica(
        sake::redis::RedisRateStore::new(&down.url()).unwrap(),
    ));
    for id in 1..=5 {
        w.send(call(id, "limited", json!({})))
            .await
            .assert_json(200, ok(id, text("ok")));
    }
    let closed = Wire::new(
        server().layer_for(
            "limited",
            RateLimit::new(3, Duration::from_secs(10))
                .store(sake::redis::RedisRateStore::new(&down.url()).unwrap())
                .fail_open(false),
        ),
    );
    closed
        .send(call(1, "limited", json!({})))
        .await
        .assert_json(
            200,
            err(
                1,
                -32603,
                "Internal error: the rate limit of `limited` cannot be checked now; retry later",
                None,
            ),
        );
}

// ---------------------------------------------------------------------------------------------
// Every policy over a stream

#[tokio::test]
async fn every_policy_holds_over_a_stream() {
    let kept = Kept::default();
    let service = server()
        .layer(Audit::new().sink(kept.sink()))
        .layer_tools(Allow::new(|_, req| req.name() != "login"))
        .layer_for("counter", Cache::new(Duration::from_secs(60)))
        .layer_for("work", Concurrency::new(1))
        .build()
        .unwrap();
    let mut io = Stdio::start(service);
    let mut ask = async |id: i64, name: &str, arguments: Value| {
        io.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                "name": name, "arguments": arguments,
                "_meta": modern_meta(json!({}), json!({})),
            }}),
        )
        .await;
        io.recv("2026-07-28", Some("tools/call")).await
    };
    let c1 = ask(1, "counter", json!({})).await;
    let c2 = ask(2, "counter", json!({})).await;
    assert_eq!(c1["result"], c2["result"]);
    assert_eq!(
        ask(3, "login", json!({"user": "a", "password": "secret"})).await,
        err(
            3,
            -32000,
            "Forbidden: the server's rules do not allow this caller to call tool `login`",
            None
        )
    );
    let records = kept.take();
    assert_eq!(records.len(), 3);
    assert!(records.iter().all(|r| r["transport"] == "stdio"));
    assert!(!serde_json::to_string(&records).unwrap().contains("secret"));
    io.close().await;
}

// ---------------------------------------------------------------------------------------------
// Layers declared on a tool

#[tokio::test]
async fn a_layer_declared_on_a_tool_applies_inside_the_servers_layers() {
    let kept = Kept::default();
    let w = Wire::new(server().layer(Audit::new().sink(kept.sink())));
    for id in 1..=2 {
        w.send(call(id, "echo", json!({"text": "hi"})))
            .await
            .assert_json(200, ok(id, text("hi")));
    }
    let refused = w.send(call(3, "echo", json!({"text": "hi"}))).await;
    assert_eq!(refused.status, 429);
    assert_eq!(
        refused.json(429)["error"]["message"],
        "Rate limit exceeded: `echo` allows 2 calls per 60 s; retry in 30 s"
    );
    // The server's audit, outside, recorded the refusal.
    let outcomes: Vec<Value> = kept.take().iter().map(|r| r["outcome"].clone()).collect();
    assert_eq!(outcomes, [json!("ok"), json!("ok"), json!("error")]);
    // Each server built has the layer anew (its own buckets), over any transport.
    let other = TestClientOf::new();
    other.check().await;
}

struct TestClientOf(sake::testing::TestClient);

impl TestClientOf {
    fn new() -> Self {
        TestClientOf(sake::testing::TestClient::new(server()).unwrap())
    }

    async fn check(&self) {
        for _ in 0..2 {
            self.0
                .call_tool("echo", json!({"text": "x"}))
                .await
                .unwrap();
        }
        let refused = self
            .0
            .call_tool("echo", json!({"text": "x"}))
            .await
            .unwrap_err();
        assert_eq!(refused.code, -32000);
        assert_eq!(
            refused.data,
            Some(json!({"retryAfter": 30, "limit": 2, "periodSeconds": 60.0}))
        );
    }
}

// ---------------------------------------------------------------------------------------------
// What the layers are told: the transport, a tool's failure; calls of one function at once

#[tokio::test]
async fn the_transport_is_what_carried_the_request_not_a_guess_from_the_address() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let transport_of = |seen: Arc<Mutex<Vec<&'static str>>>| {
        middleware::from_fn(move |req, next| {
            let seen = seen.clone();
            async move {
                seen.lock().unwrap().push(req.transport().as_str());
                next.run(req).await
            }
        })
    };
    // HTTP in memory, without a client address; then with one; then a session.
    let w = Wire::new(server().layer(transport_of(seen.clone())));
    w.send(call(1, "limited", json!({})))
        .await
        .assert_json(200, ok(1, text("ok")));
    w.send(call(2, "limited", json!({})).extension(at([10, 0, 0, 1])))
        .await
        .assert_json(200, ok(2, text("ok")));
    let legacy = Wire::new(server().layer(transport_of(seen.clone()))).revision("2025-11-25");
    let s = legacy.session("2025-11-25", json!({})).await;
    let r = s
        .rpc(3, "tools/call", json!({"name": "limited", "arguments": {}}))
        .await;
    assert_eq!(r.json(200)["result"]["content"][0]["text"], "ok");
    // stdio's framing (`Service::serve_io`).
    let mut io = Stdio::start(server().layer(transport_of(seen.clone())).build().unwrap());
    io.send(
        &json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
            "name": "limited", "arguments": {}, "_meta": modern_meta(json!({}), json!({})),
        }}),
    )
    .await;
    assert_eq!(
        io.recv("2026-07-28", Some("tools/call")).await["result"]["content"][0]["text"],
        "ok"
    );
    io.close().await;
    // The in-memory test client: a stream of messages.
    let client =
        sake::testing::TestClient::new(server().layer(transport_of(seen.clone()))).unwrap();
    client.call_tool("limited", json!({})).await.unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        ["http", "http", "http", "stdio", "stream"]
    );
}

#[tokio::test]
async fn a_tools_failure_is_a_failure_to_the_layers_and_the_audit_on_both_eras() {
    let kept = Kept::default();
    let audited = || server().layer(Audit::new().sink(kept.sink()));
    let recorded = |kept: &Kept| -> Vec<(Value, Value, Value)> {
        kept.take()
            .into_iter()
            .map(|r| {
                (
                    r["name"].clone(),
                    r["outcome"].clone(),
                    r["errorCode"].clone(),
                )
            })
            .collect()
    };
    let expected = [
        (json!("refuses"), json!("error"), json!(-32602)),
        (json!("broken"), json!("tool_error"), Value::Null),
        (json!("limited"), json!("ok"), Value::Null),
    ];
    let closed = |id: i64| err(id, -32602, "Invalid params: the ledger is closed", None);
    // 2026-07-28.
    let w = Wire::new(audited());
    w.send(call(1, "refuses", json!({})))
        .await
        .assert_json(200, closed(1));
    let r = w.send(call(2, "broken", json!({}))).await.json(200).clone();
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert_eq!(r["result"]["content"][0]["text"], "the disk is full", "{r}");
    w.send(call(3, "limited", json!({})))
        .await
        .assert_json(200, ok(3, text("ok")));
    assert_eq!(recorded(&kept), expected);
    // A 2025-11-25 session.
    let legacy = Wire::new(audited()).revision("2025-11-25");
    let s = legacy.session("2025-11-25", json!({})).await;
    s.rpc(1, "tools/call", json!({"name": "refuses", "arguments": {}}))
        .await
        .assert_json(200, closed(1));
    let r = s
        .rpc(2, "tools/call", json!({"name": "broken", "arguments": {}}))
        .await
        .json(200)
        .clone();
    assert_eq!(r["result"]["isError"], true, "{r}");
    s.rpc(3, "tools/call", json!({"name": "limited", "arguments": {}}))
        .await
        .json(200);
    assert_eq!(recorded(&kept), expected);
    // A layer reads it from the response: a counter of failures (a circuit breaker's input).
    let failures = Arc::new(AtomicUsize::new(0));
    let tool_errors = Arc::new(AtomicUsize::new(0));
    let (f, t) = (failures.clone(), tool_errors.clone());
    let w = Wire::new(server().layer(middleware::from_fn(move |req, next| {
        let (f, t) = (f.clone(), t.clone());
        async move {
            let response = next.run(req).await;
            if response.rpc_error().is_some() {
                f.fetch_add(1, SeqCst);
            }
            if response.is_tool_error() {
                t.fetch_add(1, SeqCst);
            }
            response
        }
    })));
    w.send(call(1, "refuses", json!({})))
        .await
        .assert_json(200, closed(1));
    w.send(call(2, "broken", json!({}))).await.json(200);
    w.send(call(3, "limited", json!({}))).await.json(200);
    assert_eq!((failures.load(SeqCst), tool_errors.load(SeqCst)), (1, 1));
    // Over stdio.
    let mut io = Stdio::start(audited().build().unwrap());
    for (id, name) in [(1, "refuses"), (2, "broken"), (3, "limited")] {
        io.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                "name": name, "arguments": {}, "_meta": modern_meta(json!({}), json!({})),
            }}),
        )
        .await;
        let r = io.recv("2026-07-28", Some("tools/call")).await;
        if id == 1 {
            assert_eq!(r, closed(1));
        }
    }
    io.close().await;
    assert_eq!(recorded(&kept), expected);
}

#[tokio::test]
async fn two_calls_of_one_tool_behind_layers_run_at_the_same_time() {
    // Every built-in layer that holds the rest of the stack, a closure and tower's own
    // layers: neither call can finish before the other started (the tool waits for both).
    let w = Arc::new(Wire::new(
        server()
            .layer(Audit::new())
            .layer(middleware::from_fn(|req, next| next.run(req)))
            .layer_for("meet", RateLimit::new(10, Duration::from_secs(10)))
            .layer_for("meet", Concurrency::new(2))
            .layer_for("meet", Cache::new(Duration::from_secs(10)))
            .layer_for("meet", tower::limit::ConcurrencyLimitLayer::new(2)),
    ));
    let both = (1..=2).map(|id| {
        let w = w.clone();
        tokio::spawn(async move { w.send(call(id, "meet", json!({}))).await })
    });
    let both = tokio::time::timeout(
        Duration::from_secs(10),
        futures_util::future::join_all(both),
    )
    .await
    .expect("the two calls did not run at the same time");
    for (id, r) in (1..=2).zip(both) {
        r.unwrap().assert_json(200, ok(id, text("met")));
    }
    // In a 2025-11-25 session, and over stdio.
    let layered = || {
        server()
            .layer(Audit::new())
            .layer(middleware::from_fn(|req, next| next.run(req)))
            .layer_for("meet", Concurrency::new(2))
            .layer_for("meet", tower::limit::ConcurrencyLimitLayer::new(2))
    };
    let legacy = Wire::new(layered()).revision("2025-11-25");
    let s = legacy.session("2025-11-25", json!({})).await;
    let meet = json!({"name": "meet", "arguments": {}});
    let (a, b) = tokio::time::timeout(
        Duration::from_secs(10),
        futures_util::future::join(
            s.rpc(1, "tools/call", meet.clone()),
            s.rpc(2, "tools/call", meet.clone()),
        ),
    )
    .await
    .expect("the two calls of a session did not run at the same time");
    for r in [a, b] {
        assert_eq!(r.json(200)["result"]["content"][0]["text"], "met");
    }
    let mut io = Stdio::start(layered().build().unwrap());
    for id in 1..=2 {
        io.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                "name": "meet", "arguments": {}, "_meta": modern_meta(json!({}), json!({})),
            }}),
        )
        .await;
    }
    let mut ids = Vec::new();
    for _ in 1..=2 {
        let r = io.recv("2026-07-28", Some("tools/call")).await;
        assert_eq!(r["result"]["content"][0]["text"], "met", "{r}");
        ids.push(r["id"].as_i64().unwrap());
    }
    ids.sort_unstable();
    assert_eq!(ids, [1, 2]);
    io.close().await;
}

// ---------------------------------------------------------------------------------------------
// Every operation passes the layers: lists, completions, tasks, skills

/// What a layer saw of each request: method, kind, name, task id, transport.
type Seen = Arc<Mutex<Vec<String>>>;

fn seeing(seen: &Seen) -> impl middleware::McpLayer {
    let seen = seen.clone();
    middleware::from_fn(move |req, next| {
        let seen = seen.clone();
        async move {
            seen.lock().unwrap().push(format!(
                "{} {} {} {:?} {}",
                req.method(),
                req.kind().as_str(),
                req.name(),
                req.task_id(),
                req.transport().as_str()
            ));
            next.run(req).await
        }
    })
}

fn with_skill(server: Server) -> Server {
    server.skill(SkillDef::new("made").file(
        "SKILL.md",
        "---\nname: made\ndescription: Made in code.\n---\nBody.\n",
    ))
}

/// Every operation that calls no function, as a 2026-07-28 request.
fn operations() -> Vec<(&'static str, Value)> {
    let tasks = json!({"extensions": {TASKS: {}}});
    vec![
        ("tools/list", json!({})),
        ("prompts/list", json!({})),
        ("resources/list", json!({})),
        ("resources/templates/list", json!({})),
        ("skills/list", json!({})),
        (
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "hello"},
                   "argument": {"name": "name", "value": "A"}}),
        ),
        (
            "tasks/get",
            with_caps(json!({"taskId": "t-1"}), tasks.clone()),
        ),
        ("tasks/cancel", with_caps(json!({"taskId": "t-2"}), tasks)),
        ("resources/read", json!({"uri": "skill://made/SKILL.md"})),
    ]
}

#[tokio::test]
async fn every_operation_passes_the_layers_and_answers_as_without_them_on_2026_07_28() {
    let seen = Seen::default();
    let layered = Wire::new(with_skill(server()).layer(seeing(&seen)));
    let plain = Wire::new(with_skill(server()));
    for (id, (method, params)) in (1..).zip(operations()) {
        let through = layered.send(Req::modern(id, method, params.clone())).await;
        let without = plain.send(Req::modern(id, method, params)).await;
        assert_eq!(
            (through.status, through.content_type(), &through.messages),
            (without.status, without.content_type(), &without.messages),
            "{method}"
        );
    }
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "tools/list list tools None http",
            "prompts/list list prompts None http",
            "resources/list list resources None http",
            "resources/templates/list list resources/templates None http",
            "skills/list list skills None http",
            "completion/complete completion hello None http",
            "tasks/get task t-1 Some(\"t-1\") http",
            "tasks/cancel task t-2 Some(\"t-2\") http",
            "resources/read skill skill://made/SKILL.md None http",
        ]
    );
}

#[tokio::test]
async fn every_operation_passes_the_layers_in_a_2025_11_25_session_and_over_stdio() {
    let seen = Seen::default();
    let legacy = Wire::new(with_skill(server()).layer(seeing(&seen))).revision("2025-11-25");
    let s = legacy.session("2025-11-25", json!({})).await;
    let plain = Wire::new(with_skill(server())).revision("2025-11-25");
    let p = plain.session("2025-11-25", json!({})).await;
    let session_ops = [
        ("tools/list", json!({})),
        ("prompts/list", json!({})),
        ("resources/list", json!({})),
        ("resources/templates/list", json!({})),
        (
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "hello"},
                   "argument": {"name": "name", "value": "A"}}),
        ),
        ("resources/read", json!({"uri": "skill://made/SKILL.md"})),
    ];
    for (id, (method, params)) in (1..).zip(session_ops) {
        let through = s.rpc(id, method, params.clone()).await;
        let without = p.rpc(id, method, params).await;
        assert_eq!(through.status, 200, "{method}");
        assert_eq!(
            (through.content_type(), &through.messages),
            (without.content_type(), &without.messages),
            "{method}"
        );
    }
    // stdio's framing.
    let mut io = Stdio::start(with_skill(server()).layer(seeing(&seen)).build().unwrap());
    io.send(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {
            "_meta": modern_meta(json!({}), json!({})),
        }}),
    )
    .await;
    let listed = io.recv("2026-07-28", Some("tools/list")).await;
    assert!(listed["result"]["tools"].is_array(), "{listed}");
    io.close().await;
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "tools/list list tools None http",
            "prompts/list list prompts None http",
            "resources/list list resources None http",
            "resources/templates/list list resources/templates None http",
            "completion/complete completion hello None http",
            "resources/read skill skill://made/SKILL.md None http",
            "tools/list list tools None stdio",
        ]
    );
}

/// A signed-in caller, as an authentication layer would leave it.
#[derive(Clone)]
struct User(&'static str);

/// The refusal of an allow rule on lists.
fn list_refused(id: i64) -> Value {
    err(
        id,
        -32000,
        "Forbidden: the server's rules do not allow this caller to use `tools/list` (the tools list)",
        None,
    )
}

#[tokio::test]
async fn an_allow_rule_and_a_rate_limit_refuse_a_list_on_both_eras_and_over_stdio() {
    // Lists only for signed-in callers: an anonymous one is refused, its tools too.
    let signed_in_only = || {
        server()
            .layer_kind(Kind::List, Allow::new(|principal, _| principal.is_some()))
            .principal(|extensions| extensions.get::<User>().map(|u| u.0.to_owned()))
    };
    let w = Wire::new(signed_in_only());
    w.send(Req::modern(1, "tools/list", json!({})))
        .await
        .assert_json(403, list_refused(1));
    let named = w
        .send(Req::modern(2, "tools/list", json!({})).extension(User("ada")))
        .await;
    assert!(named.json(200)["result"]["tools"].is_array());
    // Other operations are not lists.
    w.send(call(3, "limited", json!({})))
        .await
        .assert_json(200, ok(3, text("ok")));
    let legacy = Wire::new(signed_in_only()).revision("2025-11-25");
    let s = legacy.session("2025-11-25", json!({})).await;
    s.rpc(1, "tools/list", json!({}))
        .await
        .assert_json(200, list_refused(1));
    let mut io = Stdio::start(signed_in_only().build().unwrap());
    io.send(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {
            "_meta": modern_meta(json!({}), json!({})),
        }}),
    )
    .await;
    assert_eq!(
        io.recv("2026-07-28", Some("tools/list")).await,
        list_refused(1)
    );
    io.close().await;

    // Two lists a minute, for everyone together.
    let limited_lists = || {
        server().layer_kind(
            Kind::List,
            RateLimit::new(2, Duration::from_secs(60)).per_function(),
        )
    };
    let limit = |id: i64| {
        err(
            id,
            -32000,
            "Rate limit exceeded: `tools/list` allows 2 calls per 60 s; retry in 30 s",
            Some(json!({"retryAfter": 30, "limit": 2, "periodSeconds": 60.0})),
        )
    };
    let w = Wire::new(limited_lists());
    for id in 1..=2 {
        w.send(Req::modern(id, "tools/list", json!({})))
            .await
            .json(200);
    }
    let refused = w.send(Req::modern(3, "tools/list", json!({}))).await;
    refused.assert_json(429, limit(3));
    assert_eq!(refused.header("retry-after"), Some("30"));
    // Each list has its own budget (per function: the method).
    w.send(Req::modern(4, "prompts/list", json!({})))
        .await
        .json(200);
    let legacy = Wire::new(limited_lists()).revision("2025-11-25");
    let s = legacy.session("2025-11-25", json!({})).await;
    for id in 1..=2 {
        s.rpc(id, "tools/list", json!({})).await.json(200);
    }
    s.rpc(3, "tools/list", json!({}))
        .await
        .assert_json(200, limit(3));
}

#[tokio::test]
async fn a_sessions_subscriptions_pass_the_layers() {
    let seen = Seen::default();
    let w = Wire::new(server().layer(seeing(&seen)).layer_kind(
        Kind::Subscription,
        Allow::new(|_, req| req.name() == "note://today"),
    ))
    .revision("2025-11-25");
    let s = w.session("2025-11-25", json!({})).await;
    // Refused by the rule before anything else is checked.
    s.rpc(1, "resources/subscribe", json!({"uri": "note://other"}))
        .await
        .assert_json(
            200,
            err(
                1,
                -32000,
                "Forbidden: the server's rules do not allow this caller to use `resources/subscribe` (subscription `note://other`)",
                None,
            ),
        );
    for (id, method) in [(2, "resources/subscribe"), (3, "resources/unsubscribe")] {
        let r = s.rpc(id, method, json!({"uri": "note://today"})).await;
        assert_eq!(r.json(200)["result"], json!({}), "{method}");
    }
    assert_eq!(
        *seen.lock().unwrap(),
        [
            "resources/subscribe subscription note://other None http",
            "resources/subscribe subscription note://today None http",
            "resources/unsubscribe subscription note://today None http",
        ]
    );
}

#[tokio::test]
async fn calls_waiting_for_a_tower_concurrency_limit_are_all_served() {
    // tower's limit holds one call at a time: the others wait for the stack to be ready again,
    // and every one of them is woken (the stack wakes all waiting calls, not the last polled).
    let w = Arc::new(Wire::new(
        server().layer_for("work", tower::limit::ConcurrencyLimitLayer::new(1)),
    ));
    let calls = (1..=4).map(|id| {
        let w = w.clone();
        tokio::spawn(async move { w.send(call(id, "work", json!({"ms": 50}))).await })
    });
    let done = tokio::time::timeout(
        Duration::from_secs(10),
        futures_util::future::join_all(calls),
    )
    .await
    .expect("a call waiting for the limit was never woken");
    for (id, r) in (1..=4).zip(done) {
        r.unwrap().assert_json(200, ok(id, text("worked 50 ms")));
    }
}
