//! What a run may draw: the one generator of plans.
//!
//! Every run is a [`Plan`], and every plan comes from a [`Space`] through
//! one proptest strategy ([`Space::plans`]): its nemesis faults from the
//! [`FaultSpace`] (the only fault generator), its workload from its
//! family's space ([`Family::plans`]). Two callers draw from it:
//!
//! - a **seed** (`explore`, `replay --seed`, `report`, the tests): seed N's
//!   plan is the strategy's value under proptest's RNG seeded from N
//!   ([`Space::draw`], [`rng`]), from the scenario's own space
//!   ([`crate::scenarios::Scenario::space`]);
//! - the **property search**: proptest's runner draws cases from a
//!   target's space with its own base seed, and shrinks what fails.
//!
//! So a seed run and a search case are the same kind of thing — a plan —
//! and `replay --plan` reruns either. ADR 0011 says why the seed goes
//! through proptest rather than a second, hand-written generator.
//!
//! Shrinking is shaped so that simpler means what a reader wants: the fault
//! list is a `Vec` (shrinks by dropping faults, and is shrunk first),
//! optional workload faults are `Option`s (shrink to `None`), every range
//! shrinks towards its first bound, and the seed is never shrunk.

use proptest::prelude::*;
use proptest::strategy::{BoxedStrategy, ValueTree};
use proptest::test_runner::{Config, TestRunner};

use crate::family::{Family, Workloads};
use crate::fault_space::{rng, FaultSpace};
use crate::plan::Plan;
use crate::scenarios::Scenario;

/// A space of plans: a scenario, its nemesis faults and its workloads.
#[derive(Debug, Clone)]
pub struct Space {
    /// Registry name.
    pub scenario: &'static str,
    /// Nemesis faults.
    pub faults: FaultSpace,
    /// Workloads (and the faults they place).
    pub workload: Workloads,
}

impl Space {
    /// `scenario`'s plans with `faults` and family `F`'s `workload` space.
    pub fn of<F: Family>(scenario: &'static str, faults: FaultSpace, workload: &F::Space) -> Space {
        Space { scenario, faults, workload: Workloads::of::<F>(workload) }
    }

    /// The largest number of actors a plan of this space can have.
    pub fn max_actors(&self) -> u32 {
        self.workload.max_actors
    }

    /// The strategy of plans in this space: the one generator (module docs).
    pub fn plans(&self) -> BoxedStrategy<Plan> {
        let scenario = self.scenario.to_string();
        let nodes = crate::scenarios::find(self.scenario).map_or(1, |s| s.nodes());
        let schedules = self.faults.schedules(self.max_actors(), nodes);
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
    /// from `seed` ([`rng`]), with `seed` as what the plan leaves to chance.
    pub fn draw(&self, seed: u64) -> Result<Plan, String> {
        let mut runner = TestRunner::new_with_rng(Config::default(), rng(seed));
        let tree = self.plans().new_tree(&mut runner).map_err(|e| format!("{}: no plan drawn: {e}", self.scenario))?;
        Ok(Plan { seed, ..tree.current() })
    }
}

// A registry row's space is built here, not in the registry, so that the
// registry does not depend on plan spaces (ADR 0009).
impl Scenario {
    /// What its seeds draw (`crate::space`): the family's seed workloads
    /// and nemesis faults for this variant.
    pub fn space(&self) -> Space {
        let (workload, faults) = self.runs.seeds();
        Space { scenario: self.name, faults, workload }
    }
}
