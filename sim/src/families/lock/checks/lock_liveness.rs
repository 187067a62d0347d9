//! `liveness` for the lock: once every fault has healed, a free lock is
//! granted promptly.
//!
//! The lock scenarios end with a *probe*: after every client has stopped
//! and the last fault (nemesis or workload stall) has healed plus a settle
//! margin, one process calls `Retry::run` around `Lock::acquire` (recorded
//! as [`LockOp::Retry`]). By then no client acts on the lock, so the only thing
//! that can still hold it is a lease left behind (a release that timed
//! out, a holder that gave up): it expires within one TTL. The bound is
//! therefore **TTL + 150 ms** (a few round trips and retry delays) from the
//! probe's invoke; the probe must be granted within it. A refused, failed
//! or late probe is a `liveness` violation (it catches a lock that keeps
//! keys past their TTL or never grants again).

use crate::checker::{completed, Violation, LIVENESS};
use crate::families::lock::op::LockOp;
use crate::history::{Event, EventKind, Millis};

/// Slack on top of the TTL: round trips and retry delays.
pub(crate) const SLACK_MS: Millis = 150;

/// Checks the probe of `probe_process`, whose lease TTL is `ttl_ms`.
pub(crate) fn check(events: &[Event], probe_process: &str, ttl_ms: Millis) -> Vec<Violation> {
    let bound = ttl_ms + SLACK_MS;
    let mut out = Vec::new();
    for c in completed(events) {
        if c.done.process != probe_process {
            continue;
        }
        let Some(LockOp::Retry { name, token, .. }) = LockOp::of(&c.done.op) else { continue };
        let took = c.done.time.saturating_sub(c.invoke_time);
        match (c.done.kind, token) {
            (EventKind::Ok, Some(_)) if took <= bound => {}
            (EventKind::Ok, Some(t)) => out.push(Violation::new(
                LIVENESS,
                Some(c.done.time),
                format!("after healing, {name} was granted (token {t}) only after {took}ms, bound {bound}ms (TTL {ttl_ms} + {SLACK_MS})"),
            )),
            _ => out.push(Violation::new(
                LIVENESS,
                Some(c.done.time),
                format!(
                    "after healing, {probe_process} could not acquire {name} within {took}ms from {}ms (bound {bound}ms): the lock stayed unavailable",
                    c.invoke_time
                ),
            )),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::History;

    fn probe(h: &History, t0: u64, t1: u64, kind: EventKind, token: Option<u64>) {
        let op =
            |token| LockOp::Retry { name: "l".into(), attempts: 40, deadline_ms: Some(450), token, backoff_ms: None };
        let id = h.invoke_at(t0, "reader", op(None));
        h.complete_at(t1, id, "reader", kind, op(token));
    }

    #[test]
    fn a_prompt_grant_passes_and_a_refusal_or_late_grant_fails() {
        let h = History::new();
        probe(&h, 1000, 1290, EventKind::Ok, Some(7));
        assert_eq!(check(&h.events(), "reader", 300), vec![]);
        let h = History::new();
        probe(&h, 1000, 1450, EventKind::Fail, None);
        assert_eq!(check(&h.events(), "reader", 300).len(), 1);
        let h = History::new();
        probe(&h, 1000, 1500, EventKind::Ok, Some(7));
        assert_eq!(check(&h.events(), "reader", 300).len(), 1);
    }
}
