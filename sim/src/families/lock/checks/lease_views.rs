//! `lease-views`: a `Lock` lease says exactly what it is, and its local
//! deadline is measured from the instant its request was sent.
//!
//! The lease's deadline is the whole of a holder's safety (the README's
//! self-fencing): `sent_at + ttl − drift`, on the holder's clock, from the
//! moment the acquire (or the extend that moved it) was *sent*. A deadline
//! taken from the reply, a drift allowance dropped, a `<` that became `<=`
//! in `is_trusted` all give a lease that trusts itself a little too long,
//! and only an overlap at the wrong moment would show it. In the simulation
//! an operation is sent at its invoke's instant, so the deadline can be
//! judged exactly:
//!
//! - every granted acquire and confirmed extend reports the deadline
//!   `invoke + ttl − allowance(ttl)` (truncated to the millisecond), where
//!   `allowance(ttl) = ttl × factor‰ + constant` (`Drift`);
//! - every [`LockOp::LeaseView`] (a holder asking `is_trusted()`) reports the
//!   name and token it was granted, the documented key `lock:{name}`, the
//!   TTL, send instant and deadline of the last acquire or confirmed extend
//!   that set it, and `trusted` exactly when the view's instant is before
//!   that deadline.

use std::collections::BTreeMap;

use crate::checker::{Allowance, Violation};
use crate::families::lock::invariants::LEASE_VIEWS;
use crate::families::lock::op::LockOp;
use crate::history::{Event, EventKind, Millis};

/// What set a lease last: `(sent ms, ttl ms, deadline ns, completed at)`.
type Setter = (Millis, u64, u128, Millis);

/// The leases one process held with one token, per name, each with its
/// setters in completion order.
type Named = Vec<(String, Vec<Setter>)>;

/// Every deadline or view that differs from the lease it belongs to.
pub(crate) fn check(events: &[Event], allowance: Allowance) -> Vec<Violation> {
    let mut out = Vec::new();
    let mut invoked: BTreeMap<u64, Millis> = BTreeMap::new();
    // (process, token) -> per name (tokens count per name, so one process
    // may hold token 1 of two names), setters in completion order.
    let mut leases: BTreeMap<(&str, u64), Named> = BTreeMap::new();
    for e in events {
        if e.kind == EventKind::Invoke {
            invoked.insert(e.op_id.0, e.time);
            continue;
        }
        let sent = invoked.get(&e.op_id.0).copied().unwrap_or(e.time);
        let Some(op) = LockOp::of(&e.op) else { continue };
        let set = match (op, e.kind) {
            (LockOp::Acquire { name, ttl_ms, token: Some(token), deadline: Some(d), .. }, EventKind::Ok) => {
                Some((name, *ttl_ms, *token, *d, "acquire"))
            }
            (LockOp::Extend { name, ttl_ms, token: Some(token), deadline: Some(d), .. }, EventKind::Ok) => {
                Some((name, *ttl_ms, *token, *d, "extend"))
            }
            _ => None,
        };
        // An extend of unknown outcome may have run and set the key to its
        // TTL from the send: the lease keeps its TTL and send instant, and
        // its deadline becomes the earlier of the two.
        if let (LockOp::Extend { name, ttl_ms, token: Some(token), deadline: Some(d), .. }, EventKind::Info) =
            (op, e.kind)
        {
            let Some(setters) = leases
                .get_mut(&(e.process.as_str(), *token))
                .and_then(|n| n.iter_mut().find(|(n, _)| n == name))
                .map(|(_, s)| s)
            else {
                continue;
            };
            let Some(&(prev_sent, prev_ttl, prev_ns, _)) = setters.last() else { continue };
            let deadline_ns = prev_ns.min(allowance.deadline_ns(sent, *ttl_ms));
            let expected = (deadline_ns / 1_000_000) as Millis;
            if *d != expected {
                out.push(Violation::new(
                    LEASE_VIEWS,
                    Some(e.time),
                    format!(
                        "{}: the extend of {name} (token {token}) sent at {sent}ms for {ttl_ms}ms failed, and the lease reports a local deadline of {d}ms; the key may now expire {ttl_ms}ms after the send, so it is {expected}ms",
                        e.process
                    ),
                )
                .missed_by_ms(d.abs_diff(expected)));
            }
            setters.push((prev_sent, prev_ttl, deadline_ns, e.time));
            continue;
        }
        if let Some((name, ttl_ms, token, d, what)) = set {
            let deadline_ns = allowance.deadline_ns(sent, ttl_ms);
            let expected = (deadline_ns / 1_000_000) as Millis;
            if d != expected {
                out.push(Violation::new(
                    LEASE_VIEWS,
                    Some(e.time),
                    format!(
                        "{}: the {what} of {name} (token {token}) sent at {sent}ms for {ttl_ms}ms reports a local deadline of {d}ms; measured from the send it is {expected}ms",
                        e.process
                    ),
                )
                .missed_by_ms(d.abs_diff(expected)));
            }
            let names = leases.entry((e.process.as_str(), token)).or_default();
            let i = match names.iter().position(|(n, _)| n == name) {
                Some(i) => i,
                None => {
                    names.push((name.clone(), Vec::new()));
                    names.len() - 1
                }
            };
            names[i].1.push((sent, ttl_ms, deadline_ns, e.time));
            continue;
        }
        out.extend(judge_view(e, op, &leases));
    }
    out
}

/// What is wrong with a `LeaseView` event `e` (its op `op`), judged against
/// the leases its process was granted.
fn judge_view(e: &Event, op: &LockOp, leases: &BTreeMap<(&str, u64), Named>) -> Option<Violation> {
    let LockOp::LeaseView { name, key, token, ttl_ms, sent_ms, deadline_ms, trusted } = op else { return None };
    // The lease of the name it reports, or else any of that token (its
    // name is then wrong).
    let granted = leases.get(&(e.process.as_str(), *token));
    let Some((granted_name, setters)) = granted.and_then(|g| g.iter().find(|(n, _)| n == name).or_else(|| g.first()))
    else {
        return Some(Violation::new(
            LEASE_VIEWS,
            Some(e.time),
            format!(
                "{}: a lease with token {token} that was never granted to it reports itself at {}ms",
                e.process, e.time
            ),
        ));
    };
    let &(sent, ttl, deadline_ns, _) = setters.iter().rev().find(|s| s.3 <= e.time)?;
    let expected_trusted = u128::from(e.time) * 1_000_000 < deadline_ns;
    let documented_key = crate::checker::lock_key(granted_name);
    let mut wrong = Vec::new();
    // How far the instants it reports are from those it was granted
    // (a live run's reading of the clock); `None` once anything else
    // is wrong too.
    let mut apart: Option<Millis> = Some(0);
    if name != granted_name {
        wrong.push(format!("name {name:?} (granted for {granted_name:?})"));
    }
    if *key != documented_key {
        wrong.push(format!("key {key:?} (documented: {documented_key:?})"));
    }
    if *ttl_ms != ttl {
        wrong.push(format!("ttl {ttl_ms}ms (set to {ttl}ms)"));
    }
    if !wrong.is_empty() {
        apart = None;
    }
    let widen = |apart: Option<Millis>, by: Millis| apart.map(|a| a.max(by));
    if *sent_ms != sent {
        wrong.push(format!("sent at {sent_ms}ms (sent at {sent}ms)"));
        apart = widen(apart, sent_ms.abs_diff(sent));
    }
    if *deadline_ms != (deadline_ns / 1_000_000) as Millis {
        wrong.push(format!("deadline {deadline_ms}ms (set to {}ms)", deadline_ns / 1_000_000));
        apart = widen(apart, deadline_ms.abs_diff((deadline_ns / 1_000_000) as Millis));
    }
    if *trusted != expected_trusted {
        let off = (u128::from(e.time) * 1_000_000).abs_diff(deadline_ns).div_ceil(1_000_000);
        apart = widen(apart, off as Millis);
        wrong.push(format!(
            "is_trusted() = {trusted} at {}ms with its deadline at {}.{:06}ms",
            e.time,
            deadline_ns / 1_000_000,
            deadline_ns % 1_000_000
        ));
    }
    if !wrong.is_empty() {
        let v = Violation::new(
            LEASE_VIEWS,
            Some(e.time),
            format!("{}: lease {token} of {granted_name} reports {}", e.process, wrong.join(", ")),
        );
        return Some(match apart {
            Some(ms) => v.missed_by_ms(ms),
            None => v,
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::History;

    fn view(h: &History, t: Millis, deadline_ms: Millis, trusted: bool) {
        let op = LockOp::LeaseView {
            name: "l".into(),
            key: "lock:{l}".into(),
            token: 1,
            ttl_ms: 300,
            sent_ms: 10,
            deadline_ms,
            trusted,
        };
        h.observe_at(t, "c", op);
    }

    fn acquire(h: &History, deadline: Millis) {
        let op = |token, deadline| LockOp::Acquire { name: "l".into(), ttl_ms: 300, token, deadline };
        let id = h.invoke_at(10, "c", op(None, None));
        h.complete_at(14, id, "c", EventKind::Ok, op(Some(1), Some(deadline)));
    }

    #[test]
    fn an_extend_of_unknown_outcome_brings_a_later_deadline_forward() {
        // Acquired at 10 ms for 300 ms (deadline 305 ms); at 100 ms an extend
        // asking 100 ms (allowance 3 ms) fails: the key may expire at 200 ms,
        // so the lease's deadline is 197 ms, its TTL and send unchanged.
        let run = |reported: Millis| {
            let h = History::new();
            acquire(&h, 305);
            let op = |deadline| LockOp::Extend { name: "l".into(), token: Some(1), ttl_ms: 100, deadline };
            let id = h.invoke_at(100, "c", op(None));
            h.complete_at(130, id, "c", EventKind::Info, op(Some(reported)));
            view(&h, 150, reported, true);
            check(&h.events(), Allowance::DEFAULT)
        };
        assert_eq!(run(197), vec![]);
        let v = run(305);
        assert!(v.iter().any(|v| v.detail.contains("so it is 197ms")), "{v:?}");
    }

    #[test]
    fn deadlines_run_from_the_send_and_views_agree() {
        // 300 ms - (3 + 2) ms allowance from the send at 10 ms: 305 ms.
        let h = History::new();
        acquire(&h, 305);
        view(&h, 304, 305, true);
        view(&h, 305, 305, false);
        assert_eq!(check(&h.events(), Allowance::DEFAULT), vec![]);
        // Measured from the reply (14 ms): 309 ms.
        let h = History::new();
        acquire(&h, 309);
        assert_eq!(check(&h.events(), Allowance::DEFAULT).len(), 1);
        // Trusted at its own deadline: `<=` for `<`.
        let h = History::new();
        acquire(&h, 305);
        view(&h, 305, 305, true);
        let v = check(&h.events(), Allowance::DEFAULT);
        assert!(v.len() == 1 && v[0].detail.contains("is_trusted() = true at 305ms"), "{v:?}");
    }

    #[test]
    fn a_view_is_judged_against_its_own_names_lease_when_tokens_repeat_across_names() {
        // Token 1 of another name first (sent at 0 ms), then token 1 of `l`.
        let h = History::new();
        let other = |token, deadline| LockOp::Acquire { name: "m".into(), ttl_ms: 600, token, deadline };
        let id = h.invoke_at(0, "c", other(None, None));
        h.complete_at(3, id, "c", EventKind::Ok, other(Some(1), Some(592)));
        acquire(&h, 305);
        view(&h, 304, 305, true);
        assert_eq!(check(&h.events(), Allowance::DEFAULT), vec![]);
        // A view naming a name whose token 1 was never granted: wrong name.
        let h = History::new();
        let id = h.invoke_at(0, "c", other(None, None));
        h.complete_at(3, id, "c", EventKind::Ok, other(Some(1), Some(592)));
        view(&h, 304, 305, true);
        let v = check(&h.events(), Allowance::DEFAULT);
        assert!(v.len() == 1 && v[0].detail.contains("name \"l\" (granted for \"m\")"), "{v:?}");
    }
}
