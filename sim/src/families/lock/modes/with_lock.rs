//! `Mode::WithLock`: `Lock::with_lock` with a body that holds, writes if
//! still trusted, and ends; half the time its release is held at the
//! server past the response timeout, so the body's output must come back
//! with the release's outcome unknown.

use rand::Rng;
use redis_primitives::{LockOutcome, Release};

use super::ctx::Ctx;
use crate::families::lock::api::LOCK_WITH_LOCK;
use crate::families::lock::op::LockOp;
use crate::families::lock::record::{view, write_fenced};
use crate::families::lock::workload::sleep_ms;
use crate::families::lock::{situation, LOCK_NAME};
use crate::history::OpId;
use crate::world::ActorResult;

/// One `Mode::WithLock` attempt (see the module docs).
pub(super) async fn attempt(cx: &mut Ctx<'_>) -> ActorResult {
    let acquire_id = cx.actor.call(LOCK_WITH_LOCK, cx.acquire_op(None, None));
    let hold = cx.rng.random_range(cx.w.plan.hold_ms.0..=cx.w.plan.hold_ms.1);
    let state = std::rc::Rc::new(std::cell::Cell::new(None::<(OpId, u64)>));
    let (actor, store, w) = (cx.actor.clone(), cx.store.clone(), cx.w.clone());
    let writes = *cx.writes + 1;
    *cx.writes += 1;
    // A release that gets no answer in time: the body has run, so its
    // output must still come back. Drawn from a stream of its own
    // (one per attempt) so the workload's other draws are unchanged.
    let unanswered_release = {
        let mut faults = cx.actor.rng_for(&format!("with-lock-release-{writes}"));
        let timeout = cx.actor.net().response_timeout.as_millis() as u64;
        faults.random_bool(0.5).then(|| timeout + faults.random_range(1..=100))
    };
    let st = state.clone();
    let body = move |lease: redis_primitives::Lease| async move {
        let token = lease.token().get();
        let d = actor.millis_of(lease.local_deadline());
        actor.ok(
            acquire_id,
            LockOp::Acquire { name: LOCK_NAME.into(), ttl_ms: w.plan.ttl_ms, token: Some(token), deadline: Some(d) },
        );
        sleep_ms(hold).await;
        if view(&actor, &lease) || !w.check_deadline {
            write_fenced(&actor, &store, &format!("{}-{writes}", actor.name()), token).await;
        } else {
            actor.observe(LockOp::LeaseLost {
                name: LOCK_NAME.into(),
                token: Some(token),
                reason: "local deadline passed before the write".into(),
            });
        }
        // with_lock releases right after the body returns.
        if let Some(ms) = unanswered_release {
            // Aimed at the lease key: the first release on a
            // connection asks COMMAND INFO first, and that question
            // falling back to scripts is not the fault meant here.
            actor.delay_next_request_mentioning(w.lock_node, ms, lease.key());
        }
        st.set(Some((actor.invoke(LockOp::Release { name: LOCK_NAME.into(), token: Some(token) }), token)));
        token
    };
    let r = cx.lock.with_lock(LOCK_NAME, cx.ttl, body).await;
    record(cx, r, state.get(), acquire_id, unanswered_release.is_some())
}

/// Records how the call ended: `ran` is the release the body invoked at
/// its end (and its token), if the body ran; `unanswered` whether that
/// release was held past the response timeout.
fn record(
    cx: &mut Ctx<'_>,
    r: redis_primitives::Result<LockOutcome<u64>>,
    ran: Option<(OpId, u64)>,
    acquire_id: OpId,
    unanswered: bool,
) -> ActorResult {
    let rel = |token| LockOp::Release { name: LOCK_NAME.into(), token: Some(token) };
    match (r, ran) {
        (Ok(LockOutcome::NotAcquired), None) => {
            cx.actor.fail(acquire_id, cx.acquire_op(None, None));
            cx.actor.reached(situation::WITH_LOCK_NOT_ACQUIRED);
        }
        (Ok(LockOutcome::NotAcquired), Some((rid, token))) => {
            // The body runs only on a grant: `NotAcquired` after it ran
            // hides a body that ran (and wrote) from its caller.
            cx.actor.configured_if_differs(
                "Lock::with_lock",
                &[("result after the body ran", "NotAcquired".into(), "Ok(LockOutcome::Ran { .. })".into())],
            );
            cx.actor.info(rid, rel(token));
        }
        (Ok(LockOutcome::Ran { output, release, .. }), Some((rid, _))) => {
            *cx.holds += 1;
            // The accessor user code decides with must agree with
            // the variant.
            let released = matches!(release, Release::Released);
            cx.actor.configured_if_differs(
                "Release",
                &[("Release::is_released", release.is_released().to_string(), released.to_string())],
            );
            match release {
                Release::Released => cx.actor.ok(rid, rel(output)),
                Release::AlreadyGone => cx.actor.fail(rid, rel(output)),
                Release::Unknown(e) => {
                    if unanswered {
                        cx.actor.reached(situation::WITH_LOCK_RELEASE_UNANSWERED);
                    }
                    cx.actor.errored(rid, rel(output), &e)
                }
            }
        }
        (Err(e), Some((rid, token))) => {
            // `Err` only comes from the acquire: once the body ran,
            // its output is returned whatever the release did.
            cx.actor.configured_if_differs(
                "Lock::with_lock",
                &[("result after the body ran", format!("Err({e})"), "Ok(LockOutcome::Ran { .. })".into())],
            );
            cx.actor.errored(rid, rel(token), &e)
        }
        (Err(e), None) => cx.actor.errored(acquire_id, cx.acquire_op(None, None), &e),
        (Ok(_), None) => return Err("with_lock ran without its body".into()),
    }
    Ok(())
}
