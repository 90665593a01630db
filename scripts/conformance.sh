#!/usr/bin/env bash
# Runs the official MCP conformance suite (pinned in scripts/test.sh) against the fixture
# examples/everything.rs, on every revision it covers. Fails on any failure or warning of any
# scenario: scored, pending, and the tasks extension's (`tasks-*`, not scored by the suite); and
# on any check of the skills extension's scenarios (`sep-2640-*`) that is not SUCCESS.
#
# The extension scenarios are on no revision's timeline: `--spec-version X` leaves them out.
# They run with `--requirements 2026-07-28` (forced, "not scored") and with `--suite all`
# without a version (at the 2026-07-28 wire), which both runs below do.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${SAKE_NODE:?run through scripts/test.sh, which installs the pinned suite}"
: "${SAKE_CONFORMANCE:?run through scripts/test.sh}"

cargo build --quiet --features redis,client --example everything
PORT=${CONFORMANCE_PORT:-3931}
OUT=$(mktemp -d)
LOG="$OUT/server.log"
PORT=$PORT ./target/debug/examples/everything >"$LOG" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do
  (echo >"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
  sleep 0.1
done
URL="http://127.0.0.1:$PORT/mcp"

status=0
run() {
  local name=$1; shift
  local dir="$OUT/$name"
  echo "--- conformance server $* ($name)"
  local rc=0
  "$SAKE_NODE" "$SAKE_CONFORMANCE" server --url "$URL" "$@" -o "$dir" >"$dir.log" 2>&1 || rc=$?
  grep -E "^Total:" "$dir.log" || true
  # Failures and warnings of every scenario, the extension's included.
  local bad
  bad=$(find "$dir" -name checks.json -exec grep -l -E '"status": ?"(FAILURE|WARNING)"' {} + 2>/dev/null || true)
  if [ -n "$bad" ]; then
    echo "FAILED or WARNED in: $bad"
    grep -h -E -B3 -A8 '"status": ?"(FAILURE|WARNING)"' $bad | head -80
    status=1
  elif [ "$rc" -ne 0 ]; then
    tail -40 "$dir.log"
    status=1
  fi
  local tasks
  tasks=$(find "$dir" -name checks.json -path "*tasks-*" | wc -l)
  [ "$tasks" -eq 0 ] || echo "    (of which the tasks extension: $tasks scenarios)"
}

run req-2026 --requirements 2026-07-28
run req-2025-11 --requirements 2025-11-25
run all-2026 --suite all --spec-version 2026-07-28
run all --suite all
run all-2025-11 --suite all --spec-version 2025-11-25
run spec-2025-06 --spec-version 2025-06-18
run spec-2025-03 --spec-version 2025-03-26

# The skills extension (SEP-2640): no requirement set and no `--suite` runs its scenarios, and
# with `--spec-version` alone the suite calls them "not applicable" and runs nothing, so each is
# forced at 2026-07-28. Its checks are SKIPPED when the server does not declare the extension
# while the run still says 0 failed: here every check must be SUCCESS.
for scenario in sep-2640-skills-enumeration sep-2640-skills-manifest sep-2640-skills-directory; do
  dir="$OUT/$scenario"
  echo "--- conformance server --scenario $scenario --spec-version 2026-07-28 --force"
  rc=0
  "$SAKE_NODE" "$SAKE_CONFORMANCE" server --url "$URL" --scenario "$scenario" \
    --spec-version 2026-07-28 --force -o "$dir" >"$dir.log" 2>&1 || rc=$?
  checks=$(find "$dir" -name checks.json)
  total=$(cat $checks /dev/null | grep -c '"status"' || true)
  bad=$(cat $checks /dev/null | grep -c -E '"status": ?"(SKIPPED|FAILURE|WARNING)"' || true)
  echo "    $total checks, $bad not SUCCESS"
  if [ -z "$checks" ] || [ "$total" -eq 0 ] || [ "$bad" -ne 0 ] || [ "$rc" -ne 0 ]; then
    echo "FAILED: $scenario (every check must be SUCCESS)"
    grep -h -E -B3 -A8 '"status": ?"(SKIPPED|FAILURE|WARNING)"' $checks /dev/null | head -60
    tail -20 "$dir.log"
    status=1
  fi
done

if [ "$status" -ne 0 ]; then
  echo "conformance: FAILED (server log: $LOG)"
  tail -50 "$LOG"
  exit 1
fi
echo "conformance: every scenario (scored, pending, tasks and skills extensions) passes with no warnings"
