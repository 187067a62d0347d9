//! Rate limiters against a real redis-server: reference cases 16–22, the
//! sliding counter's overshoot bound, the WATCH/MULTI experiment, bad input
//! and Redis faults.
//!
//! Pinned clocks (`check_at`) give exact instants. Pinned bases are taken
//! from the server's own clock, and pinned windows are at least a second
//! long, because a key's idle expiry runs on the server's real clock: pinned
//! time must not fall behind real time or entries would expire early.

use crate::support;

use core::time::Duration;
use std::sync::Arc;

use redis::aio::MultiplexedConnection;
use redis_primitives::rate_limit::{Decision, Limit, SlidingWindowCounter, SlidingWindowLog};
use redis_primitives::Error;
use redis_primitives_naive::{ClientSideWindow, NaiveFixedWindow};
use tokio::sync::Barrier;
use tokio::task::JoinSet;

#[path = "../../examples/watch_multi.rs"]
#[allow(dead_code)]
mod watch_multi_example;

fn limit(max: u64, window_ms: u64) -> Limit {
    Limit::new(max, Duration::from_millis(window_ms)).expect("valid limit")
}

/// The server's clock, unix ms.
async fn server_ms(conn: &MultiplexedConnection) -> u64 {
    let mut conn = conn.clone();
    let (s, us): (u64, u64) = redis::cmd("TIME").query_async(&mut conn).await.expect("TIME");
    s * 1000 + us / 1000
}

/// The start of the next `window`-aligned bucket on the server's clock, so
/// that "+1000" is a fixed-window (and counter-bucket) boundary.
async fn aligned_base(conn: &MultiplexedConnection, window: u64) -> u64 {
    (server_ms(conn).await / window + 1) * window
}

async fn query<T: redis::FromRedisValue>(conn: &MultiplexedConnection, cmd: &mut redis::Cmd) -> T {
    let mut conn = conn.clone();
    cmd.query_async(&mut conn).await.expect("redis command")
}

/// The most admissions in any window `(t - window, t]`.
fn max_in_any_window(times: &[u64], window: u64) -> usize {
    let mut times = times.to_vec();
    times.sort_unstable();
    let mut best = 0;
    let mut first = 0;
    for (last, &t) in times.iter().enumerate() {
        while times[first] + window <= t {
            first += 1;
        }
        best = best.max(last - first + 1);
    }
    best
}

/// A small deterministic generator (the sweep must not depend on luck).
struct Lcg(u64);
impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

// ---------------------------------------------------------------- case 16–17

/// Case 16: 5 requests at +900..904 and 5 at +1000..1004 are all admitted by
/// a fixed window: 10 within 104 ms against 5 per 1000 ms.
#[tokio::test]
async fn case16_naive_fixed_window_admits_double_at_the_boundary() {
    let server = support::server();
    let conn = support::connect(&server).await;
    let fixed = NaiveFixedWindow::new(conn.clone(), limit(5, 1000));
    let base = aligned_base(&conn, 1000).await;
    let mut admitted = Vec::new();
    for t in (900..905).chain(1000..1005) {
        if fixed.check_at("c16", base + t).await.unwrap().is_allowed() {
            admitted.push(base + t);
        }
    }
    let span = admitted.last().unwrap() - admitted.first().unwrap();
    println!("case 16: naive fixed window admitted {}/10 within {span} ms (limit 5 per 1000 ms)", admitted.len());
    assert_eq!(admitted.len(), 10);
    assert_eq!(span, 104);
    assert_eq!(max_in_any_window(&admitted, 1000), 10, "twice the limit inside one window");
}

/// Case 17: `INCR` without the following `EXPIRE` (the process died between
/// them) leaves a counter with no TTL (`PTTL` = −1), still there after the
/// window has long passed; the two-step path does set one.
#[tokio::test]
async fn case17_naive_fixed_window_incr_without_expire_lives_forever() {
    let server = support::server();
    let conn = support::connect(&server).await;
    let fixed = NaiveFixedWindow::new(conn.clone(), limit(5, 200));
    let now = server_ms(&conn).await;

    assert_eq!(fixed.incr_only("crashed", now).await.unwrap(), 1);
    assert!(fixed.check_at("healthy", now).await.unwrap().is_allowed());
    let crashed = fixed.key("crashed", now).unwrap();
    let healthy = fixed.key("healthy", now).unwrap();
    assert_eq!(query::<i64>(&conn, redis::cmd("PTTL").arg(&crashed)).await, -1);
    let pttl: i64 = query(&conn, redis::cmd("PTTL").arg(&healthy)).await;
    assert!((1..=200).contains(&pttl), "the two-step path sets a TTL, got {pttl}");

    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(query::<i64>(&conn, redis::cmd("EXISTS").arg(&healthy)).await, 0);
    assert_eq!(query::<i64>(&conn, redis::cmd("PTTL").arg(&crashed)).await, -1, "still no TTL");
    assert_eq!(query::<Option<String>>(&conn, redis::cmd("GET").arg(&crashed)).await.as_deref(), Some("1"));
    println!("case 17: INCR without EXPIRE: PTTL -1, key still present 500 ms after a 200 ms window");
}

// ---------------------------------------------------------------- case 18–20

/// Case 18: the same boundary burst against the sliding log admits exactly
/// 5; continued traffic for three more windows never puts more than 5 in
/// any window, and does reach 5.
#[tokio::test]
async fn case18_sliding_log_boundary_burst_admits_exactly_the_limit() {
    let server = support::server();
    let conn = support::connect(&server).await;
    let log = SlidingWindowLog::new(conn.clone(), limit(5, 1000));
    let base = aligned_base(&conn, 1000).await;

    let mut admitted = Vec::new();
    for t in (900..905).chain(1000..1005) {
        let d = log.check_at("c18", base + t).await.unwrap();
        assert_eq!(d.at_ms(), base + t, "the decision reports the pinned instant");
        if d.is_allowed() {
            admitted.push(d.at_ms());
        }
    }
    println!("case 18: sliding log admitted {}/10 of the boundary burst", admitted.len());
    assert_eq!(admitted, (900..905).map(|t| base + t).collect::<Vec<_>>());

    // Keep going, in time order: a request every 37 ms plus a burst of 8
    // every 450 ms.
    let mut schedule: Vec<u64> =
        (1005..4000u64).step_by(37).chain((1100..4000).step_by(450).flat_map(|t| t..t + 8)).collect();
    schedule.sort_unstable();
    for t in schedule {
        if log.check_at("c18", base + t).await.unwrap().is_allowed() {
            admitted.push(base + t);
        }
    }
    let worst = max_in_any_window(&admitted, 1000);
    println!("case 18: {} admissions in total, at most {worst} in any 1000 ms window", admitted.len());
    assert_eq!(worst, 5);
}

/// Case 19: limit 3: +0/+10/+20 allowed; +30 denied with retry-after
/// 970 ms; +999 denied; +1000 allowed; +1001 denied.
#[tokio::test]
async fn case19_sliding_log_retry_after_and_window_edges() {
    let server = support::server();
    let conn = support::connect(&server).await;
    let log = SlidingWindowLog::new(conn.clone(), limit(3, 1000));
    let base = server_ms(&conn).await;
    let at = |t: u64| log.check_at("c19", base + t);

    for (t, count) in [(0, 1), (10, 2), (20, 3)] {
        assert_eq!(at(t).await.unwrap(), Decision::Allowed { count, remaining: 3 - count, at_ms: base + t });
    }
    assert_eq!(
        at(30).await.unwrap(),
        Decision::Denied { count: 3, retry_after: Duration::from_millis(970), at_ms: base + 30 }
    );
    assert_eq!(
        at(999).await.unwrap(),
        Decision::Denied { count: 3, retry_after: Duration::from_millis(1), at_ms: base + 999 }
    );
    assert_eq!(at(1000).await.unwrap(), Decision::Allowed { count: 3, remaining: 0, at_ms: base + 1000 });
    assert_eq!(
        at(1001).await.unwrap(),
        Decision::Denied { count: 3, retry_after: Duration::from_millis(9), at_ms: base + 1001 }
    );
    // Denials recorded nothing: the log holds +10, +20, +1000.
    let key = log.key("c19").unwrap();
    let scores: Vec<(String, u64)> =
        query(&conn, redis::cmd("ZRANGE").arg(&key).arg(0).arg(-1).arg("WITHSCORES")).await;
    assert_eq!(scores.iter().map(|(_, s)| s - base).collect::<Vec<_>>(), vec![10, 20, 1000]);
}

/// Case 20: with no pinned clock, Redis' own clock decides (window 300 ms,
/// limit 2: allowed, allowed, denied; 360 ms later allowed). The decisions
/// report the server's time, and the key expires once idle.
#[tokio::test]
async fn case20_sliding_log_uses_the_redis_clock_when_unpinned() {
    let server = support::server();
    let conn = support::connect(&server).await;
    let log = SlidingWindowLog::new(conn.clone(), limit(2, 300));

    let before = server_ms(&conn).await;
    let first = log.check("c20").await.unwrap();
    let second = log.check("c20").await.unwrap();
    let third = log.check("c20").await.unwrap();
    let after = server_ms(&conn).await;
    assert!(first.is_allowed() && second.is_allowed(), "{first:?} {second:?}");
    for d in [first, second, third] {
        assert!((before..=after).contains(&d.at_ms()), "decided at the server's time: {d:?}");
    }
    // Guard against a machine stalled for the whole window: the
    // assertion is about the mechanism, so state it in its own terms.
    let elapsed = third.at_ms() - first.at_ms();
    if elapsed < 300 {
        assert_eq!(
            third,
            Decision::Denied { count: 2, retry_after: Duration::from_millis(300 - elapsed), at_ms: third.at_ms() }
        );
    } else {
        panic!("the host stalled {elapsed} ms between two local round trips; cannot test case 20");
    }
    let key = log.key("c20").unwrap();
    let pttl: i64 = query(&conn, redis::cmd("PTTL").arg(&key)).await;
    assert!((1..=300).contains(&pttl), "idle expiry of one window, got {pttl}");

    tokio::time::sleep(Duration::from_millis(360)).await;
    let fourth = log.check("c20").await.unwrap();
    assert!(fourth.is_allowed(), "{fourth:?}");
    assert!(fourth.at_ms() >= first.at_ms() + 360);

    tokio::time::sleep(Duration::from_millis(400)).await;
    assert_eq!(query::<i64>(&conn, redis::cmd("EXISTS").arg(&key)).await, 0, "an idle key expires");
    println!("case 20: server clock: allowed, allowed, denied ({elapsed} ms apart), allowed 360 ms later");
}

// ---------------------------------------------------------------- case 21–22

/// Case 21: trim, count and add as three round trips; 100 concurrent
/// callers on one shared connection against a limit of 5 overshoot, and
/// the overshoot is really recorded. A single-threaded runtime keeps the
/// callers in step (as in the reference); on a multi-threaded one the size
/// of the overshoot depends on scheduling, down to none when the callers
/// happen to run one after another.
#[tokio::test]
async fn case21_client_side_window_overshoots_under_concurrency() {
    let server = support::server();
    let conn = support::connect(&server).await;
    let naive = ClientSideWindow::new(conn.clone(), limit(5, 60_000));
    let now = server_ms(&conn).await;
    let barrier = Arc::new(Barrier::new(100));
    let mut tasks = JoinSet::new();
    for _ in 0..100 {
        let (naive, barrier) = (naive.clone(), barrier.clone());
        tasks.spawn(async move {
            barrier.wait().await;
            naive.check_at("c21", now).await.unwrap()
        });
    }
    let mut admitted = 0u64;
    while let Some(d) = tasks.join_next().await {
        admitted += u64::from(d.unwrap().is_allowed());
    }
    let recorded: u64 = query(&conn, redis::cmd("ZCARD").arg(naive.key("c21").unwrap())).await;
    println!("case 21: client-side window admitted {admitted}/100 against limit 5 ({recorded} recorded)");
    assert!(admitted > 5, "expected an overshoot, admitted {admitted}");
    assert_eq!(recorded, admitted);
}

/// Case 22: the Lua sliding log with 200 concurrent callers on one shared
/// connection, limit 50: exactly 50 admitted, the set holds exactly 50
/// members, and the admitted counts are exactly 1..=50 (serialised).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn case22_sliding_log_exact_under_200_concurrent_callers() {
    let server = support::server();
    let conn = support::connect(&server).await;
    let log = SlidingWindowLog::new(conn.clone(), limit(50, 60_000));
    let barrier = Arc::new(Barrier::new(200));
    let mut tasks = JoinSet::new();
    for _ in 0..200 {
        let (log, barrier) = (log.clone(), barrier.clone());
        tasks.spawn(async move {
            barrier.wait().await;
            log.check("c22").await.unwrap()
        });
    }
    let mut counts = Vec::new();
    let mut denied = 0;
    while let Some(d) = tasks.join_next().await {
        match d.unwrap() {
            Decision::Allowed { count, remaining, .. } => {
                assert_eq!(count + remaining, 50);
                counts.push(count);
            }
            Decision::Denied { count, retry_after, .. } => {
                assert_eq!(count, 50);
                assert!(retry_after <= Duration::from_secs(60) && !retry_after.is_zero());
                denied += 1;
            }
        }
    }
    counts.sort_unstable();
    let recorded: u64 = query(&conn, redis::cmd("ZCARD").arg(log.key("c22").unwrap())).await;
    println!("case 22: Lua sliding log admitted {}/200 against limit 50 ({recorded} recorded)", counts.len());
    assert_eq!(counts, (1..=50).collect::<Vec<_>>());
    assert_eq!(denied, 150);
    assert_eq!(recorded, 50);
}

// ------------------------------------------------- WATCH/MULTI experiment

/// The WATCH/MULTI experiment (`examples/watch_multi.rs`, same code), 100
/// callers, limit 5: on one shared multiplexed connection it overshoots; a
/// connection per caller admits exactly the limit, with retries; the Lua
/// log admits exactly the limit with none. Single-threaded runtime, as the
/// example (see its docs).
#[tokio::test]
async fn watch_multi_experiment_shared_connection_overshoots() {
    let server = support::server();
    let e = watch_multi_example::Experiment::run(&server, 100, 5).await;
    for line in e.lines() {
        println!("{line}");
    }
    assert!(e.shared.admitted > 5, "shared connection: {:?}", e.shared);
    assert_eq!(e.shared.recorded, e.shared.admitted, "the overshoot is really recorded");
    assert_eq!((e.per_caller.admitted, e.per_caller.recorded), (5, 5), "{:?}", e.per_caller);
    assert!(e.per_caller.retries > 0, "losers of the race retry: {:?}", e.per_caller);
    assert_eq!(e.lua, watch_multi_example::Figures { admitted: 5, retries: 0, recorded: 5 });
}

// ------------------------------------------------- the counter's bound

/// The documented worst case of the sliding counter, `2 × max − 1` in one
/// window, is reached exactly: 5 admissions in the last millisecond of a
/// bucket, then 4 more 2 ms before the end of the next bucket, all inside
/// one 1000 ms window. The reference burst of case 16 stays within `max`.
#[tokio::test]
async fn counter_boundary_burst_reaches_exactly_the_documented_bound() {
    let server = support::server();
    let conn = support::connect(&server).await;
    let counter = SlidingWindowCounter::new(conn.clone(), limit(5, 1000));
    assert_eq!(counter.worst_case_admissions(), 9);
    let base = aligned_base(&conn, 1000).await;

    let mut admitted = Vec::new();
    for _ in 0..10 {
        let d = counter.check_at("worst", base + 999).await.unwrap();
        if d.is_allowed() {
            admitted.push(d.at_ms());
        }
    }
    assert_eq!(admitted.len(), 5, "a fresh bucket admits exactly the limit");
    for _ in 0..10 {
        let d = counter.check_at("worst", base + 1998).await.unwrap();
        if d.is_allowed() {
            admitted.push(d.at_ms());
        }
    }
    let worst = max_in_any_window(&admitted, 1000) as u64;
    println!("counter: boundary burst admitted {worst} in one 1000 ms window (limit 5, documented bound 9)");
    assert_eq!(worst, counter.worst_case_admissions());

    // The reference burst of case 16, on a bucket boundary: the previous
    // bucket's 5 weigh almost fully at +1000, so nothing more gets in.
    let mut burst = Vec::new();
    for t in (900..905).chain(1000..1005) {
        if counter.check_at("c16-burst", base + t).await.unwrap().is_allowed() {
            burst.push(base + t);
        }
    }
    println!("counter: case-16 boundary burst admitted {}/10", burst.len());
    assert_eq!(burst.len(), 5);
}

/// A seeded sweep of bursty schedules over many limits and windows: the
/// counter never puts more than `2 × max − 1` admissions in any window, and
/// the log never more than `max` on the same schedules.
#[tokio::test]
async fn counter_never_exceeds_the_bound_in_a_seeded_sweep() {
    let server = support::server();
    let conn = support::connect(&server).await;
    let mut rng = Lcg(0x5eed_0002);
    let base = aligned_base(&conn, 1000).await;
    let mut worst_ratio = 0.0f64;
    for trial in 0..24 {
        let max = 1 + rng.below(6);
        let window = [1000, 1001, 1500, 2000, 7919][rng.below(5) as usize];
        let lim = limit(max, window);
        let counter = SlidingWindowCounter::new(conn.clone(), lim);
        let log = SlidingWindowLog::new(conn.clone(), lim);
        let name = format!("sweep-{trial}");
        let (mut by_counter, mut by_log) = (Vec::new(), Vec::new());
        let mut t = base;
        for _ in 0..150 {
            // Mostly bursts at one instant, sometimes long gaps, often
            // right before or after a bucket boundary.
            t += match rng.below(4) {
                0 => 0,
                1 => rng.below(3),
                2 => rng.below(window),
                _ => window - t % window - 1 + rng.below(3),
            };
            if counter.check_at(&name, t).await.unwrap().is_allowed() {
                by_counter.push(t);
            }
            if log.check_at(&name, t).await.unwrap().is_allowed() {
                by_log.push(t);
            }
        }
        let c = max_in_any_window(&by_counter, window) as u64;
        let l = max_in_any_window(&by_log, window) as u64;
        let bound = counter.worst_case_admissions();
        assert_eq!(bound, 2 * max - 1);
        assert!(c <= bound, "trial {trial}: counter put {c} in one window, max {max}, window {window}");
        assert!(l <= max, "trial {trial}: log put {l} in one window, max {max}");
        worst_ratio = worst_ratio.max(c as f64 / max as f64);
    }
    println!("counter sweep: worst admissions/limit in any window = {worst_ratio:.2} (bound < 2)");
}

/// `retry_after` is exact for both limiters: one millisecond earlier is
/// still denied, at `retry_after` a request is admitted (denials record
/// nothing, so probing does not change the state).
#[tokio::test]
async fn retry_after_is_exact_for_both_limiters() {
    let server = support::server();
    let conn = support::connect(&server).await;
    let mut rng = Lcg(0x7e7);
    let base = aligned_base(&conn, 1000).await;
    let mut probes = 0;
    for trial in 0..40 {
        let max = 1 + rng.below(5);
        let window = [1000, 1237, 3000][rng.below(3) as usize];
        let lim = limit(max, window);
        let counter = SlidingWindowCounter::new(conn.clone(), lim);
        let log = SlidingWindowLog::new(conn.clone(), lim);
        for which in 0..2 {
            let name = format!("retry-{trial}-{which}");
            let check = |t: u64| {
                let (counter, log, name) = (counter.clone(), log.clone(), name.clone());
                async move {
                    if which == 0 {
                        counter.check_at(&name, t).await
                    } else {
                        log.check_at(&name, t).await
                    }
                }
            };
            let mut t = base;
            let (denied_at, retry) = loop {
                t += rng.below(window / 3 + 1);
                if let Decision::Denied { retry_after, .. } = check(t).await.unwrap() {
                    break (t, retry_after.as_millis() as u64);
                }
            };
            if retry > 1 {
                assert!(check(denied_at + retry - 1).await.unwrap().is_denied(), "trial {trial}/{which}: early");
            }
            assert!(check(denied_at + retry).await.unwrap().is_allowed(), "trial {trial}/{which}: on time");
            probes += 1;
        }
    }
    println!("retry_after exact in {probes} probes");
}

// ------------------------------------------------- properties of the log

/// Two admissions in the same millisecond both count: members are unique
/// (`<now>-0`, `<now>-1`), with a pinned clock and with the server's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unique_members_same_millisecond_both_count() {
    let server = support::server();
    let conn = support::connect(&server).await;
    let log = SlidingWindowLog::new(conn.clone(), limit(100, 60_000));
    let now = server_ms(&conn).await;
    assert_eq!(log.check_at("same-ms", now).await.unwrap().count(), 1);
    assert_eq!(log.check_at("same-ms", now).await.unwrap().count(), 2);
    let members: Vec<String> = query(&conn, redis::cmd("ZRANGE").arg(log.key("same-ms").unwrap()).arg(0).arg(-1)).await;
    assert_eq!(members, vec![format!("{now}-0"), format!("{now}-1")]);

    // Unpinned: 40 concurrent admissions, many in one millisecond.
    let mut tasks = JoinSet::new();
    for _ in 0..40 {
        let log = log.clone();
        tasks.spawn(async move { log.check("server-clock").await.unwrap() });
    }
    let mut at = Vec::new();
    while let Some(d) = tasks.join_next().await {
        let d = d.unwrap();
        assert!(d.is_allowed());
        at.push(d.at_ms());
    }
    at.sort_unstable();
    at.dedup();
    let recorded: u64 = query(&conn, redis::cmd("ZCARD").arg(log.key("server-clock").unwrap())).await;
    println!("40 concurrent admissions fell in {} distinct milliseconds; {recorded} recorded", at.len());
    assert_eq!(recorded, 40);
}

/// The log's script trims at most 64 expired entries per call, so a burst
/// ageing out at once does not block the server for `max` removals; the
/// leftovers are never counted and later calls drain them.
#[tokio::test]
async fn sliding_log_trims_a_bounded_batch_per_call() {
    let server = support::server();
    let conn = support::connect(&server).await;
    let log = SlidingWindowLog::new(conn.clone(), limit(300, 60_000));
    let key = log.key("burst").unwrap();
    let base = server_ms(&conn).await;
    for _ in 0..300 {
        assert!(log.check_at("burst", base).await.unwrap().is_allowed());
    }
    assert!(log.check_at("burst", base + 1).await.unwrap().is_denied());
    // The whole burst leaves the window at once.
    let later = base + 60_000;
    assert_eq!(log.check_at("burst", later).await.unwrap().count(), 1, "only the new admission counts");
    assert_eq!(query::<u64>(&conn, redis::cmd("ZCARD").arg(&key)).await, 300 - 64 + 1);
    assert_eq!(log.check_at("burst", later).await.unwrap().count(), 2);
    assert_eq!(query::<u64>(&conn, redis::cmd("ZCARD").arg(&key)).await, 300 - 128 + 2);
    for _ in 0..3 {
        log.check_at("burst", later + 1).await.unwrap();
    }
    let members: Vec<(String, u64)> =
        query(&conn, redis::cmd("ZRANGE").arg(&key).arg(0).arg(-1).arg("WITHSCORES")).await;
    assert_eq!(members.len(), 5, "drained: {} members left", members.len());
    assert!(members.iter().all(|(_, score)| *score >= later));
}

/// The counter's key is one small hash that expires at the end of the
/// bucket after the last admission.
#[tokio::test]
async fn counter_key_expires_when_idle() {
    let server = support::server();
    let conn = support::connect(&server).await;
    let counter = SlidingWindowCounter::new(conn.clone(), limit(2, 200));
    assert!(counter.check("idle").await.unwrap().is_allowed());
    let key = counter.key("idle").unwrap();
    assert_eq!(query::<String>(&conn, redis::cmd("TYPE").arg(&key)).await, "hash");
    let pttl: i64 = query(&conn, redis::cmd("PTTL").arg(&key)).await;
    assert!((1..=400).contains(&pttl), "PTTL {pttl} outside (0, 2 windows]");
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(query::<i64>(&conn, redis::cmd("EXISTS").arg(&key)).await, 0);
}

/// Custom prefixes shape the key; both limiters work over a reconnecting
/// `ConnectionManager` as well as a `MultiplexedConnection`.
#[tokio::test]
async fn prefixes_and_connection_manager() {
    let server = support::server();
    let conn = support::connect(&server).await;
    let client = redis::Client::open(server.url()).unwrap();
    let manager = redis::aio::ConnectionManager::new(client).await.unwrap();
    let lim = limit(1, 60_000);
    let log = SlidingWindowLog::with_prefix(manager.clone(), lim, "myapp:log").unwrap();
    let counter = SlidingWindowCounter::with_prefix(manager, lim, "myapp:counter").unwrap();
    assert_eq!(log.key("alice").unwrap(), "myapp:log:{alice}");
    assert_eq!(counter.key("alice").unwrap(), "myapp:counter:{alice}");
    for _ in 0..2 {
        log.check("alice").await.unwrap();
        counter.check("alice").await.unwrap();
    }
    assert!(log.check("alice").await.unwrap().is_denied());
    assert!(counter.check("alice").await.unwrap().is_denied());
    assert_eq!(
        query::<i64>(&conn, redis::cmd("EXISTS").arg("myapp:log:{alice}").arg("myapp:counter:{alice}")).await,
        2
    );
}

// ------------------------------------------------- bad input and faults

/// Bad input is a typed error at the call and never reaches Redis: the
/// limiters here hold a connection to a server that is already stopped, so
/// any round trip would fail with a connection error instead.
#[tokio::test]
async fn bad_input_is_a_typed_error_without_a_round_trip() {
    fn invalid<T: core::fmt::Debug>(r: redis_primitives::Result<T>, what: &str) {
        match r {
            Err(Error::InvalidInput { what: w, .. }) => assert_eq!(w, what),
            other => panic!("expected InvalidInput({what}), got {other:?}"),
        }
    }
    invalid(Limit::new(0, Duration::from_secs(1)), "limit");
    invalid(Limit::new(5, Duration::ZERO), "window");
    invalid(Limit::new(5, Duration::from_micros(1500)), "window");
    invalid(Limit::new(u64::MAX, Duration::from_secs(1)), "limit");
    invalid(Limit::new(1 << 42, Duration::from_millis(1 << 11)), "limit");
    assert!(Limit::new(1 << 42, Duration::from_millis(1 << 10)).is_ok(), "2^52 exactly is accepted");

    let mut server = support::server();
    let conn = support::connect(&server).await;
    server.stop();
    let lim = limit(5, 1000);
    let log = SlidingWindowLog::new(conn.clone(), lim);
    let counter = SlidingWindowCounter::new(conn.clone(), lim);
    invalid(SlidingWindowLog::with_prefix(conn.clone(), lim, ""), "prefix");
    invalid(SlidingWindowCounter::with_prefix(conn.clone(), lim, "a{b"), "prefix");
    invalid(log.check("").await, "name");
    invalid(log.check("a}b").await, "name");
    invalid(log.check_at("ok", 1 << 53).await, "now");
    invalid(counter.check("").await, "name");
    invalid(counter.check_at("ok", u64::MAX).await, "now");
    invalid(NaiveFixedWindow::new(conn.clone(), lim).check_at("", 0).await, "name");
    invalid(ClientSideWindow::new(conn.clone(), lim).check_at("", 0).await, "name");
    invalid(redis_primitives_naive::WatchMultiLimiter::new(conn.clone(), lim).check_at("", 0).await, "name");

    // The same calls with valid input do reach for the (dead) server.
    let err = log.check("ok").await.unwrap_err();
    assert!(!matches!(err, Error::InvalidInput { .. }), "{err:?}");
}

/// A limiter key holding another type is `Error::WrongType`, and the value
/// is left alone.
#[tokio::test]
async fn wrongtype_is_a_typed_error() {
    let server = support::server();
    let conn = support::connect(&server).await;
    let lim = limit(5, 1000);
    let log = SlidingWindowLog::new(conn.clone(), lim);
    let counter = SlidingWindowCounter::new(conn.clone(), lim);

    let _: () = query(&conn, redis::cmd("SET").arg(log.key("s").unwrap()).arg("x")).await;
    let _: () = query(&conn, redis::cmd("HSET").arg(log.key("h").unwrap()).arg("f").arg("v")).await;
    let _: () = query(&conn, redis::cmd("SET").arg(counter.key("s").unwrap()).arg("x")).await;
    let _: () = query(&conn, redis::cmd("ZADD").arg(counter.key("z").unwrap()).arg(1).arg("m")).await;

    for (name, result) in [
        ("log/string", log.check("s").await),
        ("log/hash", log.check("h").await),
        ("counter/string", counter.check("s").await),
        ("counter/zset", counter.check_at("z", 5_000).await),
    ] {
        match result {
            Err(Error::WrongType { key, .. }) => assert!(key.ends_with("}"), "{name}: key {key}"),
            other => panic!("{name}: expected WrongType, got {other:?}"),
        }
    }
    assert_eq!(query::<String>(&conn, redis::cmd("GET").arg(log.key("s").unwrap())).await, "x");
    assert_eq!(query::<String>(&conn, redis::cmd("GET").arg(counter.key("s").unwrap())).await, "x");
}

/// After `SCRIPT FLUSH` both limiters reload their scripts by themselves
/// (EVALSHA → NOSCRIPT → load → retry) and keep their state.
#[tokio::test]
async fn noscript_after_script_flush_recovers() {
    let server = support::server();
    let conn = support::connect(&server).await;
    let lim = limit(5, 60_000);
    let log = SlidingWindowLog::new(conn.clone(), lim);
    let counter = SlidingWindowCounter::new(conn.clone(), lim);
    assert_eq!(log.check("n").await.unwrap().count(), 1);
    assert_eq!(counter.check("n").await.unwrap().count(), 1);
    let _: () = query(&conn, redis::cmd("SCRIPT").arg("FLUSH")).await;
    let scripts: String = query(&conn, redis::cmd("INFO").arg("memory")).await;
    assert!(scripts.contains("number_of_cached_scripts:0"), "the flush emptied the cache");
    assert_eq!(log.check("n").await.unwrap().count(), 2);
    // 2 even if a bucket boundary passed: the first admission then
    // weighs ceil(1 × (window − elapsed) / window) = 1.
    let second = counter.check("n").await.unwrap();
    assert!(second.is_allowed());
    assert_eq!(second.count(), 2, "{second:?}");
    let scripts: String = query(&conn, redis::cmd("INFO").arg("memory")).await;
    assert!(scripts.contains("number_of_cached_scripts:2"), "both scripts were reloaded");
}
