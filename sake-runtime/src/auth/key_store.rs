//! The keys a [`JwtVerifier`](super::JwtVerifier) checks signatures with: a fixed key set, or
//! the issuer's published one (from its metadata or a JWKS URL), fetched again when it ages or
//! a token names a key it lacks — at most once per refresh interval, by one task at a time.

use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use http::StatusCode;

use super::AuthError;
use super::discovery;
use super::fetch::{FetchError, Fetcher};
use super::keys::KeySet;

/// Where the keys come from.
#[derive(Debug, Clone)]
pub(super) enum Source {
    Discover,
    JwksUrl(String),
    Static(String),
}

/// Why the key set is fetched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refresh {
    /// No keys yet.
    Initial,
    /// A token names a key not in the set.
    UnknownKey,
    /// The set is older than the maximum age.
    Stale,
}

/// The keys currently held.
#[derive(Debug)]
pub(super) struct Loaded {
    pub(super) set: KeySet,
    /// When they were fetched; `None` before the first successful fetch.
    pub(super) fetched_at: Option<Instant>,
    /// Bumped at every successful fetch.
    pub(super) generation: u64,
}

/// The issuer's keys, and how they are fetched again.
pub(super) struct KeyStore {
    remote: Option<Remote>,
    current: RwLock<Arc<Loaded>>,
    gate: tokio::sync::Mutex<Gate>,
}

struct Remote {
    source: Source,
    issuer: String,
    fetcher: Fetcher,
    max_keys: usize,
    refresh_interval: Duration,
    max_age: Duration,
}

/// What fetching remembers; held (async lock) by the one task fetching.
#[derive(Default)]
struct Gate {
    /// The JWKS URL found by discovery (forgotten when it stops answering).
    jwks_uri: Option<String>,
    /// When the last fetch started, successful or not.
    last_attempt: Option<Instant>,
    /// Why the last fetch failed, if it did.
    last_error: Option<AuthError>,
}

impl KeyStore {
    pub(super) fn fixed(set: KeySet) -> Self {
        Self {
            remote: None,
            current: RwLock::new(Arc::new(Loaded {
                set,
                fetched_at: Some(Instant::now()),
                generation: 1,
            })),
            gate: tokio::sync::Mutex::new(Gate::default()),
        }
    }

    pub(super) fn remote(
        source: Source,
        issuer: String,
        fetcher: Fetcher,
        max_keys: usize,
        refresh_interval: Duration,
        max_age: Duration,
    ) -> Self {
        let jwks_uri = match &source {
            Source::JwksUrl(url) => Some(url.clone()),
            _ => None,
        };
        Self {
            remote: Some(Remote {
                source,
                issuer,
                fetcher,
                max_keys,
                refresh_interval,
                max_age,
            }),
            current: RwLock::new(Arc::new(Loaded {
                set: KeySet::default(),
                fetched_at: None,
                generation: 0,
            })),
            gate: tokio::sync::Mutex::new(Gate {
                jwks_uri,
                ..Gate::default()
            }),
        }
    }

    pub(super) fn current(&self) -> Arc<Loaded> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The keys to verify with: loaded on first use; fetched again (by one request, the
    /// others going on with the keys held) when older than the maximum age.
    pub(super) async fn keys(&self) -> Result<Arc<Loaded>, AuthError> {
        let loaded = self.current();
        let Some(remote) = &self.remote else {
            return Ok(loaded);
        };
        match loaded.fetched_at {
            None => self.refresh(loaded.generation, Refresh::Initial).await,
            Some(at) if at.elapsed() > remote.max_age => {
                let Ok(gate) = self.gate.try_lock() else {
                    return Ok(loaded);
                };
                match self
                    .refresh_locked(gate, loaded.generation, Refresh::Stale)
                    .await
                {
                    Ok(fresh) => Ok(fresh),
                    Err(e) => {
                        tracing::warn!(
                            issuer = remote.issuer,
                            "the key set could not be refreshed; the keys held are kept: {e}"
                        );
                        Ok(loaded)
                    }
                }
            }
            Some(_) => Ok(loaded),
        }
    }

    /// Fetches the key set again, unless another request did since `seen` was read, or the
    /// last fetch started less than the refresh interval ago: then the keys held are
    /// returned (or, when there are none, the last fetch's error).
    pub(super) async fn refresh(&self, seen: u64, why: Refresh) -> Result<Arc<Loaded>, AuthError> {
        let gate = self.gate.lock().await;
        self.refresh_locked(gate, seen, why).await
    }

    async fn refresh_locked(
        &self,
        mut gate: tokio::sync::MutexGuard<'_, Gate>,
        seen: u64,
        why: Refresh,
    ) -> Result<Arc<Loaded>, AuthError> {
        let loaded = self.current();
        let Some(remote) = &self.remote else {
            return Ok(loaded);
        };
        if loaded.generation != seen {
            // Another request fetched while this one waited.
            return Ok(loaded);
        }
        if let Some(at) = gate.last_attempt
            && at.elapsed() < remote.refresh_interval
        {
            // Too soon to fetch again. A request that needs keys the set lacks gets the last
            // fetch's failure if it failed (the token cannot be judged), else the keys held.
            return match (why, &gate.last_error) {
                (Refresh::Stale, _) | (_, None) => Ok(loaded),
                (_, Some(e)) => Err(e.clone()),
            };
        }
        gate.last_attempt = Some(Instant::now());
        match self.fetch(remote, &mut gate).await {
            Ok(set) => {
                tracing::debug!(
                    issuer = remote.issuer,
                    keys = set.keys.len(),
                    ?why,
                    "key set fetched"
                );
                gate.last_error = None;
                let fresh = Arc::new(Loaded {
                    set,
                    fetched_at: Some(Instant::now()),
                    generation: loaded.generation + 1,
                });
                *self.current.write().unwrap_or_else(PoisonError::into_inner) = fresh.clone();
                Ok(fresh)
            }
            Err(e) => {
                tracing::warn!(
                    issuer = remote.issuer,
                    ?why,
                    "fetching the key set failed: {e}"
                );
                gate.last_error = Some(e.clone());
                Err(e)
            }
        }
    }

    async fn fetch(&self, remote: &Remote, gate: &mut Gate) -> Result<KeySet, AuthError> {
        let url = match &gate.jwks_uri {
            Some(url) => url.clone(),
            None => {
                let metadata = discovery::discover(&remote.fetcher, &remote.issuer).await?;
                let url = metadata.jwks_uri.ok_or_else(|| {
                    AuthError::misconfigured(format!(
                        "the metadata of {:?} names no jwks_uri",
                        remote.issuer
                    ))
                })?;
                super::fetch::parse(&url).map_err(|e| {
                    AuthError::misconfigured(format!("the metadata's jwks_uri: {e}"))
                })?;
                gate.jwks_uri = Some(url.clone());
                url
            }
        };
        let response = remote.fetcher.get(&url).await.map_err(|e| match e {
            FetchError::InvalidUrl { .. } => AuthError::misconfigured(e.to_string()),
            _ => AuthError::unavailable(format!("the key set: {e}")),
        })?;
        if response.status != StatusCode::OK {
            if matches!(remote.source, Source::Discover) {
                // The metadata may have moved the key set: discover again next time.
                gate.jwks_uri = None;
            }
            return Err(AuthError::unavailable(format!(
                "the key set: {url} answered {}",
                response.status
            )));
        }
        KeySet::parse(&response.body, remote.max_keys)
            .map_err(|e| AuthError::unavailable(format!("the key set at {url}: {e}")))
    }
}
