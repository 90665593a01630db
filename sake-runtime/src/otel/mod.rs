//! OpenTelemetry for MCP (feature `otel`), following the
//! [semantic conventions for MCP](https://github.com/open-telemetry/semantic-conventions-genai/blob/main/docs/gen-ai/mcp.md).
//!
//! With the feature on, every request a sake server serves (on every transport, in both eras)
//! is a `SERVER` span named `{mcp.method.name} {target}` (`tools/call add`) with the
//! convention's attributes, and its duration is recorded in the `mcp.server.operation.duration`
//! histogram. The trace context the client put in `params._meta` (`traceparent`,
//! `tracestate`, `baggage`; the conventions' "Context propagation") is *linked* from the span
//! by default, and becomes its parent when the server trusts its clients' trace context
//! ([`ClientTraceContext`], `Server::client_trace_context`); sake's client puts the context of
//! the span it is called in there. Whatever a client chose (a method, a name, a URI, an id) is
//! recorded clipped to 256 bytes. docs/observability.md has the attributes and an example.
//!
//! sake is an instrumentation library: its spans are `tracing` spans, turned into OpenTelemetry
//! spans by a [`tracing_opentelemetry`] layer; it reads and writes `_meta` with the
//! [global propagator](opentelemetry::global::set_text_map_propagator) and records the metric
//! with the [global meter provider](opentelemetry::global::set_meter_provider). An application
//! that sets these up itself needs nothing more from this module; [`Otel`] is the short way: an
//! OTLP/HTTP exporter for traces and metrics that honours the standard `OTEL_*` environment
//! variables.
//!
//! ```no_run
//! use tracing_subscriber::prelude::*;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT (default http://localhost:4318).
//! let otel = sake_runtime::otel::Otel::builder().service_name("weather").install()?;
//! tracing_subscriber::registry()
//!     .with(otel.layer()) // beside your `fmt` layer and filter
//!     .init();
//! // … serve …
//! otel.shutdown()?; // exports what is still buffered
//! # Ok(())
//! # }
//! ```

use std::borrow::Cow;
use std::sync::OnceLock;

use opentelemetry::metrics::Histogram;
use opentelemetry::propagation::{Extractor, TextMapCompositePropagator};
use opentelemetry::trace::{TraceContextExt as _, TracerProvider as _};
use opentelemetry::{InstrumentationScope, global};
use opentelemetry_otlp::{Protocol, WithExportConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use serde::Deserialize;
use serde_json::value::RawValue;
use tracing_opentelemetry::{OpenTelemetryLayer, OpenTelemetrySpanExt as _};

/// The instrumentation scope of sake's spans and metrics.
const SCOPE: &str = "sake";

/// The bucket boundaries (seconds) the conventions give for `mcp.server.operation.duration`
/// ("Metric: `mcp.server.operation.duration`", `ExplicitBucketBoundaries`).
const DURATION_BUCKETS: [f64; 14] = [
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];

/// An installed OpenTelemetry pipeline: OTLP over HTTP (protobuf) for traces and metrics.
///
/// [`install`](OtelBuilder::install) makes its providers the global ones and installs the W3C
/// Trace Context and Baggage propagator; [`layer`](Otel::layer) is what turns `tracing` spans,
/// sake's and yours, into OpenTelemetry spans. Call [`shutdown`](Otel::shutdown) before the
/// process exits, or spans still buffered are lost.
#[derive(Debug)]
pub struct Otel {
    tracer_provider: SdkTracerProvider,
    meter_provider: SdkMeterProvider,
}

/// Configures an [`Otel`] pipeline. What is not set here comes from the standard environment
/// variables of the OTLP exporter and the SDK: `OTEL_EXPORTER_OTLP_ENDPOINT` (default
/// `http://localhost:4318`), `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`,
/// `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_TIMEOUT`, `OTEL_SERVICE_NAME`,
/// `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_METRIC_EXPORT_INTERVAL`, `OTEL_BSP_*`.
#[derive(Debug, Default)]
#[must_use]
pub struct OtelBuilder {
    endpoint: Option<String>,
    service_name: Option<String>,
}

/// Why an [`Otel`] pipeline could not be built, flushed or shut down.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OtelError {
    /// An OTLP exporter could not be built (a malformed endpoint, for one).
    #[error("the OTLP exporter could not be built: {0}")]
    Exporter(#[from] opentelemetry_otlp::ExporterBuildError),
    /// Exporting what was buffered failed, or the pipeline was already shut down.
    #[error("the OpenTelemetry pipeline failed: {0}")]
    Sdk(#[from] opentelemetry_sdk::error::OTelSdkError),
}

impl Otel {
    /// A pipeline to configure and [`install`](OtelBuilder::install).
    pub fn builder() -> OtelBuilder {
        OtelBuilder::default()
    }

    /// The `tracing` layer that exports spans through this pipeline. Add it to the
    /// subscriber beside your others (`fmt`, a filter).
    pub fn layer<S>(&self) -> OpenTelemetryLayer<S, SdkTracer>
    where
        S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
    {
        let tracer = self.tracer_provider.tracer_with_scope(scope());
        tracing_opentelemetry::layer().with_tracer(tracer)
    }

    /// Exports every span ended and every metric recorded so far, and waits for it.
    pub fn force_flush(&self) -> Result<(), OtelError> {
        self.tracer_provider.force_flush()?;
        self.meter_provider.force_flush()?;
        Ok(())
    }

    /// Exports what is buffered and stops the pipeline.
    pub fn shutdown(self) -> Result<(), OtelError> {
        let traces = self.tracer_provider.shutdown();
        let metrics = self.meter_provider.shutdown();
        traces?;
        metrics?;
        Ok(())
    }
}

impl OtelBuilder {
    /// The collector's base URL, such as `http://localhost:4318`: spans go to `/v1/traces`
    /// under it, metrics to `/v1/metrics`. Without it, the environment decides.
    pub fn endpoint(mut self, url: impl Into<String>) -> Self {
        self.endpoint = Some(url.into());
        self
    }

    /// The `service.name` resource attribute. Without it, `OTEL_SERVICE_NAME` decides (and
    /// the SDK's `unknown_service` without that).
    pub fn service_name(mut self, name: impl Into<String>) -> Self {
        self.service_name = Some(name.into());
        self
    }

    /// Builds the exporters and installs the pipeline: the global tracer and meter providers,
    /// and the global propagator (W3C Trace Context and Baggage), which sake reads `_meta`
    /// with. Install it before serving: the duration histogram is made from the global meter
    /// provider once.
    pub fn install(self) -> Result<Otel, OtelError> {
        let url = |path: &str| {
            self.endpoint
                .as_deref()
                .map(|base| format!("{}/{path}", base.trim_end_matches('/')))
        };
        let mut spans = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary);
        if let Some(u) = url("v1/traces") {
            spans = spans.with_endpoint(u);
        }
        let mut metrics = opentelemetry_otlp::MetricExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary);
        if let Some(u) = url("v1/metrics") {
            metrics = metrics.with_endpoint(u);
        }
        let (spans, metrics) = (spans.build()?, metrics.build()?);
        let mut resource = Resource::builder();
        if let Some(name) = self.service_name {
            resource = resource.with_service_name(name);
        }
        let resource = resource.build();
        let tracer_provider = SdkTracerProvider::builder()
            .with_resource(resource.clone())
            .with_batch_exporter(spans)
            .build();
        let meter_provider = SdkMeterProvider::builder()
            .with_resource(resource)
            .with_periodic_exporter(metrics)
            .build();
        global::set_tracer_provider(tracer_provider.clone());
        global::set_meter_provider(meter_provider.clone());
        global::set_text_map_propagator(TextMapCompositePropagator::new(vec![
            Box::new(TraceContextPropagator::new()),
            Box::new(BaggagePropagator::new()),
        ]));
        Ok(Otel {
            tracer_provider,
            meter_provider,
        })
    }
}

fn scope() -> InstrumentationScope {
    InstrumentationScope::builder(SCOPE)
        .with_version(env!("CARGO_PKG_VERSION"))
        .build()
}

/// `mcp.server.operation.duration`: "MCP request or notification duration as observed on the
/// receiver from the time it was received until the result or ack is sent", in seconds.
pub(crate) fn server_duration() -> &'static Histogram<f64> {
    static HISTOGRAM: OnceLock<Histogram<f64>> = OnceLock::new();
    HISTOGRAM.get_or_init(|| {
        global::meter_with_scope(scope())
            .f64_histogram("mcp.server.operation.duration")
            .with_unit("s")
            .with_description("MCP request duration as observed on the receiver from the time it was received until the result or ack is sent.")
            .with_boundaries(DURATION_BUCKETS.to_vec())
            .build()
    })
}

/// The propagation fields of a `_meta` object: the W3C Trace Context and Baggage keys, which
/// the conventions (and SEP-414) write unprefixed.
#[derive(Deserialize, Default)]
struct MetaCarrier<'a> {
    #[serde(borrow, default)]
    traceparent: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    tracestate: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    baggage: Option<Cow<'a, str>>,
}

impl Extractor for MetaCarrier<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            "traceparent" => self.traceparent.as_deref(),
            "tracestate" => self.tracestate.as_deref(),
            "baggage" => self.baggage.as_deref(),
            _ => None,
        }
    }

    fn keys(&self) -> Vec<&str> {
        [
            ("traceparent", &self.traceparent),
            ("tracestate", &self.tracestate),
            ("baggage", &self.baggage),
        ]
        .into_iter()
        .filter(|(_, v)| v.is_some())
        .map(|(k, _)| k)
        .collect()
    }
}

/// What a server does with the trace context a client puts in `params._meta` (`traceparent`,
/// `tracestate`, `baggage`), set with `Server::client_trace_context`.
///
/// A client's context decides more than where its spans show: with a parent-based sampler
/// its *sampled* flag decides whether the server's spans are recorded (a client that marks
/// every request sampled makes the server export every span), its trace id puts the server's
/// spans in a trace the client named, and its baggage travels on to what the server calls.
/// So the default links to it — the span names the client's span, and stays in the server's
/// own trace under its own sampling — and a server adopts it only when its clients are its
/// own (behind a gateway that sets or checks `traceparent`, or internal callers).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientTraceContext {
    /// The request's span stays a child of the current context (the transport's span over
    /// HTTP, a new trace on stdio) and gets a link to the client's span. The default.
    #[default]
    Link,
    /// The client's span is the parent of the request's span, as the conventions' "Context
    /// propagation" describes (with a link to the transport's span): for clients the server
    /// trusts.
    Adopt,
    /// The client's context is not read at all.
    Ignore,
}

/// The longest `traceparent` read (version 00 has 55 characters; later versions may add).
const MAX_TRACEPARENT: usize = 256;
/// The longest `tracestate` read (W3C Trace Context: propagate at least 512 characters).
const MAX_TRACESTATE: usize = 512;
/// The longest `baggage` read (W3C Baggage: at most 8192 bytes).
const MAX_BAGGAGE: usize = 8192;

/// Applies `policy` to the trace context in a request's `_meta` for `span` (which must not have
/// been entered yet). A `_meta` without a valid `traceparent` (or one the global propagator
/// does not read) changes nothing: the span stays a child of the current one. Fields longer
/// than the W3C limits are not read.
pub(crate) fn client_context(
    span: &tracing::Span,
    meta: Option<&RawValue>,
    policy: ClientTraceContext,
) {
    if policy == ClientTraceContext::Ignore {
        return;
    }
    let Some(mut carrier) =
        meta.and_then(|m| serde_json::from_str::<MetaCarrier<'_>>(m.get()).ok())
    else {
        return;
    };
    if carrier
        .traceparent
        .as_ref()
        .is_none_or(|t| t.len() > MAX_TRACEPARENT)
    {
        return;
    }
    if carrier
        .tracestate
        .as_ref()
        .is_some_and(|t| t.len() > MAX_TRACESTATE)
    {
        carrier.tracestate = None;
    }
    if carrier
        .baggage
        .as_ref()
        .is_some_and(|b| b.len() > MAX_BAGGAGE)
    {
        carrier.baggage = None;
    }
    let cx = global::get_text_map_propagator(|p| p.extract(&carrier));
    let client = cx.span().span_context().clone();
    if !client.is_valid() {
        return;
    }
    match policy {
        ClientTraceContext::Adopt => {
            let ambient = tracing::Span::current().context();
            if span.set_parent(cx).is_ok() {
                let ambient = ambient.span().span_context().clone();
                span.add_link(ambient);
            }
        }
        // The span keeps its place (and sampling) in the server's trace; the client's span
        // is named, not followed. Neither its baggage nor its sampled flag is taken.
        _ => span.add_link(client),
    }
}

/// Trace context into requests the client sends.
#[cfg(feature = "client")]
mod injection {
    use opentelemetry::propagation::Injector;
    use opentelemetry::trace::TraceContextExt as _;
    use opentelemetry::{Context, global};
    use serde_json::{Map, Value};
    use tracing_opentelemetry::OpenTelemetrySpanExt as _;

    /// Writes `params._meta` fields to inject a context into.
    struct MetaInjector(Vec<(String, String)>);

    impl Injector for MetaInjector {
        fn set(&mut self, key: &str, value: String) {
            self.0.push((key.to_owned(), value));
        }
    }

    /// Puts the current trace context (of the current `tracing` span, else OpenTelemetry's
    /// current context) into `params._meta` with the global propagator: `traceparent`,
    /// `tracestate`, `baggage`. Nothing is added when there is no context to propagate.
    pub(crate) fn inject(params: &mut Map<String, Value>) {
        let mut cx = tracing::Span::current().context();
        if !cx.span().span_context().is_valid() {
            cx = Context::current();
        }
        let mut fields = MetaInjector(Vec::new());
        global::get_text_map_propagator(|p| p.inject_context(&cx, &mut fields));
        if fields.0.is_empty() {
            return;
        }
        let meta = params
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(meta) = meta {
            for (k, v) in fields.0 {
                meta.insert(k, Value::String(v));
            }
        }
    }
}

#[cfg(feature = "client")]
pub(crate) use injection::inject;
