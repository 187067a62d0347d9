//! The lock family's scenarios: its rows of the registry, correct
//! variants first where they pair with a broken one. `rp-sim scenarios`
//! lists them in this order; `super::ENTRY` hands them to the registry.

use super::api::{LOCK_ACQUIRE, LOCK_RELEASE};
use super::invariants::{FENCING_TOKENS_INCREASE, MUTUAL_EXCLUSION};
use crate::api::{FENCED_STORE_READ, FENCED_STORE_WRITE};
use crate::checker::NO_STALE_OVERWRITE;
use crate::scenario::{Expect, Scenario};

/// `lock`.
pub(crate) const LOCK: Scenario = Scenario {
    name: "lock",
    description:
        "Lock: contending clients with process pauses, partitions and latency; tokens increase, no two trusted holders",
    expect: Expect::Clean,
    situations: super::SITUATIONS,
    operations: super::OPERATIONS,
    paths: super::PATHS,
    scripts: &["lock_acquire", "lock_release", "lock_extend", "fenced_write"],
    invariants: &[],
    runs: &super::LockVariant::Lock,
    pinned_seeds: &[],
};

/// `lock-naive`.
pub(crate) const LOCK_NAIVE: Scenario = Scenario {
    name: "lock-naive",
    description:
        "NaiveLock (bare DEL release): a holder whose lease expired deletes the next holder's lock, letting a third in",
    expect: Expect::Violates(&MUTUAL_EXCLUSION),
    situations: &[],
    operations: &[],
    paths: &[],
    scripts: &[],
    invariants: &[],
    runs: &super::LockVariant::Naive,
    pinned_seeds: &[1, 2, 3],
};

/// `fencing`.
pub(crate) const FENCING: Scenario = Scenario {
    name: "fencing",
    description: "Lock + FencedStore: a paused holder's late write is refused; the final value has the highest token",
    expect: Expect::Clean,
    situations: super::FENCING_SITUATIONS,
    operations: &[FENCED_STORE_WRITE, FENCED_STORE_READ],
    paths: super::FENCING_PATHS,
    scripts: &["lock_acquire", "fenced_write"],
    invariants: &[],
    runs: &super::LockVariant::Fencing,
    pinned_seeds: &[],
};

/// `fencing-unfenced`.
pub(crate) const FENCING_UNFENCED: Scenario = Scenario {
    name: "fencing-unfenced",
    description: "Lock + UnfencedStore: the paused holder's late write silently overwrites the newer one",
    expect: Expect::Violates(&NO_STALE_OVERWRITE),
    situations: &[],
    operations: &[],
    paths: &[],
    scripts: &[],
    invariants: &[],
    runs: &super::LockVariant::Unfenced,
    pinned_seeds: &[0, 3, 4],
};

/// `counter-loss`.
pub(crate) const COUNTER_LOSS: Scenario = Scenario {
    name: "counter-loss",
    description:
        "Lock across a redis-server restart without persistence: the fence counter is lost and tokens are reissued",
    expect: Expect::Violates(&FENCING_TOKENS_INCREASE),
    situations: &[],
    operations: &[],
    paths: &[],
    scripts: &[],
    invariants: &[],
    runs: &super::LockVariant::CounterLoss,
    pinned_seeds: &[1, 2, 3],
};

/// `lock-floored`.
pub(crate) const LOCK_FLOORED: Scenario = Scenario {
    name: "lock-floored",
    description: "lock with time-floored tokens (max(counter + 1, server µs)): every lock checker, every operation, corrupt counters",
    expect: Expect::Clean,
    situations: super::SITUATIONS,
    operations: super::OPERATIONS,
    paths: super::PATHS,
    scripts: &["lock_acquire_floored", "lock_release", "lock_extend", "fenced_write"],
    invariants: &[],
    runs: &super::LockVariant::Floored,
    pinned_seeds: &[],
};

/// `counter-loss-floored`.
pub(crate) const COUNTER_LOSS_FLOORED: Scenario = Scenario {
    name: "counter-loss-floored",
    description: "counter-loss with time-floored tokens (max(counter + 1, server µs)): the counter is lost, tokens still increase",
    expect: Expect::Clean,
    situations: &[],
    operations: &[LOCK_ACQUIRE, LOCK_RELEASE, FENCED_STORE_WRITE],
    paths: &[],
    scripts: &["lock_acquire_floored", "lock_release", "fenced_write"],
    invariants: &[],
    runs: &super::LockVariant::CounterLossFloored,
    pinned_seeds: &[],
};

/// `lock-failover`.
pub(crate) const LOCK_FAILOVER: Scenario = Scenario {
    name: "lock-failover",
    description: "Lock on a primary with a replica: replication cut, primary crash, replica promoted; tokens of the cut are reissued",
    expect: Expect::Violates(&FENCING_TOKENS_INCREASE),
    situations: &[],
    operations: &[],
    paths: &[],
    scripts: &[],
    invariants: &[],
    runs: &super::LockVariant::Failover,
    pinned_seeds: &[1, 2, 3],
};

/// `lock-failover-acknowledged`.
pub(crate) const LOCK_FAILOVER_ACKNOWLEDGED: Scenario = Scenario {
    name: "lock-failover-acknowledged",
    description: "lock-failover with acknowledged acquires (WAIT 1): refused during the cut; what was handed out survives the failover",
    expect: Expect::Clean,
    situations: super::variants::failover::ACKNOWLEDGED_SITUATIONS,
    operations: &[LOCK_ACQUIRE, LOCK_RELEASE, FENCED_STORE_WRITE],
    paths: &[],
    scripts: &["lock_acquire", "lock_release", "fenced_write"],
    invariants: crate::checker::acknowledged_writes::DECLARED,
    runs: &super::LockVariant::FailoverAcknowledged,
    pinned_seeds: &[],
};

/// `lock-failover-floored`.
pub(crate) const LOCK_FAILOVER_FLOORED: Scenario = Scenario {
    name: "lock-failover-floored",
    description: "lock-failover with time-floored tokens: the counter goes back at the failover, tokens still increase",
    expect: Expect::Clean,
    situations: super::variants::failover::FLOORED_SITUATIONS,
    operations: &[LOCK_ACQUIRE, LOCK_RELEASE, FENCED_STORE_WRITE],
    paths: &[],
    scripts: &["lock_acquire_floored", "lock_release", "fenced_write"],
    invariants: &[],
    runs: &super::LockVariant::FailoverFloored,
    pinned_seeds: &[],
};

/// `lock-failover-clock-back`.
pub(crate) const LOCK_FAILOVER_CLOCK_BACK: Scenario = Scenario {
    name: "lock-failover-clock-back",
    description: "lock-failover-floored with the promoted server's clock 2 s behind: the floor is below the lost tokens (documented limit)",
    expect: Expect::Violates(&FENCING_TOKENS_INCREASE),
    situations: &[],
    operations: &[],
    paths: &[],
    scripts: &[],
    invariants: &[],
    runs: &super::LockVariant::FailoverClockBack,
    pinned_seeds: &[1, 2, 3],
};

/// Every scenario of the family, in listing order.
pub(crate) const SCENARIOS: &[Scenario] = &[
    LOCK,
    LOCK_NAIVE,
    FENCING,
    FENCING_UNFENCED,
    COUNTER_LOSS,
    LOCK_FLOORED,
    COUNTER_LOSS_FLOORED,
    LOCK_FAILOVER,
    LOCK_FAILOVER_ACKNOWLEDGED,
    LOCK_FAILOVER_FLOORED,
    LOCK_FAILOVER_CLOCK_BACK,
];
