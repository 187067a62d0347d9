//! [`Allowance`]: the drift allowance a primitive was built with, and the
//! local deadline it gives a lease. Shared because the lock's lease views,
//! the election's views and the job queue's leases all judge a deadline
//! the same way: `sent + ttl − (ttl × per_mille‰ + constant)`.

use crate::history::Millis;

/// The drift allowance the lock was built with (`Drift::new(factor, constant)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Allowance {
    /// Per mille of the TTL.
    pub per_mille: u64,
    /// Constant part, ms.
    pub constant_ms: u64,
}

impl Allowance {
    /// `Drift::DEFAULT`: 10 ‰ of the TTL plus 2 ms.
    pub(crate) const DEFAULT: Allowance = Allowance { per_mille: 10, constant_ms: 2 };

    /// The deadline, in ns since the start, of a lease set by a request sent
    /// at `sent_ms` for `ttl_ms`.
    pub(crate) fn deadline_ns(self, sent_ms: Millis, ttl_ms: u64) -> u128 {
        let ttl_ns = u128::from(ttl_ms) * 1_000_000;
        let allowance = ttl_ns * u128::from(self.per_mille) / 1000 + u128::from(self.constant_ms) * 1_000_000;
        u128::from(sent_ms) * 1_000_000 + ttl_ns.saturating_sub(allowance)
    }
}
