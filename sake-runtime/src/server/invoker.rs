//! The invoker: the one place a user function is called.
//!
//! Every `#[tool]`, `#[prompt]`, `#[resource]`, `#[view]` function and every completion runs
//! through [`Invoker::start`] (the architecture test fails on a call of a registry's function
//! anywhere else). A [`Call`] goes in — the request's parts, the [`Function`] with what it is
//! called with, and how its input round starts — and a [`Running`] comes out: a future of
//! the function's next [`Step`]. On its way the invoker
//! - starts the input round (MRTR): as the request asks, always (a call that may become a
//!   task), or from a task's answers so far;
//! - builds the [`Context`] (a cancellation token only for a function that can see one);
//! - calls the function, catching a panic there and on every poll: a panic fails its call
//!   only, logged under the function's name;
//! - cancels what the function spawned when its future is dropped before it returned.
//!
//! Dispatch awaits a `Running` under `request_timeout` ([`Running::within`]); the tasks
//! extension polls it once inside the request, then drives it in the background.
//!
//! The invoker is a service of its own (`Shared::invoker`): it is given at start-up what it
//! needs — the layers' stacks, the state map, the signer of input rounds, the callers, the
//! notifier — and reaches into nothing else of the engine.
//!
//! # The seam (middleware)
//!
//! A policy layer (`Server::layer`) wraps the call inside [`Invoker::start`]: before any user
//! code runs it sees an `McpRequest` — the function's [`Kind`], its name and declared name
//! or URI, its arguments as sent, the caller (`principal`: the name
//! [`Callers`] worked out once for the request; the peer's address
//! and network), whether it only reads, whether it answers an input round or runs as a task,
//! and the `Context` — and may refuse the call, change what is handed on, or observe the
//! response. The innermost step calls the function with the same panic and input-round
//! handling as a call without layers.

use std::borrow::Cow;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use bytes::Bytes;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio_util::sync::{CancellationToken, DropGuard};

use super::PeerAddr;
use super::callers::Callers;
use crate::handler::context::{CallState, Context, RequestParts};
use crate::handler::events::Notifier;
use crate::handler::input::{InputChannel, Mrtr, RoundKey, RoundOutcome};
use crate::handler::state::StateMap;
use crate::handler::{
    BoxFuture, CompleteFn, CompletionRequest, PromptDef, ResourceDef, ResourceRequest, ToolDef,
};
use crate::middleware::{self, Kind, McpRequest, McpResponse, Outcome, Reply, Stack};
use crate::protocol::jsonrpc::RpcError;
use crate::protocol::types::{CallToolResult, Completion, GetPromptResult, ReadResourceResult};
use crate::signing::Signer;

/// A user function, with what it is called with.
pub(crate) trait Function {
    /// What its future yields.
    type Output: Output;
    /// Its name in logs and in its `Context` (a tool's or prompt's name, a resource's URI).
    fn name(&self) -> Cow<'static, str>;
    /// Whether it takes the [`Context`]: only such a function can ask the client for input
    /// or see a cancellation.
    fn takes_context(&self) -> bool;
    /// Calls it: the user's code runs from here (argument decoding, then the function).
    fn call(self, ctx: Context) -> BoxFuture<Self::Output>;
    /// What it is, for the layers.
    const KIND: Kind;
    /// Its declared name or URI (what `Server::layer_for` names).
    fn declared(&self) -> &'static str;
    /// Its arguments as sent.
    fn arguments(&self) -> Option<&RawValue> {
        None
    }
    /// Whether it says it only reads (a tool's `read_only_hint`).
    fn read_only(&self) -> bool {
        false
    }
    /// Its arguments the layers never show, when they are its own rather than its stack's
    /// (a remote tool's, from its listing).
    fn sensitive(&self) -> Option<Arc<[String]>> {
        None
    }
    /// It, to be called later with the arguments the layers hand on (user code runs only
    /// when the result is called).
    fn detach(self) -> Detached<Self::Output>;
}

/// A function waiting for its arguments and `Context`: what the innermost layer calls.
pub(crate) type Detached<T> = Box<dyn FnOnce(Option<&RawValue>, Context) -> BoxFuture<T> + Send>;

/// What a function's future yields, as a layer's response and back.
pub(crate) trait Output: Send + Sized + 'static {
    fn into_response(self) -> McpResponse;
    /// The output a response stands for: a reply of another kind is an error.
    fn from_response(response: McpResponse) -> Result<Step<Self>, RpcError> {
        match response.outcome {
            // A function that recorded a protocol error returned: the dispatcher reads the
            // error where it was recorded, as without layers.
            Outcome::Reply(reply) | Outcome::Failed(reply, _) => {
                Self::from_reply(reply).map(Step::Returned).ok_or_else(|| {
                    RpcError::internal(
                        "Internal error: a layer answered with a result of another kind",
                    )
                })
            }
            Outcome::Error(e) => Self::from_error(e).map(Step::Returned),
            Outcome::Input(asked) => Ok(Step::Asked(asked)),
        }
    }
    fn from_reply(reply: Reply) -> Option<Self>;
    fn from_error(e: RpcError) -> Result<Self, RpcError> {
        Err(e)
    }
}

impl Output for CallToolResult {
    fn into_response(self) -> McpResponse {
        McpResponse::reply(Reply::Tool(self))
    }
    fn from_reply(reply: Reply) -> Option<Self> {
        match reply {
            Reply::Tool(r) => Some(r),
            _ => None,
        }
    }
}

impl Output for Result<GetPromptResult, RpcError> {
    fn into_response(self) -> McpResponse {
        match self {
            Ok(r) => McpResponse::reply(Reply::Prompt(r)),
            Err(e) => McpResponse::error(e),
        }
    }
    fn from_reply(reply: Reply) -> Option<Self> {
        match reply {
            Reply::Prompt(r) => Some(Ok(r)),
            _ => None,
        }
    }
    fn from_error(e: RpcError) -> Result<Self, RpcError> {
        Ok(Err(e))
    }
}

impl Output for Result<ReadResourceResult, RpcError> {
    fn into_response(self) -> McpResponse {
        match self {
            Ok(r) => McpResponse::reply(Reply::Resource(r)),
            Err(e) => McpResponse::error(e),
        }
    }
    fn from_reply(reply: Reply) -> Option<Self> {
        match reply {
            Reply::Resource(r) => Some(Ok(r)),
            _ => None,
        }
    }
    fn from_error(e: RpcError) -> Result<Self, RpcError> {
        Ok(Err(e))
    }
}

impl Output for (&'static str, Result<String, RpcError>) {
    fn into_response(self) -> McpResponse {
        match self {
            (uri, Ok(html)) => McpResponse::reply(Reply::View(uri, html)),
            (_, Err(e)) => McpResponse::error(e),
        }
    }
    fn from_reply(reply: Reply) -> Option<Self> {
        match reply {
            Reply::View(uri, html) => Some((uri, Ok(html))),
            _ => None,
        }
    }
}

/// A `tools/call`.
pub(crate) struct Tool<'a> {
    pub def: &'static ToolDef,
    pub arguments: Option<&'a RawValue>,
}

impl Function for Tool<'_> {
    type Output = CallToolResult;
    fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed(self.def.name)
    }
    fn takes_context(&self) -> bool {
        self.def.context
    }
    fn call(self, ctx: Context) -> BoxFuture<CallToolResult> {
        (self.def.call)(self.arguments, ctx)
    }
    const KIND: Kind = Kind::Tool;
    fn declared(&self) -> &'static str {
        self.def.name
    }
    fn arguments(&self) -> Option<&RawValue> {
        self.arguments
    }
    fn read_only(&self) -> bool {
        self.def.hints.read_only == Some(true)
    }
    fn detach(self) -> Detached<CallToolResult> {
        let call = self.def.call;
        Box::new(move |arguments, ctx| call(arguments, ctx))
    }
}

/// A `prompts/get`.
pub(crate) struct Prompt<'a> {
    pub def: &'static PromptDef,
    pub arguments: Option<&'a RawValue>,
}

impl Function for Prompt<'_> {
    type Output = Result<GetPromptResult, RpcError>;
    fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed(self.def.name)
    }
    fn takes_context(&self) -> bool {
        true
    }
    fn call(self, ctx: Context) -> BoxFuture<Self::Output> {
        (self.def.get)(self.arguments, ctx)
    }
    const KIND: Kind = Kind::Prompt;
    fn declared(&self) -> &'static str {
        self.def.name
    }
    fn arguments(&self) -> Option<&RawValue> {
        self.arguments
    }
    fn detach(self) -> Detached<Self::Output> {
        let get = self.def.get;
        Box::new(move |arguments, ctx| get(arguments, ctx))
    }
}

/// A `resources/read` of a static resource or a template's match.
pub(crate) struct Resource {
    pub def: &'static ResourceDef,
    pub request: ResourceRequest,
}

impl Function for Resource {
    type Output = Result<ReadResourceResult, RpcError>;
    fn name(&self) -> Cow<'static, str> {
        Cow::Owned(self.request.uri.clone())
    }
    fn takes_context(&self) -> bool {
        true
    }
    fn call(self, ctx: Context) -> BoxFuture<Self::Output> {
        (self.def.read)(self.request, ctx)
    }
    const KIND: Kind = Kind::Resource;
    fn declared(&self) -> &'static str {
        self.def.uri
    }
    fn detach(self) -> Detached<Self::Output> {
        let read = self.def.read;
        let request = self.request;
        Box::new(move |_, ctx| read(request, ctx))
    }
}

/// A `resources/read` of a view whose HTML a function renders (MCP Apps).
pub(crate) struct View {
    pub uri: &'static str,
    pub html: crate::handler::apps::ViewFn,
}

impl Function for View {
    /// The view's URI beside what the function rendered.
    type Output = (&'static str, Result<String, RpcError>);
    fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed(self.uri)
    }
    fn takes_context(&self) -> bool {
        true
    }
    fn call(self, ctx: Context) -> BoxFuture<Self::Output> {
        let html = (self.html)(ctx);
        let uri = self.uri;
        Box::pin(async move { (uri, html.await) })
    }
    const KIND: Kind = Kind::View;
    fn declared(&self) -> &'static str {
        self.uri
    }
    fn detach(self) -> Detached<Self::Output> {
        let (html, uri) = (self.html, self.uri);
        Box::new(move |_, ctx| {
            let html = html(ctx);
            Box::pin(async move { (uri, html.await) })
        })
    }
}

/// How a call's input round (MRTR) starts.
pub(crate) enum Round<'a> {
    /// As the request asks: on a revision with input rounds, for a function that takes the
    /// `Context` or a request that answers a round (its `requestState` and `inputResponses`
    /// are checked either way); none otherwise. `key.arguments` and `key.principal` are
    /// filled here, only when there is a round.
    OfRequest {
        key: RoundKey,
        arguments: Option<&'a RawValue>,
        state: Option<&'a RawValue>,
        responses: Option<&'a RawValue>,
    },
    /// Always, with the key as given: a call that may become a task.
    Task {
        key: RoundKey,
        state: Option<&'a RawValue>,
        responses: Option<&'a RawValue>,
    },
    /// A task's function run again, with every answer so far.
    Resumed {
        key: RoundKey,
        answers: serde_json::Map<String, Value>,
    },
}

impl Round<'_> {
    /// A task's function always gets a cancellation token: the task can be cancelled
    /// whether or not the function looks.
    fn for_task(&self) -> bool {
        !matches!(self, Round::OfRequest { .. })
    }

    /// Whether the call continues an input round (it brings answers): the layers see it as
    /// the same call again.
    fn continues(&self) -> bool {
        match self {
            Round::OfRequest {
                state, responses, ..
            }
            | Round::Task {
                state, responses, ..
            } => state.is_some() || responses.is_some(),
            Round::Resumed { .. } => true,
        }
    }
}

/// One call of a user function: the request value the invoker takes.
pub(crate) struct Call<'a, F> {
    pub parts: RequestParts,
    pub function: F,
    pub round: Round<'a>,
}

/// The next thing a running function did.
pub(crate) enum Step<T> {
    /// It returned.
    Returned(T),
    /// It asked the client for input (its round's questions, by key).
    Asked(Vec<(String, Value)>),
}

/// A user function that runs: a future of its next [`Step`], or the error of a panic in it.
///
/// Dropping it before the function returned cancels the function's token (anything it
/// spawned sees the cancellation); [`Running::disarm`] keeps the token alive.
pub(crate) struct Running<T> {
    fut: Body<T>,
    name: Cow<'static, str>,
    round: Option<Arc<Mrtr>>,
    call: Arc<CallState>,
    cancel: Option<CancellationToken>,
    guard: Option<DropGuard>,
}

/// What a [`Running`] polls: the function itself, or the layers around it.
enum Body<T> {
    Direct(BoxFuture<T>),
    Layered(BoxFuture<Result<Step<T>, RpcError>>),
}

impl<T> Running<T> {
    /// Its input round, if it has one.
    pub(crate) fn round(&self) -> Option<&Arc<Mrtr>> {
        self.round.as_ref()
    }

    /// The state of its call (progress, a recorded failure, its task).
    pub(crate) fn call(&self) -> &Arc<CallState> {
        &self.call
    }

    /// Its cancellation token, if it has one.
    pub(crate) fn cancellation(&self) -> Option<&CancellationToken> {
        self.cancel.as_ref()
    }

    /// Keeps its token alive when it is dropped (it returned, or something else holds it on).
    pub(crate) fn disarm(&mut self) {
        if let Some(guard) = self.guard.take() {
            guard.disarm();
        }
    }

    /// The protocol error a function that returned ends with, whatever it returned: a
    /// malformed answer it read (-32602) or an error it recorded ([`Context::fail_with`]).
    pub(crate) fn failure(&self) -> Option<RpcError> {
        if let Some(msg) = self.round.as_ref().and_then(|r| r.invalid()) {
            return Some(RpcError::invalid_params(format!("Invalid params: {msg}")));
        }
        self.call.take_failure()
    }

    /// Runs it to its next step, under `limit` once it waits (most functions finish on their
    /// first poll: only one that waits gets a timer). A timeout fails the call, logged.
    pub(crate) async fn within(&mut self, limit: Duration) -> Result<Step<T>, RpcError> {
        let first = std::future::poll_fn(|cx| Poll::Ready(Pin::new(&mut *self).poll(cx))).await;
        match first {
            Poll::Ready(step) => step,
            Poll::Pending => match tokio::time::timeout(limit, &mut *self).await {
                Ok(step) => step,
                Err(_) => Err(timed_out(&self.name, limit)),
            },
        }
    }
}

impl<T> Future for Running<T> {
    type Output = Result<Step<T>, RpcError>;

    /// One poll of the function, a panic caught: ready when it returned or asked something,
    /// pending while it waits for anything else.
    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let fut = match &mut this.fut {
            Body::Direct(fut) => fut,
            Body::Layered(fut) => {
                return match std::panic::catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(cx))) {
                    Err(panic) => Poll::Ready(Err(panicked(&this.name, panic.as_ref()))),
                    Ok(step) => step,
                };
            }
        };
        match std::panic::catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(cx))) {
            Err(panic) => Poll::Ready(Err(panicked(&this.name, panic.as_ref()))),
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(Step::Returned(v))),
            Ok(Poll::Pending) => match this.round.as_ref().and_then(|r| r.poll_pending()) {
                Some(RoundOutcome::InputRequired(asked)) => Poll::Ready(Ok(Step::Asked(asked))),
                None => Poll::Pending,
            },
        }
    }
}

/// The invoker of a server (see the module's documentation).
pub(crate) struct Invoker {
    /// The middleware of each function some layer applies to (`Server::layer`); `None`
    /// without layers.
    stacks: Option<Stacks>,
    /// Signs and checks an input round's `requestState` (the server's session key).
    signer: Signer,
    /// Who calls: the round's key and a layer's `principal` name the caller.
    callers: Arc<Callers>,
    /// What a function's `Context` publishes events with, and the state it reads.
    notifier: Notifier,
    states: Arc<StateMap>,
    /// `Limits::ipv6_client_prefix`: a layer's `client_network`.
    ipv6_client_prefix: u8,
}

impl Invoker {
    /// The layers of every kind of operation, when some apply (`Server::layer`).
    pub(crate) fn stacks(&self) -> Option<&Stacks> {
        self.stacks.as_ref()
    }

    pub(crate) fn new(
        stacks: Option<Stacks>,
        signer: Signer,
        callers: Arc<Callers>,
        notifier: Notifier,
        states: Arc<StateMap>,
        ipv6_client_prefix: u8,
    ) -> Invoker {
        Invoker {
            stacks,
            signer,
            callers,
            notifier,
            states,
            ipv6_client_prefix,
        }
    }

    /// Starts a call: its round, its `Context`, the function called (a panic in the call
    /// fails it, logged). Errors: the round's `requestState` or `inputResponses` are
    /// invalid (-32602), or the function panicked.
    pub(crate) fn start<F: Function>(
        &self,
        call: Call<'_, F>,
    ) -> Result<Running<F::Output>, RpcError> {
        let Call {
            mut parts,
            function,
            round,
        } = call;
        let takes_context = function.takes_context() || round.for_task();
        let continues = round.continues();
        let for_task = round.for_task();
        // The layers, when any applies to the function: composed at start-up.
        let stack = match &self.stacks {
            Some(stacks) => stacks.get(F::KIND, function.declared()),
            None => None,
        };
        let round = match round {
            Round::OfRequest {
                mut key,
                arguments,
                state,
                responses,
            } => {
                let answers_a_round = state.is_some() || responses.is_some();
                if parts.revision.features().input_required && (takes_context || answers_a_round) {
                    // The arguments' text only for a round's key: a call without one never
                    // needs it.
                    key.arguments = arguments_text(&parts, arguments);
                    key.principal = self.callers.caller_name(&parts.extensions);
                    Some(Mrtr::start(&self.signer, key, state, responses)?)
                } else {
                    None
                }
            }
            Round::Task {
                key,
                state,
                responses,
            } => Some(Mrtr::start(&self.signer, key, state, responses)?),
            Round::Resumed { key, answers } => Some(Mrtr::with_answers(key, answers)),
        }
        .map(Arc::new);
        if let Some(round) = &round {
            parts.input = InputChannel::Mrtr(round.clone());
        }
        // A view of the request's bytes for the layers (a copy only when the transport kept none).
        let layered_arguments = match &stack {
            Some(_) => arguments_text(&parts, function.arguments()),
            None => None,
        };
        parts.notifier = Some(self.notifier.clone());
        parts.states = Some(self.states.clone());
        let call = parts.call.clone();
        let transport = parts.transport;
        let name = function.name();
        let (ctx, cancel) = if takes_context {
            let (ctx, cancel) = Context::new(parts, Some(name.clone()));
            (ctx, Some(cancel))
        } else {
            (Context::unobserved(parts, Some(name.clone())), None)
        };
        let fut = match stack {
            None => Body::Direct(
                std::panic::catch_unwind(AssertUnwindSafe(|| function.call(ctx)))
                    .map_err(|panic| panicked(&name, panic.as_ref()))?,
            ),
            Some(stack) => Body::Layered(layered(
                self,
                stack,
                function,
                ctx,
                layered_arguments,
                round.clone(),
                (continues, for_task, transport),
            )),
        };
        Ok(Running {
            fut,
            name,
            round,
            call,
            guard: cancel.clone().map(CancellationToken::drop_guard),
            cancel,
        })
    }

    /// Starts a completion (`completion/complete`): it takes no `Context` and has no round;
    /// `label` (the prompt's name or the template's URI) names it in the log.
    pub(crate) fn complete(
        &self,
        complete: CompleteFn,
        request: CompletionRequest,
        label: String,
    ) -> Result<Running<Completion>, RpcError> {
        let fut = std::panic::catch_unwind(AssertUnwindSafe(|| complete(request)))
            .map_err(|panic| panicked(&label, panic.as_ref()))?;
        Ok(Running {
            fut: Body::Direct(fut),
            name: Cow::Owned(label),
            round: None,
            call: Arc::default(),
            cancel: None,
            guard: None,
        })
    }
}

/// A call through its layers: the request they see, and the innermost step that calls the
/// function (a panic there, or on a poll, fails the call as a response the layers see; the
/// function's input round ends it with the questions).
fn layered<F: Function>(
    invoker: &Invoker,
    stack: Stack,
    function: F,
    ctx: Context,
    arguments: Option<Bytes>,
    round: Option<Arc<Mrtr>>,
    (continuation, task, transport): (bool, bool, middleware::Transport),
) -> BoxFuture<Result<Step<F::Output>, RpcError>> {
    let name = function.name();
    let declared = function.declared();
    let extensions = ctx.extensions();
    let principal = invoker.callers.caller_name(extensions);
    let client_addr = extensions.get::<PeerAddr>().map(|p| p.ip);
    let read_only = function.read_only();
    let sensitive = function.sensitive();
    let detached = function.detach();
    let call = ctx.call_state().clone();
    let inner_name = name.clone();
    let run: middleware::Run = Box::new(move |arguments, ctx| {
        let fut = match std::panic::catch_unwind(AssertUnwindSafe(|| detached(arguments, ctx))) {
            Ok(fut) => fut,
            Err(panic) => {
                let e = panicked(&inner_name, panic.as_ref());
                return Box::pin(async move { McpResponse::error(e) });
            }
        };
        Box::pin(Innermost {
            fut,
            name: inner_name,
            round,
            call,
        })
    });
    let mut req = McpRequest::new(
        F::KIND,
        name.clone(),
        declared,
        arguments,
        principal,
        client_addr,
        ctx,
        Some(run),
    );
    req.client_network =
        client_addr.map(|ip| crate::quota::client_network(ip, invoker.ipv6_client_prefix));
    req.continuation = continuation;
    req.task = task;
    req.transport = transport;
    #[cfg(feature = "auth")]
    {
        req.auth = invoker.callers.auth();
    }
    req.read_only = read_only;
    req.sensitive = sensitive.unwrap_or_else(|| stack.sensitive.clone());
    Box::pin(async move {
        match stack.call(req).await {
            Ok(response) => F::Output::from_response(response),
            Err(e) => Err(middleware::into_rpc_error(e, &name)),
        }
    })
}

/// The function under its layers: its result, its panic or its questions as a response.
struct Innermost<T> {
    fut: BoxFuture<T>,
    name: Cow<'static, str>,
    round: Option<Arc<Mrtr>>,
    call: Arc<CallState>,
}

impl<T: Output> Future for Innermost<T> {
    type Output = McpResponse;

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<McpResponse> {
        let this = &mut *self;
        match std::panic::catch_unwind(AssertUnwindSafe(|| this.fut.as_mut().poll(cx))) {
            Err(panic) => Poll::Ready(McpResponse::error(panicked(&this.name, panic.as_ref()))),
            Ok(Poll::Ready(v)) => {
                let mut response = v.into_response();
                // What the dispatcher will end the call with instead (`Running::failure`):
                // the layers see the call fail.
                let failure = match this.round.as_ref().and_then(|r| r.invalid()) {
                    Some(msg) => Some(RpcError::invalid_params(format!("Invalid params: {msg}"))),
                    None => this.call.failure(),
                };
                response.outcome = match (failure, response.outcome) {
                    (Some(e), Outcome::Reply(reply)) => Outcome::Failed(reply, e),
                    (_, outcome) => outcome,
                };
                Poll::Ready(response)
            }
            Ok(Poll::Pending) => match this.round.as_ref().and_then(|r| r.poll_pending()) {
                Some(RoundOutcome::InputRequired(asked)) => Poll::Ready(McpResponse::input(asked)),
                None => Poll::Pending,
            },
        }
    }
}

/// Every function's layers, composed once at start-up: only the functions some layer applies
/// to have an entry.
pub(crate) struct Stacks {
    by: std::collections::HashMap<(Kind, &'static str), Stack>,
    /// The operations that call no function (lists, completions, tasks, skills,
    /// subscriptions): one stack per kind.
    operations: Vec<(Kind, Stack)>,
}

impl Stacks {
    /// The stacks of the registry's functions; `None` when no layer was given (every call
    /// takes the path without middleware). A layer for a name no function has stops
    /// start-up.
    pub(crate) fn compose(
        registry: &crate::registry::Registry,
        sources: impl IntoIterator<Item = &'static str>,
        layers: &middleware::Layers,
    ) -> Result<Option<Stacks>, crate::error::Error> {
        if layers.is_empty() {
            return Ok(None);
        }
        let mut functions: Vec<(Kind, &'static str, Option<&'static crate::handler::ToolDef>)> =
            Vec::new();
        functions.extend(
            registry
                .tools
                .iter()
                .map(|t| (Kind::Tool, t.def.name, Some(t.def))),
        );
        functions.extend(
            registry
                .prompts
                .iter()
                .map(|p| (Kind::Prompt, p.name, None)),
        );
        functions.extend(
            registry
                .resources
                .iter()
                .map(|r| (Kind::Resource, r.uri, None)),
        );
        functions.extend(
            registry
                .templates
                .iter()
                .map(|t| (Kind::Resource, t.def.uri, None)),
        );
        functions.extend(registry.views.iter().map(|v| (Kind::View, v.def.uri, None)));
        // A source's functions (`Server::proxy`) under its label: `Server::layer_for(prefix)`
        // names all of them.
        for label in sources {
            for kind in [Kind::Tool, Kind::Prompt, Kind::Resource] {
                functions.push((kind, label, None));
            }
        }
        for name in layers.names() {
            if !functions.iter().any(|(_, n, _)| *n == name) {
                return Err(crate::error::Error::Config(format!(
                    "Server::layer_for names `{name}`, which is no tool, prompt, resource, resource template or view of this server"
                )));
            }
        }
        let mut by = std::collections::HashMap::new();
        for (kind, name, tool) in functions {
            if let Some(mut stack) = layers.compose(kind, name) {
                if let Some(def) = tool {
                    stack.sensitive = write_only(&(def.input_schema)()).into();
                }
                by.insert((kind, name), stack);
            }
        }
        let operations = Kind::OPERATIONS
            .into_iter()
            .filter_map(|kind| Some((kind, layers.compose(kind, "")?)))
            .collect();
        Ok(Some(Stacks { by, operations }))
    }

    pub(crate) fn get(&self, kind: Kind, name: &'static str) -> Option<Stack> {
        self.by.get(&(kind, name)).cloned()
    }

    /// The stack of the operations of `kind`, when a layer applies to them.
    pub(crate) fn operation(&self, kind: Kind) -> Option<&Stack> {
        self.operations
            .iter()
            .find_map(|(k, stack)| (*k == kind).then_some(stack))
    }
}

/// The top-level properties an input schema marks `writeOnly` (secrets: never audited).
pub(crate) fn write_only(schema: &Value) -> Vec<String> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|props| {
            props
                .iter()
                .filter(|(_, p)| p.get("writeOnly") == Some(&Value::Bool(true)))
                .map(|(k, _)| k.clone())
                .collect()
        })
        .unwrap_or_default()
}

/// The arguments' text for a round key: a view of the request's bytes when the transport
/// kept them, a copy otherwise.
pub(super) fn arguments_text(parts: &RequestParts, arguments: Option<&RawValue>) -> Option<Bytes> {
    let text = arguments?.get().as_bytes();
    if let Some(message) = parts.meta.raw.message() {
        let start = (text.as_ptr() as usize).wrapping_sub(message.as_ptr() as usize);
        if start <= message.len() && text.len() <= message.len() - start {
            return Some(message.slice(start..start + text.len()));
        }
    }
    Some(Bytes::copy_from_slice(text))
}

/// The error for a function that panicked: logged with its name; the client learns only that
/// it failed.
pub(crate) fn panicked(name: &str, panic: &(dyn std::any::Any + Send)) -> RpcError {
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_owned());
    tracing::error!(name = %name, panic = %message, "a function panicked; its request failed, the server goes on");
    RpcError::internal(format!(
        "Internal error: `{name}` failed unexpectedly; the server's log has the details"
    ))
}

/// The error for a function cut off by `request_timeout`: logged with its name.
pub(crate) fn timed_out(name: &str, limit: Duration) -> RpcError {
    tracing::warn!(name = %name, timeout_s = limit.as_secs_f64(), "a request timed out and was cancelled");
    RpcError::internal(format!(
        "Request timed out: `{name}` did not finish within {} s and was cancelled",
        limit.as_secs_f64()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Revision;
    use crate::protocol::meta::{RawMeta, RequestMeta};
    use serde::Deserialize;

    #[test]
    fn round_key_arguments_share_the_kept_request_bytes() {
        let message = Bytes::from_static(br#"{"params":{"arguments":{"a":1}}}"#);
        let elsewhere = r#"{"a":1}"#.to_owned();
        let args: &RawValue = serde_json::from_str(&elsewhere).unwrap();
        let inside =
            <&RawValue>::deserialize(&mut serde_json::Deserializer::from_slice(&message[23..30]))
                .unwrap();
        let kept = RequestParts::new(
            Revision::LATEST,
            RequestMeta {
                raw: RawMeta::of_message(message.clone()),
                ..RequestMeta::default()
            },
        );
        // A view of the request's bytes: same text, same memory.
        let shared = arguments_text(&kept, Some(inside)).unwrap();
        assert_eq!(&shared[..], br#"{"a":1}"#);
        assert_eq!(shared.as_ptr(), message[23..].as_ptr());
        // Arguments from elsewhere (or no kept bytes) are copied.
        let copied = arguments_text(&kept, Some(args)).unwrap();
        assert_eq!(&copied[..], br#"{"a":1}"#);
        assert_ne!(copied.as_ptr(), message[23..].as_ptr());
        let plain = RequestParts::new(Revision::LATEST, RequestMeta::default());
        assert_eq!(
            &arguments_text(&plain, Some(inside)).unwrap()[..],
            br#"{"a":1}"#
        );
        assert_eq!(arguments_text(&plain, None), None);
    }
}
