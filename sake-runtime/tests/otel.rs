//! Feature `otel`: the spans and the duration metric of the OpenTelemetry semantic conventions
//! for MCP (open-telemetry/semantic-conventions-genai, docs/gen-ai/mcp.md), as they arrive at
//! an OTLP/HTTP receiver.
//!
//! The receiver is a small HTTP server that takes `POST /v1/traces` and `POST /v1/metrics`
//! and decodes the bodies with the official protobuf messages (`opentelemetry-proto`). The
//! process installs one pipeline (`sake::otel::Otel`) pointed at it; each test sends its
//! requests with a trace id of its own and finds its spans by it (or, for a server that links
//! its clients' context instead of adopting it, by the link).
//!
//! Most servers here adopt the client's context (`ClientTraceContext::Adopt`, the conventions'
//! propagation); the default, which links it, has its own tests.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use opentelemetry::trace::TraceContextExt as _;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{KeyValue, any_value};
use opentelemetry_proto::tonic::metrics::v1::{Metric, metric};
use opentelemetry_proto::tonic::trace::v1::{Span, span::SpanKind, status::StatusCode};
use prost::Message as _;
use sake::client::Client;
use sake::prelude::*;
use sake_runtime::otel::{ClientTraceContext, Otel};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use tracing_subscriber::prelude::*;

/// Adds two numbers (as text, which every revision serves).
#[tool]
fn add(a: i64, b: i64) -> String {
    (a + b).to_string()
}

/// Always fails, as a tool error (`isError: true`).
#[tool]
fn fails() -> CallToolResult {
    CallToolResult::error("it always fails")
}

/// What the receiver got.
#[derive(Default)]
struct Received {
    spans: Vec<Span>,
    metrics: Vec<Metric>,
}

struct Setup {
    otel: Otel,
    received: Arc<Mutex<Received>>,
}

/// The receiver (on a thread of its own, so that it outlives each test's runtime) and the
/// pipeline, once per process.
fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let received = Arc::new(Mutex::new(Received::default()));
        let (tx, rx) = std::sync::mpsc::channel::<SocketAddr>();
        let sink = received.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let traces = sink.clone();
                let metrics = sink;
                let app = axum::Router::new()
                    .route(
                        "/v1/traces",
                        axum::routing::post(move |body: axum::body::Bytes| async move {
                            let req = ExportTraceServiceRequest::decode(body).unwrap();
                            let mut got = traces.lock().unwrap();
                            for rs in req.resource_spans {
                                for ss in rs.scope_spans {
                                    got.spans.extend(ss.spans);
                                }
                            }
                            protobuf_ok()
                        }),
                    )
                    .route(
                        "/v1/metrics",
                        axum::routing::post(move |body: axum::body::Bytes| async move {
                            let req = ExportMetricsServiceRequest::decode(body).unwrap();
                            let mut got = metrics.lock().unwrap();
                            for rm in req.resource_metrics {
                                for sm in rm.scope_metrics {
                                    got.metrics.extend(sm.metrics);
                                }
                            }
                            protobuf_ok()
                        }),
                    );
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                tx.send(listener.local_addr().unwrap()).unwrap();
                axum::serve(listener, app).await.unwrap();
            });
        });
        let addr = rx.recv().unwrap();
        let otel = Otel::builder()
            .endpoint(format!("http://{addr}"))
            .service_name("sake-otel-test")
            .install()
            .unwrap();
        tracing_subscriber::registry()
            .with(otel.layer())
            .try_init()
            .unwrap();
        Setup { otel, received }
    })
}

/// An empty export response (the messages' fields are all optional).
fn protobuf_ok() -> axum::response::Response {
    axum::response::Response::builder()
        .header("content-type", "application/x-protobuf")
        .body(axum::body::Body::empty())
        .unwrap()
}

/// Serves the registry over HTTP on a free port, adopting clients' trace context; the
/// endpoint's URL.
async fn serve_http() -> String {
    serve_http_with(ClientTraceContext::Adopt).await
}

/// Serves the registry over HTTP on a free port, doing `policy` with clients' trace context.
async fn serve_http_with(policy: ClientTraceContext) -> String {
    let router = Server::from_registry()
        .name("otel-test")
        .version("1.0.0")
        .client_trace_context(policy)
        .into_router()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    format!("http://{addr}/mcp")
}

/// A `traceparent` (sampled) of a trace and parent span made of `n`.
fn traceparent(n: u8) -> (String, String, String) {
    let trace = format!("4bf92f3577b34da6a3ce929d0e0e47{n:02x}");
    let span = format!("00f067aa0ba902{n:02x}");
    (format!("00-{trace}-{span}-01"), trace, span)
}

/// The spans of trace `trace_id` (hex), once `n` of them arrived.
async fn spans_of(trace_id: &str, n: usize) -> Vec<Span> {
    let setup = setup();
    for _ in 0..100 {
        setup.otel.force_flush().unwrap();
        let found: Vec<Span> = setup
            .received
            .lock()
            .unwrap()
            .spans
            .iter()
            .filter(|s| hex(&s.trace_id) == trace_id)
            .cloned()
            .collect();
        if found.len() >= n {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("fewer than {n} spans of trace {trace_id} arrived");
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A span's attributes, as (key, string form) pairs sorted by key.
fn attributes(span: &Span) -> Vec<(String, String)> {
    strings(&span.attributes)
}

fn strings(kvs: &[KeyValue]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = kvs
        .iter()
        .map(|kv| {
            let v = match kv.value.as_ref().and_then(|v| v.value.as_ref()) {
                Some(any_value::Value::StringValue(s)) => s.clone(),
                Some(any_value::Value::IntValue(i)) => i.to_string(),
                Some(any_value::Value::BoolValue(b)) => b.to_string(),
                other => format!("{other:?}"),
            };
            (kv.key.clone(), v)
        })
        .collect();
    out.sort();
    out
}

fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = p
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    out.sort();
    out
}

/// The one span named `name` among `spans`.
fn named<'a>(spans: &'a [Span], name: &str) -> &'a Span {
    let matching: Vec<&Span> = spans.iter().filter(|s| s.name == name).collect();
    assert_eq!(matching.len(), 1, "one span named {name:?} in {spans:#?}");
    matching[0]
}

/// Attributes of a span that vary by run (the code's location, the thread, the busy time),
/// which tracing-opentelemetry adds; the rest are sake's.
fn sakes(span: &Span) -> Vec<(String, String)> {
    attributes(span)
        .into_iter()
        .filter(|(k, _)| {
            !k.starts_with("code.")
                && !k.starts_with("thread.")
                && k != "busy_ns"
                && k != "idle_ns"
                && k != "target"
        })
        .collect()
}

#[tokio::test]
async fn a_stateless_tool_call_over_http_is_a_server_span_under_the_callers_context() {
    setup();
    let url = serve_http().await;
    let client = Client::connect(&url).await.unwrap();
    assert_eq!(client.revision(), Revision::V2026_07_28);
    let (tp, trace, parent) = traceparent(1);
    let out = client
        .request(
            "tools/call",
            json!({"name": "add", "arguments": {"a": 2, "b": 3},
                   "_meta": {"traceparent": tp, "tracestate": "congo=t61rcWkgMzE"}}),
        )
        .await
        .unwrap();
    assert_eq!(out["content"][0]["text"], json!("5"));
    let spans = spans_of(&trace, 1).await;
    let span = named(&spans, "tools/call add");
    assert_eq!(span.kind, SpanKind::Server as i32);
    assert_eq!(hex(&span.parent_span_id), parent);
    assert_eq!(span.trace_state, "congo=t61rcWkgMzE");
    assert_eq!(
        span.status.as_ref().map_or(0, |s| s.code),
        StatusCode::Unset as i32
    );
    let id = sakes(span)
        .into_iter()
        .find(|(k, _)| k == "jsonrpc.request.id")
        .expect("jsonrpc.request.id")
        .1;
    assert_eq!(
        sakes(span),
        pairs(&[
            ("mcp.method.name", "tools/call"),
            ("gen_ai.tool.name", "add"),
            ("gen_ai.operation.name", "execute_tool"),
            ("jsonrpc.request.id", &id),
            ("mcp.protocol.version", "2026-07-28"),
            ("network.transport", "tcp"),
        ])
    );
    assert!(id.parse::<u64>().is_ok(), "the client's numeric id: {id}");
    // The HTTP request's own span (another trace) is linked, as the conventions say.
    assert_eq!(span.links.len(), 1);
    assert_ne!(hex(&span.links[0].trace_id), trace);
}

#[tokio::test]
async fn a_session_tool_call_over_http_carries_the_session() {
    setup();
    let url = serve_http().await;
    let client = Client::builder()
        .revision(Revision::V2025_11_25)
        .connect(&url)
        .await
        .unwrap();
    assert_eq!(client.revision(), Revision::V2025_11_25);
    let (tp, trace, parent) = traceparent(2);
    client
        .request(
            "tools/call",
            json!({"name": "add", "arguments": {"a": 1, "b": 1}, "_meta": {"traceparent": tp}}),
        )
        .await
        .unwrap();
    // An unknown tool: a JSON-RPC error, and a span name without a target.
    let err = client
        .request(
            "tools/call",
            json!({"name": "nope", "arguments": {}, "_meta": {"traceparent": tp}}),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("Unknown tool: nope"), "{err}");
    let spans = spans_of(&trace, 2).await;
    let ok = named(&spans, "tools/call add");
    assert_eq!(ok.kind, SpanKind::Server as i32);
    assert_eq!(hex(&ok.parent_span_id), parent);
    let attrs = sakes(ok);
    let get = |k: &str| {
        attrs
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("{k} in {attrs:?}"))
    };
    let (id, sid) = (get("jsonrpc.request.id"), get("mcp.session.id"));
    assert!(!sid.is_empty());
    assert_eq!(
        attrs,
        pairs(&[
            ("mcp.method.name", "tools/call"),
            ("gen_ai.tool.name", "add"),
            ("gen_ai.operation.name", "execute_tool"),
            ("jsonrpc.request.id", &id),
            ("mcp.protocol.version", "2025-11-25"),
            ("mcp.session.id", &sid),
            ("network.transport", "tcp"),
        ])
    );
    let failed = named(&spans, "tools/call");
    assert_eq!(hex(&failed.parent_span_id), parent);
    let status = failed.status.clone().expect("a status");
    assert_eq!(status.code, StatusCode::Error as i32);
    assert_eq!(status.message, "Unknown tool: nope");
    let attrs = sakes(failed);
    let id = attrs
        .iter()
        .find(|(k, _)| k == "jsonrpc.request.id")
        .map(|(_, v)| v.clone())
        .unwrap();
    assert_eq!(
        attrs,
        pairs(&[
            ("mcp.method.name", "tools/call"),
            ("gen_ai.tool.name", "nope"),
            ("gen_ai.operation.name", "execute_tool"),
            ("jsonrpc.request.id", &id),
            ("mcp.protocol.version", "2025-11-25"),
            ("mcp.session.id", &sid),
            ("network.transport", "tcp"),
            ("error.type", "-32602"),
            ("rpc.response.status_code", "-32602"),
        ])
    );
}

#[tokio::test]
async fn a_session_over_stdio_is_traced_from_initialize_on() {
    setup();
    let service = Server::from_registry()
        .name("otel-test")
        .version("1.0.0")
        .client_trace_context(ClientTraceContext::Adopt)
        .build()
        .unwrap();
    let (client, server) = tokio::io::duplex(1 << 16);
    let (server_read, server_write) = tokio::io::split(server);
    tokio::spawn(service.serve_io(server_read, server_write));
    let (client_read, mut client_write) = tokio::io::split(client);
    let mut lines = BufReader::new(client_read).lines();
    let (tp, trace, parent) = traceparent(3);
    let messages = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}, "_meta": {"traceparent": tp}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": "call-2", "method": "tools/call", "params": {
            "name": "fails", "arguments": {}, "_meta": {"traceparent": tp}}}),
    ];
    let mut answers = Vec::new();
    for m in messages {
        client_write
            .write_all(format!("{m}\n").as_bytes())
            .await
            .unwrap();
        if m.get("id").is_some() {
            let line = tokio::time::timeout(Duration::from_secs(5), lines.next_line())
                .await
                .unwrap()
                .unwrap()
                .unwrap();
            answers.push(serde_json::from_str::<Value>(&line).unwrap());
        }
    }
    assert_eq!(answers[1]["result"]["isError"], json!(true));
    let spans = spans_of(&trace, 2).await;
    let init = named(&spans, "initialize");
    assert_eq!(init.kind, SpanKind::Server as i32);
    assert_eq!(hex(&init.parent_span_id), parent);
    let sid = attributes(init)
        .into_iter()
        .find(|(k, _)| k == "mcp.session.id")
        .expect("initialize names the session it opened")
        .1;
    assert_eq!(
        sakes(init),
        pairs(&[
            ("mcp.method.name", "initialize"),
            ("jsonrpc.request.id", "1"),
            ("mcp.protocol.version", "2025-11-25"),
            ("mcp.session.id", &sid),
            ("network.transport", "pipe"),
        ])
    );
    let call = named(&spans, "tools/call fails");
    assert_eq!(call.kind, SpanKind::Server as i32);
    assert_eq!(hex(&call.parent_span_id), parent);
    // stdio has no transport span to link.
    assert!(call.links.is_empty());
    // A tool error is not a JSON-RPC error: `error.type` only, and the error status.
    assert_eq!(
        call.status.as_ref().map(|s| s.code),
        Some(StatusCode::Error as i32)
    );
    assert_eq!(
        sakes(call),
        pairs(&[
            ("mcp.method.name", "tools/call"),
            ("gen_ai.tool.name", "fails"),
            ("gen_ai.operation.name", "execute_tool"),
            ("jsonrpc.request.id", "call-2"),
            ("mcp.protocol.version", "2025-11-25"),
            ("mcp.session.id", &sid),
            ("network.transport", "pipe"),
            ("error.type", "tool_error"),
        ])
    );
    client_write.shutdown().await.unwrap();
}

#[tokio::test]
async fn sakes_client_puts_its_span_in_meta_and_the_server_span_is_its_child() {
    setup();
    let url = serve_http().await;
    for revision in [Revision::V2026_07_28, Revision::V2025_11_25] {
        let client = Client::builder()
            .revision(revision)
            .connect(&url)
            .await
            .unwrap();
        let caller = tracing::info_span!("caller");
        let cx = caller.context();
        let (trace, span_id) = (
            cx.span().span_context().trace_id().to_string(),
            cx.span().span_context().span_id().to_string(),
        );
        let result = {
            use tracing::Instrument as _;
            client
                .call_tool("add", json!({"a": 20, "b": 22}))
                .instrument(caller.clone())
                .await
                .unwrap()
        };
        assert!(!result.is_error());
        drop(caller);
        let spans = spans_of(&trace, 2).await;
        let server = named(&spans, "tools/call add");
        assert_eq!(hex(&server.parent_span_id), span_id, "{revision}");
        let client_span = named(&spans, "caller");
        assert_eq!(hex(&client_span.span_id), span_id);
    }
}

/// The spans that link to trace `trace_id` (hex), once `n` of them arrived.
async fn spans_linking(trace_id: &str, n: usize) -> Vec<Span> {
    let setup = setup();
    for _ in 0..100 {
        setup.otel.force_flush().unwrap();
        let found: Vec<Span> = setup
            .received
            .lock()
            .unwrap()
            .spans
            .iter()
            .filter(|s| s.links.iter().any(|l| hex(&l.trace_id) == trace_id))
            .cloned()
            .collect();
        if found.len() >= n {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("fewer than {n} spans linking trace {trace_id} arrived");
}

/// By default a client's context is linked, not adopted: the request's span stays in the
/// server's own trace (under the HTTP request's span here) and names the client's span in a
/// link — so a client neither puts the server's spans in a trace it chose nor decides their
/// sampling — over HTTP in both eras and on stdio.
#[tokio::test]
async fn by_default_a_clients_context_is_linked_not_adopted() {
    setup();
    let url = serve_http_with(ClientTraceContext::default()).await;
    for (n, revision) in [(11, Revision::V2026_07_28), (12, Revision::V2025_11_25)] {
        let client = Client::builder()
            .revision(revision)
            .connect(&url)
            .await
            .unwrap();
        let (tp, trace, parent) = traceparent(n);
        client
            .request(
                "tools/call",
                json!({"name": "add", "arguments": {"a": 1, "b": 2},
                       "_meta": {"traceparent": tp, "tracestate": "congo=t61rcWkgMzE"}}),
            )
            .await
            .unwrap();
        let spans = spans_linking(&trace, 1).await;
        let span = named(&spans, "tools/call add");
        assert_eq!(span.kind, SpanKind::Server as i32);
        assert_ne!(
            hex(&span.trace_id),
            trace,
            "{revision}: not the client's trace"
        );
        assert_ne!(hex(&span.parent_span_id), parent);
        assert!(!span.parent_span_id.is_empty(), "under the HTTP span");
        assert_eq!(span.links.len(), 1);
        assert_eq!(hex(&span.links[0].span_id), parent);
        assert_eq!(span.links[0].trace_state, "congo=t61rcWkgMzE");
        // The client's trace holds none of the server's spans.
        let setup = setup();
        setup.otel.force_flush().unwrap();
        assert!(
            !setup
                .received
                .lock()
                .unwrap()
                .spans
                .iter()
                .any(|s| hex(&s.trace_id) == trace)
        );
    }
    // stdio: the span is the root of a trace of its own, with the link.
    let service = Server::from_registry()
        .name("otel-test")
        .version("1.0.0")
        .build()
        .unwrap();
    let (client, server) = tokio::io::duplex(1 << 16);
    let (server_read, server_write) = tokio::io::split(server);
    tokio::spawn(service.serve_io(server_read, server_write));
    let (client_read, mut client_write) = tokio::io::split(client);
    let mut lines = BufReader::new(client_read).lines();
    let (tp, trace, parent) = traceparent(13);
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "add", "arguments": {"a": 1, "b": 1},
        "_meta": {"traceparent": tp, "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}});
    client_write
        .write_all(format!("{call}\n").as_bytes())
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(5), lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let spans = spans_linking(&trace, 1).await;
    let span = named(&spans, "tools/call add");
    assert!(span.parent_span_id.is_empty(), "a root span");
    assert_eq!(hex(&span.links[0].span_id), parent);
    client_write.shutdown().await.unwrap();
}

/// `Ignore`: the client's context is not read at all (no parent, no link). The call names a
/// tool of its own (unknown: the span is found by its `gen_ai.tool.name`).
#[tokio::test]
async fn a_server_may_ignore_a_clients_context() {
    setup();
    let url = serve_http_with(ClientTraceContext::Ignore).await;
    let client = Client::connect(&url).await.unwrap();
    let (tp, trace, parent) = traceparent(14);
    let marker = "ignored-context-test";
    let err = client
        .request(
            "tools/call",
            json!({"name": marker, "arguments": {}, "_meta": {"traceparent": tp}}),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("Unknown tool"), "{err}");
    let setup = setup();
    let mut found = None;
    for _ in 0..100 {
        setup.otel.force_flush().unwrap();
        found = setup
            .received
            .lock()
            .unwrap()
            .spans
            .iter()
            .find(|s| {
                sakes(s)
                    .iter()
                    .any(|(k, v)| k == "gen_ai.tool.name" && v == marker)
            })
            .cloned();
        if found.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let span = found.expect("the call's span arrived");
    assert_ne!(hex(&span.trace_id), trace, "not the client's trace");
    assert_ne!(hex(&span.parent_span_id), parent, "not the client's span");
    assert!(!span.parent_span_id.is_empty(), "under the HTTP span");
    assert!(span.links.is_empty(), "no link: {:?}", span.links);
}

/// What a client chose goes into span attributes clipped to 256 bytes, with a marker: a tool
/// name of 1 MiB, an unknown method of 1 MiB, a string id of 1 MiB.
#[tokio::test]
async fn a_clients_long_strings_are_clipped_in_span_attributes() {
    setup();
    let url = serve_http().await;
    let client = Client::builder()
        .revision(Revision::V2025_11_25)
        .connect(&url)
        .await
        .unwrap();
    let (tp, trace, _) = traceparent(15);
    let big = "n".repeat(1 << 20);
    let err = client
        .request(
            "tools/call",
            json!({"name": big, "arguments": {}, "_meta": {"traceparent": tp}}),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("Unknown tool"), "{err}");
    let spans = spans_of(&trace, 1).await;
    let span = named(&spans, "tools/call");
    let name = sakes(span)
        .into_iter()
        .find(|(k, _)| k == "gen_ai.tool.name")
        .expect("gen_ai.tool.name")
        .1;
    assert_eq!(
        name,
        format!("{}…[clipped: {} bytes]", "n".repeat(256), 1 << 20)
    );
    // The error's message (the span's status) is clipped too.
    let status = span.status.clone().expect("a status");
    assert!(status.message.len() < 400, "{}", status.message.len());
}

#[tokio::test]
async fn the_duration_metric_follows_the_conventions() {
    setup();
    let url = serve_http().await;
    let client = Client::connect(&url).await.unwrap();
    client
        .call_tool("add", json!({"a": 1, "b": 2}))
        .await
        .unwrap();
    assert!(
        client
            .call_tool("fails", json!({}))
            .await
            .unwrap()
            .is_error()
    );
    let setup = setup();
    let mut seen = (false, false);
    for _ in 0..100 {
        setup.otel.force_flush().unwrap();
        {
            let got = setup.received.lock().unwrap();
            for m in got
                .metrics
                .iter()
                .filter(|m| m.name == "mcp.server.operation.duration")
            {
                assert_eq!(m.unit, "s");
                let Some(metric::Data::Histogram(h)) = &m.data else {
                    panic!("a histogram: {m:?}");
                };
                for p in &h.data_points {
                    assert_eq!(
                        p.explicit_bounds,
                        [
                            0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0,
                            120.0, 300.0
                        ]
                    );
                    let attrs = strings(&p.attributes);
                    let base = [
                        ("gen_ai.operation.name", "execute_tool"),
                        ("mcp.method.name", "tools/call"),
                        ("mcp.protocol.version", "2026-07-28"),
                        ("network.transport", "tcp"),
                    ];
                    let mut ok = base.to_vec();
                    ok.push(("gen_ai.tool.name", "add"));
                    let mut failed = base.to_vec();
                    failed.push(("gen_ai.tool.name", "fails"));
                    failed.push(("error.type", "tool_error"));
                    if attrs == pairs(&ok) {
                        assert!(p.count >= 1);
                        seen.0 = true;
                    }
                    if attrs == pairs(&failed) {
                        assert!(p.count >= 1);
                        seen.1 = true;
                    }
                }
            }
        }
        if seen == (true, true) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the duration of both calls did not arrive: {seen:?}");
}
