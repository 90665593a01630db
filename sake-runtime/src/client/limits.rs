//! The client's limits: what a hostile or broken server can make it hold, do or wait for, and
//! how a dropped event stream is reopened (a floor, exponential backoff with jitter, a cap,
//! and giving up).

use std::time::Duration;

/// The largest HTTP response body or stdio line read (one message, or a 2025-03-26 batch).
/// A real MCP result is rarely more than a few MiB: a resource's blob or a tool's image,
/// Base64-encoded.
pub(crate) const DEFAULT_MAX_BODY: usize = 16 << 20;
/// The largest event of an event stream. An event carries one message, which may be the
/// request's result: the same size as a body.
pub(crate) const DEFAULT_MAX_EVENT: usize = 16 << 20;
/// The most pages one `list_*` call follows.
pub(crate) const DEFAULT_MAX_PAGES: usize = 100;
/// The most requests of the server answered at once (handshake revisions), and the most input
/// requests one `input_required` round may carry (2026-07-28).
pub(crate) const DEFAULT_MAX_SERVER_REQUESTS: usize = 16;
/// The most notifications a stream holds for a consumer that does not read.
pub(crate) const DEFAULT_NOTIFICATION_BUFFER: usize = 1024;
/// The shortest wait before reopening a dropped event stream, whatever `retry` the server
/// names.
pub(crate) const DEFAULT_RECONNECT_FLOOR: Duration = Duration::from_millis(500);
/// The longest wait the backoff grows to (a server's own longer `retry` is still honoured).
pub(crate) const DEFAULT_RECONNECT_CAP: Duration = Duration::from_secs(30);
/// How many reopenings in a row may fail before the stream is given up.
pub(crate) const DEFAULT_MAX_RECONNECTS: usize = 8;
/// A stream that stayed open this long counts as healthy even without a message (a server
/// that polls: SSE polling of 2025-11-25 closes idle streams at will).
const HEALTHY_AFTER: Duration = Duration::from_secs(1);

/// Every limit of one client, as the builder set them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Limits {
    pub(crate) max_body: usize,
    pub(crate) max_event: usize,
    pub(crate) max_pages: usize,
    pub(crate) max_server_requests: usize,
    pub(crate) notification_buffer: usize,
    pub(crate) reconnect: Reconnect,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body: DEFAULT_MAX_BODY,
            max_event: DEFAULT_MAX_EVENT,
            max_pages: DEFAULT_MAX_PAGES,
            max_server_requests: DEFAULT_MAX_SERVER_REQUESTS,
            notification_buffer: DEFAULT_NOTIFICATION_BUFFER,
            reconnect: Reconnect::default(),
        }
    }
}

/// How a dropped event stream is reopened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Reconnect {
    /// The shortest wait.
    pub(crate) floor: Duration,
    /// The longest wait the backoff grows to.
    pub(crate) cap: Duration,
    /// Reopenings in a row that may fail before giving up.
    pub(crate) max_failures: usize,
}

impl Default for Reconnect {
    fn default() -> Self {
        Reconnect {
            floor: DEFAULT_RECONNECT_FLOOR,
            cap: DEFAULT_RECONNECT_CAP,
            max_failures: DEFAULT_MAX_RECONNECTS,
        }
    }
}

/// The reopenings of one stream: how many in a row failed, and how long to wait next.
///
/// A reopening *fails* when the stream cannot be opened, or when it ends without delivering a
/// message before [`HEALTHY_AFTER`]; a stream that delivers a message or stays open longer
/// resets the count. The wait before the next reopening is the server's `retry` (at least the
/// floor), doubled for each failure in a row, at most the cap (or the server's `retry` when
/// that is longer: the server's interval is always honoured), with jitter that never goes
/// below the undoubled wait.
#[derive(Debug)]
pub(crate) struct Backoff {
    policy: Reconnect,
    failures: usize,
}

impl Backoff {
    pub(crate) fn new(policy: Reconnect) -> Self {
        Backoff {
            policy,
            failures: 0,
        }
    }

    /// Failed reopenings in a row.
    pub(crate) fn failures(&self) -> usize {
        self.failures
    }

    /// Whether the stream is to be given up: as many reopenings in a row failed as allowed.
    pub(crate) fn exhausted(&self) -> bool {
        self.failures >= self.policy.max_failures
    }

    /// Records a reopening that could not open a stream.
    pub(crate) fn failed(&mut self) {
        self.failures = self.failures.saturating_add(1);
    }

    /// Records the end of a stream that was open for `open_for` and delivered `messages`.
    pub(crate) fn ended(&mut self, open_for: Duration, messages: usize) {
        if messages > 0 || open_for >= HEALTHY_AFTER {
            self.failures = 0;
        } else {
            self.failed();
        }
    }

    /// The wait before the next reopening, given the server's last `retry` interval.
    pub(crate) fn delay(&self, retry_ms: Option<u64>) -> Duration {
        let retry = retry_ms
            .map(Duration::from_millis)
            .unwrap_or(Duration::ZERO);
        let base = retry.max(self.policy.floor);
        if self.failures == 0 {
            return base;
        }
        let factor = 1u32
            .checked_shl(u32::try_from(self.failures).unwrap_or(u32::MAX).min(16))
            .unwrap_or(1 << 16);
        let cap = self.policy.cap.max(base);
        let doubled = base.saturating_mul(factor).min(cap);
        // "Equal jitter": half the wait, plus a random part of the other half.
        let half = doubled / 2;
        let jittered = half + half.mul_f64(random_fraction());
        jittered.max(base)
    }
}

/// A number in [0, 1), from the operating system's generator (0 if it fails: no jitter).
fn random_fraction() -> f64 {
    let mut bytes = [0u8; 8];
    if getrandom::fill(&mut bytes).is_err() {
        return 0.0;
    }
    // 53 random bits: every value a f64 in [0, 1) can hold evenly.
    (u64::from_le_bytes(bytes) >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(floor_ms: u64, cap_ms: u64, max_failures: usize) -> Reconnect {
        Reconnect {
            floor: Duration::from_millis(floor_ms),
            cap: Duration::from_millis(cap_ms),
            max_failures,
        }
    }

    #[test]
    fn the_wait_is_the_retry_at_least_the_floor_then_doubles_within_the_cap() {
        let mut b = Backoff::new(policy(500, 4000, 8));
        // No failure: the server's interval exactly, or the floor when it is shorter.
        assert_eq!(b.delay(None), Duration::from_millis(500));
        assert_eq!(b.delay(Some(0)), Duration::from_millis(500));
        assert_eq!(b.delay(Some(2000)), Duration::from_millis(2000));
        for (failures, low, high) in [
            (1, 500, 1000),
            (2, 1000, 2000),
            (3, 2000, 4000),
            (4, 2000, 4000),
            (40, 2000, 4000),
        ] {
            while b.failures() < failures {
                b.failed();
            }
            for _ in 0..50 {
                let d = b.delay(Some(0));
                assert!(
                    d >= Duration::from_millis(low) && d <= Duration::from_millis(high),
                    "{failures}: {d:?}"
                );
            }
        }
        // A server's interval longer than the cap is honoured, never cut.
        assert_eq!(b.delay(Some(60_000)), Duration::from_millis(60_000));
        // Absurd intervals do not overflow.
        assert!(b.delay(Some(u64::MAX)) >= Duration::from_millis(u64::MAX));
    }

    #[test]
    fn healthy_streams_reset_the_count_and_empty_short_ones_add_to_it() {
        let mut b = Backoff::new(policy(500, 4000, 2));
        b.ended(Duration::ZERO, 0);
        assert_eq!(b.failures(), 1);
        assert!(!b.exhausted());
        b.ended(Duration::ZERO, 1);
        assert_eq!(b.failures(), 0);
        b.failed();
        b.ended(Duration::from_millis(999), 0);
        assert!(b.exhausted());
        b.ended(HEALTHY_AFTER, 0);
        assert_eq!(b.failures(), 0);
    }
}

/// Each limit against a fake server that attacks it.
#[cfg(test)]
mod attacks {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use serde_json::{Value, json};
    use tokio::sync::{Notify, Semaphore};

    use crate::client::fake::{Reply, Seen, Step, builder, fake, legacy, modern};
    use crate::client::{Client, ClientError};
    use crate::protocol::types::ElicitResult;

    const MIB: usize = 1 << 20;

    /// A body of `total` bytes, counted in `sent` as the server hands it out.
    fn flood(
        content_type: &'static str,
        prefix: &str,
        total: usize,
        sent: &Arc<AtomicUsize>,
    ) -> Reply {
        Reply::Flood {
            content_type,
            prefix: prefix.to_owned(),
            total,
            sent: Arc::clone(sent),
            declared: None,
        }
    }

    #[tokio::test]
    async fn an_endless_body_is_read_up_to_the_limit_and_no_further() {
        let sent = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&sent);
        // A JSON string that never ends: a gigabyte, as far as the client can tell.
        let f = fake(modern(move |_| {
            flood(
                "application/json",
                r#"{"jsonrpc":"2.0","id":2,"result":{"text":""#,
                1 << 30,
                &counter,
            )
        }))
        .await;
        let client = builder().connect(&f.url).await.unwrap();
        let err = client.request("tools/list", json!({})).await.unwrap_err();
        assert!(
            matches!(&err, ClientError::BodyTooLarge { limit, .. } if *limit == 16 * MIB),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            format!(
                "the response body from {} is larger than 16777216 bytes, the client's limit; raise it with ClientBuilder::max_body_bytes",
                f.url
            )
        );
        // The client hung up at the limit: the server could hand out no more than what the
        // connection's buffers hold beyond it.
        let sent = sent.load(Ordering::SeqCst);
        assert!(sent < 48 * MIB, "the server sent {sent} bytes");
    }

    #[tokio::test]
    async fn a_declared_length_over_the_limit_is_refused_before_reading() {
        let sent = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&sent);
        let f = fake(modern(move |_| Reply::Flood {
            content_type: "application/json",
            prefix: String::new(),
            total: 100 * MIB,
            sent: Arc::clone(&counter),
            declared: Some(100 * MIB as u64),
        }))
        .await;
        let client = builder().max_body_bytes(MIB).connect(&f.url).await.unwrap();
        let err = client.request("tools/list", json!({})).await.unwrap_err();
        assert!(
            matches!(&err, ClientError::BodyTooLarge { limit, .. } if *limit == MIB),
            "{err:?}"
        );
        let sent = sent.load(Ordering::SeqCst);
        assert!(sent < 48 * MIB, "the server sent {sent} bytes");
    }

    #[tokio::test]
    async fn a_100_mib_event_stream_line_is_read_up_to_the_limit_and_no_further() {
        let sent = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&sent);
        let f = fake(modern(move |s| match s.method() {
            "tools/call" => flood("text/event-stream", "data: ", 100 * MIB, &counter),
            _ => Reply::result(s, json!({})),
        }))
        .await;
        let client = builder().connect(&f.url).await.unwrap();
        let err = client.call_tool("t", json!({})).await.unwrap_err();
        assert!(
            matches!(err, ClientError::EventTooLarge { limit } if limit == 16 * MIB),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            "an event of the server's event stream is larger than 16777216 bytes, the client's limit; raise it with ClientBuilder::max_event_bytes"
        );
        let sent = sent.load(Ordering::SeqCst);
        assert!(sent < 48 * MIB, "the server sent {sent} bytes");
        // The client still works.
        assert_eq!(client.request("ping", json!({})).await.unwrap(), json!({}));
    }

    /// An event stream that names `retry: 0` and closes at once: a priming event, no message.
    fn closes_at_once() -> Reply {
        Reply::Events(vec![Step::Raw("id: e1\nretry: 0\ndata: \n\n".into())])
    }

    fn gets(f: &crate::client::fake::Fake) -> usize {
        f.seen().iter().filter(|s| s.http == "GET").count()
    }

    #[tokio::test]
    async fn retry_zero_and_an_immediate_close_do_not_make_a_tight_loop() {
        let session = legacy(Some("s1"), |s| Reply::result(s, json!({})));
        let f = fake(move |s: &Seen| {
            if s.http == "GET" {
                return Reply::Session("s1", Box::new(closes_at_once()));
            }
            session(s)
        })
        .await;
        let _client = builder().connect(&f.url).await.unwrap();
        tokio::time::sleep(Duration::from_secs(2)).await;
        // The first GET, then reopenings 500 ms apart at least, each failure doubling the
        // wait: 500 ms, 0.5-1 s, 1-2 s. A tight loop would have made thousands.
        let in_two_seconds = gets(&f);
        assert!(in_two_seconds <= 5, "{in_two_seconds} GETs in 2 s");
        // It does reopen: the stream is not given up at the first close.
        assert!(in_two_seconds >= 2, "{in_two_seconds} GETs in 2 s");
    }

    #[tokio::test]
    async fn the_get_stream_is_given_up_after_max_reconnects_and_the_notification_streams_say_so() {
        let session = legacy(Some("s1"), |s| Reply::result(s, json!({})));
        let f = fake(move |s: &Seen| {
            if s.http == "GET" {
                return Reply::Session("s1", Box::new(closes_at_once()));
            }
            session(s)
        })
        .await;
        let client = builder()
            .reconnect_delay(Duration::from_millis(50), Duration::from_millis(100))
            .max_reconnects(3)
            .connect(&f.url)
            .await
            .unwrap();
        let mut all = client.notifications();
        let end = tokio::time::timeout(Duration::from_secs(5), all.recv())
            .await
            .unwrap();
        assert_eq!(end, None);
        let err = all.error().unwrap();
        assert!(
            matches!(err, ClientError::StreamLost { attempts: 3 }),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            "the server's event stream dropped and 3 attempts in a row to reopen it failed; giving up (the limit is ClientBuilder::max_reconnects)"
        );
        // The first GET and three reopenings, then no more.
        assert_eq!(gets(&f), 4);
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(gets(&f), 4);
        // The resumptions named the last event id.
        let resumed: Vec<Option<String>> = f
            .seen()
            .iter()
            .filter(|s| s.http == "GET")
            .map(|s| s.header("last-event-id").map(str::to_owned))
            .collect();
        assert_eq!(
            resumed,
            [
                None,
                Some("e1".into()),
                Some("e1".into()),
                Some("e1".into())
            ]
        );
    }

    #[tokio::test]
    async fn a_request_stream_that_keeps_dropping_is_given_up() {
        let session = legacy(Some("s1"), |_| closes_at_once());
        let f = fake(move |s: &Seen| {
            if s.http == "GET" {
                // Resumptions drop at once too; no standalone stream.
                return match s.header("last-event-id") {
                    Some(_) => Reply::Session("s1", Box::new(closes_at_once())),
                    None => Reply::status(405),
                };
            }
            session(s)
        })
        .await;
        let client = builder()
            .reconnect_delay(Duration::from_millis(20), Duration::from_millis(50))
            .max_reconnects(2)
            .connect(&f.url)
            .await
            .unwrap();
        let err = client.call_tool("t", json!({})).await.unwrap_err();
        assert!(
            matches!(err, ClientError::StreamLost { attempts: 2 }),
            "{err:?}"
        );
        let resumptions = f
            .seen()
            .iter()
            .filter(|s| s.http == "GET" && s.header("last-event-id") == Some("e1"))
            .count();
        assert_eq!(resumptions, 2);
    }

    #[tokio::test]
    async fn an_event_over_the_limit_on_the_get_stream_ends_it_and_the_notification_streams() {
        let go = Arc::new(Notify::new());
        let gate = Arc::clone(&go);
        let session = legacy(Some("s1"), |s| Reply::result(s, json!({})));
        let f = fake(move |s: &Seen| {
            if s.http == "GET" {
                return Reply::Session(
                    "s1",
                    Box::new(Reply::Events(vec![
                        Step::Wait(Arc::clone(&gate)),
                        Step::Raw(format!("data: {}\n\n", "x".repeat(4096))),
                    ])),
                );
            }
            session(s)
        })
        .await;
        let client = builder()
            .max_event_bytes(1024)
            .connect(&f.url)
            .await
            .unwrap();
        let mut all = client.notifications();
        go.notify_one();
        let end = tokio::time::timeout(Duration::from_secs(5), all.recv())
            .await
            .unwrap();
        assert_eq!(end, None);
        assert!(
            matches!(
                all.error(),
                Some(ClientError::EventTooLarge { limit: 1024 })
            ),
            "{:?}",
            all.error()
        );
        // Given up, not reopened.
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert_eq!(gets(&f), 1);
    }

    #[tokio::test]
    async fn a_flood_of_notifications_ends_a_stream_that_is_not_read_at_its_buffer() {
        let go = Arc::new(Notify::new());
        let gate = Arc::clone(&go);
        let hold = Arc::new(Notify::new());
        let held = Arc::clone(&hold);
        let session = legacy(Some("s1"), |s| Reply::result(s, json!({})));
        let f = fake(move |s: &Seen| {
            if s.http == "GET" {
                let mut steps = vec![Step::Wait(Arc::clone(&gate))];
                for n in 0..10_000 {
                    steps.push(Step::Message(json!({"jsonrpc": "2.0",
                        "method": "notifications/message",
                        "params": {"level": "info", "data": n}})));
                }
                // A request of the server after the flood: its answer says the client read
                // everything before it.
                steps.push(Step::Message(
                    json!({"jsonrpc": "2.0", "id": "done", "method": "ping"}),
                ));
                steps.push(Step::Wait(Arc::clone(&held)));
                return Reply::Session("s1", Box::new(Reply::Events(steps)));
            }
            session(s)
        })
        .await;
        let client = builder()
            .notification_buffer(8)
            .connect(&f.url)
            .await
            .unwrap();
        let mut slow = client.notifications();
        go.notify_one();
        let mut answered = false;
        for _ in 0..500 {
            answered = f.posts().iter().any(|s| s.id() == json!("done"));
            if answered {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(answered, "the ping after the flood was never answered");
        // The first 8 notifications were held, and not one more: then the end, and why.
        for n in 0..8 {
            let got = slow.recv().await.unwrap();
            assert_eq!(got.params["data"], json!(n));
        }
        assert_eq!(slow.recv().await, None);
        let err = slow.error().unwrap();
        assert!(matches!(err, ClientError::Lagged { limit: 8 }), "{err:?}");
        assert_eq!(
            err.to_string(),
            "the notification stream was closed: its consumer fell 8 notifications behind; read faster, or raise the limit with ClientBuilder::notification_buffer"
        );
        // The client still works.
        assert_eq!(client.request("ping", json!({})).await.unwrap(), json!({}));
        hold.notify_one();
    }

    #[tokio::test]
    async fn requests_of_the_server_past_the_limit_are_answered_with_an_error_at_once() {
        // Two calls; each one's stream asks an elicitation, then waits for its own gate.
        let gates = [Arc::new(Notify::new()), Arc::new(Notify::new())];
        let waits = gates.clone();
        let session = legacy(Some("s1"), move |s: &Seen| {
            let name = s.params()["name"].as_str().unwrap_or_default().to_owned();
            let gate = Arc::clone(&waits[usize::from(name == "b")]);
            Reply::Events(vec![
                Step::Message(json!({"jsonrpc": "2.0", "id": format!("q-{name}"),
                    "method": "elicitation/create",
                    "params": {"message": "?", "requestedSchema": {"type": "object", "properties": {}}}})),
                Step::Wait(gate),
                Step::Message(json!({"jsonrpc": "2.0", "id": s.id(),
                    "result": {"content": [{"type": "text", "text": name}]}})),
            ])
        });
        let f = fake(move |s: &Seen| session(s)).await;
        let release = Arc::new(Semaphore::new(0));
        let asked = Arc::new(AtomicUsize::new(0));
        let (r, a) = (Arc::clone(&release), Arc::clone(&asked));
        let client = builder()
            .max_server_requests(1)
            .on_elicitation(move |_| {
                let (r, a) = (Arc::clone(&r), Arc::clone(&a));
                async move {
                    a.fetch_add(1, Ordering::SeqCst);
                    let _ = r.acquire().await;
                    Ok(ElicitResult::decline())
                }
            })
            .connect(&f.url)
            .await
            .unwrap();
        let (c1, c2) = (client.clone(), client.clone());
        let first = tokio::spawn(async move { c1.call_tool("a", json!({})).await });
        let second = tokio::spawn(async move { c2.call_tool("b", json!({})).await });
        // One request of the server holds the only slot; the other is refused at once.
        let answers = |f: &crate::client::fake::Fake| -> Vec<Value> {
            f.posts()
                .into_iter()
                .filter(|s| s.method().is_empty() && s.body.get("id").is_some())
                .map(|s| s.body)
                .collect()
        };
        let mut refused = Vec::new();
        for _ in 0..500 {
            refused = answers(&f);
            if !refused.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(refused.len(), 1, "{refused:?}");
        let id = refused[0]["id"].clone();
        assert_eq!(
            refused[0],
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message":
                "the client is already answering 1 requests of the server, its limit (ClientBuilder::max_server_requests); elicitation/create was not answered"}})
        );
        assert_eq!(asked.load(Ordering::SeqCst), 1);
        // The held one is answered once its handler returns.
        release.add_permits(1);
        let mut all = Vec::new();
        for _ in 0..500 {
            all = answers(&f);
            if all.len() == 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let other = if id == json!("q-a") { "q-b" } else { "q-a" };
        assert_eq!(
            all[1],
            json!({"jsonrpc": "2.0", "id": other, "result": {"action": "decline"}})
        );
        for g in &gates {
            g.notify_one();
        }
        assert_eq!(
            first.await.unwrap().unwrap().content[0].as_text(),
            Some("a")
        );
        assert_eq!(
            second.await.unwrap().unwrap().content[0].as_text(),
            Some("b")
        );
        assert_eq!(asked.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn clients_built_by_default_share_no_memory() {
        // One server at this URL: whatever it answered does not pin the next client.
        let f = fake(modern(|s| Reply::result(s, json!({})))).await;
        let first = Client::builder().connect(&f.url).await.unwrap();
        let second = Client::builder().connect(&f.url).await.unwrap();
        assert_eq!(first.revision(), second.revision());
        // Each probed for itself.
        assert_eq!(f.methods(), ["server/discover", "server/discover"]);
    }
}
