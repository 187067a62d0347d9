//! The reader: one actor beside the clients, on the reader's host. While
//! the clients run the workload it runs the probes (`probes/`), each on
//! names of its own; once every fault has healed it runs the liveness
//! probe, reads the resource (the final value `no-stale-overwrite`
//! judges), and plants the corrupt keys. The acknowledgement and floor
//! probes run as processes of their own on the same host, at moments of
//! their own.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use core::time::Duration;
use redis_primitives::{FencedStore, Lock, OwnerSource, Retry, Tokens, Ttl};
use redis_primitives_naive::UnfencedStore;
use tokio::task::JoinHandle;

use super::workload::{fenced_lock, lock_drift, sleep_ms};
use super::{probes, LockKind, LockWorkload, Protection, StoreKind, ACK_TIMEOUT_MS, LOCK_NAME, RESOURCE_KEY};
use crate::api::UNFENCED_STORE_READ;
use crate::families::lock::api::{LOCK_ACQUIRE, LOCK_RELEASE, RETRY_RUN};
use crate::families::lock::op::LockOp;
use crate::history::Op;
use crate::net::SimConnection;
use crate::world::{Actor, ActorResult};

/// The reader (see the module docs): probes from the start, then at
/// `read_at` (once every fault has healed) the liveness probe when the
/// workload has modes, the read, and the corrupt keys. `done` counts the
/// clients that have stopped; `ack_at` is the acknowledgement probe's
/// moment, if the schedule has one.
pub(super) async fn reader(
    actor: Actor,
    w: LockWorkload,
    read_at: u64,
    done: Arc<AtomicU32>,
    ack_at: Option<u64>,
) -> ActorResult {
    // A process of its own on the reader's host, beside the probes below:
    // its moment is the schedule's, not theirs.
    let ack = ack_at.map(|at| spawn_ack_prober(&actor, &w, at));
    // Another process of its own, for time-floored tokens only: it waits
    // for the first milliseconds of a second, which the reader's moments
    // must not.
    let floor = (w.modes && w.lock == LockKind::Fenced && w.protection == Protection::TimeFloored)
        .then(|| spawn_floor_prober(&actor, &w));
    // The probes run here, on names of their own, while the clients run the
    // workload: the reader is idle until `read_at`, and no client waits for
    // them (client 0 contends from the start). Their requests still draw
    // from turmoil's one latency RNG, so a changed probe moves the clients'
    // timelines a little all the same.
    if let (true, LockKind::Fenced) = (w.modes, w.lock) {
        probe_while_clients_run(&actor, &w).await?;
    }
    let now = actor.now();
    if read_at > now {
        sleep_ms(read_at - now).await;
    }
    if w.modes {
        liveness_probe(&actor, &w, &done).await?;
    }
    read_resource(&actor, &w).await;
    if w.modes {
        let tokens = if w.protection == Protection::TimeFloored { Tokens::TimeFloored } else { Tokens::Counter };
        probes::corruption::probe(&actor, w.lock_node, tokens).await?;
        if w.lock == LockKind::Fenced {
            let lock = fenced_lock(actor.connection(w.lock_node), &w, actor.seed_for("guard-after-heal"))?;
            probes::guard::after_heal(&actor, &lock, w.lock_node).await?;
        }
    }
    if let Some(ack) = ack {
        ack.await??;
    }
    if let Some(floor) = floor {
        floor.await??;
    }
    Ok(())
}

/// The acknowledgement probe, as a process of its own (`ack-prober`):
/// an acknowledged acquire sent at `at`, inside a replication cut, must be
/// refused, and then leave the name free.
fn spawn_ack_prober(actor: &Actor, w: &LockWorkload, at: u64) -> JoinHandle<ActorResult> {
    let prober = actor.alias("ack-prober");
    let w = w.clone();
    actor.spawn(async move {
        let conn = prober.connection(w.lock_node);
        let lock = fenced_lock(conn.clone(), &w, prober.seed())?;
        let ttl = Ttl::from_millis(w.plan.ttl_ms)?;
        let what = "Acknowledged Lock::acquire";
        let refused = crate::probes::ack::probe(&prober, at, ACK_TIMEOUT_MS, what, || async {
            match lock.acquire(ACK_PROBE_NAME, ttl).await? {
                Some(lease) => {
                    let _ = lock.release(&lease).await;
                    Ok(true)
                }
                None => Ok(false),
            }
        })
        .await?;
        if refused {
            released_after_refusal(&prober, &lock, conn).await?;
        }
        ActorResult::Ok(())
    })
}

/// The floor probe (`probes/floor.rs`), as a process of its own
/// (`floor-prober`).
fn spawn_floor_prober(actor: &Actor, w: &LockWorkload) -> JoinHandle<redis_primitives::Result<()>> {
    let prober = actor.alias("floor-prober");
    let w = w.clone();
    actor.spawn(async move {
        let lock = fenced_lock(prober.connection(w.lock_node), &w, prober.seed())?;
        probes::floor::probe(&prober, &lock).await
    })
}

/// The probes the reader runs while the clients run the workload, one
/// after the other, each through a `Lock` configured as the workload's.
async fn probe_while_clients_run(actor: &Actor, w: &LockWorkload) -> ActorResult {
    let lock = fenced_lock(actor.connection(w.lock_node), w, actor.seed())?;
    probes::stale_lease::probe(actor, &lock, w.lock_node).await?;
    probes::guard::probe(actor, &lock, w.lock_node).await?;
    let rival = fenced_lock(actor.connection(w.lock_node), w, actor.seed_for("release-race"))?;
    probes::release_race::probe(actor, &lock, &rival, w.lock_node).await?;
    // A process of its own on the reader's host: the liveness rule
    // judges the reader's own retries, and these are refused on purpose.
    let prober = actor.alias("retry-prober");
    let lock = fenced_lock(prober.connection(w.lock_node), w, prober.seed())?;
    probes::retry::probe(&prober, &lock, w.lock_node).await?;
    Ok(())
}

/// The resource read once everything has healed, recorded: the final
/// value the stale-overwrite check compares with the writes before it.
async fn read_resource(actor: &Actor, w: &LockWorkload) {
    let conn = actor.connection(w.store_node);
    match w.store {
        StoreKind::Fenced => super::record::read_fenced(actor, &FencedStore::new(conn)).await,
        StoreKind::Unfenced => {
            let op = |value| Op::Read { key: RESOURCE_KEY.into(), value, token: None };
            let id = actor.call(UNFENCED_STORE_READ, op(None));
            match UnfencedStore::new(conn).read(RESOURCE_KEY).await {
                Ok(v) => actor.ok(id, op(v.map(|b| String::from_utf8_lossy(&b).into_owned()))),
                Err(e) => actor.errored(id, op(None), &e),
            }
        }
    }
}

/// The liveness probe (see `checks::lock_liveness`): once every client
/// has stopped, `Retry::run` around `Lock::acquire` must be granted within
/// TTL + 150 ms; then it releases.
async fn liveness_probe(actor: &Actor, w: &LockWorkload, done: &AtomicU32) -> ActorResult {
    while done.load(Ordering::Relaxed) < w.plan.clients {
        sleep_ms(10).await;
    }
    let lock = Lock::builder(actor.connection(w.lock_node))
        .owners(OwnerSource::seeded(actor.seed()))
        .drift(lock_drift(w)?)
        .build()?;
    let ttl = Ttl::from_millis(w.plan.ttl_ms)?;
    let bound = w.plan.ttl_ms + super::checks::lock_liveness::SLACK_MS;
    let attempts = core::num::NonZeroU32::new(60).expect("non-zero");
    let retry = Retry::new(attempts, Duration::from_millis(5), Duration::from_millis(20))?;
    let retry = retry.deadline(Duration::from_millis(bound - 20)).seeded(actor.seed_for("probe"));
    let rop = |token| LockOp::Retry {
        name: LOCK_NAME.into(),
        attempts: 60,
        deadline_ms: Some(bound - 20),
        token,
        backoff_ms: Some((5, 20)),
    };
    let rid = actor.call(RETRY_RUN, rop(None));
    let r = retry
        .run(|| {
            let (actor, lock) = (actor.clone(), lock.clone());
            async move {
                let op = |token, deadline| LockOp::Acquire {
                    name: LOCK_NAME.into(),
                    ttl_ms: w.plan.ttl_ms,
                    token,
                    deadline,
                };
                let id = actor.call(LOCK_ACQUIRE, op(None, None));
                let r = lock.acquire(LOCK_NAME, ttl).await;
                match &r {
                    Ok(Some(l)) => actor.ok(id, op(Some(l.token().get()), Some(actor.millis_of(l.local_deadline())))),
                    Ok(None) => actor.fail(id, op(None, None)),
                    Err(e) => actor.errored(id, op(None, None), e),
                }
                r
            }
        })
        .await;
    match r {
        Ok(Some(lease)) => {
            actor.ok(rid, rop(Some(lease.token().get())));
            let op = LockOp::Release { name: LOCK_NAME.into(), token: Some(lease.token().get()) };
            let id = actor.call(LOCK_RELEASE, op.clone());
            match lock.release(&lease).await {
                Ok(true) => actor.ok(id, op),
                Ok(false) => actor.fail(id, op),
                Err(e) => actor.errored(id, op, &e),
            }
        }
        Ok(None) => actor.fail(rid, rop(None)),
        Err(e) => actor.errored(rid, rop(None), &e),
    }
    Ok(())
}

/// The name the acknowledgement probe acquires (nobody else uses it).
const ACK_PROBE_NAME: &str = "ack-probe";

/// After an acknowledged acquire was refused `NotAcknowledged`, the name
/// must be free again: the acquire took the lease before its `WAIT` gave
/// up, and a lease nobody was handed must go back at once rather than
/// block the name for a TTL. Nothing else takes the probe's name, and no
/// fault reaches the prober in its window (`probes::ack::send_at`), so the
/// key is absent unless the acquire kept it. Recorded as an
/// [`Op::Configured`] read-back; a read the network fails says nothing
/// and is not recorded.
async fn released_after_refusal(prober: &Actor, lock: &Lock<SimConnection>, mut conn: SimConnection) -> ActorResult {
    let key = lock.key(ACK_PROBE_NAME)?;
    let Ok(pttl) = redis::cmd("PTTL").arg(&key).query_async::<i64>(&mut conn).await else { return Ok(()) };
    let got = if pttl == -2 { "absent".to_string() } else { format!("present (PTTL {pttl} ms)") };
    prober.configured(
        "Acknowledged Lock::acquire refused NotAcknowledged",
        &[("the lock key right after the refusal", got, "absent".to_string())],
    );
    Ok(())
}
