//! `cargo sake new`: a crate with an MCP server of its own, tested from the first `cargo test`.
//!
//! `cargo new` makes the crate (the name's checks, version control, a workspace's members);
//! then its files are written from `templates/`: `Cargo.toml`, `src/main.rs` with one
//! documented tool, `src/tests.rs` (the tool through `TestClient` at every revision, and an
//! insta snapshot of what each revision lists), the snapshot itself, and a README. The
//! snapshot is made here, from the same tool compiled into `cargo sake`
//! ([`crate::template_tool`]): the new crate's test compares its own lists with it.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::project::cargo;
use crate::{Error, snapshot, style, template_tool};

/// `cargo sake new`'s options.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The directory to create; its name is the crate's unless --name says otherwise.
    #[arg(value_name = "PATH")]
    path: PathBuf,
    /// The crate's name.
    #[arg(long)]
    name: Option<String>,
    /// Depend on this local checkout of sake (the directory of its `Cargo.toml`, package
    /// `sake-mcp`) instead of the published version.
    #[arg(long, value_name = "PATH", conflicts_with = "published")]
    sake_path: Option<PathBuf>,
    /// Depend on sake-mcp from crates.io, even when this `cargo sake` was built from a checkout
    /// whose version is not published yet (by default the new crate then depends on that
    /// checkout).
    #[arg(long)]
    published: bool,
    /// Serve MCP as one route of an axum application (`/mcp`, beside `/health`).
    #[arg(long)]
    axum: bool,
    /// Take OAuth 2.1 access tokens (feature `auth`): JWTs of the issuer in AUTH_ISSUER.
    #[arg(long)]
    auth: bool,
    /// Share events, the ends of sessions and tasks with replicas through Redis (feature
    /// `redis`) when REDIS_URL is set.
    #[arg(long)]
    redis: bool,
    /// Version control for the new crate, as `cargo new --vcs` takes it (git, none, …).
    #[arg(long, value_name = "VCS")]
    vcs: Option<String>,
}

const CARGO_TOML: &str = include_str!("../templates/Cargo.toml.in");
const MAIN_RS: &str = include_str!("../templates/main.rs.in");
const TESTS_RS: &str = include_str!("../templates/tests.rs.in");
const README_MD: &str = include_str!("../templates/README.md.in");
pub(crate) const TOOL_RS: &str = include_str!("../templates/tool.rs");

/// What a template is filled with.
#[derive(Debug, Default)]
struct Fill<'a> {
    values: Vec<(&'a str, String)>,
    flags: Vec<(&'a str, bool)>,
}

/// Fills a template: `{{key}}` becomes its value, and the lines between `{{#flag}}` and
/// `{{/flag}}` (each alone on its line) stay when the flag is on, those between `{{^flag}}`
/// and `{{/flag}}` when it is off.
fn render(template: &str, fill: &Fill<'_>) -> String {
    let mut out = String::new();
    // Whether each open section keeps its lines.
    let mut open: Vec<bool> = Vec::new();
    for line in template.lines() {
        let t = line.trim();
        let section = t.strip_prefix("{{").and_then(|r| r.strip_suffix("}}"));
        match section.and_then(|s| s.chars().next().map(|c| (c, &s[1..]))) {
            Some(('#', flag)) | Some(('^', flag)) => {
                let on = fill
                    .flags
                    .iter()
                    .find(|(f, _)| *f == flag)
                    .is_some_and(|(_, v)| *v);
                open.push(if t.starts_with("{{#") { on } else { !on });
                continue;
            }
            Some(('/', _)) => {
                open.pop();
                continue;
            }
            _ => {}
        }
        if open.iter().all(|keep| *keep) {
            let mut line = line.to_owned();
            for (key, value) in &fill.values {
                line = line.replace(&format!("{{{{{key}}}}}"), value);
            }
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}

/// The facade's package on crates.io; its library is the crate `sake`.
const PACKAGE: &str = "sake-mcp";
/// sake's version: this `cargo sake`'s, as the crates are released in step.
const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Where the new crate takes sake from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Source {
    /// crates.io: `sake-mcp = "<VERSION>"`.
    Published,
    /// A checkout named with `--sake-path`.
    Given(PathBuf),
    /// The checkout this `cargo sake` was built from, whose version crates.io does not have.
    Unpublished(PathBuf),
}

/// The `sake-mcp` dependency line (and a comment saying where it points, for a checkout).
fn sake_dependency(source: &Source, features: &[&str]) -> String {
    let features = if features.is_empty() {
        String::new()
    } else {
        let quoted: Vec<String> = features.iter().map(|f| format!("\"{f}\"")).collect();
        format!(", features = [{}]", quoted.join(", "))
    };
    let (comment, p) = match source {
        Source::Published if features.is_empty() => return format!("{PACKAGE} = \"{VERSION}\""),
        Source::Published => return format!("{PACKAGE} = {{ version = \"{VERSION}\"{features} }}"),
        Source::Given(p) => (
            "# A local checkout of sake (`cargo sake new --sake-path`)",
            p,
        ),
        Source::Unpublished(p) => (
            "# sake-mcp {VERSION} is not on crates.io yet: the checkout `cargo sake` was built from",
            p,
        ),
    };
    let escaped = p
        .display()
        .to_string()
        .replace('\\', "\\\\")
        .replace('"', "\\\"");
    format!(
        "{}; once published:\n# {PACKAGE} = \"{VERSION}\"\n{PACKAGE} = {{ path = \"{escaped}\"{features} }}",
        comment.replace("{VERSION}", VERSION)
    )
}

/// The checkout this `cargo sake` was built from, if it was built from one that is still
/// there: the directory above its own sources holds the manifest of `sake-mcp` at this version.
/// (Installed from crates.io, its sources sit alone in cargo's registry cache.)
fn own_checkout() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).parent()?;
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).ok()?;
    let package = package_section(&manifest);
    (package.name.as_deref() == Some(PACKAGE)
        && package.version.as_deref().is_none_or(|v| v == VERSION))
    .then(|| dir.to_path_buf())
}

/// A manifest's `[package]` name and version, read as cargo writes them (`key = "value"` on
/// lines of their own); a version inherited from the workspace reads as `None`.
#[derive(Debug, Default, PartialEq, Eq)]
struct PackageSection {
    name: Option<String>,
    version: Option<String>,
}

fn package_section(manifest: &str) -> PackageSection {
    let mut section = PackageSection::default();
    let mut inside = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            inside = line == "[package]";
            continue;
        }
        if !inside {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let value = value.trim();
        let quoted = value
            .strip_prefix('"')
            .and_then(|v| v.split_once('"'))
            .map(|(v, _)| v.to_owned());
        match key.trim() {
            "name" => section.name = quoted,
            "version" => section.version = quoted,
            _ => {}
        }
    }
    section
}

/// Whether crates.io has `sake-mcp` at this version, asked of cargo (`cargo info`), from a
/// directory outside any workspace so that a local member of that name is not the answer.
/// Offline, or on any failure, it does not: the new crate then depends on the checkout.
async fn on_crates_io() -> bool {
    let mut cmd = tokio::process::Command::new(cargo());
    cmd.args(["info", "--quiet", "--registry", "crates-io"])
        .arg(format!("{PACKAGE}@{VERSION}"))
        .current_dir(std::env::temp_dir())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    matches!(
        tokio::time::timeout(std::time::Duration::from_secs(30), cmd.status()).await,
        Ok(Ok(status)) if status.success()
    )
}

/// The files of a new crate named `name`, by path relative to its directory.
fn files(name: &str, args: &Args, source: &Source) -> Result<Vec<(PathBuf, String)>, Error> {
    let ident = name.replace('-', "_");
    let mut features = Vec::new();
    if args.auth {
        features.push("auth");
    }
    if args.redis {
        features.push("redis");
    }
    let fill = Fill {
        values: vec![
            ("name", name.to_owned()),
            ("ident", ident.clone()),
            ("sake", sake_dependency(source, &features)),
            ("tool", TOOL_RS.trim_end().to_owned()),
        ],
        flags: vec![
            ("axum", args.axum),
            ("auth", args.auth),
            ("redis", args.redis),
        ],
    };
    let lists = template_tool::lists()
        .map_err(|e| Error::Other(format!("cannot list the template's tool: {e}")))?;
    Ok(vec![
        ("Cargo.toml".into(), render(CARGO_TOML, &fill)),
        ("src/main.rs".into(), render(MAIN_RS, &fill)),
        ("src/tests.rs".into(), render(TESTS_RS, &fill)),
        (
            format!("src/snapshots/{ident}__tests__lists.snap").into(),
            snapshot::render("src/tests.rs", "lists", &lists),
        ),
        ("README.md".into(), render(README_MD, &fill)),
    ])
}

pub(crate) async fn run(args: Args) -> Result<ExitCode, Error> {
    let source = match &args.sake_path {
        Some(p) => {
            let p = std::fs::canonicalize(p).map_err(Error::file(p))?;
            let manifest = p.join("Cargo.toml");
            let Ok(text) = std::fs::read_to_string(&manifest) else {
                return Err(Error::Other(format!(
                    "--sake-path {}: no Cargo.toml there (give the directory of sake's checkout)",
                    p.display()
                )));
            };
            let found = package_section(&text).name;
            if found.as_deref() != Some(PACKAGE) {
                return Err(Error::Other(format!(
                    "--sake-path {}: its Cargo.toml is {}, not {PACKAGE} (give the directory of sake's checkout)",
                    p.display(),
                    found.map_or_else(|| "no package".to_owned(), |n| format!("package `{n}`")),
                )));
            }
            Source::Given(p)
        }
        None if args.published => Source::Published,
        None => match own_checkout() {
            Some(dir) if !on_crates_io().await => Source::Unpublished(dir),
            _ => Source::Published,
        },
    };
    let name = match &args.name {
        Some(n) => n.clone(),
        None => args
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| {
                Error::Other(format!(
                    "{}: no name to give the crate",
                    args.path.display()
                ))
            })?,
    };
    // cargo new checks the name and the path, sets up version control, and adds the crate to
    // the workspace it is created in.
    let mut cmd = tokio::process::Command::new(cargo());
    cmd.args(["new", "--bin", "--edition", "2024", "--name", &name]);
    if let Some(vcs) = &args.vcs {
        cmd.args(["--vcs", vcs]);
    }
    cmd.arg(&args.path).stdin(std::process::Stdio::null());
    let out = cmd.output().await.map_err(|source| Error::Cargo {
        what: "new".into(),
        source,
    })?;
    if !out.status.success() {
        return Err(Error::CargoFailed {
            what: "new".into(),
            stderr: String::from_utf8_lossy(&out.stderr).trim_end().to_owned(),
        });
    }
    // cargo new's notes (a workspace it joined) are worth passing on; its "Creating" line is
    // said again below.
    for line in String::from_utf8_lossy(&out.stderr).lines() {
        let line_ = line.trim_start();
        if !line_.starts_with("Creating") && !line_.starts_with("note: see more `Cargo.toml` keys")
        {
            eprintln!("{line}");
        }
    }
    for (path, contents) in files(&name, &args, &source)? {
        let path = args.path.join(path);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(Error::file(dir))?;
        }
        std::fs::write(&path, contents).map_err(Error::file(&path))?;
    }
    let dir = args.path.display();
    eprintln!(
        "{} `{name}`: an MCP server with one tool, `greet`, in {dir}/src/main.rs",
        style::good("Created")
    );
    match &source {
        Source::Published => eprintln!("It depends on {PACKAGE} {VERSION} from crates.io."),
        Source::Given(p) => eprintln!("It depends on the checkout of sake at {}.", p.display()),
        Source::Unpublished(p) => eprintln!(
            "It depends on the checkout of sake at {}: {PACKAGE} {VERSION} is not on crates.io \
             yet (pass --published once it is).",
            p.display()
        ),
    }
    eprintln!();
    eprintln!("  cd {dir}");
    eprintln!("  cargo test        # the tool through TestClient, and the snapshot of its schemas");
    eprintln!(
        "  cargo sake dev    # http://127.0.0.1:3000/mcp, rebuilt and restarted on every change"
    );
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(axum: bool, auth: bool, redis: bool) -> Args {
        Args {
            path: "demo".into(),
            name: None,
            sake_path: None,
            published: false,
            axum,
            auth,
            redis,
            vcs: None,
        }
    }

    #[test]
    fn sections_keep_or_drop_their_lines() {
        let fill = Fill {
            values: vec![("name", "demo".into())],
            flags: vec![("a", true), ("b", false)],
        };
        let t = "x {{name}}\n{{#a}}\na on\n{{/a}}\n{{^a}}\na off\n{{/a}}\n{{#b}}\nb on\n{{#a}}\nb and a\n{{/a}}\n{{/b}}\nend\n";
        assert_eq!(render(t, &fill), "x demo\na on\nend\n");
    }

    #[test]
    fn the_dependency_on_sake() {
        let v = VERSION;
        assert_eq!(
            sake_dependency(&Source::Published, &[]),
            format!("sake-mcp = \"{v}\"")
        );
        assert_eq!(
            sake_dependency(&Source::Published, &["auth", "redis"]),
            format!("sake-mcp = {{ version = \"{v}\", features = [\"auth\", \"redis\"] }}")
        );
        assert_eq!(
            sake_dependency(&Source::Given("/src/sa\"ke".into()), &[]),
            format!(
                "# A local checkout of sake (`cargo sake new --sake-path`); once published:\n\
                 # sake-mcp = \"{v}\"\n\
                 sake-mcp = {{ path = \"/src/sa\\\"ke\" }}"
            )
        );
        assert_eq!(
            sake_dependency(&Source::Unpublished("/src/sake".into()), &["auth"]),
            format!(
                "# sake-mcp {v} is not on crates.io yet: the checkout `cargo sake` was built from; once published:\n\
                 # sake-mcp = \"{v}\"\n\
                 sake-mcp = {{ path = \"/src/sake\", features = [\"auth\"] }}"
            )
        );
    }

    #[test]
    fn a_manifest_names_its_package() {
        let m = "[workspace]\nmembers = [\"a\"]\n\n[package]\n# The facade.\nname = \"sake-mcp\"\nversion.workspace = true\n\n[lib]\nname = \"sake\"\n";
        assert_eq!(
            package_section(m),
            PackageSection {
                name: Some("sake-mcp".into()),
                version: None
            }
        );
        let m = "[package]\nname = \"other\"\nversion = \"1.2.3\" # pinned\n";
        assert_eq!(
            package_section(m),
            PackageSection {
                name: Some("other".into()),
                version: Some("1.2.3".into())
            }
        );
        assert_eq!(
            package_section("[dependencies]\nname = \"x\"\n"),
            PackageSection::default()
        );
    }

    /// This test binary is built from this checkout, so `cargo sake` built with it is too.
    #[test]
    fn a_build_from_this_checkout_finds_it() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        assert_eq!(own_checkout().as_deref(), Some(root));
    }

    #[test]
    fn every_choice_leaves_no_template_syntax() {
        for bits in 0..8 {
            let a = args(bits & 1 != 0, bits & 2 != 0, bits & 4 != 0);
            for (path, text) in files("my-server", &a, &Source::Published).unwrap() {
                assert!(!text.contains("{{"), "{} ({bits}): {text}", path.display());
                let main = path.ends_with("main.rs");
                if main {
                    assert_eq!(text.contains("axum::serve"), a.axum);
                    assert_eq!(text.contains("service.serve(listener"), !a.axum);
                    assert_eq!(text.contains("Authorization::jwt"), a.auth);
                    assert_eq!(text.contains("RedisBus"), a.redis);
                }
            }
        }
        let files = files("my-server", &args(false, false, false), &Source::Published).unwrap();
        let names: Vec<String> = files.iter().map(|(p, _)| p.display().to_string()).collect();
        assert_eq!(
            names,
            [
                "Cargo.toml",
                "src/main.rs",
                "src/tests.rs",
                "src/snapshots/my_server__tests__lists.snap",
                "README.md"
            ]
        );
        // The tool is written as it is compiled into cargo-sake.
        assert!(files[1].1.contains(TOOL_RS.trim_end()));
    }
}
