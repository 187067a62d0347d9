//! The lock family: clients contend for one `redis_primitives::Lock`,
//! write through a `FencedStore` while holding it, and release — through
//! process pauses, server pauses, partitions, held links and latency. Its
//! variants (`lock`, `lock-naive`, `fencing`, `fencing-unfenced`,
//! `counter-loss`, `lock-floored`, the `lock-failover` ones) are one
//! workload with different settings ([`LockWorkload`], [`LockVariant`]).
//!
//! This folder is also the **template** for a family. The shape every
//! scenario follows:
//!
//! 1. build a [`World`](crate::World) from the seed (servers reset,
//!    turmoil seeded, epoch pinned);
//! 2. register actors; each gets a connection per node, a seeded RNG, and
//!    records every operation as invoke → ok / fail / info. A library error
//!    whose outcome is unknown (timeout, dropped connection) is `info`,
//!    never `fail`;
//! 3. set the fault schedule: the plan's (drawn from the seed or by the
//!    property search through the one generator, `crate::space`: faults
//!    of the variant's [`FaultSpace`](crate::FaultSpace) plus any its
//!    workload shape places);
//! 4. run, then hand the history to the named checkers and the histogram
//!    recorders, and return an [`Outcome`](crate::outcome::Outcome).
//!
//! The workload, per client: acquire (TTL 300 ms); on success hold for a
//! seeded random time (sometimes longer than the TTL), then — if the
//! client checks its lease — stop if the local deadline has passed; write
//! a unique value with the lease's token; release. One client stalls itself
//! (a GC pause) inside one of its critical sections, at a seeded moment, so
//! every seed exercises the case fencing exists for. A reader runs the
//! probes while the clients work, and reads the resource once everything
//! has healed.
//!
//! | file | what it is |
//! |---|---|
//! | `plan.rs` | a run's plan ([`LockPlan`]) and what plans are drawn from ([`LockSpace`]) |
//! | `workload.rs` | a variant's fixed settings ([`LockWorkload`]) and the `Lock` they build |
//! | `run.rs` | one run: the world, the clients, the reader, the schedule |
//! | `client.rs` | a client: the plain attempt, and the modes when they are on |
//! | `modes/` | the attempts that call every other `Lock` operation, one file per kind |
//! | `reader.rs` | the reader: the probes, liveness after the heal, the final read |
//! | `probes/` | cases staged once per run on names of their own |
//! | `op.rs` | [`LockOp`], the family's operations as the history records them, and the values they carry |
//! | `record.rs` | lock calls recorded alike by the workload and the probes |
//! | `checks/` | the lock's own checkers (mutual exclusion, tokens, replies, guarded bodies, lease views, liveness, corrupt state) |
//! | `judge.rs` | which checkers judge a run, and what only the whole history shows |
//! | `situations.rs` | the situations and operations the family declares |
//! | `variants/` | [`LockVariant`], its [`Family`](crate::Family) impl, one file per variant's settings |

pub(crate) mod api;
mod checks;
mod client;
pub(crate) mod invariants;
mod judge;
mod modes;
mod op;
mod plan;
pub(crate) mod probes;
mod reader;
mod record;
mod run;
pub(crate) mod scenarios;
mod situations;
pub(crate) mod targets;
mod tenures;
pub(crate) mod variants;
mod workload;

// The lock's operations and the mutual-exclusion check, for a user's own
// lock run in a `World` (`sim/examples/user_lock.rs`): this is their one
// public path. The other checks stay the family's.
pub use checks::mutual_exclusion;
pub use op::LockOp;
#[cfg(test)]
pub(crate) use plan::Stall;
pub(crate) use plan::{LockPlan, LockSpace};
pub(crate) use situations::{situation, FENCING_PATHS, FENCING_SITUATIONS, OPERATIONS, PATHS, SITUATIONS};
pub(crate) use variants::LockVariant;
pub(crate) use workload::{LockKind, LockWorkload, Protection, StoreKind, ACK_TIMEOUT_MS, LOCK_NAME, RESOURCE_KEY};

/// What the lock family adds to `rp-sim report`: its invariants (its
/// histograms are the shared ones).
pub(crate) const REPORT_PART: crate::family::ReportPart =
    crate::family::ReportPart { invariants: invariants::INVARIANTS, histograms: &[], section: None };

/// The family's entry in the registry (`crate::families::REGISTRY`).
pub(crate) const ENTRY: crate::entry::FamilyEntry = crate::entry::FamilyEntry {
    scenarios: scenarios::SCENARIOS,
    report: REPORT_PART,
    targets: targets::TARGETS,
    properties: targets::PROPERTIES,
};
