//! `lock`: three clients contend for one `redis_primitives::Lock`, write
//! through a `FencedStore` while holding it, and release — through process
//! pauses, server pauses, partitions, held links and latency.
//!
//! This file is also the **template** for scenarios, and holds the lock
//! workload the other lock-family scenarios configure
//! ([`LockWorkload`]: `lock-naive`, `fencing`, `fencing-unfenced`,
//! `counter-loss`). The shape every scenario follows:
//!
//! 1. build a [`World`] from the seed (servers reset, turmoil seeded, epoch
//!    pinned);
//! 2. register actors; each gets a connection per node, a seeded RNG, and
//!    records every operation as invoke → ok / fail / info. A library error
//!    whose outcome is unknown (timeout, dropped connection) is `info`,
//!    never `fail`;
//! 3. set the fault schedule: the plan's (drawn from the seed or by the
//!    property search through the one generator, `crate::space`: faults
//!    of the variant's [`FaultSpace`] plus any its workload shape places);
//! 4. run, then hand the history to the named checkers and the histogram
//!    recorders, and return an [`Outcome`].
//!
//! The workload, per client: acquire (TTL 300 ms); on success hold for a
//! seeded random time (sometimes longer than the TTL), then — if the
//! client checks its lease — stop if the local deadline has passed; write
//! a unique value with the lease's token; release. One client stalls itself
//! (a GC pause) inside one of its critical sections, at a seeded moment, so
//! every seed exercises the case fencing exists for. A reader reads the
//! resource once everything has healed.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use core::time::Duration;
use rand::{Rng, SeedableRng};
use redis_primitives::naive::{NaiveLock, UnfencedStore};
use redis_primitives::{Acknowledgement, FencedStore, Lock, OwnerSource, Tokens, Ttl, WriteOutcome};

use crate::api::{
    FENCED_STORE_READ, FENCED_STORE_WRITE, LOCK_ACQUIRE, LOCK_CURRENT_TOKEN, LOCK_EXTEND, LOCK_KEEP_ALIVE,
    LOCK_RELEASE, LOCK_REMAINING_TTL, LOCK_WITH_LOCK, LOCK_WITH_LOCK_GUARDED, NAIVE_LOCK_ACQUIRE, NAIVE_LOCK_RELEASE,
    RETRY_RUN, UNFENCED_STORE_READ, UNFENCED_STORE_WRITE,
};
use crate::checker::key_lifetimes::{self, Life, Rule};
use crate::checker::mutual_exclusion::{self, Policy};
use crate::checker::{
    acknowledged_writes, corrupt_state, fencing_tokens, guarded_body, lease_views, lock_liveness, lock_replies,
    stale_overwrite,
};
use crate::history::{Api, GuardedResult, Millis, Op, WriteResult};
use crate::nemesis::{Fault, Schedule};
use crate::net::SimConnection;
use crate::scenarios::Outcome;
use crate::servers::{Servers, SetupError};
use crate::space::{FaultSpace, WorkloadFault};
use crate::stats::{self, Histograms, UNSAFE};
use crate::world::{Actor, ActorResult, World, WorldConfig, DEFAULT_EPOCH_UNIX_MS};
use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;
use serde::{Deserialize, Serialize};

use crate::family::Family;

pub mod probes;
pub mod variants;

/// The lock name every client contends for.
pub const LOCK_NAME: &str = "resource";
/// The key the clients write.
pub const RESOURCE_KEY: &str = "resource";

/// Which lock the clients use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockKind {
    /// `redis_primitives::Lock`: fencing token, compare-and-delete release.
    Fenced,
    /// `redis_primitives::naive::NaiveLock`: `SET NX PX`, bare `DEL`, no token.
    Naive,
}

/// Which failover mitigation the fenced lock is built with (issue 10;
/// `lock-failover` and its variants).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protection {
    /// The lock as `Lock::new` builds it.
    None,
    /// `LockBuilder::acknowledged`: an acquire is handed out only once the
    /// node's replica has acknowledged it (`WAIT 1`).
    Acknowledged,
    /// `LockBuilder::tokens(Tokens::TimeFloored)`: tokens never fall below
    /// the server's clock in µs.
    TimeFloored,
}

/// How long an acknowledged acquire waits for its replica (ms).
pub const ACK_TIMEOUT_MS: u64 = 50;

/// Which resource the clients write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    /// `FencedStore`: refuses tokens lower than the highest accepted.
    Fenced,
    /// `UnfencedStore`: plain `SET`, last write wins.
    Unfenced,
}

/// Lock-family workload: clients contending for one lock, writing a
/// resource while they hold it (`scenarios/lock.rs`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockPlan {
    /// Contending clients.
    pub clients: u32,
    /// Lease TTL (ms).
    pub ttl_ms: u64,
    /// Hold time range (ms), drawn per hold by the client's RNG.
    pub hold_ms: (u64, u64),
    /// Time between attempts (ms), drawn per attempt.
    pub think_ms: (u64, u64),
    /// Clients start no new attempt after this (ms).
    pub length_ms: Millis,
    /// One client stalls inside one of its critical sections.
    pub stall: Option<Stall>,
}

/// A client that stalls (a GC pause) inside its `hold`-th critical section.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stall {
    /// Which client (index).
    pub client: u32,
    /// In which of its holds (1 = the first).
    pub hold: u32,
    /// For how long (ms).
    pub ms: u64,
}

/// What lock-family plans may be drawn from (ranges inclusive; each
/// shrinks towards its first bound).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockSpace {
    /// Contending clients.
    pub clients: (u32, u32),
    /// Lease TTL (ms).
    pub ttl_ms: (u64, u64),
    /// Longest hold (ms).
    pub hold_max_ms: (u64, u64),
    /// The shortest hold is this much below the longest (ms).
    pub hold_span_ms: (u64, u64),
    /// Longest think time (ms); the shortest is 5 ms.
    pub think_max_ms: (u64, u64),
    /// How long clients keep trying (ms).
    pub length_ms: (u64, u64),
    /// Whether and how long a client stalls inside one of its first three
    /// critical sections.
    pub stall: WorkloadFault,
    /// Faults every plan gets (the restart of `counter-loss`).
    pub placed: Vec<Fault>,
}

impl LockSpace {
    /// The property search's lock space: 1–4 clients, TTL 150–600 ms,
    /// holds up to 100–700 ms, 1–3 s of attempts, an optional stall.
    pub fn search() -> LockSpace {
        LockSpace {
            clients: (1, 4),
            ttl_ms: (150, 600),
            hold_max_ms: (100, 700),
            hold_span_ms: (10, 100),
            think_max_ms: (5, 80),
            length_ms: (1000, 3000),
            stall: WorkloadFault::Maybe { ms: (100, 1500) },
            placed: Vec::new(),
        }
    }

    /// What a variant's seeds draw: its template plan exactly, a stall of
    /// its `seed_stall_ms` in a drawn client's drawn hold, its fixed faults.
    pub fn seeds(w: &LockWorkload) -> LockSpace {
        let p = &w.plan;
        LockSpace {
            clients: one(p.clients),
            ttl_ms: one(p.ttl_ms),
            hold_max_ms: one(p.hold_ms.1),
            hold_span_ms: one(p.hold_ms.1 - p.hold_ms.0.min(p.hold_ms.1)),
            think_max_ms: one(p.think_ms.1),
            length_ms: one(p.length_ms),
            stall: if w.seed_stall_ms > 0 {
                WorkloadFault::Always { ms: one(w.seed_stall_ms) }
            } else {
                WorkloadFault::Never
            },
            placed: w.always.clone(),
        }
    }

    /// The strategy (the family's one generator).
    pub fn plans(&self) -> BoxedStrategy<(LockPlan, Vec<Fault>)> {
        let clients = self.clients;
        let stall = self
            .stall
            .strategy((0..clients.1.max(1), 1..=3u32))
            .prop_map(|s| s.map(|((client, hold), ms)| Stall { client, hold, ms }));
        let placed = self.placed.clone();
        (
            clients.0..=clients.1,
            stall,
            self.ttl_ms.0..=self.ttl_ms.1,
            self.hold_max_ms.0..=self.hold_max_ms.1,
            self.hold_span_ms.0..=self.hold_span_ms.1,
            self.think_max_ms.0..=self.think_max_ms.1,
            self.length_ms.0..=self.length_ms.1,
        )
            .prop_map(move |(clients, stall, ttl_ms, hold_max, hold_span, think_max, length_ms)| {
                let plan = LockPlan {
                    clients,
                    ttl_ms,
                    hold_ms: (hold_max.saturating_sub(hold_span).max(1), hold_max),
                    think_ms: (5, think_max),
                    length_ms,
                    stall,
                };
                (plan, placed.clone())
            })
            .boxed()
    }
}

fn one<T: Copy>(v: T) -> (T, T) {
    (v, v)
}

/// The lock workload: one variant's fixed settings, and the plan it runs
/// (see the module docs). The plan's fields live only in [`LockPlan`].
#[derive(Debug, Clone)]
pub struct LockWorkload {
    /// What the actors do: clients, TTL, hold and think times, length, stall.
    pub plan: LockPlan,
    /// Redis nodes in the world.
    pub nodes: usize,
    /// Node holding the lock.
    pub lock_node: usize,
    /// Replicas of the lock's node (0: a lone server).
    pub replicas: usize,
    /// The failover mitigation the fenced lock is built with.
    pub protection: Protection,
    /// Node holding the resource (a different node models a resource that
    /// survives the lock server's failures).
    pub store_node: usize,
    /// How long the stall a seed plans lasts (0: seeds plan none); where it
    /// lands is drawn per seed ([`LockSpace::seeds`]).
    pub seed_stall_ms: u64,
    /// The lock used.
    pub lock: LockKind,
    /// The resource written.
    pub store: StoreKind,
    /// Whether a holder checks its local deadline before writing (a careful
    /// client) or writes regardless (relying on fencing alone).
    pub check_deadline: bool,
    /// The nemesis faults its seeds draw.
    pub faults: FaultSpace,
    /// Faults every seed gets, on top of the drawn ones.
    pub always: Vec<Fault>,
    /// Which lock overlaps are violations.
    pub policy: Policy,
    /// Whether each attempt draws a workload mode exercising every public
    /// `Lock` operation (extend, release after expiry, `with_lock`,
    /// `with_lock_guarded`, `keep_alive`, `Retry::run`, `current_token`,
    /// `remaining_ttl`), and the run ends with a liveness probe. Only the
    /// correct scenarios enable it; the modes draw from their own RNG stream
    /// so the broken variants' seeds are unaffected.
    pub modes: bool,
}

impl LockWorkload {
    /// The `lock` scenario's settings.
    pub fn lock() -> LockWorkload {
        let length_ms = 3000;
        LockWorkload {
            plan: LockPlan { clients: 3, ttl_ms: 300, hold_ms: (20, 450), think_ms: (5, 80), length_ms, stall: None },
            nodes: 1,
            lock_node: 0,
            replicas: 0,
            protection: Protection::None,
            store_node: 0,
            seed_stall_ms: 900,
            lock: LockKind::Fenced,
            store: StoreKind::Fenced,
            check_deadline: true,
            faults: FaultSpace::client_side(length_ms),
            always: Vec::new(),
            policy: Policy::ForbidTrustedOverlap,
            modes: true,
        }
    }

    /// How long the plan's stall lasts (0: none).
    fn stall_ms(&self) -> u64 {
        self.plan.stall.map_or(0, |s| s.ms)
    }

    /// Runs `plan` under these settings, with `schedule`.
    pub fn run_planned(
        &self,
        servers: &mut Servers,
        seed: u64,
        plan: &LockPlan,
        schedule: Schedule,
    ) -> Result<Outcome, SetupError> {
        let this = LockWorkload { plan: plan.clone(), ..self.clone() };
        this.run_exact(servers, seed, schedule)
    }

    fn run_exact(&self, servers: &mut Servers, seed: u64, schedule: Schedule) -> Result<Outcome, SetupError> {
        let stall = self.plan.stall.filter(|s| s.ms > 0).map(|s| (s.client, s.hold));
        let config = WorldConfig::new(seed).nodes(self.nodes).replicas(self.lock_node, self.replicas);
        let mut world = World::new(servers, config)?;
        let done = Arc::new(AtomicU32::new(0));
        for i in 0..self.plan.clients {
            let w = self.clone();
            let stall_at = stall.filter(|(c, _)| *c == i && self.stall_ms() > 0).map(|(_, hold)| hold);
            let done = Arc::clone(&done);
            world.actor(format!("client-{i}"), move |actor| async move {
                let r = client(actor, w, stall_at).await;
                done.fetch_add(1, Ordering::Relaxed);
                r
            });
        }
        // The reader: once every fault has healed. Writes still in flight
        // then are fine: the checker compares the final value only with
        // writes that completed before the read was sent.
        let last_fault = schedule.faults.iter().map(Fault::end).max().unwrap_or(0);
        let read_at = if self.modes {
            // The liveness probe waits for requests still in flight at the
            // last heal to land (latency faults add up to 300 ms).
            (self.plan.length_ms + 500).max(last_fault + 400)
        } else {
            (self.plan.length_ms + 500).max(last_fault + 200)
        };
        // The acknowledgement probe's moment: a replication cut of the lock's
        // node that nothing else disturbs (client faults never aim at the
        // reader's host).
        let ack_at = match (self.protection, self.replicas) {
            (Protection::Acknowledged, 1..) => {
                crate::scenarios::ack_probe::send_at(&schedule, self.lock_node as u32, None, ACK_TIMEOUT_MS)
            }
            _ => None,
        };
        let w = self.clone();
        world.actor("reader", move |actor| reader(actor, w, read_at, done, ack_at));
        world.nemesis(schedule.clone());
        let run = world.run()?;
        // The workload's own stall is a fault too: list it with the schedule.
        let stalls = run
            .history
            .events()
            .into_iter()
            .filter_map(|e| match &e.op {
                Op::Paused { .. } => Some((e.time, format!("at {}ms: {} {}, then resumes", e.time, e.process, e.op))),
                Op::Delayed { .. } => Some((e.time, format!("at {}ms: {} {} (workload)", e.time, e.process, e.op))),
                _ => None,
            })
            .collect();
        let mut outcome = crate::scenarios::outcome_from(&run, stalls);
        let me = mutual_exclusion::check(&outcome.history, self.policy);
        outcome.violations.extend(fencing_tokens::check(&outcome.history));
        outcome.violations.extend(me.violations.iter().cloned());
        outcome.violations.extend(stale_overwrite::check(&outcome.history));
        if self.lock == LockKind::Fenced && self.modes {
            outcome.violations.extend(match self.protection {
                Protection::TimeFloored => lock_replies::check_floored(
                    &outcome.history,
                    &run.executions[self.lock_node],
                    DEFAULT_EPOCH_UNIX_MS,
                ),
                _ => lock_replies::check(&outcome.history, &run.executions[self.lock_node]),
            });
            outcome.violations.extend(guarded_body::check(
                &outcome.history,
                &run.executions.concat(),
                &schedule.spans(),
                &schedule.freeze_spans(),
                &(0..self.plan.clients)
                    .map(|i| (format!("client-{i}"), schedule.spans_reaching(i)))
                    // The reader (whose probes run guarded calls) is reached
                    // by the faults on the nodes only: no client index is its.
                    .chain([("reader".to_string(), schedule.spans_reaching(u32::MAX))])
                    .collect(),
            ));
            outcome.violations.extend(corrupt_state::check(&outcome.history));
            outcome.violations.extend(lease_views::check(&outcome.history, DRIFT));
            let longest = outcome
                .history
                .iter()
                .filter_map(|e| match e.op {
                    Op::Acquire { ttl_ms, .. } | Op::Extend { ttl_ms, .. } => Some(ttl_ms),
                    _ => None,
                })
                .max()
                .unwrap_or(self.plan.ttl_ms);
            let rules = [
                Rule { prefix: "lock:{", suffix: "}:fence", life: Life::Forever, what: "fence counter" },
                Rule { prefix: "lock:{", suffix: "}", life: Life::AtMost(longest), what: "lease" },
                Rule { prefix: "fenced:{", suffix: "}", life: Life::Forever, what: "fenced entry" },
            ];
            for (node, keys) in run.keys_at_end.iter().enumerate() {
                outcome.violations.extend(key_lifetimes::check(node, keys, &rules, &["probe-corrupt"]));
            }
            let live = lock_liveness::check(&outcome.history, "reader", self.plan.ttl_ms);
            if live.is_empty()
                && outcome
                    .history
                    .iter()
                    .any(|e| e.process == "reader" && matches!(e.op, Op::Retry { token: Some(_), .. }))
            {
                outcome.reach(situation::LOCK_FREE_AFTER_HEAL);
            }
            outcome.violations.extend(live);
            reach_post_hoc(&mut outcome);
        }
        if self.replicas > 0 {
            variants::failover::reach(&mut outcome, &schedule);
        }
        if self.protection == Protection::Acknowledged {
            outcome.violations.extend(acknowledged_writes::check_refusals(
                &outcome.history,
                &schedule.unlinked_spans(self.lock_node as u32),
            ));
        }
        let mut h = Histograms::new();
        stats::record_acquire_latency(&outcome.history, &mut h);
        h.declare(UNSAFE);
        for o in &me.overlaps {
            h.record(UNSAFE, o.believed_ms);
        }
        outcome.histograms = h;
        Ok(outcome)
    }
}

/// Which lock-family scenario: one set of [`LockWorkload`] settings each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// `lock`: `Lock`, fenced store, careful holders, every public operation.
    Lock,
    /// `lock-naive`: `NaiveLock` (bare `DEL` release), unfenced store.
    Naive,
    /// `fencing`: `Lock` and `FencedStore`, holders that never check their deadline.
    Fencing,
    /// `fencing-unfenced`: `Lock` and the unfenced store.
    Unfenced,
    /// `counter-loss`: `Lock` across a restart without persistence.
    CounterLoss,
    /// `counter-loss-floored`: the same with time-floored tokens.
    CounterLossFloored,
    /// `lock-floored`: the `lock` scenario with time-floored tokens.
    Floored,
    /// `lock-failover`: `Lock` on a primary whose replica is promoted after
    /// a replication cut.
    Failover,
    /// `lock-failover-acknowledged`: the same with acknowledged acquires.
    FailoverAcknowledged,
    /// `lock-failover-floored`: the same with time-floored tokens.
    FailoverFloored,
    /// `lock-failover-clock-back`: time-floored tokens, and the promoted
    /// server's clock is behind.
    FailoverClockBack,
}

impl Variant {
    /// The variant's settings.
    pub fn workload(self) -> LockWorkload {
        match self {
            Variant::Lock => LockWorkload::lock(),
            Variant::Naive => variants::naive::workload(),
            Variant::Fencing => variants::fencing::workload(),
            Variant::Unfenced => variants::unfenced::workload(),
            Variant::CounterLoss => variants::counter_loss::workload(),
            Variant::CounterLossFloored => variants::counter_loss::floored(),
            Variant::Floored => LockWorkload { protection: Protection::TimeFloored, ..LockWorkload::lock() },
            Variant::Failover => variants::failover::workload(),
            Variant::FailoverAcknowledged => variants::failover::acknowledged(),
            Variant::FailoverFloored => variants::failover::floored(),
            Variant::FailoverClockBack => variants::failover::clock_back(),
        }
    }
}

impl Family for Variant {
    type Plan = LockPlan;
    type Space = LockSpace;
    const NAME: &'static str = "lock";

    fn nodes(&self) -> u32 {
        self.workload().nodes as u32
    }

    fn seeds(&self) -> (LockSpace, FaultSpace) {
        let w = self.workload();
        (LockSpace::seeds(&w), w.faults)
    }

    fn plans(space: &LockSpace) -> BoxedStrategy<(LockPlan, Vec<Fault>)> {
        space.plans()
    }

    fn max_actors(space: &LockSpace) -> u32 {
        space.clients.1
    }

    fn run(
        &self,
        servers: &mut Servers,
        seed: u64,
        plan: &LockPlan,
        schedule: Schedule,
    ) -> Result<Outcome, SetupError> {
        self.workload().run_planned(servers, seed, plan, schedule)
    }

    fn actors(plan: &LockPlan) -> u32 {
        plan.clients
    }

    fn injected_faults(plan: &LockPlan) -> usize {
        usize::from(plan.stall.is_some_and(|s| s.ms > 0))
    }

    fn validate(plan: &LockPlan) -> Result<(), String> {
        if plan.ttl_ms == 0 {
            return Err("ttl_ms must be positive".into());
        }
        if let Some(s) = plan.stall {
            if s.client >= plan.clients || s.hold == 0 {
                return Err(format!("stall {s:?}: no such client or hold (holds count from 1)"));
            }
        }
        Ok(())
    }

    fn normalize(plan: &mut LockPlan, actors: u32) {
        if let Some(s) = &mut plan.stall {
            s.client %= actors.max(1);
            s.hold = s.hold.max(1);
        }
    }

    fn smaller(plan: &LockPlan) -> Vec<LockPlan> {
        let mut out = Vec::new();
        if plan.stall.is_some() {
            out.push(LockPlan { stall: None, ..plan.clone() });
        }
        if plan.clients > 1 {
            out.push(LockPlan { clients: plan.clients - 1, ..plan.clone() });
        }
        out
    }
}

impl core::fmt::Display for LockPlan {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let range = |(lo, hi): (u64, u64)| if lo == hi { format!("{lo}ms") } else { format!("{lo}..{hi}ms") };
        write!(
            f,
            "{} client(s), ttl {}ms, hold {}, think {}, attempts until {}ms",
            self.clients,
            self.ttl_ms,
            range(self.hold_ms),
            range(self.think_ms),
            self.length_ms
        )?;
        match self.stall {
            Some(s) if s.ms > 0 => write!(
                f,
                "; client#{} stalls {}ms inside its critical section #{} (workload fault)",
                s.client, s.ms, s.hold
            ),
            _ => write!(f, "; no stall"),
        }
    }
}

fn draw(rng: &mut impl Rng, (lo, hi): (u64, u64)) -> u64 {
    rng.random_range(lo.min(hi)..=hi.max(lo))
}

async fn sleep_ms(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

/// Either lock, behind one face: acquire gives (token, local deadline).
enum AnyLock {
    Fenced(Lock<SimConnection>),
    Naive(NaiveLock<SimConnection>),
}

/// What a hold needs to release.
enum Held {
    Fenced(redis_primitives::Lease),
    Naive,
}

async fn client(actor: Actor, w: LockWorkload, stall_at: Option<u32>) -> ActorResult {
    let lock_conn = actor.connection(w.lock_node);
    let store_conn = if w.store_node == w.lock_node { lock_conn.clone() } else { actor.connection(w.store_node) };
    // Only the validation probe's key names use it: nothing is sent on it.
    let names_conn = store_conn.clone();
    let lock = match w.lock {
        LockKind::Fenced => AnyLock::Fenced(fenced_lock(lock_conn, &w, actor.seed())?),
        LockKind::Naive => AnyLock::Naive(NaiveLock::new(lock_conn)),
    };
    let fenced = FencedStore::new(store_conn.clone());
    let unfenced = UnfencedStore::new(store_conn);
    let ttl = Ttl::from_millis(w.plan.ttl_ms)?;
    if let (true, AnyLock::Fenced(l)) = (w.modes, &lock) {
        if actor.index() == 0 {
            crate::scenarios::validation::keep_alive(&actor, l, (DRIFT.per_mille as u32, DRIFT.constant_ms))?;
            crate::scenarios::validation::key_names(&actor, &names_conn);
            crate::scenarios::validation::lock_settings(&actor, &names_conn)?;
            crate::scenarios::validation::durations(&actor);
        }
        let keep = redis_primitives::KeepAlive::thirds(l, ttl)?;
        actor.configured(
            "Lock",
            &[
                ("Lock::drift", format!("{:?}", l.drift()), format!("{:?}", lock_drift(&w)?)),
                ("Lock::key", l.key(LOCK_NAME)?, format!("lock:{{{LOCK_NAME}}}")),
                ("Lock::fence_key", l.fence_key(LOCK_NAME)?, format!("lock:{{{LOCK_NAME}}}:fence")),
                (
                    "KeepAlive::every",
                    format!("{:?}", keep.every()),
                    format!("{:?}", Duration::from_millis(w.plan.ttl_ms) / 3),
                ),
                ("KeepAlive::ttl", keep.ttl().to_string(), ttl.to_string()),
                ("FencedStore::redis_key", fenced.redis_key(RESOURCE_KEY)?, format!("fenced:{{{RESOURCE_KEY}}}")),
            ],
        );
    }
    let mut rng = actor.rng();
    let mut holds = 0u32;
    let mut writes = 0u32;
    // The modes' own stream: the plain path's draws stay as they were.
    let mut mode_rng = actor.rng_for("mode");
    // Trust checks aimed at the lease's edge: its own stream, too.
    let mut edge_rng = actor.rng_for("edge");
    let mut stall_at = stall_at;

    while actor.now() < w.plan.length_ms {
        if let (true, AnyLock::Fenced(l)) = (w.modes, &lock) {
            if mode_rng.random_bool(0.15) {
                read_lock_state(&actor, l, &mut mode_rng).await;
            }
            let mode = Mode::draw(&mut mode_rng);
            if mode != Mode::Plain {
                let mut cx = Ctx {
                    actor: &actor,
                    w: &w,
                    lock: l,
                    store: &fenced,
                    ttl,
                    rng: &mut mode_rng,
                    holds: &mut holds,
                    writes: &mut writes,
                    stall_at,
                };
                attempt(&mut cx, mode).await?;
                stall_at = cx.stall_at;
                sleep_ms(draw(&mut rng, w.plan.think_ms)).await;
                continue;
            }
        }
        let acquire_op =
            |token, deadline| Op::Acquire { name: LOCK_NAME.into(), ttl_ms: w.plan.ttl_ms, token, deadline };
        let api = match &lock {
            AnyLock::Fenced(_) => LOCK_ACQUIRE,
            AnyLock::Naive(_) => NAIVE_LOCK_ACQUIRE,
        };
        let id = actor.call(api, acquire_op(None, None));
        let sent = actor.now();
        let got = match &lock {
            AnyLock::Fenced(l) => l.acquire(LOCK_NAME, ttl).await.map(|o| {
                o.map(|lease| {
                    let token = lease.token().get();
                    let deadline = actor.millis_of(lease.local_deadline());
                    (Some(token), deadline, Held::Fenced(lease))
                })
            }),
            // A naive client believes its lease lasts the TTL from the send.
            AnyLock::Naive(l) => {
                l.acquire(LOCK_NAME, ttl).await.map(|ok| ok.then_some((None, sent + w.plan.ttl_ms, Held::Naive)))
            }
        };
        let (token, deadline, held) = match got {
            Ok(Some(x)) => x,
            Ok(None) => {
                actor.fail(id, acquire_op(None, None));
                sleep_ms(draw(&mut rng, w.plan.think_ms)).await;
                continue;
            }
            // Refused for want of a replica's acknowledgement: the lease
            // was not handed out (and was released), a refusal like `None`.
            Err(e @ redis_primitives::Error::NotAcknowledged { .. }) => {
                actor.fail(id, acquire_op(None, None));
                if let redis_primitives::Error::NotAcknowledged { key, .. } = &e {
                    actor.observe(Op::NotAcknowledged { key: key.clone(), invoked: sent });
                }
                actor.reached(variants::failover::situation::ACQUIRE_NOT_ACKNOWLEDGED);
                actor.note(format!("acquire: {e}"));
                sleep_ms(draw(&mut rng, w.plan.think_ms)).await;
                continue;
            }
            Err(e) => {
                actor.errored(id, acquire_op(None, None), &e);
                actor.note(format!("acquire: {e}"));
                sleep_ms(draw(&mut rng, w.plan.think_ms)).await;
                continue;
            }
        };
        actor.ok(id, acquire_op(token, Some(deadline)));
        holds += 1;

        // The critical section: work, perhaps with a stall in the middle.
        let stalled = stall_at == Some(holds);
        if stalled {
            stall_at = None;
            actor.stall(w.stall_ms(), "inside its critical section");
        }
        let hold = draw(&mut rng, w.plan.hold_ms);
        match (&held, w.modes && edge_rng.random_bool(0.5)) {
            // The instant that matters: the trust check lands exactly on
            // the local deadline, or one millisecond before it.
            (Held::Fenced(lease), true) => {
                let edge = actor.millis_of(lease.local_deadline()) - edge_rng.random_range(0..=1);
                let now = actor.now();
                sleep_ms(edge.saturating_sub(now)).await;
                if w.modes {
                    actor.reached(situation::TRUST_CHECKED_AT_THE_DEADLINE);
                }
            }
            _ => sleep_ms(hold).await,
        }

        let trusted = match &held {
            Held::Fenced(lease) if w.modes => view(&actor, lease),
            Held::Fenced(lease) => lease.is_trusted(),
            Held::Naive => true,
        };
        if w.check_deadline && !trusted {
            if stalled && w.modes {
                actor.reached(situation::LEASE_EXPIRED_WHILE_PAUSED);
            }
            actor.observe(Op::LeaseLost {
                name: LOCK_NAME.into(),
                token,
                reason: "local deadline passed before the write".into(),
            });
            sleep_ms(draw(&mut rng, w.plan.think_ms)).await;
            continue;
        }

        writes += 1;
        let value = format!("{}-{writes}", actor.name());
        write(&actor, &w, &fenced, &unfenced, &value, token).await;

        let release_op = Op::Release { name: LOCK_NAME.into(), token };
        let api = match &lock {
            AnyLock::Fenced(_) => LOCK_RELEASE,
            AnyLock::Naive(_) => NAIVE_LOCK_RELEASE,
        };
        let id = actor.call(api, release_op.clone());
        let released = match (&lock, &held) {
            (AnyLock::Fenced(l), Held::Fenced(lease)) => l.release(lease).await,
            (AnyLock::Naive(l), _) => l.release(LOCK_NAME).await,
            (AnyLock::Fenced(_), Held::Naive) => Ok(false),
        };
        match released {
            Ok(true) => actor.ok(id, release_op),
            Ok(false) => actor.fail(id, release_op),
            Err(e) => actor.errored(id, release_op, &e),
        }
        sleep_ms(draw(&mut rng, w.plan.think_ms)).await;
    }
    Ok(())
}

async fn write(
    actor: &Actor,
    w: &LockWorkload,
    fenced: &FencedStore<SimConnection>,
    unfenced: &UnfencedStore<SimConnection>,
    value: &str,
    token: Option<u64>,
) {
    let is_fenced = w.store == StoreKind::Fenced;
    let op = |result| Op::Write { key: RESOURCE_KEY.into(), value: value.into(), token, fenced: is_fenced, result };
    let api = if is_fenced { FENCED_STORE_WRITE } else { UNFENCED_STORE_WRITE };
    let id = actor.call(api, op(None));
    match (w.store, token) {
        (StoreKind::Fenced, Some(t)) => {
            match fenced.write(RESOURCE_KEY, value, redis_primitives::FencingToken::new(t)).await {
                Ok(WriteOutcome::Accepted) => actor.ok(id, op(Some(WriteResult::Accepted))),
                Ok(WriteOutcome::Rejected { highest_seen, .. }) => {
                    if w.modes {
                        actor.reached(situation::STALE_WRITE_REFUSED);
                    }
                    actor.ok(id, op(Some(WriteResult::Rejected { highest_seen: highest_seen.get() })))
                }
                Err(e) => actor.errored(id, op(None), &e),
            }
        }
        _ => match unfenced.write(RESOURCE_KEY, value).await {
            Ok(()) => actor.ok(id, op(Some(WriteResult::Accepted))),
            Err(e) => actor.errored(id, op(None), &e),
        },
    }
}

async fn reader(actor: Actor, w: LockWorkload, read_at: u64, done: Arc<AtomicU32>, ack_at: Option<u64>) -> ActorResult {
    // A process of its own on the reader's host, beside the probes below:
    // its moment is the schedule's, not theirs.
    let ack = ack_at.map(|at| {
        let prober = actor.alias("ack-prober");
        let w = w.clone();
        actor.spawn(async move {
            let conn = prober.connection(w.lock_node);
            let lock = fenced_lock(conn.clone(), &w, prober.seed())?;
            let ttl = Ttl::from_millis(w.plan.ttl_ms)?;
            let what = "Acknowledged Lock::acquire";
            let refused = crate::scenarios::ack_probe::probe(&prober, at, ACK_TIMEOUT_MS, what, || async {
                match lock.acquire(ACK_PROBE_NAME, ttl).await? {
                    Some(lease) => {
                        let _ = lock.release(&lease).await;
                        Ok(true)
                    }
                    None => Ok(false),
                }
            })
            .await?;
            if refused {
                released_after_refusal(&prober, &lock, conn).await?;
            }
            ActorResult::Ok(())
        })
    });
    // Another process of its own, for time-floored tokens only: it waits
    // for the first milliseconds of a second, which the reader's moments
    // must not.
    let floor = (w.modes && w.lock == LockKind::Fenced && w.protection == Protection::TimeFloored).then(|| {
        let prober = actor.alias("floor-prober");
        let w = w.clone();
        actor.spawn(async move {
            let lock = fenced_lock(prober.connection(w.lock_node), &w, prober.seed())?;
            probes::floor::probe(&prober, &lock).await
        })
    });
    // The probes run here, on names of their own, while the clients run the
    // workload: the reader is idle until `read_at`, and no client waits for
    // them (client 0 contends from the start). Their requests still draw
    // from turmoil's one latency RNG, so a changed probe moves the clients'
    // timelines a little all the same.
    if let (true, LockKind::Fenced) = (w.modes, w.lock) {
        let lock = fenced_lock(actor.connection(w.lock_node), &w, actor.seed())?;
        probes::stale_lease::probe(&actor, &lock, w.lock_node).await?;
        probes::guard::probe(&actor, &lock, w.lock_node).await?;
        let rival = fenced_lock(actor.connection(w.lock_node), &w, actor.seed_for("release-race"))?;
        probes::release_race::probe(&actor, &lock, &rival, w.lock_node).await?;
        // A process of its own on the reader's host: the liveness rule
        // judges the reader's own retries, and these are refused on purpose.
        let prober = actor.alias("retry-prober");
        let lock = fenced_lock(prober.connection(w.lock_node), &w, prober.seed())?;
        probes::retry::probe(&prober, &lock, w.lock_node).await?;
    }
    let now = actor.now();
    if read_at > now {
        sleep_ms(read_at - now).await;
    }
    if w.modes {
        liveness_probe(&actor, &w, &done).await?;
    }
    let conn = actor.connection(w.store_node);
    let op = |value, token| Op::Read { key: RESOURCE_KEY.into(), value, token };
    let api = match w.store {
        StoreKind::Fenced => FENCED_STORE_READ,
        StoreKind::Unfenced => UNFENCED_STORE_READ,
    };
    let id = actor.call(api, op(None, None));
    match w.store {
        StoreKind::Fenced => match FencedStore::new(conn).read(RESOURCE_KEY).await {
            Ok(Some(s)) => actor.ok(id, op(Some(String::from_utf8_lossy(&s.value).into_owned()), Some(s.token.get()))),
            Ok(None) => actor.ok(id, op(None, None)),
            Err(e) => actor.errored(id, op(None, None), &e),
        },
        StoreKind::Unfenced => match UnfencedStore::new(conn).read(RESOURCE_KEY).await {
            Ok(v) => actor.ok(id, op(v.map(|b| String::from_utf8_lossy(&b).into_owned()), None)),
            Err(e) => actor.errored(id, op(None, None), &e),
        },
    }
    if w.modes {
        let tokens = if w.protection == Protection::TimeFloored { Tokens::TimeFloored } else { Tokens::Counter };
        probes::corruption::probe(&actor, w.lock_node, tokens).await?;
        if w.lock == LockKind::Fenced {
            let lock = fenced_lock(actor.connection(w.lock_node), &w, actor.seed_for("guard-after-heal"))?;
            probes::guard::after_heal(&actor, &lock, w.lock_node).await?;
        }
    }
    if let Some(ack) = ack {
        ack.await??;
    }
    if let Some(floor) = floor {
        floor.await??;
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Workload modes (correct scenarios only, `LockWorkload::modes`).
// ---------------------------------------------------------------------------

/// What one attempt of a client does (drawn per attempt from the
/// `mode` stream of the client's seed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// acquire, hold, write, release (the original workload).
    Plain,
    /// acquire, then one to three `Lock::extend`s mid-hold (some after the
    /// local deadline, some across a pause right after the send).
    Extend,
    /// acquire, wait past the TTL, release (must return false).
    ReleaseAfterExpiry,
    /// `Lock::with_lock` with a body that writes.
    WithLock,
    /// `Lock::with_lock_guarded` with a multi-step body that may stall.
    Guarded,
    /// acquire, then a body raced against a caller-driven `Lock::keep_alive`.
    KeepAlive,
    /// `Retry::run` around `Lock::acquire`.
    Retry,
}

impl Mode {
    fn draw(rng: &mut impl Rng) -> Mode {
        match rng.random_range(0..100u32) {
            0..20 => Mode::Plain,
            20..40 => Mode::Extend,
            40..48 => Mode::ReleaseAfterExpiry,
            48..60 => Mode::WithLock,
            60..76 => Mode::Guarded,
            76..86 => Mode::KeepAlive,
            _ => Mode::Retry,
        }
    }
}

/// Situations the correct lock scenarios declare (see `SITUATIONS`).
pub mod situation {
    /// A guarded body's final release got a reply slower than the
    /// keep-alive interval (a targeted one-request delay).
    pub const FINAL_RELEASE_DELAYED: &str = "final-release-delayed";
    /// A holder asked `is_trusted()` at its local deadline or 1 ms before.
    pub const TRUST_CHECKED_AT_THE_DEADLINE: &str = "trust-checked-at-the-deadline";
    /// A holder's own pause ended after its lease's local deadline.
    pub const LEASE_EXPIRED_WHILE_PAUSED: &str = "lease-expired-while-paused";
    /// The fenced store rejected a write (a newer token had written).
    pub const STALE_WRITE_REFUSED: &str = "stale-write-refused";
    /// `Lock::extend` returned false.
    pub const EXTENSION_REFUSED: &str = "extension-refused";
    /// `Lock::extend` returned true.
    pub const EXTENSION_CONFIRMED: &str = "extension-confirmed";
    /// `Lock::release` after the TTL returned false.
    pub const RELEASE_AFTER_EXPIRY: &str = "release-after-expiry";
    /// A guarded body was dropped because the lease stopped being trusted.
    pub const GUARD_CANCELLED_BODY: &str = "guard-cancelled-body";
    /// A guarded body finished under its lease.
    pub const GUARDED_BODY_COMPLETED: &str = "guarded-body-completed";
    /// An acquire whose outcome was unknown consumed a token (a gap in the
    /// granted tokens).
    pub const ACQUIRE_TIMED_OUT_BUT_APPLIED: &str = "acquire-timed-out-but-applied";
    /// `Retry::run` was granted on a second or later attempt.
    pub const RETRY_ACQUIRED_AFTER_CONTENTION: &str = "retry-acquired-after-contention";
    /// `Retry::run`'s caller froze in its first backoff until the retry's
    /// deadline (the next attempt, if any, would start exactly on it).
    pub const RETRY_PAUSED_TO_DEADLINE: &str = "retry-paused-to-deadline";
    /// An extend confirmed after a pause, but past the local deadline: the
    /// holder treated the success as a loss.
    pub const STALE_SUCCESS_AFTER_PAUSE: &str = "stale-success-after-pause";
    /// The liveness probe got the lock after every fault healed.
    pub const LOCK_FREE_AFTER_HEAL: &str = "lock-free-after-heal";
    /// `with_lock`'s release got no answer in time (a targeted one-request
    /// delay past the response timeout), and the body's output still came
    /// back.
    pub const WITH_LOCK_RELEASE_UNANSWERED: &str = "with-lock-release-unanswered";
    /// A guarded body's first keep-alive extend was held at the server
    /// until after the lease had expired there.
    pub const KEEP_ALIVE_EXTEND_HELD: &str = "keep-alive-extend-held";
    /// An extend sent just before the lease's local deadline had its reply
    /// held at the server until after the lease expired there.
    pub const EXTEND_REPLY_HELD: &str = "extend-reply-held-across-expiry";
    /// A release sent just before the lease's local deadline had its reply
    /// held at the server until after the lease expired there.
    pub const RELEASE_REPLY_HELD: &str = "release-reply-held-across-expiry";
}

use crate::scenarios::Situation;

/// The situations of `fencing`; `lock` declares all but the last (its
/// holders check their deadline before writing, so a refused stale write
/// is rare there).
const ALL: [Situation; 18] = [
    Situation {
        name: situation::LEASE_EXPIRED_WHILE_PAUSED,
        meaning: "a holder resumed from a pause after its lease's local deadline",
    },
    Situation { name: situation::EXTENSION_REFUSED, meaning: "Lock::extend returned false (lease expired or taken)" },
    Situation { name: situation::EXTENSION_CONFIRMED, meaning: "Lock::extend returned true" },
    Situation { name: situation::RELEASE_AFTER_EXPIRY, meaning: "Lock::release after the TTL returned false" },
    Situation {
        name: situation::GUARD_CANCELLED_BODY,
        meaning: "with_lock_guarded / keep_alive dropped a body when the lease stopped being trusted",
    },
    Situation { name: situation::GUARDED_BODY_COMPLETED, meaning: "a guarded body finished under its lease" },
    Situation {
        name: situation::ACQUIRE_TIMED_OUT_BUT_APPLIED,
        meaning: "an acquire of unknown outcome consumed a fencing token (gap in granted tokens)",
    },
    Situation {
        name: situation::RETRY_ACQUIRED_AFTER_CONTENTION,
        meaning: "Retry::run was granted on its second or later attempt",
    },
    Situation {
        name: situation::RETRY_PAUSED_TO_DEADLINE,
        meaning: "Retry::run's caller froze in its first backoff until exactly the retry's deadline",
    },
    Situation {
        name: situation::STALE_SUCCESS_AFTER_PAUSE,
        meaning: "an extend confirmed after the local deadline (paused between send and reply) was treated as a loss",
    },
    Situation {
        name: situation::LOCK_FREE_AFTER_HEAL,
        meaning: "after the faults healed, the liveness probe was granted the lock in time",
    },
    Situation {
        name: situation::TRUST_CHECKED_AT_THE_DEADLINE,
        meaning: "a holder asked is_trusted() exactly at its local deadline, or 1 ms before it",
    },
    Situation {
        name: situation::FINAL_RELEASE_DELAYED,
        meaning: "the final release of a with_lock_guarded body was answered slower than the keep-alive interval (one request delayed at the server)",
    },
    Situation {
        name: situation::WITH_LOCK_RELEASE_UNANSWERED,
        meaning: "with_lock's release timed out (one request delayed past the response timeout) and the body's output still came back",
    },
    Situation {
        name: situation::KEEP_ALIVE_EXTEND_HELD,
        meaning: "a guarded body's first keep-alive extend was held at the server until 20-80 ms after the lease expired there",
    },
    Situation {
        name: situation::EXTEND_REPLY_HELD,
        meaning: "an extend sent just before the local deadline ran at once, and its reply was held until 20-80 ms after the lease expired at the server",
    },
    Situation {
        name: situation::RELEASE_REPLY_HELD,
        meaning: "a release sent just before the local deadline ran at once, and its reply was held until 20-80 ms after the lease expired at the server",
    },
    Situation {
        name: situation::STALE_WRITE_REFUSED,
        meaning: "the fenced store refused a write carrying an older token",
    },
];

/// The public operations the lock workloads exist to call (every
/// operation of `Lock`, with `Retry` and the fenced store the holders
/// write through).
pub const OPERATIONS: &[Api] = &[
    LOCK_ACQUIRE,
    LOCK_RELEASE,
    LOCK_EXTEND,
    LOCK_WITH_LOCK,
    LOCK_WITH_LOCK_GUARDED,
    LOCK_KEEP_ALIVE,
    LOCK_CURRENT_TOKEN,
    LOCK_REMAINING_TTL,
    RETRY_RUN,
    FENCED_STORE_WRITE,
    FENCED_STORE_READ,
];

/// The situations of `lock`.
pub const SITUATIONS: &[Situation] = ALL.split_at(ALL.len() - 1).0;

/// The situations of `fencing`.
pub const FENCING_SITUATIONS: &[Situation] = &ALL;

/// The situations the finished history shows (rather than an actor).
fn reach_post_hoc(outcome: &mut Outcome) {
    use crate::history::EventKind;
    let mut granted: Vec<u64> = Vec::new();
    let mut unknown = 0;
    for e in &outcome.history {
        match (&e.op, e.kind) {
            (Op::Acquire { token: Some(t), .. }, EventKind::Ok) => granted.push(*t),
            (Op::Acquire { .. }, EventKind::Info) => unknown += 1,
            _ => {}
        }
    }
    granted.sort_unstable();
    let gap = granted.first().is_some_and(|&f| f > 1) || granted.windows(2).any(|w| w[1] > w[0] + 1);
    if unknown > 0 && gap {
        outcome.reach(situation::ACQUIRE_TIMED_OUT_BUT_APPLIED);
    }
}

/// The liveness probe (see `checker::lock_liveness`): once every client
/// has stopped, `Retry::run` around `Lock::acquire` must be granted within
/// TTL + 150 ms; then it releases.
async fn liveness_probe(actor: &Actor, w: &LockWorkload, done: &AtomicU32) -> ActorResult {
    while done.load(Ordering::Relaxed) < w.plan.clients {
        sleep_ms(10).await;
    }
    let lock = Lock::builder(actor.connection(w.lock_node))
        .owners(OwnerSource::seeded(actor.seed()))
        .drift(lock_drift(w)?)
        .build()?;
    let ttl = Ttl::from_millis(w.plan.ttl_ms)?;
    let bound = w.plan.ttl_ms + crate::checker::lock_liveness::SLACK_MS;
    let attempts = core::num::NonZeroU32::new(60).expect("non-zero");
    let Some(retry) =
        crate::scenarios::validation::retry(actor, attempts, Duration::from_millis(5), Duration::from_millis(20))
    else {
        return Ok(());
    };
    let retry = retry.deadline(Duration::from_millis(bound - 20)).seeded(actor.seed_for("probe"));
    let rop = |token| Op::Retry {
        name: LOCK_NAME.into(),
        attempts: 60,
        deadline_ms: Some(bound - 20),
        token,
        backoff_ms: Some((5, 20)),
    };
    let rid = actor.call(RETRY_RUN, rop(None));
    let r = retry
        .run(|| {
            let (actor, lock) = (actor.clone(), lock.clone());
            async move {
                let op =
                    |token, deadline| Op::Acquire { name: LOCK_NAME.into(), ttl_ms: w.plan.ttl_ms, token, deadline };
                let id = actor.call(LOCK_ACQUIRE, op(None, None));
                let r = lock.acquire(LOCK_NAME, ttl).await;
                match &r {
                    Ok(Some(l)) => actor.ok(id, op(Some(l.token().get()), Some(actor.millis_of(l.local_deadline())))),
                    Ok(None) => actor.fail(id, op(None, None)),
                    Err(e) => actor.errored(id, op(None, None), e),
                }
                r
            }
        })
        .await;
    match r {
        Ok(Some(lease)) => {
            actor.ok(rid, rop(Some(lease.token().get())));
            let op = Op::Release { name: LOCK_NAME.into(), token: Some(lease.token().get()) };
            let id = actor.call(LOCK_RELEASE, op.clone());
            match lock.release(&lease).await {
                Ok(true) => actor.ok(id, op),
                Ok(false) => actor.fail(id, op),
                Err(e) => actor.errored(id, op, &e),
            }
        }
        Ok(None) => actor.fail(rid, rop(None)),
        Err(e) => actor.errored(rid, rop(None), &e),
    }
    Ok(())
}

/// The drift allowance of the correct scenarios' locks: not the default,
/// so an accessor or a computation that fell back to `Drift::DEFAULT`
/// shows. `lease-views` judges deadlines with the same numbers.
const DRIFT: lease_views::Allowance = lease_views::Allowance { per_mille: 20, constant_ms: 3 };

/// The workload's `Lock` on `conn`, configured as the scenario says (drift,
/// acknowledged writes, time-floored tokens), drawing owners from `seed`.
fn fenced_lock(conn: SimConnection, w: &LockWorkload, seed: u64) -> redis_primitives::Result<Lock<SimConnection>> {
    let builder = Lock::builder(conn).owners(OwnerSource::seeded(seed)).drift(lock_drift(w)?);
    let builder = match w.protection {
        Protection::None => builder,
        Protection::Acknowledged => {
            builder.acknowledged(Acknowledgement::new(1, Duration::from_millis(ACK_TIMEOUT_MS))?)
        }
        Protection::TimeFloored => builder.tokens(Tokens::TimeFloored),
    };
    builder.build()
}

/// The name the acknowledgement probe acquires (nobody else uses it).
const ACK_PROBE_NAME: &str = "ack-probe";

/// After an acknowledged acquire was refused `NotAcknowledged`, the name
/// must be free again: the acquire took the lease before its `WAIT` gave
/// up, and a lease nobody was handed must go back at once rather than
/// block the name for a TTL. Nothing else takes the probe's name, and no
/// fault reaches the prober in its window (`ack_probe::send_at`), so the
/// key is absent unless the acquire kept it. Recorded as an
/// [`Op::Configured`] read-back; a read the network fails says nothing
/// and is not recorded.
async fn released_after_refusal(prober: &Actor, lock: &Lock<SimConnection>, mut conn: SimConnection) -> ActorResult {
    let key = lock.key(ACK_PROBE_NAME)?;
    let Ok(pttl) = redis::cmd("PTTL").arg(&key).query_async::<i64>(&mut conn).await else { return Ok(()) };
    let got = if pttl == -2 { "absent".to_string() } else { format!("present (PTTL {pttl} ms)") };
    prober.configured(
        "Acknowledged Lock::acquire refused NotAcknowledged",
        &[("the lock key right after the refusal", got, "absent".to_string())],
    );
    Ok(())
}

/// The drift the workload's locks are built with (the default for the
/// broken variants, whose seeds stay as they were).
fn lock_drift(w: &LockWorkload) -> redis_primitives::Result<redis_primitives::Drift> {
    if w.modes {
        redis_primitives::Drift::new(DRIFT.per_mille as u32, Duration::from_millis(DRIFT.constant_ms))
    } else {
        Ok(redis_primitives::Drift::DEFAULT)
    }
}

/// Whether a guard gave up for the deadline; a failed extension whose
/// error no fault explains is recorded for `unexpected-errors`.
pub(super) fn loss_is_deadline(actor: &Actor, reason: &redis_primitives::LeaseLoss) -> bool {
    match reason {
        redis_primitives::LeaseLoss::DeadlineReached => true,
        redis_primitives::LeaseLoss::Failed(e) if !e.outcome_is_unknown() => {
            actor.observe(Op::LibraryError { message: e.to_string() });
            false
        }
        _ => false,
    }
}

/// A guarded body's drop guard: made when the body starts, it records an
/// [`Op::BodyDropped`] at the instant the guard drops the body unfinished,
/// which is the instant a `Cancelled { at }` must report. [`BodyMark::done`]
/// disarms it when the body runs to its end.
pub(super) struct BodyMark {
    actor: Option<Actor>,
    name: String,
    token: u64,
}

impl BodyMark {
    /// A mark for the body of `actor`'s guarded call on `name` (`token`).
    pub fn new(actor: &Actor, name: &str, token: u64) -> BodyMark {
        BodyMark { actor: Some(actor.clone()), name: name.to_string(), token }
    }

    /// The body finished: nothing to record.
    pub fn done(mut self) {
        self.actor = None;
    }
}

impl Drop for BodyMark {
    fn drop(&mut self) {
        if let Some(actor) = self.actor.take() {
            actor.observe(Op::BodyDropped { name: std::mem::take(&mut self.name), token: self.token });
        }
    }
}

/// A recorded `with_lock_guarded` call: its [`Op::Guarded`] (on `name`,
/// with the keep-alive interval `every_ms`) and the [`Op::Acquire`] inside
/// it (asking `ttl_ms`), both invoked before the call.
pub(super) struct GuardedCall<'a> {
    pub actor: &'a Actor,
    pub name: &'a str,
    pub ttl_ms: u64,
    pub every_ms: Option<u64>,
    pub call: crate::history::OpId,
    pub acquire: crate::history::OpId,
}

/// How a recorded guarded call ended (what its caller may add to the record).
pub(super) enum GuardedEnd {
    NotAcquired,
    Completed,
    /// The body was dropped; `expired` when for the lease's deadline.
    Cancelled {
        expired: bool,
    },
    Failed,
}

impl GuardedCall<'_> {
    /// Records `r`, the call's result, whose body returned the id of the
    /// [`Op::Release`] it invoked at its end and its token: the release's
    /// outcome, the loss of a cancelled lease ([`Op::LeaseLost`]) and the
    /// call's completion. One record for the workload and the probes, so
    /// the checkers judge both the same way.
    pub fn end(
        self,
        r: redis_primitives::Result<redis_primitives::GuardedOutcome<(crate::history::OpId, u64)>>,
    ) -> GuardedEnd {
        let GuardedCall { actor, name, ttl_ms, every_ms, call, acquire } = self;
        let gop = |token, outcome| Op::Guarded { name: name.into(), token, outcome, every_ms };
        let acquire_op = || Op::Acquire { name: name.into(), ttl_ms, token: None, deadline: None };
        match r {
            Ok(redis_primitives::GuardedOutcome::NotAcquired) => {
                actor.fail(acquire, acquire_op());
                actor.ok(call, gop(None, Some(GuardedResult::NotAcquired)));
                GuardedEnd::NotAcquired
            }
            Ok(redis_primitives::GuardedOutcome::Completed { output: (rid, token), release, .. }) => {
                let rel = Op::Release { name: name.into(), token: Some(token) };
                match release {
                    redis_primitives::Release::Released => actor.ok(rid, rel),
                    redis_primitives::Release::AlreadyGone => actor.fail(rid, rel),
                    redis_primitives::Release::Unknown(e) => actor.errored(rid, rel, &e),
                }
                actor.ok(call, gop(Some(token), Some(GuardedResult::Completed)));
                GuardedEnd::Completed
            }
            Ok(redis_primitives::GuardedOutcome::Cancelled { token, reason, at }) => {
                let at = actor.millis_of(at);
                actor.observe(Op::LeaseLost {
                    name: name.into(),
                    token: Some(token.get()),
                    reason: format!("guard: {reason:?}"),
                });
                let expired = matches!(reason, redis_primitives::LeaseLoss::DeadlineReached);
                let deadline_reached = loss_is_deadline(actor, &reason);
                actor.ok(call, gop(Some(token.get()), Some(GuardedResult::Cancelled { at, deadline_reached })));
                GuardedEnd::Cancelled { expired }
            }
            // `Err` only comes from the acquire: once the body ran, the
            // call answers `Completed` or `Cancelled` whatever the release did.
            Err(e) => {
                actor.info(acquire, acquire_op());
                actor.errored(call, gop(None, None), &e);
                GuardedEnd::Failed
            }
        }
    }
}

/// `lease.is_trusted()`, recorded with everything the lease says about
/// itself (an [`Op::LeaseView`], judged by `lease-views`).
fn view(actor: &Actor, lease: &redis_primitives::Lease) -> bool {
    let trusted = lease.is_trusted();
    actor.observe(Op::LeaseView {
        name: lease.name().to_string(),
        key: lease.key().to_string(),
        token: lease.token().get(),
        ttl_ms: lease.ttl().as_millis(),
        sent_ms: actor.millis_of(lease.sent_at()),
        deadline_ms: actor.millis_of(lease.local_deadline()),
        trusted,
    });
    trusted
}

/// Awaits `fut`; with `pause = Some((after, ms))`, freezes the whole actor
/// for `ms` once `after` ms have passed since the request was sent, so the
/// reply arrives while the actor is frozen (design §4: a success that comes
/// back after the lease's deadline proves nothing).
async fn send_then_pause<F: std::future::Future>(actor: &Actor, fut: F, pause: Option<(u64, u64)>) -> F::Output {
    let Some((after, ms)) = pause else { return fut.await };
    tokio::pin!(fut);
    tokio::select! {
        biased;
        r = &mut fut => r,
        _ = sleep_ms(after) => {
            actor.stall(ms, "right after sending a request (workload)");
            fut.await
        }
    }
}

/// Stalls the actor for `ms` here (a GC pause), noted like the workload stall.
async fn stall(actor: &Actor, ms: u64, wherein: &str) {
    actor.stall(ms, wherein);
    // The pause takes effect at the next await.
    tokio::task::yield_now().await;
}

/// What a mode attempt needs.
struct Ctx<'a> {
    actor: &'a Actor,
    w: &'a LockWorkload,
    lock: &'a Lock<SimConnection>,
    store: &'a FencedStore<SimConnection>,
    ttl: Ttl,
    rng: &'a mut rand::rngs::StdRng,
    /// This client's number of holds so far (for the workload stall).
    holds: &'a mut u32,
    writes: &'a mut u32,
    stall_at: Option<u32>,
}

impl Ctx<'_> {
    fn acquire_op(&self, token: Option<u64>, deadline: Option<Millis>) -> Op {
        Op::Acquire { name: LOCK_NAME.into(), ttl_ms: self.w.plan.ttl_ms, token, deadline }
    }

    fn deadline_ms(&self, lease: &redis_primitives::Lease) -> Millis {
        self.actor.millis_of(lease.local_deadline())
    }

    /// One recorded `Lock::acquire` (optionally paused right after the send).
    async fn acquire(&mut self, api: Option<Api>) -> Option<redis_primitives::Lease> {
        let id = match api {
            Some(api) => self.actor.call(api, self.acquire_op(None, None)),
            None => self.actor.invoke(self.acquire_op(None, None)),
        };
        let pause =
            self.rng.random_bool(0.06).then(|| (self.rng.random_range(0..=2), self.rng.random_range(100..=500)));
        match send_then_pause(self.actor, self.lock.acquire(LOCK_NAME, self.ttl), pause).await {
            Ok(Some(lease)) => {
                let d = self.deadline_ms(&lease);
                self.actor.ok(id, self.acquire_op(Some(lease.token().get()), Some(d)));
                *self.holds += 1;
                Some(lease)
            }
            Ok(None) => {
                self.actor.fail(id, self.acquire_op(None, None));
                None
            }
            Err(e) => {
                self.actor.errored(id, self.acquire_op(None, None), &e);
                self.actor.note(format!("acquire: {e}"));
                None
            }
        }
    }

    /// The workload stall, if this is the hold it belongs in.
    async fn maybe_workload_stall(&mut self) {
        if self.stall_at == Some(*self.holds) && self.w.stall_ms() > 0 {
            self.stall_at = None;
            stall(self.actor, self.w.stall_ms(), "inside its critical section").await;
        }
    }

    /// One fenced write with `token` (recorded), as a body step or a holder's write.
    async fn write(&mut self, token: u64) {
        *self.writes += 1;
        let value = format!("{}-{}", self.actor.name(), *self.writes);
        write_fenced(self.actor, self.store, &value, token).await;
    }

    /// Writes if the lease is still trusted; otherwise records the loss.
    async fn write_if_trusted(&mut self, lease: &redis_primitives::Lease, paused_at: Option<Millis>) -> bool {
        if view(self.actor, lease) || !self.w.check_deadline {
            self.write(lease.token().get()).await;
            true
        } else {
            if paused_at.is_some() {
                self.actor.reached(situation::LEASE_EXPIRED_WHILE_PAUSED);
            }
            self.actor.observe(Op::LeaseLost {
                name: LOCK_NAME.into(),
                token: Some(lease.token().get()),
                reason: "local deadline passed before the write".into(),
            });
            false
        }
    }

    async fn release(&mut self, lease: &redis_primitives::Lease) -> Option<bool> {
        let op = Op::Release { name: LOCK_NAME.into(), token: Some(lease.token().get()) };
        let id = self.actor.call(LOCK_RELEASE, op.clone());
        match self.lock.release(lease).await {
            Ok(true) => {
                self.actor.ok(id, op);
                Some(true)
            }
            Ok(false) => {
                self.actor.fail(id, op);
                Some(false)
            }
            Err(e) => {
                self.actor.errored(id, op, &e);
                None
            }
        }
    }

    /// A body of `steps` fenced writes with `token`, with short sleeps and
    /// perhaps one stall (sometimes aimed across the lease's local deadline).
    async fn body(&mut self, token: u64, deadline: Millis) -> u32 {
        let steps = self.rng.random_range(2..=5u32);
        let stall_step = self.rng.random_bool(0.4).then(|| self.rng.random_range(0..steps));
        for i in 0..steps {
            sleep_ms(self.rng.random_range(10..=120)).await;
            if stall_step == Some(i) {
                let now = self.actor.now();
                // Either a stall that lands exactly across the (initial)
                // deadline, or one long enough to outlast any extension.
                let ms = if self.rng.random_bool(0.5) && deadline > now {
                    deadline - now + self.rng.random_range(1..=15)
                } else {
                    self.rng.random_range(150..=700)
                };
                stall(self.actor, ms, "inside a guarded body").await;
            }
            self.maybe_workload_stall().await;
            self.write(token).await;
        }
        steps
    }
}

async fn write_fenced(actor: &Actor, store: &FencedStore<SimConnection>, value: &str, token: u64) {
    let op =
        |result| Op::Write { key: RESOURCE_KEY.into(), value: value.into(), token: Some(token), fenced: true, result };
    let id = actor.call(FENCED_STORE_WRITE, op(None));
    match store.write(RESOURCE_KEY, value, redis_primitives::FencingToken::new(token)).await {
        Ok(WriteOutcome::Accepted) => actor.ok(id, op(Some(WriteResult::Accepted))),
        Ok(WriteOutcome::Rejected { highest_seen, .. }) => {
            actor.reached(situation::STALE_WRITE_REFUSED);
            actor.ok(id, op(Some(WriteResult::Rejected { highest_seen: highest_seen.get() })))
        }
        Err(e) => actor.errored(id, op(None), &e),
    }
}

/// `lock.current_token` of `name`, recorded (checked by `lock-replies`).
pub(super) async fn read_current_token(actor: &Actor, lock: &Lock<SimConnection>, name: &str) {
    let op = |token| Op::CurrentToken { name: name.into(), token };
    let id = actor.call(LOCK_CURRENT_TOKEN, op(None));
    match lock.current_token(name).await {
        Ok(t) => actor.ok(id, op(t.map(|t| t.get()))),
        Err(e) => actor.errored(id, op(None), &e),
    }
}

/// Reads `current_token` or `remaining_ttl` (recorded, checked by `lock-replies`).
async fn read_lock_state(actor: &Actor, lock: &Lock<SimConnection>, rng: &mut impl Rng) {
    if rng.random_bool(0.5) {
        read_current_token(actor, lock, LOCK_NAME).await;
    } else {
        let op = |ms| Op::RemainingTtl { name: LOCK_NAME.into(), ms };
        let id = actor.call(LOCK_REMAINING_TTL, op(None));
        match lock.remaining_ttl(LOCK_NAME).await {
            Ok(d) => actor.ok(id, op(d.map(|d| d.as_millis() as u64))),
            Err(e) => actor.errored(id, op(None), &e),
        }
    }
}

/// One attempt in a non-plain mode.
/// Where `Mode::Extend` aims its next extend or release on a quarter of
/// them: sent 0-20 ms before the lease's local deadline, the request runs at
/// once and its reply is held at the server until 20-80 ms after the lease
/// expired there (when that stays under the response timeout). The correct
/// compare-and-extend and compare-and-delete ran atomically, so nothing
/// changes but when the caller hears; one that checks the owner and acts in
/// a second request acts on whoever took the lock meanwhile. Drawn from a
/// stream of its own per request, so the workload's other draws are
/// unchanged. Returns how long to wait before sending, and the hold.
fn reply_held_across_expiry(
    actor: &Actor,
    lease: &redis_primitives::Lease,
    ttl_ms: u64,
    what: &str,
) -> Option<(u64, HeldReply)> {
    let now = actor.now();
    let mut faults = actor.rng_for(&format!("{what}-reply-held-{now}"));
    if !faults.random_bool(0.25) {
        return None;
    }
    let deadline = actor.millis_of(lease.local_deadline());
    let send = deadline.checked_sub(faults.random_range(0..=20)).filter(|&s| s > now)?;
    // The server set the TTL when the request that granted or extended the
    // lease arrived, at least its send instant.
    let expiry = actor.millis_of(lease.sent_at()) + ttl_ms;
    let ms = expiry.checked_sub(send)? + faults.random_range(20..=80);
    let timeout = actor.net().response_timeout.as_millis() as u64;
    (ms < timeout).then_some((send - now, HeldReply { ms }))
}

/// A reply to hold, from [`reply_held_across_expiry`].
struct HeldReply {
    ms: u64,
}

impl HeldReply {
    /// Holds the reply to the next request naming the lease's key.
    fn hold(self, actor: &Actor, node: usize, lease: &redis_primitives::Lease, situation: &str) {
        actor.delay_next_reply_mentioning(node, self.ms, lease.key());
        actor.reached(situation);
    }
}

async fn attempt(cx: &mut Ctx<'_>, mode: Mode) -> ActorResult {
    let ttl_ms = cx.w.plan.ttl_ms;
    match mode {
        Mode::Plain => {}
        Mode::Extend => {
            let Some(mut lease) = cx.acquire(Some(LOCK_ACQUIRE)).await else { return Ok(()) };
            cx.maybe_workload_stall().await;
            let token = lease.token().get();
            let mut paused_at = None;
            // The TTL the key was last set with (an extend may ask another).
            let mut set_ms = ttl_ms;
            for _ in 0..cx.rng.random_range(1..=3u32) {
                let now = cx.actor.now();
                let deadline = cx.deadline_ms(&lease);
                // Now and then an extend asks for a shorter TTL than the
                // acquire did (the lease must then report the new one). From
                // a stream of its own: the workload's draws stay as they were.
                let ext_ms = if cx.actor.rng_for(&format!("extend-ttl-{now}")).random_bool(0.3) {
                    ttl_ms * 2 / 3
                } else {
                    ttl_ms
                };
                // Mostly mid-hold; sometimes just past the local deadline
                // (the server may or may not still have the key).
                let wait = if cx.rng.random_bool(0.25) {
                    deadline.saturating_sub(now) + cx.rng.random_range(0..=40)
                } else {
                    cx.rng.random_range(10..=ttl_ms / 2)
                };
                let held = reply_held_across_expiry(cx.actor, &lease, set_ms, "extend");
                let wait = held.as_ref().map_or(wait, |(before, _)| *before);
                sleep_ms(wait).await;
                if let Some((_, aim)) = held {
                    aim.hold(cx.actor, cx.w.lock_node, &lease, situation::EXTEND_REPLY_HELD);
                }
                let pause =
                    cx.rng.random_bool(0.2).then(|| (cx.rng.random_range(0..=2), cx.rng.random_range(150..=700)));
                if pause.is_some() {
                    paused_at = Some(cx.actor.now());
                }
                let op = |deadline| Op::Extend { name: LOCK_NAME.into(), token: Some(token), ttl_ms: ext_ms, deadline };
                let id = cx.actor.call(LOCK_EXTEND, op(None));
                let ext = Ttl::from_millis(ext_ms)?;
                match send_then_pause(cx.actor, cx.lock.extend(&mut lease, ext), pause).await {
                    Ok(true) => {
                        set_ms = ext_ms;
                        let d = cx.deadline_ms(&lease);
                        cx.actor.ok(id, op(Some(d)));
                        cx.actor.reached(situation::EXTENSION_CONFIRMED);
                        if !view(cx.actor, &lease) {
                            if pause.is_some() {
                                cx.actor.reached(situation::STALE_SUCCESS_AFTER_PAUSE);
                            }
                            break;
                        }
                    }
                    Ok(false) => {
                        cx.actor.fail(id, op(None));
                        cx.actor.reached(situation::EXTENSION_REFUSED);
                        break;
                    }
                    Err(e) => {
                        // The lease's deadline after an extend of unknown
                        // outcome (judged by `lease-views`; the overlap
                        // checks hold the lease to it).
                        cx.actor.errored(id, op(Some(cx.deadline_ms(&lease))), &e);
                        break;
                    }
                }
            }
            cx.write_if_trusted(&lease, paused_at).await;
            if let Some((before, aim)) = reply_held_across_expiry(cx.actor, &lease, set_ms, "release") {
                sleep_ms(before).await;
                aim.hold(cx.actor, cx.w.lock_node, &lease, situation::RELEASE_REPLY_HELD);
            }
            cx.release(&lease).await;
        }
        Mode::ReleaseAfterExpiry => {
            let Some(lease) = cx.acquire(Some(LOCK_ACQUIRE)).await else { return Ok(()) };
            cx.maybe_workload_stall().await;
            if cx.rng.random_bool(0.5) {
                cx.write_if_trusted(&lease, None).await;
            }
            sleep_ms(ttl_ms + cx.rng.random_range(5..=100)).await;
            if cx.rng.random_bool(0.5) {
                // A zombie write: the lease is gone, the token is not. The
                // store must refuse it if a newer holder has written.
                cx.write(lease.token().get()).await;
            }
            if cx.release(&lease).await == Some(false) {
                cx.actor.reached(situation::RELEASE_AFTER_EXPIRY);
            }
        }
        Mode::WithLock => {
            let acquire_id = cx.actor.call(LOCK_WITH_LOCK, cx.acquire_op(None, None));
            let hold = cx.rng.random_range(cx.w.plan.hold_ms.0..=cx.w.plan.hold_ms.1);
            let state = std::rc::Rc::new(std::cell::Cell::new(None::<(crate::history::OpId, u64)>));
            let (actor, store, w) = (cx.actor.clone(), cx.store.clone(), cx.w.clone());
            let writes = *cx.writes + 1;
            *cx.writes += 1;
            // A release that gets no answer in time: the body has run, so its
            // output must still come back. Drawn from a stream of its own
            // (one per attempt) so the workload's other draws are unchanged.
            let unanswered_release = {
                let mut faults = cx.actor.rng_for(&format!("with-lock-release-{writes}"));
                let timeout = cx.actor.net().response_timeout.as_millis() as u64;
                faults.random_bool(0.5).then(|| timeout + faults.random_range(1..=100))
            };
            let st = state.clone();
            let body = move |lease: redis_primitives::Lease| async move {
                let token = lease.token().get();
                let d = actor.millis_of(lease.local_deadline());
                actor.ok(
                    acquire_id,
                    Op::Acquire {
                        name: LOCK_NAME.into(),
                        ttl_ms: w.plan.ttl_ms,
                        token: Some(token),
                        deadline: Some(d),
                    },
                );
                sleep_ms(hold).await;
                if view(&actor, &lease) || !w.check_deadline {
                    write_fenced(&actor, &store, &format!("{}-{writes}", actor.name()), token).await;
                } else {
                    actor.observe(Op::LeaseLost {
                        name: LOCK_NAME.into(),
                        token: Some(token),
                        reason: "local deadline passed before the write".into(),
                    });
                }
                // with_lock releases right after the body returns.
                if let Some(ms) = unanswered_release {
                    // Aimed at the lease key: the first release on a
                    // connection asks COMMAND INFO first, and that question
                    // falling back to scripts is not the fault meant here.
                    actor.delay_next_request_mentioning(w.lock_node, ms, lease.key());
                }
                st.set(Some((actor.invoke(Op::Release { name: LOCK_NAME.into(), token: Some(token) }), token)));
                token
            };
            let r = cx.lock.with_lock(LOCK_NAME, cx.ttl, body).await;
            let rel = |token| Op::Release { name: LOCK_NAME.into(), token: Some(token) };
            match (r, state.get()) {
                (Ok(redis_primitives::LockOutcome::NotAcquired), _) => {
                    cx.actor.fail(acquire_id, cx.acquire_op(None, None))
                }
                (Ok(redis_primitives::LockOutcome::Ran { output, release, .. }), Some((rid, _))) => {
                    *cx.holds += 1;
                    // The accessor user code decides with must agree with
                    // the variant.
                    let released = matches!(release, redis_primitives::Release::Released);
                    cx.actor.configured_if_differs(
                        "Release",
                        &[("Release::is_released", release.is_released().to_string(), released.to_string())],
                    );
                    match release {
                        redis_primitives::Release::Released => cx.actor.ok(rid, rel(output)),
                        redis_primitives::Release::AlreadyGone => cx.actor.fail(rid, rel(output)),
                        redis_primitives::Release::Unknown(e) => {
                            if unanswered_release.is_some() {
                                cx.actor.reached(situation::WITH_LOCK_RELEASE_UNANSWERED);
                            }
                            cx.actor.errored(rid, rel(output), &e)
                        }
                    }
                }
                (Err(e), Some((rid, token))) => {
                    // `Err` only comes from the acquire: once the body ran,
                    // its output is returned whatever the release did.
                    cx.actor.configured_if_differs(
                        "Lock::with_lock",
                        &[("result after the body ran", format!("Err({e})"), "Ok(LockOutcome::Ran { .. })".into())],
                    );
                    cx.actor.errored(rid, rel(token), &e)
                }
                (Err(e), None) => cx.actor.errored(acquire_id, cx.acquire_op(None, None), &e),
                (Ok(_), None) => return Err("with_lock ran without its body".into()),
            }
        }
        Mode::Guarded => {
            let policy = if cx.rng.random_bool(0.5) {
                redis_primitives::KeepAlive::thirds(cx.lock, cx.ttl)?
            } else {
                redis_primitives::KeepAlive::new(
                    cx.lock,
                    cx.ttl,
                    Duration::from_millis(cx.rng.random_range(30..=ttl_ms * 2 / 3)),
                )?
            };
            let every_ms = Some(policy.every().as_millis() as u64);
            let gop = Op::Guarded { name: LOCK_NAME.into(), token: None, outcome: None, every_ms };
            let gid = cx.actor.call(LOCK_WITH_LOCK_GUARDED, gop);
            let acquire_id = cx.actor.invoke(cx.acquire_op(None, None));
            let actor = cx.actor.clone();
            let lock2 = cx.lock.clone();
            let w = cx.w.clone();
            let store = cx.store.clone();
            let seed = cx.rng.random::<u64>();
            let stall_here = (cx.stall_at == Some(*cx.holds + 1)).then_some(cx.w.stall_ms());
            let slow_release =
                cx.rng.random_bool(0.25).then(|| policy.every().as_millis() as u64 + cx.rng.random_range(1..=80));
            // The keep-alive's first extend held at the server until 20-80 ms
            // after the lease has expired there, answered within the response
            // timeout: the guard must give up at its own deadline, not run
            // the body on until the late answer (nor wait for that answer to
            // give up). Drawn from a stream of its own per attempt, so the
            // workload's other draws are unchanged. On most attempts that
            // can have it: only short TTLs fit it under the response timeout.
            let held_extend = {
                let mut faults = cx.actor.rng_for(&format!("keep-alive-held-{}", cx.actor.now()));
                let ms = ttl_ms.saturating_sub(policy.every().as_millis() as u64) + faults.random_range(20..=80);
                let timeout = cx.actor.net().response_timeout.as_millis() as u64;
                (faults.random_bool(0.7) && ms < timeout).then_some(ms)
            };
            let body = move |lease: redis_primitives::Lease| async move {
                let token = lease.token().get();
                let mark = BodyMark::new(&actor, LOCK_NAME, token);
                let d = actor.millis_of(lease.local_deadline());
                actor.ok(
                    acquire_id,
                    Op::Acquire {
                        name: LOCK_NAME.into(),
                        ttl_ms: w.plan.ttl_ms,
                        token: Some(token),
                        deadline: Some(d),
                    },
                );
                if let Some(ms) = held_extend {
                    // The next request naming the lease key is the first
                    // extend (or, for a body done before it, the release).
                    actor.delay_next_request_mentioning(w.lock_node, ms, lease.key());
                    actor.reached(situation::KEEP_ALIVE_EXTEND_HELD);
                }
                let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
                let (mut holds, mut writes) = (0u32, 0u32);
                let mut body_cx = Ctx {
                    actor: &actor,
                    w: &w,
                    lock: &lock2,
                    store: &store,
                    ttl: Ttl::from_millis(w.plan.ttl_ms).expect("ttl validated"),
                    rng: &mut rng,
                    holds: &mut holds,
                    writes: &mut writes,
                    stall_at: stall_here.map(|_| 0),
                };
                body_cx.body(token, d).await;
                // The instant that matters for the final release: a slow
                // reply to it must not hold the caller longer than `every`.
                if let Some(ms) = slow_release {
                    actor.delay_next_request(w.lock_node, ms);
                    actor.reached(situation::FINAL_RELEASE_DELAYED);
                }
                mark.done();
                (actor.invoke(Op::Release { name: LOCK_NAME.into(), token: Some(token) }), token)
            };
            let r = cx.lock.with_lock_guarded(LOCK_NAME, policy, body).await;
            let call = GuardedCall {
                actor: cx.actor,
                name: LOCK_NAME,
                ttl_ms: cx.w.plan.ttl_ms,
                every_ms,
                call: gid,
                acquire: acquire_id,
            };
            match call.end(r) {
                GuardedEnd::Completed => {
                    *cx.holds += 1;
                    cx.actor.reached(situation::GUARDED_BODY_COMPLETED);
                }
                GuardedEnd::Cancelled { expired } => {
                    *cx.holds += 1;
                    if expired {
                        cx.actor.reached(situation::LEASE_EXPIRED_WHILE_PAUSED);
                    }
                    cx.actor.reached(situation::GUARD_CANCELLED_BODY);
                }
                GuardedEnd::NotAcquired | GuardedEnd::Failed => {}
            }
        }
        Mode::KeepAlive => {
            let Some(mut lease) = cx.acquire(Some(LOCK_ACQUIRE)).await else { return Ok(()) };
            let token = lease.token().get();
            let deadline = cx.deadline_ms(&lease);
            let policy = redis_primitives::KeepAlive::thirds(cx.lock, cx.ttl)?;
            let gop = |outcome| Op::Guarded { name: LOCK_NAME.into(), token: Some(token), outcome, every_ms: None };
            let gid = cx.actor.call(LOCK_KEEP_ALIVE, gop(None));
            let lock = cx.lock.clone();
            let loss = {
                let keep = lock.keep_alive(&mut lease, policy);
                tokio::pin!(keep);
                let body = cx.body(token, deadline);
                tokio::pin!(body);
                tokio::select! {
                    biased;
                    loss = &mut keep => Some((loss, cx_now())),
                    _ = &mut body => None,
                }
            };
            match loss {
                Some((reason, at)) => {
                    cx.actor.observe(Op::LeaseLost {
                        name: LOCK_NAME.into(),
                        token: Some(token),
                        reason: format!("keep_alive: {reason:?}"),
                    });
                    if matches!(reason, redis_primitives::LeaseLoss::DeadlineReached) {
                        cx.actor.reached(situation::LEASE_EXPIRED_WHILE_PAUSED);
                    }
                    cx.actor.reached(situation::GUARD_CANCELLED_BODY);
                    let deadline_reached = loss_is_deadline(cx.actor, &reason);
                    cx.actor.ok(gid, gop(Some(GuardedResult::Cancelled { at, deadline_reached })));
                }
                None => {
                    cx.actor.reached(situation::GUARDED_BODY_COMPLETED);
                    cx.actor.ok(gid, gop(Some(GuardedResult::Completed)));
                }
            }
            cx.release(&lease).await;
        }
        Mode::Retry => {
            let attempts = cx.rng.random_range(2..=6u32);
            let deadline_ms = cx.rng.random_bool(0.3).then(|| cx.rng.random_range(50..=400u64));
            // Drawn from their own stream (the workload's draws stay as they
            // were): now and then a zero deadline (the first attempt is still
            // made, and nothing after it), and, with a deadline, a pause (a
            // GC, a descheduled thread) in the backoff after a refusal, so
            // the sleep ends past the deadline and no attempt may follow.
            let mut edges = cx.actor.rng_for(&format!("retry-edges-{}", cx.actor.now()));
            let deadline_ms = if edges.random_bool(0.1) { Some(0) } else { deadline_ms };
            // (Not after a zero deadline: no sleep follows its first attempt,
            // and the pause would land in whatever the client does next.)
            let stall_ms =
                deadline_ms.filter(|&d| d > 0 && edges.random_bool(0.3)).map(|d| edges.random_range(d / 2..=d + 50));
            // Half the time a low cap, so the doubling reaches it within a
            // few attempts (drawn last: the edges above stay as they were).
            let max_delay_ms = if edges.random_bool(0.5) { edges.random_range(5..=20) } else { 60 };
            // Now and then the first attempt is held at the server past the
            // response timeout: it fails with an error, which ends the retry
            // (drawn last, as above).
            let timeout = cx.actor.net().response_timeout.as_millis() as u64;
            let first_held = edges.random_bool(0.25).then(|| timeout + edges.random_range(1..=30));
            // With a deadline and no stall above, half the time a pause in
            // the first backoff aimed to end on the deadline's own
            // millisecond: the attempt that would follow starts exactly at
            // it, which a `>` where `>=` belongs lets through (drawn last).
            let to_deadline = deadline_ms.filter(|&d| d > 0 && stall_ms.is_none() && edges.random_bool(0.5));
            let attempts_nz = core::num::NonZeroU32::new(attempts).expect("at least 2");
            let base = Duration::from_millis(5);
            let Some(retry) =
                crate::scenarios::validation::retry(cx.actor, attempts_nz, base, Duration::from_millis(max_delay_ms))
            else {
                return Ok(());
            };
            let mut retry = retry.seeded(cx.actor.seed_for(&format!("retry-{}", cx.actor.now())));
            if let Some(d) = deadline_ms {
                retry = retry.deadline(Duration::from_millis(d));
            }
            // Reported only when it differs: what the retry says it will do.
            if retry.attempts().get() != attempts {
                cx.actor
                    .configured("Retry", &[("Retry::attempts", retry.attempts().to_string(), attempts.to_string())]);
            }
            let backoff_ms = Some((5, max_delay_ms));
            let rop = |token| Op::Retry { name: LOCK_NAME.into(), attempts, deadline_ms, token, backoff_ms };
            let rid = cx.actor.call(RETRY_RUN, rop(None));
            let started = cx.actor.now();
            if let Some(ms) = first_held {
                let key = cx.lock.key(LOCK_NAME)?;
                cx.actor.delay_next_request_mentioning(cx.w.lock_node, ms, &key);
            }
            let tries = std::rc::Rc::new(std::cell::Cell::new(0u32));
            let (actor, lock, ttl, w) = (cx.actor.clone(), cx.lock.clone(), cx.ttl, cx.w.clone());
            let t2 = tries.clone();
            let r = retry
                .run(move || {
                    let (actor, lock, w, t2) = (actor.clone(), lock.clone(), w.clone(), t2.clone());
                    async move {
                        t2.set(t2.get() + 1);
                        let op = |token, deadline| Op::Acquire {
                            name: LOCK_NAME.into(),
                            ttl_ms: w.plan.ttl_ms,
                            token,
                            deadline,
                        };
                        let id = actor.call(LOCK_ACQUIRE, op(None, None));
                        let r = lock.acquire(LOCK_NAME, ttl).await;
                        match &r {
                            Ok(Some(l)) => {
                                actor.ok(id, op(Some(l.token().get()), Some(actor.millis_of(l.local_deadline()))))
                            }
                            Ok(None) => {
                                actor.fail(id, op(None, None));
                                if let (Some(ms), 1) = (stall_ms, t2.get()) {
                                    actor.stall(ms, "in Retry::run's backoff after a refusal");
                                }
                                // Longer than the first backoff's cap (5 ms),
                                // or the policy gives up before sleeping.
                                let left = to_deadline.map(|d| (started + d).saturating_sub(actor.now()));
                                if let (Some(ms @ 6..), 1) = (left, t2.get()) {
                                    actor.stall(ms, "in Retry::run's backoff, until its deadline");
                                    actor.reached(situation::RETRY_PAUSED_TO_DEADLINE);
                                }
                            }
                            Err(e) => actor.errored(id, op(None, None), e),
                        }
                        r
                    }
                })
                .await;
            match r {
                Ok(Some(lease)) => {
                    *cx.holds += 1;
                    cx.actor.ok(rid, rop(Some(lease.token().get())));
                    if tries.get() >= 2 {
                        cx.actor.reached(situation::RETRY_ACQUIRED_AFTER_CONTENTION);
                    }
                    cx.maybe_workload_stall().await;
                    sleep_ms(cx.rng.random_range(cx.w.plan.hold_ms.0..=cx.w.plan.hold_ms.1)).await;
                    cx.write_if_trusted(&lease, None).await;
                    cx.release(&lease).await;
                }
                Ok(None) => cx.actor.fail(rid, rop(None)),
                Err(e) => cx.actor.errored(rid, rop(None), &e),
            }
        }
    }
    Ok(())
}

fn cx_now() -> Millis {
    crate::pause::sim_now().as_millis() as Millis
}
