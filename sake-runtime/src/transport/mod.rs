//! Transports: Streamable HTTP, stdio, and the port for your own.
//!
//! sake serves Streamable HTTP ([`Service::router`](crate::Service::router),
//! [`Service::serve`](crate::Service::serve)) and stdio
//! ([`Service::serve_stdio`](crate::Service::serve_stdio)). To carry MCP over anything else
//! that moves messages — a Unix socket, a WebSocket, a message queue — open a [`Connection`]
//! with [`Service::connect`](crate::Service::connect): hand it each message your peer sends,
//! and write back each message of its [`Outbound`] channel. The connection does everything
//! else, exactly as for stdio: both eras, a handshake session per connection, concurrent
//! requests, cancellation, subscriptions, and cleaning up when it closes.

#[cfg(feature = "internals")]
pub mod http;
#[cfg(not(feature = "internals"))]
pub(crate) mod http;
pub(crate) mod stdio;

pub use crate::server::front::port::{Connection, Outbound, Peer};
