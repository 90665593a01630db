//! `examples/unix_socket.rs`: MCP over a Unix domain socket, written against the public
//! transport API (`Service::connect`). Each connection is served like stdio in both eras: a
//! 2026-07-28 `tools/call` statelessly, a 2025-11-25 `initialize` + `tools/list` as one
//! handshake session; two connections at once do not share a session; an oversized line is
//! refused and the connection closed; a client that hangs up leaves the server serving.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::net::UnixStream;

use sake_tests::stdio::{Peer, example_binary, modern_meta};
use sake_tests::within;

/// The example, serving on a socket of its own.
struct Server {
    child: std::process::Child,
    socket: PathBuf,
    dir: PathBuf,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

async fn start() -> Server {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("sake-unix-socket-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let socket = dir.join("mcp.sock");
    let child = std::process::Command::new(example_binary("unix_socket"))
        .env("SOCKET", &socket)
        .env("RUST_LOG", "warn")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("the example starts");
    within("the socket to appear", async {
        while !socket.exists() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    Server { child, socket, dir }
}

async fn connect(server: &Server) -> Peer {
    let stream = within("connecting", UnixStream::connect(&server.socket))
        .await
        .expect("the example accepts");
    let (read, write) = stream.into_split();
    Peer::new(write, read)
}

fn add_tool() -> Value {
    json!({
        "name": "add",
        "description": "Adds two numbers.",
        "inputSchema": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
        "outputSchema": {
            "type": "object",
            "properties": {"sum": {"type": "integer", "description": "`a + b`."}},
            "required": ["sum"],
            "description": "The sum of two numbers.",
        },
        "annotations": {"readOnlyHint": true, "idempotentHint": true},
    })
}

#[tokio::test]
async fn both_eras_on_one_socket() {
    let server = start().await;
    let mut peer = connect(&server).await;

    // 2026-07-28: a stateless call, answered with `resultType` and the server's info.
    let call = peer
        .call(
            1,
            "tools/call",
            json!({"name": "add", "arguments": {"a": 2, "b": 3}, "_meta": modern_meta(json!({}), json!({}))}),
        )
        .await;
    assert_eq!(
        call,
        json!({"jsonrpc": "2.0", "id": 1, "result": {
            "resultType": "complete",
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "unix-demo", "version": "0.0.0"}},
            "content": [{"type": "text", "text": "{\"sum\":5}"}],
            "structuredContent": {"sum": 5},
        }})
    );

    // 2025-11-25 on the same connection: the handshake, then the session's list.
    let init = peer.initialize("2025-11-25", json!({})).await;
    assert_eq!(init["id"], "init");
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    assert_eq!(
        init["result"]["serverInfo"],
        json!({"name": "unix-demo", "version": "0.0.0"})
    );
    assert_eq!(
        init["result"]["capabilities"]["tools"],
        json!({"listChanged": true})
    );
    let list = peer.call(2, "tools/list", json!({})).await;
    assert_eq!(
        list,
        json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": [add_tool()]}})
    );
    // The session's `ping` answers; the modern call still works beside the session.
    peer.barrier(3).await;
    let again = peer
        .call(
            4,
            "tools/call",
            json!({"name": "add", "arguments": {"a": 1, "b": 1}, "_meta": modern_meta(json!({}), json!({}))}),
        )
        .await;
    assert_eq!(again["result"]["structuredContent"], json!({"sum": 2}));
}

#[tokio::test]
async fn each_connection_is_its_own_session() {
    let server = start().await;
    let mut a = connect(&server).await;
    let mut b = connect(&server).await;
    a.initialize("2025-06-18", json!({})).await;
    // `b` has no session: a request without `_meta` is refused, `ping` answered.
    let refused = b.call(1, "tools/list", json!({})).await;
    assert_eq!(refused["error"]["code"], -32602);
    assert_eq!(
        refused["error"]["message"],
        "Invalid params: no `_meta`; send 2026-07-28 requests with params._meta (io.modelcontextprotocol/protocolVersion, io.modelcontextprotocol/clientCapabilities), or `initialize` first"
    );
    b.barrier(2).await;
    // `a`'s session lists at 2025-06-18: no `$schema` rewriting, but its own revision.
    let list = a.call(3, "tools/list", json!({})).await;
    assert_eq!(list["result"]["tools"][0]["name"], "add");
    // One client hanging up leaves the other served.
    drop(b);
    a.barrier(4).await;
}

#[tokio::test]
async fn an_oversized_line_is_refused_and_the_connection_closed() {
    let server = start().await;
    let mut peer = connect(&server).await;
    // Past the default 4 MiB message limit.
    let huge = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{{\"pad\":\"{}\"}}}}",
        "x".repeat(4 * 1024 * 1024 + 16)
    );
    peer.send_raw_until_refused(&huge).await;
    let refused = peer.recv().await;
    assert_eq!(
        refused,
        json!({"jsonrpc": "2.0", "error": {
            "code": -32600,
            "message": "Invalid request: a message exceeds this server's limit of 4194304 bytes",
        }})
    );
    assert_eq!(
        peer.rest().await,
        Vec::<Value>::new(),
        "then the connection closes"
    );
    // The server goes on serving others.
    let mut other = connect(&server).await;
    other.barrier(1).await;
}
