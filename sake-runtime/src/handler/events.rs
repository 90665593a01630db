//! Server-initiated notifications: what a function (or the application) publishes, and the
//! in-process bus that carries it to every open stream that asked for it — handshake
//! sessions' GET streams and 2026-07-28 `subscriptions/listen` streams alike.
//!
//! Several replicas of one server share what they push through an [`EventBus`]: each
//! publishes its events, task changes and ended sessions there, and delivers those of the
//! others to its own streams. The default, [`LocalBus`], keeps everything in the process.

use std::sync::Arc;

use tokio::sync::broadcast;

pub use crate::signing::ReplicaKey;

/// Something clients may want to hear about.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Event {
    /// `notifications/tools/list_changed`.
    ToolsChanged,
    /// `notifications/prompts/list_changed`.
    PromptsChanged,
    /// `notifications/resources/list_changed`.
    ResourcesChanged,
    /// `notifications/resources/updated` for this URI.
    ResourceUpdated(Arc<str>),
}

impl Event {
    /// The notification's method.
    pub fn method(&self) -> &'static str {
        match self {
            Event::ToolsChanged => "notifications/tools/list_changed",
            Event::PromptsChanged => "notifications/prompts/list_changed",
            Event::ResourcesChanged => "notifications/resources/list_changed",
            Event::ResourceUpdated(_) => "notifications/resources/updated",
        }
    }
}

/// The process-local fan-out of events to listening streams.
#[derive(Debug)]
pub(crate) struct Bus {
    events: broadcast::Sender<Event>,
}

impl Bus {
    /// A bus on which the slowest listener may fall `buffer` events behind.
    pub fn new(buffer: usize) -> Arc<Bus> {
        let (events, _) = broadcast::channel(buffer.max(1));
        Arc::new(Bus { events })
    }

    pub fn publish(&self, event: Event) {
        // No receiver is not an error: nobody listens.
        let _ = self.events.send(event);
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.events.subscribe()
    }

    pub fn listeners(&self) -> usize {
        self.events.receiver_count()
    }
}

/// What one replica tells the others through an [`EventBus`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum BusMessage {
    /// A notification for listening streams: a list changed, a resource was updated.
    Event(Event),
    /// A task changed (its id): streams following it read it again from the task store.
    TaskChanged(Arc<str>),
    /// A handshake session was ended (DELETE): its id is refused until `until`.
    SessionEnded {
        /// The session's stable id.
        session: String,
        /// Who opened it (for the bounds on what a replica keeps per client).
        owner: String,
        /// When its tokens would have expired anyway (Unix seconds).
        until: u64,
    },
    /// Every session a caller opened until `at` was ended (the application signed the caller
    /// out): refused until `until`.
    SignedOut {
        /// The caller, as the digest sessions carry.
        principal: String,
        /// Sessions opened at or before this time are refused (Unix seconds).
        at: u64,
        /// When the last of them would have expired anyway (Unix seconds).
        until: u64,
    },
}

/// Carries what a replica pushes to the other replicas of the same server, and theirs to it.
///
/// The server always fans its own messages out to its own streams in-process, at the same
/// cost with any bus; [`publish`](EventBus::publish) is for the others. A bus delivers each
/// message of another replica once to [`Inbox::deliver`] and never hands a replica its own.
///
/// Implementations must not block in `publish` (it runs on the request path): queue, and drop
/// with a log line when the queue is full or the backend is down.
pub trait EventBus: Send + Sync + std::fmt::Debug + 'static {
    /// Sends a message to the other replicas.
    fn publish(&self, message: &BusMessage);

    /// Starts delivering the other replicas' messages to `inbox`. Called once, from within
    /// the Tokio runtime, when the server is built.
    fn start(&self, inbox: Inbox);

    /// Whether the bus reaches other replicas; `false` spares the server the work of
    /// publishing.
    fn is_shared(&self) -> bool {
        true
    }
}

/// The default [`EventBus`]: nothing leaves the process. One replica's listeners hear only
/// what that replica publishes.
#[derive(Clone, Copy, Debug, Default)]
pub struct LocalBus;

impl EventBus for LocalBus {
    fn publish(&self, _message: &BusMessage) {}

    fn start(&self, _inbox: Inbox) {}

    fn is_shared(&self) -> bool {
        false
    }
}

/// Where an [`EventBus`] delivers the messages of other replicas, and the key they
/// authenticate them with.
#[derive(Clone)]
pub struct Inbox {
    deliver: Arc<dyn Fn(BusMessage) + Send + Sync>,
    key: ReplicaKey,
}

impl Inbox {
    pub(crate) fn new(deliver: Arc<dyn Fn(BusMessage) + Send + Sync>, key: ReplicaKey) -> Inbox {
        Inbox { deliver, key }
    }

    /// Acts on a message of another replica: its streams hear the event, a task's followers
    /// read it again, an ended session is refused here too.
    ///
    /// A bus whose messages cross anything another party can write to (a Redis on a shared
    /// network) delivers only what [`replica_key`](Self::replica_key) authenticates.
    pub fn deliver(&self, message: BusMessage) {
        (self.deliver)(message);
    }

    /// The key the replicas of this server share (derived from the session key): a bus seals
    /// what it sends with it and opens what it receives, and drops (and logs) what does not
    /// open. See [`ReplicaKey`].
    pub fn replica_key(&self) -> &ReplicaKey {
        &self.key
    }
}

impl std::fmt::Debug for Inbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inbox").finish_non_exhaustive()
    }
}

/// Publishes notifications to connected clients. Cheap to clone; get one from
/// [`Service::notifier`](crate::Service::notifier) or [`Context::notifier`](crate::Context::notifier).
///
/// Publishing never blocks: a stream too slow to keep up is closed (its client reconnects).
/// With a shared [`EventBus`], the other replicas' streams hear it too.
#[derive(Clone, Debug)]
pub struct Notifier {
    pub(crate) bus: Arc<Bus>,
    /// The bus to the other replicas, when there is one.
    pub(crate) relay: Option<Arc<dyn EventBus>>,
}

impl Notifier {
    fn publish(&self, event: Event) {
        if let Some(relay) = &self.relay {
            relay.publish(&BusMessage::Event(event.clone()));
        }
        self.bus.publish(event);
    }

    /// The list of tools changed.
    pub fn tools_changed(&self) {
        self.publish(Event::ToolsChanged);
    }

    /// The list of prompts changed.
    pub fn prompts_changed(&self) {
        self.publish(Event::PromptsChanged);
    }

    /// The list of resources changed.
    pub fn resources_changed(&self) {
        self.publish(Event::ResourcesChanged);
    }

    /// The resource at `uri` changed: clients subscribed to it are told.
    pub fn notify_resource_updated(&self, uri: impl Into<String>) {
        self.publish(Event::ResourceUpdated(Arc::from(uri.into())));
    }

    /// How many streams of this process currently listen (legacy GET streams and 2026-07-28
    /// subscriptions).
    pub fn listeners(&self) -> usize {
        self.bus.listeners()
    }
}
