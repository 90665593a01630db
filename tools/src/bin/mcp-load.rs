//! A load client for a sake server running examples/everything: N concurrent connections
//! doing mixed MCP work for a bounded time, every answer checked.
//!
//! ```text
//! mcp-load --url http://127.0.0.1:3000/mcp [--connections 64] [--seconds 300]
//!          [--mix all|modern] [--pid PID] [--sample-every 10] [--allow-errors] [--timeline]
//! ```
//!
//! Work (`all`): 2026-07-28 tool calls, lists and discovery, progress streams, three-round MRTR
//! calls, `subscriptions/listen` with a triggered list change (triggered again until it
//! arrives, since behind a balancer the trigger may reach another replica); 2025-11-25 sessions
//! (initialize, a call, sampling answered on the call's stream, a resource subscription, a GET
//! stream receiving a list change, DELETE); 2025-03-26 sessions with a batch. `modern` keeps
//! only the 2026-07-28 work. With `--pid` it samples the server's RSS and open file
//! descriptors and fails if they grow from the first to the last fifth of the run beyond
//! the tolerance (10 %, or 16 MiB and 16 descriptors, whichever is larger). Any failed check
//! fails the run unless `--allow-errors`; `--timeline` prints successes and failures per
//! second.

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::{Stream, StreamExt};
use serde_json::{Value, json};

type Res<T> = Result<T, String>;

const LATEST: &str = "2026-07-28";

#[derive(Clone, Copy, Debug, PartialEq)]
enum Op {
    Call,
    Lists,
    Progress,
    Mrtr,
    Listen,
    Legacy,
    Batch,
}

impl Op {
    const ALL: [Op; 7] = [
        Op::Call,
        Op::Lists,
        Op::Progress,
        Op::Mrtr,
        Op::Listen,
        Op::Legacy,
        Op::Batch,
    ];
    const MODERN: [Op; 5] = [Op::Call, Op::Lists, Op::Progress, Op::Mrtr, Op::Listen];

    fn name(self) -> &'static str {
        match self {
            Op::Call => "modern call",
            Op::Lists => "modern lists+discover",
            Op::Progress => "modern progress stream",
            Op::Mrtr => "modern MRTR (3 rounds)",
            Op::Listen => "modern subscriptions/listen",
            Op::Legacy => "2025-11-25 session",
            Op::Batch => "2025-03-26 batch session",
        }
    }

    fn index(self) -> usize {
        Op::ALL.iter().position(|o| *o == self).unwrap_or(0)
    }
}

struct Config {
    url: String,
    connections: usize,
    seconds: u64,
    ops: Vec<Op>,
    pid: Option<u32>,
    sample_every: u64,
    allow_errors: bool,
    timeline: bool,
}

fn parse_args() -> Res<Config> {
    let mut cfg = Config {
        url: "http://127.0.0.1:3000/mcp".into(),
        connections: 64,
        seconds: 300,
        ops: Op::ALL.to_vec(),
        pid: None,
        sample_every: 10,
        allow_errors: false,
        timeline: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "--url" => cfg.url = value("--url")?,
            "--connections" => {
                cfg.connections = value("--connections")?
                    .parse()
                    .map_err(|e| format!("{e}"))?
            }
            "--seconds" => cfg.seconds = value("--seconds")?.parse().map_err(|e| format!("{e}"))?,
            "--pid" => cfg.pid = Some(value("--pid")?.parse().map_err(|e| format!("{e}"))?),
            "--sample-every" => {
                cfg.sample_every = value("--sample-every")?
                    .parse()
                    .map_err(|e| format!("{e}"))?
            }
            "--mix" => {
                cfg.ops = match value("--mix")?.as_str() {
                    "all" => Op::ALL.to_vec(),
                    "modern" => Op::MODERN.to_vec(),
                    other => return Err(format!("unknown mix {other:?}")),
                }
            }
            "--allow-errors" => cfg.allow_errors = true,
            "--timeline" => cfg.timeline = true,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(cfg)
}

/// Counters shared by the workers.
struct Stats {
    started: Instant,
    requests: AtomicU64,
    ok: [AtomicU64; 7],
    failed: [AtomicU64; 7],
    /// Per second since the start: (successes, failures).
    timeline: Mutex<BTreeMap<u64, (u64, u64)>>,
    first_errors: Mutex<Vec<String>>,
}

impl Stats {
    fn record(&self, op: Op, outcome: Res<()>) {
        let second = self.started.elapsed().as_secs();
        let mut timeline = self.timeline.lock().unwrap_or_else(|e| e.into_inner());
        let slot = timeline.entry(second).or_default();
        match outcome {
            Ok(()) => {
                self.ok[op.index()].fetch_add(1, Ordering::Relaxed);
                slot.0 += 1;
            }
            Err(e) => {
                self.failed[op.index()].fetch_add(1, Ordering::Relaxed);
                slot.1 += 1;
                let mut errors = self.first_errors.lock().unwrap_or_else(|e| e.into_inner());
                if errors.len() < 20 {
                    errors.push(format!("t={second}s {}: {e}", op.name()));
                }
            }
        }
    }

    fn errors(&self) -> u64 {
        self.failed.iter().map(|a| a.load(Ordering::Relaxed)).sum()
    }
}

// ---------------------------------------------------------------------------------------------
// HTTP and SSE

type ByteStream = Pin<Box<dyn Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>;

/// The JSON-RPC messages of a response, read one by one (one JSON body, or SSE events).
enum Messages {
    Json(Option<Value>),
    Sse { stream: ByteStream, buf: Vec<u8> },
}

impl Messages {
    async fn from(resp: reqwest::Response) -> Res<Messages> {
        let sse = resp
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("text/event-stream"));
        if sse {
            return Ok(Messages::Sse {
                stream: Box::pin(resp.bytes_stream()),
                buf: Vec::new(),
            });
        }
        let body = resp.bytes().await.map_err(|e| format!("body: {e}"))?;
        let v = serde_json::from_slice(&body)
            .map_err(|e| format!("JSON body: {e}: {}", String::from_utf8_lossy(&body)))?;
        Ok(Messages::Json(Some(v)))
    }

    /// The next message; `None` at the end.
    async fn next(&mut self) -> Res<Option<Value>> {
        match self {
            Messages::Json(v) => Ok(v.take()),
            Messages::Sse { stream, buf } => loop {
                if let Some(end) = buf.windows(2).position(|w| w == b"\n\n") {
                    let event: Vec<u8> = buf.drain(..end + 2).collect();
                    let text = String::from_utf8_lossy(&event);
                    let data: Vec<&str> = text
                        .lines()
                        .filter_map(|l| l.strip_prefix("data:"))
                        .map(str::trim_start)
                        .collect();
                    let data = data.join("\n");
                    if data.is_empty() {
                        continue;
                    }
                    return serde_json::from_str(&data)
                        .map(Some)
                        .map_err(|e| format!("SSE data: {e}: {data}"));
                }
                match stream.next().await {
                    Some(Ok(chunk)) => buf.extend_from_slice(&chunk),
                    Some(Err(e)) => return Err(format!("stream: {e}")),
                    None => return Ok(None),
                }
            },
        }
    }

    /// Reads until the response with `id`; returns it and the messages before it.
    async fn until_response(&mut self, id: &Value) -> Res<(Vec<Value>, Value)> {
        let mut before = Vec::new();
        while let Some(m) = self.next().await? {
            if m.get("id") == Some(id) && m.get("method").is_none() {
                return Ok((before, m));
            }
            before.push(m);
        }
        Err(format!("the stream ended without the response to {id}"))
    }
}

struct Client {
    http: reqwest::Client,
    url: String,
    stats: Arc<Stats>,
    next_id: u64,
}

fn meta(extra: Value) -> Value {
    let mut m = json!({
        "io.modelcontextprotocol/protocolVersion": LATEST,
        "io.modelcontextprotocol/clientInfo": { "name": "mcp-load", "version": "0" },
        "io.modelcontextprotocol/clientCapabilities": { "sampling": {}, "elicitation": {}, "roots": {} }
    });
    if let (Some(m), Value::Object(extra)) = (m.as_object_mut(), extra) {
        m.extend(extra);
    }
    m
}

fn result_of(resp: &Value) -> Res<&Value> {
    if let Some(e) = resp.get("error") {
        return Err(format!("JSON-RPC error {e}"));
    }
    resp.get("result").ok_or(format!("no result in {resp}"))
}

fn text_of(result: &Value) -> &str {
    result["content"][0]["text"].as_str().unwrap_or_default()
}

fn expect(cond: bool, what: impl FnOnce() -> String) -> Res<()> {
    if cond { Ok(()) } else { Err(what()) }
}

impl Client {
    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    async fn post(
        &self,
        body: &Value,
        headers: &[(&str, String)],
        expect_status: u16,
    ) -> Res<reqwest::Response> {
        self.stats.requests.fetch_add(1, Ordering::Relaxed);
        let mut req = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body.to_string());
        for (k, v) in headers {
            req = req.header(*k, v);
        }
        let resp = req.send().await.map_err(|e| format!("POST: {e}"))?;
        let status = resp.status().as_u16();
        if status != expect_status {
            let text = resp.text().await.unwrap_or_default();
            return Err(format!(
                "HTTP {status} (expected {expect_status}) to {}: {text}",
                body["method"]
            ));
        }
        Ok(resp)
    }

    /// A 2026-07-28 request; returns its messages.
    async fn modern(
        &mut self,
        method: &str,
        mut params: Value,
        extra_meta: Value,
    ) -> Res<(Value, Messages)> {
        let id = json!(self.id());
        params["_meta"] = meta(extra_meta);
        let mut headers = vec![
            ("mcp-protocol-version", LATEST.to_owned()),
            ("mcp-method", method.to_owned()),
        ];
        if let Some(name) = params
            .get("name")
            .or(params.get("uri"))
            .and_then(Value::as_str)
        {
            headers.push(("mcp-name", name.to_owned()));
        }
        let body = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        let resp = self.post(&body, &headers, 200).await?;
        Ok((id, Messages::from(resp).await?))
    }

    async fn modern_result(&mut self, method: &str, params: Value) -> Res<Value> {
        let (id, mut msgs) = self.modern(method, params, json!({})).await?;
        let (_, resp) = msgs.until_response(&id).await?;
        result_of(&resp).cloned()
    }

    // -----------------------------------------------------------------------------------------
    // The work

    async fn call(&mut self) -> Res<()> {
        let r = self
            .modern_result("tools/call", json!({ "name": "test_simple_text" }))
            .await?;
        expect(
            r["resultType"] == "complete"
                && text_of(&r) == "This is a simple text response for testing.",
            || format!("test_simple_text: {r}"),
        )
    }

    async fn lists(&mut self) -> Res<()> {
        for (method, key) in [
            ("tools/list", "tools"),
            ("resources/list", "resources"),
            ("prompts/list", "prompts"),
            ("resources/templates/list", "resourceTemplates"),
        ] {
            let r = self.modern_result(method, json!({})).await?;
            expect(
                r[key].as_array().is_some_and(|a| !a.is_empty()) && r["ttlMs"].is_u64(),
                || format!("{method}: {r}"),
            )?;
        }
        let r = self.modern_result("server/discover", json!({})).await?;
        expect(
            r["supportedVersions"]
                .as_array()
                .is_some_and(|v| v.len() == 4),
            || format!("server/discover: {r}"),
        )
    }

    async fn progress(&mut self) -> Res<()> {
        let token = format!("p-{}", self.next_id);
        let (id, mut msgs) = self
            .modern(
                "tools/call",
                json!({ "name": "test_tool_with_progress", "arguments": {} }),
                json!({ "progressToken": token }),
            )
            .await?;
        let (before, resp) = msgs.until_response(&id).await?;
        let progress: Vec<f64> = before
            .iter()
            .filter(|m| {
                m["method"] == "notifications/progress" && m["params"]["progressToken"] == token
            })
            .filter_map(|m| m["params"]["progress"].as_f64())
            .collect();
        expect(progress == [0.0, 50.0, 100.0], || {
            format!("progress notifications {progress:?}")
        })?;
        let r = result_of(&resp)?;
        expect(text_of(r) == "Progress reported", || {
            format!("progress result {r}")
        })
    }

    async fn mrtr(&mut self) -> Res<()> {
        let name = "test_input_required_result_multi_round";
        let r1 = self
            .modern_result("tools/call", json!({ "name": name, "arguments": {} }))
            .await?;
        expect(
            r1["resultType"] == "input_required" && r1["inputRequests"]["step1"].is_object(),
            || format!("round 1: {r1}"),
        )?;
        let answer = |field: &str, v: &str| json!({ "action": "accept", "content": { field: v } });
        let r2 = self
            .modern_result(
                "tools/call",
                json!({
                    "name": name, "arguments": {},
                    "inputResponses": { "step1": answer("name", "Ada") },
                    "requestState": r1["requestState"],
                }),
            )
            .await?;
        expect(
            r2["resultType"] == "input_required" && r2["inputRequests"]["step2"].is_object(),
            || format!("round 2: {r2}"),
        )?;
        let r3 = self
            .modern_result(
                "tools/call",
                json!({
                    "name": name, "arguments": {},
                    "inputResponses": { "step2": answer("color", "teal") },
                    "requestState": r2["requestState"],
                }),
            )
            .await?;
        expect(
            text_of(&r3) == "Multi-round complete for Ada who likes teal",
            || format!("round 3: {r3}"),
        )
    }

    async fn listen(&mut self) -> Res<()> {
        let (id, mut stream) = self
            .modern(
                "subscriptions/listen",
                json!({ "notifications": { "toolsListChanged": true } }),
                json!({}),
            )
            .await?;
        let ack = stream
            .next()
            .await?
            .ok_or("the listen stream ended at once")?;
        expect(
            ack["method"] == "notifications/subscriptions/acknowledged",
            || format!("listen ack: {ack}"),
        )?;
        // Notifications are per process: behind a balancer the trigger may reach another
        // replica than the stream, so trigger again until one lands on the stream's.
        for _ in 0..20 {
            self.modern_result("tools/call", json!({ "name": "test_trigger_tool_change" }))
                .await?;
            let wait = Duration::from_millis(300);
            while let Ok(m) = tokio::time::timeout(wait, stream.next()).await {
                let m = m?.ok_or("the listen stream ended before the list change")?;
                if m["method"] == "notifications/tools/list_changed" {
                    return expect(
                        m["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == id,
                        || format!("untagged notification {m}"),
                    );
                }
            }
        }
        Err("no list change on the listen stream after 20 triggers".into())
    }

    async fn initialize(&mut self, version: &str) -> Res<Vec<(&'static str, String)>> {
        let id = json!(self.id());
        let body = json!({
            "jsonrpc": "2.0", "id": id, "method": "initialize",
            "params": {
                "protocolVersion": version,
                "capabilities": { "sampling": {}, "elicitation": {} },
                "clientInfo": { "name": "mcp-load", "version": "0" }
            }
        });
        let resp = self.post(&body, &[], 200).await?;
        let session = resp
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .ok_or("initialize without Mcp-Session-Id")?
            .to_owned();
        let (_, r) = Messages::from(resp).await?.until_response(&id).await?;
        expect(result_of(&r)?["protocolVersion"] == version, || {
            format!("initialize: {r}")
        })?;
        let mut headers = vec![("mcp-session-id", session)];
        if version != "2025-03-26" {
            headers.push(("mcp-protocol-version", version.to_owned()));
        }
        let note = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
        self.post(&note, &headers, 202).await?;
        Ok(headers)
    }

    async fn legacy_call(
        &mut self,
        headers: &[(&str, String)],
        name: &str,
        args: Value,
    ) -> Res<(Value, Messages)> {
        let id = json!(self.id());
        let body = json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": { "name": name, "arguments": args }
        });
        let resp = self.post(&body, headers, 200).await?;
        Ok((id, Messages::from(resp).await?))
    }

    async fn delete(&self, headers: &[(&str, String)]) -> Res<()> {
        self.stats.requests.fetch_add(1, Ordering::Relaxed);
        let mut req = self.http.delete(&self.url);
        for (k, v) in headers {
            req = req.header(*k, v);
        }
        let status = req
            .send()
            .await
            .map_err(|e| format!("DELETE: {e}"))?
            .status();
        expect(status == 200, || format!("DELETE: HTTP {status}"))
    }

    async fn legacy(&mut self) -> Res<()> {
        let h = self.initialize("2025-11-25").await?;
        let (id, mut m) = self.legacy_call(&h, "test_simple_text", json!({})).await?;
        let (_, r) = m.until_response(&id).await?;
        expect(
            text_of(result_of(&r)?).starts_with("This is a simple"),
            || format!("legacy call: {r}"),
        )?;
        // Sampling: the question arrives on the call's stream; the answer is a POST.
        let (id, mut m) = self
            .legacy_call(&h, "test_sampling", json!({ "prompt": "Say hi" }))
            .await?;
        let question = m.next().await?.ok_or("no sampling request")?;
        expect(question["method"] == "sampling/createMessage", || {
            format!("expected sampling/createMessage, got {question}")
        })?;
        let answer = json!({
            "jsonrpc": "2.0", "id": question["id"],
            "result": { "role": "assistant", "content": { "type": "text", "text": "hi" }, "model": "load" }
        });
        self.post(&answer, &h, 202).await?;
        let (_, r) = m.until_response(&id).await?;
        expect(text_of(result_of(&r)?) == "LLM response: hi", || {
            format!("sampling result: {r}")
        })?;
        // A resource subscription.
        let sid = json!(self.id());
        let sub = json!({
            "jsonrpc": "2.0", "id": sid, "method": "resources/subscribe",
            "params": { "uri": "test://watched-resource" }
        });
        let resp = self.post(&sub, &h, 200).await?;
        let (_, r) = Messages::from(resp).await?.until_response(&sid).await?;
        result_of(&r)?;
        // The GET stream receives a list change.
        self.stats.requests.fetch_add(1, Ordering::Relaxed);
        let mut get = self
            .http
            .get(&self.url)
            .header("accept", "text/event-stream");
        for (k, v) in &h {
            get = get.header(*k, v);
        }
        let resp = get.send().await.map_err(|e| format!("GET: {e}"))?;
        expect(resp.status() == 200, || {
            format!("GET: HTTP {}", resp.status())
        })?;
        let mut events = Messages::from(resp).await?;
        let (id, mut m) = self
            .legacy_call(&h, "test_trigger_tool_change", json!({}))
            .await?;
        m.until_response(&id).await?;
        loop {
            let e = events.next().await?.ok_or("the GET stream ended")?;
            if e["method"] == "notifications/tools/list_changed" {
                break;
            }
        }
        drop(events);
        self.delete(&h).await
    }

    async fn batch(&mut self) -> Res<()> {
        let h = self.initialize("2025-03-26").await?;
        let (a, b) = (self.id(), self.id());
        let body = json!([
            { "jsonrpc": "2.0", "id": a, "method": "ping" },
            { "jsonrpc": "2.0", "id": b, "method": "tools/list" }
        ]);
        let resp = self.post(&body, &h, 200).await?;
        let mut m = Messages::from(resp).await?;
        let mut answers = Vec::new();
        while let Some(v) = m.next().await? {
            match v {
                Value::Array(items) => answers.extend(items),
                other => answers.push(other),
            }
        }
        expect(
            answers.len() == 2 && answers.iter().all(|r| r.get("result").is_some()),
            || format!("batch answers: {answers:?}"),
        )?;
        self.delete(&h).await
    }

    async fn run(&mut self, op: Op) -> Res<()> {
        match op {
            Op::Call => self.call().await,
            Op::Lists => self.lists().await,
            Op::Progress => self.progress().await,
            Op::Mrtr => self.mrtr().await,
            Op::Listen => self.listen().await,
            Op::Legacy => self.legacy().await,
            Op::Batch => self.batch().await,
        }
    }
}

async fn worker(n: usize, cfg: Arc<Config>, stats: Arc<Stats>, until: Instant) -> Res<()> {
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(4)
        .connect_timeout(Duration::from_secs(5))
        .build()
        .map_err(|e| format!("client: {e}"))?;
    let mut client = Client {
        http,
        url: cfg.url.clone(),
        stats: stats.clone(),
        next_id: (n as u64) << 32,
    };
    let mut i = n;
    while Instant::now() < until {
        let op = cfg.ops[i % cfg.ops.len()];
        i += 1;
        let outcome = match tokio::time::timeout(Duration::from_secs(15), client.run(op)).await {
            Ok(r) => r,
            Err(_) => Err("timed out after 15 s".into()),
        };
        stats.record(op, outcome);
    }
    Ok(())
}

/// RSS (KiB) and open descriptors of a process.
fn sample(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count() as u64;
    Some((rss, fds))
}

fn mean(xs: &[(u64, u64, u64)], pick: fn(&(u64, u64, u64)) -> u64) -> f64 {
    if xs.is_empty() {
        return 0.0;
    }
    xs.iter().map(pick).sum::<u64>() as f64 / xs.len() as f64
}

#[tokio::main]
async fn main() {
    let cfg = match parse_args() {
        Ok(c) => Arc::new(c),
        Err(e) => {
            eprintln!("mcp-load: {e}");
            std::process::exit(2);
        }
    };
    let stats = Arc::new(Stats {
        started: Instant::now(),
        requests: AtomicU64::new(0),
        ok: Default::default(),
        failed: Default::default(),
        timeline: Mutex::default(),
        first_errors: Mutex::default(),
    });
    let idle_before = cfg.pid.and_then(sample);
    let until = stats.started + Duration::from_secs(cfg.seconds);
    let workers: Vec<_> = (0..cfg.connections)
        .map(|n| tokio::spawn(worker(n, cfg.clone(), stats.clone(), until)))
        .collect();
    // Sample every few seconds while the workers run.
    let mut samples: Vec<(u64, u64, u64)> = Vec::new();
    let mut tick = tokio::time::interval(Duration::from_secs(cfg.sample_every.max(1)));
    tick.tick().await;
    while Instant::now() < until {
        tick.tick().await;
        let t = stats.started.elapsed().as_secs();
        let s = cfg.pid.and_then(sample);
        if let Some((rss, fds)) = s {
            samples.push((t, rss, fds));
        }
        println!(
            "t={t:>4}s requests={:>8} errors={:>4}{}",
            stats.requests.load(Ordering::Relaxed),
            stats.errors(),
            s.map(|(rss, fds)| format!(" rss={:.1}MiB fds={fds}", rss as f64 / 1024.0))
                .unwrap_or_default()
        );
    }
    for w in workers {
        if let Ok(Err(e)) = w.await {
            eprintln!("mcp-load: {e}");
            std::process::exit(2);
        }
    }
    let elapsed = stats.started.elapsed().as_secs_f64();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let idle_after = cfg.pid.and_then(sample);

    println!("\n{:<30} {:>10} {:>8}", "work", "succeeded", "failed");
    for op in &cfg.ops {
        println!(
            "{:<30} {:>10} {:>8}",
            op.name(),
            stats.ok[op.index()].load(Ordering::Relaxed),
            stats.failed[op.index()].load(Ordering::Relaxed)
        );
    }
    let requests = stats.requests.load(Ordering::Relaxed);
    let errors = stats.errors();
    println!(
        "HTTP requests: {requests} in {elapsed:.0} s ({:.0}/s) over {} connections; failed checks: {errors}",
        requests as f64 / elapsed,
        cfg.connections
    );
    for e in stats
        .first_errors
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
    {
        println!("  error: {e}");
    }
    if cfg.timeline {
        println!("timeline (second ok failed):");
        for (s, (ok, failed)) in stats
            .timeline
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            println!("timeline {s} {ok} {failed}");
        }
    }
    let mut failed = errors > 0 && !cfg.allow_errors;
    if cfg.pid.is_some() {
        let fifth = cfg.seconds / 5;
        let window = |from: u64, to: u64| -> Vec<(u64, u64, u64)> {
            samples
                .iter()
                .copied()
                .filter(|(t, _, _)| *t >= from && *t < to)
                .collect()
        };
        let first = window(fifth, 2 * fifth);
        let last = window(4 * fifth, cfg.seconds + 1);
        let (rss1, rss5) = (mean(&first, |s| s.1), mean(&last, |s| s.1));
        let (fd1, fd5) = (mean(&first, |s| s.2), mean(&last, |s| s.2));
        let rss_allowed = (rss1 * 0.10).max(16.0 * 1024.0);
        // Attackers beside the load hold hundreds of short-lived connections: 10 %.
        let fd_allowed = (fd1 * 0.10).max(16.0);
        let peak = samples.iter().map(|s| s.1).max().unwrap_or(0);
        println!(
            "server RSS: at start {:.1} MiB, {:.0}-{:.0} s {:.1} MiB, {:.0}-{:.0} s {:.1} MiB (growth {:+.1} MiB, allowed {:.1}); peak {:.1} MiB; idle after {:.1} MiB",
            idle_before.map_or(0.0, |s| s.0 as f64 / 1024.0),
            fifth,
            2 * fifth,
            rss1 / 1024.0,
            4 * fifth,
            cfg.seconds,
            rss5 / 1024.0,
            (rss5 - rss1) / 1024.0,
            rss_allowed / 1024.0,
            peak as f64 / 1024.0,
            idle_after.map_or(0.0, |s| s.0 as f64 / 1024.0),
        );
        println!(
            "server open fds: at start {}, {:.0}-{:.0} s {:.1}, {:.0}-{:.0} s {:.1} (growth {:+.1}, allowed {fd_allowed:.1}); idle after {}",
            idle_before.map_or(0, |s| s.1),
            fifth,
            2 * fifth,
            fd1,
            4 * fifth,
            cfg.seconds,
            fd5,
            fd5 - fd1,
            idle_after.map_or(0, |s| s.1),
        );
        if first.is_empty() || last.is_empty() {
            println!("FAIL: too few samples to compare (run longer or sample more often)");
            failed = true;
        }
        if rss5 - rss1 > rss_allowed {
            println!("FAIL: RSS grew beyond the tolerance");
            failed = true;
        }
        if fd5 - fd1 > fd_allowed {
            println!("FAIL: open descriptors grew beyond the tolerance");
            failed = true;
        }
    }
    if failed {
        println!("mcp-load: FAILED");
        std::process::exit(1);
    }
    println!("mcp-load: passed");
}
