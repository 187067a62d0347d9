//! [`Ledger`]: a resource whose history is the server's.
//!
//! A register (`SET key value`) keeps only its last value: after a run,
//! whether a stale holder's write landed late is gone. A ledger appends
//! (`RPUSH`), so the server keeps every write in the order it applied them,
//! and the bridge's execution log ([`crate::Execution`], with arguments)
//! says when each ran and for whom. `checker::late_writes` judges those
//! writes against the grants of whatever lock guards the ledger; no token
//! is needed, so it fits a lock that has none (a textbook `SET NX PX`, a
//! third-party crate).

use redis::aio::ConnectionLike;

use crate::bridge::Execution;

/// An append-only list on one key: the guarded resource of a lock whose
/// writes should be judged as the server ran them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ledger {
    key: String,
}

impl Ledger {
    /// The ledger on `key`.
    pub fn new(key: impl Into<String>) -> Ledger {
        Ledger { key: key.into() }
    }

    /// Its key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Appends `entry`; returns the ledger's length after it.
    pub async fn append<C: ConnectionLike>(&self, conn: &mut C, entry: &str) -> redis::RedisResult<u64> {
        redis::cmd("RPUSH").arg(&self.key).arg(entry).query_async(conn).await
    }

    /// Appends `entry` only while `lock` still holds `owner`, in one
    /// script the server runs atomically: a fenced write (the guard a lock
    /// without tokens can still have). `Ok(false)`: refused, the lease was
    /// gone.
    pub async fn append_if_held<C: ConnectionLike>(
        &self,
        conn: &mut C,
        lock: &str,
        owner: &str,
        entry: &str,
    ) -> redis::RedisResult<bool> {
        let script = redis::Script::new(
            "if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('RPUSH', KEYS[2], ARGV[2]) return 1 end return 0",
        );
        let n: i64 = script.key(lock).key(&self.key).arg(owner).arg(entry).invoke_async(conn).await?;
        Ok(n == 1)
    }

    /// Every entry, in the order the server applied them.
    pub async fn entries<C: ConnectionLike>(&self, conn: &mut C) -> redis::RedisResult<Vec<String>> {
        redis::cmd("LRANGE").arg(&self.key).arg(0).arg(-1).query_async(conn).await
    }

    /// The writes that landed in this ledger, from a node's execution log
    /// ([`crate::RunOutcome::executions`]), in the order they ran: every
    /// command naming the ledger's key whose last argument (the entry, in
    /// [`Ledger::append`] and [`Ledger::append_if_held`]) is among
    /// `entries`, the ledger's final content. A refused conditional append
    /// ran but wrote nothing, so it is not among them. Entries must be
    /// unique (a writer's name and a counter) for the match to be exact.
    pub fn writes<'a>(&self, log: &'a [Execution], entries: &[String]) -> Vec<&'a Execution> {
        log.iter()
            .filter(|x| x.args.contains(&self.key))
            .filter(|x| x.args.last().is_some_and(|entry| entries.contains(entry)))
            .collect()
    }
}
