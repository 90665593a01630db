//! The handshake revisions (2025-11-25, 2025-06-18, 2025-03-26) over Streamable HTTP, on the
//! wire: `initialize` and sessions carried by signed ids, the version header, per-revision
//! rendering, 2025-03-26 batches, server-to-client requests on a call's stream, the
//! standalone GET stream, SSE polling and DELETE. Exact statuses, headers and whole JSON
//! payloads; every message the server sends is validated against the schema of the session's
//! revision by the harness (`sake_tests`).

use std::sync::Mutex;
use std::time::Duration;

use sake::prelude::*;
use sake::{Annotations, Icon, InputError, ResourceLink};
use sake_tests::fixtures::complete_style;
use sake_tests::rpc::ok;
use sake_tests::{LEGACY, Req, Session, Wire, initialize_params};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// The server under test

#[path = "../fixtures/add.rs"]
mod add;

/// Echoes the text back.
#[tool(
    title = "Echo",
    icon(src = "https://example.com/echo.png", mime_type = "image/png")
)]
fn echo(
    /// What to echo.
    text: String,
) -> String {
    text
}

/// The first four primes.
#[tool]
fn primes() -> Vec<u32> {
    vec![2, 3, 5, 7]
}

/// Points at the about page.
#[tool]
fn link() -> Vec<Content> {
    vec![
        Content::text("See the about page.").with_annotations(
            Annotations::default()
                .with_audience([Role::User])
                .with_priority(0.5)
                .with_last_modified("2025-01-01T00:00:00Z"),
        ),
        Content::ResourceLink(
            ResourceLink::new("docs://about", "about")
                .with_title("About")
                .with_description("What this server is.")
                .with_mime_type("text/plain")
                .with_icons([icon()]),
        ),
    ]
}

fn icon() -> Icon {
    Icon::new("https://example.com/about.png").with_mime_type("image/png")
}

/// A name.
#[derive(Deserialize, JsonSchema)]
struct NameForm {
    /// Your name.
    name: String,
}

/// Asks the user for their name.
#[tool]
async fn ask_name(ctx: Context) -> Result<String, InputError> {
    Ok(
        match ctx.elicit::<NameForm>("name", "What is your name?").await? {
            sake::Elicitation::Accepted(f) => format!("Hello, {}!", f.name),
            sake::Elicitation::Declined => "You declined.".into(),
            sake::Elicitation::Cancelled => "You cancelled.".into(),
        },
    )
}

/// Asks the client's model a question.
#[tool]
async fn ask_model(
    /// The question.
    question: String,
    ctx: Context,
) -> Result<String, InputError> {
    let r = ctx
        .sample("answer", sake::CreateMessageRequest::user(question, 50))
        .await?;
    Ok(format!(
        "The model ({}) said: {}",
        r.model,
        r.text().unwrap_or_default()
    ))
}

/// Lists the client's roots.
#[tool]
async fn list_roots(ctx: Context) -> Result<String, InputError> {
    let roots = ctx.roots("roots").await?;
    let uris: Vec<&str> = roots.iter().map(|r| r.uri.as_str()).collect();
    Ok(format!("Roots: {}", uris.join(", ")))
}

/// Logs at four levels.
#[tool]
async fn logs(ctx: Context) -> &'static str {
    ctx.log(LoggingLevel::Debug, "debug detail").await;
    ctx.log(LoggingLevel::Info, "info note").await;
    ctx.log(LoggingLevel::Warning, json!({"sign": "warning"}))
        .await;
    ctx.log(LoggingLevel::Error, "error state").await;
    "logged"
}

/// Counts to `steps`, reporting progress.
#[tool]
async fn count(
    /// How many steps.
    steps: u32,
    ctx: Context,
) -> String {
    for i in 1..=steps {
        ctx.progress_message(f64::from(i), Some(f64::from(steps)), format!("step {i}"))
            .await;
    }
    format!("counted to {steps}")
}

/// The tags of `wait` calls whose future was dropped before they finished.
static STOPPED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Records its tag in `STOPPED` when dropped.
struct StopRecord(String);

impl Drop for StopRecord {
    fn drop(&mut self) {
        STOPPED.lock().unwrap().push(std::mem::take(&mut self.0));
    }
}

fn stopped(tag: &str) -> bool {
    STOPPED.lock().unwrap().iter().any(|t| t == tag)
}

/// Says it waits, then waits a minute.
#[tool]
async fn wait(
    /// Names the call.
    tag: String,
    ctx: Context,
) -> &'static str {
    let record = StopRecord(tag);
    ctx.log(LoggingLevel::Info, "waiting").await;
    tokio::time::sleep(Duration::from_secs(60)).await;
    std::mem::forget(record);
    "waited"
}

/// The tags of `nap` calls that started.
static NAPPING: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Waits a minute without a `Context` (it sends nothing; only a cancellation stops it).
#[tool]
async fn nap(
    /// Names the call.
    tag: String,
) -> &'static str {
    NAPPING.lock().unwrap().push(tag.clone());
    let record = StopRecord(tag);
    tokio::time::sleep(Duration::from_secs(60)).await;
    std::mem::forget(record);
    "napped"
}

/// Ends its response stream, then answers (SSE polling).
#[tool]
async fn reconnect(ctx: Context) -> &'static str {
    ctx.close_stream().await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    "reconnected"
}

/// Greets someone.
#[prompt(title = "Greeting", complete = complete_style)]
fn greet(
    /// Who to greet.
    name: String,
    /// How to greet.
    style: Option<String>,
) -> Vec<PromptMessage> {
    let style = style.unwrap_or_else(|| "friendly".to_owned());
    vec![
        PromptMessage::user(format!("Greet {name} in a {style} way.")),
        PromptMessage::user(Content::resource_link("docs://about", "about")),
    ]
}

/// What this server is.
#[resource(
    uri = "docs://about",
    title = "About",
    mime_type = "text/plain",
    icon(src = "https://example.com/about.png", mime_type = "image/png")
)]
fn about() -> &'static str {
    "The legacy wire-test server."
}

/// A user's profile, by numeric id (user 1 exists).
#[resource(
    uri = "users://{id}/profile",
    title = "Profile",
    mime_type = "application/json"
)]
async fn profile(id: u64) -> Result<String, ResourceError> {
    match id {
        1 => Ok(json!({"id": 1, "name": "Ada"}).to_string()),
        _ => Err(ResourceError::NotFound(format!("users://{id}/profile"))),
    }
}

const KEY: &str = "an example session key of 32+ bytes, shared by replicas";

fn server() -> Server {
    Server::from_registry()
        .name("legacy-wire")
        .version("2.0.0")
        .title("Legacy Wire")
        .description("The server of the legacy wire tests.")
        .website_url("https://example.com/sake")
        .instructions("Call the tools.")
        .session_key(KEY)
}

fn wire() -> Wire {
    Wire::new(server())
}

/// An error response, whole; `id` null means "no id member".
fn err(id: impl Into<Value>, code: i64, message: &str) -> Value {
    let mut resp = json!({"jsonrpc": "2.0", "error": {"code": code, "message": message}});
    let id = id.into();
    if !id.is_null() {
        resp["id"] = id;
    }
    resp
}

fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

/// A tool result with one text block.
fn text(t: &str) -> Value {
    json!({"content": [{"type": "text", "text": t}]})
}

/// A tool error result with one text block.
fn tool_error(t: &str) -> Value {
    json!({"content": [{"type": "text", "text": t}], "isError": true})
}

/// Every capability a test client may declare.
fn all_client_capabilities() -> Value {
    json!({"elicitation": {}, "sampling": {}, "roots": {"listChanged": true}})
}

/// No result of a handshake revision carries 2026-07-28 fields, at any depth of its top level.
#[track_caller]
fn assert_no_modern_fields(message: &Value) {
    if let Some(result) = message.get("result").and_then(Value::as_object) {
        for key in ["resultType", "ttlMs", "cacheScope"] {
            assert!(
                !result.contains_key(key),
                "{key} on a legacy result: {message}"
            );
        }
        if let Some(meta) = result.get("_meta") {
            assert!(
                meta.get("io.modelcontextprotocol/serverInfo").is_none(),
                "serverInfo _meta on a legacy result: {message}"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// initialize

fn capabilities() -> Value {
    json!({
        "logging": {},
        "completions": {},
        "prompts": {"listChanged": true},
        "resources": {"subscribe": true, "listChanged": true},
        "tools": {"listChanged": true},
    })
}

fn initialize_result(revision: &str) -> Value {
    let server_info = match revision {
        "2025-03-26" => json!({"name": "legacy-wire", "version": "2.0.0"}),
        "2025-06-18" => json!({"name": "legacy-wire", "version": "2.0.0", "title": "Legacy Wire"}),
        _ => json!({
            "name": "legacy-wire",
            "version": "2.0.0",
            "title": "Legacy Wire",
            "description": "The server of the legacy wire tests.",
            "websiteUrl": "https://example.com/sake",
        }),
    };
    json!({
        "protocolVersion": revision,
        "capabilities": capabilities(),
        "serverInfo": server_info,
        "instructions": "Call the tools.",
    })
}

#[tokio::test]
async fn initialize_echoes_each_served_revision_with_its_result_shape() {
    let w = wire();
    for revision in LEGACY {
        let (reply, session) = w.initialize(revision, json!({})).await;
        reply.assert_json(200, ok(0, initialize_result(revision)));
        assert_eq!(session.revision, revision);
        let id = reply.session_id().unwrap();
        assert!(
            !id.is_empty() && id.bytes().all(|b| (0x21..=0x7e).contains(&b)),
            "the session id is not visible ASCII: {id:?}"
        );
    }
}

#[tokio::test]
async fn initialize_counter_offers_2025_11_25_for_versions_it_does_not_serve() {
    let w = wire();
    for offered in ["2024-11-05", "2026-07-28", "1999-01-01", "v999"] {
        let (reply, session) = w.initialize(offered, json!({})).await;
        reply.assert_json(200, ok(0, initialize_result("2025-11-25")));
        assert_eq!(session.revision, "2025-11-25", "offered {offered}");
    }
}

#[tokio::test]
async fn each_initialize_opens_another_session() {
    let w = wire();
    let (a, _) = w.initialize("2025-06-18", json!({})).await;
    let (b, _) = w.initialize("2025-06-18", json!({})).await;
    assert_ne!(a.session_id(), b.session_id());
}

#[tokio::test]
async fn initialize_without_a_protocol_version_is_invalid_params() {
    let w = wire();
    let reply = w
        .send_as(
            "2025-11-25",
            Req::legacy(json!({
                "jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"capabilities": {}, "clientInfo": {"name": "c", "version": "1"}},
            })),
        )
        .await;
    reply.assert_json(
        200,
        err(
            1,
            -32602,
            "Invalid params: `initialize` needs `protocolVersion` (a string such as \"2025-11-25\")",
        ),
    );
    assert_eq!(reply.session_id(), None);
}

#[tokio::test]
async fn initialize_inside_a_session_is_invalid_request() {
    let w = wire();
    let s = w.session("2025-06-18", json!({})).await;
    s.rpc(
        3,
        "initialize",
        initialize_params("2025-06-18", json!({})),
    )
    .await
    .assert_json(
        200,
        err(
            3,
            -32600,
            "Invalid request: `initialize` opens a session: send it first, without Mcp-Session-Id, and never in a batch",
        ),
    );
}

#[tokio::test]
async fn initialized_is_accepted_with_an_empty_202() {
    let w = wire();
    for revision in LEGACY {
        let (_, s) = w.initialize(revision, json!({})).await;
        let reply = s.notify("notifications/initialized", Value::Null).await;
        reply.assert_accepted();
        assert_eq!(reply.session_id(), None, "no new id without a reason");
    }
}

#[tokio::test]
async fn ping_is_exactly_an_empty_object() {
    let w = wire();
    for revision in LEGACY {
        let s = w.session(revision, json!({})).await;
        s.rpc("p", "ping", Value::Null)
            .await
            .assert_json(200, ok("p", json!({})));
    }
}

// ---------------------------------------------------------------------------------------------
// The MCP-Protocol-Version header

#[tokio::test]
async fn the_version_header_is_required_from_2025_06_18() {
    let w = wire();
    for revision in ["2025-06-18", "2025-11-25"] {
        let s = w.session(revision, json!({})).await;
        let missing = s
            .send(
                s.request(1, "tools/list", Value::Null)
                    .without("mcp-protocol-version"),
            )
            .await;
        missing.assert_json(
            400,
            err(
                1,
                -32600,
                &format!(
                    "Invalid request: Bad Request: missing MCP-Protocol-Version header; this session speaks {revision}"
                ),
            ),
        );
        let other = if revision == "2025-06-18" {
            "2025-11-25"
        } else {
            "2025-06-18"
        };
        let different = s
            .send(
                s.request(2, "tools/list", Value::Null)
                    .header("mcp-protocol-version", other),
            )
            .await;
        different.assert_json(
            400,
            err(
                2,
                -32600,
                &format!(
                    "Invalid request: Bad Request: MCP-Protocol-Version \"{other}\" is not this session's revision {revision}"
                ),
            ),
        );
        // Notifications and responses are checked too (no id to echo).
        s.send(
            s.post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
                .without("mcp-protocol-version"),
        )
        .await
        .assert_json(
            400,
            err(
                Value::Null,
                -32600,
                &format!(
                    "Invalid request: Bad Request: missing MCP-Protocol-Version header; this session speaks {revision}"
                ),
            ),
        );
    }
}

#[tokio::test]
async fn the_version_header_is_optional_on_2025_03_26() {
    let w = wire();
    let s = w.session("2025-03-26", json!({})).await;
    s.send(
        s.request(1, "ping", Value::Null)
            .without("mcp-protocol-version"),
    )
    .await
    .assert_json(200, ok(1, json!({})));
    s.send(s.request(2, "ping", Value::Null))
        .await
        .assert_json(200, ok(2, json!({})));
    s.send(
        s.request(3, "ping", Value::Null)
            .header("mcp-protocol-version", "2025-06-18"),
    )
    .await
    .assert_json(
        400,
        err(
            3,
            -32600,
            "Invalid request: Bad Request: MCP-Protocol-Version \"2025-06-18\" is not this session's revision 2025-03-26",
        ),
    );
}

// ---------------------------------------------------------------------------------------------
// Sessions without a session table

fn not_found(id: impl Into<Value>, reason: &str) -> Value {
    err(
        id,
        -32001,
        &format!(
            "Session not found: the Mcp-Session-Id {reason}; start a new session with `initialize`"
        ),
    )
}

#[tokio::test]
async fn requests_without_a_session_are_400() {
    let w = wire();
    w.send_as(
        "2025-06-18",
        Req::legacy(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"})),
    )
    .await
    .assert_json(
        400,
        err(
            4,
            -32600,
            "Invalid request: Bad Request: no Mcp-Session-Id; start a session with `initialize`, or send a 2026-07-28 request (params._meta with io.modelcontextprotocol/protocolVersion)",
        ),
    );
    w.send_as(
        "2025-06-18",
        Req::legacy(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .header("mcp-protocol-version", "2025-06-18"),
    )
    .await
    .assert_json(
        400,
        err(
            Value::Null,
            -32600,
            "Invalid request: Bad Request: no Mcp-Session-Id; notifications and responses belong to a session",
        ),
    );
}

#[tokio::test]
async fn tampered_and_unknown_session_ids_are_404() {
    let w = wire();
    let s = w.session("2025-06-18", json!({})).await;
    let mut tampered = s.id.clone().into_bytes();
    let i = tampered.len() - 3;
    tampered[i] = if tampered[i] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).unwrap();
    for bad in [
        tampered.as_str(),
        &format!("{}x", s.id),
        "s1.e30.AAAA",
        "not-a-session",
    ] {
        s.with_id(bad)
            .rpc(5, "ping", Value::Null)
            .await
            .assert_json(404, not_found(5, "is not a session of this server"));
    }
}

#[tokio::test]
async fn a_session_of_another_key_is_404() {
    let ours = wire();
    let theirs = Wire::new(server().session_key("another key, another key, 32 bytes long"));
    let s = theirs.session("2025-11-25", json!({})).await;
    let foreign = Session {
        wire: &ours,
        ..s.clone()
    };
    foreign
        .rpc(1, "tools/list", Value::Null)
        .await
        .assert_json(404, not_found(1, "is not a session of this server"));
    // The replica that minted it serves it.
    let listed = s.rpc(2, "tools/list", Value::Null).await;
    assert_eq!(listed.json(200)["id"], 2);
}

#[tokio::test]
async fn replicas_sharing_a_key_serve_each_others_sessions() {
    let a = wire();
    let b = wire();
    let on_a = a.session("2025-06-18", json!({})).await;
    let on_b = Session {
        wire: &b,
        ..on_a.clone()
    };
    on_b.call(1, "add", json!({"a": 2, "b": 40}))
        .await
        .assert_json(
            200,
            ok(
                1,
                json!({"content": [{"type": "text", "text": "{\"sum\":42}"}], "structuredContent": {"sum": 42}}),
            ),
        );
    on_a.rpc(2, "ping", Value::Null)
        .await
        .assert_json(200, ok(2, json!({})));
}

#[tokio::test]
async fn an_expired_session_is_404() {
    let w = Wire::new(server().session_lifetime(Duration::from_secs(1)));
    let s = w.session("2025-11-25", json!({})).await;
    s.rpc(1, "ping", Value::Null)
        .await
        .assert_json(200, ok(1, json!({})));
    // Lifetimes are counted in whole seconds: two seconds later the id is older than one.
    tokio::time::sleep(Duration::from_millis(2100)).await;
    s.rpc(2, "ping", Value::Null)
        .await
        .assert_json(404, not_found(2, "has expired"));
}

#[tokio::test]
async fn delete_ends_a_session_and_then_it_is_404() {
    let w = wire();
    let s = w.session("2025-11-25", json!({})).await;
    let deleted = s.delete().await;
    assert_eq!(deleted.status, 200);
    assert!(deleted.body.is_empty());
    s.rpc(1, "ping", Value::Null)
        .await
        .assert_json(404, not_found(1, "was ended"));
    s.notify("notifications/initialized", Value::Null)
        .await
        .assert_json(404, not_found(Value::Null, "was ended"));
    s.delete()
        .await
        .assert_json(404, not_found(Value::Null, "was ended"));
    s.send(s.headers(Req::get()))
        .await
        .assert_json(404, not_found(Value::Null, "was ended"));
}

fn method_not_allowed() -> Value {
    err(
        Value::Null,
        -32000,
        "Method Not Allowed: send JSON-RPC messages with POST (GET and DELETE need an Mcp-Session-Id of a handshake session)",
    )
}

#[tokio::test]
async fn delete_and_get_without_a_session_are_405() {
    let w = wire();
    for req in [Req::delete(), Req::get()] {
        let reply = w.send_as("2025-11-25", req).await;
        reply.assert_json(405, method_not_allowed());
        assert_eq!(reply.header("allow"), Some("POST, GET, DELETE"));
    }
}

#[tokio::test]
async fn get_with_an_unknown_session_is_404() {
    let w = wire();
    w.send_as(
        "2025-11-25",
        Req::get().header("mcp-session-id", "s1.bogus.bogus"),
    )
    .await
    .assert_json(
        404,
        not_found(Value::Null, "is not a session of this server"),
    );
}

fn warning_and_error_logs(id: i64) -> Vec<Value> {
    vec![
        notification(
            "notifications/message",
            json!({"level": "warning", "logger": "logs", "data": {"sign": "warning"}}),
        ),
        notification(
            "notifications/message",
            json!({"level": "error", "logger": "logs", "data": "error state"}),
        ),
        ok(id, text("logged")),
    ]
}

#[tokio::test]
async fn set_level_remints_the_id_and_the_new_id_carries_the_level() {
    let w = wire();
    let replica = wire();
    let s = w.session("2025-06-18", json!({})).await;
    let reply = s
        .rpc(1, "logging/setLevel", json!({"level": "warning"}))
        .await;
    reply.assert_json(200, ok(1, json!({})));
    let new_id = reply.session_id().expect("a re-minted Mcp-Session-Id");
    assert_ne!(new_id, s.id);
    assert!(new_id.bytes().all(|b| (0x21..=0x7e).contains(&b)));

    let warned = s.with_id(new_id);
    let mut call = warned.call_streaming(2, "logs", json!({})).await;
    call.assert_sse();
    assert_eq!(call.rest().await, warning_and_error_logs(2));

    // The new id carries the level to a replica that never saw the setLevel...
    let on_replica = Session {
        wire: &replica,
        ..warned.clone()
    };
    let mut call = on_replica.call_streaming(3, "logs", json!({})).await;
    assert_eq!(call.rest().await, warning_and_error_logs(3));
    // ...where the old id, which carries no level, gets everything.
    let old_on_replica = Session {
        wire: &replica,
        ..s.clone()
    };
    let mut call = old_on_replica.call_streaming(4, "logs", json!({})).await;
    assert_eq!(call.rest().await.len(), 5);

    // Clients that keep the id of `initialize` (the TypeScript SDK, rmcp) get the level in
    // the process that received the setLevel.
    let mut call = s.call_streaming(5, "logs", json!({})).await;
    assert_eq!(call.rest().await, warning_and_error_logs(5));
}

/// The per-process record of levels is bounded; when full, a new session's level still
/// counts (the least recently set record makes room), for clients that keep their first id.
#[tokio::test]
async fn set_level_still_counts_when_the_level_records_are_full() {
    let w = Wire::new(server().limits(|l| l.max_tracked_sessions(1)));
    let first = w.session("2025-11-25", json!({})).await;
    first
        .rpc(1, "logging/setLevel", json!({"level": "warning"}))
        .await
        .assert_json(200, ok(1, json!({})));
    let second = w.session("2025-11-25", json!({})).await;
    second
        .rpc(2, "logging/setLevel", json!({"level": "warning"}))
        .await
        .assert_json(200, ok(2, json!({})));
    // Both keep the id of `initialize`: the second's level is the one this process holds.
    let mut call = second.call_streaming(3, "logs", json!({})).await;
    assert_eq!(call.rest().await, warning_and_error_logs(3));
    let mut call = first.call_streaming(4, "logs", json!({})).await;
    assert_eq!(call.rest().await.len(), 5, "the first's record made room");
}

#[tokio::test]
async fn an_invalid_level_is_invalid_params() {
    let w = wire();
    let s = w.session("2025-11-25", json!({})).await;
    let reply = s.rpc(1, "logging/setLevel", json!({"level": "loud"})).await;
    reply.assert_json(
        200,
        err(
            1,
            -32602,
            "Invalid params: `level` must be one of debug, info, notice, warning, error, critical, alert, emergency",
        ),
    );
    assert_eq!(reply.session_id(), None);
}

#[tokio::test]
async fn an_old_id_is_replaced_after_session_refresh_after() {
    let w = Wire::new(server().session_refresh_after(Duration::from_secs(1)));
    let s = w.session("2025-11-25", json!({})).await;
    let fresh = s.rpc(1, "ping", Value::Null).await;
    fresh.assert_json(200, ok(1, json!({})));
    // Ages are counted in whole seconds; a fresh id is not replaced.
    let first = fresh.session_id().map(str::to_owned);
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let old = s.rpc(2, "ping", Value::Null).await;
    old.assert_json(200, ok(2, json!({})));
    let new_id = old.session_id().expect("a refreshed Mcp-Session-Id");
    assert_ne!(new_id, s.id);
    if let Some(first) = first {
        // The first ping may straddle a second boundary; then it was refreshed already.
        assert_ne!(first, s.id);
    }
    // Both ids name the same session.
    s.with_id(new_id)
        .rpc(3, "ping", Value::Null)
        .await
        .assert_json(200, ok(3, json!({})));
    let notified = s.notify("notifications/initialized", Value::Null).await;
    notified.assert_accepted();
    assert!(notified.session_id().is_some(), "202s are refreshed too");
}

// ---------------------------------------------------------------------------------------------
// Rendering per revision

fn add_input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "a": {"type": "integer", "description": "The first addend."},
            "b": {"type": "integer", "description": "The second addend."},
        },
        "required": ["a", "b"],
    })
}

fn tools_for(revision: &str) -> Value {
    let old = revision == "2025-03-26";
    let mut add = json!({
        "name": "add",
        "description": "Adds two integers.",
        "inputSchema": add_input_schema(),
        "annotations": {"readOnlyHint": true},
    });
    let mut echo = json!({
        "name": "echo",
        "description": "Echoes the text back.",
        "inputSchema": {
            "type": "object",
            "properties": {"text": {"type": "string", "description": "What to echo."}},
            "required": ["text"],
        },
    });
    if old {
        // No top-level title: the tool keeps it in annotations.title.
        echo["annotations"] = json!({"title": "Echo"});
    } else {
        add["outputSchema"] = json!({
            "type": "object",
            "description": "The sum of two numbers.",
            "properties": {"sum": {"type": "integer", "description": "`a + b`."}},
            "required": ["sum"],
        });
        echo["title"] = json!("Echo");
    }
    if revision == "2025-11-25" {
        echo["icons"] = json!([{"src": "https://example.com/echo.png", "mimeType": "image/png"}]);
    }
    let empty = json!({"type": "object", "properties": {}});
    let plain = |name: &str, description: &str| json!({"name": name, "description": description, "inputSchema": empty});
    // In name order; `primes` returns an array: it is absent from every handshake
    // revision's list.
    json!([
        add,
        {
            "name": "ask_model",
            "description": "Asks the client's model a question.",
            "inputSchema": {
                "type": "object",
                "properties": {"question": {"type": "string", "description": "The question."}},
                "required": ["question"],
            },
        },
        plain("ask_name", "Asks the user for their name."),
        {
            "name": "count",
            "description": "Counts to `steps`, reporting progress.",
            "inputSchema": {
                "type": "object",
                "properties": {"steps": {"type": "integer", "description": "How many steps.", "minimum": 0}},
                "required": ["steps"],
            },
        },
        echo,
        plain("link", "Points at the about page."),
        plain("list_roots", "Lists the client's roots."),
        plain("logs", "Logs at four levels."),
        {
            "name": "nap",
            "description": "Waits a minute without a `Context` (it sends nothing; only a cancellation stops it).",
            "inputSchema": {
                "type": "object",
                "properties": {"tag": {"type": "string", "description": "Names the call."}},
                "required": ["tag"],
            },
        },
        plain("reconnect", "Ends its response stream, then answers (SSE polling)."),
        {
            "name": "wait",
            "description": "Says it waits, then waits a minute.",
            "inputSchema": {
                "type": "object",
                "properties": {"tag": {"type": "string", "description": "Names the call."}},
                "required": ["tag"],
            },
        },
    ])
}

#[tokio::test]
async fn tools_list_per_revision() {
    let w = wire();
    for revision in LEGACY {
        let s = w.session(revision, json!({})).await;
        let reply = s.rpc(1, "tools/list", Value::Null).await;
        assert_no_modern_fields(reply.json(200));
        reply.assert_json(200, ok(1, json!({"tools": tools_for(revision)})));
    }
}

#[tokio::test]
async fn prompts_resources_and_templates_lists_per_revision() {
    let w = wire();
    for revision in LEGACY {
        let s = w.session(revision, json!({})).await;
        let titled = revision != "2025-03-26";
        let icons = revision == "2025-11-25";

        let mut greet = json!({
            "name": "greet",
            "description": "Greets someone.",
            "arguments": [
                {"name": "name", "description": "Who to greet.", "required": true},
                {"name": "style", "description": "How to greet.", "required": false},
            ],
        });
        if titled {
            greet["title"] = json!("Greeting");
        }
        let reply = s.rpc(1, "prompts/list", Value::Null).await;
        assert_no_modern_fields(reply.json(200));
        reply.assert_json(200, ok(1, json!({"prompts": [greet]})));

        let mut about = json!({
            "uri": "docs://about",
            "name": "about",
            "description": "What this server is.",
            "mimeType": "text/plain",
        });
        if titled {
            about["title"] = json!("About");
        }
        if icons {
            about["icons"] =
                json!([{"src": "https://example.com/about.png", "mimeType": "image/png"}]);
        }
        let reply = s.rpc(2, "resources/list", Value::Null).await;
        assert_no_modern_fields(reply.json(200));
        reply.assert_json(200, ok(2, json!({"resources": [about]})));

        let mut profile = json!({
            "uriTemplate": "users://{id}/profile",
            "name": "profile",
            "description": "A user's profile, by numeric id (user 1 exists).",
            "mimeType": "application/json",
        });
        if titled {
            profile["title"] = json!("Profile");
        }
        let reply = s.rpc(3, "resources/templates/list", Value::Null).await;
        assert_no_modern_fields(reply.json(200));
        reply.assert_json(200, ok(3, json!({"resourceTemplates": [profile]})));
    }
}

#[tokio::test]
async fn structured_content_is_kept_from_2025_06_18_and_dropped_on_2025_03_26() {
    let w = wire();
    for revision in LEGACY {
        let s = w.session(revision, json!({})).await;
        let mut want = json!({"content": [{"type": "text", "text": "{\"sum\":5}"}]});
        if revision != "2025-03-26" {
            want["structuredContent"] = json!({"sum": 5});
        }
        let reply = s.call(1, "add", json!({"a": 2, "b": 3})).await;
        assert_no_modern_fields(reply.json(200));
        reply.assert_json(200, ok(1, want));
    }
}

#[tokio::test]
async fn content_blocks_per_revision() {
    let w = wire();
    for revision in LEGACY {
        let s = w.session(revision, json!({})).await;
        let want = match revision {
            "2025-03-26" => json!({"content": [
                {"type": "text", "text": "See the about page.", "annotations": {"audience": ["user"], "priority": 0.5}},
                {"type": "text", "text": "about <docs://about>: What this server is."},
            ]}),
            "2025-06-18" => json!({"content": [
                {"type": "text", "text": "See the about page.", "annotations": {"audience": ["user"], "priority": 0.5, "lastModified": "2025-01-01T00:00:00Z"}},
                {"type": "resource_link", "uri": "docs://about", "name": "about", "title": "About", "description": "What this server is.", "mimeType": "text/plain"},
            ]}),
            _ => json!({"content": [
                {"type": "text", "text": "See the about page.", "annotations": {"audience": ["user"], "priority": 0.5, "lastModified": "2025-01-01T00:00:00Z"}},
                {"type": "resource_link", "uri": "docs://about", "name": "about", "title": "About", "description": "What this server is.", "mimeType": "text/plain",
                 "icons": [{"src": "https://example.com/about.png", "mimeType": "image/png"}]},
            ]}),
        };
        s.call(1, "link", json!({}))
            .await
            .assert_json(200, ok(1, want));
    }
}

#[tokio::test]
async fn prompt_messages_per_revision() {
    let w = wire();
    for revision in LEGACY {
        let s = w.session(revision, json!({})).await;
        let link = if revision == "2025-03-26" {
            json!({"type": "text", "text": "about <docs://about>"})
        } else {
            json!({"type": "resource_link", "uri": "docs://about", "name": "about"})
        };
        let reply = s
            .rpc(
                1,
                "prompts/get",
                json!({"name": "greet", "arguments": {"name": "Ada"}}),
            )
            .await;
        assert_no_modern_fields(reply.json(200));
        reply.assert_json(
            200,
            ok(
                1,
                json!({"messages": [
                    {"role": "user", "content": {"type": "text", "text": "Greet Ada in a friendly way."}},
                    {"role": "user", "content": link},
                ]}),
            ),
        );
    }
}

#[tokio::test]
async fn resources_read_and_not_found_per_revision() {
    let w = wire();
    for revision in LEGACY {
        let s = w.session(revision, json!({})).await;
        let reply = s
            .rpc(1, "resources/read", json!({"uri": "users://1/profile"}))
            .await;
        assert_no_modern_fields(reply.json(200));
        reply.assert_json(
            200,
            ok(
                1,
                json!({"contents": [{"uri": "users://1/profile", "mimeType": "application/json", "text": "{\"id\":1,\"name\":\"Ada\"}"}]}),
            ),
        );
        s.rpc(2, "resources/read", json!({"uri": "users://9/profile"}))
            .await
            .assert_json(
                200,
                json!({"jsonrpc": "2.0", "id": 2, "error": {
                    "code": -32002,
                    "message": "Resource not found: users://9/profile",
                    "data": {"uri": "users://9/profile"},
                }}),
            );
    }
}

#[tokio::test]
async fn completion_is_served_on_every_revision() {
    let w = wire();
    for revision in LEGACY {
        let s = w.session(revision, json!({})).await;
        let reply = s
            .rpc(
                1,
                "completion/complete",
                json!({"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "style", "value": "fo"}}),
            )
            .await;
        assert_no_modern_fields(reply.json(200));
        reply.assert_json(200, ok(1, json!({"completion": {"values": ["formal"]}})));
    }
}

#[tokio::test]
async fn a_tool_with_a_non_object_output_is_absent_and_refused() {
    let w = wire();
    for revision in LEGACY {
        let s = w.session(revision, json!({})).await;
        let listed = s.rpc(1, "tools/list", Value::Null).await;
        let names: Vec<&str> = listed.json(200)["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap())
            .collect();
        assert!(!names.contains(&"primes"), "{revision}: {names:?}");
        s.call(2, "primes", json!({}))
            .await
            .assert_json(
                200,
                err(
                    2,
                    -32602,
                    &format!(
                        "Tool `primes` is not available on revision {revision}: its output schema is not a JSON object (return a struct, or a String for text only). It is served on 2026-07-28."
                    ),
                ),
            );
    }
}

#[tokio::test]
async fn unknown_methods_and_modern_methods_are_method_not_found_200() {
    let w = wire();
    let s = w.session("2025-11-25", json!({})).await;
    for (i, method) in ["server/discover", "subscriptions/listen", "nope/nope"]
        .into_iter()
        .enumerate()
    {
        s.rpc(i, method, Value::Null)
            .await
            .assert_json(200, err(i, -32601, &format!("Method not found: {method}")));
    }
}

// ---------------------------------------------------------------------------------------------
// 2025-03-26 batches

#[tokio::test]
async fn a_batch_is_answered_with_one_array_in_order() {
    let w = wire();
    let s = w.session("2025-03-26", json!({})).await;
    let reply = s
        .send(s.post(json!([
            {"jsonrpc": "2.0", "id": "c", "method": "tools/call", "params": {"name": "add", "arguments": {"a": 1, "b": 2}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "ping"},
            {"jsonrpc": "2.0", "id": "r", "method": "resources/read", "params": {"uri": "docs://about"}},
            {"jsonrpc": "2.0", "id": 4, "method": "nope"},
        ])))
        .await;
    reply.assert_batch(
        200,
        json!([
            ok("c", json!({"content": [{"type": "text", "text": "{\"sum\":3}"}]})),
            ok(2, json!({})),
            ok("r", json!({"contents": [{"uri": "docs://about", "mimeType": "text/plain", "text": "The legacy wire-test server."}]})),
            err(4, -32601, "Method not found: nope"),
        ]),
    );
}

#[tokio::test]
async fn a_batch_that_asks_the_client_streams_the_question_then_the_array() {
    let w = wire();
    let s = w.session("2025-03-26", json!({"sampling": {}})).await;
    let mut stream = s
        .open(s.post(json!([
            {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ask_model", "arguments": {"question": "Why?"}}},
            {"jsonrpc": "2.0", "id": 2, "method": "ping"},
        ])))
        .await;
    stream.assert_sse();
    let ask = stream.message().await;
    assert_eq!(ask["method"], "sampling/createMessage");
    s.answer(
        &ask["id"],
        json!({"role": "assistant", "content": {"type": "text", "text": "Because."}, "model": "m"}),
    )
    .await
    .assert_accepted();
    assert_eq!(
        stream.rest().await,
        [json!([
            ok(1, text("The model (m) said: Because.")),
            ok(2, json!({})),
        ])]
    );
}

#[tokio::test]
async fn a_cancelled_request_of_a_batch_has_no_element() {
    let w = wire();
    let s = w.session("2025-03-26", json!({})).await;
    let mut stream = s
        .open(s.post(json!([
            {"jsonrpc": "2.0", "id": "w", "method": "tools/call", "params": {"name": "wait", "arguments": {"tag": "batch"}}},
            {"jsonrpc": "2.0", "id": "p", "method": "ping"},
        ])))
        .await;
    stream.assert_sse();
    assert_eq!(stream.message().await["params"]["data"], "waiting");
    s.notify("notifications/cancelled", json!({"requestId": "w"}))
        .await
        .assert_accepted();
    assert_eq!(stream.rest().await, [json!([ok("p", json!({}))])]);
    assert!(stopped("batch"), "the call was dropped");
}

#[tokio::test]
async fn a_batch_of_notifications_and_responses_is_202() {
    let w = wire();
    let s = w.session("2025-03-26", json!({})).await;
    s.send(s.post(json!([
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 99, "result": {}},
    ])))
    .await
    .assert_accepted();
}

#[tokio::test]
async fn initialize_in_a_batch_is_an_error_element() {
    let w = wire();
    let s = w.session("2025-03-26", json!({})).await;
    s.send(s.post(json!([
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize_params("2025-03-26", json!({}))},
        {"jsonrpc": "2.0", "id": 2, "method": "ping"},
    ])))
    .await
    .assert_batch(
        200,
        json!([
            err(1, -32600, "Invalid request: `initialize` opens a session: send it first, without Mcp-Session-Id, and never in a batch"),
            ok(2, json!({})),
        ]),
    );
}

#[tokio::test]
async fn a_malformed_batch_element_is_an_error_element() {
    let w = wire();
    let s = w.session("2025-03-26", json!({})).await;
    let reply = s
        .send(s.post(json!([
            {"jsonrpc": "2.0", "id": 1, "method": "ping"},
            {"jsonrpc": "1.0", "id": 2, "method": "ping"},
        ])))
        .await;
    let items: Value = serde_json::from_slice(&reply.body).unwrap();
    assert_eq!(items[0], ok(1, json!({})));
    assert_eq!(items[1]["id"], 2);
    assert_eq!(items[1]["error"]["code"], -32600);
}

#[tokio::test]
async fn batches_are_refused_after_2025_03_26() {
    let w = wire();
    for revision in ["2025-06-18", "2025-11-25"] {
        let s = w.session(revision, json!({})).await;
        s.send(s.post(json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"}])))
            .await
            .assert_json(
                400,
                err(
                    Value::Null,
                    -32600,
                    &format!(
                        "Invalid request: JSON-RPC batches (arrays) were removed after 2025-03-26; this session speaks {revision}"
                    ),
                ),
            );
    }
}

#[tokio::test]
async fn a_batch_without_a_session_is_400() {
    let w = wire();
    w.send_as(
        "2025-03-26",
        Req::legacy(json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"}])),
    )
    .await
    .assert_json(
        400,
        err(
            Value::Null,
            -32600,
            "Invalid request: a JSON-RPC batch (array) is only accepted inside a 2025-03-26 session",
        ),
    );
}

#[tokio::test]
async fn a_batch_over_max_batch_size_is_400() {
    let w = Wire::new(server().limits(|l| l.max_batch_size(2)));
    let s = w.session("2025-03-26", json!({})).await;
    let ping = |i: i64| json!({"jsonrpc": "2.0", "id": i, "method": "ping"});
    s.send(s.post(json!([ping(1), ping(2), ping(3)])))
        .await
        .assert_json(
            400,
            err(
                Value::Null,
                -32600,
                "Invalid request: a batch of 3 messages exceeds this server's limit of 2; split it",
            ),
        );
    s.send(s.post(json!([ping(1), ping(2)])))
        .await
        .assert_batch(200, json!([ok(1, json!({})), ok(2, json!({}))]));
}

#[tokio::test]
async fn an_empty_batch_is_400() {
    let w = wire();
    let s = w.session("2025-03-26", json!({})).await;
    s.send(s.post(json!([]))).await.assert_json(
        400,
        err(Value::Null, -32600, "Invalid request: an empty batch"),
    );
}

// ---------------------------------------------------------------------------------------------
// Server-to-client requests

/// The elicitation `ask_name` sends.
fn name_elicitation(id: i64) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "method": "elicitation/create",
        "params": {
            "message": "What is your name?",
            "requestedSchema": {
                "type": "object",
                "properties": {"name": {"type": "string", "description": "Your name."}},
                "required": ["name"],
            },
            // The question's key (what a gateway asks a 2026-07-28 client under).
            "_meta": {"io.github.sake-rs/inputKey": "name"},
        },
    })
}

#[tokio::test]
async fn elicitation_is_a_request_on_the_call_stream_answered_by_a_post() {
    let w = wire();
    for revision in ["2025-06-18", "2025-11-25"] {
        let s = w.session(revision, all_client_capabilities()).await;
        let mut call = s.call_streaming(7, "ask_name", json!({})).await;
        call.assert_sse();
        let ask = call.message().await;
        let id = ask["id"].as_i64().expect("a numeric id");
        assert_eq!(ask, name_elicitation(id));
        s.answer(
            &ask["id"],
            json!({"action": "accept", "content": {"name": "Ada"}}),
        )
        .await
        .assert_accepted();
        assert_eq!(call.rest().await, [ok(7, text("Hello, Ada!"))]);
    }
}

#[tokio::test]
async fn a_declined_elicitation_reaches_the_tool() {
    let w = wire();
    let s = w.session("2025-06-18", json!({"elicitation": {}})).await;
    let mut call = s.call_streaming(1, "ask_name", json!({})).await;
    let ask = call.message().await;
    s.answer(&ask["id"], json!({"action": "decline"}))
        .await
        .assert_accepted();
    assert_eq!(call.rest().await, [ok(1, text("You declined."))]);
}

#[tokio::test]
async fn sampling_is_a_request_on_the_call_stream_on_every_revision() {
    let w = wire();
    for revision in LEGACY {
        let s = w.session(revision, json!({"sampling": {}})).await;
        let mut call = s
            .call_streaming(2, "ask_model", json!({"question": "Capital of France?"}))
            .await;
        let ask = call.message().await;
        assert_eq!(
            ask,
            json!({"jsonrpc": "2.0", "id": ask["id"], "method": "sampling/createMessage", "params": {
                "messages": [{"role": "user", "content": {"type": "text", "text": "Capital of France?"}}],
                "maxTokens": 50,
                "_meta": {"io.github.sake-rs/inputKey": "answer"},
            }})
        );
        s.answer(
            &ask["id"],
            json!({"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m-1", "stopReason": "endTurn"}),
        )
        .await
        .assert_accepted();
        assert_eq!(
            call.rest().await,
            [ok(2, text("The model (m-1) said: Paris"))]
        );
    }
}

#[tokio::test]
async fn roots_is_a_request_on_the_call_stream() {
    let w = wire();
    for revision in LEGACY {
        let s = w.session(revision, json!({"roots": {}})).await;
        let mut call = s.call_streaming(3, "list_roots", json!({})).await;
        let ask = call.message().await;
        assert_eq!(
            ask,
            json!({"jsonrpc": "2.0", "id": ask["id"], "method": "roots/list", "params": {
                "_meta": {"io.github.sake-rs/inputKey": "roots"},
            }})
        );
        s.answer(
            &ask["id"],
            json!({"roots": [{"uri": "file:///a", "name": "a"}, {"uri": "file:///b"}]}),
        )
        .await
        .assert_accepted();
        assert_eq!(
            call.rest().await,
            [ok(3, text("Roots: file:///a, file:///b"))]
        );
    }
}

#[tokio::test]
async fn a_client_error_answer_reaches_the_tool() {
    let w = wire();
    let s = w.session("2025-11-25", json!({"sampling": {}})).await;
    let mut call = s
        .call_streaming(1, "ask_model", json!({"question": "?"}))
        .await;
    let ask = call.message().await;
    s.send(s.post(json!({"jsonrpc": "2.0", "id": ask["id"], "error": {"code": -1, "message": "User rejected sampling"}})))
        .await
        .assert_accepted();
    assert_eq!(
        call.rest().await,
        [ok(
            1,
            tool_error("the client refused: User rejected sampling (-1)")
        )]
    );
}

#[tokio::test]
async fn an_undeclared_capability_is_missing_capability_for_the_tool() {
    let w = wire();
    let s = w.session("2025-06-18", json!({"sampling": {}})).await;
    s.call(1, "ask_name", json!({})).await.assert_json(
        200,
        ok(
            1,
            tool_error(
                "the client did not declare the `elicitation` capability this request needs",
            ),
        ),
    );
    s.call(2, "list_roots", json!({})).await.assert_json(
        200,
        ok(
            2,
            tool_error("the client did not declare the `roots` capability this request needs"),
        ),
    );
}

#[tokio::test]
async fn a_client_that_never_answers_times_out() {
    let w = Wire::new(server().limits(|l| l.input_timeout(Duration::from_millis(200))));
    let s = w.session("2025-06-18", json!({"elicitation": {}})).await;
    let mut call = s.call_streaming(1, "ask_name", json!({})).await;
    let ask = call.message().await;
    assert_eq!(ask["method"], "elicitation/create");
    assert_eq!(
        call.rest().await,
        [ok(1, tool_error("the client did not answer within 200ms"))]
    );
    // A late answer finds nothing waiting, and is accepted all the same.
    s.answer(&ask["id"], json!({"action": "cancel"}))
        .await
        .assert_accepted();
}

#[tokio::test]
async fn an_answer_for_nothing_waiting_is_accepted() {
    let w = wire();
    let s = w.session("2025-11-25", json!({})).await;
    s.answer(&json!(12345), json!({})).await.assert_accepted();
}

#[tokio::test]
async fn cancelled_stops_a_running_call_and_nothing_answers_it() {
    let w = wire();
    let s = w.session("2025-06-18", json!({})).await;
    let mut call = s.call_streaming(9, "wait", json!({"tag": "single"})).await;
    call.assert_sse();
    assert_eq!(
        call.message().await,
        notification(
            "notifications/message",
            json!({"level": "info", "logger": "wait", "data": "waiting"})
        )
    );
    assert!(!stopped("single"));
    s.notify(
        "notifications/cancelled",
        json!({"requestId": 9, "reason": "No longer needed"}),
    )
    .await
    .assert_accepted();
    assert_eq!(call.rest().await, Vec::<Value>::new());
    assert!(stopped("single"), "the call was dropped");
}

/// A function without a `Context` gets no response stream, and registers for cancellation
/// only once it waits: `notifications/cancelled` still drops it, and nothing answers it.
#[tokio::test]
async fn cancelled_stops_a_running_call_of_a_function_without_context() {
    let w = wire();
    for revision in LEGACY {
        let s = w.session(revision, json!({})).await;
        let tag = format!("quiet {revision}");
        let call = s.call_streaming(4, "nap", json!({ "tag": tag }));
        let cancel = async {
            while !NAPPING.lock().unwrap().contains(&tag) {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            assert!(!stopped(&tag));
            s.notify("notifications/cancelled", json!({"requestId": 4}))
                .await
                .assert_accepted();
        };
        let (mut call, ()) = tokio::join!(call, cancel);
        call.assert_sse();
        assert_eq!(call.rest().await, Vec::<Value>::new(), "{revision}");
        assert!(stopped(&tag), "{revision}: the call was dropped");
    }
}

#[tokio::test]
async fn log_messages_honour_the_session_level() {
    let w = wire();
    let s = w.session("2025-03-26", json!({})).await;
    let mut call = s.call_streaming(1, "logs", json!({})).await;
    call.assert_sse();
    let log = |level: &str, data: Value| {
        notification(
            "notifications/message",
            json!({"level": level, "logger": "logs", "data": data}),
        )
    };
    assert_eq!(
        call.rest().await,
        [
            log("debug", json!("debug detail")),
            log("info", json!("info note")),
            log("warning", json!({"sign": "warning"})),
            log("error", json!("error state")),
            ok(1, text("logged")),
        ]
    );
    let reply = s
        .rpc(2, "logging/setLevel", json!({"level": "error"}))
        .await;
    let s = s.with_id(reply.session_id().unwrap());
    let mut call = s.call_streaming(3, "logs", json!({})).await;
    assert_eq!(
        call.rest().await,
        [log("error", json!("error state")), ok(3, text("logged"))]
    );
}

#[tokio::test]
async fn progress_notifications_precede_the_result() {
    let w = wire();
    for revision in LEGACY {
        let s = w.session(revision, json!({})).await;
        let mut call = s
            .open(s.request(
                1,
                "tools/call",
                json!({"name": "count", "arguments": {"steps": 2}, "_meta": {"progressToken": "t-1"}}),
            ))
            .await;
        call.assert_sse();
        let progress = |p: f64, message: &str| {
            notification(
                "notifications/progress",
                json!({"progressToken": "t-1", "progress": p, "total": 2.0, "message": message}),
            )
        };
        assert_eq!(
            call.rest().await,
            [
                progress(1.0, "step 1"),
                progress(2.0, "step 2"),
                ok(1, text("counted to 2")),
            ]
        );
        // Without a token: no progress, a plain JSON answer.
        s.call(2, "count", json!({"steps": 2}))
            .await
            .assert_json(200, ok(2, text("counted to 2")));
    }
}

// ---------------------------------------------------------------------------------------------
// The standalone GET stream

#[tokio::test]
async fn resource_updates_reach_only_streams_of_sessions_subscribed_to_the_uri() {
    let w = wire();
    let notifier = w.service().notifier();
    let subscribed = w.session("2025-11-25", json!({})).await;
    let other = w.session("2025-06-18", json!({})).await;
    let mut sub_stream = subscribed.get().await;
    let mut other_stream = other.get().await;

    subscribed
        .rpc(1, "resources/subscribe", json!({"uri": "docs://about"}))
        .await
        .assert_json(200, ok(1, json!({})));
    notifier.notify_resource_updated("users://1/profile");
    notifier.notify_resource_updated("docs://about");
    assert_eq!(
        sub_stream.message().await,
        notification(
            "notifications/resources/updated",
            json!({"uri": "docs://about"})
        )
    );
    other_stream.assert_silent(Duration::from_millis(200)).await;

    subscribed
        .rpc(2, "resources/unsubscribe", json!({"uri": "docs://about"}))
        .await
        .assert_json(200, ok(2, json!({})));
    notifier.notify_resource_updated("docs://about");
    sub_stream.assert_silent(Duration::from_millis(200)).await;
}

#[tokio::test]
async fn list_changes_reach_every_get_stream() {
    let w = wire();
    let notifier = w.service().notifier();
    let a = w.session("2025-11-25", json!({})).await;
    let b = w.session("2025-03-26", json!({})).await;
    let mut sa = a.get().await;
    let mut sb = b.get().await;
    notifier.tools_changed();
    notifier.prompts_changed();
    notifier.resources_changed();
    for stream in [&mut sa, &mut sb] {
        for method in [
            "notifications/tools/list_changed",
            "notifications/prompts/list_changed",
            "notifications/resources/list_changed",
        ] {
            assert_eq!(stream.message().await, notification(method, json!({})));
        }
    }
}

#[tokio::test]
async fn delete_ends_the_sessions_get_stream() {
    let w = wire();
    let s = w.session("2025-06-18", json!({})).await;
    let mut stream = s.get().await;
    assert_eq!(s.delete().await.status, 200);
    assert_eq!(stream.next_event().await, None);
}

#[tokio::test]
async fn a_newer_get_stream_replaces_the_older_one() {
    let w = wire();
    let s = w.session("2025-11-25", json!({})).await;
    let mut older = s.get().await;
    let mut newer = s.get().await;
    assert_eq!(older.next_event().await, None);
    w.service().notifier().prompts_changed();
    assert_eq!(
        newer.message().await,
        notification("notifications/prompts/list_changed", json!({}))
    );
}

#[tokio::test]
async fn subscribe_without_a_uri_is_invalid_params() {
    let w = wire();
    let s = w.session("2025-06-18", json!({})).await;
    s.rpc(1, "resources/subscribe", json!({}))
        .await
        .assert_json(200, err(1, -32602, "Invalid params: missing `uri`"));
}

// ---------------------------------------------------------------------------------------------
// SSE polling (2025-11-25)

#[tokio::test]
async fn close_stream_ends_the_post_after_a_priming_event_and_get_resumes_it() {
    let w = wire();
    let s = w.session("2025-11-25", json!({})).await;
    let mut call = s.call_streaming(5, "reconnect", json!({})).await;
    call.assert_sse();
    let events = call.rest_events().await;
    assert_eq!(events.len(), 1, "{events:?}");
    let priming = &events[0];
    assert_eq!(priming.data.as_deref(), Some(""));
    let names: Vec<&str> = priming.fields.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["id", "retry"]);
    assert_eq!(priming.field("retry"), Some("1000"));
    let last = priming.field("id").unwrap();

    let mut resumed = s.resume(last, "tools/call").await;
    let rest = resumed.rest_events().await;
    assert_eq!(rest.len(), 1, "{rest:?}");
    assert_eq!(rest[0].message(), Some(ok(5, text("reconnected"))));
    let resumed_id = rest[0].field("id").expect("resumable events carry ids");
    assert_ne!(resumed_id, last);
}

#[tokio::test]
async fn streams_of_2025_11_25_start_with_a_priming_event() {
    let w = wire();
    let s = w.session("2025-11-25", json!({})).await;
    let mut call = s.call_streaming(1, "logs", json!({})).await;
    let first = call.next_event().await.unwrap();
    assert_eq!(first.data.as_deref(), Some(""));
    assert!(first.field("id").is_some() && first.field("retry").is_some());
    let rest = call.rest_events().await;
    assert_eq!(rest.len(), 5);
    assert!(rest.iter().all(|e| e.field("id").is_some()));
}

#[tokio::test]
async fn before_2025_11_25_close_stream_does_nothing() {
    let w = wire();
    for revision in ["2025-06-18", "2025-03-26"] {
        let s = w.session(revision, json!({})).await;
        s.call(5, "reconnect", json!({}))
            .await
            .assert_json(200, ok(5, text("reconnected")));
        // And streams carry no ids.
        let mut call = s.call_streaming(6, "logs", json!({})).await;
        let events = call.rest_events().await;
        assert_eq!(events.len(), 5);
        assert!(events.iter().all(|e| e.fields.is_empty()), "{events:?}");
    }
}

#[tokio::test]
async fn a_last_event_id_of_another_session_opens_a_plain_get_stream() {
    let w = wire();
    let a = w.session("2025-11-25", json!({})).await;
    let b = w.session("2025-11-25", json!({})).await;
    let mut call = a.call_streaming(5, "reconnect", json!({})).await;
    let events = call.rest_events().await;
    let last = events[0].field("id").unwrap();
    // b cannot read a's stream: it gets its own standalone stream instead.
    let mut stream = b.resume(last, "tools/call").await;
    stream.assert_silent(Duration::from_millis(200)).await;
    w.service().notifier().tools_changed();
    assert_eq!(
        stream.message().await,
        notification("notifications/tools/list_changed", json!({}))
    );
}

// ---------------------------------------------------------------------------------------------
// The harness validates against the session's revision

#[test]
#[should_panic(expected = "2025-03-26 defines no message \"elicitation/create\"")]
fn the_validator_knows_2025_03_26_has_no_elicitation() {
    sake_tests::validate("2025-03-26", None, &name_elicitation(1));
}

#[test]
#[should_panic(expected = "violates InitializeResult of the 2025-06-18 schema")]
fn the_validator_checks_legacy_results_by_method() {
    sake_tests::validate(
        "2025-06-18",
        Some("initialize"),
        &ok(
            0,
            json!({"protocolVersion": "2025-06-18", "capabilities": {}}),
        ),
    );
}

#[test]
#[should_panic(expected = "violates JSONRPCError of the 2025-06-18 schema")]
fn the_validator_checks_id_less_legacy_errors_but_the_id() {
    sake_tests::validate(
        "2025-06-18",
        None,
        &json!({"jsonrpc": "2.0", "error": {"code": "-32001", "message": "x"}}),
    );
}

#[test]
fn the_validator_accepts_id_less_errors_of_refused_posts() {
    for revision in LEGACY {
        sake_tests::validate(revision, None, &not_found(Value::Null, "was ended"));
    }
}

#[test]
fn a_priming_event_carries_no_message() {
    let events = sake_tests::parse_sse("id: 7.0\nretry: 1000\ndata: \n\nid: 7.1\ndata: {}\n\n");
    assert_eq!(events.len(), 2);
    assert_eq!(events[0].message(), None);
    assert_eq!(events[0].field("retry"), Some("1000"));
    assert_eq!(events[1].message(), Some(json!({})));
}
