//! The `liveness` rules of a guarded call (but the keep-alive's schedule,
//! in `schedule`): it returns soon after its body, keeps a lease nothing
//! disturbed, and hands back the lease of a cancelled body.

use super::views::{held_spans, lease_ttl, named, Guarded, Views};
use super::TAKEN_AWAY_SLACK_MS;
use crate::checker::{Violation, LIVENESS};
use crate::families::lock::op::{GuardedResult, LockOp};
use crate::history::{EventKind, Millis};

/// `with_lock_guarded` returns at most one keep-alive interval after its
/// body stopped, on either path: after a `Completed` body's end (the final
/// release's invoke) and after a `Cancelled` body's drop (`at`). Both wait
/// for the release the same way, so a cancelled call is held to the same
/// bound. Only a freeze of the caller itself (its client pause, its
/// stall) after the body's stop and before the return explains a late
/// return; a slow, held or partitioned release does not (the guard gives
/// up on it), nor does a freeze that ended as the body stopped (the drop
/// of a body whose lease lapsed in a stall comes at the thaw).
pub(super) fn returned_after_the_body(v: &Views<'_>, g: &Guarded<'_, '_>, out: &mut Vec<Violation>) {
    let (token, done) = (g.token, g.done);
    let Some(every) = g.every else { return };
    let (stopped, how) = match g.outcome {
        Some(GuardedResult::Completed) => (g.body_end, "its body ended"),
        Some(GuardedResult::Cancelled { at, .. }) => (Some(*at), "its body was dropped"),
        _ => return,
    };
    let calm = |end: Millis| {
        let overlaps = |s: Millis, e: Millis| s <= done.time && e > end;
        !v.paused_spans(g.process).into_iter().any(|(s, e)| overlaps(s, e))
            && !crate::checker::paused(v.events, g.process, overlaps)
    };
    if let Some(end) = stopped.filter(|&end| done.time > end + every && calm(end)) {
        out.push(Violation::new(
            LIVENESS,
            Some(done.time),
            format!(
                "{} (token {token}): with_lock_guarded returned at {}ms, {}ms after {how} at {end}ms, longer than its keep-alive interval of {every}ms (the final release must not wait longer)",
                g.process,
                done.time,
                done.time - end
            ),
        )
        .missed_by_ms(done.time - end - every));
    }
}

/// A keep-alive that nothing disturbed keeps its lease. A disturbance
/// explains the loss only if it began by then and ended at most one lease
/// (and a round trip) before it: once it is over, the keep-alive's next
/// extension sets a fresh TTL, and only a new disturbance can lose that
/// one. A held request counts over the span it was really held (the
/// execution log), not from when the hold was armed.
pub(super) fn kept_its_lease(v: &Views<'_>, g: &Guarded<'_, '_>, out: &mut Vec<Violation>) {
    let (call, token) = (g.call, g.token);
    let Some(GuardedResult::Cancelled { at, .. }) = g.outcome.filter(|_| g.taken.is_none()) else { return };
    let lease_ms = lease_ttl(&v.calls, call, token).map_or(Millis::MAX, |t| t + TAKEN_AWAY_SLACK_MS);
    let explains = |s: Millis, e: Millis| s <= *at && e >= call.invoked && e.saturating_add(lease_ms) >= *at;
    let disturbed = v.reaches(g.process).iter().any(|&(s, e)| explains(s, e))
        || held_spans(v.events, v.executions, g.process).into_iter().any(|(s, e)| explains(s, e));
    if !disturbed {
        out.push(Violation::new(
            LIVENESS,
            Some(*at),
            format!(
                "{} (token {token}): its keep-alive lost the lease at {at}ms, and nothing disturbed it since {}ms: no fault reached it, it did not pause and no request of its own was held (the call began at {}ms; a disturbance over by a TTL and a round trip before the loss is outlived by the extensions after it)",
                g.process,
                at.saturating_sub(lease_ms).max(call.invoked),
                call.invoked
            ),
        ));
    }
}

/// The hand-back rule (see the module docs) for a call cancelled with its
/// key not taken away.
pub(super) fn handed_back(v: &Views<'_>, g: &Guarded<'_, '_>, out: &mut Vec<Violation>) {
    if let (Some(GuardedResult::Cancelled { at, .. }), None) = (g.outcome, g.taken) {
        if let Some(violation) = kept_after_cancel(v, g, *at) {
            out.push(violation);
        }
    }
}

/// The hand-back rule for call `g`, cancelled at `at`: the caller's next
/// call on the name, a `remaining_ttl`, reads `None` unless someone else
/// acted on the name or something disturbed the caller.
fn kept_after_cancel(v: &Views<'_>, g: &Guarded<'_, '_>, at: Millis) -> Option<Violation> {
    let (call, name) = (g.call, g.name);
    let returned = call.done?.time;
    // Calls are in invoke order: the first of the caller's on the name
    // after the guarded call returned.
    let next = v.calls.iter().find(|c| {
        c.process == g.process && c.invoked >= returned && !std::ptr::eq(*c, call) && named(c.op) == Some(name)
    })?;
    let read = next.done.filter(|d| d.kind == EventKind::Ok)?;
    let Some(LockOp::RemainingTtl { ms: Some(left), .. }) = LockOp::of(&read.op) else { return None };
    let others = v
        .events
        .iter()
        .any(|e| e.process != g.process && e.time >= call.invoked && e.time <= read.time && named(&e.op) == Some(name));
    (!others && v.undisturbed(g.process, at, read.time)).then(|| {
        Violation::new(
            LIVENESS,
            Some(read.time),
            format!(
                "{}: its guarded call on {name} was cancelled at {at}ms and returned at {returned}ms, but remaining_ttl read right after ({}ms-{}ms) says the name is still held for {left}ms: the guard did not hand the lease back, and nobody else touched the name",
                g.process, next.invoked, read.time
            ),
        )
    })
}
