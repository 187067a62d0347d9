//! Unit tests of `lock-replies`: hand-made histories, one per rule, each
//! with the reply that passes and the one that fails.

use super::*;
use crate::families::lock::op::LockOp;
use crate::history::History;

/// Every call's request ran at the server when it was sent (rule 7's
/// input for the tests of the other rules).
fn served(events: &[Event]) -> Vec<Execution> {
    events
        .iter()
        .filter(|e| e.kind == EventKind::Invoke)
        .map(|e| Execution {
            client: e.process.as_str().into(),
            command: "EVALSHA".into(),
            key: None,
            args: Vec::new(),
            server_unix_ms: e.time,
            sim_ms: e.time,
            taken_ms: e.time,
            held_ms: 0,
            reply: crate::Reply::Other,
        })
        .collect()
}

fn check(events: &[Event]) -> Vec<Violation> {
    super::check(events, &served(events))
}

#[test]
fn an_answer_no_request_produced_fails() {
    let h = History::new();
    acq(&h, "a", 0, 2, Some(1));
    rel(&h, "a", 30, 280, 1, EventKind::Fail);
    let events = h.events();
    // The release's request never ran (it timed out unsent): only the
    // acquire's did.
    let only_acquire: Vec<Execution> = served(&events).into_iter().filter(|x| x.sim_ms == 0).collect();
    let v = super::check(&events, &only_acquire);
    assert!(v.iter().any(|v| v.detail.contains("did not come from Redis")), "{v:?}");
    // Run late, after the answer: still not where the answer came from.
    let mut late = only_acquire.clone();
    late.push(Execution { sim_ms: 281, ..served(&events)[1].clone() });
    assert!(super::check(&events, &late).iter().any(|v| v.detail.contains("did not come from Redis")));
    // Run inside the call: the refusal is judged by the other rules only.
    let v = check(&events);
    assert!(v.iter().all(|v| !v.detail.contains("did not come from Redis")), "{v:?}");
}

#[test]
fn a_remaining_time_is_bounded_by_the_lease_present() {
    let h = History::new();
    acq(&h, "a", 0, 2, Some(1));
    let rt = |h: &History, t, v| {
        let id = h.invoke_at(t, "r", LockOp::RemainingTtl { name: "l".into(), ms: None });
        h.ok(id, "r", LockOp::RemainingTtl { name: "l".into(), ms: v });
    };
    rt(&h, 10, Some(89));
    rt(&h, 20, Some(83));
    assert_eq!(check(&h.events()), vec![]);
    // Rounded to whole seconds: 0 while ~60 ms are left.
    rt(&h, 40, Some(0));
    let v = check(&h.events());
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].detail.contains("expires 59..=63ms after the read"), "{v:?}");
}

fn acq(h: &History, p: &str, t0: u64, t1: u64, token: Option<u64>) {
    let op = |token| LockOp::Acquire { name: "l".into(), ttl_ms: 100, token, deadline: None };
    let id = h.invoke_at(t0, p, op(None));
    let kind = if token.is_some() { EventKind::Ok } else { EventKind::Fail };
    h.complete_at(t1, id, p, kind, op(token));
}

fn ext(h: &History, p: &str, t0: u64, t1: u64, token: u64, kind: EventKind) {
    let op = LockOp::Extend { name: "l".into(), token: Some(token), ttl_ms: 100, deadline: None };
    let id = h.invoke_at(t0, p, op.clone());
    h.complete_at(t1, id, p, kind, op);
}

fn rel(h: &History, p: &str, t0: u64, t1: u64, token: u64, kind: EventKind) {
    let op = LockOp::Release { name: "l".into(), token: Some(token) };
    let id = h.invoke_at(t0, p, op.clone());
    h.complete_at(t1, id, p, kind, op);
}

#[test]
fn justified_replies_pass() {
    let h = History::new();
    acq(&h, "a", 0, 2, Some(1));
    acq(&h, "b", 10, 12, None); // held by a
    ext(&h, "a", 50, 52, 1, EventKind::Ok); // alive until >= 150
    acq(&h, "b", 140, 142, None); // still held
    ext(&h, "a", 300, 302, 1, EventKind::Fail); // expired by 152
    rel(&h, "a", 310, 312, 1, EventKind::Fail);
    acq(&h, "b", 320, 322, Some(2));
    rel(&h, "b", 330, 331, 2, EventKind::Ok);
    acq(&h, "c", 340, 342, Some(3));
    assert_eq!(check(&h.events()), vec![]);
}

#[test]
fn extending_someone_elses_lease_fails() {
    let h = History::new();
    acq(&h, "a", 0, 2, Some(1));
    acq(&h, "b", 200, 202, Some(2));
    ext(&h, "a", 210, 212, 1, EventKind::Ok);
    let v = check(&h.events());
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].detail.contains("expired by"), "{v:?}");
}

#[test]
fn a_refused_extend_of_a_live_lease_fails() {
    let h = History::new();
    acq(&h, "a", 0, 2, Some(1));
    ext(&h, "a", 30, 32, 1, EventKind::Fail);
    let v = check(&h.events());
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].detail.contains("still its own until at least 100ms"), "{v:?}");
}

#[test]
fn a_refusal_after_an_overwrite_of_the_key_passes() {
    // The guard probe's overwrite, answered or not (it may land later):
    // the key need not be ours any more.
    for token in [Some(1), None] {
        let h = History::new();
        acq(&h, "a", 0, 2, Some(1));
        h.observe_at(20, "a", LockOp::TakenAway { name: "l".into(), token });
        rel(&h, "a", 30, 32, 1, EventKind::Fail);
        assert_eq!(check(&h.events()), vec![], "{token:?}");
    }
    // Another name's overwrite excuses nothing.
    let h = History::new();
    acq(&h, "a", 0, 2, Some(1));
    h.observe_at(20, "a", LockOp::TakenAway { name: "other".into(), token: None });
    rel(&h, "a", 30, 32, 1, EventKind::Fail);
    assert_eq!(check(&h.events()).len(), 1);
}

#[test]
fn releasing_after_a_takeover_fails() {
    let h = History::new();
    acq(&h, "a", 0, 2, Some(1));
    rel(&h, "a", 10, 11, 1, EventKind::Ok);
    acq(&h, "b", 20, 22, Some(2));
    rel(&h, "a", 30, 31, 1, EventKind::Ok); // a second "true" for a deleted lease
    let v = check(&h.events());
    assert_eq!(v.len(), 1, "{v:?}");
}

#[test]
fn refusing_a_free_lock_fails_but_not_with_an_unknown_acquire() {
    let h = History::new();
    acq(&h, "a", 0, 2, Some(1));
    acq(&h, "b", 150, 152, None); // a's lease expired at 102 at the latest
    let v = check(&h.events());
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].detail.contains("definitely free"), "{v:?}");

    let h = History::new();
    let op = |token| LockOp::Acquire { name: "l".into(), ttl_ms: 100, token, deadline: None };
    let id = h.invoke_at(0, "a", op(None));
    h.complete_at(250, id, "a", EventKind::Info, op(None));
    acq(&h, "b", 300, 302, None); // a's request may have landed late
    assert_eq!(check(&h.events()), vec![]);
}

#[test]
fn granting_a_held_lock_fails() {
    let h = History::new();
    acq(&h, "a", 0, 2, Some(1));
    acq(&h, "b", 10, 12, Some(2));
    let v = check(&h.events());
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].detail.contains("definitely held"), "{v:?}");
}

#[test]
fn current_token_and_remaining_ttl_are_bounded() {
    let h = History::new();
    acq(&h, "a", 0, 2, Some(1));
    let ct = |h: &History, t, v| {
        let id = h.invoke_at(t, "r", LockOp::CurrentToken { name: "l".into(), token: None });
        h.ok(id, "r", LockOp::CurrentToken { name: "l".into(), token: v });
    };
    let rt = |h: &History, t, v| {
        let id = h.invoke_at(t, "r", LockOp::RemainingTtl { name: "l".into(), ms: None });
        h.ok(id, "r", LockOp::RemainingTtl { name: "l".into(), ms: v });
    };
    ct(&h, 5, Some(1));
    rt(&h, 10, Some(92));
    assert_eq!(check(&h.events()), vec![]);
    ct(&h, 20, Some(3)); // only one acquire ever
    rt(&h, 30, Some(1000)); // more than any TTL
    rt(&h, 40, None); // a still holds it
    let v = check(&h.events());
    assert_eq!(v.len(), 3, "{v:?}");
}

#[test]
fn a_current_token_sent_in_the_millisecond_a_grant_was_answered_sees_it() {
    let read_at_2 = |v| {
        let h = History::new();
        acq(&h, "a", 0, 2, Some(1));
        let id = h.invoke_at(2, "a", LockOp::CurrentToken { name: "l".into(), token: None });
        h.ok(id, "a", LockOp::CurrentToken { name: "l".into(), token: v });
        check(&h.events()).len()
    };
    assert_eq!(read_at_2(Some(1)), 0);
    assert_eq!(read_at_2(None), 1, "the grant of 1 ran before the read was sent");
}

#[test]
fn a_retry_that_gives_up_early_fails() {
    let h = History::new();
    let op = |token| LockOp::Retry { name: "l".into(), attempts: 3, deadline_ms: None, token, backoff_ms: None };
    let id = h.invoke_at(0, "a", op(None));
    acq(&h, "a", 0, 2, None);
    acq(&h, "a", 10, 12, None);
    h.complete_at(13, id, "a", EventKind::Fail, op(None));
    // b holds the lock throughout, so the refusals are fine.
    let h2 = History::from_events([acq_ok_event()].into_iter().chain(h.events()).collect::<Vec<_>>());
    let v = check(&h2.events());
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].detail.contains("after 2 of its 3 attempts"), "{v:?}");
}

#[test]
fn a_retry_that_goes_on_past_an_error_fails() {
    let op = |token| LockOp::Retry { name: "l".into(), attempts: 3, deadline_ms: None, token, backoff_ms: None };
    let run = |errored: bool| {
        let h = History::new();
        let id = h.invoke_at(0, "a", op(None));
        let first = LockOp::Acquire { name: "l".into(), ttl_ms: 100, token: None, deadline: None };
        let a = h.invoke_at(0, "a", first.clone());
        if errored {
            // Timed out: recorded as unknown; the retry went on.
            h.complete_at(250, a, "a", EventKind::Info, first);
            acq(&h, "a", 255, 257, Some(1));
        } else {
            h.complete_at(
                257,
                a,
                "a",
                EventKind::Ok,
                LockOp::Acquire { name: "l".into(), ttl_ms: 100, token: Some(1), deadline: None },
            );
        }
        h.complete_at(257, id, "a", EventKind::Ok, op(Some(1)));
        check(&h.events())
    };
    assert_eq!(run(false), vec![]);
    let v = run(true);
    assert!(v.iter().any(|v| v.detail.contains("its attempt 1 failed with an error at 250ms")), "{v:?}");
}

#[test]
fn a_retry_that_sleeps_past_its_backoff_cap_fails() {
    // Base 5 ms, at most 12 ms: caps 5, 10, 12, 12.
    let op =
        |token| LockOp::Retry { name: "l".into(), attempts: 5, deadline_ms: None, token, backoff_ms: Some((5, 12)) };
    let run = |gaps: [u64; 4], paused: bool| {
        let h = History::new();
        let id = h.invoke_at(0, "a", op(None));
        let mut t = 0;
        for (i, gap) in std::iter::once(0).chain(gaps).enumerate() {
            t += gap;
            if paused && i == 4 {
                h.observe_at(t - 1, "a", crate::history::Op::Paused { ms: 1, context: "gc".into() });
            }
            acq(&h, "a", t, t + 2, None);
            t += 2;
        }
        h.complete_at(t, id, "a", EventKind::Fail, op(None));
        let h2 = History::from_events([acq_ok_event()].into_iter().chain(h.events()).collect::<Vec<_>>());
        check(&h2.events())
    };
    assert_eq!(run([5, 10, 12, 13], false), vec![]); // one tick of slack
    let v = run([5, 10, 12, 30], false);
    assert_eq!(v.len(), 1, "{v:?}");
    assert!(v[0].detail.contains("slept 30ms between its attempts 4 and 5"), "{v:?}");
    assert!(v[0].detail.contains("cap of 12ms"), "{v:?}");
    assert_eq!(run([5, 10, 12, 30], true), vec![]); // paused in that sleep
    assert_eq!(run([6, 10, 12, 12], false).len(), 0); // 5 + 1 tick
    assert_eq!(run([7, 10, 12, 12], false).len(), 1);
}

#[test]
fn a_retry_that_sleeps_past_its_deadline_fails() {
    let op = |token| LockOp::Retry { name: "l".into(), attempts: 5, deadline_ms: Some(50), token, backoff_ms: None };
    let run = |give_up_at: u64| {
        let h = History::new();
        let id = h.invoke_at(0, "a", op(None));
        acq(&h, "a", 0, 2, None);
        acq(&h, "a", 30, 32, None);
        h.complete_at(give_up_at, id, "a", EventKind::Fail, op(None));
        let h2 = History::from_events([acq_ok_event()].into_iter().chain(h.events()).collect::<Vec<_>>());
        check(&h2.events())
    };
    // Gave up at once after the last attempt: fine.
    assert_eq!(run(32), vec![]);
    // Slept 40 ms after it, past the deadline at 50 ms.
    let v = run(72);
    assert!(v.len() == 1 && v[0].detail.contains("past its 50 ms deadline"), "{v:?}");
}

#[test]
fn an_attempt_at_or_past_the_deadline_fails() {
    let op = |token| LockOp::Retry { name: "l".into(), attempts: 5, deadline_ms: Some(50), token, backoff_ms: None };
    let run = |second: u64| {
        let h = History::new();
        let id = h.invoke_at(0, "a", op(None));
        acq(&h, "a", 0, 2, None);
        acq(&h, "a", second, second + 2, None);
        h.complete_at(second + 2, id, "a", EventKind::Fail, op(None));
        let h2 = History::from_events([acq_ok_event()].into_iter().chain(h.events()).collect::<Vec<_>>());
        check(&h2.events())
    };
    let v = run(60);
    assert!(v.len() == 1 && v[0].detail.contains("started an attempt at 60ms, at or past it"), "{v:?}");
    // At the deadline's own millisecond: the policy has run out.
    assert_eq!(run(50).len(), 1);
    assert_eq!(run(49), vec![]);
}

fn acq_ok_event() -> Event {
    Event {
        index: 0,
        time: 0,
        process: "b".into(),
        kind: EventKind::Ok,
        op_id: crate::history::OpId(1000),
        op: LockOp::Acquire { name: "l".into(), ttl_ms: 100, token: Some(9), deadline: None }.into(),
        api: None,
    }
}

/// The acquire script of `p` on `l` running at `t` with `reply`.
fn acquire_script(p: &str, t: u64, reply: crate::Reply) -> Execution {
    Execution {
        client: p.into(),
        command: "EVALSHA".into(),
        key: Some("lock:{l}".into()),
        args: ["sha", "2", "lock:{l}", "lock:{l}:fence", "owner", "100"].map(String::from).to_vec(),
        server_unix_ms: t,
        sim_ms: t,
        taken_ms: t,
        held_ms: 0,
        reply,
    }
}

#[test]
fn an_acquire_that_ran_its_script_twice_fails() {
    let h = History::new();
    acq(&h, "a", 10, 20, Some(1));
    acq(&h, "a", 20, 30, None);
    let events = h.events();
    let twice = [acquire_script("a", 12, crate::Reply::Nil), acquire_script("a", 15, crate::Reply::Int(1))];
    let v = super::check(&events, &[&twice[..], &[acquire_script("a", 25, crate::Reply::Nil)]].concat());
    assert!(v.iter().any(|v| v.detail.contains("ran the acquire script 2 times")), "{v:?}");
    // A NOSCRIPT answer ran nothing; the next acquire's run at the
    // millisecond it began is its own.
    let noscript = crate::Reply::Error("NOSCRIPT No matching script".into());
    let once = [
        acquire_script("a", 12, noscript),
        acquire_script("a", 15, crate::Reply::Int(1)),
        acquire_script("a", 20, crate::Reply::Nil),
    ];
    let v = super::check(&events, &once);
    assert!(v.iter().all(|v| !v.detail.contains("acquire script")), "{v:?}");
    // Another client's run is not this caller's.
    let other = [acquire_script("a", 12, crate::Reply::Int(1)), acquire_script("b", 14, crate::Reply::Nil)];
    let v = super::check(&events, &[&other[..], &[acquire_script("a", 25, crate::Reply::Nil)]].concat());
    assert!(v.iter().all(|v| !v.detail.contains("acquire script")), "{v:?}");
}
