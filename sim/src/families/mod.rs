//! The primitive families, one folder each, and the registry that lists
//! them.
//!
//! A folder holds everything a family is: its variants and `impl Family`,
//! plan and space, actors, probes, checks, situations, its scenarios
//! (`scenarios.rs`), what the search must find in it (`targets.rs`) and
//! what it adds to the report. Adding a family is a folder here and one
//! line in [`REGISTRY`] (with its `mod` line). See ADR 0009.

pub(crate) mod election;
pub(crate) mod job_queue;
pub(crate) mod lock;
pub(crate) mod rate_limit;
pub(crate) mod redlock;

use crate::entry::FamilyEntry;

/// Every family, in the order `rp-sim scenarios` and the report list them.
pub(crate) const REGISTRY: &[&FamilyEntry] =
    &[&lock::ENTRY, &rate_limit::ENTRY, &election::ENTRY, &redlock::ENTRY, &job_queue::ENTRY];
