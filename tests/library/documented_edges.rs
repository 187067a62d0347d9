//! Every documented edge of a constructor or builder that takes a
//! connection, on both sides, against a real redis-server; and the pinned
//! instant `check_at` takes last, decided for real.
//!
//! These were the simulation's validation probe (issue #46 item 5): a
//! value at an edge needs no fault, no concurrency and no time, so a
//! simulated world only slowed the check down and hid it from the library's
//! own test run. Each case asserts the rule the simulation's
//! `input-validation` checker stated: accepted exactly when the documented
//! rule says so, and refused with `Error::InvalidInput` otherwise. The
//! pure constructors (`Ttl`, `Drift`, `Retry`, `Acknowledgement`, `Limit`,
//! key names, `check_at`'s bound) are unit tests beside their code
//! (`documented_edges` modules in `src/`); what is here needs a connection
//! to build with. `sim/cargo-mutants.sh` runs both beside the simulation.

use crate::support;

use core::time::Duration;

use redis::aio::MultiplexedConnection;
use redis_primitives::election::Election;
use redis_primitives::rate_limit::{Decision, Limit, SlidingWindowCounter, SlidingWindowLog};
use redis_primitives::redlock::{Redlock, RedlockConfig};
use redis_primitives::{Acknowledgement, Drift, Error, FencedStore, KeepAlive, Lock, Tokens, Ttl};
use support::{connect, server};

const MS: u128 = 1_000_000;

/// The drifts tried, as `(‰, constant ms)`: none, the default, the
/// largest the probe drew, a constant alone (odd and even).
const DRIFTS: [(u32, u64); 5] = [(0, 0), (10, 2), (50, 5), (0, 3), (0, 4)];

fn drift((per_mille, constant_ms): (u32, u64)) -> Drift {
    Drift::new(per_mille, Duration::from_millis(constant_ms)).unwrap()
}

/// What `lease_ms` leaves once the drift is taken off, in ns (the rule's
/// own arithmetic, not the library's).
fn usable_ns(lease_ms: u64, (per_mille, constant_ms): (u32, u64)) -> u128 {
    let ttl = u128::from(lease_ms) * MS;
    ttl.saturating_sub(ttl * u128::from(per_mille) / 1000 + u128::from(constant_ms) * MS)
}

/// `Ok` exactly when `valid`, else a typed `InvalidInput`.
fn judged<T: core::fmt::Debug>(r: &Result<T, Error>, valid: bool, case: &str) {
    match r {
        Ok(_) => assert!(valid, "{case}: breaks the documented rules but was accepted"),
        Err(Error::InvalidInput { .. }) => assert!(!valid, "{case}: valid by the documented rules but refused: {r:?}"),
        Err(e) => panic!("{case}: refused with something other than InvalidInput: {e:?}"),
    }
}

/// The documented rule of an election's timing: a valid lease TTL that
/// the drift does not swallow, a renew interval above zero, below the lease
/// and at most half the usable lease, a campaign interval above zero.
fn election_valid(lease_ms: u64, renew_ms: u64, campaign_ms: u64, d: (u32, u64)) -> bool {
    let usable = usable_ns(lease_ms, d);
    (1..=Ttl::MAX_MILLIS).contains(&lease_ms)
        && usable > 0
        && renew_ms > 0
        && renew_ms < lease_ms
        && u128::from(renew_ms) * MS <= usable / 2
        && campaign_ms > 0
}

fn build_election(
    conn: &MultiplexedConnection,
    (lease_ms, renew_ms, campaign_ms): (u64, u64, u64),
    d: (u32, u64),
) -> Result<Election<MultiplexedConnection>, Error> {
    Election::builder(conn.clone(), "edges")
        .lease_ttl(Duration::from_millis(lease_ms))
        .renew_interval(Duration::from_millis(renew_ms))
        .campaign_interval(Duration::from_millis(campaign_ms))
        .drift(drift(d))
        .build()
}

#[tokio::test]
async fn election_timing_at_half_the_usable_lease() {
    let server = server();
    let conn = connect(&server).await;
    for d in DRIFTS {
        for lease_ms in [20, 21, 400, 401, 1999, 2000] {
            let half = (usable_ns(lease_ms, d) / 2 / MS) as u64;
            let mut cases = vec![
                (lease_ms, half, 25),
                (lease_ms, half + 1, 25),
                (lease_ms, half.saturating_sub(1).max(1), 25),
                (lease_ms, 0, 25),
                (lease_ms, lease_ms, 25),
                (lease_ms, lease_ms - 1, 25),
                (lease_ms, half.max(1), 0),
                (0, 1, 25),
            ];
            // All of a short lease eaten by the drift's constant part.
            if d.1 > 0 {
                cases.push((d.1, 1, 25));
            }
            for (lease_ms, renew_ms, campaign_ms) in cases {
                let r = build_election(&conn, (lease_ms, renew_ms, campaign_ms), d);
                let case = format!("lease {lease_ms} renew {renew_ms} campaign {campaign_ms} drift {d:?}");
                judged(&r, election_valid(lease_ms, renew_ms, campaign_ms, d), &case);
            }
        }
    }
    // Exactly at the edge: no proportional drift and an even constant, so
    // half the usable lease is a whole number of milliseconds.
    for (c, lease_ms) in [(0, 40), (2, 400), (4, 1000), (6, 998)] {
        let exact = (lease_ms - c) / 2;
        assert!(build_election(&conn, (lease_ms, exact, 25), (0, c)).is_ok(), "{lease_ms} {c}");
        let over = build_election(&conn, (lease_ms, exact + 1, 25), (0, c));
        assert!(matches!(over, Err(Error::InvalidInput { what: "renew_interval", .. })), "{over:?}");
    }
    // A lease the drift leaves nothing of is refused as the lease's fault.
    let none = build_election(&conn, (4, 1, 1), (0, 4));
    assert!(matches!(none, Err(Error::InvalidInput { what: "lease_ttl", .. })), "{none:?}");
}

#[tokio::test]
async fn election_defaults_renew_every_third_of_the_lease() {
    let server = server();
    let conn = connect(&server).await;
    for d in DRIFTS {
        for lease_ms in [1, 2, 3, 9, 20, 30, 31, 400, 2000] {
            let built = Election::builder(conn.clone(), "edges")
                .lease_ttl(Duration::from_millis(lease_ms))
                .drift(drift(d))
                .build();
            // Accepted when a third of the lease is at most half the usable one.
            let usable = usable_ns(lease_ms, d);
            let valid = usable > 0 && u128::from(lease_ms) * MS / 3 <= usable / 2;
            judged(&built, valid, &format!("defaults, lease {lease_ms} drift {d:?}"));
            if let Ok(e) = built {
                let third = Duration::from_millis(lease_ms) / 3;
                assert_eq!((e.renew_interval(), e.campaign_interval()), (third, third));
                assert_eq!(e.lease_ttl().as_millis(), lease_ms);
            }
        }
    }
}

/// A lock built with every setting given, none the default; the lock, and
/// an election built on it, must report each of them back.
#[tokio::test]
async fn a_lock_and_an_election_on_it_report_every_setting() {
    let server = server();
    let conn = connect(&server).await;
    let (d, ack) = (drift((37, 4)), Acknowledgement::new(2, Duration::from_millis(123)).unwrap());
    let lock = Lock::builder(conn.clone()).prefix("app:9").drift(d).acknowledged(ack).tokens(Tokens::TimeFloored);
    let lock = lock.build().unwrap();
    let election = Election::builder_on(&lock, "edges").lease_ttl(Duration::from_millis(1000)).build().unwrap();
    for l in [&lock, election.lock()] {
        assert_eq!(l.key("edges").unwrap(), "app:9:{edges}");
        assert_eq!(l.fence_key("edges").unwrap(), "app:9:{edges}:fence");
        assert_eq!((l.drift().factor_per_mille(), l.drift().constant()), (37, Duration::from_millis(4)));
        assert_eq!(l.acknowledgement(), Some(ack));
        assert_eq!(l.tokens(), Tokens::TimeFloored);
    }
    let plain = Lock::new(conn.clone());
    assert_eq!((plain.acknowledgement(), plain.tokens(), plain.drift()), (None, Tokens::Counter, Drift::DEFAULT));
    assert_eq!(plain.key("edges").unwrap(), "lock:{edges}");
}

#[tokio::test]
async fn keep_alive_below_the_usable_ttl() {
    let server = server();
    let conn = connect(&server).await;
    for d in DRIFTS {
        let lock = Lock::builder(conn.clone()).drift(drift(d)).build().unwrap();
        for ttl_ms in [10, 11, 300, 1000] {
            let u = (usable_ns(ttl_ms, d) / MS) as u64;
            let ttl = Ttl::from_millis(ttl_ms).unwrap();
            for every_ms in [0, 1, u.saturating_sub(1), u, u + 1, ttl_ms] {
                let r = KeepAlive::new(&lock, ttl, Duration::from_millis(every_ms));
                let valid = every_ms > 0 && u128::from(every_ms) * MS < usable_ns(ttl_ms, d);
                judged(&r, valid, &format!("keep-alive ttl {ttl_ms} every {every_ms} drift {d:?}"));
                if let Ok(k) = r {
                    assert_eq!((k.ttl(), k.every()), (ttl, Duration::from_millis(every_ms)));
                }
            }
        }
        // Off the millisecond: the edge is the usable time itself.
        let ttl = Ttl::from_millis(300).unwrap();
        let usable = Duration::from_nanos(usable_ns(300, d) as u64);
        assert!(KeepAlive::new(&lock, ttl, usable - Duration::from_nanos(1)).is_ok());
        assert!(matches!(KeepAlive::new(&lock, ttl, usable), Err(Error::InvalidInput { .. })));
    }
}

/// Prefixes and names on the lock's, its fence's and the fenced store's
/// key methods: a key that is built reads `prefix:{name}` (the fence key
/// with `:fence` after it); an empty text or a brace is refused.
#[tokio::test]
async fn key_names_on_every_primitive_that_builds_keys() {
    let server = server();
    let conn = connect(&server).await;
    let texts = ["a", "x9:", "", "{", "}", "a{b", "ab}"];
    for prefix in texts {
        for name in texts {
            let valid = [prefix, name].iter().all(|t| !t.is_empty() && !t.contains(['{', '}']));
            let lock = || Lock::builder(conn.clone()).prefix(prefix).build();
            let keys = [
                lock().and_then(|l| l.key(name)),
                lock().and_then(|l| l.fence_key(name)),
                FencedStore::with_prefix(conn.clone(), prefix).and_then(|s| s.redis_key(name)),
            ];
            for (key, suffix) in keys.iter().zip(["", ":fence", ""]) {
                judged(key, valid, &format!("prefix {prefix:?} name {name:?}"));
                if let Ok(key) = key {
                    assert_eq!(*key, format!("{prefix}:{{{name}}}{suffix}"));
                }
            }
        }
    }
}

/// Redlock's edges on both sides: a master timeout one millisecond below
/// the TTL and an allowance one below it are accepted, and what the Redlock
/// reports is what it was given; the TTL itself, zeros, no masters and one
/// server listed twice are refused.
#[tokio::test]
async fn redlock_accepts_up_to_the_ttl_and_reports_its_settings() {
    let servers: Vec<_> = (0..3).map(|_| server()).collect();
    let mut conns = Vec::new();
    for s in &servers {
        conns.push(connect(s).await);
    }
    for (ttl_ms, d, timeout_ms) in [(200, (25, 3), 199), (1000, (0, 999), 100), (600, (500, 299), 1)] {
        let config = RedlockConfig::new(Ttl::from_millis(ttl_ms).unwrap())
            .drift(drift(d))
            .master_timeout(Duration::from_millis(timeout_ms));
        let rl = Redlock::connect(conns.clone(), config).await.unwrap();
        assert_eq!((rl.len(), rl.is_empty(), rl.quorum()), (3, false, 2));
        assert_eq!(
            (rl.ttl().as_millis(), rl.drift(), rl.master_timeout()),
            (ttl_ms, drift(d), Duration::from_millis(timeout_ms))
        );
        assert_eq!(rl.drift_allowance(), drift(d).allowance(Duration::from_millis(ttl_ms)));
        assert!(rl.drift_allowance() < Duration::from_millis(ttl_ms));
    }
    // The other side of each edge: an allowance of the whole TTL, a master
    // timeout of the TTL itself or of zero, a zero handshake timeout, no
    // masters, one server listed twice.
    let ttl = |ms| RedlockConfig::new(Ttl::from_millis(ms).unwrap());
    let refused = [
        (conns.clone(), ttl(1000).drift(drift((0, 1000))), "redlock drift"),
        (conns.clone(), ttl(1000).drift(drift((500, 500))), "redlock drift"),
        (conns.clone(), ttl(200).master_timeout(Duration::from_millis(200)), "redlock master_timeout"),
        (conns.clone(), ttl(200).master_timeout(Duration::ZERO), "redlock master_timeout"),
        (conns.clone(), ttl(200).handshake_timeout(Duration::ZERO), "redlock handshake_timeout"),
        (Vec::new(), ttl(200), "redlock masters"),
        (vec![conns[0].clone(), conns[1].clone(), conns[0].clone()], ttl(200), "redlock masters"),
    ];
    for (masters, config, what) in refused {
        let r = Redlock::connect(masters, config).await;
        assert!(matches!(&r, Err(Error::InvalidInput { what: w, .. }) if *w == what), "{what}: {r:?}");
    }
}

/// The largest instant a Lua number holds exactly, 2^53 − 1, is a real
/// decision on both correct limiters; 2^53 and beyond are refused before
/// anything reaches Redis.
#[tokio::test]
async fn check_at_decides_at_2_pow_53_minus_1_and_refuses_past_it() {
    let server = server();
    let conn = connect(&server).await;
    let limit = Limit::new(5, Duration::from_millis(1000)).unwrap();
    let log = SlidingWindowLog::new(conn.clone(), limit);
    let counter = SlidingWindowCounter::new(conn.clone(), limit);
    for now in [1u64 << 53, (1 << 53) + 1, u64::MAX] {
        for r in [log.check_at("edge", now).await, counter.check_at("edge", now).await] {
            assert!(matches!(r, Err(Error::InvalidInput { what: "now", .. })), "{now}: {r:?}");
        }
    }
    assert_eq!(server.command(&["DBSIZE"]).unwrap(), ":0\r\n", "a refused instant reached Redis");
    let last = Ttl::MAX_MILLIS;
    for r in [log.check_at("edge", last).await, counter.check_at("edge", last).await] {
        assert!(matches!(r, Ok(Decision::Allowed { count: 1, .. })), "{last}: {r:?}");
    }
    // A second request at the same instant counts the first.
    for r in [log.check_at("edge", last).await, counter.check_at("edge", last).await] {
        assert!(matches!(r, Ok(Decision::Allowed { count: 2, .. })), "{last}: {r:?}");
    }
}
