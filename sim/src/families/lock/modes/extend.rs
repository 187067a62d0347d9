//! `Mode::Extend`: acquire, then one to three `Lock::extend`s mid-hold
//! (some just past the local deadline, some asking a shorter TTL, some
//! with a pause right after the send, some with the reply held across the
//! lease's expiry at the server), a write if still trusted, and a release
//! (its reply held the same way now and then).

use rand::Rng;
use redis_primitives::Ttl;

use super::ctx::{send_then_pause, Ctx};
use crate::families::lock::api::{LOCK_ACQUIRE, LOCK_EXTEND};
use crate::families::lock::op::LockOp;
use crate::families::lock::record::view;
use crate::families::lock::workload::sleep_ms;
use crate::families::lock::{situation, LOCK_NAME};
use crate::history::Millis;
use crate::outcome::SituationName;
use crate::world::{Actor, ActorResult};

/// One `Mode::Extend` attempt (see the module docs).
pub(super) async fn attempt(cx: &mut Ctx<'_>) -> ActorResult {
    let Some(mut lease) = cx.acquire(Some(LOCK_ACQUIRE)).await else { return Ok(()) };
    cx.maybe_workload_stall().await;
    let mut paused_at = None;
    // The TTL the key was last set with (an extend may ask another).
    let mut set_ms = cx.w.plan.ttl_ms;
    for _ in 0..cx.rng.random_range(1..=3u32) {
        if !extend_once(cx, &mut lease, &mut set_ms, &mut paused_at).await? {
            break;
        }
    }
    cx.write_if_trusted(&lease, paused_at).await;
    if let Some((before, aim)) = reply_held_across_expiry(cx.actor, &lease, set_ms, "release") {
        sleep_ms(before).await;
        aim.hold(cx.actor, cx.w.lock_node, &lease, situation::RELEASE_REPLY_HELD);
    }
    cx.release(&lease).await;
    Ok(())
}

/// One extend of `lease`, recorded; whether the holder goes on (the
/// extend was confirmed and the lease is still trusted). `set_ms` is the
/// TTL the key was last set with, `paused_at` when a pause after the send
/// began, if one did.
async fn extend_once(
    cx: &mut Ctx<'_>,
    lease: &mut redis_primitives::Lease,
    set_ms: &mut u64,
    paused_at: &mut Option<Millis>,
) -> turmoil::Result<bool> {
    let ttl_ms = cx.w.plan.ttl_ms;
    let token = lease.token().get();
    let now = cx.actor.now();
    let deadline = cx.deadline_ms(lease);
    // Now and then an extend asks for a shorter TTL than the
    // acquire did (the lease must then report the new one). From
    // a stream of its own: the workload's draws stay as they were.
    let ext_ms = if cx.actor.rng_for(&format!("extend-ttl-{now}")).random_bool(0.3) { ttl_ms * 2 / 3 } else { ttl_ms };
    // Mostly mid-hold; sometimes just past the local deadline
    // (the server may or may not still have the key).
    let wait = if cx.rng.random_bool(0.25) {
        deadline.saturating_sub(now) + cx.rng.random_range(0..=40)
    } else {
        cx.rng.random_range(10..=ttl_ms / 2)
    };
    let held = reply_held_across_expiry(cx.actor, lease, *set_ms, "extend");
    let wait = held.as_ref().map_or(wait, |(before, _)| *before);
    sleep_ms(wait).await;
    if let Some((_, aim)) = held {
        aim.hold(cx.actor, cx.w.lock_node, lease, situation::EXTEND_REPLY_HELD);
    }
    let pause = cx.rng.random_bool(0.2).then(|| (cx.rng.random_range(0..=2), cx.rng.random_range(150..=700)));
    if pause.is_some() {
        *paused_at = Some(cx.actor.now());
    }
    let op = |deadline| LockOp::Extend { name: LOCK_NAME.into(), token: Some(token), ttl_ms: ext_ms, deadline };
    let id = cx.actor.call(LOCK_EXTEND, op(None));
    let ext = Ttl::from_millis(ext_ms)?;
    match send_then_pause(cx.actor, cx.lock.extend(lease, ext), pause).await {
        Ok(true) => {
            *set_ms = ext_ms;
            let d = cx.deadline_ms(lease);
            cx.actor.ok(id, op(Some(d)));
            cx.actor.reached(situation::EXTENSION_CONFIRMED);
            if !view(cx.actor, lease) {
                if pause.is_some() {
                    cx.actor.reached(situation::STALE_SUCCESS_AFTER_PAUSE);
                }
                return Ok(false);
            }
            Ok(true)
        }
        Ok(false) => {
            cx.actor.fail(id, op(None));
            cx.actor.reached(situation::EXTENSION_REFUSED);
            Ok(false)
        }
        Err(e) => {
            // The lease's deadline after an extend of unknown
            // outcome (judged by `lease-views`; the overlap
            // checks hold the lease to it).
            cx.actor.errored(id, op(Some(cx.deadline_ms(lease))), &e);
            Ok(false)
        }
    }
}

/// Where `Mode::Extend` aims its next extend or release on a quarter of
/// them: sent 0-20 ms before the lease's local deadline, the request runs at
/// once and its reply is held at the server until 20-80 ms after the lease
/// expired there (when that stays under the response timeout). The correct
/// compare-and-extend and compare-and-delete ran atomically, so nothing
/// changes but when the caller hears; one that checks the owner and acts in
/// a second request acts on whoever took the lock meanwhile. Drawn from a
/// stream of its own per request, so the workload's other draws are
/// unchanged. Returns how long to wait before sending, and the hold.
fn reply_held_across_expiry(
    actor: &Actor,
    lease: &redis_primitives::Lease,
    ttl_ms: u64,
    what: &str,
) -> Option<(u64, HeldReply)> {
    let now = actor.now();
    let mut faults = actor.rng_for(&format!("{what}-reply-held-{now}"));
    if !faults.random_bool(0.25) {
        return None;
    }
    let deadline = actor.millis_of(lease.local_deadline());
    let send = deadline.checked_sub(faults.random_range(0..=20)).filter(|&s| s > now)?;
    // The server set the TTL when the request that granted or extended the
    // lease arrived, at least its send instant.
    let expiry = actor.millis_of(lease.sent_at()) + ttl_ms;
    let ms = expiry.checked_sub(send)? + faults.random_range(20..=80);
    let timeout = actor.net().response_timeout.as_millis() as u64;
    (ms < timeout).then_some((send - now, HeldReply { ms }))
}

/// A reply to hold, from [`reply_held_across_expiry`].
struct HeldReply {
    ms: u64,
}

impl HeldReply {
    /// Holds the reply to the next request naming the lease's key.
    fn hold(self, actor: &Actor, node: usize, lease: &redis_primitives::Lease, situation: SituationName) {
        actor.delay_next_reply_mentioning(node, self.ms, lease.key());
        actor.reached(situation);
    }
}
