//! Watching the crate's sources (`notify`): changes come in bursts (an editor writes, renames
//! and touches; `cargo fmt` rewrites many files), so a change is reported once the files have
//! been quiet for a moment. What a build writes (`target/`), hidden files (`.git/`, editors'
//! swap files) and insta's snapshots are not changes of the server.

use std::path::{Path, PathBuf};
use std::time::Duration;

use notify::{EventKind, RecursiveMode, Watcher as _};
use tokio::sync::mpsc;

use crate::Error;

/// How long the files must be quiet before a change is reported.
pub(crate) const QUIET: Duration = Duration::from_millis(300);

/// A watcher of the crate's directories.
pub(crate) struct Watcher {
    _watcher: notify::RecommendedWatcher,
    changes: mpsc::UnboundedReceiver<PathBuf>,
}

impl std::fmt::Debug for Watcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watcher").finish_non_exhaustive()
    }
}

/// Whether a changed path under one of the watched `roots` can change the server: not under
/// `ignored` (the target directory), not hidden below its root, not an editor's backup, not a
/// snapshot.
pub(crate) fn matters(path: &Path, roots: &[PathBuf], ignored: &[PathBuf]) -> bool {
    if ignored.iter().any(|i| path.starts_with(i)) {
        return false;
    }
    let relative = roots
        .iter()
        .find_map(|r| path.strip_prefix(r).ok())
        .unwrap_or(path);
    let hidden = relative.components().any(|c| {
        let s = c.as_os_str().to_string_lossy();
        s.starts_with('.') && s != "." && s != ".."
    });
    if hidden {
        return false;
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let scratch = name.ends_with('~')
        || name.ends_with(".swp")
        || name.ends_with(".swx")
        || name == "4913"
        || name.ends_with(".snap")
        || name.ends_with(".snap.new")
        || name.ends_with(".pending-snap");
    !scratch
}

/// What to watch for `roots`: each root itself, and recursively each directory in it but the
/// ignored ones, hidden ones and `target` directories (a build's output holds thousands of
/// directories, each an inotify watch). A directory added at the top of a root later is not
/// watched until `cargo sake dev` starts again.
fn watches(roots: &[PathBuf], ignored: &[PathBuf]) -> Vec<(PathBuf, RecursiveMode)> {
    let mut out = Vec::new();
    for root in roots {
        out.push((root.clone(), RecursiveMode::NonRecursive));
        let Ok(entries) = std::fs::read_dir(root) else {
            continue;
        };
        let mut dirs: Vec<PathBuf> = entries
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.path())
            .filter(|p| {
                let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
                let name = name.unwrap_or_default();
                !name.starts_with('.')
                    && name != "target"
                    && !ignored.iter().any(|i| p.starts_with(i) || i == p)
            })
            .collect();
        dirs.sort();
        out.extend(dirs.into_iter().map(|d| (d, RecursiveMode::Recursive)));
    }
    out
}

impl Watcher {
    /// Watches `dirs` recursively, reporting only changes that [`matters`].
    pub fn new(dirs: &[PathBuf], ignored: Vec<PathBuf>) -> Result<Watcher, Error> {
        let (tx, changes) = mpsc::unbounded_channel();
        let roots = dirs.to_vec();
        let ignored_dirs = ignored.clone();
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                let Ok(event) = event else { return };
                let relevant = matches!(
                    event.kind,
                    EventKind::Create(_)
                        | EventKind::Modify(_)
                        | EventKind::Remove(_)
                        | EventKind::Any
                ) && !matches!(
                    event.kind,
                    EventKind::Modify(notify::event::ModifyKind::Metadata(_))
                );
                if !relevant {
                    return;
                }
                for path in event.paths {
                    if matters(&path, &roots, &ignored) {
                        let _ = tx.send(path);
                    }
                }
            })
            .map_err(|e| Error::Other(format!("cannot watch the sources: {e}")))?;
        for (dir, mode) in watches(dirs, &ignored_dirs) {
            watcher
                .watch(&dir, mode)
                .map_err(|e| Error::Other(format!("cannot watch {}: {e}", dir.display())))?;
        }
        Ok(Watcher {
            _watcher: watcher,
            changes,
        })
    }

    /// Waits for a change, then until the files are quiet for [`QUIET`]; returns what changed.
    pub async fn changed(&mut self) -> Vec<PathBuf> {
        let Some(first) = self.changes.recv().await else {
            return std::future::pending().await;
        };
        let mut paths = vec![first];
        loop {
            match tokio::time::timeout(QUIET, self.changes.recv()).await {
                Ok(Some(p)) => {
                    if !paths.contains(&p) {
                        paths.push(p);
                    }
                }
                Ok(None) | Err(_) => return paths,
            }
        }
    }

    /// The changes reported since the last call, without waiting.
    pub fn pending(&mut self) -> Vec<PathBuf> {
        let mut paths = Vec::new();
        while let Ok(p) = self.changes.try_recv() {
            if !paths.contains(&p) {
                paths.push(p);
            }
        }
        paths
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_build_or_an_editor_writes_is_not_a_change() {
        let roots = [PathBuf::from("/home/u/.work/w")];
        let target = [PathBuf::from("/home/u/.work/w/target")];
        let m = |p: &str| matters(Path::new(p), &roots, &target);
        // A root under a hidden directory is watched all the same.
        assert!(m("/home/u/.work/w/src/main.rs"));
        assert!(m("/home/u/.work/w/Cargo.toml"));
        assert!(m("/home/u/.work/w/skills/x/SKILL.md"));
        assert!(!m("/home/u/.work/w/target/debug/demo"));
        assert!(!m("/home/u/.work/w/.git/index"));
        assert!(!m("/home/u/.work/w/src/.main.rs.swp"));
        assert!(!m("/home/u/.work/w/src/main.rs~"));
        assert!(!m("/home/u/.work/w/src/4913"));
        assert!(!m(
            "/home/u/.work/w/src/snapshots/demo__tests__lists.snap.new"
        ));
    }

    #[test]
    fn build_output_and_hidden_directories_are_not_watched() {
        let dir = std::env::temp_dir().join(format!("cargo-sake-watches-{}", std::process::id()));
        for d in ["src/bin", "target/debug", ".git", "skills", "out"] {
            std::fs::create_dir_all(dir.join(d)).unwrap();
        }
        let w = watches(std::slice::from_ref(&dir), &[dir.join("out")]);
        assert_eq!(
            w,
            [
                (dir.clone(), RecursiveMode::NonRecursive),
                (dir.join("skills"), RecursiveMode::Recursive),
                (dir.join("src"), RecursiveMode::Recursive),
            ]
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn a_burst_of_changes_is_one() {
        let dir = std::env::temp_dir().join(format!("cargo-sake-watch-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("src")).unwrap();
        let mut w = Watcher::new(std::slice::from_ref(&dir), vec![dir.join("target")]).unwrap();
        std::fs::create_dir_all(dir.join("target")).unwrap();
        for i in 0..5 {
            std::fs::write(dir.join("src/main.rs"), format!("// {i}")).unwrap();
            std::fs::write(dir.join("target/out"), format!("{i}")).unwrap();
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let changed = tokio::time::timeout(Duration::from_secs(10), w.changed())
            .await
            .unwrap();
        assert_eq!(changed, [dir.join("src/main.rs")]);
        assert!(w.pending().is_empty());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
