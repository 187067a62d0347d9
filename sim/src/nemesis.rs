//! Fault schedules: what goes wrong, when, to whom, and how it is undone.
//!
//! A schedule is plain data, a list of [`Fault`]s, so that it can be
//! drawn from a seed or a property search (one generator:
//! [`crate::fault_space::FaultSpace`]), written by hand, shrunk (it is
//! `Serialize`/`Deserialize`), and printed with every violation
//! ([`Display`](core::fmt::Display)). Every fault kind comes
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
//! | `cut-replication` | `restore-replication` |
//! | `failover` (the primary dies) | `promote` (a replica takes over) |
//!
//! The world applies a fault at `at` and its undo at `at + duration`, both
//! in simulated milliseconds since the start, in time order, undos first
//! at equal times. A normalised schedule ([`Schedule::normalize`]) never
//! overlaps two faults on the same switch (a link's state, a process's
//! pause, a server's life or clock): the first undo would silently cut
//! the other short.
//!
//! Targets are indexes: `Client(i)` is the i-th actor the scenario
//! registered, `Node(j)` the j-th Redis node. A network fault on
//! `Client(i)` cuts that client off from every node; `Link` picks one node.

use core::fmt;

use serde::{Deserialize, Serialize};

use crate::time::Millis;

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
    /// A client actor, by registration index (`World::client` finds it by
    /// name). For network faults: its links to every node.
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
    /// The node's replicas stop receiving its writes (they keep their data
    /// and their role); the undo relinks them and waits until they have
    /// caught up. Target: a `Node` with replicas.
    CutReplication,
    /// The node's primary crashes (SIGKILL; every connection drops). After
    /// `duration` (the failover time), its first replica is promoted with
    /// whatever it had received, the node's address moves to it, and the
    /// old primary comes back as its replica, empty. Target: a `Node` with
    /// replicas.
    Failover,
}

/// The kinds without their parameters: what a fault space may choose from.
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
    /// [`FaultKind::CutReplication`].
    CutReplication,
    /// [`FaultKind::Failover`].
    Failover,
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
            FaultClass::CutReplication => "cut-replication",
            FaultClass::Failover => "failover",
        }
    }

    /// The verb that undoes a fault of this class.
    pub fn undo_name(self) -> &'static str {
        match self {
            FaultClass::Partition => "repair",
            FaultClass::PartitionOneWay => "repair-oneway",
            FaultClass::Hold => "release",
            FaultClass::Latency => "restore-latency",
            FaultClass::ClientPause | FaultClass::ServerPause => "resume",
            FaultClass::ServerRestart => "restart",
            FaultClass::ClockStep => "unstep",
            FaultClass::CutReplication => "restore-replication",
            FaultClass::Failover => "promote",
        }
    }

    /// Every class.
    pub const ALL: [FaultClass; 10] = [
        FaultClass::Partition,
        FaultClass::PartitionOneWay,
        FaultClass::Hold,
        FaultClass::Latency,
        FaultClass::ClientPause,
        FaultClass::ServerPause,
        FaultClass::ServerRestart,
        FaultClass::ClockStep,
        FaultClass::CutReplication,
        FaultClass::Failover,
    ];

    /// Whether faults of this class need a node with replicas.
    pub fn needs_replicas(self) -> bool {
        matches!(self, FaultClass::CutReplication | FaultClass::Failover)
    }

    /// Whether faults of this class target a node (else a client or link).
    pub fn targets_node(self) -> bool {
        matches!(
            self,
            FaultClass::ServerPause
                | FaultClass::ServerRestart
                | FaultClass::ClockStep
                | FaultClass::CutReplication
                | FaultClass::Failover
        )
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
            FaultKind::CutReplication => FaultClass::CutReplication,
            FaultKind::Failover => FaultClass::Failover,
        }
    }

    /// The verb that starts the fault.
    pub fn name(&self) -> &'static str {
        self.class().name()
    }

    /// The verb that undoes it.
    pub fn undo_name(&self) -> &'static str {
        self.class().undo_name()
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

    /// Until when the fault can still be felt: its undo, and for added
    /// latency the last message it slowed (sent just before the undo, it
    /// arrives that latency later; seen in lock seed 79 200 153, where a
    /// request sent before a `restore-latency` ran 286 ms after it).
    pub fn felt_until(&self) -> Millis {
        match self.kind {
            FaultKind::Latency { ms } => self.end().saturating_add(ms),
            _ => self.end(),
        }
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
    /// Under swarm testing ([`crate::fault_space::FaultSpace::swarm`]): the fault classes this
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

    /// Every fault's `[start, felt until]` span, in schedule order.
    pub fn spans(&self) -> Vec<(Millis, Millis)> {
        self.faults.iter().map(|f| (f.at, f.felt_until())).collect()
    }

    /// The spans during which node `node`'s replicas receive none of its
    /// writes: each replication cut, from its start to its end or to the
    /// node's next failover, whichever comes first (the promoted server's
    /// replicas are another matter). What `acknowledged-writes` judges by.
    pub fn unreplicated_spans(&self, node: u32) -> Vec<(Millis, Millis)> {
        let on_node = |f: &&Fault| f.target == Target::Node(node);
        let failovers: Vec<Millis> =
            self.faults.iter().filter(on_node).filter(|f| f.kind == FaultKind::Failover).map(|f| f.at).collect();
        self.faults
            .iter()
            .filter(on_node)
            .filter(|f| f.kind == FaultKind::CutReplication)
            .map(|f| {
                let crash = failovers.iter().copied().filter(|&at| at >= f.at).min();
                (f.at, crash.map_or(f.end(), |c| c.min(f.end())))
            })
            .collect()
    }

    /// The spans of every fault on node `node` (a replication cut, a
    /// failover, a crash, a pause, a clock step...): outside them its
    /// replicas are linked and the bridge's barrier has each write confirmed
    /// before it answers. Wider than what unlinks a replica, on purpose: a
    /// checker that convicts a refusal outside them convicts nothing a fault
    /// could explain.
    pub fn unlinked_spans(&self, node: u32) -> Vec<(Millis, Millis)> {
        self.faults.iter().filter(|f| f.target == Target::Node(node)).map(|f| (f.at, f.end())).collect()
    }

    /// The spans of the faults that can reach client `client`: its own
    /// (pauses, its links), and every fault of a node (any request of its
    /// may go there). Narrower than [`Schedule::spans`] for the checkers'
    /// rules about one process: another client's partition excuses nothing.
    pub fn spans_reaching(&self, client: u32) -> Vec<(Millis, Millis)> {
        self.faults
            .iter()
            .filter(|f| match f.target {
                Target::Client(c) | Target::Link { client: c, .. } => c == client,
                Target::Node(_) => true,
            })
            .map(|f| (f.at, f.felt_until()))
            .collect()
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

    /// The schedule in canonical form for `clients` actors and `nodes`
    /// nodes, so that any drawn schedule runs and reads well:
    ///
    /// - targets are taken modulo the actors and nodes that exist (a
    ///   strategy draws them independently of the actor count, so that
    ///   shrinking the actors keeps every fault);
    /// - faults are sorted by start, and a fault that would start while an
    ///   earlier one on the same switch is still active is dropped:
    ///   turmoil keeps one state per link and a process one pause switch,
    ///   so the first undo would silently cut the other fault short;
    /// - durations are at least 1 ms.
    pub fn normalize(&self, clients: u32, nodes: u32) -> Schedule {
        let (clients, nodes) = (clients.max(1), nodes.max(1));
        let mut faults: Vec<Fault> = self
            .faults
            .iter()
            .map(|f| {
                let target = match f.target {
                    Target::Client(c) => Target::Client(c % clients),
                    Target::Node(n) => Target::Node(n % nodes),
                    Target::Link { client, node } => Target::Link { client: client % clients, node: node % nodes },
                };
                Fault { target, duration: f.duration.max(1), ..*f }
            })
            .collect();
        faults.sort_by_key(|f| f.at);
        let mut kept: Vec<Fault> = Vec::with_capacity(faults.len());
        for f in faults {
            if !kept.iter().any(|k| k.collides(&f)) {
                kept.push(f);
            }
        }
        Schedule { faults: kept, swarm: self.swarm.clone() }
    }
}

impl Fault {
    /// Whether `self` and `other` overlap in time on the same switch (a
    /// link's state, a process's pause, a server's clock or life): the
    /// first undo would cut the other short.
    pub fn collides(&self, other: &Fault) -> bool {
        let (first, then) = if self.at <= other.at { (self, other) } else { (other, self) };
        first.end() > then.at && conflicts(self, other)
    }
}

/// Whether two faults act on the same switch.
fn conflicts(a: &Fault, b: &Fault) -> bool {
    use FaultClass::*;
    let (ca, cb) = (a.kind.class(), b.kind.class());
    let network = |c: FaultClass| matches!(c, Partition | PartitionOneWay | Hold | Latency);
    // A failover kills the primary: the same switch as a pause or a restart.
    let server_life = |c: FaultClass| matches!(c, ServerPause | ServerRestart | Failover);
    if network(ca) && network(cb) {
        return links_overlap(a.target, b.target);
    }
    if ca == ClientPause && cb == ClientPause {
        return a.target == b.target;
    }
    if (server_life(ca) && server_life(cb))
        || (ca == ClockStep && cb == ClockStep)
        || (ca == CutReplication && cb == CutReplication)
    {
        return a.target == b.target;
    }
    false
}

fn links_overlap(a: Target, b: Target) -> bool {
    match (a, b) {
        (Target::Client(x), Target::Client(y)) => x == y,
        (Target::Client(x), Target::Link { client, .. }) | (Target::Link { client, .. }, Target::Client(x)) => {
            x == client
        }
        (Target::Link { client: c1, node: n1 }, Target::Link { client: c2, node: n2 }) => c1 == c2 && n1 == n2,
        _ => false,
    }
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

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn a_cut_leaves_a_node_unreplicated_until_its_end_or_its_primary_crashes() {
        let cut =
            |at, duration, node| Fault { at, duration, kind: FaultKind::CutReplication, target: Target::Node(node) };
        let failover = Fault { at: 1500, duration: 150, kind: FaultKind::Failover, target: Target::Node(0) };
        let s = Schedule::of([cut(800, 1400, 0), failover, cut(100, 200, 0), cut(900, 100, 1)]);
        assert_eq!(s.unreplicated_spans(0), vec![(800, 1500), (100, 300)]);
        assert_eq!(s.unreplicated_spans(1), vec![(900, 1000)]);
        assert!(s.unreplicated_spans(2).is_empty());
    }

    #[test]
    fn added_latency_is_felt_until_its_last_slowed_message_lands() {
        let latency =
            Fault { at: 1825, duration: 875, kind: FaultKind::Latency { ms: 289 }, target: Target::Client(0) };
        let hold = Fault { at: 100, duration: 50, kind: FaultKind::Hold, target: Target::Client(1) };
        let s = Schedule::of([latency, hold]);
        assert_eq!(s.spans(), vec![(1825, 2700 + 289), (100, 150)]);
        assert_eq!(s.spans_reaching(0), vec![(1825, 2989)]);
        assert_eq!(s.actions().iter().map(|a| a.time).max(), Some(2700), "the undo itself runs at the end");
    }
}
