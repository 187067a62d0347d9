//! The greedy pass after proptest's shrinking: one fault or one actor
//! fewer at a time, while the plan still violates.

use super::*;
use crate::checker::{Invariant, Violation};
use crate::plan::Plan;
use crate::servers::{Servers, SetupError};

/// Every plan one step smaller than `plan` ([`Plan::size`]): one nemesis
/// fault removed, one workload-injected fault removed, or one actor fewer
/// (for Redlock, each client in turn). Simplest-first order: faults before
/// actors.
pub fn one_smaller(plan: &Plan) -> Vec<Plan> {
    let mut out = Vec::new();
    for i in 0..plan.schedule.faults.len() {
        let mut p = plan.clone();
        p.schedule.faults.remove(i);
        out.push(p);
    }
    out.extend(plan.smaller_workloads());
    out.into_iter().map(Plan::normalize).filter(|p| p.validate().is_ok() && p.size() < plan.size()).collect()
}

/// A greedy pass after proptest's shrinking, aimed squarely at the size: it
/// tries [`one_smaller`] plans, keeps the first that still violates
/// `invariant`, and repeats, within `budget` runs. proptest shrinks the
/// schedule before the workload and never comes back to it, so an actor
/// removed late can leave a fault that is no longer needed; this finds it.
/// Returns the plan, its violation and the runs spent.
pub fn minimize(
    plan: Plan,
    violation: Violation,
    invariant: &Invariant,
    servers: &mut Servers,
    budget: u32,
) -> Result<(Plan, Violation, u32), SetupError> {
    let (mut plan, mut violation, mut runs) = (plan, violation, 0u32);
    'outer: loop {
        for candidate in one_smaller(&plan) {
            if runs >= budget {
                break 'outer;
            }
            runs += 1;
            if let Some(v) = replay(&candidate, invariant, servers)?.into_iter().next() {
                plan = candidate;
                violation = v;
                continue 'outer;
            }
        }
        break;
    }
    Ok((plan, violation, runs))
}
