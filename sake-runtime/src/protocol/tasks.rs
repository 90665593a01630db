//! The tasks extension on the wire (`io.modelcontextprotocol/tasks`, SEP-2663): its
//! identifier, how a request declares it, a task and the states it goes through.
//!
//! The extension exists only where the revision table says so (`Features::tasks`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::jsonrpc::{RpcError, code};
use super::types::ClientCapabilities;

/// The extension's identifier, the key under `capabilities.extensions`.
pub const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// Whether a request's client capabilities declare the extension: the key is present under
/// `extensions` with an object value (the extension defines no settings: "an empty object
/// indicates support"). Only the request being served counts (SEP-2663, "Capability
/// negotiation").
pub fn declared(caps: &ClientCapabilities) -> bool {
    caps.extensions
        .as_ref()
        .and_then(|e| e.get(EXTENSION))
        .is_some_and(Value::is_object)
}

/// The `ClientCapabilities` object that declares the extension (`data.requiredCapabilities`
/// of -32021, and what a client sends).
pub fn capabilities() -> Value {
    json!({ "extensions": { EXTENSION: {} } })
}

/// -32021 for a request that needs the extension and did not declare it (the task methods,
/// `subscriptions/listen` with `taskIds`, a tool that runs only as a task).
pub fn missing_extension() -> RpcError {
    RpcError::new(
        code::MISSING_REQUIRED_CLIENT_CAPABILITY,
        format!(
            "Missing required client capability: the tasks extension; declare `extensions[\"{EXTENSION}\"]: {{}}` in the request's `_meta[\"io.modelcontextprotocol/clientCapabilities\"]`"
        ),
    )
    .with_data(json!({ "requiredCapabilities": capabilities() }))
}

/// The status of a task.
///
/// `working` and `input_required` alternate; `completed`, `failed` and `cancelled` are
/// terminal: a task in one of them never changes again.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TaskStatus {
    /// Being processed.
    Working,
    /// Waiting for the client to answer its `inputRequests` (with `tasks/update`).
    InputRequired,
    /// The request returned a result (a tool error, `isError: true`, included).
    Completed,
    /// The request failed with a JSON-RPC error.
    Failed,
    /// Cancelled before it completed.
    Cancelled,
}

impl TaskStatus {
    /// Whether the status never changes again.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }

    /// The status as it appears on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }
}

impl std::fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A task: what `tools/call` answers with (`resultType: "task"`), and the common part of what
/// `tasks/get` and `notifications/tasks` carry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Task {
    /// The task's id, chosen by the server (unguessable).
    pub task_id: String,
    /// Where it stands.
    pub status: TaskStatus,
    /// A message for a person about the current status (progress, the reason of a failure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// When it was created (ISO 8601).
    pub created_at: String,
    /// When it last changed (ISO 8601).
    pub last_updated_at: String,
    /// How long after its creation the server keeps it, in milliseconds; `None` (`null`) for
    /// unlimited. Always on the wire.
    #[serde(default)]
    pub ttl_ms: Option<u64>,
    /// How often the server suggests polling `tasks/get`, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub poll_interval_ms: Option<u64>,
}

/// A task with what its status carries: the questions of an `input_required` task, the
/// result of a `completed` one, the error of a `failed` one (`tasks/get`,
/// `notifications/tasks`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct DetailedTask {
    /// The task.
    #[serde(flatten)]
    pub task: Task,
    /// `input_required`: every outstanding question, by key (`{method, params}` each).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<Map<String, Value>>,
    /// `completed`: the result, exactly what the request would have returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// `failed`: the JSON-RPC error object (`code`, `message`, `data`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
}

impl DetailedTask {
    /// The error of a `failed` task, as an [`RpcError`]; an unreadable error object reads as
    /// an internal error describing it.
    pub fn rpc_error(&self) -> Option<RpcError> {
        let e = self.error.as_ref()?;
        let code = e
            .get("code")
            .and_then(Value::as_i64)
            .and_then(|c| i32::try_from(c).ok())
            .unwrap_or(code::INTERNAL_ERROR);
        let message = e
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("the task failed without a message");
        let err = RpcError::new(code, message);
        Some(match e.get("data") {
            Some(d) => err.with_data(d.clone()),
            None => err,
        })
    }
}

/// A JSON-RPC error as the `error` of a failed task.
pub fn error_object(e: &RpcError) -> Value {
    let mut v = json!({ "code": e.code, "message": e.message });
    if let Some(d) = &e.data {
        v["data"] = d.clone();
    }
    v
}

/// Milliseconds since the Unix epoch as an ISO 8601 timestamp in UTC, to the millisecond
/// (`2026-09-01T10:30:00.000Z`).
pub fn timestamp(unix_ms: u64) -> String {
    let secs = unix_ms / 1000;
    let millis = unix_ms % 1000;
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    let (hour, minute, second) = (rem / 3600, rem % 3600 / 60, rem % 60);
    // Days since 1970-01-01 to a civil date (H. Hinnant, "chrono-Compatible Low-Level Date
    // Algorithms", days_from_civil inverted).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}.{millis:03}Z")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_iso_8601_utc() {
        assert_eq!(timestamp(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(timestamp(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(timestamp(1_788_258_600_123), "2026-09-01T10:30:00.123Z");
        assert_eq!(timestamp(4_107_542_399_999), "2100-02-28T23:59:59.999Z");
    }

    #[test]
    fn a_declaration_is_an_object_under_the_key() {
        let caps = |v: Value| serde_json::from_value::<ClientCapabilities>(v).unwrap();
        assert!(declared(&caps(capabilities())));
        assert!(declared(&caps(
            json!({"extensions": {EXTENSION: {"future": 1}}})
        )));
        assert!(!declared(&caps(json!({"extensions": {EXTENSION: true}}))));
        assert!(!declared(&caps(json!({"extensions": {}}))));
        assert!(!declared(&caps(json!({"tasks": {}}))));
    }

    #[test]
    fn a_task_always_carries_ttl_ms_and_never_the_old_names() {
        let t = Task {
            task_id: "t1".into(),
            status: TaskStatus::InputRequired,
            status_message: None,
            created_at: timestamp(0),
            last_updated_at: timestamp(0),
            ttl_ms: None,
            poll_interval_ms: Some(1000),
        };
        assert_eq!(
            serde_json::to_value(&t).unwrap(),
            json!({"taskId": "t1", "status": "input_required",
                "createdAt": "1970-01-01T00:00:00.000Z", "lastUpdatedAt": "1970-01-01T00:00:00.000Z",
                "ttlMs": null, "pollIntervalMs": 1000})
        );
        let d: DetailedTask = serde_json::from_value(json!({"resultType": "complete",
            "taskId": "t1", "status": "failed", "createdAt": "x", "lastUpdatedAt": "y",
            "ttlMs": 5, "error": {"code": -32603, "message": "boom", "data": {"a": 1}}}))
        .unwrap();
        assert_eq!(d.task.status, TaskStatus::Failed);
        let e = d.rpc_error().unwrap();
        assert_eq!((e.code, e.message.as_str()), (-32603, "boom"));
        assert_eq!(e.data, Some(json!({"a": 1})));
        assert_eq!(
            error_object(&e),
            json!({"code": -32603, "message": "boom", "data": {"a": 1}})
        );
    }
}
