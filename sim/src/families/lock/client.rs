//! A client of the lock workload: until the plan's length, one attempt
//! after another, each followed by a drawn think time. A plain attempt
//! acquires, holds (perhaps stalled, perhaps up to the lease's edge),
//! checks its lease if the variant's clients do, writes the resource with
//! the lease's token, and releases; with the workload's modes on, most
//! attempts are one of the modes instead (`modes/`). Either lock, the
//! fenced `Lock` or the naive one, behind one face ([`AnyLock`]).

use rand::rngs::StdRng;
use rand::Rng;
use redis_primitives::{FencedStore, Lock, Ttl, WriteOutcome};
use redis_primitives_naive::{NaiveLock, UnfencedStore};

use super::modes::{attempt, Ctx, Mode};
use super::record::{read_fenced, read_lock_state, view, Beside};
use super::workload::{draw, fenced_lock, lock_drift, sleep_ms};
use super::{situation, variants, LockKind, LockWorkload, StoreKind, LOCK_NAME, RESOURCE_KEY};
use crate::api::{FENCED_STORE_WRITE, UNFENCED_STORE_WRITE};
use crate::families::lock::api::{LOCK_ACQUIRE, LOCK_RELEASE, NAIVE_LOCK_ACQUIRE, NAIVE_LOCK_RELEASE};
use crate::families::lock::op::LockOp;
use crate::history::{Op, WriteResult};
use crate::net::SimConnection;
use crate::world::{Actor, ActorResult};

/// Either lock, behind one face: acquire gives (token, local deadline).
enum AnyLock {
    Fenced(Lock<SimConnection>),
    Naive(NaiveLock<SimConnection>),
}

/// What a hold needs to release.
enum Held {
    Fenced(redis_primitives::Lease),
    Naive,
}

/// One client's state across its attempts. The stores and the lock are
/// declared in the reverse of the order they are made, so that they drop
/// in the order they did when they were the client's locals: dropping a
/// connection's last handle ends its driver, and that order is kept rather
/// than argued about.
struct Client<'a> {
    actor: &'a Actor,
    w: &'a LockWorkload,
    unfenced: UnfencedStore<SimConnection>,
    fenced: FencedStore<SimConnection>,
    lock: AnyLock,
    ttl: Ttl,
    /// The plain path's draws: hold and think times.
    rng: StdRng,
    /// The modes' own stream: the plain path's draws stay as they were.
    mode_rng: StdRng,
    /// Trust checks aimed at the lease's edge: its own stream, too.
    edge_rng: StdRng,
    /// The store-read bursts: a stream of their own as well.
    read_rng: StdRng,
    holds: u32,
    writes: u32,
    /// In which of its holds this client stalls, until it has.
    stall_at: Option<u32>,
}

/// The client actor (see the module docs); `stall_at` is the hold the
/// plan's stall lands in, if it is this client's.
pub(super) async fn client(actor: Actor, w: LockWorkload, stall_at: Option<u32>) -> ActorResult {
    let lock_conn = actor.connection(w.lock_node);
    let store_conn = if w.store_node == w.lock_node { lock_conn.clone() } else { actor.connection(w.store_node) };
    let lock = match w.lock {
        LockKind::Fenced => AnyLock::Fenced(fenced_lock(lock_conn, &w, actor.seed())?),
        LockKind::Naive => AnyLock::Naive(NaiveLock::new(lock_conn)),
    };
    let fenced = FencedStore::new(store_conn.clone());
    let unfenced = UnfencedStore::new(store_conn);
    let ttl = Ttl::from_millis(w.plan.ttl_ms)?;
    if let (true, AnyLock::Fenced(l)) = (w.modes, &lock) {
        read_back_settings(&actor, &w, l, &fenced, ttl)?;
    }
    let mut c = Client {
        actor: &actor,
        w: &w,
        unfenced,
        fenced,
        lock,
        ttl,
        rng: actor.rng(),
        mode_rng: actor.rng_for("mode"),
        edge_rng: actor.rng_for("edge"),
        read_rng: actor.rng_for("store-reads"),
        holds: 0,
        writes: 0,
        stall_at,
    };
    while actor.now() < w.plan.length_ms {
        if !c.mode_attempt().await? {
            c.plain_attempt().await;
        }
        sleep_ms(draw(&mut c.rng, w.plan.think_ms)).await;
    }
    Ok(())
}

/// Every client reads back what its `Lock`, keep-alive policy and store
/// say of themselves, against the settings they were built with (an
/// [`Op::Configured`] each). The edges of those settings' constructors are
/// the library's own tests (`tests/library/documented_edges.rs`).
fn read_back_settings(
    actor: &Actor,
    w: &LockWorkload,
    l: &Lock<SimConnection>,
    fenced: &FencedStore<SimConnection>,
    ttl: Ttl,
) -> ActorResult {
    let keep = redis_primitives::KeepAlive::thirds(l, ttl)?;
    actor.configured(
        "Lock",
        &[
            ("Lock::drift", format!("{:?}", l.drift()), format!("{:?}", lock_drift(w)?)),
            ("Lock::key", l.key(LOCK_NAME)?, format!("lock:{{{LOCK_NAME}}}")),
            ("Lock::fence_key", l.fence_key(LOCK_NAME)?, format!("lock:{{{LOCK_NAME}}}:fence")),
            (
                "KeepAlive::every",
                format!("{:?}", keep.every()),
                format!("{:?}", core::time::Duration::from_millis(w.plan.ttl_ms) / 3),
            ),
            ("KeepAlive::ttl", keep.ttl().to_string(), ttl.to_string()),
            ("FencedStore::redis_key", fenced.redis_key(RESOURCE_KEY)?, format!("fenced:{{{RESOURCE_KEY}}}")),
        ],
    );
    Ok(())
}

/// The share of a modes client's attempts that begin with a burst of
/// store reads.
const STORE_READ_SHARE: f64 = 0.5;

/// Three to eight reads of the fenced resource, 0-3 ms apart: a reader polling
/// a value that other clients write. Whoever holds the lock may be writing
/// at that moment, and this client's faults (pauses, held requests,
/// partitions) hold its reads in flight as they do its writes, so reads
/// overlap writes (`store-read-overlapped-write`) and each must return one
/// write's value and token, current at some instant of its span.
async fn read_burst(actor: &Actor, store: &FencedStore<SimConnection>, rng: &mut StdRng) {
    for _ in 0..rng.random_range(3..=8u32) {
        read_fenced(actor, store).await;
        let gap = rng.random_range(0..=3u64);
        if gap > 0 {
            sleep_ms(gap).await;
        }
    }
}

impl Client<'_> {
    /// A mode attempt, when the workload has modes and this attempt draws
    /// one other than plain (from the modes' own stream, after a read of
    /// the lock's state now and then); whether it ran.
    async fn mode_attempt(&mut self) -> turmoil::Result<bool> {
        let (true, AnyLock::Fenced(l)) = (self.w.modes, &self.lock) else { return Ok(false) };
        if self.w.store == StoreKind::Fenced && self.read_rng.random_bool(STORE_READ_SHARE) {
            read_burst(self.actor, &self.fenced, &mut self.read_rng).await;
        }
        if self.mode_rng.random_bool(0.15) {
            read_lock_state(self.actor, l, &mut self.mode_rng).await;
        }
        let mode = Mode::draw(&mut self.mode_rng);
        if mode == Mode::Plain {
            return Ok(false);
        }
        let mut cx = Ctx {
            actor: self.actor,
            w: self.w,
            lock: l,
            store: &self.fenced,
            ttl: self.ttl,
            rng: &mut self.mode_rng,
            holds: &mut self.holds,
            writes: &mut self.writes,
            stall_at: self.stall_at,
        };
        attempt(&mut cx, mode).await?;
        self.stall_at = cx.stall_at;
        Ok(true)
    }

    /// One plain attempt: acquire; hold, with the plan's stall if this is
    /// its hold; if the client checks its lease, give up once it is no
    /// longer trusted; write; release.
    async fn plain_attempt(&mut self) {
        let Some((token, held)) = self.acquire().await else { return };
        self.holds += 1;
        // The critical section: work, perhaps with a stall in the middle.
        let stalled = self.stall_at == Some(self.holds);
        if stalled {
            self.stall_at = None;
            self.actor.stall(self.w.stall_ms(), "inside its critical section");
        }
        self.hold(&held).await;
        if !self.still_trusted(&held, token, stalled) {
            return;
        }
        self.writes += 1;
        let value = format!("{}-{}", self.actor.name(), self.writes);
        let beside = match (self.w.modes, self.w.store) {
            (true, StoreKind::Fenced) => Beside::draw(self.actor, self.writes),
            _ => Beside::Alone,
        };
        let write = write(self.actor, self.w, &self.fenced, &self.unfenced, &value, token);
        beside.run(self.actor, &self.fenced, write).await;
        self.release(&held, token).await;
    }

    /// The acquire, recorded; the token (none for the naive lock) and what
    /// a release needs, when granted.
    async fn acquire(&mut self) -> Option<(Option<u64>, Held)> {
        let (actor, w) = (self.actor, self.w);
        let acquire_op =
            |token, deadline| LockOp::Acquire { name: LOCK_NAME.into(), ttl_ms: w.plan.ttl_ms, token, deadline };
        let api = match &self.lock {
            AnyLock::Fenced(_) => LOCK_ACQUIRE,
            AnyLock::Naive(_) => NAIVE_LOCK_ACQUIRE,
        };
        let id = actor.call(api, acquire_op(None, None));
        let sent = actor.now();
        let got = match &self.lock {
            AnyLock::Fenced(l) => l.acquire(LOCK_NAME, self.ttl).await.map(|o| {
                o.map(|lease| {
                    let token = lease.token().get();
                    let deadline = actor.millis_of(lease.local_deadline());
                    (Some(token), deadline, Held::Fenced(lease))
                })
            }),
            // A naive client believes its lease lasts the TTL from the send.
            AnyLock::Naive(l) => {
                l.acquire(LOCK_NAME, self.ttl).await.map(|ok| ok.then_some((None, sent + w.plan.ttl_ms, Held::Naive)))
            }
        };
        let (token, deadline, held) = match got {
            Ok(Some(x)) => x,
            Ok(None) => {
                actor.fail(id, acquire_op(None, None));
                return None;
            }
            // Refused for want of a replica's acknowledgement: the lease
            // was not handed out (and was released), a refusal like `None`.
            Err(e @ redis_primitives::Error::NotAcknowledged { .. }) => {
                actor.fail(id, acquire_op(None, None));
                if let redis_primitives::Error::NotAcknowledged { key, .. } = &e {
                    actor.observe(Op::NotAcknowledged { key: key.clone(), invoked: sent });
                }
                actor.reached(variants::failover::situation::ACQUIRE_NOT_ACKNOWLEDGED);
                actor.note(format!("acquire: {e}"));
                return None;
            }
            Err(e) => {
                actor.errored(id, acquire_op(None, None), &e);
                actor.note(format!("acquire: {e}"));
                return None;
            }
        };
        actor.ok(id, acquire_op(token, Some(deadline)));
        Some((token, held))
    }

    /// The hold: a drawn time, or, half the time with the modes on, up to
    /// the lease's local deadline or a millisecond before it.
    async fn hold(&mut self, held: &Held) {
        let hold = draw(&mut self.rng, self.w.plan.hold_ms);
        match (held, self.w.modes && self.edge_rng.random_bool(0.5)) {
            // The instant that matters: the trust check lands exactly on
            // the local deadline, or one millisecond before it.
            (Held::Fenced(lease), true) => {
                let edge = self.actor.millis_of(lease.local_deadline()) - self.edge_rng.random_range(0..=1);
                let now = self.actor.now();
                sleep_ms(edge.saturating_sub(now)).await;
                if self.w.modes {
                    self.actor.reached(situation::TRUST_CHECKED_AT_THE_DEADLINE);
                }
            }
            _ => sleep_ms(hold).await,
        }
    }

    /// Whether the holder may write: always, for a client that does not
    /// check its lease; otherwise only while the lease is trusted (a loss
    /// is recorded).
    fn still_trusted(&self, held: &Held, token: Option<u64>, stalled: bool) -> bool {
        let (actor, w) = (self.actor, self.w);
        let trusted = match held {
            Held::Fenced(lease) if w.modes => view(actor, lease),
            Held::Fenced(lease) => lease.is_trusted(),
            Held::Naive => true,
        };
        if w.check_deadline && !trusted {
            if stalled && w.modes {
                actor.reached(situation::LEASE_EXPIRED_WHILE_PAUSED);
            }
            actor.observe(LockOp::LeaseLost {
                name: LOCK_NAME.into(),
                token,
                reason: "local deadline passed before the write".into(),
            });
            return false;
        }
        true
    }

    /// The release, recorded.
    async fn release(&self, held: &Held, token: Option<u64>) {
        let actor = self.actor;
        let release_op = LockOp::Release { name: LOCK_NAME.into(), token };
        let api = match &self.lock {
            AnyLock::Fenced(_) => LOCK_RELEASE,
            AnyLock::Naive(_) => NAIVE_LOCK_RELEASE,
        };
        let id = actor.call(api, release_op.clone());
        let released = match (&self.lock, held) {
            (AnyLock::Fenced(l), Held::Fenced(lease)) => l.release(lease).await,
            (AnyLock::Naive(l), _) => l.release(LOCK_NAME).await,
            (AnyLock::Fenced(_), Held::Naive) => Ok(false),
        };
        match released {
            Ok(true) => actor.ok(id, release_op),
            Ok(false) => actor.fail(id, release_op),
            Err(e) => actor.errored(id, release_op, &e),
        }
    }
}

/// The holder's write of `value` with `token`, to the variant's store,
/// recorded.
async fn write(
    actor: &Actor,
    w: &LockWorkload,
    fenced: &FencedStore<SimConnection>,
    unfenced: &UnfencedStore<SimConnection>,
    value: &str,
    token: Option<u64>,
) {
    let is_fenced = w.store == StoreKind::Fenced;
    let op = |result| Op::Write { key: RESOURCE_KEY.into(), value: value.into(), token, fenced: is_fenced, result };
    let api = if is_fenced { FENCED_STORE_WRITE } else { UNFENCED_STORE_WRITE };
    let id = actor.call(api, op(None));
    match (w.store, token) {
        (StoreKind::Fenced, Some(t)) => {
            match fenced.write(RESOURCE_KEY, value, redis_primitives::FencingToken::new(t)).await {
                Ok(WriteOutcome::Accepted) => actor.ok(id, op(Some(WriteResult::Accepted))),
                Ok(WriteOutcome::Rejected { highest_seen, .. }) => {
                    if w.modes {
                        actor.reached(situation::STALE_WRITE_REFUSED);
                    }
                    actor.ok(id, op(Some(WriteResult::Rejected { highest_seen: highest_seen.get() })))
                }
                Err(e) => actor.errored(id, op(None), &e),
            }
        }
        _ => match unfenced.write(RESOURCE_KEY, value).await {
            Ok(()) => actor.ok(id, op(Some(WriteResult::Accepted))),
            Err(e) => actor.errored(id, op(None), &e),
        },
    }
}
