//! One job-queue run from its plan to its verdict (the world with its
//! actors, then the checks), and the [`Family`] impl through which the
//! registry, the seeds and the search use it.

use proptest::strategy::BoxedStrategy;

use super::actors::{auditor, edge, producer, reaper, worker, EDGES};
use super::checks::check;
use super::plan::{template, JobPlan, JobSpace};
use super::{probe, JobQueueVariant, AUDITOR, DOUBLE_RUNS, PRODUCER, SIDE};
use crate::family::Family;
use crate::fault_space::FaultSpace;
use crate::history::Op;
use crate::nemesis::{Fault, Schedule};
use crate::outcome::{outcome_from, Outcome};
use crate::servers::{Servers, SetupError};
use crate::stats::Histograms;
use crate::workload_fault::WorkloadFault;
use crate::world::{together, Process, World, WorldConfig};

/// Runs an explicit plan of a job-queue scenario.
fn run_planned(
    variant: JobQueueVariant,
    servers: &mut Servers,
    seed: u64,
    plan: &JobPlan,
    schedule: Schedule,
) -> Result<Outcome, SetupError> {
    let end = plan.end_ms(&schedule);
    let mut world = World::new(servers, WorldConfig::new(seed))?;
    for i in 0..plan.workers {
        let p = plan.clone();
        world.actor(format!("worker-{i}"), move |actor| worker(actor, variant, p, end));
    }
    // Everything but the workers shares one host: no fault aims at them
    // alone, and each host costs the simulation a tick per millisecond.
    let p = plan.clone();
    world.actor(SIDE, move |actor| {
        let mut processes: Vec<Process> = vec![
            Box::pin(producer(actor.alias(PRODUCER), variant, p.clone())),
            Box::pin(reaper(actor.alias("reaper"), variant, p.clone(), end)),
        ];
        if variant == JobQueueVariant::Fenced {
            processes.push(Box::pin(auditor(actor.alias(AUDITOR), p.clone(), end)));
            processes.push(Box::pin(probe::probe(actor.alias("prober"))));
            for i in 0..EDGES {
                processes.push(Box::pin(edge(actor.alias(format!("edge-{i}")), i, p.lease_ms)));
            }
        }
        together(processes)
    });
    world.nemesis(schedule);
    let run = world.run()?;
    // A worker's own freezes; the probe's held replies are its cases, not faults.
    let stalls = run
        .history
        .events()
        .iter()
        .filter(|e| matches!(e.op, Op::Paused { .. }))
        .filter_map(WorkloadFault::from_event)
        .collect();
    let mut outcome = outcome_from(&run, stalls);
    let judged = check(&outcome.history, variant == JobQueueVariant::Fenced, plan.lease_ms, &run.executions[0]);
    outcome.violations.extend(judged.violations);
    for s in judged.reached {
        outcome.reach(s);
    }
    let mut h = Histograms::new();
    h.declare(DOUBLE_RUNS);
    for extra in judged.double_runs {
        h.record(DOUBLE_RUNS, extra);
    }
    outcome.histograms = h;
    Ok(outcome)
}

impl Family for JobQueueVariant {
    type Plan = JobPlan;
    type Space = JobSpace;
    type Op = crate::families::job_queue::JobOp;
    const NAME: &'static str = "job-queue";

    fn nodes(&self) -> u32 {
        1
    }

    fn seeds(&self) -> (JobSpace, FaultSpace) {
        (JobSpace::seeds(), FaultSpace::client_side(template().length_ms))
    }

    fn plans(space: &JobSpace) -> BoxedStrategy<(JobPlan, Vec<Fault>)> {
        space.plans()
    }

    fn max_actors(space: &JobSpace) -> u32 {
        space.workers.1
    }

    fn run(&self, servers: &mut Servers, seed: u64, plan: &JobPlan, schedule: Schedule) -> Result<Outcome, SetupError> {
        run_planned(*self, servers, seed, plan, schedule)
    }

    fn actors(plan: &JobPlan) -> u32 {
        plan.workers
    }

    fn injected_faults(plan: &JobPlan) -> usize {
        usize::from(plan.stall.is_some())
    }

    fn validate(plan: &JobPlan) -> Result<(), String> {
        if plan.workers == 0 || plan.lease_ms == 0 || plan.reap_every_ms == 0 || plan.work_ms.0 > plan.work_ms.1 {
            return Err("workers, lease_ms and reap_every_ms must be positive and work_ms a range".into());
        }
        match plan.stall {
            Some(s) if s.worker >= plan.workers || s.claim == 0 => Err(format!("stall {s:?}: no such worker or claim")),
            _ => Ok(()),
        }
    }

    fn normalize(plan: &mut JobPlan, actors: u32) {
        if let Some(s) = &mut plan.stall {
            s.worker %= actors.max(1);
        }
    }

    fn smaller(plan: &JobPlan) -> Vec<JobPlan> {
        let mut out = Vec::new();
        if plan.stall.is_some() {
            out.push(JobPlan { stall: None, ..plan.clone() });
        }
        if plan.jobs > 1 {
            out.push(JobPlan { jobs: plan.jobs / 2, ..plan.clone() });
        }
        out
    }
}
