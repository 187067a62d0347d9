//! Election settings: the builder and the rule that keeps them safe.
//!
//! All validation happens in [`ElectionBuilder::build`], which is synchronous
//! and therefore cannot touch Redis: bad settings fail before any round trip.
//!
//! # The interval rule
//!
//! With `usable = lease_ttl − drift(lease_ttl)` (the lease's length on the
//! holder's clock, see [`crate::Drift`]):
//!
//! 1. `renew_interval < lease_ttl` — the rule every election states: a lease
//!    renewed less often than it expires is lost between renewals;
//! 2. `renew_interval ≤ usable / 2` — this crate's stricter rule. A renewal is
//!    sent `renew_interval` after the previous confirmed one and must be
//!    confirmed before `usable` after it, so its round trip gets
//!    `usable − renew_interval`. Requiring that to be at least
//!    `renew_interval` means an ordinary slow reply or a short scheduling
//!    hiccup does not demote a healthy leader, while a renewal that takes
//!    longer than a whole interval is treated as what it looks like: a node
//!    that can no longer prove it holds the lease.
//!
//! `campaign_interval` and `renew_interval` must be non-zero; names are
//! validated like lock names (non-empty, no braces).

use std::sync::Arc;

use core::fmt;
use core::time::Duration;

use crate::acknowledgement::Acknowledgement;
use crate::connection::Connection;
use crate::drift::Drift;
use crate::election::state::Demoted;
use crate::election::Election;
use crate::error::{Error, Result};
use crate::lock::{Lock, LockBuilder, Tokens};
use crate::owner::OwnerSource;
use crate::token::FencingToken;
use crate::ttl::Ttl;

/// When a leader stops reporting itself as leader.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Demotion {
    /// Self-fencing (the default): `is_leader()` turns false at the lease's
    /// local deadline, even while `run()` is not being polled or a renewal
    /// is still in flight, and a renewal confirmed after the deadline counts
    /// as a loss ([`crate::election::DemotionReason::DeadlineReached`]).
    #[default]
    AtDeadline,
    /// The reference implementation's behaviour, **kept for comparison
    /// only**: the node believes it leads until a renewal tick actually runs
    /// and is refused or fails. A paused leader keeps answering `true` for
    /// the whole pause, overlapping its successor (the split-brain window
    /// measured by `tests/library/election.rs::case27_*` and the simulation scenario
    /// `election-renew-only`).
    OnRenewTick,
}

pub(crate) type ElectedCallback = Arc<dyn Fn(FencingToken) + Send + Sync>;
pub(crate) type DemotedCallback = Arc<dyn Fn(&Demoted) + Send + Sync>;

/// Validated timing of one election.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Timing {
    pub(crate) lease_ttl: Ttl,
    pub(crate) renew_interval: Duration,
    pub(crate) campaign_interval: Duration,
    pub(crate) demotion: Demotion,
}

/// Configures an [`Election`]. `build()` can be called again (for example
/// once per node of a test).
pub struct ElectionBuilder<C> {
    lock: LockBuilder<C>,
    name: String,
    lease_ttl: Duration,
    renew_interval: Option<Duration>,
    campaign_interval: Option<Duration>,
    demotion: Demotion,
    on_elected: Vec<ElectedCallback>,
    on_demoted: Vec<DemotedCallback>,
}

impl<C: Connection> Clone for ElectionBuilder<C> {
    fn clone(&self) -> Self {
        ElectionBuilder {
            lock: self.lock.clone(),
            name: self.name.clone(),
            lease_ttl: self.lease_ttl,
            renew_interval: self.renew_interval,
            campaign_interval: self.campaign_interval,
            demotion: self.demotion,
            on_elected: self.on_elected.clone(),
            on_demoted: self.on_demoted.clone(),
        }
    }
}

impl<C> fmt::Debug for ElectionBuilder<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ElectionBuilder")
            .field("name", &self.name)
            .field("lease_ttl", &self.lease_ttl)
            .field("renew_interval", &self.renew_interval)
            .field("campaign_interval", &self.campaign_interval)
            .field("demotion", &self.demotion)
            .field("on_elected", &self.on_elected.len())
            .field("on_demoted", &self.on_demoted.len())
            .finish_non_exhaustive()
    }
}

impl<C: Connection> ElectionBuilder<C> {
    /// Defaults: lease 10 s, renew every third of the lease, campaign as
    /// often as the leader renews.
    pub(crate) fn new(lock: LockBuilder<C>, name: String) -> ElectionBuilder<C> {
        ElectionBuilder {
            lock,
            name,
            lease_ttl: Duration::from_secs(10),
            renew_interval: None,
            campaign_interval: None,
            demotion: Demotion::AtDeadline,
            on_elected: Vec::new(),
            on_demoted: Vec::new(),
        }
    }

    /// The leadership lease's TTL (whole milliseconds). Default 10 s.
    pub fn lease_ttl(mut self, ttl: Duration) -> Self {
        self.lease_ttl = ttl;
        self
    }

    /// How often the leader renews. Default: a third of the lease. See the
    /// module docs for the rule it must satisfy.
    pub fn renew_interval(mut self, every: Duration) -> Self {
        self.renew_interval = Some(every);
        self
    }

    /// How often a follower tries to acquire. Default: the renew interval.
    pub fn campaign_interval(mut self, every: Duration) -> Self {
        self.campaign_interval = Some(every);
        self
    }

    /// When a leader stops reporting itself as leader (default
    /// [`Demotion::AtDeadline`]).
    pub fn demotion(mut self, demotion: Demotion) -> Self {
        self.demotion = demotion;
        self
    }

    /// Key prefix of the leadership lease (default `"election"`: keys
    /// `election:{name}` and `election:{name}:fence`).
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.lock = self.lock.prefix(prefix);
        self
    }

    /// Clock-drift allowance subtracted from the lease's local deadline.
    pub fn drift(mut self, drift: Drift) -> Self {
        self.lock = self.lock.drift(drift);
        self
    }

    /// Where the lease's ownership values come from (the simulation passes a
    /// seeded source; production keeps the default CSPRNG).
    pub fn owners(mut self, owners: OwnerSource) -> Self {
        self.lock = self.lock.owners(owners);
        self
    }

    /// Makes every campaign wait for `ack.replicas()` replicas to confirm
    /// the won lease (`WAIT`; see [`LockBuilder::acknowledged`]): a
    /// campaign too few confirmed is not a win (its lease is handed back at
    /// once, its epoch is skipped) and the node tries again at its next
    /// campaign. Renewals do not wait. The wait comes out of the lease:
    /// keep the acknowledgement timeout well below the lease's usable time.
    ///
    /// ```no_run
    /// # async fn demo(conn: redis::aio::MultiplexedConnection) -> redis_primitives::Result<()> {
    /// use core::time::Duration;
    /// use redis_primitives::election::Election;
    /// use redis_primitives::{Acknowledgement, Tokens};
    ///
    /// let node = Election::builder(conn, "scheduler")
    ///     .acknowledged(Acknowledgement::new(1, Duration::from_millis(200))?)
    ///     .tokens(Tokens::TimeFloored)
    ///     .build()?;
    /// # let _ = node;
    /// # Ok(()) }
    /// ```
    pub fn acknowledged(mut self, ack: Acknowledgement) -> Self {
        self.lock = self.lock.acknowledged(ack);
        self
    }

    /// How epochs are issued (default [`Tokens::Counter`]): an epoch is the
    /// lease's fencing token, so [`Tokens::TimeFloored`] makes epochs
    /// survive a counter rolled back by a failover (see [`Tokens`]).
    pub fn tokens(mut self, tokens: Tokens) -> Self {
        self.lock = self.lock.tokens(tokens);
        self
    }

    /// Called with the epoch each time this node becomes leader. Runs inside
    /// `run()`, so it must return quickly and must not block.
    pub fn on_elected(mut self, f: impl Fn(FencingToken) + Send + Sync + 'static) -> Self {
        self.on_elected.push(Arc::new(f));
        self
    }

    /// Called each time this node stops leading. Runs inside `run()` (or in
    /// the drop of a `run()` future dropped while leading), so it must
    /// return quickly and must not block.
    pub fn on_demoted(mut self, f: impl Fn(&Demoted) + Send + Sync + 'static) -> Self {
        self.on_demoted.push(Arc::new(f));
        self
    }

    /// Validates the settings and builds the node. Never touches Redis.
    pub fn build(&self) -> Result<Election<C>> {
        let lock = self.lock.build()?;
        lock.key(&self.name)?;
        let timing = self.timing(&lock)?;
        Ok(Election::from_parts(lock, self.name.clone(), timing, self.on_elected.clone(), self.on_demoted.clone()))
    }

    fn timing(&self, lock: &Lock<C>) -> Result<Timing> {
        let lease_ttl = Ttl::named("lease_ttl", self.lease_ttl)?;
        let ttl = lease_ttl.as_duration();
        let usable = lock.drift().usable(lease_ttl);
        if usable.is_zero() {
            return Err(Error::invalid(
                "lease_ttl",
                format!("{lease_ttl} leaves no time at all once the drift allowance is taken off"),
            ));
        }
        let renew_interval = self.renew_interval.unwrap_or(ttl / 3);
        if renew_interval.is_zero() {
            return Err(Error::invalid("renew_interval", "must be greater than zero"));
        }
        if renew_interval >= ttl {
            return Err(Error::invalid(
                "renew_interval",
                format!(
                    "{renew_interval:?} is not shorter than lease_ttl {lease_ttl}: \
                     the lease would expire between two renewals"
                ),
            ));
        }
        if renew_interval > usable / 2 {
            return Err(Error::invalid(
                "renew_interval",
                format!(
                    "{renew_interval:?} is more than half of the usable lease {usable:?} \
                     (lease_ttl {lease_ttl} minus drift), leaving a renewal less time to be \
                     confirmed than the interval itself; use at most {:?}",
                    usable / 2
                ),
            ));
        }
        let campaign_interval = self.campaign_interval.unwrap_or(renew_interval);
        if campaign_interval.is_zero() {
            return Err(Error::invalid("campaign_interval", "must be greater than zero"));
        }
        Ok(Timing { lease_ttl, renew_interval, campaign_interval, demotion: self.demotion })
    }
}
