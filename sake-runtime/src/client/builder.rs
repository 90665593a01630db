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
use super::negotiate::EraCache;
use super::stdio::Stdio;
use super::{Client, ClientError, Inner, State, Transport};
use crate::protocol::Revision;
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
    pin: Option<Revision>,
    auth: Option<Arc<dyn Auth>>,
    tasks: bool,
    task_timeout: Option<Duration>,
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
            .field("auth", &self.auth.is_some())
            .finish_non_exhaustive()
    }
}

impl ClientBuilder {
    /// A client named `sake-client` with no handlers, the process-wide [`EraCache`], and no
    /// request timeout.
    pub fn new() -> Self {
        ClientBuilder {
            info: Implementation::new("sake-client", env!("CARGO_PKG_VERSION")),
            handlers: Handlers::default(),
            cache: EraCache::global(),
            headers: HeaderMap::new(),
            timeout: None,
            probe_timeout: DEFAULT_PROBE_TIMEOUT,
            max_rounds: DEFAULT_MAX_ROUNDS,
            pin: None,
            auth: None,
            tasks: true,
            task_timeout: None,
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
            async move { Ok(ListRootsResult { roots }) }
        })
    }

    /// Where the client remembers what each server speaks (default: [`EraCache::global`]).
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

    /// How many `input_required` rounds one request may take (16 by default).
    pub fn max_rounds(mut self, rounds: usize) -> Self {
        self.max_rounds = rounds.max(1);
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

    /// What the transports share, with these handlers.
    pub(super) fn core(&self) -> Arc<Core> {
        Arc::new(Core::new(self.handlers.clone()))
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
        Client {
            inner: Arc::new(Inner {
                capabilities: serde_json::to_value(self.handlers.capabilities())
                    .unwrap_or_else(|_| json!({})),
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
        let defaults = ClientBuilder::default();
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
