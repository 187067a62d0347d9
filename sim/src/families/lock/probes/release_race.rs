//! The release-race probe: a release sent while the lease is alive, whose
//! effect would land after the key expired and someone else was granted
//! the name.
//!
//! A release is one compare-and-delete at the server. Written as two
//! requests (`GET` the owner, then `DEL` when it matches), it is right on a
//! quiet day and wrong when the lease expires between the two and another
//! holder takes the name: the `DEL` then deletes the newer holder's key.
//! The workload meets that window only when a release happens to straddle
//! an expiry and a grant, which is rare. This probe stages it once per run:
//!
//! 1. the reader takes a short lease (60 ms) on a name of its own and,
//!    well inside it, releases it, with two one-shot delays queued on the
//!    key at the server: the first request naming the key waits 0 ms, the
//!    second 120 ms;
//! 2. meanwhile a rival (the reader again, through a `Lock` on a
//!    connection of its own, so nothing queues behind the release) acquires
//!    the name once the short lease has expired at the server, with a long
//!    TTL, and reads `remaining_ttl` after the release could have landed.
//!
//! A one-request release spends the first delay and the rival's acquire
//! the second (it is granted late, and the name is held when read). A
//! two-request release spends the second delay on its `DEL`, which runs
//! after the rival's grant: the read then says the name is free while the
//! rival holds it. Everything is recorded as the workload records its calls
//! ([`LockOp::Acquire`], [`LockOp::Release`], [`LockOp::RemainingTtl`]): whether the
//! answers fit is `checks::lock_replies`' business, which knows the
//! faults that make a lease end early. The rival releases its lease at the
//! end.
//!
//! An extend is a compare-and-pexpire with the same window: as `GET` then
//! `PEXPIRE`, the `PEXPIRE` that lands after the rival's grant re-arms the
//! rival's key with the first holder's TTL. So the probe stages the same
//! race a second time on another name, with an extend asking a TTL shorter
//! than what the lease has left (30 ms) in place of the
//! release: one request extends the short lease so that it still expires
//! before the rival acquires (recorded as the workload records its
//! extends, [`LockOp::Extend`]); two requests shorten the rival's lease, and
//! the rival's read finds the name free while it holds it.

use core::time::Duration;
use redis_primitives::{Lease, Lock, Ttl};

use crate::families::lock::api::{LOCK_ACQUIRE, LOCK_EXTEND, LOCK_RELEASE, LOCK_REMAINING_TTL};
use crate::families::lock::op::LockOp;
use crate::net::SimConnection;
use crate::world::{Actor, ActorResult};

/// The probe's own lock names: apart from the workload's and the other
/// probes'; one for each race.
const RELEASE_NAME: &str = "release-race-probe";
const EXTEND_NAME: &str = "extend-race-probe";
/// The short lease, released inside it.
const SHORT_TTL_MS: u64 = 60;
/// When the release is sent, after the short lease was granted.
const RELEASE_AFTER_MS: u64 = 20;
/// When the rival acquires, after the short lease's acquire was sent: past
/// its expiry at the server (the key's TTL counts from when the acquire
/// ran, at most a link's latency after the send).
const RIVAL_AFTER_MS: u64 = SHORT_TTL_MS + 15;
/// How long the second request naming the key waits at the server.
const SECOND_HOLD_MS: u64 = 120;
/// When the rival reads, after the short lease's acquire was sent: after
/// a second request held [`SECOND_HOLD_MS`] has run.
const READ_AFTER_MS: u64 = RELEASE_AFTER_MS + SECOND_HOLD_MS + 60;
/// The rival's lease: held well past its read.
const RIVAL_TTL_MS: u64 = 2_000;
/// What the extend race's extend asks: the short lease, extended at
/// [`RELEASE_AFTER_MS`], still expires before the rival acquires.
const EXTENDED_TTL_MS: u64 = 30;

/// The request that races the rival: the second of a two-request version
/// runs after the rival's grant.
#[derive(Debug, Clone, Copy)]
enum Step {
    /// `Lock::release`.
    Release,
    /// `Lock::extend` asking [`EXTENDED_TTL_MS`].
    Extend,
}

/// Runs the probe with `lock` as the first holder and `rival` (a `Lock`
/// configured the same way, on another connection) as the second (see the
/// module docs): the release race, then the extend race. Answers that
/// fail end a race; the checkers judge what was recorded.
pub(crate) async fn probe(
    actor: &Actor,
    lock: &Lock<SimConnection>,
    rival: &Lock<SimConnection>,
    node: usize,
) -> ActorResult {
    race(actor, lock, rival, node, RELEASE_NAME, Step::Release).await?;
    race(actor, lock, rival, node, EXTEND_NAME, Step::Extend).await
}

/// One race on `name`, with `step` as the first holder's request.
async fn race(
    actor: &Actor,
    lock: &Lock<SimConnection>,
    rival: &Lock<SimConnection>,
    node: usize,
    name: &str,
    step: Step,
) -> ActorResult {
    let sent = actor.now();
    let Some(mut short) = acquire(actor, lock, name, SHORT_TTL_MS).await? else { return Ok(()) };
    sleep_until(actor, sent + RELEASE_AFTER_MS).await;
    if actor.now() + 10 >= sent + SHORT_TTL_MS {
        // A fault stretched the acquire: the release would not be inside
        // the lease. Let it expire.
        return Ok(());
    }
    let key = short.key().to_string();
    actor.delay_next_request_mentioning(node, 0, &key);
    actor.delay_next_request_mentioning(node, SECOND_HOLD_MS, &key);
    let second = async {
        sleep_until(actor, sent + RIVAL_AFTER_MS).await;
        let Some(held) = acquire(actor, rival, name, RIVAL_TTL_MS).await? else { return Ok(()) };
        sleep_until(actor, sent + READ_AFTER_MS).await;
        let read = |ms| LockOp::RemainingTtl { name: name.into(), ms };
        let id = actor.call(LOCK_REMAINING_TTL, read(None));
        match rival.remaining_ttl(name).await {
            Ok(d) => actor.ok(id, read(d.map(|d| d.as_millis() as u64))),
            Err(e) => actor.errored(id, read(None), &e),
        }
        release(actor, rival, &held).await;
        Ok::<(), redis_primitives::Error>(())
    };
    let first = async {
        match step {
            Step::Release => release(actor, lock, &short).await,
            Step::Extend => extend(actor, lock, &mut short).await?,
        }
        Ok::<(), redis_primitives::Error>(())
    };
    let (first_done, rival_done) = tokio::join!(first, second);
    first_done?;
    rival_done?;
    Ok(())
}

/// `lock.acquire` of `name` for `ttl_ms`, recorded; the lease if granted.
pub(super) async fn acquire(
    actor: &Actor,
    lock: &Lock<SimConnection>,
    name: &str,
    ttl_ms: u64,
) -> redis_primitives::Result<Option<Lease>> {
    let op = |token, deadline| LockOp::Acquire { name: name.into(), ttl_ms, token, deadline };
    let id = actor.call(LOCK_ACQUIRE, op(None, None));
    match lock.acquire(name, Ttl::from_millis(ttl_ms)?).await {
        Ok(Some(l)) => {
            actor.ok(id, op(Some(l.token().get()), Some(actor.millis_of(l.local_deadline()))));
            Ok(Some(l))
        }
        Ok(None) => {
            actor.fail(id, op(None, None));
            Ok(None)
        }
        Err(e) => {
            actor.errored(id, op(None, None), &e);
            Ok(None)
        }
    }
}

/// `lock.extend` of `lease` asking [`EXTENDED_TTL_MS`], recorded as the
/// workload records its extends.
async fn extend(actor: &Actor, lock: &Lock<SimConnection>, lease: &mut Lease) -> redis_primitives::Result<()> {
    let (name, token, ttl_ms) = (lease.name().to_string(), lease.token().get(), EXTENDED_TTL_MS);
    let op = |deadline| LockOp::Extend { name: name.clone(), token: Some(token), ttl_ms, deadline };
    let id = actor.call(LOCK_EXTEND, op(None));
    let result = lock.extend(lease, Ttl::from_millis(ttl_ms)?).await;
    let deadline = Some(actor.millis_of(lease.local_deadline()));
    match result {
        Ok(true) => actor.ok(id, op(deadline)),
        Ok(false) => actor.fail(id, op(None)),
        // The deadline after an extend of unknown outcome, as the workload
        // records it.
        Err(e) => actor.errored(id, op(deadline), &e),
    }
    Ok(())
}

/// `lock.release` of `lease`, recorded.
pub(super) async fn release(actor: &Actor, lock: &Lock<SimConnection>, lease: &Lease) {
    let token = lease.token().get();
    let op = || LockOp::Release { name: lease.name().into(), token: Some(token) };
    let id = actor.call(LOCK_RELEASE, op());
    match lock.release(lease).await {
        Ok(true) => actor.ok(id, op()),
        Ok(false) => actor.fail(id, op()),
        Err(e) => actor.errored(id, op(), &e),
    }
}

async fn sleep_until(actor: &Actor, at: u64) {
    let now = actor.now();
    if at > now {
        tokio::time::sleep(Duration::from_millis(at - now)).await;
    }
}
