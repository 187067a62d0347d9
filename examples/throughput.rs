//! Throughput of the primitives on one multiplexed connection, each beside
//! what a user would otherwise write and the Redis-side ceilings, all
//! measured in the same run.
//!
//! ```text
//! cargo run --release --example throughput [-- --seconds 2 --rounds 3 --pinned]
//! ```
//!
//! Starts its own redis-server, then, for `--rounds` rounds (the order of
//! the two sides alternating from round to round), measures with 1 and with
//! 50 operations in flight on **one** `MultiplexedConnection`:
//!
//! | this crate | the floor beside it |
//! |---|---|
//! | `Lock` acquire + release pairs (fenced) | `SET key owner NX PX ttl` + the compare-and-delete script (unfenced) |
//! | `SlidingWindowLog` decisions | the textbook one-script log (`ZREMRANGEBYSCORE`, `ZCARD`, `ZADD`, `PEXPIRE`) |
//! | `SlidingWindowCounter` decisions | `NaiveFixedWindow` (`INCR` + `EXPIRE`) |
//! | `FencedStore` writes | a plain `SET` (`UnfencedStore`) |
//!
//! and, with `redis-benchmark -P 16 -c 50`, the ceilings: the acquire
//! script via `EVALSHA`, and a plain `SET`. Every figure is min / median /
//! max over the rounds; a ratio is the median of the per-round ratios (both
//! sides of a round measured back to back), never a division by a figure
//! from another run. With `--pinned`, the 1-in-flight pairs are measured a
//! second time with client and server on one core (`taskset -c 0`), which
//! shows the client's own cost rather than the machine's wake-up latency.
//! The table is printed and written to `reports/throughput.md`. Check that
//! the machine is otherwise idle (`uptime`) first.

use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use redis::aio::MultiplexedConnection;
use redis_primitives::naive::{NaiveFixedWindow, UnfencedStore};
use redis_primitives::rate_limit::{Limit, SlidingWindowCounter, SlidingWindowLog};
use redis_primitives::{FencedStore, FencingToken, Lock, Ttl};
use redis_primitives_testkit::RedisServer;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// What a user writes without a fencing token: the compare-and-delete
/// release every Redis lock tutorial shows.
const COMPARE_AND_DELETE: &str =
    "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end";

/// The textbook sliding-window log: trim, count, add, expire, in one script.
const TEXTBOOK_LOG: &str = "
redis.call('ZREMRANGEBYSCORE', KEYS[1], 0, tonumber(ARGV[1]) - tonumber(ARGV[2]))
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[3]) then
  redis.call('ZADD', KEYS[1], ARGV[1], ARGV[4])
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0";

/// One side of a comparison.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Workload {
    LockPairs,
    UnfencedPairs,
    LogDecisions,
    TextbookLog,
    CounterDecisions,
    FixedWindow,
    FencedWrites,
    PlainSet,
}

/// The four comparisons: (this crate, the floor, label, scripts per op of
/// this crate's side, for its share of the EVALSHA ceiling).
const PAIRS: [(Workload, Workload, &str, &str, f64); 4] = [
    (
        Workload::LockPairs,
        Workload::UnfencedPairs,
        "lock acquire+release pairs/s",
        "`SET NX PX` + compare-and-delete (unfenced)",
        2.0,
    ),
    (Workload::LogDecisions, Workload::TextbookLog, "sliding-log decisions/s", "textbook one-script log", 1.0),
    (
        Workload::CounterDecisions,
        Workload::FixedWindow,
        "sliding-counter decisions/s",
        "`NaiveFixedWindow` (`INCR` + `EXPIRE`)",
        1.0,
    ),
    (Workload::FencedWrites, Workload::PlainSet, "fenced writes/s", "plain `SET`", 1.0),
];

/// Operations per second of `workload` with `in_flight` tasks on `conn`.
async fn run(conn: MultiplexedConnection, workload: Workload, in_flight: usize, seconds: f64) -> Result<f64, BoxError> {
    // A limit nobody reaches: every decision does the whole work.
    let limit = Limit::new(1_000_000_000, Duration::from_secs(1))?;
    let lock = Lock::new(conn.clone());
    let store = FencedStore::new(conn.clone());
    let plain = UnfencedStore::new(conn.clone());
    let log = SlidingWindowLog::new(conn.clone(), limit);
    let counter = SlidingWindowCounter::new(conn.clone(), limit);
    let fixed = NaiveFixedWindow::new(conn.clone(), limit);
    let cad = redis::Script::new(COMPARE_AND_DELETE);
    let textbook = redis::Script::new(TEXTBOOK_LOG);
    let ttl = Ttl::from_millis(60_000)?;
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for worker in 0..in_flight {
        let (lock, store, plain, log, counter, fixed) =
            (lock.clone(), store.clone(), plain.clone(), log.clone(), counter.clone(), fixed.clone());
        let (cad, textbook, mut conn) = (cad.clone(), textbook.clone(), conn.clone());
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
                    Workload::UnfencedPairs => {
                        let (key, owner) = (format!("floor-{worker}-{i}"), format!("owner-{worker}-{i}"));
                        let set: Option<String> = redis::cmd("SET")
                            .arg(&key)
                            .arg(&owner)
                            .arg("NX")
                            .arg("PX")
                            .arg(60_000)
                            .query_async(&mut conn)
                            .await?;
                        set.ok_or("distinct names never contend")?;
                        let deleted: i64 = cad.key(&key).arg(&owner).invoke_async(&mut conn).await?;
                        if deleted != 1 {
                            return Err("compare-and-delete failed".into());
                        }
                    }
                    Workload::LogDecisions => {
                        log.check(&format!("client-{}", i % 1000)).await?;
                    }
                    Workload::TextbookLog => {
                        // The textbook passes the client's clock and a unique member.
                        let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis() as u64;
                        let _: i64 = textbook
                            .key(format!("textbook:client-{}", i % 1000))
                            .arg(now)
                            .arg(1000)
                            .arg(1_000_000_000u64)
                            .arg(format!("{now}-{worker}-{i}"))
                            .invoke_async(&mut conn)
                            .await?;
                    }
                    Workload::CounterDecisions => {
                        counter.check(&format!("client-{}", i % 1000)).await?;
                    }
                    Workload::FixedWindow => {
                        fixed.check(&format!("client-{}", i % 1000)).await?;
                    }
                    Workload::FencedWrites => {
                        store.write(&format!("doc-{worker}"), b"payload", FencingToken::new(i + 1)).await?;
                    }
                    Workload::PlainSet => {
                        plain.write(&format!("plain-{worker}"), b"payload").await?;
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

/// Requests per second `redis-benchmark -P 16 -c 50` reports for `args`.
fn benchmark(server: &RedisServer, seconds: f64, args: &[&str]) -> Result<f64, BoxError> {
    let port = server.port().to_string();
    let requests = ((seconds * 300_000.0) as u64).max(100_000).to_string();
    let out = Command::new("redis-benchmark")
        .args(["-p", &port, "-P", "16", "-c", "50", "-n", &requests, "-r", "100000000", "-q"])
        .args(args)
        .output()
        .map_err(|e| format!("redis-benchmark: {e} (install the redis-tools package)"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    // Progress lines end in '\r'; the summary is the last one:
    // "<command>: 123456.79 requests per second, p50=..."
    let summary = text.rsplit('\r').next().unwrap_or_default();
    summary
        .split("requests per second")
        .next()
        .and_then(|head| head.rsplit(": ").next())
        .and_then(|n| n.trim().parse::<f64>().ok())
        .ok_or_else(|| format!("cannot parse redis-benchmark output: {text}").into())
}

/// The acquire script's `EVALSHA` ceiling, scripts/s.
fn evalsha_ceiling(server: &RedisServer, seconds: f64) -> Result<f64, BoxError> {
    let script = include_str!("../src/scripts/lock_acquire.lua");
    let sha = redis::Script::new(script).get_hash().to_string();
    let loaded = server.command(&["SCRIPT", "LOAD", script])?;
    if !loaded.contains(&sha) {
        return Err(format!("SCRIPT LOAD returned {loaded:?}").into());
    }
    benchmark(
        server,
        seconds,
        &["EVALSHA", &sha, "2", "ceil:{__rand_int__}", "ceil:{__rand_int__}:fence", "owner", "60000"],
    )
}

/// Min, median (lower, a measured value) and max.
fn spread(values: &[f64]) -> (f64, f64, f64) {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    (v[0], v[(v.len() - 1) / 2], v[v.len() - 1])
}

fn fmt3((lo, mid, hi): (f64, f64, f64)) -> String {
    format!("{lo:.0} / **{mid:.0}** / {hi:.0}")
}

/// Per-round figures of one comparison at one in-flight count.
#[derive(Default, Clone)]
struct Rounds {
    ours: Vec<f64>,
    floor: Vec<f64>,
}

impl Rounds {
    fn ratio(&self) -> (f64, f64, f64) {
        let r: Vec<f64> = self.ours.iter().zip(&self.floor).map(|(a, b)| a / b).collect();
        spread(&r)
    }
}

/// Runs every comparison at `in_flight` for `rounds` rounds, alternating
/// which side goes first.
async fn compare(
    server: &RedisServer,
    conn: &MultiplexedConnection,
    in_flight: usize,
    seconds: f64,
    rounds: usize,
) -> Result<Vec<Rounds>, BoxError> {
    let mut out = vec![Rounds::default(); PAIRS.len()];
    for round in 0..rounds {
        for (k, (ours, floor, label, _, _)) in PAIRS.iter().enumerate() {
            let (first, second) = if round % 2 == 0 { (*ours, *floor) } else { (*floor, *ours) };
            let a = run(conn.clone(), first, in_flight, seconds).await?;
            server.command(&["FLUSHALL"])?;
            let b = run(conn.clone(), second, in_flight, seconds).await?;
            server.command(&["FLUSHALL"])?;
            let (o, f) = if round % 2 == 0 { (a, b) } else { (b, a) };
            eprintln!("round {}: {label} at {in_flight} in flight: {o:.0} (this crate), {f:.0} (floor)", round + 1);
            out[k].ours.push(o);
            out[k].floor.push(f);
        }
    }
    Ok(out)
}

struct Args {
    seconds: f64,
    rounds: usize,
    pinned: bool,
    child: bool,
}

fn args() -> Result<Args, BoxError> {
    let mut a = Args { seconds: 2.0, rounds: 3, pinned: false, child: false };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--seconds" => {
                let v = it.next().ok_or("--seconds expects a number")?;
                a.seconds = v.parse().map_err(|_| format!("--seconds expects a number, got {v:?}"))?;
                if !a.seconds.is_finite() || a.seconds <= 0.0 {
                    return Err("--seconds must be a positive number".into());
                }
            }
            "--rounds" => {
                let v = it.next().ok_or("--rounds expects a count")?;
                a.rounds = v.parse().map_err(|_| format!("--rounds expects a count, got {v:?}"))?;
                if a.rounds == 0 {
                    return Err("--rounds must be at least 1".into());
                }
            }
            "--pinned" => a.pinned = true,
            // Internal: the pinned half, run under `taskset` by the parent.
            "--pinned-child" => a.child = true,
            other => return Err(format!("unknown argument {other:?} (--seconds S, --rounds N, --pinned)").into()),
        }
    }
    Ok(a)
}

/// Reruns this program under `taskset -c 0` for the 1-in-flight figures.
fn pinned(a: &Args) -> Result<Vec<Rounds>, BoxError> {
    let exe = std::env::current_exe()?;
    let out = Command::new("taskset")
        .arg("-c")
        .arg("0")
        .arg(exe)
        .args(["--pinned-child", "--seconds", &a.seconds.to_string(), "--rounds", &a.rounds.to_string()])
        .output()
        .map_err(|e| format!("taskset: {e} (util-linux)"))?;
    if !out.status.success() {
        return Err(format!("the pinned run failed: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    let mut rounds = vec![Rounds::default(); PAIRS.len()];
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let mut w = line.split_whitespace();
        if let (Some("PINNED"), Some(k), Some(o), Some(f)) = (w.next(), w.next(), w.next(), w.next()) {
            let k: usize = k.parse()?;
            rounds[k].ours.push(o.parse()?);
            rounds[k].floor.push(f.parse()?);
        }
    }
    if rounds.iter().any(|r| r.ours.len() != a.rounds) {
        return Err("the pinned run reported too few rounds".into());
    }
    Ok(rounds)
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let a = args()?;
    let server = RedisServer::start()?;
    let client = redis::Client::open(server.url())?;
    let conn = client.get_multiplexed_async_connection().await?;
    if a.child {
        let one = compare(&server, &conn, 1, a.seconds, a.rounds).await?;
        for (k, r) in one.iter().enumerate() {
            for (o, f) in r.ours.iter().zip(&r.floor) {
                println!("PINNED {k} {o} {f}");
            }
        }
        return Ok(());
    }
    let evalsha = evalsha_ceiling(&server, a.seconds)?;
    let set = benchmark(&server, a.seconds, &["SET", "ceil:{__rand_int__}", "v"])?;
    server.command(&["FLUSHALL"])?;
    let one = compare(&server, &conn, 1, a.seconds, a.rounds).await?;
    let fifty = compare(&server, &conn, 50, a.seconds, a.rounds).await?;
    let pinned = if a.pinned { Some(pinned(&a)?) } else { None };

    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let mut m = format!(
        "# Throughput\n\nGenerated by `cargo run --release --example throughput -- --seconds {} --rounds {}{}` \
         ({cores} cores, client and redis-server on the same machine, load average before the run: {}). One \
         multiplexed connection. Every figure is min / **median** / max over {} rounds; both sides of a \
         comparison were measured back to back in each round (which goes first alternates), and a ratio is \
         the median of the per-round ratios. Nothing here is divided by a figure from another run.\n\n\
         Ceilings (`redis-benchmark -P 16 -c 50`, same server): the acquire script via `EVALSHA` \
         **{evalsha:.0} scripts/s**; plain `SET` **{set:.0}/s**.\n\n",
        a.seconds,
        a.rounds,
        if a.pinned { " --pinned" } else { "" },
        load.split_whitespace().take(3).collect::<Vec<_>>().join(" "),
        a.rounds
    );
    let mut table = |title: &str, rows: &[Rounds], ceiling: bool| {
        m.push_str(&format!(
            "## {title}\n\n| operation | this crate | floor | beside it | ratio (min / **median** / max) |{}\n|---|---|---|---|---|{}\n",
            if ceiling { " share of the EVALSHA ceiling (median) |" } else { "" },
            if ceiling { "---|" } else { "" }
        ));
        for ((_, _, label, floor, scripts), r) in PAIRS.iter().zip(rows) {
            let (_, mid, _) = spread(&r.ours);
            let (lo, rmid, hi) = r.ratio();
            m.push_str(&format!(
                "| {label} | {} | {} | {floor} | {lo:.2}× / **{rmid:.2}×** / {hi:.2}× |{}\n",
                fmt3(spread(&r.ours)),
                fmt3(spread(&r.floor)),
                if ceiling { format!(" {:.0} % |", 100.0 * mid * scripts / evalsha) } else { String::new() }
            ));
        }
        m.push('\n');
    };
    table("50 in flight", &fifty, true);
    table("1 in flight", &one, false);
    if let Some(p) = &pinned {
        table("1 in flight, client and server pinned to one core (`taskset -c 0`)", p, false);
    }
    m.push_str(
        "A pair is two scripts (acquire, release), so its share of the ceiling counts two per pair. At 50 in \
         flight every client is bound by Redis executing its commands; at 1 in flight by round trips and, \
         unpinned, by how fast the machine wakes a sleeping core.\n",
    );
    println!("{m}");
    let out = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("reports/throughput.md");
    std::fs::write(&out, &m)?;
    eprintln!("written to {}", out.display());
    Ok(())
}
