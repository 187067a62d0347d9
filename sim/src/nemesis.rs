//! Fault schedules: what goes wrong, when, to whom, and how it is undone.
//!
//! A schedule is plain data, a list of [`Fault`]s, so that it can be
//! generated from a seed ([`Schedule::generate`]), written by hand, shrunk
//! by a property test (it is `Serialize`/`Deserialize`), and printed with
//! every violation ([`Display`](core::fmt::Display)). Every fault kind comes
//! with its **named undo**, as turmoil's verbs come in pairs:
//!
//! | fault | undo |
//! |---|---|
//! | `partition` | `repair` |
//! | `partition-oneway` | `repair-oneway` |
//! | `hold` | `release` |
//! | `latency` | `restore-latency` |
//! | `client-pause` | `resume` |
//! | `server-pause` | `resume` |
//! | `crash` (server restart, no persistence) | `restart` |
//! | `clock-step` | `unstep` |
//!
//! The world applies a fault at `at` and its undo at `at + duration`, both
//! in simulated milliseconds since the start. Generated schedules never
//! overlap two faults in time (turmoil does not support every combination,
//! e.g. `hold` over a one-way partition, and one fault at a time keeps
//! counterexamples readable); hand-written ones may, and are applied in
//! time order, undos first at equal times.
//!
//! Targets are indexes: `Client(i)` is the i-th actor the scenario
//! registered, `Node(j)` the j-th Redis node. A network fault on
//! `Client(i)` cuts that client off from every node; `Link` picks one node.

use core::fmt;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::history::Millis;

/// Which direction of a link a one-way partition drops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Direction {
    /// Requests from the client are lost; replies would still arrive.
    ToServer,
    /// Replies to the client are lost; requests still execute.
    ToClient,
}

/// Who a fault hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Target {
    /// A client actor (by registration index). For network faults: its
    /// links to every node.
    Client(u32),
    /// A Redis node (by index).
    Node(u32),
    /// The link between one client and one node.
    Link {
        /// Client actor index.
        client: u32,
        /// Node index.
        node: u32,
    },
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Client(c) => write!(f, "client#{c}"),
            Target::Node(n) => write!(f, "node#{n}"),
            Target::Link { client, node } => write!(f, "client#{client}<->node#{node}"),
        }
    }
}

/// What goes wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FaultKind {
    /// Messages both ways are dropped (existing connections silently lose
    /// data; new connects hang). Target: `Client` or `Link`.
    Partition,
    /// Messages one way are dropped. Target: `Client` or `Link`.
    PartitionOneWay {
        /// Which way.
        direction: Direction,
    },
    /// Messages both ways are held, then delivered on release. Target:
    /// `Client` or `Link`.
    Hold,
    /// Every message takes exactly `ms`. Target: `Client` or `Link`.
    Latency {
        /// One-way latency in milliseconds.
        ms: u64,
    },
    /// The client process is frozen (GC, suspended VM). Target: `Client`.
    ClientPause,
    /// The server holds every request while time runs (SIGSTOP). Target: `Node`.
    ServerPause,
    /// The server crashes and comes back empty after `duration` (no
    /// persistence: keys, fence counters and scripts are lost; every
    /// connection drops). Target: `Node`.
    ServerRestart,
    /// The server's wall clock jumps by `offset_ms` (negative: backwards).
    /// Target: `Node`.
    ClockStep {
        /// Offset from simulated time, in ms.
        offset_ms: i64,
    },
}

/// The kinds without their parameters: what a [`Profile`] may choose from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum FaultClass {
    /// [`FaultKind::Partition`].
    Partition,
    /// [`FaultKind::PartitionOneWay`].
    PartitionOneWay,
    /// [`FaultKind::Hold`].
    Hold,
    /// [`FaultKind::Latency`].
    Latency,
    /// [`FaultKind::ClientPause`].
    ClientPause,
    /// [`FaultKind::ServerPause`].
    ServerPause,
    /// [`FaultKind::ServerRestart`].
    ServerRestart,
    /// [`FaultKind::ClockStep`].
    ClockStep,
}

impl FaultClass {
    /// The verb that starts a fault of this class (as in schedules).
    pub fn name(self) -> &'static str {
        match self {
            FaultClass::Partition => "partition",
            FaultClass::PartitionOneWay => "partition-oneway",
            FaultClass::Hold => "hold",
            FaultClass::Latency => "latency",
            FaultClass::ClientPause => "client-pause",
            FaultClass::ServerPause => "server-pause",
            FaultClass::ServerRestart => "crash",
            FaultClass::ClockStep => "clock-step",
        }
    }

    /// Every class.
    pub const ALL: [FaultClass; 8] = [
        FaultClass::Partition,
        FaultClass::PartitionOneWay,
        FaultClass::Hold,
        FaultClass::Latency,
        FaultClass::ClientPause,
        FaultClass::ServerPause,
        FaultClass::ServerRestart,
        FaultClass::ClockStep,
    ];

    /// Whether faults of this class target a node (else a client or link).
    pub fn targets_node(self) -> bool {
        matches!(self, FaultClass::ServerPause | FaultClass::ServerRestart | FaultClass::ClockStep)
    }
}

impl FaultKind {
    /// The class of this kind.
    pub fn class(&self) -> FaultClass {
        match self {
            FaultKind::Partition => FaultClass::Partition,
            FaultKind::PartitionOneWay { .. } => FaultClass::PartitionOneWay,
            FaultKind::Hold => FaultClass::Hold,
            FaultKind::Latency { .. } => FaultClass::Latency,
            FaultKind::ClientPause => FaultClass::ClientPause,
            FaultKind::ServerPause => FaultClass::ServerPause,
            FaultKind::ServerRestart => FaultClass::ServerRestart,
            FaultKind::ClockStep { .. } => FaultClass::ClockStep,
        }
    }

    /// The verb that starts the fault.
    pub fn name(&self) -> &'static str {
        match self {
            FaultKind::Partition => "partition",
            FaultKind::PartitionOneWay { .. } => "partition-oneway",
            FaultKind::Hold => "hold",
            FaultKind::Latency { .. } => "latency",
            FaultKind::ClientPause => "client-pause",
            FaultKind::ServerPause => "server-pause",
            FaultKind::ServerRestart => "crash",
            FaultKind::ClockStep { .. } => "clock-step",
        }
    }

    /// The verb that undoes it.
    pub fn undo_name(&self) -> &'static str {
        match self {
            FaultKind::Partition => "repair",
            FaultKind::PartitionOneWay { .. } => "repair-oneway",
            FaultKind::Hold => "release",
            FaultKind::Latency { .. } => "restore-latency",
            FaultKind::ClientPause | FaultKind::ServerPause => "resume",
            FaultKind::ServerRestart => "restart",
            FaultKind::ClockStep { .. } => "unstep",
        }
    }

    /// Parameters worth printing, e.g. `+5000ms` or `to-client`.
    fn detail(&self) -> Option<String> {
        match self {
            FaultKind::PartitionOneWay { direction: Direction::ToServer } => Some("requests dropped".into()),
            FaultKind::PartitionOneWay { direction: Direction::ToClient } => Some("replies dropped".into()),
            FaultKind::Latency { ms } => Some(format!("{ms}ms each way")),
            FaultKind::ClockStep { offset_ms } => Some(format!("{offset_ms:+}ms")),
            _ => None,
        }
    }
}

/// One timed fault and its undo.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Fault {
    /// When it starts, in simulated ms since the start.
    pub at: Millis,
    /// How long until its undo, in simulated ms.
    pub duration: Millis,
    /// What goes wrong.
    pub kind: FaultKind,
    /// To whom.
    pub target: Target,
}

impl Fault {
    /// When the undo runs.
    pub fn end(&self) -> Millis {
        self.at.saturating_add(self.duration)
    }

    /// Checks that the target suits the kind and exists in a world of
    /// `clients` actors and `nodes` Redis nodes.
    pub fn validate(&self, clients: u32, nodes: u32) -> Result<(), String> {
        let in_range = match self.target {
            Target::Client(c) => c < clients,
            Target::Node(n) => n < nodes,
            Target::Link { client, node } => client < clients && node < nodes,
        };
        if !in_range {
            return Err(format!("{self}: target does not exist ({clients} clients, {nodes} nodes)"));
        }
        let suits = match self.kind.class() {
            FaultClass::ClientPause => matches!(self.target, Target::Client(_)),
            c if c.targets_node() => matches!(self.target, Target::Node(_)),
            _ => matches!(self.target, Target::Client(_) | Target::Link { .. }),
        };
        if !suits {
            return Err(format!("{self}: a {} cannot target {}", self.kind.name(), self.target));
        }
        Ok(())
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at {}ms for {}ms: {} {}", self.at, self.duration, self.kind.name(), self.target)?;
        if let Some(d) = self.kind.detail() {
            write!(f, " ({d})")?;
        }
        write!(f, ", then {}", self.kind.undo_name())
    }
}

/// A fault schedule.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Schedule {
    /// The faults, in any order (applied in time order).
    pub faults: Vec<Fault>,
    /// Under swarm testing ([`Profile::swarm`]): the fault classes this
    /// seed drew as enabled, and the most faults it allowed. Informative
    /// only (the faults above are the schedule); printed by `replay`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swarm: Option<SwarmDraw>,
}

/// What one seed drew under swarm testing: a random subset of the
/// profile's fault classes and a fault budget. Swarm testing (Groce et al.)
/// finds more than drawing every seed from every class, because some bugs
/// need one fault kind often and another never (a pause-only run reaches
/// states a run diluted with partitions rarely does).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SwarmDraw {
    /// The classes enabled for this seed (never empty).
    pub enabled: Vec<FaultClass>,
    /// The most faults this seed may get.
    pub max_faults: u32,
}

impl fmt::Display for SwarmDraw {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.enabled.iter().map(|c| c.name()).collect();
        write!(f, "swarm: enabled {} (at most {} fault(s))", names.join(", "), self.max_faults)
    }
}

impl SwarmDraw {
    /// Draws from `seed` within `profile` (its classes and fault range).
    pub fn draw(seed: u64, profile: &Profile) -> SwarmDraw {
        let mut rng = StdRng::seed_from_u64(seed ^ 0x7377_6172_6d21_0000); // "swarm!"
        let mut enabled: Vec<FaultClass> = profile.classes.iter().copied().filter(|_| rng.random_bool(0.5)).collect();
        if enabled.is_empty() && !profile.classes.is_empty() {
            enabled.push(profile.classes[rng.random_range(0..profile.classes.len())]);
        }
        let (lo, hi) = (profile.faults.0.min(profile.faults.1), profile.faults.0.max(profile.faults.1));
        SwarmDraw { enabled, max_faults: rng.random_range(lo..=hi) }
    }
}

/// One step of applying a schedule: a fault's start or its undo.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Action {
    /// When, in simulated ms.
    pub time: Millis,
    /// `true` for the undo.
    pub undo: bool,
    /// The fault.
    pub fault: Fault,
    /// Its index in the schedule.
    pub index: usize,
}

impl Schedule {
    /// No faults.
    pub fn none() -> Schedule {
        Schedule::default()
    }

    /// A schedule of exactly these faults.
    pub fn of(faults: impl IntoIterator<Item = Fault>) -> Schedule {
        Schedule { faults: faults.into_iter().collect(), swarm: None }
    }

    /// Whether there are no faults.
    pub fn is_empty(&self) -> bool {
        self.faults.is_empty()
    }

    /// Every fault's `[start, end]` span, in schedule order.
    pub fn spans(&self) -> Vec<(Millis, Millis)> {
        self.faults.iter().map(|f| (f.at, f.end())).collect()
    }

    /// The spans of the faults that freeze a client process (client
    /// pauses): what excuses a client's late timer in the checkers.
    pub fn freeze_spans(&self) -> Vec<(Millis, Millis)> {
        self.faults.iter().filter(|f| f.kind == FaultKind::ClientPause).map(|f| (f.at, f.end())).collect()
    }

    /// Checks every fault against a world of `clients` actors and `nodes` nodes.
    pub fn validate(&self, clients: u32, nodes: u32) -> Result<(), String> {
        self.faults.iter().try_for_each(|f| f.validate(clients, nodes))
    }

    /// Starts and undos in the order the world applies them: by time, undos
    /// before starts at equal times, then by position in the schedule.
    pub fn actions(&self) -> Vec<Action> {
        let mut actions: Vec<Action> = self
            .faults
            .iter()
            .enumerate()
            .flat_map(|(index, &fault)| {
                [
                    Action { time: fault.at, undo: false, fault, index },
                    Action { time: fault.end(), undo: true, fault, index },
                ]
            })
            .collect();
        actions.sort_by_key(|a| (a.time, !a.undo, a.index));
        actions
    }

    /// A schedule drawn from `seed` within `profile` (see the module docs).
    /// Under [`Profile::swarm`] the seed first draws which classes are
    /// enabled and how many faults it may get ([`SwarmDraw`]).
    pub fn generate(seed: u64, profile: &Profile) -> Schedule {
        if !profile.swarm {
            return Self::generate_within(seed, profile);
        }
        let draw = SwarmDraw::draw(seed, profile);
        let mut narrowed = profile.clone();
        narrowed.classes = draw.enabled.clone();
        narrowed.faults = (profile.faults.0.min(draw.max_faults), draw.max_faults);
        let mut schedule = Self::generate_within(seed, &narrowed);
        schedule.swarm = Some(draw);
        schedule
    }

    fn generate_within(seed: u64, profile: &Profile) -> Schedule {
        let mut rng = StdRng::seed_from_u64(seed ^ 0x6e65_6d65_7369_7321); // "nemesis!"
        let mut faults = Vec::new();
        if profile.classes.is_empty() || profile.window.1 <= profile.window.0 {
            return Schedule { faults, swarm: None };
        }
        let (lo, hi) = (profile.faults.0.min(profile.faults.1), profile.faults.0.max(profile.faults.1));
        let count = rng.random_range(lo..=hi);
        if count == 0 {
            return Schedule { faults, swarm: None };
        }
        let (start, end) = profile.window;
        let slot = (end - start) / u64::from(count);
        let mut t = start;
        for _ in 0..count {
            let class = profile.classes[rng.random_range(0..profile.classes.len())];
            let (dmin, dmax) = ordered(profile.duration);
            let duration = rng.random_range(dmin..=dmax.max(dmin));
            let gap = rng.random_range(0..=slot.saturating_sub(duration).max(1) / 2);
            let at = t + gap;
            if at + duration > end {
                break;
            }
            let kind = match class {
                FaultClass::Partition => FaultKind::Partition,
                FaultClass::PartitionOneWay => FaultKind::PartitionOneWay {
                    direction: if rng.random_bool(0.5) { Direction::ToServer } else { Direction::ToClient },
                },
                FaultClass::Hold => FaultKind::Hold,
                FaultClass::Latency => {
                    let (a, b) = ordered(profile.latency_ms);
                    FaultKind::Latency { ms: rng.random_range(a..=b) }
                }
                FaultClass::ClientPause => FaultKind::ClientPause,
                FaultClass::ServerPause => FaultKind::ServerPause,
                FaultClass::ServerRestart => FaultKind::ServerRestart,
                FaultClass::ClockStep => {
                    let (a, b) = ordered(profile.clock_step_ms);
                    let magnitude = rng.random_range(a..=b) as i64;
                    FaultKind::ClockStep { offset_ms: if rng.random_bool(0.5) { magnitude } else { -magnitude } }
                }
            };
            let clients = profile.clients.max(1);
            let nodes = profile.nodes.max(1);
            let target = if class.targets_node() {
                Target::Node(rng.random_range(0..nodes))
            } else if class == FaultClass::ClientPause || nodes == 1 || rng.random_bool(0.5) {
                Target::Client(rng.random_range(0..clients))
            } else {
                Target::Link { client: rng.random_range(0..clients), node: rng.random_range(0..nodes) }
            };
            faults.push(Fault { at, duration, kind, target });
            t = at + duration + 1;
        }
        Schedule { faults, swarm: None }
    }
}

fn ordered((a, b): (u64, u64)) -> (u64, u64) {
    (a.min(b), a.max(b))
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(draw) = &self.swarm {
            writeln!(f, "{draw}")?;
        }
        if self.faults.is_empty() {
            return writeln!(f, "nemesis: no faults");
        }
        writeln!(f, "nemesis: {} fault(s)", self.faults.len())?;
        let mut sorted: Vec<&Fault> = self.faults.iter().collect();
        sorted.sort_by_key(|x| x.at);
        for fault in sorted {
            writeln!(f, "  {fault}")?;
        }
        Ok(())
    }
}

/// What [`Schedule::generate`] may produce.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Profile {
    /// Client actors in the world.
    pub clients: u32,
    /// Redis nodes in the world.
    pub nodes: u32,
    /// Fault classes to draw from (uniformly).
    pub classes: Vec<FaultClass>,
    /// How many faults, inclusive range.
    pub faults: (u32, u32),
    /// Faults start and end within `[window.0, window.1]` ms.
    pub window: (Millis, Millis),
    /// Fault duration range in ms.
    pub duration: (Millis, Millis),
    /// Latency range for `latency` faults, ms.
    pub latency_ms: (u64, u64),
    /// Magnitude range for clock steps, ms (the sign is drawn too).
    pub clock_step_ms: (u64, u64),
    /// Swarm testing: each seed enables a random subset of `classes` and a
    /// random fault budget within `faults` ([`SwarmDraw`]).
    #[serde(default)]
    pub swarm: bool,
}

impl Profile {
    /// A profile for `clients` actors and `nodes` nodes over a scenario of
    /// `length` ms: 1–3 faults of any client-side network kind or client
    /// pause, 100–1500 ms each, between 10% and 90% of the run.
    pub fn new(clients: u32, nodes: u32, length: Millis) -> Profile {
        Profile {
            clients,
            nodes,
            classes: vec![
                FaultClass::Partition,
                FaultClass::PartitionOneWay,
                FaultClass::Hold,
                FaultClass::Latency,
                FaultClass::ClientPause,
            ],
            faults: (1, 3),
            window: (length / 10, length * 9 / 10),
            duration: (100, 1500),
            latency_ms: (20, 300),
            clock_step_ms: (500, 5000),
            swarm: false,
        }
    }

    /// The same profile under swarm testing (see [`SwarmDraw`]).
    pub fn swarm(mut self) -> Profile {
        self.swarm = true;
        self
    }

    /// The same profile drawing only from `classes`.
    pub fn classes(mut self, classes: &[FaultClass]) -> Profile {
        self.classes = classes.to_vec();
        self
    }

    /// The same profile with this many faults (inclusive range).
    pub fn faults(mut self, min: u32, max: u32) -> Profile {
        self.faults = (min, max);
        self
    }

    /// The same profile with this fault-duration range (ms).
    pub fn duration(mut self, min: Millis, max: Millis) -> Profile {
        self.duration = (min, max);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_is_deterministic_valid_and_sequential() {
        let profile = Profile::new(3, 2, 3000).classes(&FaultClass::ALL).faults(2, 4);
        for seed in 0..200 {
            let a = Schedule::generate(seed, &profile);
            assert_eq!(a, Schedule::generate(seed, &profile));
            a.validate(3, 2).unwrap();
            for w in a.faults.windows(2) {
                assert!(w[0].end() < w[1].at, "overlap in {a}");
            }
            assert!(a.faults.iter().all(|f| f.at >= 300 && f.end() <= 2700), "{a}");
        }
    }

    #[test]
    fn swarm_draws_a_nonempty_subset_and_a_budget_per_seed() {
        let profile = Profile::new(3, 1, 3000).classes(&FaultClass::ALL).faults(0, 4).swarm();
        let mut subsets = std::collections::BTreeSet::new();
        for seed in 0..200 {
            let s = Schedule::generate(seed, &profile);
            assert_eq!(s, Schedule::generate(seed, &profile));
            let draw = s.swarm.clone().expect("swarm draw recorded");
            assert!(!draw.enabled.is_empty());
            assert!(s.faults.len() as u32 <= draw.max_faults, "{s}");
            assert!(s.faults.iter().all(|f| draw.enabled.contains(&f.kind.class())), "{s}");
            assert!(s.to_string().starts_with("swarm: enabled "), "{s}");
            subsets.insert(draw.enabled);
        }
        assert!(subsets.len() > 20, "only {} distinct subsets", subsets.len());
    }

    #[test]
    fn actions_put_undos_first_and_display_names_undos() {
        let s = Schedule::of([
            Fault { at: 100, duration: 50, kind: FaultKind::Hold, target: Target::Client(0) },
            Fault { at: 150, duration: 10, kind: FaultKind::ClientPause, target: Target::Client(1) },
        ]);
        let acts = s.actions();
        assert_eq!(
            acts.iter().map(|a| (a.time, a.undo)).collect::<Vec<_>>(),
            vec![(100, false), (150, true), (150, false), (160, true)]
        );
        let text = s.to_string();
        assert!(text.contains("at 100ms for 50ms: hold client#0, then release"), "{text}");
        let bad = Fault { at: 0, duration: 1, kind: FaultKind::ServerPause, target: Target::Client(0) };
        assert!(bad.validate(1, 1).is_err());
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(serde_json::from_str::<Schedule>(&json).unwrap(), s);
    }
}
