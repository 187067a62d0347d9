//! The election family's scenarios: its rows of the registry, correct
//! variants first where they pair with a broken one. `rp-sim scenarios`
//! lists them in this order; `super::ENTRY` hands them to the registry.

use super::api::{ELECTION_RUN, ELECTION_STOP};
use super::invariants;
use crate::api::FENCED_STORE_WRITE;
use crate::path::Path;
use crate::scenario::{Expect, Scenario};

/// `election`.
pub(crate) const ELECTION: Scenario = Scenario {
    name: "election",
    description: "Election (epoch = fencing token): leader pauses, stops and partitions; one leader per epoch, stale writes refused",
    expect: Expect::Clean,
    situations: super::SITUATIONS,
    operations: &[ELECTION_RUN, ELECTION_STOP],
    paths: &[(ELECTION_RUN, Path::Ok), (ELECTION_STOP, Path::Ok), (FENCED_STORE_WRITE, Path::Ok), (FENCED_STORE_WRITE, Path::Refused), (FENCED_STORE_WRITE, Path::Failed)],
    scripts: &["lock_acquire", "lock_release", "lock_extend", "fenced_write"],
    invariants: &[],
    runs: &super::ElectionVariant::Election,
    pinned_seeds: &[],
};

/// `election-renew-only`.
pub(crate) const ELECTION_RENEW_ONLY: Scenario = Scenario {
    name: "election-renew-only",
    description:
        "Election with the reference's tick-based demotion (demote only when a renewal fails), kept for comparison",
    expect: Expect::Clean,
    situations: super::RENEW_ONLY_SITUATIONS,
    operations: &[ELECTION_RUN, ELECTION_STOP],
    paths: &[],
    scripts: &[],
    invariants: &[],
    runs: &super::ElectionVariant::RenewOnly,
    pinned_seeds: &[],
};

/// `election-no-epoch`.
pub(crate) const ELECTION_NO_EPOCH: Scenario = Scenario {
    name: "election-no-epoch",
    description:
        "NaiveElection (no epoch, unfenced writes): a paused leader wakes and its write lands after the new leader's",
    expect: Expect::Violates(&invariants::ELECTION),
    situations: super::NO_EPOCH_SITUATIONS,
    operations: &[],
    paths: &[],
    scripts: &[],
    invariants: &[],
    runs: &super::ElectionVariant::NoEpoch,
    pinned_seeds: &[1, 2, 4],
};

/// `election-failover`.
pub(crate) const ELECTION_FAILOVER: Scenario = Scenario {
    name: "election-failover",
    description:
        "Election on a primary with a replica: replication cut, primary crash, replica promoted; epochs are reissued",
    expect: Expect::Violates(&invariants::ELECTION),
    situations: &[],
    operations: &[],
    paths: &[],
    scripts: &[],
    invariants: &[],
    runs: &super::ElectionVariant::Failover,
    pinned_seeds: &[1, 2, 3],
};

/// `election-failover-acknowledged`.
pub(crate) const ELECTION_FAILOVER_ACKNOWLEDGED: Scenario = Scenario {
    name: "election-failover-acknowledged",
    description: "election-failover with acknowledged campaigns and writes (WAIT 1): no epoch the replica missed is handed out, no write it missed is reported accepted",
    expect: Expect::Clean,
    situations: super::ACKNOWLEDGED_FAILOVER_SITUATIONS,
    operations: &[ELECTION_RUN, ELECTION_STOP, FENCED_STORE_WRITE],
    paths: &[],
    scripts: &["lock_acquire", "lock_release", "lock_extend", "fenced_write"],
    invariants: crate::checker::acknowledged_writes::DECLARED,
    runs: &super::ElectionVariant::FailoverAcknowledged,
    pinned_seeds: &[],
};

/// `election-failover-floored`.
pub(crate) const ELECTION_FAILOVER_FLOORED: Scenario = Scenario {
    name: "election-failover-floored",
    description:
        "election-failover with time-floored epochs: the counter goes back at the failover, epochs still increase",
    expect: Expect::Clean,
    situations: super::FAILOVER_SITUATIONS,
    operations: &[ELECTION_RUN, ELECTION_STOP],
    paths: &[],
    scripts: &["lock_acquire_floored", "lock_release", "lock_extend", "fenced_write"],
    invariants: &[],
    runs: &super::ElectionVariant::FailoverFloored,
    pinned_seeds: &[],
};

/// Every scenario of the family, in listing order.
pub(crate) const SCENARIOS: &[Scenario] = &[
    ELECTION,
    ELECTION_RENEW_ONLY,
    ELECTION_NO_EPOCH,
    ELECTION_FAILOVER,
    ELECTION_FAILOVER_ACKNOWLEDGED,
    ELECTION_FAILOVER_FLOORED,
];
