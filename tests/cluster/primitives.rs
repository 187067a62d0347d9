//! Every primitive over redis-rs's async cluster connection, on a healthy
//! cluster: each behaves as on one server (the same assertions as the
//! library tests make, in short), and each name's keys share one hash tag,
//! so each script addresses one slot, whichever primary owns it.

use crate::support::{self, block_on, connect, ms, name_where, owner_of};

use core::time::Duration;

use redis::cluster_async::ClusterConnection;
use redis_primitives::election::Election;
use redis_primitives::rate_limit::{Decision, Limit, SlidingWindowCounter, SlidingWindowLog};
use redis_primitives::{
    Completion, Enqueued, FencedStore, JobQueue, JobState, Lock, LockOutcome, Release, Stored, WriteOutcome,
};
use redis_primitives_testkit::{key_slot, RedisCluster, Reply};

/// One name per primary: `prefix-i` whose hash tag primary `i` owns.
fn one_name_per_primary(cluster: &RedisCluster, prefix: &str) -> Vec<String> {
    (0..3).map(|i| name_where(prefix, |slot| cluster.primary_for_slot(slot).unwrap().index() == i)).collect()
}

/// What the server says `key`'s slot is.
fn server_slot(cluster: &RedisCluster, key: &str) -> u16 {
    match cluster.node(0).call(&["CLUSTER", "KEYSLOT", key]).expect("CLUSTER KEYSLOT") {
        Reply::Integer(n) => u16::try_from(n).expect("a slot"),
        other => panic!("CLUSTER KEYSLOT {key}: {other:?}"),
    }
}

#[test]
fn each_names_keys_share_one_slot_and_names_on_every_primary_work() {
    let cluster = support::cluster();
    let names = one_name_per_primary(&cluster, "orders");
    block_on(async {
        let conn = connect(&cluster).await;
        let lock = Lock::new(conn.clone());
        let store = FencedStore::new(conn.clone());
        let limit = Limit::new(10, Duration::from_secs(1)).unwrap();
        let log = SlidingWindowLog::new(conn.clone(), limit);
        let counter = SlidingWindowCounter::new(conn.clone(), limit);
        for name in &names {
            let queue = JobQueue::new(conn.clone(), name).unwrap();
            let election = Election::builder(conn.clone(), name.clone()).build().unwrap();
            let keys = [
                lock.key(name).unwrap(),
                lock.fence_key(name).unwrap(),
                store.redis_key(name).unwrap(),
                log.key(name).unwrap(),
                counter.key(name).unwrap(),
                queue.pending_key(),
                queue.active_key(),
                queue.seq_key(),
                queue.job_key("job-1").unwrap(),
                election.lock().key(name).unwrap(),
                election.lock().fence_key(name).unwrap(),
            ];
            let slot = key_slot(name.as_bytes());
            for key in &keys {
                assert_eq!(server_slot(&cluster, key), slot, "{key} is in the slot of {{{name}}}");
            }
        }

        // Three names on three primaries: each lock's keys live on its owner only.
        let mut tokens = Vec::new();
        for (i, name) in names.iter().enumerate() {
            assert_eq!(owner_of(&cluster, name), i);
            let lease = lock.acquire(name, ms(5_000)).await.unwrap().expect("free");
            tokens.push(lease.token().get());
            let key = lock.key(name).unwrap();
            for node in &cluster.nodes()[..3] {
                let reply = node.call(&["EXISTS", &key]).unwrap();
                if node.index() == i {
                    assert_eq!(reply, Reply::Integer(1), "{key} is on its owner");
                } else {
                    assert!(matches!(&reply, Reply::Error(e) if e.starts_with("MOVED")), "{key} elsewhere: {reply:?}");
                }
            }
            assert!(lock.release(&lease).await.unwrap());
        }
        assert_eq!(tokens, [1, 1, 1], "one counter per name");
    });
}

#[test]
fn lock_acquires_releases_extends_and_counts_tokens() {
    let cluster = support::cluster();
    block_on(async {
        let lock = Lock::new(connect(&cluster).await);
        let name = "invoices";
        assert_eq!(lock.current_token(name).await.unwrap(), None);

        let mut lease = lock.acquire(name, ms(2_000)).await.unwrap().expect("free");
        assert_eq!(lease.token().get(), 1);
        assert!(lock.acquire(name, ms(2_000)).await.unwrap().is_none(), "held");
        assert_eq!(lock.current_token(name).await.unwrap().map(|t| t.get()), Some(1));

        let before = lock.remaining_ttl(name).await.unwrap().expect("held");
        assert!(lock.extend(&mut lease, ms(30_000)).await.unwrap());
        let after = lock.remaining_ttl(name).await.unwrap().expect("held");
        assert!(before <= Duration::from_secs(2) && after > Duration::from_secs(20), "{before:?} → {after:?}");

        assert!(lock.release(&lease).await.unwrap());
        assert!(!lock.release(&lease).await.unwrap(), "a second release finds nothing of ours");
        let mut stale = lease.clone();
        assert!(!lock.extend(&mut stale, ms(1_000)).await.unwrap(), "a released lease is not recreated");
        assert_eq!(lock.remaining_ttl(name).await.unwrap(), None);

        let ran = lock.with_lock(name, ms(2_000), |lease| async move { lease.token().get() * 10 }).await.unwrap();
        match ran {
            LockOutcome::Ran { output, token, release } => {
                assert_eq!((output, token.get()), (20, 2));
                assert!(matches!(release, Release::Released), "{release:?}");
            }
            LockOutcome::NotAcquired => panic!("the lock was free"),
        }
        let held = lock.acquire(name, ms(2_000)).await.unwrap().expect("free again");
        let body_ran = lock.with_lock(name, ms(2_000), |_| async { panic!("must not run") }).await.unwrap();
        assert!(matches!(body_ran, LockOutcome::NotAcquired));
        assert_eq!(held.token().get(), 3);
        assert_eq!(lock.current_token(name).await.unwrap().map(|t| t.get()), Some(3));
        println!("release/extend over the cluster connection use {:?}", lock.compare_commands().await);
        assert!(lock.release(&held).await.unwrap());
    });
}

#[test]
fn fenced_store_on_another_primary_refuses_a_stale_token() {
    let cluster = support::cluster();
    let lock_name = name_where("report", |s| cluster.primary_for_slot(s).unwrap().index() == 0);
    let resource = name_where("ledger", |s| cluster.primary_for_slot(s).unwrap().index() == 2);
    block_on(async {
        let conn = connect(&cluster).await;
        let (lock, store) = (Lock::new(conn.clone()), FencedStore::new(conn));
        let first = lock.acquire(&lock_name, ms(100)).await.unwrap().expect("free");
        tokio::time::sleep(Duration::from_millis(150)).await; // the first holder's lease lapses
        let second = lock.acquire(&lock_name, ms(5_000)).await.unwrap().expect("expired");
        assert!(second.token() > first.token());

        assert_eq!(store.write(&resource, "second", second.token()).await.unwrap(), WriteOutcome::Accepted);
        let late = store.write(&resource, "first", first.token()).await.unwrap();
        assert_eq!(late, WriteOutcome::Rejected { rejected_token: first.token(), highest_seen: second.token() });
        assert_eq!(
            store.read(&resource).await.unwrap(),
            Some(Stored { value: b"second".to_vec(), token: second.token() })
        );
        assert!(lock.release(&second).await.unwrap());
    });
}

#[test]
fn rate_limiters_admit_the_limit_and_deny_the_rest() {
    let cluster = support::cluster();
    let names = one_name_per_primary(&cluster, "api");
    block_on(async {
        let conn = connect(&cluster).await;
        let limit = Limit::new(3, Duration::from_secs(1)).unwrap();
        let log = SlidingWindowLog::new(conn.clone(), limit);
        let counter = SlidingWindowCounter::new(conn, limit);
        for name in &names {
            for (count, remaining) in [(1, 2), (2, 1), (3, 0)] {
                for decision in [log.check(name).await.unwrap(), counter.check(name).await.unwrap()] {
                    assert!(
                        matches!(decision, Decision::Allowed { count: c, remaining: r, .. } if (c, r) == (count, remaining)),
                        "{name}: request {count}: {decision:?}"
                    );
                }
            }
            // The log frees a place when its oldest entry leaves the window;
            // the counter when the previous bucket's weight has fallen far
            // enough, which can take up to two windows.
            let (by_log, by_counter) = (log.check(name).await.unwrap(), counter.check(name).await.unwrap());
            for (decision, longest) in [(by_log, Duration::from_secs(1)), (by_counter, Duration::from_secs(2))] {
                match decision {
                    Decision::Denied { count: 3, retry_after, .. } => {
                        assert!(retry_after > Duration::ZERO && retry_after <= longest, "{name}: {decision:?}")
                    }
                    other => panic!("{name}: the 4th request: {other:?}"),
                }
            }
        }
    });
}

#[test]
fn election_elects_one_leader_and_hands_over_with_a_higher_epoch() {
    let cluster = support::cluster();
    block_on(async {
        let node = |conn: ClusterConnection| {
            Election::builder(conn, "scheduler")
                .lease_ttl(Duration::from_millis(400))
                .renew_interval(Duration::from_millis(100))
                .campaign_interval(Duration::from_millis(25))
                .build()
                .unwrap()
        };
        let (a, b) = (node(connect(&cluster).await), node(connect(&cluster).await));
        let (run_a, run_b) = (a.start(), b.start());
        let leader_epoch = |e: &Election<ClusterConnection>| e.epoch();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while !(a.is_leader() || b.is_leader()) {
            assert!(tokio::time::Instant::now() < deadline, "nobody was elected");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // Let a second campaign round pass: still exactly one leader.
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(a.is_leader() != b.is_leader(), "exactly one leader: a {:?}, b {:?}", a.leadership(), b.leadership());
        let (leader, follower, leader_run) = if a.is_leader() { (&a, &b, run_a) } else { (&b, &a, run_b) };
        let first = leader_epoch(leader).expect("leading");
        assert_eq!(leader.lock().current_token("scheduler").await.unwrap(), Some(first), "the epoch is the token");

        leader.stop().await;
        leader_run.await.expect("joined").expect("ran cleanly");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while !follower.is_leader() {
            assert!(tokio::time::Instant::now() < deadline, "the follower never took over");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let second = leader_epoch(follower).expect("leading");
        assert!(second > first, "the new leader's epoch {second} is above {first}");
        follower.stop().await;
    });
}

#[test]
fn job_queue_claims_reaps_and_refuses_a_stale_worker() {
    let cluster = support::cluster();
    block_on(async {
        let queue = JobQueue::new(connect(&cluster).await, "mail").unwrap();
        assert_eq!(queue.enqueue("a", "to: alice").await.unwrap(), Enqueued::Added);
        assert_eq!(queue.enqueue("b", "to: bob").await.unwrap(), Enqueued::Added);
        assert_eq!(queue.enqueue("a", "again").await.unwrap(), Enqueued::AlreadyKnown);

        let stale = queue.claim(ms(150)).await.unwrap().expect("a is pending");
        assert_eq!((stale.id(), stale.payload(), stale.attempt().get()), ("a", &b"to: alice"[..], 1));
        tokio::time::sleep(Duration::from_millis(200)).await; // its worker stalls past the lease
        assert_eq!(queue.reap().await.unwrap(), vec!["a".to_string()]);
        assert_eq!(queue.state("a").await.unwrap(), Some(JobState::Pending));

        let fresh = queue.claim(ms(5_000)).await.unwrap().expect("a again, first in line");
        assert_eq!((fresh.id(), fresh.attempt().get()), ("a", 2));
        assert_eq!(
            queue.complete(&stale).await.unwrap(),
            Completion::Rejected { current_attempt: Some(fresh.attempt()), state: Some(JobState::Active) }
        );
        assert_eq!(queue.complete(&fresh).await.unwrap(), Completion::Accepted);
        assert_eq!(queue.state("a").await.unwrap(), Some(JobState::Done));

        let b = queue.claim(ms(5_000)).await.unwrap().expect("b is pending");
        assert_eq!(b.id(), "b");
        assert_eq!(queue.complete(&b).await.unwrap(), Completion::Accepted);
        assert!(queue.claim(ms(5_000)).await.unwrap().is_none(), "empty");
    });
}
