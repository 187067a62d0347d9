//! `Mode::Retry`: `Retry::run` around recorded `Lock::acquire`s, with its
//! settings drawn per attempt and its edges staged now and then (a zero
//! deadline, a pause in the backoff past or exactly to the deadline, a low
//! cap, a first attempt that fails with an error); when granted, a hold, a
//! write if still trusted, and a release. `lock-replies` judges each run
//! from its attempts.

use core::time::Duration;
use std::cell::Cell;
use std::rc::Rc;

use rand::Rng;
use redis_primitives::{Lease, Lock, Retry, Ttl};

use super::ctx::Ctx;
use crate::families::lock::api::{LOCK_ACQUIRE, RETRY_RUN};
use crate::families::lock::op::LockOp;
use crate::families::lock::workload::sleep_ms;
use crate::families::lock::{situation, LockWorkload, LOCK_NAME};
use crate::history::Millis;
use crate::net::SimConnection;
use crate::world::{Actor, ActorResult};

/// One attempt's `Retry::run` settings and the edges it stages.
#[derive(Debug, Clone, Copy)]
struct Edges {
    attempts: u32,
    deadline_ms: Option<u64>,
    /// A pause in the backoff after the first refusal, past the deadline.
    stall_ms: Option<u64>,
    max_delay_ms: u64,
    /// How long the first attempt's request is held at the server.
    first_held: Option<u64>,
    /// The deadline a pause after the first refusal ends exactly on.
    to_deadline: Option<u64>,
}

impl Edges {
    /// The attempts and the deadline from the modes' stream; the edges
    /// from a stream of their own, so the workload's draws stay as they
    /// were.
    fn draw(cx: &mut Ctx<'_>) -> Edges {
        let attempts = cx.rng.random_range(2..=6u32);
        let deadline_ms = cx.rng.random_bool(0.3).then(|| cx.rng.random_range(50..=400u64));
        // Drawn from their own stream (the workload's draws stay as they
        // were): now and then a zero deadline (the first attempt is still
        // made, and nothing after it), and, with a deadline, a pause (a
        // GC, a descheduled thread) in the backoff after a refusal, so
        // the sleep ends past the deadline and no attempt may follow.
        let mut edges = cx.actor.rng_for(&format!("retry-edges-{}", cx.actor.now()));
        let deadline_ms = if edges.random_bool(0.1) { Some(0) } else { deadline_ms };
        // (Not after a zero deadline: no sleep follows its first attempt,
        // and the pause would land in whatever the client does next.)
        let stall_ms =
            deadline_ms.filter(|&d| d > 0 && edges.random_bool(0.3)).map(|d| edges.random_range(d / 2..=d + 50));
        // Half the time a low cap, so the doubling reaches it within a
        // few attempts (drawn last: the edges above stay as they were).
        let max_delay_ms = if edges.random_bool(0.5) { edges.random_range(5..=20) } else { 60 };
        // Now and then the first attempt is held at the server past the
        // response timeout: it fails with an error, which ends the retry
        // (drawn last, as above).
        let timeout = cx.actor.net().response_timeout.as_millis() as u64;
        let first_held = edges.random_bool(0.25).then(|| timeout + edges.random_range(1..=30));
        // With a deadline and no stall above, half the time a pause in
        // the first backoff aimed to end on the deadline's own
        // millisecond: the attempt that would follow starts exactly at
        // it, which a `>` where `>=` belongs lets through (drawn last).
        let to_deadline = deadline_ms.filter(|&d| d > 0 && stall_ms.is_none() && edges.random_bool(0.5));
        Edges { attempts, deadline_ms, stall_ms, max_delay_ms, first_held, to_deadline }
    }
}

/// One `Mode::Retry` attempt (see the module docs).
pub(super) async fn attempt(cx: &mut Ctx<'_>) -> ActorResult {
    let edges = Edges::draw(cx);
    let Edges { attempts, deadline_ms, max_delay_ms, .. } = edges;
    let attempts_nz = core::num::NonZeroU32::new(attempts).expect("at least 2");
    let base = Duration::from_millis(5);
    let mut retry = Retry::new(attempts_nz, base, Duration::from_millis(max_delay_ms))?
        .seeded(cx.actor.seed_for(&format!("retry-{}", cx.actor.now())));
    if let Some(d) = deadline_ms {
        retry = retry.deadline(Duration::from_millis(d));
    }
    // Reported only when it differs: what the retry says it will do.
    if retry.attempts().get() != attempts {
        cx.actor.configured("Retry", &[("Retry::attempts", retry.attempts().to_string(), attempts.to_string())]);
    }
    let backoff_ms = Some((5, max_delay_ms));
    let rop = |token| LockOp::Retry { name: LOCK_NAME.into(), attempts, deadline_ms, token, backoff_ms };
    let rid = cx.actor.call(RETRY_RUN, rop(None));
    let started = cx.actor.now();
    if let Some(ms) = edges.first_held {
        let key = cx.lock.key(LOCK_NAME)?;
        cx.actor.delay_next_request_mentioning(cx.w.lock_node, ms, &key);
    }
    let tries = Rc::new(Cell::new(0u32));
    let (actor, lock, ttl, w) = (cx.actor.clone(), cx.lock.clone(), cx.ttl, cx.w.clone());
    let t2 = tries.clone();
    let r = retry
        .run(move || {
            let (actor, lock, w, t2) = (actor.clone(), lock.clone(), w.clone(), t2.clone());
            acquire_once(actor, lock, w, ttl, t2, edges, started)
        })
        .await;
    match r {
        Ok(Some(lease)) => {
            *cx.holds += 1;
            cx.actor.ok(rid, rop(Some(lease.token().get())));
            if tries.get() >= 2 {
                cx.actor.reached(situation::RETRY_ACQUIRED_AFTER_CONTENTION);
            }
            cx.maybe_workload_stall().await;
            sleep_ms(cx.rng.random_range(cx.w.plan.hold_ms.0..=cx.w.plan.hold_ms.1)).await;
            cx.write_if_trusted(&lease, None).await;
            cx.release(&lease).await;
        }
        Ok(None) => cx.actor.fail(rid, rop(None)),
        Err(e) => cx.actor.errored(rid, rop(None), &e),
    }
    Ok(())
}

/// One attempt of the retry: a recorded acquire; after the first refusal,
/// the staged pause, if any (`tries` counts the attempts, `started` is
/// when the retry began).
async fn acquire_once(
    actor: Actor,
    lock: Lock<SimConnection>,
    w: LockWorkload,
    ttl: Ttl,
    tries: Rc<Cell<u32>>,
    edges: Edges,
    started: Millis,
) -> redis_primitives::Result<Option<Lease>> {
    tries.set(tries.get() + 1);
    let op = |token, deadline| LockOp::Acquire { name: LOCK_NAME.into(), ttl_ms: w.plan.ttl_ms, token, deadline };
    let id = actor.call(LOCK_ACQUIRE, op(None, None));
    let r = lock.acquire(LOCK_NAME, ttl).await;
    match &r {
        Ok(Some(l)) => actor.ok(id, op(Some(l.token().get()), Some(actor.millis_of(l.local_deadline())))),
        Ok(None) => {
            actor.fail(id, op(None, None));
            if let (Some(ms), 1) = (edges.stall_ms, tries.get()) {
                actor.stall(ms, "in Retry::run's backoff after a refusal");
            }
            // Longer than the first backoff's cap (5 ms),
            // or the policy gives up before sleeping.
            let left = edges.to_deadline.map(|d| (started + d).saturating_sub(actor.now()));
            if let (Some(ms @ 6..), 1) = (left, tries.get()) {
                actor.stall(ms, "in Retry::run's backoff, until its deadline");
                actor.reached(situation::RETRY_PAUSED_TO_DEADLINE);
            }
        }
        Err(e) => actor.errored(id, op(None, None), e),
    }
    r
}
