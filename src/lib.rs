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

#![cfg_attr(docsrs, feature(doc_cfg))]

pub use sake_macros::{prompt, resource, skills, tool, view};

#[cfg(feature = "auth")]
#[cfg_attr(docsrs, doc(cfg(feature = "auth")))]
pub use sake_runtime::auth;
pub use sake_runtime::card;
#[cfg(feature = "client")]
#[cfg_attr(docsrs, doc(cfg(feature = "client")))]
pub use sake_runtime::client;
#[cfg(feature = "compat")]
#[cfg_attr(docsrs, doc(cfg(feature = "compat")))]
pub use sake_runtime::compat;
#[cfg(feature = "otel")]
#[cfg_attr(docsrs, doc(cfg(feature = "otel")))]
pub use sake_runtime::otel;
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub use sake_runtime::redis;
pub use sake_runtime::{apps, bus, compose, middleware, registry, tasks, testing, transport};

/// Skills: Agent Skills served over MCP (the skills extension). The macro [`skills!`] embeds a
/// directory of them; [`skills::SkillDef`] defines one in code.
pub mod skills {
    pub use sake_runtime::skills::*;
}

pub use sake_runtime::{
    Annotations, BlobResourceContents, CacheScope, CallToolResult, ClientCapabilities, Completion,
    CompletionReference, CompletionRequest, Content, Context, Cors, CreateMessageRequest,
    CreateMessageResult, DiscoverResult, ElicitAction, ElicitRequest, ElicitResult, Elicitation,
    ElicitationCapability, ElicitationModes, EmbeddedResource, Era, Error, Features,
    GetPromptResult, Icon, Implementation, InitializeResult, InputError, JsonObject,
    ListChangedCapability, ListRootsResult, LoggingLevel, MediaContent, NotASegment, Notifier,
    PathSegment, ProgressToken, Prompt, PromptArgument, PromptMessage, ReadResourceResult,
    Registry, RequestId, Resource, ResourceContents, ResourceError, ResourceLink, ResourceTemplate,
    ResourcesCapability, Revision, Role, Root, RootsCapability, RpcError, SamplingCapability,
    SamplingMessage, Server, ServerCapabilities, Service, State, TextContent, TextResourceContents,
    Tool, ToolAnnotations,
};

/// What generated code uses. Not a public API: it changes without notice.
#[doc(hidden)]
pub use sake_runtime::__private;

/// The common imports: the macros, the server, [`Context`] and what a function asks and
/// returns, with what builds its results and messages (content blocks, their annotations,
/// resource links, `_meta` objects).
pub mod prelude {
    pub use crate::{
        Annotations, CallToolResult, Completion, CompletionRequest, Content, Context,
        CreateMessageRequest, CreateMessageResult, ElicitAction, ElicitResult, Elicitation,
        GetPromptResult, InputError, JsonObject, LoggingLevel, Notifier, PromptMessage,
        ReadResourceResult, ResourceContents, ResourceError, ResourceLink, Revision, Role, Root,
        SamplingMessage, Server, Service, State, prompt, resource, tool, view,
    };
}
