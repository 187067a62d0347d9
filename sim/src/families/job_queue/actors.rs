//! The workload's actors: the producer, the workers (one of them stalls
//! while it holds a claim), the reaper, the auditor, and the edge actors
//! that aim scripts at the instants timing rarely hits.

use core::time::Duration;
use rand::Rng;
use redis_primitives::{JobQueue, Ttl};

use super::calls::{claim, complete, enqueue, extend, queue, reap, Held, Queue};
use super::plan::JobPlan;
use super::record::{record, sim_ms, state_name, JobCall};
use super::{JobQueueVariant, QUEUE, STATE};
use crate::families::job_queue::api::JOB_STATE;
use crate::history::Millis;
use crate::world::{Actor, ActorResult};

/// Enqueues the plan's jobs, one at a time.
pub(super) async fn producer(actor: Actor, variant: JobQueueVariant, plan: JobPlan) -> ActorResult {
    let q = queue(&actor, variant)?;
    for j in 0..plan.jobs {
        enqueue(&actor, &q, &format!("job-{j}")).await;
        tokio::time::sleep(Duration::from_millis(15)).await;
    }
    Ok(())
}

/// Claims, works (extending when the work is long or it stalls) and
/// completes until `end`.
pub(super) async fn worker(actor: Actor, variant: JobQueueVariant, plan: JobPlan, end: Millis) -> ActorResult {
    let q = queue(&actor, variant)?;
    let lease = Ttl::from_millis(plan.lease_ms)?;
    let mut rng = actor.rng();
    let mut claims = 0u32;
    let stall = plan.stall.filter(|s| s.worker as usize == actor.index());
    while actor.now() < end {
        let Some(mut held) = claim(&actor, &q, lease).await else {
            tokio::time::sleep(Duration::from_millis(rng.random_range(10..=40))).await;
            continue;
        };
        claims += 1;
        let stalled = stall.filter(|s| s.claim == claims);
        if let Some(s) = stalled {
            actor.stall(s.ms, "while it holds a claim");
        }
        let work = rng.random_range(plan.work_ms.0..=plan.work_ms.1);
        if work > plan.lease_ms / 2 || stalled.is_some() {
            tokio::time::sleep(Duration::from_millis(work / 2)).await;
            extend(&actor, &q, &mut held, lease).await;
            tokio::time::sleep(Duration::from_millis(work - work / 2)).await;
        } else {
            tokio::time::sleep(Duration::from_millis(work)).await;
        }
        complete(&actor, &q, &held).await;
    }
    Ok(())
}

/// Edge actors, each on a queue of its own (`edge-<i>`), aiming scripts at
/// the instants random timing rarely hits: a claim at `990 + i` ms and an
/// extension at `2990 + i` ms (so some script runs on the last millisecond
/// of a second, where a millisecond computed from `TIME`'s microseconds is
/// easiest to get wrong); a reap after the claim's own lease ran out but
/// inside its extension (it must take nothing); then extensions retried
/// until the lease ends exactly on the second ([`LEASE_END_MS`]), and reaps
/// sent every millisecond, concurrently, so that they run on every
/// millisecond around that end — the last one before it included, where a
/// reap that computes its millisecond one too high takes a live lease (none
/// may take it early, the first at or after it must). The job-queue rules
/// judge them like any call: exact leases, no live lease reaped, no lapsed
/// one left.
pub(super) const EDGES: u64 = 14;

/// Where the edge actors aim their extended leases' end: on a second.
const LEASE_END_MS: Millis = 2000;

/// Edge actor `i` (see [`EDGES`]).
pub(super) async fn edge(actor: Actor, i: u64, lease_ms: u64) -> ActorResult {
    let id = format!("edge-{i}");
    let q = Queue::Fenced(JobQueue::new(actor.connection(0), &id)?);
    if !enqueue(&actor, &q, &id).await {
        return Ok(());
    }
    let lease = Ttl::from_millis(lease_ms)?;
    let until = |t: u64| tokio::time::sleep(Duration::from_millis(t.saturating_sub(actor.now())));
    until(990 + i).await;
    let Some(mut held) = claim(&actor, &q, lease).await else { return Ok(()) };
    until(1200 + i).await;
    extend(&actor, &q, &mut held, lease).await;
    // Past the claim's own lease, inside the extension: nothing to take.
    until(1350 + i).await;
    reap(&actor, &q).await;
    until(1690 + i).await;
    extend(&actor, &q, &mut held, lease).await;
    // Aim the lease's end at the second: extend to end at LEASE_END_MS as if
    // the request arrived at once, until one did (a later one overrides).
    let end_of = |held: &Held| match held {
        Held::Fenced(c) => sim_ms(c.lease_until_ms()),
        Held::Naive(_) => 0,
    };
    while end_of(&held) != LEASE_END_MS && actor.now() + 50 < LEASE_END_MS {
        let ttl = Ttl::from_millis(LEASE_END_MS - actor.now())?;
        extend(&actor, &q, &mut held, ttl).await;
    }
    // Across the lease's end, a reap sent every millisecond without waiting
    // for the one before: with links of 1–10 ms each way, some run on every
    // millisecond from just before the end to just after it.
    let end = end_of(&held);
    until(end.saturating_sub(12)).await;
    let mut reaps = Vec::new();
    while actor.now() <= end + 2 {
        let (a, q) = (actor.clone(), q.clone());
        reaps.push(actor.spawn(async move { reap(&a, &q).await }));
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    for r in reaps {
        let _ = r.await;
    }
    until(2300 + i).await;
    let Some(mut held) = claim(&actor, &q, lease).await else { return Ok(()) };
    until(2990 + i).await;
    extend(&actor, &q, &mut held, lease).await;
    complete(&actor, &q, &held).await;
    Ok(())
}

/// Reaps every `reap_every_ms` until `end`.
pub(super) async fn reaper(actor: Actor, variant: JobQueueVariant, plan: JobPlan, end: Millis) -> ActorResult {
    let q = queue(&actor, variant)?;
    while actor.now() < end {
        tokio::time::sleep(Duration::from_millis(plan.reap_every_ms)).await;
        reap(&actor, &q).await;
    }
    Ok(())
}

/// Reads every job's state once the workers have stopped (the naive twin
/// has no state to read: its lost or doubled jobs show in the completions).
pub(super) async fn auditor(actor: Actor, plan: JobPlan, end: Millis) -> ActorResult {
    let q = JobQueue::new(actor.connection(0), QUEUE)?;
    // The workers' last requests land within a response timeout.
    tokio::time::sleep(Duration::from_millis(end + 400)).await;
    for j in 0..plan.jobs {
        let call = JobCall { id: Some(format!("job-{j}")), ..JobCall::default() };
        let op = actor.call(JOB_STATE, record(STATE, call.clone()));
        match q.state(&format!("job-{j}")).await {
            Ok(s) => actor.ok(op, record(STATE, JobCall { state: Some(state_name(s)), ..call })),
            Err(e) => actor.errored(op, record(STATE, call), &e),
        }
    }
    Ok(())
}
