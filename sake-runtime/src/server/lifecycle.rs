//! The life of handshake sessions beyond one request: a session ended (DELETE, a held
//! connection closing), a caller signed out (`Service::end_sessions_of`) — here and, through
//! the relay, on every replica —, what this process holds for an ended session dropped, and
//! the notices a session's streams open with after a restart (`SAKE_PREVIOUS_LISTS`).
//!
//! It is built with the stores it acts on (the sessions, their records, pending questions and
//! requests in flight, the callers' revocation watch), which the doors and the dispatcher
//! share, and the relay it tells the other replicas through.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use super::callers::Callers;
use super::dev::Restart;
use super::hub::Hub;
use super::inflight::Inflight;
use super::session::{self, Session, Sessions};
use crate::handler::events::{BusMessage, Event, EventBus};
use crate::handler::input::Pending;
use crate::protocol::jsonrpc::RequestId;

/// The sessions' life (see the module's documentation).
pub(crate) struct Lifecycle {
    pub(super) sessions: Arc<Sessions>,
    pub(super) hub: Arc<Hub>,
    pub(super) pending: Arc<Pending>,
    pub(super) inflight: Arc<Inflight>,
    pub(super) callers: Arc<Callers>,
    /// The bus to the other replicas, when they share one.
    pub(super) relay: Option<Arc<dyn EventBus>>,
    /// What the process before this one listed: the changes its clients are told of.
    pub(super) restart: Option<Restart>,
    /// How long a session lives (`Server::session_lifetime`).
    pub(super) session_lifetime: Duration,
}

impl Lifecycle {
    /// Ends a handshake session (DELETE): here, and on every replica through the event bus.
    pub(crate) fn end_session(&self, session: &Session) {
        let until = self.sessions.end(session);
        self.forget(&session.sid);
        if let Some(relay) = &self.relay {
            relay.publish(&BusMessage::SessionEnded {
                session: session.sid.clone(),
                owner: session.owner.clone(),
                until,
            });
        }
    }

    /// Another replica ended a session: it is refused here too, and what this process holds
    /// for it is dropped.
    pub(crate) fn ended_elsewhere(&self, sid: &str, owner: &str, until: u64) {
        self.sessions.ended_until(sid, owner, until);
        self.forget(sid);
    }

    /// Drops what this process holds for an ended session: its records, its GET stream, its
    /// pending questions, its requests in flight.
    fn forget(&self, sid: &str) {
        self.hub.end_session(sid);
        self.pending.end_session(sid);
        self.inflight.cancel_scope(sid);
    }

    /// Ends every handshake session the caller named `name` opened until now, here and on
    /// every replica; its requests and streams in progress end too.
    pub(crate) fn sign_out(&self, name: &str) {
        let at = session::now_secs();
        // Under every key: a session opened before a key rotation carries the digest made
        // under the key of its day, and must end too.
        for principal in self
            .sessions
            .signer()
            .digests(crate::signing::Domain::Principal, name)
        {
            let until = self.sessions.sign_out(&principal, at);
            self.callers.revoke(&principal);
            if let Some(relay) = &self.relay {
                relay.publish(&BusMessage::SignedOut {
                    principal,
                    at,
                    until,
                });
            }
        }
    }

    /// Another replica signed a caller out (by principal digest).
    pub(crate) fn signed_out_elsewhere(&self, principal: &str, at: u64, until: u64) {
        self.sessions.signed_out_until(principal, at, until);
        self.callers.revoke(principal);
    }

    /// The notifications a session's standalone stream opens with after a restart: the lists
    /// that changed since the process before this one, for a session that process opened,
    /// once (`SAKE_PREVIOUS_LISTS`, see `dev`).
    pub(crate) fn restart_notices(&self, session: &Session) -> Vec<Bytes> {
        self.restart
            .as_ref()
            .map(|r| r.for_session(session, self.session_lifetime))
            .unwrap_or_default()
    }

    /// The same for a `subscriptions/listen` stream, tagged with its id, for the changes its
    /// filter `wants`.
    pub(crate) fn restart_listen_notices(
        &self,
        id: &RequestId,
        wants: impl Fn(&Event) -> bool,
    ) -> Vec<Bytes> {
        self.restart
            .as_ref()
            .map(|r| r.for_listen(id, wants))
            .unwrap_or_default()
    }
}
