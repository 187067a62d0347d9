//! What a mode attempt works with ([`Ctx`]: the client's actor, lock,
//! store and the modes' own RNG stream) and the steps every mode shares:
//! a recorded acquire, the workload stall, a write (if still trusted), a
//! release, a guarded body's steps, and a pause right after a request.

use rand::Rng;
use redis_primitives::{FencedStore, Lock, Ttl};

use crate::families::lock::api::LOCK_RELEASE;
use crate::families::lock::op::LockOp;
use crate::families::lock::record::{view, write_fenced, Beside};
use crate::families::lock::workload::sleep_ms;
use crate::families::lock::{situation, LockWorkload, LOCK_NAME};
use crate::history::{Api, Millis};
use crate::net::SimConnection;
use crate::world::Actor;

/// Awaits `fut`; with `pause = Some((after, ms))`, freezes the whole actor
/// for `ms` once `after` ms have passed since the request was sent, so the
/// reply arrives while the actor is frozen (design §4: a success that comes
/// back after the lease's deadline proves nothing).
pub(super) async fn send_then_pause<F: std::future::Future>(
    actor: &Actor,
    fut: F,
    pause: Option<(u64, u64)>,
) -> F::Output {
    let Some((after, ms)) = pause else { return fut.await };
    tokio::pin!(fut);
    tokio::select! {
        biased;
        r = &mut fut => r,
        _ = sleep_ms(after) => {
            actor.stall(ms, "right after sending a request (workload)");
            fut.await
        }
    }
}

/// Stalls the actor for `ms` here (a GC pause), noted like the workload stall.
pub(super) async fn stall(actor: &Actor, ms: u64, wherein: &str) {
    actor.stall(ms, wherein);
    // The pause takes effect at the next await.
    tokio::task::yield_now().await;
}

/// What a mode attempt needs.
pub(in crate::families::lock) struct Ctx<'a> {
    pub(in crate::families::lock) actor: &'a Actor,
    pub(in crate::families::lock) w: &'a LockWorkload,
    pub(in crate::families::lock) lock: &'a Lock<SimConnection>,
    pub(in crate::families::lock) store: &'a FencedStore<SimConnection>,
    pub(in crate::families::lock) ttl: Ttl,
    pub(in crate::families::lock) rng: &'a mut rand::rngs::StdRng,
    /// This client's number of holds so far (for the workload stall).
    pub(in crate::families::lock) holds: &'a mut u32,
    pub(in crate::families::lock) writes: &'a mut u32,
    pub(in crate::families::lock) stall_at: Option<u32>,
}

impl Ctx<'_> {
    pub(super) fn acquire_op(&self, token: Option<u64>, deadline: Option<Millis>) -> LockOp {
        LockOp::Acquire { name: LOCK_NAME.into(), ttl_ms: self.w.plan.ttl_ms, token, deadline }
    }

    pub(super) fn deadline_ms(&self, lease: &redis_primitives::Lease) -> Millis {
        self.actor.millis_of(lease.local_deadline())
    }

    /// One recorded `Lock::acquire` (optionally paused right after the send).
    pub(super) async fn acquire(&mut self, api: Option<Api>) -> Option<redis_primitives::Lease> {
        let id = match api {
            Some(api) => self.actor.call(api, self.acquire_op(None, None)),
            None => self.actor.invoke(self.acquire_op(None, None)),
        };
        let pause =
            self.rng.random_bool(0.06).then(|| (self.rng.random_range(0..=2), self.rng.random_range(100..=500)));
        match send_then_pause(self.actor, self.lock.acquire(LOCK_NAME, self.ttl), pause).await {
            Ok(Some(lease)) => {
                let d = self.deadline_ms(&lease);
                self.actor.ok(id, self.acquire_op(Some(lease.token().get()), Some(d)));
                *self.holds += 1;
                Some(lease)
            }
            Ok(None) => {
                self.actor.fail(id, self.acquire_op(None, None));
                None
            }
            Err(e) => {
                self.actor.errored(id, self.acquire_op(None, None), &e);
                self.actor.note(format!("acquire: {e}"));
                None
            }
        }
    }

    /// The workload stall, if this is the hold it belongs in.
    pub(super) async fn maybe_workload_stall(&mut self) {
        if self.stall_at == Some(*self.holds) && self.w.stall_ms() > 0 {
            self.stall_at = None;
            stall(self.actor, self.w.stall_ms(), "inside its critical section").await;
        }
    }

    /// One fenced write with `token` (recorded), as a body step or a holder's write.
    pub(super) async fn write(&mut self, token: u64) {
        *self.writes += 1;
        let value = format!("{}-{}", self.actor.name(), *self.writes);
        let beside = Beside::draw(self.actor, *self.writes);
        beside.run(self.actor, self.store, write_fenced(self.actor, self.store, &value, token)).await;
    }

    /// Writes if the lease is still trusted; otherwise records the loss.
    pub(super) async fn write_if_trusted(
        &mut self,
        lease: &redis_primitives::Lease,
        paused_at: Option<Millis>,
    ) -> bool {
        if view(self.actor, lease) || !self.w.check_deadline {
            self.write(lease.token().get()).await;
            true
        } else {
            if paused_at.is_some() {
                self.actor.reached(situation::LEASE_EXPIRED_WHILE_PAUSED);
            }
            self.actor.observe(LockOp::LeaseLost {
                name: LOCK_NAME.into(),
                token: Some(lease.token().get()),
                reason: "local deadline passed before the write".into(),
            });
            false
        }
    }

    pub(super) async fn release(&mut self, lease: &redis_primitives::Lease) -> Option<bool> {
        let op = LockOp::Release { name: LOCK_NAME.into(), token: Some(lease.token().get()) };
        let id = self.actor.call(LOCK_RELEASE, op.clone());
        match self.lock.release(lease).await {
            Ok(true) => {
                self.actor.ok(id, op);
                Some(true)
            }
            Ok(false) => {
                self.actor.fail(id, op);
                Some(false)
            }
            Err(e) => {
                self.actor.errored(id, op, &e);
                None
            }
        }
    }

    /// A body of `steps` fenced writes with `token`, with short sleeps and
    /// perhaps one stall (sometimes aimed across the lease's local deadline).
    pub(super) async fn body(&mut self, token: u64, deadline: Millis) -> u32 {
        let steps = self.rng.random_range(2..=5u32);
        let stall_step = self.rng.random_bool(0.4).then(|| self.rng.random_range(0..steps));
        for i in 0..steps {
            sleep_ms(self.rng.random_range(10..=120)).await;
            if stall_step == Some(i) {
                let now = self.actor.now();
                // Either a stall that lands exactly across the (initial)
                // deadline, or one long enough to outlast any extension.
                let ms = if self.rng.random_bool(0.5) && deadline > now {
                    deadline - now + self.rng.random_range(1..=15)
                } else {
                    self.rng.random_range(150..=700)
                };
                stall(self.actor, ms, "inside a guarded body").await;
            }
            self.maybe_workload_stall().await;
            self.write(token).await;
        }
        steps
    }
}
