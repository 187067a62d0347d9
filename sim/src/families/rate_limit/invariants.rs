//! The invariants only the rate limiters family judges, with their
//! one-line meanings (its [`ReportPart`](crate::family::ReportPart) lists
//! them for `--help`, `explore` and the report).

use crate::checker::Invariant;

/// Name of the rate-limit invariant.
pub(crate) const RATE_LIMIT: Invariant = Invariant::new("rate-limit");
/// Name of the exact rate-limit invariant: every decision (admit or deny,
/// count, remaining, retry-after) is the one the limiter's algorithm gives
/// for the admissions of the history.
pub(crate) const RATE_LIMIT_EXACT: Invariant = Invariant::new("rate-limit-exact");

/// Each with what it means.
pub(crate) const INVARIANTS: &[(Invariant, &str)] = &[
    (
        RATE_LIMIT,
        "admissions in any window (now - W, now] of server time never exceed the limit (plus the documented bound for approximate limiters)",
    ),
    (
        RATE_LIMIT_EXACT,
        "every rate-limit decision (admit or deny, count, remaining, retry-after) is the one the algorithm gives for the history's admissions",
    ),
];
