use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::*;

const T0: u64 = 1_800_000_000_000;

fn request() -> TaskRequest {
    TaskRequest::new("tools/call", "slow", "2026-07-28")
}

fn new_task(id: &str, principal: Option<&str>, ttl_ms: u64) -> NewTask {
    let mut t = NewTask::new(
        id,
        principal.map(str::to_owned),
        request(),
        Duration::from_millis(ttl_ms),
        Duration::from_millis(1000),
    );
    t.keep = Duration::from_millis(500);
    t
}

fn claim(holder: &str) -> Claim {
    Claim::new(holder, Duration::from_millis(3000))
}

fn record(ttl_ms: u64) -> TaskRecord {
    TaskRecord::new(new_task("t1", None, ttl_ms), &claim("a"), T0)
}

fn map(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

/// A store whose clock the test moves.
fn store() -> (MemoryTaskStore, Arc<AtomicU64>) {
    let now = Arc::new(AtomicU64::new(T0));
    let clock = now.clone();
    let s = MemoryTaskStore::new().with_clock(move || clock.load(Ordering::SeqCst));
    (s, now)
}

fn block<T>(f: StoreFuture<'_, T>) -> T {
    // The memory store's futures are ready at once.
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    let mut f = f;
    match f.as_mut().poll(&mut cx) {
        std::task::Poll::Ready(v) => v.unwrap(),
        std::task::Poll::Pending => panic!("the memory store never waits"),
    }
}

#[test]
fn a_new_task_is_working_held_by_its_creator_and_shows_its_wire_fields() {
    let r = record(300_000);
    assert_eq!(r.status, TaskStatus::Working);
    assert_eq!(r.holder.as_deref(), Some("a"));
    assert_eq!((r.lease_until, r.expires_at), (T0 + 3000, T0 + 300_000));
    assert_eq!(
        serde_json::to_value(r.detailed()).unwrap(),
        json!({"taskId": "t1", "status": "working",
            "createdAt": "2027-01-15T08:00:00.000Z", "lastUpdatedAt": "2027-01-15T08:00:00.000Z",
            "ttlMs": 300_000, "pollIntervalMs": 1000})
    );
}

#[test]
fn working_input_required_working_completed() {
    let mut r = record(300_000);
    let asked = map(json!({
        "a": {"method": "elicitation/create", "params": {"message": "A?"}},
        "b": {"method": "roots/list"}
    }));
    let out = r.update(
        TaskUpdate::InputRequired {
            holder: "a".into(),
            requests: asked.clone(),
        },
        T0 + 10,
    );
    assert_eq!(
        out,
        UpdateOutcome::Held {
            cancel_requested: false
        }
    );
    assert_eq!(r.status, TaskStatus::InputRequired);
    assert_eq!((r.holder.clone(), r.lease_until), (None, 0));
    assert_eq!(r.detailed().input_requests, Some(asked));
    // Only outstanding keys are taken; the rest are ignored. Partial: still waiting.
    let lease = Duration::from_millis(3000);
    let out = r.update(
        TaskUpdate::Answer {
            responses: map(json!({"a": {"action": "decline"}, "zzz": 1})),
            lease,
        },
        T0 + 20,
    );
    assert_eq!(out, UpdateOutcome::Answered { runnable: false });
    assert_eq!(r.status, TaskStatus::InputRequired);
    assert_eq!(
        r.input_requests.keys().collect::<Vec<_>>(),
        ["b"],
        "the answered key is no longer outstanding"
    );
    assert_eq!(r.answers, map(json!({"a": {"action": "decline"}})));
    // An answer to a key already answered changes nothing.
    let v = r.version;
    let out = r.update(
        TaskUpdate::Answer {
            responses: map(json!({"a": {"action": "accept"}})),
            lease,
        },
        T0 + 25,
    );
    assert_eq!(
        (out, r.version),
        (UpdateOutcome::Answered { runnable: false }, v)
    );
    let out = r.update(
        TaskUpdate::Answer {
            responses: map(json!({"b": {"roots": []}})),
            lease,
        },
        T0 + 30,
    );
    assert_eq!(out, UpdateOutcome::Answered { runnable: true });
    assert_eq!(r.status, TaskStatus::Working);
    assert_eq!((r.holder.clone(), r.lease_until), (None, T0 + 3030));
    // The old holder lost it when it asked; anyone may claim it now, once.
    assert!(!r.finish("a", TaskOutcome::Cancelled, T0 + 31));
    assert!(r.claim(&claim("b"), T0 + 40));
    assert!(!r.claim(&claim("c"), T0 + 41));
    assert!(r.finish("b", TaskOutcome::Completed(json!({"content": []})), T0 + 50));
    assert_eq!(r.status, TaskStatus::Completed);
    let d = r.detailed();
    assert_eq!(d.result, Some(json!({"content": []})));
    assert_eq!((d.input_requests, d.error), (None, None));
    // Terminal: nothing changes it any more.
    assert_eq!(r.cancel(T0 + 60), CancelOutcome::AlreadyEnded);
    assert!(!r.claim(&claim("d"), T0 + 60));
    assert_eq!(r.status, TaskStatus::Completed);
}

#[test]
fn a_failure_carries_the_error_and_a_status_message() {
    let mut r = record(300_000);
    assert!(r.finish("a", TaskOutcome::Failed(RpcError::internal("boom")), T0 + 5));
    let d = serde_json::to_value(r.detailed()).unwrap();
    assert_eq!(d["status"], "failed");
    assert_eq!(d["statusMessage"], "boom");
    assert_eq!(d["error"], json!({"code": -32603, "message": "boom"}));
    assert!(d.get("result").is_none());
    assert_eq!(d["lastUpdatedAt"], "2027-01-15T08:00:00.005Z");
}

#[test]
fn cancellation_in_each_state() {
    // Running: flagged; the holder learns it on its next heartbeat and ends it.
    let mut r = record(300_000);
    assert_eq!(r.cancel(T0 + 1), CancelOutcome::Requested);
    assert_eq!(r.status, TaskStatus::Working);
    let beat = TaskUpdate::Heartbeat {
        holder: "a".into(),
        lease: Duration::from_secs(3),
    };
    assert_eq!(
        r.update(beat.clone(), T0 + 2),
        UpdateOutcome::Held {
            cancel_requested: true
        }
    );
    assert!(!r.claim(&claim("b"), T0 + 10_000), "nobody runs it again");
    assert!(r.finish("a", TaskOutcome::Cancelled, T0 + 3));
    assert_eq!(r.status, TaskStatus::Cancelled);
    assert_eq!(
        r.status_message.as_deref(),
        Some("Cancelled by client request")
    );
    assert_eq!(r.update(beat, T0 + 4), UpdateOutcome::Lost);

    // A result that arrives after the request is kept.
    let mut r = record(300_000);
    r.cancel(T0 + 1);
    assert!(r.finish("a", TaskOutcome::Completed(json!({})), T0 + 2));
    assert_eq!(r.status, TaskStatus::Completed);

    // Waiting for input: cancelled at once.
    let mut r = record(300_000);
    r.update(
        TaskUpdate::InputRequired {
            holder: "a".into(),
            requests: map(json!({"q": {"method": "roots/list"}})),
        },
        T0 + 1,
    );
    assert_eq!(r.cancel(T0 + 2), CancelOutcome::Cancelled);
    assert_eq!(r.status, TaskStatus::Cancelled);
    assert!(r.input_requests.is_empty());

    // Working with a holder whose lease lapsed: nobody runs it, cancelled at once.
    let mut r = record(300_000);
    assert_eq!(r.cancel(T0 + 3000), CancelOutcome::Cancelled);

    // Asked to cancel, then the function asks a question: it stops there, cancelled.
    let mut r = record(300_000);
    r.cancel(T0 + 1);
    let out = r.update(
        TaskUpdate::InputRequired {
            holder: "a".into(),
            requests: map(json!({"q": {"method": "roots/list"}})),
        },
        T0 + 2,
    );
    assert_eq!(
        (out, r.status),
        (UpdateOutcome::Lost, TaskStatus::Cancelled)
    );
}

#[test]
fn time_fails_unfinished_tasks_then_deletes_them() {
    // Past its TTL while running: failed, kept `keep_ms` more, then deleted.
    let mut r = record(10_000);
    r.update(
        TaskUpdate::Heartbeat {
            holder: "a".into(),
            lease: Duration::from_secs(60),
        },
        T0 + 1,
    );
    assert_eq!(r.next_due(), T0 + 10_000);
    assert_eq!(r.expire(T0 + 9_999), Expiry::Keep(T0 + 10_000));
    assert_eq!(r.expire(T0 + 10_000), Expiry::Changed(T0 + 10_500));
    let d = serde_json::to_value(r.detailed()).unwrap();
    assert_eq!(d["status"], "failed");
    assert_eq!(
        d["error"],
        json!({"code": -32603, "message": "Task expired before completion: its time to live elapsed"})
    );
    assert_eq!(r.expire(T0 + 10_499), Expiry::Keep(T0 + 10_500));
    assert_eq!(r.expire(T0 + 10_500), Expiry::Delete);

    // A holder that stops renewing: failed when its lease lapses.
    let mut r = record(300_000);
    assert_eq!(r.expire(T0 + 3000), Expiry::Changed(T0 + 300_000));
    assert_eq!(r.status, TaskStatus::Failed);
    assert_eq!(
        r.error.as_ref().unwrap()["message"],
        "Task interrupted: the server running it stopped before it finished; call the tool again"
    );

    // A finished task is kept its whole TTL, and `keep_ms` after it ends at least.
    let mut r = record(10_000);
    r.finish("a", TaskOutcome::Cancelled, T0 + 100);
    assert_eq!(r.expire(T0 + 9_999), Expiry::Keep(T0 + 10_000));
    let mut late = record(10_000);
    late.finish("a", TaskOutcome::Cancelled, T0 + 9_900);
    assert_eq!(late.expires_at, T0 + 10_400);
}

#[test]
fn the_memory_store_bounds_tasks_globally_and_per_caller() {
    let (s, _now) = store();
    let s = s.max_tasks(3).max_tasks_per_principal(2);
    let mk = |id: &str, p: Option<&str>| TaskRecord::new(new_task(id, p, 60_000), &claim("a"), T0);
    block(s.create(mk("1", Some("alice"))));
    block(s.create(mk("2", Some("alice"))));
    let e = s.create(mk("3", Some("alice")));
    let e = futures_util::FutureExt::now_or_never(e)
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(
            &e,
            TaskStoreError::Full {
                per_principal: true,
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "this caller holds 2 tasks, the limit per caller; retry once some have ended and expired"
    );
    // Anonymous callers are a caller of their own.
    block(s.create(mk("3", None)));
    let e = futures_util::FutureExt::now_or_never(s.create(mk("4", Some("bob"))))
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(
            &e,
            TaskStoreError::Full {
                per_principal: false,
                ..
            }
        ),
        "{e:?}"
    );
    let e = futures_util::FutureExt::now_or_never(s.create(mk("3", Some("bob"))))
        .unwrap()
        .unwrap_err();
    assert!(matches!(e, TaskStoreError::Duplicate), "{e:?}");
    assert_eq!(s.len(), 3);
}

#[test]
fn anonymous_callers_count_by_their_network() {
    let (s, _now) = store();
    let s = s.max_tasks(10).max_tasks_per_principal(2);
    let anon = |id: &str, net: &str| {
        let mut new = new_task(id, None, 60_000);
        new.counted_as = Some(net.to_owned());
        TaskRecord::new(new, &claim("a"), T0)
    };
    block(s.create(anon("1", "net-a")));
    block(s.create(anon("2", "net-a")));
    let e = futures_util::FutureExt::now_or_never(s.create(anon("3", "net-a")))
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(
            &e,
            TaskStoreError::Full {
                per_principal: true,
                ..
            }
        ),
        "{e:?}"
    );
    // Another anonymous network has a count of its own; the tasks stay anonymous.
    block(s.create(anon("3", "net-b")));
    block(s.create(anon("4", "net-b")));
    let r = block(s.get("4")).unwrap();
    assert_eq!(
        (r.principal.as_deref(), r.count_key()),
        (None, Some("net-b"))
    );
}

#[test]
fn the_memory_store_expires_what_is_due_and_frees_its_room() {
    let (s, now) = store();
    let s = s.max_tasks(2);
    let mk = |id: &str, ttl| TaskRecord::new(new_task(id, None, ttl), &claim("a"), T0);
    block(s.create(mk("short", 1_000)));
    block(s.create(mk("long", 60_000)));
    // Both hold leases of 3 s: renew the long one's so only TTLs matter.
    for (id, lease) in [("short", 60), ("long", 120)] {
        block(s.update(
            id,
            TaskUpdate::Heartbeat {
                holder: "a".into(),
                lease: Duration::from_secs(lease),
            },
        ));
    }
    now.store(T0 + 1_000, Ordering::SeqCst);
    // Failed at its TTL, readable for `keep` (500 ms) more.
    let r = block(s.get("short")).unwrap();
    assert_eq!(r.status, TaskStatus::Failed);
    assert_eq!(block(s.get("long")).unwrap().status, TaskStatus::Working);
    now.store(T0 + 1_500, Ordering::SeqCst);
    assert_eq!(block(s.get("short")), None);
    assert_eq!(s.len(), 1);
    // Its room is free again.
    block(s.create(mk("again", 60_000)));
    assert_eq!(block(s.expire()), 0);
    // A holder that dies: failed when its lease lapses (the hook of shared stores).
    now.store(T0 + 120_000, Ordering::SeqCst);
    assert_eq!(block(s.expire()), 2, "long: ttl; again: lease");
    assert_eq!(block(s.get("again")).unwrap().status, TaskStatus::Failed);
}

#[test]
fn the_memory_store_applies_each_step_atomically() {
    let (s, _) = store();
    block(s.create(TaskRecord::new(
        new_task("t", Some("p"), 60_000),
        &claim("a"),
        T0,
    )));
    assert_eq!(block(s.claim("t", &claim("b"))), None, "held by a");
    assert_eq!(
        block(s.update(
            "t",
            TaskUpdate::InputRequired {
                holder: "a".into(),
                requests: map(json!({"q": {"method": "roots/list"}})),
            }
        )),
        UpdateOutcome::Held {
            cancel_requested: false
        }
    );
    assert_eq!(
        block(s.update(
            "t",
            TaskUpdate::Answer {
                responses: map(json!({"q": {"roots": []}})),
                lease: Duration::from_secs(3)
            }
        )),
        UpdateOutcome::Answered { runnable: true }
    );
    let taken = block(s.claim("t", &claim("b"))).unwrap();
    assert_eq!(taken.answers, map(json!({"q": {"roots": []}})));
    assert_eq!(block(s.claim("t", &claim("c"))), None);
    assert!(!block(s.finish("t", "a", TaskOutcome::Cancelled)));
    assert!(block(s.finish("t", "b", TaskOutcome::Completed(json!({})))));
    assert_eq!(block(s.cancel("t")), CancelOutcome::AlreadyEnded);
    assert_eq!(block(s.cancel("nope")), CancelOutcome::NotFound);
    assert_eq!(
        block(s.update(
            "nope",
            TaskUpdate::Heartbeat {
                holder: "a".into(),
                lease: Duration::from_secs(1)
            }
        )),
        UpdateOutcome::NotFound
    );
    assert!(block(s.get("t")).unwrap().belongs_to(Some("p")));
    assert!(!block(s.get("t")).unwrap().belongs_to(None));
}

#[test]
fn task_ids_are_128_random_bits() {
    let a = new_task_id().unwrap();
    let b = new_task_id().unwrap();
    assert_eq!(a.len(), 32);
    assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
    assert_ne!(a, b);
}

#[test]
fn the_memory_store_bounds_the_bytes_of_tasks_per_caller_and_in_all() {
    let (s, now) = store();
    let mk = |id: &str, p: &str| TaskRecord::new(new_task(id, Some(p), 60_000), &claim("a"), T0);
    let one = serde_json::to_vec(&mk("1", "alice")).unwrap().len();
    let s = s
        .max_task_bytes_per_principal(2 * one + one / 2)
        .max_task_bytes(6 * one);
    block(s.create(mk("1", "alice")));
    block(s.create(mk("2", "alice")));
    let refused = |r: TaskRecord| {
        futures_util::FutureExt::now_or_never(s.create(r))
            .unwrap()
            .unwrap_err()
    };
    let e = refused(mk("3", "alice"));
    assert!(
        matches!(
            &e,
            TaskStoreError::Full {
                per_principal: true,
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        format!(
            "this caller's tasks hold {} bytes and this one needs {one}, past the limit per caller of {} (MemoryTaskStore::max_task_bytes_per_principal); retry once some have ended and expired",
            2 * one,
            2 * one + one / 2
        )
    );
    // A result makes a task heavier: counted once the task finishes.
    block(s.create(mk("3", "bob")));
    let result = json!({"content": [{"type": "text", "text": "x".repeat(one)}]});
    assert!(block(s.finish("3", "a", TaskOutcome::Completed(result))));
    let e = refused(mk("4", "bob"));
    assert!(
        matches!(
            &e,
            TaskStoreError::Full {
                per_principal: true,
                ..
            }
        ),
        "{e:?}"
    );
    block(s.create(mk("4", "carol")));
    let e = refused(mk("5", "dave"));
    assert!(
        matches!(
            &e,
            TaskStoreError::Full {
                per_principal: false,
                ..
            }
        ),
        "{e:?}"
    );
    assert!(
        e.to_string().contains("past its limit of ")
            && e.to_string().contains("(MemoryTaskStore::max_task_bytes)"),
        "{e}"
    );
    // Expired tasks give their bytes back (an unfinished one fails at its time to live, and
    // is kept a while after).
    now.store(T0 + 120_000, Ordering::SeqCst);
    block(s.expire());
    now.store(T0 + 300_000, Ordering::SeqCst);
    block(s.expire());
    assert_eq!(s.len(), 0);
    let later = |id: &str, p: &str| {
        TaskRecord::new(new_task(id, Some(p), 60_000), &claim("a"), T0 + 300_000)
    };
    block(s.create(later("5", "dave")));
    block(s.create(later("6", "alice")));
    block(s.create(later("7", "alice")));
    assert_eq!(s.len(), 3);
}
