//! The public library operations the job queue workload calls, one
//! constant each (see [`crate::api::Api`]): what its actors record a call
//! by, its registry rows declare and its checkers find a call by.

use crate::api::Api;

/// `JobQueue::enqueue`.
pub(crate) const JOB_ENQUEUE: Api = Api::new("JobQueue::enqueue");
/// `JobQueue::claim`.
pub(crate) const JOB_CLAIM: Api = Api::new("JobQueue::claim");
/// `JobQueue::extend`.
pub(crate) const JOB_EXTEND: Api = Api::new("JobQueue::extend");
/// `JobQueue::complete`.
pub(crate) const JOB_COMPLETE: Api = Api::new("JobQueue::complete");
/// `JobQueue::reap`.
pub(crate) const JOB_REAP: Api = Api::new("JobQueue::reap");
/// `JobQueue::state`.
pub(crate) const JOB_STATE: Api = Api::new("JobQueue::state");
