//! HTTP in memory: [`Req`] builds requests (2026-07-28 ones with the right headers and `_meta`
//! by default, handshake-era ones, GET and DELETE), [`Wire`] sends them to a
//! [`sake::Service`]'s axum router (`tower::ServiceExt::oneshot`), so a test sees exactly the
//! status, headers and bytes a client would, and [`Reply`] parses the answer (one JSON body, or
//! SSE `data:` frames). [`Open`] and [`Stream`] read an answer as it arrives.
//!
//! Every JSON-RPC message a reply carries is validated against the official schema of the
//! revision under test ([`crate::schema`]) before a test can look at it.

use std::collections::HashMap;

use base64::Engine as _;
use http_body_util::BodyExt as _;
use serde_json::{Map, Value, json};
use tower::ServiceExt as _;

use crate::schema::validate;
use crate::session::Handshake;
use crate::sse::{SseEvent, parse_sse};

/// The revision the modern wire tests speak.
pub const MODERN: &str = "2026-07-28";

/// `_meta` keys of 2026-07-28 requests.
pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// The client capabilities key.
pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// The client info key.
pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// The server info key of result `_meta`.
pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// The `_meta` a well-behaved 2026-07-28 client sends: version, capabilities, client info.
pub fn meta() -> Value {
    json!({
        PROTOCOL_VERSION: MODERN,
        CLIENT_CAPABILITIES: {},
        CLIENT_INFO: {"name": "wire-tests", "version": "1.0.0"},
    })
}

/// `params` with the default [`meta`] merged under its `_meta` (keys already there win).
pub fn with_meta(params: Value) -> Value {
    let mut params = match params {
        Value::Object(m) => m,
        Value::Null => Map::new(),
        other => panic!("params must be an object, not {other}"),
    };
    let mut merged = match meta() {
        Value::Object(m) => m,
        _ => unreachable!(),
    };
    if let Some(Value::Object(given)) = params.remove("_meta") {
        merged.extend(given);
    }
    params.insert("_meta".into(), Value::Object(merged));
    Value::Object(params)
}

/// Encodes a header value as a 2026-07-28 client must: plain when it is visible ASCII with
/// interior spaces only and does not look like a sentinel, otherwise `=?base64?…?=`.
pub fn header_value(value: &str) -> String {
    let visible = value
        .bytes()
        .all(|b| b == b' ' || (0x21..=0x7e).contains(&b));
    let padded = value.starts_with(' ') || value.ends_with(' ');
    let looks_encoded = value.starts_with("=?base64?") && value.ends_with("?=");
    let plain = visible && !padded && !looks_encoded;
    if plain {
        value.to_owned()
    } else {
        sentinel(value.as_bytes())
    }
}

/// `=?base64?<standard padded Base64 of bytes>?=`.
pub fn sentinel(bytes: &[u8]) -> String {
    format!(
        "=?base64?{}?=",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    )
}

/// The param that `Mcp-Name` carries for a method, if any.
fn name_param(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        "tasks/get" | "tasks/update" | "tasks/cancel" => Some("taskId"),
        _ => None,
    }
}

/// One HTTP request, built up from sensible defaults.
#[derive(Clone, Debug)]
pub struct Req {
    pub(crate) method: http::Method,
    pub(crate) path: String,
    /// Lowercase name → raw value, in insertion order.
    pub(crate) headers: Vec<(String, Vec<u8>)>,
    pub(crate) body: Vec<u8>,
    /// What an authentication layer would have put on the request.
    extensions: http::Extensions,
}

impl Req {
    /// A POST of `body` with `Host: localhost`, `Content-Type: application/json` and the
    /// `Accept` a Streamable HTTP client sends; no MCP headers.
    pub fn post(body: impl Into<Vec<u8>>) -> Req {
        Req {
            method: http::Method::POST,
            path: "/mcp".into(),
            headers: Vec::new(),
            body: body.into(),
            extensions: http::Extensions::new(),
        }
        .header("host", "localhost")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
    }

    /// A 2026-07-28 request: `params` gets the default `_meta` merged in, and the headers
    /// `MCP-Protocol-Version`, `Mcp-Method` and (for named methods) `Mcp-Name` match it.
    pub fn modern(id: impl Into<Value>, method: &str, params: Value) -> Req {
        Req::modern_exact(id, method, with_meta(params))
    }

    /// A 2026-07-28 request whose `params` are sent exactly as given (no `_meta` added);
    /// the headers are derived from them as in [`Req::modern`].
    pub fn modern_exact(id: impl Into<Value>, method: &str, params: Value) -> Req {
        let body = json!({"jsonrpc": "2.0", "id": id.into(), "method": method, "params": params});
        Req::modern_body(method, &body)
    }

    /// A 2026-07-28 notification (no id), with the default `_meta` and headers.
    pub fn modern_notification(method: &str, params: Value) -> Req {
        let body = json!({"jsonrpc": "2.0", "method": method, "params": with_meta(params)});
        Req::modern_body(method, &body)
    }

    fn modern_body(method: &str, body: &Value) -> Req {
        let mut req = Req::post(serde_json::to_vec(body).unwrap())
            .header("mcp-protocol-version", MODERN)
            .header("mcp-method", method);
        if let Some(field) = name_param(method)
            && let Some(value) = body["params"][field].as_str()
        {
            req = req.header("mcp-name", &header_value(value));
        }
        req
    }

    /// A request of a handshake session: `Mcp-Session-Id`, and `MCP-Protocol-Version` from
    /// 2025-06-18 on.
    pub fn in_handshake(
        session: &Handshake,
        id: impl Into<Value>,
        method: &str,
        params: Value,
    ) -> Req {
        let body = json!({"jsonrpc": "2.0", "id": id.into(), "method": method, "params": params});
        Req::in_session(session, serde_json::to_vec(&body).unwrap())
    }

    /// A POST of `body` in a handshake session.
    pub fn in_session(session: &Handshake, body: impl Into<Vec<u8>>) -> Req {
        let req = Req::post(body).header("mcp-session-id", &session.id);
        if session.revision == "2025-03-26" {
            req
        } else {
            req.header("mcp-protocol-version", session.revision)
        }
    }

    /// Adds a header line, keeping any of the same name (a repeated header).
    pub fn append_header(mut self, name: &str, value: &[u8]) -> Req {
        self.headers
            .push((name.to_ascii_lowercase(), value.to_vec()));
        self
    }

    /// Puts a value in the request's extensions (where an auth layer puts the caller).
    pub fn extension<T: Clone + Send + Sync + 'static>(mut self, value: T) -> Req {
        self.extensions.insert(value);
        self
    }

    /// Sets a header (replacing any of the same name, compared case-insensitively).
    pub fn header(self, name: &str, value: &str) -> Req {
        self.header_bytes(name, value.as_bytes())
    }

    /// Sets a header to raw bytes.
    pub fn header_bytes(mut self, name: &str, value: &[u8]) -> Req {
        let lower = name.to_ascii_lowercase();
        self.headers.retain(|(n, _)| *n != lower);
        self.headers.push((lower, value.to_vec()));
        self
    }

    /// Removes a header.
    pub fn without(mut self, name: &str) -> Req {
        let lower = name.to_ascii_lowercase();
        self.headers.retain(|(n, _)| *n != lower);
        self
    }

    /// Replaces the body.
    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Req {
        self.body = body.into();
        self
    }

    /// Replaces the HTTP method.
    pub fn http_method(mut self, method: http::Method) -> Req {
        self.method = method;
        self
    }

    /// A header's value, if set.
    pub fn header_str(&self, name: &str) -> Option<&str> {
        let lower = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == lower)
            .and_then(|(_, v)| std::str::from_utf8(v).ok())
    }

    /// The body's length in bytes.
    pub fn body_len(&self) -> usize {
        self.body.len()
    }

    /// The body as JSON, when it is.
    pub fn body_json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }

    /// The body's bytes.
    pub fn body_bytes(&self) -> &[u8] {
        &self.body
    }

    /// The request as raw HTTP/1.1 bytes, for a real socket (`Content-Length` added).
    pub fn to_http1(&self) -> Vec<u8> {
        let mut out = format!("{} {} HTTP/1.1\r\n", self.method, self.path).into_bytes();
        for (name, value) in &self.headers {
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(value);
            out.extend_from_slice(b"\r\n");
        }
        if !self.headers.iter().any(|(n, _)| n == "content-length") {
            out.extend_from_slice(format!("content-length: {}\r\n", self.body.len()).as_bytes());
        }
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&self.body);
        out
    }

    /// The request as an in-process caller hands it to the router.
    pub fn build(self) -> http::Request<axum::body::Body> {
        let mut req = http::Request::builder()
            .method(self.method)
            .uri(self.path)
            .body(axum::body::Body::from(self.body))
            .unwrap();
        *req.extensions_mut() = self.extensions;
        for (name, value) in self.headers {
            req.headers_mut().append(
                http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                http::HeaderValue::from_bytes(&value).unwrap(),
            );
        }
        req
    }

    /// A handshake-era POST of a JSON-RPC message: no MCP headers, no `_meta`.
    pub fn legacy(body: Value) -> Req {
        Req::post(serde_json::to_vec(&body).unwrap())
    }

    /// A GET of the endpoint asking for an event stream.
    pub fn get() -> Req {
        Req::post(Vec::new())
            .http_method(http::Method::GET)
            .without("content-type")
            .header("accept", "text/event-stream")
    }

    /// The same request to another path (`/mcp/server-card`).
    pub fn path(mut self, path: &str) -> Req {
        self.path = path.to_owned();
        self
    }

    /// A DELETE of the endpoint.
    pub fn delete() -> Req {
        Req::post(Vec::new())
            .http_method(http::Method::DELETE)
            .without("content-type")
            .without("accept")
    }
}

/// The server's answer, validated against the schema before a test sees it.
#[derive(Debug)]
pub struct Reply {
    /// The HTTP status.
    pub status: u16,
    /// The response headers.
    pub headers: http::HeaderMap,
    /// The raw body.
    pub body: Vec<u8>,
    /// The SSE events, when the body is an event stream.
    pub events: Vec<SseEvent>,
    /// Every JSON-RPC message in the body, in order.
    pub messages: Vec<Value>,
}

impl Reply {
    /// The `Content-Type`, if any.
    pub fn content_type(&self) -> Option<&str> {
        self.headers
            .get(http::header::CONTENT_TYPE)
            .map(|v| v.to_str().unwrap())
    }

    /// A header's value as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }

    /// Asserts a plain JSON answer with this status and returns its one message.
    pub fn json(&self, status: u16) -> &Value {
        assert_eq!(
            (self.status, self.content_type()),
            (status, Some("application/json")),
            "body: {}",
            String::from_utf8_lossy(&self.body)
        );
        assert_eq!(self.messages.len(), 1);
        &self.messages[0]
    }

    /// Asserts a plain JSON answer with this status whose body is exactly `expected`.
    #[track_caller]
    pub fn assert_json(&self, status: u16, expected: Value) {
        assert_eq!(
            (self.status, self.content_type()),
            (status, Some("application/json")),
            "body: {}",
            String::from_utf8_lossy(&self.body)
        );
        assert_eq!(self.messages.len(), 1);
        assert!(
            self.messages[0] == expected,
            "reply differs\n got: {}\nwant: {}",
            self.messages[0],
            expected
        );
    }

    /// Asserts an SSE answer (200, `text/event-stream`, `X-Accel-Buffering: no`) and returns
    /// its messages.
    pub fn sse(&self) -> &[Value] {
        assert_eq!(
            (self.status, self.content_type()),
            (200, Some("text/event-stream")),
            "body: {}",
            String::from_utf8_lossy(&self.body)
        );
        assert_eq!(self.header("x-accel-buffering"), Some("no"));
        &self.messages
    }

    /// Asserts a JSON array answer (a 2025-03-26 batch) with this status whose items are
    /// exactly `expected`.
    #[track_caller]
    pub fn assert_batch(&self, status: u16, expected: Value) {
        assert_eq!(
            (self.status, self.content_type()),
            (status, Some("application/json")),
            "body: {}",
            String::from_utf8_lossy(&self.body)
        );
        let got: Value = serde_json::from_slice(&self.body).unwrap();
        assert!(got.is_array(), "not a batch answer: {got}");
        assert!(
            got == expected,
            "batch differs\n got: {got}\nwant: {expected}"
        );
    }

    /// The `Mcp-Session-Id` header, if any.
    pub fn session_id(&self) -> Option<&str> {
        self.header("mcp-session-id")
    }

    /// Validates every message against `revision`'s schema, results as answers to the
    /// requests of `req` they carry the id of.
    pub fn validate(&self, revision: &str, req: &Req) {
        let methods = request_methods(req);
        for m in &self.messages {
            validate(revision, methods.method_of(m), m);
        }
    }

    /// Asserts an empty `202 Accepted`.
    pub fn assert_accepted(&self) {
        assert_eq!(
            self.status,
            202,
            "body: {}",
            String::from_utf8_lossy(&self.body)
        );
        assert!(self.body.is_empty(), "202 with a body");
        assert_eq!(self.content_type(), None);
    }
}

/// A response whose body is read a message at a time.
#[derive(Debug)]
pub struct Open {
    /// The HTTP status.
    pub status: u16,
    /// The response headers.
    pub headers: http::HeaderMap,
    body: axum::body::Body,
    pending: String,
    revision: &'static str,
    request_method: Option<String>,
}

impl Open {
    /// The `Content-Type`, if any.
    pub fn content_type(&self) -> Option<&str> {
        self.headers
            .get(http::header::CONTENT_TYPE)
            .map(|v| v.to_str().unwrap())
    }

    /// Validates results as answers to `method` (a resumed stream's request is not in its
    /// GET).
    pub fn answering(mut self, method: &str) -> Open {
        self.request_method = Some(method.to_owned());
        self
    }

    /// The next SSE event with data, validated; `None` when the stream ends first.
    pub async fn next_event(&mut self) -> Option<SseEvent> {
        loop {
            if let Some(end) = self.pending.find("\n\n") {
                let block: String = self.pending.drain(..end + 2).collect();
                if let Some(ev) = parse_sse(&block).into_iter().next()
                    && ev.data.as_deref().is_some_and(|d| !d.is_empty())
                {
                    return Some(ev);
                }
                continue;
            }
            let frame = self.body.frame().await?.expect("the body does not fail");
            if let Ok(data) = frame.into_data() {
                self.pending
                    .push_str(std::str::from_utf8(&data).expect("SSE is UTF-8"));
            }
        }
    }

    /// The next JSON-RPC message of an SSE stream, validated against the schema.
    pub async fn next_message(&mut self) -> Option<Value> {
        let ev = self.next_event().await?;
        let m: Value = serde_json::from_str(ev.data.as_deref().unwrap()).unwrap();
        validate(self.revision, self.request_method.as_deref(), &m);
        Some(m)
    }

    /// The whole remaining body, for a response that is not a stream.
    pub async fn rest(self) -> Vec<u8> {
        let mut out = self.pending.into_bytes();
        out.extend_from_slice(&self.body.collect().await.unwrap().to_bytes());
        out
    }
}

/// A server under test, reached in memory.
#[derive(Debug)]
pub struct Wire {
    service: sake::Service,
    revision: &'static str,
}

impl Wire {
    /// Builds the server; replies are validated against the 2026-07-28 schema.
    pub fn new(server: sake::Server) -> Wire {
        Wire {
            service: server.build().expect("the test server builds"),
            revision: MODERN,
        }
    }

    /// Validates replies against another revision's schema.
    pub fn revision(mut self, revision: &'static str) -> Wire {
        self.revision = revision;
        self
    }

    /// The built service.
    pub fn service(&self) -> &sake::Service {
        &self.service
    }

    /// Sends one request and returns the reply, validated against the wire's revision.
    pub async fn send(&self, req: Req) -> Reply {
        self.send_as(self.revision, req).await
    }

    /// Sends one request and returns the reply, validated against `revision`'s schema.
    pub async fn send_as(&self, revision: &str, req: Req) -> Reply {
        let reply = self.send_unchecked(req.clone()).await;
        reply.validate(revision, &req);
        reply
    }

    /// Sends a request that is not MCP (a server card, a well-known document) and returns the
    /// reply as it came: status, headers, body; no message is parsed.
    pub async fn send_plain(&self, req: Req) -> Reply {
        let response = self
            .service
            .router()
            .oneshot(req.build())
            .await
            .expect("the router is infallible");
        let (parts, body) = response.into_parts();
        let body = body.collect().await.unwrap().to_bytes().to_vec();
        Reply {
            status: parts.status.as_u16(),
            headers: parts.headers,
            body,
            events: Vec::new(),
            messages: Vec::new(),
        }
    }

    /// Sends one request and returns the reply without validating it (the caller must call
    /// [`Reply::validate`] once it knows the revision).
    pub async fn send_unchecked(&self, req: Req) -> Reply {
        let response = self
            .service
            .router()
            .oneshot(req.build())
            .await
            .expect("the router is infallible");
        let (parts, body) = response.into_parts();
        // A reply that never ends (a stream a test did not mean to open) fails, not hangs.
        let body = tokio::time::timeout(std::time::Duration::from_secs(30), body.collect())
            .await
            .expect("the reply ends within 30 s; read streams with Wire::open")
            .unwrap()
            .to_bytes()
            .to_vec();
        let ct = parts
            .headers
            .get(http::header::CONTENT_TYPE)
            .map(|v| v.to_str().unwrap().to_owned());
        let (events, messages) = match ct.as_deref() {
            Some("text/event-stream") => {
                let events = parse_sse(std::str::from_utf8(&body).expect("SSE is UTF-8"));
                let messages = events
                    .iter()
                    .filter_map(SseEvent::message)
                    .flat_map(batch_items)
                    .collect();
                (events, messages)
            }
            // A 2025-03-26 batch is answered with one array of responses.
            Some(ct) if ct.starts_with("application/json") => (
                Vec::new(),
                batch_items(serde_json::from_slice(&body).expect("a JSON body")),
            ),
            None => {
                assert!(body.is_empty(), "a body without Content-Type");
                (Vec::new(), Vec::new())
            }
            Some(other) => panic!("unexpected Content-Type {other}"),
        };
        Reply {
            status: parts.status.as_u16(),
            headers: parts.headers,
            body,
            events,
            messages,
        }
    }

    /// Starts an exchange whose SSE body is read event by event, as it arrives; each message
    /// is validated against `revision` (a result as the answer to the request it answers).
    pub async fn open_as(&self, revision: &str, req: Req) -> Stream {
        let methods = request_methods(&req);
        let response = self
            .service
            .router()
            .oneshot(req.build())
            .await
            .expect("the router is infallible");
        let (parts, mut body) = response.into_parts();
        let (tx, chunks) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
        // Reads the body like a client would, until it ends or the test drops the stream.
        tokio::spawn(async move {
            while let Some(frame) = body.frame().await {
                let Ok(data) = frame.expect("the body does not fail").into_data() else {
                    continue;
                };
                if tx.send(data.to_vec()).is_err() {
                    break;
                }
            }
        });
        Stream {
            status: parts.status.as_u16(),
            headers: parts.headers,
            revision: revision.to_owned(),
            methods,
            chunks,
            buf: String::new(),
        }
    }

    /// Sends a request and returns as soon as the response head arrives: for streams that
    /// do not end (`subscriptions/listen`, GET streams) or that a test drops half-way.
    pub async fn open_raw(&self, req: Req) -> Open {
        let revision = self.revision;
        let request_method = req
            .body_json()
            .and_then(|b| b.get("method").and_then(Value::as_str).map(str::to_owned));
        let response = self
            .service
            .router()
            .oneshot(req.build())
            .await
            .expect("the router is infallible");
        let (parts, body) = response.into_parts();
        Open {
            status: parts.status.as_u16(),
            headers: parts.headers,
            body,
            pending: String::new(),
            revision,
            request_method,
        }
    }

    /// [`Wire::open_raw`], validating messages against `revision`'s schema.
    pub async fn open_raw_as(&self, revision: &'static str, req: Req) -> Open {
        let mut open = self.open_raw(req).await;
        open.revision = revision;
        open
    }

    /// Sends a 2026-07-28 request with default `_meta` and headers.
    pub async fn rpc(&self, id: impl Into<Value>, method: &str, params: Value) -> Reply {
        self.send(Req::modern(id, method, params)).await
    }
}

/// The messages of a batch (a 2025-03-26 array), or the one message.
fn batch_items(message: Value) -> Vec<Value> {
    match message {
        Value::Array(items) => items,
        one => vec![one],
    }
}

/// The methods of the requests a body carries, by id: what each result answers.
#[derive(Clone, Debug, Default)]
pub struct Methods {
    by_id: HashMap<String, String>,
    /// The method of a body holding one request (what an error without an id answers), or
    /// the one a resumed stream's result answers.
    only: Option<String>,
}

impl Methods {
    /// The method `message` answers, if it is a response to one of these requests.
    pub fn method_of(&self, message: &Value) -> Option<&str> {
        if message.get("method").is_some() {
            return None;
        }
        message
            .get("id")
            .and_then(|id| self.by_id.get(&id.to_string()))
            .or(self.only.as_ref())
            .map(String::as_str)
    }

    /// Results without a request of this body answer `method` (a resumed stream).
    pub fn answering(mut self, method: &str) -> Methods {
        self.only = Some(method.to_owned());
        self
    }
}

/// The requests in a body (one object or a batch array).
pub fn request_methods(req: &Req) -> Methods {
    let mut methods = Methods::default();
    let items = match req.body_json() {
        Some(Value::Array(items)) => items,
        Some(one @ Value::Object(_)) => vec![one],
        _ => Vec::new(),
    };
    let single = items.len() == 1;
    for item in items {
        if let (Some(id), Some(method)) =
            (item.get("id"), item.get("method").and_then(Value::as_str))
        {
            methods.by_id.insert(id.to_string(), method.to_owned());
            if single {
                methods.only = Some(method.to_owned());
            }
        }
    }
    methods
}

// ---------------------------------------------------------------------------------------------
// Streams read as they arrive

/// An answer whose SSE body is read event by event while the exchange goes on: server
/// requests to answer, a call to cancel, a standalone GET stream, a resumed stream.
#[derive(Debug)]
pub struct Stream {
    /// The HTTP status.
    pub status: u16,
    /// The response headers.
    pub headers: http::HeaderMap,
    revision: String,
    methods: Methods,
    chunks: tokio::sync::mpsc::UnboundedReceiver<Vec<u8>>,
    buf: String,
}

/// How long a test waits for the next event before failing.
pub const EVENT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

impl Stream {
    /// A header's value as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }

    /// Asserts a 200 `text/event-stream` answer with `X-Accel-Buffering: no`.
    #[track_caller]
    pub fn assert_sse(&self) {
        assert_eq!(
            (
                self.status,
                self.header("content-type"),
                self.header("x-accel-buffering")
            ),
            (200, Some("text/event-stream"), Some("no"))
        );
    }

    /// Results on this stream that answer no request of the body answer `method`.
    pub fn answering(mut self, method: &str) -> Stream {
        self.methods = self.methods.answering(method);
        self
    }

    /// The next SSE event (comments skipped), or `None` when the body ended. Fails the test
    /// after [`EVENT_TIMEOUT`] without one.
    pub async fn next_event(&mut self) -> Option<SseEvent> {
        tokio::time::timeout(EVENT_TIMEOUT, self.read_event())
            .await
            .unwrap_or_else(|_| panic!("no SSE event within {EVENT_TIMEOUT:?}"))
    }

    async fn read_event(&mut self) -> Option<SseEvent> {
        loop {
            if let Some(end) = self.buf.find("\n\n") {
                let block: String = self.buf.drain(..end + 2).collect();
                if let Some(ev) = parse_sse(&block).into_iter().next() {
                    for m in ev.message().into_iter().flat_map(batch_items) {
                        validate(&self.revision, self.methods.method_of(&m), &m);
                    }
                    return Some(ev);
                }
                continue;
            }
            match self.chunks.recv().await {
                Some(chunk) => self
                    .buf
                    .push_str(std::str::from_utf8(&chunk).expect("SSE is UTF-8")),
                None => {
                    assert!(
                        self.buf.trim().is_empty(),
                        "the stream ended inside an event: {:?}",
                        self.buf
                    );
                    return None;
                }
            }
        }
    }

    /// The next JSON-RPC message (events without one, such as a priming event, skipped),
    /// validated; fails the test if the stream ends first.
    pub async fn message(&mut self) -> Value {
        loop {
            let ev = self
                .next_event()
                .await
                .expect("the stream ended before the next message");
            if let Some(m) = ev.message() {
                return m;
            }
        }
    }

    /// Every remaining event, until the body ends.
    pub async fn rest_events(&mut self) -> Vec<SseEvent> {
        let mut out = Vec::new();
        while let Some(ev) = self.next_event().await {
            out.push(ev);
        }
        out
    }

    /// Every remaining JSON-RPC message, until the body ends.
    pub async fn rest(&mut self) -> Vec<Value> {
        self.rest_events()
            .await
            .iter()
            .filter_map(SseEvent::message)
            .collect()
    }

    /// Asserts that nothing arrives within `wait` (the stream stays open and silent).
    pub async fn assert_silent(&mut self, wait: std::time::Duration) {
        if let Ok(ev) = tokio::time::timeout(wait, self.read_event()).await {
            panic!("expected silence, got {ev:?}");
        }
    }
}
