//! `JobQueue` against hostile state and at the edges of its numbers: a
//! pending or lapsed job id that is not UTF-8 (written by another client)
//! is `CorruptState` with nothing changed; FIFO order and attempts stay
//! exact past 2^53; the queue's documented non-guarantees, each shown; and
//! the naive queue (`redis-primitives-naive`) completing a job twice where
//! `JobQueue` refuses the stale completion.

use crate::support;

use core::time::Duration;

use redis::aio::MultiplexedConnection;
use redis_primitives::{Completion, Error, FencingToken, JobQueue, JobState};
use redis_primitives_naive::NaiveJobQueue;
use support::{connect_with_timeout, ms, server, RedisServer};

async fn conn(s: &RedisServer) -> MultiplexedConnection {
    connect_with_timeout(s, Duration::from_secs(5)).await
}

/// An id no `&str` can hold: the bytes another client may have written.
const NOT_UTF8: &[u8] = b"\xff\xfe";

/// The job hash key of a raw id (what the scripts build: prefix + id).
fn raw_job_key(q: &JobQueue<MultiplexedConnection>, id: &[u8]) -> Vec<u8> {
    let mut key = q.job_key("x").unwrap().into_bytes();
    key.pop();
    key.extend_from_slice(id);
    key
}

async fn score(c: &mut MultiplexedConnection, key: &str, member: &[u8]) -> Option<f64> {
    redis::cmd("ZSCORE").arg(key).arg(member).query_async(c).await.unwrap()
}

async fn field(c: &mut MultiplexedConnection, key: &[u8], name: &str) -> Option<String> {
    redis::cmd("HGET").arg(key).arg(name).query_async(c).await.unwrap()
}

/// Before: the script claimed the job (attempt 0 → 1, moved to active),
/// then the client failed to read its id (`UnexpectedReply`), and the job
/// came back after every lease to be claimed again.
#[tokio::test]
async fn a_pending_id_that_is_not_utf8_is_corrupt_state_and_is_not_claimed() {
    let s = server();
    let mut c = conn(&s).await;
    let q = JobQueue::new(c.clone(), "bytes").unwrap();
    q.enqueue("later", b"x").await.unwrap();
    let job = raw_job_key(&q, NOT_UTF8);
    // At the head (score 0, before "later"'s 1), with a well-formed hash.
    let _: () = redis::cmd("ZADD").arg(q.pending_key()).arg(0).arg(NOT_UTF8).query_async(&mut c).await.unwrap();
    let _: () = redis::cmd("HSET")
        .arg(&job)
        .arg(&["payload", "p", "state", "pending", "attempt", "0", "seq", "1"])
        .query_async(&mut c)
        .await
        .unwrap();

    match q.claim(ms(60_000)).await {
        Err(Error::CorruptState { key, .. }) => assert_eq!(key, q.pending_key()),
        other => panic!("expected CorruptState, got {other:?}"),
    }
    assert_eq!(field(&mut c, &job, "attempt").await.as_deref(), Some("0"), "no attempt taken");
    assert_eq!(field(&mut c, &job, "state").await.as_deref(), Some("pending"));
    assert!(score(&mut c, &q.pending_key(), NOT_UTF8).await.is_some(), "still pending");
    assert_eq!(score(&mut c, &q.active_key(), NOT_UTF8).await, None, "not active");
    assert_eq!(q.state("later").await.unwrap(), Some(JobState::Pending), "nothing else claimed");
}

/// Before: the script moved every lapsed job back to pending, then the
/// client failed to read one id (`UnexpectedReply`) and the caller lost
/// the list of ids moved.
#[tokio::test]
async fn a_lapsed_id_that_is_not_utf8_is_corrupt_state_and_nothing_is_reaped() {
    let s = server();
    let mut c = conn(&s).await;
    let q = JobQueue::new(c.clone(), "bytes-reap").unwrap();
    q.enqueue("a", b"x").await.unwrap();
    let lapsed = q.claim(ms(1)).await.unwrap().unwrap();
    let job = raw_job_key(&q, NOT_UTF8);
    let _: () = redis::cmd("ZADD").arg(q.active_key()).arg(0).arg(NOT_UTF8).query_async(&mut c).await.unwrap();
    let _: () = redis::cmd("HSET")
        .arg(&job)
        .arg(&["payload", "p", "state", "active", "attempt", "1", "seq", "2"])
        .query_async(&mut c)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;

    match q.reap().await {
        Err(Error::CorruptState { key, .. }) => assert_eq!(key, q.active_key()),
        other => panic!("expected CorruptState, got {other:?}"),
    }
    assert_eq!(q.state("a").await.unwrap(), Some(JobState::Active), "the valid lapsed job was not moved either");
    assert!(score(&mut c, &q.active_key(), b"a").await.is_some());
    assert_eq!(field(&mut c, &job, "state").await.as_deref(), Some("active"));
    assert!(score(&mut c, &q.active_key(), NOT_UTF8).await.is_some());
    assert_eq!(q.complete(&lapsed).await.unwrap(), Completion::Accepted, "its holder still holds it");
}

/// Past 2^53 a sorted-set score (a double) holds several sequence numbers:
/// before, jobs enqueued z, y, x there came out in the order of their ids
/// among equal scores. FIFO now holds up to the counter's last value.
#[tokio::test]
async fn fifo_order_holds_past_2_pow_53_and_up_to_2_pow_63() {
    let s = server();
    let mut c = conn(&s).await;
    for (name, start) in [("f53", (1u64 << 53) - 2), ("f62", (1u64 << 62) + 1), ("f63", i64::MAX as u64 - 8)] {
        let q = JobQueue::new(c.clone(), name).unwrap();
        let _: () = redis::cmd("SET").arg(q.seq_key()).arg(start.to_string()).query_async(&mut c).await.unwrap();
        let ids = ["z", "y", "x", "w", "v", "u"];
        for id in ids {
            q.enqueue(id, id).await.unwrap();
        }
        // One claimed with a short lease and reaped goes back to its place.
        let first = q.claim(ms(1)).await.unwrap().unwrap();
        assert_eq!(first.id(), "z", "{name}");
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert_eq!(q.reap().await.unwrap(), ["z"], "{name}");
        let mut order = Vec::new();
        while let Some(claim) = q.claim(ms(60_000)).await.unwrap() {
            order.push(claim.id().to_string());
        }
        assert_eq!(order, ids, "{name}: claimed in enqueue order from counter {start}");
    }
}

/// A job's attempt numbers live in its hash, which a restart without
/// persistence loses with everything else: the job, enqueued again,
/// starts again at attempt 1, so a worker still holding the pre-restart
/// claim (attempt 1) completes the new job, and the worker holding the
/// new claim (attempt 1 too, after it, or 2 after the pre-restart
/// worker's completion made it done) is refused. The lock counter's class
/// of non-guarantee (docs/guide/non-guarantees.md).
#[tokio::test]
async fn attempts_restart_after_a_restart_without_persistence_documented_non_guarantee() {
    let mut s = server();
    let c = conn(&s).await;
    let q = JobQueue::new(c, "restart").unwrap();
    q.enqueue("j", b"x").await.unwrap();
    let before = q.claim(ms(60_000)).await.unwrap().unwrap();
    assert_eq!(before.attempt(), FencingToken::new(1));

    s.restart().unwrap();
    let q = JobQueue::new(conn(&s).await, "restart").unwrap();
    q.enqueue("j", b"x").await.unwrap();
    let after = q.claim(ms(60_000)).await.unwrap().unwrap();
    assert_eq!(after.attempt(), FencingToken::new(1), "the attempt restarted");
    // The pre-restart worker's completion is accepted; the new worker's refused.
    assert_eq!(q.complete(&before).await.unwrap(), Completion::Accepted);
    assert!(matches!(q.complete(&after).await.unwrap(), Completion::Rejected { .. }));
}

/// A claim is checked by queue name only: a claim handed out by queue
/// "twin" on server A completes job "j" of queue "twin" on server B when
/// the attempt numbers agree. The queue cannot tell two servers apart.
#[tokio::test]
async fn a_claim_is_checked_by_queue_name_only_across_servers_documented_non_guarantee() {
    let (a, b) = (server(), server());
    let on_a = JobQueue::new(conn(&a).await, "twin").unwrap();
    let on_b = JobQueue::new(conn(&b).await, "twin").unwrap();
    for q in [&on_a, &on_b] {
        q.enqueue("j", b"x").await.unwrap();
    }
    let from_a = on_a.claim(ms(60_000)).await.unwrap().unwrap();
    let _from_b = on_b.claim(ms(60_000)).await.unwrap().unwrap();
    assert_eq!(on_b.complete(&from_a).await.unwrap(), Completion::Accepted, "A's claim completed B's job");
    assert_eq!(on_b.state("j").await.unwrap(), Some(JobState::Done));
}

/// The claim script's UTF-8 test agrees with Rust's on any bytes near the
/// edges of the encoding (overlong forms, surrogates, past U+10FFFF,
/// truncated and stray continuation bytes): a well-formed id is claimed
/// and read back as it is, any other is `CorruptState` with nothing taken.
#[test]
fn the_scripts_utf8_test_agrees_with_rusts_on_any_bytes() {
    use proptest::prelude::*;
    let edges: &[u8] = &[
        0x41, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xe1, 0xec, 0xed, 0xee, 0xef,
        0xf0, 0xf1, 0xf3, 0xf4, 0xf5, 0xff,
    ];
    let bytes = prop_oneof![
        3 => prop::collection::vec(prop::sample::select(edges.to_vec()), 1..8),
        1 => any::<String>().prop_filter("non-empty", |s| !s.is_empty()).prop_map(String::into_bytes),
    ];
    let s = server();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let c = rt.block_on(conn(&s));
    crate::exact::run(&rt, bytes, |rt, case, id| {
        let q = JobQueue::new(c.clone(), &format!("utf8-{case}")).unwrap();
        let mut c = c.clone();
        rt.block_on(async {
            let job = raw_job_key(&q, &id);
            let _: () = redis::cmd("ZADD").arg(q.pending_key()).arg(1).arg(&id).query_async(&mut c).await.unwrap();
            let _: () = redis::cmd("HSET")
                .arg(&job)
                .arg(&["payload", "p", "state", "pending", "attempt", "0", "seq", "1"])
                .query_async(&mut c)
                .await
                .unwrap();
            match (std::str::from_utf8(&id), q.claim(ms(60_000)).await) {
                (Ok(text), Ok(Some(claim))) => prop_assert_eq!(claim.id(), text),
                (Err(_), Err(Error::CorruptState { .. })) => {
                    let attempt = field(&mut c, &job, "attempt").await;
                    prop_assert_eq!(attempt.as_deref(), Some("0"), "nothing taken");
                }
                (valid, other) => prop_assert!(false, "{:?} (utf-8: {}): {:?}", id, valid.is_ok(), other),
            }
            Ok(())
        })
    });
}

/// The queue everyone writes first (`RPOPLPUSH` into a processing list,
/// no lease, no fence) hands a paused worker's job out again and accepts
/// both completions; the same schedule on `JobQueue` refuses the stale one.
#[tokio::test]
async fn naive_queue_completes_a_job_twice_after_a_reap() {
    let s = server();
    let naive = NaiveJobQueue::new(conn(&s).await, "naive").unwrap();
    naive.enqueue("a", b"charge card").await.unwrap();

    // Worker 1 claims and is still working (paused, not dead)...
    let (id1, payload1) = naive.claim().await.unwrap().expect("a job is queued");
    // ...but the reaper cannot tell, and hands the job out again.
    assert_eq!(naive.reap().await.unwrap(), ["a"]);
    let (id2, payload2) = naive.claim().await.unwrap().expect("the reaped job is queued again");
    assert_eq!((id1.as_str(), id2.as_str()), ("a", "a"));
    assert_eq!(payload1, payload2);

    // Both completions count: the card is charged twice.
    let mut completed = 0;
    for id in [&id2, &id1] {
        naive.complete(id).await.unwrap();
        completed += 1;
    }
    assert_eq!(completed, 2);

    // The same schedule on JobQueue: the paused worker's completion is refused.
    let q = JobQueue::new(conn(&s).await, "fenced").unwrap();
    q.enqueue("a", b"charge card").await.unwrap();
    let first = q.claim(ms(100)).await.unwrap().unwrap();
    tokio::time::sleep(Duration::from_millis(250)).await;
    assert_eq!(q.reap().await.unwrap(), ["a"]);
    let second = q.claim(ms(10_000)).await.unwrap().unwrap();
    assert_eq!(q.complete(&second).await.unwrap(), Completion::Accepted);
    assert!(matches!(q.complete(&first).await.unwrap(), Completion::Rejected { .. }));
}
