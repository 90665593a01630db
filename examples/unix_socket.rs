//! MCP over a Unix domain socket, written only against sake's public transport API:
//! `SOCKET=/tmp/mcp.sock cargo run --example unix_socket`.
//!
//! Each connection carries newline-delimited JSON-RPC and is served like stdio, in both eras:
//! 2026-07-28 requests (with `_meta`) at any time, and a handshake session after `initialize`.

use sake::prelude::*;
use sake::transport::{Connection, Peer};
use schemars::JsonSchema;
use serde::Serialize;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};

/// The sum of two numbers.
#[derive(Serialize, JsonSchema)]
struct Sum {
    /// `a + b`.
    sum: i64,
}

/// Adds two numbers.
#[tool(annotations(read_only, idempotent))]
fn add(a: i64, b: i64) -> Sum {
    Sum { sum: a + b }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .init();
    let path = std::env::var("SOCKET").unwrap_or_else(|_| "/tmp/sake-mcp.sock".into());
    let _ = std::fs::remove_file(&path);
    let listener = UnixListener::bind(&path)?;
    let service = Server::from_registry().name("unix-demo").build()?;
    tracing::info!("serving MCP on unix:{path}");
    loop {
        let (stream, _) = listener.accept().await?;
        let (connection, outbound) = service.connect(Peer::new("unix"));
        tokio::spawn(serve(stream, connection, outbound));
    }
}

/// One connection: lines in, each handed to the connection; its messages out, one per line.
async fn serve(
    stream: UnixStream,
    connection: Connection,
    mut outbound: sake::transport::Outbound,
) {
    let (read, mut write) = stream.into_split();
    let writer = tokio::spawn(async move {
        while let Some(message) = outbound.recv().await {
            let line = [&message[..], b"\n"].concat();
            if write.write_all(&line).await.is_err() {
                break;
            }
        }
    });
    let (mut reader, mut line) = (BufReader::new(read), Vec::new());
    let max = connection.max_message_bytes();
    loop {
        line.clear();
        match (&mut reader)
            .take(max as u64 + 1)
            .read_until(b'\n', &mut line)
            .await
        {
            Ok(0) | Err(_) => break,
            // A line longer than the server takes: refused, and the connection closed.
            Ok(_) if line.len() > max => break connection.refuse_oversized().await,
            Ok(_) if line.trim_ascii().is_empty() => continue,
            Ok(_) => connection.receive(line.trim_ascii().to_vec()).await,
        }
    }
    // The peer hung up: what runs is cancelled, what is queued is written, then the writer ends.
    connection.close().await;
    let _ = writer.await;
}
