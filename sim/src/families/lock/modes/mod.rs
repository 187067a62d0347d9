//! The workload's modes (correct variants only, `LockWorkload::modes`):
//! besides the plain acquire-hold-write-release, an attempt may exercise
//! every other public `Lock` operation. One file per kind of operation:
//! `extend.rs`, `with_lock.rs`, `guarded.rs` (`with_lock_guarded` and
//! `keep_alive`), `retry.rs`; what they share is `ctx.rs`. The modes draw
//! from a stream of their own, so the broken variants' seeds (which run
//! no modes) are unaffected.

mod ctx;
mod extend;
mod guarded;
mod retry;
mod with_lock;

use rand::Rng;

use crate::families::lock::api::LOCK_ACQUIRE;
use crate::families::lock::situation;
use crate::families::lock::workload::sleep_ms;
use crate::world::ActorResult;
pub(super) use ctx::Ctx;

/// What one attempt of a client does (drawn per attempt from the
/// `mode` stream of the client's seed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    /// acquire, hold, write, release (the original workload).
    Plain,
    /// acquire, then one to three `Lock::extend`s mid-hold (some after the
    /// local deadline, some across a pause right after the send).
    Extend,
    /// acquire, wait past the TTL, release (must return false).
    ReleaseAfterExpiry,
    /// `Lock::with_lock` with a body that writes.
    WithLock,
    /// `Lock::with_lock_guarded` with a multi-step body that may stall.
    Guarded,
    /// acquire, then a body raced against a caller-driven `Lock::keep_alive`.
    KeepAlive,
    /// `Retry::run` around `Lock::acquire`.
    Retry,
}

impl Mode {
    /// A mode, drawn from the modes' stream.
    pub(super) fn draw(rng: &mut impl Rng) -> Mode {
        match rng.random_range(0..100u32) {
            0..20 => Mode::Plain,
            20..40 => Mode::Extend,
            40..48 => Mode::ReleaseAfterExpiry,
            48..60 => Mode::WithLock,
            60..76 => Mode::Guarded,
            76..86 => Mode::KeepAlive,
            _ => Mode::Retry,
        }
    }
}

/// One attempt in a non-plain mode.
pub(super) async fn attempt(cx: &mut Ctx<'_>, mode: Mode) -> ActorResult {
    match mode {
        Mode::Plain => Ok(()),
        Mode::Extend => extend::attempt(cx).await,
        Mode::ReleaseAfterExpiry => release_after_expiry(cx).await,
        Mode::WithLock => with_lock::attempt(cx).await,
        Mode::Guarded => guarded::guarded(cx).await,
        Mode::KeepAlive => guarded::keep_alive(cx).await,
        Mode::Retry => retry::attempt(cx).await,
    }
}

/// `Mode::ReleaseAfterExpiry`: acquire, perhaps write, wait past the TTL,
/// perhaps write again with the stale token (the store must refuse it if
/// a newer holder has written), release (which must return false).
async fn release_after_expiry(cx: &mut Ctx<'_>) -> ActorResult {
    let Some(lease) = cx.acquire(Some(LOCK_ACQUIRE)).await else { return Ok(()) };
    cx.maybe_workload_stall().await;
    if cx.rng.random_bool(0.5) {
        cx.write_if_trusted(&lease, None).await;
    }
    sleep_ms(cx.w.plan.ttl_ms + cx.rng.random_range(5..=100)).await;
    if cx.rng.random_bool(0.5) {
        // A zombie write: the lease is gone, the token is not. The
        // store must refuse it if a newer holder has written.
        cx.write(lease.token().get()).await;
    }
    if cx.release(&lease).await == Some(false) {
        cx.actor.reached(situation::RELEASE_AFTER_EXPIRY);
    }
    Ok(())
}
