//! Replicas sharing one Redis (feature `redis`): two services in this process, each with its
//! own `RedisBus` and `RedisTaskStore` against a real `redis-server` started on a free port
//! (`sake_tests::redis`), as two machines would be. What one replica publishes reaches the
//! other's listeners once; a session ended on one is refused by the other; a task created on
//! one is read, answered, cancelled and finished through the other; a replica that dies with
//! a task running leaves it failed; and Redis down at start, restarted, or slow costs what
//! docs/deploying.md says and heals by itself.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::{Duration, Instant};

use sake::prelude::*;
use sake::redis::{RedisBus, RedisTaskStore};
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
    assert_eq!(e["code"], -32603, "{e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .starts_with("Internal error: the task store failed: Redis: "),
        "{e}"
    );
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
