//! When a stdio upstream (a child process) is started again after it exited: with backoff —
//! 100 ms, doubling up to 30 s, and back to 100 ms once it stayed up a minute — so that a
//! child that exits at once is never restarted in a loop. Meanwhile its tools answer at once
//! that it is unavailable, without starting it (docs/composition.md, "Failure behaviour").
//!
//! A leaf: the proxy (`proxy.rs`) keeps one [`Backoff`] per command upstream and asks it.

use std::time::Duration;

use tokio::time::Instant;

/// The wait before the first restart.
pub(crate) const FIRST: Duration = Duration::from_millis(100);
/// The longest wait between two starts.
pub(crate) const MOST: Duration = Duration::from_secs(30);
/// How long a child must stay up for its next exit to be restarted after [`FIRST`] again.
pub(crate) const STEADY: Duration = Duration::from_secs(60);

/// The restart schedule of one child process.
#[derive(Debug)]
pub(crate) struct Backoff {
    /// The wait after the next exit or failed start.
    next: Duration,
    /// When the running child started (`None`: none runs).
    up_since: Option<Instant>,
    /// No start before this, and why it is down (for the error its callers get).
    down: Option<(Instant, String)>,
    /// How many starts were tried, the first included.
    starts: u64,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            next: FIRST,
            up_since: None,
            down: None,
            starts: 0,
        }
    }
}

impl Backoff {
    /// Whether a start may be tried at `now`: `Err` with how long until it may, and why it
    /// is down.
    pub(crate) fn may_start(&self, now: Instant) -> Result<(), (Duration, &str)> {
        match &self.down {
            Some((at, why)) if *at > now => Err((*at - now, why)),
            _ => Ok(()),
        }
    }

    /// A start is tried: its number (1 for the first).
    pub(crate) fn starting(&mut self) -> u64 {
        self.starts += 1;
        self.starts
    }

    /// The child started (its connection is made).
    pub(crate) fn started(&mut self, now: Instant) {
        self.up_since = Some(now);
        self.down = None;
    }

    /// The child exited, or a start failed, at `now`, for `why`: the wait before the next
    /// start (after a minute up, the schedule starts over).
    pub(crate) fn went_down(&mut self, now: Instant, why: String) -> Duration {
        if self
            .up_since
            .take()
            .is_some_and(|since| now.saturating_duration_since(since) >= STEADY)
        {
            self.next = FIRST;
        }
        let wait = self.next;
        self.next = (self.next * 2).min(MOST);
        self.down = Some((now + wait, why));
        wait
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_doubles_up_to_thirty_seconds_and_starts_over_after_a_minute_up() {
        let t0 = Instant::now();
        let mut b = Backoff::default();
        assert!(b.may_start(t0).is_ok());
        assert_eq!(b.starting(), 1);
        let mut now = t0;
        let mut waits = Vec::new();
        for _ in 0..12 {
            let wait = b.went_down(now, "it exited".into());
            // Not before the wait is over; then it may.
            let (left, why) = b.may_start(now).unwrap_err();
            assert_eq!((left, why), (wait, "it exited"));
            assert!(b.may_start(now + wait - Duration::from_millis(1)).is_err());
            now += wait;
            assert!(b.may_start(now).is_ok());
            b.starting();
            waits.push(wait.as_millis());
        }
        assert_eq!(
            waits,
            [
                100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 30000, 30000, 30000
            ]
        );
        assert_eq!(b.starting(), 14);
        // Up for less than a minute: the wait goes on growing (it is at its most here).
        b.started(now);
        now += STEADY - Duration::from_secs(1);
        assert_eq!(b.went_down(now, "again".into()), MOST);
        // Up for a minute: the first wait again.
        now += MOST;
        b.started(now);
        now += STEADY;
        assert_eq!(b.went_down(now, "once more".into()), FIRST);
        assert_eq!(b.went_down(now, "and again".into()), FIRST * 2);
    }

    #[test]
    fn a_start_clears_the_wait() {
        let now = Instant::now();
        let mut b = Backoff::default();
        b.went_down(now, "failed".into());
        assert!(b.may_start(now).is_err());
        b.started(now);
        assert!(b.may_start(now).is_ok());
    }
}
