//! The job-queue family: `JobQueue`'s job-claim lease against its broken
//! twin, under pauses, partitions, held replies and server pauses.
//!
//! Workers claim jobs, work on them, sometimes extend, and complete them,
//! and now and then read a job's state (theirs or one another worker may be
//! writing); a reaper returns jobs whose lease lapsed (by the server's
//! clock) to the queue; an auditor reads every job's state once the faults
//! have healed and a quiet tail has passed. A seeded worker freezes while it holds one
//! claim (a GC pause longer than the lease): its job is reaped and claimed
//! again, so the same job is worked twice and the stale worker's late
//! completion (and extension) must be refused by the attempt fence.
//!
//! What is judged ([`JOB_QUEUE`]): at most one completion is accepted per
//! job; an accepted completion (or extension) carries the job's latest
//! attempt; attempts increase; a refusal is justified by the history; a
//! reap never takes a lease that had not lapsed; claims come out in FIFO
//! order, a reaped job in its original place; a state read returns a state
//! the job could have had while it ran; and (`liveness`) every
//! enqueued job is done by the end. Work done twice is measured, not
//! judged: `job-double-run-count` counts the extra runs per job (the price of a
//! lease: at-least-once work, exactly-once completion).
//!
//! This family was added through the harness's public extension points
//! only: its plan, run and checker live here, its operations are its own
//! type ([`JobOp`], an [`Operation`](crate::history::Operation)), and its
//! invariant and histogram are declared in its [`REPORT_PART`].
//! Restarts are left out: a redis-server without persistence loses the
//! whole queue on a restart (the same non-guarantee `counter-loss` shows
//! for the fence counter).

mod actors;
pub(crate) mod api;
mod calls;
mod checks;
mod family;
mod plan;
mod probe;
mod record;
pub(crate) mod scenarios;
mod situations;
pub(crate) mod targets;

pub(crate) use plan::JobSpace;
pub(crate) use record::{JobOp, JobVerb};
pub(crate) use situations::SITUATIONS;

use crate::checker::Invariant;
use crate::families::job_queue::api::{JOB_CLAIM, JOB_COMPLETE, JOB_ENQUEUE, JOB_EXTEND, JOB_REAP, JOB_STATE};
use crate::history::Api;
use crate::path::Path;
use crate::stats::{Metric, Unit};

/// The family's invariant.
pub(crate) const JOB_QUEUE: Invariant = Invariant::new("job-queue");

/// Its one-line meaning, for the registry row.
pub(crate) const INVARIANTS: &[(Invariant, &str)] = &[(
    JOB_QUEUE,
    "per job: at most one accepted completion, carrying its latest attempt; attempts increase; refusals and reaps are justified",
)];

/// The public operations its workload calls.
pub(crate) const OPERATIONS: &[Api] = &[JOB_ENQUEUE, JOB_CLAIM, JOB_EXTEND, JOB_COMPLETE, JOB_REAP, JOB_STATE];

/// The paths of those operations its pinned seeds take: every one answered,
/// and every one but `enqueue` failing under the faults. (Its refusals,
/// a completion or an extension of a stale attempt, are answers the
/// history records as such: the situations `stale-completion-refused` and
/// `stale-extend-refused` pin them.)
pub(crate) const PATHS: &[(Api, Path)] = &[
    (JOB_ENQUEUE, Path::Ok),
    (JOB_CLAIM, Path::Ok),
    (JOB_CLAIM, Path::Failed),
    (JOB_EXTEND, Path::Ok),
    (JOB_EXTEND, Path::Failed),
    (JOB_COMPLETE, Path::Ok),
    (JOB_COMPLETE, Path::Failed),
    (JOB_REAP, Path::Ok),
    (JOB_REAP, Path::Failed),
    (JOB_STATE, Path::Ok),
    (JOB_STATE, Path::Failed),
];

/// The library scripts its histories depend on.
pub(crate) const SCRIPTS: &[&str] = &["job_enqueue", "job_claim", "job_complete", "job_extend", "job_reap"];

const QUEUE: &str = "jobs";
/// The actor that enqueues the workers' jobs.
const PRODUCER: &str = "producer";
/// The actor that reads every job's state once the workers have stopped.
const AUDITOR: &str = "auditor";
/// The host the producer, the reaper, the auditor, the probe and the edge
/// actors share ([`Actor::alias`](crate::world::Actor::alias)).
const SIDE: &str = "queue-side";
/// Extra runs per job (its claims − 1): work done twice, measured.
const DOUBLE_RUNS: Metric = Metric::new("job-double-run-count", Unit::Count);
const ENQUEUE: JobVerb = JobVerb::Enqueue;
const CLAIM: JobVerb = JobVerb::Claim;
const EXTEND: JobVerb = JobVerb::Extend;
const COMPLETE: JobVerb = JobVerb::Complete;
const REAP: JobVerb = JobVerb::Reap;
const STATE: JobVerb = JobVerb::State;

/// Which queue a scenario runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JobQueueVariant {
    /// `job-queue`: [`JobQueue`](redis_primitives::JobQueue), fenced by the job's attempt counter.
    Fenced,
    /// `job-queue-naive`: [`NaiveJobQueue`](redis_primitives_naive::NaiveJobQueue), no lease and no fence.
    Naive,
}

/// What the job queue adds to `rp-sim report`: its invariant and what its
/// histogram measures.
pub(crate) const REPORT_PART: crate::family::ReportPart = crate::family::ReportPart {
    invariants: INVARIANTS,
    histograms: &[(DOUBLE_RUNS, "extra runs per job (its claims − 1): work a worker did again after another's claim")],
    section: None,
};

/// The family's entry in the registry (`crate::families::REGISTRY`).
pub(crate) const ENTRY: crate::entry::FamilyEntry = crate::entry::FamilyEntry {
    scenarios: scenarios::SCENARIOS,
    report: REPORT_PART,
    targets: targets::TARGETS,
    properties: &[],
};
