//! A long-running tool written as an ordinary function — it reports its progress and asks the
//! user a question — run as a task (the 2026-07-28 tasks extension) and driven by sake's
//! client, in one process: `cargo run --example long_task --features client`. docs/tasks.md walks through it.

use std::time::Duration;

use sake::ElicitResult;
use sake::client::{Client, ToolCall};
use sake::prelude::*;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

// ---------------------------------------------------------------------------------------------
// The server

/// Whether to go ahead.
#[derive(Deserialize, JsonSchema)]
struct Confirm {
    /// Deploy now.
    deploy: bool,
}

/// Builds and tests a service, asks whether to deploy it, deploys it.
#[tool(task = "optional")]
async fn release(
    /// The service to release.
    service: String,
    ctx: Context,
) -> Result<String, InputError> {
    for (step, what) in ["building", "testing"].into_iter().enumerate() {
        ctx.progress_message(step as f64, Some(3.0), format!("{what} {service}"))
            .await;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let go = ctx
        .elicit::<Confirm>(
            "confirm",
            &format!("{service} passed its tests. Deploy it?"),
        )
        .await?
        .accepted()
        .is_some_and(|c| c.deploy);
    if !go {
        return Ok(format!("{service} was not deployed"));
    }
    ctx.progress_message(2.0, Some(3.0), format!("deploying {service}"))
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    Ok(format!("{service} is live"))
}

// ---------------------------------------------------------------------------------------------
// The client

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let service = Server::from_registry()
        .name("releases")
        .version("1.0.0")
        .task_poll_interval(Duration::from_millis(100))
        // The client below is all this program shows: no start-up greeting.
        .quiet(true)
        .build()?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    tokio::spawn(service.serve(listener, std::future::pending()));

    // The user's side: a form answered by a handler (a real client would show it).
    let client = Client::builder()
        .on_elicitation(|request| async move {
            println!("  the server asks: {}", request.message);
            Ok(ElicitResult::accept(
                json!({"deploy": true})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            ))
        })
        .connect(&url)
        .await?;

    // Transparent: the call becomes a task, which the client follows to its end.
    let out: String = client
        .call("release", json!({"service": "billing"}))
        .await?;
    println!("call: {out}");

    // Step by step: the task, its progress, its question, its result.
    match client
        .start_tool("release", json!({"service": "search"}))
        .await?
    {
        ToolCall::Done(result) => println!("answered at once: {result:?}"),
        ToolCall::Task(task) => {
            println!("task {}: {}", task.id(), task.task().status);
            let mut last = None;
            let result = task
                .wait_with(|t| {
                    let now = (t.task.status, t.task.status_message.clone());
                    if last.as_ref() != Some(&now) {
                        println!("  {} {}", now.0, now.1.as_deref().unwrap_or(""));
                        last = Some(now);
                    }
                })
                .await?;
            let text: Vec<&str> = result.content.iter().filter_map(|c| c.as_text()).collect();
            println!("task: {}", text.join(" "));
        }
        _ => {}
    }
    Ok(())
}
