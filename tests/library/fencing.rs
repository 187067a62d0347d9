//! Fencing: counterparts of reference cases 10–15, against a real redis-server.

use crate::support;

use core::time::Duration;

use redis_primitives::{FencedStore, FencingToken, Lock, WriteOutcome};
use redis_primitives_naive::UnfencedStore;
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
    assert_eq!(a_outcome, WriteOutcome::Rejected { rejected_token: a.token(), highest_seen: b.token() });
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
    assert!(matches!(store.write("doc", b"C again", c.token()).await.unwrap(), WriteOutcome::Rejected { .. }));
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

/// Issue 13: the acquire script used to return INCR's reply through a Lua
/// number (a double), so past 2^53 two leases got the same token and the
/// stale holder's write was accepted. Now every token is exact.
#[tokio::test]
async fn tokens_past_2_pow_53_are_exact_and_still_fence_the_stale_holder() {
    const TWO_53: u64 = 1 << 53;
    let s = server();
    let lock = Lock::new(connect(&s).await);
    let store = FencedStore::new(connect(&s).await);
    let fence = lock.fence_key("big").unwrap();
    s.command(&["SET", &fence, &(TWO_53 - 1).to_string()]).unwrap();

    let a = lock.acquire("big", ms(100)).await.unwrap().expect("free");
    assert_eq!(a.token().get(), TWO_53);
    sleep(Duration::from_millis(200)).await; // A's lease expires
    let b = lock.acquire("big", ms(5000)).await.unwrap().expect("A expired");
    assert_eq!(b.token().get(), TWO_53 + 1, "a double would have rounded this to 2^53 again");
    assert!(b.token() > a.token());
    assert_eq!(s.command(&["GET", &fence]).unwrap(), format!("$16\r\n{}\r\n", TWO_53 + 1));
    assert_eq!(lock.current_token("big").await.unwrap(), Some(b.token()));

    // B writes, then stale A: refused, because its token is strictly lower.
    assert_eq!(store.write("doc", b"from B", b.token()).await.unwrap(), WriteOutcome::Accepted);
    assert_eq!(
        store.write("doc", b"from A", a.token()).await.unwrap(),
        WriteOutcome::Rejected { rejected_token: a.token(), highest_seen: b.token() }
    );
    let stored = store.read("doc").await.unwrap().unwrap();
    assert_eq!((stored.value.as_slice(), stored.token), (&b"from B"[..], b.token()));
}

/// The counter is a Redis integer: it issues tokens up to 2^63 − 1, each
/// exact, and then refuses (typed, nothing taken) instead of wrapping.
#[tokio::test]
async fn the_last_token_is_2_pow_63_minus_1_then_acquire_refuses_without_taking_the_lock() {
    let s = server();
    let lock = Lock::new(connect(&s).await);
    let fence = lock.fence_key("end").unwrap();
    let max = i64::MAX as u64;
    s.command(&["SET", &fence, &(max - 1).to_string()]).unwrap();
    let last = lock.acquire("end", ms(1000)).await.unwrap().unwrap();
    assert_eq!(last.token().get(), max);
    assert!(lock.release(&last).await.unwrap());
    match lock.acquire("end", ms(1000)).await {
        Err(redis_primitives::Error::CorruptState { key, detail }) => {
            assert_eq!(key, fence);
            assert!(detail.contains("overflow"), "{detail}");
        }
        other => panic!("expected CorruptState, got {other:?}"),
    }
    assert_eq!(s.command(&["EXISTS", &lock.key("end").unwrap()]).unwrap(), ":0\r\n", "no lock taken");
    assert_eq!(lock.current_token("end").await.unwrap(), Some(FencingToken::new(max)));
}

/// The store compares tokens exactly over the whole u64 range, including
/// pairs a double cannot tell apart.
#[tokio::test]
async fn fenced_store_orders_neighbouring_tokens_near_u64_max_exactly() {
    let s = server();
    let store = FencedStore::new(connect(&s).await);
    for (i, high) in [u64::MAX, (1 << 53) + 1, 10_000_000_000_000_000_001].into_iter().enumerate() {
        let key = format!("k{i}");
        let (high, low) = (FencingToken::new(high), FencingToken::new(high - 1));
        assert_eq!(store.write(&key, b"high", high).await.unwrap(), WriteOutcome::Accepted);
        assert_eq!(
            store.write(&key, b"low", low).await.unwrap(),
            WriteOutcome::Rejected { rejected_token: low, highest_seen: high },
            "{low} must lose to {high}"
        );
        assert_eq!(store.write(&key, b"again", high).await.unwrap(), WriteOutcome::Accepted, "equal tokens pass");
        assert_eq!(store.read(&key).await.unwrap().unwrap().token, high);
    }
}
