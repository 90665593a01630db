//! [`Allow`]: rules on who may call what, beyond scopes.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use tower::{Layer, Service};

use super::{BoxError, Boxed, Kind, McpRequest, McpResponse};
use crate::protocol::jsonrpc::{RpcError, code};

type Rule = Arc<dyn Fn(Option<&str>, &McpRequest) -> bool + Send + Sync>;

/// Lets a call through only when `rule(principal, request)` says so; otherwise the era's
/// authorization refusal: -32000 "Forbidden", HTTP 403 where the call is its own HTTP
/// exchange (2026-07-28), the JSON-RPC error in a session. `principal` is the caller's name
/// ([`McpRequest::principal`]), `None` when anonymous.
#[derive(Clone)]
pub struct Allow {
    rule: Rule,
}

impl fmt::Debug for Allow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Allow")
    }
}

impl Allow {
    /// A rule.
    pub fn new(rule: impl Fn(Option<&str>, &McpRequest) -> bool + Send + Sync + 'static) -> Allow {
        Allow {
            rule: Arc::new(rule),
        }
    }
}

/// The refusal of an [`Allow`] rule.
pub(crate) fn forbidden(req: &McpRequest) -> RpcError {
    RpcError::new(
        code::TRANSPORT_REFUSED,
        match req.kind() {
            Kind::List | Kind::Completion | Kind::Task | Kind::Skill | Kind::Subscription => {
                format!(
                    "Forbidden: the server's rules do not allow this caller to use `{}` ({})",
                    req.method(),
                    req.what()
                )
            }
            _ => format!(
                "Forbidden: the server's rules do not allow this caller to call {}",
                req.what()
            ),
        },
    )
    .with_status(403)
}

impl Layer<Boxed> for Allow {
    type Service = AllowService;
    fn layer(&self, inner: Boxed) -> AllowService {
        AllowService {
            inner,
            rule: self.rule.clone(),
        }
    }
}

/// The service of an [`Allow`] layer.
pub struct AllowService {
    inner: Boxed,
    rule: Rule,
}

impl Service<McpRequest> for AllowService {
    type Response = McpResponse;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<McpResponse, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: McpRequest) -> Self::Future {
        if !(self.rule)(req.principal(), &req) {
            tracing::info!(name = %req.name(), "a call was refused by an allow rule");
            let e = forbidden(&req);
            return Box::pin(async move { Ok(McpResponse::error(e)) });
        }
        Box::pin(self.inner.call(req))
    }
}

impl std::fmt::Debug for AllowService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AllowService")
    }
}
