//! Exploration: run a scenario over a range of seeds and gather what they found.
//!
//! Shared by `rp-sim explore` and `rp-sim report`. One server pool serves
//! every seed (resetting a server costs far less than starting one). Wall
//! time is measured here with `std::time::Instant`, *outside* the simulation:
//! it is the harness's own speed, not something any simulated code reads.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::checker::Violation;
use crate::history::Digest;
use crate::progress::{Meter, Progress};
use crate::scenarios::{Outcome, Scenario};
use crate::servers::{Servers, SetupError};
use crate::shard::Shard;
use crate::stats::{Histograms, Summary};

/// The violations of one seed, with what it takes to reproduce them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SeedReport {
    /// The seed.
    pub seed: u64,
    /// What broke.
    pub violations: Vec<Violation>,
    /// The fault schedule the seed ran.
    pub schedule: Vec<String>,
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
    /// Scenario name.
    pub scenario: &'static str,
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
    /// Simulated time summed over every seed (ms).
    pub simulated_ms: u64,
    /// Events recorded, over every seed.
    pub events: u64,
    /// Situation → number of seeds that reached it. Every situation the
    /// scenario declares is present (0 when no seed reached it); one reached
    /// but not declared is listed too.
    pub coverage: BTreeMap<String, u64>,
    /// Public library operation → invocations over every seed.
    pub operations: BTreeMap<String, u64>,
}

impl Exploration {
    /// Seeds per wall-clock second.
    pub fn seeds_per_second(&self) -> f64 {
        self.seeds as f64 / self.wall.as_secs_f64().max(1e-9)
    }

    /// Simulated time over wall time.
    pub fn speedup(&self) -> f64 {
        (self.simulated_ms as f64 / 1000.0) / self.wall.as_secs_f64().max(1e-9)
    }

    /// Declared situations that no seed reached (a warning: the scenario
    /// no longer gets where it should).
    pub fn unreached(&self) -> Vec<&str> {
        self.coverage.iter().filter(|(_, n)| **n == 0).map(|(s, _)| s.as_str()).collect()
    }

    /// Number of violations of `invariant` over every seed.
    pub fn count_of(&self, invariant: &str) -> usize {
        self.violating.iter().flat_map(|s| &s.violations).filter(|v| v.invariant == invariant).count()
    }
}

/// The command that replays `seed` of `scenario`.
pub fn replay_command(scenario: &str, seed: u64) -> String {
    format!("rp-sim replay --scenario {scenario} --seed {seed}")
}

/// Runs seeds `start..start + seeds` of `scenario`; with `fail_fast`, stops
/// after the first violating seed (the exploration then reports the seeds
/// it ran).
pub fn explore(
    scenario: &'static Scenario,
    servers: &mut Servers,
    start: u64,
    seeds: u64,
    progress: Progress,
    fail_fast: bool,
) -> Result<Exploration, SetupError> {
    explore_shard(scenario, servers, start, seeds, Shard::WHOLE, progress, fail_fast)
}

/// [`explore`], running only `shard`'s seeds of `start..start + seeds`
/// (`crate::shard` merges the parts into the whole).
pub fn explore_shard(
    scenario: &'static Scenario,
    servers: &mut Servers,
    start: u64,
    seeds: u64,
    shard: Shard,
    progress: Progress,
    fail_fast: bool,
) -> Result<Exploration, SetupError> {
    let started = Instant::now();
    let end = start.saturating_add(seeds);
    // This shard's share of the range: what the progress counts towards.
    let seeds = (start..end).filter(|&s| shard.includes(start, s)).count() as u64;
    let mut ex = Exploration {
        scenario: scenario.name,
        start_seed: start,
        seeds: 0,
        violating: Vec::new(),
        histograms: Histograms::new(),
        digest: Digest::default(),
        runs: Vec::new(),
        wall: Duration::ZERO,
        simulated_ms: 0,
        events: 0,
        coverage: scenario.situations.iter().map(|s| (s.name.to_string(), 0)).collect(),
        operations: BTreeMap::new(),
    };
    let mut meter = Meter::new(progress, scenario.name, "seeds", seeds);
    for seed in (start..end).filter(|&s| shard.includes(start, s)) {
        let outcome: Outcome = scenario.run(servers, seed)?;
        ex.runs.push(SeedRun { seed, digest: outcome.digest });
        ex.histograms.merge(&outcome.histograms);
        ex.simulated_ms += outcome.simulated_ms();
        ex.events += outcome.history.len() as u64;
        for situation in &outcome.reached {
            *ex.coverage.entry(situation.clone()).or_insert(0) += 1;
        }
        for (api, n) in &outcome.operations {
            *ex.operations.entry(api.clone()).or_insert(0) += n;
        }
        ex.seeds += 1;
        meter.step(!outcome.violations.is_empty());
        if !outcome.violations.is_empty() {
            ex.violating.push(SeedReport {
                seed,
                violations: outcome.violations,
                schedule: outcome.schedule,
                replay: replay_command(scenario.name, seed),
            });
        }
        if fail_fast && !ex.violating.is_empty() {
            break;
        }
    }
    meter.finish();
    ex.digest = crate::shard::digest_of(&ex.runs);
    ex.wall = started.elapsed();
    Ok(ex)
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
    pub operations: BTreeMap<String, u64>,
    /// Declared situations that no seed reached.
    pub unreached: Vec<String>,
    /// Exploration digest (hex).
    pub digest: String,
    /// Wall time in seconds (the harness's own speed; not part of the digest).
    pub wall_seconds: f64,
}

/// One violation in `--json` output.
#[derive(Debug, Serialize)]
pub struct ViolationJson {
    /// The seed.
    pub seed: u64,
    /// Invariant name.
    pub invariant: String,
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
            scenario: self.scenario,
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
                        schedule: s.schedule.clone(),
                    })
                })
                .collect(),
            histograms: self.histograms.summaries(),
            coverage: self.coverage.clone(),
            operations: self.operations.clone(),
            unreached: self.unreached().into_iter().map(String::from).collect(),
            digest: self.digest.to_string(),
            wall_seconds: self.wall.as_secs_f64(),
        }
    }
}

/// A plain-text table of histogram summaries.
pub fn histogram_table(h: &Histograms) -> String {
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
pub fn coverage_table(ex: &Exploration) -> String {
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

/// A plain-text table of the public library operations the seeds invoked.
pub fn operations_table(ex: &Exploration) -> String {
    let mut out = String::new();
    if ex.operations.is_empty() {
        return out;
    }
    out.push_str(&format!("{:<44} {:>7}\n", "operation", "calls"));
    for (api, n) in &ex.operations {
        out.push_str(&format!("{api:<44} {n:>7}\n"));
    }
    out
}
