//! What the property search must find in the lock family (its broken
//! variants and the non-guarantees of the correct lock) and what it must
//! not (tokens increase, no stale overwrite), with the spaces searched.

use super::invariants::{FENCING_TOKENS_INCREASE, MUTUAL_EXCLUSION};
use super::scenarios::{COUNTER_LOSS, FENCING, FENCING_UNFENCED, LOCK, LOCK_FAILOVER, LOCK_NAIVE};
use super::{LockSpace, LockVariant};
use crate::checker::NO_STALE_OVERWRITE;
use crate::fault_space::{FaultSpace, CLIENT_SIDE};
use crate::nemesis::FaultClass;
use crate::scenario::Scenario;
use crate::space::Space;
use crate::target::{PropertySpec, SearchTarget, TargetKind};

/// `row`'s plans over `workload`, up to 3 faults of `classes`.
pub(crate) fn search_space(row: &Scenario, classes: &[FaultClass], workload: LockSpace) -> Space {
    Space::of::<LockVariant>(row, FaultSpace::new(classes, 3), &workload)
}

/// [`LockSpace::search`] (1–4 clients, TTL 150–600 ms, holds up to
/// 100–700 ms, 1–3 s of attempts, an optional stall), client-side faults.
pub(crate) fn client_side(row: &Scenario) -> Space {
    search_space(row, CLIENT_SIDE, LockSpace::search())
}

/// A lock space with restarts of the lock's server added, and faults of
/// 20–600 ms: a restart that outlasts every lease is merely an outage.
fn with_restarts(row: &Scenario) -> Space {
    let mut classes = vec![FaultClass::ServerRestart];
    classes.extend_from_slice(CLIENT_SIDE);
    let mut s = search_space(row, &classes, LockSpace::search());
    s.faults.duration_ms = (20, 600);
    s
}

/// The seeds' cut and failover, with the lock workload, client-side faults
/// and more cuts and failovers of the replicated node (node 0:
/// node-targeted faults go there only) drawn around them.
fn failover() -> Space {
    let workload = LockSpace { placed: super::variants::failover::cut_and_failover_faults(), ..LockSpace::search() };
    let mut classes = vec![FaultClass::CutReplication, FaultClass::Failover];
    classes.extend_from_slice(CLIENT_SIDE);
    let mut s = search_space(&LOCK_FAILOVER, &classes, workload);
    s.faults.server_nodes = Some(1);
    s
}

/// Two to four clients for 1–2.5 s, client-side faults and clock steps.
fn tokens(row: &Scenario) -> Space {
    let mut classes = CLIENT_SIDE.to_vec();
    classes.push(FaultClass::ClockStep);
    search_space(row, &classes, LockSpace { clients: (2, 4), length_ms: (1000, 2500), ..LockSpace::search() })
}

/// What the search must find, in the mutation table's order.
pub(crate) const TARGETS: &[SearchTarget] = &[
    SearchTarget {
        name: "lock-restart",
        kind: TargetKind::NonGuarantee,
        invariant: &MUTUAL_EXCLUSION,
        what:
            "a restart without persistence under a held lock: a second client acquires while the first trusts its lease",
        space: || with_restarts(&LOCK),
        case_bound: 200,
        size_bound: 5,
    },
    SearchTarget {
        name: "lock-naive",
        kind: TargetKind::BrokenVariant,
        invariant: &MUTUAL_EXCLUSION,
        what: "bare DEL release: a holder past its lease deletes the next holder's lock",
        space: || client_side(&LOCK_NAIVE),
        case_bound: 30,
        size_bound: 4,
    },
    SearchTarget {
        name: "fencing-unfenced",
        kind: TargetKind::BrokenVariant,
        invariant: &NO_STALE_OVERWRITE,
        what: "a resource that ignores the token: a late write overwrites a newer one",
        space: || client_side(&FENCING_UNFENCED),
        case_bound: 40,
        size_bound: 4,
    },
    SearchTarget {
        name: "counter-loss",
        kind: TargetKind::NonGuarantee,
        invariant: &FENCING_TOKENS_INCREASE,
        what: "fence counter lost in a restart without persistence: tokens reissued",
        space: || with_restarts(&COUNTER_LOSS),
        case_bound: 150,
        size_bound: 5,
    },
    SearchTarget {
        name: "lock-failover",
        kind: TargetKind::NonGuarantee,
        invariant: &FENCING_TOKENS_INCREASE,
        what: "asynchronous replication: a failover to a replica that missed INCRs reissues their tokens",
        space: failover,
        case_bound: 60,
        size_bound: 5,
    },
];

/// What the search must not find.
pub(crate) const PROPERTIES: &[PropertySpec] = &[
    PropertySpec { name: "fencing-tokens-increase", invariant: &FENCING_TOKENS_INCREASE, space: || tokens(&LOCK) },
    PropertySpec { name: "no-stale-overwrite", invariant: &NO_STALE_OVERWRITE, space: || tokens(&FENCING) },
];
