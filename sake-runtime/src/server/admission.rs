//! Admission: what a request may take of the server before it runs, and what a client may make
//! the server hold.
//!
//! One service owns every budget the front draws from: the request slots (global, per
//! session, per caller), the bytes of requests in flight, the stream slots, the bytes of state
//! held per client and in all (subscriptions, listen filters), and the memory watermark past
//! which no new state is kept. A full global budget is 503; a session or caller over its share
//! is 429, so one client cannot take what all share. Whose share a request takes is its
//! [`Key`]: the caller's principal digest ([`Callers`](super::callers::Callers) computes it
//! once per request), else its network address.

use std::sync::Arc;

use crate::limits::Limits;
use crate::protocol::jsonrpc::{self, RpcError};
use crate::quota::{self, Flight, Held, Key, Over, PeerAddr, Refused, Slot};

use super::callers::Callers;
use super::front::port::{busy, too_many};
use super::memory;

/// The budgets of the server (see the module's documentation).
pub(crate) struct Admission {
    limits: Limits,
    /// Requests being served: bounded by `max_concurrent_requests` (counted without a
    /// lock, as the bytes in flight are).
    requests: Arc<quota::Pool>,
    /// Each session's and caller's share of the request slots (a caller's with the bytes of
    /// its requests in flight), each caller's of the stream slots, and the keys they are
    /// counted under.
    requests_by: Arc<quota::Quotas>,
    streams_by: Arc<quota::Quotas>,
    /// Bytes of state held per client, and in all ([`Admission::hold`]).
    held_by: Arc<quota::Quotas>,
    /// Bytes of requests in flight in all (each client's are in its `requests_by` share).
    request_bytes: Arc<quota::Pool>,
    /// Past it, no new state is kept (`Limits::memory_watermark`).
    memory: memory::Watermark,
    keys: quota::Keys,
    /// Long-lived streams: bounded by `max_streams`.
    streams_open: Arc<quota::Pool>,
    /// Who a request comes from: a signed-in caller's share is its principal's.
    callers: Arc<Callers>,
}

impl Admission {
    pub(crate) fn new(limits: &Limits, callers: Arc<Callers>) -> Admission {
        Admission {
            callers,
            requests: Arc::new(quota::Pool::new(limits.max_concurrent_requests)),
            requests_by: Arc::default(),
            streams_by: Arc::default(),
            held_by: Arc::default(),
            request_bytes: Arc::new(quota::Pool::new(limits.max_request_bytes)),
            memory: memory::Watermark::new(
                limits
                    .memory_watermark
                    .unwrap_or_else(memory::Watermark::default_limit),
            ),
            keys: quota::Keys::default(),
            streams_open: Arc::new(quota::Pool::new(limits.max_streams)),
            limits: limits.clone(),
        }
    }

    /// Whose share of the request, stream and body budgets a request takes: its caller's
    /// principal digest ([`Callers::principal_of`]) when there is one, else the network
    /// address (kept in memory only, never in a token).
    pub(crate) fn caller_key(&self, extensions: &http::Extensions) -> Key {
        if let Some(p) = self.callers.principal_of(extensions) {
            return self.keys.of(("p", p.as_str()));
        }
        match extensions.get::<PeerAddr>() {
            Some(PeerAddr { key: Some(key), .. }) => *key,
            Some(PeerAddr { ip, key: None }) => self.address_key(*ip),
            None => self.keys.of("local"),
        }
    }

    /// The quota key of an anonymous network address (its network: `client_network`).
    pub(crate) fn address_key(&self, ip: std::net::IpAddr) -> Key {
        self.keys.of(("a", self.client_network(ip)))
    }

    /// The network an anonymous caller's address stands for: an IPv4 address (an IPv4-mapped
    /// IPv6 one too), or the `Limits::ipv6_client_prefix` of an IPv6 one.
    pub(crate) fn client_network(&self, ip: std::net::IpAddr) -> std::net::IpAddr {
        quota::client_network(ip, self.limits.ipv6_client_prefix)
    }

    /// Slots for `n` requests (a batch takes one per message) among `max_concurrent_requests`,
    /// `max_requests_per_session` of `session` and `max_requests_per_client` of `caller`
    /// ([`caller_key`](Admission::caller_key)), held until the requests' work ends. A full
    /// global budget is 503; a session or caller over its share is 429, so one client cannot
    /// take the slots of all.
    ///
    /// The slot holds the `bytes` of the message too, among the caller's
    /// `max_request_bytes_per_client` and everyone's `max_request_bytes`
    /// ([`flight`](Admission::flight)).
    pub(crate) fn request_slots(
        &self,
        n: usize,
        bytes: usize,
        session: Option<&str>,
        caller: Key,
    ) -> Result<Slot, RpcError> {
        let session = session.map(|sid| self.session_key(sid));
        self.request_slots_of(n, bytes, session, caller)
    }

    /// The quota key of a session (or of a held connection, which is one), named by its id:
    /// made once per session ([`Session::quota_key`](super::session::Session::quota_key)) rather
    /// than for every request.
    pub(crate) fn session_key(&self, sid: &str) -> Key {
        self.keys.of(("s", sid))
    }

    /// [`request_slots`](Admission::request_slots) of a session whose quota key is made
    /// ([`session_key`](Admission::session_key)).
    pub(crate) fn request_slots_of(
        &self,
        n: usize,
        bytes: usize,
        session: Option<Key>,
        caller: Key,
    ) -> Result<Slot, RpcError> {
        let n = n.max(1);
        let batch = if n > 1 {
            format!("; the batch counts {n}")
        } else {
            String::new()
        };
        let session_limit = self.limits.max_requests_per_session;
        // The session's share and the client's, under one lock.
        let session = session.map(|key| (key, session_limit));
        let limit = self.limits.max_requests_per_client;
        let byte_limit = self.limits.max_request_bytes_per_client;
        let client = self
            .requests_by
            .take_with_second(caller, (n, limit), (bytes, byte_limit), session)
            .map_err(|refused| match refused {
                Refused::Second(held) => too_many(&format!(
                    "this session has {held} requests running and may have {session_limit} (Limits::max_requests_per_session){batch}"
                )),
                Refused::Units(held) => too_many(&format!(
                    "this client has {held} requests running and may have {limit} (Limits::max_requests_per_client){batch}"
                )),
                Refused::Bytes(held) => self.flight_refused(Over::Own(held), bytes),
            })?;
        let drawn = self
            .request_bytes
            .draw(bytes)
            .ok_or_else(|| self.flight_refused(Over::All, bytes))?;
        let running = self.requests.draw(n).ok_or_else(|| {
            busy(&format!(
                "{} concurrent requests",
                self.limits.max_concurrent_requests
            ))
        })?;
        Ok(Slot::new(running, client, Some(drawn)))
    }

    /// `bytes` of a request in flight for `caller`: -32000 with 429 past the caller's
    /// `max_request_bytes_per_client`, 503 past everyone's `max_request_bytes`.
    pub(crate) fn flight(&self, caller: Key, bytes: usize) -> Result<Flight, RpcError> {
        let limit = self.limits.max_request_bytes_per_client;
        Flight::take(&self.requests_by, &self.request_bytes, caller, bytes, limit)
            .map_err(|over| self.flight_refused(over, bytes))
    }

    /// Grows `flight` to `total` bytes (a body still arriving), under the same limits.
    pub(crate) fn grow_flight(&self, flight: &mut Flight, total: usize) -> Result<(), RpcError> {
        let limit = self.limits.max_request_bytes_per_client;
        flight
            .grow_to(total, limit)
            .map_err(|over| self.flight_refused(over, total))
    }

    fn flight_refused(&self, over: Over, bytes: usize) -> RpcError {
        match over {
            Over::Own(held) => too_many(&format!(
                "this request needs {bytes} bytes, and this client has {held} bytes of requests in flight and may have {} (Limits::max_request_bytes_per_client)",
                self.limits.max_request_bytes_per_client
            )),
            Over::All => busy(&format!(
                "{} bytes of requests in flight",
                self.request_bytes.limit()
            )),
        }
    }

    /// A slot among `max_streams` and the `max_streams_per_client` of `caller`, held by a
    /// long-lived stream until it ends.
    pub(crate) fn stream_slot(&self, caller: Key) -> Result<Slot, RpcError> {
        let limit = self.limits.max_streams_per_client;
        let share = self.streams_by.take(caller, 1, limit).map_err(|held| {
            too_many(&format!(
                "this client has {held} streams open and may have {limit} (Limits::max_streams_per_client)"
            ))
        })?;
        let open = self
            .streams_open
            .draw(1)
            .ok_or_else(|| busy(&format!("{} open streams", self.limits.max_streams)))?;
        Ok(Slot::new(open, share, None))
    }

    /// `bytes` of state for the client `caller` (`what` names it in the refusal): -32000 with
    /// 429 past the client's share, 503 past everyone's, and 503 past the memory watermark.
    pub(crate) fn hold(&self, caller: Key, bytes: usize, what: &str) -> Result<Held, RpcError> {
        self.check_memory(what)?;
        let limits = &self.limits;
        let limit = limits.max_held_bytes_per_client;
        let mine = self.held_by.take(caller, bytes, limit).map_err(|held| {
            RpcError::new(
                jsonrpc::code::TRANSPORT_REFUSED,
                format!(
                    "Too Many Requests: {what} needs {bytes} bytes, and this client already has the server keep {held} of its {limit} (Limits::max_held_bytes_per_client); unsubscribe or close a stream first"
                ),
            )
            .with_status(429)
        })?;
        let all = self
            .held_by
            .take(self.keys.of("held in all"), bytes, limits.max_held_bytes)
            .map_err(|_| {
                busy(&format!(
                    "{} bytes of subscriptions and streams",
                    limits.max_held_bytes
                ))
            })?;
        Ok(Held::new(mine, all))
    }

    /// -32000 with 503 when the process is past its memory watermark: `what` (new state) is
    /// not kept.
    pub(crate) fn check_memory(&self, what: &str) -> Result<(), RpcError> {
        self.memory.check().map_err(|(resident, limit)| {
            tracing::warn!(resident, limit, "past the memory watermark: {what} refused");
            busy(&format!(
                "memory ({resident} bytes resident, past the watermark of {limit}: Limits::memory_watermark); {what} is not kept"
            ))
        })
    }
}
