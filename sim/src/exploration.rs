//! What an exploration found: the seeds that ran, those that violated
//! something and how to replay them, merged histograms and coverage.
//!
//! Data, apart from the run that produces it (`crate::explore`), so that
//! the jobs that run seeds and the shards that carry them between machines
//! depend on it without depending on each other.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::checker::{Invariant, Violation};
use crate::experiment::Experiment;
use crate::history::{Api, Digest};
use crate::outcome::Outcome;
use crate::outcome::ScheduledFault;
use crate::path::Path;
use crate::stats::{Histograms, Summary};

/// The violations of one seed, with what it takes to reproduce them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeedReport {
    /// The seed.
    pub seed: u64,
    /// What broke.
    pub violations: Vec<Violation>,
    /// The fault schedule the seed ran.
    pub schedule: Vec<ScheduledFault>,
    /// The exact command that replays it.
    pub replay: String,
}

/// One seed that ran, and its history's digest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeedRun {
    /// The seed.
    pub seed: u64,
    /// Its history's digest.
    pub digest: Digest,
}

/// What an exploration found.
#[derive(Debug, Clone)]
pub struct Exploration {
    /// The experiment's name (a registered scenario's, or a user's
    /// [`crate::Trial`]'s).
    pub scenario: String,
    /// First seed.
    pub start_seed: u64,
    /// Seeds run.
    pub seeds: u64,
    /// Seeds that violated something.
    pub violating: Vec<SeedReport>,
    /// Every seed's histograms merged.
    pub histograms: Histograms,
    /// Digest over every seed's history digest, in seed order.
    pub digest: Digest,
    /// Every seed run, in order, with its history digest.
    pub runs: Vec<SeedRun>,
    /// Wall time of the whole exploration.
    pub wall: Duration,
    /// Wall time of each job (or shard), added up: what the seeds cost one
    /// core at a time. Equal to `wall`, give or take the set-up, with one job.
    pub busy: Duration,
    /// Simulations that ran at once (`--jobs`; shards merged: their sum).
    pub jobs: u32,
    /// The CPU each job's pool was pinned to, in job order (empty when
    /// nothing was pinned: `--placement anywhere`, or merged shards).
    pub cpus: Vec<usize>,
    /// Simulated time summed over every seed (ms).
    pub simulated_ms: u64,
    /// Events recorded, over every seed.
    pub events: u64,
    /// Situation → number of seeds that reached it. Every situation the
    /// scenario declares is present (0 when no seed reached it); one reached
    /// but not declared is listed too.
    pub coverage: BTreeMap<String, u64>,
    /// Public library operation → invocations over every seed.
    pub operations: BTreeMap<Api, u64>,
    /// Operation → path → seeds that took it. Every path the scenario
    /// declares is present (0 when no seed took it).
    pub paths: BTreeMap<Api, BTreeMap<Path, u64>>,
    /// Live runs only: by invariant, the violations that missed their
    /// exact bound by no more than their run's jitter
    /// ([`crate::Outcome::within_jitter`]). Empty in the simulation.
    pub within_jitter: BTreeMap<Invariant, WithinJitter>,
    /// Live runs only: the largest jitter of any run. `None` in the
    /// simulation.
    pub jitter: Option<Duration>,
}

/// What the live runs' violations within their jitter add up to, for one
/// invariant.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct WithinJitter {
    /// How many there were.
    pub violations: u64,
    /// In how many runs.
    pub runs: u64,
    /// The most any missed its bound by, in µs.
    pub max_missed_by_us: u64,
}

impl Exploration {
    /// Seeds per wall-clock second.
    pub fn seeds_per_second(&self) -> f64 {
        self.seeds as f64 / self.wall.as_secs_f64().max(1e-9)
    }

    /// Simulated time over wall time: how fast the exploration as a whole
    /// got through simulated time (every job together).
    pub fn speedup(&self) -> f64 {
        (self.simulated_ms as f64 / 1000.0) / self.wall.as_secs_f64().max(1e-9)
    }

    /// Simulated time over busy time: how fast one simulation runs on one
    /// core (the same as [`Exploration::speedup`] with one job).
    pub fn speedup_per_job(&self) -> f64 {
        (self.simulated_ms as f64 / 1000.0) / self.busy.as_secs_f64().max(1e-9)
    }

    /// Declared situations that no seed reached (a warning: the scenario
    /// no longer gets where it should).
    pub fn unreached(&self) -> Vec<&str> {
        self.coverage.iter().filter(|(_, n)| **n == 0).map(|(s, _)| s.as_str()).collect()
    }

    /// Declared (operation, path) pairs that no seed took.
    pub fn untaken_paths(&self) -> Vec<(Api, Path)> {
        self.paths
            .iter()
            .flat_map(|(api, by)| by.iter().filter(|(_, n)| **n == 0).map(move |(p, _)| (api.clone(), *p)))
            .collect()
    }

    /// Number of violations of `invariant` over every seed.
    pub fn count_of(&self, invariant: &Invariant) -> usize {
        self.violating.iter().flat_map(|s| &s.violations).filter(|v| v.invariant == *invariant).count()
    }
}

impl Exploration {
    /// Nothing of `experiment` run yet: every declared situation at 0.
    pub(crate) fn empty(experiment: &dyn Experiment, start: u64) -> Exploration {
        Exploration {
            scenario: experiment.name().to_string(),
            start_seed: start,
            seeds: 0,
            violating: Vec::new(),
            histograms: Histograms::new(),
            digest: Digest::default(),
            runs: Vec::new(),
            wall: Duration::ZERO,
            busy: Duration::ZERO,
            jobs: 1,
            cpus: Vec::new(),
            simulated_ms: 0,
            events: 0,
            coverage: experiment.situations().iter().map(|s| (s.name.to_string(), 0)).collect(),
            operations: BTreeMap::new(),
            paths: declared_paths(experiment.paths()),
            within_jitter: BTreeMap::new(),
            jitter: None,
        }
    }

    /// Adds what seed `seed` of `experiment` gave (its history held
    /// `events` events).
    pub(crate) fn add(&mut self, experiment: &dyn Experiment, seed: u64, outcome: Outcome, events: u64) {
        self.runs.push(SeedRun { seed, digest: outcome.digest });
        self.histograms.merge(&outcome.histograms);
        self.simulated_ms += outcome.simulated_ms();
        self.events += events;
        for situation in outcome.reached {
            *self.coverage.entry(situation.to_string()).or_insert(0) += 1;
        }
        for (api, n) in outcome.operations {
            *self.operations.entry(api).or_insert(0) += n;
        }
        for (api, path) in outcome.paths {
            *self.paths.entry(api).or_default().entry(path).or_insert(0) += 1;
        }
        self.seeds += 1;
        if let Some(j) = outcome.jitter {
            self.jitter = Some(self.jitter.map_or(j, |k| k.max(j)));
        }
        let mut touched = BTreeSet::new();
        for v in &outcome.within_jitter {
            let tally = self.within_jitter.entry(v.invariant.clone()).or_default();
            tally.violations += 1;
            tally.max_missed_by_us = tally.max_missed_by_us.max(v.missed_by.unwrap_or_default().as_micros() as u64);
            if touched.insert(v.invariant.clone()) {
                tally.runs += 1;
            }
        }
        if !outcome.violations.is_empty() {
            self.violating.push(SeedReport {
                seed,
                violations: outcome.violations,
                schedule: outcome.schedule,
                replay: experiment.replay_command(seed),
            });
        }
    }
}

/// The JSON object `explore --json` prints.
#[derive(Debug, Serialize)]
pub struct ExploreJson<'a> {
    /// Scenario name.
    pub scenario: &'a str,
    /// Seeds run.
    pub seeds: u64,
    /// First seed.
    pub start_seed: u64,
    /// One entry per violation.
    pub violations: Vec<ViolationJson>,
    /// Histogram summaries by name.
    pub histograms: std::collections::BTreeMap<String, Summary>,
    /// Situation → seeds that reached it (every declared situation, 0 when
    /// none did).
    pub coverage: BTreeMap<String, u64>,
    /// Public library operation → invocations over every seed.
    pub operations: BTreeMap<Api, u64>,
    /// Declared situations that no seed reached.
    pub unreached: Vec<String>,
    /// Operation → path (`ok`, `refused`, `failed`) → seeds that took it.
    pub paths: BTreeMap<Api, BTreeMap<Path, u64>>,
    /// Exploration digest (hex).
    pub digest: String,
    /// Wall time in seconds (the harness's own speed; not part of the digest).
    pub wall_seconds: f64,
    /// Live runs only: violations within their run's jitter, by invariant.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub within_jitter: BTreeMap<Invariant, WithinJitter>,
    /// Live runs only: the largest jitter of any run, in µs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jitter_us: Option<u64>,
}

/// One violation in `--json` output.
#[derive(Debug, Serialize)]
pub struct ViolationJson {
    /// The seed.
    pub seed: u64,
    /// Invariant name.
    pub invariant: Invariant,
    /// Short explanation.
    pub detail: String,
    /// The replay command.
    pub replay: String,
    /// The seed's fault schedule.
    pub schedule: Vec<String>,
}

impl Exploration {
    /// The `--json` form.
    pub fn to_json(&self) -> ExploreJson<'_> {
        ExploreJson {
            scenario: &self.scenario,
            seeds: self.seeds,
            start_seed: self.start_seed,
            violations: self
                .violating
                .iter()
                .flat_map(|s| {
                    s.violations.iter().map(move |v| ViolationJson {
                        seed: s.seed,
                        invariant: v.invariant.clone(),
                        detail: v.detail.clone(),
                        replay: s.replay.clone(),
                        schedule: s.schedule.iter().map(ToString::to_string).collect(),
                    })
                })
                .collect(),
            histograms: self.histograms.summaries(),
            coverage: self.coverage.clone(),
            operations: self.operations.clone(),
            unreached: self.unreached().into_iter().map(String::from).collect(),
            paths: self.paths.clone(),
            digest: self.digest.to_string(),
            wall_seconds: self.wall.as_secs_f64(),
            within_jitter: self.within_jitter.clone(),
            jitter_us: self.jitter.map(|j| j.as_micros() as u64),
        }
    }
}

/// A plain-text table of histogram summaries.
pub(crate) fn histogram_table(h: &Histograms) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "{:<24} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7}  unit\n",
        "histogram", "count", "min", "p50", "p90", "p99", "max"
    ));
    for (name, s) in h.summaries() {
        out.push_str(&format!(
            "{:<24} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7}  {}\n",
            name, s.count, s.min, s.p50, s.p90, s.p99, s.max, s.unit
        ));
    }
    out
}

/// A plain-text table of situations reached (seeds per situation), with a
/// warning line for each declared situation no seed reached.
pub(crate) fn coverage_table(ex: &Exploration) -> String {
    let mut out = String::new();
    if ex.coverage.is_empty() {
        return out;
    }
    out.push_str(&format!("{:<44} {:>7}\n", "situation reached", "seeds"));
    for (situation, n) in &ex.coverage {
        out.push_str(&format!("{situation:<44} {n:>7}\n"));
    }
    for situation in ex.unreached() {
        out.push_str(&format!("warning: no seed reached situation `{situation}`\n"));
    }
    out
}

/// A plain-text table of the public library operations the seeds invoked,
/// with the seeds that took each path, and a warning per declared path no
/// seed took.
pub(crate) fn operations_table(ex: &Exploration) -> String {
    let mut out = String::new();
    if ex.operations.is_empty() {
        return out;
    }
    out.push_str(&format!("{:<44} {:>7} {:>7} {:>7} {:>7}\n", "operation", "calls", "ok", "refused", "failed"));
    for (api, n) in &ex.operations {
        let seeds = |p: Path| ex.paths.get(api).and_then(|by| by.get(&p)).copied().unwrap_or(0);
        out.push_str(&format!(
            "{api:<44} {n:>7} {:>7} {:>7} {:>7}\n",
            seeds(Path::Ok),
            seeds(Path::Refused),
            seeds(Path::Failed)
        ));
    }
    for (api, path) in ex.untaken_paths() {
        out.push_str(&format!("warning: no seed took path `{path}` of {api}\n"));
    }
    out
}

/// Every declared (operation, path), at 0 seeds.
fn declared_paths(declared: &[(Api, Path)]) -> BTreeMap<Api, BTreeMap<Path, u64>> {
    let mut out: BTreeMap<Api, BTreeMap<Path, u64>> = BTreeMap::new();
    for (api, path) in declared {
        out.entry(api.clone()).or_default().insert(*path, 0);
    }
    out
}
