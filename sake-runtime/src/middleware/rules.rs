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
///
/// A rule about scopes ([`Allow::scopes`], or any rule with
/// [`about_scopes`](Allow::about_scopes)) refuses as the server's authorization check refuses
/// a function with `scopes` (feature `auth`): an anonymous caller gets 401 with the
/// challenge, a token without the scopes 403 with `WWW-Authenticate: Bearer
/// error="insufficient_scope", scope="…"` naming them — on 2026-07-28 and in a handshake
/// session alike, so that a client can step up.
#[derive(Clone)]
pub struct Allow {
    rule: Rule,
    /// The scopes a refusal says the caller lacks, when the rule is about scopes.
    scopes: Option<Arc<[String]>>,
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
            scopes: None,
        }
    }

    /// Lets through a caller whose token grants every one of `scopes`, checked as the server
    /// checks a function's `#[tool(scopes(…))]` (`Authorization::implies` included); refuses
    /// any other with 401 or 403 `insufficient_scope` naming them. On a server that checks no
    /// tokens, every call is refused (403).
    pub fn scopes<I, S>(scopes: I) -> Allow
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let scopes: Arc<[String]> = scopes.into_iter().map(Into::into).collect();
        let needed = scopes.clone();
        Allow {
            rule: Arc::new(move |_, req: &McpRequest| req.grants(&needed)),
            scopes: Some(scopes),
        }
    }

    /// The rule is about scopes: its refusal says the caller needs `scopes` (401 for an
    /// anonymous caller, 403 `insufficient_scope` naming them otherwise), as the server's
    /// authorization check does.
    #[must_use]
    pub fn about_scopes<I, S>(mut self, scopes: I) -> Allow
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.scopes = Some(scopes.into_iter().map(Into::into).collect());
        self
    }
}

/// The refusal of an [`Allow`] rule about `scopes`: the server's own authorization refusal
/// (401 with the challenge, or 403 `insufficient_scope` naming them) where it checks tokens.
fn needs_scopes(req: &McpRequest, scopes: &[String]) -> RpcError {
    let list: Vec<&str> = scopes.iter().map(String::as_str).collect();
    #[cfg(feature = "auth")]
    if let Some(auth) = &req.auth {
        let what = req.what();
        return match req.http_extensions().get::<crate::auth::Principal>() {
            None => auth.unauthenticated(&what, &list),
            Some(_) => auth.insufficient_scope(&what, &list),
        };
    }
    RpcError::new(
        code::TRANSPORT_REFUSED,
        format!(
            "Forbidden: {} needs the scopes {}, and this server checks no tokens",
            req.what(),
            list.join(" ")
        ),
    )
    .with_status(403)
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
            scopes: self.scopes.clone(),
        }
    }
}

/// The service of an [`Allow`] layer.
pub struct AllowService {
    inner: Boxed,
    rule: Rule,
    scopes: Option<Arc<[String]>>,
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
            let e = match &self.scopes {
                Some(scopes) => needs_scopes(&req, scopes),
                None => forbidden(&req),
            };
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
