//! [`Op`]: every kind of operation and observation a history records,
//! with its arguments and (on a completion) its result.

use serde::Serialize;

use super::operation::{FamilyOp, Operation};
use super::values::*;
use super::FaultRecord;
use crate::time::Millis;

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
    /// [`crate::outcome::Situation`]). Recorded once per run and situation.
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
    /// Anything else a scenario wants in the timeline.
    Note {
        /// Free text.
        text: String,
    },
    /// An operation of a family's own type (see [`Operation`]): serialised
    /// as that type's JSON, read back typed with [`Op::family`].
    #[serde(untagged)]
    Family(FamilyOp),
}

impl Op {
    /// A family's operation of type `T`, if this is one.
    pub fn family<T: Operation>(&self) -> Option<&T> {
        match self {
            Op::Family(op) => op.get::<T>(),
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
            Op::Retry { .. } => "retry",
            Op::Guarded { .. } => "guarded",
            Op::CurrentToken { .. } => "current-token",
            Op::RemainingTtl { .. } => "remaining-ttl",
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
            Op::Family(op) => op.verb(),
            Op::Note { .. } => "note",
        }
    }
}

impl<T: Operation> From<T> for Op {
    fn from(op: T) -> Op {
        Op::Family(FamilyOp::new(op))
    }
}
