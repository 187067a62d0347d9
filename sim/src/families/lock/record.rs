//! The lock calls the workload and the probes record the same way, so
//! that the checkers judge both alike: a lease's view of itself, a fenced
//! write, the token and TTL reads, and a guarded call from its acquire to
//! its end (with the mark a dropped body leaves).

use std::future::Future;

use rand::Rng;
use redis_primitives::{FencedStore, Lock, WriteOutcome};

use super::{situation, LOCK_NAME, RESOURCE_KEY};
use crate::api::{FENCED_STORE_READ, FENCED_STORE_WRITE};
use crate::families::lock::api::{LOCK_CURRENT_TOKEN, LOCK_REMAINING_TTL};
use crate::families::lock::op::{GuardedResult, LockOp};
use crate::history::{Op, WriteResult};
use crate::net::SimConnection;
use crate::world::Actor;

/// Whether a guard gave up for the deadline; a failed extension whose
/// error no fault explains is recorded for `unexpected-errors`.
pub(super) fn loss_is_deadline(actor: &Actor, reason: &redis_primitives::LeaseLoss) -> bool {
    match reason {
        redis_primitives::LeaseLoss::DeadlineReached => true,
        redis_primitives::LeaseLoss::Failed(e) if !e.outcome_is_unknown() => {
            actor.observe(Op::LibraryError { message: e.to_string() });
            false
        }
        _ => false,
    }
}

/// A guarded body's drop guard: made when the body starts, it records an
/// [`LockOp::BodyDropped`] at the instant the guard drops the body unfinished,
/// which is the instant a `Cancelled { at }` must report. [`BodyMark::done`]
/// disarms it when the body runs to its end.
///
/// With [`BodyMark::slow_release`], a drop also slows the reply to the
/// release that follows it: the same fault the completed path's final
/// release gets, so the cancel path's bound is tried as hard.
pub(super) struct BodyMark {
    actor: Option<Actor>,
    name: String,
    token: u64,
    /// The release's delay on a drop: (node, ms).
    slow_release: Option<(usize, u64)>,
}

impl BodyMark {
    /// A mark for the body of `actor`'s guarded call on `name` (`token`).
    pub(super) fn new(actor: &Actor, name: &str, token: u64) -> BodyMark {
        BodyMark { actor: Some(actor.clone()), name: name.to_string(), token, slow_release: None }
    }

    /// On a drop, holds the caller's next request to `node` (the release)
    /// for `ms`. Like the completed path's, the delay names no key: the
    /// guarded-body rules read a delay naming the lease key as the
    /// keep-alive's held first extend.
    pub(super) fn slow_release(mut self, node: usize, ms: u64) -> BodyMark {
        self.slow_release = Some((node, ms));
        self
    }

    /// The body finished: nothing to record.
    pub(super) fn done(mut self) {
        self.actor = None;
    }
}

impl Drop for BodyMark {
    fn drop(&mut self) {
        if let Some(actor) = self.actor.take() {
            actor.observe(LockOp::BodyDropped { name: std::mem::take(&mut self.name), token: self.token });
            if let Some((node, ms)) = self.slow_release.take() {
                actor.delay_next_request(node, ms);
                actor.reached(situation::CANCELLED_RELEASE_DELAYED);
            }
        }
    }
}

/// A recorded `with_lock_guarded` call: its [`LockOp::Guarded`] (on `name`,
/// with the keep-alive interval `every_ms`) and the [`LockOp::Acquire`] inside
/// it (asking `ttl_ms`), both invoked before the call.
pub(super) struct GuardedCall<'a> {
    pub actor: &'a Actor,
    pub name: &'a str,
    pub ttl_ms: u64,
    pub every_ms: Option<u64>,
    pub call: crate::history::OpId,
    pub acquire: crate::history::OpId,
    /// Whether the body was called (the acquire's grant is then recorded).
    pub body_ran: bool,
}

/// How a recorded guarded call ended (what its caller may add to the record).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum GuardedEnd {
    NotAcquired,
    Completed,
    /// The body was dropped, for `loss`.
    Cancelled {
        loss: Loss,
    },
    Failed,
}

/// Why a guarded call dropped its body: [`redis_primitives::LeaseLoss`]
/// without its error, so a caller that staged the loss can say which
/// reasons it allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Loss {
    Refused,
    Failed,
    DeadlineReached,
}

impl GuardedEnd {
    /// Whether a lease was granted (the body ran).
    pub(super) fn granted(self) -> bool {
        matches!(self, GuardedEnd::Completed | GuardedEnd::Cancelled { .. })
    }
}

impl From<&redis_primitives::LeaseLoss> for Loss {
    fn from(reason: &redis_primitives::LeaseLoss) -> Loss {
        match reason {
            redis_primitives::LeaseLoss::Refused => Loss::Refused,
            redis_primitives::LeaseLoss::Failed(_) => Loss::Failed,
            redis_primitives::LeaseLoss::DeadlineReached => Loss::DeadlineReached,
        }
    }
}

impl GuardedCall<'_> {
    /// Records `r`, the call's result, whose body returned the id of the
    /// [`LockOp::Release`] it invoked at its end and its token: the release's
    /// outcome, the loss of a cancelled lease ([`LockOp::LeaseLost`]) and the
    /// call's completion. One record for the workload and the probes, so
    /// the checkers judge both the same way.
    pub(super) fn end(
        self,
        r: redis_primitives::Result<redis_primitives::GuardedOutcome<(crate::history::OpId, u64)>>,
    ) -> GuardedEnd {
        let GuardedCall { actor, name, ttl_ms, every_ms, call, acquire, body_ran } = self;
        let gop = |token, outcome| LockOp::Guarded { name: name.into(), token, outcome, every_ms };
        let acquire_op = || LockOp::Acquire { name: name.into(), ttl_ms, token: None, deadline: None };
        match r {
            Ok(redis_primitives::GuardedOutcome::NotAcquired) => {
                if body_ran {
                    // The body runs only on a grant.
                    actor.configured_if_differs(
                        "Lock::with_lock_guarded",
                        &[("result after the body ran", "NotAcquired".into(), "Ok(Completed | Cancelled)".into())],
                    );
                } else {
                    actor.fail(acquire, acquire_op());
                }
                actor.ok(call, gop(None, Some(GuardedResult::NotAcquired)));
                GuardedEnd::NotAcquired
            }
            Ok(redis_primitives::GuardedOutcome::Completed { output: (rid, token), release, .. }) => {
                let rel = LockOp::Release { name: name.into(), token: Some(token) };
                match release {
                    redis_primitives::Release::Released => actor.ok(rid, rel),
                    redis_primitives::Release::AlreadyGone => actor.fail(rid, rel),
                    redis_primitives::Release::Unknown(e) => actor.errored(rid, rel, &e),
                }
                actor.ok(call, gop(Some(token), Some(GuardedResult::Completed)));
                GuardedEnd::Completed
            }
            Ok(redis_primitives::GuardedOutcome::Cancelled { token, reason, at }) => {
                let at = actor.millis_of(at);
                actor.observe(LockOp::LeaseLost {
                    name: name.into(),
                    token: Some(token.get()),
                    reason: format!("guard: {reason:?}"),
                });
                let deadline_reached = loss_is_deadline(actor, &reason);
                actor.ok(call, gop(Some(token.get()), Some(GuardedResult::Cancelled { at, deadline_reached })));
                if matches!(reason, redis_primitives::LeaseLoss::Failed(_)) {
                    actor.reached(situation::GUARD_EXTENSION_FAILED);
                }
                GuardedEnd::Cancelled { loss: Loss::from(&reason) }
            }
            // `Err` only comes from the acquire: once the body ran, the
            // call answers `Completed` or `Cancelled` whatever the release did.
            Err(e) => {
                if body_ran {
                    actor.configured_if_differs(
                        "Lock::with_lock_guarded",
                        &[("result after the body ran", format!("Err({e})"), "Ok(Completed | Cancelled)".into())],
                    );
                } else {
                    actor.info(acquire, acquire_op());
                }
                actor.errored(call, gop(None, None), &e);
                GuardedEnd::Failed
            }
        }
    }
}

/// `lease.is_trusted()`, recorded with everything the lease says about
/// itself (an [`LockOp::LeaseView`], judged by `lease-views`).
pub(super) fn view(actor: &Actor, lease: &redis_primitives::Lease) -> bool {
    let trusted = lease.is_trusted();
    actor.observe(LockOp::LeaseView {
        name: lease.name().to_string(),
        key: lease.key().to_string(),
        token: lease.token().get(),
        ttl_ms: lease.ttl().as_millis(),
        sent_ms: actor.millis_of(lease.sent_at()),
        deadline_ms: actor.millis_of(lease.local_deadline()),
        trusted,
    });
    trusted
}

/// A fenced write of `value` with `token`, recorded (a refusal is a
/// reached situation).
pub(super) async fn write_fenced(actor: &Actor, store: &FencedStore<SimConnection>, value: &str, token: u64) {
    let op =
        |result| Op::Write { key: RESOURCE_KEY.into(), value: value.into(), token: Some(token), fenced: true, result };
    let id = actor.call(FENCED_STORE_WRITE, op(None));
    match store.write(RESOURCE_KEY, value, redis_primitives::FencingToken::new(token)).await {
        Ok(WriteOutcome::Accepted) => actor.ok(id, op(Some(WriteResult::Accepted))),
        Ok(WriteOutcome::Rejected { highest_seen, .. }) => {
            actor.reached(situation::STALE_WRITE_REFUSED);
            actor.ok(id, op(Some(WriteResult::Rejected { highest_seen: highest_seen.get() })))
        }
        Err(e) => actor.errored(id, op(None), &e),
    }
}

/// A read of the fenced resource, recorded: its value and token (judged by
/// `no-stale-overwrite`'s read rules, `checker::store_reads`).
pub(super) async fn read_fenced(actor: &Actor, store: &FencedStore<SimConnection>) {
    let op = |value, token| Op::Read { key: RESOURCE_KEY.into(), value, token };
    let id = actor.call(FENCED_STORE_READ, op(None, None));
    match store.read(RESOURCE_KEY).await {
        Ok(Some(s)) => actor.ok(id, op(Some(String::from_utf8_lossy(&s.value).into_owned()), Some(s.token.get()))),
        Ok(None) => actor.ok(id, op(None, None)),
        Err(e) => actor.errored(id, op(None, None), &e),
    }
}

/// Whether a holder's write goes out with a read of the same key
/// pipelined beside it on the one connection, and which is sent first: the
/// two reach the server interleaved, and the read must still return one
/// write's value and token. Drawn per write from a stream of its own (a
/// third of the writes, either order).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Beside {
    Alone,
    ReadFirst,
    WriteFirst,
}

impl Beside {
    /// The draw for this actor's `n`th write.
    pub(super) fn draw(actor: &Actor, n: u32) -> Beside {
        let mut rng = actor.rng_for(&format!("read-beside-{n}"));
        match rng.random_range(0..6u32) {
            0 => Beside::ReadFirst,
            1 => Beside::WriteFirst,
            _ => Beside::Alone,
        }
    }

    /// Runs `write`, with a recorded read of the fenced resource beside it
    /// as drawn.
    pub(super) async fn run(self, actor: &Actor, store: &FencedStore<SimConnection>, write: impl Future<Output = ()>) {
        match self {
            Beside::Alone => write.await,
            Beside::ReadFirst => _ = tokio::join!(read_fenced(actor, store), write),
            Beside::WriteFirst => _ = tokio::join!(write, read_fenced(actor, store)),
        }
    }
}

/// `lock.current_token` of `name`, recorded (checked by `lock-replies`).
pub(super) async fn read_current_token(actor: &Actor, lock: &Lock<SimConnection>, name: &str) {
    let op = |token| LockOp::CurrentToken { name: name.into(), token };
    let id = actor.call(LOCK_CURRENT_TOKEN, op(None));
    match lock.current_token(name).await {
        Ok(t) => actor.ok(id, op(t.map(|t| t.get()))),
        Err(e) => actor.errored(id, op(None), &e),
    }
}

/// Reads `current_token` or `remaining_ttl` (recorded, checked by `lock-replies`).
pub(super) async fn read_lock_state(actor: &Actor, lock: &Lock<SimConnection>, rng: &mut impl Rng) {
    if rng.random_bool(0.5) {
        read_current_token(actor, lock, LOCK_NAME).await;
    } else {
        let op = |ms| LockOp::RemainingTtl { name: LOCK_NAME.into(), ms };
        let id = actor.call(LOCK_REMAINING_TTL, op(None));
        match lock.remaining_ttl(LOCK_NAME).await {
            Ok(d) => actor.ok(id, op(d.map(|d| d.as_millis() as u64))),
            Err(e) => actor.errored(id, op(None), &e),
        }
    }
}
