//! Running one exploration's seeds on several cores at once.
//!
//! A simulation is single-threaded: one thread ticks turmoil and, through
//! the bridge, takes turns with its redis-servers on one core
//! ([ADR 0019](../../docs/decisions/0019-simulation-on-one-core.md)). What is
//! left of a simulation's speed is turmoil ticking every host every
//! simulated millisecond, which this project does not control; what it does
//! control is how many simulations run at once. `--jobs N` runs N of them,
//! each in a thread of its own with a server pool of its own (and so, with
//! the default placement, a core of its own).
//!
//! Seeds are independent, so the split cannot change what is found: job
//! `j` of `N` runs the seeds of [`Shard`] `i + n·j` of `n·N` when the
//! exploration is itself shard `i/n` (the whole range is shard `0/1`), and
//! the parts are combined exactly as `rp-sim merge` combines shards, into
//! the violations, histograms, coverage and digest one job gives
//! (`sim/tests/harness/jobs.rs` compares them). Only wall time differs.
//!
//! Two things would differ if done naively, and are not:
//!
//! - **The first fault wins, in seed order.** A set-up error or (with
//!   `--fail-fast`) a violation at seed `s` stops every job before its next
//!   seed above `s`, while seeds below `s` still run; the lowest seed with a
//!   fault decides the result, as in one job, whichever job got there first.
//! - **Progress is one meter**, shared, not one line per job.
//!
//! With `--fail-fast` and more than one job, seeds above the first
//! violating one that other jobs had already started are reported with it:
//! the first violating seed does not depend on timing, how many seeds ran
//! past it does.

use core::fmt;
use core::num::NonZeroU32;
use core::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::placement::Placement;
use crate::progress::Meter;
use crate::servers::Servers;
use crate::shard::Shard;

/// How many simulations an exploration runs at once (at least one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Jobs(NonZeroU32);

impl Jobs {
    /// One simulation at a time, on the caller's thread.
    pub const ONE: Jobs = Jobs(NonZeroU32::MIN);

    /// `n` at once; zero is refused.
    pub fn new(n: u32) -> Result<Jobs, JobsError> {
        NonZeroU32::new(n).map(Jobs).ok_or_else(|| JobsError(n.to_string()))
    }

    /// One per CPU this process may run on (`sched_getaffinity`), or one
    /// when that cannot be read.
    pub fn available() -> Jobs {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        Jobs(NonZeroU32::new(u32::try_from(n).unwrap_or(u32::MAX)).unwrap_or(NonZeroU32::MIN))
    }

    /// The count.
    pub fn get(self) -> u32 {
        self.0.get()
    }

    /// Shard `j` of this many jobs inside `shard`: the seeds of `shard`
    /// whose position among them is `j` modulo the job count.
    fn part(self, shard: Shard, j: u32) -> Shard {
        let n = u64::from(self.get());
        // index + count·j < count·n: a valid shard by construction, which
        // `Shard::new` checks again rather than this file trusting itself.
        Shard::new(shard.index() + shard.count() * u64::from(j), shard.count() * n).unwrap_or(shard)
    }
}

impl Default for Jobs {
    fn default() -> Jobs {
        Jobs::ONE
    }
}

impl fmt::Display for Jobs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl FromStr for Jobs {
    type Err = JobsError;

    fn from_str(s: &str) -> Result<Jobs, JobsError> {
        s.trim().parse::<u32>().map_err(|_| JobsError(s.to_string())).and_then(Jobs::new)
    }
}

/// `--jobs` was not a whole number of at least 1.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--jobs expects a whole number of at least 1, got {0:?}")]
pub struct JobsError(String);

/// What the jobs of one exploration share: the progress meter, and the seed
/// from which no job starts another.
#[derive(Debug)]
pub(crate) struct Pace {
    meter: Mutex<Meter>,
    fail_fast: bool,
    /// Seeds at or above this one are not started (`u64::MAX`: none yet).
    stop_at: AtomicU64,
}

impl Pace {
    pub(crate) fn new(meter: Meter, fail_fast: bool) -> Pace {
        Pace { meter: Mutex::new(meter), fail_fast, stop_at: AtomicU64::new(u64::MAX) }
    }

    /// Whether `seed` is still to run.
    pub(crate) fn runs(&self, seed: u64) -> bool {
        seed < self.stop_at.load(Ordering::Acquire)
    }

    /// `seed` ran; `violating` says whether it violated something.
    pub(crate) fn ran(&self, seed: u64, violating: bool) {
        if violating && self.fail_fast {
            self.stop_at.fetch_min(seed, Ordering::AcqRel);
        }
        // A job that panicked while holding the meter only leaves a stale
        // count behind: keep counting.
        self.meter.lock().unwrap_or_else(|p| p.into_inner()).step(violating);
    }

    /// `seed` could not run: no job starts a seed above it.
    pub(crate) fn failed(&self, seed: u64) {
        self.stop_at.fetch_min(seed, Ordering::AcqRel);
    }

    /// Leaves the meter's last state on screen.
    pub(crate) fn finish(self) {
        self.meter.into_inner().unwrap_or_else(|p| p.into_inner()).finish();
    }
}

/// Runs `part` once per job: the first on the caller's thread with its pool
/// `servers`, every other one in a thread of its own with a new pool placed
/// like `servers`. Returns each job's result in job order.
pub(crate) fn run<T, F>(jobs: Jobs, servers: &mut Servers, shard: Shard, part: F) -> Vec<T>
where
    T: Send,
    F: Fn(&mut Servers, Shard) -> T + Sync,
{
    if jobs == Jobs::ONE {
        return vec![part(servers, shard)];
    }
    let placement: Placement = servers.placement();
    // A thread inherits the CPU its parent's pool pinned it to; each job's
    // pool must choose its own.
    let unpinned = servers.unpinned();
    std::thread::scope(|scope| {
        let others: Vec<_> = (1..jobs.get())
            .map(|j| {
                let part = &part;
                scope.spawn(move || {
                    unpinned.restore();
                    // Dropped in this thread, which started its servers:
                    // they are tied to it (`PR_SET_PDEATHSIG`).
                    let mut own = Servers::with_placement(placement);
                    part(&mut own, jobs.part(shard, j))
                })
            })
            .collect();
        let mut results = vec![part(servers, jobs.part(shard, 0))];
        for handle in others {
            match handle.join() {
                Ok(r) => results.push(r),
                // The job's panic is the harness's bug; surface it as one.
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        results
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_parse_and_refuse_zero() {
        assert_eq!("3".parse::<Jobs>().unwrap().get(), 3);
        for bad in ["0", "-1", "x", "", "1.5"] {
            assert!(bad.parse::<Jobs>().is_err(), "{bad}");
        }
        assert!(Jobs::available().get() >= 1);
    }

    #[test]
    fn the_parts_of_a_shard_partition_it() {
        let jobs = Jobs::new(3).unwrap();
        for shard in [Shard::WHOLE, Shard::new(1, 2).unwrap(), Shard::new(0, 4).unwrap()] {
            let parts: Vec<Shard> = (0..3).map(|j| jobs.part(shard, j)).collect();
            for seed in 1000..1100 {
                let owners = parts.iter().filter(|p| p.includes(1000, seed)).count();
                assert_eq!(owners, usize::from(shard.includes(1000, seed)), "seed {seed} of {shard}");
            }
        }
    }

    #[test]
    fn the_lowest_fault_stops_later_seeds_only() {
        let pace = Pace::new(Meter::new(crate::progress::Progress::Quiet, "t", "seeds", 10), true);
        assert!(pace.runs(9));
        pace.ran(7, true);
        assert!(pace.runs(6) && !pace.runs(7) && !pace.runs(8));
        pace.failed(4);
        pace.ran(5, true);
        assert!(pace.runs(3) && !pace.runs(4));
        let lenient = Pace::new(Meter::new(crate::progress::Progress::Quiet, "t", "seeds", 10), false);
        lenient.ran(2, true);
        assert!(lenient.runs(3));
    }
}
