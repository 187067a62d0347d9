//! `redlock-rounds`: every Redlock round asks every master, and no master
//! holds a round up for longer than the per-master timeout.
//!
//! The README: requests go "to every master at once, each under its own
//! timeout, so a master that does not answer counts as a miss instead of
//! stalling the attempt", a refused acquire or extend is released "on
//! **every** master", and release is "a compare-and-delete on every master".
//! So, from the answers the client recorded:
//!
//! - every acquire, extend, release and cleanup round has one answer per
//!   master (N), and a master that timed out (by our timer or by the
//!   connection's own) answered `TimedOut`, not an error;
//! - a call takes at most one per-master timeout per round it sends (plus a
//!   tick), unless its client was paused meanwhile (a frozen process's
//!   timers fire late): an acquire one round (two when refused: the cleanup),
//!   an extend one (two when refused, one when refused as expired, which
//!   sends only the cleanup), a release one.
//!
//! `acquire_with_retry` sleeps between attempts, so only the last attempt's
//! own elapsed time is bounded.
//!
//! `connect` asks every master for its `run_id` (the duplicate check): a
//! master it reports unverified must have had a fault on that client's link
//! to it by the time connect returned. On a quiet link `INFO` answers, and a
//! master left unverified there is a duplicate nobody checked.

use std::collections::BTreeMap;

use super::super::op::RedlockOp;
use super::calls::{calls, CallKind, RedlockSetup};
use crate::checker::Violation;
use crate::families::redlock::invariants::REDLOCK_ROUNDS;
use crate::history::{Event, EventKind, Millis};

/// Slack on top of the per-master timeout: one simulation tick.
const SLACK_MS: u64 = 2;

/// Checks the answers and durations of every Redlock round in `events`.
pub(crate) fn check(events: &[Event], setup: &RedlockSetup) -> Vec<Violation> {
    let n = setup.masters as usize;
    let mut out = unverified_without_a_fault(events, setup);
    for c in calls(events) {
        let Some(r) = c.round else { continue };
        if c.outcome == EventKind::Info {
            continue;
        }
        let mut bad = |detail: String| {
            if out.len() < 5 {
                out.push(Violation::new(REDLOCK_ROUNDS, Some(c.done), detail));
            }
        };
        let what = c.kind.method();
        let who = format!("{} {what} [{}ms, {}ms]", c.process, c.invoke, c.done);
        let expired = r.refusal.as_deref() == Some("expired");
        let refused = c.outcome == EventKind::Fail;
        if !(expired && r.answers.is_empty()) && r.answers.len() != n {
            bad(format!(
                "{who} has {} answers [{}] from {n} masters: every master must be asked",
                r.answers.len(),
                r.answers
            ));
        }
        // "A master that does not answer counts as a miss": a timeout is a
        // timed-out vote, whichever timer (ours or the connection's) fired.
        for (round, answers) in [("", Some(&r.answers)), ("cleanup ", r.cleanup.as_ref())] {
            if let Some(m) = answers.and_then(|a| a.find('u')) {
                bad(format!(
                    "{who}: master {m}'s {round}answer is a timeout reported as an error [{}]",
                    answers.map_or("", |a| a.as_str())
                ));
            }
        }
        if refused {
            match &r.cleanup {
                Some(cl) if cl.len() == n => {}
                other => bad(format!(
                    "{who} was refused but its cleanup {other:?} did not ask all {n} masters to drop our key"
                )),
            }
        }
        let Some(&timeout) = setup.master_timeout_ms.get(c.process) else { continue };
        if setup.paused(c.process, c.invoke, c.done) {
            continue;
        }
        if let Some(e) = r.elapsed_ms {
            if e > timeout + SLACK_MS {
                bad(format!("{who}: one round took {e}ms, over the per-master timeout of {timeout}ms"));
                continue;
            }
        }
        let rounds = match (c.kind, refused) {
            (CallKind::Acquire { retry: true }, _) => continue,
            (CallKind::Extend { .. }, true) if expired => 1,
            (CallKind::Acquire { .. } | CallKind::Extend { .. }, true) => 2,
            _ => 1,
        };
        if c.elapsed() > rounds * (timeout + SLACK_MS) {
            bad(format!(
                "{who} took {}ms for {rounds} round(s) under a per-master timeout of {timeout}ms",
                c.elapsed()
            ));
        }
    }
    out
}

/// Every master a `connect` left unverified although no fault had touched
/// that client's link to it by the time connect returned.
fn unverified_without_a_fault(events: &[Event], setup: &RedlockSetup) -> Vec<Violation> {
    let mut invoked: BTreeMap<u64, Millis> = BTreeMap::new();
    let mut out = Vec::new();
    for e in events {
        let Some(RedlockOp::RedlockConnect { unverified, .. }) = e.op.family() else { continue };
        if e.kind == EventKind::Invoke {
            invoked.insert(e.op_id.0, e.time);
            continue;
        }
        let Some(invoke) = invoked.remove(&e.op_id.0) else { continue };
        let (EventKind::Ok, Some(unverified)) = (e.kind, unverified) else { continue };
        for &m in unverified {
            let touched = setup.faults.iter().any(|f| {
                f.from <= e.time
                    && f.client.as_deref().is_none_or(|c| c == e.process)
                    && f.node.is_none_or(|n| n == m as usize)
            });
            if !touched && out.len() < 5 {
                out.push(Violation::new(
                    REDLOCK_ROUNDS,
                    Some(e.time),
                    format!(
                        "{} connect [{invoke}ms, {}ms] left master {m} unverified, yet no fault had touched \
                         its link to it: INFO answers on a quiet link, so a duplicate master went unchecked",
                        e.process, e.time
                    ),
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::redlock::checks::calls::build::{granted, refused, B};

    fn setup() -> RedlockSetup {
        let mut s = RedlockSetup::new(5, 300, 5);
        s.master_timeout_ms.insert("a".into(), 80);
        s.pauses.push(("a".into(), 1000, 1500));
        s
    }

    #[test]
    fn full_rounds_within_the_timeout_pass() {
        let mut h = B::default();
        let a = h.grant("a", 0, 81, "yyyyt", 214);
        h.release("a", a, 100, 182, "yyyyt");
        h.acquire("a", 200, 360, EventKind::Fail, refused("yyttt", "no-majority", 80), false);
        // Paused: no bound.
        h.acquire("a", 990, 1400, EventKind::Fail, refused("yyttt", "no-majority", 300), false);
        assert_eq!(check(&h.events, &setup()), vec![]);
    }

    #[test]
    fn a_skipped_master_and_an_ignored_timeout_fail() {
        let mut h = B::default();
        let a = h.acquire("a", 0, 250, EventKind::Ok, granted("yyyyt", 0, 250, 295), false);
        h.release("a", a, 260, 270, "yyyy");
        h.release("a", a, 280, 290, "yyyuy");
        let v = check(&h.events, &setup());
        assert!(v.iter().any(|v| v.detail.contains("one round took 250ms")), "{v:?}");
        assert!(v.iter().any(|v| v.detail.contains("4 answers [yyyy] from 5 masters")), "{v:?}");
        assert!(v.iter().any(|v| v.detail.contains("master 3's answer is a timeout reported as an error")), "{v:?}");
        assert_eq!(v.len(), 3, "{v:?}");
    }

    #[test]
    fn an_unverified_master_needs_a_fault_on_its_link() {
        use crate::families::redlock::checks::calls::FaultWindow;
        use crate::history::OpId;
        let connect = |time, kind, unverified| Event {
            index: 0,
            time,
            process: "a".into(),
            kind,
            op_id: OpId(7),
            op: RedlockOp::RedlockConnect { masters: 5, unverified }.into(),
            api: None,
        };
        let events = [connect(10, EventKind::Invoke, None), connect(110, EventKind::Ok, Some(vec![2, 4]))];
        let mut s = setup();
        // Master 2's link was cut before connect returned; master 4's only after.
        s.faults.push(FaultWindow { from: 50, to: 400, client: Some("a".into()), node: Some(2) });
        s.faults.push(FaultWindow { from: 111, to: 400, client: None, node: Some(4) });
        let v = check(&events, &s);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].detail.contains("left master 4 unverified"), "{v:?}");
        s.faults.push(FaultWindow { from: 0, to: 5, client: Some("a".into()), node: None });
        assert_eq!(check(&events, &s), vec![]);
    }
}
