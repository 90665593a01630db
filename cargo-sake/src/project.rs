//! The crate being served, as cargo describes it (`cargo metadata`): its package, the binary or
//! example to run, the directories whose changes rebuild it, and the target directory.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::Error;

/// How to find and build the server: the options `dev`, `schemas` and `card` share.
#[derive(Clone, Debug, clap::Args)]
pub(crate) struct TargetArgs {
    /// Path to Cargo.toml (default: the package in the current directory).
    #[arg(long, value_name = "PATH")]
    pub manifest_path: Option<PathBuf>,
    /// The package to run, in a workspace.
    #[arg(short, long, value_name = "SPEC")]
    pub package: Option<String>,
    /// The binary to run (default: the package's only one, or its `default-run`).
    #[arg(long, value_name = "NAME", conflicts_with = "example")]
    pub bin: Option<String>,
    /// An example to run instead of a binary.
    #[arg(long, value_name = "NAME")]
    pub example: Option<String>,
    /// Features to activate (space or comma separated).
    #[arg(short = 'F', long, value_name = "FEATURES")]
    pub features: Vec<String>,
    /// Activate all features.
    #[arg(long)]
    pub all_features: bool,
    /// Do not activate the `default` feature.
    #[arg(long)]
    pub no_default_features: bool,
    /// Build with the release profile.
    #[arg(short, long)]
    pub release: bool,
    /// The MCP endpoint's path on the server.
    #[arg(long, value_name = "PATH", default_value = "/mcp")]
    pub mcp_path: String,
    /// A header for every request to the server (`Authorization: Bearer …` for a protected
    /// one). Repeatable.
    #[arg(short = 'H', long = "header", value_name = "NAME: VALUE")]
    pub headers: Vec<String>,
    /// Arguments for the server, after `--`: `{port}` in them becomes the port. The server
    /// also gets the port in `PORT`.
    #[arg(last = true, value_name = "SERVER ARGS")]
    pub args: Vec<String>,
}

/// What is run: a binary or an example of the package.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Bin,
    Example,
}

/// The server's package and target, and what cargo says about them.
#[derive(Clone, Debug)]
pub(crate) struct Project {
    pub package: String,
    pub manifest_path: PathBuf,
    pub kind: Kind,
    pub target: String,
    /// The directories of the package and of the local packages it depends on.
    pub watched: Vec<PathBuf>,
    pub target_directory: PathBuf,
    /// About how many crates a build of the target compiles (for the progress bar).
    pub crates: usize,
}

impl Project {
    /// `bin demo` or `example quickstart`, for people.
    pub fn describe(&self) -> String {
        let kind = match self.kind {
            Kind::Bin => "bin",
            Kind::Example => "example",
        };
        format!("{} ({kind} `{}`)", self.package, self.target)
    }

    /// The directory of `cargo sake`'s files for this target: `<target>/sake/<kind>-<name>`.
    pub fn state_dir(&self) -> PathBuf {
        let kind = match self.kind {
            Kind::Bin => "bin",
            Kind::Example => "example",
        };
        self.target_directory
            .join("sake")
            .join(format!("{}-{kind}-{}", self.package, self.target))
    }
}

#[derive(Debug, Deserialize)]
struct Metadata {
    packages: Vec<Package>,
    workspace_members: Vec<String>,
    #[serde(default)]
    workspace_default_members: Vec<String>,
    resolve: Option<Resolve>,
    target_directory: PathBuf,
}

#[derive(Debug, Deserialize)]
struct Package {
    id: String,
    name: String,
    manifest_path: PathBuf,
    /// `None` for a local package (a path dependency or a workspace member).
    source: Option<String>,
    targets: Vec<Target>,
    default_run: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Target {
    name: String,
    kind: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct Resolve {
    nodes: Vec<Node>,
    root: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Node {
    id: String,
    #[serde(default)]
    deps: Vec<NodeDep>,
}

#[derive(Debug, Deserialize)]
struct NodeDep {
    pkg: String,
    #[serde(default)]
    dep_kinds: Vec<DepKind>,
}

#[derive(Debug, Deserialize)]
struct DepKind {
    kind: Option<String>,
}

/// Runs `cargo metadata` for the manifest the options name, and picks the package and target.
pub(crate) async fn load(args: &TargetArgs) -> Result<Project, Error> {
    let mut cmd = tokio::process::Command::new(cargo());
    cmd.args(["metadata", "--format-version", "1"]);
    if let Some(path) = &args.manifest_path {
        cmd.arg("--manifest-path").arg(path);
    }
    cmd.stdin(std::process::Stdio::null());
    let out = cmd.output().await.map_err(|source| Error::Cargo {
        what: "metadata".into(),
        source,
    })?;
    if !out.status.success() {
        return Err(Error::CargoFailed {
            what: "metadata".into(),
            stderr: String::from_utf8_lossy(&out.stderr).trim_end().to_owned(),
        });
    }
    let meta: Metadata = serde_json::from_slice(&out.stdout)
        .map_err(|e| Error::Other(format!("cannot read `cargo metadata`'s answer: {e}")))?;
    select(meta, args)
}

/// The cargo that runs us (`CARGO` when cargo started `cargo-sake`), or the one on `PATH`.
pub(crate) fn cargo() -> std::ffi::OsString {
    std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

fn select(meta: Metadata, args: &TargetArgs) -> Result<Project, Error> {
    let by_id: HashMap<&str, &Package> = meta.packages.iter().map(|p| (p.id.as_str(), p)).collect();
    let members: Vec<&Package> = meta
        .workspace_members
        .iter()
        .filter_map(|id| by_id.get(id.as_str()).copied())
        .collect();
    let has_target = |p: &Package| {
        p.targets.iter().any(|t| {
            let kind = if args.example.is_some() {
                "example"
            } else {
                "bin"
            };
            t.kind.iter().any(|k| k == kind)
        })
    };
    let root = meta.resolve.as_ref().and_then(|r| r.root.as_deref());
    let package: &Package = if let Some(spec) = &args.package {
        members
            .iter()
            .copied()
            .find(|p| &p.name == spec || p.id == *spec)
            .ok_or_else(|| {
                let names: Vec<&str> = members.iter().map(|p| p.name.as_str()).collect();
                Error::Project(format!(
                    "no package `{spec}` in this workspace (its packages: {})",
                    names.join(", ")
                ))
            })?
    } else if let Some(root) = root.and_then(|id| by_id.get(id)) {
        root
    } else {
        // A virtual workspace: its (default) members that have something to run.
        let pool: Vec<&Package> = if meta.workspace_default_members.is_empty() {
            members.clone()
        } else {
            meta.workspace_default_members
                .iter()
                .filter_map(|id| by_id.get(id.as_str()).copied())
                .collect()
        };
        let runnable: Vec<&Package> = pool.into_iter().filter(|p| has_target(p)).collect();
        match runnable.as_slice() {
            [one] => one,
            [] => {
                return Err(Error::Project(
                    "no package of this workspace has a binary to run; `cargo sake new NAME` makes one"
                        .into(),
                ));
            }
            several => {
                let names: Vec<&str> = several.iter().map(|p| p.name.as_str()).collect();
                return Err(Error::Project(format!(
                    "this workspace has several packages to run ({}): pick one with -p",
                    names.join(", ")
                )));
            }
        }
    };
    let (kind, target) = pick_target(package, args)?;
    let watched = local_dirs(&meta, package, &by_id, kind == Kind::Example);
    let crates = closure(&meta, &package.id, kind == Kind::Example).len();
    Ok(Project {
        package: package.name.clone(),
        manifest_path: package.manifest_path.clone(),
        kind,
        target,
        watched,
        target_directory: meta.target_directory,
        crates,
    })
}

fn pick_target(package: &Package, args: &TargetArgs) -> Result<(Kind, String), Error> {
    let of_kind = |kind: &str| -> Vec<&str> {
        package
            .targets
            .iter()
            .filter(|t| t.kind.iter().any(|k| k == kind))
            .map(|t| t.name.as_str())
            .collect()
    };
    if let Some(example) = &args.example {
        let examples = of_kind("example");
        if !examples.contains(&example.as_str()) {
            return Err(Error::Project(format!(
                "package `{}` has no example `{example}` (its examples: {})",
                package.name,
                list_or_none(&examples)
            )));
        }
        return Ok((Kind::Example, example.clone()));
    }
    let bins = of_kind("bin");
    if let Some(bin) = &args.bin {
        if !bins.contains(&bin.as_str()) {
            return Err(Error::Project(format!(
                "package `{}` has no binary `{bin}` (its binaries: {})",
                package.name,
                list_or_none(&bins)
            )));
        }
        return Ok((Kind::Bin, bin.clone()));
    }
    match (bins.as_slice(), &package.default_run) {
        (_, Some(default)) => Ok((Kind::Bin, default.clone())),
        ([one], None) => Ok((Kind::Bin, (*one).to_owned())),
        ([], None) => Err(Error::Project(format!(
            "package `{}` has no binary: pick an example with --example, or make a server with `cargo sake new`",
            package.name
        ))),
        (several, None) => Err(Error::Project(format!(
            "package `{}` has several binaries ({}): pick one with --bin",
            package.name,
            several.join(", ")
        ))),
    }
}

fn list_or_none(names: &[&str]) -> String {
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

/// The packages a build of `root`'s target compiles: its normal and build dependencies, and
/// for an example its dev-dependencies too.
fn closure<'m>(meta: &'m Metadata, root: &'m str, dev: bool) -> BTreeSet<&'m str> {
    let nodes: HashMap<&str, &Node> = meta
        .resolve
        .iter()
        .flat_map(|r| r.nodes.iter())
        .map(|n| (n.id.as_str(), n))
        .collect();
    let mut seen = BTreeSet::from([root]);
    let mut queue = VecDeque::from([root]);
    while let Some(id) = queue.pop_front() {
        let Some(node) = nodes.get(id) else { continue };
        for dep in &node.deps {
            let wanted = dep.dep_kinds.is_empty()
                || dep.dep_kinds.iter().any(|k| match k.kind.as_deref() {
                    Some("dev") => dev && id == root,
                    _ => true,
                });
            if wanted && seen.insert(dep.pkg.as_str()) {
                queue.push_back(dep.pkg.as_str());
            }
        }
    }
    seen
}

/// The directories whose changes rebuild the server: the package's, and those of the local
/// packages (path dependencies) it builds with.
fn local_dirs(
    meta: &Metadata,
    package: &Package,
    by_id: &HashMap<&str, &Package>,
    dev: bool,
) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = closure(meta, &package.id, dev)
        .into_iter()
        .filter_map(|id| by_id.get(id))
        .filter(|p| p.source.is_none())
        .filter_map(|p| p.manifest_path.parent().map(Path::to_path_buf))
        .collect();
    dirs.sort();
    // A directory inside another is watched with it.
    let mut kept: Vec<PathBuf> = Vec::new();
    for d in dirs {
        if !kept.iter().any(|k| d.starts_with(k)) {
            kept.push(d);
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> TargetArgs {
        TargetArgs {
            manifest_path: None,
            package: None,
            bin: None,
            example: None,
            features: vec![],
            all_features: false,
            no_default_features: false,
            release: false,
            mcp_path: "/mcp".into(),
            headers: vec![],
            args: vec![],
        }
    }

    fn metadata(targets: serde_json::Value, default_run: Option<&str>) -> Metadata {
        serde_json::from_value(serde_json::json!({
            "packages": [
                {"id": "path+file:///w/app#0.1.0", "name": "app", "version": "0.1.0",
                 "manifest_path": "/w/app/Cargo.toml", "source": null, "targets": targets,
                 "default_run": default_run},
                {"id": "path+file:///w/lib#0.1.0", "name": "lib", "version": "0.1.0",
                 "manifest_path": "/w/lib/Cargo.toml", "source": null, "targets": [], "default_run": null},
                {"id": "registry+https://x#serde@1.0.0", "name": "serde", "version": "1.0.0",
                 "manifest_path": "/r/serde/Cargo.toml", "source": "registry+https://x",
                 "targets": [], "default_run": null},
                {"id": "registry+https://x#insta@1.0.0", "name": "insta", "version": "1.0.0",
                 "manifest_path": "/r/insta/Cargo.toml", "source": "registry+https://x",
                 "targets": [], "default_run": null}
            ],
            "workspace_members": ["path+file:///w/app#0.1.0"],
            "resolve": {"root": "path+file:///w/app#0.1.0", "nodes": [
                {"id": "path+file:///w/app#0.1.0", "deps": [
                    {"pkg": "path+file:///w/lib#0.1.0", "dep_kinds": [{"kind": null}]},
                    {"pkg": "registry+https://x#insta@1.0.0", "dep_kinds": [{"kind": "dev"}]}
                ]},
                {"id": "path+file:///w/lib#0.1.0", "deps": [
                    {"pkg": "registry+https://x#serde@1.0.0", "dep_kinds": [{"kind": null}]}
                ]},
                {"id": "registry+https://x#serde@1.0.0", "deps": []},
                {"id": "registry+https://x#insta@1.0.0", "deps": []}
            ]},
            "target_directory": "/w/target"
        }))
        .unwrap()
    }

    #[test]
    fn the_only_binary_is_run_and_local_dependencies_watched() {
        let meta = metadata(serde_json::json!([{"name": "app", "kind": ["bin"]}]), None);
        let p = select(meta, &args()).unwrap();
        assert_eq!((p.kind.clone(), p.target.as_str()), (Kind::Bin, "app"));
        assert_eq!(
            p.watched,
            [PathBuf::from("/w/app"), PathBuf::from("/w/lib")]
        );
        // app, lib and serde: not insta, a dev-dependency the binary does not build.
        assert_eq!(p.crates, 3);
        assert_eq!(p.state_dir(), PathBuf::from("/w/target/sake/app-bin-app"));
    }

    #[test]
    fn several_binaries_need_a_choice() {
        let two =
            serde_json::json!([{"name": "a", "kind": ["bin"]}, {"name": "b", "kind": ["bin"]}]);
        let err = select(metadata(two.clone(), None), &args()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "package `app` has several binaries (a, b): pick one with --bin"
        );
        let p = select(metadata(two.clone(), Some("b")), &args()).unwrap();
        assert_eq!(p.target, "b");
        let mut pick = args();
        pick.bin = Some("c".into());
        assert_eq!(
            select(metadata(two, None), &pick).unwrap_err().to_string(),
            "package `app` has no binary `c` (its binaries: a, b)"
        );
    }

    #[test]
    fn an_example_builds_with_dev_dependencies() {
        let targets = serde_json::json!([{"name": "demo", "kind": ["example"]}]);
        let mut pick = args();
        pick.example = Some("demo".into());
        let p = select(metadata(targets, None), &pick).unwrap();
        assert_eq!((p.kind.clone(), p.crates), (Kind::Example, 4));
        assert_eq!(p.describe(), "app (example `demo`)");
    }
}
