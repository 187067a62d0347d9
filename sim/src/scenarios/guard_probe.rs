//! The guard probe: a guarded lease taken away under its body, and one
//! whose extension fails while the key is still its own.
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
//!   guard that shrugs a refusal off as a blip.
//! - **Failed with the key still ours.** The first extension is held at the
//!   server past the connection's response timeout while the lease has
//!   plenty of time left. The guard gives up on the failure; the lease is
//!   still ours at the server, and the guard must hand it back rather than
//!   leave the name blocked until the TTL runs out. The workload's guards
//!   give up at or after expiry, when there is nothing left to hand back.
//!
//! Once per run, before its workload, the first client runs both on names
//! of its own through the workload's `Lock`, and records them as the
//! workload records its guarded calls ([`Op::Guarded`] around an
//! [`Op::Acquire`]), with an [`Op::TakenAway`] at the overwrite and an
//! [`Op::RemainingTtl`] read right after the second call. What the
//! outcomes must be is `checker::guarded_body`'s business (its
//! *taken away* and *hand-back* rules), which knows the faults that excuse
//! a late answer; the probe only stages and records.

use core::time::Duration;
use redis_primitives::{GuardedOutcome, KeepAlive, Lease, Lock, Ttl};

use crate::history::{GuardedResult, Op};
use crate::net::SimConnection;
use crate::world::{Actor, ActorResult};

/// The lock name whose key is taken away.
const TAKEN: &str = "guard-probe-taken";
/// The lock name whose first extension fails.
const FAILED: &str = "guard-probe-failed";
/// The taken-away lease: a third of it between extensions.
const TAKEN_TTL_MS: u64 = 300;
/// The failing lease: long enough that the failure comes well before the
/// local deadline (one interval plus the response timeout).
const FAILED_TTL_MS: u64 = 600;
/// The failing lease's extend interval.
const FAILED_EVERY_MS: u64 = 100;
/// Longer than any guarded call here: a body that is never done by itself.
const BODY_MS: u64 = 3 * FAILED_TTL_MS;

/// Runs both cases on `lock` (see the module docs).
pub async fn probe(actor: &Actor, lock: &Lock<SimConnection>, node: usize) -> ActorResult {
    taken_away(actor, lock, &actor.connection(node)).await?;
    failed_extension(actor, lock, node).await
}

/// The key is overwritten with another owner right after the acquire.
async fn taken_away(actor: &Actor, lock: &Lock<SimConnection>, conn: &SimConnection) -> ActorResult {
    let ttl = Ttl::from_millis(TAKEN_TTL_MS)?;
    let policy = KeepAlive::thirds(lock, ttl)?;
    let conn = conn.clone();
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
        if matches!(set, Ok(Some(ref ok)) if ok == "OK") {
            actor.observe(Op::TakenAway { name: TAKEN.into(), token: Some(lease.token().get()) });
            tokio::time::sleep(Duration::from_millis(BODY_MS)).await;
        }
    };
    guarded(actor, lock, TAKEN, policy, body).await?;
    Ok(())
}

/// The first extension is held past the response timeout; afterwards the
/// name must be free again.
async fn failed_extension(actor: &Actor, lock: &Lock<SimConnection>, node: usize) -> ActorResult {
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
    let cancelled = guarded(actor, lock, FAILED, policy, body).await?;
    if cancelled {
        let op = |ms| Op::RemainingTtl { name: FAILED.into(), ms };
        let id = actor.call("Lock::remaining_ttl", op(None));
        match lock.remaining_ttl(FAILED).await {
            Ok(d) => actor.ok(id, op(d.map(|d| d.as_millis() as u64))),
            Err(e) => actor.errored(id, op(None), &e),
        }
    }
    Ok(())
}

/// `Lock::with_lock_guarded` on `name`, recorded as the workload records
/// it; whether the body was cancelled.
async fn guarded<F, Fut>(
    actor: &Actor,
    lock: &Lock<SimConnection>,
    name: &str,
    policy: KeepAlive,
    body: F,
) -> Result<bool, redis_primitives::Error>
where
    F: FnOnce(Lease, Actor) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let ttl_ms = policy.ttl().as_millis();
    let every_ms = Some(policy.every().as_millis() as u64);
    let gop = |token, outcome| Op::Guarded { name: name.into(), token, outcome, every_ms };
    let acquire = |token, deadline| Op::Acquire { name: name.into(), ttl_ms, token, deadline };
    let gid = actor.call("Lock::with_lock_guarded", gop(None, None));
    let acquire_id = actor.invoke(acquire(None, None));
    let inner = actor.clone();
    let r = lock
        .with_lock_guarded(name, policy, move |lease: Lease| {
            let token = lease.token().get();
            inner.ok(acquire_id, acquire(Some(token), Some(inner.millis_of(lease.local_deadline()))));
            let out = body(lease, inner.clone());
            async move {
                out.await;
                token
            }
        })
        .await;
    match r {
        Ok(GuardedOutcome::NotAcquired) => {
            actor.fail(acquire_id, acquire(None, None));
            actor.ok(gid, gop(None, Some(GuardedResult::NotAcquired)));
            Ok(false)
        }
        Ok(GuardedOutcome::Completed { output, .. }) => {
            actor.ok(gid, gop(Some(output), Some(GuardedResult::Completed)));
            Ok(false)
        }
        Ok(GuardedOutcome::Cancelled { token, reason, at }) => {
            let at = actor.millis_of(at);
            actor.observe(Op::LeaseLost {
                name: name.into(),
                token: Some(token.get()),
                reason: format!("guard: {reason:?}"),
            });
            let deadline_reached = super::lock::loss_is_deadline(actor, &reason);
            actor.ok(gid, gop(Some(token.get()), Some(GuardedResult::Cancelled { at, deadline_reached })));
            Ok(true)
        }
        Err(e) => {
            actor.info(acquire_id, acquire(None, None));
            actor.errored(gid, gop(None, None), &e);
            Ok(false)
        }
    }
}
