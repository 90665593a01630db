//! Which era a server speaks: the `server/discover` verdict, the fallback rules, and the memory
//! of what each server spoke.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

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

/// What the client remembers per server (URL, or command line for stdio): the era found by
/// the last successful negotiation, so that the next connection skips the probe.
///
/// Cheap to clone; clones share the memory. [`EraCache::global`] is the default.
#[derive(Clone, Debug, Default)]
pub struct EraCache {
    inner: Arc<Mutex<HashMap<String, Remembered>>>,
}

impl EraCache {
    /// An empty memory of its own.
    pub fn new() -> Self {
        EraCache::default()
    }

    /// The process-wide memory every client uses unless given another.
    pub fn global() -> Self {
        static GLOBAL: OnceLock<EraCache> = OnceLock::new();
        GLOBAL.get_or_init(EraCache::new).clone()
    }

    /// What is remembered of `server`.
    pub fn get(&self, server: &str) -> Option<Remembered> {
        self.inner.lock().ok()?.get(server).cloned()
    }

    /// Remembers what `server` speaks.
    pub fn remember(&self, server: &str, what: Remembered) {
        if let Ok(mut m) = self.inner.lock() {
            m.insert(server.to_owned(), what);
        }
    }

    /// Forgets `server`: the next connection probes again.
    pub fn forget(&self, server: &str) {
        if let Ok(mut m) = self.inner.lock()
            && m.remove(server).is_some()
        {
            tracing::debug!(server, "forgetting what the server speaks");
        }
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
                    Revision::LATEST
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
