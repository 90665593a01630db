//! # sake
//!
//! Write a [Model Context Protocol](https://modelcontextprotocol.io) server by annotating
//! ordinary Rust functions. One runtime serves the stateless revision 2026-07-28 and the
//! handshake revisions 2025-11-25, 2025-06-18 and 2025-03-26 on one Streamable HTTP endpoint.
//!
//! ```no_run
//! use sake::prelude::*;
//!
//! /// Adds two numbers.
//! #[tool(annotations(read_only))]
//! async fn add(
//!     /// The first addend.
//!     a: i64,
//!     /// The second addend.
//!     b: i64,
//! ) -> i64 {
//!     a + b
//! }
//!
//! #[tokio::main]
//! async fn main() -> Result<(), sake::Error> {
//!     sake::Server::from_registry()
//!         .name("demo")
//!         .version(env!("CARGO_PKG_VERSION"))
//!         .serve_http("127.0.0.1:3000")
//!         .await
//! }
//! ```
//!
//! The functions stay ordinary: `add(1, 2).await` is `3` in a unit test. See the guides in
//! `docs/` for every macro option, the revisions, and deployment.

pub use sake_macros::{prompt, resource, tool};
pub use sake_runtime::*;

/// The common imports: the macros, [`Context`], content types and the server.
pub mod prelude {
    pub use crate::{
        CallToolResult, Completion, Content, Context, GetPromptResult, LoggingLevel, PromptMessage,
        ReadResourceResult, ResourceContents, ResourceError, Role, Server, prompt, resource, tool,
    };
    pub use sake_runtime::handler::CompletionRequest;
}
