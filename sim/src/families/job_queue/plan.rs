//! A job-queue run spelled out (workers, jobs, lease, work, reaps, the
//! stall) and the space plans are drawn from, for the seeds and the search.

use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;
use serde::{Deserialize, Serialize};

use crate::fault_space::WorkloadFault;
use crate::history::Millis;
use crate::nemesis::{Fault, Schedule};

/// One run of the family, spelled out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct JobPlan {
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
pub(crate) struct Stall {
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
    pub(super) fn end_ms(&self, schedule: &Schedule) -> Millis {
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

/// The plan every seed starts from.
pub(super) fn template() -> JobPlan {
    JobPlan { workers: 3, jobs: 8, lease_ms: 300, work_ms: (20, 250), reap_every_ms: 100, length_ms: 2500, stall: None }
}

/// What job-queue plans may be drawn from: the template's settings with
/// these ranges (inclusive; each shrinks towards its first bound).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JobSpace {
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
    pub(crate) fn seeds() -> JobSpace {
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
    pub(crate) fn search() -> JobSpace {
        JobSpace {
            workers: (1, 3),
            jobs: (1, 8),
            lease_ms: (150, 500),
            stall: WorkloadFault::Maybe { ms: (100, 1500) },
        }
    }

    /// The strategy (the family's one generator).
    pub(crate) fn plans(&self) -> BoxedStrategy<(JobPlan, Vec<Fault>)> {
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
