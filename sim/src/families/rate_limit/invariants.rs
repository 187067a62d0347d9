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

/// Name of the limiter-state invariant: a limiter key planted with what
/// the scripts never write is `CorruptState` and left as it was; the
/// extremes they do write are decided (`checks/planted.rs`).
pub(crate) const LIMITER_STATE: Invariant = Invariant::new("limiter-state");

/// Each with what it means.
pub(crate) const INVARIANTS: &[(Invariant, &str)] = &[
    (
        RATE_LIMIT,
        "admissions in any window (now - W, now] of server time never exceed the limit (plus the documented bound for approximate limiters)",
    ),
    (
        LIMITER_STATE,
        "a limiter key holding what the scripts never write is refused with CorruptState naming it, and left as it was; the extremes they do write are decided",
    ),
    (
        RATE_LIMIT_EXACT,
        "every rate-limit decision (admit or deny, count, remaining, retry-after) is the one the algorithm gives for the history's admissions",
    ),
];
