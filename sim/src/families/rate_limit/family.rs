//! One rate-limit run from its plan to its verdict (the world, then the
//! checks and situations that judge it), and the [`Family`] impl through
//! which the registry, the seeds and the search use it.

use proptest::strategy::BoxedStrategy;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::actors::client;
use super::checks::window::{self, Allowance};
use super::checks::{exact, liveness, planted};
use super::limiter::Setup;
use super::metrics::{self, WINDOW_FILL};
use super::op::RateLimitOp;
use super::plan::{seed_faults, Burst, RateLimitPlan, RateLimitSpace};
use super::probes::second_edge;
use super::situations::reached;
use super::{RateLimitVariant, DRAIN_MS};
use crate::checker::key_lifetimes::{self, Life, Rule};
use crate::family::Family;
use crate::fault_space::FaultSpace;
use crate::history::Event;
use crate::nemesis::{Fault, Schedule};
use crate::outcome::{outcome_from, Outcome, SituationName};
use crate::servers::{Servers, SetupError};
use crate::stats::{Bound, Histograms};
use crate::world::{derive_seed, World, WorldConfig};

/// Runs an explicit plan of a rate-limit scenario.
pub(crate) fn run_planned(
    variant: RateLimitVariant,
    servers: &mut Servers,
    seed: u64,
    plan: &RateLimitPlan,
    schedule: Schedule,
) -> Result<Outcome, SetupError> {
    let config = WorldConfig::new(seed);
    let epoch_ms = config.epoch_unix_ms;
    let setup = Setup { epoch_ms, max: plan.limit, window_ms: plan.window_ms };
    let correct = matches!(variant, RateLimitVariant::Log | RateLimitVariant::Counter);
    // One SCRIPT FLUSH at a seeded moment (correct limiters only: the naive
    // ones run no script), by the second client if there is one.
    let flush_at =
        correct.then(|| StdRng::seed_from_u64(derive_seed(seed, "rate-limit-flush")).random_range(200..=2800));
    let flusher = plan.clients.min(2) - 1;
    let mut world = World::new(servers, config)?;
    for i in 0..plan.clients {
        let mut bursts: Vec<Burst> = plan.bursts.iter().filter(|b| b.client == i).copied().collect();
        bursts.sort_by_key(|b| b.at);
        let flush = if i == flusher { flush_at } else { None };
        world.actor(format!("client-{i}"), move |actor| client(actor, variant, bursts, setup, flush));
    }
    if correct {
        world.actor("clock-prober", move |actor| second_edge(actor, variant, setup));
    }
    let last_heal = schedule.faults.iter().map(|f| f.end()).max().unwrap_or(0);
    world.nemesis(schedule);
    let run = world.run()?;
    let mut outcome = outcome_from(&run, Vec::new());
    let allowance = match variant {
        // The bound documented (and proved) in src/rate_limit/sliding_counter.rs,
        // `SlidingWindowCounter::worst_case_admissions`.
        RateLimitVariant::Counter => Allowance::UpTo((2 * plan.limit).saturating_sub(1)),
        _ => Allowance::Exact,
    };
    // The windowed count judges the shared limited name. The prober's keys
    // are judged by `rate-limit-exact`, which also models what a pinned
    // instant cannot: the key's expiry runs on the server's own clock, so an
    // idle probe key may expire before its pinned window ends.
    let shared: Vec<Event> = outcome
        .history
        .iter()
        .filter(|e| !matches!(e.op.family(), Some(RateLimitOp::RateLimit { key, .. }) if key.starts_with("probe-")))
        .cloned()
        .collect();
    let report = window::check(&shared, allowance);
    let mut h = Histograms::new();
    metrics::record_admissions_per_window(&outcome.history, &mut h);
    metrics::record_window_fill(&shared, &mut h);
    outcome.violations.extend(report.violations);
    if correct {
        let algorithm = match variant {
            RateLimitVariant::Counter => exact::Algorithm::Counter { epoch_ms },
            _ => exact::Algorithm::Log,
        };
        let config = exact::Config { algorithm, last_heal_ms: last_heal, drain_ms: DRAIN_MS, epoch_ms };
        let exact = exact::check(&outcome.history, &run.executions[0], config);
        outcome.violations.extend(exact.violations);
        outcome.violations.extend(exact::check_accessors(&outcome.history));
        // An idle key goes once it can no longer count: the log's newest
        // entry leaves the window after W, the counter's bucket matters
        // until the end of the next one.
        let rule = match variant {
            RateLimitVariant::Counter => Rule {
                prefix: "rate-counter:{",
                suffix: "}",
                life: Life::AtMost(2 * plan.window_ms),
                what: "limiter key",
            },
            _ => Rule { prefix: "rate-log:{", suffix: "}", life: Life::AtMost(plan.window_ms), what: "limiter key" },
        };
        // The planter's keys are deleted after each call; one a fault kept
        // from being deleted is planted, not the limiter's.
        outcome.violations.extend(key_lifetimes::check(0, &run.keys_at_end[0], &[rule], &["{planted-"]));
        let (state, refused) = planted::check(&outcome.history);
        outcome.violations.extend(state);
        if refused {
            outcome.reach(SituationName::new("planted-state-refused"));
        }
        let settle = last_heal + DRAIN_MS;
        outcome.violations.extend(liveness::check(&outcome.history, settle));
        for s in reached(&outcome.history, setup, settle) {
            outcome.reach(s);
        }
    }
    outcome.histograms = h;
    Ok(outcome)
}

impl Family for RateLimitVariant {
    type Plan = RateLimitPlan;
    type Space = RateLimitSpace;
    type Op = crate::families::rate_limit::RateLimitOp;
    const NAME: &'static str = "rate-limit";

    fn nodes(&self) -> u32 {
        1
    }

    fn seeds(&self) -> (RateLimitSpace, FaultSpace) {
        (RateLimitSpace::seeds(), seed_faults())
    }

    fn bounds(&self) -> Vec<Bound> {
        // The configured limit, for every variant, also the counter, which
        // documents (and is checked against) a higher worst case: the plot
        // shows how far past its limit each variant goes. On the fill, not
        // the raw count: the correct variants' probes use other limits.
        vec![Bound { histogram: WINDOW_FILL, value: 100, label: "the limit (100 %)".to_string() }]
    }

    fn plans(space: &RateLimitSpace) -> BoxedStrategy<(RateLimitPlan, Vec<Fault>)> {
        space.plans()
    }

    fn max_actors(space: &RateLimitSpace) -> u32 {
        space.clients.1
    }

    fn run(
        &self,
        servers: &mut Servers,
        seed: u64,
        plan: &RateLimitPlan,
        schedule: Schedule,
    ) -> Result<Outcome, SetupError> {
        run_planned(*self, servers, seed, plan, schedule)
    }

    fn actors(plan: &RateLimitPlan) -> u32 {
        plan.clients
    }

    fn validate(plan: &RateLimitPlan) -> Result<(), String> {
        if plan.limit == 0 || plan.window_ms == 0 {
            return Err("limit and window_ms must be positive".into());
        }
        if let Some(b) = plan.bursts.iter().find(|b| b.client >= plan.clients) {
            return Err(format!("burst {b:?}: no such client"));
        }
        Ok(())
    }

    fn normalize(plan: &mut RateLimitPlan, actors: u32) {
        for b in &mut plan.bursts {
            b.client %= actors.max(1);
        }
        plan.bursts.sort_by_key(|b| (b.at, b.client));
    }

    fn smaller(plan: &RateLimitPlan) -> Vec<RateLimitPlan> {
        if plan.clients <= 1 {
            return Vec::new();
        }
        vec![RateLimitPlan { clients: plan.clients - 1, ..plan.clone() }]
    }
}
