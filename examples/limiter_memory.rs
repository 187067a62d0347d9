//! Bytes per key of the two rate limiters, measured with `MEMORY USAGE`.
//!
//! `cargo run --release --example limiter_memory` starts its own
//! redis-server, fills one sliding-log key and one sliding-counter key up to
//! the limit (10, 1 000 and 100 000 admissions in a one-hour window, at the
//! server's own clock), and measures each key with
//! `MEMORY USAGE key SAMPLES 0` (every element counted, not a sample). It
//! prints a Markdown table (the one in `docs/guide/rate-limiting.md#memory-per-key`).

use core::time::Duration;
use std::fmt::Write as _;

use redis::aio::MultiplexedConnection;
use redis_primitives::rate_limit::{Decision, Limit, SlidingWindowCounter, SlidingWindowLog};
use redis_primitives_testkit::RedisServer;
use tokio::task::JoinSet;

const LIMITS: [u64; 3] = [10, 1_000, 100_000];
/// Admissions in flight while filling a key.
const IN_FLIGHT: u64 = 50;

struct Row {
    limit: u64,
    log_bytes: u64,
    log_encoding: String,
    log_members: u64,
    counter_bytes: u64,
    counter_encoding: String,
}

/// Calls `check` `n` times with up to `IN_FLIGHT` calls outstanding and
/// returns how many were admitted.
async fn fill<F, Fut>(n: u64, check: F) -> u64
where
    F: Fn() -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = redis_primitives::Result<Decision>> + Send,
{
    let mut tasks = JoinSet::new();
    for worker in 0..IN_FLIGHT {
        let share = n / IN_FLIGHT + u64::from(worker < n % IN_FLIGHT);
        let check = check.clone();
        tasks.spawn(async move {
            let mut admitted = 0;
            for _ in 0..share {
                admitted += u64::from(check().await.expect("check").is_allowed());
            }
            admitted
        });
    }
    let mut admitted = 0;
    while let Some(n) = tasks.join_next().await {
        admitted += n.expect("task");
    }
    admitted
}

async fn usage(conn: &MultiplexedConnection, key: &str) -> (u64, String) {
    let mut conn = conn.clone();
    let bytes: u64 = redis::cmd("MEMORY")
        .arg("USAGE")
        .arg(key)
        .arg("SAMPLES")
        .arg(0)
        .query_async(&mut conn)
        .await
        .expect("MEMORY USAGE");
    let encoding: String =
        redis::cmd("OBJECT").arg("ENCODING").arg(key).query_async(&mut conn).await.expect("OBJECT ENCODING");
    (bytes, encoding)
}

#[tokio::main]
async fn main() {
    let server = RedisServer::start().unwrap_or_else(|e| panic!("{e}"));
    let client = redis::Client::open(server.url()).expect("valid url");
    let conn = client.get_multiplexed_async_connection().await.expect("connect");
    let version: String = {
        let mut c = conn.clone();
        let info: String = redis::cmd("INFO").arg("server").query_async(&mut c).await.expect("INFO");
        info.lines().find_map(|l| l.strip_prefix("redis_version:")).unwrap_or("unknown").trim().to_string()
    };

    let mut rows = Vec::new();
    for limit in LIMITS {
        let window = Limit::new(limit, Duration::from_secs(3600)).expect("valid limit");
        let name = format!("user-{limit}");

        let log = SlidingWindowLog::new(conn.clone(), window);
        let admitted = fill(limit, {
            let (log, name) = (log.clone(), name.clone());
            move || {
                let (log, name) = (log.clone(), name.clone());
                async move { log.check(&name).await }
            }
        })
        .await;
        assert_eq!(admitted, limit, "the log admits exactly the limit");
        let log_key = log.key(&name).expect("valid name");
        let (log_bytes, log_encoding) = usage(&conn, &log_key).await;
        let log_members: u64 = {
            let mut c = conn.clone();
            redis::cmd("ZCARD").arg(&log_key).query_async(&mut c).await.expect("ZCARD")
        };

        let counter = SlidingWindowCounter::new(conn.clone(), window);
        fill(limit, {
            let (counter, name) = (counter.clone(), name.clone());
            move || {
                let (counter, name) = (counter.clone(), name.clone());
                async move { counter.check(&name).await }
            }
        })
        .await;
        let (counter_bytes, counter_encoding) = usage(&conn, &counter.key(&name).expect("valid name")).await;

        rows.push(Row { limit, log_bytes, log_encoding, log_members, counter_bytes, counter_encoding });
    }

    let mut table = String::new();
    let _ = writeln!(table, "| limit (admissions in the window) | sliding log: bytes per key | log: bytes per admission | log encoding | sliding counter: bytes per key | counter encoding |");
    let _ = writeln!(table, "|---:|---:|---:|---|---:|---|");
    for r in &rows {
        let _ = writeln!(
            table,
            "| {} | {} | {:.1} | {} | {} | {} |",
            group(r.limit),
            group(r.log_bytes),
            r.log_bytes as f64 / r.log_members as f64,
            r.log_encoding,
            group(r.counter_bytes),
            r.counter_encoding,
        );
    }
    print!("{table}");

    println!(
        "\n(`MEMORY USAGE key SAMPLES 0` on redis-server {version}, one key filled to each limit, one-hour window)"
    );
}

/// 100000 → "100 000".
fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(' ');
        }
        out.push(c);
    }
    out
}
