//! Redlock scenarios: `redlock`, `redlock-no-validity`, `redlock-clock-jump`.
//!
//! Five bridged redis-servers are the independent masters; three client
//! actors contend for one name with the production
//! [`redis_primitives::redlock::Redlock`] (or the broken
//! [`redis_primitives::naive::NaiveRedlock`]): TTL 300 ms, a per-master
//! timeout of 250 ms (so a slow link yields late *yes* votes rather than
//! misses), default drift. A holder uses its lease until shortly before the
//! end of what it believes is its validity, then releases; the others retry
//! every 10–30 ms, so a lock that silently lapsed is taken at once.
//!
//! Each grant is recorded with its validity interval `[reply, valid_until)`
//! in simulated time, and the `redlock-mutual-exclusion` checker convicts
//! any overlap of two clients' intervals.
//!
//! - `redlock`: client-0's links are slow (100–130 ms each way) for the
//!   first 1.5 s, so its rounds take most of the TTL; the nemesis adds
//!   partitions, holds, latency, client and server pauses. The validity gate
//!   shortens client-0's trust to what the masters guarantee: no overlap.
//! - `redlock-no-validity`: the same, with the client that ignores the
//!   elapsed time and trusts "TTL from the reply": it trusts its lease for a
//!   round trip longer than the keys live, and another client takes them.
//! - `redlock-clock-jump`: the documented non-guarantee. Client-0 reaches
//!   only masters 0–2 (its links to 3 and 4 are cut), wins those three;
//!   masters 0 and 1 then step their clocks forward past the TTL, so its keys
//!   there expire at once; client-1 wins 0, 1, 3 and 4 — a second majority
//!   while client-0's validity still runs.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use core::time::Duration;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use redis_primitives::naive::NaiveRedlock;
use redis_primitives::redlock::{Acquisition, Redlock, RedlockConfig};
use redis_primitives::{OwnerSource, Ttl};
use tokio::time::Instant;

use super::{outcome_from, Outcome};
use crate::checker::redlock as checker;
use crate::history::Op;
use crate::nemesis::{Fault, FaultClass, FaultKind, Profile, Schedule, Target};
use crate::plan::{RedlockPlan, RedlockStart};
use crate::net::SimConnection;
use crate::servers::{SetupError, Servers};
use crate::stats::{self, Histograms};
use crate::world::{derive_seed, Actor, ActorResult, World, WorldConfig};

/// The lock name.
pub const NAME: &str = "job";
const MASTERS: usize = 5;
const CLIENTS: usize = 3;
const TTL_MS: u64 = 300;
const MASTER_TIMEOUT_MS: u64 = 250;
const LENGTH_MS: u64 = 3000;

/// Which Redlock, under which faults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// The production Redlock.
    Correct,
    /// `NaiveRedlock`: no validity gate.
    NoValidity,
    /// The production Redlock under a clock step on two of five masters.
    ClockJump,
}

enum Client {
    Correct(Redlock<SimConnection>),
    Naive(NaiveRedlock<SimConnection>),
}

/// A held lock: what to release, and until when it is trusted.
enum Held {
    Correct(redis_primitives::redlock::RedlockLease),
    Naive(redis_primitives::naive::NaiveRedlockLease),
}

impl Held {
    fn valid_until(&self) -> Instant {
        match self {
            Held::Correct(l) => l.valid_until(),
            Held::Naive(l) => l.valid_until(),
        }
    }
}

fn acquire_op(votes: Option<u32>, validity_ms: Option<u64>) -> Op {
    Op::RedlockAcquire {
        name: NAME.into(),
        masters: MASTERS as u32,
        quorum: (MASTERS / 2 + 1) as u32,
        votes,
        validity_ms,
    }
}

/// When a client starts contending.
#[derive(Debug, Clone, Copy)]
enum Start {
    /// At this simulated time.
    At(u64),
    /// Once client-0 has been granted the lock (or at the given time at the
    /// latest), plus a delay: the others arrive while it holds it, so they
    /// take the keys the moment they lapse on the masters.
    AfterFirstGrant { delay: u64, latest: u64 },
}

/// TTL, per-master timeout and end of attempts (ms) of one run.
#[derive(Debug, Clone, Copy)]
struct Timing {
    ttl_ms: u64,
    master_timeout_ms: u64,
    length_ms: u64,
}

async fn client(actor: Actor, variant: Variant, start: Start, first_grant: Arc<AtomicBool>, timing: Timing) -> ActorResult {
    let masters: Vec<SimConnection> = (0..MASTERS).map(|i| actor.connection(i)).collect();
    let config = RedlockConfig::new(Ttl::from_millis(timing.ttl_ms)?)
        .master_timeout(Duration::from_millis(timing.master_timeout_ms))
        .owners(OwnerSource::seeded(actor.seed()));
    let client = match variant {
        Variant::NoValidity => Client::Naive(NaiveRedlock::connect(masters, config).await?),
        _ => Client::Correct(Redlock::connect(masters, config).await?),
    };
    let mut rng = StdRng::seed_from_u64(actor.seed_for("redlock-work"));
    match start {
        Start::At(at) => {
            let now = actor.now();
            if at > now {
                tokio::time::sleep(Duration::from_millis(at - now)).await;
            }
        }
        Start::AfterFirstGrant { delay, latest } => {
            while !first_grant.load(Ordering::Acquire) && actor.now() < latest {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            tokio::time::sleep(Duration::from_millis(delay)).await;
        }
    }
    while actor.now() < timing.length_ms {
        let invoked = actor.now();
        let id = actor.invoke(acquire_op(None, None));
        let held = match &client {
            Client::Correct(r) => match r.acquire(NAME).await {
                Ok(Acquisition::Held(lease)) => Ok((lease.votes(), Held::Correct(lease))),
                Ok(Acquisition::Refused(refusal)) => Err(Some(refusal.votes)),
                Err(e) => {
                    actor.note(format!("redlock acquire: {e}"));
                    Err(None)
                }
            },
            Client::Naive(r) => match r.acquire(NAME).await {
                Ok(Some(lease)) => Ok((lease.votes(), Held::Naive(lease))),
                Ok(None) => Err(None),
                Err(e) => {
                    actor.note(format!("redlock acquire: {e}"));
                    Err(None)
                }
            },
        };
        match held {
            Ok((votes, held)) => {
                let until = actor.millis_of(held.valid_until());
                let validity = until.saturating_sub(invoked);
                actor.ok(id, acquire_op(Some(votes as u32), Some(validity)));
                if actor.index() == 0 {
                    first_grant.store(true, Ordering::Release);
                }
                // Work until shortly before the end of the believed validity.
                let now = actor.now();
                let work = until.saturating_sub(now).saturating_sub(rng.random_range(5..=30));
                if work > 0 {
                    tokio::time::sleep(Duration::from_millis(work)).await;
                }
                let rid = actor.invoke(Op::RedlockRelease { name: NAME.into() });
                match (&client, &held) {
                    (Client::Correct(r), Held::Correct(l)) => {
                        r.release(l).await;
                    }
                    (Client::Naive(r), Held::Naive(l)) => {
                        r.release(l).await;
                    }
                    _ => {}
                }
                actor.ok(rid, Op::RedlockRelease { name: NAME.into() });
            }
            // A refusal is definite: every master was asked to drop our key.
            Err(votes) => actor.fail(id, acquire_op(votes.map(|v| v as u32), None)),
        }
        tokio::time::sleep(Duration::from_millis(rng.random_range(10..=30))).await;
    }
    Ok(())
}

/// The faults of one seed, and when each client starts.
fn plan(variant: Variant, seed: u64) -> (Schedule, Vec<Start>) {
    let mut rng = StdRng::seed_from_u64(derive_seed(seed, "redlock-plan"));
    match variant {
        Variant::Correct | Variant::NoValidity => {
            // Client-0's links are slow from the start: its rounds take most
            // of the TTL. The others arrive once it holds the lock.
            let slow = Fault {
                at: 0,
                duration: 1500,
                kind: FaultKind::Latency { ms: rng.random_range(100..=130) },
                target: Target::Client(0),
            };
            let mut profile = Profile::new(CLIENTS as u32, MASTERS as u32, LENGTH_MS);
            profile.window = (1600, LENGTH_MS - 100);
            profile.faults = (0, 2);
            profile.duration = (50, 600);
            profile.classes = vec![
                FaultClass::Partition,
                FaultClass::Hold,
                FaultClass::Latency,
                FaultClass::ClientPause,
                FaultClass::ServerPause,
            ];
            let mut faults = vec![slow];
            faults.extend(Schedule::generate(seed, &profile).faults);
            let mut after = || Start::AfterFirstGrant { delay: rng.random_range(0..=40), latest: 1200 };
            let starts = vec![Start::At(0), after(), after()];
            (Schedule::of(faults), starts)
        }
        Variant::ClockJump => {
            // Client-0 cannot reach masters 3 and 4 while it acquires; once
            // it holds 0-2, masters 0 and 1 jump forward past the TTL.
            let cut = rng.random_range(400..=700);
            let jump_at = rng.random_range(60..=120);
            let offset = (TTL_MS + rng.random_range(100..=500)) as i64;
            let mut faults = Vec::new();
            for node in [3u32, 4] {
                faults.push(Fault { at: 0, duration: cut, kind: FaultKind::Partition, target: Target::Link { client: 0, node } });
            }
            for node in [0u32, 1] {
                faults.push(Fault {
                    at: jump_at,
                    duration: 1000,
                    kind: FaultKind::ClockStep { offset_ms: offset },
                    target: Target::Node(node),
                });
            }
            // Client-0 goes first; the others after the jump.
            let starts = vec![
                Start::At(0),
                Start::At(jump_at + rng.random_range(5..=40)),
                Start::At(jump_at + rng.random_range(5..=40)),
            ];
            (Schedule::of(faults), starts)
        }
    }
}

/// One seed of a Redlock scenario.
pub fn run_variant(variant: Variant, servers: &mut Servers, seed: u64) -> Result<Outcome, SetupError> {
    let (plan, schedule) = seed_plan(variant, seed);
    run_planned(variant, servers, seed, &plan, schedule)
}

/// The explicit form of a seed's run: start times, timing and the fault
/// schedule (see `crate::plan`).
pub fn seed_plan(variant: Variant, seed: u64) -> (RedlockPlan, Schedule) {
    let (schedule, starts) = plan(variant, seed);
    let starts = starts
        .into_iter()
        .map(|s| match s {
            Start::At(at) => RedlockStart::At(at),
            Start::AfterFirstGrant { delay, latest } => RedlockStart::AfterFirstGrant { delay, latest },
        })
        .collect();
    let plan = RedlockPlan { starts, ttl_ms: TTL_MS, master_timeout_ms: MASTER_TIMEOUT_MS, length_ms: LENGTH_MS };
    (plan, schedule)
}

/// Runs an explicit plan of a Redlock scenario.
pub fn run_planned(
    variant: Variant,
    servers: &mut Servers,
    seed: u64,
    plan: &RedlockPlan,
    schedule: Schedule,
) -> Result<Outcome, SetupError> {
    let timing = Timing { ttl_ms: plan.ttl_ms, master_timeout_ms: plan.master_timeout_ms, length_ms: plan.length_ms };
    let config = WorldConfig::new(seed).nodes(MASTERS);
    let mut world = World::new(servers, config)?;
    let first_grant = Arc::new(AtomicBool::new(false));
    for (i, start) in plan.starts.iter().enumerate() {
        let start = match *start {
            RedlockStart::At(at) => Start::At(at),
            RedlockStart::AfterFirstGrant { delay, latest } => Start::AfterFirstGrant { delay, latest },
        };
        let flag = Arc::clone(&first_grant);
        world.actor(format!("client-{i}"), move |actor| client(actor, variant, start, flag, timing));
    }
    world.nemesis(schedule);
    let run = world.run()?;
    let mut outcome = outcome_from(&run, Vec::new());
    outcome.violations = checker::check(&outcome.history);
    let mut h = Histograms::new();
    stats::record_acquire_latency(&outcome.history, &mut h);
    outcome.histograms = h;
    Ok(outcome)
}

/// `redlock`.
pub fn run_correct(servers: &mut Servers, seed: u64) -> Result<Outcome, SetupError> {
    run_variant(Variant::Correct, servers, seed)
}

/// `redlock-no-validity`.
pub fn run_no_validity(servers: &mut Servers, seed: u64) -> Result<Outcome, SetupError> {
    run_variant(Variant::NoValidity, servers, seed)
}

/// `redlock-clock-jump`.
pub fn run_clock_jump(servers: &mut Servers, seed: u64) -> Result<Outcome, SetupError> {
    run_variant(Variant::ClockJump, servers, seed)
}
