//! What the property search must find in the job-queue family (the queue
//! without a lease or fence), with the space searched.

use super::scenarios::JOB_QUEUE_NAIVE;
use super::{JobQueueVariant, JobSpace, JOB_QUEUE};
use crate::fault_space::{FaultSpace, CLIENT_SIDE};
use crate::space::Space;
use crate::target::{SearchTarget, TargetKind};

/// The job queue's search workloads, up to three client-side faults or
/// server pauses.
fn naive() -> Space {
    Space::of::<JobQueueVariant>(&JOB_QUEUE_NAIVE, FaultSpace::new(CLIENT_SIDE, 3), &JobSpace::search())
}

/// What the search must find.
pub(crate) const TARGETS: &[SearchTarget] = &[SearchTarget {
    name: "job-queue-naive",
    kind: TargetKind::BrokenVariant,
    invariant: &JOB_QUEUE,
    what: "claim without a lease or fence: a slow worker's job is handed out again and completed twice",
    space: naive,
    case_bound: 10,
    size_bound: 2,
}];
