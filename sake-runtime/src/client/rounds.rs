//! `input_required` rounds (2026-07-28, multi-round-trip requests): the server answers a
//! request with the questions it needs answered; the registered handlers answer them and the
//! request is sent again with the answers and the server's `requestState`.

use std::collections::HashMap;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use std::sync::Arc;

use super::core::{CALL, HandlerFailure, ServerRequest};
use super::request::ResultShape;
use super::{Client, ClientError};
use crate::protocol::types::JsonObject;

#[derive(serde::Deserialize)]
struct InputRequired {
    #[serde(rename = "inputRequests", default)]
    input_requests: Option<HashMap<String, InputRequest>>,
    #[serde(rename = "requestState", default)]
    request_state: Option<Value>,
}

/// One question of the server (an `input_required` round's, or a task's).
#[derive(serde::Deserialize)]
pub(super) struct InputRequest {
    pub(super) method: String,
    #[serde(default)]
    pub(super) params: Option<Box<RawValue>>,
}

impl Client {
    /// Answers input requests (of an `input_required` round, or of a task) with the
    /// registered handlers: each answer under its request's key.
    pub(super) async fn answer_inputs(
        &self,
        method: &str,
        requests: impl IntoIterator<Item = (String, InputRequest)>,
    ) -> Result<JsonObject, ClientError> {
        let requests: Vec<_> = requests.into_iter().collect();
        let limit = self.inner.core.limits.max_server_requests;
        if requests.len() > limit {
            return Err(ClientError::TooManyInputRequests {
                method: method.to_owned(),
                count: requests.len(),
                limit,
            });
        }
        let mut responses = Map::new();
        if let Ok(Some(answerer)) = CALL.try_with(|c| c.answerer.clone()) {
            // The request's own answerer: every question at once (one that waits for a
            // person does not hold up the others).
            let answers = futures_util::future::join_all(requests.into_iter().map(|(key, req)| {
                let answerer = Arc::clone(&answerer);
                async move {
                    let params = match req.params.as_deref() {
                        Some(raw) => serde_json::from_str(raw.get()).map_err(|e| {
                            ClientError::Protocol(format!(
                                "malformed {} input request: {e}",
                                req.method
                            ))
                        })?,
                        None => Value::Null,
                    };
                    let method = req.method;
                    let answer = answerer(ServerRequest {
                        key: Some(key.clone()),
                        method: method.clone(),
                        params,
                    })
                    .await
                    .map_err(|error| ClientError::Handler {
                        method,
                        error: Box::new(error),
                    })?;
                    Ok::<_, ClientError>((key, answer))
                }
            }))
            .await;
            for answer in answers {
                let (key, answer) = answer?;
                responses.insert(key, answer);
            }
            return Ok(responses);
        }
        for (key, req) in requests {
            tracing::debug!(method, input = %req.method, %key, "answering an input request");
            let answer = self
                .inner
                .core
                .handlers
                .answer(&req.method, req.params.as_deref())
                .await
                .map_err(|f| match f {
                    HandlerFailure::Missing(method) => ClientError::MissingHandler { method },
                    HandlerFailure::BadParams(m, why) => {
                        ClientError::Protocol(format!("malformed {m} input request: {why}"))
                    }
                    HandlerFailure::Failed(method, error) => ClientError::Handler {
                        method,
                        error: Box::new(error),
                    },
                })?;
            responses.insert(key, answer);
        }
        Ok(responses)
    }

    /// A request that may be answered `input_required` (2026-07-28): the handlers answer each
    /// input request and the request is retried with a new id, the `inputResponses` and the
    /// exact `requestState`, until it completes.
    pub(super) async fn send_rounds(
        &self,
        method: &str,
        params: JsonObject,
    ) -> Result<Box<RawValue>, ClientError> {
        let mut params = params;
        for _ in 0..self.inner.max_rounds {
            let raw = self.send(method, params.clone()).await?;
            let shape: ResultShape =
                serde_json::from_str(raw.get()).unwrap_or(ResultShape { result_type: None });
            // A result, or a task (the caller follows it).
            if shape.result_type.as_ref().and_then(Value::as_str) != Some("input_required") {
                return Ok(raw);
            }
            let rev = self.revision();
            if !rev.features().input_required {
                return Err(ClientError::Protocol(format!(
                    "the server answered {method} with input_required, which {rev} does not have (handshake revisions ask with requests on the call's stream)"
                )));
            }
            let ir: InputRequired = serde_json::from_str(raw.get()).map_err(|e| {
                ClientError::Protocol(format!("malformed input_required result of {method}: {e}"))
            })?;
            if ir.input_requests.is_none() && ir.request_state.is_none() {
                return Err(ClientError::Protocol(format!(
                    "an input_required result of {method} with neither inputRequests nor requestState"
                )));
            }
            let responses = self
                .answer_inputs(method, ir.input_requests.unwrap_or_default())
                .await?;
            params.remove("inputResponses");
            params.remove("requestState");
            if !responses.is_empty() {
                params.insert("inputResponses".into(), Value::Object(responses));
            }
            if let Some(state) = ir.request_state {
                params.insert("requestState".into(), state);
            }
        }
        Err(ClientError::TooManyRounds {
            method: method.to_owned(),
            rounds: self.inner.max_rounds,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use serde_json::json;

    use super::*;
    use crate::client::fake::{Reply, Seen, builder, fake, legacy, meta, modern};
    use crate::protocol::jsonrpc::RpcError;
    use crate::protocol::types::{ElicitResult, ListRootsResult};

    fn input_required(s: &Seen, requests: Option<Value>, state: Option<&str>) -> Reply {
        let mut r = json!({"resultType": "input_required"});
        if let Some(q) = requests {
            r["inputRequests"] = q;
        }
        if let Some(st) = state {
            r["requestState"] = json!(st);
        }
        Reply::result(s, r)
    }

    fn ask_name() -> Value {
        json!({"ask": {"method": "elicitation/create", "params": {"message": "name?",
            "requestedSchema": {"type": "object", "properties": {
                "name": {"type": "string"},
                "age": {"type": "integer", "default": 30}}}}}})
    }

    #[tokio::test]
    async fn rounds_answer_with_the_handlers_and_send_the_state_back_exactly() {
        let f = fake(modern(|s| {
            match s.params().get("requestState").and_then(Value::as_str) {
                None => input_required(s, Some(ask_name()), Some("s1")),
                // A round with a state and no questions.
                Some("s1") => input_required(s, None, Some("s2")),
                Some(_) => Reply::result(
                    s,
                    json!({"resultType": "complete",
                        "content": [{"type": "text", "text": "done"}]}),
                ),
            }
        }))
        .await;
        let client = builder()
            .on_elicitation(|req| async move {
                assert_eq!(req.message, "name?");
                let mut content = JsonObject::new();
                content.insert("name".into(), json!("Ada"));
                Ok(ElicitResult::accept(content))
            })
            .connect(&f.url)
            .await
            .unwrap();
        let out = client.call_tool("greet", json!({"x": 1})).await.unwrap();
        assert_eq!(out.content[0].as_text(), Some("done"));
        let calls: Vec<Seen> = f
            .posts()
            .into_iter()
            .filter(|s| s.method() == "tools/call")
            .collect();
        assert_eq!(calls.len(), 3);
        let mut meta = meta();
        meta["io.modelcontextprotocol/clientCapabilities"] = json!({"elicitation": {"form": {}},
            "extensions": {"io.modelcontextprotocol/tasks": {}}});
        assert_eq!(
            calls[0].params(),
            json!({"name": "greet", "arguments": {"x": 1}, "_meta": meta})
        );
        // The answer, with the schema's default for the field the handler left out.
        assert_eq!(
            calls[1].params(),
            json!({"name": "greet", "arguments": {"x": 1}, "_meta": meta,
                "inputResponses": {"ask": {"action": "accept",
                    "content": {"name": "Ada", "age": 30}}},
                "requestState": "s1"})
        );
        // No questions this time: no inputResponses, the new state.
        assert_eq!(
            calls[2].params(),
            json!({"name": "greet", "arguments": {"x": 1}, "_meta": meta,
                "requestState": "s2"})
        );
        // Each round is a new request, routed like the first.
        let ids: Vec<Value> = calls.iter().map(Seen::id).collect();
        assert!(ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2]);
        for c in &calls {
            assert_eq!(c.header("mcp-method"), Some("tools/call"));
            assert_eq!(c.header("mcp-name"), Some("greet"));
        }
    }

    #[tokio::test]
    async fn rounds_stop_at_the_limit() {
        let f = fake(modern(|s| input_required(s, None, Some("again")))).await;
        let client = builder().max_rounds(2).connect(&f.url).await.unwrap();
        let err = client.read("file:///a").await.unwrap_err();
        assert!(
            matches!(&err, ClientError::TooManyRounds { method, rounds: 2 } if method == "resources/read"),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            "resources/read still needs input after 2 rounds, the client's limit; raise it with ClientBuilder::max_rounds"
        );
        assert_eq!(
            f.methods(),
            ["server/discover", "resources/read", "resources/read"]
        );
    }

    #[tokio::test]
    async fn more_questions_at_once_than_the_limit_end_the_call_unanswered() {
        let asked = Arc::new(AtomicUsize::new(0));
        let f = fake(modern(|s| {
            let questions: serde_json::Map<String, Value> = (0..3)
                .map(|n| (format!("q{n}"), json!({"method": "roots/list"})))
                .collect();
            input_required(s, Some(Value::Object(questions)), Some("st"))
        }))
        .await;
        let counter = Arc::clone(&asked);
        let client = builder()
            .max_server_requests(2)
            .on_roots(move || {
                counter.fetch_add(1, Ordering::SeqCst);
                async { Ok(ListRootsResult { roots: vec![] }) }
            })
            .connect(&f.url)
            .await
            .unwrap();
        let err = client.call_tool("t", json!({})).await.unwrap_err();
        assert!(
            matches!(&err, ClientError::TooManyInputRequests { method, count: 3, limit: 2 } if method == "tools/call"),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            "the server answered tools/call with 3 input requests at once; the client answers at most 2; raise the limit with ClientBuilder::max_server_requests"
        );
        // Not one handler ran, and the call was not sent again.
        assert_eq!(asked.load(Ordering::SeqCst), 0);
        assert_eq!(f.methods(), ["server/discover", "tools/call"]);
    }

    #[tokio::test]
    async fn a_question_without_a_handler_ends_the_call() {
        let f = fake(modern(|s| {
            input_required(
                s,
                Some(json!({"q": {"method": "sampling/createMessage", "params": {}}})),
                None,
            )
        }))
        .await;
        let client = builder().connect(&f.url).await.unwrap();
        let err = client.get_prompt("p", json!({})).await.unwrap_err();
        assert!(
            matches!(&err, ClientError::MissingHandler { method } if method == "sampling/createMessage"),
            "{err:?}"
        );
        assert_eq!(f.methods(), ["server/discover", "prompts/get"]);
    }

    #[tokio::test]
    async fn a_failing_handler_and_a_malformed_question_end_the_call() {
        let f = fake(modern(|s| {
            let q = match s.params()["name"].as_str() {
                Some("roots") => json!({"q": {"method": "roots/list"}}),
                _ => json!({"q": {"method": "elicitation/create", "params": {"message": 1}}}),
            };
            input_required(s, Some(q), None)
        }))
        .await;
        let client = builder()
            .on_roots(|| async {
                Err::<ListRootsResult, _>(RpcError::new(-32000, "no roots here"))
            })
            .on_elicitation(|_| async { Ok(ElicitResult::decline()) })
            .connect(&f.url)
            .await
            .unwrap();
        let err = client.call_tool("roots", json!({})).await.unwrap_err();
        assert!(
            matches!(&err, ClientError::Handler { method, error } if method == "roots/list" && error.code == -32000),
            "{err:?}"
        );
        let err = client.call_tool("ask", json!({})).await.unwrap_err();
        assert!(
            err.to_string()
                .starts_with("protocol error: malformed elicitation/create input request: "),
            "{err}"
        );
    }

    #[tokio::test]
    async fn input_required_without_questions_or_state_is_a_protocol_error() {
        let f = fake(modern(|s| input_required(s, None, None))).await;
        let client = builder().connect(&f.url).await.unwrap();
        let err = client.call_tool("t", json!({})).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "protocol error: an input_required result of tools/call with neither inputRequests nor requestState"
        );
        assert_eq!(f.methods(), ["server/discover", "tools/call"]);
    }

    #[tokio::test]
    async fn input_required_is_no_answer_on_a_handshake_revision() {
        let f = fake(legacy(None, |s| {
            input_required(s, Some(ask_name()), Some("s"))
        }))
        .await;
        let client = builder()
            .on_elicitation(|_| async { Ok(ElicitResult::decline()) })
            .connect(&f.url)
            .await
            .unwrap();
        let err = client.call_tool("t", json!({})).await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "protocol error: the server answered tools/call with input_required, which 2025-11-25 does not have (handshake revisions ask with requests on the call's stream)"
        );
        assert_eq!(
            f.methods(),
            [
                "server/discover",
                "initialize",
                "notifications/initialized",
                "tools/call"
            ]
        );
    }
}
