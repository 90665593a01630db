//! Tasks (the tasks extension, `io.modelcontextprotocol/tasks`): a tool call the server
//! answers with a task is followed — polled with `tasks/get` at the server's
//! `pollIntervalMs`, its questions answered by the registered handlers with `tasks/update`,
//! cancelled with `tasks/cancel` when the caller gives up.
//!
//! [`Client::call_tool`] does all of it for the caller; [`Client::start_tool`] hands the task
//! over as a [`TaskHandle`] for callers that follow it themselves.

use std::collections::HashSet;
use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::rounds::InputRequest;
use super::{Client, ClientError};
use crate::protocol::jsonrpc::{RpcError, code};
use crate::protocol::tasks::{DetailedTask, Task, TaskStatus};
use crate::protocol::types::{CallToolResult, JsonObject};

/// The polling interval when the server suggests none.
const DEFAULT_POLL: Duration = Duration::from_secs(1);
/// Bounds on the interval a server may suggest.
const MIN_POLL: Duration = Duration::from_millis(10);
const MAX_POLL: Duration = Duration::from_secs(60);

/// What [`Client::start_tool`] got: the result at once, or a task to follow.
#[derive(Debug)]
#[non_exhaustive]
pub enum ToolCall {
    /// The server answered with the result.
    Done(CallToolResult),
    /// The server runs the call as a task.
    Task(TaskHandle),
}

/// A task of the server (the tasks extension), followed by this client.
///
/// Dropping a handle leaves the task alone: it runs on until it ends or expires, and
/// [`Client::task`] finds it again by its id. (The calls that follow a task for the caller,
/// [`Client::call_tool`] and [`Client::call`], cancel it when they are dropped or time out.)
#[derive(Clone, Debug)]
pub struct TaskHandle {
    client: Client,
    task: Task,
    /// The input requests already answered: a key is never asked twice in a task's life.
    answered: HashSet<String>,
}

impl TaskHandle {
    fn new(client: Client, task: Task) -> Self {
        TaskHandle {
            client,
            task,
            answered: HashSet::new(),
        }
    }

    /// The task's id.
    pub fn id(&self) -> &str {
        &self.task.task_id
    }

    /// The task as last seen: at its creation, or at the last [`get`](Self::get).
    pub fn task(&self) -> &Task {
        &self.task
    }

    /// The interval the server suggests between two polls (bounded to 10 ms … 60 s; 1 s
    /// when it suggests none).
    pub fn poll_interval(&self) -> Duration {
        self.task
            .poll_interval_ms
            .map_or(DEFAULT_POLL, Duration::from_millis)
            .clamp(MIN_POLL, MAX_POLL)
    }

    /// Reads the task (`tasks/get`): its status, and its questions, result or error.
    pub async fn get(&mut self) -> Result<DetailedTask, ClientError> {
        let raw = self
            .client
            .send("tasks/get", task_params(self.id()))
            .await?;
        let detailed: DetailedTask = Client::decode("tasks/get", &raw)?;
        if detailed.task.task_id != self.task.task_id {
            return Err(ClientError::Protocol(format!(
                "tasks/get for task {:?} answered about task {:?}",
                self.task.task_id, detailed.task.task_id
            )));
        }
        self.task = detailed.task.clone();
        Ok(detailed)
    }

    /// Answers the task's questions (`tasks/update` with `inputResponses`, keyed like its
    /// `inputRequests`).
    pub async fn answer(&self, responses: JsonObject) -> Result<(), ClientError> {
        let mut params = task_params(self.id());
        params.insert("inputResponses".into(), Value::Object(responses));
        self.client.send("tasks/update", params).await.map(|_| ())
    }

    /// Answers the questions of an `input_required` task with the client's handlers
    /// (elicitation, sampling, roots), each once; returns how many it answered.
    pub async fn respond(&mut self, task: &DetailedTask) -> Result<usize, ClientError> {
        let mut fresh = Vec::new();
        for (key, request) in task.input_requests.iter().flatten() {
            if self.answered.contains(key) {
                continue;
            }
            let request: InputRequest = serde_json::from_value(request.clone()).map_err(|e| {
                ClientError::Protocol(format!("malformed input request {key:?} of a task: {e}"))
            })?;
            fresh.push((key.clone(), request));
        }
        if fresh.is_empty() {
            return Ok(0);
        }
        let responses = self.client.answer_inputs("tasks/update", fresh).await?;
        let n = responses.len();
        let keys: Vec<String> = responses.keys().cloned().collect();
        self.answer(responses).await?;
        self.answered.extend(keys);
        Ok(n)
    }

    /// Asks the server to cancel the task (`tasks/cancel`). Cancellation is cooperative: the
    /// task may still end otherwise; [`get`](Self::get) tells.
    pub async fn cancel(&self) -> Result<(), ClientError> {
        self.client
            .send("tasks/cancel", task_params(self.id()))
            .await
            .map(|_| ())
    }

    /// Follows the task to its end, answering its questions with the client's handlers: the
    /// tool's result; the task's error as [`ClientError::Rpc`] when it failed;
    /// [`ClientError::TaskCancelled`] when it was cancelled.
    pub async fn wait(self) -> Result<CallToolResult, ClientError> {
        self.wait_with(|_| {}).await
    }

    /// [`wait`](Self::wait), calling `on_update` with the task each time it is read (to show
    /// its `statusMessage`, say).
    pub async fn wait_with(
        mut self,
        on_update: impl FnMut(&DetailedTask) + Send,
    ) -> Result<CallToolResult, ClientError> {
        self.follow(on_update).await
    }

    async fn follow(
        &mut self,
        mut on_update: impl FnMut(&DetailedTask) + Send,
    ) -> Result<CallToolResult, ClientError> {
        let max_rounds = self.client.inner.max_rounds;
        let mut rounds = 0;
        loop {
            let task = self.get().await?;
            on_update(&task);
            match task.task.status {
                TaskStatus::Completed => {
                    let result = task.result.ok_or_else(|| {
                        ClientError::Protocol(format!(
                            "task {} completed without a result",
                            self.id()
                        ))
                    })?;
                    return serde_json::from_value(result).map_err(|error| ClientError::Decode {
                        method: "tools/call".into(),
                        error,
                    });
                }
                TaskStatus::Failed => {
                    let error = task.rpc_error().unwrap_or_else(|| {
                        RpcError::new(code::INTERNAL_ERROR, "the task failed without an error")
                    });
                    return Err(ClientError::Rpc {
                        method: "tools/call".into(),
                        error: Box::new(error),
                        status: 200,
                    });
                }
                TaskStatus::Cancelled => {
                    return Err(ClientError::TaskCancelled {
                        task_id: self.id().to_owned(),
                    });
                }
                TaskStatus::InputRequired if self.respond(&task).await? > 0 => {
                    rounds += 1;
                    if rounds > max_rounds {
                        return Err(ClientError::TooManyRounds {
                            method: "tools/call".into(),
                            rounds: max_rounds,
                        });
                    }
                    // Read it again at once: the answers may have let it go on.
                    continue;
                }
                _ => {}
            }
            tokio::time::sleep(self.poll_interval()).await;
        }
    }
}

fn task_params(id: &str) -> JsonObject {
    let mut params = Map::new();
    params.insert("taskId".into(), json!(id));
    params
}

/// Cancels the task when the call that follows it is dropped before it ended.
struct CancelOnDrop {
    client: Client,
    id: String,
    armed: bool,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let (client, id) = (self.client.clone(), std::mem::take(&mut self.id));
        runtime.spawn(async move {
            if let Err(e) = client.send("tasks/cancel", task_params(&id)).await {
                tracing::debug!(task = %id, "could not cancel a task given up: {e}");
            }
        });
    }
}

impl Client {
    /// Calls a tool, and hands a task over instead of following it: [`ToolCall::Done`] with
    /// the result when the server answered at once, [`ToolCall::Task`] when it runs the call
    /// as a task.
    pub async fn start_tool(
        &self,
        name: &str,
        arguments: impl Serialize,
    ) -> Result<ToolCall, ClientError> {
        let raw = self.call_tool_raw(name, arguments).await?;
        #[derive(serde::Deserialize)]
        struct Kind {
            #[serde(rename = "resultType", default)]
            result_type: Option<String>,
        }
        let kind: Kind = Self::decode("tools/call", &raw)?;
        if kind.result_type.as_deref() == Some("task") {
            let task: Task = Self::decode("tools/call", &raw)?;
            return Ok(ToolCall::Task(TaskHandle::new(self.clone(), task)));
        }
        Ok(ToolCall::Done(Self::decode("tools/call", &raw)?))
    }

    /// Finds a task of this caller by its id (`tasks/get`), to follow it again.
    pub async fn task(&self, id: impl Into<String>) -> Result<TaskHandle, ClientError> {
        let id = id.into();
        let raw = self.send("tasks/get", task_params(&id)).await?;
        let detailed: DetailedTask = Self::decode("tasks/get", &raw)?;
        Ok(TaskHandle::new(self.clone(), detailed.task))
    }

    /// Follows a task to its end for [`call_tool`](Client::call_tool): cancelled if the
    /// caller drops the call, or when [`task_timeout`](super::ClientBuilder::task_timeout)
    /// runs out.
    pub(super) async fn follow_task(
        &self,
        mut handle: TaskHandle,
    ) -> Result<CallToolResult, ClientError> {
        let mut guard = CancelOnDrop {
            client: self.clone(),
            id: handle.id().to_owned(),
            armed: true,
        };
        let out = match self.inner.task_timeout {
            None => handle.follow(|_| {}).await,
            Some(limit) => match tokio::time::timeout(limit, handle.follow(|_| {})).await {
                Ok(out) => out,
                Err(_) => {
                    guard.armed = false;
                    if let Err(e) = handle.cancel().await {
                        tracing::debug!(task = %handle.id(), "could not cancel a task that timed out: {e}");
                    }
                    return Err(ClientError::Timeout {
                        method: "tools/call".into(),
                        millis: limit.as_millis(),
                    });
                }
            },
        };
        if handle.task().status.is_terminal() {
            guard.armed = false;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

    use serde_json::{Value, json};

    use super::*;
    use crate::client::fake::{Reply, Seen, builder, call_meta, fake, meta, modern};
    use crate::protocol::types::ElicitResult;

    fn task(status: &str) -> Value {
        json!({"taskId": "t-1", "status": status, "createdAt": "2026-09-01T10:30:00.000Z",
            "lastUpdatedAt": "2026-09-01T10:30:00.000Z", "ttlMs": 60000, "pollIntervalMs": 10})
    }

    fn created() -> Value {
        let mut t = task("working");
        t["resultType"] = json!("task");
        t
    }

    fn got(status: &str, extra: Value) -> Value {
        let mut t = task(status);
        t["resultType"] = json!("complete");
        t.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        t
    }

    fn ask() -> Value {
        json!({"inputRequests": {"confirm": {"method": "elicitation/create",
            "params": {"mode": "form", "message": "Sure?", "requestedSchema":
                {"type": "object", "properties": {"ok": {"type": "boolean"}}}}}}})
    }

    fn done() -> Value {
        json!({"result": {"resultType": "complete",
            "content": [{"type": "text", "text": "finished"}]}})
    }

    #[tokio::test]
    async fn a_task_is_followed_to_its_result_and_its_questions_answered() {
        let gets = Arc::new(AtomicUsize::new(0));
        let n = gets.clone();
        let f = fake(modern(move |s: &Seen| match s.method() {
            "tools/call" => Reply::result(s, created()),
            "tasks/update" => Reply::result(s, json!({"resultType": "complete"})),
            _ => Reply::result(
                s,
                match n.fetch_add(1, SeqCst) {
                    0 => got("working", json!({"statusMessage": "1 of 2"})),
                    // Still shown after the answer (an eventually consistent server): the
                    // client does not ask its user twice.
                    1 | 2 => got("input_required", ask()),
                    _ => got("completed", done()),
                },
            ),
        }))
        .await;
        let asked = Arc::new(AtomicUsize::new(0));
        let a = asked.clone();
        let client = builder()
            .on_elicitation(move |_| {
                a.fetch_add(1, SeqCst);
                async {
                    Ok(ElicitResult::accept(
                        json!({"ok": true}).as_object().cloned().unwrap(),
                    ))
                }
            })
            .connect(&f.url)
            .await
            .unwrap();
        let out = client
            .call_tool("deploy", json!({"env": "prod"}))
            .await
            .unwrap();
        assert_eq!(out.content[0].as_text(), Some("finished"));
        assert_eq!(asked.load(SeqCst), 1);
        assert_eq!(
            f.methods(),
            [
                "server/discover",
                "tools/call",
                "tasks/get",
                "tasks/get",
                "tasks/update",
                "tasks/get",
                "tasks/get"
            ]
        );
        let mut m = call_meta();
        m["io.modelcontextprotocol/clientCapabilities"]["elicitation"] = json!({"form": {}});
        let update = f.last("tasks/update");
        assert_eq!(
            update.params(),
            json!({"taskId": "t-1", "_meta": m,
                "inputResponses": {"confirm": {"action": "accept", "content": {"ok": true}}}})
        );
        for s in f
            .posts()
            .iter()
            .filter(|s| s.method().starts_with("tasks/"))
        {
            assert_eq!(s.header("mcp-name"), Some("t-1"));
            assert_eq!(s.header("mcp-method"), Some(s.method()));
        }
        assert_eq!(
            f.last("tasks/get").params(),
            json!({"taskId": "t-1", "_meta": m})
        );
    }

    #[tokio::test]
    async fn a_failed_task_is_the_call_s_error_and_a_cancelled_one_says_so() {
        let f = fake(modern(|s: &Seen| {
            match (s.method(), s.params()["name"].as_str()) {
                ("tools/call", _) => Reply::result(s, created()),
                _ => Reply::result(
                    s,
                    got(
                        "failed",
                        json!({"statusMessage": "boom",
                        "error": {"code": -32603, "message": "boom", "data": {"why": 1}}}),
                    ),
                ),
            }
        }))
        .await;
        let client = builder().connect(&f.url).await.unwrap();
        let err = client.call_tool("job", ()).await.unwrap_err();
        match &err {
            ClientError::Rpc {
                method,
                error,
                status,
            } => {
                assert_eq!((method.as_str(), *status), ("tools/call", 200));
                assert_eq!((error.code, error.message.as_str()), (-32603, "boom"));
                assert_eq!(error.data, Some(json!({"why": 1})));
            }
            other => panic!("{other:?}"),
        }
        // Nothing to cancel: the task ended.
        assert!(!f.methods().iter().any(|m| m == "tasks/cancel"));

        let f = fake(modern(|s: &Seen| match s.method() {
            "tools/call" => Reply::result(s, created()),
            _ => Reply::result(s, got("cancelled", json!({}))),
        }))
        .await;
        let client = builder().connect(&f.url).await.unwrap();
        let err = client.call::<String>("job", ()).await.unwrap_err();
        assert_eq!(err.to_string(), "the task t-1 was cancelled");
    }

    #[tokio::test]
    async fn a_call_given_up_cancels_its_task() {
        let f = fake(modern(|s: &Seen| match s.method() {
            "tools/call" => Reply::result(s, created()),
            "tasks/cancel" => Reply::result(s, json!({"resultType": "complete"})),
            _ => Reply::result(s, got("working", json!({}))),
        }))
        .await;
        // Dropped by its caller.
        let client = builder().connect(&f.url).await.unwrap();
        let gave_up =
            tokio::time::timeout(Duration::from_millis(100), client.call_tool("job", ())).await;
        assert!(gave_up.is_err());
        f.wait_for("tasks/cancel").await;
        assert_eq!(
            f.last("tasks/cancel").params(),
            json!({"taskId": "t-1", "_meta": call_meta()})
        );
        // Out of time.
        let client = builder()
            .task_timeout(Duration::from_millis(50))
            .connect(&f.url)
            .await
            .unwrap();
        let before = f.methods().iter().filter(|m| *m == "tasks/cancel").count();
        let err = client.call_tool("job", ()).await.unwrap_err();
        assert!(
            matches!(&err, ClientError::Timeout { method, millis: 50 } if method == "tools/call"),
            "{err:?}"
        );
        let after = f.methods().iter().filter(|m| *m == "tasks/cancel").count();
        assert_eq!(after, before + 1, "cancelled before the error is returned");
    }

    #[tokio::test]
    async fn start_tool_hands_the_task_over() {
        let f = fake(modern(|s: &Seen| {
            match (s.method(), s.params()["name"].as_str()) {
                ("tools/call", Some("quick")) => Reply::result(
                    s,
                    json!({"resultType": "complete", "content": [{"type": "text", "text": "now"}]}),
                ),
                ("tools/call", _) => Reply::result(s, created()),
                ("tasks/get", _) => Reply::result(s, got("input_required", ask())),
                _ => Reply::result(s, json!({"resultType": "complete"})),
            }
        }))
        .await;
        let client = builder().connect(&f.url).await.unwrap();
        match client.start_tool("quick", ()).await.unwrap() {
            ToolCall::Done(r) => assert_eq!(r.content[0].as_text(), Some("now")),
            other => panic!("{other:?}"),
        }
        let ToolCall::Task(mut handle) = client.start_tool("slow", ()).await.unwrap() else {
            panic!("a task")
        };
        assert_eq!(handle.id(), "t-1");
        assert_eq!(handle.task().status, TaskStatus::Working);
        assert_eq!(handle.poll_interval(), Duration::from_millis(10));
        let t = handle.get().await.unwrap();
        assert_eq!(t.task.status, TaskStatus::InputRequired);
        assert_eq!(handle.task().status, TaskStatus::InputRequired);
        // No elicitation handler: the caller answers itself.
        let err = handle.respond(&t).await.unwrap_err();
        assert!(matches!(err, ClientError::MissingHandler { .. }), "{err:?}");
        handle
            .answer(
                json!({"confirm": {"action": "decline"}})
                    .as_object()
                    .cloned()
                    .unwrap(),
            )
            .await
            .unwrap();
        handle.cancel().await.unwrap();
        // Dropping a handle cancels nothing; the task is found again by its id.
        drop(handle);
        let again = client.task("t-1").await.unwrap();
        assert_eq!(again.task().status, TaskStatus::InputRequired);
        assert_eq!(
            f.methods(),
            [
                "server/discover",
                "tools/call",
                "tools/call",
                "tasks/get",
                "tasks/update",
                "tasks/cancel",
                "tasks/get"
            ]
        );
    }

    #[tokio::test]
    async fn a_client_that_takes_no_tasks_does_not_declare_them() {
        let f = fake(modern(|s: &Seen| {
            Reply::result(
                s,
                json!({"resultType": "complete", "content": [{"type": "text", "text": "ok"}]}),
            )
        }))
        .await;
        let client = builder().tasks(false).connect(&f.url).await.unwrap();
        client.call_tool("t", ()).await.unwrap();
        assert_eq!(
            f.last("tools/call").params(),
            json!({"name": "t", "_meta": meta()})
        );
        // And other requests never declare them.
        let client = builder().connect(&f.url).await.unwrap();
        client.request("tools/list", json!({})).await.unwrap();
        assert_eq!(f.last("tools/list").params(), json!({"_meta": meta()}));
    }

    #[tokio::test]
    async fn a_task_answers_only_tools_call() {
        let f = fake(modern(|s: &Seen| Reply::result(s, created()))).await;
        let client = builder().connect(&f.url).await.unwrap();
        let err = client
            .request("prompts/get", json!({"name": "p"}))
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "protocol error: the result of prompts/get has an unknown resultType \"task\""
        );
    }
}
