//! `fencing-tokens-increase`: every grant of a lock name carries a fresh,
//! larger token.
//!
//! Tokens come from `INCR` on a counter that must never be lost. Two facts
//! are checked per name, over `Acquire` operations that completed `Ok` with a
//! token:
//!
//! - no token is granted twice;
//! - real-time order: if acquire A completed before acquire B was invoked,
//!   then token(A) < token(B).
//!
//! Concurrent acquires may complete in either order (replies travel at
//! different speeds), so the check does not compare completion order alone.
//! Losing the counter (a restart without persistence, `counter-loss`) breaks
//! both rules, which is exactly what the invariant is there to catch.

use std::collections::BTreeMap;

use crate::checker::{completed, order, Violation};
use crate::families::lock::invariants::FENCING_TOKENS_INCREASE;
use crate::families::lock::op::LockOp;
use crate::history::{Event, EventKind};

/// Most violations reported per run: the first few tell the story.
/// A granted acquire: who got which token, and when.
type Grant<'a> = order::Stamped<'a>;

/// Checks every lock name in `events`.
pub(crate) fn check(events: &[Event]) -> Vec<Violation> {
    let mut by_name: BTreeMap<&str, Vec<Grant<'_>>> = BTreeMap::new();
    for c in completed(events) {
        if c.done.kind != EventKind::Ok {
            continue;
        }
        if let Some(LockOp::Acquire { name, token: Some(token), .. }) = LockOp::of(&c.done.op) {
            by_name.entry(name.as_str()).or_default().push(Grant {
                process: &c.done.process,
                invoked: c.invoke_time,
                done: c.done.time,
                token: *token,
            });
        }
    }
    let mut out = Vec::new();
    for (name, grants) in &by_name {
        let mut seen: BTreeMap<u64, &Grant<'_>> = BTreeMap::new();
        for g in grants {
            if let Some(first) = seen.get(&g.token) {
                out.push(Violation::new(
                    FENCING_TOKENS_INCREASE,
                    Some(g.done),
                    format!(
                        "lock {name}: token {} granted twice ({} at {}ms, {} at {}ms): the fence counter went backwards",
                        g.token, first.process, first.done, g.process, g.done
                    ),
                ));
            } else {
                seen.insert(g.token, g);
            }
        }
        // Real-time order: no grant may carry a smaller token than one
        // completed before it was invoked.
        for (a, b) in order::regressions(grants) {
            out.push(Violation::new(
                FENCING_TOKENS_INCREASE,
                Some(b.done),
                format!(
                    "lock {name}: {} got token {} at {}ms after {} had already been granted {} at {}ms",
                    b.process, b.token, b.done, a.process, a.token, a.done
                ),
            ));
        }
    }
    crate::checker::capped(out, FENCING_TOKENS_INCREASE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{FaultRecord, History};
    use crate::nemesis::FaultKind;

    fn acquire(h: &History, p: &str, t0: u64, t1: u64, token: u64) {
        let op = |token| LockOp::Acquire { name: "l".into(), ttl_ms: 100, token, deadline: None };
        let id = h.invoke_at(t0, p, op(None));
        h.complete_at(t1, id, p, EventKind::Ok, op(Some(token)));
    }

    #[test]
    fn increasing_tokens_pass_even_when_concurrent_replies_cross() {
        let h = History::new();
        acquire(&h, "a", 0, 5, 1);
        // b and c overlap: c's reply (token 2) may arrive after b's (token 3).
        let op = |token| LockOp::Acquire { name: "l".into(), ttl_ms: 100, token, deadline: None };
        let b = h.invoke_at(10, "b", op(None));
        let c = h.invoke_at(10, "c", op(None));
        h.complete_at(12, b, "b", EventKind::Ok, op(Some(3)));
        h.complete_at(14, c, "c", EventKind::Ok, op(Some(2)));
        acquire(&h, "a", 20, 21, 4);
        // A failed or unknown acquire carries no token and is ignored.
        let d = h.invoke_at(30, "d", op(None));
        h.complete_at(40, d, "d", EventKind::Info, op(None));
        assert_eq!(check(&h.events()), vec![]);
    }

    #[test]
    fn a_reissued_token_fails() {
        let h = History::new();
        acquire(&h, "a", 0, 5, 1);
        acquire(&h, "b", 10, 15, 2);
        h.fault_at(20, FaultRecord::on_node(FaultKind::ServerRestart, "redis-0", false, 10));
        acquire(&h, "c", 30, 35, 1);
        let v = check(&h.events());
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(v.iter().all(|v| v.invariant == FENCING_TOKENS_INCREASE));
        assert!(v[0].detail.contains("granted twice"), "{v:?}");
        assert!(v[1].detail.contains("after b had already been granted 2"), "{v:?}");
    }

    #[test]
    fn a_smaller_token_after_completion_fails() {
        let h = History::new();
        acquire(&h, "a", 0, 5, 7);
        acquire(&h, "b", 10, 15, 3);
        let v = check(&h.events());
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].at, Some(15));
    }
}
