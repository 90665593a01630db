//! What both sake bench servers share: `add`, `progress`, and `main` (with
//! authorization when `SAKE_BENCH_AUTH_SECRET` is set, replicas sharing Redis when
//! `SAKE_BENCH_REDIS_URL` is, lists in pages of `SAKE_BENCH_PAGE_SIZE` items when that is set,
//! middleware on every call when `SAKE_BENCH_MIDDLEWARE=1`, and stdio instead of HTTP when the
//! first argument is `stdio`).

use sake::prelude::*;

#[path = "../../alloc_count.rs"]
mod alloc_count;

/// Counts allocations when `BENCH_COUNT_ALLOCS=1` (the "allocs" workload).
#[global_allocator]
static ALLOC: alloc_count::Counting = alloc_count::Counting;

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

/// Serves on `127.0.0.1:<port>` (first argument, default 3000), or on stdin and stdout when
/// the first argument is `stdio`, with logging at `warn` (`RUST_LOG` overrides) on stderr, so
/// the per-request `info` span is disabled.
pub fn main(name: &str) {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let port = std::env::args().nth(1).unwrap_or_else(|| "3000".to_owned());
    // SAKE_BENCH_CURRENT_THREAD=1: one thread, so that instruction counts (callgrind) repeat
    // exactly from run to run; the throughput workloads use the multi-threaded runtime.
    let runtime = if std::env::var("SAKE_BENCH_CURRENT_THREAD").is_ok_and(|v| v == "1") {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    }
    .enable_all()
    .build()
    .expect("a tokio runtime");
    let mut server = Server::from_registry()
        .name(name)
        .version("0.1.0")
        // Legacy sessions are signed tokens: a fixed key lets the load tools reuse them.
        .session_key("sake-bench session key: 32 bytes or more, fixed for reruns");
    // The "pages" workload: lists split into pages of this many items (`nextCursor`).
    if let Ok(size) = std::env::var("SAKE_BENCH_PAGE_SIZE") {
        match size.parse() {
            Ok(items) => server = server.page_size(items),
            Err(e) => {
                eprintln!("SAKE_BENCH_PAGE_SIZE={size:?}: {e}");
                std::process::exit(2);
            }
        }
    }
    // The "auth" workload: every request needs a bearer token, an HS256 JWT of this secret
    // (`sake-bench` mints it), remembered once verified when SAKE_BENCH_AUTH_CACHE=1 (as
    // `Authorization::jwt` does), else verified on every request.
    if let Ok(secret) = std::env::var("SAKE_BENCH_AUTH_SECRET") {
        let cached = std::env::var("SAKE_BENCH_AUTH_CACHE").is_ok_and(|v| v == "1");
        server = server.authorization(authorization(&port, &secret, cached));
    }
    // The "bus" workload: replicas sharing events and tasks through this Redis.
    if let Ok(url) = std::env::var("SAKE_BENCH_REDIS_URL") {
        let bus = sake::redis::RedisBus::new(&url);
        let store = sake::redis::RedisTaskStore::new(&url);
        match (bus, store) {
            (Ok(bus), Ok(store)) => server = server.event_bus(bus).task_store(store),
            (Err(e), _) | (_, Err(e)) => {
                eprintln!("SAKE_BENCH_REDIS_URL: {e}");
                std::process::exit(1);
            }
        }
    }
    // The "middleware" workload of the performance guard: every call through one `from_fn`
    // layer, and `add` through an in-memory rate limit that never refuses (docs/middleware.md).
    if std::env::var("SAKE_BENCH_MIDDLEWARE").is_ok_and(|v| v == "1") {
        use sake::middleware::{self, RateLimit};
        server = server
            .layer(middleware::from_fn(|req, next| next.run(req)))
            .layer_for(
                "add",
                RateLimit::new(u32::MAX, std::time::Duration::from_secs(1)),
            );
    }
    // The "stdio" workload: newline-delimited JSON-RPC on stdin and stdout.
    let served = if port == "stdio" {
        runtime.block_on(server.serve_stdio())
    } else {
        runtime.block_on(async {
            alloc_count::start();
            server.serve_http(format!("127.0.0.1:{port}")).await
        })
    };
    if let Err(e) = served {
        eprintln!("{e}");
        std::process::exit(1);
    }
}

/// What the "auth" workload's server checks: tokens of `ISSUER` for this endpoint, HS256 with
/// `secret`.
fn authorization(port: &str, secret: &str, cached: bool) -> sake::auth::Authorization {
    use sake::auth::{Algorithm, Authorization, CachedVerifier, JwtVerifier};
    const ISSUER: &str = "https://issuer.sake-bench.invalid";
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let verifier = JwtVerifier::builder(ISSUER, resource.clone())
        .algorithms([Algorithm::HS256])
        .hmac_secret(secret.as_bytes().to_vec())
        .build()
        .unwrap_or_else(|e| {
            eprintln!("the bench verifier: {e}");
            std::process::exit(1);
        });
    if cached {
        Authorization::new(resource, ISSUER, CachedVerifier::new(verifier))
    } else {
        Authorization::new(resource, ISSUER, verifier)
    }
}
