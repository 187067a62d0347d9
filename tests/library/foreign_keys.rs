//! A key of another type where a rate limiter or Redlock keeps its state:
//! something else writes to our key space.
//!
//! The promise judged (`src/error.rs`, `Error::WrongType`): "A key used by
//! this primitive holds a value of the wrong type for this primitive
//! (`WRONGTYPE`) […] Nothing was changed." For the limiters that means a
//! typed error from `check` and `check_at` and every key of the server as
//! it was, byte for byte (`DUMP`), expiry included. `rate_limit.rs::
//! wrongtype_is_a_typed_error` covers the error for a string, a hash and a
//! sorted set and reads back only the strings; here every other type, the
//! whole keyspace, and both calls.
//!
//! For Redlock the masters vote: `SET NX` refuses a key of any type, so a
//! foreign key is a `No` (`Vote::No`: "another owner's key is there"), and
//! the compare-and-delete and compare-and-pexpire that meet it fail with
//! `WRONGTYPE` on that master only (`Vote::Error(WrongType)`), which counts
//! against the majority and is left alone, while the other masters are
//! released as the module docs promise ("release on every master").

use crate::support;

use core::time::Duration;
use redis::aio::MultiplexedConnection;
use redis_primitives::rate_limit::{Decision, Limit, SlidingWindowCounter, SlidingWindowLog};
use redis_primitives::redlock::{Acquisition, Extension, MasterVote, Redlock, RedlockConfig, RefusalReason, Vote};
use redis_primitives::{CompareCommands, Error};
use support::{connect_url, keyspace, ms, run, RedisServer};

/// Writes a value of `kind` at `key`, as another program would.
async fn plant(conn: &MultiplexedConnection, kind: &str, key: &str) {
    match kind {
        "list" => run(conn, &["RPUSH", key, "a", "b", "c"]).await,
        "set" => run(conn, &["SADD", key, "m1", "m2"]).await,
        "string" => run(conn, &["SET", key, "plain"]).await,
        "hash" => run(conn, &["HSET", key, "i", "1", "c", "2"]).await,
        "zset" => run(conn, &["ZADD", key, "1", "1-0", "2", "2-1"]).await,
        "stream" => run(conn, &["XADD", key, "*", "f", "v"]).await,
        other => panic!("no such type {other}"),
    }
}

fn expect_wrongtype(result: redis_primitives::Result<Decision>, key: &str, what: &str) {
    match result {
        Err(Error::WrongType { key: k, .. }) => assert_eq!(k, key, "{what}: the error names the limiter's key"),
        other => panic!("{what}: expected WrongType, got {other:?}"),
    }
}

/// The sliding log (a sorted set) and the sliding counter (a hash), each
/// with a list, a set, a string, a stream and the other limiter's type at
/// its key: `check` and `check_at` are `WrongType` naming the key, and the
/// whole keyspace (the foreign key's bytes and missing expiry, a healthy
/// neighbour's state) is unchanged.
#[tokio::test]
async fn a_key_of_another_type_at_a_limiter_key_is_wrongtype_and_changes_nothing() {
    let server = support::server();
    let conn = support::connect(&server).await;
    let limit = Limit::new(5, Duration::from_secs(60)).unwrap();
    let log = SlidingWindowLog::new(conn.clone(), limit);
    let counter = SlidingWindowCounter::new(conn.clone(), limit);
    // Healthy neighbours: the calls below must leave them alone too.
    assert!(log.check("neighbour").await.unwrap().is_allowed());
    assert!(counter.check("neighbour").await.unwrap().is_allowed());
    let (s, us): (u64, u64) = redis::cmd("TIME").query_async(&mut conn.clone()).await.unwrap();
    let now_ms = s * 1000 + us / 1000;

    for kind in ["list", "set", "string", "stream", "hash"] {
        let name = format!("log-{kind}");
        let key = log.key(&name).unwrap();
        plant(&conn, kind, &key).await;
        let before = keyspace(&conn).await;
        expect_wrongtype(log.check(&name).await, &key, &format!("log check, {kind}"));
        expect_wrongtype(log.check_at(&name, now_ms).await, &key, &format!("log check_at, {kind}"));
        assert_eq!(keyspace(&conn).await, before, "log, {kind}: the call changed something");
    }
    for kind in ["list", "set", "string", "stream", "zset"] {
        let name = format!("counter-{kind}");
        let key = counter.key(&name).unwrap();
        plant(&conn, kind, &key).await;
        let before = keyspace(&conn).await;
        expect_wrongtype(counter.check(&name).await, &key, &format!("counter check, {kind}"));
        expect_wrongtype(counter.check_at(&name, now_ms).await, &key, &format!("counter check_at, {kind}"));
        assert_eq!(keyspace(&conn).await, before, "counter, {kind}: the call changed something");
    }
    // Ten foreign keys and the two neighbours, nothing more.
    assert_eq!(keyspace(&conn).await.len(), 12);
    // The neighbours still count their one admission.
    assert_eq!(log.check("neighbour").await.unwrap().count(), 2);
    assert_eq!(counter.check("neighbour").await.unwrap().count(), 2);
}

// ---------------------------------------------------------------- Redlock

const NAME: &str = "report";

fn start(valkey: bool) -> RedisServer {
    let started = if valkey { RedisServer::start_valkey() } else { RedisServer::start() };
    started.unwrap_or_else(|e| panic!("{e}"))
}

/// Three masters (Valkey 9 ones take the native compare commands), the
/// library's connections to them, and the test's own.
async fn masters(valkey: bool) -> (Vec<RedisServer>, Redlock<MultiplexedConnection>, Vec<MultiplexedConnection>) {
    let servers: Vec<RedisServer> = (0..3).map(|_| start(valkey)).collect();
    let (mut conns, mut observers) = (Vec::new(), Vec::new());
    for s in &servers {
        conns.push(connect_url(&s.url(), None).await);
        observers.push(connect_url(&s.url(), None).await);
    }
    // The scripts case turns the native commands off: the default server
    // may be a Valkey 9 too (the Valkey leg of CI).
    let config = RedlockConfig::new(ms(10_000)).master_timeout(Duration::from_millis(500)).native_commands(valkey);
    let redlock = Redlock::connect(conns, config).await.expect("three independent masters");
    let expected = if valkey { CompareCommands::DelIfEq } else { CompareCommands::Scripts };
    assert_eq!(redlock.compare_commands().await, [expected; 3], "the path this case means to take");
    (servers, redlock, observers)
}

async fn get(conn: &MultiplexedConnection, key: &str) -> Option<String> {
    let mut conn = conn.clone();
    let kind: String = redis::cmd("TYPE").arg(key).query_async(&mut conn).await.expect("TYPE");
    if kind != "string" {
        return None;
    }
    redis::cmd("GET").arg(key).query_async(&mut conn).await.expect("GET")
}

fn is_wrongtype(vote: &MasterVote, key: &str) -> bool {
    matches!(&vote.vote, Vote::Error(e) if matches!(&**e, Error::WrongType { key: k, .. } if k == key))
}

fn describe(votes: &[MasterVote]) -> Vec<String> {
    votes.iter().map(|v| format!("{}: {:?}", v.master, v.vote)).collect()
}

/// A list at the key on master 2: its `SET NX` is a `No`, the two others
/// make the majority; extend and release meet `WRONGTYPE` there and
/// re-arm / delete on the others; the list is never touched.
async fn one_foreign_master(valkey: bool) {
    let (_servers, redlock, obs) = masters(valkey).await;
    let key = redlock.key(NAME).unwrap();
    plant(&obs[2], "list", &key).await;
    let foreign = keyspace(&obs[2]).await;

    let mut lease = match redlock.acquire(NAME).await.unwrap() {
        Acquisition::Held(lease) => lease,
        Acquisition::Refused(r) => panic!("two free masters of three are a majority: {r:?}"),
    };
    let votes: Vec<bool> = lease.masters().iter().map(|v| v.vote.is_yes()).collect();
    assert_eq!(votes, [true, true, false], "{:?}", describe(lease.masters()));
    assert!(matches!(lease.masters()[2].vote, Vote::No), "SET NX refuses a key of any type");
    for conn in &obs[..2] {
        assert_eq!(get(conn, &key).await.as_deref(), Some(lease.owner().as_str()));
    }
    assert_eq!(keyspace(&obs[2]).await, foreign, "acquire changed the foreign master");

    let extended = redlock.extend(&mut lease).await;
    assert!(matches!(extended, Extension::Extended { .. }), "{extended:?}");
    assert!(is_wrongtype(&lease.masters()[2], &key), "extend on the list: {:?}", describe(lease.masters()));
    assert_eq!(keyspace(&obs[2]).await, foreign, "extend changed the foreign master");

    let released = redlock.release(&lease).await;
    assert_eq!(released.deleted, 2, "{:?}", describe(&released.masters));
    assert!(is_wrongtype(&released.masters[2], &key), "release on the list: {:?}", describe(&released.masters));
    for conn in &obs[..2] {
        assert!(keyspace(conn).await.is_empty(), "our key is gone, nothing else was written");
    }
    assert_eq!(keyspace(&obs[2]).await, foreign, "release changed the foreign master");
}

/// Lists on two masters of three: no majority. The refusal says so, its
/// cleanup deletes our key on the free master and fails with `WRONGTYPE`
/// on the two others, whose lists are untouched.
async fn two_foreign_masters(valkey: bool) {
    let (_servers, redlock, obs) = masters(valkey).await;
    let key = redlock.key(NAME).unwrap();
    plant(&obs[0], "list", &key).await;
    plant(&obs[2], "hash", &key).await;
    let foreign = [keyspace(&obs[0]).await, keyspace(&obs[2]).await];

    let refusal = match redlock.acquire(NAME).await.unwrap() {
        Acquisition::Refused(r) => r,
        Acquisition::Held(lease) => panic!("one free master of three is no majority: {lease:?}"),
    };
    assert_eq!((refusal.reason, refusal.votes, refusal.quorum), (RefusalReason::NoMajority, 1, 2));
    let said: Vec<bool> = refusal.masters.iter().map(|v| matches!(v.vote, Vote::No)).collect();
    assert_eq!(said, [true, false, true], "{:?}", describe(&refusal.masters));
    assert!(refusal.cleanup[1].vote.is_yes(), "our key on the free master was deleted: {:?}", refusal.cleanup);
    for i in [0, 2] {
        assert!(is_wrongtype(&refusal.cleanup[i], &key), "cleanup on master {i}: {:?}", describe(&refusal.cleanup));
    }
    assert!(keyspace(&obs[1]).await.is_empty(), "the refused attempt left nothing on the free master");
    assert_eq!([keyspace(&obs[0]).await, keyspace(&obs[2]).await], foreign, "the foreign keys changed");
}

/// Another program replaces our key on one master with a list while we
/// hold the lock: the majority still extends, release deletes ours on the
/// two others, and the list stays as it was written.
async fn key_replaced_under_a_lease(valkey: bool) {
    let (_servers, redlock, obs) = masters(valkey).await;
    let key = redlock.key(NAME).unwrap();
    let mut lease = redlock.acquire(NAME).await.unwrap().into_lease().expect("three free masters");
    run(&obs[1], &["DEL", &key]).await;
    plant(&obs[1], "list", &key).await;
    let foreign = keyspace(&obs[1]).await;

    let extended = redlock.extend(&mut lease).await;
    assert!(matches!(extended, Extension::Extended { .. }), "{extended:?}");
    assert_eq!(lease.votes(), 2);
    assert!(is_wrongtype(&lease.masters()[1], &key), "{:?}", describe(lease.masters()));
    let released = redlock.release(&lease).await;
    assert_eq!(released.deleted, 2, "{:?}", describe(&released.masters));
    assert!(is_wrongtype(&released.masters[1], &key), "{:?}", describe(&released.masters));
    assert_eq!(keyspace(&obs[1]).await, foreign, "the list changed");
    for i in [0, 2] {
        assert!(keyspace(&obs[i]).await.is_empty(), "master {i} kept something");
    }
}

#[tokio::test]
async fn redlock_a_foreign_key_on_one_master_is_a_no_and_is_left_alone() {
    one_foreign_master(false).await;
}

#[tokio::test]
async fn redlock_foreign_keys_on_a_majority_refuse_and_cleanup_leaves_them_alone() {
    two_foreign_masters(false).await;
}

#[tokio::test]
async fn redlock_a_key_replaced_by_another_type_under_a_lease_is_left_alone() {
    key_replaced_under_a_lease(false).await;
}

/// The same three cases on Valkey 9, where release and extend first try
/// the native `DELIFEQ` and `SET … IFEQ` (`src/native.rs`: "`WRONGTYPE`
/// on a key of another type", like the scripts).
#[tokio::test]
async fn redlock_foreign_keys_on_valkey_native_commands_alike() {
    one_foreign_master(true).await;
    two_foreign_masters(true).await;
    key_replaced_under_a_lease(true).await;
}
