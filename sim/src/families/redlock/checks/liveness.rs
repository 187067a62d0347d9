//! `liveness` for Redlock: once the last fault has healed, some client is
//! granted the lock (or confirms an extension of it) within a stated bound.
//!
//! The bound (computed by the scenario from its configuration) covers a
//! TTL for keys left behind by a lost holder to expire, a round that was
//! already under way, the workload's pause between attempts and the retry
//! policy's delay, plus a few round trips. Safety is judged during the
//! faults; this judges progress after them.

use super::calls::{calls, CallKind, RedlockSetup};
use crate::checker::{Violation, LIVENESS};
use crate::history::{Event, EventKind};

/// Checks the liveness promise of `setup` (nothing when it has none).
pub(crate) fn check(events: &[Event], setup: &RedlockSetup) -> Vec<Violation> {
    let Some(l) = setup.liveness else { return Vec::new() };
    let deadline = l.heal_at + l.bound;
    let progress = calls(events).into_iter().any(|c| {
        c.outcome == EventKind::Ok
            && matches!(c.kind, CallKind::Acquire { .. } | CallKind::Extend { .. })
            && c.done > l.heal_at
            && c.done <= deadline
    });
    if progress {
        return Vec::new();
    }
    vec![Violation::new(
        LIVENESS,
        Some(deadline),
        format!(
            "redlock: the faults healed at {}ms but no client was granted the lock or extended it by {deadline}ms (bound {}ms)",
            l.heal_at, l.bound
        ),
    )]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::redlock::checks::calls::build::{refused, B};
    use crate::families::redlock::checks::calls::Liveness;

    fn setup() -> RedlockSetup {
        let mut s = RedlockSetup::new(5, 300, 5);
        s.liveness = Some(Liveness { heal_at: 1000, bound: 800 });
        s
    }

    #[test]
    fn a_grant_within_the_bound_passes_and_none_fails() {
        let mut h = B::default();
        h.grant("a", 900, 950, "yyyyy", 1195);
        h.acquire("b", 1000, 1020, EventKind::Fail, refused("nnnnn", "no-majority", 20), false);
        let v = check(&h.events, &setup());
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].detail.contains("healed at 1000ms"), "{v:?}");
        h.grant("b", 1700, 1790, "yyyyy", 1995);
        assert_eq!(check(&h.events, &setup()), vec![]);
    }
}
