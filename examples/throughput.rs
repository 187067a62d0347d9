//! Throughput of the primitives on one multiplexed connection, each beside
//! what a user would otherwise write and the Redis-side ceilings, all
//! measured in the same run.
//!
//! ```text
//! cargo run --release --example throughput [-- --seconds 2 --rounds 3 --pinned --valkey PATH]
//! cargo run --release --example throughput -- --only lock [--in-flight 1]   # one side alone, to profile
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
//! | `SlidingWindowLog` decisions | the same textbook log on the server's `TIME` (what exactness under client clock skew costs alone) |
//! | `SlidingWindowCounter` decisions | `NaiveFixedWindow` (`INCR` + `EXPIRE`) |
//! | `FencedStore` writes | a plain `SET` (`UnfencedStore`) |
//! | `Lock` pairs with `Tokens::TimeFloored` | the same lock's default pairs (`Tokens::Counter`) |
//!
//! and, with `redis-benchmark -P 16 -c 50`, the ceilings: the acquire
//! script via `EVALSHA`, and a plain `SET`. Then it attaches one replica
//! (the testkit's `start_replica_of`) and measures, on the same primary,
//! what waiting for it costs (ADR 0016):
//!
//! | this crate, acknowledged (`WAIT 1 1000`) | beside it, on the same primary |
//! |---|---|
//! | `Lock` pairs, `LockBuilder::acknowledged` | the same lock's pairs, unacknowledged |
//! | `FencedStore` writes, `FencedStore::acknowledged` | the same store's writes, unacknowledged |
//!
//! With `--valkey PATH` (a Valkey >= 9 `valkey-server`), the same
//! comparisons run a second time against it, in the same run, where the
//! lock releases with the native `DELIFEQ` (and the floor's unfenced pair is
//! measured both ways: with the compare-and-delete script, and with
//! `DELIFEQ`, what a Valkey user could write). Every figure is min / median /
//! max over the rounds; a ratio is the median of the per-round ratios (both
//! sides of a round measured back to back), never a division by a figure
//! from another run. With `--pinned`, the 1-in-flight pairs are measured a
//! second time with client and server on one core (`taskset -c 0`), which
//! shows the client's own cost rather than the machine's wake-up latency.
//! Beside every figure: the CPU time each process spent per operation, and
//! the client's heap allocations and context switches per operation (a
//! counting global allocator, `/proc/self/task/*/status`).
//! The table is printed and written to `reports/throughput.md` (or to
//! `--out FILE`). Check that the machine is otherwise idle (`uptime`) first.

use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use redis::aio::MultiplexedConnection;
use redis_primitives::naive::{NaiveFixedWindow, UnfencedStore};
use redis_primitives::rate_limit::{Limit, SlidingWindowCounter, SlidingWindowLog};
use redis_primitives::{Acknowledgement, CompareCommands, FencedStore, FencingToken, Lock, Tokens, Ttl};
use redis_primitives_testkit::{RedisServer, ServerConfig};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The system allocator, counting the allocations this process makes: the
/// client's allocations per operation are one of the measures of its own
/// cost (the speed issue, item 4). A relaxed atomic add per allocation is
/// the whole overhead, paid by both sides of every comparison alike.
struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is forwarded unchanged to `System`, which upholds
// `GlobalAlloc`'s contract; the counter has no effect on the memory.
unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's obligations are passed on as they are.
        unsafe { std::alloc::System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        // SAFETY: as above.
        unsafe { std::alloc::System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { std::alloc::System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Context switches of every thread of this process so far (voluntary and
/// not): each is a thread going to sleep or being put off the CPU, so per
/// operation it counts the client's wake-ups.
fn context_switches() -> Result<u64, BoxError> {
    let mut total = 0;
    for task in std::fs::read_dir("/proc/self/task")? {
        // A thread may end between the listing and the read.
        let Ok(status) = std::fs::read_to_string(task?.path().join("status")) else { continue };
        for line in status.lines() {
            if let Some(n) = line
                .strip_prefix("voluntary_ctxt_switches:")
                .or_else(|| line.strip_prefix("nonvoluntary_ctxt_switches:"))
            {
                total += n.trim().parse::<u64>()?;
            }
        }
    }
    Ok(total)
}

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

/// The same, with the server's clock instead of the client's: what the
/// log's exactness under client clock skew costs, alone.
const TEXTBOOK_LOG_SERVER_TIME: &str = "
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], 0, now - tonumber(ARGV[1]))
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  return 1
end
return 0";

/// One side of a comparison.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Workload {
    LockPairs,
    /// An alternative fenced acquire measured for ADR 0014 (`--only multi`):
    /// `MULTI`, `SET NX PX`, `INCR`, `EXEC`, then the compare-and-delete.
    MultiPairs,
    /// Another alternative measured for ADR 0014 (`--only module --module
    /// PATH`): the acquire as a module command (`FENCE.ACQUIRE`, the
    /// experiment in examples/fence_acquire_module.c), then the
    /// compare-and-delete. Needs the module loaded.
    ModulePairs,
    UnfencedPairs,
    UnfencedNativePairs,
    LogDecisions,
    TextbookLog,
    TextbookLogServerTime,
    CounterDecisions,
    FixedWindow,
    FencedWrites,
    PlainSet,
    /// `Tokens::TimeFloored` pairs (ADR 0017).
    FlooredPairs,
    /// Acknowledged pairs, `WAIT 1` after each winning acquire (ADR 0016):
    /// needs a replica.
    AcknowledgedPairs,
    /// Acknowledged fenced writes: needs a replica.
    AcknowledgedWrites,
}

/// The `WAIT` timeout of the acknowledged rows: far above a local
/// replica's confirmation, so a row measures the wait, not the timeout.
const ACK_TIMEOUT: Duration = Duration::from_millis(1000);

/// The response timeout of the connection the acknowledged rows use: a
/// `WAIT` must be answered, not abandoned at redis-rs's default 500 ms.
const ACK_RESPONSE_TIMEOUT: Duration = Duration::from_secs(5);

/// The comparisons: (this crate, the floor, label, scripts per op of
/// this crate's side, for its share of the EVALSHA ceiling).
const PAIRS: [Pair; 6] = [
    (
        Workload::LockPairs,
        Workload::UnfencedPairs,
        "lock acquire+release pairs/s",
        "`SET NX PX` + compare-and-delete (unfenced)",
        2.0,
    ),
    (Workload::LogDecisions, Workload::TextbookLog, "sliding-log decisions/s", "textbook one-script log", 1.0),
    (
        Workload::LogDecisions,
        Workload::TextbookLogServerTime,
        "sliding-log decisions/s",
        "textbook log on the server's `TIME`",
        1.0,
    ),
    (
        Workload::CounterDecisions,
        Workload::FixedWindow,
        "sliding-counter decisions/s",
        "`NaiveFixedWindow` (`INCR` + `EXPIRE`)",
        1.0,
    ),
    (Workload::FencedWrites, Workload::PlainSet, "fenced writes/s", "plain `SET`", 1.0),
    (
        Workload::FlooredPairs,
        Workload::LockPairs,
        "time-floored lock pairs/s",
        "this crate's default pairs (`Tokens::Counter`)",
        2.0,
    ),
];

/// With one replica attached, on the same primary and connection: what
/// waiting for it costs.
const REPLICATED_PAIRS: [Pair; 2] = [
    (
        Workload::AcknowledgedPairs,
        Workload::LockPairs,
        "acknowledged lock pairs/s (`WAIT 1 1000`)",
        "the same pairs unacknowledged",
        2.0,
    ),
    (
        Workload::AcknowledgedWrites,
        Workload::FencedWrites,
        "acknowledged fenced writes/s (`WAIT 1 1000`)",
        "the same writes unacknowledged",
        1.0,
    ),
];

/// One comparison: (this crate, the floor, label, floor's description,
/// scripts per op of this crate's side).
type Pair = (Workload, Workload, &'static str, &'static str, f64);

/// On a server with `DELIFEQ`, the lock pair beside the unfenced pair a
/// user of that server could write; the lock's release is native there, so
/// a pair is one script.
const NATIVE_PAIR: Pair = (
    Workload::LockPairs,
    Workload::UnfencedNativePairs,
    "lock acquire+release pairs/s",
    "`SET NX PX` + `DELIFEQ` (unfenced, native)",
    1.0,
);

/// Operations per second of `workload` with `in_flight` tasks on `conn`.
/// The unfenced acquire: `SET key owner NX PX 60000`.
fn set_nx_px_cmd(key: &str, owner: &str) -> redis::Cmd {
    redis::cmd("SET").arg(key).arg(owner).arg("NX").arg("PX").arg(60_000).to_owned()
}

/// Runs the unfenced acquire; distinct names never contend, so it must win.
async fn set_nx_px(conn: &mut MultiplexedConnection, key: &str, owner: &str) -> Result<(), BoxError> {
    let set: Option<String> = set_nx_px_cmd(key, owner).query_async(conn).await?;
    set.map(drop).ok_or_else(|| "distinct names never contend".into())
}

/// The textbook release; it must find its own key.
async fn compare_and_delete(
    cad: &redis::Script,
    conn: &mut MultiplexedConnection,
    key: &str,
    owner: &str,
) -> Result<(), BoxError> {
    let deleted: i64 = cad.key(key).arg(owner).invoke_async(conn).await?;
    if deleted == 1 {
        Ok(())
    } else {
        Err("compare-and-delete failed".into())
    }
}

/// CPU seconds (user + system) a process has used so far, all threads:
/// fields 14 and 15 of `/proc/PID/stat`, in clock ticks.
fn cpu_seconds(pid: &str) -> Result<f64, BoxError> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // The command name (field 2) is parenthesised and may hold spaces.
    let after = stat.rsplit_once(')').ok_or("unreadable /proc stat")?.1;
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| -> Result<f64, BoxError> { Ok(fields.get(i).ok_or("short /proc stat")?.parse::<f64>()?) };
    // After the name, field 3 (state) is index 0: utime is 14, stime 15.
    Ok((ticks(11)? + ticks(12)?) / clock_ticks()?)
}

/// `getconf CLK_TCK`, once.
fn clock_ticks() -> Result<f64, BoxError> {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    if let Some(t) = TICKS.get() {
        return Ok(*t);
    }
    let out = Command::new("getconf").arg("CLK_TCK").output().map_err(|e| format!("getconf: {e}"))?;
    let t: f64 = String::from_utf8_lossy(&out.stdout).trim().parse()?;
    Ok(*TICKS.get_or_init(|| t))
}

/// One measured side: operations per second, and CPU µs per operation of
/// this (client) process and of the server.
#[derive(Clone, Copy, Default)]
struct Measured {
    rate: f64,
    client_us: f64,
    server_us: f64,
    /// Heap allocations (and reallocations) per operation, this process.
    allocations: f64,
    /// Context switches per operation, every thread of this process.
    switches: f64,
}

impl Measured {
    /// The figures in the order a `PINNED` line carries them.
    fn figures(&self) -> [f64; 5] {
        [self.rate, self.client_us, self.server_us, self.allocations, self.switches]
    }

    /// The inverse of [`Measured::figures`].
    fn from_figures([rate, client_us, server_us, allocations, switches]: [f64; 5]) -> Measured {
        Measured { rate, client_us, server_us, allocations, switches }
    }
}

/// What the workloads call: each primitive (and each hand-written
/// baseline script) once, cloned into every task.
#[derive(Clone)]
struct Subjects {
    lock: Lock<MultiplexedConnection>,
    floored: Lock<MultiplexedConnection>,
    acknowledged: Lock<MultiplexedConnection>,
    acknowledged_store: FencedStore<MultiplexedConnection>,
    store: FencedStore<MultiplexedConnection>,
    plain: UnfencedStore<MultiplexedConnection>,
    log: SlidingWindowLog<MultiplexedConnection>,
    counter: SlidingWindowCounter<MultiplexedConnection>,
    fixed: NaiveFixedWindow<MultiplexedConnection>,
    cad: redis::Script,
    textbook: redis::Script,
    textbook_server_time: redis::Script,
    ttl: Ttl,
}

/// Operation `i` of task `worker`: one pair, decision or write of
/// `workload`.
async fn step(
    s: &Subjects,
    conn: &mut MultiplexedConnection,
    workload: Workload,
    worker: usize,
    i: u64,
) -> Result<(), BoxError> {
    let Subjects {
        lock,
        floored,
        acknowledged,
        acknowledged_store,
        store,
        plain,
        log,
        counter,
        fixed,
        cad,
        textbook,
        textbook_server_time,
        ttl,
    } = s;
    let ttl = *ttl;
    match workload {
        Workload::LockPairs | Workload::FlooredPairs | Workload::AcknowledgedPairs => {
            let lock = match workload {
                Workload::FlooredPairs => &floored,
                Workload::AcknowledgedPairs => &acknowledged,
                _ => &lock,
            };
            let name = format!("bench-{worker}-{i}");
            let lease = lock.acquire(&name, ttl).await?.ok_or("distinct names never contend")?;
            if !lock.release(&lease).await? {
                return Err::<(), BoxError>("release failed".into());
            }
        }
        Workload::UnfencedPairs => {
            let (key, owner) = (format!("floor-{worker}-{i}"), format!("owner-{worker}-{i}"));
            set_nx_px(conn, &key, &owner).await?;
            compare_and_delete(cad, conn, &key, &owner).await?;
        }
        Workload::MultiPairs => {
            let (key, owner) = (format!("multi-{worker}-{i}"), format!("owner-{worker}-{i}"));
            let (set, token): (Option<String>, i64) = redis::pipe()
                .atomic()
                .add_command(set_nx_px_cmd(&key, &owner))
                .cmd("INCR")
                .arg(format!("{key}:fence"))
                .query_async(conn)
                .await?;
            set.ok_or("distinct names never contend")?;
            if token < 1 {
                return Err("INCR returned no token".into());
            }
            compare_and_delete(cad, conn, &key, &owner).await?;
        }
        Workload::ModulePairs => {
            let (key, owner) = (format!("module-{worker}-{i}"), format!("owner-{worker}-{i}"));
            let token: Option<i64> = redis::cmd("FENCE.ACQUIRE")
                .arg(&key)
                .arg(format!("{key}:fence"))
                .arg(&owner)
                .arg(60_000)
                .query_async(conn)
                .await?;
            if token.ok_or("distinct names never contend")? < 1 {
                return Err("FENCE.ACQUIRE returned no token".into());
            }
            compare_and_delete(cad, conn, &key, &owner).await?;
        }
        Workload::UnfencedNativePairs => {
            let (key, owner) = (format!("floor-{worker}-{i}"), format!("owner-{worker}-{i}"));
            set_nx_px(conn, &key, &owner).await?;
            let deleted: i64 = redis::cmd("DELIFEQ").arg(&key).arg(&owner).query_async(conn).await?;
            if deleted != 1 {
                return Err("DELIFEQ failed".into());
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
                .invoke_async(conn)
                .await?;
        }
        Workload::TextbookLogServerTime => {
            // A unique member without the client's clock.
            let _: i64 = textbook_server_time
                .key(format!("textbook:client-{}", i % 1000))
                .arg(1000)
                .arg(1_000_000_000u64)
                .arg(format!("{worker}-{i}"))
                .invoke_async(conn)
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
        Workload::AcknowledgedWrites => {
            acknowledged_store.write(&format!("doc-{worker}"), b"payload", FencingToken::new(i + 1)).await?;
        }
        Workload::PlainSet => {
            plain.write(&format!("plain-{worker}"), b"payload").await?;
        }
    }
    Ok(())
}

/// Operations per second of `workload` with `in_flight` tasks on `conn`,
/// and the CPU both processes spent per operation meanwhile.
async fn run(
    conn: MultiplexedConnection,
    workload: Workload,
    in_flight: usize,
    seconds: f64,
    server_pid: &str,
) -> Result<Measured, BoxError> {
    // A limit nobody reaches: every decision does the whole work.
    let limit = Limit::new(1_000_000_000, Duration::from_secs(1))?;
    let ack = Acknowledgement::new(1, ACK_TIMEOUT)?;
    let subjects = Subjects {
        lock: Lock::new(conn.clone()),
        floored: Lock::builder(conn.clone()).tokens(Tokens::TimeFloored).build()?,
        acknowledged: Lock::builder(conn.clone()).acknowledged(ack).build()?,
        acknowledged_store: FencedStore::new(conn.clone()).acknowledged(ack),
        store: FencedStore::new(conn.clone()),
        plain: UnfencedStore::new(conn.clone()),
        log: SlidingWindowLog::new(conn.clone(), limit),
        counter: SlidingWindowCounter::new(conn.clone(), limit),
        fixed: NaiveFixedWindow::new(conn.clone(), limit),
        cad: redis::Script::new(COMPARE_AND_DELETE),
        textbook: redis::Script::new(TEXTBOOK_LOG),
        textbook_server_time: redis::Script::new(TEXTBOOK_LOG_SERVER_TIME),
        ttl: Ttl::from_millis(60_000)?,
    };
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let mut tasks: tokio::task::JoinSet<Result<(), BoxError>> = tokio::task::JoinSet::new();
    for worker in 0..in_flight {
        let (subjects, mut conn) = (subjects.clone(), conn.clone());
        let (stop, done) = (Arc::clone(&stop), Arc::clone(&done));
        tasks.spawn(async move {
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                step(&subjects, &mut conn, workload, worker, i).await?;
                i += 1;
                done.fetch_add(1, Ordering::Relaxed);
            }
            Ok(())
        });
    }
    // Warm up (script load, connection buffers), then count.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let start_count = done.load(Ordering::Relaxed);
    let (client0, server0) = (cpu_seconds("self")?, cpu_seconds(server_pid)?);
    // The allocation count is read last before the window and first after
    // it, so that reading /proc (which allocates) is not counted.
    let switches0 = context_switches()?;
    let allocations0 = ALLOCATIONS.load(Ordering::Relaxed);
    let start = Instant::now();
    tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
    let ops = done.load(Ordering::Relaxed) - start_count;
    let elapsed = start.elapsed().as_secs_f64();
    let allocations1 = ALLOCATIONS.load(Ordering::Relaxed);
    let switches1 = context_switches()?;
    let (client1, server1) = (cpu_seconds("self")?, cpu_seconds(server_pid)?);
    stop.store(true, Ordering::Relaxed);
    while let Some(r) = tasks.join_next().await {
        r??;
    }
    let per_op = |cpu: f64| 1e6 * cpu / ops.max(1) as f64;
    Ok(Measured {
        rate: ops as f64 / elapsed,
        client_us: per_op(client1 - client0),
        server_us: per_op(server1 - server0),
        allocations: (allocations1 - allocations0) as f64 / ops.max(1) as f64,
        switches: (switches1 - switches0) as f64 / ops.max(1) as f64,
    })
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
    ours: Vec<Measured>,
    floor: Vec<Measured>,
}

impl Rounds {
    fn push(&mut self, ours: Measured, floor: Measured) {
        self.ours.push(ours);
        self.floor.push(floor);
    }

    /// One figure of each round, this crate's side then the floor's.
    fn each(&self, pick: fn(&Measured) -> f64) -> (Vec<f64>, Vec<f64>) {
        (self.ours.iter().map(pick).collect(), self.floor.iter().map(pick).collect())
    }

    /// Median over the rounds of one figure, this crate's then the floor's.
    fn medians(&self, pick: fn(&Measured) -> f64) -> (f64, f64) {
        let (ours, floor) = self.each(pick);
        (spread(&ours).1, spread(&floor).1)
    }

    /// "client + server" CPU µs per op, medians over the rounds, ours then the floor's.
    fn cpu(&self) -> String {
        let (oc, fc) = self.medians(|m| m.client_us);
        let (os, fs) = self.medians(|m| m.server_us);
        format!("{oc:.1} + {os:.1} / {fc:.1} + {fs:.1}")
    }

    /// The client's allocations and context switches per op, medians over
    /// the rounds, ours then the floor's.
    fn client(&self) -> String {
        let (oa, fa) = self.medians(|m| m.allocations);
        let (os, fs) = self.medians(|m| m.switches);
        format!("{oa:.1}, {os:.2} / {fa:.1}, {fs:.2}")
    }

    fn ratio(&self) -> (f64, f64, f64) {
        let r: Vec<f64> = self.ours.iter().zip(&self.floor).map(|(a, b)| a.rate / b.rate).collect();
        spread(&r)
    }
}

/// Runs every comparison at `in_flight` for `rounds` rounds, alternating
/// which side goes first.
async fn compare(
    server: &RedisServer,
    conn: &MultiplexedConnection,
    pairs: &[Pair],
    in_flight: usize,
    seconds: f64,
    rounds: usize,
) -> Result<Vec<Rounds>, BoxError> {
    let mut out = vec![Rounds::default(); pairs.len()];
    for round in 0..rounds {
        for (k, (ours, floor, label, _, _)) in pairs.iter().enumerate() {
            let (first, second) = if round % 2 == 0 { (*ours, *floor) } else { (*floor, *ours) };
            let pid = server.pid().ok_or("the server is not running")?.to_string();
            let a = run(conn.clone(), first, in_flight, seconds, &pid).await?;
            server.command(&["FLUSHALL"])?;
            let b = run(conn.clone(), second, in_flight, seconds, &pid).await?;
            server.command(&["FLUSHALL"])?;
            let (o, f) = if round % 2 == 0 { (a, b) } else { (b, a) };
            eprintln!(
                "round {}: {label} at {in_flight} in flight: {:.0} (this crate), {:.0} (floor)",
                round + 1,
                o.rate,
                f.rate
            );
            out[k].push(o, f);
        }
    }
    Ok(out)
}

struct Args {
    seconds: f64,
    rounds: usize,
    pinned: bool,
    valkey: Option<std::path::PathBuf>,
    /// Where the report goes (default `reports/throughput.md`).
    out: Option<std::path::PathBuf>,
    /// `--only lock|log|counter|store`: run this crate's side of one
    /// comparison at `--in-flight` requests in flight (default 50) and print
    /// its figures (to profile it, e.g. under `perf record`), writing no
    /// report.
    only: Option<Workload>,
    /// Requests in flight for `--only`.
    in_flight: usize,
    /// A module for the `--only` server to load (`--only module`).
    module: Option<std::path::PathBuf>,
    /// Internal: this process is the pinned half, against this server binary.
    child: Option<std::path::PathBuf>,
}

/// What `--help` prints.
const USAGE: &str = "\
Measures this crate's primitives beside what a user would otherwise write, on
one multiplexed connection to a redis-server it starts itself, in the same run
(see the module docs of examples/throughput.rs, and docs/guide/performance.md).
Check that the machine is otherwise idle (`uptime`) first.

Usage: cargo run --release --example throughput -- [OPTIONS]

Options:
  --seconds S      counted seconds per side per round (default 2)
  --rounds N       rounds; which side goes first alternates (default 3)
  --pinned         also measure 1 in flight with client and server pinned to
                   one core (`taskset -c 0`)
  --valkey PATH    also measure against this valkey-server (Valkey >= 9)
  --out FILE       where the Markdown report goes (default reports/throughput.md)
  --only W         one side alone, to profile: lock, floored, multi, module,
                   unfenced, log, counter, store or set
  --in-flight N    requests in flight for --only (default 50)
  --module PATH    a module the --only server loads (--only module needs
                   examples/fence_acquire_module.c built; see ADR 0014)
  -h, --help       print this
";

/// What `--only` takes, for its error message.
const ONLY_CHOICES: &str = "lock, floored, multi, module, unfenced, log, counter, store or set";

fn args() -> Result<Args, BoxError> {
    let mut a = Args {
        seconds: 2.0,
        rounds: 3,
        pinned: false,
        valkey: None,
        out: None,
        only: None,
        in_flight: 50,
        module: None,
        child: None,
    };
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
            "-h" | "--help" => {
                print!("{USAGE}");
                std::process::exit(0);
            }
            "--pinned" => a.pinned = true,
            "--in-flight" => {
                let v = it.next().ok_or("--in-flight expects a count")?;
                a.in_flight = v.parse().map_err(|_| format!("--in-flight expects a count, got {v:?}"))?;
                if a.in_flight == 0 {
                    return Err("--in-flight must be at least 1".into());
                }
            }
            "--only" => {
                a.only = Some(match it.next().as_deref() {
                    Some("lock") => Workload::LockPairs,
                    Some("unfenced") => Workload::UnfencedPairs,
                    Some("multi") => Workload::MultiPairs,
                    Some("module") => Workload::ModulePairs,
                    Some("log") => Workload::LogDecisions,
                    Some("counter") => Workload::CounterDecisions,
                    Some("store") => Workload::FencedWrites,
                    Some("set") => Workload::PlainSet,
                    Some("floored") => Workload::FlooredPairs,
                    other => return Err(format!("--only expects {ONLY_CHOICES}, got {other:?}").into()),
                })
            }
            "--module" => {
                let m = std::path::PathBuf::from(it.next().ok_or("--module expects the path of a module (.so)")?);
                if !m.is_file() {
                    return Err(format!("--module {}: not a file", m.display()).into());
                }
                a.module = Some(m.canonicalize()?);
            }
            "--out" => a.out = Some(std::path::PathBuf::from(it.next().ok_or("--out expects a file")?)),
            "--valkey" => {
                let v = std::path::PathBuf::from(it.next().ok_or("--valkey expects the path of a valkey-server")?);
                if !v.is_file() {
                    return Err(format!("--valkey {}: not a file", v.display()).into());
                }
                a.valkey = Some(v);
            }
            // Internal: the pinned half, run under `taskset` by the parent.
            "--pinned-child" => {
                a.child = Some(std::path::PathBuf::from(it.next().ok_or("--pinned-child expects a server binary")?))
            }
            other => {
                let known =
                    "--seconds S, --rounds N, --pinned, --valkey PATH, --only W, --in-flight N, --module PATH, --out FILE; --help";
                return Err(format!("unknown argument {other:?} ({known})").into());
            }
        }
    }
    Ok(a)
}

/// Reruns this program under `taskset -c 0` for the 1-in-flight figures.
fn pinned(a: &Args, binary: &std::path::Path, pairs: &[Pair]) -> Result<Vec<Rounds>, BoxError> {
    let exe = std::env::current_exe()?;
    let out = Command::new("taskset")
        .arg("-c")
        .arg("0")
        .arg(exe)
        .arg("--pinned-child")
        .arg(binary)
        .args(["--seconds", &a.seconds.to_string(), "--rounds", &a.rounds.to_string()])
        .output()
        .map_err(|e| format!("taskset: {e} (util-linux)"))?;
    if !out.status.success() {
        return Err(format!("the pinned run failed: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    let mut rounds = vec![Rounds::default(); pairs.len()];
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        if let ["PINNED", k, numbers @ ..] = w.as_slice() {
            let n = numbers.iter().map(|x| x.parse::<f64>()).collect::<Result<Vec<_>, _>>()?;
            if n.len() != 10 {
                return Err("a malformed PINNED line".into());
            }
            let slot = rounds.get_mut(k.parse::<usize>()?).ok_or("the pinned run reported an unknown comparison")?;
            let side = |figures: &[f64]| figures.try_into().map(Measured::from_figures);
            slot.push(side(&n[..5])?, side(&n[5..])?);
        }
    }
    if rounds.iter().any(|r| r.ours.len() != a.rounds) {
        return Err("the pinned run reported too few rounds".into());
    }
    Ok(rounds)
}

/// The comparisons for a server: the five, plus the native floor where
/// the lock found `DELIFEQ`.
fn pairs_for(native: CompareCommands) -> Vec<Pair> {
    let mut pairs = PAIRS.to_vec();
    if native == CompareCommands::DelIfEq {
        pairs.insert(1, NATIVE_PAIR);
    }
    pairs
}

/// Starts `binary`, loading `module` when given (`--only module`).
fn start(binary: &std::path::Path, module: Option<&std::path::Path>) -> Result<RedisServer, BoxError> {
    let args = module.map(|m| vec!["--loadmodule".to_string(), m.display().to_string()]).unwrap_or_default();
    let config = ServerConfig { binary: Some(binary.to_path_buf()), args, ..ServerConfig::default() };
    Ok(RedisServer::start_with(config)?)
}

/// `redis_version` or `valkey_version` from `INFO server`.
fn version(server: &RedisServer) -> Result<String, BoxError> {
    let mut conn = redis::Client::open(server.url())?.get_connection()?;
    let info: String = redis::cmd("INFO").arg("server").query(&mut conn)?;
    let field = |name: &str| info.lines().find_map(|l| l.strip_prefix(name)).map(|v| v.trim().to_string());
    Ok(match field("valkey_version:") {
        Some(v) => format!("Valkey {v}"),
        None => format!("Redis {}", field("redis_version:").unwrap_or_else(|| "(unknown version)".into())),
    })
}

/// Every table for one server, as markdown.
async fn section(a: &Args, binary: &std::path::Path) -> Result<String, BoxError> {
    let server = start(binary, None)?;
    let name = version(&server)?;
    let client = redis::Client::open(server.url())?;
    let conn = client.get_multiplexed_async_connection().await?;
    let native = Lock::new(conn.clone()).compare_commands().await;
    let pairs = pairs_for(native);
    eprintln!("{name}: the lock releases and extends with {native:?}");
    let evalsha = evalsha_ceiling(&server, a.seconds)?;
    let set = benchmark(&server, a.seconds, &["SET", "ceil:{__rand_int__}", "v"])?;
    server.command(&["FLUSHALL"])?;
    let one = compare(&server, &conn, &pairs, 1, a.seconds, a.rounds).await?;
    let fifty = compare(&server, &conn, &pairs, 50, a.seconds, a.rounds).await?;
    let pinned = if a.pinned { Some(pinned(a, binary, &pairs)?) } else { None };
    // Last, so that no other row pays for the replication stream.
    let replica = RedisServer::start_replica_of(
        &server,
        ServerConfig { binary: Some(binary.to_path_buf()), ..ServerConfig::default() },
    )?;
    let config = redis::AsyncConnectionConfig::new().set_response_timeout(Some(ACK_RESPONSE_TIMEOUT));
    let replicated_conn = client.get_multiplexed_async_connection_with_config(&config).await?;
    let replicated_fifty = compare(&server, &replicated_conn, &REPLICATED_PAIRS, 50, a.seconds, a.rounds).await?;
    let replicated_one = compare(&server, &replicated_conn, &REPLICATED_PAIRS, 1, a.seconds, a.rounds).await?;
    drop(replica);
    // A pair is two scripts, or one where the release is native.
    let release_scripts = if native == CompareCommands::Scripts { 1.0 } else { 0.0 };
    let mut m = format!(
        "## {name}\n\nThe lock releases with {}. Ceilings (`redis-benchmark -P 16 -c 50`, same server): the \
         acquire script via `EVALSHA` **{evalsha:.0} scripts/s**; plain `SET` **{set:.0}/s**.\n\n",
        match native {
            CompareCommands::Scripts => "the compare-and-delete script",
            CompareCommands::DelIfEq => "the native `DELIFEQ`",
            _ => "the native `DELEX … IFEQ`",
        }
    );
    let mut table = |title: &str, intro: &str, pairs: &[Pair], rows: &[Rounds], ceiling: bool| {
        m.push_str(&format!(
            "### {title}\n\n{intro}| operation | this crate | floor | beside it | ratio (min / **median** / max) | CPU µs per op, client + server: this crate / floor (medians) | per op in the client, allocations, context switches: this crate / floor (medians) |{}\n|---|---|---|---|---|---|---|{}\n",
            if ceiling { " share of the EVALSHA ceiling (median) |" } else { "" },
            if ceiling { "---|" } else { "" }
        ));
        for ((ours, _, label, floor, scripts), r) in pairs.iter().zip(rows) {
            let pair = matches!(ours, Workload::LockPairs | Workload::FlooredPairs | Workload::AcknowledgedPairs);
            let scripts = if pair { 1.0 + release_scripts } else { *scripts };
            let (ours_rates, floor_rates) = r.each(|m| m.rate);
            let (_, mid, _) = spread(&ours_rates);
            let (lo, rmid, hi) = r.ratio();
            m.push_str(&format!(
                "| {label} | {} | {} | {floor} | {lo:.2}× / **{rmid:.2}×** / {hi:.2}× | {} | {} |{}\n",
                fmt3(spread(&ours_rates)),
                fmt3(spread(&floor_rates)),
                r.cpu(),
                r.client(),
                if ceiling { format!(" {:.0} % |", 100.0 * mid * scripts / evalsha) } else { String::new() }
            ));
        }
        m.push('\n');
    };
    table("50 in flight", "", &pairs, &fifty, true);
    table("1 in flight", "", &pairs, &one, false);
    if let Some(p) = &pinned {
        table("1 in flight, client and server pinned to one core (`taskset -c 0`)", "", &pairs, p, false);
    }
    let replicated = "The same primary with one replica of the same server on this \
         machine (the testkit's `start_replica_of`), measured after every row above; both sides of each row \
         run on it, on one connection whose response timeout is longer than the `WAIT`'s. A `WAIT` blocks its \
         connection on the server until the replica confirms, so the requests in flight on that connection \
         queue behind it. The server column is the primary's CPU only.\n\n";
    table("50 in flight, one replica attached", replicated, &REPLICATED_PAIRS, &replicated_fifty, false);
    table("1 in flight, one replica attached", "", &REPLICATED_PAIRS, &replicated_one, false);
    Ok(m)
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let a = args()?;
    if let Some(workload) = a.only {
        let binary = match &a.valkey {
            Some(v) => v.clone(),
            None => redis_primitives_testkit::redis_server_binary()?,
        };
        let server = start(&binary, a.module.as_deref())?;
        let conn = redis::Client::open(server.url())?.get_multiplexed_async_connection().await?;
        let pid = server.pid().ok_or("the server is not running")?.to_string();
        let m = run(conn, workload, a.in_flight, a.seconds, &pid).await?;
        println!(
            "{}: {:.0} ops/s at {} in flight; CPU µs per op: client {:.1}, server {:.1}; \
             per op in the client: {:.1} allocations, {:.2} context switches",
            version(&server)?,
            m.rate,
            a.in_flight,
            m.client_us,
            m.server_us,
            m.allocations,
            m.switches
        );
        return Ok(());
    }
    if let Some(binary) = &a.child {
        let server = start(binary, None)?;
        let conn = redis::Client::open(server.url())?.get_multiplexed_async_connection().await?;
        let pairs = pairs_for(Lock::new(conn.clone()).compare_commands().await);
        let one = compare(&server, &conn, &pairs, 1, a.seconds, a.rounds).await?;
        for (k, r) in one.iter().enumerate() {
            for (o, f) in r.ours.iter().zip(&r.floor) {
                let figures: Vec<String> = o.figures().iter().chain(&f.figures()).map(f64::to_string).collect();
                println!("PINNED {k} {}", figures.join(" "));
            }
        }
        return Ok(());
    }
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let mut m = format!(
        "# Throughput\n\nGenerated by `cargo run --release --example throughput -- --seconds {} --rounds {}{}{}` \
         ({cores} cores, client and server on the same machine, load average before the run: {}). One \
         multiplexed connection. Every figure is min / **median** / max over {} rounds; both sides of a \
         comparison were measured back to back in each round (which goes first alternates), and a ratio is \
         the median of the per-round ratios. Nothing here is divided by a figure from another run.\n\n",
        a.seconds,
        a.rounds,
        if a.pinned { " --pinned" } else { "" },
        if a.valkey.is_some() { " --valkey PATH" } else { "" },
        load.split_whitespace().take(3).collect::<Vec<_>>().join(" "),
        a.rounds
    );
    m.push_str(&section(&a, &redis_primitives_testkit::redis_server_binary()?).await?);
    if let Some(valkey) = &a.valkey {
        m.push_str(&section(&a, valkey).await?);
    }
    m.push_str(
        "A pair is two scripts (acquire, release), or one where the release is native, and its share of the \
         ceiling counts them. At 50 in flight client and server share the machine's cores, so a side's rate \
         follows its total CPU per op (client + server); the share of the ceiling says how close the server \
         alone is to its own limit. At 1 in flight the rate is bound by round trips and, unpinned, by how \
         fast the machine wakes a sleeping core. CPU per \
         op is each process's user + system time over the counted seconds (`/proc/PID/stat`, clock-tick \
         resolution) divided by the operations counted: the client's includes the tokio runtime, \
         redis-rs's connection task and the kernel's work for both (wake-ups, socket calls), which grows per \
         op when the server answers more slowly; the server's is everything it did meanwhile. Allocations \
         are the client process's heap allocations and reallocations per op (a counting global allocator: \
         the library, redis-rs, tokio and the benchmark's own key names alike, on both sides); context \
         switches are its threads' voluntary and involuntary switches per op (`/proc/self/task/*/status`).\n",
    );
    println!("{m}");
    let out = match &a.out {
        Some(out) => out.clone(),
        None => std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("reports/throughput.md"),
    };
    std::fs::write(&out, &m)?;
    eprintln!("written to {}", out.display());
    Ok(())
}
