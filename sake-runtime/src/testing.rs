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

use crate::compat::{self, Profile, Report};
use crate::protocol::jsonrpc::{RequestId, RpcError};
use crate::protocol::meta::{Params, RawMeta, RequestMeta};
use crate::protocol::types::{ClientCapabilities, LoggingLevel};
use crate::protocol::{Era, Revision};
use crate::registry::Registry;
use crate::server::front::Inbound;
use crate::server::front::legacy::Started;
use crate::server::front::modern::Answer;
use crate::server::session::Session;
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

/// An in-memory client: requests go through the real dispatcher and rendering for one
/// revision, without HTTP.
#[derive(Debug)]
pub struct TestClient {
    service: Service,
    revision: Revision,
    capabilities: ClientCapabilities,
    log_level: Option<LoggingLevel>,
    next_token: AtomicI64,
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
            next_token: AtomicI64::new(1),
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

    /// Sends a request with a progress token and collects what it streams.
    ///
    /// The request goes through the server's front as a transport's would: a 2026-07-28
    /// request as a stateless one, an older revision's inside a handshake session of that
    /// revision (opened for this client; its functions cannot ask the client questions).
    pub async fn exchange(&self, method: &str, mut params: Value, progress: bool) -> Exchange {
        let token: Option<RequestId> =
            progress.then(|| self.next_token.fetch_add(1, Ordering::Relaxed).into());
        let legacy = self.revision.era() == Era::Legacy;
        if let (Some(t), true, Some(p)) = (&token, legacy, params.as_object_mut()) {
            // On a handshake revision the progress token travels in the request's `_meta`.
            let meta = p.entry("_meta").or_insert_with(|| json!({}));
            if let Some(m) = meta.as_object_mut() {
                m.insert("progressToken".into(), json!(t));
            }
        }
        let raw = match serde_json::value::to_raw_value(&params) {
            Ok(r) => r,
            Err(e) => return failed(RpcError::invalid_params(e.to_string())),
        };
        let params = match Params::parse(Some(&raw)) {
            Ok(p) => p,
            Err(e) => return failed(e),
        };
        let shared = &self.service.shared;
        let (tx, mut rx) = mpsc::channel::<Bytes>(1024);
        let id = RequestId::Number(0);
        let inbound = Inbound {
            sink: Some(tx),
            no_questions: true,
            ..Inbound::default()
        };
        let out: Result<Bytes, RpcError> = if !legacy {
            let method = match shared.resolve(Era::Modern, method) {
                Ok(m) => m,
                Err(e) => return failed(e),
            };
            let meta = RequestMeta {
                client_capabilities: std::sync::Arc::new(self.capabilities.clone()),
                client_info: None,
                log_level: self.log_level,
                progress_token: token,
                raw: RawMeta::default(),
            };
            match shared.serve_stateless(self.revision, &id, method, &params, meta, inbound) {
                Answer::Ready(out) => out,
                Answer::Running(fut) => fut.await,
                Answer::Listen(_) => Err(RpcError::internal(
                    "TestClient does not hold subscriptions/listen streams",
                )),
            }
        } else {
            let session = match self.session() {
                Ok(s) => s,
                Err(e) => return failed(e),
            };
            let params = Ok(params);
            let answer =
                match shared.session_request(&session, &session.sid, id, method, params, inbound) {
                    Started::Done(body, _) => Some(body),
                    Started::Running(fut) => fut.await,
                };
            match answer.map(|b| serde_json::from_slice::<Value>(&b)) {
                Some(Ok(mut v)) => match v.get_mut("result").map(Value::take) {
                    Some(result) => Ok(Bytes::from(result.to_string())),
                    None => Err(response_error(v["error"].take())),
                },
                _ => Err(RpcError::internal("the request was cancelled")),
            }
        };
        let mut notifications = Vec::new();
        while let Ok(msg) = rx.try_recv() {
            if let Ok(v) = serde_json::from_slice(&msg) {
                notifications.push(v);
            }
        }
        Exchange {
            notifications,
            result: out.map(|b| serde_json::from_slice(&b).unwrap_or(Value::Null)),
        }
    }

    /// The handshake session of an older revision's client: its capabilities and log level.
    fn session(&self) -> Result<Session, RpcError> {
        let mut session = Session::new(self.revision, self.capabilities.clone(), None)
            .ok_or_else(|| RpcError::internal("no randomness available for a session id"))?;
        session.log_level = self.log_level;
        Ok(session)
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

/// The error object of a JSON-RPC response.
fn response_error(error: Value) -> RpcError {
    let code = error["code"]
        .as_i64()
        .and_then(|c| i32::try_from(c).ok())
        .unwrap_or(crate::protocol::jsonrpc::code::INTERNAL_ERROR);
    let message = error["message"].as_str().unwrap_or_default().to_owned();
    match error.get("data") {
        Some(data) => RpcError::new(code, message).with_data(data.clone()),
        None => RpcError::new(code, message),
    }
}

fn failed(e: RpcError) -> Exchange {
    Exchange {
        notifications: Vec::new(),
        result: Err(e),
    }
}
