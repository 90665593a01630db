//! Workload 11: walking the whole 1,000-tool list through `tools/list` pages (`cursor` in,
//! `nextCursor` out) on 2026-07-28, over a few keep-alive connections.
//!
//! sake splits its list with `Server::page_size` (`sake-server-1k` reads it from
//! `SAKE_BENCH_PAGE_SIZE`). rmcp 3.11's `#[tool_handler]` answers every `tools/list` with the
//! whole list and no `nextCursor` (its generated `list_tools` ignores the cursor), so its walk
//! is one request; sake's one-page list is measured beside it for that comparison.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::chart::{Group, Series};
use crate::stats::{Table, median, micros, ratio, thousands};
use crate::{Kind, Opts, Report, Spec, http, load, rmcp_1k, sake_1k, start};

/// Items per page for sake's paged list: 10 pages of 1,000 tools.
pub const PAGE_SIZE: usize = 100;
/// Keep-alive connections, each walking the list again and again.
const CONNECTIONS: usize = 4;
const TOOLS: usize = 1_000;

fn sake_paged() -> Spec {
    let mut s = sake_1k();
    s.label = "sake, 100 per page";
    s.env
        .push(("SAKE_BENCH_PAGE_SIZE".into(), PAGE_SIZE.to_string()));
    s
}

fn sake_one_page() -> Spec {
    let mut s = sake_1k();
    s.label = "sake, one page";
    s
}

fn rmcp_one_page() -> Spec {
    let mut s = rmcp_1k();
    s.label = "rmcp, one page (no pagination)";
    s
}

#[derive(serde::Deserialize)]
struct Page<'a> {
    #[serde(borrow)]
    result: Option<PageResult<'a>>,
}

#[derive(serde::Deserialize)]
struct PageResult<'a> {
    #[serde(borrow)]
    tools: Vec<Named<'a>>,
    #[serde(rename = "nextCursor", borrow)]
    next_cursor: Option<Cow<'a, str>>,
}

#[derive(serde::Deserialize)]
struct Named<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
}

/// One walk from the first page to the last: the number of pages, or what was wrong.
async fn walk(conn: &mut http::Conn) -> std::io::Result<usize> {
    let headers = http::modern_headers("tools/list", None);
    let mut names: HashSet<String> = HashSet::with_capacity(TOOLS);
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let body = match &cursor {
            None => http::MODERN_LIST.to_owned(),
            Some(c) => {
                let c = serde_json::to_string(c).map_err(std::io::Error::other)?;
                http::MODERN_LIST.replacen(
                    r#""params":{"#,
                    &format!(r#""params":{{"cursor":{c},"#),
                    1,
                )
            }
        };
        let a = conn.post(body, &headers).await?;
        pages += 1;
        let page: Page<'_> = serde_json::from_slice(&a.body).map_err(std::io::Error::other)?;
        let Some(result) = page.result.filter(|_| a.status == 200) else {
            return Err(std::io::Error::other(format!(
                "page {pages} answered {}: {}",
                a.status,
                String::from_utf8_lossy(&a.body)
            )));
        };
        let before = names.len();
        let count = result.tools.len();
        names.extend(result.tools.into_iter().map(|t| t.name.into_owned()));
        if names.len() != before + count {
            return Err(std::io::Error::other(format!(
                "page {pages} repeats a tool name"
            )));
        }
        match result.next_cursor {
            Some(next) if pages < TOOLS => cursor = Some(next.into_owned()),
            Some(_) => return Err(std::io::Error::other("more pages than tools")),
            None => break,
        }
    }
    if names.len() != TOOLS {
        return Err(std::io::Error::other(format!(
            "a walk of {pages} page(s) found {} distinct tools, not {TOOLS}",
            names.len()
        )));
    }
    Ok(pages)
}

struct Measured {
    walks: usize,
    pages: usize,
    errors: usize,
    elapsed: Duration,
    walk_p50_us: f64,
}

/// Walks over [`CONNECTIONS`] connections for `seconds`.
fn load_for(addr: SocketAddr, seconds: u32) -> Measured {
    let walks = Arc::new(AtomicUsize::new(0));
    let pages = Arc::new(AtomicUsize::new(0));
    let errors = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let times = crate::rt().block_on(async {
        let mut tasks = Vec::new();
        for _ in 0..CONNECTIONS {
            let (walks, pages, errors, stop) =
                (walks.clone(), pages.clone(), errors.clone(), stop.clone());
            tasks.push(tokio::spawn(async move {
                let mut times = Vec::new();
                let mut conn = None;
                while !stop.load(Ordering::Relaxed) {
                    let mut c = match conn.take() {
                        Some(c) => c,
                        None => match http::Conn::open(addr).await {
                            Ok(c) => c,
                            Err(_) => {
                                errors.fetch_add(1, Ordering::Relaxed);
                                tokio::time::sleep(Duration::from_millis(10)).await;
                                continue;
                            }
                        },
                    };
                    let t = Instant::now();
                    match walk(&mut c).await {
                        Ok(n) => {
                            times.push(t.elapsed().as_secs_f64() * 1e6);
                            walks.fetch_add(1, Ordering::Relaxed);
                            pages.fetch_add(n, Ordering::Relaxed);
                            conn = Some(c);
                        }
                        Err(e) => {
                            if errors.fetch_add(1, Ordering::Relaxed) == 0 {
                                eprintln!("  first pages error: {e}");
                            }
                        }
                    }
                }
                times
            }));
        }
        tokio::time::sleep(Duration::from_secs(u64::from(seconds))).await;
        stop.store(true, Ordering::Relaxed);
        let mut all = Vec::new();
        for t in tasks {
            all.extend(t.await.unwrap_or_default());
        }
        all
    });
    Measured {
        walks: walks.load(Ordering::Relaxed),
        pages: pages.load(Ordering::Relaxed),
        errors: errors.load(Ordering::Relaxed),
        elapsed: started.elapsed(),
        walk_p50_us: median(times),
    }
}

/// Workload 11: every server, `rounds` times, interleaved.
pub fn workload(o: &Opts, rep: &mut Report) {
    let specs = [sake_paged(), sake_one_page(), rmcp_one_page()];
    let mut walks_s: Vec<Vec<f64>> = vec![Vec::new(); specs.len()];
    let mut pages_s: Vec<Vec<f64>> = vec![Vec::new(); specs.len()];
    let mut per_walk: Vec<Vec<f64>> = vec![Vec::new(); specs.len()];
    let mut p50: Vec<Vec<f64>> = vec![Vec::new(); specs.len()];
    let mut errors = vec![0usize; specs.len()];
    let mut rss: Vec<Vec<f64>> = vec![Vec::new(); specs.len()];
    let load_before = load();
    for round in 0..o.rounds {
        for (i, spec) in specs.iter().enumerate() {
            let server = start(o, spec);
            // A walk checked before the load: the right tools, in the expected pages.
            let pages = crate::rt()
                .block_on(async {
                    let mut c = http::Conn::open(server.addr).await?;
                    walk(&mut c).await
                })
                .unwrap_or_else(|e| panic!("{}: {e}", spec.label));
            let expected = if spec.env.is_empty() {
                1
            } else {
                TOOLS.div_ceil(PAGE_SIZE)
            };
            assert_eq!(pages, expected, "{}: pages in a walk", spec.label);
            let _ = load_for(server.addr, o.warmup);
            let l = load();
            let m = load_for(server.addr, o.duration);
            let secs = m.elapsed.as_secs_f64();
            eprintln!(
                "  pages round {} {:<32} {:>8} walks/s {:>9} pages/s  walk p50 {:>8}  errors {}  (load {l})",
                round + 1,
                spec.label,
                thousands(m.walks as f64 / secs),
                thousands(m.pages as f64 / secs),
                micros(m.walk_p50_us),
                m.errors
            );
            walks_s[i].push(m.walks as f64 / secs);
            pages_s[i].push(m.pages as f64 / secs);
            per_walk[i].push(m.pages as f64 / m.walks.max(1) as f64);
            p50[i].push(m.walk_p50_us);
            errors[i] += m.errors;
            rss[i].push(server.rss());
        }
    }
    let med = |v: &Vec<f64>| median(v.clone());
    let rm = specs.iter().position(|s| s.kind == Kind::Rmcp);
    let mut t = Table::new(&[
        "server (1,000 tools)",
        "walks/s",
        "×rmcp",
        "pages/s",
        "pages per walk",
        "walk p50",
        "errors",
        "RSS after",
    ]);
    for (i, spec) in specs.iter().enumerate() {
        t.row(vec![
            spec.label.to_owned(),
            thousands(med(&walks_s[i])),
            ratio(med(&walks_s[i]), rm.map(|j| med(&walks_s[j]))),
            thousands(med(&pages_s[i])),
            format!("{:.0}", med(&per_walk[i])),
            micros(med(&p50[i])),
            errors[i].to_string(),
            format!("{:.1} MiB", med(&rss[i]) / 1024.0),
        ]);
    }
    let mut lines = String::new();
    if let Some(j) = rm {
        let each: Vec<String> = (0..walks_s[0].len())
            .map(|r| format!("{:.2}", walks_s[0][r] / walks_s[j][r]))
            .collect();
        writeln!(
            lines,
            "- sake's paged walks/s ÷ rmcp's single list, per round: {} (median {:.2}×)",
            each.join(", "),
            median(
                (0..walks_s[0].len())
                    .map(|r| walks_s[0][r] / walks_s[j][r])
                    .collect()
            )
        )
        .unwrap();
        rep.chart.push(Group {
            label: "pages (sake 10 pages, rmcp 1)".into(),
            bars: vec![(Series::SakeOverRmcp, med(&walks_s[0]) / med(&walks_s[j]))],
        });
    }
    rep.section(&format!(
        "\n### 11. tools/list walked page by page (1,000 tools, 2026-07-28)\n\nEach of {CONNECTIONS} keep-alive connections walks the list again and again: `tools/list`, then `tools/list` with each `nextCursor` until none, every page parsed and every walk checked (1,000 distinct names). sake with `Server::page_size({PAGE_SIZE})` (10 pages) and with one page; rmcp 3.11 does not paginate (`#[tool_handler]`'s `list_tools` ignores the cursor and sends no `nextCursor`), so its walk is its single list, labelled so. Medians of {} interleaved round(s) of {} s each, after a {} s warm-up. Load average before: {load_before}, after: {}.\n\n{}\n{lines}",
        o.rounds,
        o.duration,
        o.warmup,
        load(),
        t.render()
    ));
}
