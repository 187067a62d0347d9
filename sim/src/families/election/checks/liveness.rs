//! `liveness` of an election: some node leads once the faults have healed,
//! a clean `stop()` or a term the library ended itself hands the lease
//! back at once, and `run()` campaigns until `stop()`.

use std::collections::BTreeMap;

use crate::checker::{Violation, LIVENESS};
use crate::families::election::api::{ELECTION_RUN, ELECTION_STOP};
use crate::families::election::reigns;
use crate::history::{Api, Event, EventKind, Millis};

/// `liveness` after a term the library ended itself while the lease's key
/// was still its own (a renewal answered too late: `DeadlineReached`; or
/// one that timed out: `RedisError`): the node hands the lease back as it
/// steps down, so some node leads within `bound` of `at` (when the late
/// reply has landed, or the renewal timed out; `after` says which) rather
/// than a whole TTL later. The caller judges only undisturbed spans.
pub(crate) fn check_hand_back(
    events: &[Event],
    election: &str,
    at: Millis,
    bound: Millis,
    after: &str,
) -> Vec<Violation> {
    let due = at + bound;
    let rs = reigns(events, election);
    if rs.iter().any(|r| r.from <= due && due < r.to) {
        return Vec::new();
    }
    let last = rs.iter().filter(|r| r.from <= due).max_by_key(|r| r.to);
    vec![Violation::new(
        LIVENESS,
        Some(due),
        format!(
            "{election}: no node led at {due}ms, {bound}ms after {after} at {at}ms{} (a leader that steps down while the key may still be its own hands it back: the next leader is due within a campaign interval and a round trip, not a TTL)",
            match last {
                Some(r) => format!(" (the last reign before it: {} until {}ms)", r.process, r.to),
                None => String::new(),
            }
        ),
    )]
}

/// `liveness` of the run loop itself: `Election::run` campaigns and renews
/// until `stop()`. A transient fault (a timeout, a dropped connection, a
/// restarted server) must cost a campaign, not the node's candidacy: a
/// `run()` that returns before its node's `stop()` was called is a
/// violation, whatever it returned. (Only a key space of the wrong type or
/// a corrupt counter may end it early, and no election scenario plants
/// those.)
pub(crate) fn check_runs_until_stopped(events: &[Event]) -> Vec<Violation> {
    let api = |e: &Event, api: &Api| e.kind == EventKind::Invoke && e.api.as_ref() == Some(api);
    let mut runs: BTreeMap<u64, &Event> = BTreeMap::new();
    let mut out = Vec::new();
    for e in events {
        if api(e, &ELECTION_RUN) {
            runs.insert(e.op_id.0, e);
            continue;
        }
        if e.kind == EventKind::Invoke {
            continue;
        }
        let Some(run) = runs.remove(&e.op_id.0) else { continue };
        let stopped = events.iter().any(|s| s.process == run.process && api(s, &ELECTION_STOP) && s.time <= e.time);
        if !stopped {
            out.push(Violation::new(
                LIVENESS,
                Some(e.time),
                format!(
                    "{}: Election::run (called at {}ms) returned at {}ms ({}) before stop() was called: a node must campaign until it is stopped",
                    run.process,
                    run.time,
                    e.time,
                    if e.kind == EventKind::Ok { "Ok" } else { "an error" }
                ),
            ));
        }
    }
    out
}

/// `liveness` after healing: once the last fault, stall and `stop()` are
/// over (at `healed`), some node must lead at `healed + bound` (the bound
/// being lease + campaign interval + round trips: the longest a healed
/// election can take to elect, a stale key expiring first). Judged only
/// when the run lasts past that instant (`length`); a run that ends sooner
/// proves nothing either way.
pub(crate) fn check_liveness(
    events: &[Event],
    election: &str,
    healed: Millis,
    bound: Millis,
    length: Millis,
) -> Vec<Violation> {
    let at = healed + bound;
    if at >= length {
        return Vec::new();
    }
    let rs = reigns(events, election);
    if let Some(r) = rs.iter().find(|r| r.from <= at && at < r.to) {
        // Healed and quiet: the leader must also keep leading (its renewals
        // confirmed) until the run ends, not step down and re-campaign.
        let end = events.last().map_or(0, |e| e.time).min(length);
        if r.to < end {
            return vec![Violation::new(
                LIVENESS,
                Some(r.to),
                format!(
                    "{election}: {} led at {at}ms, after the faults had healed at {healed}ms, but stopped leading at {}ms with no fault to explain it (renewals must keep a healthy leader leading)",
                    r.process, r.to
                ),
            )];
        }
        return Vec::new();
    }
    let last = rs.iter().filter(|r| r.from <= at).max_by_key(|r| r.to);
    vec![Violation::new(
        LIVENESS,
        Some(at),
        format!(
            "{election}: no node led at {at}ms, {bound}ms after the last fault healed at {healed}ms{}",
            match last {
                Some(r) => format!(" (the last reign before it: {} until {}ms)", r.process, r.to),
                None => " (nobody had led yet)".to_string(),
            }
        ),
    )]
}

/// A clean `stop()` hands over at once: for every `(node, at)` in `stops`
/// with no fault in `busy` (`[start, end)` spans) overlapping
/// `[at, at + bound]`, another node leads within `bound` ms of `at` (the
/// run ends at `length`). A stop that left the lease to expire hands over
/// a whole lease later.
///
/// Another node that already leads when `at` comes counts: the stopping
/// node then only believed it led (a stale leader under the tick-based
/// demotion, its term long taken over), had no lease to hand back, and the
/// election was never without a leader.
pub(crate) fn check_handover(
    events: &[Event],
    election: &str,
    stops: &[(&str, Millis)],
    busy: &[(Millis, Millis)],
    bound: Millis,
    length: Millis,
) -> Vec<Violation> {
    let rs = reigns(events, election);
    let mut out = Vec::new();
    for &(node, at) in stops {
        if at + bound >= length || busy.iter().any(|&(s, e)| s <= at + bound && e + 1 >= at) {
            continue;
        }
        // Leading at some instant from `at` on: a reign that began later,
        // or one already under way and not over by then.
        let next = rs.iter().filter(|r| r.process != node && r.to > at).map(|r| r.from.max(at)).min();
        if next.is_none_or(|n| n > at + bound) {
            out.push(Violation::new(
                LIVENESS,
                Some(at + bound),
                format!(
                    "{election}: {node} called stop() at {at}ms with no fault around it, but {} (a clean stop hands the lease back: the next leader is due within {bound}ms)",
                    match next {
                        Some(n) => format!("the next node led only at {n}ms, {}ms later", n - at),
                        None => "no other node led afterwards".to_string(),
                    }
                ),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::election::checks::fixtures::role;
    use crate::families::election::Role;
    use crate::history::{History, Op};

    #[test]
    fn a_run_that_returns_before_stop_is_a_liveness_violation() {
        let note = || Op::Note { text: "run".into() };
        let h = History::new();
        h.observe_at(10, "a", note());
        let run = h.call("a", ELECTION_RUN, note());
        h.observe_at(40, "b", note());
        let stop = h.call("b", ELECTION_STOP, note());
        h.ok(stop, "b", note());
        h.observe_at(50, "a", note());
        h.info(run, "a", note());
        let v = check_runs_until_stopped(&h.events());
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!((v[0].invariant.clone(), v[0].at), (LIVENESS, Some(50)));
        assert!(v[0].detail.contains("before stop() was called"), "{v:?}");

        // Stopped first (by its own node), then returned: as documented.
        let h = History::new();
        h.observe_at(10, "a", note());
        let run = h.call("a", ELECTION_RUN, note());
        h.observe_at(40, "a", note());
        let stop = h.call("a", ELECTION_STOP, note());
        h.observe_at(45, "a", note());
        h.ok(run, "a", note());
        h.ok(stop, "a", note());
        assert_eq!(check_runs_until_stopped(&h.events()), vec![]);
    }

    #[test]
    fn a_lease_kept_after_a_deadline_demotion_fails_hand_back() {
        let h = History::new();
        role(&h, 0, "a", Role::Leader, Some(1));
        role(&h, 394, "a", Role::Follower, Some(1));
        // The held renewal landed at 440; nobody leads 125 ms later.
        role(&h, 600, "b", Role::Leader, Some(2));
        let v = check_hand_back(&h.events(), "e", 440, 125, "a leader's held renewal landed");
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].invariant, LIVENESS);
        assert!(v[0].detail.contains("125ms after a leader's held renewal landed at 440ms"), "{v:?}");
        // Handed back: b leads by 470.
        let h = History::new();
        role(&h, 0, "a", Role::Leader, Some(1));
        role(&h, 394, "a", Role::Follower, Some(1));
        role(&h, 470, "b", Role::Leader, Some(2));
        role(&h, 900, "a", Role::Follower, None);
        assert_eq!(check_hand_back(&h.events(), "e", 440, 125, "a leader's renewal timed out"), vec![]);
    }

    #[test]
    fn a_clean_stop_must_hand_over_unless_another_node_already_leads() {
        // `a` calls stop() at 1000; the bound is 125 ms, the run 3000 ms.
        let handover = |roles: &[(u64, &str, Role, Option<u64>)], busy: &[(Millis, Millis)]| {
            let h = History::new();
            for &(t, p, r, epoch) in roles {
                role(&h, t, p, r, epoch);
            }
            check_handover(&h.events(), "e", &[("a", 1000)], busy, 125, 3000)
        };
        let (leader, resigned, follower) = (Role::Leader, Role::Resigned, Role::Follower);
        // a stops as the only leader; b takes over at 1200, past the bound:
        // the lease was left to expire.
        let v = handover(
            &[
                (0, "a", leader, Some(1)),
                (1010, "a", resigned, Some(1)),
                (1200, "b", leader, Some(2)),
                (3000, "b", follower, Some(2)),
            ],
            &[],
        );
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].detail.contains("the next node led only at 1200ms"), "{v:?}");
        // Handed over: b leads at 1060.
        let v = handover(
            &[
                (0, "a", leader, Some(1)),
                (1010, "a", resigned, Some(1)),
                (1060, "b", leader, Some(2)),
                (3000, "b", follower, Some(2)),
            ],
            &[],
        );
        assert_eq!(v, vec![]);
        // A fault around the stop: not judged.
        let v = handover(&[(0, "a", leader, Some(1)), (1010, "a", resigned, Some(1))], &[(900, 1001)]);
        assert_eq!(v, vec![]);
        // a only believed it led (stalled, then stopped under the tick-based
        // demotion): b has led since 400 and goes on leading.
        let v = handover(
            &[
                (0, "a", leader, Some(1)),
                (400, "b", leader, Some(2)),
                (1010, "a", resigned, Some(1)),
                (3000, "b", follower, Some(2)),
            ],
            &[],
        );
        assert_eq!(v, vec![]);
        // b's reign ended before the stop: it does not count.
        let v = handover(
            &[
                (0, "a", leader, Some(1)),
                (400, "b", leader, Some(2)),
                (900, "b", follower, Some(2)),
                (1010, "a", resigned, Some(1)),
                (3000, "c", follower, None),
            ],
            &[],
        );
        assert_eq!(v.len(), 1, "{v:?}");
        assert!(v[0].detail.contains("no other node led afterwards"), "{v:?}");
    }
}
