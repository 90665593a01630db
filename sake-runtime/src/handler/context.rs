//! [`Context`]: what a tool, prompt or resource function knows about the request it serves,
//! and what it can send back while it runs.

use std::borrow::Cow;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::json;

use super::events::Notifier;
use super::input::{self, Elicitation, InputChannel, InputError, Need};
use crate::protocol::Revision;
use crate::protocol::jsonrpc::{self, RequestId, RpcError};
use crate::protocol::meta::{INPUT_KEY, ProgressToken, RequestMeta};
use crate::protocol::types::{
    ClientCapabilities, CreateMessageRequest, CreateMessageResult, ElicitAction, ElicitResult,
    Implementation, ListRootsResult, LoggingLevel, Root,
};

/// The sending half of a request's stream: JSON-RPC messages that go out before the result.
pub(crate) type Sink = mpsc::Sender<Bytes>;

/// The request a function is serving, and the way to talk back while it runs.
///
/// Declare a parameter of type `Context` on a `#[tool]`, `#[prompt]` or `#[resource]` function
/// to receive it; it is not an argument and does not appear in the schema. It is cheap to
/// clone, and can be moved into tasks the function spawns.
///
/// ```standalone_crate
/// use sake::prelude::*;
///
/// /// Counts to three, reporting progress.
/// #[tool]
/// async fn count(ctx: Context) -> String {
///     for i in 1..=3 {
///         ctx.progress(f64::from(i), Some(3.0)).await;
///     }
///     "done".into()
/// }
/// ```
#[derive(Clone)]
pub struct Context {
    inner: Arc<Inner>,
}

struct Inner {
    revision: Revision,
    meta: RequestMeta,
    sink: Option<Sink>,
    /// `None` for a function that takes no `Context` (nothing could observe the token).
    cancel: Option<CancellationToken>,
    extensions: http::Extensions,
    name: Option<Cow<'static, str>>,
    input: InputChannel,
    notifier: Option<Notifier>,
    states: Option<Arc<super::state::StateMap>>,
    call: Arc<CallState>,
}

/// What a running function reports besides its return value, read by the dispatcher: the
/// protocol error it ends the call with, and the task the call became.
#[derive(Debug, Default)]
pub(crate) struct CallState {
    failure: Mutex<Option<RpcError>>,
    task: OnceLock<TaskLink>,
    /// The last progress reported before the call became a task: the task's first status.
    progress: Mutex<Option<String>>,
}

/// A call that runs as a task (the tasks extension): where its progress goes.
#[derive(Debug)]
pub(crate) struct TaskLink {
    id: String,
    status: Mutex<Option<String>>,
    changed: tokio::sync::Notify,
}

impl CallState {
    /// The protocol error recorded with [`Context::fail_with`], taken.
    pub fn take_failure(&self) -> Option<RpcError> {
        self.failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// From now on the call runs as the task `id`: progress becomes its status message, and
    /// log messages are not sent (a task has no stream: the tasks extension does not carry
    /// `notifications/progress` or `notifications/message`).
    pub fn become_task(&self, id: &str) -> &TaskLink {
        self.task.get_or_init(|| TaskLink {
            id: id.to_owned(),
            status: Mutex::new(None),
            changed: tokio::sync::Notify::new(),
        })
    }

    /// The protocol error recorded with [`Context::fail_with`], left for the dispatcher.
    pub fn failure(&self) -> Option<RpcError> {
        self.failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The task the call runs as, if it became one.
    pub fn task(&self) -> Option<&TaskLink> {
        self.task.get()
    }

    /// The last progress the function reported before it became a task, as a status.
    pub fn progress_so_far(&self) -> Option<String> {
        self.progress
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl TaskLink {
    fn report(&self, message: String) {
        *self.status.lock().unwrap_or_else(PoisonError::into_inner) = Some(message);
        self.changed.notify_one();
    }

    /// The status message reported since the last call, taken.
    pub fn take_status(&self) -> Option<String> {
        self.status
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// Completes when a status message was reported since the last call.
    pub async fn changed(&self) {
        self.changed.notified().await;
    }
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("revision", &self.inner.revision)
            .field("progress_token", &self.inner.meta.progress_token)
            .field("log_level", &self.inner.meta.log_level)
            .finish_non_exhaustive()
    }
}

/// Everything a transport knows about a request, gathered before dispatch.
pub(crate) struct RequestParts {
    pub revision: Revision,
    pub meta: RequestMeta,
    pub sink: Option<Sink>,
    pub extensions: http::Extensions,
    pub input: InputChannel,
    pub notifier: Option<Notifier>,
    /// A cancellation token the transport keeps (to cancel by id); a fresh one otherwise.
    pub cancel: Option<CancellationToken>,
    pub states: Option<Arc<super::state::StateMap>>,
    /// Shared with the dispatcher, which reads it when the function ends.
    pub call: Arc<CallState>,
    /// What carried the request, as its transport told the connection.
    pub transport: Transport,
}

/// How a request reached the server: what the transport that carried it says it is (never
/// guessed from the request).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Transport {
    /// Streamable HTTP (a request the server's HTTP endpoint took, with or without a known
    /// client address).
    Http,
    /// stdio: newline-delimited JSON-RPC on the process's standard streams (`Service::serve_stdio`,
    /// `Service::serve_io`).
    Stdio,
    /// Another stream of messages: a connection of your own through `Service::connect` (a Unix
    /// socket, …), or `TestClient`.
    #[default]
    Stream,
}

impl Transport {
    /// `http`, `stdio` or `stream`.
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Http => "http",
            Transport::Stdio => "stdio",
            Transport::Stream => "stream",
        }
    }
}

impl RequestParts {
    /// Parts with nothing but a revision and metadata.
    pub fn new(revision: Revision, meta: RequestMeta) -> Self {
        RequestParts {
            revision,
            meta,
            sink: None,
            extensions: http::Extensions::new(),
            input: InputChannel::None,
            notifier: None,
            cancel: None,
            states: None,
            call: Arc::default(),
            transport: Transport::Stream,
        }
    }
}

impl Context {
    pub(crate) fn new(
        mut parts: RequestParts,
        name: Option<Cow<'static, str>>,
    ) -> (Self, CancellationToken) {
        let cancel = parts.cancel.take().unwrap_or_default();
        (
            Context::with_token(parts, name, Some(cancel.clone())),
            cancel,
        )
    }

    /// The context of a function that takes none (its `State` and `Principal` parameters
    /// are read from it): no cancellation token is made, as nothing could observe one (the
    /// transport's own token, if it keeps one, is still carried).
    pub(crate) fn unobserved(mut parts: RequestParts, name: Option<Cow<'static, str>>) -> Self {
        let cancel = parts.cancel.take();
        Context::with_token(parts, name, cancel)
    }

    fn with_token(
        parts: RequestParts,
        name: Option<Cow<'static, str>>,
        cancel: Option<CancellationToken>,
    ) -> Self {
        Context {
            inner: Arc::new(Inner {
                revision: parts.revision,
                meta: parts.meta,
                sink: parts.sink,
                cancel,
                extensions: parts.extensions,
                name,
                input: parts.input,
                notifier: parts.notifier,
                states: parts.states,
                call: parts.call,
            }),
        }
    }

    /// A context for calling a function directly, outside any request (unit tests, scripts).
    ///
    /// It speaks 2026-07-28, declares no client capabilities, and drops progress and logs.
    pub fn detached() -> Self {
        Context::new(
            RequestParts::new(Revision::LATEST, RequestMeta::default()),
            None,
        )
        .0
    }

    /// The revision the request speaks.
    pub fn revision(&self) -> Revision {
        self.inner.revision
    }

    /// The client's capabilities: from this request's `_meta` (2026-07-28) or from the
    /// session's `initialize` (older revisions).
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        &self.inner.meta.client_capabilities
    }

    /// The client's name and version, when it gave them.
    pub fn client_info(&self) -> Option<&Implementation> {
        self.inner.meta.client_info.get()
    }

    /// The progress token, when the client asked for progress.
    pub fn progress_token(&self) -> Option<&ProgressToken> {
        self.inner.meta.progress_token.as_ref()
    }

    /// The request's `_meta` object as sent, if any.
    pub fn meta(&self) -> Option<&RawValue> {
        self.inner.meta.raw.get()
    }

    /// The HTTP request's extensions (empty on stdio): where an authentication layer leaves
    /// the principal for tools to read.
    pub fn extensions(&self) -> &http::Extensions {
        &self.inner.extensions
    }

    /// The caller, as the server's authorization verified them (feature `auth`): subject,
    /// scopes, client and claims of their token. `None` for an anonymous caller (a server
    /// without authorization, `Authorization::allow_anonymous`, or stdio without a token).
    #[cfg(feature = "auth")]
    #[cfg_attr(docsrs, doc(cfg(feature = "auth")))]
    pub fn principal(&self) -> Option<&crate::auth::Principal> {
        self.inner.extensions.get::<crate::auth::Principal>()
    }

    /// The id of the task this call runs as (the tasks extension), once it became one.
    pub fn task_id(&self) -> Option<&str> {
        self.inner.call.task().map(|t| t.id.as_str())
    }

    /// Ends the call with a JSON-RPC error (a protocol error) instead of the function's
    /// result: whatever the function returns afterwards is discarded. A call that runs as a
    /// task ends `failed` with this error.
    ///
    /// A tool that cannot do its job returns an error as its result instead (`Err(..)` or
    /// [`CallToolResult::error`](crate::CallToolResult::error): `isError`, which the model
    /// reads); a protocol error says the request itself could not be served. The first
    /// error recorded wins.
    pub fn fail_with(&self, error: RpcError) {
        let mut slot = self
            .inner
            .call
            .failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        slot.get_or_insert(error);
    }

    /// The state of the call (what the function recorded besides its value).
    pub(crate) fn call_state(&self) -> &Arc<CallState> {
        &self.inner.call
    }

    /// The name of the tool or prompt, or the URI of the resource, being served.
    pub fn name(&self) -> Option<&str> {
        self.inner.name.as_deref()
    }

    /// Reports progress, when the client asked for it (`_meta.progressToken`); otherwise does
    /// nothing. `progress` should grow with each call; `total` is the value at completion.
    ///
    /// In a call that runs as a task, progress becomes the task's `statusMessage` (the
    /// message, or `progress/total`), which the client reads with `tasks/get`.
    pub async fn progress(&self, progress: f64, total: Option<f64>) {
        self.send_progress(progress, total, None).await;
    }

    /// Reports progress with a message for a person.
    pub async fn progress_message(
        &self,
        progress: f64,
        total: Option<f64>,
        message: impl Into<String>,
    ) {
        self.send_progress(progress, total, Some(message.into()))
            .await;
    }

    async fn send_progress(&self, progress: f64, total: Option<f64>, message: Option<String>) {
        let status = || {
            message.clone().unwrap_or_else(|| match total {
                Some(total) => format!("{progress}/{total}"),
                None => format!("{progress}"),
            })
        };
        if let Some(task) = self.inner.call.task() {
            // A task's progress is its status message, read with `tasks/get`.
            task.report(status());
            return;
        }
        *self
            .inner
            .call
            .progress
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(status());
        let Some(token) = &self.inner.meta.progress_token else {
            return;
        };
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Params<'a> {
            progress_token: &'a ProgressToken,
            progress: f64,
            #[serde(skip_serializing_if = "Option::is_none")]
            total: Option<f64>,
            #[serde(skip_serializing_if = "Option::is_none")]
            message: Option<String>,
        }
        let bytes = jsonrpc::notification_bytes(
            "notifications/progress",
            &Params {
                progress_token: token,
                progress,
                total,
                message,
            },
        );
        self.send(bytes).await;
    }

    /// Sends a log message (`notifications/message`) to the client, if it asked for messages
    /// of this level: on 2026-07-28 through this request's `_meta` log level (no level, no
    /// messages); on older revisions through `logging/setLevel` (all levels until then).
    ///
    /// A call that runs as a task sends none: a task has no stream to carry them.
    pub async fn log(&self, level: LoggingLevel, data: impl Serialize) {
        let data = serde_json::to_value(data).unwrap_or(Value::Null);
        self.log_as(level, self.inner.name.as_deref(), data).await;
    }

    /// The log level the client asked for, if it asked (what [`log`](Self::log) sends at
    /// least).
    #[cfg_attr(not(feature = "client"), allow(dead_code))]
    pub(crate) fn log_threshold(&self) -> Option<LoggingLevel> {
        self.inner
            .meta
            .log_level
            .or(self.inner.revision.features().default_log_level)
    }

    /// A log message with its logger named (a gateway relays an upstream's as it sent them).
    pub(crate) async fn log_as(&self, level: LoggingLevel, logger: Option<&str>, data: Value) {
        if self.inner.call.task().is_some() {
            return;
        }
        let Some(threshold) = self.inner.meta.log_level.or(self
            .inner
            .revision
            .features()
            .default_log_level)
        else {
            return;
        };
        if level < threshold {
            return;
        }
        #[derive(Serialize)]
        struct Params<'a> {
            level: LoggingLevel,
            #[serde(skip_serializing_if = "Option::is_none")]
            logger: Option<&'a str>,
            data: Value,
        }
        let bytes = jsonrpc::notification_bytes(
            "notifications/message",
            &Params {
                level,
                logger,
                data,
            },
        );
        self.send(bytes).await;
    }

    async fn send(&self, bytes: Vec<u8>) {
        if self.is_cancelled() {
            return;
        }
        if let Some(sink) = &self.inner.sink {
            // A closed stream means the client went away; the call is being cancelled.
            let _ = sink.send(Bytes::from(bytes)).await;
        }
    }

    /// Application state registered with [`Server::state`](crate::Server::state).
    pub fn state<T: Send + Sync + 'static>(&self) -> Option<super::state::State<T>> {
        self.inner.states.as_ref()?.get::<T>()
    }

    /// Publishes list changes and resource updates to connected clients.
    pub fn notifier(&self) -> Option<&Notifier> {
        self.inner.notifier.as_ref()
    }

    /// Ends this request's response stream now and lets the client reconnect for the rest
    /// (SSE polling: 2025-11-25 sessions only; elsewhere it does nothing). The function keeps
    /// running; what it sends next is delivered when the client resumes with `Last-Event-ID`.
    pub async fn close_stream(&self) {
        if self.inner.revision.features().sse_polling {
            // An empty message is the transport's marker for "end the HTTP response here".
            self.send(Vec::new()).await;
        }
    }

    /// Asks the user to fill in a form whose fields are `T`'s fields.
    ///
    /// `T` must be a flat struct of strings, numbers, booleans and string enums (the form the
    /// spec allows). `key` names the question: on 2026-07-28 the call ends with
    /// `input_required`, the client retries with the answer under `key`, and the function
    /// runs again from the start — so code before this call may run more than once. In a
    /// call that runs as a task, the question is the task's (`input_required`, answered with
    /// `tasks/update`), and the function runs again likewise.
    pub async fn elicit<T: DeserializeOwned + JsonSchema>(
        &self,
        key: &str,
        message: &str,
    ) -> Result<Elicitation<T>, InputError> {
        let schema = input::form_schema::<T>()?;
        let result = self.elicit_with_schema(key, message, schema).await?;
        match result.action {
            ElicitAction::Accept => {
                let content = serde_json::Value::Object(result.content.unwrap_or_default());
                input::decode(content, "the submitted form")
                    .map(Elicitation::Accepted)
                    .map_err(|e| self.misfit(key, e))
            }
            ElicitAction::Decline => Ok(Elicitation::Declined),
            ElicitAction::Cancel => Ok(Elicitation::Cancelled),
        }
    }

    /// Asks the user to fill in a form described by a JSON Schema you write yourself
    /// (titled enums, defaults, formats); returns the raw result.
    pub async fn elicit_with_schema(
        &self,
        key: &str,
        message: &str,
        requested_schema: serde_json::Value,
    ) -> Result<ElicitResult, InputError> {
        let params = json!({ "message": message, "requestedSchema": requested_schema });
        let v = self
            .ask(key, Need::ElicitForm, "elicitation/create", params)
            .await?;
        input::decode(v, "the elicitation result")
    }

    /// Asks the user to open `url` (URL-mode elicitation: 2025-11-25 and 2026-07-28, with the
    /// client's `elicitation.url` capability). `Accept` means the user agreed to open it.
    pub async fn elicit_url(
        &self,
        key: &str,
        message: &str,
        url: &str,
    ) -> Result<ElicitAction, InputError> {
        let mut params = json!({ "mode": "url", "message": message, "url": url });
        if self.inner.revision.features().url_elicitation_id {
            // Unguessable: the client may hand it to the page it opens.
            let mut id = [0u8; 12];
            getrandom::fill(&mut id).map_err(|e| {
                tracing::error!("the system's random source failed: {e}");
                InputError::Unavailable(
                    "no random elicitationId could be made for the URL elicitation",
                )
            })?;
            let id: String = id.iter().map(|b| format!("{b:02x}")).collect();
            params["elicitationId"] = json!(id);
        }
        let v = self
            .ask(key, Need::ElicitUrl, "elicitation/create", params)
            .await?;
        let r: ElicitResult = input::decode(v, "the elicitation result")?;
        Ok(r.action)
    }

    /// Asks the client's model to generate a message (`sampling/createMessage`).
    pub async fn sample(
        &self,
        key: &str,
        request: CreateMessageRequest,
    ) -> Result<CreateMessageResult, InputError> {
        let need = if request.tools.is_some() || request.tool_choice.is_some() {
            Need::SamplingTools
        } else {
            Need::Sampling
        };
        let params =
            serde_json::to_value(&request).map_err(|e| InputError::InvalidSchema(e.to_string()))?;
        let v = self
            .ask(key, need, "sampling/createMessage", params)
            .await?;
        input::decode(v, "the sampling result")
    }

    /// Asks the client for its roots (`roots/list`).
    pub async fn roots(&self, key: &str) -> Result<Vec<Root>, InputError> {
        let v = self.ask(key, Need::Roots, "roots/list", json!({})).await?;
        let r: ListRootsResult = input::decode(v, "the roots result")?;
        Ok(r.roots)
    }

    /// Asks the client a question given as it goes on the wire (a gateway relays what an
    /// upstream server asks): `elicitation/create`, `sampling/createMessage` or `roots/list`,
    /// with its params as they are; the capability it needs follows from them. The answer is
    /// the client's result object, unchecked beyond its kind.
    #[cfg_attr(not(feature = "client"), allow(dead_code))]
    pub(crate) async fn ask_raw(
        &self,
        key: &str,
        method: &str,
        params: serde_json::Value,
    ) -> Result<serde_json::Value, InputError> {
        let need = match method {
            "elicitation/create" if params.get("mode").and_then(|m| m.as_str()) == Some("url") => {
                Need::ElicitUrl
            }
            "elicitation/create" => Need::ElicitForm,
            "sampling/createMessage"
                if params.get("tools").is_some() || params.get("toolChoice").is_some() =>
            {
                Need::SamplingTools
            }
            "sampling/createMessage" => Need::Sampling,
            "roots/list" => Need::Roots,
            _ => {
                return Err(InputError::Unavailable(
                    "only elicitation, sampling and roots are asked of a client",
                ));
            }
        };
        self.ask(key, need, method, params).await
    }

    /// An answer of the right kind that does not fit the question. On 2026-07-28 the client
    /// sent it in the retry's `inputResponses`, so the call ends with -32602: a malformed
    /// answer never becomes a result (2026-07-28 Multi Round-Trip Requests).
    fn misfit(&self, key: &str, e: InputError) -> InputError {
        if let (InputChannel::Mrtr(round), InputError::InvalidResponse(why)) =
            (&self.inner.input, &e)
        {
            round.reject(key, why);
        }
        e
    }

    async fn ask(
        &self,
        key: &str,
        need: Need,
        method: &str,
        params: serde_json::Value,
    ) -> Result<serde_json::Value, InputError> {
        let caps = &self.inner.meta.client_capabilities;
        match &self.inner.input {
            InputChannel::None => Err(InputError::Unavailable(
                "only tools/call, prompts/get and resources/read of a client request can ask",
            )),
            InputChannel::Mrtr(round) => {
                if let Some(answer) = round.answer(key, method) {
                    return answer;
                }
                if !need.satisfied_by(caps) {
                    round.refuse(need);
                    return Err(InputError::MissingCapability {
                        capability: need.name(),
                    });
                }
                round.ask(key, method, params);
                // The round ends here: the dispatcher sees the question and answers
                // `input_required`; this future is dropped with the function's.
                std::future::pending().await
            }
            InputChannel::Legacy(peer) => {
                if !need.satisfied_by(caps) {
                    return Err(InputError::MissingCapability {
                        capability: need.name(),
                    });
                }
                let sink = self
                    .inner
                    .sink
                    .as_ref()
                    .ok_or(InputError::Unavailable("no response stream"))?;
                let (id, rx, _forget) = peer.ask().map_err(InputError::Unavailable)?;
                // The question's key goes with it (`_meta`): a gateway that relays it to a
                // 2026-07-28 client asks under the same key.
                let mut params = params;
                if let Some(obj) = params.as_object_mut() {
                    let meta = obj
                        .entry("_meta")
                        .or_insert_with(|| serde_json::Value::Object(Default::default()));
                    if let Some(meta) = meta.as_object_mut() {
                        meta.insert(INPUT_KEY.into(), serde_json::Value::String(key.to_owned()));
                    }
                }
                let bytes = jsonrpc::request_bytes(&RequestId::Number(id), method, &params);
                if sink.send(bytes::Bytes::from(bytes)).await.is_err() {
                    return Err(InputError::Cancelled);
                }
                tokio::select! {
                    answer = rx => match answer {
                        Ok(Ok(v)) => Ok(v),
                        Ok(Err((code, message))) => Err(InputError::Client { code, message }),
                        Err(_) => Err(InputError::Cancelled),
                    },
                    () = tokio::time::sleep(peer.timeout) => Err(InputError::Timeout(peer.timeout)),
                    () = self.cancelled() => Err(InputError::Cancelled),
                }
            }
        }
    }

    /// Whether the request was cancelled (the client closed the stream or sent
    /// `notifications/cancelled`).
    pub fn is_cancelled(&self) -> bool {
        self.inner
            .cancel
            .as_ref()
            .is_some_and(CancellationToken::is_cancelled)
    }

    /// Completes when the request is cancelled. Use it in `select!` to stop long work early.
    pub async fn cancelled(&self) {
        match &self.inner.cancel {
            Some(token) => token.cancelled().await,
            None => std::future::pending().await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handler::input::{Mrtr, RoundKey};
    use crate::signing::Signer;

    #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Form {
        name: String,
    }

    #[tokio::test]
    async fn an_answer_that_does_not_fit_the_form_fails_the_round() {
        let signer = Signer::new(b"k".repeat(32).as_slice()).unwrap();
        let key = RoundKey {
            method: "tools/call",
            name: "t".into(),
            arguments: None,
            principal: None,
        };
        let responses =
            RawValue::from_string(r#"{"q":{"action":"accept","content":{"name":5}}}"#.into())
                .unwrap();
        let round = Arc::new(Mrtr::start(&signer, key, None, Some(&responses)).unwrap());
        let mut parts = RequestParts::new(Revision::LATEST, RequestMeta::default());
        parts.input = InputChannel::Mrtr(round.clone());
        let (ctx, _cancel) = Context::new(parts, None);
        let e = ctx.elicit::<Form>("q", "Name?").await.unwrap_err();
        assert!(matches!(e, InputError::InvalidResponse(_)), "{e:?}");
        assert_eq!(
            round.invalid().as_deref(),
            Some(
                "inputResponses[\"q\"] does not fit the question: the submitted form: invalid type: integer `5`, expected a string"
            )
        );
    }
}
