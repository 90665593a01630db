//! [`Concurrency`]: at most N calls at once, more shed.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use tokio::sync::Semaphore;
use tower::{Layer, Service};

use super::{BoxError, Boxed, McpRequest, McpResponse, SharedService, busy};

/// At most `calls` calls at once, per function it is applied to (or for all of them together
/// with [`shared`](Self::shared)); one more is refused at once (load shedding) with -32000
/// "Server busy", HTTP 503 with `Retry-After: 1` where the call is its own HTTP exchange.
///
/// `tower::limit::ConcurrencyLimitLayer` works too: it makes calls wait instead (put
/// `tower::load_shed::LoadShedLayer` outside it to refuse them; the refusal becomes the same
/// error).
#[derive(Clone, Debug)]
pub struct Concurrency {
    calls: usize,
    shared: Option<Arc<Semaphore>>,
}

impl Concurrency {
    /// At most `calls` at once per function.
    pub fn new(calls: usize) -> Concurrency {
        Concurrency {
            calls: calls.max(1),
            shared: None,
        }
    }

    /// One limit for every function the layer is applied to.
    #[must_use]
    pub fn shared(mut self) -> Self {
        self.shared = Some(Arc::new(Semaphore::new(self.calls)));
        self
    }
}

impl Layer<Boxed> for Concurrency {
    type Service = ConcurrencyService;
    fn layer(&self, inner: Boxed) -> ConcurrencyService {
        ConcurrencyService {
            inner: SharedService::new(inner),
            slots: self
                .shared
                .clone()
                .unwrap_or_else(|| Arc::new(Semaphore::new(self.calls))),
            calls: self.calls,
        }
    }
}

/// The service of a [`Concurrency`] layer.
pub struct ConcurrencyService {
    inner: SharedService,
    slots: Arc<Semaphore>,
    calls: usize,
}

impl Service<McpRequest> for ConcurrencyService {
    type Response = McpResponse;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<McpResponse, BoxError>> + Send>>;

    fn poll_ready(&mut self, _: &mut TaskContext<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: McpRequest) -> Self::Future {
        let Ok(permit) = self.slots.clone().try_acquire_owned() else {
            let why = format!("it already runs {} calls at once, its limit", self.calls);
            let e = busy(req.label(), &why);
            return Box::pin(async move { Ok(McpResponse::error(e)) });
        };
        let inner = self.inner.clone();
        Box::pin(async move {
            let response = inner.call(req).await;
            drop(permit);
            response
        })
    }
}

impl std::fmt::Debug for ConcurrencyService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ConcurrencyService")
    }
}
