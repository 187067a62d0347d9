//! `JobQueue`: a job queue whose claims are leases with a per-job fence.
//!
//! A worker that claims a job may die, or pause (a GC, a swap storm, a
//! partition) for longer than anyone can wait. A queue that only moves jobs
//! from "pending" to "processing" (`NaiveJobQueue`, in the broken-on-purpose
//! `redis-primitives-naive` crate) cannot tell the two apart, so it either
//! loses the dead worker's job or hands a slow worker's job out twice and
//! accepts both completions. Here a claim is
//! a **lease** (the job returns to the queue once it lapses and is reaped)
//! and carries the job's **attempt number**, a fencing token that grows by
//! one on every claim of that job. A completion or an extension is accepted
//! only from the current attempt, so a worker that was presumed dead and
//! comes back is told so ([`Completion::Rejected`]) instead of finishing the
//! job a second time. As with [`crate::Lock`], the attempt is also what to
//! pass to a [`crate::FencedStore`] for the job's side effects.
//!
//! Keys (one hash tag per queue, `{name}`, so every script addresses a single
//! slot on Redis Cluster):
//!
//! | key | type | holds |
//! |---|---|---|
//! | `jobq:{name}:pending` | sorted set | ids waiting, scored by enqueue sequence number (FIFO; past 2^53, where one score holds several numbers, ties go to the least exact `seq` in the job's hash) |
//! | `jobq:{name}:active` | sorted set | ids claimed, scored by lease expiry (server ms) |
//! | `jobq:{name}:seq` | string | the enqueue sequence counter |
//! | `jobq:{name}:job:<id>` | hash | `payload`, `attempt`, `state`, `seq`, `lease_until` |
//!
//! Enqueue, claim, complete, extend and reap are each one atomic Lua script.
//! Lease times are Redis' own clock (`TIME`, inside the script), so workers
//! with skewed clocks agree on when a lease lapses; each worker bounds its
//! lease on its own monotonic clock with [`Claim::local_deadline`], measured
//! from when the claim was *sent*, less a [`Drift`] allowance, as for a
//! [`crate::Lease`].
//!
//! What it does **not** guarantee:
//! - nothing reaps by itself: a lapsed claim stays active (and its holder can
//!   still complete or extend it, since its attempt is still the job's) until
//!   someone calls [`JobQueue::reap`]. Lapsing is a permission to reclaim,
//!   not a revocation; the revocation is the next claim's higher attempt.
//! - at most once: a job whose holder lapsed is run again. What the fence
//!   gives is that only one attempt's completion is accepted, and that a
//!   resource checking the attempt refuses the older one's writes.
//! - finished jobs are kept (state `done`, no expiry), so an id is an
//!   idempotency key: enqueueing it again is [`Enqueued::AlreadyKnown`].
//!   Deleting old job hashes is the caller's business.
//! - attempts restart after a restart without persistence: the job's hash
//!   is lost with its attempt, so a job enqueued again is claimed at
//!   attempt 1, and a pre-restart worker's claim (attempt 1 too) completes
//!   it (as a lock's counter does; docs/guide/non-guarantees.md).
//! - a claim is checked by queue name only: a claim from queue "twin" on
//!   one server completes job "j" of queue "twin" on another, when the
//!   attempts agree.
//! - the claim and reap scripts build a job's key from its id, so that key is
//!   not declared in `KEYS`. It shares the queue's hash tag, hence the slot:
//!   Redis Cluster runs it, though strictly the docs ask for declared keys.
//!
//! ```no_run
//! # async fn demo(conn: redis::aio::MultiplexedConnection) -> redis_primitives::Result<()> {
//! use core::time::Duration;
//! use redis_primitives::{Completion, JobQueue, Ttl};
//!
//! let queue = JobQueue::new(conn, "emails")?;
//! queue.enqueue("welcome:42", b"to=alice@example.com").await?;
//!
//! let lease = Ttl::new(Duration::from_secs(30))?;
//! if let Some(claim) = queue.claim(lease).await? {
//!     // Pass claim.attempt() to every resource the job writes.
//!     println!("sending {} (attempt {})", claim.id(), claim.attempt());
//!     match queue.complete(&claim).await? {
//!         Completion::Accepted => {}
//!         Completion::Rejected { current_attempt, .. } => {
//!             eprintln!("our lease lapsed; attempt {current_attempt:?} owns the job now");
//!         }
//!     }
//! }
//! // Somewhere, periodically: return lapsed claims to the queue.
//! queue.reap().await?;
//! # Ok(()) }
//! ```

mod claim;
mod scripts;
#[cfg(test)]
mod tests;

use redis::{RedisError, Value};
use tokio::time::Instant;

use crate::connection::Connection;
use crate::drift::Drift;
use crate::error::{Error, Result};
use crate::instant::after;
use crate::keys::validate_name;
use crate::token::FencingToken;
use crate::ttl::Ttl;

pub use claim::Claim;
pub(crate) use scripts::{CLAIM, COMPLETE, ENQUEUE, EXTEND, REAP};
use scripts::{CLAIM_SCRIPT, COMPLETE_SCRIPT, ENQUEUE_SCRIPT, EXTEND_SCRIPT, REAP_SCRIPT};

/// A named job queue whose claims are fenced leases.
#[derive(Debug, Clone)]
pub struct JobQueue<C> {
    conn: C,
    name: String,
    /// `jobq:{name}`, the prefix of every key.
    base: String,
    drift: Drift,
}

/// What [`JobQueue::enqueue`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Enqueued {
    /// The job was added at the back of the queue.
    Added,
    /// A job with this id exists (pending, active or done); nothing changed.
    AlreadyKnown,
}

/// Where a job is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobState {
    /// Waiting to be claimed (new, or reaped after a lapsed claim).
    Pending,
    /// Claimed by a worker whose lease has not been reaped.
    Active,
    /// Completed by the attempt that held it.
    Done,
}

/// What [`JobQueue::complete`] did. A refusal is a value, not an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Completion {
    /// The job is done; this claim's attempt completed it.
    Accepted,
    /// The claim's attempt is no longer the job's (it was reaped and claimed
    /// again) or the job is not active (reaped and pending, or already done):
    /// a stale worker. Nothing changed.
    Rejected {
        /// The job's attempt now; `None` if the job is unknown.
        current_attempt: Option<FencingToken>,
        /// The job's state now; `None` if the job is unknown.
        state: Option<JobState>,
    },
}
impl<C> JobQueue<C> {
    /// The longest lease a claim or an extension takes: 2^52 ms (about
    /// 142,000 years). The scripts add the lease to the server's clock (unix
    /// ms) in a Lua number, a double, which is exact below 2^53: with the
    /// lease at most 2^52 and the clock below 2^52 (until the year 144,000)
    /// the lease's end is exact (ADR 0006). A [`Ttl`] goes up to 2^53 − 1.
    pub const MAX_LEASE_MILLIS: u64 = 1 << 52;
}

impl<C: Connection> JobQueue<C> {
    /// The queue `name` (keys `jobq:{name}:…`) with the default drift
    /// allowance ([`Drift::DEFAULT`], as for [`crate::Lock`]). A name that is
    /// empty or contains a brace is [`Error::InvalidInput`].
    pub fn new(conn: C, name: &str) -> Result<JobQueue<C>> {
        validate_name(name)?;
        Ok(JobQueue { conn, name: name.to_string(), base: format!("jobq:{{{name}}}"), drift: Drift::DEFAULT })
    }

    /// The drift allowance subtracted from every claim's local deadline.
    pub fn with_drift(mut self, drift: Drift) -> JobQueue<C> {
        self.drift = drift;
        self
    }

    /// The queue name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The drift allowance in force.
    pub fn drift(&self) -> Drift {
        self.drift
    }

    /// `jobq:{name}:pending`: a sorted set of waiting ids, scored by their
    /// enqueue sequence number.
    pub fn pending_key(&self) -> String {
        format!("{}:pending", self.base)
    }

    /// `jobq:{name}:active`: a sorted set of claimed ids, scored by lease
    /// expiry (server unix ms).
    pub fn active_key(&self) -> String {
        format!("{}:active", self.base)
    }

    /// `jobq:{name}:seq`: the enqueue sequence counter.
    pub fn seq_key(&self) -> String {
        format!("{}:seq", self.base)
    }

    /// `jobq:{name}:job:<id>`: the job's hash (`payload`, `attempt`,
    /// `state`, `seq`, `lease_until`). An id that is empty or contains a
    /// brace is [`Error::InvalidInput`].
    pub fn job_key(&self, id: &str) -> Result<String> {
        validate_id(id)?;
        Ok(format!("{}{id}", self.job_prefix()))
    }

    fn job_prefix(&self) -> String {
        format!("{}:job:", self.base)
    }

    /// Adds job `id` at the back of the queue, unless the id is known
    /// (pending, active or done: then nothing changes). A key of another type
    /// is [`Error::WrongType`]; a corrupt sequence counter, or the id pending
    /// without its hash, is [`Error::CorruptState`]; a server that refuses
    /// the write (`READONLY` on a replica, `OOM`) is [`Error::Redis`] with its
    /// code. None changes anything.
    pub async fn enqueue(&self, id: &str, payload: impl AsRef<[u8]>) -> Result<Enqueued> {
        let job = self.job_key(id)?;
        let pending = self.pending_key();
        let mut conn = self.conn.clone();
        let added: i64 = ENQUEUE_SCRIPT
            .call([&job, &pending, &self.seq_key()])
            .arg(id)
            .arg(payload.as_ref())
            .invoke_async(&mut conn)
            .await
            .map_err(|e| script_error(e, &job))?;
        Ok(if added == 1 { Enqueued::Added } else { Enqueued::AlreadyKnown })
    }

    /// Claims the oldest pending job for `lease` (server clock), giving it
    /// its next attempt number. `Ok(None)` when nothing is pending.
    ///
    /// A lease longer than [`JobQueue::MAX_LEASE_MILLIS`] is
    /// [`Error::InvalidInput`], refused before anything is sent.
    ///
    /// On `Err(e)` with `e.outcome_is_unknown()`, a job may have been
    /// claimed: it comes back through [`JobQueue::reap`] once `lease` lapses.
    /// A job at the head whose hash this library could not have written, or
    /// whose id is not UTF-8 (written by another client), is
    /// [`Error::CorruptState`] (nothing changed). A server that refuses the
    /// write (`READONLY`, `OOM`) is [`Error::Redis`] (nothing changed).
    pub async fn claim(&self, lease: Ttl) -> Result<Option<Claim>> {
        check_lease(lease)?;
        let pending = self.pending_key();
        // Everything that depends only on the input is computed before the
        // request is sent; after it, only parsing the reply can fail, and
        // that is a typed error.
        let usable = self.drift.usable(lease);
        let mut conn = self.conn.clone();
        let sent_at = Instant::now();
        let reply: Value = CLAIM_SCRIPT
            .call([&pending, &self.active_key()])
            .arg(self.job_prefix())
            .arg(lease.as_millis())
            .invoke_async(&mut conn)
            .await
            .map_err(|e| script_error(e, &pending))?;
        let items = match reply {
            Value::Nil => return Ok(None),
            Value::Array(items) => items,
            other => return Err(unexpected(&pending, format!("claim script returned {other:?}"))),
        };
        let [id, payload, attempt, lease_until] = <[Value; 4]>::try_from(items)
            .map_err(|items| unexpected(&pending, format!("claim script returned {} items, not 4", items.len())))?;
        let (Value::BulkString(id), Value::BulkString(payload), Value::BulkString(attempt)) = (id, payload, attempt)
        else {
            return Err(unexpected(&pending, "claim script returned a non-string id, payload or attempt"));
        };
        let id = String::from_utf8(id).map_err(|_| unexpected(&pending, "claim script returned a non-UTF-8 id"))?;
        let key = format!("{}{id}", self.job_prefix());
        let attempt = FencingToken::parse_canonical(&attempt)
            .filter(|a| a.get() > 0)
            .ok_or_else(|| unexpected(&key, "claim script returned an attempt that is not a positive integer"))?;
        let lease_until_ms = lease_until_from(lease_until, &key)?;
        Ok(Some(Claim {
            queue: self.name.clone(),
            id,
            key,
            payload,
            attempt,
            lease_until_ms,
            sent_at,
            deadline: after(sent_at, usable),
        }))
    }

    /// Marks the claimed job done, if `claim`'s attempt is still the job's
    /// and the job is active. Otherwise nothing changes and the answer is
    /// [`Completion::Rejected`] with the job's attempt and state now.
    ///
    /// A claim whose lease lapsed but was not yet reaped is still the job's
    /// current attempt, so its completion is accepted: no one else can have
    /// claimed the job in between. A claim from another queue is
    /// [`Error::InvalidInput`].
    pub async fn complete(&self, claim: &Claim) -> Result<Completion> {
        self.check_claim(claim)?;
        let mut conn = self.conn.clone();
        let reply: Value = COMPLETE_SCRIPT
            .call([&claim.key, &self.active_key()])
            .arg(&claim.id)
            .arg(claim.attempt.get())
            .invoke_async(&mut conn)
            .await
            .map_err(|e| script_error(e, &claim.key))?;
        let items = match reply {
            Value::Array(items) => items,
            other => return Err(unexpected(&claim.key, format!("complete script returned {other:?}"))),
        };
        match items.as_slice() {
            [Value::Int(1)] => Ok(Completion::Accepted),
            [Value::Int(0), attempt, state] => {
                let current_attempt = match attempt {
                    Value::Nil => None,
                    Value::BulkString(text) => Some(parse_attempt(text, &claim.key)?),
                    other => return Err(unexpected(&claim.key, format!("complete script returned attempt {other:?}"))),
                };
                let state = match state {
                    Value::Nil => None,
                    Value::BulkString(text) => Some(parse_state(text, &claim.key)?),
                    other => return Err(unexpected(&claim.key, format!("complete script returned state {other:?}"))),
                };
                if current_attempt.is_some() != state.is_some() {
                    return Err(Error::corrupt(
                        &claim.key,
                        "half-written job hash (an attempt without a state or the reverse)",
                    ));
                }
                Ok(Completion::Rejected { current_attempt, state })
            }
            other => Err(unexpected(&claim.key, format!("complete script returned {other:?}"))),
        }
    }

    /// Sets `claim`'s lease to `lease` from now (server clock), if its
    /// attempt is still the job's and the job is active. On `Ok(true)` the
    /// claim's `lease_until_ms`, `sent_at` and local deadline move forward,
    /// measured from when this request was sent. `Ok(false)` leaves the claim
    /// and the job unchanged: a reaped job is not made active again, another
    /// attempt's lease is not touched.
    ///
    /// On `Err` the extension may still have run (its reply was lost), so
    /// the claim's local deadline becomes the earlier of its own and the one
    /// this request would have given: an extension to a *shorter* lease may
    /// have moved the server's lease closer, and the claim must not trust
    /// itself past it.
    ///
    /// A lease longer than [`JobQueue::MAX_LEASE_MILLIS`] is
    /// [`Error::InvalidInput`], refused before anything is sent.
    pub async fn extend(&self, claim: &mut Claim, lease: Ttl) -> Result<bool> {
        self.check_claim(claim)?;
        check_lease(lease)?;
        let usable = self.drift.usable(lease);
        let sent_at = Instant::now();
        match self.extend_request(claim, lease).await {
            Ok(Some(lease_until_ms)) => {
                claim.lease_until_ms = lease_until_ms;
                claim.sent_at = sent_at;
                claim.deadline = after(sent_at, usable);
                Ok(true)
            }
            Ok(None) => Ok(false),
            Err(e) => {
                claim.deadline = claim.deadline.min(after(sent_at, usable));
                Err(e)
            }
        }
    }

    /// The extension's request: the new lease end, or `None` when refused.
    async fn extend_request(&self, claim: &Claim, lease: Ttl) -> Result<Option<u64>> {
        let mut conn = self.conn.clone();
        let reply: Value = EXTEND_SCRIPT
            .call([&claim.key, &self.active_key()])
            .arg(&claim.id)
            .arg(claim.attempt.get())
            .arg(lease.as_millis())
            .invoke_async(&mut conn)
            .await
            .map_err(|e| script_error(e, &claim.key))?;
        if reply == Value::Nil {
            return Ok(None);
        }
        lease_until_from(reply, &claim.key).map(Some)
    }

    /// Returns every claim whose lease has lapsed on the server's clock to
    /// the queue, in its original FIFO place, up to 100 per call (call again
    /// while it returns 100). Returns the ids moved. A reaped job is pending
    /// again: its holder's [`JobQueue::complete`] and [`JobQueue::extend`]
    /// are refused from then on (they need the job active), even before
    /// anyone claims it again, so a holder that was merely slow learns it
    /// lost the job and the next claim runs it.
    ///
    /// A lapsed id that is not UTF-8 (written by another client), or whose
    /// hash is not an active job's, is [`Error::CorruptState`] and nothing
    /// is moved: every id is checked before the first write, so an error
    /// never hides moves already made.
    pub async fn reap(&self) -> Result<Vec<String>> {
        let active = self.active_key();
        let mut conn = self.conn.clone();
        let ids: Vec<Vec<u8>> = REAP_SCRIPT
            .call([&active, &self.pending_key()])
            .arg(self.job_prefix())
            .invoke_async(&mut conn)
            .await
            .map_err(|e| script_error(e, &active))?;
        ids.into_iter()
            .map(|id| String::from_utf8(id).map_err(|_| unexpected(&active, "reap script returned a non-UTF-8 id")))
            .collect()
    }

    /// The state of job `id`; `None` when the id is unknown.
    pub async fn state(&self, id: &str) -> Result<Option<JobState>> {
        let job = self.job_key(id)?;
        let mut conn = self.conn.clone();
        let raw: Option<Vec<u8>> = redis::cmd("HGET")
            .arg(&job)
            .arg("state")
            .query_async(&mut conn)
            .await
            .map_err(|e| Error::from_redis(e, &job))?;
        raw.map(|text| parse_state(&text, &job)).transpose()
    }

    /// A claim handed out by another queue would address this queue's slot
    /// with another queue's job key.
    fn check_claim(&self, claim: &Claim) -> Result<()> {
        if claim.queue == self.name {
            Ok(())
        } else {
            Err(Error::invalid(
                "claim",
                format!("claim of {:?} belongs to queue {:?}, not {:?}", claim.id, claim.queue, self.name),
            ))
        }
    }
}

/// A lease the scripts can add to the server's clock exactly.
fn check_lease(lease: Ttl) -> Result<()> {
    if lease.as_millis() <= JobQueue::<()>::MAX_LEASE_MILLIS {
        Ok(())
    } else {
        Err(Error::invalid("lease", format!("{} ms is longer than a job's longest lease, 2^52 ms", lease.as_millis())))
    }
}

/// Job ids follow the rules of names ([`validate_name`]), reported as ids.
fn validate_id(id: &str) -> Result<()> {
    validate_name(id).map_err(|e| match e {
        Error::InvalidInput { why, .. } => Error::invalid("job id", why),
        other => other,
    })
}

/// Classifies a script error. The scripts' `CORRUPT` replies name the key at
/// fault first (`CORRUPT jobq:{q}:job:7 …`): claim and reap find it only
/// inside the script.
fn script_error(e: RedisError, first_key: &str) -> Error {
    match Error::from_redis(e, first_key) {
        Error::CorruptState { key, detail } => match detail.split_once(' ') {
            Some((named, rest)) if named.starts_with("jobq:{") => Error::corrupt(named, rest),
            _ => Error::CorruptState { key, detail },
        },
        other => other,
    }
}

fn unexpected(key: &str, detail: impl Into<String>) -> Error {
    Error::UnexpectedReply { key: key.to_string(), detail: detail.into() }
}

/// A lease expiry as the scripts return it: server unix ms, decimal text.
fn lease_until_from(reply: Value, key: &str) -> Result<u64> {
    match reply {
        Value::BulkString(text) => FencingToken::parse_canonical(&text).map(FencingToken::get),
        Value::Int(n) => u64::try_from(n).ok(),
        _ => None,
    }
    .ok_or_else(|| unexpected(key, "script returned a lease expiry that is not a non-negative integer"))
}

/// A stored attempt, which the scripts only ever write in canonical form.
fn parse_attempt(text: &[u8], key: &str) -> Result<FencingToken> {
    FencingToken::parse_canonical(text).ok_or_else(|| {
        Error::corrupt(key, format!("attempt {:?} is not a canonical decimal u64", String::from_utf8_lossy(text)))
    })
}

fn parse_state(text: &[u8], key: &str) -> Result<JobState> {
    match text {
        b"pending" => Ok(JobState::Pending),
        b"active" => Ok(JobState::Active),
        b"done" => Ok(JobState::Done),
        other => Err(Error::corrupt(
            key,
            format!("state {:?} is not pending, active or done", String::from_utf8_lossy(other)),
        )),
    }
}
