//! "Never opens a socket or spawns a task" (`src/lib.rs`), measured.
//!
//! Every public async operation of every primitive is driven, one step at a
//! time, on a current-thread runtime (`#[tokio::test]`'s default), under a
//! [`Meter`] that checks two things:
//!
//! - **no task**: the runtime's `num_alive_tasks()` is read after *every
//!   poll* of the operation's future, and after it finished. On a current-
//!   thread runtime a spawned task cannot run (let alone finish) before the
//!   future that spawned it returns `Pending` to the runtime, so a task
//!   spawned anywhere inside the operation is counted by the read that
//!   follows that poll, even if it would end at once;
//! - **no connection**: each server's `CLIENT LIST` ids and its
//!   `total_connections_received` (every connection ever accepted, so one
//!   opened and closed inside the step counts too) are the same after the
//!   step as before the first one. They are asked on the test's own
//!   connections, which were all open before the baseline was taken.
//!
//! The contrast shows the meter sees what it looks for: `Election::start`
//! (the one documented spawn) and opening a connection are both caught
//! (`the_meter_sees_a_spawned_task_and_a_new_connection`).

use crate::support;

use core::future::{poll_fn, Future};
use core::num::NonZeroU32;
use core::pin::pin;
use core::time::Duration;
use std::collections::BTreeSet;

use redis::aio::MultiplexedConnection;
use redis_primitives::election::{Election, Leadership};
use redis_primitives::rate_limit::{Limit, SlidingWindowCounter, SlidingWindowLog};
use redis_primitives::redlock::{Acquisition, Extension, Redlock, RedlockConfig, RefusalReason};
use redis_primitives::{
    Acknowledgement, CompareCommands, Completion, Enqueued, Error, FencedStore, FencingToken, GuardedOutcome, JobQueue,
    JobState, KeepAlive, LeaseLoss, Lock, LockOutcome, Release, Retry, Tokens, WriteOutcome,
};
use support::{connect_url, ms, server, RedisServer};
use tokio::time::{sleep, timeout};

/// The runtime's count of tasks spawned and not yet finished.
fn alive_tasks() -> usize {
    tokio::runtime::Handle::current().metrics().num_alive_tasks()
}

/// A connection without a response timeout (none of these steps is about
/// timeouts, and a busy machine must not turn a slow reply into a failure).
async fn connect(server: &RedisServer) -> MultiplexedConnection {
    connect_url(&server.url(), None).await
}

async fn client_ids(conn: &MultiplexedConnection) -> BTreeSet<u64> {
    let list: String = redis::cmd("CLIENT").arg("LIST").query_async(&mut conn.clone()).await.expect("CLIENT LIST");
    list.lines()
        .map(|line| {
            let id = line.split(' ').find_map(|f| f.strip_prefix("id=")).expect("every CLIENT LIST line has an id");
            id.parse().expect("numeric client id")
        })
        .collect()
}

async fn connections_received(conn: &MultiplexedConnection) -> u64 {
    let info: String = redis::cmd("INFO").arg("stats").query_async(&mut conn.clone()).await.expect("INFO stats");
    let line = info.lines().find_map(|l| l.strip_prefix("total_connections_received:")).expect("the stats field");
    line.trim().parse().expect("a count")
}

/// One server as the test sees it: a connection of the test's own to ask
/// on, and the clients it had when the baseline was taken.
struct Watched {
    observer: MultiplexedConnection,
    clients: BTreeSet<u64>,
    received: u64,
}

/// The baseline (tasks, clients, accepted connections) and the steps
/// measured against it.
struct Meter {
    tasks: usize,
    servers: Vec<Watched>,
}

/// What one step did beside its output.
struct Observed<T> {
    output: T,
    /// The most tasks alive after any poll of the step, or after it.
    peak_tasks: usize,
    tasks_after: usize,
    /// Per server: client ids now connected that were not at the baseline,
    /// and those gone since.
    new_clients: Vec<Vec<u64>>,
    gone_clients: Vec<Vec<u64>>,
    /// Per server: connections accepted since the baseline.
    accepted: Vec<u64>,
}

impl Meter {
    /// Takes the baseline. Every connection the test will use must be open.
    async fn new(observers: Vec<MultiplexedConnection>) -> Meter {
        let mut servers = Vec::new();
        for observer in observers {
            let clients = client_ids(&observer).await;
            let received = connections_received(&observer).await;
            servers.push(Watched { observer, clients, received });
        }
        Meter { tasks: alive_tasks(), servers }
    }

    /// Drives `op` in this task, reading the alive-task count after each poll.
    async fn observe<F: Future>(&self, op: F) -> Observed<F::Output> {
        let mut op = pin!(op);
        let mut peak_tasks = alive_tasks();
        let output = poll_fn(|cx| {
            let poll = op.as_mut().poll(cx);
            peak_tasks = peak_tasks.max(alive_tasks());
            poll
        })
        .await;
        let tasks_after = alive_tasks();
        let (mut new_clients, mut gone_clients, mut accepted) = (Vec::new(), Vec::new(), Vec::new());
        for s in &self.servers {
            let now = client_ids(&s.observer).await;
            new_clients.push(now.difference(&s.clients).copied().collect());
            gone_clients.push(s.clients.difference(&now).copied().collect());
            accepted.push(connections_received(&s.observer).await - s.received);
        }
        Observed { output, peak_tasks, tasks_after, new_clients, gone_clients, accepted }
    }

    /// Drives `op` and fails the test if it spawned a task or touched the
    /// set of connections in any way.
    async fn step<F: Future>(&self, what: &str, op: F) -> F::Output {
        let seen = self.observe(op).await;
        assert_eq!(seen.peak_tasks, self.tasks, "{what}: a task was spawned while it ran");
        assert_eq!(seen.tasks_after, self.tasks, "{what}: a task outlived it");
        for (i, accepted) in seen.accepted.iter().enumerate() {
            assert!(seen.new_clients[i].is_empty(), "{what}: new client(s) {:?} on server {i}", seen.new_clients[i]);
            assert!(seen.gone_clients[i].is_empty(), "{what}: client(s) {:?} gone on server {i}", seen.gone_clients[i]);
            assert_eq!(*accepted, 0, "{what}: server {i} accepted a connection");
        }
        seen.output
    }

    fn observer(&self, server: usize) -> MultiplexedConnection {
        self.servers[server].observer.clone()
    }
}

/// Deletes `key` on the test's own connection (a thief, or an expiry).
async fn delete(conn: &MultiplexedConnection, key: &str) {
    let _: i64 = redis::cmd("DEL").arg(key).query_async(&mut conn.clone()).await.expect("DEL");
}

// ---------------------------------------------------------------- Lock

/// acquire (won and refused), extend, current_token, remaining_ttl,
/// compare_commands, release (ours and gone), with_lock, and a `Retry`
/// wrapped around acquire.
#[tokio::test]
async fn lock_calls_spawn_nothing_and_open_no_connection() {
    let s = server();
    let (conn, observer) = (connect(&s).await, connect(&s).await);
    let m = Meter::new(vec![observer]).await;
    let lock = Lock::new(conn.clone());
    let ttl = ms(5_000);

    let mut lease = m.step("acquire", lock.acquire("l", ttl)).await.unwrap().expect("free");
    assert!(m.step("acquire (held)", lock.acquire("l", ttl)).await.unwrap().is_none());
    assert!(m.step("extend", lock.extend(&mut lease, ttl)).await.unwrap());
    assert_eq!(m.step("current_token", lock.current_token("l")).await.unwrap(), Some(lease.token()));
    assert!(m.step("remaining_ttl", lock.remaining_ttl("l")).await.unwrap().is_some());
    m.step("compare_commands", lock.compare_commands()).await;
    let retry = Retry::new(NonZeroU32::new(3).unwrap(), Duration::from_millis(5), Duration::from_millis(10)).unwrap();
    let retried = m.step("Retry::run(acquire)", retry.run(|| lock.acquire("l", ttl))).await.unwrap();
    assert!(retried.is_none(), "held throughout: every attempt refused");
    assert!(m.step("release", lock.release(&lease)).await.unwrap());
    assert!(!m.step("release (gone)", lock.release(&lease)).await.unwrap());
    assert!(m.step("remaining_ttl (free)", lock.remaining_ttl("l")).await.unwrap().is_none());

    let outcome = m.step("with_lock", lock.with_lock("w", ttl, |lease| async move { lease.token() })).await.unwrap();
    match outcome {
        LockOutcome::Ran { output, token, release: Release::Released } => assert_eq!(output, token),
        other => panic!("with_lock: {other:?}"),
    }
    let held = lock.acquire("w", ttl).await.unwrap().expect("free again");
    let refused = m.step("with_lock (held)", lock.with_lock("w", ttl, |_| async {})).await.unwrap();
    assert!(matches!(refused, LockOutcome::NotAcquired), "{refused:?}");
    lock.release(&held).await.unwrap();

    // The other settings take other paths through the same calls: the
    // time-floored acquire script, the scripts instead of native commands.
    let floored = Lock::builder(conn.clone()).tokens(Tokens::TimeFloored).native_commands(false).build().unwrap();
    let mut lease = m.step("acquire (time-floored)", floored.acquire("f", ttl)).await.unwrap().expect("free");
    assert!(m.step("extend (script)", floored.extend(&mut lease, ttl)).await.unwrap());
    assert!(m.step("release (script)", floored.release(&lease)).await.unwrap());
}

/// An acknowledged acquire whose `WAIT` finds no replica: the wait and the
/// release that follows run in the caller's task too.
#[tokio::test]
async fn an_acknowledged_acquire_and_store_write_spawn_nothing() {
    let s = server();
    let (conn, observer) = (connect(&s).await, connect(&s).await);
    let m = Meter::new(vec![observer]).await;
    let ack = Acknowledgement::new(1, Duration::from_millis(20)).unwrap();
    let lock = Lock::builder(conn.clone()).acknowledged(ack).build().unwrap();
    match m.step("acquire (acknowledged)", lock.acquire("a", ms(5_000))).await {
        Err(Error::NotAcknowledged { acknowledged: 0, required: 1, .. }) => {}
        other => panic!("no replica: expected NotAcknowledged, got {other:?}"),
    }
    assert!(m.step("remaining_ttl", lock.remaining_ttl("a")).await.unwrap().is_none(), "released at once");

    let store = FencedStore::new(conn.clone()).acknowledged(ack);
    match m.step("write (acknowledged)", store.write("doc", b"v", FencingToken::new(7))).await {
        Err(Error::NotAcknowledged { .. }) => {}
        other => panic!("no replica: expected NotAcknowledged, got {other:?}"),
    }
    let stored = m.step("read", store.read("doc")).await.unwrap().expect("written on the primary");
    assert_eq!(stored.token, FencingToken::new(7));
}

/// `keep_alive` on its own and `with_lock_guarded` (completed and
/// cancelled): the extensions of a guarded body are polled beside it in
/// the caller's task, not in a task of their own.
#[tokio::test]
async fn keep_alive_and_guarded_bodies_run_in_the_callers_task() {
    let s = server();
    let (conn, observer) = (connect(&s).await, connect(&s).await);
    let m = Meter::new(vec![observer]).await;
    let lock = Lock::new(conn.clone());
    let policy = KeepAlive::new(&lock, ms(600), Duration::from_millis(50)).unwrap();

    let mut lease = lock.acquire("k", policy.ttl()).await.unwrap().expect("free");
    let first_sent = lease.sent_at();
    let ran =
        m.step("keep_alive (extending)", timeout(Duration::from_millis(200), lock.keep_alive(&mut lease, policy)));
    assert!(ran.await.is_err(), "a kept lease is never lost: keep_alive only returns on a loss");
    // One interval at least (not a count: a loaded machine may run late).
    assert!(lease.sent_at() >= first_sent + Duration::from_millis(50), "extended");
    delete(&m.observer(0), lease.key()).await;
    let loss = m.step("keep_alive (refused)", lock.keep_alive(&mut lease, policy)).await;
    assert!(matches!(loss, LeaseLoss::Refused), "{loss:?}");

    // A body six extend intervals long: extensions must happen while it
    // runs. Without one, at most 300 ms of the TTL would be left at its
    // end; with any, more (a margin for a loaded machine, not a timing).
    let observer = m.observer(0);
    let ttl_key = lock.key("g").unwrap();
    let probe = observer.clone();
    let body = |_| async move {
        sleep(Duration::from_millis(300)).await;
        let left: i64 = redis::cmd("PTTL").arg(&ttl_key).query_async(&mut probe.clone()).await.expect("PTTL");
        left
    };
    match m.step("with_lock_guarded (completed)", lock.with_lock_guarded("g", policy, body)).await.unwrap() {
        GuardedOutcome::Completed { output, release: Release::Released, .. } => {
            assert!(output > 300, "the lease was extended while the body ran: PTTL {output} ms");
        }
        other => panic!("expected Completed and Released, got {other:?}"),
    }
    // A body whose lease is stolen under it is dropped on the refused extension.
    let key = lock.key("g").unwrap();
    let thief = |_| async move {
        delete(&observer, &key).await;
        core::future::pending::<()>().await
    };
    match m.step("with_lock_guarded (cancelled)", lock.with_lock_guarded("g", policy, thief)).await.unwrap() {
        GuardedOutcome::Cancelled { reason: LeaseLoss::Refused, .. } => {}
        other => panic!("expected Cancelled by a refused extension, got {other:?}"),
    }
}

// ---------------------------------------------------------------- FencedStore, rate limiters

#[tokio::test]
async fn fenced_store_and_rate_limiter_calls_spawn_nothing_and_open_no_connection() {
    let s = server();
    let (conn, observer) = (connect(&s).await, connect(&s).await);
    let m = Meter::new(vec![observer.clone()]).await;

    let store = FencedStore::new(conn.clone());
    assert!(m.step("read (never written)", store.read("doc")).await.unwrap().is_none());
    let accepted = m.step("write", store.write("doc", b"v2", FencingToken::new(2))).await.unwrap();
    assert_eq!(accepted, WriteOutcome::Accepted);
    let rejected = m.step("write (stale)", store.write("doc", b"v1", FencingToken::new(1))).await.unwrap();
    assert!(matches!(rejected, WriteOutcome::Rejected { .. }), "{rejected:?}");
    assert_eq!(m.step("read", store.read("doc")).await.unwrap().expect("written").value, b"v2");

    let limit = Limit::new(1, Duration::from_secs(60)).unwrap();
    let log = SlidingWindowLog::new(conn.clone(), limit);
    let counter = SlidingWindowCounter::new(conn.clone(), limit);
    let (s, us): (u64, u64) = redis::cmd("TIME").query_async(&mut observer.clone()).await.unwrap();
    let now_ms = s * 1000 + us / 1000;
    assert!(m.step("log check", log.check("a")).await.unwrap().is_allowed());
    assert!(m.step("log check (denied)", log.check("a")).await.unwrap().is_denied());
    assert!(m.step("log check_at", log.check_at("b", now_ms)).await.unwrap().is_allowed());
    assert!(m.step("log check_at (denied)", log.check_at("b", now_ms + 1)).await.unwrap().is_denied());
    assert!(m.step("counter check", counter.check("a")).await.unwrap().is_allowed());
    assert!(m.step("counter check (denied)", counter.check("a")).await.unwrap().is_denied());
    assert!(m.step("counter check_at", counter.check_at("b", now_ms)).await.unwrap().is_allowed());
    assert!(m.step("counter check_at (denied)", counter.check_at("b", now_ms + 1)).await.unwrap().is_denied());
}

// ---------------------------------------------------------------- JobQueue

#[tokio::test]
async fn job_queue_calls_spawn_nothing_and_open_no_connection() {
    let s = server();
    let (conn, observer) = (connect(&s).await, connect(&s).await);
    let m = Meter::new(vec![observer]).await;
    let q = JobQueue::new(conn.clone(), "q").unwrap();

    assert_eq!(m.step("enqueue", q.enqueue("j1", b"one")).await.unwrap(), Enqueued::Added);
    assert_eq!(m.step("enqueue (known)", q.enqueue("j1", b"one")).await.unwrap(), Enqueued::AlreadyKnown);
    assert_eq!(m.step("enqueue", q.enqueue("j2", b"two")).await.unwrap(), Enqueued::Added);
    assert_eq!(m.step("state", q.state("j1")).await.unwrap(), Some(JobState::Pending));
    let mut one = m.step("claim", q.claim(ms(5_000))).await.unwrap().expect("j1 is pending");
    assert!(m.step("extend", q.extend(&mut one, ms(5_000))).await.unwrap());
    assert_eq!(m.step("complete", q.complete(&one)).await.unwrap(), Completion::Accepted);
    assert_eq!(m.step("state", q.state("j1")).await.unwrap(), Some(JobState::Done));

    // A claim that lapses, is reaped, and whose holder is then refused.
    let lapsed = m.step("claim (short lease)", q.claim(ms(30))).await.unwrap().expect("j2 is pending");
    sleep(Duration::from_millis(80)).await;
    assert_eq!(m.step("reap", q.reap()).await.unwrap(), vec!["j2".to_string()]);
    assert!(m.step("reap (nothing lapsed)", q.reap()).await.unwrap().is_empty());
    let stale = m.step("complete (stale)", q.complete(&lapsed)).await.unwrap();
    assert!(matches!(stale, Completion::Rejected { state: Some(JobState::Pending), .. }), "{stale:?}");
    let mut stale_claim = lapsed.clone();
    assert!(!m.step("extend (stale)", q.extend(&mut stale_claim, ms(5_000))).await.unwrap());
    let again = m.step("claim (again)", q.claim(ms(5_000))).await.unwrap().expect("j2 is pending again");
    assert_eq!(again.attempt(), FencingToken::new(2));
    assert!(m.step("claim (empty)", q.claim(ms(5_000))).await.unwrap().is_none());
    assert_eq!(m.step("state (unknown)", q.state("nope")).await.unwrap(), None);
}

// ---------------------------------------------------------------- Redlock

/// connect, acquire (held and refused), extend, release, compare_commands
/// and acquire_with_retry (exhausted and won), over three masters.
#[tokio::test]
async fn redlock_calls_spawn_nothing_and_open_no_connection() {
    let servers: Vec<RedisServer> = (0..3).map(|_| server()).collect();
    let (mut conns, mut observers) = (Vec::new(), Vec::new());
    for s in &servers {
        conns.push(connect(s).await);
        observers.push(connect(s).await);
    }
    let m = Meter::new(observers).await;
    let config = RedlockConfig::new(ms(5_000)).master_timeout(Duration::from_millis(500));
    let redlock = m.step("connect", Redlock::connect(conns, config)).await.expect("three independent masters");
    assert!(redlock.unverified_masters().is_empty());

    let mut lease = m.step("acquire", redlock.acquire("r")).await.unwrap().into_lease().expect("free");
    m.step("compare_commands", redlock.compare_commands()).await;
    let refused = m.step("acquire (held)", redlock.acquire("r")).await.unwrap();
    assert_eq!(refused.refusal().map(|r| r.reason), Some(RefusalReason::NoMajority));
    assert!(matches!(m.step("extend", redlock.extend(&mut lease)).await, Extension::Extended { .. }));
    let retry = Retry::new(NonZeroU32::new(3).unwrap(), Duration::from_millis(5), Duration::from_millis(10)).unwrap();
    let exhausted = m.step("acquire_with_retry (held)", redlock.acquire_with_retry("r", &retry)).await.unwrap();
    assert!(!exhausted.is_held(), "held throughout: {exhausted:?}");
    assert_eq!(m.step("release", redlock.release(&lease)).await.deleted, 3);
    assert_eq!(m.step("release (gone)", redlock.release(&lease)).await.deleted, 0);
    let won = m.step("acquire_with_retry", redlock.acquire_with_retry("r", &retry)).await.unwrap();
    let Acquisition::Held(lease) = won else { panic!("free: {won:?}") };
    assert_eq!(m.step("release", redlock.release(&lease)).await.deleted, 3);
}

/// On Valkey 9 release and extend are the native `DELIFEQ` and
/// `SET … IFEQ` (a lock detects them with `COMMAND INFO`, Redlock from the
/// `INFO` of its handshake): other commands, still the caller's task and
/// connections.
#[tokio::test]
async fn native_compare_commands_spawn_nothing_either() {
    let servers: Vec<RedisServer> =
        (0..3).map(|_| RedisServer::start_valkey().unwrap_or_else(|e| panic!("{e}"))).collect();
    let (mut conns, mut observers) = (Vec::new(), Vec::new());
    for s in &servers {
        conns.push(connect(s).await);
        observers.push(connect(s).await);
    }
    let m = Meter::new(observers).await;
    let lock = Lock::new(conns[0].clone());
    let mut lease = m.step("acquire", lock.acquire("n", ms(5_000))).await.unwrap().expect("free");
    let detected = m.step("compare_commands (COMMAND INFO)", lock.compare_commands()).await;
    assert_eq!(detected, CompareCommands::DelIfEq);
    assert!(m.step("extend (SET IFEQ)", lock.extend(&mut lease, ms(5_000))).await.unwrap());
    assert!(m.step("release (DELIFEQ)", lock.release(&lease)).await.unwrap());

    let config = RedlockConfig::new(ms(5_000)).master_timeout(Duration::from_millis(500));
    let redlock = m.step("connect", Redlock::connect(conns, config)).await.expect("three independent masters");
    assert_eq!(m.step("compare_commands", redlock.compare_commands()).await, [CompareCommands::DelIfEq; 3]);
    let mut lease = m.step("acquire", redlock.acquire("r")).await.unwrap().into_lease().expect("free");
    assert!(matches!(m.step("extend (SET IFEQ)", redlock.extend(&mut lease)).await, Extension::Extended { .. }));
    assert_eq!(m.step("release (DELIFEQ)", redlock.release(&lease)).await.deleted, 3);
}

// ---------------------------------------------------------------- Election

/// `run()` driven in place, beside the `stop()` that ends it, through a
/// term with renewals and, for a second node, through refused campaigns;
/// `stop()` with no `run()`. Then `start()`, the documented exception,
/// which the same meter catches.
#[tokio::test]
async fn election_run_and_stop_spawn_nothing_only_start_does() {
    let s = server();
    let (conn, observer) = (connect(&s).await, connect(&s).await);
    let m = Meter::new(vec![observer]).await;
    let build = |name: &str| {
        Election::builder(conn.clone(), name)
            .lease_ttl(Duration::from_millis(600))
            .renew_interval(Duration::from_millis(50))
            .campaign_interval(Duration::from_millis(20))
            .build()
            .unwrap()
    };
    let (leader, follower) = (build("e"), build("e"));
    // The follower campaigns only once the leader is elected, so which node
    // leads does not depend on the order of the first polls.
    let term = async {
        let mut roles = leader.subscribe();
        roles.wait_for(Leadership::is_leader).await.expect("the node is alive");
        let elected = leader.leader_lease().expect("leading").sent_at;
        let campaigns = async {
            sleep(Duration::from_millis(200)).await; // four renewals, ten refused campaigns
            follower.stop().await;
        };
        let (followed, ()) = tokio::join!(follower.run(), campaigns);
        let renewed = leader.leader_lease().expect("still leading").sent_at;
        leader.stop().await;
        (followed, elected, renewed)
    };
    let (led, term) =
        m.step("run() ×2 + stop()", async { tokio::join!(leader.run(), timeout(Duration::from_secs(10), term)) }).await;
    let (followed, elected, renewed) = term.expect("elected within 10 s");
    led.expect("stopped with the lease handed back");
    followed.expect("stopped while following");
    assert!(renewed > elected, "the leader renewed while the meter watched");
    assert!(!follower.is_leader() && matches!(leader.leadership(), Leadership::Stopped { .. }));
    assert!(m.step("remaining_ttl", leader.lock().remaining_ttl("e")).await.unwrap().is_none(), "handed back");

    let idle = build("idle");
    m.step("stop() with no run()", idle.stop()).await;
    m.step("run() after stop()", idle.run()).await.expect("ends at once");

    // The contrast: start() is the one call that spawns, and the meter sees it.
    let starter = build("s");
    // (In an Option: a future that yields a bare JoinHandle reads as a forgotten `.await`.)
    let started = m.observe(async { Some(starter.start()) }).await;
    assert_eq!(started.peak_tasks, m.tasks + 1, "start() spawns exactly one task");
    assert_eq!(started.tasks_after, m.tasks + 1, "which stays alive while the node runs");
    assert!(started.new_clients.iter().all(Vec::is_empty), "it runs on the node's connection");
    let mut roles = starter.subscribe();
    timeout(Duration::from_secs(10), roles.wait_for(Leadership::is_leader)).await.unwrap().unwrap();
    starter.stop().await;
    started.output.expect("spawned").await.expect("the task ran to completion").expect("stopped cleanly");
    assert_eq!(alive_tasks(), m.tasks, "the spawned task ended with its run()");
}

// ---------------------------------------------------------------- the meter itself

/// A new connection is seen on the server (a new client id, one more
/// connection accepted) and in the runtime (its driver task); a spawned
/// task is seen even when it has finished by the time the step returns.
#[tokio::test]
async fn the_meter_sees_a_spawned_task_and_a_new_connection() {
    let s = server();
    let observer = connect(&s).await;
    let m = Meter::new(vec![observer]).await;

    let spawned = m
        .observe(async {
            let handle = tokio::spawn(async {});
            handle.await.expect("the task ran");
        })
        .await;
    assert_eq!(spawned.peak_tasks, m.tasks + 1, "a task spawned and joined inside the step is still counted");
    assert_eq!(spawned.tasks_after, m.tasks, "and it is gone once joined");

    let opened = m.observe(connect(&s)).await;
    assert_eq!(opened.new_clients[0].len(), 1, "the new connection is a new client");
    assert_eq!(opened.accepted[0], 1, "and one more accepted connection");
    assert!(opened.peak_tasks > m.tasks, "redis-rs drives a multiplexed connection from a task of its own");
}
