//! The job-queue family: `JobQueue`'s job-claim lease against its broken
//! twin, under pauses, partitions, held replies and server pauses.
//!
//! Workers claim jobs, work on them, sometimes extend, and complete them; a
//! reaper returns jobs whose lease lapsed (by the server's clock) to the
//! queue; an auditor reads every job's state once the faults have healed
//! and a quiet tail has passed. A seeded worker freezes while it holds one
//! claim (a GC pause longer than the lease): its job is reaped and claimed
//! again, so the same job is worked twice and the stale worker's late
//! completion (and extension) must be refused by the attempt fence.
//!
//! What is judged ([`JOB_QUEUE`]): at most one completion is accepted per
//! job; an accepted completion (or extension) carries the job's latest
//! attempt; attempts increase; a refusal is justified by the history; a
//! reap never takes a lease that had not lapsed; claims come out in FIFO
//! order, a reaped job in its original place; and (`liveness`) every
//! enqueued job is done by the end. Work done twice is measured, not
//! judged: `job-double-run-count` counts the extra runs per job (the price of a
//! lease: at-least-once work, exactly-once completion).
//!
//! This family was added through the harness's public extension points
//! only: its plan, run and checker live here, its operations are
//! [`Op::Custom`] records, its invariant is declared in its registry row.
//! Restarts are left out: a redis-server without persistence loses the
//! whole queue on a restart (the same non-guarantee `counter-loss` shows
//! for the fence counter).

mod probe;

use std::collections::BTreeMap;

use core::time::Duration;
use rand::Rng;
use redis_primitives::naive::NaiveJobQueue;
use redis_primitives::{Completion, Enqueued, JobQueue, JobState, Ttl};
use serde::{Deserialize, Serialize};

use crate::api::{JOB_CLAIM, JOB_COMPLETE, JOB_ENQUEUE, JOB_EXTEND, JOB_REAP, JOB_STATE};
use crate::bridge::Execution;
use crate::checker::lease_views::Allowance;
use crate::checker::{Violation, LIVENESS};
use crate::family::Family;
use crate::history::{Api, Event, EventKind, Millis, Op};
use crate::nemesis::{Fault, Schedule};
use crate::scenarios::{outcome_from, Outcome, Situation};
use crate::servers::{Servers, SetupError};
use crate::space::{FaultSpace, WorkloadFault};
use crate::stats::{Histograms, Metric, Unit};
use crate::world::{together, Actor, ActorResult, Process, World, WorldConfig, DEFAULT_EPOCH_UNIX_MS};
use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;

/// The family's invariant.
pub const JOB_QUEUE: &str = "job-queue";

/// Its one-line meaning, for the registry row.
pub const INVARIANTS: &[(&str, &str)] = &[(
    JOB_QUEUE,
    "per job: at most one accepted completion, carrying its latest attempt; attempts increase; refusals and reaps are justified",
)];

/// The public operations its workload calls.
pub const OPERATIONS: &[Api] = &[JOB_ENQUEUE, JOB_CLAIM, JOB_EXTEND, JOB_COMPLETE, JOB_REAP, JOB_STATE];

/// The library scripts its histories depend on.
pub const SCRIPTS: &[&str] = &["job_enqueue", "job_claim", "job_complete", "job_extend", "job_reap"];

const QUEUE: &str = "jobs";
/// The actor that enqueues the workers' jobs.
const PRODUCER: &str = "producer";
/// The host the producer, the reaper, the auditor, the probe and the edge
/// actors share ([`Actor::alias`]).
const SIDE: &str = "queue-side";
/// Extra runs per job (its claims − 1): work done twice, measured.
const DOUBLE_RUNS: Metric = Metric::new("job-double-run-count", Unit::Count);
const ENQUEUE: &str = "job-enqueue";
const CLAIM: &str = "job-claim";
const EXTEND: &str = "job-extend";
const COMPLETE: &str = "job-complete";
const REAP: &str = "job-reap";
const STATE: &str = "job-state";

/// The situations `job-queue` exists to reach.
pub const SITUATIONS: &[Situation] = &[
    Situation { name: "lapsed-lease-reaped", meaning: "a reap returned a job whose lease had lapsed to the queue" },
    Situation { name: "job-run-twice", meaning: "a job was claimed again while its first worker still had it" },
    Situation { name: "stale-completion-refused", meaning: "a worker's completion was refused: its attempt was stale" },
    Situation { name: "claim-extended", meaning: "a worker extended its claim's lease" },
    Situation {
        name: "stale-extend-refused",
        meaning: "an extension of a claim whose job had been reaped was refused",
    },
];

/// Which queue a scenario runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// `job-queue`: [`JobQueue`], fenced by the job's attempt counter.
    Fenced,
    /// `job-queue-naive`: [`NaiveJobQueue`], no lease and no fence.
    Naive,
}

/// One run of the family, spelled out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobPlan {
    /// Worker actors (`Target::Client(i)` is worker `i`).
    pub workers: u32,
    /// Jobs enqueued at the start (`job-0` …).
    pub jobs: u32,
    /// The lease each claim asks for, ms.
    pub lease_ms: u64,
    /// How long one job's work takes, drawn per claim (inclusive, ms).
    pub work_ms: (u64, u64),
    /// How often the reaper runs, ms.
    pub reap_every_ms: u64,
    /// The faults' window, ms; a quiet tail follows.
    pub length_ms: u64,
    /// The targeted fault: a worker freezes while it holds a claim.
    pub stall: Option<Stall>,
}

/// Worker `worker` freezes for `ms` right after its `claim`-th claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stall {
    /// Which worker.
    pub worker: u32,
    /// Which of its claims (1-based).
    pub claim: u32,
    /// How long, ms.
    pub ms: u64,
}

impl JobPlan {
    /// When the workers stop: the faults' window, the stall and the last
    /// fault's heal, then a quiet tail long enough for a lapsed lease to be
    /// reaped and its job claimed and worked again.
    fn end_ms(&self, schedule: &Schedule) -> Millis {
        let healed = schedule.faults.iter().map(crate::nemesis::Fault::end).max().unwrap_or(0);
        let stall = self.stall.map_or(0, |s| s.ms);
        self.length_ms.max(healed) + stall + self.quiet_tail_ms()
    }

    /// The liveness bound: lease + reap interval + work + round trips, twice.
    fn quiet_tail_ms(&self) -> Millis {
        2 * (self.lease_ms + self.reap_every_ms + self.work_ms.1 + 200)
    }
}

impl core::fmt::Display for JobPlan {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "{} worker(s), {} job(s), lease {}ms, work {}..={}ms, reap every {}ms, {}ms of faults",
            self.workers, self.jobs, self.lease_ms, self.work_ms.0, self.work_ms.1, self.reap_every_ms, self.length_ms
        )?;
        if let Some(s) = self.stall {
            write!(f, "; worker#{} freezes {}ms after its claim #{}", s.worker, s.ms, s.claim)?;
        }
        Ok(())
    }
}

/// What every job operation records (one shape for all verbs; absent
/// fields are left out of the JSON).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobCall {
    /// The job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The claim's attempt (the fence).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u64>,
    /// Whether it was accepted (enqueue added, extend extended, complete
    /// accepted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted: Option<bool>,
    /// The lease's end on the server's clock, as simulated ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_until: Option<Millis>,
    /// A refusal's current attempt, or a job's state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// The jobs a reap returned.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ids: Vec<String>,
    /// A claimed job's payload, as text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<String>,
    /// The lease an extension asked for (ms), when it is not the plan's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_ms: Option<u64>,
}

/// The payload the producer enqueues with `id`.
fn payload_of(id: &str) -> String {
    format!("payload of {id}")
}

fn record(verb: &str, call: JobCall) -> Op {
    Op::custom(verb, &call)
}

fn state_name(s: Option<JobState>) -> String {
    match s {
        Some(JobState::Pending) => "pending",
        Some(JobState::Active) => "active",
        Some(JobState::Done) => "done",
        None => "unknown",
    }
    .to_string()
}

/// Server-clock ms (the server's wall clock is pinned to simulated time
/// from [`DEFAULT_EPOCH_UNIX_MS`]) as simulated ms.
fn sim_ms(server_ms: u64) -> Millis {
    server_ms.saturating_sub(DEFAULT_EPOCH_UNIX_MS)
}

/// The plan every seed starts from.
fn template() -> JobPlan {
    JobPlan { workers: 3, jobs: 8, lease_ms: 300, work_ms: (20, 250), reap_every_ms: 100, length_ms: 2500, stall: None }
}

/// What job-queue plans may be drawn from: the template's settings with
/// these ranges (inclusive; each shrinks towards its first bound).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobSpace {
    /// Workers.
    pub workers: (u32, u32),
    /// Jobs the producer enqueues.
    pub jobs: (u32, u32),
    /// Claim lease (ms).
    pub lease_ms: (u64, u64),
    /// Whether and how long a worker freezes after one of its first two
    /// claims.
    pub stall: WorkloadFault,
}

impl JobSpace {
    /// What both variants' seeds draw: three workers, eight jobs, a 300 ms
    /// lease, and a drawn worker frozen 500–900 ms after a drawn claim.
    pub fn seeds() -> JobSpace {
        let t = template();
        JobSpace {
            workers: (t.workers, t.workers),
            jobs: (t.jobs, t.jobs),
            lease_ms: (t.lease_ms, t.lease_ms),
            stall: WorkloadFault::Always { ms: (500, 900) },
        }
    }

    /// The property search's space: 1–3 workers, 1–8 jobs, a 150–500 ms
    /// lease, maybe a worker frozen for 100–1500 ms.
    pub fn search() -> JobSpace {
        JobSpace {
            workers: (1, 3),
            jobs: (1, 8),
            lease_ms: (150, 500),
            stall: WorkloadFault::Maybe { ms: (100, 1500) },
        }
    }

    /// The strategy (the family's one generator).
    pub fn plans(&self) -> BoxedStrategy<(JobPlan, Vec<Fault>)> {
        let stall = self
            .stall
            .strategy((0..self.workers.1.max(1), 1..=2u32))
            .prop_map(|s| s.map(|((worker, claim), ms)| Stall { worker, claim, ms }));
        (self.workers.0..=self.workers.1, self.jobs.0..=self.jobs.1, self.lease_ms.0..=self.lease_ms.1, stall)
            .prop_map(|(workers, jobs, lease_ms, stall)| {
                (JobPlan { workers, jobs, lease_ms, stall, ..template() }, Vec::new())
            })
            .boxed()
    }
}

/// The property search's space for `job-queue-naive` ([`JobSpace::search`],
/// up to three client-side faults or server pauses): the registry row's
/// search target, kept here with the family rather than in `search/`.
pub fn naive_search_space() -> crate::space::Space {
    let faults = FaultSpace::new(crate::search::CLIENT_SIDE, 3);
    crate::space::Space::of::<Variant>("job-queue-naive", faults, &JobSpace::search())
}

/// One queue or the other, behind the workload's calls.
#[derive(Clone)]
enum Queue {
    Fenced(JobQueue<crate::net::SimConnection>),
    Naive(NaiveJobQueue<crate::net::SimConnection>),
}

/// A claim as the workload holds it.
enum Held {
    Fenced(redis_primitives::Claim),
    Naive(String),
}

impl Held {
    fn id(&self) -> &str {
        match self {
            Held::Fenced(c) => c.id(),
            Held::Naive(id) => id,
        }
    }

    fn attempt(&self) -> Option<u64> {
        match self {
            Held::Fenced(c) => Some(c.attempt().get()),
            Held::Naive(_) => None,
        }
    }
}

fn queue(actor: &Actor, variant: Variant) -> Result<Queue, redis_primitives::Error> {
    let conn = actor.connection(0);
    Ok(match variant {
        Variant::Fenced => Queue::Fenced(JobQueue::new(conn, QUEUE)?),
        Variant::Naive => Queue::Naive(NaiveJobQueue::new(conn, QUEUE)?),
    })
}

async fn producer(actor: Actor, variant: Variant, plan: JobPlan) -> ActorResult {
    let q = queue(&actor, variant)?;
    for j in 0..plan.jobs {
        enqueue(&actor, &q, &format!("job-{j}")).await;
        tokio::time::sleep(Duration::from_millis(15)).await;
    }
    Ok(())
}

/// One recorded enqueue of `id` with its payload; whether it was added.
async fn enqueue(actor: &Actor, q: &Queue, id: &str) -> bool {
    let call = JobCall { id: Some(id.to_string()), ..JobCall::default() };
    let op = actor.call(JOB_ENQUEUE, record(ENQUEUE, call.clone()));
    let payload = payload_of(id);
    let r = match q {
        Queue::Fenced(q) => q.enqueue(id, &payload).await.map(|e| e == Enqueued::Added),
        Queue::Naive(q) => q.enqueue(id, &payload).await.map(|()| true),
    };
    match r {
        Ok(added) => {
            actor.ok(op, record(ENQUEUE, JobCall { accepted: Some(added), ..call }));
            added
        }
        Err(e) => {
            actor.errored(op, record(ENQUEUE, call), &e);
            false
        }
    }
}

async fn worker(actor: Actor, variant: Variant, plan: JobPlan, end: Millis) -> ActorResult {
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
const EDGES: u64 = 14;
/// Where the edge actors aim their extended leases' end: on a second.
const LEASE_END_MS: Millis = 2000;

async fn edge(actor: Actor, i: u64, lease_ms: u64) -> ActorResult {
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

/// One recorded claim; `None` when nothing was claimed or it failed.
async fn claim(actor: &Actor, q: &Queue, lease: Ttl) -> Option<Held> {
    let op = actor.call(JOB_CLAIM, record(CLAIM, JobCall::default()));
    let sent = tokio::time::Instant::now();
    let claimed = match q {
        Queue::Fenced(q) => q.claim(lease).await.map(|c| c.map(Held::Fenced)),
        Queue::Naive(q) => q.claim().await.map(|c| c.map(|(id, _)| Held::Naive(id))),
    };
    match claimed {
        Ok(Some(h)) => {
            let (lease_until, payload) = match &h {
                Held::Fenced(c) => {
                    (Some(sim_ms(c.lease_until_ms())), Some(String::from_utf8_lossy(c.payload()).into_owned()))
                }
                Held::Naive(_) => (None, None),
            };
            let call = JobCall {
                id: Some(h.id().to_string()),
                attempt: h.attempt(),
                lease_until,
                payload,
                ..JobCall::default()
            };
            actor.ok(op, record(CLAIM, call));
            if let Held::Fenced(c) = &h {
                check_deadline(actor, "claim", c, sent, lease);
                check_trust(actor, c);
            }
            Some(h)
        }
        Ok(None) => {
            actor.ok(op, record(CLAIM, JobCall::default()));
            None
        }
        Err(e) => {
            actor.errored(op, record(CLAIM, JobCall::default()), &e);
            None
        }
    }
}

/// A claim's clock starts when its request is sent (the claim's or the
/// confirmed extend's), and its local deadline is that instant plus the
/// lease minus the drift allowance of `JobQueue::new` (`Drift::DEFAULT`),
/// exactly, as `lease-views` judges a `Lock` lease. A deadline taken from
/// the reply or without the allowance trusts the claim a little too long,
/// which only an unlucky reap would otherwise show. Recorded (as a
/// `configuration` read-back) only when it says otherwise.
fn check_deadline(actor: &Actor, after: &str, c: &redis_primitives::Claim, sent: tokio::time::Instant, lease: Ttl) {
    let lease_ms = lease.as_millis();
    let want_ns = Allowance::DEFAULT.deadline_ns(0, lease_ms);
    let got_ns = c.local_deadline().saturating_duration_since(sent).as_nanos();
    if c.sent_at() != sent || c.local_deadline() < sent || got_ns != want_ns {
        let got = format!(
            "sent {}ms after the {after} was sent, deadline {got_ns} ns after it",
            c.sent_at().saturating_duration_since(sent).as_millis()
        );
        let want =
            format!("sent when the {after} was sent, deadline {want_ns} ns after it (lease {lease_ms} ms − drift)");
        actor.configured("Claim", &[("local_deadline", got, want)]);
    }
}

/// A claim is trusted until its local deadline and not from then on: read
/// now, and again at the deadline (or later, if the worker was paused)
/// beside the workload, which must not wait for it. Recorded (as a
/// `configuration` read-back) only when it says otherwise.
fn check_trust(actor: &Actor, c: &redis_primitives::Claim) {
    let report = |actor: &Actor, c: &redis_primitives::Claim, want: bool| {
        if c.is_trusted() != want {
            let at = format!("{}ms, local deadline {}ms", actor.now(), actor.millis_of(c.local_deadline()));
            actor.configured("Claim", &[("is_trusted", c.is_trusted().to_string(), format!("{want} at {at}"))]);
        }
    };
    report(actor, c, tokio::time::Instant::now() < c.local_deadline());
    let (a, c) = (actor.clone(), c.clone());
    drop(actor.spawn(async move {
        tokio::time::sleep_until(c.local_deadline()).await;
        report(&a, &c, false);
    }));
}

/// One recorded completion.
async fn complete(actor: &Actor, q: &Queue, held: &Held) {
    let call = JobCall { id: Some(held.id().to_string()), attempt: held.attempt(), ..JobCall::default() };
    let op = actor.call(JOB_COMPLETE, record(COMPLETE, call.clone()));
    let r = match (q, held) {
        (Queue::Fenced(q), Held::Fenced(c)) => q.complete(c).await.map(|c| match c {
            Completion::Accepted => (true, None),
            Completion::Rejected { current_attempt, state } => {
                (false, Some(format!("attempt {} {}", current_attempt.map_or(0, |a| a.get()), state_name(state))))
            }
        }),
        (Queue::Naive(q), h) => q.complete(h.id()).await.map(|()| (true, None)),
        (Queue::Fenced(_), Held::Naive(_)) => return,
    };
    match r {
        Ok((accepted, state)) => actor.ok(op, record(COMPLETE, JobCall { accepted: Some(accepted), state, ..call })),
        Err(e) => actor.errored(op, record(COMPLETE, call), &e),
    }
}

/// One recorded reap; the ids it returned.
async fn reap(actor: &Actor, q: &Queue) -> Option<Vec<String>> {
    let op = actor.call(JOB_REAP, record(REAP, JobCall::default()));
    let r = match q {
        Queue::Fenced(q) => q.reap().await,
        Queue::Naive(q) => q.reap().await,
    };
    match r {
        Ok(ids) => {
            actor.ok(op, record(REAP, JobCall { ids: ids.clone(), ..JobCall::default() }));
            Some(ids)
        }
        Err(e) => {
            actor.errored(op, record(REAP, JobCall::default()), &e);
            None
        }
    }
}

async fn extend(actor: &Actor, q: &Queue, held: &mut Held, lease: Ttl) {
    let (Queue::Fenced(q), Held::Fenced(c)) = (q, held) else { return };
    let call = JobCall {
        id: Some(c.id().to_string()),
        attempt: Some(c.attempt().get()),
        lease_ms: Some(lease.as_millis()),
        ..JobCall::default()
    };
    let op = actor.call(JOB_EXTEND, record(EXTEND, call.clone()));
    let sent = tokio::time::Instant::now();
    match q.extend(c, lease).await {
        Ok(extended) => {
            let lease_until = extended.then(|| sim_ms(c.lease_until_ms()));
            actor.ok(op, record(EXTEND, JobCall { accepted: Some(extended), lease_until, ..call }));
            if extended {
                check_deadline(actor, "extend", c, sent, lease);
                check_trust(actor, c);
            }
        }
        Err(e) => actor.errored(op, record(EXTEND, call), &e),
    }
}

async fn reaper(actor: Actor, variant: Variant, plan: JobPlan, end: Millis) -> ActorResult {
    let q = queue(&actor, variant)?;
    while actor.now() < end {
        tokio::time::sleep(Duration::from_millis(plan.reap_every_ms)).await;
        reap(&actor, &q).await;
    }
    Ok(())
}

/// Reads every job's state once the workers have stopped (the naive twin
/// has no state to read: its lost or doubled jobs show in the completions).
async fn auditor(actor: Actor, plan: JobPlan, end: Millis) -> ActorResult {
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

fn run_planned(
    variant: Variant,
    servers: &mut Servers,
    seed: u64,
    plan: &JobPlan,
    schedule: Schedule,
) -> Result<Outcome, SetupError> {
    let end = plan.end_ms(&schedule);
    let mut world = World::new(servers, WorldConfig::new(seed))?;
    for i in 0..plan.workers {
        let p = plan.clone();
        world.actor(format!("worker-{i}"), move |actor| worker(actor, variant, p, end));
    }
    // Everything but the workers shares one host: no fault aims at them
    // alone, and each host costs the simulation a tick per millisecond.
    let p = plan.clone();
    world.actor(SIDE, move |actor| {
        let mut processes: Vec<Process> = vec![
            Box::pin(producer(actor.alias(PRODUCER), variant, p.clone())),
            Box::pin(reaper(actor.alias("reaper"), variant, p.clone(), end)),
        ];
        if variant == Variant::Fenced {
            processes.push(Box::pin(auditor(actor.alias("auditor"), p.clone(), end)));
            processes.push(Box::pin(probe::probe(actor.alias("prober"))));
            for i in 0..EDGES {
                processes.push(Box::pin(edge(actor.alias(format!("edge-{i}")), i, p.lease_ms)));
            }
        }
        together(processes)
    });
    world.nemesis(schedule);
    let run = world.run()?;
    let stalls = run
        .history
        .events()
        .into_iter()
        .filter_map(|e| match &e.op {
            Op::Paused { .. } => Some((e.time, format!("at {}ms: {} {}, then resumes", e.time, e.process, e.op))),
            _ => None,
        })
        .collect();
    let mut outcome = outcome_from(&run, stalls);
    let judged = check(&outcome.history, variant == Variant::Fenced, plan.lease_ms, &run.executions[0]);
    outcome.violations.extend(judged.violations);
    for s in judged.reached {
        outcome.reach(s);
    }
    let mut h = Histograms::new();
    h.declare(DOUBLE_RUNS);
    for extra in judged.double_runs {
        h.record(DOUBLE_RUNS, extra);
    }
    outcome.histograms = h;
    Ok(outcome)
}

/// One job operation of the history, paired.
struct Call<'a> {
    verb: &'a str,
    process: &'a str,
    invoked: Millis,
    /// `(kind, time, data)` of its completion.
    done: Option<(EventKind, Millis, JobCall)>,
    args: JobCall,
    /// For an `Ok` call: when its script ran, by the server's clock
    /// ([`ran_at`]), looked up once.
    ran: Option<Millis>,
    /// How its script's first key ends ([`script_key_end`]), taken once at
    /// the invoke.
    key_end: Option<String>,
}

impl Call<'_> {
    fn ok(&self) -> Option<(Millis, &JobCall)> {
        match &self.done {
            Some((EventKind::Ok, t, d)) => Some((*t, d)),
            _ => None,
        }
    }

    /// It may have happened (ok, or outcome unknown).
    fn maybe(&self) -> bool {
        !matches!(self.done, Some((EventKind::Fail, ..)))
    }

    /// When it returned (an unanswered call: never).
    fn returned(&self) -> Millis {
        self.done.as_ref().map_or(Millis::MAX, |d| d.1)
    }
}

/// A claim that returned a job.
#[derive(Clone)]
struct Claimed<'a> {
    invoked: Millis,
    returned: Millis,
    attempt: Option<u64>,
    lease_until: Option<Millis>,
    process: &'a str,
    payload: Option<String>,
    ran: Option<Millis>,
}

/// How the first key of the script a call of `verb` runs ends (the
/// queue's documented layout, `jobq:{queue}` and a suffix; a process uses
/// one queue, whose name the history does not carry): what tells its
/// execution from another script the same process had in flight. `None`
/// for a call that runs none.
fn script_key_end(verb: &str, args: &JobCall) -> Option<String> {
    match verb {
        CLAIM => Some("}:pending".into()),
        REAP => Some("}:active".into()),
        ENQUEUE | EXTEND | COMPLETE => args.id.as_ref().map(|id| format!("}}:job:{id}")),
        _ => None,
    }
}

/// When `process`'s script call on a key ending in `end` in `[from, to]`
/// ran, by the server's clock (the last such `EVAL*`: a `NOSCRIPT` answer
/// is followed by the `EVAL` that ran), as simulated ms.
///
/// A request whose caller gave up on it (an outcome unknown) may still
/// reach the server later, inside a newer call's window: a `complete` held
/// by latency ran a few ms after the same worker's next `claim` and was
/// taken for it (job-queue seed 80921962). So only the call's own script
/// key counts, and when an earlier call of the process on that key is
/// still unaccounted for (`stale_possible`), only a window that holds one
/// execution tells: with two, which ran for this call is unknown (`None`).
fn ran_at(
    executions: &[Execution],
    process: &str,
    end: &str,
    (from, to): (Millis, Millis),
    stale_possible: bool,
) -> Option<Millis> {
    let mut runs = executions.iter().filter(|x| {
        &*x.client == process
            && x.command.starts_with("EVAL")
            && x.key.as_deref().is_some_and(|k| k.starts_with("jobq:{") && k.ends_with(end))
            && (from..=to).contains(&x.sim_ms)
    });
    let first = runs.next()?;
    match runs.next_back() {
        None => Some(sim_ms(first.server_unix_ms)),
        Some(_) if stale_possible => None,
        Some(last) => Some(sim_ms(last.server_unix_ms)),
    }
}

/// What [`check`] found.
pub struct Judged {
    /// The violations.
    pub violations: Vec<Violation>,
    /// Situations the history shows.
    pub reached: Vec<&'static str>,
    /// Extra runs per job (claims − 1).
    pub double_runs: Vec<u64>,
}

/// Judges a job-queue history; `fenced` = the correct queue (attempts,
/// leases, payloads, the probe and the auditor's states are there to
/// judge), `lease_ms` its claims' lease, `executions` the node's execution
/// log (when each script really ran, by the server's clock).
pub fn check(events: &[Event], fenced: bool, lease_ms: u64, executions: &[Execution]) -> Judged {
    let mut calls: Vec<Call<'_>> = Vec::new();
    let mut open: BTreeMap<u64, usize> = BTreeMap::new();
    let mut out = Vec::new();
    for e in events {
        let Op::Custom { verb, .. } = &e.op else { continue };
        if let Some(p) = e.op.custom_data::<probe::Probed>(probe::PROBE) {
            // A fault may cut a probe short: an unknown answer, or keys that
            // could not be read back, judge nothing.
            if p.got == probe::UNKNOWN || (p.before.is_some() && p.after.is_none()) {
                continue;
            }
            if p.got != p.expected {
                out.push(Violation::new(
                    JOB_QUEUE,
                    Some(e.time),
                    format!("probe `{}`: expected {}, got {}", p.case, p.expected, p.got),
                ));
            } else if p.before != p.after {
                out.push(Violation::new(
                    JOB_QUEUE,
                    Some(e.time),
                    format!(
                        "probe `{}`: answered {} but changed the keys: {:?} became {:?}",
                        p.case, p.got, p.before, p.after
                    ),
                ));
            }
            continue;
        }
        let Some(data) = e.op.custom_data::<JobCall>(verb) else { continue };
        if e.kind == EventKind::Invoke {
            open.insert(e.op_id.0, calls.len());
            let key_end = script_key_end(verb, &data);
            calls.push(Call { verb, process: &e.process, invoked: e.time, done: None, args: data, ran: None, key_end });
        } else if let Some(i) = open.remove(&e.op_id.0) {
            if e.kind == EventKind::Ok {
                let c = &calls[i];
                let earlier_unknown = |o: &Call<'_>| {
                    o.process == c.process
                        && !matches!(o.done, Some((EventKind::Ok | EventKind::Fail, ..)))
                        && o.key_end == c.key_end
                };
                let stale_possible = calls[..i].iter().any(earlier_unknown);
                let ran = c
                    .key_end
                    .as_deref()
                    .and_then(|k| ran_at(executions, c.process, k, (c.invoked, e.time), stale_possible));
                calls[i].ran = ran;
            }
            calls[i].done = Some((e.kind, e.time, data));
        }
    }
    // A claim whose outcome is unknown may have taken any job.
    let unknown_claims: Vec<Millis> = calls
        .iter()
        .filter(|c| c.verb == CLAIM && c.done.as_ref().is_none_or(|d| d.0 == EventKind::Info))
        .map(|c| c.invoked)
        .collect();
    let mut reached = Vec::new();
    let wrong = |at: Millis, why: String| Violation::new(JOB_QUEUE, Some(at), why);
    let jobs: Vec<String> = calls
        .iter()
        .filter(|c| c.verb == ENQUEUE && c.ok().is_some_and(|(_, d)| d.accepted == Some(true)))
        .filter_map(|c| c.args.id.clone())
        .collect();
    let of = |verb: &str, id: &str| -> Vec<&Call<'_>> {
        calls
            .iter()
            .filter(|c| {
                c.verb == verb && c.args.id.as_deref().or(c.ok().and_then(|(_, d)| d.id.as_deref())) == Some(id)
            })
            .collect()
    };
    let mut double_runs = Vec::new();
    for id in &jobs {
        let claims: Vec<Claimed<'_>> = calls
            .iter()
            .filter(|c| c.verb == CLAIM)
            .filter_map(|c| {
                c.ok().filter(|(_, d)| d.id.as_deref() == Some(id.as_str())).map(|(t, d)| Claimed {
                    invoked: c.invoked,
                    returned: t,
                    attempt: d.attempt,
                    lease_until: d.lease_until,
                    process: c.process,
                    payload: d.payload.clone(),
                    ran: c.ran,
                })
            })
            .collect();
        double_runs.push(claims.len().saturating_sub(1) as u64);
        if claims.len() > 1 {
            reached.push("job-run-twice");
        }
        let completes = of(COMPLETE, id);
        let accepted: Vec<&&Call<'_>> =
            completes.iter().filter(|c| c.ok().is_some_and(|(_, d)| d.accepted == Some(true))).collect();
        if accepted.len() > 1 {
            out.push(wrong(
                accepted[1].returned(),
                format!(
                    "{id}: {} completions accepted ({}): a job is completed at most once",
                    accepted.len(),
                    accepted
                        .iter()
                        .map(|c| format!("{} at {}ms", c.process, c.returned()))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        }
        if !fenced {
            continue;
        }
        // Each claim adds one to the attempt: the k-th claim of a job has
        // attempt k, counted with the claims that may have run first.
        for k in &claims {
            let before = claims.iter().filter(|o| o.returned < k.invoked).count() as u64;
            let maybe = claims.iter().filter(|o| !std::ptr::eq(*o, k) && o.invoked < k.returned).count() as u64
                + unknown_claims.iter().filter(|&&t| t < k.returned).count() as u64;
            if let Some(a) = k.attempt.filter(|&a| a < before + 1 || a > maybe + 1) {
                out.push(wrong(k.returned, format!("{id}: {} claimed attempt {a} at {}ms; {before} claim(s) had returned before it began and at most {maybe} may have run before it, so it must be between {} and {}", k.process, k.returned, before + 1, maybe + 1)));
            }
            if k.payload.as_deref() != Some(payload_of(id).as_str()) {
                out.push(wrong(
                    k.returned,
                    format!(
                        "{id}: {} claimed it with payload {:?}, enqueued as {:?}",
                        k.process,
                        k.payload,
                        payload_of(id)
                    ),
                ));
            }
            // The lease runs from when the script ran, by the server's clock.
            if let (Some(until), Some(ran)) = (k.lease_until, k.ran) {
                if until != ran + lease_ms {
                    out.push(wrong(k.returned, format!("{id}: {}'s claim ran at {ran}ms (server clock) with a {lease_ms}ms lease, but its lease ends at {until}ms", k.process)));
                }
            }
        }
        // Attempts increase in real-time order.
        for a in &claims {
            for b in &claims {
                if a.returned < b.invoked && a.attempt >= b.attempt {
                    out.push(wrong(b.returned, format!("{id}: claimed with attempt {:?} at {}ms after a claim with attempt {:?} had returned at {}ms", b.attempt, b.returned, a.attempt, a.returned)));
                }
            }
        }
        let reaps: Vec<&Call<'_>> = calls
            .iter()
            .filter(|c| c.verb == REAP && (c.ok().is_none_or(|(_, d)| d.ids.iter().any(|x| x == id))) && c.maybe())
            .collect();
        // Something that may have ended `attempt`'s claim before `by`.
        let superseded = |attempt: Option<u64>, by: Millis| {
            claims.iter().any(|c| c.invoked < by && c.attempt > attempt)
                || unknown_claims.iter().any(|&t| t < by)
                || reaps.iter().any(|r| r.invoked < by)
                || completes.iter().any(|c| c.invoked < by && c.maybe() && c.args.attempt != attempt)
        };
        for c in &completes {
            let Some((t, d)) = c.ok() else { continue };
            match d.accepted {
                Some(true) => {
                    if let Some(newer) = claims.iter().find(|k| k.returned < c.invoked && k.attempt > c.args.attempt) {
                        out.push(wrong(t, format!("{id}: {} completed attempt {:?} at {t}ms, accepted, though attempt {:?} was claimed by {} at {}ms", c.process, c.args.attempt, newer.attempt, newer.process, newer.returned)));
                    }
                }
                Some(false) => {
                    reached.push("stale-completion-refused");
                    let done_before = completes.iter().any(|o| !std::ptr::eq(*o, *c) && o.invoked < t && o.maybe());
                    if !superseded(c.args.attempt, t) && !done_before {
                        out.push(wrong(t, format!("{id}: {} had its completion of attempt {:?} refused at {t}ms ({:?}), with nothing in the history that superseded its claim", c.process, c.args.attempt, d.state)));
                    }
                }
                None => {}
            }
        }
        for x in of(EXTEND, id) {
            let Some((t, d)) = x.ok() else { continue };
            match d.accepted {
                Some(true) => {
                    reached.push("claim-extended");
                    if let (Some(until), Some(ran)) = (d.lease_until, x.ran) {
                        let lease_ms = x.args.lease_ms.unwrap_or(lease_ms);
                        if until != ran + lease_ms {
                            out.push(wrong(t, format!("{id}: {}'s extension ran at {ran}ms (server clock) for {lease_ms}ms, but the lease ends at {until}ms", x.process)));
                        }
                    }
                    if let Some(newer) = claims.iter().find(|k| k.returned < x.invoked && k.attempt > x.args.attempt) {
                        out.push(wrong(
                            t,
                            format!(
                                "{id}: {} extended attempt {:?} at {t}ms though attempt {:?} had been claimed at {}ms",
                                x.process, x.args.attempt, newer.attempt, newer.returned
                            ),
                        ));
                    }
                    if let Some(done) = accepted.iter().find(|c| c.returned() < x.invoked) {
                        out.push(wrong(
                            t,
                            format!("{id}: {} extended a job completed at {}ms", x.process, done.returned()),
                        ));
                    }
                }
                Some(false) => {
                    reached.push("stale-extend-refused");
                    if !superseded(x.args.attempt, t) {
                        out.push(wrong(t, format!("{id}: {} had its extension of attempt {:?} refused at {t}ms with nothing in the history that superseded its claim", x.process, x.args.attempt)));
                    }
                }
                None => {}
            }
        }
        // A reap runs on the server between its invoke and its return; if it
        // returned before the lease it took had lapsed, it took a live one.
        for r in reaps.iter().filter(|r| r.ok().is_some()) {
            reached.push("lapsed-lease-reaped");
            let current = claims.iter().filter(|k| k.returned < r.invoked).max_by_key(|k| k.attempt);
            let Some(&Claimed { attempt, lease_until: Some(until), process: holder, .. }) =
                current.as_ref().map(|c| *c)
            else {
                continue;
            };
            // Only extensions confirmed before the reap began convict; one
            // in flight may or may not have run first. The last one to run
            // set the lease's end (an extension may shorten it); of two in
            // one millisecond, the earlier end, so as not to convict falsely.
            let extended = of(EXTEND, id)
                .into_iter()
                .filter(|x| x.args.attempt == attempt)
                .filter_map(|x| {
                    let until = x.ok().filter(|(t, _)| *t < r.invoked).and_then(|(_, d)| d.lease_until)?;
                    Some((x.ran.unwrap_or(0), core::cmp::Reverse(until)))
                })
                .max()
                .map(|(_, core::cmp::Reverse(until))| until);
            let until = extended.unwrap_or(until);
            let completed_meanwhile =
                completes.iter().any(|c| c.args.attempt == attempt && c.invoked < r.returned() && c.maybe());
            // A newer claim that ran no later than this reap may hold the
            // lease it took; one that ran after it claimed what it returned.
            let ran = r.ran;
            let newer_before = claims.iter().any(|k| {
                k.invoked < r.returned() && k.attempt > attempt && k.ran.is_none_or(|kr| ran.is_none_or(|rr| kr <= rr))
            });
            if ran.unwrap_or(r.returned()) < until && !completed_meanwhile && !newer_before {
                out.push(wrong(
                    r.returned(),
                    format!(
                        "{id}: reaped by {}ms while {holder}'s lease of attempt {attempt:?} ran until {until}ms",
                        r.returned()
                    ),
                ));
            }
        }
        // A reap takes every lease that had lapsed when it ran (by the
        // server's clock), unless the job was done, extended, claimed
        // again or reaped by then, for all the history knows.
        // The producer's jobs are reaped by the reaper; an edge actor's, on
        // its own queue, by that actor.
        let reaper = match calls.iter().find(|c| c.verb == ENQUEUE && c.args.id.as_deref() == Some(id.as_str())) {
            Some(c) if c.process != PRODUCER => c.process,
            _ => "reaper",
        };
        for r in calls.iter().filter(|c| c.verb == REAP && c.process == reaper) {
            let Some((t, d)) = r.ok() else { continue };
            let Some(ran) = r.ran else { continue };
            if d.ids.iter().any(|x| x == id) {
                continue;
            }
            let Some(current) = claims.iter().filter(|k| k.ran.is_some_and(|kr| kr < ran)).max_by_key(|k| k.attempt)
            else {
                continue;
            };
            let Some(until) = current.lease_until else { continue };
            let moved = |c: &&Call<'_>| c.invoked < t && c.maybe();
            // Confirmed extensions move the lease's end; one whose outcome
            // is unknown may have moved it anywhere.
            let extensions: Vec<&Call<'_>> =
                of(EXTEND, id).into_iter().filter(|x| x.args.attempt == current.attempt && moved(x)).collect();
            let extended = extensions.iter().any(|x| x.ok().is_none());
            // The last confirmed one to run set the end (of two in one
            // millisecond, the later end: a lapse must be certain).
            let until = extensions
                .iter()
                .filter_map(|x| x.ok().and_then(|(_, d)| d.lease_until).map(|u| (x.ran.unwrap_or(0), u)))
                .max()
                .map_or(until, |(_, u)| u);
            let done =
                completes.iter().filter(|c| moved(c)).any(|c| c.ok().is_none_or(|(_, d)| d.accepted != Some(false)));
            let taken = claims.iter().any(|k| k.attempt > current.attempt && k.invoked < t)
                || unknown_claims.iter().any(|&u| u < t)
                || calls.iter().any(|o| {
                    o.verb == REAP
                        && !std::ptr::eq(o, r)
                        && o.invoked < t
                        && o.ok().is_none_or(|(_, d)| d.ids.iter().any(|x| x == id))
                });
            if until <= ran && !extended && !done && !taken {
                out.push(Violation::new(
                    LIVENESS,
                    Some(t),
                    format!("{id}: a reap ran at {ran}ms (server clock) and left {}'s lease of attempt {:?}, lapsed at {until}ms", current.process, current.attempt),
                ));
            }
        }
        // Liveness: after the quiet tail every job is done.
        let state = of(STATE, id).into_iter().find_map(|s| s.ok().and_then(|(t, d)| d.state.clone().map(|s| (t, s))));
        if let Some((t, s)) = state {
            if s != "done" {
                out.push(Violation::new(
                    LIVENESS,
                    Some(t),
                    format!("{id} was still {s} at {t}ms, after the faults healed and a quiet tail passed"),
                ));
            } else if accepted.is_empty()
                && !completes.iter().any(|c| matches!(c.done, Some((EventKind::Info, ..)) | None))
            {
                out.push(wrong(t, format!("{id} is done at {t}ms, but no completion of it was accepted")));
            }
        }
    }
    if fenced {
        out.extend(claimed_in_order(&calls, &unknown_claims));
    }
    out.truncate(10);
    reached.sort_unstable();
    reached.dedup();
    Judged { violations: out, reached, double_runs }
}

/// FIFO: a claim takes the pending job enqueued first, and a reaped job
/// goes back to its original place. The producer enqueues one job at a
/// time, so of two of its jobs added in turn the first has the lower
/// sequence number. A claim that ran (server clock) at `r` and returned
/// job J is wrong when an earlier job K was definitely pending at `r`: K
/// entered the pending set (its enqueue, or a reap that returned it) before
/// `r`, and no claim that returned K can have run from then to `r`. Any
/// claim of unknown outcome invoked by `r` may have taken K: then nothing
/// is judged.
fn claimed_in_order(calls: &[Call<'_>], unknown_claims: &[Millis]) -> Vec<Violation> {
    // When a call ran: from the execution log, else no later than its return.
    let ran = |c: &Call<'_>| c.ran.unwrap_or(c.returned());
    let enqueued: Vec<&str> = calls
        .iter()
        .filter(|c| c.verb == ENQUEUE && c.process == PRODUCER)
        .filter(|c| c.ok().is_some_and(|(_, d)| d.accepted == Some(true)))
        .filter_map(|c| c.args.id.as_deref())
        .collect();
    let place = |id: &str| enqueued.iter().position(|j| *j == id);
    // Claims that returned a job: (job, earliest and latest run).
    let claimed: Vec<(&str, Millis, Millis, &Call<'_>)> = calls
        .iter()
        .filter(|c| c.verb == CLAIM)
        .filter_map(|c| {
            let id = c.ok()?.1.id.as_deref()?;
            Some((id, c.ran.unwrap_or(c.invoked), ran(c), c))
        })
        .collect();
    let mut out = Vec::new();
    for &(job, _, _, c) in &claimed {
        let (Some(j), Some(r)) = (place(job), c.ran) else { continue };
        if unknown_claims.iter().any(|&u| u <= r) {
            continue;
        }
        for earlier in &enqueued[..j] {
            // The last time it entered the pending set before `r`.
            let entered = calls
                .iter()
                .filter(|e| match e.ok() {
                    Some((_, d)) if e.verb == ENQUEUE => {
                        e.args.id.as_deref() == Some(earlier) && d.accepted == Some(true)
                    }
                    Some((_, d)) if e.verb == REAP => d.ids.iter().any(|x| x == earlier),
                    _ => false,
                })
                .map(ran)
                .filter(|&t| t < r)
                .max();
            let Some(entered) = entered else { continue };
            let left = claimed.iter().any(|&(k, lo, hi, _)| k == *earlier && lo <= r && hi >= entered);
            if !left {
                out.push(Violation::new(
                    JOB_QUEUE,
                    Some(c.returned()),
                    format!(
                        "{}'s claim ran at {r}ms (server clock) and took {job}, but {earlier}, enqueued before it, had been pending since {entered}ms and nobody claimed it meanwhile: claims take the oldest job first, and a reaped job keeps its place",
                        c.process
                    ),
                ));
                break;
            }
        }
    }
    out
}

impl Family for Variant {
    type Plan = JobPlan;
    type Space = JobSpace;
    const NAME: &'static str = "job-queue";

    fn nodes(&self) -> u32 {
        1
    }

    fn seeds(&self) -> (JobSpace, FaultSpace) {
        (JobSpace::seeds(), FaultSpace::client_side(template().length_ms))
    }

    fn plans(space: &JobSpace) -> BoxedStrategy<(JobPlan, Vec<Fault>)> {
        space.plans()
    }

    fn max_actors(space: &JobSpace) -> u32 {
        space.workers.1
    }

    fn run(&self, servers: &mut Servers, seed: u64, plan: &JobPlan, schedule: Schedule) -> Result<Outcome, SetupError> {
        run_planned(*self, servers, seed, plan, schedule)
    }

    fn actors(plan: &JobPlan) -> u32 {
        plan.workers
    }

    fn injected_faults(plan: &JobPlan) -> usize {
        usize::from(plan.stall.is_some())
    }

    fn validate(plan: &JobPlan) -> Result<(), String> {
        if plan.workers == 0 || plan.lease_ms == 0 || plan.reap_every_ms == 0 || plan.work_ms.0 > plan.work_ms.1 {
            return Err("workers, lease_ms and reap_every_ms must be positive and work_ms a range".into());
        }
        match plan.stall {
            Some(s) if s.worker >= plan.workers || s.claim == 0 => Err(format!("stall {s:?}: no such worker or claim")),
            _ => Ok(()),
        }
    }

    fn normalize(plan: &mut JobPlan, actors: u32) {
        if let Some(s) = &mut plan.stall {
            s.worker %= actors.max(1);
        }
    }

    fn smaller(plan: &JobPlan) -> Vec<JobPlan> {
        let mut out = Vec::new();
        if plan.stall.is_some() {
            out.push(JobPlan { stall: None, ..plan.clone() });
        }
        if plan.jobs > 1 {
            out.push(JobPlan { jobs: plan.jobs / 2, ..plan.clone() });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::History;

    fn call(h: &History, at: Millis, done: Millis, who: &str, verb: &str, args: JobCall, result: JobCall) {
        let id = h.invoke_at(at, who, record(verb, args));
        h.complete_at(done, id, who, EventKind::Ok, record(verb, result));
    }

    /// `p` enqueues `j` at 0 ms; `a` claims it at 2 ms (attempt 1, lease
    /// until 303 ms).
    fn enqueued_and_claimed(h: &History) {
        let enqueue = JobCall { id: Some("j".into()), ..JobCall::default() };
        call(h, 0, 1, "p", ENQUEUE, enqueue.clone(), JobCall { accepted: Some(true), ..enqueue });
        let claimed = JobCall { lease_until: Some(303), payload: Some(payload_of("j")), ..job("j", 1) };
        call(h, 2, 3, "a", CLAIM, JobCall::default(), claimed);
    }

    fn job(id: &str, attempt: u64) -> JobCall {
        JobCall { id: Some(id.into()), attempt: Some(attempt), ..JobCall::default() }
    }

    #[test]
    fn a_stale_completion_must_be_refused_and_a_refusal_justified() {
        let history = |second_accepted: bool, reaped: bool| {
            let h = History::new();
            enqueued_and_claimed(&h);
            if reaped {
                call(
                    &h,
                    400,
                    401,
                    "r",
                    REAP,
                    JobCall::default(),
                    JobCall { ids: vec!["j".into()], ..JobCall::default() },
                );
                call(
                    &h,
                    402,
                    403,
                    "b",
                    CLAIM,
                    JobCall::default(),
                    JobCall { lease_until: Some(703), payload: Some(payload_of("j")), ..job("j", 2) },
                );
                call(&h, 410, 411, "b", COMPLETE, job("j", 2), JobCall { accepted: Some(true), ..job("j", 2) });
            }
            call(&h, 900, 901, "a", COMPLETE, job("j", 1), JobCall { accepted: Some(second_accepted), ..job("j", 1) });
            check(&h.events(), true, 300, &[])
        };
        let ok = history(false, true);
        assert!(ok.violations.is_empty(), "{:?}", ok.violations);
        assert!(ok.reached.contains(&"stale-completion-refused") && ok.reached.contains(&"job-run-twice"));
        assert_eq!(ok.double_runs, vec![1]);
        let twice = history(true, true);
        assert!(twice.violations.iter().any(|v| v.detail.contains("2 completions accepted")), "{:?}", twice.violations);
        let unjustified = history(false, false);
        assert!(
            unjustified.violations.iter().any(|v| v.detail.contains("nothing in the history")),
            "{:?}",
            unjustified.violations
        );
    }

    /// One `EVALSHA` of `who` on `key`, run at `at` (simulated ms, the
    /// server's clock unstepped).
    fn ran(who: &str, key: &str, at: Millis) -> Execution {
        Execution {
            client: who.into(),
            command: "EVALSHA".into(),
            key: Some(key.into()),
            server_unix_ms: DEFAULT_EPOCH_UNIX_MS + at,
            sim_ms: at,
            taken_ms: at,
            held_ms: 0,
        }
    }

    #[test]
    fn a_claims_lease_is_timed_from_its_own_script_not_a_stale_request() {
        let pending = format!("jobq:{{{QUEUE}}}:pending");
        let judge = |executions: &[Execution], earlier_unknown: bool| {
            let h = History::new();
            let enqueue = JobCall { id: Some("j".into()), ..JobCall::default() };
            call(&h, 0, 1, "p", ENQUEUE, enqueue.clone(), JobCall { accepted: Some(true), ..enqueue });
            if earlier_unknown {
                let id = h.invoke_at(1, "a", record(CLAIM, JobCall::default()));
                h.complete_at(2, id, "a", EventKind::Info, record(CLAIM, JobCall::default()));
            }
            // The claim ran at 3 ms, so its lease ends at 303 ms.
            let claimed = JobCall { lease_until: Some(303), payload: Some(payload_of("j")), ..job("j", 1) };
            call(&h, 2, 8, "a", CLAIM, JobCall::default(), claimed);
            check(&h.events(), true, 300, executions).violations
        };
        let late_complete = ran("a", &format!("jobq:{{{QUEUE}}}:job:k"), 6);
        assert!(judge(&[ran("a", &pending, 3), late_complete.clone()], false).is_empty());
        let wrong = judge(&[ran("a", &pending, 5)], false);
        assert!(wrong.iter().any(|v| v.detail.contains("ran at 5ms")), "{wrong:?}");
        // An earlier claim of unknown outcome ran inside this one's window
        // too: which of the two was this claim's is unknown, so no verdict.
        assert!(judge(&[ran("a", &pending, 3), ran("a", &pending, 6)], true).is_empty());
        // With one execution in the window, it is this claim's.
        let alone = judge(&[ran("a", &pending, 5)], true);
        assert!(alone.iter().any(|v| v.detail.contains("ran at 5ms")), "{alone:?}");
    }

    #[test]
    fn a_reap_of_a_live_lease_is_a_violation() {
        let h = History::new();
        enqueued_and_claimed(&h);
        call(&h, 100, 101, "r", REAP, JobCall::default(), JobCall { ids: vec!["j".into()], ..JobCall::default() });
        let v = check(&h.events(), true, 300, &[]).violations;
        assert!(v.iter().any(|v| v.detail.contains("reaped by 101ms")), "{v:?}");
    }
}
