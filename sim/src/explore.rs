//! Exploration: run an experiment (a registered scenario, or a user's own
//! world) over a range of seeds and gather what they found.
//!
//! Shared by `rp-sim explore`, `rp-sim report` and [`crate::check()`]. One
//! server pool serves every seed of a job (resetting a server costs far
//! less than starting one); `crate::jobs` runs several jobs at once. Wall
//! time is measured here with `std::time::Instant`, *outside* the simulation:
//! it is the harness's own speed, not something any simulated code reads.

use std::time::Instant;

use crate::experiment::Experiment;
use crate::exploration::Exploration;
use crate::jobs::{Jobs, Ledger};
use crate::progress::{Meter, Progress};
use crate::servers::{Servers, SetupError};
use crate::shard::Shard;

/// Which seeds an exploration runs, and how.
#[derive(Debug, Clone, Copy)]
pub struct ExploreOptions {
    /// First seed of the range.
    pub start: u64,
    /// Seeds in the range (every shard's together).
    pub seeds: u64,
    /// Which of them this process runs ([`Shard::WHOLE`]: all).
    pub shard: Shard,
    /// How many run at once, each on a server pool of its own.
    pub jobs: Jobs,
    /// Progress on stderr.
    pub progress: Progress,
    /// Stop at the first violating seed (in seed order).
    pub fail_fast: bool,
    /// Run every seed twice and require one history
    /// ([`crate::compare_histories`]): the determinism self-check.
    pub twice: bool,
}

impl ExploreOptions {
    /// Seeds `start..start + seeds`, the whole range, one job, quiet, every
    /// seed run.
    pub fn new(start: u64, seeds: u64) -> ExploreOptions {
        ExploreOptions {
            start,
            seeds,
            shard: Shard::WHOLE,
            jobs: Jobs::ONE,
            progress: Progress::Quiet,
            fail_fast: false,
            twice: false,
        }
    }

    /// Only `shard`'s seeds of the range.
    pub fn shard(self, shard: Shard) -> ExploreOptions {
        ExploreOptions { shard, ..self }
    }

    /// `jobs` simulations at once.
    pub fn jobs(self, jobs: Jobs) -> ExploreOptions {
        ExploreOptions { jobs, ..self }
    }

    /// Progress shown as `progress` says.
    pub fn progress(self, progress: Progress) -> ExploreOptions {
        ExploreOptions { progress, ..self }
    }

    /// Whether to stop at the first violating seed.
    pub fn fail_fast(self, fail_fast: bool) -> ExploreOptions {
        ExploreOptions { fail_fast, ..self }
    }

    /// Run every seed twice and stop with
    /// [`SetupError::Nondeterministic`] at the first (lowest) seed whose two
    /// histories differ. Doubles the time.
    pub fn twice(self, twice: bool) -> ExploreOptions {
        ExploreOptions { twice, ..self }
    }
}

/// Runs seeds `start..start + seeds` of `experiment`; with `fail_fast`,
/// stops after the first violating seed (the exploration then reports the
/// seeds it ran).
pub fn explore(
    experiment: &dyn Experiment,
    servers: &mut Servers,
    start: u64,
    seeds: u64,
    progress: Progress,
    fail_fast: bool,
) -> Result<Exploration, SetupError> {
    explore_with(experiment, servers, ExploreOptions::new(start, seeds).progress(progress).fail_fast(fail_fast))
}

/// Runs the seeds of `experiment` that `options` names; with more than one
/// job, the first job uses `servers` and every other one a pool of its own
/// placed alike (`crate::jobs` says why the result is the one a single job
/// gives).
pub fn explore_with(
    experiment: &dyn Experiment,
    servers: &mut Servers,
    options: ExploreOptions,
) -> Result<Exploration, SetupError> {
    let started = Instant::now();
    let ExploreOptions { start, seeds, shard, jobs, progress, fail_fast, twice } = options;
    let end = start.saturating_add(seeds);
    // This shard's share of the range: what the progress counts towards.
    let share = (start..end).filter(|&s| shard.includes(start, s)).count() as u64;
    let meter = Meter::new(progress, experiment.name(), "seeds", share);
    let ledger = Ledger::new(experiment, start, meter, fail_fast, shard);
    let parts = crate::jobs::run(jobs, servers, shard, |servers, part| {
        let began = Instant::now();
        for seed in (start..end).filter(|&s| part.includes(start, s)) {
            if !ledger.runs(seed) {
                break;
            }
            // A panic is a harness bug: say which seed, stop the other jobs
            // after their current seed, and let it surface.
            let run = || {
                let _stop = StopOnPanic(&ledger);
                let mut first = experiment.run(servers, seed)?;
                // A live run's checks of instants are weighed with its jitter
                // (a no-op in the simulation).
                first.weigh_jitter();
                if twice {
                    let second = experiment.run(servers, seed)?;
                    crate::determinism::compare_histories(seed, &first.history, &second.history)
                        .map_err(|d| SetupError::Nondeterministic(Box::new(d)))?;
                }
                Ok(first)
            };
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)) {
                Ok(result) => ledger.record(seed, result),
                Err(panic) => {
                    ledger.abandon();
                    eprintln!(
                        "rp-sim: seed {seed} of {} panicked; {}",
                        experiment.name(),
                        experiment.replay_command(seed)
                    );
                    std::panic::resume_unwind(panic);
                }
            }
        }
        (began.elapsed(), servers.cpu())
    });
    let mut ex = ledger.finish()?;
    ex.wall = started.elapsed();
    ex.busy = parts.iter().map(|(busy, _)| *busy).sum();
    ex.cpus = parts.iter().filter_map(|(_, cpu)| *cpu).collect();
    ex.jobs = jobs.get();
    Ok(ex)
}

/// Stops every job as soon as a seed's panic starts unwinding, not once it
/// is caught: the other jobs look at the ledger between seeds, and the
/// panic hook before the unwinding (a backtrace, on a loaded machine) can
/// take longer than their next seed.
struct StopOnPanic<'a, 'e>(&'a crate::jobs::Ledger<'e>);

impl Drop for StopOnPanic<'_, '_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.abandon();
        }
    }
}
