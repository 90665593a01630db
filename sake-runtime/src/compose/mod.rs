//! Composing servers: in-process modules mounted under a prefix ([`Server::mount`]), tool
//! transforms, tool search for large catalogs, and remote MCP servers served under a prefix
//! (`Server::proxy`). The guide is docs/composition.md.
//!
//! What is composed is decided once, when the server is built: mounted definitions are renamed
//! and checked (a collision, or a name over the 64-character limit, stops start-up naming both
//! definitions), transforms are applied to the listings, and the lists every revision shows are
//! built from the result as for any definition — serving them costs nothing per request.
//!
//! Files: `module.rs` (modules and mounting), `transform.rs` (tool transforms, shared with the
//! remote tools), `search.rs` (tool search); the remote half lives in `proxy*.rs`,
//! `upstream*.rs` and `bridge*.rs`.
//!
//! [`Server::mount`]: crate::Server::mount
