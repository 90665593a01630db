//! [`Timeout`]: a call that takes too long is cut off.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use tower::{Layer, Service};

use super::{BoxError, Boxed, McpRequest, McpResponse};
use crate::protocol::jsonrpc::RpcError;

/// Cuts a call off after `limit`: the function's future is dropped (as
/// `notifications/cancelled` drops it: its `Context` sees the cancellation, what it spawned
/// is cancelled) and the client gets -32603 naming the function and the limit.
///
/// A task's run is cut off the same way (the task fails with that error). Unlike
/// [`tower::timeout::Timeout`] (which works too), the error says how long the limit is.
#[derive(Clone, Copy, Debug)]
pub struct Timeout {
    limit: Duration,
}

impl Timeout {
    /// A limit of `limit` per call.
    pub fn new(limit: Duration) -> Timeout {
        Timeout { limit }
    }
}

impl Layer<Boxed> for Timeout {
    type Service = TimeoutService;
    fn layer(&self, inner: Boxed) -> TimeoutService {
        TimeoutService {
            inner,
            limit: self.limit,
        }
    }
}

/// The service of a [`Timeout`] layer.
pub struct TimeoutService {
    inner: Boxed,
    limit: Duration,
}

impl Service<McpRequest> for TimeoutService {
    type Response = McpResponse;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<McpResponse, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: McpRequest) -> Self::Future {
        let name = req.label().to_owned();
        let limit = self.limit;
        let fut = self.inner.call(req);
        Box::pin(async move {
            match tokio::time::timeout(limit, fut).await {
                Ok(r) => r,
                Err(_) => {
                    tracing::warn!(name = %name, timeout_s = limit.as_secs_f64(), "a call exceeded its timeout layer and was cancelled");
                    Ok(McpResponse::error(timed_out(&name, limit)))
                }
            }
        })
    }
}

/// -32603: `name` did not finish within `limit`.
pub(crate) fn timed_out(name: &str, limit: Duration) -> RpcError {
    RpcError::internal(format!(
        "Request timed out: `{name}` did not finish within its timeout of {} s and was cancelled",
        limit.as_secs_f64()
    ))
    .with_data(serde_json::json!({ "timeoutSeconds": limit.as_secs_f64() }))
}

impl std::fmt::Debug for TimeoutService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TimeoutService")
    }
}
