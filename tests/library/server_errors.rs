//! A server that refuses a write — `READONLY` on a replica (clients still
//! talking to a demoted primary, the common case right after a failover),
//! `OOM` at `maxmemory` under `noeviction` — is `Error::Redis` carrying the
//! server's own code, from every script path that writes. Never
//! `CorruptState`: that names a key whose *contents* are wrong, and an
//! operator told to repair healthy keys loses time during an incident.
//!
//! Each test prepares a queue, a lock, a store and both limiters on a
//! primary, then runs every writing call of the library against the
//! refusing server, and checks that the refused calls changed nothing.

use crate::support;

use core::time::Duration;

use redis::aio::MultiplexedConnection;
use redis_primitives::rate_limit::{Limit, SlidingWindowCounter, SlidingWindowLog};
use redis_primitives::{Claim, Error, FencedStore, FencingToken, JobQueue, JobState, Lease, Lock, Tokens};
use redis_primitives_testkit::ServerConfig;
use support::{connect_with_timeout, ms, server, RedisServer};

const QUEUE: &str = "refused";

/// Longer than any call here takes: a refusal is an answer, not a timeout.
async fn conn(s: &RedisServer) -> MultiplexedConnection {
    connect_with_timeout(s, Duration::from_secs(5)).await
}

/// What the primary holds before the refusing server is asked: a pending
/// job, a live claim, a lapsed claim, and a held lock.
struct Prepared {
    live: Claim,
    held: Lease,
}

async fn prepare(c: &MultiplexedConnection) -> Prepared {
    let queue = JobQueue::new(c.clone(), QUEUE).unwrap();
    queue.enqueue("lapsed", b"x").await.unwrap();
    let lapsed = queue.claim(ms(1)).await.unwrap().unwrap();
    assert_eq!(lapsed.id(), "lapsed");
    queue.enqueue("live", b"x").await.unwrap();
    let live = queue.claim(ms(60_000)).await.unwrap().unwrap();
    assert_eq!(live.id(), "live");
    queue.enqueue("pending", b"x").await.unwrap();
    let held = Lock::new(c.clone()).acquire("held", ms(60_000)).await.unwrap().unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await; // "lapsed" is lapsed
    Prepared { live, held }
}

/// Every call of the library that writes, against `c`, named, each reduced
/// to `Ok(())` or its error.
async fn every_write(c: &MultiplexedConnection, p: &mut Prepared) -> Vec<(&'static str, Result<(), Error>)> {
    let queue = JobQueue::new(c.clone(), QUEUE).unwrap();
    let lock = Lock::new(c.clone());
    let floored = Lock::builder(c.clone()).tokens(Tokens::TimeFloored).build().unwrap();
    let limit = Limit::new(10, Duration::from_secs(10)).unwrap();
    let mut live = p.live.clone();
    let mut held = p.held.clone();
    vec![
        ("JobQueue::enqueue", queue.enqueue("new", b"x").await.map(drop)),
        ("JobQueue::claim", queue.claim(ms(60_000)).await.map(drop)),
        ("JobQueue::extend", queue.extend(&mut live, ms(60_000)).await.map(drop)),
        ("JobQueue::complete", queue.complete(&live).await.map(drop)),
        ("JobQueue::reap", queue.reap().await.map(drop)),
        ("Lock::acquire", lock.acquire("free", ms(60_000)).await.map(drop)),
        ("Lock::acquire (floored)", floored.acquire("free-floored", ms(60_000)).await.map(drop)),
        ("Lock::extend", lock.extend(&mut held, ms(60_000)).await.map(drop)),
        ("Lock::release", lock.release(&held).await.map(drop)),
        ("FencedStore::write", FencedStore::new(c.clone()).write("store", b"v", FencingToken::new(1)).await.map(drop)),
        ("SlidingWindowLog::check", SlidingWindowLog::new(c.clone(), limit).check("log").await.map(drop)),
        ("SlidingWindowCounter::check", SlidingWindowCounter::new(c.clone(), limit).check("counter").await.map(drop)),
    ]
}

/// `Error::Redis` whose server code is `code`.
fn is_refused(r: &Result<(), Error>, code: &str) -> bool {
    matches!(r, Err(Error::Redis { source }) if source.code() == Some(code))
}

/// The queue as the refused calls found it: nothing enqueued, claimed,
/// extended, completed or reaped.
async fn assert_queue_unchanged(c: &MultiplexedConnection, p: &Prepared) {
    let queue = JobQueue::new(c.clone(), QUEUE).unwrap();
    assert_eq!(queue.state("new").await.unwrap(), None, "nothing enqueued");
    assert_eq!(queue.state("pending").await.unwrap(), Some(JobState::Pending), "nothing claimed");
    assert_eq!(queue.state("lapsed").await.unwrap(), Some(JobState::Active), "nothing reaped");
    assert_eq!(queue.state("live").await.unwrap(), Some(JobState::Active), "nothing completed");
    let seq: String = redis::cmd("GET").arg(queue.seq_key()).query_async(&mut c.clone()).await.unwrap();
    assert_eq!(seq, "3", "no sequence number drawn");
    let attempt: String = redis::cmd("HGET")
        .arg(queue.job_key("pending").unwrap())
        .arg("attempt")
        .query_async(&mut c.clone())
        .await
        .unwrap();
    assert_eq!(attempt, "0", "no attempt taken");
    let until: u64 =
        redis::cmd("ZSCORE").arg(queue.active_key()).arg("live").query_async(&mut c.clone()).await.unwrap();
    assert_eq!(until, p.live.lease_until_ms(), "the live lease not extended");
}

#[tokio::test]
async fn every_write_to_a_replica_is_redis_readonly_never_corrupt_state() {
    let primary = server();
    let replica = RedisServer::start_replica_of(&primary, ServerConfig::default()).unwrap_or_else(|e| panic!("{e}"));
    let mut prepared = prepare(&conn(&primary).await).await;
    primary.await_replicas(1).unwrap();

    let on_replica = conn(&replica).await;
    let wrong: Vec<String> = every_write(&on_replica, &mut prepared)
        .await
        .into_iter()
        .filter(|(_, r)| !is_refused(r, "READONLY"))
        .map(|(what, r)| format!("{what}: expected Error::Redis(READONLY), got {r:?}"))
        .collect();
    assert!(wrong.is_empty(), "{wrong:#?}");
    assert_queue_unchanged(&on_replica, &prepared).await;
}

#[tokio::test]
async fn a_write_refused_at_maxmemory_is_redis_oom_never_corrupt_state() {
    let primary = server();
    let c = conn(&primary).await;
    let mut prepared = prepare(&c).await;
    let _: () = redis::cmd("CONFIG").arg("SET").arg("maxmemory").arg("1").query_async(&mut c.clone()).await.unwrap();

    let results = every_write(&c, &mut prepared).await;
    let _: () = redis::cmd("CONFIG").arg("SET").arg("maxmemory").arg("0").query_async(&mut c.clone()).await.unwrap();
    let mut wrong = Vec::new();
    for (what, r) in &results {
        // A script's first write decides: a command that may grow memory
        // (INCR, HINCRBY, ZADD, SET, HSET) is refused, one that frees it
        // (ZREM, DEL, PEXPIRE) is not, and the rest of that script runs.
        let first_write_frees =
            matches!(*what, "JobQueue::complete" | "JobQueue::reap" | "Lock::extend" | "Lock::release");
        if !(is_refused(r, "OOM") || first_write_frees && r.is_ok()) {
            wrong.push(format!("{what}: expected Error::Redis(OOM), got {r:?}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
    let queue = JobQueue::new(c.clone(), QUEUE).unwrap();
    assert_eq!(queue.state("new").await.unwrap(), None, "nothing enqueued");
    assert_eq!(queue.state("pending").await.unwrap(), Some(JobState::Pending), "nothing claimed");
    let attempt: String = redis::cmd("HGET")
        .arg(queue.job_key("pending").unwrap())
        .arg("attempt")
        .query_async(&mut c.clone())
        .await
        .unwrap();
    assert_eq!(attempt, "0", "no attempt taken");
}
