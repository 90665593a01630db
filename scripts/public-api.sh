#!/usr/bin/env bash
# The public API of sake and sake-runtime (every public feature on), compared with the
# snapshots in docs/public-api/: a change to the API is a reviewed diff. `--bless` writes the
# snapshots anew.
#
# rustdoc's JSON output is unstable; RUSTC_BOOTSTRAP lets the stable toolchain write it.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-check}
TARGET_DIR=$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
DOC_TARGET="$TARGET_DIR/public-api"
status=0
# package:library (the facade is published as sake-mcp; its library, and snapshot, is sake).
for pair in sake-runtime:sake_runtime sake-mcp:sake; do
  package=${pair%%:*} crate=${pair##*:}
  RUSTC_BOOTSTRAP=1 RUSTDOCFLAGS="-Z unstable-options --output-format json" \
    cargo doc --quiet -p "$package" --no-deps --features client,auth,auth-proxy,otel,redis,compat --target-dir "$DOC_TARGET"
  json="$DOC_TARGET/doc/$crate.json"
  snapshot="docs/public-api/$(echo "$crate" | tr _ -).txt"
  if [ "$mode" = "--bless" ]; then
    mkdir -p docs/public-api
    python3 scripts/public-api.py "$json" > "$snapshot"
    echo "wrote $snapshot"
  elif ! diff -u "$snapshot" <(python3 scripts/public-api.py "$json"); then
    echo "the public API of $package changed: review the diff above, then run scripts/public-api.sh --bless" >&2
    status=1
  fi
done
exit $status
