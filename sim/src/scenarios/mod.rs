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

pub mod ack_probe;
pub mod corruption;
pub mod counter_loss;
pub mod fencing;
pub mod fencing_unfenced;
pub mod floor_probe;
pub mod guard_probe;
pub mod job_queue;
pub mod lock;
pub mod lock_failover;
pub mod lock_naive;
pub mod rate_limit;
pub mod redlock;
pub mod redlock_refusal;
pub mod redlock_trust;
pub mod release_race;
pub mod retry_probe;
pub mod stale_lease;
pub mod validation;

use std::collections::{BTreeMap, BTreeSet};

use crate::api::{
    COUNTER_CHECK, COUNTER_CHECK_AT, ELECTION_RUN, ELECTION_STOP, FENCED_STORE_READ, FENCED_STORE_WRITE, LOCK_ACQUIRE,
    LOCK_RELEASE, LOG_CHECK, LOG_CHECK_AT, REDLOCK_ACQUIRE, REDLOCK_ACQUIRE_WITH_RETRY, REDLOCK_CONNECT,
    REDLOCK_EXTEND, REDLOCK_RELEASE,
};
use crate::checker::Violation;
use crate::families::election;
use crate::family::Runner;
use crate::history::{Api, Digest, Event};
use crate::search::{self, PropertySpec, SearchTarget, TargetKind};
use crate::servers::{Servers, SetupError};
use crate::stats::Histograms;

/// What a scenario run produced.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Every event, in order.
    pub history: Vec<Event>,
    /// Stable digest of `history` (see [`crate::history::digest_events`]).
    pub digest: Digest,
    /// What the checkers found.
    pub violations: Vec<Violation>,
    /// Measurements of this run.
    pub histograms: Histograms,
    /// The fault schedule, one readable line per fault (with its undo).
    pub schedule: Vec<String>,
    /// Simulated time the run covered (ms); 0 = unknown (the last event's
    /// time is used instead).
    pub simulated_ms: u64,
    /// The declared situations this run reached (see [`Situation`]): from
    /// the actors' `reached` events, plus what the scenario's analysis of
    /// the history adds.
    pub reached: BTreeSet<String>,
    /// Public library operations invoked, by name (`Lock::extend` → count):
    /// the operations table.
    pub operations: BTreeMap<Api, u64>,
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
                reached.insert(situation.clone());
            }
        }
        Outcome { history, digest, reached, operations, ..Outcome::default() }
    }

    /// Marks `situation` as reached (for situations a scenario recognises
    /// in the finished history rather than while it runs).
    pub fn reach(&mut self, situation: &str) {
        self.reached.insert(situation.to_string());
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
/// the workload injects itself (a leader that stalls at a seeded moment),
/// with their start times; they are merged into the nemesis schedule.
pub fn outcome_from(run: &crate::world::RunOutcome, extra_schedule: Vec<(u64, String)>) -> Outcome {
    let mut outcome = Outcome::new(run.history.events());
    let mut lines: Vec<(u64, String)> = run.schedule.faults.iter().map(|f| (f.at, f.to_string())).collect();
    lines.extend(extra_schedule);
    // Stable: equal times keep nemesis faults first.
    lines.sort_by_key(|(at, _)| *at);
    outcome.schedule = lines.into_iter().map(|(_, l)| l).collect();
    if let Some(draw) = &run.schedule.swarm {
        outcome.schedule.insert(0, draw.to_string());
    }
    outcome.simulated_ms = run.sim_elapsed.as_millis() as u64;
    // Judged for every scenario: no family's faults provoke an error reply.
    outcome.violations.extend(crate::checker::unexpected_errors::check(&outcome.history));
    outcome.violations.extend(crate::checker::configuration::check(&outcome.history));
    outcome.violations.extend(crate::checker::input_validation::check(&outcome.history));
    outcome
}

/// What a scenario should find.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// A correct primitive: no invariant may be violated, on any seed.
    Clean,
    /// A broken variant: it must violate this invariant (on its pinned seeds,
    /// and on most seeds of an exploration).
    Violates(&'static str),
}

/// A situation a scenario exists to reach: a "sometimes" assertion
/// (Antithesis), declared in the registry and counted per run.
///
/// Safety checkers say nothing was violated; situations say the run got
/// somewhere worth checking (a lease expired under a paused holder, a stale
/// write arrived after a newer one). A scenario whose seeds silently stopped
/// reaching one would still pass its checkers: `explore` warns about every
/// declared situation no seed reached, and `sim/tests/slow/coverage.rs` fails
/// when the pinned seeds stop reaching one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Situation {
    /// Short kebab-case name, as recorded in the history.
    pub name: &'static str,
    /// What it means, in one line.
    pub meaning: &'static str,
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
    pub invariants: &'static [(&'static str, &'static str)],
    /// For a broken variant: seeds on which it must show its violation
    /// (`sim/tests/harness/scenarios.rs` runs them; a correct scenario is
    /// held to the clean seeds `0..24` instead). Empty for a correct one.
    pub pinned_seeds: &'static [u64],
    /// What the property search must find in it (a broken variant, or a
    /// documented non-guarantee of a correct primitive under a wider fault
    /// space): `rp-sim report`'s mutation table and
    /// `proptests/tests/search/violations.rs` iterate these.
    pub finds: &'static [SearchTarget],
    /// What the property search must not find in it (an invariant over a
    /// fault space it claims to survive): `proptests/tests/search/properties.rs`
    /// iterates these.
    pub holds: &'static [PropertySpec],
}

impl Scenario {
    /// Runs one seed: the run of the plan the seed draws from
    /// [`Scenario::space`].
    pub fn run(&self, servers: &mut Servers, seed: u64) -> Result<Outcome, SetupError> {
        // A drawn plan is normalised, so valid (`search`'s tests check it).
        let plan = self.space().draw(seed).map_err(|reason| SetupError::InvalidPlan { reason })?;
        self.runs.run_workload(servers, plan.seed, &plan.workload, plan.schedule)
    }

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
        }
        .html()
    }

    /// What its seeds draw (`crate::space`): the family's seed workloads
    /// and nemesis faults for this variant.
    pub fn space(&self) -> crate::space::Space {
        let (workload, faults) = self.runs.seeds();
        crate::space::Space { scenario: self.name, faults, workload }
    }

    /// Redis nodes its runs need.
    pub fn nodes(&self) -> u32 {
        self.runs.nodes()
    }
}

use crate::checker::{
    ELECTION, FENCING_TOKENS_INCREASE, MUTUAL_EXCLUSION, NO_STALE_OVERWRITE, RATE_LIMIT, REDLOCK_MUTUAL_EXCLUSION,
};

/// Every invariant a checker may name: the built-in ones, then those the
/// registry's families declare, each once, in that order.
pub fn invariants() -> Vec<(&'static str, &'static str)> {
    let mut all: Vec<(&'static str, &'static str)> = crate::checker::INVARIANTS.to_vec();
    for s in SCENARIOS {
        for &(name, meaning) in s.invariants {
            if !all.iter().any(|(n, _)| *n == name) {
                all.push((name, meaning));
            }
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
        runs: &lock::Variant::Lock,
        pinned_seeds: &[],
        finds: &[
            SearchTarget {
                name: "lock-restart",
                kind: TargetKind::NonGuarantee,
                invariant: MUTUAL_EXCLUSION,
                what:
                    "a restart without persistence under a held lock: a second client acquires while the first trusts its lease",
                space: search::lock_restart_space,
                case_bound: 200,
                size_bound: 5,
            },
        ],
        holds: &[
            PropertySpec { name: "fencing-tokens-increase", invariant: FENCING_TOKENS_INCREASE, space: search::tokens_space },
        ],
    },
    Scenario {
        name: "lock-naive",
        description: "NaiveLock (bare DEL release): a holder whose lease expired deletes the next holder's lock, letting a third in",
        expect: Expect::Violates(MUTUAL_EXCLUSION),
        situations: &[],
        operations: &[],
        scripts: &[],
        invariants: &[],
        runs: &lock::Variant::Naive,
        pinned_seeds: &[1, 2, 3],
        finds: &[
            SearchTarget {
                name: "lock-naive",
                kind: TargetKind::BrokenVariant,
                invariant: MUTUAL_EXCLUSION,
                what: "bare DEL release: a holder past its lease deletes the next holder's lock",
                space: search::lock_naive_space,
                case_bound: 30,
                size_bound: 4,
            },
        ],
        holds: &[],
    },
    Scenario {
        name: "fencing",
        description: "Lock + FencedStore: a paused holder's late write is refused; the final value has the highest token",
        expect: Expect::Clean,
        situations: lock::FENCING_SITUATIONS,
        operations: &[FENCED_STORE_WRITE, FENCED_STORE_READ],
        scripts: &["lock_acquire", "fenced_write"],
        invariants: &[],
        runs: &lock::Variant::Fencing,
        pinned_seeds: &[],
        finds: &[],
        holds: &[
            PropertySpec { name: "no-stale-overwrite", invariant: NO_STALE_OVERWRITE, space: search::stale_overwrite_space },
        ],
    },
    Scenario {
        name: "fencing-unfenced",
        description: "Lock + UnfencedStore: the paused holder's late write silently overwrites the newer one",
        expect: Expect::Violates(NO_STALE_OVERWRITE),
        situations: &[],
        operations: &[],
        scripts: &[],
        invariants: &[],
        runs: &lock::Variant::Unfenced,
        pinned_seeds: &[0, 3, 4],
        finds: &[
            SearchTarget {
                name: "fencing-unfenced",
                kind: TargetKind::BrokenVariant,
                invariant: NO_STALE_OVERWRITE,
                what: "a resource that ignores the token: a late write overwrites a newer one",
                space: search::fencing_unfenced_space,
                case_bound: 40,
                size_bound: 4,
            },
        ],
        holds: &[],
    },
    Scenario {
        name: "rate-limit",
        description: "SlidingWindowLog: concurrent bursts across window boundaries with latency and partitions; never more than the limit",
        expect: Expect::Clean,
        situations: rate_limit::LOG_SITUATIONS,
        operations: &[LOG_CHECK, LOG_CHECK_AT],
        scripts: &["sliding_log"],
        invariants: &[],
        runs: &rate_limit::Variant::Log,
        pinned_seeds: &[],
        finds: &[],
        holds: &[
            PropertySpec { name: "sliding-log-limit", invariant: RATE_LIMIT, space: search::log_space },
        ],
    },
    Scenario {
        name: "rate-limit-counter",
        description: "SlidingWindowCounter: the same bursts; the overshoot is measured and held to its documented bound 2*max-1",
        expect: Expect::Clean,
        situations: rate_limit::COUNTER_SITUATIONS,
        operations: &[COUNTER_CHECK, COUNTER_CHECK_AT],
        scripts: &["sliding_counter"],
        invariants: &[],
        runs: &rate_limit::Variant::Counter,
        pinned_seeds: &[],
        finds: &[],
        holds: &[
            PropertySpec { name: "sliding-counter-bound", invariant: RATE_LIMIT, space: search::counter_space },
        ],
    },
    Scenario {
        name: "rate-limit-fixed-window",
        description: "NaiveFixedWindow (INCR+EXPIRE): a burst at a boundary admits twice the limit inside one window",
        expect: Expect::Violates(RATE_LIMIT),
        situations: &[],
        operations: &[],
        scripts: &[],
        invariants: &[],
        runs: &rate_limit::Variant::FixedWindow,
        pinned_seeds: &[1, 2, 3],
        finds: &[
            SearchTarget {
                name: "rate-limit-fixed-window",
                kind: TargetKind::BrokenVariant,
                invariant: RATE_LIMIT,
                what: "INCR + EXPIRE fixed window: bursts either side of a boundary",
                space: search::fixed_window_space,
                case_bound: 20,
                size_bound: 2,
            },
        ],
        holds: &[],
    },
    Scenario {
        name: "rate-limit-client-side",
        description: "ClientSideWindow (ZREMRANGEBYSCORE, ZCARD, ZADD as separate round trips): concurrent callers overshoot",
        expect: Expect::Violates(RATE_LIMIT),
        situations: &[],
        operations: &[],
        scripts: &[],
        invariants: &[],
        runs: &rate_limit::Variant::ClientSide,
        pinned_seeds: &[1, 2, 3],
        finds: &[
            SearchTarget {
                name: "rate-limit-client-side",
                kind: TargetKind::BrokenVariant,
                invariant: RATE_LIMIT,
                what: "count then add in separate round trips: concurrent callers all pass",
                space: search::client_side_space,
                case_bound: 20,
                size_bound: 2,
            },
        ],
        holds: &[],
    },
    Scenario {
        name: "rate-limit-watch-multi",
        description: "WatchMultiLimiter on one shared multiplexed connection: EXEC clears every watch, so concurrent callers all pass",
        expect: Expect::Violates(RATE_LIMIT),
        situations: &[],
        operations: &[],
        scripts: &[],
        invariants: &[],
        runs: &rate_limit::Variant::WatchMulti,
        pinned_seeds: &[1, 2, 3],
        finds: &[
            SearchTarget {
                name: "rate-limit-watch-multi",
                kind: TargetKind::BrokenVariant,
                invariant: RATE_LIMIT,
                what: "WATCH/MULTI on a shared connection: EXEC clears every caller's watch",
                space: search::watch_multi_space,
                case_bound: 20,
                size_bound: 2,
            },
        ],
        holds: &[],
    },
    Scenario {
        name: "election",
        description: "Election (epoch = fencing token): leader pauses, stops and partitions; one leader per epoch, stale writes refused",
        expect: Expect::Clean,
        situations: election::SITUATIONS,
        operations: &[ELECTION_RUN, ELECTION_STOP],
        scripts: &["lock_acquire", "lock_release", "lock_extend", "fenced_write"],
        invariants: &[],
        runs: &election::Variant::Election,
        pinned_seeds: &[],
        finds: &[],
        holds: &[
            PropertySpec { name: "one-leader-per-epoch", invariant: ELECTION, space: search::election_space },
        ],
    },
    Scenario {
        name: "election-renew-only",
        description: "Election with the reference's tick-based demotion (demote only when a renewal fails), kept for comparison",
        expect: Expect::Clean,
        situations: election::RENEW_ONLY_SITUATIONS,
        operations: &[ELECTION_RUN, ELECTION_STOP],
        scripts: &[],
        invariants: &[],
        runs: &election::Variant::RenewOnly,
        pinned_seeds: &[],
        finds: &[],
        holds: &[],
    },
    Scenario {
        name: "election-no-epoch",
        description: "NaiveElection (no epoch, unfenced writes): a paused leader wakes and its write lands after the new leader's",
        expect: Expect::Violates(ELECTION),
        situations: election::NO_EPOCH_SITUATIONS,
        operations: &[],
        scripts: &[],
        invariants: &[],
        runs: &election::Variant::NoEpoch,
        pinned_seeds: &[1, 2, 4],
        finds: &[
            SearchTarget {
                name: "election-no-epoch",
                kind: TargetKind::BrokenVariant,
                invariant: ELECTION,
                what: "no epoch, unfenced writes: a paused leader's write lands after its successor's",
                space: search::election_no_epoch_space,
                case_bound: 60,
                size_bound: 4,
            },
        ],
        holds: &[],
    },
    Scenario {
        name: "election-failover",
        description: "Election on a primary with a replica: replication cut, primary crash, replica promoted; epochs are reissued",
        expect: Expect::Violates(ELECTION),
        situations: &[],
        operations: &[],
        scripts: &[],
        invariants: &[],
        runs: &election::Variant::Failover,
        pinned_seeds: &[1, 2, 3],
        finds: &[],
        holds: &[],
    },
    Scenario {
        name: "election-failover-acknowledged",
        description: "election-failover with acknowledged campaigns and writes (WAIT 1): no epoch the replica missed is handed out, no write it missed is reported accepted",
        expect: Expect::Clean,
        situations: election::ACKNOWLEDGED_FAILOVER_SITUATIONS,
        operations: &[ELECTION_RUN, ELECTION_STOP, FENCED_STORE_WRITE],
        scripts: &["lock_acquire", "lock_release", "lock_extend", "fenced_write"],
        invariants: crate::checker::acknowledged_writes::DECLARED,
        runs: &election::Variant::FailoverAcknowledged,
        pinned_seeds: &[],
        finds: &[],
        holds: &[],
    },
    Scenario {
        name: "election-failover-floored",
        description: "election-failover with time-floored epochs: the counter goes back at the failover, epochs still increase",
        expect: Expect::Clean,
        situations: election::FAILOVER_SITUATIONS,
        operations: &[ELECTION_RUN, ELECTION_STOP],
        scripts: &["lock_acquire_floored", "lock_release", "lock_extend", "fenced_write"],
        invariants: &[],
        runs: &election::Variant::FailoverFloored,
        pinned_seeds: &[],
        finds: &[],
        holds: &[],
    },
    Scenario {
        name: "counter-loss",
        description: "Lock across a redis-server restart without persistence: the fence counter is lost and tokens are reissued",
        expect: Expect::Violates(FENCING_TOKENS_INCREASE),
        situations: &[],
        operations: &[],
        scripts: &[],
        invariants: &[],
        runs: &lock::Variant::CounterLoss,
        pinned_seeds: &[1, 2, 3],
        finds: &[
            SearchTarget {
                name: "counter-loss",
                kind: TargetKind::NonGuarantee,
                invariant: FENCING_TOKENS_INCREASE,
                what: "fence counter lost in a restart without persistence: tokens reissued",
                space: search::counter_loss_space,
                case_bound: 150,
                size_bound: 5,
            },
        ],
        holds: &[],
    },
    Scenario {
        name: "lock-floored",
        description: "lock with time-floored tokens (max(counter + 1, server µs)): every lock checker, every operation, corrupt counters",
        expect: Expect::Clean,
        situations: lock::SITUATIONS,
        operations: lock::OPERATIONS,
        scripts: &["lock_acquire_floored", "lock_release", "lock_extend", "fenced_write"],
        invariants: &[],
        runs: &lock::Variant::Floored,
        pinned_seeds: &[],
        finds: &[],
        holds: &[],
    },
    Scenario {
        name: "counter-loss-floored",
        description: "counter-loss with time-floored tokens (max(counter + 1, server µs)): the counter is lost, tokens still increase",
        expect: Expect::Clean,
        situations: &[],
        operations: &[LOCK_ACQUIRE, LOCK_RELEASE, FENCED_STORE_WRITE],
        scripts: &["lock_acquire_floored", "lock_release", "fenced_write"],
        invariants: &[],
        runs: &lock::Variant::CounterLossFloored,
        pinned_seeds: &[],
        finds: &[],
        holds: &[],
    },
    Scenario {
        name: "lock-failover",
        description: "Lock on a primary with a replica: replication cut, primary crash, replica promoted; tokens of the cut are reissued",
        expect: Expect::Violates(FENCING_TOKENS_INCREASE),
        situations: &[],
        operations: &[],
        scripts: &[],
        invariants: &[],
        runs: &lock::Variant::Failover,
        pinned_seeds: &[1, 2, 3],
        finds: &[
            SearchTarget {
                name: "lock-failover",
                kind: TargetKind::NonGuarantee,
                invariant: FENCING_TOKENS_INCREASE,
                what: "asynchronous replication: a failover to a replica that missed INCRs reissues their tokens",
                space: search::lock_failover_space,
                case_bound: 60,
                size_bound: 5,
            },
        ],
        holds: &[],
    },
    Scenario {
        name: "lock-failover-acknowledged",
        description: "lock-failover with acknowledged acquires (WAIT 1): refused during the cut; what was handed out survives the failover",
        expect: Expect::Clean,
        situations: lock_failover::ACKNOWLEDGED_SITUATIONS,
        operations: &[LOCK_ACQUIRE, LOCK_RELEASE, FENCED_STORE_WRITE],
        scripts: &["lock_acquire", "lock_release", "fenced_write"],
        invariants: crate::checker::acknowledged_writes::DECLARED,
        runs: &lock::Variant::FailoverAcknowledged,
        pinned_seeds: &[],
        finds: &[],
        holds: &[],
    },
    Scenario {
        name: "lock-failover-floored",
        description: "lock-failover with time-floored tokens: the counter goes back at the failover, tokens still increase",
        expect: Expect::Clean,
        situations: lock_failover::FLOORED_SITUATIONS,
        operations: &[LOCK_ACQUIRE, LOCK_RELEASE, FENCED_STORE_WRITE],
        scripts: &["lock_acquire_floored", "lock_release", "fenced_write"],
        invariants: &[],
        runs: &lock::Variant::FailoverFloored,
        pinned_seeds: &[],
        finds: &[],
        holds: &[],
    },
    Scenario {
        name: "lock-failover-clock-back",
        description: "lock-failover-floored with the promoted server's clock 2 s behind: the floor is below the lost tokens (documented limit)",
        expect: Expect::Violates(FENCING_TOKENS_INCREASE),
        situations: &[],
        operations: &[],
        scripts: &[],
        invariants: &[],
        runs: &lock::Variant::FailoverClockBack,
        pinned_seeds: &[1, 2, 3],
        finds: &[],
        holds: &[],
    },
    Scenario {
        name: "redlock",
        description: "Redlock on 5 masters with partitions and pauses; no two clients inside their validity interval",
        expect: Expect::Clean,
        situations: redlock::SITUATIONS,
        operations: &[REDLOCK_CONNECT, REDLOCK_ACQUIRE, REDLOCK_ACQUIRE_WITH_RETRY, REDLOCK_EXTEND, REDLOCK_RELEASE],
        scripts: &["lock_release", "lock_extend"],
        invariants: &[],
        runs: &redlock::Variant::Correct,
        pinned_seeds: &[],
        finds: &[],
        holds: &[
            PropertySpec { name: "redlock-mutual-exclusion", invariant: REDLOCK_MUTUAL_EXCLUSION, space: search::redlock_space },
        ],
    },
    Scenario {
        name: "redlock-no-validity",
        description: "Redlock without the elapsed-time validity gate: a slow acquire trusts a lease that has already expired",
        expect: Expect::Violates(REDLOCK_MUTUAL_EXCLUSION),
        situations: &[],
        operations: &[],
        scripts: &[],
        invariants: &[],
        runs: &redlock::Variant::NoValidity,
        pinned_seeds: &[2, 3, 4],
        finds: &[
            SearchTarget {
                name: "redlock-no-validity",
                kind: TargetKind::BrokenVariant,
                invariant: REDLOCK_MUTUAL_EXCLUSION,
                what: "no elapsed-time validity gate: a slow acquire trusts keys that have expired",
                space: search::redlock_no_validity_space,
                case_bound: 80,
                size_bound: 5,
            },
        ],
        holds: &[],
    },
    Scenario {
        name: "redlock-clock-jump",
        description: "Redlock with a forward clock step on a minority of masters: two clients each get a majority (documented non-guarantee)",
        expect: Expect::Violates(REDLOCK_MUTUAL_EXCLUSION),
        situations: &[],
        operations: &[],
        scripts: &[],
        invariants: &[],
        runs: &redlock::Variant::ClockJump,
        pinned_seeds: &[1, 2, 3],
        finds: &[
            SearchTarget {
                name: "redlock-clock-jump",
                kind: TargetKind::NonGuarantee,
                invariant: REDLOCK_MUTUAL_EXCLUSION,
                what: "a forward clock step on a minority of masters: two clients each hold a majority",
                space: search::redlock_clock_jump_space,
                case_bound: 200,
                size_bound: 5,
            },
        ],
        holds: &[],
    },
    Scenario {
        name: "job-queue",
        description: "JobQueue (attempt-fenced job-claim lease): a worker paused past its lease loses the job to another; its late completion is refused, every job completes once",
        expect: Expect::Clean,
        situations: job_queue::SITUATIONS,
        operations: job_queue::OPERATIONS,
        scripts: job_queue::SCRIPTS,
        invariants: job_queue::INVARIANTS,
        runs: &job_queue::Variant::Fenced,
        pinned_seeds: &[],
        finds: &[],
        holds: &[],
    },
    Scenario {
        name: "job-queue-naive",
        description: "NaiveJobQueue (RPOPLPUSH, no lease, no fence): the reaper cannot tell a slow worker from a dead one, so a job is completed twice",
        expect: Expect::Violates(job_queue::JOB_QUEUE),
        situations: &[],
        operations: &[],
        scripts: &[],
        invariants: job_queue::INVARIANTS,
        runs: &job_queue::Variant::Naive,
        pinned_seeds: &[0, 1, 2],
        finds: &[SearchTarget {
            name: "job-queue-naive",
            kind: TargetKind::BrokenVariant,
            invariant: job_queue::JOB_QUEUE,
            what: "claim without a lease or fence: a slow worker's job is handed out again and completed twice",
            space: job_queue::naive_search_space,
            case_bound: 10,
            size_bound: 2,
        }],
        holds: &[],
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
                Expect::Violates(_) => assert!(!s.pinned_seeds.is_empty(), "{}: no pinned seeds", s.name),
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
