//! The crash of `failover`, with the two opt-in mitigations: an
//! acknowledged lock hands out no token a failover can lose, and
//! time-floored tokens keep increasing across the failover.
//!
//! **How redis-rs routes `WAIT` on a cluster connection.** `WAIT` has no
//! key, and redis-rs's `cluster_routing.rs` lists it among the commands
//! sent to *every primary* (`RouteBy::AllPrimaries`), answering with the
//! *minimum* of their replies (`ResponsePolicy::Aggregate(Min)`). Sent
//! alone, that made a shard without its replica (cut, crashed, not yet
//! replaced) fail every acknowledged acquire, on every shard; and since the
//! fan-out skips a primary it has no connection to ("we ignore nodes that
//! are missing", says its `execute_on_multiple_nodes`), right after a
//! failover a slot map that still named the dead primary, and not yet the
//! promoted one, asked the healthy shards only, and an acquire nobody
//! confirmed counted as acknowledged (about 1 run in 10 on Redis 7). So the
//! library sends its `WAIT` in a pipeline behind `PTTL key`: redis-rs sends
//! a whole pipeline to the node of its first keyed command, the one that ran
//! the acquire, on the same multiplexed connection as the script, so the
//! `WAIT` counts the acquire and nothing else is asked.
//! `wait_goes_to_the_node_of_the_key` shows it.

use crate::failover::{crash_primary, cut, cycle, first_acquire, layout};
use crate::support::{self, connect, ms, name_where};

use core::time::Duration;
use std::time::Instant;

use redis_primitives::{Acknowledgement, Error, FencedStore, FencingToken, Lock, Tokens, WriteOutcome};
use redis_primitives_testkit::key_slot;

/// One replica, 200 ms: what the acknowledged tests ask for.
fn one_replica() -> Acknowledgement {
    Acknowledgement::new(1, Duration::from_millis(200)).expect("a valid acknowledgement")
}

#[test]
fn an_acknowledged_lock_refuses_while_the_replica_is_cut_and_hands_out_no_token_twice() {
    let mut cluster = support::cluster();
    let layout = layout(&cluster);
    let rt = support::runtime();
    let conn = rt.block_on(connect(&cluster));
    let lock = Lock::builder(conn.clone()).acknowledged(one_replica()).build().expect("a lock");
    let store = FencedStore::new(conn);
    let mut handed_out = vec![rt.block_on(cycle(&lock, &store, &layout))];
    // The acquire was confirmed; the release was not: without this barrier
    // the promoted replica may still hold the released lease (until its TTL).
    cluster.await_replicas_synced().expect("the release reached the replica");

    cut(&cluster, layout.replica);
    for consumed in 2..=4 {
        match rt.block_on(lock.acquire(&layout.lock, ms(5_000))) {
            Err(Error::NotAcknowledged { acknowledged: 0, required: 1, .. }) => {}
            other => panic!("an acquire the cut replica cannot confirm: {other:?}"),
        }
        // Not handed out, released at once; its token was consumed.
        assert_eq!(rt.block_on(lock.remaining_ttl(&layout.lock)).expect("PTTL"), None);
        assert_eq!(rt.block_on(lock.current_token(&layout.lock)).expect("GET"), Some(FencingToken::new(consumed)));
    }

    // The promoted replica has no replica of its own: it refuses too (the
    // WAIT goes to the key's node, never to the healthy shards instead).
    let killed_at = crash_primary(&mut cluster);
    let (answered_at, unconfirmed) = rt.block_on(async {
        let mut errors = std::collections::BTreeSet::new();
        loop {
            match lock.acquire(&layout.lock, ms(5_000)).await {
                Err(Error::NotAcknowledged { acknowledged: 0, .. }) => return (killed_at.elapsed(), None),
                Ok(Some(lease)) => return (killed_at.elapsed(), Some(lease)),
                Ok(None) => panic!("the promoted replica holds a lease nobody was given"),
                // Refused connections, CLUSTERDOWN: the failover is under way.
                Err(e) => {
                    errors.insert(e.to_string());
                }
            }
            assert!(killed_at.elapsed() < Duration::from_secs(20), "no failover 20 s after the crash: {errors:?}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    });
    let first_answer = match &unconfirmed {
        None => "refused (no replica to confirm)".to_string(),
        Some(lease) => {
            let info = cluster.node(layout.replica).info("replication").expect("INFO replication");
            panic!("token {} handed out, unconfirmed: the promoted node has no replica ({info})", lease.token());
        }
    };

    // Once the old primary is back, as the new one's replica, acquires count again.
    let restarted_at = Instant::now();
    cluster.restart_node(0).expect("the old primary rejoins");
    let rejoined = restarted_at.elapsed();
    let (lease, gap, _) = rt.block_on(first_acquire(&lock, &layout.lock, killed_at));
    println!(
        "acknowledged lock: the promoted replica's first answer {answered_at:?} after SIGKILL: {first_answer}; \
         the old primary took {rejoined:?} to rejoin as its replica; first acknowledged lease {gap:?} after SIGKILL"
    );
    handed_out.push(lease.token());
    assert!(handed_out.windows(2).all(|w| w[0] < w[1]), "no token handed out twice: {handed_out:?}");
    let written = rt.block_on(store.write(&layout.resource, "after the failover", lease.token())).expect("write");
    assert_eq!(written, WriteOutcome::Accepted, "the store has seen no higher token");
    assert!(rt.block_on(lock.release(&lease)).expect("release"));
}

#[test]
fn time_floored_tokens_keep_increasing_across_the_failover() {
    let mut cluster = support::cluster();
    let layout = layout(&cluster);
    let rt = support::runtime();
    let conn = rt.block_on(connect(&cluster));
    let lock = Lock::builder(conn.clone()).tokens(Tokens::TimeFloored).build().expect("a lock");
    let store = FencedStore::new(conn);

    let replicated = rt.block_on(cycle(&lock, &store, &layout));
    cluster.await_replicas_synced().expect("the first token reached the replica");
    cut(&cluster, layout.replica);
    let issued: Vec<FencingToken> = (0..3).map(|_| rt.block_on(cycle(&lock, &store, &layout))).collect();
    let highest = *issued.last().expect("three tokens");
    assert!(replicated < issued[0] && issued.windows(2).all(|w| w[0] < w[1]), "{replicated} {issued:?}");

    let killed_at = crash_primary(&mut cluster);
    let (lease, gap, errors) = rt.block_on(first_acquire(&lock, &layout.lock, killed_at));
    println!("failover gap (time-floored tokens): {gap:?}; errors on the way: {errors:?}");
    cluster.await_ok().expect("the surviving nodes agree on the new owner");
    let promoted = cluster.primary_for_slot(key_slot(layout.lock.as_bytes())).expect("an owner").index();
    assert_eq!(promoted, layout.replica, "the cut replica was promoted");

    // The promoted counter went back to `replicated`; the clock did not.
    assert!(lease.token() > highest, "token {} after the crash, {highest} before", lease.token());
    let written = rt.block_on(store.write(&layout.resource, "after the failover", lease.token())).expect("write");
    assert_eq!(written, WriteOutcome::Accepted);
    assert!(rt.block_on(lock.release(&lease)).expect("release"));
}

#[test]
fn wait_goes_to_the_node_of_the_key() {
    let cluster = support::cluster();
    // A lock on primary 0, whose replica is fine; the replica of primary 2 is cut.
    let name = name_where("healthy", |s| cluster.primary_for_slot(s).unwrap().index() == 0);
    let elsewhere = cluster.replicas_of(cluster.node(2)).expect("the shards")[0].index();
    let rt = support::runtime();
    let lock = Lock::builder(rt.block_on(connect(&cluster))).acknowledged(one_replica()).build().expect("a lock");
    let lease = rt.block_on(lock.acquire(&name, ms(5_000))).expect("confirmed").expect("free");
    assert!(rt.block_on(lock.release(&lease)).expect("release"));

    cut(&cluster, elsewhere);
    // Primary 0's replica confirms the acquire; primary 2's missing replica
    // is none of this lock's business (a bare WAIT, sent to every primary
    // with the minimum taken, answered 0 here).
    let lease = rt.block_on(lock.acquire(&name, ms(5_000))).expect("confirmed by primary 0's replica").expect("free");
    assert!(rt.block_on(lock.release(&lease)).expect("release"));
    let direct = cluster.node(0).info("replication").expect("INFO replication");
    assert!(direct.contains("connected_slaves:1"), "primary 0 still has its replica: {direct}");
    // And the shard whose replica is cut refuses its own acquires.
    let cut_name = name_where("cut", |s| cluster.primary_for_slot(s).unwrap().index() == 2);
    match rt.block_on(lock.acquire(&cut_name, ms(5_000))) {
        Err(Error::NotAcknowledged { acknowledged: 0, required: 1, .. }) => {}
        other => panic!("an acquire on the shard whose replica is cut: {other:?}"),
    }
}
