//! Micro-benchmarks of the pieces of sake's request path, through its public API:
//! header checks, JSON-RPC decoding (one-pass and careful), `_meta` validation, dispatch (with argument decoding and
//! rendering), and result rendering.
//!
//! `cargo bench -p sake-micro` in benches/ (or `benches/run.sh --micro`). Wall-clock figures on
//! a shared machine are noisy: compare runs taken under the same load, or count instructions
//! with callgrind (docs/benchmarks.md).

use std::hint::black_box;

use divan::Bencher;
use http::{HeaderMap, HeaderValue};
use sake::prelude::*;
use sake::testing::TestClient;
use sake::{Implementation, Revision};
use sake_runtime::protocol::jsonrpc::{self, Incoming, RequestId};
use sake_runtime::protocol::meta::{self, Params};
use sake_runtime::protocol::render::{self, Cache, CacheHints, ResultEnv, Shape};
use sake_runtime::transport::http::headers;
use serde_json::json;
use serde_json::value::RawValue;

fn main() {
    divan::main();
}

/// Adds two integers.
#[tool]
fn add(a: i64, b: i64) -> String {
    (a + b).to_string()
}

/// A tool with many arguments, to see what decoding them costs next to `add`.
#[tool]
#[allow(clippy::too_many_arguments)]
fn wide(
    /// A query.
    query: String,
    /// A limit.
    limit: Option<u32>,
    /// A flag.
    verbose: Option<bool>,
    /// Tags.
    tags: Vec<String>,
    /// A region.
    region: String,
    /// A score.
    min_score: f64,
    /// Sort order.
    order: Option<String>,
    /// Page.
    page: u32,
) -> String {
    let _ = (limit, verbose, tags, region, min_score, order, page);
    query
}

const META: &str = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"bench-client","version":"1.0.0"},"io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}},"sampling":{}}}"#;

fn call_body() -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"_meta":{META},"name":"add","arguments":{{"a":2,"b":3}}}}}}"#
    )
}

fn modern_headers() -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert("content-type", HeaderValue::from_static("application/json"));
    h.insert(
        "accept",
        HeaderValue::from_static("application/json, text/event-stream"),
    );
    h.insert(
        headers::PROTOCOL_VERSION,
        HeaderValue::from_static("2026-07-28"),
    );
    h.insert(headers::METHOD, HeaderValue::from_static("tools/call"));
    h.insert(headers::NAME, HeaderValue::from_static("add"));
    h
}

/// Reading the three 2026-07-28 headers and decoding `Mcp-Name` (the per-request header work).
#[divan::bench]
fn header_checks(b: Bencher) {
    let h = modern_headers();
    b.bench(|| {
        let h = black_box(&h);
        let v = headers::read(h, &headers::name::PROTOCOL_VERSION)
            .unwrap()
            .unwrap();
        let m = headers::read(h, &headers::name::METHOD).unwrap().unwrap();
        let n = headers::read(h, &headers::name::NAME).unwrap().unwrap();
        let n = headers::decode_sentinel(headers::NAME, n).unwrap();
        (v.len(), m.len(), n.len())
    });
}

/// A Base64-sentinel `Mcp-Name`.
#[divan::bench]
fn header_sentinel_decode() -> usize {
    headers::decode_sentinel(headers::NAME, black_box("=?base64?SGVsbG8sIOS4lueVjA==?="))
        .unwrap()
        .len()
}

/// The JSON-RPC envelope and the one-pass `params` read.
#[divan::bench]
fn jsonrpc_decode(b: Bencher) {
    let body = call_body();
    b.bench(|| {
        let msg = jsonrpc::decode(black_box(body.as_bytes())).unwrap();
        let Incoming::Request { params, .. } = msg else {
            unreachable!()
        };
        Params::parse(params).unwrap().name.is_some()
    });
}

/// The one-pass read of a well-formed 2026-07-28 request: envelope, `params` and `_meta`
/// checked together (what the HTTP endpoint does first; compare with `jsonrpc_decode` plus
/// `meta_validation`, the careful path it falls back to).
#[divan::bench]
fn one_pass_modern_decode(b: Bencher) {
    let body = bytes::Bytes::from(call_body());
    b.bench(|| {
        meta::decode_modern_request(black_box(&body))
            .unwrap()
            .params
            .name
            .is_some()
    });
}

/// `_meta` validation of a 2026-07-28 request (version, capabilities, client info).
#[divan::bench]
fn meta_validation(b: Bencher) {
    let raw = RawValue::from_string(META.to_owned()).unwrap();
    b.bench(|| {
        meta::parse_modern_meta(Some(black_box(&*raw)))
            .unwrap()
            .protocol_version
            .len()
    });
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Dispatch of `tools/call add` through the real dispatcher (arguments decoded, the function
/// run, the result rendered), without HTTP.
#[divan::bench(args = [Revision::V2026_07_28, Revision::V2025_11_25])]
fn dispatch_add(b: Bencher, rev: Revision) {
    let rt = runtime();
    let client = TestClient::new(Server::from_registry())
        .unwrap()
        .revision(rev);
    let args = json!({"a": 2, "b": 3});
    b.bench_local(|| {
        rt.block_on(client.call_tool("add", black_box(args.clone())))
            .unwrap()
    });
}

/// Argument decoding: the same dispatch with eight arguments (compare with `dispatch_add`).
#[divan::bench]
fn dispatch_wide_arguments(b: Bencher) {
    let rt = runtime();
    let client = TestClient::new(Server::from_registry()).unwrap();
    let args = json!({
        "query": "rust mcp", "limit": 20, "verbose": true, "tags": ["a", "b", "c"],
        "region": "eu-west-1", "min_score": 0.5, "order": "newest", "page": 3
    });
    b.bench_local(|| {
        rt.block_on(client.call_tool("wide", black_box(args.clone())))
            .unwrap()
    });
}

/// `tools/list` through the dispatcher: a prebuilt page.
#[divan::bench]
fn dispatch_tools_list(b: Bencher) {
    let rt = runtime();
    let client = TestClient::new(Server::from_registry()).unwrap();
    b.bench_local(|| rt.block_on(client.list_tools()).unwrap());
}

/// Rendering a `tools/call` result for a revision, and wrapping it in the response envelope.
#[divan::bench(args = [Revision::V2026_07_28, Revision::V2025_11_25, Revision::V2025_03_26])]
fn result_rendering(b: Bencher, rev: Revision) {
    let env = ResultEnv::new(
        &Implementation::new("sake-bench", "0.1.0"),
        CacheHints {
            ttl_ms: 60_000,
            scope: sake::CacheScope::Public,
        },
    );
    let result = CallToolResult::success(vec![Content::text("5")]);
    let id = RequestId::from(2);
    b.bench(|| {
        let body = render::result(rev, &env, Shape::CallTool, Cache::None, black_box(&result));
        jsonrpc::result_bytes(&id, &body).len()
    });
}
