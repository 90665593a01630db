//! The MCP Apps preview of `cargo sake dev` (docs/apps.md): the files of the host page, built
//! into `cargo sake` so that it works offline, written at each `dev` start to the state
//! directory; the server serves them at `/_sake/apps` on its own port when `SAKE_DEV_APPS`
//! names that directory (only `dev` sets it).
//!
//! `bridge.js` is the official host bridge (AppBridge, `@modelcontextprotocol/ext-apps`) and
//! the TypeScript SDK client, bundled from the npm packages the tests pin by
//! `scripts/apps-bridge.mjs` (their licences in `bridge.LICENSES.txt`); the page, its form and
//! the sandbox proxy are ours.

use std::path::{Path, PathBuf};

use crate::Error;

/// The files, by the name the server serves them under.
pub(crate) const FILES: [(&str, &[u8]); 8] = [
    ("index.html", include_bytes!("../assets/apps/index.html")),
    ("host.mjs", include_bytes!("../assets/apps/host.mjs")),
    ("form.mjs", include_bytes!("../assets/apps/form.mjs")),
    ("host.css", include_bytes!("../assets/apps/host.css")),
    (
        "sandbox.html",
        include_bytes!("../assets/apps/sandbox.html"),
    ),
    ("sandbox.js", include_bytes!("../assets/apps/sandbox.js")),
    ("bridge.js", include_bytes!("../assets/apps/bridge.js")),
    (
        "bridge.LICENSES.txt",
        include_bytes!("../assets/apps/bridge.LICENSES.txt"),
    ),
];

/// Where the server serves the page.
pub(crate) const PATH: &str = "/_sake/apps";

/// Writes the files into `<state dir>/apps` and returns that directory.
pub(crate) fn write(state_dir: &Path) -> Result<PathBuf, Error> {
    let dir = state_dir.join("apps");
    let failed = |e: std::io::Error| {
        Error::Other(format!(
            "cannot write the MCP Apps preview to {}: {e}",
            dir.display()
        ))
    };
    std::fs::create_dir_all(&dir).map_err(failed)?;
    for (name, bytes) in FILES {
        let path = dir.join(name);
        if std::fs::read(&path).is_ok_and(|b| b == bytes) {
            continue;
        }
        std::fs::write(&path, bytes).map_err(failed)?;
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_files_are_written_once_and_kept_up_to_date() {
        let dir = std::env::temp_dir().join(format!("cargo-sake-apps-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let apps = write(&dir).unwrap();
        assert_eq!(apps, dir.join("apps"));
        for (name, bytes) in FILES {
            assert_eq!(std::fs::read(apps.join(name)).unwrap(), bytes, "{name}");
        }
        std::fs::write(apps.join("host.mjs"), "stale").unwrap();
        write(&dir).unwrap();
        assert_eq!(std::fs::read(apps.join("host.mjs")).unwrap(), FILES[1].1);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
