//! `RedlockLease`: a lock held on a majority of masters, for a bounded time.
//!
//! The lease's validity is measured on the holder's monotonic clock from T1,
//! the instant read *before* the first request was sent: each master may have
//! started its TTL at any moment after T1, so the earliest possible expiry on
//! any master is T1 + TTL, and the holder stops trusting the lease `drift`
//! before that: `valid_until = T1 + TTL − drift`.
//!
//! There is **no fencing token**. A counter on each master would not give
//! one: the masters are independent, so their counters disagree, and no
//! majority read of them is ordered with respect to another client's.

use core::time::Duration;
use tokio::time::Instant;

use super::vote::MasterVote;
use crate::owner::Owner;
use crate::ttl::Ttl;

/// A lock held on a majority of independent masters.
#[derive(Debug, Clone)]
pub struct RedlockLease {
    pub(crate) name: String,
    pub(crate) key: String,
    pub(crate) owner: Owner,
    pub(crate) ttl: Ttl,
    pub(crate) started_at: Instant,
    pub(crate) acquired_at: Instant,
    pub(crate) validity: Duration,
    pub(crate) valid_until: Instant,
    pub(crate) votes: usize,
    pub(crate) quorum: usize,
    pub(crate) masters: Vec<MasterVote>,
}

impl RedlockLease {
    /// The lock name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The key, the same on every master.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The ownership value stored on the masters (20 random bytes, hex).
    pub fn owner(&self) -> &Owner {
        &self.owner
    }

    /// The TTL set on the masters.
    pub fn ttl(&self) -> Ttl {
        self.ttl
    }

    /// T1 of the acquire (or of the last successful extend).
    pub fn started_at(&self) -> Instant {
        self.started_at
    }

    /// T2 of the acquire (or of the last successful extend): from here on
    /// the holder knows it holds the lock.
    pub fn acquired_at(&self) -> Instant {
        self.acquired_at
    }

    /// TTL − (T2 − T1) − drift: how long the lock was known to be held at T2.
    pub fn validity(&self) -> Duration {
        self.validity
    }

    /// The instant after which the holder must not act on this lease.
    pub fn valid_until(&self) -> Instant {
        self.valid_until
    }

    /// The validity left now (zero once it has run out).
    pub fn remaining(&self) -> Duration {
        self.valid_until.saturating_duration_since(Instant::now())
    }

    /// Whether the validity is still ahead. `true` does not prove every key
    /// is still in place (a master may have restarted without persistence:
    /// see the module docs); `false` proves the holder must stop.
    pub fn is_trusted(&self) -> bool {
        Instant::now() < self.valid_until
    }

    /// How many masters said yes.
    pub fn votes(&self) -> usize {
        self.votes
    }

    /// How many yes votes were needed (N/2+1).
    pub fn quorum(&self) -> usize {
        self.quorum
    }

    /// Each master's answer in the acquire (or the last successful extend).
    pub fn masters(&self) -> &[MasterVote] {
        &self.masters
    }
}
