//! **Broken on purpose:** a fixed-window counter, `INCR` then `EXPIRE`, in
//! two round trips.
//!
//! The key is `prefix:{name}:<window index>`, where the index is
//! `now / window`; the first `INCR` of a window sets its expiry with a
//! second command.
//!
//! What breaks:
//! - **Boundary bursts.** Windows are aligned to the clock, not to the
//!   requests: `max` requests at the end of one window and `max` at the start
//!   of the next are all admitted, `2 × max` within a few milliseconds.
//!   Shown by `tests/library/rate_limit.rs::case16_naive_fixed_window_admits_double_at_the_boundary`
//!   (10 admitted in 104 ms against 5 per 1000 ms).
//! - **A crash between the two commands** leaves a counter with no TTL,
//!   forever: a leak of one key per window, and with a per-name key (no
//!   window index) a caller locked out for good. [`NaiveFixedWindow::incr_only`]
//!   performs only the first step, as a process that died there would.
//!   Shown by `tests/library/rate_limit.rs::case17_naive_fixed_window_incr_without_expire_lives_forever`
//!   (`PTTL` = −1).
//!
//! Use [`redis_primitives::rate_limit::SlidingWindowLog`] or
//! [`redis_primitives::rate_limit::SlidingWindowCounter`] instead.

use core::time::Duration;

use redis_primitives::rate_limit::{Decision, Limit};
use redis_primitives::{Connection, Error, Result};

use crate::support::{self, check_now, fault, server_time_ms};

const PREFIX: &str = "naive-window";

/// `INCR` + `EXPIRE` fixed-window counter. Do not use.
#[derive(Debug, Clone)]
pub struct NaiveFixedWindow<C> {
    conn: C,
    limit: Limit,
}

impl<C: Connection> NaiveFixedWindow<C> {
    /// A naive limiter with keys `naive-window:{name}:<index>`.
    pub fn new(conn: C, limit: Limit) -> NaiveFixedWindow<C> {
        NaiveFixedWindow { conn, limit }
    }

    /// The counter key of the window that contains `now_ms`.
    pub fn key(&self, name: &str, now_ms: u64) -> Result<String> {
        let window = self.limit.window().as_millis();
        Ok(format!("{}:{}", support::key(PREFIX, name)?, now_ms / window))
    }

    /// Decides at the server's time (one extra `TIME` round trip first).
    pub async fn check(&self, name: &str) -> Result<Decision> {
        let probe = support::key(PREFIX, name)?;
        let now = server_time_ms(&self.conn, &probe).await?;
        self.check_at(name, now).await
    }

    /// `INCR`, then (for a window's first request) `PEXPIRE`, as two round
    /// trips; admitted when the count is at most `max`.
    pub async fn check_at(&self, name: &str, now_ms: u64) -> Result<Decision> {
        let count = self.incr_only(name, now_ms).await?;
        let key = self.key(name, now_ms)?;
        let window = self.limit.window().as_millis();
        if count == 1 {
            // The second round trip: a process that dies before this line
            // leaves the counter without a TTL (see `incr_only`).
            let mut conn = self.conn.clone();
            let _: i64 =
                redis::cmd("PEXPIRE").arg(&key).arg(window).query_async(&mut conn).await.map_err(|e| fault(e, &key))?;
        }
        let max = self.limit.max().get();
        if count <= max {
            Ok(Decision::Allowed { count, remaining: max - count, at_ms: now_ms })
        } else {
            // The counter resets when the clock reaches the next window.
            let retry = window - now_ms % window;
            Ok(Decision::Denied { count, retry_after: Duration::from_millis(retry), at_ms: now_ms })
        }
    }

    /// Only the first half of [`check_at`](Self::check_at): the `INCR`, as
    /// if the process died before its `EXPIRE`. Returns the new count.
    pub async fn incr_only(&self, name: &str, now_ms: u64) -> Result<u64> {
        check_now(now_ms)?;
        let key = self.key(name, now_ms)?;
        let mut conn = self.conn.clone();
        let count: i64 = redis::cmd("INCR").arg(&key).query_async(&mut conn).await.map_err(|e| fault(e, &key))?;
        u64::try_from(count).map_err(|_| Error::UnexpectedReply { key, detail: format!("INCR returned {count}") })
    }
}
