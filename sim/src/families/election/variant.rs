//! Which election is under test: the family's variants (one per
//! scenario) and its [`Family`] implementation, the registry's handle on
//! seeds, plans, runs and shrinking.

use proptest::strategy::BoxedStrategy;
use serde::Serialize;

use super::plan::{ElectionPlan, LeaderStall};
use super::run::run_planned;
use super::space::{seed_faults, ElectionSpace, LeaderFaults};
use crate::family::Family;
use crate::fault_space::FaultSpace;
use crate::nemesis::{Fault, Schedule};
use crate::outcome::Outcome;
use crate::servers::{Servers, SetupError};

/// Which election is under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) enum ElectionVariant {
    /// [`Election`](redis_primitives::election::Election) with self-fencing
    /// ([`Demotion::AtDeadline`](redis_primitives::election::Demotion::AtDeadline)) and fenced writes.
    Election,
    /// [`Election`](redis_primitives::election::Election) with the reference's
    /// [`Demotion::OnRenewTick`](redis_primitives::election::Demotion::OnRenewTick), fenced writes.
    RenewOnly,
    /// [`NaiveElection`](redis_primitives_naive::NaiveElection): no epoch, unfenced writes.
    NoEpoch,
    /// `election-failover`: [`Election`](redis_primitives::election::Election) on a primary whose replica is
    /// promoted after a replication cut (`families/lock/variants/failover.rs` has
    /// the story): epochs are reissued.
    Failover,
    /// `election-failover-acknowledged`: the same, campaigns acknowledged
    /// by the replica (`WAIT 1`).
    FailoverAcknowledged,
    /// `election-failover-floored`: the same, time-floored epochs.
    FailoverFloored,
}

impl ElectionVariant {
    /// The scenario name.
    pub(crate) fn scenario(self) -> &'static str {
        match self {
            ElectionVariant::Election => "election",
            ElectionVariant::RenewOnly => "election-renew-only",
            ElectionVariant::NoEpoch => "election-no-epoch",
            ElectionVariant::Failover => "election-failover",
            ElectionVariant::FailoverAcknowledged => "election-failover-acknowledged",
            ElectionVariant::FailoverFloored => "election-failover-floored",
        }
    }

    /// Whether nodes demote themselves at the lease's deadline
    /// ([`Demotion::AtDeadline`](redis_primitives::election::Demotion::AtDeadline), and what is judged of it).
    pub(super) fn at_deadline(self) -> bool {
        matches!(
            self,
            ElectionVariant::Election
                | ElectionVariant::Failover
                | ElectionVariant::FailoverAcknowledged
                | ElectionVariant::FailoverFloored
        )
    }

    /// Whether the election's node has a replica, cut and failed over.
    pub(super) fn fails_over(self) -> bool {
        matches!(
            self,
            ElectionVariant::Failover | ElectionVariant::FailoverAcknowledged | ElectionVariant::FailoverFloored
        )
    }
}

impl Family for ElectionVariant {
    type Plan = ElectionPlan;
    type Space = ElectionSpace;
    type Op = crate::families::election::ElectionOp;
    const NAME: &'static str = "election";

    fn nodes(&self) -> u32 {
        1
    }

    fn seeds(&self) -> (ElectionSpace, FaultSpace) {
        if self.fails_over() {
            // The cut and the failover, the reference's settings, and the
            // leader stalling past its lease inside the cut: its successor's
            // epoch reaches the primary only.
            let space = ElectionSpace {
                leader: LeaderFaults::Stall(LeaderStall { at: 900, ms: 500 }),
                placed: crate::families::lock::variants::failover::cut_and_failover_faults(),
                ..ElectionSpace::seeds()
            };
            return (space, seed_faults());
        }
        (ElectionSpace::seeds(), seed_faults())
    }

    fn plans(space: &ElectionSpace) -> BoxedStrategy<(ElectionPlan, Vec<Fault>)> {
        space.plans()
    }

    fn max_actors(space: &ElectionSpace) -> u32 {
        space.nodes.1
    }

    fn run(
        &self,
        servers: &mut Servers,
        seed: u64,
        plan: &ElectionPlan,
        schedule: Schedule,
    ) -> Result<Outcome, SetupError> {
        run_planned(*self, servers, seed, plan, schedule)
    }

    fn actors(plan: &ElectionPlan) -> u32 {
        plan.nodes
    }

    fn injected_faults(plan: &ElectionPlan) -> usize {
        usize::from(plan.stall.is_some()) + usize::from(plan.stop_at.is_some())
    }

    fn validate(plan: &ElectionPlan) -> Result<(), String> {
        // The builder's rule: renew at most half of the lease less its
        // drift allowance (1 % + 2 ms).
        let usable = (plan.lease_ms * 99 / 100).saturating_sub(2);
        if plan.renew_ms == 0 || plan.renew_ms * 2 > usable || plan.campaign_ms == 0 {
            return Err("election needs 0 < 2 * renew_ms <= lease_ms - 1% - 2ms and campaign_ms > 0".into());
        }
        Ok(())
    }

    fn smaller(plan: &ElectionPlan) -> Vec<ElectionPlan> {
        let mut out = Vec::new();
        if plan.stall.is_some() {
            out.push(ElectionPlan { stall: None, ..plan.clone() });
        }
        if plan.stop_at.is_some() {
            out.push(ElectionPlan { stop_at: None, ..plan.clone() });
        }
        if plan.nodes > 1 {
            out.push(ElectionPlan { nodes: plan.nodes - 1, ..plan.clone() });
        }
        out
    }

    fn tenures(&self, events: &[crate::history::Event]) -> Vec<crate::timeline::Tenure> {
        super::tenures::of(events)
    }
}
