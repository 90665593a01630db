//! stdio: newline-delimited JSON-RPC on stdin and stdout, for both eras.
//!
//! Framing only: each line read is handed to a [`Connection`] (which serves 2026-07-28
//! requests at any time, makes the connection one handshake session on `initialize`, runs
//! requests concurrently and cancels them on `notifications/cancelled`), and each message it
//! sends is written as one line. Logs never go to stdout.

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

use crate::error::Error;
use crate::protocol::Revision;
use crate::protocol::framing::{Line, read_line};
use crate::server::front::port::{Engine, Outbound, Peer};

/// This process's stdin as a non-blocking pipe, when it is one (`None` for a terminal or a
/// file, or off Unix): read on the event loop, where Tokio's `stdin()` reads on a blocking
/// thread and hands each chunk over.
pub(crate) fn stdin_pipe() -> Option<impl AsyncRead + Unpin + Send> {
    #[cfg(unix)]
    {
        use std::os::fd::AsFd as _;
        let fd = std::io::stdin().as_fd().try_clone_to_owned().ok()?;
        // Checks that it is a FIFO opened for reading, and makes it non-blocking.
        tokio::net::unix::pipe::Receiver::from_owned_fd(fd).ok()
    }
    #[cfg(not(unix))]
    {
        None::<tokio::io::Stdin>
    }
}

/// Serves newline-delimited JSON-RPC on `reader` and `writer` until the reader ends: one
/// connection, with its own handshake session, cancellations and subscriptions.
/// `greeted`: the start-up greeting said where the server is, so the event that says it too is
/// logged at debug level rather than info.
pub(crate) async fn serve_io<R, W>(
    engine: Engine,
    reader: R,
    writer: W,
    greeted: bool,
) -> Result<(), Error>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let extensions = engine.caller_from_env().await?;
    let (conn, outbound) = engine.open(Peer::new("pipe").stdio().extensions(extensions));
    let writer = tokio::spawn(write_lines(writer, outbound));
    let mut reader = BufReader::new(reader);
    let mut line = Vec::new();
    let max = conn.max_message_bytes();
    let revisions: Vec<&str> = Revision::ALL.iter().map(|r| r.as_str()).collect();
    let revisions = revisions.join(", ");
    if greeted {
        tracing::debug!("serving MCP on stdio (revisions {revisions})");
    } else {
        tracing::info!("serving MCP on stdio (revisions {revisions})");
    }
    let mut failed = None;
    loop {
        line.clear();
        let read = tokio::select! {
            r = read_line(&mut reader, &mut line, max) => r,
            () = engine.shutdown().cancelled() => break,
        };
        match read {
            Ok(Line::Eof) => break,
            Ok(Line::TooLong) => conn.refuse_oversized().await,
            Ok(Line::Complete) => {
                let text = line.trim_ascii();
                if !text.is_empty() {
                    conn.receive(Bytes::copy_from_slice(text)).await;
                }
            }
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    // EOF: cancel what runs, then write what is queued and stop, even if a task the user
    // spawned still holds a `Context`.
    conn.close().await;
    let _ = writer.await;
    match failed {
        None => {
            tracing::info!("stdin closed; stdio server stopped");
            Ok(())
        }
        Some(e) => {
            tracing::warn!(error = %e, "reading stdin failed; stdio server stopped");
            Err(e.into())
        }
    }
}

/// How many bytes of queued messages at most are gathered into one write.
const WRITE_BATCH_BYTES: usize = 64 * 1024;

/// Writes each message as one line until the connection's outbound channel ends. Every
/// message already queued goes out in one write and one flush: with a pipelining client, one
/// hand-off to the blocking stdout per batch rather than three per message.
async fn write_lines<W: AsyncWrite + Unpin>(mut w: W, mut outbound: Outbound) {
    let mut buf = Vec::new();
    while let Some(msg) = outbound.recv().await {
        buf.clear();
        buf.extend_from_slice(&msg);
        buf.push(b'\n');
        while buf.len() < WRITE_BATCH_BYTES
            && let Some(more) = outbound.try_recv()
        {
            buf.extend_from_slice(&more);
            buf.push(b'\n');
        }
        let written = async {
            w.write_all(&buf).await?;
            w.flush().await
        };
        if let Err(e) = written.await {
            tracing::warn!(error = %e, "stdout closed; stopping");
            return;
        }
        // A batch that held one very large message leaves no buffer of its size behind.
        if buf.capacity() > 4 * WRITE_BATCH_BYTES {
            buf = Vec::new();
        }
    }
}
