//! The history as the guarded-body rules read it: the calls paired with
//! their completions, the grants and the deadlines they reported, the spans
//! that disturbed a process, and for each guarded call the facts every rule
//! starts from (its lease, when its body ended, whether its key was taken
//! away or its body dropped).

use std::collections::BTreeMap;

use crate::bridge::Execution;
use crate::families::lock::op::{GuardedResult, LockOp};
use crate::history::{Event, EventKind, Millis, Op};

/// One operation with its completion (if any).
pub(super) struct Call<'a> {
    pub(super) process: &'a str,
    pub(super) invoked: Millis,
    pub(super) done: Option<&'a Event>,
    pub(super) op: &'a Op,
}

/// A granted acquire: (name, process, token, invoked, done).
pub(super) type Grant<'a> = (&'a str, &'a str, Option<u64>, Millis, Millis);

/// The whole history, with what the checker was told about the faults.
pub(super) struct Views<'a> {
    pub(super) events: &'a [Event],
    /// The bridges' execution logs (when a held request ran).
    pub(super) executions: &'a [Execution],
    /// The nemesis faults' `[start, end]` spans.
    faults: &'a [(Millis, Millis)],
    /// Those of the faults that freeze a client (client pauses).
    freezes: &'a [(Millis, Millis)],
    /// The faults that can reach a process, by name (a process it does not
    /// list is reached by every fault).
    reaching: &'a BTreeMap<String, Vec<(Millis, Millis)>>,
    /// The workload's own interruptions, `(process, start, end)`.
    pauses: Vec<(&'a str, Millis, Millis)>,
    /// Every invoked call, in invoke order.
    pub(super) calls: Vec<Call<'a>>,
    pub(super) grants: Vec<Grant<'a>>,
    /// The deadline each grant reported: (name, process, token) -> deadline
    /// (tokens count per name).
    pub(super) deadlines: BTreeMap<(&'a str, &'a str, u64), Millis>,
}

impl<'a> Views<'a> {
    pub(super) fn new(
        events: &'a [Event],
        executions: &'a [Execution],
        faults: &'a [(Millis, Millis)],
        freezes: &'a [(Millis, Millis)],
        reaching: &'a BTreeMap<String, Vec<(Millis, Millis)>>,
    ) -> Views<'a> {
        let pauses = crate::checker::interruptions(events);
        let calls = calls(events);
        let grants = grants(&calls);
        let deadlines = deadlines(&calls);
        Views { events, executions, faults, freezes, reaching, pauses, calls, grants, deadlines }
    }

    /// The spans that may have frozen a process's timers: when `reaching`
    /// names it, the faults that reach it (its own pauses among them, and
    /// the nodes' faults, which only err on the side of excusing; the
    /// reader, which no client fault aims at, is reached by those only),
    /// else every client pause. Another client's pause excuses nothing.
    pub(super) fn frozen_by(&self, process: &str) -> &'a [(Millis, Millis)] {
        self.reaching.get(process).map_or(self.freezes, Vec::as_slice)
    }

    /// The client pauses that froze `process` itself: those of the
    /// schedule's freezes that also reach it (every freeze when `reaching`
    /// does not name it). Narrower than [`Views::frozen_by`]: a partition or
    /// a held link slows a request, not the caller's timers.
    pub(super) fn paused_spans(&self, process: &str) -> Vec<(Millis, Millis)> {
        match self.reaching.get(process) {
            Some(reach) => self.freezes.iter().copied().filter(|&(s, _)| reach.iter().any(|r| r.0 == s)).collect(),
            None => self.freezes.to_vec(),
        }
    }

    /// The faults that can reach `process`: only they excuse it.
    pub(super) fn reaches(&self, process: &str) -> &'a [(Millis, Millis)] {
        self.reaching.get(process).map_or(self.faults, Vec::as_slice)
    }

    /// No fault reaching `process`, no client freeze (when the faults
    /// reaching it are not known) and no interruption of its own (a pause
    /// or a held request, as armed) overlapped `[from, to]`.
    pub(super) fn undisturbed(&self, process: &str, from: Millis, to: Millis) -> bool {
        let overlaps = |s: Millis, e: Millis| s <= to && e >= from;
        !self.reaches(process).iter().any(|&(s, e)| overlaps(s, e))
            && (self.reaching.contains_key(process) || !self.freezes.iter().any(|&(s, e)| overlaps(s, e)))
            && !self.pauses.iter().any(|&(p, s, e)| p == process && overlaps(s, e))
    }

    /// As [`Views::undisturbed`], with only its pauses (not its held
    /// requests) as the interruptions of its own.
    pub(super) fn calm(&self, process: &str, from: Millis, to: Millis) -> bool {
        let overlaps = |s: Millis, e: Millis| s <= to && e >= from;
        !self.reaches(process).iter().any(|&(s, e)| overlaps(s, e))
            && (self.reaching.contains_key(process) || !self.freezes.iter().any(|&(s, e)| overlaps(s, e)))
            && !crate::checker::paused(self.events, process, overlaps)
    }

    /// When the lease of guarded call `g` was granted: the completion of
    /// its process's first grant of `name` with `token` invoked inside it.
    pub(super) fn acquired(&self, g: &Guarded<'_, '_>) -> Option<Millis> {
        self.grants
            .iter()
            .find(|&&(n, p, t, invoked, _)| {
                n == g.name && p == g.process && t == Some(g.token) && invoked >= g.call.invoked
            })
            .map(|&(.., done)| done)
    }

    /// The deadline the acquire of guarded call `g`'s lease reported.
    pub(super) fn deadline(&self, g: &Guarded<'_, '_>) -> Option<Millis> {
        self.deadlines.get(&(g.name, g.process, g.token)).copied()
    }
}

/// Every invoked call with its completion (if any), in invoke order.
fn calls(events: &[Event]) -> Vec<Call<'_>> {
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
    calls
}

/// Every granted acquire.
fn grants<'a>(calls: &[Call<'a>]) -> Vec<Grant<'a>> {
    calls
        .iter()
        .filter_map(|c| {
            let done = c.done.filter(|d| d.kind == EventKind::Ok)?;
            let Some(LockOp::Acquire { name, token, .. }) = LockOp::of(&done.op) else { return None };
            Some((name.as_str(), c.process, *token, c.invoked, done.time))
        })
        .collect()
}

/// The deadline each grant reported, by (name, process, token).
fn deadlines<'a>(calls: &[Call<'a>]) -> BTreeMap<(&'a str, &'a str, u64), Millis> {
    calls
        .iter()
        .filter_map(|c| {
            let done = c.done.filter(|d| d.kind == EventKind::Ok)?;
            let Some(LockOp::Acquire { name, token: Some(t), deadline: Some(d), .. }) = LockOp::of(&done.op) else {
                return None;
            };
            Some(((name.as_str(), c.process, *t), *d))
        })
        .collect()
}

/// One completed guarded call that reported its token, and the facts the
/// rules start from.
pub(super) struct Guarded<'v, 'a> {
    pub(super) call: &'v Call<'a>,
    pub(super) process: &'a str,
    pub(super) name: &'a str,
    pub(super) token: u64,
    pub(super) outcome: Option<&'a GuardedResult>,
    pub(super) done: &'a Event,
    /// The keep-alive interval (`with_lock_guarded` only: a `keep_alive`
    /// caller races its own body).
    pub(super) every: Option<Millis>,
    /// When the body ended (the release invoked at its end) or was
    /// dropped: the keep-alive stops there.
    pub(super) body_end: Option<Millis>,
    /// When the lease's key was overwritten with another owner inside the
    /// call ([`LockOp::TakenAway`]).
    pub(super) taken: Option<Millis>,
    /// When the body's own drop guard fired ([`LockOp::BodyDropped`]).
    pub(super) dropped: Option<Millis>,
}

impl<'v, 'a> Guarded<'v, 'a> {
    /// `g` as a guarded call, if it is one, completed and with a token.
    pub(super) fn of(v: &Views<'a>, g: &'v Call<'a>) -> Option<Guarded<'v, 'a>> {
        let Some(LockOp::Guarded { name, every_ms, .. }) = LockOp::of(g.op) else { return None };
        let done = g.done?;
        let Some(LockOp::Guarded { token: Some(token), outcome, .. }) = LockOp::of(&done.op) else { return None };
        let within = |e: &&Event| e.process == g.process && e.time >= g.invoked && e.time <= done.time;
        let taken = v.events.iter().filter(within).find_map(|e| match LockOp::of(&e.op) {
            Some(LockOp::TakenAway { name: n, token: Some(t) }) if n == name && t == token => Some(e.time),
            _ => None,
        });
        // The body's own drop guard saw when it was dropped: the instant a
        // cancellation reports, within the millisecond the two readings may
        // straddle. A later `at` is when something after the drop (the
        // best-effort release) returned.
        let dropped = v.events.iter().filter(within).find_map(|e| match LockOp::of(&e.op) {
            Some(LockOp::BodyDropped { name: n, token: t }) if n == name && t == token => Some(e.time),
            _ => None,
        });
        let body_end = match outcome {
            Some(GuardedResult::Cancelled { at, .. }) => Some(*at),
            Some(GuardedResult::Completed) => v
                .calls
                .iter()
                .filter(|r| {
                    r.process == g.process
                        && matches!(LockOp::of(r.op), Some(LockOp::Release { token: Some(t), .. }) if t == token)
                        && r.invoked >= g.invoked
                        && r.invoked <= done.time
                })
                .map(|r| r.invoked)
                .max(),
            _ => None,
        };
        Some(Guarded {
            call: g,
            process: g.process,
            name,
            token: *token,
            outcome: outcome.as_ref(),
            done,
            every: *every_ms,
            body_end,
            taken,
            dropped,
        })
    }
}

/// The name an operation acts on, for the lock operations that name one.
pub(super) fn named(op: &Op) -> Option<&str> {
    match LockOp::of(op)? {
        LockOp::Acquire { name, .. }
        | LockOp::Release { name, .. }
        | LockOp::Extend { name, .. }
        | LockOp::LeaseLost { name, .. }
        | LockOp::TakenAway { name, .. }
        | LockOp::Retry { name, .. }
        | LockOp::Guarded { name, .. }
        | LockOp::CurrentToken { name, .. }
        | LockOp::RemainingTtl { name, .. } => Some(name),
        _ => None,
    }
}

/// The TTL (ms) of the lease guarded call `g` held with `token`: the one
/// its acquire asked for, which every extension of `with_lock_guarded`
/// sets again.
pub(super) fn lease_ttl(calls: &[Call<'_>], g: &Call<'_>, token: u64) -> Option<Millis> {
    calls.iter().find_map(|c| {
        let done = c.done.filter(|d| d.kind == EventKind::Ok)?;
        match (LockOp::of(c.op), LockOp::of(&done.op)) {
            (Some(LockOp::Acquire { ttl_ms, .. }), Some(LockOp::Acquire { token: Some(t), .. }))
                if c.process == g.process && c.invoked >= g.invoked && *t == token =>
            {
                Some(*ttl_ms)
            }
            _ => None,
        }
    })
}

/// The spans in which `process` froze itself (`Op::Paused`, from the
/// moment it was recorded) or had a request held at a server
/// (`Op::Delayed`: from when the bridge took the held request up to when
/// it ran, by the execution log, a server pause behind the hold included;
/// a hold whose request never ran lasts to the end).
pub(super) fn held_spans(events: &[Event], executions: &[Execution], process: &str) -> Vec<(Millis, Millis)> {
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
