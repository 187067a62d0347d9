//! `mutual-exclusion`: how long two holders of one lock overlapped, and
//! whether an overlap was one the lock promised could not happen.
//!
//! A *hold* runs from an `Acquire` completing `Ok` until the holder releases
//! (its `Release` invoke), declares the lease lost (`LeaseLost`), or the
//! history ends. Within it, the holder may *trust* the lease until its local
//! deadline (`deadline` on the acquire, pushed on by every successful
//! `Extend`), measured from the send time so it is never later than the
//! server's expiry.
//!
//! Two overlaps are computed between holds of different processes:
//!
//! - **believed** overlap: both holds open. Under a process pause this is
//!   expected — the paused holder wakes up still believing — and it is exactly
//!   the window fencing exists for. It is measured and reported, never hidden.
//! - **trusted** overlap: both holders inside their deadlines. A correct lock
//!   makes this impossible (absent clock steps and counter loss); a bare-`DEL`
//!   release (`lock-naive`) produces it.
//!
//! [`Policy`] says which overlap the scenario forbids.

use std::collections::BTreeMap;

use crate::checker::{completed, Violation};
use crate::families::lock::invariants::MUTUAL_EXCLUSION;
use crate::families::lock::op::LockOp;
use crate::history::{Event, EventKind, Millis};

/// Which overlaps are violations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Only overlap while both holders still trust their lease (the default
    /// for any real lock: pauses make believed overlap expected).
    ForbidTrustedOverlap,
    /// Any believed overlap (a scenario with no pauses and no clock faults).
    ForbidAnyOverlap,
    /// Measure only.
    MeasureOnly,
}

/// One hold of a lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hold {
    /// Lock name.
    pub name: String,
    /// Holder.
    pub process: String,
    /// Token, if the lock issues them.
    pub token: Option<u64>,
    /// Acquire completed.
    pub from: Millis,
    /// Released, lost, or end of history.
    pub to: Millis,
    /// Local deadline (latest after extends); `Millis::MAX` if never checked.
    pub trusted_until: Millis,
}

/// Two holds of different processes that overlapped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overlap {
    /// Lock name.
    pub name: String,
    /// The earlier hold's process and token.
    pub first: (String, Option<u64>),
    /// The later hold's process and token.
    pub second: (String, Option<u64>),
    /// Start of the believed overlap.
    pub from: Millis,
    /// Length of the believed overlap (ms).
    pub believed_ms: u64,
    /// Length of the part where both still trusted their lease (ms).
    pub trusted_ms: u64,
}

/// What the checker found.
#[derive(Debug, Clone, Default)]
pub struct Exclusion {
    /// Every hold, by start time.
    pub holds: Vec<Hold>,
    /// Every overlap with a positive believed length.
    pub overlaps: Vec<Overlap>,
    /// Overlaps the policy forbids.
    pub violations: Vec<Violation>,
}

/// Reconstructs holds from `Acquire`/`Extend`/`Release`/`LeaseLost` events.
pub fn holds(events: &[Event]) -> Vec<Hold> {
    let end = events.last().map(|e| e.time).unwrap_or(0);
    // Open holds keyed by (process, name); a process holds one lease of a
    // name at a time, which is how every workload here uses a lock.
    let mut open: BTreeMap<(String, String), Hold> = BTreeMap::new();
    let mut done = Vec::new();
    let same = |h: &Hold, token: &Option<u64>| token.is_none() || h.token.is_none() || h.token == *token;
    // One sweep in history order over completions (acquire, extend,
    // lease-lost) and release *invokes*: a release ends the hold when it is
    // sent, since from then on the holder no longer acts as owner whatever
    // the reply says.
    let mut sweep: Vec<(&Event, Millis)> = Vec::new();
    for c in completed(events) {
        sweep.push((c.done, c.invoke_time));
    }
    // Release invokes are not completions; add them to the sweep at their time.
    for e in events {
        if e.kind == EventKind::Invoke && matches!(LockOp::of(&e.op), Some(LockOp::Release { .. })) {
            sweep.push((e, e.time));
        }
    }
    sweep.sort_by_key(|(e, _)| e.index);
    for (e, _) in sweep {
        let k = |name: &String| (e.process.clone(), name.clone());
        match (LockOp::of(&e.op), e.kind) {
            (Some(LockOp::Acquire { name, token, deadline, .. }), EventKind::Ok) => {
                if let Some(mut old) = open.remove(&k(name)) {
                    old.to = e.time;
                    done.push(old);
                }
                open.insert(
                    k(name),
                    Hold {
                        name: name.clone(),
                        process: e.process.clone(),
                        token: *token,
                        from: e.time,
                        to: end,
                        trusted_until: deadline.unwrap_or(Millis::MAX),
                    },
                );
            }
            (Some(LockOp::Extend { name, token, deadline, .. }), EventKind::Ok) => {
                if let Some(h) = open.get_mut(&k(name)) {
                    if same(h, token) {
                        h.trusted_until = deadline.unwrap_or(Millis::MAX);
                    }
                }
            }
            // An extend of unknown outcome may have shortened the key's life
            // (a shorter TTL): the holder's lease reports the deadline it
            // kept (`lease-views` judges it), never a later one.
            (Some(LockOp::Extend { name, token, deadline: Some(d), .. }), EventKind::Info) => {
                if let Some(h) = open.get_mut(&k(name)) {
                    if same(h, token) {
                        h.trusted_until = h.trusted_until.min(*d);
                    }
                }
            }
            (Some(LockOp::Release { name, token }), EventKind::Invoke)
            | (Some(LockOp::LeaseLost { name, token, .. }), _)
                if open.get(&k(name)).is_some_and(|h| same(h, token)) =>
            {
                if let Some(mut h) = open.remove(&k(name)) {
                    h.to = e.time;
                    done.push(h);
                }
            }
            _ => {}
        }
    }
    done.extend(open.into_values());
    done.sort_by(|a, b| (a.from, &a.process).cmp(&(b.from, &b.process)));
    done
}

/// Measures overlaps and applies `policy`.
pub fn check(events: &[Event], policy: Policy) -> Exclusion {
    let holds = holds(events);
    let mut overlaps = Vec::new();
    for (i, a) in holds.iter().enumerate() {
        for b in &holds[i + 1..] {
            if b.from >= a.to {
                continue;
            }
            if a.name != b.name || a.process == b.process {
                continue;
            }
            let from = a.from.max(b.from);
            let to = a.to.min(b.to);
            if to <= from {
                continue;
            }
            let trusted_to = to.min(a.trusted_until).min(b.trusted_until);
            overlaps.push(Overlap {
                name: a.name.clone(),
                first: (a.process.clone(), a.token),
                second: (b.process.clone(), b.token),
                from,
                believed_ms: to - from,
                trusted_ms: trusted_to.saturating_sub(from),
            });
        }
    }
    let mut violations = Vec::new();
    for o in &overlaps {
        let (bad, what) = match policy {
            Policy::ForbidTrustedOverlap => (o.trusted_ms > 0, o.trusted_ms),
            Policy::ForbidAnyOverlap => (true, o.believed_ms),
            Policy::MeasureOnly => (false, 0),
        };
        if bad && violations.len() < 5 {
            violations.push(Violation::new(
                MUTUAL_EXCLUSION,
                Some(o.from),
                format!(
                    "lock {}: {} (token {}) and {} (token {}) both held it for {}ms from {}ms, both inside their lease deadline for {}ms",
                    o.name,
                    o.first.0,
                    fmt_token(o.first.1),
                    o.second.0,
                    fmt_token(o.second.1),
                    what,
                    o.from,
                    o.trusted_ms
                ),
            ));
        }
    }
    Exclusion { holds, overlaps, violations }
}

fn fmt_token(t: Option<u64>) -> String {
    t.map_or_else(|| "none".to_string(), |t| t.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::{FaultRecord, History};
    use crate::nemesis::FaultKind;

    fn acquire(h: &History, p: &str, t0: u64, t1: u64, ttl: u64, token: Option<u64>) {
        let op = |token, deadline| LockOp::Acquire { name: "l".into(), ttl_ms: ttl, token, deadline };
        let id = h.invoke_at(t0, p, op(None, None));
        h.complete_at(t1, id, p, EventKind::Ok, op(token, Some(t0 + ttl)));
    }

    fn release(h: &History, p: &str, t0: u64, t1: u64, token: Option<u64>, ok: bool) {
        let op = LockOp::Release { name: "l".into(), token };
        let id = h.invoke_at(t0, p, op.clone());
        h.complete_at(t1, id, p, if ok { EventKind::Ok } else { EventKind::Fail }, op);
    }

    #[test]
    fn a_paused_holder_overlaps_but_is_not_a_violation() {
        let h = History::new();
        acquire(&h, "a", 0, 1, 150, Some(1));
        h.fault_at(10, FaultRecord::on_client(FaultKind::ClientPause, "a", false, 300));
        acquire(&h, "b", 200, 201, 150, Some(2));
        // a wakes at 310, still believes, releases (refused: compare-and-delete).
        release(&h, "a", 310, 311, Some(1), false);
        release(&h, "b", 320, 321, Some(2), true);
        let r = check(&h.events(), Policy::ForbidTrustedOverlap);
        assert_eq!(r.violations, vec![]);
        assert_eq!(r.overlaps.len(), 1);
        assert_eq!((r.overlaps[0].believed_ms, r.overlaps[0].trusted_ms), (109, 0));
        // The same history with every overlap forbidden is a violation.
        assert_eq!(check(&h.events(), Policy::ForbidAnyOverlap).violations.len(), 1);
        assert_eq!(check(&h.events(), Policy::MeasureOnly).violations.len(), 0);
    }

    #[test]
    fn a_bare_del_release_lets_a_third_holder_in() {
        let h = History::new();
        acquire(&h, "a", 0, 1, 150, None);
        acquire(&h, "b", 200, 201, 1000, None);
        // a's late bare DEL deletes b's key; c gets in while b trusts its lease.
        release(&h, "a", 300, 301, None, true);
        acquire(&h, "c", 310, 311, 1000, None);
        release(&h, "b", 500, 501, None, true);
        release(&h, "c", 600, 601, None, true);
        let r = check(&h.events(), Policy::ForbidTrustedOverlap);
        assert_eq!(r.violations.len(), 1, "{:?}", r.overlaps);
        assert!(r.violations[0].detail.contains("b (token none) and c (token none)"), "{:?}", r.violations);
        assert_eq!(r.overlaps.iter().find(|o| o.second.0 == "c").map(|o| o.trusted_ms), Some(189));
    }

    #[test]
    fn an_extend_of_unknown_outcome_can_only_bring_the_deadline_forward() {
        let h = History::new();
        acquire(&h, "a", 0, 1, 300, Some(1));
        let op = |deadline| LockOp::Extend { name: "l".into(), token: Some(1), ttl_ms: 100, deadline };
        let id = h.invoke_at(50, "a", op(None));
        h.complete_at(80, id, "a", EventKind::Info, op(Some(147)));
        let id = h.invoke_at(90, "a", op(None));
        h.complete_at(95, id, "a", EventKind::Info, op(Some(400)));
        assert_eq!(holds(&h.events())[0].trusted_until, 147);
    }

    #[test]
    fn extend_moves_the_deadline_and_lease_lost_ends_the_hold() {
        let h = History::new();
        acquire(&h, "a", 0, 1, 100, Some(1));
        let op = |deadline| LockOp::Extend { name: "l".into(), token: Some(1), ttl_ms: 100, deadline };
        let id = h.invoke_at(50, "a", op(None));
        h.ok(id, "a", op(Some(150)));
        acquire(&h, "b", 160, 161, 100, Some(2));
        h.observe_at(170, "a", LockOp::LeaseLost { name: "l".into(), token: Some(1), reason: "deadline".into() });
        let hs = holds(&h.events());
        assert_eq!(hs[0].trusted_until, 150);
        assert_eq!(hs[0].to, 170);
        let r = check(&h.events(), Policy::ForbidTrustedOverlap);
        assert_eq!(r.violations, vec![]);
        assert_eq!(r.overlaps[0].believed_ms, 9);
    }
}
