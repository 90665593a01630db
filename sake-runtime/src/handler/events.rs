//! Server-initiated notifications: what a function (or the application) publishes, and the
//! in-process bus that carries it to every open stream that asked for it — handshake
//! sessions' GET streams and 2026-07-28 `subscriptions/listen` streams alike.

use std::sync::Arc;

use tokio::sync::broadcast;

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

/// Publishes notifications to connected clients. Cheap to clone; get one from
/// [`Service::notifier`](crate::Service::notifier) or [`Context::notifier`](crate::Context::notifier).
///
/// Publishing never blocks: a stream too slow to keep up is closed (its client reconnects).
#[derive(Clone, Debug)]
pub struct Notifier {
    pub(crate) bus: Arc<Bus>,
}

impl Notifier {
    /// The list of tools changed.
    pub fn tools_changed(&self) {
        self.bus.publish(Event::ToolsChanged);
    }

    /// The list of prompts changed.
    pub fn prompts_changed(&self) {
        self.bus.publish(Event::PromptsChanged);
    }

    /// The list of resources changed.
    pub fn resources_changed(&self) {
        self.bus.publish(Event::ResourcesChanged);
    }

    /// The resource at `uri` changed: clients subscribed to it are told.
    pub fn notify_resource_updated(&self, uri: impl Into<String>) {
        self.bus
            .publish(Event::ResourceUpdated(Arc::from(uri.into())));
    }

    /// How many streams currently listen (legacy GET streams and 2026-07-28 subscriptions).
    pub fn listeners(&self) -> usize {
        self.bus.listeners()
    }
}
