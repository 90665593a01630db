//! The seam for definitions that are not the program's own: a [`Source`] (a remote MCP
//! server, `compose::proxy`) lists tools, prompts, resources and templates that it fetches
//! from elsewhere, and serves their calls. The engine renders its lists for each revision as
//! it renders the registry's, and runs each of its calls through the invoker as a
//! [`Remote`] function: with a `Context` (what the upstream asks, the client is asked), under
//! `request_timeout`, cancelled with the request.
//!
//! The registry's definitions come first: a name or URI the registry has is never a source's.

use std::borrow::Cow;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use bytes::Bytes;

use super::invoker::{Detached, Function, Output};
use crate::handler::BoxFuture;
use crate::handler::context::Context;
use crate::middleware::{Kind, McpResponse, Reply};
use crate::protocol::jsonrpc::RpcError;
use crate::protocol::types::{
    CallToolResult, GetPromptResult, Prompt, ReadResourceResult, Resource, ResourceTemplate, Tool,
};

/// A list a source contributes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum ListKind {
    Tools,
    Prompts,
    Resources,
    Templates,
}

/// What a source lists, as this server shows it (names already under the source's prefix).
#[derive(Clone, Debug, Default)]
pub(crate) struct Listed {
    pub tools: Vec<Tool>,
    pub prompts: Vec<Prompt>,
    pub resources: Vec<Resource>,
    pub templates: Vec<ResourceTemplate>,
}

/// A source of definitions fetched from elsewhere (see the module's documentation).
pub(crate) trait Source: Send + Sync + std::fmt::Debug + 'static {
    /// Its name in logs and for the layers (the prefix it serves under, or `upstream`).
    fn label(&self) -> &'static str;
    /// Its items of one list, from its cache or fetched: the error when they cannot be
    /// had (the caller leaves them out and logs it).
    fn list(&self, kind: ListKind) -> BoxFuture<Result<Listed, RpcError>>;
    /// Whether `key` (a tool's or prompt's name as listed here, or a resource URI) is
    /// this source's to serve.
    fn owns(&self, kind: ListKind, key: &str) -> bool;
    /// Forwards one request (`tools/call`, `prompts/get`, `resources/read`,
    /// `completion/complete`) with its params as this server received them: the result
    /// object, or the upstream's error as it sent it. What the upstream asks meanwhile is
    /// asked of the client through `ctx`.
    fn forward(
        &self,
        method: &'static str,
        params: Map<String, Value>,
        ctx: Context,
    ) -> BoxFuture<Result<Value, RpcError>>;
    /// A request about one of its tasks (`tasks/get`, `tasks/update`, `tasks/cancel`: the
    /// tasks extension), relayed for a client that this server gave the task under an id of
    /// its own: `params` as the client sent them, `taskId` made the source's. The result
    /// object, or the error, as the source answered.
    fn task(
        &self,
        method: &'static str,
        _params: Map<String, Value>,
    ) -> BoxFuture<Result<Value, RpcError>> {
        Box::pin(async move { Err(RpcError::method_not_found(method)) })
    }
    /// The `x-mcp-header` arguments of one of its tools, as it listed it (`None` when it has
    /// not listed it yet): their `Mcp-Param-*` headers are checked as for the program's own.
    fn tool_headers(&self, _name: &str) -> Option<Vec<crate::protocol::headers::HeaderParam>> {
        None
    }
    /// A client follows updates of `uri`, one of this source's resources
    /// (`resources/subscribe`, a listen filter), as `caller` (`Admission::caller_key`: a
    /// principal, or an anonymous client's network): the source follows it at its end while
    /// the [`Following`] it gives lives (or another holder's of the same URI), and tells of
    /// its updates through the notifier it was attached to. The holder keeps it where it
    /// keeps the subscription, and drops it with the subscription. `None`: not followed (a
    /// source past its bounds, which it logs); the client's subscription is kept all the
    /// same.
    fn follow(&self, uri: &str, caller: crate::quota::Key) -> Option<Following>;
    /// Where it tells the clients that its lists changed or a resource was updated: given
    /// once, when the server is built.
    fn attach(&self, notifier: crate::handler::events::Notifier);
    /// What the server around it serves itself, and whether tool search is on: given once,
    /// when the server is built (a source's tool or prompt of a name the program serves
    /// itself is left out of its lists, and logged).
    fn place(&self, _placement: Placement) {}
    /// What a call of its tool `name` (as listed here) does to the arguments before they
    /// are forwarded: a transform's fixed and default arguments (the layers see them edited,
    /// as for the program's own tools).
    fn edit(&self, _name: &str) -> Option<crate::registry::ArgumentEdit> {
        None
    }
    /// What the layers are told of its tool `name`, from its listing when it has been
    /// fetched: whether it says it only reads, and its `writeOnly` arguments.
    fn tool_traits(&self, _name: &str) -> Option<(bool, Vec<String>)> {
        None
    }
    /// Whether it serves every name and URI (no prefix): a source with a prefix is asked
    /// first.
    fn catches_all(&self) -> bool {
        false
    }
    /// Whether `tools/list` shows its tool `name`: not when tool search is on (the search
    /// finds it), unless it is pinned.
    fn listed(&self, _name: &str) -> bool {
        true
    }
}

/// A holder's part in a source's following of one URI ([`Source::follow`]): the source
/// follows the URI while any holder's part lives, and stops when the last one is dropped.
/// Kept where the subscription is kept: beside its bytes in the hub's set of its session
/// (dropped with an unsubscribe, the session's end, expiry or eviction), in a listen
/// stream's state (dropped when the stream ends).
pub(crate) struct Following {
    _part: Box<dyn Send + Sync>,
}

impl Following {
    /// A part whose drop is the source's to act on.
    #[cfg_attr(not(feature = "client"), allow(dead_code))] // made by `compose::proxy`
    pub(crate) fn new(part: impl Send + Sync + 'static) -> Following {
        Following {
            _part: Box::new(part),
        }
    }
}

impl std::fmt::Debug for Following {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Following")
    }
}

/// What a source is told of the server around it when the server is built.
#[derive(Clone, Debug, Default)]
#[cfg_attr(not(feature = "client"), allow(dead_code))] // read by `compose::proxy`
pub(crate) struct Placement {
    /// The names of the program's own tools (the search tool's too).
    pub tools: std::collections::HashSet<String>,
    /// The names of the program's own prompts.
    pub prompts: std::collections::HashSet<String>,
    /// The URIs of the program's own resources, templates, views and skill files.
    pub resources: std::collections::HashSet<String>,
    /// Tool search is on: the tools `tools/list` shows beside the search tool (the pinned
    /// ones).
    pub pinned: Option<Vec<String>>,
}

/// The sources of a server (`Server::proxy`), in the order given.
pub(crate) type Sources = Vec<Arc<dyn Source>>;

/// A call of a source's definition, run by the invoker like any function.
pub(crate) struct Remote<T> {
    pub source: Arc<dyn Source>,
    pub method: &'static str,
    /// The tool's or prompt's name, or the resource's URI, as the client sent it.
    pub name: String,
    /// The params forwarded, but the arguments.
    pub params: Map<String, Value>,
    /// The arguments (a tool's after its transform): what the layers see, and what they
    /// hand on is forwarded.
    pub arguments: Option<Box<RawValue>>,
    /// The tool says it only reads (`readOnlyHint`), as listed.
    pub read_only: bool,
    /// Its arguments the layers never show (`writeOnly` in its input schema, as listed).
    pub sensitive: Option<Arc<[String]>>,
    pub _out: std::marker::PhantomData<fn() -> T>,
}

impl<T> Remote<T> {
    /// A call of `source`'s function `name`.
    pub(crate) fn new(
        source: Arc<dyn Source>,
        method: &'static str,
        name: String,
        params: Map<String, Value>,
        arguments: Option<Box<RawValue>>,
    ) -> Self {
        let (read_only, sensitive) = match method {
            "tools/call" => match source.tool_traits(&name) {
                Some(traits) => traits,
                // Its listing not fetched yet: which arguments are secrets is not known, so
                // the layers record none of them.
                None => (false, argument_names(arguments.as_deref())),
            },
            _ => (false, Vec::new()),
        };
        Remote {
            read_only,
            sensitive: (!sensitive.is_empty()).then(|| Arc::from(sensitive)),
            source,
            method,
            name,
            params,
            arguments,
            _out: std::marker::PhantomData,
        }
    }
}

/// The names of the arguments of a call.
fn argument_names(arguments: Option<&RawValue>) -> Vec<String> {
    arguments
        .and_then(|a| serde_json::from_str::<Map<String, Value>>(a.get()).ok())
        .map(|m| m.into_iter().map(|(k, _)| k).collect())
        .unwrap_or_default()
}

/// The params of a forwarded call: `params` with `arguments` (the layers' as they handed
/// them on), parsed.
fn with_arguments(
    mut params: Map<String, Value>,
    arguments: Option<&RawValue>,
) -> Result<Map<String, Value>, RpcError> {
    if let Some(raw) = arguments {
        let value: Value = serde_json::from_str(raw.get())
            .map_err(|e| RpcError::invalid_params(format!("Invalid params: `arguments`: {e}")))?;
        params.insert("arguments".into(), value);
    }
    Ok(params)
}

/// What a forwarded call's result becomes: a typed result, or the upstream's error (a tool's
/// protocol error is recorded on the call, as `Context::fail_with` does).
pub(crate) trait RemoteOutput: Output {
    /// What the layers see it as.
    const KIND: Kind;
    fn from_forwarded(r: Result<Value, RpcError>, ctx: &Context) -> Self;
}

fn decode<T: DeserializeOwned>(v: Value, method: &str) -> Result<T, RpcError> {
    serde_json::from_value(v).map_err(|e| {
        RpcError::internal(format!(
            "Internal error: the upstream server's {method} result is malformed: {e}"
        ))
    })
}

/// What a remote tool's call comes to: its result, or a task the upstream runs it as (the
/// tasks extension: a call from a client that declared it), which this server relays under
/// an id of its own (server/tasks.rs, "Relayed tasks").
#[derive(Debug)]
pub(crate) enum RemoteTool {
    Result(CallToolResult),
    /// The upstream's `CreateTaskResult`, as it sent it.
    Task(Value),
}

impl Output for RemoteTool {
    fn into_response(self) -> McpResponse {
        match self {
            RemoteTool::Result(r) => r.into_response(),
            // The layers see a task as a rendered result: theirs to pass or refuse, not to
            // edit.
            RemoteTool::Task(v) => McpResponse::reply(Reply::Rendered(Bytes::from(
                serde_json::to_vec(&v).unwrap_or_default(),
            ))),
        }
    }
    fn from_reply(reply: Reply) -> Option<Self> {
        match reply {
            Reply::Rendered(b) => serde_json::from_slice(&b).ok().map(RemoteTool::Task),
            other => CallToolResult::from_reply(other).map(RemoteTool::Result),
        }
    }
}

impl RemoteOutput for RemoteTool {
    const KIND: Kind = Kind::Tool;
    fn from_forwarded(r: Result<Value, RpcError>, ctx: &Context) -> Self {
        let r = r.and_then(|v| {
            if v.get("resultType").and_then(Value::as_str) == Some("task") {
                Ok(RemoteTool::Task(v))
            } else {
                decode(v, "tools/call").map(RemoteTool::Result)
            }
        });
        r.unwrap_or_else(|e| {
            ctx.fail_with(e);
            RemoteTool::Result(CallToolResult::default())
        })
    }
}

impl RemoteOutput for Result<GetPromptResult, RpcError> {
    const KIND: Kind = Kind::Prompt;
    fn from_forwarded(r: Result<Value, RpcError>, _: &Context) -> Self {
        r.and_then(|v| decode(v, "prompts/get"))
    }
}

impl RemoteOutput for Result<ReadResourceResult, RpcError> {
    const KIND: Kind = Kind::Resource;
    fn from_forwarded(r: Result<Value, RpcError>, _: &Context) -> Self {
        r.and_then(|v| decode(v, "resources/read"))
    }
}

impl<T: RemoteOutput> Function for Remote<T> {
    type Output = T;
    fn name(&self) -> Cow<'static, str> {
        Cow::Owned(self.name.clone())
    }
    fn takes_context(&self) -> bool {
        true
    }
    fn call(self, ctx: Context) -> BoxFuture<T> {
        let Remote {
            source,
            method,
            params,
            arguments,
            ..
        } = self;
        Box::pin(async move {
            let r = match with_arguments(params, arguments.as_deref()) {
                Ok(params) => source.forward(method, params, ctx.clone()).await,
                Err(e) => Err(e),
            };
            T::from_forwarded(r, &ctx)
        })
    }
    // The layers see a remote function under its kind; `Server::layer_for` names the
    // program's own functions only.
    const KIND: Kind = T::KIND;
    fn declared(&self) -> &'static str {
        self.source.label()
    }
    fn arguments(&self) -> Option<&RawValue> {
        self.arguments.as_deref()
    }
    fn read_only(&self) -> bool {
        self.read_only
    }
    fn sensitive(&self) -> Option<Arc<[String]>> {
        self.sensitive.clone()
    }
    fn detach(self) -> Detached<T> {
        // What the layers hand on is forwarded (a layer may change the arguments).
        Box::new(move |arguments, ctx| {
            let Remote {
                source,
                method,
                params,
                ..
            } = self;
            let params = with_arguments(params, arguments);
            Box::pin(async move {
                let r = match params {
                    Ok(params) => source.forward(method, params, ctx.clone()).await,
                    Err(e) => Err(e),
                };
                T::from_forwarded(r, &ctx)
            })
        })
    }
}
