//! Throughput of the primitives on one multiplexed connection, beside the
//! Redis-side ceiling measured in the same run.
//!
//! ```text
//! cargo run --release --example throughput [-- --seconds 3]
//! ```
//!
//! Starts its own redis-server, then measures, with 1 and with 50 operations
//! in flight on **one** `MultiplexedConnection`:
//! - lock acquire+release pairs per second (distinct names),
//! - sliding-log rate-limit decisions per second,
//! - fenced writes per second,
//!
//! and runs `redis-benchmark -P 16` on the acquire script via `EVALSHA` as the
//! ceiling: what one redis-server on this machine can execute of that script
//! when the client costs nothing. A pair is two scripts (acquire, release),
//! so `2 × pairs/s ÷ ceiling` is the share of the ceiling we reach.
//! The table is printed and written to `reports/throughput.md`.

use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use redis::aio::MultiplexedConnection;
use redis_primitives::rate_limit::{Limit, SlidingWindowLog};
use redis_primitives::{FencedStore, FencingToken, Lock, Ttl};
use redis_primitives_testkit::RedisServer;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[derive(Clone, Copy)]
enum Workload {
    LockPairs,
    Decisions,
    FencedWrites,
}

impl Workload {
    fn label(self) -> &'static str {
        match self {
            Workload::LockPairs => "lock acquire+release pairs/s",
            Workload::Decisions => "sliding-log decisions/s",
            Workload::FencedWrites => "fenced writes/s",
        }
    }
}

async fn run(conn: MultiplexedConnection, workload: Workload, in_flight: usize, seconds: f64) -> Result<f64, BoxError> {
    let lock = Lock::new(conn.clone());
    let store = FencedStore::new(conn.clone());
    let limiter = SlidingWindowLog::new(conn.clone(), Limit::new(1_000_000_000, Duration::from_secs(1))?);
    let ttl = Ttl::from_millis(60_000)?;
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for worker in 0..in_flight {
        let (lock, store, limiter) = (lock.clone(), store.clone(), limiter.clone());
        let (stop, done) = (Arc::clone(&stop), Arc::clone(&done));
        tasks.spawn(async move {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                match workload {
                    Workload::LockPairs => {
                        let name = format!("bench-{worker}-{i}");
                        let lease = lock.acquire(&name, ttl).await?.ok_or("distinct names never contend")?;
                        if !lock.release(&lease).await? {
                            return Err::<(), BoxError>("release failed".into());
                        }
                    }
                    Workload::Decisions => {
                        limiter.check(&format!("client-{}", i % 1000)).await?;
                    }
                    Workload::FencedWrites => {
                        store.write(&format!("doc-{worker}"), b"payload", FencingToken::new(i + 1)).await?;
                    }
                }
                i += 1;
                done.fetch_add(1, Ordering::Relaxed);
            }
            Ok(())
        });
    }
    // Warm up (script load, connection buffers), then count.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let start_count = done.load(Ordering::Relaxed);
    let start = Instant::now();
    tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
    let ops = done.load(Ordering::Relaxed) - start_count;
    let elapsed = start.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    while let Some(r) = tasks.join_next().await {
        r??;
    }
    Ok(ops as f64 / elapsed)
}

/// `redis-benchmark -P 16` of the acquire script via EVALSHA, ops/s.
fn evalsha_ceiling(server: &RedisServer, seconds: f64) -> Result<f64, BoxError> {
    let script = include_str!("../src/scripts/lock_acquire.lua");
    let sha = redis::Script::new(script).get_hash().to_string();
    let port = server.port().to_string();
    let load = Command::new("redis-cli").args(["-p", &port, "SCRIPT", "LOAD", script]).output()?;
    if String::from_utf8_lossy(&load.stdout).trim() != sha {
        return Err(format!("SCRIPT LOAD returned {:?}", String::from_utf8_lossy(&load.stdout)).into());
    }
    let requests = ((seconds * 150_000.0) as u64).max(100_000).to_string();
    let out = Command::new("redis-benchmark")
        .args(["-p", &port, "-P", "16", "-c", "50", "-n", &requests, "-r", "100000000", "-q"])
        .args(["EVALSHA", &sha, "2", "ceil:{__rand_int__}", "ceil:{__rand_int__}:fence", "owner", "60000"])
        .output()
        .map_err(|e| format!("redis-benchmark: {e} (install the redis-tools package)"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    // Progress lines end in '\r'; the summary is the last one:
    // "EVALSHA <args>: 123456.79 requests per second, p50=..."
    let summary = text.rsplit('\r').next().unwrap_or_default();
    let rps = summary
        .rsplit(": ")
        .next()
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse::<f64>().ok())
        .ok_or_else(|| format!("cannot parse redis-benchmark output: {text}"))?;
    Ok(rps)
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let seconds: f64 = match std::env::args().skip_while(|a| a != "--seconds").nth(1) {
        Some(s) => s.parse().map_err(|_| format!("--seconds expects a number, got {s:?}"))?,
        None => 3.0,
    };
    let server = RedisServer::start()?;
    let client = redis::Client::open(server.url())?;
    let conn = client.get_multiplexed_async_connection().await?;
    let ceiling = evalsha_ceiling(&server, seconds)?;
    server.command(&["FLUSHALL"])?;
    let reference = [
        ("lock acquire+release pairs/s", 41_000.0),
        ("sliding-log decisions/s", 59_000.0),
        ("fenced writes/s", 72_000.0),
    ];
    let mut rows = Vec::new();
    for workload in [Workload::LockPairs, Workload::Decisions, Workload::FencedWrites] {
        let one = run(conn.clone(), workload, 1, seconds).await?;
        let fifty = run(conn.clone(), workload, 50, seconds).await?;
        server.command(&["FLUSHALL"])?;
        let reference = reference.iter().find(|r| r.0 == workload.label()).map_or(0.0, |r| r.1);
        let scripts_per_op = if matches!(workload, Workload::LockPairs) { 2.0 } else { 1.0 };
        rows.push(format!(
            "| {} | {:.0} | {:.0} | {:.2}× | {:.0} % |",
            workload.label(),
            one,
            fifty,
            fifty / reference,
            100.0 * fifty * scripts_per_op / ceiling
        ));
        eprintln!("measured {}: {one:.0} (1 in flight), {fifty:.0} (50 in flight)", workload.label());
    }
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let table = format!(
        "# Throughput\n\nGenerated by `cargo run --release --example throughput` ({seconds} s per figure, \
         {cores} cores, client and redis-server on the same machine). One multiplexed connection.\n\n\
         Ceiling: `redis-benchmark -P 16 -c 50` of the acquire script via EVALSHA: **{ceiling:.0} scripts/s**.\n\n\
         | operation | 1 in flight | 50 in flight | vs reference (TS, 50 in flight) | share of EVALSHA ceiling (scripts/s) |\n\
         |---|---|---|---|---|\n{}\n\n\
         Reference figures (TypeScript + ioredis, same kind of machine): 41k pairs/s, 59k decisions/s, 72k writes/s.\n\
         A pair is two scripts (acquire, release), so its share of the ceiling counts 2 scripts per pair.\n",
        rows.join("\n")
    );
    println!("{table}");
    let out = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("reports/throughput.md");
    std::fs::write(&out, &table)?;
    eprintln!("written to {}", out.display());
    Ok(())
}
