#!/usr/bin/env bash
# Runs the official MCP conformance suite (pinned in scripts/test.sh) through examples/gateway.rs
# in front of examples/everything.rs, and compares each scenario's counts with the same run
# against everything directly: the gateway must be invisible. Three gateways, side by side
# with the direct run: UPSTREAM_REVISION unset (discovery: 2026-07-28 to the upstream), pinned to 2025-11-25
# (every 2026-07-28 scenario crosses to a handshake upstream) and pinned to 2026-07-28 (every
# handshake scenario crosses to a stateless upstream).
#
# A scenario whose counts differ fails the run, unless it is one of the known gaps below, each
# with its reason (docs/composition.md, "What the gateway does not relay yet"); a known gap
# that passes with a gateway is reported, so that the list only shrinks.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${SAKE_NODE:?run through scripts/test.sh, which installs the pinned suite}"
: "${SAKE_CONFORMANCE:?run through scripts/test.sh}"

# Scenario (glob, or gateway:glob for one gateway only — discovery, 2025-11-25, 2026-07-28)
# → why the gateway does not pass it yet.
declare -A KNOWN_GAPS=(
  ["2025-11-25:tasks-*"]="the tasks extension: a handshake upstream (UPSTREAM_REVISION=2025-11-25) has no tasks to relay (its calls answer as calls; its task-only tools are not listed)"
  ["2025-11-25:sep-2640-*"]="the skills extension: a handshake upstream (UPSTREAM_REVISION=2025-11-25) has no skills to relay"
  ["discovery:server-sse-polling"]="SSE polling: a 2026-07-28 upstream has no stream to end early (its tool's close_stream does nothing), so nothing tells the gateway to end its own"
  ["2026-07-28:server-sse-polling"]="SSE polling: a 2026-07-28 upstream has no stream to end early (its tool's close_stream does nothing), so nothing tells the gateway to end its own"
)

cargo build --quiet --features redis,client --example everything --example gateway
UP_PORT=${CONFORMANCE_GATEWAY_UPSTREAM_PORT:-3961}
# The gateways take this port and the two after it.
GW_PORT=${CONFORMANCE_GATEWAY_PORT:-3962}
OUT=$(mktemp -d)
PORT=$UP_PORT ./target/debug/examples/everything >"$OUT/everything.log" 2>&1 &
UPSTREAM_PID=$!
GATEWAY_PID=
trap 'kill $UPSTREAM_PID ${GATEWAY_PID:-} 2>/dev/null || true' EXIT
wait_port() {
  for _ in $(seq 1 100); do
    (echo >"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "nothing listens on port $1"
  return 1
}
wait_port "$UP_PORT"

# name|arguments: the runs of scripts/conformance.sh, and the skills scenarios it forces.
RUNS=(
  "req-2026|--requirements 2026-07-28"
  "req-2025-11|--requirements 2025-11-25"
  "all-2026|--suite all --spec-version 2026-07-28"
  "all|--suite all"
  "all-2025-11|--suite all --spec-version 2025-11-25"
  "spec-2025-06|--spec-version 2025-06-18"
  "spec-2025-03|--spec-version 2025-03-26"
  "skills-enumeration|--scenario sep-2640-skills-enumeration --spec-version 2026-07-28 --force"
  "skills-manifest|--scenario sep-2640-skills-manifest --spec-version 2026-07-28 --force"
  "skills-directory|--scenario sep-2640-skills-directory --spec-version 2026-07-28 --force"
)

# Runs every run against a URL; each scenario's line ("name: N passed, M failed") per run.
run_all() {
  local url=$1 dir=$2 started=$SECONDS
  mkdir -p "$dir"
  for entry in "${RUNS[@]}"; do
    local name=${entry%%|*} args=${entry#*|}
    # shellcheck disable=SC2086
    "$SAKE_NODE" "$SAKE_CONFORMANCE" server --url "$url" $args -o "$dir/$name" >"$dir/$name.log" 2>&1 || true
    # The summary's lines, without the marks and the trailing "(extension)" lines.
    grep -E '^[✓✗] [a-z0-9-]+: [0-9]+ passed, [0-9]+ failed' "$dir/$name.log" \
      | sed -E 's/^[✓✗] //' | sort >"$dir/$name.scenarios" || true
    if [ ! -s "$dir/$name.scenarios" ]; then
      # A forced single scenario prints no summary line: count its checks.
      local checks total failed
      checks=$(find "$dir/$name" -name checks.json 2>/dev/null || true)
      total=$(cat $checks /dev/null | grep -c '"status": *"SUCCESS"' || true)
      failed=$(cat $checks /dev/null | grep -c -E '"status": *"(FAILURE|WARNING|SKIPPED)"' || true)
      local scenario
      scenario=$(echo "$args" | sed -E 's/.*--scenario ([^ ]+).*/\1/')
      echo "$scenario: $total passed, $failed failed" >"$dir/$name.scenarios"
    fi
  done
  echo $((SECONDS - started)) >"$dir/seconds"
}

# The known gap (its key) a scenario's difference with a gateway is, if any.
gap_of() {
  local label=$1 scenario=$2
  for key in "${!KNOWN_GAPS[@]}"; do
    local glob=$key
    if [[ $key == *:* ]]; then
      [ "${key%%:*}" = "$label" ] || continue
      glob=${key#*:}
    fi
    # shellcheck disable=SC2053
    if [[ $scenario == $glob ]]; then
      echo "$key"
      return
    fi
  done
}

# The direct run and the three gateways' run side by side (most of a run's time is the suite
# waiting), each gateway on its own port; they report in order.
run_all "http://127.0.0.1:$UP_PORT/mcp" "$OUT/direct" &
RUNNERS=($!)
compare() {
  local label=$1 status=0
  declare -A gaps_seen=()
  for entry in "${RUNS[@]}"; do
    local name=${entry%%|*} direct through line scenario theirs gap
    direct=$(awk -F'[:,]' '{p+=$2; f+=$3} END {printf "%d passed, %d failed", p, f}' \
      <(sed -E 's/ passed//; s/ failed//' "$OUT/direct/$name.scenarios"))
    through=$(awk -F'[:,]' '{p+=$2; f+=$3} END {printf "%d passed, %d failed", p, f}' \
      <(sed -E 's/ passed//; s/ failed//' "$OUT/gateway-$label/$name.scenarios"))
    printf '    %-20s direct: %-22s gateway: %s\n' "$name" "$direct" "$through"
    while read -r line; do
      scenario=${line%%:*}
      theirs=$(grep -E "^$scenario: " "$OUT/gateway-$label/$name.scenarios" || echo "$scenario: missing")
      [ "$line" = "$theirs" ] && continue
      gap=$(gap_of "$label" "$scenario")
      if [ -n "$gap" ]; then
        gaps_seen[$gap]=1
        continue
      fi
      echo "    DIFFERS ($name): direct \"$line\", gateway \"$theirs\""
      status=1
    done <"$OUT/direct/$name.scenarios"
  done
  for key in "${!KNOWN_GAPS[@]}"; do
    # A gap of another gateway is not this one's.
    if [[ $key == *:* ]] && [ "${key%%:*}" != "$label" ]; then
      continue
    fi
    if [ -n "${gaps_seen[$key]:-}" ]; then
      echo "    known gap: $key — ${KNOWN_GAPS[$key]}"
    else
      echo "    (known gap $key: passes with this gateway)"
    fi
  done
  return $status
}

GATEWAYS=()
port=$GW_PORT
for rev in "" 2025-11-25 2026-07-28; do
  label=${rev:-discovery}
  UPSTREAM="http://127.0.0.1:$UP_PORT/mcp" UPSTREAM_REVISION=$rev PORT=$port \
    ./target/debug/examples/gateway >"$OUT/gateway-$label.log" 2>&1 &
  GATEWAYS+=($!)
  wait_port "$port"
  run_all "http://127.0.0.1:$port/mcp" "$OUT/gateway-$label" &
  RUNNERS+=($!)
  port=$((port + 1))
done
GATEWAY_PID="${GATEWAYS[*]}"
for runner in "${RUNNERS[@]}"; do wait "$runner"; done

echo "--- conformance: everything directly ($(cat "$OUT/direct/seconds") s)"
status=0
for rev in "" 2025-11-25 2026-07-28; do
  label=${rev:-discovery}
  echo "--- conformance through the gateway, UPSTREAM_REVISION=${rev:-(unset)} ($(cat "$OUT/gateway-$label/seconds") s)"
  compare "$label" || status=1
done

if [ "$status" -ne 0 ]; then
  echo "conformance through the gateway: FAILED (logs in $OUT)"
  exit 1
fi
echo "conformance through the gateway: every scenario has its direct counts, but for the known gaps"
