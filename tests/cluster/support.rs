//! Set-up shared by the cluster tests: a real cluster per test, a tokio
//! runtime beside it, and redis-rs's async cluster connection.
//!
//! A test is a plain `#[test]`: its own thread starts the cluster (the
//! testkit's servers die with the thread that started them) and keeps the
//! blocking testkit calls (a migration step, a crash) off the runtime, whose
//! two worker threads run the clients meanwhile.

use core::time::Duration;
use std::future::Future;

use redis::cluster::ClusterClient;
use redis::cluster_async::ClusterConnection;
use redis_primitives_testkit::{key_slot, RedisCluster};

/// Starts 3 primaries × 1 replica (`$REDIS_SERVER`, or redis-server), or
/// fails the test with the reason (install instructions if it is missing).
pub fn cluster() -> RedisCluster {
    match RedisCluster::start() {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    }
}

/// A multi-threaded runtime: clients run on its workers while the test's
/// thread drives the cluster.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("a tokio runtime")
}

/// Runs `f` on a fresh runtime (for the tests that need no blocking call
/// while their clients run).
pub fn block_on<F: Future>(f: F) -> F::Output {
    runtime().block_on(f)
}

/// An async cluster connection seeded with every running node.
///
/// Each attempt times out after 1 s (a request to a crashed node must end,
/// not hang). redis-rs retries a request itself on `MOVED`, `ASK`,
/// `TRYAGAIN`, `CLUSTERDOWN` and lost connections: here up to 32 times,
/// 5–100 ms apart (its default waits at least 1.28 s), within 5 s in all
/// (its default overall limit is the response timeout, which a migration's
/// `TRYAGAIN` spell could outlast). So a request that meets a migration or
/// a failover waits a few hundred milliseconds instead of failing, and the
/// measured failover gap is late by at most one retry wait (100 ms).
pub async fn connect(cluster: &RedisCluster) -> ClusterConnection {
    ClusterClient::builder(cluster.urls())
        .connection_timeout(Duration::from_millis(250))
        .response_timeout(Duration::from_secs(1))
        .overall_response_timeout(Some(Duration::from_secs(5)))
        .retries(32)
        .min_retry_wait(5)
        .max_retry_wait(100)
        .build()
        .expect("a valid cluster client")
        .get_async_connection()
        .await
        .expect("connect to the test cluster")
}

/// Shorthand for a millisecond TTL known to be valid.
pub fn ms(n: u64) -> redis_primitives::Ttl {
    redis_primitives::Ttl::from_millis(n).expect("valid ttl")
}

/// `prefix-0`, `prefix-1`, ...: the first name whose `{name}` hash tag falls
/// on a slot `wanted` accepts.
pub fn name_where(prefix: &str, mut wanted: impl FnMut(u16) -> bool) -> String {
    (0u32..).map(|i| format!("{prefix}-{i}")).find(|n| wanted(key_slot(n.as_bytes()))).expect("some name fits")
}

/// The index of the primary that owns `name`'s hash tag now.
pub fn owner_of(cluster: &RedisCluster, name: &str) -> usize {
    cluster.primary_for_slot(key_slot(name.as_bytes())).expect("the slot has an owner").index()
}
