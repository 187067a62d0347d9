//! Rule 3: what `acquire` may answer. A refusal only if some lease could
//! be present during the call; a grant only if no other lease was
//! definitely present throughout it.

use super::model::{who, Model};
use super::{report, Reply};
use crate::checker::Violation;
use crate::families::lock::op::LockOp;

/// A refusal while every earlier lease is definitely gone and every
/// acquire of unknown outcome definitely expired: a lock that never grants
/// or keeps keys too long.
pub(super) fn refused(m: &Model<'_>, r: &Reply<'_, '_>, name: &str, out: &mut Vec<Violation>) {
    let (c, done) = (r.call, r.done);
    if m.definitely_free(name, c.invoked, done, Some(r.index)) {
        report(out, done, format!(
            "{}: acquire of {name} refused over [{}ms, {done}ms] while the lock was definitely free (every earlier lease expired or released)",
            c.process, c.invoked
        ));
    }
}

/// A grant while another lease was definitely present throughout the call.
pub(super) fn granted(m: &Model<'_>, r: &Reply<'_, '_>, name: &str, out: &mut Vec<Violation>) {
    let (c, done) = (r.call, r.done);
    let me = m.by_key.get(&(
        name,
        c.process,
        match r.result {
            LockOp::Acquire { token, .. } => *token,
            _ => None,
        },
    ));
    if let Some(l) = m.definitely_held(name, c.invoked, done, me.copied()) {
        report(
            out,
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
