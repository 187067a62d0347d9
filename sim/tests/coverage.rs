//! Coverage of the correct scenarios: their pinned seeds reach every
//! situation the registry declares for them and exercise every public
//! operation they claim to run (one clearly separate section per family).

use std::collections::{BTreeMap, BTreeSet};

use redis_primitives_sim::scenarios;
use redis_primitives_sim::servers::Servers;

// ---- Redlock ---------------------------------------------------------------

/// The `redlock` seeds pinned as clean in `sim/tests/scenarios.rs`.
const REDLOCK_SEEDS: &[u64] = &[0, 1, 2, 3, 4];

/// Every public async operation of `Redlock`.
const REDLOCK_OPERATIONS: &[&str] = &[
    "Redlock::connect",
    "Redlock::acquire",
    "Redlock::acquire_with_retry",
    "Redlock::extend",
    "Redlock::release",
];

#[test]
fn redlock_pinned_seeds_reach_every_situation_and_operation() {
    let s = scenarios::find("redlock").expect("redlock is registered");
    assert!(!s.situations.is_empty(), "redlock declares no situation");
    let mut servers = Servers::new();
    let mut reached: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let mut operations: BTreeSet<String> = BTreeSet::new();
    for &seed in REDLOCK_SEEDS {
        let o = s.run(&mut servers, seed).unwrap_or_else(|e| panic!("redlock seed {seed}: {e}"));
        assert!(o.violations.is_empty(), "redlock seed {seed}: {:?}", o.violations);
        for r in &o.reached {
            reached.entry(r.clone()).or_default().push(seed);
        }
        operations.extend(o.operations.keys().cloned());
    }
    for situation in s.situations {
        assert!(
            reached.contains_key(situation.name),
            "no pinned seed of redlock reached {} ({}); reached: {reached:?}",
            situation.name,
            situation.meaning
        );
    }
    for op in REDLOCK_OPERATIONS {
        assert!(operations.contains(*op), "no pinned seed of redlock called {op}; called: {operations:?}");
    }
}
