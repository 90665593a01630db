#!/usr/bin/env bash
# Rehearses the publish of every published crate (docs/releasing.md), as CI runs it:
#
# 1. `cargo publish --workspace --dry-run`: packages the published members (every one without
#    `publish = false`: sake-rules, sake-macros, sake-runtime, sake-mcp, cargo-sake) together, in
#    dependency order, resolving their `=` dependencies on each other against a local overlay of
#    crates.io, and builds each from its `.crate` alone (not --no-verify). Nothing is uploaded.
# 2. Each `.crate`: the licence texts, its readme and the metadata crates.io and docs.rs show
#    (description, licence, repository, documentation, readme, keywords, categories,
#    rust-version); the published set is exactly the one above, and no unpublished member
#    slipped in. Prints each crate's file count and size, compressed and unpacked.
# 3. docs.rs: each published library's documentation built as docs.rs builds it, from its
#    `[package.metadata.docs.rs]` (its features, `--cfg docsrs` for the feature labels, which
#    needs nightly rustdoc: RUSTC_BOOTSTRAP lets the stable one), with warnings as errors.
# 4. The minimum Rust version: the published crates' `rust-version` is the toolchain this run
#    builds with, so every build of the run is the MSRV build; if the toolchain is another, the
#    workspace is checked with that exact toolchain (`cargo +VERSION`), and without it the
#    script fails rather than claim a version it did not build with.
#
# Extra arguments go to `cargo publish` (e.g. --allow-dirty).
set -euo pipefail
cd "$(dirname "$0")/.."
published=(sake-rules sake-macros sake-runtime sake-mcp cargo-sake)

# The dry run verifies each crate against a local overlay of crates.io. Cargo takes a registry
# crate of a given version to be immutable: it never unpacks it again under
# $CARGO_HOME/registry/src/-<hash>/ and never rebuilds what it built of it. A second rehearsal
# on one machine would then verify sake-mcp against the first rehearsal's sake-runtime. So the
# overlays' unpacked copies are removed (their directories' names start with "-"; crates.io's
# never do) and the dry run builds in a target directory of its own, emptied first.
for name in "${published[@]}"; do
  rm -rf "${CARGO_HOME:-$HOME/.cargo}"/registry/src/-*/"$name"-[0-9]*
done
PUBLISH_TARGET="$PWD/target/publish"
rm -rf "$PUBLISH_TARGET" target/package

echo "==> cargo publish --workspace --dry-run"
CARGO_TARGET_DIR="$PUBLISH_TARGET" cargo publish --workspace --dry-run --locked "$@"

PUBLISH_TARGET="$PUBLISH_TARGET" python3 - "${published[@]}" <<'PY'
import json, os, subprocess, sys, tarfile, tomllib

wanted = sys.argv[1:]
meta = json.loads(subprocess.run(
    ["cargo", "metadata", "--format-version", "1", "--no-deps"],
    check=True, capture_output=True, text=True).stdout)
members = {p["name"]: p for p in meta["packages"]}
publishable = sorted(n for n, p in members.items() if p.get("publish") != [])
if publishable != sorted(wanted):
    sys.exit(f"published members are {publishable}, expected {sorted(wanted)}: "
             "set `publish = false` on the others (docs/releasing.md)")
# `cargo publish --dry-run` leaves the packages it verified in package/tmp-crate/.
where = os.path.join(os.environ["PUBLISH_TARGET"], "package", "tmp-crate")
failures = []
print(f"==> packages ({where})")
print(f"{'crate':<14} {'files':>6} {'.crate':>9} {'unpacked':>9}")
for crate in wanted:
    version = members[crate]["version"]
    path = os.path.join(where, f"{crate}-{version}.crate")
    prefix = f"{crate}-{version}/"
    with tarfile.open(path) as tar:
        files = {m.name.removeprefix(prefix): m for m in tar.getmembers() if m.isfile()}
        manifest = tomllib.loads(tar.extractfile(files["Cargo.toml"]).read().decode())
    package = manifest["package"]
    needed = ["LICENSE-MIT", "LICENSE-APACHE", package.get("readme", "README.md")]
    if crate == "cargo-sake":
        # The MCP Apps preview of `dev` (include_bytes!): the page, and the bundled host
        # bridge with its packages' licences.
        needed += [f"assets/apps/{f}" for f in ["index.html", "host.mjs", "form.mjs", "host.css",
                   "sandbox.html", "sandbox.js", "bridge.js", "bridge.LICENSES.txt"]]
    for f in needed:
        if f not in files:
            failures.append(f"{crate}: {f} is not in the package")
    for key in ["description", "license", "repository", "documentation", "readme",
                "keywords", "categories", "rust-version"]:
        if not package.get(key):
            failures.append(f"{crate}: no `{key}` in its Cargo.toml")
    size = os.path.getsize(path) / 1024
    unpacked = sum(m.size for m in files.values()) / 1024
    print(f"{crate:<14} {len(files):>6} {size:>8.1f}K {unpacked:>8.1f}K")
if failures:
    sys.exit("\n".join(failures))
PY
# What the dry run built is needed by nothing else (keep the disk in check).
rm -rf "$PUBLISH_TARGET"

echo "==> crates.io: no package of ours is named after another project's crate"
# Every package of the three workspaces (this one, fuzz/, benches/), published or not: a name
# crates.io already has must be ours (its repository is this one), or a user, or cargo, could
# take the other project's crate for it (as with `sake`, which is why the facade is sake-mcp).
python3 <<'PY'
import json, subprocess, sys, tempfile

ours = None
names = set()
for where in [".", "fuzz", "benches"]:
    meta = json.loads(subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--no-deps"], cwd=where,
        check=True, capture_output=True, text=True).stdout)
    for p in meta["packages"]:
        names.add(p["name"])
        if p["name"] == "sake-mcp":
            ours = p["repository"]
taken = []
with tempfile.TemporaryDirectory() as outside:
    for name in sorted(names):
        info = subprocess.run(["cargo", "info", "--quiet", "--registry", "crates-io", name],
                              cwd=outside, capture_output=True, text=True)
        if info.returncode != 0:
            continue
        repo = next((l.split(":", 1)[1].strip() for l in info.stdout.splitlines()
                     if l.startswith("repository:")), None)
        if repo != ours:
            taken.append(f"{name} (crates.io's is {repo or 'of another project'})")
print(f"{len(names)} packages checked")
if taken:
    sys.exit("named after another project's crate: " + ", ".join(taken))
PY

echo "==> docs.rs builds of the published libraries"
python3 - "${published[@]}" <<'PY'
import json, os, subprocess, sys

meta = json.loads(subprocess.run(
    ["cargo", "metadata", "--format-version", "1", "--no-deps"],
    check=True, capture_output=True, text=True).stdout)
members = {p["name"]: p for p in meta["packages"]}
for crate in sys.argv[1:]:
    package = members[crate]
    if not any("lib" in t["kind"] or "proc-macro" in t["kind"] for t in package["targets"]):
        print(f"{crate}: no library, nothing for docs.rs to build")
        continue
    docsrs = (package.get("metadata") or {}).get("docs", {}).get("rs", {})
    args = ["cargo", "doc", "--quiet", "--no-deps", "-p", crate]
    if docsrs.get("all-features"):
        args.append("--all-features")
    elif docsrs.get("features"):
        args += ["--features", ",".join(docsrs["features"])]
    # Every feature a user can turn on (not `internals`-like private ones) must be documented.
    public = sorted(f for f in package["features"] if f != "default" and f != "internals")
    documented = public if docsrs.get("all-features") else sorted(docsrs.get("features", []))
    if documented != public:
        sys.exit(f"{crate}: docs.rs would document features {documented}, not {public}")
    flags = " ".join(["--cfg docsrs" if "docsrs" in docsrs.get("rustdoc-args", []) else "",
                      "-D warnings"]).strip()
    env = dict(os.environ, RUSTC_BOOTSTRAP="1", RUSTDOCFLAGS=flags)
    print(f"{crate}: {' '.join(args[1:])} (RUSTDOCFLAGS={flags})", flush=True)
    subprocess.run(args, check=True, env=env)
PY

echo "==> minimum Rust version"
msrv=$(cargo metadata --format-version 1 --no-deps | python3 -c '
import json, sys
versions = {p["rust_version"] for p in json.load(sys.stdin)["packages"]
            if p.get("publish") != [] and p.get("rust_version")}
if len(versions) != 1:
    sys.exit(f"the published crates disagree on rust-version: {sorted(versions)}")
print(versions.pop())')
have=$(rustc --version | sed -n 's/^rustc \([0-9]*\.[0-9]*\).*/\1/p')
if [ "$have" = "${msrv%.*}" ] || [ "$have" = "$msrv" ]; then
  echo "rust-version $msrv is this toolchain's ($(rustc --version)): every build of this run is the MSRV build"
elif rustup toolchain list 2>/dev/null | grep -q "^$msrv"; then
  echo "rust-version $msrv: checking the workspace with that toolchain"
  cargo "+$msrv" check --workspace --all-targets --all-features --locked
else
  echo "rust-version $msrv, but this toolchain is $have and rustup has no $msrv: install it" \
    "(rustup toolchain install $msrv) or raise rust-version (docs/releasing.md)" >&2
  exit 1
fi
