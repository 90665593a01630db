//! The operations that call no user function — lists, completions, requests about tasks,
//! skills and their files, a view's embedded HTML, a session's resource subscriptions —
//! through the layers (docs/middleware.md).
//!
//! The dispatcher (the session door, for subscriptions) asks [`admit`] before it serves such
//! a request, only when the server has layers: the request the layers see is made from the request's parts, the dispatcher's
//! answer becomes the innermost step ([`Layered::around`]). What the dispatcher answers at
//! once (a list's page) is known before the layers run, but sent only if they let it through;
//! what runs (a completion, `tasks/cancel`) runs only then. With no layer, nothing here runs.

use std::borrow::Cow;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::FutureExt as _;
use serde::Deserialize;

use super::invoker::{Stacks, panicked, timed_out};
use super::{PeerAddr, Shared};
use crate::handler::BoxFuture;
use crate::handler::context::{Context, RequestParts};
use crate::middleware::{self, Kind, McpRequest, McpResponse, Outcome, Reply, Stack};
use crate::protocol::Revision;
use crate::protocol::jsonrpc::{RpcError, raw_string as raw_str};
use crate::protocol::meta::Params;
use crate::protocol::methods::Method;
use crate::protocol::render;
use crate::registry::ViewHtml;

/// An operation its layers are to pass: the request they see, waiting for the dispatcher's
/// answer.
pub(crate) struct Layered {
    stack: Stack,
    req: McpRequest,
    rev: Revision,
}

/// What a request that calls no function is, for the layers: its kind, its name, the
/// function (`layer_for`'s name, or the method) and its stack; `None` when it is no such
/// operation (a function's call passes its layers in the invoker) or no layer applies.
fn operation(
    shared: &Shared,
    stacks: &Stacks,
    method: Method,
    params: &Params<'_>,
) -> Option<(Kind, String, &'static str, Stack)> {
    let text = |raw: Option<&serde_json::value::RawValue>| {
        raw.and_then(raw_str)
            .map(Cow::into_owned)
            .unwrap_or_default()
    };
    let op = |kind: Kind, name: String| {
        let stack = stacks.operation(kind)?.clone();
        Some((kind, name, method.as_str(), stack))
    };
    match method {
        Method::ToolsList => op(Kind::List, "tools".into()),
        Method::PromptsList => op(Kind::List, "prompts".into()),
        Method::ResourcesList => op(Kind::List, "resources".into()),
        Method::ResourceTemplatesList => op(Kind::List, "resources/templates".into()),
        Method::SkillsList => op(Kind::List, "skills".into()),
        Method::Complete => {
            #[derive(Deserialize)]
            struct Ref {
                name: Option<String>,
                uri: Option<String>,
            }
            let reference = params
                .reference
                .and_then(|raw| serde_json::from_str::<Ref>(raw.get()).ok());
            let name = reference.and_then(|r| r.name.or(r.uri)).unwrap_or_default();
            op(Kind::Completion, name)
        }
        Method::TasksGet | Method::TasksUpdate | Method::TasksCancel => {
            op(Kind::Task, text(params.task_id))
        }
        Method::SkillsGet | Method::DirectoryRead => op(Kind::Skill, text(params.uri)),
        Method::ResourcesSubscribe | Method::ResourcesUnsubscribe => {
            op(Kind::Subscription, text(params.uri))
        }
        Method::ResourcesRead => {
            let uri = text(params.uri);
            if shared.catalog.registry.skills.file(&uri).is_some() {
                return op(Kind::Skill, uri);
            }
            // A view whose HTML is embedded is answered without calling anything: its layers
            // (a view's, by its URI) pass here.
            let view = shared.catalog.registry.view(&uri)?;
            if !matches!(view.def.html, ViewHtml::Embedded { .. }) {
                return None;
            }
            let declared = view.def.uri;
            let stack = stacks.get(Kind::View, declared)?;
            Some((Kind::View, uri, declared, stack))
        }
        _ => None,
    }
}

/// The request the layers see for an operation that calls no function, when layers apply
/// to it.
pub(crate) fn admit(
    shared: &Shared,
    stacks: &Stacks,
    parts: &RequestParts,
    method: Method,
    params: &Params<'_>,
) -> Option<Layered> {
    let (kind, name, function, stack) = operation(shared, stacks, method, params)?;
    let extensions = &parts.extensions;
    let principal = shared.callers.caller_name(extensions);
    let client_addr = extensions.get::<PeerAddr>().map(|p| p.ip);
    // What the layers read of the request (its revision, client, extensions): the function
    // it would be is none.
    let mut seen = RequestParts::new(parts.revision, parts.meta.clone());
    seen.extensions = extensions.clone();
    seen.transport = parts.transport;
    let ctx = Context::unobserved(seen, Some(Cow::Owned(name.clone())));
    let arguments = match kind {
        Kind::Completion => params
            .argument
            .map(|a| Bytes::copy_from_slice(a.get().as_bytes())),
        _ => None,
    };
    let task_id = (kind == Kind::Task).then(|| name.clone());
    let mut req = McpRequest::new(
        kind,
        Cow::Owned(name),
        function,
        arguments,
        principal,
        client_addr,
        ctx,
        None,
    );
    req.method = method.as_str();
    req.task_id = task_id;
    req.transport = parts.transport;
    #[cfg(feature = "auth")]
    {
        req.auth = shared.callers.auth();
    }
    req.client_network = client_addr.map(|ip| shared.admission.client_network(ip));
    Some(Layered {
        stack,
        req,
        rev: parts.revision,
    })
}

impl Layered {
    /// The dispatcher's answer, through the layers: sent (or run) when they let it through,
    /// under the server's `request_timeout`; a panic in a layer fails this request only.
    pub(crate) fn around(
        self,
        shared: &Arc<Shared>,
        answer: BoxFuture<Result<Bytes, RpcError>>,
    ) -> BoxFuture<Result<Bytes, RpcError>> {
        let Layered {
            stack,
            mut req,
            rev,
        } = self;
        let function = req.function();
        let name = req.name().to_owned();
        req.run = Some(Box::new(move |_, _| {
            Box::pin(async move { response(answer.await) })
        }));
        let limit = shared.config.limits.request_timeout;
        Box::pin(async move {
            let layered = AssertUnwindSafe(stack.call(req)).catch_unwind();
            let answer = match tokio::time::timeout(limit, layered).await {
                Err(_) => Err(timed_out(&name, limit)),
                Ok(Err(panic)) => Err(panicked(&name, panic.as_ref())),
                Ok(Ok(Err(e))) => Err(middleware::into_rpc_error(e, function)),
                Ok(Ok(Ok(response))) => match response.outcome {
                    Outcome::Reply(Reply::Rendered(bytes)) => Ok(bytes),
                    Outcome::Error(e) | Outcome::Failed(_, e) => Err(e),
                    _ => Err(RpcError::internal(format!(
                        "Internal error: a layer answered `{function}` with a result of another kind"
                    ))),
                },
            };
            answer.map_err(|e| render::error(rev, e))
        })
    }
}

/// The dispatcher's answer as the layers see it.
fn response(out: Result<Bytes, RpcError>) -> McpResponse {
    match out {
        Ok(bytes) => McpResponse::reply(Reply::Rendered(bytes)),
        Err(e) => McpResponse::error(e),
    }
}
