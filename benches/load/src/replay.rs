//! Requests replayed on keep-alive connections, one or many at once: `sake-bench replay` (the
//! performance guard's driver, under callgrind) and the "allocs" workload.

use std::net::SocketAddr;
use std::sync::Arc;

use crate::http;

/// One request of a workload: its body and headers (a session call carries the session's id).
pub struct Request {
    pub body: &'static str,
    pub headers: Vec<(&'static str, String)>,
}

/// The request of `workload` (call, session or list); a session call opens its session on a
/// connection of its own first. `None` for another workload.
pub async fn request(addr: SocketAddr, workload: &str) -> std::io::Result<Option<Request>> {
    Ok(Some(match workload {
        "call" => Request {
            body: http::MODERN_CALL,
            headers: http::modern_headers("tools/call", Some("add")),
        },
        "list" => Request {
            body: http::MODERN_LIST,
            headers: http::modern_headers("tools/list", None),
        },
        "session" => {
            let mut c = http::Conn::open(addr).await?;
            let sid = http::open_session(&mut c).await?;
            Request {
                body: http::LEGACY_CALL,
                headers: vec![
                    ("mcp-protocol-version", "2025-11-25".to_owned()),
                    ("mcp-session-id", sid),
                ],
            }
        }
        // The session call's request for a server that keeps no sessions (bare axum): the
        // same bytes, with an id as long as the one sake gives the bench's client.
        "session-bare" => bare_session_request(),
        _ => return Ok(None),
    }))
}

/// The session call's request for a server that keeps no sessions (bare axum): the bytes a
/// session server gets, its `Mcp-Session-Id` a stand-in as long as the id sake's session
/// has (a signed token of [`SESSION_ID_BYTES`]), so that both parse the same head.
pub fn bare_session_request() -> Request {
    Request {
        body: http::LEGACY_CALL,
        headers: vec![
            ("mcp-protocol-version", "2025-11-25".to_owned()),
            ("mcp-session-id", bare_session_id()),
        ],
    }
}

/// How long the id of a session sake opens for the bench's `initialize` is (`s1.` and a
/// signed token); the throughput workloads print a note when sake's differs.
pub const SESSION_ID_BYTES: usize = 289;

/// A stand-in session id for bare axum (which ignores it), [`SESSION_ID_BYTES`] long.
pub fn bare_session_id() -> String {
    "s".repeat(SESSION_ID_BYTES)
}

/// Opens `n` keep-alive connections.
pub async fn open(addr: SocketAddr, n: usize) -> std::io::Result<Vec<http::Conn>> {
    let mut conns = Vec::with_capacity(n);
    for _ in 0..n {
        conns.push(http::Conn::open(addr).await?);
    }
    Ok(conns)
}

/// Sends `count` requests over `conns` at once, spread evenly: each connection sends its next
/// request when its previous one is answered, so up to `conns.len()` are in flight. Every
/// answer must be 200. Gives the connections back for the next round.
pub async fn drive(
    conns: Vec<http::Conn>,
    req: &Arc<Request>,
    count: usize,
) -> std::io::Result<Vec<http::Conn>> {
    let n = conns.len().max(1);
    let mut set = tokio::task::JoinSet::new();
    for (i, mut c) in conns.into_iter().enumerate() {
        let share = count / n + usize::from(i < count % n);
        let req = req.clone();
        set.spawn(async move {
            for _ in 0..share {
                let a = c.post(req.body, &req.headers).await?;
                if a.status != 200 {
                    return Err(std::io::Error::other(format!(
                        "answered {}: {}",
                        a.status,
                        String::from_utf8_lossy(&a.body)
                    )));
                }
            }
            Ok::<_, std::io::Error>(c)
        });
    }
    let mut back = Vec::with_capacity(n);
    while let Some(done) = set.join_next().await {
        back.push(done.map_err(std::io::Error::other)??);
    }
    Ok(back)
}
