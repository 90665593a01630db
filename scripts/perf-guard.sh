#!/usr/bin/env bash
# The performance guard: counts the instructions sake's bench server executes (callgrind) for
# each workload of benches/budgets.toml and fails when one exceeds its budget by more than 3%.
#
#   scripts/perf-guard.sh            measure, print each figure, its budget and the ratio
#   scripts/perf-guard.sh --bless    measure, then write the figures into benches/budgets.toml
#   scripts/perf-guard.sh --no-build use the binaries already built (benches/target or
#                                    $CARGO_TARGET_DIR)
#
# Instruction counts, not time: the server runs on a current-thread runtime
# (SAKE_BENCH_CURRENT_THREAD=1), so what it executes for a request is the same from run to run
# and on a busy machine. A per-request figure is (Ir after N2 requests − Ir after N1) ÷ (N2 − N1),
# each request sent by `sake-bench replay` on one keep-alive connection, so start-up and the
# first request's one-time work cancel out. Start-up is the whole run of `sake-server-1k`: exec,
# collecting and checking 1,000 tools, listening, and one answered `tools/call`.
# See docs/benchmarks.md, "The performance guard".
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUDGETS="$ROOT/benches/budgets.toml"
TOLERANCE=3 # percent over budget that still passes

bless= build=1
for a in "$@"; do
  case "$a" in
    --bless) bless=1 ;;
    --no-build) build= ;;
    *) echo "usage: $0 [--bless] [--no-build]" >&2; exit 2 ;;
  esac
done

scripts/debian.sh valgrind valgrind

TARGET=${CARGO_TARGET_DIR:-$ROOT/benches/target}
if [ -n "$build" ]; then
  echo "==> perf guard: building the bench server and the driver (release)"
  (cd benches && CARGO_TARGET_DIR="$TARGET" cargo build --release --quiet -p sake-bench-server -p sake-bench --bin sake-server --bin sake-server-1k --bin sake-bench)
fi
BIN="$TARGET/release"

WORK=$(mktemp -d)
SERVER_PID=
cleanup() {
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

# A port nothing listens on (checked in /proc/net/tcp, so no connection reaches a server).
listening() { # <port>: true when something listens on 127.0.0.1:<port> or 0.0.0.0:<port>
  local hex
  hex=$(printf '%04X' "$1")
  awk -v p=":$hex" '$4 == "0A" && substr($2, length($2) - 4) == p { found = 1 } END { exit !found }' /proc/net/tcp
}
free_port() {
  local p
  for _ in $(seq 1 100); do
    p=$((20000 + RANDOM % 20000))
    listening "$p" || { echo "$p"; return; }
  done
  echo "no free port" >&2; exit 1
}

# Runs <server> under callgrind, sends <count> requests of <workload> with `sake-bench replay`,
# stops it, and sets IR to the instructions it executed. (No subshells: the EXIT trap stops a
# server left running by a failure.)
instructions() { # <server> <workload> <count>
  local server=$1 workload=$2 count=$3 port out
  port=$(free_port)
  out="$WORK/callgrind.$server.$workload.$count.${SAKE_BENCH_MIDDLEWARE:-0}"
  SAKE_BENCH_CURRENT_THREAD=1 valgrind --tool=callgrind --callgrind-out-file="$out" \
    "$BIN/$server" "$port" >"$WORK/server.log" 2>&1 &
  SERVER_PID=$!
  local waited=0
  until listening "$port"; do
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
      echo "$server exited before listening:" >&2; cat "$WORK/server.log" >&2; exit 1
    fi
    sleep 0.1
    waited=$((waited + 1))
    [ $waited -lt 1200 ] || { echo "$server did not listen on $port within 120 s" >&2; exit 1; }
  done
  "$BIN/sake-bench" replay "$port" "$workload" "$count" 2>"$WORK/replay.log" ||
    { echo "sake-bench replay $workload failed:" >&2; cat "$WORK/replay.log" "$WORK/server.log" >&2; exit 1; }
  kill "$SERVER_PID"
  wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=
  IR=$(sed -n 's/^\(summary\|totals\): *\([0-9]*\).*/\2/p' "$out" | head -n1)
  [ -n "$IR" ] || { echo "no instruction count in $out" >&2; exit 1; }
}

# Sets FIGURE[<name>] to the instructions per request of <workload>, between <n1> and <n2>
# requests.
per_request() { # <name> <server> <workload> <n1> <n2>
  local a
  instructions "$2" "$3" "$4"
  a=$IR
  instructions "$2" "$3" "$5"
  FIGURE[$1]=$(((IR - a) / ($5 - $4)))
}

budget() { # <workload>
  sed -n "s/^$1 *= *\([0-9_]*\).*/\1/p" "$BUDGETS" | tr -d _
}

declare -A FIGURE
WORKLOADS=(call session list startup middleware)
echo "==> perf guard: instruction counts under callgrind ($(valgrind --version))"
per_request call sake-server call 500 2500
per_request session sake-server session 500 2500
per_request list sake-server-1k list 50 250
instructions sake-server-1k call 1
FIGURE[startup]=$IR
# The same tools/call through one `from_fn` layer and an in-memory rate limit.
export SAKE_BENCH_MIDDLEWARE=1
per_request middleware sake-server call 500 2500
unset SAKE_BENCH_MIDDLEWARE

declare -A WHAT=(
  [call]="2026-07-28 tools/call, per request"
  [session]="2025-11-25 session tools/call, per request"
  [list]="2026-07-28 tools/list of 1,000 tools, per request"
  [startup]="start-up with 1,000 tools to the first answered tools/call"
  [middleware]="2026-07-28 tools/call through from_fn and a rate limit, per request"
)

if [ -n "$bless" ]; then
  for w in "${WORKLOADS[@]}"; do
    grep -q "^$w *=" "$BUDGETS" || { echo "$BUDGETS has no line for $w" >&2; exit 1; }
    sed -i "s/^$w *= *[0-9_]*/$w = ${FIGURE[$w]}/" "$BUDGETS"
  done
  echo "==> wrote the figures into $BUDGETS:"
fi

failed=()
printf '%-10s %14s %14s %8s  %s\n' workload instructions budget ratio what
for w in "${WORKLOADS[@]}"; do
  b=$(budget "$w")
  [ -n "$b" ] || { echo "$BUDGETS has no budget for $w" >&2; exit 1; }
  f=${FIGURE[$w]}
  ratio=$(awk -v f="$f" -v b="$b" 'BEGIN { printf "%.3f", f / b }')
  verdict=ok
  if [ $((f * 100)) -gt $((b * (100 + TOLERANCE))) ]; then verdict="OVER BUDGET"; failed+=("$w"); fi
  printf '%-10s %14d %14d %7s×  %s  %s\n' "$w" "$f" "$b" "$ratio" "${WHAT[$w]}" "$verdict"
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "perf guard: ${failed[*]} over budget by more than $TOLERANCE%." >&2
  echo "Find the cause with callgrind_annotate (docs/benchmarks.md, \"The performance guard\"); raise a budget only on purpose, in its own reviewed change." >&2
  exit 1
fi
echo "==> perf guard: every figure within $TOLERANCE% of its budget"
