//! Newline-delimited framing, as the stdio transport defines it ("Transports", stdio: messages
//! are delimited by newlines and must not contain embedded newlines). Shared by the server's
//! and the client's stdio transports.

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// What [`read_line`] found.
pub(crate) enum Line {
    /// The end of the input, with nothing left to read.
    Eof,
    /// A line (also a last one without a newline).
    Complete,
    /// A line over the limit, skipped to its end.
    TooLong,
}

/// Reads one line into `buf` (without the newline), refusing lines over `max` bytes. Linear
/// in the input: each byte is looked at once.
pub(crate) async fn read_line<R: AsyncRead + Unpin>(
    r: &mut BufReader<R>,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Line> {
    let mut too_long = false;
    loop {
        let available = r.fill_buf().await?;
        if available.is_empty() {
            return Ok(if too_long {
                Line::TooLong
            } else if buf.is_empty() {
                Line::Eof
            } else {
                Line::Complete
            });
        }
        let (chunk, found) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (&available[..i], Some(i)),
            None => (available, None),
        };
        if !too_long {
            if buf.len() + chunk.len() > max {
                too_long = true;
                buf.clear();
            } else {
                buf.extend_from_slice(chunk);
            }
        }
        let used = found.map_or(chunk.len(), |i| i + 1);
        r.consume(used);
        if found.is_some() {
            return Ok(if too_long {
                Line::TooLong
            } else {
                Line::Complete
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(input: &[u8], max: usize) -> Vec<Result<String, &'static str>> {
        let mut r = BufReader::with_capacity(4, input);
        let mut out = Vec::new();
        let mut buf = Vec::new();
        loop {
            buf.clear();
            match read_line(&mut r, &mut buf, max).await.unwrap() {
                Line::Eof => return out,
                Line::TooLong => out.push(Err("too long")),
                Line::Complete => out.push(Ok(String::from_utf8(buf.clone()).unwrap())),
            }
        }
    }

    #[tokio::test]
    async fn an_over_long_line_is_skipped_whole_and_reading_goes_on() {
        assert_eq!(
            lines(b"short\n0123456789abc\nok\nlast", 10).await,
            vec![
                Ok("short".to_owned()),
                Err("too long"),
                Ok("ok".to_owned()),
                Ok("last".to_owned()),
            ]
        );
        assert_eq!(lines(b"0123456789abc", 10).await, vec![Err("too long")]);
        assert_eq!(lines(b"", 10).await, vec![]);
        assert_eq!(
            lines(b"0123456789\n", 10).await,
            vec![Ok("0123456789".to_owned())]
        );
    }
}
