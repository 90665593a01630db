//! A counting global allocator for the bench servers (sake and bare axum): with
//! `BENCH_COUNT_ALLOCS=1` in the environment, every allocation is counted, and each `SIGUSR1`
//! prints `BENCH_ALLOCS allocs=<n> reallocs=<n>` on stderr. `sake-bench`'s "allocs" workload
//! reads two such lines around a known number of requests (docs/benchmarks.md).
//!
//! Off (the default), an allocation costs one load and one branch more than the system
//! allocator's.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

pub struct Counting;

static ON: AtomicBool = AtomicBool::new(false);
static ALLOCS: AtomicU64 = AtomicU64::new(0);
static REALLOCS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if ON.load(Relaxed) {
            ALLOCS.fetch_add(1, Relaxed);
        }
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if ON.load(Relaxed) {
            ALLOCS.fetch_add(1, Relaxed);
        }
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if ON.load(Relaxed) {
            REALLOCS.fetch_add(1, Relaxed);
        }
        // SAFETY: the caller's contract, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Turns counting on when `BENCH_COUNT_ALLOCS=1`, and prints the counts on each `SIGUSR1`
/// (a task on the current runtime).
pub fn start() {
    if !std::env::var("BENCH_COUNT_ALLOCS").is_ok_and(|v| v == "1") {
        return;
    }
    ON.store(true, Relaxed);
    tokio::spawn(async {
        use tokio::signal::unix::{SignalKind, signal};
        let Ok(mut usr1) = signal(SignalKind::user_defined1()) else {
            eprintln!("BENCH_COUNT_ALLOCS: cannot listen for SIGUSR1");
            return;
        };
        while usr1.recv().await.is_some() {
            eprintln!(
                "BENCH_ALLOCS allocs={} reallocs={}",
                ALLOCS.load(Relaxed),
                REALLOCS.load(Relaxed)
            );
        }
    });
}
