//! The process's memory watermark (`Limits::memory_watermark`): past it, new state a client
//! would make the server keep — handshake sessions, subscriptions, listen streams, tasks — is
//! refused with 503 before the machine swaps, while requests that keep nothing are still
//! served. The resident size is read from `/proc/self/statm` at most once a second, and only
//! on those paths (never per call). Elsewhere than Linux there is nothing to read: no
//! watermark.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a reading of the resident size is trusted.
const FRESH: Duration = Duration::from_secs(1);

/// The watermark and the last reading.
#[derive(Debug)]
pub(crate) struct Watermark {
    limit: Option<u64>,
    last: Mutex<Option<(Instant, u64)>>,
}

impl Watermark {
    /// A watermark at `limit` bytes of resident memory; `None`: none.
    pub fn new(limit: Option<u64>) -> Watermark {
        Watermark {
            limit,
            last: Mutex::new(None),
        }
    }

    /// The default: 80% of what the process may use — the machine's memory, or the cgroup's
    /// limit when it has a lower one — so that the server refuses new state before the machine
    /// swaps or the container is killed. `None` where neither can be read.
    pub fn default_limit() -> Option<u64> {
        let total = machine_memory();
        let cgroup = cgroup_limit();
        let allowed = match (total, cgroup) {
            (Some(t), Some(c)) => t.min(c),
            (t, c) => t.or(c)?,
        };
        Some(allowed / 5 * 4)
    }

    /// `Err(resident, limit)` when the process is past its watermark.
    pub fn check(&self) -> Result<(), (u64, u64)> {
        let Some(limit) = self.limit else {
            return Ok(());
        };
        let now = Instant::now();
        let mut last = self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let resident = match *last {
            Some((at, bytes)) if now.duration_since(at) < FRESH => bytes,
            _ => {
                let Some(bytes) = resident_bytes() else {
                    return Ok(());
                };
                *last = Some((now, bytes));
                bytes
            }
        };
        if resident > limit {
            Err((resident, limit))
        } else {
            Ok(())
        }
    }
}

/// The process's resident size, in bytes.
fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages.saturating_mul(page_size()))
}

fn page_size() -> u64 {
    // The kernel's page size is 4 KiB on the machines sake runs on (x86-64, and arm64 as most
    // distributions build it); a larger one only makes the figure conservative.
    4096
}

/// `MemTotal` of `/proc/meminfo`, in bytes.
fn machine_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

/// The cgroup v2 memory limit (`memory.max`), when there is one.
fn cgroup_limit() -> Option<u64> {
    let max = std::fs::read_to_string("/sys/fs/cgroup/memory.max").ok()?;
    max.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_watermark_below_the_resident_size_refuses_and_none_never_does() {
        assert_eq!(Watermark::new(None).check(), Ok(()));
        if cfg!(target_os = "linux") {
            let (resident, limit) = Watermark::new(Some(1)).check().unwrap_err();
            assert!(resident > 1_000_000, "{resident}");
            assert_eq!(limit, 1);
            assert_eq!(Watermark::new(Some(u64::MAX)).check(), Ok(()));
            let default = Watermark::default_limit().expect("Linux tells its memory");
            assert!(default > resident, "{default} {resident}");
        }
    }
}
