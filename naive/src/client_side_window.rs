//! **Broken on purpose:** a sliding-window log decided on the client, in
//! three round trips: `ZREMRANGEBYSCORE` (trim), `ZCARD` (count), then
//! `ZADD` + `PEXPIRE` (record) if the count was under the limit.
//!
//! It is the same algorithm as [`redis_primitives::rate_limit::SlidingWindowLog`],
//! minus the atomicity. What breaks: concurrent callers all count before any
//! of them records, so all see room and all are admitted. Shown by
//! `tests/library/rate_limit.rs::case21_client_side_window_overshoots_under_concurrency`
//! (100 concurrent callers against a limit of 5 on one shared connection).
//!
//! Members are `<now>-<random>` from an [`OwnerSource`], so a repeated member
//! cannot hide the overshoot; pass a seeded source for reproducible runs.

use core::time::Duration;

use redis_primitives::rate_limit::{Decision, Limit};
use redis_primitives::{Connection, OwnerSource, Result};

use crate::support::{self, check_now, server_time_ms};

const PREFIX: &str = "naive-log";

/// Trim, count and add in three round trips. Do not use.
#[derive(Debug, Clone)]
pub struct ClientSideWindow<C> {
    conn: C,
    limit: Limit,
    members: OwnerSource,
}

impl<C: Connection> ClientSideWindow<C> {
    /// A naive limiter with keys `naive-log:{name}` and random members.
    pub fn new(conn: C, limit: Limit) -> ClientSideWindow<C> {
        ClientSideWindow { conn, limit, members: OwnerSource::Random }
    }

    /// Draws member suffixes from `members` (seeded for the simulation).
    pub fn members(mut self, members: OwnerSource) -> Self {
        self.members = members;
        self
    }

    /// The sorted set holding `name`'s log.
    pub fn key(&self, name: &str) -> Result<String> {
        support::key(PREFIX, name)
    }

    /// Decides at the server's time (one extra `TIME` round trip first).
    pub async fn check(&self, name: &str) -> Result<Decision> {
        let key = self.key(name)?;
        let now = server_time_ms(&self.conn, &key).await?;
        self.check_at(name, now).await
    }

    /// Trim, count, then record: three round trips with room for every
    /// other caller in between.
    pub async fn check_at(&self, name: &str, now_ms: u64) -> Result<Decision> {
        check_now(now_ms)?;
        let key = self.key(name)?;
        let window = self.limit.window().as_millis();
        let max = self.limit.max().get();
        let mut conn = self.conn.clone();
        let fault = |e| support::fault(e, &key);

        let _: i64 = redis::cmd("ZREMRANGEBYSCORE")
            .arg(&key)
            .arg("-inf")
            .arg(now_ms as i64 - window as i64)
            .query_async(&mut conn)
            .await
            .map_err(fault)?;
        let count: u64 = redis::cmd("ZCARD").arg(&key).query_async(&mut conn).await.map_err(fault)?;
        if count >= max {
            // A correct retry-after needs the oldest entry, a fourth round
            // trip; the window length is an upper bound.
            return Ok(Decision::Denied { count, retry_after: Duration::from_millis(window), at_ms: now_ms });
        }
        let member = format!("{now_ms}-{}", self.members.next_owner(16).as_str());
        let _: () = redis::pipe()
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
        // The count this caller saw, plus itself: what it believes, not what
        // the set now holds.
        let count = count + 1;
        Ok(Decision::Allowed { count, remaining: max - count, at_ms: now_ms })
    }
}
