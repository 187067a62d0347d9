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
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Instant as WallInstant, UNIX_EPOCH};

use core::fmt;
use core::time::Duration;
use rand::rngs::StdRng;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};
use tokio::task::JoinHandle;

use crate::bridge::BridgeNode;
use crate::bridge::REDIS_PORT;
pub use crate::error::SimError;
use crate::history::{Api, Digest, EventKind, FaultRecord, Fnv1a, History, Millis, NamedTarget, NemesisStep, Op, OpId};
use crate::nemesis::{Action, Direction, FaultKind, Schedule, Target};
use crate::net::{NetConfig, SimConnection};
use crate::pause::{sim_now, PauseHandle};
use crate::servers::Servers;

/// What an actor's future returns: an `Err` fails the whole run (use it for
/// harness bugs, not for faults, which belong in the history).
pub type ActorResult = turmoil::Result;

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

/// The handle an actor's code receives.
#[derive(Debug, Clone)]
pub struct Actor {
    name: String,
    index: usize,
    seed: u64,
    /// The world's seed, which an alias's own seed derives from.
    world_seed: u64,
    history: History,
    pause: PauseHandle,
    net: NetConfig,
    nodes: Arc<Vec<String>>,
    bridges: Arc<Vec<Arc<BridgeNode>>>,
}

impl Actor {
    /// The actor's name: `process` in the history, and its turmoil host's
    /// name unless it is an [`Actor::alias`].
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Another process on this actor's host: the same host, index and
    /// pause switch, its own name in the history and at the bridges (its
    /// executions and held requests are its own) and its own seed (the one
    /// an actor registered under `name` would get). Run it beside the
    /// others with [`together`].
    ///
    /// What it is for: turmoil ticks every running host every simulated
    /// millisecond, whether it has work or not, and that tick is most of a
    /// run's wall time (reports/explore-speed.md). Workload parts that no
    /// fault aims at on their own (a producer, an auditor, probes) lose
    /// nothing by sharing a host, and the run gets faster. What it shares:
    /// a fault aimed at the host's index (a partition, a pause) reaches
    /// every process on it.
    pub fn alias(&self, name: impl Into<String>) -> Actor {
        let name = name.into();
        Actor { seed: derive_seed(self.world_seed, &name), name, ..self.clone() }
    }

    /// Registration index (what `Target::Client(i)` refers to).
    pub fn index(&self) -> usize {
        self.index
    }

    /// A seed private to this actor, the same on every run of the world's
    /// seed: feed it to `OwnerSource::seeded`, `Retry::seeded`, an RNG.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// A seed private to this actor and `label` (for a second independent stream).
    pub fn seed_for(&self, label: &str) -> u64 {
        derive_seed(self.seed, label)
    }

    /// A fresh RNG from [`Actor::seed`].
    pub fn rng(&self) -> StdRng {
        StdRng::seed_from_u64(self.seed)
    }

    /// A fresh RNG from [`Actor::seed_for`]`(label)`: one independent
    /// stream per purpose, so adding a draw to one leaves the others alone.
    pub fn rng_for(&self, label: &str) -> StdRng {
        StdRng::seed_from_u64(self.seed_for(label))
    }

    /// The shared history.
    pub fn history(&self) -> &History {
        &self.history
    }

    /// This actor's pause switch (e.g. `pause().pause_for(d)` to stall here).
    pub fn pause(&self) -> &PauseHandle {
        &self.pause
    }

    /// The timeouts of this actor's connections (what
    /// [`Actor::connection`] uses): a scenario that wants a reply to time
    /// out delays it past `response_timeout`.
    pub fn net(&self) -> NetConfig {
        self.net
    }

    /// Number of Redis nodes.
    pub fn nodes(&self) -> usize {
        self.nodes.len()
    }

    /// A new reconnecting connection to node `node` (opened by its first
    /// request), with the world's timeouts. Each call makes a separate
    /// connection; clones of one share it.
    ///
    /// # Panics
    /// If `node` is out of range: a scenario bug, caught on the first run.
    pub fn connection(&self, node: usize) -> SimConnection {
        self.connection_with(node, self.net)
    }

    /// Like [`Actor::connection`] with other timeouts.
    pub fn connection_with(&self, node: usize, net: NetConfig) -> SimConnection {
        let conn = self.attributed(node, net);
        conn.record_errors(self.history.clone(), self.name.clone());
        conn
    }

    /// A connection to node `node` that the bridge knows as this process's.
    fn attributed(&self, node: usize, net: NetConfig) -> SimConnection {
        let conn = SimConnection::new(self.host(node), REDIS_PORT, net, self.pause.clone());
        conn.attribute_to(Arc::clone(self.bridge_arc(node)), self.name.as_str());
        conn
    }

    fn host(&self, node: usize) -> String {
        match self.nodes.get(node) {
            Some(h) => h.clone(),
            None => panic!("scenario bug: node {node} does not exist ({} nodes)", self.nodes.len()),
        }
    }

    /// Like [`Actor::connection`], but the error replies it receives are
    /// not recorded as [`Op::ErrorReply`] (see `checker::unexpected_errors`):
    /// for a workload that provokes them on purpose, such as the
    /// corruption probe, which plants values the library must refuse.
    pub fn connection_expecting_errors(&self, node: usize) -> SimConnection {
        self.attributed(node, self.net)
    }

    /// Spawns a task that freezes with this actor (the only way an actor
    /// should start a task).
    pub fn spawn<F>(&self, fut: F) -> JoinHandle<F::Output>
    where
        F: Future + 'static,
        F::Output: 'static,
    {
        self.pause.spawn_local(fut)
    }

    /// Simulated milliseconds since the start.
    pub fn now(&self) -> Millis {
        sim_now().as_millis() as Millis
    }

    /// A `tokio::time::Instant` of this actor's host (a lease deadline, say)
    /// as simulated milliseconds since the start.
    pub fn millis_of(&self, instant: tokio::time::Instant) -> Millis {
        let now = tokio::time::Instant::now();
        let base = sim_now();
        let at = if instant >= now { base + (instant - now) } else { base.saturating_sub(now - instant) };
        at.as_millis() as Millis
    }

    /// Like [`Actor::millis_of`], in microseconds.
    pub fn micros_of(&self, instant: tokio::time::Instant) -> u64 {
        let now = tokio::time::Instant::now();
        let base = sim_now();
        let at = if instant >= now { base + (instant - now) } else { base.saturating_sub(now - instant) };
        at.as_micros() as u64
    }

    /// Records an invocation by this actor.
    pub fn invoke(&self, op: Op) -> OpId {
        self.history.invoke(&self.name, op)
    }

    /// Records an invocation of the public library operation `api`
    /// (`Lock::extend`): what the operations table counts. Prefer it to
    /// [`Actor::invoke`] whenever the operation is a library call.
    pub fn call(&self, api: Api, op: Op) -> OpId {
        self.history.call(&self.name, api, op)
    }

    /// Records that the run reached `situation` (a "sometimes" assertion:
    /// see [`crate::scenarios::Situation`]); once per run.
    pub fn reached(&self, situation: &str) {
        self.history.reach(&self.name, situation)
    }

    /// Completes an operation: it happened.
    pub fn ok(&self, id: OpId, op: Op) {
        self.history.complete(id, &self.name, EventKind::Ok, op)
    }

    /// Completes an operation: it definitely did not happen.
    pub fn fail(&self, id: OpId, op: Op) {
        self.history.complete(id, &self.name, EventKind::Fail, op)
    }

    /// Completes an operation: outcome unknown (timeout, dropped connection).
    pub fn info(&self, id: OpId, op: Op) {
        self.history.complete(id, &self.name, EventKind::Info, op)
    }

    /// Completes an operation that returned a library error: as `info` (a
    /// timeout or a lost connection leaves its outcome unknown), and, when
    /// no fault explains the error (`!e.outcome_is_unknown()`: a refusal of
    /// corrupt state, a reply of the wrong shape, a script error), also as
    /// an [`Op::LibraryError`], which `unexpected-errors` convicts: a
    /// correct primitive whose keys nobody corrupted never returns one.
    pub fn errored(&self, id: OpId, op: Op, e: &redis_primitives::Error) {
        self.info(id, op);
        if !e.outcome_is_unknown() {
            self.observe(Op::LibraryError { message: e.to_string() });
        }
    }

    /// Records what `primitive`'s accessors report beside what it was
    /// built with (judged by `configuration`): `fields` are `(accessor,
    /// reported, configured)`, each pair compared as text.
    pub fn configured(&self, primitive: &str, fields: &[(&str, String, String)]) {
        let fields = fields.iter().map(|(n, r, c)| (n.to_string(), r.clone(), c.clone())).collect();
        self.observe(Op::Configured { primitive: primitive.to_string(), fields });
    }

    /// As [`Actor::configured`], keeping only the fields whose reported and
    /// configured texts differ, and recording nothing when none does: for
    /// read-backs checked on every operation, so that a correct run's
    /// history does not grow with them.
    pub fn configured_if_differs(&self, primitive: &str, fields: &[(&str, String, String)]) {
        let differing: Vec<_> =
            fields.iter().filter(|(_, reported, configured)| reported != configured).cloned().collect();
        if !differing.is_empty() {
            self.configured(primitive, &differing);
        }
    }

    /// Freezes this actor for `ms` from its next await (a GC pause the
    /// workload aims at a chosen moment), recorded as an [`Op::Paused`] so
    /// that the schedule lists it and checkers know the actor was frozen.
    pub fn stall(&self, ms: u64, context: &str) {
        self.observe(Op::Paused { ms, context: context.to_string() });
        self.pause.pause_for(Duration::from_millis(ms));
    }

    /// Delays this actor's next request to node `node` by `ms` of simulated
    /// time (a targeted fault: exactly one slow reply, aimed by the workload
    /// at the request that matters), recorded as an [`Op::Delayed`].
    ///
    /// # Panics
    /// If `node` is out of range: a scenario bug.
    pub fn delay_next_request(&self, node: usize, ms: u64) {
        self.delay_request(node, ms, None);
    }

    /// Like [`Actor::delay_next_request`], for the next request that
    /// mentions `key` (its other requests pass untouched; those behind it on
    /// the same connection wait with it, as they would behind a slow reply).
    ///
    /// # Panics
    /// If `node` is out of range: a scenario bug.
    pub fn delay_next_request_mentioning(&self, node: usize, ms: u64, key: &str) {
        self.delay_request(node, ms, Some(key));
    }

    /// Holds the reply to this actor's next request to `node` that mentions
    /// `key` for `ms` of simulated time: the request runs at once, the
    /// caller hears of it late (recorded in the history).
    ///
    /// # Panics
    /// If `node` is out of range: a scenario bug.
    pub fn delay_next_reply_mentioning(&self, node: usize, ms: u64, key: &str) {
        let bridge = self.bridge(node);
        self.note(format!("the reply to its next request to redis-{node} mentioning {key} waits {ms}ms at the server"));
        bridge.delay_next_reply(&self.name, Duration::from_millis(ms), Some(key));
    }

    fn delay_request(&self, node: usize, ms: u64, mentioning: Option<&str>) {
        let bridge = self.bridge(node);
        self.observe(Op::Delayed { node: node as u32, ms, mentioning: mentioning.map(str::to_string) });
        bridge.delay_next_request(&self.name, Duration::from_millis(ms), mentioning);
    }

    /// The bridge of node `node`; panics when it does not exist (a scenario
    /// bug, caught on the first run).
    fn bridge(&self, node: usize) -> &BridgeNode {
        self.bridge_arc(node)
    }

    fn bridge_arc(&self, node: usize) -> &Arc<BridgeNode> {
        match self.bridges.get(node) {
            Some(b) => b,
            None => panic!("scenario bug: node {node} does not exist ({} nodes)", self.bridges.len()),
        }
    }

    /// Records an observation (no invoke).
    pub fn observe(&self, op: Op) {
        self.history.observe(&self.name, op)
    }

    /// Records a free-text note.
    pub fn note(&self, text: impl Into<String>) {
        self.observe(Op::Note { text: text.into() })
    }
}

/// One process's future, boxed so that processes of different code can
/// run [`together`].
pub type Process = Pin<Box<dyn Future<Output = ActorResult>>>;

/// Runs `processes` (an actor's [`Actor::alias`]es) side by side inside the
/// calling actor: one task, each process polled in the order given whenever
/// the task wakes, so their interleaving is the seed's like everything
/// else. Returns once every one has returned, or at the first `Err`, which
/// fails the run as an actor's own `Err` would.
///
/// ```no_run
/// # use redis_primitives_sim::{together, Actor, ActorResult};
/// async fn producer(actor: Actor) -> ActorResult { Ok(()) }
/// async fn auditor(actor: Actor) -> ActorResult { Ok(()) }
/// async fn side(actor: Actor) -> ActorResult {
///     together(vec![Box::pin(producer(actor.alias("producer"))), Box::pin(auditor(actor.alias("auditor")))]).await
/// }
/// ```
pub async fn together(processes: Vec<Process>) -> ActorResult {
    let mut pending: Vec<Option<Process>> = processes.into_iter().map(Some).collect();
    std::future::poll_fn(move |cx| {
        let mut done = true;
        for slot in &mut pending {
            let Some(process) = slot else { continue };
            match process.as_mut().poll(cx) {
                Poll::Ready(Ok(())) => *slot = None,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => done = false,
            }
        }
        if done {
            Poll::Ready(Ok(()))
        } else {
            Poll::Pending
        }
    })
    .await
}

struct ActorEntry {
    name: String,
    pause: PauseHandle,
}

/// One simulation run being assembled (see the module docs).
pub struct World<'s> {
    servers: &'s mut Servers,
    config: WorldConfig,
    sim: turmoil::Sim<'static>,
    bridges: Vec<Arc<BridgeNode>>,
    node_names: Arc<Vec<String>>,
    actors: Vec<ActorEntry>,
    history: History,
    schedule: Schedule,
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
    /// and builds the simulation with one bridge host per node.
    pub fn new(servers: &'s mut Servers, config: WorldConfig) -> Result<World<'s>, SimError> {
        let replicas: Vec<usize> = (0..config.nodes).map(|i| config.replicas_of(i)).collect();
        servers.prepare_with(&replicas)?;
        let epoch = UNIX_EPOCH + Duration::from_millis(config.epoch_unix_ms);
        let sim = turmoil::Builder::new()
            .rng_seed(config.seed)
            .epoch(epoch)
            .simulation_duration(config.limit)
            .tick_duration(Duration::from_millis(1))
            .min_message_latency(config.min_latency)
            .max_message_latency(config.max_latency)
            .build();
        let mut world = World {
            servers,
            config,
            sim,
            bridges: Vec::new(),
            node_names: Arc::new(Vec::new()),
            actors: Vec::new(),
            history: History::new(),
            schedule: Schedule::none(),
        };
        let mut names = Vec::new();
        for i in 0..world.config.nodes {
            let Some(node) = world.servers.node(i) else {
                return Err(SimError::InvalidSchedule(format!("server {i} missing from the pool")));
            };
            // Until the first command, the server's clock reads the epoch.
            node.clock().pin(world.config.epoch_unix_ms);
            let name = format!("redis-{i}");
            let bridge = BridgeNode::new(name.clone(), node.addr(), Arc::clone(node.clock()));
            bridge.set_linked_replicas(node.linked_replicas());
            let served = Arc::clone(&bridge);
            world.sim.host(name.as_str(), move || Arc::clone(&served).serve());
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
            seed: derive_seed(self.config.seed, &name),
            world_seed: self.config.seed,
            history: self.history.clone(),
            pause: pause.clone(),
            net: self.config.net,
            nodes: Arc::clone(&self.node_names),
            bridges: Arc::new(self.bridges.clone()),
        };
        let fut = pause.wrap(body(actor));
        self.sim.client(name.as_str(), fut);
        self.actors.push(ActorEntry { name, pause });
        self
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
        let started = WallInstant::now();
        let actions = self.schedule.actions();
        let mut next = 0;
        loop {
            let now = self.sim.elapsed().as_millis() as Millis;
            while let Some(action) = actions.get(next).filter(|a| a.time <= now) {
                self.apply(action, now)?;
                next += 1;
            }
            match self.sim.step() {
                Ok(true) => break,
                Ok(false) => {}
                Err(e) => return Err(SimError::Run { seed: self.config.seed, message: e.to_string() }),
            }
            if let Some(why) = self.bridges.iter().find_map(|b| b.failure()) {
                return Err(SimError::Run { seed: self.config.seed, message: why });
            }
        }
        let wall = started.elapsed();
        // A server that cannot list its keys now (`BUSY` in a script that
        // never ends) has answered with an error: that is the finding, not
        // a set-up failure, so it goes into the history for unexpected-errors.
        let keys_at_end = (0..self.bridges.len())
            .map(|i| match self.servers.node(i).map(|n| n.keys()) {
                Some(Ok(keys)) => keys,
                Some(Err(e)) => {
                    self.history.observe("harness", Op::ErrorReply { message: format!("at the end of the run, {e}") });
                    Vec::new()
                }
                None => Vec::new(),
            })
            .collect();
        let commands = self.bridges.iter().map(|b| b.stats().commands.load(std::sync::atomic::Ordering::Relaxed)).sum();
        Ok(RunOutcome {
            seed: self.config.seed,
            history: self.history.clone(),
            schedule: self.schedule.clone(),
            sim_elapsed: self.sim.elapsed(),
            wall,
            commands,
            executions: self.bridges.iter().map(|b| b.executions()).collect(),
            keys_at_end,
        })
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

    /// `target` by the names the history uses.
    fn named(&self, target: Target) -> NamedTarget {
        match target {
            Target::Client(c) => NamedTarget::Client(self.actors[c as usize].name.clone()),
            Target::Node(n) => NamedTarget::Node(self.node_names[n as usize].clone()),
            Target::Link { client, node } => NamedTarget::Link {
                client: self.actors[client as usize].name.clone(),
                node: self.node_names[node as usize].clone(),
            },
        }
    }

    fn node_mut(&mut self, n: u32) -> Result<&mut crate::servers::ServerNode, SimError> {
        self.servers
            .node_mut(n as usize)
            .ok_or_else(|| SimError::InvalidSchedule(format!("server {n} missing from the pool")))
    }

    fn apply(&mut self, action: &Action, now: Millis) -> Result<(), SimError> {
        let fault = action.fault;
        let links = self.links(fault.target);
        match (fault.kind, action.undo) {
            (FaultKind::Partition, false) => links.iter().for_each(|(c, n)| self.sim.partition(c.as_str(), n.as_str())),
            (FaultKind::Partition, true) => links.iter().for_each(|(c, n)| self.sim.repair(c.as_str(), n.as_str())),
            (FaultKind::PartitionOneWay { direction }, undo) => {
                for (c, n) in &links {
                    let (from, to) = match direction {
                        Direction::ToServer => (c.as_str(), n.as_str()),
                        Direction::ToClient => (n.as_str(), c.as_str()),
                    };
                    if undo {
                        self.sim.repair_oneway(from, to);
                    } else {
                        self.sim.partition_oneway(from, to);
                    }
                }
            }
            (FaultKind::Hold, false) => links.iter().for_each(|(c, n)| self.sim.hold(c.as_str(), n.as_str())),
            (FaultKind::Hold, true) => links.iter().for_each(|(c, n)| self.sim.release(c.as_str(), n.as_str())),
            (FaultKind::Latency { ms }, false) => {
                for (c, n) in &links {
                    self.sim.set_link_latency(c.as_str(), n.as_str(), Duration::from_millis(ms));
                }
            }
            (FaultKind::Latency { .. }, true) => {
                for (c, n) in &links {
                    self.sim.set_link_latency(c.as_str(), n.as_str(), self.config.min_latency);
                    self.sim.set_link_max_message_latency(c.as_str(), n.as_str(), self.config.max_latency);
                }
            }
            (FaultKind::ClientPause, false) => {
                if let Target::Client(c) = fault.target {
                    self.actors[c as usize].pause.pause_until(Duration::from_millis(fault.end()));
                }
            }
            (FaultKind::ClientPause, true) => {
                if let Target::Client(c) = fault.target {
                    self.actors[c as usize].pause.resume();
                }
            }
            (FaultKind::ServerPause, false) => {
                if let Target::Node(n) = fault.target {
                    self.bridges[n as usize].pause_until(Duration::from_millis(fault.end()));
                }
            }
            (FaultKind::ServerPause, true) => {
                if let Target::Node(n) = fault.target {
                    self.bridges[n as usize].resume();
                }
            }
            (FaultKind::ServerRestart, false) => {
                if let Target::Node(n) = fault.target {
                    let name = self.node_names[n as usize].clone();
                    self.sim.crash(name.as_str());
                    let node = self
                        .servers
                        .node_mut(n as usize)
                        .ok_or_else(|| SimError::InvalidSchedule(format!("server {n} missing from the pool")))?;
                    match self.config.restart {
                        RestartMode::Flush => node.flush()?,
                        RestartMode::Process => node.restart()?,
                    }
                }
            }
            (FaultKind::ServerRestart, true) => {
                if let Target::Node(n) = fault.target {
                    let name = self.node_names[n as usize].clone();
                    self.sim.bounce(name.as_str());
                }
            }
            (FaultKind::CutReplication, undo) => {
                if let Target::Node(n) = fault.target {
                    let node = self.node_mut(n)?;
                    if undo {
                        node.restore_replication()?;
                    } else {
                        node.cut_replication()?;
                    }
                    let linked = node.linked_replicas();
                    self.bridges[n as usize].set_linked_replicas(linked);
                }
            }
            (FaultKind::Failover, false) => {
                if let Target::Node(n) = fault.target {
                    let name = self.node_names[n as usize].clone();
                    self.sim.crash(name.as_str());
                    self.node_mut(n)?.fail_primary();
                    self.bridges[n as usize].set_linked_replicas(0);
                }
            }
            (FaultKind::Failover, true) => {
                if let Target::Node(n) = fault.target {
                    let node = self.node_mut(n)?;
                    node.promote()?;
                    let (addr, linked) = (node.addr(), node.linked_replicas());
                    let bridge = &self.bridges[n as usize];
                    bridge.repoint(addr);
                    bridge.set_linked_replicas(linked);
                    let name = self.node_names[n as usize].clone();
                    self.sim.bounce(name.as_str());
                }
            }
            (FaultKind::ClockStep { offset_ms }, false) => {
                if let Target::Node(n) = fault.target {
                    self.bridges[n as usize].step_clock(offset_ms);
                }
            }
            (FaultKind::ClockStep { .. }, true) => {
                if let Target::Node(n) = fault.target {
                    self.bridges[n as usize].unstep_clock();
                }
            }
        }
        let step = NemesisStep {
            kind: fault.kind,
            target: self.named(fault.target),
            undo: action.undo,
            duration: fault.duration,
        };
        self.history.fault_at(now.max(action.time), FaultRecord::Nemesis(step));
        Ok(())
    }
}
