//! What the search must find ([`targets()`]: every broken variant and
//! documented non-guarantee) and must not find ([`properties()`]), and the
//! space each is searched in.
//!
//! The tables live here, above the scenario registry, not in its rows: a
//! target's space is a plan space, and plans are read through the
//! registry, so a row that held its targets would close a dependency cycle
//! (ADR 0009).

use std::fmt::Debug;

use super::*;
use crate::checker::{Invariant, NO_STALE_OVERWRITE};
use crate::families::election::invariants::ELECTION;
use crate::families::election::ElectionSpace;
use crate::families::lock::invariants::{FENCING_TOKENS_INCREASE, MUTUAL_EXCLUSION};
use crate::families::lock::LockSpace;
use crate::families::rate_limit::invariants::RATE_LIMIT;
use crate::families::rate_limit::RateLimitSpace;
use crate::families::redlock::invariants::REDLOCK_MUTUAL_EXCLUSION;
use crate::families::redlock::{RedlockShape, RedlockSpace};
use crate::nemesis::FaultClass;

/// Whether a target is a broken implementation or a limit of a correct one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetKind {
    /// A broken variant kept so the harness can be shown to catch it.
    BrokenVariant,
    /// A correct primitive under a fault it documents it cannot survive.
    NonGuarantee,
}

/// Something the search must find.
#[derive(Debug, Clone, Copy)]
pub struct SearchTarget {
    /// Row name (a scenario name, or the non-guarantee's name).
    pub name: &'static str,
    /// Broken variant or non-guarantee.
    pub kind: TargetKind,
    /// The invariant that must catch it.
    pub invariant: &'static Invariant,
    /// What goes wrong, in one line.
    pub what: &'static str,
    /// Where to search.
    pub space: fn() -> Space,
    /// The test asserts the search finds it within this many cases (about
    /// three times the most any of 20 base seeds needed when it was set;
    /// `reports/README.md` has the measured medians).
    pub case_bound: u32,
    /// The test asserts the shrunk plan is at most this size (the largest
    /// any of those 20 base seeds shrank to).
    pub size_bound: usize,
}

/// The search space of `job-queue-naive`: the job queue's search
/// workloads, up to three client-side faults or server pauses.
pub fn job_queue_naive_space() -> Space {
    use crate::families::job_queue::{JobQueueVariant, JobSpace};
    Space::of::<JobQueueVariant>("job-queue-naive", FaultSpace::new(CLIENT_SIDE, 3), &JobSpace::search())
}
/// The search space of `lock-naive`.
pub fn lock_naive_space() -> Space {
    space::lock("lock-naive", CLIENT_SIDE)
}
/// The search space of `fencing-unfenced`.
pub fn fencing_unfenced_space() -> Space {
    space::lock("fencing-unfenced", CLIENT_SIDE)
}
/// The search space of `fixed-window`.
pub fn fixed_window_space() -> Space {
    space::rate_limit("rate-limit-fixed-window", RateLimitSpace::search())
}
/// The search space of `client-side`.
pub fn client_side_space() -> Space {
    space::rate_limit("rate-limit-client-side", RateLimitSpace::search())
}
/// The search space of `watch-multi`.
pub fn watch_multi_space() -> Space {
    space::rate_limit("rate-limit-watch-multi", RateLimitSpace::search())
}
/// The search space of `election-no-epoch`.
pub fn election_no_epoch_space() -> Space {
    space::election("election-no-epoch", ElectionSpace::search())
}
/// The search space of `redlock-no-validity`.
pub fn redlock_no_validity_space() -> Space {
    space::redlock(
        "redlock-no-validity",
        &[
            FaultClass::Latency,
            FaultClass::ClientPause,
            FaultClass::Partition,
            FaultClass::Hold,
            FaultClass::ServerPause,
        ],
        RedlockSpace::search(),
    )
}
/// A lock space with restarts of the lock's server added, and faults of
/// 20–600 ms: a restart that outlasts every lease is merely an outage.
pub fn with_restarts(scenario: &'static str) -> Space {
    let mut classes = vec![FaultClass::ServerRestart];
    classes.extend_from_slice(CLIENT_SIDE);
    let mut s = space::lock(scenario, &classes);
    s.faults.duration_ms = (20, 600);
    s
}
/// The search space of `counter-loss`.
pub fn counter_loss_space() -> Space {
    with_restarts("counter-loss")
}
/// The search space of `lock-failover`: the seeds' cut and failover, with
/// the lock workload, client-side faults and more cuts and failovers of the
/// replicated node (node 0: node-targeted faults go there only) drawn
/// around them.
pub fn lock_failover_space() -> Space {
    let workload = crate::families::lock::LockSpace {
        placed: crate::families::lock::variants::failover::cut_and_failover_faults(),
        ..crate::families::lock::LockSpace::search()
    };
    let mut classes = vec![FaultClass::CutReplication, FaultClass::Failover];
    classes.extend_from_slice(CLIENT_SIDE);
    let mut s = space::lock_with("lock-failover", &classes, workload);
    s.faults.server_nodes = Some(1);
    s
}
/// The search space of `lock-restart`.
pub fn lock_restart_space() -> Space {
    with_restarts("lock")
}
/// The search space of `redlock-clock-jump`.
pub fn redlock_clock_jump_space() -> Space {
    // Forward steps on a minority of the masters (0 and 1 of 5) and link
    // cuts; clients start together, so that one of them can win a bare
    // majority that includes a master whose clock then jumps.
    let workload = RedlockSpace { shape: RedlockShape::Free { start_ms: (0, 20) }, ..RedlockSpace::search() };
    let mut s = space::redlock("redlock-clock-jump", &[FaultClass::ClockStep, FaultClass::Partition], workload);
    s.faults.count = (1, 4);
    s.faults.start_ms = (0, 600);
    s.faults.clock_step_ms = (300, 2000);
    s.faults.server_nodes = Some(2);
    s
}

/// Every broken variant and every documented non-guarantee, in registry
/// order (one row each in `rp-sim report`'s mutation table;
/// `proptests/tests/search/violations.rs` searches each).
const TARGETS: &[SearchTarget] = &[
    SearchTarget {
        name: "lock-restart",
        kind: TargetKind::NonGuarantee,
        invariant: &MUTUAL_EXCLUSION,
        what:
            "a restart without persistence under a held lock: a second client acquires while the first trusts its lease",
        space: lock_restart_space,
        case_bound: 200,
        size_bound: 5,
    },
    SearchTarget {
        name: "lock-naive",
        kind: TargetKind::BrokenVariant,
        invariant: &MUTUAL_EXCLUSION,
        what: "bare DEL release: a holder past its lease deletes the next holder's lock",
        space: lock_naive_space,
        case_bound: 30,
        size_bound: 4,
    },
    SearchTarget {
        name: "fencing-unfenced",
        kind: TargetKind::BrokenVariant,
        invariant: &NO_STALE_OVERWRITE,
        what: "a resource that ignores the token: a late write overwrites a newer one",
        space: fencing_unfenced_space,
        case_bound: 40,
        size_bound: 4,
    },
    SearchTarget {
        name: "rate-limit-fixed-window",
        kind: TargetKind::BrokenVariant,
        invariant: &RATE_LIMIT,
        what: "INCR + EXPIRE fixed window: bursts either side of a boundary",
        space: fixed_window_space,
        case_bound: 20,
        size_bound: 2,
    },
    SearchTarget {
        name: "rate-limit-client-side",
        kind: TargetKind::BrokenVariant,
        invariant: &RATE_LIMIT,
        what: "count then add in separate round trips: concurrent callers all pass",
        space: client_side_space,
        case_bound: 20,
        size_bound: 2,
    },
    SearchTarget {
        name: "rate-limit-watch-multi",
        kind: TargetKind::BrokenVariant,
        invariant: &RATE_LIMIT,
        what: "WATCH/MULTI on a shared connection: EXEC clears every caller's watch",
        space: watch_multi_space,
        case_bound: 20,
        size_bound: 2,
    },
    SearchTarget {
        name: "election-no-epoch",
        kind: TargetKind::BrokenVariant,
        invariant: &ELECTION,
        what: "no epoch, unfenced writes: a paused leader's write lands after its successor's",
        space: election_no_epoch_space,
        case_bound: 60,
        size_bound: 4,
    },
    SearchTarget {
        name: "counter-loss",
        kind: TargetKind::NonGuarantee,
        invariant: &FENCING_TOKENS_INCREASE,
        what: "fence counter lost in a restart without persistence: tokens reissued",
        space: counter_loss_space,
        case_bound: 150,
        size_bound: 5,
    },
    SearchTarget {
        name: "lock-failover",
        kind: TargetKind::NonGuarantee,
        invariant: &FENCING_TOKENS_INCREASE,
        what: "asynchronous replication: a failover to a replica that missed INCRs reissues their tokens",
        space: lock_failover_space,
        case_bound: 60,
        size_bound: 5,
    },
    SearchTarget {
        name: "redlock-no-validity",
        kind: TargetKind::BrokenVariant,
        invariant: &REDLOCK_MUTUAL_EXCLUSION,
        what: "no elapsed-time validity gate: a slow acquire trusts keys that have expired",
        space: redlock_no_validity_space,
        case_bound: 80,
        size_bound: 5,
    },
    SearchTarget {
        name: "redlock-clock-jump",
        kind: TargetKind::NonGuarantee,
        invariant: &REDLOCK_MUTUAL_EXCLUSION,
        what: "a forward clock step on a minority of masters: two clients each hold a majority",
        space: redlock_clock_jump_space,
        case_bound: 200,
        size_bound: 5,
    },
    SearchTarget {
        name: "job-queue-naive",
        kind: TargetKind::BrokenVariant,
        invariant: &crate::families::job_queue::JOB_QUEUE,
        what: "claim without a lease or fence: a slow worker's job is handed out again and completed twice",
        space: job_queue_naive_space,
        case_bound: 10,
        size_bound: 2,
    },
];

/// Every broken variant and every documented non-guarantee, with the
/// invariant that must catch it (one table, in registry order).
pub fn targets() -> impl Iterator<Item = &'static SearchTarget> {
    TARGETS.iter()
}

/// Looks a search target up by name.
pub fn target(name: &str) -> Option<&'static SearchTarget> {
    targets().find(|t| t.name == name)
}

/// Something the search must not find: a correct scenario, a space of
/// faults it claims to survive, and the invariant that must hold.
#[derive(Debug, Clone, Copy)]
pub struct PropertySpec {
    /// Name (used for the regression file).
    pub name: &'static str,
    /// The invariant that must hold.
    pub invariant: &'static Invariant,
    /// Where to search.
    pub space: fn() -> Space,
}

/// The search space of `tokens`.
pub fn tokens_space() -> Space {
    tokens_space_for("lock")
}
fn tokens_space_for(scenario: &'static str) -> Space {
    let mut classes = CLIENT_SIDE.to_vec();
    classes.push(FaultClass::ClockStep);
    space::lock_with(scenario, &classes, LockSpace { clients: (2, 4), length_ms: (1000, 2500), ..LockSpace::search() })
}
/// The search space of `stale-overwrite`.
pub fn stale_overwrite_space() -> Space {
    tokens_space_for("fencing")
}
/// The search space of `log`.
pub fn log_space() -> Space {
    space::rate_limit("rate-limit", RateLimitSpace { clients: (2, 4), ..RateLimitSpace::search() })
}
/// The search space of `counter`.
pub fn counter_space() -> Space {
    space::rate_limit("rate-limit-counter", RateLimitSpace { clients: (2, 4), ..RateLimitSpace::search() })
}
/// The search space of `election`.
pub fn election_space() -> Space {
    space::election("election", ElectionSpace { nodes: (2, 3), length_ms: (1500, 2500), ..ElectionSpace::search() })
}
/// The search space of `redlock`.
pub fn redlock_space() -> Space {
    space::redlock(
        "redlock",
        CLIENT_SIDE,
        RedlockSpace { clients: (2, 3), length_ms: (1500, 2500), ..RedlockSpace::search() },
    )
}

/// What the search must not find: an invariant over a fault space a correct
/// scenario claims to survive (`proptests/tests/search/properties.rs`
/// checks each).
const PROPERTIES: &[PropertySpec] = &[
    PropertySpec { name: "fencing-tokens-increase", invariant: &FENCING_TOKENS_INCREASE, space: tokens_space },
    PropertySpec { name: "no-stale-overwrite", invariant: &NO_STALE_OVERWRITE, space: stale_overwrite_space },
    PropertySpec { name: "sliding-log-limit", invariant: &RATE_LIMIT, space: log_space },
    PropertySpec { name: "sliding-counter-bound", invariant: &RATE_LIMIT, space: counter_space },
    PropertySpec { name: "one-leader-per-epoch", invariant: &ELECTION, space: election_space },
    PropertySpec { name: "redlock-mutual-exclusion", invariant: &REDLOCK_MUTUAL_EXCLUSION, space: redlock_space },
];

/// What the search must not find (one table).
pub fn properties() -> impl Iterator<Item = &'static PropertySpec> {
    PROPERTIES.iter()
}

/// Looks a property up by name.
pub fn property(name: &str) -> Option<&'static PropertySpec> {
    properties().find(|p| p.name == name)
}
