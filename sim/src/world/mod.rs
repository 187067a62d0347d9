//! The world: one simulation run, from a seed to a history.
//!
//! A [`World`] is built from a [`WorldConfig`] (seed, number of Redis nodes,
//! link latency, timeouts) over a pool of real servers ([`Servers`]). It
//! creates the turmoil simulation (seeded RNG, a **pinned epoch**, a hard
//! time limit), one bridge host per node (`redis-0`, `redis-1`, ...), and
//! lets scenario code register client actors. [`World::run`] then steps the
//! simulation, applying the nemesis [`Schedule`] between steps, until every
//! actor has returned, and hands back a [`RunOutcome`]: the history, the
//! schedule, and a few counters.
//!
//! A scenario is written like this:
//!
//! ```no_run
//! use redis_primitives_sim::{Schedule, Servers, World, WorldConfig};
//! # fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let mut servers = Servers::new();
//! let mut world = World::new(&mut servers, WorldConfig::new(42))?;
//! for i in 0..3 {
//!     world.actor(format!("client-{i}"), |actor| async move {
//!         let conn = actor.connection(0);
//!         let lock = redis_primitives::Lock::builder(conn)
//!             .owners(redis_primitives::OwnerSource::seeded(actor.seed()))
//!             .build()?;
//!         // ... invoke / ok / fail / info through actor.invoke(..) etc.
//!         Ok(())
//!     });
//! }
//! world.nemesis(Schedule::none());
//! let outcome = world.run()?;
//! println!("{}", outcome.history.digest());
//! # Ok(()) }
//! ```
//!
//! Everything an actor does runs under its pause handle (`pause.rs`), and
//! everything it learns comes from real Redis through the bridge. Determinism
//! rests on: the turmoil seed, the pinned epoch, seeded per-actor RNGs
//! ([`Actor::seed`]), `biased;` selects, no `std::time` inside actors, and
//! servers reset (`FLUSHALL`, `SCRIPT FLUSH`, clock pinned) before each run.

use std::future::Future;
use std::sync::Arc;
use std::time::{Instant as WallInstant, UNIX_EPOCH};

use core::fmt;
use core::time::Duration;
use serde::{Deserialize, Serialize};

use crate::bridge::BridgeNode;
pub use crate::error::SimError;
use crate::history::{Digest, Fnv1a, History, Millis, NamedTarget, Op};
use crate::nemesis::{Schedule, Target};
use crate::net::NetConfig;
use crate::pause::PauseHandle;
use crate::proxy::LiveBridge;
use crate::servers::Servers;

mod actor;
mod faults;
mod live;
mod rules;

pub use rules::Rule;

pub use actor::{together, Actor, ActorResult, Process};

/// 2024-01-01T00:00:00Z: every run starts at the same wall-clock instant, so
/// server times (and anything derived from them) are the same on every run.
pub const DEFAULT_EPOCH_UNIX_MS: u64 = 1_704_067_200_000;

/// How a `ServerRestart` fault restarts the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum RestartMode {
    /// `FLUSHALL` + `SCRIPT FLUSH` while the bridge host is down: everything
    /// a restart without persistence loses, in a fraction of a millisecond.
    #[default]
    Flush,
    /// Kill the redis-server process and start a new one (tens of ms of
    /// wall time; the simulation does not advance meanwhile).
    Process,
}

/// Settings of one run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorldConfig {
    /// Seeds turmoil (link latency draws) and every per-actor seed.
    pub seed: u64,
    /// Number of Redis nodes (bridges), each backed by a real server.
    pub nodes: usize,
    /// Wall-clock instant at which the simulation starts (ms since the Unix epoch).
    pub epoch_unix_ms: u64,
    /// Minimum one-way link latency.
    pub min_latency: Duration,
    /// Maximum one-way link latency (turmoil draws between the two).
    pub max_latency: Duration,
    /// Hard limit on simulated time: a run whose actors have not all
    /// returned by then fails (a stuck scenario, not a result).
    pub limit: Duration,
    /// Connect and response timeouts of actors' connections.
    pub net: NetConfig,
    /// How server restarts are done.
    pub restart: RestartMode,
    /// Replicas per node, by node index (missing: none). A node with
    /// replicas is a primary with real replication; the `cut-replication`
    /// and `failover` faults need one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replicas: Vec<usize>,
}

impl WorldConfig {
    /// Defaults: one node, 1–10 ms links, 60 s limit, default timeouts.
    pub fn new(seed: u64) -> WorldConfig {
        WorldConfig {
            seed,
            nodes: 1,
            epoch_unix_ms: DEFAULT_EPOCH_UNIX_MS,
            min_latency: Duration::from_millis(1),
            max_latency: Duration::from_millis(10),
            limit: Duration::from_secs(60),
            net: NetConfig::default(),
            restart: RestartMode::Flush,
            replicas: Vec::new(),
        }
    }

    /// Gives node `node` `n` replicas.
    pub fn replicas(mut self, node: usize, n: usize) -> WorldConfig {
        if self.replicas.len() <= node {
            self.replicas.resize(node + 1, 0);
        }
        self.replicas[node] = n;
        self
    }

    /// How many replicas node `node` has.
    pub fn replicas_of(&self, node: usize) -> usize {
        self.replicas.get(node).copied().unwrap_or(0)
    }

    /// Sets the number of Redis nodes.
    pub fn nodes(mut self, n: usize) -> WorldConfig {
        self.nodes = n;
        self
    }

    /// Sets the link latency range.
    pub fn latency(mut self, min: Duration, max: Duration) -> WorldConfig {
        self.min_latency = min;
        self.max_latency = max.max(min);
        self
    }

    /// Sets the client connection timeouts.
    pub fn net(mut self, net: NetConfig) -> WorldConfig {
        self.net = net;
        self
    }

    /// Sets the hard limit on simulated time.
    pub fn limit(mut self, limit: Duration) -> WorldConfig {
        self.limit = limit;
        self
    }

    /// Sets how server restarts are done.
    pub fn restart(mut self, mode: RestartMode) -> WorldConfig {
        self.restart = mode;
        self
    }
}

/// A seed for one consumer (`label`) derived from the run's seed: distinct
/// per label, identical on every run of the seed.
pub fn derive_seed(seed: u64, label: &str) -> u64 {
    let mut h = Fnv1a::default();
    h.write(&seed.to_le_bytes());
    h.write(label.as_bytes());
    // splitmix64 finaliser: spreads FNV's weak low bits.
    let mut z = h.finish().wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// What one run produced.
#[derive(Debug, Clone)]
pub struct RunOutcome {
    /// The seed.
    pub seed: u64,
    /// Every event, faults included.
    pub history: History,
    /// The faults that were scheduled.
    pub schedule: Schedule,
    /// Simulated time at the end.
    pub sim_elapsed: Duration,
    /// Wall-clock time the run took (measured outside the simulation).
    pub wall: std::time::Duration,
    /// Commands the bridges forwarded to real servers.
    pub commands: u64,
    /// Every command each node executed (index = node), in execution order:
    /// see [`crate::Execution`].
    pub executions: Vec<Vec<crate::bridge::Execution>>,
    /// The keys each node held when the run ended (index = node), read at
    /// the run's last instant: what `key-lifetimes` judges.
    pub keys_at_end: Vec<Vec<crate::servers::KeyAtEnd>>,
    /// A live run's timer jitter (see [`crate::Outcome::jitter`]); `None`
    /// in the simulation.
    pub jitter: Option<Duration>,
}

impl RunOutcome {
    /// The history digest (same seed → same digest).
    pub fn digest(&self) -> Digest {
        self.history.digest()
    }

    /// Simulated time over wall time.
    pub fn speedup(&self) -> f64 {
        self.sim_elapsed.as_secs_f64() / self.wall.as_secs_f64().max(1e-9)
    }
}

struct ActorEntry {
    name: String,
    pause: PauseHandle,
}

/// What runs the world: turmoil, or the live tier (`crate::live`).
enum Engine {
    Simulated(Box<turmoil::Sim<'static>>),
    Live(live::LiveEngine),
}

/// One simulation run being assembled (see the module docs).
pub struct World<'s> {
    servers: &'s mut Servers,
    config: WorldConfig,
    engine: Engine,
    bridges: Vec<Arc<BridgeNode>>,
    node_names: Arc<Vec<String>>,
    actors: Vec<ActorEntry>,
    history: History,
    schedule: Schedule,
    /// The first rule for code under test an actor was seen to break.
    breach: rules::Breach,
}

impl fmt::Debug for World<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("World")
            .field("config", &self.config)
            .field("actors", &self.actors.iter().map(|a| a.name.as_str()).collect::<Vec<_>>())
            .field("schedule", &self.schedule)
            .finish_non_exhaustive()
    }
}

impl<'s> World<'s> {
    /// Resets `config.nodes` servers of the pool (starting them if needed)
    /// and builds the simulation with one bridge host per node; on a pool
    /// of the live tier ([`Servers::live`]), a live world instead.
    pub fn new(servers: &'s mut Servers, config: WorldConfig) -> Result<World<'s>, SimError> {
        let replicas: Vec<usize> = (0..config.nodes).map(|i| config.replicas_of(i)).collect();
        servers.prepare_with(&replicas)?;
        let epoch = UNIX_EPOCH + Duration::from_millis(config.epoch_unix_ms);
        let engine = match servers.tier() {
            crate::live::Tier::Simulated => Engine::Simulated(Box::new(
                turmoil::Builder::new()
                    .rng_seed(config.seed)
                    .epoch(epoch)
                    .simulation_duration(config.limit)
                    .tick_duration(Duration::from_millis(1))
                    .min_message_latency(config.min_latency)
                    .max_message_latency(config.max_latency)
                    .build(),
            )),
            crate::live::Tier::Live => Engine::Live(live::LiveEngine::default()),
        };
        let mut world = World {
            servers,
            config,
            engine,
            bridges: Vec::new(),
            node_names: Arc::new(Vec::new()),
            actors: Vec::new(),
            history: History::new(),
            schedule: Schedule::none(),
            breach: rules::Breach::default(),
        };
        let mut names = Vec::new();
        for i in 0..world.config.nodes {
            let Some(node) = world.servers.node(i) else {
                return Err(SimError::InvalidSchedule(format!("server {i} missing from the pool")));
            };
            let name = format!("redis-{i}");
            let bridge = BridgeNode::new(name.clone(), node.addr(), Arc::clone(node.clock()));
            match &mut world.engine {
                Engine::Simulated(sim) => {
                    // Until the first command, the server's clock reads the epoch.
                    node.clock().pin(world.config.epoch_unix_ms);
                    bridge.set_linked_replicas(node.linked_replicas());
                    let served = Arc::clone(&bridge);
                    sim.host(name.as_str(), move || Arc::clone(&served).serve());
                }
                Engine::Live(live) => {
                    let latency = (world.config.min_latency, world.config.max_latency);
                    let seed = derive_seed(world.config.seed, &name);
                    let proxy = LiveBridge::new(Arc::clone(&bridge), latency, seed, world.config.epoch_unix_ms);
                    live.bridges.push(Arc::new(proxy));
                }
            }
            world.bridges.push(bridge);
            names.push(name);
        }
        world.node_names = Arc::new(names);
        Ok(world)
    }

    /// The shared history (faults and every actor's events).
    pub fn history(&self) -> History {
        self.history.clone()
    }

    /// The run's settings.
    pub fn config(&self) -> &WorldConfig {
        &self.config
    }

    /// The bridge of node `i` (for counters or faults applied by hand).
    pub fn bridge(&self, i: usize) -> Option<&Arc<BridgeNode>> {
        self.bridges.get(i)
    }

    /// Registers a client actor named `name`: `body` receives its [`Actor`]
    /// handle and returns the future the actor runs. The run ends when every
    /// actor's future has returned.
    pub fn actor<F, Fut>(&mut self, name: impl Into<String>, body: F) -> &mut Self
    where
        F: FnOnce(Actor) -> Fut,
        Fut: Future<Output = ActorResult> + 'static,
    {
        let name = name.into();
        let index = self.actors.len();
        let pause = PauseHandle::new();
        let actor = Actor {
            name: name.clone(),
            index,
            host: Arc::from(name.as_str()),
            seed: derive_seed(self.config.seed, &name),
            world_seed: self.config.seed,
            history: self.history.clone(),
            pause: pause.clone(),
            net: self.config.net,
            nodes: Arc::clone(&self.node_names),
            bridges: Arc::new(self.bridges.clone()),
        };
        let fut = rules::Guarded::new(pause.wrap(body(actor)), name.clone(), Arc::clone(&self.breach));
        match &mut self.engine {
            Engine::Simulated(sim) => sim.client(name.as_str(), fut),
            Engine::Live(live) => live.actors.push((name.clone(), Box::pin(fut))),
        }
        self.actors.push(ActorEntry { name, pause });
        self
    }

    /// The fault target of the actor registered as `name`: a pause, a
    /// partition, a hold or latency of that client (its links to every
    /// node). Faults name actors by registration index; this finds the
    /// index, so a hand-written schedule survives reordering the actors.
    /// An unknown name is [`SimError::UnknownActor`], naming the known ones.
    pub fn client(&self, name: &str) -> Result<Target, SimError> {
        Ok(Target::Client(self.index_of(name)?))
    }

    /// The fault target of the link between the actor registered as `name`
    /// and node `node` (a one-link partition or latency).
    pub fn link(&self, name: &str, node: u32) -> Result<Target, SimError> {
        Ok(Target::Link { client: self.index_of(name)?, node })
    }

    fn index_of(&self, name: &str) -> Result<u32, SimError> {
        let found = self.actors.iter().position(|a| a.name == name);
        found.and_then(|i| u32::try_from(i).ok()).ok_or_else(|| SimError::UnknownActor {
            name: name.to_string(),
            known: self.actors.iter().map(|a| a.name.clone()).collect(),
        })
    }

    /// Sets the fault schedule (replacing any earlier one).
    pub fn nemesis(&mut self, schedule: Schedule) -> &mut Self {
        self.schedule = schedule;
        self
    }

    /// Runs until every actor has returned; applies the schedule on the way.
    pub fn run(mut self) -> Result<RunOutcome, SimError> {
        self.schedule
            .validate(self.actors.len() as u32, self.bridges.len() as u32)
            .map_err(SimError::InvalidSchedule)?;
        for f in &self.schedule.faults {
            if let (true, Target::Node(n)) = (f.kind.class().needs_replicas(), f.target) {
                if self.config.replicas_of(n as usize) == 0 {
                    return Err(SimError::InvalidSchedule(format!("{f}: node#{n} has no replicas")));
                }
            }
        }
        let mut sim = match core::mem::replace(&mut self.engine, Engine::Live(live::LiveEngine::default())) {
            Engine::Simulated(sim) => sim,
            Engine::Live(engine) => return self.run_live(engine),
        };
        let started = WallInstant::now();
        let actions = self.schedule.actions();
        let mut next = 0;
        loop {
            let now = sim.elapsed().as_millis() as Millis;
            while let Some(action) = actions.get(next).filter(|a| a.time <= now) {
                self.apply(&mut sim, action, now)?;
                next += 1;
            }
            match sim.step() {
                Ok(true) => break,
                Ok(false) => {}
                Err(e) => {
                    let breach = self.breach.lock().ok().and_then(|b| b.clone());
                    return Err(match breach {
                        Some((actor, rule)) => SimError::RuleBroken { seed: self.config.seed, actor, rule },
                        None => SimError::Run { seed: self.config.seed, message: e.to_string() },
                    });
                }
            }
            if let Some(why) = self.bridges.iter().find_map(|b| b.failure()) {
                return Err(SimError::Run { seed: self.config.seed, message: why });
            }
        }
        let keys_at_end = keys_at_end(self.servers, &self.history, self.bridges.len());
        Ok(self.finish(started.elapsed(), sim.elapsed(), keys_at_end, None))
    }

    /// The outcome of a run that ended after `wall` of wall time and
    /// `elapsed` of the run's own time, with the keys the servers held.
    fn finish(
        self,
        wall: std::time::Duration,
        elapsed: Duration,
        keys_at_end: Vec<Vec<crate::servers::KeyAtEnd>>,
        jitter: Option<Duration>,
    ) -> RunOutcome {
        let commands = self.bridges.iter().map(|b| b.stats().commands.load(std::sync::atomic::Ordering::Relaxed)).sum();
        RunOutcome {
            seed: self.config.seed,
            history: self.history.clone(),
            schedule: self.schedule.clone(),
            sim_elapsed: elapsed,
            wall,
            commands,
            executions: self.bridges.iter().map(|b| b.executions()).collect(),
            keys_at_end,
            jitter,
        }
    }

    /// The (client, node) host-name pairs a network fault on `target` touches.
    fn links(&self, target: Target) -> Vec<(String, String)> {
        match target {
            Target::Client(c) => {
                let client = &self.actors[c as usize].name;
                self.node_names.iter().map(|n| (client.clone(), n.clone())).collect()
            }
            Target::Link { client, node } => {
                vec![(self.actors[client as usize].name.clone(), self.node_names[node as usize].clone())]
            }
            Target::Node(_) => Vec::new(),
        }
    }

    fn node_mut(&mut self, n: u32) -> Result<&mut crate::servers::ServerNode, SimError> {
        self.servers
            .node_mut(n as usize)
            .ok_or_else(|| SimError::InvalidSchedule(format!("server {n} missing from the pool")))
    }
}

/// Records a step of the schedule, applied at `now`, naming its target as
/// `actors` and `nodes` are named.
fn record_step(
    history: &History,
    actors: &[ActorEntry],
    nodes: &[String],
    action: &crate::nemesis::Action,
    now: Millis,
) {
    let fault = action.fault;
    let step = crate::history::NemesisStep {
        kind: fault.kind,
        target: named(actors, nodes, fault.target),
        undo: action.undo,
        duration: fault.duration,
    };
    history.fault_at(now.max(action.time), crate::history::FaultRecord::Nemesis(step));
}

/// `target` by the names the history uses, for `actors` and `nodes`.
fn named(actors: &[ActorEntry], nodes: &[String], target: Target) -> NamedTarget {
    match target {
        Target::Client(c) => NamedTarget::Client(actors[c as usize].name.clone()),
        Target::Node(n) => NamedTarget::Node(nodes[n as usize].clone()),
        Target::Link { client, node } => {
            NamedTarget::Link { client: actors[client as usize].name.clone(), node: nodes[node as usize].clone() }
        }
    }
}

/// The keys each of the first `nodes` servers holds now. A server that
/// cannot list them (`BUSY` in a script that never ends) has answered with
/// an error: that is the finding, not a set-up failure, so it goes into
/// `history` for unexpected-errors.
fn keys_at_end(servers: &Servers, history: &History, nodes: usize) -> Vec<Vec<crate::servers::KeyAtEnd>> {
    (0..nodes)
        .map(|i| match servers.node(i).map(|n| n.keys()) {
            Some(Ok(keys)) => keys,
            Some(Err(e)) => {
                history.observe("harness", Op::ErrorReply { message: format!("at the end of the run, {e}") });
                Vec::new()
            }
            None => Vec::new(),
        })
        .collect()
}
