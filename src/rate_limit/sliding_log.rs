//! `SlidingWindowLog`: the exact limiter, one sorted-set member per admission.
//!
//! This module exists to keep the one exact limiter, its script and its
//! argument for exactness together; the type's docs carry the details.

use std::sync::LazyLock;

use crate::script_source::Script;

use super::{run_script, Decision, Limit};
use crate::connection::Connection;
use crate::error::Result;
use crate::keys::Prefix;

static CHECK: LazyLock<Script> = LazyLock::new(|| crate::script_source::script(crate::script_source::SLIDING_LOG));

/// The exact sliding-window limiter: never more than `max` admissions in
/// any window.
///
/// Each admitted request is one member of a sorted set, scored by the time
/// it was admitted. One Lua script (`scripts/sliding_log.lua`) trims the
/// entries that have left the window, counts the rest, decides, and records
/// the admission, so no interleaving of concurrent callers can slip a
/// request between the count and the record: **never more than `max`
/// admissions in any window** `(t - window, t]`, however many callers share
/// the connection (`tests/library/rate_limit.rs`:
/// `case18_sliding_log_boundary_burst_admits_exactly_the_limit`,
/// `case22_sliding_log_exact_under_200_concurrent_callers`).
///
/// The price is memory: **one sorted-set member per admitted request** in
/// the window, about 120 bytes each past 128 members (see
/// `docs/guide/rate-limiting.md#memory-per-key`). When that is too much,
/// [`super::SlidingWindowCounter`] is O(1) per key but approximate.
///
/// The script is O(log N + 64) for N members: it removes at most 64 expired
/// entries per call, so a large burst ageing out in one millisecond cannot
/// block the single-threaded server; leftovers are never counted, and later
/// calls or the key's idle expiry (one window after the last admission)
/// remove them. Members are `<now>-<k>`, `k` starting at the set's size and
/// stepping past any name already taken (`ZADD NX`): unique (two admissions
/// in one millisecond both count) and deterministic, with no randomness for
/// the simulation to seed.
///
/// Time is Redis' own `TIME`, read inside the script, so clients with skewed
/// clocks still agree. [`SlidingWindowLog::check_at`] pins `now` instead; it
/// exists for tests and the simulation harness, which need exact,
/// reproducible instants. Do not mix pinned and server time on one key.
///
/// # Errors
///
/// [`Error::WrongType`](crate::Error::WrongType) when the key is not a
/// sorted set, and [`Error::CorruptState`](crate::Error::CorruptState) when
/// a denial would take its `retry_after` from an entry whose score this
/// script never writes (not an integer unix-ms instant in `[0, 2^53 − 1]`:
/// a fraction, a negative, `inf`). Neither records anything. Entries the
/// decision does not read are counted as they are: the script checks what
/// it reads, not the whole set (that would cost O(N) a call).
///
/// ```no_run
/// # async fn demo(conn: redis::aio::MultiplexedConnection) -> redis_primitives::Result<()> {
/// use core::time::Duration;
/// use redis_primitives::rate_limit::{Decision, Limit, SlidingWindowLog};
///
/// let limiter = SlidingWindowLog::new(conn, Limit::new(5, Duration::from_secs(1))?);
/// match limiter.check("user:42").await? {
///     Decision::Allowed { remaining, .. } => println!("go ahead, {remaining} left"),
///     Decision::Denied { retry_after, .. } => println!("slow down, retry in {retry_after:?}"),
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct SlidingWindowLog<C> {
    conn: C,
    limit: Limit,
    prefix: Prefix,
}

impl<C: Connection> SlidingWindowLog<C> {
    /// The default key prefix: keys are `rate-log:{name}`.
    pub const DEFAULT_PREFIX: &'static str = "rate-log";

    /// A limiter for `limit` with the default prefix.
    pub fn new(conn: C, limit: Limit) -> SlidingWindowLog<C> {
        SlidingWindowLog {
            conn,
            limit,
            prefix: Prefix::new(Self::DEFAULT_PREFIX).expect("the default prefix is valid"),
        }
    }

    /// A limiter whose keys are `prefix:{name}`.
    pub fn with_prefix(conn: C, limit: Limit, prefix: impl Into<String>) -> Result<SlidingWindowLog<C>> {
        Ok(SlidingWindowLog { conn, limit, prefix: Prefix::new(prefix)? })
    }

    /// The limit in force.
    pub fn limit(&self) -> Limit {
        self.limit
    }

    /// The sorted set holding `name`'s log.
    pub fn key(&self, name: &str) -> Result<String> {
        self.prefix.key(name)
    }

    /// Decides one request for `name` at the server's current time, and
    /// records it if admitted.
    pub async fn check(&self, name: &str) -> Result<Decision> {
        self.run(name, None).await
    }

    /// Like [`check`](Self::check), at a pinned instant `now_ms` (unix ms,
    /// at most 2^53 − 1) instead of the server's `TIME`.
    ///
    /// For tests and the simulation harness only. Two rules keep pinned
    /// decisions exact: pinned instants must not go backwards for a key
    /// (an entry trimmed at a later instant no longer counts at an earlier
    /// one), and must not fall behind the server's real clock, on which the
    /// key's idle expiry runs (the harness pins the server's clock too, so
    /// both agree).
    pub async fn check_at(&self, name: &str, now_ms: u64) -> Result<Decision> {
        self.run(name, Some(now_ms)).await
    }

    async fn run(&self, name: &str, now_ms: Option<u64>) -> Result<Decision> {
        let key = self.key(name)?;
        run_script(&CHECK, &self.conn, &key, self.limit, now_ms).await
    }
}
