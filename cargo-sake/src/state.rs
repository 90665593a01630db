//! What `cargo sake` keeps under `target/sake/`: the session key every run passes to the server
//! (`SAKE_SESSION_KEY`), and for each server the port `dev` serves it on and the lists it served
//! last (`SAKE_PREVIOUS_LISTS`).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::Error;

/// The session key's file: 64 hexadecimal digits (32 random bytes), readable by its owner only.
///
/// An existing file is used only if it is a regular file (not a symbolic link), owned by the
/// user running `cargo sake`, and readable by nobody else; otherwise `cargo sake` stops with an
/// error saying to delete it (whoever could read or plant it could forge the dev server's
/// sessions, so it is never used, nor silently replaced). A file of ours that is not a key (cut
/// short, edited) is replaced.
pub(crate) fn session_key(target_directory: &Path) -> Result<String, Error> {
    let dir = target_directory.join("sake");
    let path = dir.join("session-key");
    if let Some(text) = read_private(&path)? {
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

/// Opening flags that refuse a symbolic link in the last component of the path.
fn no_follow() -> i32 {
    nix::fcntl::OFlag::O_NOFOLLOW.bits()
}

/// Reads a file only its owner may read: `None` if there is none; an error if it is a symbolic
/// link, not a regular file, someone else's, or readable or writable by group or others.
fn read_private(path: &Path) -> Result<Option<String>, Error> {
    use std::io::Read as _;
    use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
    let unsafe_key = |why: String| {
        Error::Other(format!(
            "{}: {why}, so it is not used as the session key (whoever can read or plant it could \
             forge the sessions of the servers `cargo sake` starts). Delete it (`rm {}`) and run \
             again: `cargo sake` makes a new key readable by you only (mode 0600).",
            path.display(),
            path.display()
        ))
    };
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(Error::File {
                path: path.to_owned(),
                source: e,
            });
        }
        Ok(meta) if meta.file_type().is_symlink() => {
            return Err(unsafe_key("it is a symbolic link".to_owned()));
        }
        Ok(_) => {}
    }
    // Opened without following a link (one swapped in since the look above is refused too),
    // then checked on the open file itself.
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(no_follow())
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(code) if code == nix::errno::Errno::ELOOP as i32 => {
                unsafe_key("it is a symbolic link".to_owned())
            }
            _ => Error::File {
                path: path.to_owned(),
                source: e,
            },
        })?;
    let meta = file.metadata().map_err(Error::file(path))?;
    if !meta.file_type().is_file() {
        return Err(unsafe_key("it is not a regular file".to_owned()));
    }
    if let Some(why) = not_private(meta.uid(), meta.mode(), nix::unistd::geteuid().as_raw()) {
        return Err(unsafe_key(why));
    }
    let mut text = String::new();
    match file.read_to_string(&mut text) {
        Ok(_) => Ok(Some(text)),
        // Not text: not a key; replaced like a damaged one.
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => Ok(Some(String::new())),
        Err(e) => Err(Error::File {
            path: path.to_owned(),
            source: e,
        }),
    }
}

/// Why a file of this owner and mode is not private to user `me`, if it is not.
fn not_private(owner: u32, mode: u32, me: u32) -> Option<String> {
    let mode = mode & 0o7777;
    if owner != me {
        Some(format!(
            "it belongs to user {owner}, not to you (user {me})"
        ))
    } else if mode & 0o077 != 0 {
        Some(format!(
            "others than you may read or write it (mode {mode:04o})"
        ))
    } else {
        None
    }
}

/// Writes a file only its owner may read (the session key signs every session): a new
/// temporary file, created with mode 0600 (never an existing file, never through a symbolic
/// link), then renamed over `path` in one step.
fn write_private(path: &Path, contents: &[u8]) -> Result<(), Error> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let tmp = path.with_extension("tmp");
    let create = || {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(no_follow())
            .open(&tmp)
    };
    let mut file = match create() {
        // Left by a run that stopped half-way (or planted): removed (a link itself, never what
        // it points to), and created afresh.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            std::fs::remove_file(&tmp).map_err(Error::file(&tmp))?;
            create().map_err(Error::file(&tmp))?
        }
        other => other.map_err(Error::file(&tmp))?,
    };
    file.write_all(contents).map_err(Error::file(&tmp))?;
    file.sync_all().map_err(Error::file(&tmp))?;
    drop(file);
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

    /// A fresh directory for one test.
    fn scratch_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("cargo-sake-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("sake")).unwrap();
        dir
    }

    fn mode_of(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::symlink_metadata(path)
            .unwrap()
            .permissions()
            .mode()
            & 0o7777
    }

    const KEY: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

    #[test]
    fn a_key_others_may_read_is_refused_and_left_alone() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = scratch_dir("key-readable");
        let path = dir.join("sake/session-key");
        std::fs::write(&path, KEY).unwrap();
        for mode in [0o644, 0o640, 0o604, 0o620] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            let err = session_key(&dir).unwrap_err().to_string();
            assert_eq!(
                err,
                format!(
                    "{p}: others than you may read or write it (mode {mode:04o}), so it is not \
                     used as the session key (whoever can read or plant it could forge the \
                     sessions of the servers `cargo sake` starts). Delete it (`rm {p}`) and run \
                     again: `cargo sake` makes a new key readable by you only (mode 0600).",
                    p = path.display()
                )
            );
            assert_eq!(std::fs::read_to_string(&path).unwrap(), KEY);
        }
        // Once private, it is the key.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(session_key(&dir).unwrap(), KEY);
        // Deleted as the error says: a new one, mode 0600.
        std::fs::remove_file(&path).unwrap();
        let new = session_key(&dir).unwrap();
        assert_ne!(new, KEY);
        assert_eq!(mode_of(&path), 0o600);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_key_that_is_a_symbolic_link_or_not_a_file_is_refused() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = scratch_dir("key-link");
        let path = dir.join("sake/session-key");
        // A link to a private file holding a good key: still refused (whoever made the link
        // chose the key).
        let elsewhere = dir.join("planted");
        std::fs::write(&elsewhere, KEY).unwrap();
        std::fs::set_permissions(&elsewhere, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
        let err = session_key(&dir).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!(
                "{}: it is a symbolic link, so it is not used as the session key",
                path.display()
            )),
            "{err}"
        );
        assert!(err.ends_with("(mode 0600)."), "{err}");
        // Neither the link nor what it points to was touched.
        assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), KEY);
        assert!(
            std::fs::symlink_metadata(&path)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        // A dangling link too.
        std::fs::remove_file(&elsewhere).unwrap();
        let err = session_key(&dir).unwrap_err().to_string();
        assert!(err.contains(": it is a symbolic link, so"), "{err}");
        assert!(!elsewhere.exists());
        // A directory.
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir(&path).unwrap();
        let err = session_key(&dir).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!("{}: it is not a regular file, so", path.display())),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_key_of_another_user_is_refused() {
        assert_eq!(not_private(1000, 0o100600, 1000), None);
        assert_eq!(not_private(1000, 0o100400, 1000), None);
        assert_eq!(
            not_private(0, 0o100600, 1000).as_deref(),
            Some("it belongs to user 0, not to you (user 1000)")
        );
        assert_eq!(
            not_private(1000, 0o100660, 1000).as_deref(),
            Some("others than you may read or write it (mode 0660)")
        );
        assert_eq!(
            not_private(1000, 0o100602, 1000).as_deref(),
            Some("others than you may read or write it (mode 0602)")
        );
        // The same on a real file, where the tests can give one away (as root, as in CI here).
        if nix::unistd::geteuid().is_root() {
            use std::os::unix::fs::PermissionsExt as _;
            let dir = scratch_dir("key-owner");
            let path = dir.join("sake/session-key");
            std::fs::write(&path, KEY).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
            std::os::unix::fs::chown(&path, Some(65534), None).unwrap();
            let err = session_key(&dir).unwrap_err().to_string();
            assert!(
                err.starts_with(&format!(
                    "{}: it belongs to user 65534, not to you (user 0), so",
                    path.display()
                )),
                "{err}"
            );
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }

    #[test]
    fn the_temporary_file_is_made_new_with_mode_0600_and_never_through_a_link() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = scratch_dir("key-tmp");
        let path = dir.join("sake/session-key");
        let tmp = dir.join("sake/session-key.tmp");
        // A temporary file left behind, readable by all: its mode is not kept.
        std::fs::write(&tmp, "left behind").unwrap();
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o666)).unwrap();
        let first = session_key(&dir).unwrap();
        assert_eq!(first.len(), 64);
        assert_eq!(mode_of(&path), 0o600);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), first);
        assert!(!tmp.exists());
        // A temporary name that is a link to another file: the key is not written through it.
        std::fs::remove_file(&path).unwrap();
        let victim = dir.join("victim");
        std::fs::write(&victim, "precious").unwrap();
        std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o644)).unwrap();
        std::os::unix::fs::symlink(&victim, &tmp).unwrap();
        let second = session_key(&dir).unwrap();
        assert_ne!(second, first);
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert_eq!(mode_of(&victim), 0o644);
        let meta = std::fs::symlink_metadata(&path).unwrap();
        assert!(meta.file_type().is_file());
        assert_eq!(mode_of(&path), 0o600);
        assert!(std::fs::symlink_metadata(&tmp).is_err());
        // A damaged key of ours is replaced, in place of the file (not written into it).
        std::fs::write(&path, "short").unwrap();
        let third = session_key(&dir).unwrap();
        assert_ne!(third, second);
        assert_eq!(mode_of(&path), 0o600);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
