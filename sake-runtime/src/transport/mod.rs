//! Transports: Streamable HTTP and stdio.

pub mod http;
pub mod stdio;
