//! The one generator of plans: [`Space::plans`], a proptest strategy, and
//! [`Space::draw`], a seed's value of it.
//!
//! A seed run and a search case are the same kind of thing — a plan — and
//! `replay --plan` reruns either (see [`crate::space`] for the two
//! callers). It lives above the registry because a drawn plan is
//! normalised by its scenario's family, which a plan finds by name.
//!
//! Shrinking is shaped so that simpler means what a reader wants: the fault
//! list is a `Vec` (shrinks by dropping faults, and is shrunk first),
//! optional workload faults are `Option`s (shrink to `None`), every range
//! shrinks towards its first bound, and the seed is never shrunk.

use proptest::prelude::*;
use proptest::strategy::{BoxedStrategy, ValueTree};
use proptest::test_runner::{Config, TestRunner};

use crate::fault_space::rng;
use crate::plan::Plan;
use crate::space::Space;

impl Space {
    /// The strategy of plans in this space: the one generator (module docs).
    pub fn plans(&self) -> BoxedStrategy<Plan> {
        let scenario = self.scenario.to_string();
        let schedules = self.faults.schedules(self.max_actors(), self.nodes);
        // Tuple order is shrink order: faults first, then the workload.
        (schedules, self.workload.strategy.clone(), any::<u64>().no_shrink())
            .prop_map(move |(mut schedule, (workload, placed), seed)| {
                // A placed fault is the shape of the workload: a drawn one
                // on the same switch at the same time gives way to it.
                schedule.faults.retain(|f| !placed.iter().any(|p| p.collides(f)));
                schedule.faults.splice(0..0, placed);
                Plan { scenario: scenario.clone(), seed, workload, schedule }.normalize()
            })
            .boxed()
    }

    /// Seed `seed`'s plan: the strategy's value under proptest's RNG seeded
    /// from `seed` (`rng`), with `seed` as what the plan leaves to chance.
    pub fn draw(&self, seed: u64) -> Result<Plan, String> {
        let mut runner = TestRunner::new_with_rng(Config::default(), rng(seed));
        let tree = self.plans().new_tree(&mut runner).map_err(|e| format!("{}: no plan drawn: {e}", self.scenario))?;
        Ok(Plan { seed, ..tree.current() })
    }
}
