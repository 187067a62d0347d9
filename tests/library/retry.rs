//! The opt-in retry helper: bounded attempts, a deadline, seeded jitter.
//! `acquire` itself never loops; these tests show the loop lives here.

use crate::support;

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

/// Issue 13: a `max_delay` of 2^64 µs or more wrapped (`as_micros() as u64`),
/// so 20 attempts "585 000 years apart" finished in milliseconds. The cap
/// is now clamped, so the second attempt really is that far away.
#[tokio::test]
async fn a_cap_past_2_pow_64_micros_is_clamped_not_wrapped() {
    let s = server();
    let lock = Lock::new(connect(&s).await);
    let _held = lock.acquire("busy", ms(60_000)).await.unwrap().unwrap();
    let huge = Duration::from_micros(u64::MAX) + Duration::from_micros(2); // wrapped to 1 µs before
    for retry in [
        Retry::new(NonZeroU32::new(20).unwrap(), huge, huge).unwrap().seeded(1),
        Retry::new(NonZeroU32::new(20).unwrap(), huge, Duration::MAX).unwrap().seeded(2).deadline(Duration::MAX),
    ] {
        let attempts = Arc::new(Mutex::new(0u32));
        let a = Arc::clone(&attempts);
        let lock = &lock;
        let run = retry.run(move || {
            *a.lock().unwrap() += 1;
            async move { lock.acquire("busy", ms(1000)).await }
        });
        let outcome = tokio::time::timeout(Duration::from_millis(300), run).await;
        assert!(outcome.is_err(), "still waiting between attempts, not done: {outcome:?}");
        assert_eq!(*attempts.lock().unwrap(), 1, "only the first attempt ran");
    }
}
