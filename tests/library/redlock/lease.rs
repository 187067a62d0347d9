//! Release, extend, votes in the lease, and the documented failure (a master restarted without persistence).

use super::*;

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
