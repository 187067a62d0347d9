//! Mutual exclusion: contending clients never both hold a valid majority.

use super::*;

// ------------------------------------------------------ mutual exclusion

#[derive(Debug, Clone, Copy)]
struct Interval {
    start: Instant,
    end: Instant,
}

#[derive(Debug, Default)]
struct ClientLog {
    intervals: Vec<Interval>,
    refusals: usize,
    let_expire: usize,
    snapshots_checked: usize,
}

/// Acquires in a loop until `until`; while holding, reads the key on every
/// master and checks that its own value is on a majority.
async fn contend(
    redlock: Redlock<MultiplexedConnection>,
    mut readers: Vec<MultiplexedConnection>,
    seed: u64,
    until: Instant,
) -> ClientLog {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut log = ClientLog::default();
    while Instant::now() < until {
        match redlock.acquire(NAME).await.unwrap() {
            Acquisition::Held(lease) => {
                let mut own = 0;
                for conn in readers.iter_mut() {
                    let value: Option<String> = redis::cmd("GET").arg(KEY).query_async(conn).await.unwrap();
                    own += usize::from(value.as_deref() == Some(lease.owner().as_str()));
                }
                if Instant::now() < lease.valid_until() {
                    assert!(own >= redlock.quorum(), "a valid lease must have its value on a majority; found {own}");
                    log.snapshots_checked += 1;
                }
                tokio::time::sleep(Duration::from_millis(rng.random_range(0..25))).await;
                if rng.random_range(0..5) == 0 {
                    // Walk away: the lease ends by expiry, not by release.
                    log.let_expire += 1;
                    log.intervals.push(Interval { start: lease.acquired_at(), end: lease.valid_until() });
                } else {
                    let end = Instant::now().min(lease.valid_until());
                    log.intervals.push(Interval { start: lease.acquired_at(), end });
                    redlock.release(&lease).await;
                }
            }
            Acquisition::Refused(_) => log.refusals += 1,
        }
        tokio::time::sleep(Duration::from_millis(rng.random_range(0..10))).await;
    }
    log
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_contending_clients_never_both_hold_a_valid_majority() {
    let servers = servers(5);
    let a = connect_redlock(&servers, config(300)).await;
    let b = connect_redlock(&servers, config(300)).await;
    let (a_readers, b_readers) = (connect_all(&servers).await, connect_all(&servers).await);
    let until = Instant::now() + Duration::from_secs(3);
    let ta = tokio::spawn(contend(a, a_readers, 1, until));
    let tb = tokio::spawn(contend(b, b_readers, 2, until));
    let (la, lb) = (ta.await.unwrap(), tb.await.unwrap());

    for x in &la.intervals {
        for y in &lb.intervals {
            assert!(
                x.end <= y.start || y.end <= x.start,
                "overlapping validity: A {:?}..{:?}, B {:?}..{:?}",
                x.start,
                x.end,
                y.start,
                y.end
            );
        }
    }
    println!(
        "contention 3 s: A held {} times ({} let expire, {} refused), B held {} times ({} let expire, {} refused); {} key snapshots checked; no overlap",
        la.intervals.len(),
        la.let_expire,
        la.refusals,
        lb.intervals.len(),
        lb.let_expire,
        lb.refusals,
        la.snapshots_checked + lb.snapshots_checked,
    );
    assert!(!la.intervals.is_empty() && !lb.intervals.is_empty(), "both clients should win sometimes");
    assert!(la.refusals + lb.refusals > 0, "the clients should actually have contended");
}
