//! What one run produced, as every family returns it: the history and its
//! digest, the violations, histograms, the schedule that ran, the
//! situations reached ([`Situation`]: what a scenario declares it exists
//! to reach) and the operations invoked.
//!
//! Below the families and the registry that list them, so that a family
//! depends on it and nothing here depends on a family (ADR 0009).

use std::collections::{BTreeMap, BTreeSet};

use core::fmt;

use serde::{Deserialize, Serialize};

use crate::checker::Violation;
use crate::history::{Api, Digest, Event};
use crate::nemesis::{Fault, SwarmDraw};
use crate::path::Path;
pub use crate::situation::{Situation, SituationName};
use crate::stats::Histograms;
use crate::time::Millis;
use crate::workload_fault::WorkloadFault;

/// What a scenario run produced.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Every event, in order.
    pub history: Vec<Event>,
    /// Stable digest of `history` (see `crate::history::digest_events`).
    pub digest: Digest,
    /// What the checkers found.
    pub violations: Vec<Violation>,
    /// Measurements of this run.
    pub histograms: Histograms,
    /// The fault schedule, in order of start (with each fault's undo).
    pub schedule: Vec<ScheduledFault>,
    /// Simulated time the run covered (ms); 0 = unknown (the last event's
    /// time is used instead).
    pub simulated_ms: u64,
    /// The declared situations this run reached (see [`Situation`]): from
    /// the actors' `reached` events, plus what the scenario's analysis of
    /// the history adds.
    pub reached: BTreeSet<SituationName>,
    /// Public library operations invoked, by name (`Lock::extend` → count):
    /// the operations table.
    pub operations: BTreeMap<Api, u64>,
    /// The paths those calls took ([`Path`]: ok, refused, failed).
    pub paths: BTreeSet<(Api, Path)>,
    /// How late the run's timers fired, at most, plus the clock's
    /// granularity: `None` in the simulation, whose instants are exact; in
    /// a live run ([`crate::Servers::live`]) the precision its checks of
    /// instants are weighed with ([`Outcome::weigh_jitter`]).
    pub jitter: Option<core::time::Duration>,
    /// Violations of a live run that missed their exact bound by no more
    /// than [`Outcome::jitter`]: its measurement's precision, not a broken
    /// promise. Reported beside the violations, never among them.
    pub within_jitter: Vec<Violation>,
}

/// One entry of a run's fault schedule: typed, text only when printed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ScheduledFault {
    /// Under swarm testing, the fault classes the seed enabled (first).
    Swarm(SwarmDraw),
    /// A fault the nemesis drew, with its undo.
    Nemesis(Fault),
    /// A fault the workload places itself (a holder's stall at a seeded
    /// moment).
    Workload(WorkloadFault),
}

impl ScheduledFault {
    /// When it starts (a swarm draw: 0).
    pub fn at(&self) -> Millis {
        match self {
            ScheduledFault::Swarm(_) => 0,
            ScheduledFault::Nemesis(f) => f.at,
            ScheduledFault::Workload(w) => w.at,
        }
    }
}

impl fmt::Display for ScheduledFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScheduledFault::Swarm(draw) => write!(f, "{draw}"),
            ScheduledFault::Nemesis(fault) => write!(f, "{fault}"),
            ScheduledFault::Workload(w) => write!(f, "{w}"),
        }
    }
}

impl Outcome {
    /// An outcome for `history`, with its digest computed.
    pub fn new(history: Vec<Event>) -> Outcome {
        let digest = crate::history::digest_events(&history);
        let mut reached = BTreeSet::new();
        let mut operations = BTreeMap::new();
        for e in &history {
            if let Some(api) = &e.api {
                *operations.entry(api.clone()).or_insert(0) += 1;
            }
            if let crate::history::Op::Reached { situation } = &e.op {
                reached.insert(*situation);
            }
        }
        let paths = crate::path::paths(&history);
        Outcome { history, digest, reached, operations, paths, ..Outcome::default() }
    }

    /// Moves every violation that missed its exact bound by no more than
    /// the run's jitter into [`Outcome::within_jitter`] (a live run's; the
    /// simulation's have no jitter and keep all of theirs).
    pub fn weigh_jitter(&mut self) {
        let Some(jitter) = self.jitter else { return };
        let (within, beyond) =
            core::mem::take(&mut self.violations).into_iter().partition(|v| v.missed_by.is_some_and(|by| by <= jitter));
        self.violations = beyond;
        self.within_jitter.extend::<Vec<Violation>>(within);
    }

    /// Marks `situation` as reached (for situations a scenario recognises
    /// in the finished history rather than while it runs).
    pub fn reach(&mut self, situation: SituationName) {
        self.reached.insert(situation);
    }

    /// Simulated milliseconds covered by the run.
    pub fn simulated_ms(&self) -> u64 {
        if self.simulated_ms > 0 {
            self.simulated_ms
        } else {
            self.history.last().map_or(0, |e| e.time)
        }
    }
}

/// Turns a finished world run into an [`Outcome`] (no violations or
/// histograms yet: the scenario adds its own). `extra_schedule` lists faults
/// the workload injects itself (a leader that stalls at a seeded moment);
/// they are merged into the nemesis schedule by their start times.
pub(crate) fn outcome_from(run: &crate::world::RunOutcome, extra_schedule: Vec<WorkloadFault>) -> Outcome {
    let mut outcome = Outcome::new(run.history.events());
    let mut faults: Vec<ScheduledFault> = run.schedule.faults.iter().copied().map(ScheduledFault::Nemesis).collect();
    faults.extend(extra_schedule.into_iter().map(ScheduledFault::Workload));
    // Stable: equal times keep nemesis faults first.
    faults.sort_by_key(ScheduledFault::at);
    if let Some(draw) = &run.schedule.swarm {
        faults.insert(0, ScheduledFault::Swarm(draw.clone()));
    }
    outcome.schedule = faults;
    outcome.simulated_ms = run.sim_elapsed.as_millis() as u64;
    outcome.jitter = run.jitter;
    // Judged for every scenario: no family's faults provoke an error reply.
    outcome.violations.extend(crate::checker::unexpected_errors::check(&outcome.history));
    outcome.violations.extend(crate::checker::configuration::check(&outcome.history));
    outcome
}

impl Outcome {
    /// A finished run of one's own [`crate::World`] as an outcome: its
    /// history and digest, the schedule it ran, the simulated time, and the
    /// violations of the checks every scenario gets (no unexpected error
    /// replies, configurations and inputs as documented). A
    /// [`crate::Trial`]'s judge then adds its own checkers' violations.
    pub fn from_run(run: &crate::world::RunOutcome) -> Outcome {
        outcome_from(run, Vec::new())
    }
}
