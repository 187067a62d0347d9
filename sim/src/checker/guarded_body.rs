//! `self-fencing` for guarded bodies: `Lock::with_lock_guarded` (and a
//! body raced against `Lock::keep_alive`) never lets the body act once the
//! lease may be someone else's.
//!
//! The body cannot see the extensions its keep-alive loop makes, so this is
//! judged from the outside, per [`Op::Guarded`] call of process P with
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
//!   and the body's drop guard never fired ([`Op::BodyDropped`]);
//!   `Cancelled { at }` ⇒ `at` is the instant that guard fired (within a
//!   millisecond), not when the best-effort release after it returned.
//! - `Completed` from `with_lock_guarded` ⇒ it returned at most one
//!   keep-alive interval (`every_ms`) after its body ended (the final
//!   release waits that long at most; the body's end is the release's
//!   invoke).
//! - **taken away**: when the lease's key was overwritten with another
//!   owner inside the call ([`Op::TakenAway`] at T), the keep-alive's next
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

use std::collections::BTreeMap;

use super::{Violation, LIVENESS, SELF_FENCING};
use crate::bridge::Execution;
use crate::history::{Event, EventKind, GuardedResult, Millis, Op};

/// One extension's round trip when nothing is disturbed (links of 1-10 ms
/// each way), plus the millisecond a timer may fire late.
pub const TAKEN_AWAY_SLACK_MS: Millis = 25;

struct Call<'a> {
    process: &'a str,
    invoked: Millis,
    done: Option<&'a Event>,
    op: &'a Op,
}

/// Checks every guarded call in `events`; `executions` are the bridges'
/// execution logs (when a held request ran); `faults` are the nemesis
/// faults' `[start, end]` spans, `freezes` those of the faults that freeze a
/// client (client pauses), for the liveness rules; `reaching` narrows
/// `faults` to those that can reach a process (by name; a process it does
/// not list is reached by every fault), for the taken-away and hand-back
/// rules.
pub fn check(
    events: &[Event],
    executions: &[Execution],
    faults: &[(Millis, Millis)],
    freezes: &[(Millis, Millis)],
    reaching: &BTreeMap<String, Vec<(Millis, Millis)>>,
) -> Vec<Violation> {
    let pauses = super::interruptions(events);
    let mut calls: Vec<Call<'_>> = Vec::new();
    let mut open: BTreeMap<u64, usize> = BTreeMap::new();
    for e in events {
        if e.kind == EventKind::Invoke {
            open.insert(e.op_id.0, calls.len());
            calls.push(Call { process: &e.process, invoked: e.time, done: None, op: &e.op });
        } else if let Some(i) = open.remove(&e.op_id.0) {
            calls[i].done = Some(e);
        }
    }
    // Grants: (name, process, token, invoked, done).
    let grants: Vec<(&str, &str, Option<u64>, Millis, Millis)> = calls
        .iter()
        .filter_map(|c| match c.done {
            Some(Event { kind: EventKind::Ok, op: Op::Acquire { name, token, .. }, time, .. }) => {
                Some((name.as_str(), c.process, *token, c.invoked, *time))
            }
            _ => None,
        })
        .collect();
    // The deadline each grant reported: (name, process, token) -> deadline
    // (tokens count per name).
    let deadlines: BTreeMap<(&str, &str, u64), Millis> = calls
        .iter()
        .filter_map(|c| match c.done {
            Some(Event {
                kind: EventKind::Ok,
                op: Op::Acquire { name, token: Some(t), deadline: Some(d), .. },
                ..
            }) => Some(((name.as_str(), c.process, *t), *d)),
            _ => None,
        })
        .collect();
    // The spans that may have frozen a process's timers: when `reaching`
    // names it, the faults that reach it (its own pauses among them, and
    // the nodes' faults, which only err on the side of excusing; the
    // reader, which no client fault aims at, is reached by those only),
    // else every client pause. Another client's pause excuses nothing.
    let frozen_by = |process: &str| reaching.get(process).map_or(freezes, Vec::as_slice);
    let mut out = Vec::new();
    for g in &calls {
        let Op::Guarded { name, .. } = g.op else { continue };
        let Some(done) = g.done else { continue };
        let Op::Guarded { token: Some(token), outcome, .. } = &done.op else { continue };
        // The faults that can reach this call's process: only they excuse it.
        let reaches = reaching.get(g.process).map_or(faults, Vec::as_slice);
        let every = match g.op {
            Op::Guarded { every_ms, .. } => *every_ms,
            _ => None,
        };
        // When the body ended (the release invoked at its end) or was
        // dropped: the keep-alive stops there.
        let body_end = match outcome {
            Some(GuardedResult::Cancelled { at, .. }) => Some(*at),
            Some(GuardedResult::Completed) => calls
                .iter()
                .filter(|r| {
                    r.process == g.process
                        && matches!(r.op, Op::Release { token: Some(t), .. } if t == token)
                        && r.invoked >= g.invoked
                        && r.invoked <= done.time
                })
                .map(|r| r.invoked)
                .max(),
            _ => None,
        };
        if let (Some(GuardedResult::Completed), Some(every)) = (outcome, every) {
            // Only a freeze of the caller (a client pause, a stall) between
            // the body's end and the return explains a late return; a slow,
            // held or partitioned release does not: the guard gives up on it.
            let calm = |end: Millis| {
                let overlaps = |s: Millis, e: Millis| s <= done.time && e >= end;
                !frozen_by(g.process).iter().any(|&(s, e)| overlaps(s, e))
                    && !super::paused(events, g.process, overlaps)
            };
            if let Some(end) = body_end.filter(|&end| done.time > end + every && calm(end)) {
                out.push(Violation::new(
                    LIVENESS,
                    Some(done.time),
                    format!(
                        "{} (token {token}): with_lock_guarded returned at {}ms, {}ms after its body ended at {end}ms, longer than its keep-alive interval of {every}ms (the final release must not wait longer)",
                        g.process,
                        done.time,
                        done.time - end
                    ),
                ));
            }
        }
        let taken = events
            .iter()
            .filter(|e| e.process == g.process && e.time >= g.invoked && e.time <= done.time)
            .find_map(|e| match &e.op {
                Op::TakenAway { name: n, token: Some(t) } if n == name && t == token => Some(e.time),
                _ => None,
            });
        // The body's own drop guard saw when it was dropped: the instant a
        // cancellation reports, within the millisecond the two readings may
        // straddle. A later `at` is when something after the drop (the
        // best-effort release) returned.
        let dropped = events
            .iter()
            .filter(|e| e.process == g.process && e.time >= g.invoked && e.time <= done.time)
            .find_map(|e| match &e.op {
                Op::BodyDropped { name: n, token: t } if n == name && t == token => Some(e.time),
                _ => None,
            });
        match (outcome, dropped) {
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
        // (`with_lock_guarded` only: a `keep_alive` caller races its own
        // body.) A body that ended past the deadline its acquire reported,
        // with no request on the lease's key run at the server in between: no
        // extension moved that deadline, so the guard dropped the body there
        // (the keep-alive is polled first); `Completed` is wrong even when a
        // freeze made both ready at once.
        if let (Some(GuardedResult::Completed), Some(end), Some(&d), Some(_)) =
            (outcome, body_end, deadlines.get(&(name.as_str(), g.process, *token)), every)
        {
            let key = super::lock_key(name);
            let acquired = grants
                .iter()
                .find(|&&(n, p, t, invoked, _)| {
                    n == name && p == g.process && t == Some(*token) && invoked >= g.invoked
                })
                .map(|&(.., done)| done);
            let extended = |from: Millis| {
                executions.iter().any(|x| {
                    *x.client == *g.process
                        && x.key.as_deref() == Some(key.as_str())
                        && x.sim_ms > from
                        && x.sim_ms <= end
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
        let undisturbed = |from: Millis, to: Millis| {
            let overlaps = |s: Millis, e: Millis| s <= to && e >= from;
            !reaches.iter().any(|&(s, e)| overlaps(s, e))
                && (reaching.contains_key(g.process) || !freezes.iter().any(|&(s, e)| overlaps(s, e)))
                && !pauses.iter().any(|&(p, s, e)| p == g.process && overlaps(s, e))
        };
        if let (Some(t), Some(every)) = (taken, every) {
            let bound = t + every + TAKEN_AWAY_SLACK_MS;
            let ended = match outcome {
                Some(GuardedResult::Cancelled { at, .. }) => *at,
                _ => done.time,
            };
            if ended > bound && undisturbed(t, bound) {
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
        if let (Some(GuardedResult::Cancelled { at, .. }), None) = (outcome, taken) {
            if let Some(v) = kept_after_cancel(events, &calls, g, name, *at, &undisturbed) {
                out.push(v);
            }
        }
        if let (Some(end), Some(every)) = (body_end, every) {
            let calm = |from: Millis, to: Millis| {
                let overlaps = |s: Millis, e: Millis| s <= to && e >= from;
                !reaches.iter().any(|&(s, e)| overlaps(s, e))
                    && (reaching.contains_key(g.process) || !freezes.iter().any(|&(s, e)| overlaps(s, e)))
                    && !super::paused(events, g.process, overlaps)
            };
            let lease =
                Lease { process: g.process, name, token: *token, from: g.invoked, until: done.time, end, every };
            if let Some(v) = late_extension(&lease, executions, events, calm) {
                out.push(v);
            }
        }
        let Some(&(_, _, _, _, acquired)) = grants
            .iter()
            .find(|(n, p, t, i, _)| *n == name && *p == g.process && *t == Some(*token) && *i >= g.invoked)
        else {
            continue;
        };
        if let (Some(GuardedResult::Cancelled { at, deadline_reached: true }), Some(&d)) =
            (outcome, deadlines.get(&(name.as_str(), g.process, *token)))
        {
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
        if let Some(GuardedResult::Cancelled { at, .. }) = outcome.as_ref().filter(|_| taken.is_none()) {
            // A disturbance explains the loss only if it began by then and
            // ended at most one lease (and a round trip) before it: once it
            // is over, the keep-alive's next extension sets a fresh TTL,
            // and only a new disturbance can lose that one. A held request
            // counts over the span it was really held (the execution log),
            // not from when the hold was armed.
            let lease_ms = lease_ttl(&calls, g, *token).map_or(Millis::MAX, |t| t + TAKEN_AWAY_SLACK_MS);
            let explains = |s: Millis, e: Millis| s <= *at && e >= g.invoked && e.saturating_add(lease_ms) >= *at;
            let disturbed = reaches.iter().any(|&(s, e)| explains(s, e))
                || held_spans(events, executions, g.process).into_iter().any(|(s, e)| explains(s, e));
            if !disturbed {
                out.push(Violation::new(
                    LIVENESS,
                    Some(*at),
                    format!(
                        "{} (token {token}): its keep-alive lost the lease at {at}ms, and nothing disturbed it since {}ms: no fault reached it, it did not pause and no request of its own was held (the call began at {}ms; a disturbance over by a TTL and a round trip before the loss is outlived by the extensions after it)",
                        g.process,
                        at.saturating_sub(lease_ms).max(g.invoked),
                        g.invoked
                    ),
                ));
            }
        }
        let steps = calls.iter().filter(|w| {
            w.process == g.process
                && matches!(w.op, Op::Write { token: Some(t), .. } if t == token)
                && w.invoked >= g.invoked
                && w.invoked <= done.time
        });
        // A request naming the lease key held at the server from inside the
        // call (`Op::Delayed` with `mentioning`) is the first one the guard
        // sends after the acquire: the keep-alive's first extend, or the
        // release of a body done before it. Its reply cannot arrive before
        // it ran (the bridge's execution log says when), and the keep-alive
        // sends no second extend before the first is answered. When it ran
        // after the deadline the acquire reported, nothing can have moved
        // that deadline: the guard must drop the body there.
        let held_past_deadline = deadlines.get(&(name.as_str(), g.process, *token)).copied().and_then(|d| {
            let (set, ms) = events
                .iter()
                .filter(|e| e.process == g.process && e.time >= g.invoked && e.time <= done.time)
                .find_map(|e| match &e.op {
                    Op::Delayed { ms, mentioning: Some(_), .. } => Some((e.time, *ms)),
                    _ => None,
                })?;
            let ran = executions
                .iter()
                .filter(|x| &*x.client == g.process && x.held_ms == ms && x.sim_ms >= set + ms)
                .map(|x| x.sim_ms)
                .min()?;
            (ran > d).then_some((d, ran))
        });
        // The same hold also fixes when the guard must give up: at the
        // deadline, not when the held extend is answered (the body's own
        // requests may be queued behind it on the connection, so a step
        // after the deadline is not the only trace of a late guard). A
        // frozen caller gives up when it thaws.
        if let (Some((d, ran)), Some(GuardedResult::Cancelled { at, .. })) = (held_past_deadline, outcome) {
            let overlaps = |s: Millis, e: Millis| s <= *at && e >= d;
            let frozen =
                frozen_by(g.process).iter().any(|&(s, e)| overlaps(s, e)) || super::paused(events, g.process, overlaps);
            if *at > d + 1 && !frozen {
                out.push(Violation::new(
                    SELF_FENCING,
                    Some(*at),
                    format!(
                        "{} (token {token}): the guard dropped its body at {at}ms, {}ms after the lease's local deadline of {d}ms; its first request after the acquire (the first extend) was held at the server and ran at {ran}ms, so nothing could have moved the deadline: the guard must give up at it, not wait for the answer",
                        g.process,
                        at - d
                    ),
                ));
            }
        }
        for w in steps {
            if let Some((d, until)) = held_past_deadline.filter(|&(d, _)| w.invoked > d) {
                out.push(Violation::new(
                    SELF_FENCING,
                    Some(w.invoked),
                    format!(
                        "{} (token {token}) ran a guarded body step at {}ms, after the lease's local deadline of {d}ms: its first request after the acquire (the first extend) was held at the server and ran at {until}ms, so no extension could have been confirmed by then",
                        g.process, w.invoked
                    ),
                ));
            }
            if let Some((_, other, t, _, at)) =
                grants.iter().find(|(n, p, _, i, d)| *n == name && *p != g.process && *i > acquired && *d < w.invoked)
            {
                out.push(Violation::new(
                    SELF_FENCING,
                    Some(w.invoked),
                    format!(
                        "{} (token {token}) ran a guarded body step at {}ms, but {other} had been granted {name} (token {}) at {at}ms: the body outlived its lease",
                        g.process,
                        w.invoked,
                        t.map_or_else(|| "none".into(), |t| t.to_string())
                    ),
                ));
            }
            match outcome {
                Some(GuardedResult::Cancelled { at, .. }) if w.invoked > *at => out.push(Violation::new(
                    SELF_FENCING,
                    Some(w.invoked),
                    format!("{} (token {token}): guarded body step at {}ms after the body was cancelled at {at}ms", g.process, w.invoked),
                )),
                Some(GuardedResult::Completed) if w.done.is_none() => out.push(Violation::new(
                    SELF_FENCING,
                    Some(done.time),
                    format!(
                        "{} (token {token}): guarded call reported Completed at {}ms, but its body step invoked at {}ms never completed",
                        g.process, done.time, w.invoked
                    ),
                )),
                _ => {}
            }
        }
    }
    super::capped(out, SELF_FENCING)
}

/// The name an operation acts on, for the lock operations that name one.
fn named(op: &Op) -> Option<&str> {
    match op {
        Op::Acquire { name, .. }
        | Op::Release { name, .. }
        | Op::Extend { name, .. }
        | Op::LeaseLost { name, .. }
        | Op::TakenAway { name, .. }
        | Op::Retry { name, .. }
        | Op::Guarded { name, .. }
        | Op::CurrentToken { name, .. }
        | Op::RemainingTtl { name, .. } => Some(name),
        _ => None,
    }
}

/// The TTL (ms) of the lease guarded call `g` held with `token`: the one
/// its acquire asked for, which every extension of `with_lock_guarded`
/// sets again.
fn lease_ttl(calls: &[Call<'_>], g: &Call<'_>, token: u64) -> Option<Millis> {
    calls.iter().find_map(|c| match (c.op, c.done) {
        (
            Op::Acquire { ttl_ms, .. },
            Some(Event { kind: EventKind::Ok, op: Op::Acquire { token: Some(t), .. }, .. }),
        ) if c.process == g.process && c.invoked >= g.invoked && *t == token => Some(*ttl_ms),
        _ => None,
    })
}

/// The spans in which `process` froze itself (`Op::Paused`, from the
/// moment it was recorded) or had a request held at a server
/// (`Op::Delayed`: from when the bridge took the held request up to when
/// it ran, by the execution log, a server pause behind the hold included;
/// a hold whose request never ran lasts to the end).
fn held_spans(events: &[Event], executions: &[Execution], process: &str) -> Vec<(Millis, Millis)> {
    events
        .iter()
        .filter(|e| e.process == process)
        .filter_map(|e| match e.op {
            Op::Paused { ms, .. } => Some((e.time, e.time + ms)),
            Op::Delayed { ms, .. } => Some(
                executions
                    .iter()
                    .filter(|x| *x.client == *process && x.held_ms == ms && x.taken_ms >= e.time)
                    .map(|x| (x.taken_ms, x.sim_ms))
                    .min_by_key(|&(taken, _)| taken)
                    .unwrap_or((e.time, Millis::MAX)),
            ),
            _ => None,
        })
        .collect()
}

/// One guarded call's lease, for [`late_extension`].
struct Lease<'a> {
    process: &'a str,
    name: &'a str,
    token: u64,
    /// The call's invoke and completion.
    from: Millis,
    until: Millis,
    /// When its body ended or was dropped: the keep-alive stops there.
    end: Millis,
    /// The keep-alive interval.
    every: Millis,
}

/// The schedule rule (see the module docs); `calm(from, to)` says no fault
/// reaching the caller, freeze or stall of its own overlapped the span.
fn late_extension(
    l: &Lease<'_>,
    executions: &[Execution],
    events: &[Event],
    calm: impl Fn(Millis, Millis) -> bool,
) -> Option<Violation> {
    let key = super::lock_key(l.name);
    let sent = |x: &Execution| x.sim_ms.saturating_sub(x.held_ms);
    let mine = |x: &&Execution| *x.client == *l.process;
    let mut requests: Vec<&Execution> = executions
        .iter()
        .filter(mine)
        .filter(|x| x.key.as_deref() == Some(key.as_str()) && sent(x) >= l.from && sent(x) <= l.end)
        .collect();
    requests.sort_by_key(|x| x.sim_ms);
    // Held requests the lease's own requests do not account for (one sent
    // before the call, another key's): a later request on the connection
    // may have queued behind them.
    let accounted = |ms: u64| requests.iter().any(|x| x.held_ms == ms);
    let mut holds: Vec<(Millis, Millis)> = events
        .iter()
        .filter(|e| e.process == l.process && e.time <= l.until)
        .filter_map(|e| match e.op {
            Op::Delayed { ms, mentioning: Some(_), .. } if e.time >= l.from && accounted(ms) => None,
            Op::Delayed { ms, .. } => Some((e.time, e.time + ms)),
            _ => None,
        })
        .collect();
    holds.extend(
        executions
            .iter()
            .filter(mine)
            .filter(|x| x.held_ms > 0 && !requests.iter().any(|r| std::ptr::eq(*r, *x)))
            .map(|x| (sent(x), x.sim_ms)),
    );
    let judged = |from: Millis, to: Millis| calm(from, to) && !holds.iter().any(|&(s, e)| s <= to && e >= from);
    let due = |x: &Execution| (sent(x) + l.every).max(x.sim_ms) + TAKEN_AWAY_SLACK_MS;
    for pair in requests.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        if sent(b) > due(a) && judged(sent(a), b.sim_ms) {
            return Some(Violation::new(
                LIVENESS,
                Some(sent(b)),
                format!(
                    "{} (token {}): its keep-alive sent a request on {key} at {}ms; the previous one was sent at {}ms and answered by {}ms, so with an interval of {}ms the next was due by {}ms (an interval counts from the send)",
                    l.process, l.token, sent(b), sent(a), a.sim_ms, l.every, due(a)
                ),
            ));
        }
    }
    let last = requests.last()?;
    (l.end > due(last) && judged(sent(last), l.end)).then(|| {
        Violation::new(
            LIVENESS,
            Some(l.end),
            format!(
                "{} (token {}): its body ran until {}ms, but the keep-alive sent nothing on {key} after the request sent at {}ms and answered by {}ms; with an interval of {}ms the next extension was due by {}ms",
                l.process, l.token, l.end, sent(last), last.sim_ms, l.every, due(last)
            ),
        )
    })
}

/// The hand-back rule (see the module docs) for call `g` on `name`,
/// cancelled at `at`; `undisturbed(from, to)` says no fault, freeze or
/// pause of the caller overlapped the span.
fn kept_after_cancel(
    events: &[Event],
    calls: &[Call<'_>],
    g: &Call<'_>,
    name: &str,
    at: Millis,
    undisturbed: &dyn Fn(Millis, Millis) -> bool,
) -> Option<Violation> {
    let returned = g.done?.time;
    // Calls are in invoke order: the first of the caller's on the name
    // after the guarded call returned.
    let next = calls.iter().find(|c| {
        c.process == g.process && c.invoked >= returned && !std::ptr::eq(*c, g) && named(c.op) == Some(name)
    })?;
    let read = next.done.filter(|d| d.kind == EventKind::Ok)?;
    let Op::RemainingTtl { ms: Some(left), .. } = &read.op else { return None };
    let others = events
        .iter()
        .any(|e| e.process != g.process && e.time >= g.invoked && e.time <= read.time && named(&e.op) == Some(name));
    (!others && undisturbed(at, read.time)).then(|| {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{History, OpId};

    fn acq(h: &History, p: &str, t0: u64, t1: u64, token: u64) {
        let op = |token| Op::Acquire { name: "l".into(), ttl_ms: 100, token, deadline: None };
        let id = h.invoke_at(t0, p, op(None));
        h.complete_at(t1, id, p, EventKind::Ok, op(Some(token)));
    }

    fn step(h: &History, p: &str, t: u64, token: u64, complete: bool) -> OpId {
        let op =
            Op::Write { key: "k".into(), value: format!("{p}-{t}"), token: Some(token), fenced: true, result: None };
        let id = h.invoke_at(t, p, op.clone());
        if complete {
            h.complete_at(t + 1, id, p, EventKind::Ok, op);
        }
        id
    }

    fn guarded(h: &History, t0: u64, build: impl FnOnce(&History), t1: u64, outcome: GuardedResult) {
        let op = |token, outcome| Op::Guarded { name: "l".into(), token, outcome, every_ms: None };
        let id = h.invoke_at(t0, "a", op(None, None));
        build(h);
        h.complete_at(t1, id, "a", EventKind::Ok, op(Some(1), Some(outcome)));
    }

    #[test]
    fn a_body_that_stops_in_time_passes() {
        let h = History::new();
        guarded(
            &h,
            0,
            |h| {
                acq(h, "a", 0, 2, 1);
                step(h, "a", 10, 1, true);
                step(h, "a", 50, 1, false); // dropped mid-flight at the cancel
            },
            95,
            GuardedResult::Cancelled { at: 90, deadline_reached: false },
        );
        acq(&h, "b", 150, 152, 2);
        assert_eq!(check(&h.events(), &[], &[(0, 10_000)], &[], &BTreeMap::new()), vec![]);
    }

    fn acq_until(h: &History, p: &str, t0: u64, t1: u64, token: u64, deadline: u64) {
        let op = |token| Op::Acquire { name: "l".into(), ttl_ms: 100, token, deadline: Some(deadline) };
        let id = h.invoke_at(t0, p, op(None));
        h.complete_at(t1, id, p, EventKind::Ok, op(Some(token)));
    }

    /// A guarded call of `a` (token 1, trusted until 90 ms) whose first
    /// request after the acquire was held `ms` and ran at `ran`, with a
    /// step at 10 ms and one at `late` (completed or not), ending at `end`
    /// with `outcome`; and the execution log that says when it ran.
    fn held_call(ms: u64, ran: u64, late: (u64, bool), end: u64, outcome: GuardedResult) -> (History, Vec<Execution>) {
        let h = History::new();
        guarded(
            &h,
            0,
            |h| {
                acq_until(h, "a", 0, 2, 1, 90);
                h.observe_at(2, "a", Op::Delayed { node: 0, ms, mentioning: Some("lock:{l}".into()) });
                step(h, "a", 10, 1, true);
                step(h, "a", late.0, 1, late.1);
            },
            end,
            outcome,
        );
        let log = Execution {
            client: "a".into(),
            command: "EVALSHA".into(),
            key: None,
            server_unix_ms: ran,
            sim_ms: ran,
            taken_ms: ran - ms,
            held_ms: ms,
        };
        (h, vec![log])
    }

    #[test]
    fn a_body_that_runs_past_its_deadline_while_the_first_extend_is_held_fails() {
        let (h, ran) =
            held_call(60, 100, (95, true), 130, GuardedResult::Cancelled { at: 125, deadline_reached: false });
        let v = check(&h.events(), &ran, &[(0, 10_000)], &[], &BTreeMap::new());
        // The step after the deadline, and the cancellation 35 ms after it.
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(v.iter().any(|v| v.detail.contains("step at 95ms") && v.detail.contains("ran at 100ms")), "{v:?}");
        assert!(v.iter().any(|v| v.detail.contains("dropped its body at 125ms")), "{v:?}");
        // Without the execution log nothing says when it ran: no verdict.
        assert_eq!(check(&h.events(), &[], &[(0, 10_000)], &[], &BTreeMap::new()), vec![]);
    }

    #[test]
    fn a_guard_that_waits_for_the_held_extend_instead_of_its_deadline_fails() {
        let run_reaching = |at: u64, frozen: &[(u64, u64)], reaches: &BTreeMap<String, Vec<(u64, u64)>>| {
            // The last step is queued behind the held extend: never answered.
            let outcome = GuardedResult::Cancelled { at, deadline_reached: at <= 91 };
            let (h, ran) = held_call(60, 100, (80, false), at + 1, outcome);
            check(&h.events(), &ran, &[(0, 10_000)], frozen, reaches)
        };
        let run = |at: u64, frozen: &[(u64, u64)]| run_reaching(at, frozen, &BTreeMap::new());
        assert_eq!(run(91, &[]), vec![]);
        let v = run(104, &[]);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].detail.contains("14ms after the lease's local deadline of 90ms"), "{v:?}");
        // A caller frozen across the deadline gives up when it thaws.
        assert_eq!(run(104, &[(85, 103)]), vec![]);
        // Another client's pause excuses nothing when the faults that reach
        // the caller are known and none spans the deadline...
        let v = run_reaching(104, &[(85, 103)], &reaching("a", &[(0, 20)]));
        assert_eq!(v.len(), 1, "{v:?}");
        // ...and one of those that does excuses it.
        assert_eq!(run_reaching(104, &[], &reaching("a", &[(85, 103)])), vec![]);
    }

    #[test]
    fn a_body_past_its_first_deadline_is_fine_when_the_held_request_ran_before_it() {
        let (h, ran) = held_call(40, 70, (95, true), 130, GuardedResult::Completed);
        assert_eq!(check(&h.events(), &ran, &[(0, 10_000)], &[], &BTreeMap::new()), vec![]);
    }

    #[test]
    fn a_body_step_after_someone_else_was_granted_fails() {
        let h = History::new();
        guarded(
            &h,
            0,
            |h| {
                acq(h, "a", 0, 2, 1);
                step(h, "a", 10, 1, true);
                acq(h, "b", 150, 152, 2);
                step(h, "a", 160, 1, true);
            },
            170,
            GuardedResult::Completed,
        );
        let v = check(&h.events(), &[], &[(0, 10_000)], &[], &BTreeMap::new());
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].detail.contains("outlived its lease"), "{v:?}");
    }

    #[test]
    fn steps_after_cancel_or_unfinished_on_completion_fail() {
        let h = History::new();
        guarded(
            &h,
            0,
            |h| {
                acq(h, "a", 0, 2, 1);
                step(h, "a", 60, 1, true);
            },
            70,
            GuardedResult::Cancelled { at: 50, deadline_reached: false },
        );
        guarded(
            &h,
            100,
            |h| {
                acq(h, "a", 100, 102, 1);
                step(h, "a", 110, 1, false);
            },
            120,
            GuardedResult::Completed,
        );
        let v = check(&h.events(), &[], &[(0, 10_000)], &[], &BTreeMap::new());
        assert_eq!(v.len(), 2, "{v:?}");
    }

    #[test]
    fn a_cancellation_reported_after_the_body_was_dropped_fails() {
        let run = |dropped: u64, outcome: GuardedResult| {
            let h = History::new();
            guarded(
                &h,
                0,
                |h| {
                    acq(h, "a", 0, 2, 1);
                    h.observe_at(dropped, "a", Op::BodyDropped { name: "l".into(), token: 1 });
                },
                95,
                outcome,
            );
            check(&h.events(), &[], &[(0, 10_000)], &[], &BTreeMap::new())
        };
        let cancelled = GuardedResult::Cancelled { at: 90, deadline_reached: false };
        assert_eq!(run(90, cancelled), vec![]);
        assert_eq!(run(89, cancelled), vec![], "the two readings may straddle a millisecond");
        // `at` taken when the release returned, 7 ms after the drop.
        let v = run(83, cancelled);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].detail.contains("dropped at 83ms"), "{v:?}");
        // A body dropped unfinished is not a completed one.
        let v = run(50, GuardedResult::Completed);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].detail.contains("dropped unfinished"), "{v:?}");
    }

    #[test]
    fn a_body_completed_past_an_unmoved_deadline_fails() {
        // Acquired over 0-2 ms with a deadline of 291 ms, every 250 ms; the
        // body's end (its release invoked) at `end`.
        let run = |end: u64, extended_at: Option<u64>| {
            let h = History::new();
            let op = |token, outcome| Op::Guarded { name: "l".into(), token, outcome, every_ms: Some(250) };
            let id = h.invoke_at(0, "a", op(None, None));
            acq_until(&h, "a", 0, 2, 1, 291);
            h.invoke_at(end, "a", Op::Release { name: "l".into(), token: Some(1) });
            h.complete_at(end + 1, id, "a", EventKind::Ok, op(Some(1), Some(GuardedResult::Completed)));
            let log: Vec<Execution> = extended_at
                .into_iter()
                .map(|t| Execution {
                    client: "a".into(),
                    command: "EVALSHA".into(),
                    key: Some("lock:{l}".into()),
                    server_unix_ms: t,
                    sim_ms: t,
                    taken_ms: t,
                    held_ms: 0,
                })
                .collect();
            check(&h.events(), &log, &[], &[], &BTreeMap::new())
                .into_iter()
                .filter(|v| v.detail.contains("nothing moved the deadline"))
                .count()
        };
        assert_eq!(run(200, None), 0, "ended before the deadline");
        assert_eq!(run(292, None), 0, "within the millisecond the two readings may straddle");
        assert_eq!(run(400, None), 1, "ready together with the expired deadline");
        assert_eq!(run(400, Some(252)), 0, "an extension ran: the deadline may have moved");
    }

    /// A guarded call of `a` on `l` (every 100 ms, token 1) from 0 ms to
    /// `end`, whose key is taken away at `taken` (if any), with `outcome`.
    fn every_100(h: &History, taken: Option<u64>, end: u64, outcome: GuardedResult) {
        let op = |token, outcome| Op::Guarded { name: "l".into(), token, outcome, every_ms: Some(100) };
        let id = h.invoke_at(0, "a", op(None, None));
        acq_until(h, "a", 0, 2, 1, 291);
        if let Some(t) = taken {
            h.observe_at(t, "a", Op::TakenAway { name: "l".into(), token: Some(1) });
        }
        h.complete_at(end, id, "a", EventKind::Ok, op(Some(1), Some(outcome)));
    }

    fn reaching(process: &str, spans: &[(u64, u64)]) -> BTreeMap<String, Vec<(u64, u64)>> {
        BTreeMap::from([(process.to_string(), spans.to_vec())])
    }

    #[test]
    fn a_guard_that_keeps_a_body_whose_key_was_taken_away_fails() {
        let run = |at: u64, reach: &BTreeMap<String, Vec<(u64, u64)>>| {
            let h = History::new();
            every_100(&h, Some(5), at + 1, GuardedResult::Cancelled { at, deadline_reached: at >= 291 });
            check(&h.events(), &[], &[(0, 10_000)], &[], reach)
        };
        // Refused at the first extension (sent at 100 ms): in time, and not
        // a liveness violation although no fault reached it.
        assert_eq!(run(110, &reaching("a", &[])), vec![]);
        // Kept until the local deadline.
        let v = run(291, &reaching("a", &[]));
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].detail.contains("overwritten with another owner at 5ms"), "{v:?}");
        assert!(v[0].detail.contains("dropped by 130ms"), "{v:?}");
        // A fault that reaches `a` in the span excuses it; one that reaches
        // only another process does not.
        assert_eq!(run(291, &reaching("a", &[(50, 60)])), vec![]);
        let mut other = reaching("a", &[]);
        other.insert("b".into(), vec![(50, 60)]);
        assert_eq!(run(291, &other).len(), 1);
    }

    /// [`every_100`] cancelled at 100 ms and returned at 102 ms, then the
    /// caller reads the name's remaining TTL over 103-105 ms.
    fn cancelled_then_read(taken: Option<u64>, left: Option<u64>, also: impl FnOnce(&History)) -> History {
        let h = History::new();
        every_100(&h, taken, 102, GuardedResult::Cancelled { at: 100, deadline_reached: false });
        also(&h);
        let id = h.invoke_at(103, "a", Op::RemainingTtl { name: "l".into(), ms: None });
        h.complete_at(105, id, "a", EventKind::Ok, Op::RemainingTtl { name: "l".into(), ms: left });
        h
    }

    #[test]
    fn a_lease_still_held_right_after_a_cancellation_fails_the_hand_back() {
        let calm = reaching("a", &[]);
        let judge = |h: History, reach: &BTreeMap<String, Vec<(u64, u64)>>| {
            check(&h.events(), &[], &[(0, 10_000)], &[], reach)
                .into_iter()
                .filter(|v| v.detail.contains("hand the lease back"))
                .count()
        };
        assert_eq!(judge(cancelled_then_read(None, None, |_| {}), &calm), 0);
        assert_eq!(judge(cancelled_then_read(None, Some(480), |_| {}), &calm), 1);
        // Excused: the key was taken away, someone else acted on the name,
        // a fault reached the caller, the caller paused.
        assert_eq!(judge(cancelled_then_read(Some(5), Some(480), |_| {}), &calm), 0);
        assert_eq!(judge(cancelled_then_read(None, Some(480), |h| acq(h, "b", 50, 104, 2)), &calm), 0);
        assert_eq!(judge(cancelled_then_read(None, Some(480), |_| {}), &reaching("a", &[(101, 101)])), 0);
        let paused = |h: &History| h.observe_at(99, "a", Op::Paused { ms: 3, context: "gc".into() });
        assert_eq!(judge(cancelled_then_read(None, Some(480), paused), &calm), 0);
        // Another op of its own on the name before the read: not judged.
        let own = |h: &History| {
            let id = h.invoke_at(102, "a", Op::CurrentToken { name: "l".into(), token: None });
            h.complete_at(103, id, "a", EventKind::Ok, Op::CurrentToken { name: "l".into(), token: Some(1) });
        };
        assert_eq!(judge(cancelled_then_read(None, Some(480), own), &calm), 0);
    }

    /// A guarded call of `a` (TTL 100 ms) cancelled at 400 ms, with `also`
    /// recorded inside it.
    fn lost_at_400(also: impl FnOnce(&History)) -> History {
        let h = History::new();
        let build = |h: &History| {
            acq(h, "a", 0, 2, 1);
            also(h);
        };
        guarded(&h, 0, build, 405, GuardedResult::Cancelled { at: 400, deadline_reached: true });
        h
    }

    fn lost_lease(h: &History, log: &[Execution], faults: &[(u64, u64)]) -> usize {
        let v = check(&h.events(), log, faults, &[], &BTreeMap::new());
        v.iter().filter(|v| v.detail.contains("its keep-alive lost the lease")).count()
    }

    #[test]
    fn a_lease_lost_with_nothing_to_explain_it_fails_liveness() {
        let h = lost_at_400(|_| {});
        assert_eq!(lost_lease(&h, &[], &[]), 1);
        assert_eq!(lost_lease(&h, &[], &[(350, 420)]), 0, "a fault over the loss explains it");
        // A TTL (100 ms) and a round trip (25 ms) after a fault, the
        // keep-alive has set a fresh TTL: 280 + 125 >= 400, 270 + 125 < 400.
        assert_eq!(lost_lease(&h, &[], &[(50, 280)]), 0);
        assert_eq!(lost_lease(&h, &[], &[(50, 270)]), 1, "a fault over well before the loss does not explain it");
        assert_eq!(lost_lease(&h, &[], &[(401, 500)]), 1, "nor one that began after it");
    }

    #[test]
    fn a_held_request_explains_a_loss_over_the_span_it_was_really_held() {
        // Armed at 10 ms for 60 ms; the request it held is the one the log
        // says, not the armed span (10, 70).
        let h = lost_at_400(|h| {
            h.observe_at(10, "a", Op::Delayed { node: 0, ms: 60, mentioning: Some("lock:{l}".into()) })
        });
        let log = |taken: u64, ran: u64| {
            vec![Execution {
                client: "a".into(),
                command: "EVALSHA".into(),
                key: Some("lock:{l}".into()),
                server_unix_ms: ran,
                sim_ms: ran,
                taken_ms: taken,
                held_ms: 60,
            }]
        };
        // Taken up at 200 ms, held 60 ms, then a server pause: it ran at
        // 330 ms, within a TTL and a round trip of the loss.
        assert_eq!(lost_lease(&h, &log(200, 330), &[]), 0);
        // Ran at 100 ms: the keep-alive had long set a fresh TTL.
        assert_eq!(lost_lease(&h, &log(40, 100), &[]), 1);
        // Never ran: still held at the loss.
        assert_eq!(lost_lease(&h, &[], &[]), 0);
    }
}
