//! No integer crosses a Lua double (ADR 0006): every script's numeric
//! inputs drawn near 2^53 and 2^63, against a real server whose clock is
//! pinned where a case needs it, and every number that comes back compared
//! with the exact one computed here in `u128`.
//!
//! The clock is the harness's `LD_PRELOAD` library (`sim/clock/rp_clock.c`,
//! built here with the system C compiler, as `module_experiment` builds its
//! module): a 16-byte control file whose first word pins `CLOCK_REALTIME`,
//! rewritten between cases while the server runs.

use crate::support::connect;

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::process::Command;

use core::time::Duration;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRng, TestRunner};
use redis::aio::MultiplexedConnection;
use redis_primitives::rate_limit::{Decision, Limit, SlidingWindowCounter, SlidingWindowLog};
use redis_primitives::{FencingToken, JobQueue, Lock, Tokens, Ttl};
use redis_primitives_testkit::{RedisServer, ServerConfig};

const P53: u64 = 1 << 53;

/// A server whose wall clock is whatever [`Pinned::pin`] last said.
struct Pinned {
    server: RedisServer,
    control: File,
}

impl Pinned {
    fn start(name: &str) -> Pinned {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
        let library = dir.join(format!("rp_clock-{name}.so"));
        let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("sim/clock/rp_clock.c");
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let status = Command::new(&cc)
            .args(["-shared", "-fPIC", "-O2", "-std=gnu11", "-o"])
            .arg(&library)
            .arg(&source)
            .arg("-ldl")
            .status()
            .unwrap_or_else(|e| panic!("could not run {cc} ({e}): install gcc or set CC"));
        assert!(status.success(), "{cc} failed on {}", source.display());
        let path = dir.join(format!("rp_clock-{name}-{}.ctl", std::process::id()));
        let mut control = File::options().create(true).truncate(true).read(true).write(true).open(&path).unwrap();
        control.write_all(&[0u8; 16]).unwrap();
        let config = ServerConfig {
            preload: Some(library),
            env: vec![("RP_CLOCK_FILE".into(), path.display().to_string())],
            ..ServerConfig::default()
        };
        let server = RedisServer::start_with(config).unwrap_or_else(|e| panic!("{e}"));
        Pinned { server, control }
    }

    /// Pins the server's wall clock at `micros` since the epoch.
    fn pin(&self, micros: u64) {
        let ns = i64::try_from(u128::from(micros) * 1000).expect("an instant before 2262");
        let mut control = &self.control;
        control.seek(SeekFrom::Start(0)).unwrap();
        control.write_all(&ns.to_ne_bytes()).unwrap();
        control.flush().unwrap();
    }
}

/// Runs `property` over `strategy`, 64 deterministic cases (or
/// `RP_ARGUMENT_CASES`), on `rt` (the runtime the test's connections were
/// made on, which drives them); the closure gets a case number.
pub(crate) fn run<S: Strategy>(
    rt: &tokio::runtime::Runtime,
    strategy: S,
    property: impl Fn(&tokio::runtime::Runtime, u64, S::Value) -> Result<(), TestCaseError>,
) {
    let cases = std::env::var("RP_ARGUMENT_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(64);
    let config = Config { cases, failure_persistence: None, ..Config::default() };
    let mut runner = TestRunner::new_with_rng(config.clone(), TestRng::deterministic_rng(config.rng_algorithm));
    let case = std::cell::Cell::new(0u64);
    let result = runner.run(&strategy, |value| {
        case.set(case.get() + 1);
        property(rt, case.get(), value)
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// A `u64` near 2^53 or near 2^63 (either side), or anywhere below 2^63.
fn near_edges() -> impl Strategy<Value = u64> {
    prop_oneof![
        2 => (0u64..64).prop_map(|d| P53 - 32 + d),
        2 => (0u64..64).prop_map(|d| i64::MAX as u64 - d),
        1 => P53..=i64::MAX as u64,
        1 => 1u64..P53,
    ]
}

async fn set(c: &mut MultiplexedConnection, key: &str, value: u64) {
    let _: () = redis::cmd("SET").arg(key).arg(value.to_string()).query_async(c).await.unwrap();
}

/// A time-floored token from a clock past 2^53 µs (the year 2255) is the
/// exact text the script stores. Before, the script returned the clock's
/// Lua number, rounded: at an odd microsecond the token was one less than
/// the counter, and two acquires could carry the same token.
#[test]
fn floored_tokens_from_a_clock_past_2_pow_53_micros_are_exact() {
    let s = Pinned::start("floored");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let lock = Lock::builder(rt.block_on(connect(&s.server))).tokens(Tokens::TimeFloored).build().unwrap();
    run(&rt, (0u64..4_000, any::<bool>()), |rt, case, (offset, twice)| {
        let micros = P53 + offset; // up to the year 2255 and a little more
        s.pin(micros);
        let name = format!("floored-{case}");
        rt.block_on(async {
            let lease = lock.acquire(&name, Ttl::from_millis(60_000).unwrap()).await.unwrap().unwrap();
            prop_assert_eq!(lease.token(), FencingToken::new(micros), "the clock's token, exactly");
            prop_assert_eq!(lock.current_token(&name).await.unwrap(), Some(lease.token()));
            if twice {
                // The clock has not moved: counter + 1, past 2^53 too.
                assert!(lock.release(&lease).await.unwrap());
                let next = lock.acquire(&name, Ttl::from_millis(60_000).unwrap()).await.unwrap().unwrap();
                prop_assert_eq!(next.token(), FencingToken::new(micros + 1));
            }
            Ok(())
        })
    });
}

/// Both acquire scripts, from any counter near 2^53 or 2^63: the token is
/// counter + 1 exactly (or the clock, for the floored lock with a counter
/// behind it), or the name is refused at 2^63 - 1.
#[test]
fn acquire_tokens_from_counters_near_2_pow_53_and_2_pow_63_are_exact() {
    let server = crate::support::server();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let conn = rt.block_on(connect(&server));
    let locks = [Lock::new(conn.clone()), Lock::builder(conn.clone()).tokens(Tokens::TimeFloored).build().unwrap()];
    run(&rt, (near_edges(), 0usize..2), |rt, case, (counter, which)| {
        let lock = &locks[which];
        let name = format!("acquire-{case}");
        rt.block_on(async {
            set(&mut conn.clone(), &lock.fence_key(&name).unwrap(), counter).await;
            match lock.acquire(&name, Ttl::from_millis(60_000).unwrap()).await {
                // The floored lock's token is the clock where the clock is
                // ahead (a counter below about 1.8e15 µs), as stored.
                Ok(Some(lease)) if which == 1 && counter < P53 => {
                    prop_assert!(lease.token().get() > counter);
                    prop_assert_eq!(lock.current_token(&name).await.unwrap(), Some(lease.token()));
                }
                Ok(Some(lease)) => prop_assert_eq!(lease.token().get(), counter + 1),
                Err(redis_primitives::Error::CorruptState { .. }) => prop_assert_eq!(counter, i64::MAX as u64),
                other => prop_assert!(false, "counter {}: {:?}", counter, other),
            }
            Ok(())
        })
    });
}

/// The sliding log's `retry_after` at pinned instants near 2^53 ms, with
/// windows up to 2^52 ms: exactly `window - (now - t)` for the entry
/// admitted at `t`. Before, `t + window - now` rounded once `t + window`
/// passed 2^53 (1 ms too long at some instants).
#[test]
fn sliding_log_retry_after_is_exact_near_2_pow_53() {
    let server = crate::support::server();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let conn = rt.block_on(connect(&server));
    let window = prop_oneof![(1u64 << 51)..=(1u64 << 52), 1u64..100_000];
    run(&rt, (window, 0u64..1_000, 0u64..1_000), |rt, case, (window, back, gap)| {
        let limit = Limit::new(1, Duration::from_millis(window)).unwrap();
        let log = SlidingWindowLog::new(conn.clone(), limit);
        let now = P53 - 1 - back;
        let gap = gap % window;
        let name = format!("log-{case}");
        rt.block_on(async {
            let first = log.check_at(&name, now - gap).await.unwrap();
            prop_assert!(matches!(first, Decision::Allowed { .. }), "first: {:?}", first);
            match log.check_at(&name, now).await.unwrap() {
                Decision::Denied { retry_after, .. } => {
                    prop_assert_eq!(retry_after, Duration::from_millis(window - gap), "window {} gap {}", window, gap)
                }
                other => prop_assert!(false, "expected a denial, got {:?}", other),
            }
            Ok(())
        })
    });
}

/// The sliding counter near 2^53 ms: its retry is the exact integer
/// arithmetic of its two buckets (`Limit` keeps every product ≤ 2^53).
#[test]
fn sliding_counter_retry_after_is_exact_near_2_pow_53() {
    let server = crate::support::server();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let conn = rt.block_on(connect(&server));
    let window = prop_oneof![(1u64 << 51)..=(1u64 << 52), 1u64..100_000];
    run(&rt, (window, 0u64..1_000, 0u64..1_000), |rt, case, (window, back, gap)| {
        let limit = Limit::new(1, Duration::from_millis(window)).unwrap();
        let counter = SlidingWindowCounter::new(conn.clone(), limit);
        let now = P53 - 1 - back;
        let gap = gap % window;
        let then = now - gap;
        let name = format!("counter-{case}");
        // One admission at `then` (bucket then / w); at `now`, elapsed e in
        // bucket now / w. Same bucket: full, wait for the next bucket and
        // then the weight of this one: 2w - e. Next bucket: the previous
        // admission weighs w - e: wait w - e.
        let (w, e) = (u128::from(window), u128::from(now % window));
        let expected = if then / window == now / window { 2 * w - e } else { w - e };
        rt.block_on(async {
            let first = counter.check_at(&name, then).await.unwrap();
            prop_assert!(matches!(first, Decision::Allowed { .. }), "first: {:?}", first);
            match counter.check_at(&name, now).await.unwrap() {
                Decision::Denied { retry_after, .. } => {
                    prop_assert_eq!(retry_after.as_millis(), expected, "window {} gap {}", window, gap)
                }
                other => prop_assert!(false, "expected a denial, got {:?}", other),
            }
            Ok(())
        })
    });
}

/// The job queue's numbers: a sequence counter and an attempt near 2^53
/// and 2^63, and a lease near the longest one a job takes (2^52 ms), at a
/// pinned clock. The attempt is exactly one more; FIFO holds across the
/// ids enqueued; the lease ends exactly at the pinned instant plus the
/// lease, and a longer lease is refused before anything is sent. Before,
/// a lease whose end passed 2^53 ms was accepted and its end rounded.
#[test]
fn job_queue_sequences_attempts_and_lease_ends_near_2_pow_53_and_2_pow_63_are_exact() {
    const MAX: u64 = JobQueue::<()>::MAX_LEASE_MILLIS;
    let s = Pinned::start("jobs");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let conn = rt.block_on(connect(&s.server));
    let lease = prop_oneof![(0u64..64).prop_map(|d| MAX - 32 + d), (MAX - (1 << 40))..=Ttl::MAX_MILLIS, 1u64..100_000];
    // Up to the year 2262, the last instant the clock library can pin.
    let now_ms = 1_700_000_000_000u64..9_000_000_000_000;
    run(&rt, (near_edges(), near_edges(), lease, now_ms), |rt, case, (seq, attempt, lease, now_ms)| {
        s.pin(now_ms * 1000);
        let q = JobQueue::new(conn.clone(), &format!("exact-{case}")).unwrap();
        let mut c = conn.clone();
        let ttl = Ttl::from_millis(lease).unwrap();
        rt.block_on(async {
            // Room for three more sequence numbers below 2^63.
            set(&mut c, &q.seq_key(), seq.min(i64::MAX as u64 - 3)).await;
            for id in ["c", "b", "a"] {
                q.enqueue(id, id).await.unwrap();
            }
            let attempt = attempt.min(i64::MAX as u64 - 1);
            let job = q.job_key("c").unwrap();
            let _: () =
                redis::cmd("HSET").arg(&job).arg("attempt").arg(attempt.to_string()).query_async(&mut c).await.unwrap();
            if lease > MAX {
                let refused = q.claim(ttl).await;
                let is_invalid = matches!(refused, Err(redis_primitives::Error::InvalidInput { what: "lease", .. }));
                prop_assert!(is_invalid, "lease {}: {:?}", lease, refused);
                prop_assert_eq!(q.state("c").await.unwrap(), Some(redis_primitives::JobState::Pending));
                return Ok(());
            }
            let mut claim = q.claim(ttl).await.unwrap().unwrap();
            prop_assert_eq!(claim.id(), "c", "FIFO from counter {}", seq);
            prop_assert_eq!(claim.attempt(), FencingToken::new(attempt + 1));
            prop_assert_eq!(claim.lease_until_ms(), now_ms + lease, "lease end at {} + {}", now_ms, lease);
            prop_assert!(q.extend(&mut claim, ttl).await.unwrap());
            prop_assert_eq!(claim.lease_until_ms(), now_ms + lease, "extended from the same pinned instant");
            for id in ["b", "a"] {
                let next = q.claim(Ttl::from_millis(1_000).unwrap()).await.unwrap().unwrap();
                prop_assert_eq!(next.id(), id);
            }
            Ok(())
        })
    });
}
