//! A running request of a session, as the transport holds it: its outcome, its watch for a
//! client's `notifications/cancelled`, and what its telemetry records at its end. Its own file,
//! below both the port (whose `Run` holds it) and the session door (which makes it).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use super::Outcome;
use super::telemetry::Telemetry;
use crate::handler::BoxFuture;
use crate::protocol::jsonrpc::RequestId;
use crate::server::inflight::{Inflight, InflightGuard, InflightKey};
use crate::server::session::Session;

/// A request of a session that runs: its outcome, or nothing once the client cancelled it by
/// `notifications/cancelled`. A future of its own rather than an async block, so that it is
/// not boxed a second time around the dispatcher's, and small, as the transport holds it in
/// its own future.
pub(crate) struct SessionRun {
    pub(crate) fut: BoxFuture<Outcome>,
    /// Its span and what it records at its end; none when nothing would be recorded (no
    /// span wanted, no metric kept).
    pub(crate) telemetry: Option<Box<Telemetry>>,
    pub(crate) watch: Watch,
}

/// Where a [`SessionRun`] is in its watch for a cancellation. Before its first poll: its
/// token (when one was made: the function can observe it, or the transport keeps it), and how
/// a client's `notifications/cancelled` finds it.
pub(crate) enum Watch {
    /// Registered when it started.
    Registered(CancellationToken, InflightGuard),
    /// Registers only if it runs on past its first poll, under this key.
    Late(Option<CancellationToken>, Arc<Inflight>, InflightKey),
    /// Registers only if it runs on past its first poll, under its named session and id (the
    /// key is made then: most runs end on that poll).
    Named(
        Option<CancellationToken>,
        Arc<Inflight>,
        Arc<Session>,
        RequestId,
    ),
    /// Not registered (yet: see [`SessionRun::named`]).
    Unregistered(Option<CancellationToken>),
    /// Running on past its first poll, registered: ends with nothing once cancelled.
    On {
        cancelled: Pin<Box<WaitForCancellationFutureOwned>>,
        _guard: Option<InflightGuard>,
    },
    /// Ended.
    Over,
}

impl SessionRun {
    /// A run the transport polls at once registers under its named session if it runs on
    /// past that poll.
    pub(crate) fn named(
        &mut self,
        inflight: &Arc<Inflight>,
        session: &Arc<Session>,
        id: &RequestId,
    ) {
        if let Watch::Unregistered(cancel) = &mut self.watch {
            self.watch = Watch::Named(cancel.take(), inflight.clone(), session.clone(), id.clone());
        }
    }

    fn end(&mut self, out: Option<Outcome>) -> Poll<Option<Outcome>> {
        self.watch = Watch::Over;
        if let Some(telemetry) = &self.telemetry {
            match &out {
                Some(out) => telemetry.finish(out),
                None => telemetry.cancelled(),
            }
        }
        Poll::Ready(out)
    }

    /// After its first poll found it running on: registered from now on, and watching for a
    /// cancellation.
    fn runs_on(&mut self, cx: &mut TaskContext<'_>) -> Poll<Option<Outcome>> {
        let (cancel, guard) = match std::mem::replace(&mut self.watch, Watch::Over) {
            Watch::Registered(cancel, guard) => (cancel, Some(guard)),
            Watch::Late(cancel, inflight, key) => {
                let cancel = cancel.unwrap_or_default();
                let guard = inflight.register(key, cancel.clone());
                (cancel, Some(guard))
            }
            Watch::Named(cancel, inflight, session, id) => {
                let cancel = cancel.unwrap_or_default();
                let guard = inflight.register(inflight.key(&session.sid, &id), cancel.clone());
                (cancel, Some(guard))
            }
            Watch::Unregistered(cancel) => (cancel.unwrap_or_default(), None),
            Watch::On { .. } | Watch::Over => return Poll::Pending,
        };
        let mut cancelled = Box::pin(cancel.cancelled_owned());
        if cancelled.as_mut().poll(cx).is_ready() {
            drop(guard);
            return self.end(None);
        }
        self.watch = Watch::On {
            cancelled,
            _guard: guard,
        };
        Poll::Pending
    }
}

impl Future for SessionRun {
    type Output = Option<Outcome>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Outcome>> {
        let this = &mut *self;
        let span = this.telemetry.as_ref().map(|t| t.span().clone());
        let _entered = span.as_ref().map(tracing::Span::enter);
        let cancel = match &mut this.watch {
            Watch::Registered(cancel, _) => Some(&*cancel),
            Watch::Late(cancel, ..) | Watch::Named(cancel, ..) | Watch::Unregistered(cancel) => {
                cancel.as_ref()
            }
            // Cancellation first: a function that stops when cancelled finishes at the same
            // moment, and its result must not be sent.
            Watch::On { cancelled, .. } => {
                if cancelled.as_mut().poll(cx).is_ready() {
                    return this.end(None);
                }
                return match this.fut.as_mut().poll(cx) {
                    Poll::Ready(out) => this.end(Some(out)),
                    Poll::Pending => Poll::Pending,
                };
            }
            // Polled again after its end: nothing more to send.
            Watch::Over => return Poll::Ready(None),
        };
        // Its first poll.
        if cancel.is_some_and(CancellationToken::is_cancelled) {
            return this.end(None);
        }
        match this.fut.as_mut().poll(cx) {
            Poll::Ready(out) => this.end(Some(out)),
            Poll::Pending => this.runs_on(cx),
        }
    }
}
