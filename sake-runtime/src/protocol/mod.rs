//! The Model Context Protocol on the wire: revisions, JSON-RPC framing, `_meta`, methods, data
//! types and the per-revision rendering step.

pub mod apps;
pub(crate) mod framing;
pub(crate) mod headers;
pub mod jsonrpc;
pub mod meta;
pub mod methods;
pub mod render;
pub mod skills;
pub mod tasks;
pub mod types;
pub mod version;

pub use version::{Era, Revision};
