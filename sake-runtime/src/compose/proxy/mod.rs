//! Remote servers served by this one (`Server::proxy`): an [`Upstream`] is reached with sake's
//! client (any revision: discovery first, then the handshake; or a pinned one), its lists are
//! fetched, cached and served under a prefix, and its calls forwarded with their results and
//! errors as the upstream sent them. What the upstream asks during a call (elicitation,
//! sampling, roots) is asked of the client that made the call, through the call's `Context`:
//! the era bridge (docs/composition.md).

mod bridge;
mod names;
mod upstream;

use bridge::{Askable, askable, relay};
pub use upstream::Upstream;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use ::http::{HeaderName, HeaderValue};
use serde_json::{Map, Value, json};

use super::upstream_restart::Backoff;
use crate::client::auth::Auth;
use crate::client::{
    Answerer, CallOptions, Client, ClientBuilder, ClientError, Notification, ServerRequest,
    Subscription,
};
use crate::handler::BoxFuture;
use crate::handler::context::Context;
use crate::handler::events::Notifier;
use crate::handler::input::InputError;
use crate::protocol::Revision;
use crate::protocol::jsonrpc::{RpcError, code};
use crate::protocol::meta::{CLIENT_CAPABILITIES, INPUT_KEY, LOG_LEVEL};
use crate::protocol::types::{ListRootsResult, LoggingLevel, Tool};
use crate::quota::Key;
use crate::registry::{ArgumentEdit, is_valid_tool_name};
use crate::server::source::{Following, ListKind, Listed, Placement, Source};

use super::transform::Reshape;
use super::{SEPARATOR, ToolFilter, ToolTransform, prefixed_name, prefixed_uri, unprefixed_uri};

/// A list fetched from the upstream, and when (`None`: stale, fetched again before it is
/// listed; until then its tools' listings still serve the checks of their calls — their
/// `x-mcp-header` arguments, what the layers are told — which a list change must not turn
/// off).
#[derive(Default)]
struct Cached {
    tools: Option<(Option<Instant>, Listed)>,
    prompts: Option<(Option<Instant>, Listed)>,
    resources: Option<(Option<Instant>, Listed)>,
    templates: Option<(Option<Instant>, Listed)>,
}

impl Cached {
    /// Marks every list stale.
    fn stale(&mut self) {
        for kind in [
            ListKind::Tools,
            ListKind::Prompts,
            ListKind::Resources,
            ListKind::Templates,
        ] {
            if let Some((at, _)) = self.slot(kind) {
                *at = None;
            }
        }
    }

    fn slot(&mut self, kind: ListKind) -> &mut Option<(Option<Instant>, Listed)> {
        match kind {
            ListKind::Tools => &mut self.tools,
            ListKind::Prompts => &mut self.prompts,
            ListKind::Resources => &mut self.resources,
            ListKind::Templates => &mut self.templates,
        }
    }
}

/// The connection, once made: dropped when it fails, made again on the next request.
struct Connected {
    client: Client,
    /// Follows the upstream's list changes while the connection lives.
    _watch: tokio::task::JoinHandle<()>,
}

/// One upstream served under a prefix: a [`Source`] of the engine (cheap to clone: the
/// futures of its requests hold it).
#[derive(Clone, Debug)]
pub(crate) struct Proxy(Arc<ProxyInner>);

/// What a [`Proxy`] holds.
pub(crate) struct ProxyInner {
    /// Itself, for the tasks that restart a command upstream (they end with it).
    me: Weak<ProxyInner>,
    /// When a command upstream that exited may be started again.
    restarts: Mutex<Backoff>,
    /// The signed-in users' connections (`Upstream::as_signed_in_user`).
    #[cfg(feature = "auth-proxy")]
    users: tokio::sync::Mutex<super::upstream_user::Users>,
    prefix: Option<&'static str>,
    label: &'static str,
    upstream: Upstream,
    connection: tokio::sync::Mutex<Option<Connected>>,
    cache: Arc<Mutex<Cached>>,
    notifier: Arc<OnceLock<Notifier>>,
    /// The sessions with a handshake upstream for callers that cannot answer every kind of
    /// question, by what they can answer (at most 16): a handshake upstream learns the
    /// client's capabilities once, at `initialize`.
    sessions: tokio::sync::Mutex<std::collections::HashMap<Askable, Client>>,
    /// The URIs clients follow, each followed at the upstream while a holder's part lives.
    followed: Arc<Mutex<Followed>>,
    /// What the server around it serves itself (given when the server is built).
    placed: OnceLock<Placement>,
    /// The upstream's names of its renamed tools, by the names they are served under (before
    /// the prefix).
    renamed: std::collections::HashMap<String, String>,
}

impl std::fmt::Debug for ProxyInner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy")
            .field("prefix", &self.prefix)
            .field("upstream", &self.upstream.describe())
            .finish_non_exhaustive()
    }
}

impl Drop for ProxyInner {
    fn drop(&mut self) {
        if let Ok(mut c) = self.connection.try_lock()
            && let Some(c) = c.take()
        {
            c._watch.abort();
        }
    }
}

impl Proxy {
    /// `upstream` served under `prefix` (`""`: its names as they are). The prefix is kept
    /// for the server's life (the layers name a function by a `'static` name).
    pub(crate) fn new(prefix: &str, upstream: Upstream) -> Proxy {
        let prefix: Option<&'static str> =
            (!prefix.is_empty()).then(|| &*Box::leak(prefix.to_owned().into_boxed_str()));
        let renamed = upstream
            .reshape
            .transforms
            .iter()
            .filter_map(|(own, t)| Some((t.name.clone()?, own.clone())))
            .collect();
        Proxy(Arc::new_cyclic(|me| ProxyInner {
            me: me.clone(),
            restarts: Mutex::default(),
            #[cfg(feature = "auth-proxy")]
            users: tokio::sync::Mutex::default(),
            prefix,
            label: prefix.unwrap_or("upstream"),
            upstream,
            connection: tokio::sync::Mutex::new(None),
            cache: Arc::default(),
            notifier: Arc::default(),
            followed: Arc::new(Mutex::new(Followed::new(MAX_FOLLOWED_PER_CALLER))),
            sessions: tokio::sync::Mutex::default(),
            placed: OnceLock::new(),
            renamed,
        }))
    }
}

impl ProxyInner {
    /// The connection, made if there is none; one request at a time makes it. A command
    /// whose process exited is started again only when its backoff allows: until then this
    /// answers at once that it is unavailable.
    async fn client(&self) -> Result<Client, RpcError> {
        let command = self.upstream.is_command();
        {
            let slot = self.connection.lock().await;
            if let Some(c) = slot.as_ref()
                && !(command && c.client.is_closed())
            {
                return Ok(c.client.clone());
            }
        }
        if command {
            // Its process exited before its watcher said so.
            self.forget_connection(true).await;
        }
        let mut slot = self.connection.lock().await;
        if let Some(c) = slot.as_ref() {
            return Ok(c.client.clone());
        }
        let start = if command {
            let Ok(mut restarts) = self.restarts.lock() else {
                return Err(RpcError::internal("the upstream's restart state is lost"));
            };
            if let Err((wait, why)) = restarts.may_start(tokio::time::Instant::now()) {
                return Err(RpcError::internal(format!(
                    "The upstream server `{}` is unavailable: {why}; it is started again in {} ms",
                    self.label,
                    wait.as_millis().max(1)
                )));
            }
            restarts.starting()
        } else {
            0
        };
        if start > 1 {
            tracing::info!(
                upstream = %self.upstream.describe(),
                prefix = self.label,
                start,
                "starting the upstream process again"
            );
        }
        let client = match self.upstream.connect(None, None).await {
            Ok(c) => c,
            Err(e) => {
                if command {
                    self.went_down(format!("it could not be started: {e}"));
                }
                return Err(self.unavailable(&e));
            }
        };
        tracing::info!(
            upstream = %self.upstream.describe(),
            revision = %client.revision(),
            prefix = self.label,
            "connected to the upstream server"
        );
        let watch = tokio::spawn(watch(
            client.clone(),
            Arc::clone(&self.cache),
            Arc::clone(&self.notifier),
            self.prefix,
        ));
        if command {
            if let Ok(mut restarts) = self.restarts.lock() {
                restarts.started(tokio::time::Instant::now());
            }
            // Its exit is noticed when it happens, not on the next request: the process is
            // started again on the backoff's schedule even when nobody calls.
            let closed = client.closed();
            let me = self.me.clone();
            tokio::spawn(async move {
                closed.await;
                if let Some(this) = me.upgrade()
                    && this.forget_connection(true).await
                {
                    tracing::debug!(prefix = this.label, "the upstream's connection ended");
                }
            });
        }
        *slot = Some(Connected {
            client: client.clone(),
            _watch: watch,
        });
        Ok(client)
    }

    /// A command upstream went down (its process exited, or could not be started): logged,
    /// and started again when its backoff allows, by a timer (which ends with the proxy).
    fn went_down(&self, why: String) {
        let Ok(mut restarts) = self.restarts.lock() else {
            return;
        };
        let wait = restarts.went_down(tokio::time::Instant::now(), why.clone());
        drop(restarts);
        tracing::warn!(
            upstream = %self.upstream.describe(),
            prefix = self.label,
            "the upstream process is down ({why}); starting it again in {} ms",
            wait.as_millis()
        );
        let me = self.me.clone();
        tokio::spawn(async move {
            tokio::time::sleep(wait).await;
            if let Some(this) = me.upgrade() {
                // A failure schedules the next start itself.
                let _ = this.client().await;
            }
        });
    }

    /// The client for a caller that can answer `askable`: the connection, when the upstream
    /// takes capabilities per request (2026-07-28) or the caller can answer everything; else
    /// a session of its own, declaring only those, made on first use.
    async fn client_for(&self, askable: Askable) -> Result<Client, RpcError> {
        let main = self.client().await?;
        if main.revision().features().request_meta || askable == Askable::ALL {
            return Ok(main);
        }
        let mut sessions = self.sessions.lock().await;
        if let Some(c) = sessions.get(&askable) {
            return Ok(c.clone());
        }
        let client = self
            .upstream
            .connect(Some(askable), Some(main.revision()))
            .await
            .map_err(|e| self.unavailable(&e))?;
        sessions.insert(askable, client.clone());
        Ok(client)
    }

    /// The client a call goes through, and whose it is when it is a user's: the signed-in
    /// user's own (`as_signed_in_user`), else the gateway's for a caller that can answer
    /// what `ctx`'s can.
    async fn client_of(&self, ctx: &Context) -> Result<(Client, Option<UserKey>), RpcError> {
        let askable = Askable::of(ctx.client_capabilities());
        #[cfg(feature = "auth-proxy")]
        if self.upstream.as_user {
            return self.user_client(ctx, askable).await;
        }
        Ok((self.client_for(askable).await?, None))
    }

    /// The signed-in user's connection, made with the token the authorization proxy holds
    /// for them upstream.
    #[cfg(feature = "auth-proxy")]
    async fn user_client(
        &self,
        ctx: &Context,
        askable: Askable,
    ) -> Result<(Client, Option<UserKey>), RpcError> {
        use super::upstream_user::UserToken;
        let Some((principal, session)) = ctx
            .principal()
            .and_then(|p| Some((p, p.upstream()?.clone())))
        else {
            return Err(RpcError::internal(format!(
                "The upstream server `{}` is called as the signed-in user, and this request has no sign-in of the authorization proxy",
                self.label
            )));
        };
        let key: UserKey = (
            principal.issuer().unwrap_or_default().to_owned(),
            principal.subject().to_owned(),
            askable.0,
        );
        let held = self
            .users
            .lock()
            .await
            .get(&key, &session, tokio::time::Instant::now());
        if let Some(client) = held {
            return Ok((client, Some(key)));
        }
        // Made without holding the others' connections up.
        let builder = self
            .upstream
            .builder(Some(askable))
            .auth(UserToken(session.clone()));
        let client = self
            .upstream
            .open(builder)
            .await
            .map_err(|e| self.unavailable(&e))?;
        self.users.lock().await.insert(
            key.clone(),
            session,
            client.clone(),
            tokio::time::Instant::now(),
        );
        Ok((client, Some(key)))
    }

    /// The error of a user's request: the upstream's own, or ours (the user's connection is
    /// then made again on their next request; the gateway's is not touched).
    async fn user_failed(&self, user: &UserKey, e: ClientError) -> RpcError {
        match e {
            ClientError::Rpc { error, .. } | ClientError::Handler { error, .. } => *error,
            e => {
                #[cfg(feature = "auth-proxy")]
                self.users.lock().await.forget(user);
                #[cfg(not(feature = "auth-proxy"))]
                let _ = user;
                self.unavailable(&e)
            }
        }
    }

    /// Forgets a connection that failed: the next request connects again (a command's
    /// process when its backoff allows).
    async fn drop_connection(&self) {
        self.forget_connection(false).await;
    }

    /// Forgets the connection (`closed_only`: only if it ended), with what hangs on it;
    /// whether there was one. A command upstream is then down until its restart.
    async fn forget_connection(&self, closed_only: bool) -> bool {
        let gone = {
            let mut slot = self.connection.lock().await;
            slot.take_if(|c| !closed_only || c.client.is_closed())
        };
        let Some(gone) = gone else {
            return false;
        };
        gone._watch.abort();
        let exited = gone.client.is_closed();
        drop(gone);
        self.sessions.lock().await.clear();
        // The URIs followed stay held: each follow's task ends with its upstream stream (the
        // next subscription follows the URI again), or with its last holder.
        if let Ok(mut cache) = self.cache.lock() {
            cache.stale();
        }
        if self.upstream.is_command() {
            self.went_down(if exited {
                "its process exited".to_owned()
            } else {
                "its connection failed".to_owned()
            });
        }
        true
    }

    /// Follows `uri` (the upstream's `inner`) at the upstream, telling of its updates under
    /// this server's URI, until the upstream ends the stream or `stop` fires (its last
    /// holder is gone): the upstream subscription ends with the stream, dropped.
    async fn follow_upstream(
        &self,
        uri: &str,
        inner: String,
        stop: &tokio_util::sync::CancellationToken,
    ) {
        let Ok(client) = self.client().await else {
            return;
        };
        if stop.is_cancelled() {
            return;
        }
        // Not cut short by `stop`: a subscription made is ended by dropping its stream.
        let mut stream = match client
            .subscribe(Subscription {
                resource_subscriptions: vec![inner],
                ..Subscription::default()
            })
            .await
        {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(prefix = self.label, %uri, "the upstream refused to tell of updates: {e}");
                return;
            }
        };
        loop {
            tokio::select! {
                biased;
                () = stop.cancelled() => return,
                n = stream.recv() => {
                    let Some(n) = n else {
                        return;
                    };
                    if n.method == "notifications/resources/updated"
                        && let (Some(u), Some(notifier)) = (n.uri(), self.notifier.get())
                    {
                        notifier.notify_resource_updated(self.outer_uri(u));
                    }
                }
            }
        }
    }

    /// The error a client gets when the upstream cannot be reached or did not answer.
    fn unavailable(&self, e: &ClientError) -> RpcError {
        tracing::warn!(upstream = %self.upstream.describe(), prefix = self.label, "upstream unavailable: {e}");
        // Over its byte budget: the budget is this server's to raise, not a client's.
        let why = match e {
            ClientError::BodyTooLarge { what, limit } => format!(
                "{what} is larger than {limit} bytes, its limit here; raise it with Upstream::max_body_bytes"
            ),
            ClientError::EventTooLarge { limit } => format!(
                "an event of its event stream is larger than {limit} bytes, its limit here; raise it with Upstream::max_body_bytes"
            ),
            e => e.to_string(),
        };
        RpcError::internal(format!(
            "The upstream server `{}` is unavailable: {why}",
            self.label
        ))
    }

    /// The error of a request the upstream answered or failed: its own JSON-RPC error as it
    /// sent it, or ours (the connection is then made again on the next request).
    async fn failed(&self, e: ClientError) -> RpcError {
        match e {
            ClientError::Rpc { error, .. } => *error,
            ClientError::Handler { error, .. } => *error,
            e @ (ClientError::Timeout { .. }
            | ClientError::BodyTooLarge { .. }
            | ClientError::EventTooLarge { .. }
            | ClientError::TooManyRounds { .. }
            | ClientError::TooManyInputRequests { .. }
            | ClientError::Decode { .. }) => self.unavailable(&e),
            e => {
                let error = self.unavailable(&e);
                self.drop_connection().await;
                error
            }
        }
    }

    async fn fetch(&self, kind: ListKind) -> Result<Listed, RpcError> {
        let client = self.client().await?;
        let mut listed = Listed::default();
        let got = match kind {
            ListKind::Tools => client
                .list_tools()
                .await
                .map(|tools| listed.tools = self.served_tools(tools)),
            ListKind::Prompts => client.list_prompts().await.map(|prompts| {
                listed.prompts = prompts
                    .into_iter()
                    .map(|mut p| {
                        p.name = self.outer(&p.name);
                        p
                    })
                    .filter(|p| !self.taken(ListKind::Prompts, &p.name))
                    .collect();
            }),
            ListKind::Resources => client.list_resources().await.map(|resources| {
                listed.resources = resources
                    .into_iter()
                    .map(|mut r| {
                        r.uri = self.outer_uri(&r.uri);
                        r
                    })
                    .filter(|r| !self.taken(ListKind::Resources, &r.uri))
                    .collect();
            }),
            ListKind::Templates => client.list_resource_templates().await.map(|templates| {
                listed.templates = templates
                    .into_iter()
                    .map(|mut t| {
                        t.uri_template = self.outer_uri(&t.uri_template);
                        t
                    })
                    .filter(|t| !self.taken(ListKind::Resources, &t.uri_template))
                    .collect();
            }),
        };
        match got {
            Ok(()) => Ok(listed),
            Err(e) => Err(self.failed(e).await),
        }
    }

    /// Its items of one list, from the cache or fetched (and cached).
    async fn list(&self, kind: ListKind) -> Result<Listed, RpcError> {
        if let Some(listed) = self.cached(kind) {
            return Ok(listed);
        }
        let listed = self.fetch(kind).await?;
        if let Ok(mut cache) = self.cache.lock() {
            *cache.slot(kind) = Some((Some(Instant::now()), listed.clone()));
        }
        Ok(listed)
    }

    fn cached(&self, kind: ListKind) -> Option<Listed> {
        let mut cache = self.cache.lock().ok()?;
        match cache.slot(kind) {
            Some((Some(at), listed)) if at.elapsed() < self.upstream.list_ttl => {
                Some(listed.clone())
            }
            _ => None,
        }
    }
}

/// How many resources of one upstream are followed for clients, at most.
const MAX_FOLLOWED: usize = 1024;

/// How many resources of one upstream one caller (`Admission::caller_key`: a principal, or an
/// anonymous client's network) has followed for it, at most: a caller that subscribes to
/// many leaves the others room under [`MAX_FOLLOWED`]. Past it (or past `MAX_FOLLOWED`), its
/// subscriptions are kept but not followed upstream (logged); it still hears the updates of a
/// resource another caller has followed, while that one holds it.
const MAX_FOLLOWED_PER_CALLER: usize = 128;

/// The URIs of an upstream clients follow: each followed by a task of its own (its upstream
/// subscription) while any holder's part ([`Part`], given as a [`Following`]) lives, counted
/// per caller.
struct Followed {
    uris: std::collections::HashMap<String, Follow>,
    /// How many of `uris` each caller holds a part of.
    callers: std::collections::HashMap<Key, usize>,
    /// How many one caller may hold a part of ([`MAX_FOLLOWED_PER_CALLER`]).
    share: usize,
    /// The generation of the next follow: a part of a follow that ended leaves nothing
    /// behind it.
    next: u64,
}

/// One URI followed upstream.
struct Follow {
    generation: u64,
    /// The parts each caller holds.
    holders: std::collections::HashMap<Key, usize>,
    /// Ends the follow's task (its upstream subscription with it).
    stop: tokio_util::sync::CancellationToken,
}

/// Why a URI is not followed for a caller.
#[derive(Debug, PartialEq, Eq)]
enum NotFollowed {
    /// The upstream's [`MAX_FOLLOWED`] are followed.
    Full,
    /// The caller holds its share.
    Share,
}

impl Followed {
    fn new(share: usize) -> Followed {
        Followed {
            uris: std::collections::HashMap::new(),
            callers: std::collections::HashMap::new(),
            share,
            next: 0,
        }
    }

    /// One more part of `uri` for `caller`: the follow's generation, and the token of the task
    /// to start when the part is the first (`None`: it is followed already).
    fn join(
        &mut self,
        uri: &str,
        caller: Key,
    ) -> Result<(u64, Option<tokio_util::sync::CancellationToken>), NotFollowed> {
        let held = self.callers.get(&caller).copied().unwrap_or(0);
        if let Some(f) = self.uris.get_mut(uri) {
            if !f.holders.contains_key(&caller) {
                // A URI new to the caller counts against its share, followed or not.
                if held >= self.share {
                    return Err(NotFollowed::Share);
                }
                *self.callers.entry(caller).or_default() += 1;
            }
            *f.holders.entry(caller).or_default() += 1;
            return Ok((f.generation, None));
        }
        if self.uris.len() >= MAX_FOLLOWED {
            return Err(NotFollowed::Full);
        }
        if held >= self.share {
            return Err(NotFollowed::Share);
        }
        let generation = self.next;
        self.next += 1;
        let stop = tokio_util::sync::CancellationToken::new();
        self.uris.insert(
            uri.to_owned(),
            Follow {
                generation,
                holders: std::collections::HashMap::from([(caller, 1)]),
                stop: stop.clone(),
            },
        );
        *self.callers.entry(caller).or_default() += 1;
        Ok((generation, Some(stop)))
    }

    /// A part of `uri`'s follow of `generation` for `caller` is dropped: when it was the
    /// last, the follow ends (its task is stopped, the URI forgotten). Whether it ended.
    fn leave(&mut self, uri: &str, caller: Key, generation: u64) -> bool {
        let Some(f) = self.uris.get_mut(uri) else {
            return false;
        };
        if f.generation != generation {
            return false;
        }
        let Some(mine) = f.holders.get_mut(&caller) else {
            return false;
        };
        *mine = mine.saturating_sub(1);
        if *mine > 0 {
            return false;
        }
        f.holders.remove(&caller);
        let last = f.holders.is_empty();
        self.release(caller);
        if last && let Some(f) = self.uris.remove(uri) {
            f.stop.cancel();
        }
        last
    }

    /// The task of `uri`'s follow of `generation` ended (the upstream ended its stream, or
    /// refused it): the URI is forgotten, its parts leave nothing (the next subscription
    /// follows it again).
    fn ended(&mut self, uri: &str, generation: u64) {
        if self
            .uris
            .get(uri)
            .is_some_and(|f| f.generation == generation)
            && let Some(f) = self.uris.remove(uri)
        {
            for caller in f.holders.keys() {
                self.release(*caller);
            }
        }
    }

    /// `caller` holds a part of one URI fewer.
    fn release(&mut self, caller: Key) {
        if let Some(n) = self.callers.get_mut(&caller) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.callers.remove(&caller);
            }
        }
    }
}

/// A holder's part in following one URI (a [`Following`]): dropped, it leaves the follow,
/// which ends with its last part.
struct Part {
    followed: Arc<Mutex<Followed>>,
    uri: String,
    caller: Key,
    generation: u64,
}

impl Drop for Part {
    fn drop(&mut self) {
        if let Ok(mut f) = self.followed.lock()
            && f.leave(&self.uri, self.caller, self.generation)
        {
            tracing::debug!(uri = %self.uri, "a resource is no longer followed upstream: its last subscriber is gone");
        }
    }
}

/// How many of an upstream's notifications about one call wait to be relayed, at most.
const RELAYED: usize = 256;

/// Whose connection a call went through, when a signed-in user's: issuer, subject, and what
/// the caller can answer.
type UserKey = (String, String, u8);

/// A progress token no other call of this process uses.
fn next_token() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Follows the upstream's list changes: the cached list is dropped and the clients of this
/// server are told.
async fn watch(
    client: Client,
    cache: Arc<Mutex<Cached>>,
    notifier: Arc<OnceLock<Notifier>>,
    prefix: Option<&'static str>,
) {
    let mut stream = match client
        .subscribe(Subscription::everything(Vec::<String>::new()))
        .await
    {
        Ok(s) => s,
        Err(e) => {
            tracing::debug!("the upstream's list changes cannot be followed: {e}");
            return;
        }
    };
    while let Some(n) = stream.recv().await {
        let kinds: &[ListKind] = match n.method.as_str() {
            "notifications/tools/list_changed" => &[ListKind::Tools],
            "notifications/prompts/list_changed" => &[ListKind::Prompts],
            "notifications/resources/list_changed" => &[ListKind::Resources, ListKind::Templates],
            "notifications/resources/updated" => {
                if let (Some(uri), Some(notifier)) = (n.uri(), notifier.get()) {
                    match prefix {
                        Some(p) => notifier.notify_resource_updated(prefixed_uri(p, uri)),
                        None => notifier.notify_resource_updated(uri),
                    }
                }
                continue;
            }
            _ => continue,
        };
        if let Ok(mut cache) = cache.lock() {
            for kind in kinds {
                if let Some((at, _)) = cache.slot(*kind) {
                    *at = None;
                }
            }
        }
        if let Some(notifier) = notifier.get() {
            match kinds[0] {
                ListKind::Tools => notifier.tools_changed(),
                ListKind::Prompts => notifier.prompts_changed(),
                _ => notifier.resources_changed(),
            }
        }
    }
}

impl Source for Proxy {
    fn label(&self) -> &'static str {
        self.0.label
    }

    fn attach(&self, notifier: Notifier) {
        let _ = self.0.notifier.set(notifier);
    }

    fn list(&self, kind: ListKind) -> BoxFuture<Result<Listed, RpcError>> {
        if let Some(listed) = self.0.cached(kind) {
            return Box::pin(async move { Ok(listed) });
        }
        let this = Arc::clone(&self.0);
        Box::pin(async move { this.list(kind).await })
    }

    fn task(
        &self,
        method: &'static str,
        params: Map<String, Value>,
    ) -> BoxFuture<Result<Value, RpcError>> {
        self.task_request(method, params)
    }

    fn tool_headers(&self, name: &str) -> Option<Vec<crate::protocol::headers::HeaderParam>> {
        let mut cache = self.0.cache.lock().ok()?;
        let (_, listed) = cache.slot(ListKind::Tools).as_ref()?;
        let tool = listed.tools.iter().find(|t| t.name == name)?;
        crate::protocol::headers::header_params(&tool.input_schema).ok()
    }

    fn tool_traits(&self, name: &str) -> Option<(bool, Vec<String>)> {
        let mut cache = self.0.cache.lock().ok()?;
        let (_, listed) = cache.slot(ListKind::Tools).as_ref()?;
        let t = listed.tools.iter().find(|t| t.name == name)?;
        Some((
            t.annotations.as_ref().and_then(|a| a.read_only_hint) == Some(true),
            crate::server::invoker::write_only(&t.input_schema),
        ))
    }

    fn place(&self, placement: Placement) {
        let _ = self.0.placed.set(placement);
    }

    fn edit(&self, name: &str) -> Option<ArgumentEdit> {
        let own = self.0.upstream_tool(name)?;
        self.0.upstream.reshape.transform(own)?.edit()
    }

    fn catches_all(&self) -> bool {
        self.0.prefix.is_none()
    }

    fn listed(&self, name: &str) -> bool {
        match self.0.placed.get().and_then(|p| p.pinned.as_ref()) {
            Some(pinned) => pinned.iter().any(|p| p == name),
            None => true,
        }
    }

    fn follow(&self, uri: &str, caller: Key) -> Option<Following> {
        // The upstream's own URI; its updates are told under this server's.
        let inner = self.0.inner_uri(uri)?;
        let (generation, start) = {
            let Ok(mut followed) = self.0.followed.lock() else {
                return None;
            };
            match followed.join(uri, caller) {
                Ok(joined) => joined,
                Err(NotFollowed::Full) => {
                    tracing::warn!(
                        prefix = self.0.label,
                        "{MAX_FOLLOWED} resources of this upstream are followed already: updates of {uri} are not"
                    );
                    return None;
                }
                Err(NotFollowed::Share) => {
                    tracing::warn!(
                        prefix = self.0.label,
                        "this caller has {} resources of this upstream followed already, the most one caller may: updates of {uri} are not followed for it",
                        followed.share
                    );
                    return None;
                }
            }
        };
        let part = Part {
            followed: Arc::clone(&self.0.followed),
            uri: uri.to_owned(),
            caller,
            generation,
        };
        if let Some(stop) = start {
            let this = Arc::clone(&self.0);
            let uri = uri.to_owned();
            tokio::spawn(async move {
                this.follow_upstream(&uri, inner, &stop).await;
                if let Ok(mut f) = this.followed.lock() {
                    f.ended(&uri, generation);
                }
            });
        }
        Some(Following::new(part))
    }

    fn owns(&self, kind: ListKind, key: &str) -> bool {
        let this = &self.0;
        match kind {
            ListKind::Tools => this.upstream_tool(key).is_some(),
            ListKind::Prompts => this.inner(key).is_some(),
            // Under the prefix (`scheme://prefix/…`): whether the upstream has it is its to
            // say.
            ListKind::Resources | ListKind::Templates => match this.prefix {
                None => true,
                Some(p) => unprefixed_uri(p, key).is_some(),
            },
        }
    }

    fn forward(
        &self,
        method: &'static str,
        mut params: Map<String, Value>,
        ctx: Context,
    ) -> BoxFuture<Result<Value, RpcError>> {
        let this = Arc::clone(&self.0);
        // The upstream's own names and URIs.
        let mut filtered: Option<String> = None;
        match method {
            "tools/call" => {
                if let Some(Value::String(name)) = params.get("name") {
                    let Some(own) = this.upstream_tool(name) else {
                        let e = unknown_tool(name);
                        return Box::pin(async move { Err(e) });
                    };
                    let own = own.to_owned();
                    if this.upstream.reshape.filter.is_some() {
                        filtered = Some(name.clone());
                    }
                    params.insert("name".into(), json!(own));
                }
            }
            "prompts/get" => {
                if let Some(Value::String(name)) = params.get("name")
                    && let Some(inner) = this.inner(name)
                {
                    let inner = inner.to_owned();
                    params.insert("name".into(), json!(inner));
                }
            }
            "completion/complete" => {
                if let Some(Value::Object(r)) = params.get_mut("ref") {
                    if let Some(Value::String(name)) = r.get("name")
                        && let Some(inner) = this.inner(name)
                    {
                        let inner = inner.to_owned();
                        r.insert("name".into(), json!(inner));
                    }
                    if let Some(Value::String(uri)) = r.get("uri")
                        && let Some(inner) = this.inner_uri(uri)
                    {
                        r.insert("uri".into(), json!(inner));
                    }
                }
            }
            "resources/read" | "skills/get" | "resources/directory/read" => {
                if let Some(Value::String(uri)) = params.get("uri")
                    && let Some(inner) = this.inner_uri(uri)
                {
                    params.insert("uri".into(), json!(inner));
                }
            }
            _ => {}
        }
        Box::pin(async move {
            // A filter reads the tool's listing: one it leaves out is not served.
            if let Some(name) = filtered
                && !this
                    .list(ListKind::Tools)
                    .await?
                    .tools
                    .iter()
                    .any(|t| t.name == name)
            {
                return Err(unknown_tool(&name));
            }
            let (client, user) = this.client_of(&ctx).await?;
            if client.revision().features().request_meta {
                // Per request (2026-07-28): the upstream learns what the caller can answer,
                // as if the caller asked it directly. A handshake upstream saw the gateway's
                // capabilities once, at `initialize`: every kind of question.
                let mut caps = askable(ctx.client_capabilities());
                // A caller that takes tasks lets the upstream run the call as one: the gateway
                // relays it (server/tasks.rs, "Relayed tasks").
                // (Not as the signed-in user: a task's later requests carry no caller to
                // choose the user's connection by.)
                #[cfg(feature = "auth-proxy")]
                let as_user = this.upstream.as_user;
                #[cfg(not(feature = "auth-proxy"))]
                let as_user = false;
                if method == "tools/call"
                    && !as_user
                    && client.revision().features().tasks
                    && crate::protocol::tasks::declared(ctx.client_capabilities())
                {
                    declare_tasks(&mut caps);
                }
                let mut meta = Map::new();
                meta.insert(CLIENT_CAPABILITIES.into(), caps);
                params.insert("_meta".into(), Value::Object(meta));
            }
            // The caller's progress and log messages: the upstream's, relayed under a token
            // of the gateway's own (tokens of different callers could collide upstream).
            let token = ctx
                .progress_token()
                .map(|_| json!(format!("sake-gateway-{}", next_token())));
            let mut meta = match params.remove("_meta") {
                Some(Value::Object(m)) => m,
                _ => Map::new(),
            };
            if let Some(t) = &token {
                meta.insert("progressToken".into(), t.clone());
            }
            if client.revision().features().request_meta
                && let Some(level) = ctx.log_threshold()
            {
                meta.insert(LOG_LEVEL.into(), json!(level));
            }
            if !meta.is_empty() {
                params.insert("_meta".into(), Value::Object(meta));
            }
            let (tx, mut rx) = tokio::sync::mpsc::channel::<Option<Notification>>(RELAYED);
            let ended = tx.clone();
            let options = CallOptions::new()
                .answer_with(ProxyInner::answerer(ctx.clone()))
                .on_stream_ended(move || {
                    // `None`: the upstream ended its stream early; so does this server.
                    let _ = ended.try_send(None);
                })
                .on_notification(move |n| {
                    let ours = match n.method.as_str() {
                        "notifications/progress" => {
                            token.is_some() && n.params.get("progressToken") == token.as_ref()
                        }
                        "notifications/message" => true,
                        _ => false,
                    };
                    // Bounded: what a noisy upstream sends past it is dropped, not held.
                    if ours && tx.try_send(Some(n)).is_err() {
                        tracing::debug!("an upstream notification was dropped: the relay is full");
                    }
                });
            let call = client.request_with(method, Value::Object(params), options);
            tokio::pin!(call);
            let outcome = loop {
                tokio::select! {
                    biased;
                    Some(n) = rx.recv() => relay(&ctx, n).await,
                    outcome = &mut call => break outcome,
                }
            };
            // What came before the answer goes before it.
            while let Ok(n) = rx.try_recv() {
                relay(&ctx, n).await;
            }
            match outcome {
                Ok(mut v) => {
                    // A task keeps its kind (`RemoteTool`); a result is rendered again.
                    if let Value::Object(o) = &mut v
                        && o.get("resultType").and_then(Value::as_str) != Some("task")
                    {
                        o.remove("resultType");
                    }
                    this.outer_result(method, &mut v);
                    Ok(v)
                }
                Err(e) => {
                    let error = match user {
                        Some(user) => this.user_failed(&user, e).await,
                        None => this.failed(e).await,
                    };
                    Err(canonical(error, client.revision(), method))
                }
            }
        })
    }
}

impl Proxy {
    /// `tasks/get`, `tasks/update` or `tasks/cancel` of one of the upstream's tasks, declaring
    /// the tasks extension (the upstream refuses a request that does not).
    fn task_request(
        &self,
        method: &'static str,
        mut params: Map<String, Value>,
    ) -> BoxFuture<Result<Value, RpcError>> {
        let this = Arc::clone(&self.0);
        Box::pin(async move {
            let client = this.client().await?;
            if !client.revision().features().tasks {
                return Err(RpcError::method_not_found(method));
            }
            params.remove("_meta");
            let mut caps = Value::Object(Map::new());
            declare_tasks(&mut caps);
            let mut meta = Map::new();
            meta.insert(CLIENT_CAPABILITIES.into(), caps);
            params.insert("_meta".into(), Value::Object(meta));
            match client.request(method, Value::Object(params)).await {
                Ok(mut v) => {
                    if let Value::Object(o) = &mut v {
                        o.remove("resultType");
                    }
                    Ok(v)
                }
                Err(e) => Err(canonical(this.failed(e).await, client.revision(), method)),
            }
        })
    }
}

/// Declares the tasks extension in a `ClientCapabilities` object.
fn declare_tasks(caps: &mut Value) {
    if let Value::Object(c) = caps {
        let ext = c
            .entry("extensions")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(e) = ext {
            e.insert(crate::protocol::tasks::EXTENSION.into(), json!({}));
        }
    }
}

/// An upstream's error in the codes sake's engine uses whatever the revision (the rendering
/// gives each client its revision's: `render::error`): a missing capability and a missing
/// resource are told by different codes in the two eras.
fn canonical(mut e: RpcError, upstream: Revision, method: &str) -> RpcError {
    let f = upstream.features();
    let names_capabilities = e
        .data
        .as_ref()
        .is_some_and(|d| d.get("requiredCapabilities").is_some());
    if e.code == f.missing_capability_code && names_capabilities {
        e.code = code::MISSING_REQUIRED_CLIENT_CAPABILITY;
    } else if method == "resources/read" && e.code == f.resource_not_found_code {
        e.code = code::RESOURCE_NOT_FOUND_LEGACY;
    }
    e
}

/// The error of a call of a tool this server does not serve, as for its own.
fn unknown_tool(name: &str) -> RpcError {
    RpcError::invalid_params(format!("Unknown tool: {name}")).with_data(json!({ "name": name }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handler::events::{Bus, Event};
    use crate::handler::{Location, ResourceDef, ResourceFuture, ResourceRequest};
    use crate::registry::Registry;

    fn keys(names: &[&str]) -> Vec<Key> {
        let k = crate::quota::Keys::default();
        names.iter().map(|n| k.of(n)).collect()
    }

    /// The upstream follow starts with a URI's first part, is kept while any part lives, and
    /// ends (its task stopped, the URI forgotten) with the last one; a caller's URIs count
    /// once each against its share, however many parts it holds of them.
    #[test]
    fn a_follow_lives_as_long_as_its_parts() {
        let [a, b] = keys(&["a", "b"])[..] else {
            unreachable!()
        };
        let mut f = Followed::new(MAX_FOLLOWED_PER_CALLER);
        let (g, stop) = f.join("docs://up/readme", a).unwrap();
        let stop = stop.expect("the first part starts the follow");
        assert_eq!(f.join("docs://up/readme", a).unwrap(), (g, None));
        assert_eq!(f.join("docs://up/readme", b).unwrap(), (g, None));
        assert_eq!((f.callers[&a], f.callers[&b]), (1, 1));
        // a's two parts go: b's keeps it followed.
        assert!(!f.leave("docs://up/readme", a, g));
        assert!(!f.leave("docs://up/readme", a, g));
        assert!(!stop.is_cancelled());
        assert!(!f.callers.contains_key(&a));
        // A part already gone leaves nothing more.
        assert!(!f.leave("docs://up/readme", a, g));
        assert!(f.uris.contains_key("docs://up/readme"));
        // The last one ends it.
        assert!(f.leave("docs://up/readme", b, g));
        assert!(stop.is_cancelled());
        assert!(f.uris.is_empty() && f.callers.is_empty());
        // A new subscription follows it again, as a new follow.
        let (again, start) = f.join("docs://up/readme", b).unwrap();
        assert!(again != g && start.is_some());
    }

    /// A follow whose task ended (the upstream ended its stream) is forgotten: its parts
    /// leave nothing behind, and do not touch the follow that replaces it.
    #[test]
    fn a_follow_that_ended_is_followed_anew() {
        let [a, b] = keys(&["a", "b"])[..] else {
            unreachable!()
        };
        let mut f = Followed::new(1);
        let (old, _) = f.join("docs://up/readme", a).unwrap();
        f.ended("docs://up/readme", old);
        assert!(f.uris.is_empty() && f.callers.is_empty());
        // Its caller's share is its own again.
        let (new, start) = f.join("docs://up/readme", a).unwrap();
        assert!(start.is_some());
        f.join("docs://up/readme", b).unwrap();
        // The old part's drop and the old task's end leave the new follow alone.
        assert!(!f.leave("docs://up/readme", a, old));
        f.ended("docs://up/readme", old);
        assert_eq!(f.uris["docs://up/readme"].holders.len(), 2);
        assert!(!f.leave("docs://up/readme", a, new));
        assert!(f.leave("docs://up/readme", b, new));
    }

    /// A caller holds at most its share of the upstream's follows; the others follow theirs
    /// (a URI the caller shares with them too: past its share it is refused a part of one
    /// followed already). Past the upstream's total, nobody follows a new one.
    #[test]
    fn a_caller_holds_its_share_and_the_upstream_its_total() {
        let [greedy, other] = keys(&["greedy", "other"])[..] else {
            unreachable!()
        };
        let mut f = Followed::new(MAX_FOLLOWED_PER_CALLER);
        for i in 0..MAX_FOLLOWED_PER_CALLER {
            f.join(&format!("weather://up/c{i}/now"), greedy).unwrap();
        }
        assert_eq!(
            f.join("weather://up/more/now", greedy),
            Err(NotFollowed::Share)
        );
        let (g, start) = f.join("docs://up/readme", other).unwrap();
        assert!(start.is_some());
        assert_eq!(f.join("docs://up/readme", greedy), Err(NotFollowed::Share));
        // What it holds already, it may hold again.
        assert!(f.join("weather://up/c0/now", greedy).unwrap().1.is_none());
        assert!(f.leave("docs://up/readme", other, g));
        // The total: no caller follows a URI past it.
        let callers = keys(&["c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9"]);
        let mut n = f.uris.len();
        'fill: for c in &callers {
            for i in 0..MAX_FOLLOWED_PER_CALLER {
                if n == MAX_FOLLOWED {
                    break 'fill;
                }
                f.join(&format!("weather://up/{i}-{n}/now"), *c).unwrap();
                n += 1;
            }
        }
        assert_eq!(f.uris.len(), MAX_FOLLOWED);
        assert_eq!(
            f.join("docs://up/readme", callers[8]),
            Err(NotFollowed::Full)
        );
    }

    fn read(_: ResourceRequest, _: Context) -> ResourceFuture {
        Box::pin(async { Ok(crate::protocol::types::ReadResourceResult::default()) })
    }

    const HERE: Location = Location {
        file: file!(),
        line: line!(),
        module: module_path!(),
    };

    static README: ResourceDef = ResourceDef {
        uri: "docs://readme",
        name: "readme",
        title: None,
        description: None,
        mime_type: None,
        icons: &[],
        read,
        complete: None,
        scopes: &[],
        principal: false,
        states: Vec::new,
        location: HERE,
    };

    static WEATHER: ResourceDef = ResourceDef {
        uri: "weather://{city}/now",
        name: "weather",
        ..README
    };

    /// A sake server of a resource and a template, over HTTP on this machine: its URL, and
    /// its notifier (which counts the streams that listen to it).
    async fn upstream() -> (String, Notifier) {
        let registry = Registry::from_defs([], [], [&README, &WEATHER]).unwrap();
        let service = crate::Server::with_registry(registry)
            .quiet(true)
            .build()
            .unwrap();
        let notifier = service.notifier();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(service.serve(listener, std::future::pending()));
        (format!("http://{addr}/mcp"), notifier)
    }

    /// Waits (five seconds at most) until `want` streams listen to the upstream.
    async fn listeners(up: &Notifier, want: usize) {
        for _ in 0..100 {
            if up.listeners() == want {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_eq!(up.listeners(), want, "streams listening to the upstream");
    }

    /// Whether an update of the upstream's `docs://readme` reaches the gateway's bus as
    /// `docs://up/readme` (touched until it does, two seconds at most).
    async fn updated(up: &Notifier, gateway: &mut tokio::sync::broadcast::Receiver<Event>) -> bool {
        for _ in 0..8 {
            up.notify_resource_updated("docs://readme");
            let wait = tokio::time::timeout(Duration::from_millis(250), async {
                loop {
                    match gateway.recv().await {
                        Ok(Event::ResourceUpdated(uri)) if &*uri == "docs://up/readme" => {
                            return true;
                        }
                        Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                        Err(_) => return false,
                    }
                }
            });
            if let Ok(got) = wait.await {
                return got;
            }
        }
        false
    }

    /// Seen from the upstream: a caller past its share does not stop another caller's
    /// resource from being followed (its updates come), and each follow ends upstream with
    /// its last part.
    #[tokio::test]
    async fn a_caller_past_its_share_leaves_the_others_followed_upstream() {
        let (url, up) = upstream().await;
        let proxy = Proxy::new("up", Upstream::url(&url));
        proxy.0.followed.lock().unwrap().share = 2;
        let bus = Bus::new(64);
        let mut gateway = bus.subscribe();
        proxy.attach(Notifier { bus, relay: None });
        let [greedy, other] = keys(&["greedy", "other"])[..] else {
            unreachable!()
        };
        let mine: Vec<_> = (0..2)
            .map(|i| proxy.follow(&format!("weather://up/c{i}/now"), greedy))
            .collect();
        assert!(mine.iter().all(Option::is_some));
        // Its share held: its next ones are not followed.
        assert!(proxy.follow("weather://up/c2/now", greedy).is_none());
        assert!(proxy.follow("docs://up/readme", greedy).is_none());
        // The gateway's watch of the upstream's lists, and the two follows.
        listeners(&up, 3).await;
        let theirs = proxy.follow("docs://up/readme", other);
        assert!(theirs.is_some());
        listeners(&up, 4).await;
        assert!(updated(&up, &mut gateway).await);
        // The greedy caller gone, its follows end upstream; the other's lives.
        drop(mine);
        listeners(&up, 2).await;
        assert!(updated(&up, &mut gateway).await);
        // Two parts of one URI: one follow upstream, ended with the last.
        let again = proxy.follow("docs://up/readme", greedy);
        assert!(again.is_some());
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(up.listeners(), 2);
        drop(theirs);
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(up.listeners(), 2);
        assert!(updated(&up, &mut gateway).await);
        drop(again);
        listeners(&up, 1).await;
        assert!(!updated(&up, &mut gateway).await);
    }
}
