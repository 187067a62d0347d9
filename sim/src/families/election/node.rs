//! One election node: the production [`Election`] (or the broken
//! [`NaiveElection`]) with the fenced store it writes through, and what the
//! node's accessors, callbacks and `subscribe()` receiver say, as history
//! operations.

use core::time::Duration;
use redis_primitives::election::{Demotion, DemotionReason, Election, Leadership};
use redis_primitives::{Acknowledgement, FencedStore, FencingToken, OwnerSource, Tokens, WriteOutcome};
use redis_primitives_naive::NaiveElection;
use tokio::sync::watch;
use tokio::time::Instant;

use super::op::{ElectionOp, Published};
use super::situations::WRITE_NOT_ACKNOWLEDGED;
use super::{ElectionVariant, ELECTION_NAME, RESOURCE};
use crate::api::FENCED_STORE_WRITE;
use crate::families::election::api::{
    ELECTION_RUN, ELECTION_STOP, NAIVE_ELECTION_RUN, NAIVE_ELECTION_STOP, NAIVE_ELECTION_WRITE,
};
use crate::history::{Api, Op, WriteResult};
use crate::net::SimConnection;
use crate::outcome::SituationName;
use crate::world::Actor;

/// The election's lease key, which the aimed delays mention (not the
/// fence counter's or the resource's requests).
pub(super) fn lease_key(actor: &Actor) -> String {
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

/// An election node, fenced or naive.
pub(super) enum Node {
    Fenced { election: Election<SimConnection>, store: FencedStore<SimConnection> },
    Naive(NaiveElection<SimConnection>),
}

impl Node {
    /// `Some((epoch, trusted-until))` while the node may act as leader.
    pub(super) fn belief(&self) -> Option<(Option<u64>, Option<Instant>)> {
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
    /// [`ElectionOp::ElectionView`] (`None` for the naive election).
    pub(super) fn view(&self, actor: &Actor) -> Option<ElectionOp> {
        let Node::Fenced { election, .. } = self else { return None };
        let leadership = election.leadership();
        let accessors = (
            leadership.is_leader(),
            leadership.epoch().map(|e| e.get()),
            leadership.last_demotion().map(|d| d.epoch.get()),
        );
        let published = published_of(actor, &leadership);
        Some(ElectionOp::ElectionView {
            name: election.name().to_string(),
            is_leader: election.is_leader(),
            epoch: election.epoch().map(|e| e.get()),
            lease: election
                .leader_lease()
                .map(|l| (l.epoch.get(), actor.micros_of(l.sent_at), actor.micros_of(l.local_deadline))),
            published,
            accessors,
            demotion_reason: self.last_demotion().map(|(_, reason, _)| reason.to_string()),
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
    /// `(epoch, reason, the situation it reaches)`, the reason in kebab case
    /// (as `ElectionView` records it).
    pub(super) fn last_demotion(&self) -> Option<(u64, &'static str, SituationName)> {
        let Node::Fenced { election, .. } = self else { return None };
        let leadership = election.leadership();
        let d = leadership.last_demotion()?;
        let (reason, situation) = match d.reason {
            DemotionReason::LeaseLost => ("lease-lost", SituationName::new("demoted-lease-lost")),
            DemotionReason::RedisError(_) => ("redis-error", SituationName::new("demoted-redis-error")),
            DemotionReason::DeadlineReached => ("deadline-reached", SituationName::new("demoted-deadline-reached")),
            DemotionReason::Stopped => ("stopped", SituationName::new("demoted-stopped")),
            DemotionReason::Dropped => ("dropped", SituationName::new("demoted-dropped")),
        };
        Some((d.epoch.get(), reason, situation))
    }

    pub(super) async fn run(&self, actor: &Actor) {
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

    pub(super) async fn stop(&self, actor: &Actor) {
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
    pub(super) fn may_write(&self) -> Option<Option<FencingToken>> {
        match self {
            Node::Fenced { election, .. } => election.epoch().map(Some),
            Node::Naive(n) => n.is_leader().then_some(None),
        }
    }

    /// One write, recorded, carrying the epoch the node had when it decided
    /// to write (`may_write`): what a real leader does between checking
    /// and writing, where a pause turns it into a stale leader.
    pub(super) async fn write(&self, actor: &Actor, value: String, believed: Option<FencingToken>) {
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

pub(super) fn build_node(
    variant: ElectionVariant,
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
    let builder = if variant == ElectionVariant::NoEpoch {
        builder
    } else {
        let (h, who) = (actor.history().clone(), actor.name().to_string());
        let (h2, who2) = (h.clone(), who.clone());
        builder
            .on_elected(move |epoch| {
                h.observe(
                    &who,
                    ElectionOp::ElectionCallback { elected: true, epoch: epoch.get(), deadline_reached: false },
                )
            })
            .on_demoted(move |d| {
                let deadline_reached = matches!(d.reason, DemotionReason::DeadlineReached);
                h2.observe(
                    &who2,
                    ElectionOp::ElectionCallback { elected: false, epoch: d.epoch.get(), deadline_reached },
                )
            })
    };
    Ok(match variant {
        ElectionVariant::Election | ElectionVariant::Failover => {
            Node::Fenced { election: builder.build()?, store: FencedStore::new(conn) }
        }
        // The store shares the election's node (and its replica): its
        // writes wait for the replica too, so that one made during the cut
        // is reported unconfirmed rather than lost at the failover unseen
        // (`acknowledged-writes`).
        ElectionVariant::FailoverAcknowledged => {
            let ack = Acknowledgement::new(1, Duration::from_millis(crate::families::lock::ACK_TIMEOUT_MS))?;
            Node::Fenced {
                election: builder.acknowledged(ack).build()?,
                store: FencedStore::new(conn).acknowledged(ack),
            }
        }
        ElectionVariant::FailoverFloored => {
            Node::Fenced { election: builder.tokens(Tokens::TimeFloored).build()?, store: FencedStore::new(conn) }
        }
        ElectionVariant::RenewOnly => {
            Node::Fenced { election: builder.demotion(Demotion::OnRenewTick).build()?, store: FencedStore::new(conn) }
        }
        ElectionVariant::NoEpoch => Node::Naive(NaiveElection::new(builder, conn)?),
    })
}

/// What a `subscribe()` receiver holds against what `leadership()`
/// publishes (`published`, taken from the view just recorded): an
/// [`ElectionOp::SubscriberView`] when the receiver holds something else, or was
/// not notified of a change since it last looked (`seen`); nothing when it
/// agrees (judged by `election-views`).
pub(super) fn check_subscriber(
    actor: &Actor,
    rx: &mut watch::Receiver<Leadership>,
    seen: &mut Option<Published>,
    published: Published,
) {
    let notified = rx.has_changed().unwrap_or(false);
    let received = published_of(actor, &rx.borrow_and_update());
    let missed = seen.is_some_and(|s| s != received) && !notified;
    if missed || received != published {
        actor.observe(ElectionOp::SubscriberView { published, received, notified });
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
