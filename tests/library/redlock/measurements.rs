//! Latency measured on five masters, and the delay proxy the other tests rely on.

use super::*;

// -------------------------------------------------------- measurements

#[tokio::test]
async fn acquire_and_release_latency_on_five_masters() {
    let servers = servers(5);
    // Throughput, not fault handling: a per-master timeout long enough that a
    // saturated machine never turns a slow reply into a miss.
    let redlock = connect_redlock(&servers, defaults(10_000).master_timeout(Duration::from_secs(2))).await;
    let mut acquire = Vec::new();
    let mut pair = Vec::new();
    for _ in 0..300 {
        let t = Instant::now();
        let lease = held(redlock.acquire(NAME).await.unwrap());
        acquire.push(lease.acquired_at() - lease.started_at());
        assert_eq!(redlock.release(&lease).await.deleted, 5);
        pair.push(t.elapsed());
    }
    acquire.sort();
    pair.sort();
    let pct = |v: &[Duration], p: usize| fmt_ms(v[(v.len() - 1) * p / 100]);
    println!(
        "5 masters, sequential: acquire p50 {} p99 {} max {}; acquire+release p50 {} p99 {}",
        pct(&acquire, 50),
        pct(&acquire, 99),
        pct(&acquire, 100),
        pct(&pair, 50),
        pct(&pair, 99)
    );

    // 50 in flight on distinct names over the same five connections (one
    // multiplexed connection per master), for one second.
    let until = Instant::now() + Duration::from_secs(1);
    let mut workers = Vec::new();
    for i in 0..50 {
        let redlock = redlock.clone();
        workers.push(tokio::spawn(async move {
            let name = format!("bench-{i}");
            let mut pairs = 0u64;
            while Instant::now() < until {
                let lease = held(redlock.acquire(&name).await.unwrap());
                assert_eq!(redlock.release(&lease).await.deleted, 5);
                pairs += 1;
            }
            pairs
        }));
    }
    let mut total = 0;
    for w in workers {
        total += w.await.unwrap();
    }
    println!(
        "5 masters, 50 in flight (debug build, client and 5 servers sharing the machine): {total} acquire+release pairs in 1 s"
    );
    assert!(total > 0);
}

// ------------------------------------------------------ the delay proxy

#[tokio::test]
async fn delay_proxy_adds_latency_and_stop_closes_everything() {
    let servers = servers(1);
    let mut proxy = DelayProxy::start(servers[0].addr()).unwrap();
    let mut conn = connect_url(&proxy.url()).await;
    let _: String = redis::cmd("PING").query_async(&mut conn).await.unwrap();

    proxy.set_delay(Duration::from_millis(60), Duration::from_millis(90));
    let t = Instant::now();
    let _: String = redis::cmd("PING").query_async(&mut conn).await.unwrap();
    let rtt = t.elapsed();
    assert!(rtt >= Duration::from_millis(150), "round trip {rtt:?}");
    println!("delay proxy: 60 + 90 ms configured, PING round trip {}", fmt_ms(rtt));

    // stop() joins every thread before returning; the open connection is cut
    // and nothing listens any more.
    // Whether the proxy still listens is read from this process's open
    // sockets, not by connecting to its port: another test's server may
    // bind that port the moment it is free (a full suite under load did).
    assert!(proxy.is_listening());
    proxy.stop();
    assert!(proxy.is_stopped());
    assert!(!proxy.is_listening(), "the listening socket is closed");
    // The cut connection must end the request with an error, not leave it
    // waiting; the minute only turns a hang into a failure.
    let after =
        tokio::time::timeout(Duration::from_secs(60), redis::cmd("PING").query_async::<String>(&mut conn)).await;
    assert!(matches!(after, Ok(Err(_))), "{after:?}");
    proxy.stop(); // idempotent
}

/// A connection that answers `INFO` the way a redis-rs cluster connection
/// does. The cluster client (`cluster-async`) routes `INFO` to every primary
/// and, having no way to merge the replies (its "special" response policy),
/// returns `Value::Map` of `node address → that node's reply`
/// (redis-rs 1.8, `cluster_handling/async_connection/mod.rs`). Every reply
/// in the map comes from a real redis-server; everything other than `INFO`
/// goes to the first node. This reproduces the reply shape without the
/// cluster feature, which the workspace does not build.
#[derive(Clone)]
struct InfoFanOut {
    nodes: Vec<(String, MultiplexedConnection)>,
}

impl redis::aio::ConnectionLike for InfoFanOut {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a redis::Cmd) -> redis::RedisFuture<'a, redis::Value> {
        Box::pin(async move {
            if !support::is_command(cmd, "INFO") {
                return self.nodes[0].1.req_packed_command(cmd).await;
            }
            let mut replies = Vec::new();
            for (addr, conn) in &mut self.nodes {
                let reply = conn.req_packed_command(cmd).await?;
                replies.push((redis::Value::BulkString(addr.clone().into_bytes()), reply));
            }
            Ok(redis::Value::Map(replies))
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a redis::Pipeline,
        offset: usize,
        count: usize,
    ) -> redis::RedisFuture<'a, Vec<redis::Value>> {
        self.nodes[0].1.req_packed_commands(pipeline, offset, count)
    }

    fn get_db(&self) -> i64 {
        0
    }
}

async fn fan_out(servers: &[&RedisServer]) -> InfoFanOut {
    let mut nodes = Vec::new();
    for s in servers {
        nodes.push((s.addr().to_string(), connect_url(&s.url()).await));
    }
    InfoFanOut { nodes }
}

/// Issue 13: a cluster connection's `INFO server` reply is a map, which
/// was read as a `String`, failed, and left `run_id` as `None`: the same
/// cluster given twice was not detected. Every `run_id` in the reply is read
/// now, and masters that share a server are refused.
#[tokio::test]
async fn a_cluster_shaped_info_reply_is_read_and_a_shared_server_is_refused() {
    let servers = servers(4);
    let cluster = [&servers[0], &servers[1], &servers[2]];
    let single = fan_out(&[&servers[3]]).await;

    // Two connections to the same "cluster" (nodes listed in another order).
    let twice = vec![fan_out(&cluster).await, fan_out(&[&servers[2], &servers[0], &servers[1]]).await, single.clone()];
    let (what, why) = invalid_what(Redlock::connect(twice, defaults(1000)).await);
    assert_eq!(what, "redlock masters");
    assert!(why.contains("masters 0 and 1"), "{why}");

    // A plain master that is one of the cluster's nodes is refused too.
    let overlap = vec![fan_out(&cluster).await, fan_out(&[&servers[1]]).await];
    let (_, why) = invalid_what(Redlock::connect(overlap, defaults(1000)).await);
    assert!(why.contains("masters 0 and 1"), "{why}");

    // Independent masters are accepted; the cluster's identity lists all three ids.
    let ok = Redlock::connect(vec![fan_out(&cluster).await, single], defaults(1000)).await.unwrap();
    assert!(ok.unverified_masters().is_empty());
    let ids = ok.run_ids()[0].as_deref().expect("verified");
    assert_eq!(ids.split(',').count(), 3, "{ids}");
    assert!(ids.split(',').all(|id| id.len() == 40), "{ids}");
    let lease = ok.acquire(NAME).await.unwrap().into_lease().expect("free");
    assert_eq!(ok.release(&lease).await.deleted, 2);
}

/// `calls` of `command` in `server`'s `INFO commandstats` (0 when never run).
fn calls(server: &RedisServer, command: &str) -> u64 {
    let stats = server.command(&["INFO", "commandstats"]).expect("INFO commandstats");
    let prefix = format!("cmdstat_{command}:calls=");
    stats
        .lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |n| n.parse().expect("a count"))
}

#[tokio::test]
async fn redlock_uses_each_masters_native_commands() {
    use redis_primitives::{CompareCommands, Lock};
    // Two Valkey 9 masters and one of $REDIS_SERVER (Redis 7 here; Valkey
    // too in .ci/run's second leg): what each gets is that master's own.
    let masters = [
        RedisServer::start_valkey().unwrap_or_else(|e| panic!("{e}")),
        RedisServer::start_valkey().unwrap_or_else(|e| panic!("{e}")),
        support::server(),
    ];
    let conns = connect_all(&masters).await;
    // The server's own answer (`COMMAND INFO`, as the single-instance lock
    // asks) is the oracle for what Redlock read from `INFO server`.
    let mut want = Vec::new();
    for c in &conns {
        want.push(Lock::new(c.clone()).compare_commands().await);
    }
    assert_eq!(want[0], CompareCommands::DelIfEq, "the Valkey under test has DELIFEQ");
    let redlock = Redlock::connect(conns.clone(), config(10_000)).await.unwrap();
    assert_eq!(redlock.compare_commands().await, want);
    let scripts = Redlock::connect(conns, config(10_000).native_commands(false)).await.unwrap();
    assert_eq!(scripts.compare_commands().await, vec![CompareCommands::Scripts; 3]);

    for (redlock, native) in [(&redlock, true), (&scripts, false)] {
        for m in &masters {
            m.command(&["CONFIG", "RESETSTAT"]).unwrap();
        }
        let mut lease = held(redlock.acquire(NAME).await.unwrap());
        assert!(matches!(redlock.extend(&mut lease).await, Extension::Extended { .. }));
        assert!(masters.iter().all(|m| pttl(m, KEY) > 9000), "every key re-armed");
        assert_eq!(redlock.release(&lease).await.deleted, 3);
        assert!(masters.iter().all(|m| !exists(m, KEY)), "every key deleted");
        for (m, want) in masters.iter().zip(&want) {
            let used = if native { *want } else { CompareCommands::Scripts };
            let (delifeq, delex, eval) = (calls(m, "delifeq"), calls(m, "delex"), calls(m, "eval"));
            match used {
                CompareCommands::DelIfEq => assert_eq!((delifeq, delex, eval), (1, 0, 0)),
                CompareCommands::DelEx => assert_eq!((delifeq, delex, eval), (0, 1, 0)),
                // The compare-and-pexpire and the compare-and-delete.
                _ => assert_eq!((delifeq, delex, eval), (0, 0, 2)),
            }
            // SET NX for the acquire, and SET … IFEQ for the extend natively.
            assert_eq!(calls(m, "set"), if used == CompareCommands::Scripts { 1 } else { 2 });
        }
    }
}
