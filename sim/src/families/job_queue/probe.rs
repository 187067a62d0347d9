//! The job queue's probe: what faults never plant.
//!
//! Random faults never corrupt a key, enqueue an id twice, let a hundred
//! leases lapse at once or hand one queue's claim to another, so the
//! scripts' refusal branches and batch bound would go unjudged. The probe
//! (one actor, before the nemesis starts, each case on its own queue)
//! plants each such state with raw commands, calls the library, and records
//! what it answered and whether the keys changed: `JobOp::Probe`
//! events that [`super::check`] judges. Each case names what the library's
//! docs promise for it.

use core::time::Duration;
use redis::aio::ConnectionLike;
use redis_primitives::{Completion, Drift, Enqueued, Error, FencingToken, JobQueue, JobState, Ttl};
use serde::{Deserialize, Serialize};

mod edges;

use super::situations::{
    PROBE_ALREADY_KNOWN, PROBE_CORRUPT_REFUSED, PROBE_FOREIGN_CLAIM_REFUSED, PROBE_WRONG_TYPE_REFUSED,
};
use crate::checker::Allowance;
use crate::net::SimConnection;
use crate::outcome::SituationName;
use crate::world::{Actor, ActorResult};

/// One probed case: what was expected, what came back, and whether the
/// keys were left as they were (when that was promised).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Probed {
    /// What was planted and called.
    pub case: String,
    /// The documented answer.
    pub expected: String,
    /// The answer.
    pub got: String,
    /// The case's keys before the call (when the call must change nothing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
    /// The same keys after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    /// The situation a case shows when answered as documented with its
    /// keys unchanged (the promise table's path for its row). Not part of
    /// the history's JSON, whose digests stay as they were.
    #[serde(skip)]
    pub shows: Option<SituationName>,
    /// A live run's case about an instant: by how much the answer missed
    /// it (`Violation::missed_by`). Never set in the simulation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missed_by: Option<Duration>,
}

/// What [`Probed::got`] holds when a fault left the answer unknown (a
/// timeout, a lost connection): not judged.
pub(super) const UNKNOWN: &str = "unknown";

/// An answer in the probe's words: `corrupt <key>`, `wrongtype`,
/// `invalid <what>`, what the call returned, or [`UNKNOWN`].
fn said<T>(r: &Result<T, Error>, ok: impl Fn(&T) -> String) -> String {
    match r {
        Ok(v) => ok(v),
        Err(e) if e.outcome_is_unknown() => UNKNOWN.to_string(),
        Err(Error::InvalidInput { what, .. }) => format!("invalid {what}"),
        Err(Error::CorruptState { key, .. }) => format!("corrupt {key}"),
        Err(Error::WrongType { .. }) => "wrongtype".to_string(),
        Err(e) => format!("error {e}"),
    }
}

/// How long case 19 holds its extension's reply at the server: past the
/// simulation's response timeout (250 ms), so the caller hears an error.
const LOST_REPLY_MS: u64 = 600;

/// What case 19 expects of the claim's local deadline.
const WITHIN_SHORTER: &str = "a deadline within the shorter lease";

/// The keys' types and contents, as one comparable line.
async fn fingerprint(conn: &mut SimConnection, keys: &[String]) -> redis::RedisResult<String> {
    let mut out = String::new();
    for k in keys {
        let kind: String = redis::cmd("TYPE").arg(k).query_async(conn).await?;
        let content: Vec<String> = match kind.as_str() {
            "string" => vec![redis::cmd("GET").arg(k).query_async(conn).await?],
            "hash" => {
                let fields = lossy(redis::cmd("HGETALL").arg(k).query_async(conn).await?);
                // Pairs, sorted by field: HGETALL's order is not part of the state.
                let mut pairs: Vec<String> = fields.chunks(2).map(|p| p.join("=")).collect();
                pairs.sort();
                pairs
            }
            "zset" => lossy(redis::cmd("ZRANGE").arg(k).arg(0).arg(-1).arg("WITHSCORES").query_async(conn).await?),
            _ => Vec::new(),
        };
        out.push_str(&format!("{k}:{kind}[{}] ", content.join(",")));
    }
    Ok(out)
}

/// Members and fields as text, whatever their bytes: a planted id need
/// not be UTF-8, and the keys holding it must still be compared.
fn lossy(items: Vec<Vec<u8>>) -> Vec<String> {
    items.into_iter().map(|b| String::from_utf8_lossy(&b).into_owned()).collect()
}

async fn raw(conn: &mut SimConnection, args: &[&str]) -> redis::RedisResult<()> {
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    conn.req_packed_command(&cmd).await.map(|_| ())
}

struct Case<'a> {
    actor: &'a Actor,
    conn: SimConnection,
    queue: JobQueue<SimConnection>,
    keys: Vec<String>,
}

impl Case<'_> {
    /// Records one answer; with `unchanged`, the keys' state before the
    /// call, compared after.
    async fn record(&mut self, case: &str, expected: String, got: String, before: Option<String>) {
        self.record_showing(case, expected, got, before, None).await;
    }

    /// [`Case::record`], for a case that shows the situation `shows` when
    /// it is answered as expected and leaves its keys as they were.
    async fn record_showing(
        &mut self,
        case: &str,
        expected: String,
        got: String,
        before: Option<String>,
        shows: Option<SituationName>,
    ) {
        let after = match before {
            Some(_) => fingerprint(&mut self.conn, &self.keys).await.ok(),
            None => None,
        };
        let p = Probed { case: case.to_string(), expected, got, before, after, shows, missed_by: None };
        self.actor.observe(super::JobOp::Probe(p));
    }

    async fn before(&mut self) -> Option<String> {
        fingerprint(&mut self.conn, &self.keys).await.ok()
    }
}

/// Runs every case (see the module docs); a case whose planting fails (a
/// fault cut it short) is skipped, not judged.
pub(super) async fn probe(actor: Actor) -> ActorResult {
    settings(&actor)?;
    for n in (0..20u32).chain(edges::CASES) {
        // Its planted states make the scripts answer with error replies:
        // expected here, so not recorded for `unexpected-errors`.
        let conn = actor.connection_expecting_errors(0);
        let queue = JobQueue::new(conn.clone(), &format!("probe-{n}"))?;
        let j = queue.job_key("j")?;
        let keys = vec![queue.pending_key(), queue.active_key(), queue.seq_key(), j.clone()];
        let mut c = Case { actor: &actor, conn, queue, keys };
        let done = if edges::CASES.contains(&n) { edges::one(&mut c, n).await } else { one(&mut c, n, &j).await };
        if done.is_err() {
            actor.note(format!("job probe case {n}: planting failed, skipped"));
        }
    }
    Ok(())
}

/// A queue built with a name and a drift of the seed's reports them back,
/// and names its keys as documented (`jobq:{name}:…`): what user code and
/// operators go by. Nothing is sent.
fn settings(actor: &Actor) -> Result<(), Error> {
    use rand::Rng;
    let mut rng = actor.rng_for("job-probe-settings");
    let name = format!("settings-{}", rng.random_range(0..1000u32));
    // Never the default (10 ‰ + 2 ms): a reading of the default would pass.
    let (per_mille, constant_ms) = (rng.random_range(11..=50u32), rng.random_range(0..=5u64));
    let drift = Drift::new(per_mille, Duration::from_millis(constant_ms))?;
    let queue = JobQueue::new(actor.connection(0), &name)?.with_drift(drift);
    let base = format!("jobq:{{{name}}}");
    actor.configured(
        "JobQueue",
        &[
            ("name", queue.name().to_string(), name.clone()),
            ("drift", format!("{:?}", queue.drift()), format!("{drift:?}")),
            ("pending_key", queue.pending_key(), format!("{base}:pending")),
            ("active_key", queue.active_key(), format!("{base}:active")),
            ("seq_key", queue.seq_key(), format!("{base}:seq")),
            ("job_key", queue.job_key("j")?, format!("{base}:job:j")),
            // Ids follow the rules of names: neither empty nor holding a brace.
            ("job_key(\"\")", said(&queue.job_key(""), String::clone), "invalid job id".into()),
            ("job_key(\"a{b\")", said(&queue.job_key("a{b"), String::clone), "invalid job id".into()),
            ("job_key(\"a}b\")", said(&queue.job_key("a}b"), String::clone), "invalid job id".into()),
        ],
    );
    Ok(())
}

/// Case `n` of the probe's own numbering (the others are in [`edges`]).
async fn one(c: &mut Case<'_>, n: u32, j: &str) -> Result<(), Box<dyn std::error::Error>> {
    match n {
        0..=4 | 6..=12 => corrupt(c, n, j).await,
        5 | 14..=18 => lifecycle(c, n).await,
        19 => lost_shorter_extension(c, j).await,
        _ => reap_batch(c).await,
    }
}

/// Keys holding what the library never writes: each call is refused with
/// a typed error naming the key, and nothing changes.
async fn corrupt(c: &mut Case<'_>, n: u32, j: &str) -> Result<(), Box<dyn std::error::Error>> {
    let (pending, active, seq) = (c.keys[0].clone(), c.keys[1].clone(), c.keys[2].clone());
    let lease = Ttl::from_millis(10_000)?;
    let enqueued = |e: &Enqueued| format!("{e:?}");
    let corrupt = format!("corrupt {j}");
    match n {
        0 => {
            raw(&mut c.conn, &["ZADD", &pending, "1", "j"]).await?;
            let b = c.before().await;
            let r = c.queue.enqueue("j", "p").await;
            let shows = Some(PROBE_CORRUPT_REFUSED);
            c.record_showing("enqueue: an id pending without its hash", corrupt, said(&r, enqueued), b, shows).await;
        }
        1 => {
            raw(&mut c.conn, &["HSET", &seq, "f", "1"]).await?;
            let b = c.before().await;
            let r = c.queue.enqueue("j", "p").await;
            let (expected, shows) = ("wrongtype".to_string(), Some(PROBE_WRONG_TYPE_REFUSED));
            c.record_showing("enqueue: a counter of the wrong type", expected, said(&r, enqueued), b, shows).await;
        }
        2 | 3 => {
            let value = if n == 2 { "abc" } else { "-1" };
            raw(&mut c.conn, &["SET", &seq, value]).await?;
            let b = c.before().await;
            let r = c.queue.enqueue("j", "p").await;
            let case = format!("enqueue: a counter holding {value}");
            c.record_showing(&case, format!("corrupt {seq}"), said(&r, enqueued), b, Some(PROBE_CORRUPT_REFUSED)).await;
        }
        4 => {
            raw(&mut c.conn, &["HSET", j, "x", "1"]).await?;
            let b = c.before().await;
            let r = c.queue.enqueue("j", "p").await;
            let (expected, shows) = ("AlreadyKnown".to_string(), Some(PROBE_ALREADY_KNOWN));
            c.record_showing("enqueue: an id with a one-field hash", expected, said(&r, enqueued), b, shows).await;
        }
        6 | 7 => {
            raw(&mut c.conn, &["ZADD", &pending, "1", "j"]).await?;
            if n == 6 {
                raw(&mut c.conn, &["HSET", j, "attempt", "0", "state", "pending", "seq", "1"]).await?;
            } else {
                raw(&mut c.conn, &["HSET", j, "attempt", "0", "state", "pending", "seq", "x", "payload", "p"]).await?;
            }
            let b = c.before().await;
            let r = c.queue.claim(lease).await;
            let case = if n == 6 { "claim: a hash without its payload" } else { "claim: a seq that is not a number" };
            let got = said(&r, |c| format!("claimed {:?}", c.as_ref().map(|c| c.id().to_string())));
            c.record_showing(case, corrupt, got, b, Some(PROBE_CORRUPT_REFUSED)).await;
        }
        8 | 9 => {
            c.queue.enqueue("j", "p").await?;
            let Some(mut claim) = c.queue.claim(lease).await? else { return Ok(()) };
            raw(&mut c.conn, &["ZREM", &active, "j"]).await?;
            let b = c.before().await;
            if n == 8 {
                let r = c.queue.complete(&claim).await;
                let got = said(&r, |x| format!("{x:?}"));
                let case = "complete: active but not in the active set";
                c.record_showing(case, corrupt, got, b, Some(PROBE_CORRUPT_REFUSED)).await;
            } else {
                let r = c.queue.extend(&mut claim, lease).await;
                let got = said(&r, |x| format!("{x:?}"));
                let case = "extend: active but not in the active set";
                c.record_showing(case, corrupt, got, b, Some(PROBE_CORRUPT_REFUSED)).await;
            }
        }
        _ => {
            raw(&mut c.conn, &["ZADD", &active, "0", "j"]).await?;
            match n {
                10 => raw(&mut c.conn, &["HSET", j, "state", "active", "attempt", "1", "payload", "p"]).await?,
                11 => {
                    raw(&mut c.conn, &["HSET", j, "state", "active", "attempt", "1", "payload", "p", "seq", "x"])
                        .await?
                }
                _ => {
                    raw(&mut c.conn, &["HSET", j, "state", "active", "attempt", "1", "payload", "p", "seq", "1"])
                        .await?;
                    raw(&mut c.conn, &["SET", &pending, "not a set"]).await?;
                }
            }
            let b = c.before().await;
            let r = c.queue.reap().await;
            let (case, expected, shows) = match n {
                10 => ("reap: a lapsed id without a seq", corrupt, PROBE_CORRUPT_REFUSED),
                11 => ("reap: a lapsed id whose seq is not a number", corrupt, PROBE_CORRUPT_REFUSED),
                _ => ("reap: a pending set of the wrong type", "wrongtype".to_string(), PROBE_WRONG_TYPE_REFUSED),
            };
            c.record_showing(case, expected, said(&r, |ids| format!("reaped {}", ids.len())), b, Some(shows)).await;
        }
    }
    Ok(())
}

/// A job's life on a clean queue, one call at a time: enqueue and claim,
/// completions once and stale, another queue's claim, a reaped job's place
/// and a reaped claim's extension.
async fn lifecycle(c: &mut Case<'_>, n: u32) -> Result<(), Box<dyn std::error::Error>> {
    let lease = Ttl::from_millis(10_000)?;
    let enqueued = |e: &Enqueued| format!("{e:?}");
    match n {
        5 => {
            let r = c.queue.enqueue("j", "payload j").await;
            c.record("enqueue: a new id", "Added".into(), said(&r, enqueued), None).await;
            let b = c.before().await;
            let r = c.queue.enqueue("j", "another").await;
            let (expected, shows) = ("AlreadyKnown".to_string(), Some(PROBE_ALREADY_KNOWN));
            c.record_showing("enqueue: the same id again", expected, said(&r, enqueued), b, shows).await;
            let r = c.queue.claim(lease).await;
            let claimed = |c: &Option<redis_primitives::Claim>| match c {
                Some(c) => {
                    format!("{} attempt {} payload {}", c.id(), c.attempt(), String::from_utf8_lossy(c.payload()))
                }
                None => "nothing".to_string(),
            };
            c.record("claim: the job", "j attempt 1 payload payload j".into(), said(&r, claimed), None).await;
        }
        14 => {
            // Completed once: a second completion of the same claim is refused.
            c.queue.enqueue("j", "p").await?;
            let Some(claim) = c.queue.claim(lease).await? else { return Ok(()) };
            let r = c.queue.complete(&claim).await;
            c.record("complete: a live claim", "Accepted".into(), said(&r, |x| format!("{x:?}")), None).await;
            let b = c.before().await;
            let r = c.queue.complete(&claim).await;
            let expected = format!(
                "{:?}",
                Completion::Rejected { current_attempt: Some(FencingToken::new(1)), state: Some(JobState::Done) }
            );
            c.record("complete: the same claim again", expected, said(&r, |x| format!("{x:?}")), b).await;
        }
        15 => {
            // A stale claim's completion while the job's next claim is active.
            c.queue.enqueue("j", "p").await?;
            let Some(stale) = c.queue.claim(Ttl::from_millis(1)?).await? else { return Ok(()) };
            tokio::time::sleep(core::time::Duration::from_millis(5)).await;
            if c.queue.reap().await?.is_empty() {
                return Ok(());
            }
            let Some(_current) = c.queue.claim(lease).await? else { return Ok(()) };
            let b = c.before().await;
            let r = c.queue.complete(&stale).await;
            let expected = format!(
                "{:?}",
                Completion::Rejected { current_attempt: Some(FencingToken::new(2)), state: Some(JobState::Active) }
            );
            c.record("complete: a stale claim while the next is active", expected, said(&r, |x| format!("{x:?}")), b)
                .await;
        }
        16 => {
            // A claim handed out by another queue: refused before anything
            // is sent (it would address this queue's job with its key).
            c.queue.enqueue("j", "p").await?;
            let Some(mut claim) = c.queue.claim(lease).await? else { return Ok(()) };
            let other = JobQueue::new(c.conn.clone(), &format!("{}-other", c.queue.name()))?;
            let b = c.before().await;
            let r = other.complete(&claim).await;
            let (expected, shows) = ("invalid claim".to_string(), Some(PROBE_FOREIGN_CLAIM_REFUSED));
            let got = said(&r, |x| format!("{x:?}"));
            c.record_showing("complete: a claim of another queue", expected, got, b, shows).await;
            let b = c.before().await;
            let r = other.extend(&mut claim, lease).await;
            let (expected, shows) = ("invalid claim".to_string(), Some(PROBE_FOREIGN_CLAIM_REFUSED));
            let got = said(&r, |x| format!("{x:?}"));
            c.record_showing("extend: a claim of another queue", expected, got, b, shows).await;
        }
        17 => {
            // A reaped job goes back to its own place: before a job
            // enqueued after it, which is still waiting.
            c.queue.enqueue("j", "p").await?;
            c.queue.enqueue("k", "p").await?;
            let Some(first) = c.queue.claim(Ttl::from_millis(1)?).await? else { return Ok(()) };
            tokio::time::sleep(core::time::Duration::from_millis(5)).await;
            if first.id() != "j" || c.queue.reap().await? != ["j"] {
                return Ok(());
            }
            let r = c.queue.claim(lease).await;
            let claimed = |c: &Option<redis_primitives::Claim>| match c {
                Some(c) => format!("{} attempt {}", c.id(), c.attempt()),
                None => "nothing".to_string(),
            };
            c.record("claim: after a reap, with a later job waiting", "j attempt 2".into(), said(&r, claimed), None)
                .await;
        }
        _ => {
            // A claim whose lease lapsed and whose job was reaped, before
            // anyone claims it again: the job is pending with the claim's
            // own attempt, and only its state tells the extension apart.
            c.queue.enqueue("j", "p").await?;
            let Some(mut stale) = c.queue.claim(Ttl::from_millis(1)?).await? else { return Ok(()) };
            tokio::time::sleep(core::time::Duration::from_millis(5)).await;
            if c.queue.reap().await?.is_empty() {
                return Ok(());
            }
            let b = c.before().await;
            let r = c.queue.extend(&mut stale, lease).await;
            c.record(
                "extend: a reaped claim, its job pending again",
                "false".into(),
                said(&r, |x| format!("{x:?}")),
                b,
            )
            .await;
        }
    }
    Ok(())
}

/// An extension to a shorter lease whose reply is lost after it ran.
async fn lost_shorter_extension(c: &mut Case<'_>, j: &str) -> Result<(), Box<dyn std::error::Error>> {
    let lease = Ttl::from_millis(10_000)?;
    // An extension to a shorter lease whose reply is lost after it
    // ran (held at the server past the response timeout): the
    // server's lease now ends sooner, so the claim must not trust
    // itself past `sent + usable(short)` (the library's docs of
    // `JobQueue::extend` on `Err`).
    c.queue.enqueue("j", "p").await?;
    let Some(mut claim) = c.queue.claim(lease).await? else { return Ok(()) };
    let short = Ttl::from_millis(1000)?;
    // The probe's queue has the default drift: the harness's own
    // model of it, not the library's arithmetic, gives the bound.
    let usable_ns = Allowance::DEFAULT.deadline_ns(0, short.as_millis());
    let by = tokio::time::Instant::now() + Duration::from_nanos(usable_ns as u64);
    c.actor.delay_next_reply_mentioning(0, LOST_REPLY_MS, j);
    let r = c.queue.extend(&mut claim, short).await;
    if !r.as_ref().is_err_and(Error::outcome_is_unknown) {
        return Err(format!("the extension's reply was not lost: {r:?}").into());
    }
    let past = claim.local_deadline().saturating_duration_since(by);
    let got = if past.is_zero() {
        WITHIN_SHORTER.to_string()
    } else {
        format!("trusted until {} µs past it", past.as_micros())
    };
    // Live, the library reads the clock for its send a moment after the
    // probe read it for `by`: a miss that small is the run's precision.
    let missed_by = (crate::live::is_live() && !past.is_zero()).then_some(past);
    let case = "extend: a shorter lease, its reply lost".to_string();
    let expected = WITHIN_SHORTER.to_string();
    let p = Probed { case, expected, got, before: None, after: None, shows: None, missed_by };
    c.actor.observe(super::JobOp::Probe(p));
    Ok(())
}

/// More lapsed leases than one reap takes.
async fn reap_batch(c: &mut Case<'_>) -> Result<(), Box<dyn std::error::Error>> {
    let active = c.keys[1].clone();
    // 101 leases lapsed at once: a reap takes at most 100, the next the rest.
    let mut pipe = redis::pipe();
    for i in 0..101u32 {
        let id = format!("j{i}");
        pipe.cmd("ZADD").arg(&active).arg(0).arg(&id).ignore();
        pipe.cmd("HSET")
            .arg(c.queue.job_key(&id)?)
            .arg(&["state", "active", "attempt", "1", "payload", "p", "seq"])
            .arg(i + 1)
            .ignore();
    }
    let _: () = pipe.query_async(&mut c.conn).await?;
    let r = c.queue.reap().await;
    c.record(
        "reap: 101 lapsed leases, first call",
        "reaped 100".into(),
        said(&r, |ids| format!("reaped {}", ids.len())),
        None,
    )
    .await;
    let r = c.queue.reap().await;
    c.record(
        "reap: 101 lapsed leases, second call",
        "reaped 1".into(),
        said(&r, |ids| format!("reaped {}", ids.len())),
        None,
    )
    .await;
    Ok(())
}
