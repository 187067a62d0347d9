//! Redlock against five real redis-server masters (issue 3).
//!
//! Every test starts its own servers. Failures are real: `stop()` kills a
//! master, `freeze()`/`thaw()` SIGSTOP/SIGCONT it, `restart()` brings it back
//! empty on the same port, and latency comes from a TCP delay proxy
//! (`support::proxy`) between the client and the masters.
//!
//! Connections here have **no** response timeout of their own (redis-rs'
//! default is 500 ms), so the only timeout in play is Redlock's per-master one.

use crate::support;

use core::future::Future;
use core::num::NonZeroU32;
use core::pin::pin;
use core::task::Poll;
use core::time::Duration;

use rand::{Rng, SeedableRng};
use redis::aio::MultiplexedConnection;
use redis_primitives::redlock::{Acquisition, Extension, Redlock, RedlockConfig, RedlockLease, RefusalReason, Vote};
use redis_primitives::{Drift, Error, Retry};
use redis_primitives_naive::NaiveRedlock;
use support::proxy::DelayProxy;
use support::{ms, RedisServer};
use tokio::time::Instant;

mod availability;
mod configuration;
mod exclusion;
mod gate;
mod lease;
mod measurements;
mod retry;

const NAME: &str = "nightly-report";
const KEY: &str = "redlock:{nightly-report}";

// ---------------------------------------------------------------- helpers

fn servers(n: usize) -> Vec<RedisServer> {
    (0..n).map(|_| support::server()).collect()
}

/// A multiplexed connection to `url` with no response timeout.
async fn connect_url(url: &str) -> MultiplexedConnection {
    support::connect_url(url, None).await
}

async fn connect_all(servers: &[RedisServer]) -> Vec<MultiplexedConnection> {
    let mut conns = Vec::new();
    for s in servers {
        conns.push(connect_url(&s.url()).await);
    }
    conns
}

async fn connect_proxies(proxies: &[DelayProxy]) -> Vec<MultiplexedConnection> {
    let mut conns = Vec::new();
    for p in proxies {
        conns.push(connect_url(&p.url()).await);
    }
    conns
}

async fn connect_redlock(servers: &[RedisServer], config: RedlockConfig) -> Redlock<MultiplexedConnection> {
    Redlock::connect(connect_all(servers).await, config).await.expect("valid redlock")
}

/// The library's defaults, except a per-master timeout of a third of the TTL
/// (at most 500 ms) instead of 50 ms: on a busy 2-core machine a loopback
/// reply can take longer than 50 ms, and tests that are not about timeouts
/// must not count a slow master as a miss.
fn config(ttl_ms: u64) -> RedlockConfig {
    RedlockConfig::new(ms(ttl_ms)).master_timeout(Duration::from_millis((ttl_ms / 3).min(500)))
}

/// Exactly the library's defaults.
fn defaults(ttl_ms: u64) -> RedlockConfig {
    RedlockConfig::new(ms(ttl_ms))
}

fn held(acquisition: Acquisition) -> RedlockLease {
    match acquisition {
        Acquisition::Held(lease) => lease,
        Acquisition::Refused(r) => panic!("expected the lock, got refused: {r:?}"),
    }
}

/// The value of `key` on `server`, read over a separate raw connection.
fn get(server: &RedisServer, key: &str) -> Option<String> {
    let reply = server.command(&["GET", key]).expect("GET");
    if reply.starts_with("$-1") || reply.starts_with("_") {
        return None;
    }
    // "$<len>\r\n<value>\r\n"
    reply.split("\r\n").nth(1).map(str::to_string)
}

fn exists(server: &RedisServer, key: &str) -> bool {
    server.command(&["EXISTS", key]).expect("EXISTS").starts_with(":1")
}

fn pttl(server: &RedisServer, key: &str) -> i64 {
    let reply = server.command(&["PTTL", key]).expect("PTTL");
    reply.trim().trim_start_matches(':').parse().expect("integer reply")
}

fn invalid_what<C>(result: Result<Redlock<C>, Error>) -> (&'static str, String) {
    match result {
        Err(Error::InvalidInput { what, why }) => (what, why),
        Err(e) => panic!("expected InvalidInput, got {e}"),
        Ok(_) => panic!("expected InvalidInput, got a Redlock"),
    }
}

/// Polls `future` once, so its requests go out, then leaves it unpolled for
/// `pause` — a stop-the-world pause of the client (GC, a suspended VM) —
/// then lets it finish. The connections' driver tasks keep running, so the
/// replies arrive during the pause and are waiting when the client resumes.
async fn pause_after_first_poll<F: Future>(future: F, pause: Duration) -> F::Output {
    let mut future = pin!(future);
    let first = core::future::poll_fn(|cx| Poll::Ready(future.as_mut().poll(cx))).await;
    if let Poll::Ready(output) = first {
        return output;
    }
    tokio::time::sleep(pause).await;
    future.await
}

fn fmt_ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}
