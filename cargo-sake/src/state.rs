//! What `cargo sake` keeps under `target/sake/`: the session key every run passes to the server
//! (`SAKE_SESSION_KEY`), and for each server the port `dev` serves it on and the lists it served
//! last (`SAKE_PREVIOUS_LISTS`).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::Error;

/// The session key's file: 64 hexadecimal digits (32 random bytes), readable by its owner only.
pub(crate) fn session_key(target_directory: &Path) -> Result<String, Error> {
    let dir = target_directory.join("sake");
    let path = dir.join("session-key");
    if let Ok(text) = std::fs::read_to_string(&path) {
        let key = text.trim();
        if key.len() >= 64 && key.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Ok(key.to_owned());
        }
    }
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|e| Error::Other(format!("no randomness for a session key: {e}")))?;
    let key: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    std::fs::create_dir_all(&dir).map_err(Error::file(&dir))?;
    write_private(&path, key.as_bytes())?;
    Ok(key)
}

/// Writes a file only its owner may read (the session key signs every session).
fn write_private(path: &Path, contents: &[u8]) -> Result<(), Error> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let tmp = path.with_extension("tmp");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(Error::file(&tmp))?;
    file.write_all(contents).map_err(Error::file(&tmp))?;
    std::fs::rename(&tmp, path).map_err(Error::file(path))
}

/// The files of one server (`target/sake/<package>-<kind>-<name>/`).
#[derive(Clone, Debug)]
pub(crate) struct ServerState {
    dir: PathBuf,
}

impl ServerState {
    pub fn new(dir: PathBuf) -> Result<ServerState, Error> {
        std::fs::create_dir_all(&dir).map_err(Error::file(&dir))?;
        Ok(ServerState { dir })
    }

    /// The port `dev` served on last time.
    pub fn port(&self) -> Option<u16> {
        std::fs::read_to_string(self.dir.join("port"))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    pub fn set_port(&self, port: u16) -> Result<(), Error> {
        let path = self.dir.join("port");
        std::fs::write(&path, format!("{port}\n")).map_err(Error::file(path))
    }

    /// Where the lists the server served last are kept.
    pub fn lists_path(&self) -> PathBuf {
        self.dir.join("lists.json")
    }

    /// Keeps the lists the running server serves, for the next start (written whole, then
    /// renamed: a server starting reads either the old file or the new one).
    pub fn set_lists(&self, doc: &serde_json::Value) -> Result<(), Error> {
        let path = self.lists_path();
        let tmp = path.with_extension("json.tmp");
        let text = serde_json::to_vec_pretty(doc).unwrap_or_default();
        std::fs::write(&tmp, text).map_err(Error::file(&tmp))?;
        std::fs::rename(&tmp, &path).map_err(Error::file(path))
    }

    /// A file name for this process's own use (`card`'s server.json).
    pub fn scratch(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.{}", std::process::id()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_made_once_and_kept_private() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = std::env::temp_dir().join(format!("cargo-sake-key-{}", std::process::id()));
        let first = session_key(&dir).unwrap();
        assert_eq!(first.len(), 64);
        assert_eq!(session_key(&dir).unwrap(), first);
        let mode = std::fs::metadata(dir.join("sake/session-key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        // A damaged file is replaced.
        std::fs::write(dir.join("sake/session-key"), "short").unwrap();
        assert_ne!(session_key(&dir).unwrap(), first);
        let state = ServerState::new(dir.join("sake/demo")).unwrap();
        assert_eq!(state.port(), None);
        state.set_port(4123).unwrap();
        assert_eq!(state.port(), Some(4123));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
