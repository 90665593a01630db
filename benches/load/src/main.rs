//! `sake-bench`: runs the workloads of docs/benchmarks.md against sake, bare axum and rmcp in
//! one run, interleaved A B C A B C, and prints one table per workload.
//!
//! Servers run pinned to one core (`taskset -c 0`), the load generator (wrk, or this
//! process) to the other. Usually started by `benches/run.sh`, which builds everything first.
//!
//! ```text
//! sake-bench [--quick] [--rounds N] [--duration SECS] [--connections N] [--sessions N]
//!            [--only call,session,list,progress,auth,bus,startup,memory,build,stdio,pages]
//!            [--out FILE]
//! ```
//!
//! After the tables, a chart of the throughput ratios is written next to `--out` (its
//! extension replaced by `.svg`), or to `benches/target/results.svg`.

mod auth;
mod buildcost;
mod bus;
mod chart;
mod http;
mod pages;
mod replay;
mod stats;
mod stdio;

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU16, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use stats::{Table, median, micros, ratio, thousands};

pub const WORKLOADS: [&str; 13] = [
    "call",
    "session",
    "concurrency",
    "allocs",
    "list",
    "progress",
    "auth",
    "bus",
    "startup",
    "memory",
    "build",
    "stdio",
    "pages",
];

/// How wrk loads a server: connections, and load threads (all on the load core).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Shape {
    pub connections: u32,
    pub threads: u32,
}

/// The "concurrency" workload's shapes: 32 and 256 connections, one and two load threads.
const SHAPES: [Shape; 4] = [
    Shape {
        connections: 32,
        threads: 1,
    },
    Shape {
        connections: 32,
        threads: 2,
    },
    Shape {
        connections: 256,
        threads: 1,
    },
    Shape {
        connections: 256,
        threads: 2,
    },
];

#[derive(Clone, Debug)]
pub struct Opts {
    pub quick: bool,
    pub rounds: usize,
    pub duration: u32,
    pub warmup: u32,
    pub connections: u32,
    pub sessions: usize,
    /// rmcp keeps every session (about 65 KiB each here): it gets fewer, not to fill the
    /// memory of a shared machine.
    pub rmcp_sessions: usize,
    pub startup_samples: usize,
    pub only: Vec<String>,
    pub out: Option<PathBuf>,
    pub server_core: String,
    pub load_core: String,
    /// Where the release binaries are (this program's own directory).
    pub bin_dir: PathBuf,
    /// `benches/`.
    pub bench_dir: PathBuf,
}

fn usage() -> ! {
    eprintln!(
        "usage: sake-bench [--quick] [--rounds N] [--duration SECS] [--connections N] [--sessions N] [--only {}] [--out FILE]",
        WORKLOADS.join(",")
    );
    std::process::exit(2)
}

fn parse_opts() -> Opts {
    let bin_dir = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| PathBuf::from("."));
    let bench_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let mut o = Opts {
        quick: false,
        rounds: 3,
        duration: 10,
        warmup: 2,
        connections: 32,
        sessions: 100_000,
        rmcp_sessions: 20_000,
        startup_samples: 5,
        only: Vec::new(),
        out: None,
        server_core: "0".into(),
        load_core: "1".into(),
        bin_dir,
        bench_dir,
    };
    let mut explicit_rounds = None;
    let mut explicit_duration = None;
    let mut explicit_sessions = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| usage());
        match a.as_str() {
            "--quick" => o.quick = true,
            "--rounds" => explicit_rounds = value().parse().ok(),
            "--duration" => explicit_duration = value().parse().ok(),
            "--connections" => o.connections = value().parse().unwrap_or_else(|_| usage()),
            "--sessions" => explicit_sessions = value().parse().ok(),
            "--rmcp-sessions" => o.rmcp_sessions = value().parse().unwrap_or_else(|_| usage()),
            "--only" => {
                o.only = value().split(',').map(|s| s.trim().to_owned()).collect();
                if let Some(bad) = o.only.iter().find(|w| !WORKLOADS.contains(&w.as_str())) {
                    eprintln!("unknown workload {bad:?}");
                    usage();
                }
            }
            "--out" => o.out = Some(PathBuf::from(value())),
            "--server-core" => o.server_core = value(),
            "--load-core" => o.load_core = value(),
            "-h" | "--help" => usage(),
            _ => usage(),
        }
    }
    if o.quick {
        o.rounds = 1;
        o.duration = 2;
        o.warmup = 1;
        o.sessions = 2_000;
        o.startup_samples = 2;
    }
    o.rounds = explicit_rounds.unwrap_or(o.rounds).max(1);
    o.duration = explicit_duration.unwrap_or(o.duration).max(1);
    o.sessions = explicit_sessions.unwrap_or(o.sessions).max(200);
    o.rmcp_sessions = o.rmcp_sessions.clamp(200, o.sessions);
    o
}

impl Opts {
    fn selected(&self, w: &str) -> bool {
        if self.only.is_empty() {
            // The build-cost workload builds three crates from scratch first: not in a smoke run.
            !(self.quick && w == "build")
        } else {
            self.only.iter().any(|o| o == w)
        }
    }
}

/// `/proc/loadavg`'s first three fields.
pub fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "?".into())
}

fn rss_kib(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
}

// ------------------------------------------------------------------------------ servers

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Axum,
    Sake,
    /// sake with a configured authorization (the "auth" workload).
    SakeAuth,
    /// Bare axum checking the bearer JWT with jsonwebtoken in a middleware (the "auth"
    /// workload's limit).
    AxumAuth,
    Rmcp,
}

#[derive(Clone, Debug)]
struct Spec {
    label: &'static str,
    kind: Kind,
    program: &'static str,
    args: Vec<String>,
    env: Vec<(String, String)>,
}

impl Spec {
    fn new(label: &'static str, kind: Kind, program: &'static str, args: &[&str]) -> Spec {
        Spec {
            label,
            kind,
            program,
            args: args.iter().map(|s| s.to_string()).collect(),
            env: Vec::new(),
        }
    }
}

fn axum() -> Spec {
    Spec::new("bare axum", Kind::Axum, "axum-server", &[])
}
/// The same binary as [`axum`], checking the bearer JWT with `jsonwebtoken` in a middleware
/// on every request.
fn axum_jwt() -> Spec {
    let mut s = Spec::new(
        "bare axum, jsonwebtoken",
        Kind::AxumAuth,
        "axum-server",
        &[],
    );
    s.env
        .push(("AXUM_BENCH_AUTH_SECRET".into(), auth::SECRET.into()));
    s
}
fn sake() -> Spec {
    Spec::new("sake", Kind::Sake, "sake-server", &[])
}
/// The same binary as [`sake`], requiring a bearer token (HS256 JWT): remembered once
/// verified (`cached`, what `Authorization::jwt` configures), or verified on every request.
fn sake_auth(cached: bool) -> Spec {
    let label = if cached {
        "sake, JWT cached"
    } else {
        "sake, JWT each time"
    };
    let mut s = Spec::new(label, Kind::SakeAuth, "sake-server", &[]);
    s.env
        .push(("SAKE_BENCH_AUTH_SECRET".into(), auth::SECRET.into()));
    s.env.push((
        "SAKE_BENCH_AUTH_CACHE".into(),
        if cached { "1" } else { "0" }.into(),
    ));
    s
}
/// The same binary as [`sake`], sharing events and tasks through the Redis at `url`.
fn sake_bus(url: &str) -> Spec {
    let mut s = Spec::new("sake, Redis bus", Kind::Sake, "sake-server", &[]);
    s.env.push(("SAKE_BENCH_REDIS_URL".into(), url.into()));
    s
}
/// `sake-server` plus a tool that may run as a task: the tasks extension on, with the in-memory
/// task store, next to the in-memory event bus every server has.
fn sake_tasks() -> Spec {
    Spec::new("sake, tasks on", Kind::Sake, "sake-server-tasks", &[])
}
fn sake_1k() -> Spec {
    Spec::new("sake", Kind::Sake, "sake-server-1k", &[])
}
fn rmcp_stateless() -> Spec {
    Spec::new("rmcp stateless", Kind::Rmcp, "rmcp-server", &["stateless"])
}
fn rmcp_legacy() -> Spec {
    Spec::new("rmcp session", Kind::Rmcp, "rmcp-server", &["legacy"])
}
fn rmcp_1k() -> Spec {
    Spec::new(
        "rmcp stateless",
        Kind::Rmcp,
        "rmcp-server",
        &["stateless", "1k"],
    )
}

static PORT: AtomicU16 = AtomicU16::new(0);

fn next_port() -> u16 {
    if PORT.load(Ordering::Relaxed) == 0 {
        // Below the kernel's ephemeral range (32768 and up by default): wrk's and the
        // driver's own client sockets take ports there, and a server could not bind one.
        let base = 10_000 + (std::process::id() % 2_000) as u16 * 10;
        let _ = PORT.compare_exchange(0, base, Ordering::Relaxed, Ordering::Relaxed);
    }
    PORT.fetch_add(1, Ordering::Relaxed)
}

struct Running {
    child: Child,
    addr: SocketAddr,
}

impl Running {
    fn pid(&self) -> u32 {
        self.child.id()
    }
    fn rss(&self) -> f64 {
        rss_kib(self.pid()).unwrap_or(f64::NAN)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Spawns a server pinned to the server core; does not wait.
fn spawn(o: &Opts, spec: &Spec) -> (Child, SocketAddr) {
    let port = next_port();
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let logs = o.bench_dir.join("target/bench-logs");
    let _ = std::fs::create_dir_all(&logs);
    let log = std::fs::File::create(logs.join(format!("{}-{port}.log", spec.program)))
        .expect("a log file");
    let child = Command::new("taskset")
        .arg("-c")
        .arg(&o.server_core)
        .arg(o.bin_dir.join(spec.program))
        .arg(port.to_string())
        .args(&spec.args)
        .envs(spec.env.iter().cloned())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", spec.program));
    (child, addr)
}

fn start(o: &Opts, spec: &Spec) -> Running {
    let (child, addr) = spawn(o, spec);
    let running = Running { child, addr };
    if !http::wait_listening(addr, Duration::from_secs(120)) {
        panic!("{} did not listen on {addr}", spec.program);
    }
    running
}

// ----------------------------------------------------------------------------------- wrk

#[derive(Clone, Debug, Default, serde::Deserialize)]
struct WrkOut {
    requests: u64,
    duration_us: u64,
    p50_us: f64,
    p99_us: f64,
    errors: u64,
}

fn wrk(
    o: &Opts,
    shape: Shape,
    script: &str,
    addr: SocketAddr,
    seconds: u32,
    env: &[(String, String)],
) -> WrkOut {
    let script = o.bench_dir.join("wrk").join(script);
    let out = Command::new("taskset")
        .arg("-c")
        .arg(&o.load_core)
        .arg("wrk")
        .arg(format!("-t{}", shape.threads))
        .arg(format!("-c{}", shape.connections))
        .arg(format!("-d{seconds}s"))
        .arg("--timeout")
        .arg("5s")
        .arg("-s")
        .arg(&script)
        .arg(format!("http://{addr}/mcp"))
        .envs(env.iter().cloned())
        .output()
        .expect("wrk (install it: apt-get install wrk)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("BENCH_JSON "))
        .unwrap_or_else(|| {
            panic!(
                "wrk printed no result:\n{stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    serde_json::from_str(line).expect("wrk's BENCH_JSON line")
}

// ------------------------------------------------------------------------ the workloads

/// Samples of one server in one workload.
#[derive(Default, Clone)]
struct Samples {
    rps: Vec<f64>,
    p50: Vec<f64>,
    p99: Vec<f64>,
    errors: Vec<f64>,
    rss: Vec<f64>,
    loads: Vec<String>,
}

struct Report {
    markdown: String,
    /// (target, met, figure)
    targets: Vec<(String, bool, String)>,
    /// The bars of the chart, one group per throughput workload.
    chart: Vec<chart::Group>,
}

impl Report {
    fn section(&mut self, text: &str) {
        print!("{text}");
        self.markdown.push_str(text);
    }
    fn target(&mut self, name: &str, figure: f64, at_least: Option<f64>, at_most: Option<f64>) {
        let met = figure.is_finite()
            && at_least.is_none_or(|t| figure >= t)
            && at_most.is_none_or(|t| figure <= t);
        self.targets
            .push((name.to_owned(), met, format!("{figure:.2}")));
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
}

/// Checks that a server answers the workload's request correctly before loading it.
fn check(workload: &str, spec: &Spec, addr: SocketAddr, sid: Option<&str>) {
    let (ok, what) = match workload {
        "call" => {
            let r = http::probe(
                addr,
                http::MODERN_CALL,
                &http::modern_headers("tools/call", Some("add")),
            );
            (
                matches!(&r, Some((200, b)) if contains(b, br#""text":"5""#)),
                r,
            )
        }
        "bus" if spec.kind == Kind::Sake => {
            let r = http::probe(
                addr,
                http::MODERN_CALL,
                &http::modern_headers("tools/call", Some("add")),
            );
            (
                matches!(&r, Some((200, b)) if contains(b, br#""text":"5""#)),
                r,
            )
        }
        "auth" => {
            // A server that checks tokens must refuse a call without one.
            if matches!(spec.kind, Kind::SakeAuth | Kind::AxumAuth) {
                let r = http::probe(
                    addr,
                    http::MODERN_CALL,
                    &http::modern_headers("tools/call", Some("add")),
                );
                if !matches!(&r, Some((401, _))) {
                    panic!(
                        "{} answered a call without a token with {:?}, not 401",
                        spec.label,
                        r.map(|(s, b)| (s, String::from_utf8_lossy(&b).into_owned()))
                    );
                }
            }
            let mut headers = http::modern_headers("tools/call", Some("add"));
            headers.push(("authorization", format!("Bearer {}", auth::bearer(addr))));
            let r = http::probe(addr, http::MODERN_CALL, &headers);
            (
                matches!(&r, Some((200, b)) if contains(b, br#""text":"5""#)),
                r,
            )
        }
        "list" => {
            let r = http::probe(
                addr,
                http::MODERN_LIST,
                &http::modern_headers("tools/list", None),
            );
            (
                matches!(&r, Some((200, b)) if contains(b, b"lookup_0997")),
                r,
            )
        }
        "progress" => {
            let body = http::MODERN_CALL
                .replace(
                    r#"clientCapabilities":{}"#,
                    r#"clientCapabilities":{},"progressToken":7"#,
                )
                .replace(
                    r#""name":"add","arguments":{"a":2,"b":3}"#,
                    r#""name":"progress","arguments":{}"#,
                );
            let r = http::probe(
                addr,
                &body,
                &http::modern_headers("tools/call", Some("progress")),
            );
            let ok = matches!(&r, Some((200, b)) if count(b, b"notifications/progress") == 10 && contains(b, b"done"));
            (ok, r)
        }
        "session" => {
            let mut h = vec![("mcp-protocol-version", "2025-11-25".to_owned())];
            if let Some(s) = sid {
                h.push(("mcp-session-id", s.to_owned()));
            }
            let r = http::probe(addr, http::LEGACY_CALL, &h);
            (
                matches!(&r, Some((200, b)) if contains(b, br#""text":"5""#)),
                r,
            )
        }
        _ => (true, None),
    };
    if !ok {
        panic!(
            "{} answered the {workload} request wrongly: {:?}",
            spec.label,
            what.map(|(s, b)| (s, String::from_utf8_lossy(&b).into_owned()))
        );
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    count(hay, needle) > 0
}

fn count(hay: &[u8], needle: &[u8]) -> usize {
    hay.windows(needle.len()).filter(|w| *w == needle).count()
}

/// A throughput workload: every server, `rounds` times, interleaved.
fn throughput(o: &Opts, rep: &mut Report, workload: &str, title: &str, specs: &[Spec]) {
    let shape = Shape {
        connections: o.connections,
        threads: 1,
    };
    throughput_shaped(o, rep, workload, shape, false, title, specs);
}

/// [`throughput`] with `shape`; `concurrency`: a shape of the "concurrency" workload (its own
/// chart bar and targets).
fn throughput_shaped(
    o: &Opts,
    rep: &mut Report,
    workload: &str,
    shape: Shape,
    concurrency: bool,
    title: &str,
    specs: &[Spec],
) {
    let script = format!("{workload}.lua");
    let mut samples: Vec<Samples> = vec![Samples::default(); specs.len()];
    let load_before = load();
    for round in 0..o.rounds {
        for (i, spec) in specs.iter().enumerate() {
            let server = start(o, spec);
            let mut env = Vec::new();
            let mut sid = None;
            if workload == "session" && spec.kind == Kind::Axum {
                // Bare axum has no sessions: the same request bytes, with a stand-in id.
                env.push(("MCP_SESSION_ID".to_owned(), replay::bare_session_id()));
            }
            if workload == "session" && spec.kind != Kind::Axum {
                let s = rt()
                    .block_on(async {
                        let mut c = http::Conn::open(server.addr).await?;
                        http::open_session(&mut c).await
                    })
                    .unwrap_or_else(|e| panic!("{}: cannot open a session: {e}", spec.label));
                if spec.kind == Kind::Sake && s.len() != replay::SESSION_ID_BYTES {
                    eprintln!(
                        "note: sake's session id has {} bytes, bare axum's stand-in {} (replay::SESSION_ID_BYTES)",
                        s.len(),
                        replay::SESSION_ID_BYTES
                    );
                }
                env.push(("MCP_SESSION_ID".to_owned(), s.clone()));
                sid = Some(s);
            }
            if workload == "auth" {
                // Both servers get it: one without authorization ignores it.
                env.push(("SAKE_BENCH_TOKEN".to_owned(), auth::bearer(server.addr)));
            }
            check(workload, spec, server.addr, sid.as_deref());
            let _ = wrk(o, shape, &script, server.addr, o.warmup, &env);
            let l = load();
            let w = wrk(o, shape, &script, server.addr, o.duration, &env);
            let rps = w.requests as f64 / (w.duration_us as f64 / 1e6);
            eprintln!(
                "  {workload} c{} t{} round {} {:<16} {:>9} req/s  p50 {:>8}  p99 {:>8}  errors {}  (load {l})",
                shape.connections,
                shape.threads,
                round + 1,
                spec.label,
                thousands(rps),
                micros(w.p50_us),
                micros(w.p99_us),
                w.errors
            );
            let s = &mut samples[i];
            s.rps.push(rps);
            s.p50.push(w.p50_us);
            s.p99.push(w.p99_us);
            s.errors.push(w.errors as f64);
            s.rss.push(server.rss());
            s.loads.push(l);
        }
    }
    let med = |v: &Vec<f64>| median(v.clone());
    let find = |k: Kind| specs.iter().position(|s| s.kind == k);
    let (ax, rm) = (find(Kind::Axum), find(Kind::Rmcp));
    let mut t = Table::new(&[
        "server",
        "req/s",
        "×axum",
        "×rmcp",
        "p50",
        "×axum",
        "×rmcp",
        "p99",
        "×axum",
        "×rmcp",
        "errors",
        "RSS after",
    ]);
    for (i, spec) in specs.iter().enumerate() {
        let s = &samples[i];
        let base = |j: Option<usize>, f: &dyn Fn(&Samples) -> f64| j.map(|j| f(&samples[j]));
        let rps = med(&s.rps);
        let p50 = med(&s.p50);
        let p99 = med(&s.p99);
        t.row(vec![
            spec.label.to_owned(),
            thousands(rps),
            ratio(rps, base(ax, &|s| med(&s.rps))),
            ratio(rps, base(rm, &|s| med(&s.rps))),
            micros(p50),
            ratio(p50, base(ax, &|s| med(&s.p50))),
            ratio(p50, base(rm, &|s| med(&s.p50))),
            micros(p99),
            ratio(p99, base(ax, &|s| med(&s.p99))),
            ratio(p99, base(rm, &|s| med(&s.p99))),
            format!("{}", s.errors.iter().sum::<f64>()),
            format!("{:.1} MiB", med(&s.rss) / 1024.0),
        ]);
    }
    let loads: Vec<String> = samples
        .iter()
        .zip(specs)
        .map(|(s, spec)| format!("{}: {}", spec.label, s.loads.join(" / ")))
        .collect();
    rep.section(&format!(
        "\n### {title}\n\nMedians of {} interleaved round(s) of {} s each (wrk -t{} -c{}), after a {} s warm-up. Load average before: {load_before}; at each measurement: {}.\n\n{}",
        o.rounds,
        o.duration,
        shape.threads,
        shape.connections,
        o.warmup,
        loads.join("; "),
        t.render()
    ));
    // Servers measured next to each other in a round saw about the same load: the median of
    // the per-round ratios cancels more of the machine's drift than the ratio of medians.
    let per_round = |j: Option<usize>| -> Option<(f64, Vec<f64>)> {
        let j = j?;
        let sake_i = find(Kind::Sake)?;
        let v: Vec<f64> = (0..samples[j].rps.len())
            .map(|r| samples[sake_i].rps[r] / samples[j].rps[r])
            .collect();
        Some((median(v.clone()), v))
    };
    let mut lines = String::new();
    let anonymous = find(Kind::Sake);
    let axum_jwt = find(Kind::AxumAuth);
    for (a, spec) in specs.iter().enumerate() {
        if spec.kind != Kind::SakeAuth {
            continue;
        }
        for (against, j) in [
            ("anonymous", anonymous),
            ("bare axum, jsonwebtoken", axum_jwt),
        ] {
            let Some(j) = j else { continue };
            let v: Vec<f64> = (0..samples[a].rps.len())
                .map(|r| samples[a].rps[r] / samples[j].rps[r])
                .collect();
            let each: Vec<String> = v.iter().map(|x| format!("{x:.2}")).collect();
            writeln!(
                lines,
                "- {} req/s ÷ {against}, per round: {} (median {:.2}×)",
                spec.label,
                each.join(", "),
                median(v)
            )
            .unwrap();
        }
    }
    for (name, j) in [("bare axum", ax), ("rmcp", rm)] {
        if let Some((m, v)) = per_round(j) {
            let each: Vec<String> = v.iter().map(|x| format!("{x:.2}")).collect();
            writeln!(
                lines,
                "- sake's req/s ÷ {name}'s, per round: {} (median {m:.2}×)",
                each.join(", ")
            )
            .unwrap();
        }
    }
    rep.section(&format!("\n{lines}"));
    let sake_i = find(Kind::Sake).expect("sake in every workload");
    let sake_rps = med(&samples[sake_i].rps);
    let vs = |j: Option<usize>| {
        j.map(|j| sake_rps / med(&samples[j].rps))
            .unwrap_or(f64::NAN)
    };
    // The chart: against bare axum where it ran (bus compares sake with itself and is left
    // out); for auth, sake with the token cached against bare axum checking it with
    // jsonwebtoken.
    let cached = specs
        .iter()
        .position(|s| s.kind == Kind::SakeAuth && s.label.contains("cached"));
    if let (Some(c), Some(j)) = (cached, axum_jwt) {
        rep.chart.push(chart::Group {
            label: format!("{workload} (JWT)"),
            bars: vec![(
                chart::Series::SakeOverAxum,
                med(&samples[c].rps) / med(&samples[j].rps),
            )],
        });
    } else if let Some(a) = ax {
        let mut bars = vec![(chart::Series::SakeOverAxum, vs(ax))];
        if let Some(r) = rm {
            bars.push((
                chart::Series::RmcpOverAxum,
                med(&samples[r].rps) / med(&samples[a].rps),
            ));
        }
        rep.chart.push(chart::Group {
            label: if concurrency {
                format!("{workload} c{} t{}", shape.connections, shape.threads)
            } else {
                workload.to_owned()
            },
            bars,
        });
    }
    if concurrency {
        // The targets of issue 43 (docs/benchmarks.md, "Under concurrency").
        let era = if workload == "call" {
            "2026-07-28 tools/call"
        } else {
            "session tools/call"
        };
        let what = format!(
            "{era}, {} connections, {} load thread(s)",
            shape.connections, shape.threads
        );
        let floor = if shape.connections > 32 { 0.8 } else { 0.85 };
        rep.target(
            &format!("{what} ≥ {floor}× bare axum"),
            vs(ax),
            Some(floor),
            None,
        );
        rep.target(&format!("{what} ≥ 4.5× rmcp"), vs(rm), Some(4.5), None);
        return;
    }
    match workload {
        "call" => {
            // The targets of issue 31 (docs/benchmarks.md).
            rep.target(
                "2026-07-28 tools/call ≥ 0.8× bare axum",
                vs(ax),
                Some(0.8),
                None,
            );
            rep.target("2026-07-28 tools/call ≥ 4× rmcp", vs(rm), Some(4.0), None);
        }
        "session" => rep.target(
            "legacy session tools/call ≥ 0.75× bare axum",
            vs(ax),
            Some(0.75),
            None,
        ),
        "list" => rep.target(
            "tools/list of 1,000 tools ≥ 0.8× bare axum (same bytes)",
            vs(ax),
            Some(0.8),
            None,
        ),
        "bus" => rep.target(
            "with the Redis bus and task store, a tools/call ≥ 0.95× without",
            samples.get(1).map_or(f64::NAN, |b| med(&b.rps) / sake_rps),
            Some(0.95),
            None,
        ),
        "auth" => rep.target(
            "an authenticated tools/call (token cached) ≥ 0.9× an anonymous one",
            cached.map_or(f64::NAN, |a| med(&samples[a].rps) / sake_rps),
            Some(0.9),
            None,
        ),
        _ => {}
    }
}

/// Workload 6, second part: how long a list change takes from the request that makes it to
/// a listener, on the same replica and on another one sharing Redis.
fn bus_latency(o: &Opts, rep: &mut Report, redis: &bus::Redis) {
    let samples = if o.quick { 50 } else { 500 };
    let a = start(o, &sake_bus(&redis.url));
    let b = start(o, &sake_bus(&redis.url));
    // Both replicas subscribe to Redis as they start: wait until a notification crosses.
    let measured = rt().block_on(async {
        let mut on_a = bus::Listener::open(a.addr).await?;
        let started = Instant::now();
        loop {
            let mut c = http::Conn::open(b.addr).await?;
            c.post(
                bus::TOUCH,
                &http::modern_headers("tools/call", Some("touch")),
            )
            .await?;
            let heard = tokio::time::timeout(
                Duration::from_millis(200),
                on_a.until("notifications/tools/list_changed"),
            )
            .await;
            if matches!(heard, Ok(Ok(()))) {
                break;
            }
            if started.elapsed() > Duration::from_secs(20) {
                return Err(std::io::Error::other("replica B's events never reached A"));
            }
        }
        let local = bus::time_notifications(a.addr, &mut on_a, samples).await?;
        let remote = bus::time_notifications(b.addr, &mut on_a, samples).await?;
        Ok::<_, std::io::Error>((local, remote))
    });
    let (local, remote) = measured.unwrap_or_else(|e| panic!("bus latency: {e}"));
    let pct = |v: &[f64], q: f64| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        v[((v.len() - 1) as f64 * q).round() as usize]
    };
    let mut t = Table::new(&["list change made on", "p50", "p90", "p99"]);
    for (label, v) in [
        ("the listener's replica", &local),
        ("another replica (Redis)", &remote),
    ] {
        t.row(vec![
            label.to_owned(),
            micros(pct(v, 0.5)),
            micros(pct(v, 0.9)),
            micros(pct(v, 0.99)),
        ]);
    }
    rep.section(&format!(
        "\nFrom sending the `tools/call` that publishes `tools/list_changed` to reading the notification on a `subscriptions/listen` stream, {samples} times each, one after the other (the call's own round trip included). The cross-replica path adds {} at the median.\n\n{}",
        micros(pct(&remote, 0.5) - pct(&local, 0.5)),
        t.render()
    ));
}

/// Workload 5: exec to the first answered `tools/call`, with 1,000 tools.
fn startup(o: &Opts, rep: &mut Report) {
    let specs = [axum(), sake_1k(), rmcp_1k()];
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); specs.len()];
    let mut rss: Vec<Vec<f64>> = vec![Vec::new(); specs.len()];
    let load_before = load();
    for _ in 0..o.rounds {
        for (i, spec) in specs.iter().enumerate() {
            for _ in 0..o.startup_samples {
                let started = Instant::now();
                let (child, addr) = spawn(o, spec);
                let server = Running { child, addr };
                let headers = http::modern_headers("tools/call", Some("add"));
                let elapsed = loop {
                    match http::probe(addr, http::MODERN_CALL, &headers) {
                        Some((200, _)) => break started.elapsed(),
                        Some((status, body)) => panic!(
                            "{} answered {status} at start-up: {}",
                            spec.label,
                            String::from_utf8_lossy(&body)
                        ),
                        None if started.elapsed() > Duration::from_secs(60) => {
                            panic!("{} never answered", spec.label)
                        }
                        None => std::thread::sleep(Duration::from_micros(500)),
                    }
                };
                times[i].push(elapsed.as_secs_f64() * 1e6);
                rss[i].push(server.rss());
            }
        }
    }
    let mut t = Table::new(&[
        "server (1,000 tools)",
        "exec → first answer",
        "×axum",
        "×rmcp",
        "RSS idle",
    ]);
    let m: Vec<f64> = times.iter().map(|v| median(v.clone())).collect();
    for (i, spec) in specs.iter().enumerate() {
        t.row(vec![
            spec.label.to_owned(),
            micros(m[i]),
            ratio(m[i], Some(m[0])),
            ratio(m[i], Some(m[2])),
            format!("{:.1} MiB", median(rss[i].clone()) / 1024.0),
        ]);
    }
    rep.section(&format!(
        "\n### 5. Start-up: exec to the first answered tools/call (1,000 tools)\n\nMedians of {} samples ({} rounds × {}), interleaved; polled every 0.5 ms. Bare axum has no tools to register: it is the floor of process start and bind. Load average before: {load_before}, after: {}.\n\n{}",
        o.rounds * o.startup_samples,
        o.rounds,
        o.startup_samples,
        load(),
        t.render()
    ));
    rep.target(
        "start-up to the first answered call with 1,000 tools ≤ rmcp's",
        m[1] / m[2],
        None,
        Some(1.0),
    );
}

/// Opens `count` sessions over `conc` connections; each is used once (`tools/call`).
fn open_sessions(addr: SocketAddr, count: usize, conc: usize) -> (usize, usize, Duration) {
    let started = Instant::now();
    let next = Arc::new(AtomicUsize::new(0));
    let errors = Arc::new(AtomicUsize::new(0));
    let first_error: Arc<Mutex<Option<String>>> = Arc::default();
    rt().block_on(async {
        let mut tasks = Vec::new();
        for _ in 0..conc {
            let (next, errors, first_error) = (next.clone(), errors.clone(), first_error.clone());
            tasks.push(tokio::spawn(async move {
                let mut conn = None;
                while next.fetch_add(1, Ordering::Relaxed) < count {
                    let c = match conn.take() {
                        Some(c) => c,
                        None => match http::Conn::open(addr).await {
                            Ok(c) => c,
                            Err(e) => {
                                errors.fetch_add(1, Ordering::Relaxed);
                                first_error.lock().unwrap().get_or_insert(e.to_string());
                                continue;
                            }
                        },
                    };
                    let mut c = c;
                    let r = async {
                        let sid = http::open_session(&mut c).await?;
                        http::session_call(&mut c, &sid).await
                    }
                    .await;
                    match r {
                        Ok(()) => conn = Some(c),
                        Err(e) => {
                            errors.fetch_add(1, Ordering::Relaxed);
                            first_error.lock().unwrap().get_or_insert(e.to_string());
                        }
                    }
                }
            }));
        }
        for t in tasks {
            let _ = t.await;
        }
    });
    let errors = errors.load(Ordering::Relaxed);
    if let Some(e) = first_error.lock().unwrap().as_ref() {
        eprintln!("  first session error: {e}");
    }
    (count - errors.min(count), errors, started.elapsed())
}

/// Workload 6: RSS after 100 and after N legacy sessions, each opened and used once.
fn memory(o: &Opts, rep: &mut Report) {
    let specs = [sake(), sake_tasks(), rmcp_legacy()];
    let rounds = o.rounds;
    let mut r100: Vec<Vec<f64>> = vec![Vec::new(); specs.len()];
    let mut rn: Vec<Vec<f64>> = vec![Vec::new(); specs.len()];
    let mut rate: Vec<Vec<f64>> = vec![Vec::new(); specs.len()];
    let mut errs = [0usize; 3];
    let counts = [o.sessions, o.sessions, o.rmcp_sessions];
    let load_before = load();
    for _ in 0..rounds {
        for (i, spec) in specs.iter().enumerate() {
            let server = start(o, spec);
            if spec.program == "sake-server-tasks" {
                check_tasks_on(spec, server.addr);
            }
            let (_, e1, _) = open_sessions(server.addr, 100, 8);
            std::thread::sleep(Duration::from_millis(500));
            r100[i].push(server.rss());
            let (ok, e2, took) = open_sessions(server.addr, counts[i] - 100, 8);
            std::thread::sleep(Duration::from_millis(500));
            rn[i].push(server.rss());
            rate[i].push(ok as f64 / took.as_secs_f64());
            errs[i] += e1 + e2;
            eprintln!(
                "  memory {:<14} RSS after 100: {:.1} MiB, after {}: {:.1} MiB, {} sessions/s, {} errors (load {})",
                spec.label,
                r100[i].last().unwrap() / 1024.0,
                counts[i],
                rn[i].last().unwrap() / 1024.0,
                thousands(*rate[i].last().unwrap()),
                e1 + e2,
                load()
            );
        }
    }
    let n = thousands(o.sessions as f64);
    let mut t = Table::new(&[
        "server (session mode)",
        "sessions N",
        "RSS after 100",
        "RSS after N",
        "growth",
        "KiB per session",
        "sessions/s (open + call)",
        "errors",
    ]);
    let mid = |v: &Vec<f64>| median(v.clone());
    for (i, spec) in specs.iter().enumerate() {
        t.row(vec![
            spec.label.to_owned(),
            thousands(counts[i] as f64),
            format!("{:.1} MiB", mid(&r100[i]) / 1024.0),
            format!("{:.1} MiB", mid(&rn[i]) / 1024.0),
            ratio(mid(&rn[i]), Some(mid(&r100[i]))),
            format!(
                "{:.2}",
                (mid(&rn[i]) - mid(&r100[i])) / (counts[i] - 100) as f64
            ),
            thousands(mid(&rate[i])),
            errs[i].to_string(),
        ]);
    }
    rep.section(&format!(
        "\n### 6. Memory: RSS after {n} distinct 2025-11-25 sessions, each opened and used once\n\nEach session: `initialize`, `notifications/initialized`, one `tools/call`, over 8 keep-alive connections. rmcp keeps a worker and state per session (until 300 s idle), so it gets {} sessions, not to fill a shared machine's memory; its growth per session is the figure to compare. Medians of {rounds} round(s). Load average before: {load_before}, after: {}.\n\n{}",
        thousands(o.rmcp_sessions as f64),
        load(),
        t.render()
    ));
    rep.target(
        &format!("RSS after {n} sessions within 10% of after 100"),
        mid(&rn[0]) / mid(&r100[0]),
        None,
        Some(1.1),
    );
    rep.target(
        &format!("with the tasks extension on, RSS after {n} sessions within 10% of after 100"),
        mid(&rn[1]) / mid(&r100[1]),
        None,
        Some(1.1),
    );
}

/// Checks that `sake-server-tasks` advertises the tasks extension (`server/discover`).
fn check_tasks_on(spec: &Spec, addr: SocketAddr) {
    let body = http::MODERN_LIST.replace("tools/list", "server/discover");
    let r = http::probe(addr, &body, &http::modern_headers("server/discover", None));
    if !matches!(&r, Some((200, b)) if contains(b, b"io.modelcontextprotocol/tasks")) {
        panic!(
            "{} does not advertise the tasks extension: {:?}",
            spec.label,
            r.map(|(s, b)| (s, String::from_utf8_lossy(&b).into_owned()))
        );
    }
}

/// The "allocs" workload: allocations per request in bare axum and sake, counted by the bench
/// servers' counting allocator (`BENCH_COUNT_ALLOCS=1`, benches/servers/alloc_count.rs): the
/// count printed on `SIGUSR1` after a warm-up and again after `counted` more requests, on one
/// connection and on 32 and 256 at once, for the 2026-07-28 call and the session call.
fn allocs(o: &Opts, rep: &mut Report) {
    let (warm, counted) = if o.quick {
        (300, 2_000)
    } else {
        (2_000, 20_000)
    };
    let mut t = Table::new(&[
        "workload",
        "connections",
        "bare axum",
        "sake",
        "sake − axum",
        "reallocs: axum",
        "sake",
    ]);
    for workload in ["call", "session"] {
        for conns in [1usize, 32, 256] {
            let mut per = Vec::new();
            for mut spec in [axum(), sake()] {
                spec.env.push(("BENCH_COUNT_ALLOCS".into(), "1".into()));
                let server = start(o, &spec);
                let log = o.bench_dir.join(format!(
                    "target/bench-logs/{}-{}.log",
                    spec.program,
                    server.addr.port()
                ));
                let addr = server.addr;
                let counts = rt().block_on(async {
                    let req = if spec.kind == Kind::Axum && workload == "session" {
                        // Bare axum has no sessions: the same bytes, its session id a stand-in.
                        replay::bare_session_request()
                    } else {
                        replay::request(addr, workload)
                            .await?
                            .expect("a replayable workload")
                    };
                    let req = Arc::new(req);
                    let c = replay::open(addr, conns).await?;
                    let c = replay::drive(c, &req, warm).await?;
                    let before = alloc_counts(&server, &log, 1)?;
                    let c = replay::drive(c, &req, counted).await?;
                    let after = alloc_counts(&server, &log, 2)?;
                    drop(c);
                    Ok::<_, std::io::Error>((before, after))
                });
                let ((a0, r0), (a1, r1)) = counts.unwrap_or_else(|e| {
                    panic!("{}: counting allocations ({workload}): {e}", spec.label)
                });
                per.push((
                    (a1 - a0) as f64 / counted as f64,
                    (r1 - r0) as f64 / counted as f64,
                ));
            }
            let ((ax, axr), (sk, skr)) = (per[0], per[1]);
            eprintln!("  allocs {workload} c{conns}: bare axum {ax:.2}, sake {sk:.2} per request");
            t.row(vec![
                workload.to_owned(),
                conns.to_string(),
                format!("{ax:.2}"),
                format!("{sk:.2}"),
                format!("{:+.2}", sk - ax),
                format!("{axr:.2}"),
                format!("{skr:.2}"),
            ]);
            rep.target(
                &format!(
                    "{workload}, {conns} connection(s): allocations per request ≤ bare axum's + 2 (sake − axum)"
                ),
                sk - ax,
                None,
                Some(2.0),
            );
        }
    }
    rep.section(&format!(
        "\n### Allocations per request (counting allocator)\n\nAllocations (`alloc` and `alloc_zeroed`) and reallocations per request, counted in the server over {counted} requests after {warm} of warm-up, sent by `sake-bench` on 1, 32 or 256 keep-alive connections at once (the session call: one session shared). Bare axum answers the session call's request without a session (the same bytes, its `Mcp-Session-Id` a stand-in as long as sake's).\n\n{}",
        t.render()
    ));
}

/// Sends `SIGUSR1` to the server and reads its `n`-th `BENCH_ALLOCS` line from `log`:
/// (allocations, reallocations).
fn alloc_counts(server: &Running, log: &Path, n: usize) -> std::io::Result<(u64, u64)> {
    let killed = Command::new("kill")
        .args(["-USR1", &server.pid().to_string()])
        .status()?;
    if !killed.success() {
        return Err(std::io::Error::other("kill -USR1 failed"));
    }
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(10) {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        // Whole lines only: the server may be writing the last one.
        let whole = text.rfind('\n').map_or("", |end| &text[..end]);
        if let Some(line) = whole
            .lines()
            .filter(|l| l.starts_with("BENCH_ALLOCS "))
            .nth(n - 1)
        {
            let field = |name: &str| -> Option<u64> {
                line.split_whitespace()
                    .find_map(|f| f.strip_prefix(name))
                    .and_then(|v| v.parse().ok())
            };
            return match (field("allocs="), field("reallocs=")) {
                (Some(a), Some(r)) => Ok((a, r)),
                _ => Err(std::io::Error::other(format!("unreadable: {line}"))),
            };
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Err(std::io::Error::other(format!(
        "no BENCH_ALLOCS line {n} in {} (started without BENCH_COUNT_ALLOCS=1?)",
        log.display()
    )))
}

/// `sake-bench replay <port> <call|session|list> <count> [<connections>]`: sends `count`
/// requests of a workload on one keep-alive connection one after another, or spread over
/// `connections` at once (each sending its next request when its previous one is answered),
/// for profiling a server under callgrind or perf (instruction counts per request are stable
/// on a busy machine, wall-clock is not).
fn replay(mut args: impl Iterator<Item = String>) {
    let port: u16 = args
        .next()
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| usage());
    let workload = args.next().unwrap_or_else(|| usage());
    let count: usize = args.next().and_then(|p| p.parse().ok()).unwrap_or(10_000);
    let connections: usize = args
        .next()
        .map(|c| c.parse().unwrap_or_else(|_| usage()))
        .unwrap_or(1)
        .max(1);
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let started = Instant::now();
    rt().block_on(async move {
        let req = replay::request(addr, &workload)
            .await
            .expect("a session")
            .unwrap_or_else(|| usage());
        let conns = replay::open(addr, connections).await.expect("connect");
        replay::drive(conns, &Arc::new(req), count)
            .await
            .expect("every answer 200");
    });
    eprintln!(
        "{count} requests on {connections} connection(s) in {:.2?}",
        started.elapsed()
    );
}

fn main() {
    let mut args = std::env::args().skip(1).peekable();
    if args.peek().map(String::as_str) == Some("replay") {
        args.next();
        return replay(args);
    }
    let o = parse_opts();
    let which = Command::new("wrk").arg("--version").output();
    if which.is_err() {
        eprintln!("wrk is missing: install it with `apt-get install wrk` (benches/run.sh does)");
        std::process::exit(1);
    }
    let mut rep = Report {
        markdown: String::new(),
        targets: Vec::new(),
        chart: Vec::new(),
    };
    let commit = Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(&o.bench_dir)
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    let dirty = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .current_dir(&o.bench_dir)
        .output()
        .map(|o| !o.stdout.is_empty())
        .unwrap_or(false);
    let date = Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    let uptime = Command::new("uptime")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|l| l.trim_start_matches([' ', '\t', ':']).to_owned())
        })
        .unwrap_or_default();
    rep.section(&format!(
        "## Results: {date}, commit {commit}{}\n\n- `uptime` at start: `{uptime}`\n- CPU: {cpu}, {} online; servers on core {}, load generator on core {}\n- {} round(s), {} s per measurement, {} connections{}\n",
        if dirty { " (with uncommitted changes)" } else { "" },
        std::fs::read_to_string("/proc/cpuinfo")
            .map(|c| c.lines().filter(|l| l.starts_with("processor")).count())
            .unwrap_or(0),
        o.server_core,
        o.load_core,
        o.rounds,
        o.duration,
        o.connections,
        if o.quick { " — **quick smoke run, not a measurement**" } else { "" },
    ));
    let mut list_file = None;
    if o.selected("list") {
        // The bare axum route returns the bytes of sake's own 1,000-tool list.
        let server = start(&o, &sake_1k());
        let (status, body) = http::probe(
            server.addr,
            http::MODERN_LIST,
            &http::modern_headers("tools/list", None),
        )
        .expect("sake-server-1k answers tools/list");
        assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
        #[derive(serde::Deserialize)]
        struct Resp<'a> {
            #[serde(borrow)]
            result: &'a serde_json::value::RawValue,
        }
        let r: Resp<'_> = serde_json::from_slice(&body).expect("a JSON-RPC result");
        let path = o.bench_dir.join("target/bench-logs/tools_list_1k.json");
        std::fs::write(&path, r.result.get()).expect("write the list");
        list_file = Some(path);
    }
    for w in WORKLOADS {
        if !o.selected(w) {
            continue;
        }
        eprintln!("== {w} (load {})", load());
        match w {
            "call" => throughput(
                &o,
                &mut rep,
                w,
                "1. tools/call on 2026-07-28 (JSON response)",
                &[axum(), sake(), rmcp_stateless()],
            ),
            "session" => throughput(
                &o,
                &mut rep,
                w,
                "2. tools/call inside a 2025-11-25 session",
                &[axum(), sake(), rmcp_legacy()],
            ),
            "concurrency" => {
                for shape in SHAPES {
                    for (workload, what, specs) in [
                        (
                            "call",
                            "tools/call on 2026-07-28",
                            [axum(), sake(), rmcp_stateless()],
                        ),
                        (
                            "session",
                            "tools/call inside a 2025-11-25 session",
                            [axum(), sake(), rmcp_legacy()],
                        ),
                    ] {
                        let title = format!(
                            "Under concurrency: {what}, {} connections, {} load thread(s)",
                            shape.connections, shape.threads
                        );
                        throughput_shaped(&o, &mut rep, workload, shape, true, &title, &specs);
                    }
                }
            }
            "allocs" => allocs(&o, &mut rep),
            "list" => {
                let mut ax = axum();
                ax.env.push((
                    "AXUM_TOOLS_LIST".into(),
                    list_file.as_ref().unwrap().display().to_string(),
                ));
                throughput(
                    &o,
                    &mut rep,
                    w,
                    "3. tools/list with 1,000 tools (2026-07-28)",
                    &[ax, sake_1k(), rmcp_1k()],
                )
            }
            "progress" => throughput(
                &o,
                &mut rep,
                w,
                "4. tools/call streaming 10 progress notifications over SSE (2026-07-28)",
                &[axum(), sake(), rmcp_stateless()],
            ),
            "auth" => throughput(
                &o,
                &mut rep,
                w,
                "5. tools/call on 2026-07-28 with a bearer token (HS256 JWT; cached, and verified each time) against none",
                &[
                    axum(),
                    axum_jwt(),
                    sake(),
                    sake_auth(true),
                    sake_auth(false),
                ],
            ),
            "bus" => {
                let redis = bus::Redis::start();
                throughput(
                    &o,
                    &mut rep,
                    w,
                    "6. tools/call on 2026-07-28, alone and with the Redis event bus and task store (same binary)",
                    &[sake(), sake_bus(&redis.url)],
                );
                bus_latency(&o, &mut rep, &redis);
            }
            "stdio" => stdio::workload(&o, &mut rep),
            "pages" => pages::workload(&o, &mut rep),
            "startup" => startup(&o, &mut rep),
            "memory" => memory(&o, &mut rep),
            "build" => {
                let r = buildcost::run(&o, &mut |s| rep.section(s));
                if let Some(x) = r {
                    rep.target(
                        "incremental release rebuild ≤ 3× bare axum",
                        x,
                        None,
                        Some(3.0),
                    );
                }
            }
            _ => unreachable!(),
        }
    }
    let mut summary = String::from("\n### Targets\n\n| target | figure | met |\n|:--|--:|:-:|\n");
    for (name, met, fig) in &rep.targets {
        writeln!(
            summary,
            "| {name} | {fig} | {} |",
            if *met { "yes" } else { "**no**" }
        )
        .unwrap();
    }
    writeln!(summary, "\n`uptime` at the end: `{}`", {
        Command::new("uptime")
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default()
    })
    .unwrap();
    rep.section(&summary);
    if let Some(out) = &o.out {
        std::fs::write(out, &rep.markdown).expect("write --out");
        eprintln!("results written to {}", out.display());
    }
    let svg = match &o.out {
        Some(out) => out.with_extension("svg"),
        None => o.bench_dir.join("target/results.svg"),
    };
    let title = format!(
        "sake, rmcp and bare axum: throughput ratios ({date}, {commit}{})",
        if o.quick { ", quick smoke run" } else { "" }
    );
    if rep.chart.is_empty() {
        eprintln!("no chart: no throughput workload with a baseline ran");
    } else {
        match chart::write(&svg, &title, &rep.chart) {
            Ok(()) => eprintln!("chart written to {}", svg.display()),
            Err(e) => eprintln!("no chart ({}): {e}", svg.display()),
        }
    }
}
