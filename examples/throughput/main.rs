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
use redis_primitives::rate_limit::{Limit, SlidingWindowCounter, SlidingWindowLog};
use redis_primitives::{Acknowledgement, CompareCommands, FencedStore, FencingToken, Lock, Tokens, Ttl};
use redis_primitives_naive::{NaiveFixedWindow, UnfencedStore};
use redis_primitives_testkit::{RedisServer, ServerConfig};

mod compare;
mod cost;
mod measure;
mod workloads;

use compare::*;
use cost::*;
use measure::*;
use workloads::*;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

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
(see the module docs of examples/throughput/main.rs, and docs/guide/performance.md).
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
