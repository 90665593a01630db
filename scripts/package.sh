#!/usr/bin/env bash
# Packages the four published crates (sake-rules, sake-macros, sake-runtime, sake) as crates.io
# would receive them, and builds each from its package: `cargo package` with several `-p`
# packages them together, resolving their `=0.1.0` dependencies on each other against the
# packages just made, then verifies each (not --no-verify). Prints each crate's file count and
# size, compressed and unpacked. Extra arguments go to `cargo package` (e.g. --allow-dirty).
set -euo pipefail
cd "$(dirname "$0")/.."
crates=(sake-rules sake-macros sake-runtime sake)

args=()
for crate in "${crates[@]}"; do
  args+=(-p "$crate")
done
cargo package --locked "${args[@]}" "$@"

# The .crate files: their file counts and sizes.
python3 - "${crates[@]}" <<'PY'
import json, os, subprocess, sys, tarfile

meta = json.loads(subprocess.run(
    ["cargo", "metadata", "--format-version", "1", "--no-deps"],
    check=True, capture_output=True, text=True).stdout)
version = {p["name"]: p["version"] for p in meta["packages"]}
where = os.path.join(meta["target_directory"], "package")
print(f"==> packages ({where})")
print(f"{'crate':<14} {'files':>6} {'.crate':>9} {'unpacked':>9}")
for crate in sys.argv[1:]:
    path = os.path.join(where, f"{crate}-{version[crate]}.crate")
    with tarfile.open(path) as tar:
        files = [m for m in tar.getmembers() if m.isfile()]
    size = os.path.getsize(path) / 1024
    unpacked = sum(m.size for m in files) / 1024
    print(f"{crate:<14} {len(files):>6} {size:>8.1f}K {unpacked:>8.1f}K")
PY
