//! Replication inside the simulation: real replicas, a barrier that makes
//! replication instant while the link is up, `cut-replication` /
//! `restore-replication`, and `failover` / `promote`.
//!
//! Every assertion is about what the *real* servers hold at a simulated
//! instant, which the seed decides: the bridge waits for the replicas'
//! acknowledgement after every command while the link is up.

use core::time::Duration;
use redis::AsyncCommands;
use redis_primitives_sim::{Fault, FaultKind, Schedule, Servers, Target, World, WorldConfig};

use crate::support::{sleep_until_ms, Log};

fn config(seed: u64) -> WorldConfig {
    WorldConfig::new(seed).latency(Duration::from_millis(2), Duration::from_millis(2)).replicas(0, 1)
}

/// INCRs before, during and after a cut, a failover while cut, then what
/// the promoted server holds; returns the log and the run's digest.
fn failover_while_cut(servers: &mut Servers, seed: u64) -> (Vec<String>, String) {
    let seen: Log = Log::default();
    let mut world = World::new(servers, config(seed)).unwrap();
    world.nemesis(Schedule::of([
        Fault { at: 200, duration: 1000, kind: FaultKind::CutReplication, target: Target::Node(0) },
        Fault { at: 400, duration: 100, kind: FaultKind::Failover, target: Target::Node(0) },
    ]));
    let l = seen.clone();
    world.actor("client-0", move |actor| async move {
        let mut conn = actor.connection(0);
        for _ in 0..3 {
            let _: i64 = conn.incr("n", 1).await?;
        }
        let acked: i64 = redis::cmd("WAIT").arg(1).arg(50).query_async(&mut conn).await?;
        let sent = actor.now();
        l.lock().unwrap().push(format!("linked: WAIT answered {acked} at once: {}", actor.now() == sent));
        sleep_until_ms(&actor, 250).await;
        for _ in 0..4 {
            let _: i64 = conn.incr("n", 1).await?;
        }
        let before = actor.now();
        let acked: i64 = redis::cmd("WAIT").arg(1).arg(50).query_async(&mut conn).await?;
        let waited = actor.now() - before;
        l.lock().unwrap().push(format!("cut: WAIT answered {acked} after >= 50 ms: {}", waited >= 50));
        sleep_until_ms(&actor, 450).await;
        let down: redis::RedisResult<i64> = conn.get("n").await;
        l.lock().unwrap().push(format!("primary down: error={}", down.is_err()));
        sleep_until_ms(&actor, 600).await;
        let mut fresh = actor.connection(0);
        let n: i64 = fresh.get("n").await?;
        l.lock().unwrap().push(format!("promoted replica holds n={n}"));
        let next: i64 = fresh.incr("n", 1).await?;
        l.lock().unwrap().push(format!("and counts on from it: {next}"));
        sleep_until_ms(&actor, 1300).await;
        let _: i64 = fresh.incr("n", 1).await?;
        let acked: i64 = redis::cmd("WAIT").arg(1).arg(50).query_async(&mut fresh).await?;
        l.lock().unwrap().push(format!("the old primary rejoined as its replica: WAIT answered {acked}"));
        Ok(())
    });
    let outcome = world.run();
    let log = seen.lock().unwrap().clone();
    let outcome = outcome.unwrap_or_else(|e| panic!("{e}; the client saw {log:?}"));
    (log, outcome.history.digest().to_string())
}

#[test]
fn a_failover_while_replication_is_cut_loses_exactly_the_writes_made_during_the_cut() {
    let mut servers = Servers::new();
    let (log, digest) = failover_while_cut(&mut servers, 7);
    assert_eq!(
        log,
        [
            "linked: WAIT answered 1 at once: true",
            "cut: WAIT answered 0 after >= 50 ms: true",
            "primary down: error=true",
            "promoted replica holds n=3",
            "and counts on from it: 4",
            "the old primary rejoined as its replica: WAIT answered 1",
        ]
    );
    // The pool is reused: the next run starts from a clean, linked node, and
    // the same seed gives the same history.
    let (again, digest_again) = failover_while_cut(&mut servers, 7);
    assert_eq!(again, log);
    assert_eq!(digest_again, digest, "same seed, same digest, across a failover");
}

#[test]
fn a_failover_on_a_node_without_replicas_is_refused_before_the_run() {
    let mut servers = Servers::new();
    let mut world = World::new(&mut servers, WorldConfig::new(1)).unwrap();
    world.nemesis(Schedule::of([Fault { at: 10, duration: 10, kind: FaultKind::Failover, target: Target::Node(0) }]));
    world.actor("client-0", |_| async { Ok(()) });
    let err = world.run().unwrap_err().to_string();
    assert!(err.contains("has no replicas"), "{err}");
}
