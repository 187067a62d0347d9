//! The guard probe: a guarded lease taken away under its body, one whose
//! extension fails while the key is still its own, and a `with_lock` whose
//! release gets no answer.
//!
//! The workload's guarded calls lose their leases to expiry: a client
//! pause, a held extension, a partition. Two losses it never stages:
//!
//! - **Taken away.** The key is overwritten with another owner while the
//!   body runs (an operator's `SET`, a peer that ignored the lock, a
//!   failover that resurrected an old value). The next extension is
//!   refused, and the guard must drop the body then, not at the lease's
//!   local deadline: until that deadline nobody *else* can be granted the
//!   name through the lock, so the workload's overlap checks never see a
//!   guard that shrugs a refusal off as a blip. The release after the drop
//!   is then held past one keep-alive interval: the call must return
//!   within that interval of the drop all the same.
//! - **Failed with the key still ours.** The first extension is held at the
//!   server past the connection's response timeout while the lease has
//!   plenty of time left. The guard gives up on the failure; the lease is
//!   still ours at the server, and the guard must hand it back rather than
//!   leave the name blocked until the TTL runs out. The workload's guards
//!   give up at or after expiry, when there is nothing left to hand back.
//! - **Extension answered late.** The first extension is held at the
//!   server for a fraction of the interval while the lease has plenty of
//!   time left: the keep-alive must send the next one an interval after it
//!   *sent* the first, not after the answer. The workload holds its
//!   guards' first extensions past the lease's expiry, where no second one
//!   follows.
//! - **Release unanswered.** `with_lock`'s release is held at the server
//!   past the response timeout on an uncontended name: the body ran, the
//!   release's outcome is unknown, and the call must say so
//!   (`Release::Unknown`), not report the key already gone, and return the
//!   body's output (an [`Op::Configured`](crate::history::Op::Configured)
//!   read-back when it returns an error instead). The workload's
//!   `with_lock` calls stage the same hold, but only when they win the
//!   contended name.
//!
//! - **Extension answered after the deadline.** The first extension is
//!   held at the server past the lease's local deadline, still under the
//!   response timeout: the keep-alive races each extension against the
//!   deadline, so the body is dropped at the deadline, not when the late
//!   answer comes. The workload's held extensions are answered well before
//!   the deadline or fail. A fault that fails or refuses this case's
//!   acquire gets two more tries, a lease's TTL apart.
//! - **Ready together.** The caller freezes inside the body before the
//!   first extension is due and resumes past the lease's deadline, when
//!   the body's next step and the deadline are both ready: the keep-alive
//!   is polled first, so the body is dropped (`Cancelled`), never reported
//!   `Completed` with nothing having moved the deadline.
//!
//! - **Kept alive.** Nothing is held and the body outlives the lease's
//!   first TTL by half: the extensions alone keep it, so each confirmed one
//!   must move the lease's deadline, and the call completes. The
//!   workload's guarded bodies outlive their TTL only now and then, with
//!   faults around.
//!
//! Once per run, while the clients run the workload, the reader (idle
//! until its liveness probe) runs all seven, and once the workload has
//! healed the failed extension and the kept-alive body again
//! ([`after_heal`]), on names of its own through a
//! `Lock` configured as the workload's, and records them as the
//! workload records its calls ([`LockOp::Guarded`] around an [`LockOp::Acquire`],
//! an [`LockOp::Release`] from the body's end), with an [`LockOp::TakenAway`] at the
//! overwrite and an [`LockOp::RemainingTtl`] read right after the second call.
//! What the outcomes must be is the checkers' business
//! (`checks::guarded_body`'s *taken away*, *hand-back* and *schedule* rules,
//! `checks::lock_replies`' rule 7 for the release), which know the faults
//! that excuse a late answer; the probe only stages and records.

use core::time::Duration;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use redis_primitives::{KeepAlive, Lease, Lock, LockOutcome, Release, Ttl};

use crate::families::lock::api::{LOCK_REMAINING_TTL, LOCK_WITH_LOCK, LOCK_WITH_LOCK_GUARDED};
use crate::families::lock::op::LockOp;
use crate::families::lock::record::{BodyMark, GuardedCall, GuardedEnd, Loss};
use crate::net::SimConnection;
use crate::world::{Actor, ActorResult};

/// The lock name whose key is taken away.
const TAKEN: &str = "guard-probe-taken";
/// The lock name whose first extension fails.
const FAILED: &str = "guard-probe-failed";
/// The taken-away lease: a third of it between extensions.
const TAKEN_TTL_MS: u64 = 300;
/// How far past the interval the release after its drop is held.
const TAKEN_RELEASE_PAST_EVERY_MS: u64 = 50;
/// The failing lease: long enough that the failure comes well before the
/// local deadline (one interval plus the response timeout).
const FAILED_TTL_MS: u64 = 600;
/// The failing lease's extend interval.
const FAILED_EVERY_MS: u64 = 100;
/// The lock name whose first extension is answered late.
const SLOW: &str = "guard-probe-slow";
/// How long that extension is held at the server: well under the
/// interval, far from the deadline.
const SLOW_HOLD_MS: u64 = 60;
/// The lock name whose first extension is answered after the deadline.
const LATE: &str = "guard-probe-late";
/// The late lease and its interval: the first extension is sent 50 ms
/// before the deadline (less the drift allowance)...
const LATE_TTL_MS: u64 = 200;
const LATE_EVERY_MS: u64 = 150;
/// ...and held 100 ms: it runs after the deadline, well under the response
/// timeout.
const LATE_HOLD_MS: u64 = 100;
/// How many acquires the late case tries before it gives up.
const LATE_TRIES: usize = 3;
/// The lock name whose `with_lock` release gets no answer.
const UNANSWERED: &str = "guard-probe-unanswered";
/// Longer than any guarded call here: a body that is never done by itself.
const BODY_MS: u64 = 3 * FAILED_TTL_MS;

/// The lock name whose body becomes ready together with its expired
/// deadline.
const TIE: &str = "guard-probe-tie";
/// The tied lease, and its interval: the first extension is due after the
/// body freezes, before the deadline.
const TIE_TTL_MS: u64 = 300;
const TIE_EVERY_MS: u64 = 250;

/// The lock name kept alive past its first TTL on a quiet line.
const KEPT: &str = "guard-probe-kept";
/// Its lease and interval, and a body half as long again as the lease.
const KEPT_TTL_MS: u64 = 300;
const KEPT_EVERY_MS: u64 = 100;
const KEPT_BODY_MS: u64 = 450;

/// The failed extension's name once the workload has healed.
const FAILED_HEALED: &str = "guard-probe-failed-healed";
/// The kept-alive name once the workload has healed.
const KEPT_HEALED: &str = "guard-probe-kept-healed";

/// Runs every case on `lock` (see the module docs).
pub(crate) async fn probe(actor: &Actor, lock: &Lock<SimConnection>, node: usize) -> ActorResult {
    taken_away(actor, lock, node).await?;
    failed_extension(actor, lock, node, FAILED).await?;
    slow_extension(actor, lock, node).await?;
    late_extension(actor, lock, node).await?;
    unanswered_release(actor, lock, node).await?;
    tie_at_deadline(actor, lock).await?;
    kept_alive(actor, lock, KEPT).await
}

/// The failed-extension and kept-alive cases again, on names of their
/// own, for the reader to run once the workload has healed. Their first
/// runs share the workload's seconds, and a fault there (a server pause
/// across the hand-back, mostly) excuses what they show: a guard that kept
/// a cancelled lease, or a keep-alive that never moved its deadline, went
/// unfound on 8 seeds in 100. With nothing left to excuse them, these judge
/// on every run.
///
/// The kept-alive body goes first: the failed case's held extension runs
/// at the server after that call has returned, and would excuse a loss in
/// a call begun before it ran.
pub(crate) async fn after_heal(actor: &Actor, lock: &Lock<SimConnection>, node: usize) -> ActorResult {
    kept_alive(actor, lock, KEPT_HEALED).await?;
    failed_extension(actor, lock, node, FAILED_HEALED).await
}

/// A body that outlives its first TTL by half with nothing held: only the
/// keep-alive's extensions keep the lease that long, so each confirmed one
/// must move the lease's deadline and the call completes. A loss with no
/// fault and no pause since the call began is `guarded_body`'s liveness
/// finding.
async fn kept_alive(actor: &Actor, lock: &Lock<SimConnection>, name: &str) -> ActorResult {
    const _: () = assert!(KEPT_BODY_MS > KEPT_TTL_MS);
    let policy = KeepAlive::new(lock, Ttl::from_millis(KEPT_TTL_MS)?, Duration::from_millis(KEPT_EVERY_MS))?;
    let body = move |_lease: Lease, _actor: Actor| async move {
        tokio::time::sleep(Duration::from_millis(KEPT_BODY_MS)).await;
    };
    guarded(actor, lock, name, policy, body, None).await?;
    Ok(())
}

/// The caller freezes inside the body before the first extension is due
/// and resumes past the lease's deadline, when the body's next step and
/// the deadline are ready at once: the guard must drop the body.
async fn tie_at_deadline(actor: &Actor, lock: &Lock<SimConnection>) -> ActorResult {
    let policy = KeepAlive::new(lock, Ttl::from_millis(TIE_TTL_MS)?, Duration::from_millis(TIE_EVERY_MS))?;
    let body = move |_lease: Lease, actor: Actor| async move {
        tokio::time::sleep(Duration::from_millis(TIE_EVERY_MS - 50)).await;
        actor.stall(TIE_TTL_MS - 100, "inside a guarded body, across its lease's deadline");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    guarded(actor, lock, TIE, policy, body, None).await?;
    Ok(())
}

/// The first extension is held for [`SLOW_HOLD_MS`]; the body runs four
/// intervals and ends by itself.
async fn slow_extension(actor: &Actor, lock: &Lock<SimConnection>, node: usize) -> ActorResult {
    let ttl = Ttl::from_millis(FAILED_TTL_MS)?;
    let policy = KeepAlive::new(lock, ttl, Duration::from_millis(FAILED_EVERY_MS))?;
    let body = move |lease: Lease, actor: Actor| async move {
        actor.delay_next_request_mentioning(node, SLOW_HOLD_MS, lease.key());
        tokio::time::sleep(Duration::from_millis(4 * FAILED_EVERY_MS + FAILED_EVERY_MS / 2)).await;
    };
    guarded(actor, lock, SLOW, policy, body, None).await?;
    Ok(())
}

/// The first extension is held past the lease's deadline (under the
/// response timeout): the body must be dropped at the deadline.
async fn late_extension(actor: &Actor, lock: &Lock<SimConnection>, node: usize) -> ActorResult {
    let timeout = actor.net().response_timeout.as_millis() as u64;
    if LATE_HOLD_MS + 20 >= timeout {
        // The extension would fail instead: the failed case's business.
        return Ok(());
    }
    // A drift allowance of 50 ms or more at 200 ms refuses the interval:
    // no lock the workload builds has one, but a refusal is no verdict.
    let Ok(policy) = KeepAlive::new(lock, Ttl::from_millis(LATE_TTL_MS)?, Duration::from_millis(LATE_EVERY_MS)) else {
        return Ok(());
    };
    let body = move |lease: Lease, actor: Actor| async move {
        actor.delay_next_request_mentioning(node, LATE_HOLD_MS, lease.key());
        tokio::time::sleep(Duration::from_millis(BODY_MS)).await;
    };
    // A fault on the node or its link fails or refuses the acquire on about
    // one run in twenty: try again once the lease an unanswered acquire may
    // have set has surely expired.
    for _ in 0..LATE_TRIES {
        if guarded(actor, lock, LATE, policy, body, None).await?.granted() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(LATE_TTL_MS + 50)).await;
    }
    Ok(())
}

/// `with_lock` whose release is held at the server past the response
/// timeout: recorded as the workload records `with_lock`.
async fn unanswered_release(actor: &Actor, lock: &Lock<SimConnection>, node: usize) -> ActorResult {
    let ttl_ms = FAILED_TTL_MS;
    let ttl = Ttl::from_millis(ttl_ms)?;
    let hold = actor.net().response_timeout.as_millis() as u64 + 10;
    let acquire = |token, deadline| LockOp::Acquire { name: UNANSWERED.into(), ttl_ms, token, deadline };
    let release = |token| LockOp::Release { name: UNANSWERED.into(), token: Some(token) };
    let acquire_id = actor.call(LOCK_WITH_LOCK, acquire(None, None));
    let inner = actor.clone();
    let ran = Arc::new(AtomicBool::new(false));
    let body_ran = Arc::clone(&ran);
    let r = lock
        .with_lock(UNANSWERED, ttl, move |lease: Lease| async move {
            body_ran.store(true, Ordering::Release);
            let token = lease.token().get();
            inner.ok(acquire_id, acquire(Some(token), Some(inner.millis_of(lease.local_deadline()))));
            inner.delay_next_request_mentioning(node, hold, lease.key());
            (inner.invoke(release(token)), token)
        })
        .await;
    match r {
        Ok(LockOutcome::Ran { output: (rid, token), release: outcome, .. }) => match outcome {
            Release::Released => actor.ok(rid, release(token)),
            Release::AlreadyGone => actor.fail(rid, release(token)),
            Release::Unknown(e) => actor.errored(rid, release(token), &e),
        },
        Ok(LockOutcome::NotAcquired) => actor.fail(acquire_id, acquire(None, None)),
        Err(e) => {
            actor.errored(acquire_id, acquire(None, None), &e);
            // The body ran: whatever the release did, its output is the
            // caller's (the workload judges this only when it wins the
            // contended name with its release held).
            if ran.load(Ordering::Acquire) {
                actor.configured(
                    "Lock::with_lock whose body ran and whose release went unanswered",
                    &[("the call's result", format!("Err({e})"), "Ok(Ran { output, .. })".into())],
                );
            }
        }
    }
    Ok(())
}

/// The key is overwritten with another owner right after the acquire; the
/// release after the drop is held past one interval (the call must not
/// wait for it longer than that).
async fn taken_away(actor: &Actor, lock: &Lock<SimConnection>, node: usize) -> ActorResult {
    let ttl = Ttl::from_millis(TAKEN_TTL_MS)?;
    let policy = KeepAlive::thirds(lock, ttl)?;
    let conn = actor.connection(node);
    let slow_release = Some((node, policy.every().as_millis() as u64 + TAKEN_RELEASE_PAST_EVERY_MS));
    let body = move |lease: Lease, actor: Actor| async move {
        // `XX`: only over the lease that is there; the other owner keeps the
        // key a while, as someone who believes they hold it would.
        let mut c = conn;
        let set = redis::cmd("SET")
            .arg(lease.key())
            .arg("someone-else")
            .arg("XX")
            .arg("PX")
            .arg(TAKEN_TTL_MS * 4)
            .query_async::<Option<String>>(&mut c)
            .await;
        match set {
            Ok(Some(ok)) if ok == "OK" => {
                actor.observe(LockOp::TakenAway { name: TAKEN.into(), token: Some(lease.token().get()) });
                tokio::time::sleep(Duration::from_millis(BODY_MS)).await;
            }
            // Unanswered (a paused server, a cut link): the overwrite may
            // still land, under the release that follows. Said without a
            // token: the release's refusal is then no lie, and nothing
            // expects the guard to see a refusal.
            Err(_) => actor.observe(LockOp::TakenAway { name: TAKEN.into(), token: None }),
            // The lease had expired already: nothing to overwrite.
            Ok(_) => {}
        }
    };
    guarded(actor, lock, TAKEN, policy, body, slow_release).await?;
    Ok(())
}

/// The first extension is held past the response timeout; afterwards the
/// name must be free again.
async fn failed_extension(actor: &Actor, lock: &Lock<SimConnection>, node: usize, name: &str) -> ActorResult {
    let ttl = Ttl::from_millis(FAILED_TTL_MS)?;
    let policy = KeepAlive::new(lock, ttl, Duration::from_millis(FAILED_EVERY_MS))?;
    let timeout = actor.net().response_timeout.as_millis() as u64;
    // Past the response timeout, and failing well before the local deadline
    // (the extension is sent one interval after the acquire).
    let hold = timeout + 10;
    if FAILED_EVERY_MS + hold + 50 >= FAILED_TTL_MS {
        return Ok(());
    }
    let body = move |lease: Lease, actor: Actor| async move {
        actor.delay_next_request_mentioning(node, hold, lease.key());
        tokio::time::sleep(Duration::from_millis(BODY_MS)).await;
    };
    let end = guarded(actor, lock, name, policy, body, None).await?;
    // The held extension fails (a timeout, or a lost connection under a
    // crash); only a caller frozen past the deadline meets the deadline
    // first. The body sleeps long past the extension, so a guard that
    // shrugs the failure off completes, and one that reads it as a
    // refusal says the key is not ours: the promise is "dropped once an
    // extension fails".
    let allowed = [GuardedEnd::Cancelled { loss: Loss::Failed }, GuardedEnd::Cancelled { loss: Loss::DeadlineReached }];
    if end.granted() && !allowed.contains(&end) {
        actor.configured(
            "KeepAlive",
            &[(
                "end after an extension held past the response timeout",
                format!("{end:?}"),
                "Cancelled(Failed)".into(),
            )],
        );
    }
    if matches!(end, GuardedEnd::Cancelled { .. }) {
        let op = |ms| LockOp::RemainingTtl { name: name.into(), ms };
        let id = actor.call(LOCK_REMAINING_TTL, op(None));
        match lock.remaining_ttl(name).await {
            Ok(d) => actor.ok(id, op(d.map(|d| d.as_millis() as u64))),
            Err(e) => actor.errored(id, op(None), &e),
        }
    }
    Ok(())
}

/// `Lock::with_lock_guarded` on `name`, recorded as the workload records
/// it, with the release after a dropped body held at `slow_release`'s
/// node for its ms, if given; how the call ended.
async fn guarded<F, Fut>(
    actor: &Actor,
    lock: &Lock<SimConnection>,
    name: &str,
    policy: KeepAlive,
    body: F,
    slow_release: Option<(usize, u64)>,
) -> Result<GuardedEnd, redis_primitives::Error>
where
    F: FnOnce(Lease, Actor) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let ttl_ms = policy.ttl().as_millis();
    let every_ms = Some(policy.every().as_millis() as u64);
    let acquire = |token, deadline| LockOp::Acquire { name: name.into(), ttl_ms, token, deadline };
    let release = |token| LockOp::Release { name: name.into(), token: Some(token) };
    let gid =
        actor.call(LOCK_WITH_LOCK_GUARDED, LockOp::Guarded { name: name.into(), token: None, outcome: None, every_ms });
    let acquire_id = actor.invoke(acquire(None, None));
    let inner = actor.clone();
    let ran = std::rc::Rc::new(std::cell::Cell::new(false));
    let body_ran = ran.clone();
    let r = lock
        .with_lock_guarded(name, policy, move |lease: Lease| {
            body_ran.set(true);
            let token = lease.token().get();
            inner.ok(acquire_id, acquire(Some(token), Some(inner.millis_of(lease.local_deadline()))));
            let mut mark = BodyMark::new(&inner, name, token);
            if let Some((node, ms)) = slow_release {
                mark = mark.slow_release(node, ms);
            }
            let out = body(lease, inner.clone());
            async move {
                out.await;
                mark.done();
                // The body's end, as the workload marks it: the release
                // follows.
                (inner.invoke(release(token)), token)
            }
        })
        .await;
    let call = GuardedCall { actor, name, ttl_ms, every_ms, call: gid, acquire: acquire_id, body_ran: ran.get() };
    Ok(call.end(r))
}
