//! `election`: leadership is a sequence of epochs, one leader each, and the
//! resource never goes back to an older epoch.
//!
//! Three rules, over the `Role` observations of one election and the `Write`s
//! its leaders make to a resource key:
//!
//! 1. at most one leader per epoch: two different nodes never report
//!    `Leader` with the same epoch, and one node never leads one epoch in two
//!    terms (its `on_elected` for an epoch after its `on_demoted` for it:
//!    every campaign won draws a new epoch, so a repeat is an epoch granted
//!    twice, the lost counter of `election-failover`, or a term revived);
//! 2. epochs strictly increase: a node that becomes leader never reports an
//!    epoch lower than one already reported by another node (judged only
//!    for leaders that stop believing at their deadline: under the
//!    reference's renew-tick demotion a node frozen while its campaign was
//!    answered wakes and leads on the stale epoch — the documented
//!    split-brain window, measured, and rule 3 still judges its writes);
//! 3. no write with a lower epoch is accepted after a higher one: if a write
//!    carrying epoch e was accepted (completed `Ok`) before a write carrying
//!    e' < e was invoked, the latter must not be accepted.
//!
//! Rule 3 is the one that matters downstream and the one an election without
//! epochs (`election-no-epoch`) breaks. Its writes carry no epoch, so the
//! checker attributes each write to the writer's *reign* (a maximal interval
//! in which it reported `Leader`), numbered in order of start: the "epoch"
//! the writer believed it had, had anyone counted. Two leaders at once is
//! not itself a violation here — that is the split-brain window the election
//! accepts under pauses and that the histograms measure — but a stale
//! leader's write landing after the new leader's is.

use std::collections::BTreeMap;

use crate::checker::{completed, order, Violation};
use crate::families::election::invariants::ELECTION;
use crate::families::election::{reigns, ElectionOp, Role};
use crate::history::{Event, EventKind, Millis, Op, WriteResult};

use crate::checker::MAX_REPORTED;

/// Checks election `election`; writes are those to key `resource`.
/// `self_fencing`: its leaders demote at their deadline (rule 2 applies).
pub(crate) fn check(events: &[Event], election: &str, resource: &str, self_fencing: bool) -> Vec<Violation> {
    let mut out = epochs_led_twice(events, election);
    out.extend(leaders_by_epoch(events, election, self_fencing));
    out.extend(stale_writes(events, election, resource));
    crate::checker::capped(out, ELECTION)
}

/// Rule 1 across one node's terms, from its callbacks (the library's own
/// word on where a term begins and ends; a belief polled every
/// millisecond may blink at a deadline met by a renewal in flight).
fn epochs_led_twice(events: &[Event], election: &str) -> Vec<Violation> {
    let mut out = Vec::new();
    // Per (node, epoch): elected at, and demoted at once the term ended.
    let nodes: std::collections::BTreeSet<&str> = events
        .iter()
        .filter(
            |e| matches!(e.op.family::<ElectionOp>(), Some(ElectionOp::Role { election: el, .. }) if el == election),
        )
        .map(|e| e.process.as_str())
        .collect();
    let mut terms: BTreeMap<(&str, u64), (Millis, Option<Millis>)> = BTreeMap::new();
    for e in events.iter().filter(|e| nodes.contains(e.process.as_str())) {
        let Some(ElectionOp::ElectionCallback { elected, epoch, .. }) = e.op.family::<ElectionOp>() else { continue };
        let key = (e.process.as_str(), *epoch);
        match (elected, terms.get_mut(&key)) {
            (true, Some(&mut (began, Some(ended)))) => out.push(Violation::new(
                ELECTION,
                Some(e.time),
                format!(
                    "{election}: {} led epoch {epoch} in two terms (elected at {began}ms, demoted at {ended}ms, elected again at {}ms): every term won needs a new epoch",
                    e.process, e.time
                ),
            )),
            (false, Some((_, ended))) => *ended = Some(e.time),
            _ => {}
        }
        if *elected {
            terms.insert(key, (e.time, None));
        }
    }
    out
}

/// Rules 1 and 2, in history order, from the leaders' `Role` events.
fn leaders_by_epoch(events: &[Event], election: &str, self_fencing: bool) -> Vec<Violation> {
    let mut out = Vec::new();
    let mut by_epoch: BTreeMap<u64, (&str, Millis)> = BTreeMap::new();
    let mut highest: Option<(u64, &str, Millis)> = None;
    for e in events {
        let Some(ElectionOp::Role { election: el, role: Role::Leader, epoch: Some(epoch), .. }) =
            e.op.family::<ElectionOp>()
        else {
            continue;
        };
        if el != election || e.kind != EventKind::Ok {
            continue;
        }
        match by_epoch.get(epoch) {
            Some((p, t)) if *p != e.process => out.push(Violation::new(
                ELECTION,
                Some(e.time),
                format!("{election}: {} and {} both led epoch {epoch} (at {t}ms and {}ms)", p, e.process, e.time),
            )),
            Some(_) => {}
            None => {
                by_epoch.insert(*epoch, (&e.process, e.time));
            }
        }
        if let Some((h, p, t)) = highest {
            if *epoch < h && p != e.process && self_fencing {
                out.push(Violation::new(
                    ELECTION,
                    Some(e.time),
                    format!(
                        "{election}: {} became leader with epoch {epoch} at {}ms after {p} had led epoch {h} at {t}ms",
                        e.process, e.time
                    ),
                ));
            }
        }
        if highest.is_none_or(|(h, _, _)| *epoch > h) {
            highest = Some((*epoch, &e.process, e.time));
        }
    }
    out
}

/// An accepted write to the resource, numbered by the epoch it carried or,
/// without one, by its writer's reign.
struct AcceptedWrite<'a> {
    process: &'a str,
    invoked: Millis,
    done: Millis,
    term: u64,
    /// The term is the writer's reign number, not an epoch it carried.
    derived: bool,
}

impl order::Ordered for AcceptedWrite<'_> {
    fn invoked(&self) -> Millis {
        self.invoked
    }
    fn done(&self) -> Millis {
        self.done
    }
    fn number(&self) -> u64 {
        self.term
    }
}

/// Rule 3: no write with a lower epoch (or reign) accepted after a higher
/// one.
fn stale_writes(events: &[Event], election: &str, resource: &str) -> Vec<Violation> {
    let mut out = Vec::new();
    let rs = reigns(events, election);
    let term_of = |process: &str, at: Millis| {
        rs.iter().position(|r| r.process == process && r.from <= at && at < r.to).map(|i| i as u64 + 1)
    };
    let mut writes = Vec::new();
    for c in completed(events) {
        let Op::Write { key, token, result: Some(WriteResult::Accepted), .. } = &c.done.op else { continue };
        if key != resource || c.done.kind != EventKind::Ok {
            continue;
        }
        let (term, derived) = match token {
            Some(t) => (Some(*t), false),
            None => (term_of(&c.done.process, c.invoke_time), true),
        };
        if let Some(term) = term {
            writes.push(AcceptedWrite {
                process: &c.done.process,
                invoked: c.invoke_time,
                done: c.done.time,
                term,
                derived,
            });
        }
    }
    for (a, b) in order::regressions(&writes) {
        let what = |w: &AcceptedWrite<'_>| {
            if w.derived {
                format!("reign #{} (no epoch)", w.term)
            } else {
                format!("epoch {}", w.term)
            }
        };
        out.push(Violation::new(
            ELECTION,
            Some(b.done),
            format!(
                "{election}: {resource} accepted a write of {} from {} at {}ms after accepting {} from {} at {}ms",
                what(b),
                b.process,
                b.done,
                what(a),
                a.process,
                a.done
            ),
        ));
    }
    out
}

/// `election`: a renewal that fails ends the term. `node` led at `at`, and
/// the next renewal it sent failed — held at the server past the response
/// timeout (`DemotionReason::RedisError`), or refused because its key was
/// taken away (`DemotionReason::LeaseLost`); `why` says which, for the
/// message. By `until` (the renewal's send, its answer or timeout and the
/// observer's millisecond) the reign it had at `at` must be over, under
/// either demotion. A leader that takes the error
/// for a passing one and renews again goes on leading a term whose renewal
/// failed, which under `OnRenewTick` is all that keeps it from leading
/// blind. The caller judges only spans no other fault touches.
pub(crate) fn check_failed_renewal(
    events: &[Event],
    election: &str,
    node: &str,
    at: Millis,
    until: Millis,
    why: &str,
) -> Vec<Violation> {
    let rs = reigns(events, election);
    let Some(r) = rs.iter().find(|r| r.process == node && r.from <= at && at < r.to) else { return Vec::new() };
    if r.to <= until {
        return Vec::new();
    }
    vec![Violation::new(
        ELECTION,
        Some(until),
        format!(
            "{election}: {node} still led{} at {until}ms, though {why} (a failed renewal ends the term; it led on until {}ms)",
            r.epoch.map(|e| format!(" epoch {e}")).unwrap_or_default(),
            r.to
        ),
    )]
}

/// `election`: a leader superseded by a newer epoch hears so at its next
/// renewal, and a refused renewal ends the term (`DemotionReason::LeaseLost`)
/// under either demotion. A newer epoch is only ever issued once the older
/// leader's key has expired or been deleted, so from then on every renewal
/// of the older term is refused: when a reign with a higher epoch overlaps
/// another node's reign, the older must end within `bound` (a renewal
/// interval, a response timeout and the observer's slack) of the later of
/// the two starts. Every span in `disturbed` (a fault, a freeze, a held
/// request) that reaches into that window postpones it to the span's end:
/// a frozen or cut-off node cannot hear its refusal. Judged only while the
/// run was sampled (`until`).
///
/// Under `OnRenewTick` this is the only bound on the split-brain window
/// after a pause; a leader that takes a refused renewal for a passing one
/// keeps leading beside the new one for the rest of the run.
pub(crate) fn check_superseded(
    events: &[Event],
    election: &str,
    bound: Millis,
    disturbed: &[(Millis, Millis)],
    until: Millis,
) -> Vec<Violation> {
    let rs = reigns(events, election);
    let mut out = Vec::new();
    for a in &rs {
        let Some(older) = a.epoch else { continue };
        let newer = rs
            .iter()
            .filter(|b| b.process != a.process && b.epoch.is_some_and(|e| e > older) && b.from < a.to && a.from < b.to);
        let Some(b) = newer.min_by_key(|b| b.from.max(a.from)) else { continue };
        let mut from = a.from.max(b.from);
        // Postpone past every disturbance reaching into the window, until
        // none does (each step only moves `from` later).
        while let Some(end) = disturbed.iter().filter(|&&(s, e)| s <= from + bound && e > from).map(|&(_, e)| e).max() {
            from = end;
        }
        let due = from + bound;
        if due < a.to && due < until {
            out.push(Violation::new(
                ELECTION,
                Some(due),
                format!(
                    "{election}: {} still led epoch {older} at {due}ms though {} led epoch {} from {}ms: a newer epoch means the older lease is gone, its next renewal is refused and the term ends (within {bound}ms of {from}ms, the end of the last fault or freeze around it); it led on until {}ms",
                    a.process,
                    b.process,
                    b.epoch.map_or("?".into(), |e| e.to_string()),
                    b.from,
                    a.to
                ),
            ));
        }
    }
    out.truncate(MAX_REPORTED);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::election::checks::fixtures::{role, write};
    use crate::history::History;

    #[test]
    fn a_superseded_leader_ends_its_term_within_the_bound() {
        // a leads epoch 4; b is elected with epoch 5 at 1000 (a's key gone).
        let h = History::new();
        role(&h, 100, "a", Role::Leader, Some(4));
        role(&h, 1000, "b", Role::Leader, Some(5));
        role(&h, 1120, "a", Role::Follower, Some(4));
        role(&h, 3000, "b", Role::Follower, Some(5));
        assert!(check_superseded(&h.events(), "e", 450, &[], 3500).is_empty());
        // a led on: refused renewals taken for passing ones.
        let h = History::new();
        role(&h, 100, "a", Role::Leader, Some(4));
        role(&h, 1000, "b", Role::Leader, Some(5));
        role(&h, 2500, "a", Role::Follower, Some(4));
        role(&h, 3000, "b", Role::Follower, Some(5));
        let v = check_superseded(&h.events(), "e", 450, &[], 3500);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!((v[0].invariant.clone(), v[0].at), (ELECTION, Some(1450)));
        assert!(v[0].detail.contains("a still led epoch 4 at 1450ms"), "{v:?}");
        // A freeze reaching into the window postpones it (a chain of two:
        // the second starts inside the first's window), ...
        let frozen = [(900, 1300), (1600, 2100)];
        assert!(check_superseded(&h.events(), "e", 450, &frozen, 3500).is_empty());
        // ... one that starts after the window does not.
        let v = check_superseded(&h.events(), "e", 450, &[(1500, 2400)], 3500);
        assert_eq!(v.len(), 1, "{v:?}");
        // Nothing is judged past the sampled end, nor an older epoch
        // elected second against a newer one it never overlapped.
        assert!(check_superseded(&h.events(), "e", 450, &[], 1400).is_empty());
        let h = History::new();
        role(&h, 100, "b", Role::Leader, Some(5));
        role(&h, 900, "b", Role::Follower, Some(5));
        role(&h, 1000, "a", Role::Leader, Some(4));
        role(&h, 3000, "a", Role::Follower, Some(4));
        assert!(check_superseded(&h.events(), "e", 450, &[], 3500).is_empty());
    }

    #[test]
    fn a_failed_renewal_ends_the_term() {
        // a leads epoch 4 from 100; a renewal held from 500 must end it by 890.
        let h = History::new();
        role(&h, 100, "a", Role::Leader, Some(4));
        role(&h, 850, "a", Role::Follower, Some(4));
        assert!(check_failed_renewal(&h.events(), "e", "a", 500, 890, "its renewal was held").is_empty());
        // Another node's reign, or none at `at`, is not judged.
        assert!(check_failed_renewal(&h.events(), "e", "b", 500, 890, "its renewal was held").is_empty());
        assert!(check_failed_renewal(&h.events(), "e", "a", 50, 60, "its renewal was held").is_empty());
        // Led on past the bound (the error taken for a passing one).
        let h = History::new();
        role(&h, 100, "a", Role::Leader, Some(4));
        role(&h, 2000, "a", Role::Follower, Some(4));
        let v = check_failed_renewal(&h.events(), "e", "a", 500, 890, "its renewal was held");
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].invariant, ELECTION);
        assert!(v[0].detail.contains("a still led epoch 4 at 890ms"), "{v:?}");
    }

    #[test]
    fn split_brain_with_fenced_writes_passes() {
        // Reference case 27: a stalls, b takes over with epoch 2, a wakes
        // still believing, its write is refused, then it demotes.
        let h = History::new();
        role(&h, 0, "a", Role::Leader, Some(1));
        write(&h, "a", 10, 11, Some(1), WriteResult::Accepted);
        role(&h, 420, "b", Role::Leader, Some(2));
        write(&h, "b", 430, 431, Some(2), WriteResult::Accepted);
        write(&h, "a", 1510, 1511, Some(1), WriteResult::Rejected { highest_seen: 2 });
        role(&h, 1512, "a", Role::Follower, Some(1));
        assert_eq!(check(&h.events(), "e", "res", true), vec![]);
    }

    #[test]
    fn two_leaders_of_one_epoch_and_a_lower_epoch_fail() {
        let h = History::new();
        role(&h, 0, "a", Role::Leader, Some(3));
        role(&h, 10, "b", Role::Leader, Some(3));
        role(&h, 20, "c", Role::Leader, Some(2));
        let v = check(&h.events(), "e", "res", true);
        assert_eq!(v.len(), 2, "{v:?}");
        assert!(v[0].detail.contains("a and b both led epoch 3"), "{v:?}");
        assert!(v[1].detail.contains("c became leader with epoch 2"), "{v:?}");
    }

    #[test]
    fn one_node_never_leads_one_epoch_in_two_terms() {
        // Seed 41000984 of election-failover: node-1 won epoch 2, was demoted
        // when the failover lost its lease, and won 2 again from the counter
        // the promoted replica had. Judged with and without self-fencing.
        let run = |again: u64| {
            let h = History::new();
            let callback = |t, elected, epoch| {
                h.observe_at(t, "node-1", ElectionOp::ElectionCallback { elected, epoch, deadline_reached: false })
            };
            callback(1233, true, 2);
            role(&h, 1234, "node-1", Role::Leader, Some(2));
            callback(1650, false, 2);
            role(&h, 1651, "node-1", Role::Follower, Some(2));
            callback(1690, true, again);
            role(&h, 1691, "node-1", Role::Leader, Some(again));
            // Callbacks of a process outside the election are not its own.
            h.observe_at(
                1700,
                "other",
                ElectionOp::ElectionCallback { elected: true, epoch: 2, deadline_reached: false },
            );
            (check(&h.events(), "e", "res", true), check(&h.events(), "e", "res", false))
        };
        for v in [run(2).0, run(2).1] {
            assert_eq!(v.len(), 1, "{v:?}");
            assert!(
                v[0].detail.contains(
                    "node-1 led epoch 2 in two terms (elected at 1233ms, demoted at 1650ms, elected again at 1690ms)"
                ),
                "{v:?}"
            );
        }
        // A new epoch for the new term is what a won campaign draws.
        assert_eq!(run(3), (vec![], vec![]));
    }

    #[test]
    fn a_lower_epoch_after_a_higher_is_measured_not_judged_without_self_fencing() {
        let h = History::new();
        role(&h, 0, "a", Role::Leader, Some(3));
        role(&h, 20, "c", Role::Leader, Some(2));
        assert_eq!(check(&h.events(), "e", "res", false), vec![]);
        assert_eq!(check(&h.events(), "e", "res", true).len(), 1);
    }

    #[test]
    fn without_epochs_a_stale_leaders_late_write_fails() {
        let h = History::new();
        role(&h, 0, "a", Role::Leader, None);
        write(&h, "a", 10, 11, None, WriteResult::Accepted);
        role(&h, 420, "b", Role::Leader, None);
        write(&h, "b", 430, 431, None, WriteResult::Accepted);
        // a resumes after its pause and writes before noticing.
        write(&h, "a", 1510, 1511, None, WriteResult::Accepted);
        role(&h, 1520, "a", Role::Follower, None);
        let v = check(&h.events(), "e", "res", true);
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].detail.contains("reign #1 (no epoch) from a"), "{v:?}");
    }
}
