#!/usr/bin/env bash
# Installs the pinned Python test peers (scripts/peers/requirements.txt: the MCP Python SDK and
# everything it needs, exact versions) into a virtualenv at .tools/py, once per version of the
# requirements file, and prints the path of its python. Needs python3 with venv (3.10 or later).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="$PWD/.tools/py"
stamp=$(sha256sum scripts/peers/requirements.txt | cut -d' ' -f1)
if [ "$(cat "$VENV/.stamp" 2>/dev/null)" != "$stamp" ]; then
  echo "==> installing the Python test peers into $VENV" >&2
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check --no-deps -r scripts/peers/requirements.txt >&2
  echo "$stamp" > "$VENV/.stamp"
fi
echo "$VENV/bin/python"
