//! What both sake bench servers share: `add`, `progress`, and `main`.

use sake::prelude::*;

/// Adds two integers.
#[tool(annotations(read_only, idempotent))]
pub fn add(
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
) -> String {
    (a + b).to_string()
}

/// Reports progress ten times (when the client sent a progress token), then answers.
#[tool]
pub async fn progress(ctx: Context) -> String {
    for i in 1..=10 {
        ctx.progress(f64::from(i), Some(10.0)).await;
    }
    "done".to_owned()
}

/// Serves on `127.0.0.1:<port>` (first argument, default 3000) with logging at `warn`
/// (`RUST_LOG` overrides), so the per-request `info` span is disabled.
pub fn main(name: &str) {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let port = std::env::args().nth(1).unwrap_or_else(|| "3000".to_owned());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let served = runtime.block_on(
        Server::from_registry()
            .name(name)
            .version("0.1.0")
            // Legacy sessions are signed tokens: a fixed key lets the load tools reuse them.
            .session_key("sake-bench session key: 32 bytes or more, fixed for reruns")
            .serve_http(format!("127.0.0.1:{port}")),
    );
    if let Err(e) = served {
        eprintln!("{e}");
        std::process::exit(1);
    }
}
