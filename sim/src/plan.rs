//! Explicit scenario inputs: a [`Plan`] says everything a run does.
//!
//! A seed alone reproduces a run, but it cannot be *shrunk*: change one bit
//! and everything the seed decides changes at once. Property tests need the
//! opposite, inputs whose parts can be simplified one at a time — one fault
//! fewer, a shorter pause, an actor fewer — while everything else stays put.
//! A [`Plan`] is that input, as plain serde data:
//!
//! - `scenario`: which registry entry (which primitive, broken or not, and
//!   which checkers);
//! - `seed`: what is still left to chance — link latency draws, each actor's
//!   RNG (hold and think times, owner ids) — and nothing else;
//! - `workload`: the actors and their parameters ([`Workload`]): number of
//!   clients or nodes, TTLs, renew and campaign intervals, limits and
//!   windows, bursts, and the faults the workload itself injects because
//!   they must hit a particular actor (a holder stalling inside its critical
//!   section, the current leader freezing);
//! - `schedule`: the nemesis faults, each with its start, duration and target.
//!
//! A seed is only a way to draw a plan: seed N's plan is drawn from the
//! scenario's space by the same proptest strategy the property search
//! draws from ([`crate::space`]), so `run(seed)` and
//! [`run`]`(&from_seed(seed))` are the same run, digest for digest
//! (`sim/tests/harness/plan.rs` checks it for every scenario). This module
//! knows no family: a plan's workload is its family's JSON, read back
//! through the registry row's [`Runner`]. `rp-sim replay
//! --scenario NAME --plan '<json>'` reruns a plan, which is how a shrunk
//! counterexample from the property tests is reproduced.
//!
//! The **size** of a plan ([`Plan::size`]) is what a reader has to hold in
//! their head: its faults (nemesis faults plus workload-injected ones) plus
//! its actors. Shrinking minimises it.

use core::fmt;

use serde::{Deserialize, Serialize};

use crate::family::Runner;
pub(crate) use crate::family::Workload;
use crate::nemesis::{FaultClass, Schedule};
use crate::outcome::Outcome;
use crate::scenarios::{self, Scenario};
use crate::servers::{Servers, SetupError};

/// Everything one run does (see the module docs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// The registry name (`rp-sim scenarios`).
    pub scenario: String,
    /// Seeds what the plan leaves to chance (latency draws, actor RNGs).
    pub seed: u64,
    /// The actors and their parameters: the family's plan, tagged with the
    /// family's name (`Workload`).
    pub workload: Workload,
    /// The nemesis faults.
    pub schedule: Schedule,
}

impl Plan {
    /// The registry row's runner of this plan's scenario.
    fn runner(&self) -> Result<&'static dyn Runner, String> {
        scenarios::find(&self.scenario)
            .map(|s| s.runs)
            .ok_or_else(|| format!("no scenario named {} ({})", self.scenario, scenarios::names()))
    }

    /// Client actors (election nodes for an election); 0 if the workload
    /// cannot be read.
    pub fn actors(&self) -> u32 {
        self.runner().and_then(|r| r.actors(&self.workload)).unwrap_or(0)
    }

    /// Redis nodes.
    pub fn nodes(&self) -> u32 {
        self.runner().map_or(1, |r| r.nodes())
    }

    /// Nemesis faults plus workload-injected ones.
    pub fn faults(&self) -> usize {
        self.schedule.faults.len() + self.runner().map_or(0, |r| r.injected_faults(&self.workload))
    }

    /// What shrinking minimises: [`Plan::faults`] + [`Plan::actors`].
    pub fn size(&self) -> usize {
        self.faults() + self.actors() as usize
    }

    /// Plans one step smaller as the family sees it (a workload fault
    /// removed, an actor fewer): its shrinking hints.
    pub fn smaller_workloads(&self) -> Vec<Plan> {
        let Ok(r) = self.runner() else { return Vec::new() };
        r.smaller(&self.workload).into_iter().map(|workload| Plan { workload, ..self.clone() }).collect()
    }

    /// Whether the schedule steps any server clock.
    pub fn has_clock_faults(&self) -> bool {
        self.schedule.faults.iter().any(|f| f.kind.class() == FaultClass::ClockStep)
    }

    /// Checks that the plan can run: at least one actor, every fault's
    /// target exists and suits its kind, every index in range.
    pub fn validate(&self) -> Result<(), String> {
        let actors = self.runner()?.actors(&self.workload)?;
        if actors == 0 {
            return Err("a plan needs at least one actor".into());
        }
        self.schedule.validate(actors, self.nodes())?;
        self.runner()?.validate(&self.workload)?;
        Ok(())
    }

    /// Puts a drawn plan into canonical form, so any plan a strategy
    /// produces runs and reads well: the workload's for its actors (indices
    /// wrapped, lists sorted), and the schedule's ([`Schedule::normalize`]:
    /// targets wrapped, faults on one switch never overlapping).
    pub fn normalize(mut self) -> Plan {
        let actors = self.actors().max(1);
        let nodes = self.nodes().max(1);
        if let Ok(r) = self.runner() {
            self.workload = r.normalize(&self.workload, actors);
        }
        self.schedule = self.schedule.normalize(actors, nodes);
        self
    }

    /// The plan as one line of JSON (what `--plan` takes).
    pub fn to_json(&self) -> String {
        // A plan is plain data (strings, integers, enums): it always serialises.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Parses a plan from JSON.
    pub fn from_json(json: &str) -> Result<Plan, String> {
        serde_json::from_str(json).map_err(|e| format!("not a plan: {e}"))
    }

    /// Seed `seed`'s plan of `scenario`: drawn from the scenario's space with proptest's RNG seeded from `seed`.
    pub fn from_seed(scenario: &str, seed: u64) -> Result<Plan, String> {
        from_seed(scenario, seed)
    }

    /// Runs the plan on `servers`, checked by its scenario's checkers (an invalid plan is refused).
    pub fn run(&self, servers: &mut Servers) -> Result<Outcome, SetupError> {
        run(servers, self)
    }

    /// The command that reruns this plan.
    pub fn replay_command(&self) -> String {
        format!("rp-sim replay --scenario {} --plan '{}'", self.scenario, self.to_json())
    }
}

// Running a registry row's seed is a plan's business: the row only names
// its family variant, so the registry stays below plans and spaces.
impl Scenario {
    /// Runs one seed: the run of the plan the seed draws from
    /// [`Scenario::space`].
    pub fn run(&self, servers: &mut Servers, seed: u64) -> Result<Outcome, SetupError> {
        // A drawn plan is normalised, so valid (`search`'s tests check it).
        let plan = self.space().draw(seed).map_err(|reason| SetupError::InvalidPlan { reason })?;
        self.runs.run_workload(servers, plan.seed, &plan.workload, plan.schedule)
    }
}

/// Seed `seed`'s plan of `scenario`: drawn from the scenario's space
/// ([`crate::scenarios::Scenario::space`]) with proptest's RNG seeded from
/// the seed. A seed's run is [`run`]`(&from_seed(s, seed)?)`, by
/// construction.
pub(crate) fn from_seed(scenario: &str, seed: u64) -> Result<Plan, String> {
    let row =
        scenarios::find(scenario).ok_or_else(|| format!("no scenario named {scenario} ({})", scenarios::names()))?;
    row.space().draw(seed)
}

/// Runs a plan: its scenario's workload with the plan's parameters and
/// schedule, checked by the scenario's checkers (an unknown scenario, or a
/// workload of another family, is an invalid plan).
pub(crate) fn run(servers: &mut Servers, plan: &Plan) -> Result<Outcome, SetupError> {
    let invalid = |reason: String| SetupError::InvalidPlan { reason };
    let runner = plan.runner().map_err(invalid)?;
    plan.validate().map_err(invalid)?;
    runner.run_workload(servers, plan.seed, &plan.workload, plan.schedule.clone())
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "plan for {} (seed {}), size {} = {} fault(s) + {} actor(s)",
            self.scenario,
            self.seed,
            self.size(),
            self.faults(),
            self.actors()
        )?;
        let workload = self.runner().map_or_else(|e| e, |r| r.describe(&self.workload));
        writeln!(f, "  workload: {workload}")?;
        if self.schedule.faults.is_empty() {
            write!(f, "  nemesis: no faults")
        } else {
            write!(f, "  nemesis:")?;
            for fault in &self.schedule.faults {
                write!(f, "\n    {fault}")?;
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::lock::{LockPlan, Stall};
    use crate::nemesis::{Fault, FaultKind, Target};

    fn lock_plan(faults: Vec<Fault>) -> Plan {
        Plan {
            scenario: "lock".into(),
            seed: 7,
            workload: Workload::of::<crate::families::lock::LockVariant>(&LockPlan {
                clients: 2,
                ttl_ms: 300,
                hold_ms: (20, 450),
                think_ms: (5, 80),
                length_ms: 1000,
                stall: Some(Stall { client: 5, hold: 1, ms: 900 }),
            }),
            schedule: Schedule::of(faults),
        }
    }

    #[test]
    fn normalize_wraps_targets_and_drops_conflicting_faults() {
        let f = |at, duration, kind, target| Fault { at, duration, kind, target };
        let p = lock_plan(vec![
            f(500, 100, FaultKind::Hold, Target::Client(3)),
            f(100, 600, FaultKind::Partition, Target::Client(1)),
            f(200, 50, FaultKind::ClientPause, Target::Client(1)),
            f(300, 0, FaultKind::ServerPause, Target::Node(4)),
        ])
        .normalize();
        // Client(3) wraps to client#1, whose partition is still active at 500.
        assert_eq!(
            p.schedule.faults,
            vec![
                f(100, 600, FaultKind::Partition, Target::Client(1)),
                f(200, 50, FaultKind::ClientPause, Target::Client(1)),
                f(300, 1, FaultKind::ServerPause, Target::Node(0)),
            ]
        );
        let w = p.workload.plan::<crate::families::lock::LockVariant>().unwrap();
        assert_eq!(w.stall.map(|s| s.client), Some(1));
        p.validate().unwrap();
        assert_eq!(p.size(), 3 + 1 + 2);
        assert_eq!(p.clone().normalize(), p, "normalize is idempotent");
    }

    #[test]
    fn json_round_trip_and_display() {
        let p =
            lock_plan(vec![Fault { at: 10, duration: 20, kind: FaultKind::ClientPause, target: Target::Client(0) }])
                .normalize();
        let json = p.to_json();
        assert!(json.contains("\"family\":\"lock\""), "{json}");
        assert_eq!(Plan::from_json(&json).unwrap(), p);
        assert!(!json.contains('\''), "the replay command single-quotes the JSON");
        let text = p.to_string();
        assert!(text.contains("size 4 = 2 fault(s) + 2 actor(s)"), "{text}");
        assert!(text.contains("at 10ms for 20ms: client-pause client#0, then resume"), "{text}");
        assert!(p.replay_command().starts_with("rp-sim replay --scenario lock --plan '{"));
    }
}
