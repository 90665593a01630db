#!/usr/bin/env bash
# Installs the Debian packages the tests run (redis-server, nginx, chromium, valgrind) when their
# command is missing, at the versions pinned below:
#   scripts/debian.sh <command> <package> [<command> <package> ...]
# Debian's archive keeps only the current version of a stable release's package: when a
# security update has replaced a pinned version, the current one is installed and a warning
# names both (update the pin). Services are not started while they install (policy-rc.d): the
# scripts start their own instances on their own ports. Exit 1 when a package cannot be
# installed.
set -euo pipefail
declare -A PIN=(
  [redis-server]="5:7.0.15-1~deb12u10"
  [redis-tools]="5:7.0.15-1~deb12u10"
  [nginx]="1.22.1-9+deb12u11"
  # MCP Apps in a real browser (tests/tests/apps_browser.rs), driven headless by
  # playwright-core from npm; never a browser download.
  [chromium]="156.0.8078.114-1~deb12u1"
  # The performance guard's instruction counts (scripts/perf-guard.sh): its budgets were
  # measured with this valgrind; another version may count a few instructions differently.
  [valgrind]="1:3.19.0-1"
)
missing=()
while [ $# -ge 2 ]; do
  command -v "$1" >/dev/null || missing+=("$2")
  shift 2
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "==> installing Debian packages: ${missing[*]}"
apt-get update -qq >/dev/null 2>&1 || true
wanted=()
for p in "${missing[@]}"; do
  pin=${PIN[$p]:-}
  if [ -n "$pin" ] && apt-cache madison "$p" 2>/dev/null | grep -qF "| $pin |"; then
    wanted+=("$p=$pin")
  else
    echo "warning: $p ${pin:-(no pin)} is not in the archive; installing $(apt-cache policy "$p" 2>/dev/null | sed -n 's/ *Candidate: //p')"
    wanted+=("$p")
  fi
done
made_policy=
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
  made_policy=1
fi
ok=1
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${wanted[@]}" >/dev/null 2>&1 || ok=
[ -z "$made_policy" ] || rm -f /usr/sbin/policy-rc.d
if [ -z "$ok" ]; then
  echo "could not install ${wanted[*]} with apt-get (root and Debian's package registry are needed)"
  exit 1
fi
