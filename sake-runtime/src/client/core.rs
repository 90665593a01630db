//! What both transports share: reading JSON-RPC messages, matching responses to their requests,
//! fanning notifications out, and answering the server's requests with the registered handlers.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde::Deserialize;
use serde::de::Deserializer;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot};

use super::error::ClientError;
use super::limits::Limits;

use crate::protocol::jsonrpc::{self, RequestId, RpcError, code};
use crate::protocol::meta::SUBSCRIPTION_ID;
use crate::protocol::types::{
    ClientCapabilities, CreateMessageRequest, CreateMessageResult, ElicitAction, ElicitRequest,
    ElicitResult, ElicitationCapability, ListRootsResult, RootsCapability, SamplingCapability,
};

/// A boxed, sendable future.
pub(crate) type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// The answer to one request: its raw result, or its error.
pub(crate) type Answer = Result<Box<RawValue>, RpcError>;

/// A notification from the server.
#[derive(Clone, Debug, PartialEq)]
pub struct Notification {
    /// The method, e.g. `notifications/tools/list_changed`.
    pub method: String,
    /// The params (`null` when absent).
    pub params: Value,
}

impl Notification {
    /// `params._meta["io.modelcontextprotocol/subscriptionId"]`: the listen request a 2026-07-28
    /// subscription notification belongs to.
    pub fn subscription_id(&self) -> Option<&Value> {
        self.params.get("_meta")?.get(SUBSCRIPTION_ID)
    }

    /// `params.uri` (`notifications/resources/updated`).
    pub fn uri(&self) -> Option<&str> {
        self.params.get("uri")?.as_str()
    }
}

/// One message read from the server.
#[derive(Debug)]
pub(crate) enum Msg {
    /// A response; `id` is `None` when the server could not read the request's id.
    Response {
        id: Option<RequestId>,
        answer: Answer,
    },
    /// A request from the server (handshake revisions only).
    Request {
        id: RequestId,
        method: String,
        params: Option<Box<RawValue>>,
    },
    /// A notification.
    Notification(Notification),
    /// Not a JSON-RPC message (or a response with neither `result` nor `error`).
    Invalid(String),
}

#[derive(Deserialize)]
struct Envelope {
    #[serde(default)]
    jsonrpc: Option<String>,
    #[serde(default, deserialize_with = "present")]
    id: Option<Box<RawValue>>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default, deserialize_with = "present")]
    params: Option<Box<RawValue>>,
    #[serde(default, deserialize_with = "present")]
    result: Option<Box<RawValue>>,
    #[serde(default, deserialize_with = "present")]
    error: Option<Box<RawValue>>,
}

fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Box<RawValue>>, D::Error> {
    Box::<RawValue>::deserialize(d).map(Some)
}

#[derive(Deserialize)]
struct ErrorObject {
    code: i64,
    #[serde(default)]
    message: String,
    #[serde(default)]
    data: Option<Value>,
}

/// Reads a JSON-RPC error object; anything unreadable becomes an internal error describing it.
pub(crate) fn parse_error(raw: &RawValue) -> RpcError {
    match serde_json::from_str::<ErrorObject>(raw.get()) {
        Ok(e) => {
            let code = i32::try_from(e.code).unwrap_or(code::INTERNAL_ERROR);
            let err = RpcError::new(code, e.message);
            match e.data {
                Some(d) => err.with_data(d),
                None => err,
            }
        }
        Err(_) => RpcError::internal(format!(
            "the server sent an unreadable error object: {}",
            clip(raw.get())
        )),
    }
}

/// Shortens text for error messages.
pub(crate) fn clip(s: &str) -> String {
    crate::protocol::jsonrpc::clip_at(s, 200)
}

/// Reads one message.
pub(crate) fn parse_message(bytes: &[u8]) -> Msg {
    let env: Envelope = match serde_json::from_slice(bytes) {
        Ok(env) => env,
        Err(e) => {
            return Msg::Invalid(format!(
                "not a JSON-RPC message ({e}): {}",
                clip(&String::from_utf8_lossy(bytes))
            ));
        }
    };
    if env.jsonrpc.as_deref() != Some("2.0") {
        return Msg::Invalid("a message without `\"jsonrpc\": \"2.0\"`".into());
    }
    let id = match &env.id {
        None => None,
        Some(raw) if raw.get() == "null" => None,
        Some(raw) => match serde_json::from_str::<RequestId>(raw.get()) {
            Ok(id) => Some(id),
            Err(_) => return Msg::Invalid(format!("an unusable id {}", clip(raw.get()))),
        },
    };
    if let Some(method) = env.method {
        return match id {
            Some(id) => Msg::Request {
                id,
                method,
                params: env.params,
            },
            None => Msg::Notification(Notification {
                method,
                params: env
                    .params
                    .and_then(|p| serde_json::from_str(p.get()).ok())
                    .unwrap_or(Value::Null),
            }),
        };
    }
    match (env.result, env.error) {
        (Some(result), None) => Msg::Response {
            id,
            answer: Ok(result),
        },
        (None, Some(error)) => Msg::Response {
            id,
            answer: Err(parse_error(&error)),
        },
        (Some(_), Some(_)) => Msg::Invalid("a response with both `result` and `error`".into()),
        (None, None) => Msg::Invalid("a response with neither `result` nor `error`".into()),
    }
}

/// Encodes the answer to a server's request.
pub(crate) fn response_body(id: &RequestId, outcome: &Result<Value, RpcError>) -> Vec<u8> {
    match outcome {
        // A `Value` always serialises.
        Ok(result) => jsonrpc::result_bytes(
            id,
            &serde_json::to_vec(result).unwrap_or_else(|_| b"{}".to_vec()),
        ),
        Err(e) => jsonrpc::error_bytes(Some(id), e),
    }
}

type ElicitFn = dyn Fn(ElicitRequest) -> BoxFuture<Result<ElicitResult, RpcError>> + Send + Sync;
type SampleFn =
    dyn Fn(CreateMessageRequest) -> BoxFuture<Result<CreateMessageResult, RpcError>> + Send + Sync;
type RootsFn = dyn Fn() -> BoxFuture<Result<ListRootsResult, RpcError>> + Send + Sync;

/// The application's answers to what a server may ask: elicitation, sampling and roots.
///
/// A capability is declared exactly when its handler is registered.
#[derive(Clone, Default)]
pub(crate) struct Handlers {
    pub(crate) elicitation: Option<Arc<ElicitFn>>,
    pub(crate) elicitation_url: bool,
    pub(crate) sampling: Option<Arc<SampleFn>>,
    pub(crate) roots: Option<Arc<RootsFn>>,
}

/// A question a server asks the client while it serves one request: elicitation, sampling or
/// roots, asked with a request on the call's stream (handshake revisions) or in an
/// `input_required` round (2026-07-28).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ServerRequest {
    /// The key of the question in its round (`inputRequests`); `None` for a request on the
    /// call's stream, which has only a JSON-RPC id.
    pub key: Option<String>,
    /// `elicitation/create`, `sampling/createMessage`, `roots/list`, …
    pub method: String,
    /// Its params as the server sent them (`null` when absent).
    pub params: Value,
}

/// Answers the questions a server asks during one request, instead of the handlers of
/// [`ClientBuilder`](super::ClientBuilder) ([`Client::request_with`](super::Client::request_with)):
/// the result object, or the JSON-RPC error the server is answered with.
pub type Answerer = Arc<dyn Fn(ServerRequest) -> BoxFuture<Result<Value, RpcError>> + Send + Sync>;

/// Receives the notifications the server sends about one request (its progress, its log
/// messages), besides the client's streams of notifications.
pub type NotificationFn = Arc<dyn Fn(Notification) + Send + Sync>;

/// What one request brings of its own ([`Client::request_with`](super::Client::request_with)):
/// who answers the server's questions about it, and who hears the server's notifications
/// about it.
#[derive(Clone, Default)]
pub struct CallOptions {
    pub(crate) answerer: Option<Answerer>,
    pub(crate) notifications: Option<NotificationFn>,
    /// Told when the server ends the request's stream before its answer (SSE polling), which
    /// the client then resumes: a gateway ends its own stream in turn.
    pub(crate) stream_ended: Option<Arc<dyn Fn() + Send + Sync>>,
}

impl std::fmt::Debug for CallOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallOptions")
            .field("answerer", &self.answerer.is_some())
            .field("notifications", &self.notifications.is_some())
            .finish()
    }
}

impl CallOptions {
    /// Nothing of its own: the builder's handlers answer, the client's streams hear.
    pub fn new() -> Self {
        CallOptions::default()
    }

    /// The server's questions about this request go to `answerer` instead of the builder's
    /// handlers.
    pub fn answer_with(mut self, answerer: Answerer) -> Self {
        self.answerer = Some(answerer);
        self
    }

    /// Told when the server ends this request's stream before its answer (SSE polling).
    pub(crate) fn on_stream_ended(mut self, f: impl Fn() + Send + Sync + 'static) -> Self {
        self.stream_ended = Some(Arc::new(f));
        self
    }

    /// The server's notifications about this request (on its stream; over stdio, while it
    /// is the one request in flight with options of its own) also go to `f`.
    pub fn on_notification(mut self, f: impl Fn(Notification) + Send + Sync + 'static) -> Self {
        self.notifications = Some(Arc::new(f));
        self
    }
}

tokio::task_local! {
    /// The options of the requests sent from this task (`Client::request_with`).
    pub(crate) static CALL: CallOptions;
}

/// Why a handler could not answer.
#[derive(Debug)]
pub(crate) enum HandlerFailure {
    Missing(String),
    BadParams(String, String),
    Failed(String, RpcError),
}

impl HandlerFailure {
    /// The JSON-RPC error a legacy server is answered with.
    pub(crate) fn to_rpc(&self) -> RpcError {
        match self {
            HandlerFailure::Missing(m) => RpcError::method_not_found(m),
            HandlerFailure::BadParams(_, why) => RpcError::invalid_params(why.clone()),
            HandlerFailure::Failed(_, e) => e.clone(),
        }
    }
}

impl Handlers {
    /// The capabilities these handlers declare.
    pub(crate) fn capabilities(&self) -> ClientCapabilities {
        ClientCapabilities {
            elicitation: self.elicitation.as_ref().map(|_| ElicitationCapability {
                form: Some(Map::new()),
                url: self.elicitation_url.then(Map::new),
            }),
            sampling: self
                .sampling
                .as_ref()
                .map(|_| SamplingCapability::default()),
            roots: self.roots.as_ref().map(|_| RootsCapability::default()),
            ..ClientCapabilities::default()
        }
    }

    /// Answers one request of the server (a legacy JSON-RPC request, or a 2026-07-28 input
    /// request): the result object, or why there is none.
    pub(crate) async fn answer(
        &self,
        method: &str,
        params: Option<&RawValue>,
    ) -> Result<Value, HandlerFailure> {
        let params_str = params.map(RawValue::get).unwrap_or("{}");
        let bad =
            |e: serde_json::Error| HandlerFailure::BadParams(method.to_owned(), e.to_string());
        let failed = |e: RpcError| HandlerFailure::Failed(method.to_owned(), e);
        match method {
            "ping" => Ok(json!({})),
            "elicitation/create" => {
                let Some(h) = &self.elicitation else {
                    return Err(HandlerFailure::Missing(method.to_owned()));
                };
                let req: ElicitRequest = serde_json::from_str(params_str).map_err(bad)?;
                let defaults = req.defaults();
                let mut result = h(req).await.map_err(failed)?;
                // SEP-1034: an accepted form carries the defaults of the fields left empty.
                if result.action == ElicitAction::Accept && !defaults.is_empty() {
                    let content = result.content.get_or_insert_with(Map::new);
                    for (k, v) in defaults {
                        content.entry(k).or_insert(v);
                    }
                }
                serde_json::to_value(result).map_err(bad)
            }
            "sampling/createMessage" => {
                let Some(h) = &self.sampling else {
                    return Err(HandlerFailure::Missing(method.to_owned()));
                };
                let req: CreateMessageRequest = serde_json::from_str(params_str).map_err(bad)?;
                let result = h(req).await.map_err(failed)?;
                serde_json::to_value(result).map_err(bad)
            }
            "roots/list" => {
                let Some(h) = &self.roots else {
                    return Err(HandlerFailure::Missing(method.to_owned()));
                };
                let result = h().await.map_err(failed)?;
                serde_json::to_value(result).map_err(bad)
            }
            other => Err(HandlerFailure::Missing(other.to_owned())),
        }
    }
}

/// Why a connection, or a stream of notifications, ended. Cloned to every stream it ends.
#[derive(Clone, Debug)]
pub(crate) enum Ended {
    /// The connection was closed (the client's `close`, or the server's stdout).
    Closed,
    /// The server sent a line or body over the limit (stdio closes the connection).
    TooLarge { what: &'static str, limit: usize },
    /// An event over the limit.
    EventTooLarge { limit: usize },
    /// The standalone GET stream could not be reopened.
    StreamLost { attempts: usize },
}

impl Ended {
    pub(crate) fn error(&self) -> ClientError {
        match self {
            Ended::Closed => ClientError::Closed,
            Ended::TooLarge { what, limit } => ClientError::BodyTooLarge {
                what: (*what).to_owned(),
                limit: *limit,
            },
            Ended::EventTooLarge { limit } => ClientError::EventTooLarge { limit: *limit },
            Ended::StreamLost { attempts } => ClientError::StreamLost {
                attempts: *attempts,
            },
        }
    }
}

/// Where a stream of notifications learns why it ended: set before its sender is dropped.
pub(crate) type EndSlot = Arc<Mutex<Option<ClientError>>>;

type Keep = dyn Fn(&Notification) -> bool + Send + Sync;

/// One consumer of notifications: a bounded channel and the notifications it wants.
struct Subscriber {
    id: u64,
    keep: Box<Keep>,
    tx: mpsc::Sender<Notification>,
    end: EndSlot,
}

impl Subscriber {
    /// Ends the stream: the consumer reads what is buffered, then the end (`None`: no error).
    fn end(self, why: Option<ClientError>) {
        if let Some(e) = why
            && let Ok(mut slot) = self.end.lock()
        {
            *slot = Some(e);
        }
    }
}

/// A consumer's end of a subscription: its channel, its end slot, and its id (to end it).
pub(crate) struct Subscribed {
    pub(crate) id: u64,
    pub(crate) rx: mpsc::Receiver<Notification>,
    pub(crate) end: EndSlot,
}

/// Matches responses to requests, fans notifications out, and answers the server's requests.
pub(crate) struct Core {
    pending: Mutex<HashMap<RequestId, oneshot::Sender<Answer>>>,
    next_id: AtomicI64,
    subscribers: Mutex<Vec<Subscriber>>,
    next_subscriber: AtomicU64,
    /// Why the connection ended, once it has (what a waiting request is told).
    closed: Mutex<Option<Ended>>,
    /// Requests of the server being answered (at most `limits.max_server_requests`).
    server_requests: Arc<Semaphore>,
    pub(crate) handlers: Handlers,
    pub(crate) limits: Limits,
    /// The options of requests in flight that have their own
    /// ([`Client::request_with`](super::Client::request_with)), by request id.
    answerers: Mutex<HashMap<RequestId, CallOptions>>,
}

/// Forgets a request's answerer when dropped.
pub(crate) struct AnswererGuard {
    core: Arc<Core>,
    id: RequestId,
}

impl Drop for AnswererGuard {
    fn drop(&mut self) {
        if let Ok(mut a) = self.core.answerers.lock() {
            a.remove(&self.id);
        }
    }
}

impl Core {
    pub(crate) fn new(handlers: Handlers, limits: Limits) -> Self {
        Core {
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicI64::new(1),
            subscribers: Mutex::new(Vec::new()),
            next_subscriber: AtomicU64::new(1),
            closed: Mutex::new(None),
            server_requests: Arc::new(Semaphore::new(limits.max_server_requests)),
            handlers,
            limits,
            answerers: Mutex::new(HashMap::new()),
        }
    }

    /// Whether the task sending request `id` has options of its own ([`CALL`]): then the
    /// server's questions and notifications on that request's stream go to them, until the
    /// guard is dropped.
    pub(crate) fn answerer_for(self: &Arc<Self>, id: &RequestId) -> Option<AnswererGuard> {
        let options = CALL.try_with(Clone::clone).ok()?;
        self.answerers.lock().ok()?.insert(id.clone(), options);
        Some(AnswererGuard {
            core: Arc::clone(self),
            id: id.clone(),
        })
    }

    /// The options of the request whose stream a message came on (`current`). Without a
    /// stream (stdio), those of the one request in flight that has options, when there is
    /// exactly one: stdio does not say which request a message belongs to.
    fn options_of(&self, current: Option<&RequestId>) -> Option<CallOptions> {
        let answerers = self.answerers.lock().ok()?;
        match current {
            Some(id) => answerers.get(id).cloned(),
            None if answerers.len() == 1 => answerers.values().next().cloned(),
            None => None,
        }
    }

    /// The server ended the stream of request `id` before its answer.
    pub(crate) fn stream_ended(&self, id: &RequestId) {
        let hook = self
            .answerers
            .lock()
            .ok()
            .and_then(|a| a.get(id).and_then(|o| o.stream_ended.clone()));
        if let Some(f) = hook {
            f();
        }
    }

    fn answerer_of(&self, current: Option<&RequestId>) -> Option<Answerer> {
        self.options_of(current)?.answerer
    }

    /// A fresh request id: never reused while the client lives.
    pub(crate) fn next_id(&self) -> RequestId {
        RequestId::Number(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Waits for the response to `id`.
    pub(crate) fn register(&self, id: &RequestId) -> oneshot::Receiver<Answer> {
        let (tx, rx) = oneshot::channel();
        if let Ok(mut p) = self.pending.lock() {
            p.insert(id.clone(), tx);
        }
        rx
    }

    /// Waits for the response to `id` until the returned guard is dropped (also when the
    /// waiting future is cancelled, e.g. by a timeout).
    pub(crate) fn pending<'a>(
        &'a self,
        id: &'a RequestId,
    ) -> (oneshot::Receiver<Answer>, PendingGuard<'a>) {
        (self.register(id), PendingGuard { core: self, id })
    }

    /// Stops waiting for `id`.
    pub(crate) fn unregister(&self, id: &RequestId) {
        if let Ok(mut p) = self.pending.lock() {
            p.remove(id);
        }
    }

    /// Delivers a response; `false` when nobody waits for that id.
    pub(crate) fn deliver(&self, id: &RequestId, answer: Answer) -> bool {
        let tx = self.pending.lock().ok().and_then(|mut p| p.remove(id));
        match tx {
            Some(tx) => tx.send(answer).is_ok(),
            None => false,
        }
    }

    /// The connection is gone: every waiting request fails (with the error of `why`), and
    /// every notification stream ends with it.
    pub(crate) fn close(&self, why: Ended) {
        if let Ok(mut c) = self.closed.lock() {
            c.get_or_insert(why.clone());
        }
        if let Ok(mut p) = self.pending.lock() {
            p.clear();
        }
        self.end_subscribers(&why);
    }

    /// Whether the connection ended.
    pub(crate) fn is_closed(&self) -> bool {
        self.closed.lock().map_or(true, |c| c.is_some())
    }

    /// What a request that lost its answer is told: why the connection ended.
    pub(crate) fn closed_error(&self) -> ClientError {
        self.closed
            .lock()
            .ok()
            .and_then(|c| c.as_ref().map(Ended::error))
            .unwrap_or(ClientError::Closed)
    }

    /// A stream of the notifications `keep` accepts, from now on; it holds at most
    /// `limits.notification_buffer` of them, and ends with [`ClientError::Lagged`] when its
    /// consumer falls further behind.
    pub(crate) fn subscribe(
        &self,
        keep: impl Fn(&Notification) -> bool + Send + Sync + 'static,
    ) -> Subscribed {
        let (tx, rx) = mpsc::channel(self.limits.notification_buffer);
        let end = EndSlot::default();
        let id = self.next_subscriber.fetch_add(1, Ordering::Relaxed);
        let closed = self.closed.lock().ok().and_then(|c| c.clone());
        match closed {
            // Already closed: a stream that ends at once, saying why.
            Some(why) => Subscriber {
                id,
                keep: Box::new(keep),
                tx,
                end: Arc::clone(&end),
            }
            .end(Some(why.error())),
            None => {
                if let Ok(mut subs) = self.subscribers.lock() {
                    subs.push(Subscriber {
                        id,
                        keep: Box::new(keep),
                        tx,
                        end: Arc::clone(&end),
                    });
                }
            }
        }
        Subscribed { id, rx, end }
    }

    /// Ends one stream of notifications (`None`: it ended normally).
    pub(crate) fn end_subscriber(&self, id: u64, why: Option<ClientError>) {
        let sub = self.subscribers.lock().ok().and_then(|mut subs| {
            let i = subs.iter().position(|s| s.id == id)?;
            Some(subs.swap_remove(i))
        });
        if let Some(sub) = sub {
            sub.end(why);
        }
    }

    /// Ends every stream of notifications with the error of `why`.
    pub(crate) fn end_subscribers(&self, why: &Ended) {
        let subs = self
            .subscribers
            .lock()
            .map(|mut subs| std::mem::take(&mut *subs))
            .unwrap_or_default();
        for sub in subs {
            sub.end(Some(why.error()));
        }
    }

    /// Publishes a notification to every stream that wants it. A stream whose buffer is full
    /// is ended ([`ClientError::Lagged`]) rather than grown; one whose consumer is gone is
    /// dropped.
    pub(crate) fn notify(&self, n: Notification) {
        tracing::debug!(method = %n.method, "notification from the server");
        let Ok(mut subs) = self.subscribers.lock() else {
            return;
        };
        let mut i = 0;
        while i < subs.len() {
            let sub = &subs[i];
            if !(sub.keep)(&n) {
                i += 1;
                continue;
            }
            match sub.tx.try_send(n.clone()) {
                Ok(()) => i += 1,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    let limit = self.limits.notification_buffer;
                    tracing::warn!(
                        method = %n.method,
                        "a notification stream fell {limit} notifications behind: closing it"
                    );
                    subs.swap_remove(i).end(Some(ClientError::Lagged { limit }));
                }
                Err(mpsc::error::TrySendError::Closed(_)) => {
                    subs.swap_remove(i);
                }
            }
        }
    }

    /// A slot to answer one request of the server, when fewer than
    /// `limits.max_server_requests` are being answered.
    pub(crate) fn server_request_slot(&self) -> Option<OwnedSemaphorePermit> {
        Arc::clone(&self.server_requests).try_acquire_owned().ok()
    }

    /// The error a request of the server gets when no slot is free.
    pub(crate) fn busy(&self, method: &str) -> RpcError {
        RpcError::new(
            code::INTERNAL_ERROR,
            format!(
                "the client is already answering {} requests of the server, its limit (ClientBuilder::max_server_requests); {method} was not answered",
                self.limits.max_server_requests
            ),
        )
    }

    /// Answers one request of the server with the handlers, in a free slot; the error to send
    /// back otherwise.
    pub(crate) async fn answer_server_request(
        &self,
        method: &str,
        params: Option<&RawValue>,
        current: Option<&RequestId>,
    ) -> Result<Value, RpcError> {
        let Some(_slot) = self.server_request_slot() else {
            tracing::warn!(%method, "too many requests of the server at once: refusing one");
            return Err(self.busy(method));
        };
        self.answer(method, params, current).await
    }

    /// Answers one request of the server: with the answerer of the request it came with, if
    /// that has one, else with the handlers.
    pub(crate) async fn answer(
        &self,
        method: &str,
        params: Option<&RawValue>,
        current: Option<&RequestId>,
    ) -> Result<Value, RpcError> {
        if method != "ping"
            && let Some(answerer) = self.answerer_of(current)
        {
            let params = match params {
                Some(raw) => serde_json::from_str(raw.get())
                    .map_err(|e| RpcError::invalid_params(e.to_string()))?,
                None => Value::Null,
            };
            return answerer(ServerRequest {
                key: None,
                method: method.to_owned(),
                params,
            })
            .await;
        }
        self.handlers
            .answer(method, params)
            .await
            .map_err(|f| f.to_rpc())
    }

    /// Routes one message: responses to their waiters, notifications to listeners. A request
    /// of the server is handed back for the transport to answer. `current` is the request
    /// whose stream the message came on, which an id-less error response belongs to.
    pub(crate) fn route(
        &self,
        msg: Msg,
        current: Option<&RequestId>,
    ) -> Option<(RequestId, String, Option<Box<RawValue>>)> {
        match msg {
            Msg::Response { id, answer } => {
                let Some(id) = id.as_ref().or(current) else {
                    tracing::warn!("dropping a response without an id");
                    return None;
                };
                if !self.deliver(id, answer) {
                    tracing::warn!(%id, "dropping a response to no pending request");
                }
                None
            }
            Msg::Notification(n) => {
                if let Some(f) = self.options_of(current).and_then(|o| o.notifications) {
                    f(n.clone());
                }
                self.notify(n);
                None
            }
            Msg::Request { id, method, params } => Some((id, method, params)),
            Msg::Invalid(why) => {
                match current {
                    Some(id) => {
                        // On a request's own stream, garbage is that request's answer.
                        self.deliver(
                            id,
                            Err(RpcError::new(
                                code::PARSE_ERROR,
                                format!("unparseable reply: {why}"),
                            )
                            .with_data(json!({"sake.client": "invalid-reply"}))),
                        );
                    }
                    None => tracing::warn!("ignoring an invalid message: {why}"),
                }
                None
            }
        }
    }
}

/// Marks the error `route` makes of an unparseable reply, so that it is told apart from a
/// server's own -32700.
pub(crate) fn is_invalid_reply(e: &RpcError) -> bool {
    e.code == code::PARSE_ERROR && e.data.as_ref().and_then(|d| d.get("sake.client")).is_some()
}

/// Stops waiting for a response when dropped.
pub(crate) struct PendingGuard<'a> {
    core: &'a Core,
    id: &'a RequestId,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        self.core.unregister(self.id);
    }
}

/// Aborts a background task when dropped.
#[derive(Debug)]
pub(crate) struct AbortOnDrop(pub(crate) tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_kind_of_message() {
        assert!(matches!(
            parse_message(br#"{"jsonrpc":"2.0","id":3,"result":{"a":1}}"#),
            Msg::Response { id: Some(RequestId::Number(3)), answer: Ok(r) } if r.get() == r#"{"a":1}"#
        ));
        match parse_message(
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"bad","data":{"x":1}}}"#,
        ) {
            Msg::Response {
                id: None,
                answer: Err(e),
            } => {
                assert_eq!(e.code, -32600);
                assert_eq!(e.data, Some(json!({"x": 1})));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            parse_message(br#"{"jsonrpc":"2.0","id":"s1","method":"roots/list"}"#),
            Msg::Request { method, .. } if method == "roots/list"
        ));
        assert!(matches!(
            parse_message(br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}"#),
            Msg::Notification(n) if n.params == json!({"progress": 1})
        ));
        assert!(matches!(
            parse_message(br#"{"jsonrpc":"2.0","id":1}"#),
            Msg::Invalid(_)
        ));
        assert!(matches!(parse_message(b"<html>"), Msg::Invalid(_)));
        assert!(matches!(
            parse_message(br#"{"id":1,"result":{}}"#),
            Msg::Invalid(_)
        ));
    }

    #[tokio::test]
    async fn accepted_forms_get_the_schema_defaults() {
        let handlers = Handlers {
            elicitation: Some(Arc::new(|_req| {
                Box::pin(async {
                    Ok(ElicitResult::accept(
                        json!({"name": "Ada"})
                            .as_object()
                            .cloned()
                            .unwrap_or_default(),
                    ))
                })
            })),
            ..Handlers::default()
        };
        let params = RawValue::from_string(
            json!({"message": "m", "requestedSchema": {"type": "object", "properties": {
                "name": {"type": "string", "default": "John"},
                "age": {"type": "integer", "default": 30}}}})
            .to_string(),
        )
        .unwrap();
        let v = handlers
            .answer("elicitation/create", Some(&params))
            .await
            .unwrap();
        assert_eq!(
            v,
            json!({"action": "accept", "content": {"name": "Ada", "age": 30}})
        );
        assert!(matches!(
            handlers.answer("sampling/createMessage", None).await,
            Err(HandlerFailure::Missing(_))
        ));
    }
}
