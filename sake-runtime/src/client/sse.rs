//! An incremental `text/event-stream` parser (the WHATWG event-stream rules), enough for MCP:
//! `data`, `id`, `retry` and `event`; comments and unknown fields are ignored.

/// One dispatched event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Event {
    /// The `data` lines, joined with `\n`.
    pub data: String,
    /// The `event` name, if any.
    pub event: Option<String>,
}

/// An event (the lines read of it so far) outgrew the parser's limit.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct TooLarge;

/// Feeds bytes in, takes events out; remembers the last event id and retry interval.
#[derive(Debug, Default)]
pub(crate) struct Parser {
    buf: Vec<u8>,
    /// How much of `buf` is known to hold no line end: a long line fed in many chunks is
    /// looked at once, not again from its start with every chunk.
    scanned: usize,
    data: Option<String>,
    event: Option<String>,
    /// The last `id` seen on the stream (what `Last-Event-ID` resumes from).
    pub last_id: Option<String>,
    /// The last `retry` interval, in milliseconds.
    pub retry_ms: Option<u64>,
    /// The largest event (its data and the line being read) kept before giving up on a
    /// stream: what the parser holds never exceeds it by more than one chunk.
    max_event: usize,
}

impl Parser {
    pub(crate) fn new(max_event: usize) -> Self {
        Parser {
            max_event,
            ..Parser::default()
        }
    }

    /// How many bytes the event being read holds so far.
    fn pending(&self) -> usize {
        self.data.as_ref().map_or(0, String::len)
    }

    /// Adds bytes and returns the events they complete. `Err` when an event outgrows the
    /// limit.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Result<Vec<Event>, TooLarge> {
        self.buf.extend_from_slice(bytes);
        let mut events = Vec::new();
        let mut start = 0;
        let mut i = self.scanned;
        while i < self.buf.len() {
            let b = self.buf[i];
            if b == b'\n' || b == b'\r' {
                // A lone CR at the end of the buffer may be half of CRLF: wait for more.
                if b == b'\r' && i + 1 == self.buf.len() {
                    break;
                }
                let line = String::from_utf8_lossy(&self.buf[start..i]).into_owned();
                let next = if b == b'\r' && self.buf.get(i + 1) == Some(&b'\n') {
                    i + 2
                } else {
                    i + 1
                };
                if let Some(e) = self.line(&line) {
                    events.push(e);
                }
                if self.pending() > self.max_event {
                    return Err(TooLarge);
                }
                start = next;
                i = next;
            } else {
                i += 1;
            }
        }
        // Scanning stopped at the end, or at a lone CR to look at again with the next bytes.
        self.buf.drain(..start);
        self.scanned = i - start;
        if self.buf.len().saturating_add(self.pending()) > self.max_event {
            return Err(TooLarge);
        }
        Ok(events)
    }

    fn line(&mut self, line: &str) -> Option<Event> {
        if line.is_empty() {
            let data = self.data.take();
            let event = self.event.take();
            return data.map(|data| Event { data, event });
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => match &mut self.data {
                Some(d) => {
                    d.push('\n');
                    d.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            },
            "event" => self.event = Some(value.to_owned()),
            "id" if !value.contains('\0') => self.last_id = Some(value.to_owned()),
            "retry" => {
                if let Ok(ms) = value.parse::<u64>() {
                    self.retry_ms = Some(ms);
                }
            }
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_line_in_many_chunks_is_read_whole() {
        let mut p = Parser::new(1 << 20);
        let payload = "x".repeat(100_000);
        let text = format!("data: {payload}\r\n\r\ndata: after\n\n");
        let mut events = Vec::new();
        for chunk in text.as_bytes().chunks(997) {
            events.extend(p.feed(chunk).unwrap());
        }
        assert_eq!(
            events,
            vec![
                Event {
                    data: payload,
                    event: None
                },
                Event {
                    data: "after".into(),
                    event: None
                }
            ]
        );
    }

    #[test]
    fn parses_events_across_chunks_and_line_endings() {
        let mut p = Parser::new(1 << 20);
        let mut out = p.feed(b"id: e1\nretry: 500\ndata: \n\n").unwrap();
        assert_eq!(
            out,
            vec![Event {
                data: String::new(),
                event: None
            }]
        );
        assert_eq!(p.last_id.as_deref(), Some("e1"));
        assert_eq!(p.retry_ms, Some(500));
        out = p.feed(b"event: message\r\ndata: {\"a\":").unwrap();
        assert!(out.is_empty());
        out = p.feed(b"1}\r").unwrap();
        assert!(out.is_empty());
        out = p.feed(b"\n\r\n: comment\n\ndata:x\ndata:y\n\n").unwrap();
        assert_eq!(
            out,
            vec![
                Event {
                    data: "{\"a\":1}".into(),
                    event: Some("message".into())
                },
                Event {
                    data: "x\ny".into(),
                    event: None
                }
            ]
        );
    }

    #[test]
    fn refuses_endless_lines_and_events() {
        // One line without an end (its bytes count, field name included).
        let mut p = Parser::new(16);
        assert_eq!(p.feed(b"data: 0123"), Ok(vec![]));
        assert_eq!(p.feed(b"4567890"), Err(TooLarge));
        // Many lines of one event, each short.
        let mut p = Parser::new(8);
        assert_eq!(p.feed(b"data: 0123\n"), Ok(vec![]));
        assert_eq!(p.feed(b"data: 4567\n"), Err(TooLarge));
        // The data so far and the line being read count together.
        let mut p = Parser::new(8);
        assert_eq!(p.feed(b"data: 01234\nda"), Ok(vec![]));
        assert_eq!(p.feed(b"ta: 5"), Err(TooLarge));
        // An event of exactly the limit is read; the limit applies to each event anew.
        let mut p = Parser::new(8);
        for _ in 0..3 {
            let out = p.feed(b"data: 01234567\n\n").unwrap();
            assert_eq!(out[0].data, "01234567");
        }
    }
}
