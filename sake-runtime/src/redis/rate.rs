//! [`RedisRateStore`]: the buckets of a [`RateLimit`](crate::middleware::RateLimit) in Redis,
//! shared by every replica: one atomic script per take.

use std::sync::{Arc, LazyLock};
use std::time::Duration;

use ::redis::Script;

use super::{InvalidUrl, Link, RedisConfig, tag};
use crate::handler::BoxFuture;
use crate::middleware::{RateStore, RateStoreError};

/// Takes a token from the bucket `KEYS[1]` (a hash: `t` tokens, `ts` when last filled, in
/// ms of Redis's own clock, so that replicas with skewed clocks agree): refills it for the
/// time passed at `ARGV[1]` tokens per `ARGV[2]` ms, takes one if there is one, and keeps
/// the bucket only until it would be full again. Returns 0 when taken, else the ms to wait.
static TAKE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local cap = tonumber(ARGV[1])
local period = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local b = redis.call('HMGET', KEYS[1], 't', 'ts')
local tokens = tonumber(b[1]) or cap
local ts = tonumber(b[2]) or now
if now > ts then tokens = math.min(cap, tokens + (now - ts) * cap / period) end
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
else
  wait = math.ceil((1 - tokens) * period / cap)
end
redis.call('HSET', KEYS[1], 't', tostring(tokens), 'ts', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil((cap - tokens) * period / cap) + 1)
return wait
",
    )
});

/// The buckets of rate limits in Redis: replicas whose [`RateLimit`]s have the same name (or
/// the same calls, period and key) and share a Redis and a prefix enforce one budget. Each
/// take is one script, atomic in Redis; a bucket expires once it would be full again, so
/// Redis holds at most one small hash per key in use. Keys are bounded in length (the rate
/// limit digests long ones).
///
/// Redis down or slow (more than 1 s): the take fails, and the rate limit serves the call
/// uncounted (logged once), unless it was built with
/// [`fail_open(false)`](crate::middleware::RateLimit::fail_open).
///
/// [`RateLimit`]: crate::middleware::RateLimit
#[derive(Clone, Debug)]
pub struct RedisRateStore {
    link: Arc<Link>,
    tag: String,
}

impl RedisRateStore {
    /// A store in the Redis at `url`, prefix `sake`. Nothing connects until it is first used.
    pub fn new(url: &str) -> Result<RedisRateStore, InvalidUrl> {
        RedisRateStore::from_config(&RedisConfig::new(url))
    }

    /// A store through the Redis `config` describes (URL, prefix, TLS settings).
    pub fn from_config(config: &RedisConfig) -> Result<RedisRateStore, InvalidUrl> {
        Ok(RedisRateStore {
            link: Arc::new(Link::open(config, "rate limit store")?),
            tag: tag(&config.prefix),
        })
    }
}

impl RateStore for RedisRateStore {
    fn take(
        &self,
        key: &str,
        capacity: u32,
        period: Duration,
    ) -> BoxFuture<Result<Option<Duration>, RateStoreError>> {
        let link = self.link.clone();
        let key = format!("{}:rate:{key}", self.tag);
        let period_ms = u64::try_from(period.as_millis()).unwrap_or(u64::MAX).max(1);
        Box::pin(async move {
            let wait: u64 = link
                .run(|mut conn| async move {
                    TAKE.key(&key)
                        .arg(capacity.max(1))
                        .arg(period_ms)
                        .invoke_async(&mut conn)
                        .await
                })
                .await
                .map_err(|e| RateStoreError(e.to_string()))?;
            Ok((wait > 0).then(|| Duration::from_millis(wait)))
        })
    }
}
