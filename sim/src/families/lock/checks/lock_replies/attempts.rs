//! Rule 8: `acquire` is one attempt. `Lock::acquire` runs its script once
//! and answers what that run said; a retry loop hidden inside it (a
//! refusal tried again, a grant fetched twice) changes what a caller's own
//! retry policy means. Judged on the lock server's execution log: the
//! acquire scripts of the caller that ran on the name during the call.

use super::model::Model;
use super::{report, Reply};
use crate::bridge::Execution;
use crate::checker::Violation;
use crate::families::lock::op::LockOp;
use crate::reply::Reply as ServerReply;

/// Whether `x` is a run of an acquire script on `key`: two keys, the lock
/// key and its fence counter (`lock_acquire.lua`, `lock_acquire_floored.lua`;
/// extend and release name one key), answered without an error (a
/// `NOSCRIPT` answer, or a refusal of another kind, ran nothing).
fn acquire_ran(x: &Execution, key: &str) -> bool {
    x.command.starts_with("EVAL")
        && x.key.as_deref() == Some(key)
        && x.args.get(1).is_some_and(|n| n == "2")
        && x.args.get(3).is_some_and(|fence| fence.strip_suffix(":fence") == Some(key))
        && !matches!(x.reply, ServerReply::Error(_))
}

/// Rule 8 for the acquire `r` of `name`: at most one acquire script of its
/// caller reached the server and ran from its invoke to its answer (or to
/// the caller's next acquire of the name, when that began first: a
/// `Retry`'s attempts follow each other within a millisecond). Not judged
/// while an earlier acquire of the caller's, of unknown outcome, may still
/// land.
pub(super) fn one_attempt(
    m: &Model<'_>,
    r: &Reply<'_, '_>,
    name: &str,
    executions: &[Execution],
    out: &mut Vec<Violation>,
) {
    let c = r.call;
    let key = crate::checker::lock_key(name);
    // The caller's other acquires of the name.
    let others = || {
        m.calls.iter().filter(|o| {
            o.process == c.process
                && o.invoked != c.invoked
                && matches!(o.op, LockOp::Acquire { name: n, .. } if n == name)
        })
    };
    let next = others().filter(|o| o.invoked > c.invoked).map(|o| o.invoked).min();
    // An earlier acquire of unknown outcome may still be on its way (held
    // by a partition) until the faults settle: its run is not this call's.
    let earlier_in_flight = c.invoked <= m.settled && others().any(|o| o.invoked < c.invoked && o.unknown());
    if earlier_in_flight {
        return;
    }
    // Sent and run inside the call: `taken_ms` is when the request reached
    // the server, before any hold there.
    let within = |t: u64| t >= c.invoked && next.map_or(t <= r.done, |n| t < n && t <= r.done);
    let runs: Vec<u64> = executions
        .iter()
        .filter(|x| *x.client == *c.process && within(x.taken_ms) && within(x.sim_ms) && acquire_ran(x, &key))
        .map(|x| x.sim_ms)
        .collect();
    if runs.len() > 1 {
        report(
            out,
            r.done,
            format!(
                "{}: one acquire of {name} (invoked {}ms, answered {}ms) ran the acquire script {} times (at {runs:?} ms): Lock::acquire makes exactly one attempt, retrying is the caller's",
                c.process,
                c.invoked,
                r.done,
                runs.len()
            ),
        );
    }
}
