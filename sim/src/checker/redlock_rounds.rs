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
//!   master (N);
//! - a call takes at most one per-master timeout per round it sends (plus a
//!   tick), unless its client was paused meanwhile (a frozen process's
//!   timers fire late): an acquire one round (two when refused: the cleanup),
//!   an extend one (two when refused, one when refused as expired, which
//!   sends only the cleanup), a release one.
//!
//! `acquire_with_retry` sleeps between attempts, so only the last attempt's
//! own elapsed time is bounded.

use super::redlock_calls::{calls, CallKind, RedlockSetup};
use super::{Violation, REDLOCK_ROUNDS};
use crate::history::{Event, EventKind};

/// Slack on top of the per-master timeout: one simulation tick.
const SLACK_MS: u64 = 2;

/// Checks the answers and durations of every Redlock round in `events`.
pub fn check(events: &[Event], setup: &RedlockSetup) -> Vec<Violation> {
    let n = setup.masters as usize;
    let mut out = Vec::new();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::redlock_calls::build::{granted, refused, B};

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
        let v = check(&h.events, &setup());
        assert!(v.iter().any(|v| v.detail.contains("one round took 250ms")), "{v:?}");
        assert!(v.iter().any(|v| v.detail.contains("4 answers [yyyy] from 5 masters")), "{v:?}");
        assert_eq!(v.len(), 2, "{v:?}");
    }
}
