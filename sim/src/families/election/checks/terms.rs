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

use crate::api::{ELECTION_RUN, ELECTION_STOP};
use crate::checker::{completed, order, Violation, ELECTION, LIVENESS, SELF_FENCING};
use crate::history::{Api, Event, EventKind, Millis, Op, Role, WriteResult};
use crate::stats::reigns;

use crate::checker::MAX_REPORTED;

/// `self-fencing` for an election whose leaders demote themselves at their
/// lease's local deadline ([`Demotion::AtDeadline`]): no two nodes believe
/// they lead at the same simulated instant. A reign ends at the node's
/// recorded deadline even while it is frozen (see `stats::reigns`), so this is
/// exactly the promise: a leader stops trusting its lease before anyone else
/// can be granted it. (Under the reference's renew-tick demotion the same
/// overlap is the documented split-brain window, measured, not judged.)
///
/// [`Demotion::AtDeadline`]: redis_primitives::election::Demotion::AtDeadline
pub fn check_self_fencing(events: &[Event], election: &str) -> Vec<Violation> {
    let rs = reigns(events, election);
    let mut out = Vec::new();
    for (i, a) in rs.iter().enumerate() {
        for b in &rs[i + 1..] {
            let (from, to) = (a.from.max(b.from), a.to.min(b.to));
            if a.process != b.process && to > from {
                out.push(Violation::new(
                    SELF_FENCING,
                    Some(from),
                    format!(
                        "{election}: {} (epoch {}, {}..{}ms) and {} (epoch {}, {}..{}ms) both believed they led for {}ms",
                        a.process,
                        a.epoch.map_or("?".into(), |e| e.to_string()),
                        a.from,
                        a.to,
                        b.process,
                        b.epoch.map_or("?".into(), |e| e.to_string()),
                        b.from,
                        b.to,
                        to - from
                    ),
                ));
            }
        }
    }
    out.truncate(MAX_REPORTED);
    out
}

/// `self-fencing`, the deadline itself: a leader may trust its lease until
/// at most `sent + lease − drift`, where `sent` is when the acquire or
/// renewal that confirmed it was sent. The history does not see the
/// library's sends, but it sees when the node first reports the deadline
/// (`t`, at or after the reply), and every reply comes at least
/// `min_round_trip_ms` after its send. So a reported deadline later than
/// `t − min_round_trip + lease − drift` was measured from the wrong instant
/// (the reply, say) or with the wrong allowance. `trusted_ms` is
/// `lease − drift` rounded up to whole milliseconds; the drift comes from
/// the documented rule (a factor of the lease plus a constant), not from
/// the library's own arithmetic.
pub fn check_deadlines(
    events: &[Event],
    election: &str,
    trusted_ms: Millis,
    min_round_trip_ms: Millis,
) -> Vec<Violation> {
    let mut out = Vec::new();
    let mut seen: BTreeMap<(&str, u64, Millis), ()> = BTreeMap::new();
    for e in events {
        let Op::Role { election: el, role: Role::Leader, epoch, deadline: Some(d), .. } = &e.op else { continue };
        if el != election || e.kind != EventKind::Ok {
            continue;
        }
        if seen.insert((e.process.as_str(), epoch.unwrap_or(0), *d), ()).is_some() {
            continue;
        }
        let latest = (e.time + trusted_ms).saturating_sub(min_round_trip_ms);
        if *d > latest {
            out.push(Violation::new(
                SELF_FENCING,
                Some(e.time),
                format!(
                    "{election}: {} reported at {}ms that it trusts epoch {} until {d}ms, but a lease confirmed by a reply at or before {}ms was sent by {}ms and may be trusted until {latest}ms at most (lease - drift = {trusted_ms}ms)",
                    e.process,
                    e.time,
                    epoch.map_or("?".into(), |x| x.to_string()),
                    e.time,
                    e.time.saturating_sub(min_round_trip_ms),
                ),
            ));
        }
    }
    out.truncate(MAX_REPORTED);
    out
}

/// `liveness` after a term the library ended itself while the lease's key
/// was still its own (a renewal answered too late: `DeadlineReached`; or
/// one that timed out: `RedisError`): the node hands the lease back as it
/// steps down, so some node leads within `bound` of `at` (when the late
/// reply has landed, or the renewal timed out; `after` says which) rather
/// than a whole TTL later. The caller judges only undisturbed spans.
pub fn check_hand_back(events: &[Event], election: &str, at: Millis, bound: Millis, after: &str) -> Vec<Violation> {
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
pub fn check_failed_renewal(
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
pub fn check_superseded(
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

/// `liveness` of the run loop itself: `Election::run` campaigns and renews
/// until `stop()`. A transient fault (a timeout, a dropped connection, a
/// restarted server) must cost a campaign, not the node's candidacy: a
/// `run()` that returns before its node's `stop()` was called is a
/// violation, whatever it returned. (Only a key space of the wrong type or
/// a corrupt counter may end it early, and no election scenario plants
/// those.)
pub fn check_runs_until_stopped(events: &[Event]) -> Vec<Violation> {
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
pub fn check_liveness(
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
pub fn check_handover(
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

/// Checks election `election`; writes are those to key `resource`.
/// `self_fencing`: its leaders demote at their deadline (rule 2 applies).
pub fn check(events: &[Event], election: &str, resource: &str, self_fencing: bool) -> Vec<Violation> {
    let mut out = Vec::new();
    // Rules 1 and 2, in history order.
    let mut by_epoch: BTreeMap<u64, (&str, Millis)> = BTreeMap::new();
    let mut highest: Option<(u64, &str, Millis)> = None;
    // Rule 1 across one node's terms, from its callbacks (the library's own
    // word on where a term begins and ends; a belief polled every
    // millisecond may blink at a deadline met by a renewal in flight).
    // Per (node, epoch): elected at, and demoted at once the term ended.
    let nodes: std::collections::BTreeSet<&str> = events
        .iter()
        .filter(|e| matches!(&e.op, Op::Role { election: el, .. } if el == election))
        .map(|e| e.process.as_str())
        .collect();
    let mut terms: BTreeMap<(&str, u64), (Millis, Option<Millis>)> = BTreeMap::new();
    for e in events.iter().filter(|e| nodes.contains(e.process.as_str())) {
        let Op::ElectionCallback { elected, epoch, .. } = &e.op else { continue };
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
    for e in events {
        let Op::Role { election: el, role: Role::Leader, epoch: Some(epoch), .. } = &e.op else { continue };
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
    // Rule 3.
    let rs = reigns(events, election);
    let term_of = |process: &str, at: Millis| {
        rs.iter().position(|r| r.process == process && r.from <= at && at < r.to).map(|i| i as u64 + 1)
    };
    struct W<'a> {
        process: &'a str,
        invoked: Millis,
        done: Millis,
        term: u64,
        /// The term is the writer's reign number, not an epoch it carried.
        derived: bool,
    }
    impl order::Ordered for W<'_> {
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
            writes.push(W { process: &c.done.process, invoked: c.invoke_time, done: c.done.time, term, derived });
        }
    }
    for (a, b) in order::regressions(&writes) {
        let what = |w: &W<'_>| {
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
    crate::checker::capped(out, ELECTION)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::History;

    fn role(h: &History, t: u64, p: &str, r: Role, epoch: Option<u64>) {
        h.observe_at(t, p, Op::Role { election: "e".into(), role: r, epoch, deadline: None });
    }

    fn write(h: &History, p: &str, t0: u64, t1: u64, token: Option<u64>, result: WriteResult) {
        let op =
            |r| Op::Write { key: "res".into(), value: format!("{p}@{t0}"), token, fenced: token.is_some(), result: r };
        let id = h.invoke_at(t0, p, op(None));
        h.ok(id, p, op(Some(result)));
        let _ = t1;
    }

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
        assert_eq!((v[0].invariant.as_str(), v[0].at), (LIVENESS, Some(50)));
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
    fn a_deadline_measured_from_the_reply_is_caught() {
        let h = History::new();
        let role =
            |deadline| Op::Role { election: "e".into(), role: Role::Leader, epoch: Some(1), deadline: Some(deadline) };
        // Sent at 100, reply at 104, seen at 104: 100 + 394 is sound.
        h.observe_at(104, "a", role(494));
        assert!(check_deadlines(&h.events(), "e", 394, 2).is_empty());
        // Measured from the reply: 104 + 394.
        h.observe_at(204, "a", role(598));
        let v = check_deadlines(&h.events(), "e", 394, 2);
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].invariant, SELF_FENCING);
    }

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
        assert_eq!((v[0].invariant.as_str(), v[0].at), (ELECTION, Some(1450)));
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
                h.observe_at(t, "node-1", Op::ElectionCallback { elected, epoch, deadline_reached: false })
            };
            callback(1233, true, 2);
            role(&h, 1234, "node-1", Role::Leader, Some(2));
            callback(1650, false, 2);
            role(&h, 1651, "node-1", Role::Follower, Some(2));
            callback(1690, true, again);
            role(&h, 1691, "node-1", Role::Leader, Some(again));
            // Callbacks of a process outside the election are not its own.
            h.observe_at(1700, "other", Op::ElectionCallback { elected: true, epoch: 2, deadline_reached: false });
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
