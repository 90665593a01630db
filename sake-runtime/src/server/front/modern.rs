//! The stateless revision (2026-07-28) in the front: a request whose `_meta` was read and
//! whose version is served statelessly, whatever the transport.

use futures_util::Stream;

use tracing::Instrument as _;

use super::port::{Answering, Connection, Frame, Frames, Hints, Reply, Run};
use super::routing;
use super::telemetry::{Call, Telemetry};
use super::{Inbound, Outcome, Running};
use crate::handler::BoxFuture;
use crate::handler::context::RequestParts;
use crate::protocol::Era;
use crate::protocol::jsonrpc::RequestId;
use crate::protocol::meta::{ModernRequest, Params, RequestMeta};
use crate::protocol::methods::Method;
use crate::protocol::version::Revision;
use crate::server::dispatch::Dispatched;

/// What a stateless request answered.
pub(crate) enum Answer {
    /// Known without running anything: the rendered result, or the error.
    Ready(Outcome),
    /// Runs the user's function; what it sends before its result goes to the inbound sink.
    Running(BoxFuture<Outcome>),
    /// `subscriptions/listen`: the stream's frames, from its acknowledgement on.
    Listen(Box<dyn Stream<Item = Frame> + Send + Unpin + 'static>),
}

/// Whether a request asked for messages before its result (progress or log messages): only
/// then does it need a stream.
pub(crate) fn wants_stream(meta: &RequestMeta) -> bool {
    meta.progress_token.is_some() || meta.log_level.is_some()
}

/// The stateless door: a 2026-07-28 request, its `_meta` read, on any connection.
impl Connection {
    /// A stateless request, its `_meta` read.
    pub(super) fn stateless(
        &self,
        req: ModernRequest<'_>,
        hints: &Hints<'_>,
        bytes: usize,
        extensions: http::Extensions,
    ) -> Reply {
        let ModernRequest {
            id,
            method,
            params,
            meta,
        } = req;
        let slot = match self.slots(1, bytes, None) {
            Ok(s) => s,
            Err(e) => return Reply::error(Era::Modern, Some(id), e),
        };
        let (rev, method, meta) =
            match routing::check_modern(&self.shared, hints.headers, method, &params, meta) {
                Ok(v) => v,
                Err(e) => return Reply::error(Era::Modern, Some(id), e),
            };
        let meta = meta.meta;
        // A subscription counts against `max_streams`, not `max_concurrent_requests`.
        let slot = if method == Method::Listen {
            drop(slot);
            match self.shared.admission.stream_slot(self.caller) {
                Ok(s) => s,
                Err(e) => return Reply::error(Era::Modern, Some(id), e),
            }
        } else {
            slot
        };
        // Progress and logs need a stream; a client that cannot take one gets none.
        let (sink, messages) = self.sink(hints, wants_stream(&meta));
        let mut inbound = self.inbound(sink, extensions);
        // On a held connection, `notifications/cancelled` cancels by id.
        let cancel = self.carrier.cancellable();
        inbound.cancel = cancel.clone();
        match self.serve_stateless(rev, &id, method, &params, meta, inbound) {
            Answer::Ready(out) => Reply::now(Era::Modern, Some(id), out),
            Answer::Listen(frames) => {
                let cancelled = cancel.and_then(|cancel| {
                    let waits = Box::pin(cancel.clone().cancelled_owned());
                    Some((waits, self.carrier.register(&self.shared, &id, cancel)?))
                });
                Reply::of(Answering::Stream(Frames {
                    frames,
                    _slot: Some(slot),
                    cancelled,
                }))
            }
            Answer::Running(fut) => {
                let registered = cancel.and_then(|cancel| {
                    let guard = self.carrier.register(&self.shared, &id, cancel.clone())?;
                    Some((cancel, guard))
                });
                let running = match registered {
                    Some((cancel, guard)) => {
                        let fut: BoxFuture<Option<Outcome>> = Box::pin(async move {
                            // Registered until it ends.
                            let _guard = guard;
                            // Cancellation first: a function that stops when cancelled
                            // finishes at the same moment, and its result must not be sent.
                            tokio::select! {
                                biased;
                                () = cancel.cancelled() => None,
                                out = fut => Some(out),
                            }
                        });
                        Running::Cancellable(fut)
                    }
                    None => Running::Plain(fut),
                };
                let run = Run {
                    id: Some(id),
                    settle: |e| e.settled(Era::Modern),
                    running,
                    slot: Some(slot),
                };
                Reply::of(Answering::Later(run, messages))
            }
        }
    }
}

/// A stateless request served, in its span.
impl Connection {
    /// Serves one stateless request of `rev`, its method resolved (see
    /// [`resolve`](super::resolve)) and its `_meta` read, in its span (see
    /// [`telemetry`](super::telemetry)).
    fn serve_stateless(
        &self,
        rev: Revision,
        id: &RequestId,
        method: Method,
        params: &Params<'_>,
        meta: RequestMeta,
        inbound: Inbound,
    ) -> Answer {
        let telemetry = Telemetry::open(
            Call {
                method: method.as_str(),
                known: Some(method),
                id,
                rev,
                session: None,
                params: Some(params),
                raw_meta: Some(&meta.raw),
                transport: inbound.transport,
            },
            &self.shared.catalog.registry,
            &self.shared.config,
        );
        // A span nobody wants, and no metric to record: serve as is, without wrapping the
        // request's future in another box.
        #[cfg(not(feature = "otel"))]
        if telemetry.span().is_disabled() {
            return self.stateless_in_span(rev, id, method, params, meta, inbound);
        }
        let span = telemetry.span().clone();
        let _entered = span.enter();
        match self.stateless_in_span(rev, id, method, params, meta, inbound) {
            Answer::Ready(out) => {
                telemetry.finish(&out);
                Answer::Ready(out)
            }
            Answer::Running(fut) => Answer::Running(Box::pin(
                async move {
                    let out = fut.await;
                    telemetry.finish(&out);
                    out
                }
                .instrument(span.clone()),
            )),
            // Acknowledged: the stream that follows is not the request's duration.
            Answer::Listen(frames) => {
                telemetry.acknowledged();
                Answer::Listen(frames)
            }
        }
    }

    fn stateless_in_span(
        &self,
        rev: Revision,
        id: &RequestId,
        method: Method,
        params: &Params<'_>,
        meta: RequestMeta,
        inbound: Inbound,
    ) -> Answer {
        if method == Method::Listen {
            return match super::super::subscriptions::listen(
                &self.shared,
                id.clone(),
                params,
                &meta,
                &inbound.extensions,
            ) {
                Ok(frames) => Answer::Listen(Box::new(Box::pin(frames))),
                Err(e) => Answer::Ready(Err(e)),
            };
        }
        let mut parts = RequestParts::new(rev, meta);
        parts.sink = inbound.sink;
        parts.extensions = inbound.extensions;
        parts.transport = inbound.kind;
        parts.cancel = inbound.cancel;
        match self.shared.dispatch(parts, method, params) {
            Dispatched::Ready(out) => Answer::Ready(out),
            Dispatched::Pending(fut) => Answer::Running(fut),
        }
    }
}
