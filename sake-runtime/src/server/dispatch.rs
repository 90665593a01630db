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

use super::Shared;
use super::catalog::{self, Pages, decode_cursor};
use super::invoker::{Call, Function, Prompt, Resource, Round, Step, Tool, View};
use super::source::{ListKind, Remote, RemoteTool};
use crate::handler::context::{Context, RequestParts};
use crate::handler::input::{Mrtr, RoundKey, merge_capabilities};
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
        let mut running = self.invoker.start(Call {
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
        Ok(Dispatched::Pending(Box::pin(async move {
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
                (Step::Asked(_), None) => {
                    Err(RpcError::internal("input was asked outside a round"))
                }
            }
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
                let mut forwarded = serde_json::Map::new();
                forwarded.insert("name".into(), json!(name));
                // A transform's fixed and default arguments, put in before the layers see
                // them, as for the program's own tools.
                let arguments = object_or_absent(params.arguments, "arguments")?;
                let edited = source.edit(&name).map(|e| e.apply(arguments)).transpose()?;
                let round_arguments = edited.as_deref().or(arguments);
                let arguments = match edited.clone() {
                    Some(edited) => Some(edited),
                    None => arguments.map(ToOwned::to_owned),
                };
                let key = RoundKey {
                    method: "tools/call",
                    name: Cow::Owned(name.clone().into_owned()),
                    arguments: None,
                    principal: None,
                };
                // A task the upstream makes of the call is relayed (server/tasks.rs).
                let relay = self.relay_for(&parts, &source);
                return self.run(
                    parts,
                    Remote::<RemoteTool>::new(
                        source,
                        "tools/call",
                        name.into_owned(),
                        forwarded,
                        arguments,
                    ),
                    (key, round_arguments),
                    params,
                    move |shared: &Shared, rev, out, round: Option<&Mrtr>| match (out, relay) {
                        (RemoteTool::Result(r), _) => finish_tool(shared, rev, r, round),
                        (RemoteTool::Task(task), Some(relay)) => relay.created(shared, rev, task),
                        (RemoteTool::Task(_), None) => Err(RpcError::internal(
                            "Internal error: the upstream server answered with a task, which this call did not offer",
                        )),
                    },
                );
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
            let mut forwarded = serde_json::Map::new();
            forwarded.insert("name".into(), json!(name));
            let arguments = object_or_absent(params.arguments, "arguments")?;
            let key = RoundKey {
                method: "prompts/get",
                name: Cow::Owned(name.clone().into_owned()),
                arguments: None,
                principal: None,
            };
            return self.run(
                parts,
                Remote::<Result<GetPromptResult, RpcError>>::new(
                    source,
                    "prompts/get",
                    name.into_owned(),
                    forwarded,
                    arguments.map(ToOwned::to_owned),
                ),
                (key, arguments),
                params,
                finish_prompt,
            );
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
            let mut forwarded = serde_json::Map::new();
            forwarded.insert("uri".into(), json!(uri));
            let key = RoundKey {
                method: "resources/read",
                name: Cow::Owned(uri.clone()),
                arguments: None,
                principal: None,
            };
            return self.run(
                parts,
                Remote::<Result<ReadResourceResult, RpcError>>::new(
                    source,
                    "resources/read",
                    uri,
                    forwarded,
                    None,
                ),
                (key, None),
                params,
                finish_resource,
            );
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
            let mut forwarded = serde_json::Map::new();
            for (field, raw) in [
                ("ref", params.reference),
                ("argument", params.argument),
                ("context", params.context),
            ] {
                if let Some(raw) = raw {
                    forwarded.insert(field.into(), raw_value(raw)?);
                }
            }
            let shared = self.clone();
            let limit = self.config.limits.request_timeout;
            return Ok(Dispatched::Pending(Box::pin(async move {
                let forwarded =
                    source.forward("completion/complete", forwarded, Context::detached());
                let result = tokio::time::timeout(limit, forwarded)
                    .await
                    .map_err(|_| super::invoker::timed_out("completion/complete", limit))??;
                Ok(Bytes::from(render::result(
                    rev,
                    &shared.env,
                    Shape::Plain,
                    Cache::None,
                    &result,
                )))
            })));
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
    Ok(Bytes::from(render::result(
        rev,
        &shared.env,
        Shape::CallTool,
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

/// A raw JSON value of a request, parsed to be forwarded.
fn raw_value(raw: &RawValue) -> Result<serde_json::Value, RpcError> {
    serde_json::from_str(raw.get())
        .map_err(|e| RpcError::invalid_params(format!("Invalid params: {e}")))
}

impl Shared {
    /// The skills extension's requests on a server whose skills are its sources' (a gateway):
    /// `skills/list` of its source (of every one, when it has several: `merged_skills`),
    /// `skills/get` and `resources/directory/read` of the source that serves the URI,
    /// forwarded as they are.
    fn forward_skills(
        self: &Arc<Self>,
        parts: &RequestParts,
        method: Method,
        params: &Params<'_>,
    ) -> Result<Dispatched, RpcError> {
        let rev = parts.revision;
        if method == Method::SkillsList && self.catalog.sources.len() > 1 {
            let cursor = params
                .cursor
                .map(|c| required(Some(c), "cursor"))
                .transpose()?
                .map(Cow::into_owned);
            return Ok(self.merged_skills(rev, cursor));
        }
        let mut forwarded = serde_json::Map::new();
        for (field, raw) in [("uri", params.uri), ("cursor", params.cursor)] {
            if let Some(raw) = raw {
                forwarded.insert(field.into(), raw_value(raw)?);
            }
        }
        let source = match method {
            Method::SkillsList => self.catalog.sources.first().cloned(),
            _ => {
                let uri = required(params.uri, "uri")?;
                self.catalog.source_of(ListKind::Resources, &uri)
            }
        };
        let Some(source) = source else {
            let uri = required(params.uri, "uri")?;
            return Err(
                RpcError::invalid_params(format!("No skill is served at {uri}"))
                    .with_data(json!({ "uri": uri })),
            );
        };
        let shared = self.clone();
        let limit = self.config.limits.request_timeout;
        let name = method.as_str();
        Ok(Dispatched::Pending(Box::pin(async move {
            let forwarded = source.forward(name, forwarded, Context::detached());
            let mut result = tokio::time::timeout(limit, forwarded)
                .await
                .map_err(|_| super::invoker::timed_out(name, limit))
                .and_then(|r| r)
                .map_err(|e| render::error(rev, e))?;
            // Rendered again for this client: the upstream's own envelope goes.
            if let serde_json::Value::Object(o) = &mut result {
                o.remove("ttlMs");
                o.remove("cacheScope");
            }
            Ok(Bytes::from(render::result(
                rev,
                &shared.env,
                Shape::Plain,
                Cache::Cacheable,
                &result,
            )))
        })))
    }

    /// `skills/list` of a server with several sources: every source's skills (each followed
    /// through its pages, at most [`MAX_SKILL_PAGES`] of them; a source that cannot list is
    /// left out, logged), under their prefixes, paged as a list of the server's own.
    fn merged_skills(self: &Arc<Self>, rev: Revision, cursor: Option<String>) -> Dispatched {
        let shared = self.clone();
        Dispatched::Pending(Box::pin(async move {
            let limit = shared.config.limits.request_timeout;
            let all = futures_util::future::join_all(
                shared
                    .catalog
                    .sources
                    .iter()
                    .map(|source| all_skills(source.clone(), limit)),
            )
            .await;
            let mut items = Vec::new();
            for (source, got) in shared.catalog.sources.iter().zip(all) {
                match got {
                    Ok(skills) => items.extend(skills),
                    Err(e) => tracing::debug!(
                        source = source.label(),
                        "no skills from this upstream: {}",
                        e.message
                    ),
                }
            }
            let mut env = shared.env.clone();
            env.cache.scope = crate::protocol::render::CacheScope::Private;
            let pages = catalog::paginate(
                rev,
                &env,
                shared.config.page_size,
                Cache::Cacheable,
                "skills",
                "skills",
                items,
            );
            let i = decode_cursor("skills", cursor.as_deref(), pages.0.len())
                .map_err(|e| render::error(rev, e))?;
            Ok(pages.0[i].clone())
        }))
    }

    /// A list of a server with sources: the registry's items the caller sees, then each
    /// source's (fetched or cached; a source that cannot list is left out, logged), rendered
    /// for the request's revision and paged as the registry's alone would be.
    fn list_with_sources(
        self: &Arc<Self>,
        parts: &RequestParts,
        method: Method,
        params: &Params<'_>,
        view: Option<&catalog::Lists>,
        audience: crate::registry::Audience,
    ) -> Dispatched {
        let rev = parts.revision;
        let (kind, pages_kind, key) = match method {
            Method::ToolsList => (ListKind::Tools, "tools", "tools"),
            Method::PromptsList => (ListKind::Prompts, "prompts", "prompts"),
            Method::ResourcesList => (ListKind::Resources, "resources", "resources"),
            _ => (ListKind::Templates, "templates", "resourceTemplates"),
        };
        let cursor = match params
            .cursor
            .map(|c| required(Some(c), "cursor"))
            .transpose()
        {
            Ok(c) => c.map(Cow::into_owned),
            Err(e) => return Dispatched::err(rev, e),
        };
        let shown = |scopes: &[&str]| view.is_none_or(|v| self.catalog.shown(v, scopes));
        // Whether the caller renders views (the audience says so only when the registry has
        // views of its own).
        let apps = apps::declared(&parts.meta.client_capabilities);
        let local = match kind {
            ListKind::Tools => self.catalog.registry.tools_visible(rev, &shown, audience),
            ListKind::Prompts => self.catalog.registry.prompts_visible(rev, &shown),
            ListKind::Resources => self
                .catalog
                .registry
                .resources_visible(rev, &shown, audience),
            ListKind::Templates => self.catalog.registry.templates_visible(rev, &shown),
        };
        let shared = self.clone();
        Dispatched::Pending(Box::pin(async move {
            let mut items = local;
            // Every source at once: a slow one delays the list by its own time only.
            let all = futures_util::future::join_all(
                shared
                    .catalog
                    .sources
                    .iter()
                    .map(|source| source.list(kind)),
            )
            .await;
            let sources = &shared.catalog.sources;
            for (i, (source, listed)) in sources.iter().zip(all).enumerate() {
                // Served by this source: a name or URI two of them have is listed as the
                // source a request for it goes to (`Catalog::source_index`), and in tool search
                // only the pinned tools are listed (the search finds the others).
                let ours = |key: &str| shared.catalog.source_index(kind, key) == Some(i);
                let listed = match listed {
                    Ok(listed) => listed,
                    Err(e) => {
                        tracing::warn!(
                            source = source.label(),
                            "left out of the list: its upstream did not list: {}",
                            e.message
                        );
                        continue;
                    }
                };
                let object_only = rev.features().object_only_schemas;
                match kind {
                    ListKind::Tools => items.extend(
                        listed
                            .tools
                            .iter()
                            .filter(|t| {
                                !object_only
                                    || t.input_schema.get("type").and_then(|t| t.as_str())
                                        == Some("object")
                            })
                            .filter(|t| source.listed(&t.name) && ours(&t.name))
                            .filter_map(|t| remote_tool(t, apps, rev)),
                    ),
                    ListKind::Prompts => items.extend(
                        listed
                            .prompts
                            .iter()
                            .filter(|p| ours(&p.name))
                            .map(|p| render::prompt(p, rev)),
                    ),
                    ListKind::Resources => items.extend(
                        listed
                            .resources
                            .iter()
                            .filter(|r| ours(&r.uri))
                            // A view is listed to the clients that render views.
                            .filter(|r| apps || r.mime_type.as_deref() != Some(apps::MIME_TYPE))
                            .map(|r| render::resource(r, rev)),
                    ),
                    ListKind::Templates => {
                        items.extend(listed.templates.iter().map(|t| render::template(t, rev)));
                    }
                }
            }
            // What the caller sees of the sources depends on it (MCP Apps) and on when it
            // asks: a cache keeps it for this caller only.
            let mut env = shared.env.clone();
            env.cache.scope = crate::protocol::render::CacheScope::Private;
            let pages = catalog::paginate(
                rev,
                &env,
                shared.config.page_size,
                Cache::Cacheable,
                pages_kind,
                key,
                items,
            );
            let i = decode_cursor(pages_kind, cursor.as_deref(), pages.0.len())
                .map_err(|e| render::error(rev, e))?;
            Ok(pages.0[i].clone())
        }))
    }
}

/// A source's tool as `tools/list` shows it to a client (`apps`: one that renders views):
/// with its `_meta.ui` only for such a client, and not at all to another when only views may
/// call it — as the program's own tools are shown.
fn remote_tool(
    tool: &crate::protocol::types::Tool,
    apps: bool,
    rev: Revision,
) -> Option<serde_json::Value> {
    let ui = apps::ToolUi::of(tool);
    if apps || ui.is_none() {
        return Some(render::tool(tool, rev));
    }
    if ui.is_some_and(|ui| !ui.visible_to_model()) {
        return None;
    }
    let mut tool = tool.clone();
    if let Some(meta) = tool.meta.as_mut() {
        meta.remove("ui");
        meta.remove(apps::RESOURCE_URI_META_KEY);
        if meta.is_empty() {
            tool.meta = None;
        }
    }
    Some(render::tool(&tool, rev))
}

/// The most pages of one source's `skills/list` a gateway with several sources follows.
const MAX_SKILL_PAGES: usize = 100;

/// Every skill entry of one source, its pages followed (bounded by [`MAX_SKILL_PAGES`] and, per
/// page, by `limit`).
async fn all_skills(
    source: Arc<dyn super::source::Source>,
    limit: std::time::Duration,
) -> Result<Vec<serde_json::Value>, RpcError> {
    let mut skills = Vec::new();
    let mut cursor: Option<serde_json::Value> = None;
    for _ in 0..MAX_SKILL_PAGES {
        let mut params = serde_json::Map::new();
        if let Some(c) = cursor.take() {
            params.insert("cursor".into(), c);
        }
        let page = tokio::time::timeout(
            limit,
            source.forward("skills/list", params, Context::detached()),
        )
        .await
        .map_err(|_| super::invoker::timed_out("skills/list", limit))??;
        if let Some(serde_json::Value::Array(entries)) = page.get("skills") {
            skills.extend(entries.iter().cloned());
        }
        match page.get("nextCursor") {
            Some(next @ serde_json::Value::String(_)) => cursor = Some(next.clone()),
            _ => return Ok(skills),
        }
    }
    Err(RpcError::internal(format!(
        "its skills/list has more than {MAX_SKILL_PAGES} pages"
    )))
}

/// A view's `resources/read` result: one text content with the view MIME type and its
/// `_meta.ui`.
fn view_contents(view: &ViewEntry, html: String) -> ReadResourceResult {
    let mut text = TextResourceContents::new(view.def.uri, html).with_mime_type(apps::MIME_TYPE);
    text.meta = view.meta.to_meta();
    ReadResourceResult::new(vec![ResourceContents::Text(text)])
}
