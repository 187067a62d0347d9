//! Properties that must hold, each over a fixed, CI-sized number of random
//! plans (fault schedules and workloads drawn from the spaces of
//! `redis_primitives_sim::search::properties()`: the registry rows'
//! `holds`), run against real redis-server processes:
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

use redis_primitives_proptests::{
    base_seed, cases, failures_in_parallel, regression_path, selected, with_servers, DEFAULT_CASES,
};
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
fn every_property_holds() {
    let properties: Vec<_> = search::properties().filter(|p| selected(p.name)).collect();
    let failed = failures_in_parallel(&properties, |p| p.name.to_string(), |p| must_hold(p.name));
    assert!(failed.is_empty(), "violated: {}", failed.join(", "));
}

#[test]
fn restarts_and_clock_steps_are_non_guarantees_not_properties() {
    for p in search::properties() {
        let space = (p.space)();
        assert!(
            !space.faults.classes.contains(&redis_primitives_sim::FaultClass::ServerRestart),
            "{}: restarts are a documented non-guarantee, not a property",
            p.name
        );
    }
    let redlock = search::property("redlock-mutual-exclusion").expect("the registry holds Redlock's property");
    assert!(!(redlock.space)().faults.classes.contains(&redis_primitives_sim::FaultClass::ClockStep));
}
