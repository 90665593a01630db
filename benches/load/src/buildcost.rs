//! Workload 7: the release rebuild after touching one tool of a 50-tool crate, for sake, bare
//! axum handlers and rmcp's macros. The crates are generated under
//! `benches/target/buildcost/` and share `benches/target` with the bench workspace.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use crate::stats::{Table, median, ratio};
use crate::{Opts, load};

const TOOLS: usize = 50;
/// The tool whose body each round changes.
const TOUCHED: usize = 17;

fn sake_crate(root: &Path) -> (String, String, String) {
    let manifest = format!(
        r#"[package]
name = "sake50"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
sake-mcp = {{ path = "{}" }}
tokio = {{ version = "1", features = ["rt-multi-thread", "macros"] }}
"#,
        root.display()
    );
    let main = r#"mod tools;

#[tokio::main]
async fn main() -> Result<(), sake::Error> {
    sake::Server::from_registry()
        .name("sake50")
        .version("0.1.0")
        .serve_http("127.0.0.1:3000")
        .await
}
"#
    .to_owned();
    let mut tools = String::from("use sake::prelude::*;\n");
    for i in 0..TOOLS {
        write!(
            tools,
            r#"
/// Looks up entries of catalogue {i} that match a query.
#[tool(annotations(read_only))]
pub fn lookup_{i:02}(
    /// What to look for.
    query: String,
    /// At most this many entries.
    limit: Option<u32>,
) -> String {{
    let salt = 0u32;
    format!("catalogue {i}/{{salt}}: {{query}} ({{}})", limit.unwrap_or(10))
}}
"#
        )
        .unwrap();
    }
    (manifest, main, tools)
}

fn axum_crate() -> (String, String, String) {
    let manifest = r#"[package]
name = "axum50"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
axum = { version = "0.8", default-features = false, features = ["http1", "tokio", "json"] }
tokio = { version = "1", features = ["rt-multi-thread", "macros", "net"] }
serde = { version = "1", features = ["derive"] }
"#
    .to_owned();
    let main = r#"mod tools;

#[tokio::main]
async fn main() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await.unwrap();
    axum::serve(listener, tools::router()).await.unwrap();
}
"#
    .to_owned();
    let mut tools =
        String::from("use axum::Json;\nuse axum::routing::post;\nuse serde::Deserialize;\n");
    for i in 0..TOOLS {
        write!(
            tools,
            r#"
/// The arguments of `lookup_{i:02}`.
#[derive(Deserialize)]
pub struct Lookup{i}Args {{
    /// What to look for.
    pub query: String,
    /// At most this many entries.
    pub limit: Option<u32>,
}}

/// Looks up entries of catalogue {i} that match a query.
pub async fn lookup_{i:02}(Json(Lookup{i}Args {{ query, limit }}): Json<Lookup{i}Args>) -> String {{
    let salt = 0u32;
    format!("catalogue {i}/{{salt}}: {{query}} ({{}})", limit.unwrap_or(10))
}}
"#
        )
        .unwrap();
    }
    tools.push_str("\npub fn router() -> axum::Router {\n    axum::Router::new()\n");
    for i in 0..TOOLS {
        writeln!(
            tools,
            "        .route(\"/tools/lookup_{i:02}\", post(lookup_{i:02}))"
        )
        .unwrap();
    }
    tools.push_str("}\n");
    (manifest, main, tools)
}

fn rmcp_crate() -> (String, String, String) {
    let manifest = r#"[package]
name = "rmcp50"
version = "0.0.0"
edition = "2024"
publish = false

[dependencies]
rmcp = { version = "=3.11.0", default-features = false, features = ["server", "macros", "transport-streamable-http-server"] }
axum = { version = "0.8", default-features = false, features = ["http1", "tokio"] }
tokio = { version = "1", features = ["rt-multi-thread", "macros", "net"] }
serde = { version = "1", features = ["derive"] }
"#
    .to_owned();
    let main = r#"mod tools;

use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

#[tokio::main]
async fn main() {
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true);
    let svc: StreamableHttpService<tools::Tools, NeverSessionManager> = StreamableHttpService::new(
        || Ok(tools::Tools::new()),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    let app = axum::Router::new().nest_service("/mcp", svc);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await.unwrap();
    axum::serve(listener, app).await.unwrap();
}
"#
    .to_owned();
    let mut tools = String::from(
        r#"use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, schemars, tool, tool_handler, tool_router};
use serde::Deserialize;
"#,
    );
    for i in 0..TOOLS {
        write!(
            tools,
            r#"
/// The arguments of `lookup_{i:02}`.
#[derive(Deserialize, schemars::JsonSchema)]
pub struct Lookup{i}Args {{
    /// What to look for.
    pub query: String,
    /// At most this many entries.
    pub limit: Option<u32>,
}}
"#
        )
        .unwrap();
    }
    tools.push_str(
        r#"
#[derive(Clone)]
pub struct Tools {
    tool_router: ToolRouter<Tools>,
}

#[tool_router]
impl Tools {
    pub fn new() -> Self {
        Tools { tool_router: Self::tool_router() }
    }
"#,
    );
    for i in 0..TOOLS {
        write!(
            tools,
            r#"
    /// Looks up entries of catalogue {i} that match a query.
    #[tool(annotations(read_only_hint = true))]
    fn lookup_{i:02}(&self, Parameters(Lookup{i}Args {{ query, limit }}): Parameters<Lookup{i}Args>) -> String {{
        let salt = 0u32;
        format!("catalogue {i}/{{salt}}: {{query}} ({{}})", limit.unwrap_or(10))
    }}
"#
        )
        .unwrap();
    }
    tools.push_str(
        r#"}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Tools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}
"#,
    );
    (manifest, main, tools)
}

fn write(dir: &Path, (manifest, main, tools): (String, String, String)) {
    std::fs::create_dir_all(dir.join("src")).expect("create a crate dir");
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    std::fs::write(dir.join("src/main.rs"), main).unwrap();
    std::fs::write(dir.join("src/tools.rs"), tools).unwrap();
}

/// Changes the body of one tool: `salt` of `lookup_17` becomes `value`.
fn touch(dir: &Path, value: usize) {
    let path = dir.join("src/tools.rs");
    let text = std::fs::read_to_string(&path).unwrap();
    let marker = format!("lookup_{TOUCHED:02}(");
    let at = text.find(&marker).expect("the touched tool");
    let salt_at = at + text[at..].find("let salt = ").expect("its salt");
    let end = salt_at + text[salt_at..].find(';').unwrap();
    let mut out = text[..salt_at].to_owned();
    write!(out, "let salt = {value}u32").unwrap();
    out.push_str(&text[end..]);
    std::fs::write(&path, out).unwrap();
}

fn cargo_build(ws: &Path, target: &Path, package: Option<&str>) -> Result<f64, String> {
    // The driver runs pinned to the load core; builds get every core, as a developer's would.
    let cores = std::fs::read_to_string("/proc/cpuinfo")
        .map(|c| c.lines().filter(|l| l.starts_with("processor")).count())
        .unwrap_or(1)
        .max(1);
    let mut cmd = Command::new("taskset");
    cmd.arg("-c").arg(format!("0-{}", cores - 1)).arg("cargo");
    cmd.arg("build").arg("--release").arg("--quiet");
    if let Some(p) = package {
        cmd.arg("-p").arg(p);
    }
    let started = Instant::now();
    let out = cmd
        .current_dir(ws)
        .env("CARGO_TARGET_DIR", target)
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    Ok(started.elapsed().as_secs_f64())
}

/// Returns sake's rebuild time as a multiple of bare axum's.
pub fn run(o: &Opts, emit: &mut dyn FnMut(&str)) -> Option<f64> {
    let root = o
        .bench_dir
        .parent()
        .and_then(|p| p.canonicalize().ok())
        .expect("the sake repository");
    let target = o.bench_dir.join("target");
    let ws = target.join("buildcost");
    let crates = [
        ("sake50", "sake"),
        ("axum50", "bare axum"),
        ("rmcp50", "rmcp"),
    ];
    write(&ws.join("sake50"), sake_crate(&root));
    write(&ws.join("axum50"), axum_crate());
    write(&ws.join("rmcp50"), rmcp_crate());
    std::fs::write(
        ws.join("Cargo.toml"),
        "# Generated by sake-bench (workload 7). Not part of any repository workspace.\n[workspace]\nmembers = [\"sake50\", \"axum50\", \"rmcp50\"]\nresolver = \"3\"\n\n[profile.release]\ndebug = \"line-tables-only\"\n",
    )
    .unwrap();
    if !ws.join("Cargo.lock").exists() {
        let _ = std::fs::copy(o.bench_dir.join("Cargo.lock"), ws.join("Cargo.lock"));
    }
    eprintln!("  build: first (untimed) release build of the three crates");
    for (name, _) in crates {
        touch(&ws.join(name), 0);
        if let Err(e) = cargo_build(&ws, &target, Some(name)) {
            eprintln!("  build of {name} failed:\n{e}");
            return None;
        }
    }
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); crates.len()];
    let mut loads: Vec<String> = Vec::new();
    let load_before = load();
    for round in 0..o.rounds {
        for (i, (name, label)) in crates.iter().enumerate() {
            touch(&ws.join(name), round + 1);
            let l = load();
            match cargo_build(&ws, &target, Some(name)) {
                Ok(t) => {
                    eprintln!(
                        "  build round {} {label:<10} {t:.1} s (load {l})",
                        round + 1
                    );
                    times[i].push(t);
                    loads.push(format!("{label} {l}"));
                }
                Err(e) => {
                    eprintln!("  rebuild of {name} failed:\n{e}");
                    return None;
                }
            }
        }
    }
    let m: Vec<f64> = times.iter().map(|v| median(v.clone())).collect();
    let mut t = Table::new(&[
        "crate of 50 tools",
        "release rebuild",
        "×axum",
        "×rmcp",
        "samples",
    ]);
    for (i, (_, label)) in crates.iter().enumerate() {
        t.row(vec![
            label.to_string(),
            format!("{:.1} s", m[i]),
            ratio(m[i], Some(m[1])),
            ratio(m[i], Some(m[2])),
            times[i]
                .iter()
                .map(|x| format!("{x:.1}"))
                .collect::<Vec<_>>()
                .join(", "),
        ]);
    }
    emit(&format!(
        "\n### 7. Build cost: release rebuild after changing one tool's body (crate of 50 tools)\n\n`cargo build --release -p <crate>` after editing `lookup_{TOUCHED}` in `src/tools.rs`, {} interleaved round(s); the crates are generated in `benches/target/buildcost/`. Load average before: {load_before}; per build: {}.\n\n{}",
        o.rounds,
        loads.join("; "),
        t.render()
    ));
    Some(m[0] / m[1])
}
