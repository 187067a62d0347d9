//! Fencing: counterparts of reference cases 10–15, against a real redis-server.

mod support;

use core::time::Duration;

use redis_primitives::naive::UnfencedStore;
use redis_primitives::{FencedStore, FencingToken, Lock, WriteOutcome};
use support::{connect, ms, server};
use tokio::time::sleep;

#[tokio::test]
async fn case10_lease_expires_mid_section_stale_write_refused() {
    let s = server();
    let lock = Lock::new(connect(&s).await);
    let store = FencedStore::new(connect(&s).await);
    let a = lock.acquire("res", ms(200)).await.unwrap().unwrap();
    let holder_a = async {
        sleep(Duration::from_millis(350)).await; // work outlives the 200 ms lease
        store.write("doc", b"from A", a.token()).await.unwrap()
    };
    let holder_b = async {
        sleep(Duration::from_millis(220)).await;
        let b = lock.acquire("res", ms(5000)).await.unwrap().expect("A's lease expired");
        assert_eq!(store.write("doc", b"from B", b.token()).await.unwrap(), WriteOutcome::Accepted);
        b
    };
    let (a_outcome, b) = tokio::join!(holder_a, holder_b);
    assert_eq!(
        a_outcome,
        WriteOutcome::Rejected { rejected_token: a.token(), highest_seen: b.token() }
    );
    let stored = store.read("doc").await.unwrap().unwrap();
    assert_eq!(stored.value, b"from B");
    assert_eq!(stored.token, b.token());
}

#[tokio::test]
async fn case11_unfenced_store_lets_stale_write_win() {
    let s = server();
    let lock = Lock::new(connect(&s).await);
    let store = UnfencedStore::new(connect(&s).await);
    let _a = lock.acquire("res", ms(200)).await.unwrap().unwrap();
    let holder_a = async {
        sleep(Duration::from_millis(350)).await;
        store.write("doc", b"from A").await.unwrap();
    };
    let holder_b = async {
        sleep(Duration::from_millis(220)).await;
        let _b = lock.acquire("res", ms(5000)).await.unwrap().expect("A's lease expired");
        store.write("doc", b"from B").await.unwrap();
    };
    tokio::join!(holder_a, holder_b);
    // The stale holder silently overwrote the newer holder's value.
    assert_eq!(store.read("doc").await.unwrap().as_deref(), Some(&b"from A"[..]));
}

#[tokio::test]
async fn case12_repeated_writes_with_the_current_token_are_accepted() {
    let s = server();
    let store = FencedStore::new(connect(&s).await);
    let t = FencingToken::new(7);
    for i in 0..5 {
        let v = format!("v{i}");
        assert_eq!(store.write("k", &v, t).await.unwrap(), WriteOutcome::Accepted);
        assert_eq!(store.read("k").await.unwrap().unwrap().value, v.as_bytes());
    }
}

#[tokio::test]
async fn case13_honest_limit_stale_write_before_newer_write_is_accepted() {
    let s = server();
    let lock = Lock::new(connect(&s).await);
    let store = FencedStore::new(connect(&s).await);
    let a = lock.acquire("res", ms(100)).await.unwrap().unwrap();
    sleep(Duration::from_millis(150)).await;
    let b = lock.acquire("res", ms(5000)).await.unwrap().unwrap();
    // A's lease is gone, but B has not written yet: fencing cannot know A is stale.
    assert_eq!(store.write("doc", b"stale A", a.token()).await.unwrap(), WriteOutcome::Accepted);
    assert_eq!(store.write("doc", b"B", b.token()).await.unwrap(), WriteOutcome::Accepted);
    // Once the newer write has landed, the stale holder is refused.
    assert_eq!(
        store.write("doc", b"stale A again", a.token()).await.unwrap(),
        WriteOutcome::Rejected { rejected_token: a.token(), highest_seen: b.token() }
    );
}

#[tokio::test]
async fn case14_tokens_strictly_increase_across_release_expiry_reacquire() {
    let s = server();
    let lock = Lock::new(connect(&s).await);
    let mut tokens = Vec::new();
    for i in 0..6 {
        let lease = lock.acquire("seq", ms(60)).await.unwrap().unwrap();
        tokens.push(lease.token());
        if i % 2 == 0 {
            assert!(lock.release(&lease).await.unwrap());
        } else {
            sleep(Duration::from_millis(100)).await; // let it expire instead
        }
    }
    assert!(tokens.windows(2).all(|w| w[0] < w[1]), "{tokens:?}");
}

#[tokio::test]
async fn case15_deleting_the_fence_counter_reissues_tokens_documented_non_guarantee() {
    let s = server();
    let lock = Lock::new(connect(&s).await);
    let store = FencedStore::new(connect(&s).await);
    for _ in 0..3 {
        let l = lock.acquire("res", ms(5000)).await.unwrap().unwrap();
        lock.release(&l).await.unwrap();
    }
    // A holds token 4, is paused, and its lease expires.
    let a = lock.acquire("res", ms(100)).await.unwrap().unwrap();
    assert_eq!(a.token(), FencingToken::new(4));
    sleep(Duration::from_millis(150)).await;
    // Someone deletes the counter (eviction, FLUSHDB, failover to a lagging replica).
    s.command(&["DEL", &lock.fence_key("res").unwrap()]).unwrap();
    let c = lock.acquire("res", ms(5000)).await.unwrap().unwrap();
    assert_eq!(c.token(), FencingToken::new(1), "an already-issued token, handed out again");
    assert!(c.token() < a.token(), "tokens went backwards");
    assert_eq!(store.write("doc", b"C, current holder", c.token()).await.unwrap(), WriteOutcome::Accepted);
    // A wakes up and writes with its stale token 4: accepted, over the current holder's value.
    assert_eq!(store.write("doc", b"A, stale", a.token()).await.unwrap(), WriteOutcome::Accepted);
    assert_eq!(store.read("doc").await.unwrap().unwrap().value, b"A, stale");
    // And the current holder is now locked out of its own resource.
    assert!(matches!(
        store.write("doc", b"C again", c.token()).await.unwrap(),
        WriteOutcome::Rejected { .. }
    ));
}

#[tokio::test]
async fn single_instance_restart_loses_the_lease_and_the_counter_documented_non_guarantee() {
    // Stands in for a failover to a replica that had not received the latest
    // writes: the lock and the counter vanish together.
    let mut s = server();
    let lock = Lock::new(connect(&s).await);
    for _ in 0..5 {
        let l = lock.acquire("res", ms(60_000)).await.unwrap().unwrap();
        lock.release(&l).await.unwrap();
    }
    let holder = lock.acquire("res", ms(60_000)).await.unwrap().unwrap();
    assert_eq!(holder.token(), FencingToken::new(6));
    s.restart().unwrap(); // no persistence: every key is gone
    let lock2 = Lock::new(connect(&s).await);
    let second = lock2.acquire("res", ms(60_000)).await.unwrap().expect("the held lease was lost");
    assert_eq!(second.token(), FencingToken::new(1), "the counter went backwards");
    assert!(second.token() < holder.token());
}
