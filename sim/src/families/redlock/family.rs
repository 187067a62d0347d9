//! One Redlock run from its plan to its verdict (the world, then the
//! family's checks with what they need to know about the run), and the
//! [`Family`] impl through which the registry, the seeds and the search
//! use it.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use core::time::Duration;
use proptest::strategy::BoxedStrategy;
use redis_primitives::Drift;

use super::checks::calls::{FaultWindow, Liveness, RedlockSetup};
use super::checks::{liveness, mutual_exclusion, rounds, validity, votes};
use super::client::client;
use super::op::RedlockOp;
use super::plan::{seed_faults, RedlockPlan, RedlockSpace};
use super::timing::Timing;
use super::{refusal, RedlockVariant, LIVENESS_SLACK_MS, MASTERS};
use crate::checker::key_lifetimes::{Life, Rule};
use crate::family::Family;
use crate::fault_space::FaultSpace;
use crate::nemesis::{Fault, FaultClass, FaultKind, Schedule, Target};
use crate::outcome::{outcome_from, Outcome};
use crate::servers::{Servers, SetupError};
use crate::stats::{self, Histograms};
use crate::world::{World, WorldConfig};

/// What the Redlock checkers need to know about a run of `plan` under
/// `schedule`.
fn setup_of(variant: RedlockVariant, plan: &RedlockPlan, schedule: &Schedule) -> RedlockSetup {
    let ttl = Duration::from_millis(plan.ttl_ms);
    let mut setup = RedlockSetup::new(MASTERS as u32, plan.ttl_ms, Drift::DEFAULT.allowance(ttl).as_millis() as u64);
    let timeout = |i: usize| plan.master_timeouts_ms.get(i).copied().unwrap_or(plan.master_timeout_ms);
    for i in 0..plan.starts.len() {
        setup.master_timeout_ms.insert(format!("client-{i}"), timeout(i));
    }
    for f in &schedule.faults {
        if let (FaultKind::ClientPause, Target::Client(c)) = (f.kind, f.target) {
            setup.pauses.push((format!("client-{c}"), f.at, f.end()));
        }
        let (client, node) = match f.target {
            Target::Client(c) => (Some(format!("client-{c}")), None),
            Target::Link { client, node } => (Some(format!("client-{client}")), Some(node as usize)),
            Target::Node(n) => (None, Some(n as usize)),
        };
        setup.faults.push(FaultWindow { from: f.at, to: f.end(), client, node });
    }
    setup.clocks_trusted =
        !schedule.faults.iter().any(|f| matches!(f.kind.class(), FaultClass::ClockStep | FaultClass::ServerRestart));
    if variant == RedlockVariant::Correct && setup.clocks_trusted {
        let heal_at = schedule.faults.iter().map(Fault::end).max().unwrap_or(0);
        let longest = (0..plan.starts.len()).map(timeout).max().unwrap_or(plan.master_timeout_ms);
        let bound = plan.ttl_ms + longest + LIVENESS_SLACK_MS;
        // Only when the clients are still trying at the deadline.
        if heal_at + bound + 50 <= plan.length_ms {
            setup.liveness = Some(Liveness { heal_at, bound });
        }
    }
    setup
}

/// Runs an explicit plan of a Redlock scenario.
pub(crate) fn run_planned(
    variant: RedlockVariant,
    servers: &mut Servers,
    seed: u64,
    plan: &RedlockPlan,
    schedule: Schedule,
) -> Result<Outcome, SetupError> {
    let setup = setup_of(variant, plan, &schedule);
    let config = WorldConfig::new(seed).nodes(MASTERS);
    let mut world = World::new(servers, config)?;
    let first_grant = Arc::new(AtomicBool::new(false));
    for (i, start) in plan.starts.iter().enumerate() {
        let start = *start;
        let timing = Timing {
            ttl_ms: plan.ttl_ms,
            master_timeout_ms: plan.master_timeouts_ms.get(i).copied().unwrap_or(plan.master_timeout_ms),
            length_ms: plan.length_ms,
        };
        let flag = Arc::clone(&first_grant);
        world.actor(format!("client-{i}"), move |actor| client(actor, variant, start, flag, timing));
    }
    world.nemesis(schedule);
    let run = world.run()?;
    let mut outcome = outcome_from(&run, Vec::new());
    let events = &outcome.history;
    let mut violations = mutual_exclusion::check(events);
    violations.extend(validity::check(events, &setup));
    violations.extend(votes::check(events, &setup));
    violations.extend(rounds::check(events, &setup));
    violations.extend(liveness::check(events, &setup));
    if variant == RedlockVariant::Correct {
        let rule = Rule { prefix: "redlock:{", suffix: "}", life: Life::AtMost(plan.ttl_ms), what: "Redlock key" };
        for (node, keys) in run.keys_at_end.iter().enumerate() {
            let rules = [super::readback::KEY_RULE, rule, refusal::KEY_RULE];
            violations.extend(crate::checker::key_lifetimes::check(node, keys, &rules, &[]));
        }
    }
    outcome.violations.extend(violations);
    let mut h = Histograms::new();
    stats::record_latency(
        &outcome.history,
        stats::ACQUIRE_LATENCY,
        |op| matches!(op.family(), Some(RedlockOp::RedlockAcquire { .. })),
        &mut h,
    );
    outcome.histograms = h;
    Ok(outcome)
}

impl Family for RedlockVariant {
    type Plan = RedlockPlan;
    type Space = RedlockSpace;
    type Op = crate::families::redlock::RedlockOp;
    const NAME: &'static str = "redlock";

    fn nodes(&self) -> u32 {
        MASTERS as u32
    }

    fn seeds(&self) -> (RedlockSpace, FaultSpace) {
        (RedlockSpace::seeds(*self), seed_faults(*self))
    }

    fn plans(space: &RedlockSpace) -> BoxedStrategy<(RedlockPlan, Vec<Fault>)> {
        space.plans()
    }

    fn max_actors(space: &RedlockSpace) -> u32 {
        space.clients.1
    }

    fn run(
        &self,
        servers: &mut Servers,
        seed: u64,
        plan: &RedlockPlan,
        schedule: Schedule,
    ) -> Result<Outcome, SetupError> {
        run_planned(*self, servers, seed, plan, schedule)
    }

    fn actors(plan: &RedlockPlan) -> u32 {
        plan.starts.len() as u32
    }

    fn validate(plan: &RedlockPlan) -> Result<(), String> {
        if plan.ttl_ms == 0 || plan.master_timeout_ms == 0 || plan.master_timeouts_ms.contains(&0) {
            return Err("ttl_ms and master_timeout_ms must be positive".into());
        }
        Ok(())
    }

    fn smaller(plan: &RedlockPlan) -> Vec<RedlockPlan> {
        if plan.starts.len() <= 1 {
            return Vec::new();
        }
        (0..plan.starts.len())
            .map(|i| {
                let mut p = plan.clone();
                p.starts.remove(i);
                p
            })
            .collect()
    }

    fn tenures(&self, events: &[crate::history::Event]) -> Vec<crate::timeline::Tenure> {
        super::tenures::of(events)
    }
}
