//! [`RedisBus`]: an [`EventBus`] over Redis pub/sub, with ended sessions and sign-outs also
//! kept as keys that expire with them, so that a replica that (re)connects learns those it
//! missed. Every message is sealed with the replicas' key ([`ReplicaKey`]) and carries when
//! it was sent; what does not open, or was sent too long ago, is refused and logged.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use ::redis::AsyncCommands as _;
use futures_util::StreamExt as _;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

use super::{InvalidUrl, Link, RedisConfig, Refusals, tag};
use crate::handler::events::{BusMessage, Event, EventBus, Inbox, ReplicaKey};

/// How many messages may wait to be sent to Redis; beyond, new ones are dropped (logged).
const QUEUE: usize = 4096;
/// How many queued messages go to Redis in one round trip.
const BATCH: usize = 128;
/// How often the subscription checks that Redis still answers.
const PING_EVERY: Duration = Duration::from_secs(5);
/// The longest wait between two attempts to subscribe again.
const MAX_BACKOFF: Duration = Duration::from_secs(2);
/// How far from this replica's clock a live message's sending time may be: older ones (a
/// genuine message replayed later) and ones from the future are refused.
const MAX_AGE_MS: u64 = 60_000;
/// What sealed bus messages are bound to ([`ReplicaKey::seal`]).
const CONTEXT: &str = "bus";

/// The [`EventBus`] of replicas sharing one Redis: each publishes on a channel all of them
/// subscribe to, so a listener on any replica hears what any replica publishes, once.
///
/// ```no_run
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// use sake_runtime::redis::{RedisBus, RedisTaskStore};
/// let url = std::env::var("REDIS_URL")?;
/// sake_runtime::Server::from_registry()
///     .event_bus(RedisBus::new(&url)?)
///     .task_store(RedisTaskStore::new(&url)?)
///     .serve_http("0.0.0.0:3000")
///     .await?;
/// # Ok(())
/// # }
/// ```
///
/// What it costs and how it fails:
/// - Publishing queues the message (at most 4096 wait) and returns; a task sends them in
///   batches. The in-process listeners are served as fast as without a bus.
/// - A session ended (DELETE, [`Service::end_sessions_of`](crate::Service::end_sessions_of))
///   is also written as a key that expires when the session would have, and every replica
///   reads those keys when it (re)subscribes: a replica that was cut off from Redis refuses
///   them once it is back.
/// - Redis down or restarting: events are dropped (logged once), each replica's own
///   listeners still hear its own; the subscription is retried every 0.1–2 s, and on
///   reconnecting a replica tells its listeners that every list may have changed (clients
///   list again) — missed resource updates are lost.
/// - Every message is sealed with the replicas' key ([`Inbox::replica_key`], derived from the
///   session key) and carries when it was sent: a message that does not verify (published by
///   someone else, or changed), or that was sent more than 60 s before or after this
///   replica's clock says (replayed), is refused and logged, never acted on.
pub struct RedisBus {
    inner: Arc<Inner>,
}

struct Inner {
    link: Link,
    channel: String,
    ended_prefix: String,
    signed_out_prefix: String,
    /// This replica, to skip its own messages.
    origin: String,
    /// The replicas' key, from the server when it starts the bus.
    key: OnceLock<ReplicaKey>,
    refusals: Refusals,
    queue: Mutex<Option<mpsc::Sender<Outgoing>>>,
    /// Messages are being dropped (queue full); logged once per episode.
    dropping: AtomicBool,
}

impl std::fmt::Debug for RedisBus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisBus")
            .field("channel", &self.inner.channel)
            .field("origin", &self.inner.origin)
            .finish_non_exhaustive()
    }
}

/// A message queued for Redis: its bytes, and (an ended session, a sign-out) the key that
/// keeps it until it would have expired, with that time (Unix seconds).
struct Outgoing {
    bytes: Vec<u8>,
    kept: Option<(String, u64)>,
}

/// A message as it crosses Redis (sealed: `m1.<mac>.<this as JSON>`).
#[derive(Serialize, Deserialize)]
struct Envelope {
    /// The replica that sent it.
    o: String,
    /// When it was sent (Unix milliseconds).
    #[serde(rename = "ts")]
    at: u64,
    #[serde(flatten)]
    m: Wire,
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "t")]
enum Wire {
    #[serde(rename = "tools")]
    Tools,
    #[serde(rename = "prompts")]
    Prompts,
    #[serde(rename = "resources")]
    Resources,
    #[serde(rename = "updated")]
    Updated { u: String },
    #[serde(rename = "task")]
    Task { i: String },
    #[serde(rename = "ended")]
    Ended { s: String, w: String, u: u64 },
    #[serde(rename = "out")]
    Out { p: String, a: u64, u: u64 },
}

impl Wire {
    fn from_message(m: &BusMessage) -> Wire {
        match m {
            BusMessage::Event(Event::ToolsChanged) => Wire::Tools,
            BusMessage::Event(Event::PromptsChanged) => Wire::Prompts,
            BusMessage::Event(Event::ResourcesChanged) => Wire::Resources,
            BusMessage::Event(Event::ResourceUpdated(u)) => Wire::Updated { u: u.to_string() },
            BusMessage::TaskChanged(i) => Wire::Task { i: i.to_string() },
            BusMessage::SessionEnded {
                session,
                owner,
                until,
            } => Wire::Ended {
                s: session.clone(),
                w: owner.clone(),
                u: *until,
            },
            BusMessage::SignedOut {
                principal,
                at,
                until,
            } => Wire::Out {
                p: principal.clone(),
                a: *at,
                u: *until,
            },
        }
    }

    fn into_message(self) -> BusMessage {
        match self {
            Wire::Tools => BusMessage::Event(Event::ToolsChanged),
            Wire::Prompts => BusMessage::Event(Event::PromptsChanged),
            Wire::Resources => BusMessage::Event(Event::ResourcesChanged),
            Wire::Updated { u } => BusMessage::Event(Event::ResourceUpdated(u.into())),
            Wire::Task { i } => BusMessage::TaskChanged(i.into()),
            Wire::Ended { s, w, u } => BusMessage::SessionEnded {
                session: s,
                owner: w,
                until: u,
            },
            Wire::Out { p, a, u } => BusMessage::SignedOut {
                principal: p,
                at: a,
                until: u,
            },
        }
    }
}

impl RedisBus {
    /// A bus through the Redis at `url` (`redis://[user:password@]host[:port][/db]`, or
    /// `rediss://…` for TLS with the system's roots), with the prefix `sake`. Nothing
    /// connects until the server starts it.
    pub fn new(url: &str) -> Result<RedisBus, InvalidUrl> {
        RedisBus::from_config(&RedisConfig::new(url))
    }

    /// A bus whose channel and keys start with `{prefix}`: servers (not replicas of one
    /// server) sharing one Redis need different prefixes.
    pub fn with_prefix(url: &str, prefix: &str) -> Result<RedisBus, InvalidUrl> {
        RedisBus::from_config(&RedisConfig::new(url).prefix(prefix))
    }

    /// A bus through the Redis `config` describes (its URL, prefix and TLS settings).
    pub fn from_config(config: &RedisConfig) -> Result<RedisBus, InvalidUrl> {
        let tag = tag(&config.prefix);
        let origin = crate::tasks::new_task_id()
            .map(|id| id[..16].to_owned())
            .unwrap_or_else(|| format!("pid{}", std::process::id()));
        Ok(RedisBus {
            inner: Arc::new(Inner {
                link: Link::open(config, "event bus")?,
                channel: format!("{tag}:events"),
                ended_prefix: format!("{tag}:ended:"),
                signed_out_prefix: format!("{tag}:signed-out:"),
                origin,
                key: OnceLock::new(),
                refusals: Refusals::new("event bus"),
                queue: Mutex::new(None),
                dropping: AtomicBool::new(false),
            }),
        })
    }
}

impl EventBus for RedisBus {
    fn publish(&self, message: &BusMessage) {
        let m = Wire::from_message(message);
        let kept = match &m {
            Wire::Ended { s, u, .. } => Some((format!("{}{s}", self.inner.ended_prefix), *u)),
            Wire::Out { p, u, .. } => Some((format!("{}{p}", self.inner.signed_out_prefix), *u)),
            _ => None,
        };
        let Some(key) = self.inner.key.get() else {
            tracing::debug!("event bus not started: message kept in this process");
            return;
        };
        let envelope = Envelope {
            o: self.inner.origin.clone(),
            at: crate::tasks::now_ms(),
            m,
        };
        let Ok(json) = serde_json::to_string(&envelope) else {
            return;
        };
        let bytes = key.seal(CONTEXT, &json).into_bytes();
        let queue = self
            .inner
            .queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let Some(queue) = queue else {
            tracing::debug!("event bus not started: message kept in this process");
            return;
        };
        match queue.try_send(Outgoing { bytes, kept }) {
            Ok(()) => {
                if self.inner.dropping.swap(false, Ordering::Relaxed) {
                    tracing::info!("event bus: messages flow to Redis again");
                }
            }
            Err(_) => {
                if !self.inner.dropping.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        queued = QUEUE,
                        "event bus: Redis does not keep up; messages to other replicas are dropped"
                    );
                }
            }
        }
    }

    fn start(&self, inbox: Inbox) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::error!(
                "RedisBus not started: build the Service inside a Tokio runtime; events stay in this process"
            );
            return;
        };
        let _ = self.inner.key.set(inbox.replica_key().clone());
        let (tx, rx) = mpsc::channel(QUEUE);
        {
            let mut queue = self
                .inner
                .queue
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if queue.is_some() {
                return;
            }
            *queue = Some(tx);
        }
        runtime.spawn(send(self.inner.clone(), rx));
        runtime.spawn(receive(Arc::downgrade(&self.inner), inbox));
    }
}

/// Sends queued messages, a batch per round trip: each is published, and an ended session
/// or a sign-out is also kept as a key until it would have expired.
async fn send(inner: Arc<Inner>, mut rx: mpsc::Receiver<Outgoing>) {
    let mut batch = Vec::with_capacity(BATCH);
    while rx.recv_many(&mut batch, BATCH).await > 0 {
        let mut pipe = ::redis::pipe();
        let now = crate::tasks::now_ms() / 1000;
        for out in &batch {
            pipe.publish(&inner.channel, out.bytes.as_slice()).ignore();
            if let Some((key, until)) = out.kept.as_ref().filter(|(_, u)| *u > now) {
                pipe.cmd("SET")
                    .arg(key)
                    .arg(out.bytes.as_slice())
                    .arg("EXAT")
                    .arg(*until)
                    .ignore();
            }
        }
        let result = inner
            .link
            .run(|mut conn| async move { pipe.query_async::<()>(&mut conn).await })
            .await;
        if let Err(e) = result {
            tracing::debug!(error = %e, dropped = batch.len(), "event bus: batch not sent");
        }
        batch.clear();
    }
}

/// Subscribes, and delivers what the other replicas publish; subscribes again after a fault.
async fn receive(inner: std::sync::Weak<Inner>, inbox: Inbox) {
    let mut backoff = Duration::from_millis(100);
    let mut connected_before = false;
    let mut logged = false;
    loop {
        let Some(this) = inner.upgrade() else {
            return;
        };
        match subscribe(&this).await {
            Ok((sink, stream)) => {
                backoff = Duration::from_millis(100);
                if connected_before {
                    tracing::info!("event bus: subscribed to Redis again");
                } else if logged {
                    tracing::info!("event bus: subscribed to Redis");
                }
                // What was missed while not subscribed: ended sessions and sign-outs are
                // read back; list changes may have been missed, so listeners are told.
                catch_up(&this, &inbox, connected_before).await;
                connected_before = true;
                drop(this);
                listen(&inner, &inbox, sink, stream).await;
                if inner.strong_count() == 0 {
                    return;
                }
                tracing::warn!("event bus: lost the Redis subscription; retrying");
                logged = true;
            }
            Err(e) => {
                if !logged {
                    tracing::warn!(error = %e, "event bus: cannot subscribe to Redis; events stay in this process until it can");
                    logged = true;
                }
                drop(this);
            }
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

async fn subscribe(
    inner: &Inner,
) -> Result<(::redis::aio::PubSubSink, ::redis::aio::PubSubStream), ::redis::RedisError> {
    let pubsub = tokio::time::timeout(super::CONNECT_TIMEOUT, inner.link.client.get_async_pubsub())
        .await
        .map_err(|_| timed_out())??;
    let (mut sink, stream) = pubsub.split();
    tokio::time::timeout(super::RESPONSE_TIMEOUT, sink.subscribe(&inner.channel))
        .await
        .map_err(|_| timed_out())??;
    Ok((sink, stream))
}

fn timed_out() -> ::redis::RedisError {
    ::redis::RedisError::from(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        "Redis did not answer in time",
    ))
}

/// Delivers messages until the connection fails or stops answering pings.
async fn listen(
    inner: &std::sync::Weak<Inner>,
    inbox: &Inbox,
    mut sink: ::redis::aio::PubSubSink,
    mut stream: ::redis::aio::PubSubStream,
) {
    let mut ping = tokio::time::interval(PING_EVERY);
    ping.tick().await;
    loop {
        tokio::select! {
            msg = stream.next() => {
                let Some(msg) = msg else { return };
                let Some(this) = inner.upgrade() else { return };
                let Some(envelope) = this.open(msg.get_payload_bytes(), true) else {
                    continue;
                };
                if envelope.o != this.origin {
                    inbox.deliver(envelope.m.into_message());
                }
            }
            _ = ping.tick() => {
                let pong = tokio::time::timeout(super::RESPONSE_TIMEOUT * 2, sink.ping::<String>()).await;
                if !matches!(pong, Ok(Ok(_))) {
                    return;
                }
            }
        }
    }
}

/// Reads the ended sessions and sign-outs kept in Redis into this replica; after a
/// reconnection, tells listeners that every list may have changed meanwhile.
async fn catch_up(inner: &Inner, inbox: &Inbox, reconnected: bool) {
    for prefix in [&inner.ended_prefix, &inner.signed_out_prefix] {
        let pattern = format!("{prefix}*");
        let found = inner
            .link
            .run(|mut conn| async move {
                let mut keys: Vec<String> = Vec::new();
                let mut iter = conn.scan_match::<_, String>(&pattern).await?;
                while let Some(key) = iter.next_item().await {
                    keys.push(key?);
                    if keys.len() >= 100_000 {
                        break;
                    }
                }
                drop(iter);
                let mut values: Vec<Option<Vec<u8>>> = Vec::with_capacity(keys.len());
                for chunk in keys.chunks(512) {
                    let got: Vec<Option<Vec<u8>>> = conn.mget(chunk).await?;
                    values.extend(got);
                }
                Ok(values)
            })
            .await;
        match found {
            Ok(values) => {
                for bytes in values.into_iter().flatten() {
                    // Kept until they would have expired: their age is not checked.
                    if let Some(envelope) = inner.open(&bytes, false) {
                        inbox.deliver(envelope.m.into_message());
                    }
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "event bus: could not read the ended sessions from Redis")
            }
        }
    }
    if reconnected {
        for event in [
            Event::ToolsChanged,
            Event::PromptsChanged,
            Event::ResourcesChanged,
        ] {
            inbox.deliver(BusMessage::Event(event));
        }
    }
}

impl Inner {
    /// The envelope in `bytes` when it is sealed with the replicas' key (and, when `live`,
    /// was sent within [`MAX_AGE_MS`] of now); refused and logged otherwise.
    fn open(&self, bytes: &[u8], live: bool) -> Option<Envelope> {
        let key = self.key.get()?;
        let Some(json) = std::str::from_utf8(bytes)
            .ok()
            .and_then(|sealed| key.open(CONTEXT, sealed))
        else {
            self.refusals.refused("its MAC does not verify", bytes);
            return None;
        };
        let Ok(envelope) = serde_json::from_str::<Envelope>(json) else {
            self.refusals
                .refused("authenticated, but not a message this version reads", bytes);
            return None;
        };
        if live && crate::tasks::now_ms().abs_diff(envelope.at) > MAX_AGE_MS {
            self.refusals.refused(
                "sent more than 60 s from now (a replayed message, or replicas' clocks apart)",
                bytes,
            );
            return None;
        }
        Some(envelope)
    }
}
