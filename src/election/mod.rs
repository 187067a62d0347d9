//! Leader election: leadership is a [`Lock`] lease that renews itself, and the
//! **epoch is the lease's fencing token**.
//!
//! A node campaigns (one `acquire`) every `campaign_interval` while it
//! follows, and renews (one compare-and-extend) every `renew_interval` while
//! it leads. A renewal that is refused or fails demotes the node with a
//! [`DemotionReason`]; `stop()` hands the lease back (compare-and-delete) so a
//! follower takes over at its next campaign instead of after a TTL.
//!
//! ```no_run
//! # async fn demo(conn: redis::aio::MultiplexedConnection) -> redis_primitives::Result<()> {
//! use core::time::Duration;
//! use redis_primitives::election::Election;
//!
//! let node = Election::builder(conn, "scheduler")
//!     .lease_ttl(Duration::from_secs(6))
//!     .renew_interval(Duration::from_secs(2))
//!     .campaign_interval(Duration::from_millis(500))
//!     .on_demoted(|d| eprintln!("lost epoch {}: {:?}", d.epoch, d.reason))
//!     .build()?;
//! let task = node.start(); // or drive node.run() yourself
//! // ... later, in the work loop:
//! if let Some(epoch) = node.epoch() {
//!     // act as leader; pass `epoch` to every fenced write
//! #   let _ = epoch;
//! }
//! node.stop().await; // hands the lease over at once
//! # let _ = task.await;
//! # Ok(()) }
//! ```
//!
//! # Self-fencing
//!
//! [`Election::is_leader`] is computed, not merely read: it is true only
//! while the lease's **local deadline** (`sent_at + lease_ttl − drift`,
//! measured from when the acquire or the last confirmed renewal was *sent*)
//! is ahead on the monotonic clock. Redis cannot expire the lease before
//! `sent_at + lease_ttl`, so no other node can be elected while
//! `is_leader()` says true, even if this node's run loop is frozen (a GC
//! pause, a suspended VM, the simulation's pause) or its renewal is stuck in
//! flight. A renewal confirmed *after* the deadline is a stale success and
//! demotes the node. See `docs/decisions/0004-self-fencing-deadline.md`.
//!
//! The reference implementation instead notices a lost lease only at its next
//! renew tick; [`Demotion::OnRenewTick`] reproduces that for comparison.
//!
//! Self-fencing shortens the time a stale leader *believes* it leads; it does
//! not recall a write already on its way. Fenced resources
//! ([`crate::FencedStore`]) are what refuse the stale writes.
//!
//! # Driving the loop
//!
//! [`Election::run`] is a plain future: the library spawns nothing.
//! [`Election::start`] is the convenience that `tokio::spawn`s it. `stop()`
//! reaches a caller-driven `run()` through a `watch` flag the loop selects on.
//! Every `select!` is `biased;` and all time is `tokio::time`, so the
//! simulation can freeze and replay the loop deterministically.

mod config;
mod run;
mod state;

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use core::fmt;
use core::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::connection::Connection;
use crate::error::Result;
use crate::lease::Lease;
use crate::lock::Lock;
use crate::token::FencingToken;
use crate::ttl::Ttl;

pub use config::{Demotion, ElectionBuilder};
pub use state::{Demoted, DemotionReason, LeaderLease, Leadership};

use config::{DemotedCallback, ElectedCallback, Timing};

/// One node of a leader election. Cheap to clone: clones share the node.
pub struct Election<C> {
    shared: Arc<Shared<C>>,
}

impl<C> Clone for Election<C> {
    fn clone(&self) -> Self {
        Election { shared: Arc::clone(&self.shared) }
    }
}

impl<C> fmt::Debug for Election<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Election")
            .field("name", &self.shared.name)
            .field("timing", &self.shared.timing)
            .field("leadership", &*self.shared.state.borrow())
            .finish_non_exhaustive()
    }
}

/// State shared by the node's handles and its run loop.
pub(crate) struct Shared<C> {
    lock: Lock<C>,
    name: String,
    timing: Timing,
    on_elected: Vec<ElectedCallback>,
    on_demoted: Vec<DemotedCallback>,
    /// The current lease while leading. A std `Mutex`, not a tokio one: it
    /// is held only to copy a few words in or out, never across an `.await`,
    /// and `is_leader()` must be callable from synchronous code.
    held: Mutex<Option<LeaderLease>>,
    /// The published role (see [`Leadership`]).
    state: watch::Sender<Leadership>,
    /// Set once by `stop()`; the run loop selects on it.
    stop: watch::Sender<bool>,
    /// Whether a `run()` future is alive, so `stop()` knows whether to wait
    /// for a hand-over and a second `run()` can be refused.
    running: watch::Sender<bool>,
}

impl<C: Connection> Election<C> {
    /// Starts configuring a node of election `name`, on a [`Lock`] with the
    /// key prefix `"election"` over `conn`.
    pub fn builder(conn: C, name: impl Into<String>) -> ElectionBuilder<C> {
        ElectionBuilder::new(Lock::builder(conn).prefix("election"), name.into())
    }

    /// Starts configuring a node of election `name` on an existing lock,
    /// keeping its prefix, drift allowance, ownership source, acknowledgement
    /// ([`crate::LockBuilder::acknowledged`]) and token issuing
    /// ([`crate::Tokens`]).
    pub fn builder_on(lock: &Lock<C>, name: impl Into<String>) -> ElectionBuilder<C> {
        ElectionBuilder::new(lock.to_builder(), name.into())
    }

    fn from_parts(
        lock: Lock<C>,
        name: String,
        timing: Timing,
        on_elected: Vec<ElectedCallback>,
        on_demoted: Vec<DemotedCallback>,
    ) -> Election<C> {
        Election {
            shared: Arc::new(Shared {
                lock,
                name,
                timing,
                on_elected,
                on_demoted,
                held: Mutex::new(None),
                state: watch::Sender::new(Leadership::Follower { last_demotion: None }),
                stop: watch::Sender::new(false),
                running: watch::Sender::new(false),
            }),
        }
    }

    /// Spawns [`Election::run`] on the current tokio runtime. The only task
    /// this library ever spawns, and only when asked to.
    pub fn start(&self) -> tokio::task::JoinHandle<Result<()>> {
        let node = self.clone();
        tokio::spawn(async move { node.run().await })
    }

    /// Hands the lease back if leading, demotes with
    /// [`DemotionReason::Stopped`], and ends `run()` for good (build a new
    /// node to campaign again).
    ///
    /// Waits until `run()` has finished, so `run()` must keep being polled
    /// (call `stop()` from another task, or `select!` on both). A request
    /// already in flight is awaited rather than abandoned, so that its
    /// lease, if it won one, can be released: give the connection a response
    /// timeout. Returns at once if no `run()` is active.
    pub async fn stop(&self) {
        self.shared.stop.send_replace(true);
        let mut running = self.shared.running.subscribe();
        // The sender lives in `shared`, which `self` keeps alive: no error.
        let _ = running.wait_for(|r| !*r).await;
        self.shared.mark_stopped();
    }

    /// Whether this node may act as leader **now**.
    ///
    /// Under [`Demotion::AtDeadline`] (the default) this is false from the
    /// lease's local deadline on, whether or not `run()` has noticed. Under
    /// [`Demotion::OnRenewTick`] it is the run loop's last word.
    pub fn is_leader(&self) -> bool {
        self.epoch().is_some()
    }

    /// The epoch while [`Election::is_leader`] is true.
    pub fn epoch(&self) -> Option<FencingToken> {
        let lease = self.shared.held_now()?;
        match self.shared.timing.demotion {
            Demotion::AtDeadline if Instant::now() >= lease.local_deadline => None,
            _ => Some(lease.epoch),
        }
    }

    /// The current lease as the run loop last recorded it, even past its
    /// local deadline (for diagnostics and measurements; use
    /// [`Election::is_leader`] to decide).
    pub fn leader_lease(&self) -> Option<LeaderLease> {
        self.shared.held_now()
    }

    /// The published role (see [`Leadership`] for how it differs from
    /// [`Election::is_leader`]).
    pub fn leadership(&self) -> Leadership {
        self.shared.state.borrow().clone()
    }

    /// A receiver of every published role change.
    pub fn subscribe(&self) -> watch::Receiver<Leadership> {
        self.shared.state.subscribe()
    }

    /// The election name.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// The lease TTL.
    pub fn lease_ttl(&self) -> Ttl {
        self.shared.timing.lease_ttl
    }

    /// The renew interval.
    pub fn renew_interval(&self) -> Duration {
        self.shared.timing.renew_interval
    }

    /// The campaign interval.
    pub fn campaign_interval(&self) -> Duration {
        self.shared.timing.campaign_interval
    }

    /// The demotion mode.
    pub fn demotion(&self) -> Demotion {
        self.shared.timing.demotion
    }

    /// The lock holding the leadership lease (for diagnostics such as
    /// [`Lock::current_token`] and [`Lock::remaining_ttl`] on [`Election::name`]).
    pub fn lock(&self) -> &Lock<C> {
        &self.shared.lock
    }
}

/// Transitions. Each one updates `held`, then publishes, then runs the
/// callbacks, so a callback that asks `is_leader()` sees the new state.
impl<C> Shared<C> {
    fn held(&self) -> MutexGuard<'_, Option<LeaderLease>> {
        // A poisoned mutex only means a thread panicked while copying a
        // `Copy` value in or out; the value is still whole.
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn held_now(&self) -> Option<LeaderLease> {
        *self.held()
    }

    fn record(&self, lease: &Lease) {
        *self.held() = Some(LeaderLease {
            epoch: lease.token(),
            sent_at: lease.sent_at(),
            local_deadline: lease.local_deadline(),
        });
    }

    fn elect(&self, lease: &Lease) {
        self.record(lease);
        let epoch = lease.token();
        self.state.send_replace(Leadership::Leader { epoch, elected_at: Instant::now() });
        for f in &self.on_elected {
            f(epoch);
        }
    }

    /// Ends the current term, if there is one.
    fn demote(&self, reason: DemotionReason) -> Option<Demoted> {
        let lease = self.held().take()?;
        let stopped = matches!(reason, DemotionReason::Stopped);
        let demoted = Demoted { epoch: lease.epoch, reason, at: Instant::now() };
        let last_demotion = Some(demoted.clone());
        self.state.send_replace(if stopped {
            Leadership::Stopped { last_demotion }
        } else {
            Leadership::Follower { last_demotion }
        });
        for f in &self.on_demoted {
            f(&demoted);
        }
        Some(demoted)
    }

    /// Publishes `Stopped` unless already published.
    fn mark_stopped(&self) {
        self.state.send_if_modified(|s| match s {
            Leadership::Follower { last_demotion } => {
                *s = Leadership::Stopped { last_demotion: last_demotion.take() };
                true
            }
            // A leader is only ever stopped through `demote`, which
            // publishes `Stopped` itself.
            Leadership::Leader { .. } | Leadership::Stopped { .. } => false,
        });
    }
}
