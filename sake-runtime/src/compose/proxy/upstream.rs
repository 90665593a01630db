//! The [`Upstream`] builder: where a remote server is, how it is reached, its bounds.

use super::*;

/// How long an upstream may take to answer one request, by default.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a fetched list is served before it is fetched again, by default (a
/// `list_changed` of the upstream refetches it at once).
const DEFAULT_LIST_TTL: Duration = Duration::from_secs(300);
/// How many bytes an upstream's list (its pages together) or result may have, by default.
const DEFAULT_MAX_BODY: usize = 16 * 1024 * 1024;

/// Where an upstream is.
#[derive(Clone, Debug)]
pub(super) enum Target {
    Url(String),
    Command(Vec<String>),
}

/// How the gateway authorizes its requests to an upstream: an [`Auth`] of its own.
#[derive(Clone)]
pub(super) struct Credentials(pub(super) Arc<dyn Auth>);

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Credentials(…)")
    }
}

/// A remote MCP server to serve (`Server::proxy`): a Streamable HTTP URL or a stdio command,
/// with the revision spoken to it, its credentials and its bounds.
///
/// The upstream gets its own credentials ([`header`](Self::header), or an OAuth client of the
/// gateway's own with [`auth`](Self::auth)), never the token of the client that calls through
/// this server: the spec forbids token passthrough (the upstream would accept a token issued
/// for another resource). See docs/composition.md, "Credentials".
///
/// A command's process that exits is started again with backoff (100 ms, doubling up to
/// 30 s; see docs/composition.md, "Failure behaviour").
#[derive(Clone, Debug)]
pub struct Upstream {
    pub(super) target: Target,
    pub(super) revision: Option<Revision>,
    pub(super) headers: Vec<(HeaderName, HeaderValue)>,
    pub(super) auth: Option<Credentials>,
    /// Calls go as the signed-in user (`as_signed_in_user`).
    #[cfg(feature = "auth-proxy")]
    pub(super) as_user: bool,
    pub(super) timeout: Duration,
    pub(super) list_ttl: Duration,
    pub(super) max_body_bytes: usize,
    /// Its tools' transforms and filter.
    pub(super) reshape: Reshape,
}

impl Upstream {
    fn new(target: Target) -> Self {
        Upstream {
            target,
            revision: None,
            headers: Vec::new(),
            auth: None,
            #[cfg(feature = "auth-proxy")]
            as_user: false,
            timeout: DEFAULT_TIMEOUT,
            list_ttl: DEFAULT_LIST_TTL,
            max_body_bytes: DEFAULT_MAX_BODY,
            reshape: Reshape::default(),
        }
    }

    /// A server at a Streamable HTTP endpoint (`http://127.0.0.1:3000/mcp`).
    pub fn url(url: impl Into<String>) -> Self {
        Upstream::new(Target::Url(url.into()))
    }

    /// A server run as a child process, spoken to over stdio: `program` with `args`.
    pub fn command(
        program: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        let mut line = vec![program.into()];
        line.extend(args.into_iter().map(Into::into));
        Upstream::new(Target::Command(line))
    }

    /// A command line split at whitespace (no quoting): `node server.js --stdio`. `None`
    /// for an empty line.
    pub fn command_line(line: &str) -> Option<Self> {
        let words: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
        (!words.is_empty()).then(|| Upstream::new(Target::Command(words)))
    }

    /// Speaks only `revision` to it (by default: discovery first, then the handshake).
    pub fn revision(mut self, revision: Revision) -> Self {
        self.revision = Some(revision);
        self
    }

    /// An HTTP header sent with every request to it: its credentials (`Authorization`), never
    /// a client's.
    pub fn header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.push((name, value));
        self
    }

    /// How the gateway authorizes its requests to it (HTTP): with credentials of its own,
    /// typically the OAuth client credentials grant. The [`OAuth`](crate::client::auth::OAuth)
    /// client finds the upstream's authorization server (its protected resource metadata),
    /// gets a token for the upstream (RFC 8707 `resource`) with the gateway's client id and
    /// secret (`client_secret_basic` or `_post`) or signed JWT (`private_key_jwt`), keeps it
    /// until shortly before it expires, gets a new one then, and gets a new one once when the
    /// upstream answers `401`. The token endpoint's answers are bounded in bytes and time
    /// ([`OAuthBuilder::timeout`](crate::client::auth::OAuthBuilder::timeout)); when no token
    /// can be had, this upstream's tools answer an error that says why, and the others are
    /// not affected.
    ///
    /// ```no_run
    /// use sake_runtime::client::auth::{OAuth, RegisteredClient};
    /// use sake_runtime::compose::Upstream;
    ///
    /// # fn demo() -> Result<(), sake_runtime::client::auth::OAuthError> {
    /// let id = std::env::var("WEATHER_CLIENT_ID").unwrap_or_default();
    /// let secret = std::env::var("WEATHER_CLIENT_SECRET").unwrap_or_default();
    /// let oauth = OAuth::client_credentials(RegisteredClient::with_secret(id, secret))
    ///     .scopes(["weather:read"])
    ///     .build()?;
    /// let upstream = Upstream::url("https://weather.example.com/mcp").auth(oauth);
    /// # let _ = upstream; Ok(()) }
    /// ```
    ///
    /// Never the token of the client calling through this server: the spec forbids token
    /// passthrough. A stdio command takes its credentials from its environment instead.
    pub fn auth(mut self, auth: impl Auth + 'static) -> Self {
        self.auth = Some(Credentials(Arc::new(auth)));
        self
    }

    /// Calls its tools, prompts and resources as the signed-in user (feature `auth-proxy`):
    /// with the token the authorization proxy holds for the caller at its upstream provider
    /// ([`Principal::upstream`](crate::auth::Principal::upstream); configure the proxy's
    /// provider to issue it for this upstream, e.g. with
    /// [`auth::proxy::Upstream::resource`](crate::auth::proxy::Upstream::resource)), never
    /// the token the caller presented to this server. A caller without such a sign-in is
    /// answered an error. Each user gets a connection of their own. Lists are still fetched
    /// with the gateway's own credentials ([`header`](Self::header), [`auth`](Self::auth)).
    #[cfg(feature = "auth-proxy")]
    #[cfg_attr(docsrs, doc(cfg(feature = "auth-proxy")))]
    pub fn as_signed_in_user(mut self) -> Self {
        self.as_user = true;
        self
    }

    /// The longest wait for one of its answers (60 s by default); a call it does not answer
    /// in time fails with an error that names it, and costs only its own calls.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// How long its lists are served before they are fetched again (5 minutes by default;
    /// its `list_changed` notifications refetch them at once).
    pub fn list_ttl(mut self, ttl: Duration) -> Self {
        self.list_ttl = ttl;
        self
    }

    /// The most bytes it may send for one answer, one event of a stream, or one list, its
    /// pages together (16 MiB by default).
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// Serves its tool `tool` (the name the upstream gives it) reshaped, as
    /// [`Module::transform`](crate::compose::Module::transform) does a mounted one's: renamed (under
    /// the prefix: `rename("plus")` under `math` is `math_plus`), re-titled, re-described,
    /// hidden, with arguments fixed (removed from the schema, put into every call before it
    /// is forwarded) or defaulted. Its list is remote, so a transform of a tool it does not
    /// list, or of an argument that tool does not take, cannot stop start-up: the first is
    /// logged when the list is fetched, the second leaves the tool out (logged).
    pub fn transform(mut self, tool: impl Into<String>, transform: ToolTransform) -> Self {
        self.reshape.transforms.insert(tool.into(), transform);
        self
    }

    /// Serves only the tools `filter` keeps (it reads each tool as the upstream lists it,
    /// under the upstream's own name); a call of another gets `Unknown tool`.
    pub fn filter(mut self, filter: ToolFilter) -> Self {
        self.reshape.filter = Some(filter);
        self
    }

    /// The client that reaches it, declaring the capabilities of `askable` (the questions a
    /// downstream client can answer; `None`: every kind). Each call's questions are answered
    /// by that call's client, through `Client::request_with`; a question outside any call is
    /// refused.
    pub(super) fn builder(&self, askable: Option<Askable>) -> ClientBuilder {
        let outside = || RpcError::internal("no request of this gateway is asking this upstream");
        let can = |what: u8| askable.is_none_or(|a| a.0 & what != 0);
        let mut b = ClientBuilder::new()
            .info("sake-gateway", env!("CARGO_PKG_VERSION"))
            .tasks(false)
            .timeout(self.timeout)
            .probe_timeout(self.timeout.min(Duration::from_secs(10)))
            .max_body_bytes(self.max_body_bytes)
            .max_event_bytes(self.max_body_bytes)
            // Its views pass through: this server shows them to the clients that render them.
            .apps(true);
        if can(Askable::FORM | Askable::URL) {
            b = b
                .on_elicitation(move |_| async move { Err(outside()) })
                .elicitation_url(can(Askable::URL));
        }
        if can(Askable::SAMPLING) {
            b = b.on_sampling(move |_| async move { Err(outside()) });
        }
        if can(Askable::ROOTS) {
            b = b.on_roots(move || async move { Err::<ListRootsResult, _>(outside()) });
        }
        if let Some(rev) = self.revision {
            b = b.revision(rev);
        }
        for (name, value) in &self.headers {
            b = b.header(name.clone(), value.clone());
        }
        if let Some(Credentials(auth)) = &self.auth {
            b = b.auth(Arc::clone(auth));
        }
        b
    }

    pub(super) async fn connect(
        &self,
        askable: Option<Askable>,
        pin: Option<Revision>,
    ) -> Result<Client, ClientError> {
        let mut builder = self.builder(askable);
        if let Some(rev) = pin {
            builder = builder.revision(rev);
        }
        self.open(builder).await
    }

    /// Connects with `builder`.
    pub(super) async fn open(&self, builder: ClientBuilder) -> Result<Client, ClientError> {
        match &self.target {
            Target::Url(url) => builder.connect(url).await,
            Target::Command(line) => {
                let mut command = tokio::process::Command::new(&line[0]);
                command.args(&line[1..]).kill_on_drop(true);
                builder.spawn(command).await
            }
        }
    }

    /// Whether it is a child process (started again with backoff when it exits).
    pub(super) fn is_command(&self) -> bool {
        matches!(self.target, Target::Command(_))
    }

    pub(super) fn describe(&self) -> String {
        match &self.target {
            Target::Url(url) => url.clone(),
            Target::Command(line) => line.join(" "),
        }
    }
}
