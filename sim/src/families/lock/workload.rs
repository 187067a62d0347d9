//! The lock workload's fixed settings: which lock and store, how many
//! nodes, which mitigation, which faults, which overlaps are violations
//! ([`LockWorkload`], one per variant), and how the workload's `Lock` is
//! built from them. What the actors do with them is `client.rs` and
//! `reader.rs`; what a run is judged by is `judge.rs`.

use core::time::Duration;
use rand::Rng;
use redis_primitives::{Acknowledgement, Lock, OwnerSource, Tokens};

use super::checks::mutual_exclusion::Policy;
use super::LockPlan;
use crate::checker::Allowance;
use crate::fault_space::FaultSpace;
use crate::nemesis::Fault;
use crate::net::SimConnection;

/// The lock name every client contends for.
pub(crate) const LOCK_NAME: &str = "resource";
/// The key the clients write.
pub(crate) const RESOURCE_KEY: &str = "resource";

/// Which lock the clients use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LockKind {
    /// `redis_primitives::Lock`: fencing token, compare-and-delete release.
    Fenced,
    /// `redis_primitives_naive::NaiveLock`: `SET NX PX`, bare `DEL`, no token.
    Naive,
}

/// Which failover mitigation the fenced lock is built with (issue 10;
/// `lock-failover` and its variants).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Protection {
    /// The lock as `Lock::new` builds it.
    None,
    /// `LockBuilder::acknowledged`: an acquire is handed out only once the
    /// node's replica has acknowledged it (`WAIT 1`).
    Acknowledged,
    /// `LockBuilder::tokens(Tokens::TimeFloored)`: tokens never fall below
    /// the server's clock in µs.
    TimeFloored,
}

/// How long an acknowledged acquire waits for its replica (ms).
pub(crate) const ACK_TIMEOUT_MS: u64 = 50;

/// Which resource the clients write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StoreKind {
    /// `FencedStore`: refuses tokens lower than the highest accepted.
    Fenced,
    /// `UnfencedStore`: plain `SET`, last write wins.
    Unfenced,
}

/// The lock workload: one variant's fixed settings, and the plan it runs
/// (see the module docs). The plan's fields live only in [`LockPlan`].
#[derive(Debug, Clone)]
pub(crate) struct LockWorkload {
    /// What the actors do: clients, TTL, hold and think times, length, stall.
    pub plan: LockPlan,
    /// Redis nodes in the world.
    pub nodes: usize,
    /// Node holding the lock.
    pub lock_node: usize,
    /// Replicas of the lock's node (0: a lone server).
    pub replicas: usize,
    /// The failover mitigation the fenced lock is built with.
    pub protection: Protection,
    /// Node holding the resource (a different node models a resource that
    /// survives the lock server's failures).
    pub store_node: usize,
    /// How long the stall a seed plans lasts (0: seeds plan none); where it
    /// lands is drawn per seed ([`LockSpace::seeds`](super::LockSpace::seeds)).
    pub seed_stall_ms: u64,
    /// The lock used.
    pub lock: LockKind,
    /// The resource written.
    pub store: StoreKind,
    /// Whether a holder checks its local deadline before writing (a careful
    /// client) or writes regardless (relying on fencing alone).
    pub check_deadline: bool,
    /// The nemesis faults its seeds draw.
    pub faults: FaultSpace,
    /// Faults every seed gets, on top of the drawn ones.
    pub always: Vec<Fault>,
    /// Which lock overlaps are violations.
    pub policy: Policy,
    /// Whether each attempt draws a workload mode exercising every public
    /// `Lock` operation (extend, release after expiry, `with_lock`,
    /// `with_lock_guarded`, `keep_alive`, `Retry::run`, `current_token`,
    /// `remaining_ttl`), and the run ends with a liveness probe. Only the
    /// correct scenarios enable it; the modes draw from their own RNG stream
    /// so the broken variants' seeds are unaffected.
    pub modes: bool,
}

impl LockWorkload {
    /// The `lock` scenario's settings.
    pub(crate) fn lock() -> LockWorkload {
        let length_ms = 3000;
        LockWorkload {
            plan: LockPlan { clients: 3, ttl_ms: 300, hold_ms: (20, 450), think_ms: (5, 80), length_ms, stall: None },
            nodes: 1,
            lock_node: 0,
            replicas: 0,
            protection: Protection::None,
            store_node: 0,
            seed_stall_ms: 900,
            lock: LockKind::Fenced,
            store: StoreKind::Fenced,
            check_deadline: true,
            faults: FaultSpace::client_side(length_ms),
            always: Vec::new(),
            policy: Policy::ForbidTrustedOverlap,
            modes: true,
        }
    }

    /// How long the plan's stall lasts (0: none).
    pub(super) fn stall_ms(&self) -> u64 {
        self.plan.stall.map_or(0, |s| s.ms)
    }
}

/// A draw from `lo..=hi` (either way round), for the plan's time ranges.
pub(super) fn draw(rng: &mut impl Rng, (lo, hi): (u64, u64)) -> u64 {
    rng.random_range(lo.min(hi)..=hi.max(lo))
}

/// Sleeps `ms` of simulated time.
pub(super) async fn sleep_ms(ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

/// The drift allowance of the correct scenarios' locks: not the default,
/// so an accessor or a computation that fell back to `Drift::DEFAULT`
/// shows. `lease-views` judges deadlines with the same numbers.
pub(super) const DRIFT: Allowance = Allowance { per_mille: 20, constant_ms: 3 };

/// The workload's `Lock` on `conn`, configured as the scenario says (drift,
/// acknowledged writes, time-floored tokens), drawing owners from `seed`.
pub(super) fn fenced_lock(
    conn: SimConnection,
    w: &LockWorkload,
    seed: u64,
) -> redis_primitives::Result<Lock<SimConnection>> {
    let builder = Lock::builder(conn).owners(OwnerSource::seeded(seed)).drift(lock_drift(w)?);
    let builder = match w.protection {
        Protection::None => builder,
        Protection::Acknowledged => {
            builder.acknowledged(Acknowledgement::new(1, Duration::from_millis(ACK_TIMEOUT_MS))?)
        }
        Protection::TimeFloored => builder.tokens(Tokens::TimeFloored),
    };
    builder.build()
}

/// The drift the workload's locks are built with (the default for the
/// broken variants, whose seeds stay as they were).
pub(super) fn lock_drift(w: &LockWorkload) -> redis_primitives::Result<redis_primitives::Drift> {
    if w.modes {
        redis_primitives::Drift::new(DRIFT.per_mille as u32, Duration::from_millis(DRIFT.constant_ms))
    } else {
        Ok(redis_primitives::Drift::DEFAULT)
    }
}
