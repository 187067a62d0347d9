//! A slot moves to another primary while clients use it: `MOVED` (and the
//! `ASK` and `TRYAGAIN` of the migration's middle) are survived.
//!
//! While one task loops acquire → release on a lock and another loops a
//! sliding-window log on a name with the same hash tag, the test thread
//! moves that slot from primary 0 to primary 1 in the resharding's three
//! steps, pausing between them so that both loops run in every state:
//!
//! 1. `SETSLOT IMPORTING` on the target, `SETSLOT MIGRATING` on the source;
//!    the keys are still on the source. A lock that is free has its counter
//!    but not its lease key there, so the acquire script (two keys, one
//!    missing) is answered `TRYAGAIN` until the migration ends; the
//!    limiter's one key is present and served;
//! 2. `MIGRATE` has moved every key to the target, the slot still belongs
//!    to the source: `ASK` to the target for every key (`TRYAGAIN` again
//!    for the acquire's missing key);
//! 3. `SETSLOT NODE` on every primary: `MOVED` from the source; the client
//!    refreshes its slot map.
//!
//! redis-rs retries all three (`ASK` with `ASKING` at once, `MOVED` after
//! refreshing, `TRYAGAIN` after a short wait) within one request, so the
//! loops must see no error at all, tokens must keep increasing one by one
//! (the counter moved with its slot, intact), and the source must have
//! answered `MOVED` (its `INFO errorstats` counts what it answered).

use crate::support::{self, connect, ms, name_where};

use core::time::Duration;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use redis_primitives::rate_limit::{Limit, SlidingWindowLog};
use redis_primitives::Lock;
use redis_primitives_testkit::{info_field, key_slot, Reply};

/// What the loops record, per migration phase (0 before, 1 migrating,
/// 2 keys moved, 3 after).
#[derive(Default)]
struct Progress {
    phase: AtomicUsize,
    stop: AtomicBool,
    acquires: [AtomicUsize; 4],
    checks: [AtomicUsize; 4],
    errors: std::sync::Mutex<Vec<String>>,
}

impl Progress {
    fn total_acquires(&self) -> usize {
        self.acquires.iter().map(|n| n.load(Ordering::SeqCst)).sum()
    }
}

#[test]
fn moved_during_a_slot_migration_is_survived() {
    let cluster = support::cluster();
    let name = name_where("orders", |s| cluster.primary_for_slot(s).unwrap().index() == 0);
    let slot = key_slot(name.as_bytes());
    let (source, target) = (cluster.node(0), cluster.node(1));
    let rt = support::runtime();
    let progress = Arc::new(Progress::default());

    let (locker, limiter) = rt.block_on(async {
        let conn = connect(&cluster).await;
        let lock = Lock::new(conn.clone());
        // A limit the loop never reaches: every check is a write.
        let log = SlidingWindowLog::new(conn, Limit::new(1_000_000, Duration::from_secs(60)).unwrap());
        let p = Arc::clone(&progress);
        let n = name.clone();
        let locker = tokio::spawn(async move {
            let mut tokens = Vec::new();
            while !p.stop.load(Ordering::SeqCst) {
                let phase = p.phase.load(Ordering::SeqCst);
                match lock.acquire(&n, ms(2_000)).await {
                    Ok(Some(lease)) => {
                        tokens.push(lease.token().get());
                        match lock.release(&lease).await {
                            Ok(true) => {
                                p.acquires[phase].fetch_add(1, Ordering::SeqCst);
                            }
                            Ok(false) => {
                                p.errors.lock().unwrap().push(format!("release of {} found nothing", lease.token()))
                            }
                            Err(e) => p.errors.lock().unwrap().push(format!("release (phase {phase}): {e}")),
                        }
                    }
                    Ok(None) => p.errors.lock().unwrap().push(format!("phase {phase}: the free lock was held")),
                    Err(e) => p.errors.lock().unwrap().push(format!("acquire (phase {phase}): {e}")),
                }
            }
            (tokens, lock.current_token(&n).await)
        });
        let p = Arc::clone(&progress);
        let n = name.clone();
        let limiter = tokio::spawn(async move {
            while !p.stop.load(Ordering::SeqCst) {
                let phase = p.phase.load(Ordering::SeqCst);
                match log.check(&n).await {
                    Ok(d) if d.is_allowed() => {
                        p.checks[phase].fetch_add(1, Ordering::SeqCst);
                    }
                    Ok(d) => p.errors.lock().unwrap().push(format!("limiter (phase {phase}): {d:?}")),
                    Err(e) => p.errors.lock().unwrap().push(format!("limiter (phase {phase}): {e}")),
                }
            }
        });
        (locker, limiter)
    });

    // The test thread drives the migration while the loops run on the runtime.
    let wait_for = |what: &str, done: &dyn Fn() -> bool| {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !done() {
            assert!(std::time::Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    wait_for("the loops to start", &|| {
        progress.total_acquires() >= 20 && progress.checks[0].load(Ordering::SeqCst) >= 20
    });
    let pause = Duration::from_millis(150);

    let migration = cluster.begin_migration(slot, target).expect("begin the migration");
    progress.phase.store(1, Ordering::SeqCst);
    std::thread::sleep(pause);
    let moved = migration.move_keys().expect("move the keys");
    progress.phase.store(2, Ordering::SeqCst);
    std::thread::sleep(pause);
    migration.finish().expect("hand the slot over");
    progress.phase.store(3, Ordering::SeqCst);
    let after = progress.total_acquires();
    wait_for("acquires after the migration", &|| progress.total_acquires() >= after + 20);
    progress.stop.store(true, Ordering::SeqCst);

    let ((tokens, current), ()) =
        rt.block_on(async { (locker.await.expect("locker"), limiter.await.expect("limiter")) });
    let errors = progress.errors.lock().unwrap().clone();
    let per_phase = |c: &[AtomicUsize; 4]| c.iter().map(|n| n.load(Ordering::SeqCst)).collect::<Vec<_>>();
    let answered = |node: &redis_primitives_testkit::ClusterNode, code: &str| {
        let stats = node.info("errorstats").expect("INFO errorstats");
        info_field(&stats, &format!("errorstat_{code}"))
            .and_then(|v| v.strip_prefix("count="))
            .map_or(0, |n| n.parse::<u64>().unwrap_or(0))
    };
    println!(
        "slot {slot} migrated with {moved} key(s); acquire+release per phase {:?}, limiter checks per phase {:?}; \
         the source answered MOVED {}, ASK {}, TRYAGAIN {} time(s), the target TRYAGAIN {}",
        per_phase(&progress.acquires),
        per_phase(&progress.checks),
        answered(source, "MOVED"),
        answered(source, "ASK"),
        answered(source, "TRYAGAIN"),
        answered(target, "TRYAGAIN"),
    );

    assert!(errors.is_empty(), "the loops saw errors: {errors:?}");
    assert!(moved >= 2, "the counter and the log moved (the lease key too if it was held): {moved}");
    assert!(answered(source, "MOVED") > 0, "the client met MOVED and went on");
    for phase in [1, 2] {
        assert!(progress.checks[phase].load(Ordering::SeqCst) > 0, "the limiter was served in phase {phase}");
    }
    assert_eq!(tokens, (1..=tokens.len() as u64).collect::<Vec<_>>(), "one token per acquire, none reissued");
    assert_eq!(current.expect("current_token").map(|t| t.get()), tokens.last().copied());
    assert_eq!(cluster.primary_for_slot(slot).unwrap().index(), 1);
    let fence = format!("lock:{{{name}}}:fence");
    assert_eq!(target.call(&["EXISTS", &fence]).unwrap(), Reply::Integer(1), "the counter lives on the target");
}
