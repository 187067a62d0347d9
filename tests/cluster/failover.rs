//! A primary crashes and its replica, which had missed the last acquires,
//! is promoted: the counter goes back and tokens already handed out are
//! handed out again. The fencing token check is what catches it.
//!
//! The lock's name hashes to primary 0; the fenced resource's to primary 1,
//! which does not fail. Replication from primary 0 to its replica is cut
//! (the replica keeps its role and data, and may still be promoted: the
//! testkit sets `cluster-replica-validity-factor 0`), a few acquires each
//! write the resource with their token, primary 0 is killed (SIGKILL), and
//! the client retries until an acquire succeeds on the promoted replica.
//! The time from the kill to that first success is the failover gap, printed
//! by every test here (`--nocapture` shows it; a failing test prints it
//! anyway).

use crate::support::{self, connect, ms, name_where};

use core::time::Duration;
use std::collections::BTreeSet;
use std::time::Instant;

use redis::cluster_async::ClusterConnection;
use redis_primitives::{FencedStore, FencingToken, Lease, Lock, WriteOutcome};
use redis_primitives_testkit::{info_field, key_slot, RedisCluster};

/// The names of a crash test: a lock on primary 0, a resource on primary 1.
pub struct Layout {
    pub lock: String,
    pub resource: String,
    /// The index of primary 0's replica.
    pub replica: usize,
}

pub fn layout(cluster: &RedisCluster) -> Layout {
    let on = |i: usize| move |slot: u16| cluster.primary_for_slot(slot).unwrap().index() == i;
    let replicas = cluster.replicas_of(cluster.node(0)).expect("the shards");
    Layout { lock: name_where("payments", on(0)), resource: name_where("balance", on(1)), replica: replicas[0].index() }
}

/// Cuts the replica of primary 0 and checks that it is cut.
pub fn cut(cluster: &RedisCluster, replica: usize) {
    let node = cluster.node(replica);
    node.server().cut_replication().expect("cut the replica");
    let info = node.info("replication").expect("INFO replication");
    assert_eq!(info_field(&info, "master_link_status"), Some("down"), "the replica is cut: {info}");
}

/// Acquire, write the resource with the token (it must be accepted), release.
pub async fn cycle<C: redis_primitives::Connection>(
    lock: &Lock<C>,
    store: &FencedStore<C>,
    layout: &Layout,
) -> FencingToken {
    let lease = lock.acquire(&layout.lock, ms(5_000)).await.expect("acquire").expect("the lock is free");
    let token = lease.token();
    let written = store.write(&layout.resource, format!("written with {token}"), token).await.expect("write");
    assert_eq!(written, WriteOutcome::Accepted, "token {token} is the highest so far");
    assert!(lock.release(&lease).await.expect("release"));
    token
}

/// Kills primary 0 (SIGKILL) and returns the moment it was killed.
pub fn crash_primary(cluster: &mut RedisCluster) -> Instant {
    let killed_at = Instant::now();
    cluster.node_mut(0).stop();
    killed_at
}

/// Retries `lock.acquire` every 10 ms until it hands out a lease (at most
/// 20 s); returns it, the time since `killed_at`, and the distinct errors
/// met on the way.
pub async fn first_acquire<C: redis_primitives::Connection>(
    lock: &Lock<C>,
    name: &str,
    killed_at: Instant,
) -> (Lease, Duration, BTreeSet<String>) {
    let mut errors = BTreeSet::new();
    loop {
        match lock.acquire(name, ms(5_000)).await {
            Ok(Some(lease)) => return (lease, killed_at.elapsed(), errors),
            Ok(None) => {
                errors.insert("held (a lease the promoted replica still had)".to_string());
            }
            Err(e) => {
                errors.insert(short(&e.to_string()));
            }
        }
        assert!(killed_at.elapsed() < Duration::from_secs(20), "no acquire succeeded 20 s after the crash: {errors:?}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// An error message without its addresses and counts, so repeats fold.
fn short(message: &str) -> String {
    message.split(['(', ':']).take(2).collect::<Vec<_>>().join(":").trim().to_string()
}

#[test]
fn a_crashed_primary_reissues_tokens_and_the_fenced_store_refuses_them() {
    let mut cluster = support::cluster();
    let layout = layout(&cluster);
    let rt = support::runtime();
    let conn: ClusterConnection = rt.block_on(connect(&cluster));
    let (lock, store) = (Lock::new(conn.clone()), FencedStore::new(conn));

    let replicated = rt.block_on(cycle(&lock, &store, &layout));
    cluster.await_replicas_synced().expect("the first token reached the replica");
    cut(&cluster, layout.replica);
    let issued: Vec<FencingToken> = (0..3).map(|_| rt.block_on(cycle(&lock, &store, &layout))).collect();
    let highest = *issued.last().expect("three tokens");
    assert_eq!(issued.iter().map(|t| t.get()).collect::<Vec<_>>(), [2, 3, 4]);

    let killed_at = crash_primary(&mut cluster);
    let (lease, gap, errors) = rt.block_on(first_acquire(&lock, &layout.lock, killed_at));
    println!(
        "failover gap (counter tokens): {gap:?} from SIGKILL to the first successful acquire; \
         errors on the way: {errors:?}"
    );
    // The client may hear of the promotion before every node has.
    cluster.await_ok().expect("the surviving nodes agree on the new owner");
    let promoted = cluster.primary_for_slot(key_slot(layout.lock.as_bytes())).expect("an owner").index();
    assert_eq!(promoted, layout.replica, "the cut replica was promoted");

    // The promoted replica's counter stopped at the replicated token.
    assert!(lease.token() <= highest, "token {} after the crash, {highest} before", lease.token());
    assert_eq!(lease.token().get(), replicated.get() + 1, "the token after the last replicated one, again");
    assert!(issued.contains(&lease.token()), "a token already handed out");
    // The token check catches it: the resource, on a primary that did not
    // fail, has seen a higher token.
    let late = rt.block_on(store.write(&layout.resource, "after the failover", lease.token())).expect("write");
    assert_eq!(late, WriteOutcome::Rejected { rejected_token: lease.token(), highest_seen: highest });
    assert_eq!(rt.block_on(lock.current_token(&layout.lock)).expect("current_token"), Some(lease.token()));
    assert!(rt.block_on(lock.release(&lease)).expect("release"));
}
