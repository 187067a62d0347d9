//! `Limit`: "at most `max` requests per `window`", validated once.
//!
//! A zero limit or a zero window is not a configuration, it is a typo, and a
//! limiter built from one would either refuse everything or divide by zero
//! inside a Lua script. `Limit` cannot hold either: `max` is a `NonZeroU64`
//! and `window` a [`Ttl`] (whole milliseconds, at least 1). Construction is
//! the only place they are checked, so no call ever reaches Redis with them.
//!
//! One more bound: `max × window_ms ≤ 2^52`. The scripts do their arithmetic
//! in Lua numbers (IEEE doubles); the sliding counter multiplies a count by a
//! number of milliseconds, and below 2^52 every such product and the sums the
//! counter forms from them are exact integers. The bound allows, for example,
//! a million requests per day, or 10^9 requests per minute.

use core::num::NonZeroU64;
use core::time::Duration;

use crate::error::{Error, Result};
use crate::ttl::Ttl;

/// At most `max` requests in any `window`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Limit {
    max: NonZeroU64,
    window: Ttl,
}

impl Limit {
    /// The largest accepted `max × window_ms` (2^52; see the module docs).
    pub const MAX_PRODUCT: u64 = 1 << 52;

    /// Validates `max` requests per `window`.
    ///
    /// ```
    /// use core::time::Duration;
    /// use redis_primitives::rate_limit::Limit;
    /// let limit = Limit::new(5, Duration::from_secs(1)).unwrap();
    /// assert_eq!((limit.max().get(), limit.window().as_millis()), (5, 1000));
    /// assert!(Limit::new(0, Duration::from_secs(1)).is_err()); // zero limit
    /// assert!(Limit::new(5, Duration::ZERO).is_err()); // zero window
    /// ```
    pub fn new(max: u64, window: Duration) -> Result<Limit> {
        let Some(max) = NonZeroU64::new(max) else {
            return Err(Error::invalid("limit", "must be at least 1 request per window"));
        };
        Limit::per(max, Ttl::named("window", window)?)
    }

    /// Builds a limit from already-validated parts; only the product bound
    /// can still fail.
    pub fn per(max: NonZeroU64, window: Ttl) -> Result<Limit> {
        match max.get().checked_mul(window.as_millis()) {
            Some(p) if p <= Limit::MAX_PRODUCT => Ok(Limit { max, window }),
            _ => Err(Error::invalid(
                "limit",
                format!(
                    "{max} requests per {window} exceeds max × window_ms ≤ 2^52, \
                     the range in which the limiter scripts' arithmetic is exact"
                ),
            )),
        }
    }

    /// The most requests admitted in any window.
    pub fn max(&self) -> NonZeroU64 {
        self.max
    }

    /// The window length.
    pub fn window(&self) -> Ttl {
        self.window
    }
}

/// Both sides of every documented edge: `max ≥ 1`, a window a valid TTL and
/// `max × window_ms ≤ 2^52` at every split of the product, refused with
/// `InvalidInput` (moved here from the simulation's validation probe).
#[cfg(test)]
mod documented_edges {
    use super::*;

    #[test]
    fn max_times_window_at_most_2_pow_52_at_every_split() {
        assert_eq!(Limit::MAX_PRODUCT, 1 << 52);
        for k in 0..=52u32 {
            let (max, window_ms) = (1u64 << k, 1u64 << (52 - k));
            let limit = Limit::new(max, Duration::from_millis(window_ms)).unwrap();
            assert_eq!((limit.max().get(), limit.window().as_millis()), (max, window_ms));
            for (max, window_ms) in [(max + 1, window_ms), (max, window_ms + 1)] {
                let r = Limit::new(max, Duration::from_millis(window_ms));
                assert!(matches!(r, Err(Error::InvalidInput { what: "limit", .. })), "{max} × {window_ms}: {r:?}");
            }
        }
        // A product that overflows u64 is refused, not wrapped.
        assert!(Limit::new(1 << 32, Duration::from_millis(1 << 33)).is_err());
        assert!(Limit::new(u64::MAX, Duration::from_millis(Ttl::MAX_MILLIS)).is_err());
    }

    #[test]
    fn zero_requests_and_a_window_that_is_no_ttl_are_refused() {
        let r = Limit::new(0, Duration::from_millis(1000));
        assert!(matches!(r, Err(Error::InvalidInput { what: "limit", .. })), "{r:?}");
        for window in [Duration::ZERO, Duration::from_micros(1500), Duration::from_millis(Ttl::MAX_MILLIS + 1)] {
            let r = Limit::new(5, window);
            assert!(matches!(r, Err(Error::InvalidInput { what: "window", .. })), "{window:?}: {r:?}");
        }
        assert!(Limit::new(1, Duration::from_millis(1)).is_ok());
    }
}
