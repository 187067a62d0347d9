//! [`LockOp`]: what the lock family records in the history (a `Lock`
//! call, a lease's view of itself, a holder's loss of its lease, a probe's
//! planted key), with the values those operations carry and their timeline
//! lines. The family's actors and probes record it; its checks
//! (`checks/`) read it back typed with `Op::family`.
//!
//! Each variant has the name, fields, field order and serde attributes it
//! had as a variant of the history's `Op`, so a lock history's JSON, and
//! its digest, did not change when the operations moved here.

use core::fmt;

use serde::{Deserialize, Serialize};

use crate::history::{Millis, Op, Operation};

/// One lock operation: its arguments, and (on the completion event) its
/// result.
///
/// Result fields are `Option`s: `None` on the invoke event, filled on an `Ok`
/// completion, and left `None` when the outcome is unknown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum LockOp {
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
    /// `self-fencing` (`checks::guarded_body`). `lock-replies` does not
    /// hold a refusal of that lease against it from this instant on.
    TakenAway {
        /// Lock name.
        name: String,
        /// Token of the lease whose key was overwritten; `None` when the
        /// overwrite went unanswered and may land later (nothing expects
        /// a refusal then).
        token: Option<u64>,
    },
    /// Observation: the body of this process's guarded call on `name`
    /// (granted with `token`) was dropped before it finished, at this
    /// event's instant (the body's own drop guard records it). Judged by
    /// `self-fencing` (`checks::guarded_body`): a `Cancelled { at }` says
    /// when the body was dropped, so `at` is this instant, not the later
    /// one at which the best-effort release returned.
    BodyDropped {
        /// Lock name.
        name: String,
        /// Token of the lease the body ran under.
        token: u64,
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
}

impl LockOp {
    /// `op` as a lock operation, if it is one.
    pub(crate) fn of(op: &Op) -> Option<&LockOp> {
        op.family()
    }
}

impl Operation for LockOp {
    fn verb(&self) -> &'static str {
        match self {
            LockOp::Acquire { .. } => "acquire",
            LockOp::Release { .. } => "release",
            LockOp::Extend { .. } => "extend",
            LockOp::LeaseLost { .. } => "lease-lost",
            LockOp::TakenAway { .. } => "taken-away",
            LockOp::BodyDropped { .. } => "body-dropped",
            LockOp::Retry { .. } => "retry",
            LockOp::Guarded { .. } => "guarded",
            LockOp::CurrentToken { .. } => "current-token",
            LockOp::RemainingTtl { .. } => "remaining-ttl",
            LockOp::LeaseView { .. } => "lease-view",
            LockOp::StateProbe { .. } => "state-probe",
        }
    }
}

/// A value, or `?` when unknown.
fn opt<T: fmt::Display>(v: &Option<T>) -> String {
    match v {
        Some(v) => v.to_string(),
        None => "?".to_string(),
    }
}

impl fmt::Display for LockOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LockOp::Acquire { name, ttl_ms, token, deadline } => {
                write!(f, "acquire {name} ttl={ttl_ms}ms token={}", opt(token))?;
                if let Some(d) = deadline {
                    write!(f, " trusted-until={d}ms")?;
                }
                Ok(())
            }
            LockOp::Release { name, token } => write!(f, "release {name} token={}", opt(token)),
            LockOp::Extend { name, token, ttl_ms, deadline } => {
                write!(f, "extend {name} token={} ttl={ttl_ms}ms", opt(token))?;
                if let Some(d) = deadline {
                    write!(f, " trusted-until={d}ms")?;
                }
                Ok(())
            }
            LockOp::LeaseLost { name, token, reason } => {
                write!(f, "lease-lost {name} token={} ({reason})", opt(token))
            }
            LockOp::TakenAway { name, token } => {
                write!(f, "taken-away {name} token={} (its key overwritten with another owner)", opt(token))
            }
            LockOp::BodyDropped { name, token } => {
                write!(f, "body-dropped {name} token={token} (the guarded body was dropped unfinished)")
            }
            LockOp::Retry { name, attempts, deadline_ms, token, backoff_ms } => {
                write!(f, "retry acquire {name} attempts={attempts}")?;
                if let Some(d) = deadline_ms {
                    write!(f, " deadline={d}ms")?;
                }
                if let Some((base, max)) = backoff_ms {
                    write!(f, " backoff={base}..{max}ms")?;
                }
                write!(f, " token={}", opt(token))
            }
            LockOp::Guarded { name, token, outcome, .. } => {
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
            LockOp::CurrentToken { name, token } => write!(f, "current-token {name} -> {}", opt(token)),
            LockOp::RemainingTtl { name, ms } => match ms {
                Some(ms) => write!(f, "remaining-ttl {name} -> {ms}ms"),
                None => write!(f, "remaining-ttl {name} -> not held"),
            },
            LockOp::LeaseView { name, key, token, ttl_ms, sent_ms, deadline_ms, trusted } => write!(
                f,
                "lease-view {name} key={key} token={token} ttl={ttl_ms}ms sent={sent_ms}ms trusted-until={deadline_ms}ms -> {}",
                if *trusted { "trusted" } else { "not trusted" }
            ),
            LockOp::StateProbe { planted, reply, after } => {
                write!(f, "state-probe {planted:?} -> {reply:?}, after {after:?}")
            }
        }
    }
}

/// How a guarded body ended ([`LockOp::Guarded`]).
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
