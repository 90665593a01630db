//! Asking the client for input while a request runs: elicitation, sampling, roots.
//!
//! One API for every revision. On a handshake session the question is a JSON-RPC request on
//! the call's stream and the client answers with a POST. On 2026-07-28 the question makes the
//! call end with `resultType: "input_required"`; the client retries with `inputResponses`, the
//! function runs again, and this time the same question returns the answer (MRTR).

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use tokio::sync::oneshot;

use crate::protocol::jsonrpc::{RequestId, RpcError};
use crate::protocol::types::{
    ClientCapabilities, CreateMessageResult, ElicitResult, ListRootsResult,
};
use crate::signing::{Domain, Signer};

/// Why a question to the client got no usable answer.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum InputError {
    /// The client did not declare the capability the question needs. On 2026-07-28 a call
    /// that fails after this answers -32021 naming the capability.
    #[error("the client did not declare the `{capability}` capability this request needs")]
    MissingCapability {
        /// The capability, as a dotted path (`sampling`, `elicitation.url`, …).
        capability: &'static str,
    },
    /// The client did not answer in time.
    #[error("the client did not answer within {0:?}")]
    Timeout(Duration),
    /// The client answered with a JSON-RPC error.
    #[error("the client refused: {message} ({code})")]
    Client {
        /// The error code.
        code: i64,
        /// The error message.
        message: String,
    },
    /// The client's answer does not have the shape of the result asked for.
    #[error("the client's answer is malformed: {0}")]
    InvalidResponse(String),
    /// The type asked for cannot be an elicitation form (a flat object of primitives).
    #[error("cannot elicit this type: {0}")]
    InvalidSchema(String),
    /// The request was cancelled while waiting.
    #[error("the request was cancelled")]
    Cancelled,
    /// This request has no way to ask (a detached context, a method that cannot ask, or
    /// too many questions already waiting).
    #[error("this request cannot ask the client for input: {0}")]
    Unavailable(&'static str),
}

/// What a user did with a form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Elicitation<T> {
    /// Submitted, with the values.
    Accepted(T),
    /// Declined explicitly.
    Declined,
    /// Dismissed.
    Cancelled,
}

impl<T> Elicitation<T> {
    /// The values, if the form was submitted.
    pub fn accepted(self) -> Option<T> {
        match self {
            Elicitation::Accepted(v) => Some(v),
            _ => None,
        }
    }
}

/// A capability a question needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Need {
    ElicitForm,
    ElicitUrl,
    Sampling,
    SamplingTools,
    Roots,
}

impl Need {
    pub fn name(self) -> &'static str {
        match self {
            Need::ElicitForm => "elicitation",
            Need::ElicitUrl => "elicitation.url",
            Need::Sampling => "sampling",
            Need::SamplingTools => "sampling.tools",
            Need::Roots => "roots",
        }
    }

    /// Parses a `requires(...)` name.
    pub fn parse(name: &str) -> Option<Need> {
        Some(match name {
            "elicitation" => Need::ElicitForm,
            "elicitation.url" => Need::ElicitUrl,
            "sampling" => Need::Sampling,
            "sampling.tools" => Need::SamplingTools,
            "roots" => Need::Roots,
            _ => return None,
        })
    }

    pub fn satisfied_by(self, caps: &ClientCapabilities) -> bool {
        match self {
            Need::ElicitForm => caps.elicitation.as_ref().is_some_and(|e| e.allows_form()),
            Need::ElicitUrl => caps.elicitation.as_ref().is_some_and(|e| e.allows_url()),
            Need::Sampling => caps.sampling.is_some(),
            Need::SamplingTools => caps.sampling.as_ref().is_some_and(|s| s.tools.is_some()),
            Need::Roots => caps.roots.is_some(),
        }
    }

    /// The `ClientCapabilities` object naming this need (`data.requiredCapabilities`).
    pub fn as_capabilities(self) -> Value {
        match self {
            Need::ElicitForm => json!({ "elicitation": {} }),
            Need::ElicitUrl => json!({ "elicitation": { "url": {} } }),
            Need::Sampling => json!({ "sampling": {} }),
            Need::SamplingTools => json!({ "sampling": { "tools": {} } }),
            Need::Roots => json!({ "roots": {} }),
        }
    }
}

/// Merges capability objects (`{"sampling":{}}` + `{"roots":{}}`).
pub(crate) fn merge_capabilities(into: &mut Value, more: Value) {
    if let (Value::Object(a), Value::Object(b)) = (into, more) {
        for (k, v) in b {
            match a.get_mut(&k) {
                Some(existing) => merge_capabilities(existing, v),
                None => {
                    a.insert(k, v);
                }
            }
        }
    }
}

/// The outcome of a server-to-client request.
pub(crate) type PeerOutcome = Result<Value, (i64, String)>;

/// Server-to-client requests of handshake sessions that await the client's POSTed answer.
/// Process-local: the answer must reach the process that asked.
pub(crate) struct Pending {
    next: AtomicI64,
    waiting: Mutex<Waiting>,
    max: usize,
    max_per_session: usize,
}

/// The questions waiting for answers, by session; `total` counts them all.
#[derive(Default)]
struct Waiting {
    by_session: HashMap<String, HashMap<i64, oneshot::Sender<PeerOutcome>>>,
    total: usize,
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pending")
            .field("max", &self.max)
            .field("max_per_session", &self.max_per_session)
            .finish_non_exhaustive()
    }
}

impl Pending {
    pub fn new(max: usize, max_per_session: usize) -> Self {
        Pending {
            next: AtomicI64::new(1),
            waiting: Mutex::new(Waiting::default()),
            max,
            max_per_session,
        }
    }

    /// A new question of `sid`, unless the server (`max_pending_inputs`) or the session
    /// (`max_pending_inputs_per_session`) already waits for as many answers as it may.
    fn register(&self, sid: &str) -> Result<(i64, oneshot::Receiver<PeerOutcome>), &'static str> {
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        if waiting.total >= self.max {
            return Err(
                "the server waits for as many answers as it may (Limits::max_pending_inputs)",
            );
        }
        if waiting.by_session.get(sid).map_or(0, HashMap::len) >= self.max_per_session {
            return Err(
                "this session has as many questions waiting for answers as it may (Limits::max_pending_inputs_per_session)",
            );
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        waiting
            .by_session
            .entry(sid.to_owned())
            .or_default()
            .insert(id, tx);
        waiting.total += 1;
        Ok((id, rx))
    }

    fn take(&self, sid: &str, id: i64) -> Option<oneshot::Sender<PeerOutcome>> {
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        let session = waiting.by_session.get_mut(sid)?;
        let sender = session.remove(&id)?;
        if session.is_empty() {
            waiting.by_session.remove(sid);
        }
        waiting.total -= 1;
        Some(sender)
    }

    fn forget(&self, sid: &str, id: i64) {
        self.take(sid, id);
    }

    /// Delivers a client's answer; `false` if nothing in this session waits for that id.
    pub fn resolve(&self, sid: &str, id: &RequestId, outcome: PeerOutcome) -> bool {
        let RequestId::Number(n) = id else {
            return false;
        };
        match self.take(sid, *n) {
            Some(tx) => tx.send(outcome).is_ok(),
            None => false,
        }
    }

    /// Drops every question of a session (it ended): their askers see `Cancelled`.
    pub fn end_session(&self, sid: &str) {
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(gone) = waiting.by_session.remove(sid) {
            waiting.total -= gone.len();
        }
    }
}

/// A handshake session's way to ask.
#[derive(Clone, Debug)]
pub(crate) struct LegacyPeer {
    pub sid: String,
    pub pending: Arc<Pending>,
    pub timeout: Duration,
}

impl LegacyPeer {
    /// Registers a question; the returned guard forgets it if the asker gives up.
    pub(crate) fn ask(
        &self,
    ) -> Result<(i64, oneshot::Receiver<PeerOutcome>, ForgetGuard), &'static str> {
        let (id, rx) = self.pending.register(&self.sid)?;
        Ok((
            id,
            rx,
            ForgetGuard {
                peer: self.clone(),
                id,
            },
        ))
    }
}

pub(crate) struct ForgetGuard {
    peer: LegacyPeer,
    id: i64,
}

impl Drop for ForgetGuard {
    fn drop(&mut self) {
        self.peer.pending.forget(&self.peer.sid, self.id);
    }
}

// ---------------------------------------------------------------------------------------------
// 2026-07-28: multi round-trip requests

/// What `requestState` carries, signed: the request it belongs to and the answers so far.
#[derive(Debug, Serialize, Deserialize)]
struct StateClaims {
    /// Method.
    m: String,
    /// Tool or prompt name, or resource URI.
    n: String,
    /// Digest of the arguments.
    d: String,
    /// Answers of earlier rounds.
    a: Map<String, Value>,
    /// Expiry (Unix milliseconds).
    e: u64,
    /// The caller it was issued to (a digest keyed with the server's key), when the server
    /// names callers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    p: Option<String>,
    /// The keys of the questions asked with it: the only ones the retry may answer.
    #[serde(default)]
    q: Vec<String>,
}

/// Milliseconds since the Unix epoch.
fn now_millis() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The digest of a request's arguments, independent of key order and whitespace. Absent,
/// `null` and `{}` arguments mean the same call, and digest the same.
pub(crate) fn arguments_digest(arguments: Option<&str>) -> String {
    let mut canonical = String::new();
    let empty = || Value::Object(Map::new());
    match arguments.map(|a| (a, serde_json::from_str::<Value>(a))) {
        None | Some((_, Ok(Value::Null))) => canonicalize(&empty(), &mut canonical),
        Some((_, Ok(value))) => canonicalize(&value, &mut canonical),
        // Unreadable as a value (a number out of range, nesting too deep): digest the text
        // itself, which no canonical form starts with `!`. Never "no arguments", or state
        // issued for one such request would fit any other.
        Some((raw, Err(_))) => {
            canonical.push('!');
            canonical.push_str(raw);
        }
    }
    let hash = Sha256::digest(canonical.as_bytes());
    hash.iter().take(16).map(|b| format!("{b:02x}")).collect()
}

fn canonicalize(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                canonicalize(&m[k], out);
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonicalize(x, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// Which request a round belongs to.
#[derive(Clone, Debug)]
pub(crate) struct RoundKey {
    pub method: &'static str,
    pub name: std::borrow::Cow<'static, str>,
    /// The arguments' JSON text as sent; digested only when a state is issued or checked.
    /// Shared with the request's bytes where the transport keeps them.
    pub arguments: Option<bytes::Bytes>,
    /// The authenticated caller's name (issuer and subject), when the server names callers;
    /// `requestState` carries only its keyed digest.
    pub principal: Option<String>,
}

/// Whether a stored caller digest and a caller's name are the same caller: both anonymous,
/// or the digest is the name's under one of the server's keys.
pub(crate) fn same_caller(signer: &Signer, stored: Option<&str>, name: Option<&str>) -> bool {
    match (stored, name) {
        (None, None) => true,
        (Some(digest), Some(name)) => signer.is_digest_of(Domain::Principal, digest, name),
        _ => false,
    }
}

impl RoundKey {
    fn digest(&self) -> String {
        arguments_digest(
            self.arguments
                .as_deref()
                .map(|a| std::str::from_utf8(a).unwrap_or_default()),
        )
    }
}

/// One round of a 2026-07-28 request that may ask for input.
#[derive(Debug)]
pub(crate) struct Mrtr {
    key: RoundKey,
    answers: Map<String, Value>,
    round: Mutex<Round>,
}

#[derive(Debug, Default)]
struct Round {
    requests: Vec<(String, Value)>,
    /// The keys of the questions handed out by `poll_pending`: the next `requestState`
    /// names them (the only answers its retry may give).
    asked: Vec<String>,
    invalid: Option<String>,
    refused: Option<Value>,
}

/// Checks that an answer has the shape of the result of `method` (an `ElicitResult`, a
/// `CreateMessageResult` or a `ListRootsResult`).
pub(crate) fn check_answer(method: &str, answer: &Value) -> Result<(), serde_json::Error> {
    match method {
        "elicitation/create" => serde_json::from_value::<ElicitResult>(answer.clone()).map(|_| ()),
        "sampling/createMessage" => {
            serde_json::from_value::<CreateMessageResult>(answer.clone()).map(|_| ())
        }
        _ => serde_json::from_value::<ListRootsResult>(answer.clone()).map(|_| ()),
    }
}

/// How a round ended, when it did not complete.
pub(crate) enum RoundOutcome {
    /// Questions to send back.
    InputRequired(Vec<(String, Value)>),
}

impl Mrtr {
    /// Reads a retry's `requestState` and `inputResponses`; -32602 when either is not what
    /// this server issued or not of the right shape.
    pub fn start(
        signer: &Signer,
        key: RoundKey,
        request_state: Option<&serde_json::value::RawValue>,
        input_responses: Option<&serde_json::value::RawValue>,
    ) -> Result<Mrtr, RpcError> {
        Mrtr::start_at(signer, key, request_state, input_responses, now_millis())
    }

    /// [`Mrtr::start`] at `now` (Unix milliseconds).
    fn start_at(
        signer: &Signer,
        key: RoundKey,
        request_state: Option<&serde_json::value::RawValue>,
        input_responses: Option<&serde_json::value::RawValue>,
        now: u64,
    ) -> Result<Mrtr, RpcError> {
        let mut answers = Map::new();
        // The questions the last round asked, when its `requestState` came back.
        let mut asked: Option<Vec<String>> = None;
        if let Some(raw) = request_state {
            let bad = || {
                RpcError::invalid_params(
                    "Invalid params: requestState integrity check failed (it was altered, has expired, or belongs to another request); retry without it",
                )
            };
            let token: String = serde_json::from_str(raw.get()).map_err(|_| bad())?;
            let payload = signer
                .verify(Domain::RequestState, &token)
                .ok_or_else(bad)?;
            let claims: StateClaims = serde_json::from_slice(&payload).map_err(|_| bad())?;
            if claims.m != key.method
                || claims.n != key.name
                || claims.e <= now
                || !same_caller(signer, claims.p.as_deref(), key.principal.as_deref())
                || claims.d != key.digest()
            {
                return Err(bad());
            }
            answers = claims.a;
            asked = Some(claims.q);
        }
        if let Some(raw) = input_responses {
            match serde_json::from_str::<Value>(raw.get()) {
                // With a `requestState`, only answers to the questions its round asked count:
                // an answer to a question never asked is ignored, and one signed into the
                // state earlier is never replaced. (Without one there is nothing signed to
                // protect; the function reads only the keys it asks for.)
                Ok(Value::Object(m)) => {
                    for (k, v) in m {
                        let fits = asked
                            .as_ref()
                            .is_none_or(|q| q.contains(&k) && !answers.contains_key(&k));
                        if fits {
                            answers.insert(k, v);
                        } else {
                            tracing::debug!(key = %crate::protocol::jsonrpc::Logged(&k), "an answer to a question not asked was ignored");
                        }
                    }
                }
                Ok(Value::Null) | Ok(_) | Err(_) => {
                    return Err(RpcError::invalid_params(
                        "Invalid params: `inputResponses` must be an object mapping each input request's key to the client's result",
                    ));
                }
            }
        }
        Ok(Mrtr {
            key,
            answers,
            round: Mutex::new(Round::default()),
        })
    }

    /// A round that already has `answers` (a task's, run again): no state to read.
    pub fn with_answers(key: RoundKey, answers: Map<String, Value>) -> Mrtr {
        Mrtr {
            key,
            answers,
            round: Mutex::new(Round::default()),
        }
    }

    /// Every answer this round has (from its state and its `inputResponses`).
    pub fn answers(&self) -> &Map<String, Value> {
        &self.answers
    }

    /// The answer to `key`, checked against the result type of `method`.
    pub fn answer(&self, key: &str, method: &str) -> Option<Result<Value, InputError>> {
        let v = self.answers.get(key)?;
        Some(match check_answer(method, v) {
            Ok(()) => Ok(v.clone()),
            Err(e) => {
                let msg = format!("inputResponses[{key:?}] is not a valid {method} result: {e}");
                if let Ok(mut r) = self.round.lock() {
                    r.invalid.get_or_insert(msg.clone());
                }
                Err(InputError::InvalidResponse(msg))
            }
        })
    }

    /// Adds a question to this round (once per key).
    pub fn ask(&self, key: &str, method: &str, params: Value) {
        if let Ok(mut r) = self.round.lock()
            && !r.requests.iter().any(|(k, _)| k == key)
        {
            r.requests.push((
                key.to_owned(),
                json!({ "method": method, "params": params }),
            ));
        }
    }

    /// Records an answer that has its result's shape but does not fit what the function
    /// asked (a form's fields): the call ends with -32602, like any malformed answer.
    pub fn reject(&self, key: &str, why: &str) {
        if let Ok(mut r) = self.round.lock() {
            r.invalid.get_or_insert_with(|| {
                format!("inputResponses[{key:?}] does not fit the question: {why}")
            });
        }
    }

    pub fn refuse(&self, need: Need) {
        if let Ok(mut r) = self.round.lock() {
            let caps = r.refused.get_or_insert_with(|| json!({}));
            merge_capabilities(caps, need.as_capabilities());
        }
    }

    /// Called when the function is pending: a round with questions ends here.
    pub fn poll_pending(&self) -> Option<RoundOutcome> {
        let mut r = self.round.lock().ok()?;
        if r.requests.is_empty() {
            None
        } else {
            let requests = std::mem::take(&mut r.requests);
            r.asked = requests.iter().map(|(k, _)| k.clone()).collect();
            Some(RoundOutcome::InputRequired(requests))
        }
    }

    /// A malformed answer the function read, if any (-32602).
    pub fn invalid(&self) -> Option<String> {
        self.round.lock().ok().and_then(|r| r.invalid.clone())
    }

    /// The capabilities refused to the function, if any.
    pub fn refused(&self) -> Option<Value> {
        self.round.lock().ok().and_then(|r| r.refused.clone())
    }

    /// The signed state for the next round: every answer so far.
    pub fn next_state(&self, signer: &Signer, lifetime: Duration) -> String {
        self.next_state_at(signer, lifetime, now_millis())
    }

    /// [`Mrtr::next_state`] issued at `now` (Unix milliseconds).
    fn next_state_at(&self, signer: &Signer, lifetime: Duration, now: u64) -> String {
        let lifetime = u64::try_from(lifetime.as_millis()).unwrap_or(u64::MAX);
        let claims = StateClaims {
            m: self.key.method.to_owned(),
            n: self.key.name.to_string(),
            d: self.key.digest(),
            a: self.answers.clone(),
            e: now.saturating_add(lifetime),
            p: self
                .key
                .principal
                .as_deref()
                .map(|name| signer.digest(Domain::Principal, name)),
            q: self
                .round
                .lock()
                .map(|r| {
                    r.asked
                        .iter()
                        .cloned()
                        .chain(r.requests.iter().map(|(k, _)| k.clone()))
                        .collect()
                })
                .unwrap_or_default(),
        };
        signer.sign(
            Domain::RequestState,
            &serde_json::to_vec(&claims).unwrap_or_default(),
        )
    }
}

/// How a request can ask for input.
#[derive(Clone, Debug, Default)]
pub(crate) enum InputChannel {
    /// It cannot.
    #[default]
    None,
    /// A handshake session: requests on the call's stream.
    Legacy(LegacyPeer),
    /// 2026-07-28: `input_required` rounds.
    Mrtr(Arc<Mrtr>),
}

/// Decodes an answer into the type the function asked for.
pub(crate) fn decode<T: DeserializeOwned>(v: Value, what: &str) -> Result<T, InputError> {
    serde_json::from_value(v).map_err(|e| InputError::InvalidResponse(format!("{what}: {e}")))
}

/// The elicitation form of `T`: its normalised schema, checked to be the flat object of
/// primitives the spec allows. Built once per type.
pub(crate) fn form_schema<T: schemars::JsonSchema>() -> Result<Value, InputError> {
    static CACHE: std::sync::OnceLock<Mutex<HashMap<String, Result<Value, String>>>> =
        std::sync::OnceLock::new();
    let id = T::schema_id().into_owned();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(hit) = cache.lock().ok().and_then(|c| c.get(&id).cloned()) {
        return hit.map_err(InputError::InvalidSchema);
    }
    let schema = crate::schema::input_schema::<T>();
    let checked = check_form(&schema).map(|()| schema);
    if let Ok(mut c) = cache.lock() {
        c.insert(id, checked.clone());
    }
    checked.map_err(InputError::InvalidSchema)
}

/// 2026-07-28 Multi Round-Trip Requests: a form is an object whose properties are strings (optionally formatted or
/// enumerated), numbers, integers, booleans, or arrays of enumerated strings.
pub(crate) fn check_form(schema: &Value) -> Result<(), String> {
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        return Err("a form must be a struct (a JSON object)".into());
    }
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Ok(());
    };
    for (name, prop) in props {
        let ty = prop.get("type").and_then(Value::as_str);
        let ok = match ty {
            Some("string") => prop
                .get("format")
                .and_then(Value::as_str)
                .is_none_or(|f| matches!(f, "email" | "uri" | "date" | "date-time")),
            Some("number" | "integer" | "boolean") => true,
            Some("array") => prop.get("items").is_some_and(|items| {
                items.get("enum").is_some()
                    || items.get("anyOf").is_some()
                    || items.get("oneOf").is_some()
            }),
            _ => false,
        };
        if !ok {
            return Err(format!(
                "field `{name}` is not a string, number, integer, boolean, or list of enumerated strings"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_ignore_key_order() {
        let a = serde_json::value::RawValue::from_string(r#"{"b":1,"a":[1,{"y":2,"x":1}]}"#.into())
            .unwrap();
        let b =
            serde_json::value::RawValue::from_string(r#"{ "a":[1,{"x":1,"y":2}], "b":1 }"#.into())
                .unwrap();
        assert_eq!(
            arguments_digest(Some(a.get())),
            arguments_digest(Some(b.get()))
        );
        assert_ne!(arguments_digest(Some(a.get())), arguments_digest(None));
        let empty = serde_json::value::RawValue::from_string("{}".into()).unwrap();
        let null = serde_json::value::RawValue::from_string("null".into()).unwrap();
        assert_eq!(arguments_digest(Some(empty.get())), arguments_digest(None));
        assert_eq!(arguments_digest(Some(null.get())), arguments_digest(None));
        let raw = |s: &str| serde_json::value::RawValue::from_string(s.into()).unwrap();
        let (x, y) = (raw(r#"{"t":"a","n":1e400}"#), raw(r#"{"t":"b","n":1e400}"#));
        assert_ne!(
            arguments_digest(Some(x.get())),
            arguments_digest(Some(y.get()))
        );
        assert_ne!(arguments_digest(Some(x.get())), arguments_digest(None));
    }

    #[test]
    fn state_is_bound_to_its_request() {
        let signer = Signer::new(b"k".repeat(32).as_slice()).unwrap();
        let key = RoundKey {
            method: "tools/call",
            name: "t".into(),
            arguments: None,
            principal: None,
        };
        let responses =
            serde_json::value::RawValue::from_string(r#"{"q":{"action":"decline"}}"#.into())
                .unwrap();
        let m = Mrtr::start(&signer, key.clone(), None, Some(&responses)).unwrap();
        let state = m.next_state(&signer, Duration::from_secs(60));
        let raw = serde_json::value::to_raw_value(&state).unwrap();
        let back = Mrtr::start(&signer, key.clone(), Some(&raw), None).unwrap();
        assert!(back.answer("q", "elicitation/create").unwrap().is_ok());
        let other = RoundKey {
            name: "u".into(),
            ..key.clone()
        };
        assert_eq!(
            Mrtr::start(&signer, other, Some(&raw), None)
                .unwrap_err()
                .code,
            -32602
        );
        // Issued to nobody in particular, or to another caller: refused to this one.
        let caller = |p: &str| RoundKey {
            principal: Some(p.into()),
            ..key.clone()
        };
        assert!(Mrtr::start(&signer, caller("alice"), Some(&raw), None).is_err());
        let m = Mrtr::start(&signer, caller("alice"), None, Some(&responses)).unwrap();
        let alices =
            serde_json::value::to_raw_value(&m.next_state(&signer, Duration::from_secs(60)))
                .unwrap();
        assert!(Mrtr::start(&signer, caller("alice"), Some(&alices), None).is_ok());
        assert!(Mrtr::start(&signer, caller("bob"), Some(&alices), None).is_err());
        assert!(Mrtr::start(&signer, key.clone(), Some(&alices), None).is_err());
        let tampered = serde_json::value::to_raw_value(&format!("{state}-TAMPERED")).unwrap();
        assert!(Mrtr::start(&signer, key.clone(), Some(&tampered), None).is_err());
        let null = serde_json::value::RawValue::from_string("null".into()).unwrap();
        assert!(Mrtr::start(&signer, key, None, Some(&null)).is_err());
    }

    #[test]
    fn state_expires_to_the_millisecond() {
        let signer = Signer::new(b"k".repeat(32).as_slice()).unwrap();
        let key = RoundKey {
            method: "tools/call",
            name: "t".into(),
            arguments: None,
            principal: None,
        };
        let issued = 1_700_000_000_123;
        let m = Mrtr::start_at(&signer, key.clone(), None, None, issued).unwrap();
        // A lifetime under a second is not rounded down to nothing, nor up to a second.
        let state = m.next_state_at(&signer, Duration::from_millis(300), issued);
        let raw = serde_json::value::to_raw_value(&state).unwrap();
        assert!(Mrtr::start_at(&signer, key.clone(), Some(&raw), None, issued + 299).is_ok());
        assert_eq!(
            Mrtr::start_at(&signer, key, Some(&raw), None, issued + 300)
                .unwrap_err()
                .code,
            -32602
        );
    }

    #[test]
    fn state_is_bound_to_its_caller() {
        let signer = Signer::new(b"k".repeat(32).as_slice()).unwrap();
        let key = |principal: Option<&str>| RoundKey {
            method: "tools/call",
            name: "t".into(),
            arguments: None,
            principal: principal.map(str::to_owned),
        };
        let issued = Mrtr::start(&signer, key(Some("alice")), None, None).unwrap();
        let state = issued.next_state(&signer, Duration::from_secs(60));
        let raw = serde_json::value::to_raw_value(&state).unwrap();
        assert!(Mrtr::start(&signer, key(Some("alice")), Some(&raw), None).is_ok());
        for other in [Some("bob"), None] {
            let e = Mrtr::start(&signer, key(other), Some(&raw), None).unwrap_err();
            assert_eq!(e.code, -32602, "{other:?}");
        }
        // And state issued to nobody in particular is nobody's to reuse once callers are named.
        let anonymous = Mrtr::start(&signer, key(None), None, None)
            .unwrap()
            .next_state(&signer, Duration::from_secs(60));
        let raw = serde_json::value::to_raw_value(&anonymous).unwrap();
        assert!(Mrtr::start(&signer, key(Some("alice")), Some(&raw), None).is_err());
    }

    /// A retry answers the questions its round asked, and nothing more: an answer to a question
    /// never asked is ignored, and an answer signed into `requestState` is not replaced.
    #[test]
    fn only_asked_questions_are_answered_and_signed_answers_stay() {
        let signer = Signer::new(b"k".repeat(32).as_slice()).unwrap();
        let key = RoundKey {
            method: "tools/call",
            name: "t".into(),
            arguments: None,
            principal: None,
        };
        let raw = |s: &str| serde_json::value::RawValue::from_string(s.into()).unwrap();
        // Round 1 asks `a`.
        let round1 = Mrtr::start(&signer, key.clone(), None, None).unwrap();
        round1.ask("a", "roots/list", json!({}));
        let state1 =
            serde_json::value::to_raw_value(&round1.next_state(&signer, Duration::from_secs(60)))
                .unwrap();
        // Round 2 answers `a`, and also `b`, which nobody asked.
        let round2 = Mrtr::start(
            &signer,
            key.clone(),
            Some(&state1),
            Some(&raw(
                r#"{"a":{"roots":[]},"b":{"roots":[{"uri":"file:///x"}]}}"#,
            )),
        )
        .unwrap();
        assert!(round2.answer("a", "roots/list").is_some());
        assert!(round2.answer("b", "roots/list").is_none(), "never asked");
        // Round 2 asks `c`; round 3 tries to replace the signed answer to `a`.
        round2.ask("c", "roots/list", json!({}));
        let state2 =
            serde_json::value::to_raw_value(&round2.next_state(&signer, Duration::from_secs(60)))
                .unwrap();
        let round3 = Mrtr::start(
            &signer,
            key,
            Some(&state2),
            Some(&raw(
                r#"{"a":{"roots":[{"uri":"file:///evil"}]},"c":{"roots":[]}}"#,
            )),
        )
        .unwrap();
        assert_eq!(
            round3.answer("a", "roots/list").unwrap().unwrap(),
            json!({"roots": []}),
            "the signed answer stays"
        );
        assert!(round3.answer("c", "roots/list").is_some());
    }

    #[test]
    fn malformed_answers_are_recorded() {
        let signer = Signer::new(b"k".repeat(32).as_slice()).unwrap();
        let key = RoundKey {
            method: "tools/call",
            name: "t".into(),
            arguments: None,
            principal: None,
        };
        let responses = serde_json::value::RawValue::from_string(r#"{"q":12345}"#.into()).unwrap();
        let m = Mrtr::start(&signer, key, None, Some(&responses)).unwrap();
        assert!(m.answer("q", "elicitation/create").unwrap().is_err());
        assert!(m.invalid().is_some());
        assert!(m.answer("other", "elicitation/create").is_none());
    }
}
