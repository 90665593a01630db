//! The runtime of [sake](https://docs.rs/sake): registry, schemas, protocol, dispatch and
//! transports. Depend on the `sake` crate, which re-exports this one with the macros.

#![warn(missing_docs)]

#[cfg(feature = "auth")]
pub mod auth;
#[cfg(feature = "client")]
pub mod client;
mod error;
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;
pub mod handler;
#[cfg(any(feature = "auth", feature = "client"))]
mod net;
pub mod protocol;
pub mod registry;
pub mod schema;
pub mod server;
mod signing;
pub mod testing;
pub mod transport;
pub mod uri_template;

pub use error::Error;
pub use handler::ResourceError;
pub use handler::context::Context;
pub use handler::events::Notifier;
pub use handler::input::{Elicitation, InputError};
pub use handler::state::State;
pub use protocol::jsonrpc::{RequestId, RpcError};
pub use protocol::render::CacheScope;
pub use protocol::types::*;
pub use protocol::{Era, Revision};
pub use registry::Registry;
pub use server::{Server, Service};

/// What generated code uses. Not a public API: it changes without notice.
#[doc(hidden)]
pub mod __private {
    pub use inventory;
    pub use schemars;
    pub use serde;
    pub use serde_json;
    pub use serde_json::value::RawValue;

    pub use crate::handler::*;
    pub use crate::schema::{input_schema, output_schema};
}
