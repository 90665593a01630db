//! Policies on every call: [tower](https://docs.rs/tower) middleware at the level of MCP
//! operations (see docs/middleware.md).
//!
//! Every MCP operation — a call of a user function (`tools/call`, `prompts/get`, a
//! `resources/read` of a resource, a template's match or a view), and every list,
//! `completion/complete`, request about a task, skill read and resource subscription — can
//! pass through a stack of tower layers before it is served. A layer is a [`tower::Layer`] over a service of [`McpRequest`] to
//! [`McpResponse`]; it sees what is called (method, name or URI, arguments), by whom (the
//! caller's name, the client's address and info), on which revision and transport, and may
//! refuse, observe, time or answer the call instead of the function.
//!
//! ```no_run
//! use std::time::Duration;
//! use sake_runtime::middleware::{self, Audit, RateLimit, Timeout};
//!
//! let server = sake_runtime::Server::from_registry()
//!     // The first layer added is the outermost: the audit sees every refusal below it.
//!     .layer(Audit::new())
//!     .layer_for("search", RateLimit::new(3, Duration::from_secs(10)).per_client())
//!     .layer_tools(Timeout::new(Duration::from_secs(30)))
//!     .layer(middleware::from_fn(|req, next| async move {
//!         tracing::info!(tool = req.name(), "called");
//!         next.run(req).await
//!     }));
//! ```
//!
//! Layers are composed once, when the server is built, into one service per function (and
//! one per kind of the other operations); a function no layer applies to is called exactly
//! as without middleware. The layers apply the same on both eras, every transport (HTTP,
//! stdio, `Service::connect`, `TestClient`) and to tasks: a task's work passes them when it
//! starts (its run is the call they wrap).

mod audit;
mod cache;
mod concurrency;
mod rate;
mod rules;
mod timeout;

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError};
use std::task::{Context as TaskContext, Poll, Wake, Waker};

use bytes::Bytes;
use serde_json::Value;
use serde_json::value::RawValue;
use tower::util::BoxService;
use tower::{Layer, Service, ServiceExt};

pub use self::audit::{Audit, AuditRecord, AuditSink, TracingSink};
pub use self::cache::Cache;
pub use self::concurrency::Concurrency;
pub use self::rate::{MemoryRateStore, RateLimit, RateStore, RateStoreError};
pub use self::rules::Allow;
pub use self::timeout::Timeout;

use crate::handler::BoxFuture;
use crate::handler::context::Context;
pub use crate::handler::context::Transport;
use crate::protocol::jsonrpc::{RpcError, code};
use crate::protocol::types::{
    CallToolResult, ClientCapabilities, GetPromptResult, Implementation, ReadResourceResult,
};
use crate::protocol::version::{Era, Revision};

/// The error type of a layer's service: anything that converts into it (tower's own errors,
/// an [`RpcError`], your own) is turned into an MCP error by the server (see
/// [`into_rpc_error`]).
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What kind of operation a request is: a call of a function (tool, prompt, resource,
/// view), or one of the operations the server answers from what it holds (lists,
/// completions, tasks, skills, subscriptions). [`McpRequest::method`] says which method.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Kind {
    /// A `#[tool]` (`tools/call`).
    Tool,
    /// A `#[prompt]` (`prompts/get`).
    Prompt,
    /// A `#[resource]`, static or a template's match (`resources/read`).
    Resource,
    /// A `#[view]`'s HTML (MCP Apps, `resources/read`).
    View,
    /// A list: `tools/list`, `prompts/list`, `resources/list`, `resources/templates/list`,
    /// `skills/list`. Its [`name`](McpRequest::name) is what it lists (`tools`, `prompts`,
    /// `resources`, `resources/templates`, `skills`).
    List,
    /// `completion/complete`: its name is the prompt's name or the resource template's URI
    /// the completion is for, its arguments the `argument` being completed.
    Completion,
    /// A request about a task (the tasks extension): `tasks/get`, `tasks/update`,
    /// `tasks/cancel`; its name and [`task_id`](McpRequest::task_id) are the task's id.
    Task,
    /// The skills extension: `skills/get` and `resources/directory/read` (name: the URI
    /// asked for), and `resources/read` of a skill's file (name: the file's URI).
    Skill,
    /// `resources/subscribe` and `resources/unsubscribe` (handshake sessions; name: the URI).
    Subscription,
}

impl Kind {
    /// `tool`, `prompt`, `resource`, `view`, `list`, `completion`, `task`, `skill` or
    /// `subscription`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Tool => "tool",
            Kind::Prompt => "prompt",
            Kind::Resource => "resource",
            Kind::View => "view",
            Kind::List => "list",
            Kind::Completion => "completion",
            Kind::Task => "task",
            Kind::Skill => "skill",
            Kind::Subscription => "subscription",
        }
    }

    /// Whether it calls a user function (a tool, prompt, resource or view): what
    /// `Server::layer_for` names.
    pub fn is_function(self) -> bool {
        matches!(
            self,
            Kind::Tool | Kind::Prompt | Kind::Resource | Kind::View
        )
    }

    /// The kinds of operations that call no function: each has one stack of layers.
    pub(crate) const OPERATIONS: [Kind; 5] = [
        Kind::List,
        Kind::Completion,
        Kind::Task,
        Kind::Skill,
        Kind::Subscription,
    ];
}

/// What runs the function once every layer let the call through: made by the server.
pub(crate) type Run = Box<dyn FnOnce(Option<&RawValue>, Context) -> BoxFuture<McpResponse> + Send>;

/// One call of a user function, as a layer sees it.
///
/// Cheap to read: the arguments are a view of the request's bytes where the transport kept
/// them. What a layer cannot change: which function runs, with what, for whom.
pub struct McpRequest {
    pub(crate) kind: Kind,
    pub(crate) method: &'static str,
    pub(crate) task_id: Option<String>,
    pub(crate) name: Cow<'static, str>,
    pub(crate) function: &'static str,
    pub(crate) arguments: Option<Bytes>,
    pub(crate) principal: Option<String>,
    pub(crate) client_addr: Option<IpAddr>,
    pub(crate) client_network: Option<IpAddr>,
    pub(crate) continuation: bool,
    pub(crate) task: bool,
    pub(crate) read_only: bool,
    pub(crate) sensitive: Arc<[String]>,
    pub(crate) transport: Transport,
    /// The server's authorization (feature `auth`), for rules about scopes.
    #[cfg(feature = "auth")]
    pub(crate) auth: Option<Arc<crate::auth::Authorization>>,
    pub(crate) ctx: Context,
    pub(crate) run: Option<Run>,
    extensions: http::Extensions,
}

impl fmt::Debug for McpRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpRequest")
            .field("method", &self.method())
            .field("name", &self.name)
            .field("revision", &self.revision())
            .field("transport", &self.transport())
            .field("continuation", &self.continuation)
            .finish_non_exhaustive()
    }
}

impl McpRequest {
    /// A request of `kind` for `name`, as the invoker makes it.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        kind: Kind,
        name: Cow<'static, str>,
        function: &'static str,
        arguments: Option<Bytes>,
        principal: Option<String>,
        client_addr: Option<IpAddr>,
        ctx: Context,
        run: Option<Run>,
    ) -> McpRequest {
        let method = match kind {
            Kind::Tool => "tools/call",
            Kind::Prompt => "prompts/get",
            _ => "resources/read",
        };
        McpRequest {
            kind,
            method,
            task_id: None,
            name,
            function,
            arguments,
            principal,
            client_addr,
            client_network: None,
            continuation: false,
            task: false,
            read_only: false,
            sensitive: Arc::from(Vec::new()),
            transport: Transport::Stream,
            #[cfg(feature = "auth")]
            auth: None,
            ctx,
            run,
            extensions: http::Extensions::new(),
        }
    }

    /// The method: `tools/call`, `prompts/get`, `resources/read`, `tools/list`,
    /// `completion/complete`, `tasks/get`, …
    pub fn method(&self) -> &'static str {
        self.method
    }

    /// What the request is about, as refusals name it: "tool `x`", "resource `uri`",
    /// "the tools list", "task `id`".
    pub fn what(&self) -> String {
        match self.kind {
            Kind::List => format!("the {} list", self.name),
            Kind::Completion => format!("completions of `{}`", self.name),
            kind => format!("{} `{}`", kind.as_str(), self.name),
        }
    }

    /// Whether the caller's verified token grants every scope of `scopes`, as the server
    /// checks a function's scopes (`Authorization::implies` included); `false` for an
    /// anonymous caller, or on a server that checks no tokens.
    pub(crate) fn grants(&self, scopes: &[String]) -> bool {
        #[cfg(feature = "auth")]
        if let (Some(auth), Some(principal)) = (
            &self.auth,
            self.http_extensions().get::<crate::auth::Principal>(),
        ) {
            let scopes: Vec<&str> = scopes.iter().map(String::as_str).collect();
            return auth.missing(principal, &scopes).is_empty();
        }
        let _ = scopes;
        false
    }

    /// What refusals call it: the tool's or prompt's name, the URI; for an operation that
    /// calls no function, its method (`tools/list`).
    pub(crate) fn label(&self) -> &str {
        if self.kind.is_function() {
            &self.name
        } else {
            self.method
        }
    }

    /// What kind of operation it is.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The tool's or prompt's name, or the resource's URI as asked for; for the operations
    /// that call no function, what [`Kind`] says.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The function as declared: the tool's or prompt's name, the resource's URI or URI
    /// template, the view's URI. What `Server::layer_for` matches. For an operation that
    /// calls no function, its method.
    pub fn function(&self) -> &'static str {
        self.function
    }

    /// The arguments as the client sent them (a JSON object), if any.
    pub fn raw_arguments(&self) -> Option<&RawValue> {
        let bytes = self.arguments.as_deref()?;
        serde_json::from_slice::<&RawValue>(bytes).ok()
    }

    /// The arguments decoded into `T` (`None` when there are none).
    pub fn arguments<T: serde::de::DeserializeOwned>(
        &self,
    ) -> Result<Option<T>, serde_json::Error> {
        self.arguments
            .as_deref()
            .map(serde_json::from_slice)
            .transpose()
    }

    /// The caller's name, as sessions and `requestState` are bound to it: the verified
    /// token's issuer and subject (feature `auth`), or what `Server::principal` names;
    /// `None` for an anonymous caller.
    pub fn principal(&self) -> Option<&str> {
        self.principal.as_deref()
    }

    /// The client's network address (HTTP; behind a proxy, from `Server::client_ip_header`).
    pub fn client_addr(&self) -> Option<IpAddr> {
        self.client_addr
    }

    /// The network the client's address stands for, as the server's quotas count clients:
    /// an IPv4 address, or the `Limits::ipv6_client_prefix` (default /64) of an IPv6 one —
    /// what a per-client rate limit keys on, so one IPv6 network is one client however many
    /// of its addresses it uses.
    pub fn client_network(&self) -> Option<IpAddr> {
        self.client_network
    }

    /// The revision the request speaks.
    pub fn revision(&self) -> Revision {
        self.ctx.revision()
    }

    /// Its era: 2026-07-28 (no session) or a handshake revision.
    pub fn era(&self) -> Era {
        self.ctx.revision().era()
    }

    /// The client's name and version, when it gave them.
    pub fn client_info(&self) -> Option<&Implementation> {
        self.ctx.client_info()
    }

    /// The client's capabilities.
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        self.ctx.client_capabilities()
    }

    /// What carried the request, as its transport told the server (an HTTP request reads
    /// [`Transport::Http`] whether or not its client's address is known).
    pub fn transport(&self) -> Transport {
        self.transport
    }

    /// The HTTP request's extensions (empty on other transports): where an authentication
    /// layer leaves what it verified.
    pub fn http_extensions(&self) -> &http::Extensions {
        self.ctx.extensions()
    }

    /// Extensions the layers pass each other along this call (empty when it starts).
    pub fn extensions(&self) -> &http::Extensions {
        &self.extensions
    }

    /// The same, to insert into.
    pub fn extensions_mut(&mut self) -> &mut http::Extensions {
        &mut self.extensions
    }

    /// The id of the task the call runs as, once it became one (read it when the call ends:
    /// a call becomes a task after its first poll).
    pub fn task_id(&self) -> Option<String> {
        match &self.task_id {
            Some(id) => Some(id.clone()),
            None => self.ctx.task_id().map(str::to_owned),
        }
    }

    /// Whether the call runs as a task or may become one (the client asked for a task).
    pub fn is_task(&self) -> bool {
        self.task
    }

    /// Whether this call continues an input round: the same call again, with the client's
    /// answers (a 2026-07-28 retry with `inputResponses`, or a task resumed after
    /// `tasks/update`). A rate limit does not count it again.
    pub fn is_continuation(&self) -> bool {
        self.continuation
    }

    /// Whether the tool declares itself read-only (`read_only_hint`).
    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// The top-level arguments the function's input schema marks `writeOnly` (secrets):
    /// never logged nor audited.
    pub fn sensitive_arguments(&self) -> &[String] {
        &self.sensitive
    }

    /// The function's [`Context`] (what the function itself will see).
    pub fn context(&self) -> &Context {
        &self.ctx
    }
}

/// What the function (or a layer instead of it) answered.
#[derive(Clone, Debug)]
pub struct McpResponse {
    pub(crate) outcome: Outcome,
}

#[derive(Clone, Debug)]
pub(crate) enum Outcome {
    Reply(Reply),
    /// The function returned, but ended its call with a protocol error
    /// ([`Context::fail_with`], or a malformed answer it read): the client gets the error.
    Failed(Reply, RpcError),
    Error(RpcError),
    Input(Vec<(String, Value)>),
}

/// A function's result, by kind.
#[derive(Clone, Debug)]
pub(crate) enum Reply {
    Tool(CallToolResult),
    Prompt(GetPromptResult),
    Resource(ReadResourceResult),
    View(&'static str, String),
    /// The result of an operation that calls no function, rendered for its revision.
    Rendered(Bytes),
}

impl McpResponse {
    /// An error the client gets instead of the function's result (a refusal).
    pub fn error(error: RpcError) -> McpResponse {
        McpResponse {
            outcome: Outcome::Error(error),
        }
    }

    pub(crate) fn reply(reply: Reply) -> McpResponse {
        McpResponse {
            outcome: Outcome::Reply(reply),
        }
    }

    pub(crate) fn input(asked: Vec<(String, Value)>) -> McpResponse {
        McpResponse {
            outcome: Outcome::Input(asked),
        }
    }

    /// The JSON-RPC error, when the call ends with one: a layer's refusal, a failure of the
    /// function, or the protocol error it recorded with [`Context::fail_with`].
    pub fn rpc_error(&self) -> Option<&RpcError> {
        match &self.outcome {
            Outcome::Error(e) | Outcome::Failed(_, e) => Some(e),
            _ => None,
        }
    }

    /// The tool's result, when a tool returned.
    pub fn tool_result(&self) -> Option<&CallToolResult> {
        match &self.outcome {
            Outcome::Reply(Reply::Tool(r)) => Some(r),
            _ => None,
        }
    }

    /// Whether the call failed: a JSON-RPC error (a protocol error: [`rpc_error`](Self::rpc_error)),
    /// or a tool's error result (`isError`: [`is_tool_error`](Self::is_tool_error)).
    pub fn is_error(&self) -> bool {
        self.rpc_error().is_some() || self.is_tool_error()
    }

    /// Whether a tool returned an error result (`isError: true`, which the model reads): the
    /// call was served, the tool failed.
    pub fn is_tool_error(&self) -> bool {
        matches!(&self.outcome, Outcome::Reply(Reply::Tool(r)) if r.is_error())
    }

    /// Whether the function asked the client for input (an input round): the call goes on
    /// when the client answers.
    pub fn is_input_round(&self) -> bool {
        matches!(self.outcome, Outcome::Input(_))
    }

    /// `ok`, `tool_error` (a tool's `isError` result), `error` (a JSON-RPC error: a refusal,
    /// a failure, [`Context::fail_with`]) or `input_required`.
    pub fn outcome(&self) -> &'static str {
        match &self.outcome {
            Outcome::Reply(Reply::Tool(r)) if r.is_error() => "tool_error",
            Outcome::Reply(_) => "ok",
            Outcome::Error(_) | Outcome::Failed(..) => "error",
            Outcome::Input(_) => "input_required",
        }
    }

    /// The size of the result as JSON (what a cache holds), 0 for anything else.
    pub(crate) fn result_bytes(&self) -> usize {
        let len = |v: Result<Vec<u8>, serde_json::Error>| v.map_or(0, |b| b.len());
        match &self.outcome {
            Outcome::Reply(Reply::Tool(r)) => len(serde_json::to_vec(r)),
            Outcome::Reply(Reply::Prompt(r)) => len(serde_json::to_vec(r)),
            Outcome::Reply(Reply::Resource(r)) => len(serde_json::to_vec(r)),
            Outcome::Reply(Reply::View(u, h)) => u.len() + h.len(),
            Outcome::Reply(Reply::Rendered(b)) => b.len(),
            _ => 0,
        }
    }
}

/// The innermost service: runs the function.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Innermost;

impl Service<McpRequest> for Innermost {
    type Response = McpResponse;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<McpResponse, BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut TaskContext<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, mut req: McpRequest) -> Self::Future {
        let Some(run) = req.run.take() else {
            return Box::pin(async {
                Err(BoxError::from(
                    "a layer called the function of one request twice",
                ))
            });
        };
        let ctx = req.ctx.clone();
        let fut = run(req.raw_arguments(), ctx);
        Box::pin(async move { Ok(fut.await) })
    }
}

/// The service a layer wraps: the rest of the stack, boxed (layers are composed once, at start-up).
pub type Boxed = BoxService<McpRequest, McpResponse, BoxError>;

type Wrap = Arc<dyn Fn(Boxed) -> Boxed + Send + Sync>;

/// A tower layer over MCP operations: what [`Server::layer`](crate::Server::layer) and its
/// kin, and `#[tool(layer = …)]`, take. Every [`tower::Layer`] over [`Boxed`] whose service
/// answers an [`McpRequest`] with an [`McpResponse`] (any error that converts to a
/// [`BoxError`]) is one: tower's own timeout, rate and concurrency layers, the built-in
/// policies, [`from_fn`], a layer of your own.
pub trait McpLayer:
    Layer<
        Boxed,
        Service: Service<
            McpRequest,
            Response = McpResponse,
            Error: Into<BoxError>,
            Future: Send + 'static,
        > + Send
                     + 'static,
    > + Send
    + Sync
    + 'static
{
}

impl<L> McpLayer for L where
    L: Layer<
            Boxed,
            Service: Service<
                McpRequest,
                Response = McpResponse,
                Error: Into<BoxError>,
                Future: Send + 'static,
            > + Send
                         + 'static,
        > + Send
        + Sync
        + 'static
{
}

/// Which functions a layer applies to.
#[derive(Clone, Debug)]
enum Scope {
    All,
    Kind(Kind),
    Named(String),
    /// `#[tool(layer = …)]`: the tool of that name, if it is served.
    Declared(&'static str),
}

/// A layer a `#[tool(layer = …)]` attribute declares: what generated code registers. Not a
/// public API.
#[doc(hidden)]
#[derive(Debug)]
pub struct ToolLayer {
    /// The tool's name.
    pub tool: &'static str,
    /// Makes the layer (when a server is built).
    pub layer: fn() -> LayerFn,
}

inventory::collect!(ToolLayer);

/// A layer, type-erased: what `#[tool(layer = …)]` generated code makes. Not a public API.
#[doc(hidden)]
pub struct LayerFn(Wrap);

impl fmt::Debug for LayerFn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("LayerFn")
    }
}

impl LayerFn {
    /// `layer`, type-erased.
    pub fn new<L: McpLayer>(layer: L) -> LayerFn {
        LayerFn(wrap(layer))
    }
}

fn wrap<L: McpLayer>(layer: L) -> Wrap {
    Arc::new(move |inner| BoxService::new(layer.layer(inner).map_err(Into::into)))
}

/// The layers a server was given, in order (the first is the outermost).
#[derive(Clone, Default)]
pub(crate) struct Layers {
    list: Vec<(Scope, Wrap)>,
}

impl fmt::Debug for Layers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.list.iter().map(|(s, _)| s))
            .finish()
    }
}

impl Layers {
    fn push<L: McpLayer>(&mut self, scope: Scope, layer: L) {
        self.list.push((scope, wrap(layer)));
    }

    /// Every operation.
    pub(crate) fn all<L: McpLayer>(&mut self, layer: L) {
        self.push(Scope::All, layer);
    }

    /// Every function of a kind.
    pub(crate) fn kind<L: McpLayer>(&mut self, kind: Kind, layer: L) {
        self.push(Scope::Kind(kind), layer);
    }

    /// One function, by its declared name (tool, prompt) or URI (resource, template, view).
    pub(crate) fn named<L: McpLayer>(&mut self, name: String, layer: L) {
        self.push(Scope::Named(name), layer);
    }

    /// The layers `#[tool(layer = …)]` attributes declare, innermost (added when the server
    /// is built, after every layer given to it).
    pub(crate) fn add_declared(&mut self) {
        for declared in inventory::iter::<ToolLayer> {
            let LayerFn(wrap) = (declared.layer)();
            self.list.push((Scope::Declared(declared.tool), wrap));
        }
    }

    /// Whether no layer was given.
    pub(crate) fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The names layers were given for (checked against the registry at start-up).
    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        self.list.iter().filter_map(|(s, _)| match s {
            Scope::Named(n) => Some(n.as_str()),
            _ => None,
        })
    }

    /// The stack of the function `name` of `kind` (of the operations of `kind`, which call
    /// no function: `name` empty), composed once; `None` when no layer applies (the function
    /// is called without middleware).
    pub(crate) fn compose(&self, kind: Kind, name: &str) -> Option<Stack> {
        let applies: Vec<&Wrap> = self
            .list
            .iter()
            .filter(|(scope, _)| match scope {
                Scope::All => true,
                Scope::Kind(k) => *k == kind,
                Scope::Named(n) => kind.is_function() && n == name,
                Scope::Declared(n) => kind == Kind::Tool && *n == name,
            })
            .map(|(_, w)| w)
            .collect();
        if applies.is_empty() {
            return None;
        }
        // The first added is the outermost: wrap from the last.
        let mut service: Boxed = BoxService::new(Innermost);
        for wrap in applies.into_iter().rev() {
            service = wrap(service);
        }
        Some(Stack {
            service: SharedService::new(service),
            sensitive: Arc::from(Vec::new()),
        })
    }
}

/// A function's composed layers: shared by its calls (a service that is not ready — a
/// concurrency limit reached, a tower rate limit waiting — holds the others back, as tower
/// services do).
#[derive(Clone)]
pub(crate) struct Stack {
    service: SharedService,
    /// The function's arguments its schema marks `writeOnly`.
    pub(crate) sensitive: Arc<[String]>,
}

impl fmt::Debug for Stack {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Stack")
    }
}

impl Stack {
    /// Runs `req` through the stack.
    pub(crate) async fn call(&self, req: McpRequest) -> Result<McpResponse, BoxError> {
        self.service.call(req).await
    }
}

/// A service shared by the concurrent calls of a function: each call takes the service's lock
/// only to poll its readiness and call it — never across an `.await` — so calls run at the
/// same time; the futures the service returns run outside the lock. A service that is not
/// ready (tower's rate limit waiting, a concurrency limit reached) wakes every call that waits
/// for it when it is, and one of them takes the readiness (a tower service holds the waker of
/// its last poll only: the calls wait on one waker of their own, which wakes them all).
#[derive(Clone)]
pub(crate) struct SharedService {
    inner: Arc<SharedState>,
}

struct SharedState {
    service: std::sync::Mutex<Boxed>,
    wake: Arc<WakeAll>,
    /// `wake` as a waker: what the service is polled with.
    waker: Waker,
}

/// The calls waiting for a shared service to be ready.
#[derive(Default)]
struct WakeAll {
    /// Counts the wakes: a call that saw the service pending, and a wake since it polled,
    /// polls again at once.
    wakes: AtomicU64,
    waiting: std::sync::Mutex<Vec<Waker>>,
}

impl Wake for WakeAll {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::AcqRel);
        let waiting =
            std::mem::take(&mut *self.waiting.lock().unwrap_or_else(PoisonError::into_inner));
        for waker in waiting {
            waker.wake();
        }
    }
}

impl WakeAll {
    /// `waker` waits for the next wake, unless one came since `seen`.
    fn wait(&self, waker: &Waker, seen: u64) {
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        if self.wakes.load(Ordering::Acquire) != seen {
            drop(waiting);
            waker.wake_by_ref();
        } else if !waiting.iter().any(|w| w.will_wake(waker)) {
            waiting.push(waker.clone());
        }
    }
}

impl fmt::Debug for SharedService {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SharedService")
    }
}

impl SharedService {
    pub(crate) fn new(service: Boxed) -> SharedService {
        let wake = Arc::new(WakeAll::default());
        SharedService {
            inner: Arc::new(SharedState {
                service: std::sync::Mutex::new(service),
                waker: Waker::from(wake.clone()),
                wake,
            }),
        }
    }

    /// Runs `req` through the service: ready, called (the lock released), then its future.
    pub(crate) async fn call(&self, req: McpRequest) -> Result<McpResponse, BoxError> {
        let mut req = Some(req);
        let fut = std::future::poll_fn(|cx| self.poll_call(cx, &mut req)).await?;
        fut.await
    }

    fn poll_call(
        &self,
        cx: &mut TaskContext<'_>,
        req: &mut Option<McpRequest>,
    ) -> Poll<Result<<Boxed as Service<McpRequest>>::Future, BoxError>> {
        let state = &*self.inner;
        let seen = state.wake.wakes.load(Ordering::Acquire);
        let mut service = state.service.lock().unwrap_or_else(PoisonError::into_inner);
        match service.poll_ready(&mut TaskContext::from_waker(&state.waker)) {
            Poll::Ready(Ok(())) => match req.take() {
                Some(req) => Poll::Ready(Ok(service.call(req))),
                None => Poll::Ready(Err(BoxError::from("a call was polled after it was made"))),
            },
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => {
                drop(service);
                state.wake.wait(cx.waker(), seen);
                Poll::Pending
            }
        }
    }
}

/// The MCP error for what a layer failed with: an [`RpcError`] as it is; tower's timeout
/// (-32603 naming the function), load shedding (-32000, HTTP 503 with `Retry-After`); anything
/// else -32603, logged with its message (the client learns only which function it was).
pub fn into_rpc_error(error: BoxError, function: &str) -> RpcError {
    let error = match error.downcast::<RpcError>() {
        Ok(e) => return *e,
        Err(e) => e,
    };
    if error.is::<tower::timeout::error::Elapsed>() {
        tracing::warn!(name = %function, "a timeout layer cut a call off; the function was cancelled");
        return RpcError::internal(format!(
            "Request timed out: `{function}` did not finish within the time its timeout layer allows, and was cancelled"
        ));
    }
    if error.is::<tower::load_shed::error::Overloaded>() {
        return busy(
            function,
            "a load-shedding layer refused it: the function is at its limit",
        );
    }
    tracing::error!(name = %function, error = %error, "a middleware layer failed a call");
    RpcError::internal(format!(
        "Internal error: a policy on `{function}` failed; the server's log has the details"
    ))
}

/// -32000 with HTTP 503 and `Retry-After: 1`: a function is at its limit of concurrent calls.
pub(crate) fn busy(function: &str, why: &str) -> RpcError {
    RpcError::new(
        code::TRANSPORT_REFUSED,
        format!("Server busy: `{function}` cannot run now ({why}); retry in a moment"),
    )
    .with_data(serde_json::json!({ "retryAfter": 1 }))
    .with_status(503)
    .with_retry_after(1)
}

/// A layer made of an async closure: `from_fn(|req, next| async move { … next.run(req).await })`.
///
/// The closure may look at the request, refuse it (return
/// [`McpResponse::error`] without calling `next`), change its extensions, and look at or
/// replace the response.
pub fn from_fn<F, Fut>(f: F) -> FromFn<F>
where
    F: Fn(McpRequest, Next) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = McpResponse> + Send + 'static,
{
    FromFn { f }
}

/// The layer [`from_fn`] makes.
#[derive(Clone)]
pub struct FromFn<F> {
    f: F,
}

impl<F> fmt::Debug for FromFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FromFn")
    }
}

impl<F: Clone> Layer<Boxed> for FromFn<F> {
    type Service = FromFnService<F>;
    fn layer(&self, inner: Boxed) -> FromFnService<F> {
        FromFnService {
            f: self.f.clone(),
            inner: SharedService::new(inner),
        }
    }
}

/// The service of a [`from_fn`] layer.
pub struct FromFnService<F> {
    f: F,
    inner: SharedService,
}

/// The rest of the stack, for a [`from_fn`] closure.
pub struct Next {
    inner: SharedService,
    function: &'static str,
}

impl fmt::Debug for Next {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Next")
    }
}

impl Next {
    /// Runs the rest of the stack (and the function): a failure of an inner layer comes back
    /// as its MCP error.
    pub async fn run(self, req: McpRequest) -> McpResponse {
        match self.inner.call(req).await {
            Ok(r) => r,
            Err(e) => McpResponse::error(into_rpc_error(e, self.function)),
        }
    }
}

impl<F, Fut> Service<McpRequest> for FromFnService<F>
where
    F: Fn(McpRequest, Next) -> Fut,
    Fut: Future<Output = McpResponse> + Send + 'static,
{
    type Response = McpResponse;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<McpResponse, BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut TaskContext<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: McpRequest) -> Self::Future {
        let next = Next {
            inner: self.inner.clone(),
            function: req.function,
        };
        let fut = (self.f)(req, next);
        Box::pin(async move { Ok(fut.await) })
    }
}

/// Whole seconds, rounded up (what `Retry-After` and the refusals say).
pub(crate) fn seconds(d: std::time::Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

impl<F> std::fmt::Debug for FromFnService<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FromFnService")
    }
}
