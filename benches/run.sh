#!/usr/bin/env bash
# Benchmarks sake against bare axum (the limit of the stack) and rmcp (the official Rust SDK),
# in one run. See docs/benchmarks.md.
#
#   benches/run.sh                      every workload, 3 interleaved rounds (about 30 minutes)
#   benches/run.sh --quick              a smoke run: 1 round of 2 s, 2,000 sessions, no build cost
#   benches/run.sh --only call,list     some workloads (call session list progress auth bus startup memory build stdio pages)
#   benches/run.sh --rounds 5 --duration 20 --out results.md   (the chart goes to results.svg)
#   benches/run.sh --micro              the divan micro-benchmarks of the request path instead
#
# Servers are pinned to core 0 and the load generator (wrk, or sake-bench itself) to core 1.
set -euo pipefail
cd "$(dirname "$0")"

if ! command -v wrk >/dev/null; then
  echo "==> installing wrk (Debian package)"
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq wrk; else sudo apt-get update -qq && sudo apt-get install -y -qq wrk; fi
fi
command -v taskset >/dev/null || { echo "taskset (util-linux) is needed" >&2; exit 1; }

if [ "${1:-}" = "--micro" ]; then
  shift
  exec cargo bench -p sake-micro "$@"
fi

echo "==> building the servers and the driver (release)"
cargo build --release -p sake-bench-server -p axum-bench-server -p rmcp-bench-server -p sake-bench

echo "==> running (load: $(cut -d' ' -f1-3 /proc/loadavg))"
exec taskset -c 1 target/release/sake-bench "$@"
