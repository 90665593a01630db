//! The tasks extension in the engine (`io.modelcontextprotocol/tasks`, SEP-2663): a tool call
//! that becomes a task, the function run under it, and `tasks/get`, `tasks/update` and
//! `tasks/cancel` — the same for every transport.
//!
//! A call of a tool that may run as a task, from a request that declares the extension, is
//! polled once inside the request. If the function returns at once, or asks the client a
//! question at once, the call is answered as any call (a result, or `input_required`: the
//! spec's "resolve all MRTR exchanges synchronously before responding with a
//! `CreateTaskResult`"). The first time it waits for anything else, the task is created in
//! the store, the call is answered with it, and the same future goes on in the background,
//! held by this process with a lease it renews.
//!
//! A question asked under the task makes it `input_required`; the future is dropped, as an
//! `input_required` round drops it. `tasks/update` stores the answers and, once none is
//! outstanding, whoever took them claims the task and runs the function again from the start
//! with every answer so far — on any replica, with a shared store. Cancellation is a flag in
//! the store that the holder reads with its heartbeat; a holder in this process is told at
//! once.
//!
//! # Relayed tasks
//!
//! A remote tool (a [`Source`]'s, `Server::proxy`) is not run here: its call is forwarded
//! through the invoker like any function ([`Remote`](super::source::Remote)), declaring the
//! extension when the caller did, and the upstream decides whether it becomes a task. When it
//! answers with one, this server gives the caller a task of its own id ([`Relayed`]: the
//! source, the upstream's id, the caller, an expiry — nothing else is held here), and relays
//! `tasks/get`, `tasks/update` and `tasks/cancel` of that id to the upstream's task: its
//! status, questions, result and error are the upstream's, verbatim. The ids of different
//! upstreams cannot collide (the client never sees theirs), and a caller reaches only the
//! tasks it created, as for the tasks run here. So the seam here is two-sided: a function of
//! the registry (`&'static ToolDef`) runs under a task held by this process; a source's tool
//! is a [`Relayed`](relayed::Relayed) entry (`relayed.rs`).

mod relayed;

use relayed::{Relayed, relay_method};

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::Poll;
use std::time::Duration;

use bytes::Bytes;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::Shared;
use super::dispatch::{Dispatched, raw_str};
use super::invoker::{Call, Round, Running as Invoked, Step, Tool};
use crate::handler::ToolDef;
use crate::handler::context::{RequestParts, Transport};
use crate::handler::events::{BusMessage, EventBus};
use crate::handler::input::{Mrtr, RoundKey, check_answer};
use crate::protocol::jsonrpc::{RpcError, clip};
use crate::protocol::meta::{ClientInfo, Params, RequestMeta};
use crate::protocol::methods::Method;
use crate::protocol::render::{self, Cache};
use crate::protocol::tasks::{declared, missing_extension};
use crate::protocol::types::{CallToolResult, ClientCapabilities, Implementation};
use crate::protocol::{Revision, jsonrpc};
use crate::tasks::{
    CancelOutcome, Claim, NewTask, TaskOutcome, TaskRecord, TaskRequest, TaskStore, TaskStoreError,
    TaskUpdate, UpdateOutcome, new_task_id, now_ms,
};

/// How often at most a holder renews its claim, and reads whether the client cancelled
/// (more often when the lease is under three times this).
const HEARTBEAT: Duration = Duration::from_secs(2);

/// How often at most the engine asks the store to apply expiry.
const SWEEP_EVERY_MS: u64 = 1000;

/// The tasks of a server: the store, the settings, the tasks this process runs.
pub(crate) struct Tasks {
    pub store: Arc<dyn TaskStore>,
    pub ttl: Duration,
    pub poll_interval: Duration,
    /// How long a holder's claim lasts without a heartbeat (`Server::task_lease`): a task
    /// whose holder stops renewing (its process died) is failed when it lapses.
    lease: Duration,
    /// How often a holder renews it.
    heartbeat: Duration,
    /// This process among the holders of a shared store.
    replica: String,
    runs: AtomicU64,
    /// The tasks whose function runs in this process: cancelled at once when asked here.
    running: Mutex<HashMap<String, CancellationToken>>,
    /// Ids of tasks that changed in this process, for `subscriptions/listen` streams.
    changes: broadcast::Sender<Arc<str>>,
    /// The bus to the other replicas, whose streams follow tasks too.
    relay: Option<Arc<dyn EventBus>>,
    last_sweep: AtomicU64,
    /// The upstreams' tasks this server relays.
    relayed: Relayed,
}

impl std::fmt::Debug for Tasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tasks")
            .field("ttl", &self.ttl)
            .field("poll_interval", &self.poll_interval)
            .field("replica", &self.replica)
            .finish_non_exhaustive()
    }
}

/// Removes a running task's cancellation when its run ends.
struct Running<'a> {
    tasks: &'a Tasks,
    id: String,
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        self.tasks
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.id);
    }
}

impl Tasks {
    pub fn new(
        store: Arc<dyn TaskStore>,
        ttl: Duration,
        poll_interval: Duration,
        lease: Duration,
        relay: Option<Arc<dyn EventBus>>,
    ) -> Tasks {
        let lease = lease.max(Duration::from_millis(300));
        let replica = new_task_id()
            .map(|id| id[..16].to_owned())
            .unwrap_or_else(|| format!("pid{}", std::process::id()));
        Tasks {
            store,
            ttl: ttl.max(Duration::from_millis(1)),
            poll_interval: poll_interval.max(Duration::from_millis(1)),
            lease,
            heartbeat: HEARTBEAT.min(lease / 3),
            replica,
            runs: AtomicU64::new(1),
            running: Mutex::new(HashMap::new()),
            changes: broadcast::channel(1024).0,
            relay,
            last_sweep: AtomicU64::new(0),
            relayed: Relayed::default(),
        }
    }

    /// A claim for one run of a function, unique among runs of every replica.
    fn claim(&self) -> Claim {
        let n = self.runs.fetch_add(1, Ordering::Relaxed);
        Claim::new(format!("{}-{n}", self.replica), self.lease)
    }

    /// Tells listening streams that a task changed: this process's, and the other replicas'.
    fn changed(&self, id: &str) {
        let id: Arc<str> = Arc::from(id);
        if let Some(relay) = &self.relay {
            relay.publish(&BusMessage::TaskChanged(id.clone()));
        }
        let _ = self.changes.send(id);
    }

    /// Tells this process's streams that another replica changed a task.
    pub fn changed_elsewhere(&self, id: Arc<str>) {
        let _ = self.changes.send(id);
    }

    /// The ids of tasks that change in this process, from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<str>> {
        self.changes.subscribe()
    }

    fn run_here<'a>(&'a self, id: &str, cancel: CancellationToken) -> Running<'a> {
        self.running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.to_owned(), cancel);
        Running {
            tasks: self,
            id: id.to_owned(),
        }
    }

    fn cancel_here(&self, id: &str) {
        let token = self
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned();
        if let Some(t) = token {
            t.cancel();
        }
    }

    /// Lets the store apply expiry, at most once a second.
    async fn sweep(&self) {
        let now = now_ms();
        let last = self.last_sweep.load(Ordering::Relaxed);
        if now.saturating_sub(last) < SWEEP_EVERY_MS
            || self
                .last_sweep
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            return;
        }
        if let Err(e) = self.store.expire().await {
            tracing::warn!(error = %e, "the task store could not apply expiry");
        }
    }

    /// The task `id` if `principal` created it: another caller's task answers exactly like
    /// an unknown one, so that its existence does not leak.
    /// `owns` says whether a record's caller digest is the caller's (under any of the
    /// server's keys: a task created before a key rotation stays its creator's).
    pub async fn find(
        &self,
        id: &str,
        owns: &(dyn Fn(Option<&str>) -> bool + Send + Sync),
    ) -> Result<TaskRecord, RpcError> {
        self.sweep().await;
        self.store
            .get(id)
            .await
            .map_err(store_error)?
            .filter(|r| owns(r.principal.as_deref()))
            .ok_or_else(|| not_found(id))
    }
}

/// -32602 for a task id that names no task of this caller (tasks extension, "Error
/// Handling": invalid or nonexistent taskId, expired task).
pub(crate) fn not_found(id: &str) -> RpcError {
    RpcError::invalid_params(format!(
        "Failed to retrieve task: Task not found: no task {} for this caller (the id is wrong, the task expired, or the server that held it restarted)",
        clip(&serde_json::to_string(id).unwrap_or_default())
    ))
}

/// The error for a store that refused or failed.
fn store_error(e: TaskStoreError) -> RpcError {
    match e {
        TaskStoreError::Full {
            message,
            per_principal,
        } => RpcError::new(
            jsonrpc::code::TRANSPORT_REFUSED,
            format!("Too many tasks: {message}"),
        )
        .with_status(if per_principal { 429 } else { 503 }),
        other => {
            tracing::error!(error = %other, "the task store failed");
            crate::tasks::unavailable()
        }
    }
}

/// How a run of a function under a task ended.
enum Ended {
    Returned(CallToolResult),
    /// What it returned, as its call answers (or the error it ends with).
    Rendered(Result<Bytes, RpcError>),
    Asked(Vec<(String, Value)>),
    Outcome(TaskOutcome),
    /// Another holder has the task, or it ended: drop what this run produced.
    Lost,
}

impl Shared {
    /// The answer of a tool call, once the function returned: the rendered result, or the
    /// protocol error it ends with — a malformed answer it read (-32602), an error it
    /// recorded ([`Context::fail_with`]), or a capability it was refused (-32021).
    pub(crate) fn tool_outcome(
        &self,
        rev: Revision,
        result: CallToolResult,
        running: &Invoked<CallToolResult>,
    ) -> Result<Bytes, RpcError> {
        if let Some(e) = running.failure() {
            return Err(e);
        }
        let round = running.round().map(|r| &**r);
        if result.is_error()
            && let Some(caps) = round.and_then(Mrtr::refused)
        {
            return Err(RpcError::missing_capability(caps));
        }
        Ok(Bytes::from(render::tool_result(
            rev,
            &self.env,
            Cache::None,
            &result,
        )))
    }

    /// A `tools/call` of a tool that may run as a task, from a request that declared the
    /// extension.
    pub(crate) fn call_tool_as_task(
        self: &Arc<Self>,
        mut parts: RequestParts,
        def: &'static ToolDef,
        arguments: Option<&RawValue>,
        params: &Params<'_>,
        mut key: RoundKey,
    ) -> Result<Dispatched, RpcError> {
        let Some(tasks) = self.tasks.clone() else {
            return Err(RpcError::internal("tasks are not enabled on this server"));
        };
        let rev = parts.revision;
        // The task keeps its request to run it again when the client answers: a bounded copy.
        let kept = arguments.map_or(0, |a| a.get().len());
        let most = self.config.limits.max_task_request_bytes;
        if kept > most {
            return Err(RpcError::invalid_params(format!(
                "Invalid params: the arguments have {kept} bytes, and a task keeps at most {most} of its request (Limits::max_task_request_bytes); send less, or call `{}` without a task",
                def.name
            )));
        }
        self.admission.check_memory("a new task")?;
        let principal = self.callers.principal_of(&parts.extensions);
        // An anonymous caller's tasks count under its network, not one count for all.
        let counted_as = match principal {
            Some(_) => None,
            None => Some(self.callers.owner_of(&parts.extensions)),
        };
        key.arguments = super::invoker::arguments_text(&parts, arguments);
        key.principal = principal.clone();
        let request = task_request(def, rev, arguments, &parts.meta);
        // Nothing waits before the task exists but the store: the request's own cancellation
        // would only end the task the client is about to be given.
        parts.cancel = None;
        let mut running = self.invoker.start(Call {
            parts,
            function: Tool { def, arguments },
            round: Round::Task {
                key,
                state: params.request_state,
                responses: params.input_responses,
            },
        })?;
        let shared = self.clone();
        Ok(Dispatched::Pending(Box::pin(async move {
            let first =
                std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut running).poll(cx))).await;
            let round = running.round().cloned();
            match (first, round) {
                (Poll::Ready(Err(e)), _) => Err(render::error(rev, e)),
                (Poll::Ready(Ok(Step::Returned(result))), _) => {
                    running.disarm();
                    shared
                        .tool_outcome(rev, result, &running)
                        .map_err(|e| render::error(rev, e))
                }
                (Poll::Ready(Ok(Step::Asked(asked))), Some(round)) => {
                    // Answered in this call (MRTR); the future goes with the round.
                    drop(running);
                    Ok(shared.input_required(rev, &round, asked))
                }
                (Poll::Ready(Ok(Step::Asked(_))), None) => {
                    Err(RpcError::internal("input was asked outside a round"))
                }
                (Poll::Pending, round) => {
                    let Some(round) = round else {
                        return Err(RpcError::internal("a task runs outside a round"));
                    };
                    let call = running.call().clone();
                    let cancel = running.cancellation().cloned().unwrap_or_default();
                    let id = new_task_id().ok_or_else(|| {
                        tracing::error!("the system's random source failed");
                        RpcError::internal("Internal error: no task id could be made")
                    })?;
                    let claim = tasks.claim();
                    let mut new =
                        NewTask::new(id, principal, request, tasks.ttl, tasks.poll_interval);
                    new.answers = round.answers().clone();
                    new.counted_as = counted_as;
                    let mut record = TaskRecord::new(new, &claim, now_ms());
                    record.status_message = call.progress_so_far();
                    tasks.sweep().await;
                    // Durable before it is announced: "a tasks/get for the returned taskId
                    // would resolve".
                    tasks
                        .store
                        .create(record.clone())
                        .await
                        .map_err(|e| render::error(rev, store_error(e)))?;
                    call.become_task(&record.id);
                    // The run holds the cancellation from here.
                    running.disarm();
                    tasks.changed(&record.id);
                    tracing::debug!(task = %record.id, tool = def.name, "a tool call became a task");
                    let run = Run {
                        shared: shared.clone(),
                        tasks: tasks.clone(),
                        id: record.id.clone(),
                        claim,
                        def,
                        rev,
                        cancel,
                        deadline: record.created_at.saturating_add(record.ttl_ms),
                    };
                    tokio::spawn(run.drive(running));
                    Ok(Bytes::from(render::task_created(
                        &shared.env,
                        rev,
                        &record.task(),
                    )))
                }
            }
        })))
    }

    /// `tasks/get`, `tasks/update`, `tasks/cancel`.
    pub(crate) fn task_method(
        self: &Arc<Self>,
        parts: RequestParts,
        method: Method,
        params: &Params<'_>,
    ) -> Result<Dispatched, RpcError> {
        // The gate comes before the lookup: an undeclared request learns nothing of tasks.
        if !declared(&parts.meta.client_capabilities) {
            return Err(missing_extension());
        }
        let Some(tasks) = self.tasks.clone() else {
            return Err(RpcError::method_not_found(method_name(method)));
        };
        let id = match params.task_id {
            None => {
                return Err(RpcError::invalid_params(
                    "Invalid params: missing required parameter `taskId`",
                ));
            }
            Some(raw) => raw_str(raw)
                .ok_or_else(|| {
                    RpcError::invalid_params(format!(
                        "Invalid params: `taskId` must be a string, not {}",
                        clip(raw.get())
                    ))
                })?
                .into_owned(),
        };
        let responses = match method {
            Method::TasksUpdate => Some(input_responses(params.input_responses)?),
            _ => None,
        };
        let rev = parts.revision;
        let owns = self.callers.owner_test(&parts.extensions);
        let shared = self.clone();
        Ok(Dispatched::Pending(Box::pin(async move {
            let answer = async {
                if let Some(relayed) = tasks.relayed(&id, &*owns) {
                    let (source, upstream) = relayed?;
                    let asked = (method, responses, rev);
                    return relay_method(&shared, &*source, asked, (&id, &upstream)).await;
                }
                let record = tasks.find(&id, &*owns).await?;
                match (method, responses) {
                    (Method::TasksUpdate, Some(responses)) => {
                        shared
                            .update_task(
                                &tasks,
                                record,
                                responses,
                                (parts.extensions, parts.transport),
                            )
                            .await?;
                        Ok(ack(&shared, rev))
                    }
                    (Method::TasksCancel, _) => {
                        match tasks.store.cancel(&id).await.map_err(store_error)? {
                            CancelOutcome::NotFound => return Err(not_found(&id)),
                            CancelOutcome::Requested => tasks.cancel_here(&id),
                            CancelOutcome::Cancelled => tasks.changed(&id),
                            _ => {}
                        }
                        Ok(ack(&shared, rev))
                    }
                    _ => Ok(Bytes::from(render::result_value(
                        rev,
                        &shared.env,
                        Cache::None,
                        serde_json::to_value(record.detailed()).unwrap_or_default(),
                    ))),
                }
            };
            answer.await.map_err(|e| render::error(rev, e))
        })))
    }

    /// `tasks/update`: checks the answers to outstanding questions, stores them, and runs the
    /// function again once none is outstanding.
    async fn update_task(
        self: &Arc<Self>,
        tasks: &Arc<Tasks>,
        record: TaskRecord,
        responses: Map<String, Value>,
        (extensions, transport): (http::Extensions, Transport),
    ) -> Result<(), RpcError> {
        // The answer runs the tool again, under the updater's token: it must still be allowed
        // to (a narrower token than the one the task began with gets the 401 or 403).
        if let Some(entry) = self.catalog.registry.tool(&record.request.name) {
            let def = entry.def;
            self.callers.authorize(
                &extensions,
                format_args!("tool `{}`", def.name),
                def.scopes,
                def.principal,
            )?;
        }
        // A key that is not outstanding is ignored whatever its value ("A server SHOULD ignore
        // any inputResponses … mapped to a key that is not currently outstanding"); an answer
        // to an outstanding one must have its result's shape, or nothing is taken.
        for (key, answer) in &responses {
            let Some(asked) = record.input_requests.get(key) else {
                continue;
            };
            let method = asked
                .get("method")
                .and_then(Value::as_str)
                .unwrap_or_default();
            check_answer(method, answer).map_err(|e| {
                RpcError::invalid_params(format!(
                    "Invalid params: inputResponses[{key:?}] is not a valid {method} result: {}",
                    crate::handler::strip_position(&e)
                ))
            })?;
        }
        let outcome = tasks
            .store
            .update(
                &record.id,
                TaskUpdate::Answer {
                    responses,
                    lease: tasks.lease,
                },
            )
            .await
            .map_err(store_error)?;
        match outcome {
            UpdateOutcome::NotFound => Err(not_found(&record.id)),
            UpdateOutcome::Answered { runnable } => {
                tasks.changed(&record.id);
                if runnable {
                    self.resume(tasks, &record.id, (extensions, transport))
                        .await?;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Claims a task that waits to run again and runs its function from the start, with
    /// every answer so far, in the background.
    async fn resume(
        self: &Arc<Self>,
        tasks: &Arc<Tasks>,
        id: &str,
        by: (http::Extensions, Transport),
    ) -> Result<(), RpcError> {
        let claim = tasks.claim();
        let Some(record) = tasks.store.claim(id, &claim).await.map_err(store_error)? else {
            // Someone else took it: they run it.
            return Ok(());
        };
        let deadline = record.created_at.saturating_add(record.ttl_ms);
        let started = self.start_again(&record, by);
        let (def, rev, running) = match started {
            Ok(s) => s,
            Err(e) => {
                tasks
                    .store
                    .finish(id, &claim.holder, TaskOutcome::Failed(e))
                    .await
                    .map_err(store_error)?;
                tasks.changed(id);
                return Ok(());
            }
        };
        let run = Run {
            shared: self.clone(),
            tasks: tasks.clone(),
            id: id.to_owned(),
            claim,
            def,
            rev,
            // A task's function always has its token.
            cancel: running.cancellation().cloned().unwrap_or_default(),
            deadline,
        };
        tokio::spawn(run.drive(running));
        Ok(())
    }

    /// The function of a task, started again from its request and answers.
    fn start_again(
        self: &Arc<Self>,
        record: &TaskRecord,
        (extensions, transport): (http::Extensions, Transport),
    ) -> Result<(&'static ToolDef, Revision, Invoked<CallToolResult>), RpcError> {
        let req = &record.request;
        let entry = self.catalog.registry.tool(&req.name).ok_or_else(|| {
            RpcError::internal(format!(
                "Internal error: the task's tool `{}` is not served any more",
                req.name
            ))
        })?;
        let def = entry.def;
        let rev = Revision::parse(&req.revision)
            .filter(|r| r.features().tasks)
            .ok_or_else(|| {
                RpcError::internal(format!(
                    "Internal error: the task's revision {:?} has no tasks",
                    req.revision
                ))
            })?;
        let capabilities: ClientCapabilities =
            serde_json::from_value(req.client_capabilities.clone()).unwrap_or_default();
        let client_info: Option<Implementation> = req
            .client_info
            .clone()
            .and_then(|i| serde_json::from_value(i).ok());
        let meta = RequestMeta {
            client_capabilities: Arc::new(capabilities),
            client_info: ClientInfo::known(client_info),
            ..RequestMeta::default()
        };
        let arguments = req
            .arguments
            .as_ref()
            .map(|a| RawValue::from_string(a.clone()))
            .transpose()
            .map_err(|e| {
                RpcError::internal(format!("Internal error: the task's arguments: {e}"))
            })?;
        let key = RoundKey {
            method: "tools/call",
            name: def.name.into(),
            arguments: req.arguments.clone().map(Bytes::from),
            principal: record.principal.clone(),
        };
        let mut parts = RequestParts::new(rev, meta);
        parts.extensions = extensions;
        parts.transport = transport;
        parts.call.become_task(&record.id);
        let running = self.invoker.start(Call {
            parts,
            function: Tool {
                def,
                arguments: arguments.as_deref(),
            },
            round: Round::Resumed {
                key,
                answers: record.answers.clone(),
            },
        })?;
        Ok((def, rev, running))
    }
}

fn method_name(method: Method) -> &'static str {
    match method {
        Method::TasksUpdate => "tasks/update",
        Method::TasksCancel => "tasks/cancel",
        _ => "tasks/get",
    }
}

/// `inputResponses` of `tasks/update`: an object (required).
fn input_responses(raw: Option<&RawValue>) -> Result<Map<String, Value>, RpcError> {
    let bad = || {
        RpcError::invalid_params(
            "Invalid params: `tasks/update` needs `inputResponses`, an object mapping each input request's key to the client's result",
        )
    };
    match raw.map(|r| serde_json::from_str::<Value>(r.get())) {
        Some(Ok(Value::Object(m))) => Ok(m),
        _ => Err(bad()),
    }
}

/// The empty acknowledgement of `tasks/update` and `tasks/cancel`.
fn ack(shared: &Shared, rev: Revision) -> Bytes {
    Bytes::from(render::result_value(
        rev,
        &shared.env,
        Cache::None,
        Value::Object(Map::new()),
    ))
}

/// What a task keeps of the request that created it, to run its function again.
fn task_request(
    def: &ToolDef,
    rev: Revision,
    arguments: Option<&RawValue>,
    meta: &RequestMeta,
) -> TaskRequest {
    let mut request = TaskRequest::new("tools/call", def.name, rev.as_str());
    request.arguments = arguments.map(|a| a.get().to_owned());
    request.client_capabilities =
        serde_json::to_value(&*meta.client_capabilities).unwrap_or_default();
    request.client_info = meta
        .client_info
        .get()
        .and_then(|i| serde_json::to_value(i).ok());
    request
}

/// One run of a task's function, held by this process.
struct Run {
    shared: Arc<Shared>,
    tasks: Arc<Tasks>,
    id: String,
    claim: Claim,
    def: &'static ToolDef,
    rev: Revision,
    cancel: CancellationToken,
    /// The end of the task's time to live (milliseconds since the Unix epoch).
    deadline: u64,
}

impl Run {
    /// Runs the function until it returns, asks, is cancelled or runs out of time, renewing
    /// the claim meanwhile; then records what happened.
    async fn drive(self, mut running: Invoked<CallToolResult>) {
        let tasks = self.tasks.clone();
        let _here = tasks.run_here(&self.id, self.cancel.clone());
        let ended = match self.watch(&mut running).await {
            Ended::Returned(result) => {
                Ended::Rendered(self.shared.tool_outcome(self.rev, result, &running))
            }
            other => other,
        };
        drop(running);
        // The function's future is gone: anything it spawned sees the cancellation.
        self.cancel.cancel();
        let store = &self.tasks.store;
        let holder = self.claim.holder.as_str();
        let recorded = match ended {
            // (`Returned` became `Rendered` above.)
            Ended::Lost | Ended::Returned(_) => Ok(false),
            Ended::Asked(asked) => {
                let requests: Map<String, Value> = asked.into_iter().collect();
                store
                    .update(
                        &self.id,
                        TaskUpdate::InputRequired {
                            holder: holder.to_owned(),
                            requests,
                        },
                    )
                    .await
                    .map(|o| o != UpdateOutcome::NotFound)
            }
            Ended::Rendered(rendered) => {
                let outcome = match rendered {
                    Ok(bytes) => match serde_json::from_slice::<Value>(&bytes) {
                        Ok(v) => TaskOutcome::Completed(v),
                        Err(e) => TaskOutcome::Failed(RpcError::internal(format!(
                            "Internal error: the result could not be kept: {e}"
                        ))),
                    },
                    Err(e) => TaskOutcome::Failed(render::error(self.rev, e)),
                };
                store.finish(&self.id, holder, outcome).await
            }
            Ended::Outcome(outcome) => store.finish(&self.id, holder, outcome).await,
        };
        match recorded {
            Ok(true) => self.tasks.changed(&self.id),
            Ok(false) => {}
            Err(e) => {
                tracing::error!(task = %self.id, error = %e, "the task store failed to record a task's outcome; it fails when its lease lapses");
            }
        }
    }

    async fn watch(&self, running: &mut Invoked<CallToolResult>) -> Ended {
        let name = self.def.name;
        let call = running.call().clone();
        let link = call.task();
        let until = Duration::from_millis(self.deadline.saturating_sub(now_ms()));
        let deadline = tokio::time::sleep(until);
        tokio::pin!(deadline);
        let mut heartbeat = tokio::time::interval(self.tasks.heartbeat);
        heartbeat.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // The first tick is immediate: the claim was just made.
        heartbeat.tick().await;
        loop {
            let step = &mut *running;
            let report = async {
                match link {
                    Some(l) => {
                        l.changed().await;
                        l.take_status()
                    }
                    None => std::future::pending().await,
                }
            };
            let update = tokio::select! {
                biased;
                () = self.cancel.cancelled() => return Ended::Outcome(TaskOutcome::Cancelled),
                step = step => {
                    return match step {
                        Ok(Step::Returned(result)) => Ended::Returned(result),
                        Ok(Step::Asked(asked)) => Ended::Asked(asked),
                        Err(e) => Ended::Outcome(TaskOutcome::Failed(e)),
                    };
                }
                () = &mut deadline => {
                    tracing::warn!(task = %self.id, tool = name, "a task ran out of time and was stopped");
                    return Ended::Outcome(TaskOutcome::Failed(RpcError::internal(
                        "Task expired before completion: its time to live elapsed",
                    )));
                }
                message = report => match message {
                    Some(message) => TaskUpdate::StatusMessage {
                        holder: self.claim.holder.clone(),
                        message,
                        lease: self.tasks.lease,
                    },
                    None => continue,
                },
                _ = heartbeat.tick() => TaskUpdate::Heartbeat {
                    holder: self.claim.holder.clone(),
                    lease: self.tasks.lease,
                },
            };
            let is_message = matches!(update, TaskUpdate::StatusMessage { .. });
            match self.tasks.store.update(&self.id, update).await {
                Ok(UpdateOutcome::Held { cancel_requested }) => {
                    if is_message {
                        self.tasks.changed(&self.id);
                    }
                    if cancel_requested {
                        return Ended::Outcome(TaskOutcome::Cancelled);
                    }
                }
                Ok(_) => return Ended::Lost,
                Err(e) => {
                    tracing::warn!(task = %self.id, error = %e, "the task store failed a heartbeat; the task runs on");
                }
            }
        }
    }
}
