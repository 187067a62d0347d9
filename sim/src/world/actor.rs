//! [`Actor`]: the handle a client's code receives — its name, seed and
//! RNGs, its connections through the bridges, its pause handle, and the
//! history it records into — and [`together`], for processes that share a
//! host.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;

use core::time::Duration;

use rand::rngs::StdRng;
use rand::SeedableRng;
use tokio::task::JoinHandle;

use super::derive_seed;
use crate::bridge::{BridgeNode, REDIS_PORT};
use crate::history::{Api, EventKind, History, Millis, Op, OpId};
use crate::net::{NetConfig, SimConnection};
use crate::pause::{sim_now, PauseHandle};
use crate::situation::SituationName;

/// What an actor's future returns: an `Err` fails the whole run (use it for
/// harness bugs, not for faults, which belong in the history).
pub type ActorResult = turmoil::Result;

/// The handle an actor's code receives.
#[derive(Debug, Clone)]
pub struct Actor {
    pub(super) name: String,
    /// The host it runs on: its own name, kept by its aliases.
    pub(super) host: Arc<str>,
    pub(super) index: usize,
    pub(super) seed: u64,
    /// The world's seed, which an alias's own seed derives from.
    pub(super) world_seed: u64,
    pub(super) history: History,
    pub(super) pause: PauseHandle,
    pub(super) net: NetConfig,
    pub(super) nodes: Arc<Vec<String>>,
    pub(super) bridges: Arc<Vec<Arc<BridgeNode>>>,
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

    /// Registration index (what `Target::Client(i)` refers to; to aim a
    /// fault at an actor by name, use [`crate::World::client`]).
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
        conn.name_client_host(Arc::clone(&self.host));
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
        if let Some(at) = crate::live::since_start(instant) {
            return at.as_millis() as Millis;
        }
        let now = tokio::time::Instant::now();
        let base = sim_now();
        let at = if instant >= now { base + (instant - now) } else { base.saturating_sub(now - instant) };
        at.as_millis() as Millis
    }

    /// Like [`Actor::millis_of`], in microseconds.
    pub fn micros_of(&self, instant: tokio::time::Instant) -> u64 {
        if let Some(at) = crate::live::since_start(instant) {
            return at.as_micros() as u64;
        }
        let now = tokio::time::Instant::now();
        let base = sim_now();
        let at = if instant >= now { base + (instant - now) } else { base.saturating_sub(now - instant) };
        at.as_micros() as u64
    }

    /// Records an invocation by this actor.
    pub fn invoke(&self, op: impl Into<Op>) -> OpId {
        self.history.invoke(&self.name, op)
    }

    /// Records an invocation of the public library operation `api`
    /// (`Lock::extend`): what the operations table counts. Prefer it to
    /// [`Actor::invoke`] whenever the operation is a library call.
    pub fn call(&self, api: Api, op: impl Into<Op>) -> OpId {
        self.history.call(&self.name, api, op)
    }

    /// Records that the run reached `situation` (a "sometimes" assertion:
    /// see [`crate::outcome::Situation`]); once per run.
    pub fn reached(&self, situation: SituationName) {
        self.history.reach(&self.name, situation)
    }

    /// Completes an operation: it happened.
    pub fn ok(&self, id: OpId, op: impl Into<Op>) {
        self.history.complete(id, &self.name, EventKind::Ok, op)
    }

    /// Completes an operation: it definitely did not happen.
    pub fn fail(&self, id: OpId, op: impl Into<Op>) {
        self.history.complete(id, &self.name, EventKind::Fail, op)
    }

    /// Completes an operation: outcome unknown (timeout, dropped connection).
    pub fn info(&self, id: OpId, op: impl Into<Op>) {
        self.history.complete(id, &self.name, EventKind::Info, op)
    }

    /// Completes an operation that returned a library error: as `info` (a
    /// timeout or a lost connection leaves its outcome unknown), and, when
    /// no fault explains the error (`!e.outcome_is_unknown()`: a refusal of
    /// corrupt state, a reply of the wrong shape, a script error), also as
    /// an [`Op::LibraryError`], which `unexpected-errors` convicts: a
    /// correct primitive whose keys nobody corrupted never returns one.
    pub fn errored(&self, id: OpId, op: impl Into<Op>, e: &redis_primitives::Error) {
        self.info(id, op);
        if !e.outcome_is_unknown() {
            self.observe(Op::LibraryError { message: e.to_string() });
        }
    }

    /// Records what `primitive`'s accessors report beside what it was
    /// built with (judged by `configuration`): `fields` are `(accessor,
    /// reported, configured)`, each pair compared as text.
    pub fn configured(&self, primitive: &str, fields: &[(&str, String, String)]) {
        self.record_configured(primitive, fields, None);
    }

    /// As [`Actor::configured`], for a report whose fields named in
    /// `timed` compare instants: read at an instant the probe aimed at (a
    /// millisecond before a deadline), or against one it read itself (the
    /// send of a request). `missed_by` is how far the reading was from that
    /// aim. The simulation's instants are exact and record none; a live run
    /// records it when every field that differs is a timed one, and then
    /// weighs the difference against its jitter
    /// ([`crate::Outcome::weigh_jitter`]). A difference in any other field
    /// is a violation in every tier.
    pub fn configured_reading(
        &self,
        primitive: &str,
        fields: &[(&str, String, String)],
        timed: &[&str],
        missed_by: Duration,
    ) {
        let only_timed = fields.iter().filter(|(_, r, c)| r != c).all(|(name, _, _)| timed.contains(name));
        self.record_configured(primitive, fields, (crate::live::is_live() && only_timed).then_some(missed_by));
    }

    fn record_configured(&self, primitive: &str, fields: &[(&str, String, String)], missed_by: Option<Duration>) {
        let fields = fields.iter().map(|(n, r, c)| (n.to_string(), r.clone(), c.clone())).collect();
        self.observe(Op::Configured { primitive: primitive.to_string(), fields, missed_by });
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
    pub fn observe(&self, op: impl Into<Op>) {
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
