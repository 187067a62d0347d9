//! The invariants only the election family judges, with their
//! one-line meanings (its [`ReportPart`](crate::family::ReportPart) lists
//! them for `--help`, `explore` and the report).

use crate::checker::Invariant;

/// Name of the election invariant.
pub(crate) const ELECTION: Invariant = Invariant::new("election");
/// Name of the election-views invariant: an election's accessors and
/// callbacks agree with each other, its configuration and the clock.
pub(crate) const ELECTION_VIEWS: Invariant = Invariant::new("election-views");

/// Each with what it means.
pub(crate) const INVARIANTS: &[(Invariant, &str)] = &[
    (
        ELECTION,
        "at most one leader and one term per epoch; epochs strictly increase; no write with a lower epoch is accepted after one with a higher epoch",
    ),
    (
        ELECTION_VIEWS,
        "an Election's is_leader, epoch, leader_lease, leadership, callbacks and configuration agree with each other and with the clock: epoch() is Some exactly before the lease's deadline, on_elected runs once per term",
    ),
];
