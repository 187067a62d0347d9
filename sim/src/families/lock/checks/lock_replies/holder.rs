//! Rules 1 and 2: what the holder's own calls on its lease (`extend`,
//! `release`) may answer. True only if the key could still be ours; false
//! only if it could be gone.

use super::model::{who, Model};
use super::{report, Reply};
use crate::checker::Violation;
use crate::families::lock::op::LockOp;
use crate::history::Operation;

/// Rule 1: `extend`/`release` returned true, so the lease could still be
/// the caller's: not expired, not released, not granted to another since.
pub(super) fn confirmed(m: &Model<'_>, r: &Reply<'_, '_>, out: &mut Vec<Violation>) {
    let (c, done) = (r.call, r.done);
    let verb = c.op.verb();
    let Some(li) = m.lease_of(c) else { return };
    let l = &m.leases[li];
    let alive = m.alive_max(l, Some(r.index), c.invoked);
    if c.invoked > alive {
        report(out, done, format!(
            "{verb} of {} invoked at {}ms returned true, but the key had expired by {alive}ms at the latest: the script resurrected or touched a dead lease",
            who(l), c.invoked
        ));
        return;
    }
    let released = m.released_by(l);
    if released < c.invoked {
        report(
            out,
            done,
            format!(
                "{verb} of {} invoked at {}ms returned true after its release was confirmed at {released}ms",
                who(l),
                c.invoked
            ),
        );
        return;
    }
    if let Some(other) =
        m.leases.iter().find(|o| o.name == l.name && o.process != l.process && o.invoked > l.done && o.done < c.invoked)
    {
        report(out, done, format!(
            "{verb} of {} invoked at {}ms returned true, but {} had been granted the lock at {}ms (invoked after this lease was set): it acted on someone else's lease",
            who(l), c.invoked, who(other), other.done
        ));
    }
}

/// Rule 2: `extend`/`release` returned false, so the lease could be gone:
/// a refusal before its earliest possible expiry, with no release of ours
/// sent, is a violation (unless leases may end early).
pub(super) fn refused(m: &Model<'_>, r: &Reply<'_, '_>, out: &mut Vec<Violation>) {
    let (c, done) = (r.call, r.done);
    let verb = c.op.verb();
    let Some(li) = m.lease_of(c) else { return };
    let l = &m.leases[li];
    if m.leases_may_end_early {
        return;
    }
    let sent_release = l.releases.iter().any(|&i| i != r.index && m.calls[i].invoked <= done);
    // Someone else's write over the key (the guard probe's), landed or of
    // unknown outcome, before the answer: the key need not be ours.
    let overwritten =
        m.calls.iter().any(|o| o.invoked <= done && matches!(o.op, LockOp::TakenAway { name, .. } if name == l.name));
    if overwritten {
        return;
    }
    let min = m.alive_min(l, c.invoked, done);
    if !sent_release && done < min {
        report(
            out,
            done,
            format!(
                "{verb} of {} was refused at {done}ms (invoked {}ms), but the lease was still its own until at least {min}ms",
                who(l),
                c.invoked
            ),
        );
    }
}
