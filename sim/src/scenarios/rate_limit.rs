//! Rate-limit scenarios: `rate-limit`, `rate-limit-counter`,
//! `rate-limit-fixed-window`, `rate-limit-client-side`, `rate-limit-watch-multi`.
//!
//! Three client actors share one limited name (`api`, 5 requests per 1000 ms)
//! on one bridged redis-server. Each actor fires **bursts** of concurrent
//! requests on its one multiplexed connection (every request of a burst is a
//! task of the actor, so a process pause freezes them all), at seeded
//! moments chosen to hit the worst cases:
//!
//! - around each window boundary of the server clock (the epoch is a whole
//!   second, so boundaries fall at simulated multiples of 1000 ms), a burst
//!   just **before** it from one client and one just **after** it from
//!   another — the fixed window admits both, `2 × max` within milliseconds;
//! - one burst in the middle of each window;
//! - every burst has 5–8 requests in flight at once, which is what breaks the
//!   client-side window (all count before any records) and `WATCH`/`MULTI` on
//!   a shared connection (the first `EXEC` clears every caller's watch).
//!
//! The nemesis adds 0–2 faults (partitions, holds, latency, client and
//! server pauses). A request that times out is `info` and is not counted.
//!
//! Each decision is recorded with its **server time** (`Decision::at_ms`,
//! the Redis clock the limiter used, pinned by the bridge to simulated time)
//! and the `rate-limit` checker counts admissions in every window
//! `(t − 1000, t]` of that clock. The sliding log must never exceed 5; the
//! sliding counter must stay within its documented `2 × max − 1 = 9`, and
//! its actual worst window is measured (`admissions-per-window`).

use std::sync::Arc;

use core::time::Duration;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use redis_primitives::naive::{ClientSideWindow, NaiveFixedWindow, WatchMultiLimiter};
use redis_primitives::rate_limit::{Decision, Limit, SlidingWindowCounter, SlidingWindowLog};
use redis_primitives::OwnerSource;

use super::{outcome_from, Outcome};
use crate::checker::rate_limit::{self, Allowance};
use crate::history::{Admission, Op};
use crate::nemesis::{FaultClass, Profile, Schedule};
use crate::plan::{Burst as PlannedBurst, RateLimitPlan};
use crate::net::SimConnection;
use crate::servers::{SetupError, Servers};
use crate::stats::{self, Histograms};
use crate::world::{derive_seed, Actor, ActorResult, World, WorldConfig};

/// The limited name.
pub const NAME: &str = "api";
/// Requests per window.
pub const MAX: u64 = 5;
/// Window length (ms).
pub const WINDOW_MS: u64 = 1000;
const CLIENTS: usize = 3;
const LENGTH_MS: u64 = 3000;

/// Which limiter is under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// [`SlidingWindowLog`]: exact.
    Log,
    /// [`SlidingWindowCounter`]: approximate, bounded by `2 × max − 1`.
    Counter,
    /// [`NaiveFixedWindow`]: `INCR` + `EXPIRE`.
    FixedWindow,
    /// [`ClientSideWindow`]: trim, count and add in three round trips.
    ClientSide,
    /// [`WatchMultiLimiter`] on the actor's shared connection.
    WatchMulti,
}

enum Limiter {
    Log(SlidingWindowLog<SimConnection>),
    Counter(SlidingWindowCounter<SimConnection>),
    Fixed(NaiveFixedWindow<SimConnection>),
    ClientSide(ClientSideWindow<SimConnection>),
    WatchMulti(WatchMultiLimiter<SimConnection>),
}

impl Limiter {
    fn new(variant: Variant, conn: SimConnection, limit: Limit, seed: u64) -> Limiter {
        match variant {
            Variant::Log => Limiter::Log(SlidingWindowLog::new(conn, limit)),
            Variant::Counter => Limiter::Counter(SlidingWindowCounter::new(conn, limit)),
            Variant::FixedWindow => Limiter::Fixed(NaiveFixedWindow::new(conn, limit)),
            Variant::ClientSide => {
                Limiter::ClientSide(ClientSideWindow::new(conn, limit).members(OwnerSource::seeded(seed)))
            }
            // A bounded number of retries: on a connection of its own a loser
            // goes round again, and the simulation must end.
            Variant::WatchMulti => Limiter::WatchMulti(
                WatchMultiLimiter::new(conn, limit).members(OwnerSource::seeded(seed)).max_retries(50),
            ),
        }
    }

    async fn check(&self) -> redis_primitives::Result<Decision> {
        match self {
            Limiter::Log(l) => l.check(NAME).await,
            Limiter::Counter(l) => l.check(NAME).await,
            Limiter::Fixed(l) => l.check(NAME).await,
            Limiter::ClientSide(l) => l.check(NAME).await,
            Limiter::WatchMulti(l) => l.check(NAME).await.map(|o| o.decision),
        }
    }
}

/// One burst: `size` concurrent requests at simulated `at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Burst {
    at: u64,
    size: u32,
}

/// Bursts per client, drawn from the seed (see the module docs).
fn plan(seed: u64) -> Vec<Vec<Burst>> {
    let mut rng = StdRng::seed_from_u64(derive_seed(seed, "rate-limit-bursts"));
    let mut per_client = vec![Vec::new(); CLIENTS];
    let size = |rng: &mut StdRng| -> u32 { rng.random_range(5..=8) };
    for boundary in (WINDOW_MS..LENGTH_MS).step_by(WINDOW_MS as usize) {
        let before = rng.random_range(0..CLIENTS);
        let after = (before + rng.random_range(1..CLIENTS)) % CLIENTS;
        let b = Burst { at: boundary - rng.random_range(10..=150), size: size(&mut rng) };
        let a = Burst { at: boundary + rng.random_range(0..=150), size: size(&mut rng) };
        per_client[before].push(b);
        per_client[after].push(a);
    }
    for start in (0..LENGTH_MS).step_by(WINDOW_MS as usize) {
        let who = rng.random_range(0..CLIENTS);
        let b = Burst { at: start + rng.random_range(300..=700), size: size(&mut rng) };
        per_client[who].push(b);
    }
    for bursts in &mut per_client {
        bursts.sort_by_key(|b| b.at);
    }
    per_client
}

async fn one_request(actor: Actor, limiter: Arc<Limiter>, epoch_ms: u64, limit: u64, window_ms: u64) {
    let op = |admission, server_ms| Op::RateLimit {
        key: NAME.into(),
        limit,
        window_ms,
        admission,
        server_ms,
    };
    let id = actor.invoke(op(None, None));
    match limiter.check().await {
        Ok(d) => {
            let admission = match d {
                Decision::Allowed { .. } => Admission::Admitted,
                Decision::Denied { retry_after, .. } => {
                    Admission::Denied { retry_after_ms: Some(retry_after.as_millis() as u64) }
                }
            };
            actor.ok(id, op(Some(admission), Some(d.at_ms().saturating_sub(epoch_ms))));
        }
        Err(e) if e.outcome_is_unknown() => actor.info(id, op(None, None)),
        Err(e) => {
            actor.fail(id, op(None, None));
            actor.note(format!("rate-limit: {e}"));
        }
    }
}

async fn client(
    actor: Actor,
    variant: Variant,
    bursts: Vec<Burst>,
    epoch_ms: u64,
    (max, window_ms): (u64, u64),
) -> ActorResult {
    let limit = Limit::new(max, Duration::from_millis(window_ms))?;
    // One multiplexed connection per actor, shared by all its requests.
    let limiter = Arc::new(Limiter::new(variant, actor.connection(0), limit, actor.seed()));
    for burst in bursts {
        let now = actor.now();
        if burst.at > now {
            tokio::time::sleep(Duration::from_millis(burst.at - now)).await;
        }
        let mut tasks = Vec::new();
        for _ in 0..burst.size {
            tasks.push(actor.spawn(one_request(actor.clone(), Arc::clone(&limiter), epoch_ms, max, window_ms)));
        }
        for t in tasks {
            let _ = t.await;
        }
    }
    Ok(())
}

/// One seed of a rate-limit scenario.
pub fn run_variant(variant: Variant, servers: &mut Servers, seed: u64) -> Result<Outcome, SetupError> {
    let (plan, schedule) = seed_plan(seed);
    run_planned(variant, servers, seed, &plan, schedule)
}

/// The explicit form of a seed's run: its bursts, limit and window, and its
/// fault schedule (see `crate::plan`).
pub fn seed_plan(seed: u64) -> (RateLimitPlan, Schedule) {
    let mut profile = Profile::new(CLIENTS as u32, 1, LENGTH_MS);
    profile.classes = vec![
        FaultClass::Partition,
        FaultClass::Hold,
        FaultClass::Latency,
        FaultClass::ClientPause,
        FaultClass::ServerPause,
    ];
    profile.faults = (0, 2);
    profile.duration = (50, 600);
    profile.latency_ms = (5, 100);
    let schedule = Schedule::generate(seed, &profile);
    let mut bursts = Vec::new();
    for (i, per_client) in plan(seed).into_iter().enumerate() {
        bursts.extend(per_client.into_iter().map(|b| PlannedBurst { client: i as u32, at: b.at, size: b.size }));
    }
    (RateLimitPlan { clients: CLIENTS as u32, limit: MAX, window_ms: WINDOW_MS, bursts }, schedule)
}

/// Runs an explicit plan of a rate-limit scenario.
pub fn run_planned(
    variant: Variant,
    servers: &mut Servers,
    seed: u64,
    plan: &RateLimitPlan,
    schedule: Schedule,
) -> Result<Outcome, SetupError> {
    let config = WorldConfig::new(seed);
    let epoch_ms = config.epoch_unix_ms;
    let mut world = World::new(servers, config)?;
    for i in 0..plan.clients {
        let mut bursts: Vec<Burst> =
            plan.bursts.iter().filter(|b| b.client == i).map(|b| Burst { at: b.at, size: b.size }).collect();
        bursts.sort_by_key(|b| b.at);
        let limit = (plan.limit, plan.window_ms);
        world.actor(format!("client-{i}"), move |actor| client(actor, variant, bursts, epoch_ms, limit));
    }
    world.nemesis(schedule);
    let run = world.run()?;
    let mut outcome = outcome_from(&run, Vec::new());
    let allowance = match variant {
        // The bound documented (and proved) in src/rate_limit/sliding_counter.rs,
        // `SlidingWindowCounter::worst_case_admissions`.
        Variant::Counter => Allowance::UpTo((2 * plan.limit).saturating_sub(1)),
        _ => Allowance::Exact,
    };
    let report = rate_limit::check(&outcome.history, allowance);
    let mut h = Histograms::new();
    stats::record_admissions_per_window(&outcome.history, &mut h);
    outcome.violations = report.violations;
    outcome.histograms = h;
    Ok(outcome)
}

/// `rate-limit`.
pub fn run_log(servers: &mut Servers, seed: u64) -> Result<Outcome, SetupError> {
    run_variant(Variant::Log, servers, seed)
}

/// `rate-limit-counter`.
pub fn run_counter(servers: &mut Servers, seed: u64) -> Result<Outcome, SetupError> {
    run_variant(Variant::Counter, servers, seed)
}

/// `rate-limit-fixed-window`.
pub fn run_fixed_window(servers: &mut Servers, seed: u64) -> Result<Outcome, SetupError> {
    run_variant(Variant::FixedWindow, servers, seed)
}

/// `rate-limit-client-side`.
pub fn run_client_side(servers: &mut Servers, seed: u64) -> Result<Outcome, SetupError> {
    run_variant(Variant::ClientSide, servers, seed)
}

/// `rate-limit-watch-multi`.
pub fn run_watch_multi(servers: &mut Servers, seed: u64) -> Result<Outcome, SetupError> {
    run_variant(Variant::WatchMulti, servers, seed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bursts_straddle_every_boundary() {
        let p = plan(7);
        let all: Vec<Burst> = p.iter().flatten().copied().collect();
        for boundary in [1000u64, 2000] {
            assert!(all.iter().any(|b| b.at < boundary && b.at + 150 >= boundary));
            assert!(all.iter().any(|b| b.at >= boundary && b.at <= boundary + 150));
        }
        assert_eq!(plan(7), p);
    }
}
