//! Failover, on real replication (a primary and a replica started by the
//! testkit, the link cut and restored, the primary killed with SIGKILL, the
//! replica promoted): the failure first, then the two opt-in mitigations.
//!
//! 1. Without mitigation a failover to a replica that missed the last
//!    acquires reissues tokens already handed out (a documented
//!    non-guarantee, asserted).
//! 2. `LockBuilder::acknowledged` (ADR 0016): while the replica is cut, a
//!    won acquire is `NotAcknowledged` and its lease withdrawn, so no lease
//!    handed out carries a token the promoted node can issue again; the
//!    same for `FencedStore::acknowledged` and an election on such a lock.
//! 3. `Tokens::TimeFloored` (ADR 0017): tokens keep increasing across a
//!    failover with the link cut and across a restart without persistence,
//!    and stop doing so once the counter is ahead of the clock (the limit,
//!    shown with a counter set into the future). The floored script keeps
//!    every guarantee of the plain one (errors that change nothing, exact
//!    past 2^53), checked case by case.
//!
//! Each test runs on whatever `REDIS_SERVER` names (CI runs the suite on
//! Redis 7 and on Valkey 9). Figures printed with `--nocapture` are what the
//! guide's replication page quotes.

use crate::support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use core::time::Duration;
use redis::aio::MultiplexedConnection;
use redis_primitives::election::Election;
use redis_primitives::{Acknowledgement, Error, FencedStore, FencingToken, Lock, Tokens, WriteOutcome};
use redis_primitives_testkit::ServerConfig;
use support::{connect_with_timeout, ms, server, RedisServer};
use tokio::time::{sleep, timeout, Instant};

/// The `WAIT` timeout of every acknowledged call here.
const ACK_TIMEOUT: Duration = Duration::from_millis(150);

/// Longer than [`ACK_TIMEOUT`]: a `WAIT` must be answered, not abandoned.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(3);

fn ack() -> Acknowledgement {
    Acknowledgement::new(1, ACK_TIMEOUT).expect("valid")
}

/// A primary and one replica that holds everything the primary has.
fn linked() -> (RedisServer, RedisServer) {
    let primary = server();
    let replica = RedisServer::start_replica_of(&primary, ServerConfig::default()).unwrap_or_else(|e| panic!("{e}"));
    (primary, replica)
}

async fn conn(s: &RedisServer) -> MultiplexedConnection {
    connect_with_timeout(s, RESPONSE_TIMEOUT).await
}

/// Kills the primary (SIGKILL, as a crash) and promotes the replica.
fn fail_over(primary: &mut RedisServer, replica: &RedisServer) {
    primary.stop();
    replica.promote().unwrap_or_else(|e| panic!("{e}"));
}

/// Acquires and releases `name` `n` times; the tokens.
async fn take_and_release<C: redis_primitives::Connection>(lock: &Lock<C>, name: &str, n: usize) -> Vec<FencingToken> {
    let mut tokens = Vec::new();
    for _ in 0..n {
        let lease = lock.acquire(name, ms(60_000)).await.unwrap().expect("free");
        assert!(lock.release(&lease).await.unwrap());
        tokens.push(lease.token());
    }
    tokens
}

/// `GET key` through redis-rs (works on a replica too).
async fn get(c: &mut MultiplexedConnection, key: &str) -> Option<String> {
    redis::cmd("GET").arg(key).query_async(c).await.unwrap()
}

async fn exists(c: &mut MultiplexedConnection, key: &str) -> bool {
    redis::cmd("EXISTS").arg(key).query_async::<i64>(c).await.unwrap() == 1
}

/// How many `WAIT`s the server has run (`INFO commandstats`).
async fn wait_calls(c: &mut MultiplexedConnection) -> u64 {
    let info: String = redis::cmd("INFO").arg("commandstats").query_async(c).await.unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("cmdstat_wait:calls="))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |n| n.parse().expect("a count"))
}

/// The wall clock in microseconds, which the server's `TIME` reads too (one
/// machine).
fn now_micros() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_micros() as u64
}

fn floored<C: redis_primitives::Connection>(c: C) -> Lock<C> {
    Lock::builder(c).tokens(Tokens::TimeFloored).build().unwrap()
}

fn median_ms(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1000.0
}

// ---- 1. the failure ------------------------------------------------------

/// Replication is asynchronous: acquires the replica never received are
/// lost by the failover, and the promoted node hands their tokens out
/// again. Fencing cannot tell the second lease from the first.
#[tokio::test]
async fn a_failover_to_a_replica_that_missed_acquires_reissues_their_tokens_documented_non_guarantee() {
    let (mut primary, replica) = linked();
    let lock = Lock::new(conn(&primary).await);
    assert_eq!(take_and_release(&lock, "res", 2).await, [FencingToken::new(1), FencingToken::new(2)]);
    primary.await_replicas(1).unwrap();

    replica.cut_replication().unwrap();
    let issued = take_and_release(&lock, "res", 3).await; // 3, 4, 5: on the primary only
    let holder = lock.acquire("res", ms(60_000)).await.unwrap().unwrap(); // 6, held
    assert_eq!(holder.token(), FencingToken::new(6));
    fail_over(&mut primary, &replica);

    let promoted = Lock::new(conn(&replica).await);
    let second = promoted.acquire("res", ms(60_000)).await.unwrap().expect("the held lease was lost with the primary");
    assert_eq!(second.token(), FencingToken::new(3), "the counter went back to the replica's 2");
    assert!(second.token() <= holder.token() && issued.contains(&second.token()), "a token already handed out");
    // A store fenced by these tokens now accepts the stale holder and the
    // new one alike: equal tokens are the same holder to it.
    let store = FencedStore::new(conn(&replica).await);
    assert_eq!(store.write("doc", b"new holder", second.token()).await.unwrap(), WriteOutcome::Accepted);
    assert_eq!(
        store.write("doc", b"old holder, token 6", holder.token()).await.unwrap(),
        WriteOutcome::Accepted,
        "the stale holder's higher token wins over the current holder"
    );
}

// ---- 2. acknowledged acquire and write -----------------------------------

#[test]
fn acknowledgement_new_refuses_what_wait_cannot_do() {
    let refused = |replicas: u32, t: Duration, what: &str| match Acknowledgement::new(replicas, t) {
        Err(Error::InvalidInput { what: w, .. }) => assert_eq!(w, what, "{replicas} {t:?}"),
        other => panic!("{replicas} replicas, {t:?}: expected InvalidInput, got {other:?}"),
    };
    refused(0, Duration::from_millis(100), "acknowledgement replicas");
    refused(1, Duration::ZERO, "acknowledgement timeout");
    refused(1, Duration::from_micros(500), "acknowledgement timeout"); // would be WAIT 1 0
    refused(1, Duration::from_micros(1500), "acknowledgement timeout");
    refused(1, Duration::from_nanos(1), "acknowledgement timeout");
    let max = Acknowledgement::MAX_TIMEOUT_MILLIS;
    refused(1, Duration::from_millis(max + 1), "acknowledgement timeout");
    // The documented bound itself, 2^53 − 1 ms, spelled out: the constant
    // above could move without any of these comparisons noticing.
    refused(1, Duration::from_millis(1 << 53), "acknowledgement timeout");
    assert!(Acknowledgement::new(1, Duration::from_millis((1 << 53) - 1)).is_ok());
    refused(1, Duration::from_millis(i64::MAX as u64), "acknowledgement timeout");
    refused(1, Duration::from_millis(i64::MAX as u64 + 1), "acknowledgement timeout");
    refused(1, Duration::MAX, "acknowledgement timeout");
    for (replicas, t) in [(1, 1), (2, 150), (u32::MAX, max)] {
        let a = Acknowledgement::new(replicas, Duration::from_millis(t)).unwrap();
        assert_eq!((a.replicas(), a.timeout()), (replicas, Duration::from_millis(t)));
    }
}

/// The bounds reach the server intact: the longest accepted timeout is one
/// the server takes (a linked replica answers at once), and the smallest
/// one times out as it should.
#[tokio::test]
async fn the_extreme_accepted_acknowledgements_work_against_a_real_server() {
    let (primary, replica) = linked();
    let longest = Acknowledgement::new(1, Duration::from_millis(Acknowledgement::MAX_TIMEOUT_MILLIS)).unwrap();
    let lock = Lock::builder(conn(&primary).await).acknowledged(longest).build().unwrap();
    let lease = lock.acquire("longest", ms(60_000)).await.unwrap().expect("acknowledged by the linked replica");
    assert!(lock.release(&lease).await.unwrap());

    replica.cut_replication().unwrap();
    let shortest = Acknowledgement::new(1, Duration::from_millis(1)).unwrap();
    let lock = Lock::builder(conn(&primary).await).acknowledged(shortest).build().unwrap();
    assert!(matches!(lock.acquire("shortest", ms(60_000)).await, Err(Error::NotAcknowledged { .. })));
    // More replicas than exist can never be satisfied, even while linked.
    replica.restore_replication(&primary).unwrap();
    let two = Acknowledgement::new(2, Duration::from_millis(50)).unwrap();
    let lock = Lock::builder(conn(&primary).await).acknowledged(two).build().unwrap();
    match lock.acquire("two", ms(60_000)).await {
        Err(Error::NotAcknowledged { acknowledged: 1, required: 2, .. }) => {}
        other => panic!("expected 1 of 2, got {other:?}"),
    }
}

#[tokio::test]
async fn an_unacknowledged_acquire_consumes_its_token_and_withdraws_the_lease() {
    let (primary, replica) = linked();
    let c = conn(&primary).await;
    let lock = Lock::builder(c.clone()).acknowledged(ack()).build().unwrap();
    assert_eq!(lock.acknowledgement(), Some(ack()));
    let mut inspect = conn(&primary).await;

    // Linked: confirmed, handed out.
    let mut linked_latency = Vec::new();
    for expected in 1..=5 {
        let started = Instant::now();
        let lease = lock.acquire("res", ms(60_000)).await.unwrap().expect("free and acknowledged");
        linked_latency.push(started.elapsed());
        assert_eq!(lease.token(), FencingToken::new(expected));
        assert!(lock.release(&lease).await.unwrap());
    }

    replica.cut_replication().unwrap();
    let mut cut_latency = Vec::new();
    for consumed in 6..=8 {
        let started = Instant::now();
        match lock.acquire("res", ms(60_000)).await {
            Err(e @ Error::NotAcknowledged { .. }) => {
                assert!(!e.outcome_is_unknown(), "the outcome is known: taken, then withdrawn");
                let Error::NotAcknowledged { key, acknowledged, required } = e else { unreachable!() };
                assert_eq!((key.as_str(), acknowledged, required), ("lock:{res}", 0, 1));
            }
            other => panic!("expected NotAcknowledged, got {other:?}"),
        }
        let took = started.elapsed();
        // The server counts the timeout in whole milliseconds of its clock.
        assert!(took >= ACK_TIMEOUT - Duration::from_millis(2), "WAIT waited its timeout ({took:?})");
        cut_latency.push(took);
        assert!(!exists(&mut inspect, "lock:{res}").await, "the lease was released on the primary");
        assert_eq!(lock.current_token("res").await.unwrap(), Some(FencingToken::new(consumed)), "token consumed");
    }
    // The name is free at once (no TTL to wait out): a plain lock takes it.
    let plain = Lock::new(c.clone());
    let held = plain.acquire("res", ms(60_000)).await.unwrap().expect("the withdrawn lease left the name free");
    assert_eq!(held.token(), FencingToken::new(9));

    // A refused acquire sends no WAIT, and is answered without waiting.
    let waits = wait_calls(&mut inspect).await;
    let started = Instant::now();
    assert!(lock.acquire("res", ms(60_000)).await.unwrap().is_none(), "held");
    assert!(started.elapsed() < ACK_TIMEOUT);
    assert_eq!(wait_calls(&mut inspect).await, waits, "no WAIT for a refused acquire");
    assert_eq!(lock.current_token("res").await.unwrap(), Some(FencingToken::new(9)), "a loser consumes nothing");
    assert!(plain.release(&held).await.unwrap(), "the holder's lease is untouched");
    // An acquire that fails in the script (a corrupt counter) waits for nothing either.
    inspect_set(&mut inspect, "lock:{bad}:fence", "abc").await;
    assert!(matches!(lock.acquire("bad", ms(1000)).await, Err(Error::CorruptState { .. })));
    assert_eq!(wait_calls(&mut inspect).await, waits);
    eprintln!(
        "acknowledged acquire: {:.2} ms median linked (WAIT 1 answered), {:.1} ms median cut (WAIT 1 {} ms timed out)",
        median_ms(linked_latency),
        median_ms(cut_latency),
        ACK_TIMEOUT.as_millis()
    );
}

async fn inspect_set(c: &mut MultiplexedConnection, key: &str, value: &str) {
    let () = redis::cmd("SET").arg(key).arg(value).query_async(c).await.unwrap();
}

/// The point of acknowledging: every lease handed out is on the replica, so
/// the promoted node never issues a handed-out token again (it may reissue
/// tokens that were consumed but never handed out: nobody holds those).
#[tokio::test]
async fn acknowledged_leases_survive_a_failover_and_tokens_keep_increasing_past_every_one_handed_out() {
    let (mut primary, replica) = linked();
    let lock = Lock::builder(conn(&primary).await).acknowledged(ack()).build().unwrap();
    let mut handed_out = take_and_release(&lock, "res", 3).await; // 1, 2, 3

    replica.cut_replication().unwrap();
    for _ in 0..3 {
        // 4, 5, 6: consumed on the primary, never handed out.
        assert!(matches!(lock.acquire("res", ms(60_000)).await, Err(Error::NotAcknowledged { .. })));
    }
    replica.restore_replication(&primary).unwrap();
    handed_out.extend(take_and_release(&lock, "res", 2).await); // 7, 8
    let holder = lock.acquire("res", ms(600)).await.unwrap().expect("free"); // 9, held
    handed_out.push(holder.token());
    assert_eq!(handed_out.iter().map(|t| t.get()).collect::<Vec<_>>(), [1, 2, 3, 7, 8, 9]);
    // No barrier: the primary dies right after the last acknowledged reply.
    fail_over(&mut primary, &replica);

    let promoted = Lock::builder(conn(&replica).await).acknowledged(ack()).build().unwrap();
    assert!(promoted.acquire("res", ms(60_000)).await.unwrap().is_none(), "the acknowledged lease survived");
    sleep(Duration::from_millis(700)).await; // its 600 ms TTL runs out on the promoted node
                                             // Nobody replicates from the promoted node: a plain lock on it.
    let next = Lock::new(conn(&replica).await).acquire("res", ms(60_000)).await.unwrap().expect("expired");
    assert!(handed_out.iter().all(|t| *t < next.token()), "{next:?} after {handed_out:?}");
    assert_eq!(next.token(), FencingToken::new(10));
}

#[tokio::test]
async fn an_acknowledged_fenced_write_is_applied_but_reported_when_not_confirmed() {
    let (mut primary, replica) = linked();
    let store = FencedStore::new(conn(&primary).await).acknowledged(ack());
    let mut inspect = conn(&primary).await;
    assert_eq!(store.write("doc", b"v1", FencingToken::new(1)).await.unwrap(), WriteOutcome::Accepted);

    replica.cut_replication().unwrap();
    match store.write("doc", b"v2", FencingToken::new(2)).await {
        Err(e @ Error::NotAcknowledged { .. }) => {
            assert!(!e.outcome_is_unknown());
            let Error::NotAcknowledged { key, acknowledged, required } = e else { unreachable!() };
            assert_eq!((key.as_str(), acknowledged, required), ("fenced:{doc}", 0, 1));
        }
        other => panic!("expected NotAcknowledged, got {other:?}"),
    }
    let on_primary = store.read("doc").await.unwrap().unwrap();
    assert_eq!((on_primary.value.as_slice(), on_primary.token), (&b"v2"[..], FencingToken::new(2)), "applied");
    // A rejected write sends no WAIT.
    let waits = wait_calls(&mut inspect).await;
    assert_eq!(
        store.write("doc", b"stale", FencingToken::new(1)).await.unwrap(),
        WriteOutcome::Rejected { rejected_token: FencingToken::new(1), highest_seen: FencingToken::new(2) }
    );
    assert_eq!(wait_calls(&mut inspect).await, waits);

    // What the error warned of: the failover loses the unconfirmed write and
    // keeps the confirmed one.
    fail_over(&mut primary, &replica);
    let promoted = FencedStore::new(conn(&replica).await);
    let survived = promoted.read("doc").await.unwrap().unwrap();
    assert_eq!((survived.value.as_slice(), survived.token), (&b"v1"[..], FencingToken::new(1)));
}

/// An election campaigns through `acquire`: a campaign no replica confirmed
/// is not a win, and the node leads once the link is back.
#[tokio::test]
async fn an_election_on_an_acknowledged_lock_does_not_lead_while_replication_is_cut() {
    let (primary, replica) = linked();
    replica.cut_replication().unwrap();
    let lock = Lock::builder(conn(&primary).await).acknowledged(ack()).build().unwrap();
    let elected = Arc::new(AtomicUsize::new(0));
    let counter = elected.clone();
    let node = Election::builder_on(&lock, "leader")
        .lease_ttl(Duration::from_millis(1500))
        .renew_interval(Duration::from_millis(300))
        .campaign_interval(Duration::from_millis(40))
        .on_elected(move |_| {
            counter.fetch_add(1, Ordering::SeqCst);
        })
        .build()
        .unwrap();
    assert_eq!(node.lock().acknowledgement(), Some(ack()), "builder_on keeps the acknowledgement");
    let task = node.start();
    let until = Instant::now() + Duration::from_millis(900);
    while Instant::now() < until {
        assert!(!node.is_leader(), "led on an unacknowledged campaign");
        sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(elected.load(Ordering::SeqCst), 0);
    let campaigns = node.lock().current_token("leader").await.unwrap().expect("campaigns ran").get();
    assert!(campaigns >= 3, "the campaigns won the script and were withdrawn: {campaigns} tokens consumed");

    replica.restore_replication(&primary).unwrap();
    let epoch = timeout(Duration::from_secs(10), async {
        loop {
            if let Some(epoch) = node.epoch() {
                return epoch;
            }
            sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("leads once the replica confirms");
    assert!(epoch.get() > campaigns, "epoch {epoch} after {campaigns} withdrawn campaigns");
    assert_eq!(elected.load(Ordering::SeqCst), 1);
    node.stop().await;
    task.await.unwrap().unwrap();
}

// ---- 3. time-floored tokens ----------------------------------------------

#[tokio::test]
async fn time_floored_tokens_keep_increasing_across_a_failover_with_replication_cut() {
    let (mut primary, replica) = linked();
    let lock = floored(conn(&primary).await);
    assert_eq!(lock.tokens(), Tokens::TimeFloored);
    let before = take_and_release(&lock, "res", 2).await;
    primary.await_replicas(1).unwrap();
    // Replicated by its effect (the SET of the value computed on the
    // primary), not by running the script again with the replica's clock.
    let mut on_replica = conn(&replica).await;
    assert_eq!(get(&mut on_replica, "lock:{res}:fence").await, Some(before[1].get().to_string()));

    replica.cut_replication().unwrap();
    let lost = take_and_release(&lock, "res", 3).await; // on the primary only
    let holder = lock.acquire("res", ms(60_000)).await.unwrap().unwrap();
    let highest = holder.token();
    fail_over(&mut primary, &replica);

    let promoted = floored(conn(&replica).await);
    let (lo, next, hi) = (now_micros(), promoted.acquire("res", ms(60_000)).await.unwrap(), now_micros());
    let next = next.expect("the held lease was lost with the primary");
    assert!(next.token() > highest, "{next:?} after {lost:?} and {highest}");
    assert!((lo..=hi).contains(&next.token().get()), "the promoted node's clock: {lo} <= {} <= {hi}", next.token());
    // The promoted node's counter holds the token it handed out.
    assert_eq!(get(&mut on_replica, "lock:{res}:fence").await, Some(next.token().get().to_string()));
}

#[tokio::test]
async fn time_floored_tokens_keep_increasing_across_a_restart_without_persistence() {
    let mut s = server();
    let (lock, plain) = (floored(conn(&s).await), Lock::new(conn(&s).await));
    let floored_before = take_and_release(&lock, "res", 3).await;
    let plain_before = take_and_release(&plain, "other", 3).await;
    s.restart().unwrap(); // every key is gone, the counters too

    let (lock, plain) = (floored(conn(&s).await), Lock::new(conn(&s).await));
    let after = lock.acquire("res", ms(60_000)).await.unwrap().unwrap();
    assert!(floored_before.iter().all(|t| *t < after.token()), "{after:?} after {floored_before:?}");
    let reissued = plain.acquire("other", ms(60_000)).await.unwrap().unwrap();
    assert_eq!(reissued.token(), plain_before[0], "the plain counter starts again at 1");
}

/// The floor is a clock reading, so it protects only while the clock is
/// ahead of the last token. A counter ahead of the clock (set there by a
/// server whose clock ran ahead, or by hand, as here; a promoted node whose
/// clock lags is the same case, which the simulation steps a clock back to
/// show) leaves `counter + 1` in charge, and the failover reissues tokens
/// as the plain counter does.
#[tokio::test]
async fn a_counter_ahead_of_the_clock_is_where_the_floor_stops_helping_documented_non_guarantee() {
    let (mut primary, replica) = linked();
    let lock = floored(conn(&primary).await);
    let future = now_micros() + 1_000_000_000; // 1000 s ahead of every clock here
    primary.command(&["SET", "lock:{res}:fence", &future.to_string()]).unwrap();
    primary.await_replicas(1).unwrap();

    replica.cut_replication().unwrap();
    let issued = take_and_release(&lock, "res", 3).await;
    assert_eq!(issued.iter().map(|t| t.get()).collect::<Vec<_>>(), [future + 1, future + 2, future + 3]);
    fail_over(&mut primary, &replica);

    let next = floored(conn(&replica).await).acquire("res", ms(60_000)).await.unwrap().unwrap();
    assert_eq!(next.token().get(), future + 1, "reissued: the clock is 1000 s behind the last token");
    assert!(issued.contains(&next.token()));
}

/// Everything the plain acquire script guarantees, checked on the floored
/// one: tokens on the server's clock and read back exactly, `counter + 1`
/// when the counter is ahead, losers and errors change nothing, exact past
/// 2^53 and up to 2^63 − 1.
#[tokio::test]
async fn the_floored_acquire_keeps_every_guarantee_of_the_counter() {
    let s = server();
    let c = conn(&s).await;
    let lock = floored(c.clone());
    let mut inspect = conn(&s).await;

    // Fresh, then again: the server's clock, strictly increasing, and the
    // counter holds exactly the token handed out.
    let mut last = FencingToken::new(0);
    for _ in 0..3 {
        let (lo, lease, hi) = (now_micros(), lock.acquire("t", ms(60_000)).await.unwrap().unwrap(), now_micros());
        assert!((lo..=hi).contains(&lease.token().get()), "{lo} <= {} <= {hi}", lease.token());
        assert!(lease.token() > last);
        assert_eq!(lock.current_token("t").await.unwrap(), Some(lease.token()));
        // A contender loses and changes nothing.
        assert!(lock.acquire("t", ms(60_000)).await.unwrap().is_none());
        assert_eq!(lock.current_token("t").await.unwrap(), Some(lease.token()));
        assert!(lock.release(&lease).await.unwrap(), "the holder's lease is untouched");
        last = lease.token();
    }
    // A counter at zero is fresh, not corrupt.
    inspect_set(&mut inspect, "lock:{zero}:fence", "0").await;
    assert!(lock.acquire("zero", ms(1000)).await.unwrap().unwrap().token().get() > 1_000_000_000_000_000);

    // Ahead of the clock: counter + 1, exactly.
    let ahead = now_micros() + 1_000_000_000;
    inspect_set(&mut inspect, "lock:{ahead}:fence", &ahead.to_string()).await;
    assert_eq!(lock.acquire("ahead", ms(1000)).await.unwrap().unwrap().token().get(), ahead + 1);
    assert_eq!(lock.current_token("ahead").await.unwrap(), Some(FencingToken::new(ahead + 1)));

    // Past 2^53 a double rounds; the floored token does not.
    const TWO_53: u64 = 1 << 53;
    for (counter, token) in
        [(TWO_53 - 2, TWO_53 - 1), (TWO_53 - 1, TWO_53), (TWO_53, TWO_53 + 1), (TWO_53 + 1, TWO_53 + 2)]
    {
        let name = format!("big{counter}");
        inspect_set(&mut inspect, &format!("lock:{{{name}}}:fence"), &counter.to_string()).await;
        let lease = lock.acquire(&name, ms(1000)).await.unwrap().unwrap();
        assert_eq!(lease.token().get(), token, "counter {counter}");
        assert_eq!(lock.current_token(&name).await.unwrap(), Some(lease.token()));
    }
    // The last token is 2^63 − 1; then a refusal that takes nothing.
    let max = i64::MAX as u64;
    inspect_set(&mut inspect, "lock:{end}:fence", &(max - 1).to_string()).await;
    let end = lock.acquire("end", ms(1000)).await.unwrap().unwrap();
    assert_eq!(end.token().get(), max);
    assert!(lock.release(&end).await.unwrap());

    // Corrupt counters: typed, naming the counter, nothing changed.
    for (i, bad) in ["-5", "-1", "abc", "1.5", "9223372036854775808", "9223372036854775807"].into_iter().enumerate() {
        let name = format!("c{i}");
        let (key, fence) = (lock.key(&name).unwrap(), lock.fence_key(&name).unwrap());
        inspect_set(&mut inspect, &fence, bad).await;
        match lock.acquire(&name, ms(60_000)).await {
            Err(Error::CorruptState { key: k, detail }) => {
                assert_eq!(k, fence, "counter {bad}");
                assert!(detail.contains(&fence), "counter {bad}: the detail names the counter: {detail}");
            }
            other => panic!("counter {bad}: expected CorruptState, got {other:?}"),
        }
        assert!(!exists(&mut inspect, &key).await, "counter {bad}: no lock taken");
        assert_eq!(get(&mut inspect, &fence).await.as_deref(), Some(bad), "counter {bad} unchanged");
    }

    // Keys of another type: WRONGTYPE, nothing changed.
    let () = redis::cmd("HSET").arg("lock:{h}").arg("f").arg("v").query_async(&mut inspect).await.unwrap();
    assert!(matches!(lock.acquire("h", ms(1000)).await, Err(Error::WrongType { .. })));
    assert_eq!(get(&mut inspect, "lock:{h}:fence").await, None, "no token consumed");
    let () = redis::cmd("HSET").arg("lock:{hf}:fence").arg("f").arg("v").query_async(&mut inspect).await.unwrap();
    assert!(matches!(lock.acquire("hf", ms(1000)).await, Err(Error::WrongType { .. })));
    assert!(!exists(&mut inspect, "lock:{hf}").await, "no lock taken");
}

/// The two compose, and an election's epochs follow the floor.
#[tokio::test]
async fn an_acknowledged_time_floored_election_leads_with_a_clock_epoch() {
    let (primary, _replica) = linked();
    let node = Election::builder(conn(&primary).await, "both")
        .acknowledged(ack())
        .tokens(Tokens::TimeFloored)
        .lease_ttl(Duration::from_millis(1500))
        .renew_interval(Duration::from_millis(300))
        .campaign_interval(Duration::from_millis(40))
        .build()
        .unwrap();
    assert_eq!((node.lock().acknowledgement(), node.lock().tokens()), (Some(ack()), Tokens::TimeFloored));
    let lo = now_micros();
    let task = node.start();
    let epoch = timeout(Duration::from_secs(10), async {
        loop {
            if let Some(epoch) = node.epoch() {
                return epoch;
            }
            sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("leads");
    assert!((lo..=now_micros()).contains(&epoch.get()), "a clock epoch: {epoch}");
    node.stop().await;
    task.await.unwrap().unwrap();
    // Election::builder_on keeps both from the lock it is given.
    let lock = Lock::builder(conn(&primary).await).acknowledged(ack()).tokens(Tokens::TimeFloored).build().unwrap();
    let on = Election::builder_on(&lock, "on").build().unwrap();
    assert_eq!((on.lock().acknowledgement(), on.lock().tokens()), (Some(ack()), Tokens::TimeFloored));
}
