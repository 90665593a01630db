//! [`MemoryTaskStore`]: the default task store, in this process's memory.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

use super::{
    CancelOutcome, Claim, Expiry, StoreFuture, TaskCounts, TaskOutcome, TaskRecord, TaskStore,
    TaskStoreError, TaskUpdate, UpdateOutcome, now_ms,
};

/// The clock of a store: milliseconds since the Unix epoch.
type Clock = Arc<dyn Fn() -> u64 + Send + Sync>;

/// Tasks kept in this process's memory: the default [`TaskStore`].
///
/// Bounded: at most [`max_tasks`](Self::max_tasks) tasks in all (10 000 by default) and
/// [`max_tasks_per_principal`](Self::max_tasks_per_principal) per caller (1 000), holding at
/// most [`max_task_bytes`](Self::max_task_bytes) in all (256 MiB) and
/// [`max_task_bytes_per_principal`](Self::max_task_bytes_per_principal) per caller (16 MiB) —
/// a task weighs what its record takes as JSON: its request, answers, questions and result —
/// finished ones included until they expire; beyond, a tool call that would create a task is
/// refused (-32000, "try again later"). Expiry costs nothing while nothing is due: the tasks are
/// indexed by the time their next change is due, and only those are looked at.
///
/// Tasks live as long as the process: after a restart every task id is unknown (`tasks/get`
/// answers -32602), and replicas do not see each other's tasks. Use a shared store for that.
pub struct MemoryTaskStore {
    inner: Mutex<Inner>,
    counts: TaskCounts,
    max_bytes: usize,
    max_bytes_per_principal: usize,
    clock: Clock,
}

impl std::fmt::Debug for MemoryTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryTaskStore")
            .field("tasks", &self.len())
            .field("max_tasks", &self.counts.all)
            .field("max_tasks_per_principal", &self.counts.per_principal)
            .field("max_task_bytes", &self.max_bytes)
            .field(
                "max_task_bytes_per_principal",
                &self.max_bytes_per_principal,
            )
            .finish()
    }
}

#[derive(Default)]
struct Inner {
    tasks: HashMap<String, Slot>,
    /// (when due, id): the next time something happens to each task.
    due: BTreeSet<(u64, String)>,
    per_principal: HashMap<Option<String>, Owned>,
    /// The weight of every task ([`weight`]).
    bytes: usize,
}

/// What one caller's tasks hold.
#[derive(Clone, Copy, Default)]
struct Owned {
    tasks: usize,
    bytes: usize,
}

struct Slot {
    record: TaskRecord,
    due: u64,
    /// Its [`weight`] when last changed.
    bytes: usize,
}

/// What a task record weighs: the length of its JSON (its request, answers, questions, result
/// and the rest), counted without writing it anywhere.
fn weight(record: &TaskRecord) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing into a counter fails only if the record cannot be serialised, which a
    // `TaskRecord` always can; a failure would only count less.
    let _ = serde_json::to_writer(&mut count, record);
    count.0
}

impl Default for MemoryTaskStore {
    fn default() -> Self {
        MemoryTaskStore::new()
    }
}

impl MemoryTaskStore {
    /// An empty store with the default bounds.
    pub fn new() -> Self {
        MemoryTaskStore {
            inner: Mutex::new(Inner::default()),
            counts: TaskCounts::default(),
            max_bytes: 256 << 20,
            max_bytes_per_principal: 16 << 20,
            clock: Arc::new(now_ms),
        }
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

    /// At most this many bytes of tasks in all (each task weighs its record's JSON: its
    /// request, answers, questions and result).
    #[must_use]
    pub fn max_task_bytes(mut self, bytes: usize) -> Self {
        self.max_bytes = bytes.max(1);
        self
    }

    /// At most this many bytes of tasks per caller (a principal, or an anonymous caller's
    /// network). A task that grows past it once made (its result) is kept; the caller's next
    /// ones are refused until some expire.
    #[must_use]
    pub fn max_task_bytes_per_principal(mut self, bytes: usize) -> Self {
        self.max_bytes_per_principal = bytes.max(1);
        self
    }

    /// A store whose time is `clock` (milliseconds since the Unix epoch).
    #[cfg(test)]
    pub(crate) fn with_clock(mut self, clock: impl Fn() -> u64 + Send + Sync + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// How many tasks it holds (expired ones not yet swept included).
    pub fn len(&self) -> usize {
        self.lock().tasks.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // Every change is made in one step on plain data: a panic elsewhere cannot leave it
        // half done.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `f` on the store after applying what is due at this moment.
    fn with<R>(&self, f: impl FnOnce(&mut Inner, u64) -> R) -> R {
        let now = (self.clock)();
        let mut inner = self.lock();
        inner.sweep(now);
        f(&mut inner, now)
    }

    fn create_now(&self, record: TaskRecord) -> Result<(), TaskStoreError> {
        self.with(|inner, now| {
            if inner.tasks.contains_key(&record.id) {
                return Err(TaskStoreError::Duplicate);
            }
            if inner.tasks.len() >= self.counts.all {
                return Err(TaskStoreError::full(
                    format!(
                        "the server holds {} tasks, its limit; retry once some have ended and expired",
                        self.counts.all
                    ),
                    false,
                ));
            }
            let bytes = weight(&record);
            if inner.bytes.saturating_add(bytes) > self.max_bytes {
                return Err(TaskStoreError::full(
                    format!(
                        "the server's tasks hold {} bytes and this one needs {bytes}, past its limit of {} (MemoryTaskStore::max_task_bytes); retry once some have ended and expired",
                        inner.bytes, self.max_bytes
                    ),
                    false,
                ));
            }
            let counted = record.count_key().map(str::to_owned);
            let mine = inner.per_principal.get(&counted).copied().unwrap_or_default();
            if mine.tasks >= self.counts.per_principal {
                return Err(TaskStoreError::full(
                    format!(
                        "this caller holds {} tasks, the limit per caller; retry once some have ended and expired",
                        self.counts.per_principal
                    ),
                    true,
                ));
            }
            if mine.bytes.saturating_add(bytes) > self.max_bytes_per_principal {
                return Err(TaskStoreError::full(
                    format!(
                        "this caller's tasks hold {} bytes and this one needs {bytes}, past the limit per caller of {} (MemoryTaskStore::max_task_bytes_per_principal); retry once some have ended and expired",
                        mine.bytes, self.max_bytes_per_principal
                    ),
                    true,
                ));
            }
            if record.is_gone(now) {
                return Ok(());
            }
            let owned = inner.per_principal.entry(counted).or_default();
            owned.tasks += 1;
            owned.bytes += bytes;
            inner.bytes += bytes;
            let due = record.next_due();
            inner.due.insert((due, record.id.clone()));
            inner
                .tasks
                .insert(record.id.clone(), Slot { record, due, bytes });
            Ok(())
        })
    }

    /// Applies `f` to the task `id`, if it is there.
    fn modify<R>(&self, id: &str, f: impl FnOnce(&mut TaskRecord, u64) -> R) -> Option<R> {
        self.with(|inner, now| inner.modify(id, now, f))
    }
}

impl Inner {
    fn modify<R>(
        &mut self,
        id: &str,
        now: u64,
        f: impl FnOnce(&mut TaskRecord, u64) -> R,
    ) -> Option<R> {
        let slot = self.tasks.get_mut(id)?;
        let out = f(&mut slot.record, now);
        let due = slot.record.next_due();
        if due != slot.due {
            self.due.remove(&(slot.due, id.to_owned()));
            self.due.insert((due, id.to_owned()));
            slot.due = due;
        }
        self.reweigh(id);
        Some(out)
    }

    /// Counts the task's weight anew, for its caller and in all.
    fn reweigh(&mut self, id: &str) {
        let Some(slot) = self.tasks.get_mut(id) else {
            return;
        };
        let (was, now) = (slot.bytes, weight(&slot.record));
        if was == now {
            return;
        }
        slot.bytes = now;
        let counted = slot.record.count_key().map(str::to_owned);
        if let Some(owned) = self.per_principal.get_mut(&counted) {
            owned.bytes = owned.bytes.saturating_sub(was) + now;
        }
        self.bytes = self.bytes.saturating_sub(was) + now;
    }

    fn remove(&mut self, id: &str) {
        if let Some(slot) = self.tasks.remove(id) {
            self.due.remove(&(slot.due, id.to_owned()));
            let counted = slot.record.count_key().map(str::to_owned);
            self.bytes = self.bytes.saturating_sub(slot.bytes);
            if let Some(owned) = self.per_principal.get_mut(&counted) {
                owned.tasks = owned.tasks.saturating_sub(1);
                owned.bytes = owned.bytes.saturating_sub(slot.bytes);
                if owned.tasks == 0 {
                    self.per_principal.remove(&counted);
                }
            }
        }
    }

    /// Applies what is due at `now`: only the tasks whose time has come are looked at.
    fn sweep(&mut self, now: u64) -> usize {
        let mut changed = 0;
        while let Some((due, id)) = self.due.first().cloned() {
            if due > now {
                break;
            }
            self.due.remove(&(due, id.clone()));
            let Some(slot) = self.tasks.get_mut(&id) else {
                continue;
            };
            let next = match slot.record.expire(now) {
                Expiry::Delete => {
                    self.remove(&id);
                    changed += 1;
                    continue;
                }
                Expiry::Changed(next) => {
                    changed += 1;
                    next
                }
                Expiry::Keep(next) => next,
            };
            // Never due again at this same moment: the loop ends.
            let next = next.max(now + 1);
            slot.due = next;
            self.due.insert((next, id.clone()));
            self.reweigh(&id);
        }
        changed
    }
}

fn ready<'a, T: Send + 'a>(v: Result<T, TaskStoreError>) -> StoreFuture<'a, T> {
    Box::pin(std::future::ready(v))
}

impl TaskStore for MemoryTaskStore {
    fn create<'a>(&'a self, task: TaskRecord) -> StoreFuture<'a, ()> {
        ready(self.create_now(task))
    }

    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>> {
        ready(Ok(self.modify(id, |r, _| r.clone())))
    }

    fn claim<'a>(&'a self, id: &'a str, claim: &'a Claim) -> StoreFuture<'a, Option<TaskRecord>> {
        ready(Ok(self
            .modify(id, |r, now| r.claim(claim, now).then(|| r.clone()))
            .flatten()))
    }

    fn update<'a>(&'a self, id: &'a str, update: TaskUpdate) -> StoreFuture<'a, UpdateOutcome> {
        ready(Ok(self
            .modify(id, |r, now| r.update(update, now))
            .unwrap_or(UpdateOutcome::NotFound)))
    }

    fn finish<'a>(
        &'a self,
        id: &'a str,
        holder: &'a str,
        outcome: TaskOutcome,
    ) -> StoreFuture<'a, bool> {
        ready(Ok(self
            .modify(id, |r, now| r.finish(holder, outcome, now))
            .unwrap_or(false)))
    }

    fn cancel<'a>(&'a self, id: &'a str) -> StoreFuture<'a, CancelOutcome> {
        ready(Ok(self
            .modify(id, |r, now| r.cancel(now))
            .unwrap_or(CancelOutcome::NotFound)))
    }

    fn expire(&self) -> StoreFuture<'_, usize> {
        let now = (self.clock)();
        ready(Ok(self.lock().sweep(now)))
    }
}
