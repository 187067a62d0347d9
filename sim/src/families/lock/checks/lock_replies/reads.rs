//! Rules 4 and 5: the reads of a lock's state (`current_token`,
//! `remaining_ttl`) lie within what the grants and leases of the history
//! allow at the time of the read.

use super::model::{ttl_of, who, Lease, Model};
use super::{report, Reply};
use crate::checker::Violation;
use crate::families::lock::op::LockOp;

/// Rule 4: `current_token` lies between the grants completed before it was
/// invoked (and the highest such token) and the acquires (granted or
/// unknown) invoked before it completed; for a lock whose tokens are
/// floored by the clock (`floor_epoch_ms`), the clock's reading plus those.
pub(super) fn current_token(
    m: &Model<'_>,
    r: &Reply<'_, '_>,
    name: &str,
    floor_epoch_ms: Option<u64>,
    out: &mut Vec<Violation>,
) {
    let (c, done) = (r.call, r.done);
    if m.leases_may_end_early {
        return;
    }
    let LockOp::CurrentToken { token, .. } = r.result else { return };
    let v = token.unwrap_or(0);
    // A grant answered by the millisecond the read was sent ran
    // at the server before it: its reply was on its way back
    // while the read had not left yet.
    let before: Vec<&Lease<'_>> = m.leases.iter().filter(|l| l.name == name && l.done <= c.invoked).collect();
    let lower = (before.len() as u64).max(before.iter().filter_map(|l| l.token).max().unwrap_or(0));
    let upper = m
        .calls
        .iter()
        .filter(|a| matches!(a.op, LockOp::Acquire { name: n, .. } if n == name) && !a.failed() && a.invoked <= done)
        .count() as u64;
    let upper = match floor_epoch_ms {
        Some(epoch) => (epoch + done) * 1000 + upper,
        None => upper,
    };
    if v < lower || v > upper {
        report(out, done, format!(
            "{}: current_token of {name} read {v} over [{}ms, {done}ms], outside [{lower}, {upper}] (grants completed before / acquires possibly granted by then)",
            c.process, c.invoked
        ));
    }
}

/// Rule 5: `remaining_ttl`, a time or `None`.
pub(super) fn remaining_ttl(m: &Model<'_>, r: &Reply<'_, '_>, name: &str, out: &mut Vec<Violation>) {
    let LockOp::RemainingTtl { ms, .. } = r.result else { return };
    match ms {
        Some(ms) => remaining_time(m, r, name, *ms, out),
        None => not_held(m, r, name, out),
    }
}

/// A remaining time never exceeds the largest TTL requested so far, lies
/// within the bounds of the lease definitely present throughout the read,
/// and is not read while the lock was definitely free.
fn remaining_time(m: &Model<'_>, r: &Reply<'_, '_>, name: &str, ms: u64, out: &mut Vec<Violation>) {
    let (c, done) = (r.call, r.done);
    let max_ttl = m
        .calls
        .iter()
        .filter(|a| {
            matches!(a.op, LockOp::Acquire { name: n, .. } | LockOp::Extend { name: n, .. } if n == name)
                && a.invoked <= done
        })
        .map(|a| ttl_of(a.op))
        .max()
        .unwrap_or(0);
    if ms > max_ttl {
        report(
            out,
            done,
            format!(
                "{}: remaining_ttl of {name} is {ms}ms at {done}ms, more than any TTL requested so far ({max_ttl}ms)",
                c.process
            ),
        );
    } else if let Some(l) = m.definitely_held(name, c.invoked, done, None) {
        // The one lease present throughout: its key
        // expires within [alive_min, alive_max], read at
        // some instant of [invoke, done] (PTTL truncates
        // to the millisecond).
        let (low, high) = (
            m.alive_min(l, c.invoked, done).saturating_sub(done + 1),
            m.alive_max(l, None, done).saturating_sub(c.invoked) + 1,
        );
        if ms < low || ms > high {
            report(out, done, format!(
                "{}: remaining_ttl of {name} is {ms}ms over [{}ms, {done}ms], but {}'s lease was present throughout and expires {low}..={high}ms after the read",
                c.process, c.invoked, who(l)
            ));
        }
    } else if m.definitely_free(name, c.invoked, done, None) {
        report(
            out,
            done,
            format!(
                "{}: remaining_ttl of {name} is {ms}ms over [{}ms, {done}ms] while the lock was definitely free",
                c.process, c.invoked
            ),
        );
    }
}

/// `None` (not held) while a lease was definitely present throughout.
fn not_held(m: &Model<'_>, r: &Reply<'_, '_>, name: &str, out: &mut Vec<Violation>) {
    let (c, done) = (r.call, r.done);
    if let Some(l) = m.definitely_held(name, c.invoked, done, None) {
        report(
            out,
            done,
            format!(
                "{}: remaining_ttl of {name} says not held over [{}ms, {done}ms] while {} definitely held it",
                c.process,
                c.invoked,
                who(l)
            ),
        );
    }
}
