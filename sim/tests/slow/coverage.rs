//! Coverage as a regression check: the pinned seeds of every scenario reach
//! every situation the scenario declares (`Scenario::situations`).
//!
//! Checkers only say nothing went wrong; a scenario whose seeds silently
//! stopped reaching the states it exists for (a lease expiring under a
//! paused holder, a stale write arriving after a newer one) would keep
//! passing them. This test iterates the registry, so a new scenario's
//! situations are checked the day they are declared.

use std::collections::BTreeSet;

use redis_primitives_sim::scenarios::{Expect, SCENARIOS};
use redis_primitives_sim::servers::Servers;

/// The pinned seed set: together, these must reach every declared situation.
const COVERAGE_SEEDS: std::ops::Range<u64> = 0..24;

/// Every public async operation of the library's correct primitives: each
/// must appear in the history of some correct scenario's pinned seeds, or
/// the simulation cannot find a bug in it. (The library's public API, kept
/// here by hand: a new public operation fails this test until a workload
/// calls it.)
const PUBLIC_OPERATIONS: &[&str] = &[
    "Lock::acquire",
    "Lock::release",
    "Lock::extend",
    "Lock::with_lock",
    "Lock::with_lock_guarded",
    "Lock::keep_alive",
    "Lock::current_token",
    "Lock::remaining_ttl",
    "Retry::run",
    "FencedStore::write",
    "FencedStore::read",
    "SlidingWindowLog::check",
    "SlidingWindowLog::check_at",
    "SlidingWindowCounter::check",
    "SlidingWindowCounter::check_at",
    "Election::run",
    "Election::stop",
    "Redlock::connect",
    "Redlock::acquire",
    "Redlock::acquire_with_retry",
    "Redlock::extend",
    "Redlock::release",
];

#[test]
#[ignore = "slow in a debug build: .ci/run runs it in release"]
fn pinned_seeds_reach_every_declared_situation_and_call_every_operation() {
    let mut servers = Servers::new();
    let mut missing = Vec::new();
    let mut operations = BTreeSet::new();
    for scenario in SCENARIOS {
        let mut reached = BTreeSet::new();
        for seed in COVERAGE_SEEDS {
            let o = scenario.run(&mut servers, seed).unwrap_or_else(|e| panic!("{} seed {seed}: {e}", scenario.name));
            reached.extend(o.reached);
            if scenario.expect == Expect::Clean {
                operations.extend(o.operations.into_keys());
            }
        }
        for s in scenario.situations {
            if !reached.contains(s.name) {
                missing.push(format!(
                    "{}: no seed of {COVERAGE_SEEDS:?} reached `{}` ({}); look with: rp-sim explore --scenario {} --seeds 200",
                    scenario.name, s.name, s.meaning, scenario.name
                ));
            }
        }
        println!(
            "{:<24} reached {} of {} declared situations",
            scenario.name,
            scenario.situations.iter().filter(|s| reached.contains(s.name)).count(),
            scenario.situations.len()
        );
    }
    for op in PUBLIC_OPERATIONS {
        if !operations.contains(*op) {
            missing.push(format!("no correct scenario's pinned seeds call {op}"));
        }
    }
    assert!(missing.is_empty(), "coverage lost:\n  {}", missing.join("\n  "));
}

#[test]
fn every_declared_situation_has_a_unique_name_and_a_meaning() {
    for scenario in SCENARIOS {
        let mut seen = BTreeSet::new();
        for s in scenario.situations {
            assert!(seen.insert(s.name), "{}: situation {} declared twice", scenario.name, s.name);
            assert!(!s.meaning.is_empty(), "{}: situation {} has no meaning", scenario.name, s.name);
            assert!(
                s.name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
                "{}: situation {} is not kebab-case",
                scenario.name,
                s.name
            );
        }
    }
}
