//! The elapsed-time gate: votes that arrive too late leave no validity, and the naive Redlock without it trusts them anyway.

use super::*;

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
