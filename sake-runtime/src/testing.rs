//! Helpers for users' own tests: the lists each revision shows, ready for snapshot tests, and
//! an in-memory client that calls tools, prompts and resources through the real dispatcher.
//!
//! ```standalone_crate
//! use sake::prelude::*;
//! use sake::testing::TestClient;
//!
//! /// Adds two numbers.
//! #[tool]
//! fn add(a: i64, b: i64) -> i64 {
//!     a + b
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let client = TestClient::new(Server::from_registry()).unwrap();
//! let result = client.call_tool("add", serde_json::json!({"a": 2, "b": 3})).await.unwrap();
//! assert_eq!(result["structuredContent"], 5);
//! # }
//! ```

use std::sync::atomic::{AtomicI64, Ordering};

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::error::Error;

#[cfg(feature = "compat")]
use crate::compat::{self, Profile, Report};
use crate::protocol::Revision;
use crate::protocol::jsonrpc::RpcError;
use crate::protocol::meta::{CLIENT_CAPABILITIES, LOG_LEVEL, PROTOCOL_VERSION};
use crate::protocol::types::{ClientCapabilities, LoggingLevel};
use crate::registry::Registry;
use crate::server::front::port::{Answer, Answering, Connection, Hints, Peer};
use crate::service::{Server, Service};

/// Every place where a schema breaks the normalisation rules sake's generated schemas keep
/// (2020-12 only, no `null` unions for `Option`, no boolean subschemas, …); empty when it
/// keeps them all. For snapshot tests of hand-written schemas.
pub use crate::schema::violations as schema_violations;

fn list(registry: &Registry, key: &str, rev: Revision) -> Value {
    Value::Array(match key {
        "tools" => registry.tools_for(rev),
        "prompts" => registry.prompts_for(rev),
        "resources" => registry.resources_for(rev),
        _ => registry.templates_for(rev),
    })
}

/// The tools `rev` lists, as JSON: one array, for `insta::assert_json_snapshot!`.
pub fn tools(rev: Revision) -> Result<Value, Error> {
    Ok(list(&Registry::collect()?, "tools", rev))
}

/// The prompts `rev` lists, as JSON.
pub fn prompts(rev: Revision) -> Result<Value, Error> {
    Ok(list(&Registry::collect()?, "prompts", rev))
}

/// The static resources `rev` lists, as JSON.
pub fn resources(rev: Revision) -> Result<Value, Error> {
    Ok(list(&Registry::collect()?, "resources", rev))
}

/// The resource templates `rev` lists, as JSON.
pub fn resource_templates(rev: Revision) -> Result<Value, Error> {
    Ok(list(&Registry::collect()?, "templates", rev))
}

/// The compatibility report of every tool of this binary for one client profile: each
/// finding names the tool, the JSON pointer into its schema, the rule and the fix (see
/// [`compat`]). It serializes for `insta::assert_json_snapshot!`
/// and displays for people.
///
/// ```standalone_crate
/// use sake::prelude::*;
/// use sake::compat::Profile;
///
/// /// Tags things.
/// #[tool]
/// fn tag(tags: Vec<String>, note: Option<String>) -> String {
///     format!("{tags:?} {note:?}")
/// }
///
/// let report = sake::testing::compatibility(Profile::OpenAiStrict).unwrap();
/// let rules: Vec<&str> = report.findings.iter().map(|f| f.rule).collect();
/// assert_eq!(rules, ["openai.additional-properties", "openai.required"]);
/// assert_eq!(report.findings[1].pointer, "/properties/note");
/// assert!(report.findings.iter().all(|f| f.fix.automatic));
/// ```
#[cfg(feature = "compat")]
#[cfg_attr(docsrs, doc(cfg(feature = "compat")))]
pub fn compatibility(profile: Profile) -> Result<Report, Error> {
    Ok(compat::check_registry(&Registry::collect()?, profile))
}

/// What a request produced: the notifications sent while it ran, then its result.
#[derive(Debug)]
pub struct Exchange {
    /// Notifications (progress, log messages), in order.
    pub notifications: Vec<Value>,
    /// The result object, or the JSON-RPC error.
    pub result: Result<Value, RpcError>,
}

/// An in-memory client: requests go through the server's connection, dispatcher and
/// rendering for one revision, without bytes on a wire.
///
/// A 2026-07-28 client sends each request with its `_meta`; an older revision's client opens
/// a handshake session of that revision on its first request (`initialize`, and
/// `logging/setLevel` when it asks for log messages). Its functions cannot ask it questions.
pub struct TestClient {
    service: Service,
    revision: Revision,
    capabilities: ClientCapabilities,
    log_level: Option<LoggingLevel>,
    next_id: AtomicI64,
    /// The connection, opened on the first request.
    connection: std::sync::OnceLock<Connection>,
}

impl std::fmt::Debug for TestClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestClient")
            .field("service", &self.service)
            .field("revision", &self.revision)
            .finish_non_exhaustive()
    }
}

impl TestClient {
    /// Builds the server and a client speaking 2026-07-28 with no client capabilities.
    pub fn new(server: Server) -> Result<Self, Error> {
        Ok(TestClient::for_service(&server.build()?))
    }

    /// A client of an already built server.
    pub fn for_service(service: &Service) -> Self {
        TestClient {
            service: service.clone(),
            revision: Revision::LATEST,
            capabilities: ClientCapabilities::default(),
            log_level: None,
            next_id: AtomicI64::new(1),
            connection: std::sync::OnceLock::new(),
        }
    }

    /// Speaks another revision: results are rendered as that revision's clients see them.
    pub fn revision(mut self, revision: Revision) -> Self {
        self.revision = revision;
        self
    }

    /// Declares client capabilities.
    pub fn capabilities(mut self, capabilities: ClientCapabilities) -> Self {
        self.capabilities = capabilities;
        self
    }

    /// Asks for log messages at or above `level`.
    pub fn log_level(mut self, level: LoggingLevel) -> Self {
        self.log_level = Some(level);
        self
    }

    /// Sends any request and returns its result object.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        self.exchange(method, params, false).await.result
    }

    /// The client's connection: opened on first use, with the handshake of an older
    /// revision's session.
    fn connection(&self) -> Result<&Connection, RpcError> {
        if let Some(c) = self.connection.get() {
            return Ok(c);
        }
        let (conn, _outbound) = self
            .service
            .engine()
            .open(Peer::in_memory().without_questions());
        if !self.revision.features().request_meta {
            let capabilities = serde_json::to_value(&self.capabilities)
                .map_err(|e| RpcError::internal(e.to_string()))?;
            let init = json!({
                "protocolVersion": self.revision.as_str(),
                "capabilities": capabilities,
                "clientInfo": {"name": "sake-testing", "version": env!("CARGO_PKG_VERSION")},
            });
            self.send(&conn, "initialize", init, None)?;
            if let Some(level) = self.log_level {
                self.send(&conn, "logging/setLevel", json!({ "level": level }), None)?;
            }
        }
        Ok(self.connection.get_or_init(|| conn))
    }

    /// Sends a request that is answered at once.
    fn send(
        &self,
        conn: &Connection,
        method: &str,
        params: Value,
        sink: Option<mpsc::Sender<Bytes>>,
    ) -> Result<Value, RpcError> {
        match conn
            .handle(
                self.message(method, params),
                Hints {
                    sink,
                    ..Hints::default()
                },
            )
            .answer
        {
            Answering::Now(Answer::One(_, out)) => out.map(|b| parse(&b)),
            _ => Err(RpcError::internal(format!(
                "`{method}` was not answered at once"
            ))),
        }
    }

    fn message(&self, method: &str, params: Value) -> Bytes {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        Bytes::from(message.to_string())
    }

    /// Sends a request with a progress token and collects what it streams.
    ///
    /// The request goes through the server's front as a transport's would: a 2026-07-28
    /// request as a stateless one (its `_meta` built from this client's revision,
    /// capabilities and log level), an older revision's inside this client's handshake
    /// session.
    pub async fn exchange(&self, method: &str, mut params: Value, progress: bool) -> Exchange {
        let conn = match self.connection() {
            Ok(c) => c,
            Err(e) => return failed(e),
        };
        let token = progress.then(|| self.next_id.fetch_add(1, Ordering::Relaxed));
        let Some(p) = params.as_object_mut() else {
            return failed(RpcError::invalid_params("params must be a JSON object"));
        };
        let meta = p.entry("_meta").or_insert_with(|| json!({}));
        if let Some(m) = meta.as_object_mut() {
            if let Some(t) = token {
                m.insert("progressToken".into(), json!(t));
            }
            if self.revision.features().request_meta {
                m.insert(PROTOCOL_VERSION.into(), json!(self.revision.as_str()));
                m.insert(
                    CLIENT_CAPABILITIES.into(),
                    serde_json::to_value(&self.capabilities).unwrap_or_else(|_| json!({})),
                );
                if let Some(level) = self.log_level {
                    m.insert(LOG_LEVEL.into(), json!(level));
                }
            }
        }
        let (tx, mut rx) = mpsc::channel::<Bytes>(1024);
        let hints = Hints {
            sink: Some(tx),
            ..Hints::default()
        };
        let answer = match conn.handle(self.message(method, params), hints).answer {
            Answering::Now(answer) => Some(answer),
            Answering::Later(run, _) => run.await,
            Answering::Accepted | Answering::Stream(_) => {
                return failed(RpcError::internal(
                    "TestClient does not hold subscriptions/listen streams",
                ));
            }
        };
        let result = match answer {
            Some(Answer::One(_, out)) => out.map(|b| parse(&b)),
            Some(Answer::Batch(_)) => Err(RpcError::internal("a batch answered one request")),
            None => Err(RpcError::internal("the request was cancelled")),
        };
        let mut notifications = Vec::new();
        while let Ok(msg) = rx.try_recv() {
            if let Ok(v) = serde_json::from_slice(&msg) {
                notifications.push(v);
            }
        }
        Exchange {
            notifications,
            result,
        }
    }

    /// Calls a tool.
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<Value, RpcError> {
        self.request(
            "tools/call",
            json!({ "name": name, "arguments": arguments }),
        )
        .await
    }

    /// Gets a prompt.
    pub async fn get_prompt(&self, name: &str, arguments: Value) -> Result<Value, RpcError> {
        self.request(
            "prompts/get",
            json!({ "name": name, "arguments": arguments }),
        )
        .await
    }

    /// Reads a resource.
    pub async fn read_resource(&self, uri: &str) -> Result<Value, RpcError> {
        self.request("resources/read", json!({ "uri": uri })).await
    }

    /// Lists the tools (first page).
    pub async fn list_tools(&self) -> Result<Value, RpcError> {
        self.request("tools/list", json!({})).await
    }
}

/// A rendered result object as JSON.
fn parse(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).unwrap_or(Value::Null)
}

fn failed(e: RpcError) -> Exchange {
    Exchange {
        notifications: Vec::new(),
        result: Err(e),
    }
}
