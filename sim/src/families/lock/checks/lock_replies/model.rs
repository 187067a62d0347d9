//! The history as `lock-replies` reads it: each call paired with its
//! completion, each granted lease with the extends, releases and guarded
//! calls that act on it, and the bounds the history puts on when a lease's
//! key could have been present (`alive_min`, `alive_max`, definitely held,
//! definitely free). The rules judge replies against these views.

use std::collections::BTreeMap;

use crate::families::lock::op::{GuardedResult, LockOp};
use crate::history::{Event, EventKind, Millis, Op};
use crate::nemesis::FaultClass;

/// After the last fault heals, a request still in flight is delivered
/// within the largest link latency (300 ms) plus a margin.
pub(super) const SETTLE_MS: Millis = 350;

/// One operation with its completion (if any).
#[derive(Debug, Clone)]
pub(super) struct Call<'a> {
    pub(super) process: &'a str,
    pub(super) invoked: Millis,
    /// `None`: never completed (a dropped future), like `Info`.
    pub(super) done: Option<(EventKind, Millis, &'a LockOp)>,
    pub(super) op: &'a LockOp,
}

impl<'a> Call<'a> {
    pub(super) fn ok(&self) -> bool {
        matches!(self.done, Some((EventKind::Ok, ..)))
    }
    pub(super) fn failed(&self) -> bool {
        matches!(self.done, Some((EventKind::Fail, ..)))
    }
    pub(super) fn unknown(&self) -> bool {
        matches!(self.done, None | Some((EventKind::Info, ..)))
    }
    pub(super) fn done_at(&self) -> Millis {
        self.done.map_or(Millis::MAX, |(_, t, _)| t)
    }
    pub(super) fn result(&self) -> &'a LockOp {
        self.done.map_or(self.op, |(_, _, op)| op)
    }
}

/// Every lock operation, paired with its completion (the history's other
/// operations are no call of the lock's).
fn calls(events: &[Event]) -> Vec<Call<'_>> {
    let mut out: Vec<Call<'_>> = Vec::new();
    let mut open: BTreeMap<u64, usize> = BTreeMap::new();
    for e in events {
        let Some(op) = LockOp::of(&e.op) else { continue };
        if e.kind == EventKind::Invoke {
            open.insert(e.op_id.0, out.len());
            out.push(Call { process: &e.process, invoked: e.time, done: None, op });
        } else if let Some(i) = open.remove(&e.op_id.0) {
            out[i].done = Some((e.kind, e.time, op));
        } else {
            // An observation: invoked and completed at once.
            out.push(Call { process: &e.process, invoked: e.time, done: Some((e.kind, e.time, op)), op });
        }
    }
    out
}

/// A granted lease and what happened to it.
#[derive(Debug)]
pub(super) struct Lease<'a> {
    pub(super) name: &'a str,
    pub(super) process: &'a str,
    pub(super) token: Option<u64>,
    pub(super) invoked: Millis,
    pub(super) done: Millis,
    pub(super) ttl: Millis,
    /// Extends of this lease (indexes into the calls).
    pub(super) extends: Vec<usize>,
    /// Releases of this lease.
    pub(super) releases: Vec<usize>,
    /// End of a keep-alive loop the history cannot see into.
    pub(super) hidden_until: Option<Millis>,
    /// A cancelled guarded call releases its lease (best effort, not
    /// recorded) from this instant on.
    pub(super) hidden_release_from: Option<Millis>,
}

pub(super) struct Model<'a> {
    pub(super) calls: Vec<Call<'a>>,
    pub(super) leases: Vec<Lease<'a>>,
    /// Leases by (name, process, token).
    pub(super) by_key: LeaseKeys<'a>,
    /// When requests of unknown outcome have surely landed or been lost.
    pub(super) settled: Millis,
    /// A restart or clock step happened: refusals are not judged.
    pub(super) leases_may_end_early: bool,
}

pub(super) fn ttl_of(op: &LockOp) -> Millis {
    match op {
        LockOp::Acquire { ttl_ms, .. } | LockOp::Extend { ttl_ms, .. } => *ttl_ms,
        _ => 0,
    }
}

/// When requests of unknown outcome have surely landed or been lost (the
/// last fault, stall or held request), and whether a fault may have ended
/// a lease early (a server restart or a clock step).
fn settling(events: &[Event]) -> (Millis, bool) {
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
    (settled, leases_may_end_early)
}

/// Leases by (name, process, token), as indexes into the leases.
pub(super) type LeaseKeys<'a> = BTreeMap<(&'a str, &'a str, Option<u64>), usize>;

/// Every granted acquire's lease, in call order, with nothing yet acting
/// on it.
fn granted<'a>(calls: &[Call<'a>]) -> (Vec<Lease<'a>>, LeaseKeys<'a>) {
    let mut leases = Vec::new();
    let mut by_key = BTreeMap::new();
    for c in calls {
        if let (true, LockOp::Acquire { name, ttl_ms, token, .. }) = (c.ok(), c.result()) {
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
    (leases, by_key)
}

/// The lease an extend, release or guarded call acts on, if any.
fn target(c: &Call<'_>, leases: &[Lease<'_>], by_key: &LeaseKeys<'_>) -> Option<usize> {
    match c.op {
        LockOp::Extend { name, token, .. } | LockOp::Release { name, token } => {
            by_key.get(&(name.as_str(), c.process, *token)).copied()
        }
        // A guarded call's lease is the first one its process was
        // granted after invoking it (its token may be unknown when
        // the call failed).
        LockOp::Guarded { name, .. } => match c.result() {
            LockOp::Guarded { token: Some(t), .. } => by_key.get(&(name.as_str(), c.process, Some(*t))).copied(),
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
                .map(|(l, _)| l)
        }),
        _ => None,
    }
}

/// Files every extend and release under its lease, and records what each
/// guarded call hides from the history: the extensions of its keep-alive
/// loop, and the best-effort release of a call that did not complete.
fn attach(calls: &[Call<'_>], leases: &mut [Lease<'_>], by_key: &LeaseKeys<'_>) {
    for (i, c) in calls.iter().enumerate() {
        let Some(l) = target(c, leases, by_key) else { continue };
        match c.op {
            LockOp::Extend { .. } => leases[l].extends.push(i),
            LockOp::Release { .. } => leases[l].releases.push(i),
            _ => {
                let end = c.done_at();
                let h = leases[l].hidden_until.get_or_insert(end);
                *h = (*h).max(end);
                let release_from = match c.result() {
                    LockOp::Guarded { outcome: Some(GuardedResult::Cancelled { at, .. }), .. } => Some(*at),
                    LockOp::Guarded { outcome: Some(_), .. } if c.ok() => None,
                    _ => Some(c.invoked),
                };
                if let Some(r) = release_from {
                    let h = leases[l].hidden_release_from.get_or_insert(r);
                    *h = (*h).min(r);
                }
            }
        }
    }
}

impl<'a> Model<'a> {
    pub(super) fn new(events: &'a [Event]) -> Model<'a> {
        let calls = calls(events);
        let (settled, leases_may_end_early) = settling(events);
        let (mut leases, by_key) = granted(&calls);
        attach(&calls, &mut leases, &by_key);
        Model { calls, leases, by_key, settled, leases_may_end_early }
    }

    pub(super) fn lease_of(&self, c: &Call<'a>) -> Option<usize> {
        let (name, token) = match c.op {
            LockOp::Extend { name, token, .. } | LockOp::Release { name, token } => (name.as_str(), *token),
            _ => return None,
        };
        self.by_key.get(&(name, c.process, token)).copied()
    }

    /// Latest instant the lease's key may still be visible, ignoring
    /// deletions, using every extend except `skip` invoked before `until`.
    pub(super) fn alive_max(&self, l: &Lease<'_>, skip: Option<usize>, until: Millis) -> Millis {
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
    pub(super) fn alive_min(&self, l: &Lease<'_>, from: Millis, until: Millis) -> Millis {
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
    pub(super) fn released_by(&self, l: &Lease<'_>) -> Millis {
        l.releases.iter().map(|&i| &self.calls[i]).filter(|c| c.ok()).map(Call::done_at).min().unwrap_or(Millis::MAX)
    }

    /// The lease's key is definitely gone at every instant after this.
    pub(super) fn gone_after(&self, l: &Lease<'_>, until: Millis) -> Millis {
        self.alive_max(l, None, until).min(self.released_by(l))
    }

    /// Some lease was definitely present over all of `[from, until]`.
    pub(super) fn definitely_held(
        &self,
        name: &str,
        from: Millis,
        until: Millis,
        except: Option<usize>,
    ) -> Option<&Lease<'a>> {
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
    pub(super) fn definitely_free(&self, name: &str, from: Millis, until: Millis, except_call: Option<usize>) -> bool {
        if self.leases_may_end_early {
            return false;
        }
        let leases_gone = self
            .leases
            .iter()
            .filter(|l| l.name == name && l.invoked < until)
            .all(|l| self.gone_after(l, until) < from);
        let unknown_gone = self.calls.iter().enumerate().all(|(i, c)| match c.op {
            LockOp::Acquire { name: n, ttl_ms, .. }
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

pub(super) fn who(l: &Lease<'_>) -> String {
    format!("{} (token {})", l.process, l.token.map_or_else(|| "none".into(), |t| t.to_string()))
}
