//! Building the server with cargo: `cargo build --message-format=json…`, read as it goes for a
//! progress bar, the compiler's diagnostics and the executable it made.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Deserialize;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::process::Group;
use crate::project::{Kind, Project, TargetArgs, cargo};
use crate::{Error, style};

/// A build that succeeded.
#[derive(Debug)]
pub(crate) struct Built {
    pub executable: PathBuf,
    /// Nothing changed: the executable is the one built before.
    pub fresh: bool,
    pub took: Duration,
}

/// One line of cargo's JSON output (what `cargo sake` reads of it).
#[derive(Debug, Deserialize)]
#[serde(tag = "reason")]
enum Message {
    #[serde(rename = "compiler-artifact")]
    Artifact {
        target: ArtifactTarget,
        executable: Option<PathBuf>,
        #[serde(default)]
        fresh: bool,
    },
    #[serde(rename = "compiler-message")]
    Compiler { message: Diagnostic },
    #[serde(rename = "build-finished")]
    Finished { success: bool },
    #[serde(other)]
    Other,
}

#[derive(Debug, Deserialize)]
struct ArtifactTarget {
    name: String,
    kind: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct Diagnostic {
    rendered: Option<String>,
}

/// The lines of cargo's stderr kept to explain a failure.
const KEPT_LINES: usize = 200;

/// A running build; [`Build::stop`] ends it and everything it started.
pub(crate) struct Build {
    group: Group,
    stdout: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    stderr: Option<tokio::task::JoinHandle<VecDeque<String>>>,
    bar: ProgressBar,
    started: Instant,
    target: String,
    kind: &'static str,
}

impl Build {
    /// Starts `cargo build` for the project's target.
    pub fn start(project: &Project, args: &TargetArgs) -> Result<Build, Error> {
        let mut cmd = tokio::process::Command::new(cargo());
        let format = if style::terminal() {
            "json-diagnostic-rendered-ansi"
        } else {
            "json"
        };
        cmd.arg("build")
            .arg(format!("--message-format={format}"))
            .arg("--manifest-path")
            .arg(&project.manifest_path)
            .args(["-p", &project.package]);
        let kind = match project.kind {
            Kind::Bin => "bin",
            Kind::Example => "example",
        };
        cmd.arg(format!("--{kind}")).arg(&project.target);
        for f in &args.features {
            cmd.args(["--features", f]);
        }
        if args.all_features {
            cmd.arg("--all-features");
        }
        if args.no_default_features {
            cmd.arg("--no-default-features");
        }
        if args.release {
            cmd.arg("--release");
        }
        cmd.env("CARGO_TERM_PROGRESS_WHEN", "never")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut group = Group::spawn(cmd, "cargo build")?;
        let child = group.child_mut();
        let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
            return Err(Error::Other(
                "cargo build started without its output".into(),
            ));
        };
        let bar = progress(project);
        let lines_bar = bar.clone();
        let stderr = tokio::spawn(async move {
            let mut kept = VecDeque::new();
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let trimmed = line.trim_start();
                if let Some(what) = trimmed
                    .strip_prefix("Compiling ")
                    .or_else(|| trimmed.strip_prefix("Checking "))
                {
                    lines_bar.set_message(what.split(' ').next().unwrap_or(what).to_owned());
                }
                if kept.len() == KEPT_LINES {
                    kept.pop_front();
                }
                kept.push_back(line);
            }
            kept
        });
        Ok(Build {
            group,
            stdout: BufReader::new(stdout).lines(),
            stderr: Some(stderr),
            bar,
            started: Instant::now(),
            target: project.target.clone(),
            kind,
        })
    }

    /// Waits for the build's end, showing its progress and diagnostics.
    pub async fn wait(&mut self) -> Result<Built, Error> {
        let mut executable = None;
        let mut fresh = true;
        let mut success = None;
        while let Ok(Some(line)) = self.stdout.next_line().await {
            let Ok(message) = serde_json::from_str::<Message>(&line) else {
                continue;
            };
            match message {
                Message::Artifact {
                    target,
                    executable: exe,
                    fresh: f,
                } => {
                    self.bar.inc(1);
                    if self.bar.position() >= self.bar.length().unwrap_or(0) {
                        self.bar.inc_length(1);
                    }
                    if let Some(exe) = exe
                        && target.name == self.target
                        && target.kind.iter().any(|k| k == self.kind)
                    {
                        executable = Some(exe);
                        fresh = f;
                    }
                }
                Message::Compiler { message } => {
                    if let Some(rendered) = message.rendered {
                        self.bar.suspend(|| eprint!("{rendered}"));
                    }
                }
                Message::Finished { success: s } => success = Some(s),
                Message::Other => {}
            }
        }
        let status = self.group.wait().await;
        let kept = match self.stderr.take() {
            Some(task) => task.await.unwrap_or_default(),
            None => VecDeque::new(),
        };
        self.bar.finish_and_clear();
        let ok = success.unwrap_or(false) && status.is_some_and(|s| s.success());
        if !ok {
            // Cargo's own errors (a manifest it cannot read, a dependency it cannot find) are
            // on stderr; the compiler's were shown as they came.
            for line in kept.iter().filter(|l| !is_status(l)) {
                eprintln!("{line}");
            }
            return Err(Error::Build);
        }
        let executable = executable.ok_or_else(|| {
            Error::Other(format!(
                "cargo built no executable for {} `{}`",
                self.kind, self.target
            ))
        })?;
        Ok(Built {
            executable,
            fresh,
            took: self.started.elapsed(),
        })
    }

    /// Stops the build: cargo and the compilers it started.
    pub async fn stop(mut self) {
        self.bar.finish_and_clear();
        self.group.stop(Duration::from_secs(2)).await;
    }
}

/// Cargo's progress lines on stderr (`Compiling x`, `Finished …`): not worth showing again
/// after a failure.
fn is_status(line: &str) -> bool {
    const STATUS: [&str; 12] = [
        "Compiling ",
        "Checking ",
        "Finished ",
        "Blocking ",
        "Downloading ",
        "Downloaded ",
        "Updating ",
        "Locking ",
        "Adding ",
        "Fresh ",
        "Running ",
        "Building ",
    ];
    let t = line.trim_start();
    STATUS.iter().any(|s| t.starts_with(s))
}

/// The progress bar of a build on a terminal: the crates compiled out of about how many a
/// build compiles from scratch; nothing elsewhere (a line says when it ends).
fn progress(project: &Project) -> ProgressBar {
    if !style::terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(
        Some(project.crates as u64),
        ProgressDrawTarget::stderr_with_hz(10),
    );
    if let Ok(s) = ProgressStyle::with_template(
        "{spinner:.green} building {prefix:.bold} [{bar:25.cyan/blue}] {pos}/{len} {wide_msg:.dim}",
    ) {
        bar.set_style(s.progress_chars("=> "));
    }
    bar.set_prefix(project.target.clone());
    bar.enable_steady_tick(Duration::from_millis(100));
    bar
}

/// Builds the project's target to the end: `Ok` with the executable, or the build's failure
/// (its errors shown).
pub(crate) async fn build(project: &Project, args: &TargetArgs) -> Result<Built, Error> {
    if !style::terminal() {
        eprintln!("building {}", project.describe());
    }
    let mut build = Build::start(project, args)?;
    build.wait().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cargo_messages_are_read() {
        let artifact = r#"{"reason":"compiler-artifact","package_id":"path+file:///w#demo@0.1.0","target":{"name":"demo","kind":["bin"],"src_path":"/w/src/main.rs"},"executable":"/w/target/debug/demo","fresh":false}"#;
        match serde_json::from_str::<Message>(artifact).unwrap() {
            Message::Artifact {
                target,
                executable,
                fresh,
            } => {
                assert_eq!(target.name, "demo");
                assert_eq!(executable, Some(PathBuf::from("/w/target/debug/demo")));
                assert!(!fresh);
            }
            other => panic!("{other:?}"),
        }
        let finished = r#"{"reason":"build-finished","success":false}"#;
        assert!(matches!(
            serde_json::from_str::<Message>(finished).unwrap(),
            Message::Finished { success: false }
        ));
        let script = r#"{"reason":"build-script-executed","package_id":"x"}"#;
        assert!(matches!(
            serde_json::from_str::<Message>(script).unwrap(),
            Message::Other
        ));
    }

    #[test]
    fn status_lines_are_told_from_errors() {
        assert!(is_status("   Compiling demo v0.1.0 (/w)"));
        assert!(!is_status("error: could not compile `demo` (bin \"demo\")"));
        assert!(!is_status(
            "error: failed to parse manifest at `/w/Cargo.toml`"
        ));
    }
}
