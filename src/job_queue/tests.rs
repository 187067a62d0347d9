//! Against a real redis-server per test (redis-primitives-testkit); no mocks.

use core::time::Duration;

use redis::aio::MultiplexedConnection;
use redis_primitives_testkit::RedisServer;

use super::*;

fn server() -> RedisServer {
    match RedisServer::start() {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    }
}

/// A generous response timeout: these tests assert outcomes, not
/// latency, and must not fail on a loaded machine.
async fn connect(server: &RedisServer) -> MultiplexedConnection {
    let client = redis::Client::open(server.url()).expect("valid url");
    let config = redis::AsyncConnectionConfig::new().set_response_timeout(Some(Duration::from_secs(10)));
    client.get_multiplexed_async_connection_with_config(&config).await.expect("connect to test redis-server")
}

fn ms(n: u64) -> Ttl {
    Ttl::from_millis(n).expect("valid ttl")
}

async fn queue(server: &RedisServer, name: &str) -> JobQueue<MultiplexedConnection> {
    JobQueue::new(connect(server).await, name).expect("valid name")
}

async fn score(conn: &mut MultiplexedConnection, key: &str, member: &str) -> Option<u64> {
    redis::cmd("ZSCORE").arg(key).arg(member).query_async(conn).await.expect("ZSCORE")
}

#[tokio::test]
async fn enqueue_claim_complete_happy_path() {
    let s = server();
    let q = queue(&s, "happy").await;
    let mut conn = connect(&s).await;
    assert_eq!(q.enqueue("a", b"payload-a").await.unwrap(), Enqueued::Added);
    assert_eq!(q.state("a").await.unwrap(), Some(JobState::Pending));

    let claim = q.claim(ms(10_000)).await.unwrap().expect("a job is pending");
    assert_eq!(claim.id(), "a");
    assert_eq!(claim.payload(), b"payload-a");
    assert_eq!(claim.attempt(), FencingToken::new(1));
    assert!(claim.is_trusted());
    assert_eq!(q.state("a").await.unwrap(), Some(JobState::Active));
    assert_eq!(score(&mut conn, &q.active_key(), "a").await, Some(claim.lease_until_ms()));
    assert_eq!(score(&mut conn, &q.pending_key(), "a").await, None);
    assert!(q.reap().await.unwrap().is_empty(), "a live lease is not reaped");

    assert_eq!(q.complete(&claim).await.unwrap(), Completion::Accepted);
    assert_eq!(q.state("a").await.unwrap(), Some(JobState::Done));
    assert_eq!(score(&mut conn, &q.active_key(), "a").await, None);
    assert!(q.claim(ms(10_000)).await.unwrap().is_none(), "a done job is not handed out again");
}

#[tokio::test]
async fn second_enqueue_is_already_known_and_changes_nothing() {
    let s = server();
    let q = queue(&s, "dup").await;
    assert_eq!(q.enqueue("a", b"first").await.unwrap(), Enqueued::Added);
    assert_eq!(q.enqueue("a", b"second").await.unwrap(), Enqueued::AlreadyKnown);
    let claim = q.claim(ms(10_000)).await.unwrap().unwrap();
    assert_eq!(claim.payload(), b"first");
    assert!(q.claim(ms(10_000)).await.unwrap().is_none(), "the id was queued once");
    // Known while active and once done, too.
    assert_eq!(q.enqueue("a", b"third").await.unwrap(), Enqueued::AlreadyKnown);
    q.complete(&claim).await.unwrap();
    assert_eq!(q.enqueue("a", b"fourth").await.unwrap(), Enqueued::AlreadyKnown);
    assert_eq!(q.state("a").await.unwrap(), Some(JobState::Done));
}

#[tokio::test]
async fn claims_come_out_in_enqueue_order() {
    let s = server();
    let q = queue(&s, "fifo").await;
    // Ids that sort the other way lexicographically.
    for id in ["c", "b", "a", "10", "9"] {
        q.enqueue(id, id).await.unwrap();
    }
    let mut order = Vec::new();
    while let Some(claim) = q.claim(ms(10_000)).await.unwrap() {
        assert_eq!(claim.payload(), claim.id().as_bytes());
        order.push(claim.id().to_string());
    }
    assert_eq!(order, ["c", "b", "a", "10", "9"]);
}

#[tokio::test]
async fn claim_on_empty_queue_is_none() {
    let s = server();
    let q = queue(&s, "empty").await;
    assert!(q.claim(ms(1_000)).await.unwrap().is_none());
    assert!(q.reap().await.unwrap().is_empty());
    assert_eq!(q.state("nope").await.unwrap(), None);
}

#[tokio::test]
async fn lapsed_lease_is_reaped_reclaimed_and_the_stale_worker_is_rejected() {
    let s = server();
    let q = queue(&s, "lapse").await;
    let mut conn = connect(&s).await;
    q.enqueue("a", b"x").await.unwrap();
    let first = q.claim(ms(100)).await.unwrap().unwrap();
    assert_eq!(first.attempt(), FencingToken::new(1));

    tokio::time::sleep(Duration::from_millis(250)).await;
    assert!(!first.is_trusted());
    assert_eq!(q.reap().await.unwrap(), ["a"]);
    assert_eq!(q.state("a").await.unwrap(), Some(JobState::Pending));
    assert_eq!(score(&mut conn, &q.active_key(), "a").await, None);
    assert!(q.reap().await.unwrap().is_empty(), "reaped once");

    let second = q.claim(ms(10_000)).await.unwrap().unwrap();
    assert_eq!(second.id(), "a");
    assert_eq!(second.attempt(), FencingToken::new(2));

    assert_eq!(
        q.complete(&first).await.unwrap(),
        Completion::Rejected { current_attempt: Some(FencingToken::new(2)), state: Some(JobState::Active) }
    );
    assert_eq!(q.state("a").await.unwrap(), Some(JobState::Active), "the stale completion changed nothing");
    assert_eq!(q.complete(&second).await.unwrap(), Completion::Accepted);
    assert_eq!(q.state("a").await.unwrap(), Some(JobState::Done));
}

#[tokio::test]
async fn reaped_job_keeps_its_place_in_the_queue() {
    let s = server();
    let q = queue(&s, "place").await;
    q.enqueue("first", b"1").await.unwrap();
    let claim = q.claim(ms(50)).await.unwrap().unwrap();
    assert_eq!(claim.id(), "first");
    q.enqueue("second", b"2").await.unwrap();
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert_eq!(q.reap().await.unwrap(), ["first"]);
    assert_eq!(q.claim(ms(10_000)).await.unwrap().unwrap().id(), "first");
    assert_eq!(q.claim(ms(10_000)).await.unwrap().unwrap().id(), "second");
}

#[tokio::test]
async fn lapsed_but_unreaped_claim_can_still_complete() {
    let s = server();
    let q = queue(&s, "late").await;
    q.enqueue("a", b"x").await.unwrap();
    let claim = q.claim(ms(50)).await.unwrap().unwrap();
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert_eq!(q.complete(&claim).await.unwrap(), Completion::Accepted);
    assert!(q.reap().await.unwrap().is_empty(), "a done job is not reaped");
    assert_eq!(q.state("a").await.unwrap(), Some(JobState::Done));
}

#[tokio::test]
async fn extend_moves_the_lease_forward_while_active() {
    let s = server();
    let q = queue(&s, "extend").await;
    let mut conn = connect(&s).await;
    q.enqueue("a", b"x").await.unwrap();
    let mut claim = q.claim(ms(200)).await.unwrap().unwrap();
    let (until0, sent0) = (claim.lease_until_ms(), claim.sent_at());
    tokio::time::sleep(Duration::from_millis(20)).await;

    let before = Instant::now();
    assert!(q.extend(&mut claim, ms(10_000)).await.unwrap());
    assert!(claim.lease_until_ms() >= until0 + 9_800, "{} vs {until0}", claim.lease_until_ms());
    assert_eq!(score(&mut conn, &q.active_key(), "a").await, Some(claim.lease_until_ms()));
    assert!(claim.sent_at() > sent0 && claim.sent_at() >= before && claim.sent_at() <= Instant::now());
    assert_eq!(claim.local_deadline() - claim.sent_at(), Drift::DEFAULT.usable(ms(10_000)));

    // Past the first lease's end, the extended one is not reaped.
    tokio::time::sleep(Duration::from_millis(250)).await;
    assert!(q.reap().await.unwrap().is_empty());
    assert_eq!(q.complete(&claim).await.unwrap(), Completion::Accepted);
}

#[tokio::test]
async fn extend_is_refused_after_reap_and_after_reclaim() {
    let s = server();
    let q = queue(&s, "extend-stale").await;
    let mut conn = connect(&s).await;
    q.enqueue("a", b"x").await.unwrap();
    let mut first = q.claim(ms(100)).await.unwrap().unwrap();
    tokio::time::sleep(Duration::from_millis(250)).await;
    assert_eq!(q.reap().await.unwrap(), ["a"]);

    // Reaped, not yet claimed again: no resurrection.
    let (until, sent, deadline) = (first.lease_until_ms(), first.sent_at(), first.local_deadline());
    assert!(!q.extend(&mut first, ms(10_000)).await.unwrap());
    assert_eq!(q.state("a").await.unwrap(), Some(JobState::Pending));
    assert_eq!(score(&mut conn, &q.active_key(), "a").await, None);
    assert_eq!((first.lease_until_ms(), first.sent_at(), first.local_deadline()), (until, sent, deadline));

    // Claimed again: someone else's attempt is left alone.
    let second = q.claim(ms(5_000)).await.unwrap().unwrap();
    assert!(!q.extend(&mut first, ms(60_000)).await.unwrap());
    assert_eq!(score(&mut conn, &q.active_key(), "a").await, Some(second.lease_until_ms()));
    assert_eq!(first.lease_until_ms(), until);
}

#[tokio::test]
async fn completing_twice_is_rejected_as_done() {
    let s = server();
    let q = queue(&s, "twice").await;
    q.enqueue("a", b"x").await.unwrap();
    let mut claim = q.claim(ms(10_000)).await.unwrap().unwrap();
    assert_eq!(q.complete(&claim).await.unwrap(), Completion::Accepted);
    assert_eq!(
        q.complete(&claim).await.unwrap(),
        Completion::Rejected { current_attempt: Some(FencingToken::new(1)), state: Some(JobState::Done) }
    );
    assert!(!q.extend(&mut claim, ms(10_000)).await.unwrap(), "a done job is not extended");
}

#[tokio::test]
async fn complete_of_an_unknown_job_is_rejected_with_nothing() {
    let s = server();
    let q = queue(&s, "gone").await;
    let mut conn = connect(&s).await;
    q.enqueue("a", b"x").await.unwrap();
    let claim = q.claim(ms(10_000)).await.unwrap().unwrap();
    let _: () = redis::cmd("DEL").arg(q.job_key("a").unwrap()).query_async(&mut conn).await.unwrap();
    assert_eq!(q.complete(&claim).await.unwrap(), Completion::Rejected { current_attempt: None, state: None });
}

#[tokio::test]
async fn local_deadline_is_sent_at_plus_lease_minus_allowance() {
    let s = server();
    let q = queue(&s, "deadline").await;
    q.enqueue("a", b"x").await.unwrap();
    q.enqueue("b", b"y").await.unwrap();

    let before = Instant::now();
    let claim = q.claim(ms(10_000)).await.unwrap().unwrap();
    let after_reply = Instant::now();
    assert!(claim.sent_at() >= before && claim.sent_at() <= after_reply, "measured from the send");
    // 1 % of 10 s plus 2 ms.
    assert_eq!(claim.local_deadline() - claim.sent_at(), Duration::from_millis(10_000 - 100 - 2));

    let q = q.with_drift(Drift::NONE);
    let claim = q.claim(ms(10_000)).await.unwrap().unwrap();
    assert_eq!(claim.local_deadline() - claim.sent_at(), Duration::from_millis(10_000));
}

#[tokio::test]
async fn invalid_names_and_ids_are_refused_before_anything_is_sent() {
    let s = server();
    let conn = connect(&s).await;
    for bad in ["", "a{b", "a}b"] {
        match JobQueue::new(conn.clone(), bad) {
            Err(Error::InvalidInput { what: "name", .. }) => {}
            other => panic!("queue name {bad:?}: expected InvalidInput, got {other:?}"),
        }
    }
    let q = JobQueue::new(conn, "valid").unwrap();
    let _ = s.command(&["CONFIG", "RESETSTAT"]).unwrap();
    for bad in ["", "x{y}", "}"] {
        assert!(matches!(q.job_key(bad), Err(Error::InvalidInput { what: "job id", .. })), "{bad:?}");
        assert!(matches!(q.enqueue(bad, b"p").await, Err(Error::InvalidInput { what: "job id", .. })), "{bad:?}");
        assert!(matches!(q.state(bad).await, Err(Error::InvalidInput { what: "job id", .. })), "{bad:?}");
    }
    let stats = s.command(&["INFO", "commandstats"]).unwrap();
    for cmd in ["cmdstat_eval", "cmdstat_evalsha", "cmdstat_hget", "cmdstat_script"] {
        assert!(!stats.contains(&format!("{cmd}:")), "{cmd} was sent: {stats}");
    }
    assert_eq!(s.command(&["DBSIZE"]).unwrap().trim(), ":0");
}

#[tokio::test]
async fn claim_from_another_queue_is_invalid_input() {
    let s = server();
    let a = queue(&s, "qa").await;
    let b = queue(&s, "qb").await;
    a.enqueue("j", b"x").await.unwrap();
    b.enqueue("j", b"x").await.unwrap();
    let mut claim = a.claim(ms(10_000)).await.unwrap().unwrap();
    assert!(matches!(b.complete(&claim).await, Err(Error::InvalidInput { what: "claim", .. })));
    assert!(matches!(b.extend(&mut claim, ms(10_000)).await, Err(Error::InvalidInput { what: "claim", .. })));
    assert_eq!(b.state("j").await.unwrap(), Some(JobState::Pending));
}

#[tokio::test]
async fn corrupt_attempt_is_corrupt_state_and_changes_nothing() {
    let s = server();
    let q = queue(&s, "corrupt").await;
    let mut conn = connect(&s).await;
    q.enqueue("a", b"x").await.unwrap();
    let job = q.job_key("a").unwrap();
    for bad in ["x", "01", "-1", ""] {
        let _: () = redis::cmd("HSET").arg(&job).arg("attempt").arg(bad).query_async(&mut conn).await.unwrap();
        match q.claim(ms(10_000)).await {
            Err(Error::CorruptState { key, .. }) => assert_eq!(key, job, "attempt {bad:?}"),
            other => panic!("attempt {bad:?}: expected CorruptState, got {other:?}"),
        }
        let attempt: String = redis::cmd("HGET").arg(&job).arg("attempt").query_async(&mut conn).await.unwrap();
        assert_eq!(attempt, bad, "nothing changed");
        assert!(score(&mut conn, &q.pending_key(), "a").await.is_some(), "still pending");
        assert_eq!(score(&mut conn, &q.active_key(), "a").await, None, "not active");
        assert_eq!(q.state("a").await.unwrap(), Some(JobState::Pending));
    }
    // One HINCRBY cannot advance: refused too, before any write.
    let max = i64::MAX.to_string();
    let _: () = redis::cmd("HSET").arg(&job).arg("attempt").arg(&max).query_async(&mut conn).await.unwrap();
    assert!(matches!(q.claim(ms(10_000)).await, Err(Error::CorruptState { .. })));
    assert_eq!(q.state("a").await.unwrap(), Some(JobState::Pending));
    assert!(score(&mut conn, &q.pending_key(), "a").await.is_some());

    // A state this library never writes.
    let _: () = redis::cmd("HSET").arg(&job).arg("state").arg("weird").query_async(&mut conn).await.unwrap();
    assert!(matches!(q.state("a").await, Err(Error::CorruptState { .. })));
}

#[tokio::test]
async fn attempts_stay_exact_past_2_pow_53() {
    let s = server();
    let q = queue(&s, "big").await;
    let mut conn = connect(&s).await;
    q.enqueue("a", b"x").await.unwrap();
    let start: u64 = (1 << 53) + 1; // not representable as a double
    let job = q.job_key("a").unwrap();
    let _: () =
        redis::cmd("HSET").arg(&job).arg("attempt").arg(start.to_string()).query_async(&mut conn).await.unwrap();
    let claim = q.claim(ms(10_000)).await.unwrap().unwrap();
    assert_eq!(claim.attempt(), FencingToken::new(start + 1));
    assert_eq!(q.complete(&claim).await.unwrap(), Completion::Accepted);
}

#[tokio::test]
async fn wrong_type_at_the_pending_key() {
    let s = server();
    let q = queue(&s, "wrong").await;
    let mut conn = connect(&s).await;
    let _: () = redis::cmd("SET").arg(q.pending_key()).arg("x").query_async(&mut conn).await.unwrap();
    match q.enqueue("a", b"x").await {
        Err(Error::WrongType { .. }) => {}
        other => panic!("enqueue: expected WrongType, got {other:?}"),
    }
    match q.claim(ms(1_000)).await {
        Err(Error::WrongType { .. }) => {}
        other => panic!("claim: expected WrongType, got {other:?}"),
    }
    // The enqueue changed nothing: no job hash, no sequence number drawn.
    let exists: i64 =
        redis::cmd("EXISTS").arg(q.job_key("a").unwrap()).arg(q.seq_key()).query_async(&mut conn).await.unwrap();
    assert_eq!(exists, 0);
}
