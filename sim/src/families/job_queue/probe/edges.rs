//! The probe's cases for ids and numbers no workload reaches (issue 48):
//! ids that are not ASCII, or not UTF-8 at all (written by another client);
//! sequence numbers past 2^53, where one sorted-set score holds several;
//! an attempt `HINCRBY` cannot advance; and the longest lease a job takes. Each is judged like the other
//! cases: the documented answer, and unchanged keys where an error must
//! change nothing.

use redis::aio::ConnectionLike;
use redis_primitives::{Claim, JobQueue, Ttl};

use super::{raw, said, Case, UNKNOWN};
use crate::families::job_queue::situations::{PROBE_CORRUPT_REFUSED, PROBE_LEASE_REFUSED};

/// The cases here, numbered after [`super::one`]'s.
pub(super) const CASES: core::ops::Range<u32> = 20..27;

/// How often case 20 reaps before it takes the empty answer as the
/// library's.
const REAP_TRIES: u32 = 3;

/// Bytes no `&str` holds.
const NOT_UTF8: &[u8] = b"\xff\xfe";

/// The job hash key of raw id bytes (the scripts' prefix + id).
fn raw_job_key(c: &Case<'_>, id: &[u8]) -> Result<Vec<u8>, redis_primitives::Error> {
    let mut key = c.queue.job_key("x")?.into_bytes();
    key.pop();
    key.extend_from_slice(id);
    Ok(key)
}

/// Sends `args`, any of them bytes.
async fn raw_bytes(c: &mut Case<'_>, args: &[&[u8]]) -> redis::RedisResult<()> {
    let mut cmd = redis::cmd(std::str::from_utf8(args[0]).unwrap_or("PING"));
    for a in &args[1..] {
        cmd.arg(*a);
    }
    c.conn.req_packed_command(&cmd).await.map(|_| ())
}

/// Removes a planted id that is not UTF-8 and its hash once judged: the
/// harness reads every key by name, as text, at the end of the run.
async fn forget(c: &mut Case<'_>, job: &[u8], set: &str) -> redis::RedisResult<()> {
    raw_bytes(c, &[b"DEL", job]).await?;
    raw_bytes(c, &[b"ZREM", set.as_bytes(), NOT_UTF8]).await
}

/// The server's clock in unix ms (`TIME`).
async fn server_ms(c: &mut Case<'_>) -> redis::RedisResult<u64> {
    let t: (u64, u64) = redis::cmd("TIME").query_async(&mut c.conn).await?;
    Ok(t.0 * 1000 + t.1 / 1000)
}

fn claimed(claim: &Option<Claim>) -> String {
    match claim {
        Some(c) => format!("{} attempt {}", c.id(), c.attempt()),
        None => "nothing".to_string(),
    }
}

pub(super) async fn one(c: &mut Case<'_>, n: u32) -> Result<(), Box<dyn std::error::Error>> {
    let (pending, active, seq) = (c.keys[0].clone(), c.keys[1].clone(), c.keys[2].clone());
    match n {
        20 => {
            // A well-formed id that is not ASCII: claimed and reaped as any.
            c.queue.enqueue("é-ü", "p").await?;
            let r = c.queue.claim(Ttl::from_millis(1)?).await;
            c.record("claim: an id that is UTF-8 but not ASCII", "é-ü attempt 1".into(), said(&r, claimed), None).await;
            // Reaped once its 1 ms lease has lapsed on the server's clock.
            // A fault may hold the claim until the moment the reap runs (a
            // server pause releases both at once): a reap that found
            // nothing is sent again, after the last one's answer, a few
            // times.
            let mut r = Ok(Vec::new());
            for _ in 0..REAP_TRIES {
                tokio::time::sleep(core::time::Duration::from_millis(5)).await;
                r = c.queue.reap().await;
                if !matches!(&r, Ok(ids) if ids.is_empty()) {
                    break;
                }
            }
            c.record(
                "reap: an id that is UTF-8 but not ASCII",
                "reaped é-ü".into(),
                said(&r, |ids| format!("reaped {}", ids.join(" "))),
                None,
            )
            .await;
        }
        21 => {
            // At the head, an id that is not UTF-8, with a well-formed hash.
            let job = raw_job_key(c, NOT_UTF8)?;
            raw_bytes(c, &[b"ZADD", pending.as_bytes(), b"1", NOT_UTF8]).await?;
            raw_bytes(c, &[b"HSET", &job, b"payload", b"p", b"state", b"pending", b"attempt", b"0", b"seq", b"1"])
                .await?;
            let b = c.before().await;
            let r = c.queue.claim(Ttl::from_millis(10_000)?).await;
            let (expected, shows) = (format!("corrupt {pending}"), Some(PROBE_CORRUPT_REFUSED));
            c.record_showing("claim: a pending id that is not UTF-8", expected, said(&r, claimed), b, shows).await;
            forget(c, &job, &pending).await?;
        }
        22 => {
            // Two lapsed leases, one of an id that is not UTF-8: nothing moves.
            let job = raw_job_key(c, NOT_UTF8)?;
            raw_bytes(c, &[b"ZADD", active.as_bytes(), b"0", NOT_UTF8, b"0", b"j"]).await?;
            raw_bytes(c, &[b"HSET", &job, b"state", b"active", b"attempt", b"1", b"payload", b"p", b"seq", b"2"])
                .await?;
            let j = c.queue.job_key("j")?;
            raw(&mut c.conn, &["HSET", &j, "state", "active", "attempt", "1", "payload", "p", "seq", "1"]).await?;
            let b = c.before().await;
            let r = c.queue.reap().await;
            c.record_showing(
                "reap: a lapsed id that is not UTF-8",
                format!("corrupt {active}"),
                said(&r, |ids| format!("reaped {}", ids.len())),
                b,
                Some(PROBE_CORRUPT_REFUSED),
            )
            .await;
            forget(c, &job, &active).await?;
        }
        23 => fifo_in_ties(c, &seq).await?,
        24 => {
            // Three ids sharing a score past 2^53, the middle one (by id)
            // with no seq: refused, though the others are fine, and
            // whichever of them is the oldest.
            let (j, k, l) = (c.queue.job_key("j")?, c.queue.job_key("k")?, c.queue.job_key("l")?);
            let score = "9007199254740992";
            raw(&mut c.conn, &["ZADD", &pending, score, "j", score, "k", score, "l"]).await?;
            for (key, s) in [(&j, "9007199254740994"), (&l, "9007199254740993")] {
                raw(&mut c.conn, &["HSET", key, "payload", "p", "state", "pending", "attempt", "0", "seq", s]).await?;
            }
            raw(&mut c.conn, &["HSET", &k, "payload", "p", "state", "pending", "attempt", "0"]).await?;
            c.keys.extend([k.clone(), l]);
            let b = c.before().await;
            let r = c.queue.claim(Ttl::from_millis(10_000)?).await;
            c.record_showing(
                "claim: a tie past 2^53 with a hash without its seq",
                format!("corrupt {k}"),
                said(&r, claimed),
                b,
                Some(PROBE_CORRUPT_REFUSED),
            )
            .await;
        }
        25 => {
            // An attempt at 2^63 - 1, which HINCRBY cannot advance: the
            // hash's fault (CORRUPT), not the server's.
            let j = c.queue.job_key("j")?;
            raw(&mut c.conn, &["ZADD", &pending, "1", "j"]).await?;
            raw(
                &mut c.conn,
                &["HSET", &j, "payload", "p", "state", "pending", "attempt", "9223372036854775807", "seq", "1"],
            )
            .await?;
            let b = c.before().await;
            let r = c.queue.claim(Ttl::from_millis(10_000)?).await;
            let (expected, shows) = (format!("corrupt {j}"), Some(PROBE_CORRUPT_REFUSED));
            c.record_showing("claim: an attempt at 2^63 - 1", expected, said(&r, claimed), b, shows).await;
        }
        _ => longest_lease(c).await?,
    }
    Ok(())
}

/// Sequence numbers that share a score, enqueued in the reverse of their
/// ids' order (which Redis uses among equal scores): at 2^53, across a
/// power of ten (16 and 17 digits), and three at 2^62 (1024 integers per
/// double there).
async fn fifo_in_ties(c: &mut Case<'_>, seq: &str) -> Result<(), Box<dyn std::error::Error>> {
    let runs: [(u64, &[&str]); 3] =
        [((1 << 53) - 1, &["z1", "y1"]), (9_999_999_999_999_998, &["b2", "a2"]), (1 << 62, &["b3", "c3", "a3"])];
    for (start, ids) in runs {
        raw(&mut c.conn, &["SET", seq, &start.to_string()]).await?;
        for id in ids {
            c.queue.enqueue(id, "p").await?;
        }
        let mut order = Vec::new();
        for _ in ids {
            let r = c.queue.claim(Ttl::from_millis(10_000)?).await;
            order.push(said(&r, |claim| claim.as_ref().map_or("nothing".into(), |c| c.id().to_string())));
        }
        let case = format!("claim: FIFO among sequence numbers that share a score, from {start}");
        // One claim whose answer a fault left unknown leaves the order
        // unknown too: the case judges nothing then (sweep seed 8000022 of
        // `job-queue`, where a held reply made it "b2 unknown").
        let got = if order.iter().any(|o| o == UNKNOWN) { UNKNOWN.to_string() } else { order.join(" ") };
        c.record(&case, ids.join(" "), got, None).await;
    }
    Ok(())
}

/// The longest lease a job takes (2^52 ms) ends at server time + lease,
/// read around the call; a longer one is refused unsent.
async fn longest_lease(c: &mut Case<'_>) -> Result<(), Box<dyn std::error::Error>> {
    c.queue.enqueue("j", "p").await?;
    let b = c.before().await;
    let r = c.queue.claim(Ttl::from_millis(Ttl::MAX_MILLIS)?).await;
    let (expected, shows) = ("invalid lease".to_string(), Some(PROBE_LEASE_REFUSED));
    c.record_showing("claim: a lease past the longest", expected, said(&r, claimed), b, shows).await;
    let lease = Ttl::from_millis(JobQueue::<()>::MAX_LEASE_MILLIS)?;
    let expected = "an end of TIME + lease".to_string();
    let before = server_ms(c).await?;
    let r = c.queue.claim(lease).await;
    let after = server_ms(c).await?;
    let judged = |end: u64| {
        let start = end.wrapping_sub(lease.as_millis());
        if (before..=after).contains(&start) {
            expected.clone()
        } else {
            format!("an end of {end}, {start} + lease, outside TIME {before}..={after}")
        }
    };
    let got = said(&r, |claim| claim.as_ref().map_or("nothing".into(), |c| judged(c.lease_until_ms())));
    c.record("claim: the longest lease", expected, got, None).await;
    Ok(())
}
