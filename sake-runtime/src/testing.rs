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
use crate::handler::context::RequestParts;
use crate::protocol::Revision;
use crate::protocol::jsonrpc::RpcError;
use crate::protocol::meta::{Params, RawMeta, RequestMeta};
use crate::protocol::methods::Method;
use crate::protocol::types::{ClientCapabilities, LoggingLevel};
use crate::registry::Registry;
use crate::server::dispatch::Dispatched;
use crate::server::{Server, Service};

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
    pub async fn exchange(&self, method: &str, params: Value, progress: bool) -> Exchange {
        let raw = match serde_json::value::to_raw_value(&params) {
            Ok(r) => r,
            Err(e) => return failed(RpcError::invalid_params(e.to_string())),
        };
        let params = match Params::parse(Some(&raw)) {
            Ok(p) => p,
            Err(e) => return failed(e),
        };
        let shared = &self.service.shared;
        let Some(method) =
            Method::parse_in(method, self.revision.era()).filter(|m| shared.offers(m.needs()))
        else {
            return failed(RpcError::method_not_found(method));
        };
        let (tx, mut rx) = mpsc::channel::<Bytes>(1024);
        let token = progress.then(|| self.next_token.fetch_add(1, Ordering::Relaxed).into());
        let mut parts = RequestParts::new(
            self.revision,
            RequestMeta {
                client_capabilities: std::sync::Arc::new(self.capabilities.clone()),
                client_info: None,
                log_level: self.log_level,
                progress_token: token,
                raw: RawMeta::default(),
            },
        );
        parts.sink = Some(tx);
        let out = match shared.dispatch(parts, method, &params) {
            Dispatched::Ready(out) => out,
            Dispatched::Pending(fut) => fut.await,
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

fn failed(e: RpcError) -> Exchange {
    Exchange {
        notifications: Vec::new(),
        result: Err(e),
    }
}
