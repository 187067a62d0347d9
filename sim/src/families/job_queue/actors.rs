//! The workload's actors: the producer, the workers (one of them stalls
//! while it holds a claim, and each reads jobs' states now and then), the
//! reaper, the auditor, and the edge actors that aim scripts at the
//! instants timing rarely hits.

use core::time::Duration;
use rand::rngs::StdRng;
use rand::Rng;
use redis_primitives::{JobQueue, JobState, Ttl};
use tokio::time::{sleep_until, Instant};

use super::calls::{claim, complete, enqueue, extend, queue, reap, state, Held, Queue};
use super::plan::JobPlan;
use super::record::sim_ms;
use super::{JobQueueVariant, QUEUE};
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
/// completes until `end`, reading jobs' states while it works and now and
/// then while idle ([`Reads`]). Its waits keep their lengths: a read shifts
/// the worker's own calls only when it outlasts the wait it is in.
pub(super) async fn worker(actor: Actor, variant: JobQueueVariant, plan: JobPlan, end: Millis) -> ActorResult {
    let q = queue(&actor, variant)?;
    let lease = Ttl::from_millis(plan.lease_ms)?;
    let mut rng = actor.rng();
    let mut reads = Reads::new(&actor, &plan);
    let mut claims = 0u32;
    let stall = plan.stall.filter(|s| s.worker as usize == actor.index());
    while actor.now() < end {
        let Some(mut held) = claim(&actor, &q, lease).await else {
            let idle = Instant::now();
            reads.idle(&actor, &q).await;
            sleep_until(idle + Duration::from_millis(rng.random_range(10..=40))).await;
            continue;
        };
        claims += 1;
        let stalled = stall.filter(|s| s.claim == claims);
        if let Some(s) = stalled {
            actor.stall(s.ms, "while it holds a claim");
        }
        let work = rng.random_range(plan.work_ms.0..=plan.work_ms.1);
        let started = Instant::now();
        if work > plan.lease_ms / 2 || stalled.is_some() {
            reads.during(&actor, &q, held.id(), started + Duration::from_millis(work / 2)).await;
            extend(&actor, &q, &mut held, lease).await;
            let resumed = Instant::now();
            reads.during(&actor, &q, held.id(), resumed + Duration::from_millis(work - work / 2)).await;
        } else {
            reads.during(&actor, &q, held.id(), started + Duration::from_millis(work)).await;
        }
        complete(&actor, &q, &held).await;
    }
    Ok(())
}

/// A worker's state reads, between its own calls and under its faults,
/// so that reads run while other workers claim, extend and complete the
/// same jobs and the reaper reaps them (the `state-reads` rule judges
/// them). Drawn from a stream of their own, so the worker's other draws
/// are the ones it made without them.
struct Reads {
    rng: StdRng,
    ids: Vec<String>,
    /// The jobs this worker has read done (read no more while working).
    done: Vec<bool>,
    /// The job it reads while working, until it reads it done.
    watched: Option<usize>,
}

/// While idle (the queue empty), one wait in this many reads a job.
const IDLE_READ_ONE_IN: u32 = 32;

/// The pause before each read while working, ms.
const WORK_READ_GAP_MS: core::ops::RangeInclusive<u64> = 10..=30;

/// The longest a read may take, ms, for one started before the work ends
/// (usually) not to delay the worker's next call.
const READ_MS: u64 = 20;

impl Reads {
    fn new(actor: &Actor, plan: &JobPlan) -> Reads {
        let ids: Vec<String> = (0..plan.jobs).map(|j| format!("job-{j}")).collect();
        Reads { rng: actor.rng_for("state-reads"), done: vec![false; ids.len()], ids, watched: None }
    }

    /// Works until `until`, now and then reading a job near `held` in the
    /// queue ([`Reads::watch`]). A worker frozen meanwhile reads only once
    /// it is back (it freezes in a pause, never inside a read).
    async fn during(&mut self, actor: &Actor, q: &Queue, held: &str, until: Instant) {
        let at = self.ids.iter().position(|id| id == held);
        if let (Queue::Fenced(q), Some(at)) = (q, at) {
            let margin = Duration::from_millis(READ_MS);
            loop {
                let next = Instant::now() + Duration::from_millis(self.rng.random_range(WORK_READ_GAP_MS));
                if next + margin >= until {
                    break;
                }
                sleep_until(next).await;
                if Instant::now() + margin >= until {
                    break;
                }
                let j = self.watch(at);
                self.done[j] = state(actor, q, &self.ids[j]).await == Some(JobState::Done);
            }
        }
        sleep_until(until).await;
    }

    /// The job to read while holding job `at`: the one watched, until it is
    /// read done; then one of the two before or after it not read done (the
    /// jobs other workers are likeliest to be working on, completing or
    /// claiming meanwhile), or, with none left, its own.
    fn watch(&mut self, at: usize) -> usize {
        if let Some(w) = self.watched.filter(|&w| !self.done[w]) {
            return w;
        }
        // Places before the first job wrap to far past the last: no job.
        let near: Vec<usize> = [at.wrapping_sub(2), at.wrapping_sub(1), at + 1, at + 2]
            .into_iter()
            .filter(|&j| self.done.get(j) == Some(&false))
            .collect();
        let j = if near.is_empty() { at } else { near[self.rng.random_range(0..near.len())] };
        self.watched = Some(j);
        j
    }

    /// Now and then, reads any job.
    async fn idle(&mut self, actor: &Actor, q: &Queue) {
        let Queue::Fenced(q) = q else { return };
        if self.ids.is_empty() || self.rng.random_range(0..IDLE_READ_ONE_IN) != 0 {
            return;
        }
        let at = self.rng.random_range(0..self.ids.len());
        state(actor, q, &self.ids[at]).await;
    }
}

/// Edge actors, each on a queue of its own (`edge-<i>`), aiming scripts at
/// the instants random timing rarely hits: a claim at `990 + i` ms and an
/// extension at `2990 + i` ms (so some script runs on the last millisecond
/// of a second, where a millisecond computed from `TIME`'s microseconds is
/// easiest to get wrong); a reap after the claim's own lease ran out but
/// inside its extension (it must take nothing); then extensions retried
/// until the lease ends exactly on the second ([`LEASE_END_MS`]; odd actors
/// a millisecond before it, on the second's last millisecond), allowing for
/// the latency the last try met, and reaps sent every millisecond,
/// concurrently, so that they run on every millisecond around that end —
/// the last one before it included, where a reap that computes its
/// millisecond one too high takes a live lease, and the end's own, where
/// one that computes it one too low leaves a lapsed lease (none may take it
/// early, the first at or after it must). The job-queue rules
/// judge them like any call: exact leases, no live lease reaped, no lapsed
/// one left.
pub(super) const EDGES: u64 = 14;

/// Where the even edge actors aim their extended leases' end: on a second
/// (the odd ones, a millisecond before it).
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
    // Aim the lease's end at the second: extend to end at LEASE_END_MS,
    // until one did (a later one overrides). A lease runs from when its
    // script ran, a link's latency (1 ms at least) after the send: each try
    // allows for the latency the last one met.
    let end_of = |held: &Held| match held {
        Held::Fenced(c) => sim_ms(c.lease_until_ms()),
        Held::Naive(_) => 0,
    };
    let mut latency: u64 = 1;
    // Odd actors aim a millisecond earlier, on the second's last one: a
    // reap that reads its millisecond one too low must still take it there.
    let target = LEASE_END_MS - i % 2;
    while end_of(&held) != target && actor.now() + 50 < target {
        let before = end_of(&held);
        let ttl = (target - actor.now()).saturating_sub(latency).max(1);
        extend(&actor, &q, &mut held, Ttl::from_millis(ttl)?).await;
        // A confirmed extension ends at (sent + its latency) + ttl: what it
        // missed the second by is what the latency guess was off by.
        let end = end_of(&held);
        if end != before {
            latency = (latency + end).saturating_sub(target).max(1);
        }
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
        state(&actor, &q, &format!("job-{j}")).await;
    }
    Ok(())
}
