//! The WATCH/MULTI experiment: why the rate limiters are Lua scripts.
//!
//! `cargo run --release --example watch_multi [callers] [limit]` starts its
//! own redis-server and lets `callers` concurrent tasks (default 100) ask for
//! one admission each against a limit of `limit` (default 5) per 60 s, three
//! ways, printing one line each:
//!
//! 1. [`WatchMultiLimiter`] on **one shared multiplexed connection**: `WATCH`
//!    state belongs to the connection, so the first `EXEC` clears everyone's
//!    watch and nearly everyone is admitted;
//! 2. the same limiter with **a connection per caller**: exact, but the
//!    losers of each race retry;
//! 3. [`SlidingWindowLog`] (one Lua script) on the shared connection: exact,
//!    no retries.
//!
//! It runs on a single-threaded runtime, so the callers start in step, as
//! in the reference experiment. On a multi-threaded runtime the shared
//! connection still overshoots, but by how much depends on scheduling
//! (from 100 down to none when the callers happen to run one after another);
//! the bug is that correctness depends on it at all.
//!
//! `tests/library/rate_limit.rs` runs this same code (it includes this file) and
//! asserts the three outcomes.

use core::time::Duration;
use std::sync::Arc;

use redis::aio::MultiplexedConnection;
use redis_primitives::rate_limit::{Limit, SlidingWindowLog};
use redis_primitives_naive::WatchMultiLimiter;
use redis_primitives_testkit::RedisServer;
use tokio::sync::Barrier;
use tokio::task::JoinSet;

/// What one way of limiting did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Figures {
    /// Callers admitted.
    pub admitted: u64,
    /// Transactions retried (always 0 for Lua).
    pub retries: u64,
    /// Members in the sorted set afterwards: what was really recorded.
    pub recorded: u64,
}

/// The three measurements, in the order printed.
#[derive(Debug, Clone, Copy)]
pub struct Experiment {
    /// Concurrent callers.
    pub callers: u64,
    /// The limit per window.
    pub limit: u64,
    /// `WatchMultiLimiter`, one shared multiplexed connection.
    pub shared: Figures,
    /// `WatchMultiLimiter`, a connection per caller.
    pub per_caller: Figures,
    /// `SlidingWindowLog`, one shared multiplexed connection.
    pub lua: Figures,
}

impl Experiment {
    /// Runs all three against `server`.
    pub async fn run(server: &RedisServer, callers: u64, limit: u64) -> Experiment {
        let limit_value = Limit::new(limit, Duration::from_secs(60)).expect("valid limit");
        let client = redis::Client::open(server.url()).expect("valid url");
        let shared_conn = connect(&client).await;

        let mut conns = Vec::new();
        for _ in 0..callers {
            conns.push(connect(&client).await);
        }
        let shared =
            watch_multi(&shared_conn, vec![shared_conn.clone(); callers as usize], limit_value, "shared").await;
        let per_caller = watch_multi(&shared_conn, conns, limit_value, "per-caller").await;
        let lua = lua(&shared_conn, callers, limit_value).await;
        Experiment { callers, limit, shared, per_caller, lua }
    }

    /// The three lines.
    pub fn lines(&self) -> [String; 3] {
        let line = |what: &str, f: &Figures| {
            format!(
                "{what:<46} {} callers, limit {}: admitted {:>3}, retries {:>4}, recorded {:>3}",
                self.callers, self.limit, f.admitted, f.retries, f.recorded
            )
        };
        [
            line("WATCH/MULTI, one shared multiplexed conn:", &self.shared),
            line("WATCH/MULTI, a connection per caller:", &self.per_caller),
            line("Lua sliding log, one shared multiplexed conn:", &self.lua),
        ]
    }
}

async fn connect(client: &redis::Client) -> MultiplexedConnection {
    client.get_multiplexed_async_connection().await.expect("connect to redis-server")
}

async fn recorded(conn: &MultiplexedConnection, key: &str) -> u64 {
    let mut conn = conn.clone();
    redis::cmd("ZCARD").arg(key).query_async(&mut conn).await.expect("ZCARD")
}

/// Every caller gets its own connection from `conns` (clones of one shared
/// connection, or distinct ones) and one `check`; all start together.
async fn watch_multi(
    admin: &MultiplexedConnection,
    conns: Vec<MultiplexedConnection>,
    limit: Limit,
    name: &str,
) -> Figures {
    let barrier = Arc::new(Barrier::new(conns.len()));
    let mut tasks = JoinSet::new();
    for conn in conns {
        let limiter = WatchMultiLimiter::new(conn, limit);
        let barrier = barrier.clone();
        let name = name.to_string();
        tasks.spawn(async move {
            barrier.wait().await;
            limiter.check(&name).await.expect("watch/multi check")
        });
    }
    let (mut admitted, mut retries) = (0, 0);
    while let Some(outcome) = tasks.join_next().await {
        let outcome = outcome.expect("task");
        admitted += u64::from(outcome.decision.is_allowed());
        retries += u64::from(outcome.retries);
    }
    let key = WatchMultiLimiter::new(admin.clone(), limit).key(name).expect("valid name");
    Figures { admitted, retries, recorded: recorded(admin, &key).await }
}

async fn lua(conn: &MultiplexedConnection, callers: u64, limit: Limit) -> Figures {
    let limiter = SlidingWindowLog::new(conn.clone(), limit);
    let barrier = Arc::new(Barrier::new(callers as usize));
    let mut tasks = JoinSet::new();
    for _ in 0..callers {
        let limiter = limiter.clone();
        let barrier = barrier.clone();
        tasks.spawn(async move {
            barrier.wait().await;
            limiter.check("lua").await.expect("sliding log check")
        });
    }
    let mut admitted = 0;
    while let Some(decision) = tasks.join_next().await {
        admitted += u64::from(decision.expect("task").is_allowed());
    }
    let key = limiter.key("lua").expect("valid name");
    Figures { admitted, retries: 0, recorded: recorded(conn, &key).await }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut args = std::env::args().skip(1);
    let callers = args.next().and_then(|a| a.parse().ok()).unwrap_or(100);
    let limit = args.next().and_then(|a| a.parse().ok()).unwrap_or(5);
    let server = RedisServer::start().unwrap_or_else(|e| panic!("{e}"));
    let experiment = Experiment::run(&server, callers, limit).await;
    for line in experiment.lines() {
        println!("{line}");
    }
}
