//! The harness must catch every broken variant and every documented
//! non-guarantee (`redis_primitives_sim::search::targets()`: the registry
//! rows' `finds`), against real redis-server processes. For each, this test
//! asserts that:
//!
//! 1. every counterexample persisted in its committed
//!    `regressions/<target>.proptest-regressions` file still violates the
//!    invariant (each replayed on its own, unshrunk);
//! 2. a fresh search (fixed base seed, nothing replayed) finds a violation
//!    of the target's invariant within `case_bound` cases;
//! 3. shrinking reduces it to a plan of size (faults + actors) at most
//!    `size_bound`;
//! 4. the shrunk plan is printed with the `rp-sim replay --plan` command
//!    that reproduces it, and both rerunning the plan and running that very
//!    command (through the real CLI parser and entry point) reproduce the
//!    violation.
//!
//! A newly found counterexample is appended to the target's regression file
//! (once: the search is deterministic, so the file does not grow run after
//! run). Run with `--nocapture` to see the shrunk counterexamples.

use redis_primitives_proptests::{
    base_seed, failures_in_parallel, regression_path, run_command, selected, with_servers,
};
use redis_primitives_sim::search::{self, RegressionFile, SearchConfig};

/// Simulation runs allowed for shrinking one counterexample.
const SHRINK_RUNS: u32 = 120;

fn must_find(name: &str) {
    let target = search::target(name).unwrap_or_else(|| panic!("no search target {name}"));
    let file = RegressionFile::new(regression_path(name), name);
    with_servers(|servers| {
        // 1. Known counterexamples still fail.
        for seed in file.seeds() {
            let config = SearchConfig {
                base_seed: 0,
                cases: 0,
                max_shrink_iters: 0,
                persistence: Some(file.clone().only(&seed)),
            };
            let report = search::find(target, servers, config).unwrap_or_else(|e| panic!("{name}: {e}"));
            let found = report.finding.unwrap_or_else(|| {
                panic!("{name}: persisted counterexample {seed} in {} no longer fails", file.path().display())
            });
            assert!(found.from_regression);
            println!("{name}: regression {seed} still violates {}", target.invariant);
        }

        // 2. A fresh search finds it within the bound.
        let config = SearchConfig {
            base_seed: base_seed(),
            cases: target.case_bound,
            max_shrink_iters: SHRINK_RUNS,
            persistence: Some(file.clone().save_only()),
        };
        let report = search::find(target, servers, config).unwrap_or_else(|e| panic!("{name}: {e}"));
        let Some(f) = report.finding else {
            panic!("{name}: no {} violation in {} cases", target.invariant, report.cases_run);
        };
        assert!(f.cases <= target.case_bound);

        // 3. Shrunk to a small counterexample.
        println!(
            "{name}: {} found after {} case(s) in {:.2}s; first plan size {}, shrunk to size {} in {} runs ({:.2}s in all)",
            target.invariant,
            f.cases,
            f.to_first.as_secs_f64(),
            f.first.size(),
            f.size(),
            f.shrink_runs,
            f.total.as_secs_f64()
        );
        println!("{}", f.shrunk);
        println!("  violation: {}", f.violation);
        println!("  reproduce: {}", f.replay_command());
        assert!(
            f.size() <= target.size_bound,
            "{name}: shrunk counterexample has size {} > {}:\n{}",
            f.size(),
            target.size_bound,
            f.shrunk
        );
        assert!(f.size() <= f.first.size());

        // 4. Replaying reproduces it: the plan, and the printed command.
        let again = search::replay(&f.shrunk, target.invariant, servers).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(!again.is_empty(), "{name}: the shrunk plan did not violate {} again", target.invariant);
        assert_eq!(again[0], f.violation, "{name}: a rerun of the shrunk plan differs");
        let status = run_command(&f.replay_command()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(status, 1, "{name}: `rp-sim replay --plan` did not report the violation");
    });
}

#[test]
fn every_target_is_found_and_shrunk() {
    let targets: Vec<_> = search::targets().filter(|t| selected(t.name)).collect();
    assert!(search::targets().next().is_some(), "the registry names no search target");
    let failed = failures_in_parallel(&targets, |t| t.name.to_string(), |t| must_find(t.name));
    assert!(failed.is_empty(), "not found or not reproduced: {}", failed.join(", "));
}
