//! What the search must find ([`TARGETS`]: every broken variant and
//! documented non-guarantee) and must not find ([`PROPERTIES`]), each with
//! its space.

use std::fmt::Debug;

use super::*;
use crate::checker::{
    ELECTION, FENCING_TOKENS_INCREASE, MUTUAL_EXCLUSION, NO_STALE_OVERWRITE, RATE_LIMIT, REDLOCK_MUTUAL_EXCLUSION,
};
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
    pub invariant: &'static str,
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

pub(super) fn lock_naive_space() -> Space {
    Space::lock("lock-naive", CLIENT_SIDE)
}
pub(super) fn fencing_unfenced_space() -> Space {
    Space::lock("fencing-unfenced", CLIENT_SIDE)
}
pub(super) fn fixed_window_space() -> Space {
    Space::rate_limit("rate-limit-fixed-window")
}
pub(super) fn client_side_space() -> Space {
    Space::rate_limit("rate-limit-client-side")
}
pub(super) fn watch_multi_space() -> Space {
    Space::rate_limit("rate-limit-watch-multi")
}
pub(super) fn election_no_epoch_space() -> Space {
    Space::election("election-no-epoch")
}
pub(super) fn redlock_no_validity_space() -> Space {
    Space::redlock(
        "redlock-no-validity",
        &[
            FaultClass::Latency,
            FaultClass::ClientPause,
            FaultClass::Partition,
            FaultClass::Hold,
            FaultClass::ServerPause,
        ],
    )
}
/// A lock space with restarts of the lock's server added, and faults of
/// 20–600 ms: a restart that outlasts every lease is merely an outage.
pub(super) fn with_restarts(scenario: &'static str) -> Space {
    let mut classes = vec![FaultClass::ServerRestart];
    classes.extend_from_slice(CLIENT_SIDE);
    let mut s = Space::lock(scenario, &classes);
    s.faults.duration_ms = (20, 600);
    s
}
pub(super) fn counter_loss_space() -> Space {
    with_restarts("counter-loss")
}
pub(super) fn lock_restart_space() -> Space {
    with_restarts("lock")
}
pub(super) fn redlock_clock_jump_space() -> Space {
    // Forward steps on a minority of the masters (0 and 1 of 5) and link
    // cuts; clients start together, so that one of them can win a bare
    // majority that includes a master whose clock then jumps.
    let mut s = Space::redlock("redlock-clock-jump", &[FaultClass::ClockStep, FaultClass::Partition]);
    s.faults.count = (1, 4);
    s.faults.start_ms = (0, 600);
    s.faults.clock_step_ms = (300, 2000);
    s.faults.server_nodes = Some(2);
    if let WorkloadSpace::Redlock { start_ms, .. } = &mut s.workload {
        *start_ms = (0, 20);
    }
    s
}

/// Every broken variant and every documented non-guarantee, with the
/// invariant that must catch it (one row each in the mutation table).
pub const TARGETS: &[SearchTarget] = &[
    SearchTarget {
        name: "lock-naive",
        kind: TargetKind::BrokenVariant,
        invariant: MUTUAL_EXCLUSION,
        what: "bare DEL release: a holder past its lease deletes the next holder's lock",
        space: lock_naive_space,
        case_bound: 30,
        size_bound: 4,
    },
    SearchTarget {
        name: "fencing-unfenced",
        kind: TargetKind::BrokenVariant,
        invariant: NO_STALE_OVERWRITE,
        what: "a resource that ignores the token: a late write overwrites a newer one",
        space: fencing_unfenced_space,
        case_bound: 40,
        size_bound: 4,
    },
    SearchTarget {
        name: "rate-limit-fixed-window",
        kind: TargetKind::BrokenVariant,
        invariant: RATE_LIMIT,
        what: "INCR + EXPIRE fixed window: bursts either side of a boundary",
        space: fixed_window_space,
        case_bound: 20,
        size_bound: 2,
    },
    SearchTarget {
        name: "rate-limit-client-side",
        kind: TargetKind::BrokenVariant,
        invariant: RATE_LIMIT,
        what: "count then add in separate round trips: concurrent callers all pass",
        space: client_side_space,
        case_bound: 20,
        size_bound: 2,
    },
    SearchTarget {
        name: "rate-limit-watch-multi",
        kind: TargetKind::BrokenVariant,
        invariant: RATE_LIMIT,
        what: "WATCH/MULTI on a shared connection: EXEC clears every caller's watch",
        space: watch_multi_space,
        case_bound: 20,
        size_bound: 2,
    },
    SearchTarget {
        name: "election-no-epoch",
        kind: TargetKind::BrokenVariant,
        invariant: ELECTION,
        what: "no epoch, unfenced writes: a paused leader's write lands after its successor's",
        space: election_no_epoch_space,
        case_bound: 60,
        size_bound: 4,
    },
    SearchTarget {
        name: "redlock-no-validity",
        kind: TargetKind::BrokenVariant,
        invariant: REDLOCK_MUTUAL_EXCLUSION,
        what: "no elapsed-time validity gate: a slow acquire trusts keys that have expired",
        space: redlock_no_validity_space,
        case_bound: 80,
        size_bound: 5,
    },
    SearchTarget {
        name: "counter-loss",
        kind: TargetKind::NonGuarantee,
        invariant: FENCING_TOKENS_INCREASE,
        what: "fence counter lost in a restart without persistence: tokens reissued",
        space: counter_loss_space,
        case_bound: 150,
        size_bound: 5,
    },
    SearchTarget {
        name: "lock-restart",
        kind: TargetKind::NonGuarantee,
        invariant: MUTUAL_EXCLUSION,
        what:
            "a restart without persistence under a held lock: a second client acquires while the first trusts its lease",
        space: lock_restart_space,
        case_bound: 200,
        size_bound: 5,
    },
    SearchTarget {
        name: "redlock-clock-jump",
        kind: TargetKind::NonGuarantee,
        invariant: REDLOCK_MUTUAL_EXCLUSION,
        what: "a forward clock step on a minority of masters: two clients each hold a majority",
        space: redlock_clock_jump_space,
        case_bound: 200,
        size_bound: 5,
    },
];

/// Looks a search target up by name.
pub fn target(name: &str) -> Option<&'static SearchTarget> {
    TARGETS.iter().find(|t| t.name == name)
}

/// Something the search must not find: a correct scenario, a space of
/// faults it claims to survive, and the invariant that must hold.
#[derive(Debug, Clone, Copy)]
pub struct PropertySpec {
    /// Name (used for the regression file).
    pub name: &'static str,
    /// The invariant that must hold.
    pub invariant: &'static str,
    /// Where to search.
    pub space: fn() -> Space,
}

pub(super) fn tokens_space() -> Space {
    let mut classes = CLIENT_SIDE.to_vec();
    classes.push(FaultClass::ClockStep);
    let mut s = Space::lock("lock", &classes);
    s.workload = WorkloadSpace::Lock {
        clients: (2, 4),
        ttl_ms: (150, 600),
        hold_max_ms: (100, 700),
        length_ms: (1000, 2500),
        stall: true,
    };
    s
}
pub(super) fn stale_overwrite_space() -> Space {
    let mut s = tokens_space();
    s.scenario = "fencing";
    s
}
pub(super) fn log_space() -> Space {
    let mut s = Space::rate_limit("rate-limit");
    if let WorkloadSpace::RateLimit { clients, .. } = &mut s.workload {
        *clients = (2, 4);
    }
    s
}
pub(super) fn counter_space() -> Space {
    let mut s = log_space();
    s.scenario = "rate-limit-counter";
    s
}
pub(super) fn election_space() -> Space {
    let mut s = Space::election("election");
    if let WorkloadSpace::Election { nodes, length_ms, .. } = &mut s.workload {
        *nodes = (2, 3);
        *length_ms = (1500, 2500);
    }
    s
}
pub(super) fn redlock_space() -> Space {
    let mut s = Space::redlock("redlock", CLIENT_SIDE);
    if let WorkloadSpace::Redlock { clients, length_ms, .. } = &mut s.workload {
        *clients = (2, 3);
        *length_ms = (1500, 2500);
    }
    s
}

/// The properties `proptests/tests/search/properties.rs` checks.
pub const PROPERTIES: &[PropertySpec] = &[
    PropertySpec { name: "fencing-tokens-increase", invariant: FENCING_TOKENS_INCREASE, space: tokens_space },
    PropertySpec { name: "no-stale-overwrite", invariant: NO_STALE_OVERWRITE, space: stale_overwrite_space },
    PropertySpec { name: "sliding-log-limit", invariant: RATE_LIMIT, space: log_space },
    PropertySpec { name: "sliding-counter-bound", invariant: RATE_LIMIT, space: counter_space },
    PropertySpec { name: "one-leader-per-epoch", invariant: ELECTION, space: election_space },
    PropertySpec { name: "redlock-mutual-exclusion", invariant: REDLOCK_MUTUAL_EXCLUSION, space: redlock_space },
];

/// Looks a property up by name.
pub fn property(name: &str) -> Option<&'static PropertySpec> {
    PROPERTIES.iter().find(|p| p.name == name)
}
