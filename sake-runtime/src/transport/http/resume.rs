//! Response streams of handshake sessions, kept while they run so that a client can resume a
//! dropped stream with `Last-Event-ID` (2025-11-25 SSE polling, SEP-1699).
//!
//! A stream is written by the task that runs the request and read by the POST that started
//! it, then by any GET that resumes it. Process-local, bounded in bytes per stream and in all,
//! bounded in number per client, and forgotten a minute after the request ends (by expiry, in
//! O(log n): see `records.rs`).

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};

use crate::records::Records;
use crate::server::front::port::StreamOwner;
use futures_util::Stream;
use tokio::sync::Notify;

/// How long a finished stream stays resumable.
const LINGER: Duration = Duration::from_secs(60);
/// The most items one stream keeps; older ones are dropped (a resume then starts later).
const MAX_ITEMS: usize = 4096;
/// The most bytes one stream keeps.
pub(crate) const MAX_STREAM_BYTES: usize = 1 << 20;
/// The most bytes all streams keep together; beyond it, each stream keeps only its last
/// [`SQUEEZED_BYTES`].
pub(crate) const MAX_TOTAL_BYTES: usize = 256 << 20;
/// What a stream keeps when all streams together are over [`MAX_TOTAL_BYTES`].
const SQUEEZED_BYTES: usize = 64 << 10;

#[derive(Clone, Debug)]
enum Item {
    Frame(Bytes),
    /// The function asked to end the current HTTP response (`Context::close_stream`).
    Close,
}

impl Item {
    fn len(&self) -> usize {
        match self {
            Item::Frame(b) => b.len(),
            Item::Close => 0,
        }
    }
}

#[derive(Debug, Default)]
struct State {
    /// Items from `offset` on.
    items: std::collections::VecDeque<Item>,
    offset: usize,
    /// The bytes of `items`.
    bytes: usize,
    done: bool,
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
    /// How many readers (HTTP responses) it has now.
    readers: tokio::sync::watch::Sender<usize>,
    /// The registry it is kept in (to be forgotten a minute after it ends) and the bytes all
    /// streams hold.
    registry: Weak<Inner>,
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
        self.push(&mut st, Item::Frame(b.freeze()));
        drop(st);
        self.notify.notify_waiters();
    }

    /// Appends an item, then drops the oldest while the stream is over its bounds.
    fn push(&self, st: &mut State, item: Item) {
        let total = self.registry.upgrade();
        let grown = item.len();
        st.bytes += grown;
        st.items.push_back(item);
        if let Some(t) = &total {
            t.bytes.fetch_add(grown, Ordering::Relaxed);
        }
        let limit = match &total {
            Some(t) if t.bytes.load(Ordering::Relaxed) > MAX_TOTAL_BYTES => SQUEEZED_BYTES,
            _ => MAX_STREAM_BYTES,
        };
        while st.items.len() > 1 && (st.items.len() > MAX_ITEMS || st.bytes > limit) {
            let Some(old) = st.items.pop_front() else {
                break;
            };
            st.offset += 1;
            st.bytes -= old.len();
            if let Some(t) = &total {
                t.bytes.fetch_sub(old.len(), Ordering::Relaxed);
            }
        }
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
        self.push(&mut st, Item::Frame(Bytes::from(frame)));
        drop(st);
        self.notify.notify_waiters();
    }

    /// Ends the current HTTP response; the stream goes on for resuming readers.
    pub fn push_close(&self) {
        if let Ok(mut st) = self.state.lock() {
            self.push(&mut st, Item::Close);
        }
        self.notify.notify_waiters();
    }

    /// The request ended: readers stop after the last item, and the stream is forgotten a
    /// minute later.
    pub fn finish(&self) {
        if let Ok(mut st) = self.state.lock() {
            st.done = true;
        }
        self.notify.notify_waiters();
        if let Some(reg) = self.registry.upgrade() {
            reg.expire(self.id, Instant::now() + LINGER);
        }
    }

    /// A reader from item `from` on. The POST's reader stops at a close marker; a resuming
    /// reader skips them.
    pub fn reader(self: &Arc<Self>, from: usize, stop_at_close: bool) -> Reader {
        self.readers.send_modify(|n| *n += 1);
        Reader {
            stream: self.clone(),
            next: from,
            stop_at_close,
            waiting: None,
        }
    }
}

impl RespStream {
    /// Resolves once the stream has had no reader for `grace` in a row: the client hung up
    /// and did not come back with `Last-Event-ID`.
    pub async fn unread_for(&self, grace: Duration) {
        let mut readers = self.readers.subscribe();
        loop {
            if readers.wait_for(|n| *n == 0).await.is_err() {
                return;
            }
            tokio::select! {
                () = tokio::time::sleep(grace) => return,
                back = readers.wait_for(|n| *n > 0) => if back.is_err() { return },
            }
        }
    }
}

impl Drop for Reader {
    fn drop(&mut self) {
        self.stream
            .readers
            .send_modify(|n| *n = n.saturating_sub(1));
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

impl Drop for RespStream {
    fn drop(&mut self) {
        if let (Some(reg), Ok(st)) = (self.registry.upgrade(), self.state.lock()) {
            reg.bytes.fetch_sub(st.bytes, Ordering::Relaxed);
        }
    }
}

/// Every resumable stream of this process.
#[derive(Debug, Clone)]
pub(crate) struct Streams {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// Running streams (expiring a session's lifetime away, as a bound) and ended ones (a
    /// minute after they end), per client.
    map: Mutex<Records<u64, Arc<RespStream>>>,
    next: AtomicU64,
    /// The bytes all streams hold.
    bytes: AtomicUsize,
}

impl Inner {
    /// Moves a stream's expiry (it ended).
    fn expire(&self, id: u64, at: Instant) {
        if let Ok(mut map) = self.map.lock() {
            let now = Instant::now();
            if let Some(owner) = map.owner(&id).map(str::to_owned)
                && let Some(stream) = map.remove(&id)
            {
                map.insert(id, stream, at, &owner, now);
            }
        }
    }
}

impl Streams {
    /// Streams of at most `max` sessions' requests, `max_per_client` of them by one client.
    pub fn new(max: usize, max_per_client: usize) -> Self {
        // Start from a random point so that ids of different processes rarely collide.
        let mut seed = [0u8; 4];
        let _ = getrandom::fill(&mut seed);
        Streams {
            inner: Arc::new(Inner {
                map: Mutex::new(Records::new(max, max_per_client)),
                next: AtomicU64::new(u64::from(u32::from_le_bytes(seed)) << 16),
                bytes: AtomicUsize::new(0),
            }),
        }
    }

    /// A new stream of a session: resumable (kept, with SSE ids) when `with_ids`, until the
    /// session ends at the latest.
    pub fn open(&self, session: &StreamOwner, with_ids: bool) -> Arc<RespStream> {
        let id = self.inner.next.fetch_add(1, Ordering::Relaxed);
        let stream = Arc::new(RespStream {
            id,
            sid: session.sid().to_owned(),
            with_ids,
            state: Mutex::new(State::default()),
            notify: Notify::new(),
            readers: tokio::sync::watch::Sender::new(0),
            registry: Arc::downgrade(&self.inner),
        });
        if with_ids && let Ok(mut map) = self.inner.map.lock() {
            map.insert(
                id,
                stream.clone(),
                session.expires_at(),
                session.owner(),
                Instant::now(),
            );
        }
        stream
    }

    /// Resolves a `Last-Event-ID` of a session: the stream and the item to resume from.
    pub fn resume(&self, sid: &str, last_event_id: &str) -> Option<(Arc<RespStream>, usize)> {
        let (stream, seq) = last_event_id.trim().split_once('.')?;
        let stream: u64 = stream.parse().ok()?;
        // A client's number: checked, never trusted to be small.
        let from = seq.parse::<usize>().ok()?.checked_add(1)?;
        let s = self
            .inner
            .map
            .lock()
            .ok()?
            .get(&stream, Instant::now())
            .cloned()?;
        (s.sid == sid).then_some((s, from))
    }

    /// The bytes all streams hold.
    #[cfg(test)]
    fn bytes(&self) -> usize {
        self.inner.bytes.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;

    /// A 2025-11-25 session (it polls) that ends in an hour.
    fn session(sid: &str, owner: &str) -> StreamOwner {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let json =
            serde_json::json!({"i": sid, "v": "2025-11-25", "t": now, "e": now + 3600, "o": owner});
        let session: crate::server::session::Session =
            serde_json::from_str(&json.to_string()).unwrap();
        StreamOwner::of(&Arc::new(session))
    }

    #[tokio::test]
    async fn a_closed_post_stream_resumes_where_it_stopped() {
        let streams = Streams::new(100, 100);
        let s = streams.open(&session("sess", "x"), true);
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
        // A sequence number at the top of the range is no overflow: just not resumable.
        assert!(
            streams
                .resume("sess", &format!("{}.{}", s.id, usize::MAX))
                .is_none()
        );
    }

    #[test]
    fn ended_streams_are_forgotten_a_minute_after_they_end() {
        let streams = Streams::new(100, 100);
        let old = streams.open(&session("sess", "x"), true);
        let running = streams.open(&session("sess", "x"), true);
        old.finish();
        streams.inner.expire(old.id, Instant::now());
        assert!(streams.resume("sess", &format!("{}.0", old.id)).is_none());
        assert!(
            streams
                .resume("sess", &format!("{}.0", running.id))
                .is_some()
        );
    }

    /// A stream keeps at most a megabyte, all streams together at most their budget; what
    /// goes is the oldest, and the counts come back down when streams are forgotten.
    #[test]
    fn streams_are_bounded_in_bytes() {
        let streams = Streams::new(10, 10);
        let s = streams.open(&session("sess", "x"), true);
        let message = vec![b'x'; 100 << 10];
        for _ in 0..100 {
            s.push_message(&message);
        }
        let st = s.state.lock().unwrap();
        assert!(st.bytes <= MAX_STREAM_BYTES, "{}", st.bytes);
        assert!(st.offset > 0, "the oldest went");
        drop(st);
        assert!(streams.bytes() <= MAX_STREAM_BYTES);
        let kept = streams.bytes();
        drop(s);
        streams
            .inner
            .map
            .lock()
            .unwrap()
            .purge(Instant::now() + Duration::from_secs(7200));
        assert!(streams.bytes() < kept);
    }

    /// One client's streams do not push out another's.
    #[test]
    fn streams_are_bounded_per_client() {
        let streams = Streams::new(100, 5);
        let victim = streams.open(&session("v", "victim"), true);
        for i in 0..50 {
            streams.open(&session(&format!("a{i}"), "attacker"), true);
        }
        assert!(streams.resume("v", &format!("{}.0", victim.id)).is_some());
    }

    #[tokio::test]
    async fn readers_wait_for_frames() {
        let streams = Streams::new(100, 100);
        let s = streams.open(&session("sess", "x"), false);
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
