//! What a run may draw: a scenario, its nemesis faults and its workloads.
//!
//! Every run is a [`crate::plan::Plan`], and every plan comes from a
//! [`Space`] through one proptest strategy (`Space::plans`, in
//! `crate::plan`): its nemesis faults from the [`FaultSpace`] (the only
//! fault generator), its workload from its family's space
//! ([`Family::plans`]). Two callers draw from it:
//!
//! - a **seed** (`explore`, `replay --seed`, `report`, the tests): seed N's
//!   plan is the strategy's value under proptest's RNG seeded from N, from
//!   the scenario's own space ([`Scenario::space`]);
//! - the **property search**: proptest's runner draws cases from a
//!   target's space with its own base seed, and shrinks what fails.
//!
//! A space is data, built from its scenario's registry row, so it knows
//! its scenario's node count without looking the registry up; it sits
//! below the families, which build their search spaces from their own rows
//! (ADR 0009). ADR 0011 says why the seed goes through proptest rather
//! than a second, hand-written generator.

use crate::family::{Family, Workloads};
use crate::fault_space::FaultSpace;
use crate::scenario::Scenario;

/// A space of plans: a scenario, its nemesis faults and its workloads.
#[derive(Debug, Clone)]
pub struct Space {
    /// Registry name.
    pub scenario: &'static str,
    /// Redis nodes the scenario's runs use (nemesis faults target them).
    pub nodes: u32,
    /// Nemesis faults.
    pub faults: FaultSpace,
    /// Workloads (and the faults they place).
    pub(crate) workload: Workloads,
}

impl Space {
    /// `scenario`'s plans with `faults` and family `F`'s `workload` space.
    pub fn of<F: Family>(scenario: &Scenario, faults: FaultSpace, workload: &F::Space) -> Space {
        Space { scenario: scenario.name, nodes: scenario.nodes(), faults, workload: Workloads::of::<F>(workload) }
    }

    /// The largest number of actors a plan of this space can have.
    pub fn max_actors(&self) -> u32 {
        self.workload.max_actors
    }
}

impl Scenario {
    /// What its seeds draw: the family's seed workloads and nemesis faults
    /// for this variant.
    pub fn space(&self) -> Space {
        let (workload, faults) = self.runs.seeds();
        Space { scenario: self.name, nodes: self.nodes(), faults, workload }
    }
}
