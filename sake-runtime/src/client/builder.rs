//! [`ClientBuilder`]: the client's name, its handlers (and so its capabilities), its memory
//! and limits, and the way to the server (HTTP or a child process).

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use ::http::{HeaderMap, HeaderName, HeaderValue};
use serde_json::json;

use super::auth::Auth;
use super::core::{Core, Handlers};
use super::http::Http;
use super::limits::Limits;
use super::negotiate::EraCache;
use super::stdio::Stdio;
use super::{Client, ClientError, Inner, State, Transport};
use crate::protocol::Revision;
use crate::protocol::apps;
use crate::protocol::jsonrpc::RpcError;
use crate::protocol::types::{
    CreateMessageRequest, CreateMessageResult, ElicitRequest, ElicitResult, Implementation,
    ListRootsResult, Root,
};

/// How many `input_required` rounds one request may take.
const DEFAULT_MAX_ROUNDS: usize = 16;
/// How long a stdio server may take to answer the `server/discover` probe.
const DEFAULT_PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// Configures a [`Client`]: its name, its handlers, its memory and limits.
pub struct ClientBuilder {
    info: Implementation,
    handlers: Handlers,
    cache: EraCache,
    headers: HeaderMap,
    timeout: Option<Duration>,
    probe_timeout: Duration,
    max_rounds: usize,
    limits: Limits,
    pin: Option<Revision>,
    auth: Option<Arc<dyn Auth>>,
    tasks: bool,
    task_timeout: Option<Duration>,
    apps: bool,
    progress: bool,
}

impl Default for ClientBuilder {
    fn default() -> Self {
        ClientBuilder::new()
    }
}

impl std::fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("info", &self.info)
            .field("capabilities", &self.handlers.capabilities())
            .field("timeout", &self.timeout)
            .field("limits", &self.limits)
            .field("auth", &self.auth.is_some())
            .finish_non_exhaustive()
    }
}

impl ClientBuilder {
    /// A client named `sake-client` with no handlers, an [`EraCache`] of its own, no request
    /// timeout, and the default limits (each limit's method says its default).
    pub fn new() -> Self {
        ClientBuilder {
            info: Implementation::new("sake-client", env!("CARGO_PKG_VERSION")),
            handlers: Handlers::default(),
            cache: EraCache::new(),
            headers: HeaderMap::new(),
            timeout: None,
            probe_timeout: DEFAULT_PROBE_TIMEOUT,
            max_rounds: DEFAULT_MAX_ROUNDS,
            limits: Limits::default(),
            pin: None,
            auth: None,
            tasks: true,
            task_timeout: None,
            progress: false,
            apps: false,
        }
    }

    /// Authorizes HTTP requests with `auth`: usually an [`OAuth`](super::auth::OAuth), which
    /// signs in when the server answers `401` and re-authorizes with more scopes on `403`
    /// `insufficient_scope`. Not used over stdio (a stdio server takes its credentials from
    /// its environment).
    pub fn auth(mut self, auth: impl Auth + 'static) -> Self {
        self.auth = Some(Arc::new(auth));
        self
    }

    /// Speaks only `revision`: 2026-07-28 without falling back to the handshake, or a
    /// handshake revision without probing `server/discover` first (`initialize` offers it and
    /// accepts any handshake revision the server answers with). By default the client
    /// discovers and falls back.
    pub fn revision(mut self, revision: Revision) -> Self {
        self.pin = Some(revision);
        self
    }

    /// The name and version the client gives (`clientInfo`).
    pub fn info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.info = Implementation::new(name, version);
        self
    }

    /// The full `clientInfo`.
    pub fn implementation(mut self, info: Implementation) -> Self {
        self.info = info;
        self
    }

    /// Answers elicitation (`elicitation/create`): declares the `elicitation` capability (form
    /// mode). Defaults of the form's schema fill the fields an accepted answer leaves out.
    pub fn on_elicitation<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(ElicitRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ElicitResult, RpcError>> + Send + 'static,
    {
        self.handlers.elicitation = Some(Arc::new(move |req| Box::pin(f(req))));
        self
    }

    /// Also declares URL-mode elicitation (the handler then sees `mode: "url"` requests).
    pub fn elicitation_url(mut self, enabled: bool) -> Self {
        self.handlers.elicitation_url = enabled;
        self
    }

    /// Answers sampling (`sampling/createMessage`): declares the `sampling` capability.
    pub fn on_sampling<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn(CreateMessageRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CreateMessageResult, RpcError>> + Send + 'static,
    {
        self.handlers.sampling = Some(Arc::new(move |req| Box::pin(f(req))));
        self
    }

    /// Answers `roots/list`: declares the `roots` capability.
    pub fn on_roots<F, Fut>(mut self, f: F) -> Self
    where
        F: Fn() -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ListRootsResult, RpcError>> + Send + 'static,
    {
        self.handlers.roots = Some(Arc::new(move || Box::pin(f())));
        self
    }

    /// Answers `roots/list` with a fixed list.
    pub fn roots(self, roots: Vec<Root>) -> Self {
        self.on_roots(move || {
            let roots = roots.clone();
            async move { Ok(ListRootsResult::new(roots)) }
        })
    }

    /// Where the client remembers what each server speaks (default: a memory of its own).
    /// Give clients the same [`EraCache`] to let a connection skip the probe that another
    /// one already made.
    pub fn cache(mut self, cache: EraCache) -> Self {
        self.cache = cache;
        self
    }

    /// An HTTP header sent with every request. For a fixed token, prefer
    /// [`BearerToken`](super::auth::BearerToken) with [`auth`](Self::auth): its value is
    /// marked sensitive.
    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.append(name, value);
        self
    }

    /// The longest wait for one answer (none by default).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// How long a stdio server may take to answer the `server/discover` probe before the
    /// client falls back to `initialize` (10 s by default).
    pub fn probe_timeout(mut self, timeout: Duration) -> Self {
        self.probe_timeout = timeout;
        self
    }

    /// How many `input_required` rounds one request may take (16 by default; at least 1).
    /// One more is [`ClientError::TooManyRounds`].
    pub fn max_rounds(mut self, rounds: usize) -> Self {
        self.max_rounds = rounds.max(1);
        self
    }

    /// The largest message read from the server: an HTTP response body, a stdio line (16 MiB
    /// by default). Also bounds the pages of one `list_*` call together. A larger one is
    /// [`ClientError::BodyTooLarge`]; on stdio it also closes the connection (the line cannot
    /// be told apart from the next).
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.limits.max_body = bytes;
        self
    }

    /// The largest event of an event stream (16 MiB by default: an event may carry the
    /// request's result). A larger one is [`ClientError::EventTooLarge`] for the request whose
    /// stream carried it; on the session's GET stream it ends the stream, and the
    /// notification streams with it.
    pub fn max_event_bytes(mut self, bytes: usize) -> Self {
        self.limits.max_event = bytes;
        self
    }

    /// How many pages `list_tools` and the other `list_*` calls follow (100 by default; at
    /// least 1). More is [`ClientError::TooManyPages`]; a cursor the server already gave is
    /// [`ClientError::Protocol`] (its pagination loops).
    pub fn max_pages(mut self, pages: usize) -> Self {
        self.limits.max_pages = pages.max(1);
        self
    }

    /// How many requests of the server (elicitation, sampling, roots, ping) the handlers
    /// answer at once (16 by default; at least 1). On the handshake revisions, one more is
    /// answered with a JSON-RPC error (-32603) at once; on 2026-07-28, an `input_required`
    /// result with more input requests is [`ClientError::TooManyInputRequests`].
    pub fn max_server_requests(mut self, requests: usize) -> Self {
        self.limits.max_server_requests = requests.clamp(1, tokio::sync::Semaphore::MAX_PERMITS);
        self
    }

    /// How many notifications a [`Notifications`](super::Notifications) stream holds for a
    /// consumer that has not read them (1024 by default; at least 1). A consumer that falls
    /// further behind gets what was held, then the end of the stream, with
    /// [`ClientError::Lagged`]: the client never buffers more.
    pub fn notification_buffer(mut self, notifications: usize) -> Self {
        self.limits.notification_buffer = notifications.max(1);
        self
    }

    /// The shortest and longest wait before reopening a dropped event stream (500 ms and 30 s
    /// by default). The wait is the server's `retry` interval, at least `min`, doubled with
    /// jitter after each failed reopening up to `max` (a server's longer `retry` is still
    /// honoured).
    pub fn reconnect_delay(mut self, min: Duration, max: Duration) -> Self {
        self.limits.reconnect.floor = min;
        self.limits.reconnect.cap = max.max(min);
        self
    }

    /// How many reopenings of a dropped event stream may fail in a row before it is given up
    /// with [`ClientError::StreamLost`] (8 by default). A reopening fails when no stream opens,
    /// or when the stream ends within a second without a message.
    pub fn max_reconnects(mut self, attempts: usize) -> Self {
        self.limits.reconnect.max_failures = attempts;
        self
    }

    /// Whether the client takes tasks (the tasks extension of 2026-07-28; on by default): it
    /// then declares the extension on `tools/call` requests, and a server may answer a call
    /// of a long-running tool with a task, which the client follows (see
    /// [`Client::call_tool`]). Without it, such tools run within the call, or are refused.
    pub fn tasks(mut self, enabled: bool) -> Self {
        self.tasks = enabled;
        self
    }

    /// The longest [`Client::call_tool`] follows a task before it cancels it and fails with
    /// [`ClientError::Timeout`] (none by default: until the task ends or the server drops
    /// it). Each request still has [`timeout`](Self::timeout).
    pub fn task_timeout(mut self, timeout: Duration) -> Self {
        self.task_timeout = Some(timeout);
        self
    }

    /// Asks for progress on every tool call (off by default): each `tools/call` carries a
    /// `_meta.progressToken` of its own (a number, counted from 1 per client), and the
    /// `notifications/progress` the server sends with it arrive in
    /// [`Client::notifications`].
    pub fn progress(mut self, enabled: bool) -> Self {
        self.progress = enabled;
        self
    }

    /// Declares MCP Apps (`io.modelcontextprotocol/ui` with `text/html;profile=mcp-app`; off by
    /// default): for a host that renders views. Servers then list their tools with `_meta.ui`
    /// (read it with [`ToolUi::of`](crate::apps::ToolUi::of)) and the tools only views call,
    /// which the host must keep from its model; [`Client::view`] reads a tool's view. The
    /// declaration goes in `initialize` (handshake revisions) and in every request's `_meta`
    /// (2026-07-28).
    pub fn apps(mut self, enabled: bool) -> Self {
        self.apps = enabled;
        self
    }

    /// Connects to a Streamable HTTP endpoint (`http://…` or `https://…`).
    pub async fn connect(self, url: &str) -> Result<Client, ClientError> {
        let core = self.core();
        let http = Arc::new(Http::new(
            url,
            self.headers.clone(),
            Arc::clone(&core),
            self.auth.clone(),
        )?);
        self.start(core, Transport::Http(http), url.to_owned())
            .await
    }

    /// Starts a server process and talks to it over stdio (newline-delimited JSON).
    pub async fn spawn(
        self,
        command: impl Into<tokio::process::Command>,
    ) -> Result<Client, ClientError> {
        let core = self.core();
        let stdio = Stdio::spawn(command.into(), Arc::clone(&core))?;
        let key = stdio.key.clone();
        self.start(core, Transport::Stdio(stdio), key).await
    }

    /// What the transports share, with these handlers and limits.
    pub(super) fn core(&self) -> Arc<Core> {
        Arc::new(Core::new(self.handlers.clone(), self.limits))
    }

    /// Negotiates over a transport built on `core`; `key` names the server in the memory.
    pub(super) async fn start(
        self,
        core: Arc<Core>,
        transport: Transport,
        key: String,
    ) -> Result<Client, ClientError> {
        let client = self.build(core, transport, key);
        client.negotiate().await?;
        Ok(client)
    }

    fn build(self, core: Arc<Core>, transport: Transport, key: String) -> Client {
        let mut capabilities =
            serde_json::to_value(self.handlers.capabilities()).unwrap_or_else(|_| json!({}));
        if self.apps
            && let Some(caps) = capabilities.as_object_mut()
        {
            let extensions = caps.entry("extensions").or_insert_with(|| json!({}));
            if let Some(e) = extensions.as_object_mut() {
                e.insert(apps::EXTENSION.into(), apps::client_settings());
            }
        }
        Client {
            inner: Arc::new(Inner {
                capabilities,
                core,
                transport,
                key,
                cache: self.cache,
                info: self.info,
                state: RwLock::new(State::default()),
                tool_headers: Mutex::new(HashMap::new()),
                timeout: self.timeout,
                probe_timeout: self.probe_timeout,
                max_rounds: self.max_rounds,
                pin: self.pin,
                reinit: tokio::sync::Mutex::new(()),
                tasks: self.tasks,
                task_timeout: self.task_timeout,
                progress: self.progress.then(|| std::sync::atomic::AtomicU64::new(0)),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use ::http::header::AUTHORIZATION;
    use serde_json::{Value, json};

    use super::*;
    use crate::client::fake::{Reply, builder, fake, modern};
    use crate::client::limits::Reconnect;
    use crate::protocol::types::ElicitResult;

    /// The `clientCapabilities` a client built by `b` declares in `server/discover`.
    async fn declared(b: ClientBuilder) -> Value {
        let f = fake(modern(|s| Reply::result(s, json!({})))).await;
        b.connect(&f.url).await.unwrap();
        f.last("server/discover").params()["_meta"]["io.modelcontextprotocol/clientCapabilities"]
            .clone()
    }

    #[tokio::test]
    async fn a_capability_is_declared_exactly_when_its_handler_is_registered() {
        assert_eq!(declared(builder()).await, json!({}));
        let elicit = || builder().on_elicitation(|_| async { Ok(ElicitResult::decline()) });
        assert_eq!(
            declared(elicit()).await,
            json!({"elicitation": {"form": {}}})
        );
        assert_eq!(
            declared(elicit().elicitation_url(true)).await,
            json!({"elicitation": {"form": {}, "url": {}}})
        );
        // URL mode alone declares nothing: it needs the handler.
        assert_eq!(declared(builder().elicitation_url(true)).await, json!({}));
        let sampling_and_roots = builder()
            .on_sampling(|_| async { Err::<CreateMessageResult, _>(RpcError::new(-1, "no model")) })
            .roots(vec![]);
        assert_eq!(
            declared(sampling_and_roots).await,
            json!({"sampling": {}, "roots": {}})
        );
    }

    #[tokio::test]
    async fn identity_headers_and_limits_reach_the_client() {
        let f = fake(modern(|s| Reply::result(s, json!({})))).await;
        let client = builder()
            .implementation(Implementation::new("app", "2.0"))
            .header(AUTHORIZATION, HeaderValue::from_static("Bearer t"))
            .max_rounds(0)
            .probe_timeout(Duration::from_millis(5))
            .max_body_bytes(1000)
            .max_event_bytes(2000)
            .max_pages(0)
            .max_server_requests(0)
            .notification_buffer(0)
            .reconnect_delay(Duration::from_millis(7), Duration::from_millis(3))
            .max_reconnects(2)
            .connect(&f.url)
            .await
            .unwrap();
        client.request("ping", json!({})).await.unwrap();
        for s in f.posts() {
            assert_eq!(
                s.header("authorization"),
                Some("Bearer t"),
                "{}",
                s.method()
            );
            assert_eq!(
                s.params()["_meta"]["io.modelcontextprotocol/clientInfo"],
                json!({"name": "app", "version": "2.0"})
            );
        }
        assert_eq!(client.inner.max_rounds, 1);
        assert_eq!(client.inner.timeout, Some(Duration::from_secs(5)));
        assert_eq!(client.inner.probe_timeout, Duration::from_millis(5));
        assert_eq!(client.inner.pin, None);
        // Counts are at least 1; the longest wait is at least the shortest.
        assert_eq!(
            client.inner.core.limits,
            Limits {
                max_body: 1000,
                max_event: 2000,
                max_pages: 1,
                max_server_requests: 1,
                notification_buffer: 1,
                reconnect: Reconnect {
                    floor: Duration::from_millis(7),
                    cap: Duration::from_millis(7),
                    max_failures: 2,
                },
            }
        );
        let defaults = ClientBuilder::default();
        assert_eq!(
            defaults.limits,
            Limits {
                max_body: 16 << 20,
                max_event: 16 << 20,
                max_pages: 100,
                max_server_requests: 16,
                notification_buffer: 1024,
                reconnect: Reconnect {
                    floor: Duration::from_millis(500),
                    cap: Duration::from_secs(30),
                    max_failures: 8,
                },
            }
        );
        assert_eq!(defaults.max_rounds, DEFAULT_MAX_ROUNDS);
        assert_eq!(defaults.probe_timeout, DEFAULT_PROBE_TIMEOUT);
        assert_eq!(defaults.timeout, None);
        assert_eq!(
            defaults.info,
            Implementation::new("sake-client", env!("CARGO_PKG_VERSION"))
        );
    }

    #[tokio::test]
    async fn unusable_urls_and_commands_are_errors() {
        let err = Client::connect("ftp://example.com").await.unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid server URL \"ftp://example.com\": the URL must start with http:// or https://"
        );
        let err = Client::spawn(tokio::process::Command::new(
            "/nonexistent/sake-test-server",
        ))
        .await
        .unwrap_err();
        assert!(matches!(err, ClientError::Spawn(_)), "{err:?}");
    }

    #[tokio::test]
    async fn https_urls_speak_tls() {
        // A plain-HTTP server behind an https URL: the TLS handshake fails, and says so.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            while let Ok((mut s, _)) = listener.accept().await {
                let _ = s
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
                    .await;
            }
        });
        let err = builder()
            .connect(&format!("https://127.0.0.1:{port}/mcp"))
            .await
            .unwrap_err();
        match &err {
            ClientError::Network { url, message } => {
                assert_eq!(url, &format!("https://127.0.0.1:{port}/mcp"));
                assert!(message.contains("corrupt message"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }
}
