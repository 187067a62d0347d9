//! [`Op`]: the operations and observations a history records, with their
//! arguments and (on a completion) their result: those several families
//! share, the ones not yet moved to their family, and a family's own
//! ([`Op::Family`]).

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
            Op::NotAcknowledged { .. } => "not-acknowledged",
            Op::Write { .. } => "write",
            Op::Read { .. } => "read",
            Op::RateLimit { .. } => "rate-limit",
            Op::Role { .. } => "role",
            Op::RedlockAcquire { .. } => "redlock-acquire",
            Op::RedlockRelease { .. } => "redlock-release",
            Op::RedlockConnect { .. } => "redlock-connect",
            Op::RedlockExtend { .. } => "redlock-extend",
            Op::Fault(_) => "fault",
            Op::Reached { .. } => "reached",
            Op::ErrorReply { .. } => "error-reply",
            Op::LibraryError { .. } => "library-error",
            Op::Configured { .. } => "configured",
            Op::Paused { .. } => "paused",
            Op::Delayed { .. } => "delayed",
            Op::Validated { .. } => "validated",
            Op::ElectionView { .. } => "election-view",
            Op::ElectionCallback { .. } => "election-callback",
            Op::EpochCheck { .. } => "epoch-check",
            Op::SubscriberView { .. } => "subscriber-view",
            Op::ElectionConfig { .. } => "election-config",
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
