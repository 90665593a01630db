//! The calls: tools, prompts, resources and completions, typed; any request or notification,
//! raw.

use std::collections::{HashMap, HashSet};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::{Client, ClientError, Transport};
use crate::protocol::jsonrpc::{code, notification_bytes};
use crate::protocol::types::{
    CallToolResult, Completion, CompletionReference, GetPromptResult, JsonObject, Prompt,
    ReadResourceResult, Resource, ResourceTemplate, Tool,
};
use crate::registry::header_params;

/// The most pages one list call reads.
const MAX_PAGES: usize = 10_000;

impl Client {
    /// Sends any request and returns its raw result (no `input_required` rounds).
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, ClientError> {
        let raw = self.send(method, Self::object(method, params)?).await?;
        Self::decode(method, &raw)
    }

    /// Sends a notification.
    pub async fn notify(&self, method: &str, params: Value) -> Result<(), ClientError> {
        let params = self.with_meta(Self::object(method, params)?, self.revision());
        let body = notification_bytes(method, &params);
        match &self.inner.transport {
            Transport::Http(h) => h.post_message(body).await.map(|_| ()),
            Transport::Stdio(s) => s.write(body).await,
        }
    }

    async fn list_all(&self, method: &str, key: &str) -> Result<Vec<Value>, ClientError> {
        let mut out = Vec::new();
        let mut cursor: Option<String> = None;
        let mut seen = HashSet::new();
        for _ in 0..MAX_PAGES {
            let mut params = Map::new();
            if let Some(c) = &cursor {
                params.insert("cursor".into(), json!(c));
            }
            let raw = self.send(method, params).await?;
            let mut page: JsonObject = Self::decode(method, &raw)?;
            match page.remove(key) {
                Some(Value::Array(items)) => out.extend(items),
                _ => {
                    return Err(ClientError::Protocol(format!(
                        "the result of {method} has no `{key}` array"
                    )));
                }
            }
            match page.remove("nextCursor") {
                Some(Value::String(next)) if seen.insert(next.clone()) => cursor = Some(next),
                _ => return Ok(out),
            }
        }
        Ok(out)
    }

    /// Every tool, all pages. Over HTTP on 2026-07-28, a tool whose `x-mcp-header`
    /// annotations are invalid is left out (it cannot be called correctly).
    pub async fn list_tools(&self) -> Result<Vec<Tool>, ClientError> {
        let modern_http = self.revision().features().routing_headers
            && matches!(self.inner.transport, Transport::Http(_));
        let mut tools = Vec::new();
        let mut headers = HashMap::new();
        for item in self.list_all("tools/list", "tools").await? {
            let tool: Tool = serde_json::from_value(item).map_err(|error| ClientError::Decode {
                method: "tools/list".into(),
                error,
            })?;
            if modern_http {
                match header_params(&tool.input_schema) {
                    Ok(h) => {
                        headers.insert(tool.name.clone(), h);
                    }
                    Err(why) => {
                        tracing::warn!(tool = %tool.name, "leaving out a tool with an invalid x-mcp-header: {why}");
                        continue;
                    }
                }
            }
            tools.push(tool);
        }
        if modern_http && let Ok(mut t) = self.inner.tool_headers.lock() {
            *t = headers;
        }
        Ok(tools)
    }

    /// Every prompt, all pages.
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>, ClientError> {
        self.list_typed("prompts/list", "prompts").await
    }

    /// Every static resource, all pages.
    pub async fn list_resources(&self) -> Result<Vec<Resource>, ClientError> {
        self.list_typed("resources/list", "resources").await
    }

    /// Every resource template, all pages.
    pub async fn list_resource_templates(&self) -> Result<Vec<ResourceTemplate>, ClientError> {
        self.list_typed("resources/templates/list", "resourceTemplates")
            .await
    }

    async fn list_typed<T: DeserializeOwned>(
        &self,
        method: &str,
        key: &str,
    ) -> Result<Vec<T>, ClientError> {
        self.list_all(method, key)
            .await?
            .into_iter()
            .map(|v| {
                serde_json::from_value(v).map_err(|error| ClientError::Decode {
                    method: method.to_owned(),
                    error,
                })
            })
            .collect()
    }

    /// Calls a tool and returns its result as sent (a failed tool is `is_error()`, not `Err`).
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: impl Serialize,
    ) -> Result<CallToolResult, ClientError> {
        let arguments = serde_json::to_value(arguments).map_err(|error| ClientError::Decode {
            method: "tools/call".into(),
            error,
        })?;
        let mut params = Map::new();
        params.insert("name".into(), json!(name));
        if !arguments.is_null() {
            params.insert("arguments".into(), arguments);
        }
        let raw = match self.send_rounds("tools/call", params.clone()).await {
            Err(ClientError::Rpc { error, .. })
                if error.code == code::HEADER_MISMATCH
                    && self.revision().features().routing_headers
                    && matches!(self.inner.transport, Transport::Http(_))
                    && !self
                        .inner
                        .tool_headers
                        .lock()
                        .is_ok_and(|t| t.contains_key(name)) =>
            {
                // The tool's Mcp-Param headers were unknown: learn them and try once more.
                tracing::debug!(
                    tool = name,
                    "header mismatch on an unlisted tool: listing tools"
                );
                self.list_tools().await?;
                self.send_rounds("tools/call", params).await?
            }
            other => other?,
        };
        Self::decode("tools/call", &raw)
    }

    /// Calls a tool and decodes its output: the structured content when there is one, else the
    /// text (as JSON when it parses, else as a string). A failed tool is
    /// [`ClientError::Tool`].
    pub async fn call<Out: DeserializeOwned>(
        &self,
        name: &str,
        arguments: impl Serialize,
    ) -> Result<Out, ClientError> {
        let result = self.call_tool(name, arguments).await?;
        if result.is_error() {
            return Err(ClientError::Tool {
                name: name.to_owned(),
                result: Box::new(result),
            });
        }
        let decode_err = |error| ClientError::Decode {
            method: "tools/call".into(),
            error,
        };
        if let Some(raw) = &result.structured_content {
            return serde_json::from_str(raw.get()).map_err(decode_err);
        }
        let text: Vec<&str> = result.content.iter().filter_map(|c| c.as_text()).collect();
        match text.as_slice() {
            [] => serde_json::from_value(Value::Null).map_err(decode_err),
            [one] => serde_json::from_str(one)
                .or_else(|_| serde_json::from_value(Value::String((*one).to_owned())))
                .map_err(decode_err),
            many => serde_json::from_value(Value::String(many.join("\n"))).map_err(decode_err),
        }
    }

    /// Reads a resource.
    pub async fn read(&self, uri: &str) -> Result<ReadResourceResult, ClientError> {
        let mut params = Map::new();
        params.insert("uri".into(), json!(uri));
        let raw = self.send_rounds("resources/read", params).await?;
        Self::decode("resources/read", &raw)
    }

    /// Gets a prompt with its arguments (an object of strings).
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: impl Serialize,
    ) -> Result<GetPromptResult, ClientError> {
        let arguments = serde_json::to_value(arguments).map_err(|error| ClientError::Decode {
            method: "prompts/get".into(),
            error,
        })?;
        let mut params = Map::new();
        params.insert("name".into(), json!(name));
        if !arguments.is_null() {
            params.insert("arguments".into(), arguments);
        }
        let raw = self.send_rounds("prompts/get", params).await?;
        Self::decode("prompts/get", &raw)
    }

    /// Asks for completions of an argument of a prompt or a resource template.
    pub async fn complete(
        &self,
        reference: CompletionReference,
        argument: &str,
        value: &str,
    ) -> Result<Completion, ClientError> {
        let mut params = Map::new();
        params.insert("ref".into(), json!(reference));
        params.insert("argument".into(), json!({"name": argument, "value": value}));
        let raw = self.send("completion/complete", params).await?;
        #[derive(serde::Deserialize)]
        struct Out {
            completion: Completion,
        }
        Ok(Self::decode::<Out>("completion/complete", &raw)?.completion)
    }
}
