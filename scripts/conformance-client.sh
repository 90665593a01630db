#!/usr/bin/env bash
# Runs the official MCP conformance suite against sake's client (examples/conformance_client.rs):
# every client scenario that `--requirements 2026-07-28` and `--requirements 2025-11-25` list,
# except the authorization ones (auth/*), each at its revision's wire. The scenario lists come
# from the suite itself (`list --requirements REV`); each runs with `--scenario S --spec-version
# REV`, which is what `--requirements` does per scenario. Exits non-zero on any failure.
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

pass=0
fail=0
failed=()
for rev in 2026-07-28 2025-11-25; do
  # The "Client scenarios" section of the requirement set, without auth/*.
  scenarios=$("$NODE" "$SUITE" list --requirements "$rev" |
    awk '/^Client scenarios/ {on=1; next} /^[^ ]/ {on=0} on && /^  - / {print $2}' |
    grep -v '^auth/' || true)
  if [ -z "$scenarios" ]; then
    echo "no client scenarios listed for $rev" >&2
    exit 1
  fi
  for s in $scenarios; do
    log="$OUT/$rev-$(echo "$s" | tr / _).log"
    if "$NODE" "$SUITE" client --command "$BIN" --scenario "$s" --spec-version "$rev" >"$log" 2>&1; then
      pass=$((pass + 1))
      echo "  ok    $rev $s ($(grep -o 'Passed: [0-9]*/[0-9]*' "$log" | head -1))"
    else
      fail=$((fail + 1))
      failed+=("$rev $s")
      echo "  FAIL  $rev $s"
      sed 's/^/        /' "$log" | tail -40
    fi
  done
done
echo "conformance client: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
