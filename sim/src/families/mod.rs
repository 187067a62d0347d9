//! The primitive families, one folder each: everything a family is (its
//! variants and `impl Family`, plan and space, actors, probes, checks and
//! situations). Adding a family is a folder here, a line below, and its
//! rows in the registry (`crate::scenarios`). See ADR 0009.

pub mod election;
pub mod job_queue;
pub mod lock;
pub mod rate_limit;
pub mod redlock;
