//! What a 2026-07-28 server sends besides results (2026-07-28: notifications without sessions, SSE streams, cancellation):
//! `subscriptions/listen` streams and the notifications published to them, request-scoped
//! logging, and cancellation by closing a response stream. Streams are read event by event
//! (`sake_tests::stream`); every message is validated against the 2026-07-28 schema.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::time::Duration;

use sake::prelude::*;
use sake_tests::rpc::{err, ok, text_result};
use sake_tests::stream::{Item, Live, Open};
use sake_tests::{Req, Wire};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// The server under test

#[path = "../fixtures/noop.rs"]
mod noop;
// `users://{id}/profile`: a filter may name only what the server serves.
#[path = "../fixtures/profile.rs"]
mod profile;

/// Says the tool list changed, from inside a request.
#[tool]
fn touch_tools(ctx: Context) -> &'static str {
    if let Some(n) = ctx.notifier() {
        n.tools_changed();
    }
    "touched"
}

/// Logs one message at every level, then says it is done.
#[tool]
async fn chatty(ctx: Context) -> &'static str {
    for level in LEVELS {
        ctx.log(level, json!({"said": level.as_str()})).await;
    }
    "done"
}

const LEVELS: [LoggingLevel; 8] = [
    LoggingLevel::Debug,
    LoggingLevel::Info,
    LoggingLevel::Notice,
    LoggingLevel::Warning,
    LoggingLevel::Error,
    LoggingLevel::Critical,
    LoggingLevel::Alert,
    LoggingLevel::Emergency,
];

/// Per-test counters of `endless`: steps sent, and whether it saw the cancellation.
static SENT: [AtomicUsize; 3] = [const { AtomicUsize::new(0) }; 3];
static CANCELLED: [AtomicBool; 3] = [const { AtomicBool::new(false) }; 3];

/// Reports progress every 20 ms until the client goes away.
#[tool]
async fn endless(
    /// Which counters to use.
    slot: usize,
    /// Whether to report progress (an SSE response) or stay silent (a JSON one).
    report: bool,
    ctx: Context,
) -> String {
    let watcher = ctx.clone();
    tokio::spawn(async move {
        watcher.cancelled().await;
        CANCELLED[slot].store(true, SeqCst);
    });
    for i in 1u32.. {
        if report {
            ctx.progress(f64::from(i), None).await;
        }
        SENT[slot].fetch_add(1, SeqCst);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    unreachable!()
}

/// A greeting.
#[prompt]
fn hello() -> &'static str {
    "Hello."
}

/// A document.
#[resource(uri = "docs://a", mime_type = "text/plain")]
fn doc_a() -> &'static str {
    "A"
}

const SERVER: (&str, &str) = ("listen", "2.0.0");

fn server() -> Server {
    Server::from_registry().name(SERVER.0).version(SERVER.1)
}

fn wire() -> Wire {
    Wire::new(server())
}

/// A server with tools only: it advertises no prompts and no resources.
fn tools_only() -> Wire {
    Wire::new(
        Server::with_registry(
            sake::Registry::from_defs(inventory::iter::<sake::registry::ToolDef>(), [], [])
                .unwrap(),
        )
        .name(SERVER.0)
        .version(SERVER.1),
    )
}

const SUB: &str = "io.modelcontextprotocol/subscriptionId";

fn listen(id: impl Into<Value>, filter: Value) -> Req {
    Req::modern(id, "subscriptions/listen", json!({"notifications": filter}))
}

fn ack(id: impl Into<Value>, honoured: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": {
        "notifications": honoured,
        "_meta": {SUB: id.into()},
    }})
}

fn note(id: impl Into<Value>, method: &str) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": {"_meta": {SUB: id.into()}}})
}

fn updated(id: impl Into<Value>, uri: &str) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {
        "uri": uri,
        "_meta": {SUB: id.into()},
    }})
}

fn closing(id: impl Into<Value>) -> Value {
    let id = id.into();
    ok(
        id.clone(),
        json!({"resultType": "complete", "_meta": {
            SUB: id,
            "io.modelcontextprotocol/serverInfo": {"name": SERVER.0, "version": SERVER.1},
        }}),
    )
}

const TOOLS: &str = "notifications/tools/list_changed";
const PROMPTS: &str = "notifications/prompts/list_changed";
const RESOURCES: &str = "notifications/resources/list_changed";

fn everything() -> Value {
    json!({
        "toolsListChanged": true,
        "promptsListChanged": true,
        "resourcesListChanged": true,
        "resourceSubscriptions": ["docs://a", "users://1/profile"],
    })
}

/// Opens a listen stream and checks its head and acknowledgement.
async fn subscribe(w: &Wire, id: Value, filter: Value, honoured: Value) -> Open {
    let mut s = w.open(listen(id.clone(), filter)).await;
    s.assert_sse();
    assert_eq!(s.message().await, ack(id, honoured));
    s
}

/// Waits until `f` holds, for up to five seconds.
async fn eventually(what: &str, f: impl Fn() -> bool) {
    for _ in 0..250 {
        if f() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("{what} did not happen within five seconds");
}

// ---------------------------------------------------------------------------------------------
// subscriptions/listen

#[tokio::test]
async fn the_acknowledgement_comes_first_tagged_with_the_listen_id_as_sent() {
    let w = wire();
    // An integer id stays an integer, a string id a string.
    for id in [json!(7), json!("listen:0"), json!(1_723_456_789_012_i64)] {
        let mut s = subscribe(&w, id.clone(), everything(), everything()).await;
        s.assert_quiet_for(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn the_acknowledgement_names_the_honoured_subset() {
    // Only what the server advertises is honoured: a tools-only server drops the rest, and
    // filter members it does not know (the tasks extension's `taskIds`).
    let w = tools_only();
    let mut all = everything();
    all["taskIds"] = json!(["t1"]);
    subscribe(&w, json!(1), all, json!({"toolsListChanged": true})).await;
    subscribe(&w, json!(2), json!({"promptsListChanged": true}), json!({})).await;
    // `false` is not asking.
    let w = wire();
    subscribe(
        &w,
        json!(3),
        json!({"toolsListChanged": false, "promptsListChanged": true, "resourceSubscriptions": []}),
        json!({"promptsListChanged": true, "resourceSubscriptions": []}),
    )
    .await;
    subscribe(&w, json!(4), json!({}), json!({})).await;
}

#[tokio::test]
async fn notifications_reach_only_the_streams_that_asked_each_tagged() {
    let w = wire();
    let mut tools = subscribe(
        &w,
        json!(1),
        json!({"toolsListChanged": true}),
        json!({"toolsListChanged": true}),
    )
    .await;
    let mut prompts = subscribe(
        &w,
        json!("p"),
        json!({"promptsListChanged": true}),
        json!({"promptsListChanged": true}),
    )
    .await;
    let mut resources = subscribe(
        &w,
        json!(3),
        json!({"resourcesListChanged": true}),
        json!({"resourcesListChanged": true}),
    )
    .await;
    let mut doc = subscribe(
        &w,
        json!("d"),
        json!({"resourceSubscriptions": ["docs://a"]}),
        json!({"resourceSubscriptions": ["docs://a"]}),
    )
    .await;
    let mut all = subscribe(&w, json!(5), everything(), everything()).await;
    let notifier = w.service().notifier();
    assert_eq!(notifier.listeners(), 5);

    notifier.tools_changed();
    notifier.prompts_changed();
    notifier.resources_changed();
    notifier.notify_resource_updated("docs://a");
    notifier.notify_resource_updated("docs://unwatched");
    notifier.notify_resource_updated("users://1/profile");

    assert_eq!(tools.message().await, note(1, TOOLS));
    assert_eq!(prompts.message().await, note("p", PROMPTS));
    assert_eq!(resources.message().await, note(3, RESOURCES));
    assert_eq!(doc.message().await, updated("d", "docs://a"));
    for expected in [
        note(5, TOOLS),
        note(5, PROMPTS),
        note(5, RESOURCES),
        updated(5, "docs://a"),
        updated(5, "users://1/profile"),
    ] {
        assert_eq!(all.message().await, expected);
    }
    for s in [&mut tools, &mut prompts, &mut resources, &mut doc, &mut all] {
        s.assert_quiet_for(Duration::from_millis(100)).await;
    }

    // A tool publishes through its context's notifier.
    w.rpc(9, "tools/call", json!({"name": "touch_tools"}))
        .await
        .assert_json(200, ok(9, text_result(SERVER, "touched")));
    assert_eq!(tools.message().await, note(1, TOOLS));
    assert_eq!(all.message().await, note(5, TOOLS));
    prompts.assert_quiet_for(Duration::from_millis(50)).await;

    // A stream the client closed stops listening.
    drop(tools);
    drop(prompts);
    assert_eq!(notifier.listeners(), 3);
}

#[tokio::test]
async fn long_lived_streams_send_keep_alive_comments() {
    let w = Wire::new(server().keep_alive(Duration::from_millis(50)));
    let mut s = subscribe(
        &w,
        json!(1),
        json!({"toolsListChanged": true}),
        json!({"toolsListChanged": true}),
    )
    .await;
    for _ in 0..3 {
        let started = std::time::Instant::now();
        assert_eq!(s.next().await, Some(Item::Comment("keep-alive".into())));
        assert!(started.elapsed() < Duration::from_secs(2));
    }
    // Notifications still come between them.
    w.service().notifier().tools_changed();
    assert_eq!(s.message().await, note(1, TOOLS));
}

#[tokio::test]
async fn missing_or_invalid_notifications_are_invalid_params() {
    let w = wire();
    for (id, params) in [(1, json!({})), (2, json!({"notifications": null}))] {
        w.rpc(id, "subscriptions/listen", params)
            .await
            .assert_json(
                200,
                err(
                    id,
                    -32602,
                    "Invalid params: `subscriptions/listen` needs `notifications` (a SubscriptionFilter object)",
                    None,
                ),
            );
    }
    // Not an object (serde alone would read `[]` as an empty filter, by position).
    for (id, filter, shown) in [
        (3, json!(5), "5"),
        (4, json!("all"), "\"all\""),
        (5, json!([]), "[]"),
        (6, json!([true, true, true]), "[true,true,true]"),
    ] {
        w.rpc(id, "subscriptions/listen", json!({"notifications": filter}))
            .await
            .assert_json(
                200,
                err(
                    id,
                    -32602,
                    &format!(
                        "Invalid params: `notifications` must be a SubscriptionFilter object, not {shown}"
                    ),
                    None,
                ),
            );
    }
    // An object whose members have the wrong types.
    for (id, filter, why) in [
        (
            7,
            json!({"toolsListChanged": "yes"}),
            "invalid type: string \"yes\", expected a boolean",
        ),
        (
            8,
            json!({"resourceSubscriptions": "docs://a"}),
            "invalid type: string \"docs://a\", expected an array of resource URIs",
        ),
    ] {
        w.rpc(id, "subscriptions/listen", json!({"notifications": filter}))
            .await
            .assert_json(
                200,
                err(
                    id,
                    -32602,
                    &format!("Invalid params: `notifications` is not a SubscriptionFilter: {why}"),
                    None,
                ),
            );
    }
}

#[tokio::test]
async fn a_subscriber_that_falls_behind_the_event_buffer_is_closed_gracefully() {
    let w = wire();
    // The stream is opened but not read while more events are published than the buffer
    // holds (1024): it cannot catch up, so it ends with the listen request's result.
    let mut s = w
        .open(listen("slow", json!({"toolsListChanged": true})))
        .await;
    let mut keeping_up = subscribe(
        &w,
        json!("fast"),
        json!({"promptsListChanged": true}),
        json!({"promptsListChanged": true}),
    )
    .await;
    let notifier = w.service().notifier();
    for _ in 0..1100 {
        notifier.tools_changed();
    }
    assert_eq!(
        s.message().await,
        ack("slow", json!({"toolsListChanged": true}))
    );
    assert_eq!(s.message().await, closing("slow"));
    s.assert_end().await;
    // The other stream lagged too (it had read nothing since its acknowledgement).
    assert_eq!(keeping_up.message().await, closing("fast"));
    keeping_up.assert_end().await;
}

#[tokio::test]
async fn shutdown_ends_every_stream_with_its_result() {
    let mut live = Live::start(server()).await;
    let mut by_number = live
        .open(listen(11, json!({"toolsListChanged": true})))
        .await;
    by_number.assert_sse();
    assert_eq!(
        by_number.message().await,
        ack(11, json!({"toolsListChanged": true}))
    );
    let mut by_string = live.open(listen("s-12", everything())).await;
    assert_eq!(by_string.message().await, ack("s-12", everything()));
    live.service().notifier().tools_changed();
    assert_eq!(by_number.message().await, note(11, TOOLS));
    assert_eq!(by_string.message().await, note("s-12", TOOLS));

    live.shutdown().await.expect("serve returns Ok");
    assert_eq!(by_number.message().await, closing(11));
    by_number.assert_end().await;
    assert_eq!(by_string.message().await, closing("s-12"));
    by_string.assert_end().await;
}

// ---------------------------------------------------------------------------------------------
// Logging (2026-07-28 notifications without sessions: progress, logging): per request, at or above `_meta.logLevel`, on that request's stream

fn log_message(level: LoggingLevel) -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {
        "level": level.as_str(),
        "logger": "chatty",
        "data": {"said": level.as_str()},
    }})
}

fn chatty_at(id: i64, level: Option<&str>) -> Req {
    let meta = match level {
        Some(l) => json!({"io.modelcontextprotocol/logLevel": l}),
        None => json!({}),
    };
    Req::modern(id, "tools/call", json!({"name": "chatty", "_meta": meta}))
}

#[tokio::test]
async fn log_messages_only_when_asked_at_or_above_the_level() {
    let w = wire();
    // No level: no messages, a plain JSON answer.
    w.send(chatty_at(1, None))
        .await
        .assert_json(200, ok(1, text_result(SERVER, "done")));
    for (id, level, from) in [(2, "debug", 0), (3, "warning", 3), (4, "emergency", 7)] {
        let reply = w.send(chatty_at(id, Some(level))).await;
        let expected: Vec<Value> = LEVELS[from..]
            .iter()
            .map(|l| log_message(*l))
            .chain([ok(id, text_result(SERVER, "done"))])
            .collect();
        // `sse()` also checks the headers: 200, text/event-stream, X-Accel-Buffering: no.
        assert_eq!(reply.sse(), expected.as_slice(), "level {level}");
    }
}

#[tokio::test]
async fn log_messages_never_go_to_a_listen_stream() {
    let w = wire();
    let mut s = subscribe(&w, json!(1), everything(), everything()).await;
    let reply = w.send(chatty_at(2, Some("debug"))).await;
    assert_eq!(reply.sse().len(), 9);
    s.assert_quiet_for(Duration::from_millis(100)).await;
}

// ---------------------------------------------------------------------------------------------
// Cancellation (2026-07-28 Streamable HTTP transport, "Cancellation"): a client that closes the response stream cancels the request

/// A call of `endless`; with `report`, it asks for progress (an SSE response).
fn endless_call(id: i64, slot: usize, report: bool) -> Req {
    let meta = if report {
        json!({"progressToken": "p"})
    } else {
        json!({})
    };
    Req::modern(
        id,
        "tools/call",
        json!({"name": "endless", "arguments": {"slot": slot, "report": report}, "_meta": meta}),
    )
}

/// After the cancellation, the function is gone: it sends nothing more.
async fn assert_stopped(slot: usize) {
    eventually("the cancellation", || CANCELLED[slot].load(SeqCst)).await;
    let sent = SENT[slot].load(SeqCst);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(SENT[slot].load(SeqCst), sent, "the function kept running");
}

#[tokio::test]
async fn dropping_the_sse_response_cancels_the_request() {
    let w = wire();
    let mut s = w.open(endless_call(1, 0, true)).await;
    s.assert_sse();
    for i in 1..=2 {
        assert_eq!(
            s.message().await,
            json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "p", "progress": f64::from(i)}})
        );
    }
    assert!(!CANCELLED[0].load(SeqCst));
    drop(s);
    assert_stopped(0).await;
}

#[tokio::test]
async fn closing_the_connection_cancels_a_streaming_request() {
    let live = Live::start(server()).await;
    let mut s = live.open(endless_call(1, 1, true)).await;
    s.assert_sse();
    assert_eq!(s.message().await["method"], "notifications/progress");
    drop(s);
    assert_stopped(1).await;
}

#[tokio::test]
async fn closing_the_connection_cancels_a_request_that_has_sent_nothing_yet() {
    let live = Live::start(server()).await;
    let s = live.open_pending(endless_call(1, 2, false)).await;
    eventually("the function starting", || SENT[2].load(SeqCst) > 0).await;
    drop(s);
    assert_stopped(2).await;
}
