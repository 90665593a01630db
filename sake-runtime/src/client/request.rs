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
use crate::protocol::types::JsonObject;

/// The `resultType` of a result (2026-07-28), absent before.
#[derive(serde::Deserialize)]
pub(super) struct ResultShape {
    #[serde(rename = "resultType", default)]
    pub(super) result_type: Option<Value>,
}

impl Client {
    /// `params` with the `_meta` that `rev` puts on every request (none before 2026-07-28);
    /// a `_meta` already there is kept and completed.
    pub(super) fn with_meta(&self, mut params: JsonObject, rev: Revision) -> JsonObject {
        if !rev.features().request_meta {
            return params;
        }
        let mut meta = match params.remove("_meta") {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        };
        meta.insert(PROTOCOL_VERSION.into(), json!(rev.as_str()));
        meta.insert(CLIENT_CAPABILITIES.into(), self.inner.capabilities.clone());
        meta.insert(CLIENT_INFO.into(), json!(self.inner.info));
        params.insert("_meta".into(), Value::Object(meta));
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
        match self.inner.timeout {
            None => fut.await,
            Some(t) => tokio::time::timeout(t, fut).await.unwrap_or_else(|_| {
                Err(ClientError::Timeout {
                    method: method.to_owned(),
                    millis: t.as_millis(),
                })
            }),
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
            let params = self.with_meta(params.clone(), rev);
            let id = self.inner.core.next_id();
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
                        self.reinitialize(stale).await?;
                        continue;
                    }
                    ex
                }
                Transport::Stdio(s) => self.stdio_exchange(s, method, &id, body).await?,
            };
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
                let shape: ResultShape = match serde_json::from_str(raw.get()) {
                    Ok(s) => s,
                    Err(_) => {
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
