#!/usr/bin/env bash
# The performance guard: counts the instructions sake's bench server executes (callgrind) for
# each workload of benches/budgets.toml and fails when one exceeds its budget by more than 3%.
#
#   scripts/perf-guard.sh            measure, print each figure, its budget and the ratio
#   scripts/perf-guard.sh --bless    measure, then write the figures into benches/budgets.toml
#   scripts/perf-guard.sh --no-build use the binaries already built (benches/target or
#                                    $CARGO_TARGET_DIR)
#   scripts/perf-guard.sh --only call,call_c32   some figures (with their `_l1`), for iterating
#                                    on a change; CI runs them all
#
# Instruction counts, not time: the server runs on a current-thread runtime
# (SAKE_BENCH_CURRENT_THREAD=1), so what it executes for a request is the same from run to run
# and on a busy machine. A per-request figure is (Ir after N2 requests − Ir after N1) ÷ (N2 − N1),
# each request sent by `sake-bench replay` on one keep-alive connection, so start-up and the
# first request's one-time work cancel out. Start-up is the whole run of `sake-server-1k`: exec,
# collecting and checking 1,000 tools, listening, and one answered `tools/call`.
#
# Under concurrency (`call_c32`, `session_c256`, ...): the same subtraction, the requests spread
# over 32 or 256 keep-alive connections at once (`sake-bench replay ... <connections>`: each
# sends its next request when its previous one is answered, so the server has up to that many
# in flight), counted by callgrind with its cache simulation on a fixed cache (not the host's:
# the same figure on every machine): instructions per request, and L1 misses per request
# (`_l1`: instruction fetch, data read and data write misses) — what grows when per-request or
# per-connection state is large or scattered. Last-level misses are printed, not guarded.
# See docs/benchmarks.md, "The performance guard".
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUDGETS="$ROOT/benches/budgets.toml"
TOLERANCE=3 # percent over budget that still passes
TOLERANCE_L1=5 # for the simulated L1 misses (`_l1`), which move up to 2% from run to run

bless= build=1 only=
while [ $# -gt 0 ]; do
  case "$1" in
    --bless) bless=1 ;;
    --no-build) build= ;;
    --only) only=",${2:?--only needs a list},"; shift ;;
    *) echo "usage: $0 [--bless] [--no-build] [--only call,session,list,startup,call_c32,session_c32,call_c256,session_c256]" >&2; exit 2 ;;
  esac
  shift
done
wanted() { [ -z "$only" ] || [[ "$only" == *",$1,"* ]]; }

scripts/debian.sh valgrind valgrind

TARGET=${CARGO_TARGET_DIR:-$ROOT/benches/target}
if [ -n "$build" ]; then
  echo "==> perf guard: building the bench server and the driver (release)"
  bins=(--bin sake-server --bin sake-bench)
  if wanted list || wanted startup; then bins+=(--bin sake-server-1k); fi
  (cd benches && CARGO_TARGET_DIR="$TARGET" cargo build --release --quiet -p sake-bench-server -p sake-bench "${bins[@]}")
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

# The simulated caches of the concurrent figures: 32 KiB 8-way L1s, a 2 MiB 16-way last level.
CACHE=(--cache-sim=yes --I1=32768,8,64 --D1=32768,8,64 --LL=2097152,16,64)

# Runs <server> under callgrind, sends <count> requests of <workload> with `sake-bench replay`
# over <connections> (default 1) at once, stops it, and sets IR to the instructions it
# executed; with connections > 1 the cache simulation runs too and L1 and LL are set to its
# misses. (No subshells: the EXIT trap stops a server left running by a failure.)
instructions() { # <server> <workload> <count> [<connections>]
  local server=$1 workload=$2 count=$3 conns=${4:-1} port out sim=()
  port=$(free_port)
  out="$WORK/callgrind.$server.$workload.$count.$conns.${SAKE_BENCH_MIDDLEWARE:-0}"
  [ "$conns" -gt 1 ] && sim=("${CACHE[@]}")
  SAKE_BENCH_CURRENT_THREAD=1 valgrind --tool=callgrind "${sim[@]}" --callgrind-out-file="$out" \
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
  "$BIN/sake-bench" replay "$port" "$workload" "$count" "$conns" 2>"$WORK/replay.log" ||
    { echo "sake-bench replay $workload failed:" >&2; cat "$WORK/replay.log" "$WORK/server.log" >&2; exit 1; }
  kill "$SERVER_PID"
  wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=
  IR=$(sed -n 's/^\(summary\|totals\): *\([0-9]*\).*/\2/p' "$out" | head -n1)
  [ -n "$IR" ] || { echo "no instruction count in $out" >&2; exit 1; }
  if [ "$conns" -gt 1 ]; then
    # The totals line lists the events in the order of the `events:` line.
    read -r L1 LL < <(awk '
      /^events:/ { for (i = 2; i <= NF; i++) ev[i - 1] = $i }
      /^(summary|totals):/ && !done { for (i = 2; i <= NF; i++) t[ev[i - 1]] = $i; done = 1 }
      END { print t["I1mr"] + t["D1mr"] + t["D1mw"], t["ILmr"] + t["DLmr"] + t["DLmw"] }' "$out")
    [ -n "$L1" ] || { echo "no cache misses in $out" >&2; exit 1; }
  fi
}

# Sets FIGURE[<name>] to the instructions per request of <workload>, between <n1> and <n2>
# requests.
per_request() { # <name> <server> <workload> <n1> <n2> [<connections>]
  wanted "$1" || return 0
  local a l1 ll
  instructions "$2" "$3" "$4" "${6:-1}"
  a=$IR l1=${L1:-0} ll=${LL:-0}
  instructions "$2" "$3" "$5" "${6:-1}"
  FIGURE[$1]=$(((IR - a) / ($5 - $4)))
  if [ "${6:-1}" -gt 1 ]; then
    FIGURE[${1}_l1]=$(((L1 - l1) / ($5 - $4)))
    LAST_LEVEL[$1]=$(awk -v a="$ll" -v b="$LL" -v n=$(($5 - $4)) 'BEGIN { printf "%.2f", (b - a) / n }')
  fi
}

budget() { # <workload>
  sed -n "s/^$1 *= *\([0-9_]*\).*/\1/p" "$BUDGETS" | tr -d _
}

declare -A FIGURE LAST_LEVEL
WORKLOADS=(call session list startup call_c32 call_c32_l1 session_c32 session_c32_l1 call_c256 call_c256_l1 session_c256 session_c256_l1 middleware)
started=$SECONDS
echo "==> perf guard: instruction counts under callgrind ($(valgrind --version))"
per_request call sake-server call 500 2500
per_request session sake-server session 500 2500
per_request list sake-server-1k list 50 250
if wanted startup; then
  instructions sake-server-1k call 1
  FIGURE[startup]=$IR
fi
echo "==> perf guard: under concurrency, with the cache simulation (${CACHE[*]})"
per_request call_c32 sake-server call 640 3200 32
per_request session_c32 sake-server session 640 3200 32
per_request call_c256 sake-server call 2560 7680 256
per_request session_c256 sake-server session 2560 7680 256
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
for c in 32 256; do
  WHAT[call_c$c]="2026-07-28 tools/call, $c connections at once, per request"
  WHAT[call_c${c}_l1]="  its L1 misses per request (last level: ${LAST_LEVEL[call_c$c]:-})"
  WHAT[session_c$c]="2025-11-25 session tools/call, $c connections at once, per request"
  WHAT[session_c${c}_l1]="  its L1 misses per request (last level: ${LAST_LEVEL[session_c$c]:-})"
done

if [ -n "$bless" ]; then
  for w in "${WORKLOADS[@]}"; do
    [ -n "${FIGURE[$w]:-}" ] || continue
    grep -q "^$w *=" "$BUDGETS" || { echo "$BUDGETS has no line for $w" >&2; exit 1; }
    sed -i "s/^$w *= *[0-9_]*/$w = ${FIGURE[$w]}/" "$BUDGETS"
  done
  echo "==> wrote the figures into $BUDGETS:"
fi

failed=()
printf '%-10s %14s %14s %8s  %s\n' workload instructions budget ratio what
for w in "${WORKLOADS[@]}"; do
  [ -n "${FIGURE[$w]:-}" ] || continue
  b=$(budget "$w")
  [ -n "$b" ] || { echo "$BUDGETS has no budget for $w" >&2; exit 1; }
  f=${FIGURE[$w]}
  ratio=$(awk -v f="$f" -v b="$b" 'BEGIN { printf "%.3f", f / b }')
  verdict=ok
  tol=$TOLERANCE
  [[ "$w" == *_l1 ]] && tol=$TOLERANCE_L1
  if [ $((f * 100)) -gt $((b * (100 + tol))) ]; then verdict="OVER BUDGET"; failed+=("$w"); fi
  printf '%-10s %14d %14d %7s×  %s  %s\n' "$w" "$f" "$b" "$ratio" "${WHAT[$w]}" "$verdict"
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "perf guard: ${failed[*]} over budget by more than $TOLERANCE% ($TOLERANCE_L1% for L1 misses; $((SECONDS - started)) s of measuring)." >&2
  echo "Find the cause with callgrind_annotate (docs/benchmarks.md, \"The performance guard\"); raise a budget only on purpose, in its own reviewed change." >&2
  exit 1
fi
echo "==> perf guard: every figure within $TOLERANCE% of its budget ($TOLERANCE_L1% for L1 misses) ($((SECONDS - started)) s of measuring)"
