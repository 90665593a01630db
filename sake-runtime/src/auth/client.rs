//! The client a token check is made for: the HTTP transport runs each check inside
//! [`checking_for`] with the client's network (its IPv4 address, or the server's
//! `Limits::ipv6_client_prefix` of its IPv6 one), so that what a check costs (an introspection
//! slot) is counted against that client's share. A check made outside a request (stdio's token
//! from the environment, a verifier called directly) has no client.

use std::future::Future;
use std::net::IpAddr;

tokio::task_local! {
    static CLIENT: IpAddr;
}

/// Runs `check` as made for `client` (when known).
pub(crate) async fn checking_for<F: Future>(client: Option<IpAddr>, check: F) -> F::Output {
    match client {
        Some(c) => CLIENT.scope(c, check).await,
        None => check.await,
    }
}

/// The client the running check is made for, if any.
pub(crate) fn current() -> Option<IpAddr> {
    CLIENT.try_with(|c| *c).ok()
}
