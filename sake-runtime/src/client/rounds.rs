//! `input_required` rounds (2026-07-28, multi-round-trip requests): the server answers a
//! request with the questions it needs answered; the registered handlers answer them and the
//! request is sent again with the answers and the server's `requestState`.

use std::collections::HashMap;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::core::HandlerFailure;
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

#[derive(serde::Deserialize)]
struct InputRequest {
    method: String,
    #[serde(default)]
    params: Option<Box<RawValue>>,
}

impl Client {
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
            let mut responses = Map::new();
            for (key, req) in ir.input_requests.unwrap_or_default() {
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
