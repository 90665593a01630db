//! One request on the wire: what each revision puts on it (`_meta`, routing headers), the
//! transport that carries it, and what its answer means (including when it makes the client
//! forget what the server speaks).

use std::future::Future;

use ::http::{HeaderMap, HeaderValue};
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::core::{self, is_invalid_reply};
use super::http::header_value;
use super::negotiate::{Body, Exchange, error_forgets};
use super::params;
use super::stdio::Stdio;
use super::{Client, ClientError, Transport};
use crate::protocol::Revision;
use crate::protocol::headers::{self, METHOD, NAME, encode_value};
use crate::protocol::jsonrpc::{RequestId, notification_bytes, request_bytes};
use crate::protocol::meta::{CLIENT_CAPABILITIES, CLIENT_INFO, PROTOCOL_VERSION};
use crate::protocol::methods::Method;
use crate::protocol::tasks;
use crate::protocol::types::JsonObject;

/// A request in flight on a handshake session over HTTP: dropped before its answer, it sends
/// `notifications/cancelled` (in the background).
struct Abandoned<'a> {
    client: Option<Client>,
    id: &'a RequestId,
}

impl Drop for Abandoned<'_> {
    fn drop(&mut self) {
        let Some(client) = self.client.take() else {
            return;
        };
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let id = self.id.clone();
        rt.spawn(async move {
            let params = json!({"requestId": id, "reason": "the client gave the request up"});
            if let Err(e) = client.notify("notifications/cancelled", params).await {
                tracing::debug!("could not cancel request {id}: {e}");
            }
        });
    }
}

/// The `resultType` of a result (2026-07-28), absent before.
#[derive(serde::Deserialize)]
pub(super) struct ResultShape {
    #[serde(rename = "resultType", default)]
    pub(super) result_type: Option<Value>,
}

impl Client {
    /// `params` with the `_meta` that `rev` puts on every request (none before 2026-07-28);
    /// a `_meta` already there is kept and completed (its client capabilities too: a request
    /// may declare its own). With feature `otel`, every revision's
    /// `_meta` also carries the current trace context (`traceparent`, `tracestate`,
    /// `baggage`), as the OpenTelemetry semantic conventions for MCP propagate it.
    pub(super) fn with_meta(&self, mut params: JsonObject, rev: Revision) -> JsonObject {
        #[cfg(feature = "otel")]
        crate::otel::inject(&mut params);
        if !rev.features().request_meta {
            return params;
        }
        let mut meta = match params.remove("_meta") {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        meta.insert(PROTOCOL_VERSION.into(), json!(rev.as_str()));
        // Capabilities given for this request (a gateway passes on its caller's) are kept.
        meta.entry(CLIENT_CAPABILITIES)
            .or_insert_with(|| self.inner.capabilities.clone());
        meta.insert(CLIENT_INFO.into(), json!(self.inner.info));
        params.insert("_meta".into(), Value::Object(meta));
        params
    }

    /// [`with_meta`](Self::with_meta) for a request of `method`: a `tools/call` or a task
    /// method also declares the tasks extension, where the revision has it and the client
    /// takes tasks (the declaration is per request: only where the client can follow a
    /// task).
    pub(super) fn with_meta_for(
        &self,
        method: &str,
        params: JsonObject,
        rev: Revision,
    ) -> JsonObject {
        let mut params = self.with_meta(params, rev);
        let follows = matches!(
            Method::parse(method),
            Some(Method::ToolsCall | Method::TasksGet | Method::TasksUpdate | Method::TasksCancel)
        );
        if follows
            && self.inner.tasks
            && rev.features().tasks
            && let Some(Value::Object(meta)) = params.get_mut("_meta")
            && let Some(Value::Object(caps)) = meta.get_mut(CLIENT_CAPABILITIES)
        {
            let extensions = caps
                .entry("extensions")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(e) = extensions {
                e.insert(tasks::EXTENSION.into(), json!({}));
            }
        }
        params
    }

    /// The routing headers of a request (2026-07-28): `MCP-Protocol-Version`, `Mcp-Method`,
    /// `Mcp-Name` and the tool's `Mcp-Param-*`.
    pub(super) fn routing_headers(
        &self,
        rev: Revision,
        method: &str,
        params: &JsonObject,
    ) -> Result<HeaderMap, ClientError> {
        let mut h = HeaderMap::new();
        // The same revision as `_meta` (`with_meta`): a server refuses a request whose
        // header and body disagree.
        h.insert(
            headers::PROTOCOL_VERSION,
            HeaderValue::from_static(rev.as_str()),
        );
        // Never Base64: a method with a control byte (or any non-ASCII) is refused here.
        h.insert(METHOD, header_value("Mcp-Method", method)?);
        if let Some(field) = Method::parse(method).and_then(Method::name_param)
            && let Some(Value::String(name)) = params.get(field)
        {
            h.insert(NAME, header_value("Mcp-Name", &encode_value(name))?);
        }
        if method == "tools/call"
            && let Some(Value::String(tool)) = params.get("name")
        {
            let known = self
                .inner
                .tool_headers
                .lock()
                .ok()
                .and_then(|t| t.get(tool).cloned())
                .unwrap_or_default();
            let args = params.get("arguments").cloned().unwrap_or(Value::Null);
            for p in known {
                if let Some(v) = params::value(&p, &args) {
                    h.insert(p.header.clone(), header_value(&p.display, &v)?);
                }
            }
        }
        Ok(h)
    }

    pub(super) async fn timed<T>(
        &self,
        method: &str,
        fut: impl Future<Output = Result<T, ClientError>>,
    ) -> Result<T, ClientError> {
        let Some(t) = self.inner.timeout else {
            return fut.await;
        };
        // The time a user spends signing in (an authorization flow of the transport) does not
        // count: the deadline moves while one runs.
        let extended = || match &self.inner.transport {
            Transport::Http(h) => h.extended_deadline(t),
            Transport::Stdio(_) => None,
        };
        tokio::pin!(fut);
        let sleep = tokio::time::sleep(t);
        tokio::pin!(sleep);
        loop {
            tokio::select! {
                out = &mut fut => return out,
                () = &mut sleep => {
                    if let Some(later) = extended() {
                        sleep.as_mut().reset(later);
                        continue;
                    }
                    return Err(ClientError::Timeout {
                        method: method.to_owned(),
                        millis: t.as_millis(),
                    });
                }
            }
        }
    }

    pub(super) async fn stdio_exchange(
        &self,
        s: &Stdio,
        method: &str,
        id: &RequestId,
        body: Vec<u8>,
    ) -> Result<Exchange, ClientError> {
        match s.request(id, body, self.inner.timeout).await? {
            Some(ex) => Ok(ex),
            None => {
                // On stdio a request that is given up is cancelled with a notification.
                let mut params = Map::new();
                params.insert("requestId".into(), json!(id));
                params.insert("reason".into(), json!("timed out"));
                let params = self.with_meta(params, self.revision());
                if let Err(e) = s
                    .write(notification_bytes("notifications/cancelled", &params))
                    .await
                {
                    tracing::debug!("could not cancel {method}: {e}");
                }
                Err(ClientError::Timeout {
                    method: method.to_owned(),
                    millis: self.inner.timeout.map(|t| t.as_millis()).unwrap_or(0),
                })
            }
        }
    }

    /// One request, one answer (no `input_required` rounds). On a handshake session the server
    /// dropped (HTTP 404), a new session is started once and the request sent again.
    pub(super) async fn send(
        &self,
        method: &str,
        params: JsonObject,
    ) -> Result<Box<RawValue>, ClientError> {
        let mut renewed = false;
        loop {
            let rev = self.revision();
            let f = rev.features();
            let params = self.with_meta_for(method, params.clone(), rev);
            let id = self.inner.core.next_id();
            // Questions on this request's stream go to its own answerer, if it has one.
            let _answerer = self.inner.core.answerer_for(&id);
            // Given up before its answer (dropped): a session's server is told, so that it
            // stops, and forgets what it was asking.
            let mut abandoned = Abandoned {
                client: (f.session_id && matches!(self.inner.transport, Transport::Http(_)))
                    .then(|| self.clone()),
                id: &id,
            };
            let body = request_bytes(&id, method, &params);
            tracing::debug!(%id, method, revision = %rev, "request");
            let ex = match &self.inner.transport {
                Transport::Http(h) => {
                    let headers = if f.routing_headers {
                        self.routing_headers(rev, method, &params)?
                    } else {
                        HeaderMap::new()
                    };
                    let stale = h.session_id();
                    let ex = self
                        .timed(method, h.post_request(&id, body, headers, f.session_id))
                        .await?;
                    if ex.status == 404 && f.session_id && stale.is_some() && !renewed {
                        renewed = true;
                        // Answered (404: the session is gone), not given up.
                        abandoned.client = None;
                        self.reinitialize(stale).await?;
                        continue;
                    }
                    ex
                }
                Transport::Stdio(s) => self.stdio_exchange(s, method, &id, body).await?,
            };
            abandoned.client = None;
            return self.interpret(method, ex);
        }
    }

    /// Turns an exchange into a result, applying the memory rules: a reply that suggests the
    /// server's revision changed forgets what the server speaks.
    pub(super) fn interpret(
        &self,
        method: &str,
        ex: Exchange,
    ) -> Result<Box<RawValue>, ClientError> {
        let status = ex.status;
        match ex.body {
            Body::Response(Ok(raw)) => {
                // serde reads a struct from an array too: only an object is a result.
                let object = raw.get().trim_start().starts_with('{');
                let shape: ResultShape = match serde_json::from_str(raw.get()) {
                    Ok(s) if object => s,
                    _ => {
                        self.forget();
                        return Err(ClientError::Protocol(format!(
                            "the result of {method} is not an object: {}",
                            core::clip(raw.get())
                        )));
                    }
                };
                match shape.result_type {
                    None => Ok(raw),
                    Some(Value::String(t)) if t == "complete" || t == "input_required" => Ok(raw),
                    // A task (the tasks extension) answers only `tools/call`.
                    Some(Value::String(t)) if t == "task" && method == "tools/call" => Ok(raw),
                    Some(other) => {
                        self.forget();
                        Err(ClientError::Protocol(format!(
                            "the result of {method} has an unknown resultType {other}"
                        )))
                    }
                }
            }
            Body::Response(Err(error)) => {
                if is_invalid_reply(&error) {
                    self.forget();
                    return Err(ClientError::Protocol(error.message));
                }
                if error_forgets(&error) {
                    self.forget();
                }
                Err(ClientError::Rpc {
                    method: method.to_owned(),
                    error: Box::new(error),
                    status,
                })
            }
            Body::Other(body) if (200..300).contains(&status) => {
                self.forget();
                Err(ClientError::Protocol(format!(
                    "HTTP {status} answer to {method} is no JSON-RPC response{}",
                    if body.is_empty() {
                        String::new()
                    } else {
                        format!(": {body}")
                    }
                )))
            }
            Body::Other(body) => Err(ClientError::Http { status, body }),
        }
    }

    pub(super) fn decode<T: DeserializeOwned>(
        method: &str,
        raw: &RawValue,
    ) -> Result<T, ClientError> {
        serde_json::from_str(raw.get()).map_err(|error| ClientError::Decode {
            method: method.to_owned(),
            error,
        })
    }

    pub(super) fn object(method: &str, value: Value) -> Result<JsonObject, ClientError> {
        match value {
            Value::Object(m) => Ok(m),
            Value::Null => Ok(Map::new()),
            other => Err(ClientError::Protocol(format!(
                "the params of {method} must be a JSON object, not {other}"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::client::fake::{Reply, Seen, builder, fake, legacy, meta, modern, stdio};
    use crate::client::{EraCache, Remembered};

    #[tokio::test]
    async fn handshake_requests_carry_neither_meta_nor_routing_headers() {
        for (rev, version_header) in [
            (Revision::V2025_11_25, Some("2025-11-25")),
            (Revision::V2025_06_18, Some("2025-06-18")),
            (Revision::V2025_03_26, None),
        ] {
            let f = fake(legacy(Some("s1"), |s| {
                Reply::result(s, json!({"content": []}))
            }))
            .await;
            let client = builder().revision(rev).connect(&f.url).await.unwrap();
            let out = client
                .request("tools/call", json!({"name": "x", "arguments": {"a": 1}}))
                .await
                .unwrap();
            assert_eq!(out, json!({"content": []}));
            let call = f.last("tools/call");
            assert_eq!(
                call.params(),
                json!({"name": "x", "arguments": {"a": 1}}),
                "{rev}"
            );
            assert_eq!(call.header("mcp-session-id"), Some("s1"), "{rev}");
            assert_eq!(call.header("mcp-protocol-version"), version_header, "{rev}");
            assert_eq!(call.header("mcp-method"), None, "{rev}");
            assert_eq!(call.header("mcp-name"), None, "{rev}");
        }
    }

    #[tokio::test]
    async fn requests_of_2026_carry_meta_and_routing_headers() {
        let f = fake(modern(|s| Reply::result(s, json!({"contents": []})))).await;
        let client = builder().connect(&f.url).await.unwrap();
        client
            .request(
                "resources/read",
                json!({"uri": "file:///ü", "_meta": {"progressToken": 7}}),
            )
            .await
            .unwrap();
        let read = f.last("resources/read");
        let mut want_meta = meta();
        want_meta["progressToken"] = json!(7);
        assert_eq!(
            read.params(),
            json!({"uri": "file:///ü", "_meta": want_meta})
        );
        assert_eq!(read.header("mcp-protocol-version"), Some("2026-07-28"));
        assert_eq!(read.header("mcp-method"), Some("resources/read"));
        // Not plain visible ASCII: the Base64 sentinel.
        assert_eq!(read.header("mcp-name"), Some("=?base64?ZmlsZTovLy/DvA==?="));
        assert_eq!(read.header("mcp-session-id"), None);
        // A method without a name parameter has no Mcp-Name.
        client.request("tools/list", json!({})).await.unwrap();
        let list = f.last("tools/list");
        assert_eq!(list.header("mcp-method"), Some("tools/list"));
        assert_eq!(list.header("mcp-name"), None);
        assert_eq!(list.params(), json!({"_meta": meta()}));
    }

    #[tokio::test]
    async fn a_session_id_from_a_2026_server_is_ignored() {
        let f = fake(|s: &Seen| {
            Reply::Session(
                "s9",
                Box::new(match s.method() {
                    "server/discover" => Reply::result(s, crate::client::fake::discover_result()),
                    _ => Reply::status(404),
                }),
            )
        })
        .await;
        let client = builder().connect(&f.url).await.unwrap();
        assert_eq!(client.session_id(), None);
        // A 404 is an answer, not an expired session: no new handshake.
        let err = client.request("tools/list", json!({})).await.unwrap_err();
        assert!(
            matches!(err, ClientError::Http { status: 404, .. }),
            "{err:?}"
        );
        assert_eq!(f.methods(), ["server/discover", "tools/list"]);
        assert_eq!(f.last("tools/list").header("mcp-session-id"), None);
        client.close().await;
        assert!(f.seen().iter().all(|s| s.http == "POST"));
    }

    #[tokio::test]
    async fn a_method_that_cannot_be_a_header_is_refused_before_it_is_sent() {
        let f = fake(modern(|s| Reply::result(s, json!({})))).await;
        let client = builder().connect(&f.url).await.unwrap();
        let err = client.request("tools/\nlist", json!({})).await.unwrap_err();
        assert!(
            matches!(&err, ClientError::InvalidHeader { name, .. } if name == "Mcp-Method"),
            "{err:?}"
        );
        assert_eq!(f.methods(), ["server/discover"]);
        // Params that are not an object are refused too.
        let err = client.request("tools/list", json!([1])).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "protocol error: the params of tools/list must be a JSON object, not [1]"
        );
    }

    #[tokio::test]
    async fn an_expired_session_is_renewed_once_and_the_request_sent_again() {
        // The first session expires at the first tools/list; the second one works.
        let inits = Arc::new(AtomicUsize::new(0));
        let n = Arc::clone(&inits);
        let f = fake(move |s: &Seen| {
            let minted = if n.load(Ordering::SeqCst) == 1 {
                "s1"
            } else {
                "s2"
            };
            let reply = match (s.http.as_str(), s.method()) {
                ("POST", "initialize") => {
                    let k = n.fetch_add(1, Ordering::SeqCst) + 1;
                    return Reply::Session(
                        if k == 1 { "s1" } else { "s2" },
                        Box::new(Reply::result(
                            s,
                            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                                "serverInfo": {"name": "x", "version": "1"}}),
                        )),
                    );
                }
                ("POST", "tools/list") if s.header("mcp-session-id") == Some("s1") => {
                    Reply::status(404)
                }
                ("POST", "tools/list") => Reply::result(s, json!({"tools": []})),
                ("POST", "notifications/initialized") => Reply::status(202),
                _ => Reply::status(405),
            };
            Reply::Session(minted, Box::new(reply))
        })
        .await;
        let client = builder()
            .revision(Revision::V2025_11_25)
            .connect(&f.url)
            .await
            .unwrap();
        assert_eq!(client.session_id().as_deref(), Some("s1"));
        assert_eq!(
            client.request("tools/list", json!({})).await.unwrap(),
            json!({"tools": []})
        );
        assert_eq!(client.session_id().as_deref(), Some("s2"));
        assert_eq!(
            f.methods(),
            [
                "initialize",
                "notifications/initialized",
                "tools/list",
                "initialize",
                "notifications/initialized",
                "tools/list"
            ]
        );
        let posts = f.posts();
        assert_eq!(posts[3].header("mcp-session-id"), None);
        assert_eq!(posts[5].header("mcp-session-id"), Some("s2"));
        assert_ne!(posts[2].id(), posts[5].id());
    }

    #[tokio::test]
    async fn a_session_that_expires_again_is_an_http_error() {
        let f = fake(legacy(Some("s1"), |s| match s.method() {
            "tools/list" => Reply::Plain(404, "text/plain", "gone".into()),
            _ => Reply::error(200, s, -32601),
        }))
        .await;
        let client = builder().connect(&f.url).await.unwrap();
        let err = client.request("tools/list", json!({})).await.unwrap_err();
        assert!(
            matches!(&err, ClientError::Http { status: 404, body } if body == "gone"),
            "{err:?}"
        );
        assert_eq!(f.methods().iter().filter(|m| *m == "tools/list").count(), 2);
    }

    #[tokio::test]
    async fn answers_that_suggest_another_revision_forget_the_server() {
        let f = fake(modern(|s| match s.method() {
            "weird" => Reply::result(s, json!({"resultType": "later"})),
            "array" => Reply::result(s, json!([1])),
            "html" => Reply::Plain(200, "text/html", "<html>".into()),
            "empty" => Reply::Plain(200, "application/json", String::new()),
            "unknown" => Reply::error(200, s, -32601),
            "bad-params" => Reply::error(200, s, -32602),
            "busy" => Reply::Plain(503, "text/plain", "busy".into()),
            _ => Reply::result(s, json!({"resultType": "complete", "x": 1})),
        }))
        .await;
        let cache = EraCache::new();
        let client = builder()
            .cache(cache.clone())
            .connect(&f.url)
            .await
            .unwrap();
        let cases: [(&str, &str, bool); 8] = [
            ("fine", "", false),
            (
                "weird",
                "protocol error: the result of weird has an unknown resultType \"later\"",
                true,
            ),
            (
                "array",
                "protocol error: the result of array is not an object: [1]",
                true,
            ),
            (
                "html",
                "protocol error: unparseable reply: not a JSON-RPC message (expected value at line 1 column 1): <html>",
                true,
            ),
            (
                "empty",
                "protocol error: HTTP 200 answer to empty is no JSON-RPC response",
                true,
            ),
            (
                "unknown",
                "the server answered unknown with an error: error -32601 (-32601)",
                true,
            ),
            (
                "bad-params",
                "the server answered bad-params with an error: error -32602 (-32602)",
                false,
            ),
            ("busy", "HTTP 503 from the server: busy", false),
        ];
        for (method, error, forgets) in cases {
            let d = serde_json::from_value(crate::client::fake::discover_result()).unwrap();
            cache.remember(&f.url, Remembered::Modern(Box::new(d)));
            let got = client.request(method, json!({})).await;
            match got {
                Ok(v) => {
                    assert_eq!(error, "", "{method}");
                    assert_eq!(v, json!({"resultType": "complete", "x": 1}));
                }
                Err(e) => assert_eq!(e.to_string(), error, "{method}"),
            }
            assert_eq!(cache.get(&f.url).is_none(), forgets, "{method}");
        }
    }

    #[tokio::test]
    async fn a_stdio_request_given_up_is_cancelled() {
        let (client, server) = stdio(
            builder().timeout(Duration::from_millis(100)),
            |msg| match msg["method"].as_str() {
                Some("server/discover") => vec![crate::client::fake::result_for(
                    msg,
                    crate::client::fake::discover_result(),
                )],
                _ => vec![],
            },
        )
        .await;
        let client = client.unwrap();
        let err = client.request("slow", json!({})).await.unwrap_err();
        assert!(
            matches!(&err, ClientError::Timeout { method, millis: 100 } if method == "slow"),
            "{err:?}"
        );
        let cancelled = server.wait_for("notifications/cancelled").await;
        let slow = server
            .seen()
            .into_iter()
            .find(|m| m["method"] == "slow")
            .unwrap();
        assert_eq!(slow["params"], json!({"_meta": meta()}));
        let mut want = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": slow["id"], "reason": "timed out", "_meta": meta()}});
        assert_eq!(cancelled, want);
        // The id is a number the client never reused.
        want["params"]["requestId"] = json!(2);
        assert_eq!(cancelled, want);
    }
}
