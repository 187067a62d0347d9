//! The history: what every actor asked for and what it was told, in simulated time.
//!
//! The vocabulary is Jepsen's. An operation is *invoked*, then completes in
//! exactly one of three ways:
//!
//! - [`EventKind::Ok`]: it happened, and the completion carries what it returned;
//! - [`EventKind::Fail`]: it definitely did **not** happen (a refusal, a lock
//!   held by someone else, a denied request);
//! - [`EventKind::Info`]: nobody knows. A response timeout is `Info`, never
//!   `Fail`: redis-rs does not cancel a timed-out command, and it may still run
//!   later (design §4). Checkers must treat an `Info` write as "may have
//!   landed, at any later time".
//!
//! Observations that are not request/response pairs (an election node's role
//! change, a holder noticing its lease is gone, a nemesis fault) are recorded
//! as a single `Ok` (or `Info` for faults) event with no invoke.
//!
//! Invocations and completions are paired by [`OpId`], not by process, because
//! an actor may have several operations in flight (an election's renewal loop
//! runs beside the leader's writes).
//!
//! The recorder, [`History`], is a cloneable handle over one shared event list.
//! Turmoil runs every host on one thread, so the lock is never contended; it is
//! a `std::sync::Mutex` (not `Rc<RefCell>`) only so that the handle is `Send`
//! and can be moved anywhere a closure wants it.
//!
//! [`History::digest`] is a stable 64-bit FNV-1a hash over a canonical JSON
//! serialisation of every event: the same seed gives the same digest in every
//! process (no `DefaultHasher`, whose keys are random per process).

use core::fmt;
use std::borrow::Cow;
use std::sync::{Arc, Mutex, MutexGuard};

use serde::{Deserialize, Serialize};

pub use crate::fault_record::{FaultRecord, NamedTarget, NemesisStep};

/// Milliseconds of simulated time since the start of the simulation.
pub type Millis = u64;

/// Pairs an invocation with its completion. Allocated by [`History::invoke`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct OpId(pub u64);

impl fmt::Display for OpId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}

/// How an event stands in its operation's life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum EventKind {
    /// The operation was sent.
    Invoke,
    /// The operation happened; the event's [`Op`] carries its result.
    Ok,
    /// The operation definitely did not happen.
    Fail,
    /// Outcome unknown (a timeout, a dropped connection): it may have happened,
    /// and may still happen later.
    Info,
}

impl EventKind {
    /// Whether this event completes an operation (anything but `Invoke`).
    pub fn is_completion(self) -> bool {
        !matches!(self, EventKind::Invoke)
    }

    fn label(self) -> &'static str {
        match self {
            EventKind::Invoke => "invoke",
            EventKind::Ok => "ok",
            EventKind::Fail => "fail",
            EventKind::Info => "info",
        }
    }
}

/// What a fenced (or unfenced) store said about a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum WriteResult {
    /// The store applied the write.
    Accepted,
    /// The store refused it because it had accepted a higher token.
    Rejected {
        /// The highest token the store had accepted.
        highest_seen: u64,
    },
}

/// What the corruption probe planted, and which call it made
/// (`families/lock/probes/corruption.rs`; judged by `corrupt-state`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "planted")]
pub enum Planted {
    /// `Lock::acquire` with the fence counter set to the string `value`
    /// (and no lease).
    Counter {
        /// The lock key.
        lock_key: String,
        /// The fence counter's key.
        fence_key: String,
        /// What the counter held.
        value: String,
    },
    /// [`Planted::Counter`] for a lock with time-floored tokens: the token
    /// is `max(counter + 1, the server's clock in µs)`, and the server's
    /// clock read somewhere in `window_us` (simulated unix µs before the
    /// acquire was sent and after it was answered).
    FlooredCounter {
        /// The lock key.
        lock_key: String,
        /// The fence counter's key.
        fence_key: String,
        /// What the counter held.
        value: String,
        /// The server's clock was in this range when it ran the acquire.
        window_us: (u64, u64),
    },
    /// `Lock::acquire` with the fence counter holding a hash.
    CounterHash {
        /// The lock key.
        lock_key: String,
        /// The fence counter's key.
        fence_key: String,
    },
    /// `Lock::acquire` with the lock key holding a hash.
    LockHash {
        /// The lock key.
        lock_key: String,
        /// The fence counter's key.
        fence_key: String,
    },
    /// `Lock::current_token` with the fence counter set to the string
    /// `value` (`None`: absent).
    CounterRead {
        /// The fence counter's key.
        fence_key: String,
        /// What the counter held.
        value: Option<String>,
    },
    /// `Lock::remaining_ttl` with the lock key set to a string with this
    /// expiry in ms (`Some(None)`: no expiry; `None`: absent).
    LeaseRead {
        /// The lock key.
        lock_key: String,
        /// The planted key's expiry.
        expiry: Option<Option<u64>>,
    },
    /// `FencedStore::read` of an entry whose `token` and `value` fields
    /// were planted as given (`None`: field absent).
    StoredRead {
        /// The store's Redis key.
        key: String,
        /// The planted `token` field.
        token: Option<String>,
        /// The planted `value` field.
        value: Option<String>,
    },
    /// `FencedStore::write` with token `write` over an entry whose `token`
    /// field held the string `token` (and whose value was `planted`).
    StoredToken {
        /// The store's Redis key.
        key: String,
        /// What the entry's token field held.
        token: String,
        /// The token written.
        write: u64,
    },
}

/// The library's answer to a probe call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProbeReply {
    /// `Lock::acquire` granted a lease with this token.
    Token(u64),
    /// `Lock::acquire` returned `Ok(None)`.
    NotAcquired,
    /// `Lock::current_token` / `Lock::remaining_ttl` returned `Ok(None)`.
    Nothing,
    /// `Lock::remaining_ttl` returned this many ms.
    Remaining(u64),
    /// `FencedStore::read` returned this entry.
    Stored {
        /// Its token.
        token: u64,
        /// Its value (lossy UTF-8).
        value: String,
    },
    /// `FencedStore::write` accepted.
    Accepted,
    /// `FencedStore::write` rejected.
    Rejected {
        /// The `highest_seen` it reported.
        highest_seen: u64,
    },
    /// `Error::CorruptState`.
    CorruptState {
        /// The key it named.
        key: String,
        /// Its detail.
        detail: String,
    },
    /// `Error::WrongType`.
    WrongType {
        /// The key it named.
        key: String,
    },
    /// An error whose outcome is unknown (timeout, dropped connection): not judged.
    Unknown(String),
    /// Any other error.
    Error(String),
}

/// The probed keys afterwards, as read back by the probe. A string key is
/// its value; another type is `<type>`; an absent key is `None`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ProbeAfter {
    /// The lock key (lock probes).
    pub lock: Option<String>,
    /// The fence counter (lock probes).
    pub counter: Option<String>,
    /// The fenced entry's `token` field (store probes).
    pub token: Option<String>,
    /// The fenced entry's `value` field (store probes).
    pub value: Option<String>,
}

/// `Election::leadership()`, as an `ElectionView` records it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Published {
    /// `Leadership::Leader`.
    Leader {
        /// Its epoch.
        epoch: u64,
        /// `elected_at`, simulated ms.
        elected_at_ms: Millis,
    },
    /// `Leadership::Follower`, with the epoch of its last demotion.
    Follower {
        /// `last_demotion`'s epoch.
        demoted: Option<u64>,
    },
    /// `Leadership::Stopped`, with the epoch of its last demotion.
    Stopped {
        /// `last_demotion`'s epoch.
        demoted: Option<u64>,
    },
}

/// A constructor or call the validation probe tried with values at the
/// edge of what it accepts (`scenarios/validation.rs`; judged by
/// `input-validation`). Durations are in ms; drift is `(‰, constant ms)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "case")]
pub enum Validation {
    /// `Election::builder(..).lease_ttl(..).renew_interval(..).campaign_interval(..).drift(..).build()`.
    ElectionTiming {
        /// Lease TTL.
        lease_ms: u64,
        /// Renew interval.
        renew_ms: u64,
        /// Campaign interval.
        campaign_ms: u64,
        /// Drift allowance.
        drift: (u32, u64),
    },
    /// `Election::builder(..).lease_ttl(..).drift(..).build()` with the
    /// renew and campaign intervals left to their defaults (a third of the
    /// lease; the renew interval).
    ElectionDefaults {
        /// Lease TTL.
        lease_ms: u64,
        /// Drift allowance.
        drift: (u32, u64),
    },
    /// `Limit::new(max, window)`.
    Limit {
        /// Requests per window.
        max: u64,
        /// Window.
        window_ms: u64,
    },
    /// `SlidingWindowLog::check_at` / `SlidingWindowCounter::check_at` at `now_ms` (unix ms).
    CheckAt {
        /// The instant given.
        now_ms: u64,
    },
    /// `KeepAlive::new(lock, ttl, every)` on a lock with `drift`.
    KeepAlive {
        /// The TTL each extension sets.
        ttl_ms: u64,
        /// The interval.
        every_ms: u64,
        /// The lock's drift allowance.
        drift: (u32, u64),
    },
    /// A key built from a custom prefix and a name: `Lock::builder(..)
    /// .prefix(prefix).build()` then `key(name)` / `fence_key(name)`, or
    /// `FencedStore::with_prefix(.., prefix)` then `redis_key(name)`.
    KeyName {
        /// Which constructor and key method.
        on: KeyedOn,
        /// What the prefix was.
        prefix: KeyText,
        /// What the name was.
        name: KeyText,
    },
    /// `Ttl::new(Duration::from_millis(ms) + Duration::from_nanos(extra_ns))`.
    Ttl {
        /// Whole milliseconds.
        ms: u64,
        /// Nanoseconds past them (below a millisecond).
        extra_ns: u32,
    },
    /// `Acknowledgement::new(replicas, Duration::from_millis(ms) + Duration::from_nanos(extra_ns))`.
    Acknowledgement {
        /// Replicas to wait for.
        replicas: u32,
        /// Whole milliseconds of the timeout.
        ms: u64,
        /// Nanoseconds past them (below a millisecond).
        extra_ns: u32,
    },
    /// `Drift::new(per_mille, Duration::from_millis(constant_ms) + Duration::from_nanos(extra_ns))`.
    Drift {
        /// Thousandths of the TTL.
        per_mille: u32,
        /// Whole milliseconds of the constant.
        constant_ms: u64,
        /// Nanoseconds past them (below a millisecond).
        extra_ns: u32,
    },
    /// `Retry::new(attempts, base, max)` with both delays in nanoseconds.
    Retry {
        /// The first delay.
        base_ns: u64,
        /// The cap on every delay.
        max_ns: u64,
    },
    /// `Redlock::connect` with `masters` masters and this configuration.
    Redlock {
        /// Masters given.
        masters: u32,
        /// Lease TTL.
        ttl_ms: u64,
        /// Drift allowance.
        drift: (u32, u64),
        /// Per-master timeout.
        master_timeout_ms: u64,
        /// Handshake timeout.
        handshake_ms: u64,
    },
    /// `Redlock::connect` given one master twice (and another once).
    RedlockTwice {
        /// The connect was accepted and left one of the two copies
        /// unverified (its `INFO` did not answer in time): a duplicate it
        /// could not see. `false` when refused.
        unverified: bool,
    },
}

/// The kind of text the validation probe gave as a key prefix or name
/// (the text itself is drawn from the seed; the rule depends only on this).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum KeyText {
    /// Letters, digits and colons: usable.
    Plain,
    /// The empty string.
    Empty,
    /// Plain text with a `{` somewhere in it.
    OpenBrace,
    /// Plain text with a `}` somewhere in it.
    CloseBrace,
}

/// Which key the validation probe asked for (see [`Validation::KeyName`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum KeyedOn {
    /// `Lock::key`.
    LockKey,
    /// `Lock::fence_key`.
    FenceKey,
    /// `FencedStore::redis_key`.
    StoreKey,
}

/// A rate limiter's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Admission {
    /// The request was admitted.
    Admitted,
    /// The request was refused; the limiter suggested waiting this long.
    Denied {
        /// Suggested wait in milliseconds, if the limiter gave one.
        retry_after_ms: Option<u64>,
    },
}

/// An election node's belief about itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Role {
    /// It believes it leads (and may act on it).
    Leader,
    /// It believes it does not lead.
    Follower,
    /// It left the election on purpose (`stop()`), releasing its lease.
    Resigned,
}

/// How a guarded body ended ([`Op::Guarded`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum GuardedResult {
    /// The lock was held by someone else; the body did not run.
    NotAcquired,
    /// The body finished while the lease was trusted.
    Completed,
    /// The lease stopped being trustworthy at `at` (simulated ms) and the
    /// body was dropped there.
    Cancelled {
        /// When the body was dropped.
        at: Millis,
        /// Whether the guard said the local deadline was reached
        /// (`LeaseLoss::DeadlineReached`), rather than a refused or failed
        /// extension.
        #[serde(default)]
        deadline_reached: bool,
    },
}

/// One Redlock round (acquire, extend or release) as the client saw it:
/// each master's answer and the numbers the client decided on.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RedlockRound {
    /// One letter per master, in index order: `y` yes, `n` no, `e` error,
    /// `t` timed out (may still happen later). Empty: no round was sent.
    pub answers: String,
    /// T2 − T1 of the round as the client measured it (ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elapsed_ms: Option<u64>,
    /// Validity the client reported, from T2 (ms), on a grant or extension.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validity_ms: Option<u64>,
    /// T1 the lease is measured from (simulated ms), on a grant or extension.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Millis>,
    /// Until when the client trusts the lease (simulated ms), on a grant or
    /// extension.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_until: Option<Millis>,
    /// Why it was refused (`no-majority`, `too-slow`, `expired`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<String>,
    /// The compare-and-delete sent to every master after a refusal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleanup: Option<String>,
    /// After a refused extend: whether the lease still said
    /// `is_trusted()` (it must not: the lease is lost).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trusted_after: Option<bool>,
}

/// A rate-limit `Decision` as its accessors report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecisionAccessors {
    /// `is_allowed()`.
    pub is_allowed: bool,
    /// `is_denied()`.
    pub is_denied: bool,
    /// `remaining()`.
    pub remaining: u64,
    /// `retry_after()`, in ms.
    pub retry_after_ms: Option<u64>,
    /// `count()`.
    pub count: u64,
}

impl RedlockRound {
    /// How many masters said yes.
    pub fn yes(&self) -> usize {
        self.answers.chars().filter(|&c| c == 'y').count()
    }
}

impl fmt::Display for RedlockRound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}]", self.answers)?;
        if let Some(e) = self.elapsed_ms {
            write!(f, " elapsed={e}ms")?;
        }
        if let Some(u) = self.valid_until {
            write!(f, " trusted-until={u}ms")?;
        }
        if let Some(r) = &self.refusal {
            write!(f, " refused={r}")?;
        }
        if let Some(c) = &self.cleanup {
            write!(f, " cleanup=[{c}]")?;
        }
        Ok(())
    }
}

/// One operation: its arguments, and (on the completion event) its result.
///
/// Result fields are `Option`s: `None` on the invoke event, filled on an `Ok`
/// completion, and left `None` when the outcome is unknown.
///
/// Serialised (into the JSON a history's digest hashes), never read back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Op {
    /// `Lock::acquire` (or a naive lock's acquire).
    Acquire {
        /// Lock name.
        name: String,
        /// Requested lease length.
        ttl_ms: u64,
        /// Fencing token granted (on `Ok`; `None` for a lock without tokens).
        token: Option<u64>,
        /// The holder's local deadline (simulated ms) after which it stops
        /// trusting the lease; `None` for a holder that never checks (naive).
        deadline: Option<Millis>,
    },
    /// `Lock::release`: `Ok` = it deleted its own lease, `Fail` = it was
    /// already gone (or someone else's; compare-and-delete refused).
    Release {
        /// Lock name.
        name: String,
        /// Token of the lease being released (`None` for a naive lock).
        token: Option<u64>,
    },
    /// `Lock::extend`: `Ok` = extended, `Fail` = the lease was gone.
    Extend {
        /// Lock name.
        name: String,
        /// Token of the lease being extended.
        token: Option<u64>,
        /// New lease length.
        ttl_ms: u64,
        /// New local deadline on `Ok`.
        deadline: Option<Millis>,
    },
    /// Observation: the holder decided its lease can no longer be trusted
    /// (deadline passed, extend failed, guard fired). Ends its hold.
    LeaseLost {
        /// Lock name.
        name: String,
        /// Token of the lost lease.
        token: Option<u64>,
        /// Why, in a few words.
        reason: String,
    },
    /// Observation: the harness overwrote the key of this process's lease
    /// on `name` (granted with `token`) with another owner, as an operator
    /// or a peer that ignored the lock would (`families/lock/probes/guard.rs`);
    /// the lease's next extension must be refused. Judged by
    /// `self-fencing` (`checker::guarded_body`).
    TakenAway {
        /// Lock name.
        name: String,
        /// Token of the lease whose key was overwritten.
        token: Option<u64>,
    },
    /// Observation: the body of this process's guarded call on `name`
    /// (granted with `token`) was dropped before it finished, at this
    /// event's instant (the body's own drop guard records it). Judged by
    /// `self-fencing` (`checker::guarded_body`): a `Cancelled { at }` says
    /// when the body was dropped, so `at` is this instant, not the later
    /// one at which the best-effort release returned.
    BodyDropped {
        /// Lock name.
        name: String,
        /// Token of the lease the body ran under.
        token: u64,
    },
    /// Observation: the call of this process invoked at `invoked` was
    /// refused for want of replicas (`Error::NotAcknowledged` on `key`).
    /// Judged by `acknowledged-writes`: the bridge's replication barrier has
    /// every write of a node whose replicas are linked confirmed before it
    /// answers, so a refusal with nothing touching the node throughout the
    /// call is wrong.
    NotAcknowledged {
        /// The key the acknowledgement was for.
        key: String,
        /// When the refused call was invoked.
        invoked: Millis,
    },
    /// A write to a resource. `fenced` says whether the store checks tokens;
    /// `token` is the token (or election epoch) the writer believed it held.
    Write {
        /// Resource key.
        key: String,
        /// Value written (short, readable).
        value: String,
        /// Token or epoch the writer carried (`None` if it had none).
        token: Option<u64>,
        /// Whether the store enforces fencing.
        fenced: bool,
        /// What the store said (on `Ok`; a rejection is an `Ok` with
        /// `Rejected`, since the store answered definitively).
        result: Option<WriteResult>,
    },
    /// A read of a resource (the final read is what no-stale-overwrite checks).
    Read {
        /// Resource key.
        key: String,
        /// Value found.
        value: Option<String>,
        /// Token stored with it (fenced store), if any.
        token: Option<u64>,
    },
    /// One rate-limit decision.
    RateLimit {
        /// Limiter key.
        key: String,
        /// Configured limit per window.
        limit: u64,
        /// Configured window length.
        window_ms: u64,
        /// The answer (on `Ok`).
        admission: Option<Admission>,
        /// Server (Redis) time of the decision in simulated ms, when known.
        /// Admissions are counted per window of *server* time.
        server_ms: Option<Millis>,
        /// `Decision::count` (on `Ok`): requests the limiter counted in the
        /// window, the admitted one included.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        count: Option<u64>,
        /// `Decision::remaining` (on an admission).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        remaining: Option<u64>,
        /// The instant a `check_at` pinned (simulated ms), on the invoke and
        /// the completion; `None` for a `check` on the server's clock.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pinned_ms: Option<Millis>,
        /// What the `Decision`'s own accessors said (on `Ok`), judged
        /// against the variant recorded above.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        accessors: Option<DecisionAccessors>,
    },
    /// Observation: an election node's role changed.
    Role {
        /// Election name.
        election: String,
        /// New role.
        role: Role,
        /// Epoch it holds (leader) or last held; `None` without epochs.
        epoch: Option<u64>,
        /// For a leader: the instant (simulated ms) until which it trusts its
        /// lease (its local deadline); a new `Leader` event with the same
        /// epoch moves it (a confirmed renewal). `None` = until it says
        /// otherwise (renew-tick demotion, naive elections).
        deadline: Option<Millis>,
    },
    /// A Redlock acquire across several masters.
    RedlockAcquire {
        /// Lock name.
        name: String,
        /// Number of masters.
        masters: u32,
        /// Votes needed.
        quorum: u32,
        /// Votes obtained (on completion).
        votes: Option<u32>,
        /// Validity the client computed (ms), on `Ok`; the lease is trusted
        /// over `[invoke, invoke + validity]` in simulated time.
        validity_ms: Option<u64>,
        /// What each master said and the numbers the client decided on
        /// (on completion; absent in older histories).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        round: Option<RedlockRound>,
    },
    /// A Redlock release on all masters.
    RedlockRelease {
        /// Lock name.
        name: String,
        /// The op id of the acquire whose lease is released.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lease: Option<u64>,
        /// Each master's answer to the compare-and-delete (on completion).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        round: Option<RedlockRound>,
    },
    /// `Redlock::connect`: each master asked for its `run_id`.
    RedlockConnect {
        /// Number of masters.
        masters: u32,
        /// Masters whose `run_id` could not be read (on `Ok`).
        unverified: Option<Vec<u32>>,
    },
    /// `Redlock::extend`: `Ok` = extended (the round carries the new
    /// validity), `Fail` = refused (the lease is lost and released).
    RedlockExtend {
        /// Lock name.
        name: String,
        /// The op id of the acquire whose lease is extended.
        lease: u64,
        /// What each master said, on completion.
        round: Option<RedlockRound>,
    },
    /// `Retry::run` around `Lock::acquire` (each attempt is its own
    /// `Acquire`, invoked and completed inside this operation): `Ok` =
    /// granted, `Fail` = attempts or deadline ran out.
    Retry {
        /// Lock name.
        name: String,
        /// Attempts the policy allows.
        attempts: u32,
        /// The policy's total deadline (ms), if any.
        deadline_ms: Option<u64>,
        /// Token granted (on `Ok`).
        token: Option<u64>,
        /// The policy's `(base_delay, max_delay)` in ms, when recorded: the
        /// sleep after attempt `n` (from 0) is at most
        /// `min(base × 2^n, max)`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        backoff_ms: Option<(u64, u64)>,
    },
    /// `Lock::with_lock_guarded` or a caller-driven `Lock::keep_alive`
    /// around a body: the body's steps are the same process's writes
    /// invoked inside this operation, with this token.
    Guarded {
        /// Lock name.
        name: String,
        /// Lease token (known once the inner acquire succeeded).
        token: Option<u64>,
        /// How it ended (on completion).
        outcome: Option<GuardedResult>,
        /// `KeepAlive::every` of the policy, in ms: the longest a
        /// `with_lock_guarded` waits for its final release.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        every_ms: Option<u64>,
    },
    /// `Lock::current_token`: the fence counter (`None` = never issued).
    CurrentToken {
        /// Lock name.
        name: String,
        /// The counter read (on `Ok`).
        token: Option<u64>,
    },
    /// `Lock::remaining_ttl`: the server-side time left (`None` = not held).
    RemainingTtl {
        /// Lock name.
        name: String,
        /// Milliseconds left (on `Ok`; `None` = no lease).
        ms: Option<u64>,
    },
    /// A fault injected (or healed) by the nemesis, or by the workload
    /// itself: typed, text only in `Display` and the JSON.
    Fault(FaultRecord),
    /// Observation: the run reached a situation its scenario declares it
    /// exists to reach (a "sometimes" assertion; see
    /// [`crate::scenarios::Situation`]). Recorded once per run and situation.
    Reached {
        /// The situation's name.
        situation: String,
    },
    /// Redis answered a request with an error reply (a script error, a
    /// `CORRUPT`/`WRONGTYPE` refusal, anything but the `NOSCRIPT` the library
    /// recovers from), recorded by the connection itself (see
    /// [`crate::net::SimConnection`]); judged by `unexpected-errors`.
    ErrorReply {
        /// The error as the client saw it.
        message: String,
    },
    /// Observation: what a held `Lease`'s accessors said at this instant
    /// (the holder asked `is_trusted()` here); judged by `lease-views`.
    LeaseView {
        /// `Lease::name`.
        name: String,
        /// `Lease::key`.
        key: String,
        /// `Lease::token`.
        token: u64,
        /// `Lease::ttl`, in ms.
        ttl_ms: u64,
        /// `Lease::sent_at`, in simulated ms.
        sent_ms: Millis,
        /// `Lease::local_deadline`, in simulated ms (truncated).
        deadline_ms: Millis,
        /// `Lease::is_trusted()`.
        trusted: bool,
    },
    /// Observation: what an `Election`'s accessors said, recorded whenever
    /// one of them changed (polled every millisecond); judged by
    /// `election-views`.
    ElectionView {
        /// `Election::name()`.
        name: String,
        /// `Election::is_leader()`.
        is_leader: bool,
        /// `Election::epoch()`.
        epoch: Option<u64>,
        /// `Election::leader_lease()`: `(epoch, sent_at µs, local_deadline µs)`.
        lease: Option<(u64, u64, u64)>,
        /// `Election::leadership()`.
        published: Published,
        /// What that `Leadership` value's own accessors say:
        /// `(is_leader(), epoch(), last_demotion()'s epoch)`.
        #[serde(default)]
        accessors: (bool, Option<u64>, Option<u64>),
        /// Why the last term ended (`last_demotion()`'s reason, as the
        /// `demoted-*` situation suffix: `deadline-reached`, `lease-lost`…).
        #[serde(default)]
        demotion_reason: Option<String>,
    },
    /// Observation: an `Election::subscribe()` receiver disagreed with
    /// `Election::leadership()` (it holds another role, or was not notified
    /// of a change since the workload last read it); recorded only then,
    /// and judged by `election-views`.
    SubscriberView {
        /// What `leadership()` publishes.
        published: Published,
        /// What the receiver holds.
        received: Published,
        /// `has_changed()` before the receiver was read.
        notified: bool,
    },
    /// Observation: the writer asked `Election::epoch()` before a write
    /// and got `epoch` (judged by `election-views`: `Some` only before the
    /// lease's deadline).
    EpochCheck {
        /// The answer.
        epoch: Option<u64>,
    },
    /// Observation: an `on_elected` (`elected`) or `on_demoted` callback ran
    /// for `epoch`; judged by `election-views`.
    ElectionCallback {
        /// `on_elected` rather than `on_demoted`.
        elected: bool,
        /// The epoch it was called with.
        epoch: u64,
        /// `on_demoted` for `DemotionReason::DeadlineReached`.
        #[serde(default)]
        deadline_reached: bool,
    },
    /// Observation: what an `Election` reports of its configuration
    /// (recorded once, at build); judged by `election-views`.
    ElectionConfig {
        /// `Election::name()`.
        name: String,
        /// `Election::lease_ttl()`, ms.
        lease_ms: u64,
        /// `Election::renew_interval()`, ms.
        renew_ms: u64,
        /// `Election::campaign_interval()`, ms.
        campaign_ms: u64,
        /// `Election::demotion()`, as `Debug` prints it.
        demotion: String,
    },
    /// Observation: what a primitive's accessors report of how it was
    /// built, beside what it was built with (`(accessor, reported,
    /// configured)`); judged by `configuration`.
    Configured {
        /// The primitive (`Lock`, `Redlock`, ...).
        primitive: String,
        /// `(accessor, reported, configured)`, as text.
        fields: Vec<(String, String, String)>,
    },
    /// The validation probe tried `case`: `accepted`, or refused with
    /// `refusal` (the error as displayed; `invalid` when it was
    /// `Error::InvalidInput`).
    Validated {
        /// What was tried.
        case: Validation,
        /// Whether it was accepted.
        accepted: bool,
        /// Whether a refusal was `Error::InvalidInput`.
        invalid: bool,
        /// The refusal, as displayed.
        refusal: Option<String>,
    },
    /// Observation: the actor's next request to `node` will wait `ms` at
    /// the server before it runs (a workload fault aimed at one request,
    /// through [`crate::world::Actor::delay_next_request`]).
    Delayed {
        /// Which node.
        node: u32,
        /// How long.
        ms: u64,
        /// Only a request mentioning this (a key name) is held.
        #[serde(default)]
        mentioning: Option<String>,
    },
    /// Observation: the actor froze itself for `ms` (a workload fault: a
    /// GC pause at a chosen moment), through [`crate::world::Actor::stall`].
    Paused {
        /// How long.
        ms: u64,
        /// Where, in a few words ("inside its critical section").
        context: String,
    },
    /// A library call returned an error that no fault explains (anything
    /// but a timeout or a lost connection, `Error::outcome_is_unknown`),
    /// recorded by [`crate::world::Actor::errored`]; judged by
    /// `unexpected-errors`.
    LibraryError {
        /// The error as the library displays it.
        message: String,
    },
    /// The corruption probe planted a key, called the library and read the
    /// keys back (`families/lock/probes/corruption.rs`); judged by `corrupt-state`.
    StateProbe {
        /// What was planted, and the call.
        planted: Planted,
        /// The library's answer.
        reply: ProbeReply,
        /// The keys afterwards (`None`: the read-back failed).
        after: Option<ProbeAfter>,
    },
    /// An operation of a primitive this enum has no variant for (a family
    /// added through the public API, a user's own primitive): its verb and
    /// its arguments and result as JSON. Record it with [`Op::custom`], read
    /// it back with [`Op::custom_data`]; its checkers are its family's own.
    Custom {
        /// What it does, in kebab case (`job-claim`).
        verb: String,
        /// Its arguments and (on a completion) result.
        data: serde_json::Value,
    },
    /// Anything else a scenario wants in the timeline.
    Note {
        /// Free text.
        text: String,
    },
}

impl Op {
    /// An [`Op::Custom`] of `verb` carrying `data` (any plain serde data:
    /// a struct of strings, integers and options).
    pub fn custom(verb: &str, data: &impl Serialize) -> Op {
        // Plain data serialises; if it ever did not, keep the error in the
        // history rather than lose the operation.
        let data =
            serde_json::to_value(data).unwrap_or_else(|e| serde_json::Value::String(format!("unserialisable: {e}")));
        Op::Custom { verb: verb.to_string(), data }
    }

    /// The data of an [`Op::Custom`] of `verb`, typed; `None` for any other
    /// op, another verb, or data of another shape.
    pub fn custom_data<T: serde::de::DeserializeOwned>(&self, verb: &str) -> Option<T> {
        match self {
            Op::Custom { verb: v, data } if v == verb => serde_json::from_value(data.clone()).ok(),
            _ => None,
        }
    }

    /// A short verb for timelines.
    pub fn verb(&self) -> &'static str {
        match self {
            Op::Acquire { .. } => "acquire",
            Op::Release { .. } => "release",
            Op::Extend { .. } => "extend",
            Op::LeaseLost { .. } => "lease-lost",
            Op::TakenAway { .. } => "taken-away",
            Op::BodyDropped { .. } => "body-dropped",
            Op::NotAcknowledged { .. } => "not-acknowledged",
            Op::Write { .. } => "write",
            Op::Read { .. } => "read",
            Op::RateLimit { .. } => "rate-limit",
            Op::Role { .. } => "role",
            Op::RedlockAcquire { .. } => "redlock-acquire",
            Op::RedlockRelease { .. } => "redlock-release",
            Op::Retry { .. } => "retry",
            Op::Guarded { .. } => "guarded",
            Op::CurrentToken { .. } => "current-token",
            Op::RemainingTtl { .. } => "remaining-ttl",
            Op::RedlockConnect { .. } => "redlock-connect",
            Op::RedlockExtend { .. } => "redlock-extend",
            Op::Fault(_) => "fault",
            Op::Reached { .. } => "reached",
            Op::ErrorReply { .. } => "error-reply",
            Op::StateProbe { .. } => "state-probe",
            Op::LibraryError { .. } => "library-error",
            Op::LeaseView { .. } => "lease-view",
            Op::Configured { .. } => "configured",
            Op::Paused { .. } => "paused",
            Op::Delayed { .. } => "delayed",
            Op::Validated { .. } => "validated",
            Op::ElectionView { .. } => "election-view",
            Op::ElectionCallback { .. } => "election-callback",
            Op::EpochCheck { .. } => "epoch-check",
            Op::SubscriberView { .. } => "subscriber-view",
            Op::ElectionConfig { .. } => "election-config",
            Op::Custom { .. } => "custom",
            Op::Note { .. } => "note",
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fn opt<T: fmt::Display>(v: &Option<T>) -> String {
            match v {
                Some(v) => v.to_string(),
                None => "?".to_string(),
            }
        }
        match self {
            Op::Acquire { name, ttl_ms, token, deadline } => {
                write!(f, "acquire {name} ttl={ttl_ms}ms token={}", opt(token))?;
                if let Some(d) = deadline {
                    write!(f, " trusted-until={d}ms")?;
                }
                Ok(())
            }
            Op::Release { name, token } => write!(f, "release {name} token={}", opt(token)),
            Op::Extend { name, token, ttl_ms, deadline } => {
                write!(f, "extend {name} token={} ttl={ttl_ms}ms", opt(token))?;
                if let Some(d) = deadline {
                    write!(f, " trusted-until={d}ms")?;
                }
                Ok(())
            }
            Op::LeaseLost { name, token, reason } => {
                write!(f, "lease-lost {name} token={} ({reason})", opt(token))
            }
            Op::TakenAway { name, token } => {
                write!(f, "taken-away {name} token={} (its key overwritten with another owner)", opt(token))
            }
            Op::BodyDropped { name, token } => {
                write!(f, "body-dropped {name} token={token} (the guarded body was dropped unfinished)")
            }
            Op::NotAcknowledged { key, invoked } => {
                write!(f, "not-acknowledged {key} (the call invoked at {invoked}ms: too few replicas confirmed it)")
            }
            Op::Write { key, value, token, fenced, result } => {
                let store = if *fenced { "fenced" } else { "unfenced" };
                write!(f, "write {store} {key}={value:?} token={}", opt(token))?;
                match result {
                    Some(WriteResult::Accepted) => write!(f, " -> accepted"),
                    Some(WriteResult::Rejected { highest_seen }) => {
                        write!(f, " -> rejected (highest seen {highest_seen})")
                    }
                    None => Ok(()),
                }
            }
            Op::Read { key, value, token } => {
                write!(f, "read {key} -> {} token={}", value.as_deref().unwrap_or("nil"), opt(token))
            }
            Op::RateLimit { key, limit, window_ms, admission, server_ms, count, remaining, pinned_ms, .. } => {
                write!(f, "rate-limit {key} ({limit}/{window_ms}ms)")?;
                if let Some(p) = pinned_ms {
                    write!(f, " at={p}ms")?;
                }
                match admission {
                    Some(Admission::Admitted) => write!(f, " -> admitted")?,
                    Some(Admission::Denied { retry_after_ms: Some(r) }) => {
                        write!(f, " -> denied, retry after {r}ms")?
                    }
                    Some(Admission::Denied { retry_after_ms: None }) => write!(f, " -> denied")?,
                    None => {}
                }
                if let Some(c) = count {
                    write!(f, " count={c}")?;
                }
                if let Some(r) = remaining {
                    write!(f, " remaining={r}")?;
                }
                if let Some(s) = server_ms {
                    write!(f, " server-time={s}ms")?;
                }
                Ok(())
            }
            Op::Role { election, role, epoch, deadline } => {
                write!(f, "{election}: {role:?} epoch={}", opt(epoch))?;
                if let Some(d) = deadline {
                    write!(f, " trusted-until={d}ms")?;
                }
                Ok(())
            }
            Op::RedlockAcquire { name, masters, quorum, votes, validity_ms, round } => {
                write!(
                    f,
                    "redlock-acquire {name} votes={}/{masters} (quorum {quorum}) validity={}ms",
                    opt(votes),
                    opt(validity_ms)
                )?;
                match round {
                    Some(r) => write!(f, " {r}"),
                    None => Ok(()),
                }
            }
            Op::RedlockRelease { name, lease, round } => {
                write!(f, "redlock-release {name} lease={}", opt(lease))?;
                match round {
                    Some(r) => write!(f, " {r}"),
                    None => Ok(()),
                }
            }
            Op::RedlockConnect { masters, unverified } => {
                write!(f, "redlock-connect {masters} masters")?;
                match unverified {
                    Some(u) => write!(f, " unverified={u:?}"),
                    None => Ok(()),
                }
            }
            Op::RedlockExtend { name, lease, round } => {
                write!(f, "redlock-extend {name} lease={lease}")?;
                match round {
                    Some(r) => write!(f, " {r}"),
                    None => Ok(()),
                }
            }
            Op::Retry { name, attempts, deadline_ms, token, backoff_ms } => {
                write!(f, "retry acquire {name} attempts={attempts}")?;
                if let Some(d) = deadline_ms {
                    write!(f, " deadline={d}ms")?;
                }
                if let Some((base, max)) = backoff_ms {
                    write!(f, " backoff={base}..{max}ms")?;
                }
                write!(f, " token={}", opt(token))
            }
            Op::Guarded { name, token, outcome, .. } => {
                write!(f, "guarded {name} token={}", opt(token))?;
                match outcome {
                    Some(GuardedResult::NotAcquired) => write!(f, " -> not acquired"),
                    Some(GuardedResult::Completed) => write!(f, " -> completed"),
                    Some(GuardedResult::Cancelled { at, deadline_reached }) => {
                        write!(f, " -> cancelled at {at}ms{}", if *deadline_reached { " (deadline reached)" } else { "" })
                    }
                    None => Ok(()),
                }
            }
            Op::CurrentToken { name, token } => write!(f, "current-token {name} -> {}", opt(token)),
            Op::RemainingTtl { name, ms } => match ms {
                Some(ms) => write!(f, "remaining-ttl {name} -> {ms}ms"),
                None => write!(f, "remaining-ttl {name} -> not held"),
            },
            Op::Fault(record) => write!(f, "fault: {record}"),
            Op::Reached { situation } => write!(f, "reached: {situation}"),
            Op::ErrorReply { message } => write!(f, "error reply: {message}"),
            Op::LibraryError { message } => write!(f, "library error: {message}"),
            Op::Paused { ms, context } => write!(f, "stalls for {ms}ms {context}"),
            Op::Delayed { node, ms, mentioning: None } => {
                write!(f, "its next request to redis-{node} waits {ms}ms at the server")
            }
            Op::Delayed { node, ms, mentioning: Some(key) } => {
                write!(f, "its next request to redis-{node} mentioning {key} waits {ms}ms at the server")
            }
            Op::Validated { case, accepted, refusal, .. } => match refusal {
                Some(r) if !accepted => write!(f, "validated {case:?} -> refused: {r}"),
                _ => write!(f, "validated {case:?} -> accepted"),
            },
            Op::Configured { primitive, fields } => {
                write!(f, "configured {primitive}:")?;
                for (name, reported, _) in fields {
                    write!(f, " {name}={reported}")?;
                }
                Ok(())
            }
            Op::ElectionView { name, is_leader, epoch, lease, published, .. } => write!(
                f,
                "election-view {name} is_leader={is_leader} epoch={} lease={lease:?} published={published:?}",
                opt(epoch)
            ),
            Op::EpochCheck { epoch } => write!(f, "epoch() -> {}", opt(epoch)),
            Op::SubscriberView { published, received, notified } => {
                write!(f, "subscribe() holds {received:?} (notified: {notified}), leadership() is {published:?}")
            }
            Op::ElectionCallback { elected, epoch, .. } => {
                write!(f, "{} epoch={epoch}", if *elected { "on_elected" } else { "on_demoted" })
            }
            Op::ElectionConfig { name, lease_ms, renew_ms, campaign_ms, demotion } => write!(
                f,
                "election-config {name} lease={lease_ms}ms renew={renew_ms}ms campaign={campaign_ms}ms demotion={demotion}"
            ),
            Op::LeaseView { name, key, token, ttl_ms, sent_ms, deadline_ms, trusted } => write!(
                f,
                "lease-view {name} key={key} token={token} ttl={ttl_ms}ms sent={sent_ms}ms trusted-until={deadline_ms}ms -> {}",
                if *trusted { "trusted" } else { "not trusted" }
            ),
            Op::StateProbe { planted, reply, after } => write!(f, "state-probe {planted:?} -> {reply:?}, after {after:?}"),
            Op::Custom { verb, data } => write!(f, "{verb} {data}"),
            Op::Note { text } => write!(f, "note: {text}"),
        }
    }
}

/// One line of the history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Event {
    /// Position in the history (0, 1, 2, …).
    pub index: u64,
    /// Simulated milliseconds since the simulation started.
    pub time: Millis,
    /// Which actor (turmoil host name, or `nemesis`).
    pub process: String,
    /// Invoke / ok / fail / info.
    pub kind: EventKind,
    /// Pairs this event with its invocation (observations get their own id).
    pub op_id: OpId,
    /// The operation (with results on completions).
    pub op: Op,
    /// On an invoke: the public library operation it calls
    /// (`Lock::extend`, `Redlock::acquire`, …), for the operations table.
    /// Absent on completions and observations (and from the digest's JSON
    /// when absent, so histories without it keep their digests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api: Option<Api>,
}

/// A public library operation an invocation calls (`Lock::extend`): what
/// the operations table counts and what a checker finds a call by. Each is
/// a constant where its family declares its operations; compared as a
/// value, printed and serialised as its name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Api(Cow<'static, str>);

impl Api {
    /// The operation `Type::method`.
    pub const fn new(name: &'static str) -> Api {
        Api(Cow::Borrowed(name))
    }

    /// Its name, `Type::method`.
    pub fn name(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Api {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&self.0)
    }
}

impl Serialize for Api {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Api {
    /// A name read back from a shard file: the same operation as the
    /// constant of that name.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Api, D::Error> {
        String::deserialize(deserializer).map(|name| Api(Cow::Owned(name)))
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:>8}ms  {:<12} {:<6} {:>5}  {}",
            self.time,
            self.process,
            self.kind.label(),
            self.op_id.to_string(),
            self.op
        )
    }
}

#[derive(Debug, Default)]
struct Inner {
    events: Vec<Event>,
    /// Situations already recorded in this run (each is recorded once).
    reached: std::collections::BTreeSet<String>,
    next_op: u64,
    /// The latest time recorded: used when no simulation clock is available,
    /// so that time never runs backwards in the history.
    last_time: Millis,
}

/// A shared, cloneable recorder of [`Event`]s.
///
/// Methods without `_at` read simulated time from turmoil
/// (`turmoil::sim_elapsed`), so actors can call them directly; outside a host
/// (the driver loop, unit tests) use the `_at` forms with an explicit time.
#[derive(Debug, Clone, Default)]
pub struct History {
    inner: Arc<Mutex<Inner>>,
}

/// Simulated milliseconds since the start, if called from inside a turmoil
/// host; `None` otherwise.
pub fn sim_now() -> Option<Millis> {
    turmoil::sim_elapsed().map(|d| d.as_millis() as Millis)
}

impl History {
    /// An empty history.
    pub fn new() -> History {
        History::default()
    }

    /// A history holding exactly these events (for checkers' unit tests and
    /// for loading a recorded history). Indexes are renumbered.
    pub fn from_events(events: impl IntoIterator<Item = Event>) -> History {
        let h = History::new();
        {
            let mut inner = h.lock();
            for mut e in events {
                e.index = inner.events.len() as u64;
                inner.next_op = inner.next_op.max(e.op_id.0 + 1);
                inner.last_time = inner.last_time.max(e.time);
                inner.events.push(e);
            }
        }
        h
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding this lock leaves a valid Vec behind: recover
        // the data instead of propagating the poison.
        match self.inner.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    fn now(inner: &Inner) -> Millis {
        sim_now().unwrap_or(inner.last_time).max(inner.last_time)
    }

    fn push(inner: &mut Inner, time: Millis, process: &str, kind: EventKind, op_id: OpId, op: Op) {
        let time = time.max(inner.last_time);
        inner.last_time = time;
        let index = inner.events.len() as u64;
        inner.events.push(Event { index, time, process: process.to_string(), kind, op_id, op, api: None });
    }

    /// Records an invocation now; returns the id to complete it with.
    pub fn invoke(&self, process: &str, op: Op) -> OpId {
        let mut inner = self.lock();
        let t = Self::now(&inner);
        Self::invoke_locked(&mut inner, t, process, op)
    }

    /// Records an invocation at an explicit time.
    pub fn invoke_at(&self, time: Millis, process: &str, op: Op) -> OpId {
        let mut inner = self.lock();
        Self::invoke_locked(&mut inner, time, process, op)
    }

    /// Records an invocation of the public library operation `api` now
    /// (see [`Event::api`]).
    pub fn call(&self, process: &str, api: Api, op: Op) -> OpId {
        let mut inner = self.lock();
        let t = Self::now(&inner);
        let id = Self::invoke_locked(&mut inner, t, process, op);
        if let Some(e) = inner.events.last_mut() {
            e.api = Some(api);
        }
        id
    }

    /// Records that the run reached `situation`, once per run: later calls
    /// for the same situation record nothing.
    pub fn reach(&self, process: &str, situation: &str) {
        let mut inner = self.lock();
        if inner.reached.insert(situation.to_string()) {
            let t = Self::now(&inner);
            Self::observe_locked(
                &mut inner,
                t,
                process,
                EventKind::Ok,
                Op::Reached { situation: situation.to_string() },
            );
        }
    }

    fn invoke_locked(inner: &mut Inner, time: Millis, process: &str, op: Op) -> OpId {
        let id = OpId(inner.next_op);
        inner.next_op += 1;
        Self::push(inner, time, process, EventKind::Invoke, id, op);
        id
    }

    /// Completes `id` now with `kind` (`Ok`/`Fail`/`Info`) and the op as it
    /// finished (results filled in).
    pub fn complete(&self, id: OpId, process: &str, kind: EventKind, op: Op) {
        let mut inner = self.lock();
        let t = Self::now(&inner);
        Self::push(&mut inner, t, process, kind, id, op);
    }

    /// Completes `id` at an explicit time.
    pub fn complete_at(&self, time: Millis, id: OpId, process: &str, kind: EventKind, op: Op) {
        let mut inner = self.lock();
        Self::push(&mut inner, time, process, kind, id, op);
    }

    /// Shorthand: `complete(id, process, Ok, op)`.
    pub fn ok(&self, id: OpId, process: &str, op: Op) {
        self.complete(id, process, EventKind::Ok, op)
    }

    /// Shorthand: `complete(id, process, Fail, op)`.
    pub fn fail(&self, id: OpId, process: &str, op: Op) {
        self.complete(id, process, EventKind::Fail, op)
    }

    /// Shorthand: `complete(id, process, Info, op)` — outcome unknown.
    pub fn info(&self, id: OpId, process: &str, op: Op) {
        self.complete(id, process, EventKind::Info, op)
    }

    /// Records an observation (no invoke) now, as a single `Ok` event.
    pub fn observe(&self, process: &str, op: Op) {
        let mut inner = self.lock();
        let t = Self::now(&inner);
        Self::observe_locked(&mut inner, t, process, EventKind::Ok, op);
    }

    /// Records an observation at an explicit time.
    pub fn observe_at(&self, time: Millis, process: &str, op: Op) {
        let mut inner = self.lock();
        Self::observe_locked(&mut inner, time, process, EventKind::Ok, op);
    }

    /// Records a nemesis fault (an `Info` event of process `nemesis`) at an
    /// explicit time — the driver loop knows it from `Sim::elapsed`.
    pub fn fault_at(&self, time: Millis, fault: FaultRecord) {
        let mut inner = self.lock();
        Self::observe_locked(&mut inner, time, "nemesis", EventKind::Info, Op::Fault(fault));
    }

    /// Records a fault now (from inside a host), as process `nemesis`.
    pub fn fault(&self, fault: FaultRecord) {
        let mut inner = self.lock();
        let t = Self::now(&inner);
        Self::observe_locked(&mut inner, t, "nemesis", EventKind::Info, Op::Fault(fault));
    }

    fn observe_locked(inner: &mut Inner, time: Millis, process: &str, kind: EventKind, op: Op) {
        let id = OpId(inner.next_op);
        inner.next_op += 1;
        Self::push(inner, time, process, kind, id, op);
    }

    /// A copy of every event so far, in order.
    pub fn events(&self) -> Vec<Event> {
        self.lock().events.clone()
    }

    /// Number of events so far.
    pub fn len(&self) -> usize {
        self.lock().events.len()
    }

    /// Whether nothing has been recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The stable digest of the whole history (see [`digest_events`]).
    pub fn digest(&self) -> Digest {
        digest_events(&self.lock().events)
    }

    /// The readable timeline (see [`render_timeline`]).
    pub fn timeline(&self) -> String {
        render_timeline(&self.lock().events)
    }
}

/// A 64-bit history digest, printed as 16 hex digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Digest(pub u64);

impl Default for Digest {
    /// The digest of an empty history.
    fn default() -> Self {
        digest_events(&[])
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

/// FNV-1a, 64-bit: tiny, keyless, the same in every process.
#[derive(Debug, Clone, Copy)]
pub struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Self {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv1a {
    /// Feeds bytes.
    pub fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    /// The hash so far.
    pub fn finish(self) -> u64 {
        self.0
    }
}

/// Digest of events: FNV-1a over each event's canonical JSON (fields in
/// declaration order; no maps, so no ordering freedom) plus a newline.
pub fn digest_events(events: &[Event]) -> Digest {
    let mut h = Fnv1a::default();
    for e in events {
        // Serialising plain structs and enums of strings and integers cannot
        // fail; if it ever did, hash the Debug form rather than panic.
        match serde_json::to_vec(e) {
            Ok(bytes) => h.write(&bytes),
            Err(_) => h.write(format!("{e:?}").as_bytes()),
        }
        h.write(b"\n");
    }
    Digest(h.finish())
}

/// A readable timeline: one line per event, time in simulated ms, process,
/// kind, op id and the operation. Faults are marked with `!!` so they stand
/// out; `info` completions (outcome unknown) with `??`.
pub fn render_timeline(events: &[Event]) -> String {
    let mut out = String::new();
    out.push_str("    time  process      kind      op  operation\n");
    for e in events {
        let mark = match (&e.op, e.kind) {
            (Op::Fault(_), _) => "!!",
            (_, EventKind::Info) => "??",
            _ => "  ",
        };
        out.push_str(&format!("{mark}{e}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_custom_op_reads_back_typed_and_digests_stably() {
        #[derive(Debug, PartialEq, Serialize, Deserialize)]
        struct Claimed {
            id: String,
            attempt: Option<u64>,
        }
        let op = Op::custom("job-claim", &Claimed { id: "j1".into(), attempt: Some(3) });
        assert_eq!(op.to_string(), r#"job-claim {"attempt":3,"id":"j1"}"#);
        assert_eq!(op.custom_data::<Claimed>("job-claim"), Some(Claimed { id: "j1".into(), attempt: Some(3) }));
        assert_eq!(op.custom_data::<Claimed>("job-complete"), None);
        assert_eq!(op.custom_data::<u64>("job-claim"), None);
        let digest = |op: &Op| {
            let h = History::new();
            h.observe_at(1, "w", op.clone());
            digest_events(&h.events())
        };
        assert_eq!(digest(&op), digest(&Op::custom("job-claim", &Claimed { id: "j1".into(), attempt: Some(3) })));
        assert_ne!(digest(&op), digest(&Op::custom("job-claim", &Claimed { id: "j1".into(), attempt: Some(4) })));
    }

    fn sample() -> History {
        let h = History::new();
        let id = h.invoke_at(0, "c1", Op::Acquire { name: "l".into(), ttl_ms: 100, token: None, deadline: None });
        h.ok(id, "c1", Op::Acquire { name: "l".into(), ttl_ms: 100, token: Some(1), deadline: Some(100) });
        h.fault_at(5, FaultRecord::on_client(crate::nemesis::FaultKind::ClientPause, "c1", false, 1500));
        let w = h.invoke_at(
            10,
            "c1",
            Op::Write { key: "k".into(), value: "a".into(), token: Some(1), fenced: true, result: None },
        );
        h.info(w, "c1", Op::Write { key: "k".into(), value: "a".into(), token: Some(1), fenced: true, result: None });
        h
    }

    #[test]
    fn digest_is_stable_and_sensitive() {
        let a = sample();
        let b = sample();
        assert_eq!(a.digest(), b.digest());
        let c = sample();
        c.observe_at(20, "c1", Op::Note { text: "x".into() });
        assert_ne!(a.digest(), c.digest());
        assert_eq!(History::new().digest(), Digest(0xcbf2_9ce4_8422_2325));
    }

    #[test]
    fn time_never_runs_backwards_and_ids_pair() {
        let h = sample();
        let ev = h.events();
        assert!(ev.windows(2).all(|w| w[0].time <= w[1].time));
        assert_eq!(ev[0].op_id, ev[1].op_id);
        assert_eq!(ev[0].kind, EventKind::Invoke);
        assert_eq!(ev[1].kind, EventKind::Ok);
        assert_eq!(ev[3].op_id, ev[4].op_id);
        assert_eq!(ev[4].kind, EventKind::Info);
        // Outside a simulation `complete` reuses the latest time, never 0.
        assert_eq!(ev[4].time, 10);
    }

    #[test]
    fn timeline_marks_faults_and_unknowns() {
        let t = sample().timeline();
        assert!(t.contains("!!"), "{t}");
        assert!(t.contains("??"), "{t}");
        assert!(t.contains("acquire l ttl=100ms token=1 trusted-until=100ms"), "{t}");
        let ev = sample().events();
        let round = History::from_events(ev.clone());
        assert_eq!(round.events(), ev);
    }
}
