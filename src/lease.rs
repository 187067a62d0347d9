//! `Lease`: what a successful acquire hands back.
//!
//! A lease is a *time-limited* right, not a lock in the mutex sense: Redis
//! expires it after its TTL whether or not the holder is done. The lease
//! therefore carries two things a holder needs to act safely:
//!
//! - the **fencing token**, to pass to every resource it writes, so the
//!   resource can refuse the holder once a newer lease exists;
//! - the **local deadline**, `sent_at + ttl − drift` on the holder's monotonic
//!   clock, after which the holder must assume the lease is gone. It is
//!   measured from when the request was *sent*: Redis may have started the
//!   TTL at any moment after that, so starting the count on the reply would
//!   overestimate the time left by a whole round trip (or a whole pause).

use tokio::time::Instant;

use crate::owner::Owner;
use crate::token::FencingToken;
use crate::ttl::Ttl;

/// A held lease on a named lock.
#[derive(Debug, Clone)]
pub struct Lease {
    pub(crate) name: String,
    pub(crate) key: String,
    pub(crate) owner: Owner,
    pub(crate) token: FencingToken,
    pub(crate) ttl: Ttl,
    pub(crate) sent_at: Instant,
    pub(crate) deadline: Instant,
}

impl Lease {
    /// The lock name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The Redis key holding the lease.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The fencing token: pass it to every resource this holder writes.
    pub fn token(&self) -> FencingToken {
        self.token
    }

    /// The TTL most recently set (by the acquire or the last extend).
    pub fn ttl(&self) -> Ttl {
        self.ttl
    }

    /// When the acquire (or the last confirmed extend) request was sent.
    pub fn sent_at(&self) -> Instant {
        self.sent_at
    }

    /// The instant after which the holder must not act on this lease.
    pub fn local_deadline(&self) -> Instant {
        self.deadline
    }

    /// Whether the local deadline is still ahead. `true` does not prove the
    /// lease is still held (someone may have deleted the key); `false`
    /// proves the holder must stop.
    pub fn is_trusted(&self) -> bool {
        Instant::now() < self.deadline
    }

    /// The ownership value (for diagnostics and the naive comparisons).
    pub fn owner(&self) -> &Owner {
        &self.owner
    }
}
