//! [`Audit`]: one structured record per call.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde_json::{Map, Value};
use sha2::Digest as _;
use tower::{Layer, Service};

use super::{BoxError, Boxed, McpRequest, McpResponse, into_rpc_error};

/// One call, as the audit trail records it. Serialised as JSON with these field names
/// (camelCase).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AuditRecord {
    /// When the call started, in milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// Who called: the caller's name when signed in, else the client's address, else
    /// `anonymous` (a stream transport).
    pub caller: String,
    /// The caller's name (see [`McpRequest::principal`]), when signed in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// The client's network address (HTTP).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// `tools/call`, `prompts/get` or `resources/read`.
    pub method: &'static str,
    /// The tool's or prompt's name, the resource's URI.
    pub name: String,
    /// The arguments: their digest (`sha256:…` of the arguments without the sensitive
    /// ones), or the arguments with every field not kept replaced by `"[redacted]"` (see
    /// [`Audit::show`]); sensitive ones never appear. `null` when there are none.
    pub arguments: Value,
    /// `ok`, `tool_error`, `error`, `input_required`.
    pub outcome: &'static str,
    /// The JSON-RPC error code, when the call ended with one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error_code: Option<i32>,
    /// The error's message, when the call ended with one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// How long it took, in milliseconds.
    pub duration_ms: f64,
    /// The revision the request spoke.
    pub revision: &'static str,
    /// `http` or `stream`.
    pub transport: &'static str,
    /// The task it ran as, if it became one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// Whether it continued an input round (the same call with the client's answers).
    pub continuation: bool,
}

/// Where audit records go besides the `tracing` target `sake::audit`: a file, a queue.
/// Called once per call, when it ends; must not block (hand the record on).
pub trait AuditSink: Send + Sync + 'static {
    /// Takes one record.
    fn record(&self, record: &AuditRecord);
}

/// The default sink: an `info` event on the `tracing` target `sake::audit`, the record as
/// JSON in its `audit` field.
#[derive(Clone, Copy, Debug, Default)]
pub struct TracingSink;

impl AuditSink for TracingSink {
    fn record(&self, record: &AuditRecord) {
        let json = serde_json::to_string(record).unwrap_or_default();
        tracing::info!(target: "sake::audit", audit = %json, name = %record.name, outcome = record.outcome, "audit");
    }
}

impl<F: Fn(&AuditRecord) + Send + Sync + 'static> AuditSink for F {
    fn record(&self, record: &AuditRecord) {
        self(record)
    }
}

/// Records every call it wraps, when it ends: who, what, the arguments (as a digest by
/// default), the outcome, the duration, the revision, the transport, the task. Put it first
/// (outermost) to record the refusals of the layers inside it.
///
/// Secrets never reach it: the caller's token is not part of a record, and an argument the
/// input schema marks `writeOnly` (`#[schemars(extend("writeOnly" = true))]` on a field of
/// the arguments), or named with [`sensitive`](Self::sensitive), is left out before anything
/// is digested or shown. A task's record is written when its work ends.
#[derive(Clone)]
pub struct Audit {
    sinks: Vec<Arc<dyn AuditSink>>,
    /// Whether `sink` replaced the default sink.
    replaced: bool,
    show: Option<Arc<[String]>>,
    sensitive: Arc<[String]>,
}

impl fmt::Debug for Audit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Audit")
            .field("sinks", &self.sinks.len())
            .field("show", &self.show)
            .field("sensitive", &self.sensitive)
            .finish()
    }
}

impl Default for Audit {
    fn default() -> Self {
        Audit::new()
    }
}

impl Audit {
    /// Records to the `tracing` target `sake::audit` ([`TracingSink`]).
    pub fn new() -> Audit {
        Audit {
            sinks: vec![Arc::new(TracingSink)],
            replaced: false,
            show: None,
            sensitive: Arc::from(Vec::new()),
        }
    }

    /// Records to `sink` instead of the `tracing` target (call again to add more sinks).
    #[must_use]
    pub fn sink(mut self, sink: impl AuditSink) -> Self {
        if !self.replaced {
            self.sinks.clear();
            self.replaced = true;
        }
        self.sinks.push(Arc::new(sink));
        self
    }

    /// Shows the arguments instead of their digest: the fields named here as sent, every
    /// other one as `"[redacted]"`.
    #[must_use]
    pub fn show<I, S>(mut self, fields: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.show = Some(fields.into_iter().map(Into::into).collect());
        self
    }

    /// Arguments never recorded, whatever the function (beside those its schema marks
    /// `writeOnly`).
    #[must_use]
    pub fn sensitive<I, S>(mut self, fields: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.sensitive = fields.into_iter().map(Into::into).collect();
        self
    }

    fn arguments(&self, req: &McpRequest) -> Value {
        let Ok(Some(Value::Object(mut fields))) = req.arguments::<Value>() else {
            return Value::Null;
        };
        for name in req
            .sensitive_arguments()
            .iter()
            .chain(self.sensitive.iter())
        {
            fields.remove(name);
        }
        match &self.show {
            Some(shown) => Value::Object(
                fields
                    .into_iter()
                    .map(|(k, v)| {
                        let v = if shown.contains(&k) {
                            v
                        } else {
                            Value::from("[redacted]")
                        };
                        (k, v)
                    })
                    .collect::<Map<_, _>>(),
            ),
            None => {
                let text = serde_json::to_vec(&Value::Object(fields)).unwrap_or_default();
                let digest = sha2::Sha256::digest(&text);
                let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
                Value::String(format!("sha256:{hex}"))
            }
        }
    }
}

impl Layer<Boxed> for Audit {
    type Service = AuditService;
    fn layer(&self, inner: Boxed) -> AuditService {
        AuditService {
            inner,
            audit: self.clone(),
        }
    }
}

/// The service of an [`Audit`] layer.
pub struct AuditService {
    inner: Boxed,
    audit: Audit,
}

impl Service<McpRequest> for AuditService {
    type Response = McpResponse;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<McpResponse, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: McpRequest) -> Self::Future {
        let started = Instant::now();
        let at_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let caller = match (req.principal(), req.client_addr()) {
            (Some(p), _) => p.to_owned(),
            (None, Some(ip)) => ip.to_string(),
            (None, None) => "anonymous".to_owned(),
        };
        let mut record = AuditRecord {
            at_ms,
            caller,
            principal: req.principal().map(str::to_owned),
            client: req.client_addr().map(|ip| ip.to_string()),
            method: req.method(),
            name: req.name().to_owned(),
            arguments: self.audit.arguments(&req),
            outcome: "ok",
            error_code: None,
            error: None,
            duration_ms: 0.0,
            revision: req.revision().as_str(),
            transport: req.transport().as_str(),
            // A request about a task names it now; a call that becomes one, when it ends.
            task_id: req.task_id.clone(),
            continuation: req.is_continuation(),
        };
        let ctx = req.context().clone();
        let function = req.function();
        let sinks = self.audit.sinks.clone();
        let fut = self.inner.call(req);
        Box::pin(async move {
            let result = fut.await;
            record.duration_ms = started.elapsed().as_secs_f64() * 1000.0;
            if record.task_id.is_none() {
                record.task_id = ctx.task_id().map(str::to_owned);
            }
            let response = match result {
                Ok(r) => r,
                Err(e) => McpResponse::error(into_rpc_error(e, function)),
            };
            record.outcome = response.outcome();
            if let Some(e) = response.rpc_error() {
                record.error_code = Some(e.code);
                record.error = Some(e.message.clone());
            }
            for sink in &sinks {
                sink.record(&record);
            }
            Ok(response)
        })
    }
}

impl std::fmt::Debug for AuditService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AuditService")
    }
}
