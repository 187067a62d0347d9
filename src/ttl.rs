//! `Ttl`: a lease or window length that Redis can actually represent.
//!
//! Redis expiry has millisecond resolution and the scripts do arithmetic in
//! Lua numbers (IEEE doubles), so a valid duration is a whole number of
//! milliseconds between 1 and 2^53 − 1. Anything else is refused with a typed
//! error rather than rounded or clamped: a 0.4 ms TTL silently becoming 0 (or
//! 1) ms is exactly the kind of quiet change this library exists to avoid.

use core::fmt;
use core::time::Duration;

use crate::error::{Error, Result};

/// A positive duration in whole milliseconds, at most [`Ttl::MAX_MILLIS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ttl(u64);

impl Ttl {
    /// The largest accepted value: 2^53 − 1 ms, exact in a Lua number.
    pub const MAX_MILLIS: u64 = (1 << 53) - 1;

    /// Validates `d`: non-zero, whole milliseconds, at most `MAX_MILLIS`.
    ///
    /// ```
    /// use core::time::Duration;
    /// use redis_primitives::Ttl;
    /// assert_eq!(Ttl::new(Duration::from_millis(400)).unwrap().as_millis(), 400);
    /// assert!(Ttl::new(Duration::ZERO).is_err());
    /// assert!(Ttl::new(Duration::from_micros(1500)).is_err()); // not whole ms
    /// ```
    pub fn new(d: Duration) -> Result<Ttl> {
        Ttl::named("ttl", d)
    }

    /// Like [`Ttl::new`], naming the setting in the error (`"lease_ttl"`, `"window"`).
    pub fn named(what: &'static str, d: Duration) -> Result<Ttl> {
        if d.is_zero() {
            return Err(Error::invalid(what, "must be greater than zero"));
        }
        if d.subsec_nanos() % 1_000_000 != 0 {
            return Err(Error::invalid(
                what,
                format!("{d:?} is not a whole number of milliseconds (Redis expiry has millisecond resolution)"),
            ));
        }
        let ms = d.as_millis();
        if ms > u128::from(Ttl::MAX_MILLIS) {
            return Err(Error::invalid(what, format!("{ms} ms exceeds the maximum of {} ms", Ttl::MAX_MILLIS)));
        }
        Ok(Ttl(ms as u64))
    }

    /// Validates a millisecond count.
    pub fn from_millis(ms: u64) -> Result<Ttl> {
        Ttl::new(Duration::from_millis(ms))
    }

    /// The value in milliseconds.
    pub fn as_millis(self) -> u64 {
        self.0
    }

    /// The value as a `Duration`.
    pub fn as_duration(self) -> Duration {
        Duration::from_millis(self.0)
    }
}

impl TryFrom<Duration> for Ttl {
    type Error = Error;
    fn try_from(d: Duration) -> Result<Ttl> {
        Ttl::new(d)
    }
}

impl fmt::Display for Ttl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ms", self.0)
    }
}

/// Both sides of every documented edge: 1 ..= 2^53 − 1 ms, whole
/// milliseconds only, refused with `InvalidInput` (moved here from the
/// simulation's validation probe: no server, no time, no fault needed).
#[cfg(test)]
mod documented_edges {
    use super::*;

    fn ttl(ms: u64, extra_ns: u64) -> Result<Ttl> {
        Ttl::new(Duration::from_millis(ms) + Duration::from_nanos(extra_ns))
    }

    #[test]
    fn one_ms_to_2_pow_53_minus_1_in_whole_milliseconds() {
        for ms in [1, 2, 400, 100_000, Ttl::MAX_MILLIS - 1, Ttl::MAX_MILLIS] {
            let t = ttl(ms, 0).unwrap();
            assert_eq!(t.as_millis(), ms);
            assert_eq!(t.as_duration(), Duration::from_millis(ms));
            assert_eq!(t.to_string(), format!("{ms} ms"));
            assert_eq!(Ttl::from_millis(ms).unwrap(), t);
            assert_eq!(Ttl::try_from(Duration::from_millis(ms)).unwrap(), t);
        }
        for (ms, extra_ns) in
            [(0, 0), (Ttl::MAX_MILLIS + 1, 0), (u64::MAX, 0), (0, 1), (0, 999_999), (5, 1), (5, 500_000)]
        {
            let r = ttl(ms, extra_ns);
            assert!(matches!(r, Err(Error::InvalidInput { what: "ttl", .. })), "{ms} ms + {extra_ns} ns: {r:?}");
        }
        assert!(matches!(Ttl::named("window", Duration::ZERO), Err(Error::InvalidInput { what: "window", .. })));
        assert!(Ttl::new(Duration::MAX).is_err());
    }
}
