//! The events: what the server's functions publish (list changes, resource updates), fanned
//! out to this process's listening streams and relayed to the other replicas
//! (`Server::event_bus`), and what the other replicas tell this one.
//!
//! One service owns the process's [`Bus`], the relay to the other replicas and the key they
//! authenticate their messages with. A message of another replica is acted on by what it
//! concerns: an event by the bus, a task's change by the tasks extension, an ended session
//! and a signed-out caller by the sessions' [`Lifecycle`]. The service holds those two only
//! weakly (through the relay's inbox), so that a server that is dropped is dropped whole.

use std::sync::{Arc, Weak};

use tokio::sync::broadcast;

use super::lifecycle::Lifecycle;
use super::tasks::Tasks;
use crate::handler::events::{Bus, BusMessage, Event, EventBus, Inbox, Notifier};
use crate::signing::ReplicaKey;

/// The events of a server (see the module's documentation).
pub(crate) struct Events {
    /// The process's bus and the relay to the other replicas, as functions publish to them.
    notifier: Notifier,
    /// The key the replicas authenticate bus messages and task records with.
    replica_key: ReplicaKey,
}

impl Events {
    /// A bus on which the slowest stream may fall `buffer` events behind, relayed through
    /// `relay` when the replicas share one.
    pub(crate) fn new(
        buffer: usize,
        relay: Option<Arc<dyn EventBus>>,
        replica_key: ReplicaKey,
    ) -> Events {
        Events {
            notifier: Notifier {
                bus: Bus::new(buffer),
                relay,
            },
            replica_key,
        }
    }

    /// What publishes events, here and to the other replicas.
    pub(crate) fn notifier(&self) -> &Notifier {
        &self.notifier
    }

    /// The bus to the other replicas, when they share one.
    pub(crate) fn relay(&self) -> Option<&Arc<dyn EventBus>> {
        self.notifier.relay.as_ref()
    }

    /// The events published from now on, in this process and (once the relay started) by
    /// the other replicas.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.notifier.bus.subscribe()
    }

    /// Whether the session key was configured (`Server::session_key`, `SAKE_SESSION_KEY`)
    /// rather than made at random for this process.
    pub(crate) fn key_configured(&self) -> bool {
        self.replica_key.is_configured()
    }

    /// Starts the relay: the other replicas' messages are acted on here from now on, by the
    /// sessions' `lifecycle` and the `tasks` extension.
    pub(crate) fn start(&self, lifecycle: &Arc<Lifecycle>, tasks: Option<&Arc<Tasks>>) {
        let Some(relay) = self.relay() else {
            return;
        };
        let bus = Arc::downgrade(&self.notifier.bus);
        let lifecycle = Arc::downgrade(lifecycle);
        let tasks = tasks.map(Arc::downgrade);
        relay.start(Inbox::new(
            Arc::new(move |message| receive(&bus, &lifecycle, tasks.as_ref(), message)),
            self.replica_key.clone(),
        ));
    }
}

/// A message of another replica, acted on by what it concerns (nothing once the server is
/// gone).
fn receive(
    bus: &Weak<Bus>,
    lifecycle: &Weak<Lifecycle>,
    tasks: Option<&Weak<Tasks>>,
    message: BusMessage,
) {
    match message {
        BusMessage::Event(event) => {
            if let Some(bus) = bus.upgrade() {
                bus.publish(event);
            }
        }
        BusMessage::TaskChanged(id) => {
            if let Some(tasks) = tasks.and_then(Weak::upgrade) {
                tasks.changed_elsewhere(id);
            }
        }
        BusMessage::SessionEnded {
            session,
            owner,
            until,
        } => {
            if let Some(lifecycle) = lifecycle.upgrade() {
                lifecycle.ended_elsewhere(&session, &owner, until);
            }
        }
        BusMessage::SignedOut {
            principal,
            at,
            until,
        } => {
            if let Some(lifecycle) = lifecycle.upgrade() {
                lifecycle.signed_out_elsewhere(&principal, at, until);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::Duration;

    use super::*;
    use crate::server::{Config, Shared};

    /// A relay that keeps the inbox the server starts it with, so that the test can deliver
    /// what another replica would (the Redis bus is exercised end to end by
    /// `tests/tests/redis_replicas.rs`; here the point is who holds whom).
    #[derive(Debug, Default)]
    struct KeptInbox(Mutex<Option<Inbox>>);

    impl EventBus for KeptInbox {
        fn publish(&self, _message: &BusMessage) {}
        fn start(&self, inbox: Inbox) {
            *self.0.lock().unwrap() = Some(inbox);
        }
    }

    fn server(relay: Arc<KeptInbox>) -> Arc<Shared> {
        let config = Config {
            session_key: Some(vec![7; 32]),
            ..Config::default()
        };
        let shared = Shared::new(
            crate::registry::Registry::from_defs([], [], []).unwrap(),
            config,
            Default::default(),
            None,
            #[cfg(feature = "auth")]
            None,
            None,
            Some(relay),
        )
        .unwrap();
        let shared = Arc::new(shared);
        shared
            .events
            .start(&shared.lifecycle, shared.tasks.as_ref());
        shared
    }

    #[tokio::test]
    async fn another_replicas_messages_reach_the_bus_and_the_lifecycle() {
        let relay = Arc::new(KeptInbox::default());
        let shared = server(relay.clone());
        let inbox = relay
            .0
            .lock()
            .unwrap()
            .clone()
            .expect("the relay was started");
        let mut events = shared.events.subscribe();
        inbox.deliver(BusMessage::Event(Event::ToolsChanged));
        assert_eq!(events.try_recv().unwrap(), Event::ToolsChanged);
        let watch = shared.callers.watch("digest".into());
        inbox.deliver(BusMessage::SignedOut {
            principal: "digest".into(),
            at: 1,
            until: 2,
        });
        tokio::time::timeout(Duration::from_secs(5), watch.revoked())
            .await
            .expect("a caller signed out on another replica is revoked here");
    }

    #[tokio::test]
    async fn the_relay_does_not_keep_a_dropped_server_alive() {
        let relay = Arc::new(KeptInbox::default());
        let shared = server(relay.clone());
        let inbox = relay
            .0
            .lock()
            .unwrap()
            .clone()
            .expect("the relay was started");
        let gone = Arc::downgrade(&shared);
        let lifecycle = Arc::downgrade(&shared.lifecycle);
        drop(shared);
        assert!(gone.upgrade().is_none() && lifecycle.upgrade().is_none());
        // What arrives after is dropped, without a panic.
        inbox.deliver(BusMessage::Event(Event::ToolsChanged));
        inbox.deliver(BusMessage::SessionEnded {
            session: "s".into(),
            owner: "o".into(),
            until: 1,
        });
    }
}
