//! What the property search must find in the election family (the
//! election without an epoch) and what it must not (one leader per epoch),
//! with the spaces searched.

use super::invariants::ELECTION;
use super::scenarios::{ELECTION as CORRECT, ELECTION_NO_EPOCH};
use super::{ElectionSpace, ElectionVariant};
use crate::fault_space::{FaultSpace, CLIENT_SIDE};
use crate::scenario::Scenario;
use crate::space::Space;
use crate::target::{PropertySpec, SearchTarget, TargetKind};

/// `row`'s plans over `workload` ([`ElectionSpace::search`]: 1–4 nodes,
/// lease 200–800 ms, 1.5–3.5 s, an optional leader stall and `stop()`), up
/// to 2 client-side faults.
pub(crate) fn search_space(row: &Scenario, workload: ElectionSpace) -> Space {
    let faults = FaultSpace { duration_ms: (50, 800), ..FaultSpace::new(CLIENT_SIDE, 2) };
    Space::of::<ElectionVariant>(row, faults, &workload)
}

/// What the search must find.
pub(crate) const TARGETS: &[SearchTarget] = &[SearchTarget {
    name: "election-no-epoch",
    kind: TargetKind::BrokenVariant,
    invariant: &ELECTION,
    what: "no epoch, unfenced writes: a paused leader's write lands after its successor's",
    space: || search_space(&ELECTION_NO_EPOCH, ElectionSpace::search()),
    case_bound: 60,
    size_bound: 4,
}];

/// What the search must not find.
pub(crate) const PROPERTIES: &[PropertySpec] = &[PropertySpec {
    name: "one-leader-per-epoch",
    invariant: &ELECTION,
    space: || {
        search_space(&CORRECT, ElectionSpace { nodes: (2, 3), length_ms: (1500, 2500), ..ElectionSpace::search() })
    },
}];
