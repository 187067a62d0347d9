//! Running one election plan: the world (the nodes, the reader, the
//! nemesis), the faults aimed at its leaders, the measures taken of its
//! history, and the outcome the family's checks and situations complete.

use std::sync::{Arc, Mutex};

use super::actor::node_actor;
use super::aimed::{aim, Aimed};
use super::judge::{judge, Evidence};
use super::markers::Marker;
use super::plan::{ElectionPlan, LeaderStall, SLOW_RENEWALS_MS};
use super::reader::final_read;
use super::reigns::{record_split_brain, time_to_new_leader, FAILOVER, HANDOVER};
use super::situations::{reach_after_failover, reach_from_history};
use super::{ElectionVariant, ELECTION_NAME};
use crate::nemesis::Schedule;
use crate::outcome::{outcome_from, Outcome};
use crate::servers::{Servers, SetupError};
use crate::stats::Histograms;
use crate::workload_fault::{WorkloadFault, WorkloadFaultKind, WorkloadTarget};
use crate::world::{RunOutcome, World, WorldConfig};

fn world_config(seed: u64, variant: ElectionVariant) -> WorldConfig {
    let config = WorldConfig::new(seed);
    if variant.fails_over() {
        config.replicas(0, 1)
    } else {
        config
    }
}

/// Runs one plan; returns the world's outcome and the workload's markers.
pub(super) fn run_plan(
    servers: &mut Servers,
    seed: u64,
    variant: ElectionVariant,
    plan: &ElectionPlan,
    config: WorldConfig,
    schedule: Schedule,
    aimed: Aimed,
) -> Result<(RunOutcome, Vec<Marker>), SetupError> {
    let markers = Arc::new(Mutex::new(Vec::new()));
    let mut world = World::new(servers, config)?;
    for i in 0..plan.nodes {
        let plan = plan.clone();
        let markers = Arc::clone(&markers);
        world.actor(format!("node-{i}"), move |actor| node_actor(actor, variant, plan, aimed, markers));
    }
    if variant != ElectionVariant::NoEpoch {
        let read_at = plan.length_ms + 200;
        // The reader's index: it comes after the nodes.
        let faults = schedule.spans_reaching(plan.nodes);
        let ack_at = (variant == ElectionVariant::FailoverAcknowledged)
            .then(|| crate::probes::ack::send_at(&schedule, 0, Some(plan.nodes), crate::families::lock::ACK_TIMEOUT_MS))
            .flatten();
        world.actor("reader", move |actor| final_read(actor, read_at, faults, ack_at));
    }
    world.nemesis(schedule);
    let run = world.run()?;
    let markers = markers.lock().map(|m| m.clone()).unwrap_or_default();
    let _ = seed;
    Ok((run, markers))
}

/// Failover and hand-over times found in a history, from the markers.
pub(super) fn measure(
    events: &[crate::history::Event],
    markers: &[Marker],
    lease_ms: u64,
    h: &mut Histograms,
) -> (Vec<u64>, Vec<u64>) {
    h.declare(FAILOVER);
    h.declare(HANDOVER);
    let mut failovers = Vec::new();
    let mut handovers = Vec::new();
    for m in markers {
        match m {
            Marker::Stall { node, at, duration } if *duration > lease_ms => {
                // Only a takeover during the stall is a failover.
                if let Some(t) = time_to_new_leader(events, ELECTION_NAME, node, *at) {
                    if t < *duration {
                        failovers.push(t);
                        h.record(FAILOVER, t);
                    }
                }
            }
            Marker::Stop { node, at, held_ms } => {
                if let Some(t) = time_to_new_leader(events, ELECTION_NAME, node, *at) {
                    handovers.push(t);
                    // A held reply may have landed on a renewal in flight
                    // (the loop sees stop() only after it): the hand-over
                    // figure (reference case 25) is that of unheld stops.
                    if *held_ms == 0 {
                        h.record(HANDOVER, t);
                    }
                }
            }
            _ => {}
        }
    }
    (failovers, handovers)
}

/// Runs an explicit plan of an election scenario.
pub(crate) fn run_planned(
    variant: ElectionVariant,
    servers: &mut Servers,
    seed: u64,
    planned: &ElectionPlan,
    schedule: Schedule,
) -> Result<Outcome, SetupError> {
    let extra = workload_schedule(planned);
    let schedule_end = schedule.faults.iter().map(crate::nemesis::Fault::end).max();
    let fault_spans = schedule.spans();
    let freeze_spans = schedule.freeze_spans();
    let config = world_config(seed, variant);
    let response_ms = config.net.response_timeout.as_millis() as u64;
    let aimed = aim(seed, variant, planned, &fault_spans, response_ms);
    let (run, mut markers) = run_plan(servers, seed, variant, planned, config, schedule, aimed)?;
    settle_slowed(&mut markers, &run, planned);
    // Held requests disturb the views' timing as a nemesis fault does.
    let schedule_spans = fault_spans.clone();
    let mut fault_spans = fault_spans;
    fault_spans.extend(
        markers
            .iter()
            .filter(|m| matches!(m, Marker::Slowed { .. } | Marker::TimedOut { .. }))
            .filter_map(Marker::disturbs),
    );
    let mut outcome = outcome_from(&run, extra);
    let events = &outcome.history;
    let mut h = Histograms::new();
    record_split_brain(events, ELECTION_NAME, &mut h);
    let (failovers, handovers) = measure(events, &markers, planned.lease_ms, &mut h);
    let violations = judge(&Evidence {
        events,
        run: &run,
        markers: &markers,
        plan: planned,
        variant,
        schedule_spans: &schedule_spans,
        fault_spans: &fault_spans,
        freeze_spans: &freeze_spans,
        schedule_end,
        response_ms,
    });
    outcome.violations.extend(violations);
    reach_from_history(&mut outcome, variant, &failovers, &handovers, &markers, planned.lease_ms);
    if variant.fails_over() {
        reach_after_failover(&mut outcome);
    }
    outcome.histograms = h;
    Ok(outcome)
}

/// The workload's own faults, for the run's schedule: each strikes the
/// node leading when it starts.
fn workload_schedule(planned: &ElectionPlan) -> Vec<WorkloadFault> {
    let leader = || WorkloadTarget::Role("the node leading then".to_string());
    let mut extra = Vec::new();
    if let Some(LeaderStall { at, ms }) = planned.stall {
        extra.push(WorkloadFault { at, target: leader(), kind: WorkloadFaultKind::Stall { ms, context: None } });
    }
    if let Some(at) = planned.stop_at {
        extra.push(WorkloadFault { at, target: leader(), kind: WorkloadFaultKind::Stop });
    }
    if let Some(at) = planned.slow_renewals {
        let kind = WorkloadFaultKind::Held { node: 0, ms: SLOW_RENEWALS_MS.to_vec(), key: None };
        extra.push(WorkloadFault { at, target: leader(), kind });
    }
    extra
}

/// Ends the slow renewals' span when their held requests ran. A held
/// request disturbs the run until it has run, which may be long after its
/// injection (the node frozen in between). Only the slow renewals' holds: a
/// timed-out renewal's is held longer, and counting it here would take the
/// slow renewals' span to the end of the run.
fn settle_slowed(markers: &mut [Marker], run: &RunOutcome, planned: &ElectionPlan) {
    let held: Vec<u64> =
        run.executions[0].iter().filter(|x| SLOW_RENEWALS_MS.contains(&x.held_ms)).map(|x| x.sim_ms).collect();
    for m in markers {
        if let Marker::Slowed { until, .. } = m {
            *until = match held.as_slice() {
                [.., last] if held.len() == SLOW_RENEWALS_MS.len() => *last,
                _ => planned.length_ms,
            };
        }
    }
}
