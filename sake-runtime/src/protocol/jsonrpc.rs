//! JSON-RPC 2.0 framing: request ids, error codes, decoding incoming messages and encoding
//! responses and notifications.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

use super::version::Era;

/// A JSON-RPC request id: a string or an integer, never `null`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum RequestId {
    /// An integer id.
    Number(i64),
    /// A string id.
    String(Arc<str>),
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        RequestId::Number(n)
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        RequestId::String(s.into())
    }
}

impl Serialize for RequestId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            RequestId::Number(n) => s.serialize_i64(*n),
            RequestId::String(v) => s.serialize_str(v),
        }
    }
}

impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = RequestId;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or an integer")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RequestId, E> {
                Ok(RequestId::Number(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RequestId, E> {
                i64::try_from(v)
                    .map(RequestId::Number)
                    .map_err(|_| E::custom("an integer id must fit in 64 signed bits"))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RequestId, E> {
                Ok(RequestId::String(v.into()))
            }
        }
        d.deserialize_any(V)
    }
}

/// The error codes sake emits.
pub mod code {
    /// The body is not JSON.
    pub const PARSE_ERROR: i32 = -32700;
    /// The JSON is not a valid request.
    pub const INVALID_REQUEST: i32 = -32600;
    /// Unknown or removed method, or a feature the server does not offer.
    pub const METHOD_NOT_FOUND: i32 = -32601;
    /// Parameters that do not fit the method.
    pub const INVALID_PARAMS: i32 = -32602;
    /// The server failed.
    pub const INTERNAL_ERROR: i32 = -32603;
    /// A legacy session's resource was not found (2025-03-26 to 2025-11-25).
    pub const RESOURCE_NOT_FOUND_LEGACY: i32 = -32002;
    /// An HTTP header is missing, malformed or different from the body (2026-07-28).
    pub const HEADER_MISMATCH: i32 = -32020;
    /// The request needs a client capability it did not declare (2026-07-28).
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i32 = -32021;
    /// The requested protocol version is not served (2026-07-28).
    pub const UNSUPPORTED_PROTOCOL_VERSION: i32 = -32022;
    /// An implementation code for "no such session" (legacy HTTP).
    pub const SESSION_NOT_FOUND: i32 = -32001;
    /// An implementation code for transport-level refusals (Origin, size, media type).
    pub const TRANSPORT_REFUSED: i32 = -32000;
}

/// A JSON-RPC error, with the HTTP status it is sent with where the spec fixes one.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{message} ({code})")]
pub struct RpcError {
    /// The JSON-RPC code.
    pub code: i32,
    /// What went wrong, for a person.
    pub message: String,
    /// Structured detail.
    pub data: Option<Value>,
    status: Option<std::num::NonZeroU16>,
    /// The `WWW-Authenticate` challenge an HTTP transport sends with an authorization
    /// refusal (401 or 403).
    challenge: Option<Box<str>>,
    /// The seconds a refusal for load or rate says to wait (`Retry-After`).
    retry_after: Option<std::num::NonZeroU16>,
}

impl RpcError {
    /// An error with a code and a message.
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
            status: None,
            challenge: None,
            retry_after: None,
        }
    }

    /// Attaches `data`.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// Fixes the HTTP status this error is sent with.
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = std::num::NonZeroU16::new(status);
        self
    }

    /// The seconds an HTTP response with this error says to wait (`Retry-After`, sent with
    /// a 429 or 503; 1 unless set).
    pub(crate) fn with_retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = std::num::NonZeroU16::new(u16::try_from(seconds).unwrap_or(u16::MAX));
        self
    }

    /// The seconds to wait before retrying, when the error says.
    pub(crate) fn retry_after(&self) -> Option<u64> {
        self.retry_after.map(|s| u64::from(s.get()))
    }

    /// The error with the HTTP status `era` gives it fixed, unless one is already: what a
    /// transport sends it with ([`status`](Self::status)), without knowing the era.
    pub(crate) fn settled(mut self, era: Era) -> Self {
        if self.status.is_none() {
            self.status = std::num::NonZeroU16::new(self.http_status(era));
        }
        self
    }

    /// The error as a handshake session answers it: a JSON-RPC message with 200 whatever it
    /// holds, except an authorization refusal, which keeps its 401 or 403 and its
    /// `WWW-Authenticate` challenge — the authorization pages of 2025-03-26 and later send
    /// those statuses, and a 2025-11-25 client steps up to more scopes only on the 403's
    /// `insufficient_scope` ("Scope Challenge Handling").
    pub(crate) fn in_session(self) -> Self {
        if self.challenge.is_some() {
            self
        } else {
            self.with_status(200)
        }
    }

    /// The HTTP status the error is sent with: the one fixed for it, else 200 (a JSON-RPC
    /// error in a successful HTTP response).
    pub(crate) fn status(&self) -> u16 {
        self.status.map_or(200, std::num::NonZeroU16::get)
    }

    /// -32000 with HTTP 401 and a `WWW-Authenticate` challenge: the request needs a caller
    /// with a valid token.
    #[cfg_attr(not(feature = "auth"), allow(dead_code))]
    pub(crate) fn unauthorized(message: impl Into<String>, challenge: String) -> Self {
        let mut e = RpcError::new(code::TRANSPORT_REFUSED, message).with_status(401);
        e.challenge = Some(challenge.into());
        e
    }

    /// -32000 with HTTP 403 and a `WWW-Authenticate` challenge: the caller's token does not
    /// allow the request.
    #[cfg_attr(not(feature = "auth"), allow(dead_code))]
    pub(crate) fn forbidden(message: impl Into<String>, challenge: String) -> Self {
        let mut e = RpcError::new(code::TRANSPORT_REFUSED, message).with_status(403);
        e.challenge = Some(challenge.into());
        e
    }

    /// The `WWW-Authenticate` challenge of an authorization refusal.
    pub(crate) fn challenge(&self) -> Option<&str> {
        self.challenge.as_deref()
    }

    /// -32700: the body is not JSON.
    pub fn parse_error(detail: impl fmt::Display) -> Self {
        RpcError::new(code::PARSE_ERROR, format!("Parse error: {detail}"))
    }

    /// -32600: not a valid JSON-RPC request.
    pub fn invalid_request(detail: impl fmt::Display) -> Self {
        RpcError::new(code::INVALID_REQUEST, format!("Invalid request: {detail}"))
    }

    /// -32601 for a method this revision or server does not have.
    pub fn method_not_found(method: &str) -> Self {
        RpcError::new(
            code::METHOD_NOT_FOUND,
            format!("Method not found: {}", logged(method)),
        )
    }

    /// -32602 with a message.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        RpcError::new(code::INVALID_PARAMS, message)
    }

    /// -32602 for a malformed `_meta`: always HTTP 400.
    pub fn invalid_meta(message: impl Into<String>) -> Self {
        RpcError::invalid_params(message).with_status(400)
    }

    /// No resource or template matches `uri`. The rendering step gives it the code of the
    /// request's revision (-32002 before 2026-07-28, -32602 since).
    pub fn resource_not_found(uri: &str) -> Self {
        RpcError::new(
            code::RESOURCE_NOT_FOUND_LEGACY,
            format!("Resource not found: {uri}"),
        )
        .with_data(serde_json::json!({ "uri": uri }))
    }

    /// -32603.
    pub fn internal(message: impl Into<String>) -> Self {
        RpcError::new(code::INTERNAL_ERROR, message)
    }

    /// -32020: a header is missing, malformed or disagrees with the body.
    pub fn header_mismatch(message: impl Into<String>) -> Self {
        RpcError::new(code::HEADER_MISMATCH, message)
    }

    /// -32021 naming the capabilities the request needs, as a `ClientCapabilities` object.
    pub fn missing_capability(required: Value) -> Self {
        let names = required
            .as_object()
            .map(|m| m.keys().cloned().collect::<Vec<_>>().join(", "))
            .unwrap_or_default();
        RpcError::new(
            code::MISSING_REQUIRED_CLIENT_CAPABILITY,
            format!("Missing required client capability: {names}"),
        )
        .with_data(serde_json::json!({ "requiredCapabilities": required }))
    }

    /// -32022 with the versions served and the one asked for.
    pub fn unsupported_version(requested: &str, supported: &[&str], hint: &str) -> Self {
        RpcError::new(
            code::UNSUPPORTED_PROTOCOL_VERSION,
            format!("Unsupported protocol version {requested:?}{hint}"),
        )
        .with_data(serde_json::json!({ "supported": supported, "requested": requested }))
    }

    /// The HTTP status this error travels with in the given era.
    ///
    /// 2026-07-28 fixes 404 for -32601 and 400 for -32020..-32022 and malformed `_meta`;
    /// legacy clients read a 404 as "session gone", so there -32601 is a 200.
    pub fn http_status(&self, era: Era) -> u16 {
        if let Some(s) = self.status {
            return s.get();
        }
        match self.code {
            code::PARSE_ERROR | code::INVALID_REQUEST => 400,
            code::METHOD_NOT_FOUND if era == Era::Modern => 404,
            code::HEADER_MISMATCH
            | code::MISSING_REQUIRED_CLIENT_CAPABILITY
            | code::UNSUPPORTED_PROTOCOL_VERSION => 400,
            _ => 200,
        }
    }
}

/// An incoming JSON-RPC message, borrowing from the bytes it was read from.
#[derive(Debug)]
pub enum Incoming<'a> {
    /// A request: it gets a response.
    Request {
        /// Its id.
        id: RequestId,
        /// The method.
        method: Cow<'a, str>,
        /// Raw params.
        params: Option<&'a RawValue>,
    },
    /// A notification: no response.
    Notification {
        /// The method.
        method: Cow<'a, str>,
        /// Raw params.
        params: Option<&'a RawValue>,
    },
    /// A response to a request the server sent (legacy).
    Response {
        /// The id of the server's request.
        id: RequestId,
        /// The result or the error object.
        outcome: Result<&'a RawValue, &'a RawValue>,
    },
}

impl Incoming<'_> {
    /// The id of a request (what an error about it must echo); `None` for the others.
    pub fn request_id(&self) -> Option<&RequestId> {
        match self {
            Incoming::Request { id, .. } => Some(id),
            Incoming::Notification { .. } | Incoming::Response { .. } => None,
        }
    }
}

/// The members of a message, each kept raw so that a member of the wrong type is reported
/// by name, with the id echoed when it is readable.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default, deserialize_with = "present")]
    jsonrpc: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    id: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    method: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    params: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    result: Option<&'a RawValue>,
    #[serde(borrow, default, deserialize_with = "present")]
    error: Option<&'a RawValue>,
}

/// Keeps `null` apart from absence: a present `null` is `Some("null")`.
pub(crate) fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(d).map(Some)
}

/// Why a message could not be decoded, with the id when it could be read.
#[derive(Debug)]
pub struct DecodeError {
    /// The request's id, if it was readable.
    pub id: Option<RequestId>,
    /// The error to answer with.
    pub error: Box<RpcError>,
}

/// Reads a JSON string, borrowing when it has no escapes; `None` for any other JSON value.
pub fn raw_string(raw: &RawValue) -> Option<Cow<'_, str>> {
    // A raw value is valid JSON without surrounding whitespace: a string without a backslash
    // is exactly its bytes between the quotes (no parser needed).
    let text = raw.get();
    if let Some(inner) = text.strip_prefix('"').and_then(|t| t.strip_suffix('"'))
        && !inner.contains('\\')
    {
        return Some(Cow::Borrowed(inner));
    }
    serde_json::from_str::<String>(text).ok().map(Cow::Owned)
}

/// Decodes one JSON-RPC message (not a batch).
pub fn decode(bytes: &[u8]) -> Result<Incoming<'_>, DecodeError> {
    let env: Envelope<'_> = serde_json::from_slice(bytes).map_err(|e| DecodeError {
        id: None,
        error: Box::new(match e.classify() {
            serde_json::error::Category::Data => {
                RpcError::invalid_request(format!("a message must be a JSON object ({e})"))
            }
            _ => RpcError::parse_error(e),
        }),
    })?;
    decode_envelope(env)
}

/// Decodes one element of a batch, given as a raw value.
pub fn decode_raw(raw: &RawValue) -> Result<Incoming<'_>, DecodeError> {
    decode(raw.get().as_bytes())
}

fn decode_envelope(env: Envelope<'_>) -> Result<Incoming<'_>, DecodeError> {
    let id = match env.id {
        None => None,
        Some(raw) => match serde_json::from_str::<RequestId>(raw.get()) {
            Ok(id) => Some(id),
            Err(_) => {
                return Err(DecodeError {
                    id: None,
                    error: Box::new(RpcError::invalid_request(format!(
                        "`id` must be a string or an integer, not {}",
                        raw.get()
                    ))),
                });
            }
        },
    };
    let fail = |id: Option<RequestId>, msg: &str| DecodeError {
        id,
        error: Box::new(RpcError::invalid_request(msg)),
    };
    if env.jsonrpc.and_then(raw_string).as_deref() != Some("2.0") {
        return Err(fail(id, "`jsonrpc` must be \"2.0\""));
    }
    let params = env.params.filter(|p| p.get() != "null");
    if let Some(raw) = env.method {
        let Some(method) = raw_string(raw) else {
            let msg = format!("`method` must be a string, not {}", clip(raw.get()));
            return Err(fail(id, &msg));
        };
        if env.result.is_some() || env.error.is_some() {
            return Err(fail(id, "a request cannot carry `result` or `error`"));
        }
        return Ok(match id {
            Some(id) => Incoming::Request { id, method, params },
            None => Incoming::Notification { method, params },
        });
    }
    match (id, env.result, env.error) {
        (Some(id), Some(result), None) => Ok(Incoming::Response {
            id,
            outcome: Ok(result),
        }),
        (Some(id), None, Some(error)) => Ok(Incoming::Response {
            id,
            outcome: Err(error),
        }),
        (id, _, _) => Err(fail(
            id,
            "a message needs a `method` (request or notification) or exactly one of `result` and `error` (response)",
        )),
    }
}

/// Writes `{"jsonrpc":"2.0","id":ID,"result":RESULT}` where `result` is a JSON object's bytes.
///
/// With an integer id, an empty `out` ends up exactly full, so that turning it into `Bytes`
/// takes no further allocation.
pub fn write_result(out: &mut Vec<u8>, id: &RequestId, result: &[u8]) {
    const HEAD: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":";
    const MIDDLE: &[u8] = b",\"result\":";
    let mut digits = itoa::Buffer::new();
    let id_len = match id {
        RequestId::Number(n) => digits.format(*n).len(),
        // Escapes may lengthen it; the Vec grows if they do.
        RequestId::String(s) => s.len() + 2,
    };
    out.reserve_exact(HEAD.len() + id_len + MIDDLE.len() + result.len() + 1);
    out.extend_from_slice(HEAD);
    write_id(out, id);
    out.extend_from_slice(MIDDLE);
    out.extend_from_slice(result);
    out.push(b'}');
}

/// Encodes a response carrying `result`.
pub fn result_bytes(id: &RequestId, result: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    write_result(&mut out, id, result);
    out
}

fn write_id(out: &mut Vec<u8>, id: &RequestId) {
    match id {
        RequestId::Number(n) => out.extend_from_slice(itoa::Buffer::new().format(*n).as_bytes()),
        RequestId::String(s) => {
            // Serialising a string into a Vec cannot fail.
            let _ = serde_json::to_writer(&mut *out, &**s);
        }
    }
}

#[derive(Serialize)]
struct ErrorObject<'a> {
    code: i32,
    message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<&'a Value>,
}

#[derive(Serialize)]
struct ErrorResponse<'a> {
    jsonrpc: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a RequestId>,
    error: ErrorObject<'a>,
}

/// Encodes an error response; without an id when it could not be read.
pub fn error_bytes(id: Option<&RequestId>, err: &RpcError) -> Vec<u8> {
    let resp = ErrorResponse {
        jsonrpc: "2.0",
        id,
        error: ErrorObject {
            code: err.code,
            message: &err.message,
            data: err.data.as_ref(),
        },
    };
    serde_json::to_vec(&resp).unwrap_or_else(|_| {
        br#"{"jsonrpc":"2.0","error":{"code":-32603,"message":"Internal error"}}"#.to_vec()
    })
}

#[derive(Serialize)]
struct NotificationOut<'a, P: Serialize> {
    jsonrpc: &'static str,
    method: &'a str,
    params: &'a P,
}

/// Encodes a notification.
pub fn notification_bytes<P: Serialize>(method: &str, params: &P) -> Vec<u8> {
    serde_json::to_vec(&NotificationOut {
        jsonrpc: "2.0",
        method,
        params,
    })
    .unwrap_or_default()
}

#[derive(Serialize)]
struct RequestOut<'a, P: Serialize> {
    jsonrpc: &'static str,
    id: &'a RequestId,
    method: &'a str,
    params: &'a P,
}

/// Encodes a request (server to client, legacy revisions only).
pub fn request_bytes<P: Serialize>(id: &RequestId, method: &str, params: &P) -> Vec<u8> {
    serde_json::to_vec(&RequestOut {
        jsonrpc: "2.0",
        id,
        method,
        params,
    })
    .unwrap_or_default()
}

/// The most bytes of a string a client chose (a method, a tool name, a URI, a request id,
/// client info, a `_meta` value) that go into a log line or a span attribute.
pub(crate) const LOGGED_BYTES: usize = 256;

/// A string a client chose, as it goes into logs and spans: whole up to [`LOGGED_BYTES`],
/// else its first bytes (cut at a character boundary) and `…[clipped: N bytes]`, so that a
/// 4 MiB name costs a log line no more than a short one; control characters escaped (`\n`,
/// `\u{1b}`), so that a name cannot start a forged log line or colour a terminal.
pub(crate) fn logged(s: &str) -> std::borrow::Cow<'_, str> {
    if s.len() <= LOGGED_BYTES && !s.contains(char::is_control) {
        return std::borrow::Cow::Borrowed(s);
    }
    std::borrow::Cow::Owned(Logged(s).to_string())
}

/// Something a client chose, displayed for logs and spans as [`logged`] does: at most
/// [`LOGGED_BYTES`] of its text, control characters escaped, then `…[clipped: N bytes]`.
/// Nothing is allocated.
pub(crate) struct Logged<T>(pub T);

impl<T: fmt::Display> fmt::Display for Logged<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        /// Passes on the first [`LOGGED_BYTES`] bytes (escaped), counts the rest.
        struct Bounded<'a, 'b> {
            out: &'a mut fmt::Formatter<'b>,
            total: usize,
        }
        impl Bounded<'_, '_> {
            fn escaped(&mut self, s: &str) -> fmt::Result {
                let mut rest = s;
                while let Some(i) = rest.find(char::is_control) {
                    self.out.write_str(&rest[..i])?;
                    let c = rest[i..].chars().next().unwrap_or_default();
                    write!(self.out, "{}", c.escape_debug())?;
                    rest = &rest[i + c.len_utf8()..];
                }
                self.out.write_str(rest)
            }
        }
        impl fmt::Write for Bounded<'_, '_> {
            fn write_str(&mut self, s: &str) -> fmt::Result {
                let room = LOGGED_BYTES.saturating_sub(self.total);
                self.total += s.len();
                if room >= s.len() {
                    return self.escaped(s);
                }
                let mut end = room;
                while !s.is_char_boundary(end) {
                    end -= 1;
                }
                self.escaped(&s[..end])
            }
        }
        let mut bounded = Bounded { out: f, total: 0 };
        fmt::write(&mut bounded, format_args!("{}", self.0))?;
        let total = bounded.total;
        if total > LOGGED_BYTES {
            write!(f, "…[clipped: {total} bytes]")?;
        }
        Ok(())
    }
}

/// Shortens raw JSON for an error message.
pub(crate) fn clip(s: &str) -> String {
    clip_at(s, 60)
}

/// The first `max` bytes of `s` (cut at a character boundary), with `…` when cut.
pub(crate) fn clip_at(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err_code(bytes: &[u8]) -> i32 {
        decode(bytes).unwrap_err().error.code
    }

    #[test]
    fn client_strings_are_logged_clipped() {
        assert_eq!(logged("tools/call"), "tools/call");
        let exact = "a".repeat(LOGGED_BYTES);
        assert_eq!(logged(&exact), exact);
        let big = "é".repeat(2 * 1024 * 1024);
        let l = logged(&big);
        assert!(l.len() < LOGGED_BYTES + 40, "{}", l.len());
        assert!(l.ends_with("…[clipped: 4194304 bytes]"), "{l}");
        assert!(l.starts_with("éé"));
        // The same through Display, without allocating the whole.
        assert_eq!(Logged(&exact).to_string(), exact);
        assert_eq!(Logged(&*big).to_string(), l);
        let id = RequestId::String("x".repeat(1000).into());
        let shown = Logged(&id).to_string();
        assert!(shown.starts_with("\"xx"), "{shown}");
        assert!(shown.ends_with("…[clipped: 1002 bytes]"), "{shown}");
        assert_eq!(Logged(&RequestId::Number(7)).to_string(), "7");
        // Control characters are escaped: no forged line, no terminal escape.
        assert_eq!(
            logged("tools/call\nINFO forged\u{1b}[31m"),
            "tools/call\\nINFO forged\\u{1b}[31m"
        );
        assert_eq!(
            Logged(&RequestId::String("a\rb".into())).to_string(),
            "\"a\\rb\""
        );
        // An unknown method is echoed clipped too.
        let e = RpcError::method_not_found(&"m".repeat(1 << 20));
        assert!(e.message.len() < 400, "{}", e.message.len());
    }

    #[test]
    fn decodes_requests_notifications_and_responses() {
        match decode(br#"{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{}}"#).unwrap() {
            Incoming::Request { id, method, params } => {
                assert_eq!(id, RequestId::Number(7));
                assert_eq!(method, "tools/list");
                assert_eq!(params.unwrap().get(), "{}");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            decode(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).unwrap(),
            Incoming::Notification { .. }
        ));
        assert!(matches!(
            decode(br#"{"jsonrpc":"2.0","id":"a","result":{}}"#).unwrap(),
            Incoming::Response { outcome: Ok(_), .. }
        ));
        assert!(matches!(
            decode(br#"{"jsonrpc":"2.0","id":"a","error":{"code":1,"message":"x"}}"#).unwrap(),
            Incoming::Response {
                outcome: Err(_),
                ..
            }
        ));
    }

    #[test]
    fn classifies_bad_messages() {
        assert_eq!(err_code(b"{"), code::PARSE_ERROR);
        assert_eq!(err_code(b"\xff"), code::PARSE_ERROR);
        assert_eq!(err_code(b"[]"), code::INVALID_REQUEST);
        assert_eq!(err_code(b"42"), code::INVALID_REQUEST);
        assert_eq!(err_code(br#"{"id":1,"method":"x"}"#), code::INVALID_REQUEST);
        assert_eq!(
            err_code(br#"{"jsonrpc":"2.0","id":null,"method":"x"}"#),
            code::INVALID_REQUEST
        );
        assert_eq!(
            err_code(br#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#),
            code::INVALID_REQUEST
        );
        assert_eq!(
            err_code(br#"{"jsonrpc":"2.0","id":1,"method":3}"#),
            code::INVALID_REQUEST
        );
        assert_eq!(
            err_code(br#"{"jsonrpc":"2.0","id":1}"#),
            code::INVALID_REQUEST
        );
        // The id is echoed when it could be read, whatever else is wrong.
        let e = decode(br#"{"jsonrpc":"1.0","id":"x","method":"m"}"#).unwrap_err();
        assert_eq!(e.id, Some(RequestId::from("x")));
        for bad in [
            &br#"{"jsonrpc":"2.0","id":4,"method":3}"#[..],
            br#"{"jsonrpc":"2.0","id":4,"method":null}"#,
            br#"{"jsonrpc":2,"id":4,"method":"m"}"#,
        ] {
            let e = decode(bad).unwrap_err();
            assert_eq!(
                (e.id, e.error.code),
                (Some(RequestId::Number(4)), code::INVALID_REQUEST)
            );
        }
        let e = decode(br#"{"jsonrpc":"2.0","id":4,"method":3}"#).unwrap_err();
        assert_eq!(
            e.error.message,
            "Invalid request: `method` must be a string, not 3"
        );
    }

    #[test]
    fn encodes_responses() {
        assert_eq!(
            result_bytes(&RequestId::from("a\"b"), b"{}"),
            br#"{"jsonrpc":"2.0","id":"a\"b","result":{}}"#
        );
        for n in [0, -1, 42, i64::MIN, i64::MAX] {
            let bytes = result_bytes(&RequestId::Number(n), br#"{"a":1}"#);
            assert_eq!(
                bytes,
                format!(r#"{{"jsonrpc":"2.0","id":{n},"result":{{"a":1}}}}"#).as_bytes()
            );
            assert_eq!(bytes.len(), bytes.capacity(), "{n}");
        }
        let e = RpcError::method_not_found("ping");
        assert_eq!(
            String::from_utf8(error_bytes(Some(&RequestId::Number(-3)), &e)).unwrap(),
            r#"{"jsonrpc":"2.0","id":-3,"error":{"code":-32601,"message":"Method not found: ping"}}"#
        );
        assert_eq!(e.http_status(Era::Modern), 404);
        assert_eq!(e.http_status(Era::Legacy), 200);
        assert_eq!(RpcError::invalid_meta("x").http_status(Era::Modern), 400);
        assert_eq!(RpcError::invalid_params("x").http_status(Era::Modern), 200);
    }
}
