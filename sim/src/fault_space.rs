//! What nemesis faults a run may draw ([`FaultSpace`]: the only fault
//! generator) and the shape of a family's own workload fault
//! ([`WorkloadFault`]), with the seeded RNG every draw uses ([`rng`]).
//!
//! Below the families, which name their fault spaces, and below the plan
//! spaces that combine a fault space with a family's workloads
//! (`crate::space`): dependencies run one way (ADR 0009).

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::strategy::{BoxedStrategy, Union, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

use crate::nemesis::{Direction, Fault, FaultClass, FaultKind, Schedule, SwarmDraw, Target};
use crate::time::Millis;

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

/// What nemesis faults a run may draw.
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
    /// cuts the client off from every node). Ignored with one node.
    pub links: bool,
    /// Server faults (pause, restart, clock step) hit only nodes below this
    /// index (`None`: any node), e.g. to keep clock steps on a minority.
    pub server_nodes: Option<u32>,
    /// Every fault's undo happens by this time (ms; a longer fault is cut
    /// short): leaves a quiet tail in which liveness is judged.
    pub ends_by: Option<Millis>,
    /// Swarm testing (Groce et al.): each plan first draws a non-empty
    /// subset of `classes` and a fault budget within `count`, then its
    /// faults from that subset only. Some bugs need one fault kind often
    /// and another never; a run diluted with every kind rarely gets there.
    pub swarm: bool,
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
            ends_by: None,
            swarm: false,
        }
    }

    /// No nemesis faults at all.
    pub fn none() -> FaultSpace {
        FaultSpace::new(&[], 0)
    }

    /// The nemesis the lock and job-queue families' seeds draw from: one to
    /// three faults of the client-side kinds (client pauses, partitions both
    /// ways and one way, held links, latency) and server pauses, 100–1500 ms
    /// each, inside 10–90 % of a run of `length_ms`, single links allowed
    /// (where there is more than one node), a swarm subset per seed.
    pub fn client_side(length_ms: Millis) -> FaultSpace {
        let classes = [
            FaultClass::ClientPause,
            FaultClass::Partition,
            FaultClass::PartitionOneWay,
            FaultClass::Hold,
            FaultClass::Latency,
            FaultClass::ServerPause,
        ];
        FaultSpace { count: (1, 3), duration_ms: (100, 1500), links: true, ..FaultSpace::new(&classes, 3) }
            .within(length_ms / 10, length_ms * 9 / 10)
            .swarm()
    }

    /// The same space under swarm testing (see [`FaultSpace::swarm`]).
    pub fn swarm(mut self) -> FaultSpace {
        self.swarm = true;
        self
    }

    /// The same space with faults between `start` and `end` ms: they start
    /// at `start` at the earliest and are undone by `end`.
    pub fn within(mut self, start: Millis, end: Millis) -> FaultSpace {
        self.start_ms = (start, end.saturating_sub(self.duration_ms.0).max(start));
        self.ends_by = Some(end);
        self
    }

    /// The strategy of nemesis schedules for `max_clients` actors and
    /// `nodes` nodes (targets drawn independently of the actor count, so
    /// that shrinking the actors keeps every fault; [`Schedule::normalize`]
    /// wraps them).
    pub fn schedules(&self, max_clients: u32, nodes: u32) -> BoxedStrategy<Schedule> {
        if self.classes.is_empty() || self.count.1 == 0 {
            return Just(Schedule::none()).boxed();
        }
        if !self.swarm {
            return faults(self, max_clients, nodes).prop_map(Schedule::of).boxed();
        }
        let space = self.clone();
        let (lo, hi) = (self.count.0.min(self.count.1), self.count.0.max(self.count.1));
        (proptest::sample::subsequence(self.classes.clone(), 1..=self.classes.len()), lo..=hi)
            .prop_flat_map(move |(enabled, max_faults)| {
                let narrowed =
                    FaultSpace { classes: enabled.clone(), count: (lo.min(max_faults), max_faults), ..space.clone() };
                let draw = SwarmDraw { enabled, max_faults: max_faults as u32 };
                faults(&narrowed, max_clients, nodes)
                    .prop_map(move |faults| Schedule { faults, swarm: Some(draw.clone()) })
            })
            .boxed()
    }

    /// The schedule seed `seed` draws for `clients` actors and `nodes`
    /// nodes, normalised: what a user's own simulation hands its world.
    pub fn schedule(&self, seed: u64, clients: u32, nodes: u32) -> Schedule {
        let mut runner = TestRunner::new_with_rng(Config::default(), rng(seed));
        match self.schedules(clients, nodes).new_tree(&mut runner) {
            Ok(tree) => tree.current().normalize(clients, nodes),
            // Only a filtering strategy can refuse; these never filter.
            Err(_) => Schedule::none(),
        }
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
        FaultClass::CutReplication => Just(FaultKind::CutReplication).boxed(),
        FaultClass::Failover => Just(FaultKind::Failover).boxed(),
        FaultClass::ClockStep => (space.clock_step_ms.0..=space.clock_step_ms.1)
            .prop_map(|offset_ms| FaultKind::ClockStep { offset_ms })
            .boxed(),
    }
}

/// One fault: kind, then target, then start and duration.
fn fault(space: &FaultSpace, max_clients: u32, nodes: u32) -> BoxedStrategy<Fault> {
    let kinds: Vec<BoxedStrategy<FaultKind>> = space.classes.iter().map(|c| kind(*c, space)).collect();
    let links = space.links && nodes > 1;
    let server_nodes = space.server_nodes.unwrap_or(nodes).clamp(1, nodes.max(1));
    let ends_by = space.ends_by;
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
            let duration = ends_by.map_or(duration, |end| duration.min(end.saturating_sub(at)).max(1));
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

/// Whether a plan has a workload fault (a holder's stall inside its critical
/// section, a worker's freeze after a claim), and how long it lasts: the
/// shape the families that inject one draw it from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WorkloadFault {
    /// Never.
    Never,
    /// Sometimes (an `Option` that shrinks to none), lasting `ms` (inclusive).
    Maybe {
        /// Lengths (ms).
        ms: (u64, u64),
    },
    /// Always, lasting `ms` (inclusive).
    Always {
        /// Lengths (ms).
        ms: (u64, u64),
    },
}

impl WorkloadFault {
    /// The fault's strategy: where it hits, drawn by `at` (which actor, which
    /// of its operations), then how long it lasts.
    pub(crate) fn strategy<S>(self, at: S) -> BoxedStrategy<Option<(S::Value, u64)>>
    where
        S: Strategy + 'static,
        S::Value: Clone,
    {
        match self {
            WorkloadFault::Never => Just(None).boxed(),
            WorkloadFault::Maybe { ms } => proptest::option::of((at, ms.0..=ms.1)).boxed(),
            WorkloadFault::Always { ms } => (at, ms.0..=ms.1).prop_map(Some).boxed(),
        }
    }
}

/// Proptest's RNG (ChaCha) seeded from `seed`: what a seed's plan is drawn
/// with, and what a search from base seed `seed` starts from.
pub(crate) fn rng(seed: u64) -> TestRng {
    let mut bytes = [0u8; 32];
    for (i, chunk) in bytes.chunks_mut(8).enumerate() {
        let word = crate::world::derive_seed(seed, &format!("proptest-rng-{i}"));
        chunk.copy_from_slice(&word.to_le_bytes());
    }
    TestRng::from_seed(RngAlgorithm::ChaCha, &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swarm_draws_faults_from_the_enabled_classes_only() {
        let space = FaultSpace::new(&FaultClass::ALL, 4).swarm();
        let mut seen = std::collections::BTreeSet::new();
        for seed in 0..200 {
            let s = space.schedule(seed, 3, 2);
            let draw = s.swarm.clone().expect("a swarm schedule records its draw");
            assert!(!draw.enabled.is_empty());
            assert!(s.faults.len() <= draw.max_faults as usize);
            assert!(s.faults.iter().all(|f| draw.enabled.contains(&f.kind.class())), "{s}");
            s.validate(3, 2).unwrap();
            assert_eq!(s, space.schedule(seed, 3, 2), "seed {seed} draws one schedule");
            seen.extend(s.faults.iter().map(|f| f.kind.class()));
        }
        assert_eq!(seen.len(), FaultClass::ALL.len(), "every class is drawn by some seed");
    }

    #[test]
    fn within_keeps_every_fault_inside_the_window() {
        let space =
            FaultSpace { duration_ms: (100, 1500), ..FaultSpace::new(&[FaultClass::Partition], 3) }.within(300, 2700);
        for seed in 0..200 {
            for f in space.schedule(seed, 2, 1).faults {
                assert!(f.at >= 300 && f.end() <= 2700, "{f}");
            }
        }
    }
}
