//! The Redlock family's scenarios: its rows of the registry, correct
//! variants first where they pair with a broken one. `rp-sim scenarios`
//! lists them in this order; `super::ENTRY` hands them to the registry.

use super::api::{REDLOCK_ACQUIRE, REDLOCK_ACQUIRE_WITH_RETRY, REDLOCK_CONNECT, REDLOCK_EXTEND, REDLOCK_RELEASE};
use super::invariants::REDLOCK_MUTUAL_EXCLUSION;
use crate::path::Path;
use crate::scenario::{Expect, Scenario};

/// `redlock`.
pub(crate) const REDLOCK: Scenario = Scenario {
    name: "redlock",
    description: "Redlock on 5 masters with partitions and pauses; no two clients inside their validity interval",
    expect: Expect::Clean,
    situations: super::SITUATIONS,
    operations: &[REDLOCK_CONNECT, REDLOCK_ACQUIRE, REDLOCK_ACQUIRE_WITH_RETRY, REDLOCK_EXTEND, REDLOCK_RELEASE],
    paths: &[
        (REDLOCK_CONNECT, Path::Ok),
        (REDLOCK_ACQUIRE, Path::Ok),
        (REDLOCK_ACQUIRE, Path::Refused),
        (REDLOCK_ACQUIRE_WITH_RETRY, Path::Ok),
        (REDLOCK_ACQUIRE_WITH_RETRY, Path::Refused),
        (REDLOCK_EXTEND, Path::Ok),
        (REDLOCK_EXTEND, Path::Refused),
        (REDLOCK_RELEASE, Path::Ok),
    ],
    scripts: &["lock_release", "lock_extend"],
    invariants: &[],
    runs: &super::RedlockVariant::Correct,
    pinned_seeds: &[],
};

/// `redlock-no-validity`.
pub(crate) const REDLOCK_NO_VALIDITY: Scenario = Scenario {
    name: "redlock-no-validity",
    description:
        "Redlock without the elapsed-time validity gate: a slow acquire trusts a lease that has already expired",
    expect: Expect::Violates(&REDLOCK_MUTUAL_EXCLUSION),
    situations: &[],
    operations: &[],
    paths: &[],
    scripts: &[],
    invariants: &[],
    runs: &super::RedlockVariant::NoValidity,
    pinned_seeds: &[2, 3, 4],
};

/// `redlock-clock-jump`.
pub(crate) const REDLOCK_CLOCK_JUMP: Scenario = Scenario {
    name: "redlock-clock-jump",
    description: "Redlock with a forward clock step on a minority of masters: two clients each get a majority (documented non-guarantee)",
    expect: Expect::Violates(&REDLOCK_MUTUAL_EXCLUSION),
    situations: &[],
    operations: &[],
    paths: &[],
    scripts: &[],
    invariants: &[],
    runs: &super::RedlockVariant::ClockJump,
    pinned_seeds: &[1, 2, 3],
};

/// Every scenario of the family, in listing order.
pub(crate) const SCENARIOS: &[Scenario] = &[REDLOCK, REDLOCK_NO_VALIDITY, REDLOCK_CLOCK_JUMP];
