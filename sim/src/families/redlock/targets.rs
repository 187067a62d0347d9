//! What the property search must find in the Redlock family (Redlock
//! without its validity gate, and the documented clock-jump limit) and
//! what it must not (mutual exclusion), with the spaces searched.

use super::invariants::REDLOCK_MUTUAL_EXCLUSION;
use super::scenarios::{REDLOCK, REDLOCK_CLOCK_JUMP, REDLOCK_NO_VALIDITY};
use super::{RedlockShape, RedlockSpace, RedlockVariant};
use crate::fault_space::{FaultSpace, CLIENT_SIDE};
use crate::nemesis::FaultClass;
use crate::scenario::Scenario;
use crate::space::Space;
use crate::target::{PropertySpec, SearchTarget, TargetKind};

/// `row`'s plans over 5 masters and `workload` ([`RedlockSpace::search`]:
/// 1–3 clients starting in the first 1.2 s, TTL 250–600 ms, master
/// timeout 50–250 ms), up to 4 faults of `classes` (single links allowed).
pub(crate) fn search_space(row: &Scenario, classes: &[FaultClass], workload: RedlockSpace) -> Space {
    let faults = FaultSpace {
        start_ms: (0, 2000),
        duration_ms: (50, 1000),
        latency_ms: (30, 200),
        links: true,
        ..FaultSpace::new(classes, 4)
    };
    Space::of::<RedlockVariant>(row, faults, &workload)
}

/// Every fault a slow acquire can meet.
fn no_validity() -> Space {
    let classes = [
        FaultClass::Latency,
        FaultClass::ClientPause,
        FaultClass::Partition,
        FaultClass::Hold,
        FaultClass::ServerPause,
    ];
    search_space(&REDLOCK_NO_VALIDITY, &classes, RedlockSpace::search())
}

/// Forward steps on a minority of the masters (0 and 1 of 5) and link
/// cuts; clients start together, so that one of them can win a bare
/// majority that includes a master whose clock then jumps.
fn clock_jump() -> Space {
    let workload = RedlockSpace { shape: RedlockShape::Free { start_ms: (0, 20) }, ..RedlockSpace::search() };
    let mut s = search_space(&REDLOCK_CLOCK_JUMP, &[FaultClass::ClockStep, FaultClass::Partition], workload);
    s.faults.count = (1, 4);
    s.faults.start_ms = (0, 600);
    s.faults.clock_step_ms = (300, 2000);
    s.faults.server_nodes = Some(2);
    s
}

/// What the search must find.
pub(crate) const TARGETS: &[SearchTarget] = &[
    SearchTarget {
        name: "redlock-no-validity",
        kind: TargetKind::BrokenVariant,
        invariant: &REDLOCK_MUTUAL_EXCLUSION,
        what: "no elapsed-time validity gate: a slow acquire trusts keys that have expired",
        space: no_validity,
        case_bound: 80,
        size_bound: 5,
    },
    SearchTarget {
        name: "redlock-clock-jump",
        kind: TargetKind::NonGuarantee,
        invariant: &REDLOCK_MUTUAL_EXCLUSION,
        what: "a forward clock step on a minority of masters: two clients each hold a majority",
        space: clock_jump,
        case_bound: 200,
        size_bound: 5,
    },
];

/// What the search must not find.
pub(crate) const PROPERTIES: &[PropertySpec] = &[PropertySpec {
    name: "redlock-mutual-exclusion",
    invariant: &REDLOCK_MUTUAL_EXCLUSION,
    space: || {
        let workload = RedlockSpace { clients: (2, 3), length_ms: (1500, 2500), ..RedlockSpace::search() };
        search_space(&REDLOCK, CLIENT_SIDE, workload)
    },
}];
