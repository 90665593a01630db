//! The dispatcher: one table from method to handler for every revision and transport.
//!
//! Transports decode and check a request, then call [`Shared::dispatch`] with the request's
//! parts; the answer is either ready (lists, discovery) or a future that runs the user's
//! function and renders its result for the request's revision.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use serde::Deserialize;
use serde_json::json;
use serde_json::value::RawValue;
use tokio_util::sync::{CancellationToken, DropGuard};

use std::panic::AssertUnwindSafe;
use std::task::Poll;

use super::{Pages, Shared, decode_cursor};
use crate::handler::context::{Context, RequestParts};
use crate::handler::input::{InputChannel, Mrtr, RoundKey, RoundOutcome, merge_capabilities};
use crate::handler::{BoxFuture, CompleteFn, CompletionRequest, ResourceRequest, TaskSupport};
use crate::protocol::Revision;
use crate::protocol::apps;
use crate::protocol::jsonrpc::RpcError;
use crate::protocol::jsonrpc::clip;
use crate::protocol::meta::Params;
use crate::protocol::methods::{Method, Needs};
use crate::protocol::render::{self, Cache, Shape};
use crate::protocol::tasks::{self, EXTENSION as TASKS};
use crate::protocol::types::{
    CallToolResult, Completion, ReadResourceResult, ResourceContents, TextResourceContents,
};
use crate::registry::{Named, ViewEntry, ViewHtml};

/// How a round of a user function ended.
enum Step<T, I> {
    /// It returned.
    Done(T),
    /// It was waiting when `interrupt` said to stop (an MRTR round that asked for input).
    Interrupted(I),
}

/// Runs a user function's future: a panic in it, or `request_timeout`, fails this request
/// only (logged with `name`). `interrupt` is asked each time the function waits; `Some` ends
/// it there. Most functions finish on their first poll: only one that waits gets a timer.
async fn supervise<T, I>(
    mut fut: BoxFuture<T>,
    limit: std::time::Duration,
    name: &str,
    mut interrupt: impl FnMut() -> Option<I>,
) -> Result<Step<T, I>, RpcError> {
    let polled = std::future::poll_fn(|cx| {
        match std::panic::catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(cx))) {
            Err(panic) => Poll::Ready(Err(panic)),
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(Step::Done(v))),
            Ok(Poll::Pending) => match interrupt() {
                Some(i) => Poll::Ready(Ok(Step::Interrupted(i))),
                None => Poll::Pending,
            },
        }
    });
    let mut polled = std::pin::pin!(polled);
    let first = std::future::poll_fn(|cx| Poll::Ready(polled.as_mut().poll(cx))).await;
    let outcome = match first {
        Poll::Ready(outcome) => outcome,
        Poll::Pending => tokio::time::timeout(limit, polled)
            .await
            .map_err(|_| timed_out(name, limit))?,
    };
    outcome.map_err(|panic| panicked(name, panic.as_ref()))
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
pub(crate) fn timed_out(name: &str, limit: std::time::Duration) -> RpcError {
    tracing::warn!(name = %name, timeout_s = limit.as_secs_f64(), "a request timed out and was cancelled");
    RpcError::internal(format!(
        "Request timed out: `{name}` did not finish within {} s and was cancelled",
        limit.as_secs_f64()
    ))
}

/// -32021 when a function failed after being refused a client capability.
fn refusal(round: Option<&Mrtr>) -> Option<RpcError> {
    round
        .and_then(Mrtr::refused)
        .map(RpcError::missing_capability)
}

/// The answer of the dispatcher.
pub(crate) enum Dispatched {
    /// Known without running anything.
    Ready(Result<Bytes, RpcError>),
    /// Runs a user function.
    Pending(BoxFuture<Result<Bytes, RpcError>>),
}

impl Dispatched {
    fn err(rev: Revision, e: RpcError) -> Self {
        Dispatched::Ready(Err(render::error(rev, e)))
    }
}

/// Reads a string from raw JSON, borrowing when it has no escapes.
pub(crate) use crate::protocol::jsonrpc::raw_string as raw_str;

fn required<'a>(field: Option<&'a RawValue>, name: &str) -> Result<Cow<'a, str>, RpcError> {
    match field {
        None => Err(RpcError::invalid_params(format!(
            "Invalid params: missing required parameter `{name}`"
        ))),
        Some(raw) => raw_str(raw).ok_or_else(|| {
            RpcError::invalid_params(format!(
                "Invalid params: `{name}` must be a string, not {}",
                clip(raw.get())
            ))
        }),
    }
}

fn object_or_absent<'a>(
    field: Option<&'a RawValue>,
    name: &str,
) -> Result<Option<&'a RawValue>, RpcError> {
    match field {
        Some(raw) if raw.get() == "null" => Ok(None),
        Some(raw) if !raw.get().starts_with('{') => Err(RpcError::invalid_params(format!(
            "Invalid params: `{name}` must be an object, not {}",
            clip(raw.get())
        ))),
        other => Ok(other),
    }
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

impl Shared {
    /// Whether the server offers what a method needs (advertised capabilities ⇔ handlers).
    pub(crate) fn offers(&self, needs: Needs) -> bool {
        let c = &self.capabilities;
        match needs {
            Needs::Nothing => true,
            Needs::Tools => c.tools.is_some(),
            Needs::Prompts => c.prompts.is_some(),
            Needs::Resources => c.resources.is_some(),
            Needs::Completions => c.completions.is_some(),
            Needs::Logging => c.logging.is_some(),
            Needs::Tasks => self.tasks.is_some(),
            Needs::Skills => !self.registry.skills.is_empty(),
        }
    }

    /// Serves one request of a method that exists in the request's era and that the server
    /// offers. Handshake methods (`initialize`, `ping`, …) are the transports' business.
    pub(crate) fn dispatch(
        self: &Arc<Self>,
        parts: RequestParts,
        method: Method,
        params: &Params<'_>,
    ) -> Dispatched {
        // A signed-in caller's request that runs ends when the caller is signed out.
        let watch = self.watch_caller(&parts.extensions);
        match (self.dispatch_now(parts, method, params), watch) {
            (Dispatched::Pending(fut), Some(watch)) => {
                let shared = self.clone();
                Dispatched::Pending(Box::pin(async move {
                    tokio::select! {
                        biased;
                        out = fut => out,
                        () = watch.revoked() => Err(shared.signed_out()),
                    }
                }))
            }
            (dispatched, _) => dispatched,
        }
    }

    fn dispatch_now(
        self: &Arc<Self>,
        parts: RequestParts,
        method: Method,
        params: &Params<'_>,
    ) -> Dispatched {
        let rev = parts.revision;
        let page = |pages: &Pages, kind: &str| -> Dispatched {
            let cursor = match params
                .cursor
                .map(|c| required(Some(c), "cursor"))
                .transpose()
            {
                Ok(c) => c,
                Err(e) => return Dispatched::err(rev, e),
            };
            match decode_cursor(kind, cursor.as_deref(), pages.0.len()) {
                Ok(i) => Dispatched::Ready(Ok(pages.0[i].clone())),
                Err(e) => Dispatched::err(rev, e),
            }
        };
        match method {
            Method::Discover => {
                Dispatched::Ready(Ok(self.discover[parts.revision.index()].clone()))
            }
            Method::ToolsList
            | Method::PromptsList
            | Method::ResourcesList
            | Method::ResourceTemplatesList
            | Method::SkillsList => {
                let audience = self.registry.audience(&parts.meta.client_capabilities);
                #[cfg(feature = "auth")]
                let filtered = self.caller_lists(&parts.extensions);
                #[cfg(feature = "auth")]
                let lists = match &filtered {
                    Some(view) => self.lists_of(view, rev, audience),
                    None => self.lists(rev, audience),
                };
                #[cfg(not(feature = "auth"))]
                let lists = self.lists(rev, audience);
                match method {
                    Method::ToolsList => page(&lists.tools, "tools"),
                    Method::PromptsList => page(&lists.prompts, "prompts"),
                    Method::ResourcesList => page(&lists.resources, "resources"),
                    Method::SkillsList => page(&lists.skills, "skills"),
                    _ => page(&lists.templates, "templates"),
                }
            }
            Method::ToolsCall => self
                .call_tool(parts, params)
                .unwrap_or_else(|e| Dispatched::err(rev, e)),
            Method::PromptsGet => self
                .get_prompt(parts, params)
                .unwrap_or_else(|e| Dispatched::err(rev, e)),
            Method::ResourcesRead => self
                .read_resource(parts, params)
                .unwrap_or_else(|e| Dispatched::err(rev, e)),
            Method::Complete => self
                .complete(&parts, params)
                .unwrap_or_else(|e| Dispatched::err(rev, e)),
            Method::TasksGet | Method::TasksUpdate | Method::TasksCancel => self
                .task_method(parts, method, params)
                .unwrap_or_else(|e| Dispatched::err(rev, e)),
            Method::SkillsGet => self
                .get_skill(&parts, params)
                .unwrap_or_else(|e| Dispatched::err(rev, e)),
            Method::DirectoryRead => self
                .read_directory(&parts, params)
                .unwrap_or_else(|e| Dispatched::err(rev, e)),
            Method::Initialize
            | Method::Ping
            | Method::SetLevel
            | Method::ResourcesSubscribe
            | Method::ResourcesUnsubscribe
            | Method::Listen => Dispatched::err(
                rev,
                RpcError::internal(format!(
                    "{method:?} is answered by the transport, not the dispatcher"
                )),
            ),
        }
    }

    /// Runs a user function: on 2026-07-28 inside an MRTR round (its questions end the call
    /// with `input_required`), elsewhere as it is; then `finish` renders what it returned.
    ///
    /// A function that does not take the `Context` (`takes_context` false) can neither ask
    /// a question nor see a cancellation: it gets no round unless the request answers one
    /// (its `requestState` and `inputResponses` are still checked), and no cancellation token.
    // `arguments` rides beside `key` rather than in it: it is copied into the key only when
    // there is a round.
    #[allow(clippy::too_many_arguments)]
    fn run<T: Send + 'static>(
        self: &Arc<Self>,
        mut parts: RequestParts,
        key: RoundKey,
        arguments: Option<&RawValue>,
        params: &Params<'_>,
        takes_context: bool,
        start: impl FnOnce(Context) -> BoxFuture<T>,
        finish: fn(&Shared, Revision, T, Option<&Mrtr>) -> Result<Bytes, RpcError>,
    ) -> Result<Dispatched, RpcError> {
        let rev = parts.revision;
        let name = key.name.clone();
        let answers_a_round = params.request_state.is_some() || params.input_responses.is_some();
        let round = if rev.features().input_required && (takes_context || answers_a_round) {
            let mut key = key;
            // The arguments' text only for a round's key: a call without one never needs it.
            key.arguments = arguments_text(&parts, arguments);
            key.principal = self.caller_name(&parts.extensions);
            let round = Arc::new(Mrtr::start(
                self.sessions.signer(),
                key,
                params.request_state,
                params.input_responses,
            )?);
            parts.input = InputChannel::Mrtr(round.clone());
            Some(round)
        } else {
            None
        };
        parts.notifier = Some(self.notifier.clone());
        parts.states = Some(self.states.clone());
        let call = parts.call.clone();
        let (ctx, cancel) = if takes_context {
            let (ctx, cancel) = Context::new(parts, Some(name.clone()));
            (ctx, Some(cancel))
        } else {
            (Context::unobserved(parts, Some(name.clone())), None)
        };
        // User code runs from here on: argument decoding, then the function. A panic in it
        // fails this request only.
        let fut = match std::panic::catch_unwind(AssertUnwindSafe(|| start(ctx))) {
            Ok(fut) => fut,
            Err(panic) => return Err(panicked(&name, panic.as_ref())),
        };
        let shared = self.clone();
        Ok(Dispatched::Pending(Box::pin(async move {
            let guard = cancel.map(CancellationToken::drop_guard);
            let limit = shared.config.limits.request_timeout;
            let asked = || {
                round
                    .as_ref()
                    .and_then(|r| r.poll_pending())
                    .map(|RoundOutcome::InputRequired(asked)| asked)
            };
            let step = supervise(fut, limit, &name, asked)
                .await
                .map_err(|e| render::error(rev, e))?;
            match (step, &round) {
                (Step::Interrupted(asked), Some(round)) => {
                    // The function's future is dropped with the round: anything it spawned
                    // sees the cancellation.
                    drop(guard);
                    let state = round.next_state(
                        shared.sessions.signer(),
                        shared.config.request_state_lifetime,
                    );
                    Ok(Bytes::from(render::input_required(
                        &shared.env,
                        rev,
                        asked,
                        &state,
                    )))
                }
                (Step::Done(v), round) => {
                    guard.map(DropGuard::disarm);
                    if let Some(msg) = round.as_ref().and_then(|r| r.invalid()) {
                        return Err(render::error(
                            rev,
                            RpcError::invalid_params(format!("Invalid params: {msg}")),
                        ));
                    }
                    if let Some(e) = call.take_failure() {
                        return Err(render::error(rev, e));
                    }
                    finish(&shared, rev, v, round.as_deref()).map_err(|e| render::error(rev, e))
                }
                (Step::Interrupted(_), None) => {
                    Err(RpcError::internal("input was asked outside a round"))
                }
            }
        })))
    }

    /// Whether a request's function could send anything before its answer (progress, log
    /// messages, questions to the client): a tool that does not take the `Context` cannot, so
    /// its call needs no response stream. Any other request is taken to (an unknown tool
    /// too: its error is decided when it is dispatched).
    pub(crate) fn may_send(&self, method: &str, params: &Params<'_>) -> bool {
        if method != Method::ToolsCall.as_str() {
            return true;
        }
        params
            .name
            .and_then(raw_str)
            .and_then(|name| self.registry.tool(&name))
            .is_none_or(|entry| entry.def.context)
    }

    fn call_tool(
        self: &Arc<Self>,
        parts: RequestParts,
        params: &Params<'_>,
    ) -> Result<Dispatched, RpcError> {
        let rev = parts.revision;
        let name = required(params.name, "name")?;
        let entry = self.registry.tool(&name).ok_or_else(|| {
            RpcError::invalid_params(format!("Unknown tool: {name}"))
                .with_data(json!({ "name": name }))
        })?;
        if rev.features().object_only_schemas
            && let Some(reason) = &entry.legacy_unavailable
        {
            return Err(RpcError::invalid_params(format!(
                "Tool `{name}` is not available on revision {rev}: {reason}. It is served on 2026-07-28."
            )));
        }
        // A tool only views call (MCP Apps `visibility: ["app"]`) is not listed to a client
        // that renders no view, nor called by one.
        if !entry.for_everyone() && !apps::declared(&parts.meta.client_capabilities) {
            return Err(apps::missing_extension(&name));
        }
        let def = entry.def;
        self.authorize(
            &parts.extensions,
            format_args!("tool `{name}`"),
            def.scopes,
            def.principal,
        )?;
        if def.task_support == TaskSupport::Required && !rev.features().tasks {
            return Err(RpcError::invalid_params(format!(
                "Tool `{name}` runs only as a task (the tasks extension, {TASKS}), which revision {rev} does not have. It is served on 2026-07-28."
            )));
        }
        let mut missing: Option<serde_json::Value> = None;
        for need in &entry.requires {
            if !need.satisfied_by(&parts.meta.client_capabilities) {
                merge_capabilities(
                    missing.get_or_insert_with(|| json!({})),
                    need.as_capabilities(),
                );
            }
        }
        if let Some(required) = missing {
            return Err(render::error(rev, RpcError::missing_capability(required)));
        }
        let arguments = object_or_absent(params.arguments, "arguments")?;
        let key = RoundKey {
            method: "tools/call",
            name: Cow::Borrowed(def.name),
            arguments: None,
            principal: None,
        };
        // The tasks extension: the server decides, per request, and only for a request that
        // declared it. A tool that runs only as a task is refused to one that did not.
        if def.task_support != TaskSupport::Forbidden && rev.features().tasks {
            if tasks::declared(&parts.meta.client_capabilities) {
                return self.call_tool_as_task(parts, def, arguments, params, key);
            }
            if def.task_support == TaskSupport::Required {
                return Err(tasks::missing_extension());
            }
        }
        self.run(
            parts,
            key,
            arguments,
            params,
            def.context,
            |ctx| (def.call)(arguments, ctx),
            |shared, rev, result: CallToolResult, round| {
                if result.is_error()
                    && let Some(caps) = round.and_then(Mrtr::refused)
                {
                    return Err(RpcError::missing_capability(caps));
                }
                Ok(Bytes::from(render::result(
                    rev,
                    &shared.env,
                    Shape::CallTool,
                    Cache::None,
                    &result,
                )))
            },
        )
    }

    fn get_prompt(
        self: &Arc<Self>,
        parts: RequestParts,
        params: &Params<'_>,
    ) -> Result<Dispatched, RpcError> {
        let name = required(params.name, "name")?;
        let def = self.registry.prompt(&name).ok_or_else(|| {
            RpcError::invalid_params(format!("Unknown prompt: {name}"))
                .with_data(json!({ "name": name }))
        })?;
        self.authorize(
            &parts.extensions,
            format_args!("prompt `{name}`"),
            def.scopes,
            def.principal,
        )?;
        let arguments = object_or_absent(params.arguments, "arguments")?;
        let key = RoundKey {
            method: "prompts/get",
            name: Cow::Borrowed(def.name),
            arguments: None,
            principal: None,
        };
        self.run(
            parts,
            key,
            arguments,
            params,
            true,
            |ctx| (def.get)(arguments, ctx),
            |shared, rev, result, round| match result {
                Ok(r) => Ok(Bytes::from(render::result(
                    rev,
                    &shared.env,
                    Shape::GetPrompt,
                    Cache::None,
                    &r,
                ))),
                Err(e) => Err(refusal(round).unwrap_or(e)),
            },
        )
    }

    fn read_resource(
        self: &Arc<Self>,
        parts: RequestParts,
        params: &Params<'_>,
    ) -> Result<Dispatched, RpcError> {
        let uri = required(params.uri, "uri")?.into_owned();
        let (def, vars) = match self.registry.named(&uri) {
            Some(Named::SkillFile(file)) => return self.read_skill_file(&parts, &uri, file),
            Some(Named::View(view)) => return self.read_view(parts, params, view),
            Some(Named::Resource(def, vars)) => (def, vars),
            None => return Err(RpcError::resource_not_found(&uri)),
        };
        self.authorize(
            &parts.extensions,
            format_args!("resource `{uri}`"),
            def.scopes,
            def.principal,
        )?;
        let key = RoundKey {
            method: "resources/read",
            name: Cow::Owned(uri.clone()),
            arguments: None,
            principal: None,
        };
        self.run(
            parts,
            key,
            None,
            params,
            true,
            |ctx| (def.read)(ResourceRequest { uri, vars }, ctx),
            |shared, rev, result, round| match result {
                Ok(r) if r.contents.is_empty() => Err(RpcError::internal(
                    "The resource function returned no contents",
                )),
                Ok(r) => Ok(Bytes::from(render::result(
                    rev,
                    &shared.env,
                    Shape::ReadResource,
                    Cache::Cacheable,
                    &r,
                ))),
                Err(e) => Err(refusal(round).unwrap_or(e)),
            },
        )
    }

    /// `resources/read` of a view (MCP Apps): its HTML with `mimeType`
    /// `text/html;profile=mcp-app` and its `_meta.ui`, whoever asks (a host reads the view
    /// of a tool it is about to call; a client without the extension may look too).
    fn read_view(
        self: &Arc<Self>,
        parts: RequestParts,
        params: &Params<'_>,
        view: &ViewEntry,
    ) -> Result<Dispatched, RpcError> {
        let uri = view.def.uri;
        match view.def.html {
            ViewHtml::Embedded { text, .. } => {
                Ok(Dispatched::Ready(Ok(Bytes::from(render::result(
                    parts.revision,
                    &self.env,
                    Shape::ReadResource,
                    Cache::Cacheable,
                    &view_contents(view, text.to_owned()),
                )))))
            }
            ViewHtml::Function(make) => {
                let key = RoundKey {
                    method: "resources/read",
                    name: Cow::Borrowed(uri),
                    arguments: None,
                    principal: None,
                };
                self.run(
                    parts,
                    key,
                    None,
                    params,
                    true,
                    |ctx| {
                        let html = make(ctx);
                        Box::pin(async move { (uri, html.await) })
                    },
                    |shared, rev, (uri, html), round| match (html, shared.registry.view(uri)) {
                        (Ok(html), Some(view)) => Ok(Bytes::from(render::result(
                            rev,
                            &shared.env,
                            Shape::ReadResource,
                            Cache::Cacheable,
                            &view_contents(view, html),
                        ))),
                        (Ok(_), None) => Err(RpcError::resource_not_found(uri)),
                        (Err(e), _) => Err(refusal(round).unwrap_or(e)),
                    },
                )
            }
        }
    }

    fn complete(
        self: &Arc<Self>,
        parts: &RequestParts,
        params: &Params<'_>,
    ) -> Result<Dispatched, RpcError> {
        let rev = parts.revision;
        #[derive(Deserialize)]
        #[serde(tag = "type")]
        enum Ref {
            #[serde(rename = "ref/prompt")]
            Prompt { name: String },
            #[serde(rename = "ref/resource")]
            Resource { uri: String },
        }
        #[derive(Deserialize)]
        struct Argument {
            name: String,
            value: String,
        }
        #[derive(Deserialize, Default)]
        struct CompletionContext {
            #[serde(default)]
            arguments: Option<BTreeMap<String, String>>,
        }
        fn field<'de, T: Deserialize<'de>>(
            raw: Option<&'de RawValue>,
            name: &str,
            shape: &str,
        ) -> Result<T, RpcError> {
            let raw = raw.ok_or_else(|| {
                RpcError::invalid_params(format!(
                    "Invalid params: missing required parameter `{name}`"
                ))
            })?;
            // serde would read these structs from arrays, by position: only objects are.
            if !raw.get().starts_with('{') {
                return Err(RpcError::invalid_params(format!(
                    "Invalid params: `{name}` must be {shape}, not {}",
                    clip(raw.get())
                )));
            }
            serde_json::from_str(raw.get()).map_err(|e| {
                RpcError::invalid_params(format!("Invalid params: `{name}` must be {shape}: {e}"))
            })
        }
        let reference: Ref = field(
            params.reference,
            "ref",
            r#"{"type":"ref/prompt","name":…} or {"type":"ref/resource","uri":…}"#,
        )?;
        let argument: Argument = field(params.argument, "argument", r#"{"name":…,"value":…}"#)?;
        let context: CompletionContext = match params.context {
            Some(raw) if raw.get() != "null" => {
                field(Some(raw), "context", r#"{"arguments":{…}}"#)?
            }
            _ => CompletionContext::default(),
        };
        // A completion runs for whoever may use its prompt or template, as prompts/get and
        // resources/read check: the same 401 or 403, before anything of it runs.
        let completer: Option<CompleteFn> = match &reference {
            Ref::Prompt { name } => {
                let def = self
                    .registry
                    .prompt(name)
                    .ok_or_else(|| RpcError::invalid_params(format!("Unknown prompt: {name}")))?;
                self.authorize(
                    &parts.extensions,
                    format_args!("prompt `{name}`"),
                    def.scopes,
                    def.principal,
                )?;
                def.complete
            }
            Ref::Resource { uri } => {
                let def = match self
                    .registry
                    .templates
                    .iter()
                    .find(|t| t.def.uri == uri.as_str())
                {
                    Some(t) => t.def,
                    None => self.registry.static_resource(uri).ok_or_else(|| {
                        RpcError::invalid_params(format!("Unknown resource or template: {uri}"))
                    })?,
                };
                self.authorize(
                    &parts.extensions,
                    format_args!("resource `{uri}`"),
                    def.scopes,
                    def.principal,
                )?;
                def.complete
            }
        };
        let shared = self.clone();
        let render = move |c: Completion| {
            Bytes::from(render::result(
                rev,
                &shared.env,
                Shape::Plain,
                Cache::None,
                &json!({ "completion": c }),
            ))
        };
        let Some(complete) = completer else {
            return Ok(Dispatched::Ready(Ok(render(Completion::default()))));
        };
        #[allow(unused_mut)]
        let mut request = CompletionRequest::new(argument.name, argument.value)
            .with_context(context.arguments.unwrap_or_default());
        #[cfg(feature = "auth")]
        {
            request.principal = parts.extensions.get::<crate::auth::Principal>().cloned();
        }
        // Logged under the prompt's name or the template's URI.
        let label = match reference {
            Ref::Prompt { name } => name,
            Ref::Resource { uri } => uri,
        };
        let fut = std::panic::catch_unwind(AssertUnwindSafe(|| complete(request)))
            .map_err(|p| panicked(&label, p.as_ref()))?;
        let limit = self.config.limits.request_timeout;
        Ok(Dispatched::Pending(Box::pin(async move {
            let c = match supervise(fut, limit, &label, || None::<std::convert::Infallible>).await?
            {
                Step::Done(c) => c,
                Step::Interrupted(never) => match never {},
            };
            let c = if c.values.len() > Completion::MAX_VALUES {
                Completion::new(c.values)
            } else {
                c
            };
            Ok(render(c))
        })))
    }
}

/// A view's `resources/read` result: one text content with the view MIME type and its
/// `_meta.ui`.
fn view_contents(view: &ViewEntry, html: String) -> ReadResourceResult {
    let mut text = TextResourceContents::new(view.def.uri, html).with_mime_type(apps::MIME_TYPE);
    text.meta = view.meta.to_meta();
    ReadResourceResult::new(vec![ResourceContents::Text(text)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::meta::{RawMeta, RequestMeta};

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
