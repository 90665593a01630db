//! Where tokens and client registrations are kept: [`TokenStore`], and [`MemoryStore`], the
//! default.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::registration::RegisteredClient;
use super::secret::Secret;

/// The tokens the client holds for one MCP server.
///
/// Serializable, for a [`TokenStore`] that persists them (keep the file or keychain entry as
/// private as a password: it carries the access and refresh tokens).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Tokens {
    /// The access token.
    pub access_token: Secret,
    /// `Bearer` or `DPoP`.
    pub token_type: String,
    /// The refresh token, when the authorization server issued one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<Secret>,
    /// When the access token expires (seconds since the Unix epoch), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// The scopes the client asked for.
    #[serde(default)]
    pub requested_scopes: Vec<String>,
    /// The scopes the authorization server granted, when it said (else the requested ones).
    #[serde(default)]
    pub scopes: Vec<String>,
    /// The issuer identifier of the authorization server that issued them.
    pub issuer: String,
    /// The resource they were issued for (the `resource` parameter sent).
    pub resource: String,
}

impl Tokens {
    /// Whether the access token expires within `margin` from now.
    pub fn expires_within(&self, margin: Duration) -> bool {
        let Some(at) = self.expires_at else {
            return false;
        };
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        at <= now.saturating_add(margin.as_secs())
    }
}

/// Why a [`TokenStore`] failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct StoreError(pub String);

/// The future a [`TokenStore`] method returns.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// Keeps the tokens of each MCP server (keyed by the server's URL) and the client registrations
/// made with each authorization server (keyed by its issuer identifier), so that an application
/// can persist them across runs. [`MemoryStore`] is the default.
///
/// Registrations are per authorization server: credentials issued by one are never presented
/// to another (the MCP authorization pages, "Authorization Server Binding").
pub trait TokenStore: Send + Sync {
    /// The tokens held for `server`.
    fn load_tokens<'a>(&'a self, server: &'a str) -> StoreFuture<'a, Option<Tokens>>;
    /// Keeps `tokens` for `server` (replacing what was there).
    fn save_tokens<'a>(&'a self, server: &'a str, tokens: &'a Tokens) -> StoreFuture<'a, ()>;
    /// Forgets the tokens of `server`.
    fn clear_tokens<'a>(&'a self, server: &'a str) -> StoreFuture<'a, ()>;
    /// The client registered with the authorization server `issuer`.
    fn load_client<'a>(&'a self, issuer: &'a str) -> StoreFuture<'a, Option<RegisteredClient>>;
    /// Keeps the client registered with `issuer`.
    fn save_client<'a>(
        &'a self,
        issuer: &'a str,
        client: &'a RegisteredClient,
    ) -> StoreFuture<'a, ()>;
}

/// A shared store (for several [`OAuth`](super::OAuth) values, or one the application also
/// reads).
impl<T: TokenStore + ?Sized> TokenStore for std::sync::Arc<T> {
    fn load_tokens<'a>(&'a self, server: &'a str) -> StoreFuture<'a, Option<Tokens>> {
        (**self).load_tokens(server)
    }

    fn save_tokens<'a>(&'a self, server: &'a str, tokens: &'a Tokens) -> StoreFuture<'a, ()> {
        (**self).save_tokens(server, tokens)
    }

    fn clear_tokens<'a>(&'a self, server: &'a str) -> StoreFuture<'a, ()> {
        (**self).clear_tokens(server)
    }

    fn load_client<'a>(&'a self, issuer: &'a str) -> StoreFuture<'a, Option<RegisteredClient>> {
        (**self).load_client(issuer)
    }

    fn save_client<'a>(
        &'a self,
        issuer: &'a str,
        client: &'a RegisteredClient,
    ) -> StoreFuture<'a, ()> {
        (**self).save_client(issuer, client)
    }
}

/// How many servers' tokens and issuers' registrations a [`MemoryStore`] keeps; beyond, the
/// oldest entry goes.
const MEMORY_CAPACITY: usize = 1024;

#[derive(Default)]
struct Memory {
    tokens: HashMap<String, (u64, Tokens)>,
    clients: HashMap<String, (u64, RegisteredClient)>,
    clock: u64,
}

fn insert_bounded<T>(map: &mut HashMap<String, (u64, T)>, key: &str, value: T, clock: u64) {
    if !map.contains_key(key)
        && map.len() >= MEMORY_CAPACITY
        && let Some(oldest) = map
            .iter()
            .min_by_key(|(_, (t, _))| *t)
            .map(|(k, _)| k.clone())
    {
        map.remove(&oldest);
    }
    map.insert(key.to_owned(), (clock, value));
}

/// Keeps tokens and registrations in memory, for the life of the process (at most 1024 of
/// each; the oldest go first).
#[derive(Default)]
pub struct MemoryStore {
    inner: Mutex<Memory>,
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (tokens, clients) = self
            .inner
            .lock()
            .map(|m| (m.tokens.len(), m.clients.len()))
            .unwrap_or_default();
        f.debug_struct("MemoryStore")
            .field("servers", &tokens)
            .field("registrations", &clients)
            .finish()
    }
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        MemoryStore::default()
    }

    fn with<T>(&self, f: impl FnOnce(&mut Memory) -> T) -> Result<T, StoreError> {
        let mut m = self
            .inner
            .lock()
            .map_err(|_| StoreError("the memory store's lock is poisoned".into()))?;
        m.clock += 1;
        Ok(f(&mut m))
    }
}

impl TokenStore for MemoryStore {
    fn load_tokens<'a>(&'a self, server: &'a str) -> StoreFuture<'a, Option<Tokens>> {
        Box::pin(async move { self.with(|m| m.tokens.get(server).map(|(_, t)| t.clone())) })
    }

    fn save_tokens<'a>(&'a self, server: &'a str, tokens: &'a Tokens) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            self.with(|m| {
                let clock = m.clock;
                insert_bounded(&mut m.tokens, server, tokens.clone(), clock);
            })
        })
    }

    fn clear_tokens<'a>(&'a self, server: &'a str) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            self.with(|m| {
                m.tokens.remove(server);
            })
        })
    }

    fn load_client<'a>(&'a self, issuer: &'a str) -> StoreFuture<'a, Option<RegisteredClient>> {
        Box::pin(async move { self.with(|m| m.clients.get(issuer).map(|(_, c)| c.clone())) })
    }

    fn save_client<'a>(
        &'a self,
        issuer: &'a str,
        client: &'a RegisteredClient,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            self.with(|m| {
                let clock = m.clock;
                insert_bounded(&mut m.clients, issuer, client.clone(), clock);
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(access: &str) -> Tokens {
        Tokens {
            access_token: Secret::new(access),
            token_type: "Bearer".into(),
            refresh_token: Some(Secret::new("r")),
            expires_at: None,
            requested_scopes: vec!["a".into()],
            scopes: vec!["a".into()],
            issuer: "https://as".into(),
            resource: "https://mcp/mcp".into(),
        }
    }

    #[test]
    fn secrets_never_show() {
        let t = tokens("very-secret-access");
        let debug = format!("{t:?}");
        assert!(!debug.contains("very-secret-access"), "{debug}");
        assert_eq!(format!("{:?}", Secret::new("x")), "Secret(…)");
        // Serialized for persistence: the token itself is there.
        let json = serde_json::to_value(&t).unwrap();
        assert_eq!(json["access_token"], "very-secret-access");
        let back: Tokens = serde_json::from_value(json).unwrap();
        assert_eq!(back, t);
    }

    #[test]
    fn expiry() {
        let mut t = tokens("a");
        assert!(!t.expires_within(Duration::from_secs(60)));
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        t.expires_at = Some(now + 30);
        assert!(t.expires_within(Duration::from_secs(60)));
        assert!(!t.expires_within(Duration::from_secs(10)));
    }

    #[tokio::test]
    async fn memory_store_round_trips_and_is_bounded() {
        let store = MemoryStore::new();
        assert_eq!(store.load_tokens("s").await.unwrap(), None);
        store.save_tokens("s", &tokens("a")).await.unwrap();
        assert_eq!(
            store
                .load_tokens("s")
                .await
                .unwrap()
                .map(|t| t.access_token),
            Some(Secret::new("a"))
        );
        store.clear_tokens("s").await.unwrap();
        assert_eq!(store.load_tokens("s").await.unwrap(), None);
        let c = RegisteredClient::public("id");
        store.save_client("https://as", &c).await.unwrap();
        assert_eq!(
            store
                .load_client("https://as")
                .await
                .unwrap()
                .map(|c| c.client_id().to_owned()),
            Some("id".to_owned())
        );
        assert_eq!(store.load_client("https://other").await.unwrap(), None);
        for i in 0..MEMORY_CAPACITY + 10 {
            store
                .save_tokens(&format!("s{i}"), &tokens("a"))
                .await
                .unwrap();
        }
        let kept = store.inner.lock().unwrap().tokens.len();
        assert_eq!(kept, MEMORY_CAPACITY);
        // The oldest went first.
        assert_eq!(store.load_tokens("s0").await.unwrap(), None);
        assert!(
            store
                .load_tokens(&format!("s{}", MEMORY_CAPACITY + 9))
                .await
                .unwrap()
                .is_some()
        );
    }
}
