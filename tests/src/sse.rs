//! Server-sent events: splitting a body into events.

use serde_json::Value;

/// One SSE event.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SseEvent {
    /// The joined `data:` lines, if any.
    pub data: Option<String>,
    /// Every other field (`event`, `id`, `retry`), in order.
    pub fields: Vec<(String, String)>,
}

impl SseEvent {
    /// The JSON-RPC message the event carries; `None` for an event without data or with
    /// empty data (a 2025-11-25 priming event).
    pub fn message(&self) -> Option<Value> {
        match self.data.as_deref() {
            None | Some("") => None,
            Some(data) => {
                Some(serde_json::from_str(data).expect("every data: frame is one JSON value"))
            }
        }
    }

    /// A field's value (`id`, `retry`, `event`).
    pub fn field(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Splits an SSE body into events (blank-line separated; `data:` lines joined by `\n`;
/// comments dropped).
pub fn parse_sse(body: &str) -> Vec<SseEvent> {
    let body = body.replace("\r\n", "\n").replace('\r', "\n");
    let mut events = Vec::new();
    for block in body.split("\n\n") {
        let mut ev = SseEvent::default();
        let mut data: Vec<&str> = Vec::new();
        for line in block.lines() {
            if line.is_empty() || line.starts_with(':') {
                continue;
            }
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            if field == "data" {
                data.push(value);
            } else {
                ev.fields.push((field.to_owned(), value.to_owned()));
            }
        }
        if !data.is_empty() {
            ev.data = Some(data.join("\n"));
        }
        if ev != SseEvent::default() {
            events.push(ev);
        }
    }
    events
}
