//! The server the interop tests drive over a real socket: a tool with structured output, a
//! tool that asks the user through elicitation, a prompt, a resource and a template.
//! Included by `tests/interop_*.rs` with `#[path]`; each test binary registers these items.

use std::time::Duration;

use sake::InputError;
use sake::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// The sum of two numbers.
#[derive(Serialize, JsonSchema)]
pub struct Sum {
    /// `a + b`.
    sum: i64,
}

/// Adds two numbers.
#[tool(title = "Adder", annotations(read_only))]
async fn add(
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
) -> Sum {
    Sum { sum: a + b }
}

#[derive(Deserialize, JsonSchema)]
struct NameForm {
    /// Your name.
    name: String,
}

/// Asks the user for their name, then greets them.
#[tool]
async fn greet_user(ctx: Context) -> Result<String, InputError> {
    Ok(
        match ctx.elicit::<NameForm>("name", "What is your name?").await? {
            sake::Elicitation::Accepted(f) => format!("Hello, {}!", f.name),
            sake::Elicitation::Declined => "Hello, whoever you are.".into(),
            sake::Elicitation::Cancelled => "Never mind.".into(),
        },
    )
}

/// Logs a note at info level and a warning at warning level.
#[tool]
async fn log_twice(ctx: Context) -> &'static str {
    ctx.log(LoggingLevel::Info, "a note").await;
    ctx.log(LoggingLevel::Warning, "a warning").await;
    "logged"
}

/// Asks the model to review a piece of code.
#[prompt(title = "Code review")]
fn review(
    /// The code to review.
    code: String,
    /// Its language, if not obvious.
    language: Option<String>,
) -> Vec<PromptMessage> {
    let language = language.unwrap_or_else(|| "the code".to_owned());
    vec![PromptMessage::user(format!(
        "Review this {language} for bugs and style:\n\n{code}"
    ))]
}

/// What this server is.
#[resource(uri = "docs://about", title = "About", mime_type = "text/plain")]
fn about() -> &'static str {
    "A sake server talking to independent clients."
}

/// A user's profile, by numeric id.
#[resource(uri = "users://{id}/profile", mime_type = "application/json")]
async fn profile(id: u64) -> Result<String, ResourceError> {
    match id {
        1 => Ok(json!({"id": 1, "name": "Ada"}).to_string()),
        _ => Err(ResourceError::NotFound(format!("users://{id}/profile"))),
    }
}

/// A server on 127.0.0.1, port chosen by the system.
pub struct Running {
    /// The endpoint's URL.
    pub url: String,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<Result<(), sake::Error>>>,
}

pub const NAME: &str = "interop";
pub const VERSION: &str = "0.1.0";
pub const INSTRUCTIONS: &str = "Greet people.";

pub async fn start() -> Running {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let service = Server::from_registry()
        .name(NAME)
        .version(VERSION)
        .instructions(INSTRUCTIONS)
        .build()
        .unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(service.serve(listener, async {
        let _ = stopped.await;
    }));
    Running {
        url,
        stop: Some(stop),
        task: Some(task),
    }
}

impl Running {
    /// Shuts the server down gracefully; fails the test if that takes over five seconds.
    pub async fn shut_down(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let task = self.task.take().unwrap();
        tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .expect("the server shuts down within 5 s")
            .unwrap()
            .unwrap();
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}
