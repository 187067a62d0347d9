//! `Retry`: the opt-in policy for trying an acquire again.
//!
//! `Lock::acquire` and `Redlock::acquire` make exactly one attempt; a hidden
//! loop inside them would hide contention from the caller and stretch the
//! time between "I asked" and "I hold it". Callers that want to wait use this
//! policy explicitly: bounded attempts, a deadline, and a jittered delay
//! (full jitter over an exponentially growing cap) so that contenders that
//! collided once do not collide again in lock-step.
//!
//! Jitter comes from a caller-visible RNG seed when one is set
//! ([`Retry::seeded`]), so the simulation stays deterministic.
//!
//! Every `Duration` is accepted whole: delays are drawn in microseconds and
//! a cap beyond `u64::MAX` µs (about 585 000 years) is clamped to it, never
//! wrapped, and the deadline check saturates. A huge delay therefore means
//! "wait that long", not "wrap around to a few microseconds" (issue 13).

use core::num::NonZeroU32;
use core::time::Duration;

use rand::{Rng, SeedableRng};

use crate::error::{Error, Result};

/// Bounded, jittered retry of a single-attempt operation.
#[derive(Debug, Clone)]
pub struct Retry {
    attempts: NonZeroU32,
    base_delay: Duration,
    max_delay: Duration,
    deadline: Option<Duration>,
    seed: Option<u64>,
}

impl Retry {
    /// `attempts` tries in all, the first immediately; delays start around
    /// `base_delay` and grow to at most `max_delay`.
    pub fn new(attempts: NonZeroU32, base_delay: Duration, max_delay: Duration) -> Result<Retry> {
        if base_delay.is_zero() {
            return Err(Error::invalid("retry base_delay", "must be greater than zero"));
        }
        if max_delay < base_delay {
            return Err(Error::invalid(
                "retry max_delay",
                format!("{max_delay:?} is smaller than base_delay {base_delay:?}"),
            ));
        }
        Ok(Retry { attempts, base_delay, max_delay, deadline: None, seed: None })
    }

    /// Gives up once `total` has passed since the first attempt started
    /// (checked before each attempt and before each sleep).
    pub fn deadline(mut self, total: Duration) -> Retry {
        self.deadline = Some(total);
        self
    }

    /// Draws jitter from a deterministic RNG seeded with `seed`.
    pub fn seeded(mut self, seed: u64) -> Retry {
        self.seed = Some(seed);
        self
    }

    /// The maximum number of attempts.
    pub fn attempts(&self) -> NonZeroU32 {
        self.attempts
    }

    /// Runs `attempt` until it returns `Ok(Some(_))`, an error, or the
    /// attempts or the deadline run out (`Ok(None)`). Errors are returned at
    /// once: whether a fault is worth retrying is the caller's call.
    pub async fn run<T, F, Fut>(&self, mut attempt: F) -> Result<Option<T>>
    where
        F: FnMut() -> Fut,
        Fut: core::future::Future<Output = Result<Option<T>>>,
    {
        let start = tokio::time::Instant::now();
        let mut rng = match self.seed {
            Some(seed) => rand::rngs::StdRng::seed_from_u64(seed),
            None => rand::rngs::StdRng::from_os_rng(),
        };
        let out_of_time = |extra: Duration| self.deadline.is_some_and(|d| start.elapsed().saturating_add(extra) >= d);
        for n in 0..self.attempts.get() {
            if n > 0 && out_of_time(Duration::ZERO) {
                break;
            }
            if let Some(v) = attempt().await? {
                return Ok(Some(v));
            }
            if n + 1 == self.attempts.get() {
                break;
            }
            let cap =
                self.base_delay.saturating_mul(1u32.checked_shl(n.min(16)).unwrap_or(u32::MAX)).min(self.max_delay);
            // Clamped, not `as u64`: a cap of 2^64 µs or more must not wrap
            // to a tiny one.
            let cap_micros = u64::try_from(cap.as_micros()).unwrap_or(u64::MAX);
            let delay = Duration::from_micros(rng.random_range(0..=cap_micros));
            if out_of_time(delay) {
                break;
            }
            tokio::time::sleep(delay).await;
        }
        Ok(None)
    }
}

/// Both sides of every documented edge: a first delay above zero and a cap
/// at least the first delay, refused with `InvalidInput` (moved here from
/// the simulation's validation probe).
#[cfg(test)]
mod documented_edges {
    use super::*;

    #[test]
    fn a_cap_at_least_the_first_delay_and_a_first_delay_above_zero() {
        let attempts = NonZeroU32::new(3).unwrap();
        let ns = Duration::from_nanos;
        for (base, max) in [(ns(1), ns(1)), (ns(5), ns(5)), (ns(5), ns(6)), (ns(50_000_000), Duration::MAX)] {
            let r = Retry::new(attempts, base, max).unwrap();
            assert_eq!(r.attempts(), attempts);
        }
        for (base, max) in [(Duration::ZERO, ns(5)), (Duration::ZERO, Duration::ZERO), (ns(5), ns(4)), (ns(2), ns(1))] {
            let r = Retry::new(attempts, base, max);
            assert!(matches!(r, Err(Error::InvalidInput { .. })), "{base:?}, {max:?}: {r:?}");
        }
    }
}
