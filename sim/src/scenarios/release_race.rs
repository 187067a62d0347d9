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
//! ([`Op::Acquire`], [`Op::Release`], [`Op::RemainingTtl`]): whether the
//! answers fit is `checker::lock_replies`' business, which knows the
//! faults that make a lease end early. The rival releases its lease at the
//! end.

use core::time::Duration;
use redis_primitives::{Lease, Lock, Ttl};

use crate::history::Op;
use crate::net::SimConnection;
use crate::world::{Actor, ActorResult};

/// The probe's own lock name: apart from the workload's and the other
/// probes'.
const NAME: &str = "release-race-probe";
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

/// Runs the probe with `lock` as the first holder and `rival` (a `Lock`
/// configured the same way, on another connection) as the second (see the
/// module docs). Answers that fail end the probe; the checkers judge what
/// was recorded.
pub async fn probe(actor: &Actor, lock: &Lock<SimConnection>, rival: &Lock<SimConnection>, node: usize) -> ActorResult {
    let sent = actor.now();
    let Some(short) = acquire(actor, lock, SHORT_TTL_MS).await? else { return Ok(()) };
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
        let Some(held) = acquire(actor, rival, RIVAL_TTL_MS).await? else { return Ok(()) };
        sleep_until(actor, sent + READ_AFTER_MS).await;
        let read = |ms| Op::RemainingTtl { name: NAME.into(), ms };
        let id = actor.call("Lock::remaining_ttl", read(None));
        match rival.remaining_ttl(NAME).await {
            Ok(d) => actor.ok(id, read(d.map(|d| d.as_millis() as u64))),
            Err(e) => actor.errored(id, read(None), &e),
        }
        release(actor, rival, &held).await;
        Ok::<(), redis_primitives::Error>(())
    };
    let ((), rival_done) = tokio::join!(release(actor, lock, &short), second);
    rival_done?;
    Ok(())
}

/// `lock.acquire` of [`NAME`] for `ttl_ms`, recorded; the lease if granted.
async fn acquire(actor: &Actor, lock: &Lock<SimConnection>, ttl_ms: u64) -> redis_primitives::Result<Option<Lease>> {
    let op = |token, deadline| Op::Acquire { name: NAME.into(), ttl_ms, token, deadline };
    let id = actor.call("Lock::acquire", op(None, None));
    match lock.acquire(NAME, Ttl::from_millis(ttl_ms)?).await {
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

/// `lock.release` of `lease`, recorded.
async fn release(actor: &Actor, lock: &Lock<SimConnection>, lease: &Lease) {
    let token = lease.token().get();
    let op = || Op::Release { name: NAME.into(), token: Some(token) };
    let id = actor.call("Lock::release", op());
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
