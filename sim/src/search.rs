//! Property-based search over plans: proptest strategies for fault schedules
//! and workloads, a programmatic search that shrinks what it finds, and the
//! regression files that keep every counterexample.
//!
//! A seed-driven exploration (`rp-sim explore`) answers "does anything go
//! wrong?"; this module answers "what is the *smallest* thing that goes
//! wrong?". It draws [`Plan`]s from a [`Space`] — which scenario, which fault
//! kinds, how many faults, how long, which workload ranges — runs each
//! through the real simulation, and when a run violates the invariant under
//! test, lets proptest shrink the plan while it keeps failing.
//!
//! Shrinking is shaped so that simpler means what a reader wants:
//!
//! - **fewer faults**: the schedule is a `Vec`, which shrinks by dropping
//!   faults, and it is the first thing shrunk; a workload stall or leader
//!   stall is an `Option`, which shrinks to `None`;
//! - **shorter durations and smaller magnitudes**: every duration, latency
//!   and clock step is an integer range whose low end is the simplest value;
//! - **fewer actors**: actor counts are ranges starting at the fewest, and
//!   fault targets are drawn independently of them (and wrapped by
//!   [`Plan::normalize`]), so dropping an actor never drops a fault;
//! - the seed (latency draws, actor RNGs) is never shrunk: changing it
//!   changes everything at once, which is the opposite of simpler.
//!
//! The **size** of a counterexample is [`Plan::size`]: faults (nemesis plus
//! workload-injected) + actors.
//!
//! [`search`] runs a [`TestRunner`] with a fixed RNG seed (so a search is
//! reproducible), stops at the first failing case, shrinks it, and reports
//! how many cases it took, the shrunk plan, its size and the wall time to the
//! first counterexample. [`TARGETS`] lists what the search must find: every
//! broken variant and every documented non-guarantee, each with the
//! invariant that catches it; [`PROPERTIES`] lists what it must not find.
//! [`RegressionFile`] is proptest's failure persistence for these searches
//! (`*.proptest-regressions`, proptest's format).
//!
//! Wall time is measured with `std::time::Instant`, outside the simulation.

use std::any::Any;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::strategy::{BoxedStrategy, Union};
use proptest::test_runner::{
    basic_result_cache, Config, FailurePersistence, PersistedSeed, RngAlgorithm, TestCaseError, TestError, TestRng,
    TestRunner,
};

use crate::checker::{
    Violation, ELECTION, FENCING_TOKENS_INCREASE, MUTUAL_EXCLUSION, NO_STALE_OVERWRITE, RATE_LIMIT,
    REDLOCK_MUTUAL_EXCLUSION,
};
use crate::nemesis::{Direction, Fault, FaultClass, FaultKind, Schedule, Target};
use crate::plan::{Plan, Workload};
use crate::scenarios::election::{ElectionPlan, LeaderStall};
use crate::scenarios::lock::{LockPlan, Stall};
use crate::scenarios::rate_limit::{Burst, RateLimitPlan};
use crate::scenarios::redlock::{RedlockPlan, RedlockStart};
use crate::scenarios::{election, lock, rate_limit, redlock};
use crate::servers::{Servers, SetupError};

/// What faults a search may draw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultSpace {
    /// Fault kinds, simplest first (shrinking moves towards the first).
    pub classes: Vec<FaultClass>,
    /// How many nemesis faults, inclusive.
    pub count: (usize, usize),
    /// Start times (ms), inclusive.
    pub start_ms: (u64, u64),
    /// Durations (ms), inclusive: shrink towards the low end.
    pub duration_ms: (u64, u64),
    /// One-way latency of `latency` faults (ms).
    pub latency_ms: (u64, u64),
    /// Clock steps (ms, signed): shrink towards the value nearest zero.
    pub clock_step_ms: (i64, i64),
    /// Whether a network fault may cut a single client–node link (else it
    /// cuts the client off from every node).
    pub links: bool,
    /// Server faults (pause, restart, clock step) hit only nodes below this
    /// index (`None`: any node), e.g. to keep clock steps on a minority.
    pub server_nodes: Option<u32>,
}

impl FaultSpace {
    /// `classes`, at most `max` faults of 50–1500 ms starting in the first
    /// 2.5 s, latencies 20–300 ms, clock steps ±500–5000 ms.
    pub fn new(classes: &[FaultClass], max: usize) -> FaultSpace {
        FaultSpace {
            classes: classes.to_vec(),
            count: (0, max),
            start_ms: (0, 2500),
            duration_ms: (50, 1500),
            latency_ms: (20, 300),
            clock_step_ms: (-5000, 5000),
            links: false,
            server_nodes: None,
        }
    }
}

/// What workloads a search may draw (ranges inclusive; every range shrinks
/// towards its first bound).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkloadSpace {
    /// Lock-family scenarios.
    Lock {
        /// Contending clients.
        clients: (u32, u32),
        /// Lease TTL (ms).
        ttl_ms: (u64, u64),
        /// Longest hold (ms); the shortest is 10–100 ms below it.
        hold_max_ms: (u64, u64),
        /// How long clients keep trying (ms).
        length_ms: (u64, u64),
        /// Whether a client may stall inside a critical section.
        stall: bool,
    },
    /// Rate-limit scenarios.
    RateLimit {
        /// Clients.
        clients: (u32, u32),
        /// Requests per window.
        limit: (u64, u64),
        /// Window lengths to choose from (the first is the simplest).
        windows_ms: Vec<u64>,
        /// Number of bursts.
        bursts: (usize, usize),
        /// Requests per burst.
        burst_size: (u32, u32),
        /// Bursts start in `[0, length_ms)`.
        length_ms: u64,
    },
    /// Election scenarios.
    Election {
        /// Nodes.
        nodes: (u32, u32),
        /// Lease (ms); renew is a fifth to a third of it.
        lease_ms: (u64, u64),
        /// How long nodes run (ms).
        length_ms: (u64, u64),
        /// Whether the leader may be stalled and stopped by the workload.
        leader_faults: bool,
    },
    /// Redlock scenarios.
    Redlock {
        /// Clients.
        clients: (u32, u32),
        /// Lease TTL (ms).
        ttl_ms: (u64, u64),
        /// Per-master timeout (ms).
        master_timeout_ms: (u64, u64),
        /// Client start times (ms).
        start_ms: (u64, u64),
        /// How long clients keep trying (ms).
        length_ms: (u64, u64),
    },
}

/// A search space: a scenario, its faults and its workloads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Space {
    /// Registry name.
    pub scenario: &'static str,
    /// Nemesis faults.
    pub faults: FaultSpace,
    /// Workloads.
    pub workload: WorkloadSpace,
}

/// The fault kinds a client-side search draws from (no server restarts, no
/// clock steps: those are documented non-guarantees of one-server locks).
pub const CLIENT_SIDE: &[FaultClass] = &[
    FaultClass::ClientPause,
    FaultClass::Partition,
    FaultClass::Hold,
    FaultClass::Latency,
    FaultClass::PartitionOneWay,
    FaultClass::ServerPause,
];

impl Space {
    /// A lock-family scenario: 1–4 clients, TTL 150–600 ms, holds up to
    /// 100–700 ms, 1–3 s of attempts, an optional stall, up to 3 faults of
    /// `classes`.
    pub fn lock(scenario: &'static str, classes: &[FaultClass]) -> Space {
        Space {
            scenario,
            faults: FaultSpace::new(classes, 3),
            workload: WorkloadSpace::Lock {
                clients: (1, 4),
                ttl_ms: (150, 600),
                hold_max_ms: (100, 700),
                length_ms: (1000, 3000),
                stall: true,
            },
        }
    }

    /// A rate-limit scenario: 1–4 clients, limit 2–8 per 1000/500/250 ms,
    /// 1–8 bursts of 1–10 requests in 3 s, up to 2 faults.
    pub fn rate_limit(scenario: &'static str) -> Space {
        let classes = [
            FaultClass::ClientPause,
            FaultClass::Partition,
            FaultClass::Hold,
            FaultClass::Latency,
            FaultClass::ServerPause,
        ];
        Space {
            scenario,
            faults: FaultSpace { duration_ms: (50, 600), latency_ms: (5, 100), ..FaultSpace::new(&classes, 2) },
            workload: WorkloadSpace::RateLimit {
                clients: (1, 4),
                limit: (2, 8),
                windows_ms: vec![1000, 500, 250],
                bursts: (1, 8),
                burst_size: (1, 10),
                length_ms: 3000,
            },
        }
    }

    /// An election scenario: 1–4 nodes, lease 200–800 ms, 1.5–3.5 s, an
    /// optional leader stall and `stop()`, up to 2 client-side faults.
    pub fn election(scenario: &'static str) -> Space {
        Space {
            scenario,
            faults: FaultSpace { duration_ms: (50, 800), ..FaultSpace::new(CLIENT_SIDE, 2) },
            workload: WorkloadSpace::Election {
                nodes: (1, 4),
                lease_ms: (200, 800),
                length_ms: (1500, 3500),
                leader_faults: true,
            },
        }
    }

    /// A Redlock scenario over 5 masters: 1–3 clients starting in the first
    /// 1.2 s, TTL 250–600 ms, master timeout 50–250 ms, up to 4 faults of
    /// `classes` (single links allowed).
    pub fn redlock(scenario: &'static str, classes: &[FaultClass]) -> Space {
        Space {
            scenario,
            faults: FaultSpace {
                start_ms: (0, 2000),
                duration_ms: (50, 1000),
                latency_ms: (30, 200),
                links: true,
                ..FaultSpace::new(classes, 4)
            },
            workload: WorkloadSpace::Redlock {
                clients: (1, 3),
                ttl_ms: (250, 600),
                master_timeout_ms: (50, 250),
                start_ms: (0, 1200),
                length_ms: (1500, 3000),
            },
        }
    }

    /// The largest number of actors a plan of this space can have.
    pub fn max_actors(&self) -> u32 {
        match &self.workload {
            WorkloadSpace::Lock { clients, .. }
            | WorkloadSpace::RateLimit { clients, .. }
            | WorkloadSpace::Redlock { clients, .. } => clients.1,
            WorkloadSpace::Election { nodes, .. } => nodes.1,
        }
        .max(1)
    }

    /// The strategy of plans in this space (see the module docs for how it shrinks).
    pub fn plans(&self) -> BoxedStrategy<Plan> {
        let scenario = self.scenario.to_string();
        let nodes = crate::scenarios::find(self.scenario).map_or(1, |s| s.nodes());
        let faults = faults(&self.faults, self.max_actors(), nodes);
        // Tuple order is shrink order: faults first, then the workload.
        (faults, workload(&self.workload), any::<u64>().no_shrink())
            .prop_map(move |(faults, workload, seed)| {
                Plan { scenario: scenario.clone(), seed, workload, schedule: Schedule::of(faults) }.normalize()
            })
            .boxed()
    }
}

fn kind(class: FaultClass, space: &FaultSpace) -> BoxedStrategy<FaultKind> {
    match class {
        FaultClass::Partition => Just(FaultKind::Partition).boxed(),
        FaultClass::PartitionOneWay => prop_oneof![Just(Direction::ToServer), Just(Direction::ToClient)]
            .prop_map(|direction| FaultKind::PartitionOneWay { direction })
            .boxed(),
        FaultClass::Hold => Just(FaultKind::Hold).boxed(),
        FaultClass::Latency => {
            (space.latency_ms.0..=space.latency_ms.1).prop_map(|ms| FaultKind::Latency { ms }).boxed()
        }
        FaultClass::ClientPause => Just(FaultKind::ClientPause).boxed(),
        FaultClass::ServerPause => Just(FaultKind::ServerPause).boxed(),
        FaultClass::ServerRestart => Just(FaultKind::ServerRestart).boxed(),
        FaultClass::ClockStep => (space.clock_step_ms.0..=space.clock_step_ms.1)
            .prop_map(|offset_ms| FaultKind::ClockStep { offset_ms })
            .boxed(),
    }
}

/// One fault: kind, then target, then start and duration.
fn fault(space: &FaultSpace, max_clients: u32, nodes: u32) -> BoxedStrategy<Fault> {
    let kinds: Vec<BoxedStrategy<FaultKind>> = space.classes.iter().map(|c| kind(*c, space)).collect();
    let links = space.links;
    let server_nodes = space.server_nodes.unwrap_or(nodes).clamp(1, nodes.max(1));
    (
        Union::new(kinds),
        0..max_clients.max(1),
        0..nodes.max(1),
        any::<bool>(),
        space.start_ms.0..=space.start_ms.1,
        space.duration_ms.0..=space.duration_ms.1,
    )
        .prop_map(move |(kind, client, node, one_link, at, duration)| {
            let target = match kind.class() {
                c if c.targets_node() => Target::Node(node % server_nodes),
                FaultClass::ClientPause => Target::Client(client),
                _ if links && one_link => Target::Link { client, node },
                _ => Target::Client(client),
            };
            Fault { at, duration, kind, target }
        })
        .boxed()
}

fn faults(space: &FaultSpace, max_clients: u32, nodes: u32) -> BoxedStrategy<Vec<Fault>> {
    if space.classes.is_empty() || space.count.1 == 0 {
        return Just(Vec::new()).boxed();
    }
    vec(fault(space, max_clients, nodes), space.count.0..=space.count.1).boxed()
}

fn workload(space: &WorkloadSpace) -> BoxedStrategy<Workload> {
    match space.clone() {
        WorkloadSpace::Lock { clients, ttl_ms, hold_max_ms, length_ms, stall } => {
            let stall = if stall {
                proptest::option::of((0..clients.1.max(1), 1..=3u32, 100..=1500u64))
                    .prop_map(|s| s.map(|(client, hold, ms)| Stall { client, hold, ms }))
                    .boxed()
            } else {
                Just(None).boxed()
            };
            (
                clients.0..=clients.1,
                stall,
                ttl_ms.0..=ttl_ms.1,
                hold_max_ms.0..=hold_max_ms.1,
                10..=100u64,
                5..=80u64,
                length_ms.0..=length_ms.1,
            )
                .prop_map(|(clients, stall, ttl_ms, hold_max, hold_span, think_max, length_ms)| {
                    Workload::of::<lock::Variant>(&LockPlan {
                        clients,
                        ttl_ms,
                        hold_ms: (hold_max.saturating_sub(hold_span).max(1), hold_max),
                        think_ms: (5, think_max),
                        length_ms,
                        stall,
                    })
                })
                .boxed()
        }
        WorkloadSpace::RateLimit { clients, limit, windows_ms, bursts, burst_size, length_ms } => {
            let burst = (0..clients.1.max(1), 0..length_ms.max(1), burst_size.0..=burst_size.1)
                .prop_map(|(client, at, size)| Burst { client, at, size });
            (
                clients.0..=clients.1,
                vec(burst, bursts.0..=bursts.1),
                limit.0..=limit.1,
                proptest::sample::select(windows_ms),
            )
                .prop_map(|(clients, bursts, limit, window_ms)| {
                    Workload::of::<rate_limit::Variant>(&RateLimitPlan { clients, limit, window_ms, bursts })
                })
                .boxed()
        }
        WorkloadSpace::Election { nodes, lease_ms, length_ms, leader_faults } => {
            let (stall, stop) = if leader_faults {
                (
                    proptest::option::of((200..=2000u64, 100..=2000u64))
                        .prop_map(|s| s.map(|(at, ms)| LeaderStall { at, ms }))
                        .boxed(),
                    proptest::option::of(300..=3000u64).boxed(),
                )
            } else {
                (Just(None).boxed(), Just(None).boxed())
            };
            // Renew every third to fifth of the lease: the builder refuses
            // more than half of the lease less its drift allowance.
            (nodes.0..=nodes.1, stall, stop, lease_ms.0..=lease_ms.1, 3..=5u64, 10..=50u64, length_ms.0..=length_ms.1)
                .prop_map(|(nodes, stall, stop_at, lease_ms, renew_div, campaign_ms, length_ms)| {
                    Workload::of::<election::Variant>(&ElectionPlan {
                        nodes,
                        lease_ms,
                        renew_ms: lease_ms / renew_div,
                        campaign_ms,
                        length_ms,
                        stagger_ms: 0,
                        stall,
                        // Kept out of the search space so committed
                        // regression seeds still draw the plans they did.
                        stall_mid_write: false,
                        epoch_base: None,
                        stop_at,
                        slow_first_campaign: false,
                        slow_renewals: None,
                    })
                })
                .boxed()
        }
        WorkloadSpace::Redlock { clients, ttl_ms, master_timeout_ms, start_ms, length_ms } => {
            let start = (start_ms.0..=start_ms.1).prop_map(RedlockStart::At);
            let n = clients.0.max(1) as usize..=clients.1.max(1) as usize;
            (vec(start, n), ttl_ms.0..=ttl_ms.1, master_timeout_ms.0..=master_timeout_ms.1, length_ms.0..=length_ms.1)
                .prop_map(|(starts, ttl_ms, master_timeout_ms, length_ms)| {
                    Workload::of::<redlock::Variant>(&RedlockPlan {
                        starts,
                        ttl_ms,
                        master_timeout_ms: master_timeout_ms.min(ttl_ms),
                        length_ms,
                        master_timeouts_ms: Vec::new(),
                    })
                })
                .boxed()
        }
    }
}

/// Whether a target is a broken implementation or a limit of a correct one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetKind {
    /// A broken variant kept so the harness can be shown to catch it.
    BrokenVariant,
    /// A correct primitive under a fault it documents it cannot survive.
    NonGuarantee,
}

/// Something the search must find.
#[derive(Debug, Clone, Copy)]
pub struct SearchTarget {
    /// Row name (a scenario name, or the non-guarantee's name).
    pub name: &'static str,
    /// Broken variant or non-guarantee.
    pub kind: TargetKind,
    /// The invariant that must catch it.
    pub invariant: &'static str,
    /// What goes wrong, in one line.
    pub what: &'static str,
    /// Where to search.
    pub space: fn() -> Space,
    /// The test asserts the search finds it within this many cases (about
    /// three times the most any of 20 base seeds needed when it was set;
    /// `reports/README.md` has the measured medians).
    pub case_bound: u32,
    /// The test asserts the shrunk plan is at most this size (the largest
    /// any of those 20 base seeds shrank to).
    pub size_bound: usize,
}

fn lock_naive_space() -> Space {
    Space::lock("lock-naive", CLIENT_SIDE)
}
fn fencing_unfenced_space() -> Space {
    Space::lock("fencing-unfenced", CLIENT_SIDE)
}
fn fixed_window_space() -> Space {
    Space::rate_limit("rate-limit-fixed-window")
}
fn client_side_space() -> Space {
    Space::rate_limit("rate-limit-client-side")
}
fn watch_multi_space() -> Space {
    Space::rate_limit("rate-limit-watch-multi")
}
fn election_no_epoch_space() -> Space {
    Space::election("election-no-epoch")
}
fn redlock_no_validity_space() -> Space {
    Space::redlock(
        "redlock-no-validity",
        &[
            FaultClass::Latency,
            FaultClass::ClientPause,
            FaultClass::Partition,
            FaultClass::Hold,
            FaultClass::ServerPause,
        ],
    )
}
/// A lock space with restarts of the lock's server added, and faults of
/// 20–600 ms: a restart that outlasts every lease is merely an outage.
fn with_restarts(scenario: &'static str) -> Space {
    let mut classes = vec![FaultClass::ServerRestart];
    classes.extend_from_slice(CLIENT_SIDE);
    let mut s = Space::lock(scenario, &classes);
    s.faults.duration_ms = (20, 600);
    s
}
fn counter_loss_space() -> Space {
    with_restarts("counter-loss")
}
fn lock_restart_space() -> Space {
    with_restarts("lock")
}
fn redlock_clock_jump_space() -> Space {
    // Forward steps on a minority of the masters (0 and 1 of 5) and link
    // cuts; clients start together, so that one of them can win a bare
    // majority that includes a master whose clock then jumps.
    let mut s = Space::redlock("redlock-clock-jump", &[FaultClass::ClockStep, FaultClass::Partition]);
    s.faults.count = (1, 4);
    s.faults.start_ms = (0, 600);
    s.faults.clock_step_ms = (300, 2000);
    s.faults.server_nodes = Some(2);
    if let WorkloadSpace::Redlock { start_ms, .. } = &mut s.workload {
        *start_ms = (0, 20);
    }
    s
}

/// Every broken variant and every documented non-guarantee, with the
/// invariant that must catch it (one row each in the mutation table).
pub const TARGETS: &[SearchTarget] = &[
    SearchTarget {
        name: "lock-naive",
        kind: TargetKind::BrokenVariant,
        invariant: MUTUAL_EXCLUSION,
        what: "bare DEL release: a holder past its lease deletes the next holder's lock",
        space: lock_naive_space,
        case_bound: 30,
        size_bound: 4,
    },
    SearchTarget {
        name: "fencing-unfenced",
        kind: TargetKind::BrokenVariant,
        invariant: NO_STALE_OVERWRITE,
        what: "a resource that ignores the token: a late write overwrites a newer one",
        space: fencing_unfenced_space,
        case_bound: 40,
        size_bound: 4,
    },
    SearchTarget {
        name: "rate-limit-fixed-window",
        kind: TargetKind::BrokenVariant,
        invariant: RATE_LIMIT,
        what: "INCR + EXPIRE fixed window: bursts either side of a boundary",
        space: fixed_window_space,
        case_bound: 20,
        size_bound: 2,
    },
    SearchTarget {
        name: "rate-limit-client-side",
        kind: TargetKind::BrokenVariant,
        invariant: RATE_LIMIT,
        what: "count then add in separate round trips: concurrent callers all pass",
        space: client_side_space,
        case_bound: 20,
        size_bound: 2,
    },
    SearchTarget {
        name: "rate-limit-watch-multi",
        kind: TargetKind::BrokenVariant,
        invariant: RATE_LIMIT,
        what: "WATCH/MULTI on a shared connection: EXEC clears every caller's watch",
        space: watch_multi_space,
        case_bound: 20,
        size_bound: 2,
    },
    SearchTarget {
        name: "election-no-epoch",
        kind: TargetKind::BrokenVariant,
        invariant: ELECTION,
        what: "no epoch, unfenced writes: a paused leader's write lands after its successor's",
        space: election_no_epoch_space,
        case_bound: 60,
        size_bound: 4,
    },
    SearchTarget {
        name: "redlock-no-validity",
        kind: TargetKind::BrokenVariant,
        invariant: REDLOCK_MUTUAL_EXCLUSION,
        what: "no elapsed-time validity gate: a slow acquire trusts keys that have expired",
        space: redlock_no_validity_space,
        case_bound: 80,
        size_bound: 5,
    },
    SearchTarget {
        name: "counter-loss",
        kind: TargetKind::NonGuarantee,
        invariant: FENCING_TOKENS_INCREASE,
        what: "fence counter lost in a restart without persistence: tokens reissued",
        space: counter_loss_space,
        case_bound: 150,
        size_bound: 5,
    },
    SearchTarget {
        name: "lock-restart",
        kind: TargetKind::NonGuarantee,
        invariant: MUTUAL_EXCLUSION,
        what:
            "a restart without persistence under a held lock: a second client acquires while the first trusts its lease",
        space: lock_restart_space,
        case_bound: 200,
        size_bound: 5,
    },
    SearchTarget {
        name: "redlock-clock-jump",
        kind: TargetKind::NonGuarantee,
        invariant: REDLOCK_MUTUAL_EXCLUSION,
        what: "a forward clock step on a minority of masters: two clients each hold a majority",
        space: redlock_clock_jump_space,
        case_bound: 200,
        size_bound: 5,
    },
];

/// Looks a search target up by name.
pub fn target(name: &str) -> Option<&'static SearchTarget> {
    TARGETS.iter().find(|t| t.name == name)
}

/// Something the search must not find: a correct scenario, a space of
/// faults it claims to survive, and the invariant that must hold.
#[derive(Debug, Clone, Copy)]
pub struct PropertySpec {
    /// Name (used for the regression file).
    pub name: &'static str,
    /// The invariant that must hold.
    pub invariant: &'static str,
    /// Where to search.
    pub space: fn() -> Space,
}

fn tokens_space() -> Space {
    let mut classes = CLIENT_SIDE.to_vec();
    classes.push(FaultClass::ClockStep);
    let mut s = Space::lock("lock", &classes);
    s.workload = WorkloadSpace::Lock {
        clients: (2, 4),
        ttl_ms: (150, 600),
        hold_max_ms: (100, 700),
        length_ms: (1000, 2500),
        stall: true,
    };
    s
}
fn stale_overwrite_space() -> Space {
    let mut s = tokens_space();
    s.scenario = "fencing";
    s
}
fn log_space() -> Space {
    let mut s = Space::rate_limit("rate-limit");
    if let WorkloadSpace::RateLimit { clients, .. } = &mut s.workload {
        *clients = (2, 4);
    }
    s
}
fn counter_space() -> Space {
    let mut s = log_space();
    s.scenario = "rate-limit-counter";
    s
}
fn election_space() -> Space {
    let mut s = Space::election("election");
    if let WorkloadSpace::Election { nodes, length_ms, .. } = &mut s.workload {
        *nodes = (2, 3);
        *length_ms = (1500, 2500);
    }
    s
}
fn redlock_space() -> Space {
    let mut s = Space::redlock("redlock", CLIENT_SIDE);
    if let WorkloadSpace::Redlock { clients, length_ms, .. } = &mut s.workload {
        *clients = (2, 3);
        *length_ms = (1500, 2500);
    }
    s
}

/// The properties `proptests/tests/search/properties.rs` checks.
pub const PROPERTIES: &[PropertySpec] = &[
    PropertySpec { name: "fencing-tokens-increase", invariant: FENCING_TOKENS_INCREASE, space: tokens_space },
    PropertySpec { name: "no-stale-overwrite", invariant: NO_STALE_OVERWRITE, space: stale_overwrite_space },
    PropertySpec { name: "sliding-log-limit", invariant: RATE_LIMIT, space: log_space },
    PropertySpec { name: "sliding-counter-bound", invariant: RATE_LIMIT, space: counter_space },
    PropertySpec { name: "one-leader-per-epoch", invariant: ELECTION, space: election_space },
    PropertySpec { name: "redlock-mutual-exclusion", invariant: REDLOCK_MUTUAL_EXCLUSION, space: redlock_space },
];

/// Looks a property up by name.
pub fn property(name: &str) -> Option<&'static PropertySpec> {
    PROPERTIES.iter().find(|p| p.name == name)
}

/// How to run a search.
#[derive(Debug)]
pub struct SearchConfig {
    /// Seeds proptest's RNG: the same base seed draws the same cases.
    pub base_seed: u64,
    /// Cases to try before giving up.
    pub cases: u32,
    /// Runs allowed while proptest shrinks (each is one simulation); the
    /// greedy [`minimize`] pass after it gets a quarter of this on top.
    pub max_shrink_iters: u32,
    /// Where failing cases are persisted and replayed from.
    pub persistence: Option<RegressionFile>,
}

impl SearchConfig {
    /// `cases` fresh cases from `base_seed`, 200 shrink runs, no persistence.
    pub fn new(base_seed: u64, cases: u32) -> SearchConfig {
        SearchConfig { base_seed, cases, max_shrink_iters: 200, persistence: None }
    }
}

/// A counterexample, found and shrunk.
#[derive(Debug, Clone)]
pub struct Finding {
    /// Cases run up to and including the first failing one.
    pub cases: u32,
    /// Whether that case came from the regression file.
    pub from_regression: bool,
    /// The first failing plan, before shrinking.
    pub first: Plan,
    /// The shrunk plan.
    pub shrunk: Plan,
    /// The violation the shrunk plan produces.
    pub violation: Violation,
    /// Simulation runs spent shrinking (proptest's and [`minimize`]'s).
    pub shrink_runs: u32,
    /// Wall time to the first counterexample.
    pub to_first: Duration,
    /// Wall time including shrinking.
    pub total: Duration,
}

impl Finding {
    /// [`Plan::size`] of the shrunk plan.
    pub fn size(&self) -> usize {
        self.shrunk.size()
    }

    /// The command that reproduces the shrunk counterexample.
    pub fn replay_command(&self) -> String {
        self.shrunk.replay_command()
    }
}

/// What a search did.
#[derive(Debug, Clone)]
pub struct SearchReport {
    /// Scenario searched (empty if no case ran).
    pub scenario: String,
    /// Invariant searched for violations of.
    pub invariant: String,
    /// Cases run before the first failure (all of them if none failed),
    /// shrinking excluded.
    pub cases_run: u32,
    /// Wall time of the whole search.
    pub wall: Duration,
    /// History events recorded over every run (shrinking included): a
    /// property that "held" over empty histories proved nothing.
    pub events: u64,
    /// The counterexample, if any.
    pub finding: Option<Finding>,
}

#[derive(Default)]
struct State {
    scenario: Option<String>,
    calls: u32,
    events: u64,
    first: Option<(u32, Plan, Instant)>,
    failing: BTreeMap<String, Violation>,
    error: Option<SetupError>,
}

/// The fixed RNG of a search from `base_seed` (ChaCha, as proptest's default).
pub fn rng(base_seed: u64) -> TestRng {
    let mut bytes = [0u8; 32];
    for (i, chunk) in bytes.chunks_mut(8).enumerate() {
        let word = crate::world::derive_seed(base_seed, &format!("proptest-rng-{i}"));
        chunk.copy_from_slice(&word.to_le_bytes());
    }
    TestRng::from_seed(RngAlgorithm::ChaCha, &bytes)
}

/// Searches `strategy` for a plan whose run violates `invariant`; shrinks
/// the first one found. Plans run on `servers` (reset before each run).
///
/// A set-up error (a server that will not start) ends the search with that
/// error; it is never mistaken for a counterexample.
pub fn search(
    strategy: &BoxedStrategy<Plan>,
    invariant: &str,
    servers: &mut Servers,
    config: SearchConfig,
) -> Result<SearchReport, SetupError> {
    let started = Instant::now();
    let persisted = config.persistence.as_ref().map_or(0, |p| p.load_persisted_failures2(None).len() as u32);
    // The greedy pass gets a quarter of the shrinking budget on top.
    let minimize_budget = config.max_shrink_iters / 4;
    let mut proptest_config = Config::with_cases(config.cases);
    proptest_config.max_shrink_iters = config.max_shrink_iters;
    proptest_config.max_shrink_time = 0;
    proptest_config.failure_persistence = config.persistence.map(|p| Box::new(p) as Box<dyn FailurePersistence>);
    proptest_config.source_file = None;
    proptest_config.result_cache = basic_result_cache;
    // No fork and no timeout: proptest is built without those features (they
    // would pull a second `getrandom` major through `tempfile`), and a case
    // here is a deterministic simulation that ends by itself.
    proptest_config.verbose = 0;
    let mut runner = TestRunner::new_with_rng(proptest_config, rng(config.base_seed));

    let servers = RefCell::new(servers);
    let state = RefCell::new(State::default());
    let result = runner.run(strategy, |plan: Plan| {
        if state.borrow().error.is_some() {
            return Err(TestCaseError::fail("set-up error"));
        }
        let outcome = crate::plan::run(&mut servers.borrow_mut(), &plan);
        let mut st = state.borrow_mut();
        st.calls += 1;
        st.scenario.get_or_insert_with(|| plan.scenario.clone());
        let outcome = match outcome {
            Ok(o) => {
                st.events += o.history.len() as u64;
                o
            }
            Err(e) => {
                st.error = Some(e);
                return Err(TestCaseError::fail("set-up error"));
            }
        };
        match outcome.violations.into_iter().find(|v| v.invariant == invariant) {
            None => Ok(()),
            Some(v) => {
                if st.first.is_none() {
                    st.first = Some((st.calls, plan.clone(), Instant::now()));
                }
                let why = format!("{v}");
                st.failing.insert(plan.to_json(), v);
                Err(TestCaseError::fail(why))
            }
        }
    });
    let state = state.into_inner();
    if let Some(e) = state.error {
        return Err(e);
    }
    let finding = match result {
        Ok(()) => None,
        Err(TestError::Abort(why)) => {
            return Err(SetupError::Simulation(format!("search aborted: {why}")));
        }
        Err(TestError::Fail(_, shrunk)) => {
            let (cases, first, found_at) = state
                .first
                .ok_or_else(|| SetupError::Simulation("proptest reported a failure no case produced".into()))?;
            let violation = match state.failing.get(&shrunk.to_json()) {
                Some(v) => v.clone(),
                None => return Err(SetupError::Simulation("the shrunk plan was never seen failing".into())),
            };
            Some(Finding {
                cases,
                from_regression: cases <= persisted,
                first,
                shrink_runs: state.calls - cases,
                violation,
                shrunk,
                to_first: found_at - started,
                total: started.elapsed(),
            })
        }
    };
    let servers = servers.into_inner();
    let finding = match finding {
        Some(mut f) if minimize_budget > 0 => {
            let (plan, violation, runs) =
                minimize(f.shrunk.clone(), f.violation.clone(), invariant, servers, minimize_budget)?;
            f.shrunk = plan;
            f.violation = violation;
            f.shrink_runs += runs;
            f.total = started.elapsed();
            Some(f)
        }
        other => other,
    };
    let cases_run = finding.as_ref().map_or(state.calls, |f| f.cases);
    Ok(SearchReport {
        scenario: state.scenario.unwrap_or_default(),
        invariant: invariant.to_string(),
        cases_run,
        wall: started.elapsed(),
        events: state.events,
        finding,
    })
}

/// Every plan one step smaller than `plan` ([`Plan::size`]): one nemesis
/// fault removed, one workload-injected fault removed, or one actor fewer
/// (for Redlock, each client in turn). Simplest-first order: faults before
/// actors.
pub fn one_smaller(plan: &Plan) -> Vec<Plan> {
    let mut out = Vec::new();
    for i in 0..plan.schedule.faults.len() {
        let mut p = plan.clone();
        p.schedule.faults.remove(i);
        out.push(p);
    }
    out.extend(plan.smaller_workloads());
    out.into_iter().map(Plan::normalize).filter(|p| p.validate().is_ok() && p.size() < plan.size()).collect()
}

/// A greedy pass after proptest's shrinking, aimed squarely at the size: it
/// tries [`one_smaller`] plans, keeps the first that still violates
/// `invariant`, and repeats, within `budget` runs. proptest shrinks the
/// schedule before the workload and never comes back to it, so an actor
/// removed late can leave a fault that is no longer needed; this finds it.
/// Returns the plan, its violation and the runs spent.
pub fn minimize(
    plan: Plan,
    violation: Violation,
    invariant: &str,
    servers: &mut Servers,
    budget: u32,
) -> Result<(Plan, Violation, u32), SetupError> {
    let (mut plan, mut violation, mut runs) = (plan, violation, 0u32);
    'outer: loop {
        for candidate in one_smaller(&plan) {
            if runs >= budget {
                break 'outer;
            }
            runs += 1;
            if let Some(v) = replay(&candidate, invariant, servers)?.into_iter().next() {
                plan = candidate;
                violation = v;
                continue 'outer;
            }
        }
        break;
    }
    Ok((plan, violation, runs))
}

/// Searches for a target's violation.
pub fn find(target: &SearchTarget, servers: &mut Servers, config: SearchConfig) -> Result<SearchReport, SetupError> {
    search(&(target.space)().plans(), target.invariant, servers, config)
}

/// Checks a property: searches for a violation of its invariant.
pub fn check(property: &PropertySpec, servers: &mut Servers, config: SearchConfig) -> Result<SearchReport, SetupError> {
    search(&(property.space)().plans(), property.invariant, servers, config)
}

/// Runs a plan once and returns the violations of `invariant` it produces.
pub fn replay(plan: &Plan, invariant: &str, servers: &mut Servers) -> Result<Vec<Violation>, SetupError> {
    let outcome = crate::plan::run(servers, plan)?;
    Ok(outcome.violations.into_iter().filter(|v| v.invariant == invariant).collect())
}

/// proptest failure persistence in a `*.proptest-regressions` file of its
/// own (proptest's format: `cc <seed> # <comment>`), for one search.
///
/// `load` replays the file's seeds before any new case (standard proptest
/// behaviour); `save` appends a newly found failing seed unless the file
/// already has it, so a deterministic search does not grow the file on
/// every run. [`RegressionFile::only`] restricts loading to one seed, to
/// replay each persisted case on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegressionFile {
    path: PathBuf,
    label: String,
    load: bool,
    save: bool,
    only: Option<String>,
}

impl RegressionFile {
    /// Loads and saves (what a property test wants).
    pub fn new(path: impl Into<PathBuf>, label: impl Into<String>) -> RegressionFile {
        RegressionFile { path: path.into(), label: label.into(), load: true, save: true, only: None }
    }

    /// Saves new failures but replays nothing (a fresh search whose cases
    /// count must not be flattered by known failures).
    pub fn save_only(mut self) -> RegressionFile {
        self.load = false;
        self
    }

    /// Loads only this seed (as written in the file), saves nothing.
    pub fn only(mut self, seed: &PersistedSeed) -> RegressionFile {
        self.only = Some(seed.to_string());
        self.load = true;
        self.save = false;
        self
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Every seed in the file, oldest first.
    pub fn seeds(&self) -> Vec<PersistedSeed> {
        let Ok(text) = std::fs::read_to_string(&self.path) else { return Vec::new() };
        text.lines()
            .filter_map(|line| {
                let code = line.split('#').next().unwrap_or("").trim();
                (!code.is_empty()).then(|| code.parse::<PersistedSeed>().ok()).flatten()
            })
            .collect()
    }
}

impl FailurePersistence for RegressionFile {
    fn load_persisted_failures2(&self, _source_file: Option<&'static str>) -> Vec<PersistedSeed> {
        if !self.load {
            return Vec::new();
        }
        let seeds = self.seeds();
        match &self.only {
            Some(only) => seeds.into_iter().filter(|s| &s.to_string() == only).collect(),
            None => seeds,
        }
    }

    fn save_persisted_failure2(
        &mut self,
        _source_file: Option<&'static str>,
        seed: PersistedSeed,
        shrunken_value: &dyn Debug,
    ) {
        if !self.save || self.seeds().contains(&seed) {
            return;
        }
        let mut text = String::new();
        if !self.path.is_file() {
            text.push_str(
                "# Seeds for failure cases proptest has generated in the past. They are\n\
                 # read and these cases re-run before any new case is generated (see\n\
                 # redis_primitives_sim::search::RegressionFile). Commit this file.\n",
            );
        }
        let comment = format!("{shrunken_value:?}").replace(['\n', '\r'], " ");
        text.push_str(&format!("{seed} # {}: shrinks to {comment}\n", self.label));
        if let Some(dir) = self.path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
            .and_then(|mut f| f.write_all(text.as_bytes()));
        if let Err(e) = written {
            eprintln!("proptest regression file {}: {e}", self.path.display());
        }
    }

    fn box_clone(&self) -> Box<dyn FailurePersistence> {
        Box::new(self.clone())
    }

    fn eq(&self, other: &dyn FailurePersistence) -> bool {
        other.as_any().downcast_ref::<RegressionFile>() == Some(self)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::ValueTree;

    #[test]
    fn generated_plans_are_valid_and_deterministic() {
        for t in TARGETS {
            let space = (t.space)();
            let strategy = space.plans();
            let mut a = TestRunner::new_with_rng(Config::default(), rng(3));
            let mut b = TestRunner::new_with_rng(Config::default(), rng(3));
            for _ in 0..50 {
                let p = strategy.new_tree(&mut a).unwrap().current();
                assert_eq!(p, strategy.new_tree(&mut b).unwrap().current(), "{}", t.name);
                p.validate().unwrap_or_else(|e| panic!("{}: {e}\n{p}", t.name));
                assert_eq!(p.clone().normalize(), p);
                assert!(p.schedule.faults.iter().all(|f| space.faults.classes.contains(&f.kind.class())));
            }
        }
    }

    #[test]
    fn shrinking_drops_faults_and_actors_first() {
        let space = Space::lock("lock", CLIENT_SIDE);
        let strategy = space.plans();
        let mut runner = TestRunner::new_with_rng(Config::default(), rng(9));
        // Find a tree with faults and several clients, then simplify as far
        // as it goes, accepting every step (as if every smaller plan failed).
        let mut tree = loop {
            let t = strategy.new_tree(&mut runner).unwrap();
            let p = t.current();
            if p.schedule.faults.len() >= 2 && p.actors() >= 3 {
                break t;
            }
        };
        let before = tree.current();
        while tree.simplify() {}
        let after = tree.current();
        assert!(after.schedule.faults.is_empty(), "{after}");
        assert_eq!(after.actors(), 1, "{after}");
        assert!(after.size() < before.size());
        let w = after.workload.plan::<lock::Variant>().unwrap();
        assert_eq!(w.stall, None);
        assert_eq!(w.ttl_ms, 150);
    }

    #[test]
    fn one_smaller_removes_one_fault_or_actor() {
        let strategy = Space::redlock("redlock", CLIENT_SIDE).plans();
        let mut runner = TestRunner::new_with_rng(Config::default(), rng(5));
        for _ in 0..30 {
            let p = strategy.new_tree(&mut runner).unwrap().current();
            let smaller = one_smaller(&p);
            // Removing an actor can also drop a fault that now collides
            // with another on the wrapped target: smaller, never larger.
            assert!(smaller.iter().all(|q| q.size() < p.size()), "{p}");
            let one_fault_less = smaller.iter().filter(|q| q.actors() == p.actors()).count();
            assert_eq!(one_fault_less, p.schedule.faults.len(), "{p}");
        }
        let lock = Space::lock("lock", CLIENT_SIDE).plans();
        for _ in 0..30 {
            let p = lock.new_tree(&mut runner).unwrap().current();
            let expected = p.faults() + usize::from(p.actors() > 1);
            assert_eq!(one_smaller(&p).len(), expected, "{p}");
        }
    }

    #[test]
    fn regression_file_dedups_and_filters() {
        let dir = std::env::temp_dir().join(format!("rp-regressions-{}", std::process::id()));
        let path = dir.join("x.proptest-regressions");
        let mut f = RegressionFile::new(&path, "x");
        let seed: PersistedSeed =
            "cc 0000000000000000000000000000000000000000000000000000000000000001".parse().unwrap();
        f.save_persisted_failure2(None, seed.clone(), &"value");
        f.save_persisted_failure2(None, seed.clone(), &"value");
        assert_eq!(f.seeds(), vec![seed.clone()]);
        assert_eq!(f.clone().save_only().load_persisted_failures2(None), Vec::<PersistedSeed>::new());
        assert_eq!(f.clone().only(&seed).load_persisted_failures2(None), vec![seed]);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("# x: shrinks to \"value\""), "{text}");
        let _ = std::fs::remove_dir_all(dir);
    }
}
