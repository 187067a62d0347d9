//! The spaces the search draws from: each family's search space (its
//! widest ranges, every workload fault optional so that it shrinks away)
//! with a nemesis fault space, built through the one generator
//! ([`crate::Space`]) that seeds draw from too.

use crate::fault_space::{FaultSpace, CLIENT_SIDE};
use crate::space::Space;

use crate::families::election::{self, ElectionSpace};
use crate::families::lock::{self, LockSpace};
use crate::families::rate_limit::{self, RateLimitSpace};
use crate::families::redlock::{self, RedlockSpace};
use crate::nemesis::FaultClass;

/// A lock-family scenario: [`LockSpace::search`] (1–4 clients, TTL
/// 150–600 ms, holds up to 100–700 ms, 1–3 s of attempts, an optional
/// stall), up to 3 faults of `classes`.
pub fn lock(scenario: &'static str, classes: &[FaultClass]) -> Space {
    lock_with(scenario, classes, LockSpace::search())
}

/// A lock-family scenario over `workload`, up to 3 faults of `classes`.
pub fn lock_with(scenario: &'static str, classes: &[FaultClass], workload: LockSpace) -> Space {
    Space::of::<lock::LockVariant>(scenario, FaultSpace::new(classes, 3), &workload)
}

/// A rate-limit scenario over `workload` ([`RateLimitSpace::search`]: 1–4
/// clients, limit 2–8 per 1000/500/250 ms, 1–8 bursts of 1–10 requests in
/// 3 s), up to 2 faults of 50–600 ms.
pub fn rate_limit(scenario: &'static str, workload: RateLimitSpace) -> Space {
    let classes = [
        FaultClass::ClientPause,
        FaultClass::Partition,
        FaultClass::Hold,
        FaultClass::Latency,
        FaultClass::ServerPause,
    ];
    let faults = FaultSpace { duration_ms: (50, 600), latency_ms: (5, 100), ..FaultSpace::new(&classes, 2) };
    Space::of::<rate_limit::RateLimitVariant>(scenario, faults, &workload)
}

/// An election scenario over `workload` ([`ElectionSpace::search`]: 1–4
/// nodes, lease 200–800 ms, 1.5–3.5 s, an optional leader stall and
/// `stop()`), up to 2 client-side faults.
pub fn election(scenario: &'static str, workload: ElectionSpace) -> Space {
    let faults = FaultSpace { duration_ms: (50, 800), ..FaultSpace::new(CLIENT_SIDE, 2) };
    Space::of::<election::ElectionVariant>(scenario, faults, &workload)
}

/// A Redlock scenario over 5 masters and `workload`
/// ([`RedlockSpace::search`]: 1–3 clients starting in the first 1.2 s,
/// TTL 250–600 ms, master timeout 50–250 ms), up to 4 faults of `classes`
/// (single links allowed).
pub fn redlock(scenario: &'static str, classes: &[FaultClass], workload: RedlockSpace) -> Space {
    let faults = FaultSpace {
        start_ms: (0, 2000),
        duration_ms: (50, 1000),
        latency_ms: (30, 200),
        links: true,
        ..FaultSpace::new(classes, 4)
    };
    Space::of::<redlock::RedlockVariant>(scenario, faults, &workload)
}
