//! Rate limiting: "at most `max` requests per `window`" for many callers at once.
//!
//! Two limiters, one [`Limit`] and one [`Decision`] type:
//!
//! | | [`SlidingWindowLog`] | [`SlidingWindowCounter`] |
//! |---|---|---|
//! | admissions in any window `(t − window, t]` | exactly `≤ max` | `≤ 2 × max − 1` (worst case) |
//! | memory per key | one sorted-set member per admission in the window | one small hash, O(1) |
//! | script cost | O(log N + 64) | O(1) |
//!
//! Each decision is **one Lua script** that reads, decides and records
//! atomically. Reading in one round trip and writing in another (see
//! `ClientSideWindow` in the broken-on-purpose `redis-primitives-naive`
//! crate) or guarding with `WATCH`/`MULTI` on a shared multiplexed
//! connection (its `WatchMultiLimiter`) admits
//! far more than the limit under concurrency; `docs/decisions/0002-lua-not-watch-multi.md`
//! has the measurements.
//!
//! Time is Redis' own clock (`TIME`, inside the script), so callers with
//! skewed clocks agree. The `check_at` variants pin `now` (unix ms) instead:
//! that exists for tests and the simulation harness, not for production.
//!
//! Every key of one limited name is `prefix:{name}` (one key; the hash tag
//! keeps it in one slot on Redis Cluster), and expires once idle.
//!
//! What the limiters do **not** guarantee:
//! - the sliding log costs one sorted-set member per admitted request in the
//!   window: about 120 bytes each past 128 members, 12 MB for one key at a
//!   limit of 100 000 (measured: `docs/guide/rate-limiting.md#memory-per-key`);
//! - Lua scripts block the single-threaded server while they run, so they are
//!   kept O(log N): the counter's script is O(1); the log's is
//!   O(log N + 64), because it removes at most 64 expired entries per call
//!   (a whole burst of `max` entries can age out in one millisecond). Until
//!   later calls or the key's idle expiry remove them, up to `max` expired
//!   entries can linger beside the window's: they are never counted, but
//!   they do take memory.
//!
//! ```no_run
//! # async fn demo(conn: redis::aio::MultiplexedConnection) -> redis_primitives::Result<()> {
//! use core::time::Duration;
//! use redis_primitives::rate_limit::{Limit, SlidingWindowCounter, SlidingWindowLog};
//!
//! let limit = Limit::new(5, Duration::from_secs(1))?;
//! let exact = SlidingWindowLog::new(conn.clone(), limit);
//! let cheap = SlidingWindowCounter::new(conn, limit);
//! assert!(exact.check("login:alice").await?.is_allowed());
//! assert!(cheap.check("login:alice").await?.is_allowed());
//! # Ok(()) }
//! ```

mod decision;
mod limit;
mod sliding_counter;
mod sliding_log;

pub use decision::Decision;
pub use limit::Limit;
pub use sliding_counter::SlidingWindowCounter;
pub use sliding_log::SlidingWindowLog;

use core::time::Duration;

use crate::connection::Connection;
use crate::error::{Error, Result};
use crate::ttl::Ttl;

/// The script argument for `now`: empty for the server's `TIME`, else the
/// pinned unix-ms instant, which must be exact in a Lua number.
pub(crate) fn now_arg(now_ms: Option<u64>) -> Result<String> {
    match now_ms {
        None => Ok(String::new()),
        Some(ms) if ms <= Ttl::MAX_MILLIS => Ok(ms.to_string()),
        Some(ms) => Err(Error::invalid(
            "now",
            format!("{ms} ms exceeds 2^53 − 1, the largest instant a Lua number holds exactly"),
        )),
    }
}

/// Runs a limiter `script` for `key` (both limiters take the same arguments:
/// max, window in ms, pinned now or '') and turns its reply into a [`Decision`].
pub(crate) async fn run_script<C: Connection>(
    script: &crate::script_source::Script,
    conn: &C,
    key: &str,
    limit: Limit,
    now_ms: Option<u64>,
) -> Result<Decision> {
    let now = now_arg(now_ms)?;
    let mut conn = conn.clone();
    let reply: Vec<i64> = script
        .call([key])
        .arg(limit.max().get())
        .arg(limit.window().as_millis())
        .arg(now)
        .invoke_async(&mut conn)
        .await
        .map_err(|e| Error::from_redis(e, key))?;
    decide(&reply, limit, key)
}

/// Turns a limiter script's reply, `{1, count, now}` or
/// `{0, count, now, retry_after_ms}`, into a [`Decision`].
pub(crate) fn decide(reply: &[i64], limit: Limit, key: &str) -> Result<Decision> {
    let bad = |detail: String| Error::UnexpectedReply { key: key.to_string(), detail };
    let non_negative =
        |v: i64, what: &str| u64::try_from(v).map_err(|_| bad(format!("negative {what} {v} in {reply:?}")));
    match *reply {
        [1, count, at] => {
            let count = non_negative(count, "count")?;
            Ok(Decision::Allowed {
                count,
                remaining: limit.max().get().saturating_sub(count),
                at_ms: non_negative(at, "time")?,
            })
        }
        [0, count, at, retry] if retry > 0 => Ok(Decision::Denied {
            count: non_negative(count, "count")?,
            retry_after: Duration::from_millis(non_negative(retry, "retry-after")?),
            at_ms: non_negative(at, "time")?,
        }),
        _ => Err(bad(format!("limiter script returned {reply:?}"))),
    }
}

/// Both sides of `check_at`'s documented edge: an instant up to 2^53 − 1
/// ms is sent as its decimal, the next one and beyond are refused with
/// `InvalidInput` before anything is sent (moved here from the
/// simulation's validation probe; a decision at 2^53 − 1 on a real server
/// is `tests/library/documented_edges.rs`).
#[cfg(test)]
mod documented_edges {
    use super::*;

    #[test]
    fn a_pinned_instant_below_2_pow_53() {
        assert_eq!(now_arg(None).unwrap(), "");
        assert_eq!(now_arg(Some(0)).unwrap(), "0");
        assert_eq!(now_arg(Some(1_700_000_000_123)).unwrap(), "1700000000123");
        assert_eq!(now_arg(Some((1 << 53) - 1)).unwrap(), "9007199254740991");
        for ms in [1 << 53, (1 << 53) + 1, u64::MAX] {
            let r = now_arg(Some(ms));
            assert!(matches!(r, Err(Error::InvalidInput { what: "now", .. })), "{ms}: {r:?}");
        }
    }
}
