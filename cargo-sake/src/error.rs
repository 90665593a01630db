//! What can go wrong, each with what to do about it.

use std::path::PathBuf;

/// An error of `cargo sake`, said to a person.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    /// Running cargo (metadata, new, build) failed before it could say why.
    #[error("cannot run `cargo {what}`: {source}")]
    Cargo {
        what: String,
        source: std::io::Error,
    },
    /// Cargo answered, with an error.
    #[error("`cargo {what}` failed:\n{stderr}")]
    CargoFailed { what: String, stderr: String },
    /// The crate, package or target cannot be chosen.
    #[error("{0}")]
    Project(String),
    /// The build failed (its errors were shown).
    #[error("the build failed")]
    Build,
    /// The server did not start, or stopped.
    #[error("{0}")]
    Server(String),
    /// The server answered something that is not what MCP says.
    #[error("{0}")]
    Wire(String),
    /// A file of the crate or of `target/sake`.
    #[error("{}: {source}", path.display())]
    File {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Something else, said plainly.
    #[error("{0}")]
    Other(String),
}

impl Error {
    /// `cargo sake`'s exit status for it: 2 for trouble (1 is kept for a check that fails).
    pub(crate) fn exit_code(&self) -> u8 {
        2
    }

    pub(crate) fn file(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> Error {
        let path = path.into();
        move |source| Error::File { path, source }
    }
}
