#!/usr/bin/env bash
# A bounded soak test (not part of scripts/test.sh): the conformance fixture in release,
# driven by 64 connections of mixed work for 5 minutes with tools/mcp-load — 2026-07-28
# calls, lists, progress streams, MRTR rounds and subscriptions/listen; 2025-11-25 sessions
# with sampling, a subscription and a GET stream; 2025-03-26 batches. Every answer is
# checked. The server's RSS and open descriptors are sampled every 10 s. Fails on any error,
# or if RSS grows more than 10 % (at least 16 MiB) or descriptors by more than 16 from the
# second fifth of the run (minute 1–2) to the last (minute 4–5).
#
# Meanwhile tools/mcp-attack attacks the same server from other addresses (127.0.0.2-5): the
# attacks of docs/security.md ("One client against the others") in a loop. The honest
# clients must still see zero errors and bounded memory; the attacker's tally is printed.
#
#   scripts/soak.sh                 # 64 connections, 300 s, under attack
#   scripts/soak.sh --quick         # 16 connections, 30 s (a smoke test), under attack
#   SOAK_ATTACK=0 scripts/soak.sh   # without the attacker
#   SOAK_SECONDS=600 SOAK_CONNECTIONS=128 scripts/soak.sh
#
# Ports: SOAK_PORT (default 3941). Everything it starts is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_=${SOAK_SECONDS:-300}
CONNECTIONS=${SOAK_CONNECTIONS:-64}
SAMPLE=10
if [ "${1:-}" = "--quick" ]; then
  SECONDS_=30; CONNECTIONS=16; SAMPLE=2
fi
PORT=${SOAK_PORT:-3941}
ATTACK=${SOAK_ATTACK:-1}

echo "==> building the fixture and the load client (release)"
cargo build --quiet --release --features redis --example everything
cargo build --quiet --release --manifest-path tools/Cargo.toml

LOG=$(mktemp)
# Only warnings: an info line per request would measure the logger.
RUST_LOG=warn PORT=$PORT ./target/release/examples/everything >"$LOG" 2>&1 &
SERVER=$!
ATTACKER=
ATTACK_LOG=$(mktemp)
trap 'kill $SERVER $ATTACKER 2>/dev/null || true; wait $SERVER 2>/dev/null || true; rm -f "$LOG" "$ATTACK_LOG"' EXIT
for _ in $(seq 1 100); do
  (echo >"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
  sleep 0.1
done

echo "==> soak: $CONNECTIONS connections, $SECONDS_ s, server pid $SERVER"
if [ "$ATTACK" != 0 ]; then
  tools/target/release/mcp-attack --url "http://127.0.0.1:$PORT/mcp" --from 127.0.0.2 \
    --seconds "$SECONDS_" >"$ATTACK_LOG" 2>&1 &
  ATTACKER=$!
fi
rc=0
tools/target/release/mcp-load --url "http://127.0.0.1:$PORT/mcp" --connections "$CONNECTIONS" \
  --seconds "$SECONDS_" --pid "$SERVER" --sample-every "$SAMPLE" || rc=$?
if [ -n "$ATTACKER" ]; then
  wait $ATTACKER || { echo "soak: the attacker could not attack"; rc=1; }
  echo "==> what the attacker got (127.0.0.2-5)"
  cat "$ATTACK_LOG"
fi
if ! kill -0 $SERVER 2>/dev/null; then
  echo "soak: the server died"; cat "$LOG"; exit 1
fi
if grep -q -E "panicked|ERROR" "$LOG"; then
  echo "soak: the server logged errors:"; grep -E "panicked|ERROR" "$LOG" | head -20; rc=1
fi
[ "$rc" -eq 0 ] && echo "soak: passed" || echo "soak: FAILED"
exit $rc
