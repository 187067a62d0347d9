//! Unit tests of the guarded-body rules: hand-made histories of one
//! guarded call each, with the outcome that passes and the one that fails.

use super::*;
use crate::families::lock::op::{GuardedResult, LockOp};
use crate::history::{EventKind, History, Op, OpId};

fn acq(h: &History, p: &str, t0: u64, t1: u64, token: u64) {
    let op = |token| LockOp::Acquire { name: "l".into(), ttl_ms: 100, token, deadline: None };
    let id = h.invoke_at(t0, p, op(None));
    h.complete_at(t1, id, p, EventKind::Ok, op(Some(token)));
}

fn step(h: &History, p: &str, t: u64, token: u64, complete: bool) -> OpId {
    let op = Op::Write { key: "k".into(), value: format!("{p}-{t}"), token: Some(token), fenced: true, result: None };
    let id = h.invoke_at(t, p, op.clone());
    if complete {
        h.complete_at(t + 1, id, p, EventKind::Ok, op);
    }
    id
}

fn guarded(h: &History, t0: u64, build: impl FnOnce(&History), t1: u64, outcome: GuardedResult) {
    let op = |token, outcome| LockOp::Guarded { name: "l".into(), token, outcome, every_ms: None };
    let id = h.invoke_at(t0, "a", op(None, None));
    build(h);
    h.complete_at(t1, id, "a", EventKind::Ok, op(Some(1), Some(outcome)));
}

#[test]
fn a_body_that_stops_in_time_passes() {
    let h = History::new();
    guarded(
        &h,
        0,
        |h| {
            acq(h, "a", 0, 2, 1);
            step(h, "a", 10, 1, true);
            step(h, "a", 50, 1, false); // dropped mid-flight at the cancel
        },
        95,
        GuardedResult::Cancelled { at: 90, deadline_reached: false },
    );
    acq(&h, "b", 150, 152, 2);
    assert_eq!(check(&h.events(), &[], &[(0, 10_000)], &[], &BTreeMap::new()), vec![]);
}

fn acq_until(h: &History, p: &str, t0: u64, t1: u64, token: u64, deadline: u64) {
    let op = |token| LockOp::Acquire { name: "l".into(), ttl_ms: 100, token, deadline: Some(deadline) };
    let id = h.invoke_at(t0, p, op(None));
    h.complete_at(t1, id, p, EventKind::Ok, op(Some(token)));
}

/// A guarded call of `a` (token 1, trusted until 90 ms) whose first
/// request after the acquire was held `ms` and ran at `ran`, with a
/// step at 10 ms and one at `late` (completed or not), ending at `end`
/// with `outcome`; and the execution log that says when it ran.
fn held_call(ms: u64, ran: u64, late: (u64, bool), end: u64, outcome: GuardedResult) -> (History, Vec<Execution>) {
    let h = History::new();
    guarded(
        &h,
        0,
        |h| {
            acq_until(h, "a", 0, 2, 1, 90);
            h.observe_at(2, "a", Op::Delayed { node: 0, ms, mentioning: Some("lock:{l}".into()) });
            step(h, "a", 10, 1, true);
            step(h, "a", late.0, 1, late.1);
        },
        end,
        outcome,
    );
    let log = Execution {
        client: "a".into(),
        command: "EVALSHA".into(),
        key: None,
        args: Vec::new(),
        server_unix_ms: ran,
        sim_ms: ran,
        taken_ms: ran - ms,
        held_ms: ms,
        reply: crate::Reply::Other,
    };
    (h, vec![log])
}

#[test]
fn a_body_that_runs_past_its_deadline_while_the_first_extend_is_held_fails() {
    let (h, ran) = held_call(60, 100, (95, true), 130, GuardedResult::Cancelled { at: 125, deadline_reached: false });
    let v = check(&h.events(), &ran, &[(0, 10_000)], &[], &BTreeMap::new());
    // The step after the deadline, and the cancellation 35 ms after it.
    assert_eq!(v.len(), 2, "{v:?}");
    assert!(v.iter().any(|v| v.detail.contains("step at 95ms") && v.detail.contains("ran at 100ms")), "{v:?}");
    assert!(v.iter().any(|v| v.detail.contains("dropped its body at 125ms")), "{v:?}");
    // Without the execution log nothing says when it ran: no verdict.
    assert_eq!(check(&h.events(), &[], &[(0, 10_000)], &[], &BTreeMap::new()), vec![]);
}

#[test]
fn a_guard_that_waits_for_the_held_extend_instead_of_its_deadline_fails() {
    let run_reaching = |at: u64, frozen: &[(u64, u64)], reaches: &BTreeMap<String, Vec<(u64, u64)>>| {
        // The last step is queued behind the held extend: never answered.
        let outcome = GuardedResult::Cancelled { at, deadline_reached: at <= 91 };
        let (h, ran) = held_call(60, 100, (80, false), at + 1, outcome);
        check(&h.events(), &ran, &[(0, 10_000)], frozen, reaches)
    };
    let run = |at: u64, frozen: &[(u64, u64)]| run_reaching(at, frozen, &BTreeMap::new());
    assert_eq!(run(91, &[]), vec![]);
    let v = run(104, &[]);
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].detail.contains("14ms after the lease's local deadline of 90ms"), "{v:?}");
    // A caller frozen across the deadline gives up when it thaws.
    assert_eq!(run(104, &[(85, 103)]), vec![]);
    // Another client's pause excuses nothing when the faults that reach
    // the caller are known and none spans the deadline...
    let v = run_reaching(104, &[(85, 103)], &reaching("a", &[(0, 20)]));
    assert_eq!(v.len(), 1, "{v:?}");
    // ...and one of those that does excuses it.
    assert_eq!(run_reaching(104, &[], &reaching("a", &[(85, 103)])), vec![]);
}

#[test]
fn a_body_past_its_first_deadline_is_fine_when_the_held_request_ran_before_it() {
    let (h, ran) = held_call(40, 70, (95, true), 130, GuardedResult::Completed);
    assert_eq!(check(&h.events(), &ran, &[(0, 10_000)], &[], &BTreeMap::new()), vec![]);
}

#[test]
fn a_body_step_after_someone_else_was_granted_fails() {
    let h = History::new();
    guarded(
        &h,
        0,
        |h| {
            acq(h, "a", 0, 2, 1);
            step(h, "a", 10, 1, true);
            acq(h, "b", 150, 152, 2);
            step(h, "a", 160, 1, true);
        },
        170,
        GuardedResult::Completed,
    );
    let v = check(&h.events(), &[], &[(0, 10_000)], &[], &BTreeMap::new());
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].detail.contains("outlived its lease"), "{v:?}");
}

#[test]
fn steps_after_cancel_or_unfinished_on_completion_fail() {
    let h = History::new();
    guarded(
        &h,
        0,
        |h| {
            acq(h, "a", 0, 2, 1);
            step(h, "a", 60, 1, true);
        },
        70,
        GuardedResult::Cancelled { at: 50, deadline_reached: false },
    );
    guarded(
        &h,
        100,
        |h| {
            acq(h, "a", 100, 102, 1);
            step(h, "a", 110, 1, false);
        },
        120,
        GuardedResult::Completed,
    );
    let v = check(&h.events(), &[], &[(0, 10_000)], &[], &BTreeMap::new());
    assert_eq!(v.len(), 2, "{v:?}");
}

#[test]
fn a_cancellation_reported_after_the_body_was_dropped_fails() {
    let run = |dropped: u64, outcome: GuardedResult| {
        let h = History::new();
        guarded(
            &h,
            0,
            |h| {
                acq(h, "a", 0, 2, 1);
                h.observe_at(dropped, "a", LockOp::BodyDropped { name: "l".into(), token: 1 });
            },
            95,
            outcome,
        );
        check(&h.events(), &[], &[(0, 10_000)], &[], &BTreeMap::new())
    };
    let cancelled = GuardedResult::Cancelled { at: 90, deadline_reached: false };
    assert_eq!(run(90, cancelled), vec![]);
    assert_eq!(run(89, cancelled), vec![], "the two readings may straddle a millisecond");
    // `at` taken when the release returned, 7 ms after the drop.
    let v = run(83, cancelled);
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].detail.contains("dropped at 83ms"), "{v:?}");
    // A body dropped unfinished is not a completed one.
    let v = run(50, GuardedResult::Completed);
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].detail.contains("dropped unfinished"), "{v:?}");
}

#[test]
fn a_body_completed_past_an_unmoved_deadline_fails() {
    // Acquired over 0-2 ms with a deadline of 291 ms, every 250 ms; the
    // body's end (its release invoked) at `end`.
    let run = |end: u64, extended_at: Option<u64>| {
        let h = History::new();
        let op = |token, outcome| LockOp::Guarded { name: "l".into(), token, outcome, every_ms: Some(250) };
        let id = h.invoke_at(0, "a", op(None, None));
        acq_until(&h, "a", 0, 2, 1, 291);
        h.invoke_at(end, "a", LockOp::Release { name: "l".into(), token: Some(1) });
        h.complete_at(end + 1, id, "a", EventKind::Ok, op(Some(1), Some(GuardedResult::Completed)));
        let log: Vec<Execution> = extended_at
            .into_iter()
            .map(|t| Execution {
                client: "a".into(),
                command: "EVALSHA".into(),
                key: Some("lock:{l}".into()),
                args: Vec::new(),
                server_unix_ms: t,
                sim_ms: t,
                taken_ms: t,
                held_ms: 0,
                reply: crate::Reply::Other,
            })
            .collect();
        check(&h.events(), &log, &[], &[], &BTreeMap::new())
            .into_iter()
            .filter(|v| v.detail.contains("nothing moved the deadline"))
            .count()
    };
    assert_eq!(run(200, None), 0, "ended before the deadline");
    assert_eq!(run(292, None), 0, "within the millisecond the two readings may straddle");
    assert_eq!(run(400, None), 1, "ready together with the expired deadline");
    assert_eq!(run(400, Some(252)), 0, "an extension ran: the deadline may have moved");
}

/// A guarded call of `a` on `l` (every 100 ms, token 1) from 0 ms to
/// `end`, whose key is taken away at `taken` (if any), with `outcome`.
fn every_100(h: &History, taken: Option<u64>, end: u64, outcome: GuardedResult) {
    let op = |token, outcome| LockOp::Guarded { name: "l".into(), token, outcome, every_ms: Some(100) };
    let id = h.invoke_at(0, "a", op(None, None));
    acq_until(h, "a", 0, 2, 1, 291);
    if let Some(t) = taken {
        h.observe_at(t, "a", LockOp::TakenAway { name: "l".into(), token: Some(1) });
    }
    h.complete_at(end, id, "a", EventKind::Ok, op(Some(1), Some(outcome)));
}

fn reaching(process: &str, spans: &[(u64, u64)]) -> BTreeMap<String, Vec<(u64, u64)>> {
    BTreeMap::from([(process.to_string(), spans.to_vec())])
}

#[test]
fn a_guard_that_keeps_a_body_whose_key_was_taken_away_fails() {
    let run = |at: u64, reach: &BTreeMap<String, Vec<(u64, u64)>>| {
        let h = History::new();
        every_100(&h, Some(5), at + 1, GuardedResult::Cancelled { at, deadline_reached: at >= 291 });
        check(&h.events(), &[], &[(0, 10_000)], &[], reach)
    };
    // Refused at the first extension (sent at 100 ms): in time, and not
    // a liveness violation although no fault reached it.
    assert_eq!(run(110, &reaching("a", &[])), vec![]);
    // Kept until the local deadline.
    let v = run(291, &reaching("a", &[]));
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].detail.contains("overwritten with another owner at 5ms"), "{v:?}");
    assert!(v[0].detail.contains("dropped by 130ms"), "{v:?}");
    // A fault that reaches `a` in the span excuses it; one that reaches
    // only another process does not.
    assert_eq!(run(291, &reaching("a", &[(50, 60)])), vec![]);
    let mut other = reaching("a", &[]);
    other.insert("b".into(), vec![(50, 60)]);
    assert_eq!(run(291, &other).len(), 1);
}

#[test]
fn a_cancelled_call_that_waits_on_its_release_past_one_interval_fails() {
    // Refused at the first extension (key taken at 5 ms), body dropped at
    // 110 ms; the release may take one interval (100 ms), no more.
    // `freezes`: client pauses; `reach`: the faults reaching `a`.
    let run = |end: u64, freezes: &[(u64, u64)], reach: &[(u64, u64)]| {
        let h = History::new();
        every_100(&h, Some(5), end, GuardedResult::Cancelled { at: 110, deadline_reached: false });
        check(&h.events(), &[], &[(0, 10_000)], freezes, &reaching("a", reach))
            .into_iter()
            .filter(|v| v.detail.contains("after its body was dropped"))
            .count()
    };
    assert_eq!(run(210, &[], &[]), 0);
    assert_eq!(run(211, &[], &[]), 1);
    // The caller's own pause after the drop explains a late return.
    assert_eq!(run(400, &[(150, 390)], &[(150, 390)]), 0);
    // Neither another client's pause, nor a fault on a link (it slows the
    // release, not the caller's timer), nor a pause that ended at the drop.
    assert_eq!(run(400, &[(150, 390)], &[]), 1);
    assert_eq!(run(400, &[], &[(150, 390)]), 1);
    assert_eq!(run(400, &[(20, 110)], &[(20, 110)]), 1);
}

/// [`every_100`] cancelled at 100 ms and returned at 102 ms, then the
/// caller reads the name's remaining TTL over 103-105 ms.
fn cancelled_then_read(taken: Option<u64>, left: Option<u64>, also: impl FnOnce(&History)) -> History {
    let h = History::new();
    every_100(&h, taken, 102, GuardedResult::Cancelled { at: 100, deadline_reached: false });
    also(&h);
    let id = h.invoke_at(103, "a", LockOp::RemainingTtl { name: "l".into(), ms: None });
    h.complete_at(105, id, "a", EventKind::Ok, LockOp::RemainingTtl { name: "l".into(), ms: left });
    h
}

#[test]
fn a_lease_still_held_right_after_a_cancellation_fails_the_hand_back() {
    let calm = reaching("a", &[]);
    let judge = |h: History, reach: &BTreeMap<String, Vec<(u64, u64)>>| {
        check(&h.events(), &[], &[(0, 10_000)], &[], reach)
            .into_iter()
            .filter(|v| v.detail.contains("hand the lease back"))
            .count()
    };
    assert_eq!(judge(cancelled_then_read(None, None, |_| {}), &calm), 0);
    assert_eq!(judge(cancelled_then_read(None, Some(480), |_| {}), &calm), 1);
    // Excused: the key was taken away, someone else acted on the name,
    // a fault reached the caller, the caller paused.
    assert_eq!(judge(cancelled_then_read(Some(5), Some(480), |_| {}), &calm), 0);
    assert_eq!(judge(cancelled_then_read(None, Some(480), |h| acq(h, "b", 50, 104, 2)), &calm), 0);
    assert_eq!(judge(cancelled_then_read(None, Some(480), |_| {}), &reaching("a", &[(101, 101)])), 0);
    let paused = |h: &History| h.observe_at(99, "a", Op::Paused { ms: 3, context: "gc".into() });
    assert_eq!(judge(cancelled_then_read(None, Some(480), paused), &calm), 0);
    // Another op of its own on the name before the read: not judged.
    let own = |h: &History| {
        let id = h.invoke_at(102, "a", LockOp::CurrentToken { name: "l".into(), token: None });
        h.complete_at(103, id, "a", EventKind::Ok, LockOp::CurrentToken { name: "l".into(), token: Some(1) });
    };
    assert_eq!(judge(cancelled_then_read(None, Some(480), own), &calm), 0);
}

/// A guarded call of `a` (TTL 100 ms) cancelled at 400 ms, with `also`
/// recorded inside it.
fn lost_at_400(also: impl FnOnce(&History)) -> History {
    let h = History::new();
    let build = |h: &History| {
        acq(h, "a", 0, 2, 1);
        also(h);
    };
    guarded(&h, 0, build, 405, GuardedResult::Cancelled { at: 400, deadline_reached: true });
    h
}

fn lost_lease(h: &History, log: &[Execution], faults: &[(u64, u64)]) -> usize {
    let v = check(&h.events(), log, faults, &[], &BTreeMap::new());
    v.iter().filter(|v| v.detail.contains("its keep-alive lost the lease")).count()
}

#[test]
fn a_lease_lost_with_nothing_to_explain_it_fails_liveness() {
    let h = lost_at_400(|_| {});
    assert_eq!(lost_lease(&h, &[], &[]), 1);
    assert_eq!(lost_lease(&h, &[], &[(350, 420)]), 0, "a fault over the loss explains it");
    // A TTL (100 ms) and a round trip (25 ms) after a fault, the
    // keep-alive has set a fresh TTL: 280 + 125 >= 400, 270 + 125 < 400.
    assert_eq!(lost_lease(&h, &[], &[(50, 280)]), 0);
    assert_eq!(lost_lease(&h, &[], &[(50, 270)]), 1, "a fault over well before the loss does not explain it");
    assert_eq!(lost_lease(&h, &[], &[(401, 500)]), 1, "nor one that began after it");
}

#[test]
fn a_held_request_explains_a_loss_over_the_span_it_was_really_held() {
    // Armed at 10 ms for 60 ms; the request it held is the one the log
    // says, not the armed span (10, 70).
    let h =
        lost_at_400(|h| h.observe_at(10, "a", Op::Delayed { node: 0, ms: 60, mentioning: Some("lock:{l}".into()) }));
    let log = |taken: u64, ran: u64| {
        vec![Execution {
            client: "a".into(),
            command: "EVALSHA".into(),
            key: Some("lock:{l}".into()),
            args: Vec::new(),
            server_unix_ms: ran,
            sim_ms: ran,
            taken_ms: taken,
            held_ms: 60,
            reply: crate::Reply::Other,
        }]
    };
    // Taken up at 200 ms, held 60 ms, then a server pause: it ran at
    // 330 ms, within a TTL and a round trip of the loss.
    assert_eq!(lost_lease(&h, &log(200, 330), &[]), 0);
    // Ran at 100 ms: the keep-alive had long set a fresh TTL.
    assert_eq!(lost_lease(&h, &log(40, 100), &[]), 1);
    // Never ran: still held at the loss.
    assert_eq!(lost_lease(&h, &[], &[]), 0);
}
