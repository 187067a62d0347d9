//! An experiment's seeds from a `#[test]`: [`check`] panics on a violation,
//! [`try_check`] returns it; [`replay`] runs one seed and prints it.
//!
//! A test of one's own code should not carry a seed loop, a replay flag and
//! violation printing of its own: these run the seeds through the same
//! machinery as `rp-sim explore` (one job per CPU, the lowest violating
//! seed first whatever the number of jobs, the replay command the
//! experiment gives) and make one error of what went wrong. Two variables
//! change what runs without touching the test: [`SEED_ENV`] runs one seed
//! and prints its whole history (what a printed replay command sets), and
//! [`SEEDS_ENV`] runs more seeds than the test names.

use core::fmt;

use crate::experiment::{Experiment, SEEDS_ENV, SEED_ENV};
use crate::exploration::{Exploration, SeedReport};
use crate::explore::{explore_with, ExploreOptions};
use crate::jobs::Jobs;
use crate::outcome::{Outcome, Situation};
use crate::servers::{Servers, SetupError};

/// Runs seeds `0..seeds` of `experiment` (or as [`SEED_ENV`] and
/// [`SEEDS_ENV`] say) and returns what they found; panics with the message
/// of [`CheckError`] (the seed, its violations, the replay command) when a
/// seed violates something, a run cannot be set up, or a declared situation
/// was reached by no seed.
///
/// # Panics
///
/// On every error [`try_check`] returns: that is how a `#[test]` fails.
pub fn check(experiment: &dyn Experiment, seeds: u64) -> Exploration {
    match try_check(experiment, seeds) {
        Ok(exploration) => exploration,
        Err(e) => panic!("{e}"),
    }
}

/// [`check`], returning the error instead of panicking.
///
/// Seeds `0..seeds`, one job per CPU (no more than seeds), stopping at the
/// first violating seed in seed order. With `RP_SIM_SEED=N` in the
/// environment only seed `N` runs and its history is printed (see
/// [`replay`]); with `RP_SIM_SEEDS=N`, seeds `0..N` run instead of
/// `0..seeds`.
pub fn try_check(experiment: &dyn Experiment, seeds: u64) -> Result<Exploration, CheckError> {
    if let Some(seed) = from_env(SEED_ENV)? {
        return replay(experiment, seed);
    }
    let seeds = from_env(SEEDS_ENV)?.unwrap_or(seeds);
    let jobs = u32::try_from(seeds).unwrap_or(u32::MAX).min(Jobs::available().get());
    let options = ExploreOptions::new(0, seeds).jobs(Jobs::new(jobs).unwrap_or(Jobs::ONE)).fail_fast(true);
    let exploration = explore_with(experiment, &mut Servers::new(), options)
        .map_err(|error| CheckError::Setup { experiment: experiment.name().to_string(), error })?;
    let exploration = verdict(exploration)?;
    let unreached: Vec<String> = exploration.unreached().into_iter().map(String::from).collect();
    if seeds > 0 && !unreached.is_empty() {
        return Err(CheckError::Unreached { situations: unreached, exploration: Box::new(exploration) });
    }
    Ok(exploration)
}

/// Runs seed `seed` of `experiment` alone, prints its whole history, its
/// violations and its digest on stdout (a test shows them when it fails, or
/// with `--nocapture`), and judges it as [`try_check`] does, declared
/// situations apart: one seed need not reach them all.
pub fn replay(experiment: &dyn Experiment, seed: u64) -> Result<Exploration, CheckError> {
    let exploration = explore_with(&Printed(experiment), &mut Servers::new(), ExploreOptions::new(seed, 1))
        .map_err(|error| CheckError::Setup { experiment: experiment.name().to_string(), error })?;
    verdict(exploration)
}

/// The exploration, or the first violating seed's error.
fn verdict(exploration: Exploration) -> Result<Exploration, CheckError> {
    match exploration.violating.first() {
        Some(first) => Err(CheckError::Violated { first: first.clone(), exploration: Box::new(exploration) }),
        None => Ok(exploration),
    }
}

/// The whole number in variable `var`, if it is set.
fn from_env(var: &'static str) -> Result<Option<u64>, CheckError> {
    match std::env::var(var) {
        Err(std::env::VarError::NotPresent) => Ok(None),
        Ok(value) => value.trim().parse().map(Some).map_err(|_| CheckError::Environment { var, value }),
        Err(std::env::VarError::NotUnicode(value)) => {
            Err(CheckError::Environment { var, value: value.to_string_lossy().into_owned() })
        }
    }
}

/// An experiment whose every run is printed once it is judged.
struct Printed<'a>(&'a dyn Experiment);

impl Experiment for Printed<'_> {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn run(&self, servers: &mut Servers, seed: u64) -> Result<Outcome, SetupError> {
        let outcome = self.0.run(servers, seed)?;
        // `println!`, not a locked stdout: libtest captures only the macros.
        println!("{} seed {seed}: {} events", self.0.name(), outcome.history.len());
        for event in &outcome.history {
            println!("{event}");
        }
        for violation in &outcome.violations {
            println!("VIOLATION {violation}");
        }
        println!("digest: {}", outcome.digest);
        Ok(outcome)
    }

    fn situations(&self) -> &[Situation] {
        self.0.situations()
    }

    fn replay_command(&self, seed: u64) -> String {
        self.0.replay_command(seed)
    }

    fn timeline(&self, outcome: &Outcome, replay: &str) -> String {
        self.0.timeline(outcome, replay)
    }
}

/// Why [`try_check`] failed.
#[derive(Debug)]
pub enum CheckError {
    /// A seed violated something: the lowest such seed.
    Violated {
        /// That seed, its violations, its schedule and its replay command.
        first: SeedReport,
        /// The seeds that ran, up to and including it.
        exploration: Box<Exploration>,
    },
    /// Every seed ran clean, but no seed reached these declared situations.
    Unreached {
        /// Their names.
        situations: Vec<String>,
        /// The seeds that ran.
        exploration: Box<Exploration>,
    },
    /// A run could not happen (a server, the clock library, an invalid
    /// schedule).
    Setup {
        /// The experiment's name.
        experiment: String,
        /// What went wrong.
        error: SetupError,
    },
    /// [`SEED_ENV`] or [`SEEDS_ENV`] is set to something other than a whole
    /// number.
    Environment {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
    },
}

impl fmt::Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CheckError::Violated { first, exploration } => {
                let n = first.violations.len();
                let plural = if n == 1 { "" } else { "s" };
                writeln!(f, "{}: seed {} violated {n} invariant{plural}:", exploration.scenario, first.seed)?;
                for v in &first.violations {
                    writeln!(f, "  {v}")?;
                }
                if !first.schedule.is_empty() {
                    let schedule: Vec<String> = first.schedule.iter().map(ToString::to_string).collect();
                    writeln!(f, "schedule: {}", schedule.join("; "))?;
                }
                write!(f, "replay: {}", first.replay)
            }
            CheckError::Unreached { situations, exploration } => write!(
                f,
                "{}: none of seeds {}..{} reached {}",
                exploration.scenario,
                exploration.start_seed,
                exploration.start_seed + exploration.seeds,
                situations.join(", ")
            ),
            CheckError::Setup { experiment, error } => write!(f, "{experiment}: set-up error: {error}"),
            CheckError::Environment { var, value } => write!(f, "{var}={value:?}: expected a whole number"),
        }
    }
}

impl std::error::Error for CheckError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CheckError::Setup { error, .. } => Some(error),
            _ => None,
        }
    }
}
