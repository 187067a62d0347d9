//! `JobQueue`: a job queue whose claims are leases with a per-job fence.
//!
//! A worker that claims a job may die, or pause (a GC, a swap storm, a
//! partition) for longer than anyone can wait. A queue that only moves jobs
//! from "pending" to "processing" ([`crate::naive::NaiveJobQueue`]) cannot
//! tell the two apart, so it either loses the dead worker's job or hands a
//! slow worker's job out twice and accepts both completions. Here a claim is
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
//! | `jobq:{name}:pending` | sorted set | ids waiting, scored by enqueue sequence number (FIFO) |
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

// The five scripts live here, inline, rather than one per file under
// `scripts/` like the other primitives': they share one key layout and one
// state machine (pending → active → done, active → pending on reap), and a
// change to one almost always needs the others, so they are kept on one
// page on purpose. They still load through `script_source`, so the
// mutation-hooks seam can replace each by name (`job_enqueue`, …).

use std::sync::LazyLock;

use redis::{RedisError, Value};

use crate::script_source::Script;
use tokio::time::Instant;

use crate::connection::Connection;
use crate::drift::Drift;
use crate::error::{Error, Result};
use crate::instant::after;
use crate::keys::validate_name;
use crate::script_source;
use crate::token::FencingToken;
use crate::ttl::Ttl;

/// Enqueue a job unless its id is known.
pub(crate) const ENQUEUE: script_source::Builtin = script_source::Builtin {
    name: "job_enqueue",
    text: r#"
-- KEYS[1] job hash, KEYS[2] pending set, KEYS[3] sequence counter
-- ARGV[1] id, ARGV[2] payload
-- Returns 1 when added, 0 when the id is already known (nothing changed).
-- Errors (nothing changed by either): WRONGTYPE; CORRUPT when the id is
-- pending without a job hash or the counter is not a positive integer.
-- Every command that can fail runs before the first write: Redis does not
-- roll a script back. HLEN and ZSCORE double as type checks.
if redis.call('HLEN', KEYS[1]) > 0 then
  return 0
end
if redis.call('ZSCORE', KEYS[2], ARGV[1]) then
  return redis.error_reply('CORRUPT ' .. KEYS[1] .. ' is missing but its id is pending')
end
local seq = redis.pcall('INCR', KEYS[3])
if type(seq) == 'table' then
  if string.sub(seq.err, 1, 9) == 'WRONGTYPE' then
    return seq
  end
  return redis.error_reply('CORRUPT ' .. KEYS[3] .. ' ' .. seq.err)
end
if seq < 1 then
  redis.call('DECR', KEYS[3])
  return redis.error_reply('CORRUPT ' .. KEYS[3] .. ' is negative')
end
-- INCR's reply is a double in Lua; the counter's own text is exact.
local seqs = redis.call('GET', KEYS[3])
redis.call('ZADD', KEYS[2], seqs, ARGV[1])
redis.call('HSET', KEYS[1], 'payload', ARGV[2], 'state', 'pending', 'attempt', '0', 'seq', seqs)
return 1
"#,
};

/// Claim the oldest pending job for a lease.
pub(crate) const CLAIM: script_source::Builtin = script_source::Builtin {
    name: "job_claim",
    text: r#"
-- KEYS[1] pending set, KEYS[2] active set
-- ARGV[1] job key prefix (jobq:{name}:job:), ARGV[2] lease in ms
-- Returns nil when nothing is pending, else {id, payload, attempt,
-- lease_until}: the attempt is the hash field's exact decimal text (a Lua
-- number is a double, inexact past 2^53), lease_until is server unix ms.
-- Errors (nothing changed by either): WRONGTYPE; CORRUPT when the head's job
-- hash is missing, half-written, not pending, or its attempt is not a
-- canonical decimal HINCRBY can advance.
local head = redis.call('ZRANGE', KEYS[1], 0, 0)
local id = head[1]
if not id then
  return false
end
local job = ARGV[1] .. id
if redis.call('ZSCORE', KEYS[2], id) then
  return redis.error_reply('CORRUPT ' .. job .. ' is both pending and active')
end
local f = redis.call('HMGET', job, 'attempt', 'state', 'seq', 'payload')
local attempt, state, seq, payload = f[1], f[2], f[3], f[4]
if not attempt or not payload then
  return redis.error_reply('CORRUPT ' .. job .. ' is pending but its hash is missing or half-written')
end
if attempt ~= '0' and not string.find(attempt, '^[1-9]%d*$') then
  return redis.error_reply('CORRUPT ' .. job .. ' attempt is not a canonical decimal')
end
if state ~= 'pending' then
  return redis.error_reply('CORRUPT ' .. job .. ' is in the pending set but its state is not pending')
end
if not seq or not string.find(seq, '^[1-9]%d*$') then
  return redis.error_reply('CORRUPT ' .. job .. ' seq is not a positive canonical decimal')
end
local bumped = redis.pcall('HINCRBY', job, 'attempt', 1)
if type(bumped) == 'table' then
  return redis.error_reply('CORRUPT ' .. job .. ' attempt cannot be advanced: ' .. bumped.err)
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease_until = string.format('%.0f', now + tonumber(ARGV[2]))
redis.call('ZREM', KEYS[1], id)
redis.call('ZADD', KEYS[2], lease_until, id)
redis.call('HSET', job, 'state', 'active', 'lease_until', lease_until)
return {id, payload, redis.call('HGET', job, 'attempt'), lease_until}
"#,
};

/// Complete a claimed job, if the claim's attempt is still the job's.
pub(crate) const COMPLETE: script_source::Builtin = script_source::Builtin {
    name: "job_complete",
    text: r#"
-- KEYS[1] job hash, KEYS[2] active set
-- ARGV[1] id, ARGV[2] the claim's attempt (canonical decimal)
-- Returns {1} when accepted; {0, attempt, state} (either may be nil) when
-- refused, with nothing changed.
-- Attempts are compared as strings: the client's is canonical, so equality
-- is numeric equality at any size.
local f = redis.call('HMGET', KEYS[1], 'attempt', 'state')
if f[1] == ARGV[2] and f[2] == 'active' then
  if redis.call('ZREM', KEYS[2], ARGV[1]) == 0 then
    return redis.error_reply('CORRUPT ' .. KEYS[1] .. ' is active but not in the active set')
  end
  redis.call('HSET', KEYS[1], 'state', 'done')
  return {1}
end
return {0, f[1], f[2]}
"#,
};

/// Extend a claim's lease, if its attempt is still the job's and active.
pub(crate) const EXTEND: script_source::Builtin = script_source::Builtin {
    name: "job_extend",
    text: r#"
-- KEYS[1] job hash, KEYS[2] active set
-- ARGV[1] id, ARGV[2] the claim's attempt, ARGV[3] lease in ms (from now)
-- Returns the new lease_until (server unix ms, decimal text), or nil when
-- the attempt is not the job's or the job is not active: nothing changed,
-- in particular a reaped job is not made active again.
local f = redis.call('HMGET', KEYS[1], 'attempt', 'state')
if f[1] ~= ARGV[2] or f[2] ~= 'active' then
  return false
end
if not redis.call('ZSCORE', KEYS[2], ARGV[1]) then
  return redis.error_reply('CORRUPT ' .. KEYS[1] .. ' is active but not in the active set')
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local lease_until = string.format('%.0f', now + tonumber(ARGV[3]))
redis.call('ZADD', KEYS[2], 'XX', lease_until, ARGV[1])
redis.call('HSET', KEYS[1], 'lease_until', lease_until)
return lease_until
"#,
};

/// Return up to 100 lapsed claims to the pending set, in their FIFO place.
pub(crate) const REAP: script_source::Builtin = script_source::Builtin {
    name: "job_reap",
    text: r#"
-- KEYS[1] active set, KEYS[2] pending set
-- ARGV[1] job key prefix (jobq:{name}:job:)
-- Returns the ids moved back (at most BATCH; call again while it is full).
-- A lease lapses at lease_until: score <= now. Each job goes back under its
-- original sequence number, so it keeps its place in the queue.
-- Errors (nothing changed): WRONGTYPE; CORRUPT when a lapsed id's hash is
-- not active or has no canonical seq. All are checked before any write.
local BATCH = 100
local t = redis.call('TIME')
local now = string.format('%.0f', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, BATCH)
if #due == 0 then
  return due
end
redis.call('ZCARD', KEYS[2])
local seqs = {}
for i, id in ipairs(due) do
  local job = ARGV[1] .. id
  local f = redis.call('HMGET', job, 'state', 'seq')
  if f[1] ~= 'active' then
    return redis.error_reply('CORRUPT ' .. job .. ' is in the active set but its state is not active')
  end
  if not f[2] or not string.find(f[2], '^[1-9]%d*$') then
    return redis.error_reply('CORRUPT ' .. job .. ' seq is not a positive canonical decimal')
  end
  seqs[i] = f[2]
end
for i, id in ipairs(due) do
  redis.call('ZREM', KEYS[1], id)
  redis.call('ZADD', KEYS[2], seqs[i], id)
  redis.call('HSET', ARGV[1] .. id, 'state', 'pending')
end
return due
"#,
};

static ENQUEUE_SCRIPT: LazyLock<Script> = LazyLock::new(|| script_source::script(ENQUEUE));
static CLAIM_SCRIPT: LazyLock<Script> = LazyLock::new(|| script_source::script(CLAIM));
static COMPLETE_SCRIPT: LazyLock<Script> = LazyLock::new(|| script_source::script(COMPLETE));
static EXTEND_SCRIPT: LazyLock<Script> = LazyLock::new(|| script_source::script(EXTEND));
static REAP_SCRIPT: LazyLock<Script> = LazyLock::new(|| script_source::script(REAP));

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

/// A claimed job: its payload, its attempt (the fence) and its lease.
#[derive(Debug, Clone)]
pub struct Claim {
    queue: String,
    id: String,
    key: String,
    payload: Vec<u8>,
    attempt: FencingToken,
    lease_until_ms: u64,
    sent_at: Instant,
    deadline: Instant,
}

impl Claim {
    /// The job id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The job's payload, as enqueued.
    pub fn payload(&self) -> &[u8] {
        &self.payload
    }

    /// The attempt number: 1 for the job's first claim, one more for every
    /// later one. It is a fencing token: pass it to every resource the job
    /// writes, so a resource can refuse a worker whose claim was superseded.
    pub fn attempt(&self) -> FencingToken {
        self.attempt
    }

    /// When the lease lapses on the server's clock (unix ms), as set by the
    /// claim or the last successful extend. Exact below 2^53 ms.
    pub fn lease_until_ms(&self) -> u64 {
        self.lease_until_ms
    }

    /// When the claim (or the last successful extend) request was sent.
    pub fn sent_at(&self) -> Instant {
        self.sent_at
    }

    /// `sent_at + lease − drift allowance`: the instant after which the
    /// worker must assume its claim may have been reaped and handed on.
    pub fn local_deadline(&self) -> Instant {
        self.deadline
    }

    /// Whether the local deadline is still ahead. `true` does not prove the
    /// claim is still the job's; `false` proves the worker must stop acting
    /// on it (it may still try [`JobQueue::complete`], which will say).
    pub fn is_trusted(&self) -> bool {
        Instant::now() < self.deadline
    }
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
    /// without its hash, is [`Error::CorruptState`]. Neither changes anything.
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
    /// On `Err(e)` with `e.outcome_is_unknown()`, a job may have been
    /// claimed: it comes back through [`JobQueue::reap`] once `lease` lapses.
    /// A job at the head whose hash this library could not have written is
    /// [`Error::CorruptState`] (nothing changed).
    pub async fn claim(&self, lease: Ttl) -> Result<Option<Claim>> {
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
    pub async fn extend(&self, claim: &mut Claim, lease: Ttl) -> Result<bool> {
        self.check_claim(claim)?;
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
    /// while it returns 100). Returns the ids moved. Their holders' attempts
    /// stay the jobs' until the next claim, so a holder that is merely slow
    /// can still complete before someone claims the job again.
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

#[cfg(test)]
mod tests {
    //! Against a real redis-server per test (redis-primitives-testkit); no mocks.

    use core::time::Duration;

    use redis::aio::MultiplexedConnection;
    use redis_primitives_testkit::RedisServer;

    use super::*;
    use crate::naive::NaiveJobQueue;

    fn server() -> RedisServer {
        match RedisServer::start() {
            Ok(s) => s,
            Err(e) => panic!("{e}"),
        }
    }

    /// A generous response timeout: these tests assert outcomes, not
    /// latency, and must not fail on a loaded machine.
    async fn connect(server: &RedisServer) -> MultiplexedConnection {
        let client = redis::Client::open(server.url()).expect("valid url");
        let config = redis::AsyncConnectionConfig::new().set_response_timeout(Some(Duration::from_secs(10)));
        client.get_multiplexed_async_connection_with_config(&config).await.expect("connect to test redis-server")
    }

    fn ms(n: u64) -> Ttl {
        Ttl::from_millis(n).expect("valid ttl")
    }

    async fn queue(server: &RedisServer, name: &str) -> JobQueue<MultiplexedConnection> {
        JobQueue::new(connect(server).await, name).expect("valid name")
    }

    async fn score(conn: &mut MultiplexedConnection, key: &str, member: &str) -> Option<u64> {
        redis::cmd("ZSCORE").arg(key).arg(member).query_async(conn).await.expect("ZSCORE")
    }

    #[tokio::test]
    async fn enqueue_claim_complete_happy_path() {
        let s = server();
        let q = queue(&s, "happy").await;
        let mut conn = connect(&s).await;
        assert_eq!(q.enqueue("a", b"payload-a").await.unwrap(), Enqueued::Added);
        assert_eq!(q.state("a").await.unwrap(), Some(JobState::Pending));

        let claim = q.claim(ms(10_000)).await.unwrap().expect("a job is pending");
        assert_eq!(claim.id(), "a");
        assert_eq!(claim.payload(), b"payload-a");
        assert_eq!(claim.attempt(), FencingToken::new(1));
        assert!(claim.is_trusted());
        assert_eq!(q.state("a").await.unwrap(), Some(JobState::Active));
        assert_eq!(score(&mut conn, &q.active_key(), "a").await, Some(claim.lease_until_ms()));
        assert_eq!(score(&mut conn, &q.pending_key(), "a").await, None);
        assert!(q.reap().await.unwrap().is_empty(), "a live lease is not reaped");

        assert_eq!(q.complete(&claim).await.unwrap(), Completion::Accepted);
        assert_eq!(q.state("a").await.unwrap(), Some(JobState::Done));
        assert_eq!(score(&mut conn, &q.active_key(), "a").await, None);
        assert!(q.claim(ms(10_000)).await.unwrap().is_none(), "a done job is not handed out again");
    }

    #[tokio::test]
    async fn second_enqueue_is_already_known_and_changes_nothing() {
        let s = server();
        let q = queue(&s, "dup").await;
        assert_eq!(q.enqueue("a", b"first").await.unwrap(), Enqueued::Added);
        assert_eq!(q.enqueue("a", b"second").await.unwrap(), Enqueued::AlreadyKnown);
        let claim = q.claim(ms(10_000)).await.unwrap().unwrap();
        assert_eq!(claim.payload(), b"first");
        assert!(q.claim(ms(10_000)).await.unwrap().is_none(), "the id was queued once");
        // Known while active and once done, too.
        assert_eq!(q.enqueue("a", b"third").await.unwrap(), Enqueued::AlreadyKnown);
        q.complete(&claim).await.unwrap();
        assert_eq!(q.enqueue("a", b"fourth").await.unwrap(), Enqueued::AlreadyKnown);
        assert_eq!(q.state("a").await.unwrap(), Some(JobState::Done));
    }

    #[tokio::test]
    async fn claims_come_out_in_enqueue_order() {
        let s = server();
        let q = queue(&s, "fifo").await;
        // Ids that sort the other way lexicographically.
        for id in ["c", "b", "a", "10", "9"] {
            q.enqueue(id, id).await.unwrap();
        }
        let mut order = Vec::new();
        while let Some(claim) = q.claim(ms(10_000)).await.unwrap() {
            assert_eq!(claim.payload(), claim.id().as_bytes());
            order.push(claim.id().to_string());
        }
        assert_eq!(order, ["c", "b", "a", "10", "9"]);
    }

    #[tokio::test]
    async fn claim_on_empty_queue_is_none() {
        let s = server();
        let q = queue(&s, "empty").await;
        assert!(q.claim(ms(1_000)).await.unwrap().is_none());
        assert!(q.reap().await.unwrap().is_empty());
        assert_eq!(q.state("nope").await.unwrap(), None);
    }

    #[tokio::test]
    async fn lapsed_lease_is_reaped_reclaimed_and_the_stale_worker_is_rejected() {
        let s = server();
        let q = queue(&s, "lapse").await;
        let mut conn = connect(&s).await;
        q.enqueue("a", b"x").await.unwrap();
        let first = q.claim(ms(100)).await.unwrap().unwrap();
        assert_eq!(first.attempt(), FencingToken::new(1));

        tokio::time::sleep(Duration::from_millis(250)).await;
        assert!(!first.is_trusted());
        assert_eq!(q.reap().await.unwrap(), ["a"]);
        assert_eq!(q.state("a").await.unwrap(), Some(JobState::Pending));
        assert_eq!(score(&mut conn, &q.active_key(), "a").await, None);
        assert!(q.reap().await.unwrap().is_empty(), "reaped once");

        let second = q.claim(ms(10_000)).await.unwrap().unwrap();
        assert_eq!(second.id(), "a");
        assert_eq!(second.attempt(), FencingToken::new(2));

        assert_eq!(
            q.complete(&first).await.unwrap(),
            Completion::Rejected { current_attempt: Some(FencingToken::new(2)), state: Some(JobState::Active) }
        );
        assert_eq!(q.state("a").await.unwrap(), Some(JobState::Active), "the stale completion changed nothing");
        assert_eq!(q.complete(&second).await.unwrap(), Completion::Accepted);
        assert_eq!(q.state("a").await.unwrap(), Some(JobState::Done));
    }

    #[tokio::test]
    async fn reaped_job_keeps_its_place_in_the_queue() {
        let s = server();
        let q = queue(&s, "place").await;
        q.enqueue("first", b"1").await.unwrap();
        let claim = q.claim(ms(50)).await.unwrap().unwrap();
        assert_eq!(claim.id(), "first");
        q.enqueue("second", b"2").await.unwrap();
        tokio::time::sleep(Duration::from_millis(150)).await;
        assert_eq!(q.reap().await.unwrap(), ["first"]);
        assert_eq!(q.claim(ms(10_000)).await.unwrap().unwrap().id(), "first");
        assert_eq!(q.claim(ms(10_000)).await.unwrap().unwrap().id(), "second");
    }

    #[tokio::test]
    async fn lapsed_but_unreaped_claim_can_still_complete() {
        let s = server();
        let q = queue(&s, "late").await;
        q.enqueue("a", b"x").await.unwrap();
        let claim = q.claim(ms(50)).await.unwrap().unwrap();
        tokio::time::sleep(Duration::from_millis(150)).await;
        assert_eq!(q.complete(&claim).await.unwrap(), Completion::Accepted);
        assert!(q.reap().await.unwrap().is_empty(), "a done job is not reaped");
        assert_eq!(q.state("a").await.unwrap(), Some(JobState::Done));
    }

    #[tokio::test]
    async fn extend_moves_the_lease_forward_while_active() {
        let s = server();
        let q = queue(&s, "extend").await;
        let mut conn = connect(&s).await;
        q.enqueue("a", b"x").await.unwrap();
        let mut claim = q.claim(ms(200)).await.unwrap().unwrap();
        let (until0, sent0) = (claim.lease_until_ms(), claim.sent_at());
        tokio::time::sleep(Duration::from_millis(20)).await;

        let before = Instant::now();
        assert!(q.extend(&mut claim, ms(10_000)).await.unwrap());
        assert!(claim.lease_until_ms() >= until0 + 9_800, "{} vs {until0}", claim.lease_until_ms());
        assert_eq!(score(&mut conn, &q.active_key(), "a").await, Some(claim.lease_until_ms()));
        assert!(claim.sent_at() > sent0 && claim.sent_at() >= before && claim.sent_at() <= Instant::now());
        assert_eq!(claim.local_deadline() - claim.sent_at(), Drift::DEFAULT.usable(ms(10_000)));

        // Past the first lease's end, the extended one is not reaped.
        tokio::time::sleep(Duration::from_millis(250)).await;
        assert!(q.reap().await.unwrap().is_empty());
        assert_eq!(q.complete(&claim).await.unwrap(), Completion::Accepted);
    }

    #[tokio::test]
    async fn extend_is_refused_after_reap_and_after_reclaim() {
        let s = server();
        let q = queue(&s, "extend-stale").await;
        let mut conn = connect(&s).await;
        q.enqueue("a", b"x").await.unwrap();
        let mut first = q.claim(ms(100)).await.unwrap().unwrap();
        tokio::time::sleep(Duration::from_millis(250)).await;
        assert_eq!(q.reap().await.unwrap(), ["a"]);

        // Reaped, not yet claimed again: no resurrection.
        let (until, sent, deadline) = (first.lease_until_ms(), first.sent_at(), first.local_deadline());
        assert!(!q.extend(&mut first, ms(10_000)).await.unwrap());
        assert_eq!(q.state("a").await.unwrap(), Some(JobState::Pending));
        assert_eq!(score(&mut conn, &q.active_key(), "a").await, None);
        assert_eq!((first.lease_until_ms(), first.sent_at(), first.local_deadline()), (until, sent, deadline));

        // Claimed again: someone else's attempt is left alone.
        let second = q.claim(ms(5_000)).await.unwrap().unwrap();
        assert!(!q.extend(&mut first, ms(60_000)).await.unwrap());
        assert_eq!(score(&mut conn, &q.active_key(), "a").await, Some(second.lease_until_ms()));
        assert_eq!(first.lease_until_ms(), until);
    }

    #[tokio::test]
    async fn completing_twice_is_rejected_as_done() {
        let s = server();
        let q = queue(&s, "twice").await;
        q.enqueue("a", b"x").await.unwrap();
        let mut claim = q.claim(ms(10_000)).await.unwrap().unwrap();
        assert_eq!(q.complete(&claim).await.unwrap(), Completion::Accepted);
        assert_eq!(
            q.complete(&claim).await.unwrap(),
            Completion::Rejected { current_attempt: Some(FencingToken::new(1)), state: Some(JobState::Done) }
        );
        assert!(!q.extend(&mut claim, ms(10_000)).await.unwrap(), "a done job is not extended");
    }

    #[tokio::test]
    async fn complete_of_an_unknown_job_is_rejected_with_nothing() {
        let s = server();
        let q = queue(&s, "gone").await;
        let mut conn = connect(&s).await;
        q.enqueue("a", b"x").await.unwrap();
        let claim = q.claim(ms(10_000)).await.unwrap().unwrap();
        let _: () = redis::cmd("DEL").arg(q.job_key("a").unwrap()).query_async(&mut conn).await.unwrap();
        assert_eq!(q.complete(&claim).await.unwrap(), Completion::Rejected { current_attempt: None, state: None });
    }

    #[tokio::test]
    async fn local_deadline_is_sent_at_plus_lease_minus_allowance() {
        let s = server();
        let q = queue(&s, "deadline").await;
        q.enqueue("a", b"x").await.unwrap();
        q.enqueue("b", b"y").await.unwrap();

        let before = Instant::now();
        let claim = q.claim(ms(10_000)).await.unwrap().unwrap();
        let after_reply = Instant::now();
        assert!(claim.sent_at() >= before && claim.sent_at() <= after_reply, "measured from the send");
        // 1 % of 10 s plus 2 ms.
        assert_eq!(claim.local_deadline() - claim.sent_at(), Duration::from_millis(10_000 - 100 - 2));

        let q = q.with_drift(Drift::NONE);
        let claim = q.claim(ms(10_000)).await.unwrap().unwrap();
        assert_eq!(claim.local_deadline() - claim.sent_at(), Duration::from_millis(10_000));
    }

    #[tokio::test]
    async fn invalid_names_and_ids_are_refused_before_anything_is_sent() {
        let s = server();
        let conn = connect(&s).await;
        for bad in ["", "a{b", "a}b"] {
            match JobQueue::new(conn.clone(), bad) {
                Err(Error::InvalidInput { what: "name", .. }) => {}
                other => panic!("queue name {bad:?}: expected InvalidInput, got {other:?}"),
            }
        }
        let q = JobQueue::new(conn, "valid").unwrap();
        let _ = s.command(&["CONFIG", "RESETSTAT"]).unwrap();
        for bad in ["", "x{y}", "}"] {
            assert!(matches!(q.job_key(bad), Err(Error::InvalidInput { what: "job id", .. })), "{bad:?}");
            assert!(matches!(q.enqueue(bad, b"p").await, Err(Error::InvalidInput { what: "job id", .. })), "{bad:?}");
            assert!(matches!(q.state(bad).await, Err(Error::InvalidInput { what: "job id", .. })), "{bad:?}");
        }
        let stats = s.command(&["INFO", "commandstats"]).unwrap();
        for cmd in ["cmdstat_eval", "cmdstat_evalsha", "cmdstat_hget", "cmdstat_script"] {
            assert!(!stats.contains(&format!("{cmd}:")), "{cmd} was sent: {stats}");
        }
        assert_eq!(s.command(&["DBSIZE"]).unwrap().trim(), ":0");
    }

    #[tokio::test]
    async fn claim_from_another_queue_is_invalid_input() {
        let s = server();
        let a = queue(&s, "qa").await;
        let b = queue(&s, "qb").await;
        a.enqueue("j", b"x").await.unwrap();
        b.enqueue("j", b"x").await.unwrap();
        let mut claim = a.claim(ms(10_000)).await.unwrap().unwrap();
        assert!(matches!(b.complete(&claim).await, Err(Error::InvalidInput { what: "claim", .. })));
        assert!(matches!(b.extend(&mut claim, ms(10_000)).await, Err(Error::InvalidInput { what: "claim", .. })));
        assert_eq!(b.state("j").await.unwrap(), Some(JobState::Pending));
    }

    #[tokio::test]
    async fn corrupt_attempt_is_corrupt_state_and_changes_nothing() {
        let s = server();
        let q = queue(&s, "corrupt").await;
        let mut conn = connect(&s).await;
        q.enqueue("a", b"x").await.unwrap();
        let job = q.job_key("a").unwrap();
        for bad in ["x", "01", "-1", ""] {
            let _: () = redis::cmd("HSET").arg(&job).arg("attempt").arg(bad).query_async(&mut conn).await.unwrap();
            match q.claim(ms(10_000)).await {
                Err(Error::CorruptState { key, .. }) => assert_eq!(key, job, "attempt {bad:?}"),
                other => panic!("attempt {bad:?}: expected CorruptState, got {other:?}"),
            }
            let attempt: String = redis::cmd("HGET").arg(&job).arg("attempt").query_async(&mut conn).await.unwrap();
            assert_eq!(attempt, bad, "nothing changed");
            assert!(score(&mut conn, &q.pending_key(), "a").await.is_some(), "still pending");
            assert_eq!(score(&mut conn, &q.active_key(), "a").await, None, "not active");
            assert_eq!(q.state("a").await.unwrap(), Some(JobState::Pending));
        }
        // One HINCRBY cannot advance: refused too, before any write.
        let max = i64::MAX.to_string();
        let _: () = redis::cmd("HSET").arg(&job).arg("attempt").arg(&max).query_async(&mut conn).await.unwrap();
        assert!(matches!(q.claim(ms(10_000)).await, Err(Error::CorruptState { .. })));
        assert_eq!(q.state("a").await.unwrap(), Some(JobState::Pending));
        assert!(score(&mut conn, &q.pending_key(), "a").await.is_some());

        // A state this library never writes.
        let _: () = redis::cmd("HSET").arg(&job).arg("state").arg("weird").query_async(&mut conn).await.unwrap();
        assert!(matches!(q.state("a").await, Err(Error::CorruptState { .. })));
    }

    #[tokio::test]
    async fn attempts_stay_exact_past_2_pow_53() {
        let s = server();
        let q = queue(&s, "big").await;
        let mut conn = connect(&s).await;
        q.enqueue("a", b"x").await.unwrap();
        let start: u64 = (1 << 53) + 1; // not representable as a double
        let job = q.job_key("a").unwrap();
        let _: () =
            redis::cmd("HSET").arg(&job).arg("attempt").arg(start.to_string()).query_async(&mut conn).await.unwrap();
        let claim = q.claim(ms(10_000)).await.unwrap().unwrap();
        assert_eq!(claim.attempt(), FencingToken::new(start + 1));
        assert_eq!(q.complete(&claim).await.unwrap(), Completion::Accepted);
    }

    #[tokio::test]
    async fn wrong_type_at_the_pending_key() {
        let s = server();
        let q = queue(&s, "wrong").await;
        let mut conn = connect(&s).await;
        let _: () = redis::cmd("SET").arg(q.pending_key()).arg("x").query_async(&mut conn).await.unwrap();
        match q.enqueue("a", b"x").await {
            Err(Error::WrongType { .. }) => {}
            other => panic!("enqueue: expected WrongType, got {other:?}"),
        }
        match q.claim(ms(1_000)).await {
            Err(Error::WrongType { .. }) => {}
            other => panic!("claim: expected WrongType, got {other:?}"),
        }
        // The enqueue changed nothing: no job hash, no sequence number drawn.
        let exists: i64 =
            redis::cmd("EXISTS").arg(q.job_key("a").unwrap()).arg(q.seq_key()).query_async(&mut conn).await.unwrap();
        assert_eq!(exists, 0);
    }

    #[tokio::test]
    async fn naive_queue_completes_a_job_twice_after_a_reap() {
        let s = server();
        let naive = NaiveJobQueue::new(connect(&s).await, "naive").unwrap();
        naive.enqueue("a", b"charge card").await.unwrap();

        // Worker 1 claims and is still working (paused, not dead)...
        let (id1, payload1) = naive.claim().await.unwrap().expect("a job is queued");
        // ...but the reaper cannot tell, and hands the job out again.
        assert_eq!(naive.reap().await.unwrap(), ["a"]);
        let (id2, payload2) = naive.claim().await.unwrap().expect("the reaped job is queued again");
        assert_eq!((id1.as_str(), id2.as_str()), ("a", "a"));
        assert_eq!(payload1, payload2);

        // Both completions count: the card is charged twice.
        let mut completed = 0;
        for id in [&id2, &id1] {
            naive.complete(id).await.unwrap();
            completed += 1;
        }
        assert_eq!(completed, 2);

        // The same schedule on JobQueue: the paused worker's completion is refused.
        let q = queue(&s, "fenced").await;
        q.enqueue("a", b"charge card").await.unwrap();
        let first = q.claim(ms(100)).await.unwrap().unwrap();
        tokio::time::sleep(Duration::from_millis(250)).await;
        assert_eq!(q.reap().await.unwrap(), ["a"]);
        let second = q.claim(ms(10_000)).await.unwrap().unwrap();
        assert_eq!(q.complete(&second).await.unwrap(), Completion::Accepted);
        assert!(matches!(q.complete(&first).await.unwrap(), Completion::Rejected { .. }));
    }
}
