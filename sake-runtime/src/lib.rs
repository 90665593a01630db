//! The runtime of [sake](https://docs.rs/sake-mcp): registry, schemas, protocol, dispatch and
//! transports. Depend on the `sake` crate, which re-exports this one with the macros.
//!
//! The public API is what this page lists; everything else is internal. The map of the
//! internals is docs/architecture.md.

#![warn(missing_docs)]
// docs.rs (`--cfg docsrs`, nightly): label each item with the feature it needs. `internals` is
// not an API; it only switches which modules are public, so it is never a label.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![cfg_attr(docsrs, doc(auto_cfg(hide(feature = "internals"))))]

#[cfg(feature = "auth")]
#[cfg_attr(docsrs, doc(cfg(feature = "auth")))]
pub mod auth;
pub mod card;
#[cfg(feature = "client")]
#[cfg_attr(docsrs, doc(cfg(feature = "client")))]
pub mod client;
#[cfg(feature = "compat")]
#[cfg_attr(docsrs, doc(cfg(feature = "compat")))]
pub mod compat;
pub mod compose;

/// MCP Apps (`io.modelcontextprotocol/ui`, SEP-1865): interactive views a host renders next to
/// a tool's result, declared with `#[view]` and linked with `#[tool(ui = …)]` (see
/// docs/apps.md); the wire types a client reads them with ([`ToolUi`](apps::ToolUi),
/// [`ViewMeta`](apps::ViewMeta)) and the policy a host applies to them.
pub mod apps {
    pub use crate::handler::apps::{
        CspDef, HtmlFn, IntoHtml, ToolUiDef, View, ViewDef, ViewFn, ViewHtml,
    };
    pub use crate::protocol::apps::{
        Csp, EXTENSION, MIME_TYPE, Permissions, RESOURCE_URI_META_KEY, ToolUi, UI_PROTOCOL_VERSION,
        ViewMeta, Visibility, client_settings, declared,
    };

    /// Client capabilities that declare MCP Apps (for [`TestClient`](crate::testing::TestClient)
    /// and hand-written clients): `extensions["io.modelcontextprotocol/ui"].mimeTypes` holds
    /// `text/html;profile=mcp-app`.
    pub fn client_capabilities() -> crate::ClientCapabilities {
        let mut extensions = crate::JsonObject::new();
        extensions.insert(EXTENSION.into(), client_settings());
        crate::ClientCapabilities::default().with_extensions(extensions)
    }
}

/// Sharing what the server pushes among its replicas: the [`EventBus`](bus::EventBus) trait,
/// the in-process default, and the messages replicas exchange (see docs/deploying.md). The
/// Redis bus is [`redis::RedisBus`](crate::redis) (feature `redis`).
pub mod bus {
    pub use crate::handler::events::{BusMessage, Event, EventBus, Inbox, LocalBus, ReplicaKey};
}
mod error;
pub(crate) mod handler;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod internals;
mod limits;
pub mod middleware;
#[cfg(any(feature = "auth", feature = "client"))]
mod net;
#[cfg(feature = "otel")]
#[cfg_attr(docsrs, doc(cfg(feature = "otel")))]
pub mod otel;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod protocol;
#[cfg(not(feature = "internals"))]
pub(crate) mod protocol;
pub(crate) mod quota;
pub(crate) mod records;
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub mod redis;
pub mod registry;
pub(crate) mod schema;
pub(crate) mod server;
mod service;
mod signing;
pub mod skills;
pub mod tasks;
pub mod testing;
pub mod transport;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod uri_template;
#[cfg(not(feature = "internals"))]
pub(crate) mod uri_template;

pub use error::Error;
pub use handler::context::Context;
pub use handler::events::Notifier;
pub use handler::input::{Elicitation, InputError};
pub use handler::segment::{NotASegment, PathSegment};
pub use handler::state::State;
pub use handler::{CompletionRequest, ResourceError};
pub use limits::Limits;
pub use protocol::jsonrpc::{RequestId, RpcError};
pub use protocol::meta::ProgressToken;
pub use protocol::render::CacheScope;
pub use protocol::types::{
    Annotations, BlobResourceContents, CallToolResult, ClientCapabilities, Completion,
    CompletionReference, Content, CreateMessageRequest, CreateMessageResult, DiscoverResult,
    ElicitAction, ElicitRequest, ElicitResult, ElicitationCapability, EmbeddedResource,
    GetPromptResult, Icon, Implementation, InitializeResult, JsonObject, ListChangedCapability,
    ListRootsResult, LoggingLevel, MediaContent, Prompt, PromptArgument, PromptMessage,
    ReadResourceResult, Resource, ResourceContents, ResourceLink, ResourceTemplate,
    ResourcesCapability, Role, Root, RootsCapability, SamplingCapability, SamplingMessage,
    ServerCapabilities, TextContent, TextResourceContents, Tool, ToolAnnotations,
};
pub use protocol::version::{ElicitationModes, Era, Features, Revision};
pub use registry::Registry;
pub use service::{Server, Service};
pub use transport::http::cors::{Cors, CorsService};

/// What generated code uses. Not a public API: it changes without notice.
#[doc(hidden)]
pub mod __private {
    pub use crate::middleware::{LayerFn, ToolLayer};
    pub use inventory;
    pub use schemars;
    pub use serde;
    pub use serde_json;
    pub use serde_json::value::RawValue;

    pub use crate::handler::*;
    pub use crate::protocol::apps::Visibility;
    pub use crate::schema::{input_schema, output_schema};
}
