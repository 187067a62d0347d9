//! `redlock-votes`: every Redlock verdict is justified by what the masters
//! said, and what each master said is justified by the history.
//!
//! Verdicts (acceptance and rejection both):
//! - a grant or a confirmed extension has at least N/2+1 `yes` answers
//!   (N/2+1 is derived from N here, not read from the client);
//! - a refusal for `no-majority` has fewer.
//!
//! Answers, per lease (one owner value, so one key per master that only
//! this lease's `SET NX` can create):
//! - a master that said `no` to the lease's `SET NX` never holds its key,
//!   so it can never confirm an extension or a deletion of it;
//! - a master whose key of ours was deleted (or found missing) never
//!   confirms it again, unless a timed-out `SET` may still land there;
//! - with trusted clocks (no clock step, no restart in the run): a key set
//!   by a request sent at `s` lives at least until `s + TTL` and at most a
//!   TTL after its last confirmed (re-)arming. So a `no` from an extend or
//!   a delete that completed before `s + TTL` is unjustified (the key must
//!   have been there), and a `yes` from one invoked after `last + TTL` is
//!   too (it cannot have been).
//!
//! A timed-out or failed answer (`t`, `e`) proves nothing either way.

use std::collections::BTreeMap;

use super::redlock_calls::{calls, CallKind, RedlockSetup};
use super::{Violation, REDLOCK_VOTES};
use crate::history::{Event, EventKind, Millis};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    /// Certainly set by a request sent at `sent`, last confirmed at `done`.
    Present { sent: Millis, done: Millis },
    /// Certainly not there (never set, deleted, or found missing).
    Absent,
    /// Nobody knows.
    Unknown,
}

struct Lease {
    process: String,
    keys: Vec<Key>,
    /// A `SET` of this lease timed out or failed on that master: it may
    /// still land, so absence is not final there.
    late: Vec<bool>,
}

enum Step {
    Arm,
    Delete,
}

/// Checks every Redlock verdict and answer in `events`.
pub fn check(events: &[Event], setup: &RedlockSetup) -> Vec<Violation> {
    let (quorum, ttl) = (setup.quorum(), setup.ttl_ms);
    let mut out = Vec::new();
    let mut leases: BTreeMap<u64, Lease> = BTreeMap::new();
    for c in calls(events) {
        let Some(r) = c.round else { continue };
        let what = match c.kind {
            CallKind::Acquire { retry: false } => "acquire",
            CallKind::Acquire { retry: true } => "acquire_with_retry",
            CallKind::Extend { .. } => "extend",
            CallKind::Release { .. } => "release",
        };
        let who = format!("{} {what} [{}ms, {}ms]", c.process, c.invoke, c.done);
        let yes = r.yes();
        let mut bad = |detail: String| {
            if out.len() < 5 {
                out.push(Violation::new(REDLOCK_VOTES, Some(c.done), detail));
            }
        };
        // Verdicts.
        match (c.kind, c.outcome) {
            (CallKind::Acquire { .. } | CallKind::Extend { .. }, EventKind::Ok) if yes < quorum => {
                bad(format!("{who} was granted with {yes} yes answers [{}], quorum {quorum}", r.answers));
            }
            (CallKind::Acquire { .. } | CallKind::Extend { .. }, EventKind::Fail)
                if r.refusal.as_deref() == Some("no-majority") && yes >= quorum =>
            {
                bad(format!("{who} was refused for want of a majority with {yes} yes answers [{}], quorum {quorum}", r.answers));
            }
            _ => {}
        }
        if c.outcome == EventKind::Info {
            continue;
        }
        // Answers, per lease.
        let lease = match c.kind {
            CallKind::Acquire { .. } => {
                let keys = r
                    .answers
                    .chars()
                    .map(|a| match a {
                        'y' => Key::Present { sent: c.invoke, done: c.done },
                        'n' => Key::Absent,
                        _ => Key::Unknown,
                    })
                    .collect::<Vec<_>>();
                let late = r.answers.chars().map(|a| a != 'y' && a != 'n').collect();
                leases.insert(c.id, Lease { process: c.process.to_string(), keys, late });
                c.id
            }
            CallKind::Extend { lease } => lease,
            CallKind::Release { lease: Some(lease) } => lease,
            CallKind::Release { lease: None } => continue,
        };
        let Some(l) = leases.get_mut(&lease) else { continue };
        if l.process != c.process {
            continue;
        }
        let mut rounds: Vec<(Step, &str, &str)> = Vec::new();
        match c.kind {
            CallKind::Extend { .. } => rounds.push((Step::Arm, r.answers.as_str(), "extend")),
            CallKind::Release { .. } => rounds.push((Step::Delete, r.answers.as_str(), "release")),
            CallKind::Acquire { .. } => {}
        }
        if let Some(cleanup) = &r.cleanup {
            rounds.push((Step::Delete, cleanup.as_str(), "cleanup"));
        }
        for (step, answers, label) in rounds {
            for (m, a) in answers.chars().enumerate() {
                let (Some(key), Some(&late)) = (l.keys.get(m).copied(), l.late.get(m)) else { continue };
                let next = match (key, a) {
                    (Key::Absent, 'y') if !late => {
                        bad(format!("{who}: master {m} confirmed the {label} of a key of ours it cannot hold (it refused the SET, or the key was already gone)"));
                        Key::Unknown
                    }
                    (Key::Present { done, .. }, 'y') if setup.clocks_trusted && !late && c.invoke > done + ttl + 1 => {
                        bad(format!("{who}: master {m} confirmed the {label} of a key of ours that expired by {}ms", done + ttl));
                        Key::Unknown
                    }
                    (Key::Present { sent, .. }, 'n') if setup.clocks_trusted && c.done < sent + ttl => {
                        bad(format!("{who}: master {m} said our key was missing ({label}), yet it was set by a request sent at {sent}ms and lives until at least {}ms", sent + ttl));
                        Key::Absent
                    }
                    (_, 'y') => match step {
                        Step::Arm => Key::Present { sent: c.invoke, done: c.done },
                        Step::Delete => Key::Absent,
                    },
                    (_, 'n') => Key::Absent,
                    // A timed-out re-arm or delete cannot create a key.
                    (Key::Absent, _) => Key::Absent,
                    _ => Key::Unknown,
                };
                l.keys[m] = next;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::redlock_calls::build::{granted, refused, B};

    fn setup() -> RedlockSetup {
        RedlockSetup::new(5, 300, 5)
    }

    #[test]
    fn a_justified_history_passes() {
        let mut h = B::default();
        let a = h.grant("a", 0, 20, "yyynt", 295);
        h.extend("a", a, 200, 210, EventKind::Ok, granted("yyynt", 200, 210, 495));
        h.release("a", a, 400, 410, "yyynn");
        h.acquire("b", 500, 520, EventKind::Fail, refused("yynnt", "no-majority", 20), false);
        // Expired on master 0 (set at 600, confirmed 610): no at 950 is fine.
        let c = h.grant("c", 600, 610, "yyyyy", 895);
        h.release("c", c, 950, 960, "nnnnn");
        assert_eq!(check(&h.events, &setup()), vec![]);
    }

    #[test]
    fn a_minority_grant_and_a_majority_refusal_fail() {
        let mut h = B::default();
        h.grant("a", 0, 20, "yynnt", 295);
        h.acquire("b", 500, 520, EventKind::Fail, refused("yyynn", "no-majority", 20), false);
        let v = check(&h.events, &setup());
        assert!(v[0].detail.contains("granted with 2 yes answers"), "{v:?}");
        assert!(v[1].detail.contains("refused for want of a majority with 3 yes"), "{v:?}");
        assert_eq!(v.len(), 2);
    }

    #[test]
    fn a_vote_from_a_master_that_refused_and_a_missing_live_key_fail() {
        let mut h = B::default();
        let a = h.grant("a", 0, 20, "yyynn", 295);
        // Master 3 refused the SET: its yes to the extension is impossible.
        h.extend("a", a, 200, 210, EventKind::Ok, granted("yyyyn", 200, 210, 495));
        // Master 0 was re-armed by a request sent at 200: "missing" at 300 is impossible.
        h.release("a", a, 290, 300, "nyyyn");
        let v = check(&h.events, &setup());
        assert!(v.iter().any(|v| v.detail.contains("master 3 confirmed the extend")), "{v:?}");
        assert!(v.iter().any(|v| v.detail.contains("master 0 said our key was missing (release)")), "{v:?}");
        assert_eq!(v.len(), 2, "{v:?}");
    }

    #[test]
    fn a_yes_after_the_key_expired_fails_but_not_after_a_timed_out_set() {
        let mut h = B::default();
        let a = h.grant("a", 0, 20, "yyyyt", 295);
        h.release("a", a, 400, 410, "yyyyy");
        let v = check(&h.events, &setup());
        assert_eq!(v.len(), 4, "{v:?}");
        assert!(v[0].detail.contains("expired by 320ms"), "{v:?}");
    }
}
