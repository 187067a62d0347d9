//! Bad input and Redis faults: every one is a typed error, never a panic.
//!
//! Bad input is refused before any round trip: these tests point the
//! primitives at a server that has been stopped, so a request that reached
//! the network would come back as `ConnectionLost`, not `InvalidInput`.

use crate::support;

use core::num::NonZeroU32;
use core::time::Duration;
use redis::aio::ConnectionLike as _;

use redis_primitives::{Drift, Error, FencedStore, FencingToken, JobQueue, KeepAlive, Lock, Retry, Ttl, WriteOutcome};
use support::{connect, connect_with_timeout, ms, server};

fn is_invalid<T: std::fmt::Debug>(r: Result<T, Error>, what: &str) {
    match r {
        Err(Error::InvalidInput { what: w, .. }) => assert_eq!(w, what),
        other => panic!("expected InvalidInput({what}), got {other:?}"),
    }
}

#[test]
fn ttl_refuses_zero_sub_millisecond_and_overflowing_values() {
    is_invalid(Ttl::new(Duration::ZERO), "ttl");
    is_invalid(Ttl::new(Duration::from_micros(400)), "ttl");
    is_invalid(Ttl::new(Duration::from_micros(1500)), "ttl");
    is_invalid(Ttl::from_millis(Ttl::MAX_MILLIS + 1), "ttl");
    is_invalid(Ttl::new(Duration::MAX), "ttl");
    assert_eq!(Ttl::from_millis(Ttl::MAX_MILLIS).unwrap().as_millis(), Ttl::MAX_MILLIS);
    let msg = Ttl::new(Duration::from_micros(1500)).unwrap_err().to_string();
    assert!(msg.contains("whole number of milliseconds"), "{msg}");
}

#[test]
fn other_settings_are_validated_at_construction() {
    is_invalid(Drift::new(1000, Duration::ZERO), "drift factor");
    let one = NonZeroU32::new(3).unwrap();
    is_invalid(Retry::new(one, Duration::ZERO, Duration::from_millis(1)), "retry base_delay");
    is_invalid(Retry::new(one, Duration::from_millis(10), Duration::from_millis(1)), "retry max_delay");
}

#[tokio::test]
async fn bad_names_and_prefixes_are_refused_without_a_round_trip() {
    let mut s = server();
    let conn = connect(&s).await;
    s.stop(); // any request that reached the network would fail differently
    let lock = Lock::new(conn.clone());
    is_invalid(lock.acquire("", ms(100)).await, "name");
    is_invalid(lock.acquire("a{b}", ms(100)).await, "name");
    is_invalid(lock.current_token("").await, "name");
    is_invalid(lock.remaining_ttl("}").await, "name");
    is_invalid(Lock::builder(conn.clone()).prefix("").build(), "prefix");
    is_invalid(Lock::builder(conn.clone()).prefix("x{").build(), "prefix");
    let store = FencedStore::new(conn.clone());
    is_invalid(store.write("", b"v", FencingToken::new(1)).await, "name");
    is_invalid(store.read("").await, "name");
    // Extending more often than never, but not slower than the lease allows.
    is_invalid(KeepAlive::new(&lock, ms(300), Duration::ZERO), "extend interval");
    is_invalid(KeepAlive::new(&lock, ms(300), Duration::from_millis(300)), "extend interval");
    assert!(KeepAlive::new(&lock, ms(300), Duration::from_millis(100)).is_ok());
    // And a real request does reach the (stopped) network: the contrast.
    assert!(matches!(lock.acquire("ok", ms(100)).await, Err(Error::ConnectionLost { .. })));
}

#[tokio::test]
async fn wrongtype_is_a_typed_error_and_changes_nothing() {
    let s = server();
    let lock = Lock::new(connect(&s).await);
    let fence = lock.fence_key("w").unwrap();
    s.command(&["LPUSH", &fence, "not-a-counter"]).unwrap();
    match lock.acquire("w", ms(1000)).await {
        Err(Error::WrongType { key, .. }) => assert_eq!(key, lock.key("w").unwrap()),
        other => panic!("expected WrongType, got {other:?}"),
    }
    assert_eq!(s.command(&["EXISTS", &lock.key("w").unwrap()]).unwrap(), ":0\r\n", "no half-taken lock");

    let store = FencedStore::new(connect(&s).await);
    s.command(&["SET", &store.redis_key("doc").unwrap(), "plain string"]).unwrap();
    assert!(matches!(store.write("doc", b"v", FencingToken::new(1)).await, Err(Error::WrongType { .. })));
    assert!(matches!(store.read("doc").await, Err(Error::WrongType { .. })));
}

#[tokio::test]
async fn noscript_after_script_flush_recovers_by_itself() {
    let s = server();
    let lock = Lock::new(connect(&s).await);
    let store = FencedStore::new(connect(&s).await);
    let lease = lock.acquire("n", ms(1000)).await.unwrap().unwrap();
    store.write("doc", b"1", lease.token()).await.unwrap();
    assert_eq!(s.command(&["SCRIPT", "FLUSH"]).unwrap(), "+OK\r\n");
    assert!(lock.release(&lease).await.unwrap(), "release reloads its script");
    let again = lock.acquire("n", ms(1000)).await.unwrap().unwrap();
    assert_eq!(store.write("doc", b"2", again.token()).await.unwrap(), WriteOutcome::Accepted);
}

/// A connection that empties the server's script cache right before every
/// `EVALSHA` it forwards: the worst case of a `SCRIPT FLUSH` (or restart,
/// or failover) racing a call, landing between the reload after a
/// `NOSCRIPT` and the retry. Found by the simulation's rate-limit sweep
/// (seed 20000067: a burst in flight while another client flushed).
#[derive(Clone)]
struct FlushBeforeEvalsha;

impl support::Hook for FlushBeforeEvalsha {
    fn command<'a>(
        &'a self,
        conn: &'a mut redis::aio::MultiplexedConnection,
        cmd: &'a redis::Cmd,
    ) -> redis::RedisFuture<'a, redis::Value> {
        Box::pin(async move {
            if support::is_command(cmd, "EVALSHA") {
                redis::cmd("SCRIPT").arg("FLUSH").query_async::<()>(&mut *conn).await?;
            }
            conn.req_packed_command(cmd).await
        })
    }
}

#[tokio::test]
async fn noscript_that_survives_a_reload_still_runs_the_script_once() {
    use redis_primitives::rate_limit::{Limit, SlidingWindowLog};
    let s = server();
    let conn = support::Hooked(connect(&s).await, FlushBeforeEvalsha);
    let lock = Lock::new(conn.clone());
    let store = FencedStore::new(conn.clone());
    // Every EVALSHA meets an empty cache: each call must fall back to EVAL,
    // and run exactly once (tokens 1 then 2, one admission counted).
    let lease = lock.acquire("n", ms(1000)).await.unwrap().unwrap();
    assert_eq!(lease.token(), FencingToken::new(1));
    assert_eq!(store.write("doc", b"1", lease.token()).await.unwrap(), WriteOutcome::Accepted);
    assert!(lock.extend(&mut lease.clone(), ms(2000)).await.unwrap());
    assert!(lock.release(&lease).await.unwrap());
    let again = lock.acquire("n", ms(1000)).await.unwrap().unwrap();
    assert_eq!(again.token(), FencingToken::new(2));
    let limiter = SlidingWindowLog::new(conn, Limit::new(5, Duration::from_secs(10)).unwrap());
    assert_eq!(limiter.check("api").await.unwrap().count(), 1);
    assert_eq!(limiter.check("api").await.unwrap().count(), 2);
}

#[tokio::test]
async fn dropped_connection_is_connection_lost_with_unknown_outcome() {
    let mut s = server();
    let lock = Lock::new(connect(&s).await);
    s.stop();
    let err = lock.acquire("d", ms(1000)).await.unwrap_err();
    assert!(matches!(err, Error::ConnectionLost { .. }), "{err:?}");
    assert!(err.outcome_is_unknown());
}

#[tokio::test]
async fn timed_out_request_is_outcome_unknown_and_may_still_run() {
    let s = server();
    let lock = Lock::new(connect_with_timeout(&s, Duration::from_millis(100)).await);
    // Load the script first: on a cold server the late EVALSHA would meet
    // NOSCRIPT and the acquire would (this time) not happen.
    lock.acquire("warm-up", ms(1000)).await.unwrap().unwrap();
    s.freeze().unwrap(); // SIGSTOP: the request sits in the socket buffer
    let err = lock.acquire("late", ms(60_000)).await.unwrap_err();
    s.thaw().unwrap();
    assert!(matches!(err, Error::OutcomeUnknown { .. }), "{err:?}");
    assert!(err.outcome_is_unknown());
    assert!(err.to_string().contains("may still be executed"), "{err}");
    // The "failed" acquire ran after all: the lock is taken, with token 1.
    let observer = Lock::new(connect(&s).await);
    // The server processes the buffered request as soon as it runs again;
    // the observer's request is queued behind it on the server.
    assert!(observer.remaining_ttl("late").await.unwrap().is_some(), "the timed-out acquire took the lock");
    assert_eq!(observer.current_token("late").await.unwrap(), Some(FencingToken::new(1)));
}

/// Issue 13: `acquire` looked for the lock key with EXISTS, so a hash there
/// read as "held" (`Ok(None)`) and an election on the name never led.
#[tokio::test]
async fn a_hash_at_the_lock_key_is_wrongtype_not_held() {
    let s = server();
    let lock = Lock::new(connect(&s).await);
    let key = lock.key("h").unwrap();
    s.command(&["HSET", &key, "field", "value"]).unwrap();
    match lock.acquire("h", ms(1000)).await {
        Err(Error::WrongType { key: k, .. }) => assert_eq!(k, key),
        other => panic!("expected WrongType, got {other:?}"),
    }
    assert_eq!(s.command(&["EXISTS", &lock.fence_key("h").unwrap()]).unwrap(), ":0\r\n", "no token issued");
}

/// Issue 13: a negative counter used to be `INCR`ed and the lock key set
/// before the client noticed (the key then sat there for the whole TTL); a
/// non-numeric one was a generic `Redis` error. Each is now
/// `CorruptState`, and neither the lock key nor the counter changes.
#[tokio::test]
async fn a_corrupt_fence_counter_is_corrupt_state_and_changes_nothing() {
    let s = server();
    let lock = Lock::new(connect(&s).await);
    for (i, bad) in ["-5", "-1", "abc", "1.5", "9223372036854775808"].into_iter().enumerate() {
        let name = format!("c{i}");
        let (key, fence) = (lock.key(&name).unwrap(), lock.fence_key(&name).unwrap());
        s.command(&["SET", &fence, bad]).unwrap();
        match lock.acquire(&name, ms(60_000)).await {
            Err(Error::CorruptState { key: k, .. }) => assert_eq!(k, fence, "counter {bad}"),
            other => panic!("counter {bad}: expected CorruptState, got {other:?}"),
        }
        assert_eq!(s.command(&["EXISTS", &key]).unwrap(), ":0\r\n", "counter {bad}: lock key untouched");
        assert_eq!(s.command(&["GET", &fence]).unwrap(), format!("${}\r\n{bad}\r\n", bad.len()), "counter unchanged");
        assert!(matches!(lock.current_token(&name).await, Err(Error::CorruptState { .. })), "current_token of {bad}");
    }
    // A counter at zero is a fresh one (1 is the first token), not corrupt.
    s.command(&["SET", &lock.fence_key("zero").unwrap(), "0"]).unwrap();
    assert_eq!(lock.acquire("zero", ms(1000)).await.unwrap().unwrap().token(), FencingToken::new(1));
}

/// Issue 13: `FencedStore::write` reported a corrupt stored token as
/// `UnexpectedReply` and `read` as a generic `Redis` error; both are now
/// `CorruptState`, and a write never lands over one.
#[tokio::test]
async fn fenced_store_read_and_write_report_a_corrupt_token_alike() {
    let s = server();
    let store = FencedStore::new(connect(&s).await);
    for (i, bad) in ["abc", "007", "-3", "18446744073709551616", "1e3"].into_iter().enumerate() {
        let doc = format!("doc{i}");
        let key = store.redis_key(&doc).unwrap();
        s.command(&["HSET", &key, "token", bad, "value", "old"]).unwrap();
        for token in [0, 1, 1000, u64::MAX] {
            match store.write(&doc, b"new", FencingToken::new(token)).await {
                Err(Error::CorruptState { key: k, .. }) => assert_eq!(k, key),
                other => panic!("stored {bad}, write {token}: expected CorruptState, got {other:?}"),
            }
        }
        match store.read(&doc).await {
            Err(Error::CorruptState { key: k, .. }) => assert_eq!(k, key),
            other => panic!("stored {bad}: read expected CorruptState, got {other:?}"),
        }
        assert_eq!(s.command(&["HGET", &key, "value"]).unwrap(), "$3\r\nold\r\n", "nothing written over {bad}");
    }
    // Half-written entries are the same kind of problem.
    let key = store.redis_key("half").unwrap();
    s.command(&["HSET", &key, "token", "5"]).unwrap();
    assert!(matches!(store.read("half").await, Err(Error::CorruptState { .. })));
}

/// Issue 13: `Drift::new(10, Duration::MAX)` was accepted and later
/// panicked inside `acquire` — after the script had taken the lock. A drift
/// is now validated whole, and the largest accepted one works with the
/// largest TTL everywhere without a panic.
#[tokio::test]
async fn drift_is_validated_whole_and_the_largest_accepted_one_never_panics() {
    use redis_primitives::election::Election;
    use redis_primitives::redlock::{Redlock, RedlockConfig};
    is_invalid(Drift::new(10, Duration::MAX), "drift constant");
    is_invalid(Drift::new(0, Drift::MAX_CONSTANT + Duration::from_nanos(1)), "drift constant");
    assert_eq!(Drift::new(999, Duration::MAX).err().map(|e| e.to_string().contains("drift")), Some(true));
    // The public allowance is total for any Duration.
    let widest = Drift::new(999, Drift::MAX_CONSTANT).unwrap();
    assert!(widest.allowance(Duration::MAX) > widest.allowance(Duration::from_secs(1 << 62)));

    let s = server();
    let conn = connect(&s).await;
    let ttl = Ttl::from_millis(Ttl::MAX_MILLIS).unwrap();
    let lock = Lock::builder(conn.clone()).drift(widest).build().unwrap();
    let lease = lock.acquire("wide", ttl).await.unwrap().expect("free");
    assert!(!lease.is_trusted(), "an allowance larger than the TTL leaves nothing to trust");
    assert!(lock.release(&lease).await.unwrap(), "and the lease is ours to release: no orphan");
    is_invalid(KeepAlive::new(&lock, ttl, Duration::from_secs(1)), "extend interval");
    is_invalid(Election::builder(conn.clone(), "wide").drift(widest).lease_ttl(ttl.as_duration()).build(), "lease_ttl");
    let config = RedlockConfig::new(ttl).drift(widest);
    is_invalid(Redlock::connect(vec![conn.clone()], config).await, "redlock drift");

    // The default drift with the largest TTL: a lease trusted for ~285 000 years.
    let lock = Lock::new(conn.clone());
    let mut lease = lock.acquire("long", ttl).await.unwrap().unwrap();
    assert!(lease.is_trusted());
    assert!(lock.extend(&mut lease, ttl).await.unwrap());
    assert!(lock.release(&lease).await.unwrap());
    let redlock = Redlock::connect(vec![conn], RedlockConfig::new(ttl)).await.unwrap();
    let held = redlock.acquire("long").await.unwrap().into_lease().expect("one master, free");
    assert_eq!(redlock.release(&held).await.deleted, 1);
}

/// A connection that forwards every request to the real server but loses
/// the reply to the first `EVALSHA`/`EVAL`/`SET` that runs after it is armed: the
/// request ran, the caller hears a timeout (a reply lost on the way back).
#[derive(Clone)]
struct LosesArmedReply(std::sync::Arc<std::sync::atomic::AtomicBool>);

impl support::Hook for LosesArmedReply {
    fn command<'a>(
        &'a self,
        conn: &'a mut redis::aio::MultiplexedConnection,
        cmd: &'a redis::Cmd,
    ) -> redis::RedisFuture<'a, redis::Value> {
        Box::pin(async move {
            // The extend: a script, or Valkey's native `SET … IFEQ`.
            let script = ["EVALSHA", "EVAL", "SET"].iter().any(|c| support::is_command(cmd, c));
            let reply = conn.req_packed_command(cmd).await;
            // A `NOSCRIPT` did nothing: the reply lost is the one of the
            // request that ran.
            if script
                && matches!(reply, Ok(ref v) if !matches!(v, redis::Value::ServerError(_)))
                && self.0.swap(false, std::sync::atomic::Ordering::SeqCst)
            {
                return Err(std::io::Error::new(std::io::ErrorKind::TimedOut, "reply lost").into());
            }
            reply
        })
    }
}

/// An extend asking a shorter TTL than the lease has left, whose reply is
/// lost after it ran: the key now expires with the shorter TTL, so the
/// lease must stop trusting itself by then, not at the acquire's deadline
/// (found by the simulation: seed 67100038 of `lock`, two holders for
/// 52 ms). A lost reply to an extend asking a longer TTL changes nothing.
#[tokio::test]
async fn extend_of_unknown_outcome_never_leaves_the_lease_trusting_past_a_shorter_ttl() {
    let s = server();
    let armed = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let lock = Lock::new(support::Hooked(connect(&s).await, LosesArmedReply(armed.clone())));
    let mut lease = lock.acquire("n", ms(5000)).await.unwrap().unwrap();
    let acquired_deadline = lease.local_deadline();

    armed.store(true, std::sync::atomic::Ordering::SeqCst);
    let sent = tokio::time::Instant::now();
    let r = lock.extend(&mut lease, ms(200)).await;
    assert!(r.is_err(), "the lost reply is an error: {r:?}");
    let pttl: i64 =
        s.command(&["PTTL", &lock.key("n").unwrap()]).unwrap().trim_start_matches(':').trim().parse().unwrap();
    assert!((0..=200).contains(&pttl), "the extend ran at the server: PTTL {pttl}");
    assert!(
        lease.local_deadline() <= sent + Duration::from_millis(200),
        "the lease trusts itself {:?} past the send, longer than the 200 ms the key may now have",
        lease.local_deadline() - sent
    );
    assert!(lease.local_deadline() < acquired_deadline);

    // Longer than what is left: the deadline stays where it was.
    let mut lease = lock.acquire("m", ms(500)).await.unwrap().unwrap();
    let before = lease.local_deadline();
    armed.store(true, std::sync::atomic::Ordering::SeqCst);
    assert!(lock.extend(&mut lease, ms(5000)).await.is_err());
    assert_eq!(lease.local_deadline(), before);
}

/// The job queue's twin of the test above: an extension asking a shorter
/// lease than the claim has left, whose reply is lost after it ran, moved
/// the server's lease closer; the claim must stop trusting itself by then.
/// (`JobQueue::extend` left the deadline alone on `Err` until this test.)
#[tokio::test]
async fn job_extend_of_unknown_outcome_never_leaves_the_claim_trusting_past_a_shorter_lease() {
    let s = server();
    let armed = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let queue = JobQueue::new(support::Hooked(connect(&s).await, LosesArmedReply(armed.clone())), "q").unwrap();
    queue.enqueue("a", "p").await.unwrap();
    queue.enqueue("b", "p").await.unwrap();
    let mut claim = queue.claim(ms(5000)).await.unwrap().expect("a is pending");
    let claimed_deadline = claim.local_deadline();

    armed.store(true, std::sync::atomic::Ordering::SeqCst);
    let sent = tokio::time::Instant::now();
    let r = queue.extend(&mut claim, ms(200)).await;
    assert!(r.as_ref().is_err_and(Error::outcome_is_unknown), "the lost reply is an unknown outcome: {r:?}");
    let score: u64 = s
        .command(&["ZSCORE", &queue.active_key(), "a"])
        .unwrap()
        .lines()
        .nth(1)
        .and_then(|l| l.parse().ok())
        .expect("a is active");
    assert!(score < claim.lease_until_ms(), "the extension ran at the server: the lease now ends sooner");
    assert!(
        claim.local_deadline() <= sent + Duration::from_millis(200),
        "the claim trusts itself {:?} past the send, longer than the 200 ms the server's lease may now have",
        claim.local_deadline() - sent
    );
    assert!(claim.local_deadline() < claimed_deadline);

    // Longer than what is left: the deadline stays where it was.
    let mut claim = queue.claim(ms(500)).await.unwrap().expect("b is pending");
    let before = claim.local_deadline();
    armed.store(true, std::sync::atomic::Ordering::SeqCst);
    assert!(queue.extend(&mut claim, ms(5000)).await.is_err());
    assert_eq!(claim.local_deadline(), before);
}
