//! A limiter key of the right type holding what the limiter never writes.
//!
//! The promise (`SlidingWindowCounter` and `SlidingWindowLog`, "# Errors";
//! `Error::CorruptState`): such a key is `CorruptState` naming it, nothing
//! is admitted and nothing changes, byte for byte (`DUMP`), expiry
//! included. Before the scripts checked what they read, a counter at
//! `c = -100` admitted, wrote `c = -99` and then answered
//! `UnexpectedReply`, `c = "x"` was read as 0 and overwritten, and
//! `c = 4.5` gave a retry-after of −2^63 ms. The extremes the scripts do
//! write are decided as usual: the check is exactly as wide as the writes.
//! `foreign_keys.rs` has a key of another type at the same keys.

use crate::support;

use core::time::Duration;

use redis::aio::MultiplexedConnection;
use redis_primitives::rate_limit::{Decision, Limit, SlidingWindowCounter, SlidingWindowLog};
use redis_primitives::Error;
use support::{keyspace, run};

/// 2^53 − 1: the largest count, index or score the scripts write.
const LARGEST: u64 = (1 << 53) - 1;

async fn server_ms(conn: &MultiplexedConnection) -> u64 {
    let (s, us): (u64, u64) = redis::cmd("TIME").query_async(&mut conn.clone()).await.expect("TIME");
    s * 1000 + us / 1000
}

/// `result` is `CorruptState` naming `key`, and the keyspace is `before`.
async fn expect_corrupt(
    conn: &MultiplexedConnection,
    result: redis_primitives::Result<Decision>,
    key: &str,
    before: &support::Keyspace,
    what: &str,
) {
    match result {
        Err(Error::CorruptState { key: k, .. }) => assert_eq!(k, key, "{what}: the error names the limiter's key"),
        other => panic!("{what}: expected CorruptState, got {other:?}"),
    }
    assert_eq!(&keyspace(conn).await, before, "{what}: the call changed something");
}

/// A counter limiting `n` to 5 a second, with its key, the server's clock
/// and the bucket index at it.
struct Counter {
    conn: MultiplexedConnection,
    counter: SlidingWindowCounter<MultiplexedConnection>,
    key: String,
    now: u64,
    idx: String,
}

impl Counter {
    async fn start(server: &support::RedisServer) -> Counter {
        let conn = support::connect(server).await;
        let counter = SlidingWindowCounter::new(conn.clone(), Limit::new(5, Duration::from_secs(1)).unwrap());
        let key = counter.key("n").unwrap();
        let now = server_ms(&conn).await;
        Counter { conn, counter, key, now, idx: (now / 1000).to_string() }
    }
}

/// The counter's hash `{i, c, p}` with each field out of what the script
/// writes, one at a time, and with fields missing: `check` and `check_at`
/// are both refused, and both leave the hash as it was.
#[tokio::test]
async fn counter_state_the_script_never_writes_is_corrupt_and_untouched() {
    let server = support::server();
    let Counter { conn, counter, key, now, idx } = Counter::start(&server).await;
    let past = (LARGEST + 1).to_string();
    let states: [(&str, [&str; 6]); 9] = [
        ("a count below zero", ["i", &idx, "c", "-100", "p", "0"]),
        ("a fractional count", ["i", &idx, "c", "4.5", "p", "0"]),
        ("a count in text", ["i", &idx, "c", "x", "p", "0"]),
        ("an infinite count", ["i", &idx, "c", "inf", "p", "0"]),
        ("an index in text", ["i", "abc", "c", "1", "p", "0"]),
        ("a negative index", ["i", "-1", "c", "1", "p", "0"]),
        ("a previous count past 2^53 - 1", ["i", &idx, "c", "1", "p", &past]),
        ("no previous count", ["i", &idx, "c", "1", "c", "1"]),
        ("none of its fields", ["x", "1", "y", "2", "x", "1"]),
    ];
    for (what, fields) in states {
        run(&conn, &["DEL", &key]).await;
        let mut hset = vec!["HSET", key.as_str()];
        hset.extend(fields);
        run(&conn, &hset).await;
        let before = keyspace(&conn).await;
        expect_corrupt(&conn, counter.check("n").await, &key, &before, what).await;
        expect_corrupt(&conn, counter.check_at("n", now).await, &key, &before, what).await;
    }
}

/// What the counter's script does write, at its extremes, is decided: a
/// zero count, a count of 2^53 − 1 (denied, with a positive wait), and an
/// index spelled with an exponent (as a server may store a large Lua number).
#[tokio::test]
async fn counter_extremes_the_script_writes_are_decided() {
    let server = support::server();
    let Counter { conn, counter, key, now, idx } = Counter::start(&server).await;
    let largest = LARGEST.to_string();

    // Each state written whole: the admission's expiry may lapse between.
    run(&conn, &["HSET", &key, "i", &idx, "c", "0", "p", "0"]).await;
    assert_eq!(counter.check_at("n", now).await.unwrap().count(), 1, "a zero count admits as the first");

    run(&conn, &["HSET", &key, "i", &idx, "c", &largest, "p", "0"]).await;
    match counter.check_at("n", now).await.unwrap() {
        Decision::Denied { count, retry_after, .. } => {
            assert!(count >= LARGEST, "count {count}");
            assert!(retry_after > Duration::ZERO && retry_after <= Duration::from_secs(2), "{retry_after:?}");
        }
        other => panic!("a full bucket admitted: {other:?}"),
    }

    let exponent = format!("{:e}", now / 1000);
    assert!(exponent.contains('e'), "{exponent}");
    run(&conn, &["HSET", &key, "i", &exponent, "c", "1", "p", "0"]).await;
    assert_eq!(counter.check_at("n", now).await.unwrap().count(), 2, "index {exponent} is this bucket's");
}

/// The log's denial reads its wait from one entry's score: a score the
/// script never writes there is `CorruptState` and nothing is recorded; the
/// extremes it does write (0 and 2^53 − 1) give a positive wait.
#[tokio::test]
async fn log_entry_scores_the_script_never_writes_are_corrupt_and_untouched() {
    let server = support::server();
    let conn = support::connect(&server).await;
    let log = SlidingWindowLog::new(conn.clone(), Limit::new(2, Duration::from_secs(1)).unwrap());
    let key = log.key("n").unwrap();
    let now = server_ms(&conn).await;
    let fraction = format!("{}.5", now - 1);
    let past = (LARGEST + 1).to_string();
    // (what, score of both entries, the pinned instant)
    let corrupt = [
        ("a fractional score", fraction.as_str(), now),
        ("an infinite score", "+inf", now),
        ("a score past 2^53 - 1", past.as_str(), now),
        ("a score below zero", "-1", 10),
    ];
    for (what, score, at) in corrupt {
        run(&conn, &["DEL", &key]).await;
        run(&conn, &["ZADD", &key, score, "a", score, "b"]).await;
        let before = keyspace(&conn).await;
        expect_corrupt(&conn, log.check_at("n", at).await, &key, &before, what).await;
    }

    let largest = LARGEST.to_string();
    for (score, at, wait) in [("0", 10, 990), (largest.as_str(), now, 1000 + LARGEST - now)] {
        run(&conn, &["DEL", &key]).await;
        run(&conn, &["ZADD", &key, score, "a", score, "b"]).await;
        match log.check_at("n", at).await.unwrap() {
            Decision::Denied { count: 2, retry_after, .. } => {
                assert_eq!(retry_after, Duration::from_millis(wait), "entries at {score}")
            }
            other => panic!("entries at {score}: expected a denial, got {other:?}"),
        }
    }
}
