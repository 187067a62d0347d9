//! The harness must catch every broken variant and every documented
//! non-guarantee (`redis_primitives_sim::search::TARGETS`), against real
//! redis-server processes. For each, this test asserts that:
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

use redis_primitives_proptests::{base_seed, regression_path, run_command, with_servers};
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
fn finds_lock_naive() {
    must_find("lock-naive");
}

#[test]
fn finds_fencing_unfenced() {
    must_find("fencing-unfenced");
}

#[test]
fn finds_rate_limit_fixed_window() {
    must_find("rate-limit-fixed-window");
}

#[test]
fn finds_rate_limit_client_side() {
    must_find("rate-limit-client-side");
}

#[test]
fn finds_rate_limit_watch_multi() {
    must_find("rate-limit-watch-multi");
}

#[test]
fn finds_election_no_epoch() {
    must_find("election-no-epoch");
}

#[test]
fn finds_redlock_no_validity() {
    must_find("redlock-no-validity");
}

#[test]
fn finds_counter_loss() {
    must_find("counter-loss");
}

#[test]
fn finds_lock_restart() {
    must_find("lock-restart");
}

#[test]
fn finds_redlock_clock_jump() {
    must_find("redlock-clock-jump");
}

#[test]
fn every_target_has_a_test() {
    let src = include_str!("violations.rs");
    for t in search::TARGETS {
        assert!(src.contains(&format!("must_find(\"{}\")", t.name)), "{} has no test", t.name);
    }
}
