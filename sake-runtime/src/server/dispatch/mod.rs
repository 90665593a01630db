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

mod remote;

use super::Shared;
use super::catalog::{self, Pages, decode_cursor};
use super::invoker::{Call, Function, Prompt, Resource, Round, Running, Step, Tool, View};
use super::source::ListKind;
use crate::handler::context::RequestParts;
use crate::handler::input::{Mrtr, RoundKey, merge_capabilities};
use crate::handler::{
    BoxFuture, CompleteFn, CompletionRequest, ResourceRequest, TaskSupport, boxed_in_place,
};
use crate::protocol::Revision;
use crate::protocol::apps;
use crate::protocol::jsonrpc::RpcError;
use crate::protocol::jsonrpc::clip;
use crate::protocol::meta::Params;
use crate::protocol::methods::{Method, Needs};
use crate::protocol::render::{self, Cache, Shape};
use crate::protocol::tasks::{self, EXTENSION as TASKS};
use crate::protocol::types::{
    CallToolResult, Completion, GetPromptResult, ReadResourceResult, ResourceContents,
    TextResourceContents,
};
use crate::registry::{Named, ViewEntry, ViewHtml};

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

    /// The answer as a future, ready or not.
    fn into_future(self) -> BoxFuture<Result<Bytes, RpcError>> {
        match self {
            Dispatched::Ready(out) => Box::pin(std::future::ready(out)),
            Dispatched::Pending(fut) => fut,
        }
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
            Needs::Skills => {
                !self.catalog.registry.skills.is_empty() || !self.catalog.sources.is_empty()
            }
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
        let watch = self.callers.watch_caller(&parts.extensions);
        // An operation that calls no function passes its layers here (a function's call, in
        // the invoker); without layers, nothing more happens.
        let layered = match self.invoker.stacks() {
            Some(stacks) => super::operations::admit(self, stacks, &parts, method, params),
            None => None,
        };
        let dispatched = self.dispatch_now(parts, method, params);
        let dispatched = match layered {
            Some(layered) => Dispatched::Pending(layered.around(self, dispatched.into_future())),
            None => dispatched,
        };
        match (dispatched, watch) {
            (Dispatched::Pending(fut), Some(watch)) => {
                let shared = self.clone();
                Dispatched::Pending(Box::pin(async move {
                    tokio::select! {
                        biased;
                        out = fut => out,
                        () = watch.revoked() => Err(shared.callers.signed_out()),
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
                Dispatched::Ready(Ok(self.catalog.discover[parts.revision.index()].clone()))
            }
            Method::SkillsList | Method::SkillsGet | Method::DirectoryRead
                if self.catalog.registry.skills.is_empty() && !self.catalog.sources.is_empty() =>
            {
                self.forward_skills(&parts, method, params)
                    .unwrap_or_else(|e| Dispatched::err(rev, e))
            }
            Method::ToolsList
            | Method::PromptsList
            | Method::ResourcesList
            | Method::ResourceTemplatesList
            | Method::SkillsList => {
                let audience = self
                    .catalog
                    .registry
                    .audience(&parts.meta.client_capabilities);
                #[cfg(feature = "auth")]
                let filtered = self.catalog.caller_lists(&parts.extensions);
                #[cfg(feature = "auth")]
                let lists = match &filtered {
                    Some(view) => self.catalog.lists_of(view, rev, audience),
                    None => self.catalog.lists(rev, audience),
                };
                #[cfg(not(feature = "auth"))]
                let lists = self.catalog.lists(rev, audience);
                if !self.catalog.sources.is_empty() && method != Method::SkillsList {
                    #[cfg(feature = "auth")]
                    let view = filtered.as_deref();
                    #[cfg(not(feature = "auth"))]
                    let view = None;
                    return self.list_with_sources(&parts, method, params, view, audience);
                }
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
                .catalog
                .get_skill(&parts, params)
                .unwrap_or_else(|e| Dispatched::err(rev, e)),
            Method::DirectoryRead => self
                .catalog
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

    /// Runs a user function through the invoker: on 2026-07-28 inside an MRTR round (its
    /// questions end the call with `input_required`), elsewhere as it is; then `finish`
    /// renders what it returned.
    ///
    /// A function that does not take the `Context` can neither ask a question nor see a
    /// cancellation: it gets no round unless the request answers one (its `requestState` and
    /// `inputResponses` are still checked), and no cancellation token.
    // `arguments` rides beside `key` rather than in it: it is copied into the key only when
    // there is a round.
    fn run<F: Function>(
        self: &Arc<Self>,
        parts: RequestParts,
        function: F,
        (key, arguments): (RoundKey, Option<&RawValue>),
        params: &Params<'_>,
        // Renders what the function returned, in its round if it had one.
        finish: impl FnOnce(&Shared, Revision, F::Output, Option<&Mrtr>) -> Result<Bytes, RpcError>
        + Send
        + 'static,
    ) -> Result<Dispatched, RpcError> {
        let rev = parts.revision;
        let running = self.invoker.start(Call {
            parts,
            function,
            round: Round::OfRequest {
                key,
                arguments,
                state: params.request_state,
                responses: params.input_responses,
            },
        })?;
        let shared = self.clone();
        Ok(Dispatched::Pending(boxed_in_place(move || {
            finish_running(shared, rev, running, finish)
        })))
    }

    /// The `input_required` answer to a round whose function asked the client `asked`: the
    /// questions, and the signed state of every answer so far.
    pub(super) fn input_required(
        &self,
        rev: Revision,
        round: &Mrtr,
        asked: Vec<(String, serde_json::Value)>,
    ) -> Bytes {
        let state = round.next_state(self.sessions.signer(), self.config.request_state_lifetime);
        Bytes::from(render::input_required(&self.env, rev, asked, &state))
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
            .and_then(|name| self.catalog.registry.tool(&name))
            .is_none_or(|entry| entry.def.context)
    }

    fn call_tool(
        self: &Arc<Self>,
        parts: RequestParts,
        params: &Params<'_>,
    ) -> Result<Dispatched, RpcError> {
        let rev = parts.revision;
        let name = required(params.name, "name")?;
        let Some(entry) = self.catalog.registry.tool(&name) else {
            if let Some(source) = self.catalog.source_of(ListKind::Tools, &name) {
                return self.call_remote_tool(parts, params, source, name.into_owned());
            }
            return Err(RpcError::invalid_params(format!("Unknown tool: {name}"))
                .with_data(json!({ "name": name })));
        };
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
        self.callers.authorize(
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
        // Composition (compose/transform.rs): fixed and default arguments, put in before the
        // function decodes them (and before the layers and a task see them).
        let edited = entry
            .edit
            .as_ref()
            .map(|e| e.apply(arguments))
            .transpose()?;
        let arguments = edited.as_deref().or(arguments);
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
            Tool { def, arguments },
            (key, arguments),
            params,
            finish_tool,
        )
    }

    fn get_prompt(
        self: &Arc<Self>,
        parts: RequestParts,
        params: &Params<'_>,
    ) -> Result<Dispatched, RpcError> {
        let name = required(params.name, "name")?;
        if self.catalog.registry.prompt(&name).is_none()
            && let Some(source) = self.catalog.source_of(ListKind::Prompts, &name)
        {
            return self.get_remote_prompt(parts, params, source, name.into_owned());
        }
        let def = self
            .catalog
            .denoted::<catalog::Prompt>(&parts.extensions, &name)?;
        let arguments = object_or_absent(params.arguments, "arguments")?;
        let key = RoundKey {
            method: "prompts/get",
            name: Cow::Borrowed(def.name),
            arguments: None,
            principal: None,
        };
        self.run(
            parts,
            Prompt { def, arguments },
            (key, arguments),
            params,
            finish_prompt,
        )
    }

    fn read_resource(
        self: &Arc<Self>,
        parts: RequestParts,
        params: &Params<'_>,
    ) -> Result<Dispatched, RpcError> {
        let uri = required(params.uri, "uri")?.into_owned();
        if self.catalog.registry.named(&uri).is_none()
            && let Some(source) = self.catalog.source_of(ListKind::Resources, &uri)
        {
            return self.read_remote_resource(parts, params, source, uri);
        }
        let (def, vars) = match self
            .catalog
            .denoted::<catalog::Resource>(&parts.extensions, &uri)?
        {
            Named::SkillFile(file) => return self.catalog.read_skill_file(&parts, &uri, file),
            Named::View(view) => return self.read_view(parts, params, view),
            Named::Resource(def, vars) => (def, vars),
        };
        let key = RoundKey {
            method: "resources/read",
            name: Cow::Owned(uri.clone()),
            arguments: None,
            principal: None,
        };
        self.run(
            parts,
            Resource {
                def,
                request: ResourceRequest { uri, vars },
            },
            (key, None),
            params,
            finish_resource,
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
                    View { uri, html: make },
                    (key, None),
                    params,
                    |shared, rev, (uri, html), round| match (
                        html,
                        shared.catalog.registry.view(uri),
                    ) {
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
        let remote = match &reference {
            Ref::Prompt { name } if self.catalog.registry.prompt(name).is_none() => {
                self.catalog.source_of(ListKind::Prompts, name)
            }
            Ref::Resource { uri }
                if self.catalog.registry.static_resource(uri).is_none()
                    && !self
                        .catalog
                        .registry
                        .templates
                        .iter()
                        .any(|t| t.def.uri == uri.as_str()) =>
            {
                self.catalog.source_of(ListKind::Templates, uri)
            }
            _ => None,
        };
        if let Some(source) = remote {
            return self.complete_remote(rev, params, source);
        }
        let completer: Option<CompleteFn> = match &reference {
            Ref::Prompt { name } => {
                let def =
                    self.catalog.registry.prompt(name).ok_or_else(|| {
                        RpcError::invalid_params(format!("Unknown prompt: {name}"))
                    })?;
                self.callers.authorize(
                    &parts.extensions,
                    format_args!("prompt `{name}`"),
                    def.scopes,
                    def.principal,
                )?;
                def.complete
            }
            Ref::Resource { uri } => {
                let def = match self
                    .catalog
                    .registry
                    .templates
                    .iter()
                    .find(|t| t.def.uri == uri.as_str())
                {
                    Some(t) => t.def,
                    None => self.catalog.registry.static_resource(uri).ok_or_else(|| {
                        RpcError::invalid_params(format!("Unknown resource or template: {uri}"))
                    })?,
                };
                self.callers.authorize(
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
        let mut running = self.invoker.complete(complete, request, label)?;
        let limit = self.config.limits.request_timeout;
        Ok(Dispatched::Pending(Box::pin(async move {
            let c = match running.within(limit).await? {
                Step::Returned(c) => c,
                // A completion has no round to ask in.
                Step::Asked(_) => {
                    return Err(RpcError::internal("input was asked outside a round"));
                }
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

/// Renders a tool's result (the program's or a source's).
fn finish_tool(
    shared: &Shared,
    rev: Revision,
    result: CallToolResult,
    round: Option<&Mrtr>,
) -> Result<Bytes, RpcError> {
    if result.is_error()
        && let Some(caps) = round.and_then(Mrtr::refused)
    {
        return Err(RpcError::missing_capability(caps));
    }
    Ok(Bytes::from(render::tool_result(
        rev,
        &shared.env,
        Cache::None,
        &result,
    )))
}

/// Renders a prompt's result.
fn finish_prompt(
    shared: &Shared,
    rev: Revision,
    result: Result<GetPromptResult, RpcError>,
    round: Option<&Mrtr>,
) -> Result<Bytes, RpcError> {
    match result {
        Ok(r) => Ok(Bytes::from(render::result(
            rev,
            &shared.env,
            Shape::GetPrompt,
            Cache::None,
            &r,
        ))),
        Err(e) => Err(refusal(round).unwrap_or(e)),
    }
}

/// Renders a resource's contents.
fn finish_resource(
    shared: &Shared,
    rev: Revision,
    result: Result<ReadResourceResult, RpcError>,
    round: Option<&Mrtr>,
) -> Result<Bytes, RpcError> {
    match result {
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
    }
}

/// A view's `resources/read` result: one text content with the view MIME type and its
/// `_meta.ui`.
fn view_contents(view: &ViewEntry, html: String) -> ReadResourceResult {
    let mut text = TextResourceContents::new(view.def.uri, html).with_mime_type(apps::MIME_TYPE);
    text.meta = view.meta.to_meta();
    ReadResourceResult::new(vec![ResourceContents::Text(text)])
}

/// What [`Shared::run`]'s request waits for: the function's next step within the request
/// timeout, rendered by `finish` (or the round's `input_required`).
async fn finish_running<T: super::invoker::Output>(
    shared: Arc<Shared>,
    rev: Revision,
    mut running: Running<T>,
    finish: impl FnOnce(&Shared, Revision, T, Option<&Mrtr>) -> Result<Bytes, RpcError>,
) -> Result<Bytes, RpcError> {
    let limit = shared.config.limits.request_timeout;
    let step = running
        .within(limit)
        .await
        .map_err(|e| render::error(rev, e))?;
    let round = running.round().cloned();
    match (step, round) {
        (Step::Asked(asked), Some(round)) => {
            // The function's future is dropped with `running`: anything it spawned
            // sees the cancellation.
            Ok(shared.input_required(rev, &round, asked))
        }
        (Step::Returned(v), round) => {
            running.disarm();
            if let Some(e) = running.failure() {
                return Err(render::error(rev, e));
            }
            finish(&shared, rev, v, round.as_deref()).map_err(|e| render::error(rev, e))
        }
        (Step::Asked(_), None) => Err(RpcError::internal("input was asked outside a round")),
    }
}
