//! Aiming rp-sim at your own code: a small lock written here, not taken
//! from the library, with the bug everyone writes first, found by the
//! harness.
//!
//! ```sh
//! cargo run --release -p redis-primitives-sim --example user_lock            # explore seeds 0..50
//! cargo run --release -p redis-primitives-sim --example user_lock -- --seeds 200
//! cargo run --release -p redis-primitives-sim --example user_lock -- --replay 7
//! cargo run --release -p redis-primitives-sim --example user_lock -- --fixed   # compare-and-delete: clean
//! ```
//!
//! `MyLock` is anything written against `redis::aio::ConnectionLike`: here
//! `SET NX PX` to acquire and a bare `DEL` to release. Three client actors
//! contend for it inside a deterministic simulation whose Redis is a real
//! redis-server, through process pauses, partitions and latency. Each actor
//! records what it does in the Jepsen vocabulary (invoke, then ok / fail /
//! info), as the lock family's operations (`LockOp`); the built-in
//! `mutual-exclusion` checker and a checker written here judge the history. A holder paused past its TTL wakes up and
//! releases, deleting the *next* holder's key, so a third client gets in
//! while the second still trusts its lease: both checkers report it, with
//! the seed, and `--replay SEED` reruns exactly that history (same digest).
//!
//! Only the lock, its clients and a checker are written here: the seeds run
//! through the harness's own runner (a `Trial` given to `explore_with`, one
//! job per CPU, the same result as one job), and `--replay` through
//! `redis_primitives_sim::replay`, which prints the seed's history, its
//! violations and its digest.
//!
//! Exit status: 0 when no seed violated anything, 1 when one did (the
//! expected result for this lock), 2 on a set-up error.

use std::process::ExitCode;

use core::time::Duration;
use rand::Rng;
use redis::aio::ConnectionLike;
use redis_primitives_sim::mutual_exclusion::{self, Policy};
use redis_primitives_sim::Invariant;
use redis_primitives_sim::LockOp;

use redis_primitives_sim::{
    explore_with, Actor, ActorResult, CheckError, Event, EventKind, ExploreOptions, FaultClass, FaultSpace, Jobs,
    Millis, Outcome, Progress, Servers, SetupError, Trial, Violation, World, WorldConfig,
};

/// The lock under test: written by "a user", with a bug.
#[derive(Clone)]
struct MyLock<C> {
    conn: C,
}

impl<C: ConnectionLike + Clone> MyLock<C> {
    /// `SET key owner NX PX ttl`: true if we got it.
    async fn acquire(&self, name: &str, owner: &str, ttl_ms: u64) -> redis::RedisResult<bool> {
        let mut conn = self.conn.clone();
        let set: Option<String> =
            redis::cmd("SET").arg(name).arg(owner).arg("NX").arg("PX").arg(ttl_ms).query_async(&mut conn).await?;
        Ok(set.is_some())
    }

    /// The bug: a bare `DEL`, no check that the key is still ours. With
    /// `fixed`, a compare-and-delete script instead.
    async fn release(&self, name: &str, owner: &str, fixed: bool) -> redis::RedisResult<()> {
        let mut conn = self.conn.clone();
        if fixed {
            let script = redis::Script::new(
                "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0",
            );
            script.key(name).arg(owner).invoke_async::<i64>(&mut conn).await.map(|_| ())
        } else {
            redis::cmd("DEL").arg(name).query_async(&mut conn).await
        }
    }
}

const NAME: &str = "my-lock";
const TTL_MS: u64 = 200;
const RUN_MS: Millis = 3000;
/// This example's own invariant, judged by `no_grant_over_trusted_lease`.
const NO_GRANT_OVER_A_TRUSTED_LEASE: Invariant = Invariant::new("no-grant-over-a-trusted-lease");

/// One client: acquire, hold for a while (sometimes past the TTL, or
/// paused), release; recorded as it goes.
async fn client(actor: Actor, fixed: bool) -> ActorResult {
    let lock = MyLock { conn: actor.connection(0) };
    let mut rng = actor.rng();
    let mut attempt = 0u64;
    while actor.now() < RUN_MS {
        // One owner value per attempt: a late release of an earlier lease
        // (sent before a timeout, executed after) must not match this one.
        attempt += 1;
        let owner = format!("{}-{attempt}", actor.name());
        let acquire = |deadline| LockOp::Acquire { name: NAME.into(), ttl_ms: TTL_MS, token: None, deadline };
        let id = actor.invoke(acquire(None));
        let sent = actor.now();
        match lock.acquire(NAME, &owner, TTL_MS).await {
            // A careful holder trusts its lease until TTL after the send.
            Ok(true) => actor.ok(id, acquire(Some(sent + TTL_MS))),
            Ok(false) => {
                actor.fail(id, acquire(None));
                tokio::time::sleep(Duration::from_millis(rng.random_range(5..40))).await;
                continue;
            }
            Err(_) => {
                // Outcome unknown (a timeout, a lost connection): back off.
                actor.info(id, acquire(None));
                tokio::time::sleep(Duration::from_millis(rng.random_range(5..40))).await;
                continue;
            }
        }
        if rng.random_bool(0.2) {
            // A GC pause inside the critical section.
            actor.stall(rng.random_range(150..400), "inside its critical section");
        }
        tokio::time::sleep(Duration::from_millis(rng.random_range(20..150))).await;
        let release = LockOp::Release { name: NAME.into(), token: None };
        let id = actor.invoke(release.clone());
        match lock.release(NAME, &owner, fixed).await {
            Ok(()) => actor.ok(id, release),
            Err(_) => actor.info(id, release),
        }
        tokio::time::sleep(Duration::from_millis(rng.random_range(5..40))).await;
    }
    Ok(())
}

/// A checker of our own, beside the built-in ones: a grant while another
/// client's lease is still trusted (granted, not yet released, deadline
/// ahead) is a violation. Written against the history alone.
fn no_grant_over_a_trusted_lease(events: &[Event]) -> Vec<Violation> {
    let mut held: Vec<(&str, Millis)> = Vec::new(); // (holder, trusted until)
    let mut out = Vec::new();
    for e in events {
        // The lock's operations come back typed, as recorded.
        match (e.op.family::<LockOp>(), e.kind) {
            // A grant whose reply came back after its own deadline (the
            // client was paused in between) is a stale success: it proves
            // nothing, and a careful holder does not trust it.
            (Some(LockOp::Acquire { deadline: Some(until), .. }), EventKind::Ok) if *until > e.time => {
                held.retain(|&(_, until)| until > e.time);
                if let Some((other, until_other)) = held.iter().find(|(p, _)| *p != e.process) {
                    out.push(Violation::new(
                        NO_GRANT_OVER_A_TRUSTED_LEASE,
                        Some(e.time),
                        format!(
                            "{} was granted {NAME} at {}ms while {other} trusted it until {until_other}ms",
                            e.process, e.time
                        ),
                    ));
                }
                held.push((e.process.as_str(), *until));
            }
            (Some(LockOp::Release { .. }), EventKind::Invoke) => held.retain(|(p, _)| *p != e.process),
            _ => {}
        }
    }
    out
}

/// One seed: the world, its faults, the run, the verdicts.
fn run(servers: &mut Servers, seed: u64, fixed: bool) -> Result<Outcome, SetupError> {
    let mut world = World::new(servers, WorldConfig::new(seed))?;
    for i in 0..3 {
        world.actor(format!("client-{i}"), move |actor| client(actor, fixed));
    }
    // Faults drawn from the seed: pauses, partitions and latency on the
    // clients, each with its undo, all healed before the run ends.
    // One to three faults of 100–1500 ms inside 10–90 % of the run: the
    // same fault generator the harness's own scenarios draw from.
    let faults = FaultSpace {
        count: (1, 3),
        duration_ms: (100, 1500),
        ..FaultSpace::new(&[FaultClass::ClientPause, FaultClass::Partition, FaultClass::Latency], 3)
    }
    .within(RUN_MS / 10, RUN_MS * 9 / 10);
    world.nemesis(faults.schedule(seed, 3, 1));
    // The history, its digest and schedule, and the checks every run gets;
    // then the built-in checker and ours.
    let mut outcome = Outcome::from_run(&world.run()?);
    let mut found = mutual_exclusion::check(&outcome.history, Policy::ForbidTrustedOverlap).violations;
    found.extend(no_grant_over_a_trusted_lease(&outcome.history));
    outcome.violations.extend(found);
    Ok(outcome)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value =
        |flag: &str| args.iter().position(|a| a == flag).and_then(|i| args.get(i + 1)).map(|v| v.parse::<u64>());
    // `--fixed`: the same lock with a compare-and-delete release, which the
    // same seeds find nothing wrong with.
    let fixed = args.iter().any(|a| a == "--fixed");
    let flag = if fixed { " --fixed" } else { "" };
    // The harness runs it like one of its own scenarios: jobs, progress,
    // the lowest violating seeds first, each with this replay command.
    let trial = Trial::new("user-lock", move |servers, seed| run(servers, seed, fixed)).replay_with(move |seed| {
        format!("cargo run --release -p redis-primitives-sim --example user_lock -- --replay {seed}{flag}")
    });
    let seeds = match (value("--replay"), value("--seeds")) {
        // One seed, its whole history printed, exit 1 if it violates something.
        (Some(Ok(seed)), _) => {
            return match redis_primitives_sim::replay(&trial, seed) {
                Ok(_) => ExitCode::SUCCESS,
                Err(CheckError::Violated { .. }) => ExitCode::from(1),
                Err(e) => {
                    eprintln!("user_lock: {e}");
                    ExitCode::from(2)
                }
            };
        }
        (Some(Err(e)), _) => {
            eprintln!("user_lock: --replay needs a seed: {e}");
            return ExitCode::from(2);
        }
        (None, None) => 50,
        (None, Some(Ok(n))) if n > 0 => n,
        (None, Some(_)) => {
            eprintln!("user_lock: --seeds needs a whole number above 0");
            return ExitCode::from(2);
        }
    };
    let options = ExploreOptions::new(0, seeds).jobs(Jobs::available()).progress(Progress::for_stderr());
    let ex = match explore_with(&trial, &mut Servers::new(), options) {
        Ok(ex) => ex,
        Err(e) => {
            eprintln!("user_lock: {e}");
            return ExitCode::from(2);
        }
    };
    for s in ex.violating.iter().take(3) {
        println!("seed {}: {}", s.seed, s.violations[0]);
        println!("  replay: {}", s.replay);
    }
    println!("{} of {seeds} seeds violated an invariant", ex.violating.len());
    if ex.violating.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
