//! The accept loop: HTTP/1.1 connections on a bound listener, with a header timeout (one
//! timer per connection), `TCP_NODELAY`, and a graceful shutdown.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::body::{Body, HttpBody as _};
use axum::response::Response;
use futures_util::FutureExt as _;
use futures_util::future::Either;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;

use super::{Endpoint, PeerAddr};
use crate::error::Error;
use crate::protocol::Revision;

/// Serves the endpoint on `listener` until `signal` completes; then ends the long-lived
/// streams, lets requests in flight finish, and returns once the last response has ended.
/// `greeted`: the start-up greeting said where the server is, so the event that says it too is
/// logged at debug level rather than info.
pub(crate) async fn serve(
    ep: Arc<Endpoint>,
    listener: tokio::net::TcpListener,
    signal: impl std::future::Future<Output = ()> + Send + 'static,
    greeted: bool,
) -> Result<(), Error> {
    let local = listener.local_addr()?;
    let revisions: Vec<&str> = Revision::ALL.iter().map(|r| r.as_str()).collect();
    let revisions = revisions.join(", ");
    let path = &ep.http.path;
    if greeted {
        tracing::debug!("serving MCP on http://{local}{path} (revisions {revisions})");
    } else {
        tracing::info!("serving MCP on http://{local}{path} (revisions {revisions})");
    }
    let router = super::router(ep.clone());
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut builder = hyper::server::conn::http1::Builder::new();
    // The header timeout is the connection's own (`HeadWatch`), not hyper's per-request timer.
    builder.header_read_timeout(None);
    let header_timeout = ep.http.limits.header_timeout;
    let mut signal = std::pin::pin!(signal);
    loop {
        let (tcp, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                Err(e) => {
                    // Out of descriptors, most likely: wait rather than spin.
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut signal => break,
        };
        // A connection over the budgets is answered and closed before anything of it is
        // read (abuse control before a token is looked at).
        let admitted = match ep.admit_connection(peer.ip()) {
            Ok(a) => a,
            Err(response) => {
                tracing::debug!(%peer, "connection refused: over the connection limits");
                // Best effort, never waiting: a socket just accepted has room for it.
                let _ = tcp.try_write(response.as_bytes());
                continue;
            }
        };
        // Nagle's algorithm stalls small streamed responses by tens of milliseconds.
        let _ = tcp.set_nodelay(true);
        // Each request learns where it came from, as `axum::serve` with connect info tells it;
        // and, unless a proxy's header names the client, the address's quota key, made once
        // for the connection rather than for each of its requests.
        let address = ep.http.client_ip_header.is_none().then(|| PeerAddr {
            ip: peer.ip(),
            key: Some(ep.engine.address_key(peer.ip())),
        });
        let watch = Arc::new(HeadWatch::default());
        let (ep, router, turns) = (ep.clone(), router.clone(), watch.clone());
        let service = TowerToHyperService::new(tower::service_fn(
            move |req: http::Request<hyper::body::Incoming>| {
                turns.begun();
                let mut req = req.map(axum::body::Body::new);
                let extensions = req.extensions_mut();
                extensions.insert(axum::extract::ConnectInfo(peer));
                if let Some(address) = address {
                    extensions.insert(address);
                }
                // The endpoint's POST, the request almost every client sends, goes straight
                // to its handler when no layer wraps the router (CORS): what the router
                // would do for it, without its matching, boxing and response pass.
                let answer = if ep.http.cors.is_none()
                    && req.method() == http::Method::POST
                    && req.uri().path() == ep.http.path
                {
                    Either::Left(super::post(axum::extract::State(ep.clone()), req).map(Ok))
                } else {
                    Either::Right(tower::ServiceExt::oneshot(router.clone(), req))
                };
                let turns = turns.clone();
                answer.map(move |r: Result<Response, Infallible>| r.map(|a| turns.answered(a)))
            },
        ));
        let conn = builder.serve_connection(TokioIo::new(tcp), service);
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            let _admitted = admitted;
            tokio::select! {
                biased;
                ended = conn => if let Err(e) = ended {
                    tracing::debug!(error = %e, "connection ended with an error");
                },
                () = cut_off_when_quiet(watch, header_timeout) => {
                    tracing::debug!(%peer, "connection closed: no request head within the header timeout");
                }
            }
        });
    }
    tracing::info!("shutting down: finishing in-flight requests and closing streams");
    ep.engine.shutdown().cancel();
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}

/// A connection's header timeout, kept with one timer for the connection instead of one per
/// request: hyper's own (`header_read_timeout`) boxes, registers and cancels a timer for each
/// request head, a cost that showed under many connections. `turns` counts the connection's
/// requests begun and answered (odd: one is being answered; even: the connection waits for a
/// head); [`cut_off_when_quiet`] checks it every quarter of the timeout.
#[derive(Default)]
struct HeadWatch {
    turns: AtomicU64,
}

impl HeadWatch {
    /// A request's head has arrived. (HTTP/1.1 answers one request at a time, and the
    /// connection's task does all of this: plain loads and stores suffice.)
    fn begun(&self) {
        self.turns
            .store(self.turns.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }

    /// The request is answered: when its response is whole, now; when it streams, once the
    /// stream ends.
    fn answered(self: Arc<Self>, response: Response) -> Response {
        if response.body().size_hint().exact().is_some() {
            self.begun();
            return response;
        }
        response.map(|body| {
            Body::from_stream(Streaming {
                data: body.into_data_stream(),
                watch: self,
            })
        })
    }
}

/// A streamed response's body; the connection waits for its next head once it is dropped.
struct Streaming {
    data: axum::body::BodyDataStream,
    watch: Arc<HeadWatch>,
}

impl futures_util::Stream for Streaming {
    type Item = Result<bytes::Bytes, axum::Error>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        std::pin::Pin::new(&mut self.data).poll_next(cx)
    }
}

impl Drop for Streaming {
    fn drop(&mut self) {
        self.watch.begun();
    }
}

/// Completes once the connection has waited for a request head for `timeout` (between 1 and
/// 1.25 times it): no request begun or answered in four consecutive quarters while none was
/// being answered. One timer for the connection's life, reset in place.
async fn cut_off_when_quiet(watch: Arc<HeadWatch>, timeout: Duration) {
    const QUARTERS: u32 = 4;
    let step = (timeout / QUARTERS).max(Duration::from_millis(1));
    let sleep = tokio::time::sleep(step);
    let mut sleep = std::pin::pin!(sleep);
    let mut seen = watch.turns.load(Ordering::Relaxed);
    let mut quiet = 0;
    loop {
        sleep.as_mut().await;
        let now = watch.turns.load(Ordering::Relaxed);
        if now == seen && now.is_multiple_of(2) {
            quiet += 1;
            if quiet >= QUARTERS {
                return;
            }
        } else {
            (seen, quiet) = (now, 0);
        }
        sleep.as_mut().reset(tokio::time::Instant::now() + step);
    }
}
