//! Multi round-trip requests (2026-07-28 Multi Round-Trip Requests) on the wire: `ctx.elicit`, `ctx.sample` and
//! `ctx.roots` on 2026-07-28 end a round with `resultType: "input_required"`; the client
//! retries with `inputResponses` and the signed `requestState`. Exact statuses and whole
//! payloads; every reply is validated against the 2026-07-28 schema by the harness (`sake_tests`).

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::Duration;

use base64::Engine as _;
use sake::prelude::*;
use sake::{CreateMessageRequest, Elicitation, InputError};
use sake_tests::fixtures::NameForm;
use sake_tests::rpc::{complete, err, merged, ok, server_meta, text_result, with_caps};
use sake_tests::{Reply, Wire};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// The server under test

#[derive(Deserialize, JsonSchema)]
struct ColorForm {
    color: String,
}

#[derive(Deserialize, JsonSchema)]
struct Confirm {
    ok: bool,
}

type Asked<T> = Result<T, InputError>;

fn name_of(form: Elicitation<NameForm>) -> String {
    match form {
        Elicitation::Accepted(f) => f.name,
        Elicitation::Declined => "stranger".into(),
        Elicitation::Cancelled => "nobody".into(),
    }
}

/// Asks for the user's name, then greets them.
#[tool]
async fn greet(ctx: Context) -> Asked<String> {
    let form = ctx
        .elicit::<NameForm>("user_name", "What is your name?")
        .await?;
    Ok(format!("Hello, {}!", name_of(form)))
}

/// Greets the user by name if the client can ask, else greets a guest.
#[tool]
async fn greet_or_guest(ctx: Context) -> Asked<String> {
    match ctx
        .elicit::<NameForm>("user_name", "What is your name?")
        .await
    {
        Ok(form) => Ok(format!("Hello, {}!", name_of(form))),
        Err(InputError::MissingCapability { .. }) => Ok("Hello, guest!".into()),
        Err(e) => Err(e),
    }
}

static COUNTED_BEFORE: AtomicUsize = AtomicUsize::new(0);
static COUNTED_AFTER: AtomicUsize = AtomicUsize::new(0);

/// Counts how often the code before and after its question runs.
#[tool]
async fn counted(ctx: Context) -> Asked<String> {
    let before = COUNTED_BEFORE.fetch_add(1, SeqCst) + 1;
    let confirm = ctx.elicit::<Confirm>("confirm", "Proceed?").await?;
    let after = COUNTED_AFTER.fetch_add(1, SeqCst) + 1;
    let ok = confirm.accepted().is_some_and(|c| c.ok);
    Ok(format!("ok={ok} before={before} after={after}"))
}

/// Asks for a name and a model's answer at once.
#[tool]
async fn two_at_once(ctx: Context) -> Asked<String> {
    let (name, capital) = tokio::join!(
        ctx.elicit::<NameForm>("name", "What is your name?"),
        ctx.sample(
            "capital",
            CreateMessageRequest::user("What is the capital of France?", 20)
        ),
    );
    Ok(format!(
        "{} says {}",
        name_of(name?),
        capital?.text().unwrap_or_default()
    ))
}

/// A survey about `topic` in three rounds: a name, a colour, the client's roots.
#[tool]
async fn survey(
    /// What the survey is about.
    topic: String,
    ctx: Context,
) -> Asked<String> {
    let name = name_of(
        ctx.elicit::<NameForm>("step1", "Step 1: What is your name?")
            .await?,
    );
    let color = ctx
        .elicit::<ColorForm>("step2", "Step 2: What is your favourite colour?")
        .await?
        .accepted()
        .map_or_else(|| "nothing".to_owned(), |c| c.color);
    let roots = ctx.roots("roots").await?;
    Ok(format!(
        "{topic}: {name} likes {color}, {} root(s)",
        roots.len()
    ))
}

/// Asks the user to authorize access in a browser (URL-mode elicitation).
#[tool]
async fn connect_account(ctx: Context) -> Asked<String> {
    let action = ctx
        .elicit_url(
            "authorize",
            "Authorize access to your account",
            "https://example.com/authorize?session=42",
        )
        .await?;
    Ok(format!("action={action}"))
}

/// Asks the client's model, offering it a tool.
#[tool]
async fn weather_agent(ctx: Context) -> Asked<String> {
    let mut request = CreateMessageRequest::user("What is the weather in Paris?", 50);
    request.tools = Some(vec![json!({
        "name": "get_weather",
        "description": "The weather in a city.",
        "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
    })]);
    request.tool_choice = Some(json!({"mode": "auto"}));
    let answer = ctx.sample("forecast", request).await?;
    Ok(answer.text().unwrap_or_default().to_owned())
}

static GUARDED_RUNS: AtomicUsize = AtomicUsize::new(0);

/// Needs sampling; says so before it runs.
#[tool(requires(sampling))]
fn guarded() -> String {
    format!("ran {} time(s)", GUARDED_RUNS.fetch_add(1, SeqCst) + 1)
}

static GUARDED_TWICE_RUNS: AtomicUsize = AtomicUsize::new(0);

/// Needs sampling and roots.
#[tool(requires(sampling, roots))]
fn guarded_twice() -> String {
    GUARDED_TWICE_RUNS.fetch_add(1, SeqCst);
    "ran".into()
}

/// Takes no `Context`: it can ask nothing, so its calls run without a round unless they
/// answer one.
#[tool]
fn plain() -> &'static str {
    "plain"
}

/// Needs URL-mode elicitation.
#[tool(requires(url_elicitation))]
fn guarded_url() -> &'static str {
    "ran"
}

/// A greeting prompt that asks whom to greet.
#[prompt(name = "greet")]
async fn greet_prompt(ctx: Context) -> Asked<String> {
    let form = ctx
        .elicit::<NameForm>("user_name", "What is your name?")
        .await?;
    Ok(format!("Write a greeting for {}.", name_of(form)))
}

/// A note only shown after the user confirms.
#[resource(uri = "secret://note", mime_type = "text/plain")]
async fn secret_note(ctx: Context) -> Asked<String> {
    let confirm = ctx.elicit::<Confirm>("confirm", "Reveal the note?").await?;
    Ok(if confirm.accepted().is_some_and(|c| c.ok) {
        "The note.".into()
    } else {
        "Hidden.".into()
    })
}

const SERVER: (&str, &str) = ("mrtr", "1.0.0");

fn server() -> Server {
    Server::from_registry().name(SERVER.0).version(SERVER.1)
}

fn wire() -> Wire {
    Wire::new(server())
}

fn text(t: &str) -> Value {
    text_result(SERVER, t)
}

/// An `input_required` result, whole.
fn input_required(requests: Value, state: &str) -> Value {
    json!({
        "resultType": "input_required",
        "inputRequests": requests,
        "requestState": state,
        "_meta": server_meta(SERVER.0, SERVER.1),
    })
}

/// `tools/call` params declaring `caps`, with `more` members (inputResponses, requestState).
fn call(name: &str, arguments: Value, caps: Value, more: Value) -> Value {
    with_caps(
        merged(json!({"name": name, "arguments": arguments}), more),
        caps,
    )
}

/// The `requestState` of an `input_required` answer (checked to be an opaque visible-ASCII
/// string).
fn state_of(reply: &Reply) -> String {
    let m = reply.json(200);
    assert_eq!(
        m["result"]["resultType"], "input_required",
        "not input_required: {m}"
    );
    let s = m["result"]["requestState"]
        .as_str()
        .expect("a string requestState")
        .to_owned();
    assert!(!s.is_empty() && s.bytes().all(|b| (0x21..=0x7e).contains(&b)));
    s
}

fn form(message: &str, field: &str, ty: &str) -> Value {
    json!({"method": "elicitation/create", "params": {
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": {field: {"type": ty}},
            "required": [field],
        },
    }})
}

fn name_request() -> Value {
    form("What is your name?", "name", "string")
}

fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

fn elicitation() -> Value {
    json!({"elicitation": {}})
}

const BAD_STATE: &str = "Invalid params: requestState integrity check failed (it was altered, has expired, or belongs to another request); retry without it";
const BAD_RESPONSES: &str = "Invalid params: `inputResponses` must be an object mapping each input request's key to the client's result";

// ---------------------------------------------------------------------------------------------
// One question, answered

#[tokio::test]
async fn one_question_is_input_required_then_the_retry_completes() {
    let w = wire();
    let first = w
        .rpc(
            1,
            "tools/call",
            call("greet", json!({}), elicitation(), json!({})),
        )
        .await;
    let state = state_of(&first);
    first.assert_json(
        200,
        ok(
            1,
            input_required(json!({"user_name": name_request()}), &state),
        ),
    );
    // The retry: a new id, the same params, the answer under the question's key, the state
    // echoed.
    w.rpc(
        2,
        "tools/call",
        call(
            "greet",
            json!({}),
            elicitation(),
            json!({"inputResponses": {"user_name": accept(json!({"name": "Ada"}))}, "requestState": state}),
        ),
    )
    .await
    .assert_json(200, ok(2, text("Hello, Ada!")));
    // Declining is an answer too.
    w.rpc(
        3,
        "tools/call",
        call(
            "greet",
            json!({}),
            elicitation(),
            json!({"inputResponses": {"user_name": {"action": "decline"}}, "requestState": state}),
        ),
    )
    .await
    .assert_json(200, ok(3, text("Hello, stranger!")));
}

#[tokio::test]
async fn an_answer_without_the_state_is_enough_when_nothing_else_was_asked() {
    // The state carries earlier rounds' answers; a first-round question needs none.
    wire()
        .rpc(
            1,
            "tools/call",
            call(
                "greet",
                json!({}),
                elicitation(),
                json!({"inputResponses": {"user_name": accept(json!({"name": "Grace"}))}}),
            ),
        )
        .await
        .assert_json(200, ok(1, text("Hello, Grace!")));
}

/// The rule the docs teach: the function runs again from the start on the retry, so code
/// before a question runs once per round; code after it runs once, when answered.
#[tokio::test]
async fn code_before_the_question_runs_again_on_the_retry() {
    let w = wire();
    let first = w
        .rpc(
            1,
            "tools/call",
            call("counted", json!({}), elicitation(), json!({})),
        )
        .await;
    let state = state_of(&first);
    assert_eq!(
        (COUNTED_BEFORE.load(SeqCst), COUNTED_AFTER.load(SeqCst)),
        (1, 0)
    );
    w.rpc(
        2,
        "tools/call",
        call(
            "counted",
            json!({}),
            elicitation(),
            json!({"inputResponses": {"confirm": accept(json!({"ok": true}))}, "requestState": state}),
        ),
    )
    .await
    .assert_json(200, ok(2, text("ok=true before=2 after=1")));
    assert_eq!(
        (COUNTED_BEFORE.load(SeqCst), COUNTED_AFTER.load(SeqCst)),
        (2, 1)
    );
}

// ---------------------------------------------------------------------------------------------
// Several questions, several rounds

fn capital_request() -> Value {
    json!({"method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": "What is the capital of France?"}}],
        "maxTokens": 20,
    }})
}

fn paris() -> Value {
    json!({"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "test-model", "stopReason": "endTurn"})
}

#[tokio::test]
async fn questions_asked_together_come_in_one_round() {
    let w = wire();
    let caps = json!({"elicitation": {}, "sampling": {}});
    let first = w
        .rpc(
            1,
            "tools/call",
            call("two_at_once", json!({}), caps.clone(), json!({})),
        )
        .await;
    let state = state_of(&first);
    first.assert_json(
        200,
        ok(
            1,
            input_required(
                json!({"name": name_request(), "capital": capital_request()}),
                &state,
            ),
        ),
    );
    // Half the answers: only the unanswered question is asked again.
    let half = w
        .rpc(
            2,
            "tools/call",
            call(
                "two_at_once",
                json!({}),
                caps.clone(),
                json!({"inputResponses": {"name": accept(json!({"name": "Ada"}))}, "requestState": state}),
            ),
        )
        .await;
    let state2 = state_of(&half);
    assert_ne!(state2, state);
    half.assert_json(
        200,
        ok(
            2,
            input_required(json!({"capital": capital_request()}), &state2),
        ),
    );
    // The second state remembers the name.
    w.rpc(
        3,
        "tools/call",
        call(
            "two_at_once",
            json!({}),
            caps.clone(),
            json!({"inputResponses": {"capital": paris()}, "requestState": state2}),
        ),
    )
    .await
    .assert_json(200, ok(3, text("Ada says Paris")));
    // Both answers at once complete from the first state.
    w.rpc(
        4,
        "tools/call",
        call(
            "two_at_once",
            json!({}),
            caps,
            json!({"inputResponses": {"name": accept(json!({"name": "Grace"})), "capital": paris()}, "requestState": state}),
        ),
    )
    .await
    .assert_json(200, ok(4, text("Grace says Paris")));
}

fn survey_caps() -> Value {
    json!({"elicitation": {}, "roots": {}})
}

fn survey_call(topic: &str, more: Value) -> Value {
    call("survey", json!({"topic": topic}), survey_caps(), more)
}

#[tokio::test]
async fn a_multi_round_flow_carries_earlier_answers_in_the_state() {
    let w = wire();
    let r1 = w.rpc(1, "tools/call", survey_call("cats", json!({}))).await;
    let s1 = state_of(&r1);
    r1.assert_json(
        200,
        ok(
            1,
            input_required(
                json!({"step1": form("Step 1: What is your name?", "name", "string")}),
                &s1,
            ),
        ),
    );
    let r2 = w
        .rpc(
            2,
            "tools/call",
            survey_call(
                "cats",
                json!({"inputResponses": {"step1": accept(json!({"name": "Ada"}))}, "requestState": s1}),
            ),
        )
        .await;
    let s2 = state_of(&r2);
    r2.assert_json(
        200,
        ok(
            2,
            input_required(
                json!({"step2": form("Step 2: What is your favourite colour?", "color", "string")}),
                &s2,
            ),
        ),
    );
    // Round 3 answers only step 2: step 1's answer comes from the state.
    let r3 = w
        .rpc(
            3,
            "tools/call",
            survey_call(
                "cats",
                json!({"inputResponses": {"step2": accept(json!({"color": "blue"}))}, "requestState": s2}),
            ),
        )
        .await;
    let s3 = state_of(&r3);
    r3.assert_json(
        200,
        ok(
            3,
            input_required(
                json!({"roots": {"method": "roots/list", "params": {}}}),
                &s3,
            ),
        ),
    );
    // Every round's state is different.
    assert!(s1 != s2 && s2 != s3 && s1 != s3);
    w.rpc(
        4,
        "tools/call",
        survey_call(
            "cats",
            json!({"inputResponses": {"roots": {"roots": [{"uri": "file:///home/ada", "name": "home"}]}}, "requestState": s3}),
        ),
    )
    .await
    .assert_json(200, ok(4, text("cats: Ada likes blue, 1 root(s)")));
    // An answer to a question this round did not ask is ignored: step 1's answer, signed into
    // the state, stands.
    w.rpc(
        5,
        "tools/call",
        survey_call(
            "cats",
            json!({"inputResponses": {
                "step1": accept(json!({"name": "Grace"})),
                "roots": {"roots": []},
            }, "requestState": s3}),
        ),
    )
    .await
    .assert_json(200, ok(5, text("cats: Ada likes blue, 0 root(s)")));
}

// ---------------------------------------------------------------------------------------------
// The state is signed and bound to its request

/// The three dot-separated parts of a state: version, Base64url payload, Base64url MAC.
fn parts(state: &str) -> (String, Value, String) {
    let mut it = state.split('.');
    let (v, p, m) = (it.next().unwrap(), it.next().unwrap(), it.next().unwrap());
    assert_eq!(it.next(), None);
    let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(p)
        .unwrap();
    (
        v.to_owned(),
        serde_json::from_slice(&payload).unwrap(),
        m.to_owned(),
    )
}

#[tokio::test]
async fn a_tampered_state_is_invalid_params() {
    let w = wire();
    let first = w.rpc(1, "tools/call", survey_call("cats", json!({}))).await;
    let s1 = state_of(&first);
    let second = w
        .rpc(
            2,
            "tools/call",
            survey_call(
                "cats",
                json!({"inputResponses": {"step1": accept(json!({"name": "Ada"}))}, "requestState": s1}),
            ),
        )
        .await;
    let s2 = state_of(&second);
    // The answers the state carries, rewritten, under the original MAC.
    let (version, payload, mac) = parts(&s2);
    assert_eq!(
        payload["a"]["step1"],
        accept(json!({"name": "Ada"})),
        "{payload}"
    );
    let forged_payload = payload.to_string().replace("Ada", "Mallory");
    let forged = format!(
        "{version}.{}.{mac}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(forged_payload)
    );
    let mut flipped_mac = s2.clone();
    let last = flipped_mac.pop().unwrap();
    flipped_mac.push(if last == 'A' { 'B' } else { 'A' });
    for (i, state) in [
        json!(format!("{s2}-TAMPERED")),
        json!(forged),
        json!(flipped_mac),
        json!(s2.replacen("r1.", "s1.", 1)),
        json!(""),
        json!("not a state"),
        json!(42),
        json!(null),
        json!({"a": 1}),
    ]
    .into_iter()
    .enumerate()
    {
        let id = 10 + i64::try_from(i).unwrap();
        w.rpc(
            id,
            "tools/call",
            survey_call(
                "cats",
                json!({"inputResponses": {"step2": accept(json!({"color": "red"}))}, "requestState": state}),
            ),
        )
        .await
        .assert_json(200, err(id, -32602, BAD_STATE, None));
    }
}

#[tokio::test]
async fn a_state_of_another_request_is_invalid_params() {
    let w = wire();
    let survey_state = state_of(&w.rpc(1, "tools/call", survey_call("cats", json!({}))).await);
    let greet_state = state_of(
        &w.rpc(
            2,
            "tools/call",
            call("greet", json!({}), elicitation(), json!({})),
        )
        .await,
    );
    let step1 = json!({"step1": accept(json!({"name": "Ada"}))});
    // Another tool's state.
    w.rpc(
        3,
        "tools/call",
        survey_call(
            "cats",
            json!({"inputResponses": step1, "requestState": greet_state}),
        ),
    )
    .await
    .assert_json(200, err(3, -32602, BAD_STATE, None));
    // The same tool with other arguments (the state binds a digest of them).
    w.rpc(
        4,
        "tools/call",
        survey_call(
            "dogs",
            json!({"inputResponses": step1, "requestState": survey_state}),
        ),
    )
    .await
    .assert_json(200, err(4, -32602, BAD_STATE, None));
    // Argument order and whitespace are not "other arguments".
    let same_server = w
        .send(
            sake_tests::Req::modern(6, "tools/call", json!({}))
                .header("mcp-name", "survey")
                .body(format!(
                    r#"{{ "jsonrpc":"2.0","id":6,"method":"tools/call","params":{{"name":"survey","arguments":{{ "topic" : "cats" }},"inputResponses":{},"requestState":{},"_meta":{}}} }}"#,
                    step1,
                    json!(survey_state),
                    sake_tests::with_meta(with_caps(json!({}), survey_caps()))["_meta"],
                )),
        )
        .await;
    same_server.assert_json(
        200,
        ok(
            6,
            input_required(
                json!({"step2": form("Step 2: What is your favourite colour?", "color", "string")}),
                &state_of(&same_server),
            ),
        ),
    );
    // The same name under another method: the prompt `greet` refuses the tool's state.
    w.rpc(
        7,
        "prompts/get",
        with_caps(
            json!({"name": "greet", "inputResponses": {}, "requestState": greet_state}),
            elicitation(),
        ),
    )
    .await
    .assert_json(200, err(7, -32602, BAD_STATE, None));
}

/// A function without a `Context` gets no round of its own, but a request that answers one
/// is checked as for any other: another tool's state, a forged one and malformed answers are
/// refused with the same errors.
#[tokio::test]
async fn a_function_without_context_still_checks_what_a_request_answers() {
    let w = wire();
    w.rpc(
        1,
        "tools/call",
        call("plain", json!({}), json!({}), json!({})),
    )
    .await
    .assert_json(200, ok(1, text("plain")));
    let greet_state = state_of(
        &w.rpc(
            2,
            "tools/call",
            call("greet", json!({}), elicitation(), json!({})),
        )
        .await,
    );
    for (id, more, error) in [
        (3, json!({"requestState": greet_state}), BAD_STATE),
        (4, json!({"requestState": "not a state"}), BAD_STATE),
        (5, json!({"requestState": 42}), BAD_STATE),
        (6, json!({"inputResponses": "yes"}), BAD_RESPONSES),
        (7, json!({"inputResponses": null}), BAD_RESPONSES),
    ] {
        w.rpc(
            id,
            "tools/call",
            call("plain", json!({}), elicitation(), more),
        )
        .await
        .assert_json(200, err(id, -32602, error, None));
    }
    // Answers with the state of its own earlier (nonexistent) round: none was ever made, so
    // the state of another tool never fits.
    w.rpc(
        8,
        "tools/call",
        call(
            "plain",
            json!({}),
            elicitation(),
            json!({"inputResponses": {"user_name": accept(json!({"name": "Ada"}))}, "requestState": greet_state}),
        ),
    )
    .await
    .assert_json(200, err(8, -32602, BAD_STATE, None));
}

#[tokio::test]
async fn an_expired_state_is_invalid_params() {
    let w = Wire::new(server().request_state_lifetime(Duration::from_millis(400)));
    let state = state_of(
        &w.rpc(
            1,
            "tools/call",
            call("greet", json!({}), elicitation(), json!({})),
        )
        .await,
    );
    let retry = || {
        call(
            "greet",
            json!({}),
            elicitation(),
            json!({"inputResponses": {}, "requestState": state}),
        )
    };
    // Fresh: accepted (the function asks again, as nothing was answered).
    let again = w.rpc(2, "tools/call", retry()).await;
    assert_eq!(again.json(200)["result"]["resultType"], "input_required");
    tokio::time::sleep(Duration::from_millis(600)).await;
    w.rpc(3, "tools/call", retry())
        .await
        .assert_json(200, err(3, -32602, BAD_STATE, None));
}

// ---------------------------------------------------------------------------------------------
// Answers that are missing, extra or malformed

#[tokio::test]
async fn missing_answers_get_a_new_input_required() {
    let w = wire();
    let state = state_of(
        &w.rpc(
            1,
            "tools/call",
            call("greet", json!({}), elicitation(), json!({})),
        )
        .await,
    );
    // The conformance probe: an answer under the wrong key and no state.
    let reply = w
        .rpc(
            2,
            "tools/call",
            call(
                "greet",
                json!({}),
                elicitation(),
                json!({"inputResponses": {"wrong_key": accept(json!({"data": "wrong"}))}}),
            ),
        )
        .await;
    let s2 = state_of(&reply);
    reply.assert_json(
        200,
        ok(2, input_required(json!({"user_name": name_request()}), &s2)),
    );
    // With the state and nothing answered.
    let reply = w
        .rpc(
            3,
            "tools/call",
            call(
                "greet",
                json!({}),
                elicitation(),
                json!({"inputResponses": {}, "requestState": state}),
            ),
        )
        .await;
    let s3 = state_of(&reply);
    reply.assert_json(
        200,
        ok(3, input_required(json!({"user_name": name_request()}), &s3)),
    );
    // Only the state, no inputResponses at all.
    let reply = w
        .rpc(
            4,
            "tools/call",
            call(
                "greet",
                json!({}),
                elicitation(),
                json!({"requestState": state}),
            ),
        )
        .await;
    let s4 = state_of(&reply);
    reply.assert_json(
        200,
        ok(4, input_required(json!({"user_name": name_request()}), &s4)),
    );
}

#[tokio::test]
async fn extra_answers_are_ignored() {
    wire()
        .rpc(
            1,
            "tools/call",
            call(
                "greet",
                json!({}),
                elicitation(),
                json!({"inputResponses": {
                    "user_name": accept(json!({"name": "Alice"})),
                    "unknown_extra_key": accept(json!({"foo": "bar"})),
                    "another_unexpected": 12345,
                }}),
            ),
        )
        .await
        .assert_json(200, ok(1, text("Hello, Alice!")));
}

#[tokio::test]
async fn malformed_input_responses_are_invalid_params() {
    let w = wire();
    for (i, responses) in [
        json!(null),
        json!(12345),
        json!("yes"),
        json!([accept(json!({}))]),
        json!(true),
    ]
    .into_iter()
    .enumerate()
    {
        let id = i64::try_from(i).unwrap();
        w.rpc(
            id,
            "tools/call",
            call(
                "greet",
                json!({}),
                elicitation(),
                json!({"inputResponses": responses}),
            ),
        )
        .await
        .assert_json(200, err(id, -32602, BAD_RESPONSES, None));
    }
    // An answer that is not an ElicitResult.
    for (id, answer, why) in [
        (
            10,
            json!(12345),
            "invalid type: integer `12345`, expected struct ElicitResult",
        ),
        (
            11,
            json!(null),
            "invalid type: null, expected struct ElicitResult",
        ),
        (
            12,
            json!({"action": "maybe"}),
            "unknown variant `maybe`, expected one of `accept`, `decline`, `cancel`",
        ),
        (
            13,
            json!({"content": {"name": "Ada"}}),
            "missing field `action`",
        ),
    ] {
        w.rpc(
            id,
            "tools/call",
            call(
                "greet",
                json!({}),
                elicitation(),
                json!({"inputResponses": {"user_name": answer}}),
            ),
        )
        .await
        .assert_json(
            200,
            err(
                id,
                -32602,
                &format!(
                    "Invalid params: inputResponses[\"user_name\"] is not a valid elicitation/create result: {why}"
                ),
                None,
            ),
        );
    }
    // A well-formed ElicitResult whose content does not fit the form asked.
    w.rpc(
        20,
        "tools/call",
        call(
            "greet",
            json!({}),
            elicitation(),
            json!({"inputResponses": {"user_name": accept(json!({"name": 5}))}}),
        ),
    )
    .await
    .assert_json(
        200,
        err(
            20,
            -32602,
            "Invalid params: inputResponses[\"user_name\"] does not fit the question: the submitted form: invalid type: integer `5`, expected a string",
            None,
        ),
    );
    // A sampling answer that is not a CreateMessageResult.
    w.rpc(
        21,
        "tools/call",
        call(
            "two_at_once",
            json!({}),
            json!({"elicitation": {}, "sampling": {}}),
            json!({"inputResponses": {"name": accept(json!({"name": "Ada"})), "capital": {"text": "Paris"}}}),
        ),
    )
    .await
    .assert_json(
        200,
        err(
            21,
            -32602,
            "Invalid params: inputResponses[\"capital\"] is not a valid sampling/createMessage result: missing field `role`",
            None,
        ),
    );
}

// ---------------------------------------------------------------------------------------------
// Which requests may ask

#[tokio::test]
async fn a_prompt_and_a_resource_may_ask_too() {
    let w = wire();
    let first = w
        .rpc(
            1,
            "prompts/get",
            with_caps(json!({"name": "greet"}), elicitation()),
        )
        .await;
    let state = state_of(&first);
    first.assert_json(
        200,
        ok(
            1,
            input_required(json!({"user_name": name_request()}), &state),
        ),
    );
    w.rpc(
        2,
        "prompts/get",
        with_caps(
            json!({"name": "greet", "inputResponses": {"user_name": accept(json!({"name": "Ada"}))}, "requestState": state}),
            elicitation(),
        ),
    )
    .await
    .assert_json(
        200,
        ok(
            2,
            complete(
                SERVER,
                json!({"messages": [{"role": "user", "content": {"type": "text", "text": "Write a greeting for Ada."}}]}),
            ),
        ),
    );

    let first = w
        .rpc(
            3,
            "resources/read",
            with_caps(json!({"uri": "secret://note"}), elicitation()),
        )
        .await;
    let state = state_of(&first);
    first.assert_json(
        200,
        ok(
            3,
            input_required(
                json!({"confirm": form("Reveal the note?", "ok", "boolean")}),
                &state,
            ),
        ),
    );
    w.rpc(
        4,
        "resources/read",
        with_caps(
            json!({"uri": "secret://note", "inputResponses": {"confirm": accept(json!({"ok": true}))}, "requestState": state}),
            elicitation(),
        ),
    )
    .await
    .assert_json(
        200,
        ok(
            4,
            complete(
                SERVER,
                json!({
                    "contents": [{"uri": "secret://note", "mimeType": "text/plain", "text": "The note."}],
                    "ttlMs": 60000,
                    "cacheScope": "public",
                }),
            ),
        ),
    );
}

#[tokio::test]
async fn no_other_method_answers_input_required() {
    let w = wire();
    for (id, method, params) in [
        (1, "server/discover", json!({})),
        (2, "tools/list", json!({})),
        (3, "prompts/list", json!({})),
        (4, "resources/list", json!({})),
        (5, "resources/templates/list", json!({})),
    ] {
        let reply = w
            .rpc(
                id,
                method,
                with_caps(
                    merged(params, json!({"inputResponses": {}, "requestState": "x"})),
                    json!({"elicitation": {}, "sampling": {}, "roots": {}}),
                ),
            )
            .await;
        assert_eq!(
            reply.json(200)["result"]["resultType"],
            "complete",
            "{method}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Client capabilities

fn missing(id: i64, caps: Value, names: &str) -> Value {
    err(
        id,
        -32021,
        &format!("Missing required client capability: {names}"),
        Some(json!({"requiredCapabilities": caps})),
    )
}

#[tokio::test]
async fn an_undeclared_capability_is_never_asked_for() {
    let w = wire();
    for (id, caps) in [
        (1, json!({})),
        (2, json!({"sampling": {}, "roots": {}})),
        (3, json!({"elicitation": {"url": {}}})),
    ] {
        // A function that copes with the refusal completes without asking.
        w.rpc(
            id,
            "tools/call",
            call("greet_or_guest", json!({}), caps.clone(), json!({})),
        )
        .await
        .assert_json(200, ok(id, text("Hello, guest!")));
        // One that fails after the refusal gets -32021 naming what it needed, HTTP 400.
        w.rpc(
            10 + id,
            "tools/call",
            call("greet", json!({}), caps.clone(), json!({})),
        )
        .await
        .assert_json(
            400,
            missing(10 + id, json!({"elicitation": {}}), "elicitation"),
        );
        // A prompt and a resource too.
        w.rpc(
            20 + id,
            "prompts/get",
            with_caps(json!({"name": "greet"}), caps.clone()),
        )
        .await
        .assert_json(
            400,
            missing(20 + id, json!({"elicitation": {}}), "elicitation"),
        );
        w.rpc(
            30 + id,
            "resources/read",
            with_caps(json!({"uri": "secret://note"}), caps),
        )
        .await
        .assert_json(
            400,
            missing(30 + id, json!({"elicitation": {}}), "elicitation"),
        );
    }
    // `{"elicitation": {"form": {}}}` allows forms.
    let reply = w
        .rpc(
            40,
            "tools/call",
            call(
                "greet",
                json!({}),
                json!({"elicitation": {"form": {}}}),
                json!({}),
            ),
        )
        .await;
    state_of(&reply);
}

#[tokio::test]
async fn requires_refuses_before_the_function_runs() {
    let w = wire();
    for (id, caps) in [(1, json!({})), (2, json!({"elicitation": {}, "roots": {}}))] {
        w.rpc(
            id,
            "tools/call",
            call("guarded", json!({}), caps, json!({})),
        )
        .await
        .assert_json(400, missing(id, json!({"sampling": {}}), "sampling"));
    }
    assert_eq!(GUARDED_RUNS.load(SeqCst), 0, "the body ran");
    w.rpc(
        3,
        "tools/call",
        call("guarded", json!({}), json!({"sampling": {}}), json!({})),
    )
    .await
    .assert_json(200, ok(3, text("ran 1 time(s)")));
    assert_eq!(GUARDED_RUNS.load(SeqCst), 1);

    // Everything missing is named at once.
    w.rpc(
        4,
        "tools/call",
        call("guarded_twice", json!({}), json!({}), json!({})),
    )
    .await
    .assert_json(
        400,
        missing(4, json!({"sampling": {}, "roots": {}}), "sampling, roots"),
    );
    w.rpc(
        5,
        "tools/call",
        call("guarded_twice", json!({}), json!({"roots": {}}), json!({})),
    )
    .await
    .assert_json(400, missing(5, json!({"sampling": {}}), "sampling"));
    assert_eq!(GUARDED_TWICE_RUNS.load(SeqCst), 0, "the body ran");

    // URL mode is its own capability.
    w.rpc(
        6,
        "tools/call",
        call(
            "guarded_url",
            json!({}),
            json!({"elicitation": {}}),
            json!({}),
        ),
    )
    .await
    .assert_json(
        400,
        missing(6, json!({"elicitation": {"url": {}}}), "elicitation"),
    );
    w.rpc(
        7,
        "tools/call",
        call(
            "guarded_url",
            json!({}),
            json!({"elicitation": {"url": {}}}),
            json!({}),
        ),
    )
    .await
    .assert_json(200, ok(7, text("ran")));
}

#[tokio::test]
async fn url_elicitation_needs_elicitation_url() {
    let w = wire();
    for (id, caps) in [
        (1, json!({"elicitation": {}})),
        (2, json!({"elicitation": {"form": {}}})),
    ] {
        w.rpc(
            id,
            "tools/call",
            call("connect_account", json!({}), caps, json!({})),
        )
        .await
        .assert_json(
            400,
            missing(id, json!({"elicitation": {"url": {}}}), "elicitation"),
        );
    }
    let caps = json!({"elicitation": {"url": {}}});
    let first = w
        .rpc(
            3,
            "tools/call",
            call("connect_account", json!({}), caps.clone(), json!({})),
        )
        .await;
    let state = state_of(&first);
    first.assert_json(
        200,
        ok(
            3,
            input_required(
                json!({"authorize": {"method": "elicitation/create", "params": {
                    "mode": "url",
                    "message": "Authorize access to your account",
                    "url": "https://example.com/authorize?session=42",
                }}}),
                &state,
            ),
        ),
    );
    w.rpc(
        4,
        "tools/call",
        call(
            "connect_account",
            json!({}),
            caps,
            json!({"inputResponses": {"authorize": {"action": "accept"}}, "requestState": state}),
        ),
    )
    .await
    .assert_json(200, ok(4, text("action=accept")));
}

#[tokio::test]
async fn sampling_with_tools_needs_sampling_tools() {
    let w = wire();
    for (id, caps) in [
        (1, json!({"sampling": {}})),
        (2, json!({"sampling": {"context": {}}})),
    ] {
        w.rpc(
            id,
            "tools/call",
            call("weather_agent", json!({}), caps, json!({})),
        )
        .await
        .assert_json(
            400,
            missing(id, json!({"sampling": {"tools": {}}}), "sampling"),
        );
    }
    let caps = json!({"sampling": {"tools": {}}});
    let first = w
        .rpc(
            3,
            "tools/call",
            call("weather_agent", json!({}), caps.clone(), json!({})),
        )
        .await;
    let state = state_of(&first);
    first.assert_json(
        200,
        ok(
            3,
            input_required(
                json!({"forecast": {"method": "sampling/createMessage", "params": {
                    "messages": [{"role": "user", "content": {"type": "text", "text": "What is the weather in Paris?"}}],
                    "maxTokens": 50,
                    "tools": [{
                        "name": "get_weather",
                        "description": "The weather in a city.",
                        "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
                    }],
                    "toolChoice": {"mode": "auto"},
                }}}),
                &state,
            ),
        ),
    );
    w.rpc(
        4,
        "tools/call",
        call(
            "weather_agent",
            json!({}),
            caps,
            json!({"inputResponses": {"forecast": {"role": "assistant", "content": {"type": "text", "text": "Sunny"}, "model": "m"}}, "requestState": state}),
        ),
    )
    .await
    .assert_json(200, ok(4, text("Sunny")));
}
