//! [`RedisProxyStore`]: the authorization proxy's store in Redis, shared by its replicas, so
//! that a sign-in begun on one finishes on another (feature `redis` with `auth-proxy`).
//!
//! Each entry is a hash (`v`: the value; `b`: the keys of the bounds it counts under, one per
//! line) with a Redis TTL: Redis itself forgets it when it ends. A bound is a sorted set of
//! the entries counted under it, scored by when each ends; counting first drops the members
//! past their end, taking or deleting an entry removes it from its bounds, and the set expires
//! with its last member. Every change is one script, so `take`, `insert_new` and
//! `insert_bounded` are atomic across replicas; times are Redis's own clock (`TIME`), so the
//! replicas' clocks do not matter.

use std::sync::LazyLock;
use std::time::Duration;

use std::future::Future;

use ::redis::Script;
use ::redis::aio::ConnectionManager;

use super::{InvalidUrl, Link, RedisConfig, tag};
use crate::auth::proxy::check_name;
use crate::auth::proxy::{Bound, Insertion, ProxyStore, ProxyStoreError, ProxyStoreFuture};

/// The one reason a Redis failure is given with: what Redis said stays in the server's log.
const UNAVAILABLE: &str =
    "Redis is unreachable, too slow, or refused the command (the server's log has the details)";
/// How many times a change is tried again when the entry's bounds were not the ones read.
const ATTEMPTS: usize = 4;

/// Redis's clock in milliseconds, for scripts.
macro_rules! now_ms {
    () => {
        "local t = redis.call('TIME')\nlocal now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
    };
}

/// KEYS: the entry, then the bounds it is believed to count under. ARGV: value, ttl (ms),
/// those bounds as stored. `{1}`: written; `{0, bounds}`: it counts under other bounds.
static PUT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        "local b = redis.call('HGET', KEYS[1], 'b') or ''\n",
        "if b ~= ARGV[3] then return {0, b} end\n",
        "local ttl = tonumber(ARGV[2])\n",
        "redis.call('HSET', KEYS[1], 'v', ARGV[1])\n",
        "redis.call('PEXPIRE', KEYS[1], ttl)\n",
        "if #KEYS > 1 then\n",
        now_ms!(),
        "  for i = 2, #KEYS do\n",
        "    redis.call('ZADD', KEYS[i], 'XX', now + ttl, KEYS[1])\n",
        "    if redis.call('PTTL', KEYS[i]) < ttl then redis.call('PEXPIRE', KEYS[i], ttl) end\n",
        "  end\n",
        "end\n",
        "return {1, false}\n",
    ))
});

/// KEYS: the entry, then the bounds it is believed to count under. ARGV: those bounds as
/// stored. `{1, value}`: removed (`{1, nil}`: nothing there); `{0, bounds}`: other bounds.
static TAKE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        "local e = redis.call('HMGET', KEYS[1], 'v', 'b')\n",
        "if not e[1] then return {1, false} end\n",
        "local b = e[2] or ''\n",
        "if b ~= ARGV[1] then return {0, b} end\n",
        "redis.call('DEL', KEYS[1])\n",
        "for i = 2, #KEYS do redis.call('ZREM', KEYS[i], KEYS[1]) end\n",
        "return {1, e[1]}\n",
    ))
});

/// KEYS: the entry, then its bounds. ARGV: value, ttl (ms), the bounds joined by newlines,
/// then each bound's limit, then for each bound `1` if it makes room ([`Bound::make_room`])
/// else `0`. 0: stored; -1: the key exists; i > 0: the i-th bound is full.
///
/// A full bound that makes room tallies the groups (their other bounds, read from each
/// entry's `b`) of its 256 oldest entries and removes the oldest entry of the
/// largest (of equals, the first name; with no groups, the oldest of all). Whoever holds most
/// of the table holds most of its oldest too; a tally of all would cost Redis about 20 ms per
/// sign-in at 10,000 (measured), this one a few hundred µs.
static INSERT: LazyLock<Script> = LazyLock::new(|| {
    Script::new(concat!(
        "if redis.call('EXISTS', KEYS[1]) == 1 then return -1 end\n",
        "local ttl = tonumber(ARGV[2])\n",
        "if #KEYS == 1 then\n",
        "  redis.call('HSET', KEYS[1], 'v', ARGV[1])\n",
        "  redis.call('PEXPIRE', KEYS[1], ttl)\n",
        "  return 0\n",
        "end\n",
        now_ms!(),
        "local n = #KEYS - 1\n",
        "local ROOM_SAMPLE = 256\n",
        "local function full(i)\n",
        "  return redis.call('ZCARD', KEYS[i]) >= tonumber(ARGV[i + 2])\n",
        "end\n",
        "for i = 2, #KEYS do\n",
        "  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now)\n",
        "  if ARGV[n + i + 2] ~= '1' and full(i) then return i - 1 end\n",
        "end\n",
        "for i = 2, #KEYS do\n",
        "  while ARGV[n + i + 2] == '1' and full(i) do\n",
        "    local bounds, counts, best, most = {}, {}, nil, 0\n",
        "    local stale = false\n",
        "    for _, m in ipairs(redis.call('ZRANGE', KEYS[i], 0, ROOM_SAMPLE - 1)) do\n",
        "      local b = redis.call('HGET', m, 'b')\n",
        "      if b then\n",
        "        bounds[m] = b\n",
        "        for g in string.gmatch(b, '[^\\n]+') do\n",
        "          if g ~= KEYS[i] then\n",
        "            local c = (counts[g] or 0) + 1\n",
        "            counts[g] = c\n",
        "            if c > most or (c == most and g < best) then best, most = g, c end\n",
        "          end\n",
        "        end\n",
        "      else\n",
        "        redis.call('ZREM', KEYS[i], m)\n",
        "        stale = true\n",
        "      end\n",
        "    end\n",
        "    if not stale then\n",
        "      local victim = nil\n",
        "      for _, m in ipairs(redis.call('ZRANGE', best or KEYS[i], 0, ROOM_SAMPLE - 1)) do\n",
        "        if bounds[m] then victim = m break end\n",
        "      end\n",
        "      if not victim then break end\n",
        "      redis.call('DEL', victim)\n",
        "      for g in string.gmatch(bounds[victim], '[^\\n]+') do redis.call('ZREM', g, victim) end\n",
        "    end\n",
        "  end\n",
        "  if full(i) then return i - 1 end\n",
        "end\n",
        "redis.call('HSET', KEYS[1], 'v', ARGV[1], 'b', ARGV[3])\n",
        "redis.call('PEXPIRE', KEYS[1], ttl)\n",
        "for i = 2, #KEYS do\n",
        "  redis.call('ZADD', KEYS[i], now + ttl, KEYS[1])\n",
        "  if redis.call('PTTL', KEYS[i]) < ttl then redis.call('PEXPIRE', KEYS[i], ttl) end\n",
        "end\n",
        "return 0\n",
    ))
});

/// The authorization proxy's [`ProxyStore`] in Redis: replicas sharing it (and the proxy's
/// secret) finish each other's sign-ins, redeem each other's codes and rotate each other's
/// refresh tokens, each exactly once.
///
/// ```no_run
/// # fn demo(upstream: sake_runtime::auth::proxy::Upstream, secret: Vec<u8>) -> Result<(), Box<dyn std::error::Error>> {
/// use sake_runtime::auth::proxy::AuthProxy;
/// use sake_runtime::redis::RedisProxyStore;
///
/// let proxy = AuthProxy::builder("https://mcp.example.com", "/mcp", upstream)
///     .store(RedisProxyStore::new("redis://redis.internal:6379/")?)
///     .secret(secret) // the same on every replica
///     .build()?;
/// # Ok(()) }
/// ```
///
/// Every entry has a Redis TTL (the sign-in's, the code's, the refresh token's), so Redis
/// forgets what the proxy stops using even when no replica runs. Values are at most
/// [`max_value_bytes`](Self::max_value_bytes) (64 KiB by default); keys and bound names at
/// most 512 bytes of visible ASCII. Bounds ([`ProxyStore::insert_bounded`]: sign-ins under way
/// per client address and in all) hold across replicas. Connecting is lazy, every command has
/// a 1 s timeout, and a failure is an error whose reason names no address or Redis message
/// (those go to the log, once per outage).
pub struct RedisProxyStore {
    link: Link,
    tag: String,
    max_value: usize,
}

impl std::fmt::Debug for RedisProxyStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisProxyStore")
            .field("prefix", &self.tag)
            .field("max_value_bytes", &self.max_value)
            .finish_non_exhaustive()
    }
}

fn failed(e: &::redis::RedisError) -> ProxyStoreError {
    tracing::debug!(error = %e, "a command of the authorization proxy's store failed");
    ProxyStoreError::new(UNAVAILABLE)
}

fn millis(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1)
}

impl RedisProxyStore {
    /// A store in the Redis at `url` (`redis://[user:password@]host:6379/`), with the prefix
    /// `sake`. Nothing connects until it is first used.
    pub fn new(url: &str) -> Result<RedisProxyStore, InvalidUrl> {
        RedisProxyStore::with_prefix(url, "sake")
    }

    /// A store whose keys start with `{prefix}` (servers sharing one Redis need different
    /// prefixes; the replicas of one server the same).
    pub fn with_prefix(url: &str, prefix: &str) -> Result<RedisProxyStore, InvalidUrl> {
        RedisProxyStore::from_config(&RedisConfig::new(url).prefix(prefix))
    }

    /// A store through the Redis `config` describes (its URL, prefix and TLS settings: a
    /// `rediss://` URL, a CA, a client certificate).
    pub fn from_config(config: &RedisConfig) -> Result<RedisProxyStore, InvalidUrl> {
        Ok(RedisProxyStore {
            link: Link::open(config, "authorization proxy store")?,
            tag: tag(&config.prefix),
            max_value: 64 * 1024,
        })
    }

    /// The largest value stored (default 64 KiB; grants with the upstream tokens are the
    /// largest, a few KiB). A larger one is refused with an error, never truncated.
    #[must_use]
    pub fn max_value_bytes(mut self, bytes: usize) -> Self {
        self.max_value = bytes.max(1);
        self
    }

    /// Runs a command, once more when the connection turned out broken (the first command
    /// after Redis came back: the connection reopens for the second). A command that was sent
    /// and lost is safe to repeat: taking twice finds nothing, inserting twice finds it there.
    async fn run<T, F, Fut>(&self, command: F) -> Result<T, ProxyStoreError>
    where
        F: Fn(ConnectionManager) -> Fut,
        Fut: Future<Output = ::redis::RedisResult<T>>,
    {
        match self.link.run(&command).await {
            Err(e) if e.is_connection_dropped() && !e.is_timeout() => {
                failed(&e);
                self.link.run(&command).await.map_err(|e| failed(&e))
            }
            other => other.map_err(|e| failed(&e)),
        }
    }

    fn entry(&self, key: &str) -> String {
        format!("{}:proxy:{key}", self.tag)
    }

    fn bound(&self, name: &str) -> String {
        format!("{}:proxy-bound:{name}", self.tag)
    }

    fn check_value(&self, value: &[u8]) -> Result<(), ProxyStoreError> {
        if value.len() > self.max_value {
            return Err(ProxyStoreError::new(format!(
                "a value of {} bytes is larger than the store's limit of {} (RedisProxyStore::max_value_bytes)",
                value.len(),
                self.max_value
            )));
        }
        Ok(())
    }

    /// Runs `script` on the entry `key` and the bounds it counts under, which are read on the
    /// way: the first try guesses none (most entries), a refusal names the real ones.
    async fn on_entry(
        &self,
        script: &Script,
        key: &str,
        args: &[&[u8]],
    ) -> Result<Option<Vec<u8>>, ProxyStoreError> {
        check_name("key", key)?;
        let entry = self.entry(key);
        let mut bounds = String::new();
        for _ in 0..ATTEMPTS {
            let mut keys = vec![entry.clone()];
            keys.extend(bounds.lines().map(str::to_owned));
            let (keys, stored) = (&keys, &bounds);
            let (done, out): (i64, Option<Vec<u8>>) = self
                .run(move |mut conn| async move {
                    let mut call = script.prepare_invoke();
                    call.key(&keys[..]);
                    for a in args {
                        call.arg(*a);
                    }
                    call.arg(stored.as_bytes());
                    call.invoke_async(&mut conn).await
                })
                .await?;
            if done == 1 {
                return Ok(out);
            }
            bounds = String::from_utf8(out.unwrap_or_default())
                .map_err(|_| ProxyStoreError::new("an entry's bounds are not text"))?;
        }
        Err(ProxyStoreError::new(
            "an entry kept changing while it was written",
        ))
    }

    async fn insert(
        &self,
        key: &str,
        value: Vec<u8>,
        ttl: Duration,
        bounds: &[Bound<'_>],
    ) -> Result<Insertion, ProxyStoreError> {
        check_name("key", key)?;
        self.check_value(&value)?;
        for b in bounds {
            check_name("bound name", b.name)?;
        }
        let mut keys = vec![self.entry(key)];
        keys.extend(bounds.iter().map(|b| self.bound(b.name)));
        let joined = keys[1..].join("\n");
        let limits: Vec<usize> = bounds.iter().map(|b| b.limit).collect();
        // Each its own argument (a `&[u8]` would go as one string).
        let room: Vec<&str> = bounds
            .iter()
            .map(|b| if b.make_room { "1" } else { "0" })
            .collect();
        let (keys, value, joined, limits, room) = (&keys, &value, &joined, &limits, &room);
        let outcome: i64 = self
            .run(move |mut conn| async move {
                let mut call = INSERT.prepare_invoke();
                call.key(&keys[..])
                    .arg(&value[..])
                    .arg(millis(ttl))
                    .arg(joined)
                    .arg(&limits[..])
                    .arg(&room[..]);
                call.invoke_async(&mut conn).await
            })
            .await?;
        Ok(match outcome {
            0 => Insertion::Stored,
            -1 => Insertion::Exists,
            i => Insertion::Full(usize::try_from(i - 1).unwrap_or(0)),
        })
    }
}

impl ProxyStore for RedisProxyStore {
    fn put<'a>(&'a self, key: &'a str, value: Vec<u8>, ttl: Duration) -> ProxyStoreFuture<'a, ()> {
        Box::pin(async move {
            self.check_value(&value)?;
            let ttl = millis(ttl).to_string();
            self.on_entry(&PUT, key, &[&value, ttl.as_bytes()])
                .await
                .map(drop)
        })
    }

    fn insert_bounded<'a>(
        &'a self,
        key: &'a str,
        value: Vec<u8>,
        ttl: Duration,
        bounds: &'a [Bound<'a>],
    ) -> ProxyStoreFuture<'a, Insertion> {
        Box::pin(self.insert(key, value, ttl, bounds))
    }

    fn get<'a>(&'a self, key: &'a str) -> ProxyStoreFuture<'a, Option<Vec<u8>>> {
        Box::pin(async move {
            check_name("key", key)?;
            let entry = &self.entry(key);
            self.run(move |mut conn| async move {
                ::redis::cmd("HGET")
                    .arg(entry)
                    .arg("v")
                    .query_async(&mut conn)
                    .await
            })
            .await
        })
    }

    fn take<'a>(&'a self, key: &'a str) -> ProxyStoreFuture<'a, Option<Vec<u8>>> {
        Box::pin(self.on_entry(&TAKE, key, &[]))
    }
}
