//! Transports: Streamable HTTP (and, with a later issue, stdio).

pub mod http;
