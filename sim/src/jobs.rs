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
//! outcomes are gathered into the violations, histograms, coverage and
//! digest one job gives (`sim/tests/harness/jobs.rs` compares them). Only
//! wall time differs.
//!
//! The jobs share one [`Ledger`]: each seed's outcome is folded into the
//! exploration in seed order, whichever job ran it and whenever it
//! finished, so even where one job would stop early the result is the same:
//!
//! - **The first fault wins, in seed order.** A set-up error or (with
//!   `--fail-fast`) a violation at seed `s` stops every job before its next
//!   seed above `s`, while seeds below `s` still run; folding stops at the
//!   lowest such seed and drops the seeds past it that other jobs had
//!   already run. `--fail-fast` reports what one job reports: the seeds up
//!   to the first violating one, their histograms and digest.
//! - **A panic stops every job.** A seed that panics (a harness bug) is
//!   named on stderr with its replay command, no job starts another seed,
//!   and the panic surfaces once the others have finished the seed they
//!   were running.
//! - **Progress is one meter**, shared, not one line per job.

use core::fmt;
use core::num::NonZeroU32;
use core::str::FromStr;
use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::experiment::Experiment;
use crate::exploration::Exploration;
use crate::outcome::Outcome;
use crate::placement::Placement;
use crate::progress::Meter;
use crate::servers::{Servers, SetupError};
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

/// What the jobs of one exploration share: the experiment they run (whose
/// replay command each violating seed's report carries); the exploration
/// itself, into which every seed's outcome is folded **in seed order**,
/// whichever job ran it and whenever it finished; the progress meter; and
/// the seed from which no job starts another.
///
/// A seed that finishes before the seeds below it waits in `pending` (a few
/// at most: the jobs take the seeds in turn). Folding stops for good at the
/// first seed that failed or, with fail-fast, violated something: seeds past
/// it that another job had already started are dropped, so the exploration
/// is exactly the one a single job, running the seeds in order, gives.
pub(crate) struct Ledger<'a> {
    experiment: &'a dyn Experiment,
    state: Mutex<Book>,
}

#[derive(Debug)]
struct Book {
    exploration: Exploration,
    meter: Meter,
    fail_fast: bool,
    /// The seeds folded so far are those of `shard` below `next`.
    shard: Shard,
    next: u64,
    /// Outcomes (their histories dropped) of seeds above `next`, and the
    /// events their histories held.
    pending: BTreeMap<u64, Result<(Outcome, u64), SetupError>>,
    /// No seed at or above this one is started (`u64::MAX`: none yet).
    stop_at: u64,
    /// Folding has stopped (a failed seed, or a violating one with fail-fast).
    closed: bool,
    /// The failed seed's error, if folding stopped at one.
    error: Option<SetupError>,
}

impl<'a> Ledger<'a> {
    /// An empty exploration of `experiment`, `shard`'s seeds from `start`.
    pub(crate) fn new(
        experiment: &'a dyn Experiment,
        start: u64,
        meter: Meter,
        fail_fast: bool,
        shard: Shard,
    ) -> Ledger<'a> {
        Ledger {
            experiment,
            state: Mutex::new(Book {
                exploration: Exploration::empty(experiment, start),
                meter,
                fail_fast,
                shard,
                next: start.saturating_add(shard.index()),
                pending: BTreeMap::new(),
                stop_at: u64::MAX,
                closed: false,
                error: None,
            }),
        }
    }

    fn book(&self) -> std::sync::MutexGuard<'_, Book> {
        // A job that panicked while holding the book is re-raised by
        // `run`; until then the book is still consistent seed by seed.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether `seed` is still to run.
    pub(crate) fn runs(&self, seed: u64) -> bool {
        seed < self.book().stop_at
    }

    /// What running `seed` gave.
    pub(crate) fn record(&self, seed: u64, result: Result<Outcome, SetupError>) {
        let mut book = self.book();
        // The history is the bulk of an outcome and nothing past this point
        // reads it: keep its length, and the simulated time it may give.
        let result = result.map(|mut outcome| {
            let events = outcome.history.len() as u64;
            outcome.simulated_ms = outcome.simulated_ms();
            outcome.history = Vec::new();
            (outcome, events)
        });
        match &result {
            Ok((outcome, _)) => {
                let violating = !outcome.violations.is_empty();
                book.meter.step(violating);
                if violating && book.fail_fast {
                    book.stop_at = book.stop_at.min(seed);
                }
            }
            Err(_) => book.stop_at = book.stop_at.min(seed),
        }
        book.pending.insert(seed, result);
        book.fold(self.experiment);
    }

    /// A job is going down (its seed panicked): no job starts another seed.
    pub(crate) fn abandon(&self) {
        self.book().stop_at = 0;
    }

    /// The exploration, or the error of the first seed that failed.
    pub(crate) fn finish(self) -> Result<Exploration, SetupError> {
        let book = self.state.into_inner().unwrap_or_else(|p| p.into_inner());
        book.meter.finish();
        match book.error {
            Some(e) => Err(e),
            None => {
                let mut ex = book.exploration;
                ex.digest = crate::shard::digest_of(&ex.runs);
                Ok(ex)
            }
        }
    }
}

impl Book {
    /// Folds the pending seeds of `experiment` that are next in order.
    fn fold(&mut self, experiment: &dyn Experiment) {
        while !self.closed {
            let Some(result) = self.pending.remove(&self.next) else { return };
            let seed = self.next;
            self.next = self.next.saturating_add(self.shard.count());
            match result {
                Err(e) => {
                    self.error = Some(e);
                    self.closed = true;
                }
                Ok((outcome, events)) => {
                    let violating = !outcome.violations.is_empty();
                    self.exploration.add(experiment, seed, outcome, events);
                    self.closed = violating && self.fail_fast;
                }
            }
        }
        self.pending.clear();
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

    fn outcome(violating: bool) -> Result<Outcome, SetupError> {
        let mut o = Outcome::new(Vec::new());
        o.simulated_ms = 10;
        if violating {
            o.violations.push(crate::checker::Violation::new(
                crate::checker::Invariant::new("planted"),
                Some(1),
                "planted by the test",
            ));
        }
        Ok(o)
    }

    fn ledger(fail_fast: bool, shard: Shard) -> Ledger<'static> {
        let lock = crate::scenarios::find("lock").expect("the lock scenario");
        let meter = Meter::new(crate::progress::Progress::Quiet, "t", "seeds", 10);
        Ledger::new(lock, 100, meter, fail_fast, shard)
    }

    fn seeds_of(ex: &Exploration) -> Vec<u64> {
        ex.runs.iter().map(|r| r.seed).collect()
    }

    #[test]
    fn seeds_fold_in_order_and_fail_fast_drops_what_ran_past_the_first_violation() {
        let l = ledger(true, Shard::WHOLE);
        l.record(102, outcome(true));
        assert!(l.runs(101) && !l.runs(102) && !l.runs(103));
        l.record(103, outcome(true));
        l.record(101, outcome(false));
        l.record(100, outcome(false));
        let ex = l.finish().expect("no set-up error");
        assert_eq!(seeds_of(&ex), vec![100, 101, 102]);
        assert_eq!(ex.violating.iter().map(|v| v.seed).collect::<Vec<_>>(), vec![102]);
        assert_eq!(ex.violating[0].replay, "rp-sim replay --scenario lock --seed 102", "the experiment's command");
        assert_eq!(ex.simulated_ms, 30);

        let l = ledger(false, Shard::WHOLE);
        for seed in [101, 100, 103, 102] {
            l.record(seed, outcome(seed % 2 == 1));
        }
        assert!(l.runs(104), "without fail-fast a violation stops nothing");
        let ex = l.finish().expect("no set-up error");
        assert_eq!(seeds_of(&ex), vec![100, 101, 102, 103]);
        assert_eq!(ex.violating.len(), 2);
    }

    #[test]
    fn the_lowest_failed_seed_decides_unless_a_violation_came_first() {
        let failed = || Err(SetupError::InvalidPlan { reason: "planted by the test".into() });
        let l = ledger(false, Shard::WHOLE);
        l.record(102, failed());
        assert!(!l.runs(102) && l.runs(101));
        l.record(100, outcome(true));
        l.record(101, outcome(false));
        assert!(l.finish().is_err(), "one job stops at 102's error too");

        let l = ledger(true, Shard::WHOLE);
        l.record(102, failed());
        l.record(101, outcome(true));
        l.record(100, outcome(false));
        let ex = l.finish().expect("the violation at 101 came first");
        assert_eq!(seeds_of(&ex), vec![100, 101]);

        // In a shard, the next seed in order is the shard's next.
        let l = ledger(false, Shard::new(1, 2).expect("1/2"));
        l.record(103, outcome(false));
        l.record(101, outcome(false));
        assert_eq!(seeds_of(&l.finish().expect("no error")), vec![101, 103]);
    }
}
