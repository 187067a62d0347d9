//! Election scenarios: `election`, `election-renew-only`, `election-no-epoch`,
//! and the reference's three election figures in simulated time.
//!
//! Every node is an actor running the production [`Election`] (or the broken
//! [`NaiveElection`]) over a simulated connection to one bridged redis-server,
//! with the reference's settings: lease 400 ms, renew every 100 ms, campaign
//! every 25 ms. Each node runs three things under its pause handle:
//!
//! - the election's own `run()` loop, spawned through the actor so that a
//!   process pause freezes it too;
//! - a **writer**: every 30–70 ms (seeded), if the node may act as leader, it
//!   writes to the resource `resource` — a [`FencedStore`] write carrying the
//!   epoch, or for `election-no-epoch` a plain `SET` with nothing to order it;
//! - an **observer** that samples the node's belief every simulated
//!   millisecond and records `Role` events when it changes. For a
//!   self-fencing node the recorded leader events carry the lease's local
//!   deadline, so its reign ends there even while it is frozen and cannot
//!   record anything (see `stats::reigns`).
//!
//! The workload injects two faults itself, at seeded moments, because they
//! must hit *the leader*, whoever that turns out to be: the node leading at
//! `stall_at` freezes for 500–1500 ms (a GC pause), and the node leading at
//! `stop_at` calls `stop()` (a clean hand-over). The nemesis adds 0–2
//! generated faults (partitions, holds, latency, client and server pauses)
//! on top.
//!
//! Checked: the `election` invariant (one leader per epoch, epochs increase,
//! no lower-epoch write accepted after a higher one). Measured: split-brain
//! window, failover (a stall longer than the lease, until another node
//! leads) and hand-over (from `stop()` until another node leads).

use std::cell::Cell;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use crate::api::{
    ELECTION_RUN, ELECTION_STOP, FENCED_STORE_READ, FENCED_STORE_WRITE, NAIVE_ELECTION_RUN, NAIVE_ELECTION_STOP,
    NAIVE_ELECTION_WRITE,
};
use crate::history::Api;
use crate::history::Millis;
use core::time::Duration;
use rand::Rng;
use redis_primitives::election::{Demotion, DemotionReason, Election, Leadership};
use redis_primitives::naive::NaiveElection;
use redis_primitives::{Acknowledgement, FencedStore, FencingToken, OwnerSource, Tokens, WriteOutcome};
use serde::{Deserialize, Serialize};

use crate::family::Family;
use tokio::sync::watch;
use tokio::time::{sleep, Instant};

use crate::checker;
use crate::checker::key_lifetimes::{Life, Rule};
use crate::history::{FaultRecord, Op, Published, Role, WriteResult};
use crate::nemesis::{Fault, FaultClass, Schedule};
use crate::net::SimConnection;
use crate::scenarios::{outcome_from, Outcome, Situation};
use crate::servers::{Servers, SetupError};
use crate::space::FaultSpace;
use crate::stats::{self, Histograms};
use crate::world::{Actor, World, WorldConfig};
use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;

pub mod checks;
pub mod probe;

/// Election name used by every scenario.
pub const ELECTION_NAME: &str = "leader";
/// The resource key leaders write to.
pub const RESOURCE: &str = "resource";

/// The reference's settings.
const LEASE_MS: u64 = 400;
const RENEW_MS: u64 = 100;
const CAMPAIGN_MS: u64 = 25;
/// How long the two requests of [`ElectionPlan::slow_renewals`] wait.
const SLOW_RENEWALS_MS: [u64; 2] = [200, 240];
/// The latest injection time of those, early enough that both held requests
/// (sent within a renewal interval of each other) have run before the quiet
/// tail, if the node is not frozen meanwhile.
const SLOWED_SPAN_MS: u64 = 200 + 240 + 300;

/// Which election is under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Variant {
    /// [`Election`] with self-fencing ([`Demotion::AtDeadline`]) and fenced writes.
    Election,
    /// [`Election`] with the reference's [`Demotion::OnRenewTick`], fenced writes.
    RenewOnly,
    /// [`NaiveElection`]: no epoch, unfenced writes.
    NoEpoch,
    /// `election-failover`: [`Election`] on a primary whose replica is
    /// promoted after a replication cut (`scenarios/lock_failover.rs` has
    /// the story): epochs are reissued.
    Failover,
    /// `election-failover-acknowledged`: the same, campaigns acknowledged
    /// by the replica (`WAIT 1`).
    FailoverAcknowledged,
    /// `election-failover-floored`: the same, time-floored epochs.
    FailoverFloored,
}

impl Variant {
    /// The scenario name.
    pub fn scenario(self) -> &'static str {
        match self {
            Variant::Election => "election",
            Variant::RenewOnly => "election-renew-only",
            Variant::NoEpoch => "election-no-epoch",
            Variant::Failover => "election-failover",
            Variant::FailoverAcknowledged => "election-failover-acknowledged",
            Variant::FailoverFloored => "election-failover-floored",
        }
    }

    /// Whether nodes demote themselves at the lease's deadline
    /// ([`Demotion::AtDeadline`], and what is judged of it).
    fn at_deadline(self) -> bool {
        matches!(self, Variant::Election | Variant::Failover | Variant::FailoverAcknowledged | Variant::FailoverFloored)
    }

    /// Whether the election's node has a replica, cut and failed over.
    fn fails_over(self) -> bool {
        matches!(self, Variant::Failover | Variant::FailoverAcknowledged | Variant::FailoverFloored)
    }
}

/// Election workload: nodes campaigning for one election and writing a
/// resource while they lead (`scenarios/election.rs`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ElectionPlan {
    /// Election nodes.
    pub nodes: u32,
    /// Leader lease (ms).
    pub lease_ms: u64,
    /// Renewal interval (ms).
    pub renew_ms: u64,
    /// Campaign interval (ms).
    pub campaign_ms: u64,
    /// Actors return at this simulated time.
    pub length_ms: Millis,
    /// Node i starts campaigning at `i * stagger_ms`.
    pub stagger_ms: u64,
    /// The node leading at `at` freezes for `ms` (a GC pause).
    pub stall: Option<LeaderStall>,
    /// The stall lands between that leader's leadership check and its next
    /// write (a targeted fault: the write leaves with an ended term's epoch).
    #[serde(default)]
    pub stall_mid_write: bool,
    /// The election's fence counter starts at this value (`None`: absent,
    /// so the first epoch is 1). Seeds use 2^53 − 2, so epochs cross 2^53.
    #[serde(default)]
    pub epoch_base: Option<u64>,
    /// The node leading at this time calls `stop()` (a clean hand-over).
    pub stop_at: Option<Millis>,
    /// Every node freezes for a lease right after its first campaign is
    /// sent (a targeted fault: the winner sees its reply after its own
    /// deadline).
    #[serde(default)]
    pub slow_first_campaign: bool,
    /// The node leading at this time has its next two requests held at the
    /// server, 200 and then 240 ms (each inside the 250 ms response timeout):
    /// the second renewal, sent late because the first took so long, is
    /// answered after the lease's deadline (a targeted fault: the deadline
    /// race in the renewal, and `OnRenewTick` leading on past it).
    #[serde(default)]
    pub slow_renewals: Option<Millis>,
}

/// The node leading at `at` freezes for `ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeaderStall {
    /// When (simulated ms).
    pub at: Millis,
    /// For how long (ms).
    pub ms: u64,
}

/// What the workload did (for measurements after the run).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Marker {
    Stall {
        node: String,
        at: u64,
        duration: u64,
    },
    Stop {
        node: String,
        at: u64,
        /// How long the server held the reply to the hand-back (the lease's
        /// delete ran at once); 0 when it was not held.
        held_ms: u64,
    },
    /// [`ElectionPlan::slow_renewals`] was injected at `at`; the held
    /// requests ran by `until` (from the bridge's execution log; the end of
    /// the run if one never went out).
    Slowed {
        at: u64,
        until: u64,
    },
    /// The renewal `node` sent next after `at` was held at the server past
    /// the response timeout (`renewal_timed_out_at`); by `until` the node
    /// must have stopped leading the term it led at `at`.
    TimedOut {
        node: String,
        at: u64,
        until: u64,
    },
    /// At `at` the lease key of `node` (leading then) was overwritten with
    /// another owner (`lease_key_taken_at`); by `until`
    /// its next renewal has been refused and its term must be over. The
    /// key is someone else's until `expires`: nobody leads before that.
    TakenAway {
        node: String,
        at: u64,
        until: u64,
        expires: u64,
    },
}

impl Marker {
    /// The span in which this workload fault disturbs the run (`None` for a
    /// clean `stop()`).
    fn disturbs(&self) -> Option<(u64, u64)> {
        match self {
            Marker::Stall { at, duration, .. } => Some((*at, at + duration)),
            Marker::Slowed { at, until } | Marker::TimedOut { at, until, .. } => Some((*at, *until)),
            Marker::TakenAway { at, expires, .. } => Some((*at, *expires)),
            Marker::Stop { .. } => None,
        }
    }

    /// For a `stop()`: the node, and the instant its hand-over may start.
    /// A held reply may be that of a renewal in flight when stop() came,
    /// and the run loop sees stop() only after it: `held_ms` after `at`.
    fn stop(&self) -> Option<(&str, u64)> {
        match self {
            Marker::Stop { node, at, held_ms } => Some((node.as_str(), at + held_ms)),
            Marker::Stall { .. } | Marker::Slowed { .. } | Marker::TimedOut { .. } | Marker::TakenAway { .. } => None,
        }
    }
}

/// The election's lease key, which the aimed delays mention (not the
/// fence counter's or the resource's requests).
fn lease_key(actor: &Actor) -> String {
    keys_of(actor, ELECTION_NAME).0
}

/// The keys an election on `name` keeps its lease and its fence counter
/// at, as the library names them: asked of an election built for nothing
/// else (it never runs; its connection is never opened), so that what the
/// workloads aim at follows the library's naming.
///
/// # Panics
/// If the library refuses `name`: a scenario bug, caught on the first run.
pub(super) fn keys_of(actor: &Actor, name: &str) -> (String, String) {
    let keys = Election::builder(actor.connection(0), name).build().and_then(|e| {
        let lock = e.lock();
        Ok((lock.key(name)?, lock.fence_key(name)?))
    });
    match keys {
        Ok(k) => k,
        Err(e) => panic!("scenario bug: the election name {name:?} is refused: {e}"),
    }
}

enum Node {
    Fenced { election: Election<SimConnection>, store: FencedStore<SimConnection> },
    Naive(NaiveElection<SimConnection>),
}

impl Node {
    /// `Some((epoch, trusted-until))` while the node may act as leader.
    fn belief(&self) -> Option<(Option<u64>, Option<Instant>)> {
        match self {
            Node::Fenced { election, .. } => {
                let epoch = election.epoch()?;
                let deadline = match election.demotion() {
                    Demotion::AtDeadline => election.leader_lease().map(|l| l.local_deadline),
                    _ => None,
                };
                Some((Some(epoch.get()), deadline))
            }
            Node::Naive(n) => n.is_leader().then_some((None, None)),
        }
    }

    /// Everything the election's accessors say now, as an
    /// [`Op::ElectionView`] (`None` for the naive election).
    fn view(&self, actor: &Actor) -> Option<Op> {
        let Node::Fenced { election, .. } = self else { return None };
        let leadership = election.leadership();
        let accessors = (
            leadership.is_leader(),
            leadership.epoch().map(|e| e.get()),
            leadership.last_demotion().map(|d| d.epoch.get()),
        );
        let published = published_of(actor, &leadership);
        Some(Op::ElectionView {
            name: election.name().to_string(),
            is_leader: election.is_leader(),
            epoch: election.epoch().map(|e| e.get()),
            lease: election
                .leader_lease()
                .map(|l| (l.epoch.get(), actor.micros_of(l.sent_at), actor.micros_of(l.local_deadline))),
            published,
            accessors,
            demotion_reason: self.last_demotion().map(|(_, reason)| reason.to_string()),
        })
    }

    /// The `run` and `stop` this node calls (for the operations table).
    fn apis(&self) -> (Api, Api) {
        match self {
            Node::Fenced { .. } => (ELECTION_RUN, ELECTION_STOP),
            Node::Naive(_) => (NAIVE_ELECTION_RUN, NAIVE_ELECTION_STOP),
        }
    }

    /// How the node's most recent term ended, as its run loop published it:
    /// `(epoch, reason)`, the reason as a situation-name suffix.
    fn last_demotion(&self) -> Option<(u64, &'static str)> {
        let Node::Fenced { election, .. } = self else { return None };
        let leadership = election.leadership();
        let d = leadership.last_demotion()?;
        let reason = match d.reason {
            DemotionReason::LeaseLost => "lease-lost",
            DemotionReason::RedisError(_) => "redis-error",
            DemotionReason::DeadlineReached => "deadline-reached",
            DemotionReason::Stopped => "stopped",
            DemotionReason::Dropped => "dropped",
        };
        Some((d.epoch.get(), reason))
    }

    async fn run(&self, actor: &Actor) {
        let op = Op::Note { text: "run(): campaign and renew until stop()".into() };
        let id = actor.call(self.apis().0, op.clone());
        // `run()` ends only after `stop()`; its error (a failed hand-back)
        // is visible in the history as the lease simply expiring.
        let result = match self {
            Node::Fenced { election, .. } => election.run().await,
            Node::Naive(n) => n.run().await,
        };
        match result {
            Ok(()) => actor.ok(id, op),
            Err(e) => actor.errored(id, op, &e),
        }
    }

    async fn stop(&self, actor: &Actor) {
        let op = Op::Note { text: "stop(): hand the lease back".into() };
        let id = actor.call(self.apis().1, op.clone());
        match self {
            Node::Fenced { election, .. } => election.stop().await,
            Node::Naive(n) => n.stop().await,
        }
        actor.ok(id, op);
    }

    /// One write attempt, recorded, if the node believes it leads.
    /// Whether the node may act as leader now: `Some(epoch)` (`Some(None)`
    /// for an election without epochs) or `None`.
    fn may_write(&self) -> Option<Option<FencingToken>> {
        match self {
            Node::Fenced { election, .. } => election.epoch().map(Some),
            Node::Naive(n) => n.is_leader().then_some(None),
        }
    }

    /// One write, recorded, carrying the epoch the node had when it decided
    /// to write (`may_write`): what a real leader does between checking
    /// and writing, where a pause turns it into a stale leader.
    async fn write(&self, actor: &Actor, value: String, believed: Option<FencingToken>) {
        match self {
            Node::Fenced { store, .. } => {
                let Some(epoch) = believed else { return };
                let op = |result| Op::Write {
                    key: RESOURCE.into(),
                    value: value.clone(),
                    token: Some(epoch.get()),
                    fenced: true,
                    result,
                };
                let id = actor.call(FENCED_STORE_WRITE, op(None));
                let invoked = actor.now();
                match store.write(RESOURCE, value.as_bytes(), epoch).await {
                    Ok(WriteOutcome::Accepted) => actor.ok(id, op(Some(WriteResult::Accepted))),
                    Ok(WriteOutcome::Rejected { highest_seen, .. }) => {
                        actor.ok(id, op(Some(WriteResult::Rejected { highest_seen: highest_seen.get() })))
                    }
                    // Applied on the primary, unconfirmed by the replica: a
                    // failover may lose it, so its outcome is unknown.
                    Err(e @ redis_primitives::Error::NotAcknowledged { .. }) => {
                        actor.info(id, op(None));
                        if let redis_primitives::Error::NotAcknowledged { key, .. } = &e {
                            actor.observe(Op::NotAcknowledged { key: key.clone(), invoked });
                        }
                        actor.reached(WRITE_NOT_ACKNOWLEDGED.name);
                        actor.note(format!("write: {e}"));
                    }
                    Err(e) => actor.errored(id, op(None), &e),
                }
            }
            Node::Naive(n) => {
                let op = |result| Op::Write {
                    key: RESOURCE.into(),
                    value: value.clone(),
                    token: None,
                    fenced: false,
                    result,
                };
                let id = actor.call(NAIVE_ELECTION_WRITE, op(None));
                match n.write(RESOURCE, value.as_bytes()).await {
                    Ok(true) => actor.ok(id, op(Some(WriteResult::Accepted))),
                    Ok(false) => actor.fail(id, op(None)),
                    Err(e) if e.outcome_is_unknown() => actor.info(id, op(None)),
                    Err(_) => actor.fail(id, op(None)),
                }
            }
        }
    }
}

fn build_node(
    variant: Variant,
    conn: SimConnection,
    actor: &Actor,
    (lease_ms, renew_ms, campaign_ms): (u64, u64, u64),
) -> redis_primitives::Result<Node> {
    let builder = Election::builder(conn.clone(), ELECTION_NAME)
        .lease_ttl(Duration::from_millis(lease_ms))
        .renew_interval(Duration::from_millis(renew_ms))
        .campaign_interval(Duration::from_millis(campaign_ms))
        .owners(OwnerSource::seeded(actor.seed()));
    // The callbacks record themselves (judged by election-views).
    let builder = if variant == Variant::NoEpoch {
        builder
    } else {
        let (h, who) = (actor.history().clone(), actor.name().to_string());
        let (h2, who2) = (h.clone(), who.clone());
        builder
            .on_elected(move |epoch| {
                h.observe(&who, Op::ElectionCallback { elected: true, epoch: epoch.get(), deadline_reached: false })
            })
            .on_demoted(move |d| {
                let deadline_reached = matches!(d.reason, DemotionReason::DeadlineReached);
                h2.observe(&who2, Op::ElectionCallback { elected: false, epoch: d.epoch.get(), deadline_reached })
            })
    };
    Ok(match variant {
        Variant::Election | Variant::Failover => {
            Node::Fenced { election: builder.build()?, store: FencedStore::new(conn) }
        }
        // The store shares the election's node (and its replica): its
        // writes wait for the replica too, so that one made during the cut
        // is reported unconfirmed rather than lost at the failover unseen
        // (`acknowledged-writes`).
        Variant::FailoverAcknowledged => {
            let ack = Acknowledgement::new(1, Duration::from_millis(crate::scenarios::lock::ACK_TIMEOUT_MS))?;
            Node::Fenced {
                election: builder.acknowledged(ack).build()?,
                store: FencedStore::new(conn).acknowledged(ack),
            }
        }
        Variant::FailoverFloored => {
            Node::Fenced { election: builder.tokens(Tokens::TimeFloored).build()?, store: FencedStore::new(conn) }
        }
        Variant::RenewOnly => {
            Node::Fenced { election: builder.demotion(Demotion::OnRenewTick).build()?, store: FencedStore::new(conn) }
        }
        Variant::NoEpoch => Node::Naive(NaiveElection::new(builder)?),
    })
}

/// What a `subscribe()` receiver holds against what `leadership()`
/// publishes (`published`, taken from the view just recorded): an
/// [`Op::SubscriberView`] when the receiver holds something else, or was
/// not notified of a change since it last looked (`seen`); nothing when it
/// agrees (judged by `election-views`).
fn check_subscriber(
    actor: &Actor,
    rx: &mut watch::Receiver<Leadership>,
    seen: &mut Option<Published>,
    published: Published,
) {
    let notified = rx.has_changed().unwrap_or(false);
    let received = published_of(actor, &rx.borrow_and_update());
    let missed = seen.is_some_and(|s| s != received) && !notified;
    if missed || received != published {
        actor.observe(Op::SubscriberView { published, received, notified });
    }
    *seen = Some(received);
}

/// A published role as the history records it.
fn published_of(actor: &Actor, leadership: &Leadership) -> Published {
    match leadership {
        Leadership::Leader { epoch, elected_at } => {
            Published::Leader { epoch: epoch.get(), elected_at_ms: actor.millis_of(*elected_at) }
        }
        Leadership::Follower { last_demotion } => {
            Published::Follower { demoted: last_demotion.as_ref().map(|d| d.epoch.get()) }
        }
        Leadership::Stopped { last_demotion } => {
            Published::Stopped { demoted: last_demotion.as_ref().map(|d| d.epoch.get()) }
        }
    }
}

/// Freezes the leader `actor` for `duration` ms (a GC pause), recorded as
/// a fault and a marker.
fn stall_leader(actor: &Actor, markers: &Mutex<Vec<Marker>>, duration: u64, when: &str) {
    let process = actor.name().to_string();
    let moment = (!when.is_empty()).then(|| when.to_string());
    actor.history().fault(FaultRecord::LeaderStall { process, ms: duration, when: moment });
    if let Ok(mut m) = markers.lock() {
        m.push(Marker::Stall { node: actor.name().to_string(), at: actor.now(), duration });
    }
    let when = if when.is_empty() { String::new() } else { format!(" {when}") };
    actor.stall(duration, &format!("(the leader){when}"));
}

/// The body of one node actor.
async fn node_actor(
    actor: Actor,
    variant: Variant,
    plan: ElectionPlan,
    aimed: Aimed,
    markers: Arc<Mutex<Vec<Marker>>>,
) -> crate::world::ActorResult {
    let Aimed { timed_out_at, taken_at } = aimed;
    let start_at = actor.index() as u64 * plan.stagger_ms;
    if start_at > 0 {
        sleep(Duration::from_millis(start_at)).await;
    }
    if variant != Variant::NoEpoch && actor.index() == 0 {
        crate::scenarios::validation::election(&actor, &actor.connection(0))?;
    }
    let node =
        Arc::new(build_node(variant, actor.connection(0), &actor, (plan.lease_ms, plan.renew_ms, plan.campaign_ms))?);
    if let Node::Fenced { election, .. } = node.as_ref() {
        actor.observe(Op::ElectionConfig {
            name: election.name().to_string(),
            lease_ms: election.lease_ttl().as_millis(),
            renew_ms: election.renew_interval().as_millis() as u64,
            campaign_ms: election.campaign_interval().as_millis() as u64,
            demotion: format!("{:?}", election.demotion()),
        });
    }
    let mut last_view = None;
    if let (Some(base), Node::Fenced { election, .. }) = (plan.epoch_base, node.as_ref()) {
        // Every node presets the counter if nobody has yet (NX), before its
        // own first campaign: no acquire can precede the preset.
        let key = election.lock().fence_key(ELECTION_NAME)?;
        let mut conn = actor.connection(0);
        let set: redis::RedisResult<Option<String>> =
            redis::cmd("SET").arg(&key).arg(base).arg("NX").query_async(&mut conn).await;
        if let Ok(Some(_)) = set {
            actor.note(format!("fence counter {key} preset to {base}"));
        }
    }
    let runner = {
        let node = Arc::clone(&node);
        let actor = actor.clone();
        actor.clone().spawn(async move { node.run(&actor).await })
    };
    if plan.slow_first_campaign {
        // Every node freezes right after its first campaign is sent, for
        // longer than a lease: the one whose acquire won sees the reply only
        // after its own deadline, and must hand the key back rather than
        // lead on a lease it can no longer trust.
        sleep(Duration::from_millis(1)).await;
        actor.stall(plan.lease_ms + 10 + 17 * actor.index() as u64, "right after its first campaign was sent");
        actor.reached("campaign-answered-past-its-deadline");
    }
    // A stall the observer hands to the writer, to land between its check
    // and its write (`stall_mid_write`).
    let pending_stall: Rc<Cell<Option<u64>>> = Rc::new(Cell::new(None));
    let writer = {
        let node = Arc::clone(&node);
        let actor = actor.clone();
        let end = plan.length_ms;
        let pending_stall = Rc::clone(&pending_stall);
        let markers = Arc::clone(&markers);
        actor.clone().spawn(async move {
            let mut rng = actor.rng_for("writes");
            while actor.now() < end {
                sleep(Duration::from_millis(rng.random_range(30..=70))).await;
                if actor.now() >= end {
                    break;
                }
                let checked = node.may_write();
                if matches!(*node, Node::Fenced { .. }) {
                    actor.observe(Op::EpochCheck { epoch: checked.flatten().map(|e| e.get()) });
                }
                let Some(believed) = checked else { continue };
                if let Some(duration) = pending_stall.take() {
                    // Checked, then frozen before the write goes out: it
                    // leaves with the epoch of a term that ended meanwhile.
                    stall_leader(&actor, &markers, duration, "between its leadership check and its write");
                    // The pause takes hold at this task's next await: yield
                    // here, so the write is sent after the stall (with a
                    // fresh response timeout) rather than queued before it.
                    tokio::task::yield_now().await;
                }
                let value = format!("{}@{}", actor.name(), actor.now());
                node.write(&actor, value, believed).await;
            }
        })
    };
    // The observer, which also injects the leader-targeted faults, and
    // reads a `subscribe()` receiver beside the accessors.
    let mut subscriber = match node.as_ref() {
        Node::Fenced { election, .. } => Some(election.subscribe()),
        Node::Naive(_) => None,
    };
    let mut subscriber_seen = None;
    let mut last: Option<(Option<u64>, Option<u64>)> = None;
    let mut stalled = false;
    let mut stopped = false;
    let mut stopping = None;
    let mut last_demotion = None;
    let mut slowed = false;
    let mut timed_out = false;
    let mut taken = false;
    loop {
        let now = actor.now();
        let belief = node.belief().map(|(epoch, deadline)| (epoch, deadline.map(|d| actor.millis_of(d))));
        match (last, belief) {
            (None, Some((epoch, deadline))) => {
                actor.observe(Op::Role { election: ELECTION_NAME.into(), role: Role::Leader, epoch, deadline });
            }
            (Some(old), Some((epoch, deadline))) if old != (epoch, deadline) => {
                // A new epoch, or the same one renewed (a later deadline).
                actor.observe(Op::Role { election: ELECTION_NAME.into(), role: Role::Leader, epoch, deadline });
            }
            (Some((epoch, _)), None) => {
                // After `stop()` was called the node stops believing when the
                // library demotes it, which this loop sees within 1 ms.
                let role = if stopped { Role::Resigned } else { Role::Follower };
                actor.observe(Op::Role { election: ELECTION_NAME.into(), role, epoch, deadline: None });
            }
            _ => {}
        }
        let leading = belief.is_some();
        last = belief;
        if let Some(view) = node.view(&actor) {
            if let (Some(rx), Op::ElectionView { published, .. }) = (subscriber.as_mut(), &view) {
                check_subscriber(&actor, rx, &mut subscriber_seen, *published);
            }
            if last_view.as_ref() != Some(&view) {
                actor.observe(view.clone());
                last_view = Some(view);
            }
        }
        let demotion = node.last_demotion();
        if demotion != last_demotion {
            if let Some((_, reason)) = demotion {
                actor.reached(&format!("demoted-{reason}"));
            }
            last_demotion = demotion;
        }
        if now >= plan.length_ms {
            break;
        }
        if let Some(LeaderStall { at, ms: duration }) = plan.stall {
            if !stalled && now >= at {
                stalled = true;
                if leading && plan.stall_mid_write {
                    pending_stall.set(Some(duration));
                } else if leading {
                    stall_leader(&actor, &markers, duration, "");
                }
            }
        }
        if let Some(at) = plan.slow_renewals {
            // Once per run: the first leader to reach `at`.
            let first = !slowed
                && now >= at
                && leading
                && markers.lock().map(|m| !m.iter().any(|x| matches!(x, Marker::Slowed { .. }))).unwrap_or(false);
            if first {
                slowed = true;
                if let Ok(mut m) = markers.lock() {
                    m.push(Marker::Slowed { at: now, until: u64::MAX });
                }
                // Aimed at the renewals (the lease key), not the writes.
                for ms in SLOW_RENEWALS_MS {
                    actor.delay_next_request_mentioning(0, ms, &lease_key(&actor));
                }
                actor.reached("renewals-held-at-the-server");
            }
        }
        if let Some(at) = timed_out_at {
            // Once per run: the node leading at `at` (or within a renewal
            // interval of it; later would leave the quiet span it was
            // placed in).
            if !timed_out && now >= at {
                timed_out = true;
                let first =
                    markers.lock().map(|m| !m.iter().any(|x| matches!(x, Marker::TimedOut { .. }))).unwrap_or(false);
                if leading && first && now <= at + plan.renew_ms {
                    let until = now + timed_out_span(&plan, actor.net().response_timeout.as_millis() as u64);
                    if let Ok(mut m) = markers.lock() {
                        m.push(Marker::TimedOut { node: actor.name().to_string(), at: now, until });
                    }
                    actor.delay_next_request_mentioning(0, TIMED_OUT_HOLD_MS, &lease_key(&actor));
                    actor.reached(RENEWAL_TIMED_OUT.name);
                }
            }
        }
        if let Some(at) = taken_at {
            // Once per run: the node leading at `at` (or within a renewal
            // interval of it) finds its key overwritten with another owner.
            if !taken && now >= at {
                taken = true;
                if leading && now <= at + plan.renew_ms {
                    actor.spawn(take_lease_key(actor.clone(), plan.clone(), Arc::clone(&markers)));
                }
            }
        }
        if let Some(at) = plan.stop_at {
            // One clean hand-over per run: the first leader to reach `at`.
            let someone_stopped =
                markers.lock().map(|m| m.iter().any(|x| matches!(x, Marker::Stop { .. }))).unwrap_or(true);
            if !stopped && now >= at && leading && !someone_stopped {
                stopped = true;
                // On `election`, half the stops get the reply to their
                // hand-back held at the server (the delete runs at once):
                // the node must stop believing before it sends the release,
                // not when the reply comes back, and a held reply leaves the
                // followers (campaigning every 25 ms) time to win while a
                // node that got the order wrong still says leader.
                let held_ms = if variant == Variant::Election {
                    let mut rng = actor.rng_for("hand-back-held");
                    if rng.random_bool(0.5) {
                        rng.random_range(30..=150)
                    } else {
                        0
                    }
                } else {
                    0
                };
                if held_ms > 0 {
                    actor.delay_next_reply_mentioning(0, held_ms, &lease_key(&actor));
                    actor.reached(HAND_BACK_HELD.name);
                }
                if let Ok(mut m) = markers.lock() {
                    m.push(Marker::Stop { node: actor.name().to_string(), at: now, held_ms });
                }
                // Stopping runs beside this loop, which keeps sampling the
                // node's belief: the reign ends when the library demotes
                // (before it deletes the key), not when `stop()` returns,
                // which is a round trip later and after the next leader may
                // already have been elected.
                let node = Arc::clone(&node);
                let stopper = actor.clone();
                stopping = Some(actor.spawn(async move { node.stop(&stopper).await }));
            }
        }
        sleep(Duration::from_millis(1)).await;
    }
    match stopping {
        Some(task) => {
            let _ = task.await;
        }
        None => {
            if variant == Variant::Election && last.is_none() {
                stop_mid_campaign(&actor, &plan).await;
            }
            node.stop(&actor).await
        }
    }
    let _ = writer.await;
    let _ = runner.await;
    // What the node says once stopped (judged: `Stopped`, no lease), and
    // what its subscriber was told of it.
    if let Some(view) = node.view(&actor) {
        if let (Some(rx), Op::ElectionView { published, .. }) = (subscriber.as_mut(), &view) {
            check_subscriber(&actor, rx, &mut subscriber_seen, *published);
        }
        actor.observe(view);
    }
    Ok(())
}

fn world_config(seed: u64, variant: Variant) -> WorldConfig {
    let config = WorldConfig::new(seed);
    if variant.fails_over() {
        config.replicas(0, 1)
    } else {
        config
    }
}

/// On `election`, half the followers end their run with a campaign in
/// flight when they call `stop()`: the reply to their next campaign is held
/// at the server (the `SET` runs at once) for longer than the wait before
/// `stop()`. The leader stopped when the run ended, so that campaign may
/// well win the free key. A node told to stop while its campaign is in
/// flight must hand a won lease back and never lead on it (the
/// `election-views` rule "no `on_elected` after `stop()`"); every other stop
/// in a run comes from a leader, so without this nothing reaches that path.
async fn stop_mid_campaign(actor: &Actor, plan: &ElectionPlan) {
    if !actor.rng_for("campaign-held-at-stop").random_bool(0.5) {
        return;
    }
    // Long enough for the leader's hand-back (sent when the run ended) to
    // have run at the server, so the held campaign can win.
    sleep(Duration::from_millis(END_SETTLE_MS)).await;
    // The next campaign is sent within one campaign interval; its reply is
    // held past the `stop()` below, which comes at least 20 ms after it.
    actor.delay_next_reply_mentioning(0, plan.campaign_ms + 40, &lease_key(actor));
    sleep(Duration::from_millis(plan.campaign_ms + 20)).await;
    actor.reached(CAMPAIGN_HELD_AT_STOP.name);
}

/// How long a follower waits after the run's end before it holds its next
/// campaign's reply (`stop_mid_campaign`), ms.
const END_SETTLE_MS: u64 = 10;

/// Reads the resource once every node has stopped: `no-stale-overwrite`
/// then judges the final value against every accepted write.
async fn final_read(
    actor: Actor,
    read_at: u64,
    faults: Vec<(Millis, Millis)>,
    ack_at: Option<Millis>,
) -> crate::world::ActorResult {
    // The acknowledgement probe: a process of its own on the reader's host,
    // at the schedule's moment (a replication cut nothing else disturbs).
    let ack = ack_at.map(|at| {
        let prober = actor.alias("ack-prober");
        actor.spawn(async move {
            let ack = Acknowledgement::new(1, Duration::from_millis(crate::scenarios::lock::ACK_TIMEOUT_MS))?;
            let store = FencedStore::new(prober.connection(0)).acknowledged(ack);
            let what = "Acknowledged FencedStore::write";
            crate::scenarios::ack_probe::probe(&prober, at, crate::scenarios::lock::ACK_TIMEOUT_MS, what, || async {
                let written = store.write("ack-probe", b"v", FencingToken::new(1)).await?;
                Ok(written == WriteOutcome::Accepted)
            })
            .await
            .map(|_refused| ())
        })
    });
    // Idle until the read: the election probe runs meanwhile, on names of
    // its own.
    probe::probe(&actor, 0, &faults).await?;
    if let Some(ack) = ack {
        ack.await??;
    }
    let now = actor.now();
    if read_at > now {
        sleep(Duration::from_millis(read_at - now)).await;
    }
    let op = |value, token| Op::Read { key: RESOURCE.into(), value, token };
    let id = actor.call(FENCED_STORE_READ, op(None, None));
    match FencedStore::new(actor.connection(0)).read(RESOURCE).await {
        Ok(Some(s)) => actor.ok(id, op(Some(String::from_utf8_lossy(&s.value).into_owned()), Some(s.token.get()))),
        Ok(None) => actor.ok(id, op(None, None)),
        Err(e) => actor.errored(id, op(None, None), &e),
    }
    Ok(())
}

/// Runs one plan; returns the world's outcome and the workload's markers.
fn run_plan(
    servers: &mut Servers,
    seed: u64,
    variant: Variant,
    plan: &ElectionPlan,
    config: WorldConfig,
    schedule: Schedule,
    aimed: Aimed,
) -> Result<(crate::world::RunOutcome, Vec<Marker>), SetupError> {
    let markers = Arc::new(Mutex::new(Vec::new()));
    let mut world = World::new(servers, config)?;
    for i in 0..plan.nodes {
        let plan = plan.clone();
        let markers = Arc::clone(&markers);
        world.actor(format!("node-{i}"), move |actor| node_actor(actor, variant, plan, aimed, markers));
    }
    if variant != Variant::NoEpoch {
        let read_at = plan.length_ms + 200;
        // The reader's index: it comes after the nodes.
        let faults = schedule.spans_reaching(plan.nodes);
        let ack_at = (variant == Variant::FailoverAcknowledged)
            .then(|| {
                crate::scenarios::ack_probe::send_at(
                    &schedule,
                    0,
                    Some(plan.nodes),
                    crate::scenarios::lock::ACK_TIMEOUT_MS,
                )
            })
            .flatten();
        world.actor("reader", move |actor| final_read(actor, read_at, faults, ack_at));
    }
    world.nemesis(schedule);
    let run = world.run()?;
    let markers = markers.lock().map(|m| m.clone()).unwrap_or_default();
    let _ = seed;
    Ok((run, markers))
}

/// Failover and hand-over times found in a history, from the markers.
fn measure(
    events: &[crate::history::Event],
    markers: &[Marker],
    lease_ms: u64,
    h: &mut Histograms,
) -> (Vec<u64>, Vec<u64>) {
    h.declare(stats::FAILOVER);
    h.declare(stats::HANDOVER);
    let mut failovers = Vec::new();
    let mut handovers = Vec::new();
    for m in markers {
        match m {
            Marker::Stall { node, at, duration } if *duration > lease_ms => {
                // Only a takeover during the stall is a failover.
                if let Some(t) = stats::time_to_new_leader(events, ELECTION_NAME, node, *at) {
                    if t < *duration {
                        failovers.push(t);
                        h.record(stats::FAILOVER, t);
                    }
                }
            }
            Marker::Stop { node, at, held_ms } => {
                if let Some(t) = stats::time_to_new_leader(events, ELECTION_NAME, node, *at) {
                    handovers.push(t);
                    // A held reply may have landed on a renewal in flight
                    // (the loop sees stop() only after it): the hand-over
                    // figure (reference case 25) is that of unheld stops.
                    if *held_ms == 0 {
                        h.record(stats::HANDOVER, t);
                    }
                }
            }
            _ => {}
        }
    }
    (failovers, handovers)
}

/// The seeds' run length (ms); its last [`QUIET_TAIL_MS`] are a quiet
/// tail (no fault, no stall, no `stop()` starts there) in which
/// `liveness` is judged.
const SEED_LENGTH_MS: u64 = 3500;
/// See [`SEED_LENGTH_MS`].
const QUIET_TAIL_MS: u64 = 700;

/// What election plans may be drawn from (ranges inclusive; each shrinks
/// towards its first bound).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ElectionSpace {
    /// Nodes.
    pub nodes: (u32, u32),
    /// Lease (ms).
    pub lease_ms: (u64, u64),
    /// Renew every lease / this (the builder refuses more than half of the
    /// lease less its drift allowance).
    pub renew_div: (u64, u64),
    /// Campaign interval (ms).
    pub campaign_ms: (u64, u64),
    /// How long nodes run (ms).
    pub length_ms: (u64, u64),
    /// What the workload does to the leader.
    pub leader: LeaderFaults,
    /// Faults every plan gets (the cut and failover of `election-failover`).
    pub placed: Vec<Fault>,
}

/// The faults an election workload injects into its leader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaderFaults {
    /// None.
    None,
    /// Maybe a stall (at 200–2000 ms for 100–2000 ms) and maybe a `stop()`
    /// (at 300–3000 ms): each shrinks to none.
    Maybe,
    /// Exactly this stall, nothing else (`election-failover`: a change of
    /// leader inside the replication cut, so that an epoch is issued that
    /// the replica never sees).
    Stall(LeaderStall),
    /// The seeds' shape: a stall at 300–1200 ms for 500–1500 ms, a
    /// `stop()` after it when there is room before the quiet tail, and the
    /// edges (a stall between a write and its reply on half the plans,
    /// epochs from just below 2^53, a slow first campaign, slow renewals
    /// on a quarter each; the slow renewals placed clear of the stall and
    /// the `stop()`, which the plan drops when there is no room for both),
    /// and on `election` half the `stop()`s have the reply to their
    /// hand-back held 30–150 ms at the server.
    Seeded {
        /// The last this-many ms of the run see no fault start.
        quiet_tail_ms: u64,
    },
}

impl ElectionSpace {
    /// The property search's space: 1–4 nodes, lease 200–800 ms, renew a
    /// third to a fifth of it, 1.5–3.5 s, a maybe-stall and maybe-`stop()`.
    pub fn search() -> ElectionSpace {
        ElectionSpace {
            nodes: (1, 4),
            lease_ms: (200, 800),
            renew_div: (3, 5),
            campaign_ms: (10, 50),
            length_ms: (1500, 3500),
            leader: LeaderFaults::Maybe,
            placed: Vec::new(),
        }
    }

    /// What every election variant's seeds draw: three nodes with the
    /// reference's settings (lease 400, renew 100, campaign 25 ms) over
    /// 3.5 s, and the seeded leader faults.
    pub fn seeds() -> ElectionSpace {
        ElectionSpace {
            nodes: (3, 3),
            lease_ms: (LEASE_MS, LEASE_MS),
            renew_div: (LEASE_MS / RENEW_MS, LEASE_MS / RENEW_MS),
            campaign_ms: (CAMPAIGN_MS, CAMPAIGN_MS),
            length_ms: (SEED_LENGTH_MS, SEED_LENGTH_MS),
            leader: LeaderFaults::Seeded { quiet_tail_ms: QUIET_TAIL_MS },
            placed: Vec::new(),
        }
    }

    /// The strategy (the family's one generator).
    pub fn plans(&self) -> BoxedStrategy<(ElectionPlan, Vec<Fault>)> {
        let base = |nodes, lease_ms: u64, renew_div: u64, campaign_ms, length_ms| ElectionPlan {
            nodes,
            lease_ms,
            renew_ms: lease_ms / renew_div.max(1),
            campaign_ms,
            length_ms,
            stagger_ms: 0,
            stall: None,
            stall_mid_write: false,
            epoch_base: None,
            stop_at: None,
            slow_first_campaign: false,
            slow_renewals: None,
        };
        let (nodes, lease, div, campaign, length) = (
            self.nodes.0..=self.nodes.1,
            self.lease_ms.0..=self.lease_ms.1,
            self.renew_div.0..=self.renew_div.1,
            self.campaign_ms.0..=self.campaign_ms.1,
            self.length_ms.0..=self.length_ms.1,
        );
        let placed = self.placed.clone();
        match self.leader {
            LeaderFaults::None | LeaderFaults::Maybe | LeaderFaults::Stall(_) => {
                let (stall, stop) = match self.leader {
                    LeaderFaults::Maybe => (
                        proptest::option::of((200..=2000u64, 100..=2000u64))
                            .prop_map(|s| s.map(|(at, ms)| LeaderStall { at, ms }))
                            .boxed(),
                        proptest::option::of(300..=3000u64).boxed(),
                    ),
                    LeaderFaults::Stall(stall) => (Just(Some(stall)).boxed(), Just(None).boxed()),
                    _ => (Just(None).boxed(), Just(None).boxed()),
                };
                (nodes, stall, stop, lease, div, campaign, length)
                    .prop_map(move |(nodes, stall, stop_at, lease_ms, div, campaign_ms, length_ms)| {
                        (
                            ElectionPlan { stall, stop_at, ..base(nodes, lease_ms, div, campaign_ms, length_ms) },
                            placed.clone(),
                        )
                    })
                    .boxed()
            }
            LeaderFaults::Seeded { quiet_tail_ms } => {
                let shape = (
                    300..=1200u64,
                    500..=1500u64,
                    0..=1000u64,
                    any::<bool>(),
                    proptest::bool::weighted(0.25),
                    proptest::bool::weighted(0.25),
                    proptest::option::weighted(0.25, 0..=1000u64),
                );
                ((nodes, lease, div, campaign, length), shape)
                    .prop_map(move |((nodes, lease_ms, div, campaign_ms, length_ms), shape)| {
                        let (stall_at, stall_for, stop_frac, stall_mid_write, high_epochs, slow_campaign, slow) = shape;
                        let last_start = length_ms.saturating_sub(quiet_tail_ms);
                        // A long stall late in the run leaves no room for a
                        // hand-over after it: then the run has none.
                        let (stop_lo, stop_hi) = (stall_at + stall_for + 100, last_start.saturating_sub(100));
                        let stop_at = (stop_lo <= stop_hi).then(|| stop_lo + (stop_hi - stop_lo) * stop_frac / 1000);
                        let slowed_hi = last_start.saturating_sub(SLOWED_SPAN_MS).max(300);
                        // Slow renewals go where neither the stall nor the
                        // stop() touches them when there is such room: the
                        // hand-back after them is judged only in a quiet
                        // span. A plan with them and no room for both keeps
                        // the slow renewals and loses its stop().
                        let stall_span = (stall_at, stall_at + stall_for);
                        let slowed = slow.map(|frac| {
                            let with_stop = [Some(stall_span), stop_at.map(|s| (s, s + STOP_SPAN_MS))];
                            match quiet_start(300, slowed_hi, &with_stop, frac, SLOWED_NEED_MS) {
                                Some(at) => (at, stop_at),
                                None => match quiet_start(300, slowed_hi, &[Some(stall_span)], frac, SLOWED_NEED_MS) {
                                    Some(at) => (at, None),
                                    None => (300 + (slowed_hi - 300) * frac / 1000, stop_at),
                                },
                            }
                        });
                        let stop_at = slowed.map_or(stop_at, |(_, stop_at)| stop_at);
                        let plan = ElectionPlan {
                            stall: Some(LeaderStall { at: stall_at, ms: stall_for }),
                            stop_at,
                            stall_mid_write,
                            // Epochs just below 2^53, where a token passed
                            // through a Lua number (a double) would repeat.
                            epoch_base: high_epochs.then_some((1u64 << 53) - 2),
                            slow_first_campaign: slow_campaign,
                            slow_renewals: slowed.map(|(at, _)| at),
                            ..base(nodes, lease_ms, div, campaign_ms, length_ms)
                        };
                        (plan, placed.clone())
                    })
                    .boxed()
            }
        }
    }
}

/// How long a `stop()` disturbs the run for the slow renewals' placement:
/// a held reply to its hand-back (150 ms at most), and a hand-over.
const STOP_SPAN_MS: u64 = 150 + CAMPAIGN_MS + LIVENESS_SLACK_MS;

/// What the slow renewals' placement keeps clear: the held requests and
/// the hand-over after them.
const SLOWED_NEED_MS: u64 = SLOWED_SPAN_MS + CAMPAIGN_MS + LIVENESS_SLACK_MS;

/// How long the server holds the renewal aimed at by
/// [`renewal_timed_out_at`] (ms): past any response timeout the simulated
/// connections use (250 ms), so the caller sees a timeout, not a reply.
const TIMED_OUT_HOLD_MS: u64 = 300;

/// From the injection of a timed-out renewal to the instant its leader must
/// have stopped leading: the renewal goes out within a renew interval (two
/// response timeouts if the one before it was slow), fails at its response
/// timeout, and the observer sees the demotion within a millisecond.
fn timed_out_span(plan: &ElectionPlan, response_ms: u64) -> u64 {
    plan.renew_ms + 2 * response_ms + 20
}

/// On `election` and `election-renew-only`, every run with room for it
/// holds one leader's renewal at the server past the response timeout, at
/// an instant no
/// stall, `stop()`, slow renewals or nemesis fault touches (none when there
/// is no such room). A renewal that fails must end the term under both
/// demotions; a leader that takes the error for a passing one and renews
/// again keeps leading on, and nothing else in the run would show it.
/// Drawn from the seed's own stream, so the plans are unchanged.
fn renewal_timed_out_at(
    seed: u64,
    variant: Variant,
    plan: &ElectionPlan,
    faults: &[(u64, u64)],
    response_ms: u64,
) -> Option<Millis> {
    // The hold must outlast the response timeout, or the renewal is only
    // slow and the term may rightly go on.
    if !matches!(variant, Variant::Election | Variant::RenewOnly) || TIMED_OUT_HOLD_MS <= response_ms {
        return None;
    }
    let mut rng =
        <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(crate::world::derive_seed(seed, "renewal-timed-out"));
    let frac = rng.random_range(0..=1000u64);
    let need = timed_out_span(plan, response_ms) + plan.renew_ms + plan.campaign_ms + LIVENESS_SLACK_MS;
    let hi = plan.length_ms.saturating_sub(QUIET_TAIL_MS + need);
    quiet_start(300, hi, &busy_spans(plan, faults), frac, need)
}

/// What an aimed fault must stay clear of: the plan's stall, stop and slow
/// renewals (each with the time its checks watch after it) and the faults.
fn busy_spans(plan: &ElectionPlan, faults: &[(u64, u64)]) -> Vec<Option<(u64, u64)>> {
    let mut busy = vec![
        plan.stall.map(|s| (s.at, s.at + s.ms)),
        plan.stop_at.map(|s| (s, s + STOP_SPAN_MS)),
        plan.slow_renewals.map(|s| (s, s + SLOWED_SPAN_MS + plan.campaign_ms + LIVENESS_SLACK_MS)),
    ];
    busy.extend(faults.iter().map(|&f| Some(f)));
    busy
}

/// The once-per-run faults aimed at one leader, placed in quiet spans by
/// the seed ([`renewal_timed_out_at`], [`lease_key_taken_at`]).
#[derive(Debug, Clone, Copy, Default)]
struct Aimed {
    /// When a leader's next renewal is held past the response timeout.
    timed_out_at: Option<Millis>,
    /// When a leader's lease key is overwritten with another owner.
    taken_at: Option<Millis>,
}

/// The longest one-way link latency of the election's world (ms).
const MAX_ONE_WAY_MS: u64 = 10;

/// From a lease key taken away to the instant its leader must have stopped
/// leading: its next renewal goes out within a renewal interval and is
/// refused within a round trip; the observer's slack on top.
fn taken_away_span(plan: &ElectionPlan) -> u64 {
    plan.renew_ms + 2 * MAX_ONE_WAY_MS + LIVENESS_SLACK_MS
}

/// On `election` and `election-renew-only`, every run with room for it
/// overwrites the leader's lease key with another owner once, until the
/// leader must have heard of it (an operator's `SET`, a peer that ignored the election, a
/// failover that resurrected an old value), in a span nothing else
/// touches. The leader's next renewal is refused, and a refused renewal
/// ends the term (`DemotionReason::LeaseLost`) under both demotions. The
/// workload never sees a refusal otherwise under self-fencing: a key that
/// expired has passed its holder's deadline first. Drawn from the seed's
/// own stream, so the plans are unchanged.
fn lease_key_taken_at(
    seed: u64,
    variant: Variant,
    plan: &ElectionPlan,
    faults: &[(u64, u64)],
    timed_out: Option<(u64, u64)>,
) -> Option<Millis> {
    if !matches!(variant, Variant::Election | Variant::RenewOnly) {
        return None;
    }
    let mut rng =
        <rand::rngs::StdRng as rand::SeedableRng>::seed_from_u64(crate::world::derive_seed(seed, "lease-key-taken"));
    let frac = rng.random_range(0..=1000u64);
    let need = 2 * taken_away_span(plan) + plan.campaign_ms + LIVENESS_SLACK_MS;
    let hi = plan.length_ms.saturating_sub(QUIET_TAIL_MS + need);
    // Clear of the timed-out renewal as well (the order does not matter).
    let mut busy = busy_spans(plan, faults);
    busy.push(timed_out);
    quiet_start(300, hi, &busy, frac, need)
}

/// Overwrites the election's lease key with another owner until the
/// leader must have heard of it ([`lease_key_taken_at`]), and marks when.
async fn take_lease_key(actor: Actor, plan: ElectionPlan, markers: Arc<Mutex<Vec<Marker>>>) {
    let mut conn = actor.connection(0);
    let set = redis::cmd("SET")
        .arg(lease_key(&actor))
        .arg("someone-else")
        .arg("XX")
        .arg("PX")
        .arg(taken_away_span(&plan))
        .query_async::<Option<String>>(&mut conn)
        .await;
    if matches!(set, Ok(Some(ref ok)) if ok == "OK") {
        let at = actor.now();
        let until = at + taken_away_span(&plan);
        if let Ok(mut m) = markers.lock() {
            m.push(Marker::TakenAway { node: actor.name().to_string(), at, until, expires: until });
        }
        actor.reached(LEASE_KEY_TAKEN.name);
    }
}

/// A start in `lo..=hi` for a span of `need` ms (the held requests and the
/// hand-over after them) that overlaps none of `busy`, picked at `frac` per
/// mille of the free room; `None` when there is no room.
fn quiet_start(lo: u64, hi: u64, busy: &[Option<(u64, u64)>], frac: u64, need: u64) -> Option<u64> {
    // A start at `a` is disturbed by a busy span (s, e) if
    // a <= e and a + need >= s, i.e. a in [s - need, e].
    // An empty range (a short run, a long span) has no room at all.
    let mut free = if lo <= hi { vec![(lo, hi)] } else { Vec::new() };
    for &(s, e) in busy.iter().flatten() {
        let (cut_lo, cut_hi) = (s.saturating_sub(need), e);
        free = free
            .into_iter()
            .flat_map(|(a, b)| {
                let left = (a < cut_lo).then(|| (a, b.min(cut_lo - 1)));
                let right = (b > cut_hi).then(|| (a.max(cut_hi + 1), b));
                [left, right].into_iter().flatten()
            })
            .filter(|(a, b)| a <= b)
            .collect();
    }
    let room: u64 = free.iter().map(|(a, b)| b - a + 1).sum();
    if room == 0 {
        return None;
    }
    let mut pick = (room - 1) * frac.min(1000) / 1000;
    for (a, b) in free {
        if pick <= b - a {
            return Some(a + pick);
        }
        pick -= b - a + 1;
    }
    None
}

/// The nemesis faults every election variant's seeds draw: up to two
/// client-side faults or server pauses of 50–800 ms, from 10 % of the run
/// to its quiet tail, a swarm subset per seed.
pub fn seed_faults() -> FaultSpace {
    let classes = [
        FaultClass::Partition,
        FaultClass::Hold,
        FaultClass::Latency,
        FaultClass::ClientPause,
        FaultClass::ServerPause,
    ];
    FaultSpace { count: (0, 2), duration_ms: (50, 800), ..FaultSpace::new(&classes, 2) }
        .within(SEED_LENGTH_MS / 10, SEED_LENGTH_MS - QUIET_TAIL_MS)
        .swarm()
}

/// Runs an explicit plan of an election scenario.
pub fn run_planned(
    variant: Variant,
    servers: &mut Servers,
    seed: u64,
    planned: &ElectionPlan,
    schedule: Schedule,
) -> Result<Outcome, SetupError> {
    let mut extra = Vec::new();
    if let Some(LeaderStall { at, ms }) = planned.stall {
        extra.push((at, format!("at {at}ms for {ms}ms: stall (workload) the node leading then, then resume")));
    }
    if let Some(at) = planned.stop_at {
        extra.push((at, format!("at {at}ms: stop() (workload) on the node leading then")));
    }
    if let Some(at) = planned.slow_renewals {
        extra.push((
            at,
            format!("at {at}ms: the next two requests of the node leading then wait 200 and 240 ms at the server"),
        ));
    }
    let schedule_end = schedule.faults.iter().map(crate::nemesis::Fault::end).max();
    let fault_spans = schedule.spans();
    let freeze_spans = schedule.freeze_spans();
    let config = world_config(seed, variant);
    let response_ms = config.net.response_timeout.as_millis() as u64;
    let timed_out_at = renewal_timed_out_at(seed, variant, planned, &fault_spans, response_ms);
    let timed_out_span = timed_out_at.map(|at| {
        (at, at + timed_out_span(planned, response_ms) + planned.renew_ms + planned.campaign_ms + LIVENESS_SLACK_MS)
    });
    let taken_at = lease_key_taken_at(seed, variant, planned, &fault_spans, timed_out_span);
    let (run, mut markers) =
        run_plan(servers, seed, variant, planned, config, schedule, Aimed { timed_out_at, taken_at })?;
    // A held request disturbs the run until it has run, which may be long
    // after its injection (the node frozen in between). Only the slow
    // renewals' holds: a timed-out renewal's is held longer, and counting it
    // here would take the slow renewals' span to the end of the run.
    let held: Vec<u64> =
        run.executions[0].iter().filter(|x| SLOW_RENEWALS_MS.contains(&x.held_ms)).map(|x| x.sim_ms).collect();
    for m in &mut markers {
        if let Marker::Slowed { until, .. } = m {
            *until = match held.as_slice() {
                [.., last] if held.len() == SLOW_RENEWALS_MS.len() => *last,
                _ => planned.length_ms,
            };
        }
    }
    // Held requests disturb the views' timing as a nemesis fault does.
    let schedule_spans = fault_spans.clone();
    let mut fault_spans = fault_spans;
    fault_spans.extend(
        markers
            .iter()
            .filter(|m| matches!(m, Marker::Slowed { .. } | Marker::TimedOut { .. }))
            .filter_map(Marker::disturbs),
    );
    let mut outcome = outcome_from(&run, extra);
    let events = &outcome.history;
    let mut h = Histograms::new();
    stats::record_split_brain(events, ELECTION_NAME, &mut h);
    let (failovers, handovers) = measure(events, &markers, planned.lease_ms, &mut h);
    let mut violations = checks::terms::check(events, ELECTION_NAME, RESOURCE, variant != Variant::RenewOnly);
    violations.extend(checker::stale_overwrite::check(events));
    if variant == Variant::FailoverAcknowledged {
        violations.extend(checker::acknowledged_writes::check(events, &run.schedule.unreplicated_spans(0)));
        violations.extend(checker::acknowledged_writes::check_refusals(events, &run.schedule.unlinked_spans(0)));
    }
    if variant != Variant::NoEpoch {
        let built = checks::views::Built {
            name: ELECTION_NAME,
            lease_ms: planned.lease_ms,
            renew_ms: planned.renew_ms,
            campaign_ms: planned.campaign_ms,
            at_deadline: variant.at_deadline(),
            allowance: checker::lease_views::Allowance::DEFAULT,
            faults: &fault_spans,
            freezes: &freeze_spans,
            sampled_until: planned.length_ms,
        };
        violations.extend(checks::views::check(events, built));
        let rules = [
            Rule { prefix: "election:{", suffix: "}:fence", life: Life::Forever, what: "epoch counter" },
            Rule { prefix: "election:{", suffix: "}", life: Life::AtMost(planned.lease_ms), what: "leadership lease" },
            Rule { prefix: "fenced:{", suffix: "}", life: Life::Forever, what: "fenced entry" },
        ];
        violations.extend(checker::key_lifetimes::check(0, &run.keys_at_end[0], &rules, &[]));
    }
    if variant.at_deadline() {
        // Held renewals end the term at its deadline; the lease is handed
        // back once the late reply has landed. Judged only when nothing else
        // (a nemesis fault, a stall, a stop()) touches that span.
        let stop_held_ms = markers
            .iter()
            .filter_map(|m| match m {
                Marker::Stop { held_ms, .. } => Some(*held_ms),
                Marker::Stall { .. } | Marker::Slowed { .. } | Marker::TimedOut { .. } | Marker::TakenAway { .. } => {
                    None
                }
            })
            .max()
            .unwrap_or(0);
        for m in &markers {
            let Marker::Slowed { at, until } = *m else { continue };
            let bound = planned.campaign_ms + LIVENESS_SLACK_MS;
            let span = (at, until.saturating_add(bound));
            let touched = |(s, e): (u64, u64)| s <= span.1 && e >= span.0;
            let quiet = until < planned.length_ms
                && span.1 < planned.length_ms
                && !schedule_spans.iter().any(|&f| touched(f))
                && !markers
                    .iter()
                    .filter(|x| !matches!(x, Marker::Slowed { .. }))
                    .filter_map(Marker::disturbs)
                    .any(touched)
                && planned.stop_at.is_none_or(|s| !touched((s, s + stop_held_ms + bound)));
            if quiet {
                let after = "a leader's held renewal landed";
                violations.extend(checks::terms::check_hand_back(events, ELECTION_NAME, until, bound, after));
            }
        }
        // Time-floored epochs keep epochs ordered, not the lease: a leader
        // elected inside the cut is unknown to the promoted replica, which
        // elects another while the first may still believe (until its
        // deadline). That overlap is the floor's documented limit, measured
        // in the split-brain histogram; the fenced store still refuses the
        // older epoch (the `election` invariant, judged above).
        if variant != Variant::FailoverFloored {
            violations.extend(checks::terms::check_self_fencing(events, ELECTION_NAME));
        }
        violations.extend(checks::terms::check_deadlines(
            events,
            ELECTION_NAME,
            trusted_ms(planned.lease_ms),
            MIN_ROUND_TRIP_MS,
        ));
    }
    // A renewal held past the response timeout fails, and a failed renewal
    // ends the term (`DemotionReason::RedisError`) under both demotions:
    // judged when no nemesis fault or stall touches the span (a frozen node
    // cannot act on its timeout).
    // The leader that stepped down hands its lease back, so some node leads
    // within a campaign interval and a round trip of the renewal's timeout
    // (the held renewal ran `TIMED_OUT_HOLD_MS` after it reached the
    // server, and timed out `response_ms` after it was sent), not once the
    // key has expired.
    for m in &markers {
        let Marker::TimedOut { node, at, until } = m else { continue };
        let ran = run.executions[0].iter().find(|x| {
            x.held_ms == TIMED_OUT_HOLD_MS && &*x.client == node.as_str() && x.sim_ms >= *at + TIMED_OUT_HOLD_MS
        });
        let bound = planned.campaign_ms + LIVENESS_SLACK_MS;
        let due = ran.map_or(*until, |x| x.sim_ms - TIMED_OUT_HOLD_MS + response_ms + bound);
        let end = due.max(*until);
        let touched = |(s, e): (u64, u64)| s <= end && e >= *at;
        let stalled = markers.iter().any(|x| matches!(x, Marker::Stall { .. }) && x.disturbs().is_some_and(touched));
        if stalled || schedule_spans.iter().any(|&f| touched(f)) {
            continue;
        }
        let why = format!("the renewal it sent after {at}ms was held at the server past its response timeout");
        violations.extend(checks::terms::check_failed_renewal(events, ELECTION_NAME, node, *at, *until, &why));
        if let Some(x) = ran.filter(|_| end < planned.length_ms) {
            let timed_out = x.sim_ms - TIMED_OUT_HOLD_MS + response_ms;
            let after = "a leader's renewal timed out";
            violations.extend(checks::terms::check_hand_back(events, ELECTION_NAME, timed_out, bound, after));
        }
    }
    // A lease key taken away: the leader's next renewal is refused, and a
    // refused renewal ends the term under both demotions.
    for m in &markers {
        let Marker::TakenAway { node, at, until, .. } = m else { continue };
        let touched = |(s, e): (u64, u64)| s <= *until && e >= *at;
        let stalled = markers.iter().any(|x| matches!(x, Marker::Stall { .. }) && x.disturbs().is_some_and(touched));
        if stalled || schedule_spans.iter().any(|&f| touched(f)) {
            continue;
        }
        let why =
            format!("its lease key was overwritten with another owner at {at}ms, so its next renewal was refused");
        violations.extend(checks::terms::check_failed_renewal(events, ELECTION_NAME, node, *at, *until, &why));
    }
    // A newer epoch means the older leader's key is gone: its next renewal
    // is refused and its term ends, under either demotion (under
    // `OnRenewTick` nothing else bounds a woken leader's reign). Any fault,
    // freeze or held request postpones the bound to its end.
    if matches!(variant, Variant::Election | Variant::RenewOnly) {
        let mut disturbed = fault_spans.clone();
        disturbed.extend(freeze_spans.iter().copied());
        disturbed.extend(checker::interruptions(events).into_iter().map(|(_, start, end)| (start, end)));
        let bound = planned.renew_ms + response_ms + LIVENESS_SLACK_MS;
        violations.extend(checks::terms::check_superseded(events, ELECTION_NAME, bound, &disturbed, planned.length_ms));
    }
    // Liveness after healing: the last fault, stall or stop() ends at
    // `healed`; a leader must hold from `healed + bound` on.
    // The stall's actual end (from the markers): a stall handed to the
    // writer lands at its next write, which may be later than planned.
    let stall_end = markers.iter().filter_map(|m| m.disturbs().map(|(_, end)| end));
    // A stop() comes when a node leads at or after its planned instant.
    let stop_end = markers.iter().filter_map(|m| m.stop().map(|(_, from)| from));
    let healed = stall_end.chain(stop_end).chain(planned.stop_at).chain(schedule_end).max().unwrap_or(0);
    let bound = planned.lease_ms + planned.campaign_ms + LIVENESS_SLACK_MS;
    violations.extend(checks::terms::check_liveness(events, ELECTION_NAME, healed, bound, planned.length_ms));
    violations.extend(checks::terms::check_runs_until_stopped(events));
    if variant != Variant::NoEpoch {
        // stop() hands the lease back: with no fault around it, the next
        // node takes over within a campaign interval and a round trip, not
        // a whole lease later.
        // A request sent during a fault may still be waiting for its reply,
        // or its response timeout, that long after the fault ends; the run
        // loop sees `stop()` only once that renewal has returned.
        let mut busy: Vec<(u64, u64)> = fault_spans.iter().map(|&(s, e)| (s, e + response_ms)).collect();
        busy.extend(markers.iter().filter_map(Marker::disturbs));
        let stops: Vec<(&str, u64)> = markers.iter().filter_map(Marker::stop).collect();
        let bound = planned.campaign_ms + LIVENESS_SLACK_MS;
        violations.extend(checks::terms::check_handover(
            events,
            ELECTION_NAME,
            &stops,
            &busy,
            bound,
            planned.length_ms,
        ));
    }
    outcome.violations.extend(violations);
    reach_from_history(&mut outcome, variant, &failovers, &handovers, &markers, planned.lease_ms);
    if variant.fails_over() {
        let promoted = fault_spans_of_failover(&outcome);
        let elected_after = outcome.history.iter().any(|e| {
            promoted.is_some_and(|t| e.time > t) && matches!(e.op, Op::ElectionCallback { elected: true, .. })
        });
        if elected_after {
            outcome.reach(LEADER_AFTER_FAILOVER.name);
        }
    }
    outcome.histograms = h;
    Ok(outcome)
}

/// The shortest round trip on the scenario's links (1 ms each way at least).
const MIN_ROUND_TRIP_MS: u64 = 2;

/// `lease − drift` in whole milliseconds, rounded up, for the default drift
/// every node uses: its documented rule is a factor of the lease (per mille)
/// plus a constant.
fn trusted_ms(lease_ms: u64) -> u64 {
    let d = redis_primitives::Drift::DEFAULT;
    let allowance_us = lease_ms * 1000 * u64::from(d.factor_per_mille()) / 1000 + d.constant().as_micros() as u64;
    (lease_ms * 1000).saturating_sub(allowance_us).div_ceil(1000)
}

/// Round trips and scheduling slack allowed on top of lease + campaign
/// before a missing leader is a `liveness` violation: an acquire is one
/// round trip (at most 2 × 10 ms on the scenario's links), plus the 1 ms
/// sampling of the observer, with a wide margin.
const LIVENESS_SLACK_MS: u64 = 100;

/// Situations every election variant reaches.
const COMMON: [Situation; 3] = [
    Situation {
        name: "failover-during-stall",
        meaning: "the leader froze longer than its lease and another node led before it woke",
    },
    Situation { name: "hand-over-after-stop", meaning: "a leader called stop() and another node took over" },
    Situation {
        name: "campaign-answered-past-its-deadline",
        meaning: "every node froze right after sending its first campaign, so the winner saw its grant only after its own deadline",
    },
];

/// What `election` exists to reach.
pub const SITUATIONS: &[Situation] = &[
    COMMON[0],
    COMMON[1],
    COMMON[2],
    Situation {
        name: "stalled-leader-stopped-believing",
        meaning: "a frozen leader's reign ended at its local deadline, while it was still frozen",
    },
    Situation { name: "renewal-confirmed", meaning: "a leader's renewal was confirmed and its deadline moved on" },
    EPOCHS_PAST_2_POW_53,
    Situation {
        name: "stale-leader-write-refused",
        meaning: "the fenced store refused a write carrying an older epoch",
    },
    Situation {
        name: "demoted-deadline-reached",
        meaning: "a leader stepped down because no renewal was confirmed before its local deadline",
    },
    Situation { name: "demoted-stopped", meaning: "a leader's term ended through stop()" },
    HAND_BACK_HELD,
    CAMPAIGN_HELD_AT_STOP,
    RENEWAL_TIMED_OUT,
    LEASE_KEY_TAKEN,
];

/// A leader's lease key overwritten with another owner (`election` and
/// `election-renew-only`).
const LEASE_KEY_TAKEN: Situation = Situation {
    name: "lease-key-taken-away",
    meaning:
        "a leader's lease key was overwritten with another owner: its next renewal is refused and must end its term",
};

/// A leader's renewal held past the response timeout (`election` and
/// `election-renew-only`).
const RENEWAL_TIMED_OUT: Situation = Situation {
    name: "renewal-timed-out",
    meaning:
        "a leader's renewal was held at the server past the response timeout: the failed renewal must end its term",
};

/// A follower's campaign answered late, across its `stop()` (`election` only).
const CAMPAIGN_HELD_AT_STOP: Situation = Situation {
    name: "stop-during-a-held-campaign",
    meaning: "a follower called stop() while the reply to its campaign (sent after the leader handed back) was held at the server: a won lease must be handed back, not led on",
};

/// A stop()'s hand-back held at the server (`election` only).
const HAND_BACK_HELD: Situation = Situation {
    name: "hand-back-held-at-the-server",
    meaning: "a leader called stop() and the server held the reply to its hand-back 30-150 ms: it stopped believing before the key went, not when it heard",
};

/// Epochs past the exact range of a Lua number (a double).
const EPOCHS_PAST_2_POW_53: Situation = Situation {
    name: "epochs-past-2-pow-53",
    meaning: "a leader was elected with an epoch above 2^53 (the counter was preset just below it)",
};

/// What `election-renew-only` exists to reach.
pub const RENEW_ONLY_SITUATIONS: &[Situation] = &[
    COMMON[0],
    COMMON[1],
    COMMON[2],
    EPOCHS_PAST_2_POW_53,
    Situation {
        name: "stale-leader-write-refused",
        meaning: "the fenced store refused a write carrying an older epoch",
    },
    Situation {
        name: "demoted-lease-lost",
        meaning: "a woken leader's renewal found the lease gone or someone else's, and it stepped down",
    },
    Situation { name: "demoted-stopped", meaning: "a leader's term ended through stop()" },
    RENEWAL_TIMED_OUT,
    LEASE_KEY_TAKEN,
];

/// What `election-no-epoch` exists to reach.
pub const NO_EPOCH_SITUATIONS: &[Situation] = &[COMMON[0], COMMON[1]];

const LEADER_AFTER_FAILOVER: Situation = Situation {
    name: "leader-after-failover",
    meaning: "a node was elected by the promoted replica (after the epoch counter it had went back)",
};

/// What the mitigated `election-failover-*` scenarios exist to reach.
pub const FAILOVER_SITUATIONS: &[Situation] = &[LEADER_AFTER_FAILOVER];

const WRITE_NOT_ACKNOWLEDGED: Situation = Situation {
    name: "write-not-acknowledged",
    meaning: "an acknowledged fenced write made during the replication cut was reported unconfirmed (NotAcknowledged)",
};

/// What `election-failover-acknowledged` exists to reach.
pub const ACKNOWLEDGED_FAILOVER_SITUATIONS: &[Situation] = &[LEADER_AFTER_FAILOVER, WRITE_NOT_ACKNOWLEDGED];

/// When the failover's promotion happened, from the run's fault log.
fn fault_spans_of_failover(outcome: &Outcome) -> Option<u64> {
    outcome.history.iter().find_map(|e| match &e.op {
        Op::Fault(fault) if fault.nemesis().is_some_and(|s| s.undoes(FaultClass::Failover)) => Some(e.time),
        _ => None,
    })
}

/// Situations recognised in the finished history.
fn reach_from_history(
    outcome: &mut Outcome,
    variant: Variant,
    failovers: &[u64],
    handovers: &[u64],
    markers: &[Marker],
    lease_ms: u64,
) {
    if !failovers.is_empty() {
        outcome.reach("failover-during-stall");
    }
    if !handovers.is_empty() {
        outcome.reach("hand-over-after-stop");
    }
    let reigns = stats::reigns(&outcome.history, ELECTION_NAME);
    let stalled_past_deadline = markers.iter().any(|m| match m {
        Marker::Stall { node, at, duration } => {
            *duration > lease_ms
                && reigns.iter().any(|r| &r.process == node && r.from <= *at && r.to > *at && r.to < at + duration)
        }
        Marker::Stop { .. } | Marker::Slowed { .. } | Marker::TimedOut { .. } | Marker::TakenAway { .. } => false,
    });
    if variant.at_deadline() && stalled_past_deadline {
        outcome.reach("stalled-leader-stopped-believing");
    }
    let mut refused = false;
    let mut renewed = false;
    let mut past_2_pow_53 = false;
    let mut deadlines: std::collections::BTreeMap<(&str, Option<u64>), u64> = Default::default();
    for e in &outcome.history {
        match &e.op {
            Op::Write { result: Some(WriteResult::Rejected { .. }), .. } => refused = true,
            Op::Role { role: Role::Leader, epoch, deadline, .. } => {
                past_2_pow_53 |= epoch.is_some_and(|e| e > 1 << 53);
                if let Some(d) = deadline {
                    if let Some(old) = deadlines.insert((e.process.as_str(), *epoch), *d) {
                        renewed |= *d > old;
                    }
                }
            }
            _ => {}
        }
    }
    if refused {
        outcome.reach("stale-leader-write-refused");
    }
    if renewed {
        outcome.reach("renewal-confirmed");
    }
    if past_2_pow_53 {
        outcome.reach(EPOCHS_PAST_2_POW_53.name);
    }
}

// ---------------------------------------------------------------------------
// The reference's figures (cases 25, 26, 27), in simulated time.

/// Introduction printed above the figures table.
pub const FIGURES_INTRO: &str = "Two nodes, the reference's settings (lease 400 ms, renew 100 ms, campaign 25 ms), \
1 ms one-way links, no nemesis; node-0 leads, then at 1000 + 7k ms (k = 0..runs, so the fault \
falls at every phase of the renew cycle) it either calls stop() (clean hand-over, case 25), \
freezes for 5000 ms (failover, case 26), or freezes for 1500 ms (split-brain window, case 27). \
The split-brain window is how long both nodes believed they led: under self-fencing \
(`election`) the stalled leader stops believing at its lease's local deadline, before anyone \
else can be elected, so there is none; under the reference's renew-tick demotion \
(`election-renew-only`) it believes until its first renewal after the stall is refused. \
In both, the stalled leader's late write carries the old epoch and the fenced store refuses it. \
The reference bounds failover between ttl - renew and ttl + campaign (300..425 ms here): the \
reference's own runs stalled right after a renewal, hence its narrow 406..415 ms.";

/// One row of the figures table.
#[derive(Debug, Clone, Serialize)]
pub struct FigureRow {
    /// `election` or `election-renew-only`.
    pub variant: String,
    /// Which figure.
    pub figure: String,
    /// Runs measured.
    pub runs: u64,
    /// Smallest (ms); `None` if no run produced the figure.
    pub min: Option<u64>,
    /// Median (ms).
    pub median: Option<u64>,
    /// Largest (ms).
    pub max: Option<u64>,
    /// Every run's value (ms; 0 = none), in run order.
    pub values: Vec<u64>,
    /// The reference's figure.
    pub reference: String,
    /// Stale writes refused by the fenced store, over all runs (case 27 only).
    pub stale_writes_refused: u64,
    /// `election` checker violations over all runs (must be 0).
    pub violations: u64,
}

/// Which of the three figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure {
    /// Case 25: `stop()` on the leader; time until the other leads.
    HandOver,
    /// Case 26: the leader stalls 5 s; time until the other leads.
    Failover,
    /// Case 27: the leader stalls 1.5 s; how long both believed they led.
    SplitBrain,
}

impl Figure {
    fn label(self) -> &'static str {
        match self {
            Figure::HandOver => "clean hand-over (case 25)",
            Figure::Failover => "failover, stall 5000 ms (case 26)",
            Figure::SplitBrain => "split-brain window, stall 1500 ms (case 27)",
        }
    }

    fn reference(self) -> &'static str {
        match self {
            Figure::HandOver => "25 / 26 / 28 ms",
            Figure::Failover => "406 / 410 / 415 ms",
            Figure::SplitBrain => "1091 / 1192 / 1198 ms",
        }
    }
}

/// The measurement of one figure run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FigureRun {
    /// The figure's value in simulated ms (0 when there is no window).
    pub value: Option<u64>,
    /// Stale (lower-epoch) writes the fenced store refused.
    pub refused: u64,
    /// Election violations (must be none).
    pub violations: usize,
    /// The history digest.
    pub digest: crate::history::Digest,
}

/// Runs figure `figure` for `variant`, run number `k`.
pub fn figure_run(servers: &mut Servers, variant: Variant, figure: Figure, k: u64) -> Result<FigureRun, SetupError> {
    let at = 1000 + 7 * k;
    let (stall, stop, end) = match figure {
        Figure::HandOver => (None, Some(at), at + 600),
        Figure::Failover => (Some((at, 5000)), None, at + 5500),
        Figure::SplitBrain => (Some((at, 1500)), None, at + 2000),
    };
    let plan = ElectionPlan {
        nodes: 2,
        lease_ms: LEASE_MS,
        renew_ms: RENEW_MS,
        campaign_ms: CAMPAIGN_MS,
        length_ms: end,
        stagger_ms: 10,
        stall: stall.map(|(at, ms)| LeaderStall { at, ms }),
        stall_mid_write: false,
        epoch_base: None,
        stop_at: stop,
        slow_first_campaign: false,
        slow_renewals: None,
    };
    let config = WorldConfig::new(k).latency(Duration::from_millis(1), Duration::from_millis(1));
    let (run, markers) = run_plan(servers, k, variant, &plan, config, Schedule::none(), Aimed::default())?;
    let events = run.history.events();
    let mut h = Histograms::new();
    let (failovers, handovers) = measure(&events, &markers, LEASE_MS, &mut h);
    let value = match figure {
        Figure::HandOver => handovers.first().copied(),
        Figure::Failover => failovers.first().copied(),
        Figure::SplitBrain => {
            if markers.iter().any(|m| matches!(m, Marker::Stall { .. })) {
                Some(stats::record_split_brain(&events, ELECTION_NAME, &mut h).into_iter().max().unwrap_or(0))
            } else {
                None
            }
        }
    };
    let refused =
        events.iter().filter(|e| matches!(e.op, Op::Write { result: Some(WriteResult::Rejected { .. }), .. })).count()
            as u64;
    let violations = checks::terms::check(&events, ELECTION_NAME, RESOURCE, variant != Variant::RenewOnly).len();
    Ok(FigureRun { value, refused, violations, digest: run.history.digest() })
}

/// All six rows (two variants × three figures), `runs` runs each.
pub fn figure_rows(servers: &mut Servers, runs: u64) -> Result<Vec<FigureRow>, SetupError> {
    let mut rows = Vec::new();
    for variant in [Variant::Election, Variant::RenewOnly] {
        for figure in [Figure::HandOver, Figure::Failover, Figure::SplitBrain] {
            let mut values = Vec::new();
            let mut refused = 0;
            let mut violations = 0;
            for k in 0..runs {
                let r = figure_run(servers, variant, figure, k)?;
                refused += r.refused;
                violations += r.violations as u64;
                if let Some(v) = r.value {
                    values.push(v);
                }
            }
            let mut sorted = values.clone();
            sorted.sort_unstable();
            rows.push(FigureRow {
                variant: variant.scenario().to_string(),
                figure: figure.label().to_string(),
                runs,
                min: sorted.first().copied(),
                median: sorted.get(sorted.len() / 2).copied(),
                max: sorted.last().copied(),
                values,
                reference: figure.reference().to_string(),
                stale_writes_refused: if figure == Figure::SplitBrain { refused } else { 0 },
                violations,
            });
        }
    }
    Ok(rows)
}
impl Family for Variant {
    type Plan = ElectionPlan;
    type Space = ElectionSpace;
    const NAME: &'static str = "election";

    fn nodes(&self) -> u32 {
        1
    }

    fn seeds(&self) -> (ElectionSpace, FaultSpace) {
        if self.fails_over() {
            // The cut and the failover, the reference's settings, and the
            // leader stalling past its lease inside the cut: its successor's
            // epoch reaches the primary only.
            let space = ElectionSpace {
                leader: LeaderFaults::Stall(LeaderStall { at: 900, ms: 500 }),
                placed: crate::scenarios::lock_failover::cut_and_failover_faults(),
                ..ElectionSpace::seeds()
            };
            return (space, seed_faults());
        }
        (ElectionSpace::seeds(), seed_faults())
    }

    fn plans(space: &ElectionSpace) -> BoxedStrategy<(ElectionPlan, Vec<Fault>)> {
        space.plans()
    }

    fn max_actors(space: &ElectionSpace) -> u32 {
        space.nodes.1
    }

    fn run(
        &self,
        servers: &mut Servers,
        seed: u64,
        plan: &ElectionPlan,
        schedule: Schedule,
    ) -> Result<Outcome, SetupError> {
        run_planned(*self, servers, seed, plan, schedule)
    }

    fn actors(plan: &ElectionPlan) -> u32 {
        plan.nodes
    }

    fn injected_faults(plan: &ElectionPlan) -> usize {
        usize::from(plan.stall.is_some()) + usize::from(plan.stop_at.is_some())
    }

    fn validate(plan: &ElectionPlan) -> Result<(), String> {
        // The builder's rule: renew at most half of the lease less its
        // drift allowance (1 % + 2 ms).
        let usable = (plan.lease_ms * 99 / 100).saturating_sub(2);
        if plan.renew_ms == 0 || plan.renew_ms * 2 > usable || plan.campaign_ms == 0 {
            return Err("election needs 0 < 2 * renew_ms <= lease_ms - 1% - 2ms and campaign_ms > 0".into());
        }
        Ok(())
    }

    fn smaller(plan: &ElectionPlan) -> Vec<ElectionPlan> {
        let mut out = Vec::new();
        if plan.stall.is_some() {
            out.push(ElectionPlan { stall: None, ..plan.clone() });
        }
        if plan.stop_at.is_some() {
            out.push(ElectionPlan { stop_at: None, ..plan.clone() });
        }
        if plan.nodes > 1 {
            out.push(ElectionPlan { nodes: plan.nodes - 1, ..plan.clone() });
        }
        out
    }
}

impl core::fmt::Display for ElectionPlan {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "{} node(s), lease {}ms, renew {}ms, campaign {}ms, until {}ms",
            self.nodes, self.lease_ms, self.renew_ms, self.campaign_ms, self.length_ms
        )?;
        if self.stagger_ms > 0 {
            write!(f, ", node i starts at i*{}ms", self.stagger_ms)?;
        }
        if let Some(s) = self.stall {
            write!(f, "; the leader at {}ms stalls {}ms (workload fault)", s.at, s.ms)?;
        }
        if let Some(at) = self.stop_at {
            write!(f, "; the leader at {at}ms calls stop() (workload)")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NEED: u64 = SLOWED_NEED_MS;

    #[test]
    fn quiet_start_avoids_every_busy_span() {
        let busy = [Some((1000, 1500)), Some((2500, 2500 + STOP_SPAN_MS)), None];
        for frac in [0, 1, 250, 500, 999, 1000] {
            let at = quiet_start(300, 3000, &busy, frac, NEED).expect("there is room");
            assert!((300..=3000).contains(&at), "{at} out of range");
            for (s, e) in busy.iter().flatten() {
                assert!(at > *e || at + NEED < *s, "start {at} (frac {frac}) touches ({s}, {e})");
            }
        }
        // The first and the last free instants are reachable.
        assert_eq!(quiet_start(300, 3000, &busy, 0, NEED), Some(1501));
        assert_eq!(quiet_start(300, 3000, &busy, 1000, NEED), Some(3000));
    }

    #[test]
    fn quiet_start_is_none_without_room() {
        assert_eq!(quiet_start(300, 1000, &[Some((200, 1200))], 500, NEED), None);
        assert_eq!(quiet_start(300, 1000, &[Some((300 + NEED, 1200))], 0, NEED), None);
        assert_eq!(quiet_start(300, 1000, &[Some((300 + NEED + 1, 1200))], 0, NEED), Some(300));
        // A run too short for the span: `hi` below `lo`.
        assert_eq!(quiet_start(300, 120, &[], 500, NEED), None);
        assert_eq!(quiet_start(300, 299, &[None], 0, NEED), None);
    }
}
