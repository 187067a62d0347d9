//! What a search may draw: fault and workload spaces, and the proptest
//! strategies that draw [`Plan`]s from them (simplest values first).

use std::fmt::Debug;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::strategy::{BoxedStrategy, Union};

use crate::nemesis::{Direction, Fault, FaultClass, FaultKind, Schedule, Target};
use crate::plan::{Plan, Workload};
use crate::scenarios::election::{ElectionPlan, LeaderStall};
use crate::scenarios::lock::{LockPlan, Stall};
use crate::scenarios::rate_limit::{Burst, RateLimitPlan};
use crate::scenarios::redlock::{RedlockPlan, RedlockStart};
use crate::scenarios::{election, lock, rate_limit, redlock};

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

pub(super) fn kind(class: FaultClass, space: &FaultSpace) -> BoxedStrategy<FaultKind> {
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
pub(super) fn fault(space: &FaultSpace, max_clients: u32, nodes: u32) -> BoxedStrategy<Fault> {
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

pub(super) fn faults(space: &FaultSpace, max_clients: u32, nodes: u32) -> BoxedStrategy<Vec<Fault>> {
    if space.classes.is_empty() || space.count.1 == 0 {
        return Just(Vec::new()).boxed();
    }
    vec(fault(space, max_clients, nodes), space.count.0..=space.count.1).boxed()
}

pub(super) fn workload(space: &WorkloadSpace) -> BoxedStrategy<Workload> {
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
