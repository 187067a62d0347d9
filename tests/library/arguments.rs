//! The argument space (issue 13): every constructor and builder argument
//! over its full range, and one real operation for every accepted value.
//!
//! A value a constructor accepts must never overflow, wrap or panic later —
//! least of all after a request has been sent. So each property draws
//! arguments from the whole of their types (any `Duration` up to
//! `Duration::MAX`, any `u64`, any `u32`, with the edges drawn often), checks
//! that validation answers `Ok` or a typed `InvalidInput` without panicking,
//! and then runs one real operation with every accepted configuration
//! against a real redis-server, asserting what must hold (a fresh name is
//! acquired and its token is exact; a first request is admitted; a store
//! orders any two `u64` tokens exactly).
//!
//! proptest catches a panic as a failure and shrinks it. One server and one
//! runtime serve all cases of a property; names are unique per case. The
//! case count is kept modest (64, or `RP_ARGUMENT_CASES`) so the file runs
//! in seconds under `cargo test --workspace`; the RNG is deterministic so CI
//! sees the same cases every run.

use crate::support;

use core::num::NonZeroU32;
use core::time::Duration;
use std::cell::Cell;

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRng, TestRunner};
use redis::aio::MultiplexedConnection;
use redis_primitives::election::{Demotion, Election};
use redis_primitives::rate_limit::{Decision, Limit, SlidingWindowCounter, SlidingWindowLog};
use redis_primitives::redlock::{Acquisition, Redlock, RedlockConfig, Vote};
use redis_primitives::{
    Drift, Error, FencedStore, FencingToken, GuardedOutcome, KeepAlive, Lock, Retry, Ttl, WriteOutcome,
};
use support::{connect, RedisServer};

// ------------------------------------------------------------ strategies

/// Any `Duration`, with the interesting edges drawn often: zero, whole and
/// fractional milliseconds, the largest TTL and one past it, 2^64 µs (where
/// `as_micros() as u64` wraps), and `Duration::MAX`.
fn any_duration() -> impl Strategy<Value = Duration> {
    prop_oneof![
        2 => prop_oneof![
            Just(Duration::ZERO),
            Just(Duration::from_nanos(1)),
            Just(Duration::from_millis(1)),
            Just(Duration::from_millis(Ttl::MAX_MILLIS)),
            Just(Duration::from_millis(Ttl::MAX_MILLIS + 1)),
            Just(Duration::from_micros(u64::MAX)),
            Just(Duration::from_micros(u64::MAX) + Duration::from_micros(1)),
            Just(Duration::MAX),
        ],
        3 => (1u64..5_000).prop_map(Duration::from_millis),
        1 => (0u64..5_000_000).prop_map(Duration::from_micros),
        2 => any::<u64>().prop_map(Duration::from_millis),
        2 => (any::<u64>(), 0u32..1_000_000_000).prop_map(|(s, n)| Duration::new(s, n)),
    ]
}

/// Mostly `lo..hi` milliseconds (values a caller would plausibly pass, so
/// that most cases get past validation to a real operation), otherwise any
/// `Duration` at all.
fn mostly_ms(lo: u64, hi: u64) -> impl Strategy<Value = Duration> {
    prop_oneof![3 => (lo..hi).prop_map(Duration::from_millis), 1 => any_duration()]
}

/// A TTL-like duration: mostly a few seconds, often any whole millisecond
/// up to the largest TTL, otherwise any `Duration`.
fn ttl_like() -> impl Strategy<Value = Duration> {
    prop_oneof![
        3 => (1u64..5_000).prop_map(Duration::from_millis),
        2 => (1u64..=Ttl::MAX_MILLIS).prop_map(Duration::from_millis),
        1 => any_duration(),
    ]
}

/// Any `u64`, edges often (0, 1, 2^53 ± 1, 2^63 − 1, `u64::MAX`).
fn any_u64() -> impl Strategy<Value = u64> {
    prop_oneof![
        1 => prop_oneof![
            Just(0u64),
            Just(1),
            Just((1 << 53) - 1),
            Just(1 << 53),
            Just((1 << 53) + 1),
            Just(i64::MAX as u64),
            Just(u64::MAX - 1),
            Just(u64::MAX),
        ],
        1 => 0u64..1_000,
        2 => any::<u64>(),
    ]
}

/// Any `u32`, edges often (the drift factor's bound is 1000).
fn any_u32() -> impl Strategy<Value = u32> {
    prop_oneof![Just(0u32), Just(10), Just(999), Just(1000), Just(u32::MAX), 0u32..2_000, any::<u32>()]
}

/// A drift setting: mostly small (a few per mille, a few ms), otherwise
/// any factor and any constant.
fn any_drift() -> impl Strategy<Value = (u32, Duration)> {
    (prop_oneof![3 => 0u32..100, 1 => any_u32()], mostly_ms(0, 20))
}

// ------------------------------------------------------------ harness

/// Runs `property` over `strategy` with one real redis-server and one
/// runtime for all cases. The closure gets a fresh case number for names,
/// and returns whether the case got as far as a real operation (`false`:
/// validation refused it). At least `min_ran` of the cases must: a strategy
/// whose values are all refused would test nothing past validation.
fn check<S: Strategy>(
    name: &str,
    min_ran: f64,
    strategy: S,
    property: impl Fn(
        &tokio::runtime::Runtime,
        &MultiplexedConnection,
        &RedisServer,
        u64,
        S::Value,
    ) -> Result<bool, TestCaseError>,
) {
    let cases = std::env::var("RP_ARGUMENT_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(64);
    let config = Config { cases, failure_persistence: None, ..Config::default() };
    let mut runner = TestRunner::new_with_rng(config.clone(), TestRng::deterministic_rng(config.rng_algorithm));
    let server = support::server();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let conn = rt.block_on(connect(&server));
    let (case, ran) = (Cell::new(0u64), Cell::new(0u64));
    let result = runner.run(&strategy, |value| {
        case.set(case.get() + 1);
        let reached = property(&rt, &conn, &server, case.get(), value)?;
        ran.set(ran.get() + u64::from(reached));
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    println!("{name}: {} of {} cases ran a real operation", ran.get(), case.get());
    assert!(ran.get() as f64 >= min_ran * case.get() as f64, "{name}: too few cases got past validation");
}

/// `Ok(v)`, or a typed `InvalidInput` (`None`). Anything else fails the case.
fn accepted<T: core::fmt::Debug>(r: Result<T, Error>) -> Result<Option<T>, TestCaseError> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(Error::InvalidInput { .. }) => Ok(None),
        Err(e) => Err(TestCaseError::fail(format!("validation gave {e:?}, not Ok or InvalidInput"))),
    }
}

// ------------------------------------------------------ documented rules
//
// What each constructor must accept, stated on the drawn arguments with
// the documentation's own numbers (the rules the simulation's
// `input-validation` checker stated until issue #46 moved them here):
// every property asserts that a value is accepted exactly when its rule
// says so. `documented_edges.rs` tries both sides of each edge on purpose.

/// A TTL: 1 ms to 2^53 − 1 ms, in whole milliseconds.
fn ttl_rule(d: Duration) -> bool {
    !d.is_zero() && d.subsec_nanos() % 1_000_000 == 0 && d.as_millis() <= u128::from(Ttl::MAX_MILLIS)
}

/// A drift: a factor below 1000‰, a constant at most the longest TTL.
fn drift_rule(per_mille: u32, constant: Duration) -> bool {
    per_mille < 1000 && constant <= Duration::from_millis(Ttl::MAX_MILLIS)
}

/// What `ttl` leaves once the drift is taken off, in ns.
fn usable_ns(ttl: Duration, (per_mille, constant): (u32, Duration)) -> u128 {
    let ttl = ttl.as_nanos();
    ttl.saturating_sub(ttl * u128::from(per_mille) / 1000 + constant.as_nanos())
}

// ------------------------------------------------------------ properties

#[test]
fn ttl_drift_and_fence_counters_up_to_2_pow_63() {
    // Counter presets: absent, or anything a Redis integer can hold.
    let counter = prop_oneof![Just(None), (0u64..=i64::MAX as u64).prop_map(Some), any_u64().prop_map(Some)];
    check(
        "lock",
        0.25,
        (ttl_like(), any_drift(), counter),
        |rt, conn, server, case, (ttl, (factor, constant), counter)| {
            let ttl_ok = accepted(Ttl::new(ttl))?;
            let drift_ok = accepted(Drift::new(factor, constant))?;
            prop_assert_eq!(ttl_ok.is_some(), ttl_rule(ttl), "Ttl::new({:?})", ttl);
            prop_assert_eq!(drift_ok.is_some(), drift_rule(factor, constant), "Drift::new({}, {:?})", factor, constant);
            let _ = Drift::DEFAULT.allowance(ttl); // total for any Duration
            if let Some(drift) = drift_ok {
                let _ = drift.allowance(ttl);
            }
            let (Some(ttl), Some(drift)) = (ttl_ok, drift_ok) else { return Ok(false) };
            let lock = Lock::builder(conn.clone()).drift(drift).build().unwrap();
            let name = format!("lock-{case}");
            if let Some(c) = counter {
                server.command(&["SET", &lock.fence_key(&name).unwrap(), &c.to_string()]).unwrap();
            }
            rt.block_on(async {
                match (lock.acquire(&name, ttl).await, counter) {
                    (Ok(Some(mut lease)), c) => {
                        let expected = c.unwrap_or(0) + 1;
                        prop_assert_eq!(lease.token().get(), expected, "token must be exactly counter + 1");
                        prop_assert_eq!(lock.current_token(&name).await.unwrap(), Some(lease.token()));
                        prop_assert!(lock.extend(&mut lease, ttl).await.unwrap());
                        prop_assert!(lock.release(&lease).await.unwrap());
                    }
                    // A counter INCR cannot advance: refused, nothing taken.
                    (Err(Error::CorruptState { .. }), Some(c)) if c >= i64::MAX as u64 => {
                        prop_assert_eq!(server.command(&["EXISTS", &lock.key(&name).unwrap()]).unwrap(), ":0\r\n");
                    }
                    (other, c) => prop_assert!(false, "counter {:?}: acquire gave {:?}", c, other),
                }
                Ok(true)
            })
        },
    );
}

#[test]
fn keep_alive_and_with_lock_guarded() {
    check(
        "keep-alive",
        0.25,
        (ttl_like(), mostly_ms(1, 2_000), any_drift()),
        |rt, conn, _, case, (ttl, every, (factor, constant))| {
            let (Some(ttl), Some(drift)) = (accepted(Ttl::new(ttl))?, accepted(Drift::new(factor, constant))?) else {
                return Ok(false);
            };
            let lock = Lock::builder(conn.clone()).drift(drift).build().unwrap();
            let _ = accepted(KeepAlive::thirds(&lock, ttl))?;
            let policy = accepted(KeepAlive::new(&lock, ttl, every))?;
            let rule = !every.is_zero() && every.as_nanos() < usable_ns(ttl.as_duration(), (factor, constant));
            prop_assert_eq!(
                policy.is_some(),
                rule,
                "KeepAlive::new({}, {:?}), drift {}‰ {:?}",
                ttl,
                every,
                factor,
                constant
            );
            let Some(policy) = policy else { return Ok(false) };
            rt.block_on(async {
                let outcome = lock.with_lock_guarded(&format!("guarded-{case}"), policy, |_| async { 7 }).await;
                match outcome {
                    Ok(GuardedOutcome::Completed { output, .. }) => prop_assert_eq!(output, 7),
                    // A lease so short its deadline passed before the reply.
                    Ok(GuardedOutcome::Cancelled { .. }) => {}
                    other => prop_assert!(false, "with_lock_guarded gave {:?}", other),
                }
                Ok(true)
            })
        },
    );
}

#[test]
fn limits_and_both_limiters_with_any_pinned_instant() {
    let max = prop_oneof![3 => 1u64..1_000, 1 => any_u64()];
    let now = prop::option::of(prop_oneof![1_700_000_000_000u64..1_800_000_000_000, any_u64()]);
    check("limit", 0.25, (max, ttl_like(), now), |rt, conn, _, case, (max, window, now)| {
        let limit = accepted(Limit::new(max, window))?;
        let window_ms = u64::try_from(window.as_millis()).unwrap_or(u64::MAX);
        let rule = max >= 1 && ttl_rule(window) && max.checked_mul(window_ms).is_some_and(|p| p <= 1 << 52);
        prop_assert_eq!(limit.is_some(), rule, "Limit::new({}, {:?})", max, window);
        let Some(limit) = limit else { return Ok(false) };
        rt.block_on(async {
            let log = SlidingWindowLog::new(conn.clone(), limit);
            let counter = SlidingWindowCounter::new(conn.clone(), limit);
            let name = format!("limit-{case}");
            let decisions = match now {
                None => [log.check(&name).await, counter.check(&name).await],
                Some(t) => [log.check_at(&name, t).await, counter.check_at(&name, t).await],
            };
            for d in decisions {
                match d {
                    // The first request on a fresh name is always admitted.
                    Ok(Decision::Allowed { count: 1, .. }) => {}
                    Err(Error::InvalidInput { what: "now", .. }) if now.is_some_and(|t| t > Ttl::MAX_MILLIS) => {}
                    other => prop_assert!(false, "first decision {:?} (limit {:?}, now {:?})", other, limit, now),
                }
            }
            Ok(true)
        })
    });
}

#[test]
fn retry_policies() {
    let attempts = prop_oneof![1u32..10, 1u32..=u32::MAX];
    let args = (attempts, mostly_ms(1, 100), mostly_ms(1, 10_000), prop::option::of(any_duration()), any::<u64>());
    check("retry", 0.25, args, |rt, conn, _, case, (attempts, base, max, deadline, seed)| {
        let retry = accepted(Retry::new(NonZeroU32::new(attempts).unwrap(), base, max))?;
        prop_assert_eq!(retry.is_some(), !base.is_zero() && max >= base, "Retry::new({:?}, {:?})", base, max);
        let Some(mut retry) = retry else { return Ok(false) };
        if let Some(d) = deadline {
            retry = retry.deadline(d);
        }
        let retry = retry.seeded(seed);
        let lock = Lock::new(conn.clone());
        let name = format!("retry-{case}");
        rt.block_on(async {
            // A free lock: the first attempt wins at once.
            let lease = retry.run(|| lock.acquire(&name, Ttl::from_millis(60_000).unwrap())).await;
            let lease = match lease {
                Ok(Some(lease)) => lease,
                other => return Err(TestCaseError::fail(format!("first attempt on a free lock: {other:?}"))),
            };
            // A held one: the delay arithmetic runs; a long sleep is fine.
            let waited = tokio::time::timeout(
                Duration::from_millis(20),
                retry.run(|| lock.acquire(&name, Ttl::from_millis(1000).unwrap())),
            )
            .await;
            prop_assert!(matches!(waited, Err(_) | Ok(Ok(None))), "{:?}", waited);
            prop_assert!(lock.release(&lease).await.unwrap());
            Ok(true)
        })
    });
}

#[test]
fn election_builders() {
    let demotion = prop_oneof![Just(Demotion::AtDeadline), Just(Demotion::OnRenewTick)];
    let args = (
        ttl_like(),
        prop::option::of(mostly_ms(1, 1_000)),
        prop::option::of(mostly_ms(1, 1_000)),
        any_drift(),
        demotion,
    );
    check("election", 0.25, args, |rt, conn, _, case, (lease, renew, campaign, (factor, constant), demotion)| {
        let Some(drift) = accepted(Drift::new(factor, constant))? else { return Ok(false) };
        let mut builder = Election::builder(conn.clone(), format!("election-{case}"))
            .lease_ttl(lease)
            .drift(drift)
            .demotion(demotion);
        if let Some(r) = renew {
            builder = builder.renew_interval(r);
        }
        if let Some(c) = campaign {
            builder = builder.campaign_interval(c);
        }
        let node = accepted(builder.build())?;
        // Renew every third of the lease unless given, campaign as often as
        // renewing unless given.
        let usable = usable_ns(lease, (factor, constant));
        let renew_every = renew.unwrap_or(lease / 3);
        let rule = ttl_rule(lease)
            && usable > 0
            && !renew_every.is_zero()
            && renew_every < lease
            && renew_every.as_nanos() <= usable / 2
            && !campaign.unwrap_or(renew_every).is_zero();
        prop_assert_eq!(
            node.is_some(),
            rule,
            "election {:?} {:?} {:?}, drift {}‰ {:?}",
            lease,
            renew,
            campaign,
            factor,
            constant
        );
        let Some(node) = node else { return Ok(false) };
        rt.block_on(async {
            // The first campaign is immediate; stop() hands back whatever it won.
            let task = node.start();
            tokio::time::sleep(Duration::from_millis(15)).await;
            node.stop().await;
            let ended = task.await.expect("run() must not panic");
            prop_assert!(ended.is_ok(), "run() ended with {:?}", ended);
            Ok(true)
        })
    });
}

#[test]
fn redlock_configurations() {
    let ttl_ms = prop_oneof![1u64..5_000, 1u64..=Ttl::MAX_MILLIS, Just(Ttl::MAX_MILLIS)];
    let args = (ttl_ms, any_drift(), mostly_ms(1, 100), mostly_ms(1, 1_000));
    check("redlock", 0.25, args, |rt, conn, _, case, (ttl_ms, (factor, constant), master_timeout, handshake)| {
        let Some(drift) = accepted(Drift::new(factor, constant))? else { return Ok(false) };
        let config = RedlockConfig::new(Ttl::from_millis(ttl_ms).unwrap())
            .drift(drift)
            .master_timeout(master_timeout)
            .handshake_timeout(handshake);
        rt.block_on(async {
            let redlock = accepted(Redlock::connect(vec![conn.clone()], config).await)?;
            let ttl = Duration::from_millis(ttl_ms);
            let rule = usable_ns(ttl, (factor, constant)) > 0
                && !master_timeout.is_zero()
                && master_timeout < ttl
                && !handshake.is_zero();
            prop_assert_eq!(
                redlock.is_some(),
                rule,
                "redlock {:?} {:?} {:?}, drift {}‰ {:?}",
                ttl,
                master_timeout,
                handshake,
                factor,
                constant
            );
            let Some(redlock) = redlock else { return Ok(false) };
            let _ = redlock.drift_allowance();
            match redlock.acquire(&format!("redlock-{case}")).await {
                Ok(Acquisition::Held(lease)) => {
                    let released = redlock.release(&lease).await;
                    // A per-master timeout of a few ms can run out on a busy
                    // machine (the tests run in parallel): then the release
                    // says so; any answer it got must be the delete.
                    let timed_out = released.masters.iter().all(|m| matches!(m.vote, Vote::TimedOut));
                    prop_assert!(
                        released.deleted == 1 || timed_out,
                        "release of a held lease: {:?} (master timeout {:?})",
                        released.masters,
                        master_timeout
                    );
                }
                // A per-master timeout too short for loopback, or no validity left.
                Ok(Acquisition::Refused(_)) => {}
                Err(e) => prop_assert!(false, "acquire: {:?}", e),
            }
            Ok(true)
        })
    });
}

#[test]
fn fenced_store_orders_any_two_u64_tokens_exactly() {
    check("fenced-store", 1.0, (any_u64(), any_u64()), |rt, conn, _, case, (first, second)| {
        let store = FencedStore::new(conn.clone());
        let key = format!("doc-{case}");
        rt.block_on(async {
            let (a, b) = (FencingToken::new(first), FencingToken::new(second));
            prop_assert_eq!(store.write(&key, b"a", a).await.unwrap(), WriteOutcome::Accepted);
            let expected = if second >= first {
                WriteOutcome::Accepted
            } else {
                WriteOutcome::Rejected { rejected_token: b, highest_seen: a }
            };
            prop_assert_eq!(store.write(&key, b"b", b).await.unwrap(), expected);
            let stored = store.read(&key).await.unwrap().unwrap();
            prop_assert_eq!(stored.token, a.max(b));
            Ok(true)
        })
    });
}
