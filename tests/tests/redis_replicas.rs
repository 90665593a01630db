//! Replicas sharing one Redis (feature `redis`): two services in this process, each with its
//! own `RedisBus` and `RedisTaskStore` against a real `redis-server` started on a free port
//! (`sake_tests::redis`), as two machines would be. What one replica publishes reaches the
//! other's listeners once; a session ended on one is refused by the other; a task created on
//! one is read, answered, cancelled and finished through the other; a replica that dies with
//! a task running leaves it failed; and Redis down at start, restarted, or slow costs what
//! docs/deploying.md says and heals by itself.
//!
//! Redis is not trusted: a message published by someone else, a genuine one changed or
//! replayed, and a task record rewritten (its owner, its result) are refused and logged by
//! every replica; the replicas share through a Redis that speaks TLS only (a CA made by the
//! test) and signs them in as an ACL user allowed only what docs/deploying.md lists; and a
//! Redis killed in the middle answers clients with a message that names no backend.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use base64::Engine as _;
use sake::bus::ReplicaKey;
use sake::prelude::*;
use sake::redis::{RedisBus, RedisConfig, RedisTaskStore};
use sake_tests::redis::Redis;
use sake_tests::rpc::{err, ok, server_meta, text_result, with_caps};
use sake_tests::stream::Open;
use sake_tests::{Req, Session, Wire};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// The server under test

/// Answers at once.
#[tool]
fn hello() -> &'static str {
    "hello"
}

/// A document clients subscribe to.
#[resource(uri = "docs://shared", mime_type = "text/plain")]
fn shared_doc() -> &'static str {
    "shared"
}

/// Works until it is stopped or `ms` milliseconds pass.
#[tool(task = "optional")]
async fn work(
    /// How long.
    ms: u64,
) -> String {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    format!("worked {ms} ms")
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Confirm {
    ok: bool,
}

static ASKED: AtomicUsize = AtomicUsize::new(0);

/// Works a moment, then asks the client to confirm.
#[tool(task = "optional")]
async fn confirm(ctx: Context) -> Result<String, InputError> {
    ASKED.fetch_add(1, SeqCst);
    tokio::time::sleep(Duration::from_millis(20)).await;
    let answer = ctx.elicit::<Confirm>("go", "Proceed?").await?;
    Ok(format!(
        "confirmed: {}",
        answer.accepted().is_some_and(|c| c.ok)
    ))
}

const SERVER: (&str, &str) = ("replicas", "1.0.0");
const EXT: &str = "io.modelcontextprotocol/tasks";
const SUB: &str = "io.modelcontextprotocol/subscriptionId";
const KEY: &str = "a session key the replicas share, 32+ bytes long";

/// Who the test says the caller is (`Server::principal`).
#[derive(Clone)]
struct Who(&'static str);

fn replica(redis: &Redis) -> Server {
    Server::from_registry()
        .name(SERVER.0)
        .version(SERVER.1)
        .session_key(KEY)
        .principal(|ext| ext.get::<Who>().map(|w| w.0.to_owned()))
        .event_bus(RedisBus::new(&redis.url()).expect("a Redis URL"))
        .task_store(RedisTaskStore::new(&redis.url()).expect("a Redis URL"))
        .task_lease(Duration::from_millis(900))
}

/// How many replicas listen on the bus's channel.
fn subscribers(redis: &Redis) -> usize {
    redis
        .cli(&["PUBSUB", "NUMSUB", "{sake}:events"])
        .and_then(|o| o.lines().nth(1).and_then(|n| n.trim().parse().ok()))
        .unwrap_or(0)
}

/// Waits (10 s at most) until `n` replicas are subscribed.
async fn subscribed(redis: &Redis, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while subscribers(redis) != n {
        assert!(
            Instant::now() < deadline,
            "{n} replicas did not subscribe (now {})",
            subscribers(redis)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn two(redis: &Redis) -> (Wire, Wire) {
    let (a, b) = (Wire::new(replica(redis)), Wire::new(replica(redis)));
    subscribed(redis, 2).await;
    (a, b)
}

fn listen(id: i64, filter: Value) -> Req {
    Req::modern(id, "subscriptions/listen", json!({"notifications": filter}))
}

async fn subscribe(w: &Wire, id: i64, filter: Value) -> Open {
    let mut s = w.open(listen(id, filter.clone())).await;
    s.assert_sse();
    assert_eq!(
        s.message().await,
        json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
            "params": {"notifications": filter, "_meta": {SUB: id}}})
    );
    s
}

fn note(id: i64, method: &str) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": {"_meta": {SUB: id}}})
}

const TOOLS: &str = "notifications/tools/list_changed";

fn caps() -> Value {
    json!({"elicitation": {}, "extensions": {EXT: {}}})
}

fn call(id: i64, name: &str, arguments: Value) -> Req {
    Req::modern(
        id,
        "tools/call",
        with_caps(json!({"name": name, "arguments": arguments}), caps()),
    )
}

fn on_task(id: i64, method: &str, task: &str, more: Value) -> Req {
    let mut params = json!({"taskId": task});
    params
        .as_object_mut()
        .unwrap()
        .extend(more.as_object().unwrap().clone());
    Req::modern(id, method, with_caps(params, caps()))
}

/// Calls a tool that becomes a task; its id.
async fn create(w: &Wire, name: &str, arguments: Value) -> String {
    let reply = w.send(call(1, name, arguments)).await;
    let result = &reply.json(200)["result"];
    assert_eq!(result["resultType"], "task", "{result}");
    assert_eq!(result["status"], "working");
    result["taskId"].as_str().expect("a task id").to_owned()
}

/// `tasks/get`: the result without its timestamps.
async fn get(w: &Wire, id: &str) -> Value {
    let reply = w.send(on_task(2, "tasks/get", id, json!({}))).await;
    let mut result = reply.json(200)["result"].clone();
    assert_eq!(result["taskId"], id);
    let o = result.as_object_mut().unwrap();
    for key in ["taskId", "createdAt", "lastUpdatedAt"] {
        o.remove(key);
    }
    result
}

/// Polls `tasks/get` on `w` until the status is `status` (`within` at most).
async fn until(w: &Wire, id: &str, status: &str, within: Duration) -> Value {
    let deadline = Instant::now() + within;
    loop {
        let t = get(w, id).await;
        if t["status"] == status {
            return t;
        }
        assert!(
            Instant::now() < deadline,
            "task {id} is not {status} after {within:?}: {t}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn task(status: &str, extra: Value) -> Value {
    let mut v = json!({"resultType": "complete", "status": status, "ttlMs": 300_000,
        "pollIntervalMs": 1000, "_meta": server_meta(SERVER.0, SERVER.1)});
    v.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    v
}

fn session_not_found(id: impl Into<Value>) -> Value {
    err(
        id,
        -32001,
        "Session not found: the Mcp-Session-Id was ended; start a new session with `initialize`",
        None,
    )
}

// ---------------------------------------------------------------------------------------------
// Events

#[tokio::test]
async fn a_list_change_on_one_replica_reaches_listeners_on_both_once() {
    let redis = Redis::start();
    let (a, b) = two(&redis).await;
    let filter = json!({"toolsListChanged": true});
    let mut on_a = subscribe(&a, 1, filter.clone()).await;
    let mut on_b = subscribe(&b, 2, filter).await;
    b.service().notifier().tools_changed();
    assert_eq!(on_a.message().await, note(1, TOOLS));
    assert_eq!(on_b.message().await, note(2, TOOLS));
    // Once each: B's listener does not hear B's own event back from Redis, nor A's twice.
    on_a.assert_quiet_for(Duration::from_millis(300)).await;
    on_b.assert_quiet_for(Duration::from_millis(10)).await;
}

#[tokio::test]
async fn a_resource_update_on_one_replica_reaches_a_handshake_get_stream_on_another() {
    let redis = Redis::start();
    let (a, b) = two(&redis).await;
    let s = a.session("2025-11-25", json!({})).await;
    s.rpc(1, "resources/subscribe", json!({"uri": "docs://shared"}))
        .await
        .assert_json(200, ok(1, json!({})));
    let mut get = s.get().await;
    b.service()
        .notifier()
        .notify_resource_updated("docs://shared");
    assert_eq!(
        get.message().await,
        json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
            "params": {"uri": "docs://shared"}})
    );
    // Not subscribed: not told.
    b.service()
        .notifier()
        .notify_resource_updated("docs://other");
    b.service().notifier().tools_changed();
    assert_eq!(
        get.message().await,
        json!({"jsonrpc": "2.0", "method": TOOLS, "params": {}})
    );
}

// ---------------------------------------------------------------------------------------------
// Ended sessions

#[tokio::test]
async fn a_session_deleted_on_one_replica_is_refused_by_the_other() {
    let redis = Redis::start();
    let (a, b) = two(&redis).await;
    let on_a = a.session("2025-11-25", json!({})).await;
    let on_b = Session {
        wire: &b,
        id: on_a.id.clone(),
        revision: on_a.revision,
    };
    on_b.rpc(1, "ping", Value::Null)
        .await
        .assert_json(200, ok(1, json!({})));
    let mut get = on_b.get().await;
    assert_eq!(on_a.delete().await.status, 200);
    let deleted = Instant::now();
    // B ends the session's GET stream it holds as soon as it hears.
    assert_eq!(get.next_event().await, None);
    loop {
        let reply = on_b.rpc(2, "ping", Value::Null).await;
        if reply.status == 404 {
            reply.assert_json(404, session_not_found(2));
            break;
        }
        assert!(
            deleted.elapsed() < Duration::from_secs(1),
            "B still serves the ended session"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // A replica that starts later learns it from Redis.
    let c = Wire::new(replica(&redis));
    subscribed(&redis, 3).await;
    let on_c = Session {
        wire: &c,
        id: on_a.id.clone(),
        revision: on_a.revision,
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let reply = on_c.rpc(3, "ping", Value::Null).await;
        if reply.status == 404 {
            reply.assert_json(404, session_not_found(3));
            break;
        }
        assert!(Instant::now() < deadline, "C serves the ended session");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn signing_a_caller_out_on_one_replica_ends_its_sessions_on_every_replica() {
    let redis = Redis::start();
    let (a, b) = two(&redis).await;
    let ada = a
        .handshake_with("2025-11-25", json!({}), |r| r.extension(Who("ada")))
        .await;
    let bob = a
        .handshake_with("2025-11-25", json!({}), |r| r.extension(Who("bob")))
        .await;
    let ping = |h: &sake_tests::Handshake, id: i64| {
        Req::in_session(
            h,
            json!({"jsonrpc": "2.0", "id": id, "method": "ping"}).to_string(),
        )
    };
    // Opened within the second of the sign-out counts as before it: wait for the next.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    b.service().end_sessions_of("ada");
    let signed_out = Instant::now();
    loop {
        let reply = a
            .send_as("2025-11-25", ping(&ada, 1).extension(Who("ada")))
            .await;
        if reply.status == 404 {
            reply.assert_json(404, session_not_found(1));
            break;
        }
        assert!(signed_out.elapsed() < Duration::from_secs(1));
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    a.send_as("2025-11-25", ping(&bob, 2).extension(Who("bob")))
        .await
        .assert_json(200, ok(2, json!({})));
    // Ada signs in again: served.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let again = a
        .handshake_with("2025-11-25", json!({}), |r| r.extension(Who("ada")))
        .await;
    b.send_as("2025-11-25", ping(&again, 3).extension(Who("ada")))
        .await
        .assert_json(200, ok(3, json!({})));
}

// ---------------------------------------------------------------------------------------------
// Tasks

#[tokio::test]
async fn a_task_created_on_one_replica_is_answered_and_finished_through_the_other() {
    let redis = Redis::start();
    let (a, b) = two(&redis).await;
    let id = create(&a, "confirm", json!({})).await;
    let asked = until(&b, &id, "input_required", Duration::from_secs(5)).await;
    assert_eq!(
        asked,
        task(
            "input_required",
            json!({"inputRequests": {"go": {"method": "elicitation/create", "params": {
                "message": "Proceed?", "requestedSchema": {"type": "object",
                "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}}}}})
        )
    );
    // Followed from a listen stream on A while B takes the answer and runs it on.
    let mut on_a = a
        .open(Req::modern(
            7,
            "subscriptions/listen",
            with_caps(
                json!({"notifications": {"taskIds": [id]}}),
                json!({"extensions": {EXT: {}}}),
            ),
        ))
        .await;
    let ack = on_a.message().await;
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    assert_eq!(on_a.message().await["params"]["status"], "input_required");
    let answer = on_task(
        3,
        "tasks/update",
        &id,
        json!({"inputResponses": {"go": {"action": "accept", "content": {"ok": true}}}}),
    );
    let reply = b.send(answer).await;
    assert_eq!(
        reply.json(200)["result"],
        json!({"resultType": "complete", "_meta": server_meta(SERVER.0, SERVER.1)})
    );
    let done = until(&a, &id, "completed", Duration::from_secs(5)).await;
    assert_eq!(
        done,
        task(
            "completed",
            json!({"result": {"resultType": "complete",
                "content": [{"type": "text", "text": "confirmed: true"}],
                "_meta": server_meta(SERVER.0, SERVER.1)}})
        )
    );
    // A's stream hears the task go on and end, whoever ran it.
    let mut statuses = Vec::new();
    while statuses.last().map(String::as_str) != Some("completed") {
        let m = on_a.message().await;
        assert_eq!(m["method"], "notifications/tasks", "{m}");
        statuses.push(m["params"]["status"].as_str().unwrap().to_owned());
    }
    // (A stream reports a task as it is when it looks: `working` may be skipped.)
    assert!(
        statuses.iter().all(|s| s == "working" || s == "completed"),
        "{statuses:?}"
    );
}

#[tokio::test]
async fn a_task_running_on_one_replica_is_cancelled_through_the_other() {
    let redis = Redis::start();
    let (a, b) = two(&redis).await;
    let id = create(&a, "work", json!({"ms": 60_000})).await;
    let reply = b.send(on_task(3, "tasks/cancel", &id, json!({}))).await;
    assert_eq!(
        reply.json(200)["result"],
        json!({"resultType": "complete", "_meta": server_meta(SERVER.0, SERVER.1)})
    );
    // A reads the request with its next heartbeat (a third of the 900 ms lease) and stops.
    let cancelled = until(&b, &id, "cancelled", Duration::from_secs(3)).await;
    assert_eq!(
        cancelled,
        task(
            "cancelled",
            json!({"statusMessage": "Cancelled by client request"})
        )
    );
}

/// A replica's process dies with a task running: the other fails it once the lease lapses.
#[test]
fn a_task_whose_replica_dies_fails_within_its_lease() {
    let redis = Redis::start();
    let dying = tokio::runtime::Runtime::new().unwrap();
    let id = dying.block_on(async {
        let a = Wire::new(replica(&redis));
        let id = create(&a, "work", json!({"ms": 60_000})).await;
        std::mem::forget(a);
        id
    });
    // Its runtime is dropped: every task it ran stops, no heartbeat goes out any more.
    dying.shutdown_background();
    let died = Instant::now();
    let living = tokio::runtime::Runtime::new().unwrap();
    living.block_on(async {
        let b = Wire::new(replica(&redis));
        assert_eq!(get(&b, &id).await["status"], "working");
        let failed = until(&b, &id, "failed", Duration::from_secs(4)).await;
        let message = "Task interrupted: the server running it stopped before it finished; call the tool again";
        assert_eq!(
            failed,
            task(
                "failed",
                json!({"statusMessage": message, "error": {"code": -32603, "message": message}})
            )
        );
        // The lease (900 ms) and one sweep (1 s) at most.
        assert!(
            died.elapsed() < Duration::from_secs(4),
            "{:?}",
            died.elapsed()
        );
    });
}

// ---------------------------------------------------------------------------------------------
// Faults

#[tokio::test]
async fn with_redis_down_at_start_a_replica_serves_alone_then_joins_when_it_comes_up() {
    let mut redis = Redis::down();
    let (a, b) = (Wire::new(replica(&redis)), Wire::new(replica(&redis)));
    // Calls that need no Redis are served; each replica's own listeners hear its own events.
    a.send(Req::modern(1, "tools/call", json!({"name": "hello"})))
        .await
        .assert_json(200, ok(1, text_result(SERVER, "hello")));
    let filter = json!({"toolsListChanged": true});
    let mut on_a = subscribe(&a, 1, filter.clone()).await;
    a.service().notifier().tools_changed();
    assert_eq!(on_a.message().await, note(1, TOOLS));
    // A task needs the store: refused with an error that says so.
    let reply = a.send(call(2, "work", json!({"ms": 10}))).await;
    let e = &reply.json(200)["error"];
    assert_eq!(*e, unavailable(), "{e}");
    // Redis comes up: both subscribe by themselves, and events cross again.
    redis.up();
    subscribed(&redis, 2).await;
    b.service().notifier().tools_changed();
    assert_eq!(on_a.message().await, note(1, TOOLS));
    let id = create(&a, "work", json!({"ms": 10})).await;
    until(&b, &id, "completed", Duration::from_secs(5)).await;
}

#[tokio::test]
async fn a_redis_restart_costs_the_events_of_the_outage_and_listeners_are_told_to_list_again() {
    let mut redis = Redis::start();
    let (a, b) = two(&redis).await;
    let mut on_a = subscribe(&a, 1, json!({"toolsListChanged": true})).await;
    redis.kill();
    // During the outage: served, but B's events stay on B.
    b.service().notifier().tools_changed();
    a.send(Req::modern(1, "tools/call", json!({"name": "hello"})))
        .await
        .assert_json(200, ok(1, text_result(SERVER, "hello")));
    on_a.assert_quiet_for(Duration::from_millis(300)).await;
    redis.up();
    subscribed(&redis, 2).await;
    // On resubscribing, A tells its listeners that the lists may have changed meanwhile.
    assert_eq!(on_a.message().await, note(1, TOOLS));
    b.service().notifier().tools_changed();
    assert_eq!(on_a.message().await, note(1, TOOLS));
}

#[tokio::test]
async fn a_slow_redis_delays_only_what_needs_it_by_its_timeout() {
    let redis = Redis::start();
    let (a, b) = two(&redis).await;
    let mut on_a = subscribe(&a, 1, json!({"toolsListChanged": true})).await;
    redis.pause(2500);
    // Calls without tasks do not touch Redis.
    a.send(Req::modern(1, "tools/call", json!({"name": "hello"})))
        .await
        .assert_json(200, ok(1, text_result(SERVER, "hello")));
    // One that does is refused after the 1 s timeout, not held for the whole pause.
    let started = Instant::now();
    let reply = a.send(call(2, "work", json!({"ms": 10}))).await;
    let e = &reply.json(200)["error"];
    assert_eq!(e["code"], -32603, "{e}");
    assert!(started.elapsed() < Duration::from_millis(2400), "{e}");
    // Events published meanwhile are delivered once Redis answers again.
    b.service().notifier().tools_changed();
    assert_eq!(on_a.message().await, note(1, TOOLS));
    let id = create(&a, "work", json!({"ms": 10})).await;
    until(&b, &id, "completed", Duration::from_secs(5)).await;
}

/// The error a client gets when the task store failed: the same whatever failed, naming no
/// backend (the log has the detail).
fn unavailable() -> Value {
    json!({"code": -32603, "message": "Internal error: the task store is unavailable; retry shortly"})
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

/// Everything logged (warnings and errors) so far in this test binary.
fn logs() -> String {
    static BUF: OnceLock<Buffer> = OnceLock::new();
    let buf = BUF.get_or_init(|| {
        let buf = Buffer(Arc::default());
        let writer = buf.clone();
        tracing_subscriber::fmt()
            .with_ansi(false)
            .with_max_level(tracing::Level::WARN)
            .with_writer(move || writer.clone())
            .init();
        buf
    });
    String::from_utf8_lossy(&buf.0.lock().unwrap()).into_owned()
}

/// Waits (5 s at most) until a line with all of `parts` was logged.
async fn logged(parts: &[&str]) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !logs().lines().any(|l| parts.iter().all(|p| l.contains(p))) {
        assert!(
            Instant::now() < deadline,
            "no log line with {parts:?} in:\n{}",
            logs()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

// ---------------------------------------------------------------------------------------------
// Redis is not trusted

/// What a session id says: its payload is readable by whoever sees the id (only its MAC needs
/// the key): the session's stable id (`i`), its owner (`o`), its caller's digest (`p`), when
/// it ends (`e`).
fn payload(session_id: &str) -> Value {
    let b64 = session_id.split('.').nth(1).expect("a signed session id");
    serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(b64)
            .expect("base64"),
    )
    .expect("JSON")
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// Waits (5 s at most) until `key` exists; its value.
async fn kept(redis: &Redis, pattern: &str) -> (String, String) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let keys = redis
            .cli(&["--scan", "--pattern", pattern])
            .unwrap_or_default();
        if let Some(key) = keys.lines().next().filter(|k| !k.is_empty()) {
            let value = redis.cli(&["GET", key]).unwrap_or_default();
            return (key.to_owned(), value.trim_end_matches('\n').to_owned());
        }
        assert!(Instant::now() < deadline, "no key {pattern} in Redis");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn publish(redis: &Redis, message: &str) {
    let out = redis.cli(&["PUBLISH", "{sake}:events", message]);
    assert!(out.is_some(), "PUBLISH");
}

fn ping(h: &sake_tests::Handshake, id: i64) -> Req {
    Req::in_session(
        h,
        json!({"jsonrpc": "2.0", "id": id, "method": "ping"}).to_string(),
    )
}

/// Someone who can PUBLISH on the replicas' channel and write their keys — but has no session
/// key — tries to end a session, sign a caller out, and fake `resources/updated`: as the
/// messages were before they were authenticated, with a made-up MAC, as a genuine message
/// changed, and as a genuine (keyed) message sent long ago. Every replica refuses each one and
/// logs it; the same message sealed with the replicas' key is acted on, so the refusals are
/// the MAC's doing.
#[tokio::test]
async fn forged_tampered_and_replayed_bus_messages_are_refused_and_logged() {
    logs();
    let redis = Redis::start();
    let (a, b) = two(&redis).await;
    let victim = a.session("2025-11-25", json!({})).await;
    let v = payload(&victim.id);
    let on_b = Session {
        wire: &b,
        id: victim.id.clone(),
        revision: victim.revision,
    };
    let ada = a
        .handshake_with("2025-11-25", json!({}), |r| r.extension(Who("ada")))
        .await;
    let ada_digest = payload(&ada.id)["p"].as_str().unwrap().to_owned();
    let mut listener = subscribe(&b, 1, json!({"resourceSubscriptions": ["docs://shared"]})).await;
    // A genuine message to work from: bob signed out on A, kept in Redis until it expires.
    a.service().end_sessions_of("bob");
    let (_, genuine) = kept(&redis, "{sake}:signed-out:*").await;
    assert!(genuine.starts_with("m1."), "sealed: {genuine}");
    let bob_digest = genuine
        .split("\"p\":\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .unwrap()
        .to_owned();
    let (now, at) = (now_ms(), now_ms() / 1000 + 1);
    let ended =
        json!({"o": "attacker", "ts": now, "t": "ended", "s": v["i"], "w": v["o"], "u": v["e"]});
    let out =
        json!({"o": "attacker", "ts": now, "t": "out", "p": ada_digest, "a": at, "u": at + 3600});
    let updated = json!({"o": "attacker", "ts": now, "t": "updated", "u": "docs://shared"});
    let mut forgeries = Vec::new();
    for m in [&ended, &out, &updated] {
        // As messages were before this version: plain JSON.
        forgeries.push(m.to_string());
        // With a MAC the attacker made up.
        forgeries.push(format!("m1.{}.{m}", "A".repeat(43)));
    }
    // A genuine message changed: bob's sign-out made ada's.
    forgeries.push(genuine.replace(&bob_digest, &ada_digest));
    // A genuine message (sealed with the replicas' key) replayed two minutes after it was sent.
    let key = ReplicaKey::new(KEY.as_bytes(), &[], SERVER.0).unwrap();
    let mut old = ended.clone();
    old["ts"] = json!(now - 120_000);
    forgeries.push(key.seal("bus", &old.to_string()));
    for f in &forgeries {
        publish(&redis, f);
    }
    // A forged kept key: a replica that starts later reads it, and refuses it too.
    let forged_key = format!("{{sake}}:ended:{}", v["i"].as_str().unwrap());
    assert!(
        redis
            .cli(&["SET", &forged_key, &ended.to_string(), "EX", "3600"])
            .is_some()
    );
    // A genuine update after the forgeries (Redis delivers in order): the listener hears it
    // once — the forged ones before it never reached it.
    a.service()
        .notifier()
        .notify_resource_updated("docs://shared");
    assert_eq!(
        listener.message().await,
        json!({"jsonrpc": "2.0", "method": "notifications/resources/updated",
            "params": {"uri": "docs://shared", "_meta": {SUB: 1}}})
    );
    listener.assert_quiet_for(Duration::from_millis(300)).await;
    // The victim's session and ada's are served on both replicas.
    for (w, id) in [(&a, 10), (&b, 11)] {
        let s = Session {
            wire: w,
            id: victim.id.clone(),
            revision: victim.revision,
        };
        s.rpc(id, "ping", Value::Null)
            .await
            .assert_json(200, ok(id, json!({})));
        w.send_as("2025-11-25", ping(&ada, id).extension(Who("ada")))
            .await
            .assert_json(200, ok(id, json!({})));
    }
    let c = Wire::new(replica(&redis));
    subscribed(&redis, 3).await;
    let on_c = Session {
        wire: &c,
        id: victim.id.clone(),
        revision: victim.revision,
    };
    on_c.rpc(12, "ping", Value::Null)
        .await
        .assert_json(200, ok(12, json!({})));
    logged(&[
        "refused something read from Redis that is not authenticated",
        "event bus",
        "its MAC does not verify",
    ])
    .await;
    // The same message, sealed with the key: acted on.
    let mut sealed = ended.clone();
    sealed["ts"] = json!(now_ms());
    publish(&redis, &key.seal("bus", &sealed.to_string()));
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let reply = on_b.rpc(13, "ping", Value::Null).await;
        if reply.status == 404 {
            reply.assert_json(404, session_not_found(13));
            break;
        }
        assert!(Instant::now() < deadline, "a keyed message is acted on");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// `tasks/get` of task `id` as `who`: the whole answer.
async fn get_as(w: &Wire, id: &str, who: &'static str) -> Value {
    let req = on_task(2, "tasks/get", id, json!({})).extension(Who(who));
    w.send(req).await.json(200).clone()
}

/// Someone who can write the task store's keys rewrites a task's record: its owner (to read
/// another caller's task), its result, a record without a MAC, another task's genuine record.
/// Each is refused on both replicas — to its owner too, with the store's one message, never
/// the rewritten content — and logged; the genuine record put back is served again.
#[tokio::test]
async fn a_rewritten_task_record_is_refused_on_every_replica() {
    logs();
    let redis = Redis::start();
    let (a, b) = two(&redis).await;
    let reply = a
        .send(call(1, "work", json!({"ms": 10})).extension(Who("ada")))
        .await;
    let id = reply.json(200)["result"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();
    let deadline = Instant::now() + Duration::from_secs(5);
    while get_as(&b, &id, "ada").await["result"]["status"] != "completed" {
        assert!(Instant::now() < deadline, "the task completes");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let done = get_as(&a, &id, "ada").await;
    assert_eq!(
        done["result"]["result"]["content"][0]["text"], "worked 10 ms",
        "{done}"
    );
    let task_key = format!("{{sake}}:task:{id}");
    let genuine = redis
        .cli(&["HGET", &task_key, "r"])
        .unwrap()
        .trim_end_matches('\n')
        .to_owned();
    assert!(genuine.starts_with("m1."), "sealed: {genuine}");
    let ada_digest = genuine
        .split("\"principal\":\"")
        .nth(1)
        .and_then(|r| r.split('"').next())
        .expect("the owner in the record")
        .to_owned();
    let mallory = a
        .handshake_with("2025-11-25", json!({}), |r| r.extension(Who("mallory")))
        .await;
    let mallory_digest = payload(&mallory.id)["p"].as_str().unwrap().to_owned();
    // Mallory cannot see ada's task.
    assert_eq!(get_as(&a, &id, "mallory").await["error"]["code"], -32602);
    // Another task's genuine record.
    let other = create(&a, "work", json!({"ms": 10})).await;
    let other_record = redis
        .cli(&["HGET", &format!("{{sake}}:task:{other}"), "r"])
        .unwrap()
        .trim_end_matches('\n')
        .to_owned();
    let json_of = |sealed: &str| sealed.splitn(3, '.').nth(2).unwrap().to_owned();
    let rewrites = [
        // The owner changed, the MAC kept.
        genuine.replace(&ada_digest, &mallory_digest),
        // The owner changed, without a MAC (as records were before this version).
        json_of(&genuine).replace(&ada_digest, &mallory_digest),
        // The result changed.
        genuine.replace("worked 10 ms", "worked 0 ms"),
        // Another task's record.
        other_record,
    ];
    for rewrite in &rewrites {
        assert!(redis.cli(&["HSET", &task_key, "r", rewrite]).is_some());
        for w in [&a, &b] {
            for who in ["mallory", "ada"] {
                let e = get_as(w, &id, who).await;
                assert_eq!(e["error"], unavailable(), "{who}: {e}");
            }
        }
    }
    logged(&[
        "refused something read from Redis that is not authenticated",
        "task store",
    ])
    .await;
    // The genuine record put back: served again, to its owner only.
    assert!(redis.cli(&["HSET", &task_key, "r", &genuine]).is_some());
    assert_eq!(get_as(&b, &id, "ada").await["result"], done["result"]);
    assert_eq!(get_as(&b, &id, "mallory").await["error"]["code"], -32602);
}

/// The ACL rules docs/deploying.md gives for the replicas' user (prefix `sake`).
const ACL_RULES: &[&str] = &[
    "resetkeys",
    "~{sake}:*",
    "resetchannels",
    "&{sake}:events",
    "-@all",
    "+ping",
    "+publish",
    "+subscribe",
    "+set",
    "+mget",
    "+scan",
    "+hmget",
    "+zrangebyscore",
    "+zrem",
    "+evalsha",
    "+script|load",
    "+exists",
    "+zcard",
    "+zremrangebyscore",
    "+hset",
    "+hget",
    "+hincrby",
    "+pexpireat",
    "+zadd",
    "+del",
];

fn replica_through(config: &RedisConfig) -> Server {
    Server::from_registry()
        .name(SERVER.0)
        .version(SERVER.1)
        .session_key(KEY)
        .principal(|ext| ext.get::<Who>().map(|w| w.0.to_owned()))
        .event_bus(RedisBus::from_config(config).expect("a Redis configuration"))
        .task_store(RedisTaskStore::from_config(config).expect("a Redis configuration"))
        .task_lease(Duration::from_millis(900))
}

/// A Redis on a shared network: TLS only (a CA made by the test; the server asks for client
/// certificates), the default user off, the replicas signed in as an ACL user allowed only
/// the replicas' keys, channel and commands. Events, ended sessions and tasks cross as
/// without; a replica that does not trust the CA, presents no certificate where one is
/// required, or has the wrong password serves what needs no Redis, and answers a task call
/// with the store's one message.
#[tokio::test]
async fn replicas_share_through_a_tls_redis_as_an_acl_user() {
    logs();
    let mut redis = Redis::start_tls();
    redis.require_auth();
    redis.add_user("sake-replica", "replica-password", ACL_RULES);
    let tls = redis.tls();
    let config = RedisConfig::new(redis.url_as("sake-replica", "replica-password"))
        .ca_certificate_pem(tls.ca_pem.clone())
        .client_certificate_pem(tls.client_cert_pem.clone(), tls.client_key_pem.clone());
    let (a, b) = (
        Wire::new(replica_through(&config)),
        Wire::new(replica_through(&config)),
    );
    subscribed(&redis, 2).await;
    let mut on_a = subscribe(&a, 1, json!({"toolsListChanged": true})).await;
    b.service().notifier().tools_changed();
    assert_eq!(on_a.message().await, note(1, TOOLS));
    // A task created on A, answered and finished through B (every script runs under the ACL).
    let id = create(&a, "confirm", json!({})).await;
    until(&b, &id, "input_required", Duration::from_secs(5)).await;
    let answer = on_task(
        3,
        "tasks/update",
        &id,
        json!({"inputResponses": {"go": {"action": "accept", "content": {"ok": true}}}}),
    );
    b.send(answer).await.json(200);
    let done = until(&a, &id, "completed", Duration::from_secs(5)).await;
    assert_eq!(done["result"]["content"][0]["text"], "confirmed: true");
    // A session ended on A is refused by B.
    let s = a.session("2025-11-25", json!({})).await;
    assert_eq!(s.delete().await.status, 200);
    let on_b = Session {
        wire: &b,
        id: s.id.clone(),
        revision: s.revision,
    };
    let deadline = Instant::now() + Duration::from_secs(2);
    while on_b.rpc(4, "ping", Value::Null).await.status != 404 {
        assert!(
            Instant::now() < deadline,
            "B still serves the ended session"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Nothing outside the user's keys: the ACL is in force.
    assert!(
        redis
            .cli(&["ACL", "DRYRUN", "sake-replica", "GET", "other:key"])
            .is_some_and(|o| o.contains("no permissions")),
        "the replicas' user reaches only its keys"
    );

    // Replicas that cannot get in. Client certificates required from now on.
    assert_eq!(
        redis
            .cli(&["CONFIG", "SET", "tls-auth-clients", "yes"])
            .as_deref()
            .map(str::trim),
        Some("OK")
    );
    let url = redis.url_as("sake-replica", "replica-password");
    let refused = [
        (
            "another CA",
            RedisConfig::new(url.clone())
                .ca_certificate_pem(tls.other_ca_pem.clone())
                .client_certificate_pem(tls.client_cert_pem.clone(), tls.client_key_pem.clone()),
        ),
        (
            "the system's roots",
            RedisConfig::new(url.clone())
                .client_certificate_pem(tls.client_cert_pem.clone(), tls.client_key_pem.clone()),
        ),
        (
            "no client certificate",
            RedisConfig::new(url.clone()).ca_certificate_pem(tls.ca_pem.clone()),
        ),
        (
            "a wrong password",
            RedisConfig::new(redis.url_as("sake-replica", "not-the-password"))
                .ca_certificate_pem(tls.ca_pem.clone())
                .client_certificate_pem(tls.client_cert_pem.clone(), tls.client_key_pem.clone()),
        ),
    ];
    for (why, config) in refused {
        let w = Wire::new(replica_through(&config));
        w.send(Req::modern(1, "tools/call", json!({"name": "hello"})))
            .await
            .assert_json(200, ok(1, text_result(SERVER, "hello")));
        let reply = w.send(call(2, "work", json!({"ms": 10}))).await;
        assert_eq!(reply.json(200)["error"], unavailable(), "{why}");
    }
    // A TLS URL with `#insecure` (the redis crate's way to skip verification) is refused
    // outright; so is a CA for a URL that is not TLS.
    let insecure = RedisBus::from_config(&RedisConfig::new(format!("{url}#insecure")));
    assert!(insecure.unwrap_err().to_string().contains("#insecure"));
    let plain = RedisBus::from_config(
        &RedisConfig::new("redis://127.0.0.1:1/").ca_certificate_pem(tls.ca_pem.clone()),
    );
    assert!(plain.unwrap_err().to_string().contains("not rediss://"));
}

/// Redis killed while a task runs: the calls that need it are answered with the store's one
/// message (never the backend's words: its address, "Redis", the error it gave), which the
/// log has; the replica serves the rest.
#[tokio::test]
async fn a_redis_killed_mid_test_is_answered_without_its_words() {
    logs();
    let mut redis = Redis::start();
    let (a, _b) = two(&redis).await;
    let id = create(&a, "work", json!({"ms": 60_000})).await;
    redis.kill();
    for (n, req) in [
        on_task(2, "tasks/get", &id, json!({})),
        on_task(3, "tasks/cancel", &id, json!({})),
        call(4, "work", json!({"ms": 10})),
    ]
    .into_iter()
    .enumerate()
    {
        let reply = a.send(req).await;
        let body = reply.json(200);
        assert_eq!(body["error"], unavailable(), "{n}: {body}");
    }
    a.send(Req::modern(5, "tools/call", json!({"name": "hello"})))
        .await
        .assert_json(200, ok(5, text_result(SERVER, "hello")));
    logged(&["the task store failed", "Redis"]).await;
}

/// Without a configured session key there is no key for the replicas to share: a shared bus,
/// or the Redis task store, is a start-up error that says what to set.
#[tokio::test]
async fn without_a_session_key_a_redis_bus_or_task_store_does_not_start() {
    let redis = Redis::start();
    let bus = Server::from_registry()
        .name(SERVER.0)
        .event_bus(RedisBus::new(&redis.url()).unwrap())
        .build()
        .unwrap_err();
    assert_eq!(
        bus.to_string(),
        "invalid configuration: a shared event bus (Server::event_bus) needs a session key every replica shares (Server::session_key or SAKE_SESSION_KEY, at least 32 random bytes): replicas authenticate their messages with a key derived from it"
    );
    let store = Server::from_registry()
        .name(SERVER.0)
        .task_store(RedisTaskStore::new(&redis.url()).unwrap())
        .build()
        .unwrap_err();
    assert_eq!(
        store.to_string(),
        "invalid configuration: the task store (Server::task_store) cannot start: the Redis task store needs a session key every replica shares (Server::session_key or SAKE_SESSION_KEY, at least 32 random bytes): its records are authenticated with a key derived from it"
    );
}
