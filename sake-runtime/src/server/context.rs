//! [`Context`]: what a tool, prompt or resource function knows about the request it serves,
//! and what it can send back while it runs.

use std::borrow::Cow;
use std::sync::Arc;

use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::protocol::Revision;
use crate::protocol::jsonrpc;
use crate::protocol::meta::{ProgressToken, RequestMeta};
use crate::protocol::types::{ClientCapabilities, Implementation, LoggingLevel};

/// The sending half of a request's stream: JSON-RPC messages that go out before the result.
pub(crate) type Sink = mpsc::Sender<Bytes>;

/// The request a function is serving, and the way to talk back while it runs.
///
/// Declare a parameter of type `Context` on a `#[tool]`, `#[prompt]` or `#[resource]` function
/// to receive it; it is not an argument and does not appear in the schema. It is cheap to
/// clone, and can be moved into tasks the function spawns.
///
/// ```
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
    cancel: CancellationToken,
    extensions: http::Extensions,
    name: Option<Cow<'static, str>>,
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
}

impl Context {
    pub(crate) fn new(
        parts: RequestParts,
        name: Option<Cow<'static, str>>,
    ) -> (Self, CancellationToken) {
        let cancel = CancellationToken::new();
        let ctx = Context {
            inner: Arc::new(Inner {
                revision: parts.revision,
                meta: parts.meta,
                sink: parts.sink,
                cancel: cancel.clone(),
                extensions: parts.extensions,
                name,
            }),
        };
        (ctx, cancel)
    }

    /// A context for calling a function directly, outside any request (unit tests, scripts).
    ///
    /// It speaks 2026-07-28, declares no client capabilities, and drops progress and logs.
    pub fn detached() -> Self {
        Context::new(
            RequestParts {
                revision: Revision::LATEST,
                meta: RequestMeta::default(),
                sink: None,
                extensions: http::Extensions::new(),
            },
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
        self.inner.meta.client_info.as_ref()
    }

    /// The progress token, when the client asked for progress.
    pub fn progress_token(&self) -> Option<&ProgressToken> {
        self.inner.meta.progress_token.as_ref()
    }

    /// The request's `_meta` object as sent, if any.
    pub fn meta(&self) -> Option<&RawValue> {
        self.inner.meta.raw.as_deref()
    }

    /// The HTTP request's extensions (empty on stdio): where an authentication layer leaves
    /// the principal for tools to read.
    pub fn extensions(&self) -> &http::Extensions {
        &self.inner.extensions
    }

    /// The name of the tool or prompt, or the URI of the resource, being served.
    pub fn name(&self) -> Option<&str> {
        self.inner.name.as_deref()
    }

    /// Reports progress, when the client asked for it (`_meta.progressToken`); otherwise does
    /// nothing. `progress` should grow with each call; `total` is the value at completion.
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
    pub async fn log(&self, level: LoggingLevel, data: impl Serialize) {
        let threshold = match self.inner.meta.log_level {
            Some(l) => l,
            None if self.inner.revision.is_modern() => return,
            None => LoggingLevel::Debug,
        };
        if level < threshold {
            return;
        }
        let data = serde_json::to_value(data).unwrap_or(Value::Null);
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
                logger: self.inner.name.as_deref(),
                data,
            },
        );
        self.send(bytes).await;
    }

    async fn send(&self, bytes: Vec<u8>) {
        if self.inner.cancel.is_cancelled() {
            return;
        }
        if let Some(sink) = &self.inner.sink {
            // A closed stream means the client went away; the call is being cancelled.
            let _ = sink.send(Bytes::from(bytes)).await;
        }
    }

    /// Whether the request was cancelled (the client closed the stream or sent
    /// `notifications/cancelled`).
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancel.is_cancelled()
    }

    /// Completes when the request is cancelled. Use it in `select!` to stop long work early.
    pub async fn cancelled(&self) {
        self.inner.cancel.cancelled().await;
    }
}
