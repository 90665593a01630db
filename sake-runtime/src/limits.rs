//! The bounds on what clients can make a server hold or do at once, as one value
//! ([`Limits`]): sizes, concurrency, per-client shares, buffers and timeouts. The defaults suit
//! a server on the open internet; the builder keeps the common ones one call away
//! (`Server::max_body_bytes`, `Server::max_concurrent_requests`, `Server::request_timeout`)
//! and changes the rest with `Server::limits`.

use std::time::Duration;

/// The bounds on what clients can make the server hold or do at once.
///
/// Every bound applies on every transport and revision. A "client" is the authenticated
/// caller (its principal), else its network address (behind a proxy, see
/// `Server::client_ip_header`).
///
/// Change them with `Server::limits`, which hands you the current ones:
///
/// ```
/// use std::time::Duration;
///
/// let server = sake::Server::from_registry()
///     .limits(|l| l.max_requests_per_client(64).body_timeout(Duration::from_secs(10)));
/// # let _ = server;
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Limits {
    pub(crate) max_body_bytes: usize,
    pub(crate) max_batch: usize,
    pub(crate) max_concurrent_requests: usize,
    pub(crate) max_requests_per_session: usize,
    pub(crate) max_requests_per_client: usize,
    pub(crate) max_streams: usize,
    pub(crate) max_streams_per_client: usize,
    pub(crate) max_bodies_in_flight: usize,
    pub(crate) max_bodies_per_client: usize,
    pub(crate) min_body_rate: u64,
    pub(crate) max_pending_inputs: usize,
    pub(crate) max_pending_inputs_per_session: usize,
    pub(crate) max_tracked_sessions: usize,
    pub(crate) max_records_per_client: usize,
    pub(crate) max_subscriptions_per_session: usize,
    pub(crate) max_held_bytes_per_client: usize,
    pub(crate) max_held_bytes: usize,
    pub(crate) max_task_request_bytes: usize,
    pub(crate) max_request_bytes_per_client: usize,
    pub(crate) max_request_bytes: usize,
    pub(crate) max_connections: usize,
    pub(crate) max_connections_per_client: usize,
    pub(crate) ipv6_client_prefix: u8,
    /// `None`: 80% of the machine's (or cgroup's) memory; `Some(None)`: no watermark.
    pub(crate) memory_watermark: Option<Option<u64>>,
    pub(crate) event_buffer: usize,
    pub(crate) stream_buffer: usize,
    pub(crate) request_timeout: Duration,
    pub(crate) body_timeout: Duration,
    pub(crate) header_timeout: Duration,
    pub(crate) input_timeout: Duration,
    pub(crate) detached_grace: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body_bytes: 4 * 1024 * 1024,
            max_batch: 256,
            max_concurrent_requests: 4096,
            max_requests_per_session: 256,
            max_requests_per_client: 1024,
            max_streams: 16_384,
            max_streams_per_client: 1024,
            max_bodies_in_flight: 1024,
            max_bodies_per_client: 64,
            min_body_rate: 4096,
            max_pending_inputs: 10_000,
            max_pending_inputs_per_session: 64,
            max_tracked_sessions: 100_000,
            max_records_per_client: 10_000,
            max_subscriptions_per_session: 1024,
            max_held_bytes_per_client: 1 << 20,
            max_held_bytes: 256 << 20,
            max_task_request_bytes: 64 << 10,
            max_request_bytes_per_client: 32 << 20,
            max_request_bytes: 256 << 20,
            max_connections: 32_768,
            max_connections_per_client: 2048,
            ipv6_client_prefix: 64,
            memory_watermark: None,
            event_buffer: 1024,
            stream_buffer: 64,
            request_timeout: Duration::from_secs(600),
            body_timeout: Duration::from_secs(30),
            header_timeout: Duration::from_secs(30),
            input_timeout: Duration::from_secs(300),
            detached_grace: Duration::from_secs(30),
        }
    }
}

impl Limits {
    /// The largest request body (HTTP) or message (stdio, a connection) accepted; larger
    /// ones get 413 (HTTP) or -32600. Defaults to 4 MiB.
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// The most messages a 2025-03-26 batch may hold. Defaults to 256; each message takes a
    /// request slot (see [`max_requests_per_session`](Self::max_requests_per_session)).
    pub fn max_batch_size(mut self, messages: usize) -> Self {
        self.max_batch = messages.max(1);
        self
    }

    /// The most requests served at once; more get 503 with `Retry-After`. Defaults to 4096.
    pub fn max_concurrent_requests(mut self, requests: usize) -> Self {
        self.max_concurrent_requests = requests.max(1);
        self
    }

    /// The most requests one handshake session (or stdio connection) runs at once; more get
    /// 429 with `Retry-After`. A 2025-03-26 batch counts one per message. Defaults to 256.
    pub fn max_requests_per_session(mut self, requests: usize) -> Self {
        self.max_requests_per_session = requests.max(1);
        self
    }

    /// The most requests one client runs at once, over all its sessions. More get 429.
    /// Defaults to 1024.
    pub fn max_requests_per_client(mut self, requests: usize) -> Self {
        self.max_requests_per_client = requests.max(1);
        self
    }

    /// The most long-lived streams (`subscriptions/listen`, legacy GET streams) open at once;
    /// more get 503. Defaults to 16384.
    pub fn max_streams(mut self, streams: usize) -> Self {
        self.max_streams = streams.max(1);
        self
    }

    /// The most long-lived streams one client keeps open; more get 429. Defaults to 1024.
    pub fn max_streams_per_client(mut self, streams: usize) -> Self {
        self.max_streams_per_client = streams.max(1);
        self
    }

    /// The most request bodies received at once (HTTP); more get 503. A body being received
    /// holds no request slot. Defaults to 1024.
    pub fn max_bodies_in_flight(mut self, bodies: usize) -> Self {
        self.max_bodies_in_flight = bodies.max(1);
        self
    }

    /// The most request bodies one client sends at once; more get 429. Defaults to 64.
    pub fn max_bodies_per_client(mut self, bodies: usize) -> Self {
        self.max_bodies_per_client = bodies.max(1);
        self
    }

    /// The slowest a request body may arrive, in bytes per second, once it has had 2 s; a
    /// slower one gets 408 and the connection's slot is freed. Defaults to 4096.
    pub fn min_body_rate(mut self, bytes_per_second: u64) -> Self {
        self.min_body_rate = bytes_per_second.max(1);
        self
    }

    /// The most server-to-client requests (elicitation, sampling, roots of handshake
    /// sessions) waiting for answers at once, over all sessions. A function asking beyond it
    /// gets `InputError::Unavailable`. Defaults to 10000.
    pub fn max_pending_inputs(mut self, requests: usize) -> Self {
        self.max_pending_inputs = requests.max(1);
        self
    }

    /// The most questions one handshake session has waiting for answers at once; a function
    /// asking beyond it gets `InputError::Unavailable`. Defaults to 64.
    pub fn max_pending_inputs_per_session(mut self, requests: usize) -> Self {
        self.max_pending_inputs_per_session = requests.max(1);
        self
    }

    /// How many handshake sessions the server keeps records for at once: ended sessions
    /// (refused until their ids expire), sessions holding resource subscriptions, and
    /// resumable response streams. Defaults to 100000.
    pub fn max_tracked_sessions(mut self, sessions: usize) -> Self {
        self.max_tracked_sessions = sessions.max(1);
        self
    }

    /// How many records one client may make the server keep in each table (ended sessions,
    /// resource subscriptions, log levels): when a client reaches it, its own record that
    /// expires soonest makes room, never another client's. Defaults to 10000.
    pub fn max_records_per_client(mut self, records: usize) -> Self {
        self.max_records_per_client = records.max(1);
        self
    }

    /// The most resources one handshake session may subscribe to (`resources/subscribe`);
    /// beyond it the request fails with -32603 until the session unsubscribes from one.
    /// Defaults to 1024.
    pub fn max_subscriptions_per_session(mut self, uris: usize) -> Self {
        self.max_subscriptions_per_session = uris.max(1);
        self
    }

    /// How many bytes of state one client may make the server keep while it is connected or
    /// its sessions live: the URIs of its resource subscriptions and of its open
    /// `subscriptions/listen` filters (each counted with 64 bytes of bookkeeping). A client
    /// is a signed-in principal, or an anonymous network address (an IPv6 address counts as
    /// its /64: [`ipv6_client_prefix`](Self::ipv6_client_prefix)). Past it, the subscription
    /// or stream is refused with -32000 (429 on 2026-07-28) until the client unsubscribes or
    /// closes a stream. Defaults to 1 MiB.
    pub fn max_held_bytes_per_client(mut self, bytes: usize) -> Self {
        self.max_held_bytes_per_client = bytes.max(1);
        self
    }

    /// How many bytes of such state all clients together may make the server keep; past it,
    /// new subscriptions and streams are refused with -32000 (503). Defaults to 256 MiB.
    pub fn max_held_bytes(mut self, bytes: usize) -> Self {
        self.max_held_bytes = bytes.max(1);
        self
    }

    /// The largest request a task keeps a copy of (its tool's name and arguments, to run it
    /// again when the client answers its questions): a task-augmented `tools/call` whose
    /// arguments are longer is refused with -32602, before the task is created. Defaults to
    /// 64 KiB.
    pub fn max_task_request_bytes(mut self, bytes: usize) -> Self {
        self.max_task_request_bytes = bytes;
        self
    }

    /// How many bytes of requests one client may have in flight: the messages of its requests
    /// being served (each counted by its length until its answer is sent or it is cancelled)
    /// and, over HTTP, its request bodies being received past their first 64 KiB (below that,
    /// [`max_bodies_per_client`](Self::max_bodies_per_client) bounds them). A client is a
    /// signed-in principal or an anonymous network address, as for
    /// [`max_held_bytes_per_client`](Self::max_held_bytes_per_client). Past it, a request is
    /// refused with -32000 (429) until earlier ones end; keep it above
    /// [`max_body_bytes`](Self::max_body_bytes), or the largest requests are never served.
    /// Defaults to 32 MiB.
    pub fn max_request_bytes_per_client(mut self, bytes: usize) -> Self {
        self.max_request_bytes_per_client = bytes.max(1);
        self
    }

    /// How many bytes of requests all clients together may have in flight (counted as for
    /// [`max_request_bytes_per_client`](Self::max_request_bytes_per_client)); past it, a
    /// request is refused with -32000 (503). Defaults to 256 MiB.
    pub fn max_request_bytes(mut self, bytes: usize) -> Self {
        self.max_request_bytes = bytes.max(1);
        self
    }

    /// The most TCP connections the HTTP server keeps open at once
    /// ([`Service::serve`](crate::Service::serve) and `serve_http*`); a connection beyond it
    /// gets `503 Service Unavailable` with `Retry-After: 1` and is closed at once, before
    /// anything of it is read — so a flood of connections cannot use up the process's file
    /// descriptors. Defaults to 32768 (keep it below the process's descriptor limit).
    pub fn max_connections(mut self, connections: usize) -> Self {
        self.max_connections = connections.max(1);
        self
    }

    /// The most TCP connections one network address keeps open at once (an IPv6 address
    /// counts as its /64: [`ipv6_client_prefix`](Self::ipv6_client_prefix)); beyond it, `429
    /// Too Many Requests` and the connection is closed, before a token is looked at. Behind a
    /// proxy (`Server::client_ip_header`) every connection comes from the proxy, so only
    /// [`max_connections`](Self::max_connections) applies. Each open stream is a connection
    /// over HTTP/1.1: keep it above [`max_streams_per_client`](Self::max_streams_per_client).
    /// Defaults to 2048.
    pub fn max_connections_per_client(mut self, connections: usize) -> Self {
        self.max_connections_per_client = connections.max(1);
        self
    }

    /// How many leading bits of an anonymous caller's IPv6 address make one client, for
    /// every per-client bound: whoever holds one address of a /64 usually holds all of it,
    /// so 64 by default; 128 counts every address apart. An IPv4-mapped address is its IPv4
    /// address.
    pub fn ipv6_client_prefix(mut self, bits: u8) -> Self {
        self.ipv6_client_prefix = bits.clamp(1, 128);
        self
    }

    /// The resident memory past which the server keeps no new state a client asks for —
    /// handshake sessions, subscriptions, listen streams, tasks — and answers such requests
    /// with 503 (-32000 naming this limit) until it uses less, while requests that keep
    /// nothing are still served. `None` turns it off. By default 80% of the machine's memory,
    /// or of the cgroup's limit when lower (Linux; elsewhere none).
    pub fn memory_watermark(mut self, bytes: Option<u64>) -> Self {
        self.memory_watermark = Some(bytes);
        self
    }

    /// How many notifications (list changes, resource updates) may wait for the slowest
    /// listening stream. A `subscriptions/listen` stream that falls further behind ends with
    /// its closing result, a legacy GET stream just ends; their clients reconnect. Defaults
    /// to 1024.
    pub fn event_buffer(mut self, events: usize) -> Self {
        self.event_buffer = events.max(1);
        self
    }

    /// How many notifications may wait on one response stream before the sender waits.
    /// Defaults to 64.
    pub fn stream_buffer(mut self, messages: usize) -> Self {
        self.stream_buffer = messages.max(1);
        self
    }

    /// How long one request may run before it is cancelled and answered with an error.
    /// Defaults to 10 minutes.
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// How long a client may take to send a request body (408 after). Defaults to 30 s.
    pub fn body_timeout(mut self, timeout: Duration) -> Self {
        self.body_timeout = timeout;
        self
    }

    /// How long a connection may take to send a request's head (the request line and the
    /// headers), counted from its first byte or from the end of the previous response; the
    /// connection is closed after it (slow-header attacks, idle keep-alive connections).
    /// Applies to `Service::serve` and the `serve_http*` methods, not to a router you serve
    /// yourself. Defaults to 30 s.
    pub fn header_timeout(mut self, timeout: Duration) -> Self {
        self.header_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// How long a handshake session's client has to answer an elicitation, sampling or roots
    /// request. Defaults to 5 minutes.
    pub fn input_timeout(mut self, timeout: Duration) -> Self {
        self.input_timeout = timeout;
        self
    }

    /// How long a handshake session's request runs on once nobody reads its stream (the
    /// client hung up, and has not resumed with `Last-Event-ID`); it is then cancelled, and
    /// its slot and questions released. Defaults to 30 s.
    pub fn detached_grace(mut self, grace: Duration) -> Self {
        self.detached_grace = grace;
        self
    }
}

/// The network `ip` stands for as a client: an IPv4 address as it is (an IPv4-mapped IPv6
/// address as its IPv4 address), an IPv6 address cut to its first `prefix` bits — one
/// subscriber holds a whole /64 and picks addresses in it freely, so counting each /128 apart
/// would give one client as many shares as it likes.
pub(crate) fn client_network(ip: std::net::IpAddr, prefix: u8) -> std::net::IpAddr {
    use std::net::IpAddr;
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let bits = u32::from(prefix.clamp(1, 128));
                let mask = u128::MAX << (128 - bits);
                IpAddr::V6((u128::from(v6) & mask).into())
            }
        },
    }
}
