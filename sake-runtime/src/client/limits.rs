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
