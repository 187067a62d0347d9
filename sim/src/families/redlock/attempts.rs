//! What a client does with each attempt: acquire (once or with retries),
//! then, holding the lease, extend, pause past it or release late; every
//! call recorded, and the accessors user code decides with read back.

use std::sync::atomic::{AtomicBool, Ordering};

use core::time::Duration;
use rand::rngs::StdRng;
use rand::Rng;
use redis_primitives::redlock::{Acquisition, Extension, MasterVote, Redlock, RedlockLease, RefusalReason, Vote};
use redis_primitives::Retry;
use redis_primitives_naive::NaiveRedlock;

use super::op::{RedlockOp, RedlockRound};
use super::record::{acquire_op, answers, lease_round, refusal_round};
use super::timing::{net_for, sleep_until_shifted, Timing};
use super::{MASTERS, NAME};
use crate::families::redlock::api::{
    NAIVE_REDLOCK_ACQUIRE, NAIVE_REDLOCK_RELEASE, REDLOCK_ACQUIRE, REDLOCK_ACQUIRE_WITH_RETRY, REDLOCK_EXTEND,
    REDLOCK_RELEASE,
};
use crate::history::{FaultRecord, Op};
use crate::net::SimConnection;
use crate::outcome::SituationName;
use crate::world::Actor;

/// The accessors user code decides with, against the variant and the
/// masters' answers; reported (as a `configuration` read-back) only when
/// one differs, so a correct run's history does not grow with them.
fn check_accessors(actor: &Actor, a: &Acquisition) {
    let held = matches!(a, Acquisition::Held(_));
    let mut fields = vec![
        ("Acquisition::is_held", a.is_held().to_string(), held.to_string()),
        ("Acquisition::into_lease", a.clone().into_lease().is_some().to_string(), held.to_string()),
        ("Acquisition::refusal", a.refusal().is_some().to_string(), (!held).to_string()),
    ];
    match a {
        Acquisition::Held(lease) => {
            let yes = lease.masters().iter().filter(|v| v.vote.is_yes()).count();
            fields.push(("RedlockLease::votes", lease.votes().to_string(), yes.to_string()));
            fields.push(("RedlockLease::quorum", lease.quorum().to_string(), (MASTERS / 2 + 1).to_string()));
        }
        Acquisition::Refused(r) => {
            // TTL − elapsed − drift, when positive.
            let left = r.ttl.as_duration().checked_sub(r.elapsed).and_then(|d| d.checked_sub(r.drift));
            let left = left.filter(|d| !d.is_zero());
            fields.push(("Refusal::validity_left", format!("{:?}", r.validity_left()), format!("{left:?}")));
        }
    }
    actor.configured_if_differs("Acquisition", &fields);
}

/// One `acquire` (or `acquire_with_retry`) of the production Redlock, and
/// what the holder does with a grant.
pub(super) async fn correct_attempt(
    actor: &Actor,
    r: &Redlock<SimConnection>,
    full: bool,
    retry: &Retry,
    rng: &mut StdRng,
    first_grant: &AtomicBool,
    timing: Timing,
) {
    let with_retry = full && actor.index() > 0 && rng.random_bool(0.3);
    let invoked = actor.now();
    let api = if with_retry { REDLOCK_ACQUIRE_WITH_RETRY } else { REDLOCK_ACQUIRE };
    let id = actor.call(api, acquire_op(None, None, None));
    let result = if with_retry { r.acquire_with_retry(NAME, retry).await } else { r.acquire(NAME).await };
    if let Ok(a) = &result {
        check_accessors(actor, a);
        match a {
            Acquisition::Held(lease) => check_timeouts(actor, r, &[lease.masters()]),
            Acquisition::Refused(refusal) => check_timeouts(actor, r, &[&refusal.masters, &refusal.cleanup]),
        }
    }
    let lease = match result {
        Ok(Acquisition::Held(lease)) => lease,
        Ok(Acquisition::Refused(refusal)) => {
            let missing = refusal.masters.iter().filter(|v| matches!(v.vote, Vote::TimedOut | Vote::Error(_))).count();
            match refusal.reason {
                RefusalReason::TooSlow => actor.reached(SituationName::new("acquire-refused-validity-exhausted")),
                RefusalReason::NoMajority if missing > MASTERS / 2 => {
                    actor.reached(SituationName::new("majority-partitioned-refused"))
                }
                _ => {}
            }
            // A refusal is definite: every master was asked to drop our key.
            actor.fail(id, acquire_op(Some(refusal.votes as u32), None, Some(refusal_round(&refusal))));
            return;
        }
        Err(e) => {
            actor.note(format!("redlock acquire: {e}"));
            actor.errored(id, acquire_op(None, None, None), &e);
            return;
        }
    };
    let round = lease_round(actor, &lease);
    let until = round.valid_until.unwrap_or(invoked);
    if round.answers.contains(['t', 'e']) {
        actor.reached(SituationName::new("minority-master-partitioned-still-granted"));
    }
    if with_retry && round.started_at.is_some_and(|s| s > invoked) {
        actor.reached(SituationName::new("retry-acquired-after-contention"));
    }
    actor.ok(id, acquire_op(Some(lease.votes() as u32), Some(until.saturating_sub(invoked)), Some(round)));
    if actor.index() == 0 {
        first_grant.store(true, Ordering::Release);
    }
    if full {
        hold(actor, r, lease, id.0, rng, timing).await;
    } else {
        // Work until shortly before the end of the believed validity.
        sleep_until_shifted(lease.valid_until(), -rng.random_range(5..=30)).await;
        release(actor, r, &lease, id.0).await;
    }
}

/// What a holder of the production Redlock does: extend (in time, at the
/// edge of its validity, or after a pause that outlived it), then release
/// (usually in time, sometimes after the validity or the keys' TTL).
async fn hold(
    actor: &Actor,
    r: &Redlock<SimConnection>,
    mut lease: RedlockLease,
    lease_id: u64,
    rng: &mut StdRng,
    timing: Timing,
) {
    let style = rng.random_range(0..100u32);
    if style < 12 {
        // A process pause (GC, suspended VM) right after the grant, longer
        // than the validity: on resume the lease must not be trusted, and
        // an extend must be refused.
        let d = lease.remaining().as_millis() as u64 + rng.random_range(5..=150);
        actor.observe(Op::Fault(FaultRecord::HolderPause { process: actor.name().to_string(), ms: d }));
        actor.pause().pause_for(Duration::from_millis(d));
        tokio::time::sleep(Duration::from_millis(1)).await;
        if !lease.is_trusted() {
            actor.reached(SituationName::new("lease-expired-while-paused"));
        }
        extend(actor, r, &mut lease, lease_id).await;
        release(actor, r, &lease, lease_id).await;
        return;
    }
    if style < 27 {
        // Extend within a few ms of the end of the validity, either side.
        sleep_until_shifted(lease.valid_until(), rng.random_range(-3..=3)).await;
        if !extend(actor, r, &mut lease, lease_id).await {
            release(actor, r, &lease, lease_id).await;
            return;
        }
    } else {
        for _ in 0..rng.random_range(0..=2u32) {
            sleep_until_shifted(lease.valid_until(), -rng.random_range(5..=40)).await;
            if !extend(actor, r, &mut lease, lease_id).await {
                release(actor, r, &lease, lease_id).await;
                return;
            }
        }
    }
    if rng.random_bool(0.15) {
        // Release late: after the validity, sometimes after the keys' TTL.
        sleep_until_shifted(lease.valid_until(), rng.random_range(0..=timing.ttl_ms as i64 + 50)).await;
    } else {
        sleep_until_shifted(lease.valid_until(), -rng.random_range(5..=30)).await;
    }
    release(actor, r, &lease, lease_id).await;
}

/// `Redlock::extend`, recorded; whether it was extended.
async fn extend(actor: &Actor, r: &Redlock<SimConnection>, lease: &mut RedlockLease, lease_id: u64) -> bool {
    let op = |round| RedlockOp::RedlockExtend { name: NAME.into(), lease: lease_id, round };
    let id = actor.call(REDLOCK_EXTEND, op(None));
    let extension = r.extend(lease).await;
    match &extension {
        Extension::Extended { .. } => check_timeouts(actor, r, &[lease.masters()]),
        Extension::Refused(refusal) => check_timeouts(actor, r, &[&refusal.masters, &refusal.cleanup]),
    }
    // As `check_accessors`: the variant, its accessor, and the validity it
    // names against the lease's own.
    let extended = match &extension {
        Extension::Extended { validity } => Some(*validity),
        Extension::Refused(_) => None,
    };
    actor.configured_if_differs(
        "Extension",
        &[
            ("Extension::is_extended", extension.is_extended().to_string(), extended.is_some().to_string()),
            (
                "RedlockLease::validity after an extend",
                format!("{:?}", extended.map(|_| lease.validity())),
                format!("{extended:?}"),
            ),
        ],
    );
    match extension {
        Extension::Extended { .. } => {
            actor.reached(SituationName::new("extension-confirmed"));
            actor.ok(id, op(Some(lease_round(actor, lease))));
            true
        }
        Extension::Refused(refusal) => {
            match refusal.reason {
                RefusalReason::Expired => actor.reached(SituationName::new("extension-refused-after-expiry")),
                RefusalReason::NoMajority => actor.reached(SituationName::new("extension-refused-no-majority")),
                RefusalReason::TooSlow => actor.reached(SituationName::new("extension-refused-too-slow")),
            }
            // The lease is lost: it must say so itself, its trust ending no
            // later than this extend began.
            let round = RedlockRound {
                valid_until: Some(actor.millis_of(lease.valid_until())),
                trusted_after: Some(lease.is_trusted()),
                ..refusal_round(&refusal)
            };
            actor.fail(id, op(Some(round)));
            false
        }
    }
}

/// `Redlock::release`, recorded with each master's answer.
async fn release(actor: &Actor, r: &Redlock<SimConnection>, lease: &RedlockLease, lease_id: u64) {
    let op = |round| RedlockOp::RedlockRelease { name: NAME.into(), lease: Some(lease_id), round };
    if !lease.is_trusted() {
        actor.reached(SituationName::new("release-after-expiry"));
    }
    let id = actor.call(REDLOCK_RELEASE, op(None));
    let released = r.release(lease).await;
    check_timeouts(actor, r, &[&released.masters]);
    // `deleted` counts the masters whose compare-and-delete removed our key:
    // the yes votes, not every answer.
    let yes = released.masters.iter().filter(|v| v.vote.is_yes()).count();
    actor.configured_if_differs("Released", &[("Released::deleted", released.deleted.to_string(), yes.to_string())]);
    actor.ok(id, op(Some(RedlockRound { answers: answers(&released.masters), ..RedlockRound::default() })));
}

/// A `TimedOut` vote comes from a timer: the connection's response timeout
/// (`net_for`) or the library's own, so never sooner than the first of them
/// after the round started. An error that is not a timeout (a dropped
/// connection) reported as one would hide a master that answered. Reported
/// only when one differs.
fn check_timeouts(actor: &Actor, r: &Redlock<SimConnection>, rounds: &[&[MasterVote]]) {
    let master_timeout_ms = u64::try_from(r.master_timeout().as_millis()).unwrap_or(u64::MAX);
    let first_timer = net_for(master_timeout_ms).response_timeout.min(r.master_timeout());
    for v in rounds.iter().flat_map(|votes| votes.iter()) {
        if matches!(v.vote, Vote::TimedOut) && v.latency < first_timer {
            actor.configured(
                &format!("MasterVote of master {}", v.master),
                &[("TimedOut after at least", format!("{:?}", v.latency), format!("{first_timer:?}"))],
            );
        }
    }
}

/// One attempt of the naive Redlock: acquire, work until shortly before
/// what it believes is the end of its lease, release.
pub(super) async fn naive_attempt(
    actor: &Actor,
    r: &NaiveRedlock<SimConnection>,
    rng: &mut StdRng,
    first_grant: &AtomicBool,
) {
    let invoked = actor.now();
    let id = actor.call(NAIVE_REDLOCK_ACQUIRE, acquire_op(None, None, None));
    let lease = match r.acquire(NAME).await {
        Ok(Some(lease)) => lease,
        // The naive client does not say why; no round to judge.
        Ok(None) => return actor.fail(id, acquire_op(None, None, None)),
        Err(e) => {
            actor.note(format!("redlock acquire: {e}"));
            return actor.fail(id, acquire_op(None, None, None));
        }
    };
    let done = actor.now();
    let until = actor.millis_of(lease.valid_until());
    let round = RedlockRound {
        answers: answers(lease.masters()),
        elapsed_ms: Some(lease.elapsed().as_millis() as u64),
        validity_ms: Some(until.saturating_sub(done)),
        started_at: Some(invoked),
        valid_until: Some(until),
        ..RedlockRound::default()
    };
    actor.ok(id, acquire_op(Some(lease.votes() as u32), Some(until.saturating_sub(invoked)), Some(round)));
    if actor.index() == 0 {
        first_grant.store(true, Ordering::Release);
    }
    sleep_until_shifted(lease.valid_until(), -rng.random_range(5..=30)).await;
    let op = |round| RedlockOp::RedlockRelease { name: NAME.into(), lease: Some(id.0), round };
    let rid = actor.call(NAIVE_REDLOCK_RELEASE, op(None));
    let released = r.release(&lease).await;
    actor.ok(rid, op(Some(RedlockRound { answers: answers(&released.masters), ..RedlockRound::default() })));
}
