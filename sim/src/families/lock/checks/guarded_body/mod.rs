//! `self-fencing` for guarded bodies: `Lock::with_lock_guarded` (and a
//! body raced against `Lock::keep_alive`) never lets the body act once the
//! lease may be someone else's.
//!
//! The body cannot see the extensions its keep-alive loop makes, so this is
//! judged from the outside, per [`LockOp::Guarded`] call of process P with
//! token t. Its *body steps* are P's writes carrying t invoked inside the
//! call.
//!
//! - A step invoked at T is a violation if another process had been
//!   granted the lock before T by an acquire invoked after P's own acquire
//!   completed: that grant proves P's key was gone (expired or deleted), so
//!   P's local deadline — which is never later than the server's expiry —
//!   had passed, and the guard should have dropped the body.
//! - `Cancelled { at }` ⇒ no step was invoked after `at`; and a
//!   cancellation for the deadline (`LeaseLoss::DeadlineReached`) comes no
//!   earlier than the deadline the acquire reported (extensions only move
//!   it later): a guard that gives up on a lease still trusted is wrong too.
//! - A step invoked after the deadline the acquire reported is a violation
//!   when the call's first extend was held at the server (an
//!   [`Op::Delayed`] naming the key, from inside the call) and ran after
//!   that deadline (the bridge's execution log): no extension can have
//!   been confirmed in time, so nothing moved the deadline, and the guard
//!   must have dropped the body there even if nobody else took the lock;
//!   a cancellation then comes at that deadline (`at` within 1 ms of it),
//!   not when the held extend is answered, unless the caller was frozen
//!   across it.
//! - `Completed` ⇒ the body ended no later than the deadline its acquire
//!   reported (within a millisecond) unless some request on the lease's key
//!   ran at the server between the acquire and the body's end (the
//!   execution log): with no extension run, nothing moved the deadline, and
//!   the keep-alive is polled before the body, so a body that became ready
//!   together with an expired deadline (a frozen caller) is dropped.
//! - `Completed` ⇒ every step completed (the body was not dropped midway),
//!   and the body's drop guard never fired ([`LockOp::BodyDropped`]);
//!   `Cancelled { at }` ⇒ `at` is the instant that guard fired (within a
//!   millisecond), not when the best-effort release after it returned.
//! - `with_lock_guarded` returned at most one keep-alive interval
//!   (`every_ms`) after its body stopped, on both paths: after a
//!   `Completed` body ended (the release's invoke) and after a `Cancelled`
//!   body was dropped (`at`). The release waits that long at most either
//!   way; only a freeze of the caller excuses a later return.
//! - **taken away**: when the lease's key was overwritten with another
//!   owner inside the call ([`LockOp::TakenAway`] at T), the keep-alive's next
//!   extension is refused, and it is sent at most one interval after T: the
//!   body must have been dropped (or have ended) by T + `every_ms` + one
//!   round trip ([`TAKEN_AWAY_SLACK_MS`]), not at the lease's local
//!   deadline, unless a fault, a freeze of the caller or a pause or held
//!   request of its own overlapped that span.
//! - **liveness**: a keep-alive that nothing disturbed keeps its lease: a
//!   guarded call cancelled with no nemesis fault reaching the caller, no
//!   pause of its own ([`Op::Paused`]) and no request of its own held at a
//!   server ([`Op::Delayed`], over the span the execution log says it was
//!   held) between its invoke and the cancellation is a `liveness`
//!   violation (extensions every third of the TTL never let a healthy
//!   lease lapse). A disturbance that ended more than one TTL and a round
//!   trip before the cancellation does not excuse it: the extensions after
//!   it set a fresh TTL. A lease taken away is not a healthy one.
//! - **hand-back** (`liveness`): a cancelled call hands its lease back. The
//!   release goes out after the cancellation, on the connection every
//!   earlier request of the lease went out on, so a `remaining_ttl` of the
//!   name that the caller invokes next (nothing else of its own on the name
//!   in between) runs after it and reads `None` — unless the key was taken
//!   away, another process did anything on the name since the call began,
//!   or a fault, a freeze, or a pause or held request of the caller's own
//!   overlapped the span from the cancellation to the read's answer (a lost
//!   or overtaken release).
//! - **schedule** (`liveness`): the keep-alive sends each extension one
//!   interval after the previous request that set the lease was *sent*
//!   (the acquire, then each extension), or at once when that request's
//!   answer came later; an interval counted from the answer lets every
//!   slow reply push the lease towards its deadline. Judged on the lock
//!   server's execution log, by the requests of the caller naming the lease
//!   key sent before the body ended or was dropped: a request was sent at
//!   `ran − held` and answered at `ran`, both give or take a link's latency
//!   ([`TAKEN_AWAY_SLACK_MS`] in all); a gap past that, or a body still
//!   running past it with no extension sent, is a violation unless a fault
//!   reaching the caller, a freeze or a stall of its own, or a held request
//!   the log does not account for (one the next request may have queued
//!   behind) overlapped it.
//!
//! The files: `views` holds the history as the rules read it; `fencing`
//! the `self-fencing` rules on when the body is dropped, `steps` those on
//! the body's steps; `liveness` the liveness rules, `schedule` the
//! keep-alive's schedule.
//!
//! [`LockOp::Guarded`]: crate::families::lock::LockOp::Guarded
//! [`Op::Delayed`]: crate::history::Op::Delayed
//! [`LockOp::BodyDropped`]: crate::families::lock::LockOp::BodyDropped
//! [`LockOp::TakenAway`]: crate::families::lock::LockOp::TakenAway
//! [`Op::Paused`]: crate::history::Op::Paused

use std::collections::BTreeMap;

use crate::bridge::Execution;
use crate::checker::{Violation, SELF_FENCING};
use crate::history::{Event, Millis};

mod fencing;
mod liveness;
mod schedule;
mod steps;
mod views;

use views::{Guarded, Views};

/// One extension's round trip when nothing is disturbed (links of 1-10 ms
/// each way), plus the millisecond a timer may fire late.
pub(crate) const TAKEN_AWAY_SLACK_MS: Millis = 25;

/// Checks every guarded call in `events`; `executions` are the bridges'
/// execution logs (when a held request ran); `faults` are the nemesis
/// faults' `[start, end]` spans, `freezes` those of the faults that freeze a
/// client (client pauses), for the liveness rules; `reaching` narrows
/// `faults` to those that can reach a process (by name; a process it does
/// not list is reached by every fault), for the taken-away and hand-back
/// rules.
pub(crate) fn check(
    events: &[Event],
    executions: &[Execution],
    faults: &[(Millis, Millis)],
    freezes: &[(Millis, Millis)],
    reaching: &BTreeMap<String, Vec<(Millis, Millis)>>,
) -> Vec<Violation> {
    let v = Views::new(events, executions, faults, freezes, reaching);
    let mut out = Vec::new();
    // The rules run in a fixed order: it is the order of the violations
    // reported (and of the few kept by `capped`).
    for call in &v.calls {
        let Some(g) = Guarded::of(&v, call) else { continue };
        liveness::returned_after_the_body(&v, &g, &mut out);
        fencing::dropped_when_reported(&g, &mut out);
        fencing::completed_past_unmoved_deadline(&v, &g, &mut out);
        fencing::dropped_once_taken_away(&v, &g, &mut out);
        liveness::handed_back(&v, &g, &mut out);
        schedule::sent_on_time(&v, &g, &mut out);
        // The rules below need the call's own grant.
        let Some(acquired) = v.acquired(&g) else { continue };
        fencing::not_before_the_deadline(&v, &g, &mut out);
        liveness::kept_its_lease(&v, &g, &mut out);
        let held = fencing::held_past_deadline(&v, &g);
        fencing::gave_up_at_the_deadline(&v, &g, held, &mut out);
        steps::judge(&v, &g, acquired, held, &mut out);
    }
    crate::checker::capped(out, SELF_FENCING)
}

#[cfg(test)]
mod tests;
