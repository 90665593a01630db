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
    pub fn legacy(session: &Session, id: impl Into<Value>, method: &str, params: Value) -> Req {
        let body = json!({"jsonrpc": "2.0", "id": id.into(), "method": method, "params": params});
        Req::in_session(session, serde_json::to_vec(&body).unwrap())
    }

    /// A POST of `body` in a handshake session.
    pub fn in_session(session: &Session, body: impl Into<Vec<u8>>) -> Req {
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

/// The server's answer, already validated against the schema.
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
pub struct Session {
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

    /// Sends one request and returns the validated reply.
    pub async fn send(&self, req: Req) -> Reply {
        self.send_as(self.revision, req).await
    }

    /// Sends one request and validates the reply against `revision`'s schema.
    pub async fn send_as(&self, revision: &str, req: Req) -> Reply {
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
        let body = body.collect().await.unwrap().to_bytes().to_vec();
        let ct = parts
            .headers
            .get(http::header::CONTENT_TYPE)
            .map(|v| v.to_str().unwrap().to_owned());
        let (events, messages) = match ct.as_deref() {
            Some("text/event-stream") => {
                let events = parse_sse(std::str::from_utf8(&body).expect("SSE is UTF-8"));
                let messages = events
                    .iter()
                    .map(|e| {
                        let data = e.data.as_deref().expect("every SSE event carries data");
                        serde_json::from_str(data).expect("every data: frame is one JSON value")
                    })
                    .collect();
                (events, messages)
            }
            Some(ct) if ct.starts_with("application/json") => (
                Vec::new(),
                vec![serde_json::from_slice(&body).expect("a JSON body")],
            ),
            None => {
                assert!(body.is_empty(), "a body without Content-Type");
                (Vec::new(), Vec::new())
            }
            Some(other) => panic!("unexpected Content-Type {other}"),
        };
        for m in &messages {
            validate(revision, request_method.as_deref(), m);
        }
        Reply {
            status: parts.status.as_u16(),
            headers: parts.headers,
            body,
            events,
            messages,
        }
    }

    /// Sends a request and returns as soon as the response head arrives: for streams that
    /// do not end (`subscriptions/listen`, GET streams) or that a test drops half-way.
    pub async fn open(&self, req: Req) -> Open {
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

    /// [`Wire::open`], validating messages against `revision`'s schema.
    pub async fn open_as(&self, revision: &'static str, req: Req) -> Open {
        let mut open = self.open(req).await;
        open.revision = revision;
        open
    }

    /// Opens a handshake session at `revision` with the given client capabilities, and
    /// sends `notifications/initialized`.
    pub async fn initialize(&self, revision: &'static str, capabilities: Value) -> Session {
        self.initialize_with(revision, capabilities, |r| r).await
    }

    /// [`Wire::initialize`] with a hook on the requests (extensions, headers).
    pub async fn initialize_with(
        &self,
        revision: &'static str,
        capabilities: Value,
        hook: impl Fn(Req) -> Req,
    ) -> Session {
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
        let session = Session {
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

/// Validates one message the server sent in answer to a request of `request_method`.
pub fn validate(revision: &str, request_method: Option<&str>, message: &Value) {
    let s = schema(revision);
    let modern = revision == MODERN;
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
        s.check(revision, envelope, message, message);
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
