//! The opt-in retry helper: bounded attempts, a deadline, seeded jitter.
//! `acquire` itself never loops; these tests show the loop lives here.

mod support;

use core::num::NonZeroU32;
use core::time::Duration;
use std::sync::{Arc, Mutex};

use redis_primitives::{Lock, Retry};
use support::{connect, ms, server};
use tokio::time::Instant;

fn policy(attempts: u32) -> Retry {
    Retry::new(NonZeroU32::new(attempts).unwrap(), Duration::from_millis(10), Duration::from_millis(80)).unwrap()
}

/// Offsets (ms) from the first attempt at which each attempt ran.
async fn attempt_times(retry: &Retry) -> Vec<u128> {
    let times = Arc::new(Mutex::new(Vec::new()));
    let start = Instant::now();
    let t = Arc::clone(&times);
    let got: Option<()> = retry
        .run(|| {
            t.lock().unwrap().push(start.elapsed().as_millis());
            async { Ok(None) }
        })
        .await
        .unwrap();
    assert!(got.is_none());
    let v = times.lock().unwrap().clone();
    v
}

#[tokio::test(start_paused = true)]
async fn attempts_are_bounded_and_jitter_is_reproducible_from_a_seed() {
    let a = attempt_times(&policy(6).seeded(7)).await;
    let b = attempt_times(&policy(6).seeded(7)).await;
    let c = attempt_times(&policy(6).seeded(8)).await;
    assert_eq!(a.len(), 6, "exactly the configured number of attempts");
    assert_eq!(a, b, "same seed, same schedule");
    assert_ne!(a, c, "another seed, another schedule");
    assert_eq!(a[0], 0, "the first attempt is immediate");
    // Full jitter under a cap that doubles from 10 ms up to 80 ms.
    let caps = [10u128, 20, 40, 80, 80];
    for (i, w) in a.windows(2).enumerate() {
        assert!(w[1] - w[0] <= caps[i] + 1, "delay {i} = {} ms exceeds its cap {}", w[1] - w[0], caps[i]);
    }
}

#[tokio::test(start_paused = true)]
async fn the_deadline_stops_retrying_early() {
    let times = attempt_times(&policy(1000).deadline(Duration::from_millis(200)).seeded(1)).await;
    assert!(times.len() < 1000);
    assert!(*times.last().unwrap() < 200, "no attempt starts after the deadline: {times:?}");
}

#[tokio::test]
async fn retrying_acquire_gets_the_lock_once_the_holder_lets_go() {
    let s = server();
    let lock = Lock::new(connect(&s).await);
    let held = lock.acquire("busy", ms(5000)).await.unwrap().unwrap();
    // One attempt: refused, no hidden loop.
    assert!(lock.acquire("busy", ms(1000)).await.unwrap().is_none());
    let releaser = async {
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(lock.release(&held).await.unwrap());
    };
    let retry = policy(100).deadline(Duration::from_secs(5));
    let waiter = retry.run(|| lock.acquire("busy", ms(1000)));
    let ((), got) = tokio::join!(releaser, waiter);
    let lease = got.unwrap().expect("acquired after the release");
    assert!(lease.token() > held.token());
}
