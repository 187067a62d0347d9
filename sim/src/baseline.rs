//! Timing regressions: the pinned seed sets measured against a committed
//! baseline (`rp-sim check`).
//!
//! The pinned seeds say whether a scenario violates; they do not say when a
//! change doubles a failover or lengthens an unsafe window. Every histogram
//! is in simulated milliseconds and every run is deterministic, so the same
//! code gives the same figures bit for bit, and a tolerance can be tight.
//! `rp-sim check` runs each scenario's seed set — its pinned seeds for a
//! broken variant, seeds `0..12` for a correct one
//! ([`Experiment::baseline_seeds`]) — and compares with
//! `reports/baseline.json`:
//!
//! - a violation the baseline does not have fails (for any scenario);
//! - a violation of a broken variant's expected invariant that the
//!   baseline has and the run lost fails;
//! - a histogram whose count, p50, p90, p99 or max moved by more than the
//!   baseline's tolerance (relative, with an absolute floor) fails, and so
//!   does a histogram that appeared or vanished.
//!
//! Each failure is one readable line (what moved, from what to what, by how
//! much); `rp-sim check --update` writes the new baseline when the change is
//! meant. A user's own [`Experiment`] (a [`crate::Trial`]) gets the same
//! check as a library call: [`Baseline::measure`], [`Baseline::write`] and
//! [`Baseline::read`], then [`Baseline::departures`].

use core::fmt;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::checker::Invariant;
use crate::experiment::Experiment;
use crate::progress::{Meter, Progress};
use crate::servers::{Servers, SetupError};
use crate::stats::Summary;

/// How far a figure may move before it is a regression: the larger of
/// `relative` × the baseline's value and `absolute` (in the figure's unit).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Tolerance {
    /// Fraction of the baseline value (0.1 = 10 %).
    pub relative: f64,
    /// Absolute floor, so that a 2 ms figure may become 3 ms.
    pub absolute: u64,
}

impl Tolerance {
    /// ±10 %, at least 5.
    pub const DEFAULT: Tolerance = Tolerance { relative: 0.10, absolute: 5 };

    fn allows(self, base: u64, now: u64) -> bool {
        let slack = ((base as f64 * self.relative).ceil() as u64).max(self.absolute);
        now.abs_diff(base) <= slack
    }
}

/// One scenario's measured seed set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioFigures {
    /// The seeds run.
    pub seeds: Vec<u64>,
    /// Seed → the invariants it violated (only violating seeds).
    pub violations: BTreeMap<u64, Vec<Invariant>>,
    /// Histogram summaries of every seed merged.
    pub histograms: BTreeMap<String, Summary>,
}

/// What `rp-sim check` compares: every scenario's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Baseline {
    /// Format version (1).
    pub format: u32,
    /// How far a histogram figure may move.
    pub tolerance: Tolerance,
    /// Scenario name → figures.
    pub scenarios: BTreeMap<String, ScenarioFigures>,
}

/// Why a baseline could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum BaselineError {
    /// Running a scenario failed.
    #[error(transparent)]
    Setup(#[from] SetupError),
    /// The file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The file is not a baseline of this format.
    #[error("{}: not an rp-sim baseline: {reason}", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

impl Baseline {
    /// Measures `experiments` on `servers`: each one's baseline seeds
    /// ([`Experiment::baseline_seeds`]), which of them violated what, and
    /// its histograms' figures. A user's own trial is measured like a
    /// registered scenario:
    ///
    /// ```no_run
    /// # use redis_primitives_sim::{Baseline, Experiment, Servers, Trial};
    /// # fn my_world(_: &mut Servers, _: u64) -> Result<redis_primitives_sim::Outcome, redis_primitives_sim::SetupError> { todo!() }
    /// let trial = Trial::new("my-lock", my_world);
    /// let mut servers = Servers::new();
    /// let now = Baseline::measure(&mut servers, &[&trial])?;
    /// let path = std::path::Path::new("baseline.json");
    /// if !path.exists() {
    ///     now.write(path)?; // the first run writes it; commit it
    /// }
    /// for departure in Baseline::read(path)?.departures(&now, &[&trial]) {
    ///     eprintln!("{departure}");
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn measure(servers: &mut Servers, experiments: &[&dyn Experiment]) -> Result<Baseline, SetupError> {
        let mut out = BTreeMap::new();
        let total = experiments.iter().map(|s| s.baseline_seeds().len() as u64).sum();
        let mut meter = Meter::new(Progress::for_stderr(), "check", "seeds", total);
        for s in experiments {
            let seeds = s.baseline_seeds();
            let mut violations = BTreeMap::new();
            let mut histograms = crate::stats::Histograms::new();
            for &seed in &seeds {
                let o = s.run(servers, seed)?;
                meter.step(!o.violations.is_empty());
                histograms.merge(&o.histograms);
                if !o.violations.is_empty() {
                    let mut names: Vec<Invariant> = o.violations.iter().map(|v| v.invariant.clone()).collect();
                    names.sort();
                    names.dedup();
                    violations.insert(seed, names);
                }
            }
            out.insert(s.name().to_string(), ScenarioFigures { seeds, violations, histograms: histograms.summaries() });
        }
        meter.finish();
        Ok(Baseline { format: 1, tolerance: Tolerance::DEFAULT, scenarios: out })
    }

    /// Every way `now` departs from this baseline beyond its tolerance,
    /// for the experiments `now` measured (each [`Departure`] is one
    /// readable line). `experiments` says which invariant each one must
    /// keep violating ([`Experiment::must_violate`]). Empty: no regression.
    pub fn departures(&self, now: &Baseline, experiments: &[&dyn Experiment]) -> Vec<Departure> {
        compare(self, now, |name| experiments.iter().find(|e| e.name() == name).and_then(|e| e.must_violate()))
    }

    /// Reads a baseline file.
    pub fn read(path: &Path) -> Result<Baseline, BaselineError> {
        let bytes = std::fs::read(path).map_err(|source| BaselineError::Io { path: path.to_path_buf(), source })?;
        let b: Baseline = serde_json::from_slice(&bytes)
            .map_err(|e| BaselineError::Format { path: path.to_path_buf(), reason: e.to_string() })?;
        if b.format != 1 {
            return Err(BaselineError::Format { path: path.to_path_buf(), reason: format!("format {}", b.format) });
        }
        Ok(b)
    }

    /// Writes it, pretty-printed (a reviewer reads its diff).
    pub fn write(&self, path: &Path) -> Result<(), BaselineError> {
        let io = |source| BaselineError::Io { path: path.to_path_buf(), source };
        let json = serde_json::to_string_pretty(self).map_err(|e| io(std::io::Error::other(e)))?;
        std::fs::write(path, json + "\n").map_err(io)
    }
}

/// One way a run differs from its baseline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Departure {
    /// A violation the baseline does not have.
    NewViolation {
        /// Scenario.
        scenario: String,
        /// Seed.
        seed: u64,
        /// Invariant.
        invariant: Invariant,
    },
    /// A broken variant's expected violation that the run lost.
    LostViolation {
        /// Scenario.
        scenario: String,
        /// Seed.
        seed: u64,
        /// Invariant.
        invariant: Invariant,
    },
    /// A histogram figure moved past the tolerance.
    Moved {
        /// Scenario.
        scenario: String,
        /// Histogram.
        histogram: String,
        /// `count`, `p50`, `p90`, `p99` or `max`.
        figure: &'static str,
        /// The baseline's value.
        from: u64,
        /// The run's.
        to: u64,
        /// Unit.
        unit: String,
    },
    /// A histogram appeared or vanished.
    Histogram {
        /// Scenario.
        scenario: String,
        /// Histogram.
        histogram: String,
        /// Whether the run has it (else only the baseline does).
        appeared: bool,
    },
    /// A scenario or seed set that the baseline does not match.
    Scenario {
        /// Scenario.
        scenario: String,
        /// What differs.
        what: String,
    },
}

impl fmt::Display for Departure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Departure::NewViolation { scenario, seed, invariant } => {
                write!(f, "{scenario} seed {seed}: new violation of {invariant} (replay: rp-sim replay --scenario {scenario} --seed {seed})")
            }
            Departure::LostViolation { scenario, seed, invariant } => {
                write!(f, "{scenario} seed {seed}: no longer violates {invariant} (the harness stopped catching it)")
            }
            Departure::Moved { scenario, histogram, figure, from, to, unit } => {
                let pct = if *from == 0 {
                    String::new()
                } else {
                    format!(" ({:+.0} %)", (*to as f64 / *from as f64 - 1.0) * 100.0)
                };
                write!(f, "{scenario} {histogram} {figure}: {from} → {to} {unit}{pct}")
            }
            Departure::Histogram { scenario, histogram, appeared: true } => {
                write!(f, "{scenario}: new histogram {histogram}")
            }
            Departure::Histogram { scenario, histogram, appeared: false } => {
                write!(f, "{scenario}: histogram {histogram} is gone")
            }
            Departure::Scenario { scenario, what } => write!(f, "{scenario}: {what}"),
        }
    }
}

/// Every way `now` differs from `base` beyond `base`'s tolerance, for the
/// scenarios `now` measured; `expect` says which invariant each broken
/// variant must keep violating.
pub(crate) fn compare(
    base: &Baseline,
    now: &Baseline,
    expect: impl Fn(&str) -> Option<&'static Invariant>,
) -> Vec<Departure> {
    let mut out = Vec::new();
    for (name, n) in &now.scenarios {
        let scenario = name.clone();
        let Some(b) = base.scenarios.get(name) else {
            out.push(Departure::Scenario { scenario, what: "not in the baseline".into() });
            continue;
        };
        if b.seeds != n.seeds {
            out.push(Departure::Scenario { scenario, what: format!("seed set {:?}, baseline {:?}", n.seeds, b.seeds) });
            continue;
        }
        for (seed, invariants) in &n.violations {
            for inv in invariants {
                if !b.violations.get(seed).is_some_and(|v| v.contains(inv)) {
                    out.push(Departure::NewViolation {
                        scenario: scenario.clone(),
                        seed: *seed,
                        invariant: inv.clone(),
                    });
                }
            }
        }
        if let Some(expected) = expect(name) {
            for (seed, invariants) in &b.violations {
                let had = invariants.iter().any(|i| i == expected);
                let has = n.violations.get(seed).is_some_and(|v| v.contains(expected));
                if had && !has {
                    out.push(Departure::LostViolation {
                        scenario: scenario.clone(),
                        seed: *seed,
                        invariant: expected.clone(),
                    });
                }
            }
        }
        for (h, bs) in &b.histograms {
            let Some(ns) = n.histograms.get(h) else {
                out.push(Departure::Histogram { scenario: scenario.clone(), histogram: h.clone(), appeared: false });
                continue;
            };
            let figures = [
                ("count", bs.count, ns.count),
                ("p50", bs.p50, ns.p50),
                ("p90", bs.p90, ns.p90),
                ("p99", bs.p99, ns.p99),
                ("max", bs.max, ns.max),
            ];
            for (figure, from, to) in figures {
                if !base.tolerance.allows(from, to) {
                    out.push(Departure::Moved {
                        scenario: scenario.clone(),
                        histogram: h.clone(),
                        figure,
                        from,
                        to,
                        unit: if figure == "count" { "samples".into() } else { bs.unit.to_string() },
                    });
                }
            }
        }
        for h in n.histograms.keys().filter(|h| !b.histograms.contains_key(*h)) {
            out.push(Departure::Histogram { scenario: scenario.clone(), histogram: h.clone(), appeared: true });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checker::LIVENESS;
    use crate::families::election::invariants::ELECTION;

    static EXPECTED: Invariant = ELECTION;

    fn figures(p99: u64, violations: &[(u64, Invariant)]) -> Baseline {
        let summary = Summary { count: 40, min: 1, p50: 20, p90: 80, p99, max: p99 + 10, unit: crate::stats::Unit::Ms };
        let scenario = ScenarioFigures {
            seeds: vec![1, 2],
            violations: violations.iter().map(|(s, i)| (*s, vec![i.clone()])).collect(),
            histograms: BTreeMap::from([("failover".to_string(), summary)]),
        };
        Baseline { format: 1, tolerance: Tolerance::DEFAULT, scenarios: BTreeMap::from([("x".to_string(), scenario)]) }
    }

    #[test]
    fn moves_within_tolerance_pass_and_beyond_fail_readably() {
        let base = figures(100, &[(1, ELECTION)]);
        assert!(compare(&base, &figures(109, &[(1, ELECTION)]), |_| Some(&EXPECTED)).is_empty());
        let drift = compare(&base, &figures(250, &[(1, ELECTION)]), |_| Some(&EXPECTED));
        let text: Vec<String> = drift.iter().map(|d| d.to_string()).collect();
        assert_eq!(text, ["x failover p99: 100 → 250 ms (+150 %)", "x failover max: 110 → 260 ms (+136 %)"]);
        let lost = compare(&base, &figures(100, &[]), |_| Some(&EXPECTED));
        assert_eq!(lost[0].to_string(), "x seed 1: no longer violates election (the harness stopped catching it)");
        let new = compare(&base, &figures(100, &[(1, ELECTION), (2, LIVENESS)]), |_| Some(&EXPECTED));
        assert!(new[0].to_string().starts_with("x seed 2: new violation of liveness"), "{new:?}");
        // Small figures get the absolute floor: 2 ms may become 7 ms.
        assert!(Tolerance::DEFAULT.allows(2, 7) && !Tolerance::DEFAULT.allows(2, 8));
    }
}
