//! The wire-test harness shared by `tests/wire_*.rs`.
//!
//! A [`Wire`] builds a [`sake::Service`]'s axum router and sends raw HTTP requests to it in
//! memory (`tower::ServiceExt::oneshot`), so a test sees exactly the status, headers and
//! bytes a client would. [`Req`] builds requests (2026-07-28 ones with the right headers and
//! `_meta` by default); [`Reply`] parses the answer (one JSON body, or SSE `data:` frames).
//!
//! Every JSON-RPC message the server sends is checked against the official schema of the
//! revision under test (`tests/spec/<revision>/schema.json`): the response envelope, the
//! result definition of the method that was called (`tools/list` → `ListToolsResult`, …),
//! the error definition of the code where the schema has one (`-32020` →
//! `HeaderMismatchError`, …), and each notification's definition. A test cannot look at a
//! reply without it having been validated.

#![allow(dead_code)] // Each test binary uses a different part of the harness.

pub mod rpc;
pub mod stream;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use base64::Engine as _;
use http_body_util::BodyExt as _;
use serde_json::{Map, Value, json};
use tower::ServiceExt as _;

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
    method: http::Method,
    path: String,
    /// Lowercase name → raw value, in insertion order.
    headers: Vec<(String, Vec<u8>)>,
    body: Vec<u8>,
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

    fn build(self) -> http::Request<axum::body::Body> {
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
}

/// One SSE event.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SseEvent {
    /// The joined `data:` lines, if any.
    pub data: Option<String>,
    /// Every other field (`event`, `id`, `retry`), in order.
    pub fields: Vec<(String, String)>,
}

impl SseEvent {
    /// The JSON-RPC message the event carries; `None` for an event without data or with
    /// empty data (a 2025-11-25 priming event).
    pub fn message(&self) -> Option<Value> {
        match self.data.as_deref() {
            None | Some("") => None,
            Some(data) => {
                Some(serde_json::from_str(data).expect("every data: frame is one JSON value"))
            }
        }
    }

    /// A field's value (`id`, `retry`, `event`).
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
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

/// Splits an SSE body into events (blank-line separated; `data:` lines joined by `\n`;
/// comments dropped).
pub fn parse_sse(body: &str) -> Vec<SseEvent> {
    let body = body.replace("\r\n", "\n").replace('\r', "\n");
    let mut events = Vec::new();
    for block in body.split("\n\n") {
        let mut ev = SseEvent::default();
        let mut data: Vec<&str> = Vec::new();
        for line in block.lines() {
            if line.is_empty() || line.starts_with(':') {
                continue;
            }
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            if field == "data" {
                data.push(value);
            } else {
                ev.fields.push((field.to_owned(), value.to_owned()));
            }
        }
        if !data.is_empty() {
            ev.data = Some(data.join("\n"));
        }
        if ev != SseEvent::default() {
            events.push(ev);
        }
    }
    events
}

/// A handshake session: its id and revision.
#[derive(Clone, Debug)]
pub struct Handshake {
    /// The `Mcp-Session-Id`.
    pub id: String,
    /// The negotiated revision.
    pub revision: &'static str,
}

/// A response whose body is read a message at a time.
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

    /// Opens a handshake session at `revision` with the given client capabilities, and
    /// sends `notifications/initialized`.
    pub async fn handshake(&self, revision: &'static str, capabilities: Value) -> Handshake {
        self.handshake_with(revision, capabilities, |r| r).await
    }

    /// [`Wire::handshake`] with a hook on the requests (extensions, headers).
    pub async fn handshake_with(
        &self,
        revision: &'static str,
        capabilities: Value,
        hook: impl Fn(Req) -> Req,
    ) -> Handshake {
        let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": revision,
            "capabilities": capabilities,
            "clientInfo": {"name": "wire-tests", "version": "1.0.0"},
        }});
        let reply = self
            .send_as(
                revision,
                hook(Req::post(serde_json::to_vec(&body).unwrap())),
            )
            .await;
        assert_eq!(reply.json(200)["result"]["protocolVersion"], revision);
        let session = Handshake {
            id: reply
                .header("mcp-session-id")
                .expect("a session id")
                .to_owned(),
            revision,
        };
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        self.send_as(
            revision,
            hook(Req::in_session(
                &session,
                serde_json::to_vec(&initialized).unwrap(),
            )),
        )
        .await
        .assert_accepted();
        session
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

// ---------------------------------------------------------------------------------------------
// Handshake revisions (2025-11-25, 2025-06-18, 2025-03-26)

/// The handshake revisions, newest first.
pub const LEGACY: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];

/// The revision string a server negotiated, as one of the served ones.
pub fn served(revision: &str) -> &'static str {
    LEGACY
        .into_iter()
        .find(|r| *r == revision)
        .unwrap_or_else(|| panic!("the server negotiated {revision:?}, which it does not serve"))
}

/// `initialize` params offering `version` with client `capabilities`.
pub fn initialize_params(version: &str, capabilities: Value) -> Value {
    json!({
        "protocolVersion": version,
        "capabilities": capabilities,
        "clientInfo": {"name": "wire-tests", "version": "1.0.0"},
    })
}

impl Req {
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

    /// A DELETE of the endpoint.
    pub fn delete() -> Req {
        Req::post(Vec::new())
            .http_method(http::Method::DELETE)
            .without("content-type")
            .without("accept")
    }
}

/// A handshake session: its id and revision, and requests that carry them.
#[derive(Clone)]
pub struct Session<'w> {
    /// The server.
    pub wire: &'w Wire,
    /// The `Mcp-Session-Id`.
    pub id: String,
    /// The negotiated revision: replies are validated against its schema.
    pub revision: &'static str,
}

impl Wire {
    /// `initialize` offering `version` with client `capabilities`. Returns the reply,
    /// validated against the revision the server chose, and the session it opened.
    pub async fn initialize(&self, version: &str, capabilities: Value) -> (Reply, Session<'_>) {
        let req = Req::legacy(json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": initialize_params(version, capabilities),
        }));
        let reply = self.send_unchecked(req.clone()).await;
        let result = &reply.json(200)["result"];
        let revision = served(result["protocolVersion"].as_str().expect("protocolVersion"));
        reply.validate(revision, &req);
        let id = reply
            .session_id()
            .expect("the InitializeResult carries Mcp-Session-Id")
            .to_owned();
        (
            reply,
            Session {
                wire: self,
                id,
                revision,
            },
        )
    }

    /// A session at `version` (which must be served) with `capabilities`, after
    /// `notifications/initialized`.
    pub async fn session(&self, version: &str, capabilities: Value) -> Session<'_> {
        let (_, session) = self.initialize(version, capabilities).await;
        assert_eq!(
            session.revision, version,
            "the server negotiated another revision"
        );
        session
            .notify("notifications/initialized", Value::Null)
            .await
            .assert_accepted();
        session
    }
}

impl<'w> Session<'w> {
    /// The same session under another id (a re-minted one).
    pub fn with_id(&self, id: &str) -> Session<'w> {
        Session {
            id: id.to_owned(),
            ..self.clone()
        }
    }

    /// Adds this session's `Mcp-Session-Id` and `MCP-Protocol-Version` to a request.
    pub fn headers(&self, req: Req) -> Req {
        req.header("mcp-session-id", &self.id)
            .header("mcp-protocol-version", self.revision)
    }

    /// A POST of `body` inside the session.
    pub fn post(&self, body: Value) -> Req {
        self.headers(Req::legacy(body))
    }

    /// A request inside the session; `params` null means none.
    pub fn request(&self, id: impl Into<Value>, method: &str, params: Value) -> Req {
        let mut body = json!({"jsonrpc": "2.0", "id": id.into(), "method": method});
        if !params.is_null() {
            body["params"] = params;
        }
        self.post(body)
    }

    /// Sends a request of the session, validated against its revision.
    pub async fn send(&self, req: Req) -> Reply {
        self.wire.send_as(self.revision, req).await
    }

    /// Sends a request inside the session and returns the validated reply.
    pub async fn rpc(&self, id: impl Into<Value>, method: &str, params: Value) -> Reply {
        self.send(self.request(id, method, params)).await
    }

    /// Calls a tool and returns the validated reply.
    pub async fn call(&self, id: impl Into<Value>, name: &str, arguments: Value) -> Reply {
        self.rpc(
            id,
            "tools/call",
            json!({"name": name, "arguments": arguments}),
        )
        .await
    }

    /// Calls a tool and reads the answer as it streams.
    pub async fn call_streaming(
        &self,
        id: impl Into<Value>,
        name: &str,
        arguments: Value,
    ) -> Stream {
        self.open(self.request(
            id,
            "tools/call",
            json!({"name": name, "arguments": arguments}),
        ))
        .await
    }

    /// Sends a notification inside the session.
    pub async fn notify(&self, method: &str, params: Value) -> Reply {
        let mut body = json!({"jsonrpc": "2.0", "method": method});
        if !params.is_null() {
            body["params"] = params;
        }
        self.send(self.post(body)).await
    }

    /// POSTs the client's answer to a server request.
    pub async fn answer(&self, id: &Value, result: Value) -> Reply {
        self.send(self.post(json!({"jsonrpc": "2.0", "id": id, "result": result})))
            .await
    }

    /// Starts a streaming exchange inside the session.
    pub async fn open(&self, req: Req) -> Stream {
        self.wire.open_as(self.revision, req).await
    }

    /// Opens the session's standalone GET stream.
    pub async fn get(&self) -> Stream {
        let stream = self.open(self.headers(Req::get())).await;
        stream.assert_sse();
        stream
    }

    /// Resumes a response stream after `last_event_id`; results answer `method`.
    pub async fn resume(&self, last_event_id: &str, method: &str) -> Stream {
        let stream = self
            .open(
                self.headers(Req::get())
                    .header("last-event-id", last_event_id),
            )
            .await
            .answering(method);
        stream.assert_sse();
        stream
    }

    /// DELETEs the session.
    pub async fn delete(&self) -> Reply {
        self.send(self.headers(Req::delete())).await
    }
}

// ---------------------------------------------------------------------------------------------
// Schema validation

/// One revision's schema and what it says about messages.
struct Schema {
    root: Value,
    /// `properties.method.const` → definition name, for requests and notifications.
    by_method: HashMap<String, String>,
    /// `error.code` const → definition of the whole error response.
    by_code: HashMap<i64, String>,
    /// `code` const → definition of the error object (`ParseError`, `InvalidParamsError`, …).
    by_error_code: HashMap<i64, String>,
    validators: Mutex<HashMap<String, Arc<jsonschema::Validator>>>,
}

impl Schema {
    fn load(revision: &str) -> Schema {
        let path = format!(
            "{}/tests/spec/{revision}/schema.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let root: Value = serde_json::from_str(&text).unwrap();
        let mut by_method = HashMap::new();
        let mut by_code = HashMap::new();
        let mut by_error_code = HashMap::new();
        for (name, def) in Schema::defs_of(&root) {
            if let Some(m) = def
                .pointer("/properties/method/const")
                .and_then(Value::as_str)
            {
                by_method.insert(m.to_owned(), name.clone());
            }
            if let Some(c) = def
                .pointer("/properties/code/const")
                .and_then(Value::as_i64)
            {
                by_error_code.insert(c, name.clone());
            }
            if let Some(all) = def
                .pointer("/properties/error/allOf")
                .and_then(Value::as_array)
            {
                for part in all {
                    if let Some(c) = part
                        .pointer("/properties/code/const")
                        .and_then(Value::as_i64)
                    {
                        by_code.insert(c, name.clone());
                    }
                }
            }
        }
        Schema {
            root,
            by_method,
            by_code,
            by_error_code,
            validators: Mutex::new(HashMap::new()),
        }
    }

    fn defs_key(root: &Value) -> &'static str {
        if root.get("$defs").is_some() {
            "$defs"
        } else {
            "definitions"
        }
    }

    fn defs_of(root: &Value) -> &Map<String, Value> {
        root[Schema::defs_key(root)].as_object().unwrap()
    }

    /// Whether a definition lists `id` as required.
    fn requires_id(&self, def: &str) -> bool {
        Schema::defs_of(&self.root)[def]["required"]
            .as_array()
            .is_some_and(|r| r.iter().any(|k| k == "id"))
    }

    fn has(&self, def: &str) -> bool {
        Schema::defs_of(&self.root).contains_key(def)
    }

    /// The compiled validator of one definition, compiled on first use.
    fn validator(&self, def: &str) -> Arc<jsonschema::Validator> {
        let mut cache = self.validators.lock().unwrap();
        if let Some(v) = cache.get(def) {
            return v.clone();
        }
        assert!(self.has(def), "the schema has no definition {def}");
        let key = Schema::defs_key(&self.root);
        let wrapper = json!({
            "$schema": self.root["$schema"],
            "$ref": format!("#/{key}/{def}"),
            key: self.root[key],
        });
        let v = Arc::new(
            jsonschema::options()
                .should_validate_formats(true)
                .build(&wrapper)
                .unwrap_or_else(|e| panic!("compiling {def}: {e}")),
        );
        cache.insert(def.to_owned(), v.clone());
        v
    }

    fn check(&self, revision: &str, def: &str, instance: &Value, message: &Value) {
        let v = self.validator(def);
        let errors: Vec<String> = v
            .iter_errors(instance)
            .map(|e| format!("  {}: {e}", e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "message violates {def} of the {revision} schema:\n{}\nmessage: {message}",
            errors.join("\n")
        );
    }
}

fn schema(revision: &str) -> &'static Schema {
    static SCHEMAS: OnceLock<Mutex<HashMap<String, &'static Schema>>> = OnceLock::new();
    let mut map = SCHEMAS.get_or_init(Default::default).lock().unwrap();
    map.entry(revision.to_owned())
        .or_insert_with(|| Box::leak(Box::new(Schema::load(revision))))
}

/// The schema of the tasks extension (`tests/spec/ext-tasks/schema.json`): its messages are
/// not in the revision's.
pub const TASKS_EXT: &str = "ext-tasks";

/// Validates a message of the tasks extension (2026-07-28): `notifications/tasks`, a
/// `CreateTaskResult` (`resultType: "task"`), the results of `tasks/get`, `tasks/update` and
/// `tasks/cancel` — the envelope against the revision's schema, the rest against the
/// extension's. `false` for any other message.
fn validate_task_message(request_method: Option<&str>, message: &Value) -> bool {
    let core = schema(MODERN);
    let ext = schema(TASKS_EXT);
    if message.get("method").and_then(Value::as_str) == Some("notifications/tasks") {
        core.check(MODERN, "JSONRPCNotification", message, message);
        ext.check(TASKS_EXT, "TaskStatusNotification", message, message);
        return true;
    }
    let Some(result) = message.get("result") else {
        return false;
    };
    let def = if result.get("resultType").and_then(Value::as_str) == Some("task") {
        assert_eq!(
            request_method,
            Some("tools/call"),
            "only tools/call may be answered with a task: {message}"
        );
        "CreateTaskResult"
    } else {
        match request_method {
            Some("tasks/get") => "GetTaskResult",
            Some("tasks/update") => "UpdateTaskResult",
            Some("tasks/cancel") => "CancelTaskResult",
            _ => return false,
        }
    };
    core.check(MODERN, "JSONRPCResultResponse", message, message);
    ext.check(TASKS_EXT, def, result, message);
    // A completed task's result is exactly what the request would have returned.
    if def == "GetTaskResult"
        && let Some(inner) = result.get("result")
    {
        core.check(MODERN, "CallToolResult", inner, message);
    }
    true
}

/// Validates one message the server sent in answer to a request of `request_method`.
pub fn validate(revision: &str, request_method: Option<&str>, message: &Value) {
    let s = schema(revision);
    let modern = revision == MODERN;
    if modern && validate_task_message(request_method, message) {
        return;
    }
    if let Some(method) = message.get("method").and_then(Value::as_str) {
        assert!(
            message.get("id").is_none() || !modern,
            "a 2026-07-28 server sent a JSON-RPC request: {message}"
        );
        let generic = if message.get("id").is_some() {
            "JSONRPCRequest"
        } else {
            "JSONRPCNotification"
        };
        s.check(revision, generic, message, message);
        let def = s
            .by_method
            .get(method)
            .unwrap_or_else(|| panic!("{revision} defines no message {method:?}: {message}"));
        s.check(revision, def, message, message);
    } else if let Some(error) = message.get("error") {
        let envelope = if s.has("JSONRPCErrorResponse") {
            "JSONRPCErrorResponse"
        } else {
            "JSONRPCError"
        };
        if message.get("id").is_none() && s.requires_id(envelope) {
            // 2025-03-26 and 2025-06-18 require an id in their schema, while their
            // Streamable HTTP transport lets the body of a refused POST (or GET, DELETE) be
            // "a JSON-RPC error response that has no id": check everything else.
            let mut with_id = message.clone();
            with_id["id"] = json!("(none)");
            s.check(revision, envelope, &with_id, message);
        } else {
            s.check(revision, envelope, message, message);
        }
        let code = error["code"].as_i64();
        if let Some(def) = code.and_then(|c| s.by_code.get(&c)) {
            s.check(revision, def, message, message);
        }
        if let Some(def) = code.and_then(|c| s.by_error_code.get(&c)) {
            s.check(revision, def, error, message);
        }
    } else if let Some(result) = message.get("result") {
        let envelope = if s.has("JSONRPCResultResponse") {
            "JSONRPCResultResponse"
        } else {
            "JSONRPCResponse"
        };
        s.check(revision, envelope, message, message);
        let method = request_method.expect("a result answers a request");
        let def = if result.get("resultType").and_then(Value::as_str) == Some("input_required") {
            "InputRequiredResult".to_owned()
        } else {
            let request = s
                .by_method
                .get(method)
                .unwrap_or_else(|| panic!("{revision} defines no request {method:?}"));
            let result_def = request.replace("Request", "Result");
            if s.has(&result_def) {
                result_def
            } else {
                "Result".to_owned()
            }
        };
        s.check(revision, &def, result, message);
    } else {
        panic!("not a JSON-RPC message: {message}");
    }
}

// ---------------------------------------------------------------------------------------------
// stdio

/// A server under test on stdio, through an in-memory pipe (`Service::serve_io`).
pub struct Stdio {
    to_server: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    from_server:
        tokio::io::Lines<tokio::io::BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
    task: tokio::task::JoinHandle<Result<(), sake::Error>>,
}

impl Stdio {
    /// Starts serving `service` on a fresh pipe.
    pub fn start(service: sake::Service) -> Stdio {
        use tokio::io::AsyncBufReadExt as _;
        let (client, server) = tokio::io::duplex(1 << 16);
        let (server_read, server_write) = tokio::io::split(server);
        let task = tokio::spawn(service.serve_io(server_read, server_write));
        let (client_read, client_write) = tokio::io::split(client);
        Stdio {
            to_server: client_write,
            from_server: tokio::io::BufReader::new(client_read).lines(),
            task,
        }
    }

    /// Writes `bytes` and a newline.
    pub async fn send_line(&mut self, bytes: &[u8]) {
        use tokio::io::AsyncWriteExt as _;
        self.to_server.write_all(bytes).await.unwrap();
        self.to_server.write_all(b"\n").await.unwrap();
        self.to_server.flush().await.unwrap();
    }

    /// Writes one message as a line.
    pub async fn send(&mut self, message: &Value) {
        self.send_line(&serde_json::to_vec(message).unwrap()).await;
    }

    /// The next line the server writes, as JSON, not validated. Fails after 60 s of silence.
    pub async fn recv_raw(&mut self) -> Value {
        let line = tokio::time::timeout(
            std::time::Duration::from_secs(60),
            self.from_server.next_line(),
        )
        .await
        .expect("the server answers within 60 s")
        .unwrap()
        .expect("the server's output is open");
        serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout carries only JSON ({e}): {line}"))
    }

    /// The next line the server writes, as JSON, validated against `revision`'s schema as an
    /// answer to `request_method`. Fails after 60 s of silence.
    pub async fn recv(&mut self, revision: &str, request_method: Option<&str>) -> Value {
        let line = tokio::time::timeout(
            std::time::Duration::from_secs(60),
            self.from_server.next_line(),
        )
        .await
        .expect("the server answers within 60 s")
        .unwrap()
        .expect("the server's output is open");
        let v: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout carries only JSON ({e}): {line}"));
        match &v {
            Value::Array(items) => {
                for m in items {
                    validate(revision, request_method, m);
                }
            }
            m => validate(revision, request_method, m),
        }
        v
    }

    /// Closes the server's input and waits for it to stop (reading whatever it still writes).
    pub async fn close(self) {
        use tokio::io::AsyncWriteExt as _;
        let Stdio {
            mut to_server,
            mut from_server,
            task,
        } = self;
        // The halves share one pipe: shutting the write side down is the EOF.
        to_server.shutdown().await.unwrap();
        let drain = async { while let Ok(Some(_)) = from_server.next_line().await {} };
        let (stopped, ()) = tokio::time::timeout(std::time::Duration::from_secs(60), async {
            tokio::join!(task, drain)
        })
        .await
        .expect("the server stops at EOF");
        stopped.unwrap().unwrap();
    }
}
