//! A dual-era MCP client: it speaks 2026-07-28 to servers that list it in `server/discover`,
//! and falls back to the `initialize` handshake (2025-11-25, 2025-06-18, 2025-03-26) otherwise.
//!
//! ```no_run
//! # async fn demo() -> Result<(), sake::client::ClientError> {
//! use sake::client::Client;
//! use serde_json::json;
//!
//! let client = Client::connect("http://127.0.0.1:3000/mcp").await?;
//! println!("speaking {}", client.revision());
//! let sum: i64 = client.call("add", json!({"a": 2, "b": 3})).await?;
//! assert_eq!(sum, 5);
//! # Ok(()) }
//! ```
//!
//! `Client::spawn(command)` does the same with a server child process over stdio. What the
//! server may ask of the client (elicitation, sampling, roots) is answered by the handlers
//! registered on [`ClientBuilder`]; a capability is declared exactly when its handler is
//! registered. See `docs/client.md` for the rules of discovery, fallback and memory.

// One idea per module:
// - builder: `ClientBuilder`, the handlers and limits;
// - connect: discovery, the `initialize` handshake, renewal and close (the era rules are in
//   negotiate, the per-revision differences in the revision table, `protocol::version`);
// - request: one request on the wire (`_meta`, routing headers, the answer's meaning);
// - rounds: `input_required` rounds; calls: the typed calls; subscribe: notifications;
// - tasks: tool calls the server runs as tasks (the tasks extension), followed;
// - apps: a tool's view (MCP Apps), read for a host to render;
// - core, http, sse, stdio: the transports; params: `Mcp-Param-*` values; error: `ClientError`;
// - limits: what a server can make the client hold, do or wait for, and the reconnection
//   backoff;
// - auth: OAuth 2.1 (`sake::client::auth`), which the HTTP transport consults on 401 and 403.
mod apps;
pub mod auth;
mod builder;
mod calls;
mod connect;
mod core;
mod error;
#[cfg(test)]
mod fake;
mod http;
mod limits;
mod negotiate;
mod params;
mod request;
mod rounds;
mod skills;
mod sse;
mod stdio;
mod subscribe;
mod tasks;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use serde_json::Value;

pub use self::apps::AppView;
pub use self::builder::ClientBuilder;
pub use self::core::{Answerer, CallOptions, Notification, NotificationFn, ServerRequest};
pub use self::error::ClientError;
pub use self::negotiate::{EraCache, Remembered};
pub use self::skills::{LoadedSkill, is_directory};
pub use self::subscribe::{Notifications, Subscription};
pub use self::tasks::{TaskHandle, ToolCall};

use self::core::Core;
use self::http::Http;
use self::stdio::Stdio;
use crate::protocol::Revision;
use crate::protocol::headers::HeaderParam;
use crate::protocol::types::{Implementation, ServerCapabilities};

/// The way to the server.
enum Transport {
    Http(Arc<Http>),
    Stdio(Arc<Stdio>),
}

/// What negotiation settled.
#[derive(Clone, Debug)]
struct State {
    revision: Revision,
    capabilities: ServerCapabilities,
    server_info: Option<Implementation>,
    instructions: Option<String>,
}

impl Default for State {
    fn default() -> Self {
        State {
            revision: Revision::LATEST_STATELESS,
            capabilities: ServerCapabilities::default(),
            server_info: None,
            instructions: None,
        }
    }
}

/// What clones of a [`Client`] share.
struct Inner {
    core: Arc<Core>,
    transport: Transport,
    key: String,
    cache: EraCache,
    info: Implementation,
    capabilities: Value,
    state: RwLock<State>,
    /// The `x-mcp-header` parameters of each tool, from the last `tools/list` (2026-07-28).
    tool_headers: Mutex<HashMap<String, Vec<HeaderParam>>>,
    timeout: Option<Duration>,
    probe_timeout: Duration,
    max_rounds: usize,
    pin: Option<Revision>,
    reinit: tokio::sync::Mutex<()>,
    /// Declares the tasks extension on the requests that may lead to a task.
    tasks: bool,
    /// The longest a call waits for its task.
    task_timeout: Option<Duration>,
    /// The last progress token a tool call carried, when calls ask for progress.
    progress: Option<std::sync::atomic::AtomicU64>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Transport::Http(h) = &self.transport {
            // The GET stream's task holds the transport: stop it so both can go.
            h.stop_get_stream();
        }
    }
}

/// A connection to one MCP server. Cheap to clone; clones share the connection.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("server", &self.inner.key)
            .field("revision", &self.revision())
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A builder, to register handlers or set limits.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::new()
    }

    /// Connects to a Streamable HTTP endpoint with the default settings.
    pub async fn connect(url: &str) -> Result<Client, ClientError> {
        ClientBuilder::new().connect(url).await
    }

    /// Starts a server process and talks to it over stdio, with the default settings.
    pub async fn spawn(command: impl Into<tokio::process::Command>) -> Result<Client, ClientError> {
        ClientBuilder::new().spawn(command).await
    }

    /// The revision in use.
    pub fn revision(&self) -> Revision {
        self.state().revision
    }

    /// The server's name and version, when it gave them.
    pub fn server_info(&self) -> Option<Implementation> {
        self.state().server_info
    }

    /// What the server offers.
    pub fn server_capabilities(&self) -> ServerCapabilities {
        self.state().capabilities
    }

    /// The server's instructions, if any.
    pub fn instructions(&self) -> Option<String> {
        self.state().instructions
    }

    /// Whether the connection ended: a stdio server's process exited (its stdout closed),
    /// or the connection was closed.
    pub(crate) fn is_closed(&self) -> bool {
        self.inner.core.is_closed()
    }

    /// Resolves when the connection ends (at once if it has); holds nothing of the client.
    pub(crate) fn closed(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut ended = self.inner.core.subscribe(|_| false);
        async move { while ended.rx.recv().await.is_some() {} }
    }

    /// The legacy session id (HTTP, handshake revisions), if the server minted one.
    pub fn session_id(&self) -> Option<String> {
        match &self.inner.transport {
            Transport::Http(h) => h.session_id(),
            Transport::Stdio(_) => None,
        }
    }

    fn state(&self) -> State {
        self.inner
            .state
            .read()
            .map(|s| s.clone())
            .unwrap_or_default()
    }

    fn set_state(&self, state: State) {
        if let Ok(mut s) = self.inner.state.write() {
            *s = state;
        }
    }

    fn forget(&self) {
        self.inner.cache.forget(&self.inner.key);
    }
}
