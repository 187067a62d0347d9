//! Rule 6: `Retry::run`, judged on the acquires it made. How many attempts
//! it made and which answer it reports, and when: the sleeps between
//! attempts, the deadline, the return right after the last attempt.

use super::model::{Call, Model};
use super::{report, Reply};
use crate::checker::Violation;
use crate::families::lock::invariants::LOCK_REPLIES;
use crate::families::lock::op::LockOp;
use crate::history::{Event, EventKind, Millis, Op};

/// The policy a `Retry::run` was given, as the history records it.
struct Policy<'a> {
    name: &'a str,
    attempts: u32,
    deadline_ms: Option<Millis>,
    /// `(base, max)` of its backoff, when recorded.
    backoff_ms: Option<(Millis, Millis)>,
}

/// Every step of rule 6 for one completed `Retry::run`.
pub(super) fn judge(events: &[Event], m: &Model<'_>, r: &Reply<'_, '_>, out: &mut Vec<Violation>) {
    let LockOp::Retry { name, attempts, deadline_ms, backoff_ms, .. } = r.call.op else { return };
    let p = Policy { name, attempts: *attempts, deadline_ms: *deadline_ms, backoff_ms: *backoff_ms };
    let inner = attempts_of(m, r, p.name);
    made_its_attempts(r, &p, &inner, out);
    if r.kind == EventKind::Ok {
        let LockOp::Retry { token, .. } = r.result else { return };
        reported_its_last_grant(r, *token, &inner, out);
    }
    returned_at_once(events, r, &p, &inner, out);
    stopped_at_its_deadline(r, &p, &inner, out);
    slept_within_its_backoff(events, r, &p, &inner, out);
    stopped_when_due(r, &p, &inner, out);
}

/// The acquires of `name` the caller made inside the call: its attempts.
fn attempts_of<'m, 'a>(m: &'m Model<'a>, r: &Reply<'_, '_>, name: &str) -> Vec<&'m Call<'a>> {
    let (c, done) = (r.call, r.done);
    m.calls
        .iter()
        .filter(|a| {
            a.process == c.process
                && matches!(a.op, LockOp::Acquire { name: n, .. } if n == name)
                && a.invoked >= c.invoked
                && a.done_at() <= done
        })
        .collect()
}

/// The first attempt is always made, and with no deadline it gives up only
/// after all of them.
fn made_its_attempts(r: &Reply<'_, '_>, p: &Policy<'_>, inner: &[&Call<'_>], out: &mut Vec<Violation>) {
    let (c, done, name, attempts) = (r.call, r.done, p.name, p.attempts);
    if inner.is_empty() {
        report(out, done, format!(
            "{}: Retry::run on {name} returned at {done}ms without an attempt (the first is always made; a deadline counts from it)",
            c.process
        ));
    }
    if r.kind == EventKind::Fail && p.deadline_ms.is_none() && (inner.len() as u32) < attempts {
        report(
            out,
            done,
            format!(
                "{}: Retry::run gave up on {name} at {done}ms after {} of its {attempts} attempts (no deadline set)",
                c.process,
                inner.len()
            ),
        );
    }
}

/// A grant it reports is its last attempt's.
fn reported_its_last_grant(r: &Reply<'_, '_>, token: Option<u64>, inner: &[&Call<'_>], out: &mut Vec<Violation>) {
    let (c, done) = (r.call, r.done);
    let last = inner.last().map(|a| match a.result() {
        LockOp::Acquire { token, .. } if a.ok() => *token,
        _ => None,
    });
    if last != Some(token) {
        report(
            out,
            done,
            format!(
                "{}: Retry::run reported token {:?} at {done}ms, but its last attempt was not that grant",
                c.process, token
            ),
        );
    }
}

/// When it returns: at once after its last attempt (it never sleeps after
/// the last one), or by its deadline. Only a freeze of the caller excuses a
/// late return (its sleep or reply then ends late).
fn returned_at_once(
    events: &[Event],
    r: &Reply<'_, '_>,
    p: &Policy<'_>,
    inner: &[&Call<'_>],
    out: &mut Vec<Violation>,
) {
    let (c, done) = (r.call, r.done);
    let Some(last) = inner.last() else { return };
    let late = done > last.done_at().saturating_add(1);
    let past = p.deadline_ms.is_none_or(|d| done > (c.invoked + d).max(last.done_at()) + 1);
    if late && past && !frozen(events, c.process, last.done_at(), done) {
        report(out, done, format!(
            "{}: Retry::run returned at {done}ms, {}ms after its last attempt ended at {}ms{} (it may only sleep before another attempt)",
            c.process,
            done - last.done_at(),
            last.done_at(),
            p.deadline_ms.map_or(String::new(), |d| format!(" and past its {d} ms deadline at {}ms", c.invoked + d))
        ));
    }
}

/// With a deadline, never an attempt (after the first) at or past it.
fn stopped_at_its_deadline(r: &Reply<'_, '_>, p: &Policy<'_>, inner: &[&Call<'_>], out: &mut Vec<Violation>) {
    let (c, done) = (r.call, r.done);
    let Some(d) = p.deadline_ms else { return };
    // The policy's clock starts when `run` is called, in
    // the millisecond of its invoke, and counts whole
    // simulated milliseconds: an attempt at `invoke + d`
    // already starts at the deadline.
    if let Some(a) = inner.iter().skip(1).find(|a| a.invoked >= c.invoked + d) {
        report(
            out,
            done,
            format!(
                "{}: Retry::run with a {d} ms deadline from {}ms started an attempt at {}ms, at or past it",
                c.process, c.invoked, a.invoked
            ),
        );
    }
}

/// Each sleep between two attempts is at most its cap: the base doubled
/// per attempt so far, never above the maximum (the sleep is the whole gap:
/// an attempt is recorded from its send to its answer). Only a freeze of
/// the caller stretches one. The first sleep past its cap is reported.
fn slept_within_its_backoff(
    events: &[Event],
    r: &Reply<'_, '_>,
    p: &Policy<'_>,
    inner: &[&Call<'_>],
    out: &mut Vec<Violation>,
) {
    let (c, done, name) = (r.call, r.done, p.name);
    let Some((base, max)) = p.backoff_ms else { return };
    for (n, pair) in inner.windows(2).enumerate() {
        let cap = base.saturating_mul(1u64 << n.min(16)).min(max);
        let (ended, next) = (pair[0].done_at(), pair[1].invoked);
        if next > ended + cap + 1 && !frozen(events, c.process, ended, next) {
            let detail = format!(
                "{}: Retry::run slept {}ms between its attempts {} and {} on {name} ({ended}ms to {next}ms), more than its cap of {cap}ms (base {base}ms doubled per attempt, at most {max}ms)",
                c.process,
                next - ended,
                n + 1,
                n + 2
            );
            out.push(Violation::new(LOCK_REPLIES, Some(done), detail).missed_by_ms(next - ended - cap - 1));
            break;
        }
    }
}

/// It stops at its number of attempts, and at the first attempt that
/// failed with an error (an error is not a refusal: the policy returns it).
fn stopped_when_due(r: &Reply<'_, '_>, p: &Policy<'_>, inner: &[&Call<'_>], out: &mut Vec<Violation>) {
    let (c, done, name, attempts) = (r.call, r.done, p.name, p.attempts);
    if inner.len() as u32 > attempts {
        report(out, done, format!("{}: Retry::run made {} attempts, more than {attempts}", c.process, inner.len()));
    }
    // A completed attempt recorded as unknown failed with an
    // error: the policy stops there and returns it.
    if let Some((n, a)) = inner.iter().enumerate().find(|(_, a)| matches!(a.done, Some((EventKind::Info, ..)))) {
        report(out, done, format!(
            "{}: Retry::run on {name} answered {} at {done}ms, but its attempt {} failed with an error at {}ms: an error ends the retry and is returned",
            c.process,
            if r.kind == EventKind::Ok { "a grant" } else { "that it gave up" },
            n + 1,
            a.done_at()
        ));
    }
}

/// Whether `process` was frozen (a nemesis client pause, a workload stall)
/// at some point in `[from, to]`.
fn frozen(events: &[Event], process: &str, from: Millis, to: Millis) -> bool {
    let overlaps = |s: Millis, e: Millis| s <= to && e >= from;
    if crate::checker::paused(events, process, overlaps) {
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
