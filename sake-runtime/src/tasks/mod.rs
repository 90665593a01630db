//! Tasks (the 2026-07-28 tasks extension, `io.modelcontextprotocol/tasks`): where they are
//! kept, and the rules of their lives.
//!
//! A tool declared `#[tool(task = "optional")]` or `#[tool(task = "required")]` runs as a task
//! when the client's request declares the extension: the call answers at once with the task,
//! and the client polls `tasks/get` until it ends (see docs/tasks.md). The engine keeps every
//! task in a [`TaskStore`]; the default is [`MemoryTaskStore`], bounded and process-local.
//! A store shared by several replicas (a database) lets any of them serve any task: each
//! replica reads the task, answers its questions and cancels it through the store, and a
//! function is run by whoever *claims* the task ([`TaskStore::claim`]), holding it with a
//! lease it renews while it runs.
//!
//! The transitions themselves are methods of [`TaskRecord`] (pure functions of the record
//! and the time): a store applies them atomically (under a lock, in a transaction, or by
//! compare-and-swap on [`TaskRecord::version`]) and decides nothing else.

mod memory;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use self::memory::MemoryTaskStore;
use crate::protocol::jsonrpc::RpcError;
pub use crate::protocol::tasks::{DetailedTask, EXTENSION, Task, TaskStatus};
use crate::protocol::tasks::{error_object, timestamp};
pub use crate::signing::ReplicaKey;

/// The future a [`TaskStore`] method returns.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, TaskStoreError>> + Send + 'a>>;

/// Where tasks are kept. Object-safe: the engine holds an `Arc<dyn TaskStore>`.
///
/// Every method is one atomic step on one task (or, for [`expire`](TaskStore::expire), on
/// the tasks that are due). A task that does not exist, or whose
/// [`expires_at`](TaskRecord::expires_at) has passed, is absent for every method.
///
/// The engine checks the caller against [`TaskRecord::principal`] before it acts for a
/// client; the store does not.
pub trait TaskStore: Send + Sync + 'static {
    /// Keeps a new task (built with [`TaskRecord::new`], claimed by its creator). The task
    /// must be readable by [`get`](TaskStore::get), from every replica, once the future
    /// resolves: the server answers `tools/call` only then. Refuses with
    /// [`TaskStoreError::Full`] beyond the store's bounds.
    fn create<'a>(&'a self, task: TaskRecord) -> StoreFuture<'a, ()>;

    /// The task, as it is now.
    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>>;

    /// Takes a `working` task that nobody holds (or whose holder's lease lapsed) to run its
    /// function ([`TaskRecord::claim`]); `None` when it cannot be taken.
    fn claim<'a>(&'a self, id: &'a str, claim: &'a Claim) -> StoreFuture<'a, Option<TaskRecord>>;

    /// Applies an update ([`TaskRecord::update`]): the holder's heartbeat, progress or
    /// questions, or the client's answers.
    fn update<'a>(&'a self, id: &'a str, update: TaskUpdate) -> StoreFuture<'a, UpdateOutcome>;

    /// Ends a task its holder ran ([`TaskRecord::finish`]); `false` when `holder` no longer
    /// holds it (it ended or was taken over meanwhile): the outcome is dropped.
    fn finish<'a>(
        &'a self,
        id: &'a str,
        holder: &'a str,
        outcome: TaskOutcome,
    ) -> StoreFuture<'a, bool>;

    /// Asks for a task's cancellation ([`TaskRecord::cancel`]).
    fn cancel<'a>(&'a self, id: &'a str) -> StoreFuture<'a, CancelOutcome>;

    /// Applies what time decides to the tasks that are due ([`TaskRecord::expire`]): deletes
    /// those past [`expires_at`](TaskRecord::expires_at), fails those past their TTL or whose
    /// holder's lease lapsed (it stopped without finishing them). Returns how many changed.
    ///
    /// The engine calls it from time to time; a store may also do it on its own.
    fn expire(&self) -> StoreFuture<'_, usize>;

    /// Called once, when a server is built with this store, with the key the server's
    /// replicas share (derived from its session key). A store whose records others can write
    /// (a database on a shared network) authenticates each record with it
    /// ([`ReplicaKey::seal`], [`ReplicaKey::open`]) and refuses to act on one that does not
    /// verify, so that whoever can write there cannot change a task's owner, arguments or
    /// result. A store shared by replicas refuses a key that is not
    /// [configured](ReplicaKey::is_configured) (no other replica has it): the server does not
    /// start, with the error's message.
    ///
    /// The default does nothing: a store in this process needs no key.
    fn start(&self, key: &ReplicaKey) -> Result<(), TaskStoreError> {
        let _ = key;
        Ok(())
    }
}

impl<T: TaskStore + ?Sized> TaskStore for std::sync::Arc<T> {
    fn create<'a>(&'a self, task: TaskRecord) -> StoreFuture<'a, ()> {
        (**self).create(task)
    }
    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<TaskRecord>> {
        (**self).get(id)
    }
    fn claim<'a>(&'a self, id: &'a str, claim: &'a Claim) -> StoreFuture<'a, Option<TaskRecord>> {
        (**self).claim(id, claim)
    }
    fn update<'a>(&'a self, id: &'a str, update: TaskUpdate) -> StoreFuture<'a, UpdateOutcome> {
        (**self).update(id, update)
    }
    fn finish<'a>(
        &'a self,
        id: &'a str,
        holder: &'a str,
        outcome: TaskOutcome,
    ) -> StoreFuture<'a, bool> {
        (**self).finish(id, holder, outcome)
    }
    fn cancel<'a>(&'a self, id: &'a str) -> StoreFuture<'a, CancelOutcome> {
        (**self).cancel(id)
    }
    fn expire(&self) -> StoreFuture<'_, usize> {
        (**self).expire()
    }
    fn start(&self, key: &ReplicaKey) -> Result<(), TaskStoreError> {
        (**self).start(key)
    }
}

/// Why a store refused.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TaskStoreError {
    /// The store holds as many tasks as it may: in all, or (`per_principal`) for this
    /// caller.
    #[error("{message}")]
    Full {
        /// What is full, for a person.
        message: String,
        /// Only this caller's share is full; others may still create tasks.
        per_principal: bool,
    },
    /// A task with this id exists already.
    #[error("a task with this id exists already")]
    Duplicate,
    /// The backend failed (a connection, a query).
    #[error("the task store failed: {0}")]
    Backend(String),
}

/// What a client is told when the task store failed: never the store's own words (they name
/// the backend, its addresses, its keys), which go to the log.
pub(crate) fn unavailable() -> RpcError {
    RpcError::internal("Internal error: the task store is unavailable; retry shortly")
}

impl TaskStoreError {
    /// The store is full; `per_principal`: for this caller only (others may still create).
    pub fn full(message: impl Into<String>, per_principal: bool) -> Self {
        TaskStoreError::Full {
            message: message.into(),
            per_principal,
        }
    }
}

/// Who runs a task's function, and for how long without renewing.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Claim {
    /// The holder: unique per run (a replica's id and a counter, say).
    pub holder: String,
    /// How long the claim lasts without a heartbeat ([`TaskUpdate::Heartbeat`]). If it
    /// lapses, the task is failed by [`TaskStore::expire`]: the holder stopped (its process
    /// died) without finishing it.
    pub lease: Duration,
}

impl Claim {
    /// A claim by `holder` with this lease.
    pub fn new(holder: impl Into<String>, lease: Duration) -> Self {
        Claim {
            holder: holder.into(),
            lease,
        }
    }
}

/// What re-runs a task's function: the request that created it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TaskRequest {
    /// The method (`tools/call`).
    pub method: String,
    /// The tool's name.
    pub name: String,
    /// The arguments' JSON text, as sent.
    pub arguments: Option<String>,
    /// The revision the request spoke.
    pub revision: String,
    /// The client capabilities it declared (a `ClientCapabilities` object).
    pub client_capabilities: Value,
    /// The client's name and version, when given (an `Implementation` object).
    pub client_info: Option<Value>,
}

impl TaskRequest {
    /// A request of `method` for `name`.
    pub fn new(
        method: impl Into<String>,
        name: impl Into<String>,
        revision: impl Into<String>,
    ) -> Self {
        TaskRequest {
            method: method.into(),
            name: name.into(),
            arguments: None,
            revision: revision.into(),
            client_capabilities: Value::Object(Map::new()),
            client_info: None,
        }
    }
}

/// A task as a store keeps it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TaskRecord {
    /// Its id (unguessable).
    pub id: String,
    /// The caller that created it (a digest; `None`: an anonymous caller). Only the same
    /// caller may read, answer or cancel it.
    pub principal: Option<String>,
    /// Whose count of tasks it is in (`max_tasks_per_principal`) when not its principal's:
    /// an anonymous caller's network, as a digest, so that anonymous callers do not share
    /// one count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counted_as: Option<String>,
    /// The request that created it.
    pub request: TaskRequest,
    /// Where it stands.
    pub status: TaskStatus,
    /// A message for a person: the progress of a `working` task (cleared when its status
    /// changes), the reason a task failed or was cancelled.
    pub status_message: Option<String>,
    /// Creation, in milliseconds since the Unix epoch.
    pub created_at: u64,
    /// Last change, in milliseconds since the Unix epoch.
    pub updated_at: u64,
    /// Time to live from creation: a task still unfinished then is failed.
    pub ttl_ms: u64,
    /// The polling interval suggested to clients.
    pub poll_interval_ms: u64,
    /// How long a finished task stays readable at least, after it ends.
    pub keep_ms: u64,
    /// When the store deletes it (milliseconds since the Unix epoch).
    pub expires_at: u64,
    /// Every answer so far, by input request key (those given before the task was created
    /// included): what the function gets when it asks again.
    pub answers: Map<String, Value>,
    /// The outstanding input requests (`input_required`), by key.
    pub input_requests: Map<String, Value>,
    /// The result (`completed`).
    pub result: Option<Value>,
    /// The JSON-RPC error object (`failed`).
    pub error: Option<Value>,
    /// The client asked to cancel while the function ran; its holder stops it.
    pub cancel_requested: bool,
    /// Who runs the function now (`working` only).
    pub holder: Option<String>,
    /// Until when the holder's claim lasts (or, for a `working` task nobody holds, until
    /// when someone must claim it); 0 when not `working`.
    pub lease_until: u64,
    /// Incremented by every change: for stores that update by compare-and-swap.
    pub version: u64,
}

/// What a new task starts with.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct NewTask {
    /// Its id ([`new_task_id`]).
    pub id: String,
    /// The caller.
    pub principal: Option<String>,
    /// Whose count of tasks it is in, when not the principal's ([`TaskRecord::counted_as`]).
    pub counted_as: Option<String>,
    /// The request.
    pub request: TaskRequest,
    /// Time to live from creation.
    pub ttl: Duration,
    /// The polling interval suggested to clients.
    pub poll_interval: Duration,
    /// How long a finished task stays readable at least.
    pub keep: Duration,
    /// The answers given before the task was created (the request's own input rounds).
    pub answers: Map<String, Value>,
}

impl NewTask {
    /// A task of `request` for `principal`, with an id, kept `ttl` from its creation.
    pub fn new(
        id: impl Into<String>,
        principal: Option<String>,
        request: TaskRequest,
        ttl: Duration,
        poll_interval: Duration,
    ) -> Self {
        NewTask {
            id: id.into(),
            principal,
            counted_as: None,
            request,
            ttl,
            poll_interval,
            keep: ttl.min(Duration::from_secs(60)),
            answers: Map::new(),
        }
    }
}

/// An update of a task ([`TaskStore::update`]).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum TaskUpdate {
    /// The holder is alive: its claim lasts `lease` more.
    Heartbeat {
        /// The holder.
        holder: String,
        /// From now.
        lease: Duration,
    },
    /// The holder reports progress as the task's status message (and is alive).
    StatusMessage {
        /// The holder.
        holder: String,
        /// The message.
        message: String,
        /// From now.
        lease: Duration,
    },
    /// The function asked questions not yet answered: the task waits for them
    /// (`input_required`) and the holder lets go of it.
    InputRequired {
        /// The holder.
        holder: String,
        /// The questions, by key (`{method, params}` each).
        requests: Map<String, Value>,
    },
    /// The client's answers (`tasks/update`): those to outstanding questions are taken,
    /// others ignored. When none is outstanding any more the task is `working` again and
    /// must be claimed within `lease` to run on.
    Answer {
        /// The answers, by key.
        responses: Map<String, Value>,
        /// How long it may wait to be claimed.
        lease: Duration,
    },
}

/// What an update did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum UpdateOutcome {
    /// The holder still holds the task; stop the function when `cancel_requested`.
    Held {
        /// The client asked to cancel.
        cancel_requested: bool,
    },
    /// The holder does not hold the task any more (it ended, or was taken over after the
    /// lease lapsed): stop the function and drop what it produces.
    Lost,
    /// Answers were applied; `runnable`: nothing is outstanding, the task waits to be claimed.
    Answered {
        /// Whether the task now waits to run again.
        runnable: bool,
    },
    /// No such task.
    NotFound,
}

/// How a task's function ended ([`TaskStore::finish`]).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum TaskOutcome {
    /// It returned: the result object (a tool error, `isError: true`, included).
    Completed(Value),
    /// It failed with a JSON-RPC error.
    Failed(RpcError),
    /// It stopped because the client cancelled.
    Cancelled,
}

/// What a cancellation did ([`TaskStore::cancel`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CancelOutcome {
    /// The task was not running (waiting for input, or for a holder): it is `cancelled` now.
    Cancelled,
    /// Its holder runs it: asked to stop (it ends `cancelled` once it does).
    Requested,
    /// It had ended already: nothing changed.
    AlreadyEnded,
    /// No such task.
    NotFound,
}

/// What time does to a task ([`TaskRecord::expire`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Expiry {
    /// Nothing yet; look again at this time (milliseconds since the Unix epoch).
    Keep(u64),
    /// It changed (failed); look again at this time.
    Changed(u64),
    /// Delete it.
    Delete,
}

const CANCELLED_MESSAGE: &str = "Cancelled by client request";

impl TaskRecord {
    /// The count of tasks it is in: [`counted_as`](Self::counted_as), else its principal's
    /// (`None`: the count of anonymous callers without an address).
    pub fn count_key(&self) -> Option<&str> {
        self.counted_as.as_deref().or(self.principal.as_deref())
    }

    /// A new task at `now` (milliseconds since the Unix epoch), `working`, held by `claim`.
    pub fn new(task: NewTask, claim: &Claim, now: u64) -> TaskRecord {
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        let ttl_ms = ms(task.ttl).max(1);
        TaskRecord {
            id: task.id,
            principal: task.principal,
            counted_as: task.counted_as,
            request: task.request,
            status: TaskStatus::Working,
            status_message: None,
            created_at: now,
            updated_at: now,
            ttl_ms,
            poll_interval_ms: ms(task.poll_interval).max(1),
            keep_ms: ms(task.keep),
            expires_at: now.saturating_add(ttl_ms),
            answers: task.answers,
            input_requests: Map::new(),
            result: None,
            error: None,
            cancel_requested: false,
            holder: Some(claim.holder.clone()),
            lease_until: now.saturating_add(ms(claim.lease)),
            version: 1,
        }
    }

    /// The task as the wire shows it (no payload).
    pub fn task(&self) -> Task {
        Task {
            task_id: self.id.clone(),
            status: self.status,
            status_message: self.status_message.clone(),
            created_at: timestamp(self.created_at),
            last_updated_at: timestamp(self.updated_at),
            ttl_ms: Some(self.ttl_ms),
            poll_interval_ms: Some(self.poll_interval_ms),
        }
    }

    /// The task with what its status carries: `tasks/get`, `notifications/tasks`.
    pub fn detailed(&self) -> DetailedTask {
        DetailedTask {
            task: self.task(),
            input_requests: (self.status == TaskStatus::InputRequired)
                .then(|| self.input_requests.clone()),
            result: self
                .result
                .clone()
                .filter(|_| self.status == TaskStatus::Completed),
            error: self
                .error
                .clone()
                .filter(|_| self.status == TaskStatus::Failed),
        }
    }

    /// Whether `principal` may see the task: exactly the caller that created it (an
    /// anonymous caller is not a named one).
    pub fn belongs_to(&self, principal: Option<&str>) -> bool {
        self.principal.as_deref() == principal
    }

    /// Whether the store has to forget it at `now`.
    pub fn is_gone(&self, now: u64) -> bool {
        now >= self.expires_at
    }

    /// When time next decides something about it.
    pub fn next_due(&self) -> u64 {
        let mut due = self.expires_at;
        if !self.status.is_terminal() {
            due = due.min(self.created_at.saturating_add(self.ttl_ms));
        }
        if self.status == TaskStatus::Working {
            due = due.min(self.lease_until);
        }
        due
    }

    fn touch(&mut self, now: u64) {
        self.updated_at = now.max(self.updated_at);
        self.version += 1;
    }

    fn end(&mut self, status: TaskStatus, now: u64) {
        self.status = status;
        self.input_requests.clear();
        self.holder = None;
        self.lease_until = 0;
        self.cancel_requested = false;
        self.expires_at = self.expires_at.max(now.saturating_add(self.keep_ms));
        self.touch(now);
    }

    fn holds(&self, holder: &str) -> bool {
        self.status == TaskStatus::Working && self.holder.as_deref() == Some(holder)
    }

    /// Takes the task for `claim` at `now`: only a `working` task that nobody holds, or
    /// whose holder's lease lapsed, and that no one asked to cancel. `false`: not taken.
    pub fn claim(&mut self, claim: &Claim, now: u64) -> bool {
        let free = self.holder.is_none() || self.lease_until <= now;
        if self.status != TaskStatus::Working || self.cancel_requested || !free {
            return false;
        }
        self.holder = Some(claim.holder.clone());
        self.lease_until = lease_end(now, claim.lease);
        self.version += 1;
        true
    }

    /// Applies an update at `now`.
    pub fn update(&mut self, update: TaskUpdate, now: u64) -> UpdateOutcome {
        match update {
            TaskUpdate::Heartbeat { holder, lease } => {
                if !self.holds(&holder) {
                    return UpdateOutcome::Lost;
                }
                self.lease_until = lease_end(now, lease);
                self.version += 1;
                UpdateOutcome::Held {
                    cancel_requested: self.cancel_requested,
                }
            }
            TaskUpdate::StatusMessage {
                holder,
                message,
                lease,
            } => {
                if !self.holds(&holder) {
                    return UpdateOutcome::Lost;
                }
                self.lease_until = lease_end(now, lease);
                if self.status_message.as_deref() != Some(&message) {
                    self.status_message = Some(message);
                    self.touch(now);
                }
                UpdateOutcome::Held {
                    cancel_requested: self.cancel_requested,
                }
            }
            TaskUpdate::InputRequired { holder, requests } => {
                if !self.holds(&holder) {
                    return UpdateOutcome::Lost;
                }
                if self.cancel_requested {
                    // Asked to stop while it ran: it stops here, cancelled.
                    self.status_message = Some(CANCELLED_MESSAGE.into());
                    self.end(TaskStatus::Cancelled, now);
                    return UpdateOutcome::Lost;
                }
                self.status = TaskStatus::InputRequired;
                self.status_message = None;
                self.input_requests = requests;
                self.holder = None;
                self.lease_until = 0;
                self.touch(now);
                UpdateOutcome::Held {
                    cancel_requested: false,
                }
            }
            TaskUpdate::Answer { responses, lease } => {
                if self.status != TaskStatus::InputRequired {
                    return UpdateOutcome::Answered { runnable: false };
                }
                let mut taken = false;
                for (key, value) in responses {
                    if self.input_requests.shift_remove(&key).is_some() {
                        self.answers.insert(key, value);
                        taken = true;
                    }
                }
                if !taken {
                    return UpdateOutcome::Answered { runnable: false };
                }
                let runnable = self.input_requests.is_empty();
                if runnable {
                    self.status = TaskStatus::Working;
                    self.status_message = None;
                    self.holder = None;
                    self.lease_until = lease_end(now, lease);
                }
                self.touch(now);
                UpdateOutcome::Answered { runnable }
            }
        }
    }

    /// Ends the task `holder` runs at `now` with `outcome`; `false` when `holder` does not
    /// hold it. A result that arrives after a cancellation was asked for is kept
    /// (cancellation is cooperative: the task "MAY ultimately reach a terminal status other
    /// than `cancelled`").
    pub fn finish(&mut self, holder: &str, outcome: TaskOutcome, now: u64) -> bool {
        if !self.holds(holder) {
            return false;
        }
        match outcome {
            TaskOutcome::Completed(result) => {
                self.status_message = None;
                self.result = Some(result);
                self.end(TaskStatus::Completed, now);
            }
            TaskOutcome::Failed(e) => {
                self.status_message = Some(e.message.clone());
                self.error = Some(error_object(&e));
                self.end(TaskStatus::Failed, now);
            }
            TaskOutcome::Cancelled => {
                self.status_message = Some(CANCELLED_MESSAGE.into());
                self.end(TaskStatus::Cancelled, now);
            }
        }
        true
    }

    /// Asks at `now` for the task's cancellation: a task that is not running ends
    /// `cancelled` at once; a running one is flagged for its holder; an ended one stays as
    /// it is (the request is acknowledged all the same).
    pub fn cancel(&mut self, now: u64) -> CancelOutcome {
        if self.status.is_terminal() {
            return CancelOutcome::AlreadyEnded;
        }
        let running =
            self.status == TaskStatus::Working && self.holder.is_some() && self.lease_until > now;
        if running {
            if !self.cancel_requested {
                self.cancel_requested = true;
                self.version += 1;
            }
            return CancelOutcome::Requested;
        }
        self.status_message = Some(CANCELLED_MESSAGE.into());
        self.end(TaskStatus::Cancelled, now);
        CancelOutcome::Cancelled
    }

    /// What time does at `now`: deletes the task after [`expires_at`](Self::expires_at);
    /// fails it (-32603) when it is unfinished past its TTL, or `working` past its lease
    /// (its holder stopped without finishing it, or nobody claimed it to run on).
    pub fn expire(&mut self, now: u64) -> Expiry {
        // An unfinished task is failed first, and kept `keep_ms` so that its end is read.
        if !self.status.is_terminal() {
            let why = if now >= self.created_at.saturating_add(self.ttl_ms) {
                Some("Task expired before completion: its time to live elapsed")
            } else if self.status == TaskStatus::Working && now >= self.lease_until {
                Some(
                    "Task interrupted: the server running it stopped before it finished; call the tool again",
                )
            } else {
                None
            };
            if let Some(why) = why {
                let e = RpcError::internal(why);
                self.status_message = Some(e.message.clone());
                self.error = Some(error_object(&e));
                self.end(TaskStatus::Failed, now);
                return Expiry::Changed(self.next_due());
            }
        }
        if self.is_gone(now) {
            return Expiry::Delete;
        }
        Expiry::Keep(self.next_due())
    }
}

fn lease_end(now: u64, lease: Duration) -> u64 {
    now.saturating_add(u64::try_from(lease.as_millis()).unwrap_or(u64::MAX))
}

/// A new task id: 128 random bits, as 32 hex digits; `None` when the system's random source
/// fails.
pub fn new_task_id() -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    let mut id = String::with_capacity(32);
    for b in bytes {
        use fmt::Write as _;
        let _ = write!(id, "{b:02x}");
    }
    Some(id)
}

/// How many tasks a store keeps, in all and per caller (a principal, or an anonymous caller's
/// network), each at least 1: the bounds every [`TaskStore`] of sake's takes, set by its
/// `max_tasks` and `max_tasks_per_principal`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TaskCounts {
    pub all: usize,
    pub per_principal: usize,
}

impl Default for TaskCounts {
    fn default() -> Self {
        TaskCounts {
            all: 10_000,
            per_principal: 1_000,
        }
    }
}

impl TaskCounts {
    /// At most `tasks` in all (at least 1).
    pub(crate) fn set_all(&mut self, tasks: usize) {
        self.all = tasks.max(1);
    }

    /// At most `tasks` per caller (at least 1).
    pub(crate) fn set_per_principal(&mut self, tasks: usize) {
        self.per_principal = tasks.max(1);
    }
}

/// Milliseconds since the Unix epoch, now.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests;
