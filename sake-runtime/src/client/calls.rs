//! The calls: tools, prompts, resources and completions, typed; any request or notification,
//! raw.

use std::collections::{HashMap, HashSet};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::{Client, ClientError, Transport, core};
use crate::protocol::headers::header_params;
use crate::protocol::jsonrpc::{code, notification_bytes};
use crate::protocol::types::{
    CallToolResult, Completion, CompletionReference, GetPromptResult, JsonObject, Prompt,
    ReadResourceResult, Resource, ResourceTemplate, Tool,
};

impl Client {
    /// Sends any request and returns its raw result (no `input_required` rounds).
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, ClientError> {
        let raw = self.send(method, Self::object(method, params)?).await?;
        Self::decode(method, &raw)
    }

    /// Sends any request with its `input_required` rounds, and returns its raw result, with
    /// options of its own: what the server asks while it serves this request — elicitation,
    /// sampling, roots, in a round (2026-07-28) or with a request on the call's stream
    /// (handshake revisions) — is answered by the options' answerer instead of the builder's
    /// handlers, and the notifications it sends about it (progress, log messages) go to the
    /// options' listener too. Over stdio, which does not say which request a message is
    /// about, a message on no request's stream goes to the options of the one request in
    /// flight that has some, when there is one. A gateway relays each call's questions and
    /// notifications to the client that made it this way.
    ///
    /// The capabilities the client declares are the builder's (on 2026-07-28 a `_meta` of
    /// `params` may declare others for this request): register the handlers whose questions
    /// the answerer may get.
    pub async fn request_with(
        &self,
        method: &str,
        params: Value,
        options: super::CallOptions,
    ) -> Result<Value, ClientError> {
        let params = Self::object(method, params)?;
        let raw = core::CALL
            .scope(options, self.send_rounds(method, params))
            .await?;
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

    /// Every item of a paginated list, following `nextCursor`: at most `max_pages` pages and
    /// `max_body_bytes` of pages together; a cursor given twice is an error (the pagination
    /// loops).
    pub(super) async fn list_all(
        &self,
        method: &str,
        key: &str,
    ) -> Result<Vec<Value>, ClientError> {
        let limits = self.inner.core.limits;
        let mut out = Vec::new();
        let mut cursor: Option<String> = None;
        let mut seen = HashSet::new();
        let mut bytes = 0usize;
        for _ in 0..limits.max_pages {
            let mut params = Map::new();
            if let Some(c) = &cursor {
                params.insert("cursor".into(), json!(c));
            }
            let raw = self.send(method, params).await?;
            bytes = bytes.saturating_add(raw.get().len());
            if bytes > limits.max_body {
                return Err(ClientError::BodyTooLarge {
                    what: format!("{method} (its pages together)"),
                    limit: limits.max_body,
                });
            }
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
                Some(Value::String(next)) => {
                    if !seen.insert(next.clone()) {
                        return Err(ClientError::Protocol(format!(
                            "{method} gave the cursor {:?} a second time: its pagination loops",
                            core::clip(&next)
                        )));
                    }
                    cursor = Some(next);
                }
                _ => return Ok(out),
            }
        }
        Err(ClientError::TooManyPages {
            method: method.to_owned(),
            limit: limits.max_pages,
        })
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
    ///
    /// A call the server runs as a task (the tasks extension) is followed to its end: polled
    /// at the server's interval, its questions answered by the registered handlers, and
    /// cancelled if this future is dropped or [`task_timeout`](super::ClientBuilder::task_timeout)
    /// runs out. A task that fails is [`ClientError::Rpc`], as a call answered with an error.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: impl Serialize,
    ) -> Result<CallToolResult, ClientError> {
        match self.start_tool(name, arguments).await? {
            super::ToolCall::Done(result) => Ok(result),
            super::ToolCall::Task(task) => self.follow_task(task).await,
        }
    }

    /// `tools/call` with its `input_required` rounds: the raw result or task.
    pub(super) async fn call_tool_raw(
        &self,
        name: &str,
        arguments: impl Serialize,
    ) -> Result<Box<serde_json::value::RawValue>, ClientError> {
        let arguments = serde_json::to_value(arguments).map_err(|error| ClientError::Decode {
            method: "tools/call".into(),
            error,
        })?;
        let mut params = Map::new();
        params.insert("name".into(), json!(name));
        if !arguments.is_null() {
            params.insert("arguments".into(), arguments);
        }
        // The same token on every round of the call (`ClientBuilder::progress`).
        if let Some(last) = &self.inner.progress {
            let token = last.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            params.insert("_meta".into(), json!({ "progressToken": token }));
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
        Ok(raw)
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::client::fake::{Reply, Seen, builder, call_meta, fake, legacy, meta, modern};

    fn tools() -> Value {
        json!({"tools": [
            {"name": "good", "inputSchema": {"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"}}}},
            {"name": "bad", "inputSchema": {"type": "object", "properties": {
                "v": {"type": "string", "x-mcp-header": "My Region"}}}}
        ]})
    }

    fn text(s: &Seen, texts: &[&str], is_error: bool) -> Reply {
        let content: Vec<Value> = texts
            .iter()
            .map(|t| json!({"type": "text", "text": t}))
            .collect();
        Reply::result(s, json!({"content": content, "isError": is_error}))
    }

    #[tokio::test]
    async fn lists_follow_cursors_and_a_cursor_given_twice_is_an_error() {
        let f = fake(modern(|s| {
            let (items, next) = match (s.method(), s.params()["cursor"].as_str()) {
                ("prompts/list", None) => (json!([{"name": "a"}]), json!("c1")),
                ("prompts/list", Some("c1")) => (json!([{"name": "b"}]), json!("c2")),
                ("prompts/list", _) => (json!([{"name": "c"}]), Value::Null),
                // The resources loop back to a cursor already followed.
                (_, Some("r1")) => (json!([]), json!("r2")),
                _ => (json!([]), json!("r1")),
            };
            let mut result = json!({"prompts": items, "resources": items});
            if !next.is_null() {
                result["nextCursor"] = next;
            }
            Reply::result(s, result)
        }))
        .await;
        let client = builder().connect(&f.url).await.unwrap();
        let names: Vec<String> = client
            .list_prompts()
            .await
            .unwrap()
            .into_iter()
            .map(|p| p.name)
            .collect();
        assert_eq!(names, ["a", "b", "c"]);
        let pages: Vec<Value> = f.posts()[1..].iter().map(Seen::params).collect();
        assert_eq!(
            pages,
            [
                json!({"_meta": meta()}),
                json!({"cursor": "c1", "_meta": meta()}),
                json!({"cursor": "c2", "_meta": meta()}),
            ]
        );
        let err = client.list_resources().await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "protocol error: resources/list gave the cursor \"r1\" a second time: its pagination loops"
        );
        // Pages: the first, r1, r2; r2 names r1 again.
        assert_eq!(f.methods().len(), 1 + 3 + 3);
    }

    #[tokio::test]
    async fn tool_calls_ask_for_progress_with_a_token_each_when_told_to() {
        let f = fake(modern(|s| {
            Reply::result(s, json!({"resultType": "complete", "content": []}))
        }))
        .await;
        let tokens = |f: &crate::client::fake::Fake| -> Vec<Value> {
            f.posts()
                .iter()
                .filter(|s| s.method() == "tools/call")
                .map(|s| s.params()["_meta"]["progressToken"].clone())
                .collect()
        };
        let plain = builder().connect(&f.url).await.unwrap();
        plain.call_tool("a", json!({})).await.unwrap();
        assert_eq!(tokens(&f), [Value::Null]);
        let asking = builder().progress(true).connect(&f.url).await.unwrap();
        asking.call_tool("a", json!({})).await.unwrap();
        asking.call_tool("b", json!({"x": 1})).await.unwrap();
        assert_eq!(tokens(&f), [Value::Null, json!(1), json!(2)]);
        let last = f.last("tools/call").params();
        assert_eq!(last["name"], "b");
        assert_eq!(last["arguments"], json!({"x": 1}));
    }

    #[tokio::test]
    async fn lists_stop_at_the_page_limit() {
        // Every page names a new cursor: an endless list.
        let f = fake(modern(|s| {
            let n = s.params()["cursor"]
                .as_str()
                .and_then(|c| c.parse::<u64>().ok())
                .unwrap_or(0);
            Reply::result(
                s,
                json!({"tools": [{"name": format!("t{n}"), "inputSchema": {"type": "object"}}],
                    "nextCursor": (n + 1).to_string()}),
            )
        }))
        .await;
        let client = builder().connect(&f.url).await.unwrap();
        let err = client.list_tools().await.unwrap_err();
        assert!(
            matches!(&err, ClientError::TooManyPages { method, limit: 100 } if method == "tools/list"),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            "tools/list has more than 100 pages, the client's limit; raise it with ClientBuilder::max_pages"
        );
        // Exactly the limit was asked for, not one page more.
        assert_eq!(f.methods().len(), 1 + 100);
        let client = builder().max_pages(3).connect(&f.url).await.unwrap();
        let err = client.list_tools().await.unwrap_err();
        assert!(
            matches!(&err, ClientError::TooManyPages { limit: 3, .. }),
            "{err:?}"
        );
        assert_eq!(f.methods().len(), 1 + 100 + 1 + 3);
    }

    #[tokio::test]
    async fn the_pages_of_one_list_count_together_against_the_body_limit() {
        // Pages of about 1 KiB, all of the same size; the list never ends.
        fn page(n: u64) -> Value {
            let items: Vec<Value> = (0..10)
                .map(|i| json!({"name": format!("p{n}-{i}"), "description": "x".repeat(90)}))
                .collect();
            json!({"prompts": items, "nextCursor": (n + 1).to_string()})
        }
        let f = fake(modern(|s| {
            let n = s.params()["cursor"]
                .as_str()
                .and_then(|c| c.parse::<u64>().ok())
                .unwrap_or(0);
            Reply::result(s, page(n))
        }))
        .await;
        let client = builder()
            .max_body_bytes(10_000)
            .connect(&f.url)
            .await
            .unwrap();
        let err = client.list_prompts().await.unwrap_err();
        assert!(
            matches!(&err, ClientError::BodyTooLarge { limit: 10_000, .. }),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            "prompts/list (its pages together) is larger than 10000 bytes, the client's limit; raise it with ClientBuilder::max_body_bytes"
        );
        // The page that passes 10 000 bytes is the last asked for.
        let size = page(0).to_string().len();
        assert!(size > 1000 && size < 2000, "{size}");
        assert_eq!(f.methods().len(), 1 + 10_000 / size + 1);
    }

    #[tokio::test]
    async fn a_page_without_its_array_is_a_protocol_error() {
        let f = fake(legacy(None, |s| Reply::result(s, json!({"resources": {}})))).await;
        let client = builder().connect(&f.url).await.unwrap();
        let err = client.list_resources().await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "protocol error: the result of resources/list has no `resources` array"
        );
        let err = client.list_resource_templates().await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "protocol error: the result of resources/templates/list has no `resourceTemplates` array"
        );
    }

    #[tokio::test]
    async fn on_2026_http_tools_with_invalid_annotations_are_left_out_and_params_become_headers() {
        let f = fake(modern(|s| match s.method() {
            "tools/list" => Reply::result(s, tools()),
            _ => text(s, &["ok"], false),
        }))
        .await;
        let client = builder().connect(&f.url).await.unwrap();
        let names: Vec<String> = client
            .list_tools()
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.name)
            .collect();
        assert_eq!(names, ["good"]);
        client
            .call_tool("good", json!({"region": "us west 1"}))
            .await
            .unwrap();
        let call = f.last("tools/call");
        assert_eq!(call.header("mcp-param-region"), Some("us west 1"));
        assert_eq!(call.header("mcp-name"), Some("good"));
        assert_eq!(
            call.params(),
            json!({"name": "good", "arguments": {"region": "us west 1"}, "_meta": call_meta()})
        );
    }

    #[tokio::test]
    async fn on_a_handshake_revision_annotations_mean_nothing() {
        let f = fake(legacy(None, |s| match s.method() {
            "tools/list" => Reply::result(s, tools()),
            _ => text(s, &["ok"], false),
        }))
        .await;
        let client = builder().connect(&f.url).await.unwrap();
        assert_eq!(client.list_tools().await.unwrap().len(), 2);
        client
            .call_tool("good", json!({"region": "us west 1"}))
            .await
            .unwrap();
        let call = f.last("tools/call");
        assert_eq!(call.header("mcp-param-region"), None);
        assert_eq!(
            call.params(),
            json!({"name": "good", "arguments": {"region": "us west 1"}})
        );
    }

    #[tokio::test]
    async fn a_header_mismatch_on_an_unlisted_tool_lists_the_tools_and_calls_once_more() {
        let f = fake(modern(|s| match s.method() {
            "tools/list" => Reply::result(s, tools()),
            _ if s.header("mcp-param-region") == Some("eu") => text(s, &["ok"], false),
            _ => Reply::error(400, s, -32020),
        }))
        .await;
        let client = builder().connect(&f.url).await.unwrap();
        let out = client
            .call_tool("good", json!({"region": "eu"}))
            .await
            .unwrap();
        assert_eq!(out.content[0].as_text(), Some("ok"));
        assert_eq!(
            f.methods(),
            ["server/discover", "tools/call", "tools/list", "tools/call"]
        );
        // A listed tool's mismatch is the server's answer: no second listing.
        let err = client
            .call_tool("good", json!({"region": "us"}))
            .await
            .unwrap_err();
        assert_eq!(err.rpc().map(|e| e.code), Some(-32020));
        assert_eq!(f.methods().len(), 5);
    }

    #[tokio::test]
    async fn call_decodes_structured_content_then_text() {
        let f = fake(modern(|s| match s.params()["name"].as_str() {
            Some("structured") => Reply::result(
                s,
                json!({"content": [{"type": "text", "text": "{\"sum\":5}"}],
                    "structuredContent": {"sum": 5}}),
            ),
            Some("number") => text(s, &["5"], false),
            Some("words") => text(s, &["hi there"], false),
            Some("lines") => text(s, &["a", "b"], false),
            Some("nothing") => text(s, &[], false),
            _ => text(s, &["boom"], true),
        }))
        .await;
        let client = builder().connect(&f.url).await.unwrap();
        let v: Value = client.call("structured", json!({})).await.unwrap();
        assert_eq!(v, json!({"sum": 5}));
        let n: i64 = client.call("number", json!({})).await.unwrap();
        assert_eq!(n, 5);
        let w: String = client.call("words", json!({})).await.unwrap();
        assert_eq!(w, "hi there");
        let l: String = client.call("lines", json!({})).await.unwrap();
        assert_eq!(l, "a\nb");
        let none: Option<i64> = client.call("nothing", json!({})).await.unwrap();
        assert_eq!(none, None);
        let err = client.call::<Value>("fails", json!({})).await.unwrap_err();
        assert_eq!(err.to_string(), "tool fails failed: boom");
        // A failed tool is a result for call_tool.
        assert!(client.call_tool("fails", ()).await.unwrap().is_error());
        // `()` sends no arguments at all.
        assert_eq!(
            f.last("tools/call").params(),
            json!({"name": "fails", "_meta": call_meta()})
        );
    }

    #[tokio::test]
    async fn complete_and_get_prompt_send_exact_params() {
        let f = fake(modern(|s| match s.method() {
            "completion/complete" => Reply::result(
                s,
                json!({"completion": {"values": ["xa", "xb"], "hasMore": false}}),
            ),
            _ => Reply::result(
                s,
                json!({"messages": [{"role": "user",
                    "content": {"type": "text", "text": "hi"}}]}),
            ),
        }))
        .await;
        let client = builder().connect(&f.url).await.unwrap();
        let c = client
            .complete(CompletionReference::prompt("p"), "a", "x")
            .await
            .unwrap();
        assert_eq!(c.values, ["xa", "xb"]);
        assert_eq!(c.has_more, Some(false));
        let seen = f.last("completion/complete");
        assert_eq!(
            seen.params(),
            json!({"ref": {"type": "ref/prompt", "name": "p"},
                "argument": {"name": "a", "value": "x"}, "_meta": meta()})
        );
        assert_eq!(seen.header("mcp-name"), None);
        let p = client
            .get_prompt("review", json!({"code": "fn main() {}"}))
            .await
            .unwrap();
        assert_eq!(p.messages.len(), 1);
        let seen = f.last("prompts/get");
        assert_eq!(
            seen.params(),
            json!({"name": "review", "arguments": {"code": "fn main() {}"}, "_meta": meta()})
        );
        assert_eq!(seen.header("mcp-name"), Some("review"));
    }

    #[tokio::test]
    async fn notifications_carry_meta_only_on_2026() {
        let f = fake(legacy(Some("s1"), |s| Reply::error(200, s, -32601))).await;
        let client = builder().connect(&f.url).await.unwrap();
        client
            .notify("notifications/roots/list_changed", json!({}))
            .await
            .unwrap();
        let n = f.last("notifications/roots/list_changed");
        assert_eq!(
            n.body,
            json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed", "params": {}})
        );
        assert_eq!(n.header("mcp-session-id"), Some("s1"));

        let f = fake(modern(|_| Reply::status(202))).await;
        let client = builder().connect(&f.url).await.unwrap();
        client
            .notify("notifications/roots/list_changed", Value::Null)
            .await
            .unwrap();
        assert_eq!(
            f.last("notifications/roots/list_changed").body,
            json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed",
                "params": {"_meta": meta()}})
        );
    }
}
