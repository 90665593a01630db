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
//!
//! With `AXUM_BENCH_AUTH_SECRET` set (the "auth" workload), a middleware first checks the
//! request's bearer token with `jsonwebtoken`, as an axum service would: an HS256 JWT of that
//! secret, its issuer, its audience (this endpoint) and its expiry, on every request; the
//! claims go into the request's extensions; anything else is answered 401.
//! Usage: `axum-server <port>`.

use std::convert::Infallible;
use std::sync::Arc;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::post;
use axum::serve::ListenerExt as _;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

#[path = "../../alloc_count.rs"]
mod alloc_count;

/// Counts allocations when `BENCH_COUNT_ALLOCS=1` (the "allocs" workload).
#[global_allocator]
static ALLOC: alloc_count::Counting = alloc_count::Counting;

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

/// What the middleware checks tokens with.
struct Jwt {
    key: jsonwebtoken::DecodingKey,
    validation: jsonwebtoken::Validation,
}

/// The claims a handler could read (`Extension<Claims>`).
#[derive(Deserialize, Clone)]
#[allow(dead_code)]
struct Claims {
    sub: String,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    client_id: Option<String>,
}

/// The issuer `sake-bench` signs for (benches/load/src/auth.rs).
const ISSUER: &str = "https://issuer.sake-bench.invalid";

async fn require_jwt(
    State(jwt): State<Arc<Jwt>>,
    mut request: axum::extract::Request,
    next: Next,
) -> Response {
    let token = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    match token.map(|t| jsonwebtoken::decode::<Claims>(t, &jwt.key, &jwt.validation)) {
        Some(Ok(data)) => {
            request.extensions_mut().insert(data.claims);
            next.run(request).await
        }
        _ => {
            let mut resp = Response::new(Body::empty());
            *resp.status_mut() = StatusCode::UNAUTHORIZED;
            resp.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer error=\"invalid_token\""),
            );
            resp
        }
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
        alloc_count::start();
        let mut app = Router::new().route("/mcp", post(mcp)).with_state(list);
        if let Ok(secret) = std::env::var("AXUM_BENCH_AUTH_SECRET") {
            let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::HS256);
            validation.set_issuer(&[ISSUER]);
            validation.set_audience(&[format!("http://127.0.0.1:{port}/mcp")]);
            validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
            let jwt = Arc::new(Jwt {
                key: jsonwebtoken::DecodingKey::from_secret(secret.as_bytes())
                    .expect("an HMAC key of any length"),
                validation,
            });
            app = app.route_layer(middleware::from_fn_with_state(jwt, require_jwt));
        }
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
            .await
            .expect("bind")
            .tap_io(|tcp| {
                let _ = tcp.set_nodelay(true);
            });
        axum::serve(listener, app).await.expect("serve");
    });
}
