//! `RedisTaskStore` against a real `redis-server` (`sake_tests::redis`), through the
//! `TaskStore` trait the engine uses: the bounds and their exact refusals, every change made
//! atomically while replicas race, and expiry that fails a task whose holder stopped, then
//! deletes it and frees its room. Each store is started with the replicas' key, as a server
//! starts it; one that is not, or is given a key no other replica has, refuses.

use std::sync::Arc;
use std::time::Duration;

use sake::redis::RedisTaskStore;
use sake::tasks::{
    CancelOutcome, Claim, NewTask, ReplicaKey, TaskOutcome, TaskRecord, TaskRequest, TaskStatus,
    TaskStore, TaskStoreError, TaskUpdate, UpdateOutcome,
};
use sake_tests::redis::Redis;
use serde_json::{Map, Value, json};

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

fn task(id: &str, principal: Option<&str>, ttl: Duration, lease: Duration) -> TaskRecord {
    let mut t = NewTask::new(
        id,
        principal.map(str::to_owned),
        TaskRequest::new("tools/call", "slow", "2026-07-28"),
        ttl,
        Duration::from_secs(1),
    );
    t.keep = Duration::from_millis(300);
    TaskRecord::new(t, &Claim::new("a-1", lease), now())
}

fn long(id: &str, principal: Option<&str>) -> TaskRecord {
    task(
        id,
        principal,
        Duration::from_secs(60),
        Duration::from_secs(30),
    )
}

/// A store on `redis`, started with the key replicas of a server named `tests` derive.
fn store(redis: &Redis) -> RedisTaskStore {
    let s = RedisTaskStore::new(&redis.url()).unwrap();
    let key = ReplicaKey::new(b"the session key of these tests, 32+ bytes", &[], "tests");
    s.start(&key.unwrap()).unwrap();
    s
}

fn map(v: Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

#[tokio::test]
async fn bounds_in_all_and_per_caller_with_the_memory_stores_refusals() {
    let redis = Redis::start();
    let s = store(&redis).max_tasks(3).max_tasks_per_principal(2);
    s.create(long("1", Some("alice"))).await.unwrap();
    s.create(long("2", Some("alice"))).await.unwrap();
    let e = s.create(long("3", Some("alice"))).await.unwrap_err();
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
    s.create(long("3", None)).await.unwrap();
    let e = s.create(long("4", Some("bob"))).await.unwrap_err();
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
    assert_eq!(
        e.to_string(),
        "the server holds 3 tasks, its limit; retry once some have ended and expired"
    );
    let e = s.create(long("3", Some("bob"))).await.unwrap_err();
    assert!(matches!(e, TaskStoreError::Duplicate), "{e:?}");
    assert_eq!(s.get("1").await.unwrap(), Some(long_like("1", &s).await));
    assert_eq!(s.get("nope").await.unwrap(), None);
}

async fn long_like(id: &str, s: &RedisTaskStore) -> TaskRecord {
    s.get(id).await.unwrap().unwrap()
}

/// Twenty replicas answer one question each of twenty, at once: every answer is kept (no
/// write is lost to another), and the task is runnable once, after the last.
#[tokio::test]
async fn racing_changes_are_each_applied_once() {
    let redis = Redis::start();
    let s = Arc::new(store(&redis));
    s.create(long("t", None)).await.unwrap();
    let questions: Map<String, Value> = (0..20)
        .map(|i| (format!("q{i}"), json!({"method": "elicitation/create"})))
        .collect();
    let asked = s
        .update(
            "t",
            TaskUpdate::InputRequired {
                holder: "a-1".into(),
                requests: questions,
            },
        )
        .await
        .unwrap();
    assert_eq!(
        asked,
        UpdateOutcome::Held {
            cancel_requested: false
        }
    );
    let answers = (0..20).map(|i| {
        let s = s.clone();
        tokio::spawn(async move {
            s.update(
                "t",
                TaskUpdate::Answer {
                    responses: map(json!({format!("q{i}"): {"action": "accept"}})),
                    lease: Duration::from_secs(5),
                },
            )
            .await
            .unwrap()
        })
    });
    let mut runnable = 0;
    for a in answers {
        match a.await.unwrap() {
            UpdateOutcome::Answered { runnable: true } => runnable += 1,
            UpdateOutcome::Answered { runnable: false } => {}
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(runnable, 1);
    let t = s.get("t").await.unwrap().unwrap();
    assert_eq!(t.status, TaskStatus::Working);
    assert_eq!(t.answers.len(), 20);
    assert!(t.input_requests.is_empty());
    // Two replicas race to run it on: one claims it.
    let (b, c) = (
        Claim::new("b-1", Duration::from_secs(5)),
        Claim::new("c-1", Duration::from_secs(5)),
    );
    let (one, two) = tokio::join!(s.claim("t", &b), s.claim("t", &c));
    assert_eq!(
        [one.unwrap().is_some(), two.unwrap().is_some()]
            .iter()
            .filter(|c| **c)
            .count(),
        1
    );
}

#[tokio::test]
async fn cancel_finish_and_a_lost_holder() {
    let redis = Redis::start();
    let s = store(&redis);
    s.create(long("t", None)).await.unwrap();
    assert_eq!(s.cancel("t").await.unwrap(), CancelOutcome::Requested);
    assert_eq!(
        s.update(
            "t",
            TaskUpdate::Heartbeat {
                holder: "a-1".into(),
                lease: Duration::from_secs(30)
            }
        )
        .await
        .unwrap(),
        UpdateOutcome::Held {
            cancel_requested: true
        }
    );
    assert!(s.finish("t", "a-1", TaskOutcome::Cancelled).await.unwrap());
    let t = s.get("t").await.unwrap().unwrap();
    assert_eq!(t.status, TaskStatus::Cancelled);
    assert_eq!(
        t.status_message.as_deref(),
        Some("Cancelled by client request")
    );
    assert_eq!(s.cancel("t").await.unwrap(), CancelOutcome::AlreadyEnded);
    // Another holder's outcome is dropped.
    s.create(long("u", None)).await.unwrap();
    assert!(
        !s.finish("u", "someone-else", TaskOutcome::Cancelled)
            .await
            .unwrap()
    );
    assert_eq!(
        s.update(
            "u",
            TaskUpdate::Heartbeat {
                holder: "someone-else".into(),
                lease: Duration::from_secs(1)
            }
        )
        .await
        .unwrap(),
        UpdateOutcome::Lost
    );
    assert_eq!(s.cancel("nope").await.unwrap(), CancelOutcome::NotFound);
}

#[tokio::test]
async fn expiry_fails_a_task_whose_holder_stopped_then_deletes_it_and_frees_its_room() {
    let redis = Redis::start();
    let s = store(&redis).max_tasks(1).max_tasks_per_principal(1);
    s.create(task(
        "t",
        Some("p"),
        Duration::from_millis(1000),
        Duration::from_millis(200),
    ))
    .await
    .unwrap();
    assert_eq!(s.expire().await.unwrap(), 0);
    tokio::time::sleep(Duration::from_millis(250)).await;
    assert_eq!(s.expire().await.unwrap(), 1);
    let t = s.get("t").await.unwrap().unwrap();
    assert_eq!(t.status, TaskStatus::Failed);
    assert_eq!(
        t.error,
        Some(
            json!({"code": -32603, "message": "Task interrupted: the server running it stopped before it finished; call the tool again"})
        )
    );
    // Kept until its time to live is over (at least `keep`, 300 ms, after it ended), then
    // deleted with its index entries.
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(s.get("t").await.unwrap(), None);
    assert_eq!(s.expire().await.unwrap(), 1);
    for key in ["{sake}:tasks:all", "{sake}:tasks:by:p", "{sake}:tasks:due"] {
        assert_eq!(
            redis.cli(&["ZCARD", key]).map(|o| o.trim().to_owned()),
            Some("0".to_owned()),
            "{key}"
        );
    }
    assert_eq!(
        redis
            .cli(&["EXISTS", "{sake}:task:t"])
            .as_deref()
            .map(str::trim),
        Some("0")
    );
    s.create(long("v", Some("p"))).await.unwrap();
}

#[tokio::test]
async fn a_store_not_started_with_a_shared_key_refuses() {
    let redis = Redis::start();
    // Not started: nothing is read or written.
    let s = RedisTaskStore::new(&redis.url()).unwrap();
    let e = s.create(long("t", None)).await.unwrap_err();
    assert_eq!(
        e.to_string(),
        "the task store failed: the Redis task store was not started: a server starts it with its replicas' key (TaskStore::start)"
    );
    assert!(s.get("t").await.is_err());
    // Another server's key (another name, same session key) does not open this one's records.
    let ours = store(&redis);
    ours.create(long("t", Some("alice"))).await.unwrap();
    let theirs = RedisTaskStore::new(&redis.url()).unwrap();
    let key = ReplicaKey::new(b"the session key of these tests, 32+ bytes", &[], "other");
    theirs.start(&key.unwrap()).unwrap();
    let e = theirs.get("t").await.unwrap_err();
    assert_eq!(
        e.to_string(),
        "the task store failed: the record of task t in Redis is refused: its MAC does not verify"
    );
    assert_eq!(ours.get("t").await.unwrap().unwrap().id, "t");
}
