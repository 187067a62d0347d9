//! The invariants only the Redlock family judges, with their
//! one-line meanings (its [`ReportPart`](crate::family::ReportPart) lists
//! them for `--help`, `explore` and the report).

use crate::checker::Invariant;

/// Name of the Redlock mutual-exclusion invariant.
pub(crate) const REDLOCK_MUTUAL_EXCLUSION: Invariant = Invariant::new("redlock-mutual-exclusion");
/// Name of the Redlock validity invariant.
pub(crate) const REDLOCK_VALIDITY: Invariant = Invariant::new("redlock-validity");
/// Name of the Redlock votes invariant.
pub(crate) const REDLOCK_VOTES: Invariant = Invariant::new("redlock-votes");
/// Name of the Redlock rounds invariant.
pub(crate) const REDLOCK_ROUNDS: Invariant = Invariant::new("redlock-rounds");

/// Each with what it means.
pub(crate) const INVARIANTS: &[(Invariant, &str)] = &[
    (
        REDLOCK_MUTUAL_EXCLUSION,
        "two clients never both hold a Redlock inside its validity interval",
    ),
    (
        REDLOCK_VALIDITY,
        "a Redlock lease is trusted at most until T1 + TTL − drift with validity TTL − elapsed − drift > 0; an extend after the validity passed is refused; a too-slow refusal is justified",
    ),
    (
        REDLOCK_VOTES,
        "a Redlock grant or extension has N/2+1 yes answers and a no-majority refusal fewer; each master's yes or no is consistent with the keys it can hold",
    ),
    (
        REDLOCK_ROUNDS,
        "every Redlock round (acquire, extend, release, cleanup) asks all N masters and lasts at most the per-master timeout",
    ),
];
