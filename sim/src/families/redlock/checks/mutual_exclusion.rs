//! `redlock-mutual-exclusion`: two clients never both hold a Redlock inside
//! its validity interval.
//!
//! A Redlock acquire that completes `Ok` with validity V, invoked at t0, is
//! trusted over `[done, t0 + V)`: the algorithm subtracts the elapsed time
//! and a drift allowance from the TTL precisely so that this interval lies
//! inside every majority master's expiry. A `RedlockRelease` invoke by the
//! holder ends it early. Two such intervals of different clients overlapping
//! is what Redlock promises cannot happen — unless a master's clock jumps
//! (`redlock-clock-jump`, a documented non-guarantee), or the client skips
//! the validity gate (`redlock-no-validity`, where V is the full TTL).

use std::collections::BTreeMap;

use super::super::op::RedlockOp;
use crate::checker::{completed, Violation};
use crate::families::redlock::invariants::REDLOCK_MUTUAL_EXCLUSION;
use crate::history::{Event, EventKind, Millis};

struct Grant<'a> {
    name: &'a str,
    process: &'a str,
    /// The acquire that granted the lease (an extension keeps its id).
    lease: u64,
    from: Millis,
    to: Millis,
}

/// Checks every Redlock name in `events`.
///
/// A lease is trusted over `[reply, valid_until)` of its acquire, and again
/// over `[reply, valid_until)` of every confirmed `extend`; a refused extend
/// ends it at the extend's invoke (the library stops trusting it at that
/// round's T1), a release at the release's invoke.
pub(crate) fn check(events: &[Event]) -> Vec<Violation> {
    let mut grants: Vec<Grant<'_>> = Vec::new();
    let mut open: BTreeMap<(&str, &str), u64> = BTreeMap::new();
    let cap = |grants: &mut Vec<Grant<'_>>, lease: u64, at: Millis| {
        for g in grants.iter_mut().filter(|g| g.lease == lease) {
            g.to = g.to.min(at).max(g.from);
        }
    };
    for c in completed(events) {
        let lease = c.done.op_id.0;
        match (c.done.op.family(), c.done.kind) {
            (Some(RedlockOp::RedlockAcquire { name, validity_ms, round, .. }), EventKind::Ok) => {
                let to = match (round.as_ref().and_then(|r| r.valid_until), validity_ms) {
                    (Some(until), _) => until,
                    (None, Some(v)) => c.invoke_time + v,
                    (None, None) => continue,
                };
                open.insert((name.as_str(), c.done.process.as_str()), lease);
                if to > c.done.time {
                    grants.push(Grant { name, process: &c.done.process, lease, from: c.done.time, to });
                }
            }
            (Some(RedlockOp::RedlockExtend { name, lease, round }), EventKind::Ok) => {
                if let Some(to) = round.as_ref().and_then(|r| r.valid_until) {
                    if to > c.done.time {
                        grants.push(Grant { name, process: &c.done.process, lease: *lease, from: c.done.time, to });
                    }
                }
            }
            (Some(RedlockOp::RedlockExtend { lease, .. }), EventKind::Fail) => cap(&mut grants, *lease, c.invoke_time),
            (Some(RedlockOp::RedlockRelease { name, lease, .. }), _) => {
                // Ends at the release's invoke.
                let opened = open.remove(&(name.as_str(), c.done.process.as_str()));
                if let Some(l) = lease.or(opened) {
                    cap(&mut grants, l, c.invoke_time);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    for (i, a) in grants.iter().enumerate() {
        for b in &grants[i + 1..] {
            if a.name != b.name || a.process == b.process {
                continue;
            }
            let from = a.from.max(b.from);
            let to = a.to.min(b.to);
            if to > from && out.len() < 5 {
                out.push(Violation::new(
                    REDLOCK_MUTUAL_EXCLUSION,
                    Some(from),
                    format!(
                        "redlock {}: {} (valid until {}ms) and {} (valid until {}ms) both held it for {}ms from {}ms",
                        a.name,
                        a.process,
                        a.to,
                        b.process,
                        b.to,
                        to - from,
                        from
                    ),
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::History;

    fn acquire(h: &History, p: &str, t0: u64, t1: u64, validity: u64) {
        let op = |votes, validity_ms| RedlockOp::RedlockAcquire {
            name: "r".into(),
            masters: 5,
            quorum: 3,
            votes,
            validity_ms,
            round: None,
        };
        let id = h.invoke_at(t0, p, op(None, None));
        h.complete_at(t1, id, p, EventKind::Ok, op(Some(3), Some(validity)));
    }

    fn release(h: &History, p: &str, t: u64) {
        let op = || RedlockOp::RedlockRelease { name: "r".into(), lease: None, round: None };
        let id = h.invoke_at(t, p, op());
        h.ok(id, p, op());
    }

    #[test]
    fn sequential_holders_pass() {
        let h = History::new();
        acquire(&h, "a", 0, 10, 90);
        release(&h, "a", 50);
        acquire(&h, "b", 60, 70, 90);
        acquire(&h, "c", 200, 210, 90);
        assert_eq!(check(&h.events()), vec![]);
    }

    #[test]
    fn overlapping_validity_fails() {
        let h = History::new();
        acquire(&h, "a", 0, 10, 90);
        acquire(&h, "b", 40, 50, 90);
        let v = check(&h.events());
        assert_eq!(v.len(), 1, "{v:?}");
        // a trusts [10, 90), b [50, 130).
        assert!(v[0].detail.contains("both held it for 40ms from 50ms"), "{v:?}");
    }

    #[test]
    fn an_extension_that_overlaps_another_holder_fails_and_a_refused_one_ends_the_hold() {
        use crate::families::redlock::checks::calls::build::{granted, refused, B};
        // a holds [10, 90), extends at 80 to [85, 170); b is granted [100, 180).
        let mut h = B::default();
        let a = h.grant("a", 0, 10, "yyyyy", 90);
        h.extend("a", a, 80, 85, EventKind::Ok, granted("yyyyy", 80, 85, 170));
        h.grant("b", 95, 100, "yyyyy", 180);
        let v = check(&h.events);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].detail.contains("both held it for 70ms from 100ms"), "{v:?}");
        // The same extension refused at 80: a's hold ends at 80, no overlap.
        let mut h = B::default();
        let a = h.grant("a", 0, 10, "yyyyy", 90);
        h.extend("a", a, 80, 85, EventKind::Fail, refused("yynnn", "no-majority", 5));
        h.grant("b", 95, 100, "yyyyy", 180);
        assert_eq!(check(&h.events), vec![]);
    }
}
