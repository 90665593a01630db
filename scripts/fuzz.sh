#!/usr/bin/env bash
# Runs sake's fuzz targets (fuzz/, a workspace of its own) with cargo fuzz and libFuzzer on
# the stable toolchain (`--sanitizer none`: the sanitizers need nightly; see docs/security.md).
# One target after another, pinned to one core.
#
#   scripts/fuzz.sh                  # every target, 600 s each
#   scripts/fuzz.sh 60 router tokens # these targets, 60 s each
#
# FUZZ_CORE picks the core (default 1). New inputs go to fuzz/work/<target> (not committed);
# the committed seeds in fuzz/corpus/<target> are only read. Crashes land in
# fuzz/artifacts/<target>; the script fails if any target found one.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
SECS=${1:-600}
shift || true
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(jsonrpc headers uri_template tokens router)
CORE=${FUZZ_CORE:-1}

command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
cargo fuzz build --sanitizer none

status=0
printf '%-14s %8s %12s %10s %8s %s\n' target seconds executions exec/s cov result
for t in "${TARGETS[@]}"; do
  mkdir -p "work/$t"
  log="work/$t.log"
  rc=0
  taskset -c "$CORE" cargo fuzz run --sanitizer none "$t" "work/$t" "corpus/$t" -- \
    -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
    -print_final_stats=1 >"$log" 2>&1 || rc=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || echo "?")
  result=ok
  if [ "$rc" -ne 0 ]; then
    result="CRASH (exit $rc; see fuzz/$log and fuzz/artifacts/$t)"
    status=1
  fi
  printf '%-14s %8s %12s %10s %8s %s\n' "$t" "$SECS" "$execs" "$rate" "$cov" "$result"
done
exit $status
