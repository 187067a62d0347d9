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
//! - with trusted clocks, a master's `no` to a `SET NX` needs another
//!   owner's key there: some other lease (or an earlier attempt hidden inside
//!   an `acquire_with_retry`) whose key may have been alive on that master
//!   during the round. A key may be alive from its `SET`'s invoke until a
//!   TTL after its last (possibly late) arming, or until it was deleted or
//!   found missing; a request caught by a fault may land until that fault
//!   ends (plus the longest delay a fault gives). A `no` with no such key is
//!   an unjustified refusal: a free master said it was taken.
//!
//! A timed-out or failed answer (`t`, `e`) proves nothing either way.

use std::collections::BTreeMap;

use super::calls::{calls, CallKind, RedlockSetup};
use crate::checker::Violation;
use crate::families::redlock::invariants::REDLOCK_VOTES;
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
pub(crate) fn check(events: &[Event], setup: &RedlockSetup) -> Vec<Violation> {
    let mut out = check_answers(events, setup);
    if setup.clocks_trusted {
        for v in check_refusing_masters(events, setup) {
            if out.len() < 5 {
                out.push(v);
            }
        }
    }
    out
}

/// The requests of one lease (one owner value), by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Req {
    Set,
    Arm,
    Delete,
}

/// A lease's requests: kind, answers, invoke, completion.
type Requests<'a> = Vec<(Req, &'a str, Millis, Millis)>;

/// When a lease's key may have been alive on `master`: `None` if never.
fn alive_on(
    l: &[(Req, &str, Millis, Millis)],
    process: &str,
    master: usize,
    setup: &RedlockSetup,
) -> Option<(Millis, Millis)> {
    let ttl = setup.ttl_ms;
    let mut start = None;
    let mut end: Millis = 0;
    // A late request (timed out, may still land) is pending: absence is not final.
    let mut late = false;
    for &(req, answers, inv, done) in l {
        let Some(a) = answers.chars().nth(master) else { continue };
        match (req, a) {
            (Req::Set, 'n') => return None,
            (Req::Set, 'y') => {
                start = Some(inv);
                end = done + ttl;
            }
            (Req::Set, _) => {
                start = Some(inv);
                late = true;
                end = setup.lands_by(process, master, done) + ttl;
            }
            (_, 'y' | 'n') if start.is_none() => {}
            (Req::Arm, 'y') => end = end.max(done + ttl),
            (Req::Arm, 'n') | (Req::Delete, 'y' | 'n') => {
                if !late {
                    end = end.min(done);
                }
            }
            (Req::Arm, _) => {
                late = true;
                end = end.max(setup.lands_by(process, master, done) + ttl);
            }
            (Req::Delete, _) => {}
        }
    }
    start.map(|s| (s, end))
}

/// Every master's `no` to a `SET NX` needs another owner's key there.
fn check_refusing_masters(events: &[Event], setup: &RedlockSetup) -> Vec<Violation> {
    let ttl = setup.ttl_ms;
    let all = calls(events);
    // Each lease's requests, in order; and windows in which earlier attempts
    // hidden inside an acquire_with_retry may have held any master.
    let mut leases: BTreeMap<u64, (&str, Requests<'_>)> = BTreeMap::new();
    let mut hidden: Vec<(u64, &str, Millis, Millis)> = Vec::new();
    for c in &all {
        let lease = match c.kind {
            CallKind::Acquire { retry } => {
                if c.outcome == EventKind::Info || c.round.is_none() {
                    // Unknown: its SETs may land whenever.
                    hidden.push((c.id, c.process, c.invoke, Millis::MAX));
                    continue;
                }
                if retry {
                    hidden.push((c.id, c.process, c.invoke, c.done));
                }
                c.id
            }
            CallKind::Extend { lease } | CallKind::Release { lease: Some(lease) } => lease,
            CallKind::Release { lease: None } => continue,
        };
        let Some(r) = c.round else { continue };
        let entry = leases.entry(lease).or_insert((c.process, Vec::new()));
        let req = match c.kind {
            CallKind::Acquire { .. } => Req::Set,
            CallKind::Extend { .. } => Req::Arm,
            CallKind::Release { .. } => Req::Delete,
        };
        if !r.answers.is_empty() {
            entry.1.push((req, r.answers.as_str(), c.invoke, c.done));
        }
        if let Some(cleanup) = &r.cleanup {
            entry.1.push((Req::Delete, cleanup.as_str(), c.invoke, c.done));
        }
    }
    let mut out = Vec::new();
    for c in &all {
        let (CallKind::Acquire { .. }, Some(r)) = (c.kind, c.round) else { continue };
        if c.outcome == EventKind::Info {
            continue;
        }
        if r.answers.len() != setup.masters as usize {
            continue;
        }
        for (m, a) in r.answers.chars().enumerate() {
            if a != 'n' {
                continue;
            }
            let held_by_lease = leases.iter().filter(|(id, _)| **id != c.id).any(|(_, (p, reqs))| {
                alive_on(reqs, p, m, setup).is_some_and(|(from, to)| from <= c.done && to + 1 >= c.invoke)
            });
            let held_by_hidden = hidden.iter().any(|&(_, p, from, done)| {
                let to = if done == Millis::MAX { done } else { setup.lands_by(p, m, done) + ttl };
                from <= c.done && to.saturating_add(1) >= c.invoke
            });
            if !held_by_lease && !held_by_hidden && out.len() < 5 {
                out.push(Violation::new(
                    REDLOCK_VOTES,
                    Some(c.done),
                    format!(
                        "{} acquire [{}ms, {}ms] [{}]: master {m} said the lock was taken, but no other owner's key can have been there",
                        c.process, c.invoke, c.done, r.answers
                    ),
                ));
            }
        }
    }
    out
}

/// Verdicts, and each lease's answers to its own re-arms and deletes.
fn check_answers(events: &[Event], setup: &RedlockSetup) -> Vec<Violation> {
    let (quorum, ttl) = (setup.quorum(), setup.ttl_ms);
    let mut out = Vec::new();
    let mut leases: BTreeMap<u64, Lease> = BTreeMap::new();
    for c in calls(events) {
        let Some(r) = c.round else { continue };
        let what = c.kind.method();
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
                bad(format!(
                    "{who} was refused for want of a majority with {yes} yes answers [{}], quorum {quorum}",
                    r.answers
                ));
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
            // A round without one answer per master cannot be read per
            // master (`redlock-rounds` reports it).
            if answers.len() != setup.masters as usize {
                continue;
            }
            for (m, a) in answers.chars().enumerate() {
                let (Some(key), Some(&late)) = (l.keys.get(m).copied(), l.late.get(m)) else { continue };
                let next = match (key, a) {
                    (Key::Absent, 'y') if !late => {
                        bad(format!("{who}: master {m} confirmed the {label} of a key of ours it cannot hold (it refused the SET, or the key was already gone)"));
                        Key::Unknown
                    }
                    (Key::Present { done, .. }, 'y') if setup.clocks_trusted && !late && c.invoke > done + ttl + 1 => {
                        bad(format!(
                            "{who}: master {m} confirmed the {label} of a key of ours that expired by {}ms",
                            done + ttl
                        ));
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
    use crate::families::redlock::checks::calls::build::{granted, refused, B};

    fn setup() -> RedlockSetup {
        RedlockSetup::new(5, 300, 5)
    }

    /// A history whose first acquire's outcome is unknown: its keys may be
    /// on any master at any time, so every `no` to a SET is justified.
    fn squatted() -> B {
        let mut h = B::default();
        h.acquire("z", 0, 1, EventKind::Info, crate::families::redlock::checks::calls::build::round(""), false);
        h
    }

    #[test]
    fn a_justified_history_passes() {
        let mut h = squatted();
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
        let mut h = squatted();
        h.grant("a", 0, 20, "yynnt", 295);
        h.acquire("b", 500, 520, EventKind::Fail, refused("yyynn", "no-majority", 20), false);
        let v = check(&h.events, &setup());
        assert!(v[0].detail.contains("granted with 2 yes answers"), "{v:?}");
        assert!(v[1].detail.contains("refused for want of a majority with 3 yes"), "{v:?}");
        assert_eq!(v.len(), 2);
    }

    #[test]
    fn a_vote_from_a_master_that_refused_and_a_missing_live_key_fail() {
        let mut h = squatted();
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
    fn a_no_from_a_free_master_fails_and_one_from_a_taken_master_passes() {
        let mut h = B::default();
        let a = h.grant("a", 0, 20, "yyytt", 295);
        // Masters 0-2 hold a's key, 3-4 may (timed out): b's refusal is justified.
        h.acquire("b", 100, 120, EventKind::Fail, refused("nnnnn", "no-majority", 20), false);
        h.release("a", a, 200, 210, "yyyyy");
        // After the release (and the timed-out SETs' TTL) every master is free.
        h.grant("c", 700, 720, "yyyyn", 995);
        let v = check(&h.events, &setup());
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].detail.contains("c acquire [700ms, 720ms] [yyyyn]: master 4 said the lock was taken"), "{v:?}");
        // A timed-out SET under a fault may land until the fault ends.
        let mut s = setup();
        s.faults.push(crate::families::redlock::checks::calls::FaultWindow {
            from: 0,
            to: 500,
            client: Some("a".into()),
            node: None,
        });
        assert_eq!(check(&h.events, &s), vec![]);
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
