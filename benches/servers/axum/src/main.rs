//! Bare axum 0.8 + tokio + serde_json: the limit of the stack sake is built on.
//!
//! One POST route that parses a JSON-RPC request with serde_json (borrowed, like sake), and
//! answers the bytes sake answers:
//! - `tools/call` of `add`: the sum, rendered for the request's era (2026-07-28 results carry
//!   `resultType` and `serverInfo`; legacy ones do not, chosen by `MCP-Protocol-Version`);
//! - `tools/call` of `progress`: ten `notifications/progress` and the result, over SSE;
//! - `tools/list`: a result object read at start-up from the file named by `AXUM_TOOLS_LIST`
//!   (the bench writes sake's own 1,000-tool list there), spliced after the request's id.
//!
//! No header, `_meta` or session checks: this is what a framework cannot beat.
//! Usage: `axum-server <port>`.

use std::convert::Infallible;
use std::sync::Arc;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use axum::routing::post;
use axum::serve::ListenerExt as _;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

#[derive(Deserialize)]
struct Request<'a> {
    #[allow(dead_code)]
    jsonrpc: &'a str,
    #[serde(borrow)]
    id: &'a RawValue,
    method: &'a str,
    #[serde(borrow, default)]
    params: Option<Params<'a>>,
}

#[derive(Deserialize)]
struct Params<'a> {
    #[serde(borrow, default)]
    name: Option<&'a str>,
    #[serde(borrow, default)]
    arguments: Option<&'a RawValue>,
    #[serde(rename = "_meta", borrow, default)]
    meta: Option<Meta<'a>>,
}

#[derive(Deserialize)]
struct Meta<'a> {
    #[serde(rename = "progressToken", borrow, default)]
    progress_token: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct AddArgs {
    a: i64,
    b: i64,
}

#[derive(Serialize)]
struct Text<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}

#[derive(Serialize)]
struct ServerInfo {
    name: &'static str,
    version: &'static str,
}

#[derive(Serialize)]
struct ResultMeta {
    #[serde(rename = "io.modelcontextprotocol/serverInfo")]
    server_info: ServerInfo,
}

/// A `tools/call` result in sake's field order (sake leaves out `isError: false`).
#[derive(Serialize)]
struct CallResult<'a> {
    #[serde(rename = "resultType", skip_serializing_if = "Option::is_none")]
    result_type: Option<&'static str>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<ResultMeta>,
    content: [Text<'a>; 1],
}

#[derive(Serialize)]
struct Response200<'a, T> {
    jsonrpc: &'static str,
    id: &'a RawValue,
    result: T,
}

#[derive(Serialize)]
struct Progress<'a> {
    jsonrpc: &'static str,
    method: &'static str,
    params: ProgressParams<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ProgressParams<'a> {
    progress_token: &'a RawValue,
    progress: f64,
    total: f64,
}

fn call_result(modern: bool, text: &str) -> CallResult<'_> {
    CallResult {
        result_type: modern.then_some("complete"),
        meta: modern.then_some(ResultMeta {
            server_info: ServerInfo {
                name: "sake-bench",
                version: "0.1.0",
            },
        }),
        content: [Text { kind: "text", text }],
    }
}

fn json(status: StatusCode, body: Vec<u8>) -> Response {
    let mut resp = Response::new(Body::from(body));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

fn bad(message: &str) -> Response {
    json(
        StatusCode::BAD_REQUEST,
        format!(r#"{{"jsonrpc":"2.0","id":null,"error":{{"code":-32600,"message":"{message}"}}}}"#)
            .into_bytes(),
    )
}

fn sse_frame(message: &[u8]) -> Bytes {
    let mut b = Vec::with_capacity(message.len() + 8);
    b.extend_from_slice(b"data: ");
    b.extend_from_slice(message);
    b.extend_from_slice(b"\n\n");
    Bytes::from(b)
}

async fn mcp(State(list): State<Arc<Vec<u8>>>, headers: HeaderMap, body: Bytes) -> Response {
    let Ok(req) = serde_json::from_slice::<Request<'_>>(&body) else {
        return bad("parse error");
    };
    let modern = headers
        .get("mcp-protocol-version")
        .is_some_and(|v| v.as_bytes() == b"2026-07-28");
    let params = req.params.unwrap_or(Params {
        name: None,
        arguments: None,
        meta: None,
    });
    match (req.method, params.name) {
        ("tools/call", Some("add")) => {
            let Some(Ok(AddArgs { a, b })) = params
                .arguments
                .map(|a| serde_json::from_str::<AddArgs>(a.get()))
            else {
                return bad("bad arguments");
            };
            let text = (a + b).to_string();
            let body = serde_json::to_vec(&Response200 {
                jsonrpc: "2.0",
                id: req.id,
                result: call_result(modern, &text),
            })
            .unwrap_or_default();
            json(StatusCode::OK, body)
        }
        ("tools/call", Some("progress")) => {
            let result = serde_json::to_vec(&Response200 {
                jsonrpc: "2.0",
                id: req.id,
                result: call_result(modern, "done"),
            })
            .unwrap_or_default();
            let Some(token) = params.meta.and_then(|m| m.progress_token) else {
                return json(StatusCode::OK, result);
            };
            let mut frames = Vec::with_capacity(11);
            for i in 1..=10 {
                let msg = serde_json::to_vec(&Progress {
                    jsonrpc: "2.0",
                    method: "notifications/progress",
                    params: ProgressParams {
                        progress_token: token,
                        progress: f64::from(i),
                        total: 10.0,
                    },
                })
                .unwrap_or_default();
                frames.push(Ok::<_, Infallible>(sse_frame(&msg)));
            }
            frames.push(Ok(sse_frame(&result)));
            let mut resp = Response::new(Body::from_stream(futures_util::stream::iter(frames)));
            let h = resp.headers_mut();
            h.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/event-stream"),
            );
            h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
            h.insert("x-accel-buffering", HeaderValue::from_static("no"));
            resp
        }
        ("tools/list", _) => {
            let mut out = Vec::with_capacity(list.len() + 64);
            out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
            out.extend_from_slice(req.id.get().as_bytes());
            out.extend_from_slice(br#","result":"#);
            out.extend_from_slice(&list);
            out.push(b'}');
            json(StatusCode::OK, out)
        }
        _ => bad("only tools/call (add, progress) and tools/list"),
    }
}

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let port: u16 = std::env::args()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(3000);
    let list = match std::env::var_os("AXUM_TOOLS_LIST") {
        Some(path) => std::fs::read(&path).unwrap_or_else(|e| {
            eprintln!("cannot read AXUM_TOOLS_LIST {path:?}: {e}");
            std::process::exit(1)
        }),
        None => br#"{"tools":[]}"#.to_vec(),
    };
    let list = Arc::new(list);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async move {
        let app = Router::new().route("/mcp", post(mcp)).with_state(list);
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .expect("bind")
            .tap_io(|tcp| {
                let _ = tcp.set_nodelay(true);
            });
        axum::serve(listener, app).await.expect("serve");
    });
}
