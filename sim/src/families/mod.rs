//! The primitive families, one folder each: everything a family is (its
//! variants and `impl Family`, plan and space, actors, probes, checks and
//! situations). Adding a family is a folder here, a line below, and its
//! rows in the registry (`crate::scenarios`). See ADR 0009.

pub mod election;
pub mod job_queue;
pub mod lock;
pub mod rate_limit;
pub mod redlock;

use crate::family::ReportPart;

/// What the families add to `rp-sim report` beside their scenarios' rows,
/// in the report's order: what their histograms measure, and their own
/// sections (the election's figures).
pub const REPORT_PARTS: &[ReportPart] =
    &[lock::REPORT_PART, election::REPORT_PART, rate_limit::REPORT_PART, redlock::REPORT_PART, job_queue::REPORT_PART];
