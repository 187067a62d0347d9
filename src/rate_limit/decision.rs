//! `Decision`: what a rate limiter answers, as a value.
//!
//! "Not yet" is the normal, expected answer of a rate limiter, so it is a
//! value ([`Decision::Denied`]) and never an error: `Err` is kept for bad
//! input and Redis faults. Both limiters (and the naive ones of the
//! `redis-primitives-naive` crate, so the harness can compare them) return
//! this one type.
//!
//! Every decision carries the **server time it was made at** (`at_ms`, unix
//! milliseconds): Redis' own `TIME`, or the pinned `now` when the caller
//! pinned one. For an admission by the sliding log this is exactly the score
//! the request was recorded under, which is what a checker needs to verify
//! "never more than `max` admissions in any window" from a history alone.

use core::time::Duration;

/// The answer to one request against a [`super::Limit`].
///
/// `count` is the number of requests the limiter counts in the window at
/// `at_ms`: for an admission it includes the request just admitted; for a
/// denial it is what blocked the request. The sliding log's count is exact;
/// the sliding counter's is its weighted estimate rounded up (see
/// [`super::SlidingWindowCounter`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Decision {
    /// The request was admitted and recorded.
    Allowed {
        /// Requests counted in the window, this one included.
        count: u64,
        /// How many more requests the window admits right now (`max - count`).
        remaining: u64,
        /// Server time of the decision, unix ms (the pinned `now` if pinned).
        at_ms: u64,
    },
    /// The request was refused and nothing was recorded.
    Denied {
        /// Requests counted in the window.
        count: u64,
        /// The earliest time from `at_ms` at which a request would be
        /// admitted if no other request is admitted meanwhile. Always > 0
        /// from the limiters of this module (a naive limiter that gave up
        /// under contention answers zero).
        retry_after: Duration,
        /// Server time of the decision, unix ms (the pinned `now` if pinned).
        at_ms: u64,
    },
}

impl Decision {
    /// True for [`Decision::Allowed`].
    pub fn is_allowed(&self) -> bool {
        matches!(self, Decision::Allowed { .. })
    }

    /// True for [`Decision::Denied`].
    pub fn is_denied(&self) -> bool {
        !self.is_allowed()
    }

    /// Requests counted in the window (see the type docs).
    pub fn count(&self) -> u64 {
        match *self {
            Decision::Allowed { count, .. } | Decision::Denied { count, .. } => count,
        }
    }

    /// Requests still admissible right now; 0 after a denial.
    pub fn remaining(&self) -> u64 {
        match *self {
            Decision::Allowed { remaining, .. } => remaining,
            Decision::Denied { .. } => 0,
        }
    }

    /// How long to wait before retrying; `None` after an admission.
    pub fn retry_after(&self) -> Option<Duration> {
        match *self {
            Decision::Allowed { .. } => None,
            Decision::Denied { retry_after, .. } => Some(retry_after),
        }
    }

    /// Server time the decision was made at, unix ms.
    pub fn at_ms(&self) -> u64 {
        match *self {
            Decision::Allowed { at_ms, .. } | Decision::Denied { at_ms, .. } => at_ms,
        }
    }
}
