//! Redlock against five real redis-server masters (issue 3).
//!
//! Every test starts its own servers. Failures are real: `stop()` kills a
//! master, `freeze()`/`thaw()` SIGSTOP/SIGCONT it, `restart()` brings it back
//! empty on the same port, and latency comes from a TCP delay proxy
//! (`support::proxy`) between the client and the masters.
//!
//! Connections here have **no** response timeout of their own (redis-rs'
//! default is 500 ms), so the only timeout in play is Redlock's per-master one.

use crate::support;

use core::future::Future;
use core::num::NonZeroU32;
use core::pin::pin;
use core::task::Poll;
use core::time::Duration;

use rand::{Rng, SeedableRng};
use redis::aio::MultiplexedConnection;
use redis_primitives::naive::NaiveRedlock;
use redis_primitives::redlock::{Acquisition, Extension, Redlock, RedlockConfig, RedlockLease, RefusalReason, Vote};
use redis_primitives::{Drift, Error, Retry};
use support::proxy::DelayProxy;
use support::{ms, RedisServer};
use tokio::time::Instant;

const NAME: &str = "nightly-report";
const KEY: &str = "redlock:{nightly-report}";

// ---------------------------------------------------------------- helpers

fn servers(n: usize) -> Vec<RedisServer> {
    (0..n).map(|_| support::server()).collect()
}

/// A multiplexed connection to `url` with no response timeout.
async fn connect_url(url: &str) -> MultiplexedConnection {
    support::connect_url(url, None).await
}

async fn connect_all(servers: &[RedisServer]) -> Vec<MultiplexedConnection> {
    let mut conns = Vec::new();
    for s in servers {
        conns.push(connect_url(&s.url()).await);
    }
    conns
}

async fn connect_proxies(proxies: &[DelayProxy]) -> Vec<MultiplexedConnection> {
    let mut conns = Vec::new();
    for p in proxies {
        conns.push(connect_url(&p.url()).await);
    }
    conns
}

async fn connect_redlock(servers: &[RedisServer], config: RedlockConfig) -> Redlock<MultiplexedConnection> {
    Redlock::connect(connect_all(servers).await, config).await.expect("valid redlock")
}

/// The library's defaults, except a per-master timeout of a third of the TTL
/// (at most 500 ms) instead of 50 ms: on a busy 2-core machine a loopback
/// reply can take longer than 50 ms, and tests that are not about timeouts
/// must not count a slow master as a miss.
fn config(ttl_ms: u64) -> RedlockConfig {
    RedlockConfig::new(ms(ttl_ms)).master_timeout(Duration::from_millis((ttl_ms / 3).min(500)))
}

/// Exactly the library's defaults.
fn defaults(ttl_ms: u64) -> RedlockConfig {
    RedlockConfig::new(ms(ttl_ms))
}

fn held(acquisition: Acquisition) -> RedlockLease {
    match acquisition {
        Acquisition::Held(lease) => lease,
        Acquisition::Refused(r) => panic!("expected the lock, got refused: {r:?}"),
    }
}

/// The value of `key` on `server`, read over a separate raw connection.
fn get(server: &RedisServer, key: &str) -> Option<String> {
    let reply = server.command(&["GET", key]).expect("GET");
    if reply.starts_with("$-1") || reply.starts_with("_") {
        return None;
    }
    // "$<len>\r\n<value>\r\n"
    reply.split("\r\n").nth(1).map(str::to_string)
}

fn exists(server: &RedisServer, key: &str) -> bool {
    server.command(&["EXISTS", key]).expect("EXISTS").starts_with(":1")
}

fn pttl(server: &RedisServer, key: &str) -> i64 {
    let reply = server.command(&["PTTL", key]).expect("PTTL");
    reply.trim().trim_start_matches(':').parse().expect("integer reply")
}

fn invalid_what<C>(result: Result<Redlock<C>, Error>) -> (&'static str, String) {
    match result {
        Err(Error::InvalidInput { what, why }) => (what, why),
        Err(e) => panic!("expected InvalidInput, got {e}"),
        Ok(_) => panic!("expected InvalidInput, got a Redlock"),
    }
}

/// Polls `future` once, so its requests go out, then leaves it unpolled for
/// `pause` — a stop-the-world pause of the client (GC, a suspended VM) —
/// then lets it finish. The connections' driver tasks keep running, so the
/// replies arrive during the pause and are waiting when the client resumes.
async fn pause_after_first_poll<F: Future>(future: F, pause: Duration) -> F::Output {
    let mut future = pin!(future);
    let first = core::future::poll_fn(|cx| Poll::Ready(future.as_mut().poll(cx))).await;
    if let Poll::Ready(output) = first {
        return output;
    }
    tokio::time::sleep(pause).await;
    future.await
}

fn fmt_ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

// ---------------------------------------------------------- availability

#[tokio::test]
async fn acquire_succeeds_with_two_of_five_masters_down() {
    let mut servers = servers(5);
    let redlock = connect_redlock(&servers, config(2000)).await;
    assert_eq!((redlock.len(), redlock.quorum()), (5, 3));
    servers[1].stop();
    servers[3].stop();

    let lease = held(redlock.acquire(NAME).await.unwrap());
    assert_eq!(lease.votes(), 3);
    assert_eq!(lease.masters().len(), 5);
    for v in lease.masters() {
        match v.master {
            1 | 3 => {
                assert!(matches!(v.vote, Vote::Error(_) | Vote::TimedOut), "a stopped master cannot vote yes: {v:?}")
            }
            _ => assert!(v.vote.is_yes(), "{v:?}"),
        }
    }
    for i in [0, 2, 4] {
        assert_eq!(get(&servers[i], KEY).as_deref(), Some(lease.owner().as_str()));
    }
    println!(
        "2 of 5 down: held with {} votes, acquire took {}, validity {}",
        lease.votes(),
        fmt_ms(lease.acquired_at() - lease.started_at()),
        fmt_ms(lease.validity())
    );
    let released = redlock.release(&lease).await;
    assert_eq!(released.deleted, 3);
    for i in [0, 2, 4] {
        assert!(!exists(&servers[i], KEY));
    }
}

#[tokio::test]
async fn acquire_with_three_of_five_masters_down_is_refused_and_leaves_no_key() {
    let mut servers = servers(5);
    let redlock = connect_redlock(&servers, config(2000)).await;
    for i in [0, 2, 4] {
        servers[i].stop();
    }

    let acquisition = redlock.acquire(NAME).await.unwrap();
    let refusal = acquisition.refusal().expect("refused").clone();
    assert_eq!(refusal.reason, RefusalReason::NoMajority);
    assert_eq!((refusal.votes, refusal.quorum), (2, 3));
    // The two live masters did say yes; the cleanup took those keys back.
    for v in &refusal.masters {
        assert_eq!(v.vote.is_yes(), v.master == 1 || v.master == 3, "{v:?}");
    }
    assert_eq!(refusal.cleanup.len(), 5, "the cleanup asks every master, down or not");
    for v in &refusal.cleanup {
        assert_eq!(v.vote.is_yes(), v.master == 1 || v.master == 3, "{v:?}");
    }
    for i in [1, 3] {
        assert!(!exists(&servers[i], KEY), "no key left on live master {i}");
    }
    println!("3 of 5 down: refused with {} votes after {}", refusal.votes, fmt_ms(refusal.elapsed));
}

#[tokio::test]
async fn an_even_number_of_masters_tolerates_no_more_failures_than_one_fewer() {
    // N = 4: majority 3, so one failure is fine and two are not — as for N = 3.
    let mut four = servers(4);
    let redlock4 = connect_redlock(&four, config(2000)).await;
    assert_eq!(redlock4.quorum(), 3);
    four[0].stop();
    let lease = held(redlock4.acquire(NAME).await.unwrap());
    assert_eq!(lease.votes(), 3);
    redlock4.release(&lease).await;
    four[1].stop();
    let refused = redlock4.acquire(NAME).await.unwrap();
    assert_eq!(refused.refusal().map(|r| (r.reason, r.votes)), Some((RefusalReason::NoMajority, 2)));

    // N = 2 needs both; N = 1 is a single-instance lease.
    let mut two = servers(2);
    let redlock2 = connect_redlock(&two, config(2000)).await;
    assert_eq!(redlock2.quorum(), 2);
    two[1].stop();
    assert!(!redlock2.acquire(NAME).await.unwrap().is_held());
    let one = servers(1);
    let redlock1 = connect_redlock(&one, config(2000)).await;
    assert_eq!(redlock1.quorum(), 1);
    let lease = held(redlock1.acquire(NAME).await.unwrap());
    assert_eq!(lease.votes(), 1);
}

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

// ------------------------------------------------------ elapsed-time gate

/// Five masters behind delay proxies that hold every reply back by 700 ms.
/// TTL 1000 ms, drift 1 % + 400 ms = 410 ms, per-master timeout 950 ms: every
/// master answers yes in time, but 700 ms + 410 ms leaves no validity.
struct SlowMasters {
    servers: Vec<RedisServer>,
    proxies: Vec<DelayProxy>,
}

const SLOW_REPLY: Duration = Duration::from_millis(700);

fn slow_config() -> RedlockConfig {
    config(1000).drift(Drift::new(10, Duration::from_millis(400)).unwrap()).master_timeout(Duration::from_millis(950))
}

impl SlowMasters {
    fn start() -> SlowMasters {
        let servers = servers(5);
        let proxies = servers.iter().map(|s| DelayProxy::start(s.addr()).unwrap()).collect();
        SlowMasters { servers, proxies }
    }

    /// Connections through the proxies (made while they add no delay).
    async fn connect(&self) -> Vec<MultiplexedConnection> {
        connect_proxies(&self.proxies).await
    }

    fn slow_down(&self) {
        for p in &self.proxies {
            p.set_delay(Duration::ZERO, SLOW_REPLY);
        }
    }
}

#[tokio::test]
async fn elapsed_time_gate_refuses_five_votes_when_latency_leaves_no_validity() {
    let slow = SlowMasters::start();
    let redlock = Redlock::connect(slow.connect().await, slow_config()).await.unwrap();
    slow.slow_down();

    let refusal = redlock.acquire(NAME).await.unwrap().refusal().expect("refused").clone();
    assert_eq!(refusal.reason, RefusalReason::TooSlow);
    assert_eq!(refusal.votes, 5, "every master said yes: {:?}", refusal.masters);
    assert!(refusal.elapsed >= SLOW_REPLY, "{:?}", refusal.elapsed);
    assert!(refusal.elapsed + refusal.drift >= refusal.ttl.as_duration());
    assert_eq!(refusal.validity_left(), None);
    // The keys were released, not left to expire: the compare-and-delete
    // found our value on all five and deleted it.
    assert!(refusal.cleanup.iter().all(|v| v.vote.is_yes()), "{:?}", refusal.cleanup);
    for s in &slow.servers {
        assert!(!exists(s, KEY));
    }
    println!(
        "latency gate: 5/5 votes, elapsed {} + drift {} >= ttl {}: refused, 5 keys released",
        fmt_ms(refusal.elapsed),
        fmt_ms(refusal.drift),
        refusal.ttl
    );
}

#[tokio::test]
async fn elapsed_time_gate_refuses_five_votes_when_the_client_pauses_past_the_ttl() {
    // Concurrent requests bounded by a per-master timeout below the TTL can
    // only take longer than the TTL if the client itself stops between T1
    // and T2. Then the replies (all yes) are waiting when it resumes.
    let servers = servers(5);
    let redlock = connect_redlock(&servers, config(300)).await;
    let pause = Duration::from_millis(600);

    let acquisition = pause_after_first_poll(redlock.acquire(NAME), pause).await.unwrap();
    let refusal = acquisition.refusal().expect("refused").clone();
    assert_eq!(refusal.reason, RefusalReason::TooSlow);
    assert_eq!(refusal.votes, 5, "{:?}", refusal.masters);
    assert!(refusal.elapsed > refusal.ttl.as_duration(), "T2 − T1 = {:?}", refusal.elapsed);
    for s in &servers {
        assert!(!exists(s, KEY));
    }
    println!("pause gate: 5/5 votes, T2 − T1 = {} > ttl {}: refused", fmt_ms(refusal.elapsed), refusal.ttl);
}

#[tokio::test]
async fn naive_redlock_without_the_gate_accepts_what_redlock_refuses() {
    let slow = SlowMasters::start();
    let redlock = Redlock::connect(slow.connect().await, slow_config()).await.unwrap();
    let naive = NaiveRedlock::connect(slow.connect().await, slow_config()).await.unwrap();
    // A second, well-connected client with a plain configuration.
    let other = connect_redlock(&slow.servers, config(1000)).await;
    slow.slow_down();

    let refusal = redlock.acquire(NAME).await.unwrap().refusal().expect("refused").clone();
    assert_eq!((refusal.reason, refusal.votes), (RefusalReason::TooSlow, 5));

    let lease = naive.acquire(NAME).await.unwrap().expect("the naive client accepts");
    assert_eq!(lease.votes(), 5);
    assert!(lease.elapsed() >= SLOW_REPLY);
    // It believes it holds the lock for a full TTL from now, but its keys
    // were set 700 ms ago and expire on the masters long before that.
    let retry = Retry::new(NonZeroU32::new(200).unwrap(), ms(5).as_duration(), ms(20).as_duration())
        .unwrap()
        .deadline(Duration::from_secs(5))
        .seeded(3);
    let theirs = held(other.acquire_with_retry(NAME, &retry).await.unwrap());
    let both = lease.is_trusted() && theirs.is_trusted();
    assert!(
        both,
        "the naive client should still believe it holds the lock while the other client holds a majority \
         (naive lease trusted for {:?} more)",
        lease.valid_until().saturating_duration_since(Instant::now()),
    );
    println!(
        "naive: accepted 5/5 after {}; the other client took a majority while the naive lease still claimed {} of validity",
        fmt_ms(lease.elapsed()),
        fmt_ms(lease.valid_until().saturating_duration_since(theirs.acquired_at())),
    );
    // The naive release is still a compare-and-delete: the other client's keys
    // survive. It may still delete its own key on a master the other client
    // did not need for its majority, if that key has not expired yet (the
    // other client stops at the first majority), but never more than those.
    let deleted = naive.release(&lease).await.deleted;
    assert!(deleted <= slow.servers.len() - theirs.votes(), "deleted {deleted} with {} theirs", theirs.votes());
    let theirs_on = slow.servers.iter().filter(|s| get(s, KEY).as_deref() == Some(theirs.owner().as_str())).count();
    assert_eq!(theirs_on, theirs.votes());
}

// ------------------------------------------------------- release, extend

#[tokio::test]
async fn release_deletes_only_our_own_value() {
    let servers = servers(5);
    let redlock = connect_redlock(&servers, config(2000)).await;

    // Someone else's value on two masters is left alone.
    let lease = held(redlock.acquire(NAME).await.unwrap());
    for i in [0, 1] {
        servers[i].command(&["SET", KEY, "someone-else"]).unwrap();
    }
    let released = redlock.release(&lease).await;
    assert_eq!(released.deleted, 3);
    for v in &released.masters {
        assert_eq!(v.vote.is_yes(), v.master >= 2, "{v:?}");
    }
    for i in [0, 1] {
        assert_eq!(get(&servers[i], KEY).as_deref(), Some("someone-else"));
        servers[i].command(&["DEL", KEY]).unwrap();
    }

    // A lease that expired and passed to B: A's release deletes nothing of B's.
    let short = connect_redlock(&servers, config(200)).await;
    let a = held(short.acquire(NAME).await.unwrap());
    tokio::time::sleep(Duration::from_millis(300)).await;
    let b = held(short.acquire(NAME).await.unwrap());
    assert_eq!(short.release(&a).await.deleted, 0);
    for s in &servers {
        assert_eq!(get(s, KEY).as_deref(), Some(b.owner().as_str()));
    }
    assert_eq!(short.release(&b).await.deleted, 5);
}

#[tokio::test]
async fn extend_re_arms_a_majority_and_returns_the_new_validity() {
    let servers = servers(5);
    let redlock = connect_redlock(&servers, config(600)).await;
    let mut lease = held(redlock.acquire(NAME).await.unwrap());
    let first_deadline = lease.valid_until();
    tokio::time::sleep(Duration::from_millis(300)).await;

    let extension = redlock.extend(&mut lease).await;
    let Extension::Extended { validity } = extension else { panic!("{extension:?}") };
    assert_eq!(validity, lease.validity());
    assert!(lease.valid_until() > first_deadline + Duration::from_millis(200));
    assert!(validity > Duration::from_millis(500), "{validity:?}");
    // Without the extend the keys would have had about 300 ms left.
    for s in &servers {
        assert!(pttl(s, KEY) > 450, "PTTL {}", pttl(s, KEY));
    }
    // Still held 200 ms past the original expiry.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(lease.is_trusted());
    assert_eq!(redlock.release(&lease).await.deleted, 5);
    println!("extend: new validity {}", fmt_ms(validity));
}

#[tokio::test]
async fn extend_after_the_validity_ran_out_is_refused_and_resurrects_nothing() {
    let servers = servers(5);
    let redlock = connect_redlock(&servers, config(200)).await;
    let mut lease = held(redlock.acquire(NAME).await.unwrap());
    tokio::time::sleep(Duration::from_millis(300)).await;

    let Extension::Refused(refusal) = redlock.extend(&mut lease).await else { panic!("extended a dead lease") };
    assert_eq!(refusal.reason, RefusalReason::Expired);
    assert!(!lease.is_trusted());
    for s in &servers {
        assert!(!exists(s, KEY));
    }
}

#[tokio::test]
async fn extend_without_a_majority_is_refused_releases_and_cannot_steal() {
    let mut servers = servers(5);
    let redlock = connect_redlock(&servers, config(5000)).await;
    let mut lease = held(redlock.acquire(NAME).await.unwrap());
    // Another owner now holds the key on two masters; a third master is gone.
    for i in [0, 1] {
        servers[i].command(&["SET", KEY, "someone-else", "PX", "5000"]).unwrap();
    }
    servers[2].stop();

    let Extension::Refused(refusal) = redlock.extend(&mut lease).await else { panic!("extended without a majority") };
    assert_eq!((refusal.reason, refusal.votes), (RefusalReason::NoMajority, 2));
    assert!(!lease.is_trusted(), "a lease that failed to extend is lost");
    for i in [0, 1] {
        assert_eq!(get(&servers[i], KEY).as_deref(), Some("someone-else"), "not stolen");
    }
    for i in [3, 4] {
        assert!(!exists(&servers[i], KEY), "our own keys were released");
    }
}

// ------------------------------------------------------ votes in the lease

#[tokio::test]
async fn a_frozen_master_times_out_in_the_votes_and_its_late_set_still_lands() {
    let servers = servers(5);
    let timeout = Duration::from_millis(100);
    let redlock = connect_redlock(&servers, config(5000).master_timeout(timeout)).await;
    servers[4].freeze().unwrap();

    let lease = held(redlock.acquire(NAME).await.unwrap());
    assert_eq!(lease.votes(), 4);
    let frozen = &lease.masters()[4];
    assert!(matches!(frozen.vote, Vote::TimedOut), "{frozen:?}");
    assert!(frozen.latency >= timeout);
    for v in &lease.masters()[..4] {
        assert!(v.vote.is_yes());
        println!("master {}: yes after {}", v.master, fmt_ms(v.latency));
    }
    println!("master 4 (frozen): timed out after {}", fmt_ms(frozen.latency));

    // A timeout is "outcome unknown", never "did not happen": on SIGCONT the
    // frozen master executes the SET that was waiting in its socket.
    servers[4].thaw().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while get(&servers[4], KEY).is_none() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(get(&servers[4], KEY).as_deref(), Some(lease.owner().as_str()));
    // Release asks every master, so the late key goes too.
    assert_eq!(redlock.release(&lease).await.deleted, 5);
}

// ------------------------------------------------- the documented failure

#[tokio::test]
async fn documented_failure_master_restarted_without_persistence_lets_a_second_client_take_a_majority() {
    let mut servers = servers(5);
    let a = connect_redlock(&servers, config(10_000)).await;
    // A gets exactly masters 0, 1, 2 (3 and 4 are down at that moment).
    servers[3].stop();
    servers[4].stop();
    let lease_a = held(a.acquire(NAME).await.unwrap());
    assert_eq!(lease_a.votes(), 3);
    servers[3].restart().unwrap();
    servers[4].restart().unwrap();

    // Master 2 crashes and comes back empty: no persistence, no delayed restart.
    servers[2].restart().unwrap();
    assert!(!exists(&servers[2], KEY), "the restarted master forgot A's key");

    let b = connect_redlock(&servers, config(10_000)).await;
    let lease_b = held(b.acquire(NAME).await.unwrap());

    // THE FAILURE: both clients hold a valid Redlock lease at the same instant.
    assert!(lease_a.is_trusted() && lease_b.is_trusted(), "two holders at once");
    assert_eq!(lease_b.votes(), 3);
    let a_keys = servers.iter().filter(|s| get(s, KEY).as_deref() == Some(lease_a.owner().as_str())).count();
    let b_keys = servers.iter().filter(|s| get(s, KEY).as_deref() == Some(lease_b.owner().as_str())).count();
    assert_eq!((a_keys, b_keys), (2, 3), "A silently lost its majority; B has one");
    println!(
        "documented failure: after one empty restart A still trusts its lease ({} left) with its value on {a_keys} masters, \
         while B holds {b_keys}/5",
        fmt_ms(lease_a.remaining())
    );
}

// ---------------------------------------------------------- retry helper

#[tokio::test]
async fn retry_helper_waits_with_jitter_and_gives_up_at_the_deadline() {
    let servers = servers(5);
    let a = connect_redlock(&servers, config(5000)).await;
    let b = connect_redlock(&servers, config(5000)).await;
    let lease_a = held(a.acquire(NAME).await.unwrap());

    let policy = |deadline_ms: u64| {
        Retry::new(NonZeroU32::new(1000).unwrap(), Duration::from_millis(10), Duration::from_millis(40))
            .unwrap()
            .deadline(Duration::from_millis(deadline_ms))
            .seeded(11)
    };
    let started = Instant::now();
    let gave_up = b.acquire_with_retry(NAME, &policy(300)).await.unwrap();
    let waited = started.elapsed();
    let refusal = gave_up.refusal().expect("gave up");
    assert_eq!(refusal.reason, RefusalReason::NoMajority);
    // It gives up once the next delay (at most 40 ms) would cross 300 ms.
    assert!(waited >= Duration::from_millis(250), "{waited:?}");
    assert!(waited < Duration::from_secs(3), "bounded by the deadline: {waited:?}");

    // A releases while B is retrying: B gets it.
    let patient = policy(5000);
    let (got, _) = tokio::join!(b.acquire_with_retry(NAME, &patient), async {
        tokio::time::sleep(Duration::from_millis(150)).await;
        a.release(&lease_a).await
    });
    let lease_b = held(got.unwrap());
    println!(
        "retry: gave up after {}; acquired {} after the holder released",
        fmt_ms(waited),
        fmt_ms(lease_b.acquired_at() - started - waited)
    );
}

// ----------------------------------------------------------- bad input

#[tokio::test]
async fn construction_refuses_every_bad_configuration_with_a_typed_error() {
    let servers = servers(2);
    let conns = connect_all(&servers).await;

    let (what, _) = invalid_what(Redlock::connect(Vec::<MultiplexedConnection>::new(), defaults(1000)).await);
    assert_eq!(what, "redlock masters");

    let cases: Vec<(RedlockConfig, &str)> = vec![
        (defaults(100).drift(Drift::new(0, Duration::from_millis(100)).unwrap()), "redlock drift"),
        (defaults(100).drift(Drift::new(500, Duration::from_millis(60)).unwrap()), "redlock drift"),
        (defaults(100).master_timeout(Duration::from_millis(100)), "redlock master_timeout"),
        (defaults(100).master_timeout(Duration::from_millis(250)), "redlock master_timeout"),
        (defaults(100).master_timeout(Duration::ZERO), "redlock master_timeout"),
        (defaults(1000).handshake_timeout(Duration::ZERO), "redlock handshake_timeout"),
        (defaults(1000).prefix("bad{prefix"), "prefix"),
        (defaults(1000).prefix(""), "prefix"),
    ];
    for (cfg, expected) in cases {
        let (what, why) = invalid_what(Redlock::connect(conns.clone(), cfg).await);
        assert_eq!(what, expected, "{why}");
    }
    // Drift factors of 100 % or more are refused by `Drift` itself.
    assert!(matches!(Drift::new(1000, Duration::ZERO), Err(Error::InvalidInput { .. })));
    // The default per-master timeout (50 ms) needs a longer TTL.
    let (what, _) = invalid_what(Redlock::connect(conns.clone(), defaults(50)).await);
    assert_eq!(what, "redlock master_timeout");
}

#[tokio::test]
async fn configuration_errors_are_returned_before_any_request_is_sent() {
    // With a frozen master, any request would hang for the whole handshake
    // timeout (60 s here); an immediate answer proves nothing was sent.
    let servers = servers(1);
    let conns = connect_all(&servers).await;
    servers[0].freeze().unwrap();
    let bad = defaults(100).master_timeout(Duration::from_millis(100)).handshake_timeout(Duration::from_secs(60));
    let result = tokio::time::timeout(Duration::from_secs(10), Redlock::connect(conns, bad)).await;
    servers[0].thaw().unwrap();
    let (what, _) = invalid_what(result.expect("answered without a round trip"));
    assert_eq!(what, "redlock master_timeout");
}

#[tokio::test]
async fn the_same_server_listed_twice_is_refused_by_run_id() {
    let servers = servers(3);
    let mut conns = connect_all(&servers).await;
    conns.push(connect_url(&servers[0].url()).await);
    let (what, why) = invalid_what(Redlock::connect(conns, defaults(1000)).await);
    assert_eq!(what, "redlock masters");
    assert!(why.contains("masters 0 and 3"), "{why}");

    // A different address for the same server (through a proxy) is caught
    // too: the comparison is by run_id, not by address.
    let proxy = DelayProxy::start(servers[1].addr()).unwrap();
    let conns = vec![
        connect_url(&servers[0].url()).await,
        connect_url(&servers[1].url()).await,
        connect_url(&proxy.url()).await,
    ];
    let (what, why) = invalid_what(Redlock::connect(conns, defaults(1000)).await);
    assert_eq!(what, "redlock masters");
    assert!(why.contains("masters 1 and 2"), "{why}");

    // Distinct servers are accepted, each with its run_id.
    let ok = connect_redlock(&servers, defaults(1000)).await;
    assert!(ok.run_ids().iter().all(Option::is_some));
    assert!(ok.unverified_masters().is_empty());
}

#[tokio::test]
async fn a_master_silent_at_connect_is_accepted_but_reported_unverified() {
    let servers = servers(3);
    let conns = connect_all(&servers).await;
    servers[2].freeze().unwrap();
    let cfg = defaults(1000).handshake_timeout(Duration::from_millis(200));
    let result = Redlock::connect(conns, cfg).await;
    servers[2].thaw().unwrap();
    let redlock = result.expect("a minority down at start-up is tolerated");
    assert_eq!(redlock.unverified_masters(), vec![2]);
}

#[tokio::test]
async fn a_malformed_name_is_refused_before_any_request() {
    let servers = servers(1);
    let redlock = connect_redlock(&servers, config(1000)).await;
    for name in ["", "a{b", "a}b"] {
        let err = redlock.acquire(name).await.unwrap_err();
        assert!(matches!(err, Error::InvalidInput { what: "name", .. }), "{err}");
    }
    assert_eq!(servers[0].command(&["DBSIZE"]).unwrap(), ":0\r\n");
}

#[test]
fn redlock_futures_are_send() {
    fn assert_send<T: Send>(_: &T) {}
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let servers = servers(1);
    rt.block_on(async {
        let redlock = connect_redlock(&servers, config(1000)).await;
        let retry = Retry::new(NonZeroU32::MIN, Duration::from_millis(1), Duration::from_millis(1)).unwrap();
        assert_send(&redlock.acquire(NAME));
        assert_send(&redlock.acquire_with_retry(NAME, &retry));
        let lease = held(redlock.acquire(NAME).await.unwrap());
        assert_send(&redlock.release(&lease));
        let mut lease2 = lease.clone();
        assert_send(&redlock.extend(&mut lease2));
    });
}

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
