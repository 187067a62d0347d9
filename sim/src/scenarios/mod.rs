//! The scenario registry: every name `rp-sim scenarios` lists, what it does,
//! and what it is expected to find.
//!
//! A scenario is one registry row whose family variant ([`Runner`]), given
//! a pool of real servers and a seed, builds a turmoil simulation (through [`crate::World`]), drives
//! production types through a fault schedule derived from the seed, and
//! returns an [`Outcome`]: the history, its digest, the violations its
//! checkers found, its histograms and the schedule it ran.
//!
//! Broken variants (`lock-naive`, `fencing-unfenced`, …) are listed with the
//! invariant they must break ([`Expect::Violates`]): the harness is only
//! trusted if it catches them, and `sim/tests/harness/scenarios.rs` pins seeds that
//! prove it does.

use crate::api::{FENCED_STORE_READ, FENCED_STORE_WRITE};
use crate::families::election::api::{ELECTION_RUN, ELECTION_STOP};
use crate::families::lock::api::{LOCK_ACQUIRE, LOCK_RELEASE};
use crate::families::rate_limit::api::{COUNTER_CHECK, COUNTER_CHECK_AT, LOG_CHECK, LOG_CHECK_AT};
use crate::families::redlock::api::{
    REDLOCK_ACQUIRE, REDLOCK_ACQUIRE_WITH_RETRY, REDLOCK_CONNECT, REDLOCK_EXTEND, REDLOCK_RELEASE,
};
use crate::families::{election, job_queue, lock, rate_limit, redlock};
use crate::family::Runner;
use crate::history::Api;
pub use crate::outcome::{outcome_from, Outcome, Situation};

/// What a scenario should find.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// A correct primitive: no invariant may be violated, on any seed.
    Clean,
    /// A broken variant: it must violate this invariant (on its pinned seeds,
    /// and on most seeds of an exploration).
    Violates(&'static Invariant),
}

/// One entry of the registry.
#[derive(Debug, Clone, Copy)]
pub struct Scenario {
    /// The name given to `--scenario`.
    pub name: &'static str,
    /// One line for `rp-sim scenarios`.
    pub description: &'static str,
    /// What it should find.
    pub expect: Expect,
    /// Its family and variant: what runs it ([`crate::Family`]).
    pub runs: &'static dyn Runner,
    /// The situations it exists to reach (see [`Situation`]).
    pub situations: &'static [Situation],
    /// The public library operations (`Lock::extend`) its workload exists
    /// to call: the pinned seeds must call each (`sim/tests/slow/coverage.rs`),
    /// or the simulation could not find a bug in it. Empty for a broken one.
    pub operations: &'static [Api],
    /// The library's Lua scripts its histories depend on (their names, as
    /// `redis_primitives::mutation_scripts` lists them): `rp-sim mutants`
    /// judges each script's mutants by these scenarios. Empty for a broken one.
    pub scripts: &'static [&'static str],
    /// Invariants its family judges beyond the built-in ones
    /// ([`crate::checker::INVARIANTS`]), with their one-line meanings: a
    /// family added through the registry brings its own (see [`invariants`]).
    pub invariants: &'static [(Invariant, &'static str)],
    /// For a broken variant: seeds on which it must show its violation
    /// (`sim/tests/harness/scenarios.rs` runs them; a correct scenario is
    /// held to the clean seeds `0..24` instead). Empty for a correct one.
    pub pinned_seeds: &'static [u64],
}

impl Scenario {
    /// What it must show, in words: `must not violate anything`, or
    /// `broken on purpose: must violate <invariant>`.
    pub fn expectation(&self) -> String {
        match self.expect {
            Expect::Clean => "must not violate anything".to_string(),
            Expect::Violates(inv) => format!("broken on purpose: must violate {inv}"),
        }
    }

    /// A self-contained HTML timeline of one of its runs
    /// ([`crate::Timeline`]); `replay` is the command that reproduces it.
    pub fn timeline(&self, outcome: &Outcome, replay: &str) -> String {
        let digest = outcome.digest.to_string();
        let expectation = self.expectation();
        crate::timeline::Timeline {
            scenario: self.name,
            expectation: &expectation,
            replay,
            nodes: self.nodes(),
            simulated_ms: outcome.simulated_ms(),
            digest: &digest,
            events: &outcome.history,
            violations: &outcome.violations,
            tenures: &self.runs.tenures(&outcome.history),
        }
        .html()
    }

    /// Redis nodes its runs need.
    pub fn nodes(&self) -> u32 {
        self.runs.nodes()
    }
}

use crate::checker::{Invariant, NO_STALE_OVERWRITE};
use crate::families::election::invariants::ELECTION;
use crate::families::lock::invariants::{FENCING_TOKENS_INCREASE, MUTUAL_EXCLUSION};
use crate::families::rate_limit::invariants::RATE_LIMIT;
use crate::families::redlock::invariants::REDLOCK_MUTUAL_EXCLUSION;

/// Every invariant a checker may name: the built-in ones, then those the
/// registry's families declare, each once, in that order.
pub fn invariants() -> Vec<(Invariant, &'static str)> {
    let mut all: Vec<(Invariant, &'static str)> = crate::checker::INVARIANTS.to_vec();
    let families = crate::families::REPORT_PARTS.iter().flat_map(|part| part.invariants);
    for (name, meaning) in families.chain(SCENARIOS.iter().flat_map(|s| s.invariants)) {
        if !all.iter().any(|(n, _)| n == name) {
            all.push((name.clone(), meaning));
        }
    }
    all
}

/// Every scenario, in the order `rp-sim scenarios` lists them.
pub const SCENARIOS: &[Scenario] = &[
    Scenario {
        name: "lock",
        description: "Lock: contending clients with process pauses, partitions and latency; tokens increase, no two trusted holders",
        expect: Expect::Clean,
        situations: lock::SITUATIONS,
        operations: lock::OPERATIONS,
        scripts: &["lock_acquire", "lock_release", "lock_extend", "fenced_write"],
        invariants: &[],
        runs: &lock::LockVariant::Lock,
        pinned_seeds: &[],
    },
    Scenario {
        name: "lock-naive",
        description: "NaiveLock (bare DEL release): a holder whose lease expired deletes the next holder's lock, letting a third in",
        expect: Expect::Violates(&MUTUAL_EXCLUSION),
        situations: &[],
        operations: &[],
        scripts: &[],
        invariants: &[],
        runs: &lock::LockVariant::Naive,
        pinned_seeds: &[1, 2, 3],
    },
    Scenario {
        name: "fencing",
        description: "Lock + FencedStore: a paused holder's late write is refused; the final value has the highest token",
        expect: Expect::Clean,
        situations: lock::FENCING_SITUATIONS,
        operations: &[FENCED_STORE_WRITE, FENCED_STORE_READ],
        scripts: &["lock_acquire", "fenced_write"],
        invariants: &[],
        runs: &lock::LockVariant::Fencing,
        pinned_seeds: &[],
    },
    Scenario {
        name: "fencing-unfenced",
        description: "Lock + UnfencedStore: the paused holder's late write silently overwrites the newer one",
        expect: Expect::Violates(&NO_STALE_OVERWRITE),
        situations: &[],
        operations: &[],
        scripts: &[],
        invariants: &[],
        runs: &lock::LockVariant::Unfenced,
        pinned_seeds: &[0, 3, 4],
    },
    Scenario {
        name: "rate-limit",
        description: "SlidingWindowLog: concurrent bursts across window boundaries with latency and partitions; never more than the limit",
        expect: Expect::Clean,
        situations: rate_limit::LOG_SITUATIONS,
        operations: &[LOG_CHECK, LOG_CHECK_AT],
        scripts: &["sliding_log"],
        invariants: &[],
        runs: &rate_limit::RateLimitVariant::Log,
        pinned_seeds: &[],
    },
    Scenario {
        name: "rate-limit-counter",
        description: "SlidingWindowCounter: the same bursts; the overshoot is measured and held to its documented bound 2*max-1",
        expect: Expect::Clean,
        situations: rate_limit::COUNTER_SITUATIONS,
        operations: &[COUNTER_CHECK, COUNTER_CHECK_AT],
        scripts: &["sliding_counter"],
        invariants: &[],
        runs: &rate_limit::RateLimitVariant::Counter,
        pinned_seeds: &[],
    },
    Scenario {
        name: "rate-limit-fixed-window",
        description: "NaiveFixedWindow (INCR+EXPIRE): a burst at a boundary admits twice the limit inside one window",
        expect: Expect::Violates(&RATE_LIMIT),
        situations: &[],
        operations: &[],
        scripts: &[],
        invariants: &[],
        runs: &rate_limit::RateLimitVariant::FixedWindow,
        pinned_seeds: &[1, 2, 3],
    },
    Scenario {
        name: "rate-limit-client-side",
        description: "ClientSideWindow (ZREMRANGEBYSCORE, ZCARD, ZADD as separate round trips): concurrent callers overshoot",
        expect: Expect::Violates(&RATE_LIMIT),
        situations: &[],
        operations: &[],
        scripts: &[],
        invariants: &[],
        runs: &rate_limit::RateLimitVariant::ClientSide,
        pinned_seeds: &[1, 2, 3],
    },
    Scenario {
        name: "rate-limit-watch-multi",
        description: "WatchMultiLimiter on one shared multiplexed connection: EXEC clears every watch, so concurrent callers all pass",
        expect: Expect::Violates(&RATE_LIMIT),
        situations: &[],
        operations: &[],
        scripts: &[],
        invariants: &[],
        runs: &rate_limit::RateLimitVariant::WatchMulti,
        pinned_seeds: &[1, 2, 3],
    },
    Scenario {
        name: "election",
        description: "Election (epoch = fencing token): leader pauses, stops and partitions; one leader per epoch, stale writes refused",
        expect: Expect::Clean,
        situations: election::SITUATIONS,
        operations: &[ELECTION_RUN, ELECTION_STOP],
        scripts: &["lock_acquire", "lock_release", "lock_extend", "fenced_write"],
        invariants: &[],
        runs: &election::ElectionVariant::Election,
        pinned_seeds: &[],
    },
    Scenario {
        name: "election-renew-only",
        description: "Election with the reference's tick-based demotion (demote only when a renewal fails), kept for comparison",
        expect: Expect::Clean,
        situations: election::RENEW_ONLY_SITUATIONS,
        operations: &[ELECTION_RUN, ELECTION_STOP],
        scripts: &[],
        invariants: &[],
        runs: &election::ElectionVariant::RenewOnly,
        pinned_seeds: &[],
    },
    Scenario {
        name: "election-no-epoch",
        description: "NaiveElection (no epoch, unfenced writes): a paused leader wakes and its write lands after the new leader's",
        expect: Expect::Violates(&ELECTION),
        situations: election::NO_EPOCH_SITUATIONS,
        operations: &[],
        scripts: &[],
        invariants: &[],
        runs: &election::ElectionVariant::NoEpoch,
        pinned_seeds: &[1, 2, 4],
    },
    Scenario {
        name: "election-failover",
        description: "Election on a primary with a replica: replication cut, primary crash, replica promoted; epochs are reissued",
        expect: Expect::Violates(&ELECTION),
        situations: &[],
        operations: &[],
        scripts: &[],
        invariants: &[],
        runs: &election::ElectionVariant::Failover,
        pinned_seeds: &[1, 2, 3],
    },
    Scenario {
        name: "election-failover-acknowledged",
        description: "election-failover with acknowledged campaigns and writes (WAIT 1): no epoch the replica missed is handed out, no write it missed is reported accepted",
        expect: Expect::Clean,
        situations: election::ACKNOWLEDGED_FAILOVER_SITUATIONS,
        operations: &[ELECTION_RUN, ELECTION_STOP, FENCED_STORE_WRITE],
        scripts: &["lock_acquire", "lock_release", "lock_extend", "fenced_write"],
        invariants: crate::checker::acknowledged_writes::DECLARED,
        runs: &election::ElectionVariant::FailoverAcknowledged,
        pinned_seeds: &[],
    },
    Scenario {
        name: "election-failover-floored",
        description: "election-failover with time-floored epochs: the counter goes back at the failover, epochs still increase",
        expect: Expect::Clean,
        situations: election::FAILOVER_SITUATIONS,
        operations: &[ELECTION_RUN, ELECTION_STOP],
        scripts: &["lock_acquire_floored", "lock_release", "lock_extend", "fenced_write"],
        invariants: &[],
        runs: &election::ElectionVariant::FailoverFloored,
        pinned_seeds: &[],
    },
    Scenario {
        name: "counter-loss",
        description: "Lock across a redis-server restart without persistence: the fence counter is lost and tokens are reissued",
        expect: Expect::Violates(&FENCING_TOKENS_INCREASE),
        situations: &[],
        operations: &[],
        scripts: &[],
        invariants: &[],
        runs: &lock::LockVariant::CounterLoss,
        pinned_seeds: &[1, 2, 3],
    },
    Scenario {
        name: "lock-floored",
        description: "lock with time-floored tokens (max(counter + 1, server µs)): every lock checker, every operation, corrupt counters",
        expect: Expect::Clean,
        situations: lock::SITUATIONS,
        operations: lock::OPERATIONS,
        scripts: &["lock_acquire_floored", "lock_release", "lock_extend", "fenced_write"],
        invariants: &[],
        runs: &lock::LockVariant::Floored,
        pinned_seeds: &[],
    },
    Scenario {
        name: "counter-loss-floored",
        description: "counter-loss with time-floored tokens (max(counter + 1, server µs)): the counter is lost, tokens still increase",
        expect: Expect::Clean,
        situations: &[],
        operations: &[LOCK_ACQUIRE, LOCK_RELEASE, FENCED_STORE_WRITE],
        scripts: &["lock_acquire_floored", "lock_release", "fenced_write"],
        invariants: &[],
        runs: &lock::LockVariant::CounterLossFloored,
        pinned_seeds: &[],
    },
    Scenario {
        name: "lock-failover",
        description: "Lock on a primary with a replica: replication cut, primary crash, replica promoted; tokens of the cut are reissued",
        expect: Expect::Violates(&FENCING_TOKENS_INCREASE),
        situations: &[],
        operations: &[],
        scripts: &[],
        invariants: &[],
        runs: &lock::LockVariant::Failover,
        pinned_seeds: &[1, 2, 3],
    },
    Scenario {
        name: "lock-failover-acknowledged",
        description: "lock-failover with acknowledged acquires (WAIT 1): refused during the cut; what was handed out survives the failover",
        expect: Expect::Clean,
        situations: lock::variants::failover::ACKNOWLEDGED_SITUATIONS,
        operations: &[LOCK_ACQUIRE, LOCK_RELEASE, FENCED_STORE_WRITE],
        scripts: &["lock_acquire", "lock_release", "fenced_write"],
        invariants: crate::checker::acknowledged_writes::DECLARED,
        runs: &lock::LockVariant::FailoverAcknowledged,
        pinned_seeds: &[],
    },
    Scenario {
        name: "lock-failover-floored",
        description: "lock-failover with time-floored tokens: the counter goes back at the failover, tokens still increase",
        expect: Expect::Clean,
        situations: lock::variants::failover::FLOORED_SITUATIONS,
        operations: &[LOCK_ACQUIRE, LOCK_RELEASE, FENCED_STORE_WRITE],
        scripts: &["lock_acquire_floored", "lock_release", "fenced_write"],
        invariants: &[],
        runs: &lock::LockVariant::FailoverFloored,
        pinned_seeds: &[],
    },
    Scenario {
        name: "lock-failover-clock-back",
        description: "lock-failover-floored with the promoted server's clock 2 s behind: the floor is below the lost tokens (documented limit)",
        expect: Expect::Violates(&FENCING_TOKENS_INCREASE),
        situations: &[],
        operations: &[],
        scripts: &[],
        invariants: &[],
        runs: &lock::LockVariant::FailoverClockBack,
        pinned_seeds: &[1, 2, 3],
    },
    Scenario {
        name: "redlock",
        description: "Redlock on 5 masters with partitions and pauses; no two clients inside their validity interval",
        expect: Expect::Clean,
        situations: redlock::SITUATIONS,
        operations: &[REDLOCK_CONNECT, REDLOCK_ACQUIRE, REDLOCK_ACQUIRE_WITH_RETRY, REDLOCK_EXTEND, REDLOCK_RELEASE],
        scripts: &["lock_release", "lock_extend"],
        invariants: &[],
        runs: &redlock::RedlockVariant::Correct,
        pinned_seeds: &[],
    },
    Scenario {
        name: "redlock-no-validity",
        description: "Redlock without the elapsed-time validity gate: a slow acquire trusts a lease that has already expired",
        expect: Expect::Violates(&REDLOCK_MUTUAL_EXCLUSION),
        situations: &[],
        operations: &[],
        scripts: &[],
        invariants: &[],
        runs: &redlock::RedlockVariant::NoValidity,
        pinned_seeds: &[2, 3, 4],
    },
    Scenario {
        name: "redlock-clock-jump",
        description: "Redlock with a forward clock step on a minority of masters: two clients each get a majority (documented non-guarantee)",
        expect: Expect::Violates(&REDLOCK_MUTUAL_EXCLUSION),
        situations: &[],
        operations: &[],
        scripts: &[],
        invariants: &[],
        runs: &redlock::RedlockVariant::ClockJump,
        pinned_seeds: &[1, 2, 3],
    },
    Scenario {
        name: "job-queue",
        description: "JobQueue (attempt-fenced job-claim lease): a worker paused past its lease loses the job to another; its late completion is refused, every job completes once",
        expect: Expect::Clean,
        situations: job_queue::SITUATIONS,
        operations: job_queue::OPERATIONS,
        scripts: job_queue::SCRIPTS,
        invariants: &[],
        runs: &job_queue::JobQueueVariant::Fenced,
        pinned_seeds: &[],
    },
    Scenario {
        name: "job-queue-naive",
        description: "NaiveJobQueue (RPOPLPUSH, no lease, no fence): the reaper cannot tell a slow worker from a dead one, so a job is completed twice",
        expect: Expect::Violates(&job_queue::JOB_QUEUE),
        situations: &[],
        operations: &[],
        scripts: &[],
        invariants: &[],
        runs: &job_queue::JobQueueVariant::Naive,
        pinned_seeds: &[0, 1, 2],
    },
];

/// Looks a scenario up by name.
pub fn find(name: &str) -> Option<&'static Scenario> {
    SCENARIOS.iter().find(|s| s.name == name)
}

/// Every name, comma-separated (for error messages).
pub fn names() -> String {
    SCENARIOS.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broken_variants_pin_seeds_and_correct_ones_do_not() {
        for s in SCENARIOS {
            match s.expect {
                Expect::Clean => {
                    assert!(s.pinned_seeds.is_empty(), "{}: a correct scenario runs the clean seeds", s.name)
                }
                Expect::Violates(&_) => assert!(!s.pinned_seeds.is_empty(), "{}: no pinned seeds", s.name),
            }
        }
    }

    #[test]
    fn names_are_unique_and_found() {
        for (i, s) in SCENARIOS.iter().enumerate() {
            assert!(SCENARIOS[i + 1..].iter().all(|t| t.name != s.name), "{} twice", s.name);
            assert_eq!(find(s.name).map(|f| f.name), Some(s.name));
        }
        assert!(find("nope").is_none());
    }
}
