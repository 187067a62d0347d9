//! [`Ledger`]: a resource whose history is the server's.
//!
//! A register (`SET key value`) keeps only its last value: after a run,
//! whether a stale holder's write landed late is gone. A ledger appends
//! (`RPUSH`), so the server keeps every write in the order it applied them,
//! and the bridge's execution log ([`crate::Execution`], with arguments)
//! says when each ran and for whom. `checker::late_writes` judges those
//! writes against the grants of whatever lock guards the ledger; no token
//! is needed, so it fits a lock that has none (a textbook `SET NX PX`, a
//! third-party crate). Which writes *landed* is the server's reply to each
//! ([`crate::Reply`]): [`Ledger::writes`] for a ledger, [`fenced_writes`]
//! for a `FencedStore`; [`judge_late_writes`] is the one call a run of
//! one's own needs to judge them.

use redis::aio::ConnectionLike;

use crate::bridge::Execution;
use crate::checker::late_writes::{self, Rule};
use crate::outcome::Outcome;
use crate::reply::Reply;
use crate::world::RunOutcome;

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

    /// The appends that landed in this ledger, as the server ran them
    /// (every node's log of `run`, in each node's execution order): each
    /// [`Ledger::append`] that ran without an error reply, and each
    /// [`Ledger::append_if_held`] whose script answered 1. The server's
    /// reply says it ([`crate::Reply`]); a refused append ran and wrote
    /// nothing, so it is not among them.
    pub fn writes<'a>(&self, run: &'a RunOutcome) -> Vec<&'a Execution> {
        served(run)
            .filter(|x| match x.command.to_ascii_uppercase().as_str() {
                "RPUSH" => x.key.as_deref() == Some(self.key.as_str()) && !x.reply.is_error(),
                "EVAL" | "EVALSHA" => x.args.contains(&self.key) && x.reply == Reply::Int(1),
                _ => false,
            })
            .collect()
    }
}

/// The writes a [`redis_primitives::FencedStore`] accepted on `redis_key`
/// (its `redis_key(key)`: `fenced:{key}` by default), as the server ran
/// them: each run of its write script on that key whose reply was
/// `[1, …]`. A write the store refused (a stale token, reply `[0, highest]`)
/// ran and landed nothing. What [`crate::late_writes::Rule::Fenced`]
/// judges.
pub fn fenced_writes<'a>(run: &'a RunOutcome, redis_key: &str) -> Vec<&'a Execution> {
    served(run)
        .filter(|x| {
            matches!(x.command.to_ascii_uppercase().as_str(), "EVAL" | "EVALSHA")
                && x.key.as_deref() == Some(redis_key)
                && matches!(&x.reply, Reply::Array(items) if items.first() == Some(&Reply::Int(1)))
        })
        .collect()
}

/// The default judge of a run whose clients record
/// [`crate::late_writes::LeaseOp`]s: its [`Outcome`] (the checks every run
/// gets) with the late writes among `writes` under `rule`, against the
/// grants its history shows.
pub fn judge_late_writes(run: &RunOutcome, writes: &[&Execution], rule: Rule) -> Outcome {
    let mut outcome = Outcome::from_run(run);
    let grants = late_writes::grants(&outcome.history);
    outcome.violations.extend(late_writes::check_with(writes, &grants, rule));
    outcome
}

/// Every command of every node of `run`, in each node's execution order.
fn served(run: &RunOutcome) -> impl Iterator<Item = &Execution> {
    run.executions.iter().flatten()
}
