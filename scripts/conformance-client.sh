#!/usr/bin/env bash
# Runs the official MCP conformance suite against sake's client (examples/conformance_client.rs):
# every client scenario that `--requirements 2026-07-28` and `--requirements 2025-11-25` list,
# authorization (auth/*) included, each at its revision's wire; then the extension scenarios
# those sets run without scoring (client credentials, DPoP, enterprise authorization, …) and the
# 2025-03-26 authorization fallbacks (auth/2025-03-26-*), which no requirement set lists, and
# the skills extension's four scenarios (sep-2640-client-*, every check SUCCESS). The
# scenario lists come from the suite itself (`list --requirements REV`, `list --client`); each
# runs with `--scenario S --spec-version REV`, which is what `--requirements` does per scenario.
#
# Exits non-zero when a scored or 2025-03-26 scenario fails; extension scenarios are counted and
# reported, and do not fail the run.
#
# Needs SAKE_NODE and SAKE_CONFORMANCE (scripts/test.sh sets them), or NODE and SUITE.
set -euo pipefail
cd "$(dirname "$0")/.."
NODE=${SAKE_NODE:-${NODE:-node}}
SUITE=${SAKE_CONFORMANCE:-${SUITE:?set SAKE_CONFORMANCE to the path of the suite dist/index.js}}

# --workspace: the features of the whole workspace, as `cargo test --workspace` built them.
cargo build --quiet --workspace --example conformance_client
TARGET_DIR=$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
BIN="$TARGET_DIR/debug/examples/conformance_client"
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

declare -A pass fail
failed=()
ext_failed=()

# run KIND REV SCENARIO: one scenario; counts it under KIND (scored, extension, backcompat).
# Extension scenarios are on no revision's timeline: --force runs them at REV anyway, as
# --requirements does. A scenario the suite skips counts as failed.
run() {
  local kind=$1 rev=$2 s=$3
  local log force=()
  log="$OUT/$kind-$rev-$(echo "$s" | tr / _).log"
  [ "$kind" = extension ] && force=(--force)
  if "$NODE" "$SUITE" client --command "$BIN" --scenario "$s" --spec-version "$rev" "${force[@]}" >"$log" 2>&1 &&
    grep -q '^Passed: ' "$log"; then
    pass[$kind]=$((${pass[$kind]:-0} + 1))
    echo "  ok    $kind $rev $s ($(grep -o '^Passed: .*' "$log" | head -1))"
  else
    fail[$kind]=$((${fail[$kind]:-0} + 1))
    if [ "$kind" = extension ]; then
      ext_failed+=("$rev $s")
      echo "  fail  $kind $rev $s (not scored)"
    else
      failed+=("$kind $rev $s")
      echo "  FAIL  $kind $rev $s"
      sed 's/^/        /' "$log" | tail -40
    fi
  fi
}

for rev in 2026-07-28 2025-11-25; do
  listing=$("$NODE" "$SUITE" list --requirements "$rev")
  # The "Client scenarios" section: the scored ones.
  scored=$(echo "$listing" |
    awk '/^Client scenarios/ {on=1; next} /^[^ ]/ {on=0} on && /^  - / {print $2}')
  # "Run and reported, but never scored", extension, client leg.
  extension=$(echo "$listing" |
    awk '/^  extension/ {on=1; next} /^  [^ ]/ {on=0} on && /\[client\]$/ {print $2}')
  if [ -z "$scored" ]; then
    echo "no client scenarios listed for $rev" >&2
    exit 1
  fi
  for s in $scored; do run scored "$rev" "$s"; done
  for s in $extension; do run extension "$rev" "$s"; done
done

# The 2025-03-26 authorization fallbacks (metadata at the server's origin, default endpoints).
backcompat=$("$NODE" "$SUITE" list --client | awk '/^  - auth\/2025-03-26-/ {print $2}')
for s in $backcompat; do run backcompat 2025-03-26 "$s"; done

# The skills extension (SEP-2640): on no requirement set, so each scenario is forced at
# 2026-07-28, and judged by its checks: every one SUCCESS (a SKIPPED check means the client never
# listed or loaded the skill, which proves nothing).
skills=$("$NODE" "$SUITE" list --client | awk '/^  - sep-2640-client-/ {print $2}')
if [ "$(echo "$skills" | grep -c .)" -ne 4 ]; then
  echo "expected the four sep-2640-client-* scenarios, the suite lists: $skills" >&2
  exit 1
fi
for s in $skills; do
  dir="$OUT/skills-$s"
  log="$dir.log"
  "$NODE" "$SUITE" client --command "$BIN" --scenario "$s" --spec-version 2026-07-28 --force -o "$dir" >"$log" 2>&1 || true
  checks=$(find "$dir" -name checks.json)
  total=$(cat $checks /dev/null | grep -c '"status"' || true)
  bad=$(cat $checks /dev/null | grep -c -E '"status": ?"(SKIPPED|FAILURE|WARNING)"' || true)
  if [ -n "$checks" ] && [ "$total" -gt 0 ] && [ "$bad" -eq 0 ]; then
    pass[skills]=$((${pass[skills]:-0} + 1))
    echo "  ok    skills 2026-07-28 $s ($total checks SUCCESS)"
  else
    fail[skills]=$((${fail[skills]:-0} + 1))
    failed+=("skills 2026-07-28 $s")
    echo "  FAIL  skills 2026-07-28 $s"
    sed 's/^/        /' "$log" | tail -40
  fi
done

for kind in scored extension backcompat skills; do
  echo "conformance client, $kind: ${pass[$kind]:-0} passed, ${fail[$kind]:-0} failed"
done
if [ "${#ext_failed[@]}" -gt 0 ]; then
  echo "extension scenarios failing (not scored): ${ext_failed[*]}"
fi
if [ "${#failed[@]}" -gt 0 ]; then
  echo "failing: ${failed[*]}" >&2
  exit 1
fi
