//! Instant arithmetic that cannot panic.
//!
//! `Instant + Duration` panics when the sum does not fit, and every duration
//! a caller configures (intervals, timeouts, TTLs minus drift) ends up added
//! to an `Instant` somewhere. A panic there is worst after a request has been
//! sent: the lock is taken and nobody holds it (issue 13). So every deadline
//! and timer goes through [`after`], which is total.

use core::time::Duration;
use tokio::time::Instant;

/// `at + d`, or a year after `at` if that does not fit, or `at` itself if
/// even that does not. Never later than the exact sum, so a deadline computed
/// this way can only err towards distrusting a lease sooner; a timer at a
/// year is as good as "never" for every loop in this crate (each recomputes
/// its next instant after firing).
pub(crate) fn after(at: Instant, d: Duration) -> Instant {
    const YEAR: Duration = Duration::from_secs(365 * 24 * 3600);
    at.checked_add(d).or_else(|| at.checked_add(d.min(YEAR))).unwrap_or(at)
}
