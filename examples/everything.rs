//! The conformance fixture: every tool, prompt and resource the official MCP conformance suite
//! calls, written with sake's own macros and `Context` API. It serves all four revisions on
//! one endpoint: `cargo run --example everything` (PORT overrides 3000; `HOST` the address it
//! listens on, 127.0.0.1 by default: `HOST=::` listens on every IPv6 and IPv4 address).

use std::time::Duration;

use sake::prelude::*;
use sake::{BlobResourceContents, CreateMessageRequest, Elicitation, RpcError};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

/// A 1×1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A tiny WAV.
const WAV: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

// ---------------------------------------------------------------------------------------------
// Content

/// Returns a simple text response.
#[tool]
fn test_simple_text() -> &'static str {
    "This is a simple text response for testing."
}

/// Returns an image.
#[tool]
fn test_image_content() -> Content {
    Content::image_base64(PNG, "image/png")
}

/// Returns audio.
#[tool]
fn test_audio_content() -> Content {
    Content::audio_base64(WAV, "audio/wav")
}

/// Returns an embedded resource.
#[tool]
fn test_embedded_resource() -> Content {
    Content::resource(ResourceContents::text(
        "test://embedded-resource",
        Some("text/plain"),
        "This is an embedded resource content.",
    ))
}

/// Returns text, an image and an embedded resource.
#[tool]
fn test_multiple_content_types() -> Vec<Content> {
    vec![
        Content::text("Multiple content types test:"),
        Content::image_base64(PNG, "image/png"),
        Content::resource(ResourceContents::text(
            "test://mixed-content-resource",
            Some("application/json"),
            r#"{"test":"data","value":123}"#,
        )),
    ]
}

/// Always fails, as a tool error (not a protocol error).
#[tool]
fn test_error_handling() -> Result<String, String> {
    Err("This tool intentionally returns an error for testing".into())
}

// ---------------------------------------------------------------------------------------------
// Progress, logging, streams

/// Reports progress three times, 50 ms apart.
#[tool]
async fn test_tool_with_progress(ctx: Context) -> String {
    for (i, p) in [0.0, 50.0, 100.0].into_iter().enumerate() {
        ctx.progress_message(p, Some(100.0), format!("Completed step {} of 3", i + 1))
            .await;
        if p < 100.0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    "Progress reported".into()
}

/// Logs three messages, 50 ms apart (handshake sessions).
#[tool]
async fn test_tool_with_logging(ctx: Context) -> String {
    for (i, msg) in [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ]
    .into_iter()
    .enumerate()
    {
        if i > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        ctx.log(LoggingLevel::Info, msg).await;
    }
    "Tool with logging executed successfully".into()
}

/// Logs one message, which is sent only if the request asked for logs (2026-07-28).
#[tool]
async fn test_logging_tool(ctx: Context) -> String {
    ctx.log(LoggingLevel::Info, "Logging tool invoked").await;
    "Logging evaluated".into()
}

/// Streams a progress notification (if asked for) and never a server request.
#[tool]
async fn test_streaming_elicitation(ctx: Context) -> String {
    ctx.progress(1.0, Some(1.0)).await;
    "Streaming complete".into()
}

/// Ends its response stream early; the result arrives when the client resumes with
/// Last-Event-ID (SSE polling on 2025-11-25 sessions).
#[tool]
async fn test_reconnection(ctx: Context) -> String {
    ctx.close_stream().await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    "Reconnection test completed successfully".into()
}

/// Publishes a tools/list_changed notification.
#[tool]
fn test_trigger_tool_change(ctx: Context) -> &'static str {
    if let Some(n) = ctx.notifier() {
        n.tools_changed();
    }
    "Mutation triggered"
}

/// Publishes a resources/updated notification for `uri` (to the sessions subscribed to it,
/// on every replica sharing the event bus).
#[tool]
fn test_trigger_resource_update(
    /// The resource that changed.
    uri: String,
    ctx: Context,
) -> &'static str {
    if let Some(n) = ctx.notifier() {
        n.notify_resource_updated(uri);
    }
    "Update published"
}

/// Publishes a prompts/list_changed notification.
#[tool]
fn test_trigger_prompt_change(ctx: Context) -> &'static str {
    if let Some(n) = ctx.notifier() {
        n.prompts_changed();
    }
    "Mutation triggered"
}

// ---------------------------------------------------------------------------------------------
// Asking the client (server-to-client requests on handshake sessions; MRTR on 2026-07-28)

/// Asks the client's model to answer `prompt`.
#[tool]
async fn test_sampling(
    /// What to ask.
    prompt: String,
    ctx: Context,
) -> Result<String, sake::InputError> {
    let answer = ctx
        .sample("sample_request", CreateMessageRequest::user(prompt, 100))
        .await?;
    Ok(format!(
        "LLM response: {}",
        answer.text().unwrap_or_default()
    ))
}

/// Asks the user to respond to `message`.
#[tool]
async fn test_elicitation(
    /// What to ask.
    message: String,
    ctx: Context,
) -> Result<String, sake::InputError> {
    let schema = json!({
        "type": "object",
        "properties": { "response": { "type": "string", "description": "User's response" } },
        "required": ["response"]
    });
    let r = ctx.elicit_with_schema("response", &message, schema).await?;
    Ok(format!(
        "User response: action={}, content={}",
        r.action,
        serde_json::to_string(&r.content).unwrap_or_default()
    ))
}

/// Asks for a form whose fields have defaults (SEP-1034).
#[tool]
async fn test_elicitation_sep1034_defaults(ctx: Context) -> Result<String, sake::InputError> {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": { "type": "string", "description": "User name", "default": "John Doe" },
            "age": { "type": "integer", "description": "User age", "default": 30 },
            "score": { "type": "number", "description": "User score", "default": 95.5 },
            "status": { "type": "string", "description": "User status", "enum": ["active", "inactive", "pending"], "default": "active" },
            "verified": { "type": "boolean", "description": "Verification status", "default": true }
        },
        "required": []
    });
    let r = ctx
        .elicit_with_schema(
            "defaults",
            "Please review and update the form fields with defaults",
            schema,
        )
        .await?;
    Ok(format!(
        "Elicitation completed: action={}, content={}",
        r.action,
        serde_json::to_string(&r.content).unwrap_or_default()
    ))
}

/// Asks for a form with every enum shape (SEP-1330).
#[tool]
async fn test_elicitation_sep1330_enums(ctx: Context) -> Result<String, sake::InputError> {
    let titled = |prefix: &str| -> Value {
        json!([
            { "const": "value1", "title": format!("First {prefix}") },
            { "const": "value2", "title": format!("Second {prefix}") },
            { "const": "value3", "title": format!("Third {prefix}") }
        ])
    };
    let schema = json!({
        "type": "object",
        "properties": {
            "untitledSingle": { "type": "string", "description": "Select one option", "enum": ["option1", "option2", "option3"] },
            "titledSingle": { "type": "string", "description": "Select one option with titles", "oneOf": titled("Option") },
            "legacyEnum": { "type": "string", "description": "Select one option (legacy)", "enum": ["opt1", "opt2", "opt3"], "enumNames": ["Option One", "Option Two", "Option Three"] },
            "untitledMulti": { "type": "array", "description": "Select multiple options", "minItems": 1, "maxItems": 3, "items": { "type": "string", "enum": ["option1", "option2", "option3"] } },
            "titledMulti": { "type": "array", "description": "Select multiple options with titles", "minItems": 1, "maxItems": 3, "items": { "anyOf": titled("Choice") } }
        },
        "required": []
    });
    let r = ctx
        .elicit_with_schema(
            "enums",
            "Please select options from the enum fields",
            schema,
        )
        .await?;
    Ok(format!(
        "Elicitation completed: action={}, content={}",
        r.action,
        serde_json::to_string(&r.content).unwrap_or_default()
    ))
}

/// The name form.
#[derive(Deserialize, JsonSchema)]
struct NameForm {
    name: String,
}

/// A confirmation form.
#[derive(Deserialize, JsonSchema)]
struct Confirm {
    ok: bool,
}

/// A colour form.
#[derive(Deserialize, JsonSchema)]
struct ColorForm {
    color: String,
}

/// A context form.
#[derive(Deserialize, JsonSchema)]
struct ContextForm {
    context: String,
}

type Asked<T> = Result<T, sake::InputError>;

fn name_of(e: Elicitation<NameForm>) -> String {
    e.accepted()
        .map_or_else(|| "stranger".to_owned(), |f| f.name)
}

/// Asks for the user's name, then greets them.
#[tool]
async fn test_input_required_result_elicitation(ctx: Context) -> Asked<String> {
    let name = ctx
        .elicit::<NameForm>("user_name", "What is your name?")
        .await?;
    Ok(format!("Hello, {}!", name_of(name)))
}

/// Asks the client's model a question.
#[tool]
async fn test_input_required_result_sampling(ctx: Context) -> Asked<String> {
    let r = ctx
        .sample(
            "capital_question",
            CreateMessageRequest::user("What is the capital of France?", 100),
        )
        .await?;
    Ok(format!("The model said: {}", r.text().unwrap_or_default()))
}

/// Asks the client for its roots.
#[tool]
async fn test_input_required_result_list_roots(ctx: Context) -> Asked<String> {
    let roots = ctx.roots("client_roots").await?;
    let uris: Vec<&str> = roots.iter().map(|r| r.uri.as_str()).collect();
    Ok(format!(
        "Found {} root(s): {}",
        roots.len(),
        uris.join(", ")
    ))
}

/// Asks for a confirmation; the state carried between rounds is checked.
#[tool]
async fn test_input_required_result_request_state(ctx: Context) -> Asked<String> {
    let ok = ctx.elicit::<Confirm>("confirm", "Please confirm").await?;
    Ok(format!(
        "state-ok: confirmed={}",
        ok.accepted().is_some_and(|c| c.ok)
    ))
}

/// Asks for a name, a greeting and the roots in one round.
#[tool]
async fn test_input_required_result_multiple_inputs(ctx: Context) -> Asked<String> {
    let (name, greeting, roots) = tokio::join!(
        ctx.elicit::<NameForm>("user_name", "What is your name?"),
        ctx.sample(
            "greeting",
            CreateMessageRequest::user("Generate a greeting", 50)
        ),
        ctx.roots("client_roots"),
    );
    Ok(format!(
        "{} Name: {}; roots: {}",
        greeting?.text().unwrap_or_default(),
        name_of(name?),
        roots?.len()
    ))
}

/// Asks two questions, one per round.
#[tool]
async fn test_input_required_result_multi_round(ctx: Context) -> Asked<String> {
    let name = name_of(
        ctx.elicit::<NameForm>("step1", "Step 1: What is your name?")
            .await?,
    );
    let color = ctx
        .elicit::<ColorForm>("step2", "Step 2: What is your favorite color?")
        .await?
        .accepted()
        .map_or_else(|| "no colour".to_owned(), |c| c.color);
    Ok(format!("Multi-round complete for {name} who likes {color}"))
}

/// Asks for a confirmation; a tampered state is refused.
#[tool]
async fn test_input_required_result_tampered_state(ctx: Context) -> Asked<String> {
    let ok = ctx.elicit::<Confirm>("confirm", "Please confirm").await?;
    Ok(format!(
        "Confirmed: {}",
        ok.accepted().is_some_and(|c| c.ok)
    ))
}

/// Asks only what the client's capabilities allow.
#[tool]
async fn test_input_required_result_capabilities(ctx: Context) -> Asked<String> {
    let caps = ctx.client_capabilities().clone();
    let mut parts = Vec::new();
    if caps.elicitation.is_some() {
        parts.push(format!(
            "name={}",
            name_of(
                ctx.elicit::<NameForm>("user_name", "What is your name?")
                    .await?
            )
        ));
    }
    if caps.sampling.is_some() {
        let r = ctx
            .sample(
                "capital_question",
                CreateMessageRequest::user("What is the capital of France?", 100),
            )
            .await?;
        parts.push(format!("sample={}", r.text().unwrap_or_default()));
    }
    if caps.roots.is_some() {
        parts.push(format!("roots={}", ctx.roots("client_roots").await?.len()));
    }
    if parts.is_empty() {
        return Ok("No supported capabilities declared".into());
    }
    Ok(parts.join("; "))
}

/// Needs the client's sampling capability, and says so before it runs.
#[tool(requires(sampling))]
fn test_missing_capability() -> &'static str {
    "Success"
}

/// Echoes a value that is also sent as the `Mcp-Param-Value` header.
#[tool]
fn test_custom_header(
    /// Any string.
    #[arg(header = "Value")]
    value: String,
) -> String {
    value
}

/// The JSON Schema 2020-12 features the suite looks for, served verbatim.
fn contact_schema() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": { "street": { "type": "string" }, "city": { "type": "string" } }
            }
        },
        "properties": {
            "name": { "type": "string" },
            "address": { "$ref": "#/$defs/address" },
            "contactMethod": { "type": "string", "enum": ["phone", "email"] },
            "phone": { "type": "string" },
            "email": { "type": "string" }
        },
        "allOf": [{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }],
        "if": { "properties": { "contactMethod": { "const": "phone" } }, "required": ["contactMethod"] },
        "then": { "required": ["phone"] },
        "else": { "required": ["email"] },
        "additionalProperties": false
    })
}

/// Takes a contact whose schema uses $defs, $anchor, allOf/anyOf and if/then/else.
#[tool(input_schema = contact_schema)]
fn json_schema_2020_12_tool(name: Option<String>) -> String {
    format!("Contact {} received", name.unwrap_or_default())
}

// ---------------------------------------------------------------------------------------------
// Tasks (the tasks extension, io.modelcontextprotocol/tasks): the tools of the suite's `tasks-*`
// scenarios. Each is an ordinary function; `task = ...` says whether it may run as a task.

/// Greets someone by name. Never a task.
#[tool]
fn greet(
    /// Who to greet.
    name: String,
) -> String {
    format!("Hello, {name}!")
}

/// Works for `seconds` (fractions allowed, at most 300), reporting its progress each second.
/// Runs as a task when the client allows it.
#[tool(task = "optional")]
async fn slow_compute(
    /// How long to work, in seconds.
    seconds: Option<f64>,
    /// A label for the result.
    label: Option<String>,
    ctx: Context,
) -> Result<String, String> {
    let seconds = seconds.unwrap_or(0.0);
    if !(0.0..=300.0).contains(&seconds) {
        return Err(format!("seconds must be between 0 and 300, not {seconds}"));
    }
    let label = label.unwrap_or_default();
    let mut done = 0.0;
    while done < seconds {
        let step = (seconds - done).min(1.0);
        tokio::time::sleep(Duration::from_secs_f64(step)).await;
        done += step;
        ctx.progress_message(
            done,
            Some(seconds),
            format!("{label}: {done} of {seconds} s"),
        )
        .await;
    }
    Ok(format!("slow_compute({label}) done after {seconds}s"))
}

/// Fails after a second with a tool error (`isError`): as a task, it completes.
#[tool(task = "required")]
async fn failing_job() -> Result<String, String> {
    tokio::time::sleep(Duration::from_secs(1)).await;
    Err("failing_job: the job failed (a tool error)".into())
}

/// Fails after 200 ms with a protocol error: as a task, it fails.
#[tool(task = "optional")]
async fn protocol_error_job(ctx: Context) -> String {
    tokio::time::sleep(Duration::from_millis(200)).await;
    ctx.fail_with(RpcError::internal(
        "protocol_error_job: intentional protocol-level failure",
    ));
    String::new()
}

/// A deletion's confirmation.
#[derive(Deserialize, JsonSchema)]
struct DeleteForm {
    confirm: bool,
}

/// Looks a file up, then asks the user to confirm its deletion. The lookup takes a moment:
/// by then the call runs as a task (when the client allows one), and the question is the
/// task's (`input_required`). A client that cannot be asked gets nothing deleted.
///
/// (Optional rather than required: the suite's header checks call the first tool listed,
/// this one, without the extension.)
#[tool(task = "optional")]
async fn confirm_delete(
    /// The file to delete.
    filename: Option<String>,
    ctx: Context,
) -> Asked<String> {
    let filename = filename.unwrap_or_else(|| "the file".to_owned());
    tokio::time::sleep(Duration::from_millis(20)).await;
    let answer = match ctx
        .elicit::<DeleteForm>("confirm", &format!("Delete {filename}?"))
        .await
    {
        Err(sake::InputError::MissingCapability { .. }) => {
            return Ok(format!(
                "confirm_delete({filename}): not deleted, the client cannot confirm"
            ));
        }
        other => other?,
    };
    let confirmed = answer.accepted().is_some_and(|f| f.confirm);
    Ok(format!(
        "confirm_delete({filename}): confirmed = {confirmed}"
    ))
}

/// One of two inputs.
#[derive(Deserialize, JsonSchema)]
struct InputForm {
    name: String,
    confirm: bool,
}

/// After a moment's work, asks two questions at once from its task.
#[tool(task = "required")]
async fn multi_input(ctx: Context) -> Asked<String> {
    tokio::time::sleep(Duration::from_millis(20)).await;
    let (a, b) = tokio::join!(
        ctx.elicit::<InputForm>("input-a", "First input?"),
        ctx.elicit::<InputForm>("input-b", "Second input?"),
    );
    let show = |e: Elicitation<InputForm>| {
        e.accepted().map_or_else(
            || "none".to_owned(),
            |f| format!("{} ({})", f.name, f.confirm),
        )
    };
    Ok(format!("multi_input: a = {}, b = {}", show(a?), show(b?)))
}

/// Asks the user's name in the call itself (an input round), then greets them from a task.
#[tool(task = "required")]
async fn test_tool_with_task(ctx: Context) -> Asked<String> {
    let name = name_of(
        ctx.elicit::<NameForm>("user_name", "What is your name?")
            .await?,
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    Ok(format!("Hello, {name}! (async)"))
}

// ---------------------------------------------------------------------------------------------
// Prompts

/// A simple prompt without arguments.
#[prompt]
fn test_simple_prompt() -> &'static str {
    "This is a simple prompt for testing."
}

async fn complete_args(req: CompletionRequest) -> Vec<String> {
    ["test", "testing", "tested", "value"]
        .into_iter()
        .filter(|v| v.starts_with(&req.value))
        .map(str::to_owned)
        .collect()
}

/// A prompt with two arguments.
#[prompt(complete = complete_args)]
fn test_prompt_with_arguments(
    /// First test argument.
    arg1: String,
    /// Second test argument.
    arg2: String,
) -> String {
    format!("Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")
}

/// A prompt that embeds a resource.
#[prompt]
fn test_prompt_with_embedded_resource(
    /// The URI of the resource to embed.
    #[serde(rename = "resourceUri")]
    resource_uri: String,
) -> Vec<PromptMessage> {
    vec![
        PromptMessage::user(Content::resource(ResourceContents::text(
            resource_uri,
            Some("text/plain"),
            "Embedded resource content for testing.",
        ))),
        PromptMessage::user("Please process the embedded resource above."),
    ]
}

/// A prompt with an image.
#[prompt]
fn test_prompt_with_image() -> Vec<PromptMessage> {
    vec![
        PromptMessage::user(Content::image_base64(PNG, "image/png")),
        PromptMessage::user("Please analyze the image above."),
    ]
}

/// A prompt that first asks the user for context (2026-07-28 MRTR).
#[prompt]
async fn test_input_required_result_prompt(ctx: Context) -> Result<String, sake::InputError> {
    let context = ctx
        .elicit::<ContextForm>("user_context", "What context should the prompt use?")
        .await?
        .accepted()
        .map_or_else(String::new, |c| c.context);
    Ok(format!("Prompt with context: {context}"))
}

// ---------------------------------------------------------------------------------------------
// Resources

/// A static text resource.
#[resource(
    uri = "test://static-text",
    name = "static-text",
    title = "Static Text Resource",
    mime_type = "text/plain"
)]
fn static_text() -> &'static str {
    "This is the content of the static text resource."
}

/// A static binary resource (a PNG).
#[resource(
    uri = "test://static-binary",
    name = "static-binary",
    title = "Static Binary Resource",
    mime_type = "image/png"
)]
fn static_binary() -> ResourceContents {
    ResourceContents::Blob(
        BlobResourceContents::new("test://static-binary", PNG).with_mime_type("image/png"),
    )
}

/// A resource clients may subscribe to.
#[resource(
    uri = "test://watched-resource",
    name = "watched-resource",
    mime_type = "text/plain"
)]
fn watched_resource() -> &'static str {
    "Watched resource content"
}

/// Data for an id.
#[resource(
    uri = "test://template/{id}/data",
    name = "template",
    mime_type = "application/json"
)]
fn template_data(id: String) -> String {
    json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") }).to_string()
}

// ---------------------------------------------------------------------------------------------
// Skills (the skills extension): `examples/skills/`, checked and embedded at compile time. The
// first skill `skills/list` returns (`acme/billing/refunds`, under a prefix) has a supporting
// file in a subdirectory; `sake-guide` is top-level and holds the nested skill `testing`.

sake::skills!("skills");

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let port = std::env::var("PORT").unwrap_or_else(|_| "3000".to_owned());
    let host = std::env::var("HOST").unwrap_or_else(|_| "127.0.0.1".to_owned());
    // An IPv6 address in brackets: `::` is every address, IPv4 ones too (dual stack).
    let addr = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    let mut server = shared_through_redis(Server::from_registry())?
        .name("sake-everything")
        .version(env!("CARGO_PKG_VERSION"))
        .description("The MCP conformance fixture of sake: every tool, prompt, resource and skill.")
        .instructions("The MCP conformance fixture.")
        // A server card at /mcp/server-card and the AI Catalog at /.well-known/ai-catalog.json.
        .listing(sake::card::Listing::new("io.github.sake-rs").repository(
            sake::card::Repository::github("https://github.com/sake-rs/sake"),
        ));
    // Behind a proxy, the URL clients use (the card's remote): PUBLIC_URL.
    if let Ok(url) = std::env::var("PUBLIC_URL") {
        server = server.public_url(url);
    }
    server
        .serve_http_with_shutdown(addr, async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}

/// With `REDIS_URL` set, replicas of this fixture share events, ended sessions and tasks
/// through that Redis (deploy/replicas.sh runs three of them); alone, it keeps them in memory.
fn shared_through_redis(server: Server) -> Result<Server, Box<dyn std::error::Error>> {
    let Ok(url) = std::env::var("REDIS_URL") else {
        return Ok(server);
    };
    tracing::info!(%url, "sharing events, ended sessions and tasks through Redis");
    Ok(server
        .event_bus(sake::redis::RedisBus::new(&url)?)
        .task_store(sake::redis::RedisTaskStore::new(&url)?))
}
