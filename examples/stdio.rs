//! An MCP server on stdin/stdout: `cargo run --example stdio`. Logs go to stderr.
//!
//! It answers `server/discover` and 2026-07-28 requests at any time, and becomes a handshake
//! session after an `initialize`.

use std::time::Duration;

use sake::prelude::*;
use sake::{CreateMessageRequest, InputError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The sum of two numbers.
#[derive(Serialize, JsonSchema)]
struct Sum {
    /// `a + b`.
    sum: i64,
}

/// Adds two numbers.
#[tool(annotations(read_only, idempotent))]
fn add(
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
) -> Sum {
    Sum { sum: a + b }
}

/// Waits `millis` milliseconds (at most 10 s), reporting progress; cancellable.
#[tool]
async fn sleep(
    /// How long to wait.
    millis: u64,
    ctx: Context,
) -> String {
    let millis = millis.min(10_000);
    ctx.log(LoggingLevel::Info, format!("sleeping {millis} ms"))
        .await;
    let steps = 4;
    for i in 1..=steps {
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(millis / steps)) => {}
            () = ctx.cancelled() => return "cancelled".into(),
        }
        ctx.progress(i as f64, Some(steps as f64)).await;
    }
    format!("slept {millis} ms")
}

/// A name.
#[derive(Deserialize, JsonSchema)]
struct Name {
    /// Your name.
    name: String,
}

/// Asks the user for their name, then greets them.
#[tool]
async fn greet_me(ctx: Context) -> Result<String, InputError> {
    let name = ctx
        .elicit::<Name>("name", "What is your name?")
        .await?
        .accepted()
        .map_or_else(|| "stranger".to_owned(), |n| n.name);
    Ok(format!("Hello, {name}!"))
}

/// Asks the client's model for a haiku about `topic`.
#[tool]
async fn haiku(
    /// What the haiku is about.
    topic: String,
    ctx: Context,
) -> Result<String, InputError> {
    let r = ctx
        .sample(
            "haiku",
            CreateMessageRequest::user(format!("A haiku about {topic}"), 60),
        )
        .await?;
    Ok(r.text().unwrap_or_default().to_owned())
}

/// A short note.
#[resource(uri = "notes://hello", mime_type = "text/plain")]
fn hello_note() -> &'static str {
    "Hello from sake over stdio."
}

/// Asks for a summary of a text.
#[prompt]
fn summarize(
    /// The text to summarize.
    text: String,
) -> String {
    format!("Summarize in one sentence:\n\n{text}")
}

#[tokio::main]
async fn main() -> Result<(), sake::Error> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    Server::from_registry()
        .name("sake-stdio")
        .version(env!("CARGO_PKG_VERSION"))
        .serve_stdio()
        .await
}
