//! Rule 7: a definite answer comes from the server. Judged on the lock
//! server's execution log rather than on the history, so it stands apart
//! from the rules that weigh one reply against the others.

use super::{report, Reply};
use crate::bridge::Execution;
use crate::checker::Violation;
use crate::families::lock::op::LockOp;
use crate::history::{EventKind, Operation};

/// Whether a `Lock` call's definite answer must have come from the server
/// (rule 7): every operation that asks Redis, none that only observes.
fn asks_the_server(op: &LockOp) -> bool {
    matches!(
        op,
        LockOp::Acquire { .. }
            | LockOp::Extend { .. }
            | LockOp::Release { .. }
            | LockOp::RemainingTtl { .. }
            | LockOp::CurrentToken { .. }
    )
}

/// A definite answer with no request of the caller run at the lock's
/// server between its invoke and its answer (a failure reported as a
/// refusal, a cached answer).
pub(super) fn came_from_redis(r: &Reply<'_, '_>, executions: &[Execution], out: &mut Vec<Violation>) {
    let (c, kind, done) = (r.call, r.kind, r.done);
    // Observations (invoked and answered at once, no request) are not
    // calls.
    let observation = c.invoked == done && std::ptr::eq(c.op, r.result);
    if matches!(kind, EventKind::Ok | EventKind::Fail) && asks_the_server(c.op) && !observation {
        let ran = executions.iter().any(|x| *x.client == *c.process && x.sim_ms >= c.invoked && x.sim_ms <= done);
        if !ran {
            report(out, done, format!(
                "{}: {} answered {} at {done}ms (invoked {}ms), but no request of {} ran at the lock's server in between: the answer did not come from Redis",
                c.process,
                c.op.verb(),
                if kind == EventKind::Ok { "yes" } else { "no" },
                c.invoked,
                c.process
            ));
        }
    }
}
