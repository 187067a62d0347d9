//! Running a search: proptest's runner over a space with a fixed RNG seed,
//! stopping at the first violation, shrinking it, and timing it.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::time::{Duration, Instant};

use proptest::strategy::BoxedStrategy;
use proptest::test_runner::{basic_result_cache, Config, FailurePersistence, TestCaseError, TestError, TestRunner};

use super::*;
use crate::checker::{Invariant, Violation};
use crate::plan::Plan;
use crate::servers::{Servers, SetupError};

/// How to run a search.
#[derive(Debug)]
pub struct SearchConfig {
    /// Seeds proptest's RNG: the same base seed draws the same cases.
    pub base_seed: u64,
    /// Cases to try before giving up.
    pub cases: u32,
    /// Runs allowed while proptest shrinks (each is one simulation); the
    /// greedy [`minimize`] pass after it gets a quarter of this on top.
    pub max_shrink_iters: u32,
    /// Where failing cases are persisted and replayed from.
    pub persistence: Option<RegressionFile>,
}

impl SearchConfig {
    /// `cases` fresh cases from `base_seed`, 200 shrink runs, no persistence.
    pub fn new(base_seed: u64, cases: u32) -> SearchConfig {
        SearchConfig { base_seed, cases, max_shrink_iters: 200, persistence: None }
    }
}

/// A counterexample, found and shrunk.
#[derive(Debug, Clone)]
pub struct Finding {
    /// Cases run up to and including the first failing one.
    pub cases: u32,
    /// Whether that case came from the regression file.
    pub from_regression: bool,
    /// The first failing plan, before shrinking.
    pub first: Plan,
    /// The shrunk plan.
    pub shrunk: Plan,
    /// The violation the shrunk plan produces.
    pub violation: Violation,
    /// Simulation runs spent shrinking (proptest's and [`minimize`]'s).
    pub shrink_runs: u32,
    /// Wall time to the first counterexample.
    pub to_first: Duration,
    /// Wall time including shrinking.
    pub total: Duration,
}

impl Finding {
    /// [`Plan::size`] of the shrunk plan.
    pub fn size(&self) -> usize {
        self.shrunk.size()
    }

    /// The command that reproduces the shrunk counterexample.
    pub fn replay_command(&self) -> String {
        self.shrunk.replay_command()
    }
}

/// What a search did.
#[derive(Debug, Clone)]
pub struct SearchReport {
    /// Scenario searched (empty if no case ran).
    pub scenario: String,
    /// Invariant searched for violations of.
    pub invariant: Invariant,
    /// Cases run before the first failure (all of them if none failed),
    /// shrinking excluded.
    pub cases_run: u32,
    /// Wall time of the whole search.
    pub wall: Duration,
    /// History events recorded over every run (shrinking included): a
    /// property that "held" over empty histories proved nothing.
    pub events: u64,
    /// The counterexample, if any.
    pub finding: Option<Finding>,
}

#[derive(Default)]
struct State {
    scenario: Option<String>,
    calls: u32,
    events: u64,
    first: Option<(u32, Plan, Instant)>,
    failing: BTreeMap<String, Violation>,
    error: Option<SetupError>,
}

/// Searches `strategy` for a plan whose run violates `invariant`; shrinks
/// the first one found. Plans run on `servers` (reset before each run).
///
/// A set-up error (a server that will not start) ends the search with that
/// error; it is never mistaken for a counterexample.
pub fn search(
    strategy: &BoxedStrategy<Plan>,
    invariant: &Invariant,
    servers: &mut Servers,
    config: SearchConfig,
) -> Result<SearchReport, SetupError> {
    let started = Instant::now();
    let persisted = config.persistence.as_ref().map_or(0, |p| p.load_persisted_failures2(None).len() as u32);
    // The greedy pass gets a quarter of the shrinking budget on top.
    let minimize_budget = config.max_shrink_iters / 4;
    let mut proptest_config = Config::with_cases(config.cases);
    proptest_config.max_shrink_iters = config.max_shrink_iters;
    proptest_config.max_shrink_time = 0;
    proptest_config.failure_persistence = config.persistence.map(|p| Box::new(p) as Box<dyn FailurePersistence>);
    proptest_config.source_file = None;
    proptest_config.result_cache = basic_result_cache;
    // No fork and no timeout: proptest is built without those features (they
    // would pull a second `getrandom` major through `tempfile`), and a case
    // here is a deterministic simulation that ends by itself.
    proptest_config.verbose = 0;
    let mut runner = TestRunner::new_with_rng(proptest_config, rng(config.base_seed));

    let servers = RefCell::new(servers);
    let state = RefCell::new(State::default());
    let result = runner.run(strategy, |plan: Plan| {
        if state.borrow().error.is_some() {
            return Err(TestCaseError::fail("set-up error"));
        }
        let outcome = crate::plan::run(&mut servers.borrow_mut(), &plan);
        let mut st = state.borrow_mut();
        st.calls += 1;
        st.scenario.get_or_insert_with(|| plan.scenario.clone());
        let outcome = match outcome {
            Ok(o) => {
                st.events += o.history.len() as u64;
                o
            }
            Err(e) => {
                st.error = Some(e);
                return Err(TestCaseError::fail("set-up error"));
            }
        };
        match outcome.violations.into_iter().find(|v| v.invariant == *invariant) {
            None => Ok(()),
            Some(v) => {
                if st.first.is_none() {
                    st.first = Some((st.calls, plan.clone(), Instant::now()));
                }
                let why = format!("{v}");
                st.failing.insert(plan.to_json(), v);
                Err(TestCaseError::fail(why))
            }
        }
    });
    let state = state.into_inner();
    if let Some(e) = state.error {
        return Err(e);
    }
    let finding = match result {
        Ok(()) => None,
        Err(TestError::Abort(why)) => {
            return Err(SetupError::SearchAborted { reason: why.to_string() });
        }
        Err(TestError::Fail(_, shrunk)) => {
            let (cases, first, found_at) = state.first.ok_or_else(|| SetupError::SearchAborted {
                reason: "proptest reported a failure no case produced".into(),
            })?;
            let violation = match state.failing.get(&shrunk.to_json()) {
                Some(v) => v.clone(),
                None => {
                    return Err(SetupError::SearchAborted { reason: "the shrunk plan was never seen failing".into() })
                }
            };
            Some(Finding {
                cases,
                from_regression: cases <= persisted,
                first,
                shrink_runs: state.calls - cases,
                violation,
                shrunk,
                to_first: found_at - started,
                total: started.elapsed(),
            })
        }
    };
    let servers = servers.into_inner();
    let finding = match finding {
        Some(mut f) if minimize_budget > 0 => {
            let (plan, violation, runs) =
                minimize(f.shrunk.clone(), f.violation.clone(), invariant, servers, minimize_budget)?;
            f.shrunk = plan;
            f.violation = violation;
            f.shrink_runs += runs;
            f.total = started.elapsed();
            Some(f)
        }
        other => other,
    };
    let cases_run = finding.as_ref().map_or(state.calls, |f| f.cases);
    Ok(SearchReport {
        scenario: state.scenario.unwrap_or_default(),
        invariant: invariant.clone(),
        cases_run,
        wall: started.elapsed(),
        events: state.events,
        finding,
    })
}

/// Searches for a target's violation.
pub fn find(target: &SearchTarget, servers: &mut Servers, config: SearchConfig) -> Result<SearchReport, SetupError> {
    search(&(target.space)().plans(), target.invariant, servers, config)
}

/// Checks a property: searches for a violation of its invariant.
pub fn check(property: &PropertySpec, servers: &mut Servers, config: SearchConfig) -> Result<SearchReport, SetupError> {
    search(&(property.space)().plans(), property.invariant, servers, config)
}

/// Runs a plan once and returns the violations of `invariant` it produces.
pub fn replay(plan: &Plan, invariant: &Invariant, servers: &mut Servers) -> Result<Vec<Violation>, SetupError> {
    let outcome = crate::plan::run(servers, plan)?;
    Ok(outcome.violations.into_iter().filter(|v| v.invariant == *invariant).collect())
}
