//! **Broken on purpose (on a shared connection):** a sliding-window log
//! guarded by optimistic locking, `WATCH` / count / `MULTI` … `EXEC`,
//! retried when `EXEC` reports that the key changed.
//!
//! On a connection of its own this is correct, but pays for it in retries:
//! every concurrent caller that loses the race goes round again. On a
//! **shared multiplexed connection**, the normal way to use redis-rs, it is
//! wrong: `WATCH` state belongs to the *connection*, not to the caller. The
//! first caller's `EXEC` (or `UNWATCH`) clears every caller's watch, so the
//! others' transactions run unguarded and all of them are admitted. The type
//! works on whatever connection it is given, which is exactly the trap.
//!
//! Shown by `tests/library/rate_limit.rs::watch_multi_experiment_shared_connection_overshoots`
//! and `examples/watch_multi.rs`, which print admissions and retries for a
//! shared connection, a connection per caller, and the Lua log; the figures
//! are in `docs/decisions/0002-lua-not-watch-multi.md`.

use core::time::Duration;

use redis_primitives::rate_limit::{Decision, Limit};
use redis_primitives::{Connection, OwnerSource, Result};

use crate::support::{self, check_now, server_time_ms};

const PREFIX: &str = "naive-watch";

/// A decision and how many times the transaction had to be retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchMultiOutcome {
    /// What was decided. A caller that ran out of retries is denied with a
    /// zero `retry_after` (contention, not a full window).
    pub decision: Decision,
    /// How many `EXEC`s were aborted because the watched key changed.
    pub retries: u32,
}

/// `WATCH`/`MULTI` sliding-window log. Broken on a shared connection.
#[derive(Debug, Clone)]
pub struct WatchMultiLimiter<C> {
    conn: C,
    limit: Limit,
    members: OwnerSource,
    max_retries: u32,
}

impl<C: Connection> WatchMultiLimiter<C> {
    /// A limiter with keys `naive-watch:{name}`, random members and at most
    /// 10 000 retries per call.
    pub fn new(conn: C, limit: Limit) -> WatchMultiLimiter<C> {
        WatchMultiLimiter { conn, limit, members: OwnerSource::Random, max_retries: 10_000 }
    }

    /// Draws member suffixes from `members` (seeded for the simulation).
    pub fn members(mut self, members: OwnerSource) -> Self {
        self.members = members;
        self
    }

    /// Caps the retries of one call; past it the call is denied.
    pub fn max_retries(mut self, max_retries: u32) -> Self {
        self.max_retries = max_retries;
        self
    }

    /// The sorted set holding `name`'s log.
    pub fn key(&self, name: &str) -> Result<String> {
        support::key(PREFIX, name)
    }

    /// Decides at the server's time (one extra `TIME` round trip first).
    pub async fn check(&self, name: &str) -> Result<WatchMultiOutcome> {
        let key = self.key(name)?;
        let now = server_time_ms(&self.conn, &key).await?;
        self.check_at(name, now).await
    }

    /// `WATCH key`, count the window, then `MULTI` {trim, add, expire} `EXEC`;
    /// start again whenever `EXEC` is aborted.
    pub async fn check_at(&self, name: &str, now_ms: u64) -> Result<WatchMultiOutcome> {
        check_now(now_ms)?;
        let key = self.key(name)?;
        let window = self.limit.window().as_millis();
        let max = self.limit.max().get();
        let oldest_kept = format!("({}", now_ms as i64 - window as i64);
        let mut conn = self.conn.clone();
        let fault = |e| support::fault(e, &key);
        let mut retries = 0u32;
        loop {
            let _: () = redis::cmd("WATCH").arg(&key).query_async(&mut conn).await.map_err(fault)?;
            let count: u64 = redis::cmd("ZCOUNT")
                .arg(&key)
                .arg(&oldest_kept)
                .arg("+inf")
                .query_async(&mut conn)
                .await
                .map_err(fault)?;
            if count >= max {
                // UNWATCH, like EXEC, clears the watches of everyone sharing
                // this connection.
                let _: () = redis::cmd("UNWATCH").query_async(&mut conn).await.map_err(fault)?;
                return Ok(WatchMultiOutcome {
                    decision: Decision::Denied { count, retry_after: Duration::from_millis(window), at_ms: now_ms },
                    retries,
                });
            }
            let member = format!("{now_ms}-{}", self.members.next_owner(16).as_str());
            // redis-rs writes an atomic pipeline as one contiguous
            // MULTI … EXEC, so other callers' commands cannot land inside
            // it; they can only land between WATCH and EXEC.
            let committed: Option<()> = redis::pipe()
                .atomic()
                .cmd("ZREMRANGEBYSCORE")
                .arg(&key)
                .arg("-inf")
                .arg(now_ms as i64 - window as i64)
                .ignore()
                .cmd("ZADD")
                .arg(&key)
                .arg(now_ms)
                .arg(member)
                .ignore()
                .cmd("PEXPIRE")
                .arg(&key)
                .arg(window)
                .ignore()
                .query_async(&mut conn)
                .await
                .map_err(fault)?;
            if committed.is_some() {
                let count = count + 1;
                return Ok(WatchMultiOutcome {
                    decision: Decision::Allowed { count, remaining: max - count, at_ms: now_ms },
                    retries,
                });
            }
            if retries >= self.max_retries {
                return Ok(WatchMultiOutcome {
                    decision: Decision::Denied { count, retry_after: Duration::ZERO, at_ms: now_ms },
                    retries,
                });
            }
            retries += 1;
        }
    }
}
