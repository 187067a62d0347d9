//! `acquire_with_retry`'s attempts, counted at the masters.
//!
//! The promise judged (src/redlock/mod.rs, `acquire_with_retry`): "Acquires
//! `name`, trying again under `retry` (jittered delays, bounded attempts, an
//! optional deadline) while attempts are refused. Returns the lease, or the
//! last refusal once the policy gives up." The guide says the same
//! (docs/guide/redlock.md, **Retry**), and `Retry` (src/retry.rs) fixes the
//! policy: "`attempts` tries in all, the first immediately", and a deadline
//! that "Gives up once `total` has passed since the first attempt started
//! (checked before each attempt and before each sleep)".
//!
//! The attempts happen inside the library, so they are counted where they
//! land. One attempt is one `SET NX PX` on every master (guide, **Acquire**
//! step 3), and a refused one is followed by a compare-and-delete on every
//! master (step 6): `EVAL` of the release script, or the native `DELIFEQ` /
//! `DELEX` on a server that has them. `INFO commandstats` counts both per
//! master; every test reads a baseline first, so the counts are the
//! library's alone (the scripts' inner `GET`/`DEL` are counted under their
//! own names, and the meter's `INFO` under `info`).
//!
//! To change a master's state between two attempts without racing them,
//! the tests poll the call by hand ([`act_after`]) instead of guessing
//! with sleeps.

use super::*;

use core::future::poll_fn;
use std::io::{Read, Write};
use std::net::TcpStream;

use redis_primitives::redlock::{MasterVote, Refusal};

/// The other owner's value, set with a plain `SET` on the masters.
const FOREIGN: &str = "someone-else";

/// What one master executed: acquire `SET`s and release cleanups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Sent {
    sets: u64,
    cleanups: u64,
}

const fn sent(sets: u64, cleanups: u64) -> Sent {
    Sent { sets, cleanups }
}

/// `INFO commandstats` on every master, over plain blocking sockets: reading
/// it never yields to the runtime (see [`act_after`]).
struct Meter {
    streams: Vec<TcpStream>,
    base: Vec<Sent>,
}

impl Meter {
    fn new(servers: &[RedisServer]) -> Meter {
        let streams = servers
            .iter()
            .map(|s| {
                let stream = TcpStream::connect(s.addr()).expect("meter connection");
                stream.set_read_timeout(Some(Duration::from_secs(5))).expect("read timeout");
                stream
            })
            .collect();
        let mut meter = Meter { streams, base: Vec::new() };
        meter.rebase();
        meter
    }

    /// From now on, count from zero.
    fn rebase(&mut self) {
        self.base = self.streams.iter_mut().map(totals).collect();
    }

    /// Per master, what it executed since the last [`Meter::rebase`].
    fn since(&mut self) -> Vec<Sent> {
        let now: Vec<Sent> = self.streams.iter_mut().map(totals).collect();
        now.iter().zip(&self.base).map(|(n, b)| sent(n.sets - b.sets, n.cleanups - b.cleanups)).collect()
    }
}

fn totals(stream: &mut TcpStream) -> Sent {
    let stats = commandstats(stream);
    let cleanups = ["eval", "evalsha", "delifeq", "delex"].iter().map(|c| calls(&stats, c)).sum();
    Sent { sets: calls(&stats, "set"), cleanups }
}

/// The whole `INFO commandstats` bulk reply, however many reads it takes.
fn commandstats(stream: &mut TcpStream) -> String {
    stream.write_all(b"*2\r\n$4\r\nINFO\r\n$12\r\ncommandstats\r\n").expect("send INFO");
    let mut reply = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream.read(&mut chunk).expect("read INFO");
        assert!(n > 0, "the master closed the meter's connection");
        reply.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&reply);
        let Some((header, body)) = text.split_once("\r\n") else { continue };
        let len: usize = header.strip_prefix('$').and_then(|l| l.parse().ok()).unwrap_or_else(|| panic!("{text}"));
        if body.len() >= len + 2 {
            let stats = body[..len].to_string();
            assert!(stats.contains("# Commandstats"), "{stats}");
            return stats;
        }
    }
}

/// `calls` + `rejected_calls` of `command` (0 if it never ran): every
/// request that reached the master, whether it ran or not.
fn calls(stats: &str, command: &str) -> u64 {
    let prefix = format!("cmdstat_{command}:");
    let Some(fields) = stats.lines().find_map(|line| line.trim_end().strip_prefix(prefix.as_str())) else {
        return 0;
    };
    fields
        .split(',')
        .filter_map(|field| field.split_once('='))
        .filter(|(k, _)| matches!(*k, "calls" | "rejected_calls"))
        .map(|(_, v)| v.parse::<u64>().expect("a count"))
        .sum()
}

/// Polls `call` by hand until every master has executed `attempts` acquire
/// `SET`s and as many cleanups, runs `action`, then lets the call finish.
///
/// No race: the test runs on a current-thread runtime, and a redis-rs
/// connection writes to its socket only from its own driver task, which
/// runs only when this task yields. Attempt `attempts + 1` can only be
/// issued in a poll of `call` that follows the last cleanup of attempt
/// `attempts` on every master, so the check right after that poll sees the
/// counts complete, and `action` (blocking, it never yields) runs before
/// any driver task can send that attempt's `SET`s. Neither the jitter nor
/// the machine's speed can change the order.
async fn act_after<F: Future>(call: F, meter: &mut Meter, attempts: u64, action: impl FnOnce()) -> F::Output {
    assert_eq!(tokio::runtime::Handle::current().runtime_flavor(), tokio::runtime::RuntimeFlavor::CurrentThread);
    let mut call = pin!(call);
    loop {
        if poll_fn(|cx| Poll::Ready(call.as_mut().poll(cx))).await.is_ready() {
            panic!("the call returned before attempt {} was made: {:?}", attempts + 1, meter.since());
        }
        let done = meter.since();
        assert!(done.iter().all(|d| d.sets <= attempts), "past attempt {attempts} unseen: {done:?}");
        if done.iter().all(|d| *d == sent(attempts, attempts)) {
            action();
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    call.await
}

/// Every master's key held by another owner, with no TTL; and every
/// command from now on in each master's slow log (see [`last_set_owner`]).
fn hold_everywhere(servers: &[RedisServer]) {
    for s in servers {
        assert!(s.command(&["SET", KEY, FOREIGN]).unwrap().starts_with("+OK"));
        assert!(s.command(&["CONFIG", "SET", "slowlog-max-len", "100000"]).unwrap().starts_with("+OK"));
        assert!(s.command(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]).unwrap().starts_with("+OK"));
    }
}

/// The owner value of the newest `SET` `server` executed, from its slow log
/// (which logs every command once the threshold is 0). Counts alone cannot
/// tell an attempt made after the winning one (refused: our own key is
/// there) from one made before it; the order on the master can. Each
/// attempt draws a fresh owner value, so the newest `SET` must carry the
/// lease's.
async fn last_set_owner(server: &RedisServer) -> String {
    type Entry = (i64, i64, i64, Vec<String>, String, String);
    let mut conn = connect_url(&server.url()).await;
    let log: Vec<Entry> = redis::cmd("SLOWLOG").arg("GET").arg(100_000).query_async(&mut conn).await.unwrap();
    let sets = log.iter().filter(|(_, _, _, args, _, _)| args.first().is_some_and(|c| c.eq_ignore_ascii_case("SET")));
    let (_, _, _, args, _, _) = sets.max_by_key(|(id, _, _, _, _, _)| *id).expect("a SET in the slow log");
    assert_eq!(args.get(1).map(String::as_str), Some(KEY), "{args:?}");
    args[2].clone()
}

fn refused(acquisition: Acquisition) -> Refusal {
    match acquisition {
        Acquisition::Refused(refusal) => refusal,
        Acquisition::Held(lease) => panic!("expected a refusal, got a lease: {lease:?}"),
    }
}

fn yes_masters(votes: &[MasterVote]) -> Vec<usize> {
    votes.iter().filter(|v| v.vote.is_yes()).map(|v| v.master).collect()
}

fn policy(attempts: u32, base_ms: u64, max_ms: u64) -> Retry {
    Retry::new(NonZeroU32::new(attempts).unwrap(), Duration::from_millis(base_ms), Duration::from_millis(max_ms))
        .unwrap()
}

/// Nothing more reaches the masters once the call has returned.
async fn quiet_afterwards(meter: &mut Meter, expected: Sent) {
    assert!(meter.since().iter().all(|d| *d == expected), "{:?}", meter.since());
    tokio::time::sleep(Duration::from_millis(300)).await;
    let later = meter.since();
    assert!(later.iter().all(|d| *d == expected), "requests after the call returned: {later:?}, expected {expected:?}");
}

// ---------------------------------------------- all attempts, last refusal

#[tokio::test]
async fn retry_makes_every_attempt_and_returns_the_last_attempts_refusal() {
    let servers = servers(5);
    let redlock = connect_redlock(&servers, config(10_000)).await;
    hold_everywhere(&servers);
    let mut meter = Meter::new(&servers);

    // The contrast that calibrates the meter: one `acquire` is one SET and
    // one cleanup on each master.
    let one = refused(redlock.acquire(NAME).await.unwrap());
    assert_eq!((one.reason, one.votes), (RefusalReason::NoMajority, 0));
    assert_eq!(meter.since(), vec![sent(1, 1); 5]);
    meter.rebase();

    // Four attempts, no deadline. Attempts 1-3 find the other owner on all
    // five masters (0 votes); before attempt 4 it leaves masters 0 and 1, so
    // the last attempt alone has 2 votes: still short of the quorum of 3.
    const N: u64 = 4;
    let retry = policy(4, 20, 50).seeded(5);
    let call = redlock.acquire_with_retry(NAME, &retry);
    let got = act_after(call, &mut meter, N - 1, || {
        for s in &servers[..2] {
            assert!(s.command(&["DEL", KEY]).unwrap().starts_with(":1"));
        }
    })
    .await
    .unwrap();

    let last = refused(got);
    assert_eq!(last.reason, RefusalReason::NoMajority, "{last:?}");
    assert_eq!((last.votes, last.quorum), (2, 3), "the last attempt's votes, not an earlier one's: {last:?}");
    assert_eq!(yes_masters(&last.masters), vec![0, 1], "{last:?}");
    assert_eq!(yes_masters(&last.cleanup), vec![0, 1], "the cleanup deleted the last attempt's keys: {last:?}");
    // Exactly N attempts, each cleaned up, and nothing after the return.
    quiet_afterwards(&mut meter, sent(N, N)).await;
    for (i, s) in servers.iter().enumerate() {
        let expected = if i < 2 { None } else { Some(FOREIGN) };
        assert_eq!(get(s, KEY).as_deref(), expected, "master {i}");
    }
}

// ------------------------------------------------------------ the deadline

/// The delays `make(seed)` (no deadline) sleeps between attempts, for the
/// first seed whose delays `fits`. Read by running the policy on a paused
/// clock in a runtime of its own, where its attempts take no time.
fn first_fitting_seed<M, P>(make: M, fits: P) -> (u64, Vec<Duration>)
where
    M: Fn(u64) -> Retry + Sync,
    P: Fn(&[Duration]) -> bool + Sync,
{
    std::thread::scope(|scope| {
        let search = scope.spawn(|| {
            let rt = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build().unwrap();
            rt.block_on(async {
                for seed in 0..1000 {
                    let start = Instant::now();
                    let mut starts = Vec::new();
                    let none: Option<()> = make(seed)
                        .run(|| {
                            starts.push(start.elapsed());
                            async { Ok(None) }
                        })
                        .await
                        .unwrap();
                    assert!(none.is_none());
                    let delays: Vec<Duration> = starts.windows(2).map(|w| w[1] - w[0]).collect();
                    if fits(&delays) {
                        return (seed, delays);
                    }
                }
                panic!("no seed in 0..1000 fits");
            })
        });
        search.join().unwrap()
    })
}

/// The documented rule for attempts that take no time: the first at once,
/// the next after each delay, and none that would start at or past the
/// deadline. Also the smallest distance from the deadline of any start that
/// decides the count (up to and including the first one it stops).
fn documented_attempts(delays: &[Duration], deadline: Duration) -> (u64, Duration) {
    let (mut start, mut n, mut closest) = (Duration::ZERO, 1, deadline);
    for delay in delays {
        start += *delay;
        closest = closest.min(start.abs_diff(deadline));
        if start >= deadline {
            return (n, closest);
        }
        n += 1;
    }
    (n, closest)
}

/// One case of the deadline test: attempts up to `attempts`, delays capped
/// at `cap_ms` (the first delay too), a deadline of `deadline_ms`, and the
/// count it must stop at whichever way the machine's speed goes.
async fn stops_at_the_deadline(attempts: u32, cap_ms: u64, deadline_ms: u64, at_least: u64) {
    let servers = servers(5);
    let redlock = connect_redlock(&servers, config(10_000)).await;
    hold_everywhere(&servers);
    let mut meter = Meter::new(&servers);

    let deadline = Duration::from_millis(deadline_ms);
    let margin = Duration::from_millis(500);
    let make = |seed| policy(attempts, cap_ms, cap_ms).seeded(seed);
    let (seed, delays) = first_fitting_seed(make, |delays| {
        let (n, closest) = documented_attempts(delays, deadline);
        n >= at_least && n < u64::from(attempts) && closest >= margin
    });
    // Every attempt that counts starts 500 ms or more before the deadline,
    // and the next one would start 500 ms or more after it: slow attempts
    // (up to 500 ms in all) cannot move a start across it.
    let (expected, _) = documented_attempts(&delays, deadline);
    let retry = make(seed).deadline(deadline);

    let started = Instant::now();
    let last = refused(redlock.acquire_with_retry(NAME, &retry).await.unwrap());
    let took = started.elapsed();

    assert_eq!((last.reason, last.votes), (RefusalReason::NoMajority, 0), "{last:?}");
    // Neither one attempt short of the rule nor one past the deadline.
    quiet_afterwards(&mut meter, sent(expected, expected)).await;
    // "Checked before each sleep": the sleep that would end 500 ms or more
    // past the deadline is not taken; the call returns before the deadline.
    assert!(took < deadline, "returned after {took:?}, deadline {deadline:?}; seed {seed}, delays {delays:?}");
    println!("deadline {deadline:?}: {expected} attempt(s) in {}, delays {delays:?}", fmt_ms(took));
}

#[tokio::test]
async fn retry_stops_at_the_deadline_not_one_attempt_past_it() {
    // A first delay (up to 4 s) that would end 500 ms or more past a 1 s
    // deadline: one attempt, and no sleep.
    stops_at_the_deadline(10, 4000, 1000, 1).await;
    // Delays up to 2 s, a 2.5 s deadline: two or more attempts fit, and the
    // rule stops before the attempt limit (10) does.
    stops_at_the_deadline(10, 2000, 2500, 3).await;
}

// ---------------------------------------------------- a win ends the retries

#[tokio::test]
async fn retry_stops_at_the_attempt_that_wins() {
    let servers = servers(5);
    let redlock = connect_redlock(&servers, config(10_000)).await;
    hold_everywhere(&servers);
    let mut meter = Meter::new(&servers);

    // Six attempts allowed; the other owner leaves every master after the
    // second. The third attempt wins, and it is the last one made.
    let retry = policy(6, 20, 50).seeded(9);
    let call = redlock.acquire_with_retry(NAME, &retry);
    let got = act_after(call, &mut meter, 2, || {
        for s in &servers {
            assert!(s.command(&["DEL", KEY]).unwrap().starts_with(":1"));
        }
    })
    .await
    .unwrap();

    let lease = held(got);
    assert_eq!(lease.votes(), 5, "{lease:?}");
    // Three SETs, two cleanups (the refused attempts'), and nothing more.
    quiet_afterwards(&mut meter, sent(3, 2)).await;
    for s in &servers {
        assert_eq!(get(s, KEY).as_deref(), Some(lease.owner().as_str()));
        assert_eq!(last_set_owner(s).await, lease.owner().as_str(), "the winning SET is the last");
    }
    assert_eq!(redlock.release(&lease).await.deleted, 5);
}

#[tokio::test]
async fn retry_takes_the_lock_when_the_holders_ttl_runs_out_and_stops_there() {
    let servers = servers(5);
    let redlock = connect_redlock(&servers, config(10_000)).await;
    hold_everywhere(&servers);
    let mut meter = Meter::new(&servers);

    // Many attempts, 10-40 ms apart. The other owner's keys get a 150 ms TTL
    // once the first attempt has been refused (so at least one is), and the
    // retries win when they expire.
    const ATTEMPTS: u64 = 100;
    let retry = policy(100, 10, 40).seeded(13);
    let call = redlock.acquire_with_retry(NAME, &retry);
    let got = act_after(call, &mut meter, 1, || {
        for s in &servers {
            assert!(s.command(&["PEXPIRE", KEY, "150"]).unwrap().starts_with(":1"));
        }
    })
    .await
    .unwrap();

    let lease = held(got);
    // The keys expire one master at a time: the winning attempt may have
    // found some still there, but it had a majority.
    assert!(lease.votes() >= 3, "{lease:?}");
    let made = meter.since()[0].sets;
    assert!((2..=ATTEMPTS).contains(&made), "{made} attempts");
    // The same count on every master, every attempt but the winning one
    // cleaned up, and no attempt after it.
    quiet_afterwards(&mut meter, sent(made, made - 1)).await;
    // An attempt after the win would be refused (our key is there) and
    // cleaned up, keeping those counts; the order on the masters tells.
    for (i, s) in servers.iter().enumerate() {
        assert_eq!(last_set_owner(s).await, lease.owner().as_str(), "master {i}: the winning SET is the last");
    }
    for v in lease.masters().iter().filter(|v| v.vote.is_yes()) {
        assert_eq!(get(&servers[v.master], KEY).as_deref(), Some(lease.owner().as_str()), "master {}", v.master);
    }
    println!("holder's 150 ms TTL ran out: held after {made} attempts with {} votes", lease.votes());
    redlock.release(&lease).await;
}
