//! [`RedisTaskStore`]: tasks kept in Redis, read and changed by every replica.
//!
//! Each task is a hash (`c`: a counter of writes, `r`: the [`TaskRecord`] as JSON, sealed
//! with the replicas' key) that expires with the task. A record that does not verify, or
//! that names another task than its key, is refused (and logged), never acted on. A change reads the task, applies the transition of
//! [`TaskRecord`] in Rust, and writes it back with a script that checks the counter is
//! unchanged (compare-and-swap), retrying when another replica wrote in between. Three
//! sorted sets index the tasks: all of them and each caller's by when they are deleted
//! (for the bounds), and all by when time next decides something about them (for expiry).

use std::sync::{LazyLock, OnceLock};

use ::redis::Script;

use super::{InvalidUrl, Link, RedisConfig, Refusals, tag};
use crate::tasks::{
    CancelOutcome, Claim, Expiry, ReplicaKey, StoreFuture, TaskCounts, TaskOutcome, TaskRecord,
    TaskStore, TaskStoreError, TaskUpdate, UpdateOutcome, now_ms,
};

/// What sealed task records are bound to ([`ReplicaKey::seal`]).
const CONTEXT: &str = "task";

/// How many times a change is tried again when other replicas keep changing the task.
const CAS_ATTEMPTS: usize = 32;
/// How long a task's key outlives the task in Redis: expiry deletes it with its index
/// entries; Redis's own expiry is the backstop when no replica runs any more.
const KEY_GRACE_MS: u64 = 60_000;

/// How many due tasks one call of `expire` looks at.
const EXPIRE_BATCH: isize = 256;

/// KEYS: task, all, by principal, due. ARGV: record JSON, expires at, next due, now,
/// max total, max per principal, id, when the key expires.
static CREATE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', ARGV[4])
if redis.call('EXISTS', KEYS[1]) == 1 then return -3 end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[5]) then return -1 end
if redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[6]) then return -2 end
redis.call('HSET', KEYS[1], 'c', '1', 'r', ARGV[1])
redis.call('PEXPIREAT', KEYS[1], ARGV[8])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[7])
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[7])
redis.call('ZADD', KEYS[4], ARGV[3], ARGV[7])
return 1
",
    )
});

/// KEYS: task, all, by principal, due. ARGV: counter read, record JSON, expires at, next
/// due, id, when the key expires. 0: the task changed meanwhile (or is gone).
static WRITE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
if redis.call('HGET', KEYS[1], 'c') ~= ARGV[1] then return 0 end
redis.call('HINCRBY', KEYS[1], 'c', 1)
redis.call('HSET', KEYS[1], 'r', ARGV[2])
redis.call('PEXPIREAT', KEYS[1], ARGV[6])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[5])
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[5])
redis.call('ZADD', KEYS[4], ARGV[4], ARGV[5])
return 1
",
    )
});

/// KEYS: task, all, by principal, due. ARGV: counter read, id.
static DELETE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
if redis.call('HGET', KEYS[1], 'c') ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[2])
redis.call('ZREM', KEYS[3], ARGV[2])
redis.call('ZREM', KEYS[4], ARGV[2])
return 1
",
    )
});

/// Tasks kept in Redis: any replica sharing it creates, reads, answers, cancels and finishes
/// any task, and one that dies with a task running leaves it to the others, which fail it
/// once its holder's lease lapses (30 s without a heartbeat).
///
/// Bounded like [`MemoryTaskStore`](crate::tasks::MemoryTaskStore): at most
/// [`max_tasks`](Self::max_tasks) in all (10 000 by default) and
/// [`max_tasks_per_principal`](Self::max_tasks_per_principal) per caller (1 000), finished
/// ones included until they expire. Every task key expires in Redis with the task.
///
/// Redis unreachable or slower than 1 s: the call fails with -32603 and a message saying the
/// task store is unavailable (the detail goes to the log); nothing is half-written (each
/// change is one script). The replicas' clocks decide expiry: keep them synchronised (NTP).
///
/// Each record is sealed with the replicas' key ([`TaskStore::start`] gives it; derived from
/// the session key): a record someone else wrote or changed in Redis — another owner, another
/// result — fails like an unreachable Redis and is logged, and expiry leaves it alone. The
/// server refuses to start this store without a configured session key.
pub struct RedisTaskStore {
    link: Link,
    tag: String,
    counts: TaskCounts,
    key: OnceLock<ReplicaKey>,
    refusals: Refusals,
}

impl std::fmt::Debug for RedisTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisTaskStore")
            .field("prefix", &self.tag)
            .field("max_tasks", &self.counts.all)
            .field("max_tasks_per_principal", &self.counts.per_principal)
            .finish_non_exhaustive()
    }
}

/// What a change does to the stored task.
enum Write {
    Nothing,
    Put,
    Delete,
}

type Read = Option<(String, TaskRecord)>;

/// Why a stored record is not acted on.
enum Unread {
    /// Redis failed, or the store was not started.
    Failed(TaskStoreError),
    /// The record failed its integrity check (logged).
    Refused(TaskStoreError),
}

impl From<TaskStoreError> for Unread {
    fn from(e: TaskStoreError) -> Self {
        Unread::Failed(e)
    }
}

impl From<Unread> for TaskStoreError {
    fn from(e: Unread) -> Self {
        match e {
            Unread::Failed(e) | Unread::Refused(e) => e,
        }
    }
}

impl RedisTaskStore {
    /// A store in the Redis at `url` (`redis://[user:password@]host[:port][/db]`, or
    /// `rediss://…` for TLS with the system's roots), with the prefix `sake`. Nothing
    /// connects until it is first used.
    pub fn new(url: &str) -> Result<RedisTaskStore, InvalidUrl> {
        RedisTaskStore::from_config(&RedisConfig::new(url))
    }

    /// A store whose keys start with `{prefix}` (servers sharing one Redis need different
    /// prefixes; the replicas of one server the same).
    pub fn with_prefix(url: &str, prefix: &str) -> Result<RedisTaskStore, InvalidUrl> {
        RedisTaskStore::from_config(&RedisConfig::new(url).prefix(prefix))
    }

    /// A store in the Redis `config` describes (its URL, prefix and TLS settings).
    pub fn from_config(config: &RedisConfig) -> Result<RedisTaskStore, InvalidUrl> {
        Ok(RedisTaskStore {
            link: Link::open(config, "task store")?,
            tag: tag(&config.prefix),
            counts: TaskCounts::default(),
            key: OnceLock::new(),
            refusals: Refusals::new("task store"),
        })
    }

    /// The replicas' key, once a server started the store.
    fn key(&self) -> Result<&ReplicaKey, TaskStoreError> {
        self.key.get().ok_or_else(|| {
            TaskStoreError::Backend(
                "the Redis task store was not started: a server starts it with its replicas' key (TaskStore::start)".into(),
            )
        })
    }

    /// The record as kept: its JSON, sealed.
    fn seal(&self, record: &TaskRecord) -> Result<String, TaskStoreError> {
        let json =
            serde_json::to_string(record).map_err(|e| TaskStoreError::Backend(e.to_string()))?;
        Ok(self.key()?.seal(CONTEXT, &json))
    }

    /// At most this many tasks in all (at least 1).
    #[must_use]
    pub fn max_tasks(mut self, tasks: usize) -> Self {
        self.counts.set_all(tasks);
        self
    }

    /// At most this many tasks per caller (at least 1): a principal, or an anonymous caller's
    /// network (its address, or its /64).
    #[must_use]
    pub fn max_tasks_per_principal(mut self, tasks: usize) -> Self {
        self.counts.set_per_principal(tasks);
        self
    }

    fn task_key(&self, id: &str) -> String {
        format!("{}:task:{id}", self.tag)
    }

    fn keys(&self, record: &TaskRecord) -> [String; 4] {
        [
            self.task_key(&record.id),
            format!("{}:tasks:all", self.tag),
            format!(
                "{}:tasks:by:{}",
                self.tag,
                record.count_key().unwrap_or("-")
            ),
            self.due_key(),
        ]
    }

    fn due_key(&self) -> String {
        format!("{}:tasks:due", self.tag)
    }

    /// The task and the counter of its writes; `None` when absent or (unless `gone_too`)
    /// past its end.
    async fn read(&self, id: &str, gone_too: bool) -> Result<Read, Unread> {
        let replica_key = self.key()?;
        let key = self.task_key(id);
        let (counter, json): (Option<String>, Option<String>) = self
            .link
            .run(|mut conn| async move {
                ::redis::cmd("HMGET")
                    .arg(&key)
                    .arg("c")
                    .arg("r")
                    .query_async(&mut conn)
                    .await
            })
            .await
            .map_err(backend)?;
        let (Some(counter), Some(sealed)) = (counter, json) else {
            return Ok(None);
        };
        let refuse = |why: &str| {
            self.refusals.refused(why, sealed.as_bytes());
            Unread::Refused(TaskStoreError::Backend(format!(
                "the record of task {id} in Redis is refused: {why}"
            )))
        };
        let Some(json) = replica_key.open(CONTEXT, &sealed) else {
            return Err(refuse("its MAC does not verify"));
        };
        let record: TaskRecord = match serde_json::from_str(json) {
            Ok(r) => r,
            Err(_) => return Err(refuse("authenticated, but not a record this version reads")),
        };
        if record.id != id {
            return Err(refuse("it is another task's record"));
        }
        if !gone_too && record.is_gone(now_ms()) {
            return Ok(None);
        }
        Ok(Some((counter, record)))
    }

    /// Writes `record` over the version read (`counter`); `false`: it changed meanwhile.
    async fn write(
        &self,
        counter: &str,
        record: &TaskRecord,
        write: Write,
    ) -> Result<bool, TaskStoreError> {
        let keys = self.keys(record);
        let id = record.id.clone();
        let done: i64 = match write {
            Write::Nothing => return Ok(true),
            Write::Put => {
                let json = self.seal(record)?;
                let (expires_at, due) = (record.expires_at, record.next_due());
                self.link
                    .run(|mut conn| async move {
                        WRITE
                            .key(&keys[..])
                            .arg(counter)
                            .arg(json)
                            .arg(expires_at)
                            .arg(due)
                            .arg(id)
                            .arg(expires_at.saturating_add(KEY_GRACE_MS))
                            .invoke_async(&mut conn)
                            .await
                    })
                    .await
                    .map_err(backend)?
            }
            Write::Delete => self
                .link
                .run(|mut conn| async move {
                    DELETE
                        .key(&keys[..])
                        .arg(counter)
                        .arg(id)
                        .invoke_async(&mut conn)
                        .await
                })
                .await
                .map_err(backend)?,
        };
        Ok(done == 1)
    }

    /// Applies `change` to the task atomically (compare-and-swap, tried again while other
    /// replicas change it). `None`: no such task (or, unless `gone_too`, one past its end).
    async fn change<T>(
        &self,
        id: &str,
        gone_too: bool,
        change: impl Fn(&mut TaskRecord, u64) -> (T, Write),
    ) -> Result<Option<T>, TaskStoreError> {
        Ok(self.change_or_refuse(id, gone_too, change).await?)
    }

    /// [`change`](Self::change), telling a refused record from a failure.
    async fn change_or_refuse<T>(
        &self,
        id: &str,
        gone_too: bool,
        change: impl Fn(&mut TaskRecord, u64) -> (T, Write),
    ) -> Result<Option<T>, Unread> {
        for _ in 0..CAS_ATTEMPTS {
            let Some((counter, mut record)) = self.read(id, gone_too).await? else {
                return Ok(None);
            };
            let (out, write) = change(&mut record, now_ms());
            if self.write(&counter, &record, write).await? {
                return Ok(Some(out));
            }
        }
        Err(Unread::Failed(TaskStoreError::Backend(format!(
            "task {id} kept changing under {CAS_ATTEMPTS} attempts to change it"
        ))))
    }
}

fn backend(e: ::redis::RedisError) -> TaskStoreError {
    TaskStoreError::Backend(format!("Redis: {e}"))
}

impl TaskStore for RedisTaskStore {
    fn start(&self, key: &ReplicaKey) -> Result<(), TaskStoreError> {
        if !key.is_configured() {
            return Err(TaskStoreError::Backend(
                "the Redis task store needs a session key every replica shares (Server::session_key or SAKE_SESSION_KEY, at least 32 random bytes): its records are authenticated with a key derived from it".into(),
            ));
        }
        let _ = self.key.set(key.clone());
        Ok(())
    }

    fn create<'a>(&'a self, task: TaskRecord) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let json = self.seal(&task)?;
            let keys = self.keys(&task);
            let (expires_at, due, id) = (task.expires_at, task.next_due(), task.id.clone());
            let (max_tasks, max_per) = (self.counts.all, self.counts.per_principal);
            let created: i64 = self
                .link
                .run(|mut conn| async move {
                    CREATE
                        .key(&keys[..])
                        .arg(json)
                        .arg(expires_at)
                        .arg(due)
                        .arg(now_ms())
                        .arg(max_tasks)
                        .arg(max_per)
                        .arg(id)
                        .arg(expires_at.saturating_add(KEY_GRACE_MS))
                        .invoke_async(&mut conn)
                        .await
                })
                .await
                .map_err(backend)?;
            match created {
                1 => Ok(()),
                -3 => Err(TaskStoreError::Duplicate),
                -2 => Err(TaskStoreError::full(
                    format!(
                        "this caller holds {max_per} tasks, the limit per caller; retry once some have ended and expired"
                    ),
                    true,
                )),
                _ => Err(TaskStoreError::full(
                    format!(
                        "the server holds {max_tasks} tasks, its limit; retry once some have ended and expired"
                    ),
                    false,
                )),
            }
        })
    }

    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>> {
        Box::pin(async move {
            Ok(self
                .read(id, false)
                .await
                .map_err(TaskStoreError::from)?
                .map(|(_, r)| r))
        })
    }

    fn claim<'a>(&'a self, id: &'a str, claim: &'a Claim) -> StoreFuture<'a, Option<TaskRecord>> {
        Box::pin(async move {
            let claimed = self
                .change(id, false, |r, now| {
                    if r.claim(claim, now) {
                        (Some(r.clone()), Write::Put)
                    } else {
                        (None, Write::Nothing)
                    }
                })
                .await?;
            Ok(claimed.flatten())
        })
    }

    fn update<'a>(&'a self, id: &'a str, update: TaskUpdate) -> StoreFuture<'a, UpdateOutcome> {
        Box::pin(async move {
            let outcome = self
                .change(id, false, |r, now| {
                    let before = r.clone();
                    let outcome = r.update(update.clone(), now);
                    let write = if *r == before {
                        Write::Nothing
                    } else {
                        Write::Put
                    };
                    (outcome, write)
                })
                .await?;
            Ok(outcome.unwrap_or(UpdateOutcome::NotFound))
        })
    }

    fn finish<'a>(
        &'a self,
        id: &'a str,
        holder: &'a str,
        outcome: TaskOutcome,
    ) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let done = self
                .change(id, false, |r, now| {
                    if r.finish(holder, outcome.clone(), now) {
                        (true, Write::Put)
                    } else {
                        (false, Write::Nothing)
                    }
                })
                .await?;
            Ok(done.unwrap_or(false))
        })
    }

    fn cancel<'a>(&'a self, id: &'a str) -> StoreFuture<'a, CancelOutcome> {
        Box::pin(async move {
            let outcome = self
                .change(id, false, |r, now| {
                    let before = r.version;
                    let outcome = r.cancel(now);
                    let write = if r.version == before {
                        Write::Nothing
                    } else {
                        Write::Put
                    };
                    (outcome, write)
                })
                .await?;
            Ok(outcome.unwrap_or(CancelOutcome::NotFound))
        })
    }

    fn expire(&self) -> StoreFuture<'_, usize> {
        Box::pin(async move {
            let now = now_ms();
            let due_key = self.due_key();
            let due: Vec<String> = self
                .link
                .run(|mut conn| async move {
                    ::redis::cmd("ZRANGEBYSCORE")
                        .arg(&due_key)
                        .arg("-inf")
                        .arg(now)
                        .arg("LIMIT")
                        .arg(0)
                        .arg(EXPIRE_BATCH)
                        .query_async(&mut conn)
                        .await
                })
                .await
                .map_err(backend)?;
            let mut changed = 0;
            for id in due {
                let outcome = self
                    .change_or_refuse(&id, true, |r, now| match r.expire(now) {
                        Expiry::Delete => (true, Write::Delete),
                        Expiry::Changed(_) => (true, Write::Put),
                        // Nothing to do yet; writing it back refreshes when it is due.
                        Expiry::Keep(_) => (false, Write::Put),
                    })
                    .await;
                let outcome = match outcome {
                    Ok(o) => o,
                    // A record that failed its check is left alone (logged), and out of the
                    // index of what is due, so that it does not stop the others' expiry.
                    Err(Unread::Refused(_)) => None,
                    Err(Unread::Failed(e)) => return Err(e),
                };
                match outcome {
                    Some(true) => changed += 1,
                    Some(false) => {}
                    // The key expired by itself (or was refused): drop it from the index of
                    // what is due.
                    None => {
                        let due_key = self.due_key();
                        let id = id.clone();
                        self.link
                            .run(|mut conn| async move {
                                ::redis::cmd("ZREM")
                                    .arg(&due_key)
                                    .arg(&id)
                                    .query_async::<()>(&mut conn)
                                    .await
                            })
                            .await
                            .map_err(backend)?;
                    }
                }
            }
            Ok(changed)
        })
    }
}
