//! The two guarded modes: `Mode::Guarded`, `Lock::with_lock_guarded` with
//! a multi-step body that may stall (its first keep-alive extend or its
//! final release held at the server now and then, the release after a
//! completed body and after a dropped one alike), and `Mode::KeepAlive`,
//! an acquire whose body is raced against a caller-driven
//! `Lock::keep_alive`. Both are judged by `guarded-body`: a body runs only
//! while its lease is trusted.

use core::time::Duration;
use rand::{Rng, SeedableRng};
use redis_primitives::{KeepAlive, Ttl};

use super::ctx::Ctx;
use crate::families::lock::api::{LOCK_ACQUIRE, LOCK_KEEP_ALIVE, LOCK_WITH_LOCK_GUARDED};
use crate::families::lock::op::{GuardedResult, LockOp};
use crate::families::lock::record::{loss_is_deadline, BodyMark, GuardedCall, GuardedEnd, Loss};
use crate::families::lock::{situation, LOCK_NAME};
use crate::history::Millis;
use crate::world::ActorResult;

/// One `Mode::Guarded` attempt (see the module docs).
pub(super) async fn guarded(cx: &mut Ctx<'_>) -> ActorResult {
    let policy = draw_policy(cx)?;
    let every_ms = Some(policy.every().as_millis() as u64);
    let gop = LockOp::Guarded { name: LOCK_NAME.into(), token: None, outcome: None, every_ms };
    let gid = cx.actor.call(LOCK_WITH_LOCK_GUARDED, gop);
    let acquire_id = cx.actor.invoke(cx.acquire_op(None, None));
    let actor = cx.actor.clone();
    let lock2 = cx.lock.clone();
    let w = cx.w.clone();
    let store = cx.store.clone();
    let seed = cx.rng.random::<u64>();
    let stall_here = (cx.stall_at == Some(*cx.holds + 1)).then_some(cx.w.stall_ms());
    let slow_release = release_delay(cx.rng, 0.25, &policy);
    let held_extend = held_extend(cx, &policy);
    let slow_after_drop = slow_release_after_drop(cx, &policy);
    let ran = std::rc::Rc::new(std::cell::Cell::new(false));
    let body_ran = ran.clone();
    let body = move |lease: redis_primitives::Lease| async move {
        body_ran.set(true);
        let token = lease.token().get();
        let mut mark = BodyMark::new(&actor, LOCK_NAME, token);
        if let Some(ms) = slow_after_drop {
            mark = mark.slow_release(w.lock_node, ms);
        }
        let d = actor.millis_of(lease.local_deadline());
        actor.ok(
            acquire_id,
            LockOp::Acquire { name: LOCK_NAME.into(), ttl_ms: w.plan.ttl_ms, token: Some(token), deadline: Some(d) },
        );
        if let Some(ms) = held_extend {
            // The next request naming the lease key is the first
            // extend (or, for a body done before it, the release).
            actor.delay_next_request_mentioning(w.lock_node, ms, lease.key());
            actor.reached(situation::KEEP_ALIVE_EXTEND_HELD);
        }
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let (mut holds, mut writes) = (0u32, 0u32);
        let mut body_cx = Ctx {
            actor: &actor,
            w: &w,
            lock: &lock2,
            store: &store,
            ttl: Ttl::from_millis(w.plan.ttl_ms).expect("ttl validated"),
            rng: &mut rng,
            holds: &mut holds,
            writes: &mut writes,
            stall_at: stall_here.map(|_| 0),
        };
        body_cx.body(token, d).await;
        // The instant that matters for the final release: a slow
        // reply to it must not hold the caller longer than `every`.
        if let Some(ms) = slow_release {
            actor.delay_next_request(w.lock_node, ms);
            actor.reached(situation::FINAL_RELEASE_DELAYED);
        }
        mark.done();
        (actor.invoke(LockOp::Release { name: LOCK_NAME.into(), token: Some(token) }), token)
    };
    let r = cx.lock.with_lock_guarded(LOCK_NAME, policy, body).await;
    let call = GuardedCall {
        actor: cx.actor,
        name: LOCK_NAME,
        ttl_ms: cx.w.plan.ttl_ms,
        every_ms,
        call: gid,
        acquire: acquire_id,
        body_ran: ran.get(),
    };
    match call.end(r) {
        GuardedEnd::Completed => {
            *cx.holds += 1;
            cx.actor.reached(situation::GUARDED_BODY_COMPLETED);
        }
        GuardedEnd::Cancelled { loss } => {
            *cx.holds += 1;
            if loss == Loss::DeadlineReached {
                cx.actor.reached(situation::LEASE_EXPIRED_WHILE_PAUSED);
            }
            cx.actor.reached(situation::GUARD_CANCELLED_BODY);
        }
        GuardedEnd::NotAcquired | GuardedEnd::Failed => {}
    }
    Ok(())
}

/// The guarded call's keep-alive policy: extends at thirds of the TTL
/// half the time, at a drawn interval otherwise.
fn draw_policy(cx: &mut Ctx<'_>) -> redis_primitives::Result<KeepAlive> {
    let ttl_ms = cx.w.plan.ttl_ms;
    if cx.rng.random_bool(0.5) {
        KeepAlive::thirds(cx.lock, cx.ttl)
    } else {
        KeepAlive::new(cx.lock, cx.ttl, Duration::from_millis(cx.rng.random_range(30..=ttl_ms * 2 / 3)))
    }
}

/// How long to hold the keep-alive's first extend at the server, if this
/// attempt does: until 20-80 ms after the lease has expired there,
/// answered within the response timeout. The guard must give up at its
/// own deadline, not run the body on until the late answer (nor wait for
/// that answer to give up). Drawn from a stream of its own per attempt, so
/// the workload's other draws are unchanged. On most attempts that can
/// have it: only short TTLs fit it under the response timeout.
fn held_extend(cx: &Ctx<'_>, policy: &KeepAlive) -> Option<u64> {
    let mut faults = cx.actor.rng_for(&format!("keep-alive-held-{}", cx.actor.now()));
    let ms = cx.w.plan.ttl_ms.saturating_sub(policy.every().as_millis() as u64) + faults.random_range(20..=80);
    let timeout = cx.actor.net().response_timeout.as_millis() as u64;
    (faults.random_bool(0.7) && ms < timeout).then_some(ms)
}

/// How long to hold the release that follows a dropped body, if this
/// attempt does: on most attempts, drawn from a stream of its own per
/// attempt (the workload's other draws are unchanged): bodies are dropped
/// mostly when something disturbed the call, so the cancel path is tried
/// more often than the completed one's `slow_release`.
fn slow_release_after_drop(cx: &Ctx<'_>, policy: &KeepAlive) -> Option<u64> {
    let mut faults = cx.actor.rng_for(&format!("release-after-drop-{}", cx.actor.now()));
    release_delay(&mut faults, 0.6, policy)
}

/// With probability `share`, a delay for a guarded call's release 1-80 ms
/// past the keep-alive interval, the most the call may wait for it: the
/// one fault both paths' releases get.
fn release_delay(rng: &mut impl Rng, share: f64, policy: &KeepAlive) -> Option<u64> {
    rng.random_bool(share).then(|| policy.every().as_millis() as u64 + rng.random_range(1..=80))
}

/// One `Mode::KeepAlive` attempt (see the module docs).
pub(super) async fn keep_alive(cx: &mut Ctx<'_>) -> ActorResult {
    let Some(mut lease) = cx.acquire(Some(LOCK_ACQUIRE)).await else { return Ok(()) };
    let token = lease.token().get();
    let deadline = cx.deadline_ms(&lease);
    let policy = KeepAlive::thirds(cx.lock, cx.ttl)?;
    let gop = |outcome| LockOp::Guarded { name: LOCK_NAME.into(), token: Some(token), outcome, every_ms: None };
    let gid = cx.actor.call(LOCK_KEEP_ALIVE, gop(None));
    let lock = cx.lock.clone();
    let loss = {
        let keep = lock.keep_alive(&mut lease, policy);
        tokio::pin!(keep);
        let body = cx.body(token, deadline);
        tokio::pin!(body);
        tokio::select! {
            biased;
            loss = &mut keep => Some((loss, cx_now())),
            _ = &mut body => None,
        }
    };
    match loss {
        Some((reason, at)) => {
            cx.actor.observe(LockOp::LeaseLost {
                name: LOCK_NAME.into(),
                token: Some(token),
                reason: format!("keep_alive: {reason:?}"),
            });
            if matches!(reason, redis_primitives::LeaseLoss::DeadlineReached) {
                cx.actor.reached(situation::LEASE_EXPIRED_WHILE_PAUSED);
            }
            cx.actor.reached(situation::GUARD_CANCELLED_BODY);
            let deadline_reached = loss_is_deadline(cx.actor, &reason);
            cx.actor.ok(gid, gop(Some(GuardedResult::Cancelled { at, deadline_reached })));
        }
        None => {
            cx.actor.reached(situation::GUARDED_BODY_COMPLETED);
            cx.actor.ok(gid, gop(Some(GuardedResult::Completed)));
        }
    }
    cx.release(&lease).await;
    Ok(())
}

/// Simulated now (ms), read where no actor is at hand.
fn cx_now() -> Millis {
    crate::pause::sim_now().as_millis() as Millis
}
