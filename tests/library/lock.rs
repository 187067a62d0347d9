//! Lock: counterparts of reference cases 1–9, against a real redis-server.

use crate::support;

use core::time::Duration;
use std::sync::Arc;

use redis_primitives::{Lock, LockOutcome, Release};
use redis_primitives_naive::NaiveLock;
use support::{connect, ms, server};
use tokio::time::sleep;

#[tokio::test]
async fn case01_second_acquire_while_live_gets_nothing() {
    let s = server();
    let lock = Lock::new(connect(&s).await);
    let first = lock.acquire("job", ms(1000)).await.unwrap().expect("first acquire wins");
    assert!(lock.acquire("job", ms(1000)).await.unwrap().is_none());
    // And a different client is refused too (not a per-connection artefact).
    let other = Lock::new(connect(&s).await);
    assert!(other.acquire("job", ms(1000)).await.unwrap().is_none());
    assert_eq!(lock.current_token("job").await.unwrap(), Some(first.token()));
}

#[tokio::test]
async fn case02_forty_concurrent_acquires_on_one_connection_fifteen_rounds() {
    let s = server();
    let lock = Arc::new(Lock::new(connect(&s).await));
    let mut last_token = 0u64;
    for round in 0..15 {
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..40 {
            let lock = Arc::clone(&lock);
            set.spawn(async move { lock.acquire("shared", ms(5000)).await.unwrap() });
        }
        let mut winners = Vec::new();
        while let Some(r) = set.join_next().await {
            if let Some(lease) = r.unwrap() {
                winners.push(lease);
            }
        }
        assert_eq!(winners.len(), 1, "round {round}: exactly one winner");
        let lease = winners.pop().unwrap();
        assert!(lease.token().get() > last_token, "round {round}: tokens strictly increase");
        last_token = lease.token().get();
        assert!(lock.release(&lease).await.unwrap(), "round {round}: release succeeds");
    }
    // One INCR per winning acquire, none per losing one: no gaps.
    assert_eq!(last_token, 15);
}

#[tokio::test]
async fn case03_release_is_compare_and_delete() {
    let s = server();
    let lock = Lock::new(connect(&s).await);
    let a = lock.acquire("r", ms(150)).await.unwrap().unwrap();
    sleep(Duration::from_millis(250)).await;
    let b = lock.acquire("r", ms(5000)).await.unwrap().expect("A expired, B acquires");
    assert!(b.token() > a.token());
    assert!(!lock.release(&a).await.unwrap(), "A's release must not delete B's lease");
    assert!(lock.acquire("r", ms(5000)).await.unwrap().is_none(), "B still holds the lock");
    assert!(lock.remaining_ttl("r").await.unwrap().is_some());

    // The same sequence with a bare DEL: A's release wipes B's lock, C gets in.
    let naive = NaiveLock::new(connect(&s).await);
    assert!(naive.acquire("n", ms(150)).await.unwrap(), "A acquires");
    sleep(Duration::from_millis(250)).await;
    assert!(naive.acquire("n", ms(5000)).await.unwrap(), "B acquires after A expired");
    assert!(naive.release("n").await.unwrap(), "A's bare DEL deletes B's lock");
    assert!(naive.acquire("n", ms(5000)).await.unwrap(), "C gets in while B thinks it holds the lock");
}

#[tokio::test]
async fn case04_extend_keeps_a_live_lease_alive() {
    let s = server();
    let lock = Lock::new(connect(&s).await);
    let mut lease = lock.acquire("e", ms(200)).await.unwrap().unwrap();
    sleep(Duration::from_millis(120)).await;
    assert!(lock.extend(&mut lease, ms(400)).await.unwrap());
    assert_eq!(lease.ttl(), ms(400));
    sleep(Duration::from_millis(200)).await; // 320 ms after acquire: past the original 200
    assert!(lock.acquire("e", ms(1000)).await.unwrap().is_none(), "still held at 320 ms");
    let left = lock.remaining_ttl("e").await.unwrap().expect("still held");
    assert!(left <= Duration::from_millis(400));
    assert!(lock.release(&lease).await.unwrap());
}

#[tokio::test]
async fn case05_extend_fails_once_gone_and_does_not_resurrect() {
    let s = server();
    let lock = Lock::new(connect(&s).await);
    let mut lease = lock.acquire("g", ms(100)).await.unwrap().unwrap();
    sleep(Duration::from_millis(200)).await;
    let before = lease.local_deadline();
    assert!(!lock.extend(&mut lease, ms(5000)).await.unwrap());
    assert_eq!(lease.local_deadline(), before, "a refused extend does not move the deadline");
    assert_eq!(lock.remaining_ttl("g").await.unwrap(), None, "no resurrection");
    let next = lock.acquire("g", ms(1000)).await.unwrap().expect("free for others");
    assert!(next.token() > lease.token());
}

#[tokio::test]
async fn case06_extend_cannot_steal_someone_elses_lock() {
    let s = server();
    let lock = Lock::new(connect(&s).await);
    let mut a = lock.acquire("s", ms(100)).await.unwrap().unwrap();
    sleep(Duration::from_millis(200)).await;
    let b = lock.acquire("s", ms(300)).await.unwrap().unwrap();
    assert!(!lock.extend(&mut a, ms(10_000)).await.unwrap());
    let left = lock.remaining_ttl("s").await.unwrap().unwrap();
    assert!(left <= Duration::from_millis(300), "B's TTL untouched by A: {left:?}");
    assert!(lock.release(&b).await.unwrap(), "B still owns it");
}

#[tokio::test]
async fn case07_with_lock_runs_body_with_its_token_and_releases() {
    let s = server();
    let lock = Lock::new(connect(&s).await);
    let outcome = lock.with_lock("w", ms(1000), |lease| async move { lease.token() }).await.unwrap();
    match outcome {
        LockOutcome::Ran { output, token, release } => {
            assert_eq!(output, token, "the body saw the lease's own token");
            assert!(matches!(release, Release::Released), "{release:?}");
        }
        LockOutcome::NotAcquired => panic!("lock was free"),
    }
    assert_eq!(lock.remaining_ttl("w").await.unwrap(), None, "released afterwards");
}

#[tokio::test]
async fn case08_with_lock_skips_body_when_taken() {
    let s = server();
    let lock = Lock::new(connect(&s).await);
    let _held = lock.acquire("t", ms(5000)).await.unwrap().unwrap();
    let mut ran = false;
    let outcome = lock.with_lock("t", ms(1000), |_| async { ran = true }).await.unwrap();
    assert!(matches!(outcome, LockOutcome::NotAcquired), "{outcome:?}");
    assert!(!ran, "the body must not run");
}

#[tokio::test]
async fn case09_with_lock_releases_nothing_when_body_outlives_lease() {
    let s = server();
    let lock = Lock::new(connect(&s).await);
    let other = Lock::new(connect(&s).await);
    let thief = async {
        sleep(Duration::from_millis(180)).await;
        other.acquire("o", ms(5000)).await.unwrap().expect("A's lease expired at 100 ms")
    };
    let body = lock.with_lock("o", ms(100), |_| sleep(Duration::from_millis(250)));
    let (b, outcome) = tokio::join!(thief, body);
    match outcome.unwrap() {
        LockOutcome::Ran { release, token, .. } => {
            assert!(matches!(release, Release::AlreadyGone), "A's release must report it deleted nothing: {release:?}");
            assert!(b.token() > token);
        }
        LockOutcome::NotAcquired => panic!("lock was free"),
    }
    assert!(other.acquire("o", ms(5000)).await.unwrap().is_none(), "B keeps the lock");
    assert!(other.release(&b).await.unwrap());
}

#[tokio::test]
async fn connection_manager_works_as_a_connection() {
    let s = server();
    let client = redis::Client::open(s.url()).unwrap();
    let manager = redis::aio::ConnectionManager::new(client).await.unwrap();
    let lock = Lock::new(manager);
    let lease = lock.acquire("cm", ms(1000)).await.unwrap().unwrap();
    assert!(lock.release(&lease).await.unwrap());
}

#[tokio::test]
async fn keys_share_one_hash_tag_and_prefix_is_configurable() {
    let s = server();
    let lock = Lock::builder(connect(&s).await).prefix("app:lk").build().unwrap();
    assert_eq!(lock.key("orders").unwrap(), "app:lk:{orders}");
    assert_eq!(lock.fence_key("orders").unwrap(), "app:lk:{orders}:fence");
    let lease = lock.acquire("orders", ms(1000)).await.unwrap().unwrap();
    assert_eq!(s.command(&["EXISTS", "app:lk:{orders}"]).unwrap(), ":1\r\n");
    assert_eq!(s.command(&["PTTL", "app:lk:{orders}:fence"]).unwrap(), ":-1\r\n", "the fence counter never expires");
    assert_eq!(lease.owner().as_str().len(), 32, "128-bit owner value, hex");
}

/// Issue 13: when the final release timed out, `with_lock` returned
/// `Err(OutcomeUnknown)` and dropped the body's output, although the body
/// had run. Now the output comes back beside `Release::Unknown`.
#[tokio::test]
async fn with_lock_returns_the_output_when_the_release_times_out() {
    let s = server();
    let lock = Lock::new(support::connect_with_timeout(&s, Duration::from_millis(150)).await);
    let admin = &s;
    // Load the release script first: on a cold server the late EVALSHA
    // would meet NOSCRIPT and (this time) not run.
    let warm = lock.acquire("warm-up", ms(1000)).await.unwrap().unwrap();
    assert!(lock.release(&warm).await.unwrap());
    let outcome = lock
        .with_lock("paused", ms(10_000), |lease| async move {
            // Freeze every client (this one included) for 800 ms right
            // after the work: the release is sent into the pause.
            admin.command(&["CLIENT", "PAUSE", "800", "ALL"]).unwrap();
            lease.token().get() * 10
        })
        .await
        .expect("the body ran: no Err may hide its output");
    let LockOutcome::Ran { output, token, release } = outcome else { panic!("lock was free") };
    assert_eq!(output, token.get() * 10);
    match release {
        Release::Unknown(e) => assert!(e.outcome_is_unknown(), "{e:?}"),
        other => panic!("expected Release::Unknown, got {other:?}"),
    }
    // The timed-out release was not cancelled: it ran once the pause ended
    // (seen from a fresh connection, queued behind it on the server).
    sleep(Duration::from_millis(900)).await;
    let observer = Lock::new(connect(&s).await);
    assert_eq!(observer.remaining_ttl("paused").await.unwrap(), None, "the late release deleted the lease");
}
