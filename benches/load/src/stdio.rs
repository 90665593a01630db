//! Workload 10: `tools/call add` pipelined through a server's stdin, answers read from its
//! stdout, against sake's stdio transport and rmcp's.
//!
//! One thread writes requests 1..N, never more than `window` unanswered; another reads the
//! answers line by line, checks each (`"text":"5"`, its id seen once) and frees a slot. The
//! clock runs from the first request written to the last answer read; the process start and
//! the handshake (for a 2025-11-25 session) are not in it.

use std::fmt::Write as _;
use std::io::{BufRead as _, BufReader, BufWriter, Write as _};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::chart::{Group, Series};
use crate::stats::{Table, median, ratio, thousands};
use crate::{Opts, Report, contains, http, load, rss_kib};

/// The most requests written and not yet answered. sake runs at most 256 requests of one
/// stdio connection at once (`Limits::max_requests_per_session`) and answers more with an
/// error: half of it keeps the pipe full without touching that bound.
const WINDOW: usize = 128;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Lifecycle {
    /// 2026-07-28: no handshake, `_meta` on every request.
    Modern,
    /// 2025-11-25: `initialize`, `notifications/initialized`, then plain requests.
    Session,
}

impl Lifecycle {
    fn label(self) -> &'static str {
        match self {
            Lifecycle::Modern => "2026-07-28, no handshake",
            Lifecycle::Session => "2025-11-25 session",
        }
    }
    /// The request, split around its id.
    fn request(self) -> (&'static str, &'static str) {
        const PREFIX: &str = r#"{"jsonrpc":"2.0","id":"#;
        let body = match self {
            Lifecycle::Modern => http::MODERN_CALL,
            Lifecycle::Session => http::LEGACY_CALL,
        };
        let rest = body
            .strip_prefix(r#"{"jsonrpc":"2.0","id":1"#)
            .expect("the bodies start with id 1");
        (PREFIX, rest)
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Sake,
    Rmcp,
}

struct Server {
    label: &'static str,
    kind: Kind,
    program: &'static str,
    args: &'static [&'static str],
}

const SERVERS: [Server; 3] = [
    Server {
        label: "sake (serve_stdio)",
        kind: Kind::Sake,
        program: "sake-server",
        args: &["stdio"],
    },
    Server {
        label: "rmcp (transport::stdio)",
        kind: Kind::Rmcp,
        program: "rmcp-server",
        args: &["stdio"],
    },
    Server {
        label: "rmcp (transport::stdio_pipes)",
        kind: Kind::Rmcp,
        program: "rmcp-server",
        args: &["stdio-pipes"],
    },
];

/// A server process on pipes, killed when dropped.
struct Piped {
    child: Child,
}

impl Drop for Piped {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

struct Outcome {
    rps: f64,
    errors: usize,
    rss_kib: f64,
}

/// Starts `server` on pipes (pinned to the server core), opens the lifecycle, then pipelines
/// `n` calls.
fn run_once(o: &Opts, server: &Server, lifecycle: Lifecycle, n: usize) -> Result<Outcome, String> {
    let logs = o.bench_dir.join("target/bench-logs");
    let _ = std::fs::create_dir_all(&logs);
    let log = std::fs::File::create(logs.join(format!("{}-stdio.log", server.program)))
        .map_err(|e| format!("a log file: {e}"))?;
    let child = Command::new("taskset")
        .arg("-c")
        .arg(&o.server_core)
        .arg(o.bin_dir.join(server.program))
        .args(server.args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(log)
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", server.program))?;
    let mut p = Piped { child };
    let pid = p.child.id();
    let stdin = p.child.stdin.take().ok_or("no stdin")?;
    let stdout = p.child.stdout.take().ok_or("no stdout")?;
    let mut w = BufWriter::with_capacity(1 << 16, stdin);
    let mut r = BufReader::with_capacity(1 << 16, stdout);

    // The reader runs on its own thread from the start, so that a server that hangs (or dies)
    // ends the run with an error after a timeout instead of blocking it.
    let (first_tx, first_rx) = mpsc::channel::<Result<Vec<u8>, String>>();
    let (go_tx, go_rx) = mpsc::channel::<Instant>();
    let (slots_tx, slots_rx) = mpsc::sync_channel::<()>(WINDOW);
    let reader = std::thread::spawn(move || -> Result<(usize, usize, Instant), String> {
        let mut line = Vec::with_capacity(512);
        // The answer to request 0 (the probe, or `initialize`).
        loop {
            line.clear();
            match r.read_until(b'\n', &mut line) {
                Ok(0) => {
                    let _ = first_tx.send(Err("the server closed stdout".into()));
                    return Err("closed".into());
                }
                Ok(_) if id_of(&line) == Some(0) => break,
                Ok(_) => continue,
                Err(e) => {
                    let _ = first_tx.send(Err(e.to_string()));
                    return Err(e.to_string());
                }
            }
        }
        let _ = first_tx.send(Ok(line.clone()));
        let Ok(_start) = go_rx.recv() else {
            return Err("not started".into());
        };
        let mut seen = vec![false; n + 1];
        let (mut answered, mut errors) = (0usize, 0usize);
        while answered < n {
            line.clear();
            match r.read_until(b'\n', &mut line) {
                Ok(0) => return Err(format!("stdout closed after {answered} answers")),
                Ok(_) => {}
                Err(e) => return Err(e.to_string()),
            }
            // Notifications (no id) are not answers.
            let Some(id) = id_of(&line) else { continue };
            let fresh = usize::try_from(id)
                .ok()
                .filter(|&i| (1..=n).contains(&i) && !seen[i]);
            match fresh {
                Some(i) => seen[i] = true,
                None => {
                    errors += 1;
                    continue;
                }
            }
            answered += 1;
            if !(contains(&line, br#""result""#) && contains(&line, br#""text":"5""#)) {
                if errors == 0 {
                    eprintln!("  first wrong answer: {}", String::from_utf8_lossy(&line));
                }
                errors += 1;
            }
            // A slot for the next request.
            let _ = slots_rx.recv();
        }
        Ok((answered, errors, Instant::now()))
    });

    let (prefix, rest) = lifecycle.request();
    let write_err = |e: std::io::Error| format!("writing to {}: {e}", server.label);
    match lifecycle {
        Lifecycle::Modern => writeln!(w, "{prefix}0{rest}").map_err(write_err)?,
        Lifecycle::Session => {
            let init = http::INITIALIZE;
            writeln!(w, "{init}").map_err(write_err)?;
        }
    }
    w.flush().map_err(write_err)?;
    let first = first_rx
        .recv_timeout(Duration::from_secs(60))
        .map_err(|_| format!("{} did not answer request 0", server.label))??;
    let first_ok = match lifecycle {
        Lifecycle::Modern => contains(&first, br#""text":"5""#),
        Lifecycle::Session => contains(&first, br#""protocolVersion":"2025-11-25""#),
    };
    if !first_ok {
        return Err(format!(
            "{} answered request 0 wrongly: {}",
            server.label,
            String::from_utf8_lossy(&first)
        ));
    }
    if lifecycle == Lifecycle::Session {
        writeln!(w, "{}", http::INITIALIZED).map_err(write_err)?;
    }

    let start = Instant::now();
    let _ = go_tx.send(start);
    let writer = std::thread::spawn(move || -> Result<BufWriter<ChildStdin>, String> {
        for id in 1..=n {
            // Take a slot; flush what is buffered before waiting for one.
            if let Err(mpsc::TrySendError::Full(())) = slots_tx.try_send(()) {
                w.flush().map_err(|e| e.to_string())?;
                slots_tx.send(()).map_err(|_| "the reader stopped")?;
            }
            writeln!(w, "{prefix}{id}{rest}").map_err(|e| e.to_string())?;
        }
        w.flush().map_err(|e| e.to_string())?;
        // Stdin stays open until every answer is read: sake cancels what runs at EOF.
        Ok(w)
    });
    // The reader is the one to wait for; a hung server is killed after a generous timeout.
    let deadline = Instant::now() + Duration::from_secs(60 + (n / 1_000) as u64);
    while !reader.is_finished() {
        if Instant::now() > deadline {
            let _ = p.child.kill();
            let _ = reader.join();
            return Err(format!("{} did not answer in time", server.label));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let (answered, errors, end) = reader
        .join()
        .map_err(|_| "the reader panicked".to_owned())??;
    let rss_kib = rss_kib(pid).unwrap_or(f64::NAN);
    let stdin = writer
        .join()
        .map_err(|_| "the writer panicked".to_owned())??;
    drop(stdin);
    // EOF on stdin: both servers stop; give them a moment, then the guard kills.
    let stopped = Instant::now();
    while stopped.elapsed() < Duration::from_secs(2) {
        if matches!(p.child.try_wait(), Ok(Some(_))) {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(Outcome {
        rps: answered as f64 / (end - start).as_secs_f64(),
        errors,
        rss_kib,
    })
}

/// The `id` of a JSON-RPC message line, when it is a number.
fn id_of(line: &[u8]) -> Option<u64> {
    #[derive(serde::Deserialize)]
    struct Id {
        id: Option<u64>,
    }
    serde_json::from_slice::<Id>(line).ok()?.id
}

/// Workload 10: every server in both lifecycles, `rounds` times, interleaved.
pub fn workload(o: &Opts, rep: &mut Report) {
    let n = if o.quick { 20_000 } else { 200_000 };
    let cases: Vec<(Lifecycle, usize)> = [Lifecycle::Modern, Lifecycle::Session]
        .into_iter()
        .flat_map(|l| (0..SERVERS.len()).map(move |s| (l, s)))
        .collect();
    let mut rps: Vec<Vec<f64>> = vec![Vec::new(); cases.len()];
    let mut errors = vec![0usize; cases.len()];
    let mut rss: Vec<Vec<f64>> = vec![Vec::new(); cases.len()];
    let load_before = load();
    for round in 0..o.rounds {
        for (c, &(lifecycle, s)) in cases.iter().enumerate() {
            let server = &SERVERS[s];
            let l = load();
            let out = run_once(o, server, lifecycle, n)
                .unwrap_or_else(|e| panic!("stdio, {}: {e}", lifecycle.label()));
            eprintln!(
                "  stdio round {} {:<30} {:<24} {:>9} req/s  errors {}  (load {l})",
                round + 1,
                server.label,
                lifecycle.label(),
                thousands(out.rps),
                out.errors
            );
            rps[c].push(out.rps);
            errors[c] += out.errors;
            rss[c].push(out.rss_kib);
        }
    }
    let med = |v: &Vec<f64>| median(v.clone());
    let mut t = Table::new(&[
        "server (stdio transport)",
        "revision",
        "req/s",
        "×rmcp stdio()",
        "×rmcp stdio_pipes()",
        "errors",
        "RSS after",
    ]);
    let at = |l: Lifecycle, s: usize| cases.iter().position(|&c| c == (l, s));
    let mut lines = String::new();
    for (c, &(lifecycle, s)) in cases.iter().enumerate() {
        let base = |k: usize| at(lifecycle, k).map(|j| med(&rps[j]));
        t.row(vec![
            SERVERS[s].label.to_owned(),
            lifecycle.label().to_owned(),
            thousands(med(&rps[c])),
            ratio(med(&rps[c]), base(1)),
            ratio(med(&rps[c]), base(2)),
            errors[c].to_string(),
            format!("{:.1} MiB", med(&rss[c]) / 1024.0),
        ]);
    }
    for lifecycle in [Lifecycle::Modern, Lifecycle::Session] {
        let sake = at(lifecycle, 0).map(|j| med(&rps[j])).unwrap_or(f64::NAN);
        // rmcp's faster stdio transport of the two is the one to beat.
        let best = (1..SERVERS.len())
            .filter(|&s| SERVERS[s].kind == Kind::Rmcp)
            .filter_map(|s| at(lifecycle, s))
            .max_by(|&a, &b| med(&rps[a]).total_cmp(&med(&rps[b])));
        let Some(best) = best else { continue };
        let per_round: Vec<String> = (0..o.rounds)
            .filter_map(|r| {
                let a = rps[at(lifecycle, 0)?].get(r)?;
                let b = rps[best].get(r)?;
                Some(format!("{:.2}", a / b))
            })
            .collect();
        let x = sake / med(&rps[best]);
        writeln!(
            lines,
            "- {}: sake's req/s ÷ {}'s, per round: {} (ratio of medians {x:.2}×)",
            lifecycle.label(),
            SERVERS[cases[best].1].label,
            per_round.join(", "),
        )
        .unwrap();
        rep.target(
            &format!(
                "stdio tools/call ({}) ≥ 3× rmcp (its faster stdio transport)",
                lifecycle.label()
            ),
            x,
            Some(3.0),
            None,
        );
        rep.chart.push(Group {
            label: match lifecycle {
                Lifecycle::Modern => "stdio (2026-07-28)".into(),
                Lifecycle::Session => "stdio (2025-11-25)".into(),
            },
            bars: vec![(Series::SakeOverRmcp, x)],
        });
    }
    rep.section(&format!(
        "\n### 10. tools/call pipelined over stdio\n\n{} calls of `add` written to the server's stdin by one thread, at most {WINDOW} unanswered, the answers read line by line from its stdout by another and each checked; from the first request written to the last answer read (process start and handshake excluded). Servers started by the driver on pipes, pinned to core {}. rmcp through both of its stdio transports: `transport::stdio()` (Tokio's blocking stdin and stdout) and `transport::stdio_pipes()` (non-blocking pipes). Medians of {} interleaved round(s). Load average before: {load_before}, after: {}.\n\n{}\n{lines}",
        thousands(n as f64),
        o.server_core,
        o.rounds,
        load(),
        t.render()
    ));
}
