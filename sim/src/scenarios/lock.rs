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
//! 3. set the fault schedule: generated from the seed within a [`Profile`],
//!    plus any fault the scenario always needs, or given explicitly
//!    (property tests shrink explicit schedules);
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

use core::time::Duration;
use rand::{Rng, SeedableRng};
use redis_primitives::naive::{NaiveLock, UnfencedStore};
use redis_primitives::{FencedStore, Lock, OwnerSource, Ttl, WriteOutcome};

use super::Outcome;
use crate::checker::mutual_exclusion::{self, Policy};
use crate::checker::{fencing_tokens, stale_overwrite};
use crate::history::{Op, WriteResult};
use crate::nemesis::{Fault, FaultClass, Profile, Schedule};
use crate::net::SimConnection;
use crate::servers::{Servers, SetupError};
use crate::stats::{self, Histograms, UNSAFE};
use crate::world::{Actor, ActorResult, World, WorldConfig};

/// The lock name every client contends for.
pub const LOCK_NAME: &str = "resource";
/// The key the clients write.
pub const RESOURCE_KEY: &str = "resource";
/// How the workload's self-inflicted stall is noted in the history.
const STALL_NOTE: &str = "stalls for";

/// Which lock the clients use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockKind {
    /// `redis_primitives::Lock`: fencing token, compare-and-delete release.
    Fenced,
    /// `redis_primitives::naive::NaiveLock`: `SET NX PX`, bare `DEL`, no token.
    Naive,
}

/// Which resource the clients write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreKind {
    /// `FencedStore`: refuses tokens lower than the highest accepted.
    Fenced,
    /// `UnfencedStore`: plain `SET`, last write wins.
    Unfenced,
}

/// The lock workload's settings (see the module docs).
#[derive(Debug, Clone)]
pub struct LockWorkload {
    /// Number of contending clients.
    pub clients: u32,
    /// Redis nodes in the world.
    pub nodes: usize,
    /// Node holding the lock.
    pub lock_node: usize,
    /// Node holding the resource (a different node models a resource that
    /// survives the lock server's failures).
    pub store_node: usize,
    /// Clients start no new attempt after this (simulated ms).
    pub length_ms: u64,
    /// Lease TTL.
    pub ttl_ms: u64,
    /// Hold time range (ms), drawn per hold.
    pub hold_ms: (u64, u64),
    /// Time between attempts (ms), drawn per attempt.
    pub think_ms: (u64, u64),
    /// Length of the stall one client takes inside a critical section (0: none).
    pub stall_ms: u64,
    /// The lock used.
    pub lock: LockKind,
    /// The resource written.
    pub store: StoreKind,
    /// Whether a holder checks its local deadline before writing (a careful
    /// client) or writes regardless (relying on fencing alone).
    pub check_deadline: bool,
    /// Generated faults.
    pub profile: Profile,
    /// Faults every seed gets, on top of the generated ones.
    pub always: Vec<Fault>,
    /// Which lock overlaps are violations.
    pub policy: Policy,
}

impl LockWorkload {
    /// The `lock` scenario's settings.
    pub fn lock() -> LockWorkload {
        let length_ms = 3000;
        LockWorkload {
            clients: 3,
            nodes: 1,
            lock_node: 0,
            store_node: 0,
            length_ms,
            ttl_ms: 300,
            hold_ms: (20, 450),
            think_ms: (5, 80),
            stall_ms: 900,
            lock: LockKind::Fenced,
            store: StoreKind::Fenced,
            check_deadline: true,
            profile: Profile::new(3, 1, length_ms).classes(&[
                FaultClass::ClientPause,
                FaultClass::Partition,
                FaultClass::PartitionOneWay,
                FaultClass::Hold,
                FaultClass::Latency,
                FaultClass::ServerPause,
            ]),
            always: Vec::new(),
            policy: Policy::ForbidTrustedOverlap,
        }
    }

    /// The schedule a seed gets: generated faults plus the fixed ones.
    pub fn schedule(&self, seed: u64) -> Schedule {
        let mut s = Schedule::generate(seed, &self.profile);
        s.faults.extend(self.always.iter().copied());
        s
    }

    /// Runs one seed with its generated schedule.
    pub fn run(&self, servers: &mut Servers, seed: u64) -> Result<Outcome, SetupError> {
        self.run_with(servers, seed, self.schedule(seed))
    }

    /// Runs one seed with an explicit schedule (property tests).
    pub fn run_with(&self, servers: &mut Servers, seed: u64, schedule: Schedule) -> Result<Outcome, SetupError> {
        let stall = (self.stall_ms > 0).then(|| self.stall_plan(seed));
        self.run_exact(servers, seed, schedule, stall)
    }

    /// Which client stalls, and in which of its holds (1-based): seeded.
    pub fn stall_plan(&self, seed: u64) -> (u32, u32) {
        let mut rng = rand::rngs::StdRng::seed_from_u64(crate::world::derive_seed(seed, "stall"));
        (rng.random_range(0..self.clients.max(1)), rng.random_range(1..=3u32))
    }

    /// Runs with an explicit schedule and stall: `stall = Some((client,
    /// hold))` makes that client stall `stall_ms` inside that hold (explicit
    /// plans, see `crate::plan`).
    pub fn run_exact(
        &self,
        servers: &mut Servers,
        seed: u64,
        schedule: Schedule,
        stall: Option<(u32, u32)>,
    ) -> Result<Outcome, SetupError> {
        let mut world = World::new(servers, WorldConfig::new(seed).nodes(self.nodes))?;
        for i in 0..self.clients {
            let w = self.clone();
            let stall_at = stall.filter(|(c, _)| *c == i && self.stall_ms > 0).map(|(_, hold)| hold);
            world.actor(format!("client-{i}"), move |actor| client(actor, w, stall_at));
        }
        // The reader: once every fault has healed. Writes still in flight
        // then are fine: the checker compares the final value only with
        // writes that completed before the read was sent.
        let last_fault = schedule.faults.iter().map(Fault::end).max().unwrap_or(0);
        let read_at = (self.length_ms + 500).max(last_fault + 200);
        let w = self.clone();
        world.actor("reader", move |actor| reader(actor, w, read_at));
        world.nemesis(schedule.clone());
        let run = world.run()?;
        // The workload's own stall is a fault too: list it with the schedule.
        let stalls = run
            .history
            .events()
            .into_iter()
            .filter_map(|e| match &e.op {
                Op::Note { text } if text.starts_with(STALL_NOTE) => Some((
                    e.time,
                    format!("at {}ms for {}ms: {} stalls inside its critical section (workload), then resumes", e.time, self.stall_ms, e.process),
                )),
                _ => None,
            })
            .collect();
        let mut outcome = super::outcome_from(&run, stalls);
        let me = mutual_exclusion::check(&outcome.history, self.policy);
        outcome.violations.extend(fencing_tokens::check(&outcome.history));
        outcome.violations.extend(me.violations.iter().cloned());
        outcome.violations.extend(stale_overwrite::check(&outcome.history));
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

/// `lock` for the registry.
pub fn run(servers: &mut Servers, seed: u64) -> Result<Outcome, SetupError> {
    LockWorkload::lock().run(servers, seed)
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
    let lock = match w.lock {
        LockKind::Fenced => {
            AnyLock::Fenced(Lock::builder(lock_conn).owners(OwnerSource::seeded(actor.seed())).build()?)
        }
        LockKind::Naive => AnyLock::Naive(NaiveLock::new(lock_conn)),
    };
    let fenced = FencedStore::new(store_conn.clone());
    let unfenced = UnfencedStore::new(store_conn);
    let ttl = Ttl::from_millis(w.ttl_ms)?;
    let mut rng = actor.rng();
    let mut holds = 0u32;
    let mut writes = 0u32;

    while actor.now() < w.length_ms {
        let acquire_op = |token, deadline| Op::Acquire { name: LOCK_NAME.into(), ttl_ms: w.ttl_ms, token, deadline };
        let id = actor.invoke(acquire_op(None, None));
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
            AnyLock::Naive(l) => l.acquire(LOCK_NAME, ttl).await.map(|ok| ok.then_some((None, sent + w.ttl_ms, Held::Naive))),
        };
        let (token, deadline, held) = match got {
            Ok(Some(x)) => x,
            Ok(None) => {
                actor.fail(id, acquire_op(None, None));
                sleep_ms(draw(&mut rng, w.think_ms)).await;
                continue;
            }
            Err(e) => {
                actor.info(id, acquire_op(None, None));
                actor.note(format!("acquire: {e}"));
                sleep_ms(draw(&mut rng, w.think_ms)).await;
                continue;
            }
        };
        actor.ok(id, acquire_op(token, Some(deadline)));
        holds += 1;

        // The critical section: work, perhaps with a stall in the middle.
        if stall_at == Some(holds) {
            actor.note(format!("{STALL_NOTE} {}ms inside its critical section", w.stall_ms));
            actor.pause().pause_for(Duration::from_millis(w.stall_ms));
        }
        sleep_ms(draw(&mut rng, w.hold_ms)).await;

        let trusted = match &held {
            Held::Fenced(lease) => lease.is_trusted(),
            Held::Naive => true,
        };
        if w.check_deadline && !trusted {
            actor.observe(Op::LeaseLost {
                name: LOCK_NAME.into(),
                token,
                reason: "local deadline passed before the write".into(),
            });
            sleep_ms(draw(&mut rng, w.think_ms)).await;
            continue;
        }

        writes += 1;
        let value = format!("{}-{writes}", actor.name());
        write(&actor, &w, &fenced, &unfenced, &value, token).await;

        let release_op = Op::Release { name: LOCK_NAME.into(), token };
        let id = actor.invoke(release_op.clone());
        let released = match (&lock, &held) {
            (AnyLock::Fenced(l), Held::Fenced(lease)) => l.release(lease).await,
            (AnyLock::Naive(l), _) => l.release(LOCK_NAME).await,
            (AnyLock::Fenced(_), Held::Naive) => Ok(false),
        };
        match released {
            Ok(true) => actor.ok(id, release_op),
            Ok(false) => actor.fail(id, release_op),
            Err(_) => actor.info(id, release_op),
        }
        sleep_ms(draw(&mut rng, w.think_ms)).await;
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
    let id = actor.invoke(op(None));
    match (w.store, token) {
        (StoreKind::Fenced, Some(t)) => match fenced.write(RESOURCE_KEY, value, redis_primitives::FencingToken::new(t)).await {
            Ok(WriteOutcome::Accepted) => actor.ok(id, op(Some(WriteResult::Accepted))),
            Ok(WriteOutcome::Rejected { highest_seen, .. }) => {
                actor.ok(id, op(Some(WriteResult::Rejected { highest_seen: highest_seen.get() })))
            }
            Err(_) => actor.info(id, op(None)),
        },
        _ => match unfenced.write(RESOURCE_KEY, value).await {
            Ok(()) => actor.ok(id, op(Some(WriteResult::Accepted))),
            Err(_) => actor.info(id, op(None)),
        },
    }
}

async fn reader(actor: Actor, w: LockWorkload, read_at: u64) -> ActorResult {
    let now = actor.now();
    if read_at > now {
        sleep_ms(read_at - now).await;
    }
    let conn = actor.connection(w.store_node);
    let op = |value, token| Op::Read { key: RESOURCE_KEY.into(), value, token };
    let id = actor.invoke(op(None, None));
    match w.store {
        StoreKind::Fenced => match FencedStore::new(conn).read(RESOURCE_KEY).await {
            Ok(Some(s)) => actor.ok(id, op(Some(String::from_utf8_lossy(&s.value).into_owned()), Some(s.token.get()))),
            Ok(None) => actor.ok(id, op(None, None)),
            Err(_) => actor.info(id, op(None, None)),
        },
        StoreKind::Unfenced => match UnfencedStore::new(conn).read(RESOURCE_KEY).await {
            Ok(v) => actor.ok(id, op(v.map(|b| String::from_utf8_lossy(&b).into_owned()), None)),
            Err(_) => actor.info(id, op(None, None)),
        },
    }
    Ok(())
}
