//! The span of each request the front serves, whatever the transport and era.
//!
//! Its fields are the attributes of the MCP server span of the OpenTelemetry semantic
//! conventions for MCP
//! (<https://github.com/open-telemetry/semantic-conventions-genai/blob/main/docs/gen-ai/mcp.md>,
//! "Server"): `mcp.method.name`, `gen_ai.tool.name`, `jsonrpc.request.id`, … Without feature
//! `otel` it is a plain `tracing` span: its fields are declared empty and recorded only when a
//! subscriber wants the span. With `otel` it is also the OpenTelemetry span (`otel.name`,
//! `otel.kind`, `otel.status_code` are read by `tracing-opentelemetry`), the context in
//! `params._meta` is linked or adopted as its parent (`Server::client_trace_context`), and the
//! request's duration goes to
//! `mcp.server.operation.duration`.

use std::borrow::Cow;

use tracing::field::Empty;

use super::Outcome;
use crate::protocol::jsonrpc::{RequestId, logged, raw_string};
use crate::protocol::meta::{Params, RawMeta};
use crate::protocol::methods::Method;
use crate::protocol::version::Revision;
use crate::registry::Registry;
use crate::server::Config;

/// What the front knows about a request when it starts serving it.
pub(crate) struct Call<'a> {
    /// The method as sent.
    pub method: &'a str,
    /// The method, when sake knows it.
    pub known: Option<Method>,
    pub id: &'a RequestId,
    pub rev: Revision,
    /// The handshake session's id (never the `Mcp-Session-Id` token, which is a credential).
    pub session: Option<&'a str>,
    pub params: Option<&'a Params<'a>>,
    /// `_meta` as kept by the 2026-07-28 path (cut out of `params`), when it was.
    #[cfg_attr(not(feature = "otel"), allow(dead_code))]
    pub raw_meta: Option<&'a RawMeta>,
    /// `network.transport`: `tcp` for HTTP, `pipe` for stdio; `None` in memory.
    pub transport: Option<&'static str>,
}

/// A request's span, and (feature `otel`) what its duration is recorded with.
pub(crate) struct Telemetry {
    span: tracing::Span,
    /// A `tools/call`: a result with `isError: true` is the error `tool_error`.
    tool_call: bool,
    #[cfg(feature = "otel")]
    metric: Metric,
}

#[cfg(feature = "otel")]
struct Metric {
    started: std::time::Instant,
    /// The attributes every outcome has (low-cardinality only).
    attributes: Vec<opentelemetry::KeyValue>,
}

impl Telemetry {
    /// Opens the span of a request (not entered): its target named only when `registry` has
    /// it, its client's trace context as `config` says (feature `otel`).
    pub(crate) fn open(call: Call<'_>, registry: &Registry, config: &Config) -> Telemetry {
        #[cfg(not(feature = "otel"))]
        let _ = config;
        let span = tracing::info_span!(
            "mcp.request",
            otel.name = Empty,
            otel.kind = Empty,
            otel.status_code = Empty,
            otel.status_description = Empty,
            mcp.method.name = Empty,
            gen_ai.operation.name = Empty,
            gen_ai.tool.name = Empty,
            gen_ai.prompt.name = Empty,
            mcp.resource.uri = Empty,
            jsonrpc.request.id = Empty,
            mcp.protocol.version = Empty,
            mcp.session.id = Empty,
            network.transport = Empty,
            error.type = Empty,
            rpc.response.status_code = Empty,
        );
        let tool_call = call.known == Some(Method::ToolsCall);
        let enabled = !span.is_disabled();
        // Nothing more to do for a span nobody wants (the metric is recorded regardless).
        #[cfg(not(feature = "otel"))]
        if !enabled {
            return Telemetry { span, tool_call };
        }
        // The target of the span name: a tool or prompt this server has (a name the client
        // made up would make span names, and the metric's series, unbounded).
        let name = match call.known {
            Some(Method::ToolsCall | Method::PromptsGet) => {
                call.params.and_then(|p| p.name).and_then(raw_string)
            }
            _ => None,
        };
        let registered = name.as_deref().filter(|n| match call.known {
            Some(Method::ToolsCall) => registry.tool(n).is_some(),
            Some(Method::PromptsGet) => registry.prompt(n).is_some(),
            _ => false,
        });
        let operation = tool_call.then_some("execute_tool");
        if enabled {
            // What the client chose goes in clipped (`logged`): a 4 MiB name is not a 4 MiB
            // attribute.
            span.record("mcp.method.name", &*logged(call.method));
            let name = name.as_deref().map(logged);
            match call.known {
                Some(Method::ToolsCall) => span.record("gen_ai.tool.name", name.as_deref()),
                Some(Method::PromptsGet) => span.record("gen_ai.prompt.name", name.as_deref()),
                Some(
                    Method::ResourcesRead
                    | Method::ResourcesSubscribe
                    | Method::ResourcesUnsubscribe,
                ) => {
                    let uri = call.params.and_then(|p| p.uri).and_then(raw_string);
                    span.record("mcp.resource.uri", uri.as_deref().map(logged).as_deref())
                }
                _ => &span,
            };
            span.record("gen_ai.operation.name", operation);
            // A string, without JSON's quotes ("A string representation of the `id`").
            match call.id {
                RequestId::Number(n) => {
                    span.record("jsonrpc.request.id", tracing::field::display(n))
                }
                RequestId::String(s) => span.record("jsonrpc.request.id", &*logged(s)),
            };
            span.record("mcp.protocol.version", call.rev.as_str());
            span.record("mcp.session.id", call.session);
            span.record("network.transport", call.transport);
            #[cfg(feature = "otel")]
            {
                span.record("otel.kind", "server");
                match registered {
                    Some(target) => span.record("otel.name", format!("{} {target}", call.method)),
                    None => span.record("otel.name", &*logged(call.method)),
                };
                let meta = call
                    .raw_meta
                    .and_then(RawMeta::get)
                    .or_else(|| call.params.and_then(|p| p.meta));
                crate::otel::client_context(&span, meta, config.client_trace_context);
            }
        }
        #[cfg(feature = "otel")]
        let metric = {
            use opentelemetry::KeyValue;
            let method = call.known.map_or("_OTHER", Method::as_str);
            let mut attributes = vec![
                KeyValue::new("mcp.method.name", method),
                KeyValue::new("mcp.protocol.version", call.rev.as_str()),
            ];
            if let Some(target) = registered {
                let key = if tool_call {
                    "gen_ai.tool.name"
                } else {
                    "gen_ai.prompt.name"
                };
                attributes.push(KeyValue::new(key, target.to_owned()));
            }
            if let Some(op) = operation {
                attributes.push(KeyValue::new("gen_ai.operation.name", op));
            }
            if let Some(t) = call.transport {
                attributes.push(KeyValue::new("network.transport", t));
            }
            Metric {
                started: std::time::Instant::now(),
                attributes,
            }
        };
        #[cfg(not(feature = "otel"))]
        let _ = registered;
        Telemetry {
            span,
            tool_call,
            #[cfg(feature = "otel")]
            metric,
        }
    }
}

impl Telemetry {
    /// The span, to enter or to instrument the request's future with.
    pub(crate) fn span(&self) -> &tracing::Span {
        &self.span
    }

    /// Records how the request ended: `error.type` (the JSON-RPC error code, or `tool_error`
    /// for a tool's result with `isError: true`, as the conventions say), with
    /// `rpc.response.status_code` and the error status for a JSON-RPC error; and the
    /// duration.
    pub(crate) fn finish(&self, out: &Outcome) {
        // Nothing to record: no span wants it, and no metric is kept.
        #[cfg(not(feature = "otel"))]
        if self.span.is_disabled() {
            return;
        }
        let error: Option<(Cow<'static, str>, Option<&str>)> = match out {
            Err(e) => Some((Cow::Owned(e.code.to_string()), Some(&e.message))),
            Ok(result) if self.tool_call && is_tool_error(result) => {
                Some((Cow::Borrowed("tool_error"), None))
            }
            Ok(_) => None,
        };
        self.end(error);
    }

    /// `initialize` opened the session `sid`.
    pub(crate) fn session_opened(&self, sid: &str) {
        self.span.record("mcp.session.id", sid);
    }

    /// A request answered by a stream (`subscriptions/listen`) was acknowledged.
    pub(crate) fn acknowledged(&self) {
        self.end(None);
    }

    /// The client cancelled the request: no response is sent (`error.type` `cancelled`).
    pub(crate) fn cancelled(&self) {
        self.end(Some((Cow::Borrowed("cancelled"), None)));
    }

    fn end(&self, error: Option<(Cow<'static, str>, Option<&str>)>) {
        if let Some((kind, message)) = &error
            && !self.span.is_disabled()
        {
            self.span.record("error.type", &**kind);
            if message.is_some() {
                self.span.record("rpc.response.status_code", &**kind);
            }
            // The status is an error, described by the JSON-RPC error's message.
            #[cfg(feature = "otel")]
            {
                self.span.record("otel.status_code", "error");
                if let Some(message) = message {
                    self.span
                        .record("otel.status_description", &*logged(message));
                }
            }
        }
        #[cfg(feature = "otel")]
        {
            let seconds = self.metric.started.elapsed().as_secs_f64();
            match error {
                None => crate::otel::server_duration().record(seconds, &self.metric.attributes),
                Some((kind, message)) => {
                    let mut attributes = self.metric.attributes.clone();
                    if message.is_some() {
                        attributes.push(opentelemetry::KeyValue::new(
                            "rpc.response.status_code",
                            kind.clone(),
                        ));
                    }
                    attributes.push(opentelemetry::KeyValue::new("error.type", kind));
                    crate::otel::server_duration().record(seconds, &attributes);
                }
            }
        }
    }
}

/// Whether a rendered `CallToolResult` has `isError: true` (at its top level: structured
/// content may hold the same key). Results are rendered compactly, so a result without the
/// bytes `"isError":true` is not an error, and most are settled by that scan.
fn is_tool_error(result: &[u8]) -> bool {
    const NEEDLE: &[u8] = br#""isError":true"#;
    if !result.windows(NEEDLE.len()).any(|w| w == NEEDLE) {
        return false;
    }
    #[derive(serde::Deserialize)]
    struct Probe {
        #[serde(rename = "isError", default)]
        is_error: Option<bool>,
    }
    serde_json::from_slice::<Probe>(result).is_ok_and(|p| p.is_error == Some(true))
}

#[cfg(test)]
mod tests {
    use super::is_tool_error;

    #[test]
    fn only_a_top_level_is_error_is_a_tool_error() {
        assert!(is_tool_error(br#"{"content":[],"isError":true}"#));
        assert!(!is_tool_error(br#"{"content":[],"isError":false}"#));
        assert!(!is_tool_error(br#"{"content":[]}"#));
        assert!(!is_tool_error(
            br#"{"content":[],"structuredContent":{"isError":true}}"#
        ));
    }
}
