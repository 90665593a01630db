//! Errors of start-up and serving. Request-time failures are [`RpcError`](crate::RpcError)s,
//! answered on the wire; these stop the server.

/// Why the server could not start or stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Two functions registered the same tool or prompt name, or the same resource URI.
    #[error(
        "two {kind}s are named `{name}`: one at {first}, one at {second}; give one of them another name (#[{kind}(name = \"...\")])"
    )]
    Duplicate {
        /// `tool`, `prompt` or `resource`.
        kind: &'static str,
        /// The name or URI.
        name: String,
        /// Where the first is defined.
        first: String,
        /// Where the second is defined.
        second: String,
    },
    /// Two definitions would be served under one name or URI once composed
    /// (`Server::mount`, a `ToolTransform::rename`, the tool search tool).
    #[error(
        "two {kind}s would be served as `{name}`: {first}, and {second}; {}",
        collision_hint(kind)
    )]
    Collision {
        /// `tool`, `prompt`, `resource`, `resource template` or `view`.
        kind: &'static str,
        /// The name or URI both would have.
        name: String,
        /// The first: its own name, where it is defined, and how it was composed.
        first: String,
        /// The second, likewise.
        second: String,
    },
    /// A registered item is invalid (a hand-built descriptor, or a macro bypassed).
    #[error("{kind} `{name}` at {location}: {reason}")]
    InvalidDefinition {
        /// `tool`, `prompt` or `resource`.
        kind: &'static str,
        /// Its name or URI.
        name: String,
        /// Where it is defined.
        location: String,
        /// What is wrong.
        reason: String,
    },
    /// A function asks for `State<T>` of a type never registered with `Server::state`.
    #[error(
        "{kind} `{name}` at {location} takes State<{type_name}>, but no {type_name} was registered: add `.state(value)` to the server builder"
    )]
    MissingState {
        /// `tool`, `prompt` or `resource`.
        kind: &'static str,
        /// Its name or URI.
        name: String,
        /// Where it is defined.
        location: String,
        /// The state's type.
        type_name: &'static str,
    },
    /// The server could not listen on the address.
    #[error("could not listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// An I/O error while serving.
    #[error("I/O error while serving: {0}")]
    Io(#[from] std::io::Error),
    /// A builder option has an unusable value.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// The start-up schema check (`Server::check_schemas` with `Severity::Deny`) found tool
    /// schemas a client refuses: the reports hold the findings of level error.
    #[cfg(feature = "compat")]
    #[cfg_attr(docsrs, doc(cfg(feature = "compat")))]
    #[error("{}", crate::compat::report::describe(.0))]
    IncompatibleSchemas(Vec<crate::compat::report::Report>),
}

/// What to do about two definitions served under one name, by their kind.
fn collision_hint(kind: &str) -> &'static str {
    match kind {
        "tool" => "mount one under another prefix, or rename it (ToolTransform::rename)",
        "prompt" => "mount one under another prefix, or rename it (#[prompt(name = \"...\")])",
        _ => "mount one under another prefix, or give one another URI",
    }
}
