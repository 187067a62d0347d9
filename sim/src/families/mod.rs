//! The primitive families, one folder each: workload, plan space, checks, situations and variants.

pub mod job_queue;
pub mod rate_limit;
pub mod redlock;
