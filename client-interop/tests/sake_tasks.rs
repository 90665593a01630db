//! sake's client following tasks of a sake server (the tasks extension), on a real socket: a
//! long-running tool written as an ordinary function — progress, a question to the user —
//! awaited transparently by `Client::call`, followed step by step with a `TaskHandle`, and
//! cancelled when the caller gives up.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{LazyLock, Mutex};
use std::time::Duration;

use sake::client::{Client, ClientError, ToolCall};
use sake::prelude::*;
use sake::tasks::TaskStatus;
use sake::{ElicitResult, RpcError};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize, JsonSchema)]
struct Confirm {
    /// Go ahead.
    ok: bool,
}

static DEPLOY_RUNS: AtomicUsize = AtomicUsize::new(0);

/// Builds, asks whether to deploy, deploys.
#[tool(task = "required")]
async fn deploy(
    /// Where to.
    env: String,
    ctx: Context,
) -> Result<String, InputError> {
    DEPLOY_RUNS.fetch_add(1, SeqCst);
    for (i, step) in ["building", "testing"].into_iter().enumerate() {
        tokio::time::sleep(Duration::from_millis(30)).await;
        ctx.progress_message(i as f64 + 1.0, Some(3.0), step).await;
    }
    let go = ctx
        .elicit::<Confirm>("confirm", &format!("Deploy to {env}?"))
        .await?
        .accepted()
        .is_some_and(|c| c.ok);
    if !go {
        return Ok("not deployed".into());
    }
    ctx.progress_message(3.0, Some(3.0), "deploying").await;
    tokio::time::sleep(Duration::from_millis(30)).await;
    Ok(format!("deployed to {env}"))
}

/// The tasks of `forever` that saw their cancellation.
static STOPPED: LazyLock<Mutex<Vec<String>>> = LazyLock::new(Default::default);

/// Runs until cancelled.
#[tool(task = "optional")]
async fn forever(ctx: Context) -> &'static str {
    tokio::time::sleep(Duration::from_millis(1)).await;
    let watcher = ctx.clone();
    tokio::spawn(async move {
        watcher.cancelled().await;
        if let Some(id) = watcher.task_id() {
            STOPPED.lock().unwrap().push(id.to_owned());
        }
    });
    std::future::pending().await
}

/// Fails with a protocol error.
#[tool(task = "optional")]
async fn broken(ctx: Context) -> &'static str {
    tokio::time::sleep(Duration::from_millis(1)).await;
    ctx.fail_with(RpcError::new(-32050, "the deploy service is down"));
    ""
}

/// Serves the tools on a fresh port; the endpoint's URL.
async fn live() -> String {
    let service = Server::from_registry()
        .name("tasks")
        .version("1.0.0")
        .task_poll_interval(Duration::from_millis(20))
        .build()
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let _ = service.serve(listener, std::future::pending()).await;
    });
    url
}

fn answering(ok: bool) -> sake::client::ClientBuilder {
    Client::builder()
        .cache(sake::client::EraCache::new())
        .timeout(Duration::from_secs(10))
        .on_elicitation(move |req| async move {
            assert_eq!(req.message, "Deploy to prod?");
            Ok(ElicitResult::accept(
                json!({"ok": ok}).as_object().cloned().unwrap(),
            ))
        })
}

#[tokio::test]
async fn a_task_is_awaited_like_any_call() {
    let server = live().await;
    let client = answering(true).connect(&server).await.unwrap();
    let runs = DEPLOY_RUNS.load(SeqCst);
    let out: String = client.call("deploy", json!({"env": "prod"})).await.unwrap();
    assert_eq!(out, "deployed to prod");
    // Once asking, once again with the answer.
    assert_eq!(DEPLOY_RUNS.load(SeqCst) - runs, 2);
    // A task that fails is the call's error, as a call answered with one.
    let err = client.call_tool("broken", ()).await.unwrap_err();
    let e = err.rpc().unwrap();
    assert_eq!(
        (e.code, e.message.as_str()),
        (-32050, "the deploy service is down")
    );
}

#[tokio::test]
async fn a_task_followed_step_by_step() {
    let server = live().await;
    let client = answering(false).connect(&server).await.unwrap();
    let ToolCall::Task(task) = client
        .start_tool("deploy", json!({"env": "prod"}))
        .await
        .unwrap()
    else {
        panic!("deploy runs as a task")
    };
    assert_eq!(task.task().status, TaskStatus::Working);
    assert_eq!(task.poll_interval(), Duration::from_millis(20));
    let mut seen: Vec<(TaskStatus, Option<String>)> = Vec::new();
    let out = task
        .wait_with(|t| {
            let now = (t.task.status, t.task.status_message.clone());
            if seen.last() != Some(&now) {
                seen.push(now);
            }
        })
        .await
        .unwrap();
    assert_eq!(out.content[0].as_text(), Some("not deployed"));
    // It waited for the answer and ended completed; what the polls caught between depends
    // on timing.
    assert_eq!(seen.last(), Some(&(TaskStatus::Completed, None)));
    let statuses: Vec<TaskStatus> = seen.iter().map(|s| s.0).collect();
    assert!(statuses.contains(&TaskStatus::InputRequired), "{seen:?}");
    // Progress shows as the status message (the steps before the question run again with
    // the answer, and report again).
    let messages: Vec<&str> = seen.iter().filter_map(|s| s.1.as_deref()).collect();
    for m in &messages {
        assert!(["building", "testing"].contains(m), "{m}");
    }
}

#[tokio::test]
async fn a_call_given_up_cancels_its_task_on_the_server() {
    let server = live().await;
    let client = answering(true).connect(&server).await.unwrap();
    let before = STOPPED.lock().unwrap().len();
    // Dropped by its caller.
    let gave_up =
        tokio::time::timeout(Duration::from_millis(200), client.call_tool("forever", ())).await;
    assert!(gave_up.is_err());
    // Out of time.
    let client = answering(true)
        .task_timeout(Duration::from_millis(200))
        .connect(&server)
        .await
        .unwrap();
    let err = client.call_tool("forever", ()).await.unwrap_err();
    assert!(
        matches!(&err, ClientError::Timeout { method, millis: 200 } if method == "tools/call"),
        "{err:?}"
    );
    for _ in 0..500 {
        if STOPPED.lock().unwrap().len() - before >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let stopped: Vec<String> = STOPPED.lock().unwrap()[before..].to_vec();
    assert_eq!(stopped.len(), 2, "both tasks were cancelled: {stopped:?}");
    // The server says so too.
    for id in stopped {
        let mut task = client.task(&id).await.unwrap();
        assert_eq!(task.get().await.unwrap().task.status, TaskStatus::Cancelled);
    }
}
