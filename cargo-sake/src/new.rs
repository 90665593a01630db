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
    /// Depend on this local checkout of sake instead of the published version.
    #[arg(long, value_name = "PATH")]
    sake_path: Option<PathBuf>,
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

/// The `sake` dependency line: the published version, or a local checkout.
fn sake_dependency(path: Option<&Path>, features: &[&str]) -> String {
    let features = if features.is_empty() {
        String::new()
    } else {
        let quoted: Vec<String> = features.iter().map(|f| format!("\"{f}\"")).collect();
        format!(", features = [{}]", quoted.join(", "))
    };
    let version = env!("CARGO_PKG_VERSION");
    match path {
        Some(p) => {
            let escaped = p
                .display()
                .to_string()
                .replace('\\', "\\\\")
                .replace('"', "\\\"");
            format!(
                "# A local checkout of sake (`cargo sake new --sake-path`); the published one is\n# `sake = \"{version}\"`.\nsake = {{ path = \"{escaped}\"{features} }}"
            )
        }
        None if features.is_empty() => format!("sake = \"{version}\""),
        None => format!("sake = {{ version = \"{version}\"{features} }}"),
    }
}

/// The files of a new crate named `name`, by path relative to its directory.
fn files(
    name: &str,
    args: &Args,
    sake_path: Option<&Path>,
) -> Result<Vec<(PathBuf, String)>, Error> {
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
            ("sake", sake_dependency(sake_path, &features)),
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
    let sake_path = match &args.sake_path {
        Some(p) => {
            let p = std::fs::canonicalize(p).map_err(Error::file(p))?;
            if !p.join("Cargo.toml").is_file() {
                return Err(Error::Other(format!(
                    "--sake-path {}: no Cargo.toml there (give the directory of sake's checkout)",
                    p.display()
                )));
            }
            Some(p)
        }
        None => None,
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
    for (path, contents) in files(&name, &args, sake_path.as_deref())? {
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
        let v = env!("CARGO_PKG_VERSION");
        assert_eq!(sake_dependency(None, &[]), format!("sake = \"{v}\""));
        assert_eq!(
            sake_dependency(None, &["auth", "redis"]),
            format!("sake = {{ version = \"{v}\", features = [\"auth\", \"redis\"] }}")
        );
        assert!(
            sake_dependency(Some(Path::new("/src/sa\"ke")), &[])
                .ends_with("sake = { path = \"/src/sa\\\"ke\" }")
        );
    }

    #[test]
    fn every_choice_leaves_no_template_syntax() {
        for bits in 0..8 {
            let a = args(bits & 1 != 0, bits & 2 != 0, bits & 4 != 0);
            for (path, text) in files("my-server", &a, None).unwrap() {
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
        let files = files("my-server", &args(false, false, false), None).unwrap();
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
