//! The client the official MCP conformance suite drives:
//! `conformance client --command target/debug/examples/conformance_client --scenario NAME`.
//!
//! The suite starts a test server per scenario, runs this program with the server's URL as
//! the last argument, and names the scenario in `MCP_CONFORMANCE_SCENARIO` (test data, when a
//! scenario has any, is JSON in `MCP_CONFORMANCE_CONTEXT`). Everything below is ordinary use
//! of `sake::client`: the client discovers the server's era by itself, and signs in with
//! [`OAuth`] when the server asks (the `auth/*` scenarios: the suite plays the authorization
//! server, whose sign-in redirects at once, so the user step is [`Headless`]).
//! `scripts/conformance-client.sh` runs every scenario of the 2026-07-28 and 2025-11-25
//! requirement sets, and the extension ones.

use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use sake::client::auth::{ClientKey, Headless, IdJag, OAuth, RegisteredClient, Secret};
use sake::client::{Client, ClientBuilder, ClientError};
use sake::{CreateMessageResult, ElicitResult, Role, Root};
use serde_json::{Map, Value, json};

type Outcome = Result<(), ClientError>;

fn builder() -> ClientBuilder {
    Client::builder().info("sake-conformance-client", env!("CARGO_PKG_VERSION"))
}

/// Declares every capability, with handlers that accept.
fn full_builder() -> ClientBuilder {
    builder()
        .on_elicitation(|_req| async { Ok(ElicitResult::accept(Map::new())) })
        .on_sampling(|_req| async {
            Ok(CreateMessageResult::new(
                Role::Assistant,
                json!({"type": "text", "text": "Paris"}),
                "conformance-model",
            )
            .with_stop_reason("endTurn"))
        })
        .roots(vec![
            Root::new("file:///tmp/conformance").with_name("conformance"),
        ])
}

/// Arguments for a tool: `a`/`b` numbers (the suite's `add_numbers`), otherwise a value for
/// each required property from its type.
fn arguments_for(schema: &Value) -> Value {
    let mut args = Map::new();
    let props = schema.get("properties").and_then(Value::as_object);
    let required = schema
        .get("required")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for name in required.iter().filter_map(Value::as_str) {
        let ty = props
            .and_then(|p| p.get(name))
            .and_then(|p| p.get("type"))
            .and_then(Value::as_str)
            .unwrap_or("string");
        let value = match (name, ty) {
            ("a", _) => json!(2),
            ("b", _) => json!(3),
            (_, "integer" | "number") => json!(1),
            (_, "boolean") => json!(true),
            (_, "object") => json!({}),
            (_, "array") => json!([]),
            _ => json!("us-west1"),
        };
        args.insert(name.to_owned(), value);
    }
    Value::Object(args)
}

/// Lists the tools and calls the first one (`initialize`, `tools_call`, `sse-retry`, …).
async fn list_and_call_first(client: &Client) -> Outcome {
    let tools = client.list_tools().await?;
    if let Some(tool) = tools.first() {
        let result = client
            .call_tool(&tool.name, arguments_for(&tool.input_schema))
            .await?;
        eprintln!("{} -> {:?}", tool.name, result.content);
    }
    Ok(())
}

async fn mrtr(url: &str) -> Outcome {
    // The elicitation handler calls another tool while the first call waits for its retry:
    // the other call must carry none of the first call's round state.
    let slot: Arc<OnceLock<Client>> = Arc::new(OnceLock::new());
    let once = Arc::new(AtomicBool::new(false));
    let (s, o) = (Arc::clone(&slot), Arc::clone(&once));
    let client = builder()
        .on_elicitation(move |_req| {
            let (s, o) = (Arc::clone(&s), Arc::clone(&o));
            async move {
                if !o.swap(true, Ordering::SeqCst)
                    && let Some(c) = s.get()
                {
                    let r = c.call_tool("test_mrtr_unrelated", json!({})).await;
                    eprintln!("test_mrtr_unrelated -> {r:?}");
                }
                let mut content = Map::new();
                content.insert("confirmed".into(), json!(true));
                Ok(ElicitResult::accept(content))
            }
        })
        .connect(url)
        .await?;
    let _ = slot.set(client.clone());
    client.list_tools().await?;
    for tool in [
        "test_mrtr_echo_state",
        "test_mrtr_no_state",
        "test_mrtr_no_result_type",
    ] {
        let r = client.call_tool(tool, json!({})).await?;
        eprintln!("{tool} -> {:?}", r.content);
    }
    Ok(())
}

/// The skills extension's scenarios (`sep-2640-client-*`): list the skills; unless the
/// scenario is about not fetching ahead of need, load the first one (its `SKILL.md`, verified
/// against its entry) and then read its supporting files, each verified, stopping at the first
/// that fails verification. A refused skill is the client doing its job, not an error.
async fn skills(scenario: &str, url: &str) -> Outcome {
    let client = builder().connect(url).await?;
    let skills = client.list_skills().await?;
    for s in &skills {
        eprintln!("skill {} ({}): {}", s.name(), s.uri, s.description());
    }
    if scenario == "sep-2640-client-no-prefetch" {
        // Listed, not loaded: nothing is read.
        return Ok(());
    }
    let Some(first) = skills.first() else {
        return Ok(());
    };
    let loaded = match client.load_skill(first).await {
        Ok(loaded) => loaded,
        Err(e @ ClientError::SkillVerification { .. }) => {
            eprintln!("refused: {e}");
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    if let sake::skills::SkillResources::Files(files) = &loaded.entry().resources {
        for file in files.iter().filter(|f| f.uri != first.uri) {
            match client.read_skill_file(&loaded, &file.uri).await {
                Ok(bytes) => eprintln!("read {} ({} bytes, verified)", file.uri, bytes.len()),
                Err(e @ ClientError::SkillVerification { .. }) => {
                    eprintln!("refused: {e}");
                    return Ok(());
                }
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}

/// The Client ID Metadata Document URL the suite expects (it does not fetch it).
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// A string of the scenario's context.
fn context_str<'a>(context: Option<&'a Value>, key: &str) -> Option<&'a str> {
    context.and_then(|c| c.get(key)).and_then(Value::as_str)
}

/// The `auth/*` scenarios: sign in as the scenario's context says (client credentials, a
/// pre-registered client, else registration by metadata document or dynamically), then list
/// the tools and call each (a call may need more scopes: step-up), so that every request the
/// scenario checks is made.
async fn auth(scenario: &str, url: &str, context: Option<&Value>) -> Outcome {
    let id = context_str(context, "client_id");
    let oauth = if scenario == "auth/wif-jwt-bearer" {
        // Workload identity federation: the platform's token is the assertion.
        let jwt = context_str(context, "valid_jwt").unwrap_or_default();
        OAuth::jwt_bearer(
            RegisteredClient::public(id.unwrap_or_default()),
            Secret::new(jwt),
        )
    } else if scenario == "auth/enterprise-managed-authorization" {
        // The user's ID token, exchanged at the identity provider for an ID-JAG.
        let idp = IdJag::new(
            context_str(context, "idp_token_endpoint").unwrap_or_default(),
            RegisteredClient::public(context_str(context, "idp_client_id").unwrap_or_default()),
            context_str(context, "idp_id_token").unwrap_or_default(),
        )?;
        let client = RegisteredClient::with_secret(
            id.unwrap_or_default(),
            context_str(context, "client_secret").unwrap_or_default(),
        );
        OAuth::jwt_bearer(client, idp)
    } else if scenario.starts_with("auth/client-credentials") {
        let id = id.unwrap_or_default();
        let client = match (
            context_str(context, "private_key_pem"),
            context_str(context, "client_secret"),
        ) {
            (Some(pem), _) => RegisteredClient::with_key(
                id,
                ClientKey::from_pem(
                    pem.as_bytes(),
                    context_str(context, "signing_algorithm").unwrap_or("ES256"),
                )?,
            ),
            (None, secret) => RegisteredClient::with_secret(id, secret.unwrap_or_default()),
        };
        OAuth::client_credentials(client)
    } else {
        let mut b = OAuth::authorization_code(Headless::new())
            .client_name("sake-conformance-client")
            .client_metadata_document(CLIENT_METADATA_URL);
        if let Some(id) = id {
            b = b.client(match context_str(context, "client_secret") {
                Some(secret) => RegisteredClient::with_secret(id, secret),
                None => RegisteredClient::public(id),
            });
        }
        b
    }
    .build()?;
    let client = builder().auth(oauth).connect(url).await?;
    for tool in client.list_tools().await? {
        let result = client
            .call_tool(&tool.name, arguments_for(&tool.input_schema))
            .await?;
        eprintln!("{} -> {:?}", tool.name, result.content);
    }
    client.close().await;
    Ok(())
}

async fn run(scenario: &str, url: &str, context: Option<Value>) -> Outcome {
    if scenario.starts_with("auth/") {
        return auth(scenario, url, context.as_ref()).await;
    }
    if scenario.starts_with("sep-2640-client-") {
        return skills(scenario, url).await;
    }
    match scenario {
        "elicitation-sep1034-client-defaults" => {
            // Accept without filling anything: the client adds the schema's defaults.
            let client = builder()
                .on_elicitation(|_req| async { Ok(ElicitResult::accept(Map::new())) })
                .connect(url)
                .await?;
            client.list_tools().await?;
            let r = client
                .call_tool("test_client_elicitation_defaults", json!({}))
                .await?;
            eprintln!("-> {:?}", r.content);
            client.close().await;
            Ok(())
        }
        "request-metadata" => {
            let client = full_builder().connect(url).await?;
            client.list_tools().await?;
            Ok(())
        }
        "sep-2322-client-request-state" => mrtr(url).await,
        "http-standard-headers" => {
            let client = builder().connect(url).await?;
            for tool in client.list_tools().await? {
                client
                    .call_tool(&tool.name, arguments_for(&tool.input_schema))
                    .await?;
            }
            for resource in client.list_resources().await? {
                client.read(&resource.uri).await?;
            }
            for prompt in client.list_prompts().await? {
                client.get_prompt(&prompt.name, json!({})).await?;
            }
            Ok(())
        }
        "http-custom-headers" => {
            let client = builder().connect(url).await?;
            client.list_tools().await?;
            let calls = context
                .as_ref()
                .and_then(|c| c.get("toolCalls"))
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            for call in calls {
                let name = call.get("name").and_then(Value::as_str).unwrap_or_default();
                let args = call.get("arguments").cloned().unwrap_or(json!({}));
                client.call_tool(name, args).await?;
            }
            Ok(())
        }
        "http-invalid-tool-headers" => {
            // Tools with invalid x-mcp-header annotations are left out of list_tools().
            let client = builder().connect(url).await?;
            for tool in client.list_tools().await? {
                client
                    .call_tool(&tool.name, arguments_for(&tool.input_schema))
                    .await?;
            }
            Ok(())
        }
        "json-schema-ref-no-deref" => {
            builder().connect(url).await?.list_tools().await?;
            Ok(())
        }
        "json-schema-2020-12-preservation" => {
            let client = builder().connect(url).await?;
            let tools = client.list_tools().await?;
            let focal = tools
                .iter()
                .find(|t| t.name == "json_schema_2020_12_tool")
                .map(|t| t.input_schema.clone())
                .unwrap_or(Value::Null);
            client
                .call_tool("json_schema_echo", json!({ "schema": focal }))
                .await?;
            Ok(())
        }
        // initialize, tools_call, sse-retry, and anything else: list and call.
        _ => {
            let client = full_builder().connect(url).await?;
            list_and_call_first(&client).await?;
            client.close().await;
            Ok(())
        }
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| "sake=debug".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let Some(url) = std::env::args().skip(1).last() else {
        eprintln!("usage: MCP_CONFORMANCE_SCENARIO=<scenario> conformance_client <server-url>");
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let context = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok());
    eprintln!("scenario {scenario:?} against {url}");
    match run(&scenario, &url, context).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
