//! The harness every test of sake shares: the server's tests in this package (`tests/`) and the
//! client's in `client-interop/`.
//!
//! - [`http`]: requests built byte for byte ([`Req`]), sent in memory to a service's router
//!   ([`Wire`]), answers parsed and validated ([`Reply`], [`Open`], [`Stream`]).
//! - [`session`]: handshake sessions (`initialize`, then requests that carry the session).
//! - [`sse`]: server-sent events.
//! - [`schema`]: the official JSON Schemas in `spec/`, and [`validate`], which every message the
//!   harness reads from a server goes through.
//! - [`rpc`]: expected JSON-RPC payloads, written whole.
//! - [`stream`]: long-lived responses read as they arrive, and servers on a real socket
//!   ([`stream::Live`]).
//! - [`raw`]: HTTP/1.1 by hand on a real socket (source addresses, half-sent bodies, hyper's
//!   own refusals), answers parsed into a [`raw::RawReply`].
//! - [`stdio`]: the example and package binaries, a line-oriented JSON-RPC [`Peer`], an in-memory
//!   [`Stdio`].
//! - [`node`]: the pinned Node, the scripts that drive the TypeScript SDK client, and the MCP
//!   Inspector's CLI.
//! - [`fake`]: the fake MCP server (HTTP) of every test of the client: `client-interop/`'s, and
//!   the client's unit tests, which include the file by path.
//! - [`redis`]: a real `redis-server` on a free port, for the replicas' tests.
//! - [`fixtures`]: types and completion functions the fixtures share.
//!
//! # Fixtures
//!
//! The tools, prompts and resources that several test binaries serve are declared once, in
//! `fixtures/` next to this directory, and a test binary includes the ones it serves with
//! `#[path = "../fixtures/<name>.rs"] mod <name>;`. They are not items of this library on
//! purpose: `#[tool]` registers a function for `Server::from_registry()`, so a library holding
//! them would make every test binary serve all of them (or, since the linker keeps only the
//! parts of a library something refers to, an unpredictable subset), and each test asserts
//! its server's exact lists.

pub mod fake;
pub mod fixtures;
pub mod http;
pub mod node;
pub mod raw;
pub mod redis;
pub mod rpc;
pub mod schema;
pub mod session;
pub mod sse;
pub mod stdio;
pub mod stream;

use std::future::Future;
use std::time::Duration;

use serde_json::Value;

pub use http::{
    CLIENT_CAPABILITIES, CLIENT_INFO, EVENT_TIMEOUT, MODERN, Methods, Open, PROTOCOL_VERSION,
    Reply, Req, SERVER_INFO, Stream, Wire, header_value, meta, request_methods, sentinel,
    with_meta,
};
pub use schema::validate;
pub use session::{Handshake, LEGACY, Session, initialize_params, served};
pub use sse::{SseEvent, parse_sse};
pub use stdio::{
    Peer, Spawned, Stdio, example_binary, example_binary_with, modern_meta, package_binary, spawn,
    spawn_example,
};

/// How long any one step may take before the test fails instead of hanging CI.
pub const STEP: Duration = Duration::from_secs(20);

/// Fails the test instead of hanging.
pub async fn within<T>(what: &str, fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(STEP, fut)
        .await
        .unwrap_or_else(|_| panic!("{what} timed out after {STEP:?}"))
}

/// A JSON object, for tool arguments.
pub fn args(v: Value) -> serde_json::Map<String, Value> {
    v.as_object().unwrap().clone()
}

/// Anything serialisable, as JSON.
pub fn to_json(v: impl serde::Serialize) -> Value {
    serde_json::to_value(v).unwrap()
}

/// Asserts that `got`, as JSON, is exactly `want`, printing both when not.
#[track_caller]
pub fn same(got: impl serde::Serialize, want: Value) {
    let got = to_json(got);
    assert!(got == want, "differs\n got: {got}\nwant: {want}");
}

/// Reads a server's start-up greeting from its stderr: every line up to and including the one
/// that says how to hide it (`(SAKE_QUIET=1 …`). Returns the greeting, the endpoint URL its
/// first line names (`… MCP at <url>`; `None` on stdio), and the lines before it (logs).
pub async fn read_greeting<R>(
    lines: &mut tokio::io::Lines<R>,
) -> (String, Option<String>, Vec<String>)
where
    R: tokio::io::AsyncBufRead + Unpin,
{
    within("the start-up greeting", async {
        let mut before = Vec::new();
        let mut text = String::new();
        let mut url = None;
        loop {
            let line = lines.next_line().await.unwrap().unwrap_or_else(|| {
                panic!("stderr ended before the greeting did:\n{before:?}\n{text}")
            });
            if text.is_empty() && !(line.contains(": MCP at ") || line.contains(": MCP on stdio")) {
                before.push(line);
                continue;
            }
            if let Some((_, rest)) = line.split_once(": MCP at ") {
                url = rest.split(' ').next().map(str::to_owned);
            }
            text.push_str(&line);
            text.push('\n');
            if line.starts_with("(SAKE_QUIET=1") {
                return (text, url, before);
            }
        }
    })
    .await
}
