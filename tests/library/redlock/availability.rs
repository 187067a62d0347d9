//! Availability: a majority acquires with masters down; fewer are refused and leave nothing.

use super::*;

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
