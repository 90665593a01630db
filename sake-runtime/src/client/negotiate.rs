//! Which era a server speaks: the `server/discover` verdict, the fallback rules, and the memory
//! of what each server spoke.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::core::{Answer, is_invalid_reply};
use crate::protocol::Revision;
use crate::protocol::jsonrpc::{RpcError, code};
use crate::protocol::types::DiscoverResult;

/// What a server was found to speak.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Remembered {
    /// 2026-07-28, with the `server/discover` answer.
    Modern(Box<DiscoverResult>),
    /// A handshake revision (the one `initialize` settled on).
    Legacy(Revision),
}

/// How many servers an [`EraCache`] remembers by default.
const DEFAULT_CACHE_ENTRIES: usize = 256;
/// How long an [`EraCache`] remembers a server by default.
const DEFAULT_CACHE_AGE: Duration = Duration::from_secs(60 * 60);
/// The longest age counted (about a century).
const FOREVER: Duration = Duration::from_secs(100 * 365 * 24 * 60 * 60);
/// The largest `server/discover` answer kept (a larger one is not remembered: the server is
/// probed again next time).
const MAX_REMEMBERED_BYTES: usize = 64 << 10;

/// What the client remembers per server (URL, or command line for stdio): the era found by
/// the last successful negotiation, so that the next connection skips the probe.
///
/// Each client has one of its own unless it is given one with
/// [`ClientBuilder::cache`](super::ClientBuilder::cache): share a cache between the clients
/// that should learn from each other (clients with the same credentials: a `private`
/// `server/discover` answer is reused by every client of the cache). A cache is bounded: it
/// keeps at most 256 servers, each for at most an hour and, for a 2026-07-28 server, no
/// longer than the `ttlMs` of its `server/discover` answer; the server whose entry expires
/// first makes room for a new one. [`EraCache::with_limits`] sets other bounds.
///
/// Cheap to clone; clones share the memory.
#[derive(Clone, Debug)]
pub struct EraCache {
    inner: Arc<Mutex<Memory>>,
}

impl Default for EraCache {
    fn default() -> Self {
        EraCache::new()
    }
}

/// The entries, and an index by expiry (what expires first, in O(log n)).
#[derive(Debug)]
struct Memory {
    capacity: usize,
    max_age: Duration,
    entries: HashMap<String, Entry>,
    by_expiry: BTreeMap<(Instant, u64), String>,
    next: u64,
}

#[derive(Debug)]
struct Entry {
    what: Remembered,
    key: (Instant, u64),
}

impl Memory {
    fn remove(&mut self, server: &str) -> Option<Remembered> {
        let entry = self.entries.remove(server)?;
        self.by_expiry.remove(&entry.key);
        Some(entry.what)
    }

    /// Forgets every entry that expired by `now`.
    fn expire(&mut self, now: Instant) {
        while let Some(entry) = self.by_expiry.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let server = entry.remove();
            self.entries.remove(&server);
        }
    }
}

impl EraCache {
    /// An empty memory: 256 servers, an hour each.
    pub fn new() -> Self {
        EraCache::with_limits(DEFAULT_CACHE_ENTRIES, DEFAULT_CACHE_AGE)
    }

    /// An empty memory that keeps at most `entries` servers (at least one), each for at most
    /// `max_age`.
    pub fn with_limits(entries: usize, max_age: Duration) -> Self {
        EraCache {
            inner: Arc::new(Mutex::new(Memory {
                capacity: entries.max(1),
                max_age,
                entries: HashMap::new(),
                by_expiry: BTreeMap::new(),
                next: 0,
            })),
        }
    }

    /// What is remembered of `server` (nothing once it expired).
    pub fn get(&self, server: &str) -> Option<Remembered> {
        let mut m = self.inner.lock().ok()?;
        m.expire(Instant::now());
        m.entries.get(server).map(|e| e.what.clone())
    }

    /// Remembers what `server` speaks, for the cache's age (a 2026-07-28 server: at most the
    /// `ttlMs` of its answer; `0` remembers nothing). An answer larger than 64 KiB is not
    /// remembered.
    pub fn remember(&self, server: &str, what: Remembered) {
        let mut ttl = None;
        if let Remembered::Modern(d) = &what {
            ttl = d.ttl_ms.map(Duration::from_millis);
            let size = serde_json::to_vec(d).map_or(usize::MAX, |v| v.len());
            if size > MAX_REMEMBERED_BYTES {
                tracing::debug!(
                    server,
                    size,
                    "not remembering a large server/discover answer"
                );
                self.forget(server);
                return;
            }
        }
        let now = Instant::now();
        let Ok(mut m) = self.inner.lock() else {
            return;
        };
        m.remove(server);
        let age = ttl.map_or(m.max_age, |t| t.min(m.max_age));
        if age.is_zero() {
            return;
        }
        // An age beyond what the clock can count is as long as it can.
        let Some(expires) = now.checked_add(age.min(FOREVER)) else {
            return;
        };
        m.expire(now);
        while m.entries.len() >= m.capacity {
            // Full: the entry that expires first makes room.
            let Some((_, oldest)) = m.by_expiry.pop_first() else {
                break;
            };
            m.entries.remove(&oldest);
        }
        let key = (expires, m.next);
        m.next = m.next.wrapping_add(1);
        m.by_expiry.insert(key, server.to_owned());
        m.entries.insert(server.to_owned(), Entry { what, key });
    }

    /// Forgets `server`: the next connection probes again.
    pub fn forget(&self, server: &str) {
        if let Ok(mut m) = self.inner.lock()
            && m.remove(server).is_some()
        {
            tracing::debug!(server, "forgetting what the server speaks");
        }
    }

    /// How many servers are remembered (expired ones not counted).
    pub fn len(&self) -> usize {
        self.inner.lock().map_or(0, |mut m| {
            m.expire(Instant::now());
            m.entries.len()
        })
    }

    /// Whether no server is remembered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The statuses whose answer to `server/discover` means "a server of the handshake era",
/// unless the body is a 2026-07-28 JSON-RPC error.
pub(crate) const FALLBACK_STATUSES: [u16; 5] = [400, 404, 405, 415, 422];

/// The codes that exist only from 2026-07-28.
pub(crate) fn is_2026_07_28_code(c: i32) -> bool {
    matches!(
        c,
        code::HEADER_MISMATCH
            | code::MISSING_REQUIRED_CLIENT_CAPABILITY
            | code::UNSUPPORTED_PROTOCOL_VERSION
    )
}

/// An answer's body, as far as negotiation cares.
#[derive(Debug)]
pub(crate) enum Body {
    /// A JSON-RPC response to the request.
    Response(Answer),
    /// Anything else (empty, text, JSON that is no response to the request).
    Other(String),
}

/// One exchange: the HTTP status (200 on stdio) and the body.
#[derive(Debug)]
pub(crate) struct Exchange {
    pub(crate) status: u16,
    pub(crate) body: Body,
}

/// What to do after a `server/discover` probe.
#[derive(Debug)]
pub(crate) enum Verdict {
    /// Speak this revision (reached by discovery), which the `DiscoverResult` lists.
    Modern(Revision, Box<DiscoverResult>),
    /// Probe again at this revision (a -32022 that lists it).
    Retry(Revision),
    /// Fall back to `initialize`; the reason is logged.
    Fallback(String),
    /// Give up with this error; nothing is remembered.
    Fail(FailReason),
}

/// Why negotiation failed.
#[derive(Debug)]
pub(crate) enum FailReason {
    Rpc(RpcError, u16),
    Http(u16, String),
    NoCommonVersion(String),
}

/// The newest of `versions` that a client reaches with `server/discover`; `None` when the
/// list names none (only handshake revisions, or revisions this client does not know).
pub(crate) fn newest_discoverable(versions: &[String]) -> Option<Revision> {
    versions
        .iter()
        .filter_map(|v| Revision::parse(v))
        .filter(|r| r.features().discover)
        .max()
}

/// Classifies the answer to a `server/discover` probe (the fallback rules):
/// - a `DiscoverResult` listing a revision reached by discovery (2026-07-28) → speak it;
/// - -32601 or -32602 → fall back;
/// - 400, 404, 405, 415 or 422 without a 2026-07-28 JSON-RPC error → fall back;
/// - a 2xx answer that is no JSON-RPC error at all (not a `DiscoverResult`, not JSON-RPC,
///   empty) → fall back;
/// - -32022 listing a revision reached by discovery → probe again at it (once); listing only
///   handshake revisions → fall back;
/// - anything else (401, 403, 429, 5xx, -32020, -32021, other errors) → fail.
pub(crate) fn classify_discover(ex: &Exchange, retried: bool) -> Verdict {
    let status = ex.status;
    let ok = (200..300).contains(&status);
    if !ok && !FALLBACK_STATUSES.contains(&status) {
        return Verdict::Fail(match &ex.body {
            Body::Response(Err(e)) => FailReason::Rpc(e.clone(), status),
            Body::Response(Ok(raw)) => FailReason::Http(status, raw.get().to_owned()),
            Body::Other(text) => FailReason::Http(status, text.clone()),
        });
    }
    match &ex.body {
        Body::Response(Ok(raw)) => match serde_json::from_str::<DiscoverResult>(raw.get()) {
            Ok(d) => match newest_discoverable(&d.supported_versions) {
                Some(rev) => Verdict::Modern(rev, Box::new(d)),
                None => Verdict::Fallback(format!(
                    "server/discover lists {:?}, not {}",
                    d.supported_versions,
                    Revision::LATEST_STATELESS
                )),
            },
            Err(e) => Verdict::Fallback(format!(
                "server/discover answered with no DiscoverResult ({e})"
            )),
        },
        Body::Response(Err(e)) if is_invalid_reply(e) => Verdict::Fallback(format!(
            "server/discover got no JSON-RPC answer: {}",
            e.message
        )),
        Body::Response(Err(e)) => match e.code {
            code::METHOD_NOT_FOUND | code::INVALID_PARAMS => Verdict::Fallback(format!(
                "server/discover answered {} ({})",
                e.code, e.message
            )),
            code::UNSUPPORTED_PROTOCOL_VERSION => {
                let supported: Vec<String> = e
                    .data
                    .as_ref()
                    .and_then(|d| d.get("supported"))
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(|v| v.as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default();
                if let Some(rev) = newest_discoverable(&supported) {
                    if retried {
                        Verdict::Fail(FailReason::Rpc(e.clone(), status))
                    } else {
                        Verdict::Retry(rev)
                    }
                } else if supported
                    .iter()
                    .any(|v| Revision::parse(v).is_some_and(|r| !r.features().discover))
                {
                    Verdict::Fallback(format!("the server speaks only {supported:?}"))
                } else {
                    Verdict::Fail(FailReason::NoCommonVersion(format!(
                        "the server speaks {supported:?}; this client speaks {:?}",
                        Revision::ALL.map(Revision::as_str)
                    )))
                }
            }
            c if is_2026_07_28_code(c) => Verdict::Fail(FailReason::Rpc(e.clone(), status)),
            _ if !ok => Verdict::Fallback(format!(
                "server/discover answered HTTP {status} with {} ({})",
                e.code, e.message
            )),
            _ => Verdict::Fail(FailReason::Rpc(e.clone(), status)),
        },
        Body::Other(text) => Verdict::Fallback(format!(
            "server/discover answered HTTP {status} without a JSON-RPC error: {text:?}"
        )),
    }
}

/// Whether an error answer suggests the server's revision changed (and the memory of it is
/// stale): a parse error, an invalid request, an unknown method, or a 2026-07-28 code. Tool
/// errors, -32602, -32603 and the server's own codes keep it.
pub(crate) fn error_forgets(e: &RpcError) -> bool {
    matches!(
        e.code,
        code::PARSE_ERROR | code::INVALID_REQUEST | code::METHOD_NOT_FOUND
    ) || is_2026_07_28_code(e.code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use serde_json::value::RawValue;
    use std::time::Duration;

    fn ok(v: Value) -> Body {
        Body::Response(Ok(RawValue::from_string(v.to_string()).unwrap()))
    }
    fn err(code: i32, data: Option<Value>) -> Body {
        let mut e = RpcError::new(code, "x");
        if let Some(d) = data {
            e = e.with_data(d);
        }
        Body::Response(Err(e))
    }
    fn verdict(status: u16, body: Body) -> &'static str {
        match classify_discover(&Exchange { status, body }, false) {
            Verdict::Modern(..) => "modern",
            Verdict::Retry(_) => "retry",
            Verdict::Fallback(_) => "fallback",
            Verdict::Fail(_) => "fail",
        }
    }

    #[test]
    fn discover_verdicts_follow_the_rules() {
        let discover = json!({"resultType":"complete","supportedVersions":["2026-07-28"],
            "capabilities":{},"ttlMs":0,"cacheScope":"private"});
        assert_eq!(verdict(200, ok(discover)), "modern");
        assert_eq!(
            verdict(
                200,
                ok(json!({"supportedVersions":["2025-11-25"],"capabilities":{}}))
            ),
            "fallback"
        );
        assert_eq!(verdict(200, ok(json!({}))), "fallback");
        assert_eq!(verdict(200, err(-32601, None)), "fallback");
        assert_eq!(verdict(200, err(-32602, None)), "fallback");
        assert_eq!(verdict(404, err(-32601, None)), "fallback");
        assert_eq!(verdict(400, err(-32000, None)), "fallback");
        for s in FALLBACK_STATUSES {
            assert_eq!(verdict(s, Body::Other(String::new())), "fallback", "{s}");
        }
        assert_eq!(verdict(200, Body::Other("<html>".into())), "fallback");
        assert_eq!(verdict(400, err(-32020, None)), "fail");
        assert_eq!(verdict(400, err(-32021, None)), "fail");
        assert_eq!(
            verdict(400, err(-32022, Some(json!({"supported":["2026-07-28"]})))),
            "retry"
        );
        assert_eq!(
            verdict(400, err(-32022, Some(json!({"supported":["2025-06-18"]})))),
            "fallback"
        );
        assert_eq!(
            verdict(400, err(-32022, Some(json!({"supported":["v9"]})))),
            "fail"
        );
        for s in [401, 403, 429, 500, 502, 503] {
            assert_eq!(verdict(s, Body::Other(String::new())), "fail", "{s}");
            assert_eq!(verdict(s, err(-32601, None)), "fail", "{s}");
        }
        assert_eq!(verdict(200, err(-32603, None)), "fail");
    }

    #[test]
    fn the_revision_to_discover_is_the_newest_listed_one_reached_by_discovery() {
        let list = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            newest_discoverable(&list(&["2025-11-25", "2026-07-28", "2099-01-01"])),
            Some(Revision::V2026_07_28)
        );
        assert_eq!(
            newest_discoverable(&list(&["2025-11-25", "2025-06-18"])),
            None
        );
        assert_eq!(newest_discoverable(&[]), None);
        let ex = Exchange {
            status: 400,
            body: err(
                -32022,
                Some(json!({"supported": ["2025-11-25", "2026-07-28"]})),
            ),
        };
        assert!(matches!(
            classify_discover(&ex, false),
            Verdict::Retry(Revision::V2026_07_28)
        ));
        let ex = Exchange {
            status: 200,
            body: ok(json!({"supportedVersions": ["2026-07-28"], "capabilities": {}})),
        };
        assert!(matches!(
            classify_discover(&ex, false),
            Verdict::Modern(Revision::V2026_07_28, _)
        ));
    }

    fn modern(ttl_ms: Option<u64>, instructions: &str) -> Remembered {
        let mut d = json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
            "capabilities": {}, "cacheScope": "private", "instructions": instructions});
        if let Some(t) = ttl_ms {
            d["ttlMs"] = json!(t);
        }
        Remembered::Modern(Box::new(serde_json::from_value(d).unwrap()))
    }

    #[test]
    fn a_cache_holds_at_most_its_entries_and_the_soonest_to_expire_makes_room() {
        let cache = EraCache::with_limits(3, Duration::from_secs(60));
        cache.remember("a", Remembered::Legacy(Revision::V2025_06_18));
        // b expires first: its server said so.
        cache.remember("b", modern(Some(10_000), ""));
        cache.remember("c", Remembered::Legacy(Revision::V2025_11_25));
        assert_eq!(cache.len(), 3);
        cache.remember("d", Remembered::Legacy(Revision::V2025_03_26));
        assert_eq!(cache.len(), 3);
        assert_eq!(cache.get("b"), None);
        // Then the oldest of equal ages.
        cache.remember("e", Remembered::Legacy(Revision::V2025_03_26));
        assert_eq!(cache.get("a"), None);
        for k in ["c", "d", "e"] {
            assert!(cache.get(k).is_some(), "{k}");
        }
        // Remembering a server again replaces its entry, and takes no room.
        cache.remember("e", Remembered::Legacy(Revision::V2025_11_25));
        assert_eq!(cache.len(), 3);
        assert_eq!(
            cache.get("e"),
            Some(Remembered::Legacy(Revision::V2025_11_25))
        );
        cache.forget("e");
        assert_eq!(cache.len(), 2);
        // A thousand servers later, still three.
        for n in 0..1000 {
            cache.remember(&format!("s{n}"), Remembered::Legacy(Revision::V2025_11_25));
        }
        assert_eq!(cache.len(), 3);
        assert!(cache.get("s999").is_some());
    }

    #[test]
    fn entries_expire_with_the_cache_age_and_the_discover_ttl() {
        let cache = EraCache::with_limits(16, Duration::from_millis(200));
        cache.remember("legacy", Remembered::Legacy(Revision::V2025_11_25));
        cache.remember("no-ttl", modern(None, ""));
        cache.remember("short-ttl", modern(Some(20), ""));
        cache.remember("long-ttl", modern(Some(3_600_000), ""));
        // ttlMs 0: fresh for no time at all, so not remembered.
        cache.remember("zero-ttl", modern(Some(0), ""));
        assert_eq!(cache.get("zero-ttl"), None);
        assert_eq!(cache.len(), 4);
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(cache.get("short-ttl"), None);
        assert_eq!(cache.len(), 3);
        std::thread::sleep(Duration::from_millis(200));
        // The cache's own age bounds every entry, a long ttlMs included.
        assert!(cache.is_empty());
        for k in ["legacy", "no-ttl", "long-ttl"] {
            assert_eq!(cache.get(k), None, "{k}");
        }
    }

    #[test]
    fn a_large_discover_answer_is_not_remembered() {
        let cache = EraCache::new();
        cache.remember("small", modern(None, &"i".repeat(1000)));
        cache.remember("large", modern(None, &"i".repeat(MAX_REMEMBERED_BYTES)));
        assert!(cache.get("small").is_some());
        assert_eq!(cache.get("large"), None);
        // And a large answer replaces what was remembered before.
        cache.remember("small", modern(None, &"i".repeat(MAX_REMEMBERED_BYTES)));
        assert!(cache.is_empty());
    }

    #[test]
    fn forgetting_codes() {
        for c in [-32700, -32600, -32601, -32020, -32021, -32022] {
            assert!(error_forgets(&RpcError::new(c, "")), "{c}");
        }
        for c in [-32602, -32603, -32000, -32002, 1] {
            assert!(!error_forgets(&RpcError::new(c, "")), "{c}");
        }
    }
}
