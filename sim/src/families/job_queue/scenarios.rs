//! The job-queue family's scenarios: its rows of the registry, correct
//! variants first where they pair with a broken one. `rp-sim scenarios`
//! lists them in this order; `super::ENTRY` hands them to the registry.

use crate::scenario::{Expect, Scenario};

/// `job-queue`.
pub(crate) const JOB_QUEUE: Scenario = Scenario {
    name: "job-queue",
    description: "JobQueue (attempt-fenced job-claim lease): a worker paused past its lease loses the job to another; its late completion is refused, every job completes once",
    expect: Expect::Clean,
    situations: super::SITUATIONS,
    operations: super::OPERATIONS,
    paths: super::PATHS,
    scripts: super::SCRIPTS,
    invariants: &[],
    runs: &super::JobQueueVariant::Fenced,
    pinned_seeds: &[],
};

/// `job-queue-naive`.
pub(crate) const JOB_QUEUE_NAIVE: Scenario = Scenario {
    name: "job-queue-naive",
    description: "NaiveJobQueue (RPOPLPUSH, no lease, no fence): the reaper cannot tell a slow worker from a dead one, so a job is completed twice",
    expect: Expect::Violates(&super::JOB_QUEUE),
    situations: &[],
    operations: &[],
    paths: &[],
    scripts: &[],
    invariants: &[],
    runs: &super::JobQueueVariant::Naive,
    pinned_seeds: &[0, 1, 2],
};

/// Every scenario of the family, in listing order.
pub(crate) const SCENARIOS: &[Scenario] = &[JOB_QUEUE, JOB_QUEUE_NAIVE];
