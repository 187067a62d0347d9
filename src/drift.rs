//! `Drift`: how much earlier than Redis a client must stop trusting a lease.
//!
//! A lease's TTL runs on the Redis host; the holder can only bound it from
//! its side with its own monotonic clock. Clocks run at slightly different
//! rates, so the holder subtracts an allowance: `ttl × factor + constant`
//! (Redlock's classic defaults are 1 % and 2 ms). The local deadline of a
//! lease is `sent_at + ttl − drift`, measured from when the request was
//! *sent*, because the server may have started the TTL at any point after that.
//!
//! Validated whole: [`Drift::new`] refuses a constant above the largest TTL
//! ([`Drift::MAX_CONSTANT`]), so the allowance for any valid [`Ttl`] is at
//! most about 2^54 ms — far inside `Duration`, and far inside what a deadline
//! `Instant` can hold. [`Drift::allowance`] takes any `Duration` and
//! saturates rather than overflows, so no accepted value can panic later,
//! in particular not after a request has been sent (issue 13).

use core::time::Duration;

use crate::error::{Error, Result};
use crate::ttl::Ttl;

/// Clock-drift allowance: `ttl × factor_per_mille / 1000 + constant`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Drift {
    per_mille: u32,
    constant: Duration,
}

impl Drift {
    /// 1 % of the TTL plus 2 ms.
    pub const DEFAULT: Drift = Drift { per_mille: 10, constant: Duration::from_millis(2) };

    /// No allowance at all (only for experiments: real clocks drift).
    pub const NONE: Drift = Drift { per_mille: 0, constant: Duration::ZERO };

    /// The largest accepted constant: the largest TTL ([`Ttl::MAX_MILLIS`]).
    /// A constant beyond it would leave no lease of any valid TTL usable.
    pub const MAX_CONSTANT: Duration = Duration::from_millis(Ttl::MAX_MILLIS);

    /// `factor_per_mille` thousandths of the TTL plus `constant`.
    /// The factor must be below 1000 (an allowance of the whole TTL leaves
    /// nothing) and the constant at most [`Drift::MAX_CONSTANT`].
    ///
    /// ```
    /// use core::time::Duration;
    /// use redis_primitives::Drift;
    /// assert!(Drift::new(10, Duration::from_millis(2)).is_ok());
    /// assert!(Drift::new(1000, Duration::ZERO).is_err());
    /// assert!(Drift::new(10, Duration::MAX).is_err()); // would overflow a deadline
    /// ```
    pub fn new(factor_per_mille: u32, constant: Duration) -> Result<Drift> {
        if factor_per_mille >= 1000 {
            return Err(Error::invalid("drift factor", format!("{factor_per_mille}‰ must be below 1000‰ of the TTL")));
        }
        if constant > Drift::MAX_CONSTANT {
            return Err(Error::invalid(
                "drift constant",
                format!(
                    "{constant:?} exceeds the largest TTL ({} ms): no lease could ever be trusted",
                    Ttl::MAX_MILLIS
                ),
            ));
        }
        Ok(Drift { per_mille: factor_per_mille, constant })
    }

    /// The allowance for a lease of `ttl`: `ttl × factor / 1000 + constant`,
    /// rounded down to the nanosecond. Saturates at `Duration::MAX` instead
    /// of overflowing (only reachable with a `ttl` far beyond any [`Ttl`]).
    pub fn allowance(self, ttl: Duration) -> Duration {
        // u128 nanoseconds hold ttl × 999 for every Duration: no overflow here.
        let nanos = ttl.as_nanos() * u128::from(self.per_mille) / 1000 + self.constant.as_nanos();
        let secs = nanos / 1_000_000_000;
        match u64::try_from(secs) {
            Ok(secs) => Duration::new(secs, (nanos % 1_000_000_000) as u32),
            Err(_) => Duration::MAX,
        }
    }

    /// What is left of a lease of `ttl` on the holder's clock:
    /// `ttl − allowance`, zero when the allowance takes it all.
    pub(crate) fn usable(self, ttl: Ttl) -> Duration {
        let ttl = ttl.as_duration();
        ttl.saturating_sub(self.allowance(ttl))
    }

    /// The factor, in thousandths of the TTL.
    pub fn factor_per_mille(self) -> u32 {
        self.per_mille
    }

    /// The constant part.
    pub fn constant(self) -> Duration {
        self.constant
    }
}

impl Default for Drift {
    fn default() -> Drift {
        Drift::DEFAULT
    }
}

/// Both sides of every documented edge: a factor below 1000‰, a constant at
/// most the longest TTL to the nanosecond, refused with `InvalidInput`
/// (moved here from the simulation's validation probe).
#[cfg(test)]
mod documented_edges {
    use super::*;

    #[test]
    fn factor_below_1000_per_mille_and_constant_at_most_the_longest_ttl() {
        let accepted = [
            (0, Duration::ZERO),
            (10, Duration::from_millis(2)),
            (999, Duration::ZERO),
            (5, Duration::new(0, 3_000_007)),
            (0, Drift::MAX_CONSTANT),
            (999, Drift::MAX_CONSTANT),
        ];
        for (per_mille, constant) in accepted {
            let d = Drift::new(per_mille, constant).unwrap();
            assert_eq!((d.factor_per_mille(), d.constant()), (per_mille, constant));
        }
        assert_eq!(Drift::MAX_CONSTANT, Duration::from_millis(Ttl::MAX_MILLIS));
        for per_mille in [1000, 1001, u32::MAX] {
            let r = Drift::new(per_mille, Duration::ZERO);
            assert!(matches!(r, Err(Error::InvalidInput { what: "drift factor", .. })), "{per_mille}: {r:?}");
        }
        for constant in [Drift::MAX_CONSTANT + Duration::from_nanos(1), Drift::MAX_CONSTANT * 2, Duration::MAX] {
            let r = Drift::new(10, constant);
            assert!(matches!(r, Err(Error::InvalidInput { what: "drift constant", .. })), "{constant:?}: {r:?}");
        }
    }

    #[test]
    fn allowance_and_usable_time_to_the_nanosecond() {
        let d = Drift::new(10, Duration::from_millis(2)).unwrap();
        // 1 % of 400 ms is 4 ms, plus 2 ms.
        assert_eq!(d.allowance(Duration::from_millis(400)), Duration::from_millis(6));
        assert_eq!(d.usable(Ttl::from_millis(400).unwrap()), Duration::from_millis(394));
        // Rounded down to the nanosecond: 1 % of 1 ns is nothing.
        assert_eq!(d.allowance(Duration::from_nanos(1)), Duration::from_millis(2));
        assert_eq!(
            Drift::new(999, Duration::ZERO).unwrap().allowance(Duration::from_secs(1)),
            Duration::from_millis(999)
        );
        // All of a short lease eaten by the constant part: nothing usable.
        assert_eq!(d.usable(Ttl::from_millis(2).unwrap()), Duration::ZERO);
        assert_eq!(Drift::NONE.usable(Ttl::from_millis(7).unwrap()), Duration::from_millis(7));
        assert_eq!(Drift::default(), Drift::DEFAULT);
        // Any `Duration` at all, without overflow: below 1000‰ and a bounded
        // constant, even `Duration::MAX` leaves something.
        assert!(Drift::new(999, Drift::MAX_CONSTANT).unwrap().allowance(Duration::MAX) < Duration::MAX);
    }
}
