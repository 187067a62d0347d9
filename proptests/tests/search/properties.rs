//! Properties that must hold, each over a fixed, CI-sized number of random
//! plans (fault schedules and workloads drawn by
//! `redis_primitives_sim::search::PROPERTIES`), run against real
//! redis-server processes:
//!
//! - fencing tokens increase (`lock`, client-side faults and clock steps);
//! - no stale overwrite after a newer write (`fencing`: holders that rely on
//!   the fenced store alone);
//! - the sliding-window log never exceeds its limit in any window;
//! - the sliding-window counter stays within its documented `2 × max − 1`;
//! - one leader per epoch, and no lower-epoch write accepted after a higher
//!   one (`election`);
//! - Redlock mutual exclusion, in schedules without clock faults (or
//!   restarts, the other documented way to lose a Redlock).
//!
//! Cases per property: `RP_PROPTEST_CASES` (or `PROPTEST_CASES`), default
//! [`DEFAULT_CASES`]; base seed: `RP_PROPTEST_SEED`. A failing case is
//! shrunk, printed with the `rp-sim replay --plan` command that reproduces
//! it, and persisted in `regressions/<property>.proptest-regressions`, which
//! is replayed first on every later run.

use redis_primitives_proptests::{base_seed, cases, regression_path, with_servers, DEFAULT_CASES};
use redis_primitives_sim::search::{self, RegressionFile, SearchConfig};

fn must_hold(name: &str) {
    let property = search::property(name).unwrap_or_else(|| panic!("no property {name}"));
    let n = cases(DEFAULT_CASES);
    let config = SearchConfig {
        base_seed: base_seed(),
        cases: n,
        max_shrink_iters: 200,
        persistence: Some(RegressionFile::new(regression_path(name), name)),
    };
    let report =
        with_servers(|servers| search::check(property, servers, config)).unwrap_or_else(|e| panic!("{name}: {e}"));
    if let Some(f) = &report.finding {
        panic!(
            "{name}: {} violated after {} case(s){}; shrunk to:\n{}\n  violation: {}\n  reproduce: {}",
            property.invariant,
            f.cases,
            if f.from_regression { " (a persisted regression)" } else { "" },
            f.shrunk,
            f.violation,
            f.replay_command()
        );
    }
    assert!(report.cases_run >= n, "{name}: only {} of {n} cases ran", report.cases_run);
    // Not vacuous: the runs did things (at least a few events per case).
    assert!(report.events >= u64::from(n) * 5, "{name}: only {} events in {n} cases", report.events);
    println!(
        "{name}: {} held over {} cases ({} events) in {:.2}s on {}",
        property.invariant,
        report.cases_run,
        report.events,
        report.wall.as_secs_f64(),
        report.scenario
    );
}

#[test]
fn fencing_tokens_increase() {
    must_hold("fencing-tokens-increase");
}

#[test]
fn no_stale_overwrite_after_a_newer_write() {
    must_hold("no-stale-overwrite");
}

#[test]
fn sliding_log_never_exceeds_its_limit() {
    must_hold("sliding-log-limit");
}

#[test]
fn sliding_counter_stays_within_its_documented_bound() {
    must_hold("sliding-counter-bound");
}

#[test]
fn one_leader_per_epoch_and_no_lower_epoch_write_after_a_higher_one() {
    must_hold("one-leader-per-epoch");
}

#[test]
fn redlock_mutual_exclusion_without_clock_faults() {
    must_hold("redlock-mutual-exclusion");
}

#[test]
fn every_property_has_a_test() {
    let src = include_str!("properties.rs");
    for p in search::PROPERTIES {
        assert!(src.contains(&format!("must_hold(\"{}\")", p.name)), "{} has no test", p.name);
        let space = (p.space)();
        assert!(
            !space.faults.classes.contains(&redis_primitives_sim::nemesis::FaultClass::ServerRestart),
            "{}: restarts are a documented non-guarantee, not a property",
            p.name
        );
    }
    let redlock = search::property("redlock-mutual-exclusion").unwrap();
    assert!(!(redlock.space)().faults.classes.contains(&redis_primitives_sim::nemesis::FaultClass::ClockStep));
}
