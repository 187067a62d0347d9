//! [`Op`]: the operations and observations a history records, with their
//! arguments and (on a completion) their result: those several families
//! share, the ones not yet moved to their family, and a family's own
//! ([`Op::Family`]).

use serde::Serialize;

use super::operation::{FamilyOp, Operation};
use super::values::*;
use super::FaultRecord;
use crate::situation::SituationName;
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
    /// A fault injected (or healed) by the nemesis, or by the workload
    /// itself: typed, text only in `Display` and the JSON.
    Fault(FaultRecord),
    /// Observation: the run reached a situation its scenario declares it
    /// exists to reach (a "sometimes" assertion; see
    /// [`crate::outcome::Situation`]). Recorded once per run and situation.
    Reached {
        /// The situation's name.
        situation: SituationName,
    },
    /// Redis answered a request with an error reply (a script error, a
    /// `CORRUPT`/`WRONGTYPE` refusal, anything but the `NOSCRIPT` the library
    /// recovers from), recorded by the connection itself (see
    /// [`crate::net::SimConnection`]); judged by `unexpected-errors`.
    ErrorReply {
        /// The error as the client saw it.
        message: String,
    },
    /// Observation: what a primitive's accessors report of how it was
    /// built, beside what it was built with (`(accessor, reported,
    /// configured)`); judged by `configuration`.
    Configured {
        /// The primitive (`Lock`, `Redlock`, ...).
        primitive: String,
        /// `(accessor, reported, configured)`, as text.
        fields: Vec<(String, String, String)>,
        /// In a live run, how far the instants the report compares (a read
        /// a millisecond before a deadline, two reads of the clock the
        /// simulation would make at one instant) were from each other
        /// ([`crate::Actor::configured_reading`]). Never set in the
        /// simulation, whose instants are exact.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        missed_by: Option<core::time::Duration>,
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
            Op::Fault(_) => "fault",
            Op::Reached { .. } => "reached",
            Op::ErrorReply { .. } => "error-reply",
            Op::LibraryError { .. } => "library-error",
            Op::Configured { .. } => "configured",
            Op::Paused { .. } => "paused",
            Op::Delayed { .. } => "delayed",
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
