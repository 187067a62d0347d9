//! What the election family judges of a history, one file per invariant:
//! `terms` (`election`: one leader per epoch, epochs increase, no stale
//! write accepted, a failed or superseded term ends), `self_fencing`,
//! `liveness` (of the reigns and of the run loop) and `views`
//! (`election-views`: what an `Election` says about itself).
pub(crate) mod liveness;
pub(crate) mod self_fencing;
pub(crate) mod terms;
pub(crate) mod views;
mod why;

/// Histories the checks' tests build.
#[cfg(test)]
mod fixtures {
    use crate::families::election::{ElectionOp, Role};
    use crate::history::{History, Op, WriteResult};

    /// `p` reports `r` of election `e` (with `epoch`) at `t`.
    pub(crate) fn role(h: &History, t: u64, p: &str, r: Role, epoch: Option<u64>) {
        h.observe_at(t, p, ElectionOp::Role { election: "e".into(), role: r, epoch, deadline: None });
    }

    /// `p` writes `res` at `t0` with `token`, and the write completes with
    /// `result`.
    pub(crate) fn write(h: &History, p: &str, t0: u64, t1: u64, token: Option<u64>, result: WriteResult) {
        let op =
            |r| Op::Write { key: "res".into(), value: format!("{p}@{t0}"), token, fenced: token.is_some(), result: r };
        let id = h.invoke_at(t0, p, op(None));
        h.ok(id, p, op(Some(result)));
        let _ = t1;
    }
}
