//! What the property search must find in the rate-limiter family (its
//! three broken limiters) and what it must not (the sliding log's limit,
//! the sliding counter's bound), with the spaces searched.

use super::invariants::RATE_LIMIT;
use super::scenarios::{
    RATE_LIMIT as LOG, RATE_LIMIT_CLIENT_SIDE, RATE_LIMIT_COUNTER, RATE_LIMIT_FIXED_WINDOW, RATE_LIMIT_WATCH_MULTI,
};
use super::{RateLimitSpace, RateLimitVariant};
use crate::fault_space::FaultSpace;
use crate::nemesis::FaultClass;
use crate::scenario::Scenario;
use crate::space::Space;
use crate::target::{PropertySpec, SearchTarget, TargetKind};

/// `row`'s plans over `workload` ([`RateLimitSpace::search`]: 1–4
/// clients, limit 2–8 per 1000/500/250 ms, 1–8 bursts of 1–10 requests in
/// 3 s), up to 2 faults of 50–600 ms.
pub(crate) fn search_space(row: &Scenario, workload: RateLimitSpace) -> Space {
    let classes = [
        FaultClass::ClientPause,
        FaultClass::Partition,
        FaultClass::Hold,
        FaultClass::Latency,
        FaultClass::ServerPause,
    ];
    let faults = FaultSpace { duration_ms: (50, 600), latency_ms: (5, 100), ..FaultSpace::new(&classes, 2) };
    Space::of::<RateLimitVariant>(row, faults, &workload)
}

/// Two to four contending clients.
fn contended(row: &Scenario) -> Space {
    search_space(row, RateLimitSpace { clients: (2, 4), ..RateLimitSpace::search() })
}

/// What the search must find.
pub(crate) const TARGETS: &[SearchTarget] = &[
    SearchTarget {
        name: "rate-limit-fixed-window",
        kind: TargetKind::BrokenVariant,
        invariant: &RATE_LIMIT,
        what: "INCR + EXPIRE fixed window: bursts either side of a boundary",
        space: || search_space(&RATE_LIMIT_FIXED_WINDOW, RateLimitSpace::search()),
        case_bound: 20,
        size_bound: 2,
    },
    SearchTarget {
        name: "rate-limit-client-side",
        kind: TargetKind::BrokenVariant,
        invariant: &RATE_LIMIT,
        what: "count then add in separate round trips: concurrent callers all pass",
        space: || search_space(&RATE_LIMIT_CLIENT_SIDE, RateLimitSpace::search()),
        case_bound: 20,
        size_bound: 2,
    },
    SearchTarget {
        name: "rate-limit-watch-multi",
        kind: TargetKind::BrokenVariant,
        invariant: &RATE_LIMIT,
        what: "WATCH/MULTI on a shared connection: EXEC clears every caller's watch",
        space: || search_space(&RATE_LIMIT_WATCH_MULTI, RateLimitSpace::search()),
        case_bound: 20,
        size_bound: 2,
    },
];

/// What the search must not find.
pub(crate) const PROPERTIES: &[PropertySpec] = &[
    PropertySpec { name: "sliding-log-limit", invariant: &RATE_LIMIT, space: || contended(&LOG) },
    PropertySpec { name: "sliding-counter-bound", invariant: &RATE_LIMIT, space: || contended(&RATE_LIMIT_COUNTER) },
];
