//! `lock-replies`: every answer `Lock` gives is justified by the history,
//! in both directions.
//!
//! The bridge runs each command synchronously at simulated time, and the
//! server's clock is pinned to simulated time, so an operation that
//! completed executed at some instant in `[invoke, completion]`; one whose
//! outcome is unknown (`Info`, or an invoke with no completion: a dropped
//! future) executed at most once, at some instant after its invoke. A key
//! set at `s` with TTL `t` is visible up to and including `s + t` (Redis
//! keeps a key alive while `now <= expiry`). From these facts alone, per
//! lease (one granted acquire, identified by process and token):
//!
//! - **latest possible expiry** `alive_max`: the acquire's completion plus
//!   its TTL, pushed on by every other extend (confirmed or unknown) that
//!   could have run while the key was alive, and by extensions the history
//!   cannot see (a `keep_alive` loop or `with_lock_guarded` body:
//!   [`Op::Guarded`]) up to twice the TTL after that operation ended (the
//!   loop stops there; one extension may still be in flight);
//! - **earliest possible expiry** `alive_min`: the invoke of whichever
//!   setter could have run last, plus its TTL.
//!
//! The rules (none convicts on an unknown outcome):
//!
//! 1. `extend`/`release` returned true ⇒ the key could still be ours: it was
//!    invoked no later than `alive_max`, no release of ours had been
//!    confirmed, and no other client had been granted the lock after our
//!    acquire and before this invoke (a grant means the key was absent).
//! 2. `extend`/`release` returned false ⇒ the key could be gone: a refusal
//!    that completed before `alive_min`, with no release of ours sent, no
//!    server restart and no clock step, is a violation.
//! 3. `acquire` refused ⇒ some lease could be present during the call: a
//!    refusal while every earlier lease is definitely gone (expired past
//!    `alive_max`, or released) and every acquire of unknown outcome is
//!    definitely expired (it may land until the faults settle, plus its
//!    TTL) is a violation — it catches a lock that never grants or keeps
//!    keys too long. `acquire` granted ⇒ no other lease was definitely
//!    present throughout the call.
//! 4. `current_token` lies between the number of grants completed before it
//!    was invoked (and the highest such token) and the number of acquires
//!    (granted or unknown) invoked before it completed.
//! 5. `remaining_ttl` never exceeds the largest TTL requested so far;
//!    `None` only if no lease was definitely present, `Some` only if one
//!    could have been.
//! 6. `Retry::run` made its first attempt whatever its deadline, gave up
//!    (no deadline set) only after making all its attempts, and a grant it
//!    reports is its last attempt's; between attempts `n` and `n + 1` (from
//!    0) it slept at most `min(base × 2^n, max)` (when the history records
//!    its backoff), unless its caller was frozen meanwhile; an attempt that
//!    failed with an error is its last (an error is not a refusal: the
//!    policy returns it, and a `Retry::run` that answered a grant or gave
//!    up after one went on past it).
//!
//! 7. A definite answer (true, false, a grant, a refusal, a remaining
//!    time, a token) comes from the server: some request of the caller ran
//!    at the lock's server between the call's invoke and its answer (the
//!    bridge's execution log). A failure reported as a refusal (a timed-out
//!    release read as "already gone", a cached answer) has none.
//!
//! Rule 5 also bounds a `Some` by the lease that was definitely present
//! throughout the read: the key expired no earlier than that lease's
//! earliest possible expiry and no later than its latest, so the reading is
//! within a millisecond of `[alive_min − answer, alive_max − invoke]`.
//!
//! Rules 2, 3 (refusals) and 5 (`None`, and the bounds of a `Some`) assume
//! no server restart and no clock step in the history (both end leases
//! early); they are skipped otherwise.

use std::collections::BTreeMap;

use super::{Violation, LOCK_REPLIES};
use crate::bridge::Execution;
use crate::history::{Event, EventKind, GuardedResult, Millis, Op};
use crate::nemesis::FaultClass;

/// After the last fault heals, a request still in flight is delivered
/// within the largest link latency (300 ms) plus a margin.
const SETTLE_MS: Millis = 350;

/// One operation with its completion (if any).
#[derive(Debug, Clone)]
struct Call<'a> {
    process: &'a str,
    invoked: Millis,
    /// `None`: never completed (a dropped future), like `Info`.
    done: Option<(EventKind, Millis, &'a Op)>,
    op: &'a Op,
}

impl<'a> Call<'a> {
    fn ok(&self) -> bool {
        matches!(self.done, Some((EventKind::Ok, ..)))
    }
    fn failed(&self) -> bool {
        matches!(self.done, Some((EventKind::Fail, ..)))
    }
    fn unknown(&self) -> bool {
        matches!(self.done, None | Some((EventKind::Info, ..)))
    }
    fn done_at(&self) -> Millis {
        self.done.map_or(Millis::MAX, |(_, t, _)| t)
    }
    fn result(&self) -> &'a Op {
        self.done.map_or(self.op, |(_, _, op)| op)
    }
}

fn calls(events: &[Event]) -> Vec<Call<'_>> {
    let mut out: Vec<Call<'_>> = Vec::new();
    let mut open: BTreeMap<u64, usize> = BTreeMap::new();
    for e in events {
        if e.kind == EventKind::Invoke {
            open.insert(e.op_id.0, out.len());
            out.push(Call { process: &e.process, invoked: e.time, done: None, op: &e.op });
        } else if let Some(i) = open.remove(&e.op_id.0) {
            out[i].done = Some((e.kind, e.time, &e.op));
        } else {
            // An observation: invoked and completed at once.
            out.push(Call { process: &e.process, invoked: e.time, done: Some((e.kind, e.time, &e.op)), op: &e.op });
        }
    }
    out
}

/// A granted lease and what happened to it.
#[derive(Debug)]
struct Lease<'a> {
    name: &'a str,
    process: &'a str,
    token: Option<u64>,
    invoked: Millis,
    done: Millis,
    ttl: Millis,
    /// Extends of this lease (indexes into the calls).
    extends: Vec<usize>,
    /// Releases of this lease.
    releases: Vec<usize>,
    /// End of a keep-alive loop the history cannot see into.
    hidden_until: Option<Millis>,
    /// A cancelled guarded call releases its lease (best effort, not
    /// recorded) from this instant on.
    hidden_release_from: Option<Millis>,
}

struct Model<'a> {
    calls: Vec<Call<'a>>,
    leases: Vec<Lease<'a>>,
    /// Leases by (name, process, token).
    by_key: BTreeMap<(&'a str, &'a str, Option<u64>), usize>,
    /// When requests of unknown outcome have surely landed or been lost.
    settled: Millis,
    /// A restart or clock step happened: refusals are not judged.
    leases_may_end_early: bool,
}

fn ttl_of(op: &Op) -> Millis {
    match op {
        Op::Acquire { ttl_ms, .. } | Op::Extend { ttl_ms, .. } => *ttl_ms,
        _ => 0,
    }
}

impl<'a> Model<'a> {
    fn new(events: &'a [Event]) -> Model<'a> {
        let calls = calls(events);
        let mut settled = 0;
        let mut leases_may_end_early = false;
        for e in events {
            if let Op::Fault(fault) = &e.op {
                settled = settled.max(e.time);
                let step = fault.nemesis();
                if step.is_some_and(|s| s.starts(FaultClass::ServerRestart) || s.starts(FaultClass::ClockStep)) {
                    leases_may_end_early = true;
                }
            }
            // A workload stall or delayed request is a fault too.
            if let Op::Paused { ms, .. } | Op::Delayed { ms, .. } = &e.op {
                settled = settled.max(e.time + ms);
            }
        }
        let mut leases = Vec::new();
        let mut by_key = BTreeMap::new();
        for c in &calls {
            if let (true, Op::Acquire { name, ttl_ms, token, .. }) = (c.ok(), c.result()) {
                by_key.insert((name.as_str(), c.process, *token), leases.len());
                leases.push(Lease {
                    name,
                    process: c.process,
                    token: *token,
                    invoked: c.invoked,
                    done: c.done_at(),
                    ttl: *ttl_ms,
                    extends: Vec::new(),
                    releases: Vec::new(),
                    hidden_until: None,
                    hidden_release_from: None,
                });
            }
        }
        for (i, c) in calls.iter().enumerate() {
            let l = match c.op {
                Op::Extend { name, token, .. } | Op::Release { name, token } => {
                    match by_key.get(&(name.as_str(), c.process, *token)) {
                        Some(&l) => l,
                        None => continue,
                    }
                }
                // A guarded call's lease is the first one its process was
                // granted after invoking it (its token may be unknown when
                // the call failed).
                Op::Guarded { name, .. } => match match c.result() {
                    Op::Guarded { token: Some(t), .. } => {
                        by_key.get(&(name.as_str(), c.process, Some(*t))).map(|&l| (l, ()))
                    }
                    _ => None,
                }
                .or_else(|| {
                    leases
                        .iter()
                        .enumerate()
                        .filter(|(_, l)| {
                            l.name == name && l.process == c.process && l.invoked >= c.invoked && l.done <= c.done_at()
                        })
                        .min_by_key(|(_, l)| l.invoked)
                        .map(|(l, _)| (l, ()))
                }) {
                    Some((l, _)) => l,
                    None => continue,
                },
                _ => continue,
            };
            match c.op {
                Op::Extend { .. } => leases[l].extends.push(i),
                Op::Release { .. } => leases[l].releases.push(i),
                _ => {
                    let end = c.done_at();
                    let h = leases[l].hidden_until.get_or_insert(end);
                    *h = (*h).max(end);
                    let release_from = match c.result() {
                        Op::Guarded { outcome: Some(GuardedResult::Cancelled { at, .. }), .. } => Some(*at),
                        Op::Guarded { outcome: Some(_), .. } if c.ok() => None,
                        _ => Some(c.invoked),
                    };
                    if let Some(r) = release_from {
                        let h = leases[l].hidden_release_from.get_or_insert(r);
                        *h = (*h).min(r);
                    }
                }
            }
        }
        Model { calls, leases, by_key, settled, leases_may_end_early }
    }

    fn lease_of(&self, c: &Call<'a>) -> Option<usize> {
        let (name, token) = match c.op {
            Op::Extend { name, token, .. } | Op::Release { name, token } => (name.as_str(), *token),
            _ => return None,
        };
        self.by_key.get(&(name, c.process, token)).copied()
    }

    /// Latest instant the lease's key may still be visible, ignoring
    /// deletions, using every extend except `skip` invoked before `until`.
    fn alive_max(&self, l: &Lease<'_>, skip: Option<usize>, until: Millis) -> Millis {
        let mut e = l.done.saturating_add(l.ttl);
        if let Some(h) = l.hidden_until {
            e = e.max(h.saturating_add(2 * l.ttl));
        }
        let mut ext: Vec<usize> = l.extends.iter().copied().filter(|&i| Some(i) != skip).collect();
        ext.sort_by_key(|&i| self.calls[i].invoked);
        for i in ext {
            let c = &self.calls[i];
            if c.invoked >= until || c.invoked > e || c.failed() {
                continue;
            }
            let ran_by = if c.ok() { c.done_at().min(e) } else { e };
            e = e.max(ran_by.saturating_add(ttl_of(c.op)));
        }
        e
    }

    /// Earliest instant the lease's key may expire (ignoring deletions), as
    /// seen by an operation invoked at `from` and completed at `until`.
    fn alive_min(&self, l: &Lease<'_>, from: Millis, until: Millis) -> Millis {
        // Confirmed extends completed before `from`: the latest-invoked one
        // ran after every other of them (a holder extends one at a time).
        let confirmed: Vec<usize> =
            l.extends.iter().copied().filter(|&i| self.calls[i].ok() && self.calls[i].done_at() < from).collect();
        let last_confirmed = confirmed.iter().copied().max_by_key(|&i| self.calls[i].invoked);
        let mut m = if last_confirmed.is_some() { Millis::MAX } else { l.invoked.saturating_add(l.ttl) };
        for &i in &l.extends {
            let c = &self.calls[i];
            if c.invoked >= until || c.failed() {
                continue;
            }
            if c.ok() && c.done_at() < from && Some(i) != last_confirmed {
                continue;
            }
            m = m.min(c.invoked.saturating_add(ttl_of(c.op)));
        }
        m
    }

    /// First confirmed deletion of the lease (its release's completion).
    fn released_by(&self, l: &Lease<'_>) -> Millis {
        l.releases.iter().map(|&i| &self.calls[i]).filter(|c| c.ok()).map(Call::done_at).min().unwrap_or(Millis::MAX)
    }

    /// The lease's key is definitely gone at every instant after this.
    fn gone_after(&self, l: &Lease<'_>, until: Millis) -> Millis {
        self.alive_max(l, None, until).min(self.released_by(l))
    }

    /// Some lease was definitely present over all of `[from, until]`.
    fn definitely_held(&self, name: &str, from: Millis, until: Millis, except: Option<usize>) -> Option<&Lease<'a>> {
        if self.leases_may_end_early {
            return None;
        }
        self.leases.iter().enumerate().find_map(|(i, l)| {
            let sent_release = l.releases.iter().any(|&r| self.calls[r].invoked <= until)
                || l.hidden_release_from.is_some_and(|r| r <= until);
            (Some(i) != except
                && l.name == name
                && l.done < from
                && !sent_release
                && until < self.alive_min(l, from, until))
            .then_some(l)
        })
    }

    /// No lease could be present at any instant of `[from, until]`: every
    /// grant is gone before `from`, every unknown acquire has expired.
    fn definitely_free(&self, name: &str, from: Millis, until: Millis, except_call: Option<usize>) -> bool {
        if self.leases_may_end_early {
            return false;
        }
        let leases_gone = self
            .leases
            .iter()
            .filter(|l| l.name == name && l.invoked < until)
            .all(|l| self.gone_after(l, until) < from);
        let unknown_gone = self.calls.iter().enumerate().all(|(i, c)| match c.op {
            Op::Acquire { name: n, ttl_ms, .. }
                if n == name && c.unknown() && Some(i) != except_call && c.invoked < until =>
            {
                let latest_run = c.invoked.saturating_add(SETTLE_MS).max(self.settled.saturating_add(SETTLE_MS));
                latest_run.saturating_add(*ttl_ms) < from
            }
            _ => true,
        });
        leases_gone && unknown_gone
    }
}

fn who(l: &Lease<'_>) -> String {
    format!("{} (token {})", l.process, l.token.map_or_else(|| "none".into(), |t| t.to_string()))
}

/// Whether `process` was frozen (a nemesis client pause, a workload stall)
/// at some point in `[from, to]`.
fn frozen(events: &[Event], process: &str, from: Millis, to: Millis) -> bool {
    let overlaps = |s: Millis, e: Millis| s <= to && e >= from;
    if super::paused(events, process, overlaps) {
        return true;
    }
    let mut paused_at = None;
    for e in events {
        let Op::Fault(fault) = &e.op else { continue };
        if fault.freezes(process) {
            paused_at = Some(e.time);
        } else if fault.resumes(process) {
            if let Some(s) = paused_at.take() {
                if overlaps(s, e.time) {
                    return true;
                }
            }
        }
    }
    paused_at.is_some_and(|s| s <= to)
}

/// Checks every lock reply in `events`.
/// `executions` is the lock server's execution log (rule 7).
pub fn check(events: &[Event], executions: &[Execution]) -> Vec<Violation> {
    check_tokens(events, executions, None)
}

/// As [`check`], for a lock whose tokens are floored by the server's clock
/// (`Tokens::TimeFloored`; the simulation started at `epoch_unix_ms`): a
/// token is at most `max(the previous + 1, the clock)`, so the `k`-th
/// acquire possibly granted by simulated time `t` issued at most
/// `clock(t) + k`, the bound `current_token` is held to.
pub fn check_floored(events: &[Event], executions: &[Execution], epoch_unix_ms: u64) -> Vec<Violation> {
    check_tokens(events, executions, Some(epoch_unix_ms))
}

/// Whether a `Lock` call's definite answer must have come from the server
/// (rule 7): every operation that asks Redis, none that only observes.
fn asks_the_server(op: &Op) -> bool {
    matches!(
        op,
        Op::Acquire { .. } | Op::Extend { .. } | Op::Release { .. } | Op::RemainingTtl { .. } | Op::CurrentToken { .. }
    )
}

fn check_tokens(events: &[Event], executions: &[Execution], floor_epoch_ms: Option<u64>) -> Vec<Violation> {
    let m = Model::new(events);
    let mut out = Vec::new();
    let mut push = |at: Millis, detail: String| out.push(Violation::new(LOCK_REPLIES, Some(at), detail));
    for (ci, c) in m.calls.iter().enumerate() {
        let Some((kind, done, result)) = c.done else { continue };
        // Rule 7. Observations (invoked and answered at once, no request)
        // are not calls.
        let observation = c.invoked == done && std::ptr::eq(c.op, result);
        if matches!(kind, EventKind::Ok | EventKind::Fail) && asks_the_server(c.op) && !observation {
            let ran = executions.iter().any(|x| *x.client == *c.process && x.sim_ms >= c.invoked && x.sim_ms <= done);
            if !ran {
                push(done, format!(
                    "{}: {} answered {} at {done}ms (invoked {}ms), but no request of {} ran at the lock's server in between: the answer did not come from Redis",
                    c.process,
                    c.op.verb(),
                    if kind == EventKind::Ok { "yes" } else { "no" },
                    c.invoked,
                    c.process
                ));
            }
        }
        match (c.op, kind) {
            (Op::Extend { .. } | Op::Release { .. }, EventKind::Ok | EventKind::Fail) => {
                let verb = c.op.verb();
                let Some(li) = m.lease_of(c) else { continue };
                let l = &m.leases[li];
                if kind == EventKind::Ok {
                    let alive = m.alive_max(l, Some(ci), c.invoked);
                    if c.invoked > alive {
                        push(done, format!(
                            "{verb} of {} invoked at {}ms returned true, but the key had expired by {alive}ms at the latest: the script resurrected or touched a dead lease",
                            who(l), c.invoked
                        ));
                        continue;
                    }
                    let released = m.released_by(l);
                    if released < c.invoked {
                        push(done, format!(
                            "{verb} of {} invoked at {}ms returned true after its release was confirmed at {released}ms",
                            who(l), c.invoked
                        ));
                        continue;
                    }
                    if let Some(other) = m.leases.iter().find(|o| {
                        o.name == l.name && o.process != l.process && o.invoked > l.done && o.done < c.invoked
                    }) {
                        push(done, format!(
                            "{verb} of {} invoked at {}ms returned true, but {} had been granted the lock at {}ms (invoked after this lease was set): it acted on someone else's lease",
                            who(l), c.invoked, who(other), other.done
                        ));
                    }
                } else if !m.leases_may_end_early {
                    let sent_release = l.releases.iter().any(|&r| r != ci && m.calls[r].invoked <= done);
                    let min = m.alive_min(l, c.invoked, done);
                    if !sent_release && done < min {
                        push(done, format!(
                            "{verb} of {} was refused at {done}ms (invoked {}ms), but the lease was still its own until at least {min}ms",
                            who(l), c.invoked
                        ));
                    }
                }
            }
            (Op::Acquire { name, .. }, EventKind::Fail) if m.definitely_free(name, c.invoked, done, Some(ci)) => {
                push(done, format!(
                    "{}: acquire of {name} refused over [{}ms, {done}ms] while the lock was definitely free (every earlier lease expired or released)",
                    c.process, c.invoked
                ));
            }
            (Op::Acquire { name, .. }, EventKind::Ok) => {
                let me = m.by_key.get(&(
                    name.as_str(),
                    c.process,
                    match result {
                        Op::Acquire { token, .. } => *token,
                        _ => None,
                    },
                ));
                if let Some(l) = m.definitely_held(name, c.invoked, done, me.copied()) {
                    push(
                        done,
                        format!(
                            "{}: acquire of {name} granted over [{}ms, {done}ms] while {} definitely held it",
                            c.process,
                            c.invoked,
                            who(l)
                        ),
                    );
                }
            }
            (Op::CurrentToken { name, .. }, EventKind::Ok) => {
                if m.leases_may_end_early {
                    continue;
                }
                let Op::CurrentToken { token, .. } = result else { continue };
                let v = token.unwrap_or(0);
                // A grant answered by the millisecond the read was sent ran
                // at the server before it: its reply was on its way back
                // while the read had not left yet.
                let before: Vec<&Lease<'_>> =
                    m.leases.iter().filter(|l| l.name == name && l.done <= c.invoked).collect();
                let lower = (before.len() as u64).max(before.iter().filter_map(|l| l.token).max().unwrap_or(0));
                let upper = m
                    .calls
                    .iter()
                    .filter(|a| {
                        matches!(a.op, Op::Acquire { name: n, .. } if n == name) && !a.failed() && a.invoked <= done
                    })
                    .count() as u64;
                let upper = match floor_epoch_ms {
                    Some(epoch) => (epoch + done) * 1000 + upper,
                    None => upper,
                };
                if v < lower || v > upper {
                    push(done, format!(
                        "{}: current_token of {name} read {v} over [{}ms, {done}ms], outside [{lower}, {upper}] (grants completed before / acquires possibly granted by then)",
                        c.process, c.invoked
                    ));
                }
            }
            (Op::RemainingTtl { name, .. }, EventKind::Ok) => {
                let Op::RemainingTtl { ms, .. } = result else { continue };
                match ms {
                    Some(ms) => {
                        let max_ttl = m
                            .calls
                            .iter()
                            .filter(|a| {
                                matches!(a.op, Op::Acquire { name: n, .. } | Op::Extend { name: n, .. } if n == name)
                                    && a.invoked <= done
                            })
                            .map(|a| ttl_of(a.op))
                            .max()
                            .unwrap_or(0);
                        if *ms > max_ttl {
                            push(done, format!(
                                "{}: remaining_ttl of {name} is {ms}ms at {done}ms, more than any TTL requested so far ({max_ttl}ms)",
                                c.process
                            ));
                        } else if let Some(l) = m.definitely_held(name, c.invoked, done, None) {
                            // The one lease present throughout: its key
                            // expires within [alive_min, alive_max], read at
                            // some instant of [invoke, done] (PTTL truncates
                            // to the millisecond).
                            let (low, high) = (
                                m.alive_min(l, c.invoked, done).saturating_sub(done + 1),
                                m.alive_max(l, None, done).saturating_sub(c.invoked) + 1,
                            );
                            if *ms < low || *ms > high {
                                push(done, format!(
                                    "{}: remaining_ttl of {name} is {ms}ms over [{}ms, {done}ms], but {}'s lease was present throughout and expires {low}..={high}ms after the read",
                                    c.process, c.invoked, who(l)
                                ));
                            }
                        } else if m.definitely_free(name, c.invoked, done, None) {
                            push(done, format!(
                                "{}: remaining_ttl of {name} is {ms}ms over [{}ms, {done}ms] while the lock was definitely free",
                                c.process, c.invoked
                            ));
                        }
                    }
                    None => {
                        if let Some(l) = m.definitely_held(name, c.invoked, done, None) {
                            push(done, format!(
                                "{}: remaining_ttl of {name} says not held over [{}ms, {done}ms] while {} definitely held it",
                                c.process, c.invoked, who(l)
                            ));
                        }
                    }
                }
            }
            (Op::Retry { name, attempts, deadline_ms, backoff_ms, .. }, EventKind::Ok | EventKind::Fail) => {
                let inner: Vec<&Call<'_>> = m
                    .calls
                    .iter()
                    .filter(|a| {
                        a.process == c.process
                            && matches!(a.op, Op::Acquire { name: n, .. } if n == name)
                            && a.invoked >= c.invoked
                            && a.done_at() <= done
                    })
                    .collect();
                if inner.is_empty() {
                    push(done, format!(
                        "{}: Retry::run on {name} returned at {done}ms without an attempt (the first is always made; a deadline counts from it)",
                        c.process
                    ));
                }
                if kind == EventKind::Fail && deadline_ms.is_none() && (inner.len() as u32) < *attempts {
                    push(done, format!(
                        "{}: Retry::run gave up on {name} at {done}ms after {} of its {attempts} attempts (no deadline set)",
                        c.process,
                        inner.len()
                    ));
                }
                if kind == EventKind::Ok {
                    let Op::Retry { token, .. } = result else { continue };
                    let last = inner.last().map(|a| match a.result() {
                        Op::Acquire { token, .. } if a.ok() => *token,
                        _ => None,
                    });
                    if last != Some(*token) {
                        push(
                            done,
                            format!(
                            "{}: Retry::run reported token {:?} at {done}ms, but its last attempt was not that grant",
                            c.process, token
                        ),
                        );
                    }
                }
                // When it returns: at once after its last attempt (it never
                // sleeps after the last one), and with a deadline, never an
                // attempt past it. Only a freeze of the caller excuses a late
                // return (its sleep or reply then ends late).
                if let Some(last) = inner.last() {
                    let late = done > last.done_at().saturating_add(1);
                    let past = deadline_ms.is_none_or(|d| done > (c.invoked + d).max(last.done_at()) + 1);
                    if late && past && !frozen(events, c.process, last.done_at(), done) {
                        push(done, format!(
                            "{}: Retry::run returned at {done}ms, {}ms after its last attempt ended at {}ms{} (it may only sleep before another attempt)",
                            c.process,
                            done - last.done_at(),
                            last.done_at(),
                            deadline_ms.map_or(String::new(), |d| format!(" and past its {d} ms deadline at {}ms", c.invoked + d))
                        ));
                    }
                }
                if let Some(d) = deadline_ms {
                    // The policy's clock starts when `run` is called, in
                    // the millisecond of its invoke, and counts whole
                    // simulated milliseconds: an attempt at `invoke + d`
                    // already starts at the deadline.
                    if let Some(a) = inner.iter().skip(1).find(|a| a.invoked >= c.invoked + d) {
                        push(
                            done,
                            format!(
                                "{}: Retry::run with a {d} ms deadline from {}ms started an attempt at {}ms, at or past it",
                                c.process, c.invoked, a.invoked
                            ),
                        );
                    }
                }
                // Each sleep between two attempts is at most its cap: the
                // base doubled per attempt so far, never above the maximum
                // (the sleep is the whole gap: an attempt is recorded from
                // its send to its answer). Only a freeze of the caller
                // stretches one.
                if let Some((base, max)) = backoff_ms {
                    for (n, pair) in inner.windows(2).enumerate() {
                        let cap = base.saturating_mul(1u64 << n.min(16)).min(*max);
                        let (ended, next) = (pair[0].done_at(), pair[1].invoked);
                        if next > ended + cap + 1 && !frozen(events, c.process, ended, next) {
                            push(done, format!(
                                "{}: Retry::run slept {}ms between its attempts {} and {} on {name} ({ended}ms to {next}ms), more than its cap of {cap}ms (base {base}ms doubled per attempt, at most {max}ms)",
                                c.process,
                                next - ended,
                                n + 1,
                                n + 2
                            ));
                            break;
                        }
                    }
                }
                if inner.len() as u32 > *attempts {
                    push(
                        done,
                        format!("{}: Retry::run made {} attempts, more than {attempts}", c.process, inner.len()),
                    );
                }
                // A completed attempt recorded as unknown failed with an
                // error: the policy stops there and returns it.
                if let Some((n, a)) =
                    inner.iter().enumerate().find(|(_, a)| matches!(a.done, Some((EventKind::Info, ..))))
                {
                    push(done, format!(
                        "{}: Retry::run on {name} answered {} at {done}ms, but its attempt {} failed with an error at {}ms: an error ends the retry and is returned",
                        c.process,
                        if kind == EventKind::Ok { "a grant" } else { "that it gave up" },
                        n + 1,
                        a.done_at()
                    ));
                }
            }
            _ => {}
        }
    }
    super::capped(out, LOCK_REPLIES)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::History;

    /// Every call's request ran at the server when it was sent (rule 7's
    /// input for the tests of the other rules).
    fn served(events: &[Event]) -> Vec<Execution> {
        events
            .iter()
            .filter(|e| e.kind == EventKind::Invoke)
            .map(|e| Execution {
                client: e.process.as_str().into(),
                command: "EVALSHA".into(),
                key: None,
                server_unix_ms: e.time,
                sim_ms: e.time,
                taken_ms: e.time,
                held_ms: 0,
            })
            .collect()
    }

    fn check(events: &[Event]) -> Vec<Violation> {
        super::check(events, &served(events))
    }

    #[test]
    fn an_answer_no_request_produced_fails() {
        let h = History::new();
        acq(&h, "a", 0, 2, Some(1));
        rel(&h, "a", 30, 280, 1, EventKind::Fail);
        let events = h.events();
        // The release's request never ran (it timed out unsent): only the
        // acquire's did.
        let only_acquire: Vec<Execution> = served(&events).into_iter().filter(|x| x.sim_ms == 0).collect();
        let v = super::check(&events, &only_acquire);
        assert!(v.iter().any(|v| v.detail.contains("did not come from Redis")), "{v:?}");
        // Run late, after the answer: still not where the answer came from.
        let mut late = only_acquire.clone();
        late.push(Execution { sim_ms: 281, ..served(&events)[1].clone() });
        assert!(super::check(&events, &late).iter().any(|v| v.detail.contains("did not come from Redis")));
        // Run inside the call: the refusal is judged by the other rules only.
        let v = check(&events);
        assert!(v.iter().all(|v| !v.detail.contains("did not come from Redis")), "{v:?}");
    }

    #[test]
    fn a_remaining_time_is_bounded_by_the_lease_present() {
        let h = History::new();
        acq(&h, "a", 0, 2, Some(1));
        let rt = |h: &History, t, v| {
            let id = h.invoke_at(t, "r", Op::RemainingTtl { name: "l".into(), ms: None });
            h.ok(id, "r", Op::RemainingTtl { name: "l".into(), ms: v });
        };
        rt(&h, 10, Some(89));
        rt(&h, 20, Some(83));
        assert_eq!(check(&h.events()), vec![]);
        // Rounded to whole seconds: 0 while ~60 ms are left.
        rt(&h, 40, Some(0));
        let v = check(&h.events());
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].detail.contains("expires 59..=63ms after the read"), "{v:?}");
    }

    fn acq(h: &History, p: &str, t0: u64, t1: u64, token: Option<u64>) {
        let op = |token| Op::Acquire { name: "l".into(), ttl_ms: 100, token, deadline: None };
        let id = h.invoke_at(t0, p, op(None));
        let kind = if token.is_some() { EventKind::Ok } else { EventKind::Fail };
        h.complete_at(t1, id, p, kind, op(token));
    }

    fn ext(h: &History, p: &str, t0: u64, t1: u64, token: u64, kind: EventKind) {
        let op = Op::Extend { name: "l".into(), token: Some(token), ttl_ms: 100, deadline: None };
        let id = h.invoke_at(t0, p, op.clone());
        h.complete_at(t1, id, p, kind, op);
    }

    fn rel(h: &History, p: &str, t0: u64, t1: u64, token: u64, kind: EventKind) {
        let op = Op::Release { name: "l".into(), token: Some(token) };
        let id = h.invoke_at(t0, p, op.clone());
        h.complete_at(t1, id, p, kind, op);
    }

    #[test]
    fn justified_replies_pass() {
        let h = History::new();
        acq(&h, "a", 0, 2, Some(1));
        acq(&h, "b", 10, 12, None); // held by a
        ext(&h, "a", 50, 52, 1, EventKind::Ok); // alive until >= 150
        acq(&h, "b", 140, 142, None); // still held
        ext(&h, "a", 300, 302, 1, EventKind::Fail); // expired by 152
        rel(&h, "a", 310, 312, 1, EventKind::Fail);
        acq(&h, "b", 320, 322, Some(2));
        rel(&h, "b", 330, 331, 2, EventKind::Ok);
        acq(&h, "c", 340, 342, Some(3));
        assert_eq!(check(&h.events()), vec![]);
    }

    #[test]
    fn extending_someone_elses_lease_fails() {
        let h = History::new();
        acq(&h, "a", 0, 2, Some(1));
        acq(&h, "b", 200, 202, Some(2));
        ext(&h, "a", 210, 212, 1, EventKind::Ok);
        let v = check(&h.events());
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].detail.contains("expired by"), "{v:?}");
    }

    #[test]
    fn a_refused_extend_of_a_live_lease_fails() {
        let h = History::new();
        acq(&h, "a", 0, 2, Some(1));
        ext(&h, "a", 30, 32, 1, EventKind::Fail);
        let v = check(&h.events());
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].detail.contains("still its own until at least 100ms"), "{v:?}");
    }

    #[test]
    fn releasing_after_a_takeover_fails() {
        let h = History::new();
        acq(&h, "a", 0, 2, Some(1));
        rel(&h, "a", 10, 11, 1, EventKind::Ok);
        acq(&h, "b", 20, 22, Some(2));
        rel(&h, "a", 30, 31, 1, EventKind::Ok); // a second "true" for a deleted lease
        let v = check(&h.events());
        assert_eq!(v.len(), 1, "{v:?}");
    }

    #[test]
    fn refusing_a_free_lock_fails_but_not_with_an_unknown_acquire() {
        let h = History::new();
        acq(&h, "a", 0, 2, Some(1));
        acq(&h, "b", 150, 152, None); // a's lease expired at 102 at the latest
        let v = check(&h.events());
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].detail.contains("definitely free"), "{v:?}");

        let h = History::new();
        let op = |token| Op::Acquire { name: "l".into(), ttl_ms: 100, token, deadline: None };
        let id = h.invoke_at(0, "a", op(None));
        h.complete_at(250, id, "a", EventKind::Info, op(None));
        acq(&h, "b", 300, 302, None); // a's request may have landed late
        assert_eq!(check(&h.events()), vec![]);
    }

    #[test]
    fn granting_a_held_lock_fails() {
        let h = History::new();
        acq(&h, "a", 0, 2, Some(1));
        acq(&h, "b", 10, 12, Some(2));
        let v = check(&h.events());
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].detail.contains("definitely held"), "{v:?}");
    }

    #[test]
    fn current_token_and_remaining_ttl_are_bounded() {
        let h = History::new();
        acq(&h, "a", 0, 2, Some(1));
        let ct = |h: &History, t, v| {
            let id = h.invoke_at(t, "r", Op::CurrentToken { name: "l".into(), token: None });
            h.ok(id, "r", Op::CurrentToken { name: "l".into(), token: v });
        };
        let rt = |h: &History, t, v| {
            let id = h.invoke_at(t, "r", Op::RemainingTtl { name: "l".into(), ms: None });
            h.ok(id, "r", Op::RemainingTtl { name: "l".into(), ms: v });
        };
        ct(&h, 5, Some(1));
        rt(&h, 10, Some(92));
        assert_eq!(check(&h.events()), vec![]);
        ct(&h, 20, Some(3)); // only one acquire ever
        rt(&h, 30, Some(1000)); // more than any TTL
        rt(&h, 40, None); // a still holds it
        let v = check(&h.events());
        assert_eq!(v.len(), 3, "{v:?}");
    }

    #[test]
    fn a_current_token_sent_in_the_millisecond_a_grant_was_answered_sees_it() {
        let read_at_2 = |v| {
            let h = History::new();
            acq(&h, "a", 0, 2, Some(1));
            let id = h.invoke_at(2, "a", Op::CurrentToken { name: "l".into(), token: None });
            h.ok(id, "a", Op::CurrentToken { name: "l".into(), token: v });
            check(&h.events()).len()
        };
        assert_eq!(read_at_2(Some(1)), 0);
        assert_eq!(read_at_2(None), 1, "the grant of 1 ran before the read was sent");
    }

    #[test]
    fn a_retry_that_gives_up_early_fails() {
        let h = History::new();
        let op = |token| Op::Retry { name: "l".into(), attempts: 3, deadline_ms: None, token, backoff_ms: None };
        let id = h.invoke_at(0, "a", op(None));
        acq(&h, "a", 0, 2, None);
        acq(&h, "a", 10, 12, None);
        h.complete_at(13, id, "a", EventKind::Fail, op(None));
        // b holds the lock throughout, so the refusals are fine.
        let h2 = History::from_events([acq_ok_event()].into_iter().chain(h.events()).collect::<Vec<_>>());
        let v = check(&h2.events());
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].detail.contains("after 2 of its 3 attempts"), "{v:?}");
    }

    #[test]
    fn a_retry_that_goes_on_past_an_error_fails() {
        let op = |token| Op::Retry { name: "l".into(), attempts: 3, deadline_ms: None, token, backoff_ms: None };
        let run = |errored: bool| {
            let h = History::new();
            let id = h.invoke_at(0, "a", op(None));
            let first = Op::Acquire { name: "l".into(), ttl_ms: 100, token: None, deadline: None };
            let a = h.invoke_at(0, "a", first.clone());
            if errored {
                // Timed out: recorded as unknown; the retry went on.
                h.complete_at(250, a, "a", EventKind::Info, first);
                acq(&h, "a", 255, 257, Some(1));
            } else {
                h.complete_at(
                    257,
                    a,
                    "a",
                    EventKind::Ok,
                    Op::Acquire { name: "l".into(), ttl_ms: 100, token: Some(1), deadline: None },
                );
            }
            h.complete_at(257, id, "a", EventKind::Ok, op(Some(1)));
            check(&h.events())
        };
        assert_eq!(run(false), vec![]);
        let v = run(true);
        assert!(v.iter().any(|v| v.detail.contains("its attempt 1 failed with an error at 250ms")), "{v:?}");
    }

    #[test]
    fn a_retry_that_sleeps_past_its_backoff_cap_fails() {
        // Base 5 ms, at most 12 ms: caps 5, 10, 12, 12.
        let op =
            |token| Op::Retry { name: "l".into(), attempts: 5, deadline_ms: None, token, backoff_ms: Some((5, 12)) };
        let run = |gaps: [u64; 4], paused: bool| {
            let h = History::new();
            let id = h.invoke_at(0, "a", op(None));
            let mut t = 0;
            for (i, gap) in std::iter::once(0).chain(gaps).enumerate() {
                t += gap;
                if paused && i == 4 {
                    h.observe_at(t - 1, "a", Op::Paused { ms: 1, context: "gc".into() });
                }
                acq(&h, "a", t, t + 2, None);
                t += 2;
            }
            h.complete_at(t, id, "a", EventKind::Fail, op(None));
            let h2 = History::from_events([acq_ok_event()].into_iter().chain(h.events()).collect::<Vec<_>>());
            check(&h2.events())
        };
        assert_eq!(run([5, 10, 12, 13], false), vec![]); // one tick of slack
        let v = run([5, 10, 12, 30], false);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].detail.contains("slept 30ms between its attempts 4 and 5"), "{v:?}");
        assert!(v[0].detail.contains("cap of 12ms"), "{v:?}");
        assert_eq!(run([5, 10, 12, 30], true), vec![]); // paused in that sleep
        assert_eq!(run([6, 10, 12, 12], false).len(), 0); // 5 + 1 tick
        assert_eq!(run([7, 10, 12, 12], false).len(), 1);
    }

    #[test]
    fn a_retry_that_sleeps_past_its_deadline_fails() {
        let op = |token| Op::Retry { name: "l".into(), attempts: 5, deadline_ms: Some(50), token, backoff_ms: None };
        let run = |give_up_at: u64| {
            let h = History::new();
            let id = h.invoke_at(0, "a", op(None));
            acq(&h, "a", 0, 2, None);
            acq(&h, "a", 30, 32, None);
            h.complete_at(give_up_at, id, "a", EventKind::Fail, op(None));
            let h2 = History::from_events([acq_ok_event()].into_iter().chain(h.events()).collect::<Vec<_>>());
            check(&h2.events())
        };
        // Gave up at once after the last attempt: fine.
        assert_eq!(run(32), vec![]);
        // Slept 40 ms after it, past the deadline at 50 ms.
        let v = run(72);
        assert!(v.len() == 1 && v[0].detail.contains("past its 50 ms deadline"), "{v:?}");
    }

    #[test]
    fn an_attempt_at_or_past_the_deadline_fails() {
        let op = |token| Op::Retry { name: "l".into(), attempts: 5, deadline_ms: Some(50), token, backoff_ms: None };
        let run = |second: u64| {
            let h = History::new();
            let id = h.invoke_at(0, "a", op(None));
            acq(&h, "a", 0, 2, None);
            acq(&h, "a", second, second + 2, None);
            h.complete_at(second + 2, id, "a", EventKind::Fail, op(None));
            let h2 = History::from_events([acq_ok_event()].into_iter().chain(h.events()).collect::<Vec<_>>());
            check(&h2.events())
        };
        let v = run(60);
        assert!(v.len() == 1 && v[0].detail.contains("started an attempt at 60ms, at or past it"), "{v:?}");
        // At the deadline's own millisecond: the policy has run out.
        assert_eq!(run(50).len(), 1);
        assert_eq!(run(49), vec![]);
    }

    fn acq_ok_event() -> Event {
        Event {
            index: 0,
            time: 0,
            process: "b".into(),
            kind: EventKind::Ok,
            op_id: crate::history::OpId(1000),
            op: Op::Acquire { name: "l".into(), ttl_ms: 100, token: Some(9), deadline: None },
            api: None,
        }
    }
}
