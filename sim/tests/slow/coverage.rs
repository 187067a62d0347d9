//! Coverage as a regression check: the pinned seeds of every scenario reach
//! every situation the scenario declares (`Scenario::situations`).
//!
//! Checkers only say nothing went wrong; a scenario whose seeds silently
//! stopped reaching the states it exists for (a lease expiring under a
//! paused holder, a stale write arriving after a newer one) would keep
//! passing them. This test iterates the registry, so a new scenario's
//! situations are checked the day they are declared, and so are the
//! public operations each correct scenario declares it calls
//! (`Scenario::operations`) and the paths of them it declares it takes
//! (`Scenario::paths`: ok, refused, failed; the promise table in
//! `docs/guide/invariants.md` judges each path).

use std::collections::BTreeSet;

use redis_primitives_sim::scenarios::{self, Expect};
use redis_primitives_sim::Servers;

/// The pinned seed set: together, these must reach every declared situation.
/// (25, not 24, since the lock workload's stale-lease probe moved the first
/// seed of `lock` and `lock-floored` whose aimed release has its reply held
/// across the expiry, a situation ~13 % of seeds reach, to seed 24; 28 since
/// the reads under writes of issue 50 moved `lock-floored`'s first seed
/// reaching `stale-success-after-pause`, ~7 % of seeds, to 27.)
const COVERAGE_SEEDS: std::ops::Range<u64> = 0..28;

#[test]
#[ignore = "slow in a debug build: .ci/run runs it in release"]
fn pinned_seeds_reach_every_declared_situation_and_take_every_path() {
    let mut servers = Servers::new();
    let mut missing = Vec::new();
    for scenario in scenarios::all() {
        let mut reached = BTreeSet::new();
        let mut operations = BTreeSet::new();
        let mut paths = BTreeSet::new();
        for seed in COVERAGE_SEEDS {
            let o = scenario.run(&mut servers, seed).unwrap_or_else(|e| panic!("{} seed {seed}: {e}", scenario.name));
            reached.extend(o.reached);
            operations.extend(o.operations.into_keys());
            paths.extend(o.paths);
        }
        for op in scenario.operations {
            if !operations.contains(op) {
                missing.push(format!("{}: no seed of {COVERAGE_SEEDS:?} called {op}", scenario.name));
            }
        }
        for (op, path) in scenario.paths {
            if !paths.contains(&(op.clone(), *path)) {
                missing.push(format!("{}: no seed of {COVERAGE_SEEDS:?} took path `{path}` of {op}", scenario.name));
            }
        }
        for s in scenario.situations {
            if !reached.contains(&s.name) {
                missing.push(format!(
                    "{}: no seed of {COVERAGE_SEEDS:?} reached `{}` ({}); look with: rp-sim explore --scenario {} --seeds 200",
                    scenario.name, s.name, s.meaning, scenario.name
                ));
            }
        }
        println!(
            "{:<24} reached {} of {} declared situations",
            scenario.name,
            scenario.situations.iter().filter(|s| reached.contains(&s.name)).count(),
            scenario.situations.len()
        );
    }
    assert!(missing.is_empty(), "coverage lost:\n  {}", missing.join("\n  "));
}

#[test]
fn every_correct_scenario_declares_the_operations_it_calls() {
    for scenario in scenarios::all() {
        match scenario.expect {
            Expect::Clean => assert!(!scenario.operations.is_empty(), "{}: declares no operation", scenario.name),
            Expect::Violates(_) => assert!(scenario.operations.is_empty(), "{}: a broken variant", scenario.name),
        }
        for op in scenario.operations {
            assert!(op.name().contains("::"), "{}: `{op}` is not Type::operation", scenario.name);
        }
    }
}

#[test]
fn every_declared_situation_has_a_unique_name_and_a_meaning() {
    for scenario in scenarios::all() {
        let mut seen = BTreeSet::new();
        for s in scenario.situations {
            assert!(seen.insert(s.name), "{}: situation {} declared twice", scenario.name, s.name);
            assert!(!s.meaning.is_empty(), "{}: situation {} has no meaning", scenario.name, s.name);
            assert!(
                s.name.name().chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
                "{}: situation {} is not kebab-case",
                scenario.name,
                s.name
            );
        }
    }
}
