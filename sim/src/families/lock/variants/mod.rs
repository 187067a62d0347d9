//! The lock family's variants ([`LockVariant`], one registry row each) and
//! the [`Family`] impl they share. Each file below is one variant's set of
//! [`LockWorkload`] settings (a lock, a store, a fault every seed gets)
//! and says what that variant breaks or holds; `lock` and `lock-floored`
//! are [`LockWorkload::lock`] itself.

pub(crate) mod counter_loss;
pub(crate) mod failover;
pub(crate) mod fencing;
pub(crate) mod naive;
pub(crate) mod unfenced;

use proptest::strategy::BoxedStrategy;

use super::{LockPlan, LockSpace, LockWorkload, Protection};
use crate::family::Family;
use crate::fault_space::FaultSpace;
use crate::nemesis::{Fault, Schedule};
use crate::outcome::Outcome;
use crate::servers::{Servers, SetupError};

/// Which lock-family scenario: one set of [`LockWorkload`] settings each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LockVariant {
    /// `lock`: `Lock`, fenced store, careful holders, every public operation.
    Lock,
    /// `lock-naive`: `NaiveLock` (bare `DEL` release), unfenced store.
    Naive,
    /// `fencing`: `Lock` and `FencedStore`, holders that never check their deadline.
    Fencing,
    /// `fencing-unfenced`: `Lock` and the unfenced store.
    Unfenced,
    /// `counter-loss`: `Lock` across a restart without persistence.
    CounterLoss,
    /// `counter-loss-floored`: the same with time-floored tokens.
    CounterLossFloored,
    /// `lock-floored`: the `lock` scenario with time-floored tokens.
    Floored,
    /// `lock-failover`: `Lock` on a primary whose replica is promoted after
    /// a replication cut.
    Failover,
    /// `lock-failover-acknowledged`: the same with acknowledged acquires.
    FailoverAcknowledged,
    /// `lock-failover-floored`: the same with time-floored tokens.
    FailoverFloored,
    /// `lock-failover-clock-back`: time-floored tokens, and the promoted
    /// server's clock is behind.
    FailoverClockBack,
}

impl LockVariant {
    /// The variant's settings.
    pub(crate) fn workload(self) -> LockWorkload {
        match self {
            LockVariant::Lock => LockWorkload::lock(),
            LockVariant::Naive => naive::workload(),
            LockVariant::Fencing => fencing::workload(),
            LockVariant::Unfenced => unfenced::workload(),
            LockVariant::CounterLoss => counter_loss::workload(),
            LockVariant::CounterLossFloored => counter_loss::floored(),
            LockVariant::Floored => LockWorkload { protection: Protection::TimeFloored, ..LockWorkload::lock() },
            LockVariant::Failover => failover::workload(),
            LockVariant::FailoverAcknowledged => failover::acknowledged(),
            LockVariant::FailoverFloored => failover::floored(),
            LockVariant::FailoverClockBack => failover::clock_back(),
        }
    }
}

impl Family for LockVariant {
    type Plan = LockPlan;
    type Space = LockSpace;
    type Op = crate::families::lock::LockOp;
    const NAME: &'static str = "lock";

    fn nodes(&self) -> u32 {
        self.workload().nodes as u32
    }

    fn seeds(&self) -> (LockSpace, FaultSpace) {
        let w = self.workload();
        (LockSpace::seeds(&w), w.faults)
    }

    fn plans(space: &LockSpace) -> BoxedStrategy<(LockPlan, Vec<Fault>)> {
        space.plans()
    }

    fn max_actors(space: &LockSpace) -> u32 {
        space.clients.1
    }

    fn run(
        &self,
        servers: &mut Servers,
        seed: u64,
        plan: &LockPlan,
        schedule: Schedule,
    ) -> Result<Outcome, SetupError> {
        self.workload().run_planned(servers, seed, plan, schedule)
    }

    fn actors(plan: &LockPlan) -> u32 {
        plan.clients
    }

    fn injected_faults(plan: &LockPlan) -> usize {
        usize::from(plan.stall.is_some_and(|s| s.ms > 0))
    }

    fn validate(plan: &LockPlan) -> Result<(), String> {
        if plan.ttl_ms == 0 {
            return Err("ttl_ms must be positive".into());
        }
        if let Some(s) = plan.stall {
            if s.client >= plan.clients || s.hold == 0 {
                return Err(format!("stall {s:?}: no such client or hold (holds count from 1)"));
            }
        }
        Ok(())
    }

    fn normalize(plan: &mut LockPlan, actors: u32) {
        if let Some(s) = &mut plan.stall {
            s.client %= actors.max(1);
            s.hold = s.hold.max(1);
        }
    }

    fn smaller(plan: &LockPlan) -> Vec<LockPlan> {
        let mut out = Vec::new();
        if plan.stall.is_some() {
            out.push(LockPlan { stall: None, ..plan.clone() });
        }
        if plan.clients > 1 {
            out.push(LockPlan { clients: plan.clients - 1, ..plan.clone() });
        }
        out
    }

    fn tenures(&self, events: &[crate::history::Event]) -> Vec<crate::timeline::Tenure> {
        super::tenures::of(events)
    }
}
