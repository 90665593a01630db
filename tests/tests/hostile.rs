//! Hostile and malformed input, over HTTP (in memory, and a real socket where only a socket
//! shows it) and over stdio: tables of cases, each with the exact status and JSON-RPC code it
//! must get, and after every case a normal `tools/call` that must still be answered exactly.
//!
//! The field cases are generated: every field of every request, with the wrong type, missing,
//! and `null` (see [`FIELDS`]). The case counts are printed by each table and recorded in
//! docs/security.md.

use std::sync::Arc;
use std::time::Duration;

use sake::Elicitation;
use sake::prelude::*;
use sake_tests::fixtures::{Sum, complete_style};
use sake_tests::raw::{self, RawReply, exchange, serve};
use sake_tests::{
    CLIENT_CAPABILITIES, Handshake, MODERN, Open, Req, Stdio, Wire, initialize_params, sentinel,
    validate,
};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// The server under test

#[path = "../fixtures/echo.rs"]
mod echo;

/// Adds two integers.
#[tool]
fn add(
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
) -> Sum {
    Sum {
        sum: a.saturating_add(b),
    }
}

/// Reports a region's status; its arguments travel in `Mcp-Param-*` headers too.
#[tool(name = "region")]
fn region_status(
    /// The region.
    #[arg(header = "Region")]
    region: String,
    /// A count.
    #[arg(header = "Count")]
    count: Option<i64>,
    /// A flag.
    #[arg(header = "Flag")]
    flag: Option<bool>,
) -> String {
    format!("{region}/{count:?}/{flag:?}")
}

/// A name from a form.
#[derive(Deserialize, JsonSchema)]
struct Answer {
    /// The name.
    name: String,
}

async fn asking(topic: String, ctx: Context) -> Result<String, String> {
    match ctx.elicit::<Answer>("q", "Your name?").await {
        Ok(Elicitation::Accepted(a)) => Ok(format!("{topic}: hello {}", a.name)),
        Ok(_) => Ok(format!("{topic}: declined")),
        Err(e) => Err(e.to_string()),
    }
}

/// Asks the user's name, then greets them.
#[tool]
async fn ask(
    /// What the question is about.
    topic: String,
    ctx: Context,
) -> Result<String, String> {
    asking(topic, ctx).await
}

/// Asks the same, under another name.
#[tool]
async fn ask_again(
    /// What the question is about.
    topic: String,
    ctx: Context,
) -> Result<String, String> {
    asking(topic, ctx).await
}

/// Greets someone.
#[prompt(complete = complete_style)]
fn greet(
    /// Who to greet.
    name: String,
    /// How.
    style: Option<String>,
) -> Vec<PromptMessage> {
    vec![PromptMessage::user(format!(
        "Greet {name} ({})",
        style.unwrap_or_default()
    ))]
}

/// What this server is.
#[resource(uri = "docs://about", mime_type = "text/plain")]
fn about() -> &'static str {
    "The hostile-input test server."
}

const NAME: &str = "hostile";
const VERSION: &str = "6.6.6";
const KEY: &str = "hostile-test-key-hostile-test-key-0123456789";
const OTHER_KEY: &str = "another-key-another-key-another-key-98765";
const BIG: usize = 16 << 20;

/// The authenticated caller an auth layer would put in the request's extensions.
#[derive(Clone, Debug)]
struct Caller(&'static str);

fn server() -> Server {
    Server::from_registry()
        .name(NAME)
        .version(VERSION)
        .session_key(KEY)
        .principal(|ext| ext.get::<Caller>().map(|c| c.0.to_owned()))
}

fn server_meta() -> Value {
    json!({"io.modelcontextprotocol/serverInfo": {"name": NAME, "version": VERSION}})
}

/// The exact answer to the normal request every case is followed by.
fn still_here(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": {
        "content": [{"type": "text", "text": "still here"}],
        "resultType": "complete",
        "_meta": server_meta(),
    }})
}

fn normal_call(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": sake_tests::with_meta(
        json!({"name": "echo", "arguments": {"text": "still here"}})
    )})
}

async fn still_serves(w: &Wire, id: u64) {
    w.rpc(
        id,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "still here"}}),
    )
    .await
    .assert_json(200, still_here(id));
}

// ---------------------------------------------------------------------------------------------
// Cases

/// What a case must get.
#[derive(Clone, Debug, PartialEq)]
enum Out {
    /// A JSON-RPC error with this code.
    Err(i64),
    /// A result that is not a tool error.
    Ok,
    /// A tool result with `isError: true`.
    ToolError,
    /// An empty body (202).
    Empty,
}

/// Which server a case is sent to.
#[derive(Clone, Copy, Debug)]
enum Target {
    /// The main server (`max_body_bytes` 16 MiB).
    Main,
    /// Same key, but session ids and `requestState` expire at once.
    Expiring,
    /// Same key, default limits (4 MiB bodies).
    Defaults,
}

/// One HTTP case.
struct Case {
    name: String,
    target: Target,
    /// The schema replies are validated against.
    rev: &'static str,
    build: Box<dyn Fn(&Fix) -> Req>,
    status: u16,
    out: Out,
    /// The exact error message, where the case pins it.
    message: Option<String>,
}

fn case(
    name: impl Into<String>,
    build: impl Fn(&Fix) -> Req + 'static,
    status: u16,
    out: Out,
) -> Case {
    Case {
        name: name.into(),
        target: Target::Main,
        rev: MODERN,
        build: Box::new(build),
        status,
        out,
        message: None,
    }
}

impl Case {
    fn on(mut self, target: Target) -> Case {
        self.target = target;
        self
    }

    fn rev(mut self, rev: &'static str) -> Case {
        self.rev = rev;
        self
    }

    fn message(mut self, m: impl Into<String>) -> Case {
        self.message = Some(m.into());
        self
    }
}

/// Everything the cases refer to, prepared before they run.
struct Fix {
    main: Wire,
    expiring: Wire,
    defaults: Wire,
    /// A 2025-11-25 session of the expiring server, expired.
    s_expired: Handshake,
    /// A 2025-11-25 session (elicitation declared), anonymous.
    s1125: Handshake,
    /// A 2025-03-26 session.
    s0326: Handshake,
    /// A session opened by alice.
    alice: Handshake,
    /// A session ended with DELETE.
    ended: Handshake,
    /// A session of a server with another key.
    foreign: Handshake,
    /// `requestState` of `ask {topic: "a"}`, issued to alice and to nobody.
    state_alice: String,
    state_anon: String,
    /// `requestState` that has expired.
    state_expired: String,
}

impl Fix {
    fn wire(&self, t: Target) -> &Wire {
        match t {
            Target::Main => &self.main,
            Target::Expiring => &self.expiring,
            Target::Defaults => &self.defaults,
        }
    }
}

fn elicit_meta() -> Value {
    json!({ CLIENT_CAPABILITIES: {"elicitation": {}} })
}

async fn first_state(w: &Wire, caller: Option<&'static str>) -> String {
    let mut req = Req::modern(
        1,
        "tools/call",
        json!({"name": "ask", "arguments": {"topic": "a"}, "_meta": elicit_meta()}),
    );
    if let Some(c) = caller {
        req = req.extension(Caller(c));
    }
    let reply = w.send(req).await;
    let result = &reply.json(200)["result"];
    assert_eq!(result["resultType"], "input_required", "{result}");
    result["requestState"].as_str().unwrap().to_owned()
}

async fn fixture() -> Fix {
    let main = Wire::new(server().max_body_bytes(BIG));
    // Sessions carry their end: one minted by this server lives a second.
    let expiring = Wire::new(
        server()
            .session_lifetime(Duration::from_secs(1))
            .request_state_lifetime(Duration::ZERO),
    );
    let defaults = Wire::new(server());
    let other = Wire::new(server().session_key(OTHER_KEY));
    let s1125 = main
        .handshake("2025-11-25", json!({"elicitation": {}}))
        .await;
    let s0326 = main.handshake("2025-03-26", json!({})).await;
    let alice = main
        .handshake_with("2025-11-25", json!({}), |r| r.extension(Caller("alice")))
        .await;
    let ended = main.handshake("2025-11-25", json!({})).await;
    let reply = main
        .send(
            Req::in_session(&ended, Vec::new())
                .http_method(http::Method::DELETE)
                .without("content-type"),
        )
        .await;
    assert_eq!(reply.status, 200);
    let foreign = other.handshake("2025-11-25", json!({})).await;
    let state_alice = first_state(&main, Some("alice")).await;
    let state_anon = first_state(&main, None).await;
    let state_expired = first_state(&expiring, None).await;
    let s_expired = expiring.handshake("2025-11-25", json!({})).await;
    // Session ids and requestState carry whole seconds: after this, the expiring server's are
    // all expired.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    Fix {
        main,
        expiring,
        defaults,
        s1125,
        s0326,
        alice,
        ended,
        foreign,
        state_alice,
        state_anon,
        state_expired,
        s_expired,
    }
}

/// The status, content type and first JSON-RPC message (or array) of a reply, validated. An
/// SSE reply is read up to its response, or its subscription acknowledgement.
async fn fetch(w: &Wire, rev: &'static str, req: Req) -> Result<(u16, Option<Value>), String> {
    // A body the test cannot read as JSON either: the method its headers name.
    let method = req
        .body_json()
        .and_then(|b| b.get("method").and_then(Value::as_str).map(str::to_owned))
        .or_else(|| req.header_str("mcp-method").map(str::to_owned));
    let methods: std::collections::HashMap<String, String> = match req.body_json() {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(|m| {
                Some((
                    m.get("id")?.to_string(),
                    m.get("method")?.as_str()?.to_owned(),
                ))
            })
            .collect(),
        _ => Default::default(),
    };
    let mut open: Open = w.open_raw_as(rev, req).await;
    let status = open.status;
    if open.content_type() == Some("text/event-stream") {
        while let Some(ev) = open.next_event().await {
            let m: Value = serde_json::from_str(ev.data.as_deref().unwrap()).unwrap();
            checked(rev, method.as_deref(), &m)?;
            if m.get("id").is_some() && m.get("method").is_none() {
                return Ok((status, Some(m)));
            }
            if m["method"] == "notifications/subscriptions/acknowledged" {
                return Ok((status, Some(json!({"result": {}}))));
            }
        }
        return Ok((status, None));
    }
    let ct = open.content_type().map(str::to_owned);
    let body = open.rest().await;
    if body.is_empty() {
        assert_eq!(ct, None, "an empty body has no Content-Type");
        return Ok((status, None));
    }
    assert_eq!(ct.as_deref(), Some("application/json"));
    let v: Value = serde_json::from_slice(&body).expect("a JSON body");
    match &v {
        Value::Array(items) => {
            for m in items {
                let method = m.get("id").and_then(|id| methods.get(&id.to_string()));
                checked(rev, method.map(String::as_str), m)?;
            }
        }
        m => checked(rev, method.as_deref(), m)?,
    }
    Ok((status, Some(v)))
}

/// Validates a message, turning the validator's panic into a failure to report.
fn checked(rev: &str, method: Option<&str>, m: &Value) -> Result<(), String> {
    std::panic::catch_unwind(|| validate(rev, method, m)).map_err(|p| {
        p.downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_default()
    })
}

fn outcome(v: Option<&Value>) -> (Out, Option<String>) {
    match v {
        None => (Out::Empty, None),
        Some(m) if m.get("error").is_some() => (
            Out::Err(m["error"]["code"].as_i64().unwrap()),
            m["error"]["message"].as_str().map(str::to_owned),
        ),
        Some(m) if m["result"]["isError"] == true => (Out::ToolError, None),
        Some(Value::Array(_)) => (Out::Ok, None),
        Some(_) => (Out::Ok, None),
    }
}

/// Runs a table: every case, then the normal request; returns every mismatch.
async fn run(fix: &Fix, cases: &[Case]) -> Vec<String> {
    let mut failures = Vec::new();
    for (i, c) in cases.iter().enumerate() {
        let w = fix.wire(c.target);
        let (status, first) = match fetch(w, c.rev, (c.build)(fix)).await {
            Ok(v) => v,
            Err(e) => {
                failures.push(format!("{}: invalid reply: {e}", c.name));
                still_serves(w, 100_000 + i as u64).await;
                continue;
            }
        };
        let (out, message) = outcome(first.as_ref());
        let message_ok = c.message.is_none() || c.message == message;
        if status != c.status || out != c.out || !message_ok {
            failures.push(format!(
                "{}: got {status} {out:?} {message:?}, want {} {:?} {:?}\n    {}",
                c.name,
                c.status,
                c.out,
                c.message,
                first
                    .map(|v| common_clip(&v.to_string()))
                    .unwrap_or_default()
            ));
        }
        still_serves(w, 100_000 + i as u64).await;
    }
    failures
}

fn common_clip(s: &str) -> String {
    s.chars().take(400).collect()
}

// ---------------------------------------------------------------------------------------------
// Generated: every field of every request, with the wrong type, missing, or null

/// How a field is spoiled.
#[derive(Clone, Copy, Debug)]
enum Spoil {
    Wrong,
    Missing,
    Null,
}

/// One field: the method, its path in the message, a value of the wrong type, and what each
/// spoiling gets over HTTP (status, outcome) and over stdio (outcome; `None` = no answer).
struct Field {
    method: &'static str,
    path: &'static [&'static str],
    wrong: fn() -> Value,
    http: [(u16, Out); 3],
    stdio: [Option<Out>; 3],
    legacy: bool,
}

const PV: &str = "io.modelcontextprotocol/protocolVersion";
const CC: &str = "io.modelcontextprotocol/clientCapabilities";
const CI: &str = "io.modelcontextprotocol/clientInfo";
const LL: &str = "io.modelcontextprotocol/logLevel";

fn base_params(method: &str) -> Value {
    match method {
        "tools/call" => json!({"name": "echo", "arguments": {"text": "hi"}}),
        "prompts/get" => json!({"name": "greet", "arguments": {"name": "Ada"}}),
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => {
            json!({"uri": "docs://about"})
        }
        "completion/complete" => json!({
            "ref": {"type": "ref/prompt", "name": "greet"},
            "argument": {"name": "style", "value": "f"},
            "context": {"arguments": {"name": "Ada"}},
        }),
        "subscriptions/listen" => json!({"notifications": {"toolsListChanged": true}}),
        "initialize" => json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "c", "version": "1"},
        }),
        "logging/setLevel" => json!({"level": "info"}),
        "notifications/cancelled" => json!({"requestId": 12345}),
        _ => json!({}),
    }
}

fn spoil(mut v: Value, path: &[&str], how: Spoil, wrong: Value) -> Value {
    let (last, parents) = path.split_last().unwrap();
    let mut at = &mut v;
    for p in parents {
        at = &mut at[*p];
    }
    let obj = at.as_object_mut().unwrap();
    match how {
        Spoil::Wrong => {
            obj.insert((*last).to_owned(), wrong);
        }
        Spoil::Missing => {
            obj.remove(*last);
        }
        Spoil::Null => {
            obj.insert((*last).to_owned(), Value::Null);
        }
    }
    v
}

/// The message a field case sends, before spoiling.
fn base_message(f: &Field) -> Value {
    let params = if f.legacy {
        base_params(f.method)
    } else {
        sake_tests::with_meta(base_params(f.method))
    };
    let mut m = json!({"jsonrpc": "2.0", "id": 7, "method": f.method, "params": params});
    if f.method.starts_with("notifications/") {
        m.as_object_mut().unwrap().remove("id");
    }
    m
}

const E400_32600: (u16, Out) = (400, Out::Err(-32600));
const E400_32602: (u16, Out) = (400, Out::Err(-32602));
const E400_32020: (u16, Out) = (400, Out::Err(-32020));
const E200_32602: (u16, Out) = (200, Out::Err(-32602));
const OK: (u16, Out) = (200, Out::Ok);
const TOOL_ERR: (u16, Out) = (200, Out::ToolError);
const ACCEPTED: (u16, Out) = (202, Out::Empty);
const S_32600: Option<Out> = Some(Out::Err(-32600));
const S_32602: Option<Out> = Some(Out::Err(-32602));
const S_OK: Option<Out> = Some(Out::Ok);
const S_TOOL_ERR: Option<Out> = Some(Out::ToolError);

macro_rules! field {
    (legacy $method:expr, [$($p:expr),*], $wrong:expr, http [$($h:expr),*]) => {
        Field { method: $method, path: &[$($p),*], wrong: || $wrong, http: [$($h),*], stdio: [None, None, None], legacy: true }
    };
    ($method:expr, [$($p:expr),*], $wrong:expr, http [$($h:expr),*], stdio [$($s:expr),*]) => {
        Field { method: $method, path: &[$($p),*], wrong: || $wrong, http: [$($h),*], stdio: [$($s),*], legacy: false }
    };
}

/// Every field of every request: (method, field, wrong value) → what wrong / missing / null get.
fn fields() -> Vec<Field> {
    let list = |m: &'static str| field!(m, ["params", "cursor"], json!(42), http [E200_32602, OK, OK], stdio [S_32602, S_OK, S_OK]);
    vec![
        // The envelope.
        field!("tools/call", ["jsonrpc"], json!("1.0"), http [E400_32600, E400_32600, E400_32600], stdio [S_32600, S_32600, S_32600]),
        field!("tools/call", ["id"], json!(true), http [E400_32600, ACCEPTED, E400_32600], stdio [S_32600, None, S_32600]),
        field!("tools/call", ["method"], json!(42), http [E400_32600, E400_32600, E400_32600], stdio [S_32600, S_32600, S_32600]),
        field!("tools/call", ["params"], json!("x"), http [E400_32602, E400_32602, E400_32602], stdio [S_32602, S_32602, S_32602]),
        // `_meta` (2026-07-28 Base Protocol, `_meta` "Per-request protocol fields").
        field!("tools/call", ["params", "_meta"], json!("x"), http [E400_32602, E400_32602, E400_32602], stdio [S_32602, S_32602, S_32602]),
        field!("tools/call", ["params", "_meta", PV], json!(5), http [E400_32602, E400_32602, E400_32602], stdio [S_32602, S_32602, S_32602]),
        field!("tools/call", ["params", "_meta", CC], json!([]), http [E400_32602, E400_32602, E400_32602], stdio [S_32602, S_32602, S_32602]),
        field!("tools/call", ["params", "_meta", CI], json!(["c", "1"]), http [E400_32602, OK, OK], stdio [S_32602, S_OK, S_OK]),
        field!("tools/call", ["params", "_meta", LL], json!("loud"), http [E400_32602, OK, OK], stdio [S_32602, S_OK, S_OK]),
        field!("tools/call", ["params", "_meta", "progressToken"], json!(1.5), http [E400_32602, OK, OK], stdio [S_32602, S_OK, S_OK]),
        field!("server/discover", ["params", "_meta", CC], json!("all"), http [E400_32602, E400_32602, E400_32602], stdio [S_32602, S_32602, S_32602]),
        // tools/call
        field!("tools/call", ["params", "name"], json!(42), http [E400_32020, E400_32020, E400_32020], stdio [S_32602, S_32602, S_32602]),
        field!("tools/call", ["params", "arguments"], json!("x"), http [E200_32602, TOOL_ERR, TOOL_ERR], stdio [S_32602, S_TOOL_ERR, S_TOOL_ERR]),
        field!("tools/call", ["params", "arguments", "text"], json!(42), http [TOOL_ERR, TOOL_ERR, TOOL_ERR], stdio [S_TOOL_ERR, S_TOOL_ERR, S_TOOL_ERR]),
        field!("tools/call", ["params", "requestState"], json!(42), http [E200_32602, OK, E200_32602], stdio [S_32602, S_OK, S_32602]),
        field!("tools/call", ["params", "inputResponses"], json!(42), http [E200_32602, OK, E200_32602], stdio [S_32602, S_OK, S_32602]),
        // prompts/get
        field!("prompts/get", ["params", "name"], json!(42), http [E400_32020, E400_32020, E400_32020], stdio [S_32602, S_32602, S_32602]),
        field!("prompts/get", ["params", "arguments"], json!("x"), http [E200_32602, E200_32602, E200_32602], stdio [S_32602, S_32602, S_32602]),
        field!("prompts/get", ["params", "arguments", "name"], json!(42), http [E200_32602, E200_32602, E200_32602], stdio [S_32602, S_32602, S_32602]),
        // resources/read
        field!("resources/read", ["params", "uri"], json!(42), http [E400_32020, E400_32020, E400_32020], stdio [S_32602, S_32602, S_32602]),
        // Lists.
        list("tools/list"),
        list("prompts/list"),
        list("resources/list"),
        list("resources/templates/list"),
        // completion/complete
        field!("completion/complete", ["params", "ref"], json!("x"), http [E200_32602, E200_32602, E200_32602], stdio [S_32602, S_32602, S_32602]),
        field!("completion/complete", ["params", "ref", "type"], json!(5), http [E200_32602, E200_32602, E200_32602], stdio [S_32602, S_32602, S_32602]),
        field!("completion/complete", ["params", "ref", "name"], json!(5), http [E200_32602, E200_32602, E200_32602], stdio [S_32602, S_32602, S_32602]),
        field!("completion/complete", ["params", "argument"], json!(["style", "f"]), http [E200_32602, E200_32602, E200_32602], stdio [S_32602, S_32602, S_32602]),
        field!("completion/complete", ["params", "argument", "name"], json!(5), http [E200_32602, E200_32602, E200_32602], stdio [S_32602, S_32602, S_32602]),
        field!("completion/complete", ["params", "argument", "value"], json!(5), http [E200_32602, E200_32602, E200_32602], stdio [S_32602, S_32602, S_32602]),
        field!("completion/complete", ["params", "context"], json!("x"), http [E200_32602, OK, OK], stdio [S_32602, S_OK, S_OK]),
        field!("completion/complete", ["params", "context", "arguments"], json!("x"), http [E200_32602, OK, OK], stdio [S_32602, S_OK, S_OK]),
        // subscriptions/listen
        field!("subscriptions/listen", ["params", "notifications"], json!([true]), http [E200_32602, E200_32602, E200_32602], stdio [S_32602, S_32602, S_32602]),
        field!("subscriptions/listen", ["params", "notifications", "toolsListChanged"], json!("yes"), http [E200_32602, OK, E200_32602], stdio [S_32602, S_OK, S_32602]),
        field!("subscriptions/listen", ["params", "notifications", "resourceSubscriptions"], json!("docs://about"), http [E200_32602, OK, OK], stdio [S_32602, S_OK, S_OK]),
        // Handshake sessions (2025-11-25).
        field!(legacy "initialize", ["params", "protocolVersion"], json!(20251125), http [E200_32602, E200_32602, E200_32602]),
        field!(legacy "initialize", ["params", "capabilities"], json!([]), http [E200_32602, OK, OK]),
        field!(legacy "initialize", ["params", "clientInfo"], json!("c 1"), http [E200_32602, OK, OK]),
        field!(legacy "logging/setLevel", ["params", "level"], json!(5), http [E200_32602, E200_32602, E200_32602]),
        field!(legacy "resources/subscribe", ["params", "uri"], json!(5), http [E200_32602, E200_32602, E200_32602]),
        field!(legacy "resources/unsubscribe", ["params", "uri"], json!(5), http [E200_32602, E200_32602, E200_32602]),
        field!(legacy "tools/call", ["params", "name"], json!(5), http [E200_32602, E200_32602, E200_32602]),
        field!(legacy "tools/call", ["params", "arguments"], json!([1]), http [E200_32602, TOOL_ERR, TOOL_ERR]),
        field!(legacy "prompts/get", ["params", "name"], json!(5), http [E200_32602, E200_32602, E200_32602]),
        field!(legacy "resources/read", ["params", "uri"], json!(5), http [E200_32602, E200_32602, E200_32602]),
        field!(legacy "notifications/cancelled", ["params", "requestId"], json!({}), http [ACCEPTED, ACCEPTED, ACCEPTED]),
        field!(legacy "tools/call", ["params", "_meta"], json!("x"), http [E200_32602, OK, OK]),
    ]
}

const SPOILS: [Spoil; 3] = [Spoil::Wrong, Spoil::Missing, Spoil::Null];

fn field_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for f in fields() {
        let f = Arc::new(f);
        for (k, how) in SPOILS.into_iter().enumerate() {
            let (status, out) = f.http[k].clone();
            let name = format!("{} {} {how:?}", f.method, f.path.join("."));
            let f2 = f.clone();
            let build = move |fix: &Fix| {
                let base = base_message(&f2);
                let body = spoil(base.clone(), f2.path, how, (f2.wrong)());
                let bytes = serde_json::to_vec(&body).unwrap();
                if f2.legacy {
                    if f2.method == "initialize" {
                        Req::post(bytes)
                    } else {
                        Req::in_session(&fix.s1125, bytes)
                    }
                } else {
                    // Headers from the message as it was: the body alone is spoiled.
                    Req::modern_exact(7, f2.method, base["params"].clone()).body(bytes)
                }
            };
            let rev = if f.legacy { "2025-11-25" } else { MODERN };
            cases.push(case(name, build, status, out).rev(rev));
        }
    }
    cases
}

// ---------------------------------------------------------------------------------------------
// Hand-written HTTP cases

fn raw(bytes: impl Into<Vec<u8>>) -> impl Fn(&Fix) -> Req + 'static {
    let bytes = bytes.into();
    move |_| {
        Req::modern(
            1,
            "tools/call",
            json!({"name": "echo", "arguments": {"text": "x"}}),
        )
        .body(bytes.clone())
    }
}

fn call(params: Value) -> impl Fn(&Fix) -> Req + 'static {
    move |_| Req::modern(1, "tools/call", params.clone())
}

fn nested(open: &str, close: &str, depth: usize) -> String {
    format!("{}1{}", open.repeat(depth), close.repeat(depth))
}

fn echo_body(text_json: &str) -> Vec<u8> {
    let meta = sake_tests::meta().to_string();
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":{text_json}}},"_meta":{meta}}}}}"#
    )
    .into_bytes()
}

fn add_body(a_json: &str) -> Vec<u8> {
    let meta = sake_tests::meta().to_string();
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"add","arguments":{{"a":{a_json},"b":1}},"_meta":{meta}}}}}"#
    )
    .into_bytes()
}

fn add_req(a_json: &str) -> impl Fn(&Fix) -> Req + 'static {
    let body = add_body(a_json);
    move |_| {
        Req::modern(
            1,
            "tools/call",
            json!({"name": "add", "arguments": {"a": 1, "b": 1}}),
        )
        .body(body.clone())
    }
}

fn with_id(id_json: &str) -> Vec<u8> {
    let meta = sake_tests::meta().to_string();
    format!(
        r#"{{"jsonrpc":"2.0","id":{id_json},"method":"tools/list","params":{{"_meta":{meta}}}}}"#
    )
    .into_bytes()
}

fn list_with_id(id_json: &str) -> impl Fn(&Fix) -> Req + 'static {
    let body = with_id(id_json);
    move |_| Req::modern(1, "tools/list", json!({})).body(body.clone())
}

/// `region` with its headers as given.
fn region_req(args: Value, headers: &[(&str, &[u8])]) -> impl Fn(&Fix) -> Req + 'static {
    let headers: Vec<(String, Vec<u8>)> = headers
        .iter()
        .map(|(n, v)| ((*n).to_owned(), v.to_vec()))
        .collect();
    move |_| {
        let mut req = Req::modern(
            1,
            "tools/call",
            json!({"name": "region", "arguments": args.clone()}),
        );
        if let Some(r) = args["region"].as_str() {
            req = req.header("mcp-param-region", &sake_tests::header_value(r));
        }
        for (n, v) in &headers {
            req = req.header_bytes(n, v);
        }
        req
    }
}

fn tampered(state: &str) -> String {
    let mut b = state.as_bytes().to_vec();
    let i = b.len() - 3;
    b[i] = if b[i] == b'A' { b'B' } else { b'A' };
    String::from_utf8(b).unwrap()
}

fn retry(
    tool: &'static str,
    topic: &'static str,
    state: fn(&Fix) -> String,
    caller: Option<&'static str>,
) -> impl Fn(&Fix) -> Req + 'static {
    move |fix| {
        let req = Req::modern(
            2,
            "tools/call",
            json!({
                "name": tool,
                "arguments": {"topic": topic},
                "requestState": state(fix),
                "inputResponses": {"q": {"action": "accept", "content": {"name": "Ada"}}},
                "_meta": elicit_meta(),
            }),
        );
        match caller {
            Some(c) => req.extension(Caller(c)),
            None => req,
        }
    }
}

fn in_session(
    which: fn(&Fix) -> &Handshake,
    method: &'static str,
    params: Value,
) -> impl Fn(&Fix) -> Req + 'static {
    move |fix| Req::in_handshake(which(fix), 3, method, params.clone())
}

fn batch_of(n: usize, method: &str) -> Vec<u8> {
    let items: Vec<String> = (0..n)
        .map(|i| format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"{method}"}}"#))
        .collect();
    format!("[{}]", items.join(",")).into_bytes()
}

const REQUEST_STATE_ERROR: &str = "Invalid params: requestState integrity check failed (it was altered, has expired, or belongs to another request); retry without it";

fn session_gone(reason: &str) -> String {
    format!("Session not found: the Mcp-Session-Id {reason}; start a new session with `initialize`")
}

fn hand_cases() -> Vec<Case> {
    use Out::*;
    let deep = 100_000;
    let meta = sake_tests::meta().to_string();
    vec![
        // Not JSON, not UTF-8, not one JSON-RPC object.
        case("truncated JSON", raw(&b"{\"jsonrpc\":"[..]), 400, Err(-32700)),
        case("not JSON", raw(&b"hello"[..]), 400, Err(-32700)),
        case("empty body", raw(Vec::new()), 400, Err(-32700)),
        case("invalid UTF-8 in a string", raw(echo_body("\"\u{0}\"").iter().map(|&b| if b == 0 { 0xff } else { b }).collect::<Vec<u8>>()), 400, Err(-32700)),
        case("overlong UTF-8", raw(echo_body("\"\u{1}\"").iter().flat_map(|&b| if b == 1 { vec![0xc0, 0xaf] } else { vec![b] }).collect::<Vec<u8>>()), 400, Err(-32700)),
        case("UTF-8 byte order mark", raw([&b"\xef\xbb\xbf"[..], &echo_body("\"x\"")].concat()), 400, Err(-32700)),
        case("lone surrogate escape", raw(echo_body(r#""\ud800""#)), 200, ToolError),
        case("NUL escape in a string is data", raw(echo_body(r#""a\u0000b""#)), 200, Ok),
        // Nesting the server never reads is skipped without recursion: a valid JSON object
        // without `jsonrpc`.
        case("objects nested 100,000 deep", raw(nested("{\"a\":", "}", deep)), 400, Err(-32600)),
        case("arrays nested 100,000 deep", raw(nested("[", "]", deep)), 400, Err(-32600)),
        case("arguments nested 100,000 deep", raw(echo_body(&nested("[", "]", deep))), 200, ToolError),
        case("an unread argument nested 100,000 deep", |_| Req::modern(1, "tools/call", json!({"name": "echo", "arguments": {"text": "x"}})).body(echo_body(&format!("\"x\",\"junk\":{}", nested("[", "]", 100_000)))), 200, Ok),
        case("an unreadable argument cannot hide a Mcp-Param", |_| Req::modern(1, "tools/call", json!({"name": "region", "arguments": {"region": "eu"}})).body(format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"region","arguments":{{"region":"eu","junk":1e400}},"_meta":{}}}}}"#, sake_tests::meta())), 200, Err(-32602)),
        case("arguments nested 100 deep", raw(echo_body(&nested("[", "]", 100))), 200, ToolError),
        case("trailing garbage", raw([&echo_body("\"x\"")[..], b"xyz"].concat()), 400, Err(-32700)),
        case("two messages in one body", raw([echo_body("\"x\""), echo_body("\"y\"")].concat()), 400, Err(-32700)),
        case("body null", raw(&b"null"[..]), 400, Err(-32600)),
        case("body a number", raw(&b"42"[..]), 400, Err(-32600)),
        case("body a string", raw(&b"\"tools/call\""[..]), 400, Err(-32600)),
        case("empty array outside a session", raw(&b"[]"[..]), 400, Err(-32600)),
        case("a response outside a session", raw(&br#"{"jsonrpc":"2.0","id":1,"result":{}}"#[..]), 400, Err(-32600)),
        case("duplicate method member", raw(format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","method":"tools/list","params":{{"_meta":{meta}}}}}"#)), 400, Err(-32600)),
        case("duplicate name in params", raw(format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo","name":"add","arguments":{{"text":"x"}},"_meta":{meta}}}}}"#)), 400, Err(-32602)),
        // Huge numbers and strings.
        case("id 1e999", list_with_id("1e999"), 400, Err(-32600)),
        case("id 2^64", list_with_id("18446744073709551616"), 400, Err(-32600)),
        case("id i64::MAX + 1", list_with_id("9223372036854775808"), 400, Err(-32600)),
        case("id 1.5", list_with_id("1.5"), 400, Err(-32600)),
        case("id i64::MIN", list_with_id("-9223372036854775808"), 200, Ok),
        case("id a 100 KiB string", list_with_id(&format!("\"{}\"", "i".repeat(100 << 10))), 200, Ok),
        case("argument 1e400", add_req("1e400"), 200, ToolError),
        case("argument of 10,000 digits", add_req(&"9".repeat(10_000)), 200, ToolError),
        case("argument i64::MAX + 1", add_req("9223372036854775808"), 200, ToolError),
        case("argument -0 is a float", add_req("-0"), 200, ToolError),
        case("a 3 MiB string", call(json!({"name": "echo", "arguments": {"text": "x".repeat(3 << 20)}})), 200, Ok),
        case("a million escapes", raw(echo_body(&format!("\"{}\"", "\\u00e9".repeat(1_000_000)))), 200, Ok),
        case("100,000 unknown arguments", call(json!({"name": "echo", "arguments": (0..100_000).map(|i| (format!("k{i}"), json!(i))).chain([("text".to_owned(), json!("x"))]).collect::<serde_json::Map<_, _>>()})), 200, Ok),
        case("a 1 MiB tool name", call(json!({"name": "t".repeat(1 << 20)})), 200, Err(-32602)),
        // Size, media type, Accept.
        case("body over the limit, with Content-Length", move |_| { let r = Req::modern(1, "tools/call", json!({"name": "echo", "arguments": {"text": "x".repeat(BIG)}})); let len = r.body_len().to_string(); r.header("content-length", &len) }, 413, Err(-32000)).message(format!("Payload Too Large: the body exceeds {BIG} bytes")),
        case("body over the limit, streamed", move |_| { let r = Req::modern(1, "tools/call", json!({"name": "echo", "arguments": {"text": "x".repeat(BIG)}})); r.without("content-length") }, 413, Err(-32000)),
        case("Content-Length over the limit, small body", |_| Req::modern(1, "tools/list", json!({})).header("content-length", &(BIG + 1).to_string()), 413, Err(-32000)),
        case("Content-Type text/plain", |_| Req::modern(1, "tools/list", json!({})).header("content-type", "text/plain"), 415, Err(-32000)),
        case("Content-Type missing", |_| Req::modern(1, "tools/list", json!({})).without("content-type"), 415, Err(-32000)),
        case("Content-Type application/jsonx", |_| Req::modern(1, "tools/list", json!({})).header("content-type", "application/jsonx"), 415, Err(-32000)),
        case("Content-Type application/json-seq", |_| Req::modern(1, "tools/list", json!({})).header("content-type", "application/json-seq"), 415, Err(-32000)),
        case("Content-Type with obs-text", |_| Req::modern(1, "tools/list", json!({})).header_bytes("content-type", b"application/json\xff"), 415, Err(-32000)),
        case("Accept missing", |_| Req::modern(1, "tools/list", json!({})).without("accept"), 200, Ok),
        case("Accept application/json only, progress asked", |_| Req::modern(1, "tools/call", json!({"name": "echo", "arguments": {"text": "x"}, "_meta": {"progressToken": "p"}})).header("accept", "application/json"), 200, Ok),
        case("Accept text/event-stream only", |_| Req::modern(1, "tools/list", json!({})).header("accept", "text/event-stream"), 200, Ok),
        case("Accept text/html", |_| Req::modern(1, "tools/list", json!({})).header("accept", "text/html"), 200, Ok),
        case("Accept with obs-text", |_| Req::modern(1, "tools/list", json!({})).header_bytes("accept", b"\xfe\xff"), 200, Ok),
        // Header bytes that reach the server (hyper refuses CR, LF and NUL: see the socket table).
        case("Mcp-Name with obs-text", |_| Req::modern(1, "tools/call", json!({"name": "echo", "arguments": {"text": "x"}})).header_bytes("mcp-name", b"ech\xf6"), 400, Err(-32020)),
        case("Mcp-Name with an interior tab", |_| Req::modern(1, "tools/call", json!({"name": "echo", "arguments": {"text": "x"}})).header_bytes("mcp-name", b"ec\tho"), 400, Err(-32020)),
        case("Mcp-Name surrounded by tabs and spaces", |_| Req::modern(1, "tools/call", json!({"name": "echo", "arguments": {"text": "x"}})).header_bytes("mcp-name", b"\t echo \t"), 200, Ok),
        case("Mcp-Method twice", |_| Req::modern(1, "tools/list", json!({})).append_header("mcp-method", b"tools/list"), 400, Err(-32020)).message("Header mismatch: the Mcp-Method header appears more than once; send it once"),
        case("Mcp-Name twice", |_| Req::modern(1, "tools/call", json!({"name": "echo", "arguments": {"text": "x"}})).append_header("mcp-name", b"add"), 400, Err(-32020)),
        case("MCP-Protocol-Version twice", |_| Req::modern(1, "tools/list", json!({})).append_header("mcp-protocol-version", b"2026-07-28"), 400, Err(-32020)),
        case("Mcp-Name of 64 KiB", |_| Req::modern(1, "tools/call", json!({"name": "echo", "arguments": {"text": "x"}})).header("mcp-name", &"e".repeat(64 << 10)), 400, Err(-32020)),
        case("Mcp-Param with obs-text", region_req(json!({"region": "eu"}), &[("mcp-param-region", b"e\xfcu")]), 400, Err(-32020)),
        // Base64 sentinel (2026-07-28 Streamable HTTP transport, Base64 encoding of header values).
        case("sentinel: UTF-8 value", region_req(json!({"region": "Hello, 世界"}), &[("mcp-param-region", b"=?base64?SGVsbG8sIOS4lueVjA==?=")]), 200, Ok),
        case("sentinel: missing padding", region_req(json!({"region": "Hello"}), &[("mcp-param-region", b"=?base64?SGVsbG8?=")]), 400, Err(-32020)),
        case("sentinel: bad alphabet", region_req(json!({"region": "Hello"}), &[("mcp-param-region", b"=?base64?SGVs!!!bG8=?=")]), 400, Err(-32020)),
        case("sentinel: URL-safe alphabet", region_req(json!({"region": "\u{fb}\u{ff}"}), &[("mcp-param-region", b"=?base64?-_8=?=")]), 400, Err(-32020)),
        case("sentinel: space inside", region_req(json!({"region": "Hello"}), &[("mcp-param-region", b"=?base64?SGVs bG8=?=")]), 400, Err(-32020)),
        case("sentinel: non-zero trailing bits", region_req(json!({"region": "Hello"}), &[("mcp-param-region", b"=?base64?SGVsbG9=?=")]), 400, Err(-32020)),
        case("sentinel: not UTF-8", region_req(json!({"region": "x"}), &[("mcp-param-region", b"=?base64?/w==?=")]), 400, Err(-32020)),
        case("sentinel: empty value", region_req(json!({"region": ""}), &[("mcp-param-region", b"=?base64??=")]), 200, Ok),
        case("sentinel: uppercase prefix is literal", region_req(json!({"region": "=?BASE64?SGVsbG8=?="}), &[("mcp-param-region", b"=?BASE64?SGVsbG8=?=")]), 200, Ok),
        case("sentinel: uppercase prefix is not decoded", region_req(json!({"region": "Hello"}), &[("mcp-param-region", b"=?BASE64?SGVsbG8=?=")]), 400, Err(-32020)),
        case("sentinel: missing prefix is literal", region_req(json!({"region": "base64?SGVsbG8=?="}), &[("mcp-param-region", b"base64?SGVsbG8=?=")]), 200, Ok),
        case("sentinel: missing suffix is literal", region_req(json!({"region": "=?base64?SGVsbG8="}), &[("mcp-param-region", b"=?base64?SGVsbG8=")]), 200, Ok),
        case("sentinel: a raw sentinel-looking value is decoded", region_req(json!({"region": "=?base64?SGk=?="}), &[("mcp-param-region", b"=?base64?SGk=?=")]), 400, Err(-32020)),
        case("sentinel: a sentinel-looking value, encoded", region_req(json!({"region": "=?base64?SGk=?="}), &[("mcp-param-region", sentinel(b"=?base64?SGk=?=").as_bytes())]), 200, Ok),
        case("sentinel: leading and trailing spaces, encoded", region_req(json!({"region": " lead "}), &[("mcp-param-region", sentinel(b" lead ").as_bytes())]), 200, Ok),
        case("sentinel: leading space sent raw is trimmed", region_req(json!({"region": " lead"}), &[("mcp-param-region", b" lead")]), 400, Err(-32020)),
        case("sentinel: CR LF inside, encoded", region_req(json!({"region": "a\r\nb"}), &[("mcp-param-region", sentinel(b"a\r\nb").as_bytes())]), 200, Ok),
        case("sentinel: Mcp-Name encoded", |_| Req::modern(1, "tools/call", json!({"name": "echo", "arguments": {"text": "x"}})).header("mcp-name", &sentinel(b"echo")), 200, Ok),
        case("sentinel: Mcp-Name with a mixed-case prefix", |_| Req::modern(1, "tools/call", json!({"name": "echo", "arguments": {"text": "x"}})).header("mcp-name", "=?Base64?ZWNobw==?="), 400, Err(-32020)),
        case("Mcp-Param integer 42.0 for 42", region_req(json!({"region": "eu", "count": 42}), &[("mcp-param-count", b"42.0")]), 200, Ok),
        case("Mcp-Param integer 4.2e1 for 42", region_req(json!({"region": "eu", "count": 42}), &[("mcp-param-count", b"4.2e1")]), 200, Ok),
        case("Mcp-Param integer encoded", region_req(json!({"region": "eu", "count": 42}), &[("mcp-param-count", b"=?base64?NDI=?=")]), 200, Ok),
        case("Mcp-Param integer 0x2a", region_req(json!({"region": "eu", "count": 42}), &[("mcp-param-count", b"0x2a")]), 400, Err(-32020)),
        case("Mcp-Param boolean TRUE", region_req(json!({"region": "eu", "flag": true}), &[("mcp-param-flag", b"TRUE")]), 400, Err(-32020)),
        case("Mcp-Param without its argument", region_req(json!({"region": "eu"}), &[("mcp-param-count", b"1")]), 400, Err(-32020)),
        case("argument without its Mcp-Param", region_req(json!({"region": "eu", "flag": false}), &[]), 400, Err(-32020)),
        case("every Mcp-Param right", region_req(json!({"region": "eu", "count": -7, "flag": false}), &[("mcp-param-count", b"-7"), ("mcp-param-flag", b"false")]), 200, Ok),
        // Host and Origin (DNS rebinding).
        case("Host foreign", |_| Req::modern(1, "tools/list", json!({})).header("host", "evil.example.com"), 403, Err(-32000)),
        case("Origin foreign", |_| Req::modern(1, "tools/list", json!({})).header("origin", "http://evil.example.com"), 403, Err(-32000)),
        case("Origin null", |_| Req::modern(1, "tools/list", json!({})).header("origin", "null"), 403, Err(-32000)),
        case("Origin file://", |_| Req::modern(1, "tools/list", json!({})).header("origin", "file://localhost"), 403, Err(-32000)),
        case("Origin with userinfo", |_| Req::modern(1, "tools/list", json!({})).header("origin", "http://localhost@evil.example.com"), 403, Err(-32000)),
        case("Host with a fragment before .localhost", |_| Req::modern(1, "tools/list", json!({})).header("host", "evil.example#.localhost"), 403, Err(-32000)),
        case("Host localhost.evil", |_| Req::modern(1, "tools/list", json!({})).header("host", "localhost.evil.example.com"), 403, Err(-32000)),
        case("Host with obs-text", |_| Req::modern(1, "tools/list", json!({})).header_bytes("host", b"localh\xf6st"), 403, Err(-32000)),
        case("Host twice, one foreign", |_| Req::modern(1, "tools/list", json!({})).append_header("host", b"evil.example.com"), 403, Err(-32000)),
        case("Origin twice, one foreign", |_| Req::modern(1, "tools/list", json!({})).header("origin", "http://localhost").append_header("origin", b"http://evil.example.com"), 403, Err(-32000)),
        case("Host and Origin in capitals", |_| Req::modern(1, "tools/list", json!({})).header("host", "LOCALHOST:3000").header("origin", "HTTP://LOCALHOST:3000"), 200, Ok),
        case("GET with a foreign Origin", |fix| Req::in_session(&fix.s1125, Vec::new()).http_method(http::Method::GET).header("origin", "http://evil.example.com"), 403, Err(-32000)).rev("2025-11-25"),
        case("DELETE with a foreign Host", |fix| Req::in_session(&fix.s1125, Vec::new()).http_method(http::Method::DELETE).header("host", "evil.example.com"), 403, Err(-32000)).rev("2025-11-25"),
        // Handshake ids.
        case("session id truncated", |fix| { let id = &fix.s1125.id; Req::in_handshake(&Handshake { id: id[..id.len() - 4].to_owned(), ..fix.s1125.clone() }, 3, "ping", json!({})) }, 404, Err(-32001)).rev("2025-11-25").message(session_gone("is not a session of this server")),
        case("session id altered", |fix| Req::in_handshake(&Handshake { id: tampered(&fix.s1125.id), ..fix.s1125.clone() }, 3, "ping", json!({})), 404, Err(-32001)).rev("2025-11-25").message(session_gone("is not a session of this server")),
        case("session id signed with another key", |fix| Req::in_handshake(&fix.foreign, 3, "ping", json!({})), 404, Err(-32001)).rev("2025-11-25").message(session_gone("is not a session of this server")),
        case("session id expired", |fix| Req::in_handshake(&fix.s_expired, 3, "ping", json!({})), 404, Err(-32001)).on(Target::Expiring).rev("2025-11-25").message(session_gone("has expired")),
        case("session id of another caller", |fix| Req::in_handshake(&fix.alice, 3, "ping", json!({})).extension(Caller("bob")), 404, Err(-32001)).rev("2025-11-25").message(session_gone("belongs to another caller")),
        case("session id of a caller, anonymously", |fix| Req::in_handshake(&fix.alice, 3, "ping", json!({})), 404, Err(-32001)).rev("2025-11-25").message(session_gone("belongs to another caller")),
        case("session id of its caller", |fix| Req::in_handshake(&fix.alice, 3, "ping", json!({})).extension(Caller("alice")), 200, Ok).rev("2025-11-25"),
        case("session id ended", |fix| Req::in_handshake(&fix.ended, 3, "ping", json!({})), 404, Err(-32001)).rev("2025-11-25").message(session_gone("was ended")),
        case("GET with an ended session", |fix| Req::in_session(&fix.ended, Vec::new()).http_method(http::Method::GET), 404, Err(-32001)).rev("2025-11-25"),
        case("DELETE with an ended session", |fix| Req::in_session(&fix.ended, Vec::new()).http_method(http::Method::DELETE), 404, Err(-32001)).rev("2025-11-25"),
        case("session id garbage", |fix| Req::in_handshake(&Handshake { id: "x".into(), ..fix.s1125.clone() }, 3, "ping", json!({})), 404, Err(-32001)).rev("2025-11-25"),
        case("session id empty", |fix| Req::in_handshake(&Handshake { id: String::new(), ..fix.s1125.clone() }, 3, "ping", json!({})), 404, Err(-32001)).rev("2025-11-25"),
        case("requestState as a session id", |fix| Req::in_handshake(&Handshake { id: fix.state_anon.clone(), ..fix.s1125.clone() }, 3, "ping", json!({})), 404, Err(-32001)).rev("2025-11-25"),
        case("session with another revision's header", |fix| Req::in_handshake(&fix.s1125, 3, "ping", json!({})).header("mcp-protocol-version", "2025-06-18"), 400, Err(-32600)).rev("2025-11-25"),
        case("session without its version header", |fix| Req::in_handshake(&fix.s1125, 3, "ping", json!({})).without("mcp-protocol-version"), 400, Err(-32600)).rev("2025-11-25"),
        case("initialize inside a session is refused", in_session(|f| &f.s1125, "initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}})), 200, Err(-32600)).rev("2025-11-25").message("Invalid request: `initialize` opens a session: send it first, without Mcp-Session-Id, and never in a batch"),
        case("an answer to no server request", |fix| Req::in_session(&fix.s1125, &br#"{"jsonrpc":"2.0","id":987654,"result":{"action":"accept"}}"#[..]), 202, Empty).rev("2025-11-25"),
        case("a cancel of an unknown request", |fix| Req::in_session(&fix.s1125, &br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"nope"}}"#[..]), 202, Empty).rev("2025-11-25"),
        // Batches.
        case("a batch on 2025-11-25", |fix| Req::in_session(&fix.s1125, batch_of(2, "ping")), 400, Err(-32600)).rev("2025-11-25"),
        case("a 2025-03-26 batch of 100,000", |fix| Req::in_session(&fix.s0326, batch_of(100_000, "ping")), 400, Err(-32600)).rev("2025-11-25").message("Invalid request: a batch of 100000 messages exceeds this server's limit of 256; split it"),
        case("a 2025-03-26 batch of 100,000 over the default body limit", |fix| Req::in_session(&fix.s0326, batch_of(100_000, "ping")), 413, Err(-32000)).on(Target::Defaults).rev("2025-11-25").message("Payload Too Large: the body exceeds 4194304 bytes"),
        case("a 2025-03-26 batch of 256", |fix| Req::in_session(&fix.s0326, batch_of(256, "ping")), 200, Ok).rev("2025-03-26"),
        case("an empty 2025-03-26 batch", |fix| Req::in_session(&fix.s0326, &b"[]"[..]), 400, Err(-32600)).rev("2025-11-25"),
        case("a 2025-03-26 batch of garbage", |fix| Req::in_session(&fix.s0326, &b"[1, \"x\", null, {}]"[..]), 200, Ok).rev("2025-11-25"),
        case("a 2025-03-26 batch of notifications", |fix| Req::in_session(&fix.s0326, &br#"[{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}]"#[..]), 202, Empty).rev("2025-03-26"),
        case("a 2025-03-26 batch nested 100,000 deep", |fix| Req::in_session(&fix.s0326, nested("[", "]", 100_000)), 200, Ok).rev("2025-11-25"),
        // requestState (2026-07-28 Multi Round-Trip Requests).
        case("requestState: a valid retry", retry("ask", "a", |f| f.state_anon.clone(), None), 200, Ok),
        case("requestState: tampered", retry("ask", "a", |f| tampered(&f.state_anon), None), 200, Err(-32602)).message(REQUEST_STATE_ERROR),
        case("requestState: another tool", retry("ask_again", "a", |f| f.state_anon.clone(), None), 200, Err(-32602)).message(REQUEST_STATE_ERROR),
        case("requestState: other arguments", retry("ask", "b", |f| f.state_anon.clone(), None), 200, Err(-32602)).message(REQUEST_STATE_ERROR),
        case("requestState: its caller", retry("ask", "a", |f| f.state_alice.clone(), Some("alice")), 200, Ok),
        case("requestState: another caller", retry("ask", "a", |f| f.state_alice.clone(), Some("bob")), 200, Err(-32602)).message(REQUEST_STATE_ERROR),
        case("requestState: a caller's, anonymously", retry("ask", "a", |f| f.state_alice.clone(), None), 200, Err(-32602)).message(REQUEST_STATE_ERROR),
        case("requestState: anonymous, by a caller", retry("ask", "a", |f| f.state_anon.clone(), Some("alice")), 200, Err(-32602)).message(REQUEST_STATE_ERROR),
        case("requestState: expired", retry("ask", "a", |f| f.state_expired.clone(), None), 200, Err(-32602)).message(REQUEST_STATE_ERROR),
        case("requestState: a session id", retry("ask", "a", |f| f.s1125.id.clone(), None), 200, Err(-32602)).message(REQUEST_STATE_ERROR),
        case("requestState: empty", retry("ask", "a", |_| String::new(), None), 200, Err(-32602)).message(REQUEST_STATE_ERROR),
        case("inputResponses: a malformed answer", |_| Req::modern(2, "tools/call", json!({"name": "ask", "arguments": {"topic": "a"}, "inputResponses": {"q": 12345}, "_meta": elicit_meta()})), 200, Err(-32602)),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_http_table() {
    let fix = fixture().await;
    let hand = hand_cases();
    let generated = field_cases();
    let mut failures = run(&fix, &hand).await;
    failures.extend(run(&fix, &generated).await);
    println!(
        "hostile HTTP table: {} hand-written cases + {} generated field cases",
        hand.len(),
        generated.len()
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

// ---------------------------------------------------------------------------------------------
// stdio

/// One stdio case: a line, and what it gets (`None`: no answer at all).
struct LineCase {
    name: String,
    line: Vec<u8>,
    out: Option<Out>,
    message: Option<String>,
    /// The schema its answer is validated against.
    rev: &'static str,
}

fn line(name: impl Into<String>, line: impl Into<Vec<u8>>, out: Option<Out>) -> LineCase {
    LineCase {
        name: name.into(),
        line: line.into(),
        out,
        message: None,
        rev: MODERN,
    }
}

async fn run_stdio(stdio: &mut Stdio, cases: &[LineCase]) -> Vec<String> {
    let mut failures = Vec::new();
    for (i, c) in cases.iter().enumerate() {
        stdio.send_line(&c.line).await;
        let method = serde_json::from_slice::<Value>(&c.line)
            .ok()
            .and_then(|v| {
                let first = match &v {
                    Value::Array(items) => items.first().cloned()?,
                    other => other.clone(),
                };
                first
                    .get("method")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
            .or_else(|| {
                // Too deep for the test to parse: the method as written.
                let text = String::from_utf8_lossy(&c.line);
                let rest = &text[text.find("\"method\":\"")? + 10..];
                Some(rest[..rest.find('"')?].to_owned())
            });
        if let Some(want) = &c.out {
            let got = stdio.recv_raw().await;
            let items = match &got {
                Value::Array(items) => items.clone(),
                m => vec![m.clone()],
            };
            if let Some(e) = items
                .iter()
                .find_map(|m| checked(c.rev, method.as_deref(), m).err())
            {
                failures.push(format!("{}: invalid answer: {e}", c.name));
            }
            let (out, message) = if got["method"] == "notifications/subscriptions/acknowledged" {
                (Out::Ok, None)
            } else {
                outcome(Some(&got))
            };
            if out != *want || (c.message.is_some() && c.message != message) {
                failures.push(format!(
                    "{}: got {out:?} {message:?}, want {want:?} {:?}\n    {}",
                    c.name,
                    c.message,
                    common_clip(&got.to_string())
                ));
            }
        }
        // Nothing else was written for the case: the next line answers this.
        let id = 200_000 + i as u64;
        stdio.send(&normal_call(id)).await;
        let got = stdio.recv(MODERN, Some("tools/call")).await;
        if got != still_here(id) {
            failures.push(format!(
                "after {}: {}",
                c.name,
                common_clip(&got.to_string())
            ));
        }
    }
    failures
}

fn stdio_field_cases() -> Vec<LineCase> {
    let mut cases = Vec::new();
    for f in fields().into_iter().filter(|f| !f.legacy) {
        for (k, how) in SPOILS.into_iter().enumerate() {
            let body = spoil(base_message(&f), f.path, how, (f.wrong)());
            cases.push(line(
                format!("{} {} {how:?}", f.method, f.path.join(".")),
                serde_json::to_vec(&body).unwrap(),
                f.stdio[k].clone(),
            ));
        }
    }
    cases
}

fn stdio_hand_cases() -> Vec<LineCase> {
    use Out::*;
    let meta = sake_tests::meta().to_string();
    let call = |text: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":{text}}},"_meta":{meta}}}}}"#
        )
    };
    vec![
        line("truncated JSON", &b"{\"jsonrpc\":"[..], Some(Err(-32700))),
        line("not JSON", &b"hello"[..], Some(Err(-32700))),
        line("invalid UTF-8", call("\"\u{0}\"").bytes().map(|b| if b == 0 { 0xff } else { b }).collect::<Vec<u8>>(), Some(Err(-32700))),
        line("byte order mark", [&b"\xef\xbb\xbf"[..], call("\"x\"").as_bytes()].concat(), Some(Err(-32700))),
        line("empty line", Vec::new(), None),
        line("blank line", &b" \t \r"[..], None),
        LineCase { message: Some("Invalid request: a message exceeds this server's limit of 1048576 bytes".into()), ..line("a line over the limit", call(&format!("\"{}\"", "x".repeat(2 << 20))), Some(Err(-32600))) },
        line("a line just under the limit", call(&format!("\"{}\"", "x".repeat(1000 << 10))), Some(Ok)),
        line("objects nested 100,000 deep", nested("{\"a\":", "}", 100_000), Some(Err(-32600))),
        line("arrays nested 100,000 deep", nested("[", "]", 100_000), Some(Err(-32600))),
        line("arguments nested 100,000 deep", call(&nested("[", "]", 100_000)), Some(ToolError)),
        line("id 1e999", format!(r#"{{"jsonrpc":"2.0","id":1e999,"method":"tools/list","params":{{"_meta":{meta}}}}}"#), Some(Err(-32600))),
        line("id null", format!(r#"{{"jsonrpc":"2.0","id":null,"method":"tools/list","params":{{"_meta":{meta}}}}}"#), Some(Err(-32600))),
        line("a 3 MiB string is over this limit", call(&format!("\"{}\"", "x".repeat(3 << 20))), Some(Err(-32600))),
        line("a batch before any session", format!("[{}]", call("\"x\"")), Some(Err(-32600))),
        line("an empty batch", &b"[]"[..], Some(Err(-32600))),
        line("a cancel of an unknown request", &br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":424242}}"#[..], None),
        line("a cancel with a malformed id", &br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":{"x":1}}}"#[..], None),
        line("a cancel without params", &br#"{"jsonrpc":"2.0","method":"notifications/cancelled"}"#[..], None),
        line("an unknown notification", &br#"{"jsonrpc":"2.0","method":"notifications/whatever","params":{}}"#[..], None),
        line("an answer to no request", &br#"{"jsonrpc":"2.0","id":77,"result":{}}"#[..], None),
        line("an error answer to no request", &br#"{"jsonrpc":"2.0","id":77,"error":{"code":1,"message":"no"}}"#[..], None),
        LineCase { rev: "2025-11-25", ..line("ping before initialize", &br#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#[..], Some(Ok)) },
        line("a handshake request before initialize", &br#"{"jsonrpc":"2.0","id":5,"method":"tools/list"}"#[..], Some(Err(-32602))),
        line("an unsupported version", format!(r#"{{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{{"_meta":{{"{PV}":"2099-01-01","{CC}":{{}}}}}}}}"#), Some(Err(-32022))),
        line("an unknown method", format!(r#"{{"jsonrpc":"2.0","id":5,"method":"tools/destroy","params":{{"_meta":{meta}}}}}"#), Some(Err(-32601))),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_stdio_table() {
    let service = server().max_body_bytes(1 << 20).build().unwrap();
    let mut stdio = Stdio::start(service);
    let hand = stdio_hand_cases();
    let generated = stdio_field_cases();
    let mut failures = run_stdio(&mut stdio, &hand).await;
    failures.extend(run_stdio(&mut stdio, &generated).await);
    stdio.close().await;

    // A 2025-03-26 process: batches are allowed, up to the limit.
    let service = server().max_body_bytes(BIG).build().unwrap();
    let mut stdio = Stdio::start(service);
    stdio
        .send(&json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}}))
        .await;
    assert_eq!(
        stdio.recv("2025-03-26", Some("initialize")).await["result"]["protocolVersion"],
        "2025-03-26"
    );
    let batches = vec![
        LineCase {
            message: Some(
                "Invalid request: a batch of 100000 messages exceeds this server's limit of 256; split it"
                    .into(),
            ),
            ..line(
                "a batch of 100,000",
                batch_of(100_000, "ping"),
                Some(Out::Err(-32600)),
            )
        },
        line("a batch of 256", batch_of(256, "ping"), Some(Out::Ok)),
        line("a batch of garbage", &b"[1, 2]"[..], Some(Out::Ok)),
        line(
            "a batch nested 100,000 deep",
            nested("[", "]", 100_000),
            Some(Out::Ok),
        ),
    ];
    let batches: Vec<LineCase> = batches
        .into_iter()
        .map(|c| LineCase {
            rev: "2025-11-25",
            ..c
        })
        .collect();
    failures.extend(run_stdio(&mut stdio, &batches).await);
    stdio.close().await;
    println!(
        "hostile stdio table: {} hand-written cases + {} generated field cases + {} batch cases",
        hand.len(),
        generated.len(),
        batches.len()
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

// ---------------------------------------------------------------------------------------------
// A handshake client that never answers a question

#[tokio::test]
async fn a_legacy_client_that_never_answers_an_elicitation() {
    const REV: &str = "2025-11-25";
    let w = Wire::new(
        server()
            .limits(|l| l.input_timeout(Duration::from_millis(300)))
            .limits(|l| l.max_pending_inputs(1)),
    )
    .revision(REV);
    let s = w.handshake(REV, json!({"elicitation": {}})).await;
    let ask = |id: u64| {
        Req::in_handshake(
            &s,
            id,
            "tools/call",
            json!({"name": "ask", "arguments": {"topic": "a"}}),
        )
    };
    let mut first = w.open_raw(ask(1)).await;
    assert_eq!(
        (first.status, first.content_type()),
        (200, Some("text/event-stream"))
    );
    let question = first.next_message().await.unwrap();
    assert_eq!(question["method"], "elicitation/create");
    // Never answered: the tool sees the timeout, and the call ends with its error.
    assert_eq!(
        first.next_message().await.unwrap(),
        json!({"jsonrpc": "2.0", "id": 1, "result": {
            "content": [{"type": "text", "text": "the client did not answer within 300ms"}],
            "isError": true,
        }})
    );
    assert!(first.next_message().await.is_none());
    // The question is forgotten: with room for one waiting question, another call may ask.
    let mut second = w.open_raw(ask(2)).await;
    let again = second.next_message().await.unwrap();
    assert_eq!(again["method"], "elicitation/create");
    assert_ne!(again["id"], question["id"]);
    // While it waits, the limit holds: a third call cannot ask.
    let third = w.send(ask(3)).await;
    assert_eq!(
        third.messages,
        vec![json!({"jsonrpc": "2.0", "id": 3, "result": {
            "content": [{"type": "text", "text": "this request cannot ask the client for input: the server waits for as many answers as it may (Limits::max_pending_inputs)"}],
            "isError": true,
        }})]
    );
    // A late answer to the forgotten question is taken and ignored.
    let answer = |id: &Value| {
        let body = json!({"jsonrpc": "2.0", "id": id, "result": {"action": "accept", "content": {"name": "Ada"}}});
        Req::in_session(&s, serde_json::to_vec(&body).unwrap())
    };
    w.send(answer(&question["id"])).await.assert_accepted();
    w.send(answer(&again["id"])).await.assert_accepted();
    assert_eq!(
        second.next_message().await.unwrap(),
        json!({"jsonrpc": "2.0", "id": 2, "result": {
            "content": [{"type": "text", "text": "a: hello Ada"}],
        }})
    );
    still_serves(&w.revision(MODERN), 9).await;
}

// ---------------------------------------------------------------------------------------------
// A real socket: what hyper refuses before the server sees it, and a slow body

async fn socket_still_serves(addr: std::net::SocketAddr, id: u64) {
    let req = Req::modern(
        id,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "still here"}}),
    )
    .header("connection", "close");
    let reply = exchange(addr, &req.to_http1()).await;
    assert_eq!(reply.status_line, "HTTP/1.1 200 OK");
    assert_eq!(
        serde_json::from_slice::<Value>(&reply.body).unwrap(),
        still_here(id)
    );
}

/// A request whose `Mcp-Name` line is `name_line` (raw bytes), on a real socket.
fn with_header_line(line: &[u8]) -> Vec<u8> {
    let req = Req::modern(
        1,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "x"}}),
    )
    .without("mcp-name")
    .header("connection", "close");
    let bytes = req.to_http1();
    let at = bytes.windows(2).position(|w| w == b"\r\n").unwrap() + 2;
    [&bytes[..at], line, b"\r\n", &bytes[at..]].concat()
}

/// What the in-process router answers a request, as hyper would write it: status line,
/// lowercase headers, body.
async fn through_router(service: &sake::Service, req: Req) -> RawReply {
    use tower::ServiceExt as _;
    let resp = service.router().oneshot(req.build()).await.unwrap();
    let status = resp.status();
    let status_line = format!(
        "HTTP/1.1 {} {}",
        status.as_u16(),
        status.canonical_reason().unwrap_or("")
    );
    let mut headers: Vec<(String, String)> = resp
        .headers()
        .iter()
        .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap().to_owned()))
        .collect();
    let body = axum::body::to_bytes(resp.into_body(), usize::MAX)
        .await
        .unwrap()
        .to_vec();
    // hyper writes the length of a body it knows whole when no header gave it (axum gives it
    // for a route's answer, not for its 404).
    if !headers.iter().any(|(n, _)| n == "content-length") {
        headers.push(("content-length".to_owned(), body.len().to_string()));
    }
    RawReply {
        status: status.as_u16(),
        status_line,
        headers,
        body,
    }
}

/// The headers of a reply that do not change from one answer to the next, in order.
fn stable_headers(reply: &RawReply) -> Vec<(String, String)> {
    reply
        .headers
        .iter()
        .filter(|(n, _)| n != "date" && n != "connection")
        .map(|(n, v)| match n.as_str() {
            // A new session's id is signed with its moment and a random id.
            "mcp-session-id" => (n.clone(), "(a session id)".to_owned()),
            _ => (n.clone(), v.clone()),
        })
        .collect()
}

/// `Service::serve` hands the endpoint's POST to its handler without the router: every answer
/// on the socket is the router's, byte for byte (headers in order, `content-length` included),
/// and every other method and path still goes through the router.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_socket_answers_as_the_router_does() {
    let service = server().build().unwrap();
    let addr = serve(server()).await;
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize_params("2025-11-25", json!({}))});
    let cases: Vec<(&str, Req, &str)> = vec![
        (
            "a 2026-07-28 call",
            Req::modern(
                3,
                "tools/call",
                json!({"name": "echo", "arguments": {"text": "same"}}),
            ),
            "HTTP/1.1 200 OK",
        ),
        ("initialize", Req::legacy(initialize), "HTTP/1.1 200 OK"),
        (
            "a body that is not JSON",
            Req::modern(4, "tools/list", json!({})).header("content-type", "text/plain"),
            "HTTP/1.1 415 Unsupported Media Type",
        ),
        (
            "a foreign Origin",
            Req::modern(5, "tools/list", json!({})).header("origin", "https://evil.example"),
            "HTTP/1.1 403 Forbidden",
        ),
        (
            "PUT",
            Req::modern(6, "tools/list", json!({})).http_method(http::Method::PUT),
            "HTTP/1.1 405 Method Not Allowed",
        ),
        (
            "another path",
            Req::modern(7, "tools/list", json!({})).path("/elsewhere"),
            "HTTP/1.1 404 Not Found",
        ),
    ];
    for (what, req, status_line) in cases {
        let on_socket = exchange(addr, &req.clone().header("connection", "close").to_http1()).await;
        let in_process = through_router(&service, req).await;
        assert_eq!(on_socket.status_line, status_line, "{what}");
        assert_eq!(in_process.status_line, status_line, "{what}");
        assert_eq!(
            stable_headers(&on_socket),
            stable_headers(&in_process),
            "{what}"
        );
        assert!(
            on_socket.headers.iter().any(|(n, _)| n == "date"),
            "{what}: hyper dates every answer"
        );
        assert_eq!(
            String::from_utf8_lossy(&on_socket.body),
            String::from_utf8_lossy(&in_process.body),
            "{what}"
        );
    }
}

/// With CORS, the POST goes through the router and its layer: the socket's answer carries
/// the allowed origin, as the router's does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_socket_answers_cors_through_the_layer() {
    let cors = || sake::Cors::new(["http://localhost:6274"]);
    let service = server().cors(cors()).build().unwrap();
    let addr = serve(server().cors(cors())).await;
    let req = Req::modern(
        1,
        "tools/call",
        json!({"name": "echo", "arguments": {"text": "cors"}}),
    )
    .header("origin", "http://localhost:6274");
    let on_socket = exchange(addr, &req.clone().header("connection", "close").to_http1()).await;
    let in_process = through_router(&service, req).await;
    assert_eq!(on_socket.status_line, "HTTP/1.1 200 OK");
    assert!(
        on_socket.headers.contains(&(
            "access-control-allow-origin".to_owned(),
            "http://localhost:6274".to_owned()
        )),
        "{:?}",
        on_socket.headers
    );
    assert_eq!(stable_headers(&on_socket), stable_headers(&in_process));
    assert_eq!(on_socket.body, in_process.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_header_bytes_on_a_socket() {
    let addr = serve(server().limits(|l| l.body_timeout(Duration::from_millis(300)))).await;
    let bad = "HTTP/1.1 400 Bad Request";
    // (name, bytes, status line, JSON-RPC code of the body if any)
    let cases: Vec<(&str, Vec<u8>, &str, Option<i64>)> = vec![
        (
            "CR inside a value",
            with_header_line(b"mcp-name: ec\rho"),
            bad,
            None,
        ),
        (
            "bare LF inside a value",
            with_header_line(b"mcp-name: ec\nho"),
            bad,
            None,
        ),
        (
            "NUL inside a value",
            with_header_line(b"mcp-name: ec\0ho"),
            bad,
            None,
        ),
        (
            "control byte inside a value",
            with_header_line(b"mcp-name: ec\x01ho"),
            bad,
            None,
        ),
        (
            "DEL inside a value",
            with_header_line(b"mcp-name: ec\x7fho"),
            bad,
            None,
        ),
        (
            "obs-fold continuation",
            with_header_line(b"mcp-name: ec\r\n ho"),
            bad,
            None,
        ),
        (
            "space in a header name",
            with_header_line(b"mcp name: echo"),
            bad,
            None,
        ),
        ("empty header name", with_header_line(b": echo"), bad, None),
        (
            "CR LF injecting a header",
            with_header_line(b"mcp-name: echo\r\nmcp-name: add"),
            bad,
            Some(-32020),
        ),
        (
            "obs-text reaches the server",
            with_header_line(b"mcp-name: ech\xf6"),
            bad,
            Some(-32020),
        ),
        (
            "a 1 MiB header",
            with_header_line(format!("x-big: {}", "b".repeat(1 << 20)).as_bytes()),
            "HTTP/1.1 431 Request Header Fields Too Large",
            None,
        ),
        (
            "a garbage request line",
            b"GARBAGE\r\n\r\n".to_vec(),
            bad,
            None,
        ),
    ];
    let count = cases.len();
    let mut failures = Vec::new();
    for (i, (name, bytes, status, code)) in cases.into_iter().enumerate() {
        let reply = exchange(addr, &bytes).await;
        let got_code = serde_json::from_slice::<Value>(&reply.body)
            .ok()
            .and_then(|v| v["error"]["code"].as_i64());
        if reply.status_line != status || got_code != code {
            failures.push(format!(
                "{name}: got {:?} {got_code:?} {:?}",
                reply.status_line,
                String::from_utf8_lossy(&reply.body)
            ));
        }
        socket_still_serves(addr, 300 + i as u64).await;
    }
    // A slow body: the head, then 10 of 100 bytes, then nothing.
    {
        use tokio::io::AsyncWriteExt as _;
        let req = Req::modern(1, "tools/list", json!({}))
            .header("content-length", "100")
            .body(b"{\"jsonrpc\"".to_vec());
        let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
        tcp.write_all(&req.to_http1()).await.unwrap();
        let answer = raw::read_until(&mut tcp, |out| {
            out.windows(4).any(|w| w == b"\r\n\r\n") && out.ends_with(b"}}")
        });
        let reply = tokio::time::timeout(Duration::from_secs(60), answer)
            .await
            .expect("a slow body is cut off")
            .unwrap();
        let reply = raw::parse(&reply);
        assert_eq!(reply.status_line, "HTTP/1.1 408 Request Timeout");
        assert_eq!(
            serde_json::from_slice::<Value>(&reply.body).unwrap(),
            json!({"jsonrpc": "2.0", "error": {"code": -32000, "message": "Request Timeout: the body did not arrive within 0.3 s; send the whole body at once"}})
        );
    }
    socket_still_serves(addr, 399).await;
    println!("socket table: {count} cases + 1 slow body");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---------------------------------------------------------------------------------------------
// 10,000 concurrent streams, opened and dropped
//
// Each stream is a TCP connection, and a process here may hold 20,000 descriptors: the
// server runs in a child process (this test binary again, running `stream_server_child`), so
// that each side holds one descriptor per stream. Where the limit is lower the test opens as
// many as it allows and says so.

const CHILD_ENV: &str = "SAKE_HOSTILE_STREAM_SERVER";

/// The most descriptors this process may open (`/proc/self/limits`; 1024 elsewhere).
fn fd_limit() -> usize {
    std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|l| {
            l.lines()
                .find(|l| l.starts_with("Max open files"))
                .and_then(|l| l.split_whitespace().nth(3)?.parse().ok())
        })
        .unwrap_or(1024)
}

fn stream_count() -> usize {
    10_000.min(fd_limit().saturating_sub(512))
}

/// Not a test of its own: the server half of `ten_thousand_streams_opened_and_dropped`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_server_child() {
    if std::env::var(CHILD_ENV).is_err() {
        return;
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    println!("LISTENING {}", listener.local_addr().unwrap());
    let service = server()
        .limits(|l| l.max_streams(stream_count()))
        // One client opens them all here (each stream is a connection of its own).
        .limits(|l| {
            l.max_streams_per_client(stream_count() + 1)
                .max_connections_per_client(stream_count() + 16)
        })
        .keep_alive(Duration::from_millis(500))
        .build()
        .unwrap();
    // Until the parent closes our stdin.
    let stop = async {
        let _ = tokio::task::spawn_blocking(|| {
            let mut s = String::new();
            let _ = std::io::stdin().read_line(&mut s);
        })
        .await;
    };
    service.serve(listener, stop).await.unwrap();
}

/// Opens a stream and reads until its first event: the connection, kept open.
async fn open_stream(
    addr: std::net::SocketAddr,
    request: Vec<u8>,
) -> Result<tokio::net::TcpStream, String> {
    use tokio::io::AsyncWriteExt as _;
    let mut tcp = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| e.to_string())?;
    tcp.write_all(&request).await.map_err(|e| e.to_string())?;
    let refused = |text: &str| !text.starts_with("HTTP/1.1 200 OK") && text.contains("\r\n\r\n");
    let open = |text: &str| {
        text.contains("notifications/subscriptions/acknowledged") || text.contains(": stream open")
    };
    let seen = raw::read_until(&mut tcp, |seen| {
        let text = String::from_utf8_lossy(seen);
        refused(&text) || open(&text)
    })
    .await
    .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&seen).into_owned();
    if refused(&text) || !open(&text) {
        return Err(text);
    }
    Ok(tcp)
}

fn listen_request() -> Vec<u8> {
    Req::modern(
        1,
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    )
    .to_http1()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_streams_opened_and_dropped() {
    use tokio::io::AsyncBufReadExt as _;
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    let n = stream_count();
    let mut child = tokio::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "stream_server_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let addr: std::net::SocketAddr = tokio::time::timeout(Duration::from_secs(120), async {
        loop {
            let line = lines.next_line().await.unwrap().expect("the child starts");
            // libtest prints the test's name on the same line.
            if let Some(at) = line.find("LISTENING ") {
                break line[at + 10..].trim().parse().unwrap();
            }
        }
    })
    .await
    .expect("the child listens");
    // Sessions for the GET streams, minted in memory with the same key (one stream each: a
    // session's newer GET stream replaces its older one).
    let minter = Wire::new(server());
    let mut sessions = Vec::new();
    for _ in 0..n / 2 {
        sessions.push(minter.handshake("2025-11-25", json!({})).await);
    }
    let requests: Vec<Vec<u8>> = (0..n)
        .map(|i| match sessions.get(i / 2).filter(|_| i % 2 == 1) {
            Some(s) => Req::in_session(s, Vec::new())
                .http_method(http::Method::GET)
                .header("accept", "text/event-stream")
                .without("content-type")
                .to_http1(),
            None => listen_request(),
        })
        .collect();
    let mut open = Vec::with_capacity(n);
    for chunk in requests.chunks(250) {
        let opened =
            futures_util::future::join_all(chunk.iter().map(|r| open_stream(addr, r.clone())))
                .await;
        for o in opened {
            open.push(o.unwrap_or_else(|e| panic!("stream {} refused: {e}", open.len())));
        }
    }
    assert_eq!(open.len(), n);
    println!("{n} streams open (half subscriptions/listen, half legacy GET)");
    // At the limit: one more is refused, and requests are still served.
    let refused = exchange(
        addr,
        &Req::modern(1, "subscriptions/listen", json!({"notifications": {}}))
            .header("connection", "close")
            .to_http1(),
    )
    .await;
    assert_eq!(refused.status_line, "HTTP/1.1 503 Service Unavailable");
    assert!(
        refused
            .headers
            .contains(&("retry-after".into(), "1".into()))
    );
    assert_eq!(
        serde_json::from_slice::<Value>(&refused.body).unwrap(),
        json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32000, "message": format!("Service Unavailable: the server is at its limit of {n} open streams; retry shortly")}})
    );
    socket_still_serves(addr, 1).await;
    // Dropped: the server notices at its next keep-alive, and the streams are free again.
    drop(open);
    let reopened = tokio::time::timeout(Duration::from_secs(120), async {
        loop {
            if let Ok(tcp) = open_stream(addr, listen_request()).await {
                break tcp;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await
    .expect("dropped streams are released");
    drop(reopened);
    socket_still_serves(addr, 2).await;
    drop(child.stdin.take());
    let _ = child.kill().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_or_idle_request_heads_are_cut_off() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let addr = serve(server().limits(|l| l.header_timeout(Duration::from_millis(300)))).await;
    // A connection that never sends anything.
    let mut idle = tokio::net::TcpStream::connect(addr).await.unwrap();
    let out = raw::read_to_close(&mut idle, raw::CLOSE_PATIENCE).await;
    let idle_answer = String::from_utf8_lossy(&out).into_owned();
    // A head sent a byte at a time, never finished (slowloris).
    let mut slow = tokio::net::TcpStream::connect(addr).await.unwrap();
    let closed = tokio::time::timeout(Duration::from_secs(60), async {
        slow.write_all(b"POST /mcp HTTP/1.1\r\n").await.unwrap();
        let mut out = Vec::new();
        loop {
            if slow.write_all(b"x").await.is_err() {
                break out;
            }
            let mut buf = [0u8; 1024];
            match tokio::time::timeout(Duration::from_millis(100), slow.read(&mut buf)).await {
                Ok(Ok(0)) | Ok(Err(_)) => break out,
                Ok(Ok(n)) => out.extend_from_slice(&buf[..n]),
                Err(_) => {}
            }
        }
    })
    .await
    .expect("a head that never ends is cut off");
    let slow_answer = String::from_utf8_lossy(&closed).into_owned();
    // A keep-alive connection that goes quiet after a request is closed too.
    let mut kept = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req = Req::modern(1, "tools/list", json!({}));
    kept.write_all(&req.to_http1()).await.unwrap();
    let out = raw::read_to_close(&mut kept, raw::CLOSE_PATIENCE).await;
    assert!(String::from_utf8_lossy(&out).starts_with("HTTP/1.1 200 OK\r\n"));
    // hyper closes such connections without a word.
    assert_eq!((idle_answer.as_str(), slow_answer.as_str()), ("", ""));
    // A response that streams for five times the header timeout is not cut off: the
    // connection waits for a head only once its response has ended.
    let mut streaming = open_stream(addr, listen_request())
        .await
        .expect("a listen stream");
    let started = std::time::Instant::now();
    while started.elapsed() < Duration::from_millis(1500) {
        let mut buf = [0u8; 1024];
        match tokio::time::timeout(Duration::from_millis(100), streaming.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => panic!("a streaming response was cut off as a quiet head"),
            Ok(Ok(_)) | Err(_) => {}
        }
    }
    socket_still_serves(addr, 1).await;
}
