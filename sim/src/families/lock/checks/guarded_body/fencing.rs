//! The `self-fencing` rules about when the guard drops the body: at the
//! instant it reports, in time once its key is taken away, not before the
//! deadline it trusts and not after one nothing could have moved.

use super::views::{Guarded, Views};
use super::TAKEN_AWAY_SLACK_MS;
use crate::checker::{Violation, SELF_FENCING};
use crate::families::lock::op::GuardedResult;
use crate::history::{Millis, Op};

/// `Cancelled { at }` is the instant the body's drop guard fired (within a
/// millisecond); `Completed` means the drop guard never fired.
pub(super) fn dropped_when_reported(g: &Guarded<'_, '_>, out: &mut Vec<Violation>) {
    let (token, done) = (g.token, g.done);
    match (g.outcome, g.dropped) {
        (Some(GuardedResult::Cancelled { at, .. }), Some(t)) if at.abs_diff(t) > 1 => {
            out.push(Violation::new(
                SELF_FENCING,
                Some(done.time),
                format!(
                    "{} (token {token}): the guarded call reported its body cancelled at {at}ms, but the body was dropped at {t}ms (`Cancelled::at` is the drop's instant)",
                    g.process
                ),
            ));
        }
        (Some(GuardedResult::Completed), Some(t)) => out.push(Violation::new(
            SELF_FENCING,
            Some(done.time),
            format!(
                "{} (token {token}): the guarded call reported Completed, but its body was dropped unfinished at {t}ms",
                g.process
            ),
        )),
        _ => {}
    }
}

/// (`with_lock_guarded` only: a `keep_alive` caller races its own body.) A
/// body that ended past the deadline its acquire reported, with no request
/// on the lease's key run at the server in between: no extension moved
/// that deadline, so the guard dropped the body there (the keep-alive is
/// polled first); `Completed` is wrong even when a freeze made both ready
/// at once.
pub(super) fn completed_past_unmoved_deadline(v: &Views<'_>, g: &Guarded<'_, '_>, out: &mut Vec<Violation>) {
    let (token, done) = (g.token, g.done);
    let (Some(GuardedResult::Completed), Some(end), Some(d), Some(_)) = (g.outcome, g.body_end, v.deadline(g), g.every)
    else {
        return;
    };
    let key = crate::checker::lock_key(g.name);
    let acquired = v.acquired(g);
    let extended = |from: Millis| {
        v.executions.iter().any(|x| {
            *x.client == *g.process && x.key.as_deref() == Some(key.as_str()) && x.sim_ms > from && x.sim_ms <= end
        })
    };
    if let Some(from) = acquired.filter(|&from| end > d + 1 && !extended(from)) {
        out.push(Violation::new(
            SELF_FENCING,
            Some(done.time),
            format!(
                "{} (token {token}): the guarded call reported Completed, but its body ended at {end}ms, past the lease's deadline of {d}ms, and no request on {key} ran at the server after the acquire ({from}ms): nothing moved the deadline, so the body must have been dropped at it",
                g.process
            ),
        ));
    }
}

/// Taken away: once the key is overwritten with another owner at T, the
/// body must be dropped (or have ended) by T + `every_ms` + one round trip,
/// unless something disturbed the caller in that span.
pub(super) fn dropped_once_taken_away(v: &Views<'_>, g: &Guarded<'_, '_>, out: &mut Vec<Violation>) {
    let (token, done) = (g.token, g.done);
    let (Some(t), Some(every)) = (g.taken, g.every) else { return };
    let bound = t + every + TAKEN_AWAY_SLACK_MS;
    let ended = match g.outcome {
        Some(GuardedResult::Cancelled { at, .. }) => *at,
        _ => done.time,
    };
    if ended > bound && v.undisturbed(g.process, t, bound) {
        out.push(Violation::new(
            SELF_FENCING,
            Some(ended),
            format!(
                "{} (token {token}): its lease's key was overwritten with another owner at {t}ms, but the guarded call ran its body until {ended}ms; the next extension (due within {every}ms) is refused, so the body must be dropped by {bound}ms",
                g.process
            ),
        ));
    }
}

/// A cancellation for the deadline comes no earlier than the deadline the
/// acquire reported (extensions only move it later).
pub(super) fn not_before_the_deadline(v: &Views<'_>, g: &Guarded<'_, '_>, out: &mut Vec<Violation>) {
    let token = g.token;
    if let (Some(GuardedResult::Cancelled { at, deadline_reached: true }), Some(d)) = (g.outcome, v.deadline(g)) {
        if *at < d {
            out.push(Violation::new(
                SELF_FENCING,
                Some(*at),
                format!(
                    "{} (token {token}): the guard dropped its body at {at}ms for reaching the local deadline, but the lease was trusted until at least {d}ms",
                    g.process
                ),
            ));
        }
    }
}

/// A request naming the lease key held at the server from inside the
/// call (`Op::Delayed` with `mentioning`) is the first one the guard
/// sends after the acquire: the keep-alive's first extend, or the
/// release of a body done before it. Its reply cannot arrive before
/// it ran (the bridge's execution log says when), and the keep-alive
/// sends no second extend before the first is answered. When it ran
/// after the deadline the acquire reported, nothing can have moved
/// that deadline: the guard must drop the body there. Returns
/// `(deadline, ran)`.
pub(super) fn held_past_deadline(v: &Views<'_>, g: &Guarded<'_, '_>) -> Option<(Millis, Millis)> {
    let (call, done) = (g.call, g.done);
    v.deadline(g).and_then(|d| {
        let (set, ms) = v
            .events
            .iter()
            .filter(|e| e.process == g.process && e.time >= call.invoked && e.time <= done.time)
            .find_map(|e| match &e.op {
                Op::Delayed { ms, mentioning: Some(_), .. } => Some((e.time, *ms)),
                _ => None,
            })?;
        let ran = v
            .executions
            .iter()
            .filter(|x| &*x.client == g.process && x.held_ms == ms && x.sim_ms >= set + ms)
            .map(|x| x.sim_ms)
            .min()?;
        (ran > d).then_some((d, ran))
    })
}

/// The same hold also fixes when the guard must give up: at the
/// deadline, not when the held extend is answered (the body's own
/// requests may be queued behind it on the connection, so a step
/// after the deadline is not the only trace of a late guard). A
/// frozen caller gives up when it thaws.
pub(super) fn gave_up_at_the_deadline(
    v: &Views<'_>,
    g: &Guarded<'_, '_>,
    held: Option<(Millis, Millis)>,
    out: &mut Vec<Violation>,
) {
    let token = g.token;
    if let (Some((d, ran)), Some(GuardedResult::Cancelled { at, .. })) = (held, g.outcome) {
        let overlaps = |s: Millis, e: Millis| s <= *at && e >= d;
        let frozen = v.frozen_by(g.process).iter().any(|&(s, e)| overlaps(s, e))
            || crate::checker::paused(v.events, g.process, overlaps);
        if *at > d + 1 && !frozen {
            out.push(Violation::new(
                SELF_FENCING,
                Some(*at),
                format!(
                    "{} (token {token}): the guard dropped its body at {at}ms, {}ms after the lease's local deadline of {d}ms; its first request after the acquire (the first extend) was held at the server and ran at {ran}ms, so nothing could have moved the deadline: the guard must give up at it, not wait for the answer",
                    g.process,
                    at - d
                ),
            )
            .missed_by_ms(at - d - 1));
        }
    }
}
