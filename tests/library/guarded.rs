//! The lease-loss signal: `with_lock_guarded` drops its body as soon as the
//! lease can no longer be trusted, before another holder can acquire.

use crate::support;

use core::time::Duration;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use redis_primitives::{Error, GuardedOutcome, KeepAlive, LeaseLoss, Lock, Release};
use support::{connect, ms, server};
use tokio::time::{sleep, Instant};

/// A body that ticks every 10 ms, recording when it last ran, for `total`.
async fn ticking_body(ticks: Arc<AtomicU32>, last: Arc<Mutex<Option<Instant>>>, total: Duration) -> u32 {
    let end = Instant::now() + total;
    while Instant::now() < end {
        ticks.fetch_add(1, Ordering::SeqCst);
        *last.lock().unwrap() = Some(Instant::now());
        sleep(Duration::from_millis(10)).await;
    }
    ticks.load(Ordering::SeqCst)
}

#[tokio::test]
async fn body_longer_than_the_ttl_completes_while_extensions_succeed() {
    let s = server();
    let lock = Lock::new(connect(&s).await);
    let policy = KeepAlive::thirds(&lock, ms(150)).unwrap();
    let ticks = Arc::new(AtomicU32::new(0));
    let last = Arc::new(Mutex::new(None));
    let outcome = lock
        .with_lock_guarded("long", policy, |_| ticking_body(ticks.clone(), last.clone(), Duration::from_millis(600)))
        .await
        .unwrap();
    match outcome {
        GuardedOutcome::Completed { release, .. } => assert!(release.is_released(), "{release:?}"),
        other => panic!("expected Completed, got {other:?}"),
    }
}

#[tokio::test]
async fn refused_extension_cancels_the_body() {
    let s = server();
    let lock = Lock::new(connect(&s).await);
    let policy = KeepAlive::new(&lock, ms(300), Duration::from_millis(50)).unwrap();
    let key = lock.key("stolen").unwrap();
    let ticks = Arc::new(AtomicU32::new(0));
    let last = Arc::new(Mutex::new(None));
    let thief = async {
        sleep(Duration::from_millis(120)).await;
        s.command(&["DEL", &key]).unwrap(); // the lease vanishes under the holder
        Instant::now()
    };
    let guarded =
        lock.with_lock_guarded("stolen", policy, |_| ticking_body(ticks.clone(), last.clone(), Duration::from_secs(5)));
    let (deleted_at, outcome) = tokio::join!(thief, guarded);
    match outcome.unwrap() {
        GuardedOutcome::Cancelled { reason: LeaseLoss::Refused, at, .. } => {
            // The next extension after the DEL notices; it runs every 50 ms.
            let noticed = at.duration_since(deleted_at);
            println!("refused extension noticed {noticed:?} after the lease was deleted");
            assert!(noticed <= Duration::from_millis(50) + Duration::from_millis(200));
        }
        other => panic!("expected Cancelled(Refused), got {other:?}"),
    }
}

#[tokio::test]
async fn unconfirmed_extension_cancels_at_the_local_deadline_before_anyone_can_acquire() {
    let s = server();
    let holder = Lock::new(connect(&s).await);
    let rival = Lock::new(connect(&s).await);
    let ttl = ms(300);
    let policy = KeepAlive::new(&holder, ttl, Duration::from_millis(100)).unwrap();
    let ticks = Arc::new(AtomicU32::new(0));
    let last = Arc::new(Mutex::new(None));
    let acquired_at = Arc::new(Mutex::new(None));
    let freeze = async {
        // Freeze Redis just before the first extension: it is sent, never answered.
        sleep(Duration::from_millis(80)).await;
        s.freeze().unwrap();
        sleep(Duration::from_millis(700)).await;
        s.thaw().unwrap();
        // The rival tries as soon as Redis runs again, and keeps trying.
        loop {
            if let Some(lease) = rival.acquire("frozen", ms(5000)).await.unwrap() {
                *acquired_at.lock().unwrap() = Some(Instant::now());
                return lease;
            }
            sleep(Duration::from_millis(5)).await;
        }
    };
    let guarded = holder.with_lock_guarded("frozen", policy, |lease| {
        let sent = lease.sent_at();
        let deadline = lease.local_deadline();
        let body = ticking_body(ticks.clone(), last.clone(), Duration::from_secs(10));
        async move {
            let n = body.await;
            (n, sent, deadline)
        }
    });
    let (rival_lease, outcome) = tokio::join!(freeze, guarded);
    let GuardedOutcome::Cancelled { reason, at, token } = outcome.unwrap() else {
        panic!("expected the body to be cancelled");
    };
    assert!(matches!(reason, LeaseLoss::DeadlineReached), "{reason:?}");
    assert!(rival_lease.token() > token);
    let rival_at = acquired_at.lock().unwrap().unwrap();
    let last_tick = last.lock().unwrap().unwrap();
    assert!(last_tick <= at, "the body never ran after it was cancelled");
    assert!(at < rival_at, "cancelled before the rival acquired");
    println!(
        "body cancelled {:?} before the rival acquired (lease ttl {ttl}, Redis frozen 700 ms)",
        rival_at.duration_since(at)
    );
}

#[tokio::test]
async fn failed_extension_cancels_the_body_with_the_fault() {
    let mut s = server();
    let lock = Lock::new(connect(&s).await);
    let policy = KeepAlive::new(&lock, ms(1000), Duration::from_millis(50)).unwrap();
    let ticks = Arc::new(AtomicU32::new(0));
    let last = Arc::new(Mutex::new(None));
    let killer = async {
        sleep(Duration::from_millis(70)).await;
        s.stop();
    };
    let guarded =
        lock.with_lock_guarded("dies", policy, |_| ticking_body(ticks.clone(), last.clone(), Duration::from_secs(5)));
    let ((), outcome) = tokio::join!(killer, guarded);
    match outcome.unwrap() {
        GuardedOutcome::Cancelled { reason: LeaseLoss::Failed(e), .. } => {
            assert!(matches!(e, Error::ConnectionLost { .. }), "{e:?}");
        }
        other => panic!("expected Cancelled(Failed), got {other:?}"),
    }
}

#[tokio::test]
async fn not_acquired_runs_nothing() {
    let s = server();
    let lock = Lock::new(connect(&s).await);
    let _held = lock.acquire("busy", ms(5000)).await.unwrap().unwrap();
    let policy = KeepAlive::thirds(&lock, ms(300)).unwrap();
    let mut ran = false;
    let outcome = lock.with_lock_guarded("busy", policy, |_| async { ran = true }).await.unwrap();
    assert!(matches!(outcome, GuardedOutcome::NotAcquired));
    assert!(!ran);
}

/// Issue 13: `with_lock_guarded` awaited its final release without bound, so
/// a frozen server with no response timeout held the body's output (or,
/// after a cancellation, the caller) until the server woke up. The release
/// is now awaited for at most one extend interval.
#[tokio::test]
async fn completed_body_keeps_its_output_when_the_release_is_not_answered() {
    let s = server();
    let lock = Lock::new(support::connect_url(&s.url(), None).await); // no response timeout
    let policy = KeepAlive::new(&lock, ms(600), Duration::from_millis(100)).unwrap();
    let started = Instant::now();
    let outcome = lock
        .with_lock_guarded("paused", policy, |_| async {
            s.command(&["CLIENT", "PAUSE", "2000", "ALL"]).unwrap();
            "done"
        })
        .await
        .unwrap();
    let returned = started.elapsed();
    match outcome {
        GuardedOutcome::Completed { output, release: Release::Unknown(e), .. } => {
            assert_eq!(output, "done");
            assert!(e.outcome_is_unknown(), "{e:?}");
        }
        other => panic!("expected Completed with an unknown release, got {other:?}"),
    }
    println!("returned {returned:?} after the start, with the server paused for 2 s");
    assert!(returned < Duration::from_millis(600), "bounded by one interval, not the pause: {returned:?}");
}

#[tokio::test]
async fn cancelled_body_returns_within_one_interval_even_with_no_response_timeout() {
    let s = server();
    let lock = Lock::new(support::connect_url(&s.url(), None).await); // no response timeout
    let policy = KeepAlive::new(&lock, ms(600), Duration::from_millis(100)).unwrap();
    let pause = async {
        sleep(Duration::from_millis(50)).await;
        s.command(&["CLIENT", "PAUSE", "3000", "ALL"]).unwrap();
    };
    let started = Instant::now();
    let guarded = lock.with_lock_guarded("frozen", policy, |_| async {
        sleep(Duration::from_secs(60)).await;
    });
    let ((), outcome) = tokio::join!(pause, guarded);
    let returned = Instant::now();
    let GuardedOutcome::Cancelled { reason: LeaseLoss::DeadlineReached, at, .. } = outcome.unwrap() else {
        panic!("expected a cancellation at the deadline");
    };
    println!(
        "body dropped {:?} after the start, call returned {:?} later (server paused 3 s)",
        at - started,
        returned - at
    );
    assert!(returned - at <= Duration::from_millis(100) + Duration::from_millis(150), "{:?}", returned - at);
    assert!(returned - started < Duration::from_millis(1500));
}

/// A cancelled body is dropped (its destructors run) when it is cancelled,
/// before the best-effort release hands the name on: a body's `Drop` that
/// flushes or rolls back must not run after someone else may hold the lock.
/// The body's future used to live until `with_lock_guarded` returned, so its
/// destructors ran after the release (here: after the release waited out its
/// interval on a frozen server).
#[tokio::test]
async fn cancelled_body_is_dropped_before_the_release() {
    struct Marks(Arc<Mutex<Option<Instant>>>);
    impl Drop for Marks {
        fn drop(&mut self) {
            *self.0.lock().unwrap() = Some(Instant::now());
        }
    }
    let s = server();
    let lock = Lock::new(connect(&s).await);
    let policy = KeepAlive::new(&lock, ms(300), Duration::from_millis(100)).unwrap();
    let dropped_at = Arc::new(Mutex::new(None));
    let freeze = async {
        // Frozen before the first extension: it is sent, never answered,
        // and so is the release after the cancellation.
        sleep(Duration::from_millis(80)).await;
        s.freeze().unwrap();
        sleep(Duration::from_millis(700)).await;
        s.thaw().unwrap();
    };
    let marks = Marks(dropped_at.clone());
    let guarded = lock.with_lock_guarded("dropped", policy, |_| async move {
        let _marks = marks;
        sleep(Duration::from_secs(60)).await;
    });
    let ((), outcome) = tokio::join!(freeze, guarded);
    let GuardedOutcome::Cancelled { reason: LeaseLoss::DeadlineReached, at, .. } = outcome.unwrap() else {
        panic!("expected a cancellation at the deadline");
    };
    let dropped = dropped_at.lock().unwrap().expect("the body was dropped");
    println!("body dropped {:?} after the cancellation (release unanswered)", dropped.saturating_duration_since(at));
    // Dropped in the poll that cancelled it; the release after it waits a
    // whole interval (100 ms) on the frozen server first.
    assert!(dropped < at + Duration::from_millis(50), "dropped {:?} after `at`", dropped - at);
}
