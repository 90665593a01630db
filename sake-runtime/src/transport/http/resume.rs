//! Response streams of handshake sessions, kept while they run so that a client can resume a
//! dropped stream with `Last-Event-ID` (2025-11-25 SSE polling, SEP-1699).
//!
//! A stream is written by the task that runs the request and read by the POST that started
//! it, then by any GET that resumes it. Process-local, bounded, and forgotten a minute after
//! the request ends.

use std::collections::HashMap;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use futures_util::Stream;
use tokio::sync::Notify;

/// How long a finished stream stays resumable.
const LINGER: Duration = Duration::from_secs(60);
/// The most items one stream keeps; older ones are dropped (a resume then starts later).
const MAX_ITEMS: usize = 4096;

#[derive(Clone, Debug)]
enum Item {
    Frame(Bytes),
    /// The function asked to end the current HTTP response (`Context::close_stream`).
    Close,
}

#[derive(Debug, Default)]
struct State {
    /// Items from `offset` on.
    items: Vec<Item>,
    offset: usize,
    done: bool,
    finished_at: Option<Instant>,
}

/// One response stream.
#[derive(Debug)]
pub(crate) struct RespStream {
    pub id: u64,
    pub sid: String,
    /// Whether frames carry SSE ids (resumable) or not.
    pub with_ids: bool,
    state: Mutex<State>,
    notify: Notify,
}

impl RespStream {
    fn next_seq(state: &State) -> usize {
        state.offset + state.items.len()
    }

    /// Appends a JSON-RPC message as an SSE event.
    pub fn push_message(&self, message: &[u8]) {
        let Ok(mut st) = self.state.lock() else {
            return;
        };
        let seq = Self::next_seq(&st);
        let mut b = BytesMut::with_capacity(message.len() + 32);
        if self.with_ids {
            b.put_slice(format!("id: {}.{seq}\n", self.id).as_bytes());
        }
        b.put_slice(b"data: ");
        b.put_slice(message);
        b.put_slice(b"\n\n");
        push(&mut st, Item::Frame(b.freeze()));
        drop(st);
        self.notify.notify_waiters();
    }

    /// Appends the priming event: an id, the retry hint, and empty data.
    pub fn push_priming(&self, retry: Duration) {
        let Ok(mut st) = self.state.lock() else {
            return;
        };
        let seq = Self::next_seq(&st);
        let frame = format!(
            "id: {}.{seq}\nretry: {}\ndata: \n\n",
            self.id,
            retry.as_millis()
        );
        push(&mut st, Item::Frame(Bytes::from(frame)));
        drop(st);
        self.notify.notify_waiters();
    }

    /// Ends the current HTTP response; the stream goes on for resuming readers.
    pub fn push_close(&self) {
        if let Ok(mut st) = self.state.lock() {
            push(&mut st, Item::Close);
        }
        self.notify.notify_waiters();
    }

    /// The request ended: readers stop after the last item.
    pub fn finish(&self) {
        if let Ok(mut st) = self.state.lock() {
            st.done = true;
            st.finished_at = Some(Instant::now());
        }
        self.notify.notify_waiters();
    }

    /// A reader from item `from` on. The POST's reader stops at a close marker; a resuming
    /// reader skips them.
    pub fn reader(self: &Arc<Self>, from: usize, stop_at_close: bool) -> Reader {
        Reader {
            stream: self.clone(),
            next: from,
            stop_at_close,
            waiting: None,
        }
    }
}

fn push(st: &mut State, item: Item) {
    st.items.push(item);
    if st.items.len() > MAX_ITEMS {
        let drop_n = st.items.len() - MAX_ITEMS;
        st.items.drain(..drop_n);
        st.offset += drop_n;
    }
}

/// Reads a stream's frames as an SSE body.
pub(crate) struct Reader {
    stream: Arc<RespStream>,
    next: usize,
    stop_at_close: bool,
    waiting: Option<Pin<Box<dyn std::future::Future<Output = ()> + Send>>>,
}

impl Stream for Reader {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            // Register for a wake-up before looking, so that no push is missed.
            if self.waiting.is_none() {
                let s = self.stream.clone();
                self.waiting = Some(Box::pin(async move { s.notify.notified().await }));
            }
            if let Some(w) = self.waiting.as_mut() {
                // First poll registers the waiter; readiness is checked below.
                if w.as_mut().poll(cx).is_ready() {
                    self.waiting = None;
                    continue;
                }
            }
            let Ok(st) = self.stream.state.lock() else {
                return Poll::Ready(None);
            };
            let next = self.next.max(st.offset);
            if let Some(item) = st.items.get(next - st.offset).cloned() {
                drop(st);
                self.next = next + 1;
                match item {
                    Item::Frame(f) => return Poll::Ready(Some(Ok(f))),
                    Item::Close if self.stop_at_close => return Poll::Ready(None),
                    Item::Close => continue,
                }
            }
            if st.done {
                return Poll::Ready(None);
            }
            return Poll::Pending;
        }
    }
}

/// Every resumable stream of this process.
#[derive(Debug)]
pub(crate) struct Streams {
    map: Mutex<Registry>,
    next: AtomicU64,
    max: usize,
}

#[derive(Debug)]
struct Registry {
    streams: HashMap<u64, Arc<RespStream>>,
    /// When streams that ended more than `LINGER` ago were last dropped.
    swept: Instant,
}

impl Registry {
    /// Drops the streams that ended more than `LINGER` ago.
    fn sweep(&mut self) {
        self.streams.retain(|_, s| {
            s.state
                .lock()
                .map(|st| st.finished_at.is_none_or(|t| t.elapsed() < LINGER))
                .unwrap_or(false)
        });
        self.swept = Instant::now();
    }
}

impl Streams {
    pub fn new(max: usize) -> Self {
        // Start from a random point so that ids of different processes rarely collide.
        let mut seed = [0u8; 4];
        let _ = getrandom::fill(&mut seed);
        Streams {
            map: Mutex::new(Registry {
                streams: HashMap::new(),
                swept: Instant::now(),
            }),
            next: AtomicU64::new(u64::from(u32::from_le_bytes(seed)) << 16),
            max,
        }
    }

    /// A new stream of a session.
    pub fn open(&self, sid: &str, with_ids: bool) -> Arc<RespStream> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let stream = Arc::new(RespStream {
            id,
            sid: sid.to_owned(),
            with_ids,
            state: Mutex::new(State::default()),
            notify: Notify::new(),
        });
        if let Ok(mut reg) = self.map.lock() {
            // Ended streams go a minute after they end (checked every quarter of that), or
            // at once when the registry is half full.
            if reg.swept.elapsed() >= LINGER / 4 || reg.streams.len() >= self.max / 2 {
                reg.sweep();
            }
            if reg.streams.len() < self.max && with_ids {
                reg.streams.insert(id, stream.clone());
            }
        }
        stream
    }

    /// Resolves a `Last-Event-ID` of a session: the stream and the item to resume from.
    pub fn resume(&self, sid: &str, last_event_id: &str) -> Option<(Arc<RespStream>, usize)> {
        let (stream, seq) = last_event_id.trim().split_once('.')?;
        let stream: u64 = stream.parse().ok()?;
        let seq: usize = seq.parse().ok()?;
        let s = self.map.lock().ok()?.streams.get(&stream).cloned()?;
        (s.sid == sid).then_some((s, seq + 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;

    #[tokio::test]
    async fn a_closed_post_stream_resumes_where_it_stopped() {
        let streams = Streams::new(100);
        let s = streams.open("sess", true);
        s.push_priming(Duration::from_millis(500));
        s.push_close();
        let post: Vec<_> = s.reader(0, true).map(|f| f.unwrap()).collect().await;
        assert_eq!(post.len(), 1);
        let prime = String::from_utf8(post[0].to_vec()).unwrap();
        assert!(
            prime.starts_with(&format!("id: {}.0\nretry: 500\ndata: \n\n", s.id)),
            "{prime}"
        );
        s.push_message(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#);
        s.finish();
        let (again, from) = streams.resume("sess", &format!("{}.0", s.id)).unwrap();
        let resumed: Vec<_> = again
            .reader(from, false)
            .map(|f| f.unwrap())
            .collect()
            .await;
        assert_eq!(resumed.len(), 1);
        assert_eq!(
            String::from_utf8(resumed[0].to_vec()).unwrap(),
            format!(
                "id: {}.2\ndata: {{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{}}}}\n\n",
                s.id
            )
        );
        assert!(
            streams
                .resume("other session", &format!("{}.0", s.id))
                .is_none()
        );
        assert!(streams.resume("sess", "garbage").is_none());
    }

    #[test]
    fn ended_streams_are_forgotten_after_a_minute() {
        let streams = Streams::new(1_000_000);
        let old = streams.open("sess", true);
        old.finish();
        let running = streams.open("sess", true);
        if let Ok(mut st) = old.state.lock() {
            st.finished_at = Instant::now().checked_sub(LINGER + Duration::from_secs(1));
        }
        // Not yet time to sweep: both stay.
        streams.open("sess", true);
        assert_eq!(streams.map.lock().unwrap().streams.len(), 3);
        streams.map.lock().unwrap().swept = Instant::now() - LINGER;
        streams.open("sess", true);
        let reg = streams.map.lock().unwrap();
        assert_eq!(reg.streams.len(), 3);
        assert!(!reg.streams.contains_key(&old.id));
        assert!(reg.streams.contains_key(&running.id));
    }

    #[tokio::test]
    async fn readers_wait_for_frames() {
        let streams = Streams::new(100);
        let s = streams.open("sess", false);
        let mut r = s.reader(0, true);
        let writer = s.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            writer.push_message(b"{}");
            writer.finish();
        });
        assert_eq!(
            r.next().await.unwrap().unwrap(),
            Bytes::from_static(b"data: {}\n\n")
        );
        assert!(r.next().await.is_none());
    }
}
