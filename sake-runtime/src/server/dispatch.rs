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

use super::context::{Context, RequestParts};
use super::{Pages, Shared, decode_cursor};
use crate::handler::{BoxFuture, CompleteFn, CompletionRequest, ResourceRequest};
use crate::protocol::Revision;
use crate::protocol::jsonrpc::{RpcError, code};
use crate::protocol::meta::{Params, clip};
use crate::protocol::methods::{Method, Needs};
use crate::protocol::render::{self, Cache, Shape};
use crate::protocol::types::Completion;

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

/// The error for a URI no resource or template matches; the rendering step gives it the
/// code of the request's revision.
pub(crate) fn resource_not_found(uri: &str) -> RpcError {
    RpcError::new(
        code::RESOURCE_NOT_FOUND_LEGACY,
        format!("Resource not found: {uri}"),
    )
    .with_data(json!({ "uri": uri }))
}

/// Reads a string from raw JSON, borrowing when it has no escapes.
pub(crate) fn raw_str(raw: &RawValue) -> Option<Cow<'_, str>> {
    if let Ok(s) = serde_json::from_str::<&str>(raw.get()) {
        return Some(Cow::Borrowed(s));
    }
    serde_json::from_str::<String>(raw.get())
        .ok()
        .map(Cow::Owned)
}

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
            Method::Discover => Dispatched::Ready(Ok(self.discover.clone())),
            Method::ToolsList => page(&self.lists(rev).tools, "tools"),
            Method::PromptsList => page(&self.lists(rev).prompts, "prompts"),
            Method::ResourcesList => page(&self.lists(rev).resources, "resources"),
            Method::ResourceTemplatesList => page(&self.lists(rev).templates, "templates"),
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
                .complete(rev, params)
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
        let arguments = object_or_absent(params.arguments, "arguments")?;
        let def = entry.def;
        let (ctx, cancel) = Context::new(parts, Some(Cow::Borrowed(def.name)));
        let fut = (def.call)(arguments, ctx);
        let shared = self.clone();
        Ok(Dispatched::Pending(Box::pin(async move {
            let guard = cancel.drop_guard();
            let result = fut.await;
            guard.disarm();
            Ok(Bytes::from(render::result(
                rev,
                &shared.env,
                Shape::CallTool,
                Cache::None,
                &result,
            )))
        })))
    }

    fn get_prompt(
        self: &Arc<Self>,
        parts: RequestParts,
        params: &Params<'_>,
    ) -> Result<Dispatched, RpcError> {
        let rev = parts.revision;
        let name = required(params.name, "name")?;
        let def = self.registry.prompt(&name).ok_or_else(|| {
            RpcError::invalid_params(format!("Unknown prompt: {name}"))
                .with_data(json!({ "name": name }))
        })?;
        let arguments = object_or_absent(params.arguments, "arguments")?;
        let (ctx, cancel) = Context::new(parts, Some(Cow::Borrowed(def.name)));
        let fut = (def.get)(arguments, ctx);
        let shared = self.clone();
        Ok(Dispatched::Pending(Box::pin(async move {
            let guard = cancel.drop_guard();
            let result = fut.await;
            guard.disarm();
            match result {
                Ok(r) => Ok(Bytes::from(render::result(
                    rev,
                    &shared.env,
                    Shape::GetPrompt,
                    Cache::None,
                    &r,
                ))),
                Err(e) => Err(render::error(rev, e)),
            }
        })))
    }

    fn read_resource(
        self: &Arc<Self>,
        parts: RequestParts,
        params: &Params<'_>,
    ) -> Result<Dispatched, RpcError> {
        let rev = parts.revision;
        let uri = required(params.uri, "uri")?.into_owned();
        let (def, vars) = match self.registry.static_resource(&uri) {
            Some(def) => (def, Vec::new()),
            None => self
                .registry
                .templates
                .iter()
                .find_map(|t| t.template.matches(&uri).map(|vars| (t.def, vars)))
                .ok_or_else(|| resource_not_found(&uri))?,
        };
        let (ctx, cancel) = Context::new(parts, Some(Cow::Owned(uri.clone())));
        let fut = (def.read)(ResourceRequest { uri, vars }, ctx);
        let shared = self.clone();
        Ok(Dispatched::Pending(Box::pin(async move {
            let guard = cancel.drop_guard();
            let result = fut.await;
            guard.disarm();
            match result {
                Ok(r) if r.contents.is_empty() => Err(render::error(
                    rev,
                    RpcError::internal("The resource function returned no contents"),
                )),
                Ok(r) => Ok(Bytes::from(render::result(
                    rev,
                    &shared.env,
                    Shape::ReadResource,
                    Cache::Cacheable,
                    &r,
                ))),
                Err(e) => Err(render::error(rev, e)),
            }
        })))
    }

    fn complete(
        self: &Arc<Self>,
        rev: Revision,
        params: &Params<'_>,
    ) -> Result<Dispatched, RpcError> {
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
        let completer: Option<CompleteFn> = match &reference {
            Ref::Prompt { name } => {
                self.registry
                    .prompt(name)
                    .ok_or_else(|| RpcError::invalid_params(format!("Unknown prompt: {name}")))?
                    .complete
            }
            Ref::Resource { uri } => match self
                .registry
                .templates
                .iter()
                .find(|t| t.def.uri == uri.as_str())
            {
                Some(t) => t.def.complete,
                None => {
                    self.registry
                        .static_resource(uri)
                        .ok_or_else(|| {
                            RpcError::invalid_params(format!("Unknown resource or template: {uri}"))
                        })?
                        .complete
                }
            },
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
        let fut = complete(CompletionRequest {
            argument: argument.name,
            value: argument.value,
            context: context.arguments.unwrap_or_default(),
        });
        Ok(Dispatched::Pending(Box::pin(async move {
            let c = fut.await;
            let c = if c.values.len() > Completion::MAX_VALUES {
                Completion::new(c.values)
            } else {
                c
            };
            Ok(render(c))
        })))
    }
}
