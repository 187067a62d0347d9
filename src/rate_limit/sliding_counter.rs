//! `SlidingWindowCounter`: the O(1)-memory limiter, approximate by design.
//!
//! This module exists to keep the approximate limiter, its script and the
//! proof of its overshoot bound together; the type's docs carry the details.

use std::sync::LazyLock;

use crate::script_source::Script;

use super::{run_script, Decision, Limit};
use crate::connection::Connection;
use crate::error::Result;
use crate::keys::Prefix;

static CHECK: LazyLock<Script> = LazyLock::new(|| crate::script_source::script(crate::script_source::SLIDING_COUNTER));

/// The O(1)-memory sliding-window limiter: two fixed buckets weighted by
/// overlap, approximate within a documented bound.
///
/// Time is cut into fixed buckets of one window each. The key is one small
/// hash holding the current bucket's index and two counts: `c` admissions in
/// the current bucket and `p` in the previous one. A request at `elapsed` ms
/// into the current bucket sees the estimate
///
/// ```text
/// p × (window − elapsed) / window + c
/// ```
///
/// (the previous bucket weighted by how much of it the sliding window still
/// overlaps) and is admitted when the estimate plus one is at most `max`.
/// One Lua script (`scripts/sliding_counter.lua`) reads, decides and writes,
/// in O(1) time and O(1) memory per key whatever the limit.
///
/// # Worst-case overshoot: `2 × max − 1`
///
/// The estimate assumes the previous bucket's requests were spread evenly.
/// When they all came at its very end, the sliding window sees more than the
/// estimate. The bound: **any window `(t − window, t]` contains at most
/// `2 × max − 1` admissions.** Such a window lies within two buckets, the
/// one `t` falls in and the one before. If it holds none of the earlier
/// bucket's admissions, it holds at most the later bucket's, `≤ max`.
/// Otherwise every admission of the later bucket saw `p ≥ 1` with
/// `elapsed < window`, a positive weighted term, so the last of them was
/// admitted with `c ≤ max − 1` (itself included); the earlier bucket admitted
/// at most `max`, so the window holds at most `2 × max − 1`.
///
/// The bound is reached when `window ≥ 2 × max` ms: `max` admissions in the
/// last millisecond of a bucket, then `max − 1` more 2 ms before the end of
/// the next one (`tests/library/rate_limit.rs::counter_boundary_burst_reaches_exactly_the_documented_bound`
/// asserts exactly `2 × max − 1`, and `counter_never_exceeds_the_bound_in_a_seeded_sweep`
/// that no schedule exceeds it). Use [`super::SlidingWindowLog`] when
/// `max` must hold exactly.
///
/// Time, pinning and expiry work as for the log: Redis' `TIME` unless
/// [`SlidingWindowCounter::check_at`] pins `now` (tests and the harness
/// only), and the key expires at the end of the bucket after the last
/// admission, when its counts can no longer matter. If the clock goes
/// backwards the script keeps counting in the newest bucket, which can only
/// deny more.
///
/// # Errors
///
/// [`Error::WrongType`](crate::Error::WrongType) when the key is not a hash,
/// and [`Error::CorruptState`](crate::Error::CorruptState) when it is a hash
/// without `i`, `c` and `p` as integers in `[0, 2^53 − 1]` (a field missing,
/// a negative or fractional count, text): the script writes all three at
/// once and nothing else, so another program wrote it. Neither admits or
/// changes anything: the state is checked before any write.
///
/// ```no_run
/// # async fn demo(conn: redis::aio::MultiplexedConnection) -> redis_primitives::Result<()> {
/// use core::time::Duration;
/// use redis_primitives::rate_limit::{Limit, SlidingWindowCounter};
///
/// let limiter = SlidingWindowCounter::new(conn, Limit::new(100, Duration::from_secs(60))?);
/// let decision = limiter.check("api-key:7f3a").await?;
/// if let Some(wait) = decision.retry_after() {
///     println!("429: retry in {} s", wait.as_secs_f64().ceil());
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct SlidingWindowCounter<C> {
    conn: C,
    limit: Limit,
    prefix: Prefix,
}

impl<C: Connection> SlidingWindowCounter<C> {
    /// The default key prefix: keys are `rate-counter:{name}`.
    pub const DEFAULT_PREFIX: &'static str = "rate-counter";

    /// A limiter for `limit` with the default prefix.
    pub fn new(conn: C, limit: Limit) -> SlidingWindowCounter<C> {
        SlidingWindowCounter {
            conn,
            limit,
            prefix: Prefix::new(Self::DEFAULT_PREFIX).expect("the default prefix is valid"),
        }
    }

    /// A limiter whose keys are `prefix:{name}`.
    pub fn with_prefix(conn: C, limit: Limit, prefix: impl Into<String>) -> Result<SlidingWindowCounter<C>> {
        Ok(SlidingWindowCounter { conn, limit, prefix: Prefix::new(prefix)? })
    }

    /// The limit in force.
    pub fn limit(&self) -> Limit {
        self.limit
    }

    /// The most admissions any one window can hold: `2 × max − 1`.
    pub fn worst_case_admissions(&self) -> u64 {
        2 * self.limit.max().get() - 1
    }

    /// The hash holding `name`'s two buckets.
    pub fn key(&self, name: &str) -> Result<String> {
        self.prefix.key(name)
    }

    /// Decides one request for `name` at the server's current time, and
    /// counts it if admitted.
    pub async fn check(&self, name: &str) -> Result<Decision> {
        self.run(name, None).await
    }

    /// Like [`check`](Self::check), at a pinned instant `now_ms` (unix ms,
    /// at most 2^53 − 1). For tests and the simulation harness only (see
    /// [`super::SlidingWindowLog::check_at`]).
    pub async fn check_at(&self, name: &str, now_ms: u64) -> Result<Decision> {
        self.run(name, Some(now_ms)).await
    }

    async fn run(&self, name: &str, now_ms: Option<u64>) -> Result<Decision> {
        let key = self.key(name)?;
        run_script(&CHECK, &self.conn, &key, self.limit, now_ms).await
    }
}
