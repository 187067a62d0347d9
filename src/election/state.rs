//! What an election node is, as seen from outside: the values published on
//! its `watch` channel and handed to its callbacks.
//!
//! Two views exist on purpose. The **published** [`Leadership`] changes only
//! when the run loop (or `stop()`) makes a transition, so it is exactly as
//! fresh as the last time `run()` was polled. [`crate::election::Election::is_leader`]
//! instead recomputes from the [`LeaderLease`] and the monotonic clock, so it
//! turns false at the lease's local deadline even while `run()` is frozen.
//! A frozen process cannot publish anything; it can only stop believing.

use std::sync::Arc;

use tokio::time::Instant;

use crate::error::Error;
use crate::token::FencingToken;

/// A node's role, as last published by its run loop.
#[derive(Debug, Clone)]
pub enum Leadership {
    /// Not leading: not started yet, or campaigning. `last_demotion` says how
    /// the previous term (if any) ended.
    Follower {
        /// How this node's most recent term ended, if it ever led.
        last_demotion: Option<Demoted>,
    },
    /// Leading under `epoch` (the lease's fencing token).
    Leader {
        /// The epoch: pass it to every fenced resource the leader writes.
        epoch: FencingToken,
        /// When the winning acquire's reply arrived (monotonic clock).
        elected_at: Instant,
    },
    /// `run()` has ended after `stop()`; the node no longer campaigns.
    Stopped {
        /// How this node's most recent term ended, if it ever led (a leader
        /// that is stopped ends its term with [`DemotionReason::Stopped`]).
        last_demotion: Option<Demoted>,
    },
}

impl Leadership {
    /// Whether the published role is leader. This is the run loop's last
    /// word, not the self-fenced answer: see the module docs.
    pub fn is_leader(&self) -> bool {
        matches!(self, Leadership::Leader { .. })
    }

    /// The epoch while (published as) leader.
    pub fn epoch(&self) -> Option<FencingToken> {
        match self {
            Leadership::Leader { epoch, .. } => Some(*epoch),
            _ => None,
        }
    }

    /// How the most recent term ended, if the node is not leading now.
    pub fn last_demotion(&self) -> Option<&Demoted> {
        match self {
            Leadership::Follower { last_demotion } | Leadership::Stopped { last_demotion } => last_demotion.as_ref(),
            Leadership::Leader { .. } => None,
        }
    }
}

/// The end of one term of leadership.
#[derive(Debug, Clone)]
pub struct Demoted {
    /// The epoch that ended.
    pub epoch: FencingToken,
    /// Why it ended.
    pub reason: DemotionReason,
    /// When the run loop made the transition (monotonic clock). Under
    /// [`crate::election::Demotion::AtDeadline`], `is_leader()` may have
    /// turned false earlier, at the lease's local deadline.
    pub at: Instant,
}

/// Why a leader stopped leading.
#[derive(Debug, Clone)]
pub enum DemotionReason {
    /// A renewal found the lease gone or held by someone else.
    LeaseLost,
    /// A renewal failed with a fault. Its outcome may be unknown (a timeout
    /// does not cancel the command), so the node cannot know whether the
    /// lease was extended; it steps down and hands the lease back if it can.
    RedisError(Arc<Error>),
    /// No renewal was confirmed before the lease's local deadline: the node
    /// was paused, the renewal was still in flight, or its reply arrived
    /// late (a stale success proves nothing). Only in
    /// [`crate::election::Demotion::AtDeadline`] mode.
    DeadlineReached,
    /// `stop()` was called; the lease was handed back (compare-and-delete)
    /// so a follower can take over without waiting out the TTL.
    Stopped,
    /// The `run()` future was dropped while leading. Dropping cannot send a
    /// release, so the lease stays in Redis until its TTL runs out.
    Dropped,
}

/// The leader's own view of its current lease.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaderLease {
    /// The epoch (the lease's fencing token).
    pub epoch: FencingToken,
    /// When the acquire or the last confirmed renewal was *sent*: Redis
    /// cannot expire the lease before `sent_at + lease_ttl`.
    pub sent_at: Instant,
    /// `sent_at + lease_ttl − drift`: after this instant the node must not
    /// act as leader, whatever its run loop last published.
    pub local_deadline: Instant,
}
