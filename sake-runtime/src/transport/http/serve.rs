//! The accept loop: HTTP/1.1 connections on a bound listener, with a header timeout,
//! `TCP_NODELAY`, and a graceful shutdown.

use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt as _;
use futures_util::future::Either;
use hyper_util::rt::{TokioIo, TokioTimer};
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
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(ep.http.limits.header_timeout);
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
        let (ep, router) = (ep.clone(), router.clone());
        let service = TowerToHyperService::new(tower::service_fn(
            move |req: http::Request<hyper::body::Incoming>| {
                let mut req = req.map(axum::body::Body::new);
                let extensions = req.extensions_mut();
                extensions.insert(axum::extract::ConnectInfo(peer));
                if let Some(address) = address {
                    extensions.insert(address);
                }
                // The endpoint's POST, the request almost every client sends, goes straight
                // to its handler when no layer wraps the router (CORS): what the router
                // would do for it, without its matching, boxing and response pass.
                if ep.http.cors.is_none()
                    && req.method() == http::Method::POST
                    && req.uri().path() == ep.http.path
                {
                    Either::Left(super::post(axum::extract::State(ep.clone()), req).map(Ok))
                } else {
                    Either::Right(tower::ServiceExt::oneshot(router.clone(), req))
                }
            },
        ));
        let conn = builder.serve_connection(TokioIo::new(tcp), service);
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            let _admitted = admitted;
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "connection ended with an error");
            }
        });
    }
    tracing::info!("shutting down: finishing in-flight requests and closing streams");
    ep.engine.shutdown().cancel();
    drop(listener);
    graceful.shutdown().await;
    Ok(())
}
