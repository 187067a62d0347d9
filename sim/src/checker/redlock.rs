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

use super::{completed, Violation, REDLOCK_MUTUAL_EXCLUSION};
use crate::history::{Event, EventKind, Millis, Op};

struct Grant<'a> {
    name: &'a str,
    process: &'a str,
    from: Millis,
    to: Millis,
}

/// Checks every Redlock name in `events`.
pub fn check(events: &[Event]) -> Vec<Violation> {
    let mut grants: Vec<Grant<'_>> = Vec::new();
    let mut open: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for c in completed(events) {
        match (&c.done.op, c.done.kind) {
            (Op::RedlockAcquire { name, validity_ms: Some(v), .. }, EventKind::Ok) => {
                let to = c.invoke_time + v;
                if to > c.done.time {
                    open.insert((name.as_str(), c.done.process.as_str()), grants.len());
                    grants.push(Grant { name, process: &c.done.process, from: c.done.time, to });
                }
            }
            (Op::RedlockRelease { name }, _) => {
                // Ends at the release's invoke.
                if let Some(i) = open.remove(&(name.as_str(), c.done.process.as_str())) {
                    grants[i].to = grants[i].to.min(c.invoke_time).max(grants[i].from);
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
        let op = |votes, validity_ms| Op::RedlockAcquire { name: "r".into(), masters: 5, quorum: 3, votes, validity_ms };
        let id = h.invoke_at(t0, p, op(None, None));
        h.complete_at(t1, id, p, EventKind::Ok, op(Some(3), Some(validity)));
    }

    fn release(h: &History, p: &str, t: u64) {
        let id = h.invoke_at(t, p, Op::RedlockRelease { name: "r".into() });
        h.ok(id, p, Op::RedlockRelease { name: "r".into() });
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
}
