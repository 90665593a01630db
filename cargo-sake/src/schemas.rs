//! `cargo sake schemas`: what each revision lists, as the running server lists it; the schema
//! compatibility reports of the client profiles; and the comparison with the crate's snapshot
//! (`--check`, for CI).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use hyper::header::{HeaderName, HeaderValue};
use sake::compat::Profile;

use crate::lists::{self, Lists};
use crate::project::{self, TargetArgs};
use crate::state::ServerState;
use crate::target::{look, parse_headers};
use crate::{Error, snapshot, style};

/// A client profile on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ProfileArg {
    /// OpenAI strict function calling.
    Openai,
    /// Gemini function declarations.
    Gemini,
    /// VS Code (GitHub Copilot Chat).
    Vscode,
    /// JSON Schema 2020-12, as MCP requires it.
    JsonSchema,
    /// Every profile.
    All,
}

impl ProfileArg {
    fn profiles(self) -> Vec<Profile> {
        match self {
            ProfileArg::Openai => vec![Profile::OpenAiStrict],
            ProfileArg::Gemini => vec![Profile::Gemini],
            ProfileArg::Vscode => vec![Profile::VsCode],
            ProfileArg::JsonSchema => vec![Profile::JsonSchema2020],
            ProfileArg::All => Profile::ALL.to_vec(),
        }
    }
}

/// `cargo sake schemas`'s options.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    target: TargetArgs,
    /// Print a table instead of JSON.
    #[arg(long)]
    table: bool,
    /// The lists as a client that declares MCP Apps sees them (tools with their views, tools
    /// only views call, views among the resources).
    #[arg(long)]
    apps: bool,
    /// Print the compatibility report of a client profile (repeatable).
    #[arg(long, value_name = "PROFILE")]
    profile: Vec<ProfileArg>,
    /// Compare the lists with the crate's snapshot of them (the test `cargo sake new` writes)
    /// and exit with 1 when they differ; with --profile, also when a profile finds an error.
    #[arg(long)]
    check: bool,
    /// The snapshot to compare with (default: every snapshot of lists in the package).
    #[arg(long, value_name = "PATH", requires = "check")]
    snapshot: Option<PathBuf>,
    /// Ask the server running at this URL instead of building and starting the crate's.
    #[arg(long, value_name = "URL")]
    url: Option<String>,
}

pub(crate) async fn run(args: Args) -> Result<ExitCode, Error> {
    let headers: Vec<(HeaderName, HeaderValue)> = parse_headers(&args.target.headers)?;
    // The package is needed to build it, and to find its snapshots.
    let project = if args.url.is_none() || (args.check && args.snapshot.is_none()) {
        Some(project::load(&args.target).await?)
    } else {
        None
    };
    let lists = match (&args.url, &project) {
        (Some(url), _) => lists::fetch(url, &headers).await?,
        (None, Some(project)) => {
            ServerState::new(project.state_dir())?;
            look(project, &args.target, None, async |url| {
                lists::fetch(url, &headers).await
            })
            .await?
        }
        (None, None) => return Err(Error::Other("nothing to ask: no --url and no crate".into())),
    };
    let mut failed = false;
    if !args.profile.is_empty() {
        let mut profiles: Vec<Profile> = Vec::new();
        for p in args.profile.iter().flat_map(|p| p.profiles()) {
            if !profiles.contains(&p) {
                profiles.push(p);
            }
        }
        let reports = lists::reports(&lists, &profiles);
        if args.table {
            for r in &reports {
                print!("{r}");
            }
        } else {
            println!(
                "{}",
                pretty(&serde_json::to_value(&reports).unwrap_or_default())
            );
        }
        failed |= args.check && reports.iter().any(|r| !r.is_accepted());
    } else if !args.check {
        if args.table {
            print!("{}", lists::table(&lists));
        } else {
            println!(
                "{}",
                pretty(if args.apps { &lists.apps } else { &lists.plain })
            );
        }
    }
    if args.check {
        let package_dir = project
            .as_ref()
            .and_then(|p| p.manifest_path.parent().map(Path::to_path_buf));
        let target_dir = project.as_ref().map(|p| p.target_directory.clone());
        failed |= !check(&lists, args.snapshot.as_deref(), package_dir, target_dir)?;
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn pretty(v: &serde_json::Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}

/// Compares the lists with the snapshots; says what differs. `Ok(true)` when all match.
fn check(
    lists: &Lists,
    snapshot: Option<&Path>,
    package_dir: Option<PathBuf>,
    target_dir: Option<PathBuf>,
) -> Result<bool, Error> {
    let snapshots = match (snapshot, package_dir) {
        (Some(path), _) => vec![(path.to_path_buf(), snapshot::read(path)?)],
        (None, Some(dir)) => {
            let found = snapshot::find(&dir, &target_dir.unwrap_or_else(|| dir.join("target")));
            if found.is_empty() {
                return Err(Error::Other(format!(
                    "no snapshot of the lists under {}: the test `cargo sake new` writes makes one (`insta::assert_json_snapshot!(\"lists\", …)` of sake::testing's lists for every revision); or name one with --snapshot",
                    dir.display()
                )));
            }
            found
        }
        (None, None) => return Err(Error::Other("--check needs a crate or --snapshot".into())),
    };
    let mut all = true;
    for (path, doc) in snapshots {
        let differences = snapshot::differences(&doc, &lists.plain);
        if differences.is_empty() {
            eprintln!(
                "{} the server lists what {} holds",
                style::good("ok:"),
                path.display()
            );
        } else {
            all = false;
            eprintln!(
                "{} the server's lists differ from {}:",
                style::error("differ:"),
                path.display()
            );
            for d in differences {
                eprintln!("  {d}");
            }
            eprintln!(
                "  (a change you meant: accept the new snapshot with `cargo insta review`, or `INSTA_UPDATE=always cargo test`)"
            );
        }
    }
    Ok(all)
}
